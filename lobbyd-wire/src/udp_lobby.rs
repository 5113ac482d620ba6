//! The R-Type UDP room lobby: the seven messages 0x40..=0x46 of the lobby protocol seed
//! (sections 4 to 10), on the shared framing of [`super::frame`].
//!
//! ```text
//! client -> lobby   0x40 LIST_ROOMS   (empty)
//!                   0x42 CREATE_ROOM  (empty)
//!                   0x44 JOIN_ROOM    roomId u32
//! lobby -> client   0x41 ROOM_LIST    roomCount u16, roomCount x 13-byte record
//!                   0x43 ROOM_CREATED roomId u32, port u16
//!                   0x45 JOIN_SUCCESS roomId u32, port u16
//!                   0x46 JOIN_FAILED  (empty)
//! ```
//!
//! All integers are big-endian. A room record is 13 bytes, as the seed's prose and its
//! payload-size formula (`2 + roomCount * 13`) say and as lobbyd fixes it: roomId u32,
//! playerCount u16, maxPlayers u16, port u16, state u8 (the 11 bytes of fields the seed lists)
//! and 2 reserved bytes, sent as zero and ignored on receipt. The upstream program's 11-byte
//! record is a dialect of its own (see `docs/protocols/udp-lobby.md`).
//!
//! [`RequestRepr::parse`] is what the server runs on every datagram: frame checks, then the
//! direction/compression policy, then the message type, then the exact payload size, each
//! failure a distinct [`Error`] so drops are counted per reason. Emitters write into a caller's
//! buffer and never allocate; [`emit_room_list`] streams records without collecting them.
//! Nothing here decides who may create or join a room.

use super::frame::{self, emit_frame, open, read_u16, read_u32, PacketType, MIN_LEN};

pub use super::frame::Error;

mod field {
    use crate::Field;

    /// JOIN_ROOM payload.
    pub const JOIN_ROOM_ID: Field = 0..4;

    /// ROOM_CREATED / JOIN_SUCCESS payload.
    pub const REPLY_ROOM_ID: Field = 0..4;
    pub const REPLY_PORT: Field = 4..6;

    /// ROOM_LIST payload: a count, then the records.
    pub const ROOM_COUNT: Field = 0..2;
    pub const ROOM_RECORDS: usize = 2;

    /// Offsets inside one room record.
    pub const RECORD_ROOM_ID: Field = 0..4;
    pub const RECORD_PLAYER_COUNT: Field = 4..6;
    pub const RECORD_MAX_PLAYERS: Field = 6..8;
    pub const RECORD_PORT: Field = 8..10;
    pub const RECORD_STATE: usize = 10;
    /// Reserved: the seed's 13-byte record has 2 bytes beyond its listed fields.
    pub const RECORD_RESERVED: Field = 11..13;
}

/// Length of one room record in a ROOM_LIST payload.
pub const ROOM_RECORD_LEN: usize = 13;
/// Length of the room count that opens a ROOM_LIST payload.
pub const ROOM_COUNT_LEN: usize = 2;
/// Largest UDP payload that crosses a 1500-byte Ethernet MTU without IP fragmentation.
pub const MAX_UNFRAGMENTED: usize = 1472;
/// Length of JOIN_ROOM's payload.
pub const JOIN_ROOM_PAYLOAD_LEN: usize = 4;
/// Length of ROOM_CREATED's and JOIN_SUCCESS's payload.
pub const ROOM_PORT_PAYLOAD_LEN: usize = 6;

/// Length of a whole ROOM_LIST datagram carrying `n` records.
pub const fn room_list_len(n: usize) -> usize {
    MIN_LEN + ROOM_COUNT_LEN + ROOM_RECORD_LEN * n
}

/// The most records a ROOM_LIST can carry and stay within [`MAX_UNFRAGMENTED`] (112).
pub const MAX_LIST_ROOMS_UNFRAGMENTED: usize =
    (MAX_UNFRAGMENTED - room_list_len(0)) / ROOM_RECORD_LEN;

/// The most records the 16-bit `payloadSize` lets a ROOM_LIST carry (5041); tighter than the
/// 16-bit room count.
pub const MAX_ROOM_LIST_RECORDS: usize =
    (frame::MAX_PAYLOAD_LEN - ROOM_COUNT_LEN) / ROOM_RECORD_LEN;

// The largest list's payloadSize must fit its 16-bit field, and its count the 16-bit count.
const _: () =
    assert!(ROOM_COUNT_LEN + MAX_ROOM_LIST_RECORDS * ROOM_RECORD_LEN <= u16::MAX as usize);
const _: () = assert!(MAX_ROOM_LIST_RECORDS <= u16::MAX as usize);

/// A lobby message type, as carried in the header's second byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// 0x40, client -> lobby: list the rooms.
    ListRooms,
    /// 0x41, lobby -> client: the room list.
    RoomList,
    /// 0x42, client -> lobby: create a room.
    CreateRoom,
    /// 0x43, lobby -> client: the room was created.
    RoomCreated,
    /// 0x44, client -> lobby: join a room.
    JoinRoom,
    /// 0x45, lobby -> client: the join (or create) was accepted.
    JoinSuccess,
    /// 0x46, lobby -> client: the join or create was refused.
    JoinFailed,
    /// Any other code.
    Unknown(u8),
}

impl From<u8> for MessageType {
    fn from(value: u8) -> Self {
        match value {
            0x40 => MessageType::ListRooms,
            0x41 => MessageType::RoomList,
            0x42 => MessageType::CreateRoom,
            0x43 => MessageType::RoomCreated,
            0x44 => MessageType::JoinRoom,
            0x45 => MessageType::JoinSuccess,
            0x46 => MessageType::JoinFailed,
            other => MessageType::Unknown(other),
        }
    }
}

