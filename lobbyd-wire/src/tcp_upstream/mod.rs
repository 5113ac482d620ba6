//! The upstream R-Type TCP lobby dialect: what the real R-Type client of the `aernw1`
//! lineage sends on the TCP lobby port, which never matched RFC R-Type-TCP-001's framing.
//! The contract, with a byte diagram per message and a table of differences from the RFC, is
//! `docs/protocols/tcp-lobby-upstream.md`.
//!
//! Every message is one frame: a `u32` little-endian length `N`, then `N` bytes, the first of
//! which is the packet type and the rest its payload. Integers are little-endian; names are
//! fixed 32-byte NUL-padded fields. Two families share the connection: the room messages
//! (0x01-0x07: list, create, join, room update) and then the party messages (0x10-0x1F, the
//! RFC's type numbers with other payloads).
//!
//! Layers, in the smoltcp `wire` shape, as the RFC module [`crate::tcp_lobby`]:
//! - [`sniff`] tells this dialect from the RFC's on a connection's first bytes (at most 5);
//! - [`next_frame`] / [`next_frame_max`] cut frames out of a read buffer without copying; a
//!   length of 0 or over the limit is [`Next::BadLength`], decided from the 4 length bytes
//!   alone, so a peer never makes us buffer it;
//! - [`Frame`] is a view over one frame; its read accessors are total even unchecked, and
//!   after [`Frame::new_checked`] the whole body is there;
//! - [`ClientRepr`] (`client.rs`) and [`ServerRepr`] (`server.rs`, with [`RoomRecord`] and
//!   [`RoomList`]) are the representations, with `parse`, `buffer_len` and `emit`; parsing
//!   borrows from the frame, emitting writes into the caller's buffer, neither allocates.
//!
//! This module must not decide what a message means for a room or a party, and must not log
//! or count: it reports a typed [`Error`] and the R-Type core acts on it.

use core::fmt;

use crate::Field;

mod client;
mod server;

#[cfg(test)]
mod fixtures;

pub use client::ClientRepr;
pub use server::{
    emit_room_list, ConnectStatus, CreateStatus, JoinStatus, RecordIter, RoomList, RoomRecord,
    ServerRepr,
};

/// Length of the length prefix (`u32` little-endian).
pub const LENGTH_LEN: usize = 4;

/// Length of the frame header: length prefix and type byte.
pub const HEADER_LEN: usize = LENGTH_LEN + 1;

/// Length of a name field (CREATE_ROOM_REQ, CONNECT_REQ, PLAYER_JOIN, room records).
pub const NAME_LEN: usize = 32;

/// Largest length `N` (type byte plus payload) the upstream receiver accepts; every frame the
/// server sends stays within it, and [`sniff`] refuses a larger first frame.
pub const MAX_LEN: usize = 2048;

/// Largest length `N` a client frame can have (CONNECT_REQ and CREATE_ROOM_REQ: type byte and
/// a 32-byte name). The server reader reports anything longer as [`Next::BadLength`].
pub const MAX_CLIENT_LEN: usize = 1 + NAME_LEN;

/// Length of one room record (LIST_ROOMS_ACK, ROOM_UPDATE): id u32, `name[32]`, players u8,
/// max players u8, in-game u8.
pub const ROOM_RECORD_LEN: usize = 39;

/// Most records one LIST_ROOMS_ACK carries within [`MAX_LEN`]: type, count and 52 × 39 bytes
/// make 2030.
pub const MAX_LIST_RECORDS: usize = (MAX_LEN - 2) / ROOM_RECORD_LEN;

/// Game tick rate the upstream server announces in GAME_START (and its client expects).
pub const UPSTREAM_TICK_RATE: u16 = 60;

mod field {
    use crate::Field;

    // Frame header.
    pub const LENGTH: Field = 0..4;
    pub const TYPE: usize = 4;

