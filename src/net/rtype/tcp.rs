//! The TCP lobby's sockets: the listener, the connection slab, reading, framing and sending.
//!
//! Implements the transport half of `docs/protocols/tcp-lobby.md`: accept until `WouldBlock`
//! under the `--conn-rate` / `--max-conns` / `--max-conns-per-ip` limits (over a per-IP limit a
//! newcomer is refused at accept; at `--max-conns` the oldest connection without CONNECT_ACK
//! is evicted before accepting pauses), TCP keep-alive, a shared read buffer with zero-copy
//! framing ([`crate::net::rtype::tcp_frames`]), and the shared stream transport ([`crate::net::io::stream`]: capped
//! send queues that survive partial writes and exist only while bytes are in flight, close
//! after flush). What the bytes mean is decided by the [`RtypeCore`] core, which the R-Type front
//! end (`net::rtype`) owns: [`TcpLobby::ready`] hands back [`TcpInput`]s, the front end gives
//! them to the core one at a time and carries out each one's outputs (so replies are written
//! as they are produced), and [`TcpLobby::send`] turns messages into frames. What a frame
//! means, and a message's wire form, the core decides ([`TcpInput::of_frame`],
//! [`server_repr`]); this file cuts bytes into frames and writes frames, and nothing else.
//!
//! The cost of a flood lands on the flooder: at most [`FRAMES_PER_EVENT`] frames of one
//! connection are decoded per readiness event, by reading at most three bytes (the smallest
//! frame) per frame still allowed, so the rest waits in its socket, unread, and TCP flow
//! control slows only it; its requests over the core's request rate are violations that drop
//! it.
//!
//! An idle connection costs one `Conn` (its size is checked by a unit test) plus the core's
//! record; no heap buffer is held while nothing is being sent.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Registry};
use slab::Slab;

use crate::rtype::{
    server_repr, upstream_repr, ConnClose, ConnId, RtypeCore, TcpInput, TcpMessage,
};
use crate::wire::tcp_lobby::{self as wire, GameStart, PlayerInfo, ServerRepr, MAX_SERVER_PAYLOAD};
use crate::wire::tcp_upstream as up;

use crate::net::io::admission::{PerIpAdmission, Refused};
use crate::net::io::buffers::{largest_holder, MemoryBudget, QueueFull};
use crate::net::io::pass::{work_left, AcceptBacklog, Accepted, Closing};
use crate::net::io::rx_time;
use crate::net::io::stream::{
    canonical_ip, tune_listener, AcceptGate, Flushed, Linger, Phase, Stream,
};
use crate::net::rtype::stats::TcpStats;
use crate::net::rtype::tcp_frames::{FrameReader, Piece};
use crate::net::token::Target;
use crate::net::warn::WarnBudget;

/// Most bytes queued for one connection; past it the client is not reading and is dropped.
pub const SEND_QUEUE_CAP: usize = 64 * 1024;
/// Size of the read buffer shared by every connection.
const READ_BUF_LEN: usize = 16 * 1024;
/// Reads from one connection per readiness event before serving the others.
const READ_BUDGET: usize = 8;
/// Frames (and oversized headers) of one connection decoded per readiness event.
pub const FRAMES_PER_EVENT: usize = 64;
/// How long a connection being closed may take to flush what is queued for it.
const DRAIN_WAIT: Duration = Duration::from_millis(500);

/// The listener's limits, from the command line.
#[derive(Clone, Copy, Debug)]
pub struct TcpLimits {
    /// `--max-conns`.
    pub max_conns: usize,
    /// `--max-conns-per-ip`.
    pub max_conns_per_ip: usize,
    /// `--conn-rate`, new connections per minute per IP.
    pub conn_rate: u32,
    /// `--rate-table-size`, IPs the rate limiter tracks.
    pub rate_table_size: usize,
    /// `--public-host`, the address GAME_START names instead of the connection's own.
    pub public_host: Option<Ipv4Addr>,
    /// `--tcp-memory-budget`, in bytes: what every connection's send queue may hold
    /// together.
    pub memory_budget: usize,
}

