//! Test fixtures shared by the tests of every file of the upstream TCP dialect module: one
//! golden frame per message (the bytes captured from the real upstream programs, where the
//! research has them, else written from the message table), the representations they decode
//! to, the construct/parse/emit checks both directions run, and quickcheck generators.
//!
//! Compiled for tests only; nothing here is part of the wire format.

use core::fmt;

use quickcheck::{Arbitrary, Gen};

use super::{
    next_frame_max, ClientRepr, ConnectStatus, CreateStatus, Error, Frame, JoinStatus, Next,
    RoomList, RoomRecord, ServerRepr, MAX_CLIENT_LEN, MAX_LEN, NAME_LEN,
};

// ---- Golden vectors. Captured: LIST_ROOMS_REQ, CREATE_ROOM_REQ, JOIN_ROOM_REQ, CONNECT_REQ,
// CONNECT_ACK, PLAYER_JOIN, READY_REQ, PLAYER_READY, COUNTDOWN, START_REQ, GAME_START (with
// our hash and seed in the captured layout). ----

pub(super) const ALICE_HASH: u64 = 0x0123_4567_89AB_CDEF;
pub(super) const GOLDEN_SEED: u32 = 0xDEAD_BEEF;

/// The real client's first frame: `01 00 00 00 01`.
pub(super) static LIST_ROOMS_REQ_BYTES: [u8; 5] = [0x01, 0x00, 0x00, 0x00, 0x01];

/// `21 00 00 00 03 'p' 'r' 'o' 'b' 'e' 00 ...` (37 bytes).
pub(super) static CREATE_ROOM_REQ_BYTES: [u8; 37] = [
    0x21, 0x00, 0x00, 0x00, 0x03, // length 33, CREATE_ROOM_REQ
    b'p', b'r', b'o', b'b', b'e', 0x00, 0x00, 0x00, // "probe"
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
];

/// `05 00 00 00 05 01 00 00 00`: join room 1.
pub(super) static JOIN_ROOM_REQ_BYTES: [u8; 9] =
    [0x05, 0x00, 0x00, 0x00, 0x05, 0x01, 0x00, 0x00, 0x00];

/// `21 00 00 00 10 'A' 'l' 'i' 'c' 'e' 00 ...` (37 bytes).
pub(super) static CONNECT_REQ_BYTES: [u8; 37] = [
    0x21, 0x00, 0x00, 0x00, 0x10, // length 33, CONNECT_REQ
    b'A', b'l', b'i', b'c', b'e', 0x00, 0x00, 0x00, // "Alice"
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
];

/// `0b 00 00 00 11 00 <hash 8> 01` (15 bytes): accepted, player 1.
pub(super) static CONNECT_ACK_BYTES: [u8; 15] = [
    0x0B, 0x00, 0x00, 0x00, 0x11, // length 11, CONNECT_ACK
    0x00, // status: accepted
    0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01, // hash LE
    0x01, // number
];

/// `2a 00 00 00 12 01 <hash 8> <name 32>` (46 bytes): player 1, Alice.
pub(super) static PLAYER_JOIN_BYTES: [u8; 46] = [
    0x2A, 0x00, 0x00, 0x00, 0x12, // length 42, PLAYER_JOIN
    0x01, // number
    0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01, // hash LE
    b'A', b'l', b'i', b'c', b'e', 0x00, 0x00, 0x00, // "Alice"
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
];

/// `09 00 00 00 13 <hash 8>`: toggle Alice's ready state.
pub(super) static READY_REQ_BYTES: [u8; 13] = [
    0x09, 0x00, 0x00, 0x00, 0x13, // length 9, READY_REQ
    0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01, // hash LE
];

/// `02 00 00 00 14 01`: player 1 toggled.
pub(super) static PLAYER_READY_BYTES: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x14, 0x01];

/// `02 00 00 00 19 05`: five seconds.
pub(super) static COUNTDOWN_BYTES: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x19, 0x05];

/// `02 00 00 00 19 00`: the countdown is cancelled.
pub(super) static COUNTDOWN_CANCELLED_BYTES: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x19, 0x00];

/// `01 00 00 00 15`.
pub(super) static START_REQ_BYTES: [u8; 5] = [0x01, 0x00, 0x00, 0x00, 0x15];

