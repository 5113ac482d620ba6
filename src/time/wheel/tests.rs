//! Unit and model tests for [`TimerWheel`](super::TimerWheel): the firing contract of the
//! module documentation, checked case by case and against a naive list under quickcheck;
//! cascading across the levels against a sorted list; and the wake-ups a driver loop makes
//! with a thousand far-off timers.

use super::*;
use quickcheck::{Arbitrary, Gen, QuickCheck};
use std::collections::HashMap;

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

fn drain<T>(wheel: &mut TimerWheel<T>, now: Instant) -> Vec<T> {
    let mut fired = Vec::new();
    while let Some(value) = wheel.poll_expired(now) {
        fired.push(value);
    }
    fired
}

#[test]
fn slots_round_up_to_power_of_two() {
    let start = Instant::now();
    assert_eq!(TimerWheel::<()>::new(start, ms(1), 100).slots.len(), 128);
    assert_eq!(TimerWheel::<()>::new(start, ms(1), 64).slots.len(), 64);
    assert_eq!(TimerWheel::<()>::new(start, ms(1), 0).slots.len(), 1);
    assert_eq!(
        TimerWheel::<()>::new(start, Duration::ZERO, 8).tick(),
        Duration::from_nanos(1)
    );
}

#[test]
fn fires_at_tick_boundary_never_before_deadline() {
    let start = Instant::now();
    let mut wheel = TimerWheel::new(start, ms(10), 16);
    wheel.insert(start + ms(15), 'a');
    wheel.insert(start + ms(20), 'b');
    assert_eq!(drain(&mut wheel, start + ms(14)), Vec::<char>::new());
    assert_eq!(drain(&mut wheel, start + ms(19)), Vec::<char>::new());
    assert_eq!(drain(&mut wheel, start + ms(20)), vec!['a', 'b']);
    assert!(wheel.is_empty());
}

#[test]
fn tick_order_then_insertion_order() {
    let start = Instant::now();
    let mut wheel = TimerWheel::new(start, ms(10), 4);
    wheel.insert(start + ms(30), 3);
    wheel.insert(start + ms(10), 1);
    wheel.insert(start + ms(75), 5); // tick 8: slot 0 again, two revolutions on
    wheel.insert(start + ms(21), 2);
    wheel.insert(start + ms(29), 4);
    wheel.insert(start + ms(5), 0);
    assert_eq!(wheel.len(), 6);
    assert_eq!(drain(&mut wheel, start + ms(200)), vec![1, 0, 3, 2, 4, 5]);
}

#[test]
fn past_deadline_fires_at_next_poll() {
    let start = Instant::now();
    let mut wheel = TimerWheel::new(start, ms(10), 8);
    let now = start + ms(105);
    assert_eq!(wheel.poll_expired(now), None);
    wheel.insert(start + ms(30), "late");
    wheel.insert(now, "now");
    let not_started = start.checked_sub(ms(50)).unwrap_or(start);
    wheel.insert(not_started, "before start");
    let deadline = wheel.next_deadline();
    assert!(deadline.is_some_and(|deadline| deadline <= now));
    // No time passes between the insert and the poll.
    assert_eq!(drain(&mut wheel, now), vec!["before start", "late"]);
    assert_eq!(drain(&mut wheel, start + ms(110)), vec!["now"]);
}

#[test]
fn cancel_and_stale_keys() {
    let start = Instant::now();
    let mut wheel = TimerWheel::new(start, ms(10), 8);
    let first = wheel.insert(start + ms(50), "first");
    assert_eq!(wheel.cancel(first), Some("first"));
    assert_eq!(wheel.cancel(first), None);
    // The slab hands the same index to the next entry; the old key must not touch it.
    let second = wheel.insert(start + ms(50), "second");
    assert_eq!(second.index, first.index);
    assert_eq!(wheel.cancel(first), None);
    assert_eq!(wheel.len(), 1);
    assert_eq!(drain(&mut wheel, start + ms(50)), vec!["second"]);
    assert_eq!(wheel.cancel(second), None);
    assert_eq!(wheel.next_deadline(), None);
}

