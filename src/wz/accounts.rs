//! Accounts for the v4 protocol's `login` (docs/protocols/wz-v4.md, "Login policy" and
//! "Sessions"): users in SQLite, argon2id password hashes, a verification worker, sessions.
//!
//! Hashing uses argon2id, version 0x13, m = 19 MiB, t = 2, p = 1 (the OWASP minimum for
//! argon2id), stored as PHC strings (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`) with a
//! 16-byte salt from the OS (`getrandom`). One verification with these parameters takes
//! **about 19 ms** on an idle core and 27-54 ms (mean 37 ms) on the 2-core build machine
//! under load (release build, `examples/argon2_verify.rs`, 20 rounds). That is far too long for the single-threaded event loop, so the server
//! hands verifications to [`PasswordWorker`], one background thread fed by a bounded queue.
//! Verification reads the parameters from the stored string, so they can be raised later
//! without invalidating old hashes.
//!
//! [`Sessions`] is sans-IO: it never reads the clock; the caller passes `now`.
//! This module must not log or store a password in clear, and must not touch sockets.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension};

/// Longest account name, in bytes.
pub const MAX_NAME: usize = 64;
/// Longest password, in bytes (the v4 wire bounds every string to 255 bytes).
pub const MAX_PASSWORD: usize = 255;
/// argon2 memory cost in KiB (19 MiB).
const ARGON2_M_KIB: u32 = 19 * 1024;
/// argon2 passes.
const ARGON2_T: u32 = 2;
/// argon2 lanes.
const ARGON2_P: u32 = 1;

/// A user's database id (`users.id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UserId(pub i64);

/// Why an account operation failed.
#[derive(Debug)]
pub enum AccountError {
    /// The name is empty, longer than [`MAX_NAME`] bytes, or has a control character.
    InvalidName,
    /// The password is empty or longer than [`MAX_PASSWORD`] bytes.
    InvalidPassword,
    /// A user with this name exists already.
    Exists,
    /// SQLite failed (cannot open, corrupt file, disk full, ...).
    Storage(rusqlite::Error),
    /// argon2 refused its inputs or a stored hash.
    Hash(argon2::password_hash::Error),
    /// The OS random number generator failed.
    Random(getrandom::Error),
}

impl fmt::Display for AccountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccountError::InvalidName => write!(
                f,
                "invalid user name (1 to {MAX_NAME} bytes, no control characters)"
            ),
            AccountError::InvalidPassword => {
                write!(f, "invalid password (1 to {MAX_PASSWORD} bytes)")
            }
            AccountError::Exists => write!(f, "a user with this name exists already"),
            AccountError::Storage(e) => write!(f, "account database: {e}"),
            AccountError::Hash(e) => write!(f, "password hashing: {e}"),
            AccountError::Random(e) => write!(f, "random number generator: {e}"),
        }
    }
}

impl std::error::Error for AccountError {}

impl From<rusqlite::Error> for AccountError {
    fn from(e: rusqlite::Error) -> AccountError {
        AccountError::Storage(e)
    }
}

/// Checks an account name: 1..=[`MAX_NAME`] bytes, no control characters.
pub fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len()) && !name.chars().any(char::is_control)
}

fn hasher() -> Result<Argon2<'static>, AccountError> {
    let params = Params::new(ARGON2_M_KIB, ARGON2_T, ARGON2_P, None)
        .map_err(|e| AccountError::Hash(e.into()))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// Hashes a password with argon2id and a fresh random salt; returns a PHC string.
pub fn hash_password(password: &str) -> Result<String, AccountError> {
    if !(1..=MAX_PASSWORD).contains(&password.len()) {
        return Err(AccountError::InvalidPassword);
    }
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(AccountError::Random)?;
    let salt = SaltString::encode_b64(&salt).map_err(AccountError::Hash)?;
    let hash = hasher()?
        .hash_password(password.as_bytes(), &salt)
        .map_err(AccountError::Hash)?;
    Ok(hash.to_string())
}

/// A hash of a random password, for verifying logins of unknown users against, so that
/// "no such user" takes as long as "wrong password". Compute once at startup.
pub fn decoy_hash() -> Result<String, AccountError> {
    let mut secret = [0u8; 24];
    getrandom::fill(&mut secret).map_err(AccountError::Random)?;
    let text: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    hash_password(&text)
}

