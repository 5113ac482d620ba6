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
//! - [`ClientRepr`] (client to server) and [`ServerRepr`] (server to client) are the plain
//!   representations, with `parse`, `buffer_len` and `emit`. Parsing borrows from the frame and
//!   never allocates; emitting writes into a caller's buffer and never allocates.
//! - [`validate_name`] and [`name_field`] handle the 32-byte name field.
//!
//! This module must not decide what a message means in the lobby's current state, and must not
//! log or count anything: it reports a typed [`Error`] and the lobby core acts on it.

use core::fmt;
use core::net::Ipv4Addr;
use core::ops::Range;

/// Length of the frame header: type (1 byte) and payload length (2 bytes, little-endian).
pub const HEADER_LEN: usize = 3;

/// Length of a name field (CONNECT_REQ, PLAYER_JOIN, PlayerInfo): NUL-padded UTF-8.
pub const NAME_LEN: usize = 32;

/// Longest name in bytes: the 32-byte field always keeps room for the terminating NUL.
pub const MAX_NAME_BYTES: usize = NAME_LEN - 1;

/// Largest payload a client may send (CONNECT_REQ's 32-byte name). The server reader treats any
/// longer declared length as [`Next::Oversized`].
pub const MAX_CLIENT_PAYLOAD: usize = 32;

/// Length of one PlayerInfo record in GAME_START: number u8, hash u64, name[32].
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

type Field = Range<usize>;

