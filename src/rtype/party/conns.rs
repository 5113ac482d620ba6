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
//! can cause its party is bounded. What a request means for its party is `party.rs`'s
//! business; this file must not decide it, only route it.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use crate::ratelimit::TokenBucket;
use crate::time::wheel::TimerKey;

use super::super::room::{RoomId, Slot};
use super::super::{Output, RtypeConfig, RtypeCore, TimerEvent};
use super::messages::{ConnClose, ConnId, TcpError, TcpMessage, TcpRequest, Violation};
use super::stats::{index_of, CloseCause};

/// Where a connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// Accepted, no CONNECT_ACK yet: in no party. `order` is its place in the queue of
    /// Pending connections, oldest first.
    Pending {
        /// Accept order.
        order: u64,
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
            Stage::Connected { party, .. } | Stage::Transferred { party } => Some(party),
        }
    }
}

/// The core's record of one TCP connection.
#[derive(Debug)]
pub(in crate::rtype) struct TcpConn {
    pub(super) stage: Stage,
    /// The peer's address: a party it opens is created by it.
    pub(super) peer: IpAddr,
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
    /// the idle deadline.
    fn deadline(&self, config: &RtypeConfig) -> (Instant, CloseCause) {
        let idle = (self.last_seen + config.idle_timeout, CloseCause::Idle);
        match self.stage {
            Stage::Pending { .. } => {
                let handshake = self.opened + config.party.handshake_timeout;
                if handshake <= idle.0 {
                    (handshake, CloseCause::HandshakeTimeout)
                } else {
                    idle
                }
            }
            Stage::Connected { .. } | Stage::Transferred { .. } => idle,
        }
    }
}

impl RtypeCore {
    /// TCP lobby connections the core knows (pending, connected or transferred).
    pub fn tcp_conn_count(&self) -> usize {
        self.tcp.conns.len()
    }

    /// Whether the core still serves `conn` (it has not closed it, nor been told it closed):
    /// the driver stops handing it input once this is false.
    pub fn tcp_conn_is_open(&self, conn: ConnId) -> bool {
        self.tcp.conns.contains_key(&conn)
    }

    /// The party a connection is in, once it has its CONNECT_ACK.
    pub fn party_of(&self, conn: ConnId) -> Option<RoomId> {
        self.tcp.conns.get(&conn).and_then(|c| c.stage.party())
    }

    /// The connection accepted longest ago that still has no CONNECT_ACK: at `--max-conns`
    /// the driver closes it (reporting [`ConnClose::Evicted`]) to make room for a newcomer.
    pub fn oldest_pending_conn(&self) -> Option<ConnId> {
        self.tcp.pending.values().next().copied()
    }

