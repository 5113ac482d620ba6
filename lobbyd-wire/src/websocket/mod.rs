//! WebSocket (RFC 6455) as the general lobby's second transport
//! (docs/protocols/general-lobby.md, "WebSocket transport"): the opening handshake
//! ([`handshake`]: the HTTP/1.1 upgrade request read and judged, the answers written) and
//! the framing ([`frame`]: headers, masking, a server's and a client's frame readers).
//!
//! Family (b): total decoders over a connection's read buffer. [`handshake::parse_request`]
//! decides within [`handshake::MAX_HEAD`] bytes; [`frame::next_client_frame`] decides an
//! oversized frame from its header alone (2 to 14 bytes), unmasks a whole frame in place and
//! borrows its payload, so a binary message reaches the general lobby's `next_frame` without a
//! copy. Writers fill a buffer the caller owns or return a small array. No compression, no
//! extension, no subprotocol: the server offers none.

pub mod frame;
pub mod handshake;

/// Close status codes the server sends (RFC 6455 section 7.4.1).
pub mod close {
    /// 1000: the purpose of the connection is fulfilled (the lobby closed it).
    pub const NORMAL: u16 = 1000;
    /// 1001: the server is going away (shutdown).
    pub const GOING_AWAY: u16 = 1001;
    /// 1002: a protocol error (an unmasked frame, reserved bits or opcodes, a bad control
    /// frame, a continuation out of place).
    pub const PROTOCOL_ERROR: u16 = 1002;
    /// 1003: a data type the endpoint does not accept (a text message: the lobby speaks binary).
    pub const UNSUPPORTED_DATA: u16 = 1003;
    /// 1007: a message's data is not what the endpoint expects (not exactly one general lobby
    /// frame).
    pub const INVALID_PAYLOAD: u16 = 1007;
    /// 1009: a message too big to process (past the frame cap).
    pub const TOO_BIG: u16 = 1009;
}