/// Checks a password against a PHC string; a malformed hash verifies nothing.
pub fn verify_password(hash: &str, password: &str) -> bool {
    match PasswordHash::new(hash) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// The user table, in one SQLite file.
pub struct AccountStore {
    conn: Connection,
}

impl AccountStore {
    /// Opens (creating if missing) the database at `path` and its schema.
    pub fn open(path: impl AsRef<Path>) -> Result<AccountStore, AccountError> {
        let conn = Connection::open(path)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS users (
                id INTEGER PRIMARY KEY,
                name TEXT UNIQUE NOT NULL,
                password_hash TEXT NOT NULL,
                created INTEGER
            );",
        )?;
        Ok(AccountStore { conn })
    }

    /// Adds a user with an argon2id hash of `password`.
    pub fn add_user(&self, name: &str, password: &str) -> Result<UserId, AccountError> {
        if !valid_name(name) {
            return Err(AccountError::InvalidName);
        }
        let hash = hash_password(password)?;
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        match self.conn.execute(
            "INSERT INTO users (name, password_hash, created) VALUES (?1, ?2, ?3)",
            params![name, hash, created],
        ) {
            Ok(_) => Ok(UserId(self.conn.last_insert_rowid())),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == ErrorCode::ConstraintViolation =>
            {
                Err(AccountError::Exists)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes a user; `false` when there was none of that name.
    pub fn del_user(&self, name: &str) -> Result<bool, AccountError> {
        let removed = self
            .conn
            .execute("DELETE FROM users WHERE name = ?1", params![name])?;
        Ok(removed > 0)
    }

    /// All users, by id.
    pub fn list_users(&self) -> Result<Vec<(i64, String)>, AccountError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, name FROM users ORDER BY id")?;
        let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// A user's id and password hash.
    pub fn find(&self, name: &str) -> Result<Option<(UserId, String)>, AccountError> {
        Ok(self
            .conn
            .query_row(
                "SELECT id, password_hash FROM users WHERE name = ?1",
                params![name],
                |row| Ok((UserId(row.get(0)?), row.get(1)?)),
            )
            .optional()?)
    }
}

/// How many verifications may wait for the worker before `submit` refuses.
pub const WORKER_QUEUE: usize = 1024;

/// Why a verification job was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitError {
    /// [`WORKER_QUEUE`] jobs are pending; answer the client "busy".
    Full,
    /// The worker thread is gone.
    Stopped,
}

impl fmt::Display for SubmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubmitError::Full => write!(f, "password worker queue is full"),
            SubmitError::Stopped => write!(f, "password worker has stopped"),
        }
    }
}

impl std::error::Error for SubmitError {}

struct Job {
    id: u64,
    hash: String,
    password: String,
}

/// One thread that verifies passwords off the event loop.
///
/// The driver submits `(job_id, hash, password)`, and when `notify` fires (after every
/// result) drains [`PasswordWorker::try_recv`]. Dropping the worker skips the jobs still
/// queued and joins the thread.
pub struct PasswordWorker {
    jobs: Option<SyncSender<Job>>,
    results: Receiver<(u64, bool)>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PasswordWorker {
    /// Starts the thread; `notify` is called on it after each result is ready.
    pub fn spawn(notify: Box<dyn Fn() + Send>) -> PasswordWorker {
        let (jobs, inbox) = mpsc::sync_channel::<Job>(WORKER_QUEUE);
        let (outbox, results) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("wz-password".into())
            .spawn(move || {
                while let Ok(job) = inbox.recv() {
                    if stopping.load(Ordering::Relaxed) {
                        break;
                    }
                    let ok = verify_password(&job.hash, &job.password);
                    if outbox.send((job.id, ok)).is_err() {
                        break;
                    }
                    notify();
                }
            })
            .ok();
        PasswordWorker {
            jobs: thread.as_ref().map(|_| jobs),
            results,
            stop,
            thread,
        }
    }

    /// Queues a verification; `Err(Full)` when [`WORKER_QUEUE`] are pending.
    pub fn submit(&self, job_id: u64, hash: String, password: String) -> Result<(), SubmitError> {
        let jobs = self.jobs.as_ref().ok_or(SubmitError::Stopped)?;
        let job = Job {
            id: job_id,
            hash,
            password,
        };
        jobs.try_send(job).map_err(|e| match e {
            TrySendError::Full(_) => SubmitError::Full,
            TrySendError::Disconnected(_) => SubmitError::Stopped,
        })
    }

    /// A finished verification, `(job_id, password matched)`, if any.
    pub fn try_recv(&self) -> Option<(u64, bool)> {
        self.results.try_recv().ok()
    }
}

impl Drop for PasswordWorker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            // A panic on the worker has nothing left to report to; ignore it.
            let _ = thread.join();
        }
    }
}

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

impl Default for Sessions {
    fn default() -> Sessions {
        Sessions::new(SESSION_TTL, MAX_SESSIONS)
    }
}

