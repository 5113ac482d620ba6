//! Connections and members of the general lobby (docs/protocols/general-lobby.md, "Sign-in",
//! "Resume", "Members"): HELLO and CHALLENGE, SIGN_IN with its name rules, duplicate names,
//! tries and account checks, resume tokens, the away flag and its grace, SET_MEMBER, the
//! sign-in deadline and the idle check.
//!
//! A connection holds no member (no seat, no name) until WELCOME; the connections still
//! signing in are kept in opening order so the driver can evict the oldest at its cap. Only
//! complete, valid frames count as activity.
//!
//! The members themselves (names, tokens, away flag, MEMBER_INFO) are in `super::roster`.
//!
//! This module must not touch games: what follows a WELCOME or a departure in the games (the
//! sync's GAME_INFOs, seats given up) is done by the façade, `super::lobby`, with the outcome
//! returned here. It must not read a clock or draw randomness of its own (tokens come from the
//! injected [`TokenSource`]).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::accounts::{self, LoginPolicy, UserId, VerifyResult};
use crate::capacity::shrink_spare;
use crate::ratelimit::TokenBucket;
use crate::time::TimerKey;
use crate::wire::general::{code, ErrorCode, ServerRepr, PROTOCOL_VERSION, TOKEN_LEN};

use super::output::Ctx;
use super::roster::{valid_name, Reattached, Roster, NAME_INVALID};
use super::types::{CloseReason, ConnId, GeneralRefusal, JobId, MemberId, Timer, TokenSource};

/// The capacity each of the hash tables keeps however few connections are left
/// ([`shrink_spare`]'s floor).
const TABLE_FLOOR: usize = 16;

/// The CHALLENGE text sent on accept.
pub const CHALLENGE_TEXT: &str = "sign in";

const NAME_TAKEN: GeneralRefusal = GeneralRefusal::new(ErrorCode::NameInvalid, "name taken");
const WRONG_PASSWORD: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::WrongPassword, "wrong name or password");
const PASSWORD_REQUIRED: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::WrongPassword, "password required");
const BAD_TOKEN: GeneralRefusal = GeneralRefusal::new(
    ErrorCode::WrongPassword,
    "resume token unknown, used or expired",
);
const TRY_AGAIN: &str = "try again";
/// The notice a member's old connection gets when the account's owner signs in again
/// elsewhere with the password.
pub const TAKEN_OVER: &str = "signed in on another connection";
const LOBBY_FULL: GeneralRefusal = GeneralRefusal::new(ErrorCode::LimitReached, "lobby full");
const SIGNING_IN: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::NotSignedIn, "sign-in in progress");

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for a SIGN_IN.
    Challenge,
    /// Its SIGN_IN's password is being checked.
    Verifying(JobId),
    /// Signed in.
    Member(MemberId),
    /// The core closed it; its frames are ignored until the driver reports the close.
    Closing,
}

#[derive(Debug)]
struct Conn {
    /// Opening order, also telling a reused `ConnId` apart on the timer wheel.
    serial: u64,
    phase: Phase,
    tries: u32,
    last_active: Instant,
    timer: Option<TimerKey>,
    frames: TokenBucket,
}

/// What a frame's sender is, as far as the dispatcher is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sender {
    /// Unknown or closing connection, or rate-limited (answered already): drop the frame.
    Drop,
    /// Not signed in yet.
    Guest,
    /// Signed in as this member.
    Member(MemberId),
}

/// A WELCOME the façade must follow with the sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Welcomed {
    /// The connection the sync goes to.
    pub(crate) conn: ConnId,
    /// The member.
    pub(crate) member: MemberId,
    /// True for a resume (the member existed already).
    pub(crate) resumed: bool,
    /// True when the others' view of the member changed (a new member, or one back from
    /// away), so its MEMBER_INFO goes to them.
    pub(crate) announce: bool,
}

/// The connections and members of the lobby.
pub(crate) struct Members {
    conns: HashMap<ConnId, Conn>,
    /// Connections not signed in, by opening order.
    guests: BTreeMap<u64, ConnId>,
    next_serial: u64,
    roster: Roster,
    verifications: HashMap<JobId, (ConnId, Box<str>)>,
    next_job: u64,
    shutting_down: bool,
}

