//! A fixed-tick hashed timer wheel over a slab (HOUSE-STYLE section 3, "Timers").
//!
//! The lobby core keeps every deadline it cares about (countdowns, seat expiry, idle
//! members, room reaping) in one [`TimerWheel`]; the driver sleeps for the time to
//! [`TimerWheel::next_deadline`] and then drains [`TimerWheel::poll_expired`].
//!
//! Contract:
//! - Time is split into ticks of a fixed length counted from `start`. A deadline is rounded
//!   up to the next tick boundary, and an entry fires at the first poll whose `now` is at or
//!   past that boundary. So an entry never fires early, and fires at most one tick (plus the
//!   caller's own delay in polling) late. A deadline that has already passed fires at the
//!   next poll.
//! - Entries due at one tick are all returned before any entry of a later tick; within a
//!   tick they come out in insertion order. This holds for past deadlines too: they join
//!   the due-but-unpolled entries in tick order.
//! - Cancel is O(1). Insert is O(1), except that a deadline already past steps back over
//!   the due-but-unpolled entries of later ticks (none if the caller drains before inserting). A poll after a long gap does not walk empty ticks: it skips
//!   to the next occupied slot through a bitmap, and after one fruitless revolution jumps
//!   straight to the earliest pending entry.
//! - A [`TimerKey`] carries a generation, so a key whose entry has fired or been cancelled
//!   never cancels a newer entry that reused its slab slot.
//!
//! What it must not do: read the clock, allocate in steady state (only the slab grows, up to
//! the high-water mark of live timers), or panic on any input.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use lobbyd::time::TimerWheel;
//!
//! let start = Instant::now();
//! let mut wheel = TimerWheel::new(start, Duration::from_millis(10), 256);
//! wheel.insert(start + Duration::from_millis(25), "countdown");
//! assert_eq!(wheel.poll_expired(start + Duration::from_millis(25)), None); // boundary is 30 ms
//! assert_eq!(wheel.poll_expired(start + Duration::from_millis(30)), Some("countdown"));
//! ```

use std::time::{Duration, Instant};

use slab::Slab;

/// Deadlines further than this many ticks after `start` are clamped to it. Keeping tick
/// numbers below 2^62 means `tick + distance` arithmetic can never overflow; with a 1 ms
/// tick the clamp sits about 146 million years out.
const MAX_TICK: u64 = 1 << 62;

/// Upper bound on the number of slots, so a bad configuration cannot ask for a huge table.
const MAX_SLOTS: usize = 1 << 20;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Handle to one timer, returned by [`TimerWheel::insert`] and accepted by
/// [`TimerWheel::cancel`].
///
/// It is the slab index plus a generation number, so once its entry has fired or been
/// cancelled the key is stale forever, even after the slab reuses the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerKey {
    index: usize,
    generation: u64,
}

/// Which intrusive list an entry is linked into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    /// Waiting in a wheel slot for its tick.
    Slot(usize),
    /// Due: handed out by the next calls to `poll_expired`, front first.
    Expired,
}

#[derive(Clone, Copy, Debug, Default)]
struct ListHead {
    head: Option<usize>,
    tail: Option<usize>,
}

#[derive(Debug)]
struct Entry<T> {
    value: T,
    /// Absolute tick number (since `start`) at which the entry fires. Storing the absolute
    /// tick rather than a decrementing rounds count means a slot visit only reads entries
    /// that are not yet due, and it gives `next_deadline` and the gap jump an exact answer.
    due_tick: u64,
    generation: u64,
    list: List,
    prev: Option<usize>,
    next: Option<usize>,
}