/// What readiness a connection has, from its poll event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Readiness {
    /// Bytes (or the end of the stream) may be read.
    pub readable: bool,
    /// The peer closed its side or the socket failed: read until the end, whatever a short
    /// read says (no further edge will come for an end that has already arrived).
    pub closed: bool,
    /// The send buffer has room again.
    pub writable: bool,
}

/// One TCP lobby connection.
#[derive(Debug)]
struct Conn {
    stream: Stream,
    ip: IpAddr,
    frames: FrameReader,
}

/// The TCP lobby transport.
pub struct TcpLobby {
    listener: TcpListener,
    conns: Slab<Conn>,
    /// `--conn-rate` and `--max-conns-per-ip`.
    admission: PerIpAdmission,
    limits: TcpLimits,
    gate: AcceptGate,
    /// Accepts left in this pass, and whether the listener was left with a backlog.
    backlog: AcceptBacklog,
    /// Connections with bytes queued since the last flush.
    dirty: Vec<usize>,
    /// Closed connections, removed after the event batch, a slice per pass.
    closing: Closing,
    /// Connections draining before close, in deadline order.
    draining: Linger,
    next_serial: u32,
    read_buf: Box<[u8; READ_BUF_LEN]>,
    /// Room for a read's receive timestamp ([`rx_time`]).
    control: Vec<u8>,
    frame_buf: Vec<u8>,
    slots: Vec<wire::Slot>,
    /// `--tcp-memory-budget`: every connection's send queue together. When it is full, the
    /// connection holding the most is dropped ([`Self::shed`]): at `--max-conns` the
    /// queues' caps alone would allow 640 MiB.
    budget: MemoryBudget,
    /// Rate-limits the warnings of a full budget.
    warnings: WarnBudget,
    /// The transport's counters.
    pub stats: TcpStats,
}

impl TcpLobby {
    /// Wraps a bound listener and registers it.
    pub fn new(
        mut listener: TcpListener,
        registry: &Registry,
        limits: TcpLimits,
    ) -> io::Result<TcpLobby> {
        tune_listener(&listener, true);
        // Inherited by every accepted socket: a START_REQ's countdown starts from when it
        // reached the socket (`net::rtype`). Without it requests count from their read.
        if let Err(e) = rx_time::enable(&listener) {
            log::debug!("SO_TIMESTAMPNS: {e}");
        }
        registry.register(
            &mut listener,
            Target::TcpListener.token(),
            Interest::READABLE,
        )?;
        Ok(TcpLobby {
            listener,
            conns: Slab::new(),
            admission: PerIpAdmission::new(
                limits.conn_rate,
                limits.max_conns_per_ip,
                limits.rate_table_size,
            ),
            limits,
            gate: AcceptGate::new(limits.max_conns),
            backlog: AcceptBacklog::default(),
            dirty: Vec::new(),
            closing: Closing::default(),
            draining: Linger::new(DRAIN_WAIT),
            next_serial: 0,
            read_buf: Box::new([0; READ_BUF_LEN]),
            control: rx_time::control_buffer(),
            frame_buf: vec![0; wire::HEADER_LEN + MAX_SERVER_PAYLOAD],
            slots: Vec::new(),
            budget: MemoryBudget::new(limits.memory_budget),
            warnings: WarnBudget::new(Instant::now(), 60, 20),
            stats: TcpStats::default(),
        })
    }

    /// The listener's bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Connections in the slab (open, draining or about to be removed).
    pub fn conn_count(&self) -> usize {
        self.conns.len()
    }

    /// Bytes the send queues hold now (`--tcp-memory-budget` bounds it).
    pub fn buffered_bytes(&self) -> usize {
        self.budget.held()
    }

