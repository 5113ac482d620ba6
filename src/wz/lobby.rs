//! The sans-IO Warzone 2100 master server core: [`WzLobby`].
//!
//! Implements docs/protocols/wz-lobby.md "Behaviour" (HOUSE-STYLE section 2): the driver
//! feeds it connection events, read buffers, probe results and the current time through
//! `handle_*`, and drains [`WzOutput`]s ("send these bytes", "close after flushing", "probe
//! this game port") with [`WzLobby::poll_output`] and its next deadline with
//! [`WzLobby::poll_timeout`].
//!
//! What it must not do: own a socket, read a clock, keep a peer's bytes beyond one
//! GAMESTRUCT per game (the read buffers are the driver's; this core only says how many bytes
//! it consumed), or panic on anything a peer sends. The legacy connection state machine is
//! in [`super::legacy`], the game table in [`super::games`]; a v4 protocol adds its own
//! connection kind next to the legacy one and shares [`Shared`].

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use crate::ratelimit::{PerIpConfig, PerIpLimiter};
use crate::time::{TimerKey, TimerWheel};
use crate::wire::wz::push_status;

use super::games::{GameTable, GameView};
use super::legacy::LegacyConn;
use super::policy::NamePolicy;
use super::stats::WzStats;

/// The driver's handle for one TCP connection on the Warzone listener.
pub type ConnId = usize;

/// Identifies one reachability probe from [`WzOutput::Probe`] to
/// [`WzLobby::handle_probe_result`].
pub type ProbeId = u64;

/// The port a game listens on when it announces none (GAMESTRUCT v3, or v4 `hostPort` 0).
pub const DEFAULT_GAME_PORT: u16 = 2100;

/// The latest the core answers `addg` after receiving it when it probes: 2.3.x/3.x hosts
/// read that status with a 2.5 s timeout, so the reply must leave time for the network.
pub const ADDG_REPLY_BUDGET: Duration = Duration::from_millis(2300);

/// Timer granularity: deadlines fire at most this late.
const TIMER_TICK: Duration = Duration::from_millis(10);

/// Timer wheel slots (one revolution = 40.96 s; longer deadlines share slots).
const TIMER_SLOTS: usize = 4096;

/// Settings of the Warzone 2100 master server.
#[derive(Debug, Clone)]
pub struct WzConfig {
    /// The message of the day, sent in every status (`--motd TEXT` or the MOTD file).
    pub motd: String,
    /// Probe each game's port before listing it (`--wz-check-reachable on|off`).
    pub check_reachable: bool,
    /// The driver's connect timeout for a probe. Keep it below [`ADDG_REPLY_BUDGET`]: the
    /// core gives up on a probe at `probe_timeout + 100 ms`, and never later than the budget.
    pub probe_timeout: Duration,
    /// A registered host that sends nothing (no update, no `keep`) for this long is dropped.
    /// 4.x hosts send `keep` every 25 s; 3.x and 2.3.x hosts send nothing between changes,
    /// so a quiet 3.x game is delisted after this long: the trade-off between forgetting
    /// hosts whose connection died silently and keeping idle 3.x games listed.
    pub silence_timeout: Duration,
    /// A connection that has not registered a game (nor asked for the list) within this
    /// long after opening is closed.
    pub idle_timeout: Duration,
    /// Refuse hosts whose netcode `(game_version_major, game_version_minor)` is lower
    /// (`--wz-min-version`).
    pub min_version: Option<(u32, u32)>,
    /// Words refused in game names, matched case-insensitively on whole words
    /// (`--wz-banned-words FILE`, parsed by [`super::policy::parse_banned_words`]).
    pub banned_words: Vec<String>,
    /// Most games held (listed or being probed).
    pub max_games: usize,
    /// Most games held per host address.
    pub max_games_per_ip: usize,
    /// Most simultaneous connections per address that may register a game; the others are
    /// still served `gaId` and `list` but refused at `addg`.
    pub max_conns_per_ip: usize,
    /// Most games in one `list` reply.
    pub list_limit: usize,
    /// New registrations allowed per address per minute (sustained).
    pub registrations_per_minute: u64,
    /// New registrations an address may make back to back.
    pub registration_burst: u64,
    /// Most addresses the registration rate limiter tracks.
    pub rate_limit_table: usize,
}

