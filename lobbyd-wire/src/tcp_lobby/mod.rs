//! R-Type TCP lobby wire format (RFC R-Type-TCP-001, sections 4 and 5, sizes of Appendix A).
//!
//! Every message is one frame: a 3-byte header (`type u8`, `payload length u16` little-endian)
//! followed by the payload. Integers and `float32` values are little-endian; names are UTF-8 in
//! fixed 32-byte NUL-padded fields. The exact contract, with a byte diagram and a hex example per
//! message, is `docs/protocols/tcp-lobby.md`.
//!
//! Layers, in the smoltcp `wire` shape:
//! - [`next_frame`] / [`next_frame_max`] cut frames out of a connection's read buffer without
//!   copying or allocating. A declared payload longer than the limit is reported as
//!   [`Next::Oversized`] from the header alone, so a peer can never make us buffer it.
//! - [`Frame`] is a view over one frame; after [`Frame::new_checked`] no accessor can panic, and
//!   the read accessors are total even on an unchecked view.
//! - [`ClientRepr`] (client to server, `client.rs`) and [`ServerRepr`] (server to client,
//!   `server.rs`, with [`GameStart`]) are the plain representations, with `parse`,
//!   `buffer_len` and `emit`. Parsing borrows from the frame and never allocates; emitting
//!   writes into a caller's buffer and never allocates.
//! - [`validate_name`] and [`name_field`] (`name.rs`) handle the 32-byte name field.
//!
//! This file holds what every message shares: sizes, field offsets, the error types, the
//! packet and error codes, the frame reader and view, and the payload helpers the two
//! directions parse and emit with.
//!
//! This module must not decide what a message means in the lobby's current state, and must not
//! log or count anything: it reports a typed [`Error`] and the R-Type core acts on it.

use core::fmt;

use crate::Field;

mod client;
mod name;
mod server;

#[cfg(test)]
mod fixtures;

pub use client::ClientRepr;
pub use name::{error_text, name_field, validate_name};
pub use server::{GameStart, PlayerInfo, ServerRepr, Slot, SlotIter, Spawn};

/// Length of the frame header: type (1 byte) and payload length (2 bytes, little-endian).
pub const HEADER_LEN: usize = 3;

/// Length of a name field (CONNECT_REQ, PLAYER_JOIN, PlayerInfo): NUL-padded UTF-8.
pub const NAME_LEN: usize = 32;

/// Longest name in bytes: the 32-byte field always keeps room for the terminating NUL.
pub const MAX_NAME_BYTES: usize = NAME_LEN - 1;

/// Largest payload a client may send (CONNECT_REQ's 32-byte name). The server reader treats any
/// longer declared length as [`Next::Oversized`].
pub const MAX_CLIENT_PAYLOAD: usize = 32;

/// Length of one PlayerInfo record in GAME_START: number u8, hash u64, `name[32]`.
pub const PLAYER_INFO_LEN: usize = 41;

/// Length of one spawn position in GAME_START: x f32, y f32.
pub const SPAWN_LEN: usize = 8;

/// Length of GAME_START's fixed part: server IP text field (16), UDP port (2), player count (1).
pub const GAME_START_FIXED_LEN: usize = 19;

/// Largest player count GAME_START can carry: the count is one byte.
pub const MAX_GAME_START_PLAYERS: usize = u8::MAX as usize;

/// Largest payload a server can legitimately send (GAME_START with 255 players). A client reader
/// may pass this to [`next_frame_max`].
pub const MAX_SERVER_PAYLOAD: usize =
    GAME_START_FIXED_LEN + MAX_GAME_START_PLAYERS * (PLAYER_INFO_LEN + SPAWN_LEN);

/// Largest whole ERROR_MSG frame (Appendix A).
pub const MAX_ERROR_FRAME: usize = 256;

/// Longest ERROR_MSG text in bytes: the frame limit minus header, code byte and NUL.
pub const MAX_ERROR_TEXT: usize = MAX_ERROR_FRAME - HEADER_LEN - 2;

/// Length of GAME_START's server IP field: dotted IPv4 text, NUL-terminated and NUL-padded.
pub const SERVER_IP_LEN: usize = 16;

mod field {
    use crate::Field;

    // Frame header.
    pub const TYPE: usize = 0;
    pub const LENGTH: Field = 1..3;

