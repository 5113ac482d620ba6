//! Integer token buckets and a bounded per-source-IP limiter table.
//!
//! The UDP lobby gives every source IP a request bucket and a reply-bytes bucket, so a
//! spoofed source cannot turn lobbyd into a reflection amplifier; the TCP lobby caps new
//! connections per IP per minute; the master server limits announcements the same way.
//!
//! Contract:
//! - Pure and sans-IO: the current time is always passed in, nothing reads the clock.
//! - Integer arithmetic only. Refill keeps the sub-token remainder, so over any sequence of
//!   steps the tokens minted equal `floor(rate * elapsed / per)` exactly (until the bucket
//!   fills, which discards the excess). Intermediates are `u128` with saturating operations:
//!   rates up to 10^9 per second and bursts up to 10^12 cannot overflow.
//! - A `now` earlier than the last one seen neither panics nor mints tokens.
//! - [`PerIpLimiter`] tracks at most `max_entries` addresses whatever the traffic, evicting
//!   the oldest-inserted one in O(1); it uses std's `HashMap` with its randomly keyed hasher
//!   so a peer cannot choose addresses that collide.
//!
//! What it must not do: allocate per request beyond the bounded table, or panic on any input.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::capacity::shrink_spare;

/// Integer token bucket (no floats): `rate` tokens per `per` duration, capacity `burst`.
///
/// Tokens accrue continuously; the fraction of a token earned so far is kept as a remainder
/// in token-nanoseconds, so many small steps mint exactly as much as one large one.
#[derive(Clone, Copy, Debug)]
pub struct TokenBucket {
    tokens: u64,
    burst: u64,
    rate: u64,
    /// The refill period in nanoseconds (at least 1; a period past 584 years saturates).
    per_nanos: u64,
    /// Accrued credit below one whole token, in token-nanoseconds (`< per_nanos`, so it fits
    /// a `u64` too: a bucket is 56 bytes, and every member and connection holds one).
    carry: u64,
    last: Instant,
}

impl TokenBucket {
    /// Creates a full bucket refilling `rate` tokens every `per`, holding at most `burst`.
    ///
    /// A zero `per` is treated as one nanosecond; a zero `rate` never refills.
    pub fn new(now: Instant, rate: u64, per: Duration, burst: u64) -> Self {
        TokenBucket {
            tokens: burst,
            burst,
            rate,
            per_nanos: u64::try_from(per.as_nanos()).unwrap_or(u64::MAX).max(1),
            carry: 0,
            last: now,
        }
    }

    /// Refills for the time elapsed since the last call, then takes `n` tokens if that many
    /// are available. Returns whether they were taken; on `false` nothing is taken.
    pub fn try_take(&mut self, now: Instant, n: u64) -> bool {
        self.refill(now);
        match self.tokens.checked_sub(n) {
            Some(left) => {
                self.tokens = left;
                true
            }
            None => false,
        }
    }

    /// Refills for the time elapsed since the last call and returns the tokens available.
    pub fn available(&mut self, now: Instant) -> u64 {
        self.refill(now);
        self.tokens
    }

    /// Refills, then tells whether the bucket is full: in the same state as a new one.
    pub fn is_full(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.tokens >= self.burst
    }

    fn refill(&mut self, now: Instant) {
        // Time going backwards: keep `last` where it is, so the same stretch of time is not
        // credited twice once the clock catches up again.
        let Some(elapsed) = now.checked_duration_since(self.last) else {
            return;
        };
        self.last = now;
        let room = self.burst.saturating_sub(self.tokens);
        if room == 0 {
            // A full bucket earns nothing; credit accrued while full must not carry over.
            self.carry = 0;
            return;
        }
        let credit = elapsed
            .as_nanos()
            .saturating_mul(u128::from(self.rate))
            .saturating_add(u128::from(self.carry));
        let per_nanos = u128::from(self.per_nanos);
        let minted = credit / per_nanos;
        match u64::try_from(minted) {
            Ok(minted) if minted < room => {
                self.tokens += minted;
                // Below `per_nanos`, itself a u64.
                self.carry = u64::try_from(credit % per_nanos).unwrap_or(0);
            }
            _ => {
                self.tokens = self.burst;
                self.carry = 0;
            }
        }
    }
}

