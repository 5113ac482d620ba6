//! `lobby-join` and `lobby-idle`: members signing in to the general lobby
//! (docs/protocols/general-lobby.md) with the client part every general lobby mode shares
//! (`general_client.rs`: frames, usernames, the sign-in reader).
//!
//! Sign-in, as a client does it: wait for HELLO and CHALLENGE(failed 0), write SIGN_IN (a
//! username unique to this process and cycle, no password, no resume token), then read
//! WELCOME, the sync (the member's own MEMBER_INFO first, every other member, every game) and
//! SYNC_DONE. Latency runs from the SIGN_IN write to SYNC_DONE; one completed request is one
//! member synced.
//!
//! - `lobby-join`: after the sync, create or join, then leave and close; repeat. Synced members
//!   take turns: one creates a game of two seats, answers every JOIN_ASK yes and waits at most
//!   `--hold` ms (default 250) for a joiner; the next joins: it asks (JOIN_REQUEST) for one of
//!   the joinable games of this tool its sync showed (type `lobby-load`, a free seat, no flag),
//!   or for the first one announced within `--hold` ms. Strict turns keep creators and joiners
//!   even, however the clients' cycles line up. A joiner leaves once accepted, a creator once
//!   joined or when its wait is over; each then waits for the GAME_INFO without it (or
//!   GAME_CLOSED) and closes. A refused join (a faster joiner took the seat, the game closed
//!   meanwhile) or a joiner that found no game ends the cycle normally. Counts: `cycles`,
//!   `games_created`, `creators_joined`, `creators_alone`, `joins_accepted`, `joins_refused`,
//!   `joiners_alone`.
//! - `lobby-idle`: sign in, then hold the connection, silent, until the run ends, reading and
//!   checking every broadcast. Counts as `tcp-idle`: `held`, `held_peak`, `all_held_ms`.
//!
//! Against lobbyd's defaults (under caps): a closed member stays away for
//! `--lobby-resume-grace` (30 s), so fresh sign-ins would grow the lobby by one member a
//! cycle; each `lobby-join` client therefore resumes its member (SIGN_IN with the username
//! and the token its last WELCOME gave) after a cycle that ended cleanly, and signs in afresh
//! if the server refuses the token (`resumes_refused`, e.g. a server without grace). Held
//! `lobby-idle` members PING every third of `--idle-timeout`. The per-address limits
//! (`--lobby-max-conns-per-ip`, `--lobby-conn-rate`) are kept by the source pool
//! ([`super::fit::source_pool`]). Without caps (`scripts/bench.sh`) every sign-in is fresh:
//! lobbyd runs with `--lobby-resume-grace 0` and an `--idle-timeout` longer than the run.

use std::time::{Duration, Instant};

use lobbyd::wire::general::{
    ClientRepr, GameInfo, ServerRepr, GAME_CLOSED, GAME_HOSTED, GAME_IN_PROGRESS, GAME_LOCKED,
    TOKEN_LEN,
};

use super::general_client::{
    each_frame, push, sign_in, sign_in_frame, SignInEvent, SignInStep, Usernames, MAX_FRAME,
};
use super::stats::Stats;
use super::tcp_engine::{Ctx, Holding, Script, Step};

/// The game type of the games this tool creates, and the only type it joins.
pub const GAME_TYPE: &str = "lobby-load";
/// Joinable games a member remembers from its sync (it joins one of them).
const MAX_OPEN_GAMES: usize = 64;
/// Seats of the games `lobby-join` creates: the creator and one joiner.
const SEATS: u32 = 2;
/// Flags that make a game unjoinable for this tool.
const UNJOINABLE: u32 = GAME_LOCKED | GAME_CLOSED | GAME_IN_PROGRESS | GAME_HOSTED;

/// A member a client can take back on its next cycle: its username and the token its last
/// WELCOME gave.
#[derive(Clone, Debug)]
struct Session {
    username: String,
    token: [u8; TOKEN_LEN],
}

/// True for a game this tool may ask to join.
fn joinable(game: &GameInfo<'_>) -> bool {
    game.game_type == GAME_TYPE
        && game.flags & UNJOINABLE == 0
        && !game.players.is_empty()
        && game.players.len() < game.max_players as usize
}

/// What a `lobby-join` or `lobby-idle` member does after its sync.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Stage {
    /// Before SYNC_DONE.
    #[default]
    SigningIn,
    /// CREATE_GAME written, waiting for the game's GAME_INFO.
    Creating,
    /// Owner of `game`, waiting for a joiner until `until`.
    Hosting { game: i32, until: Instant },
    /// A joiner whose sync showed no open game, waiting for one until `until`.
    Browsing { until: Instant },
    /// JOIN_REQUEST written for `game`.
    Asking { game: i32 },
    /// LEAVE_GAME written for `game`.
    Leaving { game: i32 },
    /// `lobby-idle`: signed in and silent.
    Held,
}

