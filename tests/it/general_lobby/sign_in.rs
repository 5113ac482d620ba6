//! Sign-in over loopback (docs/protocols/general-lobby.md, "Sign-in", "Members"): the
//! greeting, WELCOME and the full sync in its order, refusals (bad password with accounts,
//! duplicate name, invalid names) and the tries that close the connection, the sign-in
//! deadline.

use std::net::SocketAddr;
use std::time::Duration;

use lobbyd::accounts::LoginPolicy;
use lobbyd::general::{HostedKind, HostedSpec};
use lobbyd::net::ServerHandle;
use lobbyd::wire::general::{code, ClientRepr, ErrorCode, ServerRepr};

use super::client::*;
use crate::common::{eventually, snapshot, TempDb, REPLY_WAIT};

const NAME_RULES: &str = "names are 1 to 24 characters without control characters";

#[test]
fn sign_in_greets_welcomes_and_syncs_on_golden_bytes() {
    let (server, addr) = start_lobby(|_| {});
    let mut alice = Client::greeted(addr);
    // Before sign-in only SIGN_IN and PING are served.
    alice.send(ClientRepr::Chat {
        game: 0,
        text: "hi",
    });
    alice.expect_bytes(&golden(
        "05000000 1e000000  02 0400 01000000  02 0400 20000000  03 0d00 'sign in first'",
    ));
    alice.send_raw(&golden("60000000 06000000  04 0300 010203"));
    alice.expect_bytes(&golden("61000000 06000000  04 0300 010203"));

    // SIGN_IN written by hand: "alice", no password, no token.
    alice.send_raw(&golden(
        "03000000 0e000000  03 0500 'alice'  03 0000  04 0000",
    ));
    let welcome = alice.recv();
    let prefix = golden("04000000 1a000000  01 0400 01000000  04 1000");
    assert_eq!(welcome.0.len(), prefix.len() + 16, "{welcome:?}");
    assert_eq!(&welcome.0[..prefix.len()], &prefix[..], "{welcome:?}");
    let alice_token = &welcome.0[prefix.len()..];
    assert_ne!(alice_token, &[0u8; 16][..], "a token from the OS generator");
    alice.expect_bytes(&golden(
        "10000000 1e000000  01 0400 01000000  02 0400 00000000  03 0500 'alice'  03 0500 'alice'",
    ));
    alice.expect_bytes(&golden("06000000 00000000"));
    alice.id = 1;
    alice.name = "alice".into();

    // The second member sees itself first, then alice; alice hears of it.
    let mut bob = Client::greeted(addr);
    bob.sign_in("bob", "", None);
    assert_eq!(bob.id, 2);
    assert_ne!(&bob.token[..], alice_token);
    bob.expect_own_info();
    bob.expect(&info_of(&alice));
    bob.expect(&ServerRepr::SyncDone);
    alice.expect(&info_of(&bob));

    // Signed in, a second SIGN_IN is refused and changes nothing.
    bob.send(ClientRepr::SignIn {
        username: "bobby",
        password: "",
        resume: None,
    });
    bob.expect_error(ErrorCode::AlreadyInGame, code::SIGN_IN, "already signed in");
    alice.expect_quiet();

    let snap = snapshot(&server);
    let general = snap.general.as_ref().expect("general lobby snapshot");
    assert_eq!((general.members, general.members_away), (2, 0));
    assert_eq!(snap.counter("general_sign_ins_total", ""), Some(2));
    assert_eq!(
        snap.counter("general_refusals_total", "not_signed_in"),
        Some(1)
    );
}

#[test]
fn the_sync_lists_self_then_members_by_id_then_games_by_id() {
    let (_server, addr) = start_lobby(|c| {
        c.general.core.hosted = vec![HostedSpec {
            kind: HostedKind::TicTacToe,
            count: 1,
        }];
    });
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let game = Game::new(2, &alice, 4, "evening");
    alice.send(game.create());
    expect_all(&mut [&mut alice, &mut bob], &game.info());
    // Only the low 16 flag bits are the member's.
    bob.send(ClientRepr::SetMember {
        flags: 0x0003_0005,
        display_name: "Bobby",
    });
    let bobby = member_info(bob.id, 5, "bob", "Bobby");
    expect_all(&mut [&mut alice, &mut bob], &bobby);

    let mut carol = Client::greeted(addr);
    carol.sign_in("carol", "", None);
    assert_eq!(carol.id, 3);
    carol.expect_own_info();
    carol.expect(&info_of(&alice));
    carol.expect(&bobby);
    // The hosted game (id 1, opened at start), golden.
    carol.expect_bytes(&golden(
        "31000000 41000000  01 0400 01000000  01 0400 00000000  02 0400 02000000
         03 0c00 'tictactoe #1'  03 0900 'tictactoe'  03 0100 '1'  02 0400 08000000
         04 0000  04 0000",
    ));
    carol.expect(&game.info());
    carol.expect(&ServerRepr::SyncDone);
    expect_all(&mut [&mut alice, &mut bob], &info_of(&carol));
    carol.expect_quiet();
}

