//! Sign-in under attack, with accounts (`--lobby-login required`): a crowd of addresses
//! guessing passwords, each within its failure budget, does not keep the account's owner out
//! (password checks are served round robin per source address, addresses that have only failed
//! last: `src/net/login/queue.rs`); and the owner who signs in again with the right password,
//! on a new connection and without the resume token, takes its member over (games and
//! ownership kept) instead of being told "name taken" for the resume grace.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use lobbyd::accounts::LoginPolicy;
use lobbyd::net::ServerHandle;
use lobbyd::wire::general::{ClientRepr, ServerRepr};

use super::client::{expect_all, info_of, notice, start_lobby, Client, Game, VERIFY_WAIT};
use crate::common::{snapshot, TempDb};

const WRONG: &str = "wrong name or password";
const TRY_AGAIN: &str = "try again";
const PASSWORD: &str = "correct horse";

/// A lobby with login required over a database holding `users`, each with [`PASSWORD`].
fn start_with(tag: &str, users: &[&str]) -> (TempDb, ServerHandle, SocketAddr) {
    let users: Vec<(&str, &str)> = users.iter().map(|&u| (u, PASSWORD)).collect();
    let (db, _) = TempDb::with_users(tag, &users);
    let path = db.0.clone();
    let (server, addr) = start_lobby(move |c| {
        c.wz.db = path;
        c.general.core.login = LoginPolicy::Required;
        c.general.core.sign_in_tries = 1_000_000;
        // The crowd's checks queue behind a loaded machine's worker: no deadline may end a
        // connection meanwhile.
        c.general.core.sign_in_timeout = Duration::from_secs(120);
    });
    (db, server, addr)
}

/// Sends SIGN_IN as `name` with `password`.
fn send_sign_in(client: &mut Client, name: &str, password: &str) {
    client.send(ClientRepr::SignIn {
        username: name,
        password,
        resume: None,
    });
}

/// One guessing address: `conns` connections from `source`, each with a wrong password for
/// "victim" always in flight, until `stop`. Counts the address in `failed_once` at its
/// first "wrong" answer.
fn guess(
    addr: SocketAddr,
    source: String,
    conns: usize,
    stop: Arc<AtomicBool>,
    failed_once: Arc<AtomicUsize>,
) {
    let mut clients: Vec<Client> = (0..conns)
        .map(|_| Client::greeted_from(addr, &source))
        .collect();
    let mut counted = false;
    for client in clients.iter_mut() {
        send_sign_in(client, "victim", "guess");
    }
    while !stop.load(Ordering::Relaxed) {
        for client in clients.iter_mut() {
            let Some(reply) = client.recv_within(Duration::from_millis(200)) else {
                continue;
            };
            match reply.repr() {
                ServerRepr::Challenge { text, failed: true } if text == WRONG => {
                    if !counted {
                        counted = true;
                        failed_once.fetch_add(1, Ordering::Relaxed);
                    }
                }
                // Refused without a check: the attacker retries soon (not in a spin).
                ServerRepr::Challenge { text, failed: true } if text == TRY_AGAIN => {
                    thread::sleep(Duration::from_millis(50));
                }
                other => panic!("{source}: unexpected {other:?}"),
            }
            send_sign_in(client, "victim", "guess");
        }
    }
}

