//! Golden vectors, round trips and totality of the upstream lobby messages and ROOM_LIST
//! records. The LIST_ROOMS datagram is the one captured from the upstream client; the others
//! are laid out by hand from the research tables of the upstream code (header fields
//! big-endian, then the payload), their CRC-32 computed independently with
//! `python3 -c "import zlib; print(hex(zlib.crc32(bytes.fromhex('<header+payload>'))))"`.

use super::lobby::*;
use super::records::*;
use super::{Error, MIN_LEN};
use quickcheck::{quickcheck, Arbitrary, Gen, TestResult};

const LIST_ROOMS: [u8; 21] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x42, 0x2f, 0x7b, 0x06,
];
/// LIST_ROOMS, sequence 0x1234.
const LIST_ROOMS_1234: [u8; 21] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x01, 0x40, 0x12, 0x34, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x12, 0xa9, 0xbb, 0x0d,
];
/// v3 CREATE_ROOM, sequence 1: public, name "Alpha", password "pw12".
const CREATE_ROOM_V3: [u8; 35] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x01, 0x42, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0e, 0x00,
    0x0e, 0x00, 0x00, 0x05, 0x41, 0x6c, 0x70, 0x68, 0x61, 0x00, 0x04, 0x70, 0x77, 0x31, 0x32, 0x6c,
    0xde, 0x7d, 0x6b,
];
/// v1 CREATE_ROOM, sequence 2: empty payload.
const CREATE_ROOM_V1: [u8; 21] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x01, 0x42, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x34, 0xb5, 0xea, 0x41,
];
/// v1 JOIN_ROOM, sequence 3: room 7.
const JOIN_ROOM_V1: [u8; 25] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x01, 0x44, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x07, 0x7e, 0x58, 0x01, 0x7d,
];
/// v3 JOIN_ROOM, sequence 4: room 7, password "pw12", not a spectator.
const JOIN_ROOM_V3: [u8; 32] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x01, 0x44, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x00,
    0x0b, 0x00, 0x00, 0x00, 0x07, 0x00, 0x04, 0x70, 0x77, 0x31, 0x32, 0x00, 0xc1, 0x3a, 0x82, 0xab,
];
/// ClientDisconnect (0x07), as the upstream client sends it when it closes.
const DISCONNECT: [u8; 21] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x01, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0xbd, 0x5c, 0x77, 0x6a,
];
/// ROOM_CREATED, sequence 1: room 7 on port 50107.
const ROOM_CREATED: [u8; 27] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x02, 0x43, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0x00,
    0x06, 0x00, 0x00, 0x00, 0x07, 0xc3, 0xbb, 0xcb, 0xd0, 0x9c, 0x14,
];
/// JOIN_SUCCESS, sequence 4: room 7 on port 50107.
const JOIN_SUCCESS: [u8; 27] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x02, 0x45, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0x00,
    0x06, 0x00, 0x00, 0x00, 0x07, 0xc3, 0xbb, 0x5f, 0x63, 0x95, 0x97,
];
/// JOIN_FAILED, sequence 3.
const JOIN_FAILED: [u8; 21] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x02, 0x46, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0xe4, 0x89, 0x5f, 0x70,
];
/// RoomSetConfig, sequence 1: room 7, upstream's default (mode 1, 100/100/100 %, 3 lives).
const ROOM_SET_CONFIG: [u8; 33] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x02, 0x71, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x00,
    0x0c, 0x00, 0x00, 0x00, 0x07, 0x01, 0x00, 0x64, 0x00, 0x64, 0x00, 0x64, 0x03, 0x90, 0xc4, 0x20,
    0x1b,
];
/// v1 ROOM_LIST, sequence 5: [`ROOM_A`] and [`ROOM_B`].
const ROOM_LIST_V1: [u8; 45] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x02, 0x41, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x18, 0x00,
    0x18, 0x00, 0x02, 0x00, 0x00, 0x00, 0x07, 0x00, 0x01, 0x00, 0x04, 0xc3, 0xbb, 0x00, 0x00, 0x00,
    0x00, 0x09, 0x00, 0x04, 0x00, 0x04, 0xc3, 0xbd, 0x01, 0x63, 0x4b, 0x7b, 0x4e,
];
/// v3 ROOM_LIST, sequence 6: [`ROOM_A`] and [`ROOM_B`].
const ROOM_LIST_V3: [u8; 82] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x02, 0x41, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3d, 0x00,
    0x3d, 0x00, 0x02, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x01, 0x00, 0x04, 0xc3, 0xbb, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0x41, 0x6c, 0x70, 0x68, 0x61, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x09, 0x00, 0x00, 0x04, 0x00, 0x04, 0xc3, 0xbd, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x08, 0x4e, 0x65, 0x77, 0x20, 0x52, 0x6f, 0x6f, 0x6d, 0x00, 0x00, 0x12, 0x2b,
    0x86, 0xda,
];
/// An empty ROOM_LIST, sequence 0 (either layout).
const ROOM_LIST_EMPTY: [u8; 23] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x02, 0x41, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00,
    0x02, 0x00, 0x00, 0x08, 0xe7, 0x24, 0xb2,
];