mod field {
    use super::Field;

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

/// Checks a name field and returns the name: the bytes before the first NUL, 1 to 31 of them,
/// valid UTF-8, without control characters. Bytes after the first NUL are padding and ignored.
pub fn validate_name(field: &[u8; NAME_LEN]) -> Result<&str, NameError> {
    let end = field
        .iter()
        .position(|&b| b == 0)
        .ok_or(NameError::TooLong)?;
    let bytes = field.get(..end).ok_or(NameError::TooLong)?;
    if bytes.is_empty() {
        return Err(NameError::Empty);
    }
    let name = core::str::from_utf8(bytes).map_err(|_| NameError::NotUtf8)?;
    if name.chars().any(char::is_control) {
        return Err(NameError::ControlChar);
    }
    Ok(name)
}

/// Builds a name field: `name` cut to at most 31 bytes at a char boundary, then NUL-padded.
pub fn name_field(name: &str) -> [u8; NAME_LEN] {
    let name = truncate_at_char_boundary(name, MAX_NAME_BYTES);
    let mut field = [0u8; NAME_LEN];
    field[..name.len()].copy_from_slice(name.as_bytes());
    field
}

/// The longest prefix of `text` of at most `max` bytes that ends on a char boundary.
fn truncate_at_char_boundary(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The text ERROR_MSG actually carries for `message`: up to its first NUL (the wire text is
/// NUL-terminated), then at most [`MAX_ERROR_TEXT`] bytes cut at a char boundary.
pub fn error_text(message: &str) -> &str {
    let before_nul = message.split('\0').next().unwrap_or("");
    truncate_at_char_boundary(before_nul, MAX_ERROR_TEXT)
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

/// A message from client to server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientRepr<'a> {
    /// CONNECT_REQ (0x10), payload 32 bytes: the raw name field, checked later by
    /// [`validate_name`] because an invalid name is answered, not counted as a violation.
    ///
    /// ```text
    /// +----------------------------------+
    /// | name[32] UTF-8, NUL-padded       |
    /// +----------------------------------+
    /// ```
    ConnectReq {
        /// The name field as sent.
        name: &'a [u8; NAME_LEN],
    },
    /// READY_REQ (0x13), payload 1 byte: 0 = not ready, 1 = ready.
    ///
    /// ```text
    /// +-------+
    /// | ready |
    /// +-------+
    /// ```
    ReadyReq {
        /// The desired ready state.
        ready: bool,
    },
    /// START_REQ (0x15), empty payload.
    StartReq,
    /// DISCONNECT (0x17), empty payload.
    Disconnect,
}

impl<'a> ClientRepr<'a> {
    /// Parses a client frame. Server-to-client types give [`Error::WrongDirection`].
    pub fn parse(frame: &Frame<&'a [u8]>) -> Result<ClientRepr<'a>, Error> {
        frame.check_len()?;
        let payload = frame.into_payload();
        match frame.packet_type() {
            PacketType::ConnectReq => {
                check_size(payload, size::CONNECT_REQ)?;
                Ok(ClientRepr::ConnectReq {
                    name: payload_array(payload, field::CONNECT_REQ_NAME)?,
                })
            }
            PacketType::ReadyReq => {
                check_size(payload, size::READY_REQ)?;
                Ok(ClientRepr::ReadyReq {
                    ready: parse_flag(payload_byte(payload, field::READY_REQ_READY)?)?,
                })
            }
            PacketType::StartReq => {
                check_size(payload, size::START_REQ)?;
                Ok(ClientRepr::StartReq)
            }
            PacketType::Disconnect => {
                check_size(payload, size::DISCONNECT)?;
                Ok(ClientRepr::Disconnect)
            }
            PacketType::Unknown(_) => Err(Error::UnknownType),
            _ => Err(Error::WrongDirection),
        }
    }

    /// The packet type of this message.
    pub const fn packet_type(&self) -> PacketType {
        match self {
            ClientRepr::ConnectReq { .. } => PacketType::ConnectReq,
            ClientRepr::ReadyReq { .. } => PacketType::ReadyReq,
            ClientRepr::StartReq => PacketType::StartReq,
            ClientRepr::Disconnect => PacketType::Disconnect,
        }
    }

    /// Length of the whole frame, header included.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
            + match self {
                ClientRepr::ConnectReq { .. } => size::CONNECT_REQ,
                ClientRepr::ReadyReq { .. } => size::READY_REQ,
                ClientRepr::StartReq => size::START_REQ,
                ClientRepr::Disconnect => size::DISCONNECT,
            }
    }

    /// Writes the whole frame at the start of `buf` and returns its length.
    ///
    /// Panics if `buf` is shorter than [`ClientRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let len = self.buffer_len();
        let payload = emit_header(buf, self.packet_type(), len - HEADER_LEN);
        match *self {
            ClientRepr::ConnectReq { name } => {
                payload[field::CONNECT_REQ_NAME].copy_from_slice(name);
            }
            ClientRepr::ReadyReq { ready } => payload[field::READY_REQ_READY] = u8::from(ready),
            ClientRepr::StartReq | ClientRepr::Disconnect => {}
        }
        len
    }
}

/// One PlayerInfo record of GAME_START (41 bytes).
///
/// ```text
/// +--------+----------------+----------------------------+
/// | number | hash u64 LE    | name[32] UTF-8, NUL-padded |
/// +--------+----------------+----------------------------+
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlayerInfo {
    /// Slot number, 1 to the party size.
    pub number: u8,
    /// The player hash, also the UDP HELLO token.
    pub hash: u64,
    /// The name field, NUL-padded.
    pub name: [u8; NAME_LEN],
}

/// A spawn position: x, y as float32.
pub type Spawn = (f32, f32);

/// A GAME_START player and its spawn position. Pairing them in one slice makes a player without
/// a spawn (or a spawn without a player) unrepresentable.
pub type Slot = (PlayerInfo, Spawn);

/// The body of GAME_START (0x16).
///
/// ```text
/// +--------------------------------+---------+-------+
/// | server IP text[16], NUL-padded | port LE | count |
/// +--------------------------------+---------+-------+
/// | count x PlayerInfo (41 bytes each)               |
/// +--------------------------------------------------+
/// | count x spawn (x f32 LE, y f32 LE; 8 bytes each) |
/// +--------------------------------------------------+
/// ```
///
/// Built for emitting with [`GameStart::new`] over a slice of `(PlayerInfo, spawn)` pairs, or
/// obtained from [`ServerRepr::parse`] as a view over the received bytes; either way
/// [`GameStart::slots`] iterates the pairs without allocating.
#[derive(Clone, Copy)]
pub struct GameStart<'a> {
    /// The UDP game endpoint's address, sent as dotted text.
    pub server_ip: Ipv4Addr,
    /// The UDP game endpoint's port.
    pub udp_port: u16,
    slots: Slots<'a>,
}

#[derive(Clone, Copy)]
enum Slots<'a> {
    Pairs(&'a [Slot]),
    // The validated player and spawn arrays of a received GAME_START, with the count.
    Wire { bytes: &'a [u8], count: usize },
}

impl<'a> GameStart<'a> {
    /// A GAME_START for `slots`, in the order they will be sent (the lobby sends slot order).
    /// `None` if there are more than [`MAX_GAME_START_PLAYERS`] slots: the count is one byte.
    pub fn new(server_ip: Ipv4Addr, udp_port: u16, slots: &'a [Slot]) -> Option<GameStart<'a>> {
        if slots.len() > MAX_GAME_START_PLAYERS {
            return None;
        }
        Some(GameStart {
            server_ip,
            udp_port,
            slots: Slots::Pairs(slots),
        })
    }

    /// Number of players (N on the wire).
    pub fn player_count(&self) -> usize {
        match self.slots {
            Slots::Pairs(pairs) => pairs.len(),
            Slots::Wire { count, .. } => count,
        }
    }

    /// The players with their spawn positions, in wire order.
    pub fn slots(&self) -> SlotIter<'a> {
        SlotIter {
            slots: self.slots,
            index: 0,
        }
    }

    fn payload_len(&self) -> usize {
        GAME_START_FIXED_LEN + self.player_count() * (PLAYER_INFO_LEN + SPAWN_LEN)
    }

    fn parse(payload: &'a [u8]) -> Result<GameStart<'a>, Error> {
        let count = usize::from(payload_byte(payload, field::GAME_START_COUNT)?);
        let expected = GAME_START_FIXED_LEN + count * (PLAYER_INFO_LEN + SPAWN_LEN);
        check_size(payload, expected)?;
        let ip_field: &[u8; SERVER_IP_LEN] = payload_array(payload, field::GAME_START_IP)?;
        let port: &[u8; 2] = payload_array(payload, field::GAME_START_PORT)?;
        let bytes = payload
            .get(field::GAME_START_SLOTS..)
            .ok_or(Error::BadPayloadSize)?;
        Ok(GameStart {
            server_ip: parse_ip_field(ip_field)?,
            udp_port: u16::from_le_bytes(*port),
            slots: Slots::Wire { bytes, count },
        })
    }

    fn emit(&self, payload: &mut [u8]) {
        write_ip_field(self.server_ip, &mut payload[field::GAME_START_IP]);
        payload[field::GAME_START_PORT].copy_from_slice(&self.udp_port.to_le_bytes());
        // `new` and `parse` both bound the count by u8::MAX.
        payload[field::GAME_START_COUNT] = self.player_count() as u8;
        let (infos, spawns) =
            payload[field::GAME_START_SLOTS..].split_at_mut(self.player_count() * PLAYER_INFO_LEN);
        let records = infos
            .chunks_exact_mut(PLAYER_INFO_LEN)
            .zip(spawns.chunks_exact_mut(SPAWN_LEN));
        for ((info_out, spawn_out), (info, (x, y))) in records.zip(self.slots()) {
            info_out[field::INFO_NUMBER] = info.number;
            info_out[field::INFO_HASH].copy_from_slice(&info.hash.to_le_bytes());
            info_out[field::INFO_NAME].copy_from_slice(&info.name);
            spawn_out[field::SPAWN_X].copy_from_slice(&x.to_le_bytes());
            spawn_out[field::SPAWN_Y].copy_from_slice(&y.to_le_bytes());
        }
    }
}

impl PartialEq for GameStart<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.server_ip == other.server_ip
            && self.udp_port == other.udp_port
            && self.slots().eq(other.slots())
    }
}

impl fmt::Debug for GameStart<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GameStart")
            .field("server_ip", &self.server_ip)
            .field("udp_port", &self.udp_port)
            .field("slots", &DebugSlots(*self))
            .finish()
    }
}

struct DebugSlots<'a>(GameStart<'a>);

impl fmt::Debug for DebugSlots<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.slots()).finish()
    }
}

/// Iterator over a GAME_START's players and spawn positions; see [`GameStart::slots`].
#[derive(Clone)]
pub struct SlotIter<'a> {
    slots: Slots<'a>,
    index: usize,
}

