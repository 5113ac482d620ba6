//! The R-Type core's vocabulary: the decoded requests the driver hands it ([`LobbyRequest`]:
//! LIST_ROOMS, CREATE_ROOM, JOIN_ROOM of `docs/protocols/udp-lobby.md`; [`InstanceRequest`]:
//! `docs/protocols/instance.md`), what it answers ([`LobbyReply`]: ROOM_LIST, ROOM_CREATED,
//! JOIN_SUCCESS, JOIN_FAILED; [`InstanceMessage`], [`RejectReason`]), the [`Output`]s the
//! driver carries out, and one ROOM_LIST entry ([`RoomInfo`]). Encoding them is the driver's (`net::rtype::udp`);
//! here they are plain values. A UDP lobby request comes in one of two spellings
//! ([`Dialect`]: the seed's, or the upstream R-Type program's,
//! `docs/protocols/udp-lobby-upstream.md`); the core answers in the one it came in, over one
//! room table. The upstream spelling adds a room name and a password ([`RoomSettings`]) and a
//! password and spectator byte to JOIN_ROOM.

use std::net::SocketAddr;

use super::room::{RoomId, RoomState, Slot};
use super::stats::JoinFailure;
use super::tcp_messages::{ConnId, TcpMessage};

pub use crate::wire::udp_upstream::Dialect;

/// A request of the UDP room lobby, decoded by the driver; its strings borrow the receive
/// buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LobbyRequest<'a> {
    /// LOBBY_LIST_ROOMS.
    ListRooms,
    /// LOBBY_CREATE_ROOM without settings (the seed's; upstream v1's empty payload).
    CreateRoom,
    /// LOBBY_JOIN_ROOM with its room id (0 included: the core refuses it), offering no
    /// password.
    JoinRoom(u32),
    /// LOBBY_CREATE_ROOM with a name and a password (upstream v2 and v3).
    CreateRoomWith(RoomSettings<'a>),
    /// LOBBY_JOIN_ROOM with a password, and a spectator flag (upstream v2 and v3).
    JoinRoomWith {
        /// The room (0 included: the core refuses it).
        room: u32,
        /// The password offered, empty for none.
        password: &'a [u8],
        /// Asks to watch rather than play: lobbyd's instances have no spectators.
        spectator: bool,
    },
}

/// What an upstream CREATE_ROOM asks for its room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoomSettings<'a> {
    /// The room's name, as listed to upstream clients (at most [`MAX_ROOM_NAME`] bytes).
    pub name: &'a [u8],
    /// The password a JOIN_ROOM must offer, empty for none (at most [`MAX_PASSWORD`] bytes).
    pub password: &'a [u8],
}

/// The name an upstream client is shown for a room created without one (the seed's
/// CREATE_ROOM, upstream v1's): what the upstream lobby names such a room.
pub const UNNAMED_ROOM: &[u8] = b"New Room";

/// Longest room name the lobby keeps, in bytes; a CREATE_ROOM with a longer one is refused.
pub const MAX_ROOM_NAME: usize = 32;
/// Longest room password, in bytes; a CREATE_ROOM with a longer one is refused.
pub const MAX_PASSWORD: usize = 64;

/// A reply of the UDP room lobby.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LobbyReply {
    /// LOBBY_ROOM_LIST: the driver encodes [`RtypeCore::room_list`](super::RtypeCore::room_list) at send time.
    RoomList,
    /// LOBBY_ROOM_CREATED.
    RoomCreated {
        /// The new room.
        room: RoomId,
        /// Its instance port.
        port: u16,
    },
    /// LOBBY_JOIN_SUCCESS.
    JoinSuccess {
        /// The room joined.
        room: RoomId,
        /// Its instance port.
        port: u16,
    },
    /// LOBBY_JOIN_FAILED.
    JoinFailed(JoinFailure),
}

/// A control message of the instance protocol (DATA goes through [`RtypeCore::relay_data`](super::RtypeCore::relay_data)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceRequest {
    /// HELLO, with the player token of a TCP lobby hand-over if any.
    Hello {
        /// The 8-byte player token, if the HELLO carried one.
        token: Option<u64>,
    },
    /// LEAVE.
    Leave,
    /// START (owner only).
    Start,
    /// PING.
    Ping,
}

/// Why a HELLO was refused (REJECT reason codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReason {
    /// 1: every seat taken.
    Full = 1,
    /// 2: Playing or Finished.
    NotJoinable = 2,
    /// 3: the token matches no expected player.
    UnknownToken = 3,
}

/// A message the instance sends to one member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceMessage {
    /// WELCOME: the player's slot and the room's state.
    Welcome {
        /// The player's slot.
        slot: Slot,
        /// Members in the room.
        player_count: u8,
        /// Seats.
        max_players: u8,
        /// Room state code.
        state: RoomState,
    },
    /// REJECT.
    Reject(RejectReason),
    /// PEER_JOINED(slot).
    PeerJoined(Slot),
    /// PEER_LEFT(slot).
    PeerLeft(Slot),
    /// COUNTDOWN(whole seconds left).
    Countdown(u8),
    /// STARTED.
    Started,
    /// PONG.
    Pong,
}

