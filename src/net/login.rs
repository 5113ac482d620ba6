//! The driver's login bridge: checks a user's password for whichever core asked, without
//! knowing which one. The account lookup runs in SQLite on the loop thread (one indexed
//! row, microseconds), the argon2id check on [`PasswordWorker`]'s thread (19 to 54 ms each,
//! docs/protocols/wz-v4.md "Sessions"); results come back through the loop's `mio::Waker`.
//! Each request carries an opaque job number the caller chose, and its verdict is returned
//! with it, so the caller maps it back to its own request.
//!
//! The server never creates the database: `lobbyd user add` does. While the file does not
//! exist every login is answered as a wrong password (after the same argon2 work, against a
//! decoy hash, so "no such user" is not faster than "wrong password"); the file is looked
//! for again at each login, so adding the first user needs no restart. Must not log a
//! password or block on the worker.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use mio::Waker;

use crate::accounts::store::{decoy_hash, AccountStore};
use crate::accounts::worker::PasswordWorker;
use crate::accounts::{AccountError, UserId, VerifyResult};

/// Password verification state.
pub struct Logins {
    /// Names the front end in log lines (e.g. `wz v4`).
    label: &'static str,
    db: PathBuf,
    store: Option<AccountStore>,
    decoy: String,
    worker: PasswordWorker,
    /// Jobs on the worker, with the account they are for (`None`: unknown user, checked
    /// against the decoy).
    jobs: HashMap<u64, Option<UserId>>,
}

impl std::fmt::Debug for Logins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logins")
            .field("label", &self.label)
            .field("db", &self.db)
            .field("open", &self.store.is_some())
            .field("jobs", &self.jobs.len())
            .finish()
    }
}

impl Logins {
    /// Starts the worker (it wakes the loop through `waker` after each result) and opens
    /// the database if it exists; `label` names the front end in log lines.
    pub fn new(
        label: &'static str,
        db: PathBuf,
        waker: Arc<Waker>,
    ) -> Result<Logins, AccountError> {
        let decoy = decoy_hash()?;
        let worker = PasswordWorker::spawn(Box::new(move || {
            // A failed wake only delays the result to the next loop iteration.
            let _ = waker.wake();
        }));
        let mut logins = Logins {
            label,
            db,
            store: None,
            decoy,
            worker,
            jobs: HashMap::new(),
        };
        logins.open_if_present()?;
        match logins.store {
            Some(_) => log::info!("{label} accounts: {}", logins.db.display()),
            None => log::info!(
                "{label} accounts: no database at {} yet; logins fail until `lobbyd user add` \
                 creates it",
                logins.db.display()
            ),
        }
        Ok(logins)
    }

    fn open_if_present(&mut self) -> Result<(), AccountError> {
        if self.store.is_none() && self.db.exists() {
            self.store = Some(AccountStore::open(&self.db)?);
        }
        Ok(())
    }

    /// Queues a verification under the caller's `job` number; `Some(result)` when it is
    /// decided at once (queue full, database error).
    pub fn verify(&mut self, job: u64, username: &str, password: String) -> Option<VerifyResult> {
        let label = self.label;
        if let Err(e) = self.open_if_present() {
            log::warn!("{label} accounts: {}: {e}", self.db.display());
            return Some(VerifyResult::Busy);
        }
        let found = match self.store.as_ref().map(|store| store.find(username)) {
            Some(Ok(found)) => found,
            Some(Err(e)) => {
                log::warn!("{label} accounts: {}: {e}", self.db.display());
                return Some(VerifyResult::Busy);
            }
            None => None,
        };
        let (user, hash) = match found {
            Some((user, hash)) => (Some(user), hash),
            None => (None, self.decoy.clone()),
        };
        match self.worker.submit(job, hash, password) {
            Ok(()) => {
                self.jobs.insert(job, user);
                None
            }
            Err(e) => {
                log::debug!("{label} login: {e}");
                Some(VerifyResult::Busy)
            }
        }
    }

    /// A finished verification, `(job, verdict)`, if any.
    pub fn next_result(&mut self) -> Option<(u64, VerifyResult)> {
        let (job, matched) = self.worker.try_recv()?;
        let result = match self.jobs.remove(&job) {
            Some(Some(user)) if matched => VerifyResult::Valid(user),
            _ => VerifyResult::Invalid,
        };
        Some((job, result))
    }
}
