//! The upstream R-Type UDP lobby dialect on the lobby socket
//! (`docs/protocols/udp-lobby-upstream.md`): decoding its requests into the core's
//! [`LobbyRequest`]s and encoding the core's replies in it, for `net::rtype::udp`, which sends
//! a datagram here when [`crate::wire::udp_upstream::sniff`] says it is in this dialect.
//!
//! A request that does not parse is dropped and counted by reason; a well-formed message
//! lobbyd does not serve (accounts, chat, room administration, the game's own) is dropped and
//! counted by family. Neither is answered. ROOM_CREATED and JOIN_SUCCESS are each followed by
//! a RoomSetConfig, as the upstream lobby sends them. The ROOM_LIST records are kept between
//! requests as the seed's are ([`UpstreamList`]), and every reply is written into the send
//! queue's slot: nothing here allocates per datagram.

use crate::rtype::{LobbyReply, LobbyRequest, RoomInfo, RoomSettings, RtypeCore};
use crate::wire::udp_upstream::lobby::{
    finish_room_list, MessageFamily, Reply, ReplyRepr, Request, RequestRepr, RoomConfig,
};
use crate::wire::udp_upstream::records::{
    write_room_records, ListedRoom, RecordLayout, WrittenRecords, MAX_ROOM_LIST_LEN,
};
use crate::wire::udp_upstream::Error;

/// Why an upstream datagram goes no further than the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpstreamRefusal {
    /// Malformed: not a datagram of the dialect, or a lobby request of the wrong layout.
    Malformed(Error),
    /// Well-formed, of a family lobbyd does not serve.
    Unserved(MessageFamily),
}

/// Decodes an upstream datagram received on the lobby socket: its sequence id and request.
pub fn decode(datagram: &[u8]) -> Result<(u16, LobbyRequest<'_>), UpstreamRefusal> {
    let RequestRepr { seq, request } =
        RequestRepr::parse(datagram).map_err(UpstreamRefusal::Malformed)?;
    let request = match request {
        Request::ListRooms => LobbyRequest::ListRooms,
        Request::CreateRoom(None) => LobbyRequest::CreateRoom,
        Request::CreateRoom(Some(create)) => LobbyRequest::CreateRoomWith(RoomSettings {
            name: create.name,
            password: create.password,
        }),
        Request::JoinRoom {
            room_id,
            credentials: None,
        } => LobbyRequest::JoinRoom(room_id),
        Request::JoinRoom {
            room_id,
            credentials: Some(credentials),
        } => LobbyRequest::JoinRoomWith {
            room: room_id,
            password: credentials.password,
            spectator: credentials.spectator.is_some_and(|byte| byte != 0),
        },
        Request::Other(code) => return Err(UpstreamRefusal::Unserved(MessageFamily::of(code))),
    };
    Ok((seq, request))
}

/// The datagrams answering a request with `reply` (other than ROOM_LIST): the reply, and
/// the RoomSetConfig that follows ROOM_CREATED and JOIN_SUCCESS.
pub fn replies(seq: u16, reply: LobbyReply) -> (ReplyRepr<'static>, Option<ReplyRepr<'static>>) {
    let (reply, room) = match reply {
        LobbyReply::RoomCreated { room, port } => (
            Reply::RoomCreated {
                room_id: room.0,
                port,
            },
            Some(room),
        ),
        LobbyReply::JoinSuccess { room, port } => (
            Reply::JoinSuccess {
                room_id: room.0,
                port,
            },
            Some(room),
        ),
        LobbyReply::JoinFailed(_) | LobbyReply::RoomList => (Reply::JoinFailed, None),
    };
    let config = room.map(|room| ReplyRepr {
        seq,
        reply: Reply::RoomConfig(RoomConfig::upstream_default(room.0)),
    });
    (ReplyRepr { seq, reply }, config)
}

/// The last upstream ROOM_LIST built: its records stay in place while the core's list does
/// not change, and each reply copies them and frames them with its own sequence id.
pub struct UpstreamList {
    layout: RecordLayout,
    buf: Box<[u8; MAX_ROOM_LIST_LEN]>,
    /// The core's list generation the records were written at, and what was written.
    built: Option<(u64, WrittenRecords)>,
}

impl UpstreamList {
    /// An empty cache for records in `layout`.
    pub fn new(layout: RecordLayout) -> UpstreamList {
        UpstreamList {
            layout,
            buf: Box::new([0; MAX_ROOM_LIST_LEN]),
            built: None,
        }
    }

    /// Writes the ROOM_LIST answering `seq` into `slot` (at least [`MAX_ROOM_LIST_LEN`]
    /// bytes) and returns its length, rebuilding the records only if the list changed.
    pub fn emit(&mut self, lobby: &RtypeCore, seq: u16, slot: &mut [u8]) -> usize {
        let generation = lobby.list_generation();
        let written = match self.built {
            Some((built, written)) if built == generation => written,
            _ => {
                let layout = self.layout;
                let rooms = lobby.upstream_room_list().map(listed);
                let written = write_room_records(&mut self.buf[..], layout, rooms);
                self.built = Some((generation, written));
                written
            }
        };
        let len = crate::wire::udp_upstream::records::room_list_len(written.len);
        slot[..len].copy_from_slice(&self.buf[..len]);
        finish_room_list(slot, seq, written)
    }
}

/// A room as the upstream ROOM_LIST shows it: upstream's quick-play type, no owner id or
/// invite code (lobbyd has neither), public.
fn listed(info: RoomInfo<'_>) -> ListedRoom<'_> {
    ListedRoom {
        room_id: info.room.0,
        room_type: 0,
        player_count: info.player_count,
        max_players: info.max_players,
        port: info.port,
        state: info.state.code(),
        owner_id: 0,
        password_protected: u8::from(info.password_protected),
        visibility: 0,
        countdown: 0,
        name: info.name,
        invite_code: b"",
    }
}
