//! `tcp-join` and `tcp-idle`: players joining the R-Type TCP lobby (docs/protocols/tcp-lobby.md),
//! plus the frame helpers every TCP lobby script shares.
//!
//! - `tcp-join`: connect, CONNECT_REQ, wait for CONNECT_ACK and the player's own PLAYER_JOIN
//!   (the last of its roster; latency from the CONNECT_REQ write to it), then DISCONNECT and
//!   wait for the server to close (so the TIME_WAIT is the server's, not the tool's ports');
//!   repeat. One completed request is one join.
//! - `tcp-idle`: the same join, then the connection is held, silent, until the run ends.
//!   Held connections are *joined* players (CONNECT_ACK received), so the server's cost per
//!   connection includes its player record and its share of a party, what an operator pays
//!   per idle player. At most [`IDLE_RAMP`] joins are in progress at once, so the listen
//!   backlog never overflows. Counts: `held` at the end, `held_peak`, and `all_held_ms`, when
//!   every client first held its connection. Under caps each held connection sends
//!   READY_REQ(not ready) every third of lobbyd's default `--idle-timeout` (a request that
//!   changes nothing and tells its party nothing, but keeps it from being closed as idle);
//!   without caps the server's `--idle-timeout` must be longer than the run. Its `--max-rooms`
//!   must allow `concurrency / --max-players` parties ([`super::fit`] clamps under caps).

use std::time::{Duration, Instant};

use lobbyd::wire::tcp_lobby::{
    name_field, next_frame_max, ClientRepr, ErrorCode, Next, ServerRepr, HEADER_LEN,
    MAX_SERVER_PAYLOAD,
};

use super::stats::Stats;
use super::tcp_engine::{each_frame_by, Ctx, Cut, Holding, Script, Step};

/// Joins in progress at once in `tcp-idle`.
pub const IDLE_RAMP: usize = 256;
/// A server frame of any legitimate size.
pub const MAX_FRAME: usize = HEADER_LEN + MAX_SERVER_PAYLOAD;

/// Appends `msg` to `out`.
pub fn push(out: &mut Vec<u8>, msg: ClientRepr<'_>) {
    let at = out.len();
    out.resize(at + msg.buffer_len(), 0);
    msg.emit(&mut out[at..]);
}

/// The name of client `i`: distinct per client, so never taken in its party.
pub fn player_name(i: usize) -> [u8; 32] {
    name_field(&format!("load{i}"))
}

/// The error kind an ERROR_MSG counts as.
pub fn error_kind(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::LobbyFull => "lobby_full",
        ErrorCode::NameTaken => "name_taken",
        ErrorCode::InvalidName => "invalid_name",
        ErrorCode::GameAlreadyStarted => "game_already_started",
        ErrorCode::NotAllReady => "not_all_ready",
        ErrorCode::MinPlayersNotReached => "not_enough_players",
        ErrorCode::Generic => "generic_error",
        ErrorCode::Unknown(_) => "unknown_error_code",
    }
}

/// Hands every complete server frame at the front of `data` to `each` until it returns a
/// step; a malformed frame fails the cycle. Returns the bytes consumed and the step.
pub fn each_frame<'a>(
    data: &'a [u8],
    each: impl FnMut(ServerRepr<'a>) -> Option<Step>,
) -> (usize, Step) {
    each_frame_by(data, cut_frame, each)
}

/// The next TCP lobby server frame of `data`.
pub fn cut_frame(data: &[u8]) -> Cut<ServerRepr<'_>> {
    match next_frame_max(data, MAX_SERVER_PAYLOAD) {
        Next::NeedMore => Cut::NeedMore,
        Next::Oversized { .. } => Cut::Fail("oversized_frame"),
        Next::Frame { frame, consumed } => match ServerRepr::parse(&frame) {
            Ok(repr) => Cut::Frame(repr, consumed),
            Err(e) => Cut::Fail(e.as_str()),
        },
    }
}

/// One joining client.
#[derive(Debug, Default)]
pub struct Joiner {
    sent: Option<Instant>,
    me: Option<(u8, u64)>,
    joined: bool,
    /// A held connection's next keepalive.
    keepalive_at: Option<Instant>,
}

