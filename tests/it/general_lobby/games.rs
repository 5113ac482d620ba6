//! Games over loopback (docs/protocols/general-lobby.md, "Games", "Joining", "Owners",
//! "Game data", "Listing"): creation and join with each refusal, approval and refusal by the
//! owner, the ask timeout, auto-approval, the owner leaving mid-game (ownership and data
//! passed on), kick, give owner, start, list filters.

use std::time::{Duration, Instant};

use lobbyd::wire::general::{code, ClientRepr, ErrorCode, ServerRepr};

use super::client::*;
use crate::common::snapshot;

const NOT_OWNER: &str = "only the owner may do this";
const NOT_IN_GAME: &str = "not a player of this game";

/// A CREATE_GAME with `max_players` seats and nothing else of note.
fn create_with_seats(max_players: u32) -> ClientRepr<'static> {
    ClientRepr::CreateGame {
        max_players,
        game_type: "chess",
        version: "1.0",
        flags: 0,
        name: "extra",
        password: "",
    }
}

/// STORE_DATA on game 1.
fn store<'a>(key: &'a str, value: &'a [u8]) -> ClientRepr<'a> {
    ClientRepr::StoreData {
        game: 1,
        key,
        value,
    }
}

/// FETCH_DATA on game 1.
fn fetch(key: &str) -> ClientRepr<'_> {
    ClientRepr::FetchData { game: 1, key }
}

/// `owner` reads `key` of game 1 and gets `value` (empty when absent).
#[track_caller]
fn expect_data(owner: &mut Client, key: &str, value: &[u8]) {
    owner.send(fetch(key));
    owner.expect(&ServerRepr::DataValue {
        game: 1,
        key,
        value,
    });
}

/// The JOIN_ASK an owner gets when `member` asks to join `game`.
fn join_ask(game: i32, member: &Client, ask: i32) -> ServerRepr<'static> {
    ServerRepr::JoinAsk {
        game,
        member: member.id,
        ask,
    }
}

