//! Test fixtures shared by the tests of every file of the TCP lobby wire module: one golden
//! frame per message, straight from the RFC's section 5 diagrams and examples, the
//! representations they decode to, the construct/parse/emit checks both directions run over
//! their own goldens, and quickcheck generators of arbitrary messages.
//!
//! Compiled for tests only; nothing here is part of the wire format.

use core::fmt;
use core::net::Ipv4Addr;

use quickcheck::{Arbitrary, Gen};

use super::{
    name_field, next_frame_max, ClientRepr, Error, ErrorCode, Frame, GameStart, Next, PlayerInfo,
    ServerRepr, Slot, HEADER_LEN, MAX_CLIENT_PAYLOAD, MAX_ERROR_TEXT, MAX_SERVER_PAYLOAD,
};

// ---- Golden vectors: one per message, from the RFC diagrams (section 5). ----

/// RFC 5.2 example verbatim: `10 20 00 41 6C 69 63 65 00 ...`, "Alice" NUL-padded to 32.
pub(super) static CONNECT_REQ_BYTES: [u8; 35] = [
    0x10, 0x20, 0x00, // CONNECT_REQ, payload 32
    0x41, 0x6C, 0x69, 0x63, 0x65, 0x00, 0x00, 0x00, // "Alice"
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
];

pub(super) const ALICE_HASH: u64 = 0x0123_4567_89AB_CDEF;
pub(super) const BOB_HASH: u64 = 0xFEDC_BA98_7654_3210;

/// RFC 5.3: hash 0x0123456789ABCDEF little-endian, player number 2.
pub(super) static CONNECT_ACK_BYTES: [u8; 12] = [
    0x11, 0x09, 0x00, // CONNECT_ACK, payload 9
    0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01, // hash LE
    0x02, // number
];

/// RFC 5.4: number 2, hash 0xFEDCBA9876543210 LE, "Bob" NUL-padded, ready.
pub(super) static PLAYER_JOIN_BYTES: [u8; 45] = [
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
pub(super) static READY_REQ_BYTES: [u8; 4] = [0x13, 0x01, 0x00, 0x01];

/// RFC 5.6: player 2 is now ready.
pub(super) static PLAYER_READY_BYTES: [u8; 5] = [0x14, 0x02, 0x00, 0x02, 0x01];

/// RFC 5.7: empty payload.
pub(super) static START_REQ_BYTES: [u8; 3] = [0x15, 0x00, 0x00];

/// RFC 5.8: "192.168.1.10" port 5000, Alice (1) at (100, 200), Bob (2) at (100, 300).
pub(super) static GAME_START_BYTES: [u8; 120] = [
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
pub(super) static DISCONNECT_BYTES: [u8; 3] = [0x17, 0x00, 0x00];

/// RFC 5.10: player 3 left.
pub(super) static PLAYER_LEFT_BYTES: [u8; 4] = [0x18, 0x01, 0x00, 0x03];

/// RFC 5.11: 5.0 seconds = 0x40A00000 little-endian.
pub(super) static COUNTDOWN_BYTES: [u8; 7] = [0x19, 0x04, 0x00, 0x00, 0x00, 0xA0, 0x40];

/// RFC 5.12: code 0x01 "Lobby full", NUL-terminated.
pub(super) static ERROR_MSG_BYTES: [u8; 15] = [
    0x1F, 0x0C, 0x00, // ERROR_MSG, payload 12
    0x01, // lobby full
    0x4C, 0x6F, 0x62, 0x62, 0x79, 0x20, 0x66, 0x75, 0x6C, 0x6C, // "Lobby full"
    0x00, // NUL
];

pub(super) fn alice() -> PlayerInfo {
    PlayerInfo {
        number: 1,
        hash: ALICE_HASH,
        name: name_field("Alice"),
    }
}

pub(super) fn bob() -> PlayerInfo {
    PlayerInfo {
        number: 2,
        hash: BOB_HASH,
        name: name_field("Bob"),
    }
}

pub(super) fn golden_slots() -> [Slot; 2] {
    [(alice(), (100.0, 200.0)), (bob(), (100.0, 300.0))]
}

pub(super) fn checked(bytes: &[u8]) -> Frame<&[u8]> {
    Frame::new_checked(bytes).expect("golden frame is complete")
}

pub(super) fn client_goldens(alice_name: &[u8; 32]) -> [(&'static [u8], ClientRepr<'_>); 4] {
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

pub(super) fn server_goldens<'a>(
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

// ---- Checks each direction runs over its own goldens ----

/// What the shared checks need of one direction's representation.
pub(super) trait Message<'a>: Copy + fmt::Debug + PartialEq {
    /// The payload cap of the frame reader for this direction.
    const MAX_PAYLOAD: usize;
    /// The direction's `parse`.
    fn parse(frame: &Frame<&'a [u8]>) -> Result<Self, Error>;
    /// The direction's `buffer_len`.
    fn buffer_len(&self) -> usize;
    /// The direction's `emit`.
    fn emit(&self, buf: &mut [u8]) -> usize;
}

impl<'a> Message<'a> for ClientRepr<'a> {
    const MAX_PAYLOAD: usize = MAX_CLIENT_PAYLOAD;
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
    const MAX_PAYLOAD: usize = MAX_SERVER_PAYLOAD;
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
/// golden frame (so a forgotten field shows), returns its length, agrees with `buffer_len`,
/// and leaves every byte after the frame alone.
pub(super) fn check_construct<'a, M: Message<'a>>(goldens: &[(&[u8], M)]) {
    for (golden, repr) in goldens {
        let mut buf = vec![0xa5u8; golden.len() + 16];
        assert_eq!(repr.buffer_len(), golden.len(), "{repr:?}");
        assert_eq!(repr.emit(&mut buf), golden.len());
        assert_eq!(&buf[..golden.len()], *golden, "{repr:?}");
        assert!(buf[golden.len()..].iter().all(|&b| b == 0xa5), "{repr:?}");
    }
}

/// Each golden frame parses to its representation with `M`, and `Other`, the parser of the
/// opposite direction, refuses it as [`Error::WrongDirection`].
pub(super) fn check_parse<'a, M: Message<'a>, Other: Message<'a>>(goldens: &[(&'a [u8], M)]) {
    for (golden, repr) in goldens {
        assert_eq!(M::parse(&checked(golden)), Ok(*repr));
        assert_eq!(
            Other::parse(&checked(golden)).map(|_| ()),
            Err(Error::WrongDirection)
        );
    }
}

