//! The ten server-to-client messages of the upstream TCP lobby dialect, as [`ServerRepr`]:
//! the room replies (LIST_ROOMS_ACK with its [`RoomList`] of [`RoomRecord`]s, CREATE_ROOM_ACK,
//! JOIN_ROOM_ACK, ROOM_UPDATE) and the party messages (CONNECT_ACK, PLAYER_JOIN,
//! PLAYER_READY, GAME_START, PLAYER_LEFT, COUNTDOWN). Contract:
//! `docs/protocols/tcp-lobby-upstream.md`, "Messages".
//!
//! The server emits these into a connection's send queue ([`emit_room_list`] streams a list
//! from the core's rooms without collecting them); the parsers serve the test client and the
//! load generator, and a received list stays a view over the frame. Nothing here allocates,
//! and nothing here chooses who is told what: the R-Type core does.

use core::fmt;

use super::{
    check_size, emit_header, field, payload_array, payload_byte, payload_u32, payload_u64, size,
    Error, Frame, PacketType, HEADER_LEN, MAX_LIST_RECORDS, NAME_LEN, ROOM_RECORD_LEN,
};

/// One room as LIST_ROOMS_ACK and ROOM_UPDATE carry it (39 bytes).
///
/// ```text
/// +----------------+----------------------+---------+-----+---------+
/// | room id u32 LE | name[32], NUL-padded | players | max | in game |
/// +----------------+----------------------+---------+-----+---------+
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RoomRecord {
    /// The room id JOIN_ROOM_REQ names.
    pub id: u32,
    /// The name field, NUL-padded.
    pub name: [u8; NAME_LEN],
    /// Connections holding a slot (joined, connected or not).
    pub players: u8,
    /// Slots in the room.
    pub max_players: u8,
    /// True once the game started (the room takes no one).
    pub in_game: bool,
}

impl RoomRecord {
    /// Reads one record from exactly [`ROOM_RECORD_LEN`] bytes.
    fn parse(bytes: &[u8]) -> Result<RoomRecord, Error> {
        check_size(bytes, ROOM_RECORD_LEN)?;
        Ok(RoomRecord {
            id: payload_u32(bytes, field::RECORD_ID)?,
            name: *payload_array(bytes, field::RECORD_NAME)?,
            players: payload_byte(bytes, field::RECORD_PLAYERS)?,
            max_players: payload_byte(bytes, field::RECORD_MAX)?,
            in_game: match payload_byte(bytes, field::RECORD_IN_GAME)? {
                0 => false,
                1 => true,
                _ => return Err(Error::BadValue),
            },
        })
    }

    /// Writes the record into the first [`ROOM_RECORD_LEN`] bytes of `out`.
    fn emit(&self, out: &mut [u8]) {
        out[field::RECORD_ID].copy_from_slice(&self.id.to_le_bytes());
        out[field::RECORD_NAME].copy_from_slice(&self.name);
        out[field::RECORD_PLAYERS] = self.players;
        out[field::RECORD_MAX] = self.max_players;
        out[field::RECORD_IN_GAME] = u8::from(self.in_game);
    }
}

/// The body of LIST_ROOMS_ACK (0x02): a count, then that many records.
///
/// ```text
/// +-------+--------------------------------------+
/// | count | count x room record (39 bytes each)  |
/// +-------+--------------------------------------+
/// ```
///
/// Built for emitting with [`RoomList::new`] over a slice, or obtained from
/// [`ServerRepr::parse`] as a view over the received bytes; either way
/// [`RoomList::records`] iterates without allocating.
#[derive(Clone, Copy)]
pub struct RoomList<'a> {
    records: Records<'a>,
}

