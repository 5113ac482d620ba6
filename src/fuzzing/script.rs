//! Where a simulation's choices come from: a seeded generator ([`ScriptRng`], the stable
//! `cargo test` simulations) or the fuzzer's input read as a script ([`Script`]).
//!
//! Both implement [`Choices`], so one simulation serves both: the seeded tests run thousands of
//! random steps, the fuzzer steers the same steps byte by byte. A [`Script`] spends one byte on
//! a choice among at most 256 (so a mutation of one byte changes one decision), two bytes up to
//! 65,536, eight beyond; past the end of its input every choice is 0 and
//! [`Script::is_done`] tells the simulation to stop.

/// A source of decisions for a simulation step.
pub trait Choices {
    /// A number in `0..n` (0 when `n` is 0 or 1).
    fn below(&mut self, n: u64) -> u64;

    /// Up to `max` bytes of arbitrary content (a peer's garbage).
    fn bytes(&mut self, max: usize) -> Vec<u8>;

    /// One of `items`, or `None` when there is none.
    fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        let index = self.below(items.len() as u64);
        items.get(usize::try_from(index).ok()?).copied()
    }

    /// True one time in `n`.
    fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

/// splitmix64: tiny, seedable, good enough to pick actions.
#[derive(Debug, Clone)]
pub struct ScriptRng(pub u64);

impl ScriptRng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Choices for ScriptRng {
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max as u64 + 1);
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// The fuzzer's input, read front to back as a simulation's decisions.
#[derive(Debug, Clone)]
pub struct Script<'a> {
    rest: &'a [u8],
    /// Set once a choice found the input used up.
    done: bool,
}

impl<'a> Script<'a> {
    /// A script over `input`.
    pub fn new(input: &'a [u8]) -> Script<'a> {
        Script {
            rest: input,
            done: input.is_empty(),
        }
    }

    /// Whether the input is used up: the simulation stops at the next step boundary.
    pub fn is_done(&self) -> bool {
        self.done || self.rest.is_empty()
    }

    /// Takes up to `n` bytes from the front.
    fn take(&mut self, n: usize) -> &'a [u8] {
        if self.rest.len() < n {
            self.done = true;
        }
        let (head, tail) = self.rest.split_at(n.min(self.rest.len()));
        self.rest = tail;
        head
    }
}

impl Choices for Script<'_> {
    fn below(&mut self, n: u64) -> u64 {
        let width = match n {
            0 | 1 => return 0,
            2..=256 => 1,
            257..=65_536 => 2,
            _ => 8,
        };
        let mut word = [0u8; 8];
        let taken = self.take(width);
        word[..taken.len()].copy_from_slice(taken);
        u64::from_le_bytes(word) % n
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max as u64 + 1) as usize;
        self.take(len).to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_spends_one_byte_per_small_choice_and_then_reads_zeros() {
        let mut script = Script::new(&[7, 0x34, 0x12, 3, b'a', b'b', b'c']);
        assert_eq!(script.below(5), 2);
        assert_eq!(script.below(1), 0, "a choice of one costs nothing");
        assert_eq!(script.below(60_000), 0x1234);
        assert_eq!(script.bytes(10), b"abc".to_vec());
        assert!(script.is_done());
        assert_eq!(script.below(200), 0);
        assert_eq!(script.pick::<u8>(&[]), None);
    }

    #[test]
    fn the_seeded_generator_stays_within_bounds() {
        let mut rng = ScriptRng(1);
        for n in [1, 2, 3, 255, 70_000] {
            assert!((0..200).all(|_| rng.below(n) < n));
        }
        assert_eq!(rng.below(0), 0);
        assert!(rng.bytes(4).len() <= 4);
    }
}
