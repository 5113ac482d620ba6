//! The Warzone master server driver's own counters (`net::wz`): accepts, evictions, drops,
//! I/O totals, reloads. The core's are [`crate::wz::WzStats`]; both are reported under
//! docs/protocols/wz-lobby.md, "Counters".

/// The driver's own counters (the core's are [`crate::wz::WzStats`]).
#[derive(Clone, Debug, Default)]
pub struct WzDriverStats {
    /// Connections accepted and served.
    pub accepted: u64,
    /// Times accepting paused because `--wz-max-conns` were open (or accept failed).
    pub accept_pauses: u64,
    /// Unsettled connections closed at `--wz-max-conns` to make room for a newcomer.
    pub evicted: u64,
    /// Connections dropped because their send queue passed [`OUT_CAP`](crate::net::wz::OUT_CAP).
    pub send_overflow: u64,
    /// Connections dropped because `--wz-memory-budget` was full: each the one holding the
    /// most queued bytes.
    pub memory_budget_drops: u64,
    /// Connections that ended with a read or write error (reset by the peer, ...).
    pub io_errors: u64,
    /// Bytes read from master-server connections.
    pub bytes_in: u64,
    /// Bytes written to master-server connections.
    pub bytes_out: u64,
    /// MOTD / banned-words reloads that failed (the old values stay).
    pub reload_failures: u64,
    /// Connections closed with replies still queued after [`LINGER`](crate::net::wz::LINGER).
    pub linger_timeouts: u64,
}

impl WzDriverStats {
    /// Calls `f(name, label, value)` for every counter.
    pub fn visit(&self, mut f: impl FnMut(&'static str, &'static str, u64)) {
        f("wz_accepted_total", "", self.accepted);
        f("wz_accept_pauses_total", "", self.accept_pauses);
        f("wz_evicted_total", "", self.evicted);
        f("wz_send_overflow_total", "", self.send_overflow);
        f("wz_memory_budget_drops_total", "", self.memory_budget_drops);
        f("wz_io_errors_total", "", self.io_errors);
        f("wz_bytes_in_total", "", self.bytes_in);
        f("wz_bytes_out_total", "", self.bytes_out);
        f("wz_reload_failures_total", "", self.reload_failures);
        f("wz_linger_timeouts_total", "", self.linger_timeouts);
    }
}