/// One general lobby member, one cycle at a time.
#[derive(Debug, Default)]
pub struct Visitor {
    sign_in: SignInStep,
    /// When SIGN_IN was written.
    sent: Option<Instant>,
    member: i32,
    /// Joinable games of the sync.
    open_games: Vec<i32>,
    /// The JOIN_REQUEST's request code.
    request: i32,
    stage: Stage,
    /// The username SIGN_IN named.
    username: String,
    /// SIGN_IN carried a resume token.
    resuming: bool,
    /// The cycle ended as the script meant it to (its member can be resumed).
    clean: bool,
    /// A held member's next PING.
    keepalive_at: Option<Instant>,
}

/// `lobby-join` (`hold == false`) and `lobby-idle` (`hold == true`).
pub struct GeneralJoin {
    hold: bool,
    partner_wait: Duration,
    names: Usernames,
    holding: Holding,
    /// Each client's member to resume (`None` in every slot when resuming is off).
    sessions: Vec<Option<Session>>,
    resume: bool,
    keepalive: Option<Duration>,
    resumes: u64,
    resumes_refused: u64,
    /// Synced members so far: even turns create, odd ones join.
    turn: i32,
    cycles: u64,
    games_created: u64,
    creators_joined: u64,
    creators_alone: u64,
    joins_accepted: u64,
    joins_refused: u64,
    joiners_alone: u64,
}

impl GeneralJoin {
    /// The script for `clients` clients; `hold` keeps each signed-in member connected (with a
    /// PING every `keepalive`, if given), a creator waits `partner_wait` for a joiner, and
    /// `resume` takes each client's member back on its next cycle.
    pub fn new(
        hold: bool,
        clients: usize,
        partner_wait: Duration,
        resume: bool,
        keepalive: Option<Duration>,
    ) -> GeneralJoin {
        GeneralJoin {
            hold,
            partner_wait,
            names: Usernames::new(if hold { 'i' } else { 'j' }),
            holding: Holding::new(clients),
            sessions: vec![None; clients],
            resume,
            keepalive,
            resumes: 0,
            resumes_refused: 0,
            turn: 0,
            cycles: 0,
            games_created: 0,
            creators_joined: 0,
            creators_alone: 0,
            joins_accepted: 0,
            joins_refused: 0,
            joiners_alone: 0,
        }
    }

    /// After the sync: create a game, or join one of the open games seen (or wait for one).
    fn create_or_join(&mut self, i: usize, c: &mut Visitor, ctx: &mut Ctx<'_>) {
        self.turn = self.turn.wrapping_add(1);
        c.request = self.turn;
        if self.turn % 2 == 0 {
            push(
                ctx.out,
                &ClientRepr::CreateGame {
                    max_players: SEATS,
                    game_type: GAME_TYPE,
                    version: "1",
                    flags: 0,
                    name: "load",
                    password: "",
                },
            );
            c.stage = Stage::Creating;
            return;
        }
        if c.open_games.is_empty() {
            c.stage = Stage::Browsing {
                until: ctx.now + self.partner_wait,
            };
            return;
        }
        // Spread the joiners that saw the same games over them.
        let pick = (i + c.request.unsigned_abs() as usize) % c.open_games.len();
        let game = c.open_games[pick];
        Self::ask(c, game, ctx);
    }

    fn ask(c: &mut Visitor, game: i32, ctx: &mut Ctx<'_>) {
        push(
            ctx.out,
            &ClientRepr::JoinRequest {
                game,
                request: c.request,
                password: "",
            },
        );
        c.stage = Stage::Asking { game };
    }

    fn leave(c: &mut Visitor, game: i32, ctx: &mut Ctx<'_>) {
        push(ctx.out, &ClientRepr::LeaveGame { game });
        c.stage = Stage::Leaving { game };
    }

    /// Writes SIGN_IN for client `i`: a resume of its last member if it has one, else a new
    /// member.
    fn write_sign_in(&mut self, i: usize, c: &mut Visitor, ctx: &mut Ctx<'_>) {
        match self.sessions.get_mut(i).and_then(Option::take) {
            Some(session) => {
                push(
                    ctx.out,
                    &ClientRepr::SignIn {
                        username: &session.username,
                        password: "",
                        resume: Some(&session.token),
                    },
                );
                c.username = session.username;
                c.resuming = true;
            }
            None => {
                c.username = self.names.next_name();
                push(ctx.out, &sign_in(&c.username));
                c.resuming = false;
            }
        }
        c.sent = Some(ctx.now);
    }