impl Default for WzConfig {
    fn default() -> WzConfig {
        WzConfig {
            motd: "Welcome to Warzone 2100! Your game is now listed in the lobby.".to_owned(),
            check_reachable: true,
            probe_timeout: Duration::from_secs(2),
            silence_timeout: Duration::from_secs(90),
            idle_timeout: Duration::from_secs(10),
            min_version: None,
            banned_words: Vec::new(),
            max_games: 1000,
            max_games_per_ip: 4,
            max_conns_per_ip: 16,
            list_limit: 200,
            registrations_per_minute: 30,
            registration_burst: 20,
            rate_limit_table: 4096,
        }
    }
}

/// What the driver's probe of a game port found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeResult {
    /// The connection was refused (or failed otherwise).
    Refused,
    /// No connection within `probe_timeout`.
    TimedOut,
    /// Connected; no answer, or an answer that is not a version 1 `WZLR`.
    Connected,
    /// Connected and the host answered `WZLR` version 1 with this game id.
    Wzlr {
        /// The game id the host holds.
        game_id: u32,
    },
}

/// Something the driver must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WzOutput {
    /// Queue these bytes on the connection.
    Send {
        /// The connection.
        conn: ConnId,
        /// The bytes, in order after anything queued before.
        bytes: Vec<u8>,
    },
    /// Close the connection once everything queued on it is flushed. The driver then calls
    /// [`WzLobby::handle_closed`] (which is harmless if the core already forgot it).
    Close {
        /// The connection.
        conn: ConnId,
    },
    /// Open a non-blocking TCP connection to `addr` with `probe_timeout`; if `send_wzlr`,
    /// send [`crate::wire::wz::PROBE_REQUEST`] once connected and read the answer with
    /// [`crate::wire::wz::parse_probe_reply`]. Report with [`WzLobby::handle_probe_result`].
    Probe {
        /// The probe's id.
        probe: ProbeId,
        /// The game port to connect to.
        addr: SocketAddr,
        /// Whether to send the 8-zero-byte probe request (GAMESTRUCT v4 hosts).
        send_wzlr: bool,
    },
}

/// State shared by every connection kind: configuration, games, timers, outputs.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: WzConfig,
    pub(crate) policy: NamePolicy,
    pub(crate) table: GameTable,
    pub(crate) outputs: VecDeque<WzOutput>,
    /// One entry per connection with a deadline; the value is the connection, whose state
    /// says what the deadline means.
    pub(crate) timers: TimerWheel<ConnId>,
    pub(crate) limiter: PerIpLimiter,
    /// Probes in flight and the connection waiting for each.
    pub(crate) probes: HashMap<ProbeId, ConnId>,
    next_probe: ProbeId,
}

impl Shared {
    /// Replace the connection's timer with one at `deadline`.
    pub(crate) fn schedule(&mut self, timer: &mut Option<TimerKey>, conn: ConnId, at: Instant) {
        self.cancel(timer);
        *timer = Some(self.timers.insert(at, conn));
    }

    /// Cancel the connection's timer, if any.
    pub(crate) fn cancel(&mut self, timer: &mut Option<TimerKey>) {
        if let Some(key) = timer.take() {
            self.timers.cancel(key);
        }
    }

    pub(crate) fn send(&mut self, conn: ConnId, bytes: Vec<u8>) {
        self.outputs.push_back(WzOutput::Send { conn, bytes });
    }

    pub(crate) fn send_status(&mut self, conn: ConnId, code: u32, motd: &str) {
        let mut bytes = Vec::new();
        push_status(&mut bytes, code, motd.as_bytes());
        self.send(conn, bytes);
    }

    pub(crate) fn close(&mut self, conn: ConnId) {
        self.outputs.push_back(WzOutput::Close { conn });
    }

    /// Emit a probe for `conn` and return its id.
    pub(crate) fn start_probe(
        &mut self,
        conn: ConnId,
        addr: SocketAddr,
        send_wzlr: bool,
    ) -> ProbeId {
        let probe = self.next_probe;
        self.next_probe = self.next_probe.wrapping_add(1);
        self.probes.insert(probe, conn);
        self.outputs.push_back(WzOutput::Probe {
            probe,
            addr,
            send_wzlr,
        });
        probe
    }
}

/// The Warzone 2100 master server: the game table plus per-connection protocol state.
#[derive(Debug)]
pub struct WzLobby {
    /// Counters, for metrics.
    pub stats: WzStats,
    shared: Shared,
    conns: HashMap<ConnId, LegacyConn>,
    conns_per_ip: HashMap<IpAddr, usize>,
}