    // Payload offsets, relative to the start of the payload.
    pub const CONNECT_REQ_NAME: Field = 0..32;

    pub const CONNECT_ACK_HASH: Field = 0..8;
    pub const CONNECT_ACK_NUMBER: usize = 8;

    pub const PLAYER_JOIN_NUMBER: usize = 0;
    pub const PLAYER_JOIN_HASH: Field = 1..9;
    pub const PLAYER_JOIN_NAME: Field = 9..41;
    pub const PLAYER_JOIN_READY: usize = 41;

    pub const READY_REQ_READY: usize = 0;

    pub const PLAYER_READY_NUMBER: usize = 0;
    pub const PLAYER_READY_READY: usize = 1;

    pub const GAME_START_IP: Field = 0..16;
    pub const GAME_START_PORT: Field = 16..18;
    pub const GAME_START_COUNT: usize = 18;
    pub const GAME_START_SLOTS: usize = 19;

    // Relative to the start of one PlayerInfo record.
    pub const INFO_NUMBER: usize = 0;
    pub const INFO_HASH: Field = 1..9;
    pub const INFO_NAME: Field = 9..41;

    // Relative to the start of one spawn position.
    pub const SPAWN_X: Field = 0..4;
    pub const SPAWN_Y: Field = 4..8;

    pub const PLAYER_LEFT_NUMBER: usize = 0;

    pub const COUNTDOWN_REMAINING: Field = 0..4;

    pub const ERROR_CODE: usize = 0;
    pub const ERROR_TEXT: usize = 1;
}

/// Payload sizes of the fixed-size messages.
mod size {
    pub const CONNECT_REQ: usize = 32;
    pub const CONNECT_ACK: usize = 9;
    pub const PLAYER_JOIN: usize = 42;
    pub const READY_REQ: usize = 1;
    pub const PLAYER_READY: usize = 2;
    pub const START_REQ: usize = 0;
    pub const DISCONNECT: usize = 0;
    pub const PLAYER_LEFT: usize = 1;
    pub const COUNTDOWN: usize = 4;
}

/// Why a frame could not be turned into a message.
///
/// The server counts protocol violations per variant, using [`Error::as_str`] as the label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// The buffer is shorter than the header or than the declared payload. Frames returned by
    /// [`next_frame`] are always complete, so the server never sees this from a peer.
    Truncated,
    /// The packet type is not one of the RFC's eleven.
    UnknownType,
    /// The packet type belongs to the other direction (for instance a client sent PLAYER_JOIN).
    WrongDirection,
    /// The payload length is not the one the packet type requires.
    BadPayloadSize,
    /// A field holds a value the RFC does not allow (a ready flag other than 0 or 1, an IP text
    /// that is not a dotted IPv4 address, an error text that is not NUL-terminated UTF-8).
    BadValue,
}

impl Error {
    /// Every variant, in declaration order, so metrics can pre-register one counter each.
    pub const ALL: [Error; 5] = [
        Error::Truncated,
        Error::UnknownType,
        Error::WrongDirection,
        Error::BadPayloadSize,
        Error::BadValue,
    ];

    /// Stable snake_case label, for metrics and logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Error::Truncated => "truncated",
            Error::UnknownType => "unknown_type",
            Error::WrongDirection => "wrong_direction",
            Error::BadPayloadSize => "bad_payload_size",
            Error::BadValue => "bad_value",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Error::Truncated => "frame truncated",
            Error::UnknownType => "unknown packet type",
            Error::WrongDirection => "packet type not allowed in this direction",
            Error::BadPayloadSize => "wrong payload size for packet type",
            Error::BadValue => "field value out of range",
        };
        f.write_str(text)
    }
}

/// Why a name field was refused (the server answers ERROR_MSG 0x03 "invalid name").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NameError {
    /// The first byte is NUL: no name at all.
    Empty,
    /// No NUL in the 32 bytes: the name would be 32 bytes, one more than allowed.
    TooLong,
    /// The bytes before the first NUL are not valid UTF-8.
    NotUtf8,
    /// The name contains a control character (Unicode `Cc`).
    ControlChar,
}

impl NameError {
    /// Every variant, in declaration order, so metrics can pre-register one counter each.
    pub const ALL: [NameError; 4] = [
        NameError::Empty,
        NameError::TooLong,
        NameError::NotUtf8,
        NameError::ControlChar,
    ];

