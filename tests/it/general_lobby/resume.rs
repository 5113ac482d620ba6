//! Resume over loopback (docs/protocols/general-lobby.md, "Resume"): a dropped member is away
//! for the grace, comes back with its WELCOME token to the same id, seats, ownership and waiting
//! asks, or leaves once the grace is over; tokens are single-use and tied to their username.

use std::time::Duration;

use lobbyd::wire::general::{ClientRepr, ServerRepr};

use super::client::*;
use crate::common::{eventually, snapshot, REPLY_WAIT};

const BAD_TOKEN: &str = "resume token unknown, used or expired";

#[test]
fn a_member_back_within_the_grace_keeps_its_id_seats_ownership_and_asks() {
    let (server, addr) = start_lobby(|c| {
        c.general.core.resume_grace = Duration::from_secs(5);
        c.general.core.ask_timeout = Duration::from_secs(30);
    });
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let mut game = Game::new(1, &bob, 4, "bob's");
    bob.send(game.create());
    expect_all(&mut [&mut alice, &mut bob], &game.info());
    alice.send(join_request(1, 1, ""));
    bob.expect(&ServerRepr::JoinAsk {
        game: 1,
        member: alice.id,
        ask: 1,
    });
    bob.send(answer(1, true, ""));
    alice.expect(&join_response(1, 1, true, ""));
    game.seat(alice.id);
    expect_all(&mut [&mut alice, &mut bob], &game.info());
    bob.send(ClientRepr::SetMember {
        flags: 3,
        display_name: "B",
    });
    let bob_info = member_info(bob.id, 3, "bob", "B");
    expect_all(&mut [&mut alice, &mut bob], &bob_info);

    // Bob's connection drops: away, seats kept.
    let (bob_id, old_token) = (bob.id, bob.token);
    bob.drop_connection();
    alice.expect(&member_info(bob_id, AWAY | 3, "bob", "B"));
    let mut carol = Client::enter(addr, "carol", &mut [&mut alice]);
    // An ask for an away owner waits for it.
    carol.send(join_request(1, 2, ""));
    carol.expect_quiet();

    let mut bob = Client::greeted(addr);
    bob.sign_in("bob", "", Some(&old_token));
    assert_eq!(bob.id, bob_id);
    assert_ne!(bob.token, old_token, "a token is single-use");
    bob.expect(&bob_info);
    bob.expect(&info_of(&alice));
    bob.expect(&info_of(&carol));
    bob.expect(&game.info());
    bob.expect(&ServerRepr::SyncDone);
    bob.expect(&ServerRepr::JoinAsk {
        game: 1,
        member: carol.id,
        ask: 2,
    });
    expect_all(&mut [&mut alice, &mut carol], &bob_info);
    bob.send(answer(2, true, ""));
    carol.expect(&join_response(1, 2, true, ""));
    game.seat(carol.id);
    expect_all(&mut [&mut alice, &mut bob, &mut carol], &game.info());

    // The old token is spent; the new one is bob's alone.
    let mut other = Client::greeted(addr);
    other.expect_sign_in_refused("bob", "", Some(&old_token), BAD_TOKEN);
    other.expect_sign_in_refused("alice", "", Some(&bob.token), BAD_TOKEN);
    // With the live token, a new connection takes the session over from a half-dead one;
    // the others saw no change.
    other.sign_in("bob", "", Some(&bob.token));
    assert_eq!(other.id, bob_id);
    other.read_sync();
    bob.expect_last(&notice("session resumed on another connection"));
    alice.expect_quiet();
    carol.expect_quiet();
    let snap = snapshot(&server);
    assert_eq!(snap.counter("general_resumes_total", ""), Some(2));
    assert_eq!(snap.counter("general_closed_total", "replaced"), Some(1));
    assert_eq!(
        snap.counter("general_refusals_total", "wrong_password"),
        Some(2)
    );
}

#[test]
fn a_member_gone_past_the_grace_has_left_and_its_token_is_dead() {
    let (server, addr) = start_lobby(|c| {
        c.general.core.resume_grace = Duration::from_millis(300);
        c.general.core.auto_approve = true;
    });
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let mut game = Game::new(1, &bob, 2, "bob's");
    bob.send(game.create());
    expect_all(&mut [&mut alice, &mut bob], &game.info());
    alice.send(join_request(1, 1, ""));
    alice.expect(&join_response(1, 1, true, ""));
    game.seat(alice.id);
    expect_all(&mut [&mut alice, &mut bob], &game.info());

    let (bob_id, old_token) = (bob.id, bob.token);
    bob.drop_connection();
    alice.expect(&member_info(bob_id, AWAY, "bob", "bob"));
    // The grace runs out: bob's seat goes (alice owns the game now), then bob.
    game.unseat(bob_id);
    game.owner = alice.id;
    alice.expect(&game.info());
    alice.expect_bytes(&golden("11000000 07000000  01 0400 02000000"));

    let mut bob = Client::greeted(addr);
    bob.expect_sign_in_refused("bob", "", Some(&old_token), BAD_TOKEN);
    // The name is free again, for a new member.
    bob.sign_in("bob", "", None);
    assert_eq!(bob.id, 3);
    bob.expect_own_info();
    bob.expect(&info_of(&alice));
    bob.expect(&game.info());
    bob.expect(&ServerRepr::SyncDone);
    alice.expect(&info_of(&bob));
    let snap = eventually(&server, REPLY_WAIT, |s| {
        s.counter("general_members_left_total", "grace_expired") == Some(1)
    });
    assert_eq!(
        snap.counter("general_members_left_total", "grace_expired"),
        Some(1)
    );
    let general = snap.general.expect("general snapshot");
    assert_eq!((general.members, general.members_away), (2, 0));
}
