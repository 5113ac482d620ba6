//! Login sessions: the random token a successful login hands out and the bounded table of
//! live ones (docs/protocols/wz-v4.md "Sessions").
//!
//! Sans-IO: it never reads the clock (the caller passes `now`) and draws its ids from the
//! [`TokenSource`] it is given (the driver's is the OS CSPRNG). Bounded: at most `max`
//! sessions, the oldest evicted.
//! Must not log session ids: they are secrets, so [`Sessions`]' `Debug` shows counts only.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use super::tokens::TokenSource;
use super::UserId;

/// A session token: 128 random bits, shown as 32 lowercase hex characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionId([u8; 16]);

impl SessionId {
    /// Parses the 32-hex-character form (either case); `None` for anything else.
    pub fn parse(text: &str) -> Option<SessionId> {
        let bytes = text.as_bytes();
        if bytes.len() != 32 {
            return None;
        }
        let mut id = [0u8; 16];
        for (out, pair) in id.iter_mut().zip(bytes.chunks_exact(2)) {
            let hi = char::from(*pair.first()?).to_digit(16)?;
            let lo = char::from(*pair.get(1)?).to_digit(16)?;
            *out = u8::try_from(hi * 16 + lo).ok()?;
        }
        Some(SessionId(id))
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// Default session lifetime: 24 hours.
pub const SESSION_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// Default number of live sessions; the oldest is evicted beyond it.
pub const MAX_SESSIONS: usize = 10_000;
/// Draws for a session id not live yet before [`Sessions::create`] gives up (a broken source).
const ID_DRAWS: usize = 8;

struct Session {
    user: UserId,
    created: Instant,
    seq: u64,
}

/// Live login sessions, keyed by [`SessionId`]. Sans-IO: time is passed in.
pub struct Sessions {
    live: HashMap<SessionId, Session>,
    /// Creation order, for evicting the oldest; entries of removed sessions linger until
    /// compacted (their `seq` no longer matches).
    order: VecDeque<(u64, SessionId)>,
    next_seq: u64,
    ttl: Duration,
    max: usize,
    ids: TokenSource,
}

/// Shows the count only: session ids are secrets.
impl fmt::Debug for Sessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sessions")
            .field("live", &self.live.len())
            .field("ttl", &self.ttl)
            .field("max", &self.max)
            .finish()
    }
}

impl Sessions {
    /// Sessions living `ttl`, at most `max` at once (at least one), their ids drawn from `ids`.
    pub fn new(ttl: Duration, max: usize, ids: TokenSource) -> Sessions {
        Sessions {
            live: HashMap::new(),
            order: VecDeque::new(),
            next_seq: 0,
            ttl,
            max: max.max(1),
            ids,
        }
    }