/// Room 7: one of four players, waiting, password protected, named "Alpha".
const ROOM_A: ListedRoom<'static> = ListedRoom {
    room_id: 7,
    room_type: 0,
    player_count: 1,
    max_players: 4,
    port: 50107,
    state: 0,
    owner_id: 0,
    password_protected: 1,
    visibility: 0,
    countdown: 0,
    name: b"Alpha",
    invite_code: b"",
};
/// Room 9: full, counting down, "New Room".
const ROOM_B: ListedRoom<'static> = ListedRoom {
    room_id: 9,
    room_type: 0,
    player_count: 4,
    max_players: 4,
    port: 50109,
    state: 1,
    owner_id: 0,
    password_protected: 0,
    visibility: 0,
    countdown: 0,
    name: b"New Room",
    invite_code: b"",
};

/// The v1 view of a room: what a v1 record keeps.
fn v1_view(room: ListedRoom<'_>) -> ListedRoom<'static> {
    ListedRoom {
        room_id: room.room_id,
        player_count: room.player_count,
        max_players: room.max_players,
        port: room.port,
        state: room.state,
        ..ListedRoom::default()
    }
}

/// `header + payload` framed with its CRC-32, for error cases.
fn framed(packet_type: u8, code: u8, payload: &[u8]) -> Vec<u8> {
    let mut bytes = vec![
        0xa3,
        0x5f,
        0xc8,
        0x1d,
        0x01,
        packet_type,
        code,
        0,
        0,
        0,
        0,
        0,
        0,
    ];
    let size = payload.len() as u16;
    bytes.extend_from_slice(&size.to_be_bytes());
    bytes.extend_from_slice(&size.to_be_bytes());
    bytes.extend_from_slice(payload);
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_be_bytes());
    bytes
}

/// Emits into a buffer pre-filled with 0xa5, so a field left unwritten shows.
fn construct_with(emit: impl FnOnce(&mut [u8]) -> usize, golden: &[u8]) {
    let mut buf = [0xa5u8; 256];
    let len = emit(&mut buf);
    assert_eq!(&buf[..len], golden);
    assert!(buf[len..].iter().all(|&b| b == 0xa5), "wrote past the end");
}

