//! The account store: users and their argon2id password hashes in one SQLite file.
//!
//! Hashing uses argon2id, version 0x13, m = 19 MiB, t = 2, p = 1 (the OWASP minimum for
//! argon2id), stored as PHC strings (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`) with a
//! 16-byte salt from the OS (`getrandom`). One verification with these parameters takes
//! **about 19 ms** on an idle core and 27-54 ms (mean 37 ms) on the 2-core build machine
//! under load (release build, `examples/argon2_verify.rs`, 20 rounds). That is far too long
//! for the single-threaded event loop, so the server hands verifications to
//! [`super::worker::PasswordWorker`]. Verification reads the parameters from the stored
//! string, so they can be raised later without invalidating old hashes.
//!
//! Everything here blocks (SQLite, ~20 ms hashes): call it from the CLI, from the loop only
//! for one indexed lookup, or from the worker. Must not log or keep a password in clear.
//! The one clock read of the accounts, `SystemTime::now()`, stamps a new user's creation.

use std::fmt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use argon2::password_hash::{Output, PasswordHash, PasswordHasher, Salt, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::{valid_name, AccountError, UserId, MAX_PASSWORD};

/// argon2 memory cost in KiB (19 MiB).
const ARGON2_M_KIB: u32 = 19 * 1024;
/// argon2 passes.
const ARGON2_T: u32 = 2;
/// argon2 lanes.
const ARGON2_P: u32 = 1;

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

/// Checks a password against a PHC string; a malformed hash verifies nothing. One-shot: it
/// allocates argon2's working memory (19 MiB at the default cost) for this check alone; a
/// caller that checks many passwords keeps a [`Verifier`] instead.
pub fn verify_password(hash: &str, password: &str) -> bool {
    Verifier::new().verify(hash, password)
}

/// Checks passwords against PHC strings in one reused working memory.
///
/// argon2 needs `m` KiB of memory blocks per check (19 MiB at the default cost). Allocating
/// them for every check, as `PasswordVerifier::verify_password` does, leaves a freed 19 MiB
/// region in the calling thread's malloc arena each time, which the allocator keeps or maps
/// afresh; a burst of wrong sign-ins then lifted the server's RSS by ~150 MB for seconds.
/// Here the blocks are allocated at the first check, grown only for a hash with a larger
/// memory cost, and reused by every later check, so the worker's memory is one buffer.
#[derive(Default)]
pub struct Verifier {
    blocks: Vec<Block>,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("blocks", &self.blocks.len())
            .finish()
    }
}

impl Verifier {
    /// A verifier with no working memory yet (it is allocated at the first check).
    pub fn new() -> Verifier {
        Verifier::default()
    }

    /// Bytes of working memory held (argon2's blocks of 1 KiB).
    pub fn memory_bytes(&self) -> usize {
        self.blocks.len() * std::mem::size_of::<Block>()
    }

    /// Checks `password` against the PHC string `hash` with the algorithm, version and
    /// parameters the string names; a malformed or unsupported string verifies nothing.
    pub fn verify(&mut self, hash: &str, password: &str) -> bool {
        self.check(hash, password).unwrap_or(false)
    }

    fn check(&mut self, hash: &str, password: &str) -> Option<bool> {
        let parsed = PasswordHash::new(hash).ok()?;
        let algorithm = Algorithm::try_from(parsed.algorithm).ok()?;
        let version = match parsed.version {
            Some(v) => Version::try_from(v).ok()?,
            None => Version::default(),
        };
        let params = Params::try_from(&parsed).ok()?;
        let (salt, expected) = (parsed.salt?, parsed.hash?);
        let mut salt_bytes = [0u8; MAX_SALT];
        let salt = salt.decode_b64(&mut salt_bytes).ok()?;
        let mut computed = [0u8; MAX_OUTPUT];
        let computed = computed.get_mut(..expected.len())?;
        let blocks = params.block_count();
        if self.blocks.len() < blocks {
            // Grown once, to exactly what the stored cost needs (not doubled).
            self.blocks.clear();
            self.blocks.shrink_to_fit();
            self.blocks.resize(blocks, Block::default());
        }
        Argon2::new(algorithm, version, params)
            .hash_password_into_with_memory(
                password.as_bytes(),
                salt,
                computed,
                &mut self.blocks[..blocks],
            )
            .ok()?;
        // `Output`'s equality is constant-time.
        Some(Output::new(computed).ok()? == expected)
    }
}

/// Room for a PHC string's salt, decoded (at most [`Salt::MAX_LENGTH`] Base64 characters).
const MAX_SALT: usize = Salt::MAX_LENGTH;
/// Room for a PHC string's hash output.
const MAX_OUTPUT: usize = Output::MAX_LENGTH;

/// Checks, at start, that the server can use the account database at `path`: its directory
/// exists, and the file, if it is there yet, opens and holds the users table. The server never
/// creates it (`lobbyd user add` does), so a missing file is fine; a missing directory is a
/// typo the operator must hear about at once, not at the first login.
pub fn check_database(path: &Path) -> Result<(), String> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!(
            "account database {}: directory {} does not exist",
            path.display(),
            dir.display()
        ));
    }
    if path.exists() {
        let store = AccountStore::open_read_only(path, std::time::Duration::from_secs(1))
            .map_err(|e| format!("account database {}: {e}", path.display()))?;
        store
            .find("")
            .map_err(|e| format!("account database {}: {e}", path.display()))?;
    }
    Ok(())
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

    /// Opens an existing database read-only, as the server does: it never writes (and never
    /// creates the file), and a lookup that finds the database locked by another process
    /// (an admin transaction, a backup, a VACUUM) gives up after `busy` instead of waiting
    /// SQLite's default 5 s.
    pub fn open_read_only(
        path: impl AsRef<Path>,
        busy: std::time::Duration,
    ) -> Result<AccountStore, AccountError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(busy)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::MAX_NAME;

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
    fn one_verifier_reuses_its_memory_and_agrees_with_argon2() {
        use argon2::password_hash::PasswordVerifier;
        let hash = hash_password("right").expect("hash");
        let mut verifier = Verifier::new();
        assert_eq!(verifier.memory_bytes(), 0, "allocated at the first check");
        assert!(!verifier.verify(&hash, "wrong"));
        let held = verifier.memory_bytes();
        assert_eq!(
            held,
            ARGON2_M_KIB as usize * 1024,
            "exactly the stored cost"
        );
        for guess in ["a", "b", "right", "c"] {
            let parsed = PasswordHash::new(&hash).expect("phc");
            let reference = Argon2::default()
                .verify_password(guess.as_bytes(), &parsed)
                .is_ok();
            assert_eq!(verifier.verify(&hash, guess), reference, "{guess}");
            assert_eq!(verifier.memory_bytes(), held, "no second buffer");
        }
        // A hash of a smaller cost runs in the same buffer; garbage verifies nothing.
        let small = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(64, 1, 1, None).expect("params"),
        )
        .hash_password(b"tiny", &SaltString::encode_b64(&[7; 16]).expect("salt"))
        .expect("hash")
        .to_string();
        assert!(verifier.verify(&small, "tiny") && !verifier.verify(&small, "big"));
        assert!(!verifier.verify("$argon2id$v=19$m=19456,t=2,p=1$", "x"));
        assert!(!verifier.verify("$md5$abc", "x"));
        assert_eq!(verifier.memory_bytes(), held);
    }
}
