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
//! it consumed), or panic on anything a peer sends. A connection's first bytes pick its
//! kind (`wire::wz::v4::detect`): `version\0` + u32 4 is v4 ([`super::v4`]), anything else
//! legacy ([`super::legacy`]); both share [`Shared`] and the game table
//! ([`super::games`]). Password checks leave the core as [`WzOutput::Verify`] and come back
//! through [`WzLobby::handle_verify_result`], so the driver can run them off the loop.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use crate::ratelimit::{PerIpConfig, PerIpLimiter};
use crate::time::{TimerKey, TimerWheel};
use crate::wire::wz::push_status;
use crate::wire::wz::v4::{detect, Detect, HANDSHAKE_LEN};

use super::accounts::{Sessions, UserId, MAX_SESSIONS, SESSION_TTL};
use super::games::{GameTable, GameView};
use super::legacy::LegacyConn;
use super::policy::NamePolicy;
use super::stats::{ProtocolError, WzStats};
use super::v4::V4Conn;

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

/// Grace past the driver's probe timeout before the core decides itself.
pub(crate) const PROBE_GRACE: Duration = Duration::from_millis(100);

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
    /// Who must log in on the v4 protocol (`--wz-login`).
    pub login: LoginPolicy,
    /// How long a v4 login session lives.
    pub session_ttl: Duration,
    /// Most v4 login sessions held; the oldest is evicted beyond it.
    pub max_sessions: usize,
}

/// Who must log in on the v4 protocol (docs/protocols/wz-v4.md "Login policy").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginPolicy {
    /// Every call but `login` is refused with -405 until the connection logged in.
    Required,
    /// `login` works; other calls do not need it (`addPlayer` still checks sessions).
    Optional,
    /// `login` is an unknown method; `addPlayer` checks no session.
    Off,
}

