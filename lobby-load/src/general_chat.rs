//! `lobby-chat`: lobby-wide chat fanned out by the general lobby to every member
//! (docs/protocols/general-lobby.md, "Chat").
//!
//! Setup (before the clock): `--members` members sign in one after the other, each from the
//! next `--sources` address, with the sign-in reader of [`super::general_modes`]. While one
//! signs in, the members already in are read and kept alive (below), however long a loaded
//! server takes over each sign-in. Then members
//! take turns sending CHAT to the whole lobby (game 0); the server sends the line to every
//! member, the speaker included, as CHAT_FROM. Every CHAT_FROM a member receives is one
//! completed request (one delivered frame), its latency measured from the send time the line
//! carries. Each copy is checked: well-formed (the crate's `wire::general`), lobby-wide, and
//! naming the member that said it.
//!
//! Closed loop: `--concurrency` lines in flight; a line is done when all its copies arrived
//! (or the timeout passed, the missing copies counted as `lost_copy` timeouts), then the next
//! member speaks. Open loop: `--rate` lines per second, members in turn, nothing waits. The
//! delivered rate is the completed rate: lines times members.
//!
//! lobbyd's `--lobby-chat-rate` bounds each member's lines per second (ERROR 10 beyond, counted
//! as `rate_limited` errors): a lobby of M members sending L lines a second gives each member
//! L / M. Under caps each member keeps within the default rate ([`super::fit::chat_budgets`]):
//! the next member whose budget allows speaks, and when none does the line waits (closed
//! loop) or the grant is counted as `held_by_caps` (open loop). The members are spread over
//! the run's sources, one address each by default.
//!
//! Keepalive: lobbyd closes a member that sent no frame for `--idle-timeout`, and a member may
//! be silent for long: the first ones wait through the whole setup (the soak's failed rounds:
//! 50 sign-ins on a loaded machine outlasted its 3 s idle timeout), and under caps
//! a member's chat budget may space its lines out. So any member silent for the keepalive
//! interval sends a PING (its PONG is read and let pass; counted as `keepalive_pings`): a
//! third of lobbyd's default `--idle-timeout` under caps, [`KEEPALIVE_WITHOUT_CAPS`] without.
//! The setup's length is counted as `setup_ms`.
//!
//! ```text
//! chat text: sender index (8 hex) | line id (8 hex) | send time ns (16 hex) | '.' padding
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Interest, Poll, Registry, Token};

use lobbyd::wire::general::{ClientRepr, ServerRepr};

use super::caps::{Budgets, Caps};
use super::fit::chat_budgets;
use super::general_client::{
    each_frame, push, sign_in, sign_in_frame, SignInEvent, SignInStep, Usernames, MAX_FRAME,
};
use super::options::Options;
use super::runner::{drive, Pacer, Workload};
use super::stats::{Stats, Summary};
use super::tcp_engine::{connect_blocking, Step, MAX_UNSENT};
use super::ws::WsCodec;

/// Characters of the stamp at the front of each line.
const STAMP_LEN: usize = 32;
/// Longest chat line the lobby accepts, in bytes (the contract's "Chat").
const MAX_TEXT: usize = 512;
/// Bytes read per `read` call (one buffer for every member).
const READ_CHUNK: usize = 64 * 1024;
/// Members signed in between two drains of the earlier members' sockets during setup.
const DRAIN_EVERY: usize = 64;
const SWEEP_EVERY: Duration = Duration::from_millis(10);
/// Least time one setup step may take: a busy machine must not fail a run before it starts.
const SETUP_WAIT: Duration = Duration::from_secs(10);
/// Longest wait of one read during a sign-in: between two, the members already signed in are
/// read and kept alive.
const SETUP_TICK: Duration = Duration::from_millis(100);
/// How often a silent member PINGs when the run has no caps (so no idle timeout to go by): a
/// third of the shortest `--idle-timeout` the project's scripts give lobbyd (`soak.sh`, 3 s).
pub const KEEPALIVE_WITHOUT_CAPS: Duration = Duration::from_secs(1);

/// One line on its way to every member.
struct InFlight {
    sent: Instant,
    remaining: usize,
}

