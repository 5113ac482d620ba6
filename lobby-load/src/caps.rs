//! lobbyd's default per-address limits, as a client must respect them, and the budgets that
//! keep each of the tool's source addresses within them.
//!
//! A new user runs `make run` (lobbyd with no flags) and `lobby-load MODE`: every limit is at
//! its default, and most of them are per source address (rooms, connections, requests a
//! second or a minute, games). So by default the tool spreads its clients over many loopback
//! addresses ([`super::sources::spread`]) and keeps each address under the server's default
//! caps, read from [`Config::default`] so they cannot drift from the server's. `--caps off`
//! drops the pacing, for a server run with its limits raised (`scripts/bench.sh`).
//!
//! - [`Caps`]: the numbers, and [`Rate`], one per-address rate with headroom: 90 % of the
//!   server's rate and burst, so the jitter between the tool's send and the server's receive
//!   never tips a bucket over.
//! - [`Budgets`]: one such rate for each of many addresses, a GCRA (one timestamp each, no
//!   refill loop), so 65,536 addresses cost 512 KiB.
//! - [`SourcePool`]: the addresses connection-per-cycle modes take in turn, each within its
//!   rate and a cap on what it has open at once.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use lobbyd::config::Config;
use lobbyd::wz::types::WzConfig;

/// The share of each server rate and burst the tool allows itself.
const HEADROOM: f64 = 0.9;
/// Addresses [`SourcePool::take`] looks at before it gives up until the next tick.
const TAKE_SCAN: usize = 64;

/// A per-address rate the tool keeps to: `burst` back to back, then one every `interval`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Time between two sends once the burst is spent.
    pub interval: Duration,
    /// Sends allowed back to back.
    pub burst: u32,
}

impl Rate {
    /// The rate a client keeps to under a server bucket of `rate` tokens per `per`, holding
    /// `burst`: [`HEADROOM`] of each (at least one).
    pub fn within(rate: u64, per: Duration, burst: u64) -> Rate {
        let rate = (rate.max(1) as f64) * HEADROOM;
        Rate {
            interval: per.div_f64(rate),
            burst: ((burst.max(1) as f64 * HEADROOM).floor() as u32).max(1),
        }
    }

    /// Sends per second this rate allows once its burst is spent.
    pub fn per_second(&self) -> f64 {
        1.0 / self.interval.as_secs_f64().max(1e-9)
    }

    /// Sends per minute, for rates the server counts per minute.
    pub fn per_minute(&self) -> f64 {
        60.0 * self.per_second()
    }
}

/// lobbyd's default limits that a load run meets, with the flag that sets each.
#[derive(Clone, Debug)]
pub struct Caps {
    /// UDP lobby requests per second per address (`--udp-rate`), burst twice that.
    pub udp_rate: u64,
    /// UDP lobby reply bytes per second per address (`--udp-reply-bytes`), burst twice that.
    pub udp_reply_bytes: u64,
    /// Rooms at once (`--max-rooms`: the instance port range, 4300-4399).
    pub max_rooms: usize,
    /// Live rooms one address created (`--max-rooms-per-ip`), finished ones until reaped.
    pub max_rooms_per_ip: usize,
    /// Seats per room and party (`--max-players`).
    pub max_players: usize,
    /// A finished room holds its port and its creator's count this long (`--reap-grace`).
    pub reap_grace: Duration,
    /// A seat JOIN_SUCCESS / ROOM_CREATED reserved lapses after this (`--seat-timeout`).
    pub seat_timeout: Duration,
    /// A silent member or connection is removed after this (`--idle-timeout`).
    pub idle_timeout: Duration,
    /// The TCP lobby's countdown (`--countdown`).
    pub countdown: Duration,
    /// New TCP lobby connections per minute per address (`--conn-rate`), burst the same.
    pub conn_rate: u64,
    /// TCP lobby connections at once per address (`--max-conns-per-ip`).
    pub max_conns_per_ip: usize,
    /// Warzone games at once per address (`--wz-max-games-per-ip`).
    pub wz_games_per_ip: usize,
    /// Warzone games at once (`--wz-max-games`).
    pub wz_max_games: usize,
    /// Warzone registrations per minute per address (`--wz-register-rate`).
    pub wz_register_rate: u64,
    /// Warzone registrations back to back (two thirds of the rate).
    pub wz_register_burst: u64,
    /// Warzone connections per address that may host (`--wz-max-conns-per-ip`).
    pub wz_conns_per_ip: usize,
    /// New general lobby connections per minute per address (`--lobby-conn-rate`).
    pub lobby_conn_rate: u64,
    /// General lobby connections at once per address (`--lobby-max-conns-per-ip`).
    pub lobby_conns_per_ip: usize,
    /// General lobby members at once (`--lobby-max-members`).
    pub lobby_max_members: usize,
    /// Chat lines per second per member (`--lobby-chat-rate`).
    pub chat_rate: u64,
    /// Chat lines back to back.
    pub chat_burst: u64,
    /// A closed member stays away this long (`--lobby-resume-grace`).
    pub resume_grace: Duration,
}

