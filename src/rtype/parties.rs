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
//! hands back their connections.
//!
//! A party of the upstream client's dialect (`docs/protocols/tcp-lobby-upstream.md`) is a
//! named room, created empty and joined seat by seat before CONNECT_REQ; parties never mix
//! dialects.

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::wire::tcp_lobby::{name_field, validate_name, NAME_LEN};
use crate::wire::tcp_upstream::{Dialect, JoinStatus, RoomRecord, MAX_LIST_RECORDS};

use super::conns::TcpConns;
use super::context::{Ctx, TimerEvent};
use super::messages::Output;
use super::party::{join_message, slot_of_index, Opener, Party, PartyCountdown, PartyMember};
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

    fn send_party(&self, cx: &mut Ctx<'_>, id: RoomId, msg: TcpMessage) {
        let conns = self.parties.get(&id).map(Party::conns);
        for conn in conns.into_iter().flatten() {
            cx.send_tcp(conn, msg);
        }
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
            self.send_party(cx, id, TcpMessage::PlayerLeft(slot));
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
            self.cancel_countdown(cx, rooms, id, TcpError::NotEnoughPlayers);
        } else {
            self.maybe_auto_start(cx, id);
        }
    }

    /// The countdown cannot go on (too few members: `error` 0x06; the game server exited:
    /// 0xFF "no game instance available"; in the upstream dialect, a player un-readied):
    /// stop it, tell everyone (ERROR `error`, then PLAYER_READY(0) for every member; in the
    /// upstream dialect COUNTDOWN 0, the ready flags kept) and release the instance.
    fn cancel_countdown(
        &mut self,
        cx: &mut Ctx<'_>,
        rooms: &mut Rooms,
        id: RoomId,
        error: TcpError,
    ) {
        let Some(party) = self.parties.get_mut(&id) else {
            return;
        };
        let Some(countdown) = party.countdown.take() else {
            return;
        };
        if let Some(key) = countdown.timer {
            cx.timers.cancel(key);
        }
        if party.dialect == Dialect::Upstream {
            cx.stats.tcp.countdowns_cancelled += 1;
            self.send_party(cx, id, TcpMessage::Countdown(Duration::ZERO));
            release_instance(cx, rooms, id);
            return;
        }
        let mut slots = Vec::new();
        for (index, seat) in party.seats.iter_mut().enumerate() {
            if let Some(member) = seat.as_mut() {
                member.ready = false;
                slots.push(slot_of_index(index));
            }
        }
        cx.stats.tcp.countdowns_cancelled += 1;
        self.send_party(cx, id, TcpMessage::Error(error));
        for slot in slots {
            self.send_party(cx, id, TcpMessage::PlayerReady { slot, ready: false });
        }
        release_instance(cx, rooms, id);
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
        self.cancel_countdown(cx, rooms, id, TcpError::NoInstance);
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
        self.send_party(cx, id, join_message(slot, &member));
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
        self.send_party(cx, id, TcpMessage::PlayerReady { slot, ready });
        self.maybe_auto_start(cx, id);
    }

    /// Why the party cannot start now, if it cannot.
    fn start_refusal(&self, cx: &Ctx<'_>, id: RoomId) -> Option<TcpError> {
        let party = self.parties.get(&id)?;
        if party.busy() || party.started {
            Some(TcpError::GameStarted)
        } else if party.member_count() < usize::from(cx.config.party.min_players) {
            Some(TcpError::NotEnoughPlayers)
        } else if !party.all_ready() {
            Some(TcpError::NotAllReady)
        } else {
            None
        }
    }

    /// START_REQ from `conn`, a member of party `id`, received at `now`.
    pub(super) fn start_request(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        conn: ConnId,
        id: RoomId,
    ) {
        match self.start_refusal(cx, id) {
            Some(error) => cx.send_tcp(conn, TcpMessage::Error(error)),
            None => self.open_party_instance(cx, id, Opener::Request(conn, now)),
        }
    }

    /// With `--auto-start`, or always in the upstream dialect (whose client never sends
    /// START_REQ), starts the countdown once the party may start.
    fn maybe_auto_start(&mut self, cx: &mut Ctx<'_>, id: RoomId) {
        let upstream = self
            .parties
            .get(&id)
            .is_some_and(|party| party.dialect == Dialect::Upstream);
        if (cx.config.party.auto_start || upstream) && self.start_refusal(cx, id).is_none() {
            self.open_party_instance(cx, id, Opener::Auto);
        }
    }

    /// Asks the driver for the party's instance socket; the countdown starts when it is bound.
    fn open_party_instance(&mut self, cx: &mut Ctx<'_>, id: RoomId, opener: Opener) {
        let Some(party) = self.parties.get_mut(&id) else {
            return;
        };
        party.opening = Some(opener);
        let players = u8::try_from(party.member_count()).unwrap_or(u8::MAX);
        cx.open_instance(id, players);
    }

    /// The driver's answer to a party's [`Output::OpenInstance`].
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
        let Some(opener) = party.opening.take() else {
            return;
        };
        let Some(port) = port else {
            let error = TcpMessage::Error(TcpError::NoInstance);
            match opener {
                Opener::Request(conn, _) => cx.send_tcp(conn, error),
                Opener::Auto => self.send_party(cx, id, error),
            }
            return;
        };
        if let Some(room) = rooms.get_mut(id) {
            room.port = Some(port);
        }
        // The party may have changed while the socket was being bound.
        if let Some(error) = self.start_refusal(cx, id) {
            if let Opener::Request(conn, _) = opener {
                cx.send_tcp(conn, TcpMessage::Error(error));
            }
            release_instance(cx, rooms, id);
            return;
        }
        // The countdown's clock starts when START_REQ was received, not when the socket was
        // bound: parties whose START_REQs came in one event batch share one schedule, so
        // their COUNTDOWNs fall due together and go out in one run of writes.
        let started = match opener {
            Opener::Request(_, at) => at.min(now),
            Opener::Auto => now,
        };
        self.start_countdown(cx, conns, rooms, now, started, id);
    }

    fn start_countdown(
        &mut self,
        cx: &mut Ctx<'_>,
        conns: &mut TcpConns,
        rooms: &mut Rooms,
        now: Instant,
        started: Instant,
        id: RoomId,
    ) {
        if let Some(room) = rooms.get_mut(id) {
            room.state = RoomState::Countdown;
        }
        let Some(party) = self.parties.get_mut(&id) else {
            return;
        };
        party.countdown = Some(PartyCountdown {
            started,
            next: 0,
            timer: None,
            last_second: 0,
        });
        cx.stats.tcp.countdowns += 1;
        self.countdown_tick(cx, conns, rooms, now, id);
    }

    /// Sends the countdown value due now and arms the next one, or starts the game. In the
    /// upstream dialect a value goes out only when its whole second (rounded up) changes, and
    /// 0 never (it means cancelled there): GAME_START follows 1.
    pub(super) fn countdown_tick(
        &mut self,
        cx: &mut Ctx<'_>,
        conns: &mut TcpConns,
        rooms: &mut Rooms,
        now: Instant,
        id: RoomId,
    ) {
        let total = cx.config.party.countdown;
        let tick = cx.config.party.countdown_tick;
        let Some(party) = self.parties.get_mut(&id) else {
            return;
        };
        let upstream = party.dialect == Dialect::Upstream;
        let Some(countdown) = party.countdown.as_mut() else {
            return;
        };
        let elapsed = tick.saturating_mul(countdown.next).min(total);
        let remaining = total - elapsed;
        countdown.next += 1;
        countdown.timer = None;
        let started = countdown.started;
        let next_at = started + tick.saturating_mul(countdown.next).min(total);
        if !upstream {
            self.send_party(cx, id, TcpMessage::Countdown(remaining));
        } else if !remaining.is_zero() {
            let second = remaining.as_secs() + u64::from(remaining.subsec_nanos() > 0);
            if second != countdown.last_second {
                countdown.last_second = second;
                self.send_party(cx, id, TcpMessage::Countdown(Duration::from_secs(second)));
            }
        }
        if remaining.is_zero() {
            self.game_start(cx, conns, rooms, now, id);
            return;
        }
        let key = cx.timers.insert(next_at, TimerEvent::PartyTick(id));
        if let Some(countdown) = self.parties.get_mut(&id).and_then(|p| p.countdown.as_mut()) {
            countdown.timer = Some(key);
        }
    }

    /// GAME_START: the room plays, its instance expects exactly these players, their TCP
    /// connections are closed after the linger time unless the clients close first.
    fn game_start(
        &mut self,
        cx: &mut Ctx<'_>,
        conns: &mut TcpConns,
        rooms: &mut Rooms,
        now: Instant,
        id: RoomId,
    ) {
        let expires = now + cx.config.seat_timeout;
        let linger = now + cx.config.party.linger;
        let Some(party) = self.parties.get_mut(&id) else {
            return;
        };
        party.countdown = None;
        party.started = true;
        if party.dialect == Dialect::Upstream {
            // The seed GAME_START announces: the injected source's bits, as a hash's.
            party.seed = (cx.hashes)() as u32;
        }
        let roster: Vec<(Slot, PartyMember)> = party.members().map(|(s, m)| (s, *m)).collect();
        let Some(room) = rooms.get_mut(id) else {
            return;
        };
        room.state = RoomState::Playing;
        for (slot, member) in &roster {
            room.expect(*slot, member.hash, expires);
        }
        for (_, member) in &roster {
            conns.transferred(member.conn, id);
            cx.send_tcp(member.conn, TcpMessage::GameStart(id));
        }
        cx.stats.tcp.games_started += 1;
        let key = cx.timers.insert(linger, TimerEvent::PartyLinger(id));
        if let Some(party) = self.parties.get_mut(&id) {
            party.linger = Some(key);
        }
        rooms.arm_housekeeping(cx, id);
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
        self.send_party(cx, id, join_message(slot, &member));
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
        self.send_party(cx, id, TcpMessage::PlayerReady { slot, ready });
        if ready {
            self.maybe_auto_start(cx, id);
        } else {
            // The upstream dialect has no error message: `cancel_countdown` sends COUNTDOWN 0.
            self.cancel_countdown(cx, rooms, id, TcpError::NotEnoughPlayers);
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
        let may = self.start_refusal(cx, id).is_none();
        if may {
            self.open_party_instance(cx, id, Opener::Request(conn, now));
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

/// Closes a party's instance socket while the party lives on (countdown cancelled).
fn release_instance(cx: &mut Ctx<'_>, rooms: &mut Rooms, id: RoomId) {
    let Some(room) = rooms.get_mut(id) else {
        return;
    };
    room.state = RoomState::Waiting;
    if room.port.take().is_some() {
        cx.push(Output::CloseInstance { room: id });
    }
}
