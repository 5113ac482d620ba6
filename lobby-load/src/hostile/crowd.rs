//! The hostile crowd against one TCP front end (`hostile-tcp`, `hostile-wz`, `hostile-lobby`,
//! `hostile-http`): held connections by role, short junk connections paced by `--rate`, and a
//! flooded party. What each role sends is in [`super::dialect`].
//!
//! Roles of the `--concurrency` held slots (each reconnects [`RESTART_AFTER`] after its
//! connection ended, from the next `--sources` address, at most [`CONNECTS_PER_SECOND`] new
//! connections a second in all):
//! - slowloris, a quarter (half against the metrics endpoint): a partial frame, then one byte
//!   a second; the longest one lived is `slowloris_longest_ms`, which a hardened server keeps
//!   near its handshake deadline;
//! - never-read, [`NEVER_READ_SLOTS`] at most: signs in, then repeats a request that is
//!   answered, ten a second, and never reads; it gives up after [`NEVER_READ_LIFE`];
//! - silent, the rest: connects and says nothing (a connection flood that fills the caps).
//!
//! Junk connections (a pool of [`JUNK_SLOTS`], `--rate` a second, 100 by default) write random
//! bytes or a near-valid stream, read whatever comes for up to 2 s and close.
//!
//! The party (TCP lobby and general lobby only): a flooder signs in, then `--members` - 1
//! victims; once all are in, the flooder writes its burst every second for [`FLOOD_FOR`] and
//! never reads, while the victims read everything. A victim closed by the server is the
//! `victim_dropped` error, one refused `victim_refused`: the cost of a flood must land on the
//! flooder. Then all close and the party starts over a second later.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Registry, Token};

use super::super::general_client::SignInStep;
use super::super::options::Options;
use super::super::runner::{Pacer, Workload};
use super::super::stats::Stats;
use super::super::tcp_engine::{connect_error_kind, connect_registered};
use super::dialect::{Front, SignIn};
use super::{millis, HostileRng};

/// Short junk connections open at once at most.
pub const JUNK_SLOTS: usize = 256;
/// Junk connections a second when `--rate` is not given.
pub const DEFAULT_JUNK_RATE: f64 = 100.0;
/// Never-reading connections at most.
pub const NEVER_READ_SLOTS: usize = 32;
/// A never-reading connection closes itself after this long (and starts over).
pub const NEVER_READ_LIFE: Duration = Duration::from_secs(20);
/// A held slot reconnects this long after its connection ended.
pub const RESTART_AFTER: Duration = Duration::from_millis(500);
/// New connections of held slots and the party a second, in all.
pub const CONNECTS_PER_SECOND: u32 = 1000;
/// How long the flooder floods once the party is in.
pub const FLOOD_FOR: Duration = Duration::from_secs(6);
/// A party member not signed in by then is counted (`party_sign_in_slow`) and the party
/// floods without it.
const SIGN_IN_WAIT: Duration = Duration::from_secs(3);
/// A connection not established by then is given up (`connect_timeout`).
const CONNECT_WAIT: Duration = Duration::from_secs(5);
/// Interval between a slowloris connection's bytes.
const TRICKLE_EVERY: Duration = Duration::from_secs(1);
/// Interval between a never-reading connection's requests.
const ASK_EVERY: Duration = Duration::from_millis(100);
/// How often timers are looked at.
const SWEEP_EVERY: Duration = Duration::from_millis(20);
/// Most bytes a party member keeps while reading its sign-in (a frame of either lobby).
const MAX_CARRY: usize = 64 * 1024;

/// What a connection does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Random bytes, then reads until closed or 2 s.
    Junk,
    /// A near-valid stream, then reads until closed or 2 s.
    NearValid,
    /// A partial frame, then a byte a second.
    Slowloris,
    /// Signs in, asks for output, never reads.
    NeverRead,
    /// Connects and says nothing.
    Silent,
    /// The party's flooder.
    Flooder,
    /// A party member that reads promptly.
    Victim,
}

