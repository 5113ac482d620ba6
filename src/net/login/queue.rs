//! The order in which password checks wait for the login worker: fair per source address,
//! with the addresses that signed in lately first. Sans-IO (time is passed in); the driver's
//! login bridge (`crate::net::login`) feeds the worker one check at a time from here.
//!
//! Why: a check costs 20-50 ms of the worker, so a crowd of addresses each within its
//! failed-check budget could keep a first-come-first-served queue full and the account's owner
//! would wait seconds or be told "try again". Here:
//!
//! - each source address has at most [`CHECKS_PER_ADDRESS`] checks waiting or running; more are
//!   refused at once (it is the address's own crowd that waits, not everyone's);
//! - addresses take turns (round robin): one check per address per turn, however many it has
//!   waiting;
//! - turns go by [`Standing`] first: addresses with a recent successful sign-in
//!   ([`Standing::Trusted`]), then addresses never seen or with nothing against them
//!   ([`Standing::New`]), then addresses whose checks were refused for waiting too long
//!   ([`Standing::Waited`]: a crowd that arrives at once is not served before a newcomer), then
//!   addresses that have only been failing ([`Standing::Failing`]);
//! - at most [`MAX_QUEUED_CHECKS`] checks wait at once; past it a newcomer of a better
//!   standing displaces the newest check of the worst standing, otherwise it is refused;
//! - a check that waited [`MAX_WAIT`] is answered "busy" without running (its client's sign-in
//!   deadline is near; running it would only delay the others).
//!
//! Memory is bounded: the queue by [`MAX_QUEUED_CHECKS`] jobs, the address history
//! ([`AddressBook`]) by [`ADDRESS_TABLE`] addresses, the oldest forgotten first.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Checks one source address may have waiting or running at once. Two, not one, so that a few
/// users behind one NAT address do not wait for each other's checks to finish.
pub const CHECKS_PER_ADDRESS: usize = 2;
/// Checks waiting at once (per front end): at 20-50 ms each far more than clients would
/// wait for, so under a flood it is [`MAX_WAIT`] and the standings that decide who runs.
pub const MAX_QUEUED_CHECKS: usize = 1024;
/// How long a check may wait for the worker before it is answered "busy" without running:
/// under the 5 s sign-in deadline, with room for the check itself and the answer.
pub const MAX_WAIT: Duration = Duration::from_secs(3);
/// Source addresses whose sign-in history is remembered (the least recently changed is
/// forgotten first; a forgotten address is [`Standing::New`] again).
pub const ADDRESS_TABLE: usize = 16_384;
/// How long a successful sign-in keeps its address [`Standing::Trusted`].
pub const TRUSTED_FOR: Duration = Duration::from_secs(15 * 60);
/// Failed checks since its last success after which an address is no longer trusted (an
/// account of one's own does not buy a fast lane for guessing).
pub const TRUST_LOST_AFTER: u32 = 3;

/// Where an address's checks stand in the queue, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Standing {
    /// Signed in successfully within [`TRUSTED_FOR`], failing fewer than
    /// [`TRUST_LOST_AFTER`] times since.
    Trusted = 0,
    /// Unknown, forgotten, or with no failed or expired check on record.
    New = 1,
    /// Checks that waited [`MAX_WAIT`] on record, no failed one.
    Waited = 2,
    /// Failed checks on record and no recent success.
    Failing = 3,
}

const STANDINGS: usize = 4;

#[derive(Debug)]
struct History {
    /// Position in [`AddressBook::order`].
    stamp: u64,
    last_success: Option<Instant>,
    failures_since_success: u32,
    expired_since_success: u32,
}

/// Each source address's recent sign-in history, at most [`ADDRESS_TABLE`] of them.
#[derive(Debug)]
pub struct AddressBook {
    entries: HashMap<IpAddr, History>,
    /// Addresses by the stamp of their last change, oldest first.
    order: BTreeMap<u64, IpAddr>,
    next_stamp: u64,
    max: usize,
    forgotten: u64,
}

impl AddressBook {
    /// A book of at most `max` addresses.
    pub fn new(max: usize) -> AddressBook {
        AddressBook {
            entries: HashMap::new(),
            order: BTreeMap::new(),
            next_stamp: 0,
            max: max.max(1),
            forgotten: 0,
        }
    }

