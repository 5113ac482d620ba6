//! The R-Type core ([`crate::rtype`]) driven by a fake driver with a virtual clock: UDP rooms
//! and their game instances, TCP lobby parties, or both, one random step at a time, with the
//! core's invariants checked after every step (HOUSE-STYLE section 2, sozu's
//! `udp_simulation.rs`). `tests/it/simulation.rs` runs it seeded; the fuzz targets `core_rtype_udp`
//! and `core_rtype_tcp` steer it with their input ([`super::script`]).
//!
//! The fake driver binds instance ports from a pool smaller than `max_rooms` (so "no port"
//! happens too) and feeds TCP bytes as the real driver does: cut into frames by the wire
//! crate's `next_frame` (an oversized payload skipped), each frame made an input by the
//! core's own [`TcpInput::of_frame`]. It imports nothing of the driver. After every step:
//! - no room has more members, or members plus reservations, than seats; at most
//!   `max_rooms` rooms exist; room ids only grow and are never reused;
//! - the listed rooms are exactly the UDP rooms whose instance socket is open (no ghost
//!   rooms); ports are unique among open sockets and none is also in the free pool;
//! - a party is never listed, holds a socket exactly while counting down or playing, never
//!   holds more players than seats, and every seated player is a connection the core and the
//!   driver both have open and that the core places in that party (no seat without a member);
//! - live player hashes are non-zero and unique; outputs go only to open connections and
//!   every TCP message encodes to a frame the wire parser reads back unchanged;
//! - every UDP lobby request, in either dialect (the seed's, or the upstream R-Type program's
//!   with room names, passwords and the spectator byte), is answered in its own dialect or
//!   counted as dropped (rate limit, reply budget); a JOIN_SUCCESS of a room with a password
//!   answers a JOIN_ROOM that offered it,
//!   every HELLO and PING is answered or counted as ignored, every TCP request is answered,
//!   counted, or is a READY that changes nothing (which the core answers with silence);
//! - a third of the TCP connections speak the upstream client's dialect
//!   (`docs/protocols/tcp-lobby-upstream.md`): rooms listed, created and joined, a seat
//!   held before CONNECT_REQ (hash 0 until then), READY toggled with its own hash or a
//!   foreign one; their messages encode in that dialect, and a party never mixes dialects;
//! - the core is node 1 of a group: a JOIN_ROOM of another node's room is an ask of its
//!   owner (never answered locally), answered later by the fake directory (granted,
//!   refused, or never, then timed out) or dropped at once when the directory is down;
//!   every ask is answered exactly once (asked = granted + refused + timed out + dropped +
//!   waiting), request ids are never reused while waiting, and other nodes' asks of this
//!   node's rooms run the local JOIN logic (a granted seat names the room's open port);
//! - one step queues a bounded number of outputs.
//!
//! At the end, once every client is silent past the idle timeout, every room is reaped and
//! every connection closed.
//!
//! With [`RtypeConfig::instance_exec`] (the `core_rtype_exec` target) every instance is a game
//! server the fake driver "starts" ([`Output::StartInstance`]) and that exits when a step says
//! so ([`RtypeCore::handle_instance_exited`]); nobody talks to lobbyd's instance protocol then.
//! The same invariants hold, and: a stop ([`Output::CloseInstance`]) is only for a game server
//! that runs or has just exited; a room never outlives its game server's exit unless it is a
//! party still in its lobby; at the end, once every game server has exited, nothing is left.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use crate::rtype::{
    server_repr, upstream_repr, ConnClose, ConnId, Dialect, InstanceRequest, JoinFailure,
    LobbyReply, LobbyRequest, Output, OwnerAnswer, PartyConfig, RemoteJoin, RoomId, RoomKind,
    RoomSettings, RoomState, RtypeConfig, RtypeCore, RtypeStats, TcpInput, TcpMessage, TcpRequest,
    MAX_PENDING_ASKS, NODE_SHIFT,
};
use crate::wire::tcp_lobby::{
    self as wire, name_field, next_frame, next_frame_max, ClientRepr, Next, ServerRepr,
    MAX_SERVER_PAYLOAD,
};
use crate::wire::tcp_upstream as up;

use super::script::{Choices, Script, ScriptRng};

/// Which part of the core the steps exercise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    /// The UDP room lobby and game instances (the `core_rtype_udp` target).
    Udp,
    /// TCP lobby parties and their instances (the `core_rtype_tcp` target).
    Tcp,
    /// Everything at once (the seeded simulation).
    Both,
}

/// Step kinds: 0-11 UDP lobby and instance, 12-18 TCP lobby, 19 a short wait.
const UDP_STEPS: [u8; 13] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 19];
const TCP_STEPS: [u8; 15] = [12, 13, 14, 15, 16, 17, 18, 19, 4, 6, 7, 8, 9, 10, 15];

