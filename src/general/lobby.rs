//! The sans-IO general lobby core, [`GeneralLobby`] (docs/protocols/general-lobby.md,
//! "Behaviour"; HOUSE-STYLE section 2).
//!
//! The driver cuts frames with `crate::wire::general::next_frame` and feeds them here with
//! `handle_frame` (or `handle_oversized` for a frame over the limit), reports opens, closes,
//! password verdicts and time through the other `handle_*` methods, and drains
//! [`GeneralOutput`]s with [`GeneralLobby::poll_output`], reading each run of bytes with
//! [`GeneralLobby::frame`], and its next deadline with [`GeneralLobby::poll_timeout`].
//!
//! This file is the façade: it decodes, routes each request to the module that owns it
//! (`members`, `games`, `chat`, `relay`) and joins their outcomes (the sync after a WELCOME,
//! the seats a departing member gives up). It must not own a socket, read a clock, touch the
//! account database or draw randomness of its own, and must not panic on anything a peer sends.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::accounts::VerifyResult;
use crate::capacity::shrink_spare;
use crate::time::TimerWheel;
use crate::wire::general::{ClientRepr, Error, ErrorCode, Frame, ServerRepr};

use super::chat::{self, Speaker};
use super::chat_limits::ChatLimits;
use super::game::{ListFilter, NewGame};
use super::games::Games;
use super::members::{Members, Sender, Welcomed};
use super::output::{Ctx, FrameRef, GeneralOutput, Outbox};
use super::relay;
use super::stats::GeneralStats;
use super::types::{
    AskId, CloseReason, ConnId, GameId, GameView, GeneralConfig, GeneralRefusal, JobId,
    LeaveReason, MemberId, MemberView, Timer, TokenSource,
};

/// Timer granularity: deadlines fire at most this late.
const TIMER_TICK: Duration = Duration::from_millis(10);

/// Timer wheel slots (one revolution = 40.96 s; later deadlines wait a level up).
const TIMER_SLOTS: usize = 4096;

const NOT_SIGNED_IN: GeneralRefusal = GeneralRefusal::new(ErrorCode::NotSignedIn, "sign in first");
const ALREADY_SIGNED_IN: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::AlreadyInGame, "already signed in");
const UNKNOWN_MEMBER: GeneralRefusal = GeneralRefusal::new(ErrorCode::UnknownId, "unknown member");
const FRAME_TOO_LARGE: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::FrameTooLarge, "frame too large");

/// Builds a [`Ctx`] from the lobby's fields, leaving `members` and `games` free to borrow.
macro_rules! ctx {
    ($lobby:ident, $now:expr) => {
        Ctx {
            now: $now,
            config: &$lobby.config,
            out: &mut $lobby.out,
            timers: &mut $lobby.timers,
            stats: &mut $lobby.stats,
        }
    };
}

/// The general lobby: members, chat, games with owners, relay, game data, hosted games.
pub struct GeneralLobby {
    config: GeneralConfig,
    stats: GeneralStats,
    out: Outbox,
    timers: TimerWheel<Timer>,
    members: Members,
    games: Games,
    chat_limits: ChatLimits,
    /// The address of each connection the driver opened with one: per-address chat rates
    /// and game shares.
    addresses: HashMap<ConnId, IpAddr>,
}

impl std::fmt::Debug for GeneralLobby {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneralLobby")
            .field("members", &self.members)
            .field("games", &self.games.table().len())
            .field("outputs", &self.out.len())
            .finish_non_exhaustive()
    }
}

impl GeneralLobby {
    /// An empty lobby (plus the hosted games of `config`), drawing resume tokens from `tokens`.
    pub fn new(config: GeneralConfig, now: Instant, tokens: TokenSource) -> GeneralLobby {
        let chat_limits = ChatLimits::new(&config, now);
        let mut lobby = GeneralLobby {
            config,
            stats: GeneralStats::default(),
            out: Outbox::default(),
            timers: TimerWheel::new(now, TIMER_TICK, TIMER_SLOTS),
            members: Members::new(tokens),
            games: Games::new(),
            chat_limits,
            addresses: HashMap::new(),
        };
        let mut cx = ctx!(lobby, now);
        lobby.games.top_up_hosted(&mut cx);
        lobby
    }

