//! Counters of the Warzone 2100 master server core ([`super::WzLobby::stats`]).
//!
//! Plain integers (one thread), read by the metrics exporter through [`WzStats::visit`] like
//! every other lobbyd counter set. Each reason enum has `ALL` and a stable snake_case
//! `as_str` used as the metric label. Nothing here allocates or panics.

use crate::wire::wz::v4::{self as wz_v4, DecodeError, Method};
use crate::wire::wz::WzCommand;

/// Why a host was refused after `addg` (or on an update): the status it got says why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WzRefusal {
    /// The game name holds a banned word (406).
    BannedName,
    /// The host's netcode version is below `--wz-min-version` (403), or the struct is a
    /// pre-2.3 layout (version word below 3).
    MinVersion,
    /// Too many registrations from the host's address in a short time (406).
    RateLimited,
    /// The lobby holds `max_games` games already (406).
    LobbyFull,
    /// The host's address holds `max_games_per_ip` games already (406).
    GamesPerIp,
    /// The host's address has more than `max_conns_per_ip` connections open (406).
    ConnsPerIp,
    /// The game port refused or did not accept a connection in time (408).
    Unreachable,
    /// The game port answered the probe with another game's id (408).
    WrongGameId,
}

impl WzRefusal {
    /// Every variant, in declaration order.
    pub const ALL: [WzRefusal; 8] = [
        WzRefusal::BannedName,
        WzRefusal::MinVersion,
        WzRefusal::RateLimited,
        WzRefusal::LobbyFull,
        WzRefusal::GamesPerIp,
        WzRefusal::ConnsPerIp,
        WzRefusal::Unreachable,
        WzRefusal::WrongGameId,
    ];

    /// A stable snake_case label, for metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            WzRefusal::BannedName => "banned_name",
            WzRefusal::MinVersion => "min_version",
            WzRefusal::RateLimited => "rate_limited",
            WzRefusal::LobbyFull => "lobby_full",
            WzRefusal::GamesPerIp => "games_per_ip",
            WzRefusal::ConnsPerIp => "conns_per_ip",
            WzRefusal::Unreachable => "unreachable",
            WzRefusal::WrongGameId => "wrong_game_id",
        }
    }
}

/// Why a legacy connection was closed for misbehaving (no status is sent for these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtocolError {
    /// Four bytes that are no known command.
    UnknownCommand,
    /// A GAMESTRUCT after `addg` whose version word is not 3 or 4 (and not an older layout).
    BadVersion,
    /// The connection closed or went idle with part of a message buffered.
    Truncated,
    /// A GAMESTRUCT on a connection that never sent `addg`.
    GameStructWithoutAddg,
    /// A command where `addg` announced a GAMESTRUCT.
    ExpectedGameStruct,
    /// A second `addg` on a connection that already registered a game.
    DuplicateAddg,
    /// A command that makes no sense in the connection's state (`list` from a host).
    UnexpectedCommand,
    /// Input other than `keep` while the lobby is probing the host.
    InputWhileProbing,
    /// An update that changes the GAMESTRUCT version or the v4 `hostPort`.
    ChangedUpdate,
    /// A connection that did not settle within the handshake timeout (legacy: register a
    /// game; v4: a request answered with success), or a v4 connection without a game silent
    /// for the silence timeout.
    IdleTimeout,
    /// A v4 frame announcing more than `MAX_FRAME` bytes.
    FrameTooLarge,
    /// A v4 handshake announcing a version other than 4.
    WrongVersion,
}

impl ProtocolError {
    /// Every variant, in declaration order.
    pub const ALL: [ProtocolError; 12] = [
        ProtocolError::UnknownCommand,
        ProtocolError::BadVersion,
        ProtocolError::Truncated,
        ProtocolError::GameStructWithoutAddg,
        ProtocolError::ExpectedGameStruct,
        ProtocolError::DuplicateAddg,
        ProtocolError::UnexpectedCommand,
        ProtocolError::InputWhileProbing,
        ProtocolError::ChangedUpdate,
        ProtocolError::IdleTimeout,
        ProtocolError::FrameTooLarge,
        ProtocolError::WrongVersion,
    ];