fn request(seq: u16, request: Request<'_>) -> RequestRepr<'_> {
    RequestRepr { seq, request }
}

#[test]
fn deconstruct_requests() {
    assert_eq!(
        RequestRepr::parse(&LIST_ROOMS),
        Ok(request(0, Request::ListRooms))
    );
    assert_eq!(
        RequestRepr::parse(&LIST_ROOMS_1234),
        Ok(request(0x1234, Request::ListRooms))
    );
    assert_eq!(
        RequestRepr::parse(&CREATE_ROOM_V3),
        Ok(request(
            1,
            Request::CreateRoom(Some(CreateRoom {
                visibility: 0,
                name: b"Alpha",
                password: b"pw12",
            }))
        ))
    );
    assert_eq!(
        RequestRepr::parse(&CREATE_ROOM_V1),
        Ok(request(2, Request::CreateRoom(None)))
    );
    assert_eq!(
        RequestRepr::parse(&JOIN_ROOM_V1),
        Ok(request(
            3,
            Request::JoinRoom {
                room_id: 7,
                credentials: None
            }
        ))
    );
    assert_eq!(
        RequestRepr::parse(&JOIN_ROOM_V3),
        Ok(request(
            4,
            Request::JoinRoom {
                room_id: 7,
                credentials: Some(JoinCredentials {
                    password: b"pw12",
                    spectator: Some(0),
                }),
            }
        ))
    );
    assert_eq!(
        RequestRepr::parse(&DISCONNECT),
        Ok(request(0, Request::Other(0x07)))
    );
}

#[test]
fn deconstruct_replies() {
    let layout = RecordLayout::V3;
    assert_eq!(
        ReplyRepr::parse(&ROOM_CREATED, layout).map(|r| (r.seq, r.reply)),
        Ok((
            1,
            Reply::RoomCreated {
                room_id: 7,
                port: 50107
            }
        ))
    );
    assert_eq!(
        ReplyRepr::parse(&JOIN_SUCCESS, layout).map(|r| (r.seq, r.reply)),
        Ok((
            4,
            Reply::JoinSuccess {
                room_id: 7,
                port: 50107
            }
        ))
    );
    assert_eq!(
        ReplyRepr::parse(&JOIN_FAILED, layout).map(|r| (r.seq, r.reply)),
        Ok((3, Reply::JoinFailed))
    );
    assert_eq!(
        ReplyRepr::parse(&ROOM_SET_CONFIG, layout).map(|r| (r.seq, r.reply)),
        Ok((1, Reply::RoomConfig(RoomConfig::upstream_default(7))))
    );
    let Ok(ReplyRepr {
        seq: 6,
        reply: Reply::RoomList(list),
    }) = ReplyRepr::parse(&ROOM_LIST_V3, RecordLayout::V3)
    else {
        panic!("v3 list");
    };
    assert_eq!(list.len(), 2);
    assert_eq!(list.iter().collect::<Vec<_>>(), vec![ROOM_A, ROOM_B]);
    let Ok(ReplyRepr {
        seq: 5,
        reply: Reply::RoomList(list),
    }) = ReplyRepr::parse(&ROOM_LIST_V1, RecordLayout::V1)
    else {
        panic!("v1 list");
    };
    assert_eq!(
        list.iter().collect::<Vec<_>>(),
        vec![v1_view(ROOM_A), v1_view(ROOM_B)]
    );
    for layout in [RecordLayout::V1, RecordLayout::V3] {
        let Ok(ReplyRepr {
            reply: Reply::RoomList(list),
            ..
        }) = ReplyRepr::parse(&ROOM_LIST_EMPTY, layout)
        else {
            panic!("empty list");
        };
        assert!(list.is_empty());
    }
    // A list read in the other layout does not parse.
    assert_eq!(
        ReplyRepr::parse(&ROOM_LIST_V1, RecordLayout::V3),
        Err(Error::BadPayloadSize)
    );
    assert_eq!(
        ReplyRepr::parse(&ROOM_LIST_V3, RecordLayout::V1),
        Err(Error::BadPayloadSize)
    );
}

#[test]
fn construct_requests() {
    construct_with(|b| request(0, Request::ListRooms).emit(b), &LIST_ROOMS);
    let create = CreateRoom {
        visibility: 0,
        name: b"Alpha",
        password: b"pw12",
    };
    construct_with(
        |b| request(1, Request::CreateRoom(Some(create))).emit(b),
        &CREATE_ROOM_V3,
    );
    construct_with(
        |b| request(2, Request::CreateRoom(None)).emit(b),
        &CREATE_ROOM_V1,
    );
    let join = |credentials| Request::JoinRoom {
        room_id: 7,
        credentials,
    };
    construct_with(|b| request(3, join(None)).emit(b), &JOIN_ROOM_V1);
    let v3 = JoinCredentials {
        password: b"pw12",
        spectator: Some(0),
    };
    construct_with(|b| request(4, join(Some(v3))).emit(b), &JOIN_ROOM_V3);
    construct_with(|b| request(0, Request::Other(0x07)).emit(b), &DISCONNECT);
}

#[test]
fn construct_replies() {
    let reply = |seq, reply| ReplyRepr { seq, reply };
    construct_with(
        |b| {
            reply(
                1,
                Reply::RoomCreated {
                    room_id: 7,
                    port: 50107,
                },
            )
            .emit(b)
        },
        &ROOM_CREATED,
    );
    construct_with(
        |b| {
            reply(
                4,
                Reply::JoinSuccess {
                    room_id: 7,
                    port: 50107,
                },
            )
            .emit(b)
        },
        &JOIN_SUCCESS,
    );
    construct_with(|b| reply(3, Reply::JoinFailed).emit(b), &JOIN_FAILED);
    construct_with(
        |b| reply(1, Reply::RoomConfig(RoomConfig::upstream_default(7))).emit(b),
        &ROOM_SET_CONFIG,
    );
    construct_with(
        |b| emit_room_list(b, 5, RecordLayout::V1, [ROOM_A, ROOM_B]),
        &ROOM_LIST_V1,
    );
    construct_with(
        |b| emit_room_list(b, 6, RecordLayout::V3, [ROOM_A, ROOM_B]),
        &ROOM_LIST_V3,
    );
    for layout in [RecordLayout::V1, RecordLayout::V3] {
        construct_with(|b| emit_room_list(b, 0, layout, []), &ROOM_LIST_EMPTY);
    }
    // A parsed list re-emits byte for byte.
    let parsed = ReplyRepr::parse(&ROOM_LIST_V3, RecordLayout::V3).unwrap();
    construct_with(|b| parsed.emit(b), &ROOM_LIST_V3);
}

#[test]
fn room_list_stays_within_the_clients_buffer() {
    assert_eq!(MAX_V1_RECORDS, 184);
    let rooms = std::iter::repeat(ROOM_B);
    let mut buf = vec![0u8; 65_536];
    let len = emit_room_list(&mut buf, 1, RecordLayout::V1, rooms.clone());
    assert_eq!(len, room_list_len(MAX_V1_RECORDS * V1_RECORD_LEN));
    assert!(len <= MAX_ROOM_LIST_LEN);
    let list = match ReplyRepr::parse(&buf[..len], RecordLayout::V1)
        .unwrap()
        .reply
    {
        Reply::RoomList(list) => list,
        other => panic!("{other:?}"),
    };
    assert_eq!(list.len(), 184);
    // v3 records of 31 bytes ("New Room"): (2048 - 23) / 31 = 65 of them.
    let len = emit_room_list(&mut buf, 1, RecordLayout::V3, rooms);
    assert_eq!(len, room_list_len(65 * 31));
    // A smaller buffer caps it earlier; a record that does not fit ends the list.
    let mut small = [0u8; 60];
    let written = write_room_records(&mut small, RecordLayout::V3, [ROOM_A, ROOM_B, ROOM_A]);
    assert_eq!(written, WrittenRecords { count: 1, len: 28 });
}

#[test]
fn room_list_reframes() {
    // Records written once and framed twice give what a fresh emit gives.
    let mut cached = [0u8; 256];
    let written = write_room_records(&mut cached, RecordLayout::V3, [ROOM_A, ROOM_B]);
    finish_room_list(&mut cached, 99, written);
    let len = finish_room_list(&mut cached, 6, written);
    assert_eq!(&cached[..len], &ROOM_LIST_V3);
}

#[test]
fn error_compressed_and_checksum() {
    let mut compressed = LIST_ROOMS;
    compressed[4] = 0x81;
    let crc = crc32fast::hash(&compressed[..17]);
    compressed[17..].copy_from_slice(&crc.to_be_bytes());
    assert_eq!(RequestRepr::parse(&compressed), Err(Error::Compressed));
    let mut bad = CREATE_ROOM_V3;
    bad[22] ^= 0x20;
    assert_eq!(RequestRepr::parse(&bad), Err(Error::BadChecksum));
}

#[test]
fn error_wrong_direction() {
    for code in [0x41, 0x43, 0x45, 0x46] {
        assert_eq!(
            RequestRepr::parse(&framed(0x01, code, &[])),
            Err(Error::WrongDirection)
        );
    }
    for code in [0x40, 0x42, 0x44] {
        assert_eq!(
            ReplyRepr::parse(&framed(0x02, code, &[]), RecordLayout::V3),
            Err(Error::WrongDirection)
        );
    }
    assert_eq!(
        ReplyRepr::parse(&LIST_ROOMS, RecordLayout::V3),
        Err(Error::BadPacketType)
    );
}

#[test]
fn error_bad_payload_size() {
    let bad_requests: [(u8, &[u8]); 9] = [
        (0x40, &[0]),
        // CREATE_ROOM: visibility alone, a name cut short, no password length, a stray byte.
        (0x42, &[0]),
        (0x42, &[0, 0, 5, b'A']),
        (0x42, &[0, 0, 1, b'A']),
        (0x42, &[0, 0, 0, 0, 0, 9]),
        // JOIN_ROOM: short id, half a password length, password cut short, two trailing.
        (0x44, &[0, 0, 7]),
        (0x44, &[0, 0, 0, 7, 0]),
        (0x44, &[0, 0, 0, 7, 0, 4, b'p']),
        (0x44, &[0, 0, 0, 7, 0, 0, 0, 0]),
    ];
    for (code, payload) in bad_requests {
        assert_eq!(
            RequestRepr::parse(&framed(0x01, code, payload)),
            Err(Error::BadPayloadSize),
            "{code:#x} {payload:?}"
        );
    }
    let bad_replies: [(u8, &[u8]); 6] = [
        (0x41, &[]),
        (0x41, &[0, 1]),
        (0x43, &[0, 0, 0, 7, 0xc3]),
        (0x46, &[0]),
        (0x71, &[0; 11]),
        (0x10, &[]),
    ];
    for (code, payload) in bad_replies {
        assert_eq!(
            ReplyRepr::parse(&framed(0x02, code, payload), RecordLayout::V3),
            Err(Error::BadPayloadSize),
            "{code:#x} {payload:?}"
        );
    }
    // A v1 list with a record too many bytes, a v3 record whose code runs past the end.
    let mut v1 = vec![0, 1];
    v1.extend_from_slice(&[0; V1_RECORD_LEN + 1]);
    assert_eq!(
        ReplyRepr::parse(&framed(0x02, 0x41, &v1), RecordLayout::V1),
        Err(Error::BadPayloadSize)
    );
    let mut v3 = vec![0, 1];
    v3.extend_from_slice(&[0; V3_RECORD_FIXED_LEN - 2]);
    v3.extend_from_slice(&[0, 3, b'x']);
    assert_eq!(
        ReplyRepr::parse(&framed(0x02, 0x41, &v3), RecordLayout::V3),
        Err(Error::BadPayloadSize)
    );
}

#[test]
fn other_codes_and_families() {
    // The codes a client may send that lobbyd does not serve parse, whatever their payload.
    for (code, family) in [
        (0x07, MessageFamily::Game),
        (0x47, MessageFamily::Lobby),
        (0x49, MessageFamily::Lobby),
        (0x50, MessageFamily::Auth),
        (0x5a, MessageFamily::Auth),
        (0x61, MessageFamily::Sync),
        (0x6b, MessageFamily::Room),
        (0x71, MessageFamily::Room),
        (0x72, MessageFamily::Room),
        (0x70, MessageFamily::Chat),
        (0x73, MessageFamily::Leaderboard),
        (0x4a, MessageFamily::Undefined),
        (0xff, MessageFamily::Undefined),
    ] {
        let bytes = framed(0x01, code, &[1, 2, 3]);
        assert_eq!(
            RequestRepr::parse(&bytes).map(|r| r.request),
            Ok(Request::Other(code))
        );
        assert_eq!(MessageFamily::of(code), family);
    }
    for (i, a) in MessageFamily::ALL.iter().enumerate() {
        for b in &MessageFamily::ALL[i + 1..] {
            assert_ne!(a.as_str(), b.as_str());
        }
    }
    for code in 0..=u8::MAX {
        assert_eq!(u8::from(MessageType::from(code)), code);
        assert!(MessageFamily::ALL.contains(&MessageFamily::of(code)));
    }
}

impl Arbitrary for RecordLayout {
    fn arbitrary(g: &mut Gen) -> Self {
        if bool::arbitrary(g) {
            RecordLayout::V1
        } else {
            RecordLayout::V3
        }
    }
}

/// An owned room, for generating lists whose records borrow.
#[derive(Debug, Clone)]
struct OwnedRoom {
    fixed: (u32, u8, u16, u16, u16, u8),
    more: (u32, u8, u8, u8),
    name: Vec<u8>,
    code: Vec<u8>,
}

impl Arbitrary for OwnedRoom {
    fn arbitrary(g: &mut Gen) -> Self {
        let short = |g: &mut Gen| {
            let mut v = Vec::<u8>::arbitrary(g);
            v.truncate(40);
            v
        };
        OwnedRoom {
            fixed: Arbitrary::arbitrary(g),
            more: Arbitrary::arbitrary(g),
            name: short(g),
            code: short(g),
        }
    }
}

impl OwnedRoom {
    fn view(&self) -> ListedRoom<'_> {
        let (f, m) = (self.fixed, self.more);
        ListedRoom {
            room_id: f.0,
            room_type: f.1,
            player_count: f.2,
            max_players: f.3,
            port: f.4,
            state: f.5,
            owner_id: m.0,
            password_protected: m.1,
            visibility: m.2,
            countdown: m.3,
            name: &self.name,
            invite_code: &self.code,
        }
    }
}