    /// The settings in force.
    pub fn config(&self) -> &GeneralConfig {
        &self.config
    }

    /// A connection was accepted: HELLO and CHALLENGE(0) go out, and its sign-in deadline
    /// starts. Its address is unknown to the core, so the per-address chat rate and game
    /// shares do not apply to it (the driver uses [`GeneralLobby::handle_open_from`]).
    pub fn handle_open(&mut self, now: Instant, conn: ConnId) {
        self.out.begin();
        // A reused id without a close in between is a driver bug; forget the old one cleanly.
        self.handle_closed(now, conn);
        let mut cx = ctx!(self, now);
        self.members.open(&mut cx, conn);
    }

    /// As [`GeneralLobby::handle_open`], for a connection from `ip` (canonical: an IPv4
    /// address mapped into IPv6 given as IPv4): its member's chat lines count against the
    /// address's chat rate and the games it creates against the address's share. (Accept caps
    /// and rates per address stay the driver's business.)
    pub fn handle_open_from(&mut self, now: Instant, conn: ConnId, ip: IpAddr) {
        self.handle_open(now, conn);
        self.addresses.insert(conn, ip);
    }

    /// One complete frame from `conn` (from `next_frame`, so its payload is all there).
    /// Malformed frames are answered ERROR 2 (ERROR 14 for a code a client may not send) and
    /// counted; they do not count as activity.
    pub fn handle_frame(&mut self, now: Instant, conn: ConnId, frame: &Frame<&[u8]>) {
        self.out.begin();
        let mut cx = ctx!(self, now);
        let request = frame.code();
        let sender = self.members.admit(&mut cx, conn, request);
        if sender == Sender::Drop {
            return;
        }
        let parsed = match ClientRepr::parse(frame) {
            Ok(parsed) => parsed,
            Err(error) => {
                cx.stats.malformed(error);
                let code = match error {
                    Error::UnknownCode | Error::WrongDirection => ErrorCode::UnknownCode,
                    _ => ErrorCode::Malformed,
                };
                cx.refuse(conn, request, GeneralRefusal::new(code, error.text()));
                return;
            }
        };
        self.members.touch(conn, now);
        cx.stats.request(request);
        let (members, games) = (&mut self.members, &mut self.games);
        let result = match sender {
            Sender::Member(member) => {
                let from = Speaker {
                    member,
                    ip: self.addresses.get(&conn).copied(),
                };
                let chat_limits = &mut self.chat_limits;
                member_request(&mut cx, members, games, chat_limits, conn, from, parsed)
            }
            _ => guest_request(&mut cx, members, games, conn, parsed),
        };
        if let Err(refusal) = result {
            cx.refuse(conn, request, refusal);
        }
    }

    /// `conn` declared a frame longer than `max_frame`: ERROR 11 naming its code, then the
    /// connection is closed once that is flushed.
    pub fn handle_oversized(&mut self, now: Instant, conn: ConnId, code: u32) {
        self.out.begin();
        if !self.members.is_open(conn) {
            return;
        }
        let mut cx = ctx!(self, now);
        cx.refuse(conn, code, FRAME_TOO_LARGE);
        let gone = self.members.close(&mut cx, conn, CloseReason::Oversized);
        depart(
            &mut cx,
            &mut self.members,
            &mut self.games,
            gone,
            LeaveReason::Disconnected,
        );
    }

    /// The connection closed (the peer, an error, a slow reader the driver dropped, or after a
    /// [`GeneralOutput::Close`]). Its member, if any, is away for the resume grace.
    pub fn handle_closed(&mut self, now: Instant, conn: ConnId) {
        self.out.begin();
        self.addresses.remove(&conn);
        let mut cx = ctx!(self, now);
        let gone = self.members.closed(&mut cx, conn);
        depart(
            &mut cx,
            &mut self.members,
            &mut self.games,
            gone,
            LeaveReason::Disconnected,
        );
    }

