//! The spelling the UDP lobby modes (`udp-list`, `udp-create-join`) speak to lobbyd's UDP room
//! lobby port, `--dialect`: the seed document's (`docs/protocols/udp-lobby.md`, the default)
//! or the upstream R-Type program's (`docs/protocols/udp-lobby-upstream.md`), with its ROOM_LIST
//! records read in the layout the server was started with (`--rtype-udp-records`).
//!
//! The modes ask in [`Ask`] and judge [`Answer`]s; this file alone knows both wire modules.
//! Instance traffic (HELLO, PING, LEAVE) is lobbyd's own protocol in either dialect.

use lobbyd::wire::udp_lobby::{self as seed, room_list_len, MAX_LIST_ROOMS_UNFRAGMENTED};
use lobbyd::wire::udp_upstream::lobby::{self as upstream, CreateRoom, JoinCredentials};
use lobbyd::wire::udp_upstream::records::{RecordLayout, MAX_ROOM_LIST_LEN};

/// Which spelling of the UDP room lobby to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// The seed document's (`seed`).
    Seed,
    /// The upstream program's, its ROOM_LIST read in this layout (`upstream-v1`,
    /// `upstream-v3`). Requests are what its v3 client sends: CREATE_ROOM with a name and an
    /// empty password, JOIN_ROOM with an empty password and the spectator byte 0.
    Upstream(RecordLayout),
}

/// A lobby request, in either dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    /// LIST_ROOMS.
    ListRooms,
    /// CREATE_ROOM.
    CreateRoom,
    /// JOIN_ROOM of this room.
    JoinRoom(u32),
}

/// A lobby datagram, in either dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// ROOM_LIST with this many records.
    RoomList(usize),
    /// ROOM_CREATED.
    RoomCreated {
        /// The room.
        room_id: u32,
        /// Its instance's port.
        port: u16,
    },
    /// JOIN_SUCCESS.
    JoinSuccess {
        /// The room.
        room_id: u32,
        /// Its instance's port.
        port: u16,
    },
    /// JOIN_FAILED.
    JoinFailed,
    /// A notification that answers nothing (the upstream RoomSetConfig).
    Notice,
}

/// The name upstream-dialect clients give the rooms they create.
const ROOM_NAME: &[u8] = b"lobby-load";

