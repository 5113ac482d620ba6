//! Accept, sign-in (with and without accounts), the sync's order, deadlines, malformed and
//! oversized frames, frame rate, shutdown.

use std::time::Duration;

use super::{member_info, token, Harness};
use crate::accounts::UserId;
use crate::accounts::{LoginPolicy, VerifyResult};
use crate::general::{ConnId, GeneralConfig, JobId, MemberId};
use crate::wire::general::{
    code, ClientRepr, Error, ErrorCode, GameInfo, ServerRepr, Words, GAME_LOCKED, MEMBER_AWAY,
    PLAYER_READY,
};

fn sign_in<'a>(username: &'a str, password: &'a str) -> ClientRepr<'a> {
    ClientRepr::SignIn {
        username,
        password,
        resume: None,
    }
}

fn challenge(text: &str, failed: bool) -> ServerRepr<'_> {
    ServerRepr::Challenge { text, failed }
}

fn error<'a>(code: ErrorCode, request: u32, text: &'a str) -> ServerRepr<'a> {
    ServerRepr::Error {
        code,
        request,
        text,
    }
}

const NAME_RULE: &str = "names are 1 to 24 characters without control characters";

#[test]
fn accept_sends_hello_then_challenge() {
    let mut sim = Harness::new(GeneralConfig::default());
    sim.open(1);
    sim.expect(
        1,
        &[
            ServerRepr::Hello {
                server_name: "lobbyd",
                version: 1,
            },
            challenge("sign in", false),
        ],
    );
    assert_eq!(sim.lobby.guest_count(), 1);
    assert_eq!(sim.lobby.member_count(), 0, "no seat before WELCOME");
}

#[test]
fn sign_in_and_the_full_sync_order() {
    let mut sim = Harness::new(GeneralConfig::default());
    sim.open(1);
    sim.take(1);
    sim.send(1, sign_in("alice", ""));
    let alice = MemberId(1);
    sim.expect(
        1,
        &[
            ServerRepr::Welcome {
                member: 1,
                token: &token(1),
            },
            member_info(alice, 0, "alice"),
            ServerRepr::SyncDone,
        ],
    );
    let bob = sim.member(2, "bob");
    assert_eq!(bob, MemberId(2));
    sim.send(
        1,
        ClientRepr::CreateGame {
            max_players: 4,
            game_type: "chess",
            version: "1.0",
            flags: GAME_LOCKED,
            name: "Friday",
            password: "pw",
        },
    );
    sim.clear();
    // Carol: WELCOME, herself first, every other member by id, every game, SYNC_DONE; the
    // others hear of her.
    sim.open(3);
    sim.take(3);
    sim.send(3, sign_in("carol", ""));
    sim.expect(
        3,
        &[
            ServerRepr::Welcome {
                member: 3,
                token: &token(3),
            },
            member_info(MemberId(3), 0, "carol"),
            member_info(alice, 0, "alice"),
            member_info(bob, 0, "bob"),
            ServerRepr::GameInfo(GameInfo {
                id: 1,
                owner: 1,
                max_players: 4,
                name: "Friday",
                game_type: "chess",
                version: "1.0",
                flags: GAME_LOCKED,
                players: Words::new(&[1]),
                player_flags: Words::new(&[PLAYER_READY]),
            }),
            ServerRepr::SyncDone,
        ],
    );
    sim.expect(1, &[member_info(MemberId(3), 0, "carol")]);
    sim.expect(2, &[member_info(MemberId(3), 0, "carol")]);
    assert_eq!(sim.lobby.stats().sign_ins, 3);
    assert_eq!(sim.lobby.guest_count(), 0);
}

#[test]
fn refused_names_and_tries_exhausted() {
    let mut sim = Harness::new(GeneralConfig::default());
    sim.member(1, "alice");
    sim.open(2);
    sim.take(2);
    sim.send(2, sign_in("", ""));
    sim.expect(2, &[challenge(NAME_RULE, true)]);
    sim.send(2, sign_in(&"x".repeat(25), ""));
    sim.expect(2, &[challenge(NAME_RULE, true)]);
    assert!(!sim.closed.contains(&ConnId(2)));
    sim.send(2, sign_in("alice", ""));
    sim.expect(2, &[challenge("name taken", true)]);
    assert!(sim.closed.contains(&ConnId(2)), "the third refusal closes");
    let stats = sim.lobby.stats();
    assert_eq!(stats.refusals_of(ErrorCode::NameInvalid), 3);
    // Names are counted in characters: 24 two-byte characters are fine, a control one is not.
    sim.open(3);
    sim.send(3, sign_in("a\u{7}b", ""));
    sim.take(3);
    sim.send(3, sign_in(&"é".repeat(24), ""));
    assert!(super::welcome_of(&sim.take(3)).is_some());
    // Frames after the close are ignored.
    sim.send(2, ClientRepr::Ping { payload: b"x" });
    sim.expect_none(2);
}

