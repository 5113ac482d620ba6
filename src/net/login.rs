//! The driver's login bridge: checks a user's password for whichever core asked, without
//! knowing which one. Everything that touches the account database or the disk runs on the
//! accounts' worker thread ([`PasswordWorker`]: the lookup, read-only and giving up on a
//! locked database after a short busy timeout, then the argon2id check, 19 to 54 ms each,
//! docs/protocols/wz-v4.md "Sessions"); the loop thread only queues jobs and collects
//! verdicts, woken by the loop's `mio::Waker`. Each request carries an opaque job number the
//! caller chose, and its verdict is returned with it, so the caller maps it back to its own
//! request.
//!
//! The server never creates the database: `lobbyd user add` does (until then every login is
//! answered as a wrong password). Must not log a password or block on the worker.

use std::path::PathBuf;
use std::sync::Arc;

use mio::Waker;

use crate::accounts::worker::PasswordWorker;
use crate::accounts::VerifyResult;

/// Password verification state.
pub struct Logins {
    /// Names the front end in log lines (e.g. `wz v4`).
    label: &'static str,
    worker: PasswordWorker,
}

impl std::fmt::Debug for Logins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logins")
            .field("label", &self.label)
            .finish()
    }
}

impl Logins {
    /// Starts the worker over the database at `db` (it wakes the loop through `waker` after
    /// each verdict); `label` names the front end in log lines.
    pub fn new(label: &'static str, db: PathBuf, waker: Arc<Waker>) -> Logins {
        log::info!("{label} accounts: {}", db.display());
        let worker = PasswordWorker::spawn(
            label,
            db,
            Box::new(move || {
                // A failed wake only delays the result to the next loop iteration.
                let _ = waker.wake();
            }),
        );
        Logins { label, worker }
    }

    /// Queues a verification under the caller's `job` number; `Some(result)` when it is
    /// decided at once (the worker's queue is full, or the worker is gone: "busy").
    pub fn verify(&mut self, job: u64, username: &str, password: String) -> Option<VerifyResult> {
        match self.worker.submit(job, username.to_owned(), password) {
            Ok(()) => None,
            Err(e) => {
                log::debug!("{} login: {e}", self.label);
                Some(VerifyResult::Busy)
            }
        }
    }

    /// A finished verification, `(job, verdict)`, if any.
    pub fn next_result(&mut self) -> Option<(u64, VerifyResult)> {
        self.worker.try_recv()
    }
}
