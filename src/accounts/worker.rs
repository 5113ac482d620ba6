//! The password-verification worker: one thread that checks passwords against their
//! argon2id hashes off the event loop (a check takes ~20 ms, see [`super::store`]), fed by a
//! bounded queue, reporting through a channel and a `notify` callback.
//!
//! It knows nothing of who asked: jobs are opaque numbers the caller chooses. Must not log
//! a password, block its submitter (a full queue is an error, not a wait), or outlive its
//! owner (dropping it skips queued jobs and joins the thread).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::store::verify_password;

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
            .name("password-worker".into())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::store::hash_password;
    use std::sync::mpsc::channel;
    use std::time::{Duration, Instant};

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
}
