//! The login worker: one thread that looks users up in the account database and checks
//! their passwords against the argon2id hashes, off the event loop (a check takes ~20 ms, see
//! [`super::store`]; a lookup can wait on another process's lock), fed by a bounded queue,
//! reporting through a channel and a `notify` callback.
//!
//! The event loop never touches the database or the disk for a login: the worker opens the
//! file read-only when it exists (looked for again at each job while it does not, so adding
//! the first user needs no restart), gives up on a locked database after [`LOOKUP_BUSY`]
//! and answers [`VerifyResult::Busy`], and checks unknown users against a decoy hash, so
//! "no such user" takes as long as "wrong password".
//!
//! It knows nothing of who asked: jobs are opaque numbers the caller chooses. Must not log
//! a password, block its submitter (a full queue is an error, not a wait), or outlive its
//! owner (dropping it skips queued jobs and joins the thread).

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::store::{decoy_hash, AccountStore, Verifier};
use super::VerifyResult;

/// How many verifications may wait for the worker before `submit` refuses (a backstop: the
/// server bounds its checks far lower, for every front end together, in `net::login`).
pub const WORKER_QUEUE: usize = 1024;
/// How long a lookup waits for a database another process has locked before the login is
/// answered "busy".
pub const LOOKUP_BUSY: Duration = Duration::from_millis(250);

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
            SubmitError::Full => write!(f, "login worker queue is full"),
            SubmitError::Stopped => write!(f, "login worker has stopped"),
        }
    }
}

impl std::error::Error for SubmitError {}

struct Job {
    id: u64,
    username: String,
    password: String,
}

/// The worker thread's state: the database (once it exists) and the decoy hash.
struct Lookup {
    db: PathBuf,
    store: Option<AccountStore>,
    /// `None` when the OS random generator failed at start: unknown users then get "busy"
    /// rather than a check against a guessable hash.
    decoy: Option<String>,
    /// Names the front end in log lines.
    label: &'static str,
    /// argon2's working memory, one buffer for every check of this worker.
    verifier: Verifier,
}

impl Lookup {
    fn check(&mut self, job: &Job) -> VerifyResult {
        if self.store.is_none() && self.db.exists() {
            match AccountStore::open_read_only(&self.db, LOOKUP_BUSY) {
                Ok(store) => self.store = Some(store),
                Err(e) => {
                    log::warn!("{} accounts: {}: {e}", self.label, self.db.display());
                    return VerifyResult::Busy;
                }
            }
        }
        let found = match self.store.as_ref().map(|store| store.find(&job.username)) {
            Some(Ok(found)) => found,
            Some(Err(e)) => {
                // Locked past LOOKUP_BUSY, or a damaged or replaced file: reopen next time.
                log::warn!("{} accounts: {}: {e}", self.label, self.db.display());
                self.store = None;
                return VerifyResult::Busy;
            }
            None => None,
        };
        match found {
            Some((user, hash)) if self.verifier.verify(&hash, &job.password) => {
                VerifyResult::Valid(user)
            }
            Some(_) => VerifyResult::Invalid,
            None => match &self.decoy {
                Some(decoy) => {
                    self.verifier.verify(decoy, &job.password);
                    VerifyResult::Invalid
                }
                None => VerifyResult::Busy,
            },
        }
    }
}