impl From<MessageType> for u8 {
    fn from(value: MessageType) -> Self {
        match value {
            MessageType::ListRooms => 0x40,
            MessageType::RoomList => 0x41,
            MessageType::CreateRoom => 0x42,
            MessageType::RoomCreated => 0x43,
            MessageType::JoinRoom => 0x44,
            MessageType::JoinSuccess => 0x45,
            MessageType::JoinFailed => 0x46,
            MessageType::Unknown(other) => other,
        }
    }
}

/// The seed's `RoomState`, shared with the instance protocol's WELCOME.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RoomState {
    /// 0: created, waiting for players.
    Waiting,
    /// 1: counting down before the game starts.
    Countdown,
    /// 2: game in progress.
    Playing,
    /// 3: game over, room about to be reaped.
    Finished,
    /// Any other code.
    Unknown(u8),
}

impl From<u8> for RoomState {
    fn from(value: u8) -> Self {
        match value {
            0 => RoomState::Waiting,
            1 => RoomState::Countdown,
            2 => RoomState::Playing,
            3 => RoomState::Finished,
            other => RoomState::Unknown(other),
        }
    }
}

impl From<RoomState> for u8 {
    fn from(value: RoomState) -> Self {
        match value {
            RoomState::Waiting => 0,
            RoomState::Countdown => 1,
            RoomState::Playing => 2,
            RoomState::Finished => 3,
            RoomState::Unknown(other) => other,
        }
    }
}

/// A request the lobby accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Request {
    /// LIST_ROOMS (0x40).
    ListRooms,
    /// CREATE_ROOM (0x42).
    CreateRoom,
    /// JOIN_ROOM (0x44).
    JoinRoom {
        /// The room to join.
        room_id: u32,
    },
}

/// A decoded client request and the sequence id its reply must echo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestRepr {
    /// The client's sequence id.
    pub seq: u16,
    /// What the client asks for.
    pub request: Request,
}

impl RequestRepr {
    /// Decodes a datagram received by the lobby.
    ///
    /// Checks, in order: [`Frame::new_checked`](frame::Frame::new_checked) (`Truncated`,
    /// `BadLength`, `BadChecksum`); [`frame::check_policy`] with packetType 0x01
    /// (`BadPacketType`, `Compressed`); the message type (lobby-to-client codes give
    /// `WrongDirection`, anything else outside the three requests `UnknownMessage`); the exact
    /// payload size, 0, 0 or 4 (`BadPayloadSize`).
    pub fn parse(buf: &[u8]) -> Result<RequestRepr, Error> {
        let frame = open(buf, PacketType::CLIENT_TO_SERVER)?;
        let seq = frame.seq();
        let payload = frame.into_payload();
        let request = match MessageType::from(frame.message_type()) {
            MessageType::ListRooms => {
                expect_len(payload, 0)?;
                Request::ListRooms
            }
            MessageType::CreateRoom => {
                expect_len(payload, 0)?;
                Request::CreateRoom
            }
            MessageType::JoinRoom => {
                expect_len(payload, JOIN_ROOM_PAYLOAD_LEN)?;
                Request::JoinRoom {
                    room_id: read_u32(&payload[field::JOIN_ROOM_ID]),
                }
            }
            MessageType::RoomList
            | MessageType::RoomCreated
            | MessageType::JoinSuccess
            | MessageType::JoinFailed => return Err(Error::WrongDirection),
            MessageType::Unknown(_) => return Err(Error::UnknownMessage),
        };
        Ok(RequestRepr { seq, request })
    }

    /// Length of the datagram [`RequestRepr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        MIN_LEN + self.payload_len()
    }

    const fn payload_len(&self) -> usize {
        match self.request {
            Request::ListRooms | Request::CreateRoom => 0,
            Request::JoinRoom { .. } => JOIN_ROOM_PAYLOAD_LEN,
        }
    }

    /// Writes the request datagram at the start of `buf` and returns its length.
    ///
    /// # Panics
    /// If `buf` is shorter than [`RequestRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let message_type = match self.request {
            Request::ListRooms => MessageType::ListRooms,
            Request::CreateRoom => MessageType::CreateRoom,
            Request::JoinRoom { .. } => MessageType::JoinRoom,
        };
        emit_frame(
            buf,
            PacketType::CLIENT_TO_SERVER,
            message_type.into(),
            self.seq,
            self.payload_len(),
            |payload| {
                if let Request::JoinRoom { room_id } = self.request {
                    payload[field::JOIN_ROOM_ID].copy_from_slice(&room_id.to_be_bytes());
                }
            },
        )
    }
}

/// One room as listed in ROOM_LIST.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RoomRecord {
    /// The room's id, as JOIN_ROOM names it.
    pub room_id: u32,
    /// Members currently in the room.
    pub player_count: u16,
    /// Seats in the room.
    pub max_players: u16,
    /// UDP port of the room's game instance.
    pub port: u16,
    /// The room's [`RoomState`] code.
    pub state: u8,
}

impl RoomRecord {
    /// Decodes one record from exactly [`ROOM_RECORD_LEN`] bytes (total: any bytes are a
    /// record).
    pub fn from_bytes(bytes: &[u8; ROOM_RECORD_LEN]) -> RoomRecord {
        RoomRecord::read(bytes)
    }