impl Role {
    /// The counter of connections of this role the server closed.
    fn closed_counter(self) -> &'static str {
        match self {
            Role::Junk => "closed_by_server_junk",
            Role::NearValid => "closed_by_server_near_valid",
            Role::Slowloris => "closed_by_server_slowloris",
            Role::NeverRead => "closed_by_server_never_read",
            Role::Silent => "closed_by_server_silent",
            Role::Flooder => "closed_by_server_flooder",
            Role::Victim => "closed_by_server_victim",
        }
    }

    /// Reads what the server sends (the others let it pile up).
    fn reads(self) -> bool {
        !matches!(self, Role::NeverRead | Role::Flooder)
    }
}

/// One open connection.
struct Conn {
    stream: TcpStream,
    connected: bool,
    opened: Instant,
    /// When the role's next timed action is due.
    next: Instant,
    /// When this connection closes itself, if it does.
    until: Option<Instant>,
    /// Steps taken (bytes trickled, requests asked, bursts written).
    steps: u32,
    /// Party members: the server's bytes not yet read as frames, until signed in.
    carry: Vec<u8>,
    sign_in: SignInStep,
    signed_in: bool,
}

/// A slot: a role and, while it runs, its connection.
struct Slot {
    role: Role,
    conn: Option<Conn>,
    /// A held slot reconnects at this time.
    restart_at: Instant,
}

/// Where the party is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PartyPhase {
    /// Starts again at this time.
    Waiting(Instant),
    /// The flooder is signing in.
    Flooder,
    /// The victims are signing in, since then.
    Victims(Instant),
    /// Flooding until then.
    Flooding(Instant),
}

/// The crowd against one front end.
pub struct Crowd {
    front: Front,
    target: std::net::SocketAddr,
    sources: Vec<std::net::IpAddr>,
    next_source: usize,
    slots: Vec<Slot>,
    /// Slots `junk..junk + JUNK_SLOTS` are the junk pool; the party's are `party..`.
    junk: usize,
    party: Option<(usize, usize)>,
    party_phase: PartyPhase,
    free_junk: Vec<usize>,
    junk_pacer: Pacer,
    rng: HostileRng,
    next_name: u64,
    connect_budget: u32,
    budget_second: Instant,
    next_sweep: Instant,
    read_buf: Box<[u8]>,
    out: Vec<u8>,
    slowloris_longest: u64,
}

impl Crowd {
    /// The crowd of `options` against `front`.
    pub fn new(options: &Options, front: Front) -> Crowd {
        let now = Instant::now();
        let held = options.concurrency;
        let slow = if front == Front::Http {
            held / 2
        } else {
            held / 4
        };
        let never_read = (held / 16).clamp(1, NEVER_READ_SLOTS).min(held - slow);
        let mut slots = Vec::with_capacity(held + JUNK_SLOTS + options.members);
        for i in 0..held {
            let role = if i < slow {
                Role::Slowloris
            } else if i < slow + never_read {
                Role::NeverRead
            } else {
                Role::Silent
            };
            slots.push(Slot {
                role,
                conn: None,
                // Spread the first connects over the first second.
                restart_at: now + Duration::from_micros((i as u64 * 1_000_000) / held as u64),
            });
        }
        let junk = slots.len();
        for _ in 0..JUNK_SLOTS {
            slots.push(Slot {
                role: Role::Junk,
                conn: None,
                restart_at: now,
            });
        }
        let party = if front.has_party() && options.members >= 2 {
            let first = slots.len();
            for m in 0..options.members {
                let role = if m == 0 { Role::Flooder } else { Role::Victim };
                slots.push(Slot {
                    role,
                    conn: None,
                    restart_at: now,
                });
            }
            Some((first, options.members))
        } else {
            None
        };
        Crowd {
            front,
            target: options.target,
            sources: options.sources.clone(),
            next_source: 0,
            slots,
            junk,
            party,
            party_phase: PartyPhase::Waiting(now + Duration::from_secs(1)),
            free_junk: (junk..junk + JUNK_SLOTS).rev().collect(),
            junk_pacer: Pacer::new(now, Some(options.rate.unwrap_or(DEFAULT_JUNK_RATE))),
            rng: HostileRng::seeded(),
            next_name: 0,
            connect_budget: CONNECTS_PER_SECOND,
            budget_second: now,
            next_sweep: now,
            read_buf: vec![0; 64 * 1024].into_boxed_slice(),
            out: Vec::with_capacity(64 * 1024),
            slowloris_longest: 0,
        }
    }

