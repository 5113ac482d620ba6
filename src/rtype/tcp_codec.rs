//! Where the TCP lobby's bytes become the core's inputs and its messages become wire
//! representations (`docs/protocols/tcp-lobby.md`, "Reading frames" and "Violations";
//! RFC R-Type-TCP-001 section 5): a checked client frame (cut by the driver with
//! `crate::wire::tcp_lobby::next_frame`) is a [`TcpInput`], and a [`TcpMessage`] other than
//! GAME_START is a [`ServerRepr`] ([`server_repr`]; GAME_START needs the party's roster and
//! the address the client reached, which the driver has).
//!
//! One place decides what a frame means, so the driver and the seeded simulation feed the
//! core exactly the same inputs. Pure functions: no state, nothing allocated.

use crate::wire::tcp_lobby::{self as wire, ClientRepr, ErrorCode, Frame, ServerRepr};

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
}

impl TcpInput {
    /// A header declaring a payload longer than any client message (the payload is skipped
    /// by the driver, never buffered).
    pub const OVERSIZED: TcpInput = TcpInput::Violation(Violation::Oversized);

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
        TcpMessage::GameStart(_) => return None,
    })
}
