//! `lobby-join` and `lobby-idle`: members signing in to the general lobby
//! (docs/protocols/general-lobby.md), plus the frame helpers and the sign-in reader that every
//! general lobby mode shares (`lobby-chat` signs its members in with them too).
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
    next_frame, ClientRepr, GameInfo, Next, ServerRepr, GAME_CLOSED, GAME_HOSTED, GAME_IN_PROGRESS,
    GAME_LOCKED, HEADER_LEN, PROTOCOL_VERSION, TOKEN_LEN,
};

use super::stats::Stats;
use super::tcp_engine::{each_frame_by, Ctx, Cut, Holding, Script, Step};

/// The game type of the games this tool creates, and the only type it joins.
pub const GAME_TYPE: &str = "lobby-load";
/// Longest server payload the tool accepts: no server message has more than nine parameters
/// and none is longer than 65,535 bytes, so 1 MiB bounds every legitimate frame.
pub const MAX_SERVER_PAYLOAD: usize = 1024 * 1024;
/// A server frame of any legitimate size, header included.
pub const MAX_FRAME: usize = HEADER_LEN + MAX_SERVER_PAYLOAD;
/// Joinable games a member remembers from its sync (it joins one of them).
const MAX_OPEN_GAMES: usize = 64;
/// Seats of the games `lobby-join` creates: the creator and one joiner.
const SEATS: u32 = 2;
/// Flags that make a game unjoinable for this tool.
const UNJOINABLE: u32 = GAME_LOCKED | GAME_CLOSED | GAME_IN_PROGRESS | GAME_HOSTED;

/// Appends `msg` to `out`.
pub fn push(out: &mut Vec<u8>, msg: &ClientRepr<'_>) {
    let at = out.len();
    out.resize(at + msg.buffer_len(), 0);
    msg.emit(&mut out[at..]);
}

/// Hands every complete server frame at the front of `data` to `each` until it returns a
/// step; a malformed or oversized frame fails. Returns the bytes consumed and the step.
pub fn each_frame<'a>(
    data: &'a [u8],
    each: impl FnMut(ServerRepr<'a>) -> Option<Step>,
) -> (usize, Step) {
    each_frame_by(data, cut_frame, each)
}

/// The next general lobby server frame of `data`.
fn cut_frame(data: &[u8]) -> Cut<ServerRepr<'_>> {
    match next_frame(data, MAX_SERVER_PAYLOAD) {
        Next::NeedMore => Cut::NeedMore,
        Next::Oversized { .. } => Cut::Fail("oversized_frame"),
        Next::Frame { frame, consumed } => match ServerRepr::parse(&frame) {
            Ok(repr) => Cut::Frame(repr, consumed),
            Err(e) => Cut::Fail(e.as_str()),
        },
    }
}

/// Usernames unique to this process (its id is in each) and to each sign-in, within the
/// lobby's 24 characters.
#[derive(Debug)]
pub struct Usernames {
    prefix: char,
    pid: u32,
    next: u64,
}

impl Usernames {
    /// Names starting with `prefix` (one letter per mode, so modes run side by side differ).
    pub fn new(prefix: char) -> Usernames {
        Usernames {
            prefix,
            pid: std::process::id(),
            next: 0,
        }
    }

    /// The next name: prefix, process id and a counter, at most 1 + 8 + 1 + 14 characters
    /// for the first 10^14 names.
    pub fn next_name(&mut self) -> String {
        self.next += 1;
        format!("{}{:x}-{}", self.prefix, self.pid, self.next)
    }
}

/// Where a member's sign-in is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SignInStep {
    /// Waiting for HELLO.
    #[default]
    Hello,
    /// Waiting for CHALLENGE.
    Challenge,
    /// SIGN_IN written, waiting for WELCOME.
    Welcome,
    /// Reading the sync; `first` until the member's own MEMBER_INFO came.
    Sync {
        /// The member id WELCOME gave.
        member: i32,
        /// The next MEMBER_INFO must be the member's own.
        first: bool,
    },
    /// SYNC_DONE read.
    Done {
        /// The member id WELCOME gave.
        member: i32,
    },
}

/// What one frame meant for a sign-in in progress.
#[derive(Debug)]
pub enum SignInEvent<'a> {
    /// Nothing to do.
    Nothing,
    /// The challenge came: write SIGN_IN now.
    SendSignIn,
    /// A game of the sync.
    Game(GameInfo<'a>),
    /// SYNC_DONE: the member is signed in with this id.
    Synced(i32),
}

/// Moves `step` on with one server frame; an error names a refusal, an ERROR frame's code or
/// a frame out of the documented order.
pub fn sign_in_frame<'a>(
    step: &mut SignInStep,
    repr: ServerRepr<'a>,
) -> Result<SignInEvent<'a>, &'static str> {
    let event = match (*step, repr) {
        (_, ServerRepr::Error { code, .. }) => return Err(code.as_str()),
        (SignInStep::Hello, ServerRepr::Hello { version, .. }) => {
            if version != PROTOCOL_VERSION {
                return Err("bad_protocol_version");
            }
            *step = SignInStep::Challenge;
            SignInEvent::Nothing
        }
        (SignInStep::Challenge | SignInStep::Welcome, ServerRepr::Challenge { failed, .. }) => {
            if failed {
                return Err("sign_in_refused");
            }
            if *step == SignInStep::Welcome {
                return Err("challenge_twice");
            }
            *step = SignInStep::Welcome;
            SignInEvent::SendSignIn
        }
        (SignInStep::Welcome, ServerRepr::Welcome { member, .. }) => {
            *step = SignInStep::Sync {
                member,
                first: true,
            };
            SignInEvent::Nothing
        }
        (SignInStep::Sync { member, first }, ServerRepr::MemberInfo { id, .. }) => {
            if first && id != member {
                return Err("sync_not_self_first");
            }
            *step = SignInStep::Sync {
                member,
                first: false,
            };
            SignInEvent::Nothing
        }
        (SignInStep::Sync { first: false, .. }, ServerRepr::GameInfo(game)) => {
            SignInEvent::Game(game)
        }
        (SignInStep::Sync { member, first }, ServerRepr::SyncDone) => {
            if first {
                return Err("sync_not_self_first");
            }
            *step = SignInStep::Done { member };
            SignInEvent::Synced(member)
        }
        // A frame meant for someone else: the server routed a broadcast to a fresh connection.
        (SignInStep::Hello, _) => return Err("frame_before_hello"),
        _ => return Err("unexpected_frame"),
    };
    Ok(event)
}

