//! Unit tests of the core with `--instance-exec` ([`RtypeConfig::instance_exec`]): every
//! instance is a game server the driver starts ([`Output::StartInstance`]) and whose exit it
//! reports ([`RtypeCore::handle_instance_exited`]).

use super::super::*;
use super::harness::{peer, to, Harness};
use crate::rtype::{TcpError, TcpMessage, TcpRequest};
use crate::wire::tcp_lobby::name_field;
use std::time::Duration;

fn exec_config() -> RtypeConfig {
    RtypeConfig {
        max_rooms: 4,
        instance_exec: true,
        ..RtypeConfig::default()
    }
}

/// The one harness with every instance a game server: a relay socket asked for fails.
fn exec_harness() -> Harness {
    let mut h = Harness::new(exec_config());
    h.no_relays = true;
    h
}

/// Two connected, ready players in one party, its countdown started; the party's id.
fn counting_party(d: &mut Harness) -> RoomId {
    for (conn, who) in [(1, "Alice"), (2, "Bob")] {
        d.lobby
            .handle_tcp_open(d.now, ConnId(conn), peer(conn as u8));
        d.req(
            conn,
            TcpRequest::Connect {
                name: name_field(who),
            },
        );
        d.req(conn, TcpRequest::Ready(true));
    }
    d.req(1, TcpRequest::Start);
    d.lobby.party_of(ConnId(1)).expect("in a party")
}

#[test]
fn a_room_asks_for_a_game_server_and_outlives_its_reservations() {
    let mut d = exec_harness();
    d.lobby
        .handle_lobby_request(d.now, peer(1), 3, LobbyRequest::CreateRoom);
    let out = d.drain();
    let room = RoomId(1);
    assert_eq!(
        out,
        vec![Output::Lobby {
            to: peer(1),
            seq: 3,
            dialect: Dialect::Seed,
            reply: LobbyReply::RoomCreated { room, port: 4300 }
        }]
    );
    let [(started, players, _seed)] = d.started[..] else {
        panic!("{:?}", d.started);
    };
    assert_eq!((started, players), (room, 4), "the room's seats");
    // Nobody says HELLO to lobbyd: the players are the game server's. Long after every
    // reservation and idle timeout the room is still listed, its server still running.
    let out = d.advance(Duration::from_secs(120));
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(
        d.lobby.room_list().map(|r| r.room).collect::<Vec<_>>(),
        [room]
    );
    // Its process exits: the room is reaped at once.
    let out = d.exited(room);
    assert_eq!(out, vec![Output::CloseInstance { room }]);
    assert_eq!(d.lobby.room_list().count(), 0);
    assert_eq!(d.lobby.room_count(), 0);
    assert_eq!(d.lobby.stats.rooms_reaped, 1);
    // A late or repeated report changes nothing.
    assert!(d.exited(room).is_empty());
}

#[test]
fn seeds_differ_between_rooms() {
    let mut d = exec_harness();
    for n in 1..=3 {
        d.lobby
            .handle_lobby_request(d.now, peer(n), 1, LobbyRequest::CreateRoom);
        d.drain();
    }
    let seeds: std::collections::HashSet<u32> = d.started.iter().map(|s| s.2).collect();
    assert_eq!(seeds.len(), 3, "{:?}", d.started);
}

#[test]
fn a_game_server_that_cannot_start_refuses_the_room() {
    let mut d = exec_harness();
    d.lobby
        .handle_lobby_request(d.now, peer(1), 5, LobbyRequest::CreateRoom);
    let Some(Output::StartInstance { room, .. }) = d.lobby.poll_output() else {
        panic!("no StartInstance");
    };
    d.lobby.handle_instance_opened(d.now, room, None);
    let out = d.drain();
    assert_eq!(
        out,
        vec![Output::Lobby {
            to: peer(1),
            seq: 5,
            dialect: Dialect::Seed,
            reply: LobbyReply::JoinFailed(JoinFailure::NoInstancePort)
        }]
    );
    assert_eq!(d.lobby.room_count(), 0, "never listed without a server");
}

#[test]
fn a_party_starts_its_game_server_for_its_players_at_the_countdown() {
    let mut d = exec_harness();
    let id = counting_party(&mut d);
    assert_eq!(d.started.len(), 1);
    assert_eq!((d.started[0].0, d.started[0].1), (id, 2));
    assert_eq!(d.lobby.room(id).and_then(|r| r.port), Some(4300));
    // Through GAME_START and far past every seat and linger timeout, the room stays.
    d.advance(Duration::from_secs(6));
    assert!(d.lobby.party(id).is_some());
    d.advance(Duration::from_secs(120));
    assert_eq!(d.lobby.room(id).map(|r| r.state), Some(RoomState::Playing));
    let out = d.exited(id);
    assert!(out.contains(&Output::CloseInstance { room: id }), "{out:?}");
    assert!(d.lobby.room(id).is_none());
    assert!(d.lobby.party(id).is_none());
}

#[test]
fn a_game_server_exiting_during_the_countdown_cancels_it() {
    let mut d = exec_harness();
    let id = counting_party(&mut d);
    let out = d.exited(id);
    for conn in [1, 2] {
        assert_eq!(
            to(&out, conn),
            [
                TcpMessage::Error(TcpError::NoInstance),
                TcpMessage::PlayerReady {
                    slot: 1,
                    ready: false
                },
                TcpMessage::PlayerReady {
                    slot: 2,
                    ready: false
                },
            ],
            "{out:?}"
        );
    }
    let room = d.lobby.room(id).expect("the party stays");
    assert_eq!((room.state, room.port), (RoomState::Waiting, None));
    // No GAME_START follows; a new START asks for a new game server.
    assert!(to(&d.advance(Duration::from_secs(6)), 1).is_empty());
    d.req(1, TcpRequest::Ready(true));
    d.req(2, TcpRequest::Ready(true));
    d.req(1, TcpRequest::Start);
    assert_eq!(d.started.len(), 2);
}
