//! Seeded simulation of the lobby core alone, with a virtual clock and a fake driver.
//!
//! Thousands of random steps (lobby requests, instance hellos, leaves, starts, pings, data,
//! time passing) from a few dozen clients; after every step the invariants must hold:
//! - no room has more members, or members plus reservations, than seats;
//! - the listed rooms are exactly the rooms whose instance socket is open (no ghost rooms);
//! - ports are unique among open sockets and come back to the pool when a room is reaped;
//! - room ids only grow and are never reused; at most `max_rooms` rooms exist.
//!
//! At the end, once every client is silent past the idle timeout, every room is reaped.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use lobbyd::lobby::{
    InstanceRequest, Lobby, LobbyConfig, LobbyReply, LobbyRequest, Output, RoomId,
};

/// splitmix64: tiny, seedable, good enough to pick actions.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct Sim {
    lobby: Lobby,
    now: Instant,
    free_ports: BTreeSet<u16>,
    open: BTreeMap<RoomId, u16>,
    known_rooms: Vec<RoomId>,
    last_created: u32,
    max_rooms: usize,
}

impl Sim {
    fn new(config: LobbyConfig) -> Sim {
        let now = Instant::now();
        let max_rooms = config.max_rooms;
        Sim {
            lobby: Lobby::new(config, now),
            now,
            // Fewer ports than rooms allowed, so "no instance port" happens too.
            free_ports: (4300..4300 + max_rooms as u16 - 2).collect(),
            open: BTreeMap::new(),
            known_rooms: Vec::new(),
            last_created: 0,
            max_rooms,
        }
    }

    fn drain(&mut self) {
        while let Some(output) = self.lobby.poll_output() {
            match output {
                Output::OpenInstance { room } => {
                    let port = self.free_ports.pop_first();
                    if let Some(port) = port {
                        assert!(
                            self.open.insert(room, port).is_none(),
                            "{room} opened twice"
                        );
                    }
                    self.lobby.handle_instance_opened(self.now, room, port);
                }
                Output::CloseInstance { room } => {
                    let port = self
                        .open
                        .remove(&room)
                        .expect("closing a room never opened");
                    self.free_ports.insert(port);
                }
                Output::Lobby {
                    reply: LobbyReply::RoomCreated { room, port },
                    ..
                } => {
                    assert!(
                        room.0 > self.last_created,
                        "room id reused or not increasing"
                    );
                    self.last_created = room.0;
                    assert_eq!(self.open.get(&room), Some(&port));
                    self.known_rooms.push(room);
                }
                Output::Lobby {
                    reply: LobbyReply::JoinSuccess { room, port },
                    ..
                } => {
                    assert_eq!(
                        self.open.get(&room),
                        Some(&port),
                        "joined a room without socket"
                    );
                }
                Output::Lobby { .. } | Output::Instance { .. } => {}
            }
        }
    }

    fn check(&self) {
        assert!(self.lobby.room_count() <= self.max_rooms);
        for room in self.lobby.rooms() {
            assert!(room.member_count() <= room.max_players(), "{:?}", room.id);
            assert!(room.occupancy() <= room.max_players(), "{:?}", room.id);
        }
        let listed: BTreeMap<RoomId, u16> =
            self.lobby.room_list().map(|r| (r.room, r.port)).collect();
        assert_eq!(listed, self.open, "listed rooms differ from open sockets");
        let ports: BTreeSet<u16> = self.open.values().copied().collect();
        assert_eq!(ports.len(), self.open.len(), "a port serves two rooms");
        assert!(ports.is_disjoint(&self.free_ports));
    }
}

fn client(rng: &mut Rng) -> SocketAddr {
    let host = 2 + rng.below(30) as u8;
    let port = 5000 + rng.below(2) as u16;
    SocketAddr::from((Ipv4Addr::new(127, 0, 0, host), port))
}

fn run(seed: u64, steps: usize) {
    let config = LobbyConfig {
        max_rooms: 12,
        max_rooms_per_ip: 3,
        max_players: 4,
        countdown_secs: 2,
        idle_timeout: Duration::from_secs(6),
        seat_timeout: Duration::from_secs(3),
        reap_grace: Duration::from_millis(500),
        max_list_rooms: 112,
        ..LobbyConfig::default()
    };
    let idle = config.idle_timeout;
    let mut sim = Sim::new(config);
    let mut rng = Rng(seed);
    let mut dest = Vec::new();
    for _ in 0..steps {
        let from = client(&mut rng);
        let room = if sim.known_rooms.is_empty() || rng.below(10) == 0 {
            RoomId(rng.below(20) as u32)
        } else {
            sim.known_rooms[rng.below(sim.known_rooms.len() as u64) as usize]
        };
        let seq = rng.next() as u16;
        match rng.below(12) {
            0 => sim
                .lobby
                .handle_lobby_request(sim.now, from, seq, LobbyRequest::ListRooms),
            1 => sim
                .lobby
                .handle_lobby_request(sim.now, from, seq, LobbyRequest::CreateRoom),
            2 | 3 => {
                sim.lobby
                    .handle_lobby_request(sim.now, from, seq, LobbyRequest::JoinRoom(room.0))
            }
            4 | 5 => sim.lobby.handle_instance_request(
                sim.now,
                room,
                from,
                seq,
                InstanceRequest::Hello { token: None },
            ),
            6 => {
                sim.lobby
                    .handle_instance_request(sim.now, room, from, seq, InstanceRequest::Leave)
            }
            7 => {
                sim.lobby
                    .handle_instance_request(sim.now, room, from, seq, InstanceRequest::Start)
            }
            8 => sim
                .lobby
                .handle_instance_request(sim.now, room, from, seq, InstanceRequest::Ping),
            9 => {
                let target = [0xFF, 1, 2, 3, 4, 7][rng.below(6) as usize];
                if sim
                    .lobby
                    .relay_data(sim.now, room, from, target, &mut dest)
                    .is_some()
                {
                    // Never back to the sender; a unicast goes to exactly one member.
                    assert!(!dest.contains(&from));
                    assert!(target == 0xFF || dest.len() == 1);
                }
            }
            _ => {
                sim.now += Duration::from_millis(rng.below(900));
                sim.lobby.handle_timeout(sim.now);
            }
        }
        sim.drain();
        sim.check();
    }
    // Everyone goes quiet: every room must end up reaped and every port back in the pool.
    for _ in 0..40 {
        sim.now += idle / 4;
        sim.lobby.handle_timeout(sim.now);
        sim.drain();
        sim.check();
    }
    assert_eq!(sim.lobby.room_count(), 0, "rooms left behind");
    assert!(sim.open.is_empty());
}

#[test]
fn simulation_keeps_invariants() {
    for seed in 0..20 {
        run(seed, 3000);
    }
}

#[test]
fn simulation_long_run() {
    run(0xDEAD_BEEF, 50_000);
}
