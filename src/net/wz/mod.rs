//! The Warzone 2100 master server's sockets: the `--wz-port` listener and its TCP
//! connections, reachability probes ([`crate::net::wz::probe`]) and v4 password checks
//! ([`crate::net::login`]), all around the sans-IO [`WzLobby`] core.
//!
//! It plugs into the loop through the [`FrontEnd`] seam (`net::server`) and runs on the
//! shared stream transport ([`crate::net::io::stream`]). No protocol logic here: bytes read go to
//! `WzLobby::handle_bytes` (the consumed prefix is dropped, the rest kept for the next read),
//! `WzOutput`s are carried out. Each connection has a read buffer of at most [`IN_CAP`] bytes
//! (the core never leaves more than one frame's worth; while a v4 request waits for a verdict
//! the connection simply stops being read) and a send queue of at most [`OUT_CAP`] bytes
//! (past the cap the peer is dropped); both exist only while they hold bytes and count
//! against `--wz-memory-budget`, which, when full, drops the connection holding the most. `Close` closes once the queue is flushed, within
//! [`LINGER`]. At `--wz-max-conns` the oldest connection that has not settled (no game
//! registered, no v4 request answered with success: `WzLobby::oldest_unsettled`) is closed
//! to make room; when every connection has settled, accepting pauses rather than refusing:
//! refused 4.x hosts reconnect in a tight loop (notes section 4); per-IP caps are the core's.
//! Closed
//! connections and finished probes are removed after the event batch, so a reused slab key
//! never sees a stale event.

pub mod directory;
pub mod probe;
pub mod stats;

use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mio::event::Event;
use mio::net::TcpListener;
use mio::{Interest, Registry};
use slab::Slab;

use crate::accounts::tokens::os_tokens;
use crate::accounts::{LoginPolicy, VerifyResult};
use crate::config::WzSettings;
use crate::wire::wz::v4::MAX_FRAME;
use crate::wire::wz::MAX_MOTD;
use crate::wz::policy::parse_banned_words;
use crate::wz::{ConnId, JobId, WzConfig, WzLobby, WzOutput};

use directory::DirectoryGames;

use crate::metrics::{LoadSample, Snapshot, WzGameInfo, WzSnapshot};

use crate::net::io::buffers::{largest_holder, MemoryBudget, PartialFrame, QueueFull};
use crate::net::io::heap::FORGET_PER_TIDY;
use crate::net::io::pass::{work_left, AcceptBacklog, Accepted, Closing, TIMERS_PER_PASS};
use crate::net::io::stream::{
    canonical_ip, tune_listener, AcceptGate, Flushed, Linger, Phase, Stream,
};
use crate::net::login::{LoginMetrics, LoginShared, Logins};
use crate::net::server::FrontEnd;
use crate::net::token::Target;
use crate::net::warn::WarnBudget;
use crate::net::wz::probe::Probes;
use crate::net::wz::stats::WzDriverStats;

/// Most bytes buffered from one connection: one whole v4 frame (the legacy core never
/// leaves more than one GAMESTRUCT).
pub const IN_CAP: usize = MAX_FRAME as usize + 4;
/// Most bytes queued to one connection; a peer that does not read a few `list` replies'
/// worth is dropped.
pub const OUT_CAP: usize = 1024 * 1024;
/// How long a connection the core closed may take to read what is queued for it; after
/// that it is closed anyway, so a peer that never reads cannot hold a slot.
pub const LINGER: Duration = Duration::from_secs(10);
/// Bytes read per `read` call.
const READ_CHUNK: usize = 16 * 1024;
/// Reads from one connection per readiness event before serving the others.
const READ_BUDGET: usize = 16;
/// Largest banned-words file read.
const MAX_WORDS_FILE: u64 = 1024 * 1024;

/// The files SIGHUP rereads.
#[derive(Debug, Clone, Default)]
struct Files {
    motd: Option<PathBuf>,
    banned_words: Option<PathBuf>,
}

