//! The per-address limits a listener applies to a newcomer at accept: new connections per
//! minute from one address (a token bucket per address, in bursts of as many), and
//! connections open at once from one address. A refused newcomer is dropped by its caller,
//! which closes it at once without a word, and counted there (each front end names its own
//! flags and counters). IPv4-mapped IPv6 peers count as their IPv4 address.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use crate::ratelimit::{PerIpConfig, PerIpLimiter};

use crate::net::io::heap::FORGET_PER_TIDY;
use crate::net::io::stream::{canonical_ip, PerIpCounts};

/// Why a newcomer was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Its address opened more connections this minute than the rate allows.
    ConnRate,
    /// Its address has the most connections open already.
    PerIp,
}

/// A listener's per-address admission: the connection rate and the open connections of
/// every address.
#[derive(Debug)]
pub struct PerIpAdmission {
    rate: PerIpLimiter,
    open: PerIpCounts,
    max_per_ip: usize,
}

impl PerIpAdmission {
    /// `conn_rate` new connections per minute per address (bursts of as many), at most
    /// `max_per_ip` open at once per address; the rate table tracks at most `max_entries`
    /// addresses.
    pub fn new(conn_rate: u32, max_per_ip: usize, max_entries: usize) -> PerIpAdmission {
        let rate = u64::from(conn_rate);
        PerIpAdmission {
            rate: PerIpLimiter::new(PerIpConfig {
                rate,
                per: Duration::from_secs(60),
                burst: rate,
                byte_rate: 0,
                byte_burst: 0,
                max_entries,
            }),
            open: PerIpCounts::default(),
            max_per_ip,
        }
    }

    /// Checks a newcomer from `peer`, spending one of its address's connection tokens: its
    /// address as the limits count it, or why it is refused. It counts as open once the
    /// caller has it ([`Self::opened`]).
    pub fn check(&mut self, now: Instant, peer: SocketAddr) -> Result<IpAddr, Refused> {
        let ip = canonical_ip(peer.ip());
        if !self.rate.allow_request(now, ip) {
            return Err(Refused::ConnRate);
        }
        if self.open.get(ip) >= self.max_per_ip {
            return Err(Refused::PerIp);
        }
        Ok(ip)
    }

    /// A connection from `ip` (as [`Self::check`] returned it) is open.
    pub fn opened(&mut self, ip: IpAddr) {
        self.open.add(ip);
    }

    /// A connection from `ip` is gone.
    pub fn closed(&mut self, ip: IpAddr) {
        self.open.remove(ip);
    }

    /// Connections open from `ip`.
    pub fn open_from(&self, ip: IpAddr) -> usize {
        self.open.get(ip)
    }

    /// The periodic tidy: forgets rate entries whose buckets are full again and gives back
    /// the open-count table's spare capacity.
    pub fn tidy(&mut self, now: Instant) {
        self.rate.tidy(now, FORGET_PER_TIDY);
        self.open.shrink();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newcomer_is_refused_over_the_rate_then_over_its_open_connections() {
        let now = Instant::now();
        let mut admission = PerIpAdmission::new(3, 2, 16);
        let peer: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        // An IPv4-mapped peer is the same address.
        let mapped: SocketAddr = "[::ffff:10.0.0.1]:5001".parse().unwrap();
        let ip = admission.check(now, peer).unwrap();
        admission.opened(ip);
        assert_eq!(admission.check(now, mapped), Ok(ip));
        admission.opened(ip);
        assert_eq!(admission.open_from(ip), 2);
        assert_eq!(admission.check(now, peer), Err(Refused::PerIp));
        admission.closed(ip);
        assert_eq!(admission.open_from(ip), 1);
        // Three tokens a minute: all three are spent.
        assert_eq!(admission.check(now, peer), Err(Refused::ConnRate));
        let other: SocketAddr = "10.0.0.2:5000".parse().unwrap();
        assert!(admission.check(now, other).is_ok());
        // A minute later the tokens are back.
        assert_eq!(admission.check(now + Duration::from_secs(60), peer), Ok(ip));
        admission.tidy(now + Duration::from_secs(120));
    }
}
