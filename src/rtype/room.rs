//! One room: its state, its seats (members and reservations) and its owner.
//!
//! A room is what the UDP room lobby lists (ROOM_LIST, `docs/protocols/udp-lobby.md`) and what a
//! game instance serves (`docs/protocols/instance.md`). This file only keeps the room's own
//! bookkeeping consistent; the decisions (who may join, when timers fire, what is sent) live in
//! [`super::RtypeCore`]. Nothing here reads a clock or touches a socket.
//!
//! Seat invariant: `members + live reservations <= max_players`, kept by [`Room::admit`] and
//! [`Room::reserve`], so a room never admits more players than it has seats, whatever the
//! interleaving of lobby joins and instance hellos.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use crate::time::wheel::TimerKey;

/// A room's identifier: starts at 1, never reused while the process lives (0 is never valid).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RoomId(pub u32);

impl fmt::Display for RoomId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "room {}", self.0)
    }
}

/// A player's seat number in a room, 1-based (1..=max_players), as on the wire.
pub type Slot = u8;

/// The room states of the UDP lobby protocol (section 5, `RoomState`), with their wire codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RoomState {
    /// Created, waiting for players.
    Waiting = 0,
    /// The owner started the countdown; joins are still accepted.
    Countdown = 1,
    /// The game runs; joins are refused.
    Playing = 2,
    /// The last member left; the room is reaped after a grace period.
    Finished = 3,
}

impl RoomState {
    /// The state's wire code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Waiting and Countdown rooms accept new players (section 10, JOIN_FAILED reasons).
    pub fn accepts_joins(self) -> bool {
        matches!(self, RoomState::Waiting | RoomState::Countdown)
    }
}

/// Which lobby a room belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RoomKind {
    /// A room of the UDP room lobby: listed in ROOM_LIST, joined by JOIN_ROOM and HELLO.
    Udp,
    /// A TCP lobby party: never listed; its instance admits only the players of its
    /// GAME_START, by their hash as HELLO token.
    Party,
}

impl RoomKind {
    /// The name operators see in the room view.
    pub fn as_str(self) -> &'static str {
        match self {
            RoomKind::Udp => "udp",
            RoomKind::Party => "party",
        }
    }
}

/// A seat held for a TCP lobby player after GAME_START, until its instance HELLO carrying
/// `token` arrives or the seat expires.
#[derive(Clone, Copy, Debug)]
pub struct ExpectedPlayer {
    /// The slot the player had in the party; the instance keeps it.
    pub slot: Slot,
    /// The player hash of CONNECT_ACK, the HELLO token.
    pub token: u64,
    /// When the seat is released if no HELLO with `token` has arrived.
    pub expires: Instant,
}

/// A member: an admitted player, known by the address its instance datagrams come from.
#[derive(Clone, Copy, Debug)]
pub struct Member {
    /// Where this player's datagrams come from and where its traffic is sent.
    pub addr: SocketAddr,
    /// The last time a valid datagram arrived from it (idle timeout).
    pub last_seen: Instant,
}

/// A seat held for an IP address that was told JOIN_SUCCESS or ROOM_CREATED, until its HELLO
/// arrives or the reservation expires.
#[derive(Clone, Copy, Debug)]
pub struct Reservation {
    /// The address of the lobby request; the instance HELLO must come from the same IP.
    pub ip: IpAddr,
    /// When the seat is released if nobody from `ip` has said HELLO.
    pub expires: Instant,
}

/// Why a player could not be admitted or a seat could not be reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeatRefusal {
    /// Every seat is taken by members or live reservations.
    Full,
    /// The room is not in Waiting or Countdown.
    NotJoinable,
}

/// The timers a room may have armed in the lobby's wheel (at most one of each kind).
#[derive(Clone, Copy, Debug, Default)]
pub struct RoomTimers {
    /// Idle members and expired reservations, armed at the earliest such deadline.
    pub housekeeping: Option<(TimerKey, Instant)>,
    /// The next countdown tick.
    pub countdown: Option<TimerKey>,
    /// Removal of a Finished room.
    pub reap: Option<TimerKey>,
}

/// A running countdown: ticks are computed from `started`, so they never drift.
#[derive(Clone, Copy, Debug)]
pub struct Countdown {
    /// When START was accepted.
    pub started: Instant,
    /// Whole seconds still to announce before STARTED.
    pub remaining: u8,
}

