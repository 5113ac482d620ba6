//! The general lobby core's vocabulary: ids, settings, timers and outcomes
//! (docs/protocols/general-lobby.md, "Limits and flags" and "Decisions").
//!
//! This module must not hold state or logic beyond small conversions: the other core modules
//! and the driver all import it, so it imports nothing of theirs.

use std::fmt;
use std::time::Duration;

use crate::accounts::LoginPolicy;
use crate::wire::general::{ErrorCode, DEFAULT_MAX_FRAME};

/// A connection on the general lobby's listener, named by the driver (its slab key). The
/// driver reports a close with `handle_closed` before it reuses the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub usize);

/// A member's id: from 1 upwards, never reused while the process lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemberId(pub i32);

/// The owner id of a game the server hosts, and the sender id of its messages.
pub const SERVER_MEMBER: MemberId = MemberId(0);

/// A game's id: from 1 upwards, never reused while the process lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GameId(pub i32);

/// A join ask's id (JOIN_ASK, JOIN_ANSWER): from 1 upwards, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AskId(pub i32);

/// A password verification handed to the driver ([`super::GeneralOutput::Verify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub u64);

/// Where the core gets its 16-byte resume tokens: the driver injects the OS CSPRNG, tests a
/// deterministic sequence. The core draws again when a token is already live.
pub use crate::accounts::tokens::TokenSource;

/// A game type the server can host (`--lobby-hosted NAME=N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HostedKind {
    /// Two-player tic-tac-toe (`tictactoe`), see `super::tictactoe`.
    TicTacToe,
}

impl HostedKind {
    /// Every hosted type.
    pub const ALL: [HostedKind; 1] = [HostedKind::TicTacToe];

    /// The type's name: the GAME_INFO game type and the `--lobby-hosted` key.
    pub const fn name(self) -> &'static str {
        match self {
            HostedKind::TicTacToe => "tictactoe",
        }
    }

    /// The type named `name`, if the server hosts it.
    pub fn from_name(name: &str) -> Option<HostedKind> {
        HostedKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// Keep `count` joinable server-hosted games of `kind` open (`--lobby-hosted kind=count`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostedSpec {
    /// The game type.
    pub kind: HostedKind,
    /// How many joinable games of it to keep open.
    pub count: usize,
}

/// Settings of the general lobby. `Default` holds the documented defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct GeneralConfig {
    /// HELLO's server name.
    pub server_name: String,
    /// Largest declared payload (`--lobby-max-frame`); the driver cuts frames with it.
    pub max_frame: usize,
    /// Refused SIGN_INs before the connection is closed (`--lobby-sign-in-tries`).
    pub sign_in_tries: u32,
    /// Who must sign in with an account password (`--lobby-login`).
    pub login: LoginPolicy,
    /// Games a member may be in (or have asked to join) at once
    /// (`--lobby-max-games-per-member`).
    pub max_games_per_member: usize,
    /// How long an owner has to answer a JOIN_ASK (`--lobby-ask-timeout`).
    pub ask_timeout: Duration,
    /// Accept every join request that passes the checks, without asking the owner
    /// (`--lobby-auto-approve`).
    pub auto_approve: bool,
    /// Bytes of stored data per game, 32 bytes of bookkeeping per key included
    /// (`--lobby-game-data`).
    pub game_data: usize,
    /// Chat lines (CHAT and PRIVATE_CHAT) per second per member (`--lobby-chat-rate`).
    pub chat_rate: u64,
    /// Chat lines a member may send back to back.
    pub chat_burst: u64,
    /// Chat lines per second from all the members of one address (`--lobby-chat-ip-rate`,
    /// burst twice that); 0 turns the per-address rate off.
    pub chat_ip_rate: u64,
    /// The lobby-wide chat budget (`--lobby-chat-budget`): bytes of chat delivered per
    /// second, a line costing its frame's bytes times its recipients (one second's worth may
    /// go back to back); 0 turns it (and slow mode) off.
    pub chat_budget: u64,
    /// Games whose creators signed in from one address, open at once
    /// (`--lobby-max-games-per-ip`).
    pub max_games_per_ip: usize,
    /// Bytes of stored data in the games created from one address, together
    /// (`--lobby-game-data-per-ip`).
    pub game_data_per_ip: usize,
    /// How long a dropped member is kept for a resume (`--lobby-resume-grace`); zero drops at
    /// once.
    pub resume_grace: Duration,
    /// Server-hosted games kept open (`--lobby-hosted`).
    pub hosted: Vec<HostedSpec>,
    /// Most members (present or away) at once.
    pub max_members: usize,
    /// Most games at once, hosted ones included.
    pub max_games: usize,
    /// Most seats a game may have (CREATE_GAME's max players).
    pub max_seats: u32,
    /// A connection without a completed SIGN_IN by then is closed, whatever it sends.
    pub sign_in_timeout: Duration,
    /// A connection without a valid frame for this long is closed (`--idle-timeout`).
    pub idle_timeout: Duration,
    /// Frames per second a connection may send (all codes); excess frames are dropped and
    /// answered ERROR 10.
    pub frame_rate: u64,
    /// Frames a connection may send back to back.
    pub frame_burst: u64,
    /// `handle_timeout` stops running deadlines once this many outputs wait for the driver
    /// (the rest are due at once and run on the next call), so a burst of expiries cannot
    /// grow the output queue without bound.
    pub output_budget: usize,
}