/// One member's connection.
struct Member {
    stream: TcpStream,
    /// The start of a frame split across reads.
    carry: Vec<u8>,
    /// Bytes a partial write left.
    unsent: Vec<u8>,
    /// When the member last wrote a frame (lobbyd's idle clock restarts then).
    last_sent: Instant,
    alive: bool,
    /// `--ws`: the connection's WebSocket framing.
    ws: Option<WsCodec>,
}

/// Reads through `ws`'s framing when there is one.
fn read_via(
    stream: &mut (impl Read + Write),
    ws: &mut Option<WsCodec>,
    buf: &mut [u8],
) -> io::Result<usize> {
    match ws {
        Some(ws) => ws.read(stream, buf),
        None => stream.read(buf),
    }
}

/// Writes through `ws`'s framing when there is one.
fn write_via(stream: &mut impl Write, ws: &mut Option<WsCodec>, buf: &[u8]) -> io::Result<usize> {
    match ws {
        Some(ws) => ws.write(stream, buf),
        None => stream.write(buf),
    }
}

/// Silent members' PINGs: how often, and when the members are next looked at.
struct KeepAlive {
    every: Duration,
    next_check: Instant,
    pings: u64,
}

impl KeepAlive {
    fn new(options: &Options, now: Instant) -> KeepAlive {
        let every = options
            .caps
            .as_ref()
            .map_or(KEEPALIVE_WITHOUT_CAPS, Caps::keepalive);
        KeepAlive {
            every,
            next_check: now,
            pings: 0,
        }
    }

    /// True when the members are due to be looked at (four times per interval, so none stays
    /// silent much longer than `every`).
    fn due(&mut self, now: Instant) -> bool {
        if now < self.next_check {
            return false;
        }
        self.next_check = now + self.every / 4;
        true
    }

    /// Queues a PING on `member` if it has been silent for the interval, and writes it.
    fn tend(&mut self, member: &mut Member, now: Instant) -> Result<(), &'static str> {
        if now.saturating_duration_since(member.last_sent) < self.every {
            return Ok(());
        }
        let ping = ClientRepr::Ping { payload: b"" };
        if member.unsent.len() + ping.buffer_len() > MAX_UNSENT {
            return Err("send_overflow");
        }
        push(&mut member.unsent, &ping);
        member.last_sent = now;
        self.pings += 1;
        flush(member)
    }
}

/// The members signed in so far during setup, read and kept alive while the next signs in.
struct Signed {
    members: Vec<Member>,
    ledger: Ledger,
    /// What the members received during setup: nothing but others' comings and goings is
    /// expected.
    stats: Stats,
    keepalive: KeepAlive,
    chunk: Box<[u8]>,
    started: Instant,
}

impl Signed {
    /// Reads every member and PINGs the silent ones: when `force`d (the earlier members hear
    /// of each newcomer: read that before it piles up), else when the keepalive is due.
    fn tend(&mut self, force: bool) -> io::Result<()> {
        let now = Instant::now();
        if !self.keepalive.due(now) && !force {
            return Ok(());
        }
        for (k, member) in self.members.iter_mut().enumerate() {
            let ledger = &mut self.ledger;
            let stats = &mut self.stats;
            pump(
                &mut member.stream,
                &mut member.ws,
                &mut member.carry,
                &mut self.chunk,
                |repr| ledger.frame(repr, now, stats),
            )
            .and_then(|()| self.keepalive.tend(member, now))
            .map_err(|kind| {
                io::Error::other(format!(
                    "member {k} lost during setup, {:.1} s in: {kind} (frames: {:?}); silent \
                     members PING every {:.1} s: an idle timeout means lobbyd's --idle-timeout \
                     is shorter, or this process did not run for that long",
                    now.saturating_duration_since(self.started).as_secs_f64(),
                    stats.errors,
                    self.keepalive.every.as_secs_f64()
                ))
            })?;
        }
        Ok(())
    }
}

/// Copies of the lines in flight, and what was received.
struct Ledger {
    /// Each member's id, by index.
    ids: Vec<i32>,
    epoch: Instant,
    in_flight: HashMap<u32, InFlight>,
    late_copies: u64,
}