    /// `ip`'s standing at `now`.
    pub fn standing(&self, now: Instant, ip: IpAddr) -> Standing {
        let Some(h) = self.entries.get(&ip) else {
            return Standing::New;
        };
        let recent = h
            .last_success
            .is_some_and(|at| now.saturating_duration_since(at) < TRUSTED_FOR);
        match (recent, h.failures_since_success, h.expired_since_success) {
            (true, n, _) if n < TRUST_LOST_AFTER => Standing::Trusted,
            (_, 0, 0) => Standing::New,
            (_, 0, _) => Standing::Waited,
            _ => Standing::Failing,
        }
    }

    /// A check from `ip` found the password right.
    pub fn succeeded(&mut self, now: Instant, ip: IpAddr) {
        let h = self.touch(ip);
        h.last_success = Some(now);
        h.failures_since_success = 0;
        h.expired_since_success = 0;
    }

    /// A check from `ip` waited [`MAX_WAIT`] and was not run.
    pub fn expired(&mut self, ip: IpAddr) {
        let h = self.touch(ip);
        h.expired_since_success = h.expired_since_success.saturating_add(1);
    }

    /// A check from `ip` found the password wrong.
    pub fn failed(&mut self, ip: IpAddr) {
        let h = self.touch(ip);
        h.failures_since_success = h.failures_since_success.saturating_add(1);
    }

    /// Addresses remembered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no address is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Addresses forgotten to make room, since the start.
    pub fn forgotten(&self) -> u64 {
        self.forgotten
    }

    /// `ip`'s entry, made the most recent (and created, forgetting the oldest if full).
    fn touch(&mut self, ip: IpAddr) -> &mut History {
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        if let Some(old) = self.entries.get(&ip).map(|h| h.stamp) {
            self.order.remove(&old);
        } else if self.entries.len() >= self.max {
            if let Some((_, oldest)) = self.order.pop_first() {
                self.entries.remove(&oldest);
                self.forgotten += 1;
            }
        }
        self.order.insert(stamp, ip);
        let h = self.entries.entry(ip).or_insert(History {
            stamp,
            last_success: None,
            failures_since_success: 0,
            expired_since_success: 0,
        });
        h.stamp = stamp;
        h
    }
}

/// Why a check was not queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Its address has [`CHECKS_PER_ADDRESS`] waiting or running.
    PerAddress,
    /// [`MAX_QUEUED_CHECKS`] wait, none of a worse standing.
    Full,
}

/// What [`FairQueue::push`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Pushed<J> {
    /// Queued.
    Queued,
    /// Queued in place of this check (of a worse standing), which must be answered "busy".
    Displaced(J),
    /// Not queued: the check is handed back.
    Refused(Refused, J),
}

#[derive(Debug)]
struct Waiting<J> {
    at: Instant,
    ip: IpAddr,
    job: J,
}

#[derive(Debug)]
struct Address {
    /// The standing whose turn order it is in (while it has checks waiting).
    standing: Standing,
    /// Its waiting checks, by sequence number, oldest first.
    waiting: VecDeque<u64>,
    running: usize,
}

/// Password checks waiting for the worker, served round robin across source addresses and
/// by [`Standing`].
#[derive(Debug)]
pub struct FairQueue<J> {
    /// Every waiting check by sequence number (= arrival order, so the oldest expire first).
    jobs: BTreeMap<u64, Waiting<J>>,
    next_seq: u64,
    /// Addresses with checks waiting or running.
    addresses: HashMap<IpAddr, Address>,
    /// Per standing, the addresses with checks waiting, in turn order.
    turns: [VecDeque<IpAddr>; STANDINGS],
    max_queued: usize,
}

impl<J> FairQueue<J> {
    /// A queue of at most `max_queued` waiting checks.
    pub fn new(max_queued: usize) -> FairQueue<J> {
        FairQueue {
            jobs: BTreeMap::new(),
            next_seq: 0,
            addresses: HashMap::new(),
            turns: Default::default(),
            max_queued: max_queued.max(1),
        }
    }

