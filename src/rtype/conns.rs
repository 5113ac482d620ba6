//! The TCP lobby core's record of each connection and its life: accepted, answered, closed
//! (`docs/protocols/tcp-lobby.md`, "Listener and connections", "Reading", "Violations" and
//! "Leaving"; the handshake deadline, the request rate and eviction are lobbyd's own).
//!
//! A connection is Pending from accept to CONNECT_ACK: it is in no party and holds no seat,
//! so a crowd that never says who it is cannot fill the lobby. It has until
//! `--handshake-timeout` after accept to get its CONNECT_ACK, whatever it sends, and the
//! driver may evict the oldest Pending connection at `--max-conns`. Only requests (complete,
//! valid frames) count as activity for `--idle-timeout`; each connection takes at most
//! `request_rate` requests a second (bursts of `request_burst`), and a request over it is a
//! `flood` violation, ignored, so a flooder is dropped at `--max-violations` and the output it
//! can cause its party is bounded.
//!
//! A connection speaks the RFC dialect unless the driver says its first bytes were the
//! upstream client's ([`TcpConns::set_upstream`]). Such a connection browses rooms while
//! Pending, with no handshake deadline (its player reads the room list; only the idle one
//! applies), then Joined (a seat in a room, before its CONNECT_REQ), then Connected.
//!
//! [`TcpConns`] owns the records, the queue of Pending connections and each one's deadline.
//! What a request means for its party is `parties.rs`'s business, and closing a connection
//! that holds a seat is `tcp.rs`'s (its party hears PLAYER_LEFT): this file must not decide
//! either, only keep the records and say what they hold.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use crate::ratelimit::TokenBucket;
use crate::time::wheel::TimerKey;

use super::config::RtypeConfig;
use super::context::{Ctx, TimerEvent};
use super::messages::Output;
use super::room::{RoomId, Slot};
use super::tcp_messages::{ConnId, TcpError, TcpMessage, TcpRequest, Violation};
use super::tcp_stats::{index_of, CloseCause};
use crate::wire::tcp_upstream::Dialect;

/// Where a connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// Accepted, no CONNECT_ACK yet: in no party. `order` is its place in the queue of
    /// Pending connections, oldest first.
    Pending {
        /// Accept order.
        order: u64,
    },
    /// Upstream dialect: JOIN_ROOM_ACK sent, no CONNECT_ACK yet; holds `slot` in `party`.
    Joined {
        /// Its room.
        party: RoomId,
        /// Its seat there.
        slot: Slot,
    },
    /// CONNECT_ACK sent; in `party` at `slot`.
    Connected {
        /// Its party.
        party: RoomId,
        /// Its slot there.
        slot: Slot,
    },
    /// GAME_START of `party` sent; waiting for the client to close (or the linger timer).
    Transferred {
        /// The party whose game it was told about.
        party: RoomId,
    },
}

impl Stage {
    /// The party the connection is in (or was transferred from).
    pub(super) fn party(self) -> Option<RoomId> {
        match self {
            Stage::Pending { .. } => None,
            Stage::Joined { party, .. }
            | Stage::Connected { party, .. }
            | Stage::Transferred { party } => Some(party),
        }
    }
}

/// The core's record of one TCP connection.
#[derive(Debug)]
struct TcpConn {
    stage: Stage,
    /// The dialect it speaks.
    dialect: Dialect,
    /// The peer's address: a party it opens is created by it.
    peer: IpAddr,
    /// When it was accepted (the handshake deadline counts from here).
    opened: Instant,
    /// Its last request (idle timeout).
    last_seen: Instant,
    violations: u32,
    /// Its request rate.
    requests: TokenBucket,
    /// Its one wheel entry: the handshake or idle deadline, whichever is next.
    timer: Option<TimerKey>,
}

impl TcpConn {
    /// When this connection must next be looked at, and why it is closed if nothing happens
    /// by then: before CONNECT_ACK the earlier of the handshake and idle deadlines, after it
    /// (and for an upstream-dialect connection, which browses rooms first) the idle deadline.
    fn deadline(&self, config: &RtypeConfig) -> (Instant, CloseCause) {
        let idle = (self.last_seen + config.idle_timeout, CloseCause::Idle);
        match self.stage {
            Stage::Pending { .. } if self.dialect == Dialect::Upstream => idle,
            Stage::Pending { .. } => {
                let handshake = self.opened + config.party.handshake_timeout;
                if handshake <= idle.0 {
                    (handshake, CloseCause::HandshakeTimeout)
                } else {
                    idle
                }
            }
            Stage::Joined { .. } | Stage::Connected { .. } | Stage::Transferred { .. } => idle,
        }
    }
}