#[derive(Debug)]
struct Conn {
    stream: Stream,
    /// Its source address (password checks are limited per address).
    ip: IpAddr,
    /// What was read and not yet consumed by the core (freed once empty).
    inbuf: PartialFrame,
    /// The read buffer is full behind a waiting request; read again on `Resume`.
    paused: bool,
}

impl Conn {
    /// Not closed: still read (while open) and written.
    fn is_live(&self) -> bool {
        self.stream.phase() != Phase::Closed
    }

    /// Heap bytes its send queue and read buffer hold (what the budget counts for it).
    fn held(&self) -> usize {
        self.stream.held() + self.inbuf.capacity()
    }
}

/// The master server's listener, connections, probes and logins.
#[derive(Debug)]
pub struct WzDriver {
    listener: TcpListener,
    conns: Slab<Conn>,
    core: WzLobby,
    probes: Probes,
    probe_timeout: Duration,
    logins: Option<Logins>,
    files: Files,
    chunk: Box<[u8; READ_CHUNK]>,
    /// Connections whose waiting request was answered: feed and read them again.
    resumed: Vec<usize>,
    /// Connections to remove after the event batch, a slice per pass.
    closing: Closing,
    /// Connections waiting to flush before closing, in deadline order.
    lingering: Linger,
    next_serial: u32,
    /// Accepting stops at `--wz-max-conns` (or after an accept error) and is retried after
    /// each event batch once below 90 % of it.
    gate: AcceptGate,
    /// Accepts left in this pass, and whether the listener was left with a backlog.
    backlog: AcceptBacklog,
    stats: WzDriverStats,
    /// `--wz-memory-budget`: every connection's send queue and read buffer together. When it
    /// is full, the connection holding the most is dropped ([`Self::shed`]): at
    /// `--wz-max-conns` the queues' caps alone would allow 4 GiB, the read buffers 256 MiB.
    budget: MemoryBudget,
    warnings: WarnBudget,
    /// This node's games in the directory of a group, the other nodes' in the lists.
    directory: Option<DirectoryGames>,
}

/// Reads the MOTD file: UTF-8, at most `MAX_MOTD` bytes, trailing newlines dropped.
fn read_motd(path: &Path) -> io::Result<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_MOTD as u64 + 2)
        .read_to_end(&mut bytes)?;
    while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        bytes.pop();
    }
    if bytes.len() > MAX_MOTD {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("longer than {MAX_MOTD} bytes"),
        ));
    }
    String::from_utf8(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))
}

/// Reads the banned-words file (at most 1 MiB).
fn read_banned_words(path: &Path) -> io::Result<Vec<String>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_WORDS_FILE)
        .read_to_end(&mut bytes)?;
    Ok(parse_banned_words(&String::from_utf8_lossy(&bytes)))
}