    /// The driver's verdict on a [`GeneralOutput::Verify`].
    pub fn handle_verify_result(&mut self, now: Instant, job: JobId, result: VerifyResult) {
        self.out.begin();
        let mut cx = ctx!(self, now);
        if let Some(welcomed) = self.members.verified(&mut cx, job, result) {
            welcome(&mut cx, &self.members, &self.games, welcomed);
        }
    }

    /// Runs every deadline due at `now` (sign-in deadlines, idle checks, graces, asks, hosted
    /// games' timers), stopping early once `output_budget` outputs wait (the deadlines left
    /// are already due: [`GeneralLobby::poll_timeout`] says so).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.handle_timeout_within(now, usize::MAX);
    }

    /// As [`GeneralLobby::handle_timeout`], running at most `budget` deadlines (the driver
    /// bounds its work per loop pass); the rest stay due.
    pub fn handle_timeout_within(&mut self, now: Instant, budget: usize) {
        self.out.begin();
        for _ in 0..budget {
            if self.out.len() >= self.config.output_budget {
                if self.timers.next_deadline().is_some_and(|at| at <= now) {
                    self.stats.output_budget_stops += 1;
                }
                return;
            }
            let Some(timer) = self.timers.poll_expired(now) else {
                return;
            };
            let mut cx = ctx!(self, now);
            let (members, games) = (&mut self.members, &mut self.games);
            match timer {
                Timer::Conn(conn, serial) => {
                    let gone = members.conn_timer(&mut cx, conn, serial);
                    depart(&mut cx, members, games, gone, LeaveReason::Disconnected);
                }
                Timer::Grace(member) => {
                    let gone = members.roster_mut().grace_over(member).then_some(member);
                    depart(&mut cx, members, games, gone, LeaveReason::GraceExpired);
                }
                Timer::Ask(ask) => games.ask_expired(&mut cx, ask),
                Timer::Hosted(game) => games.hosted_timer(&mut cx, game),
                Timer::SlowMode => self.chat_limits.slow_mode_timer(&mut cx),
            }
        }
    }

    /// The periodic tidy (the driver calls it every few seconds): gives back memory the
    /// tables and the output arena hold beyond what the lobby now needs. Changes nothing
    /// visible; call it only once the outputs are drained.
    pub fn tidy(&mut self) {
        self.members.shrink();
        self.chat_limits.shrink();
        shrink_spare(&mut self.addresses, 64);
        self.out.release_spare();
    }

    /// SIGTERM: ERROR(0, 0, "server shutting down") and a close to every connection.
    pub fn handle_shutdown(&mut self, now: Instant) {
        self.out.begin();
        let mut cx = ctx!(self, now);
        self.members.shutdown(&mut cx);
    }

    /// The next thing the driver must do, oldest first.
    ///
    /// Contract: drain this after every `handle_*` call (in particular after each frame fed
    /// in), and copy each [`GeneralOutput::Send`]'s bytes with [`GeneralLobby::frame`] before
    /// the next `handle_*` call. One call produces at most about one output per present member
    /// plus a few (a chat line to the lobby, a GAME_INFO), and `handle_timeout` stops at
    /// `output_budget`, so the queue stays bounded and a flood's cost lands on the
    /// connection that sent it: its own send queue grows, not the core's.
    pub fn poll_output(&mut self) -> Option<GeneralOutput> {
        self.out.pop()
    }

    /// The bytes of a [`GeneralOutput::Send`]: one or more whole frames.
    pub fn frame(&self, frames: FrameRef) -> &[u8] {
        self.out.bytes(frames)
    }

    /// When [`GeneralLobby::handle_timeout`] must next be called, if ever.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next_deadline()
    }

    /// The counters.
    pub fn stats(&self) -> GeneralStats {
        let mut stats = self.stats.clone();
        stats.sends = self.out.sends;
        stats.bytes_encoded = self.out.bytes_encoded;
        stats
    }

    /// Every member, present or away, in id order.
    pub fn members(&self) -> impl Iterator<Item = MemberView<'_>> {
        self.members
            .roster()
            .views(|id| self.games.table().games_of(id))
    }

    /// Every game, in id order.
    pub fn games(&self) -> impl Iterator<Item = GameView<'_>> {
        self.games.views()
    }

    /// The players of a game in join order, with their player flags.
    pub fn roster(&self, game: GameId) -> Option<(&[i32], &[u32])> {
        self.games.table().roster(game)
    }

    /// True while the lobby's chat slow mode is on (docs/protocols/general-lobby.md, "Chat").
    pub fn chat_slow_mode(&self) -> bool {
        self.chat_limits.slow_mode()
    }

    /// Members, present or away.
    pub fn member_count(&self) -> usize {
        self.members.roster().len()
    }

    /// Members with a connection.
    pub fn present_count(&self) -> usize {
        self.out.present()
    }

    /// Games, hosted ones included.
    pub fn game_count(&self) -> usize {
        self.games.table().len()
    }

    /// JOIN_ASKs waiting for an owner.
    pub fn ask_count(&self) -> usize {
        self.games.asks()
    }

    /// Connections the core tracks (closing ones until the driver reports them closed).
    pub fn connection_count(&self) -> usize {
        self.members.connections()
    }

    /// True if `conn` carries a signed-in member (the driver counts its members by
    /// transport).
    pub fn is_member_conn(&self, conn: ConnId) -> bool {
        self.members.is_member_conn(conn)
    }

    /// Connections that have not signed in.
    pub fn guest_count(&self) -> usize {
        self.members.guests()
    }

    /// Password checks waiting for a verdict.
    pub fn verification_count(&self) -> usize {
        self.members.verifications()
    }

    /// Deadlines on the timer wheel.
    pub fn timer_count(&self) -> usize {
        self.timers.len()
    }

    /// Outputs waiting for the driver.
    pub fn output_count(&self) -> usize {
        self.out.len()
    }

    /// The oldest connection that has not signed in: the one the driver evicts (with
    /// `handle_closed` after closing it) when its connection cap is reached.
    pub fn oldest_guest(&self) -> Option<ConnId> {
        self.members.oldest_guest()
    }

    /// Test access to the output arena's sizes and the queue's capacity.
    #[cfg(test)]
    pub(crate) fn output_memory(&self) -> ((usize, usize), usize) {
        (self.out.arena_sizes(), self.out.queue_capacity())
    }
}

