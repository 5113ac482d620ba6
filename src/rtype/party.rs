//! TCP lobby parties: the behaviour of RFC R-Type-TCP-001 (sections 3, 5 and 7) on the rooms
//! of the core, as `docs/protocols/tcp-lobby.md` ("Server behaviour") specifies it.
//!
//! A party is a [`Room`] of kind [`RoomKind::Party`]: same id space, same `--max-rooms`, same
//! instance relay once the game starts, but never listed in ROOM_LIST. A connection's valid
//! CONNECT_REQ places it in the oldest Waiting party with a free seat, else a new party; from
//! then on the client sees the single lobby the RFC describes. Before that it holds no seat
//! (`party/conns.rs` keeps its record, deadlines and request rate). The party's game
//! instance is bound when its countdown starts and, after GAME_START, admits exactly the
//! announced players by their hash (HELLO token).
//!
//! Like the rest of the core this owns no socket and reads no clock: the driver reports
//! accepted connections, decoded requests, protocol violations and closes; the core answers
//! with [`Output::Tcp`] messages and [`Output::CloseConn`]. A request never queues more than
//! one message per member plus the newcomer's roster, and a READY that changes nothing
//! queues nothing. Player hashes come from an injected source (the OS CSPRNG in the server, a
//! seeded generator in simulations).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use crate::time::wheel::TimerKey;
use crate::wire::tcp_lobby::{name_field, validate_name, NAME_LEN};

use super::room::{Room, RoomId, RoomKind, RoomState, Slot};
use super::{Output, RtypeCore, TimerEvent};

mod conns;
mod messages;
mod stats;

pub use messages::{ConnClose, ConnId, TcpError, TcpMessage, TcpRequest, Violation};
pub use stats::{CloseCause, PartyStats};

use conns::TcpConn;
use stats::index_of;

/// The TCP lobby's settings.
#[derive(Clone, Debug)]
pub struct PartyConfig {
    /// Members a party needs before START_REQ (or `auto_start`) may start it.
    pub min_players: u8,
    /// First COUNTDOWN value.
    pub countdown: Duration,
    /// Interval between COUNTDOWN messages.
    pub countdown_tick: Duration,
    /// Start the countdown by itself once every member is ready and `min_players` are in.
    pub auto_start: bool,
    /// Protocol violations tolerated; the connection is closed at this many.
    pub max_violations: u32,
    /// Spawn position of each slot (index `slot - 1`); at least `max_players` of them.
    pub spawns: Vec<(f32, f32)>,
    /// How long after GAME_START the server closes a connection the client kept open.
    pub linger: Duration,
    /// A connection without CONNECT_ACK this long after it was accepted is closed, whatever
    /// it sends (`--handshake-timeout`).
    pub handshake_timeout: Duration,
    /// Requests per second one connection may make; one over it is a `flood` violation.
    pub request_rate: u64,
    /// Requests one connection may make back to back.
    pub request_burst: u64,
}

impl Default for PartyConfig {
    fn default() -> Self {
        PartyConfig {
            min_players: 2,
            countdown: Duration::from_secs(5),
            countdown_tick: Duration::from_millis(100),
            auto_start: false,
            max_violations: 5,
            spawns: vec![
                (100.0, 100.0),
                (100.0, 200.0),
                (100.0, 300.0),
                (100.0, 400.0),
            ],
            linger: Duration::from_secs(5),
            handshake_timeout: Duration::from_secs(5),
            request_rate: 20,
            request_burst: 40,
        }
    }
}

/// A connected player of a party.
#[derive(Clone, Copy, Debug)]
pub struct PartyMember {
    /// Its connection.
    pub conn: ConnId,
    /// Its hash (CONNECT_ACK, HELLO token).
    pub hash: u64,
    /// Its name field, normalised (NUL-padded after the name).
    pub name: [u8; NAME_LEN],
    /// Its ready flag.
    pub ready: bool,
}