/// Emitting then reading back with this direction's frame reader gives the same frame.
pub(super) fn check_emit<'a, M: Message<'a>>(goldens: &[(&[u8], M)]) {
    for (golden, repr) in goldens {
        let mut buf = vec![0u8; repr.buffer_len()];
        let len = repr.emit(&mut buf);
        match next_frame_max(&buf, M::MAX_PAYLOAD) {
            Next::Frame { frame, consumed } => {
                assert_eq!(consumed, len);
                assert_eq!(frame.into_inner(), *golden);
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
            let mut bytes = vec![ty, size as u8, 0];
            bytes.resize(HEADER_LEN + size, 0);
            assert_eq!(
                parse(&checked(&bytes)),
                Err(Error::BadPayloadSize),
                "type {ty:#x} size {size}"
            );
        }
    }
}

// ---- quickcheck ----

pub(super) fn finite_f32(g: &mut Gen) -> f32 {
    let value = f32::from_bits(u32::arbitrary(g));
    if value.is_finite() {
        value
    } else {
        -1.5
    }
}

pub(super) fn name_bytes(g: &mut Gen) -> [u8; 32] {
    let mut name = [0u8; 32];
    for byte in &mut name {
        *byte = u8::arbitrary(g);
    }
    name
}

#[derive(Clone, Debug)]
pub(super) enum ClientMsg {
    ConnectReq([u8; 32]),
    ReadyReq(bool),
    StartReq,
    Disconnect,
}

impl ClientMsg {
    pub(super) fn repr(&self) -> ClientRepr<'_> {
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
pub(super) enum ServerMsg {
    ConnectAck(u64, u8),
    PlayerJoin(u8, u64, [u8; 32], bool),
    PlayerReady(u8, bool),
    GameStart(Ipv4Addr, u16, Vec<Slot>),
    PlayerLeft(u8),
    Countdown(f32),
    Error(ErrorCode, String),
}

impl ServerMsg {
    pub(super) fn repr(&self) -> ServerRepr<'_> {
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
                ServerMsg::GameStart(Ipv4Addr::from(u32::arbitrary(g)), u16::arbitrary(g), slots)
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
