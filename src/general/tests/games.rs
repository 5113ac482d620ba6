//! Games: creation and its limits, the join checks in the article's order, asks (approval,
//! refusal, timeout, auto-approval, re-sent to a new owner), ownership transfer with the data
//! kept, kick, give owner, ready and start (coalesced), closing, game data, list filters.

use std::time::Duration;

use super::{config, Harness};
use crate::general::{GeneralConfig, MemberId};
use crate::wire::general::{
    code, ClientRepr, ErrorCode, GameInfo, ServerRepr, Words, GAME_CLOSED, GAME_IN_PROGRESS,
    GAME_LOCKED,
};

/// GAME_INFO of a game made by [`create`].
pub(crate) fn info<'a>(
    id: i32,
    owner: i32,
    max_players: u32,
    flags: u32,
    players: &'a [i32],
    player_flags: &'a [u32],
) -> ServerRepr<'a> {
    ServerRepr::GameInfo(GameInfo {
        id,
        owner,
        max_players,
        name: "g",
        game_type: "chess",
        version: "1",
        flags,
        players: Words::new(players),
        player_flags: Words::new(player_flags),
    })
}

/// CREATE_GAME "g" of type "chess", version "1", password "pw".
pub(crate) fn create(sim: &mut Harness, conn: usize, max_players: u32, flags: u32) {
    sim.send(
        conn,
        ClientRepr::CreateGame {
            max_players,
            game_type: "chess",
            version: "1",
            flags,
            name: "g",
            password: "pw",
        },
    );
}

pub(crate) fn join(sim: &mut Harness, conn: usize, game: i32, request: i32, password: &str) {
    sim.send(
        conn,
        ClientRepr::JoinRequest {
            game,
            request,
            password,
        },
    );
}

pub(crate) fn answer(sim: &mut Harness, conn: usize, ask: i32, accept: bool, reason: &str) {
    sim.send(
        conn,
        ClientRepr::JoinAnswer {
            ask,
            accept,
            reason,
        },
    );
}

fn response(game: i32, request: i32, accepted: bool, reason: &str) -> ServerRepr<'_> {
    ServerRepr::JoinResponse {
        game,
        request,
        accepted,
        reason,
    }
}

fn ask(game: i32, member: i32, ask: i32) -> ServerRepr<'static> {
    ServerRepr::JoinAsk { game, member, ask }
}

/// Alice (1) on conn 1, Bob (2) on conn 2, Carol (3) on conn 3.
fn three(config: GeneralConfig) -> Harness {
    let mut sim = Harness::new(config);
    for (conn, name) in [(1, "alice"), (2, "bob"), (3, "carol")] {
        assert_eq!(sim.member(conn, name), MemberId(conn as i32));
    }
    sim
}

/// [`three`] with auto-approval, where Alice owns game 1 (3 seats) and Bob plays in it; the
/// inboxes are not cleared.
fn owner_and_player() -> Harness {
    let mut sim = three(GeneralConfig {
        auto_approve: true,
        ..config()
    });
    create(&mut sim, 1, 3, 0);
    join(&mut sim, 2, 1, 1, "");
    sim
}

