//! Unit tests of the R-Type core's rooms (the UDP room lobby and the instances), driven with a
//! virtual clock and a fake driver.

use super::super::*;
use super::harness::Harness;
use crate::ratelimit::PerIpConfig;
use std::net::Ipv4Addr;
use std::time::Duration;

fn addr(last: u8, port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::new(127, 0, 0, last), port))
}

fn config() -> RtypeConfig {
    RtypeConfig {
        max_rooms: 3,
        ..RtypeConfig::default()
    }
}

fn msgs_to(outputs: &[Output], to: SocketAddr) -> Vec<InstanceMessage> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Instance { to: t, msg, .. } if *t == to => Some(*msg),
            _ => None,
        })
        .collect()
}

#[test]
fn list_is_empty_then_shows_created_room() {
    let mut h = Harness::new(config());
    let out = h.lobby(addr(1, 5000), 9, LobbyRequest::ListRooms);
    assert_eq!(
        out,
        vec![Output::Lobby {
            to: addr(1, 5000),
            seq: 9,
            dialect: Dialect::Seed,
            reply: LobbyReply::RoomList
        }]
    );
    assert_eq!(h.lobby.room_list().count(), 0);
    let (room, port) = h.create(addr(1, 5000));
    assert_eq!(room, RoomId(1));
    let list: Vec<RoomInfo> = h.lobby.room_list().collect();
    assert_eq!(
        list,
        vec![RoomInfo {
            room,
            player_count: 1, // the creator's reservation
            max_players: 4,
            port,
            state: RoomState::Waiting,
            name: UNNAMED_ROOM,
            password_protected: false,
        }]
    );
}

