//! Name and version policy for hosted Warzone 2100 games, shared by every lobby protocol.
//!
//! Implements docs/protocols/wz-lobby.md "Behaviour" (banned words, minimum version). A game
//! name is split into words on every character that is not alphanumeric, each word lowercased;
//! the name is refused if any word equals a banned word (also lowercased). Matching whole
//! words keeps "Scunthorpe"-style false positives out. Nothing here allocates more than the
//! 64-byte name, reads files or panics.

use std::collections::HashSet;

/// Parse a banned-words file: words separated by whitespace, `#` starts a comment that runs
/// to the end of the line. Words are lowercased.
pub fn parse_banned_words(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .flat_map(str::split_whitespace)
        .map(str::to_lowercase)
        .collect()
}

/// The configured name policy.
#[derive(Debug, Clone, Default)]
pub struct NamePolicy {
    banned: HashSet<String>,
}

impl NamePolicy {
    /// A policy refusing names containing any of `words` (case-insensitive, whole words).
    pub fn new(words: &[String]) -> NamePolicy {
        NamePolicy {
            banned: words
                .iter()
                .map(|word| word.trim().to_lowercase())
                .filter(|word| !word.is_empty())
                .collect(),
        }
    }

    /// True if the name holds a banned word.
    pub fn is_banned(&self, name: &[u8]) -> bool {
        if self.banned.is_empty() {
            return false;
        }
        // Invalid UTF-8 becomes U+FFFD; the name is at most 64 bytes, so this String is small.
        let lowered = String::from_utf8_lossy(name).to_lowercase();
        lowered
            .split(|c: char| !c.is_alphanumeric())
            .any(|word| !word.is_empty() && self.banned.contains(word))
    }
}

/// True if the netcode version `(major, minor)` is at least `min` (lexicographic: 2.3.7 is
/// `(2, 98)`, 3.x `(0x1000, 0)` and up, 4.x `(0x4000, n)`).
pub fn version_allowed(min: Option<(u32, u32)>, major: u32, minor: u32) -> bool {
    match min {
        Some(min) => (major, minor) >= min,
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banned_words_match_whole_words_case_insensitively() {
        let policy = NamePolicy::new(&parse_banned_words(
            "# comment\nBadWord  other\n\n  nasty # x",
        ));
        assert!(policy.is_banned(b"my BADWORD game"));
        assert!(policy.is_banned(b"NASTY!!"));
        assert!(policy.is_banned(b"x-other-y"));
        assert!(!policy.is_banned(b"badwords are fine"));
        assert!(!policy.is_banned(b"comment"));
        assert!(!policy.is_banned(b"\xff\xfe"));
        assert!(!NamePolicy::new(&[]).is_banned(b"badword"));
    }

    #[test]
    fn versions_compare_major_then_minor() {
        assert!(version_allowed(None, 0, 0));
        assert!(version_allowed(Some((2, 98)), 2, 98));
        assert!(!version_allowed(Some((2, 98)), 2, 96));
        assert!(version_allowed(Some((2, 98)), 0x4000, 0));
        assert!(!version_allowed(Some((0x4000, 0x4f)), 0x1000, 0xffff));
    }
}