#[test]
fn create_then_join_with_the_owners_approval() {
    let mut sim = three(config());
    create(&mut sim, 1, 3, 0);
    for conn in 1..=3 {
        sim.expect(conn, &[info(1, 1, 3, 0, &[1], &[1])]);
    }
    join(&mut sim, 2, 1, 7, "");
    sim.expect(1, &[ask(1, 2, 1)]);
    sim.expect_none(2);
    answer(&mut sim, 1, 1, true, "welcome");
    sim.expect(
        2,
        &[
            response(1, 7, true, "welcome"),
            info(1, 1, 3, 0, &[1, 2], &[1, 1]),
        ],
    );
    sim.expect(1, &[info(1, 1, 3, 0, &[1, 2], &[1, 1])]);
    sim.expect(3, &[info(1, 1, 3, 0, &[1, 2], &[1, 1])]);
    // Carol is refused; an empty reason gets the server's.
    join(&mut sim, 3, 1, 8, "");
    sim.expect(1, &[ask(1, 3, 2)]);
    answer(&mut sim, 1, 2, false, "");
    sim.expect(3, &[response(1, 8, false, "refused by the owner")]);
    // An ask answered, or one never sent to the sender, is unknown.
    answer(&mut sim, 1, 2, true, "");
    sim.expect_error(1, ErrorCode::UnknownId, code::JOIN_ANSWER);
    join(&mut sim, 3, 1, 9, "");
    sim.take(1);
    answer(&mut sim, 2, 3, true, "");
    sim.expect_error(2, ErrorCode::UnknownId, code::JOIN_ANSWER);
    assert_eq!(sim.lobby.ask_count(), 1);
    let stats = sim.lobby.stats();
    assert_eq!((stats.games_created, stats.asks, stats.joins), (1, 3, 1));
}

#[test]
fn join_checks_in_the_articles_order() {
    let mut sim = three(GeneralConfig {
        max_games_per_member: 2,
        ..config()
    });
    create(&mut sim, 1, 2, GAME_LOCKED);
    sim.clear();
    join(&mut sim, 2, 9, 1, "");
    sim.expect(2, &[response(9, 1, false, "unknown game")]);
    join(&mut sim, 1, 1, 2, "pw");
    sim.expect(1, &[response(1, 2, false, "already in the game")]);
    join(&mut sim, 2, 1, 3, "nope");
    sim.expect(2, &[response(1, 3, false, "wrong password")]);
    join(&mut sim, 2, 1, 4, "pw");
    sim.expect(1, &[ask(1, 2, 1)]);
    join(&mut sim, 2, 1, 5, "pw");
    sim.expect(2, &[response(1, 5, false, "already asked")]);
    answer(&mut sim, 1, 1, true, "");
    sim.clear();
    // Full comes before closed, closed before the password.
    sim.send(
        1,
        ClientRepr::SetGame {
            game: 1,
            flags: GAME_LOCKED | GAME_CLOSED,
            password: "pw",
        },
    );
    sim.clear();
    join(&mut sim, 3, 1, 6, "nope");
    sim.expect(3, &[response(1, 6, false, "game full")]);
    sim.send(2, ClientRepr::LeaveGame { game: 1 });
    sim.clear();
    join(&mut sim, 3, 1, 7, "nope");
    sim.expect(3, &[response(1, 7, false, "game closed")]);
    // Games per member: Bob creates one and asks for another.
    create(&mut sim, 2, 2, 0);
    create(&mut sim, 2, 2, 0);
    sim.clear();
    create(&mut sim, 3, 2, 0);
    sim.clear();
    join(&mut sim, 2, 4, 8, "");
    sim.expect(2, &[response(4, 8, false, "too many games")]);
    let stats = sim.lobby.stats();
    for (code, count) in [
        (ErrorCode::UnknownGame, 1),
        (ErrorCode::AlreadyInGame, 2),
        (ErrorCode::WrongPassword, 1),
        (ErrorCode::Full, 1),
        (ErrorCode::Closed, 1),
        (ErrorCode::LimitReached, 1),
    ] {
        assert_eq!(stats.refusals_of(code), count, "{code:?}");
    }
}

#[test]
fn the_seat_is_checked_again_at_answer_time() {
    let mut sim = three(config());
    create(&mut sim, 1, 2, 0);
    join(&mut sim, 2, 1, 1, "");
    join(&mut sim, 3, 1, 2, "");
    sim.clear();
    answer(&mut sim, 1, 1, true, "");
    answer(&mut sim, 1, 2, true, "");
    sim.expect(
        3,
        &[
            info(1, 1, 2, 0, &[1, 2], &[1, 1]),
            response(1, 2, false, "game full"),
        ],
    );
    assert_eq!(sim.lobby.stats().refusals_of(ErrorCode::Full), 1);
}