impl WzLobby {
    /// An empty lobby.
    pub fn new(config: WzConfig, now: Instant) -> WzLobby {
        let limiter = PerIpLimiter::new(PerIpConfig {
            rate: config.registrations_per_minute,
            per: Duration::from_secs(60),
            burst: config.registration_burst,
            byte_rate: 0,
            byte_burst: 0,
            max_entries: config.rate_limit_table,
        });
        WzLobby {
            stats: WzStats::default(),
            shared: Shared {
                policy: NamePolicy::new(&config.banned_words),
                table: GameTable::new(config.max_games, config.max_games_per_ip),
                outputs: VecDeque::new(),
                timers: TimerWheel::new(now, TIMER_TICK, TIMER_SLOTS),
                limiter,
                probes: HashMap::new(),
                next_probe: 1,
                config,
            },
            conns: HashMap::new(),
            conns_per_ip: HashMap::new(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &WzConfig {
        &self.shared.config
    }

    /// A connection was accepted from `peer`.
    pub fn handle_open(&mut self, now: Instant, conn: ConnId, peer: SocketAddr) {
        // A reused id without a close in between is a driver bug; forget the old one cleanly.
        self.handle_closed(now, conn);
        let ip = peer.ip().to_canonical();
        let count = self.conns_per_ip.entry(ip).or_insert(0);
        *count += 1;
        let over_limit = *count > self.shared.config.max_conns_per_ip;
        self.stats.connections_opened += 1;
        if over_limit {
            self.stats.connections_over_limit += 1;
        }
        let legacy = LegacyConn::open(conn, ip, over_limit, &mut self.shared, now);
        self.conns.insert(conn, legacy);
    }

    /// Feed the connection's read buffer; returns how many bytes were consumed (the driver
    /// drops them and keeps the rest for the next call). What is left is always shorter
    /// than one GAMESTRUCT. Bytes of an unknown or closing connection are all consumed.
    pub fn handle_bytes(&mut self, now: Instant, conn: ConnId, buf: &[u8]) -> usize {
        match self.conns.get_mut(&conn) {
            Some(legacy) => legacy.on_bytes(&mut self.shared, &mut self.stats, now, buf),
            None => buf.len(),
        }
    }

    /// The connection closed (FIN, RST, or after a [`WzOutput::Close`]): its game, if any,
    /// leaves the list at once.
    pub fn handle_closed(&mut self, _now: Instant, conn: ConnId) {
        let Some(mut legacy) = self.conns.remove(&conn) else {
            return;
        };
        legacy.on_closed(&mut self.shared, &mut self.stats);
        let ip = legacy.ip();
        if let Some(count) = self.conns_per_ip.get_mut(&ip) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.conns_per_ip.remove(&ip);
            }
        }
    }

    /// The driver finished a probe.
    pub fn handle_probe_result(&mut self, now: Instant, probe: ProbeId, result: ProbeResult) {
        let legacy = self
            .shared
            .probes
            .remove(&probe)
            .and_then(|conn| self.conns.get_mut(&conn));
        match legacy {
            Some(legacy) => {
                legacy.on_probe_result(&mut self.shared, &mut self.stats, now, probe, result)
            }
            None => self.stats.stale_probe_results += 1,
        }
    }

    /// Run every deadline due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(conn) = self.shared.timers.poll_expired(now) {
            if let Some(legacy) = self.conns.get_mut(&conn) {
                legacy.on_timer(&mut self.shared, &mut self.stats, now);
            }
        }
    }

    /// When [`WzLobby::handle_timeout`] must next be called, if ever.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.shared.timers.next_deadline()
    }

    /// The next thing the driver must do.
    pub fn poll_output(&mut self) -> Option<WzOutput> {
        self.shared.outputs.pop_front()
    }

    /// Every game held, listed or being probed, for operators.
    pub fn games(&self) -> impl Iterator<Item = GameView<'_>> {
        self.shared.table.iter()
    }

    /// Number of connections the core tracks.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Number of game ids reserved by `gaId` and not yet registered.
    pub fn reserved_ids(&self) -> usize {
        self.shared.table.reserved_len()
    }

    /// Number of probes in flight.
    pub fn probes_in_flight(&self) -> usize {
        self.shared.probes.len()
    }
}