/// Limits for [`PerIpLimiter`].
#[derive(Clone, Copy, Debug)]
pub struct PerIpConfig {
    /// Requests refilled every `per`.
    pub rate: u64,
    /// The refill period of `rate`.
    pub per: Duration,
    /// Most requests an IP may send back to back.
    pub burst: u64,
    /// Reply bytes refilled per second; 0 disables the byte limit.
    pub byte_rate: u64,
    /// Most reply bytes an IP may be sent back to back.
    pub byte_burst: u64,
    /// Most IPs tracked at once (at least 1 is always tracked).
    pub max_entries: usize,
}

/// The buckets of one source IP.
#[derive(Clone, Copy, Debug)]
struct IpBuckets {
    requests: TokenBucket,
    reply_bytes: Option<TokenBucket>,
}

impl IpBuckets {
    /// Both buckets are full: the address is where an untracked one would be.
    fn is_full(&mut self, now: Instant) -> bool {
        self.requests.is_full(now) && self.reply_bytes.as_mut().map_or(true, |b| b.is_full(now))
    }
}

/// The capacity the table and its queue keep however few addresses are tracked
/// ([`shrink_spare`]'s floor).
const SHRINK_BELOW: usize = 64;

/// Addresses looked at for forgetting each time a new one is tracked: two, so the table
/// shrinks back as fast as a steady stream of newcomers grows it.
const FORGET_ON_INSERT: usize = 2;

/// Rate limits per source IP; at most `max_entries` IPs are tracked.
///
/// Inserting into a full table evicts the entry at the front of the queue in O(1), so memory
/// is bounded whatever the number of source addresses. The queue is insertion order, except
/// that [`PerIpLimiter::forget_full`] moves an address still counting to the back: an address
/// keeps its slot until about `max_entries` newer ones have arrived. Evicting an entry gives
/// that IP a fresh full bucket the next time it shows up, which is acceptable: an attacker
/// able to cycle that many addresses gains at most one burst per address.
///
/// An address whose buckets have filled up again is in the same state as one never seen, so
/// it is forgotten (a couple are looked at each time a new address arrives, and a slice on
/// each [`PerIpLimiter::forget_full`] call): the table follows the addresses active within
/// one refill period, not every address ever seen, and [`PerIpLimiter::shrink`] gives back
/// its spare capacity after a crowd has gone.
#[derive(Debug)]
pub struct PerIpLimiter {
    cfg: PerIpConfig,
    max_entries: usize,
    table: HashMap<IpAddr, IpBuckets>,
    /// Every key of `table` exactly once, oldest-inserted first. Entries only ever leave
    /// the table by eviction from the front, so the two never disagree.
    insertion_order: VecDeque<IpAddr>,
    evictions: u64,
    /// Addresses forgotten because their buckets were full again.
    forgotten: u64,
}

impl PerIpLimiter {
    /// Creates an empty limiter. A `max_entries` of 0 is treated as 1.
    pub fn new(cfg: PerIpConfig) -> Self {
        PerIpLimiter {
            cfg,
            max_entries: cfg.max_entries.max(1),
            table: HashMap::new(),
            insertion_order: VecDeque::new(),
            evictions: 0,
            forgotten: 0,
        }
    }

    /// Takes one request token from `ip`'s bucket; `false` means drop the request.
    pub fn allow_request(&mut self, now: Instant, ip: IpAddr) -> bool {
        self.buckets(now, ip).requests.try_take(now, 1)
    }

    /// Whether `ip` has a request token left, taking none; an address not tracked has a
    /// full bucket and is not added (so asking costs no table entry).
    pub fn has_request_token(&mut self, now: Instant, ip: IpAddr) -> bool {
        match self.table.get_mut(&ip) {
            Some(buckets) => buckets.requests.available(now) > 0,
            None => self.cfg.burst > 0,
        }
    }

    /// Takes `bytes` from `ip`'s reply-bytes bucket; `false` means do not send the reply.
    /// Always `true` when the byte limit is disabled (`byte_rate == 0`).
    pub fn allow_reply_bytes(&mut self, now: Instant, ip: IpAddr, bytes: usize) -> bool {
        if self.cfg.byte_rate == 0 {
            return true;
        }
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
        match self.buckets(now, ip).reply_bytes.as_mut() {
            Some(bucket) => bucket.try_take(now, bytes),
            None => true,
        }
    }