#[test]
fn guests_may_only_sign_in_and_ping() {
    let mut sim = Harness::new(GeneralConfig::default());
    sim.open(1);
    sim.take(1);
    sim.send(1, ClientRepr::Ping { payload: b"hi" });
    sim.expect(1, &[ServerRepr::Pong { payload: b"hi" }]);
    sim.send(
        1,
        ClientRepr::Chat {
            game: 0,
            text: "hello",
        },
    );
    sim.expect(
        1,
        &[error(ErrorCode::NotSignedIn, code::CHAT, "sign in first")],
    );
    sim.send(1, sign_in("alice", ""));
    sim.take(1);
    sim.send(1, sign_in("alice", ""));
    sim.expect(
        1,
        &[error(
            ErrorCode::AlreadyInGame,
            code::SIGN_IN,
            "already signed in",
        )],
    );
}

fn accounts(login: LoginPolicy) -> Harness {
    let mut sim = Harness::new(GeneralConfig {
        login,
        ..GeneralConfig::default()
    });
    sim.open(1);
    sim.take(1);
    sim
}

#[test]
fn required_login_checks_passwords_off_the_core() {
    let mut sim = accounts(LoginPolicy::Required);
    sim.send(1, sign_in("alice", ""));
    sim.expect(1, &[challenge("password required", true)]);
    sim.send(1, sign_in("alice", "bad"));
    sim.expect_none(1);
    assert_eq!(
        sim.verifies,
        [(JobId(1), "alice".to_owned(), "bad".to_owned())]
    );
    // While the password is checked: other requests wait for sign-in, a second SIGN_IN too.
    sim.send(1, sign_in("alice", "bad"));
    sim.expect(
        1,
        &[error(
            ErrorCode::NotSignedIn,
            code::SIGN_IN,
            "sign-in in progress",
        )],
    );
    sim.lobby
        .handle_verify_result(sim.now, JobId(1), VerifyResult::Invalid);
    sim.drain();
    sim.expect(1, &[challenge("wrong name or password", true)]);
    // Busy costs no try: after two refusals and a busy the connection is still open.
    sim.send(1, sign_in("alice", "good"));
    sim.lobby
        .handle_verify_result(sim.now, JobId(2), VerifyResult::Busy);
    sim.drain();
    sim.expect(1, &[challenge("try again", true)]);
    assert!(!sim.closed.contains(&ConnId(1)));
    sim.send(1, sign_in("alice", "good"));
    sim.lobby
        .handle_verify_result(sim.now, JobId(3), VerifyResult::Valid(UserId(7)));
    sim.drain();
    assert_eq!(
        super::welcome_of(&sim.take(1)).map(|w| w.0),
        Some(MemberId(1))
    );
    // A verdict nobody waits for is counted and ignored.
    sim.lobby
        .handle_verify_result(sim.now, JobId(3), VerifyResult::Valid(UserId(7)));
    sim.drain();
    let stats = sim.lobby.stats();
    assert_eq!(stats.stale_verify_results, 1);
    assert_eq!(stats.verify_busy, 1);
    assert_eq!(stats.refusals_of(ErrorCode::WrongPassword), 2);
}

#[test]
fn a_name_taken_while_its_password_was_checked_is_refused() {
    let mut sim = accounts(LoginPolicy::Optional);
    sim.send(1, sign_in("alice", "pw"));
    assert_eq!(sim.verifies.len(), 1);
    sim.member(2, "alice");
    sim.lobby
        .handle_verify_result(sim.now, JobId(1), VerifyResult::Valid(UserId(1)));
    sim.drain();
    sim.expect(1, &[challenge("name taken", true)]);
}