/// One room of the lobby.
#[derive(Debug)]
pub struct Room {
    /// The room's identifier.
    pub id: RoomId,
    /// The game instance's UDP port; `None` while the driver is still binding it.
    pub port: Option<u16>,
    /// The lifecycle state.
    pub state: RoomState,
    /// The IP address that created the room (per-IP room limit).
    pub creator: IpAddr,
    /// UDP lobby room or TCP lobby party.
    pub kind: RoomKind,
    /// Seats, index `slot - 1`.
    members: Vec<Option<Member>>,
    member_count: usize,
    reservations: Vec<Reservation>,
    /// Party players announced in GAME_START that have not said HELLO yet.
    expected: Vec<ExpectedPlayer>,
    /// The member allowed to START: the first member, then the lowest slot.
    pub owner: Option<Slot>,
    /// The countdown, while in Countdown.
    pub countdown: Option<Countdown>,
    /// Armed timers, so they can be cancelled when the room changes state or goes away.
    pub timers: RoomTimers,
    /// Sequence number of the next server-initiated instance message.
    next_seq: u16,
    /// The name an upstream-dialect CREATE_ROOM gave it; empty otherwise.
    pub name: Box<[u8]>,
    /// The password a JOIN_ROOM must offer; empty for none.
    password: Box<[u8]>,
}

impl Room {
    /// A new room with `max_players` seats, waiting for its instance socket.
    pub fn new(id: RoomId, max_players: u8, creator: IpAddr) -> Room {
        Room {
            id,
            port: None,
            state: RoomState::Waiting,
            creator,
            kind: RoomKind::Udp,
            members: vec![None; usize::from(max_players)],
            member_count: 0,
            reservations: Vec::with_capacity(usize::from(max_players)),
            expected: Vec::new(),
            owner: None,
            countdown: None,
            timers: RoomTimers::default(),
            next_seq: 0,
            name: Box::default(),
            password: Box::default(),
        }
    }

    /// Names the room and sets the password a JOIN_ROOM must offer (empty: none).
    pub fn set_name_and_password(&mut self, name: &[u8], password: &[u8]) {
        self.name = name.into();
        self.password = password.into();
    }

    /// Whether a JOIN_ROOM must offer a password.
    pub fn password_protected(&self) -> bool {
        !self.password.is_empty()
    }

    /// Whether `offered` lets a JOIN_ROOM in: any offer for a room without a password, else
    /// exactly its password. The comparison takes the same time wherever the bytes differ.
    pub fn admits_password(&self, offered: &[u8]) -> bool {
        if self.password.is_empty() {
            return true;
        }
        offered.len() == self.password.len()
            && offered
                .iter()
                .zip(self.password.iter())
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0
    }

    /// Number of seats.
    pub fn max_players(&self) -> usize {
        self.members.len()
    }

    /// Number of admitted members.
    pub fn member_count(&self) -> usize {
        self.member_count
    }

    /// Number of reservations, including party players expected by token (call
    /// [`Room::expire_reservations`] first for live ones only).
    pub fn reservation_count(&self) -> usize {
        self.reservations.len() + self.expected.len()
    }

    /// Seats in use: members plus reservations, what ROOM_LIST reports as playerCount.
    pub fn occupancy(&self) -> usize {
        self.member_count + self.reservation_count()
    }

    /// Whether a lobby client may be sent here now: instance bound, state accepts joins, a
    /// free seat.
    pub fn is_joinable(&self) -> bool {
        self.port.is_some() && self.state.accepts_joins() && self.occupancy() < self.max_players()
    }

    /// Whether the room has neither members nor reservations.
    pub fn is_empty(&self) -> bool {
        self.occupancy() == 0
    }

    /// The member in `slot`, if any.
    pub fn member(&self, slot: Slot) -> Option<&Member> {
        let index = usize::from(slot).checked_sub(1)?;
        self.members.get(index)?.as_ref()
    }

    /// The slot of the member whose datagrams come from `addr`.
    pub fn slot_of(&self, addr: SocketAddr) -> Option<Slot> {
        self.members()
            .find(|(_, member)| member.addr == addr)
            .map(|(slot, _)| slot)
    }

