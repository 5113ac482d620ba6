//! Unit tests of the upstream client's TCP dialect in the core
//! (`docs/protocols/tcp-lobby-upstream.md`, "Server behaviour"): what the loopback test does
//! not reach cheaply. Same virtual clock and harness as `parties.rs`.

use super::harness::{name, to, Harness};
use super::parties::{closed, config};
use crate::rtype::{
    ConnClose, ConnId, RoomId, RtypeConfig, TcpMessage, TcpRequest, UPSTREAM_REFUSALS,
};
use crate::wire::tcp_upstream::{JoinStatus, MAX_LIST_RECORDS};

/// Opens `conn` as a connection of the upstream dialect.
fn open_upstream(h: &mut Harness, conn: usize) {
    h.open(conn);
    h.lobby.handle_tcp_upstream(ConnId(conn));
    assert!(h.drain().is_empty());
}

/// CREATE_ROOM_REQ from `conn`: the room id.
fn create(h: &mut Harness, conn: usize, room: &str) -> RoomId {
    let out = h.req(conn, TcpRequest::CreateRoom { name: name(room) });
    match to(&out, conn)[..] {
        [TcpMessage::RoomCreated(Some(id))] => id,
        ref other => panic!("{other:?}"),
    }
}

fn refusals(h: &Harness, reason: &str) -> u64 {
    let i = UPSTREAM_REFUSALS.iter().position(|r| *r == reason).unwrap();
    h.lobby.stats.tcp.upstream_refused[i]
}

#[test]
fn a_created_room_is_kept_for_its_creator_and_goes_with_it() {
    let mut h = Harness::new(config());
    open_upstream(&mut h, 1);
    let first = create(&mut h, 1, "one");
    // Creating another lets the first, never joined, go.
    let second = create(&mut h, 1, "two");
    assert!(h.lobby.party(first).is_none());
    let rooms: Vec<u32> = h.lobby.upstream_rooms().map(|r| r.id).collect();
    assert_eq!(rooms, [second.0]);
    // The creator closes: its empty room goes too.
    h.lobby.handle_tcp_closed(ConnId(1), ConnClose::PeerClosed);
    assert_eq!(h.lobby.upstream_rooms().count(), 0);
    assert_eq!(h.lobby.room_count(), 0);
}

#[test]
fn the_list_holds_upstream_rooms_only_and_at_most_52() {
    let mut h = Harness::new(RtypeConfig {
        max_rooms: 60,
        ..config()
    });
    // An RFC party is no room of this dialect.
    h.join(100, "Rita");
    for conn in 1..=55 {
        open_upstream(&mut h, conn);
        create(&mut h, conn, &format!("r{conn}"));
    }
    let ids: Vec<u32> = h.lobby.upstream_rooms().map(|r| r.id).collect();
    assert_eq!(ids.len(), MAX_LIST_RECORDS);
    assert_eq!(
        ids.first(),
        Some(&2),
        "oldest first, the RFC party (1) left out"
    );
    // A room past --max-rooms is refused, and counted.
    for conn in 56..=60 {
        open_upstream(&mut h, conn);
        h.req(conn, TcpRequest::CreateRoom { name: name("late") });
    }
    assert_eq!(h.lobby.room_count(), 60);
    assert_eq!(refusals(&h, "create_refused"), 1);
}

#[test]
fn joined_seats_are_announced_only_once_connected_and_leaves_update_the_lobby() {
    let mut h = Harness::new(config());
    for conn in 1..=3 {
        open_upstream(&mut h, conn);
    }
    let room = create(&mut h, 1, "probe");
    // A join tells the others not in a room; the joiner hears the party from now on.
    let out = h.req(1, TcpRequest::JoinRoom(room.0));
    assert_eq!(to(&out, 1), [TcpMessage::JoinResult(JoinStatus::Joined)]);
    let update = |players| match to(&out, 2)[..] {
        [TcpMessage::RoomUpdate(record)] => assert_eq!(record.players, players),
        ref other => panic!("{other:?}"),
    };
    update(1);
    h.req(2, TcpRequest::JoinRoom(room.0));
    let out = h.req(2, TcpRequest::Connect { name: name("Bob") });
    assert!(matches!(
        to(&out, 2)[0],
        TcpMessage::ConnectAck { slot: 2, .. }
    ));
    // The seat held by 1, not connected, is not in Bob's roster, but 1 hears Bob.
    assert_eq!(to(&out, 2).len(), 2, "{out:?}");
    assert!(matches!(
        to(&out, 1)[..],
        [TcpMessage::PlayerJoin { slot: 2, .. }]
    ));
    // 1 leaves before connecting: nobody hears PLAYER_LEFT; 3 hears the room with one seat.
    let out = h.req(1, TcpRequest::Disconnect);
    assert_eq!(closed(&out), [1]);
    assert!(to(&out, 2).is_empty(), "{out:?}");
    match to(&out, 3)[..] {
        [TcpMessage::RoomUpdate(record)] => assert_eq!((record.id, record.players), (room.0, 1)),
        ref other => panic!("{other:?}"),
    }
    // Bob, the last, leaves: the room goes, announced with no one in it.
    let out = h.req(2, TcpRequest::Disconnect);
    match to(&out, 3)[..] {
        [TcpMessage::RoomUpdate(record)] => assert_eq!(record.players, 0),
        ref other => panic!("{other:?}"),
    }
    assert_eq!(h.lobby.room_count(), 0);
    let out = h.req(3, TcpRequest::JoinRoom(room.0));
    assert_eq!(to(&out, 3), [TcpMessage::JoinResult(JoinStatus::NotFound)]);
    assert_eq!(refusals(&h, "room_not_found"), 1);
}

#[test]
fn a_full_room_refuses_and_an_rfc_connect_never_lands_in_a_room() {
    let mut h = Harness::new(RtypeConfig {
        max_players: 2,
        ..config()
    });
    for conn in 1..=3 {
        open_upstream(&mut h, conn);
    }
    let room = create(&mut h, 1, "pair");
    h.req(1, TcpRequest::JoinRoom(room.0));
    h.req(2, TcpRequest::JoinRoom(room.0));
    let out = h.req(3, TcpRequest::JoinRoom(room.0));
    assert_eq!(to(&out, 3), [TcpMessage::JoinResult(JoinStatus::Full)]);
    // Two held seats of two, yet an RFC player goes to a party of its own.
    h.req(1, TcpRequest::Disconnect);
    h.join(9, "Rita");
    let party = h.lobby.party_of(ConnId(9)).unwrap();
    assert_ne!(party, room);
    assert_eq!(refusals(&h, "room_full"), 1);
}