/// Who asked for the instance a party is waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opener {
    /// START_REQ from this connection, received at this instant.
    Request(ConnId, Instant),
    /// `--auto-start`.
    Auto,
}

/// A running countdown: value `k` is sent at `started + k * tick`, computed from the start so
/// the ticks never drift.
#[derive(Clone, Copy, Debug)]
struct PartyCountdown {
    started: Instant,
    next: u32,
    timer: Option<TimerKey>,
}

/// A party's lobby state beside its [`Room`].
#[derive(Debug)]
pub struct Party {
    /// Connected players, index `slot - 1`.
    seats: Vec<Option<PartyMember>>,
    /// Waiting for the driver to bind the instance socket.
    opening: Option<Opener>,
    countdown: Option<PartyCountdown>,
    /// GAME_START was sent; the seats are the game's roster from then on.
    started: bool,
    linger: Option<TimerKey>,
}

impl Party {
    fn new(max_players: u8) -> Party {
        Party {
            seats: vec![None; usize::from(max_players)],
            opening: None,
            countdown: None,
            started: false,
            linger: None,
        }
    }

    /// Connected players in slot order.
    pub fn members(&self) -> impl Iterator<Item = (Slot, &PartyMember)> + '_ {
        self.seats
            .iter()
            .enumerate()
            .filter_map(|(i, seat)| seat.as_ref().map(|m| (slot_of_index(i), m)))
    }

    /// Number of connected players.
    pub fn member_count(&self) -> usize {
        self.members().count()
    }

    /// Whether a newcomer may be placed here: Waiting (no countdown, not opening, not
    /// started) with a free seat.
    fn takes_newcomers(&self) -> bool {
        !self.busy() && !self.started && self.member_count() < self.seats.len()
    }

    /// Counting down or binding its instance.
    fn busy(&self) -> bool {
        self.countdown.is_some() || self.opening.is_some()
    }

    fn member_mut(&mut self, slot: Slot) -> Option<&mut PartyMember> {
        self.seats
            .get_mut(usize::from(slot).checked_sub(1)?)?
            .as_mut()
    }

    fn all_ready(&self) -> bool {
        self.members().all(|(_, m)| m.ready)
    }

    fn conns(&self) -> Vec<ConnId> {
        self.members().map(|(_, m)| m.conn).collect()
    }
}

fn slot_of_index(index: usize) -> Slot {
    Slot::try_from(index + 1).unwrap_or(Slot::MAX)
}

/// Attempts at drawing a fresh hash before giving up (a failing or degenerate source).
const HASH_ATTEMPTS: usize = 8;

/// Hashes drawn from the OS per system call by [`OsRandom`].
const RANDOM_BATCH: usize = 32;

/// The player-hash source: 64 bits at a time from the operating system's CSPRNG, fetched
/// [`RANDOM_BATCH`] at a time so that a join does not cost a `getrandom` call of its own
/// (fewer system calls per TCP join). The values are the CSPRNG's, unchanged; they only
/// wait in this buffer until handed out, once each.
#[derive(Debug, Default)]
pub struct OsRandom {
    batch: [u64; RANDOM_BATCH],
    left: usize,
}

impl OsRandom {
    /// The next 64 random bits; 0 if the OS generator fails (the caller refuses 0 and
    /// retries).
    pub fn next_u64(&mut self) -> u64 {
        if self.left == 0 {
            let mut bytes = [0u8; RANDOM_BATCH * 8];
            if getrandom::fill(&mut bytes).is_err() {
                return 0;
            }
            for (value, chunk) in self.batch.iter_mut().zip(bytes.chunks_exact(8)) {
                let mut word = [0u8; 8];
                word.copy_from_slice(chunk);
                *value = u64::from_ne_bytes(word);
            }
            self.left = RANDOM_BATCH;
        }
        self.left -= 1;
        // Each value is handed out once: taken, and its slot cleared.
        std::mem::take(&mut self.batch[self.left])
    }
}

