//! The Warzone 2100 game table, shared by every lobby protocol (legacy and v4).
//!
//! Implements docs/protocols/wz-lobby.md "Behaviour" (game ids, limits, listing). It holds
//! each game's sanitized, rewritten 814-byte GAMESTRUCT exactly as it is listed, the ids
//! reserved by `gaId` but not yet registered, and a per-address game count.
//!
//! Contract: bounded by construction — at most `max_games` games and
//! `max_games_per_ip` per address ([`GameTable::check_room`] says why not before an add);
//! the reserved-id set holds at most one id per open connection (the caller's duty). Game
//! ids are `1..=0x7FFF_FFFF` (positive as an i32 too), never `0xBAD01` (2.3-era sentinel)
//! and never one in use or reserved. It does no I/O, reads no clock and never panics.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::time::Instant;

use crate::wire::wz::{GameStruct, GAMESTRUCT_LEN};

use super::types::ConnId;

/// Largest game id handed out: ids stay positive for clients that store them signed.
const MAX_GAME_ID: u32 = 0x7FFF_FFFF;

/// An id 2.3-era code uses as a marker (MS-py skips it); never handed out.
const RESERVED_GAME_ID: u32 = 0xBAD01;

/// Who owns a game: its lifetime is tied to the owner's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Owner {
    /// A legacy-protocol host connection.
    Legacy(ConnId),
    /// A v4-protocol host connection (`addGame`).
    V4(ConnId),
}

/// One game in the table.
#[derive(Debug, Clone)]
pub struct Game {
    /// The lobby-assigned id (also stored in the GAMESTRUCT).
    pub id: u32,
    /// The connection the game lives and dies with.
    pub owner: Owner,
    /// The host's address as the lobby saw it (also in `desc.host`).
    pub peer: IpAddr,
    /// The game port browsers join (2100, or the v4 `hostPort`).
    pub game_port: u16,
    /// Shown in `list` replies only once true (the reachability probe passed).
    pub listed: bool,
    /// When the host registered it.
    pub registered_at: Instant,
    /// When its GAMESTRUCT last changed.
    pub updated_at: Instant,
    /// The GAMESTRUCT as listed: sanitized, `desc.host`, `dwSize` and `gameId` rewritten.
    pub gamestruct: Box<[u8; GAMESTRUCT_LEN]>,
}

/// A read-only view of a game, for operators.
#[derive(Debug, Clone, Copy)]
pub struct GameView<'a> {
    /// The lobby-assigned id.
    pub game_id: u32,
    /// The owning connection.
    pub owner: Owner,
    /// The host's address.
    pub peer: IpAddr,
    /// The game port browsers join.
    pub game_port: u16,
    /// False while the reachability probe runs.
    pub listed: bool,
    /// When the host registered it.
    pub registered_at: Instant,
    /// When its GAMESTRUCT last changed.
    pub updated_at: Instant,
    /// The stored GAMESTRUCT (name, players, versions through the view's accessors).
    pub gamestruct: GameStruct<&'a [u8]>,
}

impl<'a> GameView<'a> {
    fn of(game: &'a Game) -> GameView<'a> {
        GameView {
            game_id: game.id,
            owner: game.owner,
            peer: game.peer,
            game_port: game.game_port,
            listed: game.listed,
            registered_at: game.registered_at,
            updated_at: game.updated_at,
            gamestruct: GameStruct::new_unchecked(&game.gamestruct[..]),
        }
    }
}

/// Why a game cannot be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddError {
    /// The table holds `max_games` games.
    Full,
    /// The address holds `max_games_per_ip` games.
    TooManyFromAddress,
    /// Another game already has this id.
    IdInUse,
}

/// The games, the ids reserved for them, and per-address counts.
#[derive(Debug)]
pub struct GameTable {
    /// Keyed by id, so listing order is registration order until ids wrap.
    games: BTreeMap<u32, Game>,
    reserved: HashSet<u32>,
    per_ip: HashMap<IpAddr, usize>,
    next_id: u32,
    max_games: usize,
    max_games_per_ip: usize,
    /// Bumped by every add, removal and mutable borrow of a game: what the list shows may
    /// have changed.
    generation: u64,
}

impl GameTable {
    /// An empty table with these limits.
    pub fn new(max_games: usize, max_games_per_ip: usize) -> GameTable {
        GameTable {
            games: BTreeMap::new(),
            reserved: HashSet::new(),
            per_ip: HashMap::new(),
            next_id: 1,
            max_games,
            max_games_per_ip,
            generation: 0,
        }
    }

    /// Changes whenever a game was added, removed or borrowed mutably (so whenever what
    /// [`GameTable::listed`] yields may have changed).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Reserve and return a fresh id: not 0, not `0xBAD01`, not used or reserved.
    pub fn allocate_id(&mut self) -> u32 {
        loop {
            let id = self.next_id;
            self.next_id = if id >= MAX_GAME_ID { 1 } else { id + 1 };
            // In-use ids are bounded by connections and games, far below 2^31, so this ends.
            if id != 0
                && id != RESERVED_GAME_ID
                && !self.games.contains_key(&id)
                && self.reserved.insert(id)
            {
                return id;
            }
        }
    }

