//! The general lobby driver's own counters (`net::general`; the core's are
//! `general::GeneralStats`), with their names on the metrics page, and those of its
//! WebSocket port ([`WsStats`]).

use crate::wire::websocket::frame::Violation;
use crate::wire::websocket::handshake::{HeadError, UpgradeRefusal};

/// The driver's own counters (the core's are `general::GeneralStats`).
#[derive(Clone, Debug, Default)]
pub struct GeneralDriverStats {
    /// Connections accepted and handed to the core.
    pub accepted: u64,
    /// Connections refused at accept: over `--lobby-conn-rate` for their address.
    pub rate_limited: u64,
    /// Connections refused at accept: their address has `--lobby-max-conns-per-ip` open.
    pub per_ip_limited: u64,
    /// Connections not signed in closed at `--lobby-max-conns` to make room for a newcomer.
    pub guests_evicted: u64,
    /// Times accepting paused at `--lobby-max-conns` (or after an accept error).
    pub accept_pauses: u64,
    /// Connections dropped because their send queue passed [`SEND_QUEUE_CAP`](crate::net::general::SEND_QUEUE_CAP).
    pub slow_readers: u64,
    /// Connections dropped because `--lobby-memory-budget` was full and they held the most.
    pub memory_budget_drops: u64,
    /// Connections closed with bytes still queued after [`LINGER`](crate::net::general::LINGER).
    pub linger_timeouts: u64,
    /// Connections that ended with a read or write error.
    pub io_errors: u64,
    /// Bytes read.
    pub bytes_in: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Frames handed to the core.
    pub frames_in: u64,
}

impl GeneralDriverStats {
    /// Calls `f(name, label, value)` for every counter.
    pub fn visit(&self, mut f: impl FnMut(&'static str, &'static str, u64)) {
        f("general_accepted_total", "", self.accepted);
        f("general_refused_total", "conn_rate", self.rate_limited);
        f(
            "general_refused_total",
            "max_conns_per_ip",
            self.per_ip_limited,
        );
        f("general_accept_pauses_total", "", self.accept_pauses);
        f(
            "general_dropped_total",
            "evicted_guest",
            self.guests_evicted,
        );
        f("general_dropped_total", "slow_reader", self.slow_readers);
        f(
            "general_dropped_total",
            "memory_budget",
            self.memory_budget_drops,
        );
        f(
            "general_dropped_total",
            "linger_timeout",
            self.linger_timeouts,
        );
        f("general_dropped_total", "io_error", self.io_errors);
        f("general_bytes_in_total", "", self.bytes_in);
        f("general_bytes_out_total", "", self.bytes_out);
        f("general_frames_in_total", "", self.frames_in);
    }
}

/// The WebSocket port's own counters (`--lobby-ws-port`): the upgrade, the files, and the
/// closes the transport decides (the lobby's own are the core's).
#[derive(Clone, Debug, Default)]
pub struct WsStats {
    /// Connections accepted on the WebSocket port.
    pub accepted: u64,
    /// Upgrades to WebSocket (101 sent, the connection opened in the lobby).
    pub upgrades: u64,
    /// Requests answered with an error status before an upgrade, by [`UpgradeRefusal`] (as
    /// `UpgradeRefusal::ALL` orders them).
    pub refused: [u64; UpgradeRefusal::ALL.len()],
    /// Request heads that did not parse (400), by [`HeadError`].
    pub bad_heads: [u64; 3],
    /// Files served (200).
    pub files: u64,
    /// Connections closed for a frame the transport refuses, by [`Violation`] (as
    /// `Violation::ALL` orders them).
    pub violations: [u64; Violation::ALL.len()],
    /// Binary messages that were not exactly one general lobby frame (close 1007).
    pub not_one_frame: u64,
    /// Close frames from peers (answered, then closed).
    pub peer_closes: u64,
    /// Connections closed without a whole request head within `--handshake-timeout`.
    pub upgrade_timeouts: u64,
    /// Pings answered with a pong.
    pub pings: u64,
}

/// `HeadError`'s metric labels, in the order of [`WsStats::bad_heads`].
pub const HEAD_ERRORS: [HeadError; 3] = [
    HeadError::Malformed,
    HeadError::TooLong,
    HeadError::TooManyHeaders,
];

impl WsStats {
    /// Calls `f(name, label, value)` for every counter.
    pub fn visit(&self, mut f: impl FnMut(&'static str, &'static str, u64)) {
        f("general_ws_accepted_total", "", self.accepted);
        f("general_ws_upgrades_total", "", self.upgrades);
        for (refusal, n) in UpgradeRefusal::ALL.iter().zip(self.refused) {
            f("general_ws_refused_total", refusal.as_str(), n);
        }
        for (error, n) in HEAD_ERRORS.iter().zip(self.bad_heads) {
            f("general_ws_refused_total", error.as_str(), n);
        }
        f("general_ws_files_total", "", self.files);
        for (violation, n) in Violation::ALL.iter().zip(self.violations) {
            f("general_ws_closed_total", violation.as_str(), n);
        }
        f(
            "general_ws_closed_total",
            "not_one_frame",
            self.not_one_frame,
        );
        f("general_ws_closed_total", "peer_close", self.peer_closes);
        f(
            "general_ws_closed_total",
            "upgrade_timeout",
            self.upgrade_timeouts,
        );
        f("general_ws_pings_total", "", self.pings);
    }

    /// Counts a request refused with `refusal`'s status.
    pub fn refuse(&mut self, refusal: UpgradeRefusal) {
        if let Some(i) = UpgradeRefusal::ALL.iter().position(|&r| r == refusal) {
            self.refused[i] += 1;
        }
    }

    /// Counts a head that did not parse.
    pub fn bad_head(&mut self, error: HeadError) {
        if let Some(i) = HEAD_ERRORS.iter().position(|&e| e == error) {
            self.bad_heads[i] += 1;
        }
    }

    /// Counts a connection closed for `violation`.
    pub fn violation(&mut self, violation: Violation) {
        if let Some(i) = Violation::ALL.iter().position(|&v| v == violation) {
            self.violations[i] += 1;
        }
    }
}
