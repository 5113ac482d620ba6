//! The R-Type core: a sans-IO state machine for rooms, seats and game instances.
//!
//! It implements the behaviour of the UDP room lobby (`rtype-udp-lobby-protocol.md`
//! sections 4-14) and of lobbyd's game-instance relay (`docs/protocols/instance.md`). It owns
//! no socket and never reads the clock: the driver hands it decoded requests and the current
//! time through `handle_*` methods and collects what to do through [`RtypeCore::poll_output`]
//! (send a reply, bind or close an instance socket) and [`RtypeCore::poll_timeout`] (when to call
//! [`RtypeCore::handle_timeout`] next). Timers run on one fixed-tick [`TimerWheel`].
//!
//! The output queue is bounded by what one `handle_*` call produces (the driver drains it
//! after each: a TCP request queues at most one message per party member plus a newcomer's
//! roster, a UDP request one reply), and after a burst its memory is given back once drained
//! ([`OUTPUT_KEEP`]).
//!
//! Instance sockets are bound by the driver: CREATE_ROOM yields [`Output::OpenInstance`],
//! the driver answers with [`RtypeCore::handle_instance_opened`], and only then is ROOM_CREATED
//! (or JOIN_FAILED) queued. So a listed room always has a live socket, and a room's socket is
//! closed ([`Output::CloseInstance`]) in the same step that removes it from the list.

mod config;
mod messages;
pub mod party;
pub mod room;
pub mod room_map;
pub mod stats;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::ratelimit::PerIpLimiter;
use crate::time::wheel::TimerWheel;
use crate::wire::udp_lobby::room_list_len;

pub use config::RtypeConfig;
pub use messages::{
    InstanceMessage, InstanceRequest, LobbyReply, LobbyRequest, Output, RejectReason, RoomInfo,
};
pub use party::{
    CloseCause, ConnClose, ConnId, Party, PartyConfig, PartyStats, TcpError, TcpMessage,
    TcpRequest, Violation,
};
pub use room::{Room, RoomId, RoomKind, RoomState, Slot};
pub use stats::{InstanceIgnore, JoinFailure, RtypeStats};

use room::{Countdown, SeatRefusal};
use room_map::RoomTable;

/// Bytes of ROOM_CREATED and JOIN_SUCCESS (6-byte payload).
const ROOM_PORT_REPLY_LEN: usize = 8 + 6 + 4;
/// Bytes of JOIN_FAILED (empty payload).
const JOIN_FAILED_LEN: usize = 8 + 4;
/// Output records the queue keeps room for once drained; a burst above it (a countdown tick
/// in thousands of parties, say) is given back.
pub const OUTPUT_KEEP: usize = 4096;

/// What a timer entry stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimerEvent {
    Housekeeping(RoomId),
    CountdownTick(RoomId),
    Reap(RoomId),
    PartyTick(RoomId),
    PartyLinger(RoomId),
    ConnDeadline(ConnId),
}

/// A create request waiting for its instance socket.
#[derive(Clone, Copy, Debug)]
struct PendingCreate {
    to: SocketAddr,
    seq: u16,
}

/// Timer wheel slots: one revolution is 4,096 ticks (0.41 s at the driver's 100 us tick).
/// Later deadlines (idle connections, room housekeeping) wait a level up in the wheel and
/// cost no wake-ups until their revolution comes.
const TIMER_SLOTS: usize = 4096;

/// The lobby: every room, its timers and the queue of outputs.
pub struct RtypeCore {
    config: RtypeConfig,
    /// Every room and the order ROOM_LIST offers them in.
    rooms: RoomTable,
    pending_creates: HashMap<RoomId, PendingCreate>,
    next_room_id: u32,
    timers: TimerWheel<TimerEvent>,
    limiter: PerIpLimiter,
    outputs: VecDeque<Output>,
    /// TCP lobby parties and connections (`party.rs`).
    tcp: party::TcpState,
    /// The core's counters.
    pub stats: RtypeStats,
}