impl Iterator for SlotIter<'_> {
    type Item = Slot;

    fn next(&mut self) -> Option<Slot> {
        let slot = match self.slots {
            Slots::Pairs(pairs) => pairs.get(self.index).copied()?,
            Slots::Wire { bytes, count } => wire_slot(bytes, count, self.index)?,
        };
        self.index += 1;
        Some(slot)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let total = match self.slots {
            Slots::Pairs(pairs) => pairs.len(),
            Slots::Wire { count, .. } => count,
        };
        let left = total.saturating_sub(self.index);
        (left, Some(left))
    }
}

impl ExactSizeIterator for SlotIter<'_> {}

/// Reads slot `index` from the player and spawn arrays of a validated GAME_START.
fn wire_slot(bytes: &[u8], count: usize, index: usize) -> Option<Slot> {
    if index >= count {
        return None;
    }
    let info_at = index * PLAYER_INFO_LEN;
    let info = bytes.get(info_at..info_at + PLAYER_INFO_LEN)?;
    let spawn_at = count * PLAYER_INFO_LEN + index * SPAWN_LEN;
    let spawn = bytes.get(spawn_at..spawn_at + SPAWN_LEN)?;
    let hash: [u8; 8] = info.get(field::INFO_HASH)?.try_into().ok()?;
    let name: [u8; NAME_LEN] = info.get(field::INFO_NAME)?.try_into().ok()?;
    let x: [u8; 4] = spawn.get(field::SPAWN_X)?.try_into().ok()?;
    let y: [u8; 4] = spawn.get(field::SPAWN_Y)?.try_into().ok()?;
    Some((
        PlayerInfo {
            number: *info.get(field::INFO_NUMBER)?,
            hash: u64::from_le_bytes(hash),
            name,
        },
        (f32::from_le_bytes(x), f32::from_le_bytes(y)),
    ))
}

/// Writes `ip` as dotted decimal text into the 16-byte field, NUL-terminated and NUL-padded.
/// The longest address, "255.255.255.255", is 15 bytes, so the NUL always fits.
fn write_ip_field(ip: Ipv4Addr, field: &mut [u8]) {
    field.fill(0);
    let mut at = 0;
    for (index, octet) in ip.octets().into_iter().enumerate() {
        if index > 0 {
            field[at] = b'.';
            at += 1;
        }
        let digits = [octet / 100, octet / 10 % 10, octet % 10];
        let skip = match octet {
            100.. => 0,
            10..=99 => 1,
            _ => 2,
        };
        for digit in &digits[skip..] {
            field[at] = b'0' + digit;
            at += 1;
        }
    }
}

/// Reads the server IP field: dotted IPv4 text up to the first NUL, which must be present.
fn parse_ip_field(field: &[u8; SERVER_IP_LEN]) -> Result<Ipv4Addr, Error> {
    let end = field.iter().position(|&b| b == 0).ok_or(Error::BadValue)?;
    let text = field.get(..end).ok_or(Error::BadValue)?;
    core::str::from_utf8(text)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or(Error::BadValue)
}

/// A message from server to client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ServerRepr<'a> {
    /// CONNECT_ACK (0x11), payload 9 bytes.
    ///
    /// ```text
    /// +-------------+--------+
    /// | hash u64 LE | number |
    /// +-------------+--------+
    /// ```
    ConnectAck {
        /// The player hash.
        hash: u64,
        /// The slot number.
        number: u8,
    },
    /// PLAYER_JOIN (0x12), payload 42 bytes.
    ///
    /// ```text
    /// +--------+-------------+----------------------------+-------+
    /// | number | hash u64 LE | name[32] UTF-8, NUL-padded | ready |
    /// +--------+-------------+----------------------------+-------+
    /// ```
    PlayerJoin {
        /// The slot number.
        number: u8,
        /// The player hash.
        hash: u64,
        /// The name field.
        name: &'a [u8; NAME_LEN],
        /// The player's ready flag.
        ready: bool,
    },
    /// PLAYER_READY (0x14), payload 2 bytes.
    ///
    /// ```text
    /// +--------+-------+
    /// | number | ready |
    /// +--------+-------+
    /// ```
    PlayerReady {
        /// The slot number.
        number: u8,
        /// The new ready flag.
        ready: bool,
    },
    /// GAME_START (0x16), payload 19 + 49 x N bytes; see [`GameStart`].
    GameStart(GameStart<'a>),
    /// PLAYER_LEFT (0x18), payload 1 byte: the slot number.
    ///
    /// ```text
    /// +--------+
    /// | number |
    /// +--------+
    /// ```
    PlayerLeft {
        /// The slot number.
        number: u8,
    },
    /// COUNTDOWN (0x19), payload 4 bytes: seconds remaining, float32 LE.
    ///
    /// ```text
    /// +----------------------+
    /// | remaining f32 LE     |
    /// +----------------------+
    /// ```
    Countdown {
        /// Seconds until GAME_START.
        remaining: f32,
    },
    /// ERROR_MSG (0x1F), payload 1 + text + NUL, whole frame at most 256 bytes.
    ///
    /// ```text
    /// +------+------------------------+-----+
    /// | code | text UTF-8 (0..=251)   | NUL |
    /// +------+------------------------+-----+
    /// ```
    ///
    /// Emitting sends [`error_text`] of `message`: cut at its first NUL and to 251 bytes at a
    /// char boundary. Parsing also accepts the RFC's 4-byte minimum (code only) as an empty text.
    Error {
        /// The error code.
        code: ErrorCode,
        /// The text.
        message: &'a str,
    },
}

