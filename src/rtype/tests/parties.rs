//! Unit tests of the TCP lobby parties, with a virtual clock, a seeded hash source and a
//! fake driver that binds instance ports on request.

use super::super::*;
use super::harness::{name, peer, to, Harness};
use crate::rtype::{InstanceMessage, InstanceRequest, LobbyReply, LobbyRequest, RtypeConfig};
use crate::rtype::{RejectReason, RoomKind};
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

pub(super) fn closed(outputs: &[Output]) -> Vec<usize> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::CloseConn { conn } => Some(conn.0),
            _ => None,
        })
        .collect()
}

pub(super) fn config() -> RtypeConfig {
    RtypeConfig {
        max_rooms: 4,
        ..RtypeConfig::default()
    }
}

pub(super) fn error(e: TcpError) -> TcpMessage {
    TcpMessage::Error(e)
}

#[test]
fn connect_ack_and_roster_in_order() {
    let mut h = Harness::new(config());
    let (alice, slot_a) = h.join(1, "Alice");
    assert_eq!(slot_a, 1);
    h.req(1, TcpRequest::Ready(true));
    h.open(2);
    let out = h.req(2, TcpRequest::Connect { name: name("Bob") });
    let bob_msgs = to(&out, 2);
    let TcpMessage::ConnectAck { hash: bob, slot: 2 } = bob_msgs[0] else {
        panic!("{bob_msgs:?}")
    };
    assert_ne!(bob, alice);
    assert_ne!(bob, 0);
    assert_eq!(
        bob_msgs[1..],
        [
            TcpMessage::PlayerJoin {
                slot: 1,
                hash: alice,
                name: name("Alice"),
                ready: true
            },
            TcpMessage::PlayerJoin {
                slot: 2,
                hash: bob,
                name: name("Bob"),
                ready: false
            },
        ]
    );
    assert_eq!(
        to(&out, 1),
        [TcpMessage::PlayerJoin {
            slot: 2,
            hash: bob,
            name: name("Bob"),
            ready: false
        }]
    );
    // Same party, one room of kind party, not listed for UDP clients.
    assert_eq!(h.lobby.party_of(ConnId(1)), h.lobby.party_of(ConnId(2)));
    let id = h.lobby.party_of(ConnId(1)).unwrap();
    assert_eq!(h.lobby.room(id).unwrap().kind, RoomKind::Party);
    assert_eq!(h.lobby.room_list().count(), 0);
    assert_eq!(h.lobby.lobby_members(id), 2);
}

#[test]
fn names_invalid_then_taken_then_accepted() {
    let mut h = Harness::new(config());
    h.join(1, "Alice");
    h.open(2);
    for bad in [[0u8; NAME_LEN], [b'x'; NAME_LEN], name("bad\u{7}bell"), {
        let mut f = [0u8; NAME_LEN];
        f[..2].copy_from_slice(&[0xC3, 0x28]);
        f
    }] {
        let out = h.req(2, TcpRequest::Connect { name: bad });
        assert_eq!(to(&out, 2), [error(TcpError::InvalidName)]);
        assert!(closed(&out).is_empty());
    }
    let out = h.req(
        2,
        TcpRequest::Connect {
            name: name("Alice"),
        },
    );
    assert_eq!(to(&out, 2), [error(TcpError::NameTaken)]);
    // Padding garbage after the NUL is ignored and not echoed.
    let mut field = name("Bob");
    field[10] = b'!';
    let out = h.req(2, TcpRequest::Connect { name: field });
    assert!(matches!(
        to(&out, 2)[0],
        TcpMessage::ConnectAck { slot: 2, .. }
    ));
    assert!(to(&out, 1)
        .iter()
        .any(|m| matches!(m, TcpMessage::PlayerJoin { name: n, .. } if *n == name("Bob"))));
    assert_eq!(h.lobby.stats.tcp.errors_sent(TcpError::InvalidName), 4);
}