#[test]
fn create_and_join_refusals_answer_at_once_and_the_owner_decides_the_rest() {
    let (server, addr) = start_lobby(|c| {
        c.general.core.max_games_per_member = 2;
        c.general.core.max_games = 3;
    });
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let mut carol = Client::enter(addr, "carol", &mut [&mut alice, &mut bob]);
    let mut dave = Client::enter(addr, "dave", &mut [&mut alice, &mut bob, &mut carol]);

    for seats in [0, 257] {
        alice.send(create_with_seats(seats));
        alice.expect_error(
            ErrorCode::LimitReached,
            code::CREATE_GAME,
            "max players out of range",
        );
    }
    let mut open = Game::new(1, &alice, 2, "open");
    alice.send(open.create());
    let open_info = golden(
        "31000000 3f000000  01 0400 01000000  01 0400 01000000  02 0400 02000000
         03 0400 'open'  03 0500 'chess'  03 0300 '1.0'  02 0400 00000000
         04 0400 01000000  04 0400 01000000",
    );
    for member in [&mut alice, &mut bob, &mut carol, &mut dave] {
        member.expect_bytes(&open_info);
    }
    let locked = Game {
        flags: 1,
        password: "pw",
        ..Game::new(2, &alice, 4, "locked")
    };
    let closed = Game {
        flags: 2,
        ..Game::new(3, &bob, 4, "closed")
    };
    {
        let everyone = &mut [&mut alice, &mut bob, &mut carol, &mut dave];
        for (owner, game) in [(0, &locked), (1, &closed)] {
            everyone[owner].send(game.create());
            expect_all(everyone, &game.info());
        }
    }
    alice.send(create_with_seats(4));
    alice.expect_error(ErrorCode::LimitReached, code::CREATE_GAME, "too many games");
    carol.send(create_with_seats(4));
    carol.expect_error(
        ErrorCode::LimitReached,
        code::CREATE_GAME,
        "no more games allowed",
    );

    // The article's checks, in its order, answered without bothering the owner.
    carol.send(join_request(99, 1, ""));
    carol.expect_bytes(&golden(
        "36000000 24000000  01 0400 63000000  01 0400 01000000  02 0400 00000000
         03 0c00 'unknown game'",
    ));
    alice.send(join_request(1, 2, ""));
    alice.expect(&join_response(1, 2, false, "already in the game"));
    carol.send(join_request(3, 3, ""));
    carol.expect(&join_response(3, 3, false, "game closed"));
    carol.send(join_request(2, 4, "nope"));
    carol.expect(&join_response(2, 4, false, "wrong password"));
    alice.expect_quiet();
    bob.expect_quiet();

    // Passing requests go to the owner, who answers by ask id.
    bob.send(join_request(1, 5, ""));
    alice.expect_bytes(&golden(
        "34000000 15000000  01 0400 01000000  01 0400 02000000  01 0400 01000000",
    ));
    carol.send(join_request(1, 6, ""));
    alice.expect(&join_ask(1, &carol, 2));
    bob.send(join_request(1, 7, ""));
    bob.expect(&join_response(1, 7, false, "already asked"));
    bob.send(answer(1, true, ""));
    bob.expect_error(ErrorCode::UnknownId, code::JOIN_ANSWER, "unknown ask id");
    alice.send(answer(99, true, ""));
    alice.expect_error(ErrorCode::UnknownId, code::JOIN_ANSWER, "unknown ask id");
    alice.send(answer(1, true, "welcome"));
    bob.expect(&join_response(1, 5, true, "welcome"));
    open.seat(bob.id);
    expect_all(
        &mut [&mut alice, &mut bob, &mut carol, &mut dave],
        &open.info(),
    );
    // The seat is checked again when the owner answers.
    alice.send(answer(2, true, ""));
    carol.expect(&join_response(1, 6, false, "game full"));
    dave.send(join_request(1, 8, ""));
    dave.expect(&join_response(1, 8, false, "game full"));
    // Bob plays in one game and owns another: the limit of 2 is reached.
    bob.send(join_request(2, 9, "pw"));
    bob.expect(&join_response(2, 9, false, "too many games"));

    // Refusals by the owner, with its reason or the server's.
    carol.send(join_request(2, 10, "pw"));
    alice.expect(&join_ask(2, &carol, 3));
    alice.send(answer(3, false, ""));
    carol.expect(&join_response(2, 10, false, "refused by the owner"));
    carol.send(join_request(2, 11, "pw"));
    alice.expect(&join_ask(2, &carol, 4));
    alice.send(answer(4, false, "not today"));
    carol.expect(&join_response(2, 11, false, "not today"));
    for member in [&mut alice, &mut bob, &mut carol, &mut dave] {
        member.expect_quiet();
    }

    let snap = snapshot(&server);
    for (label, count) in [
        ("unknown_game", 1),
        ("already_in_game", 2),
        ("closed", 1),
        ("wrong_password", 1),
        ("full", 2),
        ("limit_reached", 5),
        ("unknown_id", 2),
    ] {
        assert_eq!(
            snap.counter("general_refusals_total", label),
            Some(count),
            "{label}"
        );
    }
    assert_eq!(snap.counter("general_asks_total", ""), Some(4));
    assert_eq!(snap.counter("general_joins_total", ""), Some(1));
}

#[test]
fn an_unanswered_ask_expires() {
    let (server, addr) = start_lobby(|_| {});
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let game = Game::new(1, &alice, 4, "slow");
    alice.send(game.create());
    expect_all(&mut [&mut alice, &mut bob], &game.info());
    let asked = Instant::now();
    bob.send(join_request(1, 5, ""));
    alice.expect(&join_ask(1, &bob, 1));
    bob.expect(&join_response(1, 5, false, "no answer"));
    assert!(
        asked.elapsed() >= Duration::from_secs(1),
        "the 1 s ask timeout"
    );
    alice.send(answer(1, true, ""));
    alice.expect_error(ErrorCode::UnknownId, code::JOIN_ANSWER, "unknown ask id");
    bob.expect_quiet();
    assert_eq!(
        snapshot(&server).counter("general_asks_expired_total", ""),
        Some(1)
    );
}

