//! What one address and the whole lobby may take, over real sockets (docs/protocols/
//! general-lobby.md, "Chat" and "Games"): the members of one address share its chat rate, the
//! lobby-wide chat budget refuses lines past it and says so to everyone (slow mode on, then
//! off), and one address holds at most its share of games and game data while another
//! address still creates a game. Clients come from distinct 127.0.0.x addresses.

use std::net::SocketAddr;
use std::time::Duration;

use lobbyd::general::{SLOW_MODE_OFF, SLOW_MODE_ON};
use lobbyd::wire::general::{code, ClientRepr, ErrorCode, ServerRepr};

use super::client::{client_bytes, expect_all, info_of, start_lobby, Client, Game};
use crate::common::snapshot;

/// How long slow mode may take to end: its cooldown (3 s) on a loaded machine.
const SLOW_MODE_WAIT: Duration = Duration::from_secs(15);

/// Connects from `source`, signs in as `name` and reads the sync; each of `present` gets the
/// newcomer's MEMBER_INFO.
fn enter_from(addr: SocketAddr, source: &str, name: &str, present: &mut [&mut Client]) -> Client {
    let mut client = Client::greeted_from(addr, source);
    client.sign_in(name, "", None);
    client.read_sync();
    expect_all(present, &info_of(&client));
    client
}

fn lobby_line(text: &str) -> ClientRepr<'_> {
    ClientRepr::Chat { game: 0, text }
}

fn chat_from(member: i32, text: &str) -> ServerRepr<'_> {
    ServerRepr::ChatFrom {
        game: 0,
        member,
        text,
    }
}

#[test]
fn the_members_of_one_address_share_its_chat_rate() {
    let (server, addr) = start_lobby(|c| {
        c.general.core.chat_ip_rate = 1;
        c.general.core.chat_budget = 0;
    });
    let mut a1 = enter_from(addr, "127.0.0.1", "a1", &mut []);
    let mut a2 = enter_from(addr, "127.0.0.1", "a2", &mut [&mut a1]);
    let mut b = enter_from(addr, "127.0.0.2", "b", &mut [&mut a1, &mut a2]);
    // The address's burst is two lines: a1 spends both (well within its own ten).
    let two: Vec<u8> = [lobby_line("one"), lobby_line("two")]
        .iter()
        .flat_map(client_bytes)
        .collect();
    a1.send_raw(&two);
    let a1_id = a1.id;
    for text in ["one", "two"] {
        expect_all(&mut [&mut a1, &mut a2, &mut b], &chat_from(a1_id, text));
    }
    // a2 has all its own tokens, but its address has none left.
    a2.send(lobby_line("three"));
    a2.expect_error(
        ErrorCode::RateLimited,
        code::CHAT,
        "chat rate limit of your address",
    );
    // Another address talks freely.
    b.send(lobby_line("four"));
    let b_id = b.id;
    expect_all(&mut [&mut a1, &mut a2, &mut b], &chat_from(b_id, "four"));
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("general_chat_refused_total", "ip_rate"),
        Some(1)
    );
    assert_eq!(snap.counter("general_chat_lines_total", ""), Some(3));
}

#[test]
fn the_lobby_budget_refuses_lines_and_announces_slow_mode() {
    // Three members: a line of "x" costs three copies; the budget holds one and a half.
    let copy = chat_from(1, "x").buffer_len() as u64;
    let (server, addr) = start_lobby(move |c| {
        c.general.core.chat_ip_rate = 0;
        c.general.core.chat_budget = copy * 3 * 3 / 2;
    });
    let mut a = Client::enter(addr, "a", &mut []);
    let mut b = Client::enter(addr, "b", &mut [&mut a]);
    let mut c = Client::enter(addr, "c", &mut [&mut a, &mut b]);
    assert_eq!(a.id, 1, "the budget is sized for member 1's lines");
    // Two lines in one write: the first is delivered, the second is over the budget.
    let two: Vec<u8> = [lobby_line("x"), lobby_line("x")]
        .iter()
        .flat_map(client_bytes)
        .collect();
    a.send_raw(&two);
    let everyone = &mut [&mut a, &mut b, &mut c];
    expect_all(everyone, &chat_from(1, "x"));
    expect_all(everyone, &chat_from(0, SLOW_MODE_ON));
    a.expect_error(
        ErrorCode::RateLimited,
        code::CHAT,
        "slow mode: lobby chat over its budget, try again shortly",
    );
    // With no line refused for the cooldown, slow mode ends, told to everyone.
    for client in [&mut a, &mut b, &mut c] {
        let reply = client.recv_within(SLOW_MODE_WAIT).expect("slow mode over");
        assert_eq!(reply.repr(), chat_from(0, SLOW_MODE_OFF));
    }
    b.send(lobby_line("y"));
    let b_id = b.id;
    expect_all(&mut [&mut a, &mut b, &mut c], &chat_from(b_id, "y"));
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("general_chat_refused_total", "lobby_budget"),
        Some(1)
    );
    assert_eq!(snap.counter("general_slow_modes_total", ""), Some(1));
}

#[test]
fn an_address_at_its_game_share_is_refused_while_another_creates() {
    let (server, addr) = start_lobby(|c| {
        c.general.core.max_games_per_ip = 2;
        c.general.core.game_data_per_ip = 1000;
    });
    let mut a1 = enter_from(addr, "127.0.0.1", "a1", &mut []);
    let mut a2 = enter_from(addr, "127.0.0.1", "a2", &mut [&mut a1]);
    let mut b = enter_from(addr, "127.0.0.3", "b", &mut [&mut a1, &mut a2]);
    let first = Game::new(1, &a1, 2, "one");
    a1.send(first.create());
    expect_all(&mut [&mut a1, &mut a2, &mut b], &first.info());
    let second = Game::new(2, &a2, 2, "two");
    a2.send(second.create());
    expect_all(&mut [&mut a1, &mut a2, &mut b], &second.info());
    // The address holds its two games: a2 may not create a third, though it is in one game.
    a2.send(Game::new(3, &a2, 2, "three").create());
    a2.expect_error(
        ErrorCode::LimitReached,
        code::CREATE_GAME,
        "too many games from your address",
    );
    let other = Game::new(3, &b, 2, "other");
    b.send(other.create());
    expect_all(&mut [&mut a1, &mut a2, &mut b], &other.info());
    // Game data: the two games of the address share its 1,000 bytes.
    let store = |game, value| ClientRepr::StoreData {
        game,
        key: "k",
        value,
    };
    a1.send(store(1, &[7; 567])); // 1 + 567 + 32 = 600
    a1.expect_quiet();
    a2.send(store(2, &[7; 467])); // 500: 1,100 for the address
    a2.expect_error(
        ErrorCode::LimitReached,
        code::STORE_DATA,
        "game data full for your address",
    );
    b.send(store(3, &[7; 967])); // another address: its own 1,000
    b.expect_quiet();
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("general_games_refused_per_ip_total", "games"),
        Some(1)
    );
    assert_eq!(
        snap.counter("general_games_refused_per_ip_total", "data"),
        Some(1)
    );
    assert_eq!(snap.counter("general_games_created_total", ""), Some(3));
}