/// The fake driver and what it knows.
pub struct RtypeSim {
    lobby: RtypeCore,
    now: Instant,
    mix: Mix,
    free_ports: BTreeSet<u16>,
    open: BTreeMap<RoomId, u16>,
    /// Rooms whose game server exited (`instance_exec`): a stop for them is a no-op.
    exited: BTreeSet<RoomId>,
    known_rooms: Vec<RoomId>,
    last_created: u32,
    max_rooms: usize,
    /// TCP connections the fake driver has open, each with what is left of its stream.
    conns: BTreeMap<usize, StreamCut>,
    next_conn: usize,
    /// Player hashes handed out (CONNECT_ACK) and not yet known gone, by connection.
    hashes: BTreeMap<usize, u64>,
    dest: Vec<SocketAddr>,
    /// Asks of other nodes' rooms the fake directory has not answered, by request id.
    asks: BTreeMap<u64, RoomId>,
    /// Other nodes' rooms and the ports their owners granted seats at.
    remote_ports: BTreeMap<RoomId, u16>,
    /// Print every output (`LOBBYD_FUZZ_TRACE=1`, for reading a crash).
    trace: bool,
}

/// The configuration of the seeded simulation: small limits, short timeouts.
pub fn seeded_config() -> RtypeConfig {
    RtypeConfig {
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
        node_id: Some(1),
        ..RtypeConfig::default()
    }
}

/// The seeded configuration with the knobs a script's first bytes turn: seats, countdowns,
/// the party minimum, auto-start and the violation limit.
fn scripted_config(choices: &mut impl Choices) -> RtypeConfig {
    let mut config = seeded_config();
    config.max_players = 1 + choices.below(4) as u8;
    config.countdown_secs = choices.below(3) as u8;
    config.party.min_players = 1 + choices.below(2) as u8;
    config.party.auto_start = choices.one_in(2);
    config.party.max_violations = 1 + choices.below(5) as u32;
    config
}

impl RtypeSim {
    /// A lobby with `config`, player hashes drawn from a 64-value space seeded by
    /// `hash_seed` (so collisions with live players happen and must be avoided).
    pub fn new(config: RtypeConfig, mix: Mix, hash_seed: u64) -> RtypeSim {
        let now = Instant::now();
        let max_rooms = config.max_rooms;
        let mut hash_rng = ScriptRng(hash_seed);
        let hashes = Box::new(move || hash_rng.below(64));
        RtypeSim {
            lobby: RtypeCore::new(config, now, hashes),
            now,
            mix,
            // Fewer ports than rooms allowed, so "no instance port" happens too.
            free_ports: (4300..4300 + max_rooms as u16 - 2).collect(),
            open: BTreeMap::new(),
            exited: BTreeSet::new(),
            known_rooms: Vec::new(),
            last_created: 0,
            max_rooms,
            conns: BTreeMap::new(),
            next_conn: 0,
            hashes: BTreeMap::new(),
            dest: Vec::new(),
            asks: BTreeMap::new(),
            remote_ports: BTreeMap::new(),
            trace: super::trace_enabled(),
        }
    }

    /// The core's counters.
    pub fn stats(&self) -> &RtypeStats {
        &self.lobby.stats
    }

    /// The most outputs one step may queue: a timeout can touch every room (a PEER_LEFT or
    /// COUNTDOWN per member, a close) and every connection (a close, a PLAYER_LEFT per
    /// party member).
    fn output_bound(&self) -> usize {
        let seats = usize::from(self.lobby.config().max_players);
        let conns = self.conns.len() + 1;
        // Upstream dialect: each seat freed tells every connection not in a room.
        16 + (self.lobby.room_count() + 2) * (4 * seats + 8) + 4 * conns * seats + conns * conns
    }

    /// Carries out every output, as the driver must after each call; returns them.
    fn drain(&mut self) -> Vec<Output> {
        let bound = self.output_bound();
        let mut done = Vec::new();
        while let Some(output) = self.lobby.poll_output() {
            if self.trace {
                eprintln!("  {output:?}");
            }
            done.push(output);
            assert!(done.len() <= bound, "more than {bound} outputs in one step");
            self.carry_out(output);
        }
        done
    }

