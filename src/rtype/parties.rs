//! TCP lobby parties: the behaviour of RFC R-Type-TCP-001 (sections 3, 5 and 7) on the rooms
//! of the core, as `docs/protocols/tcp-lobby.md` ("Server behaviour") specifies it.
//!
//! A party is a room of kind [`RoomKind::Party`](super::room::RoomKind): same id space, same
//! `--max-rooms`, same instance relay once the game starts, but never listed in ROOM_LIST. A
//! connection's valid CONNECT_REQ places it in the oldest Waiting party with a free seat, else
//! a new party; from then on the client sees the single lobby the RFC describes. Before that
//! it holds no seat (`conns.rs` keeps its record, deadlines and request rate). The party's
//! game instance is bound when its countdown starts and, after GAME_START, admits exactly the
//! announced players by their hash (HELLO token, `rooms.rs`).
//!
//! [`Parties`] owns every party's lobby state ([`Party`], `party.rs`) and the hashes of live
//! players; it changes a party's room through [`Rooms`] and a connection's stage through
//! [`TcpConns`], both handed in. A request never queues more than one message per member plus
//! the newcomer's roster, and a READY that changes nothing queues nothing. Player hashes come
//! from the context's injected source (the OS CSPRNG in the server, a seeded generator in
//! simulations). Closing connections is `tcp.rs`'s: where a party lets its players go, it
//! hands back their connections. The way from a party's lobby to its game (the instance, the
//! countdown, GAME_START) is `countdown.rs`'s, handed the party an event is for.
//!
//! A party of the upstream client's dialect (`docs/protocols/tcp-lobby-upstream.md`) is a
//! named room, created empty and joined seat by seat before CONNECT_REQ; parties never mix
//! dialects.

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;
use std::time::Instant;

use crate::wire::tcp_lobby::{name_field, validate_name, NAME_LEN};
use crate::wire::tcp_upstream::{Dialect, JoinStatus, RoomRecord, MAX_LIST_RECORDS};

use super::conns::TcpConns;
use super::context::Ctx;
use super::countdown::{
    self, cancel_countdown, maybe_auto_start, open_party_instance, send_party, start_refusal,
};
use super::messages::Output;
use super::party::{join_message, slot_of_index, Opener, Party, PartyMember};
use super::room::{RoomId, RoomState, Slot};
use super::rooms::Rooms;
use super::tcp_messages::{ConnId, TcpError, TcpMessage};

/// Attempts at drawing a fresh hash before giving up (a failing or degenerate source).
const HASH_ATTEMPTS: usize = 8;

/// Where a CONNECT_REQ can go.
#[derive(Clone, Copy, Debug)]
enum Placement {
    /// The oldest Waiting party with a free seat.
    Party(RoomId),
    /// No party takes newcomers, and a new one can be opened.
    NewParty,
}

/// How a CONNECT_REQ ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Connect {
    /// Seated (CONNECT_ACK sent), or refused with an ERROR and left open.
    Done,
    /// ERROR 0x01: no seat anywhere and `--max-rooms` rooms; the caller closes the connection.
    LobbyFull,
}

/// Every party's lobby state and the hashes of live players.
#[derive(Default)]
pub(super) struct Parties {
    parties: BTreeMap<RoomId, Party>,
    /// Hashes of live players (connected, or announced in a GAME_START whose room lives).
    hashes: HashSet<u64>,
}

impl Parties {
    /// A party, for inspection.
    pub(super) fn get(&self, id: RoomId) -> Option<&Party> {
        self.parties.get(&id)
    }

    /// Hashes of live players.
    #[cfg(test)]
    pub(super) fn live_hashes(&self) -> usize {
        self.hashes.len()
    }

    /// Players still in a party's TCP lobby (0 once the game started).
    pub(super) fn lobby_members(&self, id: RoomId) -> usize {
        self.parties
            .get(&id)
            .filter(|party| !party.started)
            .map_or(0, Party::member_count)
    }

