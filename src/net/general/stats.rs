//! The general lobby driver's own counters (`net::general`; the core's are
//! `general::GeneralStats`), with their names on the metrics page.

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
