//! lobbyd: a game lobby server on one synchronous mio event loop.
//!
//! # Layout
//!
//! One line per folder: what it is, and what it may import (no import circles; each folder
//! stands only on those below it). Where a packet is parsed: `wire`; decided: the protocol's
//! core (`rtype`, `wz`, `general`); sent: its front end in `net`.
//!
//! - [`wire`]: the `lobbyd-wire` crate (`lobbyd-wire/`), re-exported so a Rust client
//!   can depend on the wire formats alone. One module per protocol, no I/O, every parser
//!   total. Two families: the fixed-layout messages (`frame`, `udp_lobby`, `udp_upstream`,
//!   `instance`, `tcp_lobby/`, `tcp_upstream/`, `wz::gamestruct`, `general/`) are zero-copy
//!   views with checked constructors plus
//!   `Repr` types with `parse`/`buffer_len`/`emit`, smoltcp's `wire`; the stream and document
//!   protocols (`wz::legacy`, `wz/v4/` with its BSON and JSON decoders) are total decoders
//!   with stated bounds. Imports nothing of this crate.
//! - [`capacity`]: the one rule by which long-lived tables give back spare capacity after a
//!   crowd (shrink once less than a quarter full). Pure; imports nothing of the crate.
//! - [`time`], [`ratelimit`]: the fixed-tick two-level timer wheel and the token buckets with
//!   their bounded per-IP table. Pure, no clock reads; import nothing of the crate but
//!   `capacity`.
//! - [`accounts`]: users, the SQLite store (argon2id hashes), the password-verification
//!   worker thread, login sessions, the injected source of their ids and of the general
//!   lobby's resume tokens (`tokens`), and the [`accounts::LoginPolicy`] and
//!   [`accounts::VerifyResult`] every front end with logins shares. Imports nothing of the
//!   crate.
//! - [`rtype`]: the R-Type core, sans-IO: UDP rooms, seats, countdowns, game-instance
//!   membership and the TCP lobby's parties (parties are rooms; in the upstream client's TCP
//!   dialect, named rooms joined before connecting). `handle_*` in,
//!   `poll_output`/`poll_timeout` out; a checked TCP frame becomes an input here
//!   (`tcp_codec.rs`), player hashes come from an injected source. The general lobby's shape:
//!   the façade `RtypeCore` (`mod.rs`) over components that each own their state (`rooms.rs`
//!   the room table and UDP lobby, with `relay.rs` a room's instance; `parties.rs` the
//!   parties, with `countdown.rs` a party's way to its game; `conns.rs` the TCP connections;
//!   `tcp.rs` the handlers joining those two), each handler given a `Ctx` (`context.rs`); a
//!   ladder of files without circles. May import `wire`, `time`, `ratelimit`.
//! - [`wz`]: the Warzone 2100 master server core, sans-IO: game table, legacy and v4
//!   connections, probes, name and version policy; a ladder of files without circles. May
//!   import `wire`, `time`, `ratelimit`, `accounts` (types only).
//! - [`general`]: the general lobby core, sans-IO: members, chat, games with owners, join
//!   approval, relay, game data, server-hosted games (tic-tac-toe). May import `wire`,
//!   `capacity`, `time`, `ratelimit`, `accounts` (types only).
//! - [`directory`]: the room directory a group of lobbyd processes shares in Redis (keys with
//!   a time to live, each node's own) and the `lobbyd-directory` thread that speaks Redis
//!   for one node, fed by a bounded queue and reporting through the loop's waker, the one
//!   module that imports `redis`; `directory/inbox.rs`, each node's Redis stream inbox, by
//!   which a JOIN_ROOM of another node's room is asked of its owner and answered, read on a
//!   thread of its own (`lobbyd-inbox`). May import `wire`.
//! - [`metrics`]: the operators' pages (`/` the status page, `/metrics`, `/rooms`,
//!   `/wz/games`), their request parsing and the [`metrics::Snapshot`] types, without
//!   sockets. May import the cores' counter and room types.
//! - [`config`]: the command line, one file per protocol (`config/rtype.rs`, `config/wz.rs`,
//!   `config/general.rs`) over the parsing leaf `config/parse.rs`: flags into a validated
//!   `Config`, or help, version, or a one-line usage error. May import `wire` limits,
//!   `accounts` and the cores' config types.
//! - [`net`]: the driver, the only module that imports `mio`, grouped by front end. `server.rs`
//!   is the loop and documents the one seam (`FrontEnd`) every front end plugs into. One folder
//!   per front end: `rtype/` (the R-Type core's UDP sockets in `udp.rs`, its TCP lobby in
//!   `tcp.rs` and `tcp_frames.rs` (its two dialects' length rules), the game instances' ports in
//!   `instance.rs`, the OS source of player hashes in `random.rs`, the operator's game servers of
//!   `--instance-exec` in `game_server.rs`, the driver's UDP and TCP counters in `stats.rs`), `wz/` (with the
//!   reachability probe in `probe.rs` and the driver's counters in `stats.rs`), `general/` (the
//!   way in, listener, admission and frame reader, in `mod.rs`; the way out, `Outbound`, owning
//!   the core and the connections with their send queues and fan-out, in `outbound.rs`; its
//!   counters in `stats.rs`). Under them `io/`, the plumbing with no protocol: `stream.rs`, the
//!   one TCP stream transport under the three TCP front ends (its counted send queues and
//!   partial frames, under one memory budget per front end, in `buffers.rs`), `frames.rs` (the
//!   one reader of length-prefixed frames, over a protocol's length rule, used by the R-Type
//!   TCP lobby and the general lobby), `admission.rs` (the per-address limits at accept),
//!   `batch.rs` (`recvmmsg`/`sendmmsg`), `pass.rs` (the work per loop pass, bounded), `wake.rs`
//!   (the timerfd), `closer.rs` (the thread that closes released sockets off the loop),
//!   `heap.rs`, `rx_time.rs`. Beside them `login/` (the password-check bridge and its fair
//!   queue, for any core), `directory.rs` (the room directory's bridge: this node's rooms
//!   out, the other nodes' into the ROOM_LIST cache, asks of other nodes' rooms and their
//!   answers between the R-Type core and the thread), `http.rs` (status page, `/metrics`, `/healthz`), `token.rs` (the
//!   tokens), `fd_table.rs` (the descriptor table sized at start). Every listener is bound in
//!   `net::build`. May import everything above.
//! - [`cli_user`]: `lobbyd user add|del|list`, account administration from the shell. May
//!   import `accounts`.
//! - `fuzzing` (hidden from the docs): the entry points of the fuzz targets in `fuzz/` and the
//!   seeded simulations of the three cores, shared by `cargo fuzz` and `cargo test`
//!   (`tests/it/fuzz_corpora.rs`, `tests/it/simulation*.rs`). May import everything above;
//!   nothing imports it.
//!
//! The load generator behind `lobby-load` is a crate of its own (`lobby-load/`), a
//! client of this library: it imports `wire`, `config` and `wz` for the default limits, and
//! `net::io::wake`, `net::io::batch` and `net::io::rx_time`; nothing here imports it.

// One `unsafe` call in the whole crate, allowed where it stands with its proof:
// `malloc_trim` in `net::io::heap`.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod accounts;
pub mod capacity;
pub mod cli_user;
pub mod config;
pub mod directory;
#[doc(hidden)]
pub mod fuzzing;
pub mod general;
pub mod metrics;
pub mod net;
pub mod ratelimit;
pub mod rtype;
pub mod time;
pub mod wz;

/// The wire formats, the `lobbyd-wire` crate (`lobbyd-wire/`): a Rust client can depend on
/// it alone; re-exported here so every `lobbyd::wire` path stays.
pub use lobbyd_wire as wire;