    // Payload offsets, relative to the start of the payload (after the type byte).
    pub const NAME: Field = 0..32;
    pub const ROOM_ID: Field = 0..4;
    pub const HASH: Field = 0..8;

    pub const STATUS: usize = 0;
    pub const CREATE_ACK_ROOM_ID: Field = 1..5;
    pub const CONNECT_ACK_HASH: Field = 1..9;
    pub const CONNECT_ACK_NUMBER: usize = 9;

    pub const NUMBER: usize = 0;
    pub const PLAYER_JOIN_HASH: Field = 1..9;
    pub const PLAYER_JOIN_NAME: Field = 9..41;

    pub const COUNTDOWN_SECONDS: usize = 0;
    pub const GAME_START_SEED: Field = 0..4;
    pub const GAME_START_TICK_RATE: Field = 4..6;

    pub const LIST_COUNT: usize = 0;
    pub const LIST_RECORDS: usize = 1;

    // Relative to the start of one room record.
    pub const RECORD_ID: Field = 0..4;
    pub const RECORD_NAME: Field = 4..36;
    pub const RECORD_PLAYERS: usize = 36;
    pub const RECORD_MAX: usize = 37;
    pub const RECORD_IN_GAME: usize = 38;
}

/// Payload sizes (after the type byte) of the fixed-size messages.
mod size {
    pub const LIST_ROOMS_REQ: usize = 0;
    pub const CREATE_ROOM_REQ: usize = 32;
    pub const CREATE_ROOM_ACK: usize = 5;
    pub const JOIN_ROOM_REQ: usize = 4;
    pub const JOIN_ROOM_ACK: usize = 1;
    pub const ROOM_UPDATE: usize = super::ROOM_RECORD_LEN;
    pub const CONNECT_REQ: usize = 32;
    pub const CONNECT_ACK: usize = 10;
    pub const PLAYER_JOIN: usize = 41;
    pub const READY_REQ: usize = 8;
    pub const PLAYER_READY: usize = 1;
    pub const START_REQ: usize = 0;
    pub const GAME_START: usize = 6;
    pub const DISCONNECT: usize = 8;
    pub const PLAYER_LEFT: usize = 1;
    pub const COUNTDOWN: usize = 1;
}

/// Why a frame could not be turned into a message.
///
/// The server counts violations per variant, using [`Error::as_str`] as the label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// The buffer is shorter than the length prefix or than the declared length. Frames from
    /// [`next_frame`] are always complete, so the server never sees this from a peer.
    Truncated,
    /// The declared length is 0: no type byte. [`next_frame`] reports it as
    /// [`Next::BadLength`]; a view built by hand reports it here.
    Empty,
    /// The packet type is not one of the dialect's.
    UnknownType,
    /// The packet type belongs to the other direction (a client sent ROOM_UPDATE), or is
    /// ERROR_MSG, whose payload upstream never defined.
    WrongDirection,
    /// The payload length is not the one the packet type requires (for LIST_ROOMS_ACK: not
    /// its record count times 39, plus one).
    BadPayloadSize,
    /// A field holds a value the dialect does not allow (an in-game flag other than 0 or 1).
    BadValue,
}

impl Error {
    /// Every variant, in declaration order, so metrics can pre-register one counter each.
    pub const ALL: [Error; 6] = [
        Error::Truncated,
        Error::Empty,
        Error::UnknownType,
        Error::WrongDirection,
        Error::BadPayloadSize,
        Error::BadValue,
    ];

    /// Stable snake_case label, for metrics and logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Error::Truncated => "truncated",
            Error::Empty => "empty",
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
            Error::Empty => "frame of length 0",
            Error::UnknownType => "unknown packet type",
            Error::WrongDirection => "packet type not allowed in this direction",
            Error::BadPayloadSize => "wrong payload size for packet type",
            Error::BadValue => "field value out of range",
        };
        f.write_str(text)
    }
}