/// Names the file in an error, so the operator sees which flag is wrong.
fn with_path<T>(path: &Path, result: io::Result<T>) -> io::Result<T> {
    result.map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// The core's configuration from the command line, reading the MOTD and banned-words files.
/// Called at start even when the listener is disabled, so a wrong path fails early.
pub fn core_config(settings: &WzSettings) -> io::Result<WzConfig> {
    let defaults = WzConfig::default();
    let motd = match (&settings.motd, &settings.motd_file) {
        (Some(text), _) => text.clone(),
        (None, Some(path)) => with_path(path, read_motd(path))?,
        (None, None) => defaults.motd.clone(),
    };
    let banned_words = match &settings.banned_words {
        Some(path) => with_path(path, read_banned_words(path))?,
        None => Vec::new(),
    };
    Ok(WzConfig {
        motd,
        check_reachable: settings.check_reachable,
        probe_timeout: settings.probe_timeout,
        silence_timeout: settings.silence_timeout,
        min_version: settings.min_version,
        banned_words,
        max_games: settings.max_games,
        max_games_per_ip: settings.max_games_per_ip,
        max_conns_per_ip: settings.max_conns_per_ip,
        registrations_per_minute: u64::from(settings.registrations_per_minute),
        // Two thirds of a minute's worth may come back to back (30/min: bursts of 20).
        registration_burst: (u64::from(settings.registrations_per_minute) * 2 / 3).max(1),
        login: settings.login,
        handshake_timeout: settings.handshake_timeout,
        ..defaults
    })
}

impl WzDriver {
    /// Serves the master server on a bound `listener`; `login` wakes the loop when a
    /// password check finishes.
    pub fn new(
        mut listener: TcpListener,
        registry: &Registry,
        settings: &WzSettings,
        config: WzConfig,
        login: LoginShared,
    ) -> io::Result<WzDriver> {
        let logins = match config.login {
            LoginPolicy::Off => None,
            LoginPolicy::Required | LoginPolicy::Optional => {
                let metrics = LoginMetrics {
                    checks: "wz_login_checks_total",
                    refused: "wz_login_refused_total",
                };
                Some(Logins::new("wz v4", metrics, settings.db.clone(), login))
            }
        };
        // Small status replies must not wait for Nagle.
        tune_listener(&listener, false);
        registry.register(
            &mut listener,
            Target::WzListener.token(),
            Interest::READABLE,
        )?;
        let now = Instant::now();
        Ok(WzDriver {
            listener,
            conns: Slab::new(),
            probe_timeout: config.probe_timeout,
            core: WzLobby::new(config, now, os_tokens("Warzone")),
            probes: Probes::default(),
            logins,
            files: Files {
                motd: settings.motd_file.clone(),
                banned_words: settings.banned_words.clone(),
            },
            chunk: Box::new([0; READ_CHUNK]),
            resumed: Vec::new(),
            closing: Closing::default(),
            lingering: Linger::new(LINGER),
            next_serial: 0,
            gate: AcceptGate::new(settings.max_conns),
            backlog: AcceptBacklog::default(),
            stats: WzDriverStats::default(),
            budget: MemoryBudget::new(settings.memory_budget),
            warnings: WarnBudget::new(now, 60, 20),
            directory: None,
        })
    }

    /// Shares this node's games with a group, and lists theirs after its own.
    pub fn set_directory(&mut self, directory: DirectoryGames) {
        self.directory = Some(directory);
    }

    /// The listener's bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Games and gauges for the operators' pages (the counters go through `visit`).
    fn games_snapshot(&self) -> WzSnapshot {
        let now = Instant::now();
        let games = self
            .core
            .games()
            .map(|game| {
                let gs = &game.gamestruct;
                WzGameInfo {
                    game_id: game.game_id,
                    protocol: match game.owner {
                        crate::wz::games::Owner::Legacy(_) => "legacy",
                        crate::wz::games::Owner::V4(_) => "v4",
                    },
                    host: SocketAddr::new(game.peer, game.game_port),
                    listed: game.listed,
                    name: String::from_utf8_lossy(gs.name()).into_owned(),
                    version: String::from_utf8_lossy(gs.version_string()).into_owned(),
                    players: (gs.current_players(), gs.max_players()),
                    age_secs: now.saturating_duration_since(game.registered_at).as_secs(),
                }
            })
            .collect();
        WzSnapshot {
            games,
            connections: self.conns.len(),
            probes: self.probes.len(),
            buffered_bytes: self.budget.held(),
        }
    }

    /// Accepts until `WouldBlock`, `--wz-max-conns` or this pass's budget
    /// ([`crate::net::io::pass::ACCEPTS_PER_PASS`]; the rest after the next poll). At the cap it goes
    /// on accepting while an unsettled connection could make room (one is evicted per
    /// newcomer); once every connection has settled, accepting pauses.
    fn accept(&mut self, registry: &Registry, now: Instant) {
        self.backlog.begin();
        loop {
            if self.is_full() && self.core.oldest_unsettled().is_none() {
                self.pause_accepting();
                return;
            }
            let (mut stream, peer) = match self.backlog.accept(&self.listener) {
                Accepted::Conn(stream, peer) => (stream, peer),
                Accepted::Drained | Accepted::BudgetSpent => return,
                Accepted::Failed(e) => {
                    // Out of descriptors, say: the listener is edge-triggered, so retry
                    // after the next event batch rather than wait for a new connection.
                    self.warnings
                        .warn(now, format_args!("wz accept failed: {e}"));
                    if self.gate.back_off(now) {
                        self.stats.accept_pauses += 1;
                    }
                    return;
                }
            };
            if self.is_full() {
                self.evict_unsettled(now);
            }
            let entry = self.conns.vacant_entry();
            let key = entry.key();
            if let Err(e) =
                registry.register(&mut stream, Target::WzConn(key).token(), Interest::READABLE)
            {
                self.warnings
                    .warn(now, format_args!("wz: cannot register {peer}: {e}"));
                continue;
            }
            self.next_serial = self.next_serial.wrapping_add(1);
            entry.insert(Conn {
                stream: Stream::new(stream, self.next_serial),
                ip: canonical_ip(peer.ip()),
                inbuf: PartialFrame::default(),
                paused: false,
            });
            self.stats.accepted += 1;
            self.core.handle_open(now, ConnId(key), peer);
        }
    }

    /// `--wz-max-conns` connections are open (closed ones leave the slab after the batch and
    /// no longer count).
    fn is_full(&self) -> bool {
        let open = self.conns.len().saturating_sub(self.closing.len());
        self.gate.is_full(open)
    }

    /// At `--wz-max-conns`, closes the oldest connection that has not settled to make room
    /// for a newcomer (a crowd that connects and never registers must not hold the
    /// listener full).
    fn evict_unsettled(&mut self, now: Instant) {
        let Some(conn) = self.core.oldest_unsettled() else {
            return;
        };
        self.stats.evicted += 1;
        log::debug!("wz: at --wz-max-conns, closing {conn:?} (not settled)");
        self.close(now, conn.0);
        // Whatever the slab held under that key, the core lets it go.
        self.core.handle_closed(now, conn);
    }

    fn pause_accepting(&mut self) {
        if self.gate.pause() {
            self.stats.accept_pauses += 1;
        }
    }

    /// Reads what the peer sent, feeding the core after each chunk.
    fn read(&mut self, registry: &Registry, now: Instant, key: usize) {
        for _ in 0..READ_BUDGET {
            let Some(conn) = self.conns.get_mut(key).filter(|c| c.stream.is_open()) else {
                return;
            };
            let room = IN_CAP
                .saturating_sub(conn.inbuf.bytes().len())
                .min(READ_CHUNK);
            if room == 0 {
                // Full behind a waiting request: `Resume` reads again.
                conn.paused = true;
                return;
            }
            match conn.stream.socket.read(&mut self.chunk[..room]) {
                Ok(0) => {
                    self.peer_closed(registry, now, key);
                    return;
                }
                Ok(n) => {
                    self.stats.bytes_in += n as u64;
                    if !self.keep_input(now, key, n) {
                        return;
                    }
                    self.feed(registry, now, key);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.stats.io_errors += 1;
                    self.close(now, key);
                    return;
                }
            }
        }
        // Budget spent with data possibly left: come back without waiting for a new edge.
        if let Some(conn) = self.conns.get_mut(key).filter(|c| c.stream.is_open()) {
            let _ = conn.stream.rearm(registry, Target::WzConn(key).token());
        }
    }

    /// Hands the read buffer to the core and drops what it consumed, carrying out the
    /// outputs after each call: the core answers a bounded number of v4 requests per call,
    /// so replies reach the capped send queue (and a peer that does not read them is
    /// dropped) before more are produced.
    fn feed(&mut self, registry: &Registry, now: Instant, key: usize) {
        loop {
            let Some(conn) = self.conns.get_mut(key).filter(|c| c.stream.is_open()) else {
                return;
            };
            let used = self.core.handle_bytes(now, ConnId(key), conn.inbuf.bytes());
            conn.inbuf.consume(used, &mut self.budget);
            self.carry_out(registry, now);
            if used == 0 {
                return;
            }
        }
    }

    /// The peer finished sending: the core forgets the connection (its game leaves the
    /// list at once); what is queued is still flushed, then the socket closes.
    fn peer_closed(&mut self, registry: &Registry, now: Instant, key: usize) {
        self.core.handle_closed(now, ConnId(key));
        self.close_after_flush(registry, now, key);
    }

    /// Appends `chunk[..n]` to `key`'s read buffer, dropping the connections that hold the
    /// most while `--wz-memory-budget` has no room for it; false when `key` itself was
    /// dropped (nobody held more).
    fn keep_input(&mut self, now: Instant, key: usize, n: usize) -> bool {
        loop {
            let Some(conn) = self.conns.get_mut(key).filter(|c| c.is_live()) else {
                return false;
            };
            if conn.inbuf.extend(&self.chunk[..n], &mut self.budget) {
                return true;
            }
            if self.shed(now, key) == key {
                return false;
            }
        }
    }

    /// Close once the queue is flushed, within [`LINGER`].
    fn close_after_flush(&mut self, registry: &Registry, now: Instant, key: usize) {
        let Some(conn) = self.conns.get_mut(key).filter(|c| c.is_live()) else {
            return;
        };
        if conn.stream.start_draining() {
            self.lingering.start(now, key, conn.stream.serial());
        }
        // It is not read again.
        conn.inbuf.clear(&mut self.budget);
        self.flush(registry, now, key);
    }

    /// Carries out the core's outputs, then serves connections whose request was answered
    /// (feeding and reading them again), until nothing is left to do.
    fn dispatch(&mut self, registry: &Registry, now: Instant) {
        loop {
            self.carry_out(registry, now);
            let Some(key) = self.resumed.pop() else {
                return;
            };
            self.feed(registry, now, key);
            let paused = self
                .conns
                .get_mut(key)
                .is_some_and(|c| std::mem::take(&mut c.paused));
            if paused {
                self.read(registry, now, key);
            }
        }
    }

    /// Carries out the core's queued outputs; `Resume` is only noted (see `dispatch`), so
    /// this never recurses into reading.
    fn carry_out(&mut self, registry: &Registry, now: Instant) {
        while let Some(output) = self.core.poll_output() {
            match output {
                WzOutput::Send { conn, bytes } => self.queue(registry, now, conn.0, &bytes),
                WzOutput::Close { conn } => self.close_after_flush(registry, now, conn.0),
                WzOutput::Probe {
                    probe,
                    addr,
                    send_wzlr,
                } => {
                    let timeout = self.probe_timeout;
                    if let Some(result) = self
                        .probes
                        .start(registry, now, timeout, probe, addr, send_wzlr)
                    {
                        self.core.handle_probe_result(now, probe, result);
                    }
                }
                WzOutput::Verify {
                    conn,
                    job,
                    username,
                    password,
                } => {
                    let ip = self.conns.get(conn.0).map(|c| c.ip);
                    let decided = match (self.logins.as_mut(), ip) {
                        (Some(logins), Some(ip)) => {
                            logins.verify(now, job.0, ip, &username, password)
                        }
                        _ => Some(VerifyResult::Busy),
                    };
                    if let Some(result) = decided {
                        self.core.handle_verify_result(now, job, result);
                    }
                }
                WzOutput::Resume { conn } => self.resumed.push(conn.0),
            }
        }
    }

    /// Appends to a connection's send queue and writes what the socket takes.
    fn queue(&mut self, registry: &Registry, now: Instant, key: usize, bytes: &[u8]) {
        match self.queue_within_budget(now, key, bytes) {
            Ok(()) => self.flush(registry, now, key),
            Err(QueueFull::Cap) => {
                self.stats.send_overflow += 1;
                self.warnings.warn(
                    now,
                    format_args!("wz: dropping a connection that does not read its replies"),
                );
                self.close(now, key);
            }
            Err(QueueFull::Budget | QueueFull::Closed) => {}
        }
    }

    /// Queues `bytes` on `key`'s connection. While `--wz-memory-budget` has no room for
    /// them, the connection holding the most is dropped (`key` itself when nobody holds
    /// more: then the bytes are not queued).
    fn queue_within_budget(
        &mut self,
        now: Instant,
        key: usize,
        bytes: &[u8],
    ) -> Result<(), QueueFull> {
        loop {
            let Some(conn) = self.conns.get_mut(key).filter(|c| c.is_live()) else {
                return Err(QueueFull::Closed);
            };
            match conn.stream.queue(bytes, OUT_CAP, &mut self.budget) {
                Err(QueueFull::Budget) => {
                    if self.shed(now, key) == key {
                        return Err(QueueFull::Budget);
                    }
                }
                other => return other,
            }
        }
    }

    /// `--wz-memory-budget` is full and `asking` needs room: closes the connection whose
    /// send queue and read buffer hold the most (`asking` itself when nobody holds more),
    /// counts and logs it. Returns its key.
    fn shed(&mut self, now: Instant, asking: usize) -> usize {
        let live = (self.conns.iter()).filter(|(_, c)| c.is_live());
        let victim = largest_holder(live.map(|(key, c)| (key, c.held())), asking);
        let held = self.conns.get(victim).map_or(0, Conn::held);
        self.stats.memory_budget_drops += 1;
        self.warnings.warn(
            now,
            format_args!(
                "wz: --wz-memory-budget full ({} of {} bytes held): dropping the connection \
                 that holds the most ({held} bytes)",
                self.budget.held(),
                self.budget.limit()
            ),
        );
        self.close(now, victim);
        victim
    }

    /// Writes the queue until it is empty or the socket is full; keeps WRITABLE interest
    /// exactly while bytes wait; closes a draining connection once it is flushed.
    fn flush(&mut self, registry: &Registry, now: Instant, key: usize) {
        let Some(conn) = self.conns.get_mut(key).filter(|c| c.is_live()) else {
            return;
        };
        let token = Target::WzConn(key).token();
        match conn
            .stream
            .flush(registry, token, &mut self.stats.bytes_out, &mut self.budget)
        {
            Ok(Flushed::Open) => {}
            Ok(Flushed::Drained) => self.close(now, key),
            Err(_) => {
                self.stats.io_errors += 1;
                self.close(now, key);
            }
        }
    }

    /// Closes a connection now: the core forgets it, and the slab entry goes after the event
    /// batch (reading away unread input first: closing with unread bytes would send RST and
    /// could destroy the reply the peer has not read yet).
    fn close(&mut self, now: Instant, key: usize) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        if !conn.stream.mark_closed(&mut self.budget) {
            return;
        }
        conn.inbuf.clear(&mut self.budget);
        self.closing.push(key);
        self.core.handle_closed(now, ConnId(key));
    }
}