#[test]
fn cancel_from_middle_of_slot_and_expired_list() {
    let start = Instant::now();
    let mut wheel = TimerWheel::new(start, ms(10), 2);
    let keys: Vec<TimerKey> = (0..5).map(|i| wheel.insert(start + ms(10), i)).collect();
    assert_eq!(wheel.cancel(keys[2]), Some(2));
    assert_eq!(wheel.cancel(keys[4]), Some(4));
    assert_eq!(wheel.poll_expired(start + ms(10)), Some(0));
    // 1 and 3 now sit in the expired list; cancelling there must work too.
    assert_eq!(wheel.cancel(keys[1]), Some(1));
    assert_eq!(drain(&mut wheel, start + ms(10)), vec![3]);
    assert!(wheel.is_empty());
    assert_eq!(wheel.pending, 0);
    assert!(wheel.occupied.iter().all(|word| *word == 0));
}

#[test]
fn far_future_deadline_waits_its_rounds() {
    let start = Instant::now();
    let mut wheel = TimerWheel::new(start, ms(1), 8);
    wheel.insert(start + ms(1000), "far");
    for now in 0..1000 {
        let now = start + ms(now);
        assert_eq!(wheel.poll_expired(now), None);
        let next = wheel.next_deadline();
        assert!(next.is_some_and(|next| next > now && next <= start + ms(1000)));
    }
    assert_eq!(wheel.poll_expired(start + ms(1000)), Some("far"));
    assert_eq!(wheel.next_deadline(), None);
}

#[test]
fn large_gap_poll_fires_everything_in_order() {
    let start = Instant::now();
    let hour = Duration::from_secs(3600);
    // A 1 µs tick makes a two-day gap 1.7e11 ticks: walking them one by one would never end.
    let mut wheel = TimerWheel::new(start, Duration::from_micros(1), 64);
    wheel.insert(start + hour * 3, 3);
    wheel.insert(start + hour * 24, 4);
    wheel.insert(start + hour, 1);
    wheel.insert(start + ms(5), 0);
    wheel.insert(start + hour * 2, 2);
    wheel.insert(start + hour * 96, 5);
    assert_eq!(drain(&mut wheel, start + hour * 48), vec![0, 1, 2, 3, 4]);
    assert_eq!(wheel.len(), 1);
    let next = wheel.next_deadline();
    assert!(next.is_some_and(|next| next > start + hour * 48 && next <= start + hour * 96));
    assert_eq!(drain(&mut wheel, start + hour * 96), vec![5]);
}

#[test]
fn next_deadline_tracks_earliest() {
    let start = Instant::now();
    let mut wheel = TimerWheel::new(start, ms(10), 64);
    assert_eq!(wheel.next_deadline(), None);
    let late = wheel.insert(start + ms(300), ());
    assert_eq!(wheel.next_deadline(), Some(start + ms(300)));
    wheel.insert(start + ms(41), ());
    assert_eq!(wheel.next_deadline(), Some(start + ms(50)));
    assert_eq!(drain(&mut wheel, start + ms(60)), vec![()]);
    assert_eq!(wheel.next_deadline(), Some(start + ms(300)));
    assert_eq!(wheel.cancel(late), Some(()));
    assert_eq!(wheel.next_deadline(), None);
}

#[derive(Clone, Debug)]
enum Op {
    /// Deadline this many milliseconds from the current time (negative: in the past).
    Insert(i64),
    /// Cancel the key of an earlier insert, picked modulo the number of inserts so far.
    Cancel(usize),
    /// Move the clock forward this many milliseconds, then drain.
    Advance(u64),
}

impl Arbitrary for Op {
    fn arbitrary(g: &mut Gen) -> Self {
        match u8::arbitrary(g) % 16 {
            0..=5 => Op::Insert(i64::from(u16::arbitrary(g) % 500) - 60),
            6 => Op::Insert(i64::from(u32::arbitrary(g) % 200_000)),
            7..=9 => Op::Cancel(usize::arbitrary(g)),
            10..=14 => Op::Advance(u64::from(u16::arbitrary(g) % 150)),
            _ => Op::Advance(u64::from(u32::arbitrary(g) % 300_000)),
        }
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Self>> {
        match *self {
            Op::Insert(offset) => Box::new(offset.shrink().map(Op::Insert)),
            Op::Cancel(pick) => Box::new(pick.shrink().map(Op::Cancel)),
            Op::Advance(step) => Box::new(step.shrink().map(Op::Advance)),
        }
    }
}

/// The naive model: the live timers as (firing time, id), and every key handed out (a key's
/// index is the id of its timer).
struct Model {
    start: Instant,
    tick: Duration,
    live: Vec<(Instant, usize)>,
    keys: Vec<TimerKey>,
}

impl Model {
    fn new(start: Instant, tick: Duration) -> Self {
        Model {
            start,
            tick,
            live: Vec::new(),
            keys: Vec::new(),
        }
    }

