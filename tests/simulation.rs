//! Seeded simulation of the lobby core alone, with a virtual clock and a fake driver.
//!
//! Thousands of random steps (lobby requests, instance hellos, leaves, starts, pings, data,
//! time passing) from a few dozen clients; after every step the invariants must hold:
//! - no room has more members, or members plus reservations, than seats;
//! - the listed rooms are exactly the rooms whose instance socket is open (no ghost rooms);
//! - ports are unique among open sockets and come back to the pool when a room is reaped;
//! - room ids only grow and are never reused; at most `max_rooms` rooms exist.
//!
//! - TCP lobby parties share the rooms: no party holds more players than seats, a party is
//!   never listed, it holds an instance socket exactly while counting down or playing,
//!   outputs go only to connections the driver has open, live player hashes are non-zero
//!   and unique.
//!
//! At the end, once every client is silent past the idle timeout, every room is reaped.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use lobbyd::lobby::{
    ConnClose, ConnId, InstanceRequest, Lobby, LobbyConfig, LobbyReply, LobbyRequest, LobbyStats,
    Output, PartyConfig, RoomId, RoomKind, RoomState, TcpMessage, TcpRequest, Violation,
};
use lobbyd::wire::tcp_lobby::name_field;

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
    /// TCP connections the fake driver has open.
    conns: BTreeSet<usize>,
    next_conn: usize,
    /// Player hashes handed out (CONNECT_ACK) and not yet known gone, by connection.
    hashes: BTreeMap<usize, u64>,
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
            conns: BTreeSet::new(),
            next_conn: 0,
            hashes: BTreeMap::new(),
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
                Output::Tcp { conn, msg } => {
                    assert!(self.conns.contains(&conn.0), "{msg:?} to closed {conn:?}");
                    if let TcpMessage::ConnectAck { hash, .. } = msg {
                        assert_ne!(hash, 0);
                        self.hashes.insert(conn.0, hash);
                    }
                }
                Output::CloseConn { conn } => {
                    assert!(self.conns.remove(&conn.0), "closing closed {conn:?}");
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
        let open_udp: BTreeMap<RoomId, u16> = self
            .open
            .iter()
            .filter(|(id, _)| self.lobby.party(**id).is_none())
            .map(|(id, port)| (*id, *port))
            .collect();
        assert_eq!(listed, open_udp, "listed rooms differ from open sockets");
        for room in self.lobby.rooms().filter(|r| r.kind == RoomKind::Party) {
            assert!(!listed.contains_key(&room.id), "party listed");
            assert_eq!(room.port, self.open.get(&room.id).copied(), "{:?}", room.id);
            if room.state == RoomState::Waiting {
                assert!(room.port.is_none(), "waiting party holds a socket");
            }
            if let Some(party) = self.lobby.party(room.id) {
                assert!(party.member_count() <= room.max_players());
            }
        }
        // Every connection the core knows is open in the driver.
        assert!(self.lobby.tcp_conn_count() <= self.conns.len());
        let live: Vec<u64> = self
            .lobby
            .rooms()
            .filter_map(|room| self.lobby.party(room.id))
            .flat_map(|party| party.members().map(|(_, m)| m.hash))
            .collect();
        let unique: BTreeSet<u64> = live.iter().copied().collect();
        assert_eq!(unique.len(), live.len(), "two live players share a hash");
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

fn run(seed: u64, steps: usize) -> LobbyStats {
    let config = LobbyConfig {
        party: PartyConfig {
            countdown: Duration::from_secs(1),
            ..PartyConfig::default()
        },
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
    let mut hash_rng = Rng(seed ^ 0x5555);
    // A small hash space, so collisions with live players happen and must be avoided.
    sim.lobby = Lobby::with_hash_source(
        sim.lobby.config().clone(),
        sim.now,
        Box::new(move || hash_rng.below(64)),
    );
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
        let conn = if sim.conns.is_empty() {
            0
        } else {
            let open: Vec<usize> = sim.conns.iter().copied().collect();
            open[rng.below(open.len() as u64) as usize]
        };
        match rng.below(20) {
            12 | 13 => {
                sim.next_conn += 1;
                sim.conns.insert(sim.next_conn);
                sim.lobby
                    .handle_tcp_open(sim.now, ConnId(sim.next_conn), from);
            }
            14 => {
                let names = ["A", "B", "C", "", "B"];
                let name = name_field(names[rng.below(5) as usize]);
                let request = TcpRequest::Connect { name };
                sim.lobby.handle_tcp_request(sim.now, ConnId(conn), request);
            }
            15 | 16 => {
                let request = match rng.below(4) {
                    0 => TcpRequest::Ready(false),
                    1 | 2 => TcpRequest::Ready(true),
                    _ => TcpRequest::Start,
                };
                sim.lobby.handle_tcp_request(sim.now, ConnId(conn), request);
            }
            17 => match rng.below(3) {
                0 => sim
                    .lobby
                    .handle_tcp_request(sim.now, ConnId(conn), TcpRequest::Disconnect),
                1 => {
                    if sim.conns.remove(&conn) {
                        sim.hashes.remove(&conn);
                        let why = ConnClose::PeerClosed;
                        sim.lobby.handle_tcp_closed(ConnId(conn), why);
                    }
                }
                _ => sim
                    .lobby
                    .handle_tcp_violation(ConnId(conn), Violation::UnknownType),
            },
            18 => {
                // A HELLO carrying a hash some TCP client was given (or a made-up one).
                let token = match sim.hashes.values().next() {
                    Some(hash) if rng.below(2) == 0 => *hash,
                    _ => rng.below(64),
                };
                let hello = InstanceRequest::Hello { token: Some(token) };
                sim.lobby
                    .handle_instance_request(sim.now, room, from, seq, hello);
            }
            19 => {
                sim.now += Duration::from_millis(rng.below(300));
                sim.lobby.handle_timeout(sim.now);
            }
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
    assert_eq!(sim.lobby.tcp_conn_count(), 0, "connections left behind");
    assert!(
        sim.conns.is_empty(),
        "the core never closed some connections"
    );
    sim.lobby.stats.clone()
}

#[test]
fn simulation_keeps_invariants() {
    for seed in 0..20 {
        run(seed, 3000);
    }
}

#[test]
fn simulation_long_run() {
    let stats = run(0xDEAD_BEEF, 50_000);
    // The run reached the interesting places of the TCP lobby, not only its refusals.
    let tcp = &stats.tcp;
    assert!(tcp.games_started > 0, "{tcp:?}");
    assert!(tcp.countdowns_cancelled > 0, "{tcp:?}");
    assert!(tcp.unknown_tokens > 0, "{tcp:?}");
    assert!(stats.welcomes > 0);
}