impl Caps {
    /// The limits of a lobbyd run without flags.
    pub fn lobbyd_defaults() -> Caps {
        let c = Config::default();
        let general = &c.general.core;
        Caps {
            udp_rate: u64::from(c.udp_rate),
            udp_reply_bytes: u64::from(c.udp_reply_bytes),
            max_rooms: c.max_rooms,
            max_rooms_per_ip: c.max_rooms_per_ip,
            max_players: usize::from(c.max_players),
            reap_grace: c.reap_grace,
            seat_timeout: c.seat_timeout,
            idle_timeout: c.idle_timeout,
            countdown: c.countdown,
            conn_rate: u64::from(c.conn_rate),
            max_conns_per_ip: c.max_conns_per_ip,
            wz_games_per_ip: c.wz.max_games_per_ip,
            wz_max_games: c.wz.max_games,
            wz_register_rate: u64::from(c.wz.registrations_per_minute),
            wz_register_burst: WzConfig::default().registration_burst,
            wz_conns_per_ip: c.wz.max_conns_per_ip,
            lobby_conn_rate: u64::from(c.general.conn_rate),
            lobby_conns_per_ip: c.general.max_conns_per_ip,
            lobby_max_members: general.max_members,
            chat_rate: general.chat_rate,
            chat_burst: general.chat_burst,
            resume_grace: general.resume_grace,
        }
    }

    /// UDP lobby requests of one address whose replies are at most `reply_len` bytes: within
    /// both the request rate and the reply-bytes rate (each bucket holds two seconds).
    pub fn udp_requests(&self, reply_len: usize) -> Rate {
        let requests = Rate::within(self.udp_rate, Duration::from_secs(1), 2 * self.udp_rate);
        if self.udp_reply_bytes == 0 {
            return requests;
        }
        let len = reply_len.max(1) as u64;
        let replies_per_sec = (self.udp_reply_bytes / len).max(1);
        let bytes = Rate::within(replies_per_sec, Duration::from_secs(1), 2 * replies_per_sec);
        Rate {
            interval: requests.interval.max(bytes.interval),
            burst: requests.burst.min(bytes.burst),
        }
    }

    /// New TCP lobby connections of one address.
    pub fn tcp_connections(&self) -> Rate {
        Rate::within(self.conn_rate, Duration::from_secs(60), self.conn_rate)
    }

    /// Warzone game registrations of one address.
    pub fn wz_registrations(&self) -> Rate {
        Rate::within(
            self.wz_register_rate,
            Duration::from_secs(60),
            self.wz_register_burst,
        )
    }

    /// New general lobby connections of one address.
    pub fn lobby_connections(&self) -> Rate {
        Rate::within(
            self.lobby_conn_rate,
            Duration::from_secs(60),
            self.lobby_conn_rate,
        )
    }

    /// Chat lines of one member: its rate, without spending its burst. lobbyd's lobby-wide
    /// chat budget (`--lobby-chat-budget`) holds one second of fan-out; every member of a
    /// large lobby spending its burst at once would pass it and turn slow mode on.
    pub fn chat_lines(&self) -> Rate {
        Rate::within(
            self.chat_rate,
            Duration::from_secs(1),
            self.chat_burst.min(self.chat_rate),
        )
    }

    /// How often a held connection shows it is alive: a third of `--idle-timeout`.
    pub fn keepalive(&self) -> Duration {
        self.idle_timeout / 3
    }
}

/// One [`Rate`] for each of `n` addresses, as a generic cell rate algorithm: each address
/// keeps the time at which its bucket would be full again ("theoretical arrival time"); a
/// send is allowed while that time is at most `(burst - 1) * interval` ahead of now.
#[derive(Clone, Debug)]
pub struct Budgets {
    rate: Rate,
    epoch: Instant,
    /// Per address, nanoseconds after `epoch`.
    full_at: Vec<u64>,
}

impl Budgets {
    /// `n` addresses, each with its whole burst available.
    pub fn new(rate: Rate, n: usize) -> Budgets {
        Budgets {
            rate,
            epoch: Instant::now(),
            full_at: vec![0; n],
        }
    }

    /// Spends one send of address `k` if its budget allows one at `now`.
    pub fn try_take(&mut self, k: usize, now: Instant) -> bool {
        let Some(full_at) = self.full_at.get_mut(k) else {
            return false;
        };
        let t =
            u64::try_from(now.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX);
        let interval = u64::try_from(self.rate.interval.as_nanos()).unwrap_or(u64::MAX);
        let tolerance = interval.saturating_mul(u64::from(self.rate.burst.saturating_sub(1)));
        let tat = (*full_at).max(t);
        if tat - t > tolerance {
            return false;
        }
        *full_at = tat.saturating_add(interval);
        true
    }

    /// The rate each address keeps to.
    pub fn rate(&self) -> Rate {
        self.rate
    }
}

/// Source addresses that connection-per-cycle modes take in turn: each within an optional
/// [`Budgets`] rate and an optional cap on what it has open at once (connections, games).
#[derive(Clone, Debug)]
pub struct SourcePool {
    addrs: Vec<IpAddr>,
    next: usize,
    rate: Option<Budgets>,
    open: Vec<u16>,
    max_open: Option<u16>,
}