    /// The driver accepted a connection from `peer`. It joins no party yet: that waits for
    /// its CONNECT_REQ, which must come within `--handshake-timeout`.
    pub fn handle_tcp_open(&mut self, now: Instant, conn: ConnId, peer: SocketAddr) {
        if self.tcp.conns.contains_key(&conn) {
            return;
        }
        let order = self.tcp.next_order;
        self.tcp.next_order += 1;
        let party = &self.config.party;
        let record = TcpConn {
            stage: Stage::Pending { order },
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
        let (deadline, _) = record.deadline(&self.config);
        self.tcp.conns.insert(conn, record);
        self.tcp.pending.insert(order, conn);
        self.stats.tcp.admitted += 1;
        self.arm_deadline(conn, deadline);
    }

    /// A decoded request from `conn`: within the connection's request rate it counts as
    /// activity and goes to its party; over it, it is a `flood` violation and ignored
    /// (DISCONNECT is always honoured).
    pub fn handle_tcp_request(&mut self, now: Instant, conn: ConnId, request: TcpRequest) {
        let Some(record) = self.tcp.conns.get_mut(&conn) else {
            return;
        };
        if request != TcpRequest::Disconnect && !record.requests.try_take(now, 1) {
            self.handle_tcp_violation(conn, Violation::Flood);
            return;
        }
        record.last_seen = now;
        let stage = record.stage;
        match (request, stage) {
            // After GAME_START this is the expected goodbye; nobody is told (no PLAYER_LEFT).
            (TcpRequest::Disconnect, _) => self.close_conn(conn, CloseCause::Disconnect),
            (TcpRequest::Connect { name }, Stage::Pending { .. }) => self.connect(conn, name),
            (TcpRequest::Connect { .. }, _) => {
                self.handle_tcp_violation(conn, Violation::AlreadyConnected)
            }
            (TcpRequest::Ready(_) | TcpRequest::Start, Stage::Pending { .. }) => {
                self.handle_tcp_violation(conn, Violation::NotConnected)
            }
            (TcpRequest::Ready(_) | TcpRequest::Start, Stage::Transferred { .. }) => {
                self.send_tcp(conn, TcpMessage::Error(TcpError::GameStarted))
            }
            (TcpRequest::Ready(ready), Stage::Connected { party, slot }) => {
                self.ready(conn, party, slot, ready)
            }
            (TcpRequest::Start, Stage::Connected { party, .. }) => {
                self.start_request(now, conn, party)
            }
        }
    }

    /// A malformed or out-of-place message from `conn`: counted, ignored, and the connection
    /// is closed once it has made `--max-violations` of them. It is not activity.
    pub fn handle_tcp_violation(&mut self, conn: ConnId, reason: Violation) {
        let Some(record) = self.tcp.conns.get_mut(&conn) else {
            return;
        };
        record.violations += 1;
        let over = record.violations >= self.config.party.max_violations;
        if let Some(i) = index_of(&Violation::ALL, reason) {
            self.stats.tcp.violations[i] += 1;
        }
        if over {
            self.close_conn(conn, CloseCause::Violations);
        }
    }

    /// The driver closed `conn` (peer closed, socket error, slow reader, evicted).
    pub fn handle_tcp_closed(&mut self, conn: ConnId, why: ConnClose) {
        if !self.tcp.conns.contains_key(&conn) {
            return;
        }
        let cause = match why {
            ConnClose::PeerClosed => CloseCause::PeerClosed,
            ConnClose::Error => CloseCause::Error,
            ConnClose::SlowReader => CloseCause::SlowReader,
            ConnClose::Evicted => CloseCause::Evicted,
        };
        self.count_close(cause);
        self.forget_conn(conn);
    }

    /// The connection got its CONNECT_ACK in `party` at `slot`: it leaves the queue of
    /// Pending connections (its deadline becomes the idle one when the wheel next fires).
    pub(super) fn conn_connected(&mut self, conn: ConnId, party: RoomId, slot: Slot) {
        let Some(record) = self.tcp.conns.get_mut(&conn) else {
            return;
        };
        if let Stage::Pending { order } = record.stage {
            self.tcp.pending.remove(&order);
        }
        record.stage = Stage::Connected { party, slot };
        self.stats.tcp.connected += 1;
    }

    /// GAME_START was sent on `conn`.
    pub(super) fn conn_transferred(&mut self, conn: ConnId, party: RoomId) {
        if let Some(record) = self.tcp.conns.get_mut(&conn) {
            record.stage = Stage::Transferred { party };
        }
    }

    /// Whether `conn` is still the connection transferred from `party` (the driver reuses
    /// the keys of closed connections for newcomers).
    pub(super) fn is_transferred_from(&self, conn: ConnId, party: RoomId) -> bool {
        self.tcp
            .conns
            .get(&conn)
            .is_some_and(|r| r.stage == Stage::Transferred { party })
    }

    pub(super) fn count_close(&mut self, cause: CloseCause) {
        if let Some(i) = index_of(&CloseCause::ALL, cause) {
            self.stats.tcp.closed[i] += 1;
        }
    }

    /// Closes `conn` on the core's initiative: the driver flushes what is queued, then
    /// closes. Its party hears PLAYER_LEFT if it had a slot.
    pub(super) fn close_conn(&mut self, conn: ConnId, cause: CloseCause) {
        if !self.tcp.conns.contains_key(&conn) {
            return;
        }
        self.count_close(cause);
        self.forget_conn(conn);
        self.outputs.push_back(Output::CloseConn { conn });
    }

    /// Forgets a connection and tells the driver to close it, without a word to its party
    /// (shutdown: everyone is told the same thing at once).
    pub(super) fn drop_record(&mut self, conn: ConnId, cause: CloseCause) {
        if self.remove_record(conn).is_some() {
            self.count_close(cause);
            self.outputs.push_back(Output::CloseConn { conn });
        }
    }

    /// Removes a connection's record, its deadline and its place among the Pending.
    fn remove_record(&mut self, conn: ConnId) -> Option<TcpConn> {
        let record = self.tcp.conns.remove(&conn)?;
        if let Some(key) = record.timer {
            self.timers.cancel(key);
        }
        if let Stage::Pending { order } = record.stage {
            self.tcp.pending.remove(&order);
        }
        Some(record)
    }

    /// Removes a connection; if it had a slot, its party hears PLAYER_LEFT and goes on
    /// without it.
    fn forget_conn(&mut self, conn: ConnId) {
        if let Some(Stage::Connected { party, slot }) = self.remove_record(conn).map(|r| r.stage) {
            self.member_left(party, slot);
        }
    }

    fn arm_deadline(&mut self, conn: ConnId, deadline: Instant) {
        let key = self.timers.insert(deadline, TimerEvent::ConnDeadline(conn));
        if let Some(record) = self.tcp.conns.get_mut(&conn) {
            record.timer = Some(key);
        }
    }

    /// A connection's deadline fired: close it if the deadline it has now is due, else
    /// re-arm for it (activity never touches the wheel).
    pub(in crate::rtype) fn conn_deadline(&mut self, now: Instant, conn: ConnId) {
        let Some(record) = self.tcp.conns.get_mut(&conn) else {
            return;
        };
        record.timer = None;
        let (deadline, cause) = record.deadline(&self.config);
        if deadline <= now {
            self.close_conn(conn, cause);
        } else {
            self.arm_deadline(conn, deadline);
        }
    }
}

#[cfg(test)]
mod tests;