/// The packet type byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// 0x01, client to server: the room list, please.
    ListRoomsReq,
    /// 0x02, server to client: every room, as records.
    ListRoomsAck,
    /// 0x03, client to server: create a room with this name.
    CreateRoomReq,
    /// 0x04, server to client: status and the new room's id.
    CreateRoomAck,
    /// 0x05, client to server: join this room.
    JoinRoomReq,
    /// 0x06, server to client: the join's status.
    JoinRoomAck,
    /// 0x07, server to client: one room changed (to connections not in a room).
    RoomUpdate,
    /// 0x10, client to server: player name.
    ConnectReq,
    /// 0x11, server to client: status, player hash and number.
    ConnectAck,
    /// 0x12, server to client: a player is in the party.
    PlayerJoin,
    /// 0x13, client to server: toggle my ready state (keyed by my hash).
    ReadyReq,
    /// 0x14, server to client: a player's ready state toggled.
    PlayerReady,
    /// 0x15, client to server: start now, if everyone is ready.
    StartReq,
    /// 0x16, server to client: the game starts, with seed and tick rate.
    GameStart,
    /// 0x17, client to server: leaving (carries the hash).
    Disconnect,
    /// 0x18, server to client: a player left.
    PlayerLeft,
    /// 0x19, server to client: whole seconds left, 0 = cancelled.
    Countdown,
    /// 0x1F: declared by upstream, never sent, without a defined payload.
    ErrorMsg,
    /// Any other byte; the core decides what to do with it.
    Unknown(u8),
}

impl PacketType {
    /// True for the seven types a client sends.
    pub const fn is_client_to_server(self) -> bool {
        matches!(
            self,
            PacketType::ListRoomsReq
                | PacketType::CreateRoomReq
                | PacketType::JoinRoomReq
                | PacketType::ConnectReq
                | PacketType::ReadyReq
                | PacketType::StartReq
                | PacketType::Disconnect
        )
    }

    /// The length `N` (type byte plus payload) a client frame of this type always has, or
    /// `None` for a type a client does not send.
    pub const fn client_len(self) -> Option<usize> {
        let payload = match self {
            PacketType::ListRoomsReq => size::LIST_ROOMS_REQ,
            PacketType::CreateRoomReq => size::CREATE_ROOM_REQ,
            PacketType::JoinRoomReq => size::JOIN_ROOM_REQ,
            PacketType::ConnectReq => size::CONNECT_REQ,
            PacketType::ReadyReq => size::READY_REQ,
            PacketType::StartReq => size::START_REQ,
            PacketType::Disconnect => size::DISCONNECT,
            _ => return None,
        };
        Some(1 + payload)
    }
}

