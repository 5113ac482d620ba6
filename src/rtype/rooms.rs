//! The room table and everything that happens in a room: the UDP room lobby
//! (`rtype-udp-lobby-protocol.md` sections 4-14: LIST_ROOMS, CREATE_ROOM, JOIN_ROOM under the
//! per-IP request and reply-byte budgets) and the game instance relay of every room, UDP or
//! party (`docs/protocols/instance.md`: HELLO, LEAVE, START, PING, DATA, the countdown,
//! housekeeping and reaping). [`Rooms`] owns the table, the ids, the creates waiting for
//! their socket and the UDP lobby's rate limiter.
//!
//! A party's lobby state (its TCP members, their hashes, its countdown) is `parties.rs`'s;
//! this file only admits a party's players on the instance by the token of its GAME_START and
//! opens, releases and removes the party's room when asked. It must not decide what a TCP
//! request means.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use crate::ratelimit::PerIpLimiter;
use crate::wire::udp_lobby::room_list_len;

use super::config::{RtypeConfig, NODE_SHIFT};
use super::context::{Ctx, TimerEvent};
use super::messages::{
    Dialect, InstanceMessage, InstanceRequest, LobbyReply, LobbyRequest, Output, RejectReason,
    ReplyTo, RoomInfo, RoomSettings, MAX_PASSWORD, MAX_ROOM_NAME, UNNAMED_ROOM,
};
use super::remote_join::{remote_owner, RemoteJoins};
use super::reply_len::{lobby_reply_len, upstream_list_len};
use super::room::{Countdown, Room, RoomId, RoomKind, RoomState, SeatRefusal, Slot};
use super::room_map::RoomTable;
use super::stats::{InstanceIgnore, JoinFailure};

/// The local part of a node's room id.
const LOCAL_ID_MASK: u32 = (1 << NODE_SHIFT) - 1;
/// A create request waiting for its instance socket.
#[derive(Clone, Copy, Debug)]
struct PendingCreate {
    to: SocketAddr,
    seq: u16,
    dialect: Dialect,
}

/// Every room, UDP or party, and the UDP room lobby's own state.
pub(super) struct Rooms {
    /// Every room and the order ROOM_LIST offers them in.
    table: RoomTable,
    pending_creates: HashMap<RoomId, PendingCreate>,
    /// The next room id; 0 once `last_room_id` was handed out (ids are never reused).
    next_room_id: u32,
    /// The last id this node may hand out: `u32::MAX` alone, the top of its 24-bit block as a
    /// node of a group.
    last_room_id: u32,
    /// Records of other nodes' rooms the driver appends to each ROOM_LIST (the directory's
    /// cache): counted in the reply's size, so the reply-byte budget charges what is sent.
    remote_listed: usize,
    /// The UDP lobby's per-IP request and reply-byte budgets.
    limiter: PerIpLimiter,
    /// JOIN_ROOMs of other nodes' rooms waiting for their owner (`remote_join.rs`).
    pub(super) remote: RemoteJoins,
}

impl Rooms {
    /// No rooms yet.
    pub(super) fn new(config: &RtypeConfig) -> Rooms {
        let (first, last) = match config.node_id {
            Some(node) => {
                let base = u32::from(node) << NODE_SHIFT;
                (base | 1, base | LOCAL_ID_MASK)
            }
            None => (1, u32::MAX),
        };
        Rooms {
            table: RoomTable::default(),
            pending_creates: HashMap::new(),
            next_room_id: first,
            last_room_id: last,
            remote_listed: 0,
            limiter: PerIpLimiter::new(config.rate),
            remote: RemoteJoins::default(),
        }
    }

    /// Rooms alive (bound, opening or finishing).
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// A room.
    pub(super) fn get(&self, id: RoomId) -> Option<&Room> {
        self.table.get(&id)
    }

    /// A room, to change it.
    pub(super) fn get_mut(&mut self, id: RoomId) -> Option<&mut Room> {
        self.table.get_mut(&id)
    }

