//! The general lobby's sockets: the `--lobby-port` listener and its TCP connections, around
//! the sans-IO [`GeneralLobby`] core (docs/protocols/general-lobby.md, "Transport").
//!
//! It plugs into the loop through the [`FrontEnd`] seam (`net::server`), runs on the shared
//! stream transport ([`crate::net::io::stream`]) and checks passwords through the login bridge
//! ([`crate::net::login`]). No protocol logic here: bytes read are cut into frames
//! (`wire::general::next_frame`, zero-copy when a read holds whole frames; only a frame split
//! across reads is kept, in a buffer of at most one frame), each frame goes to the core, and
//! the core's outputs are carried out (`general/outbound.rs`): its frames are copied from the
//! core's arena into the connection's capped send queue, and every connection written to
//! during one batch of readiness events is flushed once at its end (a chat to 1,000 members
//! costs 1,000 queue appends and, per member, one `write` per batch, not one per frame).
//! Outputs name a connection by slab key and serial, so one queued for a connection that is
//! gone never reaches a later one that reuses its key; and every output is carried out before
//! a key is freed.
//!
//! The cost of a flood lands on the flooder: at most [`FRAMES_PER_EVENT`] frames of one
//! connection are handled per readiness event (the rest wait, the others are served), the
//! core answers frames over its per-connection rate with ERROR 10, and a member whose send
//! queue passes [`SEND_QUEUE_CAP`] is dropped as a slow reader without slowing anyone else.
//! Every connection's send queue and split frame share one [`MemoryBudget`]
//! (`--lobby-memory-budget`): when it is full, the connection holding the most is dropped.
//! Over `--lobby-max-conns-per-ip` or `--lobby-conn-rate` a newcomer is refused at accept; at
//! `--lobby-max-conns` the oldest connection not signed in makes room for it, and when every
//! connection is a member accepting pauses and resumes below 90 %.

mod outbound;
pub mod stats;
mod web;
pub mod websocket;

use std::collections::hash_map::RandomState;
use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use mio::event::Event;
use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Registry};
use slab::Slab;

use crate::accounts::LoginPolicy;
use crate::config::GeneralSettings;
use crate::general::{ConnId, GeneralConfig, GeneralLobby, JobId, TokenSource};
use crate::metrics::{GeneralGameInfo, GeneralMemberInfo, GeneralSnapshot, LoadSample, Snapshot};
use crate::ratelimit::{PerIpConfig, PerIpLimiter};
use crate::wire::general::{next_frame, Next, HEADER_LEN, MEMBER_AWAY};

use crate::net::general::stats::GeneralDriverStats;
use crate::net::io::buffers::{largest_holder, MemoryBudget, PartialFrame};
use crate::net::io::heap::FORGET_PER_TIDY;
use crate::net::io::pass::{work_left, AcceptBacklog, Accepted, Closing, TIMERS_PER_PASS};
use crate::net::io::stream::{
    canonical_ip, tune_listener, AcceptGate, Linger, PerIpCounts, Phase, Stream,
};
use crate::net::login::{LoginMetrics, LoginShared, Logins};
use crate::net::server::FrontEnd;
use crate::net::token::Target;
use crate::net::warn::WarnBudget;

pub use outbound::SEND_QUEUE_CAP;
pub use websocket::WsPort;

use websocket::Transport;

/// How long a connection the core closed may take to read what is queued for it.
pub const LINGER: Duration = Duration::from_secs(2);
/// Frames of one connection handled per readiness event before serving the others.
pub const FRAMES_PER_EVENT: usize = 64;
/// Bytes read per `read` call (one buffer shared by every connection).
const READ_CHUNK: usize = 16 * 1024;
/// Reads from one connection per readiness event.
const READ_BUDGET: usize = 8;
/// A split frame this long comes one read per readiness event: hundreds of members each
/// sending a frame of a megabyte would otherwise make every pass copy 128 KiB of each
/// (tens of megabytes) before anyone else's PING is answered.
const LONG_FRAME: usize = 2 * READ_CHUNK;

/// The core's name for connection `key`: the slab key in the low 32 bits, the connection's
/// serial above, so an output the core queued for a connection that is gone can never reach
/// a later connection that reuses its slab key (it no longer matches, and is dropped).
fn conn_id(key: usize, serial: u32) -> ConnId {
    ConnId((u64::from(serial) << 32 | key as u64) as usize)
}