#[test]
fn start_refusals_in_rfc_order() {
    let mut h = Harness::new(config());
    h.join(1, "Alice");
    h.req(1, TcpRequest::Ready(true));
    let out = h.req(1, TcpRequest::Start);
    assert_eq!(to(&out, 1), [error(TcpError::NotEnoughPlayers)]);
    h.join(2, "Bob");
    let out = h.req(1, TcpRequest::Start);
    assert_eq!(to(&out, 1), [error(TcpError::NotAllReady)]);
    h.req(2, TcpRequest::Ready(true));
    let out = h.req(2, TcpRequest::Start);
    let first = TcpMessage::Countdown(Duration::from_secs(5));
    assert_eq!(to(&out, 1), [first]);
    assert_eq!(to(&out, 2), [first]);
    let out = h.req(1, TcpRequest::Start);
    assert_eq!(to(&out, 1), [error(TcpError::GameStarted)]);
    let out = h.req(1, TcpRequest::Ready(false));
    assert_eq!(to(&out, 1), [error(TcpError::GameStarted)]);
}

#[test]
fn countdown_schedule_starts_when_start_req_was_received() {
    // The driver reports the instance bound 30 ms after the request was received (a long
    // event batch): 5.0 goes out then, and 4.9 is still due 100 ms after the request.
    let mut h = Harness::new(config());
    for (conn, who) in [(1, "Alice"), (2, "Bob")] {
        h.join(conn, who);
        h.req(conn, TcpRequest::Ready(true));
    }
    let received = h.now;
    h.lobby
        .handle_tcp_request(received, ConnId(1), TcpRequest::Start);
    let Some(Output::OpenInstance { room }) = h.lobby.poll_output() else {
        panic!("START_REQ asks for the instance first");
    };
    h.now = received + 30 * MS;
    h.lobby.handle_instance_opened(h.now, room, Some(4300));
    let out = h.drain();
    assert_eq!(to(&out, 2), [TcpMessage::Countdown(Duration::from_secs(5))]);
    let out = h.advance(69 * MS); // 99 ms after the request
    assert!(to(&out, 2).is_empty(), "{out:?}");
    let out = h.advance(MS);
    assert_eq!(
        to(&out, 2),
        [TcpMessage::Countdown(Duration::from_millis(4900))]
    );
}

#[test]
fn countdown_ticks_from_the_start_instant_then_game_start() {
    let mut h = Harness::new(config());
    let (alice, _) = h.join(1, "Alice");
    let (bob, _) = h.join(2, "Bob");
    h.all_ready(&[1, 2]);
    let start = h.now;
    let mut values = Vec::new();
    let mut out = h.req(1, TcpRequest::Start);
    let id = h.lobby.party_of(ConnId(1)).unwrap();
    assert_eq!(h.lobby.room(id).unwrap().state, RoomState::Countdown);
    let port = h
        .lobby
        .room(id)
        .unwrap()
        .port
        .expect("instance bound at countdown");
    let mut game_start_at = None;
    for _ in 0..6000 {
        for msg in to(&out, 1) {
            match msg {
                TcpMessage::Countdown(left) => values.push((h.now - start, left)),
                TcpMessage::GameStart(room) => game_start_at = Some((h.now - start, room)),
                other => panic!("{other:?}"),
            }
        }
        if game_start_at.is_some() {
            break;
        }
        out = h.advance(MS);
    }
    assert_eq!(values.len(), 51);
    for (k, (at, left)) in values.iter().enumerate() {
        // Value k is due at k ticks after the start: never early, at most one wheel tick late.
        let due = Duration::from_millis(100 * k as u64);
        assert!(*at >= due && *at <= due + MS, "value {k} at {at:?}");
        assert_eq!(*left, Duration::from_secs(5) - due);
    }
    assert!(values.windows(2).all(|w| w[0].1 > w[1].1));
    assert_eq!(values.last().unwrap().1, Duration::ZERO);
    assert_eq!(game_start_at, Some((values.last().unwrap().0, id)));
    let players: Vec<_> = h.lobby.game_start_players(id).collect();
    assert_eq!(
        players,
        vec![
            (1, alice, name("Alice"), (100.0, 100.0)),
            (2, bob, name("Bob"), (100.0, 200.0))
        ]
    );
    let room = h.lobby.room(id).unwrap();
    assert_eq!(room.state, RoomState::Playing);
    assert_eq!(room.port, Some(port));
    assert_eq!(h.lobby.stats.tcp.games_started, 1);
}

