//! Seeded simulation of the Warzone 2100 master server core alone, with a virtual clock and a
//! fake driver: legacy and v4 hosts and browsers from a handful of addresses, thousands of
//! random steps, the invariants checked after every one, every request answered at the end
//! and nothing left once everyone has gone. The simulation and its invariants are
//! `lobbyd::fuzzing::core_wz` (its module doc lists them), shared with the `core_wz` fuzz
//! target.

use lobbyd::fuzzing::core_wz::simulate;

#[test]
fn seeded_simulation_keeps_invariants() {
    for seed in 0..6 {
        simulate(seed, 4_000);
    }
}

#[test]
fn seeded_simulation_reaches_listing_logins_and_refusals() {
    let stats = simulate(0x5EED, 20_000);
    eprintln!("{stats:?}");
    assert!(stats.v4_connections > 0, "{stats:?}");
}