/// The slab key and serial a [`ConnId`] names.
fn key_of(conn: ConnId) -> (usize, u32) {
    let raw = conn.0 as u64;
    ((raw & u64::from(u32::MAX)) as usize, (raw >> 32) as u32)
}

/// One general lobby connection.
#[derive(Debug)]
struct Conn {
    stream: Stream,
    ip: IpAddr,
    /// The start of a frame split across reads (at most one frame), counted against the
    /// driver's [`MemoryBudget`].
    partial: PartialFrame,
    /// Whole frames wait in `partial` beyond this event's budget.
    backlogged: bool,
    /// The key waits in the driver's `dirty` list for a write.
    in_dirty: bool,
    /// The key waits in the driver's `gathering` list for a write.
    in_gathering: bool,
    /// The TCP port's frames, or the WebSocket port's HTTP head and messages.
    transport: Transport,
}

/// Which of the general lobby's ports a connection came through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Port {
    /// `--lobby-port`.
    Tcp,
    /// `--lobby-ws-port`.
    WebSocket,
}

/// The general lobby's listener, connections and logins.
pub struct GeneralDriver {
    listener: TcpListener,
    conns: Slab<Conn>,
    core: GeneralLobby,
    logins: Option<Logins>,
    per_ip: PerIpCounts,
    rate: PerIpLimiter,
    gate: AcceptGate,
    max_conns_per_ip: usize,
    /// `HEADER_LEN + --lobby-max-frame`: the most a connection buffers.
    frame_cap: usize,
    /// `--lobby-memory-budget`: every connection's send queue and partial frame together.
    budget: MemoryBudget,
    /// Connections closed while the core's outputs are being carried out, told to the core
    /// once those are: a departure then queues its notices after the previous one's were
    /// carried out, so a crowd leaving at once (each failed write closing another
    /// connection) never piles one output record per member per departure.
    closed_meanwhile: Vec<ConnId>,
    /// The core's outputs are being carried out.
    carrying: bool,
    /// Connections with bytes for them alone queued since their last write, written a slice
    /// at a time after the event batch ([`FLUSH_SLICE`](outbound::FLUSH_SLICE)).
    dirty: VecDeque<usize>,
    /// Connections with fan-out bytes queued since their last write and when they are due
    /// ([`FANOUT_DELAY`](outbound::FANOUT_DELAY) after the first of them), oldest first; a
    /// slice at a time once due.
    gathering: VecDeque<(Instant, usize)>,
    /// Connections that sent frames in this event batch: their replies are written first,
    /// ahead of the fan-out to everybody else.
    served: Vec<usize>,
    /// Connections with whole frames left over after their budget, served after the batch.
    backlog: Vec<usize>,
    /// Connections to remove after the event batch, a slice per pass.
    closing: Closing,
    /// Accepts left in this pass, and whether the listener was left with a backlog.
    accepts: AcceptBacklog,
    lingering: Linger,
    next_serial: u32,
    read_buf: Box<[u8; READ_CHUNK]>,
    stats: GeneralDriverStats,
    warnings: WarnBudget,
    /// The WebSocket port, when served.
    ws: Option<WsPort>,
    /// The server is shutting down: the WebSocket close code is 1001.
    shutting_down: bool,
}

/// Resume tokens from the OS CSPRNG. Should the OS refuse (it does not on Linux once
/// booted), a keyed hash of a counter stands in, keyed by the standard library's per-process
/// random keys, so tokens stay unguessable from outside; the failure is logged once.
fn os_tokens() -> TokenSource {
    let keys = RandomState::new();
    let mut counter: u64 = 0;
    let mut warned = false;
    Box::new(move || {
        let mut token = [0u8; 16];
        if let Err(e) = getrandom::fill(&mut token) {
            if !std::mem::replace(&mut warned, true) {
                log::error!(
                    "general lobby: the OS random generator failed ({e}); using a keyed hash"
                );
            }
            for half in token.chunks_mut(8) {
                counter = counter.wrapping_add(1);
                half.copy_from_slice(&keys.hash_one(counter).to_le_bytes());
            }
        }
        token
    })
}