impl<'a> ServerRepr<'a> {
    /// Parses a server frame (client side). Client-to-server types give
    /// [`Error::WrongDirection`].
    pub fn parse(frame: &Frame<&'a [u8]>) -> Result<ServerRepr<'a>, Error> {
        frame.check_len()?;
        let payload = frame.into_payload();
        match frame.packet_type() {
            PacketType::ConnectAck => {
                check_size(payload, size::CONNECT_ACK)?;
                Ok(ServerRepr::ConnectAck {
                    hash: u64::from_le_bytes(*payload_array(payload, field::CONNECT_ACK_HASH)?),
                    number: payload_byte(payload, field::CONNECT_ACK_NUMBER)?,
                })
            }
            PacketType::PlayerJoin => {
                check_size(payload, size::PLAYER_JOIN)?;
                Ok(ServerRepr::PlayerJoin {
                    number: payload_byte(payload, field::PLAYER_JOIN_NUMBER)?,
                    hash: u64::from_le_bytes(*payload_array(payload, field::PLAYER_JOIN_HASH)?),
                    name: payload_array(payload, field::PLAYER_JOIN_NAME)?,
                    ready: parse_flag(payload_byte(payload, field::PLAYER_JOIN_READY)?)?,
                })
            }
            PacketType::PlayerReady => {
                check_size(payload, size::PLAYER_READY)?;
                Ok(ServerRepr::PlayerReady {
                    number: payload_byte(payload, field::PLAYER_READY_NUMBER)?,
                    ready: parse_flag(payload_byte(payload, field::PLAYER_READY_READY)?)?,
                })
            }
            PacketType::GameStart => GameStart::parse(payload).map(ServerRepr::GameStart),
            PacketType::PlayerLeft => {
                check_size(payload, size::PLAYER_LEFT)?;
                Ok(ServerRepr::PlayerLeft {
                    number: payload_byte(payload, field::PLAYER_LEFT_NUMBER)?,
                })
            }
            PacketType::Countdown => {
                check_size(payload, size::COUNTDOWN)?;
                Ok(ServerRepr::Countdown {
                    remaining: f32::from_le_bytes(*payload_array(
                        payload,
                        field::COUNTDOWN_REMAINING,
                    )?),
                })
            }
            PacketType::ErrorMsg => parse_error_msg(payload),
            PacketType::Unknown(_) => Err(Error::UnknownType),
            _ => Err(Error::WrongDirection),
        }
    }

    /// The packet type of this message.
    pub const fn packet_type(&self) -> PacketType {
        match self {
            ServerRepr::ConnectAck { .. } => PacketType::ConnectAck,
            ServerRepr::PlayerJoin { .. } => PacketType::PlayerJoin,
            ServerRepr::PlayerReady { .. } => PacketType::PlayerReady,
            ServerRepr::GameStart(_) => PacketType::GameStart,
            ServerRepr::PlayerLeft { .. } => PacketType::PlayerLeft,
            ServerRepr::Countdown { .. } => PacketType::Countdown,
            ServerRepr::Error { .. } => PacketType::ErrorMsg,
        }
    }

    fn payload_len(&self) -> usize {
        match self {
            ServerRepr::ConnectAck { .. } => size::CONNECT_ACK,
            ServerRepr::PlayerJoin { .. } => size::PLAYER_JOIN,
            ServerRepr::PlayerReady { .. } => size::PLAYER_READY,
            ServerRepr::GameStart(game_start) => game_start.payload_len(),
            ServerRepr::PlayerLeft { .. } => size::PLAYER_LEFT,
            ServerRepr::Countdown { .. } => size::COUNTDOWN,
            ServerRepr::Error { message, .. } => 1 + error_text(message).len() + 1,
        }
    }

    /// Length of the whole frame, header included.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len()
    }

    /// Writes the whole frame at the start of `buf` and returns its length. Never allocates.
    ///
    /// Panics if `buf` is shorter than [`ServerRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let payload_len = self.payload_len();
        let payload = emit_header(buf, self.packet_type(), payload_len);
        match *self {
            ServerRepr::ConnectAck { hash, number } => {
                payload[field::CONNECT_ACK_HASH].copy_from_slice(&hash.to_le_bytes());
                payload[field::CONNECT_ACK_NUMBER] = number;
            }
            ServerRepr::PlayerJoin {
                number,
                hash,
                name,
                ready,
            } => {
                payload[field::PLAYER_JOIN_NUMBER] = number;
                payload[field::PLAYER_JOIN_HASH].copy_from_slice(&hash.to_le_bytes());
                payload[field::PLAYER_JOIN_NAME].copy_from_slice(name);
                payload[field::PLAYER_JOIN_READY] = u8::from(ready);
            }
            ServerRepr::PlayerReady { number, ready } => {
                payload[field::PLAYER_READY_NUMBER] = number;
                payload[field::PLAYER_READY_READY] = u8::from(ready);
            }
            ServerRepr::GameStart(ref game_start) => game_start.emit(payload),
            ServerRepr::PlayerLeft { number } => payload[field::PLAYER_LEFT_NUMBER] = number,
            ServerRepr::Countdown { remaining } => {
                payload[field::COUNTDOWN_REMAINING].copy_from_slice(&remaining.to_le_bytes());
            }
            ServerRepr::Error { code, message } => {
                let text = error_text(message);
                payload[field::ERROR_CODE] = u8::from(code);
                let end = field::ERROR_TEXT + text.len();
                payload[field::ERROR_TEXT..end].copy_from_slice(text.as_bytes());
                payload[end] = 0;
            }
        }
        HEADER_LEN + payload_len
    }
}

/// ERROR_MSG: code only (the RFC's 4-byte minimum frame), or code, NUL-free UTF-8 text and a
/// final NUL, within the 256-byte frame limit.
fn parse_error_msg(payload: &[u8]) -> Result<ServerRepr<'_>, Error> {
    let Some((&code, rest)) = payload.split_first() else {
        return Err(Error::BadPayloadSize);
    };
    if HEADER_LEN + payload.len() > MAX_ERROR_FRAME {
        return Err(Error::BadPayloadSize);
    }
    let message = match rest.split_last() {
        None => "",
        Some((0, text)) if !text.contains(&0) => {
            core::str::from_utf8(text).map_err(|_| Error::BadValue)?
        }
        Some(_) => return Err(Error::BadValue),
    };
    Ok(ServerRepr::Error {
        code: ErrorCode::from(code),
        message,
    })
}

#[cfg(test)]
mod test {
    use super::*;
    use quickcheck::{quickcheck, Arbitrary, Gen, QuickCheck, TestResult};

    // ---- Golden vectors: one per message, from the RFC diagrams (section 5). ----

    /// RFC 5.2 example verbatim: `10 20 00 41 6C 69 63 65 00 ...`, "Alice" NUL-padded to 32.
    static CONNECT_REQ_BYTES: [u8; 35] = [
        0x10, 0x20, 0x00, // CONNECT_REQ, payload 32
        0x41, 0x6C, 0x69, 0x63, 0x65, 0x00, 0x00, 0x00, // "Alice"
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    ];

