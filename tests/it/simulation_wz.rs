//! Seeded simulation of the Warzone 2100 master server core alone, with a virtual clock and a
//! fake driver: legacy and v4 hosts and browsers from a handful of addresses, thousands of
//! random steps, the invariants checked after every one, every request answered at the end
//! and nothing left once everyone has gone. The simulation and its invariants are
//! `lobbyd::fuzzing::core_wz` (its module doc lists them), shared with the `core_wz` fuzz
//! target.

use lobbyd::fuzzing::core_wz::simulate;
use lobbyd::wz::stats::V4Method;

#[test]
fn seeded_simulation_keeps_invariants() {
    for seed in 0..6 {
        simulate(seed, 4_000);
    }
}

#[test]
fn seeded_simulation_reaches_listing_logins_and_refusals() {
    let stats = simulate(0x5EED, 20_000);
    // Listing: games got through every check and the probe, and `list` was answered.
    assert!(stats.games_listed > 0, "no game listed: {stats:?}");
    assert!(stats.list_replies > 0, "no list answered: {stats:?}");
    // Logins: v4 clients completed the handshake and sent `login` and other requests.
    assert!(stats.v4_connections > 0, "no v4 connection: {stats:?}");
    let v4 = |method| stats.v4_requests[V4Method::ALL.iter().position(|m| *m == method).unwrap()];
    assert!(v4(V4Method::Login) > 0, "no v4 login: {stats:?}");
    assert!(v4(V4Method::List) > 0, "no v4 list: {stats:?}");
    // Refusals: hosts were refused, for more than one reason.
    let refusals: u64 = stats.refused.iter().sum();
    assert!(refusals > 0, "no refusal: {stats:?}");
    let reasons = stats.refused.iter().filter(|&&n| n > 0).count();
    assert!(reasons > 1, "refused for one reason only: {stats:?}");
}