    /// Accepts until `WouldBlock`, `--max-conns` or this pass's budget
    /// ([`crate::net::io::pass::ACCEPTS_PER_PASS`]; the rest after the next poll). At the cap it goes
    /// on accepting while a connection without CONNECT_ACK could make room (one is evicted
    /// per newcomer admitted); once every connection has its CONNECT_ACK, accepting pauses.
    pub fn accept(&mut self, lobby: &mut RtypeCore, registry: &Registry) {
        self.backlog.begin();
        while !self.gate.is_paused() {
            if self.is_full() && lobby.oldest_pending_conn().is_none() {
                // The kernel keeps the rest in its backlog until we resume below 90%.
                self.gate.pause();
                self.stats.accept_paused += 1;
                log::warn!(
                    "tcp lobby: {} connections, accepting paused",
                    self.conns.len()
                );
                return;
            }
            match self.backlog.accept(&self.listener) {
                Accepted::Conn(stream, peer) => self.admit(stream, peer, lobby, registry),
                Accepted::Drained | Accepted::BudgetSpent => return,
                Accepted::Failed(e) => {
                    // Out of descriptors, say: back off rather than retry at once (which
                    // would spin the loop); resumed after the back-off by `remove_closed`.
                    self.stats.accept_errors += 1;
                    log::debug!("tcp lobby accept: {e}");
                    if self.gate.back_off(Instant::now()) {
                        self.stats.accept_paused += 1;
                    }
                    return;
                }
            }
        }
    }

    fn admit(
        &mut self,
        mut stream: TcpStream,
        peer: SocketAddr,
        lobby: &mut RtypeCore,
        registry: &Registry,
    ) {
        let now = Instant::now();
        // Dropping the stream closes it at once, without a word.
        let ip = match self.admission.check(now, peer) {
            Ok(ip) => ip,
            Err(Refused::ConnRate) => {
                self.stats.rate_limited += 1;
                log::debug!("tcp lobby: {peer} over --conn-rate, closed");
                return;
            }
            Err(Refused::PerIp) => {
                self.stats.per_ip_limited += 1;
                log::debug!("tcp lobby: {peer} over --max-conns-per-ip, closed");
                return;
            }
        };
        if self.is_full() {
            // Only for a newcomer that passed the checks above: `accept` made sure there is
            // a connection without CONNECT_ACK to close.
            self.evict_a_pending_conn(lobby);
        }
        let entry = self.conns.vacant_entry();
        let key = entry.key();
        if let Err(e) = registry.register(
            &mut stream,
            Target::TcpConn(key).token(),
            Interest::READABLE,
        ) {
            log::debug!("tcp lobby: register {peer}: {e}");
            return;
        }
        self.next_serial = self.next_serial.wrapping_add(1);
        entry.insert(Conn {
            stream: Stream::new(stream, self.next_serial),
            ip,
            frames: FrameReader::default(),
        });
        self.admission.opened(ip);
        self.stats.accepted += 1;
        lobby.handle_tcp_open(now, ConnId(key), peer);
    }

    /// `--max-conns` connections are open (closed ones leave the slab after the batch and no
    /// longer count).
    fn is_full(&self) -> bool {
        let open = self.conns.len().saturating_sub(self.closing.len());
        self.gate.is_full(open)
    }

    /// At `--max-conns`, closes the oldest connection without CONNECT_ACK to make room for an
    /// admitted newcomer (a crowd that connects and never says who it is must not
    /// hold the lobby full).
    fn evict_a_pending_conn(&mut self, lobby: &mut RtypeCore) {
        let Some(conn) = lobby.oldest_pending_conn() else {
            return;
        };
        self.stats.evicted += 1;
        log::debug!("tcp lobby: at --max-conns, closing {conn:?} (no CONNECT_ACK)");
        self.close(conn.0, lobby, ConnClose::Evicted);
        // Whatever the slab held under that key, the core lets it go.
        lobby.handle_tcp_closed(conn, ConnClose::Evicted);
    }

