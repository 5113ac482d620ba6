//! The R-Type front end's driver counters: its UDP sockets' (`net::rtype::udp`: what was
//! dropped before the core saw it, in either dialect of the lobby, and I/O totals), its TCP
//! lobby transport's (`net::rtype::tcp`: admission, drops, I/O totals) and the rooms' game
//! servers' (`net::rtype::game_server`, `--instance-exec`). The core's own are `rtype::stats`.

use std::io;

use crate::wire::frame::Error as FrameError;
use crate::wire::udp_upstream::lobby::MessageFamily;
use crate::wire::udp_upstream::Error as UpstreamError;

/// UDP counters (one thread: plain integers).
#[derive(Clone, Debug, Default)]
pub struct UdpStats {
    /// UDP lobby datagrams dropped as malformed, by reason (index in [`FrameError::ALL`]).
    pub lobby_dropped: [u64; FrameError::ALL.len()],
    /// Instance datagrams dropped as malformed, by reason.
    pub instance_dropped: [u64; FrameError::ALL.len()],
    /// Upstream-dialect lobby datagrams (`docs/protocols/udp-lobby-upstream.md`) received.
    pub upstream_datagrams_in: u64,
    /// Upstream-dialect lobby datagrams dropped as malformed, by reason (index in
    /// [`UpstreamError::ALL`]).
    pub upstream_dropped: [u64; UpstreamError::ALL.len()],
    /// Well-formed upstream-dialect datagrams lobbyd does not serve, by family (index in
    /// [`MessageFamily::ALL`]).
    pub upstream_unserved: [u64; MessageFamily::ALL.len()],
    /// Datagrams received on the lobby socket.
    pub lobby_datagrams_in: u64,
    /// Datagrams received on instance sockets.
    pub instance_datagrams_in: u64,
    /// Bytes received on all UDP sockets.
    pub udp_bytes_in: u64,
    /// Datagrams sent on all UDP sockets.
    pub udp_datagrams_out: u64,
    /// Bytes sent on all UDP sockets.
    pub udp_bytes_out: u64,
    /// Sends dropped because the socket buffer was full (`WouldBlock`).
    pub send_would_block: u64,
    /// Sends that failed with another error.
    pub send_errors: u64,
    /// Receive errors other than `WouldBlock`.
    pub recv_errors: u64,
    /// Instance sockets bound.
    pub instances_bound: u64,
    /// Instance binds that failed for every port tried.
    pub instance_bind_failures: u64,
}