/// The TCP lobby's share of the core's state.
pub(super) struct TcpState {
    pub(super) parties: BTreeMap<RoomId, Party>,
    conns: HashMap<ConnId, TcpConn>,
    /// Connections without CONNECT_ACK by accept order, oldest first (eviction).
    pending: BTreeMap<u64, ConnId>,
    next_order: u64,
    /// Hashes of live players (connected, or announced in a GAME_START whose room lives).
    pub(super) hashes: HashSet<u64>,
    pub(super) hash_source: Box<dyn FnMut() -> u64 + Send>,
}

impl TcpState {
    pub(super) fn new(hash_source: Box<dyn FnMut() -> u64 + Send>) -> TcpState {
        TcpState {
            parties: BTreeMap::new(),
            conns: HashMap::new(),
            pending: BTreeMap::new(),
            next_order: 0,
            hashes: HashSet::new(),
            hash_source,
        }
    }
}

/// Where a CONNECT_REQ can go.
#[derive(Clone, Copy, Debug)]
enum Placement {
    /// The oldest Waiting party with a free seat.
    Party(RoomId),
    /// No party takes newcomers, and a new one can be opened.
    NewParty,
}

impl RtypeCore {
    /// A party, for inspection.
    pub fn party(&self, id: RoomId) -> Option<&Party> {
        self.tcp.parties.get(&id)
    }

    /// Players still in a party's TCP lobby (0 once the game started), for the operators'
    /// room view.
    pub fn lobby_members(&self, id: RoomId) -> usize {
        self.tcp
            .parties
            .get(&id)
            .filter(|party| !party.started)
            .map_or(0, Party::member_count)
    }

    /// The players of a party's GAME_START in slot order: slot, hash, name field and spawn.
    pub fn game_start_players(
        &self,
        id: RoomId,
    ) -> impl Iterator<Item = (Slot, u64, [u8; NAME_LEN], (f32, f32))> + '_ {
        let spawns = &self.config.party.spawns;
        self.tcp
            .parties
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

    pub(super) fn send_tcp(&mut self, conn: ConnId, msg: TcpMessage) {
        if let TcpMessage::Error(error) = msg {
            if let Some(i) = index_of(&TcpError::ALL, error) {
                self.stats.tcp.errors[i] += 1;
            }
        }
        self.outputs.push_back(Output::Tcp { conn, msg });
    }

    fn send_party(&mut self, id: RoomId, msg: TcpMessage) {
        let conns = self.tcp.parties.get(&id).map(Party::conns);
        for conn in conns.into_iter().flatten() {
            self.send_tcp(conn, msg);
        }
    }

    /// Where a CONNECT_REQ goes now: the oldest Waiting party with a free seat, else a new
    /// party; `None` at `--max-rooms`.
    fn placement(&self) -> Option<Placement> {
        if let Some((&id, _)) = self
            .tcp
            .parties
            .iter()
            .find(|(_, party)| party.takes_newcomers())
        {
            return Some(Placement::Party(id));
        }
        let room_left = self.rooms.len() < self.config.max_rooms && self.next_room_id != 0;
        room_left.then_some(Placement::NewParty)
    }

    /// Opens a new party (a room of kind party) for a CONNECT_REQ from `creator`; the caller
    /// checked with [`RtypeCore::placement`] that a room is left.
    fn open_party(&mut self, creator: IpAddr) -> RoomId {
        let id = RoomId(self.next_room_id);
        self.next_room_id = self.next_room_id.checked_add(1).unwrap_or(0);
        let mut room = Room::new(id, self.config.max_players, creator);
        room.kind = RoomKind::Party;
        self.rooms.insert(id, room);
        self.tcp
            .parties
            .insert(id, Party::new(self.config.max_players));
        self.stats.tcp.parties_opened += 1;
        id
    }

