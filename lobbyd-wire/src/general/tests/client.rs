//! Tests of [`crate::general::client`]: golden bytes per message, every parse error,
//! and quickcheck round trips of every message.

use super::{assert_constructs, assert_deconstructs, checked, emitted, hex};
use crate::general::client::ClientRepr;
use crate::general::{
    code, next_frame, Error, Frame, Next, DEFAULT_MAX_FRAME, MAX_PING_PAYLOAD, TOKEN_LEN,
};
use quickcheck::{quickcheck, Arbitrary, Gen};

const TOKEN: [u8; TOKEN_LEN] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// One golden frame per client message, written field by field (docs/protocols/general-lobby.md
/// shows the same bytes).
fn goldens() -> Vec<(Vec<u8>, ClientRepr<'static>)> {
    vec![
        (
            hex("03000000 10000000  03 0500 616c696365  03 0200 7077  04 0000"),
            ClientRepr::SignIn {
                username: "alice",
                password: "pw",
                resume: None,
            },
        ),
        (
            hex("03000000 20000000  03 0500 616c696365  03 0200 7077
                 04 1000 000102030405060708090a0b0c0d0e0f"),
            ClientRepr::SignIn {
                username: "alice",
                password: "pw",
                resume: Some(&TOKEN),
            },
        ),
        (
            hex("12000000 0c000000  02 0400 03000000  03 0200 416c"),
            ClientRepr::SetMember {
                flags: 3,
                display_name: "Al",
            },
        ),
        (
            hex("20000000 0c000000  01 0400 00000000  03 0200 6869"),
            ClientRepr::Chat {
                game: 0,
                text: "hi",
            },
        ),
        (
            hex("22000000 0c000000  01 0400 02000000  03 0200 796f"),
            ClientRepr::PrivateChat { to: 2, text: "yo" },
        ),
        (
            hex(
                "30000000 2a000000  02 0400 04000000  03 0500 6368657373  03 0300 312e30
                 02 0400 01000000  03 0600 467269646179  03 0200 7077",
            ),
            ClientRepr::CreateGame {
                max_players: 4,
                game_type: "chess",
                version: "1.0",
                flags: 1,
                name: "Friday",
                password: "pw",
            },
        ),
        (
            hex("33000000 13000000  01 0400 01000000  01 0400 07000000  03 0200 7077"),
            ClientRepr::JoinRequest {
                game: 1,
                request: 7,
                password: "pw",
            },
        ),
        (
            hex("35000000 13000000  01 0400 01000000  02 0400 01000000  03 0200 6f6b"),
            ClientRepr::JoinAnswer {
                ask: 1,
                accept: true,
                reason: "ok",
            },
        ),
        (
            hex("37000000 07000000  01 0400 01000000"),
            ClientRepr::LeaveGame { game: 1 },
        ),
        (
            hex("38000000 13000000  01 0400 01000000  02 0400 03000000  03 0200 7077"),
            ClientRepr::SetGame {
                game: 1,
                flags: 3,
                password: "pw",
            },
        ),
        (
            hex("39000000 0e000000  01 0400 01000000  02 0400 01000000"),
            ClientRepr::SetReady {
                game: 1,
                ready: true,
            },
        ),
        (
            hex("3a000000 07000000  01 0400 01000000"),
            ClientRepr::StartGame { game: 1 },
        ),
        (
            hex("3c000000 14000000  01 0400 01000000  01 0400 02000000  03 0300 61666b"),
            ClientRepr::Kick {
                game: 1,
                member: 2,
                reason: "afk",
            },
        ),
        (
            hex("3e000000 0e000000  01 0400 01000000  01 0400 02000000"),
            ClientRepr::GiveOwner { game: 1, member: 2 },
        ),
        (
            hex("40000000 12000000  01 0400 01000000  03 0300 6d6170  04 0200 0102"),
            ClientRepr::StoreData {
                game: 1,
                key: "map",
                value: &[1, 2],
            },
        ),
        (
            hex("41000000 0d000000  01 0400 01000000  03 0300 6d6170"),
            ClientRepr::FetchData {
                game: 1,
                key: "map",
            },
        ),
        (
            hex("43000000 12000000  01 0400 01000000  02 0400 09000000  04 0100 aa"),
            ClientRepr::ToOwner {
                game: 1,
                app_code: 9,
                body: &[0xaa],
            },
        ),
        (
            hex("44000000 12000000  01 0400 01000000  02 0400 09000000  04 0100 aa"),
            ClientRepr::ToAll {
                game: 1,
                app_code: 9,
                body: &[0xaa],
            },
        ),
        (
            hex(
                "45000000 19000000  01 0400 01000000  01 0400 02000000  02 0400 09000000
                 04 0100 aa",
            ),
            ClientRepr::ToPlayer {
                game: 1,
                member: 2,
                app_code: 9,
                body: &[0xaa],
            },
        ),
        (
            hex("50000000 16000000  03 0500 6368657373  02 0400 03000000  02 0400 01000000"),
            ClientRepr::ListGames {
                game_type: "chess",
                flags_clear: 3,
                min_free: 1,
            },
        ),
        (
            hex("60000000 07000000  04 0400 01020304"),
            ClientRepr::Ping {
                payload: &[1, 2, 3, 4],
            },
        ),
    ]
}

#[test]
fn every_code_has_a_golden() {
    let mut codes: Vec<u32> = goldens().iter().map(|(_, repr)| repr.code()).collect();
    codes.dedup();
    assert_eq!(codes, code::CLIENT);
}

#[test]
fn deconstruct() {
    for (golden, repr) in goldens() {
        assert_deconstructs(&golden, repr.code(), ClientRepr::parse, repr);
    }
    // Fields of one message, read out of the variant.
    let golden = hex("33000000 13000000  01 0400 01000000  01 0400 07000000  03 0200 7077");
    let Ok(ClientRepr::JoinRequest {
        game,
        request,
        password,
    }) = ClientRepr::parse(&checked(&golden))
    else {
        panic!("JOIN_REQUEST golden parses");
    };
    assert_eq!((game, request, password), (1, 7, "pw"));
}

#[test]
fn construct() {
    for (golden, repr) in goldens() {
        assert_constructs(&golden, &repr, repr.buffer_len(), |buf| repr.emit(buf));
    }
}

#[test]
fn every_error() {
    let parse = |text: &str| ClientRepr::parse(&checked(&hex(text))).map(|_| ());
    assert_eq!(
        ClientRepr::parse(&Frame::new_unchecked(&hex("37000000 07000000 01")[..])),
        Err(Error::Truncated)
    );
    assert_eq!(parse("99000000 00000000"), Err(Error::UnknownCode));
    assert_eq!(parse("06000000 00000000"), Err(Error::WrongDirection));
    assert_eq!(parse("37000000 00000000"), Err(Error::MissingParam));
    assert_eq!(
        parse("37000000 0a000000 01 0400 01000000 04 0000"),
        Err(Error::ExtraParam)
    );
    assert_eq!(
        parse("37000000 07000000 02 0400 01000000"),
        Err(Error::WrongKind)
    );
    assert_eq!(
        parse("37000000 06000000 01 0300 010000"),
        Err(Error::BadSize)
    );
    assert_eq!(
        parse("37000000 03000000 01 0400"),
        Err(Error::ParamTruncated)
    );
    assert_eq!(
        parse("20000000 08000000 01 0400 00000000 03"),
        Err(Error::ParamTruncated)
    );
    assert_eq!(
        parse("20000000 0b000000 01 0400 00000000 03 0100 c3"),
        Err(Error::NotUtf8)
    );
    assert_eq!(
        parse("39000000 0e000000 01 0400 01000000 02 0400 02000000"),
        Err(Error::BadValue)
    );
    // A resume token of 5 bytes, a PING over 64 bytes.
    assert_eq!(
        parse("03000000 0e000000 03 0000 03 0000 04 0500 0102030405"),
        Err(Error::BadSize)
    );
    let mut ping = hex("60000000 44000000 04 4100");
    ping.extend_from_slice(&[0; 65]);
    assert_eq!(ClientRepr::parse(&checked(&ping)), Err(Error::BadSize));
    let mut ping = hex("60000000 43000000 04 4000");
    ping.extend_from_slice(&[0; 64]);
    assert!(ClientRepr::parse(&checked(&ping)).is_ok());
}

// ---- quickcheck: one arm per message ----

/// An owned client message, so quickcheck can generate and shrink it.
#[derive(Clone, Debug)]
struct Msg {
    pick: u8,
    ints: [i32; 3],
    words: [u32; 3],
    texts: [String; 4],
    bytes: Vec<u8>,
    flag: bool,
    token: Option<[u8; TOKEN_LEN]>,
}

impl Arbitrary for Msg {
    fn arbitrary(g: &mut Gen) -> Self {
        let mut token = [0u8; TOKEN_LEN];
        token.iter_mut().for_each(|b| *b = u8::arbitrary(g));
        let mut bytes = Vec::<u8>::arbitrary(g);
        bytes.truncate(MAX_PING_PAYLOAD);
        Msg {
            pick: u8::arbitrary(g) % code::CLIENT.len() as u8,
            ints: [i32::arbitrary(g), i32::arbitrary(g), i32::arbitrary(g)],
            words: [u32::arbitrary(g), u32::arbitrary(g), u32::arbitrary(g)],
            texts: [(); 4].map(|()| String::arbitrary(g)),
            bytes,
            flag: bool::arbitrary(g),
            token: bool::arbitrary(g).then_some(token),
        }
    }
}

impl Msg {
    fn repr(&self) -> ClientRepr<'_> {
        let [i0, i1, _] = self.ints;
        let [u0, u1, u2] = self.words;
        let [s0, s1, s2, s3] = &self.texts;
        let b = &self.bytes[..];
        match code::CLIENT[usize::from(self.pick)] {
            code::SIGN_IN => ClientRepr::SignIn {
                username: s0,
                password: s1,
                resume: self.token.as_ref(),
            },
            code::SET_MEMBER => ClientRepr::SetMember {
                flags: u0,
                display_name: s0,
            },
            code::CHAT => ClientRepr::Chat { game: i0, text: s0 },
            code::PRIVATE_CHAT => ClientRepr::PrivateChat { to: i0, text: s0 },
            code::CREATE_GAME => ClientRepr::CreateGame {
                max_players: u0,
                game_type: s0,
                version: s1,
                flags: u1,
                name: s2,
                password: s3,
            },
            code::JOIN_REQUEST => ClientRepr::JoinRequest {
                game: i0,
                request: i1,
                password: s0,
            },
            code::JOIN_ANSWER => ClientRepr::JoinAnswer {
                ask: i0,
                accept: self.flag,
                reason: s0,
            },
            code::LEAVE_GAME => ClientRepr::LeaveGame { game: i0 },
            code::SET_GAME => ClientRepr::SetGame {
                game: i0,
                flags: u0,
                password: s0,
            },
            code::SET_READY => ClientRepr::SetReady {
                game: i0,
                ready: self.flag,
            },
            code::START_GAME => ClientRepr::StartGame { game: i0 },
            code::KICK => ClientRepr::Kick {
                game: i0,
                member: i1,
                reason: s0,
            },
            code::GIVE_OWNER => ClientRepr::GiveOwner {
                game: i0,
                member: i1,
            },
            code::STORE_DATA => ClientRepr::StoreData {
                game: i0,
                key: s0,
                value: b,
            },
            code::FETCH_DATA => ClientRepr::FetchData { game: i0, key: s0 },
            code::TO_OWNER => ClientRepr::ToOwner {
                game: i0,
                app_code: u0,
                body: b,
            },
            code::TO_ALL => ClientRepr::ToAll {
                game: i0,
                app_code: u0,
                body: b,
            },
            code::TO_PLAYER => ClientRepr::ToPlayer {
                game: i0,
                member: i1,
                app_code: u0,
                body: b,
            },
            code::LIST_GAMES => ClientRepr::ListGames {
                game_type: s0,
                flags_clear: u1,
                min_free: u2,
            },
            _ => ClientRepr::Ping { payload: b },
        }
    }
}

