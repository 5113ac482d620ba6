//! What one address and the whole lobby may take: the chat rate of every member of one
//! address together, the lobby-wide fan-out budget and its slow mode (told to everyone when it
//! comes on and goes off), the games and the game data of one address.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use super::games::create;
use super::{config, frames, Harness};
use crate::general::{
    ConnId, GeneralConfig, MemberId, SLOW_MODE_COOLDOWN, SLOW_MODE_OFF, SLOW_MODE_ON,
};
use crate::wire::general::{code, ClientRepr, ErrorCode, ServerRepr};

const HOME: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const AWAY: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

/// Opens `conn` from `ip` and signs in as `name`; everyone's inbox is cleared afterwards.
fn member_from(sim: &mut Harness, conn: usize, name: &str, ip: IpAddr) -> MemberId {
    sim.lobby.handle_open_from(sim.now, ConnId(conn), ip);
    sim.drain();
    sim.sign_in_opened(conn, name)
}

fn lobby_line(text: &str) -> ClientRepr<'_> {
    ClientRepr::Chat { game: 0, text }
}

fn error(code: ErrorCode, request: u32, text: &str) -> ServerRepr<'_> {
    ServerRepr::Error {
        code,
        request,
        text,
    }
}

/// The refusal of a line over the lobby's budget.
fn slow(request: u32) -> ServerRepr<'static> {
    error(
        ErrorCode::RateLimited,
        request,
        "slow mode: lobby chat over its budget, try again shortly",
    )
}

fn server_says(text: &str) -> ServerRepr<'_> {
    ServerRepr::ChatFrom {
        game: 0,
        member: 0,
        text,
    }
}

#[test]
fn the_members_of_one_address_share_its_chat_rate() {
    let mut sim = Harness::new(GeneralConfig {
        chat_ip_rate: 3,
        chat_budget: 0,
        ..config()
    });
    for (conn, name) in [(1, "a"), (2, "b"), (3, "c"), (4, "d")] {
        member_from(&mut sim, conn, name, HOME);
    }
    member_from(&mut sim, 5, "e", AWAY);
    // The address's burst is 6 lines; each member is well within its own (10).
    for round in 0..2 {
        for conn in 1..=4 {
            sim.send(conn, lobby_line("hi"));
            let line = frames(&[ServerRepr::ChatFrom {
                game: 0,
                member: conn as i32,
                text: "hi",
            }]);
            if round * 4 + conn <= 6 {
                assert_eq!(sim.take(5), line, "line {round}/{conn} delivered");
                sim.clear();
            } else {
                sim.expect(
                    conn,
                    &[error(
                        ErrorCode::RateLimited,
                        code::CHAT,
                        "chat rate limit of your address",
                    )],
                );
                sim.expect_none(5);
            }
        }
        sim.clear();
    }
    // Another address is not held back, and the refused lines spent no member token.
    sim.send(5, lobby_line("still here"));
    assert_eq!(sim.lobby.stats().chat_lines, 7);
    assert_eq!(sim.lobby.stats().chat_refused, [0, 2, 0]);
    sim.clear();
    // A second later the address has three more lines.
    sim.advance(Duration::from_secs(1));
    for conn in 1..=4 {
        sim.send(conn, lobby_line("again"));
    }
    assert_eq!(sim.lobby.stats().chat_lines, 10);
    assert_eq!(sim.lobby.stats().chat_refused, [0, 3, 0]);
}

#[test]
fn a_connection_without_an_address_has_no_address_rate() {
    let mut sim = Harness::new(GeneralConfig {
        chat_ip_rate: 1,
        chat_budget: 0,
        ..config()
    });
    sim.member(1, "a");
    sim.member(2, "b");
    for conn in [1, 2, 1, 2, 1, 2] {
        sim.send(conn, lobby_line("hi"));
    }
    assert_eq!(sim.lobby.stats().chat_lines, 6);
}

/// The bytes a lobby line `text` from member 1 costs to each recipient.
fn line_len(text: &str) -> u64 {
    ServerRepr::ChatFrom {
        game: 0,
        member: 1,
        text,
    }
    .buffer_len() as u64
}

#[test]
fn the_lobby_budget_turns_slow_mode_on_and_off() {
    // Four members: a line costs four copies; the budget holds two and a half lines a second.
    let budget = line_len("x") * 10;
    let mut sim = Harness::new(GeneralConfig {
        chat_budget: budget,
        ..config()
    });
    for (conn, name) in [(1, "a"), (2, "b"), (3, "c"), (4, "d")] {
        sim.member(conn, name);
    }
    sim.send(1, lobby_line("x"));
    sim.send(2, lobby_line("x"));
    sim.clear();
    assert!(!sim.lobby.chat_slow_mode());
    sim.send(3, lobby_line("x"));
    let refused = slow(code::CHAT);
    sim.expect(3, &[server_says(SLOW_MODE_ON), refused]);
    for conn in [1, 2, 4] {
        sim.expect(conn, &[server_says(SLOW_MODE_ON)]);
    }
    assert!(sim.lobby.chat_slow_mode());
    // A second refills the budget: lines pass again while slow mode is on.
    sim.advance(Duration::from_secs(1));
    sim.send(4, lobby_line("x"));
    sim.send(4, lobby_line("x"));
    sim.clear();
    // The third is over the budget again: slow mode is told nothing new, its cooldown restarts.
    sim.send(4, lobby_line("x"));
    sim.expect(4, &[refused]);
    sim.expect_none(1);
    // Three seconds after the first refusal slow mode stays (the last was one second ago).
    sim.advance(SLOW_MODE_COOLDOWN - Duration::from_secs(1));
    assert!(sim.lobby.chat_slow_mode());
    sim.expect_none(1);
    sim.advance(Duration::from_secs(1));
    assert!(!sim.lobby.chat_slow_mode());
    for conn in 1..=4 {
        sim.expect(conn, &[server_says(SLOW_MODE_OFF)]);
    }
    let stats = sim.lobby.stats();
    assert_eq!((stats.chat_refused, stats.slow_modes), ([0, 0, 2], 1));
    assert_eq!(stats.chat_lines, 4);
}