    /// One frame before SYNC_DONE.
    fn signing_in(
        &mut self,
        i: usize,
        c: &mut Visitor,
        repr: ServerRepr<'_>,
        ctx: &mut Ctx<'_>,
    ) -> Option<Step> {
        match repr {
            ServerRepr::Challenge { failed: true, .. } if c.resuming => {
                // The token lapsed (or the server keeps no away members): a new member.
                self.resumes_refused += 1;
                self.write_sign_in(i, c, ctx);
                return None;
            }
            ServerRepr::Welcome { token, .. } if self.resume => {
                if let Some(slot) = self.sessions.get_mut(i) {
                    *slot = Some(Session {
                        username: c.username.clone(),
                        token: *token,
                    });
                }
                if c.resuming {
                    self.resumes += 1;
                }
            }
            _ => {}
        }
        match sign_in_frame(&mut c.sign_in, repr) {
            Err(kind) => Some(Step::Fail(kind)),
            Ok(SignInEvent::Nothing) => None,
            Ok(SignInEvent::SendSignIn) => {
                self.write_sign_in(i, c, ctx);
                None
            }
            Ok(SignInEvent::Game(game)) => {
                if joinable(&game) && c.open_games.len() < MAX_OPEN_GAMES {
                    c.open_games.push(game.id);
                }
                None
            }
            Ok(SignInEvent::Synced(member)) => {
                c.member = member;
                let sent = c.sent.unwrap_or(ctx.now);
                ctx.stats.complete(ctx.now.saturating_duration_since(sent));
                if self.hold {
                    self.holding.hold(ctx.now);
                    c.stage = Stage::Held;
                    return Some(self.held(c, ctx.now));
                }
                self.create_or_join(i, c, ctx);
                None
            }
        }
    }

    /// One frame after SYNC_DONE; `Some` ends the batch.
    fn frame(
        &mut self,
        i: usize,
        c: &mut Visitor,
        repr: ServerRepr<'_>,
        ctx: &mut Ctx<'_>,
    ) -> Option<Step> {
        let me = c.member;
        match (c.stage, repr) {
            (Stage::SigningIn, repr) => return self.signing_in(i, c, repr, ctx),
            (_, ServerRepr::Error { code, .. }) => return Some(Step::Fail(code.as_str())),
            (Stage::Creating, ServerRepr::GameInfo(game)) if game.owner == me => {
                self.games_created += 1;
                c.stage = Stage::Hosting {
                    game: game.id,
                    until: ctx.now + self.partner_wait,
                };
            }
            (Stage::Hosting { game, .. }, ServerRepr::JoinAsk { game: id, ask, .. })
                if id == game =>
            {
                let yes = ClientRepr::JoinAnswer {
                    ask,
                    accept: true,
                    reason: "",
                };
                push(ctx.out, &yes);
            }
            (Stage::Hosting { game, .. }, ServerRepr::GameInfo(info))
                if info.id == game && info.players.len() >= 2 =>
            {
                self.creators_joined += 1;
                Self::leave(c, game, ctx);
            }
            (Stage::Browsing { .. }, ServerRepr::GameInfo(info))
                if joinable(&info) && info.owner != me =>
            {
                Self::ask(c, info.id, ctx);
            }
            (
                Stage::Asking { game },
                ServerRepr::JoinResponse {
                    game: id,
                    request,
                    accepted,
                    ..
                },
            ) if id == game => {
                if request != c.request {
                    return Some(Step::Fail("wrong_request_code"));
                }
                if !accepted {
                    self.joins_refused += 1;
                    self.cycles += 1;
                    c.clean = true;
                    return Some(Step::Done);
                }
                self.joins_accepted += 1;
                Self::leave(c, game, ctx);
            }
            (Stage::Leaving { game }, ServerRepr::GameClosed { id }) if id == game => {
                self.cycles += 1;
                c.clean = true;
                return Some(Step::Done);
            }
            (Stage::Leaving { game }, ServerRepr::GameInfo(info))
                if info.id == game && !info.players.iter().any(|p| p == me) =>
            {
                self.cycles += 1;
                c.clean = true;
                return Some(Step::Done);
            }
            // The lobby's news about others: members coming and going, their games and chat.
            // JOIN_ASKs for a game being left pass to its next owner.
            (
                _,
                ServerRepr::MemberInfo { .. }
                | ServerRepr::MemberLeft { .. }
                | ServerRepr::GameInfo(_)
                | ServerRepr::GameClosed { .. }
                | ServerRepr::ChatFrom { .. }
                | ServerRepr::JoinAsk { .. }
                | ServerRepr::Pong { .. },
            ) => {}
            _ => return Some(Step::Fail("unexpected_frame")),
        }
        None
    }