#[test]
fn auto_approval_seats_passing_requests_without_asking() {
    let (server, addr) = start_lobby(|c| c.general.core.auto_approve = true);
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let mut carol = Client::enter(addr, "carol", &mut [&mut alice, &mut bob]);
    let mut game = Game::new(1, &alice, 2, "quick");
    alice.send(game.create());
    expect_all(&mut [&mut alice, &mut bob, &mut carol], &game.info());
    bob.send(join_request(1, 5, ""));
    bob.expect(&join_response(1, 5, true, ""));
    game.seat(bob.id);
    expect_all(&mut [&mut alice, &mut bob, &mut carol], &game.info());
    // The checks still come first.
    carol.send(join_request(1, 6, ""));
    carol.expect(&join_response(1, 6, false, "game full"));
    alice.expect_quiet();
    assert_eq!(snapshot(&server).counter("general_asks_total", ""), Some(0));
}

#[test]
fn an_owner_leaving_mid_game_hands_over_the_game_and_its_data() {
    let (server, addr) = start_lobby(|c| {
        c.general.core.auto_approve = true;
        c.general.core.resume_grace = Duration::from_millis(300);
        c.general.core.game_data = 100;
    });
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let mut carol = Client::enter(addr, "carol", &mut [&mut alice, &mut bob]);
    let mut dave = Client::enter(addr, "dave", &mut [&mut alice, &mut bob, &mut carol]);
    let mut game = Game::new(1, &alice, 4, "match");
    alice.send(game.create());
    expect_all(
        &mut [&mut alice, &mut bob, &mut carol, &mut dave],
        &game.info(),
    );
    {
        let everyone = &mut [&mut alice, &mut bob, &mut carol, &mut dave];
        join_auto(everyone, 1, &mut game, 1);
        join_auto(everyone, 2, &mut game, 2);
    }

    // Game data is the owner's.
    alice.send(store("map", b"island"));
    alice.send(fetch("map"));
    alice.expect_bytes(&golden(
        "42000000 16000000  01 0400 01000000  03 0300 'map'  04 0600 'island'",
    ));
    bob.send(store("map", b"desert"));
    bob.expect_error(ErrorCode::NotOwner, code::STORE_DATA, NOT_OWNER);
    bob.send(fetch("map"));
    bob.expect_error(ErrorCode::NotOwner, code::FETCH_DATA, NOT_OWNER);
    // 100 bytes per game, each key costing 32 more: "map" holds 41 already.
    alice.send(store("big", &[0; 25]));
    alice.expect_error(ErrorCode::LimitReached, code::STORE_DATA, "game data full");
    alice.send(store("big", &[0; 24]));
    alice.send(store("big", b""));
    alice.expect_quiet();

    // Ready flags and the start.
    bob.send(ClientRepr::SetReady {
        game: 1,
        ready: false,
    });
    game.ready[1] = 0;
    expect_all(
        &mut [&mut alice, &mut bob, &mut carol, &mut dave],
        &game.info(),
    );
    bob.send(ClientRepr::StartGame { game: 1 });
    bob.expect_error(ErrorCode::NotOwner, code::START_GAME, NOT_OWNER);
    alice.send(ClientRepr::StartGame { game: 1 });
    game.flags = 4;
    let started = golden("3b000000 0e000000  01 0400 01000000  02 0400 04000000");
    for player in [&mut alice, &mut bob, &mut carol] {
        player.expect(&game.info());
        player.expect_bytes(&started);
    }
    dave.expect(&game.info());
    // Starting a game under way changes nothing.
    alice.send(ClientRepr::StartGame { game: 1 });
    alice.expect_quiet();

    // The owner leaves: the next player in join order owns the game, ready, with its data.
    alice.send(ClientRepr::LeaveGame { game: 1 });
    game.unseat(alice.id);
    game.owner = bob.id;
    game.ready[0] = 1;
    expect_all(
        &mut [&mut alice, &mut bob, &mut carol, &mut dave],
        &game.info(),
    );
    alice.send(ClientRepr::LeaveGame { game: 1 });
    alice.expect_error(ErrorCode::NotInGame, code::LEAVE_GAME, NOT_IN_GAME);
    expect_data(&mut bob, "map", b"island");
    bob.send(store("map", b""));
    expect_data(&mut bob, "map", b"");
    bob.send(store("score", b"3-1"));

    // A latecomer to a game under way is told it started.
    dave.send(join_request(1, 3, ""));
    dave.expect(&join_response(1, 3, true, ""));
    game.seat(dave.id);
    expect_all(
        &mut [&mut alice, &mut bob, &mut carol, &mut dave],
        &game.info(),
    );
    dave.expect_bytes(&started);

    // The owner's connection drops: after its resume grace, the game passes on again.
    let bob_id = bob.id;
    bob.drop_connection();
    let away = member_info(bob_id, AWAY, "bob", "bob");
    expect_all(&mut [&mut alice, &mut carol, &mut dave], &away);
    game.unseat(bob_id);
    game.owner = carol.id;
    for member in [&mut alice, &mut carol, &mut dave] {
        member.expect(&game.info());
        member.expect(&ServerRepr::MemberLeft { id: bob_id });
    }
    expect_data(&mut carol, "score", b"3-1");

    // The last player out closes the game.
    carol.send(ClientRepr::LeaveGame { game: 1 });
    game.unseat(carol.id);
    game.owner = dave.id;
    expect_all(&mut [&mut alice, &mut carol, &mut dave], &game.info());
    dave.send(ClientRepr::LeaveGame { game: 1 });
    let closed = golden("32000000 07000000  01 0400 01000000");
    for member in [&mut alice, &mut carol, &mut dave] {
        member.expect_bytes(&closed);
    }
    let snap = snapshot(&server);
    assert_eq!(snap.counter("general_games_closed_total", ""), Some(1));
    assert!(snap.general.expect("general snapshot").games.is_empty());
}