#[test]
fn instance_admits_exactly_the_announced_hashes() {
    let mut h = Harness::new(config());
    let (alice, _) = h.join(1, "Alice");
    let (bob, _) = h.join(2, "Bob");
    h.all_ready(&[1, 2]);
    h.req(1, TcpRequest::Start);
    let id = h.lobby.party_of(ConnId(1)).unwrap();
    // Before GAME_START nobody is expected.
    let hello = |token| InstanceRequest::Hello { token };
    h.lobby
        .handle_instance_request(h.now, id, peer(1), 1, hello(Some(alice)));
    assert!(h.drain().iter().any(|o| matches!(
        o,
        Output::Instance {
            msg: InstanceMessage::Reject(RejectReason::UnknownToken),
            ..
        }
    )));
    h.advance(Duration::from_secs(6));
    for token in [None, Some(0xDEAD), Some(alice ^ 1)] {
        h.lobby
            .handle_instance_request(h.now, id, peer(9), 1, hello(token));
        let out = h.drain();
        assert!(
            matches!(
                out.as_slice(),
                [Output::Instance {
                    msg: InstanceMessage::Reject(RejectReason::UnknownToken),
                    ..
                }]
            ),
            "{token:?}: {out:?}"
        );
    }
    let bob_addr = SocketAddr::from(([127, 0, 0, 2], 5555));
    h.lobby
        .handle_instance_request(h.now, id, bob_addr, 3, hello(Some(bob)));
    let out = h.drain();
    assert!(out.iter().any(|o| matches!(
        o,
        Output::Instance {
            to,
            msg: InstanceMessage::Welcome { slot: 2, .. },
            ..
        } if *to == bob_addr
    )));
    // A hash is good for one HELLO: from elsewhere it is unknown now.
    h.lobby
        .handle_instance_request(h.now, id, peer(7), 4, hello(Some(bob)));
    assert!(matches!(
        h.drain().as_slice(),
        [Output::Instance {
            msg: InstanceMessage::Reject(RejectReason::UnknownToken),
            ..
        }]
    ));
    assert!(h.lobby.stats.tcp.unknown_tokens >= 4);
}

#[test]
fn linger_closes_transferred_connections_without_player_left() {
    let mut h = Harness::new(config());
    h.join(1, "Alice");
    h.join(2, "Bob");
    h.join(3, "Carol");
    h.all_ready(&[1, 2, 3]);
    h.req(1, TcpRequest::Start);
    let out = h.advance(Duration::from_secs(5));
    assert!(to(&out, 1).contains(&TcpMessage::GameStart(h.lobby.party_of(ConnId(1)).unwrap())));
    // Carol closes herself: nobody hears about it.
    h.lobby.handle_tcp_closed(ConnId(3), ConnClose::PeerClosed);
    let out = h.drain();
    assert!(out.is_empty(), "{out:?}");
    let out = h.advance(Duration::from_millis(4900));
    assert!(closed(&out).is_empty());
    let out = h.advance(Duration::from_millis(200));
    let mut gone = closed(&out);
    gone.sort();
    assert_eq!(gone, [1, 2]);
    assert!(out.iter().all(|o| !matches!(
        o,
        Output::Tcp {
            msg: TcpMessage::PlayerLeft(_),
            ..
        }
    )));
    assert_eq!(h.lobby.tcp_conn_count(), 0);
}