#[derive(Clone, Copy)]
enum Records<'a> {
    Slice(&'a [RoomRecord]),
    // The validated records of a received list.
    Wire(&'a [u8]),
}

impl<'a> RoomList<'a> {
    /// A list of `records`, `None` past [`MAX_LIST_RECORDS`] (the client's 2048-byte frame).
    pub fn new(records: &'a [RoomRecord]) -> Option<RoomList<'a>> {
        (records.len() <= MAX_LIST_RECORDS).then_some(RoomList {
            records: Records::Slice(records),
        })
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        match self.records {
            Records::Slice(records) => records.len(),
            Records::Wire(bytes) => bytes.len() / ROOM_RECORD_LEN,
        }
    }

    /// True if the list has no room.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The records, in wire order.
    pub fn records(&self) -> RecordIter<'a> {
        RecordIter {
            records: self.records,
            index: 0,
        }
    }

    fn payload_len(&self) -> usize {
        1 + self.len() * ROOM_RECORD_LEN
    }

    fn parse(payload: &'a [u8]) -> Result<RoomList<'a>, Error> {
        let count = usize::from(payload_byte(payload, field::LIST_COUNT)?);
        check_size(payload, 1 + count * ROOM_RECORD_LEN)?;
        let bytes = payload
            .get(field::LIST_RECORDS..)
            .ok_or(Error::BadPayloadSize)?;
        // Every record is checked here, so the iterator never meets a bad one.
        for record in bytes.chunks_exact(ROOM_RECORD_LEN) {
            RoomRecord::parse(record)?;
        }
        Ok(RoomList {
            records: Records::Wire(bytes),
        })
    }

    fn emit(&self, payload: &mut [u8]) {
        // `new` caps the count at 52 and `parse` reads it from one byte.
        payload[field::LIST_COUNT] = self.len() as u8;
        let slots = payload[field::LIST_RECORDS..].chunks_exact_mut(ROOM_RECORD_LEN);
        for (slot, record) in slots.zip(self.records()) {
            record.emit(slot);
        }
    }
}

impl PartialEq for RoomList<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.records().eq(other.records())
    }
}

impl fmt::Debug for RoomList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.records()).finish()
    }
}

/// Iterator over a [`RoomList`]'s records.
#[derive(Clone)]
pub struct RecordIter<'a> {
    records: Records<'a>,
    index: usize,
}

impl Iterator for RecordIter<'_> {
    type Item = RoomRecord;

    fn next(&mut self) -> Option<RoomRecord> {
        let record = match self.records {
            Records::Slice(records) => records.get(self.index).copied()?,
            Records::Wire(bytes) => {
                let start = self.index * ROOM_RECORD_LEN;
                let chunk = bytes.get(start..start + ROOM_RECORD_LEN)?;
                // Checked by `RoomList::parse`; a failure here would end the list early.
                RoomRecord::parse(chunk).ok()?
            }
        };
        self.index += 1;
        Some(record)
    }
}

/// Writes a LIST_ROOMS_ACK of the records `rooms` yields into `buf` and returns its length,
/// without allocating. Takes at most [`MAX_LIST_RECORDS`] records, fewer if `buf` is shorter;
/// records beyond are not consumed. A buffer of `HEADER_LEN + 1 + 52 * 39` = 2034 bytes holds
/// the largest list.
///
/// # Panics
/// If `buf` is shorter than an empty list (6 bytes).
pub fn emit_room_list(buf: &mut [u8], rooms: impl IntoIterator<Item = RoomRecord>) -> usize {
    let records_start = HEADER_LEN + field::LIST_RECORDS;
    let mut count = 0usize;
    // Slots first: `zip` stops on the exhausted side before pulling the other, so a room that
    // does not fit stays in the caller's iterator.
    let slots = buf[records_start..]
        .chunks_exact_mut(ROOM_RECORD_LEN)
        .take(MAX_LIST_RECORDS);
    for (slot, room) in slots.zip(rooms) {
        room.emit(slot);
        count += 1;
    }
    let payload = emit_header(buf, PacketType::ListRoomsAck, 1 + count * ROOM_RECORD_LEN);
    // At most 52.
    payload[field::LIST_COUNT] = count as u8;
    records_start + count * ROOM_RECORD_LEN
}

/// CREATE_ROOM_ACK's status byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreateStatus {
    /// 0x00: created; the id follows.
    Created,
    /// 0x01: refused (upstream: the room limit); the id is 0.
    Refused,
    /// Any other byte.
    Unknown(u8),
}

/// JOIN_ROOM_ACK's status byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JoinStatus {
    /// 0x00: joined; the connection holds a slot.
    Joined,
    /// 0x01: every slot is held.
    Full,
    /// 0x02: no room with that id.
    NotFound,
    /// 0x03: the room's game has started.
    InGame,
    /// Any other byte.
    Unknown(u8),
}

/// CONNECT_ACK's status byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectStatus {
    /// 0x00: accepted; hash and number are the player's.
    Accepted,
    /// 0x01: the party is full (upstream's single-room server; hash and number are 0).
    Full,
    /// Any other byte.
    Unknown(u8),
}