    /// Inserts a timer `offset` ms from `now` (negative: in the past) into the wheel and the
    /// model; returns its id and naive firing time: the deadline rounded up to a tick
    /// boundary, `start` at least.
    fn insert(
        &mut self,
        wheel: &mut TimerWheel<usize>,
        now: Instant,
        offset: i64,
    ) -> (usize, Instant) {
        let magnitude = ms(offset.unsigned_abs());
        let deadline = if offset < 0 {
            now.checked_sub(magnitude).unwrap_or(now)
        } else {
            now + magnitude
        };
        let since = deadline.saturating_duration_since(self.start);
        let ticks = since.as_nanos().div_ceil(self.tick.as_nanos());
        let firing = self.start + self.tick * u32::try_from(ticks).unwrap_or(u32::MAX);
        let id = self.keys.len();
        self.keys.push(wheel.insert(deadline, id));
        self.live.push((firing, id));
        (id, firing)
    }

    /// Cancels an earlier insert, picked modulo the number of inserts so far, in both; the
    /// wheel must give the value back exactly while the model still holds it.
    fn cancel(&mut self, wheel: &mut TimerWheel<usize>, pick: usize) -> Result<(), String> {
        if self.keys.is_empty() {
            return Ok(());
        }
        let id = pick % self.keys.len();
        let expected = self
            .live
            .iter()
            .position(|&(_, live)| live == id)
            .map(|at| {
                self.live.remove(at);
                id
            });
        let got = wheel.cancel(self.keys[id]);
        if got != expected {
            return Err(format!("cancel({id}): wheel {got:?}, model {expected:?}"));
        }
        Ok(())
    }

    /// Removes and returns the ids due at `now`, in firing order then insertion order.
    fn take_due(&mut self, now: Instant) -> Vec<usize> {
        self.live.sort_unstable();
        let due = self.live.partition_point(|&(when, _)| when <= now);
        self.live.drain(..due).map(|(_, id)| id).collect()
    }

