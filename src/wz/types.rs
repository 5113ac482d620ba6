//! The Warzone core's vocabulary: the ids the driver and the core exchange, the settings,
//! the probe verdicts and the outputs ([`WzOutput`]), plus the timing constants both
//! protocols obey (docs/protocols/wz-lobby.md "Behaviour", docs/protocols/wz-v4.md).
//!
//! A leaf of `wz`: every other file of the folder may import it, and it imports nothing of
//! the folder (only the account vocabulary in [`crate::accounts`]). It holds no state and
//! no behaviour beyond defaults.

use std::net::SocketAddr;
use std::time::Duration;

use crate::accounts::sessions::{MAX_SESSIONS, SESSION_TTL};
use crate::accounts::LoginPolicy;

/// The driver's handle for one TCP connection on the Warzone listener (its slab key). The
/// driver tells the core when one closes before it reuses the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub usize);

/// Identifies one reachability probe from [`WzOutput::Probe`] to
/// [`super::WzLobby::handle_probe_result`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProbeId(pub u64);

/// Identifies one password verification from [`WzOutput::Verify`] to
/// [`super::WzLobby::handle_verify_result`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub u64);

/// The port a game listens on when it announces none (GAMESTRUCT v3, or v4 `hostPort` 0).
pub const DEFAULT_GAME_PORT: u16 = 2100;

/// The latest the core answers `addg` after receiving it when it probes: 2.3.x/3.x hosts
/// read that status with a 2.5 s timeout, so the reply must leave time for the network.
pub const ADDG_REPLY_BUDGET: Duration = Duration::from_millis(2300);

/// Grace past the driver's probe timeout before the core decides itself.
pub(crate) const PROBE_GRACE: Duration = Duration::from_millis(100);

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
    /// A connection is closed this long after opening unless it has settled by then: a legacy
    /// connection by registering a game (its `list` or `motd` closes it anyway), a v4 one by
    /// a request answered with success (`--handshake-timeout`). Until then it is also the
    /// first to go at `--wz-max-conns` ([`super::WzLobby::oldest_unsettled`]).
    pub handshake_timeout: Duration,
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

impl Default for WzConfig {
    fn default() -> WzConfig {
        WzConfig {
            motd: "Welcome to Warzone 2100! Your game is now listed in the lobby.".to_owned(),
            check_reachable: true,
            probe_timeout: Duration::from_secs(2),
            silence_timeout: Duration::from_secs(90),
            handshake_timeout: Duration::from_secs(5),
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
    /// [`super::WzLobby::handle_closed`] (which is harmless if the core already forgot it).
    Close {
        /// The connection.
        conn: ConnId,
    },
    /// Check `password` against `username`'s stored hash (off the loop thread: it takes
    /// milliseconds) and report with [`super::WzLobby::handle_verify_result`]. Later bytes
    /// of the connection wait until then; a [`WzOutput::Resume`] follows the verdict.
    Verify {
        /// The connection that sent the `login`.
        conn: ConnId,
        /// The job's id, given back with the verdict.
        job: JobId,
        /// The account name (valid per [`crate::accounts::valid_name`]).
        username: String,
        /// The password, at most 255 bytes.
        password: String,
    },
    /// The connection's pending request was answered: feed its buffered bytes again with
    /// [`super::WzLobby::handle_bytes`] (and resume reading it).
    Resume {
        /// The connection.
        conn: ConnId,
    },
    /// Open a non-blocking TCP connection to `addr` with `probe_timeout`; if `send_wzlr`,
    /// send [`crate::wire::wz::PROBE_REQUEST`] once connected and read the answer with
    /// [`crate::wire::wz::parse_probe_reply`]. Report with
    /// [`super::WzLobby::handle_probe_result`].
    Probe {
        /// The probe's id.
        probe: ProbeId,
        /// The game port to connect to.
        addr: SocketAddr,
        /// Whether to send the 8-zero-byte probe request (GAMESTRUCT v4 hosts).
        send_wzlr: bool,
    },
}