    /// Decodes one record from exactly [`ROOM_RECORD_LEN`] bytes.
    fn read(bytes: &[u8; ROOM_RECORD_LEN]) -> RoomRecord {
        RoomRecord {
            room_id: read_u32(&bytes[field::RECORD_ROOM_ID]),
            player_count: read_u16(&bytes[field::RECORD_PLAYER_COUNT]),
            max_players: read_u16(&bytes[field::RECORD_MAX_PLAYERS]),
            port: read_u16(&bytes[field::RECORD_PORT]),
            state: bytes[field::RECORD_STATE],
        }
    }

    /// Encodes the record into exactly [`ROOM_RECORD_LEN`] bytes.
    fn write(&self, bytes: &mut [u8]) {
        bytes[field::RECORD_ROOM_ID].copy_from_slice(&self.room_id.to_be_bytes());
        bytes[field::RECORD_PLAYER_COUNT].copy_from_slice(&self.player_count.to_be_bytes());
        bytes[field::RECORD_MAX_PLAYERS].copy_from_slice(&self.max_players.to_be_bytes());
        bytes[field::RECORD_PORT].copy_from_slice(&self.port.to_be_bytes());
        bytes[field::RECORD_STATE] = self.state;
        bytes[field::RECORD_RESERVED].fill(0);
    }
}

/// A borrowed, validated view over the records of a ROOM_LIST payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RoomList<'a> {
    // Whole records only: `parse` checked that the count matches the length.
    records: &'a [u8],
}

impl<'a> RoomList<'a> {
    /// Validates a ROOM_LIST payload: at least the count, then exactly `count` records
    /// ([`Error::BadPayloadSize`] otherwise).
    pub fn parse(payload: &'a [u8]) -> Result<RoomList<'a>, Error> {
        if payload.len() < ROOM_COUNT_LEN {
            return Err(Error::BadPayloadSize);
        }
        let count = usize::from(read_u16(&payload[field::ROOM_COUNT]));
        let records = &payload[field::ROOM_RECORDS..];
        if records.len() != count * ROOM_RECORD_LEN {
            return Err(Error::BadPayloadSize);
        }
        Ok(RoomList { records })
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len() / ROOM_RECORD_LEN
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The records, in wire order.
    pub fn iter(&self) -> impl Iterator<Item = RoomRecord> + 'a {
        self.records
            .chunks_exact(ROOM_RECORD_LEN)
            .filter_map(|chunk| <&[u8; ROOM_RECORD_LEN]>::try_from(chunk).ok())
            .map(RoomRecord::read)
    }

    /// Length of the payload this list occupies.
    fn payload_len(&self) -> usize {
        ROOM_COUNT_LEN + self.records.len()
    }
}

/// A reply the lobby sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reply<'a> {
    /// ROOM_LIST (0x41). The server emits lists with [`emit_room_list`]; this variant is for
    /// clients, tests and re-emitting a parsed list.
    RoomList(RoomList<'a>),
    /// ROOM_CREATED (0x43).
    RoomCreated {
        /// The new room.
        room_id: u32,
        /// UDP port of its game instance.
        port: u16,
    },
    /// JOIN_SUCCESS (0x45).
    JoinSuccess {
        /// The joined room.
        room_id: u32,
        /// UDP port of its game instance.
        port: u16,
    },
    /// JOIN_FAILED (0x46), also the answer to a CREATE_ROOM the lobby cannot serve.
    JoinFailed,
}

/// A decoded lobby reply and the sequence id it echoes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplyRepr<'a> {
    /// The sequence id of the request being answered.
    pub seq: u16,
    /// The answer.
    pub reply: Reply<'a>,
}

impl<'a> ReplyRepr<'a> {
    /// Decodes a datagram sent by the lobby (for clients, tests and the load generator).
    ///
    /// Same order as [`RequestRepr::parse`], with packetType 0x02; request codes give
    /// `WrongDirection`; a ROOM_LIST whose count disagrees with its length, or a fixed reply of
    /// the wrong length, gives `BadPayloadSize`.
    pub fn parse(buf: &'a [u8]) -> Result<ReplyRepr<'a>, Error> {
        let frame = open(buf, PacketType::SERVER_TO_CLIENT)?;
        let seq = frame.seq();
        let message_type = MessageType::from(frame.message_type());
        let payload = frame.into_payload();
        let reply = match message_type {
            MessageType::RoomList => Reply::RoomList(RoomList::parse(payload)?),
            MessageType::RoomCreated => {
                let (room_id, port) = read_room_port(payload)?;
                Reply::RoomCreated { room_id, port }
            }
            MessageType::JoinSuccess => {
                let (room_id, port) = read_room_port(payload)?;
                Reply::JoinSuccess { room_id, port }
            }
            MessageType::JoinFailed => {
                expect_len(payload, 0)?;
                Reply::JoinFailed
            }
            MessageType::ListRooms | MessageType::CreateRoom | MessageType::JoinRoom => {
                return Err(Error::WrongDirection)
            }
            MessageType::Unknown(_) => return Err(Error::UnknownMessage),
        };
        Ok(ReplyRepr { seq, reply })
    }

    fn payload_len(&self) -> usize {
        match self.reply {
            Reply::RoomList(list) => list.payload_len(),
            Reply::RoomCreated { .. } | Reply::JoinSuccess { .. } => ROOM_PORT_PAYLOAD_LEN,
            Reply::JoinFailed => 0,
        }
    }

    /// Length of the datagram [`ReplyRepr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        MIN_LEN + self.payload_len()
    }