    /// Number of IPs currently tracked (never more than `max_entries`).
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True if no IP is tracked.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// How many entries have been evicted to make room since creation.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// Looks at up to `budget` addresses at the front of the queue: those whose buckets are
    /// full again are forgotten (no decision changes: an untracked address gets full
    /// buckets), the others move to the back. Returns how many were forgotten.
    pub fn forget_full(&mut self, now: Instant, budget: usize) -> usize {
        let mut forgotten = 0;
        for _ in 0..budget.min(self.insertion_order.len()) {
            let Some(ip) = self.insertion_order.pop_front() else {
                break;
            };
            // `None` cannot happen (every queued address is in the table): the address is
            // dropped from the queue, which keeps the two in step.
            let full = self.table.get_mut(&ip).map(|buckets| buckets.is_full(now));
            match full {
                Some(true) => {
                    self.table.remove(&ip);
                    forgotten += 1;
                }
                Some(false) => self.insertion_order.push_back(ip),
                None => {}
            }
        }
        self.forgotten += forgotten as u64;
        forgotten
    }

    /// Gives back the table's spare capacity once it is less than a quarter full (a table
    /// that grew for a crowd would otherwise keep its peak size for ever).
    pub fn shrink(&mut self) {
        shrink_spare(&mut self.table, SHRINK_BELOW);
        shrink_spare(&mut self.insertion_order, SHRINK_BELOW);
    }

    /// The periodic tidy: forgets up to `budget` refilled addresses, then gives back spare
    /// capacity.
    pub fn tidy(&mut self, now: Instant, budget: usize) {
        self.forget_full(now, budget);
        self.shrink();
    }

    /// `ip`'s buckets, inserting fresh full ones (and evicting the oldest entry if the table
    /// is full) when `ip` is not tracked yet.
    fn buckets(&mut self, now: Instant, ip: IpAddr) -> &mut IpBuckets {
        if !self.table.contains_key(&ip) {
            self.forget_full(now, FORGET_ON_INSERT);
            if self.table.len() >= self.max_entries {
                if let Some(oldest) = self.insertion_order.pop_front() {
                    self.table.remove(&oldest);
                    self.evictions += 1;
                }
            }
            self.insertion_order.push_back(ip);
        }
        let cfg = self.cfg;
        self.table.entry(ip).or_insert_with(|| IpBuckets {
            requests: TokenBucket::new(now, cfg.rate, cfg.per, cfg.burst),
            reply_bytes: (cfg.byte_rate != 0).then(|| {
                TokenBucket::new(now, cfg.byte_rate, Duration::from_secs(1), cfg.byte_burst)
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{QuickCheck, TestResult};
    use std::collections::HashSet;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const SEC: Duration = Duration::from_secs(1);

    fn v4(n: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(n))
    }

    fn config(max_entries: usize) -> PerIpConfig {
        PerIpConfig {
            rate: 2,
            per: SEC,
            burst: 4,
            byte_rate: 1000,
            byte_burst: 1500,
            max_entries,
        }
    }

    #[test]
    fn bucket_starts_full_and_caps_at_burst() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(start, 10, SEC, 25);
        assert_eq!(bucket.available(start), 25);
        assert_eq!(bucket.available(start + SEC * 100), 25);
        assert!(bucket.try_take(start + SEC * 100, 25));
        assert!(!bucket.try_take(start + SEC * 100, 1));
        assert_eq!(bucket.available(start + SEC * 101), 10);
        assert_eq!(bucket.available(start + SEC * 1000), 25);
    }

    #[test]
    fn looking_at_a_bucket_takes_nothing_and_adds_no_entry() {
        let start = Instant::now();
        let mut limiter = PerIpLimiter::new(config(8));
        assert!(limiter.has_request_token(start, v4(1)));
        assert!(
            limiter.is_empty(),
            "an address only looked at is not tracked"
        );
        for _ in 0..4 {
            assert!(limiter.has_request_token(start, v4(1)));
            assert!(limiter.allow_request(start, v4(1)));
        }
        assert!(!limiter.has_request_token(start, v4(1)));
        assert!(
            limiter.has_request_token(start, v4(2)),
            "another address is not charged"
        );
        assert!(limiter.has_request_token(start + SEC, v4(1)), "refilled");
    }

    #[test]
    fn take_is_all_or_nothing() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(start, 1, SEC, 5);
        assert!(!bucket.try_take(start, 6));
        assert_eq!(bucket.available(start), 5);
        assert!(bucket.try_take(start, 0));
        assert!(bucket.try_take(start, 5));
        assert!(bucket.try_take(start, 0));
        assert!(!bucket.try_take(start, 1));
    }

    #[test]
    fn zero_elapsed_mints_nothing() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(start, 1_000_000_000, SEC, 3);
        for _ in 0..3 {
            assert!(bucket.try_take(start, 1));
        }
        for _ in 0..1000 {
            assert!(!bucket.try_take(start, 1));
        }
        assert!(bucket.try_take(start + Duration::from_nanos(1), 1));
    }

    #[test]
    fn refill_is_exact_over_many_small_steps() {
        let start = Instant::now();
        // 7 tokens every 3 s never divides a 333_333 ns step evenly: naive rounding per
        // step would mint nothing at all.
        let per = Duration::from_secs(3);
        let burst = 1_000_000_000_000;
        let mut bucket = TokenBucket::new(start, 7, per, burst);
        assert!(bucket.try_take(start, burst));
        let step = Duration::from_nanos(333_333);
        let mut elapsed = Duration::ZERO;
        for _ in 0..100_000 {
            elapsed += step;
            let expected = (elapsed.as_nanos() * 7 / per.as_nanos()) as u64;
            assert_eq!(bucket.available(start + elapsed), expected);
        }
        assert_eq!(bucket.available(start + elapsed), 77);
    }

    #[test]
    fn refill_exact_with_takes_in_between() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(start, 3, SEC, 1_000);
        assert!(bucket.try_take(start, 1_000));
        let mut taken = 0u64;
        let mut now = start;
        for i in 0..20_000u64 {
            now += Duration::from_micros(1_337);
            if i % 7 == 0 && bucket.try_take(now, 1) {
                taken += 1;
            }
            let minted = ((now - start).as_nanos() * 3 / SEC.as_nanos()) as u64;
            assert_eq!(bucket.available(now), minted - taken);
        }
        assert!(taken > 0);
    }

