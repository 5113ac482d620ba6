//! lobbyd: a game lobby server on one synchronous mio event loop.
//!
//! # Layout
//!
//! - [`wire`]: one module per protocol. Zero-copy views over `&[u8]` with checked
//!   constructors (after `new_checked` no accessor panics) plus plain `Repr` types with
//!   `parse`/`emit`, in the style of smoltcp's `wire`. No I/O, no allocation on parse.
//! - [`lobby`]: the lobby itself, a sans-IO state machine: rooms, seats, owners, countdowns,
//!   game-instance membership, and the TCP lobby's parties (`lobby::party`: admission,
//!   ready-check, countdown, GAME_START hand-over by player hash). It takes decoded requests
//!   and the current time and returns outputs (replies, TCP messages, "bind an instance
//!   socket", "close it") and its next deadline.
//! - [`net`]: the driver, the only module that imports `mio`: one `Poll`, tokens, the
//!   instance-socket slab, the TCP lobby's listener and connection slab (`net::tcp`, with
//!   zero-copy framing in `net::tcp_frames`), buffers, readiness; no protocol logic of its own.
//!   The Warzone master server's sockets (listener, connections, probes, password worker)
//!   are in `net::wz*`.
//! - [`time`]: pure time building blocks; [`time::TimerWheel`] is the fixed-tick hashed
//!   timer wheel whose next deadline becomes the driver's poll timeout. No clock reads:
//!   `now` is always passed in.
//! - [`ratelimit`]: integer token buckets and [`ratelimit::PerIpLimiter`], a bounded
//!   per-source-IP table (request and reply-byte buckets) against floods and reflection.
//! - [`wz`]: the Warzone 2100 master server core ([`wz::WzLobby`]): game table,
//!   legacy and v4 host/browser connections, reachability probes, name and version policy,
//!   login sessions. Sans-IO:
//!   the driver feeds it bytes and probe results and performs its outputs. Also the v4
//!   accounts (SQLite, argon2id), the password-verification worker and login sessions.
//! - [`general`]: the general lobby core ([`general::GeneralLobby`], the C# game lobby
//!   article): members, chat in three scopes, games with owners and join approval, relay to
//!   the owner or the players, game data, resume after a drop, server-hosted games
//!   (tic-tac-toe). Sans-IO: the driver feeds it frames cut by [`wire::general`] and carries
//!   out its outputs, each frame encoded once into a reused arena.
//! - [`metrics`]: the operators' HTTP pages (`/metrics` in Prometheus text, `/rooms` as
//!   JSON) and their request parsing, without the sockets.
//! - [`cli_user`]: `lobbyd user add|del|list`, account administration from the shell.
//! - [`load`]: the load generator behind the `lobby-load` binary, a client of lobbyd (and of
//!   a built-in UDP echo baseline) on its own mio loop; the server never uses it.
//! - [`config`]: the command line. Parses flags into a validated `Config` (or help,
//!   version, or a one-line usage error); the rest of the server trusts it as is.

#![forbid(unsafe_code)]

pub mod cli_user;
pub mod config;
pub mod general;
pub mod load;
pub mod lobby;
pub mod metrics;
pub mod net;
pub mod ratelimit;
pub mod time;
pub mod wire;
pub mod wz;