impl Members {
    pub(crate) fn new(tokens: TokenSource) -> Members {
        Members {
            conns: HashMap::new(),
            guests: BTreeMap::new(),
            next_serial: 0,
            roster: Roster::new(tokens),
            verifications: HashMap::new(),
            next_job: 1,
            shutting_down: false,
        }
    }

    /// A new connection: HELLO and CHALLENGE(0), and its sign-in deadline.
    pub(crate) fn open(&mut self, cx: &mut Ctx<'_>, conn: ConnId) {
        let serial = self.next_serial;
        self.next_serial += 1;
        let deadline = cx.now + cx.config.sign_in_timeout;
        let timer = Some(cx.timers.insert(deadline, Timer::Conn(conn, serial)));
        let frames = TokenBucket::new(
            cx.now,
            cx.config.frame_rate,
            Duration::from_secs(1),
            cx.config.frame_burst,
        );
        self.conns.insert(
            conn,
            Conn {
                serial,
                phase: Phase::Challenge,
                tries: 0,
                last_active: cx.now,
                timer,
                frames,
            },
        );
        self.guests.insert(serial, conn);
        cx.stats.connections_opened += 1;
        let mark = cx.out.mark();
        cx.out.encode(&ServerRepr::Hello {
            server_name: &cx.config.server_name,
            version: PROTOCOL_VERSION,
        });
        cx.out.encode(&ServerRepr::Challenge {
            text: CHALLENGE_TEXT,
            failed: false,
        });
        let frames = cx.out.since(mark);
        cx.out.send(conn, frames);
    }

    /// Takes a frame from `conn` through its frame rate; over it the frame is answered ERROR
    /// 10 and dropped.
    pub(crate) fn admit(&mut self, cx: &mut Ctx<'_>, conn: ConnId, request: u32) -> Sender {
        let Some(state) = self.conns.get_mut(&conn) else {
            return Sender::Drop;
        };
        if state.phase == Phase::Closing {
            return Sender::Drop;
        }
        if !state.frames.try_take(cx.now, 1) {
            cx.refuse(
                conn,
                request,
                GeneralRefusal::new(ErrorCode::RateLimited, "too many frames"),
            );
            return Sender::Drop;
        }
        match state.phase {
            Phase::Member(member) => Sender::Member(member),
            _ => Sender::Guest,
        }
    }

    /// A complete, valid frame arrived: the idle clock restarts.
    pub(crate) fn touch(&mut self, conn: ConnId, now: Instant) {
        if let Some(state) = self.conns.get_mut(&conn) {
            state.last_active = now;
        }
    }

    /// SIGN_IN from a connection not signed in. Refusals are answered here (CHALLENGE(1),
    /// and a close once the tries are spent); a WELCOME is returned for the façade to send with
    /// the sync.
    pub(crate) fn sign_in(
        &mut self,
        cx: &mut Ctx<'_>,
        conn: ConnId,
        username: &str,
        password: &str,
        resume: Option<&[u8; TOKEN_LEN]>,
    ) -> Option<Welcomed> {
        match self.conns.get(&conn).map(|state| state.phase) {
            Some(Phase::Challenge) => {}
            Some(Phase::Verifying(_)) => {
                cx.refuse(conn, code::SIGN_IN, SIGNING_IN);
                return None;
            }
            _ => return None,
        }
        if !valid_name(username) {
            return self.refuse(cx, conn, NAME_INVALID);
        }
        if let Some(token) = resume {
            return self.resume(cx, conn, username, token);
        }
        if let Some(holder) = self.roster.holder(username) {
            // A name held by an account's member may be taken over with that account's
            // password (checked below, decided in `verified`); a guest's name is taken.
            let account = self.roster.account_of(holder);
            if account.is_none() || cx.config.login == LoginPolicy::Off || password.is_empty() {
                return self.refuse(cx, conn, NAME_TAKEN);
            }
        }
        let check = match cx.config.login {
            LoginPolicy::Off => false,
            LoginPolicy::Optional => !password.is_empty(),
            LoginPolicy::Required if password.is_empty() => {
                return self.refuse(cx, conn, PASSWORD_REQUIRED)
            }
            LoginPolicy::Required => true,
        };
        if !check {
            return self.welcome_new(cx, conn, username, None);
        }
        // A name the accounts cannot hold (over 64 bytes) has no password to check.
        if !accounts::valid_name(username) {
            return self.refuse(cx, conn, WRONG_PASSWORD);
        }
        let job = JobId(self.next_job);
        self.next_job += 1;
        self.verifications.insert(job, (conn, username.into()));
        if let Some(state) = self.conns.get_mut(&conn) {
            state.phase = Phase::Verifying(job);
        }
        cx.out.verify(conn, job, username, password);
        None
    }

