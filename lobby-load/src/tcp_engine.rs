//! Connection-per-cycle load over TCP, the engine behind `tcp-join`, `tcp-cycle`, `tcp-idle`,
//! `wz-list` and `wz-host`.
//!
//! Each client repeats one *cycle*: connect (non-blocking, from the next address of the run's
//! [`SourcePool`]: cycles take the addresses in turn, so per-address limits and ports are
//! spread, and under caps an address whose connection budget is spent is skipped; when the
//! next few all are, the cycle waits for the next tick), talk, close. What it says and how the replies are judged is a [`Script`]; the engine does
//! the rest: connects, reads into one shared 64 KiB buffer, keeps only the unconsumed tail of
//! a reply split across reads (bounded by [`Script::MAX_PENDING`]), queues what a partial
//! write left (bounded by [`MAX_UNSENT`]), deadlines, and starting cycles: closed loop (every
//! idle client starts again at once, at most `ramp` clients busy connecting or talking at a
//! time) or open loop (the [`Pacer`] grants cycle starts to idle clients; a grant that finds
//! none idle is the `no_idle_client` error, so a rate the tool could not offer never passes
//! unnoticed). A client whose script holds or sleeps (`tcp-idle`, `wz-host`) is not busy.
//!
//! Tokens: client `i`'s TCP stream is `Token(i)`; a script's own socket for client `i` (the
//! game instance socket of `tcp-cycle`) is `Token(n + i)`, given to it as [`Ctx::aux_token`].

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};
use socket2::{Domain, Protocol, Socket, Type};

use super::caps::SourcePool;
use super::fit::source_pool;
use super::options::Options;
use super::runner::{Pacer, Workload};
use super::stats::Stats;
use super::ws::WsCodec;
use lobbyd::net::io::rx_time::{self, Stamp};

/// The shared read buffer.
const READ_CHUNK: usize = 64 * 1024;
/// Bytes a client may have queued after partial writes; past it the cycle fails.
pub const MAX_UNSENT: usize = 64 * 1024;
/// How often deadlines are checked.
const SWEEP_EVERY: Duration = Duration::from_millis(10);
/// Most cycle starts the pacer hands out at once.
const BURST_CAP: u64 = 10_000;
/// The source of a client between cycles (never seen by a script: it has no connection).
const UNSPECIFIED: IpAddr = IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
/// `EINPROGRESS`: a non-blocking connect under way (Linux, then the BSDs' value).
const EINPROGRESS: i32 = if cfg!(target_os = "linux") { 115 } else { 36 };

/// What a script wants after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Keep the connection and wait for more bytes; the timeout starts again (progress).
    More,
    /// Keep the connection with no deadline (held until the run ends).
    Hold,
    /// Keep the connection with no timeout; [`Script::woken`] is called after this long.
    Sleep(Duration),
    /// The cycle is over: close, and the client starts a new cycle.
    Done,
    /// Close the connection but go on (on the script's own socket): the deadline keeps running
    /// until a later step ends the cycle.
    Detach,
    /// A failure of this kind: counted, the connection closed, the cycle started over.
    Fail(&'static str),
}

/// What a script may use while handling an event.
pub struct Ctx<'a> {
    /// When the event was seen.
    pub now: Instant,
    /// When the bytes being handled reached the client's socket: the kernel's stamp for a
    /// script with [`Script::RX_TIMESTAMPS`], else `now`.
    pub arrived: Instant,
    /// The source address of the client's connection.
    pub source: IpAddr,
    /// Where to register a socket of the script's own.
    pub registry: &'a Registry,
    /// The token for that socket.
    pub aux_token: Token,
    /// The counters.
    pub stats: &'a mut Stats,
    /// Bytes to write on the connection after the call (empty: nothing).
    pub out: &'a mut Vec<u8>,
}