#[test]
fn a_taken_name_is_refused_while_its_member_is_signed_in() {
    let (server, addr) = start_lobby(|_| {});
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut other = Client::greeted(addr);
    other.send(ClientRepr::SignIn {
        username: "alice",
        password: "",
        resume: None,
    });
    other.expect_bytes(&golden(
        "02000000 14000000  03 0a00 'name taken'  02 0400 01000000",
    ));
    // A refusal spends one try, not the connection.
    other.sign_in("bob", "", None);
    other.read_sync();
    alice.expect(&info_of(&other));
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("general_refusals_total", "name_invalid"),
        Some(1)
    );
}

#[test]
fn the_last_refused_try_closes_the_connection() {
    let (server, addr) = start_lobby(|_| {});
    let mut guest = Client::greeted(addr);
    let long = "x".repeat(25);
    for (i, name) in ["", "tab\there", long.as_str()].into_iter().enumerate() {
        guest.send(ClientRepr::SignIn {
            username: name,
            password: "",
            resume: None,
        });
        let refused = ServerRepr::Challenge {
            text: NAME_RULES,
            failed: true,
        };
        if i < 2 {
            guest.expect(&refused);
        } else {
            guest.expect_last(&refused);
        }
    }
    // 24 characters (not bytes) is the longest name.
    let mut zoe = Client::greeted(addr);
    zoe.sign_in(&"ë".repeat(24), "", None);
    let snap = eventually(&server, REPLY_WAIT, |s| {
        s.counter("general_closed_total", "tries_exhausted") == Some(1)
    });
    assert_eq!(
        snap.counter("general_closed_total", "tries_exhausted"),
        Some(1)
    );
    assert_eq!(
        snap.counter("general_refusals_total", "name_invalid"),
        Some(3)
    );
}

/// A lobby with `login` over an account database holding alice ("correct horse"); the
/// database lives as long as the returned guard.
fn start_with_accounts(login: LoginPolicy) -> (TempDb, ServerHandle, SocketAddr) {
    let (db, _) = TempDb::with_users("general", &[("alice", "correct horse")]);
    let path = db.0.clone();
    let (server, addr) = start_lobby(move |c| {
        c.wz.db = path;
        c.general.core.login = login;
        c.general.core.sign_in_tries = 5;
    });
    (db, server, addr)
}

#[test]
fn account_passwords_are_checked_when_login_is_required() {
    let (_db, server, addr) = start_with_accounts(LoginPolicy::Required);
    let mut alice = Client::greeted(addr);
    for (password, why) in [
        ("", "password required"),
        ("battery", "wrong name or password"),
    ] {
        alice.expect_sign_in_refused("alice", password, None, why);
    }
    // No such account reads the same as a wrong password.
    alice.expect_sign_in_refused("mallory", "correct horse", None, "wrong name or password");
    alice.sign_in("alice", "correct horse", None);
    assert_eq!(alice.id, 1);
    alice.expect_own_info();
    alice.expect(&ServerRepr::SyncDone);
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("general_refusals_total", "wrong_password"),
        Some(3)
    );
}

#[test]
fn optional_login_checks_only_the_passwords_given() {
    let (_db, _server, addr) = start_with_accounts(LoginPolicy::Optional);
    let mut guest = Client::enter(addr, "guest", &mut []);
    let mut alice = Client::greeted(addr);
    alice.expect_sign_in_refused("alice", "wrong", None, "wrong name or password");
    alice.sign_in("alice", "correct horse", None);
    alice.read_sync();
    guest.expect(&info_of(&alice));
}

#[test]
fn a_full_lobby_refuses_the_next_member_and_closes() {
    let (server, addr) = start_lobby(|c| c.general.core.max_members = 1);
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::greeted(addr);
    bob.send(ClientRepr::SignIn {
        username: "bob",
        password: "",
        resume: None,
    });
    bob.expect_last(&ServerRepr::Error {
        code: ErrorCode::LimitReached,
        request: code::SIGN_IN,
        text: "lobby full",
    });
    alice.expect_quiet();
    let snap = snapshot(&server);
    assert_eq!(snap.counter("general_closed_total", "lobby_full"), Some(1));
}

#[test]
fn a_connection_that_does_not_sign_in_in_time_is_closed() {
    let (server, addr) = start_lobby(|c| {
        c.general.core.sign_in_timeout = Duration::from_millis(300);
    });
    let mut guest = Client::greeted(addr);
    guest.expect_last(&notice("sign-in timed out"));
    let snap = eventually(&server, REPLY_WAIT, |s| {
        s.counter("general_closed_total", "sign_in_timeout") == Some(1)
    });
    assert_eq!(
        snap.counter("general_closed_total", "sign_in_timeout"),
        Some(1)
    );
}