/// A hashed timer wheel: `slots` buckets of one tick each, entries further away than one
/// revolution sharing a bucket with nearer ones until their own turn comes.
///
/// See the module documentation for the firing contract.
#[derive(Debug)]
pub struct TimerWheel<T> {
    start: Instant,
    tick: Duration,
    tick_nanos: u128,
    /// `slots.len() - 1`; the slot count is a power of two so a tick maps to a slot by masking.
    mask: usize,
    slots: Vec<ListHead>,
    /// One bit per slot, set while the slot's list is non-empty.
    occupied: Vec<u64>,
    expired: ListHead,
    entries: Slab<Entry<T>>,
    /// Entries linked into slots (the rest of `entries` sit in `expired`).
    pending: usize,
    /// First tick not yet processed: every entry due before it is in `expired` or gone.
    next_tick: u64,
    next_generation: u64,
}

impl<T> TimerWheel<T> {
    /// Creates an empty wheel whose tick 0 is `start`.
    ///
    /// `tick` is clamped to at least one nanosecond; `slots` is rounded up to a power of two
    /// and clamped to `1..=2^20`. One revolution is `tick * slots`; entries further out than
    /// that still work, they just share slots with nearer ones.
    pub fn new(start: Instant, tick: Duration, slots: usize) -> Self {
        let tick = tick.max(Duration::from_nanos(1));
        let slot_count = slots.clamp(1, MAX_SLOTS).next_power_of_two();
        TimerWheel {
            start,
            tick,
            tick_nanos: tick.as_nanos(),
            mask: slot_count - 1,
            slots: vec![ListHead::default(); slot_count],
            occupied: vec![0; slot_count.div_ceil(64)],
            expired: ListHead::default(),
            entries: Slab::new(),
            pending: 0,
            next_tick: 0,
            next_generation: 0,
        }
    }

    /// Schedules `value` to fire at `deadline` (rounded up to the next tick boundary).
    ///
    /// A deadline that is already in the past fires at the next poll.
    pub fn insert(&mut self, deadline: Instant, value: T) -> TimerKey {
        let due_tick = self.tick_at_or_after(deadline);
        let generation = self.next_generation;
        self.next_generation = self.next_generation.wrapping_add(1);
        let index = self.entries.insert(Entry {
            value,
            due_tick,
            generation,
            list: List::Expired,
            prev: None,
            next: None,
        });
        if due_tick < self.next_tick {
            // Its tick has already been processed, so no slot visit would ever pick it up.
            // Keep the expired list in tick order: step back over entries due later.
            let mut after = self.expired.tail;
            while let Some(entry) = after.and_then(|at| self.entries.get(at)) {
                if entry.due_tick <= due_tick {
                    break;
                }
                after = entry.prev;
            }
            self.link_after(index, List::Expired, after);
        } else {
            self.link_back(index, List::Slot(self.slot_of(due_tick)));
        }
        TimerKey { index, generation }
    }

    /// Removes the timer behind `key` and returns its value, or `None` if it has already
    /// fired, was already cancelled, or the key is stale.
    pub fn cancel(&mut self, key: TimerKey) -> Option<T> {
        match self.entries.get(key.index) {
            Some(entry) if entry.generation == key.generation => {}
            _ => return None,
        }
        self.unlink(key.index);
        self.entries.try_remove(key.index).map(|entry| entry.value)
    }

    /// Returns one entry that is due at `now`, or `None` once nothing more is due.
    ///
    /// Call it in a loop until it returns `None`. Entries come out in tick order. A `now`
    /// earlier than a previous call's only hands out what was already due then.
    pub fn poll_expired(&mut self, now: Instant) -> Option<T> {
        if let Some(value) = self.pop_expired() {
            return Some(value);
        }
        let now_tick = self.tick_at_or_before(now)?;
        self.advance(now_tick);
        self.pop_expired()
    }

    /// When the driver must wake up next, or `None` if the wheel is empty.
    ///
    /// Never later than the firing time of the earliest entry. It may be earlier (by whole
    /// revolutions) when the nearest occupied slot only holds entries of later rounds: the
    /// driver then wakes, polls nothing, and asks again. If entries are already due it is
    /// not after the last `now` polled, so the driver polls immediately.
    pub fn next_deadline(&self) -> Option<Instant> {
        // The expired list is in tick order, so its head is the earliest due entry.
        if let Some(entry) = self.expired.head.and_then(|index| self.entries.get(index)) {
            return Some(self.boundary_or_earlier(entry.due_tick));
        }
        if self.pending == 0 {
            return None;
        }
        let distance = self.distance_to_occupied(self.next_tick)?;
        Some(self.boundary_or_earlier(self.next_tick + distance))
    }

