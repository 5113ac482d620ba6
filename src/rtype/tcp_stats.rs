//! The TCP lobby core's counters, by reason, as `/metrics` exports them.

use super::tcp_messages::{TcpError, Violation};

/// Why the core closed a connection (and for [`super::tcp_messages::ConnClose`], why the driver did).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CloseCause {
    /// DISCONNECT.
    Disconnect,
    /// The peer closed its end.
    PeerClosed,
    /// A socket error.
    Error,
    /// Send queue over the cap.
    SlowReader,
    /// Silent for `--idle-timeout`.
    Idle,
    /// No CONNECT_ACK within `--handshake-timeout` of being accepted.
    HandshakeTimeout,
    /// Without CONNECT_ACK, closed at `--max-conns` to make room for a newcomer.
    Evicted,
    /// `--max-violations` reached.
    Violations,
    /// No party could take it (`--max-rooms`).
    LobbyFull,
    /// Still open 5 s after GAME_START.
    Linger,
    /// The server is shutting down.
    Shutdown,
}

impl CloseCause {
    /// Every cause, for exporting all counters.
    pub const ALL: [CloseCause; 11] = [
        CloseCause::Disconnect,
        CloseCause::PeerClosed,
        CloseCause::Error,
        CloseCause::SlowReader,
        CloseCause::Idle,
        CloseCause::HandshakeTimeout,
        CloseCause::Evicted,
        CloseCause::Violations,
        CloseCause::LobbyFull,
        CloseCause::Linger,
        CloseCause::Shutdown,
    ];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            CloseCause::Disconnect => "disconnect",
            CloseCause::PeerClosed => "peer_closed",
            CloseCause::Error => "error",
            CloseCause::SlowReader => "slow_reader",
            CloseCause::Idle => "idle",
            CloseCause::HandshakeTimeout => "handshake_timeout",
            CloseCause::Evicted => "evicted",
            CloseCause::Violations => "violations",
            CloseCause::LobbyFull => "lobby_full",
            CloseCause::Linger => "linger",
            CloseCause::Shutdown => "shutdown",
        }
    }
}

/// The TCP lobby's counters.
#[derive(Clone, Debug, Default)]
pub struct PartyStats {
    /// Connections the driver accepted and handed to the core.
    pub admitted: u64,
    /// CONNECT_ACKs sent.
    pub connected: u64,
    /// Parties opened.
    pub parties_opened: u64,
    /// Countdowns started.
    pub countdowns: u64,
    /// Countdowns cancelled because too few members remained.
    pub countdowns_cancelled: u64,
    /// GAME_STARTs (one per party).
    pub games_started: u64,
    /// ERROR_MSGs sent, by error (index in [`TcpError::ALL`]).
    pub errors: [u64; TcpError::ALL.len()],
    /// Violations, by reason (index in [`Violation::ALL`]).
    pub violations: [u64; Violation::ALL.len()],
    /// Connections closed, by cause (index in [`CloseCause::ALL`]).
    pub closed: [u64; CloseCause::ALL.len()],
    /// HELLOs refused because their token named no expected player.
    pub unknown_tokens: u64,
    /// Connections whose first bytes were the upstream client's dialect.
    pub upstream_conns: u64,
    /// Upstream dialect: rooms created.
    pub rooms_created: u64,
    /// Upstream dialect: room and party requests refused, by reason (index in
    /// [`UPSTREAM_REFUSALS`]).
    pub upstream_refused: [u64; UPSTREAM_REFUSALS.len()],
    /// Upstream dialect: READY_REQs ignored because their hash was not the sender's.
    pub foreign_ready: u64,
}

/// Why an upstream-dialect request was refused, as the labels of
/// `tcp_lobby_upstream_refused_total`: CREATE_ROOM_ACK 1 (`create_refused`), JOIN_ROOM_ACK
/// 1-3 (`room_full`, `room_not_found`, `room_in_game`), CONNECT_ACK 1 (`connect_refused`),
/// and the two the dialect has no answer for, so they go unanswered: a START_REQ while the
/// room may not start (`start_refused`), and a request after GAME_START but DISCONNECT
/// (`game_started`).
pub const UPSTREAM_REFUSALS: [&str; 7] = [
    "create_refused",
    "room_full",
    "room_not_found",
    "room_in_game",
    "connect_refused",
    "start_refused",
    "game_started",
];

impl PartyStats {
    /// ERROR_MSGs sent with `error`.
    pub fn errors_sent(&self, error: TcpError) -> u64 {
        index_of(&TcpError::ALL, error).map_or(0, |i| self.errors[i])
    }

    /// Violations counted for `reason`.
    pub fn violations_of(&self, reason: Violation) -> u64 {
        index_of(&Violation::ALL, reason).map_or(0, |i| self.violations[i])
    }

    /// Connections closed for `cause`.
    pub fn closes(&self, cause: CloseCause) -> u64 {
        index_of(&CloseCause::ALL, cause).map_or(0, |i| self.closed[i])
    }

    /// Calls `f(name, label, value)` for every counter; `label` is "" for unlabelled ones.
    pub fn visit(&self, mut f: impl FnMut(&'static str, &'static str, u64)) {
        f("tcp_lobby_admitted_total", "", self.admitted);
        f("tcp_lobby_connected_total", "", self.connected);
        f("tcp_lobby_parties_opened_total", "", self.parties_opened);
        f("tcp_lobby_countdowns_total", "", self.countdowns);
        f(
            "tcp_lobby_countdowns_cancelled_total",
            "",
            self.countdowns_cancelled,
        );
        f("tcp_lobby_games_started_total", "", self.games_started);
        for (error, value) in TcpError::ALL.iter().zip(self.errors) {
            f("tcp_lobby_errors_sent_total", error.as_str(), value);
        }
        for (reason, value) in Violation::ALL.iter().zip(self.violations) {
            f("tcp_lobby_violations_total", reason.as_str(), value);
        }
        for (cause, value) in CloseCause::ALL.iter().zip(self.closed) {
            f("tcp_lobby_closed_total", cause.as_str(), value);
        }
        f("tcp_lobby_unknown_tokens_total", "", self.unknown_tokens);
        f("tcp_lobby_upstream_conns_total", "", self.upstream_conns);
        f(
            "tcp_lobby_upstream_rooms_created_total",
            "",
            self.rooms_created,
        );
        for (reason, value) in UPSTREAM_REFUSALS.iter().zip(self.upstream_refused) {
            f("tcp_lobby_upstream_refused_total", reason, value);
        }
        f(
            "tcp_lobby_upstream_foreign_ready_total",
            "",
            self.foreign_ready,
        );
    }

    /// Counts an upstream-dialect refusal labelled `reason` (one of [`UPSTREAM_REFUSALS`]).
    pub(super) fn refused(&mut self, reason: &str) {
        if let Some(i) = UPSTREAM_REFUSALS.iter().position(|r| *r == reason) {
            self.upstream_refused[i] += 1;
        }
    }
}

/// Where `item` stands in `all` (the index of its counter).
pub(super) fn index_of<T: PartialEq>(all: &[T], item: T) -> Option<usize> {
    all.iter().position(|x| *x == item)
}