impl FrontEnd for WzDriver {
    /// Handles one readiness event for a Warzone target.
    fn ready(&mut self, registry: &Registry, target: Target, event: &Event) {
        let now = Instant::now();
        match target {
            Target::WzListener => self.accept(registry, now),
            Target::WzConn(key) => {
                if event.is_writable() {
                    self.flush(registry, now, key);
                }
                if event.is_readable() || event.is_read_closed() || event.is_error() {
                    self.read(registry, now, key);
                }
            }
            Target::WzProbe(key) => {
                if let Some((probe, result)) = self.probes.ready(key, event) {
                    self.core.handle_probe_result(now, probe, result);
                }
            }
            _ => {}
        }
        self.dispatch(registry, now);
    }

    /// After each event batch: deadlines, probe timeouts, finished password checks, then
    /// the outputs they cause, then removal of what closed.
    fn after_events(&mut self, registry: &Registry) {
        let now = Instant::now();
        let core = &mut self.core;
        self.probes.expire(now, |probe, result| {
            core.handle_probe_result(now, probe, result)
        });
        if let Some(logins) = self.logins.as_mut() {
            while let Some((job, result)) = logins.next_result(now) {
                self.core.handle_verify_result(now, JobId(job), result);
            }
        }
        self.core.handle_timeout_within(now, TIMERS_PER_PASS);
        if let Some(directory) = self.directory.as_mut() {
            directory.sync(&mut self.core, now);
        }
        self.dispatch(registry, now);
        while let Some((key, serial)) = self.lingering.expired(now) {
            let still_there = self
                .conns
                .get(key)
                .is_some_and(|c| c.stream.serial() == serial && c.is_live());
            if still_there {
                self.stats.linger_timeouts += 1;
                self.close(now, key);
            }
        }
        self.probes.remove_finished(registry);
        self.closing
            .release_slice(&mut self.conns, registry, |c| &c.stream, |c| c.stream);
        let resumed = self.gate.try_resume(self.conns.len(), now);
        if (self.backlog.take_pending() && !self.gate.is_paused()) || resumed {
            self.accept(registry, now);
            self.dispatch(registry, now);
        }
    }