/// `07 00 00 00 16 <seed 4> 3c 00`: seed 0xDEADBEEF, 60 ticks per second.
pub(super) static GAME_START_BYTES: [u8; 11] = [
    0x07, 0x00, 0x00, 0x00, 0x16, // length 7, GAME_START
    0xEF, 0xBE, 0xAD, 0xDE, // seed LE
    0x3C, 0x00, // tick rate 60
];

/// `09 00 00 00 17 <hash 8>`: Alice leaves.
pub(super) static DISCONNECT_BYTES: [u8; 13] = [
    0x09, 0x00, 0x00, 0x00, 0x17, // length 9, DISCONNECT
    0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01, // hash LE
];

/// `02 00 00 00 18 02`: player 2 left.
pub(super) static PLAYER_LEFT_BYTES: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x18, 0x02];

/// `06 00 00 00 04 00 01 00 00 00`: room 1 created.
pub(super) static CREATE_ROOM_ACK_BYTES: [u8; 10] =
    [0x06, 0x00, 0x00, 0x00, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00];

/// `02 00 00 00 06 03`: the room's game has started.
pub(super) static JOIN_ROOM_ACK_BYTES: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x06, 0x03];

/// The 39-byte record of room 1, "probe", 1 of 4, not in game.
pub(super) static PROBE_RECORD_BYTES: [u8; 39] = [
    0x01, 0x00, 0x00, 0x00, // id 1
    b'p', b'r', b'o', b'b', b'e', 0x00, 0x00, 0x00, // "probe"
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x01, 0x04, 0x00, // players 1, max 4, not in game
];

/// The record of room 0x0102, "Zoë", 4 of 4, in game.
pub(super) static FULL_RECORD_BYTES: [u8; 39] = [
    0x02, 0x01, 0x00, 0x00, // id 0x0102
    b'Z', b'o', 0xC3, 0xAB, 0x00, 0x00, 0x00, 0x00, // "Zoë"
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x04, 0x04, 0x01, // players 4, max 4, in game
];

fn name_of(text: &[u8]) -> [u8; NAME_LEN] {
    let mut field = [0u8; NAME_LEN];
    field[..text.len()].copy_from_slice(text);
    field
}

pub(super) fn room_name() -> [u8; NAME_LEN] {
    name_of(b"probe")
}

pub(super) fn alice_name() -> [u8; NAME_LEN] {
    name_of(b"Alice")
}

pub(super) fn golden_records() -> [RoomRecord; 2] {
    [
        RoomRecord {
            id: 1,
            name: room_name(),
            players: 1,
            max_players: 4,
            in_game: false,
        },
        RoomRecord {
            id: 0x0102,
            name: name_of("Zoë".as_bytes()),
            players: 4,
            max_players: 4,
            in_game: true,
        },
    ]
}

/// ROOM_UPDATE of the probe room: `28 00 00 00 07 <record 39>`.
pub(super) fn room_update_bytes() -> Vec<u8> {
    let mut bytes = vec![0x28, 0x00, 0x00, 0x00, 0x07];
    bytes.extend_from_slice(&PROBE_RECORD_BYTES);
    bytes
}

/// LIST_ROOMS_ACK of the first `count` (0 to 2) golden records.
pub(super) fn list_ack_bytes(count: usize) -> Vec<u8> {
    let length = 2 + count * 39;
    let mut bytes = (length as u32).to_le_bytes().to_vec();
    bytes.extend_from_slice(&[0x02, count as u8]);
    for record in [&PROBE_RECORD_BYTES, &FULL_RECORD_BYTES]
        .into_iter()
        .take(count)
    {
        bytes.extend_from_slice(record);
    }
    bytes
}

pub(super) fn checked(bytes: &[u8]) -> Frame<&[u8]> {
    Frame::new_checked(bytes).expect("golden frame is complete")
}

pub(super) fn client_goldens<'a>(
    room: &'a [u8; NAME_LEN],
    alice: &'a [u8; NAME_LEN],
) -> Vec<(&'static [u8], ClientRepr<'a>)> {
    vec![
        (&LIST_ROOMS_REQ_BYTES, ClientRepr::ListRoomsReq),
        (
            &CREATE_ROOM_REQ_BYTES,
            ClientRepr::CreateRoomReq { name: room },
        ),
        (&JOIN_ROOM_REQ_BYTES, ClientRepr::JoinRoomReq { room_id: 1 }),
        (&CONNECT_REQ_BYTES, ClientRepr::ConnectReq { name: alice }),
        (&READY_REQ_BYTES, ClientRepr::ReadyReq { hash: ALICE_HASH }),
        (&START_REQ_BYTES, ClientRepr::StartReq),
        (
            &DISCONNECT_BYTES,
            ClientRepr::Disconnect { hash: ALICE_HASH },
        ),
    ]
}