impl GeneralDriver {
    /// Serves the general lobby on a bound `listener`; `db` is the account database and
    /// `login` wakes the loop when a password check finishes.
    pub fn new(
        mut listener: TcpListener,
        registry: &Registry,
        settings: &GeneralSettings,
        db: &std::path::Path,
        login: LoginShared,
        ws: Option<WsPort>,
    ) -> io::Result<GeneralDriver> {
        let config: GeneralConfig = settings.core.clone();
        let logins = match config.login {
            LoginPolicy::Off => None,
            LoginPolicy::Required | LoginPolicy::Optional => {
                let metrics = LoginMetrics {
                    checks: "general_login_checks_total",
                    refused: "general_login_refused_total",
                };
                Some(Logins::new("general lobby", metrics, db.into(), login))
            }
        };
        tune_listener(&listener, true);
        registry.register(
            &mut listener,
            Target::GeneralListener.token(),
            Interest::READABLE,
        )?;
        let now = Instant::now();
        let rate = u64::from(settings.conn_rate);
        Ok(GeneralDriver {
            listener,
            conns: Slab::new(),
            frame_cap: HEADER_LEN + config.max_frame,
            budget: MemoryBudget::new(settings.memory_budget),
            closed_meanwhile: Vec::new(),
            carrying: false,
            core: GeneralLobby::new(config, now, os_tokens()),
            logins,
            per_ip: PerIpCounts::default(),
            rate: PerIpLimiter::new(PerIpConfig {
                rate,
                per: Duration::from_secs(60),
                burst: rate,
                byte_rate: 0,
                byte_burst: 0,
                max_entries: 65_536,
            }),
            gate: AcceptGate::new(settings.max_conns),
            max_conns_per_ip: settings.max_conns_per_ip,
            dirty: VecDeque::new(),
            gathering: VecDeque::new(),
            served: Vec::new(),
            backlog: Vec::new(),
            closing: Closing::default(),
            accepts: AcceptBacklog::default(),
            lingering: Linger::new(LINGER),
            next_serial: 0,
            read_buf: Box::new([0; READ_CHUNK]),
            stats: GeneralDriverStats::default(),
            warnings: WarnBudget::new(now, 60, 20),
            ws,
            shutting_down: false,
        })
    }

    /// Accepts until `WouldBlock`, `--lobby-max-conns` or this pass's budget (the rest after
    /// the next poll).
    fn accept(&mut self, registry: &Registry, now: Instant, port: Port) {
        match (port, self.ws.as_mut()) {
            (Port::Tcp, _) => self.accepts.begin(),
            (Port::WebSocket, Some(ws)) => ws.accepts.begin(),
            (Port::WebSocket, None) => return,
        }
        loop {
            // Closed connections leave the slab after the batch; they no longer count.
            let open = self.conns.len() - self.closing.len();
            let full = self.gate.is_full(open);
            if full && self.core.oldest_guest().is_none() {
                // Every connection is a signed-in member: newcomers wait in the backlog.
                self.pause_accepting();
                return;
            }
            let accepted = match (port, self.ws.as_mut()) {
                (Port::WebSocket, Some(ws)) => ws.accepts.accept(&ws.listener),
                _ => self.accepts.accept(&self.listener),
            };
            let (stream, peer) = match accepted {
                Accepted::Conn(stream, peer) => (stream, peer),
                Accepted::Drained | Accepted::BudgetSpent => return,
                Accepted::Failed(e) => {
                    // Out of descriptors, say: retry after the next event batch rather than
                    // wait for a new connection (the listener is edge-triggered).
                    self.warnings
                        .warn(now, format_args!("general lobby accept failed: {e}"));
                    if self.gate.back_off(now) {
                        self.stats.accept_pauses += 1;
                    }
                    return;
                }
            };
            self.admit(registry, now, stream, peer, full, port);
        }
    }