    /// Stable snake_case label, for metrics and logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            NameError::Empty => "empty",
            NameError::TooLong => "too_long",
            NameError::NotUtf8 => "not_utf8",
            NameError::ControlChar => "control_char",
        }
    }
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            NameError::Empty => "name is empty",
            NameError::TooLong => "name is longer than 31 bytes",
            NameError::NotUtf8 => "name is not valid UTF-8",
            NameError::ControlChar => "name contains a control character",
        };
        f.write_str(text)
    }
}

/// The packet type byte (RFC section 5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// 0x10, client to server: player name.
    ConnectReq,
    /// 0x11, server to client: player hash and number.
    ConnectAck,
    /// 0x12, server to client: a player is in the party.
    PlayerJoin,
    /// 0x13, client to server: desired ready state.
    ReadyReq,
    /// 0x14, server to client: a player's ready state changed.
    PlayerReady,
    /// 0x15, client to server: start the game.
    StartReq,
    /// 0x16, server to client: UDP game endpoint, players and spawns.
    GameStart,
    /// 0x17, client to server: graceful leave.
    Disconnect,
    /// 0x18, server to client: a player left.
    PlayerLeft,
    /// 0x19, server to client: seconds until GAME_START.
    Countdown,
    /// 0x1F, server to client: error code and text.
    ErrorMsg,
    /// Any other byte; the core decides what to do with it.
    Unknown(u8),
}

impl PacketType {
    /// True for the four types a client may send: CONNECT_REQ, READY_REQ, START_REQ, DISCONNECT.
    pub const fn is_client_to_server(self) -> bool {
        matches!(
            self,
            PacketType::ConnectReq
                | PacketType::ReadyReq
                | PacketType::StartReq
                | PacketType::Disconnect
        )
    }

    /// True for the seven types only the server sends.
    pub const fn is_server_to_client(self) -> bool {
        !self.is_client_to_server() && !matches!(self, PacketType::Unknown(_))
    }
}

impl From<u8> for PacketType {
    fn from(value: u8) -> Self {
        match value {
            0x10 => PacketType::ConnectReq,
            0x11 => PacketType::ConnectAck,
            0x12 => PacketType::PlayerJoin,
            0x13 => PacketType::ReadyReq,
            0x14 => PacketType::PlayerReady,
            0x15 => PacketType::StartReq,
            0x16 => PacketType::GameStart,
            0x17 => PacketType::Disconnect,
            0x18 => PacketType::PlayerLeft,
            0x19 => PacketType::Countdown,
            0x1F => PacketType::ErrorMsg,
            other => PacketType::Unknown(other),
        }
    }
}

impl From<PacketType> for u8 {
    fn from(value: PacketType) -> Self {
        match value {
            PacketType::ConnectReq => 0x10,
            PacketType::ConnectAck => 0x11,
            PacketType::PlayerJoin => 0x12,
            PacketType::ReadyReq => 0x13,
            PacketType::PlayerReady => 0x14,
            PacketType::StartReq => 0x15,
            PacketType::GameStart => 0x16,
            PacketType::Disconnect => 0x17,
            PacketType::PlayerLeft => 0x18,
            PacketType::Countdown => 0x19,
            PacketType::ErrorMsg => 0x1F,
            PacketType::Unknown(other) => other,
        }
    }
}

/// ERROR_MSG codes (RFC section 5.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 0x01: the lobby cannot take another connection.
    LobbyFull,
    /// 0x02: another member of the party already uses this name.
    NameTaken,
    /// 0x03: the name breaks the rules of [`validate_name`].
    InvalidName,
    /// 0x04: the party is counting down or has started.
    GameAlreadyStarted,
    /// 0x05: START_REQ while a member is not ready.
    NotAllReady,
    /// 0x06: fewer members than the minimum.
    MinPlayersNotReached,
    /// 0xFF: anything else.
    Generic,
    /// A code the RFC does not define.
    Unknown(u8),
}

impl From<u8> for ErrorCode {
    fn from(value: u8) -> Self {
        match value {
            0x01 => ErrorCode::LobbyFull,
            0x02 => ErrorCode::NameTaken,
            0x03 => ErrorCode::InvalidName,
            0x04 => ErrorCode::GameAlreadyStarted,
            0x05 => ErrorCode::NotAllReady,
            0x06 => ErrorCode::MinPlayersNotReached,
            0xFF => ErrorCode::Generic,
            other => ErrorCode::Unknown(other),
        }
    }
}