    /// The wheel holds as many timers as the model, and its next deadline fits the earliest.
    fn check(&self, wheel: &TimerWheel<usize>) -> Result<(), String> {
        if wheel.len() != self.live.len() {
            return Err(format!("len {} vs model {}", wheel.len(), self.live.len()));
        }
        check_next_deadline(wheel, self.live.iter().map(|&(when, _)| when).min())
    }
}

/// Runs `ops` against the wheel and against a plain list of (firing time, id).
fn matches_naive_model(tick_ms: u8, slots: u8, ops: Vec<Op>) -> Result<(), String> {
    let tick = ms(u64::from(tick_ms % 13) + 1);
    let start = Instant::now();
    let mut wheel = TimerWheel::new(start, tick, usize::from(slots % 70) + 1);
    let mut now = start;
    let mut model = Model::new(start, tick);
    let mut firing_of: HashMap<usize, Instant> = HashMap::new();
    for op in ops {
        match op {
            Op::Insert(offset) => {
                let (id, firing) = model.insert(&mut wheel, now, offset);
                firing_of.insert(id, firing);
            }
            Op::Cancel(pick) => model.cancel(&mut wheel, pick)?,
            Op::Advance(step) => {
                now += ms(step);
                let fired = drain(&mut wheel, now);
                let times: Vec<Instant> = fired.iter().map(|id| firing_of[id]).collect();
                if times.windows(2).any(|pair| pair[0] > pair[1]) {
                    return Err(format!("fired out of tick order: {fired:?}"));
                }
                let mut expected = model.take_due(now);
                let mut fired = fired;
                fired.sort_unstable();
                expected.sort_unstable();
                if fired != expected {
                    return Err(format!(
                        "at {now:?}: wheel fired {fired:?}, model {expected:?}"
                    ));
                }
                // Nothing is due any more, so the wake-up must lie in the future.
                if wheel.next_deadline().is_some_and(|next| next <= now) {
                    return Err("next_deadline not after now with nothing due".into());
                }
            }
        }
        model.check(&wheel)?;
    }
    Ok(())
}

#[test]
fn quickcheck_against_naive_model() {
    QuickCheck::new()
        .tests(400)
        .quickcheck(matches_naive_model as fn(u8, u8, Vec<Op>) -> Result<(), String>);
}

/// `next_deadline` against the model's earliest firing time: never later; exact while that
/// entry is due (already, or in the current revolution); otherwise not before the next
/// revolution starts, so a far-off entry costs no wake-up within this one.
fn check_next_deadline<T>(wheel: &TimerWheel<T>, earliest: Option<Instant>) -> Result<(), String> {
    let (next, earliest) = match (wheel.next_deadline(), earliest) {
        (None, None) => return Ok(()),
        (Some(next), Some(earliest)) => (next, earliest),
        (next, earliest) => {
            return Err(format!(
                "next_deadline {next:?}, model earliest {earliest:?}"
            ))
        }
    };
    let earliest_tick = wheel.tick_at_or_after(earliest);
    let current = wheel.revolution_of(wheel.next_tick);
    let exact = wheel.expired.head.is_some() || wheel.revolution_of(earliest_tick) == current;
    let next_revolution = wheel.boundary_or_earlier((current + 1) << wheel.revolution_bits);
    if next > earliest || (exact && next != earliest) || (!exact && next < next_revolution) {
        return Err(format!(
            "next_deadline {next:?}, model earliest {earliest:?} (exact: {exact})"
        ));
    }
    Ok(())
}

/// Every entry sits in the list its distance from `next_tick` calls for, and the counters
/// and bitmaps agree with the lists.
fn check_levels<T>(wheel: &TimerWheel<T>) -> Result<(), String> {
    let now = wheel.next_tick;
    let mut pending = 0;
    for (index, entry) in wheel.entries.iter() {
        let due = entry.due_tick;
        let placed = match entry.list {
            List::Expired => due < now,
            List::Slot(slot) => {
                due >= now
                    && wheel.revolution_of(due) == wheel.revolution_of(now)
                    && slot == wheel.slot_of(due)
            }
            List::Coarse(slot) => {
                wheel.revolution_of(due) > wheel.revolution_of(now)
                    && wheel.epoch_of(due) == wheel.epoch_of(now)
                    && slot == wheel.coarse_slot_of(due)
            }
            List::Overflow => {
                wheel.epoch_of(due) > wheel.epoch_of(now) && due >= wheel.overflow_min
            }
        };
        if !placed {
            return Err(format!(
                "entry {index} due {due} in {:?} at next_tick {now}",
                entry.list
            ));
        }
        pending += usize::from(entry.list != List::Expired);
    }
    if pending != wheel.pending {
        return Err(format!("pending {} counted {pending}", wheel.pending));
    }
    let bits_agree = |heads: &[ListHead], bits: &[u64]| {
        heads.iter().enumerate().all(|(slot, list)| {
            let bit = bits
                .get(slot / 64)
                .map_or(0, |word| word >> (slot % 64) & 1);
            list.head.is_some() == (bit == 1)
        })
    };
    if !bits_agree(&wheel.slots, &wheel.occupied)
        || !bits_agree(&wheel.coarse, &wheel.coarse_occupied)
    {
        return Err("an occupancy bit disagrees with its list".into());
    }
    Ok(())
}

/// Operations that cross levels on a small wheel: deadlines many epochs out, long jumps,
/// and single polls that leave due entries waiting while more are inserted.
#[derive(Clone, Debug)]
enum LevelOp {
    /// Insert, cancel, or advance and drain, as in the naive model.
    Op(Op),
    /// Move the clock forward this many milliseconds, then take at most one entry.
    PollOne(u64),
}

impl Arbitrary for LevelOp {
    fn arbitrary(g: &mut Gen) -> Self {
        match u8::arbitrary(g) % 16 {
            0..=3 => LevelOp::Op(Op::Insert(i64::from(u16::arbitrary(g) % 700) - 30)),
            4..=5 => LevelOp::Op(Op::Insert(i64::from(u32::arbitrary(g) % 40_000))),
            6..=8 => LevelOp::Op(Op::Cancel(usize::arbitrary(g))),
            9..=11 => LevelOp::Op(Op::Advance(u64::from(u16::arbitrary(g) % 300))),
            12 => LevelOp::Op(Op::Advance(u64::from(u32::arbitrary(g) % 60_000))),
            _ => LevelOp::PollOne(u64::from(u8::arbitrary(g) % 40)),
        }
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Self>> {
        match self {
            LevelOp::Op(op) => Box::new(op.shrink().map(LevelOp::Op)),
            LevelOp::PollOne(step) => Box::new(step.shrink().map(LevelOp::PollOne)),
        }
    }
}

/// Runs `ops` on a wheel of 1-16 fine and 1-8 coarse slots (an epoch of at most 128 ticks,
/// so entries pass through the overflow list and both levels) against the model: entries
/// must come out exactly in (tick, insertion) order, at their tick, and every entry must
/// sit in the list its distance calls for.
fn cascades_like_a_sorted_list(slots: u8, coarse: u8, ops: Vec<LevelOp>) -> Result<(), String> {
    let tick = ms(2);
    let start = Instant::now();
    let fine = usize::from(slots % 16) + 1;
    let mut wheel = TimerWheel::with_levels(start, tick, fine, usize::from(coarse % 8) + 1);
    let mut now = start;
    let mut model = Model::new(start, tick);
    for op in ops {
        match op {
            LevelOp::Op(Op::Insert(offset)) => {
                model.insert(&mut wheel, now, offset);
            }
            LevelOp::Op(Op::Cancel(pick)) => model.cancel(&mut wheel, pick)?,
            LevelOp::Op(Op::Advance(step)) => {
                now += ms(step);
                let fired = drain(&mut wheel, now);
                let expected = model.take_due(now);
                if fired != expected {
                    return Err(format!(
                        "at {now:?}: wheel fired {fired:?}, model {expected:?}"
                    ));
                }
            }
            LevelOp::PollOne(step) => {
                now += ms(step);
                let got = wheel.poll_expired(now);
                model.live.sort_unstable();
                let expected = match model.live.first() {
                    Some(&(when, id)) if when <= now => {
                        model.live.remove(0);
                        Some(id)
                    }
                    _ => None,
                };
                if got != expected {
                    return Err(format!("at {now:?}: polled {got:?}, model {expected:?}"));
                }
            }
        }
        model.check(&wheel)?;
        check_levels(&wheel)?;
    }
    Ok(())
}

#[test]
fn quickcheck_cascading_across_levels() {
    QuickCheck::new()
        .tests(400)
        .quickcheck(cascades_like_a_sorted_list as fn(u8, u8, Vec<LevelOp>) -> Result<(), String>);
}

/// Drives `wheel` like the server loop (sleep to `next_deadline`, then drain) for
/// `revolutions` revolutions of `slot_count` 1 ms ticks, with 1,000 timers re-armed 2 to 60
/// revolutions ahead whenever they fire (idle timeouts). Returns (wake-ups that found nothing
/// due, timers fired); panics if one fires early or more than a tick late.
fn driver_wakeups(mut wheel: TimerWheel<usize>, slot_count: u64, revolutions: u64) -> (u64, u64) {
    let start = wheel.start;
    let revolution = slot_count;
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut far_off = |now: Instant| {
        // xorshift64: a fixed, evenly spread sequence of distances.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        now + ms(2 * revolution + seed % (58 * revolution))
    };
    let mut deadlines: Vec<Instant> = (0..1000).map(|_| far_off(start)).collect();
    for (id, &deadline) in deadlines.iter().enumerate() {
        wheel.insert(deadline, id);
    }
    let end = start + ms(revolutions * revolution);
    let (mut empty, mut fired) = (0, 0);
    while let Some(now) = wheel.next_deadline().filter(|&next| next <= end) {
        let mut found = false;
        while let Some(id) = wheel.poll_expired(now) {
            let deadline = deadlines[id];
            assert!(
                deadline <= now && now < deadline + ms(1),
                "timer {id} fired at {now:?}"
            );
            deadlines[id] = far_off(now);
            wheel.insert(deadlines[id], id);
            found = true;
            fired += 1;
        }
        empty += u64::from(!found);
    }
    (empty, fired)
}

/// Far-off timers cost at most a wake-up or two per revolution, not one per occupied slot
/// (a one-level wheel of 256 slots woke about 250 times per revolution here).
#[test]
fn far_timers_cost_few_empty_wakeups() {
    let start = Instant::now();
    let revolutions = 300;
    for coarse in [COARSE_SLOTS, 4] {
        let wheel = TimerWheel::with_levels(start, ms(1), 256, coarse);
        let (empty, fired) = driver_wakeups(wheel, 256, revolutions);
        // Each timer fires every 31 revolutions on average: thousands of firings in all.
        assert!(fired > 5_000, "only {fired} timers fired");
        assert!(
            empty <= 2 * revolutions,
            "{empty} empty wake-ups in {revolutions} revolutions ({coarse} coarse slots)"
        );
    }
}
