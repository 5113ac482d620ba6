//! Three R-Type cores as nodes 1-3 of a group, against a fake in-memory directory that
//! carries their asks and answers (`remote_join.rs`: a JOIN_ROOM of another node's room,
//! decided by its owner) with random delays and losses, and drops asks older than the
//! inbox's 250 ms (as `directory::inbox` does by the Redis clock). A seeded run
//! (`tests/it/simulation.rs`) takes random steps: a create on a node, a JOIN of any room
//! through any node, a HELLO or LEAVE on a room's owner, a node's directory going down or
//! up, time passing. After every step:
//! - no room of any node holds more members plus reservations than seats;
//! - every JOIN_ROOM has had at most one reply (JOIN_SUCCESS or JOIN_FAILED), and at the
//!   end, once the asks' timeouts are past, exactly one;
//! - a JOIN_SUCCESS of another node's room names the room's port on its owner;
//! - each core's asks add up: asked = granted + refused + timed out + dropped + waiting.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use crate::rtype::{
    InstanceRequest, LobbyReply, LobbyRequest, Output, OwnerAnswer, RemoteJoin, RoomId,
    RtypeConfig, RtypeCore, RtypeStats, ASK_TIMEOUT, NODE_SHIFT,
};

use super::core_rtype::seeded_config;
use super::script::{Choices, ScriptRng};

/// Nodes in the group.
const NODES: u8 = 3;
/// Client addresses (seats are per address).
const CLIENTS: u8 = 8;

/// What the fake directory carries.
#[derive(Clone, Copy, Debug)]
enum Carried {
    Ask { from: u8, ask: RemoteJoin },
    Answer { req: u64, answer: OwnerAnswer },
}

/// One message on its way.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    /// When it reached the directory (its entry id's clock).
    sent: Instant,
    /// When the receiving node reads it.
    deliver: Instant,
    to: u8,
    what: Carried,
}

/// The group and the fake directory between its nodes.
pub struct GroupSim {
    cores: Vec<RtypeCore>,
    now: Instant,
    rng: ScriptRng,
    in_flight: Vec<InFlight>,
    /// Each node's open instance ports, by room.
    ports: Vec<BTreeMap<RoomId, u16>>,
    next_port: u16,
    /// Rooms created, any node.
    rooms: Vec<RoomId>,
    /// JOIN_ROOMs not answered yet: (node asked, client, seq).
    waiting: BTreeMap<(u8, SocketAddr, u16), ()>,
    next_seq: u16,
    /// Replies to a JOIN_ROOM, total.
    pub replies: u64,
    /// JOIN_SUCCESS of another node's room, total.
    pub remote_successes: u64,
}

fn config(node: u8) -> RtypeConfig {
    let mut config = seeded_config();
    config.node_id = Some(node);
    config.rate.rate = 1_000_000;
    config.rate.burst = 1_000_000;
    config.rate.byte_rate = 1 << 40;
    config.rate.byte_burst = 1 << 40;
    config
}

fn client(n: u8) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::new(127, 0, 0, 2 + n), 5000))
}

impl GroupSim {
    /// Three nodes, every directory up, choices from `seed`.
    pub fn new(seed: u64) -> GroupSim {
        let now = Instant::now();
        let cores = (1..=NODES)
            .map(|node| {
                let mut hashes = ScriptRng(seed ^ u64::from(node));
                let mut core =
                    RtypeCore::new(config(node), now, Box::new(move || hashes.next_u64()));
                core.handle_directory_state(true);
                core
            })
            .collect();
        GroupSim {
            cores,
            now,
            rng: ScriptRng(seed),
            in_flight: Vec::new(),
            ports: vec![BTreeMap::new(); usize::from(NODES)],
            next_port: 4000,
            rooms: Vec::new(),
            waiting: BTreeMap::new(),
            next_seq: 0,
            replies: 0,
            remote_successes: 0,
        }
    }

    /// The counters of node `node` (1-3).
    pub fn stats(&self, node: u8) -> &RtypeStats {
        &self.cores[usize::from(node - 1)].stats
    }

    fn core(&mut self, node: u8) -> &mut RtypeCore {
        &mut self.cores[usize::from(node - 1)]
    }

    /// A message leaves node `from`'s directory link: lost one time in ten, else read by
    /// its node after up to 400 ms (so some asks time out, some answers come late).
    fn carry(&mut self, to: u8, what: Carried) {
        if self.rng.one_in(10) {
            return;
        }
        let delay = match self.rng.below(4) {
            0 => Duration::from_millis(self.rng.below(400)),
            _ => Duration::from_micros(self.rng.below(3000)),
        };
        self.in_flight.push(InFlight {
            sent: self.now,
            deliver: self.now + delay,
            to,
            what,
        });
    }

    /// Carries out node `node`'s outputs.
    fn drain(&mut self, node: u8) {
        while let Some(output) = self.core(node).poll_output() {
            match output {
                Output::OpenInstance { room } => {
                    self.next_port += 1;
                    let port = self.next_port;
                    self.ports[usize::from(node - 1)].insert(room, port);
                    let now = self.now;
                    self.core(node)
                        .handle_instance_opened(now, room, Some(port));
                }
                Output::CloseInstance { room } => {
                    self.ports[usize::from(node - 1)].remove(&room);
                }
                Output::AskOwner { owner, req } => {
                    let ask = *self.core(node).pending_ask(req).expect("the ask waits");
                    assert!((1..=NODES).contains(&owner) && owner != node);
                    self.carry(owner, Carried::Ask { from: node, ask });
                }
                Output::AnswerAsker { asker, req, answer } => {
                    self.carry(asker, Carried::Answer { req, answer });
                }
                Output::Lobby { to, seq, reply, .. } => self.lobby_reply(node, to, seq, reply),
                _ => {}
            }
        }
    }