macro_rules! status_bytes {
    ($ty:ident { $($variant:ident = $byte:literal),* }) => {
        impl From<u8> for $ty {
            fn from(value: u8) -> Self {
                match value {
                    $($byte => $ty::$variant,)*
                    other => $ty::Unknown(other),
                }
            }
        }

        impl From<$ty> for u8 {
            fn from(value: $ty) -> Self {
                match value {
                    $($ty::$variant => $byte,)*
                    $ty::Unknown(other) => other,
                }
            }
        }
    };
}

status_bytes!(CreateStatus { Created = 0x00, Refused = 0x01 });
status_bytes!(JoinStatus { Joined = 0x00, Full = 0x01, NotFound = 0x02, InGame = 0x03 });
status_bytes!(ConnectStatus { Accepted = 0x00, Full = 0x01 });

/// A message from server to client. Diagrams show the payload, after the 5-byte header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ServerRepr<'a> {
    /// LIST_ROOMS_ACK (0x02): see [`RoomList`].
    ListRoomsAck(RoomList<'a>),
    /// CREATE_ROOM_ACK (0x04), payload 5 bytes. The creator is not in the room yet: its
    /// client sends JOIN_ROOM_REQ on this reply.
    ///
    /// ```text
    /// +--------+----------------+
    /// | status | room id u32 LE |
    /// +--------+----------------+
    /// ```
    CreateRoomAck {
        /// Created or refused.
        status: CreateStatus,
        /// The new room (0 when refused).
        room_id: u32,
    },
    /// JOIN_ROOM_ACK (0x06), payload 1 byte: the status.
    JoinRoomAck {
        /// Joined, or why not.
        status: JoinStatus,
    },
    /// ROOM_UPDATE (0x07), payload one 39-byte [`RoomRecord`], to connections not in a room.
    RoomUpdate(RoomRecord),
    /// CONNECT_ACK (0x11), payload 10 bytes: 15 in all with the header.
    ///
    /// ```text
    /// +--------+-------------+--------+
    /// | status | hash u64 LE | number |
    /// +--------+-------------+--------+
    /// ```
    ConnectAck {
        /// Accepted or full.
        status: ConnectStatus,
        /// The player hash (the UDP HELLO token, the READY_REQ key).
        hash: u64,
        /// Slot number, 1 to the room size.
        number: u8,
    },
    /// PLAYER_JOIN (0x12), payload 41 bytes (no ready byte: a ready player is followed by a
    /// PLAYER_READY).
    ///
    /// ```text
    /// +--------+-------------+----------------------------+
    /// | number | hash u64 LE | name[32] UTF-8, NUL-padded |
    /// +--------+-------------+----------------------------+
    /// ```
    PlayerJoin {
        /// Slot number.
        number: u8,
        /// The player's hash.
        hash: u64,
        /// The name field, NUL-padded.
        name: &'a [u8; NAME_LEN],
    },
    /// PLAYER_READY (0x14), payload 1 byte: this player's ready state toggled.
    PlayerReady {
        /// Slot number.
        number: u8,
    },
    /// GAME_START (0x16), payload 6 bytes: `07 00 00 00 16 <seed> 3c 00`.
    ///
    /// ```text
    /// +-------------+------------------+
    /// | seed u32 LE | tick rate u16 LE |
    /// +-------------+------------------+
    /// ```
    GameStart {
        /// The game's random seed.
        seed: u32,
        /// Ticks per second, [`UPSTREAM_TICK_RATE`](super::UPSTREAM_TICK_RATE).
        tick_rate: u16,
    },
    /// PLAYER_LEFT (0x18), payload 1 byte: the slot number.
    PlayerLeft {
        /// Slot number.
        number: u8,
    },
    /// COUNTDOWN (0x19), payload 1 byte: whole seconds left, 5 to 1; 0 = cancelled.
    Countdown {
        /// Seconds left, or 0.
        seconds: u8,
    },
}