    /// The member at `slot` of party `id` is gone: its seat and hash are free, the rest hear
    /// PLAYER_LEFT, and the party goes on without it (or dissolves, empty).
    fn member_left(&mut self, id: RoomId, slot: Slot) {
        let Some(party) = self.tcp.parties.get_mut(&id) else {
            return;
        };
        let index = usize::from(slot) - 1;
        if let Some(member) = party.seats.get_mut(index).and_then(Option::take) {
            self.tcp.hashes.remove(&member.hash);
        }
        self.send_party(id, TcpMessage::PlayerLeft(slot));
        self.after_leave(id);
        self.dissolve_if_empty(id);
    }

    /// A member left: the countdown goes on while `--min-players` remain, else it is
    /// cancelled; with `--auto-start` the rest may now be ready to start.
    fn after_leave(&mut self, id: RoomId) {
        let min = usize::from(self.config.party.min_players);
        let Some(party) = self.tcp.parties.get_mut(&id) else {
            return;
        };
        if party.countdown.is_some() && party.member_count() < min {
            self.cancel_countdown(id, TcpError::NotEnoughPlayers);
        } else {
            self.maybe_auto_start(id);
        }
    }

    /// The countdown cannot go on (too few members: `error` 0x06; the game server exited:
    /// 0xFF "no game instance available"): stop it, tell everyone (ERROR `error`, then PLAYER_READY(0) for every member)
    /// and release the instance.
    fn cancel_countdown(&mut self, id: RoomId, error: TcpError) {
        let Some(party) = self.tcp.parties.get_mut(&id) else {
            return;
        };
        let Some(countdown) = party.countdown.take() else {
            return;
        };
        if let Some(key) = countdown.timer {
            self.timers.cancel(key);
        }
        let mut slots = Vec::new();
        for (index, seat) in party.seats.iter_mut().enumerate() {
            if let Some(member) = seat.as_mut() {
                member.ready = false;
                slots.push(slot_of_index(index));
            }
        }
        self.stats.tcp.countdowns_cancelled += 1;
        self.send_party(id, TcpMessage::Error(error));
        for slot in slots {
            self.send_party(id, TcpMessage::PlayerReady { slot, ready: false });
        }
        self.release_instance(id);
    }

    /// Closes a party's instance socket while the party lives on (countdown cancelled).
    fn release_instance(&mut self, id: RoomId) {
        let Some(room) = self.rooms.get_mut(&id) else {
            return;
        };
        room.state = RoomState::Waiting;
        if room.port.take().is_some() {
            self.outputs.push_back(Output::CloseInstance { room: id });
        }
    }

    /// Party `id`'s game server exited before GAME_START (`--instance-exec`): the party
    /// stays, its countdown cancelled with ERROR 0xFF (no game instance). False when `id` is no party still in
    /// its lobby (the caller reaps the room).
    pub(super) fn party_instance_exited(&mut self, id: RoomId) -> bool {
        let Some(party) = self.tcp.parties.get_mut(&id) else {
            return false;
        };
        if party.started {
            return false;
        }
        party.opening = None;
        self.cancel_countdown(id, TcpError::NoInstance);
        // No countdown to cancel (already over): the party stays in its lobby, Waiting.
        if let Some(room) = self.rooms.get_mut(&id) {
            room.state = RoomState::Waiting;
            room.port = None;
        }
        true
    }

    /// A party with nobody in its lobby and no game is removed with its room.
    fn dissolve_if_empty(&mut self, id: RoomId) {
        let empty = self
            .tcp
            .parties
            .get(&id)
            .is_some_and(|party| !party.started && party.member_count() == 0);
        if !empty {
            return;
        }
        if let Some(party) = self.tcp.parties.remove(&id) {
            if let Some(key) = party.countdown.and_then(|c| c.timer) {
                self.timers.cancel(key);
            }
        }
        if let Some(room) = self.rooms.remove(&id) {
            if room.port.is_some() {
                self.outputs.push_back(Output::CloseInstance { room: id });
            }
        }
    }

