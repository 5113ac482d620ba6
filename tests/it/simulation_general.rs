//! Seeded simulation of the general lobby core alone, with a virtual clock and a fake driver:
//! thousands of random steps from a few dozen clients, the invariants checked after every one,
//! and at the end nothing left but the open hosted games. The simulation and its invariants
//! are `lobbyd::fuzzing::core_general` (its module doc lists them), shared with the
//! `core_general` fuzz target.

use std::time::Duration;

use lobbyd::accounts::LoginPolicy;
use lobbyd::fuzzing::core_general::{seeded_config, simulate};
use lobbyd::general::GeneralConfig;

fn run(seed: u64, steps: usize, config: GeneralConfig) {
    let reached = simulate(seed, steps, config);
    let stats = &reached.stats;
    eprintln!(
        "seed {seed}: {} frames, {} sign-ins, {} resumes, {} games, {} joins, {} asks, {} chat, {} relayed",
        reached.frames_seen,
        stats.sign_ins,
        stats.resumes,
        stats.games_created,
        stats.joins,
        stats.asks,
        stats.chat_lines,
        stats.relayed
    );
    assert!(
        reached.frames_seen > steps as u64,
        "the simulation did little: {}",
        reached.frames_seen
    );
    assert!(reached.last_new_member > 5, "few members ever signed in");
}

#[test]
fn seeded_simulation_with_resume_grace() {
    for seed in 1..=4 {
        run(
            seed,
            3_000,
            seeded_config(LoginPolicy::Optional, Duration::from_secs(30)),
        );
    }
}

#[test]
fn seeded_simulation_without_grace_and_with_accounts() {
    for seed in 11..=13 {
        run(
            seed,
            8_000,
            seeded_config(LoginPolicy::Required, Duration::ZERO),
        );
    }
}

#[test]
fn seeded_simulation_with_auto_approval() {
    let config = GeneralConfig {
        auto_approve: true,
        ..seeded_config(LoginPolicy::Off, Duration::from_secs(5))
    };
    for seed in 21..=23 {
        run(seed, 8_000, config.clone());
    }
}