#[test]
fn an_unanswered_ask_expires() {
    let mut sim = three(config());
    create(&mut sim, 1, 3, 0);
    join(&mut sim, 2, 1, 7, "");
    sim.clear();
    sim.advance(Duration::from_secs(29));
    sim.expect_none(2);
    sim.advance(Duration::from_millis(1100));
    sim.expect(2, &[response(1, 7, false, "no answer")]);
    answer(&mut sim, 1, 1, true, "");
    sim.expect_error(1, ErrorCode::UnknownId, code::JOIN_ANSWER);
    assert_eq!(sim.lobby.stats().asks_expired, 1);
    assert_eq!(sim.lobby.ask_count(), 0);
}

#[test]
fn auto_approve_answers_for_the_owner() {
    let mut sim = three(GeneralConfig {
        auto_approve: true,
        ..config()
    });
    create(&mut sim, 1, 3, 0);
    sim.clear();
    join(&mut sim, 2, 1, 7, "");
    sim.expect(
        2,
        &[response(1, 7, true, ""), info(1, 1, 3, 0, &[1, 2], &[1, 1])],
    );
    sim.expect(1, &[info(1, 1, 3, 0, &[1, 2], &[1, 1])]);
    assert_eq!(sim.lobby.stats().asks, 0);
}

#[test]
fn the_owner_leaving_mid_game_hands_over_with_the_data() {
    let mut sim = three(config());
    sim.member(4, "dave");
    create(&mut sim, 1, 4, 0);
    sim.send(
        1,
        ClientRepr::StoreData {
            game: 1,
            key: "map",
            value: &[1, 2],
        },
    );
    for (conn, ask_id) in [(2, 1), (3, 2)] {
        join(&mut sim, conn, 1, conn as i32, "");
        answer(&mut sim, 1, ask_id, true, "");
    }
    sim.send(
        2,
        ClientRepr::SetReady {
            game: 1,
            ready: false,
        },
    );
    sim.send(1, ClientRepr::StartGame { game: 1 });
    join(&mut sim, 4, 1, 9, "");
    sim.clear();
    sim.send(1, ClientRepr::LeaveGame { game: 1 });
    // Bob is next in join order: owner, ready again, and handed Dave's waiting ask.
    let after = info(1, 2, 4, GAME_IN_PROGRESS, &[2, 3], &[1, 1]);
    sim.expect(2, &[ask(1, 4, 3), after]);
    sim.expect(3, &[after]);
    sim.expect(1, &[after]);
    sim.expect(4, &[after]);
    sim.send(
        2,
        ClientRepr::FetchData {
            game: 1,
            key: "map",
        },
    );
    sim.expect(
        2,
        &[ServerRepr::DataValue {
            game: 1,
            key: "map",
            value: &[1, 2],
        }],
    );
    sim.send(
        1,
        ClientRepr::FetchData {
            game: 1,
            key: "map",
        },
    );
    sim.expect_error(1, ErrorCode::NotOwner, code::FETCH_DATA);
    // The new owner answers the ask; a late joiner is told the game is under way.
    answer(&mut sim, 2, 3, true, "");
    let joined = info(1, 2, 4, GAME_IN_PROGRESS, &[2, 3, 4], &[1, 1, 1]);
    sim.expect(
        4,
        &[
            response(1, 9, true, ""),
            joined,
            ServerRepr::GameStarted {
                game: 1,
                flags: GAME_IN_PROGRESS,
            },
        ],
    );
}

#[test]
fn kick_and_its_refusals() {
    let mut sim = owner_and_player();
    sim.clear();
    let kick = |game, member| ClientRepr::Kick {
        game,
        member,
        reason: "afk",
    };
    sim.send(2, kick(1, 1));
    sim.expect_error(2, ErrorCode::NotOwner, code::KICK);
    sim.send(1, kick(9, 2));
    sim.expect_error(1, ErrorCode::UnknownGame, code::KICK);
    sim.send(1, kick(1, 1));
    sim.expect_error(1, ErrorCode::UnknownId, code::KICK);
    sim.send(1, kick(1, 3));
    sim.expect_error(1, ErrorCode::NotInGame, code::KICK);
    sim.send(1, kick(1, 99));
    sim.expect_error(1, ErrorCode::UnknownId, code::KICK);
    sim.send(1, kick(1, 2));
    let after = info(1, 1, 3, 0, &[1], &[1]);
    sim.expect(
        2,
        &[
            ServerRepr::Kicked {
                game: 1,
                reason: "afk",
            },
            after,
        ],
    );
    sim.expect(1, &[after]);
}