    fn admit(
        &mut self,
        registry: &Registry,
        now: Instant,
        mut stream: TcpStream,
        peer: SocketAddr,
        full: bool,
        port: Port,
    ) {
        let ip = canonical_ip(peer.ip());
        // Dropping the stream closes it at once, without a word.
        if !self.rate.allow_request(now, ip) {
            self.stats.rate_limited += 1;
            log::debug!("general lobby: {peer} over --lobby-conn-rate, closed");
            return;
        }
        if self.per_ip.get(ip) >= self.max_conns_per_ip {
            self.stats.per_ip_limited += 1;
            log::debug!("general lobby: {peer} over --lobby-max-conns-per-ip, closed");
            return;
        }
        if full {
            // An admitted newcomer needs the room: the oldest connection not signed in makes it.
            self.evict_a_guest(now);
        }
        let entry = self.conns.vacant_entry();
        let key = entry.key();
        let token = Target::GeneralConn(key).token();
        if let Err(e) = registry.register(&mut stream, token, Interest::READABLE) {
            log::debug!("general lobby: register {peer}: {e}");
            return;
        }
        self.next_serial = self.next_serial.wrapping_add(1);
        entry.insert(Conn {
            stream: Stream::new(stream, self.next_serial),
            ip,
            partial: PartialFrame::default(),
            backlogged: false,
            in_dirty: false,
            in_gathering: false,
            transport: match port {
                Port::Tcp => Transport::Tcp,
                Port::WebSocket => Transport::Http,
            },
        });
        self.per_ip.add(ip);
        if let (Port::WebSocket, Some(ws)) = (port, self.ws.as_mut()) {
            // The core meets it once upgraded; until then the port's own deadline runs.
            ws.stats.accepted += 1;
            ws.upgrades.start(now, key, self.next_serial);
            return;
        }
        self.stats.accepted += 1;
        self.core
            .handle_open_from(now, conn_id(key, self.next_serial), ip);
        self.carry_out(registry, now);
    }

    /// At the connection cap, makes room for an accepted newcomer by closing the oldest
    /// connection that has not signed in (a crowd that connects and never signs in
    /// must not hold the lobby full).
    fn evict_a_guest(&mut self, now: Instant) {
        let Some(conn) = self.core.oldest_guest() else {
            return;
        };
        self.stats.guests_evicted += 1;
        log::debug!("general lobby: at --lobby-max-conns, closing {conn:?} (not signed in)");
        let (key, serial) = key_of(conn);
        let ours = self.conns.get(key);
        if ours.is_some_and(|c| c.stream.is_open() && c.stream.serial() == serial) {
            self.close(now, key);
        } else {
            // Not an open connection of ours: the core forgets it all the same.
            self.core.handle_closed(now, conn);
        }
    }

    fn pause_accepting(&mut self) {
        if self.gate.pause() {
            self.stats.accept_pauses += 1;
        }
    }

    /// Reads what `key` sent and hands its frames to the core, within the budgets.
    fn read(&mut self, registry: &Registry, now: Instant, key: usize) {
        let mut budget = FRAMES_PER_EVENT;
        self.served.push(key);
        // Frames left over from the last event come first.
        let tcp = self
            .conns
            .get(key)
            .is_some_and(|c| matches!(c.transport, Transport::Tcp));
        let served = if tcp {
            self.serve_partial(registry, now, key, &mut budget)
        } else {
            self.ws_serve_partial(registry, now, key, &mut budget)
        };
        if !served {
            return;
        }
        for _ in 0..READ_BUDGET {
            if budget == 0 {
                // Over this event's frame budget: leave the rest in the socket until the
                // backlog is served; TCP flow control then slows the flooder, nobody else.
                self.park(key);
                return;
            }
            let Some(conn) = self.conns.get_mut(key).filter(|c| c.stream.is_open()) else {
                return;
            };
            let n = match conn.stream.socket.read(&mut self.read_buf[..]) {
                Ok(0) => {
                    self.peer_finished(registry, now, key);
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    log::debug!("general lobby: read {key}: {e}");
                    self.stats.io_errors += 1;
                    self.close(now, key);
                    return;
                }
            };
            self.stats.bytes_in += n as u64;
            if !self.take_bytes(registry, now, key, n, &mut budget) {
                return;
            }
            if (self.conns.get(key)).is_some_and(|c| c.partial.bytes().len() >= LONG_FRAME) {
                break;
            }
        }
        // Read budget spent with data possibly left: come back without waiting for an edge.
        if let Some(conn) = self.conns.get_mut(key).filter(|c| c.stream.is_open()) {
            let _ = conn
                .stream
                .rearm(registry, Target::GeneralConn(key).token());
        }
    }