    /// The driver's verdict on a password check.
    pub(crate) fn verified(
        &mut self,
        cx: &mut Ctx<'_>,
        job: JobId,
        result: VerifyResult,
    ) -> Option<Welcomed> {
        let waiting = self.verifications.remove(&job).filter(|(conn, _)| {
            self.conns.get(conn).map(|state| state.phase) == Some(Phase::Verifying(job))
        });
        let Some((conn, username)) = waiting else {
            cx.stats.stale_verify_results += 1;
            return None;
        };
        if let Some(state) = self.conns.get_mut(&conn) {
            state.phase = Phase::Challenge;
        }
        match result {
            // The name is held (it was, or another connection took it while the password was
            // checked): the account's own member is taken over, anyone else's name is taken.
            VerifyResult::Valid(user) => match self.roster.holder(&username) {
                Some(holder) if self.roster.account_of(holder) == Some(user) => {
                    self.take_over(cx, conn, holder)
                }
                Some(_) => self.refuse(cx, conn, NAME_TAKEN),
                None => self.welcome_new(cx, conn, &username, Some(user)),
            },
            VerifyResult::Invalid => self.refuse(cx, conn, WRONG_PASSWORD),
            VerifyResult::Busy => {
                cx.stats.verify_busy += 1;
                self.try_again(cx, conn)
            }
        }
    }

    /// A refused SIGN_IN: CHALLENGE(1, reason), one try spent, closed when none are left.
    fn refuse(
        &mut self,
        cx: &mut Ctx<'_>,
        conn: ConnId,
        refusal: GeneralRefusal,
    ) -> Option<Welcomed> {
        cx.stats.refuse(refusal.code);
        cx.out.reply(
            conn,
            &ServerRepr::Challenge {
                text: refusal.text,
                failed: true,
            },
        );
        let spent = self.conns.get_mut(&conn).is_some_and(|state| {
            state.tries += 1;
            state.tries >= cx.config.sign_in_tries
        });
        if spent {
            self.close(cx, conn, CloseReason::TriesExhausted);
        }
        None
    }

    fn welcome_new(
        &mut self,
        cx: &mut Ctx<'_>,
        conn: ConnId,
        username: &str,
        account: Option<UserId>,
    ) -> Option<Welcomed> {
        let Some(id) = self.roster.next_id(cx.config.max_members) else {
            cx.refuse(conn, code::SIGN_IN, LOBBY_FULL);
            self.close(cx, conn, CloseReason::LobbyFull);
            return None;
        };
        let Some(token) = self.roster.fresh_token() else {
            return self.try_again(cx, conn);
        };
        self.roster.insert(cx, id, conn, username, token, account);
        self.seat(cx, conn, id);
        cx.stats.sign_ins += 1;
        Some(Welcomed {
            conn,
            member: id,
            resumed: false,
            announce: true,
        })
    }

    /// CHALLENGE(1, "try again") without spending a try: the server, not the client, failed.
    fn try_again(&mut self, cx: &mut Ctx<'_>, conn: ConnId) -> Option<Welcomed> {
        cx.out.reply(
            conn,
            &ServerRepr::Challenge {
                text: TRY_AGAIN,
                failed: true,
            },
        );
        None
    }