#[test]
fn give_owner() {
    let mut sim = owner_and_player();
    sim.send(
        2,
        ClientRepr::SetReady {
            game: 1,
            ready: false,
        },
    );
    sim.clear();
    let give = |member| ClientRepr::GiveOwner { game: 1, member };
    sim.send(1, give(3));
    sim.expect_error(1, ErrorCode::NotInGame, code::GIVE_OWNER);
    sim.send(1, give(1));
    sim.expect_none(1);
    sim.send(1, give(2));
    let after = info(1, 2, 3, 0, &[1, 2], &[1, 1]);
    for conn in 1..=3 {
        sim.expect(conn, &[after]);
    }
    sim.send(1, give(1));
    sim.expect_error(1, ErrorCode::NotOwner, code::GIVE_OWNER);
}

#[test]
fn ready_and_start_send_only_changes() {
    let mut sim = owner_and_player();
    sim.clear();
    let ready = |ready| ClientRepr::SetReady { game: 1, ready };
    sim.send(2, ready(true));
    sim.expect_none(2);
    sim.expect_none(1);
    sim.send(2, ready(false));
    sim.expect(1, &[info(1, 1, 3, 0, &[1, 2], &[1, 0])]);
    sim.clear();
    sim.send(3, ready(true));
    sim.expect_error(3, ErrorCode::NotInGame, code::SET_READY);
    sim.send(2, ClientRepr::StartGame { game: 1 });
    sim.expect_error(2, ErrorCode::NotOwner, code::START_GAME);
    sim.send(1, ClientRepr::StartGame { game: 1 });
    let started = ServerRepr::GameStarted {
        game: 1,
        flags: GAME_IN_PROGRESS,
    };
    let after = info(1, 1, 3, GAME_IN_PROGRESS, &[1, 2], &[1, 0]);
    sim.expect(1, &[after, started]);
    sim.expect(2, &[after, started]);
    sim.expect(3, &[after]);
    sim.send(1, ClientRepr::StartGame { game: 1 });
    sim.expect_none(1);
    // SET_GAME keeps the server's bits; a password change alone sends nothing.
    sim.send(
        1,
        ClientRepr::SetGame {
            game: 1,
            flags: 0,
            password: "new",
        },
    );
    sim.expect_none(1);
}

#[test]
fn the_last_player_leaving_closes_the_game_and_its_asks() {
    let mut sim = three(config());
    create(&mut sim, 1, 3, 0);
    join(&mut sim, 2, 1, 5, "");
    sim.clear();
    sim.send(3, ClientRepr::LeaveGame { game: 1 });
    sim.expect_error(3, ErrorCode::NotInGame, code::LEAVE_GAME);
    sim.send(3, ClientRepr::LeaveGame { game: 8 });
    sim.expect_error(3, ErrorCode::UnknownGame, code::LEAVE_GAME);
    sim.send(1, ClientRepr::LeaveGame { game: 1 });
    sim.expect(
        2,
        &[
            response(1, 5, false, "game closed"),
            ServerRepr::GameClosed { id: 1 },
        ],
    );
    sim.expect(1, &[ServerRepr::GameClosed { id: 1 }]);
    assert_eq!((sim.lobby.game_count(), sim.lobby.ask_count()), (0, 0));
    // Game ids are not reused.
    create(&mut sim, 1, 3, 0);
    sim.expect(1, &[info(2, 1, 3, 0, &[1], &[1])]);
}

