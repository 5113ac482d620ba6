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
//!
//! A connection is unsettled until it has registered a game (legacy) or had a request
//! answered with success (v4): until then `handshake_timeout` after its open closes it, and
//! the driver evicts the oldest unsettled one ([`WzLobby::oldest_unsettled`]) rather than
//! stop accepting at `--wz-max-conns`. This file keeps them in open order.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use crate::accounts::tokens::TokenSource;
use crate::accounts::VerifyResult;
use crate::wire::directory::{GameRecord, GAME_RECORD_LEN};
use crate::wire::wz::v4::{detect, Detect, HANDSHAKE_LEN};
use crate::wire::wz::GAMESTRUCT_LEN;

use super::games::GameView;
use super::legacy::LegacyConn;
use super::policy::NamePolicy;
use super::shared::Shared;
use super::stats::{ProtocolError, WzStats};
use super::types::{ConnId, JobId, ProbeId, ProbeResult, WzConfig, WzOutput};
use super::v4::V4Conn;

/// A connection's protocol state.
#[derive(Debug)]
enum Proto {
    /// The legacy protocol; `decided` once the first bytes ruled out a v4 handshake (until
    /// then the legacy state only holds the idle deadline).
    Legacy { legacy: LegacyConn, decided: bool },
    /// The v4 protocol, after its handshake.
    V4(V4Conn),
}

impl Proto {
    fn ip(&self) -> IpAddr {
        match self {
            Proto::Legacy { legacy, .. } => legacy.ip(),
            Proto::V4(v4) => v4.ip(),
        }
    }

    fn is_settled(&self) -> bool {
        match self {
            Proto::Legacy { legacy, .. } => legacy.is_settled(),
            Proto::V4(v4) => v4.is_settled(),
        }
    }
}

/// One connection: its protocol state, when it opened, and its place among the unsettled.
#[derive(Debug)]
struct Conn {
    proto: Proto,
    opened: Instant,
    /// Its key in [`WzLobby::unsettled`] until it settles.
    unsettled: Option<u64>,
}

/// The Warzone 2100 master server: the game table plus per-connection protocol state.
#[derive(Debug)]
pub struct WzLobby {
    /// Counters, for metrics.
    pub stats: WzStats,
    shared: Shared,
    conns: HashMap<ConnId, Conn>,
    conns_per_ip: HashMap<IpAddr, usize>,
    /// Connections not settled yet, in open order (eviction takes the first).
    unsettled: BTreeMap<u64, ConnId>,
    next_order: u64,
}

impl WzLobby {
    /// An empty lobby; v4 login session ids are drawn from `session_ids` (the driver passes
    /// the OS CSPRNG, tests and simulations a deterministic source).
    pub fn new(config: WzConfig, now: Instant, session_ids: TokenSource) -> WzLobby {
        WzLobby {
            stats: WzStats::default(),
            shared: Shared::new(config, now, session_ids),
            conns: HashMap::new(),
            conns_per_ip: HashMap::new(),
            unsettled: BTreeMap::new(),
            next_order: 0,
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
        let order = self.next_order;
        self.next_order += 1;
        self.unsettled.insert(order, conn);
        let proto = Proto::Legacy { legacy, decided };
        self.conns.insert(
            conn,
            Conn {
                proto,
                opened: now,
                unsettled: Some(order),
            },
        );
    }

    /// The connection opened longest ago that has not settled (registered a game, or had a
    /// v4 request answered with success): the driver closes it to make room at
    /// `--wz-max-conns`.
    pub fn oldest_unsettled(&self) -> Option<ConnId> {
        self.unsettled.values().next().copied()
    }

    /// After an event on `conn`: if it has settled now, it leaves the unsettled queue.
    fn note_settled(&mut self, conn: ConnId) {
        let Some(entry) = self.conns.get_mut(&conn) else {
            return;
        };
        if entry.unsettled.is_some() && entry.proto.is_settled() {
            if let Some(order) = entry.unsettled.take() {
                self.unsettled.remove(&order);
            }
        }
    }

    /// Feed the connection's read buffer; returns how many bytes were consumed (the driver
    /// drops them, carries out the outputs, and calls again while the count is non-zero:
    /// a v4 connection answers a few requests per call). What is finally left is shorter
    /// than one GAMESTRUCT (legacy) or one `MAX_FRAME` frame (v4), except behind a v4
    /// request that waits for a verdict (see [`WzOutput::Resume`]). Bytes of an unknown or
    /// closing connection are all consumed.
    pub fn handle_bytes(&mut self, now: Instant, conn: ConnId, buf: &[u8]) -> usize {
        let used = self.feed(now, conn, buf);
        self.note_settled(conn);
        used
    }

    /// [`WzLobby::handle_bytes`] for the connection's protocol.
    fn feed(&mut self, now: Instant, conn: ConnId, buf: &[u8]) -> usize {
        let (sh, st) = (&mut self.shared, &mut self.stats);
        let Some(entry) = self.conns.get_mut(&conn) else {
            return buf.len();
        };
        let handshake_deadline = entry.opened + sh.config.handshake_timeout;
        let state = &mut entry.proto;
        match state {
            Proto::V4(v4) => v4.on_bytes(sh, st, now, buf),
            Proto::Legacy {
                legacy,
                decided: true,
            } => legacy.on_bytes(sh, st, now, buf),
            Proto::Legacy { legacy, decided } => match detect(buf) {
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
                    let mut v4 = V4Conn::open(conn, ip, over_limit, sh, handshake_deadline);
                    let rest = buf.get(HANDSHAKE_LEN..).unwrap_or(&[]);
                    let used = HANDSHAKE_LEN + v4.on_bytes(sh, st, now, rest);
                    *state = Proto::V4(v4);
                    used.min(buf.len())
                }
            },
        }
    }

