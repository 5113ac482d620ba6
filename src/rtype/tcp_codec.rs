//! Where the TCP lobby's bytes become the core's inputs and its messages become wire
//! representations (`docs/protocols/tcp-lobby.md`, "Reading frames" and "Violations";
//! RFC R-Type-TCP-001 section 5): a checked client frame (cut by the driver with
//! `crate::wire::tcp_lobby::next_frame`) is a [`TcpInput`], and a [`TcpMessage`] other than
//! GAME_START is a [`ServerRepr`] ([`server_repr`]; GAME_START needs the party's roster and
//! the address the client reached, which the driver has).
//!
//! The same for the upstream client's dialect (`docs/protocols/tcp-lobby-upstream.md`): a
//! frame cut with `crate::wire::tcp_upstream::next_frame` is a [`TcpInput`]
//! ([`TcpInput::of_upstream_frame`]), and a [`TcpMessage`] is an upstream
//! `ServerRepr` ([`upstream_repr`]; GAME_START and LIST_ROOMS_ACK need the core's data, the
//! driver has it).
//!
//! One place decides what a frame means, so the driver and the seeded simulation feed the
//! core exactly the same inputs. Pure functions: no state, nothing allocated.

use crate::wire::tcp_lobby::{self as wire, ClientRepr, ErrorCode, Frame, ServerRepr};
use crate::wire::tcp_upstream as up;

use super::tcp_messages::{ConnClose, TcpMessage, TcpRequest, Violation};

/// What a connection's bytes (or its end) mean for the core, in stream order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpInput {
    /// A well-formed request: [`RtypeCore::handle_tcp_request`](super::RtypeCore::handle_tcp_request).
    Request(TcpRequest),
    /// A malformed frame or an oversized header:
    /// [`RtypeCore::handle_tcp_violation`](super::RtypeCore::handle_tcp_violation).
    Violation(Violation),
    /// The driver closed the connection (EOF, read error):
    /// [`RtypeCore::handle_tcp_closed`](super::RtypeCore::handle_tcp_closed).
    Closed(ConnClose),
    /// The connection's first bytes were the upstream client's dialect (before its first
    /// frame): [`RtypeCore::handle_tcp_upstream`](super::RtypeCore::handle_tcp_upstream).
    Upstream,
}

impl TcpInput {
    /// A header declaring a payload longer than any client message (the payload is skipped
    /// by the driver, never buffered).
    pub const OVERSIZED: TcpInput = TcpInput::Violation(Violation::Oversized);

    /// An upstream-dialect frame length of 0 or longer than any client frame (its bytes are
    /// skipped by the driver, never buffered).
    pub const BAD_LENGTH: TcpInput = TcpInput::Violation(Violation::BadLength);

    /// What one complete client frame of the upstream dialect asks: its request, or the
    /// violation it is.
    pub fn of_upstream_frame(frame: &up::Frame<&[u8]>) -> TcpInput {
        match up::ClientRepr::parse(frame) {
            Ok(repr) => TcpInput::Request(upstream_request_of(repr)),
            Err(error) => TcpInput::Violation(upstream_violation_of(error)),
        }
    }

    /// What one complete client frame asks: its request, or the violation it is.
    pub fn of_frame(frame: &Frame<&[u8]>) -> TcpInput {
        match ClientRepr::parse(frame) {
            Ok(repr) => TcpInput::Request(request_of(repr)),
            Err(error) => TcpInput::Violation(violation_of(error)),
        }
    }
}

fn request_of(repr: ClientRepr<'_>) -> TcpRequest {
    match repr {
        ClientRepr::ConnectReq { name } => TcpRequest::Connect { name: *name },
        ClientRepr::ReadyReq { ready } => TcpRequest::Ready(ready),
        ClientRepr::StartReq => TcpRequest::Start,
        ClientRepr::Disconnect => TcpRequest::Disconnect,
    }
}