#[test]
fn creation_limits_and_server_flags() {
    let mut sim = three(GeneralConfig {
        max_games_per_member: 1,
        max_games: 2,
        max_seats: 8,
        ..config()
    });
    create(&mut sim, 1, 0, 0);
    sim.expect_error(1, ErrorCode::LimitReached, code::CREATE_GAME);
    create(&mut sim, 1, 9, 0);
    sim.expect_error(1, ErrorCode::LimitReached, code::CREATE_GAME);
    // In-progress and hosted bits are the server's: dropped from a CREATE_GAME.
    create(&mut sim, 1, 8, 0x10 | 8 | GAME_IN_PROGRESS);
    sim.expect(1, &[info(1, 1, 8, 0x10, &[1], &[1])]);
    create(&mut sim, 1, 2, 0);
    sim.expect_error(1, ErrorCode::LimitReached, code::CREATE_GAME);
    create(&mut sim, 2, 2, 0);
    sim.clear();
    create(&mut sim, 3, 2, 0);
    sim.expect_error(3, ErrorCode::LimitReached, code::CREATE_GAME);
}

#[test]
fn game_data_is_bounded_per_game() {
    let mut sim = three(GeneralConfig {
        game_data: 100,
        ..config()
    });
    create(&mut sim, 1, 3, 0);
    sim.clear();
    let store = |key, value| ClientRepr::StoreData {
        game: 1,
        key,
        value,
    };
    let big = [7u8; 60];
    sim.send(1, store("k", &big)); // 1 + 60 + 32 = 93
    sim.expect_none(1);
    sim.send(1, store("j", &[1; 10])); // + 43 = 136 > 100
    sim.expect_error(1, ErrorCode::LimitReached, code::STORE_DATA);
    sim.send(1, store("k", &[1])); // 34
    sim.send(1, store("j", &[1; 10])); // 77
    sim.expect_none(1);
    assert_eq!(sim.lobby.games().next().map(|g| g.data_bytes), Some(77));
    sim.send(1, store("k", &[]));
    assert_eq!(sim.lobby.games().next().map(|g| g.data_bytes), Some(43));
    sim.send(1, ClientRepr::FetchData { game: 1, key: "k" });
    sim.expect(
        1,
        &[ServerRepr::DataValue {
            game: 1,
            key: "k",
            value: &[],
        }],
    );
    sim.send(2, store("x", &[1]));
    sim.expect_error(2, ErrorCode::NotOwner, code::STORE_DATA);
}

#[test]
fn list_filters() {
    let mut sim = three(config());
    create(&mut sim, 1, 4, GAME_LOCKED);
    create(&mut sim, 2, 1, 0);
    sim.send(
        3,
        ClientRepr::CreateGame {
            max_players: 3,
            game_type: "go",
            version: "1",
            flags: 0,
            name: "g",
            password: "",
        },
    );
    sim.clear();
    let g1 = info(1, 1, 4, GAME_LOCKED, &[1], &[1]);
    let g2 = info(2, 2, 1, 0, &[2], &[1]);
    let ServerRepr::GameInfo(g3) = info(3, 3, 3, 0, &[3], &[1]) else {
        unreachable!()
    };
    let g3 = ServerRepr::GameInfo(GameInfo {
        game_type: "go",
        ..g3
    });
    let list = |game_type, flags_clear, min_free| ClientRepr::ListGames {
        game_type,
        flags_clear,
        min_free,
    };
    let end = |count| ServerRepr::GameListEnd { count };
    sim.send(1, list("", 0, 0));
    sim.expect(1, &[g1, g2, g3, end(3)]);
    sim.send(1, list("chess", 0, 0));
    sim.expect(1, &[g1, g2, end(2)]);
    sim.send(1, list("", GAME_LOCKED, 0));
    sim.expect(1, &[g2, g3, end(2)]);
    sim.send(1, list("", 0, 1));
    sim.expect(1, &[g1, g3, end(2)]);
    sim.send(1, list("", 0, 3));
    sim.expect(1, &[g1, end(1)]);
    sim.send(1, list("poker", 0, 0));
    sim.expect(1, &[end(0)]);
}