    /// A stable snake_case label, for metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolError::UnknownCommand => "unknown_command",
            ProtocolError::BadVersion => "bad_version",
            ProtocolError::Truncated => "truncated",
            ProtocolError::GameStructWithoutAddg => "gamestruct_without_addg",
            ProtocolError::ExpectedGameStruct => "expected_gamestruct",
            ProtocolError::DuplicateAddg => "duplicate_addg",
            ProtocolError::UnexpectedCommand => "unexpected_command",
            ProtocolError::InputWhileProbing => "input_while_probing",
            ProtocolError::ChangedUpdate => "changed_update",
            ProtocolError::IdleTimeout => "idle_timeout",
            ProtocolError::FrameTooLarge => "v4_frame_too_large",
            ProtocolError::WrongVersion => "v4_wrong_version",
        }
    }
}

/// Why a game (listed or still being probed) left the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Removal {
    /// The host's connection closed.
    Closed,
    /// The host sent nothing for `silence_timeout`.
    Silence,
    /// The host was refused (probe failed, or an update broke the name/version policy).
    Refused,
    /// The host broke the protocol.
    ProtocolError,
    /// A v4 host sent `delGame`.
    Deleted,
}

impl Removal {
    /// Every variant, in declaration order.
    pub const ALL: [Removal; 5] = [
        Removal::Closed,
        Removal::Silence,
        Removal::Refused,
        Removal::ProtocolError,
        Removal::Deleted,
    ];

    /// A stable snake_case label, for metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            Removal::Closed => "closed",
            Removal::Silence => "silence",
            Removal::Refused => "refused",
            Removal::ProtocolError => "protocol_error",
            Removal::Deleted => "deleted",
        }
    }
}

/// What the driver reported for a reachability probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeOutcome {
    /// Connection refused (or another connect error).
    Refused,
    /// No connection within the timeout (reported by the driver, or the core's own deadline).
    TimedOut,
    /// Connected; no `WZLR` answer (or one the wire module does not understand).
    Connected,
    /// A `WZLR` answer with the right game id.
    WzlrMatch,
    /// A `WZLR` answer with another game id.
    WzlrMismatch,
}

impl ProbeOutcome {
    /// Every variant, in declaration order.
    pub const ALL: [ProbeOutcome; 5] = [
        ProbeOutcome::Refused,
        ProbeOutcome::TimedOut,
        ProbeOutcome::Connected,
        ProbeOutcome::WzlrMatch,
        ProbeOutcome::WzlrMismatch,
    ];

    /// A stable snake_case label, for metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProbeOutcome::Refused => "refused",
            ProbeOutcome::TimedOut => "timed_out",
            ProbeOutcome::Connected => "connected",
            ProbeOutcome::WzlrMatch => "wzlr_match",
            ProbeOutcome::WzlrMismatch => "wzlr_mismatch",
        }
    }
}

/// A v4 method, for counting requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum V4Method {
    /// `login`.
    Login,
    /// `addGame`.
    AddGame,
    /// `list`.
    List,
    /// `addPlayer`.
    AddPlayer,
    /// `delPlayer`.
    DelPlayer,
    /// `delGame`.
    DelGame,
    /// Any other method name.
    Unknown,
}

impl V4Method {
    /// Every variant, in declaration order.
    pub const ALL: [V4Method; 7] = [
        V4Method::Login,
        V4Method::AddGame,
        V4Method::List,
        V4Method::AddPlayer,
        V4Method::DelPlayer,
        V4Method::DelGame,
        V4Method::Unknown,
    ];

    /// The counter slot of a decoded method.
    pub fn of(method: &Method<'_>) -> V4Method {
        match method {
            Method::Login => V4Method::Login,
            Method::AddGame => V4Method::AddGame,
            Method::List => V4Method::List,
            Method::AddPlayer => V4Method::AddPlayer,
            Method::DelPlayer => V4Method::DelPlayer,
            Method::DelGame => V4Method::DelGame,
            Method::Unknown(_) => V4Method::Unknown,
        }
    }

    /// A stable label, for metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            V4Method::Login => "login",
            V4Method::AddGame => "add_game",
            V4Method::List => "list",
            V4Method::AddPlayer => "add_player",
            V4Method::DelPlayer => "del_player",
            V4Method::DelGame => "del_game",
            V4Method::Unknown => "unknown",
        }
    }
}