pub(super) fn server_goldens<'a>(
    alice: &'a [u8; NAME_LEN],
    records: &'a [RoomRecord],
) -> Vec<(Vec<u8>, ServerRepr<'a>)> {
    let list = RoomList::new(records).expect("two records fit");
    vec![
        (
            list_ack_bytes(records.len()),
            ServerRepr::ListRoomsAck(list),
        ),
        (
            CREATE_ROOM_ACK_BYTES.to_vec(),
            ServerRepr::CreateRoomAck {
                status: CreateStatus::Created,
                room_id: 1,
            },
        ),
        (
            JOIN_ROOM_ACK_BYTES.to_vec(),
            ServerRepr::JoinRoomAck {
                status: JoinStatus::InGame,
            },
        ),
        (room_update_bytes(), ServerRepr::RoomUpdate(records[0])),
        (
            CONNECT_ACK_BYTES.to_vec(),
            ServerRepr::ConnectAck {
                status: ConnectStatus::Accepted,
                hash: ALICE_HASH,
                number: 1,
            },
        ),
        (
            PLAYER_JOIN_BYTES.to_vec(),
            ServerRepr::PlayerJoin {
                number: 1,
                hash: ALICE_HASH,
                name: alice,
            },
        ),
        (
            PLAYER_READY_BYTES.to_vec(),
            ServerRepr::PlayerReady { number: 1 },
        ),
        (
            GAME_START_BYTES.to_vec(),
            ServerRepr::GameStart {
                seed: GOLDEN_SEED,
                tick_rate: 60,
            },
        ),
        (
            PLAYER_LEFT_BYTES.to_vec(),
            ServerRepr::PlayerLeft { number: 2 },
        ),
        (
            COUNTDOWN_BYTES.to_vec(),
            ServerRepr::Countdown { seconds: 5 },
        ),
        (
            COUNTDOWN_CANCELLED_BYTES.to_vec(),
            ServerRepr::Countdown { seconds: 0 },
        ),
    ]
}

// ---- Checks each direction runs over its own goldens ----

/// What the shared checks need of one direction's representation.
pub(super) trait Message<'a>: Copy + fmt::Debug + PartialEq {
    /// The length cap of the frame reader for this direction.
    const MAX_LEN: usize;
    /// The direction's `parse`.
    fn parse(frame: &Frame<&'a [u8]>) -> Result<Self, Error>;
    /// The direction's `buffer_len`.
    fn buffer_len(&self) -> usize;
    /// The direction's `emit`.
    fn emit(&self, buf: &mut [u8]) -> usize;
}

impl<'a> Message<'a> for ClientRepr<'a> {
    const MAX_LEN: usize = MAX_CLIENT_LEN;
    fn parse(frame: &Frame<&'a [u8]>) -> Result<Self, Error> {
        ClientRepr::parse(frame)
    }
    fn buffer_len(&self) -> usize {
        ClientRepr::buffer_len(self)
    }
    fn emit(&self, buf: &mut [u8]) -> usize {
        ClientRepr::emit(self, buf)
    }
}

impl<'a> Message<'a> for ServerRepr<'a> {
    const MAX_LEN: usize = MAX_LEN;
    fn parse(frame: &Frame<&'a [u8]>) -> Result<Self, Error> {
        ServerRepr::parse(frame)
    }
    fn buffer_len(&self) -> usize {
        ServerRepr::buffer_len(self)
    }
    fn emit(&self, buf: &mut [u8]) -> usize {
        ServerRepr::emit(self, buf)
    }
}

/// smoltcp's `construct`: emitting into a buffer pre-filled with `0xa5` writes exactly the
/// golden frame, agrees with `buffer_len`, and leaves every byte after the frame alone.
pub(super) fn check_construct<'a, M: Message<'a>>(goldens: &[(impl AsRef<[u8]>, M)]) {
    for (golden, repr) in goldens {
        let golden = golden.as_ref();
        let mut buf = vec![0xa5u8; golden.len() + 16];
        assert_eq!(repr.buffer_len(), golden.len(), "{repr:?}");
        assert_eq!(repr.emit(&mut buf), golden.len());
        assert_eq!(&buf[..golden.len()], golden, "{repr:?}");
        assert!(buf[golden.len()..].iter().all(|&b| b == 0xa5), "{repr:?}");
    }
}

