//! The output contract: a fan-out is one encode marked as a fan-out, a frame for one
//! connection is marked direct, memory held after a spike is given back once drained, and
//! `handle_timeout` stops at its output budget.

use std::time::Duration;

use super::{config, count_frames, Harness};
use crate::general::output::IDLE_KEEP_BYTES;
use crate::general::{ConnId, GeneralConfig, GeneralOutput, ARENA_KEEP, QUEUE_KEEP};
use crate::wire::general::{ClientRepr, ServerRepr};

#[test]
fn a_lobby_chat_is_encoded_once() {
    let mut sim = Harness::new(config());
    for conn in 1..=50 {
        sim.member(conn, &format!("m{conn}"));
    }
    let before = sim.lobby.stats();
    let deliveries = sim.deliveries;
    sim.send(
        1,
        ClientRepr::Chat {
            game: 0,
            text: "hello everyone",
        },
    );
    let after = sim.lobby.stats();
    assert_eq!(sim.deliveries[0], deliveries[0], "no record marked direct");
    assert_eq!(
        sim.deliveries[1] - deliveries[1],
        50,
        "every record marked fan-out"
    );
    let line = ServerRepr::ChatFrom {
        game: 0,
        member: 1,
        text: "hello everyone",
    };
    assert_eq!(
        after.bytes_encoded - before.bytes_encoded,
        line.buffer_len() as u64
    );
    assert_eq!(after.sends - before.sends, 50);
    for conn in 1..=50 {
        sim.expect(conn, &[line]);
    }
}

#[test]
fn a_frame_for_one_connection_is_direct() {
    let mut sim = Harness::new(config());
    let alone = sim.member(1, "alone");
    sim.member(2, "away");
    sim.close(2);
    sim.clear();
    sim.deliveries = [0; 2];
    // A reply, and a lobby chat line with one member present.
    sim.send(1, ClientRepr::Ping { payload: b"x" });
    sim.send(
        1,
        ClientRepr::Chat {
            game: 0,
            text: "anyone?",
        },
    );
    assert_eq!(sim.deliveries, [2, 0]);
    sim.expect(
        1,
        &[
            ServerRepr::Pong { payload: b"x" },
            ServerRepr::ChatFrom {
                game: 0,
                member: alone.0,
                text: "anyone?",
            },
        ],
    );
}

#[test]
fn a_spike_of_bytes_is_given_back() {
    let mut sim = Harness::new(config());
    let name = "n".repeat(15_000);
    for conn in 1..=8 {
        sim.member(conn, &format!("m{conn}"));
        for _ in 0..4 {
            sim.send(
                conn,
                ClientRepr::CreateGame {
                    max_players: 2,
                    game_type: "t",
                    version: "1",
                    flags: 0,
                    name: &name,
                    password: "",
                },
            );
        }
    }
    sim.clear();
    sim.send(
        1,
        ClientRepr::ListGames {
            game_type: "",
            flags_clear: 0,
            min_free: 0,
        },
    );
    assert_eq!(count_frames(&sim.take(1)), 33);
    let ((_, held), _) = sim.lobby.output_memory();
    assert!(held > ARENA_KEEP, "the answer took {held} bytes");
    sim.send(1, ClientRepr::Ping { payload: b"" });
    let ((used, held), _) = sim.lobby.output_memory();
    assert!(used < 100);
    assert!(held <= ARENA_KEEP, "still holding {held} bytes");
}

#[test]
fn a_spike_of_outputs_is_given_back() {
    let mut sim = Harness::new(config());
    for conn in 0..2_500 {
        sim.open(conn);
    }
    sim.clear();
    sim.lobby.handle_shutdown(sim.now);
    assert_eq!(sim.lobby.output_count(), 5_000);
    sim.drain();
    let (_, queue) = sim.lobby.output_memory();
    assert!(queue >= 5_000);
    sim.close(0);
    let (_, queue) = sim.lobby.output_memory();
    assert!(queue <= QUEUE_KEEP, "still holding {queue} records");
}

#[test]
fn the_tidy_keeps_small_buffers_and_cuts_back_large_ones() {
    let record = std::mem::size_of::<GeneralOutput>();
    let mut sim = Harness::new(config());
    sim.member(1, "m1");
    sim.send(1, ClientRepr::Ping { payload: b"x" });
    let ((_, arena), queue) = sim.lobby.output_memory();
    assert!(arena > 0 && arena <= IDLE_KEEP_BYTES, "arena {arena}");
    assert!(
        queue > 0 && queue * record <= IDLE_KEEP_BYTES,
        "queue {queue}"
    );
    sim.lobby.tidy();
    assert_eq!(
        sim.lobby.output_memory(),
        ((0, arena), queue),
        "small buffers are kept"
    );
    // 150 members: each newcomer's sync is about 6 KiB, its MEMBER_INFO goes to 149 others.
    for conn in 2..=150 {
        sim.member(conn, &format!("member{conn}"));
    }
    let ((_, arena), queue) = sim.lobby.output_memory();
    assert!(arena > IDLE_KEEP_BYTES, "arena {arena}");
    assert!(queue * record > IDLE_KEEP_BYTES, "queue {queue}");
    sim.lobby.tidy();
    let ((used, arena), queue) = sim.lobby.output_memory();
    assert_eq!(used, 0);
    assert!(arena > 0 && arena <= IDLE_KEEP_BYTES, "arena {arena}");
    assert!(
        queue > 0 && queue * record <= IDLE_KEEP_BYTES,
        "queue {queue}"
    );
    // The next quiet call fits in what was kept.
    sim.send(1, ClientRepr::Ping { payload: b"x" });
    let pong = ServerRepr::Pong { payload: b"x" }.buffer_len();
    assert_eq!(sim.lobby.output_memory(), ((pong, arena), queue));
}

#[test]
fn handle_timeout_stops_at_its_budget() {
    let mut sim = Harness::new(GeneralConfig {
        output_budget: 10,
        ..config()
    });
    for conn in 0..30 {
        sim.open(conn);
    }
    sim.clear();
    sim.now += Duration::from_secs(6);
    let mut rounds = 0;
    loop {
        sim.lobby.handle_timeout(sim.now);
        // Each sign-in deadline queues two outputs (the notice and the close).
        let queued = sim.lobby.output_count();
        assert!(queued <= 11, "{queued} outputs queued at once");
        sim.drain();
        rounds += 1;
        if sim.lobby.poll_timeout().map_or(true, |at| at > sim.now) {
            break;
        }
    }
    assert_eq!(rounds, 6);
    assert_eq!(sim.closed.len(), 30);
    assert!(sim.closed.contains(&ConnId(29)));
    assert_eq!(sim.lobby.stats().output_budget_stops, 5);
}