    /// Readiness on a connection: writes what waits, then reads at most
    /// [`FRAMES_PER_EVENT`] frames into `inputs` for the front end to hand to the core.
    /// Returns when the first bytes read reached the socket, if the kernel stamped them.
    pub fn ready(
        &mut self,
        key: usize,
        readiness: Readiness,
        lobby: &mut RtypeCore,
        registry: &Registry,
        inputs: &mut Vec<TcpInput>,
    ) -> Option<rx_time::Stamp> {
        if readiness.writable {
            self.flush_one(key, lobby, registry);
        }
        if readiness.readable || readiness.closed {
            return self.read(key, readiness.closed, registry, inputs);
        }
        None
    }

    /// Reads what `key` sent and decodes it into `inputs`, within the read and frame budgets.
    /// Each read asks for at most three bytes (the smallest frame) per frame still allowed,
    /// plus what is left of a payload being skipped. A frame split across reads needs at
    /// least one more byte and every other frame or oversized header at least three, so `3k`
    /// bytes complete at most `k` pieces: no read yields more than the budget, and nothing
    /// read is ever left over to keep.
    ///
    /// A read that returns less than it asked for has emptied the socket, so no second read
    /// is made just to see `WouldBlock` (one system call per request saved): bytes that
    /// arrive later raise a new edge. Unless `closed`: an end of stream that had already
    /// arrived raises none, so it is read now.
    ///
    /// Returns the receive timestamp of the first read that got bytes (see [`Self::ready`]).
    fn read(
        &mut self,
        key: usize,
        closed: bool,
        registry: &Registry,
        inputs: &mut Vec<TcpInput>,
    ) -> Option<rx_time::Stamp> {
        let mut budget = FRAMES_PER_EVENT;
        let mut arrived = None;
        for _ in 0..READ_BUDGET {
            let Some(conn) = self.conns.get_mut(key) else {
                return arrived;
            };
            if !conn.stream.is_open() {
                return arrived;
            }
            if budget == 0 {
                break;
            }
            let want = conn.frames.skipping() + budget * wire::HEADER_LEN;
            let want = want.min(READ_BUF_LEN);
            let read = rx_time::read(
                &conn.stream.socket,
                &mut self.read_buf[..want],
                &mut self.control,
            );
            let n = match read {
                Ok((0, _)) => {
                    self.close_on_read(key, ConnClose::PeerClosed, inputs);
                    return arrived;
                }
                Ok((n, stamp)) => {
                    arrived = arrived.or(stamp);
                    n
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return arrived,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    log::debug!("tcp lobby: read {key}: {e}");
                    self.close_on_read(key, ConnClose::Error, inputs);
                    return arrived;
                }
            };
            self.stats.bytes_in += n as u64;
            let decoded = inputs.len();
            conn.frames.push(&self.read_buf[..n], &mut |piece| {
                budget = budget.saturating_sub(1);
                inputs.push(input_of(key, piece));
                true
            });
            self.stats.frames_in += (inputs.len() - decoded) as u64;
            if n < want && !closed {
                return arrived;
            }
        }
        // Budget spent with data possibly left: mio is edge-triggered, so reregistering
        // brings us back to this connection, after the others, without waiting for an edge.
        if let Some(conn) = self.conns.get_mut(key) {
            if let Err(e) = conn.stream.rearm(registry, Target::TcpConn(key).token()) {
                log::debug!("tcp lobby: reregister {key}: {e}");
            }
        }
        arrived
    }

    /// The peer closed or failed while being read: the connection goes, and the core learns
    /// it after the frames read before it ([`TcpInput::Closed`]).
    fn close_on_read(&mut self, key: usize, why: ConnClose, inputs: &mut Vec<TcpInput>) {
        if let Some(conn) = self.conns.get_mut(key) {
            if conn.stream.mark_closed(&mut self.budget) {
                self.closing.push(key);
                inputs.push(TcpInput::Closed(why));
            }
        }
    }