impl From<ErrorCode> for u8 {
    fn from(value: ErrorCode) -> Self {
        match value {
            ErrorCode::LobbyFull => 0x01,
            ErrorCode::NameTaken => 0x02,
            ErrorCode::InvalidName => 0x03,
            ErrorCode::GameAlreadyStarted => 0x04,
            ErrorCode::NotAllReady => 0x05,
            ErrorCode::MinPlayersNotReached => 0x06,
            ErrorCode::Generic => 0xFF,
            ErrorCode::Unknown(other) => other,
        }
    }
}

/// What the read buffer holds next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next<'a> {
    /// One complete frame; the caller drains `consumed` bytes (header plus payload) after use.
    Frame {
        /// The frame, borrowing the read buffer.
        frame: Frame<&'a [u8]>,
        /// Bytes this frame occupies at the front of the buffer.
        consumed: usize,
    },
    /// The buffer holds less than a header, or less than the declared payload.
    NeedMore,
    /// The header declares a payload longer than the limit. The caller drains the
    /// [`HEADER_LEN`] header bytes, counts a violation, and then discards the next `declared`
    /// bytes as they arrive without ever buffering them (a skip counter, not a buffer).
    Oversized {
        /// The raw type byte, for logging.
        packet_type: u8,
        /// The declared payload length still to be discarded.
        declared: usize,
    },
}

/// The server-side reader: cuts the next client frame from `buf`, with payloads capped at
/// [`MAX_CLIENT_PAYLOAD`]. Never copies, never allocates, never panics.
pub fn next_frame(buf: &[u8]) -> Next<'_> {
    next_frame_max(buf, MAX_CLIENT_PAYLOAD)
}

/// The reader with a caller-chosen payload cap, for clients (test client, load generator) that
/// read server frames; [`MAX_SERVER_PAYLOAD`] admits every legitimate server frame.
pub fn next_frame_max(buf: &[u8], max_payload: usize) -> Next<'_> {
    let [packet_type, len_lo, len_hi, ..] = *buf else {
        return Next::NeedMore;
    };
    let declared = usize::from(u16::from_le_bytes([len_lo, len_hi]));
    // Decided from the header alone, so an oversized frame never waits for its payload.
    if declared > max_payload {
        return Next::Oversized {
            packet_type,
            declared,
        };
    }
    let consumed = HEADER_LEN + declared;
    match buf.get(..consumed) {
        Some(bytes) => Next::Frame {
            frame: Frame::new_unchecked(bytes),
            consumed,
        },
        None => Next::NeedMore,
    }
}

/// A view over one frame: header followed by at least the declared payload.
///
/// The read accessors never panic, even on an unchecked view (a short buffer reads as zeros and
/// an empty payload); [`Frame::new_checked`] additionally guarantees the payload is all there.
/// The setters are for emitting into a buffer the caller sized and panic if it is too short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Wraps a buffer, checking that it holds the header and the whole declared payload.
    pub fn new_checked(buffer: T) -> Result<Frame<T>, Error> {
        let frame = Frame::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    /// Checks that the buffer holds the header and the whole declared payload. Bytes after the
    /// payload are allowed and ignored.
    pub fn check_len(&self) -> Result<(), Error> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN || len < self.frame_len() {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The packet type.
    pub fn packet_type(&self) -> PacketType {
        PacketType::from(self.buffer.as_ref().get(field::TYPE).copied().unwrap_or(0))
    }

    /// The declared payload length.
    pub fn payload_len(&self) -> usize {
        match self.buffer.as_ref().get(field::LENGTH) {
            Some(&[lo, hi]) => usize::from(u16::from_le_bytes([lo, hi])),
            _ => 0,
        }
    }

    /// Header plus declared payload.
    pub fn frame_len(&self) -> usize {
        HEADER_LEN + self.payload_len()
    }

    /// The payload; empty if the buffer does not hold all of it.
    pub fn payload(&self) -> &[u8] {
        self.buffer
            .as_ref()
            .get(HEADER_LEN..self.frame_len())
            .unwrap_or(&[])
    }
}

impl<'a> Frame<&'a [u8]> {
    /// The payload with the buffer's lifetime, so parsed representations can outlive the view.
    pub fn into_payload(self) -> &'a [u8] {
        let end = self.frame_len();
        self.buffer.get(HEADER_LEN..end).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Sets the type byte. Panics on an empty buffer.
    pub fn set_packet_type(&mut self, value: PacketType) {
        self.buffer.as_mut()[field::TYPE] = u8::from(value);
    }

    /// Sets the declared payload length. Panics if the buffer is shorter than the header.
    pub fn set_payload_len(&mut self, value: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&value.to_le_bytes());
    }

    /// The payload, mutably. Panics if the buffer does not hold the declared payload.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = self.frame_len();
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

fn payload_byte(payload: &[u8], at: usize) -> Result<u8, Error> {
    payload.get(at).copied().ok_or(Error::BadPayloadSize)
}

fn payload_array<const N: usize>(payload: &[u8], at: Field) -> Result<&[u8; N], Error> {
    payload
        .get(at)
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or(Error::BadPayloadSize)
}

fn parse_flag(byte: u8) -> Result<bool, Error> {
    match byte {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::BadValue),
    }
}