/// One thread that looks users up and verifies passwords off the event loop.
///
/// The driver submits `(job_id, username, password)`, and when `notify` fires (after every
/// result) drains [`PasswordWorker::try_recv`]. Dropping the worker skips the jobs still
/// queued and joins the thread.
pub struct PasswordWorker {
    jobs: Option<SyncSender<Job>>,
    results: Receiver<(u64, VerifyResult)>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PasswordWorker {
    /// Starts the thread over the database at `db`; `notify` is called on it after each
    /// result is ready; `label` names the front end in log lines.
    pub fn spawn(label: &'static str, db: PathBuf, notify: Box<dyn Fn() + Send>) -> PasswordWorker {
        let (jobs, inbox) = mpsc::sync_channel::<Job>(WORKER_QUEUE);
        let (outbox, results) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("login-worker".into())
            .spawn(move || {
                let decoy = match decoy_hash() {
                    Ok(decoy) => Some(decoy),
                    Err(e) => {
                        log::error!("{label} accounts: no decoy hash: {e}");
                        None
                    }
                };
                let mut lookup = Lookup {
                    db,
                    store: None,
                    decoy,
                    label,
                    verifier: Verifier::new(),
                };
                while let Ok(job) = inbox.recv() {
                    if stopping.load(Ordering::Relaxed) {
                        break;
                    }
                    let verdict = lookup.check(&job);
                    if outbox.send((job.id, verdict)).is_err() {
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

    /// Queues a login check; `Err(Full)` when [`WORKER_QUEUE`] are pending.
    pub fn submit(
        &self,
        job_id: u64,
        username: String,
        password: String,
    ) -> Result<(), SubmitError> {
        let jobs = self.jobs.as_ref().ok_or(SubmitError::Stopped)?;
        let job = Job {
            id: job_id,
            username,
            password,
        };
        jobs.try_send(job).map_err(|e| match e {
            TrySendError::Full(_) => SubmitError::Full,
            TrySendError::Disconnected(_) => SubmitError::Stopped,
        })
    }

    /// A finished check, `(job_id, verdict)`, if any.
    pub fn try_recv(&self) -> Option<(u64, VerifyResult)> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::UserId;
    use std::sync::mpsc::channel;
    use std::time::Instant;

    /// A fresh database path, removed when dropped.
    struct TempDb(PathBuf);

    impl TempDb {
        fn new(tag: &str) -> TempDb {
            let path = std::env::temp_dir().join(format!(
                "lobbyd-worker-{tag}-{}-{:?}.sqlite",
                std::process::id(),
                Instant::now()
            ));
            TempDb(path)
        }
    }

    impl Drop for TempDb {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn results(worker: &PasswordWorker, rx: &Receiver<()>, n: usize) -> Vec<(u64, VerifyResult)> {
        let mut got = Vec::new();
        while got.len() < n {
            rx.recv_timeout(Duration::from_secs(10)).expect("notified");
            while let Some(r) = worker.try_recv() {
                got.push(r);
            }
        }
        got
    }

    #[test]
    fn worker_looks_up_verifies_and_notifies() {
        let db = TempDb::new("verify");
        let user = AccountStore::open(&db.0)
            .and_then(|s| s.add_user("ann", "pw"))
            .expect("user");
        let (tx, rx) = channel();
        let worker = PasswordWorker::spawn(
            "test",
            db.0.clone(),
            Box::new(move || {
                let _ = tx.send(());
            }),
        );
        worker.submit(1, "ann".into(), "pw".into()).expect("submit");
        worker
            .submit(2, "ann".into(), "wrong".into())
            .expect("submit");
        worker
            .submit(3, "nobody".into(), "pw".into())
            .expect("submit");
        assert_eq!(
            results(&worker, &rx, 3),
            vec![
                (1, VerifyResult::Valid(user)),
                (2, VerifyResult::Invalid),
                (3, VerifyResult::Invalid)
            ]
        );
        assert_eq!(worker.try_recv(), None);
        assert_ne!(user, UserId(0));
    }

    #[test]
    fn no_database_yet_means_wrong_password_and_the_file_is_looked_for_again() {
        let db = TempDb::new("late");
        let (tx, rx) = channel();
        let worker = PasswordWorker::spawn(
            "test",
            db.0.clone(),
            Box::new(move || {
                let _ = tx.send(());
            }),
        );
        worker.submit(1, "ann".into(), "pw".into()).expect("submit");
        assert_eq!(results(&worker, &rx, 1), vec![(1, VerifyResult::Invalid)]);
        assert!(!db.0.exists(), "the server never creates the database");
        let user = AccountStore::open(&db.0)
            .and_then(|s| s.add_user("ann", "pw"))
            .expect("user");
        worker.submit(2, "ann".into(), "pw".into()).expect("submit");
        assert_eq!(
            results(&worker, &rx, 1),
            vec![(2, VerifyResult::Valid(user))]
        );
    }

    #[test]
    fn a_locked_database_answers_busy_quickly() {
        let db = TempDb::new("locked");
        AccountStore::open(&db.0)
            .and_then(|s| s.add_user("ann", "pw"))
            .expect("user");
        let (tx, rx) = channel();
        let worker = PasswordWorker::spawn(
            "test",
            db.0.clone(),
            Box::new(move || {
                let _ = tx.send(());
            }),
        );
        // A first check, unlocked, so the time measured below is the lookup's alone, not the
        // worker's start (its decoy hash takes seconds on a loaded machine).
        worker.submit(0, "ann".into(), "pw".into()).expect("submit");
        assert!(matches!(
            results(&worker, &rx, 1)[..],
            [(0, VerifyResult::Valid(_))]
        ));
        // Another process's write transaction (an admin session, a VACUUM, a backup).
        let holder = rusqlite::Connection::open(&db.0).expect("open");
        holder
            .execute_batch("PRAGMA journal_mode=DELETE; BEGIN EXCLUSIVE;")
            .expect("lock");
        let started = Instant::now();
        worker.submit(1, "ann".into(), "pw".into()).expect("submit");
        assert_eq!(results(&worker, &rx, 1), vec![(1, VerifyResult::Busy)]);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "gave up after {:?}, not SQLite's default 5 s",
            started.elapsed()
        );
        holder.execute_batch("COMMIT;").expect("unlock");
        worker.submit(2, "ann".into(), "pw".into()).expect("submit");
        assert!(matches!(
            results(&worker, &rx, 1)[..],
            [(2, VerifyResult::Valid(_))]
        ));
    }

    #[test]
    fn worker_queue_is_bounded_and_drop_stops() {
        let db = TempDb::new("bounded");
        let worker = PasswordWorker::spawn("test", db.0.clone(), Box::new(|| {}));
        let mut full = false;
        for job in 0..(WORKER_QUEUE as u64 + 8) {
            if worker.submit(job, "ann".into(), "pw".into()) == Err(SubmitError::Full) {
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
}