    /// Closes `key` on the driver's initiative and tells the core.
    fn close(&mut self, key: usize, lobby: &mut RtypeCore, why: ConnClose) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        if !conn.stream.mark_closed(&mut self.budget) {
            return;
        }
        self.closing.push(key);
        lobby.handle_tcp_closed(ConnId(key), why);
    }

    /// Carries out [`crate::rtype::Output::Tcp`]: encodes the message and queues it.
    pub fn send(&mut self, conn: ConnId, msg: TcpMessage, lobby: &mut RtypeCore) {
        let key = conn.0;
        let Some(c) = self.conns.get(key) else {
            return;
        };
        if c.stream.phase() == Phase::Closed {
            return;
        }
        let len = if c.frames.is_upstream() {
            match upstream_frames(&mut self.frame_buf, msg, lobby) {
                Some(len) => len,
                None => return,
            }
        } else {
            match msg {
                TcpMessage::GameStart(room) => {
                    let ip = self
                        .limits
                        .public_host
                        .unwrap_or_else(|| local_ipv4(&c.stream.socket));
                    let port = lobby.room(room).and_then(|r| r.port).unwrap_or(0);
                    self.slots.clear();
                    self.slots.extend(lobby.game_start_players(room).map(
                        |(slot, hash, name, spawn)| {
                            (
                                PlayerInfo {
                                    number: slot,
                                    hash,
                                    name,
                                },
                                spawn,
                            )
                        },
                    ));
                    match GameStart::new(ip, port, &self.slots) {
                        Some(game_start) => {
                            ServerRepr::GameStart(game_start).emit(&mut self.frame_buf)
                        }
                        None => return,
                    }
                }
                ref other => match server_repr(other) {
                    Some(repr) => repr.emit(&mut self.frame_buf),
                    None => return,
                },
            }
        };
        let Some(was_empty) = self.conns.get(key).map(|c| c.stream.pending() == 0) else {
            return;
        };
        match self.queue_within_budget(key, len, lobby) {
            Ok(()) => {}
            Err(QueueFull::Cap) => {
                self.stats.slow_readers += 1;
                log::debug!("tcp lobby: conn {key} does not read, dropped");
                self.close(key, lobby, ConnClose::SlowReader);
                return;
            }
            Err(QueueFull::Budget | QueueFull::Closed) => return,
        }
        self.stats.frames_out += 1;
        if was_empty {
            self.dirty.push(key);
        }
    }

    /// Queues the frame in `frame_buf[..len]` on `key`'s connection. While
    /// `--tcp-memory-budget` has no room for it, the connection holding the most is dropped
    /// (`key` itself when nobody holds more: then the frame is not queued).
    fn queue_within_budget(
        &mut self,
        key: usize,
        len: usize,
        lobby: &mut RtypeCore,
    ) -> Result<(), QueueFull> {
        loop {
            let Some(c) = self.conns.get_mut(key) else {
                return Err(QueueFull::Closed);
            };
            match (c.stream).queue(&self.frame_buf[..len], SEND_QUEUE_CAP, &mut self.budget) {
                Err(QueueFull::Budget) => {
                    if self.shed(key, lobby) == key {
                        return Err(QueueFull::Budget);
                    }
                }
                other => return other,
            }
        }
    }

    /// `--tcp-memory-budget` is full and `asking` needs room: closes the connection whose
    /// send queue holds the most (`asking` itself when nobody holds more), counts and logs
    /// it, and tells the core (as a slow reader: it is one, by far the slowest). Returns
    /// its key.
    fn shed(&mut self, asking: usize, lobby: &mut RtypeCore) -> usize {
        let live = (self.conns.iter()).filter(|(_, c)| c.stream.phase() != Phase::Closed);
        let victim = largest_holder(live.map(|(key, c)| (key, c.stream.held())), asking);
        let held = self.conns.get(victim).map_or(0, |c| c.stream.held());
        self.stats.memory_budget_drops += 1;
        self.warnings.warn(
            Instant::now(),
            format_args!(
                "tcp lobby: --tcp-memory-budget full ({} of {} bytes held): dropping the \
                 connection that holds the most ({held} bytes)",
                self.budget.held(),
                self.budget.limit()
            ),
        );
        self.close(victim, lobby, ConnClose::SlowReader);
        victim
    }

    /// Carries out [`crate::rtype::Output::CloseConn`]: close once the queue is flushed.
    pub fn close_when_flushed(&mut self, conn: ConnId) {
        let key = conn.0;
        let Some(c) = self.conns.get_mut(key) else {
            return;
        };
        if !c.stream.start_draining() {
            return;
        }
        self.draining.start(Instant::now(), key, c.stream.serial());
        // Flushed (and closed if empty) with the other dirty connections.
        self.dirty.push(key);
    }

    /// Writes every connection with fresh bytes; called after the core's outputs are done.
    pub fn flush(&mut self, lobby: &mut RtypeCore, registry: &Registry) {
        let dirty = std::mem::take(&mut self.dirty);
        for &key in &dirty {
            self.flush_one(key, lobby, registry);
        }
        self.dirty = dirty;
        self.dirty.clear();
    }

    fn flush_one(&mut self, key: usize, lobby: &mut RtypeCore, registry: &Registry) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        let token = Target::TcpConn(key).token();
        match conn
            .stream
            .flush(registry, token, &mut self.stats.bytes_out, &mut self.budget)
        {
            Ok(Flushed::Open) => {}
            Ok(Flushed::Drained) => {
                conn.stream.mark_closed(&mut self.budget);
                self.closing.push(key);
            }
            Err(e) => {
                log::debug!("tcp lobby: write {key}: {e}");
                if conn.stream.phase() == Phase::Draining {
                    conn.stream.mark_closed(&mut self.budget);
                    self.closing.push(key);
                } else {
                    self.close(key, lobby, ConnClose::Error);
                }
            }
        }
    }

    /// The periodic tidy: forgets connection-rate entries whose buckets are full again and
    /// gives back the per-address tables' spare capacity.
    pub fn tidy(&mut self, now: Instant) {
        self.admission.tidy(now);
    }

    /// When the earliest draining connection must be given up on, or now when a bounded
    /// pass left work (a listener backlog, closed sockets to release).
    pub fn next_deadline(&self) -> Option<Instant> {
        let left = work_left(self.backlog.is_pending() || !self.closing.is_empty());
        [self.draining.next_deadline(), self.gate.deadline(), left]
            .into_iter()
            .flatten()
            .min()
    }

    /// Removes a slice of the connections closed ([`crate::net::io::pass::CLOSES_PER_PASS`]), gives
    /// up on draining ones past their wait, and resumes accepting below 90% of
    /// `--max-conns`. True when the front end must accept now: accepting resumed, or the
    /// last accept batch left a backlog.
    pub fn remove_closed(&mut self, registry: &Registry, now: Instant) -> bool {
        while let Some((key, serial)) = self.draining.expired(now) {
            let Some(conn) = self.conns.get_mut(key) else {
                continue;
            };
            if conn.stream.serial() == serial && conn.stream.phase() == Phase::Draining {
                self.stats.drain_timeouts += 1;
                conn.stream.mark_closed(&mut self.budget);
                self.closing.push(key);
            }
        }
        let admission = &mut self.admission;
        let take = |conn: Conn| {
            admission.closed(conn.ip);
            conn.stream
        };
        self.closing
            .release_slice(&mut self.conns, registry, |c| &c.stream, take);
        if self.gate.try_resume(self.conns.len(), now) {
            log::info!(
                "tcp lobby: {} connections, accepting again",
                self.conns.len()
            );
            return true;
        }
        self.backlog.take_pending() && !self.gate.is_paused()
    }

    /// Shutdown: writes what is queued to every connection (each still waiting is left
    /// WRITABLE-only, so the loop wakes when it can take more). True while bytes wait.
    pub fn flush_all(&mut self, registry: &Registry) -> bool {
        let mut pending = false;
        for (key, conn) in self.conns.iter_mut() {
            if conn.stream.phase() == Phase::Closed || conn.stream.pending() == 0 {
                continue;
            }
            conn.stream.start_draining();
            let token = Target::TcpConn(key).token();
            match conn
                .stream
                .flush(registry, token, &mut self.stats.bytes_out, &mut self.budget)
            {
                Ok(Flushed::Open) => pending |= conn.stream.pending() > 0,
                Ok(Flushed::Drained) | Err(_) => {
                    conn.stream.mark_closed(&mut self.budget);
                }
            }
        }
        pending
    }

    /// Shutdown is over: every connection is closed (FIN, after reading away their input).
    pub fn close_all(&mut self, registry: &Registry) {
        for conn in self.conns.drain() {
            conn.stream.release(registry);
        }
    }
}

