//! Tests of [`crate::general::server`]: golden bytes per message, every parse error,
//! and quickcheck round trips of every message.

use super::{assert_constructs, assert_deconstructs, checked, emitted, hex};
use crate::general::params::Words;
use crate::general::server::{GameInfo, ServerRepr};
use crate::general::{
    code, next_frame, Error, ErrorCode, Frame, Next, DEFAULT_MAX_FRAME, HEADER_LEN,
    MAX_PING_PAYLOAD, TOKEN_LEN,
};
use quickcheck::{quickcheck, Arbitrary, Gen};

const TOKEN: [u8; TOKEN_LEN] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

fn game_info() -> GameInfo<'static> {
    GameInfo {
        id: 1,
        owner: 2,
        max_players: 4,
        name: "Friday",
        game_type: "chess",
        version: "1.0",
        flags: 5,
        players: Words::new(&[2, 3]),
        player_flags: Words::new(&[1, 0]),
    }
}

/// One golden frame per server message, written field by field
/// (docs/protocols/general-lobby.md shows the same bytes).
fn goldens() -> Vec<(Vec<u8>, ServerRepr<'static>)> {
    vec![
        (
            hex("01000000 10000000  03 0600 6c6f62627964  02 0400 01000000"),
            ServerRepr::Hello {
                server_name: "lobbyd",
                version: 1,
            },
        ),
        (
            hex("02000000 11000000  03 0700 7369676e20696e  02 0400 00000000"),
            ServerRepr::Challenge {
                text: "sign in",
                failed: false,
            },
        ),
        (
            hex("04000000 1a000000  01 0400 01000000  04 1000 000102030405060708090a0b0c0d0e0f"),
            ServerRepr::Welcome {
                member: 1,
                token: &TOKEN,
            },
        ),
        (
            hex("05000000 15000000  02 0400 06000000  02 0400 33000000  03 0400 66756c6c"),
            ServerRepr::Error {
                code: ErrorCode::Full,
                request: code::JOIN_REQUEST,
                text: "full",
            },
        ),
        (hex("06000000 00000000"), ServerRepr::SyncDone),
        (
            hex(
                "10000000 1b000000  01 0400 01000000  02 0400 00000100  03 0500 616c696365
                 03 0200 416c",
            ),
            ServerRepr::MemberInfo {
                id: 1,
                flags: 0x1_0000,
                username: "alice",
                display_name: "Al",
            },
        ),
        (
            hex("11000000 07000000  01 0400 01000000"),
            ServerRepr::MemberLeft { id: 1 },
        ),
        (
            hex("21000000 13000000  01 0400 00000000  01 0400 01000000  03 0200 6869"),
            ServerRepr::ChatFrom {
                game: 0,
                member: 1,
                text: "hi",
            },
        ),
        (
            hex("23000000 0c000000  01 0400 01000000  03 0200 796f"),
            ServerRepr::PrivateFrom {
                from: 1,
                text: "yo",
            },
        ),
        (
            hex(
                "31000000 49000000  01 0400 01000000  01 0400 02000000  02 0400 04000000
                 03 0600 467269646179  03 0500 6368657373  03 0300 312e30  02 0400 05000000
                 04 0800 02000000 03000000  04 0800 01000000 00000000",
            ),
            ServerRepr::GameInfo(game_info()),
        ),
        (
            hex("32000000 07000000  01 0400 01000000"),
            ServerRepr::GameClosed { id: 1 },
        ),
        (
            hex("34000000 15000000  01 0400 01000000  01 0400 03000000  01 0400 05000000"),
            ServerRepr::JoinAsk {
                game: 1,
                member: 3,
                ask: 5,
            },
        ),
        (
            hex(
                "36000000 1c000000  01 0400 01000000  01 0400 07000000  02 0400 00000000
                 03 0400 66756c6c",
            ),
            ServerRepr::JoinResponse {
                game: 1,
                request: 7,
                accepted: false,
                reason: "full",
            },
        ),
        (
            hex("3b000000 0e000000  01 0400 01000000  02 0400 05000000"),
            ServerRepr::GameStarted { game: 1, flags: 5 },
        ),
        (
            hex("3d000000 0d000000  01 0400 01000000  03 0300 61666b"),
            ServerRepr::Kicked {
                game: 1,
                reason: "afk",
            },
        ),
        (
            hex("42000000 12000000  01 0400 01000000  03 0300 6d6170  04 0200 0102"),
            ServerRepr::DataValue {
                game: 1,
                key: "map",
                value: &[1, 2],
            },
        ),
        (
            hex(
                "46000000 19000000  01 0400 01000000  01 0400 02000000  02 0400 09000000
                 04 0100 aa",
            ),
            ServerRepr::GameMessage {
                game: 1,
                from: 2,
                app_code: 9,
                body: &[0xaa],
            },
        ),
        (
            hex("51000000 07000000  02 0400 02000000"),
            ServerRepr::GameListEnd { count: 2 },
        ),
        (
            hex("61000000 07000000  04 0400 01020304"),
            ServerRepr::Pong {
                payload: &[1, 2, 3, 4],
            },
        ),
    ]
}

