//! How long the loop's passes take, from `poll`'s return to the end of the pass: the
//! `/metrics` counters `lobbyd_loop_passes_total{duration="under_1ms"|"1ms_to_5ms"|"over_5ms"}`.
//!
//! A single-threaded loop answers every request after the pass it arrived in, so the length
//! of a pass is the latency every client shares. An operator sees stalls here (a flood, a
//! sweep of expired connections, a slow disk elsewhere on the machine); the hostile-traffic
//! run needs them to find which passes well-behaved requests wait behind.

use std::time::Duration;

/// Counts of loop passes by duration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassDurations {
    under_1ms: u64,
    to_5ms: u64,
    over_5ms: u64,
}

impl PassDurations {
    /// Counts one pass that took `took`.
    pub fn record(&mut self, took: Duration) {
        let bucket = if took < Duration::from_millis(1) {
            &mut self.under_1ms
        } else if took <= Duration::from_millis(5) {
            &mut self.to_5ms
        } else {
            &mut self.over_5ms
        };
        *bucket += 1;
    }

    /// Hands each counter to `f` as `(name, duration bucket, value)`.
    pub fn visit(&self, f: &mut dyn FnMut(&'static str, &'static str, u64)) {
        f("loop_passes_total", "under_1ms", self.under_1ms);
        f("loop_passes_total", "1ms_to_5ms", self.to_5ms);
        f("loop_passes_total", "over_5ms", self.over_5ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(p: &PassDurations) -> Vec<(&'static str, u64)> {
        let mut out = Vec::new();
        p.visit(&mut |_, reason, value| out.push((reason, value)));
        out
    }

    #[test]
    fn each_pass_lands_in_the_bucket_of_its_duration() {
        let mut p = PassDurations::default();
        for us in [0, 999, 1_000, 5_000, 5_001, 60_000_000] {
            p.record(Duration::from_micros(us));
        }
        assert_eq!(
            counts(&p),
            [("under_1ms", 2), ("1ms_to_5ms", 2), ("over_5ms", 2)]
        );
    }
}