impl RtypeCore {
    /// A lobby with no rooms; `now` anchors the timer wheel. Player hashes come from the
    /// operating system's CSPRNG.
    pub fn new(config: RtypeConfig, now: Instant) -> RtypeCore {
        let mut random = party::OsRandom::default();
        RtypeCore::with_hash_source(config, now, Box::new(move || random.next_u64()))
    }

    /// A lobby drawing TCP player hashes from `hash_source` (simulations pass a seeded one).
    pub fn with_hash_source(
        config: RtypeConfig,
        now: Instant,
        hash_source: Box<dyn FnMut() -> u64 + Send>,
    ) -> RtypeCore {
        let timers = TimerWheel::new(now, config.timer_tick, TIMER_SLOTS);
        let limiter = PerIpLimiter::new(config.rate);
        RtypeCore {
            config,
            rooms: RoomTable::default(),
            pending_creates: HashMap::new(),
            next_room_id: 1,
            timers,
            limiter,
            outputs: VecDeque::new(),
            tcp: party::TcpState::new(hash_source),
            stats: RtypeStats::default(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &RtypeConfig {
        &self.config
    }

    /// The next thing for the driver to do. Once the queue is drained, memory it held after
    /// a burst is given back (down to [`OUTPUT_KEEP`] records).
    pub fn poll_output(&mut self) -> Option<Output> {
        let output = self.outputs.pop_front();
        if output.is_none() && self.outputs.capacity() > OUTPUT_KEEP {
            self.outputs.shrink_to(OUTPUT_KEEP);
        }
        output
    }

    /// Whether outputs are waiting for [`RtypeCore::poll_output`].
    pub fn has_output(&self) -> bool {
        !self.outputs.is_empty()
    }

    /// The periodic tidy (the driver calls it every few seconds): forgets up to `budget`
    /// rate-limit entries whose buckets are full again and gives back spare capacity.
    /// Changes no decision.
    pub fn tidy(&mut self, now: Instant, budget: usize) {
        self.limiter.tidy(now, budget);
    }

    /// When [`RtypeCore::handle_timeout`] must be called next, if any timer is armed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next_deadline()
    }

    /// Number of rooms alive (bound, opening or finishing).
    pub fn room_count(&self) -> usize {
        self.rooms.len()
    }

    /// A room, for inspection (operators' views, tests).
    pub fn room(&self, id: RoomId) -> Option<&Room> {
        self.rooms.get(&id)
    }

    /// Every room, in no particular order.
    pub fn rooms(&self) -> impl Iterator<Item = &Room> + '_ {
        self.rooms.values()
    }

    /// Source IPs tracked by the UDP lobby's rate limiter.
    pub fn rate_table_len(&self) -> usize {
        self.limiter.len()
    }

    /// The ROOM_LIST records: at most `max_list_rooms`, joinable rooms first, each group in
    /// creation order. Allocates nothing.
    pub fn room_list(&self) -> impl Iterator<Item = RoomInfo> + '_ {
        let joinable = self.listed_rooms().filter(|room| room.is_joinable());
        let others = self.listed_rooms().filter(|room| !room.is_joinable());
        joinable
            .chain(others)
            .filter_map(|room| {
                Some(RoomInfo {
                    room: room.id,
                    player_count: u16::try_from(room.occupancy()).unwrap_or(u16::MAX),
                    max_players: u16::try_from(room.max_players()).unwrap_or(u16::MAX),
                    port: room.port?,
                    state: room.state,
                })
            })
            .take(self.config.max_list_rooms)
    }

    /// Changes whenever anything [`RtypeCore::room_list`] shows may have changed: while it stays
    /// the same, a ROOM_LIST built earlier is still exact (the driver re-frames it).
    pub fn list_generation(&self) -> u64 {
        self.rooms.generation()
    }

