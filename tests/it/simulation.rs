//! Seeded simulation of the R-Type core alone, UDP rooms and TCP parties together, with a
//! virtual clock and a fake driver: thousands of random steps, the invariants checked after
//! every one, and at the end every room reaped and every connection closed. The simulation
//! and its invariants are `lobbyd::fuzzing::core_rtype` (its module doc lists them), shared
//! with the `core_rtype_*` fuzz targets.

use lobbyd::fuzzing::core_rtype::{simulate, simulate_exec, Mix};
use lobbyd::fuzzing::core_rtype_group::simulate_group;
use lobbyd::rtype::UPSTREAM_REFUSALS;

#[test]
fn simulation_keeps_invariants() {
    for seed in 0..20 {
        simulate(seed, 3000, Mix::Both);
    }
}

#[test]
fn simulation_of_each_front_end_alone_keeps_invariants() {
    for seed in 100..105 {
        simulate(seed, 3000, Mix::Udp);
        simulate(seed, 3000, Mix::Tcp);
    }
}

#[test]
fn simulation_long_run() {
    let stats = simulate(0xDEAD_BEEF, 50_000, Mix::Both);
    // The run reached the interesting places of the TCP lobby, not only its refusals.
    let tcp = &stats.tcp;
    assert!(tcp.games_started > 0, "{tcp:?}");
    assert!(tcp.countdowns_cancelled > 0, "{tcp:?}");
    assert!(tcp.unknown_tokens > 0, "{tcp:?}");
    assert!(stats.welcomes > 0);
    // And those of the upstream client's dialect: rooms made, joined and refused, foreign
    // READYs ignored, and games started (a request after GAME_START is counted).
    assert!(tcp.upstream_conns > 0 && tcp.rooms_created > 0, "{tcp:?}");
    assert!(tcp.foreign_ready > 0, "{tcp:?}");
    for (reason, count) in UPSTREAM_REFUSALS.iter().zip(tcp.upstream_refused) {
        assert!(count > 0, "no {reason}: {tcp:?}");
    }
    // And those of a node of a group: other nodes' rooms asked of their owners, granted,
    // refused, timed out, answered late, refused at once while the directory was down;
    // this node's rooms asked of it.
    let remote = &stats.remote;
    assert!(remote.granted > 0 && remote.refused > 0, "{remote:?}");
    assert!(remote.timeouts > 0 && remote.late_answers > 0, "{remote:?}");
    assert!(remote.unavailable > 0 && remote.served > 0, "{remote:?}");
}

/// With `--instance-exec`: game servers start, exit at random and are stopped; every room
/// still ends, every port comes back.
#[test]
fn simulation_with_game_servers_keeps_invariants() {
    for seed in 200..210 {
        let stats = simulate_exec(seed, 3000);
        assert!(stats.rooms_reaped > 0, "{stats:?}");
    }
    let stats = simulate_exec(0xFEED, 30_000);
    assert!(stats.tcp.games_started > 0, "{:?}", stats.tcp);
    assert!(stats.tcp.countdowns_cancelled > 0, "{:?}", stats.tcp);
    assert_eq!(stats.welcomes, 0, "nobody says HELLO to lobbyd");
}

/// Three cores as nodes of a group against a fake directory that delays and loses their
/// asks and answers: no room over capacity, every JOIN answered exactly once (success,
/// failure or timeout), and the runs reach grants, refusals, timeouts and late answers.
#[test]
fn simulation_of_a_group_keeps_invariants() {
    let (mut granted, mut timeouts, mut late) = (0, 0, 0);
    for seed in 0..10 {
        let sim = simulate_group(seed, 4000);
        assert!(sim.replies > 0);
        for node in 1..=3 {
            let remote = &sim.stats(node).remote;
            granted += remote.granted;
            timeouts += remote.timeouts;
            late += remote.late_answers;
        }
    }
    assert!(
        granted > 0 && timeouts > 0 && late > 0,
        "{granted} {timeouts} {late}"
    );
}