impl Dialect {
    /// Every flag value, for the usage text.
    pub const NAMES: [&'static str; 3] = ["seed", "upstream-v1", "upstream-v3"];

    /// The dialect a `--dialect` value names.
    pub fn from_name(name: &str) -> Option<Dialect> {
        match name {
            "seed" => Some(Dialect::Seed),
            "upstream-v1" => Some(Dialect::Upstream(RecordLayout::V1)),
            "upstream-v3" => Some(Dialect::Upstream(RecordLayout::V3)),
            _ => None,
        }
    }

    /// The `--dialect` value naming this dialect.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Seed => "seed",
            Dialect::Upstream(RecordLayout::V1) => "upstream-v1",
            Dialect::Upstream(RecordLayout::V3) => "upstream-v3",
        }
    }

    /// The longest ROOM_LIST the server sends in this dialect: what a LIST_ROOMS may cost in
    /// the server's reply-byte budget.
    pub fn list_reply_max(self) -> usize {
        match self {
            Dialect::Seed => room_list_len(MAX_LIST_ROOMS_UNFRAGMENTED),
            Dialect::Upstream(_) => MAX_ROOM_LIST_LEN,
        }
    }

    /// Writes `ask` with sequence id `seq` at the start of `buf`; its length.
    pub fn emit(self, ask: Ask, seq: u16, buf: &mut [u8]) -> usize {
        match self {
            Dialect::Seed => {
                let request = match ask {
                    Ask::ListRooms => seed::Request::ListRooms,
                    Ask::CreateRoom => seed::Request::CreateRoom,
                    Ask::JoinRoom(room_id) => seed::Request::JoinRoom { room_id },
                };
                seed::RequestRepr { seq, request }.emit(buf)
            }
            Dialect::Upstream(_) => {
                let request = match ask {
                    Ask::ListRooms => upstream::Request::ListRooms,
                    Ask::CreateRoom => upstream::Request::CreateRoom(Some(CreateRoom {
                        visibility: 0,
                        name: ROOM_NAME,
                        password: b"",
                    })),
                    Ask::JoinRoom(room_id) => upstream::Request::JoinRoom {
                        room_id,
                        credentials: Some(JoinCredentials {
                            password: b"",
                            spectator: Some(0),
                        }),
                    },
                };
                upstream::RequestRepr { seq, request }.emit(buf)
            }
        }
    }

    /// Reads a datagram from the lobby: its sequence id and what it says, or the label of
    /// why it is not a lobby reply in this dialect.
    pub fn parse(self, datagram: &[u8]) -> Result<(u16, Answer), &'static str> {
        match self {
            Dialect::Seed => {
                let repr = seed::ReplyRepr::parse(datagram).map_err(|e| e.as_str())?;
                let answer = match repr.reply {
                    seed::Reply::RoomList(list) => Answer::RoomList(list.len()),
                    seed::Reply::RoomCreated { room_id, port } => {
                        Answer::RoomCreated { room_id, port }
                    }
                    seed::Reply::JoinSuccess { room_id, port } => {
                        Answer::JoinSuccess { room_id, port }
                    }
                    seed::Reply::JoinFailed => Answer::JoinFailed,
                };
                Ok((repr.seq, answer))
            }
            Dialect::Upstream(layout) => {
                let repr = upstream::ReplyRepr::parse(datagram, layout).map_err(|e| e.as_str())?;
                let answer = match repr.reply {
                    upstream::Reply::RoomList(list) => Answer::RoomList(list.len()),
                    upstream::Reply::RoomCreated { room_id, port } => {
                        Answer::RoomCreated { room_id, port }
                    }
                    upstream::Reply::JoinSuccess { room_id, port } => {
                        Answer::JoinSuccess { room_id, port }
                    }
                    upstream::Reply::JoinFailed => Answer::JoinFailed,
                    upstream::Reply::RoomConfig(_) => Answer::Notice,
                };
                Ok((repr.seq, answer))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in Dialect::NAMES {
            assert_eq!(Dialect::from_name(name).map(Dialect::name), Some(name));
        }
        assert_eq!(Dialect::from_name("upstream"), None);
    }

    #[test]
    fn upstream_list_rooms_is_the_captured_datagram() {
        let mut buf = [0u8; 64];
        let len = Dialect::Upstream(RecordLayout::V3).emit(Ask::ListRooms, 0, &mut buf);
        assert_eq!(
            &buf[..len],
            &[
                0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                0x00, 0x00, 0x00, 0x42, 0x2f, 0x7b, 0x06
            ]
        );
    }

    #[test]
    fn each_dialect_reads_its_own_replies() {
        for dialect in [
            Dialect::Seed,
            Dialect::Upstream(RecordLayout::V1),
            Dialect::Upstream(RecordLayout::V3),
        ] {
            // A request is not a reply in any dialect.
            let mut buf = [0u8; 64];
            let len = dialect.emit(Ask::JoinRoom(7), 3, &mut buf);
            assert!(dialect.parse(&buf[..len]).is_err());
        }
        let mut buf = [0u8; 64];
        let created = upstream::ReplyRepr {
            seq: 9,
            reply: upstream::Reply::RoomCreated {
                room_id: 7,
                port: 50107,
            },
        };
        let len = created.emit(&mut buf);
        let upstream = Dialect::Upstream(RecordLayout::V3);
        assert_eq!(
            upstream.parse(&buf[..len]),
            Ok((
                9,
                Answer::RoomCreated {
                    room_id: 7,
                    port: 50107
                }
            ))
        );
        assert!(Dialect::Seed.parse(&buf[..len]).is_err());
    }
}
