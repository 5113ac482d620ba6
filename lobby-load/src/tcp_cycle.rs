//! `tcp-cycle`: whole TCP lobby parties, from CONNECT_REQ to the game instance
//! (docs/protocols/tcp-lobby.md "Countdown and GAME_START", instance.md HELLO).
//!
//! Every client connects and joins; the server groups connections into parties as they
//! arrive, so a client learns its party from its roster (PLAYER_JOIN, PLAYER_READY,
//! PLAYER_LEFT). Each client sends READY_REQ once its own PLAYER_JOIN arrives; once the
//! roster holds `--members` players, all ready, the member with the lowest number sends the
//! one START_REQ. `--members` must equal lobbyd's `--max-players` (4 by default both), and
//! `--concurrency` be a multiple of it, so every party fills.
//!
//! With `--spread MS` the starters do not send START_REQ at once: parties start in rounds,
//! each at a random phase over MS once every party is ready ([`super::start_rounds`]); their
//! members hold meanwhile, without a timeout.
//!
//! COUNTDOWN lateness: value `v` is due at `start + (first - v)`, where `start` is when the
//! party's START_REQ was written (the starter is one of this tool's clients, found by its
//! hash) and `first` the first value sent (`--countdown`). Each COUNTDOWN every member
//! receives is one sample: arrival minus due time, where arrival is when the frame reached
//! the member's socket (the kernel's receive timestamp, [`lobbyd::net::io::rx_time`]: over loopback,
//! lobbyd's write), so the tool's own busy passes do not count as lobbyd's lateness.
//! `seen_p50_us` / `seen_p99_us` / `seen_max_us` give the same samples taken when the tool's
//! poll returned with them, as this tool measured before.
//!
//! On GAME_START each member closes its lobby connection (RFC 5.8), says HELLO with its hash
//! as token on the announced instance port (from its connection's source address; the announced IP is
//! used when it is loopback or the target, else the target's), checks that WELCOME gives it
//! its lobby number as slot, sends LEAVE, and starts over. One completed request is one
//! party whose members were all welcomed; its latency runs from START_REQ to the last
//! WELCOME, so it includes the countdown. Counts: `players` welcomed, `countdown_frames`,
//! `before_last_p50_us` / `_p99_us` / `_max_us` (the lateness of every COUNTDOWN but 0.0:
//! 0.0 comes with GAME_START, and the tool's own work on the GAME_STARTs read before it
//! — closing, binding a UDP socket, HELLO — delays reading the rest when many parties end
//! at once),
//! `parties_failed` (a member failed after GAME_START).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::Interest;

use lobbyd::wire::instance::{self, ClientMsg, ServerMsg};
use lobbyd::wire::tcp_lobby::{ClientRepr, GameStart, ServerRepr};

use super::histogram::Histogram;
use super::options::Options;
use super::sources::is_loopback;
use super::start_rounds::StartRounds;
use super::stats::Stats;
use super::tcp_engine::{Ctx, Script, Step};
use super::tcp_modes::{each_frame, error_kind, player_name, push, MAX_FRAME};

/// Most roster entries a client tracks (lobbyd's `--max-players` is at most 64).
const MAX_ROSTER: usize = 64;
const HELLO_SEQ: u16 = 1;
const LEAVE_SEQ: u16 = 2;

/// One member of a party, one cycle at a time.
#[derive(Debug, Default)]
pub struct Player {
    me: Option<(u8, u64)>,
    /// number, hash, ready.
    roster: Vec<(u8, u64, bool)>,
    ready_sent: bool,
    start_sent: bool,
    /// `--spread`: this starter's START_REQ waits for its scheduled time.
    start_scheduled: bool,
    /// The first COUNTDOWN value and when it was due.
    schedule: Option<(f64, Instant)>,
    /// The party's key (its lowest-numbered member's hash) once GAME_START arrived.
    party: Option<u64>,
    udp: Option<UdpSocket>,
    welcomed: bool,
}

/// A party between GAME_START and its last WELCOME.
#[derive(Debug)]
struct Tally {
    remaining: usize,
    began: Instant,
    failed: bool,
}

