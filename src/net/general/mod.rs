//! The general lobby's sockets: the `--lobby-port` listener and its TCP connections, around
//! the sans-IO [`GeneralLobby`] core (docs/protocols/general-lobby.md, "Transport").
//!
//! It plugs into the loop through the [`FrontEnd`] seam (`net::server`), runs on the shared
//! stream transport ([`crate::net::io::stream`]) and checks passwords through the login bridge
//! ([`crate::net::login`]). No protocol logic here: bytes read are cut into frames by
//! the shared reader ([`crate::net::io::frames`], over `wire::general::next_frame`'s length
//! rule: zero-copy when a read holds whole frames; only a frame split across reads, or what
//! is left of a read past the frame budget, is kept), each frame goes to the core, and
//! the core's outputs are carried out by the [`Outbound`] side (`general/outbound.rs`, which
//! owns the core and the connections; this file is the way in): its frames are copied from the
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

use std::io::{self, Read};
use std::net::SocketAddr;
use std::time::Instant;

use mio::event::Event;
use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Registry};

use crate::accounts::tokens::os_tokens;
use crate::accounts::LoginPolicy;
use crate::config::GeneralSettings;
use crate::general::{GeneralConfig, GeneralLobby, JobId};
use crate::metrics::{GeneralGameInfo, GeneralMemberInfo, GeneralSnapshot, LoadSample, Snapshot};
use crate::wire::general::{next_frame, Frame, Next, HEADER_LEN, MEMBER_AWAY};

use crate::net::io::admission::{PerIpAdmission, Refused};
use crate::net::io::buffers::MemoryBudget;
use crate::net::io::frames::{Cut, FrameReader, LengthRule};
use crate::net::io::pass::{work_left, AcceptBacklog, Accepted, TIMERS_PER_PASS};
use crate::net::io::stream::{tune_listener, AcceptGate, Phase, Stream};
use crate::net::login::{LoginMetrics, LoginShared, Logins};
use crate::net::server::FrontEnd;
use crate::net::token::Target;

use outbound::{conn_id, key_of, Conn, Outbound};
pub use outbound::{LINGER, SEND_QUEUE_CAP};

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

/// The general lobby's length rule: an 8-byte header (code, payload length, both u32 LE),
/// payloads of at most `--lobby-max-frame` bytes (as `wire::general::next_frame` decides); a
/// longer one is refused with its code, which the core's ERROR 11 names.
#[derive(Debug, Clone, Copy)]
struct ClientFrames {
    max_payload: usize,
}

impl LengthRule for ClientFrames {
    const HEADER_LEN: usize = HEADER_LEN;
    type TooLong = u32;

    fn frame_len(&self, header: &[u8]) -> Result<usize, u32> {
        match next_frame(header, self.max_payload) {
            Next::Oversized { code, .. } => Err(code),
            // Not over `max_payload`, a `usize`.
            _ => Ok(HEADER_LEN + Frame::new_unchecked(header).declared_len() as usize),
        }
    }
}