    fn carry_out(&mut self, output: Output) {
        match output {
            Output::OpenInstance { room } | Output::StartInstance { room, .. } => {
                let port = self.free_ports.pop_first();
                if let Some(port) = port {
                    assert!(
                        self.open.insert(room, port).is_none(),
                        "{room} opened twice"
                    );
                }
                self.lobby.handle_instance_opened(self.now, room, port);
            }
            Output::CloseInstance { room } => match self.open.remove(&room) {
                Some(port) => {
                    self.free_ports.insert(port);
                }
                None => assert!(self.exited.contains(&room), "closing {room}, never opened"),
            },
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
            } if room.0 >> NODE_SHIFT != 1 => {
                assert_eq!(
                    self.remote_ports.get(&room),
                    Some(&port),
                    "another node's room joined without its owner"
                );
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
            Output::AskOwner { owner, req } => {
                let ask = *self.lobby.pending_ask(req).expect("the ask waits");
                assert!(owner != 0 && owner != 1, "asked node {owner}");
                assert_eq!(u32::from(owner), ask.room.0 >> NODE_SHIFT);
                let reused = self.asks.insert(ask.req, ask.room);
                assert!(reused.is_none(), "request id {} reused", ask.req);
            }
            Output::AnswerAsker { answer, .. } => {
                if let OwnerAnswer::Granted { room, port } = answer {
                    assert_eq!(self.open.get(&room), Some(&port), "granted without socket");
                }
            }
            Output::Tcp { conn, msg } => {
                assert!(
                    self.conns.contains_key(&conn.0),
                    "{msg:?} to closed {conn:?}"
                );
                let upstream = self.conns.get(&conn.0).is_some_and(|c| c.upstream);
                if upstream {
                    assert_encodes_upstream(&msg);
                } else {
                    assert_encodes(&msg);
                }
                if let TcpMessage::ConnectAck { hash, .. } = msg {
                    assert_ne!(hash, 0);
                    self.hashes.insert(conn.0, hash);
                }
            }
            Output::CloseConn { conn } => {
                assert!(
                    self.conns.remove(&conn.0).is_some(),
                    "closing closed {conn:?}"
                );
                self.hashes.remove(&conn.0);
            }
            Output::Lobby { .. } | Output::Instance { .. } => {}
        }
    }