    /// Writes the reply datagram at the start of `buf` and returns its length.
    ///
    /// # Panics
    /// If `buf` is shorter than [`ReplyRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let message_type = match self.reply {
            Reply::RoomList(_) => MessageType::RoomList,
            Reply::RoomCreated { .. } => MessageType::RoomCreated,
            Reply::JoinSuccess { .. } => MessageType::JoinSuccess,
            Reply::JoinFailed => MessageType::JoinFailed,
        };
        emit_frame(
            buf,
            PacketType::SERVER_TO_CLIENT,
            message_type.into(),
            self.seq,
            self.payload_len(),
            |payload| match self.reply {
                Reply::RoomList(list) => {
                    let count = list.len() as u16;
                    payload[field::ROOM_COUNT].copy_from_slice(&count.to_be_bytes());
                    payload[field::ROOM_RECORDS..].copy_from_slice(list.records);
                }
                Reply::RoomCreated { room_id, port } | Reply::JoinSuccess { room_id, port } => {
                    payload[field::REPLY_ROOM_ID].copy_from_slice(&room_id.to_be_bytes());
                    payload[field::REPLY_PORT].copy_from_slice(&port.to_be_bytes());
                }
                Reply::JoinFailed => {}
            },
        )
    }
}

/// Writes a ROOM_LIST datagram answering `seq` into `buf` and returns its length, without
/// allocating: [`write_room_records`] then [`finish_room_list`].
///
/// Takes records from `rooms` in order and stops when the next one would not fit in `buf`
/// (or at [`MAX_ROOM_LIST_RECORDS`]); records beyond that are not consumed. Pass a buffer of
/// [`MAX_UNFRAGMENTED`] bytes to keep the reply unfragmented, which caps it at
/// [`MAX_LIST_ROOMS_UNFRAGMENTED`] records; the caller's iterator order decides which rooms
/// make the cut.
///
/// # Panics
/// If `buf` is shorter than an empty list, `room_list_len(0)` = 14 bytes.
pub fn emit_room_list(
    buf: &mut [u8],
    seq: u16,
    rooms: impl IntoIterator<Item = RoomRecord>,
) -> usize {
    let count = write_room_records(buf, rooms);
    finish_room_list(buf, seq, count)
}

/// Where a ROOM_LIST datagram's first record starts (after the frame header and the count):
/// [`write_room_records`] writes records from here.
pub const ROOM_RECORDS_OFFSET: usize = frame::HEADER_LEN + field::ROOM_RECORDS;

/// Writes the records of a ROOM_LIST into their place in `buf` (after header and count) and
/// returns how many fit, as [`emit_room_list`] does. [`finish_room_list`] then frames them;
/// the records stay valid for any number of later `finish_room_list` calls with other
/// sequence ids, which is how the driver re-sends an unchanged list without rebuilding it.
///
/// # Panics
/// If `buf` is shorter than an empty list, `room_list_len(0)` = 14 bytes.
pub fn write_room_records(buf: &mut [u8], rooms: impl IntoIterator<Item = RoomRecord>) -> usize {
    let capacity = room_list_capacity(buf);
    let records_start = ROOM_RECORDS_OFFSET;
    let mut count = 0usize;
    // Slots first: `zip` stops on the first exhausted side before pulling the other, so a room
    // that does not fit is left in the caller's iterator.
    let slots = buf[records_start..]
        .chunks_exact_mut(ROOM_RECORD_LEN)
        .take(capacity);
    for (slot, room) in slots.zip(rooms) {
        room.write(slot);
        count += 1;
    }
    count
}

/// Frames the first `count` records already in `buf` (see [`write_room_records`]) as a
/// ROOM_LIST answering `seq`: header, count and checksum around them. Returns the length.
/// A `count` larger than `buf` holds is cut to what fits.
///
/// # Panics
/// If `buf` is shorter than an empty list, `room_list_len(0)` = 14 bytes.
pub fn finish_room_list(buf: &mut [u8], seq: u16, count: usize) -> usize {
    let count = count.min(room_list_capacity(buf));
    emit_frame(
        buf,
        PacketType::SERVER_TO_CLIENT,
        MessageType::RoomList.into(),
        seq,
        ROOM_COUNT_LEN + count * ROOM_RECORD_LEN,
        |payload| {
            payload[field::ROOM_COUNT].copy_from_slice(&(count as u16).to_be_bytes());
        },
    )
}

/// Records a ROOM_LIST in `buf` can carry.
fn room_list_capacity(buf: &[u8]) -> usize {
    let min = room_list_len(0);
    assert!(buf.len() >= min, "buffer too short for an empty ROOM_LIST");
    ((buf.len() - min) / ROOM_RECORD_LEN).min(MAX_ROOM_LIST_RECORDS)
}

fn expect_len(payload: &[u8], len: usize) -> Result<(), Error> {
    if payload.len() == len {
        Ok(())
    } else {
        Err(Error::BadPayloadSize)
    }
}

