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