impl From<u8> for PacketType {
    fn from(value: u8) -> Self {
        match value {
            0x01 => PacketType::ListRoomsReq,
            0x02 => PacketType::ListRoomsAck,
            0x03 => PacketType::CreateRoomReq,
            0x04 => PacketType::CreateRoomAck,
            0x05 => PacketType::JoinRoomReq,
            0x06 => PacketType::JoinRoomAck,
            0x07 => PacketType::RoomUpdate,
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
            PacketType::ListRoomsReq => 0x01,
            PacketType::ListRoomsAck => 0x02,
            PacketType::CreateRoomReq => 0x03,
            PacketType::CreateRoomAck => 0x04,
            PacketType::JoinRoomReq => 0x05,
            PacketType::JoinRoomAck => 0x06,
            PacketType::RoomUpdate => 0x07,
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

/// Which dialect a TCP lobby connection speaks, judged from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// RFC R-Type-TCP-001: byte 0 is a type in 0x10..=0x1F (decided on 1 byte).
    Rfc,
    /// This dialect: a length 1..=[`MAX_LEN`] whose type byte (byte 4) is a client type of
    /// exactly that length (decided on 5 bytes).
    Upstream,
}

/// The lengths `N` of the seven client frames, [`PacketType::client_len`] of each.
const CLIENT_LENS: [usize; 4] = [
    1 + size::LIST_ROOMS_REQ,
    1 + size::JOIN_ROOM_REQ,
    1 + size::READY_REQ,
    1 + size::CONNECT_REQ,
];

/// What [`sniff`] makes of a connection's first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sniff {
    /// Not enough bytes to tell yet (never more than 5 are needed).
    NeedMore,
    /// The connection speaks this dialect; hand the bytes to its reader, none consumed.
    Dialect(Dialect),
    /// Neither dialect: the RFC side treats it as a violation, as before this dialect existed.
    Neither,
}

/// Tells the two TCP lobby dialects apart on a connection's first bytes (at most the first 5
/// are read). Every client frame of this dialect has length 1, 5, 9 or 33, so its byte 0 is
/// never an RFC type (0x10..=0x1F): the two never overlap. Total, never allocates.
pub fn sniff(first: &[u8]) -> Sniff {
    let Some(&byte0) = first.first() else {
        return Sniff::NeedMore;
    };
    if (0x10..=0x1F).contains(&byte0) {
        return Sniff::Dialect(Dialect::Rfc);
    }
    // Every client length is below 256 (1, 5, 9 or 33): refuse early on a byte 0 that is none
    // of them or a non-zero byte 1, 2 or 3, so a stray connection is not kept waiting.
    if !CLIENT_LENS.contains(&usize::from(byte0)) || first.iter().skip(1).take(3).any(|&b| b != 0) {
        return Sniff::Neither;
    }
    let Some(&[l0, l1, l2, l3, ty]) = first.get(..HEADER_LEN) else {
        return Sniff::NeedMore;
    };
    let declared = u32::from_le_bytes([l0, l1, l2, l3]);
    let fits = PacketType::from(ty).client_len() == usize::try_from(declared).ok();
    if (1..=MAX_LEN as u32).contains(&declared) && fits {
        Sniff::Dialect(Dialect::Upstream)
    } else {
        Sniff::Neither
    }
}

/// What the read buffer holds next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next<'a> {
    /// One complete frame; the caller drains `consumed` bytes (prefix plus body) after use.
    Frame {
        /// The frame, borrowing the read buffer.
        frame: Frame<&'a [u8]>,
        /// Bytes this frame occupies at the front of the buffer.
        consumed: usize,
    },
    /// The buffer holds less than the length prefix, or less than the declared length.
    NeedMore,
    /// The declared length is 0 or over the limit (upstream's own receiver clears its buffer
    /// or crashes on these). The caller drains the [`LENGTH_LEN`] prefix bytes, counts a
    /// violation, and discards the next `declared` bytes as they arrive without buffering them.
    BadLength {
        /// The declared length (type byte plus payload) still to be discarded.
        declared: usize,
    },
}

/// The server-side reader: cuts the next client frame from `buf`, lengths capped at
/// [`MAX_CLIENT_LEN`]. Never copies, never allocates, never panics.
pub fn next_frame(buf: &[u8]) -> Next<'_> {
    next_frame_max(buf, MAX_CLIENT_LEN)
}

/// The reader with a caller-chosen cap on the length `N`, for clients (test client, load
/// generator) reading server frames; [`MAX_LEN`] admits every server frame.
pub fn next_frame_max(buf: &[u8], max_len: usize) -> Next<'_> {
    let Some(&[l0, l1, l2, l3]) = buf.get(field::LENGTH) else {
        return Next::NeedMore;
    };
    // A u32 always fits a usize on the targets lobbyd builds for; saturate otherwise.
    let declared = usize::try_from(u32::from_le_bytes([l0, l1, l2, l3])).unwrap_or(usize::MAX);
    // Decided from the prefix alone, so a bad frame never waits for its body.
    if declared == 0 || declared > max_len {
        return Next::BadLength { declared };
    }
    let consumed = LENGTH_LEN + declared;
    match buf.get(..consumed) {
        Some(bytes) => Next::Frame {
            frame: Frame::new_unchecked(bytes),
            consumed,
        },
        None => Next::NeedMore,
    }
}