/// The general lobby's way in: the listener, admission at accept, and the reader that cuts
/// each connection's bytes into frames for the core; what follows a frame (the core, the
/// connections, their send queues and closing) is the [`Outbound`] side.
pub struct GeneralDriver {
    listener: TcpListener,
    /// `--lobby-conn-rate` and `--lobby-max-conns-per-ip`.
    admission: PerIpAdmission,
    gate: AcceptGate,
    /// How long a frame may be (`--lobby-max-frame`).
    frames: ClientFrames,
    /// Connections with whole frames left over after their budget, served after the batch.
    backlog: Vec<usize>,
    /// Accepts left in this pass, and whether the listener was left with a backlog.
    accepts: AcceptBacklog,
    next_serial: u32,
    read_buf: Box<[u8; READ_CHUNK]>,
    /// The core, the connections and the way out of the core's outputs.
    out: Outbound,
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
        Ok(GeneralDriver {
            listener,
            admission: PerIpAdmission::new(settings.conn_rate, settings.max_conns_per_ip, 65_536),
            gate: AcceptGate::new(settings.max_conns),
            frames: ClientFrames {
                max_payload: config.max_frame,
            },
            backlog: Vec::new(),
            accepts: AcceptBacklog::default(),
            next_serial: 0,
            read_buf: Box::new([0; READ_CHUNK]),
            out: Outbound::new(
                GeneralLobby::new(config, now, os_tokens("general lobby")),
                logins,
                MemoryBudget::new(settings.memory_budget),
                now,
            ),
        })
    }

    /// Accepts until `WouldBlock`, `--lobby-max-conns` or this pass's budget (the rest after
    /// the next poll).
    fn accept(&mut self, registry: &Registry, now: Instant) {
        self.accepts.begin();
        loop {
            // Closed connections leave the slab after the batch; they no longer count.
            let open = self.out.conns.len() - self.out.closing.len();
            let full = self.gate.is_full(open);
            if full && self.out.core.oldest_guest().is_none() {
                // Every connection is a signed-in member: newcomers wait in the backlog.
                self.pause_accepting();
                return;
            }
            let (stream, peer) = match self.accepts.accept(&self.listener) {
                Accepted::Conn(stream, peer) => (stream, peer),
                Accepted::Drained | Accepted::BudgetSpent => return,
                Accepted::Failed(e) => {
                    // Out of descriptors, say: retry after the next event batch rather than
                    // wait for a new connection (the listener is edge-triggered).
                    self.out
                        .warnings
                        .warn(now, format_args!("general lobby accept failed: {e}"));
                    if self.gate.back_off(now) {
                        self.out.stats.accept_pauses += 1;
                    }
                    return;
                }
            };
            self.admit(registry, now, stream, peer, full);
        }
    }

    fn admit(
        &mut self,
        registry: &Registry,
        now: Instant,
        mut stream: TcpStream,
        peer: SocketAddr,
        full: bool,
    ) {
        // Dropping the stream closes it at once, without a word.
        let ip = match self.admission.check(now, peer) {
            Ok(ip) => ip,
            Err(Refused::ConnRate) => {
                self.out.stats.rate_limited += 1;
                log::debug!("general lobby: {peer} over --lobby-conn-rate, closed");
                return;
            }
            Err(Refused::PerIp) => {
                self.out.stats.per_ip_limited += 1;
                log::debug!("general lobby: {peer} over --lobby-max-conns-per-ip, closed");
                return;
            }
        };
        if full {
            // An admitted newcomer needs the room: the oldest connection not signed in makes it.
            self.evict_a_guest(now);
        }
        let entry = self.out.conns.vacant_entry();
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
            input: FrameReader::default(),
            backlogged: false,
            in_dirty: false,
            in_gathering: false,
        });
        self.admission.opened(ip);
        self.out.stats.accepted += 1;
        self.out
            .core
            .handle_open_from(now, conn_id(key, self.next_serial), ip);
        self.out.carry_out(registry, now);
    }

    /// At the connection cap, makes room for an accepted newcomer by closing the oldest
    /// connection that has not signed in (a crowd that connects and never signs in
    /// must not hold the lobby full).
    fn evict_a_guest(&mut self, now: Instant) {
        let Some(conn) = self.out.core.oldest_guest() else {
            return;
        };
        self.out.stats.guests_evicted += 1;
        log::debug!("general lobby: at --lobby-max-conns, closing {conn:?} (not signed in)");
        let (key, serial) = key_of(conn);
        let ours = self.out.conns.get(key);
        if ours.is_some_and(|c| c.stream.is_open() && c.stream.serial() == serial) {
            self.out.close(now, key);
        } else {
            // Not an open connection of ours: the core forgets it all the same.
            self.out.core.handle_closed(now, conn);
        }
    }

    fn pause_accepting(&mut self) {
        if self.gate.pause() {
            self.out.stats.accept_pauses += 1;
        }
    }

    /// Reads what `key` sent and hands its frames to the core, within the budgets.
    fn read(&mut self, registry: &Registry, now: Instant, key: usize) {
        let mut budget = FRAMES_PER_EVENT;
        self.out.served.push(key);
        // Frames left over from the last event come first.
        if !self.serve(registry, now, key, 0, &mut budget) {
            return;
        }
        for _ in 0..READ_BUDGET {
            if budget == 0 {
                // Over this event's frame budget: leave the rest in the socket until the
                // backlog is served; TCP flow control then slows the flooder, nobody else.
                self.park(key);
                return;
            }
            let Some(conn) = self.out.conns.get_mut(key).filter(|c| c.stream.is_open()) else {
                return;
            };
            let n = match conn.stream.socket.read(&mut self.read_buf[..]) {
                Ok(0) => {
                    self.out.peer_finished(registry, now, key);
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    log::debug!("general lobby: read {key}: {e}");
                    self.out.stats.io_errors += 1;
                    self.out.close(now, key);
                    return;
                }
            };
            self.out.stats.bytes_in += n as u64;
            if !self.serve(registry, now, key, n, &mut budget) {
                return;
            }
            let kept = |c: &Conn| c.input.kept_len(&self.frames);
            if self
                .out
                .conns
                .get(key)
                .is_some_and(|c| kept(c) >= LONG_FRAME)
            {
                break;
            }
        }
        // Read budget spent with data possibly left: come back without waiting for an edge.
        if let Some(conn) = self.out.conns.get_mut(key).filter(|c| c.stream.is_open()) {
            let _ = conn
                .stream
                .rearm(registry, Target::GeneralConn(key).token());
        }
    }

    /// Hands `key`'s frames to the core, within `budget`: first those kept from earlier
    /// reads, then those of `read_buf[..n]` (in place when whole there; a frame split across
    /// reads is kept in the connection's
    /// [`PartialFrame`](crate::net::io::buffers::PartialFrame), and so is what is left when the
    /// budget runs out). False when the connection stopped reading (closed, or the frame
    /// budget ran out with bytes left).
    fn serve(
        &mut self,
        registry: &Registry,
        now: Instant,
        key: usize,
        n: usize,
        budget: &mut usize,
    ) -> bool {
        let id = self.out.id(key);
        let mut at = 0;
        loop {
            let Some(conn) = self.out.conns.get_mut(key).filter(|c| c.stream.is_open()) else {
                return false;
            };
            let data = &self.read_buf[..n];
            if *budget == 0 {
                if at == n && conn.input.kept_len(&self.frames) == 0 {
                    // Nothing is left: the caller's own budget check parks the connection.
                    return true;
                }
                // The rest waits for the backlog pass, after the other connections.
                if !conn
                    .input
                    .keep(&self.frames, data, &mut at, &mut self.out.budget)
                {
                    if self.out.shed(now, key) == key {
                        return false;
                    }
                    continue;
                }
                self.park(key);
                return false;
            }
            match conn
                .input
                .next(&self.frames, data, &mut at, &mut self.out.budget)
            {
                Cut::NeedMore => {
                    conn.backlogged = false;
                    return true;
                }
                Cut::NoRoom => {
                    // `--lobby-memory-budget` has no room for the bytes to keep: the
                    // connections holding the most go until it has (or `key` itself goes).
                    if self.out.shed(now, key) == key {
                        return false;
                    }
                }
                Cut::TooLong(code) => {
                    conn.input.clear(&mut self.out.budget);
                    self.out.core.handle_oversized(now, id, code);
                    self.out.carry_out(registry, now);
                    return false;
                }
                Cut::Frame(frame) => {
                    *budget -= 1;
                    self.out.stats.frames_in += 1;
                    self.out
                        .core
                        .handle_frame(now, id, &Frame::new_unchecked(frame));
                    // A frame kept across reads is not held once served.
                    conn.input.release(&self.frames, &mut self.out.budget);
                    self.out.carry_out(registry, now);
                }
            }
        }
    }

    /// Marks `key` as having whole frames left for after this batch.
    fn park(&mut self, key: usize) {
        if let Some(conn) = self.out.conns.get_mut(key) {
            if !conn.backlogged {
                conn.backlogged = true;
                self.backlog.push(key);
            }
        }
    }

    /// Serves connections whose frames waited past their budget, one budget each.
    fn serve_backlog(&mut self, registry: &Registry, now: Instant) {
        let backlog = std::mem::take(&mut self.backlog);
        for key in backlog {
            if let Some(conn) = self.out.conns.get_mut(key) {
                conn.backlogged = false;
            }
            // A fresh read also picks up what the socket holds beyond the buffer.
            self.read(registry, now, key);
        }
    }

    /// Games and gauges for the operators' pages, and the first `named` members by name.
    fn games_snapshot(&self, named: usize) -> GeneralSnapshot {
        GeneralSnapshot {
            members: self.out.core.member_count(),
            member_list: self
                .out
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
            members_away: self.out.core.member_count() - self.out.core.present_count(),
            connections: self.out.conns.len(),
            buffered_bytes: self.out.budget.held(),
            buffered_peak: self.out.budget.peak(),
            games: self
                .out
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
            Target::GeneralListener => self.accept(registry, now),
            Target::GeneralConn(key) => {
                if event.is_writable() {
                    self.out.flush(registry, now, key);
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
        while let Some((job, result)) = self.out.logins.as_mut().and_then(|l| l.next_result(now)) {
            self.out.core.handle_verify_result(now, JobId(job), result);
            self.out.carry_out(registry, now);
        }
        self.out.core.handle_timeout_within(now, TIMERS_PER_PASS);
        self.out.carry_out(registry, now);
        self.serve_backlog(registry, now);
        self.out.settle(registry, now);
        while let Some((key, serial)) = self.out.lingering.expired(now) {
            let still_there = self.out.conns.get(key).is_some_and(|c| {
                c.stream.serial() == serial && c.stream.phase() == Phase::Draining
            });
            if still_there {
                self.out.stats.linger_timeouts += 1;
                self.out.close(now, key);
            }
        }
        // Every output is carried out before a slab key is freed for reuse.
        self.out.carry_out(registry, now);
        let admission = &mut self.admission;
        let take = |conn: Conn| {
            admission.closed(conn.ip);
            conn.stream
        };
        self.out
            .closing
            .release_slice(&mut self.out.conns, registry, |c| &c.stream, take);
        let resumed = self.gate.try_resume(self.out.conns.len(), now);
        if (self.accepts.take_pending() && !self.gate.is_paused()) || resumed {
            self.accept(registry, now);
            self.out.settle(registry, now);
        }
    }

    fn tidy(&mut self, now: Instant) {
        self.admission.tidy(now);
        // `after_events` drained the core's outputs just before.
        self.out.core.tidy();
    }

    fn next_deadline(&self) -> Option<Instant> {
        // Frames waiting past their budget, writes past this batch's slice, a listener
        // backlog and closed sockets past this pass's slice are served after the next
        // (immediate) poll; gathered fan-out when the first of it is due.
        let backlog = work_left(
            !self.backlog.is_empty()
                || !self.out.dirty.is_empty()
                || self.accepts.is_pending()
                || !self.out.closing.is_empty(),
        );
        [
            self.out.gathering.front().map(|&(due, _)| due),
            self.out.core.poll_timeout(),
            self.out.lingering.next_deadline(),
            self.gate.deadline(),
            backlog,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn load(&self, sample: &mut LoadSample) {
        sample.requests[3] += self.out.stats.frames_in;
        sample.connections += self.out.conns.len() as u64;
        sample.members += self.out.core.member_count() as u64;
        sample.games += self.out.core.game_count() as u64;
    }

    fn snapshot(&self, snap: &mut Snapshot) {
        let core = self.out.core.stats();
        snap.add_counters(|f| core.visit(f));
        snap.add_counters(|f| self.out.stats.visit(f));
        if let Some(logins) = self.out.logins.as_ref() {
            snap.add_counters(|f| logins.visit(f));
        }
        snap.general = Some(self.games_snapshot(snap.detail_rows));
    }

    fn shutdown(&mut self, registry: &Registry) {
        let now = Instant::now();
        self.pause_accepting();
        // ERROR(0, 0, "server shutting down") to every connection, then close after flush.
        self.out.core.handle_shutdown(now);
        self.out.carry_out(registry, now);
        self.out.settle(registry, now);
    }

    fn flush_shutdown(&mut self, registry: &Registry) -> bool {
        let now = Instant::now();
        let waiting: Vec<usize> = self
            .out
            .conns
            .iter()
            .filter(|(_, c)| c.stream.phase() != Phase::Closed && c.stream.pending() > 0)
            .map(|(key, _)| key)
            .collect();
        for &key in &waiting {
            self.out.flush(registry, now, key);
        }
        self.out
            .conns
            .iter()
            .any(|(_, c)| c.stream.phase() != Phase::Closed && c.stream.pending() > 0)
    }

    fn close_all(&mut self, registry: &Registry) {
        for conn in self.out.conns.drain() {
            conn.stream.release(registry);
        }
    }
}
