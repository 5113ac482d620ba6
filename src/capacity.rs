//! Giving back the spare capacity of a long-lived table after a crowd has gone.
//!
//! A `HashMap` or `VecDeque` keeps the capacity of its peak for ever: a table of per-address
//! limits that grew to 100,000 entries during a flood would hold its megabytes long after the
//! flood ended. [`shrink_spare`] is the one rule every such table follows, called from the
//! periodic tidy: once a table is less than a quarter full it is cut to twice its length, so a
//! table that shrinks and grows around the same size is never reallocated back and forth,
//! and a small table is never touched.
//!
//! Pure: no clock, no I/O; imports nothing of the crate, so every floor may use it.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hash};

/// A collection that can give back part of its capacity.
pub trait SpareCapacity {
    /// Elements held.
    fn len(&self) -> usize;
    /// True when it holds nothing.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Elements it can hold without allocating.
    fn capacity(&self) -> usize;
    /// Lowers the capacity to at least `max(len, min_capacity)` (as std's `shrink_to`).
    fn shrink_to(&mut self, min_capacity: usize);
}

/// Implements [`SpareCapacity`] for a std collection by its inherent methods of the same names.
macro_rules! spare_capacity {
    ($collection:ident<$($param:ident),*> $(where $($bound:tt)*)?) => {
        impl<$($param),*> SpareCapacity for $collection<$($param),*> $(where $($bound)*)? {
            fn len(&self) -> usize {
                $collection::len(self)
            }

            fn capacity(&self) -> usize {
                $collection::capacity(self)
            }

            fn shrink_to(&mut self, min_capacity: usize) {
                $collection::shrink_to(self, min_capacity);
            }
        }
    };
}

spare_capacity!(HashMap<K, V, S> where K: Eq + Hash, S: BuildHasher);
spare_capacity!(VecDeque<T>);

/// Shrinks `table` to twice its length (at least `floor`) once it is less than a quarter
/// full: its capacity is over twice that. A table whose capacity is within `2 * floor` is
/// never shrunk. Returns whether it shrank.
pub fn shrink_spare<T: SpareCapacity + ?Sized>(table: &mut T, floor: usize) -> bool {
    let keep = table.len().saturating_mul(2).max(floor);
    if table.capacity() > keep.saturating_mul(2) {
        table.shrink_to(keep);
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map that grew for 10,000 entries, holding `len` of them.
    fn grown_map(len: usize) -> HashMap<usize, usize> {
        let mut map = HashMap::with_capacity(10_000);
        map.extend((0..len).map(|n| (n, n)));
        map
    }

    #[test]
    fn a_table_under_a_quarter_full_shrinks_to_twice_its_length() {
        let peak = grown_map(0).capacity();
        let quarter = peak.div_ceil(4);
        let mut kept = grown_map(quarter);
        assert!(!shrink_spare(&mut kept, 16), "a quarter full: kept");
        assert_eq!(kept.capacity(), peak);
        let mut map = grown_map(quarter - 1);
        assert!(shrink_spare(&mut map, 16), "under a quarter full: shrunk");
        assert!(map.capacity() >= 2 * map.len() && map.capacity() < peak);
        assert_eq!(map.len(), quarter - 1, "nothing is lost");
        assert!(map.contains_key(&(quarter - 2)));
        // Right after shrinking it is at most half full: the next tidy leaves it alone.
        let capacity = map.capacity();
        assert!(!shrink_spare(&mut map, 16));
        assert_eq!(map.capacity(), capacity);
    }

    #[test]
    fn a_queue_follows_the_same_rule() {
        let mut queue: VecDeque<u64> = (0..4_096).collect();
        queue.truncate(100);
        assert!(shrink_spare(&mut queue, 16));
        assert!(
            (200..400).contains(&queue.capacity()),
            "{}",
            queue.capacity()
        );
        assert_eq!(queue.iter().copied().sum::<u64>(), (0..100).sum::<u64>());
    }

    #[test]
    fn a_small_or_empty_table_is_cut_to_its_floor_and_no_further() {
        let mut queue: VecDeque<u8> = VecDeque::with_capacity(100);
        assert!(!shrink_spare(&mut queue, 64), "within twice the floor");
        assert_eq!(queue.capacity(), 100);
        let mut map: HashMap<u8, ()> = HashMap::with_capacity(1_000);
        assert!(shrink_spare(&mut map, 64));
        assert!((64..256).contains(&map.capacity()), "{}", map.capacity());
        let mut empty: HashMap<u8, ()> = HashMap::new();
        assert!(!shrink_spare(&mut empty, 0));
    }
}
