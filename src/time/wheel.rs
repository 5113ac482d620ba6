//! A fixed-tick timer wheel in two levels over a slab (HOUSE-STYLE section 3, "Timers").
//!
//! The R-Type core keeps every deadline it cares about (countdowns, seat expiry, idle
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
//!   the due-but-unpolled entries of later ticks (none if the caller drains before
//!   inserting). A poll after a long gap does not walk empty ticks or revolutions: it skips
//!   to the next occupied slot through bitmaps.
//! - [`TimerWheel::next_deadline`] is exact while the earliest entry is due in the current
//!   revolution; otherwise it is the first tick of the next revolution holding entries, or,
//!   past the current epoch, the overflow list's earliest tick (a lower bound after a
//!   cancel, and never before the next epoch). So at most one wake-up per revolution, plus
//!   one per epoch, finds nothing due, however many far-off timers there are.
//! - A [`TimerKey`] carries a generation, so a key whose entry has fired or been cancelled
//!   never cancels a newer entry that reused its slab slot.
//!
//! Shape. Ticks are grouped into aligned *revolutions* of `slots` ticks, and revolutions into
//! aligned *epochs* of [`COARSE_SLOTS`] revolutions. Each entry sits in one intrusive list:
//! - a *fine* slot (one per tick) if it is due in the current revolution, the one holding
//!   the first unprocessed tick. Every entry of a fine slot is due at that slot's tick, so a
//!   slot visit fires the whole list and the first occupied slot is the exact deadline;
//! - a *coarse* slot (one per revolution) if it is due in a later revolution of the current
//!   epoch. When the wheel enters a revolution, that revolution's coarse slot is cascaded
//!   into the fine slots;
//! - the *overflow* list, with a lower bound on its earliest tick, if it lies beyond the
//!   current epoch. Entering an epoch that may hold some of them walks the list once and
//!   moves those down.
//!
//! Why so. A one-level hashed wheel keeps an entry rounds ahead in the slot of its tick,
//! beside nearer ones: the nearest occupied slot may hold only such entries, and the driver
//! woke, polled nothing and slept again once per far-off timer per revolution (at the R-Type
//! lobby's 100 us tick, 4,096 slots span 0.41 s and every 30 s idle timeout came round 73
//! times). Aligned spans rather than sliding windows, so that a coarse slot never mixes two
//! revolutions (a cascade moves all of it and looks at no entry twice) and the levels need no
//! wrap-around. Two levels and an overflow list rather than many small levels (the Linux or
//! tokio shape): the fine level has to be large for a short tick anyway, and 1,024 coarse
//! slots make an epoch 1,024 revolutions (7 minutes at 100 us x 4,096, 11.6 hours at the
//! general lobby's 10 ms x 4,096), so the overflow list only holds entries inserted close to
//! an epoch's end or hours ahead, and is walked at most once per epoch. Moving entries down
//! walks a list front to back and appends, and happens as soon as the first unprocessed tick
//! enters the new revolution or epoch, before an insert can reach the lower list: so each
//! list keeps insertion order within a tick.
//!
//! What it must not do: read the clock, allocate in steady state (only the slab grows, up to
//! the high-water mark of live timers), walk every entry on a driver's pass, or panic on any
//! input.
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

/// Revolutions per epoch: the coarse level's slot count (a power of two). See the module
/// documentation for why 1,024: 32 KB of list heads buys an epoch long enough that the
/// overflow list is rarely used.
const COARSE_SLOTS: usize = 1024;

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
    /// Fine level: due at this slot's tick of the current revolution.
    Slot(usize),
    /// Coarse level: due in this slot's revolution, later in the current epoch.
    Coarse(usize),
    /// Due after the current epoch.
    Overflow,
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
    /// tick says at once which level an entry belongs to, and gives `next_deadline` an exact
    /// answer.
    due_tick: u64,
    generation: u64,
    list: List,
    prev: Option<usize>,
    next: Option<usize>,
}