impl<'a> ServerRepr<'a> {
    /// Parses a server frame. Client-to-server types and ERROR_MSG (no payload defined) give
    /// [`Error::WrongDirection`].
    pub fn parse(frame: &Frame<&'a [u8]>) -> Result<ServerRepr<'a>, Error> {
        frame.check_len()?;
        let packet_type = frame.packet_type();
        let payload = frame.into_payload();
        let fixed = |expected| check_size(payload, expected);
        match packet_type {
            PacketType::ListRoomsAck => RoomList::parse(payload).map(ServerRepr::ListRoomsAck),
            PacketType::CreateRoomAck => {
                fixed(size::CREATE_ROOM_ACK)?;
                Ok(ServerRepr::CreateRoomAck {
                    status: CreateStatus::from(payload_byte(payload, field::STATUS)?),
                    room_id: payload_u32(payload, field::CREATE_ACK_ROOM_ID)?,
                })
            }
            PacketType::JoinRoomAck => {
                fixed(size::JOIN_ROOM_ACK)?;
                Ok(ServerRepr::JoinRoomAck {
                    status: JoinStatus::from(payload_byte(payload, field::STATUS)?),
                })
            }
            PacketType::RoomUpdate => RoomRecord::parse(payload).map(ServerRepr::RoomUpdate),
            PacketType::ConnectAck => {
                fixed(size::CONNECT_ACK)?;
                Ok(ServerRepr::ConnectAck {
                    status: ConnectStatus::from(payload_byte(payload, field::STATUS)?),
                    hash: payload_u64(payload, field::CONNECT_ACK_HASH)?,
                    number: payload_byte(payload, field::CONNECT_ACK_NUMBER)?,
                })
            }
            PacketType::PlayerJoin => {
                fixed(size::PLAYER_JOIN)?;
                Ok(ServerRepr::PlayerJoin {
                    number: payload_byte(payload, field::NUMBER)?,
                    hash: payload_u64(payload, field::PLAYER_JOIN_HASH)?,
                    name: payload_array(payload, field::PLAYER_JOIN_NAME)?,
                })
            }
            PacketType::PlayerReady => {
                fixed(size::PLAYER_READY)?;
                Ok(ServerRepr::PlayerReady {
                    number: payload_byte(payload, field::NUMBER)?,
                })
            }
            PacketType::GameStart => {
                fixed(size::GAME_START)?;
                let tick_rate = payload_array(payload, field::GAME_START_TICK_RATE)?;
                Ok(ServerRepr::GameStart {
                    seed: payload_u32(payload, field::GAME_START_SEED)?,
                    tick_rate: u16::from_le_bytes(*tick_rate),
                })
            }
            PacketType::PlayerLeft => {
                fixed(size::PLAYER_LEFT)?;
                Ok(ServerRepr::PlayerLeft {
                    number: payload_byte(payload, field::NUMBER)?,
                })
            }
            PacketType::Countdown => {
                fixed(size::COUNTDOWN)?;
                Ok(ServerRepr::Countdown {
                    seconds: payload_byte(payload, field::COUNTDOWN_SECONDS)?,
                })
            }
            PacketType::Unknown(_) => Err(Error::UnknownType),
            _ => Err(Error::WrongDirection),
        }
    }

    /// The packet type of this message.
    pub const fn packet_type(&self) -> PacketType {
        match self {
            ServerRepr::ListRoomsAck(_) => PacketType::ListRoomsAck,
            ServerRepr::CreateRoomAck { .. } => PacketType::CreateRoomAck,
            ServerRepr::JoinRoomAck { .. } => PacketType::JoinRoomAck,
            ServerRepr::RoomUpdate(_) => PacketType::RoomUpdate,
            ServerRepr::ConnectAck { .. } => PacketType::ConnectAck,
            ServerRepr::PlayerJoin { .. } => PacketType::PlayerJoin,
            ServerRepr::PlayerReady { .. } => PacketType::PlayerReady,
            ServerRepr::GameStart { .. } => PacketType::GameStart,
            ServerRepr::PlayerLeft { .. } => PacketType::PlayerLeft,
            ServerRepr::Countdown { .. } => PacketType::Countdown,
        }
    }

    fn payload_len(&self) -> usize {
        match self {
            ServerRepr::ListRoomsAck(list) => list.payload_len(),
            ServerRepr::CreateRoomAck { .. } => size::CREATE_ROOM_ACK,
            ServerRepr::JoinRoomAck { .. } => size::JOIN_ROOM_ACK,
            ServerRepr::RoomUpdate(_) => size::ROOM_UPDATE,
            ServerRepr::ConnectAck { .. } => size::CONNECT_ACK,
            ServerRepr::PlayerJoin { .. } => size::PLAYER_JOIN,
            ServerRepr::PlayerReady { .. } => size::PLAYER_READY,
            ServerRepr::GameStart { .. } => size::GAME_START,
            ServerRepr::PlayerLeft { .. } => size::PLAYER_LEFT,
            ServerRepr::Countdown { .. } => size::COUNTDOWN,
        }
    }

    /// Length of the whole frame, header included (at most `4 + MAX_LEN`).
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
            ServerRepr::ListRoomsAck(ref list) => list.emit(payload),
            ServerRepr::CreateRoomAck { status, room_id } => {
                payload[field::STATUS] = u8::from(status);
                payload[field::CREATE_ACK_ROOM_ID].copy_from_slice(&room_id.to_le_bytes());
            }
            ServerRepr::JoinRoomAck { status } => payload[field::STATUS] = u8::from(status),
            ServerRepr::RoomUpdate(ref record) => record.emit(payload),
            ServerRepr::ConnectAck {
                status,
                hash,
                number,
            } => {
                payload[field::STATUS] = u8::from(status);
                payload[field::CONNECT_ACK_HASH].copy_from_slice(&hash.to_le_bytes());
                payload[field::CONNECT_ACK_NUMBER] = number;
            }
            ServerRepr::PlayerJoin { number, hash, name } => {
                payload[field::NUMBER] = number;
                payload[field::PLAYER_JOIN_HASH].copy_from_slice(&hash.to_le_bytes());
                payload[field::PLAYER_JOIN_NAME].copy_from_slice(name);
            }
            ServerRepr::PlayerReady { number } | ServerRepr::PlayerLeft { number } => {
                payload[field::NUMBER] = number;
            }
            ServerRepr::GameStart { seed, tick_rate } => {
                payload[field::GAME_START_SEED].copy_from_slice(&seed.to_le_bytes());
                payload[field::GAME_START_TICK_RATE].copy_from_slice(&tick_rate.to_le_bytes());
            }
            ServerRepr::Countdown { seconds } => payload[field::COUNTDOWN_SECONDS] = seconds,
        }
        HEADER_LEN + payload_len
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::{next_frame_max, ClientRepr, Next, MAX_LEN};
    use super::*;
    use quickcheck::quickcheck;

