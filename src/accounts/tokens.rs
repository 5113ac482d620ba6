//! Where the cores get their 16-byte secrets: the general lobby's resume tokens and the
//! Warzone v4 login sessions' ids ([`super::sessions`]).
//!
//! A core never draws randomness itself (it is sans-IO): it is handed a [`TokenSource`]. The
//! driver passes [`os_tokens`], the OS CSPRNG; the unit tests and the seeded simulations
//! (`src/fuzzing/core_*.rs`) pass a deterministic sequence, so a run replays from its seed.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

/// A source of 16-byte secrets. A core draws again when a token is already live, a bounded
/// number of times (a broken source makes the request fail, never loop).
pub type TokenSource = Box<dyn FnMut() -> [u8; 16] + Send>;

/// Tokens from the OS CSPRNG, for the driver; `user` names the front end in the log. Should
/// the OS refuse (it does not on Linux once booted), a keyed hash of a counter stands in,
/// keyed by the standard library's per-process random keys, so tokens stay unguessable from
/// outside; the failure is logged once.
pub fn os_tokens(user: &'static str) -> TokenSource {
    let keys = RandomState::new();
    let mut counter: u64 = 0;
    let mut warned = false;
    Box::new(move || {
        let mut token = [0u8; 16];
        if let Err(e) = getrandom::fill(&mut token) {
            if !std::mem::replace(&mut warned, true) {
                log::error!("{user}: the OS random generator failed ({e}); using a keyed hash");
            }
            for half in token.chunks_mut(8) {
                counter = counter.wrapping_add(1);
                half.copy_from_slice(&keys.hash_one(counter).to_le_bytes());
            }
        }
        token
    })
}

/// A deterministic source for tests and seeded simulations: token `n` (from 1) carries `n`
/// in its first 8 bytes, little-endian, so distinct draws never collide.
pub fn counting_tokens() -> TokenSource {
    let mut next: u64 = 0;
    Box::new(move || {
        next = next.wrapping_add(1);
        let mut token = [0u8; 16];
        token[..8].copy_from_slice(&next.to_le_bytes());
        token
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_tokens_differ() {
        let mut tokens = os_tokens("test");
        assert_ne!(tokens(), tokens());
    }

    #[test]
    fn counting_tokens_count_from_one() {
        let mut tokens = counting_tokens();
        assert_eq!(tokens()[..8], 1u64.to_le_bytes());
        assert_eq!(tokens()[..8], 2u64.to_le_bytes());
    }
}