    fn lobby_reply(&mut self, node: u8, to: SocketAddr, seq: u16, reply: LobbyReply) {
        match reply {
            LobbyReply::RoomCreated { room, .. } => self.rooms.push(room),
            LobbyReply::JoinSuccess { room, port } => {
                let removed = self.waiting.remove(&(node, to, seq));
                assert!(removed.is_some(), "a second reply to one JOIN");
                self.replies += 1;
                let owner = (room.0 >> NODE_SHIFT) as u8;
                if owner != node {
                    self.remote_successes += 1;
                    // The owner may have reaped the room since it granted the seat; if it
                    // still has it, the port is its.
                    if let Some(&owned) = self.ports[usize::from(owner - 1)].get(&room) {
                        assert_eq!(owned, port, "a remote JOIN_SUCCESS names another port");
                    }
                }
            }
            LobbyReply::JoinFailed(_) => {
                if self.waiting.remove(&(node, to, seq)).is_some() {
                    self.replies += 1;
                } else {
                    // A CREATE_ROOM's refusal is spelled JOIN_FAILED too.
                    assert!(seq >= 0x8000, "a second reply to one JOIN");
                }
            }
            LobbyReply::RoomList => {}
        }
    }

    /// Delivers every message due, and every timer.
    fn advance(&mut self, by: Duration) {
        self.now += by;
        let now = self.now;
        let (due, later): (Vec<InFlight>, Vec<InFlight>) =
            self.in_flight.drain(..).partition(|m| m.deliver <= now);
        self.in_flight = later;
        for message in due {
            match message.what {
                Carried::Ask { from, ask } => {
                    // The inbox reader drops asks its asker gave up on.
                    if now.duration_since(message.sent) > ASK_TIMEOUT {
                        continue;
                    }
                    self.core(message.to).handle_remote_join(now, from, ask);
                }
                Carried::Answer { req, answer } => {
                    self.core(message.to).handle_owner_answer(now, req, answer);
                }
            }
            self.drain(message.to);
        }
        for node in 1..=NODES {
            self.core(node).handle_timeout(now);
            self.drain(node);
        }
    }

    /// One random step, then the invariants.
    pub fn step(&mut self) {
        let node = 1 + self.rng.below(u64::from(NODES)) as u8;
        let from = client(self.rng.below(u64::from(CLIENTS)) as u8);
        let now = self.now;
        match self.rng.below(10) {
            0 => {
                // Creates are told apart from JOINs by their sequence ids.
                let seq = 0x8000 | self.rng.below(0x8000) as u16;
                self.core(node)
                    .handle_lobby_request(now, from, seq, LobbyRequest::CreateRoom);
            }
            1..=4 => {
                let room = match self.rng.pick(&self.rooms) {
                    Some(room) if !self.rng.one_in(10) => room.0,
                    _ => (1 + self.rng.below(3) as u32) << NODE_SHIFT | self.rng.below(5) as u32,
                };
                self.next_seq = (self.next_seq + 1) % 0x8000;
                let seq = self.next_seq;
                // A reply still owed on this key would make the next one ambiguous.
                if self.waiting.insert((node, from, seq), ()).is_some() {
                    panic!("sequence id reused while waiting");
                }
                self.core(node)
                    .handle_lobby_request(now, from, seq, LobbyRequest::JoinRoom(room));
            }
            5 | 6 => {
                // HELLO or LEAVE on the room's owner.
                let Some(room) = self.rng.pick(&self.rooms) else {
                    return self.check();
                };
                let owner = (room.0 >> NODE_SHIFT) as u8;
                let request = if self.rng.one_in(3) {
                    InstanceRequest::Leave
                } else {
                    InstanceRequest::Hello { token: None }
                };
                self.core(owner)
                    .handle_instance_request(now, room, from, 1, request);
                self.drain(owner);
                return self.advance(Duration::ZERO);
            }
            7 if self.rng.one_in(8) => {
                let up = !self.rng.one_in(3);
                self.core(node).handle_directory_state(up);
            }
            _ => {
                let by = Duration::from_millis(self.rng.below(120));
                self.advance(by);
                return self.check();
            }
        }
        self.drain(node);
        self.check();
    }

    /// Checks the invariants of the module doc that hold between steps.
    pub fn check(&self) {
        for core in &self.cores {
            for room in core.rooms() {
                assert!(
                    room.occupancy() <= room.max_players(),
                    "{:?} over capacity",
                    room.id
                );
            }
            let r = &core.stats.remote;
            let settled = r.granted + r.refused + r.timeouts + r.dropped;
            assert_eq!(r.asked, settled + core.pending_asks() as u64, "{r:?}");
        }
    }

    /// Lets every ask time out and every message land: then every JOIN_ROOM has its reply.
    pub fn settle(&mut self) {
        for _ in 0..10 {
            self.advance(Duration::from_millis(100));
        }
        assert!(self.in_flight.is_empty());
        assert!(
            self.waiting.is_empty(),
            "JOINs never answered: {:?}",
            self.waiting
        );
        for core in &self.cores {
            assert_eq!(core.pending_asks(), 0);
        }
    }
}

/// A seeded run of `steps` steps: the invariants after each, every JOIN answered at the end.
pub fn simulate_group(seed: u64, steps: usize) -> GroupSim {
    let mut sim = GroupSim::new(seed);
    for _ in 0..steps {
        sim.step();
    }
    sim.settle();
    sim
}