fn emit(repr: &ClientRepr<'_>) -> Vec<u8> {
    emitted(repr.buffer_len(), |buf| repr.emit(buf))
}

#[test]
fn round_trip_reaches_every_message() {
    let mut seen: Vec<u32> = (0..code::CLIENT.len() as u8)
        .map(|pick| {
            let mut g = Gen::new(8);
            Msg {
                pick,
                ..Msg::arbitrary(&mut g)
            }
            .repr()
            .code()
        })
        .collect();
    seen.sort_unstable();
    let mut all = code::CLIENT.to_vec();
    all.sort_unstable();
    assert_eq!(seen, all);
}

quickcheck! {
    fn round_trip(msg: Msg) -> bool {
        let repr = msg.repr();
        let bytes = emit(&repr);
        match next_frame(&bytes, DEFAULT_MAX_FRAME) {
            Next::Frame { frame, consumed } => {
                consumed == bytes.len() && ClientRepr::parse(&frame) == Ok(repr)
            }
            _ => false,
        }
    }

    fn concatenated_frames_read_back_in_order(msgs: Vec<Msg>) -> bool {
        let stream: Vec<u8> = msgs.iter().flat_map(|m| emit(&m.repr())).collect();
        let mut rest = &stream[..];
        for msg in &msgs {
            let Next::Frame { frame, consumed } = next_frame(rest, DEFAULT_MAX_FRAME) else {
                return false;
            };
            if ClientRepr::parse(&frame) != Ok(msg.repr()) {
                return false;
            }
            rest = &rest[consumed..];
        }
        rest.is_empty()
    }
}
