//! Server-hosted games (the article's server-side plug-ins; docs/protocols/general-lobby.md,
//! "Server-hosted games"): the game-type trait the core calls, and the actions a game answers
//! with.
//!
//! A hosted game is owned by [`super::types::SERVER_MEMBER`] (id 0) and carries game flag 8.
//! The core asks the type whether a member may join, and tells it when a player joined or
//! left, when a TO_OWNER message reached it, and when its timer fired; the type answers with
//! [`HostedAction`]s (messages to the players, start, reset, its next timer) that the core
//! carries out.
//!
//! A game type must not keep a connection, read a clock (`now` is passed in) or draw
//! randomness: it is part of the sans-IO core.

use std::fmt;
use std::time::Instant;

use super::types::MemberId;

/// Something a hosted game asks the core to do, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostedAction {
    /// GAME_MESSAGE(game, from 0, app code, body) to every present player.
    ToAll {
        /// The application code.
        app_code: u32,
        /// The body.
        body: Vec<u8>,
    },
    /// GAME_MESSAGE(game, from 0, app code, body) to one player.
    ToPlayer {
        /// The player.
        member: MemberId,
        /// The application code.
        app_code: u32,
        /// The body.
        body: Vec<u8>,
    },
    /// Set game flag 4 (in progress): GAME_INFO to all, GAME_STARTED to the players.
    Start,
    /// Clear game flag 4: the game is open again (GAME_INFO to all).
    Reset,
    /// Call [`HostedGame::timer`] at this instant (replacing any earlier one), or never.
    Timer(Option<Instant>),
}

/// The actions a hosted game returns from one call; the core drains it after each call.
#[derive(Debug, Default)]
pub struct HostedOut {
    actions: Vec<HostedAction>,
}

impl HostedOut {
    /// GAME_MESSAGE to every player.
    pub fn message_all(&mut self, app_code: u32, body: Vec<u8>) {
        self.actions.push(HostedAction::ToAll { app_code, body });
    }

    /// GAME_MESSAGE to one player.
    pub fn message_player(&mut self, member: MemberId, app_code: u32, body: Vec<u8>) {
        self.actions.push(HostedAction::ToPlayer {
            member,
            app_code,
            body,
        });
    }

    /// Mark the game in progress.
    pub fn start(&mut self) {
        self.actions.push(HostedAction::Start);
    }

    /// Mark the game open again.
    pub fn reset(&mut self) {
        self.actions.push(HostedAction::Reset);
    }

    /// Set (or clear) the game's timer.
    pub fn set_timer(&mut self, at: Option<Instant>) {
        self.actions.push(HostedAction::Timer(at));
    }

    /// The actions so far, oldest first, leaving the buffer empty for the next call.
    pub fn drain(&mut self) -> std::vec::Drain<'_, HostedAction> {
        self.actions.drain(..)
    }
}

/// A hosted game's answer to "may this member join?": the JOIN_RESPONSE reason either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinVerdict {
    /// The member joins; JOIN_RESPONSE(1, reason).
    Accept(&'static str),
    /// The member does not; JOIN_RESPONSE(0, reason).
    Refuse(&'static str),
}

/// A game type the server hosts. `players` is always the game's players in join order after
/// the event (so without a player who left, with one who joined).
pub trait HostedGame: fmt::Debug + Send {
    /// Seats (GAME_INFO's max players).
    fn max_players(&self) -> u32;

    /// Whether `member` may join now (after the lobby's own checks: the game exists, the member
    /// is not in it, a seat is free, the game is not closed).
    fn can_join(&self, member: MemberId, players: &[i32]) -> JoinVerdict;

    /// `member` joined.
    fn player_joined(
        &mut self,
        now: Instant,
        member: MemberId,
        players: &[i32],
        out: &mut HostedOut,
    );

    /// `member` left (LEAVE_GAME, or it left the lobby).
    fn player_left(&mut self, now: Instant, member: MemberId, players: &[i32], out: &mut HostedOut);

    /// A player's TO_OWNER reached the game.
    fn message(
        &mut self,
        now: Instant,
        from: MemberId,
        app_code: u32,
        body: &[u8],
        out: &mut HostedOut,
    );

    /// The timer set with [`HostedAction::Timer`] fired.
    fn timer(&mut self, now: Instant, out: &mut HostedOut);
}