/// The `lobby-chat` workload.
pub struct Chat {
    members: Vec<Member>,
    ledger: Ledger,
    window: usize,
    open_loop: bool,
    timeout: Duration,
    text_len: usize,
    next_sender: usize,
    next_line: u32,
    next_sweep: Instant,
    chunk: Box<[u8]>,
    text: String,
    frame: Vec<u8>,
    /// Each member's chat budget under caps.
    budgets: Option<Budgets>,
    /// Open-loop grants skipped because no member's budget allowed a line.
    held_by_caps: u64,
    keepalive: KeepAlive,
    /// How long the setup took (the members' sign-ins).
    setup_time: Duration,
}

/// Reads `stream` until it would block, handing each whole frame to `each`; the tail of a
/// frame split across reads waits in `carry`. An error names why the connection is unusable.
fn pump(
    stream: &mut (impl Read + Write),
    ws: &mut Option<WsCodec>,
    carry: &mut Vec<u8>,
    chunk: &mut [u8],
    mut each: impl FnMut(ServerRepr<'_>),
) -> Result<(), &'static str> {
    let mut frames = |data: &[u8]| {
        let (used, step) = each_frame(data, |repr| {
            each(repr);
            None
        });
        match step {
            Step::Fail(kind) => Err(kind),
            _ => Ok(used),
        }
    };
    loop {
        let n = match read_via(stream, ws, chunk) {
            Ok(0) => return Err("closed_by_server"),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Err("reset_by_server"),
            Err(_) => return Err("recv_failed"),
        };
        let fresh = chunk.get(..n).unwrap_or(&[]);
        if carry.is_empty() {
            let used = frames(fresh)?;
            carry.extend_from_slice(fresh.get(used..).unwrap_or(&[]));
        } else {
            carry.extend_from_slice(fresh);
            let used = frames(carry)?;
            carry.drain(..used);
        }
        if carry.len() > MAX_FRAME {
            return Err("oversized_reply");
        }
        if carry.is_empty() && carry.capacity() > 0 {
            *carry = Vec::new();
        }
    }
}

/// Signs `name` in on a blocking `stream` whose reads time out (after [`SETUP_TICK`]):
/// `between` runs after each read that timed out, and the sign-in fails once `deadline` has
/// passed. Returns the member id, the bytes read after SYNC_DONE and when SIGN_IN was written.
fn sign_in_blocking(
    stream: &mut std::net::TcpStream,
    ws: &mut Option<WsCodec>,
    name: &str,
    chunk: &mut [u8],
    deadline: Instant,
    between: &mut dyn FnMut() -> io::Result<()>,
) -> io::Result<(i32, Vec<u8>, Instant)> {
    let mut step = SignInStep::default();
    let mut carry: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    let mut signed_at = Instant::now();
    loop {
        let n = match read_via(stream, ws, chunk) {
            Ok(0) => return Err(io::Error::other("the server closed the connection")),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // A read timeout: Linux says EAGAIN, others ETIMEDOUT.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if Instant::now() >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no SYNC_DONE in time",
                    ));
                }
                between()?;
                continue;
            }
            Err(e) => return Err(e),
        };
        carry.extend_from_slice(chunk.get(..n).unwrap_or(&[]));
        let mut synced = None;
        let (used, outcome) = each_frame(&carry, |repr| match sign_in_frame(&mut step, repr) {
            Err(kind) => Some(Step::Fail(kind)),
            Ok(SignInEvent::SendSignIn) => {
                push(&mut out, &sign_in(name));
                None
            }
            Ok(SignInEvent::Synced(member)) => {
                synced = Some(member);
                Some(Step::Done)
            }
            Ok(SignInEvent::Nothing | SignInEvent::Game(_)) => None,
        });
        carry.drain(..used);
        if let Step::Fail(kind) = outcome {
            return Err(io::Error::other(kind));
        }
        if let Some(member) = synced {
            return Ok((member, carry, signed_at));
        }
        while !out.is_empty() {
            let n = write_via(stream, ws, &out)?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            out.drain(..n);
            signed_at = Instant::now();
        }
        if carry.len() > MAX_FRAME {
            return Err(io::Error::other("oversized_reply"));
        }
    }
}