#[test]
fn join_failures_by_reason() {
    let mut h = Harness::new(RtypeConfig {
        max_players: 1,
        ..config()
    });
    let failed = |out: Vec<Output>| match out.as_slice() {
        [Output::Lobby {
            reply: LobbyReply::JoinFailed(reason),
            ..
        }] => *reason,
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(
        failed(h.lobby(addr(2, 1), 1, LobbyRequest::JoinRoom(0))),
        JoinFailure::RoomZero
    );
    assert_eq!(
        failed(h.lobby(addr(2, 1), 1, LobbyRequest::JoinRoom(99))),
        JoinFailure::NoSuchRoom
    );
    let (room, _) = h.create(addr(1, 1));
    // The creator's reservation holds the only seat.
    assert_eq!(
        failed(h.lobby(addr(2, 1), 1, LobbyRequest::JoinRoom(room.0))),
        JoinFailure::Full
    );
    h.hello(room, addr(1, 2));
    h.instance(room, addr(1, 2), InstanceRequest::Start);
    h.advance(Duration::from_secs(5));
    assert_eq!(
        h.lobby.room(room).map(|r| r.state),
        Some(RoomState::Playing)
    );
    assert_eq!(
        failed(h.lobby(addr(2, 1), 1, LobbyRequest::JoinRoom(room.0))),
        JoinFailure::NotJoinable
    );
    assert_eq!(h.lobby.stats.join_failures(JoinFailure::Full), 1);
}

#[test]
fn max_rooms_and_no_port() {
    let mut h = Harness::new(config());
    for i in 0..3 {
        h.create(addr(10 + i, 1));
    }
    let out = h.lobby(addr(20, 1), 4, LobbyRequest::CreateRoom);
    assert!(matches!(
        out.as_slice(),
        [Output::Lobby {
            seq: 4,
            reply: LobbyReply::JoinFailed(JoinFailure::MaxRooms),
            ..
        }]
    ));
    let mut h = Harness::new(config());
    h.ports_left = 0;
    let out = h.lobby(addr(20, 1), 4, LobbyRequest::CreateRoom);
    assert!(matches!(
        out.as_slice(),
        [Output::Lobby {
            reply: LobbyReply::JoinFailed(JoinFailure::NoInstancePort),
            ..
        }]
    ));
    assert_eq!(h.lobby.room_count(), 0);
    // The failed id is not reused.
    h.ports_left = 1;
    assert_eq!(h.create(addr(20, 1)).0, RoomId(2));
}

#[test]
fn rate_limit_drops_requests() {
    let mut h = Harness::new(RtypeConfig {
        rate: PerIpConfig {
            rate: 1,
            burst: 2,
            ..RtypeConfig::default().rate
        },
        ..config()
    });
    let replies: usize = (0..10)
        .map(|_| h.lobby(addr(1, 1), 0, LobbyRequest::ListRooms).len())
        .sum();
    assert_eq!(replies, 2);
    assert_eq!(h.lobby.stats.rate_limited, 8);
    // Another IP is not affected.
    assert_eq!(h.lobby(addr(2, 1), 0, LobbyRequest::ListRooms).len(), 1);
}

#[test]
fn reply_bytes_budget_bounds_amplification() {
    let mut h = Harness::new(RtypeConfig {
        max_rooms: 100,
        max_rooms_per_ip: 100,
        rate: PerIpConfig {
            rate: 1000,
            burst: 1000,
            byte_rate: 2000,
            byte_burst: 2000,
            ..RtypeConfig::default().rate
        },
        ..config()
    });
    for i in 0..60 {
        h.create(addr(100 + (i % 50), 1));
    }
    // Each list is 12 + 2 + 60*13 = 794 bytes: two fit the 2000-byte budget, not three.
    let replies: usize = (0..5)
        .map(|_| h.lobby(addr(1, 1), 0, LobbyRequest::ListRooms).len())
        .sum();
    assert_eq!(replies, 2);
    assert_eq!(h.lobby.stats.reply_budget_exceeded, 3);
}

#[test]
fn seat_reservation_prevents_fifth_player() {
    let mut h = Harness::new(config());
    let (room, _) = h.create(addr(1, 1));
    for i in 2..=4 {
        let out = h.lobby(addr(i, 1), 1, LobbyRequest::JoinRoom(room.0));
        assert!(matches!(
            out[0],
            Output::Lobby {
                reply: LobbyReply::JoinSuccess { .. },
                ..
            }
        ));
    }
    // Nobody said HELLO yet, but all four seats are held.
    assert_eq!(h.lobby.room_list().next().map(|r| r.player_count), Some(4));
    let stranger = h.hello(room, addr(9, 1));
    assert_eq!(
        msgs_to(&stranger, addr(9, 1)),
        vec![InstanceMessage::Reject(RejectReason::Full)]
    );
    for i in 1..=4 {
        let out = h.hello(room, addr(i, 50));
        assert!(matches!(
            msgs_to(&out, addr(i, 50))[0],
            InstanceMessage::Welcome { slot, .. } if slot == i
        ));
    }
    assert_eq!(h.lobby.room(room).map(|r| r.member_count()), Some(4));
}

#[test]
fn reservations_expire_and_empty_room_is_reaped() {
    let mut h = Harness::new(config());
    let (room, _) = h.create(addr(1, 1));
    assert!(h.advance(Duration::from_secs(9)).is_empty());
    assert_eq!(
        h.lobby.room(room).map(|r| r.state),
        Some(RoomState::Waiting)
    );
    h.advance(Duration::from_secs(1));
    // Reservation gone, no member: Finished but still listed (socket still live).
    assert_eq!(
        h.lobby.room(room).map(|r| r.state),
        Some(RoomState::Finished)
    );
    assert_eq!(h.lobby.room_list().count(), 1);
    let out = h.advance(Duration::from_secs(2));
    assert_eq!(out, vec![Output::CloseInstance { room }]);
    assert_eq!(h.lobby.room_list().count(), 0);
    assert_eq!(h.lobby.room_count(), 0);
}

#[test]
fn countdown_announces_each_second_then_starts() {
    let mut h = Harness::new(config());
    let (room, _) = h.create(addr(1, 1));
    h.hello(room, addr(1, 2));
    h.hello(room, addr(2, 2));
    // Not the owner: ignored.
    assert!(h
        .instance(room, addr(2, 2), InstanceRequest::Start)
        .is_empty());
    let out = h.instance(room, addr(1, 2), InstanceRequest::Start);
    assert_eq!(
        msgs_to(&out, addr(2, 2)),
        vec![InstanceMessage::Countdown(5)]
    );
    let mut seen = vec![];
    for _ in 0..5 {
        let out = h.advance(Duration::from_millis(999));
        assert!(out.is_empty(), "tick came early: {out:?}");
        let out = h.advance(Duration::from_millis(1));
        seen.extend(msgs_to(&out, addr(1, 2)));
    }
    use InstanceMessage::*;
    assert_eq!(
        seen,
        vec![
            Countdown(4),
            Countdown(3),
            Countdown(2),
            Countdown(1),
            Started
        ]
    );
    assert_eq!(
        h.lobby.room(room).map(|r| r.state),
        Some(RoomState::Playing)
    );
    let late = h.hello(room, addr(3, 2));
    assert_eq!(
        msgs_to(&late, addr(3, 2)),
        vec![InstanceMessage::Reject(RejectReason::NotJoinable)]
    );
}

#[test]
fn relay_targets_and_non_members() {
    let mut h = Harness::new(config());
    let (room, _) = h.create(addr(1, 1));
    for i in 1..=3 {
        h.hello(room, addr(i, 2));
    }
    let mut dest = Vec::new();
    let now = h.now;
    assert_eq!(
        h.lobby.relay_data(now, room, addr(2, 2), 0xFF, &mut dest),
        Some(2)
    );
    assert_eq!(dest, vec![addr(1, 2), addr(3, 2)]);
    assert_eq!(
        h.lobby.relay_data(now, room, addr(2, 2), 3, &mut dest),
        Some(2)
    );
    assert_eq!(dest, vec![addr(3, 2)]);
    assert_eq!(
        h.lobby.relay_data(now, room, addr(2, 2), 2, &mut dest),
        None
    );
    assert_eq!(
        h.lobby.relay_data(now, room, addr(2, 2), 4, &mut dest),
        None
    );
    assert_eq!(
        h.lobby.relay_data(now, room, addr(9, 2), 0xFF, &mut dest),
        None
    );
    assert!(dest.is_empty());
    assert_eq!(h.lobby.stats.ignores(InstanceIgnore::NotMember), 1);
    assert_eq!(h.lobby.stats.ignores(InstanceIgnore::BadTarget), 2);
}

#[test]
fn idle_member_removed_and_owner_passes() {
    let mut h = Harness::new(config());
    let (room, _) = h.create(addr(1, 1));
    h.hello(room, addr(1, 2));
    h.advance(Duration::from_secs(10));
    h.hello(room, addr(2, 2));
    // At 30 s the first member has been silent for 30 s; the second for 20 s.
    let out = h.advance(Duration::from_secs(20));
    assert_eq!(
        msgs_to(&out, addr(2, 2)),
        vec![InstanceMessage::PeerLeft(1)]
    );
    assert_eq!(h.lobby.room(room).and_then(|r| r.owner), Some(2));
    assert_eq!(h.lobby.stats.idle_removed, 1);
    // The second member keeps itself alive with PING.
    h.advance(Duration::from_secs(5));
    let pong = h.instance(room, addr(2, 2), InstanceRequest::Ping);
    assert_eq!(msgs_to(&pong, addr(2, 2)), vec![InstanceMessage::Pong]);
    h.advance(Duration::from_secs(29));
    assert_eq!(h.lobby.room(room).map(|r| r.member_count()), Some(1));
    h.advance(Duration::from_secs(1));
    assert_eq!(
        h.lobby.room(room).map(|r| r.state),
        Some(RoomState::Finished)
    );
}

#[test]
fn repeated_hello_is_idempotent_and_leave_finishes() {
    let mut h = Harness::new(config());
    let (room, _) = h.create(addr(1, 1));
    let first = h.hello(room, addr(1, 2));
    let again = h.hello(room, addr(1, 2));
    assert_eq!(msgs_to(&first, addr(1, 2)), msgs_to(&again, addr(1, 2)));
    assert_eq!(h.lobby.room(room).map(|r| r.member_count()), Some(1));
    h.instance(room, addr(1, 2), InstanceRequest::Leave);
    assert_eq!(
        h.lobby.room(room).map(|r| r.state),
        Some(RoomState::Finished)
    );
    assert_eq!(
        h.advance(Duration::from_secs(2)),
        vec![Output::CloseInstance { room }]
    );
    // Datagrams racing with the reap are counted, not crashed on.
    h.instance(room, addr(1, 2), InstanceRequest::Ping);
    assert_eq!(h.lobby.stats.ignores(InstanceIgnore::StaleRoom), 1);
}

#[test]
fn list_puts_joinable_rooms_first_and_is_capped() {
    let mut h = Harness::new(RtypeConfig {
        max_rooms: 10,
        max_players: 2,
        ..config()
    });
    let (a, _) = h.create(addr(1, 1));
    let (b, _) = h.create(addr(2, 1));
    let (c, _) = h.create(addr(3, 1));
    // Fill b: creator's reservation plus one join.
    h.lobby(addr(4, 1), 1, LobbyRequest::JoinRoom(b.0));
    let ids: Vec<RoomId> = h.lobby.room_list().map(|r| r.room).collect();
    assert_eq!(ids, vec![a, c, b]);
    h.lobby.config.max_list_rooms = 2;
    let ids: Vec<RoomId> = h.lobby.room_list().map(|r| r.room).collect();
    assert_eq!(ids, vec![a, c]);
}

#[test]
fn a_node_of_a_group_hands_out_ids_carrying_its_number() {
    let mut h = Harness::new(RtypeConfig {
        node_id: Some(3),
        ..config()
    });
    let (first, _) = h.create(addr(1, 5000));
    let (second, _) = h.create(addr(2, 5000));
    assert_eq!(first, RoomId(3 << 24 | 1));
    assert_eq!(second, RoomId(3 << 24 | 2));
    assert_eq!(first.0 >> NODE_SHIFT, 3);
    // A JOIN naming another node's room is not this node's to grant.
    let out = h.lobby(addr(4, 5000), 1, LobbyRequest::JoinRoom(4 << 24 | 1));
    assert!(matches!(
        out.as_slice(),
        [Output::Lobby {
            reply: LobbyReply::JoinFailed(_),
            ..
        }]
    ));
}

#[test]
fn remote_records_count_in_the_list_size_within_the_cap() {
    // One local room plus the directory's remote records: the reply budget is charged for
    // all of them, never past --max-list-rooms.
    let mut h = Harness::new(RtypeConfig {
        max_list_rooms: 5,
        rate: PerIpConfig {
            rate: 1000,
            per: Duration::from_secs(1),
            burst: 1000,
            byte_rate: 14 + 13 * 5,
            byte_burst: 14 + 13 * 5,
            max_entries: 64,
        },
        ..config()
    });
    h.create(addr(1, 5000));
    h.lobby.handle_remote_listed(40);
    // The first list takes the whole burst (14 + 13 * 5 bytes); a second is over budget.
    let first = h.lobby(addr(9, 5000), 1, LobbyRequest::ListRooms);
    assert_eq!(first.len(), 1);
    let second = h.lobby(addr(9, 5000), 2, LobbyRequest::ListRooms);
    assert!(second.is_empty(), "{second:?}");
    assert_eq!(h.lobby.stats.reply_budget_exceeded, 1);
}