#[test]
fn optional_login_lets_guests_in_and_checks_given_passwords() {
    let mut sim = accounts(LoginPolicy::Optional);
    sim.send(1, sign_in("guest", ""));
    assert!(super::welcome_of(&sim.take(1)).is_some());
    assert!(sim.verifies.is_empty());
    sim.open(2);
    sim.send(2, sign_in("alice", "pw"));
    assert_eq!(sim.verifies.len(), 1);
}

#[test]
fn names_the_accounts_cannot_hold_are_refused_without_a_check() {
    let mut sim = accounts(LoginPolicy::Required);
    // 24 characters of 4 bytes: a valid lobby name, but 96 bytes, over the accounts' 64.
    sim.send(1, sign_in(&"𝄞".repeat(24), "pw"));
    sim.expect(1, &[challenge("wrong name or password", true)]);
    assert!(sim.verifies.is_empty());
}

#[test]
fn sign_in_deadline_ignores_trickling() {
    let mut sim = Harness::new(GeneralConfig::default());
    sim.open(1);
    sim.take(1);
    sim.advance(Duration::from_secs(4));
    sim.send(1, ClientRepr::Ping { payload: b"" });
    sim.take(1);
    sim.advance(Duration::from_millis(1100));
    sim.expect(1, &[error(ErrorCode::Notice, 0, "sign-in timed out")]);
    assert!(sim.closed.contains(&ConnId(1)));
    sim.close(1);
    assert_eq!(sim.lobby.connection_count(), 0);
    assert_eq!(sim.lobby.timer_count(), 0);
}

#[test]
fn idle_members_are_closed_and_only_valid_frames_count() {
    let mut sim = Harness::new(GeneralConfig::default());
    sim.member(1, "alice");
    let bob = sim.member(2, "bob");
    sim.advance(Duration::from_secs(29));
    sim.send(1, ClientRepr::Ping { payload: b"" });
    sim.take(1);
    // Bob, silent since he signed in, is closed at 30 s; Alice sees him away.
    sim.advance(Duration::from_millis(1100));
    sim.expect(2, &[error(ErrorCode::Notice, 0, "idle timeout")]);
    assert!(sim.closed.contains(&ConnId(2)));
    sim.expect(1, &[member_info(bob, MEMBER_AWAY, "bob")]);
    // A malformed frame is answered but is no sign of life: Alice goes 30 s after her PING.
    sim.advance(Duration::from_secs(20));
    sim.send_bytes(1, &[0x20, 0, 0, 0, 0, 0, 0, 0]);
    sim.expect_error(1, ErrorCode::Malformed, code::CHAT);
    sim.advance(Duration::from_millis(8800));
    sim.expect_none(1);
    sim.advance(Duration::from_millis(200));
    sim.expect(1, &[error(ErrorCode::Notice, 0, "idle timeout")]);
    assert!(sim.closed.contains(&ConnId(1)));
    assert_eq!(
        sim.lobby.members().map(|m| m.flags).collect::<Vec<_>>(),
        [MEMBER_AWAY, MEMBER_AWAY]
    );
    assert_eq!(
        sim.lobby
            .stats()
            .closes_of(crate::general::CloseReason::Idle),
        2
    );
}

#[test]
fn malformed_unknown_and_oversized_frames() {
    let mut sim = Harness::new(GeneralConfig::default());
    sim.member(1, "alice");
    // CHAT whose text is not UTF-8.
    let bad_utf8 = [
        0x20, 0, 0, 0, 11, 0, 0, 0, 1, 4, 0, 0, 0, 0, 0, 3, 1, 0, 0xff,
    ];
    sim.send_bytes(1, &bad_utf8);
    sim.expect(
        1,
        &[error(
            ErrorCode::Malformed,
            code::CHAT,
            Error::NotUtf8.text(),
        )],
    );
    sim.send_bytes(1, &[0x99, 0, 0, 0, 0, 0, 0, 0]);
    sim.expect(
        1,
        &[error(ErrorCode::UnknownCode, 0x99, "unknown message code")],
    );
    sim.send_bytes(1, &[0x06, 0, 0, 0, 0, 0, 0, 0]);
    sim.expect_error(1, ErrorCode::UnknownCode, code::SYNC_DONE);
    let stats = sim.lobby.stats();
    assert_eq!(stats.malformed_of(Error::NotUtf8), 1);
    assert_eq!(stats.malformed_of(Error::UnknownCode), 1);
    assert_eq!(stats.malformed_of(Error::WrongDirection), 1);
    assert_eq!(stats.refusals_of(ErrorCode::UnknownCode), 2);
    // A header declaring 16 385 bytes: ERROR 11, then the close.
    sim.send_bytes(1, &[0x20, 0, 0, 0, 0x01, 0x40, 0, 0]);
    sim.expect(
        1,
        &[error(
            ErrorCode::FrameTooLarge,
            code::CHAT,
            "frame too large",
        )],
    );
    assert!(sim.closed.contains(&ConnId(1)));
    assert_eq!(
        sim.lobby.members().next().map(|m| m.flags),
        Some(MEMBER_AWAY)
    );
}