/// Parses the hexadecimal digits of `digits`; `None` for anything else.
fn hex(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |value, &d| {
        let nibble = char::from(d).to_digit(16)?;
        Some(value << 4 | u64::from(nibble))
    })
}

/// The stamp of a line: sender index, line id, send time in ns since the epoch.
fn read_stamp(text: &str) -> Option<(usize, u32, u64)> {
    let bytes = text.as_bytes();
    let sender = usize::try_from(hex(bytes.get(0..8)?)?).ok()?;
    let line = u32::try_from(hex(bytes.get(8..16)?)?).ok()?;
    let nanos = hex(bytes.get(16..STAMP_LEN)?)?;
    Some((sender, line, nanos))
}

impl Ledger {
    /// Judges one frame a member received.
    fn frame(&mut self, repr: ServerRepr<'_>, now: Instant, stats: &mut Stats) {
        let (member, text) = match repr {
            ServerRepr::ChatFrom {
                game: 0,
                member,
                text,
            } => (member, text),
            ServerRepr::ChatFrom { .. } => return stats.error("chat_not_lobby_wide"),
            ServerRepr::Error { code, .. } => return stats.error(code.as_str()),
            // Others coming and going (none in a run of this tool alone).
            ServerRepr::MemberInfo { .. }
            | ServerRepr::MemberLeft { .. }
            | ServerRepr::GameInfo(_)
            | ServerRepr::GameClosed { .. }
            // A keepalive PING's answer.
            | ServerRepr::Pong { .. } => return,
            _ => return stats.error("unexpected_frame"),
        };
        let Some((sender, line, nanos)) = read_stamp(text) else {
            return stats.error("foreign_chat");
        };
        if self.ids.get(sender) != Some(&member) {
            return stats.error("wrong_speaker");
        }
        let sent = self.epoch + Duration::from_nanos(nanos);
        stats.complete(now.saturating_duration_since(sent));
        match self.in_flight.get_mut(&line) {
            Some(flight) => {
                flight.remaining = flight.remaining.saturating_sub(1);
                if flight.remaining == 0 {
                    self.in_flight.remove(&line);
                }
            }
            // A copy of a line already given up on.
            None => self.late_copies += 1,
        }
    }
}

impl Chat {
    /// Signs the members in, one after the other, and registers their connections.
    pub fn setup(options: &Options, registry: &Registry) -> io::Result<Chat> {
        let wait = options.timeout.max(SETUP_WAIT);
        let started = Instant::now();
        let mut sign_in_chunk = vec![0u8; READ_CHUNK].into_boxed_slice();
        let mut names = Usernames::new('c');
        let mut signed = Signed {
            members: Vec::with_capacity(options.members),
            ledger: Ledger {
                ids: Vec::with_capacity(options.members),
                epoch: started,
                in_flight: HashMap::new(),
                late_copies: 0,
            },
            stats: Stats::default(),
            keepalive: KeepAlive::new(options, started),
            chunk: vec![0u8; READ_CHUNK].into_boxed_slice(),
            started,
        };
        for k in 0..options.members {
            let source = options.source(k);
            let name = names.next_name();
            let signed_in = connect_blocking(source, options.target, wait).and_then(|mut s| {
                s.set_read_timeout(Some(SETUP_TICK))?;
                let mut ws = options.ws.then(WsCodec::default);
                if let Some(ws) = ws.as_mut() {
                    ws.start(&mut s, &options.target.to_string())?;
                }
                let deadline = Instant::now() + wait;
                let mut between = || signed.tend(false);
                let (member, rest, signed_at) = sign_in_blocking(
                    &mut s,
                    &mut ws,
                    &name,
                    &mut sign_in_chunk,
                    deadline,
                    &mut between,
                )?;
                s.set_nonblocking(true)?;
                Ok((s, member, rest, signed_at, ws))
            });
            let (stream, member, carry, last_sent, ws) = signed_in.map_err(|e| {
                io::Error::other(format!(
                    "member {k} of {} could not sign in from {source} to {}: {e}; lobbyd's \
                     --lobby-max-conns-per-ip, --lobby-conn-rate and --lobby-max-members \
                     must allow every member (or spread them with --sources)",
                    options.members, options.target
                ))
            })?;
            signed.ledger.ids.push(member);
            signed.members.push(Member {
                stream: TcpStream::from_std(stream),
                carry,
                unsent: Vec::new(),
                last_sent,
                alive: true,
                ws,
            });
            signed.tend((k + 1) % DRAIN_EVERY == 0 || k + 1 == options.members)?;
        }
        let Signed {
            mut members,
            mut ledger,
            stats,
            keepalive,
            chunk,
            ..
        } = signed;
        if stats.failures() > 0 || stats.completed > 0 {
            return Err(io::Error::other(format!(
                "unexpected frames during setup: {:?}",
                stats.errors
            )));
        }
        for (k, member) in members.iter_mut().enumerate() {
            registry.register(
                &mut member.stream,
                Token(k),
                Interest::READABLE | Interest::WRITABLE,
            )?;
        }
        let text_len = options.size.clamp(STAMP_LEN, MAX_TEXT);
        ledger.epoch = Instant::now();
        let budgets = chat_budgets(options, members.len());
        Ok(Chat {
            members,
            ledger,
            window: options.concurrency,
            open_loop: options.rate.is_some(),
            timeout: options.timeout,
            text_len,
            next_sender: 0,
            next_line: 0,
            next_sweep: Instant::now() + SWEEP_EVERY,
            chunk,
            text: String::with_capacity(MAX_TEXT),
            frame: Vec::with_capacity(MAX_TEXT + 64),
            budgets,
            held_by_caps: 0,
            keepalive,
            setup_time: started.elapsed(),
        })
    }