    /// Checks every invariant of the module doc that holds between steps.
    pub fn check(&self) {
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
            let Some(party) = self.lobby.party(room.id) else {
                continue;
            };
            assert!(party.member_count() <= room.max_players());
            // One party, one dialect.
            let upstream = party.dialect() == up::Dialect::Upstream;
            for (_, member) in party.members() {
                if let Some(cut) = self.conns.get(&member.conn.0) {
                    assert_eq!(cut.upstream, upstream, "{:?} mixes dialects", room.id);
                }
            }
            // From GAME_START on, the seats are the game's roster, whose clients may close.
            if matches!(room.state, RoomState::Waiting | RoomState::Countdown) {
                for (slot, member) in party.members() {
                    assert!(
                        self.lobby.tcp_conn_is_open(member.conn)
                            && self.conns.contains_key(&member.conn.0),
                        "{:?} slot {slot}: seat without an open connection",
                        room.id
                    );
                    assert_eq!(self.lobby.party_of(member.conn), Some(room.id));
                }
            }
        }
        // Every connection the core knows is open in the driver.
        assert!(self.lobby.tcp_conn_count() <= self.conns.len());
        let live: Vec<u64> = self
            .lobby
            .rooms()
            .filter_map(|room| self.lobby.party(room.id))
            .flat_map(|party| {
                party
                    .members()
                    .filter(|(_, m)| m.connected)
                    .map(|(_, m)| m.hash)
            })
            .collect();
        let unique: BTreeSet<u64> = live.iter().copied().collect();
        assert_eq!(unique.len(), live.len(), "two live players share a hash");
        assert!(!unique.contains(&0), "a live player with hash 0");
        let remote = &self.lobby.stats.remote;
        let settled = remote.granted + remote.refused + remote.timeouts + remote.dropped;
        assert_eq!(
            remote.asked,
            settled + self.lobby.pending_asks() as u64,
            "an ask answered twice or never: {remote:?}"
        );
        assert!(self.lobby.pending_asks() <= MAX_PENDING_ASKS);
        let ports: BTreeSet<u16> = self.open.values().copied().collect();
        assert_eq!(ports.len(), self.open.len(), "a port serves two rooms");
        assert!(ports.is_disjoint(&self.free_ports));
    }

    fn step_kind(&self, choices: &mut impl Choices) -> u8 {
        match self.mix {
            Mix::Both => choices.below(20) as u8,
            Mix::Udp => choices.pick(&UDP_STEPS).unwrap_or(0),
            Mix::Tcp => choices.pick(&TCP_STEPS).unwrap_or(12),
        }
    }

    /// A room to talk to: mostly one the driver knows, now and then any id.
    fn room(&self, choices: &mut impl Choices) -> RoomId {
        let sockets: Vec<RoomId> = self.open.keys().copied().collect();
        match choices.below(10) {
            0 => RoomId(choices.below(20) as u32),
            1..=4 if !sockets.is_empty() => choices.pick(&sockets).unwrap_or(RoomId(0)),
            _ => choices
                .pick(&self.known_rooms)
                .or_else(|| choices.pick(&sockets))
                .unwrap_or(RoomId(0)),
        }
    }

    /// An upstream-dialect connection: mostly the newest (so a session, whose steps depend
    /// on where it stands, gets runs of them), now and then any.
    fn upstream_conn(&self, choices: &mut impl Choices) -> usize {
        let upstream: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, cut)| cut.upstream)
            .map(|(&conn, _)| conn)
            .collect();
        match upstream.last() {
            Some(&newest) if !choices.one_in(3) => newest,
            _ => choices.pick(&upstream).unwrap_or(0),
        }
    }

    /// A step of an upstream-dialect connection: a room request, CONNECT_REQ, a READY toggle
    /// with its own hash or a foreign one, START_REQ, DISCONNECT, a close or garbage.
    fn upstream_step(&mut self, conn: usize, kind: u8, choices: &mut impl Choices) {
        let own = self.hashes.get(&conn).copied().unwrap_or(0);
        let name = name_field(choices.pick(&["A", "B", "", "room"]).unwrap_or("A"));
        // Mostly a room of this dialect (as its client would pick from the list), now and
        // then any party or a made-up id.
        let rooms: Vec<u32> = self.lobby.upstream_rooms().map(|r| r.id).collect();
        let parties: Vec<u32> = self.lobby.rooms().map(|r| r.id.0).collect();
        let room = match choices.below(6) {
            0 => choices.below(20) as u32,
            1 => choices.pick(&parties).unwrap_or(0),
            _ => choices.pick(&rooms).unwrap_or(0),
        };
        let hash = if choices.one_in(5) {
            choices.below(64)
        } else {
            own
        };
        // Mostly what the real client would send next from where it stands, else anything.
        let in_room = self.lobby.party_of(ConnId(conn)).is_some();
        let ready = self.ready_flag(ConnId(conn)) == Some(true);
        let next = match (kind, in_room, own != 0, choices.below(6)) {
            (17, ..) => choices.below(3) + 7,
            (_, false, _, 0) => 0,
            (_, false, _, 1 | 2) => 1,
            (_, false, _, _) => 2,
            (_, true, false, _) => 3,
            (_, true, true, _) if ready => 4,
            (_, true, true, _) => 5,
        };
        let next = if choices.one_in(4) {
            choices.below(10)
        } else {
            next
        };
        let request = match next {
            0 => up::ClientRepr::ListRoomsReq,
            1 => up::ClientRepr::CreateRoomReq { name: &name },
            2 => up::ClientRepr::JoinRoomReq { room_id: room },
            3 => up::ClientRepr::ConnectReq { name: &name },
            4 => up::ClientRepr::StartReq,
            5 | 6 => up::ClientRepr::ReadyReq { hash },
            7 => up::ClientRepr::Disconnect { hash },
            8 => return self.input(conn, TcpInput::Closed(ConnClose::PeerClosed)),
            _ => {
                // Garbage: partial frames, bad lengths and types.
                let bytes = choices.bytes(40);
                return self.feed(conn, &bytes);
            }
        };
        let mut bytes = [0u8; up::HEADER_LEN + up::NAME_LEN];
        let len = request.emit(&mut bytes);
        self.feed(conn, &bytes[..len]);
    }

    /// An RFC-dialect connection (an upstream one now and then: RFC bytes in its stream).
    fn conn(&self, choices: &mut impl Choices) -> usize {
        let any = choices.one_in(20);
        let open: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, cut)| any || !cut.upstream)
            .map(|(&conn, _)| conn)
            .collect();
        choices.pick(&open).unwrap_or(0)
    }

    /// One random step, its outputs carried out and the invariants checked.
    pub fn step(&mut self, choices: &mut impl Choices) {
        let from = client(choices);
        let kind = self.step_kind(choices);
        if self.trace {
            eprintln!("step {kind} from {from} at {:?}", self.now);
        }
        match kind {
            0 => self.lobby_request(from, choices, LobbyRequest::ListRooms),
            1 => {
                let request = match choices.below(3) {
                    0 => LobbyRequest::CreateRoom,
                    _ => LobbyRequest::CreateRoomWith(RoomSettings {
                        name: pick_bytes(choices, NAMES),
                        password: pick_bytes(choices, PASSWORDS),
                    }),
                };
                self.lobby_request(from, choices, request);
            }
            2 | 3 => {
                let room = self.room(choices).0;
                let request = match choices.below(3) {
                    0 => LobbyRequest::JoinRoom(room),
                    _ => LobbyRequest::JoinRoomWith {
                        room,
                        password: pick_bytes(choices, PASSWORDS),
                        spectator: choices.below(8) == 0,
                    },
                };
                self.lobby_request(from, choices, request);
            }
            // A game server's players talk to it, not to lobbyd: its exit is the event.
            4..=9 | 18 if self.exec() => self.game_server_exits(choices),
            4 | 5 => self.instance_request(from, choices, InstanceRequest::Hello { token: None }),
            6 => self.instance_request(from, choices, InstanceRequest::Leave),
            7 => self.instance_request(from, choices, InstanceRequest::Start),
            8 => self.instance_request(from, choices, InstanceRequest::Ping),
            9 => self.data(from, choices),
            12 | 13 => {
                self.next_conn += 1;
                let upstream = choices.one_in(3);
                let cut = StreamCut {
                    upstream,
                    ..StreamCut::default()
                };
                self.conns.insert(self.next_conn, cut);
                self.lobby
                    .handle_tcp_open(self.now, ConnId(self.next_conn), from);
                self.drain();
                if upstream {
                    // What the driver reports once the first bytes told the dialect.
                    self.input(self.next_conn, TcpInput::Upstream);
                }
            }
            14..=17 if choices.one_in(3) && self.conns.values().any(|c| c.upstream) => {
                let conn = self.upstream_conn(choices);
                self.upstream_step(conn, kind, choices);
            }
            14 => {
                let names = ["A", "B", "C", "", "B"];
                let name = name_field(choices.pick(&names).unwrap_or("A"));
                let conn = self.conn(choices);
                self.send(conn, ClientRepr::ConnectReq { name: &name });
            }
            15 | 16 => {
                let request = match choices.below(4) {
                    0 => ClientRepr::ReadyReq { ready: false },
                    1 | 2 => ClientRepr::ReadyReq { ready: true },
                    _ => ClientRepr::StartReq,
                };
                let conn = self.conn(choices);
                self.send(conn, request);
            }
            17 => {
                let conn = self.conn(choices);
                match choices.below(3) {
                    0 => self.send(conn, ClientRepr::Disconnect),
                    1 => self.input(conn, TcpInput::Closed(ConnClose::PeerClosed)),
                    _ => {
                        // Garbage: partial frames, bad types, oversized headers.
                        let bytes = choices.bytes(40);
                        self.feed(conn, &bytes);
                    }
                }
            }
            18 => {
                // A HELLO carrying a hash some TCP client was given (or a made-up one).
                let token = match self.hashes.values().next() {
                    Some(hash) if choices.one_in(2) => *hash,
                    _ => choices.below(64),
                };
                let hello = InstanceRequest::Hello { token: Some(token) };
                self.instance_request(from, choices, hello);
            }
            10 => self.directory_step(from, choices),
            19 => self.wait(Duration::from_millis(choices.below(300))),
            _ => self.wait(Duration::from_millis(choices.below(900))),
        }
        self.check();
    }

    fn exec(&self) -> bool {
        self.lobby.config().instance_exec
    }

    /// The game server of a room the driver runs one for exits (or, now and then, a report
    /// for a room without one).
    fn game_server_exits(&mut self, choices: &mut impl Choices) {
        let room = self.room(choices);
        if let Some(port) = self.open.remove(&room) {
            self.free_ports.insert(port);
            self.exited.insert(room);
        }
        self.lobby.handle_instance_exited(self.now, room);
        self.drain();
        if let Some(room) = self.lobby.room(room) {
            // Only a party still in its lobby outlives its game server, Waiting, without a port.
            let waiting = (room.kind, room.state, room.port);
            assert_eq!(
                waiting,
                (RoomKind::Party, RoomState::Waiting, None),
                "{:?} outlived its game server",
                room.id
            );
        }
    }

    /// Every running game server exits (`instance_exec`).
    fn every_game_server_exits(&mut self) {
        let rooms: Vec<RoomId> = self.open.keys().copied().collect();
        for room in rooms {
            if let Some(port) = self.open.remove(&room) {
                self.free_ports.insert(port);
                self.exited.insert(room);
            }
            self.lobby.handle_instance_exited(self.now, room);
            self.drain();
        }
    }

    /// The directory: its state changes, an answer to one of this node's asks (granted,
    /// refused, or for no ask), another node's ask of one of this node's rooms, or a
    /// JOIN_ROOM of another node's room.
    fn directory_step(&mut self, from: SocketAddr, choices: &mut impl Choices) {
        match choices.below(6) {
            0 => self.lobby.handle_directory_state(!choices.one_in(3)),
            1 | 2 => {
                let pending: Vec<u64> = self.asks.keys().copied().collect();
                let req = match choices.pick(&pending) {
                    Some(req) if !choices.one_in(6) => req,
                    _ => choices.below(1 << 20),
                };
                let room = self
                    .asks
                    .remove(&req)
                    .unwrap_or(RoomId(2 << NODE_SHIFT | 1));
                let answer = match choices.below(3) {
                    0 => OwnerAnswer::Refused(JoinFailure::Full),
                    _ => {
                        let port = 6000 + choices.below(100) as u16;
                        self.remote_ports.insert(room, port);
                        OwnerAnswer::Granted { room, port }
                    }
                };
                self.lobby.handle_owner_answer(self.now, req, answer);
                self.drain();
            }
            3 | 4 => {
                let room = self.room(choices);
                let password = pick_bytes(choices, &PASSWORDS[..3]);
                let req = choices.below(1 << 20);
                if let Some(ask) = RemoteJoin::new(req, room, from, password) {
                    let asker = 2 + choices.below(3) as u8;
                    self.lobby.handle_remote_join(self.now, asker, ask);
                    let outputs = self.drain();
                    let answered = outputs.iter().filter(|o| {
                        matches!(o, Output::AnswerAsker { asker: a, req: r, .. }
                            if *a == asker && *r == req)
                    });
                    assert_eq!(answered.count(), 1, "{outputs:?}");
                }
            }
            _ => {
                let room = (2 + choices.below(2) as u32) << NODE_SHIFT | choices.below(4) as u32;
                self.lobby_request(from, choices, LobbyRequest::JoinRoom(room));
            }
        }
    }

    fn wait(&mut self, by: Duration) {
        self.now += by;
        self.lobby.handle_timeout(self.now);
        self.drain();
    }

    /// A UDP lobby request, in a dialect the script picks: answered in it, or counted as
    /// dropped.
    fn lobby_request(
        &mut self,
        from: SocketAddr,
        choices: &mut impl Choices,
        req: LobbyRequest<'_>,
    ) {
        let seq = choices.below(1 << 16) as u16;
        let dialect = match (req, choices.below(2)) {
            // The seed's dialect has no settings, passwords or spectators.
            (LobbyRequest::CreateRoomWith(_) | LobbyRequest::JoinRoomWith { .. }, _) | (_, 0) => {
                Dialect::Upstream
            }
            _ => Dialect::Seed,
        };
        // An ask of another node's room is answered later (or dropped and counted now).
        let dropped = |stats: &RtypeStats| {
            stats.rate_limited + stats.reply_budget_exceeded + stats.remote.asked
        };
        let before = dropped(&self.lobby.stats);
        self.lobby
            .handle_lobby_request_in(self.now, from, dialect, seq, req);
        let outputs = self.drain();
        let answers = outputs
            .iter()
            .filter(|o| {
                matches!(o, Output::Lobby { to, seq: s, dialect: d, .. }
                    if *to == from && *s == seq && *d == dialect)
            })
            .count();
        let drops = dropped(&self.lobby.stats) - before;
        assert_eq!(answers + drops as usize, 1, "{req:?}: {outputs:?}");
        let offered: &[u8] = match req {
            LobbyRequest::JoinRoomWith { password, .. } => password,
            _ => b"",
        };
        for output in &outputs {
            if let Output::Lobby {
                reply: LobbyReply::JoinSuccess { room, .. },
                ..
            } = output
            {
                let room = self.lobby.room(*room).expect("a joined room exists");
                assert!(room.admits_password(offered), "joined without its password");
            }
        }
    }

    /// An instance control message: HELLO and PING answered or counted as ignored.
    fn instance_request(
        &mut self,
        from: SocketAddr,
        choices: &mut impl Choices,
        req: InstanceRequest,
    ) {
        let room = self.room(choices);
        let seq = choices.below(1 << 16) as u16;
        let ignored = |stats: &RtypeStats| stats.instance_ignored.iter().sum::<u64>();
        let before = ignored(&self.lobby.stats);
        self.lobby
            .handle_instance_request(self.now, room, from, seq, req);
        let outputs = self.drain();
        if matches!(req, InstanceRequest::Hello { .. } | InstanceRequest::Ping) {
            let answered = outputs.iter().any(|o| {
                matches!(o, Output::Instance { room: r, to, seq: s, .. }
                    if *r == room && *to == from && *s == seq)
            });
            let counted = ignored(&self.lobby.stats) > before;
            assert!(answered != counted, "{req:?} to {room}: {outputs:?}");
        }
    }

    fn data(&mut self, from: SocketAddr, choices: &mut impl Choices) {
        let room = self.room(choices);
        let target = choices.pick(&[0xFF, 1, 2, 3, 4, 7]).unwrap_or(0xFF);
        let mut dest = std::mem::take(&mut self.dest);
        if self
            .lobby
            .relay_data(self.now, room, from, target, &mut dest)
            .is_some()
        {
            // Never back to the sender; a unicast goes to exactly one member.
            assert!(!dest.contains(&from));
            assert!(target == 0xFF || dest.len() == 1);
        }
        self.dest = dest;
        self.drain();
    }

    /// A client request as its bytes on `conn`.
    fn send(&mut self, conn: usize, request: ClientRepr<'_>) {
        let mut bytes = [0u8; wire::HEADER_LEN + wire::MAX_CLIENT_PAYLOAD];
        let len = request.emit(&mut bytes);
        self.feed(conn, &bytes[..len]);
    }

    /// Bytes read from `conn`, decoded as the driver decodes them.
    fn feed(&mut self, conn: usize, bytes: &[u8]) {
        let Some(reader) = self.conns.get_mut(&conn) else {
            return;
        };
        let inputs = reader.push(bytes);
        for input in inputs {
            self.input(conn, input);
        }
    }

    /// One decoded input, as the driver hands it over, and what the core makes of it.
    fn input(&mut self, conn: usize, input: TcpInput) {
        let id = ConnId(conn);
        // The driver stops handing over input once the core has closed the connection.
        if !self.lobby.tcp_conn_is_open(id) {
            return;
        }
        let counted = |stats: &RtypeStats| {
            stats.tcp.violations.iter().sum::<u64>()
                + stats.tcp.closed.iter().sum::<u64>()
                + stats.tcp.upstream_refused.iter().sum::<u64>()
                + stats.tcp.foreign_ready
        };
        let before = counted(&self.lobby.stats);
        let unchanged_ready = match input {
            TcpInput::Request(TcpRequest::Ready(ready)) => self.ready_flag(id) == Some(ready),
            _ => false,
        };
        match input {
            TcpInput::Request(request) => self.lobby.handle_tcp_request(self.now, id, request),
            TcpInput::Violation(reason) => self.lobby.handle_tcp_violation(id, reason),
            TcpInput::Upstream => self.lobby.handle_tcp_upstream(id),
            TcpInput::Closed(why) => {
                self.conns.remove(&conn);
                self.hashes.remove(&conn);
                self.lobby.handle_tcp_closed(id, why);
            }
        }
        let outputs = self.drain();
        if let TcpInput::Request(request) = input {
            let answered = outputs.iter().any(|o| match o {
                Output::Tcp { conn: c, .. } | Output::CloseConn { conn: c } => *c == id,
                _ => false,
            });
            let counted = counted(&self.lobby.stats) > before;
            assert!(
                answered || counted || unchanged_ready,
                "{request:?} on {id:?} neither answered nor counted: {outputs:?}"
            );
        }
    }

    /// The ready flag of `conn`'s seat, if it has one.
    fn ready_flag(&self, conn: ConnId) -> Option<bool> {
        let party = self.lobby.party(self.lobby.party_of(conn)?)?;
        party
            .members()
            .find(|(_, m)| m.conn == conn)
            .map(|(_, m)| m.ready)
    }

    /// Everyone goes quiet: every room must end up reaped, every port back in the pool and
    /// every connection closed.
    pub fn wind_down(&mut self) {
        let idle = self.lobby.config().idle_timeout;
        for _ in 0..40 {
            // Game servers end by themselves; the last players may still start new ones.
            if self.exec() {
                self.every_game_server_exits();
            }
            self.wait(idle / 4);
            self.check();
        }
        assert_eq!(self.lobby.room_count(), 0, "rooms left behind");
        assert!(self.open.is_empty());
        assert_eq!(self.lobby.tcp_conn_count(), 0, "connections left behind");
        assert!(
            self.conns.is_empty(),
            "the core never closed some connections"
        );
    }
}