impl Sessions {
    /// Sessions living `ttl`, at most `max` at once (at least one).
    pub fn new(ttl: Duration, max: usize) -> Sessions {
        Sessions {
            live: HashMap::new(),
            order: VecDeque::new(),
            next_seq: 0,
            ttl,
            max: max.max(1),
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

    /// Opens a session for `user`, evicting the oldest when full.
    pub fn create(&mut self, now: Instant, user: UserId) -> Result<SessionId, AccountError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(AccountError::Random)?;
        let id = SessionId(bytes);
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
        Ok(id)
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
    use std::sync::mpsc::channel;

    /// A fresh database path, removed when dropped.
    struct TempDb(std::path::PathBuf);

    impl TempDb {
        fn new(tag: &str) -> TempDb {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            TempDb(std::env::temp_dir().join(format!(
                "lobbyd-accounts-{tag}-{}-{nanos}.sqlite",
                std::process::id()
            )))
        }
    }

    impl Drop for TempDb {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    #[test]
    fn store_add_find_list_del() {
        let db = TempDb::new("store");
        let store = AccountStore::open(&db.0).expect("open");
        let alice = store.add_user("alice", "secret one").expect("add alice");
        let bob = store.add_user("bob", "hunter2").expect("add bob");
        assert!(matches!(
            store.add_user("alice", "other"),
            Err(AccountError::Exists)
        ));
        assert_eq!(
            store.list_users().expect("list"),
            vec![(alice.0, "alice".to_owned()), (bob.0, "bob".to_owned())]
        );
        let (id, hash) = store.find("alice").expect("find").expect("alice exists");
        assert_eq!(id, alice);
        assert!(hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert!(verify_password(&hash, "secret one"));
        assert!(!verify_password(&hash, "secret two"));
        assert_eq!(store.find("carol").expect("find"), None);
        assert!(store.del_user("alice").expect("del"));
        assert!(!store.del_user("alice").expect("del again"));
        drop(store);
        // The schema and data survive reopening.
        let store = AccountStore::open(&db.0).expect("reopen");
        assert_eq!(
            store.list_users().expect("list"),
            vec![(bob.0, "bob".to_owned())]
        );
    }

    #[test]
    fn names_and_passwords_are_bounded() {
        let db = TempDb::new("bounds");
        let store = AccountStore::open(&db.0).expect("open");
        for bad in ["", "a\nb", "tab\there", &"x".repeat(MAX_NAME + 1)] {
            assert!(matches!(
                store.add_user(bad, "pw"),
                Err(AccountError::InvalidName)
            ));
        }
        assert!(valid_name(&"é".repeat(MAX_NAME / 2)));
        assert!(matches!(
            store.add_user("ok", ""),
            Err(AccountError::InvalidPassword)
        ));
        assert!(matches!(
            hash_password(&"p".repeat(MAX_PASSWORD + 1)),
            Err(AccountError::InvalidPassword)
        ));
        assert!(!verify_password("not a phc string", "pw"));
        assert!(!verify_password("", ""));
    }

    #[test]
    fn decoy_matches_nothing_guessable() {
        let decoy = decoy_hash().expect("decoy");
        assert!(decoy.starts_with("$argon2id$"));
        assert!(!verify_password(&decoy, ""));
        assert!(!verify_password(&decoy, "password"));
    }

    #[test]
    fn salts_differ() {
        let a = hash_password("same").expect("hash");
        let b = hash_password("same").expect("hash");
        assert_ne!(a, b);
        assert!(verify_password(&a, "same") && verify_password(&b, "same"));
    }

    #[test]
    fn worker_verifies_and_notifies() {
        let hash = hash_password("pw").expect("hash");
        let (tx, rx) = channel();
        let worker = PasswordWorker::spawn(Box::new(move || {
            let _ = tx.send(());
        }));
        worker.submit(1, hash.clone(), "pw".into()).expect("submit");
        worker.submit(2, hash, "wrong".into()).expect("submit");
        let mut results = Vec::new();
        while results.len() < 2 {
            rx.recv_timeout(Duration::from_secs(10)).expect("notified");
            while let Some(r) = worker.try_recv() {
                results.push(r);
            }
        }
        assert_eq!(results, vec![(1, true), (2, false)]);
        assert_eq!(worker.try_recv(), None);
    }

    #[test]
    fn worker_queue_is_bounded_and_drop_stops() {
        let hash = hash_password("pw").expect("hash");
        let worker = PasswordWorker::spawn(Box::new(|| {}));
        let mut full = false;
        for job in 0..(WORKER_QUEUE as u64 + 8) {
            if worker.submit(job, hash.clone(), "pw".into()) == Err(SubmitError::Full) {
                full = true;
                break;
            }
        }
        assert!(full);
        let started = Instant::now();
        drop(worker);
        // Queued jobs are skipped, so dropping costs at most the job in progress.
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn session_ids() {
        let mut sessions = Sessions::default();
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
        let mut sessions = Sessions::new(Duration::from_secs(60), 10);
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
    fn sessions_evict_oldest() {
        let mut sessions = Sessions::new(SESSION_TTL, 3);
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