    /// A CONNECT_REQ from a connection without CONNECT_ACK: a valid name gets a seat in the
    /// oldest Waiting party with a free seat (else a new party) unless the name is taken
    /// there; with no seat anywhere and `--max-rooms` rooms, ERROR 0x01 and the connection is
    /// closed.
    fn connect(&mut self, conn: ConnId, raw: [u8; NAME_LEN]) {
        let name = match validate_name(&raw) {
            Ok(name) => name_field(name),
            Err(_) => {
                self.send_tcp(conn, TcpMessage::Error(TcpError::InvalidName));
                return;
            }
        };
        let Some(placement) = self.placement() else {
            self.send_tcp(conn, TcpMessage::Error(TcpError::LobbyFull));
            self.close_conn(conn, CloseCause::LobbyFull);
            return;
        };
        if let Placement::Party(id) = placement {
            let taken = self
                .tcp
                .parties
                .get(&id)
                .is_some_and(|party| party.members().any(|(_, m)| m.name == name));
            if taken {
                self.send_tcp(conn, TcpMessage::Error(TcpError::NameTaken));
                return;
            }
        }
        let Some(hash) = self.fresh_hash() else {
            self.send_tcp(conn, TcpMessage::Error(TcpError::NoPlayerId));
            return;
        };
        let Some(peer) = self.tcp.conns.get(&conn).map(|record| record.peer) else {
            return;
        };
        let id = match placement {
            Placement::Party(id) => id,
            Placement::NewParty => self.open_party(peer),
        };
        let Some(party) = self.tcp.parties.get_mut(&id) else {
            return;
        };
        let Some(index) = party.seats.iter().position(Option::is_none) else {
            return;
        };
        let slot = slot_of_index(index);
        let member = PartyMember {
            conn,
            hash,
            name,
            ready: false,
        };
        party.seats[index] = Some(member);
        let existing: Vec<(Slot, PartyMember)> = party
            .members()
            .filter(|(s, _)| *s != slot)
            .map(|(s, m)| (s, *m))
            .collect();
        self.tcp.hashes.insert(hash);
        self.conn_connected(conn, id, slot);
        self.send_tcp(conn, TcpMessage::ConnectAck { hash, slot });
        for (slot, m) in existing {
            let msg = join_message(slot, &m);
            self.send_tcp(conn, msg);
        }
        self.send_party(id, join_message(slot, &member));
    }

    /// A non-zero hash no live player has, or `None` if the source keeps failing.
    fn fresh_hash(&mut self) -> Option<u64> {
        (0..HASH_ATTEMPTS)
            .map(|_| (self.tcp.hash_source)())
            .find(|hash| *hash != 0 && !self.tcp.hashes.contains(hash))
    }