    #[test]
    fn large_rates_and_bursts_do_not_overflow() {
        let start = Instant::now();
        let burst = 1_000_000_000_000;
        let mut bucket = TokenBucket::new(start, 1_000_000_000, SEC, burst);
        assert!(bucket.try_take(start, burst));
        assert_eq!(bucket.available(start + Duration::from_nanos(1)), 1);
        assert_eq!(bucket.available(start + SEC * 999), burst * 999 / 1000);
        let far = start + Duration::from_secs(100 * 365 * 24 * 3600);
        assert_eq!(bucket.available(far), burst);
        let mut extreme = TokenBucket::new(start, u64::MAX, Duration::from_nanos(1), u64::MAX);
        assert!(extreme.try_take(start, u64::MAX));
        assert_eq!(extreme.available(far), u64::MAX);
        let mut slow = TokenBucket::new(start, 1, Duration::MAX, 10);
        assert!(slow.try_take(start, 10));
        assert_eq!(slow.available(far), 0);
    }

    #[test]
    fn zero_period_and_zero_rate() {
        let start = Instant::now();
        let mut instant_refill = TokenBucket::new(start, 1, Duration::ZERO, 4);
        assert!(instant_refill.try_take(start, 4));
        assert_eq!(instant_refill.available(start + Duration::from_nanos(3)), 3);
        let mut never = TokenBucket::new(start, 0, SEC, 2);
        assert!(never.try_take(start, 2));
        assert_eq!(never.available(start + SEC * 1_000_000), 0);
    }

    #[test]
    fn time_going_backwards_mints_nothing() {
        let start = Instant::now();
        let ten = start + SEC * 10;
        let mut bucket = TokenBucket::new(ten, 1, SEC, 100);
        assert!(bucket.try_take(ten, 100));
        assert_eq!(bucket.available(start), 0);
        assert!(!bucket.try_take(start + SEC * 5, 1));
        // The clock coming back only credits time after the latest instant seen.
        assert_eq!(bucket.available(ten + SEC), 1);
        assert_eq!(bucket.available(start), 1);
        assert_eq!(bucket.available(ten + SEC * 3), 3);
    }

    #[test]
    fn limiter_ips_are_independent() {
        let start = Instant::now();
        let mut limiter = PerIpLimiter::new(config(16));
        let (a, b) = (v4(0x0a00_0001), IpAddr::V6(Ipv6Addr::LOCALHOST));
        for _ in 0..4 {
            assert!(limiter.allow_request(start, a));
        }
        assert!(!limiter.allow_request(start, a));
        for _ in 0..4 {
            assert!(limiter.allow_request(start, b));
        }
        assert!(!limiter.allow_request(start, b));
        assert!(limiter.allow_request(start + SEC / 2, a));
        assert!(!limiter.allow_request(start + SEC / 2, a));
        assert_eq!(limiter.len(), 2);
        assert_eq!(limiter.evictions(), 0);
    }