#[test]
fn every_code_has_a_golden() {
    let codes: Vec<u32> = goldens().iter().map(|(_, repr)| repr.code()).collect();
    assert_eq!(codes, code::SERVER);
}

#[test]
fn deconstruct() {
    for (golden, repr) in goldens() {
        assert_deconstructs(&golden, repr.code(), ServerRepr::parse, repr);
    }
    let (golden, _) = &goldens()[9];
    let Ok(ServerRepr::GameInfo(info)) = ServerRepr::parse(&checked(golden)) else {
        panic!("GAME_INFO golden parses");
    };
    assert_eq!((info.id, info.owner, info.max_players), (1, 2, 4));
    assert_eq!(
        (info.name, info.game_type, info.version),
        ("Friday", "chess", "1.0")
    );
    assert_eq!(info.players.iter().collect::<Vec<_>>(), [2, 3]);
    assert_eq!(info.player_flags.iter().collect::<Vec<_>>(), [1, 0]);
}

#[test]
fn construct() {
    for (golden, repr) in goldens() {
        assert_constructs(&golden, &repr, repr.buffer_len(), |buf| repr.emit(buf));
    }
}

#[test]
fn every_error() {
    let parse = |text: &str| ServerRepr::parse(&checked(&hex(text))).map(|_| ());
    assert_eq!(
        ServerRepr::parse(&Frame::new_unchecked(&hex("06000000 01000000")[..])),
        Err(Error::Truncated)
    );
    assert_eq!(parse("07000000 00000000"), Err(Error::UnknownCode));
    assert_eq!(
        parse("60000000 03000000 04 0000"),
        Err(Error::WrongDirection)
    );
    assert_eq!(parse("11000000 00000000"), Err(Error::MissingParam));
    assert_eq!(parse("06000000 03000000 04 0000"), Err(Error::ExtraParam));
    assert_eq!(
        parse("11000000 07000000 02 0400 01000000"),
        Err(Error::WrongKind)
    );
    // A WELCOME token of 15 bytes.
    assert_eq!(
        parse("04000000 19000000 01 0400 01000000 04 0f00 000102030405060708090a0b0c0d0e"),
        Err(Error::BadSize)
    );
    // GAME_INFO: a player list of 5 bytes, and two players with one flag.
    let game_info = |players: &str, flags: &str| {
        let mut bytes = hex("31000000 00000000  01 0400 01000000  01 0400 02000000
            02 0400 04000000  03 0000  03 0000  03 0000  02 0400 00000000");
        bytes.extend_from_slice(&hex(players));
        bytes.extend_from_slice(&hex(flags));
        let len = (bytes.len() - HEADER_LEN) as u32;
        bytes[4..8].copy_from_slice(&len.to_le_bytes());
        ServerRepr::parse(&checked(&bytes)).map(|_| ())
    };
    assert_eq!(
        game_info("04 0500 0200000003", "04 0000"),
        Err(Error::BadSize)
    );
    assert_eq!(
        game_info("04 0800 02000000 03000000", "04 0400 01000000"),
        Err(Error::BadValue)
    );
    assert!(game_info("04 0400 02000000", "04 0400 01000000").is_ok());
    assert_eq!(
        parse("02000000 0a000000 03 0000 02 0400 02000000"),
        Err(Error::BadValue)
    );
    assert_eq!(
        parse("05000000 12000000 02 0400 01000000 02 0400 03000000 03 0100 ff"),
        Err(Error::NotUtf8)
    );
    let mut pong = hex("61000000 44000000 04 4100");
    pong.extend_from_slice(&[0; 65]);
    assert_eq!(ServerRepr::parse(&checked(&pong)), Err(Error::BadSize));
}

#[test]
fn unknown_error_codes_pass_through() {
    let bytes = hex("05000000 11000000 02 0400 63000000 02 0400 00000000 03 0000");
    assert_eq!(
        ServerRepr::parse(&checked(&bytes)),
        Ok(ServerRepr::Error {
            code: ErrorCode::Other(99),
            request: 0,
            text: ""
        })
    );
}

// ---- quickcheck: one arm per message ----

/// An owned server message, so quickcheck can generate and shrink it.
#[derive(Clone, Debug)]
struct Msg {
    pick: u8,
    ints: [i32; 3],
    words: [u32; 2],
    texts: [String; 4],
    bytes: Vec<u8>,
    flag: bool,
    token: [u8; TOKEN_LEN],
    players: Vec<(i32, u32)>,
}

impl Arbitrary for Msg {
    fn arbitrary(g: &mut Gen) -> Self {
        let mut token = [0u8; TOKEN_LEN];
        token.iter_mut().for_each(|b| *b = u8::arbitrary(g));
        let mut bytes = Vec::<u8>::arbitrary(g);
        bytes.truncate(MAX_PING_PAYLOAD);
        Msg {
            pick: u8::arbitrary(g) % code::SERVER.len() as u8,
            ints: [i32::arbitrary(g), i32::arbitrary(g), i32::arbitrary(g)],
            words: [u32::arbitrary(g), u32::arbitrary(g)],
            texts: [(); 4].map(|()| String::arbitrary(g)),
            bytes,
            flag: bool::arbitrary(g),
            token,
            players: Vec::arbitrary(g),
        }
    }
}

/// The borrowed lists a GAME_INFO emits from.
struct Lists(Vec<i32>, Vec<u32>);

impl Msg {
    fn lists(&self) -> Lists {
        Lists(
            self.players.iter().map(|p| p.0).collect(),
            self.players.iter().map(|p| p.1).collect(),
        )
    }

    fn repr<'a>(&'a self, lists: &'a Lists) -> ServerRepr<'a> {
        let [i0, i1, i2] = self.ints;
        let [u0, u1] = self.words;
        let [s0, s1, s2, s3] = &self.texts;
        let b = &self.bytes[..];
        match code::SERVER[usize::from(self.pick)] {
            code::HELLO => ServerRepr::Hello {
                server_name: s0,
                version: u0,
            },
            code::CHALLENGE => ServerRepr::Challenge {
                text: s0,
                failed: self.flag,
            },
            code::WELCOME => ServerRepr::Welcome {
                member: i0,
                token: &self.token,
            },
            code::ERROR => ServerRepr::Error {
                code: ErrorCode::from(u0),
                request: u1,
                text: s0,
            },
            code::SYNC_DONE => ServerRepr::SyncDone,
            code::MEMBER_INFO => ServerRepr::MemberInfo {
                id: i0,
                flags: u0,
                username: s0,
                display_name: s1,
            },
            code::MEMBER_LEFT => ServerRepr::MemberLeft { id: i0 },
            code::CHAT_FROM => ServerRepr::ChatFrom {
                game: i0,
                member: i1,
                text: s0,
            },
            code::PRIVATE_FROM => ServerRepr::PrivateFrom { from: i0, text: s0 },
            code::GAME_INFO => ServerRepr::GameInfo(GameInfo {
                id: i0,
                owner: i1,
                max_players: u0,
                name: s0,
                game_type: s1,
                version: s2,
                flags: u1,
                players: Words::new(&lists.0),
                player_flags: Words::new(&lists.1),
            }),
            code::GAME_CLOSED => ServerRepr::GameClosed { id: i0 },
            code::JOIN_ASK => ServerRepr::JoinAsk {
                game: i0,
                member: i1,
                ask: i2,
            },
            code::JOIN_RESPONSE => ServerRepr::JoinResponse {
                game: i0,
                request: i1,
                accepted: self.flag,
                reason: s3,
            },
            code::GAME_STARTED => ServerRepr::GameStarted {
                game: i0,
                flags: u0,
            },
            code::KICKED => ServerRepr::Kicked {
                game: i0,
                reason: s0,
            },
            code::DATA_VALUE => ServerRepr::DataValue {
                game: i0,
                key: s0,
                value: b,
            },
            code::GAME_MESSAGE => ServerRepr::GameMessage {
                game: i0,
                from: i1,
                app_code: u0,
                body: b,
            },
            code::GAME_LIST_END => ServerRepr::GameListEnd { count: u0 },
            _ => ServerRepr::Pong { payload: b },
        }
    }
}

fn emit(repr: &ServerRepr<'_>) -> Vec<u8> {
    emitted(repr.buffer_len(), |buf| repr.emit(buf))
}

#[test]
fn round_trip_reaches_every_message() {
    let mut g = Gen::new(8);
    let msg = Msg::arbitrary(&mut g);
    let lists = msg.lists();
    let codes: Vec<u32> = (0..code::SERVER.len() as u8)
        .map(|pick| {
            Msg {
                pick,
                ..msg.clone()
            }
            .repr(&lists)
            .code()
        })
        .collect();
    assert_eq!(codes, code::SERVER);
}

quickcheck! {
    fn round_trip(msg: Msg) -> bool {
        let lists = msg.lists();
        let repr = msg.repr(&lists);
        let bytes = emit(&repr);
        match next_frame(&bytes, bytes.len().max(DEFAULT_MAX_FRAME)) {
            Next::Frame { frame, consumed } => {
                consumed == bytes.len() && ServerRepr::parse(&frame) == Ok(repr)
            }
            _ => false,
        }
    }
}
