//! Chat and relay over loopback (docs/protocols/general-lobby.md, "Chat", "Relay"): the lobby,
//! a game's players and one member; the text rules and the chat rate; TO_OWNER, TO_ALL and
//! TO_PLAYER with who may send them.

use std::time::Duration;

use lobbyd::wire::general::{code, ClientRepr, ErrorCode, ServerRepr};

use super::client::*;
use crate::common::snapshot;

const NOT_IN_GAME: &str = "not a player of this game";
const TEXT_RULES: &str = "chat text is 1 to 512 bytes without control characters";

fn chat(game: i32, text: &str) -> ClientRepr<'_> {
    ClientRepr::Chat { game, text }
}

fn chat_from(game: i32, member: i32, text: &str) -> ServerRepr<'_> {
    ServerRepr::ChatFrom { game, member, text }
}

/// `everyone[0]` owns game 1 with `seats` seats; `joiners` join it (auto-approval), in order.
fn table(everyone: &mut [&mut Client], joiners: &[usize], seats: u32) -> Game {
    let mut game = Game::new(1, everyone[0], seats, "table");
    everyone[0].send(game.create());
    expect_all(everyone, &game.info());
    for (request, &joiner) in (1..).zip(joiners) {
        join_auto(everyone, joiner, &mut game, request);
    }
    game
}

#[test]
fn chat_reaches_the_lobby_a_game_or_one_member() {
    let (server, addr) = start_lobby(|c| {
        c.general.core.auto_approve = true;
        // Carol stays away (not gone) for the rest of the test.
        c.general.core.resume_grace = Duration::from_secs(30);
    });
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let mut carol = Client::enter(addr, "carol", &mut [&mut alice, &mut bob]);
    table(&mut [&mut alice, &mut bob, &mut carol], &[1], 4);

    // The lobby: everyone, the speaker included.
    carol.send(chat(0, "hi all"));
    let line = golden("21000000 17000000  01 0400 00000000  01 0400 03000000  03 0600 'hi all'");
    for member in [&mut alice, &mut bob, &mut carol] {
        member.expect_bytes(&line);
    }
    // A game: its players only, and only a player may speak.
    let (bob_id, carol_id) = (bob.id, carol.id);
    bob.send(chat(1, "gg"));
    expect_all(&mut [&mut alice, &mut bob], &chat_from(1, bob_id, "gg"));
    carol.expect_quiet();
    carol.send(chat(1, "let me in"));
    carol.expect_error(ErrorCode::NotInGame, code::CHAT, NOT_IN_GAME);
    carol.send(chat(99, "anyone?"));
    carol.expect_error(ErrorCode::UnknownGame, code::CHAT, "unknown game");
    // One member: the addressee only.
    alice.send(ClientRepr::PrivateChat {
        to: carol.id,
        text: "psst",
    });
    carol.expect_bytes(&golden(
        "23000000 0e000000  01 0400 01000000  03 0400 'psst'",
    ));
    alice.expect_quiet();
    bob.expect_quiet();
    alice.send(ClientRepr::PrivateChat {
        to: 42,
        text: "hello?",
    });
    alice.expect_error(ErrorCode::UnknownId, code::PRIVATE_CHAT, "unknown member");

    // Text rules: 1 to 512 bytes, no control characters.
    let longest = "é".repeat(256);
    let too_long = format!("{longest}!");
    for text in ["", "two\nlines", too_long.as_str()] {
        bob.send(chat(0, text));
        bob.expect_error(ErrorCode::Malformed, code::CHAT, TEXT_RULES);
    }
    bob.send(ClientRepr::PrivateChat {
        to: alice.id,
        text: "",
    });
    bob.expect_error(ErrorCode::Malformed, code::PRIVATE_CHAT, TEXT_RULES);
    bob.send(chat(0, &longest));
    expect_all(
        &mut [&mut alice, &mut bob, &mut carol],
        &chat_from(0, bob_id, &longest),
    );

    // A member who is away cannot be spoken to.
    carol.drop_connection();
    expect_all(
        &mut [&mut alice, &mut bob],
        &member_info(carol_id, AWAY, "carol", "carol"),
    );
    alice.send(ClientRepr::PrivateChat {
        to: carol_id,
        text: "there?",
    });
    alice.expect_error(ErrorCode::UnknownId, code::PRIVATE_CHAT, "member is away");
    assert_eq!(
        snapshot(&server).counter("general_chat_lines_total", ""),
        Some(4)
    );
}