fn upstream_request_of(repr: up::ClientRepr<'_>) -> TcpRequest {
    match repr {
        up::ClientRepr::ListRoomsReq => TcpRequest::ListRooms,
        up::ClientRepr::CreateRoomReq { name } => TcpRequest::CreateRoom { name: *name },
        up::ClientRepr::JoinRoomReq { room_id } => TcpRequest::JoinRoom(room_id),
        up::ClientRepr::ConnectReq { name } => TcpRequest::Connect { name: *name },
        up::ClientRepr::ReadyReq { hash } => TcpRequest::ToggleReady { hash },
        up::ClientRepr::StartReq => TcpRequest::Start,
        up::ClientRepr::Disconnect { .. } => TcpRequest::Disconnect,
    }
}

fn upstream_violation_of(error: up::Error) -> Violation {
    match error {
        up::Error::UnknownType => Violation::UnknownType,
        up::Error::WrongDirection => Violation::WrongDirection,
        up::Error::BadValue => Violation::BadValue,
        // Truncated and Empty never come from `next_frame` (it reports a length of 0 as
        // BadLength); count them with the size errors.
        up::Error::BadPayloadSize | up::Error::Truncated | up::Error::Empty => {
            Violation::BadPayloadSize
        }
    }
}

fn violation_of(error: wire::Error) -> Violation {
    match error {
        wire::Error::UnknownType => Violation::UnknownType,
        wire::Error::WrongDirection => Violation::WrongDirection,
        wire::Error::BadValue => Violation::BadValue,
        // Truncated never comes from `next_frame`; count it with the size errors.
        wire::Error::BadPayloadSize | wire::Error::Truncated => Violation::BadPayloadSize,
    }
}

/// Every message but GAME_START (which needs the party's roster), as its wire form.
pub fn server_repr(msg: &TcpMessage) -> Option<ServerRepr<'_>> {
    Some(match *msg {
        TcpMessage::ConnectAck { hash, slot } => ServerRepr::ConnectAck { hash, number: slot },
        TcpMessage::PlayerJoin {
            slot,
            hash,
            ref name,
            ready,
        } => ServerRepr::PlayerJoin {
            number: slot,
            hash,
            name,
            ready,
        },
        TcpMessage::PlayerReady { slot, ready } => ServerRepr::PlayerReady {
            number: slot,
            ready,
        },
        TcpMessage::PlayerLeft(slot) => ServerRepr::PlayerLeft { number: slot },
        TcpMessage::Countdown(left) => ServerRepr::Countdown {
            remaining: left.as_secs_f32(),
        },
        TcpMessage::Error(error) => ServerRepr::Error {
            code: ErrorCode::from(error.code()),
            message: error.text(),
        },
        // Upstream-dialect messages (never sent to an RFC connection), and GAME_START.
        TcpMessage::GameStart(_)
        | TcpMessage::RoomList
        | TcpMessage::RoomCreated(_)
        | TcpMessage::JoinResult(_)
        | TcpMessage::RoomUpdate(_)
        | TcpMessage::ConnectRefused => return None,
    })
}