    fn ready(&mut self, conn: ConnId, id: RoomId, slot: Slot, ready: bool) {
        let Some(party) = self.tcp.parties.get_mut(&id) else {
            return;
        };
        if party.busy() {
            self.send_tcp(conn, TcpMessage::Error(TcpError::GameStarted));
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
        self.send_party(id, TcpMessage::PlayerReady { slot, ready });
        self.maybe_auto_start(id);
    }

    /// Why the party cannot start now, if it cannot.
    fn start_refusal(&self, id: RoomId) -> Option<TcpError> {
        let party = self.tcp.parties.get(&id)?;
        if party.busy() || party.started {
            Some(TcpError::GameStarted)
        } else if party.member_count() < usize::from(self.config.party.min_players) {
            Some(TcpError::NotEnoughPlayers)
        } else if !party.all_ready() {
            Some(TcpError::NotAllReady)
        } else {
            None
        }
    }

    fn start_request(&mut self, now: Instant, conn: ConnId, id: RoomId) {
        match self.start_refusal(id) {
            Some(error) => self.send_tcp(conn, TcpMessage::Error(error)),
            None => self.open_party_instance(id, Opener::Request(conn, now)),
        }
    }

    fn maybe_auto_start(&mut self, id: RoomId) {
        if self.config.party.auto_start && self.start_refusal(id).is_none() {
            self.open_party_instance(id, Opener::Auto);
        }
    }

    /// Asks the driver for the party's instance socket; the countdown starts when it is bound.
    fn open_party_instance(&mut self, id: RoomId, opener: Opener) {
        let Some(party) = self.tcp.parties.get_mut(&id) else {
            return;
        };
        party.opening = Some(opener);
        let players = u8::try_from(party.member_count()).unwrap_or(u8::MAX);
        self.open_instance(id, players);
    }

    /// The driver's answer to a party's [`Output::OpenInstance`].
    pub(super) fn party_instance_opened(&mut self, now: Instant, id: RoomId, port: Option<u16>) {
        let Some(party) = self.tcp.parties.get_mut(&id) else {
            // The party dissolved while its socket was being bound.
            if port.is_some() {
                self.outputs.push_back(Output::CloseInstance { room: id });
            }
            return;
        };
        let Some(opener) = party.opening.take() else {
            return;
        };
        let Some(port) = port else {
            let error = TcpMessage::Error(TcpError::NoInstance);
            match opener {
                Opener::Request(conn, _) => self.send_tcp(conn, error),
                Opener::Auto => self.send_party(id, error),
            }
            return;
        };
        if let Some(room) = self.rooms.get_mut(&id) {
            room.port = Some(port);
        }
        // The party may have changed while the socket was being bound.
        if let Some(error) = self.start_refusal(id) {
            if let Opener::Request(conn, _) = opener {
                self.send_tcp(conn, TcpMessage::Error(error));
            }
            self.release_instance(id);
            return;
        }
        // The countdown's clock starts when START_REQ was received, not when the socket was
        // bound: parties whose START_REQs came in one event batch share one schedule, so
        // their COUNTDOWNs fall due together and go out in one run of writes.
        let started = match opener {
            Opener::Request(_, at) => at.min(now),
            Opener::Auto => now,
        };
        self.start_countdown(now, started, id);
    }

    fn start_countdown(&mut self, now: Instant, started: Instant, id: RoomId) {
        if let Some(room) = self.rooms.get_mut(&id) {
            room.state = RoomState::Countdown;
        }
        let Some(party) = self.tcp.parties.get_mut(&id) else {
            return;
        };
        party.countdown = Some(PartyCountdown {
            started,
            next: 0,
            timer: None,
        });
        self.stats.tcp.countdowns += 1;
        self.countdown_tick(now, id);
    }

    /// Sends the countdown value due now and arms the next one, or starts the game.
    fn countdown_tick(&mut self, now: Instant, id: RoomId) {
        let total = self.config.party.countdown;
        let tick = self.config.party.countdown_tick;
        let Some(party) = self.tcp.parties.get_mut(&id) else {
            return;
        };
        let Some(countdown) = party.countdown.as_mut() else {
            return;
        };
        let elapsed = tick.saturating_mul(countdown.next).min(total);
        let remaining = total - elapsed;
        countdown.next += 1;
        countdown.timer = None;
        let started = countdown.started;
        let next_at = started + tick.saturating_mul(countdown.next).min(total);
        self.send_party(id, TcpMessage::Countdown(remaining));
        if remaining.is_zero() {
            self.game_start(now, id);
            return;
        }
        let key = self.timers.insert(next_at, TimerEvent::PartyTick(id));
        if let Some(countdown) = self
            .tcp
            .parties
            .get_mut(&id)
            .and_then(|p| p.countdown.as_mut())
        {
            countdown.timer = Some(key);
        }
    }

    /// GAME_START: the room plays, its instance expects exactly these players, their TCP
    /// connections are closed after the linger time unless the clients close first.
    fn game_start(&mut self, now: Instant, id: RoomId) {
        let expires = now + self.config.seat_timeout;
        let linger = now + self.config.party.linger;
        let Some(party) = self.tcp.parties.get_mut(&id) else {
            return;
        };
        party.countdown = None;
        party.started = true;
        let roster: Vec<(Slot, PartyMember)> = party.members().map(|(s, m)| (s, *m)).collect();
        let Some(room) = self.rooms.get_mut(&id) else {
            return;
        };
        room.state = RoomState::Playing;
        for (slot, member) in &roster {
            room.expect(*slot, member.hash, expires);
        }
        for (_, member) in &roster {
            self.conn_transferred(member.conn, id);
            self.send_tcp(member.conn, TcpMessage::GameStart(id));
        }
        self.stats.tcp.games_started += 1;
        let key = self.timers.insert(linger, TimerEvent::PartyLinger(id));
        if let Some(party) = self.tcp.parties.get_mut(&id) {
            party.linger = Some(key);
        }
        self.arm_housekeeping(id);
    }

    /// Closes the connections of a started party that the clients kept open (no PLAYER_LEFT).
    pub(super) fn party_linger(&mut self, id: RoomId) {
        let Some(party) = self.tcp.parties.get_mut(&id) else {
            return;
        };
        party.linger = None;
        for conn in self.transferred_conns(id) {
            self.close_conn(conn, CloseCause::Linger);
        }
    }

    /// The connections of started party `id` that are still open. A member's `ConnId` stays
    /// in the party after its client closed, and the driver reuses the key for newcomers:
    /// only a record still `Transferred` in this party is this member's connection.
    fn transferred_conns(&self, id: RoomId) -> Vec<ConnId> {
        let Some(party) = self.tcp.parties.get(&id) else {
            return Vec::new();
        };
        party
            .conns()
            .into_iter()
            .filter(|conn| self.is_transferred_from(*conn, id))
            .collect()
    }

    pub(super) fn party_tick(&mut self, now: Instant, id: RoomId) {
        self.countdown_tick(now, id);
    }

    /// A HELLO on a party's instance: admitted only with the token of a player of its
    /// GAME_START, into that player's slot.
    pub(super) fn party_hello(
        &mut self,
        now: Instant,
        id: RoomId,
        from: SocketAddr,
        token: Option<u64>,
    ) -> Option<Slot> {
        let room = self.rooms.get_mut(&id)?;
        let expired = room.expire_reservations(now);
        self.stats.reservations_expired += expired as u64;
        let slot = token.and_then(|token| room.admit_token(token, from, now));
        if slot.is_none() {
            self.stats.tcp.unknown_tokens += 1;
        }
        slot
    }

    /// A party's room is being reaped: its players' hashes are free again and connections
    /// still open are closed.
    pub(super) fn party_reaped(&mut self, id: RoomId) {
        let open = self.transferred_conns(id);
        let Some(party) = self.tcp.parties.remove(&id) else {
            return;
        };
        if let Some(key) = party.linger {
            self.timers.cancel(key);
        }
        for (_, member) in party.members() {
            self.tcp.hashes.remove(&member.hash);
        }
        for conn in open {
            self.close_conn(conn, CloseCause::Linger);
        }
    }

    /// The server is stopping: every connection gets ERROR 0xFF "server shutting down" and
    /// is closed once that is flushed.
    /// Nobody gets PLAYER_LEFT: everyone is told the same thing at once.
    pub fn handle_shutdown(&mut self) {
        let mut conns: Vec<ConnId> = self.tcp.conns.keys().copied().collect();
        conns.sort();
        for conn in conns {
            self.send_tcp(conn, TcpMessage::Error(TcpError::ShuttingDown));
            self.drop_record(conn, CloseCause::Shutdown);
        }
    }
}

#[cfg(test)]
mod tests;

fn join_message(slot: Slot, member: &PartyMember) -> TcpMessage {
    TcpMessage::PlayerJoin {
        slot,
        hash: member.hash,
        name: member.name,
        ready: member.ready,
    }
}