/// `tcp-join` (`hold == false`) and `tcp-idle` (`hold == true`).
pub struct LobbyJoin {
    hold: bool,
    holding: Holding,
    keepalive: Option<Duration>,
}

impl LobbyJoin {
    /// The script for `concurrency` clients; `hold` keeps each joined connection open, and
    /// shows it alive every `keepalive` if given.
    pub fn new(hold: bool, concurrency: usize, keepalive: Option<Duration>) -> LobbyJoin {
        LobbyJoin {
            hold,
            holding: Holding::new(concurrency),
            keepalive,
        }
    }

    /// What a held connection waits for: its next keepalive, or nothing.
    fn held(&self, c: &mut Joiner, now: Instant) -> Step {
        let Some(every) = self.keepalive else {
            return Step::Hold;
        };
        let at = *c.keepalive_at.get_or_insert(now + every);
        Step::Sleep(at.saturating_duration_since(now))
    }

    /// Judges one frame; `Some` ends the batch.
    fn frame(&mut self, c: &mut Joiner, repr: ServerRepr<'_>, ctx: &mut Ctx<'_>) -> Option<Step> {
        match repr {
            ServerRepr::ConnectAck { hash, number } if c.me.is_none() => {
                c.me = Some((number, hash));
                None
            }
            ServerRepr::PlayerJoin { number, hash, .. } if c.me == Some((number, hash)) => {
                if c.joined {
                    return Some(Step::Fail("duplicate_join"));
                }
                c.joined = true;
                let sent = c.sent.unwrap_or(ctx.now);
                ctx.stats.complete(ctx.now.saturating_duration_since(sent));
                if self.hold {
                    self.holding.hold(ctx.now);
                    return Some(self.held(c, ctx.now));
                }
                push(ctx.out, ClientRepr::Disconnect);
                None
            }
            // The rest of the party: earlier members, newcomers, their flags, departures.
            ServerRepr::PlayerJoin { .. }
            | ServerRepr::PlayerReady { .. }
            | ServerRepr::PlayerLeft { .. } => None,
            ServerRepr::Error { code, .. } => Some(Step::Fail(error_kind(code))),
            _ => Some(Step::Fail("unexpected_frame")),
        }
    }
}

impl Script for LobbyJoin {
    type Client = Joiner;
    const MAX_PENDING: usize = MAX_FRAME;

    fn opened(&mut self, i: usize, c: &mut Joiner, ctx: &mut Ctx<'_>) {
        let name = player_name(i);
        push(ctx.out, ClientRepr::ConnectReq { name: &name });
        c.sent = Some(ctx.now);
    }

    fn received(
        &mut self,
        _i: usize,
        c: &mut Joiner,
        data: &[u8],
        ctx: &mut Ctx<'_>,
    ) -> (usize, Step) {
        let (used, step) = each_frame(data, |repr| self.frame(c, repr, ctx));
        // A held connection stays held whatever its party says afterwards.
        match step {
            Step::More if self.hold && c.joined => (used, self.held(c, ctx.now)),
            _ => (used, step),
        }
    }

    fn woken(&mut self, _i: usize, c: &mut Joiner, ctx: &mut Ctx<'_>) -> Step {
        if !(self.hold && c.joined) {
            return Step::Done;
        }
        // Not ready, as it is: nothing changes, nobody is told, the idle timer restarts.
        push(ctx.out, ClientRepr::ReadyReq { ready: false });
        c.keepalive_at = None;
        self.held(c, ctx.now)
    }

    fn eof(&mut self, _i: usize, c: &mut Joiner, _ctx: &mut Ctx<'_>) -> Step {
        match (c.joined, self.hold) {
            (true, false) => Step::Done,
            (true, true) => Step::Fail("closed_while_held"),
            (false, _) => Step::Fail("closed_before_join"),
        }
    }

    fn timed_out(&mut self, _i: usize, c: &mut Joiner) -> &'static str {
        if c.joined {
            "disconnect"
        } else {
            "join"
        }
    }

    fn ended(&mut self, _i: usize, c: &mut Joiner) {
        if self.hold && c.joined {
            self.holding.release();
        }
    }

    fn finish(&mut self, stats: &mut Stats) {
        if self.hold {
            self.holding.report(stats);
        }
    }
}