    /// The next live member whose budget allows says one line to the lobby; false if none
    /// could.
    fn send(&mut self, now: Instant, stats: &mut Stats) -> bool {
        let n = self.members.len();
        let members = &self.members;
        let budgets = &mut self.budgets;
        let Some(k) = (0..n)
            .map(|step| (self.next_sender + step) % n)
            .filter(|&k| members[k].alive)
            .find(|&k| match budgets.as_mut() {
                Some(budgets) => budgets.try_take(k, now),
                None => true,
            })
        else {
            return false;
        };
        self.next_sender = (k + 1) % n;
        let line = self.next_line;
        self.next_line = line.wrapping_add(1);
        let nanos = u64::try_from(now.saturating_duration_since(self.ledger.epoch).as_nanos())
            .unwrap_or(u64::MAX);
        self.text.clear();
        // Writing into a String cannot fail.
        let _ = write!(self.text, "{k:08x}{line:08x}{nanos:016x}");
        while self.text.len() < self.text_len {
            self.text.push('.');
        }
        self.frame.clear();
        push(
            &mut self.frame,
            &ClientRepr::Chat {
                game: 0,
                text: &self.text,
            },
        );
        let member = &mut self.members[k];
        if member.unsent.len() + self.frame.len() > MAX_UNSENT {
            stats.error("send_overflow");
            return false;
        }
        member.unsent.extend_from_slice(&self.frame);
        member.last_sent = now;
        if let Err(kind) = flush(member) {
            stats.error(kind);
            member.alive = false;
            return false;
        }
        stats.sent += 1;
        self.ledger.in_flight.insert(
            line,
            InFlight {
                sent: now,
                remaining: n,
            },
        );
        true
    }

    /// Lines whose copies did not all arrive in time: the missing ones are timeouts.
    fn sweep(&mut self, now: Instant, stats: &mut Stats) {
        let timeout = self.timeout;
        let mut lost = 0u64;
        self.ledger.in_flight.retain(|_, flight| {
            let overdue = now.saturating_duration_since(flight.sent) >= timeout;
            if overdue {
                lost += flight.remaining as u64;
            }
            !overdue
        });
        if lost > 0 {
            *stats.timeouts.entry("lost_copy").or_default() += lost;
        }
    }
}