/// A timer wheel of `slots` one-tick slots for the current revolution, a coarse level of
/// one-revolution slots for the rest of the epoch, and an overflow list beyond.
///
/// See the module documentation for the firing contract and the shape.
#[derive(Debug)]
pub struct TimerWheel<T> {
    start: Instant,
    tick: Duration,
    tick_nanos: u128,
    /// `slots.len() - 1`; the slot count is a power of two so a tick maps to a slot by masking.
    mask: usize,
    /// log2 of `slots.len()`: ticks per revolution.
    revolution_bits: u32,
    /// The fine level: one list per tick of the current revolution.
    slots: Vec<ListHead>,
    /// One bit per fine slot, set while the slot's list is non-empty.
    occupied: Vec<u64>,
    /// `coarse.len() - 1`.
    coarse_mask: usize,
    /// log2 of `coarse.len()`: revolutions per epoch.
    epoch_bits: u32,
    /// The coarse level: one list per revolution of the current epoch.
    coarse: Vec<ListHead>,
    /// One bit per coarse slot, set while the slot's list is non-empty.
    coarse_occupied: Vec<u64>,
    overflow: ListHead,
    /// No overflow entry is due before this tick (`u64::MAX` while the list is empty). Exact
    /// after each walk of the list; a cancel may leave it lower than the true earliest.
    overflow_min: u64,
    expired: ListHead,
    entries: Slab<Entry<T>>,
    /// Entries linked into either level or the overflow list (the rest sit in `expired`).
    pending: usize,
    /// First tick not yet processed: every entry due before it is in `expired` or gone.
    next_tick: u64,
    next_generation: u64,
}

impl<T> TimerWheel<T> {
    /// Creates an empty wheel whose tick 0 is `start`.
    ///
    /// `tick` is clamped to at least one nanosecond; `slots` is rounded up to a power of two
    /// and clamped to `1..=2^20`. One revolution is `tick * slots`; entries further out wait
    /// in the coarse level (1,024 revolutions) or beyond it, and cost no wake-ups until
    /// their revolution comes.
    pub fn new(start: Instant, tick: Duration, slots: usize) -> Self {
        Self::with_levels(start, tick, slots, COARSE_SLOTS)
    }

