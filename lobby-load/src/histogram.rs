//! A log-linear latency histogram (the HDR histogram idea, small and fixed-size).
//!
//! Values (nanoseconds, any `u64`) fall into buckets: below 128 every value has its own
//! bucket; above, each power-of-two range `[2^e, 2^(e+1))` is split into 64 equal buckets, so
//! a bucket is never wider than 1/64 of its lower bound. A percentile is reported as the
//! highest value of its bucket (clamped to the largest value recorded), so it over-states
//! the true value by less than 1.6 % and never under-states it. Recording is one index
//! computation and one increment: no allocation after [`Histogram::new`], no floating
//! point. Min, max, count and sum are exact.

/// log2 of the buckets per power-of-two range, doubled: 7 means exact values below 128 and
/// 64 buckets per range above.
const SUB_BITS: u32 = 7;
/// Values below this have a bucket each.
const LINEAR: u64 = 1 << SUB_BITS;
/// Buckets per power-of-two range above [`LINEAR`].
const HALF: u64 = LINEAR / 2;
/// Buckets needed for the whole `u64` range: the linear part plus one range per exponent
/// from `SUB_BITS` to 63.
const BUCKETS: usize = (LINEAR + (64 - SUB_BITS as u64) * HALF) as usize;

/// Latency counts with bounded relative error (see the module doc).
#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("min", &self.min())
            .field("max", &self.max)
            .finish()
    }
}

/// The bucket of `value`.
fn bucket_of(value: u64) -> usize {
    if value < LINEAR {
        return value as usize;
    }
    let exponent = 63 - value.leading_zeros();
    // Keep the top SUB_BITS bits: `mantissa` is in [HALF, LINEAR).
    let shift = exponent + 1 - SUB_BITS;
    let mantissa = value >> shift;
    (LINEAR + u64::from(shift - 1) * HALF + (mantissa - HALF)) as usize
}

/// The smallest and largest value of bucket `index`.
fn bucket_bounds(index: usize) -> (u64, u64) {
    let index = index as u64;
    if index < LINEAR {
        return (index, index);
    }
    let shift = (index - LINEAR) / HALF + 1;
    let mantissa = (index - LINEAR) % HALF + HALF;
    let low = mantissa << shift;
    let high = low + ((1u64 << shift) - 1);
    (low, high)
}

impl Histogram {
    /// An empty histogram (about 30 KiB of counters, allocated once).
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Counts one value.
    pub fn record(&mut self, value: u64) {
        self.counts[bucket_of(value)] += 1;
        self.count += 1;
        self.sum += u128::from(value);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        self.counts.fill(0);
        self.count = 0;
        self.sum = 0;
        self.min = u64::MAX;
        self.max = 0;
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Smallest value recorded, 0 when empty.
    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    /// Largest value recorded, 0 when empty.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Arithmetic mean, 0 when empty.
    pub fn mean(&self) -> u64 {
        match self.count {
            0 => 0,
            n => (self.sum / u128::from(n)) as u64,
        }
    }

    /// The value at percentile `p` (0 to 100): the smallest bucket upper bound at or below
    /// which at least `p` % of the values lie, clamped to the recorded maximum. 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let p = p.clamp(0.0, 100.0);
        // The rank of the value wanted, 1-based; at least 1 so p0 is the minimum.
        let rank = ((p / 100.0) * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0u64;
        for (index, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                // The bucket holds the rank-th value, so its upper bound never under-states
                // it; the recorded max is exact and never over-states it.
                return bucket_bounds(index).1.min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::quickcheck;

    #[test]
    fn buckets_cover_u64_contiguously() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        let mut expected_low = 0u64;
        for index in 0..BUCKETS {
            let (low, high) = bucket_bounds(index);
            assert_eq!(
                low, expected_low,
                "bucket {index} starts where the last ended"
            );
            assert!(high >= low);
            assert_eq!(bucket_of(low), index);
            assert_eq!(bucket_of(high), index);
            expected_low = high.wrapping_add(1);
        }
        assert_eq!(expected_low, 0, "the last bucket ends at u64::MAX");
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::new();
        for v in 0..LINEAR {
            h.record(v);
        }
        assert_eq!(h.count(), LINEAR);
        assert_eq!(h.percentile(50.0), LINEAR / 2 - 1);
        assert_eq!(h.percentile(100.0), LINEAR - 1);
        assert_eq!(h.percentile(0.0), 0);
        assert_eq!(h.min(), 0);
        assert_eq!(h.max(), LINEAR - 1);
    }

    #[test]
    fn percentiles_of_a_uniform_range() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for (p, exact) in [
            (50.0, 50_000_000u64),
            (99.0, 99_000_000),
            (99.9, 99_900_000),
        ] {
            let got = h.percentile(p);
            assert!(got >= exact, "p{p}: {got} under-states {exact}");
            assert!(
                (got - exact) as f64 <= exact as f64 / 64.0,
                "p{p}: {got} too far from {exact}"
            );
        }
        assert_eq!(h.percentile(100.0), 100_000_000);
        assert_eq!(h.mean(), 50_000_500);
    }

    #[test]
    fn one_outlier_is_the_max_not_the_p99() {
        let mut h = Histogram::new();
        for _ in 0..999 {
            h.record(10_000);
        }
        h.record(5_000_000_000);
        assert!(h.percentile(99.0) < 10_200);
        assert_eq!(h.percentile(99.95), 5_000_000_000);
        assert_eq!(h.max(), 5_000_000_000);
    }

    #[test]
    fn empty_reports_zero() {
        let h = Histogram::new();
        assert_eq!(h.percentile(99.0), 0);
        assert_eq!(h.min(), 0);
        assert_eq!(h.max(), 0);
        assert_eq!(h.mean(), 0);
    }

    #[test]
    fn merge_and_clear() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        a.record(5);
        b.record(7_000);
        b.record(9);
        a.merge(&b);
        assert_eq!(a.count(), 3);
        assert_eq!(a.min(), 5);
        assert_eq!(a.max(), 7_000);
        a.clear();
        assert_eq!(a.count(), 0);
        assert_eq!(a.percentile(50.0), 0);
    }

    quickcheck! {
        fn bucket_bounds_contain_value(v: u64) -> bool {
            let (low, high) = bucket_bounds(bucket_of(v));
            low <= v && v <= high && (high - low) <= low / 64
        }

        fn percentile_never_understates_nor_exceeds_max(values: Vec<u64>, p: u8) -> bool {
            if values.is_empty() {
                return true;
            }
            let mut h = Histogram::new();
            for &v in &values {
                h.record(v);
            }
            let p = f64::from(p % 101);
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
            let exact = sorted[rank - 1];
            let got = h.percentile(p);
            got >= exact && got <= h.max() && (got - exact) <= exact / 64
        }
    }
}