/// The v4 response statuses, in the order of [`WzStats::v4_statuses`], with their labels.
const V4_STATUSES: [(i32, &str); 9] = [
    (wz_v4::OK, "ok"),
    (wz_v4::NO_GAME, "no_game"),
    (wz_v4::NOT_ACCEPTABLE, "not_acceptable"),
    (wz_v4::WRONG_LOGIN, "wrong_login"),
    (wz_v4::LOGIN_REQUIRED, "login_required"),
    (wz_v4::SESSION_INVALID, "session_invalid"),
    (wz_v4::INVALID_DATA, "invalid_data"),
    (wz_v4::METHOD_NOT_FOUND, "method_not_found"),
    (wz_v4::PARSE_ERROR, "parse_error"),
];

/// The legacy commands, in the order of [`WzStats::commands`].
const COMMANDS: [(WzCommand, &str); 5] = [
    (WzCommand::GaId, "gaid"),
    (WzCommand::Addg, "addg"),
    (WzCommand::List, "list"),
    (WzCommand::Keep, "keep"),
    (WzCommand::Motd, "motd"),
];

fn index_of<T: PartialEq>(all: &[T], item: &T) -> Option<usize> {
    all.iter().position(|x| x == item)
}

/// Counters of the Warzone 2100 core.
#[derive(Clone, Debug, Default)]
pub struct WzStats {
    /// Connections opened.
    pub connections_opened: u64,
    /// Known commands received, by command (`gaId`, `addg`, `list`, `keep`, `motd`).
    pub commands: [u64; 5],
    /// Games listed (registrations that passed every check and the probe).
    pub games_listed: u64,
    /// GAMESTRUCT updates applied to listed games.
    pub updates: u64,
    /// Hosts refused, by reason (index in [`WzRefusal::ALL`]).
    pub refused: [u64; WzRefusal::ALL.len()],
    /// Connections closed for protocol errors, by reason (index in [`ProtocolError::ALL`]).
    pub protocol_errors: [u64; ProtocolError::ALL.len()],
    /// Probe requests emitted.
    pub probes_started: u64,
    /// Probe outcomes, by outcome (index in [`ProbeOutcome::ALL`]).
    pub probe_outcomes: [u64; ProbeOutcome::ALL.len()],
    /// Probe results for probes the core no longer waits for (host gone, deadline passed).
    pub stale_probe_results: u64,
    /// Games removed from the table, by reason (index in [`Removal::ALL`]).
    pub games_removed: [u64; Removal::ALL.len()],
    /// `list` replies sent.
    pub list_replies: u64,
    /// Connections opened beyond `max_conns_per_ip` (refused at `addg`).
    pub connections_over_limit: u64,
    /// Connections that completed the v4 handshake.
    pub v4_connections: u64,
    /// v4 requests decoded, by method (index in [`V4Method::ALL`]).
    pub v4_requests: [u64; V4Method::ALL.len()],
    /// v4 frames that did not decode, by reason (index in [`DecodeError::ALL`]).
    pub v4_decode_errors: [u64; DecodeError::ALL.len()],
    /// v4 responses sent, by status (index in `V4_STATUSES`).
    pub v4_statuses: [u64; V4_STATUSES.len()],
}

impl WzStats {
    /// Counts a known command.
    pub fn command(&mut self, cmd: WzCommand) {
        if let Some(i) = COMMANDS.iter().position(|(c, _)| *c == cmd) {
            self.commands[i] += 1;
        }
    }

    /// How many `cmd` commands were received.
    pub fn commands_of(&self, cmd: WzCommand) -> u64 {
        COMMANDS
            .iter()
            .position(|(c, _)| *c == cmd)
            .map_or(0, |i| self.commands[i])
    }

    /// Counts a decoded v4 request.
    pub fn v4_request(&mut self, method: V4Method) {
        if let Some(i) = index_of(&V4Method::ALL, &method) {
            self.v4_requests[i] += 1;
        }
    }

    /// How many v4 requests of `method` were decoded.
    pub fn v4_requests_of(&self, method: V4Method) -> u64 {
        index_of(&V4Method::ALL, &method).map_or(0, |i| self.v4_requests[i])
    }

    /// Counts a v4 frame that did not decode.
    pub fn v4_decode_error(&mut self, error: DecodeError) {
        if let Some(i) = DecodeError::ALL
            .iter()
            .position(|e| e.as_str() == error.as_str())
        {
            self.v4_decode_errors[i] += 1;
        }
    }

    /// How many v4 frames failed to decode with `error`'s reason.
    pub fn v4_decode_errors_of(&self, error: DecodeError) -> u64 {
        DecodeError::ALL
            .iter()
            .position(|e| e.as_str() == error.as_str())
            .map_or(0, |i| self.v4_decode_errors[i])
    }