fn read_room_port(payload: &[u8]) -> Result<(u32, u16), Error> {
    expect_len(payload, ROOM_PORT_PAYLOAD_LEN)?;
    Ok((
        read_u32(&payload[field::REPLY_ROOM_ID]),
        read_u16(&payload[field::REPLY_PORT]),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{quickcheck, Arbitrary, Gen, TestResult};

    // Golden datagrams. The first is the seed's own example. The others are laid out by hand
    // from the seed's diagrams (header fields big-endian, then the payload) and their CRC-32
    // was computed independently with
    // `python3 -c "import zlib; print(hex(zlib.crc32(bytes.fromhex('<header+payload>'))))"`.

    // 01 40 0000 0000 0000 | crc: the seed's LOBBY_LIST_ROOMS, seq 0.
    static LIST_ROOMS: [u8; 12] = [
        0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xed, 0x83, 0xaa, 0x8e,
    ];
    // 01 42 0102 0000 0000 | crc: CREATE_ROOM, seq 0x0102.
    static CREATE_ROOM: [u8; 12] = [
        0x01, 0x42, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0xcb, 0x80, 0x3b, 0x62,
    ];
    // 01 44 0003 0004 0004 | 0000002a | crc: JOIN_ROOM room 42, seq 3.
    static JOIN_ROOM: [u8; 16] = [
        0x01, 0x44, 0x00, 0x03, 0x00, 0x04, 0x00, 0x04, 0x00, 0x00, 0x00, 0x2a, 0x65, 0x18, 0x97,
        0xad,
    ];
    // 02 41 0007 001c 001c | 0002 | 00000001 0001 0004 1f91 00 0000 |
    // 00000002 0004 0004 1f92 02 0000 | crc: ROOM_LIST seq 7, room 1 (1/4, port 8081, Waiting),
    // room 2 (4/4, port 8082, Playing); each record ends with the 2 reserved zero bytes.
    static ROOM_LIST: [u8; 40] = [
        0x02, 0x41, 0x00, 0x07, 0x00, 0x1c, 0x00, 0x1c, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00,
        0x01, 0x00, 0x04, 0x1f, 0x91, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x04, 0x00,
        0x04, 0x1f, 0x92, 0x02, 0x00, 0x00, 0xc2, 0x74, 0xff, 0x27,
    ];
    // 02 41 0009 0002 0002 | 0000 | crc: empty ROOM_LIST, seq 9.
    static ROOM_LIST_EMPTY: [u8; 14] = [
        0x02, 0x41, 0x00, 0x09, 0x00, 0x02, 0x00, 0x02, 0x00, 0x00, 0xc2, 0x4a, 0x6d, 0xd2,
    ];
    // 02 43 0102 0006 0006 | 00000007 1f91 | crc: ROOM_CREATED room 7 port 8081, seq 0x0102.
    static ROOM_CREATED: [u8; 18] = [
        0x02, 0x43, 0x01, 0x02, 0x00, 0x06, 0x00, 0x06, 0x00, 0x00, 0x00, 0x07, 0x1f, 0x91, 0xac,
        0x8c, 0x42, 0xd8,
    ];
    // 02 45 0003 0006 0006 | 0000002a 1f92 | crc: JOIN_SUCCESS room 42 port 8082, seq 3.
    static JOIN_SUCCESS: [u8; 18] = [
        0x02, 0x45, 0x00, 0x03, 0x00, 0x06, 0x00, 0x06, 0x00, 0x00, 0x00, 0x2a, 0x1f, 0x92, 0xff,
        0xde, 0x8a, 0xa3,
    ];
    // 02 46 0003 0000 0000 | crc: JOIN_FAILED, seq 3.
    static JOIN_FAILED: [u8; 12] = [
        0x02, 0x46, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x47, 0x7c, 0xe2, 0x87,
    ];

    const ROOM_1: RoomRecord = RoomRecord {
        room_id: 1,
        player_count: 1,
        max_players: 4,
        port: 8081,
        state: 0,
    };
    const ROOM_2: RoomRecord = RoomRecord {
        room_id: 2,
        player_count: 4,
        max_players: 4,
        port: 8082,
        state: 2,
    };

    /// Header + payload with a correct CRC appended, for the error cases.
    fn framed(header_and_payload: &[u8]) -> Vec<u8> {
        let mut bytes = header_and_payload.to_vec();
        bytes.extend_from_slice(&crc32fast::hash(header_and_payload).to_be_bytes());
        bytes
    }

    fn construct_with(emit: impl FnOnce(&mut [u8]) -> usize, golden: &[u8]) {
        let mut buf = vec![0xa5u8; golden.len()];
        let len = emit(&mut buf);
        assert_eq!(len, golden.len());
        assert_eq!(&buf[..], golden);
    }

    #[test]
    fn deconstruct() {
        let frame = frame::Frame::new_checked(&JOIN_ROOM[..]).unwrap();
        assert_eq!(frame.packet_type(), PacketType::CLIENT_TO_SERVER);
        assert_eq!(
            MessageType::from(frame.message_type()),
            MessageType::JoinRoom
        );
        assert_eq!(frame.seq(), 3);
        assert_eq!(frame.payload(), &[0, 0, 0, 0x2a]);

        let frame = frame::Frame::new_checked(&ROOM_LIST[..]).unwrap();
        assert_eq!(
            MessageType::from(frame.message_type()),
            MessageType::RoomList
        );
        assert_eq!(frame.payload_size(), 28);
        let list = RoomList::parse(frame.payload()).unwrap();
        assert_eq!(list.len(), 2);
        assert!(!list.is_empty());
        let rooms: Vec<RoomRecord> = list.iter().collect();
        assert_eq!(rooms, vec![ROOM_1, ROOM_2]);
        assert_eq!(RoomState::from(rooms[1].state), RoomState::Playing);
    }

    #[test]
    fn parse_requests() {
        assert_eq!(
            RequestRepr::parse(&LIST_ROOMS),
            Ok(RequestRepr {
                seq: 0,
                request: Request::ListRooms
            })
        );
        assert_eq!(
            RequestRepr::parse(&CREATE_ROOM),
            Ok(RequestRepr {
                seq: 0x0102,
                request: Request::CreateRoom
            })
        );
        assert_eq!(
            RequestRepr::parse(&JOIN_ROOM),
            Ok(RequestRepr {
                seq: 3,
                request: Request::JoinRoom { room_id: 42 }
            })
        );
    }

    #[test]
    fn parse_replies() {
        let reply = ReplyRepr::parse(&ROOM_LIST).unwrap();
        assert_eq!(reply.seq, 7);
        match reply.reply {
            Reply::RoomList(list) => {
                assert_eq!(list.iter().collect::<Vec<_>>(), vec![ROOM_1, ROOM_2])
            }
            other => panic!("expected a room list, got {other:?}"),
        }
        let reply = ReplyRepr::parse(&ROOM_LIST_EMPTY).unwrap();
        assert_eq!(reply.seq, 9);
        match reply.reply {
            Reply::RoomList(list) => assert!(list.is_empty()),
            other => panic!("expected a room list, got {other:?}"),
        }
        assert_eq!(
            ReplyRepr::parse(&ROOM_CREATED),
            Ok(ReplyRepr {
                seq: 0x0102,
                reply: Reply::RoomCreated {
                    room_id: 7,
                    port: 8081
                }
            })
        );
        assert_eq!(
            ReplyRepr::parse(&JOIN_SUCCESS),
            Ok(ReplyRepr {
                seq: 3,
                reply: Reply::JoinSuccess {
                    room_id: 42,
                    port: 8082
                }
            })
        );
        assert_eq!(
            ReplyRepr::parse(&JOIN_FAILED),
            Ok(ReplyRepr {
                seq: 3,
                reply: Reply::JoinFailed
            })
        );
    }

    #[test]
    fn construct_requests() {
        let list = RequestRepr {
            seq: 0,
            request: Request::ListRooms,
        };
        construct_with(|b| list.emit(b), &LIST_ROOMS);
        let create = RequestRepr {
            seq: 0x0102,
            request: Request::CreateRoom,
        };
        construct_with(|b| create.emit(b), &CREATE_ROOM);
        let join = RequestRepr {
            seq: 3,
            request: Request::JoinRoom { room_id: 42 },
        };
        construct_with(|b| join.emit(b), &JOIN_ROOM);
    }

    #[test]
    fn construct_replies() {
        construct_with(|b| emit_room_list(b, 7, [ROOM_1, ROOM_2]), &ROOM_LIST);
        construct_with(|b| emit_room_list(b, 9, []), &ROOM_LIST_EMPTY);
        let created = ReplyRepr {
            seq: 0x0102,
            reply: Reply::RoomCreated {
                room_id: 7,
                port: 8081,
            },
        };
        construct_with(|b| created.emit(b), &ROOM_CREATED);
        let success = ReplyRepr {
            seq: 3,
            reply: Reply::JoinSuccess {
                room_id: 42,
                port: 8082,
            },
        };
        construct_with(|b| success.emit(b), &JOIN_SUCCESS);
        let failed = ReplyRepr {
            seq: 3,
            reply: Reply::JoinFailed,
        };
        construct_with(|b| failed.emit(b), &JOIN_FAILED);
        // A parsed list re-emits byte for byte.
        let parsed = ReplyRepr::parse(&ROOM_LIST).unwrap();
        construct_with(|b| parsed.emit(b), &ROOM_LIST);
    }

    #[test]
    fn emit_lengths() {
        for repr in [
            RequestRepr {
                seq: 1,
                request: Request::ListRooms,
            },
            RequestRepr {
                seq: 1,
                request: Request::JoinRoom { room_id: 9 },
            },
        ] {
            let mut buf = [0u8; 64];
            assert_eq!(repr.emit(&mut buf), repr.buffer_len());
        }
        let reply = ReplyRepr::parse(&ROOM_LIST).unwrap();
        assert_eq!(reply.buffer_len(), ROOM_LIST.len());
        assert_eq!(room_list_len(2), ROOM_LIST.len());
    }

    #[test]
    fn room_list_bounds() {
        assert_eq!(MAX_LIST_ROOMS_UNFRAGMENTED, 112);
        assert!(room_list_len(MAX_LIST_ROOMS_UNFRAGMENTED) <= MAX_UNFRAGMENTED);
        assert!(room_list_len(MAX_LIST_ROOMS_UNFRAGMENTED + 1) > MAX_UNFRAGMENTED);
        assert_eq!(MAX_ROOM_LIST_RECORDS, 5041);
    }

    #[test]
    fn room_list_truncates_to_buffer() {
        let rooms = (0..500u32).map(|i| RoomRecord {
            room_id: i,
            player_count: 0,
            max_players: 4,
            port: 9000,
            state: 0,
        });
        let mut buf = [0xa5u8; MAX_UNFRAGMENTED];
        let len = emit_room_list(&mut buf, 5, rooms);
        assert_eq!(len, room_list_len(MAX_LIST_ROOMS_UNFRAGMENTED));
        let reply = ReplyRepr::parse(&buf[..len]).unwrap();
        let Reply::RoomList(list) = reply.reply else {
            panic!("expected a room list");
        };
        assert_eq!(list.len(), MAX_LIST_ROOMS_UNFRAGMENTED);
        let ids: Vec<u32> = list.iter().map(|r| r.room_id).collect();
        assert_eq!(
            ids,
            (0..MAX_LIST_ROOMS_UNFRAGMENTED as u32).collect::<Vec<_>>()
        );
    }

    #[test]
    fn room_list_caps_at_payload_size() {
        let rooms = std::iter::repeat(ROOM_1);
        let mut buf = vec![0u8; 100_000];
        let len = emit_room_list(&mut buf, 0, rooms);
        assert_eq!(len, room_list_len(MAX_ROOM_LIST_RECORDS));
        let reply = ReplyRepr::parse(&buf[..len]).unwrap();
        let Reply::RoomList(list) = reply.reply else {
            panic!("expected a room list");
        };
        assert_eq!(list.len(), MAX_ROOM_LIST_RECORDS);
    }

    #[test]
    fn room_list_does_not_consume_unsent_records() {
        let mut rooms = [ROOM_1, ROOM_2, ROOM_1].into_iter();
        let mut buf = [0u8; 14 + ROOM_RECORD_LEN * 2];
        emit_room_list(&mut buf, 0, rooms.by_ref());
        assert_eq!(rooms.next(), Some(ROOM_1));
    }

    #[test]
    fn message_type_codes_round_trip() {
        for code in 0..=u8::MAX {
            assert_eq!(u8::from(MessageType::from(code)), code);
            assert_eq!(u8::from(RoomState::from(code)), code);
        }
        assert_eq!(MessageType::from(0x47), MessageType::Unknown(0x47));
    }

    #[test]
    fn error_truncated() {
        assert_eq!(RequestRepr::parse(&LIST_ROOMS[..11]), Err(Error::Truncated));
    }

    #[test]
    fn error_bad_length() {
        assert_eq!(RequestRepr::parse(&JOIN_ROOM[..15]), Err(Error::BadLength));
    }

    #[test]
    fn error_bad_checksum() {
        let mut bad = JOIN_ROOM;
        bad[11] = 0x2b;
        assert_eq!(RequestRepr::parse(&bad), Err(Error::BadChecksum));
    }

    #[test]
    fn error_bad_packet_type() {
        // LIST_ROOMS marked server-to-client.
        let bytes = framed(&[0x02, 0x40, 0, 0, 0, 0, 0, 0]);
        assert_eq!(RequestRepr::parse(&bytes), Err(Error::BadPacketType));
        // A reply marked client-to-server.
        let bytes = framed(&[0x01, 0x46, 0, 0, 0, 0, 0, 0]);
        assert_eq!(ReplyRepr::parse(&bytes), Err(Error::BadPacketType));
    }

    #[test]
    fn error_compressed() {
        // JOIN_ROOM with payloadSize 4, originalSize 9.
        let bytes = framed(&[0x01, 0x44, 0, 3, 0, 4, 0, 9, 0, 0, 0, 0x2a]);
        assert_eq!(RequestRepr::parse(&bytes), Err(Error::Compressed));
        // originalSize 0 is accepted.
        let bytes = framed(&[0x01, 0x44, 0, 3, 0, 4, 0, 0, 0, 0, 0, 0x2a]);
        assert_eq!(
            RequestRepr::parse(&bytes).map(|r| r.request),
            Ok(Request::JoinRoom { room_id: 42 })
        );
    }

    #[test]
    fn error_unknown_message() {
        for code in [0x00, 0x01, 0x3f, 0x47, 0xff] {
            let bytes = framed(&[0x01, code, 0, 0, 0, 0, 0, 0]);
            assert_eq!(RequestRepr::parse(&bytes), Err(Error::UnknownMessage));
            let bytes = framed(&[0x02, code, 0, 0, 0, 0, 0, 0]);
            assert_eq!(ReplyRepr::parse(&bytes), Err(Error::UnknownMessage));
        }
    }

    #[test]
    fn error_wrong_direction() {
        for code in [0x41, 0x43, 0x45, 0x46] {
            let bytes = framed(&[0x01, code, 0, 0, 0, 0, 0, 0]);
            assert_eq!(RequestRepr::parse(&bytes), Err(Error::WrongDirection));
        }
        for code in [0x40, 0x42, 0x44] {
            let bytes = framed(&[0x02, code, 0, 0, 0, 0, 0, 0]);
            assert_eq!(ReplyRepr::parse(&bytes), Err(Error::WrongDirection));
        }
    }

    #[test]
    fn error_bad_payload_size() {
        // LIST_ROOMS and CREATE_ROOM with one stray byte, JOIN_ROOM with 3 and 5 bytes.
        for header_and_payload in [
            &[0x01, 0x40, 0, 0, 0, 1, 0, 1, 0][..],
            &[0x01, 0x42, 0, 0, 0, 1, 0, 1, 0][..],
            &[0x01, 0x44, 0, 0, 0, 3, 0, 3, 0, 0, 1][..],
            &[0x01, 0x44, 0, 0, 0, 5, 0, 5, 0, 0, 0, 1, 0][..],
        ] {
            let bytes = framed(header_and_payload);
            assert_eq!(RequestRepr::parse(&bytes), Err(Error::BadPayloadSize));
        }
        // ROOM_LIST: missing count; count 1 with no record; count 0 with a record's worth.
        let mut one_record = vec![0x02, 0x41, 0, 0, 0, 15, 0, 15, 0, 0];
        one_record.extend_from_slice(&[0; ROOM_RECORD_LEN]);
        for header_and_payload in [
            &[0x02, 0x41, 0, 0, 0, 0, 0, 0][..],
            &[0x02, 0x41, 0, 0, 0, 2, 0, 2, 0, 1][..],
            &one_record[..],
            &[0x02, 0x43, 0, 0, 0, 4, 0, 4, 0, 0, 0, 7][..],
            &[0x02, 0x46, 0, 0, 0, 1, 0, 1, 0][..],
        ] {
            let bytes = framed(header_and_payload);
            assert_eq!(ReplyRepr::parse(&bytes), Err(Error::BadPayloadSize));
        }
    }

    #[test]
    fn error_bad_slot_not_produced_here() {
        // The lobby has no slot bytes; BadSlot belongs to the instance protocol. Every
        // request code with every small payload length yields something else.
        for code in 0..=u8::MAX {
            for len in 0..6u8 {
                let mut hp = vec![0x01, code, 0, 0, 0, len, 0, len];
                hp.extend(std::iter::repeat(0).take(usize::from(len)));
                assert_ne!(RequestRepr::parse(&framed(&hp)), Err(Error::BadSlot));
            }
        }
    }

    impl Arbitrary for RoomRecord {
        fn arbitrary(g: &mut Gen) -> Self {
            RoomRecord {
                room_id: u32::arbitrary(g),
                player_count: u16::arbitrary(g),
                max_players: u16::arbitrary(g),
                port: u16::arbitrary(g),
                state: u8::arbitrary(g),
            }
        }
    }

    impl Arbitrary for RequestRepr {
        fn arbitrary(g: &mut Gen) -> Self {
            let request = match u8::arbitrary(g) % 3 {
                0 => Request::ListRooms,
                1 => Request::CreateRoom,
                _ => Request::JoinRoom {
                    room_id: u32::arbitrary(g),
                },
            };
            RequestRepr {
                seq: u16::arbitrary(g),
                request,
            }
        }
    }

    /// An owned stand-in for `ReplyRepr`, whose list variant borrows.
    #[derive(Debug, Clone)]
    enum OwnedReply {
        List(Vec<RoomRecord>),
        Created(u32, u16),
        Success(u32, u16),
        Failed,
    }

    impl Arbitrary for OwnedReply {
        fn arbitrary(g: &mut Gen) -> Self {
            match u8::arbitrary(g) % 4 {
                0 => OwnedReply::List(Vec::arbitrary(g)),
                1 => OwnedReply::Created(u32::arbitrary(g), u16::arbitrary(g)),
                2 => OwnedReply::Success(u32::arbitrary(g), u16::arbitrary(g)),
                _ => OwnedReply::Failed,
            }
        }
    }

    quickcheck! {
        fn request_round_trip(repr: RequestRepr) -> bool {
            let mut buf = vec![0xa5u8; repr.buffer_len()];
            let len = repr.emit(&mut buf);
            len == buf.len() && RequestRepr::parse(&buf) == Ok(repr)
        }

        /// Records written once and framed again with another sequence id give exactly
        /// the datagram a fresh `emit_room_list` would: what the driver's cache relies on.
        fn room_list_reframed_equals_fresh(rooms: Vec<RoomRecord>, first: u16, second: u16) -> bool {
            let mut cached = vec![0x5au8; MAX_UNFRAGMENTED];
            let count = write_room_records(&mut cached, rooms.iter().copied());
            finish_room_list(&mut cached, first, count);
            let len = finish_room_list(&mut cached, second, count);
            let mut fresh = vec![0xa5u8; MAX_UNFRAGMENTED];
            let fresh_len = emit_room_list(&mut fresh, second, rooms.iter().copied());
            len == fresh_len && cached[..len] == fresh[..fresh_len]
        }

        fn reply_round_trip(seq: u16, owned: OwnedReply) -> bool {
            let mut buf = vec![0xa5u8; room_list_len(MAX_ROOM_LIST_RECORDS)];
            let len = match &owned {
                OwnedReply::List(rooms) => emit_room_list(&mut buf, seq, rooms.iter().copied()),
                OwnedReply::Created(room_id, port) => ReplyRepr {
                    seq,
                    reply: Reply::RoomCreated { room_id: *room_id, port: *port },
                }
                .emit(&mut buf),
                OwnedReply::Success(room_id, port) => ReplyRepr {
                    seq,
                    reply: Reply::JoinSuccess { room_id: *room_id, port: *port },
                }
                .emit(&mut buf),
                OwnedReply::Failed => ReplyRepr { seq, reply: Reply::JoinFailed }.emit(&mut buf),
            };
            let Ok(parsed) = ReplyRepr::parse(&buf[..len]) else {
                return false;
            };
            let fields_match = match (&owned, parsed.reply) {
                (OwnedReply::List(rooms), Reply::RoomList(list)) => {
                    list.iter().eq(rooms.iter().copied())
                }
                (OwnedReply::Created(r, p), Reply::RoomCreated { room_id, port })
                | (OwnedReply::Success(r, p), Reply::JoinSuccess { room_id, port }) => {
                    *r == room_id && *p == port
                }
                (OwnedReply::Failed, Reply::JoinFailed) => true,
                _ => false,
            };
            // Re-emitting the parsed repr reproduces the same bytes.
            let mut again = vec![0u8; parsed.buffer_len()];
            let again_len = parsed.emit(&mut again);
            fields_match && parsed.seq == seq && again[..again_len] == buf[..len]
        }

        fn arbitrary_bytes_never_panic(bytes: Vec<u8>) -> bool {
            let _ = RequestRepr::parse(&bytes);
            if let Ok(reply) = ReplyRepr::parse(&bytes) {
                if let Reply::RoomList(list) = reply.reply {
                    return list.iter().count() == list.len();
                }
            }
            true
        }

        // Random bytes almost never carry a valid CRC; this reaches the checks behind it.
        fn arbitrary_valid_frames_never_panic(
            packet_type: bool,
            code: u8,
            original: u16,
            payload: Vec<u8>
        ) -> TestResult {
            let Ok(size) = u16::try_from(payload.len()) else {
                return TestResult::discard();
            };
            let mut hp = vec![if packet_type { 0x01 } else { 0x02 }, 0x40 | (code & 0x07), 0, 0];
            hp.extend_from_slice(&size.to_be_bytes());
            let original = match original % 3 {
                0 => 0,
                1 => size,
                _ => original,
            };
            hp.extend_from_slice(&original.to_be_bytes());
            hp.extend_from_slice(&payload);
            let bytes = framed(&hp);
            let _ = RequestRepr::parse(&bytes);
            if let Ok(ReplyRepr { reply: Reply::RoomList(list), .. }) = ReplyRepr::parse(&bytes) {
                return TestResult::from_bool(list.iter().count() == list.len());
            }
            TestResult::passed()
        }
    }
}