/// A message as its upstream-dialect wire form, but GAME_START and LIST_ROOMS_ACK (which need
/// the core's data: [`RtypeCore::party_seed`](super::RtypeCore::party_seed),
/// [`RtypeCore::upstream_rooms`](super::RtypeCore::upstream_rooms)) and ERROR_MSG, which the
/// dialect does not have. A PLAYER_JOIN of a ready player is to be followed by PLAYER_READY
/// (the dialect's PLAYER_JOIN has no ready byte): the driver emits both.
pub fn upstream_repr(msg: &TcpMessage) -> Option<up::ServerRepr<'_>> {
    Some(match *msg {
        TcpMessage::ConnectAck { hash, slot } => up::ServerRepr::ConnectAck {
            status: up::ConnectStatus::Accepted,
            hash,
            number: slot,
        },
        TcpMessage::ConnectRefused => up::ServerRepr::ConnectAck {
            status: up::ConnectStatus::Full,
            hash: 0,
            number: 0,
        },
        TcpMessage::PlayerJoin {
            slot,
            hash,
            ref name,
            ..
        } => up::ServerRepr::PlayerJoin {
            number: slot,
            hash,
            name,
        },
        TcpMessage::PlayerReady { slot, .. } => up::ServerRepr::PlayerReady { number: slot },
        TcpMessage::PlayerLeft(slot) => up::ServerRepr::PlayerLeft { number: slot },
        // Whole seconds (the core sends only those), 0 = cancelled.
        TcpMessage::Countdown(left) => up::ServerRepr::Countdown {
            seconds: u8::try_from(left.as_secs()).unwrap_or(u8::MAX),
        },
        TcpMessage::RoomCreated(room) => up::ServerRepr::CreateRoomAck {
            status: match room {
                Some(_) => up::CreateStatus::Created,
                None => up::CreateStatus::Refused,
            },
            room_id: room.map_or(0, |id| id.0),
        },
        TcpMessage::JoinResult(status) => up::ServerRepr::JoinRoomAck { status },
        TcpMessage::RoomUpdate(record) => up::ServerRepr::RoomUpdate(record),
        TcpMessage::GameStart(_) | TcpMessage::RoomList | TcpMessage::Error(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::rtype::room::RoomId;
    use crate::rtype::tcp_messages::TcpError;
    use crate::wire::tcp_lobby::{name_field, next_frame, Next};

    /// The input of one whole client frame, given as its bytes.
    fn input(bytes: &[u8]) -> TcpInput {
        let Next::Frame { frame, consumed } = next_frame(bytes) else {
            panic!("not a whole frame: {bytes:?}");
        };
        assert_eq!(consumed, bytes.len());
        TcpInput::of_frame(&frame)
    }

    #[test]
    fn each_client_message_is_its_request() {
        let mut connect = vec![0x10, 0x20, 0x00];
        connect.extend_from_slice(&name_field("Ann"));
        assert_eq!(
            input(&connect),
            TcpInput::Request(TcpRequest::Connect {
                name: name_field("Ann")
            })
        );
        let ready = TcpInput::Request(TcpRequest::Ready(true));
        assert_eq!(input(&[0x13, 0x01, 0x00, 0x01]), ready);
        let not_ready = TcpInput::Request(TcpRequest::Ready(false));
        assert_eq!(input(&[0x13, 0x01, 0x00, 0x00]), not_ready);
        let start = TcpInput::Request(TcpRequest::Start);
        assert_eq!(input(&[0x15, 0x00, 0x00]), start);
        let disconnect = TcpInput::Request(TcpRequest::Disconnect);
        assert_eq!(input(&[0x17, 0x00, 0x00]), disconnect);
    }

    #[test]
    fn each_bad_frame_is_its_violation() {
        let cases: [(&[u8], Violation); 4] = [
            (&[0x20, 0x00, 0x00], Violation::UnknownType),
            // PLAYER_LEFT is the server's.
            (&[0x18, 0x01, 0x00, 0x01], Violation::WrongDirection),
            (&[0x13, 0x01, 0x00, 0x02], Violation::BadValue),
            (&[0x15, 0x01, 0x00, 0x00], Violation::BadPayloadSize),
        ];
        for (bytes, violation) in cases {
            assert_eq!(input(bytes), TcpInput::Violation(violation), "{bytes:?}");
        }
        assert_eq!(
            TcpInput::OVERSIZED,
            TcpInput::Violation(Violation::Oversized)
        );
    }

    #[test]
    fn each_message_but_game_start_has_its_wire_form() {
        let ack = TcpMessage::ConnectAck { hash: 7, slot: 2 };
        let ack_repr = ServerRepr::ConnectAck { hash: 7, number: 2 };
        assert_eq!(server_repr(&ack), Some(ack_repr));
        let ready = TcpMessage::PlayerReady {
            slot: 3,
            ready: true,
        };
        let ready_repr = ServerRepr::PlayerReady {
            number: 3,
            ready: true,
        };
        assert_eq!(server_repr(&ready), Some(ready_repr));
        let left = ServerRepr::PlayerLeft { number: 4 };
        assert_eq!(server_repr(&TcpMessage::PlayerLeft(4)), Some(left));
        let countdown = TcpMessage::Countdown(Duration::from_millis(4500));
        let countdown_repr = ServerRepr::Countdown { remaining: 4.5 };
        assert_eq!(server_repr(&countdown), Some(countdown_repr));
        let error = TcpError::NameTaken;
        let error_repr = ServerRepr::Error {
            code: ErrorCode::from(error.code()),
            message: error.text(),
        };
        assert_eq!(server_repr(&TcpMessage::Error(error)), Some(error_repr));
        assert_eq!(server_repr(&TcpMessage::GameStart(RoomId(1))), None);
    }

    /// The input of one whole client frame of the upstream dialect, given as its bytes.
    fn upstream_input(bytes: &[u8]) -> TcpInput {
        let up::Next::Frame { frame, consumed } = up::next_frame(bytes) else {
            panic!("not a whole frame: {bytes:?}");
        };
        assert_eq!(consumed, bytes.len());
        TcpInput::of_upstream_frame(&frame)
    }

    #[test]
    fn each_upstream_client_message_is_its_request() {
        let request = |bytes: &[u8]| match upstream_input(bytes) {
            TcpInput::Request(request) => request,
            other => panic!("{other:?}"),
        };
        assert_eq!(request(&[1, 0, 0, 0, 0x01]), TcpRequest::ListRooms);
        assert_eq!(
            request(&[5, 0, 0, 0, 0x05, 9, 0, 0, 0]),
            TcpRequest::JoinRoom(9)
        );
        let mut create = vec![33, 0, 0, 0, 0x03];
        create.extend_from_slice(&name_field("probe"));
        let name = name_field("probe");
        assert_eq!(request(&create), TcpRequest::CreateRoom { name });
        let mut ready = vec![9, 0, 0, 0, 0x13];
        ready.extend_from_slice(&7u64.to_le_bytes());
        assert_eq!(request(&ready), TcpRequest::ToggleReady { hash: 7 });
        assert_eq!(request(&[1, 0, 0, 0, 0x15]), TcpRequest::Start);
        let mut disconnect = vec![9, 0, 0, 0, 0x17];
        disconnect.extend_from_slice(&7u64.to_le_bytes());
        assert_eq!(request(&disconnect), TcpRequest::Disconnect);
        // A server type, an unknown one, a wrong size.
        let bad: [(&[u8], Violation); 3] = [
            (&[2, 0, 0, 0, 0x14, 1], Violation::WrongDirection),
            (&[1, 0, 0, 0, 0x42], Violation::UnknownType),
            (&[2, 0, 0, 0, 0x15, 0], Violation::BadPayloadSize),
        ];
        for (bytes, violation) in bad {
            assert_eq!(upstream_input(bytes), TcpInput::Violation(violation));
        }
    }

    #[test]
    fn each_upstream_message_has_its_dialect_form() {
        let ack = TcpMessage::ConnectAck { hash: 7, slot: 2 };
        let ack_repr = up::ServerRepr::ConnectAck {
            status: up::ConnectStatus::Accepted,
            hash: 7,
            number: 2,
        };
        assert_eq!(upstream_repr(&ack), Some(ack_repr));
        let countdown = TcpMessage::Countdown(Duration::from_secs(3));
        let seconds = up::ServerRepr::Countdown { seconds: 3 };
        assert_eq!(upstream_repr(&countdown), Some(seconds));
        let created = TcpMessage::RoomCreated(None);
        let refused = up::ServerRepr::CreateRoomAck {
            status: up::CreateStatus::Refused,
            room_id: 0,
        };
        assert_eq!(upstream_repr(&created), Some(refused));
        let ready = TcpMessage::PlayerReady {
            slot: 1,
            ready: false,
        };
        let toggled = up::ServerRepr::PlayerReady { number: 1 };
        assert_eq!(upstream_repr(&ready), Some(toggled));
        // The dialect has no ERROR_MSG; the driver builds GAME_START and the list.
        let error = TcpMessage::Error(TcpError::LobbyFull);
        assert_eq!(upstream_repr(&error), None);
        assert_eq!(upstream_repr(&TcpMessage::RoomList), None);
        assert_eq!(upstream_repr(&TcpMessage::GameStart(RoomId(1))), None);
        // And the RFC encoder has no form for the dialect's own messages.
        assert_eq!(server_repr(&TcpMessage::RoomList), None);
        assert_eq!(server_repr(&TcpMessage::ConnectRefused), None);
    }
}