/// What a request from a known connection may do (see [`TcpConns::take_request`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Admission {
    /// The core does not know the connection (closed already): the request is dropped.
    Unknown,
    /// Over the connection's request rate: a `flood` violation, the request ignored.
    Flood,
    /// Within the rate: it counts as activity, and the connection stands here.
    Take(Stage),
}

/// Every TCP lobby connection the core knows, Pending, Connected or Transferred.
#[derive(Default)]
pub(super) struct TcpConns {
    records: HashMap<ConnId, TcpConn>,
    /// Connections without CONNECT_ACK by accept order, oldest first (eviction).
    pending: BTreeMap<u64, ConnId>,
    next_order: u64,
}

impl TcpConns {
    /// Connections the core knows (pending, connected or transferred).
    pub(super) fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the core still serves `conn` (it has not closed it, nor been told it closed).
    pub(super) fn is_open(&self, conn: ConnId) -> bool {
        self.records.contains_key(&conn)
    }

    /// The party a connection is in, once it has its CONNECT_ACK.
    pub(super) fn party_of(&self, conn: ConnId) -> Option<RoomId> {
        self.records.get(&conn).and_then(|c| c.stage.party())
    }

    /// The peer address of a connection.
    pub(super) fn peer(&self, conn: ConnId) -> Option<IpAddr> {
        self.records.get(&conn).map(|record| record.peer)
    }

    /// The connection accepted longest ago that still has no CONNECT_ACK.
    pub(super) fn oldest_pending(&self) -> Option<ConnId> {
        self.pending.values().next().copied()
    }

    /// The driver accepted `conn` from `peer`: Pending, with its handshake deadline armed.
    pub(super) fn open(&mut self, cx: &mut Ctx<'_>, now: Instant, conn: ConnId, peer: SocketAddr) {
        if self.records.contains_key(&conn) {
            return;
        }
        let order = self.next_order;
        self.next_order += 1;
        let party = &cx.config.party;
        let record = TcpConn {
            stage: Stage::Pending { order },
            dialect: Dialect::Rfc,
            peer: peer.ip(),
            opened: now,
            last_seen: now,
            violations: 0,
            requests: TokenBucket::new(
                now,
                party.request_rate,
                Duration::from_secs(1),
                party.request_burst,
            ),
            timer: None,
        };
        let (deadline, _) = record.deadline(cx.config);
        self.records.insert(conn, record);
        self.pending.insert(order, conn);
        cx.stats.tcp.admitted += 1;
        self.arm_deadline(cx, conn, deadline);
    }

    /// A request from `conn` at `now`: within the connection's request rate (DISCONNECT is
    /// always within it) it counts as activity.
    pub(super) fn take_request(
        &mut self,
        now: Instant,
        conn: ConnId,
        request: TcpRequest,
    ) -> Admission {
        let Some(record) = self.records.get_mut(&conn) else {
            return Admission::Unknown;
        };
        if request != TcpRequest::Disconnect && !record.requests.try_take(now, 1) {
            return Admission::Flood;
        }
        record.last_seen = now;
        Admission::Take(record.stage)
    }

    /// Counts a violation of `conn`; returns whether it has now reached `--max-violations`
    /// (the caller closes it). An unknown connection has none.
    pub(super) fn violation(&mut self, cx: &mut Ctx<'_>, conn: ConnId, reason: Violation) -> bool {
        let Some(record) = self.records.get_mut(&conn) else {
            return false;
        };
        record.violations += 1;
        let over = record.violations >= cx.config.party.max_violations;
        if let Some(i) = index_of(&Violation::ALL, reason) {
            cx.stats.tcp.violations[i] += 1;
        }
        over
    }

    /// The dialect `conn` speaks (the RFC's for an unknown one).
    pub(super) fn dialect(&self, conn: ConnId) -> Dialect {
        self.records.get(&conn).map_or(Dialect::Rfc, |r| r.dialect)
    }

    /// The driver found `conn`'s first bytes in the upstream client's dialect. Its handshake
    /// deadline no longer applies (the wheel entry re-arms for the idle one when it fires).
    pub(super) fn set_upstream(&mut self, cx: &mut Ctx<'_>, conn: ConnId) {
        if let Some(record) = self.records.get_mut(&conn) {
            if record.dialect != Dialect::Upstream {
                record.dialect = Dialect::Upstream;
                cx.stats.tcp.upstream_conns += 1;
            }
        }
    }