    /// The connection closed (FIN, RST, or after a [`WzOutput::Close`]): its game, if any,
    /// leaves the list at once.
    pub fn handle_closed(&mut self, _now: Instant, conn: ConnId) {
        let Some(mut entry) = self.conns.remove(&conn) else {
            return;
        };
        if let Some(order) = entry.unsettled {
            self.unsettled.remove(&order);
        }
        let (sh, st) = (&mut self.shared, &mut self.stats);
        match &mut entry.proto {
            Proto::Legacy { legacy, .. } => legacy.on_closed(sh, st),
            Proto::V4(v4) => v4.on_closed(sh, st),
        }
        let ip = entry.proto.ip();
        if let Some(count) = self.conns_per_ip.get_mut(&ip) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.conns_per_ip.remove(&ip);
            }
        }
    }

    /// The driver finished a probe.
    pub fn handle_probe_result(&mut self, now: Instant, probe: ProbeId, result: ProbeResult) {
        let conn = self.shared.probes.remove(&probe);
        let state = conn
            .and_then(|conn| self.conns.get_mut(&conn))
            .map(|entry| &mut entry.proto);
        let (sh, st) = (&mut self.shared, &mut self.stats);
        match state {
            Some(Proto::Legacy { legacy, .. }) => {
                legacy.on_probe_result(sh, st, now, probe, result)
            }
            Some(Proto::V4(v4)) => v4.on_probe_result(sh, st, now, probe, result),
            None => st.stale_probe_results += 1,
        }
        if let Some(conn) = conn {
            self.note_settled(conn);
        }
    }

    /// The driver's verdict on a [`WzOutput::Verify`].
    pub fn handle_verify_result(&mut self, now: Instant, job: JobId, result: VerifyResult) {
        let conn = self.shared.verifications.remove(&job);
        let state = conn
            .and_then(|conn| self.conns.get_mut(&conn))
            .map(|entry| &mut entry.proto);
        if let Some(Proto::V4(v4)) = state {
            v4.on_verified(&mut self.shared, &mut self.stats, now, job, result);
        }
        if let Some(conn) = conn {
            self.note_settled(conn);
        }
    }

    /// Run every deadline due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.handle_timeout_within(now, usize::MAX);
    }

    /// Runs at most `budget` of the deadlines due at `now` (the driver bounds its work per
    /// loop pass); the rest stay due, and [`WzLobby::poll_timeout`] says so.
    pub fn handle_timeout_within(&mut self, now: Instant, budget: usize) {
        for _ in 0..budget {
            let Some(conn) = self.shared.timers.poll_expired(now) else {
                return;
            };
            let (sh, st) = (&mut self.shared, &mut self.stats);
            match self.conns.get_mut(&conn).map(|entry| &mut entry.proto) {
                Some(Proto::Legacy { legacy, .. }) => legacy.on_timer(sh, st, now),
                Some(Proto::V4(v4)) => v4.on_timer(sh, st, now),
                None => {}
            }
        }
    }

    /// The periodic tidy (the driver calls it every few seconds): forgets up to `budget`
    /// registration-rate entries whose buckets are full again and gives back spare
    /// capacity. Changes no decision.
    pub fn tidy(&mut self, now: Instant, budget: usize) {
        self.shared.limiter.tidy(now, budget);
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

    /// The other nodes' listed games of a group (whole
    /// [`crate::wire::directory::GameRecord`]s; a trailing partial record is dropped, and
    /// at most one full list is kept): every list shows them after this node's own.
    /// Empty takes them out again.
    pub fn handle_remote_games(&mut self, mut records: Vec<u8>) {
        let keep = records
            .len()
            .min(self.shared.config.list_limit * GAME_RECORD_LEN);
        records.truncate(keep - keep % GAME_RECORD_LEN);
        self.shared.remote_games = records;
    }

    /// Number of other nodes' games listed after this node's own.
    pub fn remote_games(&self) -> usize {
        self.shared.remote_games.len() / GAME_RECORD_LEN
    }

    /// Changes whenever this node's listed games may have changed.
    pub fn list_generation(&self) -> u64 {
        self.shared.table.generation()
    }

    /// This node's listed games as game records for the other nodes of a group (at most
    /// `max` of them), replacing `out`'s contents.
    pub fn listed_records(&self, max: usize, out: &mut Vec<u8>) {
        out.clear();
        let listed = self
            .shared
            .table
            .iter()
            .filter(|game| game.listed)
            .take(max);
        for game in listed {
            // A stored GAMESTRUCT is exactly GAMESTRUCT_LEN bytes.
            let Ok(gamestruct) = <&[u8; GAMESTRUCT_LEN]>::try_from(game.gamestruct.as_bytes())
            else {
                continue;
            };
            let record = GameRecord {
                game_id: game.game_id,
                port: game.game_port,
                host: game.peer,
                gamestruct,
            };
            let start = out.len();
            out.resize(start + GAME_RECORD_LEN, 0);
            if let Ok(slot) = <&mut [u8; GAME_RECORD_LEN]>::try_from(&mut out[start..]) {
                record.emit(slot);
            }
        }
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