/// Writes what `member` has queued, keeping what the socket would not take.
fn flush(member: &mut Member) -> Result<(), &'static str> {
    while !member.unsent.is_empty() {
        match write_via(&mut member.stream, &mut member.ws, &member.unsent) {
            Ok(0) => return Err("send_failed"),
            Ok(n) => {
                member.unsent.drain(..n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err("send_failed"),
        }
    }
    Ok(())
}

impl Workload for Chat {
    fn ready(&mut self, _registry: &Registry, token: Token, now: Instant, stats: &mut Stats) {
        let Some(member) = self.members.get_mut(token.0).filter(|m| m.alive) else {
            return;
        };
        let ledger = &mut self.ledger;
        let read = pump(
            &mut member.stream,
            &mut member.ws,
            &mut member.carry,
            &mut self.chunk,
            |repr| ledger.frame(repr, now, stats),
        );
        if let Err(kind) = read.and_then(|()| flush(member)) {
            stats.error(kind);
            member.alive = false;
        }
    }

    fn tick(&mut self, _registry: &Registry, now: Instant, pacer: &mut Pacer, stats: &mut Stats) {
        if now >= self.next_sweep {
            self.sweep(now, stats);
            self.next_sweep = now + SWEEP_EVERY;
        }
        if self.keepalive.due(now) {
            for member in self.members.iter_mut().filter(|m| m.alive) {
                if let Err(kind) = self.keepalive.tend(member, now) {
                    stats.error(kind);
                    member.alive = false;
                }
            }
        }
        if self.open_loop {
            for _ in 0..pacer.due(now, 10_000) {
                if !self.send(now, stats) {
                    self.held_by_caps += 1;
                }
            }
        } else {
            while self.ledger.in_flight.len() < self.window {
                if !self.send(now, stats) {
                    break;
                }
            }
        }
    }

    fn finish(&mut self, _now: Instant, stats: &mut Stats) {
        let members = self.members.len() as u64;
        stats.set("members", members);
        stats.set("text_bytes", self.text_len as u64);
        stats.set("late_copies", self.ledger.late_copies);
        if self.held_by_caps > 0 {
            stats.set("held_by_caps", self.held_by_caps);
        }
        stats.set(
            "setup_ms",
            u64::try_from(self.setup_time.as_millis()).unwrap_or(u64::MAX),
        );
        if self.keepalive.pings > 0 {
            stats.set("keepalive_pings", self.keepalive.pings);
        }
        stats.set(
            "unreceived_copies",
            (stats.sent * members).saturating_sub(stats.completed),
        );
    }
}

/// Runs `lobby-chat`.
pub fn run(options: &Options, progress: &mut dyn Write) -> io::Result<Summary> {
    let poll = Poll::new()?;
    let mut chat = Chat::setup(options, poll.registry())?;
    drive(
        options,
        options.target.to_string(),
        poll,
        &mut chat,
        progress,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_read_back_and_foreign_text_does_not() {
        let text = format!("{:08x}{:08x}{:016x}....", 3, 77, 123_456_789u64);
        assert_eq!(read_stamp(&text), Some((3, 77, 123_456_789)));
        assert_eq!(read_stamp("hello"), None);
        assert_eq!(read_stamp(&"z".repeat(40)), None);
        // Multi-byte characters never split a slice: bytes are read, not chars.
        assert_eq!(read_stamp(&"é".repeat(20)), None);
    }

    #[test]
    fn a_split_frame_waits_in_the_carry() {
        let line = ServerRepr::ChatFrom {
            game: 0,
            member: 1,
            text: "hi",
        };
        let mut bytes = vec![0u8; line.buffer_len()];
        line.emit(&mut bytes);
        let mut wire = bytes.clone();
        wire.extend_from_slice(&bytes[..6]);
        let mut reader = io::Cursor::new(wire);
        let mut carry = Vec::new();
        let mut chunk = [0u8; 64];
        let mut seen = 0;
        // A cursor at its end reads 0: the server closed, after one whole frame.
        let end = pump(&mut reader, &mut None, &mut carry, &mut chunk, |_| {
            seen += 1
        });
        assert_eq!(end, Err("closed_by_server"));
        assert_eq!((seen, carry.len()), (1, 6));
    }
}