#[test]
fn frame_rate_limit() {
    let mut sim = Harness::new(GeneralConfig {
        frame_rate: 2,
        frame_burst: 3,
        ..GeneralConfig::default()
    });
    sim.open(1);
    sim.take(1);
    for _ in 0..3 {
        sim.send(1, ClientRepr::Ping { payload: b"" });
    }
    assert_eq!(super::count_frames(&sim.take(1)), 3);
    sim.send(1, ClientRepr::Ping { payload: b"" });
    sim.expect(
        1,
        &[error(ErrorCode::RateLimited, code::PING, "too many frames")],
    );
    sim.advance(Duration::from_millis(500));
    sim.send(1, ClientRepr::Ping { payload: b"" });
    sim.expect(1, &[ServerRepr::Pong { payload: b"" }]);
}

#[test]
fn member_limit_closes_newcomers() {
    let mut sim = Harness::new(GeneralConfig {
        max_members: 1,
        ..GeneralConfig::default()
    });
    sim.member(1, "alice");
    sim.open(2);
    sim.take(2);
    sim.send(2, sign_in("bob", ""));
    sim.expect(
        2,
        &[error(ErrorCode::LimitReached, code::SIGN_IN, "lobby full")],
    );
    assert!(sim.closed.contains(&ConnId(2)));
}

#[test]
fn shutdown_notice_to_every_connection() {
    let mut sim = Harness::new(GeneralConfig::default());
    sim.member(1, "alice");
    sim.member(2, "bob");
    sim.open(3);
    sim.take(3);
    sim.lobby.handle_shutdown(sim.now);
    sim.drain();
    for conn in 1..=3 {
        sim.expect(conn, &[error(ErrorCode::Notice, 0, "server shutting down")]);
        assert!(sim.closed.contains(&ConnId(conn)));
    }
    // The closes that follow announce nobody away.
    sim.close(1);
    sim.close(2);
    sim.close(3);
    for conn in 1..=3 {
        sim.expect_none(conn);
    }
}

#[test]
fn the_oldest_guest_is_the_one_to_evict() {
    let mut sim = Harness::new(GeneralConfig::default());
    sim.open(1);
    sim.member(2, "bob");
    sim.open(3);
    assert_eq!(sim.lobby.oldest_guest(), Some(ConnId(1)));
    sim.close(1);
    assert_eq!(sim.lobby.oldest_guest(), Some(ConnId(3)));
    assert_eq!(sim.lobby.guest_count(), 1);
}

/// A lobby with accounts under `login`, no connection yet.
fn lobby_with_accounts(login: LoginPolicy) -> Harness {
    Harness::new(GeneralConfig {
        login,
        ..GeneralConfig::default()
    })
}

/// Opens `conn` and signs in as `name` with a password the driver finds right for account
/// `user`; returns the member id. Everyone's inbox is cleared afterwards.
fn account_member(sim: &mut Harness, conn: usize, name: &str, user: i64) -> MemberId {
    sim.open(conn);
    sim.take(conn);
    sim.send(conn, sign_in(name, "pw"));
    let (job, _, _) = sim.verifies.last().cloned().expect("a password check");
    sim.lobby
        .handle_verify_result(sim.now, job, VerifyResult::Valid(UserId(user)));
    sim.drain();
    let got = sim.take(conn);
    sim.clear();
    super::welcome_of(&got).expect("signed in").0
}

/// SIGN_IN as `name` with a password from `conn` (opened here), answered `verdict`.
fn sign_in_checked(sim: &mut Harness, conn: usize, name: &str, verdict: VerifyResult) {
    sim.open(conn);
    sim.take(conn);
    let checks = sim.verifies.len();
    sim.send(conn, sign_in(name, "pw"));
    assert_eq!(sim.verifies.len(), checks + 1, "the password is checked");
    let (job, _, _) = sim.verifies.last().cloned().expect("a password check");
    sim.lobby.handle_verify_result(sim.now, job, verdict);
    sim.drain();
}