    /// Upstream-dialect connections not in a room (they hear ROOM_UPDATE), oldest first.
    pub(super) fn upstream_lobby(&self) -> Vec<ConnId> {
        self.pending
            .values()
            .copied()
            .filter(|conn| self.dialect(*conn) == Dialect::Upstream)
            .collect()
    }

    /// The connection joined `party` and holds `slot` there: it leaves the queue of Pending
    /// connections.
    pub(super) fn joined(&mut self, conn: ConnId, party: RoomId, slot: Slot) {
        let Some(record) = self.records.get_mut(&conn) else {
            return;
        };
        if let Stage::Pending { order } = record.stage {
            self.pending.remove(&order);
        }
        record.stage = Stage::Joined { party, slot };
    }

    /// The connection got its CONNECT_ACK in `party` at `slot`: it leaves the queue of
    /// Pending connections (its deadline becomes the idle one when the wheel next fires).
    pub(super) fn connected(&mut self, cx: &mut Ctx<'_>, conn: ConnId, party: RoomId, slot: Slot) {
        let Some(record) = self.records.get_mut(&conn) else {
            return;
        };
        if let Stage::Pending { order } = record.stage {
            self.pending.remove(&order);
        }
        record.stage = Stage::Connected { party, slot };
        cx.stats.tcp.connected += 1;
    }

    /// GAME_START was sent on `conn`.
    pub(super) fn transferred(&mut self, conn: ConnId, party: RoomId) {
        if let Some(record) = self.records.get_mut(&conn) {
            record.stage = Stage::Transferred { party };
        }
    }

    /// Whether `conn` is still the connection transferred from `party` (the driver reuses
    /// the keys of closed connections for newcomers).
    pub(super) fn is_transferred_from(&self, conn: ConnId, party: RoomId) -> bool {
        self.records
            .get(&conn)
            .is_some_and(|r| r.stage == Stage::Transferred { party })
    }

    /// Counts a close by its cause.
    pub(super) fn count_close(cx: &mut Ctx<'_>, cause: CloseCause) {
        if let Some(i) = index_of(&CloseCause::ALL, cause) {
            cx.stats.tcp.closed[i] += 1;
        }
    }

    /// Removes a connection's record, its deadline and its place among the Pending; returns
    /// where it stood and its dialect.
    pub(super) fn remove(&mut self, cx: &mut Ctx<'_>, conn: ConnId) -> Option<(Stage, Dialect)> {
        let record = self.records.remove(&conn)?;
        if let Some(key) = record.timer {
            cx.timers.cancel(key);
        }
        if let Stage::Pending { order } = record.stage {
            self.pending.remove(&order);
        }
        Some((record.stage, record.dialect))
    }

    fn arm_deadline(&mut self, cx: &mut Ctx<'_>, conn: ConnId, deadline: Instant) {
        let key = cx.timers.insert(deadline, TimerEvent::ConnDeadline(conn));
        if let Some(record) = self.records.get_mut(&conn) {
            record.timer = Some(key);
        }
    }

    /// A connection's deadline fired: if the deadline it has now is due, returns why it must
    /// be closed (the caller closes it), else re-arms for it (activity never touches the
    /// wheel).
    pub(super) fn deadline_fired(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        conn: ConnId,
    ) -> Option<CloseCause> {
        let record = self.records.get_mut(&conn)?;
        record.timer = None;
        let (deadline, cause) = record.deadline(cx.config);
        if deadline <= now {
            return Some(cause);
        }
        self.arm_deadline(cx, conn, deadline);
        None
    }

    /// The server is stopping: every connection gets ERROR 0xFF "server shutting down" and
    /// is closed once that is flushed. Nobody gets PLAYER_LEFT: everyone is told the same
    /// thing at once.
    pub(super) fn shutdown(&mut self, cx: &mut Ctx<'_>) {
        let mut conns: Vec<ConnId> = self.records.keys().copied().collect();
        conns.sort();
        for conn in conns {
            cx.send_tcp(conn, TcpMessage::Error(TcpError::ShuttingDown));
            if self.remove(cx, conn).is_some() {
                TcpConns::count_close(cx, CloseCause::Shutdown);
                cx.push(Output::CloseConn { conn });
            }
        }
    }
}