    /// [`TimerWheel::new`] with `coarse_slots` revolutions per epoch (rounded and clamped
    /// like `slots`); tests use small ones to reach the overflow list quickly.
    fn with_levels(start: Instant, tick: Duration, slots: usize, coarse_slots: usize) -> Self {
        let tick = tick.max(Duration::from_nanos(1));
        let slot_count = slots.clamp(1, MAX_SLOTS).next_power_of_two();
        let coarse_count = coarse_slots.clamp(1, MAX_SLOTS).next_power_of_two();
        TimerWheel {
            start,
            tick,
            tick_nanos: tick.as_nanos(),
            mask: slot_count - 1,
            revolution_bits: slot_count.trailing_zeros(),
            slots: vec![ListHead::default(); slot_count],
            occupied: vec![0; slot_count.div_ceil(64)],
            coarse_mask: coarse_count - 1,
            epoch_bits: coarse_count.trailing_zeros(),
            coarse: vec![ListHead::default(); coarse_count],
            coarse_occupied: vec![0; coarse_count.div_ceil(64)],
            overflow: ListHead::default(),
            overflow_min: u64::MAX,
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
            self.place(index, due_tick);
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
    /// Never later than the firing time of the earliest entry, and equal to it when that
    /// entry is due in the current revolution. When the earliest entry lies in a later
    /// revolution it is the start of that revolution (or of the next epoch holding entries):
    /// the driver then wakes, polls nothing, and asks again, at most once per revolution. If
    /// entries are already due it is not after the last `now` polled, so the driver polls
    /// immediately.
    pub fn next_deadline(&self) -> Option<Instant> {
        // The expired list is in tick order, so its head is the earliest due entry.
        if let Some(entry) = self.expired.head.and_then(|index| self.entries.get(index)) {
            return Some(self.boundary_or_earlier(entry.due_tick));
        }
        let tick = self.next_pending_tick()?;
        Some(self.boundary_or_earlier(tick))
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
    /// has been moved to the expired list so the caller can hand it out. Each turn of the
    /// loop moves `next_tick` forward to a tick where an entry may be due (a bitmap search),
    /// so a long gap costs one turn per occupied revolution or epoch, not per tick.
    fn advance(&mut self, now_tick: u64) {
        while self.next_tick <= now_tick {
            let tick = match self.next_pending_tick() {
                Some(tick) if tick <= now_tick => tick,
                _ => {
                    self.move_to(now_tick + 1);
                    return;
                }
            };
            self.move_to(tick);
            if self.collect_slot(tick) {
                self.move_to(tick + 1);
                return;
            }
        }
    }

    /// No pending entry is due before the returned tick: the exact earliest tick if an entry
    /// is due in the current revolution, else the first tick of the first revolution holding
    /// coarse entries, else a lower bound for the overflow list (at least the next epoch).
    fn next_pending_tick(&self) -> Option<u64> {
        if self.pending == 0 {
            return None;
        }
        // Fine entries are due in the current revolution at or after `next_tick`, so the
        // first occupied slot from `next_tick`'s is the earliest, with no wrap-around.
        let revolution = self.revolution_of(self.next_tick);
        if let Some(slot) = first_set(&self.occupied, self.slot_of(self.next_tick)) {
            return Some((revolution << self.revolution_bits) | slot as u64);
        }
        // Likewise coarse entries are due in later revolutions of the current epoch.
        let coarse_from = self.coarse_slot_of(self.next_tick);
        if let Some(slot) = first_set(&self.coarse_occupied, coarse_from) {
            let epoch = self.epoch_of(self.next_tick);
            return Some(((epoch << self.epoch_bits) | slot as u64) << self.revolution_bits);
        }
        self.overflow
            .head
            .map(|_| self.overflow_min.max(self.next_epoch_start()))
    }

    /// Moves `next_tick` forward to `tick`, bringing entries down a level when it enters a
    /// new revolution or epoch. The caller guarantees no pending entry is due before `tick`,
    /// so the levels skipped over are empty.
    fn move_to(&mut self, tick: u64) {
        let from = self.next_tick;
        self.next_tick = tick;
        if self.revolution_of(tick) == self.revolution_of(from) {
            return;
        }
        if self.epoch_of(tick) == self.epoch_of(from) {
            self.cascade(self.coarse_slot_of(tick));
        } else if self.overflow_min < self.next_epoch_start() {
            // The coarse level is empty (its entries were all due before `tick`).
            self.lower_overflow();
        }
    }

    /// Moves the entries of a coarse slot, now the current revolution, to the fine slots.
    fn cascade(&mut self, coarse_slot: usize) {
        while let Some(index) = self.coarse.get(coarse_slot).and_then(|list| list.head) {
            let Some(due_tick) = self.entries.get(index).map(|entry| entry.due_tick) else {
                break;
            };
            self.unlink(index);
            self.link_back(index, List::Slot(self.slot_of(due_tick)));
        }
    }

    /// Walks the overflow list once, moving the entries due in the current epoch to the
    /// coarse or fine level and recomputing the earliest tick of those left.
    fn lower_overflow(&mut self) {
        let epoch_end = self.next_epoch_start();
        let mut earliest_left = u64::MAX;
        let mut cursor = self.overflow.head;
        while let Some(index) = cursor {
            let Some(entry) = self.entries.get(index) else {
                break;
            };
            cursor = entry.next;
            let due_tick = entry.due_tick;
            if due_tick < epoch_end {
                self.unlink(index);
                self.place(index, due_tick);
            } else {
                earliest_left = earliest_left.min(due_tick);
            }
        }
        self.overflow_min = earliest_left;
    }

    /// Links the unlinked entry `index`, due at `due_tick >= next_tick`, at the back of the
    /// list its distance calls for.
    fn place(&mut self, index: usize, due_tick: u64) {
        let list = if self.revolution_of(due_tick) == self.revolution_of(self.next_tick) {
            List::Slot(self.slot_of(due_tick))
        } else if self.epoch_of(due_tick) == self.epoch_of(self.next_tick) {
            List::Coarse(self.coarse_slot_of(due_tick))
        } else {
            self.overflow_min = self.overflow_min.min(due_tick);
            List::Overflow
        };
        self.link_back(index, list);
    }

    /// Moves every entry of `tick`'s fine slot (all due at `tick`) to the back of the expired
    /// list in one splice, keeping their order. Returns whether anything moved.
    fn collect_slot(&mut self, tick: u64) -> bool {
        let slot = self.slot_of(tick);
        let Some(list) = self.slots.get(slot).copied() else {
            return false;
        };
        let Some(first) = list.head else {
            return false;
        };
        let mut cursor = Some(first);
        while let Some(entry) = cursor.and_then(|index| self.entries.get_mut(index)) {
            entry.list = List::Expired;
            cursor = entry.next;
            self.pending -= 1;
        }
        let before = self.expired.tail;
        match before.and_then(|index| self.entries.get_mut(index)) {
            Some(last) => last.next = Some(first),
            None => self.expired.head = Some(first),
        }
        if let Some(entry) = self.entries.get_mut(first) {
            entry.prev = before;
        }
        self.expired.tail = list.tail;
        self.set_head(List::Slot(slot), ListHead::default());
        true
    }

    fn pop_expired(&mut self) -> Option<T> {
        let index = self.expired.head?;
        self.unlink(index);
        self.entries.try_remove(index).map(|entry| entry.value)
    }

    fn slot_of(&self, tick: u64) -> usize {
        // The mask is below 2^20, so the masked value always fits a usize.
        (tick & self.mask as u64) as usize
    }

    fn coarse_slot_of(&self, tick: u64) -> usize {
        (self.revolution_of(tick) & self.coarse_mask as u64) as usize
    }

    fn revolution_of(&self, tick: u64) -> u64 {
        tick >> self.revolution_bits
    }

    fn epoch_of(&self, tick: u64) -> u64 {
        tick >> (self.revolution_bits + self.epoch_bits)
    }

    /// First tick of the epoch after `next_tick`'s. Ticks stay below 2^62 + 2 and an epoch
    /// is at most 2^40 ticks, so this cannot overflow.
    fn next_epoch_start(&self) -> u64 {
        (self.epoch_of(self.next_tick) + 1) << (self.revolution_bits + self.epoch_bits)
    }

    fn head(&self, list: List) -> ListHead {
        match list {
            List::Slot(slot) => self.slots.get(slot).copied().unwrap_or_default(),
            List::Coarse(slot) => self.coarse.get(slot).copied().unwrap_or_default(),
            List::Overflow => self.overflow,
            List::Expired => self.expired,
        }
    }

    fn set_head(&mut self, list: List, head: ListHead) {
        match list {
            List::Slot(slot) => {
                if let Some(stored) = self.slots.get_mut(slot) {
                    *stored = head;
                }
                set_bit(&mut self.occupied, slot, head.head.is_some());
            }
            List::Coarse(slot) => {
                if let Some(stored) = self.coarse.get_mut(slot) {
                    *stored = head;
                }
                set_bit(&mut self.coarse_occupied, slot, head.head.is_some());
            }
            List::Overflow => {
                self.overflow = head;
                if head.head.is_none() {
                    self.overflow_min = u64::MAX;
                }
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
        if list != List::Expired {
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
        if list != List::Expired {
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

/// The index of the first set bit at or after `from` in a bitmap, without wrapping round.
fn first_set(bits: &[u64], from: usize) -> Option<usize> {
    let first_word = from / 64;
    let mut masked = u64::MAX << (from % 64);
    for (word_index, word) in bits.iter().enumerate().skip(first_word) {
        let word = word & masked;
        masked = u64::MAX;
        if word != 0 {
            return Some(word_index * 64 + word.trailing_zeros() as usize);
        }
    }
    None
}

fn set_bit(bits: &mut [u64], index: usize, set: bool) {
    if let Some(word) = bits.get_mut(index / 64) {
        let bit = 1u64 << (index % 64);
        if set {
            *word |= bit;
        } else {
            *word &= !bit;
        }
    }
}

fn clamp_tick(tick: u128) -> u64 {
    u64::try_from(tick).map_or(MAX_TICK, |tick| tick.min(MAX_TICK))
}

#[cfg(test)]
mod tests;