    fn tidy(&mut self, now: Instant) {
        self.core.tidy(now, FORGET_PER_TIDY);
    }

    /// When the loop must wake for a Warzone deadline.
    fn next_deadline(&self) -> Option<Instant> {
        [
            self.core.poll_timeout(),
            self.probes.next_deadline(),
            self.lingering.next_deadline(),
            self.gate.deadline(),
            work_left(self.backlog.is_pending() || !self.closing.is_empty()),
            self.directory
                .as_ref()
                .and_then(|d| d.next_deadline(self.core.list_generation())),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// SIGHUP: reread the MOTD and banned-words files; on error keep the old values.
    fn reload(&mut self) {
        if let Some(path) = self.files.motd.clone() {
            match with_path(&path, read_motd(&path)) {
                Ok(motd) => {
                    log::info!("SIGHUP: MOTD reloaded from {}", path.display());
                    self.core.set_motd(motd);
                }
                Err(e) => {
                    self.stats.reload_failures += 1;
                    log::warn!("SIGHUP: MOTD kept: {e}");
                }
            }
        }
        if let Some(path) = self.files.banned_words.clone() {
            match with_path(&path, read_banned_words(&path)) {
                Ok(words) => {
                    log::info!(
                        "SIGHUP: {} banned words reloaded from {}",
                        words.len(),
                        path.display()
                    );
                    self.core.set_banned_words(words);
                }
                Err(e) => {
                    self.stats.reload_failures += 1;
                    log::warn!("SIGHUP: banned words kept: {e}");
                }
            }
        }
    }

    fn load(&self, sample: &mut LoadSample) {
        let stats = &self.core.stats;
        sample.requests[2] += stats.commands.iter().chain(&stats.v4_requests).sum::<u64>();
        sample.connections += self.conns.len() as u64;
        // One step per game, bounded by --wz-max-games.
        sample.games += self.core.games().count() as u64;
    }

    fn snapshot(&self, snap: &mut Snapshot) {
        snap.add_counters(|f| self.core.stats.visit(f));
        snap.add_counters(|f| self.stats.visit(f));
        if let Some(logins) = self.logins.as_ref() {
            snap.add_counters(|f| logins.visit(f));
        }
        snap.wz = Some(self.games_snapshot());
        if let Some(directory) = self.directory.as_ref() {
            let remote = self.core.remote_games();
            snap.add_counters(|f| directory.visit(remote, f));
            directory.add_nodes(Instant::now(), snap);
        }
    }

    fn shutdown(&mut self, _registry: &Registry) {
        // The master-server protocols have no goodbye: stop accepting, flush what is queued.
        self.pause_accepting();
    }

    fn flush_shutdown(&mut self, registry: &Registry) -> bool {
        let now = Instant::now();
        let waiting: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| c.is_live() && c.stream.pending() > 0)
            .map(|(key, _)| key)
            .collect();
        for &key in &waiting {
            self.flush(registry, now, key);
        }
        self.conns
            .iter()
            .any(|(_, c)| c.is_live() && c.stream.pending() > 0)
    }

    fn close_all(&mut self, registry: &Registry) {
        for conn in self.conns.drain() {
            conn.stream.release(registry);
        }
    }
}