    /// Hands the first `n` bytes of the read buffer to the core: whole frames straight from
    /// the buffer, a split frame through the connection's `partial`. False when the
    /// connection stopped reading (closed, or the frame budget ran out).
    fn take_bytes(
        &mut self,
        registry: &Registry,
        now: Instant,
        key: usize,
        n: usize,
        budget: &mut usize,
    ) -> bool {
        let id = self.id(key);
        let Some(conn) = self.conns.get_mut(key) else {
            return false;
        };
        if !matches!(conn.transport, Transport::Tcp) {
            return self.ws_take_bytes(registry, now, key, n, budget);
        }
        if !conn.partial.is_empty() {
            // The bytes continue a split frame. `partial` holds at most one read and one
            // frame: a connection over its budget is not read again until it is served.
            if !self.keep_partial(now, key, 0, n) {
                return false;
            }
            return self.serve_partial(registry, now, key, budget);
        }
        let mut at = 0;
        while at < n {
            if *budget == 0 {
                if self.keep_partial(now, key, at, n) {
                    self.park(key);
                }
                return false;
            }
            match next_frame(&self.read_buf[at..n], self.frame_cap - HEADER_LEN) {
                Next::NeedMore => return self.keep_partial(now, key, at, n),
                Next::Oversized { code, .. } => {
                    self.core.handle_oversized(now, id, code);
                    self.carry_out(registry, now);
                    return false;
                }
                Next::Frame { frame, consumed } => {
                    *budget -= 1;
                    self.stats.frames_in += 1;
                    self.core.handle_frame(now, id, &frame);
                    at += consumed;
                    self.carry_out(registry, now);
                    if !self.conns.get(key).is_some_and(|c| c.stream.is_open()) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Serves whole frames waiting in `key`'s `partial`, within `budget`; false when the
    /// connection stopped reading.
    fn serve_partial(
        &mut self,
        registry: &Registry,
        now: Instant,
        key: usize,
        budget: &mut usize,
    ) -> bool {
        let id = self.id(key);
        loop {
            let Some(conn) = self.conns.get_mut(key).filter(|c| c.stream.is_open()) else {
                return false;
            };
            if conn.partial.is_empty() {
                conn.backlogged = false;
                return true;
            }
            if *budget == 0 {
                self.park(key);
                return false;
            }
            let used = match next_frame(conn.partial.bytes(), self.frame_cap - HEADER_LEN) {
                Next::NeedMore => {
                    conn.backlogged = false;
                    return true;
                }
                Next::Oversized { code, .. } => {
                    conn.partial.clear(&mut self.budget);
                    self.core.handle_oversized(now, id, code);
                    self.carry_out(registry, now);
                    return false;
                }
                Next::Frame { frame, consumed } => {
                    *budget -= 1;
                    self.stats.frames_in += 1;
                    self.core.handle_frame(now, id, &frame);
                    consumed
                }
            };
            if let Some(conn) = self.conns.get_mut(key) {
                // A split frame's buffer is not kept once served.
                conn.partial.consume(used, &mut self.budget);
            }
            self.carry_out(registry, now);
        }
    }

    /// The peer shut its sending side: the core forgets the connection now (its member is
    /// away), and what is queued for it (the replies to its last frames) is still written
    /// before the socket closes, within [`LINGER`].
    fn peer_finished(&mut self, registry: &Registry, now: Instant, key: usize) {
        let id = self.id(key);
        self.core.handle_closed(now, id);
        self.carry_out(registry, now);
        if let Some(c) = self.conns.get_mut(key) {
            if c.stream.start_draining() {
                self.lingering.start(now, key, c.stream.serial());
            }
            // It is not read again.
            c.partial.clear(&mut self.budget);
        }
        self.flush(registry, now, key);
    }

    /// The core's name for the connection at slab key `key` (see [`conn_id`]).
    fn id(&self, key: usize) -> ConnId {
        conn_id(key, self.conns.get(key).map_or(0, |c| c.stream.serial()))
    }

    /// Marks `key` as having whole frames left for after this batch.
    fn park(&mut self, key: usize) {
        if let Some(conn) = self.conns.get_mut(key) {
            if !conn.backlogged {
                conn.backlogged = true;
                self.backlog.push(key);
            }
        }
    }

    /// Closes `key` now: the core forgets it (also when it asked for the close, or was told
    /// at the peer's EOF: `handle_closed` of a connection it already forgot does nothing) and
    /// the slab entry goes after the event batch.
    fn close(&mut self, now: Instant, key: usize) {
        if let Some(id) = self.close_quietly(key) {
            if self.carrying {
                self.closed_meanwhile.push(id);
            } else {
                self.core.handle_closed(now, id);
            }
        }
    }

    /// Closes `key` and frees its buffers, without telling the core yet: the caller does,
    /// with the id returned (none when it was closed already).
    fn close_quietly(&mut self, key: usize) -> Option<ConnId> {
        let conn = self.conns.get_mut(key)?;
        if !conn.stream.mark_closed(&mut self.budget) {
            return None;
        }
        conn.partial.clear(&mut self.budget);
        self.closing.push(key);
        Some(self.id(key))
    }

    /// Appends `read_buf[from..to]` to `key`'s partial frame, dropping the connections that
    /// hold the most while `--lobby-memory-budget` has no room for it; false when `key`
    /// itself was dropped (it held the most).
    fn keep_partial(&mut self, now: Instant, key: usize, from: usize, to: usize) -> bool {
        loop {
            let Some(conn) = self.conns.get_mut(key) else {
                return false;
            };
            if conn
                .partial
                .extend(&self.read_buf[from..to], &mut self.budget)
            {
                return true;
            }
            if self.shed(now, key) == key {
                return false;
            }
        }
    }

    /// `--lobby-memory-budget` is full and `asking` needs room: closes the connection whose
    /// send queue and partial frame hold the most (`asking` itself when nobody else holds
    /// more, or when nobody holds anything), counts and logs it. Returns its key.
    fn shed(&mut self, now: Instant, asking: usize) -> usize {
        let holds = |c: &Conn| c.stream.held() + c.partial.capacity();
        let live = (self.conns.iter()).filter(|(_, c)| c.stream.phase() != Phase::Closed);
        let victim = largest_holder(live.map(|(key, c)| (key, holds(c))), asking);
        let held = self.conns.get(victim).map_or(0, holds);
        self.stats.memory_budget_drops += 1;
        self.warnings.warn(
            now,
            format_args!(
                "general lobby: --lobby-memory-budget full ({} of {} bytes held): dropping \
                 the connection that holds the most ({held} bytes)",
                self.budget.held(),
                self.budget.limit()
            ),
        );
        self.close(now, victim);
        victim
    }

    /// Serves connections whose frames waited past their budget, one budget each.
    fn serve_backlog(&mut self, registry: &Registry, now: Instant) {
        let backlog = std::mem::take(&mut self.backlog);
        for key in backlog {
            if let Some(conn) = self.conns.get_mut(key) {
                conn.backlogged = false;
            }
            // A fresh read also picks up what the socket holds beyond the buffer.
            self.read(registry, now, key);
        }
    }

    /// Games and gauges for the operators' pages, and the first `named` members by name.
    fn games_snapshot(&self, named: usize) -> GeneralSnapshot {
        let (ws_connections, ws_members) = self.ws_counts();
        GeneralSnapshot {
            members: self.core.member_count(),
            member_list: self
                .core
                .members()
                .take(named)
                .map(|m| GeneralMemberInfo {
                    id: m.id.0,
                    username: m.username.to_owned(),
                    display_name: m.display_name.to_owned(),
                    away: m.flags & MEMBER_AWAY != 0,
                    games: m.games,
                })
                .collect(),
            members_away: self.core.member_count() - self.core.present_count(),
            connections: self.conns.len(),
            ws_connections,
            ws_members,
            buffered_bytes: self.budget.held(),
            buffered_peak: self.budget.peak(),
            games: self
                .core
                .games()
                .map(|game| GeneralGameInfo {
                    id: game.id.0,
                    owner: game.owner.0,
                    name: game.name.to_owned(),
                    game_type: game.game_type.to_owned(),
                    flags: game.flags,
                    players: game.players,
                    max_players: game.max_players as usize,
                })
                .collect(),
        }
    }
}

impl FrontEnd for GeneralDriver {
    fn ready(&mut self, registry: &Registry, target: Target, event: &Event) {
        let now = Instant::now();
        match target {
            Target::GeneralListener => self.accept(registry, now, Port::Tcp),
            Target::GeneralWsListener => self.accept(registry, now, Port::WebSocket),
            Target::GeneralConn(key) => {
                if event.is_writable() {
                    self.flush(registry, now, key);
                }
                if event.is_readable() || event.is_read_closed() || event.is_error() {
                    self.read(registry, now, key);
                }
            }
            _ => {}
        }
        // What this event queued is written after the event batch, in `after_events`: a chat
        // line from each of 100 members in one batch is then one write per reader, not 100.
    }

    fn after_events(&mut self, registry: &Registry) {
        let now = Instant::now();
        while let Some((job, result)) = self.logins.as_mut().and_then(|l| l.next_result(now)) {
            self.core.handle_verify_result(now, JobId(job), result);
            self.carry_out(registry, now);
        }
        self.core.handle_timeout_within(now, TIMERS_PER_PASS);
        self.carry_out(registry, now);
        self.serve_backlog(registry, now);
        self.settle(registry, now);
        while let Some((key, serial)) = self.lingering.expired(now) {
            let still_there = self.conns.get(key).is_some_and(|c| {
                c.stream.serial() == serial && c.stream.phase() == Phase::Draining
            });
            if still_there {
                self.stats.linger_timeouts += 1;
                self.close(now, key);
            }
        }
        // Every output is carried out before a slab key is freed for reuse.
        self.carry_out(registry, now);
        let per_ip = &mut self.per_ip;
        let take = |conn: Conn| {
            per_ip.remove(conn.ip);
            conn.stream
        };
        self.closing
            .release_slice(&mut self.conns, registry, |c| &c.stream, take);
        self.expire_upgrades(now);
        let resumed = self.gate.try_resume(self.conns.len(), now);
        if (self.accepts.take_pending() && !self.gate.is_paused()) || resumed {
            self.accept(registry, now, Port::Tcp);
            self.settle(registry, now);
        }
        let ws_pending = self.ws.as_mut().is_some_and(|ws| ws.accepts.take_pending());
        if (ws_pending && !self.gate.is_paused()) || (resumed && self.ws.is_some()) {
            self.accept(registry, now, Port::WebSocket);
            self.settle(registry, now);
        }
    }

    fn tidy(&mut self, now: Instant) {
        self.rate.tidy(now, FORGET_PER_TIDY);
        self.per_ip.shrink();
        // `after_events` drained the core's outputs just before.
        self.core.tidy();
    }

    fn next_deadline(&self) -> Option<Instant> {
        // Frames waiting past their budget, writes past this batch's slice, a listener
        // backlog and closed sockets past this pass's slice are served after the next
        // (immediate) poll; gathered fan-out when the first of it is due.
        let backlog = work_left(
            !self.backlog.is_empty()
                || !self.dirty.is_empty()
                || self.accepts.is_pending()
                || self.ws.as_ref().is_some_and(|ws| ws.accepts.is_pending())
                || !self.closing.is_empty(),
        );
        [
            self.gathering.front().map(|&(due, _)| due),
            self.core.poll_timeout(),
            self.lingering.next_deadline(),
            self.gate.deadline(),
            self.ws.as_ref().and_then(|ws| ws.upgrades.next_deadline()),
            backlog,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn load(&self, sample: &mut LoadSample) {
        sample.requests[3] += self.stats.frames_in;
        sample.connections += self.conns.len() as u64;
        sample.members += self.core.member_count() as u64;
        sample.games += self.core.game_count() as u64;
    }

    fn snapshot(&self, snap: &mut Snapshot) {
        let core = self.core.stats();
        snap.add_counters(|f| core.visit(f));
        snap.add_counters(|f| self.stats.visit(f));
        if let Some(logins) = self.logins.as_ref() {
            snap.add_counters(|f| logins.visit(f));
        }
        if let Some(ws) = self.ws.as_ref() {
            snap.add_counters(|f| ws.stats.visit(f));
        }
        snap.general = Some(self.games_snapshot(snap.detail_rows));
    }

    fn shutdown(&mut self, registry: &Registry) {
        let now = Instant::now();
        self.shutting_down = true;
        self.pause_accepting();
        // ERROR(0, 0, "server shutting down") to every connection, then close after flush.
        self.core.handle_shutdown(now);
        self.carry_out(registry, now);
        self.settle(registry, now);
    }

    fn flush_shutdown(&mut self, registry: &Registry) -> bool {
        let now = Instant::now();
        let waiting: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| c.stream.phase() != Phase::Closed && c.stream.pending() > 0)
            .map(|(key, _)| key)
            .collect();
        for &key in &waiting {
            self.flush(registry, now, key);
        }
        self.conns
            .iter()
            .any(|(_, c)| c.stream.phase() != Phase::Closed && c.stream.pending() > 0)
    }

    fn close_all(&mut self, registry: &Registry) {
        for conn in self.conns.drain() {
            conn.stream.release(registry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_id_names_its_key_and_serial() {
        for (key, serial) in [(0, 0), (1, 1), (7, u32::MAX), (u32::MAX as usize, 12345)] {
            assert_eq!(key_of(conn_id(key, serial)), (key, serial));
        }
        // The same key with another serial is another connection for the core.
        assert_ne!(conn_id(3, 1), conn_id(3, 2));
    }
}