#[test]
fn linger_and_reaping_spare_a_reused_connection_id() {
    // Found by `lobby-load tcp-cycle`: members close after GAME_START, the driver reuses
    // their keys for newcomers, and the started party's linger timer (or its reaping) must
    // not close those newcomers.
    let mut h = Harness::new(config());
    h.join(1, "Alice");
    h.join(2, "Bob");
    h.all_ready(&[1, 2]);
    h.req(1, TcpRequest::Start);
    let out = h.advance(Duration::from_secs(5));
    let started = h.lobby.party_of(ConnId(1)).unwrap();
    assert!(to(&out, 1).contains(&TcpMessage::GameStart(started)));
    for conn in [1, 2] {
        h.lobby
            .handle_tcp_closed(ConnId(conn), ConnClose::PeerClosed);
    }
    h.join(1, "Carol");
    h.join(2, "Dave");
    assert_ne!(h.lobby.party_of(ConnId(1)), Some(started));
    let out = h.advance(Duration::from_secs(6));
    assert!(closed(&out).is_empty(), "linger closed newcomers: {out:?}");
    h.advance(Duration::from_secs(10)); // seats expire, the room finishes
    let out = h.advance(Duration::from_secs(3)); // and is reaped
    assert!(
        out.contains(&Output::CloseInstance { room: started }),
        "{out:?}"
    );
    assert!(closed(&out).is_empty(), "reaping closed newcomers: {out:?}");
    assert_eq!(h.lobby.tcp_conn_count(), 2);
}

#[test]
fn leaving_during_countdown_goes_on_while_enough_remain() {
    let mut h = Harness::new(config());
    for (conn, who) in [(1, "A"), (2, "B"), (3, "C")] {
        h.join(conn, who);
    }
    h.all_ready(&[1, 2, 3]);
    h.req(1, TcpRequest::Start);
    h.advance(Duration::from_millis(300));
    let out = h.req(3, TcpRequest::Disconnect);
    assert_eq!(to(&out, 1), [TcpMessage::PlayerLeft(3)]);
    assert_eq!(closed(&out), [3]);
    let out = h.advance(Duration::from_millis(100));
    assert_eq!(
        to(&out, 2),
        [TcpMessage::Countdown(Duration::from_millis(4600))]
    );
}

#[test]
fn leaving_during_countdown_cancels_below_minimum() {
    let mut h = Harness::new(config());
    h.join(1, "A");
    h.join(2, "B");
    h.all_ready(&[1, 2]);
    h.req(1, TcpRequest::Start);
    let id = h.lobby.party_of(ConnId(1)).unwrap();
    assert_eq!(h.open_ports.len(), 1);
    h.advance(Duration::from_millis(250));
    h.lobby.handle_tcp_closed(ConnId(2), ConnClose::PeerClosed);
    let out = h.drain();
    assert_eq!(
        to(&out, 1),
        [
            TcpMessage::PlayerLeft(2),
            error(TcpError::NotEnoughPlayers),
            TcpMessage::PlayerReady {
                slot: 1,
                ready: false
            },
        ]
    );
    assert!(out.contains(&Output::CloseInstance { room: id }));
    assert!(h.open_ports.is_empty());
    let room = h.lobby.room(id).unwrap();
    assert_eq!((room.state, room.port), (RoomState::Waiting, None));
    // No more countdown values; a newcomer can join the party again and it can restart.
    assert!(to(&h.advance(Duration::from_secs(6)), 1).is_empty());
    h.join(3, "C");
    assert_eq!(h.lobby.party_of(ConnId(3)), Some(id));
    h.all_ready(&[1, 3]);
    let out = h.req(3, TcpRequest::Start);
    assert_eq!(to(&out, 1), [TcpMessage::Countdown(Duration::from_secs(5))]);
    assert_eq!(h.lobby.stats.tcp.countdowns_cancelled, 1);
}

