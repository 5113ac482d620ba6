//! Resume: within the grace (same id, seats, ownership, ready flags, the asks the owner
//! missed), after it (gone as if disconnected), single-use tokens tied to their username, a
//! live connection replaced, no grace at all.

use std::time::Duration;

use super::games::{create, info, join};
use super::{config, member_info, token, welcome_of, Harness};
use crate::general::{ConnId, GeneralConfig, MemberId};
use crate::wire::general::{ClientRepr, ErrorCode, ServerRepr, MEMBER_AWAY, TOKEN_LEN};

fn resume<'a>(username: &'a str, token: &'a [u8; TOKEN_LEN]) -> ClientRepr<'a> {
    ClientRepr::SignIn {
        username,
        password: "",
        resume: Some(token),
    }
}

const BAD_TOKEN: ServerRepr<'static> = ServerRepr::Challenge {
    text: "resume token unknown, used or expired",
    failed: true,
};

/// Alice (1) owns game 1 where Bob (2) sits not ready; Carol (3) is in the lobby.
fn table() -> Harness {
    let mut sim = Harness::new(config());
    for (conn, name) in [(1, "alice"), (2, "bob"), (3, "carol")] {
        sim.member(conn, name);
    }
    create(&mut sim, 1, 4, 0);
    join(&mut sim, 2, 1, 1, "");
    sim.send(
        1,
        ClientRepr::JoinAnswer {
            ask: 1,
            accept: true,
            reason: "",
        },
    );
    sim.send(
        2,
        ClientRepr::SetReady {
            game: 1,
            ready: false,
        },
    );
    sim.clear();
    sim
}

#[test]
fn resume_within_the_grace_takes_everything_back() {
    let mut sim = table();
    sim.close(1);
    let away = member_info(MemberId(1), MEMBER_AWAY, "alice");
    sim.expect(2, &[away]);
    sim.expect(3, &[away]);
    // Carol asks while the owner is away: the ask waits for her.
    join(&mut sim, 3, 1, 5, "");
    sim.advance(Duration::from_secs(20));
    sim.expect_none(2);
    sim.open(5);
    sim.take(5);
    sim.send(5, resume("alice", &token(1)));
    let game = info(1, 1, 4, 0, &[1, 2], &[1, 0]);
    sim.expect(
        5,
        &[
            ServerRepr::Welcome {
                member: 1,
                token: &token(4),
            },
            member_info(MemberId(1), 0, "alice"),
            member_info(MemberId(2), 0, "bob"),
            member_info(MemberId(3), 0, "carol"),
            game,
            ServerRepr::SyncDone,
            ServerRepr::JoinAsk {
                game: 1,
                member: 3,
                ask: 2,
            },
        ],
    );
    sim.expect(2, &[member_info(MemberId(1), 0, "alice")]);
    // The token was single-use.
    sim.open(6);
    sim.take(6);
    sim.send(6, resume("alice", &token(1)));
    sim.expect(6, &[BAD_TOKEN]);
    // The grace timer is gone: nothing happens when it would have ended.
    sim.clear();
    sim.advance(Duration::from_secs(15));
    sim.expect_none(2);
    assert_eq!(sim.lobby.stats().resumes, 1);
}

#[test]
fn after_the_grace_the_member_is_gone() {
    let mut sim = table();
    sim.close(1);
    sim.clear();
    sim.advance(Duration::from_millis(30_100));
    // Bob inherits the game, then Alice leaves the lobby.
    sim.expect(
        2,
        &[
            info(1, 2, 4, 0, &[2], &[1]),
            ServerRepr::MemberLeft { id: 1 },
        ],
    );
    sim.open(5);
    sim.take(5);
    sim.send(5, resume("alice", &token(1)));
    sim.expect(5, &[BAD_TOKEN]);
    // The name is free again, under a new id.
    assert_eq!(sim.member(6, "alice"), MemberId(4));
    assert_eq!(
        sim.lobby
            .stats()
            .left_of(crate::general::LeaveReason::GraceExpired),
        1
    );
}

#[test]
fn a_token_is_tied_to_its_username() {
    let mut sim = table();
    sim.close(1);
    sim.open(5);
    sim.take(5);
    sim.send(5, resume("bob", &token(1)));
    sim.expect(5, &[BAD_TOKEN]);
    sim.send(5, resume("alice", &token(1)));
    assert_eq!(welcome_of(&sim.take(5)).map(|w| w.0), Some(MemberId(1)));
}

#[test]
fn a_resume_replaces_a_live_connection() {
    let mut sim = table();
    sim.open(5);
    sim.take(5);
    sim.send(5, resume("alice", &token(1)));
    sim.expect(
        1,
        &[ServerRepr::Error {
            code: ErrorCode::Notice,
            request: 0,
            text: "session resumed on another connection",
        }],
    );
    assert!(sim.closed.contains(&ConnId(1)));
    assert_eq!(welcome_of(&sim.take(5)).map(|w| w.0), Some(MemberId(1)));
    // Nobody saw Alice away, and the old connection's close changes nothing.
    sim.close(1);
    sim.expect_none(2);
    sim.send(
        5,
        ClientRepr::Chat {
            game: 1,
            text: "still here",
        },
    );
    assert!(!sim.take(2).is_empty());
}

#[test]
fn without_a_grace_a_drop_is_a_departure() {
    let mut sim = Harness::new(GeneralConfig {
        resume_grace: Duration::ZERO,
        ..config()
    });
    sim.member(1, "alice");
    sim.member(2, "bob");
    create(&mut sim, 1, 2, 0);
    sim.clear();
    sim.close(1);
    sim.expect(
        2,
        &[
            ServerRepr::GameClosed { id: 1 },
            ServerRepr::MemberLeft { id: 1 },
        ],
    );
    assert_eq!(sim.lobby.member_count(), 1);
}