quickcheck! {
    fn request_round_trip(
        seq: u16, kind: u8, id: u32, strings: (Vec<u8>, Vec<u8>), spectator: Option<u8>, code: u8) -> TestResult {
        let (name, password) = strings;
        let visibility = code;
        let request = match kind % 7 {
            0 => Request::ListRooms,
            1 => Request::CreateRoom(None),
            2 => Request::CreateRoom(Some(CreateRoom { visibility, name: &name, password: &password })),
            3 => Request::JoinRoom { room_id: id, credentials: None },
            4 => Request::JoinRoom {
                room_id: id,
                credentials: Some(JoinCredentials { password: &password, spectator }),
            },
            _ => match MessageType::from(code) {
                MessageType::Other(_) | MessageType::RoomSetConfig => Request::Other(code),
                _ => return TestResult::discard(),
            },
        };
        let repr = RequestRepr { seq, request };
        let mut buf = vec![0xa5u8; repr.buffer_len()];
        let len = repr.emit(&mut buf);
        TestResult::from_bool(len == buf.len() && RequestRepr::parse(&buf) == Ok(repr))
    }

    fn reply_round_trip(seq: u16, kind: u8, id: u32, port: u16, config: (u8, u16, u16, u16, u8)) -> bool {
        let reply = match kind % 4 {
            0 => Reply::RoomCreated { room_id: id, port },
            1 => Reply::JoinSuccess { room_id: id, port },
            2 => Reply::JoinFailed,
            _ => Reply::RoomConfig(RoomConfig {
                room_id: id,
                mode: config.0,
                enemy_percent: config.1,
                player_speed_percent: config.2,
                score_percent: config.3,
                lives: config.4,
            }),
        };
        let repr = ReplyRepr { seq, reply };
        let mut buf = vec![0xa5u8; repr.buffer_len()];
        let len = repr.emit(&mut buf);
        len == buf.len() && ReplyRepr::parse(&buf, RecordLayout::V1) == Ok(repr)
    }

    fn room_list_round_trip(seq: u16, layout: RecordLayout, rooms: Vec<OwnedRoom>) -> bool {
        let mut buf = vec![0xa5u8; MAX_ROOM_LIST_LEN];
        let len = emit_room_list(&mut buf, seq, layout, rooms.iter().map(OwnedRoom::view));
        let Ok(ReplyRepr { seq: got_seq, reply: Reply::RoomList(list) }) =
            ReplyRepr::parse(&buf[..len], layout)
        else {
            return false;
        };
        let expected = rooms.iter().map(OwnedRoom::view).take(list.len()).map(|room| match layout {
            RecordLayout::V1 => v1_view(room),
            RecordLayout::V3 => room,
        });
        // Every room that fitted came back, in order; the next one would not have fitted.
        let used: usize = rooms.iter().take(list.len()).map(|r| r.view().record_len(layout)).sum();
        let next_fits = rooms
            .get(list.len())
            .is_some_and(|r| room_list_len(used + r.view().record_len(layout)) <= MAX_ROOM_LIST_LEN);
        got_seq == seq && list.iter().eq(expected) && len <= MAX_ROOM_LIST_LEN && !next_fits
    }

    fn arbitrary_bytes_never_panic(bytes: Vec<u8>, layout: RecordLayout) -> bool {
        let _ = RequestRepr::parse(&bytes);
        if let Ok(ReplyRepr { reply: Reply::RoomList(list), .. }) = ReplyRepr::parse(&bytes, layout) {
            return list.iter().count() == list.len();
        }
        true
    }

    // Random bytes almost never carry the magic and a valid CRC; this reaches what is
    // behind them.
    fn arbitrary_valid_frames_never_panic(
        client: bool, code: u8, payload: Vec<u8>, layout: RecordLayout
    ) -> bool {
        let code = if code & 1 == 0 { 0x40 | (code >> 1 & 0x07) } else { code };
        let bytes = framed(if client { 1 } else { 2 }, code, &payload);
        if let Ok(repr) = RequestRepr::parse(&bytes) {
            let mut again = vec![0u8; repr.buffer_len()];
            let len = repr.emit(&mut again);
            // Everything but `Other` re-emits byte for byte (its payload is not kept).
            if !matches!(repr.request, Request::Other(_)) && again[..len] != bytes[..] {
                return false;
            }
        }
        if let Ok(repr) = ReplyRepr::parse(&bytes, layout) {
            let mut again = vec![0u8; repr.buffer_len()];
            let len = repr.emit(&mut again);
            return again[..len] == bytes[..];
        }
        true
    }
}

#[test]
fn lengths() {
    assert_eq!(ROOM_PORT_LEN, ROOM_CREATED.len());
    assert_eq!(JOIN_FAILED_LEN, JOIN_FAILED.len());
    assert_eq!(ROOM_CONFIG_LEN, ROOM_SET_CONFIG.len());
    assert_eq!(MIN_LEN, LIST_ROOMS.len());
    assert_eq!(room_list_len(0), ROOM_LIST_EMPTY.len());
}
