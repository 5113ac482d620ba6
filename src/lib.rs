//! lobbyd: a game lobby server on one synchronous mio event loop.
//!
//! # Layout
//!
//! - [`wire`]: one module per protocol, no I/O, every parser total. Two families: the
//!   fixed-layout messages (`frame`, `udp_lobby`, `instance`, the `tcp_lobby/` folder,
//!   `wz::gamestruct`) are zero-copy views with checked constructors (after `new_checked` no
//!   accessor panics) plus plain `Repr` types with `parse`/`buffer_len`/`emit` that never
//!   allocate, in the style of smoltcp's `wire`; the stream and document protocols
//!   (`wz::legacy`, the `wz/v4/` folder with its BSON and JSON decoders) are total decoders
//!   with stated bounds on what a peer can make them wait for or allocate.
//! - [`lobby`]: the lobby itself, a sans-IO state machine: rooms, seats, owners, countdowns,
//!   game-instance membership, and the TCP lobby's parties (`lobby::party`: admission,
//!   ready-check, countdown, GAME_START hand-over by player hash). It takes decoded requests
//!   and the current time and returns outputs (replies, TCP messages, "bind an instance
//!   socket", "close it") and its next deadline.
//! - [`net`]: the driver, the only module that imports `mio`: one `Poll`, tokens, the
//!   instance-socket slab, the TCP lobby's listener and connection slab (`net::tcp`, with
//!   zero-copy framing in `net::tcp_frames`), buffers, readiness; no protocol logic of its own.
//!   The Warzone master server's sockets (listener, connections, probes) are in `net::wz*`;
//!   `net::login` checks passwords on the accounts' worker for any core that asks.
//! - [`time`]: pure time building blocks; [`time::TimerWheel`] is the fixed-tick hashed
//!   timer wheel whose next deadline becomes the driver's poll timeout. No clock reads:
//!   `now` is always passed in.
//! - [`ratelimit`]: integer token buckets and [`ratelimit::PerIpLimiter`], a bounded
//!   per-source-IP table (request and reply-byte buckets) against floods and reflection.
//! - [`wz`]: the Warzone 2100 master server core ([`wz::WzLobby`]): game table,
//!   legacy and v4 host/browser connections, reachability probes, name and version policy.
//!   Sans-IO: the driver feeds it bytes, probe results and password verdicts and performs
//!   its outputs. Its files are a ladder without circles: `lobby` (the façade) over the
//!   `legacy`/`v4` state machines, over `admission`, `shared` (the state they work on),
//!   `games`, and the vocabulary in `types`.
//! - [`accounts`]: users, the SQLite store (argon2id hashes), the password-verification
//!   worker thread, login sessions, and the [`accounts::LoginPolicy`] and
//!   [`accounts::VerifyResult`] every front end with logins shares. May import nothing of
//!   the crate but its own files: the cores, the driver's login bridge (`net::login`) and
//!   `cli_user` stand on it.
//! - [`metrics`]: the operators' HTTP pages (`/metrics` in Prometheus text, `/rooms` as
//!   JSON) and their request parsing, without the sockets.
//! - [`cli_user`]: `lobbyd user add|del|list`, account administration from the shell.
//! - [`load`]: the load generator behind the `lobby-load` binary, a client of lobbyd (and of
//!   a built-in UDP echo baseline) on its own mio loop; the server never uses it.
//! - [`config`]: the command line. Parses flags into a validated `Config` (or help,
//!   version, or a one-line usage error); the rest of the server trusts it as is.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod accounts;
pub mod cli_user;
pub mod config;
pub mod load;
pub mod lobby;
pub mod metrics;
pub mod net;
pub mod ratelimit;
pub mod time;
pub mod wire;
pub mod wz;