/// After a WELCOME: the sync as one run (WELCOME, MEMBER_INFO of the member then of every
/// other member, GAME_INFO of every game, SYNC_DONE), then its MEMBER_INFO to the others and,
/// after a resume, the JOIN_ASKs waiting on its games.
fn welcome(cx: &mut Ctx<'_>, members: &Members, games: &Games, welcomed: Welcomed) {
    let mark = cx.out.mark();
    members.roster().encode_welcome(cx.out, welcomed.member);
    games.table().encode_all(cx.out);
    cx.out.encode(&ServerRepr::SyncDone);
    let frames = cx.out.since(mark);
    cx.out.send(welcomed.conn, frames);
    if welcomed.announce {
        members.roster().announce(cx.out, welcomed.member);
    }
    if welcomed.resumed {
        games.resend_asks(cx.out, welcomed.member);
    }
}

/// `gone` (if any) leaves the lobby: its seats first (GAME_INFO or GAME_CLOSED), then
/// MEMBER_LEFT.
fn depart(
    cx: &mut Ctx<'_>,
    members: &mut Members,
    games: &mut Games,
    gone: Option<MemberId>,
    reason: LeaveReason,
) {
    if let Some(member) = gone {
        games.remove_member(cx, member);
        members.roster_mut().remove(cx, member, reason);
    }
}

/// A request from a connection that has not signed in: SIGN_IN and PING only.
fn guest_request(
    cx: &mut Ctx<'_>,
    members: &mut Members,
    games: &Games,
    conn: ConnId,
    request: ClientRepr<'_>,
) -> Result<(), GeneralRefusal> {
    match request {
        ClientRepr::SignIn {
            username,
            password,
            resume,
        } => {
            if let Some(welcomed) = members.sign_in(cx, conn, username, password, resume) {
                welcome(cx, members, games, welcomed);
            }
            Ok(())
        }
        ClientRepr::Ping { payload } => {
            cx.out.reply(conn, &ServerRepr::Pong { payload });
            Ok(())
        }
        _ => Err(NOT_SIGNED_IN),
    }
}

