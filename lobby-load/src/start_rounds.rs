//! `tcp-cycle --spread MS`: when each party's START_REQ goes out.
//!
//! Parties start in *rounds*. A party whose members are all in and ready holds; once every
//! party of the run holds (or the first has held for `--timeout`, so a party that cannot
//! fill does not stall the rest), the round is released and each waiting party is given a
//! start time drawn uniformly from `[release, release + spread)`. So with `--spread 1000`
//! the parties' countdowns run at random phases over one second, and with `--spread 0` they
//! all start at the same instant (their START_REQs written back to back). A party that ends
//! its cycle comes back for the next round.
//!
//! Pure bookkeeping: it reads no clock and writes no socket; the script asks it who is due.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// The start schedule of every party of a `tcp-cycle --spread` run.
#[derive(Debug)]
pub struct StartRounds {
    spread: Duration,
    /// Parties in the run: a round is complete when this many starters wait.
    parties: usize,
    /// Longest wait for a round to fill.
    timeout: Duration,
    /// Starters (client indices) whose party is complete, waiting for the round.
    waiting: Vec<usize>,
    /// When the first of `waiting` began to wait.
    opened: Option<Instant>,
    /// Scheduled starts, earliest first.
    scheduled: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Each client's scheduled start, so a stale heap entry (the client's cycle ended in
    /// between) is told from a live one.
    start_at: Vec<Option<Instant>>,
    rounds: u64,
}

impl StartRounds {
    /// The schedule for `clients` clients in parties of `members`.
    pub fn new(spread: Duration, clients: usize, members: usize, timeout: Duration) -> StartRounds {
        StartRounds {
            spread,
            parties: (clients / members.max(1)).max(1),
            timeout,
            waiting: Vec::new(),
            opened: None,
            scheduled: BinaryHeap::new(),
            start_at: vec![None; clients],
            rounds: 0,
        }
    }

    /// Starter `i`'s party is complete and ready at `now`: it waits for the round.
    pub fn wait(&mut self, i: usize, now: Instant) {
        if !self.waiting.contains(&i) {
            self.waiting.push(i);
            self.opened.get_or_insert(now);
        }
    }

    /// Client `i`'s cycle ended: it no longer waits and nothing is scheduled for it.
    pub fn forget(&mut self, i: usize) {
        self.waiting.retain(|&j| j != i);
        if self.waiting.is_empty() {
            self.opened = None;
        }
        if let Some(at) = self.start_at.get_mut(i) {
            *at = None;
        }
    }

    /// When [`StartRounds::due`] must run next.
    pub fn next_wake(&self) -> Option<Instant> {
        let release = self.opened.map(|at| at + self.timeout);
        let start = self.scheduled.peek().map(|Reverse((at, _))| *at);
        release.into_iter().chain(start).min()
    }

    /// Releases the round if it is complete (or timed out) and pushes into `due` every
    /// starter whose start time has come.
    pub fn due(&mut self, now: Instant, due: &mut Vec<usize>) {
        let timed_out = self.opened.is_some_and(|at| now >= at + self.timeout);
        if !self.waiting.is_empty() && (self.waiting.len() >= self.parties || timed_out) {
            self.release(now);
        }
        while let Some(&Reverse((at, i))) = self.scheduled.peek() {
            if at > now {
                break;
            }
            self.scheduled.pop();
            if let Some(slot) = self.start_at.get_mut(i) {
                if *slot == Some(at) {
                    *slot = None;
                    due.push(i);
                }
            }
        }
    }

