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
//! legacy ([`super::legacy`]); both work on the one `Shared` state (`super::shared`) and
//! its game table ([`super::games`]). This file only routes: it owns the connections and
//! hands each event to the right state machine. Password checks leave the core as
//! [`WzOutput::Verify`] and come back through [`WzLobby::handle_verify_result`], so the
//! driver can run them off the loop.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use crate::accounts::VerifyResult;
use crate::wire::wz::v4::{detect, Detect, HANDSHAKE_LEN};

use super::games::GameView;
use super::legacy::LegacyConn;
use super::policy::NamePolicy;
use super::shared::Shared;
use super::stats::{ProtocolError, WzStats};
use super::types::{ConnId, JobId, ProbeId, ProbeResult, WzConfig, WzOutput};
use super::v4::V4Conn;

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
        WzLobby {
            stats: WzStats::default(),
            shared: Shared::new(config, now),
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
                    legacy.protocol_error(sh, st, ProtocolError::WrongVersion);
                    buf.len()
                }
                Detect::V4 => {
                    let (ip, over_limit) = (legacy.ip(), legacy.over_limit());
                    legacy.abandon(sh, st);
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
    pub fn handle_verify_result(&mut self, now: Instant, job: JobId, result: VerifyResult) {
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