    /// Number of sessions held (expired ones count until looked up or evicted).
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Opens a session for `user`, evicting the oldest when full; `None` when the id source
    /// gave only live ids in [`ID_DRAWS`] draws (a broken source).
    pub fn create(&mut self, now: Instant, user: UserId) -> Option<SessionId> {
        let live = &self.live;
        let id = (0..ID_DRAWS)
            .map(|_| SessionId((self.ids)()))
            .find(|id| !live.contains_key(id))?;
        while self.live.len() >= self.max {
            let Some((seq, old)) = self.order.pop_front() else {
                break;
            };
            if self.live.get(&old).is_some_and(|s| s.seq == seq) {
                self.live.remove(&old);
            }
        }
        if self.order.len() > 2 * self.max {
            let live = &self.live;
            self.order
                .retain(|(seq, id)| live.get(id).is_some_and(|s| s.seq == *seq));
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.live.insert(
            id,
            Session {
                user,
                created: now,
                seq,
            },
        );
        self.order.push_back((seq, id));
        Some(id)
    }

    /// The user of a live session given in its text form; expired sessions are dropped.
    pub fn validate(&mut self, now: Instant, text: &str) -> Option<UserId> {
        let id = SessionId::parse(text)?;
        let session = self.live.get(&id)?;
        if now.saturating_duration_since(session.created) >= self.ttl {
            self.live.remove(&id);
            return None;
        }
        Some(session.user)
    }

    /// Ends a session (logout, account deleted); `false` if it was not live.
    pub fn remove(&mut self, text: &str) -> bool {
        SessionId::parse(text).is_some_and(|id| self.live.remove(&id).is_some())
    }

    /// Drops every expired session (call from a periodic timer).
    pub fn expire(&mut self, now: Instant) {
        let ttl = self.ttl;
        self.live
            .retain(|_, s| now.saturating_duration_since(s.created) < ttl);
        let live = &self.live;
        self.order
            .retain(|(seq, id)| live.get(id).is_some_and(|s| s.seq == *seq));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::tokens::{counting_tokens, os_tokens};

    #[test]
    fn session_ids() {
        let mut sessions = Sessions::new(SESSION_TTL, MAX_SESSIONS, os_tokens("test"));
        let now = Instant::now();
        let id = sessions.create(now, UserId(7)).expect("create");
        let text = id.to_string();
        assert_eq!(text.len(), 32);
        assert!(text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_eq!(SessionId::parse(&text), Some(id));
        assert_eq!(SessionId::parse(&text.to_uppercase()), Some(id));
        assert_eq!(SessionId::parse(&text[1..]), None);
        assert_eq!(SessionId::parse(&format!("{}g", &text[1..])), None);
        assert_eq!(SessionId::parse("é0123456789abcdef0123456789abcd"), None);
        assert_ne!(sessions.create(now, UserId(7)).expect("create"), id);
    }

    #[test]
    fn sessions_expire_and_are_removed() {
        let mut sessions = Sessions::new(Duration::from_secs(60), 10, counting_tokens());
        let t0 = Instant::now();
        let a = sessions.create(t0, UserId(1)).expect("create").to_string();
        assert_eq!(
            sessions.validate(t0 + Duration::from_secs(59), &a),
            Some(UserId(1))
        );
        assert_eq!(sessions.validate(t0 + Duration::from_secs(60), &a), None);
        assert!(sessions.is_empty());
        let b = sessions.create(t0, UserId(2)).expect("create").to_string();
        assert_eq!(sessions.validate(t0, "nonsense"), None);
        assert!(sessions.remove(&b));
        assert!(!sessions.remove(&b));
        assert_eq!(sessions.validate(t0, &b), None);
        let c = sessions.create(t0, UserId(3)).expect("create").to_string();
        sessions.expire(t0 + Duration::from_secs(61));
        assert_eq!(sessions.validate(t0, &c), None);
        assert_eq!(sessions.len(), 0);
    }

    #[test]
    fn a_live_id_is_drawn_again_and_a_stuck_source_refused() {
        let t0 = Instant::now();
        // Every other draw repeats the first id: the second session takes the next one.
        let mut n = 0u8;
        let mut sessions = Sessions::new(
            SESSION_TTL,
            10,
            Box::new(move || {
                n = n.wrapping_add(1);
                [if n % 2 == 0 { 1 } else { n }; 16]
            }),
        );
        let a = sessions.create(t0, UserId(1)).expect("first");
        let b = sessions.create(t0, UserId(2)).expect("drawn again");
        assert_ne!(a, b);
        assert_eq!(sessions.validate(t0, &a.to_string()), Some(UserId(1)));
        assert_eq!(sessions.validate(t0, &b.to_string()), Some(UserId(2)));
        let mut stuck = Sessions::new(SESSION_TTL, 10, Box::new(|| [7; 16]));
        assert!(stuck.create(t0, UserId(1)).is_some());
        assert_eq!(stuck.create(t0, UserId(2)), None);
        assert_eq!(stuck.len(), 1);
    }

    #[test]
    fn sessions_evict_oldest() {
        let mut sessions = Sessions::new(SESSION_TTL, 3, counting_tokens());
        let t0 = Instant::now();
        let ids: Vec<String> = (0..5)
            .map(|n| sessions.create(t0, UserId(n)).expect("create").to_string())
            .collect();
        assert_eq!(sessions.len(), 3);
        assert_eq!(sessions.validate(t0, &ids[0]), None);
        assert_eq!(sessions.validate(t0, &ids[1]), None);
        assert_eq!(sessions.validate(t0, &ids[4]), Some(UserId(4)));
        // Removed sessions leave stale order entries; churn must not grow them without bound.
        for n in 0..100 {
            let id = sessions.create(t0, UserId(n)).expect("create").to_string();
            sessions.remove(&id);
        }
        assert!(sessions.order.len() <= 2 * 3 + 1);
        assert_eq!(sessions.validate(t0, &ids[4]), Some(UserId(4)));
    }
}