    fn is_held(&self, i: usize) -> bool {
        i < self.junk
    }

    fn is_party(&self, i: usize) -> bool {
        self.party
            .is_some_and(|(first, n)| i >= first && i < first + n)
    }

    /// Opens slot `i`'s connection; false when it could not start.
    fn open(&mut self, i: usize, registry: &Registry, now: Instant, stats: &mut Stats) -> bool {
        let source = self.sources[self.next_source % self.sources.len()];
        self.next_source = self.next_source.wrapping_add(1);
        match connect_registered(source, self.target, registry, Token(i)) {
            Ok(stream) => {
                self.slots[i].conn = Some(Conn {
                    stream,
                    connected: false,
                    opened: now,
                    next: now + CONNECT_WAIT,
                    until: None,
                    steps: 0,
                    carry: Vec::new(),
                    sign_in: SignInStep::default(),
                    signed_in: false,
                });
                stats.sent += 1;
                stats.complete(Duration::ZERO);
                stats.add("connections", 1);
                true
            }
            Err(e) => {
                stats.add(connect_error_kind(&e), 1);
                false
            }
        }
    }

    /// Slot `i`'s connection is established: it writes its opening.
    fn established(&mut self, i: usize, now: Instant, stats: &mut Stats) {
        let role = self.slots[i].role;
        self.out.clear();
        let mut next = now;
        let mut until = None;
        match role {
            Role::Junk => {
                let len = 1 + self.rng.below(4096);
                self.rng.extend(&mut self.out, len);
                until = Some(now + Duration::from_millis(self.rng.below(2000) as u64));
            }
            Role::NearValid => {
                self.front.near_valid(&mut self.rng, &mut self.out);
                until = Some(now + Duration::from_millis(self.rng.below(2000) as u64));
            }
            Role::Slowloris => {
                self.front.slow_opening(&mut self.out);
                next = now + TRICKLE_EVERY;
            }
            Role::NeverRead => {
                self.next_name += 1;
                self.front.sign_in(self.next_name, &mut self.out);
                until = Some(now + NEVER_READ_LIFE);
            }
            Role::Flooder | Role::Victim => {
                self.next_name += 1;
                self.front.sign_in(self.next_name, &mut self.out);
                next = now + Duration::from_secs(3600);
            }
            Role::Silent => next = now + Duration::from_secs(3600),
        }
        let Some(conn) = self.slots[i].conn.as_mut() else {
            return;
        };
        conn.connected = true;
        conn.next = next;
        conn.until = until;
        let out = std::mem::take(&mut self.out);
        let written = write_some(&mut conn.stream, &out);
        self.out = out;
        match written {
            Ok(n) => stats.add("bytes_sent", n as u64),
            Err(()) => self.server_closed(i, now, stats),
        }
    }

    /// The server closed slot `i`'s connection (or reset it).
    fn server_closed(&mut self, i: usize, now: Instant, stats: &mut Stats) {
        let role = self.slots[i].role;
        let Some(conn) = self.slots[i].conn.as_ref() else {
            return;
        };
        if !conn.connected {
            stats.add("connect_failed", 1);
        } else {
            stats.add(role.closed_counter(), 1);
        }
        let lived = millis(conn.opened, now);
        match role {
            Role::Slowloris if conn.connected => {
                self.slowloris_longest = self.slowloris_longest.max(lived);
            }
            Role::Victim
                if matches!(self.party_phase, PartyPhase::Victims(_)) && !conn.signed_in =>
            {
                stats.error("victim_refused");
            }
            Role::Victim if !matches!(self.party_phase, PartyPhase::Waiting(_)) => {
                stats.error("victim_dropped");
            }
            _ => {}
        }
        self.end(i, now);
    }

    /// Closes slot `i`'s connection (if open) and schedules what comes next for the slot.
    fn end(&mut self, i: usize, now: Instant) {
        // Dropping the stream deregisters and closes it.
        self.slots[i].conn = None;
        if self.is_held(i) {
            self.slots[i].restart_at = now + RESTART_AFTER;
        } else if !self.is_party(i) {
            self.free_junk.push(i);
        }
    }