    /// Members in slot order.
    pub fn members(&self) -> impl Iterator<Item = (Slot, &Member)> + '_ {
        self.members.iter().enumerate().filter_map(|(index, seat)| {
            seat.as_ref().map(|member| (slot_from_index(index), member))
        })
    }

    /// Marks activity from the member in `slot` (idle timeout).
    pub fn touch(&mut self, slot: Slot, now: Instant) {
        let index = usize::from(slot).wrapping_sub(1);
        if let Some(Some(member)) = self.members.get_mut(index) {
            member.last_seen = now;
        }
    }

    /// Drops reservations and expected party players that expired at or before `now`;
    /// returns how many.
    pub fn expire_reservations(&mut self, now: Instant) -> usize {
        let before = self.reservation_count();
        self.reservations.retain(|r| r.expires > now);
        self.expected.retain(|e| e.expires > now);
        before - self.reservation_count()
    }

    /// Holds `slot` for the party player whose HELLO will carry `token`, until `expires`.
    /// The slot must be free and not already expected (the party hands out distinct slots).
    pub fn expect(&mut self, slot: Slot, token: u64, expires: Instant) {
        let free = self.member(slot).is_none() && usize::from(slot) <= self.max_players();
        if free && slot > 0 && !self.expected.iter().any(|e| e.slot == slot) {
            self.expected.push(ExpectedPlayer {
                slot,
                token,
                expires,
            });
        }
    }

    /// Admits `addr` into the slot expected for `token`, whatever the room's state: the
    /// party's players were decided at GAME_START. `None` if no player is expected with it.
    pub fn admit_token(&mut self, token: u64, addr: SocketAddr, now: Instant) -> Option<Slot> {
        let position = self.expected.iter().position(|e| e.token == token)?;
        let slot = self.expected.swap_remove(position).slot;
        let index = usize::from(slot).checked_sub(1)?;
        let seat = self.members.get_mut(index)?;
        if seat.is_some() {
            return None;
        }
        *seat = Some(Member {
            addr,
            last_seen: now,
        });
        self.member_count += 1;
        if self.owner.is_none() {
            self.owner = Some(slot);
        }
        Some(slot)
    }

    /// Holds a seat for `ip` until `expires`. One reservation per IP: a repeated request
    /// refreshes it, so one address can never hold several seats of a room.
    pub fn reserve(&mut self, ip: IpAddr, expires: Instant) -> Result<(), SeatRefusal> {
        if !self.state.accepts_joins() || self.port.is_none() {
            return Err(SeatRefusal::NotJoinable);
        }
        if let Some(existing) = self.reservations.iter_mut().find(|r| r.ip == ip) {
            existing.expires = expires;
            return Ok(());
        }
        if self.occupancy() >= self.max_players() {
            return Err(SeatRefusal::Full);
        }
        self.reservations.push(Reservation { ip, expires });
        Ok(())
    }

    /// Admits `addr` into the lowest free slot, using its IP's reservation if it has one.
    /// The first member becomes the owner.
    pub fn admit(&mut self, addr: SocketAddr, now: Instant) -> Result<Slot, SeatRefusal> {
        if !self.state.accepts_joins() || self.port.is_none() {
            return Err(SeatRefusal::NotJoinable);
        }
        let reserved = self.reservations.iter().position(|r| r.ip == addr.ip());
        if reserved.is_none() && self.occupancy() >= self.max_players() {
            return Err(SeatRefusal::Full);
        }
        // A free seat exists: occupancy < max implies member_count < max, and a reservation
        // is itself a seat that no member holds.
        let index = self
            .members
            .iter()
            .position(Option::is_none)
            .ok_or(SeatRefusal::Full)?;
        if let Some(position) = reserved {
            self.reservations.swap_remove(position);
        }
        self.members[index] = Some(Member {
            addr,
            last_seen: now,
        });
        self.member_count += 1;
        let slot = slot_from_index(index);
        if self.owner.is_none() {
            self.owner = Some(slot);
        }
        Ok(slot)
    }

    /// Removes the member in `slot`; ownership passes to the lowest remaining slot.
    pub fn remove(&mut self, slot: Slot) -> Option<Member> {
        let index = usize::from(slot).checked_sub(1)?;
        let member = self.members.get_mut(index)?.take()?;
        self.member_count -= 1;
        if self.owner == Some(slot) {
            let next_owner = self.members().next().map(|(slot, _)| slot);
            self.owner = next_owner;
        }
        Some(member)
    }

    /// Drops every reservation (the game started: reserved players can no longer join).
    pub fn clear_reservations(&mut self) {
        self.reservations.clear();
    }

    /// The earliest time a member goes idle or a reservation expires.
    pub fn next_housekeeping(&self, idle_timeout: std::time::Duration) -> Option<Instant> {
        let idle = self
            .members()
            .map(|(_, m)| m.last_seen + idle_timeout)
            .min();
        let seats = self
            .reservations
            .iter()
            .map(|r| r.expires)
            .chain(self.expected.iter().map(|e| e.expires))
            .min();
        match (idle, seats) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Members whose last datagram is at least `idle_timeout` old at `now`, lowest slot first.
    pub fn first_idle_member(
        &self,
        now: Instant,
        idle_timeout: std::time::Duration,
    ) -> Option<Slot> {
        self.members()
            .find(|(_, m)| m.last_seen + idle_timeout <= now)
            .map(|(slot, _)| slot)
    }

    /// Takes the next sequence number for a server-initiated message.
    pub fn take_seq(&mut self) -> u16 {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        seq
    }
}