/// The IPv4 address this connection reached us on (GAME_START without `--public-host`).
/// An IPv6-only connection has none: it is sent as 0.0.0.0 and operators must set
/// `--public-host` (documented).
fn local_ipv4(stream: &TcpStream) -> Ipv4Addr {
    match stream.local_addr().map(|a| canonical_ip(a.ip())) {
        Ok(IpAddr::V4(v4)) => v4,
        _ => Ipv4Addr::UNSPECIFIED,
    }
}

/// Writes `msg` for a connection of the upstream client's dialect into `buf` and returns the
/// length, or `None` for a message the dialect does not have (ERROR_MSG). GAME_START carries
/// the party's seed and the upstream tick rate, LIST_ROOMS_ACK the core's rooms; a ready
/// player's PLAYER_JOIN is followed by its PLAYER_READY (the dialect's PLAYER_JOIN has no
/// ready byte). `buf` holds the largest, LIST_ROOMS_ACK's 2034 bytes.
fn upstream_frames(buf: &mut [u8], msg: TcpMessage, lobby: &RtypeCore) -> Option<usize> {
    Some(match msg {
        TcpMessage::GameStart(room) => up::ServerRepr::GameStart {
            seed: lobby.party_seed(room),
            tick_rate: up::UPSTREAM_TICK_RATE,
        }
        .emit(buf),
        TcpMessage::RoomList => up::emit_room_list(buf, lobby.upstream_rooms()),
        ref other => {
            let len = upstream_repr(other)?.emit(buf);
            match msg {
                TcpMessage::PlayerJoin {
                    slot, ready: true, ..
                } => len + up::ServerRepr::PlayerReady { number: slot }.emit(&mut buf[len..]),
                _ => len,
            }
        }
    })
}