    /// Counts a v4 response by status.
    pub fn v4_status(&mut self, status: i32) {
        if let Some(i) = V4_STATUSES.iter().position(|(s, _)| *s == status) {
            self.v4_statuses[i] += 1;
        }
    }

    /// How many v4 responses had `status`.
    pub fn v4_statuses_of(&self, status: i32) -> u64 {
        V4_STATUSES
            .iter()
            .position(|(s, _)| *s == status)
            .map_or(0, |i| self.v4_statuses[i])
    }

    /// Counts a refusal.
    pub fn refuse(&mut self, reason: WzRefusal) {
        if let Some(i) = index_of(&WzRefusal::ALL, &reason) {
            self.refused[i] += 1;
        }
    }

    /// How many hosts were refused for `reason`.
    pub fn refusals(&self, reason: WzRefusal) -> u64 {
        index_of(&WzRefusal::ALL, &reason).map_or(0, |i| self.refused[i])
    }

    /// Counts a protocol error.
    pub fn protocol_error(&mut self, reason: ProtocolError) {
        if let Some(i) = index_of(&ProtocolError::ALL, &reason) {
            self.protocol_errors[i] += 1;
        }
    }

    /// How many connections were closed for `reason`.
    pub fn protocol_errors_of(&self, reason: ProtocolError) -> u64 {
        index_of(&ProtocolError::ALL, &reason).map_or(0, |i| self.protocol_errors[i])
    }

    /// Counts a probe outcome.
    pub fn probe_outcome(&mut self, outcome: ProbeOutcome) {
        if let Some(i) = index_of(&ProbeOutcome::ALL, &outcome) {
            self.probe_outcomes[i] += 1;
        }
    }

    /// How many probes ended with `outcome`.
    pub fn probe_outcomes_of(&self, outcome: ProbeOutcome) -> u64 {
        index_of(&ProbeOutcome::ALL, &outcome).map_or(0, |i| self.probe_outcomes[i])
    }

    /// Counts a game leaving the table.
    pub fn removed(&mut self, reason: Removal) {
        if let Some(i) = index_of(&Removal::ALL, &reason) {
            self.games_removed[i] += 1;
        }
    }

    /// How many games left the table for `reason`.
    pub fn removals(&self, reason: Removal) -> u64 {
        index_of(&Removal::ALL, &reason).map_or(0, |i| self.games_removed[i])
    }

    /// Calls `f(name, label, value)` for every counter; `label` is "" for unlabelled ones.
    pub fn visit(&self, mut f: impl FnMut(&'static str, &'static str, u64)) {
        f("wz_connections_opened_total", "", self.connections_opened);
        f(
            "wz_connections_over_limit_total",
            "",
            self.connections_over_limit,
        );
        for ((_, label), value) in COMMANDS.iter().zip(self.commands) {
            f("wz_commands_total", label, value);
        }
        f("wz_games_listed_total", "", self.games_listed);
        f("wz_updates_total", "", self.updates);
        for (reason, value) in WzRefusal::ALL.iter().zip(self.refused) {
            f("wz_refused_total", reason.as_str(), value);
        }
        for (reason, value) in ProtocolError::ALL.iter().zip(self.protocol_errors) {
            f("wz_protocol_errors_total", reason.as_str(), value);
        }
        f("wz_probes_started_total", "", self.probes_started);
        for (outcome, value) in ProbeOutcome::ALL.iter().zip(self.probe_outcomes) {
            f("wz_probe_outcomes_total", outcome.as_str(), value);
        }
        f("wz_stale_probe_results_total", "", self.stale_probe_results);
        for (reason, value) in Removal::ALL.iter().zip(self.games_removed) {
            f("wz_games_removed_total", reason.as_str(), value);
        }
        f("wz_list_replies_total", "", self.list_replies);
        f("wz_v4_connections_total", "", self.v4_connections);
        for (method, value) in V4Method::ALL.iter().zip(self.v4_requests) {
            f("wz_v4_requests_total", method.as_str(), value);
        }
        for (error, value) in DecodeError::ALL.iter().zip(self.v4_decode_errors) {
            f("wz_v4_decode_errors_total", error.as_str(), value);
        }
        for ((_, label), value) in V4_STATUSES.iter().zip(self.v4_statuses) {
            f("wz_v4_responses_total", label, value);
        }
    }
}
