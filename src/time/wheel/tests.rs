//! Unit and model tests for [`TimerWheel`](super::TimerWheel): the firing contract of the
//! module documentation, checked case by case and against a naive list under quickcheck.

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

/// Runs `ops` against the wheel and against a plain list of (firing time, id).
fn matches_naive_model(tick_ms: u8, slots: u8, ops: Vec<Op>) -> Result<(), String> {
    let tick = ms(u64::from(tick_ms % 13) + 1);
    let start = Instant::now();
    let mut wheel = TimerWheel::new(start, tick, usize::from(slots % 70) + 1);
    // The naive firing time: the deadline rounded up to a tick boundary, `start` at least.
    let firing_time = |deadline: Instant| {
        let since = deadline.saturating_duration_since(start);
        let ticks = since.as_nanos().div_ceil(tick.as_nanos());
        start + tick * u32::try_from(ticks).unwrap_or(u32::MAX)
    };
    let mut now = start;
    let mut model: Vec<(Instant, usize)> = Vec::new();
    let mut firing_of: HashMap<usize, Instant> = HashMap::new();
    let mut keys: Vec<(TimerKey, usize)> = Vec::new();
    for op in ops {
        match op {
            Op::Insert(offset) => {
                let magnitude = ms(offset.unsigned_abs());
                let deadline = if offset < 0 {
                    now.checked_sub(magnitude).unwrap_or(now)
                } else {
                    now + magnitude
                };
                let id = keys.len();
                keys.push((wheel.insert(deadline, id), id));
                model.push((firing_time(deadline), id));
                firing_of.insert(id, firing_time(deadline));
            }
            Op::Cancel(pick) => {
                if keys.is_empty() {
                    continue;
                }
                let (key, id) = keys[pick % keys.len()];
                let expected = model.iter().position(|&(_, live)| live == id).map(|at| {
                    model.remove(at);
                    id
                });
                let got = wheel.cancel(key);
                if got != expected {
                    return Err(format!("cancel({id}): wheel {got:?}, model {expected:?}"));
                }
            }
            Op::Advance(step) => {
                now += ms(step);
                let fired = drain(&mut wheel, now);
                let times: Vec<Instant> = fired.iter().map(|id| firing_of[id]).collect();
                if times.windows(2).any(|pair| pair[0] > pair[1]) {
                    return Err(format!("fired out of tick order: {fired:?}"));
                }
                let mut expected: Vec<usize> = model
                    .iter()
                    .filter(|&&(when, _)| when <= now)
                    .map(|&(_, id)| id)
                    .collect();
                model.retain(|&(when, _)| when > now);
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
        if wheel.len() != model.len() {
            return Err(format!("len {} vs model {}", wheel.len(), model.len()));
        }
        let earliest = model.iter().map(|&(when, _)| when).min();
        match (wheel.next_deadline(), earliest) {
            (None, None) => {}
            (Some(next), Some(earliest)) if next <= earliest => {}
            (next, earliest) => {
                return Err(format!(
                    "next_deadline {next:?}, model earliest {earliest:?}"
                ))
            }
        }
    }
    Ok(())
}

#[test]
fn quickcheck_against_naive_model() {
    QuickCheck::new()
        .tests(400)
        .quickcheck(matches_naive_model as fn(u8, u8, Vec<Op>) -> Result<(), String>);
}