/// What the driver must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Send a UDP lobby reply from the lobby socket.
    Lobby {
        /// Destination.
        to: SocketAddr,
        /// The request's sequence id, echoed.
        seq: u16,
        /// The spelling of the request, which the reply takes.
        dialect: Dialect,
        /// The reply.
        reply: LobbyReply,
    },
    /// Send an instance message from `room`'s socket.
    Instance {
        /// The room whose socket sends it.
        room: RoomId,
        /// Destination.
        to: SocketAddr,
        /// Echoed request seq, or the room's counter for server-initiated messages.
        seq: u16,
        /// The message.
        msg: InstanceMessage,
    },
    /// Bind a UDP socket for `room` and answer with [`RtypeCore::handle_instance_opened`](super::RtypeCore::handle_instance_opened).
    OpenInstance {
        /// The room being created.
        room: RoomId,
    },
    /// Start `room`'s game server (`--instance-exec`, [`RtypeConfig::instance_exec`](super::RtypeConfig::instance_exec))
    /// on a port of the instance range, in place of lobbyd's own relay; the driver answers with
    /// [`RtypeCore::handle_instance_opened`](super::RtypeCore::handle_instance_opened) (the
    /// port, or `None` when it could not start), and reports its end with
    /// [`RtypeCore::handle_instance_exited`](super::RtypeCore::handle_instance_exited).
    StartInstance {
        /// The room being created, or the party whose countdown starts.
        room: RoomId,
        /// The command's `{players}`: a UDP room's seats, a party's members at its countdown.
        players: u8,
        /// The command's `{seed}`: a random number for the game.
        seed: u32,
    },
    /// Close `room`'s socket, or stop its game server: the room is gone from the core, or a
    /// party's countdown was cancelled and its instance is no longer needed.
    CloseInstance {
        /// The reaped room.
        room: RoomId,
    },
    /// Send a TCP lobby message on a connection.
    Tcp {
        /// The connection.
        conn: ConnId,
        /// The message.
        msg: TcpMessage,
    },
    /// Ask node `owner` (through the directory) to decide the JOIN_ROOM of ask `req`, read
    /// with [`RtypeCore::pending_ask`](super::RtypeCore::pending_ask) (kept out of the output
    /// queue, whose records stay small); the answer comes back as
    /// [`RtypeCore::handle_owner_answer`](super::RtypeCore::handle_owner_answer), or
    /// [`RtypeCore::handle_ask_dropped`](super::RtypeCore::handle_ask_dropped) when it could
    /// not be sent.
    AskOwner {
        /// The room's node.
        owner: u8,
        /// The ask's request id.
        req: u64,
    },
    /// Send node `asker` this node's decision on its ask `req`
    /// ([`RtypeCore::handle_remote_join`](super::RtypeCore::handle_remote_join)).
    AnswerAsker {
        /// The asking node.
        asker: u8,
        /// Its request id.
        req: u64,
        /// The decision.
        answer: OwnerAnswer,
    },
    /// Close a TCP lobby connection once what is queued for it is written (bounded wait).
    /// The core has already forgotten it.
    CloseConn {
        /// The connection.
        conn: ConnId,
    },
}

/// One entry of a ROOM_LIST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoomInfo<'a> {
    /// The room.
    pub room: RoomId,
    /// Members plus live reservations.
    pub player_count: u16,
    /// Seats.
    pub max_players: u16,
    /// Instance port.
    pub port: u16,
    /// State.
    pub state: RoomState,
    /// The name given by an upstream CREATE_ROOM; empty for a room created without one.
    pub name: &'a [u8],
    /// Whether JOIN_ROOM must offer the room's password.
    pub password_protected: bool,
}

/// A JOIN_ROOM the room's owner must decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteJoin {
    /// The asker's request id, echoed in the answer.
    pub req: u64,
    /// The room.
    pub room: RoomId,
    /// The client's address (its seat is reserved for this IP).
    pub client: SocketAddr,
    password: [u8; MAX_PASSWORD],
    password_len: u8,
}

impl RemoteJoin {
    /// An ask; `None` for a password longer than any room's ([`MAX_PASSWORD`]).
    pub fn new(req: u64, room: RoomId, client: SocketAddr, password: &[u8]) -> Option<RemoteJoin> {
        let mut buf = [0; MAX_PASSWORD];
        buf.get_mut(..password.len())?.copy_from_slice(password);
        Some(RemoteJoin {
            req,
            room,
            client,
            password: buf,
            password_len: u8::try_from(password.len()).ok()?,
        })
    }

    /// The password the client offered.
    pub fn password(&self) -> &[u8] {
        &self.password[..usize::from(self.password_len)]
    }
}

/// The owner's decision on a [`RemoteJoin`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerAnswer {
    /// A seat is reserved for the client in `room`, whose instance listens on `port`.
    Granted {
        /// The room.
        room: RoomId,
        /// The owner's instance port.
        port: u16,
    },
    /// Refused, and why.
    Refused(JoinFailure),
}

/// Where a UDP lobby reply goes and how it is spelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ReplyTo {
    /// The requester.
    pub(super) to: SocketAddr,
    /// Its request's sequence id.
    pub(super) seq: u16,
    /// Its request's spelling.
    pub(super) dialect: Dialect,
}