fn check_size(payload: &[u8], expected: usize) -> Result<(), Error> {
    if payload.len() == expected {
        Ok(())
    } else {
        Err(Error::BadPayloadSize)
    }
}

/// Writes the header of a frame whose payload is `payload_len` bytes and returns the payload
/// area. Panics if `buf` is shorter than the frame: emitters document that as a caller bug.
fn emit_header(buf: &mut [u8], packet_type: PacketType, payload_len: usize) -> &mut [u8] {
    let frame_len = HEADER_LEN + payload_len;
    let mut frame = Frame::new_unchecked(&mut buf[..frame_len]);
    frame.set_packet_type(packet_type);
    // Every payload we emit is bounded by MAX_SERVER_PAYLOAD, far below u16::MAX.
    frame.set_payload_len(payload_len as u16);
    let (_, payload) = frame.into_inner().split_at_mut(HEADER_LEN);
    payload
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use quickcheck::{quickcheck, QuickCheck};

    #[test]
    fn golden_sizes_match_appendix_a() {
        // Appendix A gives whole-frame sizes; PLAYER_JOIN follows the section 5.4 diagram
        // (1 + 8 + 32 + 1 = 42 payload bytes, 45 in all) where the table says 44.
        assert_eq!(CONNECT_REQ_BYTES.len(), 35);
        assert_eq!(CONNECT_ACK_BYTES.len(), 12);
        assert_eq!(PLAYER_JOIN_BYTES.len(), 45);
        assert_eq!(READY_REQ_BYTES.len(), 4);
        assert_eq!(PLAYER_READY_BYTES.len(), 5);
        assert_eq!(START_REQ_BYTES.len(), 3);
        assert_eq!(DISCONNECT_BYTES.len(), 3);
        assert_eq!(PLAYER_LEFT_BYTES.len(), 4);
        assert_eq!(COUNTDOWN_BYTES.len(), 7);
        assert_eq!(GAME_START_BYTES.len(), HEADER_LEN + 19 + 2 * 49);
        assert_eq!(MAX_ERROR_TEXT, 251);
        assert_eq!(MAX_SERVER_PAYLOAD, 12_514);
    }

    #[test]
    fn deconstruct() {
        let f = checked(&CONNECT_REQ_BYTES);
        assert_eq!(f.packet_type(), PacketType::ConnectReq);
        assert_eq!(f.payload_len(), 32);
        assert_eq!(f.frame_len(), 35);
        assert_eq!(f.payload(), &CONNECT_REQ_BYTES[3..]);

        let f = checked(&GAME_START_BYTES);
        assert_eq!(f.packet_type(), PacketType::GameStart);
        assert_eq!(f.payload_len(), 117);

        let f = checked(&COUNTDOWN_BYTES);
        assert_eq!(f.packet_type(), PacketType::Countdown);
        assert_eq!(f.payload(), &5.0f32.to_le_bytes());
    }

    #[test]
    fn construct() {
        // The frame setters alone build a header.
        let mut buf = [0xa5u8; 3];
        let mut f = Frame::new_unchecked(&mut buf[..]);
        f.set_packet_type(PacketType::StartReq);
        f.set_payload_len(0);
        assert_eq!(buf, START_REQ_BYTES);
    }

    #[test]
    fn packet_types() {
        let client = [0x10, 0x13, 0x15, 0x17];
        let server = [0x11, 0x12, 0x14, 0x16, 0x18, 0x19, 0x1F];
        for byte in 0..=u8::MAX {
            let ty = PacketType::from(byte);
            assert_eq!(u8::from(ty), byte);
            assert_eq!(ty.is_client_to_server(), client.contains(&byte));
            assert_eq!(ty.is_server_to_client(), server.contains(&byte));
            assert_eq!(
                matches!(ty, PacketType::Unknown(_)),
                !client.contains(&byte) && !server.contains(&byte)
            );
            let code = ErrorCode::from(byte);
            assert_eq!(u8::from(code), byte);
            let known = matches!(byte, 0x01..=0x06 | 0xFF);
            assert_eq!(!matches!(code, ErrorCode::Unknown(_)), known);
        }
    }

    #[test]
    fn reader_needs_more_then_frames() {
        for cut in 0..CONNECT_REQ_BYTES.len() {
            assert_eq!(next_frame(&CONNECT_REQ_BYTES[..cut]), Next::NeedMore);
        }
        let mut two = CONNECT_REQ_BYTES.to_vec();
        two.extend_from_slice(&READY_REQ_BYTES);
        let Next::Frame { frame, consumed } = next_frame(&two) else {
            panic!("first frame is complete");
        };
        assert_eq!(consumed, 35);
        assert_eq!(frame.packet_type(), PacketType::ConnectReq);
        let Next::Frame { frame, consumed } = next_frame(&two[consumed..]) else {
            panic!("second frame is complete");
        };
        assert_eq!(consumed, 4);
        assert_eq!(
            ClientRepr::parse(&frame),
            Ok(ClientRepr::ReadyReq { ready: true })
        );
    }

    #[test]
    fn reader_oversized_from_header_alone() {
        // 33 declared bytes: one past the client maximum, reported before any payload arrives.
        assert_eq!(
            next_frame(&[0x10, 0x21, 0x00]),
            Next::Oversized {
                packet_type: 0x10,
                declared: 33
            }
        );
        assert_eq!(
            next_frame(&[0x42, 0xFF, 0xFF, 1, 2]),
            Next::Oversized {
                packet_type: 0x42,
                declared: 65_535
            }
        );
        // A GAME_START is oversized for the server reader but fine for a client reader.
        assert_eq!(
            next_frame(&GAME_START_BYTES),
            Next::Oversized {
                packet_type: 0x16,
                declared: 117
            }
        );
        assert!(matches!(
            next_frame_max(&GAME_START_BYTES, MAX_SERVER_PAYLOAD),
            Next::Frame { consumed: 120, .. }
        ));
        assert!(matches!(
            next_frame_max(&GAME_START_BYTES, 117),
            Next::Frame { consumed: 120, .. }
        ));
        assert!(matches!(
            next_frame_max(&GAME_START_BYTES, 116),
            Next::Oversized { declared: 117, .. }
        ));
    }

    #[test]
    fn frame_views_are_total() {
        assert_eq!(
            Frame::new_checked(&[0x10u8, 0x01][..]),
            Err(Error::Truncated)
        );
        assert_eq!(
            Frame::new_checked(&CONNECT_REQ_BYTES[..34]),
            Err(Error::Truncated)
        );
        let short = Frame::new_unchecked(&CONNECT_REQ_BYTES[..10]);
        assert_eq!(short.payload(), &[] as &[u8]);
        assert_eq!(short.into_payload(), &[] as &[u8]);
        assert_eq!(ClientRepr::parse(&short), Err(Error::Truncated));
        assert_eq!(ServerRepr::parse(&short), Err(Error::Truncated));
        let empty = Frame::new_unchecked(&[][..]);
        assert_eq!(empty.packet_type(), PacketType::Unknown(0));
        assert_eq!(empty.payload_len(), 0);
        // Bytes after the declared payload are not part of the frame.
        let mut longer = READY_REQ_BYTES.to_vec();
        longer.push(0x99);
        let f = checked(&longer);
        assert_eq!(f.payload(), &[0x01]);
        assert_eq!(
            ClientRepr::parse(&f),
            Ok(ClientRepr::ReadyReq { ready: true })
        );
    }

    #[test]
    fn error_labels_and_display() {
        let labels: Vec<&str> = Error::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(
            labels,
            [
                "truncated",
                "unknown_type",
                "wrong_direction",
                "bad_payload_size",
                "bad_value"
            ]
        );
        for error in Error::ALL {
            assert!(!error.to_string().is_empty());
        }
        let labels: Vec<&str> = NameError::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(labels, ["empty", "too_long", "not_utf8", "control_char"]);
        for error in NameError::ALL {
            assert!(!error.to_string().is_empty());
        }
    }

    quickcheck! {
        fn arbitrary_bytes_never_panic(bytes: Vec<u8>, max_payload: u16) -> bool {
            for reader in [next_frame(&bytes), next_frame_max(&bytes, usize::from(max_payload))] {
                if let Next::Frame { frame, consumed } = reader {
                    assert!(consumed <= bytes.len());
                    let _ = ClientRepr::parse(&frame);
                    let _ = ServerRepr::parse(&frame);
                }
            }
            // The parsers on unchecked views of anything, too.
            let unchecked = Frame::new_unchecked(&bytes[..]);
            let _ = ClientRepr::parse(&unchecked);
            let _ = ServerRepr::parse(&unchecked);
            if let Ok(field) = <&[u8; 32]>::try_from(bytes.get(..32).unwrap_or(&[])) {
                let _ = validate_name(field);
            }
            true
        }
    }

    /// Arbitrary frames whose payload is always there, so every byte reaches the parsers.
    #[test]
    fn arbitrary_payloads_never_panic() {
        fn prop(packet_type: u8, payload: Vec<u8>) -> bool {
            let mut bytes = vec![packet_type];
            bytes.extend_from_slice(&(payload.len() as u16).to_le_bytes());
            bytes.extend_from_slice(&payload);
            let f = Frame::new_checked(&bytes[..]).expect("complete by construction");
            let _ = ClientRepr::parse(&f);
            if let Ok(ServerRepr::GameStart(game_start)) = ServerRepr::parse(&f) {
                assert_eq!(game_start.slots().count(), game_start.player_count());
            }
            true
        }
        QuickCheck::new()
            .tests(2000)
            .quickcheck(prop as fn(u8, Vec<u8>) -> bool);
    }

    /// Feeds `stream` to a reader in chunks cut at `cuts`, appending to a buffer and draining
    /// what each frame consumed, and returns every frame seen as (type byte, payload).
    fn read_in_chunks(stream: &[u8], cuts: &[usize], max_payload: usize) -> Vec<(u8, Vec<u8>)> {
        let mut ends: Vec<usize> = cuts.iter().map(|cut| cut % (stream.len() + 1)).collect();
        ends.push(stream.len());
        ends.sort_unstable();
        let mut buffer = Vec::new();
        let mut frames = Vec::new();
        let mut start = 0;
        for end in ends {
            buffer.extend_from_slice(&stream[start..end]);
            start = end;
            while let Next::Frame { frame, consumed } = next_frame_max(&buffer, max_payload) {
                frames.push((u8::from(frame.packet_type()), frame.payload().to_vec()));
                buffer.drain(..consumed);
            }
        }
        assert!(buffer.is_empty(), "a whole stream leaves nothing behind");
        frames
    }

    quickcheck! {
        fn split_client_stream_yields_same_frames(msgs: Vec<ClientMsg>, cuts: Vec<usize>) -> bool {
            let mut stream = Vec::new();
            let mut expected = Vec::new();
            for msg in &msgs {
                let bytes = emit_client(&msg.repr());
                expected.push((bytes[0], bytes[HEADER_LEN..].to_vec()));
                stream.extend_from_slice(&bytes);
            }
            read_in_chunks(&stream, &cuts, MAX_CLIENT_PAYLOAD) == expected
        }

        fn split_server_stream_yields_same_frames(msgs: Vec<ServerMsg>, cuts: Vec<usize>) -> bool {
            let mut stream = Vec::new();
            let mut expected = Vec::new();
            for msg in &msgs {
                let bytes = emit_server(&msg.repr());
                expected.push((bytes[0], bytes[HEADER_LEN..].to_vec()));
                stream.extend_from_slice(&bytes);
            }
            read_in_chunks(&stream, &cuts, MAX_SERVER_PAYLOAD) == expected
        }
    }
}