/// SIGN_IN for a new session as `username`, without a password.
pub fn sign_in(username: &str) -> ClientRepr<'_> {
    ClientRepr::SignIn {
        username,
        password: "",
        resume: None,
    }
}

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
    use lobbyd::wire::general::{ErrorCode, Words, TOKEN_LEN};

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
    fn sign_in_follows_the_documented_order() {
        let token = [7u8; TOKEN_LEN];
        let mut step = SignInStep::default();
        let hello = ServerRepr::Hello {
            server_name: "lobbyd",
            version: PROTOCOL_VERSION,
        };
        assert!(matches!(
            sign_in_frame(&mut step, hello),
            Ok(SignInEvent::Nothing)
        ));
        let challenge = ServerRepr::Challenge {
            text: "hi",
            failed: false,
        };
        assert!(matches!(
            sign_in_frame(&mut step, challenge),
            Ok(SignInEvent::SendSignIn)
        ));
        let welcome = ServerRepr::Welcome {
            member: 9,
            token: &token,
        };
        assert!(sign_in_frame(&mut step, welcome).is_ok());
        let other = ServerRepr::MemberInfo {
            id: 3,
            flags: 0,
            username: "a",
            display_name: "a",
        };
        // Another member before the member's own MEMBER_INFO breaks the sync order.
        let mut early = step;
        assert_eq!(
            sign_in_frame(&mut early, other).err(),
            Some("sync_not_self_first")
        );
        let own = ServerRepr::MemberInfo {
            id: 9,
            flags: 0,
            username: "b",
            display_name: "b",
        };
        assert!(sign_in_frame(&mut step, own).is_ok());
        assert!(sign_in_frame(&mut step, other).is_ok());
        assert!(matches!(
            sign_in_frame(&mut step, ServerRepr::GameInfo(game(4, 0, &[3], 2))),
            Ok(SignInEvent::Game(g)) if g.id == 4
        ));
        assert!(matches!(
            sign_in_frame(&mut step, ServerRepr::SyncDone),
            Ok(SignInEvent::Synced(9))
        ));
        assert_eq!(step, SignInStep::Done { member: 9 });
    }

    #[test]
    fn refusals_and_errors_end_the_sign_in() {
        let mut step = SignInStep::Welcome;
        let refused = ServerRepr::Challenge {
            text: "name taken",
            failed: true,
        };
        assert_eq!(
            sign_in_frame(&mut step, refused).err(),
            Some("sign_in_refused")
        );
        let error = ServerRepr::Error {
            code: ErrorCode::LimitReached,
            request: 3,
            text: "full",
        };
        assert_eq!(
            sign_in_frame(&mut SignInStep::Hello, error).err(),
            Some("limit_reached")
        );
        let old = ServerRepr::Hello {
            server_name: "x",
            version: 2,
        };
        assert_eq!(
            sign_in_frame(&mut SignInStep::Hello, old).err(),
            Some("bad_protocol_version")
        );
        assert_eq!(
            sign_in_frame(&mut SignInStep::Hello, ServerRepr::MemberLeft { id: 4 }).err(),
            Some("frame_before_hello")
        );
        assert_eq!(
            sign_in_frame(&mut SignInStep::Challenge, ServerRepr::SyncDone).err(),
            Some("unexpected_frame")
        );
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

    #[test]
    fn usernames_are_distinct_and_fit() {
        let mut names = Usernames::new('j');
        let a = names.next_name();
        let b = names.next_name();
        assert_ne!(a, b);
        assert!(a.starts_with('j') && a.len() <= 24, "{a}");
        names.next = 99_999_999_999_998;
        assert!(names.next_name().len() <= 24);
    }

    #[test]
    fn frames_are_cut_and_a_split_one_waits() {
        let mut bytes = Vec::new();
        let pong = ServerRepr::Pong { payload: b"x" };
        let mut buf = vec![0u8; pong.buffer_len()];
        pong.emit(&mut buf);
        bytes.extend_from_slice(&buf);
        bytes.extend_from_slice(&buf[..5]);
        let mut seen = 0;
        let (used, step) = each_frame(&bytes, |_| {
            seen += 1;
            None
        });
        assert_eq!((used, step, seen), (buf.len(), Step::More, 1));
        let mut huge = buf.clone();
        huge[4..8].copy_from_slice(&(MAX_SERVER_PAYLOAD as u32 + 1).to_le_bytes());
        assert_eq!(each_frame(&huge, |_| None).1, Step::Fail("oversized_frame"));
    }
}