/// One connection's stream as the fake driver cuts it: the bytes of an incomplete frame, and
/// how much of an oversized payload is still to be skipped. (The real driver keeps the same
/// two things in a fixed array; the `wire_tcp_lobby` target checks that its cuts do not depend
/// on how the stream is split, so cutting the joined bytes gives the same inputs.)
#[derive(Debug, Default)]
struct StreamCut {
    partial: Vec<u8>,
    skip: usize,
    /// The stream is in the upstream client's dialect.
    upstream: bool,
}

impl StreamCut {
    /// Appends `bytes` and returns the inputs of every piece they complete, in order.
    fn push(&mut self, mut bytes: &[u8]) -> Vec<TcpInput> {
        let skipped = self.skip.min(bytes.len());
        self.skip -= skipped;
        bytes = &bytes[skipped..];
        self.partial.extend_from_slice(bytes);
        let mut inputs = Vec::new();
        let mut at = 0;
        while self.upstream {
            match up::next_frame(&self.partial[at..]) {
                up::Next::Frame { frame, consumed } => {
                    inputs.push(TcpInput::of_upstream_frame(&frame));
                    at += consumed;
                }
                up::Next::BadLength { declared } => {
                    inputs.push(TcpInput::BAD_LENGTH);
                    at += up::LENGTH_LEN;
                    let skipped = declared.min(self.partial.len() - at);
                    at += skipped;
                    self.skip = declared - skipped;
                }
                up::Next::NeedMore => {
                    self.partial.drain(..at);
                    return inputs;
                }
            }
        }
        loop {
            match next_frame(&self.partial[at..]) {
                Next::Frame { frame, consumed } => {
                    inputs.push(TcpInput::of_frame(&frame));
                    at += consumed;
                }
                Next::Oversized { declared, .. } => {
                    inputs.push(TcpInput::OVERSIZED);
                    at += wire::HEADER_LEN;
                    let skipped = declared.min(self.partial.len() - at);
                    at += skipped;
                    self.skip = declared - skipped;
                }
                Next::NeedMore => break,
            }
        }
        self.partial.drain(..at);
        inputs
    }
}

