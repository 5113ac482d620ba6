//! The room table and the UDP room lobby (`docs/protocols/udp-lobby.md`: LIST_ROOMS,
//! CREATE_ROOM, JOIN_ROOM under the per-IP request and reply-byte budgets). [`Rooms`] owns
//! the table, the ids, the creates waiting for their socket and the UDP lobby's rate
//! limiter; it finds the room an instance datagram or a room's timer is for and hands it to
//! `relay.rs`, which serves that room's game instance (`docs/protocols/instance.md`: HELLO,
//! LEAVE, START, PING, DATA, the countdown, housekeeping), and reaps finished rooms.
//!
//! A party's lobby state (its TCP members, their hashes, its countdown) is `parties.rs`'s;
//! for a party this file only opens, releases and removes its room when asked. It must not
//! decide what a TCP request means.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use crate::ratelimit::PerIpLimiter;
use crate::wire::udp_lobby::room_list_len;

use super::config::{RtypeConfig, NODE_SHIFT};
use super::context::Ctx;
use super::messages::{
    Dialect, InstanceRequest, LobbyReply, LobbyRequest, Output, ReplyTo, RoomInfo, RoomSettings,
    MAX_PASSWORD, MAX_ROOM_NAME, UNNAMED_ROOM,
};
use super::relay;
use super::remote_join::{remote_owner, RemoteJoins};
use super::reply_len::{lobby_reply_len, upstream_list_len};
use super::room::{Room, RoomId, RoomKind, SeatRefusal, Slot};
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
        let Some(room) = self.table.get_mut(&id) else {
            cx.stats.ignored(InstanceIgnore::StaleRoom);
            return;
        };
        relay::handle_request(cx, now, id, room, from, seq, request);
    }

    /// A UDP room's countdown timer fired: one second less, announced.
    pub(super) fn countdown_tick(&mut self, cx: &mut Ctx<'_>, id: RoomId) {
        if let Some(room) = self.table.get_mut(&id) {
            relay::countdown_tick(cx, id, room);
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
        relay::relay_data(cx, now, room, from, target, destinations)
    }

    /// Arms (or moves earlier) room `id`'s housekeeping timer to its next deadline.
    pub(super) fn arm_housekeeping(&mut self, cx: &mut Ctx<'_>, id: RoomId) {
        if let Some(room) = self.table.get_mut(&id) {
            relay::arm_housekeeping(cx, id, room);
        }
    }

    /// Room `id`'s housekeeping timer fired: expired reservations and silent members go,
    /// and an empty room finishes.
    pub(super) fn housekeeping(&mut self, cx: &mut Ctx<'_>, now: Instant, id: RoomId) {
        if let Some(room) = self.table.get_mut(&id) {
            relay::housekeeping(cx, now, id, room);
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