/// Each golden frame parses to its representation with `M`; `Other`, the parser of the
/// opposite direction, refuses it as [`Error::WrongDirection`].
pub(super) fn check_parse<'a, M: Message<'a>, Other: Message<'a>>(
    goldens: &'a [(impl AsRef<[u8]>, M)],
) {
    for (golden, repr) in goldens {
        let golden = golden.as_ref();
        assert_eq!(M::parse(&checked(golden)), Ok(*repr));
        assert_eq!(
            Other::parse(&checked(golden)).map(|_| ()),
            Err(Error::WrongDirection)
        );
    }
}

/// Emitting then reading back with this direction's frame reader gives the golden frame.
pub(super) fn check_emit<'a, M: Message<'a>>(goldens: &[(impl AsRef<[u8]>, M)]) {
    for (golden, repr) in goldens {
        let mut buf = vec![0u8; repr.buffer_len()];
        let len = repr.emit(&mut buf);
        match next_frame_max(&buf, M::MAX_LEN) {
            Next::Frame { frame, consumed } => {
                assert_eq!(consumed, len);
                assert_eq!(frame.into_inner(), golden.as_ref());
            }
            other => panic!("{other:?}"),
        }
    }
}

/// Every `(type, payload size)` of `fixed`, sent with one byte too many and, where there is
/// one, one byte too few, is [`Error::BadPayloadSize`] to `parse`.
pub(super) fn check_bad_payload_sizes(
    fixed: &[(u8, usize)],
    parse: impl Fn(&Frame<&[u8]>) -> Result<(), Error>,
) {
    for &(ty, len) in fixed {
        let mut sizes = vec![len + 1];
        if len > 0 {
            sizes.push(len - 1);
        }
        for size in sizes {
            let mut bytes = ((size + 1) as u32).to_le_bytes().to_vec();
            bytes.push(ty);
            bytes.resize(5 + size, 0);
            assert_eq!(
                parse(&checked(&bytes)),
                Err(Error::BadPayloadSize),
                "type {ty:#x} size {size}"
            );
        }
    }
}

// ---- quickcheck ----

pub(super) fn name_bytes(g: &mut Gen) -> [u8; NAME_LEN] {
    let mut name = [0u8; NAME_LEN];
    for byte in &mut name {
        *byte = u8::arbitrary(g);
    }
    name
}

/// An arbitrary room record.
#[derive(Clone, Debug)]
pub(super) struct RecordGen(pub(super) RoomRecord);

impl Arbitrary for RecordGen {
    fn arbitrary(g: &mut Gen) -> Self {
        RecordGen(RoomRecord {
            id: u32::arbitrary(g),
            name: name_bytes(g),
            players: u8::arbitrary(g),
            max_players: u8::arbitrary(g),
            in_game: bool::arbitrary(g),
        })
    }
}

#[derive(Clone, Debug)]
pub(super) enum ClientMsg {
    ListRoomsReq,
    CreateRoomReq([u8; NAME_LEN]),
    JoinRoomReq(u32),
    ConnectReq([u8; NAME_LEN]),
    ReadyReq(u64),
    StartReq,
    Disconnect(u64),
}

impl ClientMsg {
    pub(super) fn repr(&self) -> ClientRepr<'_> {
        match self {
            ClientMsg::ListRoomsReq => ClientRepr::ListRoomsReq,
            ClientMsg::CreateRoomReq(name) => ClientRepr::CreateRoomReq { name },
            ClientMsg::JoinRoomReq(room_id) => ClientRepr::JoinRoomReq { room_id: *room_id },
            ClientMsg::ConnectReq(name) => ClientRepr::ConnectReq { name },
            ClientMsg::ReadyReq(hash) => ClientRepr::ReadyReq { hash: *hash },
            ClientMsg::StartReq => ClientRepr::StartReq,
            ClientMsg::Disconnect(hash) => ClientRepr::Disconnect { hash: *hash },
        }
    }
}