/// The `tcp-cycle` script.
pub struct Cycle {
    members: usize,
    target: SocketAddr,
    by_hash: HashMap<u64, usize>,
    start_sent: Vec<Option<Instant>>,
    parties: HashMap<u64, Tally>,
    players: u64,
    countdown_frames: u64,
    /// Lateness of the COUNTDOWNs before 0.0, in nanoseconds.
    before_last: Histogram,
    /// Lateness of every COUNTDOWN taken when the tool's poll returned, in nanoseconds.
    seen: Histogram,
    parties_failed: u64,
    /// `--spread`: when each party starts.
    rounds: Option<StartRounds>,
    buf: Box<[u8; 2048]>,
}

impl Cycle {
    /// The script for the options' clients.
    pub fn new(options: &Options) -> Cycle {
        Cycle {
            members: options.members,
            target: options.target,
            by_hash: HashMap::with_capacity(options.concurrency),
            start_sent: vec![None; options.concurrency],
            parties: HashMap::new(),
            players: 0,
            countdown_frames: 0,
            before_last: Histogram::new(),
            seen: Histogram::new(),
            parties_failed: 0,
            rounds: options.spread.map(|spread| {
                StartRounds::new(
                    spread,
                    options.concurrency,
                    options.members,
                    options.timeout,
                )
            }),
            buf: Box::new([0; 2048]),
        }
    }

    /// The lowest-numbered member of `p`'s roster.
    fn starter(p: &Player) -> Option<(u8, u64, bool)> {
        p.roster
            .iter()
            .copied()
            .min_by_key(|&(number, _, _)| number)
    }

    /// Every member is in and ready.
    fn complete(&self, p: &Player) -> bool {
        p.roster.len() >= self.members && p.roster.iter().all(|m| m.2)
    }

    /// The lowest-numbered member sends START_REQ once the party is full and ready (with
    /// `--spread`, at the time its round gives it).
    fn maybe_start(&mut self, i: usize, p: &mut Player, ctx: &mut Ctx<'_>) {
        let lowest = Self::starter(p).map(|(number, hash, _)| (number, hash));
        if !p.start_sent && self.complete(p) && lowest.is_some() && lowest == p.me {
            p.start_sent = true;
            match self.rounds.as_mut() {
                Some(rounds) => {
                    p.start_scheduled = true;
                    rounds.wait(i, ctx.now);
                }
                None => self.send_start(i, ctx),
            }
        }
    }

    fn send_start(&mut self, i: usize, ctx: &mut Ctx<'_>) {
        // The clock now, not `ctx.now` (when the loop's poll returned): the request is written
        // right after this call, and handling the events before it may have taken
        // milliseconds, which would count as every COUNTDOWN of the party being late.
        self.start_sent[i] = Some(Instant::now());
        push(ctx.out, ClientRepr::StartReq);
    }

    /// When this party's START_REQ was written, if one of our clients wrote it.
    fn start_time(&self, p: &Player) -> Option<Instant> {
        let (_, hash, _) = Self::starter(p)?;
        let j = *self.by_hash.get(&hash)?;
        self.start_sent.get(j).copied().flatten()
    }

    fn countdown(&mut self, p: &mut Player, remaining: f32, ctx: &mut Ctx<'_>) {
        self.countdown_frames += 1;
        let value = f64::from(remaining);
        let (first, first_due) = match p.schedule {
            Some(schedule) => schedule,
            None => {
                let due = self.start_time(p).unwrap_or(ctx.now);
                p.schedule = Some((value, due));
                (value, due)
            }
        };
        let offset = Duration::from_secs_f64((first - value).clamp(0.0, 3600.0));
        let due = first_due + offset;
        let late = ctx.arrived.saturating_duration_since(due);
        ctx.stats.lateness(late);
        let nanos = |late: Duration| u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
        if value > 0.0 {
            self.before_last.record(nanos(late));
        }
        self.seen
            .record(nanos(ctx.now.saturating_duration_since(due)));
    }

