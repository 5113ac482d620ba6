//! The general lobby (after a C# game lobby article): members sign in over TCP, see each
//! other, chat, create games of any type, ask to join and are approved by the owner, then use
//! the server as a conduit to the owner or to every player; the server can host games itself.
//!
//! Contract: docs/protocols/general-lobby.md; wire code in [`crate::wire::general`].
//! Sans-IO like lobbyd's other cores: no socket, no clock read (`now` is passed in), no disk,
//! no thread, no randomness of its own (resume tokens come from an injected
//! [`TokenSource`]); account passwords leave as [`GeneralOutput::Verify`] and come back
//! through [`GeneralLobby::handle_verify_result`].
//!
//! - [`lobby`] holds [`GeneralLobby`], the façade the driver feeds (`handle_*`) and drains
//!   (`poll_*`);
//! - [`types`] the vocabulary: ids, [`GeneralConfig`], outcomes, operators' views;
//! - `output` the output queue and its arena (each frame encoded once), and the routes to
//!   present members;
//! - `members` connections and their sign-in life (HELLO, SIGN_IN, password checks, resume,
//!   take-over, deadlines, closing) over `roster`, the members themselves (names, resume
//!   tokens, the away flag and its grace, SET_MEMBER, MEMBER_INFO);
//! - `game` one game and its own rules (seats, flags, ready, data, filters), `asks` the join
//!   asks waiting for owners, `games` the rules of changes: creation, joins, owners, closing,
//!   hosted-game glue, over `game_table` (the games, who plays where, lookups, listing) and
//!   `shares` (what each address's games hold);
//! - `chat` and `relay` the three chat scopes and the three relay kinds, `chat_limits` the
//!   rates per member and per address and the lobby-wide fan-out budget (slow mode);
//! - [`hosted`] the server-hosted game trait, [`tictactoe`] its built-in type;
//! - [`stats`] the counters.
//!
//! What it must not do: block, allocate per recipient when fanning out, or keep its peak
//! memory after a burst (the arena and queue shrink back once drained).

mod asks;
mod chat;
mod chat_limits;
mod game;
mod game_table;
mod games;
pub mod hosted;
pub mod lobby;
mod members;
mod output;
mod relay;
mod roster;
mod shares;
pub mod stats;
pub mod tictactoe;
pub mod types;

#[cfg(test)]
mod tests;

pub use chat::MAX_CHAT_BYTES;
pub use chat_limits::{SLOW_MODE_COOLDOWN, SLOW_MODE_OFF, SLOW_MODE_ON};
pub use lobby::GeneralLobby;
pub use output::{Delivery, FrameRef, GeneralOutput, ARENA_KEEP, QUEUE_KEEP};
pub use roster::{valid_name, MAX_NAME_CHARS};
pub use stats::GeneralStats;
pub use types::{
    AskId, CloseReason, ConnId, GameId, GameView, GeneralConfig, GeneralRefusal, HostedKind,
    HostedSpec, JobId, LeaveReason, MemberId, MemberView, TokenSource, SERVER_MEMBER,
};