#[test]
fn no_instance_port_changes_nothing() {
    let mut h = Harness::new(config());
    h.join(1, "A");
    h.join(2, "B");
    h.all_ready(&[1, 2]);
    h.ports_left = 0;
    let out = h.req(2, TcpRequest::Start);
    assert_eq!(to(&out, 2), [error(TcpError::NoInstance)]);
    assert!(to(&out, 1).is_empty());
    let id = h.lobby.party_of(ConnId(1)).unwrap();
    assert_eq!(h.lobby.room(id).unwrap().state, RoomState::Waiting);
    assert!(h.advance(Duration::from_secs(1)).is_empty());
    // Still ready: once a port is free, START works.
    h.ports_left = 1;
    let out = h.req(1, TcpRequest::Start);
    assert_eq!(to(&out, 2), [TcpMessage::Countdown(Duration::from_secs(5))]);
}

#[test]
fn lobby_full_counts_udp_rooms_and_parties_together() {
    let mut h = Harness::new(RtypeConfig {
        max_rooms: 2,
        max_players: 2,
        ..RtypeConfig::default()
    });
    h.lobby
        .handle_lobby_request(h.now, peer(50), 1, LobbyRequest::CreateRoom);
    h.drain();
    h.join(1, "A");
    h.join(2, "B");
    // A connection takes no seat (nor room) before its CONNECT_REQ: it is refused then.
    assert!(h.open(3).is_empty());
    let out = h.req(3, TcpRequest::Connect { name: name("C") });
    assert_eq!(to(&out, 3), [error(TcpError::LobbyFull)]);
    assert_eq!(closed(&out), [3]);
    assert_eq!(h.lobby.room_count(), 2);
    // And a UDP create is refused while the party holds the second room.
    h.lobby
        .handle_lobby_request(h.now, peer(51), 2, LobbyRequest::CreateRoom);
    assert!(h.drain().iter().any(|o| matches!(
        o,
        Output::Lobby {
            reply: LobbyReply::JoinFailed(crate::rtype::JoinFailure::MaxRooms),
            ..
        }
    )));
    // UDP clients cannot join a party by guessing its id.
    let party = h.lobby.party_of(ConnId(1)).unwrap();
    h.lobby
        .handle_lobby_request(h.now, peer(52), 3, LobbyRequest::JoinRoom(party.0));
    assert!(h.drain().iter().any(|o| matches!(
        o,
        Output::Lobby {
            reply: LobbyReply::JoinFailed(crate::rtype::JoinFailure::NoSuchRoom),
            ..
        }
    )));
}

#[test]
fn full_parties_open_new_ones_and_oldest_waiting_is_filled_first() {
    let mut h = Harness::new(RtypeConfig {
        max_rooms: 5,
        max_players: 2,
        ..RtypeConfig::default()
    });
    for conn in 1..=5 {
        h.join(conn, &format!("P{conn}"));
    }
    let party = |h: &Harness, c| h.lobby.party_of(ConnId(c)).unwrap();
    assert_eq!(party(&h, 1), party(&h, 2));
    assert_eq!(party(&h, 3), party(&h, 4));
    assert_ne!(party(&h, 1), party(&h, 3));
    assert_ne!(party(&h, 3), party(&h, 5));
    // A seat frees up in the oldest party: the next connection goes there.
    h.req(2, TcpRequest::Disconnect);
    h.join(6, "P6");
    assert_eq!(party(&h, 6), party(&h, 1));
    assert_eq!(h.lobby.stats.tcp.parties_opened, 3);
}

#[test]
fn a_connection_without_connect_ack_holds_no_seat_and_joins_where_there_is_room() {
    let mut h = Harness::new(RtypeConfig {
        max_rooms: 4,
        max_players: 3,
        ..RtypeConfig::default()
    });
    h.join(1, "A");
    h.join(2, "B");
    h.open(3);
    let first = h.lobby.party_of(ConnId(1)).unwrap();
    assert_eq!(h.lobby.party_of(ConnId(3)), None);
    assert_eq!(h.lobby.lobby_members(first), 2);
    h.all_ready(&[1, 2]);
    h.req(1, TcpRequest::Start);
    // The first party counts down: C's CONNECT_REQ opens another one.
    let out = h.req(3, TcpRequest::Connect { name: name("C") });
    let moved = h.lobby.party_of(ConnId(3)).unwrap();
    assert_ne!(moved, first);
    assert!(matches!(
        to(&out, 3)[0],
        TcpMessage::ConnectAck { slot: 1, .. }
    ));
    assert!(to(&out, 1).is_empty());
}