impl UdpStats {
    /// Counts the outcome of one `send_to`.
    pub(super) fn count_send(&mut self, result: io::Result<usize>, len: usize) {
        match result {
            Ok(_) => {
                self.udp_datagrams_out += 1;
                self.udp_bytes_out += len as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.send_would_block += 1,
            Err(e) => {
                self.send_errors += 1;
                log::debug!("udp send: {e}");
            }
        }
    }

    /// Counts a malformed lobby datagram.
    pub fn lobby_drop(&mut self, error: FrameError) {
        if let Some(i) = FrameError::ALL.iter().position(|e| *e == error) {
            self.lobby_dropped[i] += 1;
        }
    }

    /// Counts a malformed instance datagram.
    pub fn instance_drop(&mut self, error: FrameError) {
        if let Some(i) = FrameError::ALL.iter().position(|e| *e == error) {
            self.instance_dropped[i] += 1;
        }
    }

    /// Counts a malformed upstream-dialect datagram.
    pub fn upstream_drop(&mut self, error: UpstreamError) {
        if let Some(i) = UpstreamError::ALL.iter().position(|e| *e == error) {
            self.upstream_dropped[i] += 1;
        }
    }

    /// Counts an upstream-dialect message lobbyd does not serve.
    pub fn upstream_unserved(&mut self, family: MessageFamily) {
        if let Some(i) = MessageFamily::ALL.iter().position(|f| *f == family) {
            self.upstream_unserved[i] += 1;
        }
    }

    /// How many upstream-dialect datagrams were dropped for `error`.
    pub fn upstream_drops(&self, error: UpstreamError) -> u64 {
        UpstreamError::ALL
            .iter()
            .position(|e| *e == error)
            .map_or(0, |i| self.upstream_dropped[i])
    }

    /// How many upstream-dialect datagrams of `family` were not served.
    pub fn upstream_unserved_count(&self, family: MessageFamily) -> u64 {
        MessageFamily::ALL
            .iter()
            .position(|f| *f == family)
            .map_or(0, |i| self.upstream_unserved[i])
    }

    /// How many lobby datagrams were dropped for `error`.
    pub fn lobby_drops(&self, error: FrameError) -> u64 {
        FrameError::ALL
            .iter()
            .position(|e| *e == error)
            .map_or(0, |i| self.lobby_dropped[i])
    }

    /// How many instance datagrams were dropped for `error`.
    pub fn instance_drops(&self, error: FrameError) -> u64 {
        FrameError::ALL
            .iter()
            .position(|e| *e == error)
            .map_or(0, |i| self.instance_dropped[i])
    }

    /// Calls `f(name, label, value)` for every counter; `label` is "" for unlabelled ones.
    pub fn visit(&self, mut f: impl FnMut(&'static str, &'static str, u64)) {
        for (error, value) in FrameError::ALL.iter().zip(self.lobby_dropped) {
            f("udp_lobby_dropped_total", error.as_str(), value);
        }
        for (error, value) in FrameError::ALL.iter().zip(self.instance_dropped) {
            f("instance_dropped_total", error.as_str(), value);
        }
        f(
            "udp_upstream_datagrams_in_total",
            "",
            self.upstream_datagrams_in,
        );
        for (error, value) in UpstreamError::ALL.iter().zip(self.upstream_dropped) {
            f("udp_upstream_dropped_total", error.as_str(), value);
        }
        for (family, value) in MessageFamily::ALL.iter().zip(self.upstream_unserved) {
            f("udp_upstream_unserved_total", family.as_str(), value);
        }
        f("udp_lobby_datagrams_in_total", "", self.lobby_datagrams_in);
        f(
            "instance_datagrams_in_total",
            "",
            self.instance_datagrams_in,
        );
        f("udp_bytes_in_total", "", self.udp_bytes_in);
        f("udp_datagrams_out_total", "", self.udp_datagrams_out);
        f("udp_bytes_out_total", "", self.udp_bytes_out);
        f("udp_send_would_block_total", "", self.send_would_block);
        f("udp_send_errors_total", "", self.send_errors);
        f("udp_recv_errors_total", "", self.recv_errors);
        f("instances_bound_total", "", self.instances_bound);
        f(
            "instance_bind_failures_total",
            "",
            self.instance_bind_failures,
        );
    }
}

/// Counters of the TCP transport.
#[derive(Clone, Debug, Default)]
pub struct TcpStats {
    /// Connections accepted and handed to the core.
    pub accepted: u64,
    /// Connections closed at once: over `--conn-rate` for their IP.
    pub rate_limited: u64,
    /// Connections closed at once: their IP has `--max-conns-per-ip` open.
    pub per_ip_limited: u64,
    /// Times accepting paused at `--max-conns`.
    pub accept_paused: u64,
    /// Connections dropped because their send queue passed [`SEND_QUEUE_CAP`](crate::net::rtype::tcp::SEND_QUEUE_CAP).
    pub slow_readers: u64,
    /// Connections dropped because `--tcp-memory-budget` was full: each the one holding the
    /// most queued bytes (the core counts them as slow readers too).
    pub memory_budget_drops: u64,
    /// Connections without CONNECT_ACK closed at `--max-conns` to make room for a newcomer.
    pub evicted: u64,
    /// Connections whose queued bytes could not be flushed within the close wait.
    pub drain_timeouts: u64,
    /// accept() errors other than `WouldBlock`.
    pub accept_errors: u64,
    /// Bytes read.
    pub bytes_in: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Frames queued.
    pub frames_out: u64,
    /// Frames (and oversized headers) read and handed to the core.
    pub frames_in: u64,
}

impl TcpStats {
    /// Calls `f(name, label, value)` for every counter.
    pub fn visit(&self, mut f: impl FnMut(&'static str, &'static str, u64)) {
        f("tcp_lobby_accepted_total", "", self.accepted);
        f("tcp_lobby_refused_total", "conn_rate", self.rate_limited);
        f(
            "tcp_lobby_refused_total",
            "max_conns_per_ip",
            self.per_ip_limited,
        );
        f("tcp_lobby_accept_paused_total", "", self.accept_paused);
        f("tcp_lobby_dropped_total", "slow_reader", self.slow_readers);
        f(
            "tcp_lobby_dropped_total",
            "memory_budget",
            self.memory_budget_drops,
        );
        f("tcp_lobby_dropped_total", "evicted", self.evicted);
        f(
            "tcp_lobby_dropped_total",
            "drain_timeout",
            self.drain_timeouts,
        );
        f("tcp_lobby_accept_errors_total", "", self.accept_errors);
        f("tcp_lobby_bytes_in_total", "", self.bytes_in);
        f("tcp_lobby_bytes_out_total", "", self.bytes_out);
        f("tcp_lobby_frames_out_total", "", self.frames_out);
        f("tcp_lobby_frames_in_total", "", self.frames_in);
    }
}

/// Why a game server ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCause {
    /// It exited by itself with status 0.
    Exited,
    /// It exited by itself with another status, or a signal lobbyd did not send ended it.
    Failed,
    /// It ended after lobbyd's SIGTERM, within the grace.
    Stopped,
    /// lobbyd sent SIGKILL after the grace.
    Killed,
}