    /// SIGN_IN with a resume token: the same member back, on this connection.
    fn resume(
        &mut self,
        cx: &mut Ctx<'_>,
        conn: ConnId,
        username: &str,
        token: &[u8; TOKEN_LEN],
    ) -> Option<Welcomed> {
        let Some(id) = self.roster.by_token(token, username) else {
            return self.refuse(cx, conn, BAD_TOKEN);
        };
        // Single use: `reattach` retires the token (unless no fresh one could be drawn).
        let welcomed = self.reattach(cx, conn, id, "session resumed on another connection");
        if welcomed.is_some() {
            cx.stats.resumes += 1;
        }
        welcomed
    }

    /// A SIGN_IN with the right password of the account that holds `member`: the member moves
    /// to `conn` as on a resume (games, seats and ownerships kept); its old connection, if
    /// any, gets ERROR(0, 0, [`TAKEN_OVER`]) and is closed.
    fn take_over(&mut self, cx: &mut Ctx<'_>, conn: ConnId, member: MemberId) -> Option<Welcomed> {
        let welcomed = self.reattach(cx, conn, member, TAKEN_OVER);
        if welcomed.is_some() {
            cx.stats.takeovers += 1;
        }
        welcomed
    }

    /// Moves `id` to `conn` with a fresh token: its grace ends, the away flag goes, and a live
    /// old connection gets ERROR(0, 0, `notice`) and is closed.
    fn reattach(
        &mut self,
        cx: &mut Ctx<'_>,
        conn: ConnId,
        id: MemberId,
        notice: &str,
    ) -> Option<Welcomed> {
        let Some(fresh) = self.roster.fresh_token() else {
            return self.try_again(cx, conn);
        };
        let Reattached { old, was_away } = self.roster.reattach(cx, id, conn, fresh)?;
        if let Some(old) = old {
            // A half-dead connection the server had not noticed yet, or the member signed in
            // again elsewhere: the new one wins.
            cx.notice(old, notice);
            cx.out.close(old);
            cx.stats.close(CloseReason::Replaced);
            if let Some(state) = self.conns.get_mut(&old) {
                state.phase = Phase::Closing;
                if let Some(key) = state.timer.take() {
                    cx.timers.cancel(key);
                }
            }
        }
        self.seat(cx, conn, id);
        Some(Welcomed {
            conn,
            member: id,
            resumed: true,
            announce: was_away,
        })
    }

    /// Makes `conn` the connection of `member`: routes, phase, idle clock.
    fn seat(&mut self, cx: &mut Ctx<'_>, conn: ConnId, member: MemberId) {
        cx.out.attach(member, conn);
        let Some(state) = self.conns.get_mut(&conn) else {
            return;
        };
        state.phase = Phase::Member(member);
        self.guests.remove(&state.serial);
        if let Some(key) = state.timer.take() {
            cx.timers.cancel(key);
        }
        let idle_at = state.last_active + cx.config.idle_timeout;
        state.timer = Some(cx.timers.insert(idle_at, Timer::Conn(conn, state.serial)));
    }

    /// The core closes `conn`: Close after what is queued, frames ignored from now on, its
    /// member (if any) away. Returns a member that must leave at once (no resume grace).
    pub(crate) fn close(
        &mut self,
        cx: &mut Ctx<'_>,
        conn: ConnId,
        reason: CloseReason,
    ) -> Option<MemberId> {
        let state = self.conns.get_mut(&conn)?;
        if state.phase == Phase::Closing {
            return None;
        }
        let phase = std::mem::replace(&mut state.phase, Phase::Closing);
        self.guests.remove(&state.serial);
        if let Some(key) = state.timer.take() {
            cx.timers.cancel(key);
        }
        cx.out.close(conn);
        cx.stats.close(reason);
        self.forget_phase(cx, phase)
    }

    /// The driver reports `conn` closed. Returns a member that must leave at once.
    pub(crate) fn closed(&mut self, cx: &mut Ctx<'_>, conn: ConnId) -> Option<MemberId> {
        let state = self.conns.remove(&conn)?;
        self.guests.remove(&state.serial);
        if let Some(key) = state.timer {
            cx.timers.cancel(key);
        }
        self.forget_phase(cx, state.phase)
    }