    /// What a member whose batch raised nothing waits for: a creator or a joiner without a
    /// game sleeps until its deadline (then leaves its game, or closes), a held member holds.
    fn waiting(&mut self, c: &mut Visitor, ctx: &mut Ctx<'_>) -> Step {
        let until = match c.stage {
            Stage::Held => return self.held(c, ctx.now),
            Stage::Hosting { until, .. } | Stage::Browsing { until } => until,
            _ => return Step::More,
        };
        if let Some(left) = until.checked_duration_since(ctx.now) {
            if !left.is_zero() {
                return Step::Sleep(left);
            }
        }
        match c.stage {
            Stage::Hosting { game, .. } => {
                self.creators_alone += 1;
                Self::leave(c, game, ctx);
                Step::More
            }
            _ => {
                self.joiners_alone += 1;
                self.cycles += 1;
                c.clean = true;
                Step::Done
            }
        }
    }

    /// What a held member waits for: its next PING, or nothing.
    fn held(&self, c: &mut Visitor, now: Instant) -> Step {
        let Some(every) = self.keepalive else {
            return Step::Hold;
        };
        let at = *c.keepalive_at.get_or_insert(now + every);
        Step::Sleep(at.saturating_duration_since(now))
    }
}

impl Script for GeneralJoin {
    type Client = Visitor;
    const MAX_PENDING: usize = MAX_FRAME;

    fn opened(&mut self, _i: usize, _c: &mut Visitor, _ctx: &mut Ctx<'_>) {
        // The server speaks first (HELLO, CHALLENGE).
    }

    fn received(
        &mut self,
        i: usize,
        c: &mut Visitor,
        data: &[u8],
        ctx: &mut Ctx<'_>,
    ) -> (usize, Step) {
        let (used, step) = each_frame(data, |repr| self.frame(i, c, repr, ctx));
        match step {
            Step::More => (used, self.waiting(c, ctx)),
            step => (used, step),
        }
    }

    fn eof(&mut self, _i: usize, c: &mut Visitor, _ctx: &mut Ctx<'_>) -> Step {
        Step::Fail(match c.stage {
            Stage::SigningIn => "closed_before_sync",
            Stage::Held => "closed_while_held",
            _ => "closed_by_server",
        })
    }

    fn woken(&mut self, _i: usize, c: &mut Visitor, ctx: &mut Ctx<'_>) -> Step {
        if c.stage == Stage::Held && c.keepalive_at.is_some_and(|at| at <= ctx.now) {
            // PING counts as activity; its PONG is read and let pass.
            push(ctx.out, &ClientRepr::Ping { payload: b"" });
            c.keepalive_at = None;
        }
        self.waiting(c, ctx)
    }

    fn timed_out(&mut self, _i: usize, c: &mut Visitor) -> &'static str {
        match c.stage {
            Stage::SigningIn => "sync",
            Stage::Creating => "create",
            Stage::Asking { .. } => "join_response",
            Stage::Leaving { .. } => "leave",
            Stage::Hosting { .. } | Stage::Browsing { .. } | Stage::Held => "held",
        }
    }

    fn ended(&mut self, i: usize, c: &mut Visitor) {
        if c.stage == Stage::Held {
            self.holding.release();
        }
        if !c.clean {
            // Its member may still sit in a game: the next cycle signs in afresh.
            if let Some(slot) = self.sessions.get_mut(i) {
                *slot = None;
            }
        }
    }

    fn finish(&mut self, stats: &mut Stats) {
        if self.hold {
            self.holding.report(stats);
            return;
        }
        stats.set("cycles", self.cycles);
        stats.set("games_created", self.games_created);
        stats.set("creators_joined", self.creators_joined);
        stats.set("creators_alone", self.creators_alone);
        stats.set("joins_accepted", self.joins_accepted);
        stats.set("joins_refused", self.joins_refused);
        stats.set("joiners_alone", self.joiners_alone);
        if self.resume {
            stats.set("resumes", self.resumes);
            stats.set("resumes_refused", self.resumes_refused);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lobbyd::wire::general::Words;

    fn game(id: i32, flags: u32, players: &'static [i32], seats: u32) -> GameInfo<'static> {
        GameInfo {
            id,
            owner: players.first().copied().unwrap_or(0),
            max_players: seats,
            name: "load",
            game_type: GAME_TYPE,
            version: "1",
            flags,
            players: Words::new(players),
            player_flags: Words::new(&[]),
        }
    }

    #[test]
    fn only_open_games_of_this_tool_are_joined() {
        assert!(joinable(&game(1, 0, &[5], 2)));
        assert!(!joinable(&game(1, 0, &[5, 6], 2)), "full");
        assert!(!joinable(&game(1, GAME_LOCKED, &[5], 2)));
        assert!(!joinable(&game(1, GAME_IN_PROGRESS, &[5], 2)));
        assert!(!joinable(&game(1, 0, &[], 2)), "no owner yet");
        let mut other = game(1, 0, &[5], 2);
        other.game_type = "tictactoe";
        assert!(!joinable(&other));
    }
}