    #[test]
    fn limiter_byte_bucket() {
        let start = Instant::now();
        let mut limiter = PerIpLimiter::new(config(16));
        let ip = v4(0xc000_0201);
        assert!(limiter.allow_reply_bytes(start, ip, 1000));
        assert!(!limiter.allow_reply_bytes(start, ip, 600));
        assert!(limiter.allow_reply_bytes(start, ip, 500));
        assert!(!limiter.allow_reply_bytes(start, ip, 1));
        assert!(limiter.allow_reply_bytes(start + SEC / 10, ip, 100));
        assert!(!limiter.allow_reply_bytes(start + SEC / 10, ip, 1));
        // The byte bucket does not share tokens with the request bucket.
        assert!(limiter.allow_request(start, ip));
        assert!(!limiter.allow_reply_bytes(start, v4(1), usize::MAX));
    }

    #[test]
    fn limiter_without_byte_limit_tracks_nothing_for_replies() {
        let start = Instant::now();
        let mut limiter = PerIpLimiter::new(PerIpConfig {
            byte_rate: 0,
            ..config(16)
        });
        for n in 0..100 {
            assert!(limiter.allow_reply_bytes(start, v4(n), usize::MAX));
        }
        assert!(limiter.is_empty());
    }

    #[test]
    fn eviction_is_by_insertion_order_and_resets_the_bucket() {
        let start = Instant::now();
        let mut limiter = PerIpLimiter::new(config(2));
        let (a, b, c) = (v4(1), v4(2), v4(3));
        for _ in 0..4 {
            assert!(limiter.allow_request(start, a));
        }
        assert!(!limiter.allow_request(start, a));
        assert!(limiter.allow_request(start, b));
        // Using `a` again does not make it younger.
        assert!(!limiter.allow_request(start, a));
        assert!(limiter.allow_request(start, c));
        assert_eq!(limiter.len(), 2);
        assert_eq!(limiter.evictions(), 1);
        // `a` was evicted: it comes back with a full bucket, pushing `b` out.
        assert!(limiter.allow_request(start, a));
        assert_eq!(limiter.evictions(), 2);
        assert!(limiter.table.contains_key(&a) && limiter.table.contains_key(&c));
    }

    #[test]
    fn table_bound_holds_under_100k_ips() {
        let start = Instant::now();
        let max_entries = 1000;
        let mut limiter = PerIpLimiter::new(config(max_entries));
        for n in 0..100_000u32 {
            let ip = if n % 2 == 0 {
                v4(n)
            } else {
                IpAddr::V6(Ipv6Addr::from(u128::from(n) << 64))
            };
            assert!(limiter.allow_request(start, ip));
            assert!(limiter.len() <= max_entries);
        }
        assert_eq!(limiter.len(), max_entries);
        assert_eq!(limiter.evictions(), 99_000);
        assert_eq!(limiter.insertion_order.len(), max_entries);
        let mut zero = PerIpLimiter::new(config(0));
        assert!(zero.allow_request(start, v4(1)));
        assert!(zero.allow_request(start, v4(2)));
        assert_eq!(zero.len(), 1);
    }

    #[test]
    fn an_address_whose_buckets_refilled_is_forgotten_and_comes_back_fresh() {
        let start = Instant::now();
        let mut limiter = PerIpLimiter::new(config(16));
        let (a, b) = (v4(1), v4(2));
        assert!(limiter.allow_request(start, a));
        assert!(limiter.allow_reply_bytes(start, b, 1000));
        // Both still counting: nothing is forgotten, and the queue keeps its order.
        assert_eq!(limiter.forget_full(start, 8), 0);
        assert_eq!(limiter.insertion_order, [a, b]);
        // Half a second later `a` has its token back (2 a second); `b` lacks 500 bytes.
        let later = start + Duration::from_millis(500);
        assert_eq!(limiter.forget_full(later, 8), 1);
        assert!(!limiter.table.contains_key(&a) && limiter.table.contains_key(&b));
        assert_eq!(limiter.insertion_order, [b]);
        // Forgotten, `a` gets a whole burst again, as a new address would.
        for _ in 0..4 {
            assert!(limiter.allow_request(later, a));
        }
        assert!(!limiter.allow_request(later, a));
        assert_eq!(limiter.forget_full(later + SEC * 10, 1), 1);
        assert_eq!(limiter.insertion_order, [a]);
    }