    /// Reads slot `i` until it would block.
    fn read(&mut self, i: usize, now: Instant, stats: &mut Stats) {
        let role = self.slots[i].role;
        let party_member = matches!(role, Role::Flooder | Role::Victim);
        loop {
            let Some(conn) = self.slots[i].conn.as_mut() else {
                return;
            };
            match conn.stream.read(&mut self.read_buf) {
                Ok(0) => return self.server_closed(i, now, stats),
                Ok(n) => {
                    stats.add("bytes_received", n as u64);
                    if conn.signed_in || !party_member {
                        continue;
                    }
                    if conn.carry.len() + n > MAX_CARRY {
                        conn.carry.clear();
                    }
                    conn.carry.extend_from_slice(&self.read_buf[..n]);
                    let (used, verdict) = self.front.read_sign_in(&mut conn.sign_in, &conn.carry);
                    conn.carry.drain(..used.min(conn.carry.len()));
                    match verdict {
                        SignIn::Pending => {}
                        SignIn::Done => {
                            conn.signed_in = true;
                            conn.carry = Vec::new();
                        }
                        SignIn::Refused(kind) => {
                            stats.add(kind, 1);
                            if role == Role::Victim {
                                stats.error("victim_refused");
                            }
                            self.end(i, now);
                            return;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.server_closed(i, now, stats),
            }
        }
    }

    /// Slot `i`'s timed action is due.
    fn act(&mut self, i: usize, now: Instant, stats: &mut Stats) {
        let role = self.slots[i].role;
        let Some(conn) = self.slots[i].conn.as_mut() else {
            return;
        };
        if !conn.connected {
            stats.add("connect_timeout", 1);
            return self.end(i, now);
        }
        if conn.until.is_some_and(|t| now >= t) {
            return self.end(i, now);
        }
        self.out.clear();
        conn.steps += 1;
        match role {
            Role::Slowloris => {
                self.out.push(self.front.trickle(&mut self.rng));
                conn.next = now + TRICKLE_EVERY;
            }
            Role::NeverRead => {
                self.front.output_request(conn.steps, &mut self.out);
                conn.next = now + ASK_EVERY;
            }
            Role::Flooder => {
                self.front.flood(&mut self.out);
                conn.next = now + Duration::from_secs(1);
            }
            _ => conn.next = conn.until.unwrap_or(now + Duration::from_secs(3600)),
        }
        if self.out.is_empty() {
            return;
        }
        let written = write_some(&mut conn.stream, &self.out);
        match written {
            Ok(n) => {
                stats.add("bytes_sent", n as u64);
                stats.add("bytes_not_taken", (self.out.len() - n) as u64);
            }
            Err(()) => self.server_closed(i, now, stats),
        }
    }

    /// Takes one connect from this second's budget.
    fn may_connect(&mut self, now: Instant) -> bool {
        if now.saturating_duration_since(self.budget_second) >= Duration::from_secs(1) {
            self.budget_second = now;
            self.connect_budget = CONNECTS_PER_SECOND;
        }
        if self.connect_budget == 0 {
            return false;
        }
        self.connect_budget -= 1;
        true
    }

    fn sweep(&mut self, registry: &Registry, now: Instant, stats: &mut Stats) {
        for i in 0..self.slots.len() {
            match &self.slots[i].conn {
                Some(conn) if now >= conn.next || conn.until.is_some_and(|t| now >= t) => {
                    self.act(i, now, stats)
                }
                None if self.is_held(i) && now >= self.slots[i].restart_at => {
                    if !self.may_connect(now) {
                        continue;
                    }
                    if !self.open(i, registry, now, stats) {
                        self.slots[i].restart_at = now + RESTART_AFTER;
                    }
                }
                _ => {}
            }
        }
        self.steer_party(registry, now, stats);
    }

    /// Moves the party through its cycle.
    fn steer_party(&mut self, registry: &Registry, now: Instant, stats: &mut Stats) {
        let Some((first, n)) = self.party else {
            return;
        };
        let members = first..first + n;
        let open = |s: &Crowd, i: usize| s.slots[i].conn.is_some();
        let signed = |s: &Crowd, i: usize| s.slots[i].conn.as_ref().is_some_and(|c| c.signed_in);
        match self.party_phase {
            PartyPhase::Waiting(at) if now >= at => {
                if self.open(first, registry, now, stats) {
                    self.party_phase = PartyPhase::Flooder;
                } else {
                    self.party_phase = PartyPhase::Waiting(now + Duration::from_secs(1));
                }
            }
            PartyPhase::Flooder => {
                if signed(self, first) {
                    for v in first + 1..first + n {
                        self.open(v, registry, now, stats);
                    }
                    self.party_phase = PartyPhase::Victims(now);
                } else if !open(self, first) {
                    self.party_phase = PartyPhase::Waiting(now + Duration::from_secs(1));
                }
            }
            PartyPhase::Victims(since) => {
                let all_in = (first + 1..first + n).all(|v| signed(self, v));
                if all_in || now >= since + SIGN_IN_WAIT {
                    if !all_in {
                        stats.add("party_sign_in_slow", 1);
                    }
                    stats.add("floods", 1);
                    if let Some(flooder) = self.slots[first].conn.as_mut() {
                        flooder.next = now;
                    }
                    self.party_phase = PartyPhase::Flooding(now + FLOOD_FOR);
                }
            }
            PartyPhase::Flooding(until) if now >= until => {
                self.party_phase = PartyPhase::Waiting(now + Duration::from_secs(1));
                for i in members {
                    if open(self, i) {
                        self.end(i, now);
                    }
                }
            }
            _ => {}
        }
    }

    fn start_junk(&mut self, registry: &Registry, now: Instant, stats: &mut Stats) {
        for _ in 0..self.junk_pacer.due(now, JUNK_SLOTS as u64) {
            let Some(i) = self.free_junk.pop() else {
                stats.add("junk_skipped", 1);
                continue;
            };
            self.slots[i].role = if self.rng.chance(50) {
                Role::Junk
            } else {
                Role::NearValid
            };
            if !self.open(i, registry, now, stats) {
                self.free_junk.push(i);
            }
        }
    }
}

/// One write of as much of `bytes` as the socket takes now (the rest is dropped: an attacker
/// does not queue); `Err` when the server closed or reset the connection.
fn write_some(stream: &mut TcpStream, bytes: &[u8]) -> Result<usize, ()> {
    let mut at = 0;
    while at < bytes.len() {
        match stream.write(&bytes[at..]) {
            Ok(0) => return Err(()),
            Ok(n) => at += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(()),
        }
    }
    Ok(at)
}

impl Workload for Crowd {
    fn ready(&mut self, _registry: &Registry, token: Token, now: Instant, stats: &mut Stats) {
        let i = token.0;
        let Some(conn) = self.slots.get(i).and_then(|s| s.conn.as_ref()) else {
            return;
        };
        if !conn.connected {
            match conn.stream.take_error() {
                Ok(None) => {}
                Ok(Some(e)) | Err(e) => {
                    if e.kind() == io::ErrorKind::ConnectionRefused {
                        stats.error("connect_refused");
                    }
                    return self.server_closed(i, now, stats);
                }
            }
            match conn.stream.peer_addr() {
                Ok(_) => self.established(i, now, stats),
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
                Err(_) => return self.server_closed(i, now, stats),
            }
        }
        let role = self.slots[i].role;
        let signing_in = self.slots[i].conn.as_ref().is_some_and(|c| !c.signed_in);
        if role.reads() || (role == Role::Flooder && signing_in) {
            self.read(i, now, stats);
        }
    }

    fn tick(&mut self, registry: &Registry, now: Instant, _pacer: &mut Pacer, stats: &mut Stats) {
        self.start_junk(registry, now, stats);
        if now >= self.next_sweep {
            self.sweep(registry, now, stats);
            self.next_sweep = now + SWEEP_EVERY;
        }
    }

    fn finish(&mut self, _now: Instant, stats: &mut Stats) {
        let open = self.slots.iter().filter(|s| s.conn.is_some()).count();
        stats.set("open_at_end", open as u64);
        stats.set("slowloris_longest_ms", self.slowloris_longest);
        for slot in &mut self.slots {
            slot.conn = None;
        }
    }
}