    /// The players of a party's GAME_START in slot order: slot, hash, name field and spawn.
    pub(super) fn game_start_players<'a>(
        &'a self,
        spawns: &'a [(f32, f32)],
        id: RoomId,
    ) -> impl Iterator<Item = (Slot, u64, [u8; NAME_LEN], (f32, f32))> + 'a {
        self.parties
            .get(&id)
            .into_iter()
            .flat_map(|party| party.members())
            .map(move |(slot, m)| {
                let spawn = spawns
                    .get(usize::from(slot) - 1)
                    .copied()
                    .unwrap_or((0.0, 0.0));
                (slot, m.hash, m.name, spawn)
            })
    }

    /// Where a CONNECT_REQ goes now: the oldest Waiting party with a free seat, else a new
    /// party; `None` at `--max-rooms`.
    fn placement(&self, cx: &Ctx<'_>, rooms: &Rooms) -> Option<Placement> {
        // One party never mixes dialects: an RFC CONNECT_REQ never lands in a room.
        if let Some((&id, _)) = self
            .parties
            .iter()
            .find(|(_, party)| party.dialect == Dialect::Rfc && party.takes_newcomers())
        {
            return Some(Placement::Party(id));
        }
        rooms.room_left(cx.config).then_some(Placement::NewParty)
    }

    /// Opens a new party (a room of kind party) for a CONNECT_REQ from `creator`; the caller
    /// checked with [`Parties::placement`] that a room is left.
    fn open_party(&mut self, cx: &mut Ctx<'_>, rooms: &mut Rooms, creator: IpAddr) -> RoomId {
        let id = rooms.open_party_room(cx.config.max_players, creator);
        self.parties.insert(id, Party::new(cx.config.max_players));
        cx.stats.tcp.parties_opened += 1;
        id
    }

    /// The member at `slot` of party `id` is gone: its seat and hash are free, the rest hear
    /// PLAYER_LEFT (if it was connected: an upstream seat held before CONNECT_REQ was never
    /// announced), and the party goes on without it (or dissolves, empty).
    pub(super) fn member_left(
        &mut self,
        cx: &mut Ctx<'_>,
        rooms: &mut Rooms,
        id: RoomId,
        slot: Slot,
    ) {
        let Some(party) = self.parties.get_mut(&id) else {
            return;
        };
        let index = usize::from(slot) - 1;
        let Some(member) = party.seats.get_mut(index).and_then(Option::take) else {
            return;
        };
        self.hashes.remove(&member.hash);
        if member.connected {
            send_party(cx, party, TcpMessage::PlayerLeft(slot));
        }
        self.after_leave(cx, rooms, id);
        self.dissolve_if_empty(cx, rooms, id);
    }

    /// A member left: the countdown goes on while `--min-players` remain, else it is
    /// cancelled; with `--auto-start` the rest may now be ready to start.
    fn after_leave(&mut self, cx: &mut Ctx<'_>, rooms: &mut Rooms, id: RoomId) {
        let min = usize::from(cx.config.party.min_players);
        let Some(party) = self.parties.get_mut(&id) else {
            return;
        };
        if party.countdown.is_some() && party.member_count() < min {
            cancel_countdown(cx, rooms, id, party, TcpError::NotEnoughPlayers);
        } else {
            maybe_auto_start(cx, id, party);
        }
    }

    /// Party `id`'s game server exited before GAME_START (`--instance-exec`): the party
    /// stays, its countdown cancelled with ERROR 0xFF (no game instance). False when `id` is
    /// no party still in its lobby (the caller reaps the room).
    pub(super) fn instance_exited(
        &mut self,
        cx: &mut Ctx<'_>,
        rooms: &mut Rooms,
        id: RoomId,
    ) -> bool {
        let Some(party) = self.parties.get_mut(&id) else {
            return false;
        };
        if party.started {
            return false;
        }
        party.opening = None;
        cancel_countdown(cx, rooms, id, party, TcpError::NoInstance);
        // No countdown to cancel (already over): the party stays in its lobby, Waiting.
        if let Some(room) = rooms.get_mut(id) {
            room.state = RoomState::Waiting;
            room.port = None;
        }
        true
    }

    /// A party with nobody in its lobby and no game is removed with its room.
    fn dissolve_if_empty(&mut self, cx: &mut Ctx<'_>, rooms: &mut Rooms, id: RoomId) {
        let empty = self.parties.get(&id).is_some_and(|party| {
            !party.started && party.member_count() == 0 && party.creator.is_none()
        });
        if !empty {
            return;
        }
        if let Some(party) = self.parties.remove(&id) {
            if let Some(key) = party.countdown.and_then(|c| c.timer) {
                cx.timers.cancel(key);
            }
        }
        if let Some(room) = rooms.remove(id) {
            if room.port.is_some() {
                cx.push(Output::CloseInstance { room: id });
            }
        }
    }

    /// A CONNECT_REQ from a connection without CONNECT_ACK: a valid name gets a seat in the
    /// oldest Waiting party with a free seat (else a new party) unless the name is taken
    /// there; with no seat anywhere and `--max-rooms` rooms, ERROR 0x01 and
    /// [`Connect::LobbyFull`] (the caller closes the connection).
    pub(super) fn connect(
        &mut self,
        cx: &mut Ctx<'_>,
        conns: &mut TcpConns,
        rooms: &mut Rooms,
        conn: ConnId,
        raw: [u8; NAME_LEN],
    ) -> Connect {
        let name = match validate_name(&raw) {
            Ok(name) => name_field(name),
            Err(_) => {
                cx.send_tcp(conn, TcpMessage::Error(TcpError::InvalidName));
                return Connect::Done;
            }
        };
        let Some(placement) = self.placement(cx, rooms) else {
            cx.send_tcp(conn, TcpMessage::Error(TcpError::LobbyFull));
            return Connect::LobbyFull;
        };
        if let Placement::Party(id) = placement {
            let taken = self
                .parties
                .get(&id)
                .is_some_and(|party| party.members().any(|(_, m)| m.name == name));
            if taken {
                cx.send_tcp(conn, TcpMessage::Error(TcpError::NameTaken));
                return Connect::Done;
            }
        }
        let Some(hash) = self.fresh_hash(cx) else {
            cx.send_tcp(conn, TcpMessage::Error(TcpError::NoPlayerId));
            return Connect::Done;
        };
        let Some(peer) = conns.peer(conn) else {
            return Connect::Done;
        };
        let id = match placement {
            Placement::Party(id) => id,
            Placement::NewParty => self.open_party(cx, rooms, peer),
        };
        let Some(party) = self.parties.get_mut(&id) else {
            return Connect::Done;
        };
        let Some(index) = party.seats.iter().position(Option::is_none) else {
            return Connect::Done;
        };
        let slot = slot_of_index(index);
        let member = PartyMember {
            conn,
            hash,
            name,
            ready: false,
            connected: true,
        };
        party.seats[index] = Some(member);
        let existing: Vec<(Slot, PartyMember)> = party
            .members()
            .filter(|(s, _)| *s != slot)
            .map(|(s, m)| (s, *m))
            .collect();
        self.hashes.insert(hash);
        conns.connected(cx, conn, id, slot);
        cx.send_tcp(conn, TcpMessage::ConnectAck { hash, slot });
        for (slot, m) in existing {
            cx.send_tcp(conn, join_message(slot, &m));
        }
        send_party(cx, party, join_message(slot, &member));
        Connect::Done
    }

    /// A non-zero hash no live player has, or `None` if the source keeps failing.
    fn fresh_hash(&self, cx: &mut Ctx<'_>) -> Option<u64> {
        (0..HASH_ATTEMPTS)
            .map(|_| (cx.hashes)())
            .find(|hash| *hash != 0 && !self.hashes.contains(hash))
    }

    /// READY_REQ from the member at `slot` of party `id`.
    pub(super) fn ready(
        &mut self,
        cx: &mut Ctx<'_>,
        conn: ConnId,
        id: RoomId,
        slot: Slot,
        ready: bool,
    ) {
        let Some(party) = self.parties.get_mut(&id) else {
            return;
        };
        if party.busy() {
            cx.send_tcp(conn, TcpMessage::Error(TcpError::GameStarted));
            return;
        }
        let Some(member) = party.member_mut(slot) else {
            return;
        };
        // Nothing changes, so nobody is told anything: a repeated READY costs its sender one
        // request of its rate and its party nothing.
        if member.ready == ready {
            return;
        }
        member.ready = ready;
        send_party(cx, party, TcpMessage::PlayerReady { slot, ready });
        maybe_auto_start(cx, id, party);
    }

    /// START_REQ from `conn`, a member of party `id`, received at `now`.
    pub(super) fn start_request(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        conn: ConnId,
        id: RoomId,
    ) {
        let Some(party) = self.parties.get_mut(&id) else {
            return;
        };
        match start_refusal(cx, party) {
            Some(error) => cx.send_tcp(conn, TcpMessage::Error(error)),
            None => open_party_instance(cx, id, party, Opener::Request(conn, now)),
        }
    }

    /// The driver's answer to a party's [`Output::OpenInstance`]: the countdown starts, or
    /// the party hears why not. A port bound for a party dissolved meanwhile goes back.
    pub(super) fn instance_opened(
        &mut self,
        cx: &mut Ctx<'_>,
        conns: &mut TcpConns,
        rooms: &mut Rooms,
        now: Instant,
        id: RoomId,
        port: Option<u16>,
    ) {
        let Some(party) = self.parties.get_mut(&id) else {
            // The party dissolved while its socket was being bound.
            if port.is_some() {
                cx.push(Output::CloseInstance { room: id });
            }
            return;
        };
        countdown::instance_opened(cx, conns, rooms, now, id, party, port);
    }

    /// Party `id`'s next countdown value is due.
    pub(super) fn countdown_tick(
        &mut self,
        cx: &mut Ctx<'_>,
        conns: &mut TcpConns,
        rooms: &mut Rooms,
        now: Instant,
        id: RoomId,
    ) {
        if let Some(party) = self.parties.get_mut(&id) {
            countdown::countdown_tick(cx, conns, rooms, now, id, party);
        }
    }

    /// A started party's linger time is over: returns the connections the clients kept open
    /// (the caller closes them, with no PLAYER_LEFT).
    pub(super) fn linger_over(&mut self, conns: &TcpConns, id: RoomId) -> Vec<ConnId> {
        let Some(party) = self.parties.get_mut(&id) else {
            return Vec::new();
        };
        party.linger = None;
        self.transferred_conns(conns, id)
    }

    /// The connections of started party `id` that are still open. A member's `ConnId` stays
    /// in the party after its client closed, and the driver reuses the key for newcomers:
    /// only a record still `Transferred` in this party is this member's connection.
    fn transferred_conns(&self, conns: &TcpConns, id: RoomId) -> Vec<ConnId> {
        let Some(party) = self.parties.get(&id) else {
            return Vec::new();
        };
        party
            .conns()
            .into_iter()
            .filter(|conn| conns.is_transferred_from(*conn, id))
            .collect()
    }

    /// A party's room is being reaped: its players' hashes are free again. Returns the
    /// connections still open (the caller closes them).
    pub(super) fn reaped(&mut self, cx: &mut Ctx<'_>, conns: &TcpConns, id: RoomId) -> Vec<ConnId> {
        let open = self.transferred_conns(conns, id);
        let Some(party) = self.parties.remove(&id) else {
            return open;
        };
        if let Some(key) = party.linger {
            cx.timers.cancel(key);
        }
        for (_, member) in party.members() {
            self.hashes.remove(&member.hash);
        }
        open
    }

    // ---- The upstream client's dialect: named rooms, then the party in them
    // (`docs/protocols/tcp-lobby-upstream.md`, "Server behaviour"). ----

    /// The records LIST_ROOMS_ACK carries: every room of the upstream dialect, oldest first,
    /// at most [`MAX_LIST_RECORDS`] (the client's 2048-byte frame). Allocates nothing.
    pub(super) fn room_records(&self) -> impl Iterator<Item = RoomRecord> + '_ {
        self.parties
            .iter()
            .filter(|(_, party)| party.dialect == Dialect::Upstream)
            .map(|(&id, party)| record_of(id, party))
            .take(MAX_LIST_RECORDS)
    }

    /// The record of room `id`, if it is a room of the upstream dialect.
    pub(super) fn room_record(&self, id: RoomId) -> Option<RoomRecord> {
        let party = self.parties.get(&id)?;
        (party.dialect == Dialect::Upstream).then(|| record_of(id, party))
    }

    /// The seed party `id`'s GAME_START announced (0 for an RFC party).
    pub(super) fn seed(&self, id: RoomId) -> u32 {
        self.parties.get(&id).map_or(0, |party| party.seed)
    }

    /// CREATE_ROOM_REQ from `conn`, in no room: a room named `raw` opens, kept while empty
    /// for its creator until it joins (its client sends JOIN_ROOM_REQ on the ACK), creates
    /// another or goes. `None` (CREATE_ROOM_ACK 1) for an invalid name or at `--max-rooms`.
    pub(super) fn create_room(
        &mut self,
        cx: &mut Ctx<'_>,
        conns: &TcpConns,
        rooms: &mut Rooms,
        conn: ConnId,
        raw: [u8; NAME_LEN],
    ) -> Option<RoomId> {
        self.release_creator(cx, rooms, conn);
        let name = name_field(validate_name(&raw).ok()?);
        if !rooms.room_left(cx.config) {
            return None;
        }
        let peer = conns.peer(conn)?;
        let id = rooms.open_party_room(cx.config.max_players, peer);
        let room = Party::room(cx.config.max_players, name, conn);
        self.parties.insert(id, room);
        cx.stats.tcp.parties_opened += 1;
        cx.stats.tcp.rooms_created += 1;
        Some(id)
    }

    /// `conn` no longer keeps the room it created (it joined a room, created another, or
    /// went): that room goes if nobody is in it.
    pub(super) fn release_creator(&mut self, cx: &mut Ctx<'_>, rooms: &mut Rooms, conn: ConnId) {
        let kept: Vec<RoomId> = self
            .parties
            .iter()
            .filter(|(_, party)| party.creator == Some(conn))
            .map(|(&id, _)| id)
            .collect();
        for id in kept {
            if let Some(party) = self.parties.get_mut(&id) {
                party.creator = None;
            }
            self.dissolve_if_empty(cx, rooms, id);
        }
    }

    /// JOIN_ROOM_REQ from `conn`, in no room: a seat in room `room_id` (the connection then
    /// hears the party), or why not. A party of the RFC dialect is no room here.
    pub(super) fn join_room(
        &mut self,
        cx: &mut Ctx<'_>,
        conns: &mut TcpConns,
        rooms: &mut Rooms,
        conn: ConnId,
        room_id: u32,
    ) -> JoinStatus {
        let id = RoomId(room_id);
        let Some(party) = self
            .parties
            .get_mut(&id)
            .filter(|party| party.dialect == Dialect::Upstream)
        else {
            return JoinStatus::NotFound;
        };
        if party.started || party.busy() {
            return JoinStatus::InGame;
        }
        let Some(index) = party.seats.iter().position(Option::is_none) else {
            return JoinStatus::Full;
        };
        party.seats[index] = Some(PartyMember::joined(conn));
        conns.joined(conn, id, slot_of_index(index));
        self.release_creator(cx, rooms, conn);
        JoinStatus::Joined
    }

    /// CONNECT_REQ from `conn`, which holds `slot` in room `id`: a valid name and a fresh
    /// hash make it a player. CONNECT_ACK, then PLAYER_JOIN of every other player (the driver
    /// follows a ready one's with PLAYER_READY), then its own PLAYER_JOIN to every seat.
    /// Upstream takes any name and duplicates; an invalid name or no hash gets CONNECT_ACK 1.
    pub(super) fn upstream_connect(
        &mut self,
        cx: &mut Ctx<'_>,
        conns: &mut TcpConns,
        conn: ConnId,
        id: RoomId,
        slot: Slot,
        raw: [u8; NAME_LEN],
    ) {
        let name = validate_name(&raw).ok().map(name_field);
        let hash = self.fresh_hash(cx);
        let (Some(name), Some(hash)) = (name, hash) else {
            cx.stats.tcp.refused("connect_refused");
            cx.send_tcp(conn, TcpMessage::ConnectRefused);
            return;
        };
        let Some(party) = self.parties.get_mut(&id) else {
            return;
        };
        let Some(member) = party.member_mut(slot) else {
            return;
        };
        member.hash = hash;
        member.name = name;
        member.connected = true;
        let member = *member;
        let others: Vec<(Slot, PartyMember)> = party
            .members()
            .filter(|(s, m)| *s != slot && m.connected)
            .map(|(s, m)| (s, *m))
            .collect();
        self.hashes.insert(hash);
        conns.connected(cx, conn, id, slot);
        cx.send_tcp(conn, TcpMessage::ConnectAck { hash, slot });
        for (slot, other) in others {
            cx.send_tcp(conn, join_message(slot, &other));
        }
        send_party(cx, party, join_message(slot, &member));
    }

    /// READY_REQ from the player at `slot` of room `id`, claiming `hash`: with its own hash
    /// its ready flag toggles (everyone hears PLAYER_READY; everyone ready starts the
    /// countdown, an un-ready during it cancels it with COUNTDOWN 0); a foreign hash is
    /// ignored and counted.
    pub(super) fn toggle_ready(
        &mut self,
        cx: &mut Ctx<'_>,
        rooms: &mut Rooms,
        id: RoomId,
        slot: Slot,
        hash: u64,
    ) {
        let Some(party) = self.parties.get_mut(&id) else {
            return;
        };
        if party.started {
            return;
        }
        let Some(member) = party.member_mut(slot) else {
            return;
        };
        if member.hash != hash {
            cx.stats.tcp.foreign_ready += 1;
            return;
        }
        member.ready = !member.ready;
        let ready = member.ready;
        send_party(cx, party, TcpMessage::PlayerReady { slot, ready });
        if ready {
            maybe_auto_start(cx, id, party);
        } else {
            // The upstream dialect has no error message: `cancel_countdown` sends COUNTDOWN 0.
            cancel_countdown(cx, rooms, id, party, TcpError::NotEnoughPlayers);
        }
    }

    /// START_REQ in the upstream dialect: any player may send it; it starts the countdown
    /// if the room may start (true), and is otherwise ignored (there is no error message).
    pub(super) fn upstream_start(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        conn: ConnId,
        id: RoomId,
    ) -> bool {
        let Some(party) = self.parties.get_mut(&id) else {
            // No party: nothing to refuse, and nothing starts.
            return true;
        };
        let may = start_refusal(cx, party).is_none();
        if may {
            open_party_instance(cx, id, party, Opener::Request(conn, now));
        }
        may
    }
}

/// Room `id`'s record: its seats held (joined or connected), of how many, in game or not.
fn record_of(id: RoomId, party: &Party) -> RoomRecord {
    RoomRecord {
        id: id.0,
        name: party.name,
        players: u8::try_from(party.member_count()).unwrap_or(u8::MAX),
        max_players: u8::try_from(party.seats.len()).unwrap_or(u8::MAX),
        in_game: party.started,
    }
}