#[test]
fn the_accounts_password_takes_over_a_present_member_with_its_games() {
    let mut sim = lobby_with_accounts(LoginPolicy::Optional);
    let alice = account_member(&mut sim, 1, "alice", 7);
    sim.member(2, "bob");
    super::games::create(&mut sim, 1, 4, 0);
    sim.clear();
    sign_in_checked(&mut sim, 3, "alice", VerifyResult::Valid(UserId(7)));
    sim.expect(
        1,
        &[error(
            ErrorCode::Notice,
            0,
            "signed in on another connection",
        )],
    );
    assert!(sim.closed.contains(&ConnId(1)));
    let got = sim.take(3);
    let (member, _) = super::welcome_of(&got).expect("WELCOME");
    assert_eq!(member, alice, "the same member");
    let game = super::frames(&[super::games::info(1, 1, 4, 0, &[1], &[PLAYER_READY])]);
    assert!(
        got.windows(game.len()).any(|w| w == game),
        "the sync shows its game, owned as before: {}",
        super::describe(&got)
    );
    // Present before and after: the others see no change.
    sim.expect_none(2);
    assert_eq!(sim.lobby.member_count(), 2);
    assert_eq!(sim.lobby.stats().takeovers, 1);
    // The new connection is the member: its requests are served.
    sim.send(
        3,
        ClientRepr::SetReady {
            game: 1,
            ready: false,
        },
    );
    sim.expect(3, &[super::games::info(1, 1, 4, 0, &[1], &[0])]);
}

#[test]
fn the_accounts_password_takes_back_an_away_member_within_its_grace() {
    let mut sim = lobby_with_accounts(LoginPolicy::Required);
    let alice = account_member(&mut sim, 1, "alice", 7);
    let bob = account_member(&mut sim, 2, "bob", 8);
    sim.close(1);
    sim.expect(2, &[member_info(alice, MEMBER_AWAY, "alice")]);
    sim.advance(Duration::from_secs(10));
    sim.send(2, ClientRepr::Ping { payload: b"" });
    sim.expect(2, &[ServerRepr::Pong { payload: b"" }]);
    sign_in_checked(&mut sim, 3, "alice", VerifyResult::Valid(UserId(7)));
    let got = sim.take(3);
    assert_eq!(super::welcome_of(&got).map(|w| w.0), Some(alice));
    sim.expect(2, &[member_info(alice, 0, "alice")]);
    // The grace timer died with the takeover: its end (30 s after the close) passes quietly.
    sim.advance(Duration::from_secs(25));
    sim.expect_none(2);
    assert_eq!(sim.lobby.member_count(), 2);
    assert_ne!(alice, bob);
}

#[test]
fn a_wrong_password_leaves_the_holder_alone() {
    let mut sim = lobby_with_accounts(LoginPolicy::Required);
    account_member(&mut sim, 1, "alice", 7);
    sign_in_checked(&mut sim, 2, "alice", VerifyResult::Invalid);
    sim.expect(2, &[challenge("wrong name or password", true)]);
    sim.expect_none(1);
    assert!(!sim.closed.contains(&ConnId(1)));
    // Another account's verdict for the name (a renamed account) does not take it either.
    sign_in_checked(&mut sim, 3, "alice", VerifyResult::Valid(UserId(9)));
    sim.expect(3, &[challenge("name taken", true)]);
    sim.expect_none(1);
    assert_eq!(sim.lobby.stats().takeovers, 0);
}

#[test]
fn a_guests_name_stays_taken_without_a_check() {
    let mut sim = lobby_with_accounts(LoginPolicy::Optional);
    sim.member(1, "bob");
    sim.open(2);
    sim.take(2);
    sim.send(2, sign_in("bob", "pw"));
    sim.expect(2, &[challenge("name taken", true)]);
    assert!(sim.verifies.is_empty());
    // An account's member without a password is not taken over either.
    account_member(&mut sim, 3, "alice", 7);
    sim.open(4);
    sim.take(4);
    sim.send(4, sign_in("alice", ""));
    sim.expect(4, &[challenge("name taken", true)]);
    assert_eq!(sim.verifies.len(), 1);
}
