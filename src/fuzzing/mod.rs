//! The entry points of the fuzz targets (`fuzz/`, run with `cargo fuzz`), kept in the library
//! so that `tests/it/fuzz_corpora.rs` replays every committed corpus file and crash reproducer
//! through exactly the same code on the stable toolchain, and the seeded simulations
//! (`tests/it/simulation*.rs`) run the same core drivers.
//!
//! Two families, one file each:
//! - parser targets, `wire_*`: bytes into every parser of a wire module; whatever parses is
//!   emitted again and must parse back the same ([`wire_rtype`], [`wire_wz`],
//!   [`wire_general`], [`wire_http`], [`wire_websocket`], [`wire_udp_upstream`]);
//! - core targets, `core_*`: the input is a script ([`script`]) of connections, requests,
//!   disconnects and clock advances for a sans-IO core and a fake driver, with the core's
//!   invariants asserted after every step ([`core_rtype`], [`core_wz`], [`core_general`]);
//!   [`core_rtype_group`] runs three R-Type cores as a group against a fake directory
//!   (seeded only).
//!
//! [`TARGETS`] names them all. A target panics only on a broken invariant: that is a bug of
//! the code under test, never of the input. This module imports every part of the server it
//! checks and nothing imports it.

pub mod core_general;
pub mod core_rtype;
pub mod core_rtype_group;
pub mod core_wz;
pub mod script;
pub mod wire_general;
pub mod wire_http;
pub mod wire_rtype;
pub mod wire_udp_upstream;
pub mod wire_websocket;
pub mod wire_wz;

/// A fuzz target: its name (the file in `fuzz/fuzz_targets/`, the folder in `fuzz/corpus/`)
/// and its entry point.
pub type FuzzTarget = (&'static str, fn(&[u8]));

/// Every fuzz target.
pub const TARGETS: [FuzzTarget; 19] = [
    ("wire_udp_lobby", wire_rtype::udp_lobby),
    ("wire_instance", wire_rtype::instance),
    ("wire_tcp_lobby", wire_rtype::tcp_lobby),
    ("wire_tcp_upstream", wire_rtype::tcp_upstream),
    ("wire_directory", wire_rtype::directory),
    ("wire_udp_upstream", wire_udp_upstream::udp_upstream),
    ("wire_wz_legacy", wire_wz::legacy),
    ("wire_wz_gamestruct", wire_wz::gamestruct),
    ("wire_wz_v4", wire_wz::v4),
    ("wire_http", wire_http::http),
    ("wire_ws_upgrade", wire_websocket::upgrade),
    ("wire_ws_frames", wire_websocket::frames),
    ("wire_general_frames", wire_general::frames),
    ("wire_general_params", wire_general::params),
    ("core_rtype_udp", core_rtype::fuzz_udp),
    ("core_rtype_tcp", core_rtype::fuzz_tcp),
    ("core_rtype_exec", core_rtype::fuzz_exec),
    ("core_wz", core_wz::fuzz),
    ("core_general", core_general::fuzz),
];

/// Whether a simulated core prints every step and frame (`LOBBYD_FUZZ_TRACE=1`, for reading
/// a crash with `replay_one`).
fn trace_enabled() -> bool {
    std::env::var_os("LOBBYD_FUZZ_TRACE").is_some()
}

/// The target named `name`.
pub fn target(name: &str) -> Option<fn(&[u8])> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Emits a message of `len` bytes into a buffer pre-filled with `0xa5` (so a forgotten field
/// shows) and checks `emit` wrote exactly `len` bytes.
fn emitted(len: usize, emit: impl FnOnce(&mut [u8]) -> usize) -> Vec<u8> {
    let mut buf = vec![0xa5; len];
    assert_eq!(emit(&mut buf), len, "emit wrote other than buffer_len");
    buf
}