#[test]
fn disconnect_and_close_send_player_left_and_free_the_slot() {
    let mut h = Harness::new(config());
    h.join(1, "A");
    h.join(2, "B");
    h.join(3, "C");
    let out = h.req(2, TcpRequest::Disconnect);
    assert_eq!(closed(&out), [2]);
    assert_eq!(to(&out, 1), [TcpMessage::PlayerLeft(2)]);
    assert_eq!(to(&out, 3), [TcpMessage::PlayerLeft(2)]);
    // The lowest free slot is handed out again.
    let (_, slot) = h.join(4, "D");
    assert_eq!(slot, 2);
    h.lobby.handle_tcp_closed(ConnId(1), ConnClose::Error);
    let out = h.drain();
    assert_eq!(to(&out, 4), [TcpMessage::PlayerLeft(1)]);
    assert_eq!(h.lobby.stats.tcp.closes(CloseCause::Disconnect), 1);
    assert_eq!(h.lobby.stats.tcp.closes(CloseCause::Error), 1);
    // Everybody leaves: the party and its room are gone.
    let id = h.lobby.party_of(ConnId(3)).unwrap();
    h.req(3, TcpRequest::Disconnect);
    h.req(4, TcpRequest::Disconnect);
    assert!(h.lobby.room(id).is_none());
    assert!(h.lobby.party(id).is_none());
}

#[test]
fn idle_connections_are_closed_with_player_left() {
    let mut h = Harness::new(RtypeConfig {
        idle_timeout: Duration::from_secs(2),
        ..config()
    });
    h.join(1, "A");
    h.join(2, "B");
    h.open(3);
    // Only requests are activity: 1 keeps toggling its ready flag.
    for round in 0..5 {
        h.advance(Duration::from_millis(500));
        h.req(1, TcpRequest::Ready(round % 2 == 0));
    }
    let out = h.drain();
    assert!(out.is_empty());
    // 2 and 3 have been silent for 2.5 s; 1 kept talking.
    assert_eq!(h.lobby.tcp_conn_count(), 1);
    assert_eq!(h.lobby.stats.tcp.closes(CloseCause::Idle), 2);
    let out = h.advance(Duration::from_secs(2));
    assert_eq!(closed(&out), [1]);
}

#[test]
fn idle_close_tells_the_others() {
    let mut h = Harness::new(RtypeConfig {
        idle_timeout: Duration::from_secs(2),
        ..config()
    });
    h.join(1, "A");
    h.advance(Duration::from_secs(1));
    h.join(2, "B");
    let out = h.advance(Duration::from_millis(1001));
    assert_eq!(closed(&out), [1]);
    assert_eq!(to(&out, 2), [TcpMessage::PlayerLeft(1)]);
}

#[test]
fn violations_close_at_the_limit() {
    let mut h = Harness::new(config());
    h.join(1, "A");
    h.open(2);
    // Not connected yet: READY and START are violations, not errors.
    for request in [TcpRequest::Ready(true), TcpRequest::Start] {
        assert!(h.req(2, request).is_empty());
    }
    h.req(2, TcpRequest::Connect { name: name("B") });
    let out = h.req(2, TcpRequest::Connect { name: name("B2") });
    assert!(out.is_empty(), "second CONNECT_REQ: {out:?}");
    h.lobby
        .handle_tcp_violation(ConnId(2), Violation::UnknownType);
    assert!(h.drain().is_empty());
    h.lobby
        .handle_tcp_violation(ConnId(2), Violation::Oversized);
    let out = h.drain();
    assert_eq!(closed(&out), [2]);
    assert_eq!(to(&out, 1), [TcpMessage::PlayerLeft(2)]);
    let stats = &h.lobby.stats.tcp;
    assert_eq!(stats.violations_of(Violation::NotConnected), 2);
    assert_eq!(stats.violations_of(Violation::AlreadyConnected), 1);
    assert_eq!(stats.closes(CloseCause::Violations), 1);
}

