//! Counters of the R-Type UDP sockets (`net::rtype::udp`): what was dropped before the core saw it,
//! in either dialect of the lobby, and I/O totals.

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