    /// Number of live timers (pending or due but not yet polled).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if no timer is live.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The tick length: the granularity of every deadline.
    pub fn tick(&self) -> Duration {
        self.tick
    }

    /// Processes ticks up to and including `now_tick`, stopping early as soon as some entry
    /// has been moved to the expired list so the caller can hand it out.
    fn advance(&mut self, now_tick: u64) {
        let revolution = self.slots.len() as u64;
        let mut scanned = 0u64;
        while self.next_tick <= now_tick {
            if self.pending == 0 {
                self.next_tick = now_tick + 1;
                return;
            }
            if scanned >= revolution {
                // A whole revolution went by with nothing due: every pending entry is some
                // rounds ahead. Jump to the earliest instead of lapping the wheel again.
                match self.earliest_pending_tick() {
                    Some(tick) if tick <= now_tick => {
                        self.next_tick = self.next_tick.max(tick);
                        scanned = 0;
                    }
                    _ => {
                        self.next_tick = now_tick + 1;
                        return;
                    }
                }
            }
            let Some(distance) = self.distance_to_occupied(self.next_tick) else {
                self.next_tick = now_tick + 1;
                return;
            };
            let tick = self.next_tick + distance;
            if tick > now_tick {
                self.next_tick = now_tick + 1;
                return;
            }
            scanned += distance + 1;
            self.next_tick = tick + 1;
            if self.collect_slot(tick) {
                return;
            }
        }
    }

    /// Moves every entry of `tick`'s slot that is due by `tick` to the expired list, keeping
    /// insertion order. Returns whether anything moved.
    fn collect_slot(&mut self, tick: u64) -> bool {
        let slot = self.slot_of(tick);
        let mut moved = false;
        let mut cursor = self.slots.get(slot).and_then(|head| head.head);
        while let Some(index) = cursor {
            let Some(entry) = self.entries.get(index) else {
                break;
            };
            cursor = entry.next;
            if entry.due_tick <= tick {
                self.unlink(index);
                self.link_back(index, List::Expired);
                moved = true;
            }
        }
        moved
    }

    fn pop_expired(&mut self) -> Option<T> {
        let index = self.expired.head?;
        self.unlink(index);
        self.entries.try_remove(index).map(|entry| entry.value)
    }

    fn earliest_pending_tick(&self) -> Option<u64> {
        self.entries
            .iter()
            .filter(|(_, entry)| matches!(entry.list, List::Slot(_)))
            .map(|(_, entry)| entry.due_tick)
            .min()
    }

    /// Ticks from `from_tick` to the first tick at or after it whose slot is occupied
    /// (always less than one revolution), or `None` if every slot is empty.
    fn distance_to_occupied(&self, from_tick: u64) -> Option<u64> {
        let from_slot = self.slot_of(from_tick);
        let words = self.occupied.len();
        let first_word = from_slot / 64;
        // Visiting the first word twice (masked, then whole) covers the wrap-around.
        for step in 0..=words {
            let word_index = (first_word + step) % words;
            let mut word = self.occupied.get(word_index).copied().unwrap_or(0);
            if step == 0 {
                word &= u64::MAX << (from_slot % 64);
            }
            if word != 0 {
                let slot = word_index * 64 + word.trailing_zeros() as usize;
                return Some((slot.wrapping_sub(from_slot) & self.mask) as u64);
            }
        }
        None
    }

    fn slot_of(&self, tick: u64) -> usize {
        // The mask is below 2^20, so the masked value always fits a usize.
        (tick & self.mask as u64) as usize
    }

    fn set_occupied(&mut self, slot: usize, occupied: bool) {
        if let Some(word) = self.occupied.get_mut(slot / 64) {
            let bit = 1u64 << (slot % 64);
            if occupied {
                *word |= bit;
            } else {
                *word &= !bit;
            }
        }
    }