/// A view over one frame: length prefix, type byte and payload.
///
/// The read accessors never panic, even on an unchecked view (a short buffer reads as zeros and
/// an empty payload); [`Frame::new_checked`] additionally guarantees the body is all there.
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

    /// Wraps a buffer, checking that it holds the prefix, a type byte and the whole body.
    pub fn new_checked(buffer: T) -> Result<Frame<T>, Error> {
        let frame = Frame::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    /// Checks that the declared length is at least 1 and the buffer holds the whole body.
    /// Bytes after the body are allowed and ignored.
    pub fn check_len(&self) -> Result<(), Error> {
        let len = self.buffer.as_ref().len();
        if len < LENGTH_LEN || len < self.frame_len() {
            Err(Error::Truncated)
        } else if self.declared_len() == 0 {
            Err(Error::Empty)
        } else {
            Ok(())
        }
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The declared length `N`: type byte plus payload (0 on a buffer without a prefix).
    pub fn declared_len(&self) -> usize {
        match self.buffer.as_ref().get(field::LENGTH) {
            Some(&[l0, l1, l2, l3]) => {
                usize::try_from(u32::from_le_bytes([l0, l1, l2, l3])).unwrap_or(usize::MAX)
            }
            _ => 0,
        }
    }

    /// Prefix plus declared length (saturating).
    pub fn frame_len(&self) -> usize {
        LENGTH_LEN.saturating_add(self.declared_len())
    }

    /// The packet type (`Unknown(0)` if the buffer holds no type byte).
    pub fn packet_type(&self) -> PacketType {
        PacketType::from(self.buffer.as_ref().get(field::TYPE).copied().unwrap_or(0))
    }

    /// The payload after the type byte; empty if the buffer does not hold all of it.
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
    /// Sets the declared length `N`. Panics if the buffer is shorter than the prefix.
    pub fn set_declared_len(&mut self, value: u32) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&value.to_le_bytes());
    }

    /// Sets the type byte. Panics if the buffer is shorter than the header.
    pub fn set_packet_type(&mut self, value: PacketType) {
        self.buffer.as_mut()[field::TYPE] = u8::from(value);
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

fn payload_u32(payload: &[u8], at: Field) -> Result<u32, Error> {
    payload_array(payload, at).map(|bytes| u32::from_le_bytes(*bytes))
}

fn payload_u64(payload: &[u8], at: Field) -> Result<u64, Error> {
    payload_array(payload, at).map(|bytes| u64::from_le_bytes(*bytes))
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
    // Every frame we emit is bounded by MAX_LEN, far below u32::MAX.
    frame.set_declared_len((1 + payload_len) as u32);
    frame.set_packet_type(packet_type);
    let (_, payload) = frame.into_inner().split_at_mut(HEADER_LEN);
    payload
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use quickcheck::{quickcheck, QuickCheck};

    #[test]
    fn golden_sizes() {
        // Whole-frame sizes of the research's captures.
        assert_eq!(LIST_ROOMS_REQ_BYTES.len(), 5);
        assert_eq!(CREATE_ROOM_REQ_BYTES.len(), 37);
        assert_eq!(JOIN_ROOM_REQ_BYTES.len(), 9);
        assert_eq!(CONNECT_REQ_BYTES.len(), 37);
        assert_eq!(CONNECT_ACK_BYTES.len(), 15);
        assert_eq!(PLAYER_JOIN_BYTES.len(), 46);
        assert_eq!(READY_REQ_BYTES.len(), 13);
        assert_eq!(PLAYER_READY_BYTES.len(), 6);
        assert_eq!(COUNTDOWN_BYTES.len(), 6);
        assert_eq!(START_REQ_BYTES.len(), 5);
        assert_eq!(GAME_START_BYTES.len(), 11);
        assert_eq!(MAX_LIST_RECORDS, 52);
        assert_eq!(HEADER_LEN + 1 + MAX_LIST_RECORDS * ROOM_RECORD_LEN, 2034);
        assert_eq!(
            1 + 1 + (MAX_LIST_RECORDS + 1) * ROOM_RECORD_LEN,
            MAX_LEN + 21
        );
    }

    #[test]
    fn deconstruct() {
        let f = checked(&CONNECT_REQ_BYTES);
        assert_eq!(f.declared_len(), 33);
        assert_eq!(f.frame_len(), 37);
        assert_eq!(f.packet_type(), PacketType::ConnectReq);
        assert_eq!(&f.payload()[..6], b"Alice\0");
        let f = checked(&LIST_ROOMS_REQ_BYTES);
        assert_eq!(f.packet_type(), PacketType::ListRoomsReq);
        assert_eq!(f.payload(), &[] as &[u8]);
        let f = checked(&COUNTDOWN_BYTES);
        assert_eq!(f.packet_type(), PacketType::Countdown);
        assert_eq!(f.payload(), &[5]);
    }

    #[test]
    fn construct() {
        let mut buf = [0xa5u8; 5];
        let mut f = Frame::new_unchecked(&mut buf[..]);
        f.set_declared_len(1);
        f.set_packet_type(PacketType::StartReq);
        assert_eq!(buf, START_REQ_BYTES);
    }

    #[test]
    fn packet_types() {
        let client = [0x01, 0x03, 0x05, 0x10, 0x13, 0x15, 0x17];
        let known = [
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
            0x17, 0x18, 0x19, 0x1F,
        ];
        for byte in 0..=u8::MAX {
            let ty = PacketType::from(byte);
            assert_eq!(u8::from(ty), byte);
            assert_eq!(ty.is_client_to_server(), client.contains(&byte));
            assert_eq!(ty.client_len().is_some(), client.contains(&byte));
            assert_eq!(!matches!(ty, PacketType::Unknown(_)), known.contains(&byte));
        }
        // Research 2.4: every client length is 1, 5, 9 or 33, none an RFC type byte.
        for byte in client {
            let len = PacketType::from(byte).client_len().expect("client type");
            assert!([1, 5, 9, 33].contains(&len));
            assert!(CLIENT_LENS.contains(&len));
            assert!(!(0x10..=0x1F).contains(&len));
        }
    }

    #[test]
    fn sniffs_the_first_frames() {
        let up = Sniff::Dialect(Dialect::Upstream);
        let rfc = Sniff::Dialect(Dialect::Rfc);
        // The four first frames research 2.4 lists, and the rest of the client types.
        for golden in [
            &LIST_ROOMS_REQ_BYTES[..],
            &CONNECT_REQ_BYTES,
            &CREATE_ROOM_REQ_BYTES,
            &JOIN_ROOM_REQ_BYTES,
            &READY_REQ_BYTES,
            &START_REQ_BYTES,
            &DISCONNECT_BYTES,
        ] {
            assert_eq!(sniff(golden), up, "{golden:02x?}");
            assert_eq!(sniff(&golden[..5]), up);
            for cut in 0..5 {
                assert_eq!(sniff(&golden[..cut]), Sniff::NeedMore, "{cut}");
            }
        }
        // The RFC's CONNECT_REQ decides on its first byte.
        assert_eq!(sniff(&[0x10]), rfc);
        assert_eq!(sniff(&[0x10, 0x20, 0x00]), rfc);
        assert_eq!(sniff(&[0x1F]), rfc);
        // A length that does not fit its type, a length out of 1..=2048, an unknown or
        // server type, a non-zero high length byte.
        for bad in [
            &[0x05, 0, 0, 0, 0x01][..],
            &[0x21, 0, 0, 0, 0x05],
            &[0x00, 0, 0, 0, 0x01],
            &[0x01, 0x08, 0, 0, 0x01],
            &[0x01, 0, 0, 0, 0x02],
            &[0x01, 0, 0, 0, 0x42],
            &[0x28, 0, 0, 0, 0x07],
            &[0x01, 0, 0, 1],
            &[0x01, 0, 1],
            &[0x20],
            &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
        ] {
            assert_eq!(sniff(bad), Sniff::Neither, "{bad:02x?}");
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
        assert_eq!(consumed, 37);
        assert_eq!(frame.packet_type(), PacketType::ConnectReq);
        let Next::Frame { frame, consumed } = next_frame(&two[consumed..]) else {
            panic!("second frame is complete");
        };
        assert_eq!(consumed, 13);
        assert_eq!(
            ClientRepr::parse(&frame),
            Ok(ClientRepr::ReadyReq { hash: ALICE_HASH })
        );
    }

    #[test]
    fn reader_bad_length_from_prefix_alone() {
        assert_eq!(next_frame(&[0, 0, 0, 0]), Next::BadLength { declared: 0 });
        assert_eq!(next_frame(&[34, 0, 0, 0]), Next::BadLength { declared: 34 });
        assert_eq!(
            next_frame(&[0xFF, 0xFF, 0xFF, 0xFF, 1]),
            Next::BadLength {
                declared: u32::MAX as usize
            }
        );
        // A LIST_ROOMS_ACK is too long for the server reader, fine for a client reader.
        let list = list_ack_bytes(2);
        assert_eq!(next_frame(&list), Next::BadLength { declared: 80 });
        assert!(matches!(
            next_frame_max(&list, MAX_LEN),
            Next::Frame { consumed: 84, .. }
        ));
        assert_eq!(next_frame_max(&list, 79), Next::BadLength { declared: 80 });
    }

    #[test]
    fn frame_views_are_total() {
        assert_eq!(Frame::new_checked(&[1u8, 0, 0][..]), Err(Error::Truncated));
        assert_eq!(Frame::new_checked(&[0u8, 0, 0, 0][..]), Err(Error::Empty));
        assert_eq!(
            Frame::new_checked(&CONNECT_REQ_BYTES[..36]),
            Err(Error::Truncated)
        );
        let short = Frame::new_unchecked(&CONNECT_REQ_BYTES[..10]);
        assert_eq!(short.payload(), &[] as &[u8]);
        assert_eq!(short.into_payload(), &[] as &[u8]);
        assert_eq!(ClientRepr::parse(&short), Err(Error::Truncated));
        assert_eq!(ServerRepr::parse(&short), Err(Error::Truncated));
        let empty = Frame::new_unchecked(&[][..]);
        assert_eq!(empty.packet_type(), PacketType::Unknown(0));
        assert_eq!(empty.declared_len(), 0);
        let huge = Frame::new_unchecked(&[0xFF, 0xFF, 0xFF, 0xFF, 0x01][..]);
        assert_eq!(huge.payload(), &[] as &[u8]);
        assert_eq!(ClientRepr::parse(&huge), Err(Error::Truncated));
        // Bytes after the body are not part of the frame.
        let mut longer = PLAYER_READY_BYTES.to_vec();
        longer.push(0x99);
        let f = checked(&longer);
        assert_eq!(f.payload(), &[0x01]);
        assert_eq!(
            ServerRepr::parse(&f),
            Ok(ServerRepr::PlayerReady { number: 1 })
        );
    }

    #[test]
    fn error_labels_and_display() {
        let labels: Vec<&str> = Error::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(
            labels,
            [
                "truncated",
                "empty",
                "unknown_type",
                "wrong_direction",
                "bad_payload_size",
                "bad_value"
            ]
        );
        for error in Error::ALL {
            assert!(!error.to_string().is_empty());
        }
    }

    quickcheck! {
        fn arbitrary_bytes_never_panic(bytes: Vec<u8>, max_len: u16) -> bool {
            let _ = sniff(&bytes);
            for reader in [next_frame(&bytes), next_frame_max(&bytes, usize::from(max_len))] {
                if let Next::Frame { frame, consumed } = reader {
                    assert!(consumed <= bytes.len());
                    let _ = ClientRepr::parse(&frame);
                    let _ = ServerRepr::parse(&frame);
                }
            }
            let unchecked = Frame::new_unchecked(&bytes[..]);
            let _ = ClientRepr::parse(&unchecked);
            let _ = ServerRepr::parse(&unchecked);
            true
        }

        fn sniff_agrees_with_the_client_reader(bytes: Vec<u8>) -> bool {
            // Whatever the sniffer takes for this dialect, the server reader cuts as a frame
            // of a client type (given the whole frame), and never as an RFC first byte.
            match sniff(&bytes) {
                Sniff::Dialect(Dialect::Upstream) => match next_frame(&bytes) {
                    Next::Frame { frame, .. } => frame.packet_type().is_client_to_server(),
                    Next::NeedMore => bytes.len() < LENGTH_LEN + usize::from(bytes[0]),
                    Next::BadLength { .. } => false,
                },
                Sniff::Dialect(Dialect::Rfc) => (0x10..=0x1F).contains(&bytes[0]),
                Sniff::NeedMore => bytes.len() < HEADER_LEN,
                Sniff::Neither => true,
            }
        }
    }

    /// Arbitrary frames whose body is always there, so every byte reaches the parsers.
    #[test]
    fn arbitrary_payloads_never_panic() {
        fn prop(packet_type: u8, payload: Vec<u8>) -> bool {
            let mut bytes = ((payload.len() + 1) as u32).to_le_bytes().to_vec();
            bytes.push(packet_type);
            bytes.extend_from_slice(&payload);
            let f = Frame::new_checked(&bytes[..]).expect("complete by construction");
            let _ = ClientRepr::parse(&f);
            if let Ok(ServerRepr::ListRoomsAck(list)) = ServerRepr::parse(&f) {
                assert_eq!(list.records().count(), list.len());
            }
            true
        }
        QuickCheck::new()
            .tests(2000)
            .quickcheck(prop as fn(u8, Vec<u8>) -> bool);
    }

    quickcheck! {
        fn split_client_stream_yields_same_frames(msgs: Vec<ClientMsg>, cuts: Vec<usize>) -> bool {
            let mut stream = Vec::new();
            let mut expected = Vec::new();
            for msg in &msgs {
                let bytes = emit_client(&msg.repr());
                expected.push(bytes.clone());
                stream.extend_from_slice(&bytes);
            }
            read_in_chunks(&stream, &cuts, MAX_CLIENT_LEN) == expected
        }

        fn split_server_stream_yields_same_frames(msgs: Vec<ServerMsg>, cuts: Vec<usize>) -> bool {
            let mut stream = Vec::new();
            let mut expected = Vec::new();
            for msg in &msgs {
                let bytes = emit_server(&msg.repr());
                expected.push(bytes.clone());
                stream.extend_from_slice(&bytes);
            }
            read_in_chunks(&stream, &cuts, MAX_LEN) == expected
        }
    }

    /// Feeds `stream` to the reader in chunks cut at `cuts`, appending to a buffer and
    /// draining what each frame consumed, and returns every whole frame seen.
    fn read_in_chunks(stream: &[u8], cuts: &[usize], max_len: usize) -> Vec<Vec<u8>> {
        let mut ends: Vec<usize> = cuts.iter().map(|cut| cut % (stream.len() + 1)).collect();
        ends.push(stream.len());
        ends.sort_unstable();
        let mut buffer = Vec::new();
        let mut frames = Vec::new();
        let mut start = 0;
        for end in ends {
            buffer.extend_from_slice(&stream[start..end]);
            start = end;
            while let Next::Frame { frame, consumed } = next_frame_max(&buffer, max_len) {
                frames.push(frame.into_inner().to_vec());
                buffer.drain(..consumed);
            }
        }
        assert!(buffer.is_empty(), "a whole stream leaves nothing behind");
        frames
    }
}