/// A refusal naming a member as "not in the game" is "unknown member" when no member has
/// that id at all.
fn named(
    members: &Members,
    target: MemberId,
    result: Result<(), GeneralRefusal>,
) -> Result<(), GeneralRefusal> {
    match result {
        Err(refusal)
            if refusal.code == ErrorCode::NotInGame && !members.roster().contains(target) =>
        {
            Err(UNKNOWN_MEMBER)
        }
        other => other,
    }
}

/// A request from a signed-in member.
fn member_request(
    cx: &mut Ctx<'_>,
    members: &mut Members,
    games: &mut Games,
    chat_limits: &mut ChatLimits,
    conn: ConnId,
    from: Speaker,
    request: ClientRepr<'_>,
) -> Result<(), GeneralRefusal> {
    let member = from.member;
    match request {
        ClientRepr::SignIn { .. } => Err(ALREADY_SIGNED_IN),
        ClientRepr::SetMember {
            flags,
            display_name,
        } => members
            .roster_mut()
            .set_member(cx.out, member, flags, display_name),
        ClientRepr::Chat { game, text } => chat::chat(
            cx,
            members.roster_mut(),
            chat_limits,
            games,
            from,
            game,
            text,
        ),
        ClientRepr::PrivateChat { to, text } => {
            chat::private(cx, members.roster_mut(), chat_limits, from, to, text)
        }
        ClientRepr::CreateGame {
            max_players,
            game_type,
            version,
            flags,
            name,
            password,
        } => {
            let new = NewGame {
                max_players,
                game_type,
                version,
                flags,
                name,
                password,
            };
            games.create(cx, member, from.ip, new).map(drop)
        }
        ClientRepr::JoinRequest {
            game,
            request,
            password,
        } => {
            games.join_request(cx, member, GameId(game), request, password);
            Ok(())
        }
        ClientRepr::JoinAnswer {
            ask,
            accept,
            reason,
        } => games.join_answer(cx, member, AskId(ask), accept, reason),
        ClientRepr::LeaveGame { game } => games.leave(cx, member, GameId(game)),
        ClientRepr::SetGame {
            game,
            flags,
            password,
        } => games.set_game(cx, member, GameId(game), flags, password),
        ClientRepr::SetReady { game, ready } => games.set_ready(cx, member, GameId(game), ready),
        ClientRepr::StartGame { game } => games.start(cx, member, GameId(game)),
        ClientRepr::Kick {
            game,
            member: target,
            reason,
        } => {
            let target = MemberId(target);
            let result = games.kick(cx, member, GameId(game), target, reason);
            named(members, target, result)
        }
        ClientRepr::GiveOwner {
            game,
            member: target,
        } => {
            let target = MemberId(target);
            let result = games.give_owner(cx, member, GameId(game), target);
            named(members, target, result)
        }
        ClientRepr::StoreData { game, key, value } => {
            games.store_data(cx, member, GameId(game), key, value)
        }
        ClientRepr::FetchData { game, key } => games.fetch_data(cx.out, member, GameId(game), key),
        ClientRepr::ToOwner {
            game,
            app_code,
            body,
        } => relay::to_owner(cx, games, member, GameId(game), app_code, body),
        ClientRepr::ToAll {
            game,
            app_code,
            body,
        } => relay::to_all(cx, games, member, GameId(game), app_code, body),
        ClientRepr::ToPlayer {
            game,
            member: target,
            app_code,
            body,
        } => {
            let target = MemberId(target);
            let result = relay::to_player(cx, games, member, GameId(game), target, app_code, body);
            named(members, target, result)
        }
        ClientRepr::ListGames {
            game_type,
            flags_clear,
            min_free,
        } => {
            let filter = ListFilter {
                game_type,
                flags_clear,
                min_free,
            };
            games.table().list(cx.out, conn, filter);
            Ok(())
        }
        ClientRepr::Ping { payload } => {
            cx.out.reply(conn, &ServerRepr::Pong { payload });
            Ok(())
        }
    }
}
