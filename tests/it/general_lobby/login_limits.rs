//! The bounds on password checks (`src/net/login/mod.rs`), through the general lobby's SIGN_IN
//! with login required: failed checks are limited per source address, and one address has
//! at most `CHECKS_PER_ADDRESS` checks waiting or running; a check refused by either is
//! answered at once with CHALLENGE "try again", which spends no try, and counted.

use std::net::SocketAddr;
use std::time::Duration;

use lobbyd::accounts::LoginPolicy;
use lobbyd::net::login::{CHECKS_PER_ADDRESS, FAILURE_BURST};
use lobbyd::net::ServerHandle;
use lobbyd::wire::general::{ClientRepr, ServerRepr};

use super::client::{start_lobby, Client, VERIFY_WAIT};
use crate::common::{snapshot, TempDb};

const WRONG: &str = "wrong name or password";
const TRY_AGAIN: &str = "try again";

/// A lobby with login required over a database holding alice ("correct horse").
fn start_with_alice() -> (TempDb, ServerHandle, SocketAddr) {
    let (db, _) = TempDb::with_users("login-limits", &[("alice", "correct horse")]);
    let path = db.0.clone();
    let (server, addr) = start_lobby(move |c| {
        c.wz.db = path;
        c.general.core.login = LoginPolicy::Required;
        c.general.core.sign_in_tries = 1_000;
        // Checks queued behind a loaded machine's worker must not meet the deadline.
        c.general.core.sign_in_timeout = Duration::from_secs(120);
    });
    (db, server, addr)
}

/// Sends SIGN_IN as alice with `password`.
fn sign_in(client: &mut Client, password: &str) {
    client.send(ClientRepr::SignIn {
        username: "alice",
        password,
        resume: None,
    });
}

/// The text of the refusal that answers a SIGN_IN.
fn refusal(client: &mut Client) -> String {
    let reply = client.recv_within(VERIFY_WAIT).expect("an answer");
    match reply.repr() {
        ServerRepr::Challenge { text, failed: true } => text.to_owned(),
        _ => panic!("expected a refusal, got {reply:?}"),
    }
}

#[test]
fn failed_password_checks_are_limited_per_source_address() {
    let (_db, server, addr) = start_with_alice();
    let mut guesser = Client::greeted_from(addr, "127.0.0.7");
    let mut wrong = 0;
    // Once its failures are spent the address gets "try again" without a check (a slow
    // machine may refill a token meanwhile: a few more guesses are allowed for that).
    loop {
        assert!(
            wrong <= FAILURE_BURST + 5,
            "{wrong} guesses and never limited"
        );
        sign_in(&mut guesser, "battery");
        match refusal(&mut guesser).as_str() {
            WRONG => wrong += 1,
            TRY_AGAIN => break,
            other => panic!("refused {other:?}"),
        }
    }
    assert!(wrong >= FAILURE_BURST, "limited after {wrong} failures");
    // Another address is not charged for it.
    let mut alice = Client::greeted_from(addr, "127.0.0.8");
    alice.sign_in("alice", "correct horse", None);
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("general_login_checks_total", "invalid"),
        Some(wrong)
    );
    assert_eq!(snap.counter("general_login_checks_total", "valid"), Some(1));
    assert_eq!(
        snap.counter("general_login_refused_total", "rate_limited"),
        Some(1)
    );
}

#[test]
fn checks_past_an_addresses_share_are_answered_try_again_at_once() {
    let (_db, server, addr) = start_with_alice();
    // One address, many connections: fewer than its failure budget, more than its share.
    let count = 4 * CHECKS_PER_ADDRESS;
    assert!(count < FAILURE_BURST as usize);
    let mut crowd: Vec<Client> = (0..count)
        .map(|_| Client::greeted_from(addr, "127.0.3.3"))
        .collect();
    // Every SIGN_IN in one go: the checks take 20-50 ms each, so far fewer than the extra
    // 3 x CHECKS_PER_ADDRESS finish before the last is sent.
    for client in crowd.iter_mut() {
        sign_in(client, "battery");
    }
    let (mut wrong, mut try_again) = (0, 0);
    for client in crowd.iter_mut() {
        match refusal(client).as_str() {
            WRONG => wrong += 1,
            TRY_AGAIN => try_again += 1,
            other => panic!("refused {other:?}"),
        }
    }
    assert!(try_again > 0, "{count} checks queued from one address");
    assert!(wrong >= CHECKS_PER_ADDRESS as u64, "only {wrong} checked");
    // Another address is served meanwhile.
    let mut alice = Client::greeted_from(addr, "127.0.3.4");
    alice.sign_in("alice", "correct horse", None);
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("general_login_refused_total", "per_address"),
        Some(try_again)
    );
    assert_eq!(
        snap.counter("general_login_checks_total", "invalid"),
        Some(wrong)
    );
    for cause in ["rate_limited", "queue_full", "displaced", "expired"] {
        assert_eq!(
            snap.counter("general_login_refused_total", cause),
            Some(0),
            "{cause}"
        );
    }
}
