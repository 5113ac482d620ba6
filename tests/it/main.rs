//! Every integration test of the server, in one test binary: one link of the library instead
//! of one per file (each such executable is tens of megabytes, and linking them was most of
//! `make test`). Each module is what used to be a file of its own under `tests/`; a test's
//! name is now prefixed by its module (`cargo test --test it tcp_lobby::` runs one area).
//!
//! Shared helpers live in `common/` (an in-process server on loopback, raw-socket clients,
//! the R-Type TCP lobby client, the core fixture the benches share). The counting allocator
//! of `no_alloc` wraps the system allocator for this whole binary; its counts are per thread,
//! so tests running beside it do not disturb them.

mod common;

mod cli;
mod deploy;
mod deploy_wss;
mod directory;
mod directory_join;
mod fuzz_corpora;
mod general_lobby;
mod instance;
mod instance_exec;
mod metrics;
mod no_alloc;
mod rtype_dialects;
mod simulation;
mod simulation_general;
mod simulation_wz;
mod tcp_burst;
mod tcp_dialect;
mod tcp_lobby;
mod tcp_lobby_dos;
mod udp_lobby;
mod user_cli;
mod wz;
mod wz_dos;