    #[test]
    fn a_crowd_that_has_gone_leaves_no_table_behind() {
        let start = Instant::now();
        let mut limiter = PerIpLimiter::new(config(100_000));
        for n in 0..10_000u32 {
            assert!(limiter.allow_request(start, v4(n)));
        }
        // Newcomers look at the front of the queue: later ones push out the refilled.
        let later = start + SEC;
        for n in 10_000..10_010u32 {
            assert!(limiter.allow_request(later, v4(n)));
        }
        assert_eq!(limiter.len(), 10_010 - 2 * 10);
        let capacity = limiter.table.capacity();
        while limiter.forget_full(later, 1000) > 0 {}
        assert_eq!(limiter.len(), 10);
        limiter.shrink();
        assert!(limiter.table.capacity() < capacity / 8);
        assert!(limiter.insertion_order.capacity() <= 4 * SHRINK_BELOW);
    }

    /// Forgetting never changes a decision: any sequence of requests, replies and forgetting
    /// answers as unbounded buckets per address would.
    fn forgetting_changes_no_decision(ops: Vec<(u8, u16, u8)>) -> bool {
        let cfg = config(1 << 20);
        let mut limiter = PerIpLimiter::new(cfg);
        let mut model: HashMap<IpAddr, (TokenBucket, TokenBucket)> = HashMap::new();
        let mut now = Instant::now();
        for (ip, step_ms, op) in ops {
            let ip = v4(u32::from(ip % 6));
            now += Duration::from_millis(u64::from(step_ms % 1500));
            let (requests, bytes) = model.entry(ip).or_insert_with(|| {
                (
                    TokenBucket::new(now, cfg.rate, cfg.per, cfg.burst),
                    TokenBucket::new(now, cfg.byte_rate, SEC, cfg.byte_burst),
                )
            });
            let same = match op % 3 {
                0 => limiter.allow_request(now, ip) == requests.try_take(now, 1),
                1 => limiter.allow_reply_bytes(now, ip, 400) == bytes.try_take(now, 400),
                _ => {
                    limiter.forget_full(now, usize::from(op % 5));
                    true
                }
            };
            if !same {
                return false;
            }
        }
        true
    }

    #[test]
    fn quickcheck_forgetting_changes_no_decision() {
        QuickCheck::new()
            .tests(300)
            .quickcheck(forgetting_changes_no_decision as fn(Vec<(u8, u16, u8)>) -> bool);
    }

    /// After any sequence of requests and replies the table stays within its bound and its
    /// insertion-order queue names every tracked IP exactly once.
    fn table_stays_bounded(max_entries: u8, ops: Vec<(u16, u8, bool)>) -> TestResult {
        let max_entries = usize::from(max_entries % 40);
        let mut limiter = PerIpLimiter::new(config(max_entries));
        let mut now = Instant::now();
        let mut inserted = 0u64;
        for (ip, step_ms, reply) in ops {
            let ip = if ip % 3 == 0 {
                IpAddr::V6(Ipv6Addr::from(u128::from(ip % 200)))
            } else {
                v4(u32::from(ip % 200))
            };
            now += Duration::from_millis(u64::from(step_ms));
            inserted += u64::from(!limiter.table.contains_key(&ip));
            if reply {
                limiter.allow_reply_bytes(now, ip, 300);
            } else {
                limiter.allow_request(now, ip);
            }
            let queued: HashSet<&IpAddr> = limiter.insertion_order.iter().collect();
            let consistent = limiter.len() <= max_entries.max(1)
                && queued.len() == limiter.insertion_order.len()
                && queued.len() == limiter.len()
                && queued.iter().all(|ip| limiter.table.contains_key(*ip))
                && limiter.evictions() + limiter.forgotten + limiter.len() as u64 == inserted;
            if !consistent {
                return TestResult::failed();
            }
        }
        TestResult::passed()
    }

    #[test]
    fn quickcheck_table_stays_bounded() {
        QuickCheck::new()
            .tests(300)
            .quickcheck(table_stays_bounded as fn(u8, Vec<(u16, u8, bool)>) -> TestResult);
    }
}