fn slot_from_index(index: usize) -> Slot {
    // Rooms have at most u8::MAX seats (max_players is a u8), so index + 1 fits.
    Slot::try_from(index + 1).unwrap_or(Slot::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::time::Duration;

    fn addr(last: u8, port: u16) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::new(127, 0, 0, last), port))
    }

    fn open_room(max: u8) -> Room {
        let mut room = Room::new(RoomId(1), max, addr(1, 1).ip());
        room.port = Some(4300);
        room
    }

    #[test]
    fn reservation_then_admit_keeps_occupancy() {
        let now = Instant::now();
        let mut room = open_room(2);
        room.reserve(addr(2, 0).ip(), now + Duration::from_secs(5))
            .unwrap();
        assert_eq!(room.occupancy(), 1);
        assert_eq!(room.admit(addr(2, 999), now), Ok(1));
        assert_eq!(room.occupancy(), 1);
        assert_eq!(room.reservation_count(), 0);
        assert_eq!(room.owner, Some(1));
    }

    #[test]
    fn reservations_block_strangers_but_not_holders() {
        let now = Instant::now();
        let mut room = open_room(2);
        room.reserve(addr(2, 0).ip(), now + Duration::from_secs(5))
            .unwrap();
        room.reserve(addr(3, 0).ip(), now + Duration::from_secs(5))
            .unwrap();
        assert_eq!(room.reserve(addr(4, 0).ip(), now), Err(SeatRefusal::Full));
        assert_eq!(room.admit(addr(4, 1), now), Err(SeatRefusal::Full));
        assert_eq!(room.admit(addr(3, 1), now), Ok(1));
        assert_eq!(room.admit(addr(2, 1), now), Ok(2));
        assert_eq!(room.member_count(), 2);
    }

    #[test]
    fn one_reservation_per_ip() {
        let now = Instant::now();
        let mut room = open_room(4);
        for _ in 0..10 {
            room.reserve(addr(2, 0).ip(), now + Duration::from_secs(5))
                .unwrap();
        }
        assert_eq!(room.reservation_count(), 1);
    }

    #[test]
    fn expiry_frees_seats() {
        let now = Instant::now();
        let mut room = open_room(1);
        room.reserve(addr(2, 0).ip(), now + Duration::from_secs(5))
            .unwrap();
        assert_eq!(room.expire_reservations(now + Duration::from_secs(4)), 0);
        assert_eq!(room.expire_reservations(now + Duration::from_secs(5)), 1);
        assert!(room.is_empty());
    }

    #[test]
    fn ownership_passes_to_lowest_slot() {
        let now = Instant::now();
        let mut room = open_room(4);
        for i in 0..3 {
            room.admit(addr(10 + i, 1), now).unwrap();
        }
        room.remove(2).unwrap();
        assert_eq!(room.owner, Some(1));
        room.remove(1).unwrap();
        assert_eq!(room.owner, Some(3));
        assert_eq!(room.admit(addr(20, 1), now), Ok(1));
        assert_eq!(room.owner, Some(3));
        room.remove(3).unwrap();
        assert_eq!(room.owner, Some(1));
    }

    #[test]
    fn no_joins_unless_waiting_or_countdown() {
        let now = Instant::now();
        let mut room = open_room(4);
        room.state = RoomState::Playing;
        assert_eq!(room.admit(addr(2, 1), now), Err(SeatRefusal::NotJoinable));
        assert_eq!(
            room.reserve(addr(2, 1).ip(), now),
            Err(SeatRefusal::NotJoinable)
        );
        let mut opening = Room::new(RoomId(2), 4, addr(1, 1).ip());
        assert_eq!(
            opening.admit(addr(2, 1), now),
            Err(SeatRefusal::NotJoinable)
        );
    }

    #[test]
    fn slot_lookup_bounds() {
        let room = open_room(2);
        assert!(room.member(0).is_none());
        assert!(room.member(3).is_none());
        assert!(room.member(255).is_none());
    }
}
