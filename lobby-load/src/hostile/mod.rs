//! The `hostile-*` modes: attackers for lobbyd's hostile-traffic test (a shipped,
//! bounded test: `scripts/hostile.sh` runs them next to well-behaved
//! `udp-list`, `tcp-join`, `wz-list` and `lobby-join` clients and judges the server).
//!
//! One mode per front end, each a bounded mix of what a hostile crowd does to it:
//!
//! - `hostile-udp` ([`udp`]): random and near-valid datagrams (valid frames of the UDP lobby and
//!   instance protocols, then mutated: bytes flipped, truncated, extended, CRC broken or
//!   recomputed) at the UDP lobby and at the instance of a room the mode creates, `--rate`
//!   datagrams a second from every `--sources` address in turn.
//! - `hostile-tcp` (TCP lobby), `hostile-wz` (Warzone master server), `hostile-lobby` (general
//!   lobby), `hostile-http` (the metrics endpoint): a crowd ([`crowd`]) of `--concurrency`
//!   connections held open: a slowloris quarter (a partial frame, then one byte a second), a
//!   few connections that sign in and ask for output but never read, and the rest a
//!   connection flood (connect, say nothing, reconnect once closed) that fills the server's
//!   connection caps; plus `--rate` short connections a second writing random or near-valid
//!   streams; plus, for the TCP lobby and the general lobby, one party of `--members` in which
//!   one member floods (14,000 READY_REQs in one write; or a burst of
//!   chat lines and PINGs) while the others read promptly. What each front end is sent is in
//!   [`dialect`].
//!
//! An attacker's counters say what the server did to it (`extra`: connections closed by the
//! server per role, the longest a slowloris connection lived, replies, bytes); its errors are
//! only what a hardened server must never do: a reader of a flooded party dropped
//! (`victim_dropped`), such a reader refused (`victim_refused`), or the listener gone
//! (`connect_refused`). So `lobby-load` exits 1 exactly when the server misbehaved.

pub mod crowd;
pub mod dialect;
pub mod udp;

use std::io;
use std::time::Instant;

use super::options::{Mode, Options};
use super::runner;
use super::stats::Summary;

pub use dialect::Front;

/// Runs one hostile mode.
pub fn run(options: &Options, progress: &mut dyn io::Write) -> io::Result<Summary> {
    let poll = mio::Poll::new()?;
    match options.mode {
        Mode::HostileUdp => {
            let mut attack = udp::UdpAttack::setup(options, poll.registry())?;
            runner::drive(
                options,
                options.target.to_string(),
                poll,
                &mut attack,
                progress,
            )
        }
        mode => {
            let front = Front::of(mode)
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a hostile mode"))?;
            let mut crowd = crowd::Crowd::new(options, front);
            runner::drive(
                options,
                options.target.to_string(),
                poll,
                &mut crowd,
                progress,
            )
        }
    }
}

/// A small fast generator (splitmix64): attack bytes need variety, not quality, and the
/// crate has no random-number dependency.
#[derive(Clone, Debug)]
pub struct HostileRng(u64);

impl HostileRng {
    /// A generator seeded from the clock and the process id.
    pub fn seeded() -> HostileRng {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        HostileRng(nanos ^ (u64::from(std::process::id()) << 32))
    }

    /// A generator with a fixed seed (tests).
    pub fn with_seed(seed: u64) -> HostileRng {
        HostileRng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let bits = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bits[..chunk.len()]);
        }
    }

    /// `len` random bytes appended to `out`.
    pub fn extend(&mut self, out: &mut Vec<u8>, len: usize) {
        let at = out.len();
        out.resize(at + len, 0);
        self.fill(&mut out[at..]);
    }
}

/// Damages a valid message in one to three ways: a byte flipped, set to 0x00 or 0xff, the
/// message cut short, random bytes appended, or a random run overwritten. What comes out is
/// "near-valid": right framing most of the time, wrong somewhere.
pub fn mutate(rng: &mut HostileRng, msg: &mut Vec<u8>, most: usize) {
    for _ in 0..=rng.below(3) {
        let len = msg.len();
        match rng.below(6) {
            0 if len > 0 => {
                let at = rng.below(len);
                msg[at] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let at = rng.below(len);
                msg[at] = if rng.chance(50) { 0 } else { 0xff };
            }
            2 if len > 0 => msg.truncate(rng.below(len)),
            3 => {
                let extra = rng.below(64).min(most.saturating_sub(len));
                rng.extend(msg, extra);
            }
            4 if len > 0 => {
                let at = rng.below(len);
                let run = rng.below(len - at) + 1;
                rng.fill(&mut msg[at..at + run]);
            }
            _ => {}
        }
    }
    msg.truncate(most);
}

/// Milliseconds since `since`, saturated.
pub(crate) fn millis(since: Instant, now: Instant) -> u64 {
    u64::try_from(now.saturating_duration_since(since).as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_per_seed_and_bounded() {
        let (mut a, mut b) = (HostileRng::with_seed(7), HostileRng::with_seed(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
            assert!(a.below(10) < 10);
            b.below(10);
        }
        assert_eq!(a.below(0), 0);
        let mut buf = [0u8; 13];
        a.fill(&mut buf);
        assert!(buf.iter().any(|&x| x != 0));
    }

    #[test]
    fn mutations_stay_within_the_bound() {
        let mut rng = HostileRng::with_seed(1);
        let mut changed = 0;
        for _ in 0..1000 {
            let original = vec![0x55u8; 40];
            let mut msg = original.clone();
            mutate(&mut rng, &mut msg, 48);
            assert!(msg.len() <= 48);
            changed += usize::from(msg != original);
        }
        assert!(changed > 800, "only {changed} of 1000 changed");
    }
}