    fn forget_phase(&mut self, cx: &mut Ctx<'_>, phase: Phase) -> Option<MemberId> {
        match phase {
            Phase::Member(member) => self.roster.go_away(cx, member, self.shutting_down),
            Phase::Verifying(job) => {
                self.verifications.remove(&job);
                None
            }
            Phase::Challenge | Phase::Closing => None,
        }
    }

    /// A connection's deadline fired: the sign-in deadline closes a guest, the idle check
    /// closes a silent member's connection or looks again later. Returns a member that must
    /// leave at once.
    pub(crate) fn conn_timer(
        &mut self,
        cx: &mut Ctx<'_>,
        conn: ConnId,
        serial: u64,
    ) -> Option<MemberId> {
        let state = self.conns.get_mut(&conn).filter(|s| s.serial == serial)?;
        state.timer = None;
        match state.phase {
            Phase::Challenge | Phase::Verifying(_) => {
                cx.notice(conn, "sign-in timed out");
                self.close(cx, conn, CloseReason::SignInTimeout)
            }
            Phase::Member(_) => {
                let idle_at = state.last_active + cx.config.idle_timeout;
                if cx.now < idle_at {
                    state.timer = Some(cx.timers.insert(idle_at, Timer::Conn(conn, serial)));
                    return None;
                }
                cx.notice(conn, "idle timeout");
                self.close(cx, conn, CloseReason::Idle)
            }
            Phase::Closing => None,
        }
    }

    /// Gives back the tables' spare capacity once they are less than a quarter full (after a
    /// crowd has left, the hash tables would otherwise keep their peak size).
    pub(crate) fn shrink(&mut self) {
        shrink_spare(&mut self.conns, TABLE_FLOOR);
        self.roster.shrink(TABLE_FLOOR);
        shrink_spare(&mut self.verifications, TABLE_FLOOR);
    }

    /// SIGTERM: ERROR(0, 0, "server shutting down") and a close to every connection; nobody
    /// is announced away afterwards.
    pub(crate) fn shutdown(&mut self, cx: &mut Ctx<'_>) {
        self.shutting_down = true;
        let mut open: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, state)| state.phase != Phase::Closing)
            .map(|(&conn, _)| conn)
            .collect();
        open.sort_unstable();
        for conn in open {
            cx.notice(conn, "server shutting down");
            self.close(cx, conn, CloseReason::Shutdown);
        }
    }

    /// True if the connection is known and the core has not closed it.
    pub(crate) fn is_open(&self, conn: ConnId) -> bool {
        self.conns
            .get(&conn)
            .is_some_and(|state| state.phase != Phase::Closing)
    }

    /// True if the connection carries a signed-in member.
    pub(crate) fn is_member_conn(&self, conn: ConnId) -> bool {
        self.conns
            .get(&conn)
            .is_some_and(|state| matches!(state.phase, Phase::Member(_)))
    }

    /// The oldest connection that has not signed in, for the driver's eviction at its cap.
    pub(crate) fn oldest_guest(&self) -> Option<ConnId> {
        self.guests.values().next().copied()
    }

    /// Connections the core tracks (closing ones included until the driver reports them).
    pub(crate) fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Connections not signed in.
    pub(crate) fn guests(&self) -> usize {
        self.guests.len()
    }

    /// Password checks in flight.
    pub(crate) fn verifications(&self) -> usize {
        self.verifications.len()
    }

    /// The members themselves.
    pub(crate) fn roster(&self) -> &Roster {
        &self.roster
    }

    /// The members themselves, to change.
    pub(crate) fn roster_mut(&mut self) -> &mut Roster {
        &mut self.roster
    }
}

impl std::fmt::Debug for Members {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Members")
            .field("conns", &self.conns.len())
            .field("members", &self.roster.len())
            .field("verifications", &self.verifications.len())
            .finish_non_exhaustive()
    }
}
