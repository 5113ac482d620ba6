//! The Warzone 2100 master server ("lobby"): real 2.3.x, 3.x and 4.x games host and browse
//! games here.
//!
//! Contract: docs/protocols/wz-lobby.md ("Legacy protocol", "Behaviour") and
//! docs/protocols/wz-v4.md; wire code in [`crate::wire::wz`] and [`crate::wire::wz::v4`].
//! Sans-IO like the rest of lobbyd's cores: no sockets, no threads, no database, no clock
//! reads, no randomness of its own (v4 session ids come from the injected
//! [`crate::accounts::tokens::TokenSource`] given to [`WzLobby::new`]). Accounts (SQLite, the password worker, sessions) live in [`crate::accounts`]; a
//! login leaves this core as [`WzOutput::Verify`] and comes back as a
//! [`crate::accounts::VerifyResult`].
//!
//! The files form a ladder, each importing only the ones below it:
//!
//! - [`lobby`] holds [`WzLobby`], the core the driver feeds (`handle_*`) and drains
//!   (`poll_*`); it routes each event to a connection's state machine;
//! - [`legacy`] is the legacy connection state machine, [`v4`] the v4 one;
//! - `admission` holds the checks a new game of either protocol passes;
//! - `shared` holds the state every connection works on (game table, timers, probes and
//!   verifications in flight, sessions, outputs) and the one path by which a connection of
//!   either kind gives back what it holds;
//! - [`games`] is the game table every protocol shares;
//! - [`types`] is the vocabulary: ids, [`WzConfig`], [`ProbeResult`], [`WzOutput`];
//! - [`policy`] applies banned words and the minimum version; [`stats`] holds the counters.

mod admission;
pub mod games;
pub mod legacy;
pub mod lobby;
pub mod policy;
mod shared;
pub mod stats;
pub mod types;
pub mod v4;

#[cfg(test)]
mod tests;

pub use games::{GameTable, GameView};
pub use lobby::WzLobby;
pub use stats::WzStats;
pub use types::{ConnId, JobId, ProbeId, ProbeResult, WzConfig, WzOutput};
