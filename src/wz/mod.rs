//! The Warzone 2100 master server ("lobby"): real 2.3.x, 3.x and 4.x games host and browse
//! games here.
//!
//! Contract: docs/protocols/wz-lobby.md ("Legacy protocol", "Behaviour") and
//! docs/protocols/wz-v4.md; wire code in [`crate::wire::wz`] and [`crate::wire::wz::v4`].
//! Sans-IO like the rest of lobbyd's cores: no sockets, no clock reads.
//!
//! - [`lobby`] holds [`WzLobby`], the core the driver feeds (`handle_*`) and drains
//!   (`poll_*`);
//! - [`legacy`] is the legacy connection state machine, [`v4`] the v4 one;
//! - `admission` holds the checks a new game of either protocol passes;
//! - [`games`] is the game table every protocol shares;
//! - [`policy`] applies banned words and the minimum version;
//! - [`stats`] holds the counters;
//! - [`accounts`]: users and argon2id password hashes in SQLite, a password-verification
//!   worker thread (so a ~20 ms hash never stalls the event loop), and login sessions.

pub mod accounts;
mod admission;
pub mod games;
pub mod legacy;
pub mod lobby;
pub mod policy;
pub mod stats;
pub mod v4;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_v4;

pub use games::{GameTable, GameView};
pub use lobby::{
    ConnId, LoginPolicy, ProbeId, ProbeResult, VerifyResult, WzConfig, WzLobby, WzOutput,
};
pub use stats::WzStats;