impl ExitCause {
    /// Every cause, for exporting all counters.
    pub const ALL: [ExitCause; 4] = [
        ExitCause::Exited,
        ExitCause::Failed,
        ExitCause::Stopped,
        ExitCause::Killed,
    ];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            ExitCause::Exited => "exited",
            ExitCause::Failed => "failed",
            ExitCause::Stopped => "stopped",
            ExitCause::Killed => "killed",
        }
    }
}

/// Why a game server could not be started (the room was refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnFailure {
    /// Every port of `--instance-ports` is taken.
    NoPort,
    /// The command could not be run (not found, not executable, out of processes).
    Spawn,
    /// Its exit cannot be watched (no pidfd) or its pipes not registered: it was killed.
    Watch,
}

impl SpawnFailure {
    /// Every reason.
    pub const ALL: [SpawnFailure; 3] = [
        SpawnFailure::NoPort,
        SpawnFailure::Spawn,
        SpawnFailure::Watch,
    ];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            SpawnFailure::NoPort => "no_port",
            SpawnFailure::Spawn => "spawn",
            SpawnFailure::Watch => "watch",
        }
    }
}

/// The game servers' counters.
#[derive(Clone, Debug, Default)]
pub struct GameServerStats {
    /// Game servers started.
    pub spawned: u64,
    /// Game servers ended, by [`ExitCause`] (index in [`ExitCause::ALL`]).
    pub exited: [u64; ExitCause::ALL.len()],
    /// Rooms refused because their game server could not start, by [`SpawnFailure`].
    pub spawn_failures: [u64; SpawnFailure::ALL.len()],
    /// Output lines logged.
    pub lines_logged: u64,
    /// Output lines over the log budget, not logged.
    pub lines_dropped: u64,
}

impl GameServerStats {
    /// Calls `f(name, label, value)` for every counter; `running` is the gauge of servers
    /// alive now.
    pub fn visit(&self, running: usize, mut f: impl FnMut(&'static str, &'static str, u64)) {
        f("game_servers_spawned_total", "", self.spawned);
        for (cause, value) in ExitCause::ALL.iter().zip(self.exited) {
            f("game_servers_exited_total", cause.as_str(), value);
        }
        for (reason, value) in SpawnFailure::ALL.iter().zip(self.spawn_failures) {
            f("game_server_spawn_failures_total", reason.as_str(), value);
        }
        f("game_server_log_lines_total", "", self.lines_logged);
        f(
            "game_server_log_lines_dropped_total",
            "",
            self.lines_dropped,
        );
        f("game_servers_running", "", running as u64);
    }

    /// How many ended for `cause`.
    pub fn exits(&self, cause: ExitCause) -> u64 {
        let i = ExitCause::ALL.iter().position(|c| *c == cause);
        i.map_or(0, |i| self.exited[i])
    }

    /// How many rooms were refused for `reason`.
    pub fn failures(&self, reason: SpawnFailure) -> u64 {
        let i = SpawnFailure::ALL.iter().position(|r| *r == reason);
        i.map_or(0, |i| self.spawn_failures[i])
    }

    /// Counts a room refused for `reason`.
    pub fn failed(&mut self, reason: SpawnFailure) {
        if let Some(i) = SpawnFailure::ALL.iter().position(|r| *r == reason) {
            self.spawn_failures[i] += 1;
        }
    }
}
