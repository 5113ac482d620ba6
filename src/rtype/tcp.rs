//! The TCP lobby's handlers: where a connection's request, violation, close or deadline goes
//! (`docs/protocols/tcp-lobby.md`, "Server behaviour", "Violations" and "Leaving"). They join
//! the two TCP components: [`TcpConns`] says where a connection stands, [`Parties`] decides
//! what that means for its party, and closing a connection that holds a seat tells its party
//! (PLAYER_LEFT) before the driver is asked to close it ([`Output::CloseConn`]).
//!
//! Free functions over the components and a [`Ctx`], as the general lobby's handlers are; the
//! façade (`mod.rs`) calls them. They must not decide a party's rules or keep state.

use std::time::Instant;

use super::conns::{Admission, Stage, TcpConns};
use super::context::Ctx;
use super::messages::Output;
use super::parties::{Connect, Parties};
use super::room::RoomId;
use super::rooms::Rooms;
use super::tcp_messages::{ConnClose, ConnId, TcpError, TcpMessage, TcpRequest, Violation};
use super::tcp_stats::CloseCause;

/// The TCP components a handler works on, beside the rooms.
pub(super) struct Tcp<'a> {
    /// The connections' records.
    pub(super) conns: &'a mut TcpConns,
    /// The parties.
    pub(super) parties: &'a mut Parties,
    /// Every room (a party's is one of them).
    pub(super) rooms: &'a mut Rooms,
}

/// A decoded request from `conn`: within the connection's request rate it counts as
/// activity and goes to its party; over it, it is a `flood` violation and ignored
/// (DISCONNECT is always honoured).
pub(super) fn request(
    cx: &mut Ctx<'_>,
    tcp: &mut Tcp<'_>,
    now: Instant,
    conn: ConnId,
    request: TcpRequest,
) {
    let stage = match tcp.conns.take_request(now, conn, request) {
        Admission::Unknown => return,
        Admission::Flood => return violation(cx, tcp, conn, Violation::Flood),
        Admission::Take(stage) => stage,
    };
    match (request, stage) {
        // After GAME_START this is the expected goodbye; nobody is told (no PLAYER_LEFT).
        (TcpRequest::Disconnect, _) => close(cx, tcp, conn, CloseCause::Disconnect),
        (TcpRequest::Connect { name }, Stage::Pending { .. }) => {
            let outcome = tcp.parties.connect(cx, tcp.conns, tcp.rooms, conn, name);
            if outcome == Connect::LobbyFull {
                close(cx, tcp, conn, CloseCause::LobbyFull);
            }
        }
        (TcpRequest::Connect { .. }, _) => violation(cx, tcp, conn, Violation::AlreadyConnected),
        (TcpRequest::Ready(_) | TcpRequest::Start, Stage::Pending { .. }) => {
            violation(cx, tcp, conn, Violation::NotConnected)
        }
        (TcpRequest::Ready(_) | TcpRequest::Start, Stage::Transferred { .. }) => {
            cx.send_tcp(conn, TcpMessage::Error(TcpError::GameStarted))
        }
        (TcpRequest::Ready(ready), Stage::Connected { party, slot }) => {
            tcp.parties.ready(cx, conn, party, slot, ready)
        }
        (TcpRequest::Start, Stage::Connected { party, .. }) => {
            tcp.parties.start_request(cx, now, conn, party)
        }
    }
}

/// A malformed or out-of-place message from `conn`: counted, ignored, and the connection is
/// closed once it has made `--max-violations` of them. It is not activity.
pub(super) fn violation(cx: &mut Ctx<'_>, tcp: &mut Tcp<'_>, conn: ConnId, reason: Violation) {
    if tcp.conns.violation(cx, conn, reason) {
        close(cx, tcp, conn, CloseCause::Violations);
    }
}

/// The driver closed `conn` (peer closed, socket error, slow reader, evicted).
pub(super) fn closed(cx: &mut Ctx<'_>, tcp: &mut Tcp<'_>, conn: ConnId, why: ConnClose) {
    if !tcp.conns.is_open(conn) {
        return;
    }
    let cause = match why {
        ConnClose::PeerClosed => CloseCause::PeerClosed,
        ConnClose::Error => CloseCause::Error,
        ConnClose::SlowReader => CloseCause::SlowReader,
        ConnClose::Evicted => CloseCause::Evicted,
    };
    TcpConns::count_close(cx, cause);
    forget(cx, tcp, conn);
}

/// A connection's deadline fired: closed if it is due (handshake or idle).
pub(super) fn deadline(cx: &mut Ctx<'_>, tcp: &mut Tcp<'_>, now: Instant, conn: ConnId) {
    if let Some(cause) = tcp.conns.deadline_fired(cx, now, conn) {
        close(cx, tcp, conn, cause);
    }
}

/// A started party's linger time is over: the connections its clients kept open are closed
/// (no PLAYER_LEFT).
pub(super) fn linger(cx: &mut Ctx<'_>, tcp: &mut Tcp<'_>, id: RoomId) {
    for conn in tcp.parties.linger_over(tcp.conns, id) {
        close(cx, tcp, conn, CloseCause::Linger);
    }
}

/// A room is being reaped: if it was a party's, its players' hashes are free again and the
/// connections still open are closed.
pub(super) fn reaped(cx: &mut Ctx<'_>, tcp: &mut Tcp<'_>, id: RoomId) {
    for conn in tcp.parties.reaped(cx, tcp.conns, id) {
        close(cx, tcp, conn, CloseCause::Linger);
    }
}

/// Closes `conn` on the core's initiative: the driver flushes what is queued, then closes.
/// Its party hears PLAYER_LEFT first if it had a slot.
fn close(cx: &mut Ctx<'_>, tcp: &mut Tcp<'_>, conn: ConnId, cause: CloseCause) {
    if !tcp.conns.is_open(conn) {
        return;
    }
    TcpConns::count_close(cx, cause);
    forget(cx, tcp, conn);
    cx.push(Output::CloseConn { conn });
}

/// Removes a connection; if it had a slot, its party hears PLAYER_LEFT and goes on without
/// it.
fn forget(cx: &mut Ctx<'_>, tcp: &mut Tcp<'_>, conn: ConnId) {
    if let Some(Stage::Connected { party, slot }) = tcp.conns.remove(cx, conn) {
        tcp.parties.member_left(cx, tcp.rooms, party, slot);
    }
}