    /// Checks waiting (not running).
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// True when no check waits.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Addresses with checks waiting or running.
    pub fn addresses(&self) -> usize {
        self.addresses.len()
    }

    /// Queues `job` from `ip`, whose standing is `standing`, at `now`.
    pub fn push(&mut self, now: Instant, ip: IpAddr, standing: Standing, job: J) -> Pushed<J> {
        if let Some(a) = self.addresses.get(&ip) {
            if a.waiting.len() + a.running >= CHECKS_PER_ADDRESS {
                return Pushed::Refused(Refused::PerAddress, job);
            }
        }
        let mut displaced = None;
        if self.jobs.len() >= self.max_queued {
            match self.displace_worse_than(standing) {
                Some(old) => displaced = Some(old),
                None => return Pushed::Refused(Refused::Full, job),
            }
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.jobs.insert(seq, Waiting { at: now, ip, job });
        let a = self.addresses.entry(ip).or_insert(Address {
            standing,
            waiting: VecDeque::new(),
            running: 0,
        });
        if a.waiting.is_empty() {
            // Not in a turn order yet (an address is in one exactly while it has waiting
            // checks): join at the back of its standing's.
            self.turns[standing as usize].push_back(ip);
        } else if a.standing != standing {
            // Its standing changed (a first failure, a success) while it kept checks waiting:
            // it moves to the back of its new standing's turns, or it would keep its old
            // place for as long as it keeps the queue busy.
            self.turns[a.standing as usize].retain(|&other| other != ip);
            self.turns[standing as usize].push_back(ip);
        }
        a.standing = standing;
        a.waiting.push_back(seq);
        match displaced {
            Some(old) => Pushed::Displaced(old),
            None => Pushed::Queued,
        }
    }

    /// The next check to run: the next address's turn in the best standing that has one. It
    /// counts as running for its address until [`FairQueue::finished`].
    pub fn pop(&mut self) -> Option<(IpAddr, J)> {
        let turns = self.turns.iter_mut().find(|t| !t.is_empty())?;
        let ip = turns.pop_front()?;
        let a = self.addresses.get_mut(&ip)?;
        let seq = a.waiting.pop_front()?;
        a.running += 1;
        if !a.waiting.is_empty() {
            turns.push_back(ip);
        }
        let w = self.jobs.remove(&seq)?;
        Some((w.ip, w.job))
    }

    /// A check from `ip` handed out by [`FairQueue::pop`] is done.
    pub fn finished(&mut self, ip: IpAddr) {
        if let Some(a) = self.addresses.get_mut(&ip) {
            a.running = a.running.saturating_sub(1);
            if a.running == 0 && a.waiting.is_empty() {
                self.addresses.remove(&ip);
            }
        }
    }

    /// Takes every check that has waited [`MAX_WAIT`] by `now`, oldest first, into `out`.
    pub fn expire(&mut self, now: Instant, out: &mut Vec<J>) {
        let mut emptied = false;
        while let Some(entry) = self.jobs.first_entry() {
            if now.saturating_duration_since(entry.get().at) < MAX_WAIT {
                break;
            }
            let seq = *entry.key();
            let w = entry.remove();
            emptied |= self.unlist(w.ip, seq);
            out.push(w.job);
        }
        if emptied {
            self.drop_idle_turns();
        }
    }

    /// Removes the newest waiting check of the worst standing below `standing`, if any.
    fn displace_worse_than(&mut self, standing: Standing) -> Option<J> {
        let worst = (standing as usize + 1..STANDINGS)
            .rev()
            .find(|&s| !self.turns[s].is_empty())?;
        let ip = *self.turns[worst].back()?;
        let seq = *self.addresses.get(&ip)?.waiting.back()?;
        let w = self.jobs.remove(&seq)?;
        if self.unlist(ip, seq) {
            self.turns[worst].pop_back();
        }
        Some(w.job)
    }

    /// Takes `seq` off `ip`'s waiting list; true when that left the address nothing waiting
    /// (the caller takes it out of its turn order).
    fn unlist(&mut self, ip: IpAddr, seq: u64) -> bool {
        let Some(a) = self.addresses.get_mut(&ip) else {
            return false;
        };
        a.waiting.retain(|&s| s != seq);
        if !a.waiting.is_empty() {
            return false;
        }
        if a.running == 0 {
            self.addresses.remove(&ip);
        }
        true
    }

    /// Takes the addresses with nothing waiting out of the turn orders.
    fn drop_idle_turns(&mut self) {
        let addresses = &self.addresses;
        for turns in &mut self.turns {
            turns.retain(|ip| addresses.get(ip).is_some_and(|a| !a.waiting.is_empty()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn ip(n: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(0x7f00_0000 + n))
    }

    fn drain(q: &mut FairQueue<u32>) -> Vec<u32> {
        let mut order = Vec::new();
        while let Some((from, job)) = q.pop() {
            q.finished(from);
            order.push(job);
        }
        order
    }

    #[test]
    fn addresses_take_turns_and_each_has_at_most_its_share() {
        let now = Instant::now();
        let mut q = FairQueue::new(64);
        // Address 1 sends three, address 2 two, address 3 one.
        assert_eq!(q.push(now, ip(1), Standing::New, 10), Pushed::Queued);
        assert_eq!(q.push(now, ip(1), Standing::New, 11), Pushed::Queued);
        assert_eq!(
            q.push(now, ip(1), Standing::New, 12),
            Pushed::Refused(Refused::PerAddress, 12)
        );
        assert_eq!(q.push(now, ip(2), Standing::New, 20), Pushed::Queued);
        assert_eq!(q.push(now, ip(2), Standing::New, 21), Pushed::Queued);
        assert_eq!(q.push(now, ip(3), Standing::New, 30), Pushed::Queued);
        assert_eq!(drain(&mut q), vec![10, 20, 30, 11, 21]);
        assert_eq!((q.len(), q.addresses()), (0, 0));
    }

    #[test]
    fn a_running_check_counts_against_its_address_until_finished() {
        let now = Instant::now();
        let mut q = FairQueue::new(64);
        assert_eq!(q.push(now, ip(1), Standing::New, 1), Pushed::Queued);
        let (from, job) = q.pop().expect("a check");
        assert_eq!((from, job), (ip(1), 1));
        assert_eq!(q.push(now, ip(1), Standing::New, 2), Pushed::Queued);
        assert_eq!(
            q.push(now, ip(1), Standing::New, 3),
            Pushed::Refused(Refused::PerAddress, 3)
        );
        q.finished(ip(1));
        assert_eq!(q.push(now, ip(1), Standing::New, 3), Pushed::Queued);
        assert_eq!(drain(&mut q), vec![2, 3]);
    }

    #[test]
    fn trusted_addresses_go_first_then_new_then_failing() {
        let now = Instant::now();
        let mut q = FairQueue::new(64);
        for n in 0..5 {
            q.push(now, ip(100 + n), Standing::Failing, 100 + n);
        }
        q.push(now, ip(60), Standing::Waited, 60);
        q.push(now, ip(50), Standing::New, 50);
        q.push(now, ip(7), Standing::Trusted, 7);
        assert_eq!(drain(&mut q), vec![7, 50, 60, 100, 101, 102, 103, 104]);
    }

    #[test]
    fn an_address_that_keeps_checks_waiting_moves_when_its_standing_changes() {
        let now = Instant::now();
        let mut q = FairQueue::new(64);
        q.push(now, ip(1), Standing::New, 10);
        q.push(now, ip(1), Standing::New, 11);
        q.push(now, ip(2), Standing::New, 20);
        let (from, job) = q.pop().expect("a check");
        assert_eq!((from, job), (ip(1), 10));
        q.finished(from);
        // Its first check failed; its next one arrives while 11 still waits.
        q.push(now, ip(1), Standing::Failing, 12);
        q.push(now, ip(3), Standing::New, 30);
        assert_eq!(drain(&mut q), vec![20, 30, 11, 12]);
    }

    #[test]
    fn a_full_queue_displaces_the_worst_standing_or_refuses() {
        let now = Instant::now();
        let mut q = FairQueue::new(3);
        q.push(now, ip(1), Standing::Failing, 1);
        q.push(now, ip(2), Standing::Failing, 2);
        q.push(now, ip(3), Standing::New, 3);
        // Another failing address finds no one worse.
        assert_eq!(
            q.push(now, ip(4), Standing::Failing, 4),
            Pushed::Refused(Refused::Full, 4)
        );
        // A trusted one takes the newest failing check's place.
        assert_eq!(
            q.push(now, ip(5), Standing::Trusted, 5),
            Pushed::Displaced(2)
        );
        assert_eq!(q.push(now, ip(6), Standing::New, 6), Pushed::Displaced(1));
        assert_eq!(
            q.push(now, ip(7), Standing::New, 7),
            Pushed::Refused(Refused::Full, 7)
        );
        assert_eq!(drain(&mut q), vec![5, 3, 6]);
        assert_eq!(q.addresses(), 0, "displaced addresses are forgotten");
    }

    #[test]
    fn checks_that_waited_too_long_are_taken_out_oldest_first() {
        let start = Instant::now();
        let mut q = FairQueue::new(64);
        q.push(start, ip(1), Standing::Failing, 1);
        q.push(start, ip(2), Standing::Failing, 2);
        q.push(start + Duration::from_secs(1), ip(1), Standing::Failing, 3);
        q.push(start + Duration::from_secs(2), ip(3), Standing::New, 4);
        let mut out = Vec::new();
        q.expire(start + MAX_WAIT - Duration::from_millis(1), &mut out);
        assert!(out.is_empty());
        q.expire(start + MAX_WAIT, &mut out);
        assert_eq!(out, vec![1, 2]);
        // Address 1 keeps its later check, address 2 is gone from the turns.
        assert_eq!(q.addresses(), 2);
        assert_eq!(drain(&mut q), vec![4, 3]);
    }

    #[test]
    fn the_address_book_ranks_and_forgets_the_oldest() {
        let now = Instant::now();
        let mut book = AddressBook::new(3);
        assert_eq!(book.standing(now, ip(1)), Standing::New);
        book.failed(ip(1));
        assert_eq!(book.standing(now, ip(1)), Standing::Failing);
        book.succeeded(now, ip(1));
        assert_eq!(book.standing(now, ip(1)), Standing::Trusted);
        assert_eq!(
            book.standing(now + TRUSTED_FOR, ip(1)),
            Standing::New,
            "an old success with no failure since"
        );
        for _ in 0..TRUST_LOST_AFTER {
            book.failed(ip(1));
        }
        assert_eq!(book.standing(now, ip(1)), Standing::Failing);
        // A check that only waited too long ranks behind newcomers, ahead of failures.
        book.expired(ip(5));
        assert_eq!(book.standing(now, ip(5)), Standing::Waited);
        book.failed(ip(5));
        assert_eq!(book.standing(now, ip(5)), Standing::Failing);
        book.succeeded(now, ip(5));
        assert_eq!(book.standing(now, ip(5)), Standing::Trusted);
        let mut book = AddressBook::new(3);
        // Bounded: a fourth address forgets the least recently changed.
        book.failed(ip(2));
        book.failed(ip(3));
        book.failed(ip(1));
        book.failed(ip(4));
        assert_eq!(book.len(), 3);
        assert_eq!(book.forgotten(), 1);
        assert_eq!(book.standing(now, ip(2)), Standing::New, "forgotten");
        assert_eq!(book.standing(now, ip(1)), Standing::Failing);
    }

    #[test]
    fn the_queue_stays_bounded_under_a_crowd() {
        let start = Instant::now();
        let mut q = FairQueue::new(100);
        let mut expired = Vec::new();
        for round in 0..50u32 {
            let now = start + Duration::from_millis(u64::from(round) * 500);
            for n in 0..1000u32 {
                let _ = q.push(now, ip(n), Standing::Failing, n);
            }
            if let Some((from, _)) = q.pop() {
                q.finished(from);
            }
            q.expire(now, &mut expired);
            assert!(q.len() <= 100 && q.addresses() <= 101);
            assert!(q.turns.iter().map(VecDeque::len).sum::<usize>() <= 100);
        }
        assert!(!expired.is_empty());
    }
}