    fn listed_rooms(&self) -> impl Iterator<Item = &Room> + '_ {
        self.rooms
            .listed()
            .iter()
            .filter_map(|id| self.rooms.get(id))
    }

    fn listed_count(&self) -> usize {
        self.rooms.listed().len().min(self.config.max_list_rooms)
    }

    /// A UDP lobby request from `from` with sequence id `seq`.
    pub fn handle_lobby_request(
        &mut self,
        now: Instant,
        from: SocketAddr,
        seq: u16,
        request: LobbyRequest,
    ) {
        if !self.limiter.allow_request(now, from.ip()) {
            self.stats.rate_limited += 1;
            return;
        }
        match request {
            LobbyRequest::ListRooms => {
                self.stats.list_requests += 1;
                let len = room_list_len(self.listed_count());
                self.send_lobby(now, from, seq, LobbyReply::RoomList, len);
            }
            LobbyRequest::CreateRoom => {
                self.stats.create_requests += 1;
                self.create_room(now, from, seq);
            }
            LobbyRequest::JoinRoom(id) => {
                self.stats.join_requests += 1;
                let reply = match self.join_room(now, from, id) {
                    Ok((room, port)) => LobbyReply::JoinSuccess { room, port },
                    Err(reason) => {
                        self.stats.join_failed(reason);
                        LobbyReply::JoinFailed(reason)
                    }
                };
                let len = match reply {
                    LobbyReply::JoinFailed(_) => JOIN_FAILED_LEN,
                    _ => ROOM_PORT_REPLY_LEN,
                };
                self.send_lobby(now, from, seq, reply, len);
            }
        }
    }

    /// Queues a lobby reply if the requester's reply-byte budget allows it.
    fn send_lobby(
        &mut self,
        now: Instant,
        to: SocketAddr,
        seq: u16,
        reply: LobbyReply,
        len: usize,
    ) {
        if !self.limiter.allow_reply_bytes(now, to.ip(), len) {
            self.stats.reply_budget_exceeded += 1;
            return;
        }
        self.outputs.push_back(Output::Lobby { to, seq, reply });
    }

    fn create_room(&mut self, now: Instant, from: SocketAddr, seq: u16) {
        let refusal = if self.rooms.len() >= self.config.max_rooms {
            Some(JoinFailure::MaxRooms)
        } else if self
            .rooms
            .values()
            .filter(|r| r.kind == RoomKind::Udp && r.creator == from.ip())
            .count()
            >= self.config.max_rooms_per_ip
        {
            Some(JoinFailure::MaxRoomsPerIp)
        } else if self.next_room_id == 0 {
            Some(JoinFailure::NoRoomId)
        } else {
            None
        };
        if let Some(reason) = refusal {
            self.stats.join_failed(reason);
            self.send_lobby(
                now,
                from,
                seq,
                LobbyReply::JoinFailed(reason),
                JOIN_FAILED_LEN,
            );
            return;
        }
        let id = RoomId(self.next_room_id);
        // Ids are never reused: after u32::MAX the counter parks at 0, which refuses creates.
        self.next_room_id = self.next_room_id.checked_add(1).unwrap_or(0);
        self.rooms
            .insert(id, Room::new(id, self.config.max_players, from.ip()));
        self.pending_creates
            .insert(id, PendingCreate { to: from, seq });
        self.open_instance(id, self.config.max_players);
    }

    /// Asks the driver for room `id`'s instance: lobbyd's own relay socket, or with
    /// `--instance-exec` the operator's game server for `players` players and a fresh seed.
    fn open_instance(&mut self, id: RoomId, players: u8) {
        let output = if self.config.instance_exec {
            // The high half: the low one is what a simulation's counter source varies.
            let seed = ((self.tcp.hash_source)() >> 32) as u32;
            Output::StartInstance {
                room: id,
                players,
                seed,
            }
        } else {
            Output::OpenInstance { room: id }
        };
        self.outputs.push_back(output);
    }

    /// The driver's report that room `id`'s game server exited (`--instance-exec`): the
    /// room is reaped now, whatever its state (gone from ROOM_LIST, its port back in the
    /// pool, a started party's connections still open closed). A party still in its lobby
    /// (counting down) stays, its countdown cancelled (ERROR [`TcpError::NoInstance`]). A room
    /// already gone is ignored.
    pub fn handle_instance_exited(&mut self, now: Instant, id: RoomId) {
        if self.pending_creates.contains_key(&id) {
            self.handle_instance_opened(now, id, None);
            return;
        }
        if self.party_instance_exited(id) {
            return;
        }
        self.reap(id);
    }

    /// The driver's answer to [`Output::OpenInstance`]: the bound port, or `None` when no
    /// port of the instance range could be bound. A port bound for a room that is gone by
    /// then is handed back at once ([`Output::CloseInstance`]).
    pub fn handle_instance_opened(&mut self, now: Instant, id: RoomId, port: Option<u16>) {
        if self.rooms.get(&id).map(|room| room.kind) == Some(RoomKind::Party) {
            self.party_instance_opened(now, id, port);
            return;
        }
        let Some(pending) = self.pending_creates.remove(&id) else {
            // The room went while its socket was being bound (a party that dissolved in the
            // same call that asked for it): the socket goes back, or its port never returns
            // to the pool.
            if port.is_some() && !self.rooms.contains_key(&id) {
                self.outputs.push_back(Output::CloseInstance { room: id });
            }
            return;
        };
        let Some(port) = port else {
            self.rooms.remove(&id);
            self.stats.join_failed(JoinFailure::NoInstancePort);
            let reply = LobbyReply::JoinFailed(JoinFailure::NoInstancePort);
            self.send_lobby(now, pending.to, pending.seq, reply, JOIN_FAILED_LEN);
            return;
        };
        let expires = now + self.config.seat_timeout;
        let Some(room) = self.rooms.get_mut(&id) else {
            return;
        };
        room.port = Some(port);
        // A fresh room in Waiting with all seats free: the creator's reservation cannot fail.
        let _ = room.reserve(pending.to.ip(), expires);
        self.rooms.list(id);
        self.stats.rooms_created += 1;
        self.arm_housekeeping(id);
        let reply = LobbyReply::RoomCreated { room: id, port };
        self.send_lobby(now, pending.to, pending.seq, reply, ROOM_PORT_REPLY_LEN);
    }

    fn join_room(
        &mut self,
        now: Instant,
        from: SocketAddr,
        id: u32,
    ) -> Result<(RoomId, u16), JoinFailure> {
        if id == 0 {
            return Err(JoinFailure::RoomZero);
        }
        let id = RoomId(id);
        let expires = now + self.config.seat_timeout;
        let room = self
            .rooms
            .get_mut(&id)
            .filter(|room| room.kind == RoomKind::Udp)
            .ok_or(JoinFailure::NoSuchRoom)?;
        let port = room.port.ok_or(JoinFailure::NoSuchRoom)?;
        let expired = room.expire_reservations(now);
        let result = room.reserve(from.ip(), expires);
        self.stats.reservations_expired += expired as u64;
        match result {
            Ok(()) => {
                self.arm_housekeeping(id);
                Ok((id, port))
            }
            Err(SeatRefusal::Full) => Err(JoinFailure::Full),
            Err(SeatRefusal::NotJoinable) => Err(JoinFailure::NotJoinable),
        }
    }

    /// A well-formed control datagram from `from` on `room`'s instance socket.
    pub fn handle_instance_request(
        &mut self,
        now: Instant,
        id: RoomId,
        from: SocketAddr,
        seq: u16,
        request: InstanceRequest,
    ) {
        if !self.rooms.contains_key(&id) {
            self.stats.ignored(InstanceIgnore::StaleRoom);
            return;
        }
        match request {
            InstanceRequest::Hello { token } => self.hello(now, id, from, seq, token),
            InstanceRequest::Leave => {
                let Some(slot) = self.member_slot(id, from) else {
                    self.stats.ignored(InstanceIgnore::NotMember);
                    return;
                };
                self.stats.leaves += 1;
                self.remove_member(now, id, slot);
            }
            InstanceRequest::Start => self.start(now, id, from),
            InstanceRequest::Ping => {
                let Some(slot) = self.member_slot(id, from) else {
                    self.stats.ignored(InstanceIgnore::NotMember);
                    return;
                };
                if let Some(room) = self.rooms.get_mut(&id) {
                    room.touch(slot, now);
                }
                self.outputs.push_back(Output::Instance {
                    room: id,
                    to: from,
                    seq,
                    msg: InstanceMessage::Pong,
                });
            }
        }
    }

    fn member_slot(&self, id: RoomId, from: SocketAddr) -> Option<Slot> {
        self.rooms.get(&id)?.slot_of(from)
    }

    fn hello(&mut self, now: Instant, id: RoomId, from: SocketAddr, seq: u16, token: Option<u64>) {
        let Some(room) = self.rooms.get_mut(&id) else {
            return;
        };
        let (slot, is_new) = match room.slot_of(from) {
            Some(slot) => {
                room.touch(slot, now);
                (slot, false)
            }
            None if room.kind == RoomKind::Party => match self.party_hello(now, id, from, token) {
                Some(slot) => (slot, true),
                None => {
                    self.reject(id, from, seq, RejectReason::UnknownToken);
                    return;
                }
            },
            None => {
                let expired = room.expire_reservations(now);
                self.stats.reservations_expired += expired as u64;
                match room.admit(from, now) {
                    Ok(slot) => (slot, true),
                    Err(refusal) => {
                        let reason = match refusal {
                            SeatRefusal::Full => RejectReason::Full,
                            SeatRefusal::NotJoinable => RejectReason::NotJoinable,
                        };
                        self.reject(id, from, seq, reason);
                        return;
                    }
                }
            }
        };
        let Some(room) = self.rooms.get_mut(&id) else {
            return;
        };
        self.stats.welcomes += 1;
        let welcome = InstanceMessage::Welcome {
            slot,
            player_count: u8::try_from(room.member_count()).unwrap_or(u8::MAX),
            max_players: u8::try_from(room.max_players()).unwrap_or(u8::MAX),
            state: room.state,
        };
        self.outputs.push_back(Output::Instance {
            room: id,
            to: from,
            seq,
            msg: welcome,
        });
        if is_new {
            // The newcomer learns who is already here, one PEER_JOINED per member ...
            for index in 0..room.max_players() {
                let peer_slot = Slot::try_from(index + 1).unwrap_or(Slot::MAX);
                if peer_slot == slot || room.member(peer_slot).is_none() {
                    continue;
                }
                let seq = room.take_seq();
                self.outputs.push_back(Output::Instance {
                    room: id,
                    to: from,
                    seq,
                    msg: InstanceMessage::PeerJoined(peer_slot),
                });
            }
            // ... and the others learn about the newcomer.
            self.broadcast(id, InstanceMessage::PeerJoined(slot), Some(slot));
            self.arm_housekeeping(id);
        }
    }

    fn reject(&mut self, id: RoomId, to: SocketAddr, seq: u16, reason: RejectReason) {
        self.stats.rejects[reason as usize - 1] += 1;
        self.outputs.push_back(Output::Instance {
            room: id,
            to,
            seq,
            msg: InstanceMessage::Reject(reason),
        });
    }

    fn start(&mut self, now: Instant, id: RoomId, from: SocketAddr) {
        let Some(room) = self.rooms.get_mut(&id) else {
            return;
        };
        let Some(slot) = room.slot_of(from) else {
            self.stats.ignored(InstanceIgnore::NotMember);
            return;
        };
        room.touch(slot, now);
        if room.owner != Some(slot) {
            self.stats.ignored(InstanceIgnore::NotOwner);
            return;
        }
        if room.state != RoomState::Waiting {
            self.stats.ignored(InstanceIgnore::BadState);
            return;
        }
        room.state = RoomState::Countdown;
        room.countdown = Some(Countdown {
            started: now,
            remaining: self.config.countdown_secs,
        });
        self.countdown_step(id);
    }

    /// Announces the current countdown value and arms the next tick, or starts the game.
    fn countdown_step(&mut self, id: RoomId) {
        let total = self.config.countdown_secs;
        let Some(room) = self.rooms.get_mut(&id) else {
            return;
        };
        let Some(countdown) = room.countdown else {
            return;
        };
        if countdown.remaining == 0 {
            room.countdown = None;
            room.state = RoomState::Playing;
            room.clear_reservations();
            self.stats.games_started += 1;
            self.broadcast(id, InstanceMessage::Started, None);
            return;
        }
        self.broadcast(id, InstanceMessage::Countdown(countdown.remaining), None);
        // Tick k fires at started + k seconds, computed from the start: no drift.
        let elapsed = u32::from(total - countdown.remaining) + 1;
        let deadline = countdown.started + Duration::from_secs(u64::from(elapsed));
        let key = self.timers.insert(deadline, TimerEvent::CountdownTick(id));
        if let Some(room) = self.rooms.get_mut(&id) {
            room.timers.countdown = Some(key);
        }
    }

    /// Sends `msg` to every member of `id` except `except`.
    fn broadcast(&mut self, id: RoomId, msg: InstanceMessage, except: Option<Slot>) {
        let Some(room) = self.rooms.get_mut(&id) else {
            return;
        };
        // One event, one sequence number: every member sees the same value for it (taken
        // only if someone receives the event).
        let mut seq = None;
        let count = room.max_players();
        for index in 0..count {
            let slot = Slot::try_from(index + 1).unwrap_or(Slot::MAX);
            if Some(slot) == except {
                continue;
            }
            let Some(addr) = room.member(slot).map(|m| m.addr) else {
                continue;
            };
            let seq = *seq.get_or_insert_with(|| room.take_seq());
            self.outputs.push_back(Output::Instance {
                room: id,
                to: addr,
                seq,
                msg,
            });
        }
    }

    /// A DATA datagram from `from` on `id`'s socket, addressed to `target` (a slot, or 0xFF
    /// for everyone else). Fills `destinations` with where to forward it and returns the
    /// sender's slot, or `None` (and counts why) when it must be dropped. The driver then
    /// rewrites the datagram in place and sends it, so the payload is never copied.
    pub fn relay_data(
        &mut self,
        now: Instant,
        id: RoomId,
        from: SocketAddr,
        target: u8,
        destinations: &mut Vec<SocketAddr>,
    ) -> Option<Slot> {
        destinations.clear();
        let Some(room) = self.rooms.get_mut(&id) else {
            self.stats.ignored(InstanceIgnore::StaleRoom);
            return None;
        };
        let Some(sender) = room.slot_of(from) else {
            self.stats.ignored(InstanceIgnore::NotMember);
            return None;
        };
        room.touch(sender, now);
        if target == 0xFF {
            destinations.extend(
                room.members()
                    .filter(|(slot, _)| *slot != sender)
                    .map(|(_, m)| m.addr),
            );
        } else {
            match room.member(target) {
                Some(member) if target != sender => destinations.push(member.addr),
                _ => {
                    self.stats.ignored(InstanceIgnore::BadTarget);
                    return None;
                }
            }
        }
        self.stats.data_forwarded += destinations.len() as u64;
        Some(sender)
    }

    /// Removes a member, tells the others, and finishes the room if it is now empty.
    fn remove_member(&mut self, now: Instant, id: RoomId, slot: Slot) {
        let Some(room) = self.rooms.get_mut(&id) else {
            return;
        };
        if room.remove(slot).is_none() {
            return;
        }
        self.broadcast(id, InstanceMessage::PeerLeft(slot), None);
        self.finish_if_empty(now, id);
    }

    fn finish_if_empty(&mut self, now: Instant, id: RoomId) {
        // A game server's players are not seen here: its room ends when its process does.
        if self.config.instance_exec {
            return;
        }
        let empty = self
            .rooms
            .get(&id)
            .is_some_and(|room| room.is_empty() && room.state != RoomState::Finished);
        if empty {
            self.finish(now, id);
        }
    }

    /// Moves a room to Finished and schedules its removal.
    fn finish(&mut self, now: Instant, id: RoomId) {
        let Some(room) = self.rooms.get_mut(&id) else {
            return;
        };
        room.state = RoomState::Finished;
        room.countdown = None;
        let timers = std::mem::take(&mut room.timers);
        if let Some((key, _)) = timers.housekeeping {
            self.timers.cancel(key);
        }
        if let Some(key) = timers.countdown {
            self.timers.cancel(key);
        }
        if let Some(key) = timers.reap {
            self.timers.cancel(key);
        }
        let key = self
            .timers
            .insert(now + self.config.reap_grace, TimerEvent::Reap(id));
        if let Some(room) = self.rooms.get_mut(&id) {
            room.timers.reap = Some(key);
        }
    }

    /// Arms (or moves earlier) the room's housekeeping timer to its next deadline.
    fn arm_housekeeping(&mut self, id: RoomId) {
        let idle = self.config.idle_timeout;
        let Some(room) = self.rooms.get_mut(&id) else {
            return;
        };
        let Some(deadline) = room.next_housekeeping(idle) else {
            return;
        };
        if let Some((key, armed)) = room.timers.housekeeping {
            if armed <= deadline {
                return;
            }
            self.timers.cancel(key);
        }
        let key = self.timers.insert(deadline, TimerEvent::Housekeeping(id));
        if let Some(room) = self.rooms.get_mut(&id) {
            room.timers.housekeeping = Some((key, deadline));
        }
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.handle_timeout_within(now, usize::MAX);
    }

    /// Runs at most `budget` of the timers due at `now` (the driver bounds its work per loop
    /// pass); the rest stay due, and [`RtypeCore::poll_timeout`] says so.
    pub fn handle_timeout_within(&mut self, now: Instant, budget: usize) {
        for _ in 0..budget {
            let Some(event) = self.timers.poll_expired(now) else {
                return;
            };
            match event {
                TimerEvent::Housekeeping(id) => self.housekeeping(now, id),
                TimerEvent::CountdownTick(id) => {
                    let Some(room) = self.rooms.get_mut(&id) else {
                        continue;
                    };
                    room.timers.countdown = None;
                    if let Some(countdown) = room.countdown.as_mut() {
                        countdown.remaining = countdown.remaining.saturating_sub(1);
                    }
                    self.countdown_step(id);
                }
                TimerEvent::Reap(id) => self.reap(id),
                TimerEvent::PartyTick(id) => self.party_tick(now, id),
                TimerEvent::PartyLinger(id) => self.party_linger(id),
                TimerEvent::ConnDeadline(conn) => self.conn_deadline(now, conn),
            }
        }
    }

    fn housekeeping(&mut self, now: Instant, id: RoomId) {
        let idle = self.config.idle_timeout;
        let Some(room) = self.rooms.get_mut(&id) else {
            return;
        };
        room.timers.housekeeping = None;
        let expired = room.expire_reservations(now);
        self.stats.reservations_expired += expired as u64;
        while let Some(slot) = self
            .rooms
            .get(&id)
            .and_then(|room| room.first_idle_member(now, idle))
        {
            self.stats.idle_removed += 1;
            self.remove_member(now, id, slot);
        }
        self.finish_if_empty(now, id);
        if self
            .rooms
            .get(&id)
            .is_some_and(|room| room.state != RoomState::Finished)
        {
            self.arm_housekeeping(id);
        }
    }

    fn reap(&mut self, id: RoomId) {
        let Some(room) = self.rooms.remove(&id) else {
            return;
        };
        for key in [room.timers.countdown, room.timers.reap]
            .into_iter()
            .flatten()
            .chain(room.timers.housekeeping.map(|(key, _)| key))
        {
            self.timers.cancel(key);
        }
        self.rooms.unlist(id);
        self.party_reaped(id);
        self.stats.rooms_reaped += 1;
        self.outputs.push_back(Output::CloseInstance { room: id });
    }
}

#[cfg(test)]
mod instance_exec_tests;
#[cfg(test)]
mod tests;