impl SourcePool {
    /// The pool of `addrs`, each without limits.
    pub fn new(addrs: Vec<IpAddr>) -> SourcePool {
        SourcePool {
            addrs,
            next: 0,
            rate: None,
            open: Vec::new(),
            max_open: None,
        }
    }

    /// Each address within `rate`.
    pub fn with_rate(mut self, rate: Rate) -> SourcePool {
        self.rate = Some(Budgets::new(rate, self.addrs.len()));
        self
    }

    /// Each address with at most `max` open at once.
    pub fn with_max_open(mut self, max: usize) -> SourcePool {
        self.open = vec![0; self.addrs.len()];
        self.max_open = Some(u16::try_from(max.max(1)).unwrap_or(u16::MAX));
        self
    }

    /// The next address allowed one more use at `now`, counted as open until
    /// [`SourcePool::release`]; `None` when the next few addresses are all at their limits
    /// (the caller tries again later).
    pub fn take(&mut self, now: Instant) -> Option<usize> {
        let n = self.addrs.len();
        for _ in 0..n.min(TAKE_SCAN) {
            let k = self.next;
            self.next = (self.next + 1) % n;
            if let Some(max) = self.max_open {
                if self.open[k] >= max {
                    continue;
                }
            }
            if let Some(budgets) = self.rate.as_mut() {
                if !budgets.try_take(k, now) {
                    continue;
                }
            }
            if self.max_open.is_some() {
                self.open[k] += 1;
            }
            return Some(k);
        }
        None
    }

    /// Address `k` is done with one use.
    pub fn release(&mut self, k: usize) {
        if let Some(open) = self.open.get_mut(k) {
            *open = open.saturating_sub(1);
        }
    }

    /// Address number `k`.
    pub fn addr(&self, k: usize) -> IpAddr {
        self.addrs[k % self.addrs.len()]
    }

    /// How many addresses the pool has.
    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    /// True if the pool has no address (never: a pool is built from at least one).
    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_lobbyds() {
        let caps = Caps::lobbyd_defaults();
        assert_eq!(caps.max_rooms_per_ip, 8);
        assert_eq!(caps.udp_rate, 50);
        assert_eq!(caps.conn_rate, 5);
        assert_eq!(caps.wz_games_per_ip, 4);
        assert_eq!(caps.wz_register_burst, 20);
        assert_eq!(caps.lobby_conn_rate, 60);
        assert_eq!(caps.max_rooms, 100);
    }

    #[test]
    fn rates_keep_headroom() {
        let conns = Caps::lobbyd_defaults().tcp_connections();
        assert_eq!(conns.burst, 4);
        assert!((conns.per_minute() - 4.5).abs() < 1e-6, "{conns:?}");
        // A LIST of 112 rooms (1470 bytes) is held by the reply bytes, not the requests.
        let lists = Caps::lobbyd_defaults().udp_requests(1470);
        assert!(lists.per_second() < 64_000.0 / 1470.0, "{lists:?}");
        let small = Caps::lobbyd_defaults().udp_requests(18);
        assert!((small.per_second() - 45.0).abs() < 1e-6, "{small:?}");
        assert_eq!(small.burst, 90);
    }

    #[test]
    fn a_budget_allows_its_burst_then_its_rate() {
        let rate = Rate {
            interval: Duration::from_millis(100),
            burst: 3,
        };
        let mut b = Budgets::new(rate, 2);
        let t0 = b.epoch;
        assert!((0..3).all(|_| b.try_take(0, t0)));
        assert!(!b.try_take(0, t0));
        // The other address has its own budget.
        assert!(b.try_take(1, t0));
        assert!(!b.try_take(0, t0 + Duration::from_millis(99)));
        assert!(b.try_take(0, t0 + Duration::from_millis(100)));
        assert!(!b.try_take(0, t0 + Duration::from_millis(150)));
        // A long pause refills the burst, not more.
        let later = t0 + Duration::from_secs(10);
        assert!((0..3).all(|_| b.try_take(0, later)));
        assert!(!b.try_take(0, later));
        assert!(!b.try_take(7, later), "no such address");
    }

    #[test]
    fn a_pool_skips_addresses_at_their_limits() {
        let addrs = (1..=3).map(|n| IpAddr::from([127, 0, 0, n])).collect();
        let rate = Rate {
            interval: Duration::from_secs(60),
            burst: 1,
        };
        let mut pool = SourcePool::new(addrs).with_rate(rate).with_max_open(1);
        let now = Instant::now();
        assert_eq!(pool.take(now), Some(0));
        assert_eq!(pool.take(now), Some(1));
        assert_eq!(pool.take(now), Some(2));
        // Every address spent its burst: nothing until the interval passed.
        assert_eq!(pool.take(now), None);
        pool.release(0);
        assert_eq!(pool.take(now), None, "released, but its rate is spent");
        let later = now + Duration::from_secs(61);
        assert_eq!(pool.take(later), Some(0));
        assert_eq!(pool.take(later), None, "1 and 2 are still open");
        assert_eq!(pool.addr(1), IpAddr::from([127, 0, 0, 2]));
    }
}