/// `joiner` asks to join `game` and its owner accepts the ask `ask`; everyone sees the seat.
fn join_by_ask(
    everyone: &mut [&mut Client],
    owner: usize,
    joiner: usize,
    game: &mut Game,
    ask: i32,
) {
    everyone[joiner].send(join_request(game.id, ask, ""));
    let asking = join_ask(game.id, everyone[joiner], ask);
    everyone[owner].expect(&asking);
    everyone[owner].send(answer(ask, true, ""));
    everyone[joiner].expect(&join_response(game.id, ask, true, ""));
    game.seat(everyone[joiner].id);
    expect_all(everyone, &game.info());
}

#[test]
fn the_owner_kicks_and_gives_the_game_away_with_its_asks() {
    let (_server, addr) = start_lobby(|c| c.general.core.ask_timeout = Duration::from_secs(30));
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let mut carol = Client::enter(addr, "carol", &mut [&mut alice, &mut bob]);
    let mut dave = Client::enter(addr, "dave", &mut [&mut alice, &mut bob, &mut carol]);
    let mut game = Game::new(1, &alice, 4, "club");
    alice.send(game.create());
    {
        let everyone = &mut [&mut alice, &mut bob, &mut carol, &mut dave];
        expect_all(everyone, &game.info());
        join_by_ask(everyone, 0, 1, &mut game, 1);
        join_by_ask(everyone, 0, 2, &mut game, 2);
    }
    let kick = |member: i32, reason| ClientRepr::Kick {
        game: 1,
        member,
        reason,
    };

    bob.send(kick(carol.id, "x"));
    bob.expect_error(ErrorCode::NotOwner, code::KICK, NOT_OWNER);
    alice.send(kick(alice.id, ""));
    alice.expect_error(
        ErrorCode::UnknownId,
        code::KICK,
        "cannot kick yourself, leave",
    );
    alice.send(kick(99, ""));
    alice.expect_error(ErrorCode::UnknownId, code::KICK, "unknown member");
    alice.send(kick(dave.id, ""));
    alice.expect_error(ErrorCode::NotInGame, code::KICK, NOT_IN_GAME);
    alice.send(kick(carol.id, "bye"));
    carol.expect_bytes(&golden(
        "3d000000 0d000000  01 0400 01000000  03 0300 'bye'",
    ));
    game.unseat(carol.id);
    expect_all(
        &mut [&mut alice, &mut bob, &mut carol, &mut dave],
        &game.info(),
    );
    carol.send(ClientRepr::Chat {
        game: 1,
        text: "hey",
    });
    carol.expect_error(ErrorCode::NotInGame, code::CHAT, NOT_IN_GAME);

    // An ask waiting when the owner gives the game away goes to the new owner.
    dave.send(join_request(1, 3, ""));
    alice.expect(&join_ask(1, &dave, 3));
    bob.send(ClientRepr::SetReady {
        game: 1,
        ready: false,
    });
    game.ready[1] = 0;
    expect_all(
        &mut [&mut alice, &mut bob, &mut carol, &mut dave],
        &game.info(),
    );
    let give = |member: i32| ClientRepr::GiveOwner { game: 1, member };
    alice.send(give(bob.id));
    bob.expect(&join_ask(1, &dave, 3));
    game.owner = bob.id;
    game.ready[1] = 1;
    expect_all(
        &mut [&mut alice, &mut bob, &mut carol, &mut dave],
        &game.info(),
    );
    alice.send(give(alice.id));
    alice.expect_error(ErrorCode::NotOwner, code::GIVE_OWNER, NOT_OWNER);
    alice.send(answer(3, true, ""));
    alice.expect_error(ErrorCode::UnknownId, code::JOIN_ANSWER, "unknown ask id");
    bob.send(give(dave.id));
    bob.expect_error(ErrorCode::NotInGame, code::GIVE_OWNER, NOT_IN_GAME);
    bob.send(give(99));
    bob.expect_error(ErrorCode::UnknownId, code::GIVE_OWNER, "unknown member");
    // To itself: nothing happens.
    bob.send(give(bob.id));
    bob.expect_quiet();
    bob.send(answer(3, true, "hi"));
    dave.expect(&join_response(1, 3, true, "hi"));
    game.seat(dave.id);
    expect_all(
        &mut [&mut alice, &mut bob, &mut carol, &mut dave],
        &game.info(),
    );
}