    #[test]
    fn construct() {
        let records = golden_records();
        check_construct(&server_goldens(&alice_name(), &records));
    }

    #[test]
    fn parse() {
        let records = golden_records();
        check_parse::<ServerRepr, ClientRepr>(&server_goldens(&alice_name(), &records));
    }

    #[test]
    fn emit() {
        let records = golden_records();
        check_emit(&server_goldens(&alice_name(), &records));
    }

    #[test]
    fn deconstruct() {
        let list = list_ack_bytes(2);
        let Ok(ServerRepr::ListRoomsAck(parsed)) = ServerRepr::parse(&checked(&list)) else {
            panic!("LIST_ROOMS_ACK must parse");
        };
        assert_eq!(parsed.len(), 2);
        assert!(!parsed.is_empty());
        assert!(parsed.records().eq(golden_records()));
        let Ok(ServerRepr::ConnectAck {
            status,
            hash,
            number,
        }) = ServerRepr::parse(&checked(&CONNECT_ACK_BYTES))
        else {
            panic!("CONNECT_ACK golden must parse");
        };
        assert_eq!(
            (status, hash, number),
            (ConnectStatus::Accepted, ALICE_HASH, 1)
        );
        assert_eq!(
            ServerRepr::parse(&checked(&GAME_START_BYTES)),
            Ok(ServerRepr::GameStart {
                seed: GOLDEN_SEED,
                tick_rate: 60
            })
        );
    }

    #[test]
    fn status_bytes() {
        for byte in 0..=u8::MAX {
            assert_eq!(u8::from(CreateStatus::from(byte)), byte);
            assert_eq!(u8::from(JoinStatus::from(byte)), byte);
            assert_eq!(u8::from(ConnectStatus::from(byte)), byte);
            assert_eq!(
                matches!(JoinStatus::from(byte), JoinStatus::Unknown(_)),
                byte > 3
            );
            assert_eq!(
                matches!(CreateStatus::from(byte), CreateStatus::Unknown(_)),
                byte > 1
            );
        }
    }

