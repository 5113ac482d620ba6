//! The core's rooms: [`RoomTable`], the map keyed by [`RoomId`] plus the order ROOM_LIST
//! offers rooms in, counting every change; and the multiplicative hash it uses instead of
//! SipHash.
//!
//! Why a generation: the driver keeps the last encoded ROOM_LIST records and re-sends them
//! with a new header while the generation is unchanged. Every `&mut` path to a room or to
//! the listed order is a method here that bumps it, so the compiler routes every change
//! through this file and a stale list cannot be sent.
//!
//! Why: every LIST_ROOMS walks the listed rooms and looks each up by id, twice (joinable
//! rooms first, then the others), and every relayed DATA looks its room up once. Profiled
//! with callgrind (`docs/PERFORMANCE.md`), SipHash was about 60 % of the instructions of a
//! LIST_ROOMS with 64 rooms. SipHash's keyed randomness protects maps whose keys a peer
//! chooses; room ids are not: the core assigns them (1, 2, 3, ...), a peer can only look one
//! up, so it cannot pile keys into one bucket. Multiplying by a 64-bit odd constant spreads
//! consecutive ids over both the low bits (bucket index) and the top bits (hashbrown's tag).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::room::{Room, RoomId};

/// A map keyed by room id.
pub type RoomMap<V> = HashMap<RoomId, V, BuildHasherDefault<RoomIdHasher>>;

/// Every room, and the listed ones in creation order, with a change counter.
#[derive(Debug, Default)]
pub struct RoomTable {
    rooms: RoomMap<Room>,
    /// Rooms offered in ROOM_LIST, in creation order.
    listed: Vec<RoomId>,
    generation: u64,
}

impl RoomTable {
    /// Bumped by every `&mut` method (whether or not a listed room changed): equal values
    /// mean nothing in the table changed in between.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Rooms alive.
    pub fn len(&self) -> usize {
        self.rooms.len()
    }

    /// Whether no room is alive.
    pub fn is_empty(&self) -> bool {
        self.rooms.is_empty()
    }

    /// One room.
    pub fn get(&self, id: &RoomId) -> Option<&Room> {
        self.rooms.get(id)
    }

    /// Whether room `id` is alive.
    pub fn contains_key(&self, id: &RoomId) -> bool {
        self.rooms.contains_key(id)
    }

    /// Every room, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &Room> + '_ {
        self.rooms.values()
    }

    /// The listed rooms' ids, in creation order.
    pub fn listed(&self) -> &[RoomId] {
        &self.listed
    }

    /// One room, to change it.
    pub fn get_mut(&mut self, id: &RoomId) -> Option<&mut Room> {
        self.bump();
        self.rooms.get_mut(id)
    }

    /// Adds a room (not listed yet).
    pub fn insert(&mut self, id: RoomId, room: Room) {
        self.bump();
        self.rooms.insert(id, room);
    }

    /// Removes a room (it must be unlisted separately).
    pub fn remove(&mut self, id: &RoomId) -> Option<Room> {
        self.bump();
        self.rooms.remove(id)
    }

    /// Offers room `id` in ROOM_LIST, after every room listed before it.
    pub fn list(&mut self, id: RoomId) {
        self.bump();
        self.listed.push(id);
    }

    /// Stops offering room `id`.
    pub fn unlist(&mut self, id: RoomId) {
        self.bump();
        self.listed.retain(|listed| *listed != id);
    }

    fn bump(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }
}

/// 2^64 divided by the golden ratio, rounded to odd (Fibonacci hashing).
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// Hashes one `u32` room id (what `#[derive(Hash)]` on [`RoomId`] writes).
#[derive(Clone, Copy, Debug, Default)]
pub struct RoomIdHasher(u64);

impl Hasher for RoomIdHasher {
    fn write_u32(&mut self, id: u32) {
        self.0 = (self.0 ^ u64::from(id)).wrapping_mul(MULTIPLIER);
    }

    /// Not used by `RoomId`; folds any other input in byte by byte so the hasher stays
    /// correct if the key type ever changes.
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(MULTIPLIER);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn hash(id: u32) -> u64 {
        BuildHasherDefault::<RoomIdHasher>::default().hash_one(RoomId(id))
    }

    #[test]
    fn consecutive_ids_spread_over_low_and_top_bits() {
        let hashes: Vec<u64> = (1..=128).map(hash).collect();
        let low: std::collections::HashSet<u64> = hashes.iter().map(|h| h & 127).collect();
        let top: std::collections::HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert_eq!(low.len(), 128, "128 ids fill 128 buckets");
        assert!(top.len() > 64, "hashbrown tags stay varied: {}", top.len());
    }

    #[test]
    fn works_as_a_map() {
        let mut map: RoomMap<u32> = RoomMap::default();
        for id in 1..=1000 {
            map.insert(RoomId(id), id * 2);
        }
        assert!((1..=1000).all(|id| map.get(&RoomId(id)) == Some(&(id * 2))));
        assert_eq!(map.get(&RoomId(0)), None);
    }
}
