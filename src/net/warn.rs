//! Rate-limited log lines: a flood of bad input, or of rooms, must not fill the operator's
//! disk.
//!
//! Warnings a peer can trigger (no instance port left, a registration failure under load),
//! and info lines whose number peers decide (an instance socket per room opened and closed),
//! go through a [`WarnBudget`]: at most `burst` lines, refilled at `per_minute` lines per
//! minute; what is suppressed is counted and reported in the next line that gets through.

use std::time::{Duration, Instant};

use crate::ratelimit::TokenBucket;

/// The shared budget of warning lines.
#[derive(Debug)]
pub struct WarnBudget {
    bucket: TokenBucket,
    suppressed: u64,
    level: log::Level,
}

impl WarnBudget {
    /// Warnings: at most `burst` lines at once, `per_minute` sustained.
    pub fn new(now: Instant, per_minute: u64, burst: u64) -> WarnBudget {
        WarnBudget::at_level(log::Level::Warn, now, per_minute, burst)
    }

    /// Lines at `level`: at most `burst` at once, `per_minute` sustained.
    pub fn at_level(level: log::Level, now: Instant, per_minute: u64, burst: u64) -> WarnBudget {
        WarnBudget {
            bucket: TokenBucket::new(now, per_minute, Duration::from_secs(60), burst),
            suppressed: 0,
            level,
        }
    }

    /// Logs `message` at the budget's level if the budget allows; counts it otherwise.
    pub fn warn(&mut self, now: Instant, message: std::fmt::Arguments<'_>) {
        if self.bucket.try_take(now, 1) {
            if self.suppressed > 0 {
                log::log!(
                    self.level,
                    "{message} ({} similar lines suppressed)",
                    self.suppressed
                );
                self.suppressed = 0;
            } else {
                log::log!(self.level, "{message}");
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