impl Arbitrary for ClientMsg {
    fn arbitrary(g: &mut Gen) -> Self {
        match u8::arbitrary(g) % 7 {
            0 => ClientMsg::ListRoomsReq,
            1 => ClientMsg::CreateRoomReq(name_bytes(g)),
            2 => ClientMsg::JoinRoomReq(u32::arbitrary(g)),
            3 => ClientMsg::ConnectReq(name_bytes(g)),
            4 => ClientMsg::ReadyReq(u64::arbitrary(g)),
            5 => ClientMsg::StartReq,
            _ => ClientMsg::Disconnect(u64::arbitrary(g)),
        }
    }
}

#[derive(Clone, Debug)]
pub(super) enum ServerMsg {
    ListRoomsAck(Vec<RoomRecord>),
    CreateRoomAck(u8, u32),
    JoinRoomAck(u8),
    RoomUpdate(RoomRecord),
    ConnectAck(u8, u64, u8),
    PlayerJoin(u8, u64, [u8; NAME_LEN]),
    PlayerReady(u8),
    GameStart(u32, u16),
    PlayerLeft(u8),
    Countdown(u8),
}

impl ServerMsg {
    pub(super) fn repr(&self) -> ServerRepr<'_> {
        match self {
            ServerMsg::ListRoomsAck(records) => {
                ServerRepr::ListRoomsAck(RoomList::new(records).expect("generator caps at 52"))
            }
            ServerMsg::CreateRoomAck(status, room_id) => ServerRepr::CreateRoomAck {
                status: CreateStatus::from(*status),
                room_id: *room_id,
            },
            ServerMsg::JoinRoomAck(status) => ServerRepr::JoinRoomAck {
                status: JoinStatus::from(*status),
            },
            ServerMsg::RoomUpdate(record) => ServerRepr::RoomUpdate(*record),
            ServerMsg::ConnectAck(status, hash, number) => ServerRepr::ConnectAck {
                status: ConnectStatus::from(*status),
                hash: *hash,
                number: *number,
            },
            ServerMsg::PlayerJoin(number, hash, name) => ServerRepr::PlayerJoin {
                number: *number,
                hash: *hash,
                name,
            },
            ServerMsg::PlayerReady(number) => ServerRepr::PlayerReady { number: *number },
            ServerMsg::GameStart(seed, tick_rate) => ServerRepr::GameStart {
                seed: *seed,
                tick_rate: *tick_rate,
            },
            ServerMsg::PlayerLeft(number) => ServerRepr::PlayerLeft { number: *number },
            ServerMsg::Countdown(seconds) => ServerRepr::Countdown { seconds: *seconds },
        }
    }
}

impl Arbitrary for ServerMsg {
    fn arbitrary(g: &mut Gen) -> Self {
        match u8::arbitrary(g) % 10 {
            0 => {
                let count = usize::arbitrary(g) % 8;
                ServerMsg::ListRoomsAck((0..count).map(|_| RecordGen::arbitrary(g).0).collect())
            }
            1 => ServerMsg::CreateRoomAck(u8::arbitrary(g), u32::arbitrary(g)),
            2 => ServerMsg::JoinRoomAck(u8::arbitrary(g)),
            3 => ServerMsg::RoomUpdate(RecordGen::arbitrary(g).0),
            4 => ServerMsg::ConnectAck(u8::arbitrary(g), u64::arbitrary(g), u8::arbitrary(g)),
            5 => ServerMsg::PlayerJoin(u8::arbitrary(g), u64::arbitrary(g), name_bytes(g)),
            6 => ServerMsg::PlayerReady(u8::arbitrary(g)),
            7 => ServerMsg::GameStart(u32::arbitrary(g), u16::arbitrary(g)),
            8 => ServerMsg::PlayerLeft(u8::arbitrary(g)),
            _ => ServerMsg::Countdown(u8::arbitrary(g)),
        }
    }
}

pub(super) fn emit_client(repr: &ClientRepr<'_>) -> Vec<u8> {
    let mut buf = vec![0xa5; repr.buffer_len()];
    assert_eq!(repr.emit(&mut buf), buf.len());
    buf
}

pub(super) fn emit_server(repr: &ServerRepr<'_>) -> Vec<u8> {
    let mut buf = vec![0xa5; repr.buffer_len()];
    assert_eq!(repr.emit(&mut buf), buf.len());
    buf
}