impl Default for GeneralConfig {
    fn default() -> GeneralConfig {
        GeneralConfig {
            server_name: "lobbyd".to_owned(),
            max_frame: DEFAULT_MAX_FRAME,
            sign_in_tries: 3,
            login: LoginPolicy::Off,
            max_games_per_member: 4,
            ask_timeout: Duration::from_secs(30),
            auto_approve: false,
            game_data: 65_536,
            chat_rate: 5,
            chat_burst: 10,
            chat_ip_rate: 20,
            chat_budget: 5 * 1024 * 1024,
            max_games_per_ip: 16,
            game_data_per_ip: 256 * 1024,
            resume_grace: Duration::from_secs(30),
            hosted: Vec::new(),
            max_members: 10_000,
            max_games: 2_000,
            max_seats: 256,
            sign_in_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(30),
            frame_rate: 200,
            frame_burst: 400,
            output_budget: 65_536,
        }
    }
}

/// A deadline the core keeps on its timer wheel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// The connection's sign-in deadline (before WELCOME) or idle check (after); `serial`
    /// tells a reused `ConnId` apart.
    Conn(ConnId, u64),
    /// An away member's resume grace ends.
    Grace(MemberId),
    /// An unanswered JOIN_ASK expires.
    Ask(AskId),
    /// A server-hosted game's own timer.
    Hosted(GameId),
    /// Time to see whether the lobby's chat slow mode may end.
    SlowMode,
}

/// A request the core refuses: the ERROR code and the text it sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GeneralRefusal {
    /// The ERROR code (also the label it is counted under).
    pub code: ErrorCode,
    /// The ERROR (or JOIN_RESPONSE, or CHALLENGE) text.
    pub text: &'static str,
}

impl GeneralRefusal {
    /// A refusal with `code` and `text`.
    pub const fn new(code: ErrorCode, text: &'static str) -> GeneralRefusal {
        GeneralRefusal { code, text }
    }
}

impl fmt::Display for GeneralRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.text, self.code.as_str())
    }
}

/// Why the core closed a connection (counted per reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CloseReason {
    /// No completed SIGN_IN within `sign_in_timeout`.
    SignInTimeout,
    /// `sign_in_tries` refused SIGN_INs.
    TriesExhausted,
    /// No valid frame for `idle_timeout`.
    Idle,
    /// A frame declared a payload over `max_frame` (after ERROR 11).
    Oversized,
    /// `max_members` members exist (after ERROR 15).
    LobbyFull,
    /// Its member resumed, or was signed in with its password, on another connection.
    Replaced,
    /// The server is shutting down.
    Shutdown,
}

impl CloseReason {
    /// Every reason, in declaration order, for metrics.
    pub const ALL: [CloseReason; 7] = [
        CloseReason::SignInTimeout,
        CloseReason::TriesExhausted,
        CloseReason::Idle,
        CloseReason::Oversized,
        CloseReason::LobbyFull,
        CloseReason::Replaced,
        CloseReason::Shutdown,
    ];

    /// Stable snake_case label.
    pub const fn as_str(self) -> &'static str {
        match self {
            CloseReason::SignInTimeout => "sign_in_timeout",
            CloseReason::TriesExhausted => "tries_exhausted",
            CloseReason::Idle => "idle",
            CloseReason::Oversized => "oversized",
            CloseReason::LobbyFull => "lobby_full",
            CloseReason::Replaced => "replaced",
            CloseReason::Shutdown => "shutdown",
        }
    }
}

/// How a member left the lobby (counted per reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeaveReason {
    /// Its connection closed and no resume grace is configured.
    Disconnected,
    /// Its resume grace ran out.
    GraceExpired,
}

impl LeaveReason {
    /// Every reason, in declaration order, for metrics.
    pub const ALL: [LeaveReason; 2] = [LeaveReason::Disconnected, LeaveReason::GraceExpired];

    /// Stable snake_case label.
    pub const fn as_str(self) -> &'static str {
        match self {
            LeaveReason::Disconnected => "disconnected",
            LeaveReason::GraceExpired => "grace_expired",
        }
    }
}

/// A member as operators see it (`/rooms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberView<'a> {
    /// The id.
    pub id: MemberId,
    /// The username.
    pub username: &'a str,
    /// The display name.
    pub display_name: &'a str,
    /// Member flags (bit 16: away).
    pub flags: u32,
    /// Games it plays in.
    pub games: usize,
}

/// A game as operators see it (`/rooms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GameView<'a> {
    /// The id.
    pub id: GameId,
    /// The owner ([`SERVER_MEMBER`] for a hosted game).
    pub owner: MemberId,
    /// The name.
    pub name: &'a str,
    /// The game type.
    pub game_type: &'a str,
    /// Game flags.
    pub flags: u32,
    /// Players in it.
    pub players: usize,
    /// Seats.
    pub max_players: u32,
    /// JOIN_ASKs waiting for the owner.
    pub asks: usize,
    /// Bytes of stored game data (bookkeeping included).
    pub data_bytes: usize,
}
