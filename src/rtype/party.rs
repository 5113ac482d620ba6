//! One party's lobby state beside its [`Room`](super::room::Room): its seats (connected
//! players with their hash, name and ready flag), the instance it is waiting for, its
//! countdown, and whether GAME_START was sent (RFC R-Type-TCP-001 sections 3 and 5,
//! `docs/protocols/tcp-lobby.md`, "Server behaviour"). A party speaks one dialect: the RFC's,
//! or the upstream client's, whose parties are named rooms a connection joins before it says
//! who it is (`docs/protocols/tcp-lobby-upstream.md`). Plain data with the questions asked of
//! it; what happens to a party is `parties.rs`'s.

use std::time::Instant;

use crate::time::wheel::TimerKey;
use crate::wire::tcp_lobby::NAME_LEN;
use crate::wire::tcp_upstream::Dialect;

use super::room::Slot;
use super::tcp_messages::{ConnId, TcpMessage};

/// A player of a party: connected (CONNECT_ACK sent), or, in the upstream dialect, a
/// connection that joined the room and holds the seat before its CONNECT_REQ.
#[derive(Clone, Copy, Debug)]
pub struct PartyMember {
    /// Its connection.
    pub conn: ConnId,
    /// Its hash (CONNECT_ACK, HELLO token); 0 before CONNECT_ACK.
    pub hash: u64,
    /// Its name field, normalised (NUL-padded after the name); all NUL before CONNECT_ACK.
    pub name: [u8; NAME_LEN],
    /// Its ready flag (never set before CONNECT_ACK).
    pub ready: bool,
    /// CONNECT_ACK was sent: the party knows its name and hash.
    pub connected: bool,
}

impl PartyMember {
    /// An upstream-dialect connection that joined the room: it holds the seat, hears the
    /// party, and is not ready.
    pub(super) fn joined(conn: ConnId) -> PartyMember {
        PartyMember {
            conn,
            hash: 0,
            name: [0; NAME_LEN],
            ready: false,
            connected: false,
        }
    }
}

/// Who asked for the instance a party is waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Opener {
    /// START_REQ from this connection, received at this instant.
    Request(ConnId, Instant),
    /// `--auto-start`.
    Auto,
}

/// A running countdown: value `k` is sent at `started + k * tick`, computed from the start so
/// the ticks never drift.
#[derive(Clone, Copy, Debug)]
pub(super) struct PartyCountdown {
    /// When value 0 (the first) was due.
    pub(super) started: Instant,
    /// The index of the next value to send.
    pub(super) next: u32,
    /// The wheel entry of the next value.
    pub(super) timer: Option<TimerKey>,
    /// Upstream dialect: the whole second last announced (0 before the first).
    pub(super) last_second: u64,
}

/// A party's lobby state beside its [`Room`].
#[derive(Debug)]
pub struct Party {
    /// Connected players, index `slot - 1`.
    pub(super) seats: Vec<Option<PartyMember>>,
    /// Waiting for the driver to bind the instance socket.
    pub(super) opening: Option<Opener>,
    /// The countdown, once the instance is bound.
    pub(super) countdown: Option<PartyCountdown>,
    /// GAME_START was sent; the seats are the game's roster from then on.
    pub(super) started: bool,
    /// The wheel entry that closes connections kept open after GAME_START.
    pub(super) linger: Option<TimerKey>,
    /// The dialect of every member.
    pub(super) dialect: Dialect,
    /// Upstream dialect: the room's name field (all NUL for an RFC party).
    pub(super) name: [u8; NAME_LEN],
    /// Upstream dialect: the connection that created the room and has not joined it, gone
    /// or created another yet; while it is set the empty room is kept for it.
    pub(super) creator: Option<ConnId>,
    /// Upstream dialect: the seed GAME_START announced.
    pub(super) seed: u32,
}

impl Party {
    pub(super) fn new(max_players: u8) -> Party {
        Party {
            seats: vec![None; usize::from(max_players)],
            opening: None,
            countdown: None,
            started: false,
            linger: None,
            dialect: Dialect::Rfc,
            name: [0; NAME_LEN],
            creator: None,
            seed: 0,
        }
    }

    /// An upstream-dialect room named `name`, kept for `creator` until it joins.
    pub(super) fn room(max_players: u8, name: [u8; NAME_LEN], creator: ConnId) -> Party {
        Party {
            dialect: Dialect::Upstream,
            name,
            creator: Some(creator),
            ..Party::new(max_players)
        }
    }

    /// The dialect its members speak.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Players in slot order (in the upstream dialect, joined ones too).
    pub fn members(&self) -> impl Iterator<Item = (Slot, &PartyMember)> + '_ {
        self.seats
            .iter()
            .enumerate()
            .filter_map(|(i, seat)| seat.as_ref().map(|m| (slot_of_index(i), m)))
    }

    /// Number of players (in the upstream dialect, joined ones too: each holds a seat).
    pub fn member_count(&self) -> usize {
        self.members().count()
    }

    /// Whether a newcomer may be placed here: Waiting (no countdown, not opening, not
    /// started) with a free seat.
    pub(super) fn takes_newcomers(&self) -> bool {
        !self.busy() && !self.started && self.member_count() < self.seats.len()
    }

    /// Counting down or binding its instance.
    pub(super) fn busy(&self) -> bool {
        self.countdown.is_some() || self.opening.is_some()
    }

    pub(super) fn member_mut(&mut self, slot: Slot) -> Option<&mut PartyMember> {
        self.seats
            .get_mut(usize::from(slot).checked_sub(1)?)?
            .as_mut()
    }

    pub(super) fn all_ready(&self) -> bool {
        self.members().all(|(_, m)| m.ready)
    }

    pub(super) fn conns(&self) -> Vec<ConnId> {
        self.members().map(|(_, m)| m.conn).collect()
    }
}

/// The slot of seat `index`.
pub(super) fn slot_of_index(index: usize) -> Slot {
    Slot::try_from(index + 1).unwrap_or(Slot::MAX)
}

/// PLAYER_JOIN for `member` at `slot`.
pub(super) fn join_message(slot: Slot, member: &PartyMember) -> TcpMessage {
    TcpMessage::PlayerJoin {
        slot,
        hash: member.hash,
        name: member.name,
        ready: member.ready,
    }
}
