//! The R-Type core's player hashes from the operating system: [`OsRandom`], a `getrandom`
//! wrapper the driver injects into [`crate::rtype::RtypeCore::new`] as its
//! [`HashSource`] (the core itself draws no randomness; simulations pass a seeded one).

use crate::rtype::HashSource;

/// Hashes drawn from the OS per system call by [`OsRandom`].
const RANDOM_BATCH: usize = 32;

/// The player-hash source: 64 bits at a time from the operating system's CSPRNG, fetched
/// [`RANDOM_BATCH`] at a time so that a join does not cost a `getrandom` call of its own
/// (fewer system calls per TCP join). The values are the CSPRNG's, unchanged; they only
/// wait in this buffer until handed out, once each.
#[derive(Debug, Default)]
pub struct OsRandom {
    batch: [u64; RANDOM_BATCH],
    left: usize,
}

impl OsRandom {
    /// The next 64 random bits; 0 if the OS generator fails (the core refuses 0 and
    /// draws again).
    pub fn next_u64(&mut self) -> u64 {
        if self.left == 0 {
            let mut bytes = [0u8; RANDOM_BATCH * 8];
            if getrandom::fill(&mut bytes).is_err() {
                return 0;
            }
            for (value, chunk) in self.batch.iter_mut().zip(bytes.chunks_exact(8)) {
                let mut word = [0u8; 8];
                word.copy_from_slice(chunk);
                *value = u64::from_ne_bytes(word);
            }
            self.left = RANDOM_BATCH;
        }
        self.left -= 1;
        // Each value is handed out once: taken, and its slot cleared.
        std::mem::take(&mut self.batch[self.left])
    }

    /// A fresh source as the core takes it.
    pub fn hash_source() -> HashSource {
        let mut random = OsRandom::default();
        Box::new(move || random.next_u64())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn os_random_hands_out_each_batched_value_once() {
        let mut random = OsRandom::default();
        // Three batches and a bit: values are fresh across refills (a zero or a repeat out of
        // 100 draws of 64 random bits would mean a broken buffer, not bad luck).
        let drawn: HashSet<u64> = (0..100).map(|_| random.next_u64()).collect();
        assert_eq!(drawn.len(), 100);
        assert!(!drawn.contains(&0));
    }
}