#[test]
fn chat_over_the_rate_is_refused_and_counted() {
    let (server, addr) = start_lobby(|_| {});
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    // Eleven lines in one write reach the server together: the burst of 10 passes.
    let texts: Vec<String> = (1..=11).map(|n| format!("line {n}")).collect();
    let burst: Vec<u8> = texts
        .iter()
        .flat_map(|text| client_bytes(&chat(0, text)))
        .collect();
    alice.send_raw(&burst);
    for text in &texts[..10] {
        expect_all(&mut [&mut alice, &mut bob], &chat_from(0, 1, text));
    }
    alice.expect_error(ErrorCode::RateLimited, code::CHAT, "chat rate limit");
    bob.expect_quiet();
    // Five lines a second refill the bucket.
    std::thread::sleep(Duration::from_millis(250));
    alice.send(chat(0, "later"));
    expect_all(&mut [&mut alice, &mut bob], &chat_from(0, 1, "later"));
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("general_refusals_total", "rate_limited"),
        Some(1)
    );
    assert_eq!(snap.counter("general_chat_lines_total", ""), Some(11));
}

#[test]
fn relay_reaches_the_owner_every_player_or_one_player() {
    let (server, addr) = start_lobby(|c| c.general.core.auto_approve = true);
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let mut carol = Client::enter(addr, "carol", &mut [&mut alice, &mut bob]);
    let mut dave = Client::enter(addr, "dave", &mut [&mut alice, &mut bob, &mut carol]);
    table(
        &mut [&mut alice, &mut bob, &mut carol, &mut dave],
        &[1, 2],
        4,
    );

    // TO_OWNER: the owner only, naming the sender.
    bob.send(ClientRepr::ToOwner {
        game: 1,
        app_code: 7,
        body: &[1, 2, 3],
    });
    alice.expect_bytes(&golden(
        "46000000 1b000000  01 0400 01000000  01 0400 02000000  02 0400 07000000  04 0300 010203",
    ));
    bob.expect_quiet();
    carol.expect_quiet();
    // TO_ALL: every player, the sender included; an empty body is a body.
    carol.send(ClientRepr::ToAll {
        game: 1,
        app_code: 8,
        body: b"",
    });
    expect_all(
        &mut [&mut alice, &mut bob, &mut carol],
        &game_message(1, 3, 8, b""),
    );
    dave.expect_quiet();
    // TO_PLAYER: from the owner to one player.
    alice.send(ClientRepr::ToPlayer {
        game: 1,
        member: bob.id,
        app_code: 9,
        body: b"you",
    });
    bob.expect(&game_message(1, alice.id, 9, b"you"));
    alice.expect_quiet();
    carol.expect_quiet();

    // Who may send.
    dave.send(ClientRepr::ToOwner {
        game: 1,
        app_code: 1,
        body: b"x",
    });
    dave.expect_error(ErrorCode::NotInGame, code::TO_OWNER, NOT_IN_GAME);
    dave.send(ClientRepr::ToAll {
        game: 1,
        app_code: 1,
        body: b"x",
    });
    dave.expect_error(ErrorCode::NotInGame, code::TO_ALL, NOT_IN_GAME);
    dave.send(ClientRepr::ToOwner {
        game: 42,
        app_code: 1,
        body: b"x",
    });
    dave.expect_error(ErrorCode::UnknownGame, code::TO_OWNER, "unknown game");
    bob.send(ClientRepr::ToPlayer {
        game: 1,
        member: carol.id,
        app_code: 1,
        body: b"x",
    });
    bob.expect_error(
        ErrorCode::NotOwner,
        code::TO_PLAYER,
        "only the owner may do this",
    );
    for (member, error, text) in [
        (dave.id, ErrorCode::NotInGame, NOT_IN_GAME),
        (99, ErrorCode::UnknownId, "unknown member"),
    ] {
        alice.send(ClientRepr::ToPlayer {
            game: 1,
            member,
            app_code: 1,
            body: b"x",
        });
        alice.expect_error(error, code::TO_PLAYER, text);
    }
    for member in [&mut alice, &mut bob, &mut carol, &mut dave] {
        member.expect_quiet();
    }
    assert_eq!(
        snapshot(&server).counter("general_relayed_total", ""),
        Some(3)
    );
}