/// One TCP protocol, seen from its clients, one cycle at a time.
pub trait Script {
    /// Per-client state, reset to `Default` when a cycle starts.
    type Client: Default;
    /// Longest unconsumed tail [`Script::received`] may leave (one frame of the protocol).
    const MAX_PENDING: usize;
    /// Read with the kernel's receive timestamps ([`lobbyd::net::io::rx_time`]), given to
    /// [`Script::received`] as [`Ctx::arrived`].
    const RX_TIMESTAMPS: bool = false;
    /// Client `i`'s connection is established: write its first message into `ctx.out`.
    fn opened(&mut self, i: usize, client: &mut Self::Client, ctx: &mut Ctx<'_>);
    /// Bytes arrived (the unconsumed tail of earlier reads first): how many were consumed,
    /// and what next.
    fn received(
        &mut self,
        i: usize,
        client: &mut Self::Client,
        data: &[u8],
        ctx: &mut Ctx<'_>,
    ) -> (usize, Step);
    /// The server closed the connection.
    fn eof(&mut self, _i: usize, _client: &mut Self::Client, _ctx: &mut Ctx<'_>) -> Step {
        Step::Fail("closed_by_server")
    }
    /// A [`Step::Sleep`] is over.
    fn woken(&mut self, _i: usize, _client: &mut Self::Client, _ctx: &mut Ctx<'_>) -> Step {
        Step::Done
    }
    /// The script's own socket of client `i` is ready.
    fn aux_ready(&mut self, _i: usize, _client: &mut Self::Client, _ctx: &mut Ctx<'_>) -> Step {
        Step::More
    }
    /// Client `i` missed its deadline: the kind of timeout to count.
    fn timed_out(&mut self, i: usize, client: &mut Self::Client) -> &'static str;
    /// Client `i`'s cycle ended, however (done, failed, timed out, or the run is over).
    fn ended(&mut self, _i: usize, _client: &mut Self::Client) {}
    /// Periodic chores, at least every 10 ms.
    fn chores(&mut self, _now: Instant) {}
    /// When [`Script::wake_due`] must run next (a send scheduled to the millisecond), if
    /// ever: the loop wakes then rather than at its next 10 ms sweep.
    fn next_wake(&self) -> Option<Instant> {
        None
    }
    /// Pushes into `due` the clients whose [`Script::woken`] is due at `now`; only clients
    /// that hold their connection ([`Step::Hold`], [`Step::Sleep`]) are woken.
    fn wake_due(&mut self, _now: Instant, _due: &mut Vec<usize>) {}
    /// The run is over; the cycles still open are ended right after.
    fn finish(&mut self, _stats: &mut Stats) {}
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Connecting,
    Open,
    Detached,
}

struct Slot<C> {
    phase: Phase,
    stream: Option<TcpStream>,
    /// Unconsumed bytes of earlier reads (empty, unallocated, most of the time).
    carry: Vec<u8>,
    /// Bytes a partial write left.
    unsent: Vec<u8>,
    deadline: Option<Instant>,
    sleeping: bool,
    /// The pool address of the current cycle.
    source: Option<usize>,
    /// `--ws`: the connection's WebSocket framing.
    ws: Option<WsCodec>,
    state: C,
}

/// Clients running one [`Script`].
pub struct TcpEngine<S: Script> {
    script: S,
    slots: Vec<Slot<S::Client>>,
    /// Each cycle connects from the next source address allowed.
    pool: SourcePool,
    /// Open-loop cycle starts skipped because no address was within its budget.
    held_by_caps: u64,
    target: SocketAddr,
    timeout: Duration,
    ramp: usize,
    busy: usize,
    idle: VecDeque<usize>,
    /// Clients whose connect failed at once: retried at the next tick, not in a tight loop.
    retry: Vec<usize>,
    open_loop: bool,
    next_sweep: Instant,
    chunk: Box<[u8]>,
    /// Control buffer of a stamped read.
    control: Vec<u8>,
    out: Vec<u8>,
    /// Clients [`Script::wake_due`] named (kept to reuse its allocation).
    due: Vec<usize>,
    /// `--ws`: every connection upgrades to WebSocket first.
    ws: bool,
}

/// A non-blocking TCP connection from `source` (port chosen by the OS) to `target`, with
/// `TCP_NODELAY`; the connect completes in the background.
pub fn connect(source: IpAddr, target: SocketAddr) -> io::Result<TcpStream> {
    let socket = Socket::new(
        Domain::for_address(target),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    socket.set_nonblocking(true)?;
    socket.set_nodelay(true)?;
    socket.bind(&SocketAddr::new(source, 0).into())?;
    match socket.connect(&target.into()) {
        Ok(()) => {}
        Err(e)
            if e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(TcpStream::from_std(socket.into()))
}

/// [`connect`], registered READABLE and WRITABLE under `token`.
pub fn connect_registered(
    source: IpAddr,
    target: SocketAddr,
    registry: &Registry,
    token: Token,
) -> io::Result<TcpStream> {
    let mut stream = connect(source, target)?;
    registry.register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)?;
    Ok(stream)
}

/// The kind a failed [`connect`] counts as.
pub fn connect_error_kind(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        // EADDRNOTAVAIL, EMFILE, ENFILE: out of ports or descriptors.
        Some(99) => "no_free_port",
        Some(23 | 24) => "no_file_descriptor",
        _ => "connect_failed",
    }
}

/// What a protocol's frame reader found at the front of a client's bytes.
#[derive(Debug)]
pub enum Cut<R> {
    /// Not a whole frame yet.
    NeedMore,
    /// One whole frame, parsed, and the bytes it took.
    Frame(R, usize),
    /// The bytes break the protocol (a frame too long, malformed): the kind of failure.
    Fail(&'static str),
}

/// Hands every whole frame at the front of `data`, as `cut` reads it, to `each` until `each`
/// returns a step; a frame `cut` rejects fails. Returns the bytes consumed and the step.
pub fn each_frame_by<'a, R>(
    data: &'a [u8],
    cut: impl Fn(&'a [u8]) -> Cut<R>,
    mut each: impl FnMut(R) -> Option<Step>,
) -> (usize, Step) {
    let mut at = 0;
    loop {
        match cut(data.get(at..).unwrap_or(&[])) {
            Cut::NeedMore => return (at, Step::More),
            Cut::Fail(kind) => return (at, Step::Fail(kind)),
            Cut::Frame(repr, consumed) => {
                at += consumed;
                if let Some(step) = each(repr) {
                    return (at, step);
                }
            }
        }
    }
}

/// A blocking TCP connection from `source` to `target` with `TCP_NODELAY` and reads that
/// give up after `wait`: for setup steps before the clock starts.
pub fn connect_blocking(
    source: IpAddr,
    target: SocketAddr,
    wait: Duration,
) -> io::Result<std::net::TcpStream> {
    let socket = Socket::new(
        Domain::for_address(target),
        Type::STREAM,
        Some(Protocol::TCP),
    )?;
    socket.bind(&SocketAddr::new(source, 0).into())?;
    socket.connect_timeout(&target.into(), wait)?;
    let stream: std::net::TcpStream = socket.into();
    stream.set_read_timeout(Some(wait))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// The held-connection counts of an idle mode (`tcp-idle`, `lobby-idle`): how many clients
/// hold their connection now, the most at once, and when every one of them first did.
#[derive(Debug)]
pub struct Holding {
    clients: usize,
    held: usize,
    peak: usize,
    started: Instant,
    all_held_at: Option<Instant>,
}

impl Holding {
    /// Counts for `clients` clients, from now.
    pub fn new(clients: usize) -> Holding {
        Holding {
            clients,
            held: 0,
            peak: 0,
            started: Instant::now(),
            all_held_at: None,
        }
    }

    /// One more client holds its connection at `now`.
    pub fn hold(&mut self, now: Instant) {
        self.held += 1;
        self.peak = self.peak.max(self.held);
        if self.held == self.clients && self.all_held_at.is_none() {
            self.all_held_at = Some(now);
        }
    }

    /// A held connection ended.
    pub fn release(&mut self) {
        self.held = self.held.saturating_sub(1);
    }

    /// `held` and `held_peak`, and `all_held_ms` once every client held.
    pub fn report(&self, stats: &mut Stats) {
        stats.set("held", self.held as u64);
        stats.set("held_peak", self.peak as u64);
        if let Some(at) = self.all_held_at {
            let ms = at.saturating_duration_since(self.started).as_millis();
            stats.set("all_held_ms", u64::try_from(ms).unwrap_or(u64::MAX));
        }
    }
}

impl<S: Script> TcpEngine<S> {
    /// `options.concurrency` idle clients; at most `ramp` of them busy at once in closed loop.
    pub fn new(options: &Options, script: S, ramp: usize) -> TcpEngine<S> {
        let n = options.concurrency;
        let open_loop = options.rate.is_some();
        TcpEngine {
            script,
            slots: (0..n)
                .map(|_| Slot {
                    phase: Phase::Idle,
                    stream: None,
                    carry: Vec::new(),
                    unsent: Vec::new(),
                    deadline: None,
                    sleeping: false,
                    source: None,
                    ws: None,
                    state: S::Client::default(),
                })
                .collect(),
            pool: source_pool(options),
            held_by_caps: 0,
            target: options.target,
            timeout: options.timeout,
            ramp: ramp.clamp(1, n.max(1)),
            busy: 0,
            idle: (0..n).collect(),
            retry: Vec::new(),
            open_loop,
            next_sweep: Instant::now() + SWEEP_EVERY,
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            control: rx_time::control_buffer(),
            out: Vec::with_capacity(1024),
            due: Vec::new(),
            ws: options.ws,
        }
    }

    /// Starts client `i`'s cycle: a new connection; false (and nothing done) when no source
    /// address is within its budget now.
    fn start(&mut self, i: usize, registry: &Registry, now: Instant, stats: &mut Stats) -> bool {
        let Some(k) = self.pool.take(now) else {
            return false;
        };
        let source = self.pool.addr(k);
        let connected =
            connect_registered(source, self.target, registry, Token(i)).and_then(|stream| {
                if S::RX_TIMESTAMPS {
                    rx_time::enable(&stream)?;
                }
                Ok(stream)
            });
        match connected {
            Ok(stream) => {
                let slot = &mut self.slots[i];
                slot.state = S::Client::default();
                slot.stream = Some(stream);
                slot.phase = Phase::Connecting;
                slot.deadline = Some(now + self.timeout);
                slot.sleeping = false;
                slot.source = Some(k);
                slot.carry.clear();
                slot.unsent.clear();
                slot.ws = self.ws.then(WsCodec::default);
                self.busy += 1;
                stats.sent += 1;
            }
            Err(e) => {
                self.pool.release(k);
                stats.error(connect_error_kind(&e));
                self.retry.push(i);
            }
        }
        true
    }

    /// Ends client `i`'s cycle: closes what is open; the client becomes idle.
    fn end(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        if slot.phase == Phase::Idle {
            return;
        }
        if !slot.sleeping {
            self.busy -= 1;
        }
        // Dropping a socket removes it from the poll.
        slot.stream = None;
        slot.carry = Vec::new();
        slot.unsent = Vec::new();
        slot.deadline = None;
        slot.sleeping = false;
        slot.phase = Phase::Idle;
        if let Some(k) = slot.source.take() {
            self.pool.release(k);
        }
        self.script.ended(i, &mut slot.state);
        slot.state = S::Client::default();
        self.idle.push_back(i);
    }

    /// Carries out `step` for client `i`: writes what the script queued, moves the deadline.
    fn apply(&mut self, i: usize, step: Step, now: Instant, stats: &mut Stats) {
        let step = match self.flush_out(i) {
            Err(kind) => Step::Fail(kind),
            Ok(()) => step,
        };
        let slot = &mut self.slots[i];
        let set_sleeping = |busy: &mut usize, slot: &mut Slot<S::Client>, sleeping: bool| {
            match (slot.sleeping, sleeping) {
                (false, true) => *busy -= 1,
                (true, false) => *busy += 1,
                _ => {}
            }
            slot.sleeping = sleeping;
        };
        match step {
            Step::More => {
                set_sleeping(&mut self.busy, slot, false);
                slot.deadline = Some(now + self.timeout);
            }
            Step::Hold => {
                set_sleeping(&mut self.busy, slot, true);
                slot.deadline = None;
            }
            Step::Sleep(d) => {
                set_sleeping(&mut self.busy, slot, true);
                slot.deadline = now.checked_add(d);
            }
            Step::Detach => {
                set_sleeping(&mut self.busy, slot, false);
                slot.stream = None;
                slot.phase = Phase::Detached;
                if slot.deadline.is_none() {
                    slot.deadline = Some(now + self.timeout);
                }
            }
            Step::Done => self.end(i),
            Step::Fail(kind) => {
                stats.error(kind);
                self.end(i);
            }
        }
    }

    /// Writes `self.out` (and anything queued before it) on client `i`'s connection.
    fn flush_out(&mut self, i: usize) -> Result<(), &'static str> {
        let slot = &mut self.slots[i];
        if !self.out.is_empty() {
            if slot.unsent.len() + self.out.len() > MAX_UNSENT {
                self.out.clear();
                return Err("send_overflow");
            }
            slot.unsent.extend_from_slice(&self.out);
            self.out.clear();
        }
        let Some(stream) = slot.stream.as_mut() else {
            slot.unsent.clear();
            return Ok(());
        };
        while !slot.unsent.is_empty() {
            let written = match slot.ws.as_mut() {
                Some(ws) => ws.write(stream, &slot.unsent),
                None => stream.write(&slot.unsent),
            };
            match written {
                Ok(0) => return Err("send_failed"),
                Ok(n) => {
                    slot.unsent.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err("send_failed"),
            }
        }
        if slot.unsent.is_empty() && slot.unsent.capacity() > 0 {
            slot.unsent = Vec::new();
        }
        Ok(())
    }

    /// Calls a script hook for client `i` with a fresh [`Ctx`].
    fn hook<R>(
        &mut self,
        i: usize,
        registry: &Registry,
        now: Instant,
        stats: &mut Stats,
        f: impl FnOnce(&mut S, &mut S::Client, &mut Ctx<'_>) -> R,
    ) -> R {
        let source = self.slots[i]
            .source
            .map_or(UNSPECIFIED, |k| self.pool.addr(k));
        let mut ctx = Ctx {
            now,
            arrived: now,
            source,
            registry,
            aux_token: Token(self.slots.len() + i),
            stats,
            out: &mut self.out,
        };
        f(&mut self.script, &mut self.slots[i].state, &mut ctx)
    }

    /// Client `i`'s connect finished (or failed): the script says hello.
    fn connected(&mut self, i: usize, registry: &Registry, now: Instant, stats: &mut Stats) {
        let slot = &mut self.slots[i];
        let Some(stream) = slot.stream.as_ref() else {
            return;
        };
        match stream.take_error() {
            Ok(None) => {}
            Ok(Some(e)) | Err(e) => {
                let kind = match e.kind() {
                    io::ErrorKind::ConnectionRefused => "connect_refused",
                    _ => "connect_failed",
                };
                return self.apply(i, Step::Fail(kind), now, stats);
            }
        }
        match stream.peer_addr() {
            Ok(_) => {}
            // Not connected yet: a later event will say.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
            Err(_) => return self.apply(i, Step::Fail("connect_failed"), now, stats),
        }
        slot.phase = Phase::Open;
        if let (Some(ws), Some(stream)) = (slot.ws.as_mut(), slot.stream.as_mut()) {
            if ws.start(stream, &self.target.to_string()).is_err() {
                return self.apply(i, Step::Fail("send_failed"), now, stats);
            }
        }
        self.hook(i, registry, now, stats, |script, client, ctx| {
            script.opened(i, client, ctx)
        });
        self.apply(i, Step::More, now, stats);
    }

    /// Reads client `i`'s connection until it would block, feeding the script.
    fn read(&mut self, i: usize, registry: &Registry, now: Instant, stats: &mut Stats) {
        let aux_token = Token(self.slots.len() + i);
        loop {
            let slot = &mut self.slots[i];
            if slot.phase != Phase::Open {
                return;
            }
            let Some(stream) = slot.stream.as_mut() else {
                return;
            };
            let source = slot.source.map_or(UNSPECIFIED, |k| self.pool.addr(k));
            let (read, arrived) = if S::RX_TIMESTAMPS {
                match rx_time::read(stream, &mut self.chunk, &mut self.control) {
                    Ok((len, stamp)) => (Ok(len), stamp.and_then(Stamp::to_instant).unwrap_or(now)),
                    Err(e) => (Err(e), now),
                }
            } else if let Some(ws) = slot.ws.as_mut() {
                (ws.read(stream, &mut self.chunk), now)
            } else {
                (stream.read(&mut self.chunk), now)
            };
            let mut ctx = Ctx {
                now,
                arrived,
                source,
                registry,
                aux_token,
                stats,
                out: &mut self.out,
            };
            let step = match read {
                Ok(0) => self.script.eof(i, &mut slot.state, &mut ctx),
                Ok(len) => {
                    let fresh = &self.chunk[..len];
                    if slot.carry.is_empty() {
                        let (used, step) =
                            self.script.received(i, &mut slot.state, fresh, &mut ctx);
                        let rest = fresh.get(used..).unwrap_or(&[]);
                        keep_tail(&mut slot.carry, rest, S::MAX_PENDING, step)
                    } else {
                        slot.carry.extend_from_slice(fresh);
                        let data = std::mem::take(&mut slot.carry);
                        let (used, step) =
                            self.script.received(i, &mut slot.state, &data, &mut ctx);
                        let rest = data.get(used..).unwrap_or(&[]);
                        keep_tail(&mut slot.carry, rest, S::MAX_PENDING, step)
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => Step::Fail(match e.kind() {
                    io::ErrorKind::ConnectionReset => "reset_by_server",
                    _ => "recv_failed",
                }),
            };
            self.apply(i, step, now, stats);
        }
    }

    /// Wakes the holding clients the script scheduled for `now`.
    fn wake_scheduled(&mut self, registry: &Registry, now: Instant, stats: &mut Stats) {
        let mut due = std::mem::take(&mut self.due);
        self.script.wake_due(now, &mut due);
        for &i in &due {
            let holding = self
                .slots
                .get(i)
                .is_some_and(|slot| slot.phase == Phase::Open && slot.sleeping);
            if holding {
                let step = self.hook(i, registry, now, stats, |script, client, ctx| {
                    script.woken(i, client, ctx)
                });
                self.apply(i, step, now, stats);
            }
        }
        due.clear();
        self.due = due;
    }

    fn sweep(&mut self, registry: &Registry, now: Instant, stats: &mut Stats) {
        let n = self.slots.len();
        for i in 0..n {
            let slot = &mut self.slots[i];
            if !slot.deadline.is_some_and(|d| d <= now) {
                continue;
            }
            if slot.sleeping {
                let step = self.hook(i, registry, now, stats, |script, client, ctx| {
                    script.woken(i, client, ctx)
                });
                self.apply(i, step, now, stats);
            } else {
                stats.timeout(self.script.timed_out(i, &mut slot.state));
                self.end(i);
            }
        }
    }

    fn start_due(
        &mut self,
        registry: &Registry,
        now: Instant,
        pacer: &mut Pacer,
        stats: &mut Stats,
    ) {
        if self.open_loop {
            for _ in 0..pacer.due(now, BURST_CAP) {
                match self.idle.pop_front() {
                    Some(i) => {
                        if !self.start(i, registry, now, stats) {
                            self.idle.push_front(i);
                            self.held_by_caps += 1;
                        }
                    }
                    None => stats.error("no_idle_client"),
                }
            }
        } else {
            while self.busy < self.ramp {
                let Some(i) = self.idle.pop_front() else {
                    break;
                };
                if !self.start(i, registry, now, stats) {
                    // Every address near the cursor is at its limits: the next tick.
                    self.idle.push_front(i);
                    break;
                }
            }
        }
    }
}

/// Keeps the unconsumed `rest` of a read for the next one, unless it is longer than a
/// protocol frame can be (then the cycle fails instead of buffering without bound).
fn keep_tail(carry: &mut Vec<u8>, rest: &[u8], max: usize, step: Step) -> Step {
    if rest.len() > max {
        return Step::Fail("oversized_reply");
    }
    carry.clear();
    carry.extend_from_slice(rest);
    if carry.is_empty() && carry.capacity() > 0 {
        *carry = Vec::new();
    }
    step
}

impl<S: Script> Workload for TcpEngine<S> {
    fn ready(&mut self, registry: &Registry, token: Token, now: Instant, stats: &mut Stats) {
        let n = self.slots.len();
        let (i, aux) = if token.0 < n {
            (token.0, false)
        } else {
            (token.0 - n, true)
        };
        let Some(slot) = self.slots.get_mut(i) else {
            return;
        };
        if aux {
            if slot.phase == Phase::Idle {
                return;
            }
            let step = self.hook(i, registry, now, stats, |script, client, ctx| {
                script.aux_ready(i, client, ctx)
            });
            // The lobby connection is closed by then: nothing to write.
            self.out.clear();
            return self.apply(i, step, now, stats);
        }
        match slot.phase {
            Phase::Connecting => {
                self.connected(i, registry, now, stats);
                // The first reply may be there already, and the events are edge-triggered.
                self.read(i, registry, now, stats);
            }
            Phase::Open => {
                if let Err(kind) = self.flush_out(i) {
                    return self.apply(i, Step::Fail(kind), now, stats);
                }
                self.read(i, registry, now, stats);
            }
            Phase::Idle | Phase::Detached => {}
        }
    }

    fn tick(&mut self, registry: &Registry, now: Instant, pacer: &mut Pacer, stats: &mut Stats) {
        self.script.chores(now);
        self.wake_scheduled(registry, now, stats);
        if now >= self.next_sweep {
            self.sweep(registry, now, stats);
            self.next_sweep = now + SWEEP_EVERY;
        }
        self.idle.extend(self.retry.drain(..));
        self.start_due(registry, now, pacer, stats);
    }

    fn next_wake(&self) -> Option<Instant> {
        self.script.next_wake()
    }

    fn finish(&mut self, _now: Instant, stats: &mut Stats) {
        if self.held_by_caps > 0 {
            stats.set("held_by_caps", self.held_by_caps);
        }
        self.script.finish(stats);
        for i in 0..self.slots.len() {
            self.end(i);
        }
    }
}