#[test]
fn list_games_filters_by_type_flags_and_free_seats() {
    let (_server, addr) = start_lobby(|c| c.general.core.auto_approve = true);
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let mut carol = Client::enter(addr, "carol", &mut [&mut alice, &mut bob]);
    let duel = Game::new(1, &alice, 2, "duel");
    let club = Game {
        flags: 1,
        password: "pw",
        ..Game::new(2, &alice, 4, "club")
    };
    let mut board = Game {
        game_type: "go",
        ..Game::new(3, &bob, 2, "board")
    };
    for game in [&duel, &club] {
        alice.send(game.create());
        expect_all(&mut [&mut alice, &mut bob, &mut carol], &game.info());
    }
    bob.send(board.create());
    expect_all(&mut [&mut alice, &mut bob, &mut carol], &board.info());
    carol.send(join_request(3, 1, ""));
    carol.expect(&join_response(3, 1, true, ""));
    board.seat(carol.id);
    expect_all(&mut [&mut alice, &mut bob, &mut carol], &board.info());

    let list = |game_type, flags_clear, min_free| ClientRepr::ListGames {
        game_type,
        flags_clear,
        min_free,
    };
    carol.send(list("", 0, 0));
    for game in [&duel, &club, &board] {
        carol.expect(&game.info());
    }
    carol.expect_bytes(&golden("51000000 07000000  02 0400 03000000"));
    for (filter, games) in [
        (list("chess", 0, 0), vec![&duel, &club]),
        (list("", 1, 0), vec![&duel, &board]),
        (list("", 0, 2), vec![&club]),
        (list("chess", 1, 1), vec![&duel]),
        (list("go", 0, 1), vec![]),
    ] {
        carol.send(filter);
        for game in &games {
            carol.expect(&game.info());
        }
        carol.expect(&ServerRepr::GameListEnd {
            count: games.len() as u32,
        });
    }

    // SET_GAME changes the client's flags only (8, hosted, is the server's), owner only.
    let set = |flags| ClientRepr::SetGame {
        game: 1,
        flags,
        password: "",
    };
    bob.send(set(2));
    bob.expect_error(ErrorCode::NotOwner, code::SET_GAME, NOT_OWNER);
    alice.send(set(2 | 8));
    let shut = Game {
        flags: 2,
        ..duel.clone()
    };
    expect_all(&mut [&mut alice, &mut bob, &mut carol], &shut.info());
    carol.send(list("chess", 2, 0));
    carol.expect(&club.info());
    carol.expect(&ServerRepr::GameListEnd { count: 1 });
    alice.expect_quiet();
    bob.expect_quiet();
}