    /// Every room, in no particular order.
    pub(super) fn values(&self) -> impl Iterator<Item = &Room> + '_ {
        self.table.values()
    }

    /// Source IPs tracked by the rate limiter.
    pub(super) fn rate_table_len(&self) -> usize {
        self.limiter.len()
    }

    /// Forgets up to `budget` rate-limit entries whose buckets are full again.
    pub(super) fn tidy(&mut self, now: Instant, budget: usize) {
        self.limiter.tidy(now, budget);
    }

    /// The ROOM_LIST records of the seed's dialect: at most `max_list_rooms` of
    /// [`Rooms::listing`]. Allocates nothing.
    pub(super) fn room_list(&self, max_list_rooms: usize) -> impl Iterator<Item = RoomInfo<'_>> {
        self.listing().take(max_list_rooms)
    }

    /// Every listed room in listing order: joinable rooms first, each group in creation
    /// order. The upstream dialect's ROOM_LIST takes as many as its 2048 bytes hold.
    /// Allocates nothing.
    pub(super) fn listing(&self) -> impl Iterator<Item = RoomInfo<'_>> {
        let joinable = self.listed_rooms().filter(|room| room.is_joinable());
        let others = self.listed_rooms().filter(|room| !room.is_joinable());
        joinable.chain(others).filter_map(|room| {
            Some(RoomInfo {
                room: room.id,
                player_count: u16::try_from(room.occupancy()).unwrap_or(u16::MAX),
                max_players: u16::try_from(room.max_players()).unwrap_or(u16::MAX),
                port: room.port?,
                state: room.state,
                name: if room.name.is_empty() {
                    UNNAMED_ROOM
                } else {
                    &room.name
                },
                password_protected: room.password_protected(),
            })
        })
    }

    /// Changes whenever anything [`Rooms::room_list`] shows may have changed.
    pub(super) fn list_generation(&self) -> u64 {
        self.table.generation()
    }

    fn listed_rooms(&self) -> impl Iterator<Item = &Room> + '_ {
        self.table
            .listed()
            .iter()
            .filter_map(|id| self.table.get(id))
    }

    fn listed_count(&self, max_list_rooms: usize) -> usize {
        (self.table.listed().len() + self.remote_listed).min(max_list_rooms)
    }

    /// The driver now appends `count` records of other nodes' rooms to each ROOM_LIST
    /// (after this node's own, within `--max-list-rooms`).
    pub(super) fn set_remote_listed(&mut self, count: usize) {
        self.remote_listed = count;
    }

    /// Whether one more room may be opened: under `--max-rooms`, and ids are left.
    pub(super) fn room_left(&self, config: &RtypeConfig) -> bool {
        self.table.len() < config.max_rooms && self.next_room_id != 0
    }

    /// Takes the next room id; the caller checked with [`Rooms::room_left`] that one is left.
    fn take_id(&mut self) -> RoomId {
        let id = RoomId(self.next_room_id);
        // Ids are never reused: after the last one the counter parks at 0, which refuses
        // creates.
        self.next_room_id = if self.next_room_id == self.last_room_id {
            0
        } else {
            self.next_room_id + 1
        };
        id
    }

    /// Opens the room of a new party (never listed), created by `creator`; the caller
    /// checked with [`Rooms::room_left`] that a room is left.
    pub(super) fn open_party_room(&mut self, max_players: u8, creator: IpAddr) -> RoomId {
        let id = self.take_id();
        let mut room = Room::new(id, max_players, creator);
        room.kind = RoomKind::Party;
        self.table.insert(id, room);
        id
    }

    /// Removes a room at once (a party that dissolved); its socket, if any, is the caller's
    /// to close.
    pub(super) fn remove(&mut self, id: RoomId) -> Option<Room> {
        self.table.remove(&id)
    }

    /// A UDP lobby request from `from` with sequence id `seq`, spelled in `dialect`: the
    /// reply goes out in the same one.
    pub(super) fn handle_lobby_request(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        from: SocketAddr,
        dialect: Dialect,
        seq: u16,
        request: LobbyRequest<'_>,
    ) {
        if !self.limiter.allow_request(now, from.ip()) {
            cx.stats.rate_limited += 1;
            return;
        }
        let to = ReplyTo {
            to: from,
            seq,
            dialect,
        };
        let no_settings = RoomSettings {
            name: b"",
            password: b"",
        };
        match request {
            LobbyRequest::ListRooms => {
                cx.stats.list_requests += 1;
                let len = match dialect {
                    Dialect::Seed => room_list_len(self.listed_count(cx.config.max_list_rooms)),
                    Dialect::Upstream => {
                        upstream_list_len(cx.config.upstream_records, self.listing())
                    }
                };
                self.send_lobby(cx, now, to, LobbyReply::RoomList, len);
            }
            LobbyRequest::CreateRoom => {
                cx.stats.create_requests += 1;
                self.create_room(cx, now, to, no_settings);
            }
            LobbyRequest::CreateRoomWith(settings) => {
                cx.stats.create_requests += 1;
                self.create_room(cx, now, to, settings);
            }
            LobbyRequest::JoinRoom(id) => self.join(cx, now, to, id, b"", false),
            LobbyRequest::JoinRoomWith {
                room,
                password,
                spectator,
            } => self.join(cx, now, to, room, password, spectator),
        }
    }

    /// JOIN_ROOM of room `id`, offering `password`: JOIN_SUCCESS or JOIN_FAILED, or for
    /// another node's room an ask of its owner (`remote_join.rs`) whose answer comes later.
    fn join(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        to: ReplyTo,
        id: u32,
        password: &[u8],
        spectator: bool,
    ) {
        cx.stats.join_requests += 1;
        let result = match remote_owner(cx.config.node_id, id) {
            Some(owner) if !spectator => match self.remote.ask(cx, now, to, owner, id, password) {
                Ok(()) => return,
                Err(reason) => Err(reason),
            },
            _ => self.join_room(cx, now, to.to, id, password, spectator),
        };
        self.answer_join(cx, now, to, result);
    }

    /// Answers a JOIN_ROOM: JOIN_SUCCESS with the room's instance port, or JOIN_FAILED.
    pub(super) fn answer_join(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        to: ReplyTo,
        result: Result<(RoomId, u16), JoinFailure>,
    ) {
        let reply = match result {
            Ok((room, port)) => LobbyReply::JoinSuccess { room, port },
            Err(reason) => {
                cx.stats.join_failed(reason);
                LobbyReply::JoinFailed(reason)
            }
        };
        let len = lobby_reply_len(to.dialect, reply);
        self.send_lobby(cx, now, to, reply, len);
    }

    /// Queues a lobby reply if the requester's reply-byte budget allows it.
    fn send_lobby(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        to: ReplyTo,
        reply: LobbyReply,
        len: usize,
    ) {
        if !self.limiter.allow_reply_bytes(now, to.to.ip(), len) {
            cx.stats.reply_budget_exceeded += 1;
            return;
        }
        cx.push(Output::Lobby {
            to: to.to,
            seq: to.seq,
            dialect: to.dialect,
            reply,
        });
    }

    fn create_room(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        to: ReplyTo,
        settings: RoomSettings<'_>,
    ) {
        let from = to.to;
        let refusal =
            if settings.name.len() > MAX_ROOM_NAME || settings.password.len() > MAX_PASSWORD {
                Some(JoinFailure::BadSettings)
            } else if self.table.len() >= cx.config.max_rooms {
                Some(JoinFailure::MaxRooms)
            } else if self
                .table
                .values()
                .filter(|r| r.kind == RoomKind::Udp && r.creator == from.ip())
                .count()
                >= cx.config.max_rooms_per_ip
            {
                Some(JoinFailure::MaxRoomsPerIp)
            } else if self.next_room_id == 0 {
                Some(JoinFailure::NoRoomId)
            } else {
                None
            };
        if let Some(reason) = refusal {
            cx.stats.join_failed(reason);
            let reply = LobbyReply::JoinFailed(reason);
            let len = lobby_reply_len(to.dialect, reply);
            self.send_lobby(cx, now, to, reply, len);
            return;
        }
        let id = self.take_id();
        let mut room = Room::new(id, cx.config.max_players, from.ip());
        room.set_name_and_password(settings.name, settings.password);
        self.table.insert(id, room);
        let pending = PendingCreate {
            to: from,
            seq: to.seq,
            dialect: to.dialect,
        };
        self.pending_creates.insert(id, pending);
        cx.open_instance(id, cx.config.max_players);
    }

    /// The driver's answer to a UDP room's [`Output::OpenInstance`]: the bound port, or
    /// `None` when no port of the instance range could be bound. A port bound for a room
    /// that is gone by then is handed back at once ([`Output::CloseInstance`]).
    pub(super) fn instance_opened(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        id: RoomId,
        port: Option<u16>,
    ) {
        let Some(pending) = self.pending_creates.remove(&id) else {
            // The room went while its socket was being bound (a party that dissolved in the
            // same call that asked for it): the socket goes back, or its port never returns
            // to the pool.
            if port.is_some() && !self.table.contains_key(&id) {
                cx.push(Output::CloseInstance { room: id });
            }
            return;
        };
        let to = ReplyTo {
            to: pending.to,
            seq: pending.seq,
            dialect: pending.dialect,
        };
        let Some(port) = port else {
            self.table.remove(&id);
            cx.stats.join_failed(JoinFailure::NoInstancePort);
            let reply = LobbyReply::JoinFailed(JoinFailure::NoInstancePort);
            let len = lobby_reply_len(to.dialect, reply);
            self.send_lobby(cx, now, to, reply, len);
            return;
        };
        let expires = now + cx.config.seat_timeout;
        let Some(room) = self.table.get_mut(&id) else {
            return;
        };
        room.port = Some(port);
        // A fresh room in Waiting with all seats free: the creator's reservation cannot fail.
        let _ = room.reserve(pending.to.ip(), expires);
        self.table.list(id);
        cx.stats.rooms_created += 1;
        self.arm_housekeeping(cx, id);
        let reply = LobbyReply::RoomCreated { room: id, port };
        let len = lobby_reply_len(to.dialect, reply);
        self.send_lobby(cx, now, to, reply, len);
    }

    /// The JOIN logic of this node's rooms, for a local JOIN_ROOM or another node's ask: a
    /// seat reserved for `from`'s IP for `--seat-timeout` (a repeated JOIN refreshes it).
    pub(super) fn join_room(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        from: SocketAddr,
        id: u32,
        password: &[u8],
        spectator: bool,
    ) -> Result<(RoomId, u16), JoinFailure> {
        if id == 0 {
            return Err(JoinFailure::RoomZero);
        }
        if spectator {
            return Err(JoinFailure::Spectator);
        }
        let id = RoomId(id);
        let expires = now + cx.config.seat_timeout;
        let room = self
            .table
            .get_mut(&id)
            .filter(|room| room.kind == RoomKind::Udp)
            .ok_or(JoinFailure::NoSuchRoom)?;
        let port = room.port.ok_or(JoinFailure::NoSuchRoom)?;
        if !room.admits_password(password) {
            return Err(JoinFailure::BadPassword);
        }
        let expired = room.expire_reservations(now);
        let result = room.reserve(from.ip(), expires);
        cx.stats.reservations_expired += expired as u64;
        match result {
            Ok(()) => {
                self.arm_housekeeping(cx, id);
                Ok((id, port))
            }
            Err(SeatRefusal::Full) => Err(JoinFailure::Full),
            Err(SeatRefusal::NotJoinable) => Err(JoinFailure::NotJoinable),
        }
    }

    /// A well-formed control datagram from `from` on `room`'s instance socket.
    pub(super) fn handle_instance_request(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        id: RoomId,
        from: SocketAddr,
        seq: u16,
        request: InstanceRequest,
    ) {
        if !self.table.contains_key(&id) {
            cx.stats.ignored(InstanceIgnore::StaleRoom);
            return;
        }
        match request {
            InstanceRequest::Hello { token } => self.hello(cx, now, id, from, seq, token),
            InstanceRequest::Leave => {
                let Some(slot) = self.member_slot(id, from) else {
                    cx.stats.ignored(InstanceIgnore::NotMember);
                    return;
                };
                cx.stats.leaves += 1;
                self.remove_member(cx, now, id, slot);
            }
            InstanceRequest::Start => self.start(cx, now, id, from),
            InstanceRequest::Ping => {
                let Some(slot) = self.member_slot(id, from) else {
                    cx.stats.ignored(InstanceIgnore::NotMember);
                    return;
                };
                if let Some(room) = self.table.get_mut(&id) {
                    room.touch(slot, now);
                }
                cx.push(Output::Instance {
                    room: id,
                    to: from,
                    seq,
                    msg: InstanceMessage::Pong,
                });
            }
        }
    }

    fn member_slot(&self, id: RoomId, from: SocketAddr) -> Option<Slot> {
        self.table.get(&id)?.slot_of(from)
    }

    fn hello(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        id: RoomId,
        from: SocketAddr,
        seq: u16,
        token: Option<u64>,
    ) {
        let Some(room) = self.table.get_mut(&id) else {
            return;
        };
        let (slot, is_new) = match room.slot_of(from) {
            Some(slot) => {
                room.touch(slot, now);
                (slot, false)
            }
            None if room.kind == RoomKind::Party => {
                match self.party_hello(cx, now, id, from, token) {
                    Some(slot) => (slot, true),
                    None => {
                        reject(cx, id, from, seq, RejectReason::UnknownToken);
                        return;
                    }
                }
            }
            None => {
                let expired = room.expire_reservations(now);
                cx.stats.reservations_expired += expired as u64;
                match room.admit(from, now) {
                    Ok(slot) => (slot, true),
                    Err(refusal) => {
                        let reason = match refusal {
                            SeatRefusal::Full => RejectReason::Full,
                            SeatRefusal::NotJoinable => RejectReason::NotJoinable,
                        };
                        reject(cx, id, from, seq, reason);
                        return;
                    }
                }
            }
        };
        let Some(room) = self.table.get_mut(&id) else {
            return;
        };
        cx.stats.welcomes += 1;
        let welcome = InstanceMessage::Welcome {
            slot,
            player_count: u8::try_from(room.member_count()).unwrap_or(u8::MAX),
            max_players: u8::try_from(room.max_players()).unwrap_or(u8::MAX),
            state: room.state,
        };
        cx.push(Output::Instance {
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
                cx.push(Output::Instance {
                    room: id,
                    to: from,
                    seq,
                    msg: InstanceMessage::PeerJoined(peer_slot),
                });
            }
            // ... and the others learn about the newcomer.
            self.broadcast(cx, id, InstanceMessage::PeerJoined(slot), Some(slot));
            self.arm_housekeeping(cx, id);
        }
    }

    /// A HELLO on a party's instance: admitted only with the token of a player of its
    /// GAME_START, into that player's slot.
    fn party_hello(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        id: RoomId,
        from: SocketAddr,
        token: Option<u64>,
    ) -> Option<Slot> {
        let room = self.table.get_mut(&id)?;
        let expired = room.expire_reservations(now);
        cx.stats.reservations_expired += expired as u64;
        let slot = token.and_then(|token| room.admit_token(token, from, now));
        if slot.is_none() {
            cx.stats.tcp.unknown_tokens += 1;
        }
        slot
    }

    fn start(&mut self, cx: &mut Ctx<'_>, now: Instant, id: RoomId, from: SocketAddr) {
        let Some(room) = self.table.get_mut(&id) else {
            return;
        };
        let Some(slot) = room.slot_of(from) else {
            cx.stats.ignored(InstanceIgnore::NotMember);
            return;
        };
        room.touch(slot, now);
        if room.owner != Some(slot) {
            cx.stats.ignored(InstanceIgnore::NotOwner);
            return;
        }
        if room.state != RoomState::Waiting {
            cx.stats.ignored(InstanceIgnore::BadState);
            return;
        }
        room.state = RoomState::Countdown;
        room.countdown = Some(Countdown {
            started: now,
            remaining: cx.config.countdown_secs,
        });
        self.countdown_step(cx, id);
    }

    /// A UDP room's countdown timer fired: one second less, announced.
    pub(super) fn countdown_tick(&mut self, cx: &mut Ctx<'_>, id: RoomId) {
        let Some(room) = self.table.get_mut(&id) else {
            return;
        };
        room.timers.countdown = None;
        if let Some(countdown) = room.countdown.as_mut() {
            countdown.remaining = countdown.remaining.saturating_sub(1);
        }
        self.countdown_step(cx, id);
    }

    /// Announces the current countdown value and arms the next tick, or starts the game.
    fn countdown_step(&mut self, cx: &mut Ctx<'_>, id: RoomId) {
        let total = cx.config.countdown_secs;
        let Some(room) = self.table.get_mut(&id) else {
            return;
        };
        let Some(countdown) = room.countdown else {
            return;
        };
        if countdown.remaining == 0 {
            room.countdown = None;
            room.state = RoomState::Playing;
            room.clear_reservations();
            cx.stats.games_started += 1;
            self.broadcast(cx, id, InstanceMessage::Started, None);
            return;
        }
        self.broadcast(
            cx,
            id,
            InstanceMessage::Countdown(countdown.remaining),
            None,
        );
        // Tick k fires at started + k seconds, computed from the start: no drift.
        let elapsed = u32::from(total - countdown.remaining) + 1;
        let deadline = countdown.started + Duration::from_secs(u64::from(elapsed));
        let key = cx.timers.insert(deadline, TimerEvent::CountdownTick(id));
        if let Some(room) = self.table.get_mut(&id) {
            room.timers.countdown = Some(key);
        }
    }

    /// Sends `msg` to every member of `id` except `except`.
    fn broadcast(
        &mut self,
        cx: &mut Ctx<'_>,
        id: RoomId,
        msg: InstanceMessage,
        except: Option<Slot>,
    ) {
        let Some(room) = self.table.get_mut(&id) else {
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
            cx.push(Output::Instance {
                room: id,
                to: addr,
                seq,
                msg,
            });
        }
    }

    /// A DATA datagram from `from` on `id`'s socket, addressed to `target` (a slot, or 0xFF
    /// for everyone else). Fills `destinations` with where to forward it and returns the
    /// sender's slot, or `None` (and counts why) when it must be dropped.
    pub(super) fn relay_data(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        id: RoomId,
        from: SocketAddr,
        target: u8,
        destinations: &mut Vec<SocketAddr>,
    ) -> Option<Slot> {
        destinations.clear();
        let Some(room) = self.table.get_mut(&id) else {
            cx.stats.ignored(InstanceIgnore::StaleRoom);
            return None;
        };
        let Some(sender) = room.slot_of(from) else {
            cx.stats.ignored(InstanceIgnore::NotMember);
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
                    cx.stats.ignored(InstanceIgnore::BadTarget);
                    return None;
                }
            }
        }
        cx.stats.data_forwarded += destinations.len() as u64;
        Some(sender)
    }

    /// Removes a member, tells the others, and finishes the room if it is now empty.
    fn remove_member(&mut self, cx: &mut Ctx<'_>, now: Instant, id: RoomId, slot: Slot) {
        let Some(room) = self.table.get_mut(&id) else {
            return;
        };
        if room.remove(slot).is_none() {
            return;
        }
        self.broadcast(cx, id, InstanceMessage::PeerLeft(slot), None);
        self.finish_if_empty(cx, now, id);
    }

    fn finish_if_empty(&mut self, cx: &mut Ctx<'_>, now: Instant, id: RoomId) {
        // A game server's players are not seen here: its room ends when its process does.
        if cx.config.instance_exec {
            return;
        }
        let empty = self
            .table
            .get(&id)
            .is_some_and(|room| room.is_empty() && room.state != RoomState::Finished);
        if empty {
            self.finish(cx, now, id);
        }
    }

    /// Moves a room to Finished and schedules its removal.
    fn finish(&mut self, cx: &mut Ctx<'_>, now: Instant, id: RoomId) {
        let Some(room) = self.table.get_mut(&id) else {
            return;
        };
        room.state = RoomState::Finished;
        room.countdown = None;
        let timers = std::mem::take(&mut room.timers);
        if let Some((key, _)) = timers.housekeeping {
            cx.timers.cancel(key);
        }
        if let Some(key) = timers.countdown {
            cx.timers.cancel(key);
        }
        if let Some(key) = timers.reap {
            cx.timers.cancel(key);
        }
        let key = cx
            .timers
            .insert(now + cx.config.reap_grace, TimerEvent::Reap(id));
        if let Some(room) = self.table.get_mut(&id) {
            room.timers.reap = Some(key);
        }
    }

    /// Arms (or moves earlier) the room's housekeeping timer to its next deadline.
    pub(super) fn arm_housekeeping(&mut self, cx: &mut Ctx<'_>, id: RoomId) {
        let idle = cx.config.idle_timeout;
        let Some(room) = self.table.get_mut(&id) else {
            return;
        };
        let Some(deadline) = room.next_housekeeping(idle) else {
            return;
        };
        if let Some((key, armed)) = room.timers.housekeeping {
            if armed <= deadline {
                return;
            }
            cx.timers.cancel(key);
        }
        let key = cx.timers.insert(deadline, TimerEvent::Housekeeping(id));
        if let Some(room) = self.table.get_mut(&id) {
            room.timers.housekeeping = Some((key, deadline));
        }
    }

    /// A room's housekeeping timer fired: expired reservations and silent members go, and
    /// an empty room finishes.
    pub(super) fn housekeeping(&mut self, cx: &mut Ctx<'_>, now: Instant, id: RoomId) {
        let idle = cx.config.idle_timeout;
        let Some(room) = self.table.get_mut(&id) else {
            return;
        };
        room.timers.housekeeping = None;
        let expired = room.expire_reservations(now);
        cx.stats.reservations_expired += expired as u64;
        while let Some(slot) = self
            .table
            .get(&id)
            .and_then(|room| room.first_idle_member(now, idle))
        {
            cx.stats.idle_removed += 1;
            self.remove_member(cx, now, id, slot);
        }
        self.finish_if_empty(cx, now, id);
        if self
            .table
            .get(&id)
            .is_some_and(|room| room.state != RoomState::Finished)
        {
            self.arm_housekeeping(cx, id);
        }
    }

    /// Whether room `id` is waiting for its instance (a create not answered yet).
    pub(super) fn is_opening(&self, id: RoomId) -> bool {
        self.pending_creates.contains_key(&id)
    }

    /// A Finished room's grace is over: it leaves the table and the list, with its timers.
    /// Returns whether it was there; closing its socket is the caller's, after the party's
    /// connections (if it was a party's) are closed.
    pub(super) fn reap(&mut self, cx: &mut Ctx<'_>, id: RoomId) -> bool {
        let Some(room) = self.table.remove(&id) else {
            return false;
        };
        for key in [room.timers.countdown, room.timers.reap]
            .into_iter()
            .flatten()
            .chain(room.timers.housekeeping.map(|(key, _)| key))
        {
            cx.timers.cancel(key);
        }
        self.table.unlist(id);
        true
    }
}

/// Answers a HELLO with REJECT and counts it by reason.
fn reject(cx: &mut Ctx<'_>, id: RoomId, to: SocketAddr, seq: u16, reason: RejectReason) {
    cx.stats.rejects[reason as usize - 1] += 1;
    cx.push(Output::Instance {
        room: id,
        to,
        seq,
        msg: InstanceMessage::Reject(reason),
    });
}