    fn game_start(&mut self, p: &mut Player, gs: GameStart<'_>, ctx: &mut Ctx<'_>) -> Step {
        let Some((number, hash)) = p.me else {
            return Step::Fail("unexpected_frame");
        };
        let mut slots = gs.slots();
        let Some(key) = slots.clone().next().map(|(info, _)| info.hash) else {
            return Step::Fail("empty_game_start");
        };
        if !slots.any(|(info, _)| info.number == number && info.hash == hash) {
            return Step::Fail("not_in_game_start");
        }
        let began = p.schedule.map_or(ctx.now, |(_, due)| due);
        self.parties.entry(key).or_insert(Tally {
            remaining: gs.player_count(),
            began,
            failed: false,
        });
        p.party = Some(key);
        let ip = IpAddr::V4(gs.server_ip);
        let ip = if is_loopback(ip) || ip == self.target.ip() {
            ip
        } else {
            self.target.ip()
        };
        let instance = SocketAddr::new(ip, gs.udp_port);
        let socket = UdpSocket::bind(SocketAddr::new(ctx.source, 0)).and_then(|mut socket| {
            ctx.registry
                .register(&mut socket, ctx.aux_token, Interest::READABLE)?;
            Ok(socket)
        });
        let Ok(socket) = socket else {
            return Step::Fail("udp_bind_failed");
        };
        let len = instance::ClientRepr {
            seq: HELLO_SEQ,
            msg: ClientMsg::Hello { token: Some(hash) },
        }
        .emit(&mut self.buf[..]);
        if socket.send_to(&self.buf[..len], instance).is_err() {
            return Step::Fail("udp_send_failed");
        }
        p.udp = Some(socket);
        // The lobby connection is closed now, as the RFC asks (5.8).
        Step::Detach
    }

    /// One member of party `key` is done; `Some(began)` when the whole party was welcomed.
    fn settle(&mut self, key: u64, welcomed: bool) -> Option<Instant> {
        let tally = self.parties.get_mut(&key)?;
        tally.remaining = tally.remaining.saturating_sub(1);
        tally.failed |= !welcomed;
        if tally.remaining > 0 {
            return None;
        }
        let tally = self.parties.remove(&key)?;
        if tally.failed {
            self.parties_failed += 1;
            return None;
        }
        Some(tally.began)
    }

    fn frame(
        &mut self,
        i: usize,
        p: &mut Player,
        repr: ServerRepr<'_>,
        ctx: &mut Ctx<'_>,
    ) -> Option<Step> {
        match repr {
            ServerRepr::ConnectAck { hash, number } if p.me.is_none() => {
                p.me = Some((number, hash));
                self.by_hash.insert(hash, i);
            }
            ServerRepr::PlayerJoin {
                number,
                hash,
                ready,
                ..
            } => {
                match p.roster.iter().position(|m| m.0 == number) {
                    Some(at) => p.roster[at] = (number, hash, ready),
                    None if p.roster.len() < MAX_ROSTER => p.roster.push((number, hash, ready)),
                    None => return Some(Step::Fail("roster_overflow")),
                }
                if p.me == Some((number, hash)) && !p.ready_sent {
                    p.ready_sent = true;
                    push(ctx.out, ClientRepr::ReadyReq { ready: true });
                }
                self.maybe_start(i, p, ctx);
            }
            ServerRepr::PlayerReady { number, ready } => {
                if let Some(member) = p.roster.iter_mut().find(|m| m.0 == number) {
                    member.2 = ready;
                }
                self.maybe_start(i, p, ctx);
            }
            ServerRepr::PlayerLeft { number } => p.roster.retain(|m| m.0 != number),
            ServerRepr::Countdown { remaining } => self.countdown(p, remaining, ctx),
            ServerRepr::GameStart(gs) => return Some(self.game_start(p, gs, ctx)),
            ServerRepr::Error { code, .. } => return Some(Step::Fail(error_kind(code))),
            ServerRepr::ConnectAck { .. } => return Some(Step::Fail("unexpected_frame")),
        }
        None
    }
}

impl Script for Cycle {
    type Client = Player;
    const MAX_PENDING: usize = MAX_FRAME;
    const RX_TIMESTAMPS: bool = true;

    fn opened(&mut self, i: usize, _p: &mut Player, ctx: &mut Ctx<'_>) {
        let name = player_name(i);
        push(ctx.out, ClientRepr::ConnectReq { name: &name });
    }

    fn received(
        &mut self,
        i: usize,
        p: &mut Player,
        data: &[u8],
        ctx: &mut Ctx<'_>,
    ) -> (usize, Step) {
        let (used, step) = each_frame(data, |repr| self.frame(i, p, repr, ctx));
        // With --spread, a complete party waits for its round with no timeout.
        let waiting = self.rounds.is_some() && p.schedule.is_none() && self.complete(p);
        match step {
            Step::More if waiting => (used, Step::Hold),
            _ => (used, step),
        }
    }

    fn woken(&mut self, i: usize, p: &mut Player, ctx: &mut Ctx<'_>) -> Step {
        if std::mem::take(&mut p.start_scheduled) {
            self.send_start(i, ctx);
            return Step::More;
        }
        Step::Hold
    }

