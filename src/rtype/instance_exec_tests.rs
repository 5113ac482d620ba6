//! Unit tests of the core with `--instance-exec` ([`RtypeConfig::instance_exec`]): every
//! instance is a game server the driver starts ([`Output::StartInstance`]) and whose exit it
//! reports ([`RtypeCore::handle_instance_exited`]).

use super::*;
use crate::rtype::{TcpError, TcpMessage, TcpRequest};
use crate::wire::tcp_lobby::name_field;
use std::net::Ipv4Addr;
use std::time::Duration;

fn peer(n: u8) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::new(127, 0, 0, n), 40000))
}

fn exec_config() -> RtypeConfig {
    RtypeConfig {
        max_rooms: 4,
        instance_exec: true,
        ..RtypeConfig::default()
    }
}

/// A fake driver: starts every game server on ports 4300.., records each start.
struct Driver {
    lobby: RtypeCore,
    now: Instant,
    next_port: u16,
    started: Vec<(RoomId, u8, u32)>,
}

impl Driver {
    fn new() -> Driver {
        let now = Instant::now();
        let mut counter = 0u64;
        let source = Box::new(move || {
            counter += 1;
            counter.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        });
        Driver {
            lobby: RtypeCore::new(exec_config(), now, source),
            now,
            next_port: 4300,
            started: Vec::new(),
        }
    }

    fn drain(&mut self) -> Vec<Output> {
        let mut out = Vec::new();
        while let Some(output) = self.lobby.poll_output() {
            match output {
                Output::StartInstance {
                    room,
                    players,
                    seed,
                } => {
                    self.started.push((room, players, seed));
                    self.next_port += 1;
                    let port = self.next_port - 1;
                    self.lobby
                        .handle_instance_opened(self.now, room, Some(port));
                }
                Output::OpenInstance { room } => panic!("{room}: a relay socket asked for"),
                other => out.push(other),
            }
        }
        out
    }

    fn advance(&mut self, by: Duration) -> Vec<Output> {
        self.now += by;
        self.lobby.handle_timeout(self.now);
        self.drain()
    }

    fn exited(&mut self, room: RoomId) -> Vec<Output> {
        self.lobby.handle_instance_exited(self.now, room);
        self.drain()
    }

    fn tcp(&mut self, conn: usize, request: TcpRequest) -> Vec<Output> {
        self.lobby
            .handle_tcp_request(self.now, ConnId(conn), request);
        self.drain()
    }

    /// Two connected, ready players in one party, its countdown started; the party's id.
    fn counting_party(&mut self) -> RoomId {
        for (conn, who) in [(1, "Alice"), (2, "Bob")] {
            self.lobby
                .handle_tcp_open(self.now, ConnId(conn), peer(conn as u8));
            self.tcp(
                conn,
                TcpRequest::Connect {
                    name: name_field(who),
                },
            );
            self.tcp(conn, TcpRequest::Ready(true));
        }
        self.tcp(1, TcpRequest::Start);
        self.lobby.party_of(ConnId(1)).expect("in a party")
    }
}

fn to(outputs: &[Output], conn: usize) -> Vec<TcpMessage> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Tcp { conn: c, msg } if c.0 == conn => Some(*msg),
            _ => None,
        })
        .collect()
}

#[test]
fn a_room_asks_for_a_game_server_and_outlives_its_reservations() {
    let mut d = Driver::new();
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
    let mut d = Driver::new();
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
    let mut d = Driver::new();
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
    let mut d = Driver::new();
    let id = d.counting_party();
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
    let mut d = Driver::new();
    let id = d.counting_party();
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
    d.tcp(1, TcpRequest::Ready(true));
    d.tcp(2, TcpRequest::Ready(true));
    d.tcp(1, TcpRequest::Start);
    assert_eq!(d.started.len(), 2);
}