#[test]
fn the_owner_signs_in_while_many_addresses_guess_passwords() {
    const ADDRESSES: usize = 64;
    const CONNS_PER_ADDRESS: usize = 3;
    const SIGN_INS: usize = 3;
    let users = ["victim", "owner0", "owner1", "owner2"];
    let (_db, server, addr) = start_with("under-attack", &users);
    let stop = Arc::new(AtomicBool::new(false));
    let failed_once = Arc::new(AtomicUsize::new(0));
    let crowd: Vec<_> = (0..ADDRESSES)
        .map(|i| {
            let source = format!("127.1.{}.{}", 1 + i / 200, 1 + i % 200);
            let (stop, failed_once) = (Arc::clone(&stop), Arc::clone(&failed_once));
            thread::spawn(move || guess(addr, source, CONNS_PER_ADDRESS, stop, failed_once))
        })
        .collect();
    // The crowd is in full swing once every address has failed at least once (each is still
    // within its 10 failures a minute: a check is never refused for its address's failures
    // before then). With checks shared per address, every address gets its turn; a
    // first-come-first-served queue that the luckiest connections keep full does not.
    let warmed = Instant::now() + Duration::from_secs(60);
    while failed_once.load(Ordering::Relaxed) < ADDRESSES {
        assert!(
            Instant::now() < warmed,
            "only {} of {ADDRESSES} addresses had a check in 60 s",
            failed_once.load(Ordering::Relaxed)
        );
        thread::sleep(Duration::from_millis(20));
    }
    // The owner, from an address of its own, signs in several times: each SIGN_IN with the
    // right password is answered WELCOME, never "try again".
    let mut answers = Vec::new();
    for owner in &users[1..=SIGN_INS] {
        let mut client = Client::greeted_from(addr, "127.2.0.1");
        send_sign_in(&mut client, owner, PASSWORD);
        let reply = client.recv_within(VERIFY_WAIT).expect("an answer");
        answers.push(match reply.repr() {
            ServerRepr::Welcome { .. } => "WELCOME".to_owned(),
            ServerRepr::Challenge { text, .. } => text.to_owned(),
            other => format!("{other:?}"),
        });
    }
    stop.store(true, Ordering::Relaxed);
    for guesser in crowd {
        guesser.join().expect("a guesser failed");
    }
    let snap = snapshot(&server);
    let refused: Vec<_> = [
        "per_address",
        "expired",
        "displaced",
        "queue_full",
        "rate_limited",
    ]
    .iter()
    .map(|cause| (cause, snap.counter("general_login_refused_total", cause)))
    .collect();
    assert_eq!(
        answers,
        vec!["WELCOME"; SIGN_INS],
        "the owner's answers (checks refused: {refused:?})"
    );
    assert_eq!(
        snap.counter("general_login_checks_total", "valid"),
        Some(SIGN_INS as u64)
    );
    let invalid = snap.counter("general_login_checks_total", "invalid");
    assert!(
        invalid >= Some(ADDRESSES as u64),
        "{invalid:?} wrong guesses"
    );
    // The crowd's extra connections were turned away by the per-address share.
    assert!(snap.counter("general_login_refused_total", "per_address") > Some(0));
}

#[test]
fn the_accounts_password_takes_over_the_member_holding_the_name() {
    let (_db, server, addr) = start_with("takeover", &["alice", "bob"]);
    let mut alice = Client::greeted_from(addr, "127.3.0.1");
    alice.sign_in("alice", PASSWORD, None);
    alice.read_sync();
    let mut bob = Client::greeted_from(addr, "127.3.0.2");
    bob.sign_in("bob", PASSWORD, None);
    bob.read_sync();
    alice.expect(&info_of(&bob));
    let game = Game::new(1, &alice, 4, "alice's");
    alice.send(game.create());
    expect_all(&mut [&mut alice, &mut bob], &game.info());
    // A wrong password for the held name is checked and refused; the holder hears nothing.
    let mut guesser = Client::greeted_from(addr, "127.3.0.3");
    guesser.expect_sign_in_refused("alice", "battery", None, WRONG);
    alice.expect_quiet();
    // The owner again, on a new connection, without the token: the same member, its game.
    let mut again = Client::greeted_from(addr, "127.3.0.4");
    again.sign_in("alice", PASSWORD, None);
    assert_eq!(again.id, alice.id, "the member taken over");
    assert_ne!(again.token, alice.token, "a fresh token");
    let sync: Vec<Vec<u8>> = again.read_sync().into_iter().map(|r| r.0).collect();
    let expected: Vec<Vec<u8>> = [
        info_of(&alice),
        info_of(&bob),
        game.info(), // alice still owns it, seated and ready
    ]
    .iter()
    .map(super::client::server_bytes)
    .collect();
    assert_eq!(sync, expected, "the sync after WELCOME");
    // The old connection is told, then closed; the others see no change.
    alice.expect_last(&notice("signed in on another connection"));
    bob.expect_quiet();
    // The new connection owns the game.
    again.send(ClientRepr::SetGame {
        game: 1,
        flags: 2,
        password: "",
    });
    let mut closed = game.clone();
    closed.flags = 2;
    expect_all(&mut [&mut again, &mut bob], &closed.info());
    let snap = snapshot(&server);
    assert_eq!(snap.counter("general_takeovers_total", ""), Some(1));
    assert_eq!(snap.counter("general_closed_total", "replaced"), Some(1));
}

#[test]
fn a_guests_name_is_still_taken_under_optional_login() {
    let (db, _) = TempDb::with_users("guest-name", &[("carl", PASSWORD)]);
    let path = db.0.clone();
    let (server, addr) = start_lobby(move |c| {
        c.wz.db = path;
        c.general.core.login = LoginPolicy::Optional;
    });
    // A guest holds the name of an account that is not signed in.
    let mut guest = Client::greeted(addr);
    guest.sign_in("carl", "", None);
    guest.read_sync();
    // Even the account's password does not take a guest's name: no check is made.
    let mut owner = Client::greeted(addr);
    owner.expect_sign_in_refused("carl", PASSWORD, None, "name taken");
    guest.expect_quiet();
    let snap = snapshot(&server);
    assert_eq!(snap.counter("general_login_checks_total", "valid"), Some(0));
    assert_eq!(snap.counter("general_takeovers_total", ""), Some(0));
}
