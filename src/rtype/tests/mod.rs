//! Unit tests of the R-Type core, one file per component: `rooms.rs` (the UDP room lobby and
//! the instances), `parties.rs` (TCP lobby parties), `conns.rs` (TCP connections' deadlines,
//! rates and eviction), `upstream.rs` (the upstream client's dialect: rooms, seats, lists),
//! `remote_join.rs` (JOIN_ROOM of another node's room, asked of its owner), `instance_exec.rs`
//! (every instance a game server of `--instance-exec`); all of them drive
//! the core through the one `Harness` (`harness.rs`).

mod conns;
mod harness;
mod instance_exec;
mod parties;
mod remote_join;
mod rooms;
mod upstream;

/// Player hashes for tests: distinct, non-zero, the same on every run.
fn seeded_hashes() -> super::HashSource {
    let mut counter = 0u64;
    Box::new(move || {
        counter += 1;
        counter.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    })
}