    #[test]
    fn every_error_variant() {
        assert_eq!(
            ServerRepr::parse(&Frame::new_unchecked(&[2, 0, 0, 0, 0x14][..])),
            Err(Error::Truncated)
        );
        assert_eq!(
            ServerRepr::parse(&Frame::new_unchecked(&[0, 0, 0, 0][..])),
            Err(Error::Empty)
        );
        assert_eq!(
            ServerRepr::parse(&checked(&[1, 0, 0, 0, 0x42])),
            Err(Error::UnknownType)
        );
        assert_eq!(
            ServerRepr::parse(&checked(&LIST_ROOMS_REQ_BYTES)),
            Err(Error::WrongDirection)
        );
        assert_eq!(
            ServerRepr::parse(&checked(&[1, 0, 0, 0, 0x1F])),
            Err(Error::WrongDirection)
        );
        check_bad_payload_sizes(
            &[
                (0x04, 5),
                (0x06, 1),
                (0x07, 39),
                (0x11, 10),
                (0x12, 41),
                (0x14, 1),
                (0x16, 6),
                (0x18, 1),
                (0x19, 1),
            ],
            |f| ServerRepr::parse(f).map(|_| ()),
        );
        // LIST_ROOMS_ACK: count disagrees with length; no count at all.
        let mut list = list_ack_bytes(2);
        list[5] = 3;
        assert_eq!(
            ServerRepr::parse(&checked(&list)),
            Err(Error::BadPayloadSize)
        );
        assert_eq!(
            ServerRepr::parse(&checked(&[1, 0, 0, 0, 0x02])),
            Err(Error::BadPayloadSize)
        );
        // BadValue: an in-game flag other than 0/1, in a list and in an update.
        let mut list = list_ack_bytes(1);
        list[6 + 38] = 2;
        assert_eq!(ServerRepr::parse(&checked(&list)), Err(Error::BadValue));
        let mut update = room_update_bytes();
        update[5 + 38] = 7;
        assert_eq!(ServerRepr::parse(&checked(&update)), Err(Error::BadValue));
    }

    #[test]
    fn list_within_the_client_frame() {
        let many = vec![golden_records()[0]; MAX_LIST_RECORDS + 1];
        assert!(RoomList::new(&many).is_none());
        let list = RoomList::new(&many[..MAX_LIST_RECORDS]).expect("52 fit");
        let repr = ServerRepr::ListRoomsAck(list);
        assert_eq!(repr.buffer_len(), 2034);
        let bytes = emit_server(&repr);
        assert_eq!(&bytes[..6], &[0xEE, 0x07, 0, 0, 0x02, 52]);
        let Next::Frame { frame, .. } = next_frame_max(&bytes, MAX_LEN) else {
            panic!("the largest list fits the client's frame");
        };
        assert_eq!(ServerRepr::parse(&frame), Ok(repr));
        // The streaming emitter writes the same bytes, and stops at 52.
        let mut buf = vec![0xa5; 4096];
        let mut rooms = many.iter().copied();
        let len = emit_room_list(&mut buf, &mut rooms);
        assert_eq!(&buf[..len], &bytes[..]);
        assert_eq!(rooms.count(), 1, "the 53rd room is left in the iterator");
        // And within a short buffer, as many as fit.
        let mut short = [0xa5u8; 6 + 2 * 39 + 10];
        let len = emit_room_list(&mut short, many.iter().copied());
        assert_eq!(len, 6 + 2 * 39);
        assert_eq!(&short[..6], &[80, 0, 0, 0, 0x02, 2]);
        // An empty list.
        let mut empty = [0xa5u8; 6];
        assert_eq!(emit_room_list(&mut empty, []), 6);
        assert_eq!(empty, [2, 0, 0, 0, 0x02, 0]);
    }

    quickcheck! {
        fn server_round_trip(msg: ServerMsg) -> bool {
            let repr = msg.repr();
            let bytes = emit_server(&repr);
            let Next::Frame { frame, consumed } = next_frame_max(&bytes, MAX_LEN) else {
                return false;
            };
            consumed == bytes.len() && ServerRepr::parse(&frame) == Ok(repr)
        }

        fn streamed_list_matches_repr(records: Vec<RecordGen>) -> bool {
            let records: Vec<RoomRecord> =
                records.into_iter().take(MAX_LIST_RECORDS).map(|r| r.0).collect();
            let repr = ServerRepr::ListRoomsAck(RoomList::new(&records).expect("capped"));
            let mut buf = vec![0xa5; 2034];
            let len = emit_room_list(&mut buf, records.iter().copied());
            buf[..len] == emit_server(&repr)[..]
        }
    }
}