#[test]
fn private_and_game_lines_cost_their_recipients() {
    let private = |to| ClientRepr::PrivateChat { to, text: "x" };
    let private_len = ServerRepr::PrivateFrom { from: 1, text: "x" }.buffer_len() as u64;
    let mut sim = Harness::new(GeneralConfig {
        chat_budget: private_len * 4,
        chat_rate: 100,
        chat_burst: 100,
        ..config()
    });
    for (conn, name) in [(1, "a"), (2, "b"), (3, "c"), (4, "d")] {
        sim.member(conn, name);
    }
    // Four private lines are four copies: the budget exactly.
    for to in 2..=4 {
        sim.send(1, private(to));
    }
    sim.send(2, private(1));
    assert_eq!(sim.lobby.stats().chat_lines, 4);
    sim.clear();
    sim.send(2, private(3));
    sim.expect(2, &[server_says(SLOW_MODE_ON), slow(code::PRIVATE_CHAT)]);
    // A lobby line costs more than the whole budget: it takes the whole budget, once full.
    sim.advance(SLOW_MODE_COOLDOWN);
    sim.clear();
    sim.send(1, lobby_line("x"));
    sim.clear();
    sim.send(2, private(3));
    sim.expect(2, &[server_says(SLOW_MODE_ON), slow(code::PRIVATE_CHAT)]);
    // A game line costs its two players: it fits the budget a lobby line (four copies,
    // capped at the whole budget) needs all of.
    sim.advance(SLOW_MODE_COOLDOWN);
    create(&mut sim, 1, 2, 0);
    sim.send(
        2,
        ClientRepr::JoinRequest {
            game: 1,
            request: 1,
            password: "",
        },
    );
    sim.send(
        1,
        ClientRepr::JoinAnswer {
            ask: 1,
            accept: true,
            reason: "",
        },
    );
    sim.clear();
    sim.send(1, ClientRepr::Chat { game: 1, text: "x" });
    sim.expect(
        2,
        &[ServerRepr::ChatFrom {
            game: 1,
            member: 1,
            text: "x",
        }],
    );
    sim.send(2, lobby_line("x"));
    sim.expect(2, &[server_says(SLOW_MODE_ON), slow(code::CHAT)]);
    assert_eq!(sim.lobby.stats().chat_refused, [0, 0, 3]);
}

#[test]
fn an_address_holds_at_most_its_games() {
    let mut sim = Harness::new(GeneralConfig {
        max_games_per_ip: 2,
        ..config()
    });
    member_from(&mut sim, 1, "a", HOME);
    member_from(&mut sim, 2, "b", HOME);
    member_from(&mut sim, 3, "c", AWAY);
    create(&mut sim, 1, 2, 0);
    create(&mut sim, 2, 2, 0);
    sim.clear();
    create(&mut sim, 2, 2, 0);
    sim.expect(
        2,
        &[error(
            ErrorCode::LimitReached,
            code::CREATE_GAME,
            "too many games from your address",
        )],
    );
    create(&mut sim, 3, 2, 0);
    assert_eq!(sim.lobby.game_count(), 3);
    // A game of the address closes: the address may create another.
    sim.send(1, ClientRepr::LeaveGame { game: 1 });
    create(&mut sim, 2, 2, 0);
    assert_eq!(sim.lobby.game_count(), 3);
    assert_eq!(sim.lobby.stats().games_refused_per_ip, [1, 0]);
}

#[test]
fn an_address_holds_at_most_its_game_data() {
    let mut sim = Harness::new(GeneralConfig {
        game_data: 1000,
        game_data_per_ip: 1500,
        ..config()
    });
    member_from(&mut sim, 1, "a", HOME);
    member_from(&mut sim, 2, "b", HOME);
    member_from(&mut sim, 3, "c", AWAY);
    for conn in 1..=3 {
        create(&mut sim, conn, 2, 0);
    }
    sim.clear();
    let store = |game, value| ClientRepr::StoreData {
        game,
        key: "k",
        value,
    };
    sim.send(1, store(1, &[1; 867])); // 1 + 867 + 32 = 900
    sim.send(2, store(2, &[1; 667])); // 700: 1,600 for the address
    sim.expect(
        2,
        &[error(
            ErrorCode::LimitReached,
            code::STORE_DATA,
            "game data full for your address",
        )],
    );
    sim.send(2, store(2, &[1; 567])); // 600: 1,500
    sim.send(3, store(3, &[1; 967])); // another address: its own share
    for conn in 1..=3 {
        sim.expect_none(conn);
    }
    // Shrinking a value is always allowed; the game's own limit still answers first.
    sim.send(1, store(1, &[1; 2000]));
    sim.expect(
        1,
        &[error(
            ErrorCode::LimitReached,
            code::STORE_DATA,
            "game data full",
        )],
    );
    sim.send(1, store(1, &[1; 767])); // 800: 1,400
    sim.send(2, store(2, &[1; 667])); // 700: 1,500
    sim.expect_none(2);
    // The first game closes with its data: the address has room again.
    sim.send(1, ClientRepr::LeaveGame { game: 1 });
    sim.clear();
    sim.send(2, store(2, &[1; 967]));
    sim.expect_none(2);
    assert_eq!(sim.lobby.stats().games_refused_per_ip, [0, 1]);
}