#[test]
fn auto_start_when_everyone_is_ready() {
    let mut h = Harness::new(RtypeConfig {
        party: PartyConfig {
            auto_start: true,
            ..PartyConfig::default()
        },
        ..config()
    });
    h.join(1, "A");
    let out = h.req(1, TcpRequest::Ready(true));
    assert_eq!(
        to(&out, 1),
        [TcpMessage::PlayerReady {
            slot: 1,
            ready: true
        }]
    );
    h.join(2, "B");
    let out = h.req(2, TcpRequest::Ready(true));
    assert_eq!(
        to(&out, 1),
        [
            TcpMessage::PlayerReady {
                slot: 2,
                ready: true
            },
            TcpMessage::Countdown(Duration::from_secs(5)),
        ]
    );
}

#[test]
fn hashes_are_non_zero_and_unique_even_from_a_bad_source() {
    let mut values = vec![0, 7, 7, 0, 7, 9].into_iter();
    let source = Box::new(move || values.next().unwrap_or(7));
    let mut h = Harness::new(config());
    h.lobby = RtypeCore::new(config(), h.now, source);
    let (a, _) = h.join(1, "A");
    let (b, _) = h.join(2, "B");
    assert_eq!((a, b), (7, 9));
    h.open(3);
    let out = h.req(3, TcpRequest::Connect { name: name("C") });
    assert_eq!(to(&out, 3), [error(TcpError::NoPlayerId)]);
}

#[test]
fn shutdown_tells_every_connection() {
    let mut h = Harness::new(config());
    h.join(1, "A");
    h.join(2, "B");
    h.open(3);
    h.lobby.handle_shutdown();
    let out = h.drain();
    for conn in 1..=3 {
        assert_eq!(to(&out, conn), [error(TcpError::ShuttingDown)]);
    }
    assert_eq!(closed(&out), [1, 2, 3]);
}

#[test]
fn started_room_is_reaped_when_nobody_says_hello() {
    let mut h = Harness::new(config());
    h.join(1, "A");
    h.join(2, "B");
    h.all_ready(&[1, 2]);
    h.req(1, TcpRequest::Start);
    h.advance(Duration::from_secs(5));
    let id = h.lobby.party_of(ConnId(1)).unwrap();
    h.advance(Duration::from_secs(6)); // linger closes the TCP side
    h.advance(Duration::from_secs(10)); // seats expire, the room finishes
    let out = h.advance(Duration::from_secs(3)); // and is reaped
    assert!(out.contains(&Output::CloseInstance { room: id }), "{out:?}");
    assert!(h.lobby.room(id).is_none());
    assert_eq!(h.lobby.parties.live_hashes(), 0);
}

/// Found by the `core_rtype_tcp` fuzz target (its reproducer is in
/// `fuzz/regressions/core_rtype_tcp/`): one timeout closes an idle member, which auto-starts
/// the party (its socket is requested), then closes the last member, which dissolves the
/// party and removes its room before the driver has bound the socket. The socket bound for a
/// room that is gone must be given back, or its port never returns to the pool.
#[test]
fn a_party_that_dissolves_while_its_socket_is_bound_gives_the_socket_back() {
    let mut h = Harness::new(RtypeConfig {
        party: PartyConfig {
            min_players: 1,
            auto_start: true,
            ..PartyConfig::default()
        },
        ..RtypeConfig::default()
    });
    h.join(1, "A");
    h.join(2, "B");
    h.now += Duration::from_secs(1);
    h.req(2, TcpRequest::Ready(true));
    let idle = h.lobby.config().idle_timeout;
    let out = h.advance(idle + Duration::from_secs(2));
    assert_eq!(closed(&out), vec![1, 2]);
    assert_eq!(h.lobby.room_count(), 0);
    assert!(
        h.open_ports.is_empty(),
        "a dissolved party's socket stays bound"
    );
}