    /// Rounds released so far.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    fn release(&mut self, now: Instant) {
        self.rounds += 1;
        self.opened = None;
        let spread_nanos = u64::try_from(self.spread.as_nanos()).unwrap_or(u64::MAX);
        for i in std::mem::take(&mut self.waiting) {
            // One `getrandom` per party per round: cheap next to the party's connections.
            let offset = match spread_nanos {
                0 => 0,
                n => getrandom::u64().unwrap_or(0) % n,
            };
            let at = now + Duration::from_nanos(offset);
            if let Some(slot) = self.start_at.get_mut(i) {
                *slot = Some(at);
                self.scheduled.push(Reverse((at, i)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Every start `due` hands out up to `until`, in order, as (client, time).
    fn drain(rounds: &mut StartRounds, from: Instant, until: Instant) -> Vec<(usize, Instant)> {
        let mut out = Vec::new();
        let mut due = Vec::new();
        let mut now = from;
        while now <= until {
            rounds.due(now, &mut due);
            out.extend(due.drain(..).map(|i| (i, now)));
            now += Duration::from_micros(100);
        }
        out
    }

    #[test]
    fn a_full_round_starts_every_party_within_the_spread() {
        let t0 = Instant::now();
        let mut rounds = StartRounds::new(ms(1000), 400, 4, ms(5000));
        for party in 0..100 {
            rounds.wait(party * 4, t0 + ms(party as u64));
            assert_eq!(rounds.rounds(), 0);
        }
        let released = t0 + ms(99);
        let started = drain(&mut rounds, released, released + ms(1000));
        assert_eq!(rounds.rounds(), 1);
        assert_eq!(started.len(), 100, "each party once");
        let mut clients: Vec<usize> = started.iter().map(|&(i, _)| i).collect();
        clients.sort_unstable();
        assert_eq!(clients, (0..100).map(|p| p * 4).collect::<Vec<_>>());
        let offsets: Vec<Duration> = started.iter().map(|&(_, at)| at - released).collect();
        assert!(offsets.iter().all(|&d| d <= ms(1000)));
        // Random phases, not one instant: the starts cover most of the second.
        let first = offsets.iter().min().copied().unwrap_or_default();
        let last = offsets.iter().max().copied().unwrap_or_default();
        assert!(last - first > ms(500), "{first:?}..{last:?}");
        assert_eq!(rounds.next_wake(), None);
    }

    #[test]
    fn no_spread_starts_every_party_at_the_release() {
        let t0 = Instant::now();
        let mut rounds = StartRounds::new(Duration::ZERO, 8, 4, ms(5000));
        rounds.wait(0, t0);
        let mut due = Vec::new();
        rounds.due(t0 + ms(3), &mut due);
        assert!(due.is_empty(), "one party of two waits");
        rounds.wait(4, t0 + ms(5));
        rounds.due(t0 + ms(5), &mut due);
        due.sort_unstable();
        assert_eq!(due, vec![0, 4]);
    }

    #[test]
    fn a_round_that_cannot_fill_is_released_at_the_timeout() {
        let t0 = Instant::now();
        let mut rounds = StartRounds::new(Duration::ZERO, 12, 4, ms(200));
        rounds.wait(0, t0);
        rounds.wait(4, t0 + ms(50));
        assert_eq!(rounds.next_wake(), Some(t0 + ms(200)));
        let mut due = Vec::new();
        rounds.due(t0 + ms(199), &mut due);
        assert!(due.is_empty());
        rounds.due(t0 + ms(200), &mut due);
        assert_eq!(due.len(), 2);
    }

    #[test]
    fn a_client_that_left_is_not_started() {
        let t0 = Instant::now();
        let mut rounds = StartRounds::new(ms(100), 8, 4, ms(5000));
        rounds.wait(0, t0);
        rounds.wait(4, t0);
        let mut due = Vec::new();
        rounds.due(t0, &mut due);
        rounds.forget(4);
        let started = drain(&mut rounds, t0, t0 + ms(100));
        let started: Vec<usize> = due
            .into_iter()
            .chain(started.iter().map(|&(i, _)| i))
            .collect();
        assert_eq!(started, vec![0]);
        // Forgotten while waiting: the round no longer counts it.
        rounds.wait(0, t0 + ms(200));
        rounds.forget(0);
        assert_eq!(rounds.next_wake(), None);
    }
}