    const ALICE_HASH: u64 = 0x0123_4567_89AB_CDEF;
    const BOB_HASH: u64 = 0xFEDC_BA98_7654_3210;

    /// RFC 5.3: hash 0x0123456789ABCDEF little-endian, player number 2.
    static CONNECT_ACK_BYTES: [u8; 12] = [
        0x11, 0x09, 0x00, // CONNECT_ACK, payload 9
        0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01, // hash LE
        0x02, // number
    ];

    /// RFC 5.4: number 2, hash 0xFEDCBA9876543210 LE, "Bob" NUL-padded, ready.
    static PLAYER_JOIN_BYTES: [u8; 45] = [
        0x12, 0x2A, 0x00, // PLAYER_JOIN, payload 42
        0x02, // number
        0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE, // hash LE
        0x42, 0x6F, 0x62, 0x00, 0x00, 0x00, 0x00, 0x00, // "Bob"
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x01, // ready
    ];

    /// RFC 5.5: ready = 1.
    static READY_REQ_BYTES: [u8; 4] = [0x13, 0x01, 0x00, 0x01];

    /// RFC 5.6: player 2 is now ready.
    static PLAYER_READY_BYTES: [u8; 5] = [0x14, 0x02, 0x00, 0x02, 0x01];

    /// RFC 5.7: empty payload.
    static START_REQ_BYTES: [u8; 3] = [0x15, 0x00, 0x00];

    /// RFC 5.8: "192.168.1.10" port 5000, Alice (1) at (100, 200), Bob (2) at (100, 300).
    static GAME_START_BYTES: [u8; 120] = [
        0x16, 0x75, 0x00, // GAME_START, payload 117 = 19 + 2 x 49
        0x31, 0x39, 0x32, 0x2E, 0x31, 0x36, 0x38, 0x2E, // "192.168."
        0x31, 0x2E, 0x31, 0x30, 0x00, 0x00, 0x00, 0x00, // "1.10", NUL-padded to 16
        0x88, 0x13, // UDP port 5000 LE
        0x02, // player count
        0x01, // PlayerInfo[0]: number 1
        0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01, // hash LE
        0x41, 0x6C, 0x69, 0x63, 0x65, 0x00, 0x00, 0x00, // "Alice"
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x02, // PlayerInfo[1]: number 2
        0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE, // hash LE
        0x42, 0x6F, 0x62, 0x00, 0x00, 0x00, 0x00, 0x00, // "Bob"
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0xC8, 0x42, 0x00, 0x00, 0x48, 0x43, // spawn[0]: 100.0, 200.0
        0x00, 0x00, 0xC8, 0x42, 0x00, 0x00, 0x96, 0x43, // spawn[1]: 100.0, 300.0
    ];

    /// RFC 5.9: empty payload.
    static DISCONNECT_BYTES: [u8; 3] = [0x17, 0x00, 0x00];

    /// RFC 5.10: player 3 left.
    static PLAYER_LEFT_BYTES: [u8; 4] = [0x18, 0x01, 0x00, 0x03];

    /// RFC 5.11: 5.0 seconds = 0x40A00000 little-endian.
    static COUNTDOWN_BYTES: [u8; 7] = [0x19, 0x04, 0x00, 0x00, 0x00, 0xA0, 0x40];

    /// RFC 5.12: code 0x01 "Lobby full", NUL-terminated.
    static ERROR_MSG_BYTES: [u8; 15] = [
        0x1F, 0x0C, 0x00, // ERROR_MSG, payload 12
        0x01, // lobby full
        0x4C, 0x6F, 0x62, 0x62, 0x79, 0x20, 0x66, 0x75, 0x6C, 0x6C, // "Lobby full"
        0x00, // NUL
    ];

    fn alice() -> PlayerInfo {
        PlayerInfo {
            number: 1,
            hash: ALICE_HASH,
            name: name_field("Alice"),
        }
    }

    fn bob() -> PlayerInfo {
        PlayerInfo {
            number: 2,
            hash: BOB_HASH,
            name: name_field("Bob"),
        }
    }

    fn golden_slots() -> [Slot; 2] {
        [(alice(), (100.0, 200.0)), (bob(), (100.0, 300.0))]
    }

    fn checked(bytes: &[u8]) -> Frame<&[u8]> {
        Frame::new_checked(bytes).expect("golden frame is complete")
    }

    fn client_goldens(alice_name: &[u8; 32]) -> [(&'static [u8], ClientRepr<'_>); 4] {
        [
            (
                &CONNECT_REQ_BYTES,
                ClientRepr::ConnectReq { name: alice_name },
            ),
            (&READY_REQ_BYTES, ClientRepr::ReadyReq { ready: true }),
            (&START_REQ_BYTES, ClientRepr::StartReq),
            (&DISCONNECT_BYTES, ClientRepr::Disconnect),
        ]
    }