/// A client address among 30 hosts with two ports each.
fn client(choices: &mut impl Choices) -> SocketAddr {
    let host = 2 + choices.below(30) as u8;
    let port = 5000 + choices.below(2) as u16;
    SocketAddr::from((Ipv4Addr::new(127, 0, 0, host), port))
}

/// Every TCP message the core sends (but GAME_START, built by the driver from the roster)
/// encodes to a frame the wire parser reads back as the same message.
fn assert_encodes(msg: &TcpMessage) {
    let Some(repr) = server_repr(msg) else {
        return;
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    let len = repr.emit(&mut buf);
    let Next::Frame { frame, consumed } = next_frame_max(&buf[..len], MAX_SERVER_PAYLOAD) else {
        panic!("{msg:?} does not encode to one whole frame");
    };
    assert_eq!(consumed, len);
    let parsed = ServerRepr::parse(&frame).expect("the core's message parses");
    let mut again = vec![0u8; parsed.buffer_len()];
    parsed.emit(&mut again);
    assert_eq!(again, buf, "{msg:?} changes through the wire");
}

/// Every upstream-dialect message the core sends (but GAME_START and LIST_ROOMS_ACK, built by
/// the driver from the core's data) encodes to a frame that reads back the same.
fn assert_encodes_upstream(msg: &TcpMessage) {
    let Some(repr) = upstream_repr(msg) else {
        return;
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    let len = repr.emit(&mut buf);
    let up::Next::Frame { frame, consumed } = up::next_frame_max(&buf[..len], up::MAX_LEN) else {
        panic!("{msg:?} does not encode to one whole frame");
    };
    assert_eq!(consumed, len);
    assert_eq!(
        up::ServerRepr::parse(&frame),
        Ok(repr),
        "{msg:?} changes through the wire"
    );
}

/// The seeded simulation of `tests/it/simulation.rs`: `steps` steps of `mix`, then the wind-down;
/// returns the counters so the test can check the run reached the interesting places.
pub fn simulate(seed: u64, steps: usize, mix: Mix) -> RtypeStats {
    let mut sim = RtypeSim::new(seeded_config(), mix, seed ^ 0x5555);
    let mut rng = ScriptRng(seed);
    for _ in 0..steps {
        sim.step(&mut rng);
    }
    sim.wind_down();
    sim.stats().clone()
}

/// [`simulate`] with every instance a game server (`--instance-exec`).
pub fn simulate_exec(seed: u64, steps: usize) -> RtypeStats {
    let config = RtypeConfig {
        instance_exec: true,
        ..seeded_config()
    };
    let mut sim = RtypeSim::new(config, Mix::Both, seed ^ 0x5555);
    let mut rng = ScriptRng(seed);
    for _ in 0..steps {
        sim.step(&mut rng);
    }
    sim.wind_down();
    sim.stats().clone()
}

fn fuzz(input: &[u8], mix: Mix) {
    fuzz_with(input, mix, false);
}

fn fuzz_with(input: &[u8], mix: Mix, instance_exec: bool) {
    let mut script = Script::new(input);
    let mut config = scripted_config(&mut script);
    config.instance_exec = instance_exec;
    let hash_seed = script.below(1 << 16);
    let mut sim = RtypeSim::new(config, mix, hash_seed);
    while !script.is_done() {
        sim.step(&mut script);
    }
    sim.wind_down();
}

/// Fuzz target `core_rtype_udp`: the UDP room lobby and game instances, scripted by `input`.
pub fn fuzz_udp(input: &[u8]) {
    fuzz(input, Mix::Udp);
}

/// Fuzz target `core_rtype_tcp`: TCP lobby parties and their instances, scripted by `input`.
pub fn fuzz_tcp(input: &[u8]) {
    fuzz(input, Mix::Tcp);
}

/// Fuzz target `core_rtype_exec`: UDP rooms and TCP parties whose instances are game servers
/// (`--instance-exec`) that start, exit and are stopped, scripted by `input`.
pub fn fuzz_exec(input: &[u8]) {
    fuzz_with(input, Mix::Both, true);
}

/// Room names an upstream CREATE_ROOM offers: none, a short one, the longest kept, one byte
/// too long.
const NAMES: &[&[u8]] = &[b"", b"Alpha", &[b'n'; 32], &[b'n'; 33]];
/// Passwords a CREATE_ROOM sets and a JOIN_ROOM offers, the last one byte too long.
const PASSWORDS: &[&[u8]] = &[b"", b"pw12", b"pw13", &[b'p'; 65]];

fn pick_bytes(choices: &mut impl Choices, from: &[&'static [u8]]) -> &'static [u8] {
    choices.pick(from).unwrap_or(b"")
}