/// The driver's verdict on a [`WzOutput::Verify`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyResult {
    /// The user exists and the password matches.
    Valid(UserId),
    /// No such user, or a wrong password (the two are not told apart).
    Invalid,
    /// The verification queue is full (or no database is available); try again later.
    Busy,
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
            login: LoginPolicy::Optional,
            session_ttl: SESSION_TTL,
            max_sessions: MAX_SESSIONS,
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
    /// Check `password` against `username`'s stored hash (off the loop thread: it takes
    /// milliseconds) and report with [`WzLobby::handle_verify_result`]. Later bytes of the
    /// connection wait until then; a [`WzOutput::Resume`] follows the verdict.
    Verify {
        /// The connection that sent the `login`.
        conn: ConnId,
        /// The job's id, given back with the verdict.
        job: u64,
        /// The account name (valid per `accounts::valid_name`).
        username: String,
        /// The password, at most 255 bytes.
        password: String,
    },
    /// The connection's pending request was answered: feed its buffered bytes again with
    /// [`WzLobby::handle_bytes`] (and resume reading it).
    Resume {
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
    /// Password verifications in flight and the connection waiting for each.
    pub(crate) verifications: HashMap<u64, ConnId>,
    next_job: u64,
    /// v4 login sessions.
    pub(crate) sessions: Sessions,
    /// The account name of each user who logged in (for `addPlayer`'s `username`); one
    /// entry per account, so bounded by the database.
    pub(crate) user_names: HashMap<UserId, String>,
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

    /// Ask the driver to feed `conn`'s buffered bytes again.
    pub(crate) fn resume(&mut self, conn: ConnId) {
        self.outputs.push_back(WzOutput::Resume { conn });
    }

    /// Emit a password verification for `conn` and return its job id.
    pub(crate) fn start_verify(&mut self, conn: ConnId, username: String, password: String) -> u64 {
        let job = self.next_job;
        self.next_job = self.next_job.wrapping_add(1);
        self.verifications.insert(job, conn);
        self.outputs.push_back(WzOutput::Verify {
            conn,
            job,
            username,
            password,
        });
        job
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

/// A connection's protocol state.
#[derive(Debug)]
enum Conn {
    /// The legacy protocol; `decided` once the first bytes ruled out a v4 handshake (until
    /// then the legacy state only holds the idle deadline).
    Legacy { legacy: LegacyConn, decided: bool },
    /// The v4 protocol, after its handshake.
    V4(V4Conn),
}

impl Conn {
    fn ip(&self) -> IpAddr {
        match self {
            Conn::Legacy { legacy, .. } => legacy.ip(),
            Conn::V4(v4) => v4.ip(),
        }
    }
}

/// The Warzone 2100 master server: the game table plus per-connection protocol state.
#[derive(Debug)]
pub struct WzLobby {
    /// Counters, for metrics.
    pub stats: WzStats,
    shared: Shared,
    conns: HashMap<ConnId, Conn>,
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
                verifications: HashMap::new(),
                next_job: 1,
                sessions: Sessions::new(config.session_ttl, config.max_sessions),
                user_names: HashMap::new(),
                config,
            },
            conns: HashMap::new(),
            conns_per_ip: HashMap::new(),
        }
    }

    /// Replace the MOTD (SIGHUP reload); games and connections are untouched.
    pub fn set_motd(&mut self, motd: String) {
        self.shared.config.motd = motd;
    }

    /// Replace the banned words (SIGHUP reload); applies to registrations and updates from
    /// now on, listed games stay.
    pub fn set_banned_words(&mut self, words: Vec<String>) {
        self.shared.policy = NamePolicy::new(&words);
        self.shared.config.banned_words = words;
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
        let decided = false;
        self.conns.insert(conn, Conn::Legacy { legacy, decided });
    }

    /// Feed the connection's read buffer; returns how many bytes were consumed (the driver
    /// drops them, carries out the outputs, and calls again while the count is non-zero:
    /// a v4 connection answers a few requests per call). What is finally left is shorter
    /// than one GAMESTRUCT (legacy) or one `MAX_FRAME` frame (v4), except behind a v4
    /// request that waits for a verdict (see [`WzOutput::Resume`]). Bytes of an unknown or
    /// closing connection are all consumed.
    pub fn handle_bytes(&mut self, now: Instant, conn: ConnId, buf: &[u8]) -> usize {
        let (sh, st) = (&mut self.shared, &mut self.stats);
        let Some(state) = self.conns.get_mut(&conn) else {
            return buf.len();
        };
        match state {
            Conn::V4(v4) => v4.on_bytes(sh, st, now, buf),
            Conn::Legacy {
                legacy,
                decided: true,
            } => legacy.on_bytes(sh, st, now, buf),
            Conn::Legacy { legacy, decided } => match detect(buf) {
                Detect::NeedMore => 0,
                Detect::Legacy => {
                    *decided = true;
                    legacy.on_bytes(sh, st, now, buf)
                }
                Detect::WrongVersion(_) => {
                    legacy.close_for(sh, st, ProtocolError::WrongVersion);
                    buf.len()
                }
                Detect::V4 => {
                    let (ip, over_limit) = (legacy.ip(), legacy.over_limit());
                    legacy.abandon(sh);
                    st.v4_connections += 1;
                    let mut v4 = V4Conn::open(conn, ip, over_limit, sh, now);
                    let rest = buf.get(HANDSHAKE_LEN..).unwrap_or(&[]);
                    let used = HANDSHAKE_LEN + v4.on_bytes(sh, st, now, rest);
                    *state = Conn::V4(v4);
                    used.min(buf.len())
                }
            },
        }
    }

    /// The connection closed (FIN, RST, or after a [`WzOutput::Close`]): its game, if any,
    /// leaves the list at once.
    pub fn handle_closed(&mut self, _now: Instant, conn: ConnId) {
        let Some(mut state) = self.conns.remove(&conn) else {
            return;
        };
        let (sh, st) = (&mut self.shared, &mut self.stats);
        match &mut state {
            Conn::Legacy { legacy, .. } => legacy.on_closed(sh, st),
            Conn::V4(v4) => v4.on_closed(sh, st),
        }
        let ip = state.ip();
        if let Some(count) = self.conns_per_ip.get_mut(&ip) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.conns_per_ip.remove(&ip);
            }
        }
    }

    /// The driver finished a probe.
    pub fn handle_probe_result(&mut self, now: Instant, probe: ProbeId, result: ProbeResult) {
        let state = self
            .shared
            .probes
            .remove(&probe)
            .and_then(|conn| self.conns.get_mut(&conn));
        let (sh, st) = (&mut self.shared, &mut self.stats);
        match state {
            Some(Conn::Legacy { legacy, .. }) => legacy.on_probe_result(sh, st, now, probe, result),
            Some(Conn::V4(v4)) => v4.on_probe_result(sh, st, now, probe, result),
            _ => st.stale_probe_results += 1,
        }
    }

    /// The driver's verdict on a [`WzOutput::Verify`].
    pub fn handle_verify_result(&mut self, now: Instant, job: u64, result: VerifyResult) {
        let state = self
            .shared
            .verifications
            .remove(&job)
            .and_then(|conn| self.conns.get_mut(&conn));
        if let Some(Conn::V4(v4)) = state {
            v4.on_verified(&mut self.shared, &mut self.stats, now, job, result);
        }
    }

    /// Run every deadline due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(conn) = self.shared.timers.poll_expired(now) {
            let (sh, st) = (&mut self.shared, &mut self.stats);
            match self.conns.get_mut(&conn) {
                Some(Conn::Legacy { legacy, .. }) => legacy.on_timer(sh, st, now),
                Some(Conn::V4(v4)) => v4.on_timer(sh, st, now),
                None => {}
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

    /// Number of live v4 login sessions (expired ones count until looked up).
    pub fn sessions(&self) -> usize {
        self.shared.sessions.len()
    }
}