    fn server_goldens<'a>(
        bob_name: &'a [u8; 32],
        slots: &'a [Slot],
    ) -> [(&'static [u8], ServerRepr<'a>); 7] {
        let game_start =
            GameStart::new(Ipv4Addr::new(192, 168, 1, 10), 5000, slots).expect("two players fit");
        [
            (
                &CONNECT_ACK_BYTES,
                ServerRepr::ConnectAck {
                    hash: ALICE_HASH,
                    number: 2,
                },
            ),
            (
                &PLAYER_JOIN_BYTES,
                ServerRepr::PlayerJoin {
                    number: 2,
                    hash: BOB_HASH,
                    name: bob_name,
                    ready: true,
                },
            ),
            (
                &PLAYER_READY_BYTES,
                ServerRepr::PlayerReady {
                    number: 2,
                    ready: true,
                },
            ),
            (&GAME_START_BYTES, ServerRepr::GameStart(game_start)),
            (&PLAYER_LEFT_BYTES, ServerRepr::PlayerLeft { number: 3 }),
            (&COUNTDOWN_BYTES, ServerRepr::Countdown { remaining: 5.0 }),
            (
                &ERROR_MSG_BYTES,
                ServerRepr::Error {
                    code: ErrorCode::LobbyFull,
                    message: "Lobby full",
                },
            ),
        ]
    }

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
        assert_eq!(validate_name(&name_field("Alice")), Ok("Alice"));

        let f = checked(&GAME_START_BYTES);
        assert_eq!(f.packet_type(), PacketType::GameStart);
        assert_eq!(f.payload_len(), 117);
        let Ok(ServerRepr::GameStart(game_start)) = ServerRepr::parse(&f) else {
            panic!("GAME_START golden must parse");
        };
        assert_eq!(game_start.server_ip, Ipv4Addr::new(192, 168, 1, 10));
        assert_eq!(game_start.udp_port, 5000);
        assert_eq!(game_start.player_count(), 2);
        let slots: Vec<Slot> = game_start.slots().collect();
        assert_eq!(slots, golden_slots());
        assert_eq!(game_start.slots().len(), 2);

        let f = checked(&COUNTDOWN_BYTES);
        assert_eq!(f.packet_type(), PacketType::Countdown);
        assert_eq!(f.payload(), &5.0f32.to_le_bytes());
    }

    #[test]
    fn construct() {
        let alice_name = name_field("Alice");
        for (golden, repr) in client_goldens(&alice_name) {
            let mut buf = [0xa5u8; 64];
            assert_eq!(repr.buffer_len(), golden.len(), "{repr:?}");
            assert_eq!(repr.emit(&mut buf), golden.len());
            assert_eq!(&buf[..golden.len()], golden, "{repr:?}");
            assert!(buf[golden.len()..].iter().all(|&b| b == 0xa5), "{repr:?}");
        }
        let bob_name = name_field("Bob");
        let slots = golden_slots();
        for (golden, repr) in server_goldens(&bob_name, &slots) {
            let mut buf = [0xa5u8; 160];
            assert_eq!(repr.buffer_len(), golden.len(), "{repr:?}");
            assert_eq!(repr.emit(&mut buf), golden.len());
            assert_eq!(&buf[..golden.len()], golden, "{repr:?}");
            assert!(buf[golden.len()..].iter().all(|&b| b == 0xa5), "{repr:?}");
        }
        // The frame setters alone build a header.
        let mut buf = [0xa5u8; 3];
        let mut f = Frame::new_unchecked(&mut buf[..]);
        f.set_packet_type(PacketType::StartReq);
        f.set_payload_len(0);
        assert_eq!(buf, START_REQ_BYTES);
    }

    #[test]
    fn parse() {
        let alice_name = name_field("Alice");
        for (golden, repr) in client_goldens(&alice_name) {
            assert_eq!(ClientRepr::parse(&checked(golden)), Ok(repr));
            assert_eq!(
                ServerRepr::parse(&checked(golden)),
                Err(Error::WrongDirection)
            );
        }
        let bob_name = name_field("Bob");
        let slots = golden_slots();
        for (golden, repr) in server_goldens(&bob_name, &slots) {
            assert_eq!(ServerRepr::parse(&checked(golden)), Ok(repr));
            assert_eq!(
                ClientRepr::parse(&checked(golden)),
                Err(Error::WrongDirection)
            );
        }
    }

    #[test]
    fn emit() {
        // Emitting then reading back with the frame reader gives the same frame.
        let bob_name = name_field("Bob");
        let slots = golden_slots();
        for (golden, repr) in server_goldens(&bob_name, &slots) {
            let mut buf = vec![0u8; repr.buffer_len()];
            let len = repr.emit(&mut buf);
            match next_frame_max(&buf, MAX_SERVER_PAYLOAD) {
                Next::Frame { frame, consumed } => {
                    assert_eq!(consumed, len);
                    assert_eq!(frame.into_inner(), golden);
                }
                other => panic!("{other:?}"),
            }
        }
        let alice_name = name_field("Alice");
        for (golden, repr) in client_goldens(&alice_name) {
            let mut buf = [0u8; 40];
            let len = repr.emit(&mut buf);
            assert_eq!(
                next_frame(&buf[..len]),
                Next::Frame {
                    frame: Frame::new_unchecked(golden),
                    consumed: len
                }
            );
        }
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
    fn every_error_variant() {
        // Truncated: the view does not hold the declared payload.
        assert_eq!(
            ClientRepr::parse(&Frame::new_unchecked(&[0x13, 0x01, 0x00][..])),
            Err(Error::Truncated)
        );
        // UnknownType, both parsers.
        let unknown = [0x20, 0x00, 0x00];
        assert_eq!(
            ClientRepr::parse(&checked(&unknown)),
            Err(Error::UnknownType)
        );
        assert_eq!(
            ServerRepr::parse(&checked(&unknown)),
            Err(Error::UnknownType)
        );
        // WrongDirection: a client sending PLAYER_JOIN, a server sending START_REQ.
        assert_eq!(
            ClientRepr::parse(&checked(&PLAYER_JOIN_BYTES)),
            Err(Error::WrongDirection)
        );
        assert_eq!(
            ServerRepr::parse(&checked(&START_REQ_BYTES)),
            Err(Error::WrongDirection)
        );
        // BadPayloadSize: every fixed-size type with one byte too few and one too many.
        let fixed = [
            (0x10, 32),
            (0x11, 9),
            (0x12, 42),
            (0x13, 1),
            (0x14, 2),
            (0x15, 0),
            (0x17, 0),
            (0x18, 1),
            (0x19, 4),
        ];
        for (ty, len) in fixed {
            let mut sizes = vec![len + 1];
            if len > 0 {
                sizes.push(len - 1);
            }
            for size in sizes {
                let mut bytes = vec![ty, size as u8, 0];
                bytes.resize(HEADER_LEN + size, 0);
                let f = checked(&bytes);
                let result = if PacketType::from(ty).is_client_to_server() {
                    ClientRepr::parse(&f).map(|_| ())
                } else {
                    ServerRepr::parse(&f).map(|_| ())
                };
                assert_eq!(
                    result,
                    Err(Error::BadPayloadSize),
                    "type {ty:#x} size {size}"
                );
            }
        }
        // GAME_START: count disagrees with length, and shorter than its fixed part.
        let mut game_start = GAME_START_BYTES.to_vec();
        game_start[21] = 3;
        assert_eq!(
            ServerRepr::parse(&checked(&game_start)),
            Err(Error::BadPayloadSize)
        );
        assert_eq!(
            ServerRepr::parse(&checked(&[0x16, 0x02, 0x00, 0x31, 0x00])),
            Err(Error::BadPayloadSize)
        );
        // ERROR_MSG: empty payload, and a frame over 256 bytes.
        assert_eq!(
            ServerRepr::parse(&checked(&[0x1F, 0x00, 0x00])),
            Err(Error::BadPayloadSize)
        );
        let mut long_error = vec![0x1F, 254, 0x00, 0xFF];
        long_error.resize(HEADER_LEN + 253, b'x');
        long_error.push(0);
        assert_eq!(
            ServerRepr::parse(&checked(&long_error)),
            Err(Error::BadPayloadSize)
        );
        // BadValue: ready flags other than 0/1.
        assert_eq!(
            ClientRepr::parse(&checked(&[0x13, 0x01, 0x00, 0x02])),
            Err(Error::BadValue)
        );
        let mut join = PLAYER_JOIN_BYTES;
        join[44] = 0xFF;
        assert_eq!(ServerRepr::parse(&checked(&join)), Err(Error::BadValue));
        assert_eq!(
            ServerRepr::parse(&checked(&[0x14, 0x02, 0x00, 0x01, 0x02])),
            Err(Error::BadValue)
        );
        // BadValue: IP text without NUL, or not an address.
        let mut no_nul = GAME_START_BYTES;
        no_nul[3..19].fill(b'1');
        assert_eq!(ServerRepr::parse(&checked(&no_nul)), Err(Error::BadValue));
        let mut not_ip = GAME_START_BYTES;
        not_ip[3..8].copy_from_slice(b"host\0");
        assert_eq!(ServerRepr::parse(&checked(&not_ip)), Err(Error::BadValue));
        // BadValue: error text not NUL-terminated, with an inner NUL, or not UTF-8.
        for payload in [
            &[0x01, b'a'][..],
            &[0x01, b'a', 0, b'b', 0],
            &[0x01, 0xC3, 0],
        ] {
            let mut bytes = vec![0x1F, payload.len() as u8, 0];
            bytes.extend_from_slice(payload);
            assert_eq!(ServerRepr::parse(&checked(&bytes)), Err(Error::BadValue));
        }
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

    #[test]
    fn names() {
        assert_eq!(validate_name(&[0u8; 32]), Err(NameError::Empty));
        assert_eq!(validate_name(&[b'a'; 32]), Err(NameError::TooLong));
        let mut field = [b'a'; 32];
        field[31] = 0;
        assert_eq!(validate_name(&field), Ok("a".repeat(31).as_str()));
        let mut field = name_field("ab");
        field[1] = 0xFF;
        assert_eq!(validate_name(&field), Err(NameError::NotUtf8));
        assert_eq!(
            validate_name(&name_field("a\tb")),
            Err(NameError::ControlChar)
        );
        assert_eq!(
            validate_name(&name_field("a\u{85}")),
            Err(NameError::ControlChar)
        );
        assert_eq!(validate_name(&name_field("Zoë 🚀")), Ok("Zoë 🚀"));
        // Bytes after the first NUL are padding, whatever they hold.
        let mut field = name_field("Bob");
        field[10] = 0x07;
        assert_eq!(validate_name(&field), Ok("Bob"));
        // name_field cuts at 31 bytes, backing off to a char boundary.
        assert_eq!(
            validate_name(&name_field(&"x".repeat(40))),
            Ok("x".repeat(31).as_str())
        );
        let thirty_then_e_acute = format!("{}é", "x".repeat(30));
        assert_eq!(
            validate_name(&name_field(&thirty_then_e_acute)),
            Ok("x".repeat(30).as_str())
        );
        assert_eq!(name_field(""), [0u8; 32]);
    }

    #[test]
    fn error_message_truncation() {
        let long = "é".repeat(200); // 400 bytes, 2-byte chars
        let repr = ServerRepr::Error {
            code: ErrorCode::Generic,
            message: &long,
        };
        assert_eq!(repr.buffer_len(), MAX_ERROR_FRAME - 1); // 250 text bytes: 251 splits a char
        let mut buf = [0xa5u8; 300];
        let len = repr.emit(&mut buf);
        let Next::Frame { frame, .. } = next_frame_max(&buf[..len], MAX_SERVER_PAYLOAD) else {
            panic!("emitted frame is complete");
        };
        let Ok(ServerRepr::Error { code, message }) = ServerRepr::parse(&frame) else {
            panic!("emitted error parses");
        };
        assert_eq!(code, ErrorCode::Generic);
        assert_eq!(message, "é".repeat(125));

        let ascii = "y".repeat(300);
        assert_eq!(error_text(&ascii).len(), MAX_ERROR_TEXT);
        let repr = ServerRepr::Error {
            code: ErrorCode::Generic,
            message: &ascii,
        };
        assert_eq!(repr.buffer_len(), MAX_ERROR_FRAME);
        assert_eq!(error_text("before\0after"), "before");
        // The RFC's 4-byte minimum: a code without text.
        assert_eq!(
            ServerRepr::parse(&checked(&[0x1F, 0x01, 0x00, 0x05])),
            Ok(ServerRepr::Error {
                code: ErrorCode::NotAllReady,
                message: ""
            })
        );
    }

    #[test]
    fn game_start_limits() {
        let slot = (alice(), (0.0, 0.0));
        let many = vec![slot; 256];
        let ip = Ipv4Addr::new(255, 255, 255, 255);
        assert!(GameStart::new(ip, 1, &many).is_none());
        let game_start = GameStart::new(ip, 1, &many[..255]).expect("255 fit");
        let repr = ServerRepr::GameStart(game_start);
        assert_eq!(repr.buffer_len(), HEADER_LEN + MAX_SERVER_PAYLOAD);
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf);
        assert_eq!(&buf[3..19], b"255.255.255.255\0");
        let Next::Frame { frame, .. } = next_frame_max(&buf, MAX_SERVER_PAYLOAD) else {
            panic!("largest GAME_START fits the client limit");
        };
        assert_eq!(ServerRepr::parse(&frame), Ok(repr));
        let empty = GameStart::new(Ipv4Addr::new(0, 0, 0, 0), 0, &[]).expect("zero players");
        let mut buf = [0xa5u8; 22];
        assert_eq!(ServerRepr::GameStart(empty).emit(&mut buf), 22);
        assert_eq!(&buf[3..11], b"0.0.0.0\0");
    }

    // ---- quickcheck ----

    fn finite_f32(g: &mut Gen) -> f32 {
        let value = f32::from_bits(u32::arbitrary(g));
        if value.is_finite() {
            value
        } else {
            -1.5
        }
    }

    fn name_bytes(g: &mut Gen) -> [u8; 32] {
        let mut name = [0u8; 32];
        for byte in &mut name {
            *byte = u8::arbitrary(g);
        }
        name
    }

    #[derive(Clone, Debug)]
    enum ClientMsg {
        ConnectReq([u8; 32]),
        ReadyReq(bool),
        StartReq,
        Disconnect,
    }

    impl ClientMsg {
        fn repr(&self) -> ClientRepr<'_> {
            match self {
                ClientMsg::ConnectReq(name) => ClientRepr::ConnectReq { name },
                ClientMsg::ReadyReq(ready) => ClientRepr::ReadyReq { ready: *ready },
                ClientMsg::StartReq => ClientRepr::StartReq,
                ClientMsg::Disconnect => ClientRepr::Disconnect,
            }
        }
    }

    impl Arbitrary for ClientMsg {
        fn arbitrary(g: &mut Gen) -> Self {
            match u8::arbitrary(g) % 4 {
                0 => ClientMsg::ConnectReq(name_bytes(g)),
                1 => ClientMsg::ReadyReq(bool::arbitrary(g)),
                2 => ClientMsg::StartReq,
                _ => ClientMsg::Disconnect,
            }
        }
    }

    #[derive(Clone, Debug)]
    enum ServerMsg {
        ConnectAck(u64, u8),
        PlayerJoin(u8, u64, [u8; 32], bool),
        PlayerReady(u8, bool),
        GameStart(Ipv4Addr, u16, Vec<Slot>),
        PlayerLeft(u8),
        Countdown(f32),
        Error(ErrorCode, String),
    }

    impl ServerMsg {
        fn repr(&self) -> ServerRepr<'_> {
            match self {
                ServerMsg::ConnectAck(hash, number) => ServerRepr::ConnectAck {
                    hash: *hash,
                    number: *number,
                },
                ServerMsg::PlayerJoin(number, hash, name, ready) => ServerRepr::PlayerJoin {
                    number: *number,
                    hash: *hash,
                    name,
                    ready: *ready,
                },
                ServerMsg::PlayerReady(number, ready) => ServerRepr::PlayerReady {
                    number: *number,
                    ready: *ready,
                },
                ServerMsg::GameStart(ip, port, slots) => ServerRepr::GameStart(
                    GameStart::new(*ip, *port, slots).expect("generator caps at 255"),
                ),
                ServerMsg::PlayerLeft(number) => ServerRepr::PlayerLeft { number: *number },
                ServerMsg::Countdown(remaining) => ServerRepr::Countdown {
                    remaining: *remaining,
                },
                ServerMsg::Error(code, message) => ServerRepr::Error {
                    code: *code,
                    message,
                },
            }
        }
    }

    impl Arbitrary for ServerMsg {
        fn arbitrary(g: &mut Gen) -> Self {
            match u8::arbitrary(g) % 7 {
                0 => ServerMsg::ConnectAck(u64::arbitrary(g), u8::arbitrary(g)),
                1 => ServerMsg::PlayerJoin(
                    u8::arbitrary(g),
                    u64::arbitrary(g),
                    name_bytes(g),
                    bool::arbitrary(g),
                ),
                2 => ServerMsg::PlayerReady(u8::arbitrary(g), bool::arbitrary(g)),
                3 => {
                    let count = usize::arbitrary(g) % 9;
                    let slots = (0..count)
                        .map(|_| {
                            let info = PlayerInfo {
                                number: u8::arbitrary(g),
                                hash: u64::arbitrary(g),
                                name: name_bytes(g),
                            };
                            (info, (finite_f32(g), finite_f32(g)))
                        })
                        .collect();
                    ServerMsg::GameStart(
                        Ipv4Addr::from(u32::arbitrary(g)),
                        u16::arbitrary(g),
                        slots,
                    )
                }
                4 => ServerMsg::PlayerLeft(u8::arbitrary(g)),
                5 => ServerMsg::Countdown(finite_f32(g)),
                _ => {
                    // Only texts the wire can carry unchanged: no NUL, at most 251 bytes.
                    let mut text: String = String::arbitrary(g)
                        .chars()
                        .filter(|&c| c != '\0')
                        .collect();
                    while text.len() > MAX_ERROR_TEXT {
                        text.pop();
                    }
                    ServerMsg::Error(ErrorCode::from(u8::arbitrary(g)), text)
                }
            }
        }
    }

    fn emit_client(repr: &ClientRepr<'_>) -> Vec<u8> {
        let mut buf = vec![0xa5; repr.buffer_len()];
        assert_eq!(repr.emit(&mut buf), buf.len());
        buf
    }

    fn emit_server(repr: &ServerRepr<'_>) -> Vec<u8> {
        let mut buf = vec![0xa5; repr.buffer_len()];
        assert_eq!(repr.emit(&mut buf), buf.len());
        buf
    }

    quickcheck! {
        fn client_round_trip(msg: ClientMsg) -> bool {
            let repr = msg.repr();
            let bytes = emit_client(&repr);
            match next_frame(&bytes) {
                Next::Frame { frame, consumed } => {
                    consumed == bytes.len() && ClientRepr::parse(&frame) == Ok(repr)
                }
                _ => false,
            }
        }

        fn server_round_trip(msg: ServerMsg) -> bool {
            let repr = msg.repr();
            let bytes = emit_server(&repr);
            let Next::Frame { frame, consumed } = next_frame_max(&bytes, MAX_SERVER_PAYLOAD)
            else {
                return false;
            };
            let Ok(parsed) = ServerRepr::parse(&frame) else {
                return false;
            };
            // Re-emitting compares floats by bit pattern (== alone would equate 0.0 and -0.0).
            consumed == bytes.len() && parsed == repr && emit_server(&parsed) == bytes
        }

        fn name_field_round_trip(name: String) -> TestResult {
            let field = name_field(&name);
            let prefix = truncate_at_char_boundary(&name, MAX_NAME_BYTES);
            if prefix.is_empty() || prefix.contains('\0') || prefix.chars().any(char::is_control) {
                return TestResult::discard();
            }
            TestResult::from_bool(validate_name(&field) == Ok(prefix))
        }

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
