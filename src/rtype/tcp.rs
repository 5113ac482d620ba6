//! The TCP lobby's handlers: where a connection's request, violation, close or deadline goes
//! (`docs/protocols/tcp-lobby.md`, "Server behaviour", "Violations" and "Leaving"). They join
//! the two TCP components: [`TcpConns`] says where a connection stands, [`Parties`] decides
//! what that means for its party, and closing a connection that holds a seat tells its party
//! (PLAYER_LEFT) before the driver is asked to close it ([`Output::CloseConn`]).
//!
//! A connection of the upstream client's dialect (`docs/protocols/tcp-lobby-upstream.md`)
//! goes through [`upstream_request`]: rooms first (list, create, join), then the party; those
//! not in a room hear ROOM_UPDATE whenever a room's seats change.
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
use crate::wire::tcp_upstream::{Dialect, JoinStatus, RoomRecord};

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
    if tcp.conns.dialect(conn) == Dialect::Upstream {
        return upstream_request(cx, tcp, now, conn, request, stage);
    }
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
        // The upstream dialect's requests never come from an RFC connection (its frames are
        // cut as the RFC's); out of place if they did.
        (
            TcpRequest::ListRooms
            | TcpRequest::CreateRoom { .. }
            | TcpRequest::JoinRoom(_)
            | TcpRequest::ToggleReady { .. },
            _,
        ) => violation(cx, tcp, conn, Violation::WrongDirection),
        // A Joined stage exists only in the upstream dialect.
        (TcpRequest::Ready(_) | TcpRequest::Start, Stage::Joined { .. }) => {
            violation(cx, tcp, conn, Violation::NotConnected)
        }
    }
}

/// A request from a connection of the upstream dialect, at its stage. Room requests come
/// before JOIN_ROOM_ACK, party requests after it; out of place, each is a violation
/// (`already_connected` for a room request from a room, `not_connected` for a party request
/// before its seat or its CONNECT_ACK), as upstream ignores them.
fn upstream_request(
    cx: &mut Ctx<'_>,
    tcp: &mut Tcp<'_>,
    now: Instant,
    conn: ConnId,
    request: TcpRequest,
    stage: Stage,
) {
    match (request, stage) {
        // Before GAME_START a player leaves its room; after it, the client's goodbye.
        (TcpRequest::Disconnect, _) => close(cx, tcp, conn, CloseCause::Disconnect),
        (TcpRequest::ListRooms, Stage::Pending { .. }) => cx.send_tcp(conn, TcpMessage::RoomList),
        (TcpRequest::CreateRoom { name }, Stage::Pending { .. }) => {
            let room = tcp
                .parties
                .create_room(cx, tcp.conns, tcp.rooms, conn, name);
            if room.is_none() {
                cx.stats.tcp.refused("create_refused");
            }
            cx.send_tcp(conn, TcpMessage::RoomCreated(room));
        }
        (TcpRequest::JoinRoom(room), Stage::Pending { .. }) => {
            let status = tcp.parties.join_room(cx, tcp.conns, tcp.rooms, conn, room);
            match status {
                JoinStatus::Full => cx.stats.tcp.refused("room_full"),
                JoinStatus::NotFound => cx.stats.tcp.refused("room_not_found"),
                JoinStatus::InGame => cx.stats.tcp.refused("room_in_game"),
                JoinStatus::Joined | JoinStatus::Unknown(_) => {}
            }
            cx.send_tcp(conn, TcpMessage::JoinResult(status));
            if status == JoinStatus::Joined {
                room_changed(cx, tcp, RoomId(room));
            }
        }
        (TcpRequest::ListRooms | TcpRequest::CreateRoom { .. } | TcpRequest::JoinRoom(_), _) => {
            violation(cx, tcp, conn, Violation::AlreadyConnected)
        }
        (TcpRequest::Connect { name }, Stage::Joined { party, slot }) => tcp
            .parties
            .upstream_connect(cx, tcp.conns, conn, party, slot, name),
        (TcpRequest::ToggleReady { hash }, Stage::Connected { party, slot }) => {
            tcp.parties.toggle_ready(cx, tcp.rooms, party, slot, hash)
        }
        (TcpRequest::Start, Stage::Connected { party, .. }) => {
            if !tcp.parties.upstream_start(cx, now, conn, party) {
                cx.stats.tcp.refused("start_refused");
            }
        }
        // After GAME_START: nothing left to do in the lobby, and nothing to say.
        (_, Stage::Transferred { .. }) => cx.stats.tcp.refused("game_started"),
        (TcpRequest::Connect { .. }, Stage::Connected { .. }) => {
            violation(cx, tcp, conn, Violation::AlreadyConnected)
        }
        // The RFC's READY_REQ never comes from this dialect's reader.
        (TcpRequest::Ready(_), _) => violation(cx, tcp, conn, Violation::WrongDirection),
        (
            TcpRequest::Connect { .. } | TcpRequest::ToggleReady { .. } | TcpRequest::Start,
            Stage::Pending { .. } | Stage::Joined { .. },
        ) => violation(cx, tcp, conn, Violation::NotConnected),
    }
}

/// Room `id`'s seats changed: the upstream-dialect connections not in a room hear its
/// ROOM_UPDATE (players 0 once it is gone, named as it was).
fn room_changed(cx: &mut Ctx<'_>, tcp: &Tcp<'_>, id: RoomId) {
    if let Some(record) = tcp.parties.room_record(id) {
        announce_room(cx, tcp, record);
    }
}

fn announce_room(cx: &mut Ctx<'_>, tcp: &Tcp<'_>, record: RoomRecord) {
    for conn in tcp.conns.upstream_lobby() {
        cx.send_tcp(conn, TcpMessage::RoomUpdate(record));
    }
}

/// The driver found `conn`'s first bytes in the upstream client's dialect.
pub(super) fn upstream(cx: &mut Ctx<'_>, tcp: &mut Tcp<'_>, conn: ConnId) {
    tcp.conns.set_upstream(cx, conn);
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
/// it. In the upstream dialect those not in a room hear the room's ROOM_UPDATE, and a room
/// the connection created and never joined goes.
fn forget(cx: &mut Ctx<'_>, tcp: &mut Tcp<'_>, conn: ConnId) {
    let Some((stage, dialect)) = tcp.conns.remove(cx, conn) else {
        return;
    };
    match stage {
        Stage::Connected { party, slot } | Stage::Joined { party, slot } => {
            let before = tcp.parties.room_record(party);
            tcp.parties.member_left(cx, tcp.rooms, party, slot);
            if let Some(before) = before {
                // Gone with its last player, it is announced empty.
                let after = tcp.parties.room_record(party).unwrap_or(RoomRecord {
                    players: 0,
                    ..before
                });
                announce_room(cx, tcp, after);
            }
        }
        Stage::Pending { .. } if dialect == Dialect::Upstream => {
            tcp.parties.release_creator(cx, tcp.rooms, conn)
        }
        Stage::Pending { .. } | Stage::Transferred { .. } => {}
    }
}
