//! Chat in its three scopes with its text rules and rate limit; the three relay kinds and who
//! may use them.

use std::time::Duration;

use super::games::{create, join};
use super::{config, Harness};
use crate::general::{GeneralConfig, MemberId};
use crate::wire::general::{code, ClientRepr, ErrorCode, ServerRepr};

/// Alice (1) owns game 1 with Bob (2) and Carol (3) in it; Dave (4) is not.
fn table() -> Harness {
    let mut sim = Harness::new(GeneralConfig {
        auto_approve: true,
        ..config()
    });
    for (conn, name) in [(1, "alice"), (2, "bob"), (3, "carol"), (4, "dave")] {
        assert_eq!(sim.member(conn, name), MemberId(conn as i32));
    }
    create(&mut sim, 1, 4, 0);
    join(&mut sim, 2, 1, 1, "");
    join(&mut sim, 3, 1, 1, "");
    sim.clear();
    sim
}

fn chat(game: i32, text: &str) -> ClientRepr<'_> {
    ClientRepr::Chat { game, text }
}

#[test]
fn chat_in_three_scopes() {
    let mut sim = table();
    sim.send(1, chat(0, "hi all"));
    let line = ServerRepr::ChatFrom {
        game: 0,
        member: 1,
        text: "hi all",
    };
    for conn in 1..=4 {
        sim.expect(conn, &[line]);
    }
    sim.send(2, chat(1, "gg"));
    let line = ServerRepr::ChatFrom {
        game: 1,
        member: 2,
        text: "gg",
    };
    for conn in 1..=3 {
        sim.expect(conn, &[line]);
    }
    sim.expect_none(4);
    sim.send(4, chat(1, "let me in"));
    sim.expect_error(4, ErrorCode::NotInGame, code::CHAT);
    sim.send(4, chat(7, "?"));
    sim.expect_error(4, ErrorCode::UnknownGame, code::CHAT);
    sim.send(
        1,
        ClientRepr::PrivateChat {
            to: 4,
            text: "psst",
        },
    );
    sim.expect(
        4,
        &[ServerRepr::PrivateFrom {
            from: 1,
            text: "psst",
        }],
    );
    for conn in 1..=3 {
        sim.expect_none(conn);
    }
    sim.send(1, ClientRepr::PrivateChat { to: 99, text: "?" });
    sim.expect_error(1, ErrorCode::UnknownId, code::PRIVATE_CHAT);
    assert_eq!(sim.lobby.stats().chat_lines, 3);
}

#[test]
fn chat_text_rules() {
    let mut sim = table();
    let long = "x".repeat(513);
    for text in ["", long.as_str(), "two\nlines", "bell\u{7}"] {
        sim.send(1, chat(0, text));
        sim.expect_error(1, ErrorCode::Malformed, code::CHAT);
    }
    sim.send(1, ClientRepr::PrivateChat { to: 2, text: "" });
    sim.expect_error(1, ErrorCode::Malformed, code::PRIVATE_CHAT);
    sim.send(1, chat(0, &"é".repeat(256)));
    assert!(!sim.take(2).is_empty(), "512 bytes pass");
}

#[test]
fn chat_rate_limit() {
    let mut sim = table();
    // Burst 10: ten lines pass, the eleventh is refused.
    for _ in 0..9 {
        sim.send(1, chat(0, "spam"));
    }
    sim.send(1, ClientRepr::PrivateChat { to: 2, text: "p" });
    sim.clear();
    sim.send(1, chat(0, "one too many"));
    sim.expect(
        1,
        &[ServerRepr::Error {
            code: ErrorCode::RateLimited,
            request: code::CHAT,
            text: "chat rate limit",
        }],
    );
    sim.expect_none(2);
    // 5 per second: one more after 200 ms.
    sim.advance(Duration::from_millis(200));
    sim.send(1, chat(0, "again"));
    sim.take(1);
    assert_eq!(super::count_frames(&sim.take(2)), 1);
    sim.send(1, chat(0, "and again"));
    sim.expect_error(1, ErrorCode::RateLimited, code::CHAT);
    assert_eq!(sim.lobby.stats().refusals_of(ErrorCode::RateLimited), 2);
}

#[test]
fn private_chat_to_an_away_member() {
    let mut sim = table();
    sim.close(4);
    sim.clear();
    sim.send(1, ClientRepr::PrivateChat { to: 4, text: "hi" });
    sim.expect(
        1,
        &[ServerRepr::Error {
            code: ErrorCode::UnknownId,
            request: code::PRIVATE_CHAT,
            text: "member is away",
        }],
    );
}

#[test]
fn every_relay_kind() {
    let mut sim = table();
    let message = |from, body| ServerRepr::GameMessage {
        game: 1,
        from,
        app_code: 9,
        body,
    };
    sim.send(
        2,
        ClientRepr::ToOwner {
            game: 1,
            app_code: 9,
            body: b"to owner",
        },
    );
    sim.expect(1, &[message(2, b"to owner")]);
    sim.expect_none(2);
    sim.send(
        3,
        ClientRepr::ToAll {
            game: 1,
            app_code: 9,
            body: b"to all",
        },
    );
    for conn in 1..=3 {
        sim.expect(conn, &[message(3, b"to all")]);
    }
    sim.expect_none(4);
    let to_player = |member| ClientRepr::ToPlayer {
        game: 1,
        member,
        app_code: 9,
        body: b"just you",
    };
    sim.send(1, to_player(2));
    sim.expect(2, &[message(1, b"just you")]);
    sim.expect_none(3);
    sim.send(2, to_player(3));
    sim.expect_error(2, ErrorCode::NotOwner, code::TO_PLAYER);
    sim.send(1, to_player(4));
    sim.expect_error(1, ErrorCode::NotInGame, code::TO_PLAYER);
    sim.send(1, to_player(99));
    sim.expect_error(1, ErrorCode::UnknownId, code::TO_PLAYER);
    sim.send(
        4,
        ClientRepr::ToOwner {
            game: 1,
            app_code: 9,
            body: b"",
        },
    );
    sim.expect_error(4, ErrorCode::NotInGame, code::TO_OWNER);
    sim.send(
        1,
        ClientRepr::ToAll {
            game: 5,
            app_code: 9,
            body: b"",
        },
    );
    sim.expect_error(1, ErrorCode::UnknownGame, code::TO_ALL);
    assert_eq!(sim.lobby.stats().relayed, 3);
}
