//! Rate-limited warnings: a flood of bad input must not fill the operator's disk.
//!
//! Warnings a peer can trigger (no instance port left, a registration failure under load)
//! go through one [`WarnBudget`]: at most `burst` lines, refilled at `per_minute` lines per
//! minute; what is suppressed is counted and reported in the next line that gets through.

use std::time::{Duration, Instant};

use crate::ratelimit::TokenBucket;

/// The shared budget of warning lines.
#[derive(Debug)]
pub struct WarnBudget {
    bucket: TokenBucket,
    suppressed: u64,
}

impl WarnBudget {
    /// At most `burst` lines at once, `per_minute` sustained.
    pub fn new(now: Instant, per_minute: u64, burst: u64) -> WarnBudget {
        WarnBudget {
            bucket: TokenBucket::new(now, per_minute, Duration::from_secs(60), burst),
            suppressed: 0,
        }
    }

    /// Logs `message` at warn level if the budget allows; counts it otherwise.
    pub fn warn(&mut self, now: Instant, message: std::fmt::Arguments<'_>) {
        if self.bucket.try_take(now, 1) {
            if self.suppressed > 0 {
                log::warn!(
                    "{message} ({} similar warnings suppressed)",
                    self.suppressed
                );
                self.suppressed = 0;
            } else {
                log::warn!("{message}");
            }
        } else {
            self.suppressed += 1;
        }
    }

    /// Warnings dropped since the last one logged.
    pub fn suppressed(&self) -> u64 {
        self.suppressed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floods_are_cut_to_the_budget() {
        let start = Instant::now();
        let mut budget = WarnBudget::new(start, 60, 5);
        for _ in 0..1000 {
            budget.warn(start, format_args!("flood"));
        }
        assert_eq!(budget.suppressed(), 995);
        // One line per second refills; the next one reports the suppressed count and resets.
        budget.warn(start + Duration::from_secs(1), format_args!("later"));
        assert_eq!(budget.suppressed(), 0);
    }
}