    fn next_wake(&self) -> Option<Instant> {
        self.rounds.as_ref().and_then(StartRounds::next_wake)
    }

    fn wake_due(&mut self, now: Instant, due: &mut Vec<usize>) {
        if let Some(rounds) = self.rounds.as_mut() {
            rounds.due(now, due);
        }
    }

    fn aux_ready(&mut self, _i: usize, p: &mut Player, ctx: &mut Ctx<'_>) -> Step {
        loop {
            let (Some(socket), Some((number, _))) = (p.udp.as_ref(), p.me) else {
                return Step::More;
            };
            let (len, from) = match socket.recv_from(&mut self.buf[..]) {
                Ok(got) => got,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Step::More,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return Step::Fail("udp_recv_failed"),
            };
            let msg = match instance::ServerRepr::parse(&self.buf[..len]) {
                Ok(instance::ServerRepr {
                    seq: HELLO_SEQ,
                    msg,
                }) => msg,
                // Notifications of the room (PEER_JOINED, STARTED, ...) answer nothing.
                Ok(_) => continue,
                Err(e) => return Step::Fail(e.as_str()),
            };
            match msg {
                ServerMsg::Welcome { slot, .. } if slot == number => {
                    p.welcomed = true;
                    self.players += 1;
                    let len = instance::ClientRepr {
                        seq: LEAVE_SEQ,
                        msg: ClientMsg::Leave,
                    }
                    .emit(&mut self.buf[..]);
                    // Best effort: a lost LEAVE only lets the seat lapse by idleness.
                    let _ = socket.send_to(&self.buf[..len], from);
                    if let Some(began) = p.party.and_then(|key| self.settle(key, true)) {
                        ctx.stats.complete(ctx.now.saturating_duration_since(began));
                    }
                    p.party = None;
                    return Step::Done;
                }
                ServerMsg::Welcome { .. } => return Step::Fail("wrong_slot"),
                ServerMsg::Reject(_) => return Step::Fail("hello_rejected"),
                _ => continue,
            }
        }
    }

    fn eof(&mut self, _i: usize, p: &mut Player, _ctx: &mut Ctx<'_>) -> Step {
        Step::Fail(match (p.me, p.schedule) {
            (None, _) => "closed_before_join",
            (Some(_), None) => "closed_in_party",
            (Some(_), Some(_)) => "closed_in_countdown",
        })
    }

    fn timed_out(&mut self, _i: usize, p: &mut Player) -> &'static str {
        match (p.me, p.schedule, p.party) {
            (None, _, _) => "join",
            (Some(_), None, _) => "party",
            (Some(_), Some(_), None) => "countdown",
            (Some(_), Some(_), Some(_)) => "hello",
        }
    }

    fn ended(&mut self, i: usize, p: &mut Player) {
        if let Some(rounds) = self.rounds.as_mut() {
            rounds.forget(i);
        }
        if let Some(key) = p.party.take() {
            self.settle(key, p.welcomed);
        }
        if let Some((_, hash)) = p.me {
            if self.by_hash.get(&hash) == Some(&i) {
                self.by_hash.remove(&hash);
            }
        }
    }

    fn finish(&mut self, stats: &mut Stats) {
        stats.set("players", self.players);
        stats.set("countdown_frames", self.countdown_frames);
        set_micros(
            stats,
            &self.seen,
            ["seen_p50_us", "seen_p99_us", "seen_max_us"],
        );
        set_micros(
            stats,
            &self.before_last,
            [
                "before_last_p50_us",
                "before_last_p99_us",
                "before_last_max_us",
            ],
        );
        stats.set("parties_failed", self.parties_failed);
        if let Some(rounds) = self.rounds.as_ref() {
            stats.set("rounds", rounds.rounds());
        }
    }
}

/// Sets `keys` (p50, p99, max) to those of `histogram` (nanoseconds) in microseconds, if it
/// holds any sample.
fn set_micros(stats: &mut Stats, histogram: &Histogram, keys: [&'static str; 3]) {
    if histogram.count() == 0 {
        return;
    }
    let [p50, p99, max] = keys;
    stats.set(p50, histogram.percentile(50.0) / 1000);
    stats.set(p99, histogram.percentile(99.0) / 1000);
    stats.set(max, histogram.max() / 1000);
}
