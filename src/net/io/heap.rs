//! Gives the heap's free pages back to the OS after a spike.
//!
//! A sign-in storm, a chat burst or a flood into a large party grows the heap by megabytes;
//! once those buffers are freed, glibc keeps the pages (it returns only the top of the heap),
//! so a server that went through one spike would show its peak RSS for ever. The loop calls
//! [`HeapTrim::due`] after each event batch and every [`TRIM_EVERY`] at most it asks the
//! allocator to release whole free pages (`malloc_trim`, which `madvise`s them away). On
//! other C libraries this does nothing.

use std::time::{Duration, Instant};

/// How often the loop may trim. A trim walks the allocator's free lists (well under a
/// millisecond for the heaps lobbyd has), so once every few seconds costs nothing measurable.
pub const TRIM_EVERY: Duration = Duration::from_secs(5);

/// Rate-limit entries each front end looks at per tidy (`FrontEnd::tidy`, just before each
/// trim): a thousand hash lookups, well under a tenth of a millisecond of loop time; a full
/// table of the default 65,536 addresses is gone through in about five minutes (newcomers
/// forget two entries each besides, so a steady crowd keeps the table small by itself).
pub const FORGET_PER_TIDY: usize = 1024;

/// When the heap was last trimmed.
#[derive(Debug)]
pub struct HeapTrim {
    next: Instant,
}

impl HeapTrim {
    /// The first trim is [`TRIM_EVERY`] after `now`.
    pub fn new(now: Instant) -> HeapTrim {
        HeapTrim {
            next: now + TRIM_EVERY,
        }
    }

    /// When the loop must wake to trim.
    pub fn deadline(&self) -> Instant {
        self.next
    }

    /// Trims if the time has come; true when it did.
    pub fn due(&mut self, now: Instant) -> bool {
        if now < self.next {
            return false;
        }
        self.next = now + TRIM_EVERY;
        release_free_pages();
        true
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn release_free_pages() {
    // SAFETY: `malloc_trim` takes a plain integer, touches only the allocator's own state
    // under the allocator's locks (it is thread-safe like `malloc`/`free`), and frees no
    // memory that is in use: it only returns pages that hold no allocated chunk. No Rust
    // reference or invariant is involved.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_pages() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_once_per_period() {
        let start = Instant::now();
        let mut trim = HeapTrim::new(start);
        assert!(!trim.due(start));
        assert_eq!(trim.deadline(), start + TRIM_EVERY);
        assert!(trim.due(start + TRIM_EVERY));
        assert!(!trim.due(start + TRIM_EVERY + Duration::from_secs(1)));
        assert!(trim.due(start + TRIM_EVERY * 2));
    }

    #[test]
    fn a_trim_after_freeing_keeps_live_memory_intact() {
        let keep: Vec<u64> = (0..1000).collect();
        let spike: Vec<Vec<u8>> = (0..256).map(|i| vec![i as u8; 16 * 1024]).collect();
        drop(spike);
        release_free_pages();
        assert_eq!(keep.iter().sum::<u64>(), 999 * 1000 / 2);
    }
}