/// What one piece of `key`'s stream means for the core: the core decides
/// ([`TcpInput::of_frame`]); the driver only logs a violation.
fn input_of(key: usize, piece: Piece<'_>) -> TcpInput {
    match piece {
        Piece::Frame(frame) => {
            let input = TcpInput::of_frame(&frame);
            if let TcpInput::Violation(violation) = input {
                log::debug!("tcp lobby: conn {key}: {}", violation.as_str());
            }
            input
        }
        Piece::Oversized {
            packet_type,
            declared,
        } => {
            log::debug!(
                "tcp lobby: conn {key}: type {packet_type:#04x} declares {declared} bytes, skipped"
            );
            TcpInput::OVERSIZED
        }
        Piece::Upstream => {
            log::debug!("tcp lobby: conn {key} speaks the upstream client's dialect");
            TcpInput::Upstream
        }
        Piece::UpstreamFrame(frame) => {
            let input = TcpInput::of_upstream_frame(&frame);
            if let TcpInput::Violation(violation) = input {
                log::debug!("tcp lobby: conn {key}: {}", violation.as_str());
            }
            input
        }
        Piece::BadLength { declared } => {
            log::debug!("tcp lobby: conn {key}: frame length {declared}, skipped");
            TcpInput::BAD_LENGTH
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_connection_is_a_small_fixed_struct() {
        // What one idle connection costs the driver: its slab entry, no heap buffer (the
        // send queue's own tests are in `stream.rs`). Its frame reader holds the largest
        // client frame of either dialect (37 bytes, the upstream client's CONNECT_REQ).
        let entry = std::mem::size_of::<Conn>();
        assert!(entry <= 120, "Conn is {entry} bytes");
        assert_eq!(crate::net::io::buffers::SendQueue::default().capacity(), 0);
    }
}