    fn head(&self, list: List) -> ListHead {
        match list {
            List::Slot(slot) => self.slots.get(slot).copied().unwrap_or_default(),
            List::Expired => self.expired,
        }
    }

    fn set_head(&mut self, list: List, head: ListHead) {
        match list {
            List::Slot(slot) => {
                if let Some(stored) = self.slots.get_mut(slot) {
                    *stored = head;
                }
                self.set_occupied(slot, head.head.is_some());
            }
            List::Expired => self.expired = head,
        }
    }

    fn link_back(&mut self, index: usize, list: List) {
        let tail = self.head(list).tail;
        self.link_after(index, list, tail);
    }

    /// Links the unlinked entry `index` into `list` right after `after`, or at the front.
    fn link_after(&mut self, index: usize, list: List, after: Option<usize>) {
        let mut head = self.head(list);
        let next = match after {
            Some(after) => self.entries.get(after).and_then(|entry| entry.next),
            None => head.head,
        };
        match after.and_then(|after| self.entries.get_mut(after)) {
            Some(after_entry) => after_entry.next = Some(index),
            None => head.head = Some(index),
        }
        match next.and_then(|next| self.entries.get_mut(next)) {
            Some(next_entry) => next_entry.prev = Some(index),
            None => head.tail = Some(index),
        }
        if let Some(entry) = self.entries.get_mut(index) {
            entry.list = list;
            entry.prev = after;
            entry.next = next;
        }
        self.set_head(list, head);
        if matches!(list, List::Slot(_)) {
            self.pending += 1;
        }
    }

    fn unlink(&mut self, index: usize) {
        let Some(entry) = self.entries.get_mut(index) else {
            return;
        };
        let (list, prev, next) = (entry.list, entry.prev, entry.next);
        entry.prev = None;
        entry.next = None;
        let mut head = self.head(list);
        match prev.and_then(|prev| self.entries.get_mut(prev)) {
            Some(prev_entry) => prev_entry.next = next,
            None => head.head = next,
        }
        match next.and_then(|next| self.entries.get_mut(next)) {
            Some(next_entry) => next_entry.prev = prev,
            None => head.tail = prev,
        }
        self.set_head(list, head);
        if matches!(list, List::Slot(_)) {
            self.pending -= 1;
        }
    }

    /// The first tick whose boundary is at or after `deadline` (0 for anything up to `start`).
    fn tick_at_or_after(&self, deadline: Instant) -> u64 {
        match deadline.checked_duration_since(self.start) {
            None => 0,
            Some(since) => clamp_tick(since.as_nanos().div_ceil(self.tick_nanos)),
        }
    }

    /// The last tick whose boundary is at or before `now`, or `None` if `now` is before `start`.
    fn tick_at_or_before(&self, now: Instant) -> Option<u64> {
        let since = now.checked_duration_since(self.start)?;
        Some(clamp_tick(since.as_nanos() / self.tick_nanos))
    }

    fn boundary(&self, tick: u64) -> Option<Instant> {
        let nanos = self.tick_nanos.saturating_mul(u128::from(tick));
        let secs = u64::try_from(nanos / NANOS_PER_SEC).ok()?;
        let subsec = u32::try_from(nanos % NANOS_PER_SEC).ok()?;
        self.start.checked_add(Duration::new(secs, subsec))
    }

    /// The boundary of `tick`, or an earlier representable instant if that one overflows
    /// `Instant` (only possible for a deadline within one tick of the end of time; the
    /// boundary before it is then below that deadline and so representable).
    fn boundary_or_earlier(&self, tick: u64) -> Instant {
        self.boundary(tick)
            .or_else(|| self.boundary(tick.saturating_sub(1)))
            .unwrap_or(self.start)
    }
}

fn clamp_tick(tick: u128) -> u64 {
    u64::try_from(tick).map_or(MAX_TICK, |tick| tick.min(MAX_TICK))
}

#[cfg(test)]
mod tests;