    /// Give back a reserved id that will not be registered.
    pub fn release_id(&mut self, id: u32) {
        self.reserved.remove(&id);
    }

    /// Number of reserved ids.
    pub fn reserved_len(&self) -> usize {
        self.reserved.len()
    }

    /// Whether a game from `ip` could be added now.
    pub fn check_room(&self, ip: IpAddr) -> Result<(), AddError> {
        if self.games.len() >= self.max_games {
            return Err(AddError::Full);
        }
        if self.per_ip.get(&ip).copied().unwrap_or(0) >= self.max_games_per_ip {
            return Err(AddError::TooManyFromAddress);
        }
        Ok(())
    }

    /// Add a game (its id leaves the reserved set).
    pub fn add(&mut self, game: Game) -> Result<(), AddError> {
        self.check_room(game.peer)?;
        if self.games.contains_key(&game.id) {
            return Err(AddError::IdInUse);
        }
        self.reserved.remove(&game.id);
        *self.per_ip.entry(game.peer).or_insert(0) += 1;
        self.games.insert(game.id, game);
        Ok(())
    }

    /// The game with this id.
    pub fn get(&self, id: u32) -> Option<&Game> {
        self.games.get(&id)
    }

    /// The game with this id, for updates.
    pub fn get_mut(&mut self, id: u32) -> Option<&mut Game> {
        self.generation += 1;
        self.games.get_mut(&id)
    }

    /// Remove a game and return it.
    pub fn remove(&mut self, id: u32) -> Option<Game> {
        let game = self.games.remove(&id)?;
        self.generation += 1;
        if let Some(count) = self.per_ip.get_mut(&game.peer) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_ip.remove(&game.peer);
            }
        }
        Some(game)
    }

    /// The listed games' GAMESTRUCTs, in id order (for [`crate::wire::wz::ListReplyWriter`]).
    pub fn listed(&self) -> impl Iterator<Item = &[u8; GAMESTRUCT_LEN]> + Clone {
        self.games
            .values()
            .filter(|game| game.listed)
            .map(|game| &*game.gamestruct)
    }

    /// Every game, listed or being probed.
    pub fn iter(&self) -> impl Iterator<Item = GameView<'_>> {
        self.games.values().map(GameView::of)
    }

    /// Number of games (listed or being probed).
    pub fn len(&self) -> usize {
        self.games.len()
    }

    /// True if no game is held.
    pub fn is_empty(&self) -> bool {
        self.games.is_empty()
    }

    /// Number of games from `ip`.
    pub fn count_for(&self, ip: IpAddr) -> usize {
        self.per_ip.get(&ip).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn game(id: u32, ip: IpAddr, now: Instant) -> Game {
        Game {
            id,
            owner: Owner::Legacy(ConnId(id as usize)),
            peer: ip,
            game_port: 2100,
            listed: true,
            registered_at: now,
            updated_at: now,
            gamestruct: Box::new([0; GAMESTRUCT_LEN]),
        }
    }

    #[test]
    fn ids_skip_zero_sentinel_and_used() {
        let now = Instant::now();
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let mut table = GameTable::new(10, 10);
        assert_eq!(table.allocate_id(), 1);
        table.next_id = RESERVED_GAME_ID - 1;
        assert_eq!(table.allocate_id(), RESERVED_GAME_ID - 1);
        assert_eq!(table.allocate_id(), RESERVED_GAME_ID + 1);
        table.next_id = MAX_GAME_ID;
        assert_eq!(table.allocate_id(), MAX_GAME_ID);
        // Wrapped: 1 is still reserved, 2 is a game.
        table.add(game(2, ip, now)).unwrap();
        assert_eq!(table.allocate_id(), 3);
        table.release_id(1);
        table.next_id = 1;
        assert_eq!(table.allocate_id(), 1);
    }

    #[test]
    fn limits_and_per_ip_counts() {
        let now = Instant::now();
        let a = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        let b = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
        let mut table = GameTable::new(3, 2);
        table.add(game(1, a, now)).unwrap();
        assert_eq!(table.add(game(1, b, now)), Err(AddError::IdInUse));
        table.add(game(2, a, now)).unwrap();
        assert_eq!(
            table.add(game(3, a, now)),
            Err(AddError::TooManyFromAddress)
        );
        table.add(game(3, b, now)).unwrap();
        assert_eq!(table.add(game(4, b, now)), Err(AddError::Full));
        assert_eq!(table.count_for(a), 2);
        assert!(table.remove(1).is_some());
        assert!(table.remove(1).is_none());
        assert_eq!(table.count_for(a), 1);
        table.get_mut(2).unwrap().listed = false;
        assert_eq!(table.listed().count(), 1);
        assert_eq!(table.iter().count(), 2);
    }
}
