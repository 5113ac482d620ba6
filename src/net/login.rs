//! The driver's login bridge: checks a user's password for whichever core asked, without
//! knowing which one. Everything that touches the account database or the disk runs on the
//! accounts' worker thread ([`PasswordWorker`]: the lookup, read-only and giving up on a
//! locked database after a short busy timeout, then the argon2id check, 19 to 54 ms each,
//! docs/protocols/wz-v4.md "Sessions"); the loop thread only queues jobs and collects
//! verdicts, woken by the loop's `mio::Waker`. Each request carries an opaque job number the
//! caller chose, and its verdict is returned with it, so the caller maps it back to its own
//! request.
//!
//! Password checks are bounded for the whole server, every front end together
//! ([`LoginBudget`]: a flood of sign-ins with passwords from many addresses would
//! otherwise queue minutes of the worker's CPU): at most [`MAX_PENDING_CHECKS`] checks
//! queued or running, and per source address at most [`FAILURES_PER_MINUTE`] failed checks
//! a minute ([`FAILURE_BURST`] back to back; a table of at most [`FAILURE_TABLE`]
//! addresses). A check refused by either bound is answered at once with the protocol's busy
//! answer ([`VerifyResult::Busy`]: the general lobby's CHALLENGE "try again", Warzone v4's
//! "Server busy, try again"), and every verdict and refusal is counted ([`LoginStats`]).
//!
//! The server never creates the database: `lobbyd user add` does (until then every login is
//! answered as a wrong password). Must not log a password or block on the worker.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mio::Waker;

use crate::accounts::worker::PasswordWorker;
use crate::accounts::VerifyResult;
use crate::ratelimit::{PerIpConfig, PerIpLimiter};

/// Password checks queued or running at once, every front end together: at 20-50 ms each,
/// at most about 1.5 s of one worker's time, well within the 5 s sign-in and handshake
/// deadlines a waiting client has.
pub const MAX_PENDING_CHECKS: usize = 32;
/// Failed checks one source address may have per minute.
pub const FAILURES_PER_MINUTE: u64 = 10;
/// Failed checks one source address may have back to back.
pub const FAILURE_BURST: u64 = 10;
/// Source addresses whose failures are remembered at once (the oldest is forgotten first).
pub const FAILURE_TABLE: usize = 16_384;

/// What the password checks of every front end of one server share: how many are queued or
/// running, and each source address's budget of failed checks. The loop thread is its only
/// user; the atomic and the lock only let the front ends hold it (they must be `Send`).
#[derive(Debug)]
pub struct LoginBudget {
    pending: AtomicUsize,
    max_pending: usize,
    failures: Mutex<PerIpLimiter>,
}

impl LoginBudget {
    /// A budget of `max_pending` checks queued or running at once.
    pub fn new(max_pending: usize) -> Arc<LoginBudget> {
        Arc::new(LoginBudget {
            pending: AtomicUsize::new(0),
            max_pending,
            failures: Mutex::new(PerIpLimiter::new(PerIpConfig {
                rate: FAILURES_PER_MINUTE,
                per: Duration::from_secs(60),
                burst: FAILURE_BURST,
                byte_rate: 0,
                byte_burst: 0,
                max_entries: FAILURE_TABLE,
            })),
        })
    }

    /// Takes a place for one more check; false when [`MAX_PENDING_CHECKS`] are pending.
    fn reserve(&self) -> bool {
        let max = self.max_pending;
        self.pending
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// A check finished (or was never run): its place is free again.
    fn release(&self) {
        let _ = self
            .pending
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// Checks queued or running now.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    /// `ip` may have another check (it has failed checks left in its budget).
    fn may_try(&self, now: Instant, ip: IpAddr) -> bool {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        failures.has_request_token(now, ip)
    }

    /// A check from `ip` failed: one less left in its budget.
    fn failed(&self, now: Instant, ip: IpAddr) {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        failures.allow_request(now, ip);
    }
}

/// What a front end's [`Logins`] needs from the server: the loop's waker and the budget
/// every front end shares.
#[derive(Clone, Debug)]
pub struct LoginShared {
    /// Wakes the loop when a verdict is ready.
    pub waker: Arc<Waker>,
    /// The server-wide bound on password checks.
    pub budget: Arc<LoginBudget>,
}

/// Names of one front end's login counters on the metrics page.
#[derive(Clone, Copy, Debug)]
pub struct LoginMetrics {
    /// Checks run, labelled by verdict (`valid`, `invalid`, `busy`).
    pub checks: &'static str,
    /// Checks answered busy without running, labelled by cause (`queue_full`,
    /// `rate_limited`).
    pub refused: &'static str,
}

/// One front end's login counters.
#[derive(Clone, Debug, Default)]
pub struct LoginStats {
    /// Checks that found the password right.
    pub valid: u64,
    /// Checks that found it wrong (or the user unknown).
    pub invalid: u64,
    /// Checks the worker answered busy (a locked database).
    pub busy: u64,
    /// Checks refused: [`MAX_PENDING_CHECKS`] were pending (or the worker was gone).
    pub queue_full: u64,
    /// Checks refused: their address had no failed check left in its budget.
    pub rate_limited: u64,
}

/// Password verification state of one front end.
pub struct Logins {
    /// Names the front end in log lines (e.g. `wz v4`).
    label: &'static str,
    metrics: LoginMetrics,
    worker: PasswordWorker,
    budget: Arc<LoginBudget>,
    /// The source address of every job queued (at most the budget's bound).
    sources: HashMap<u64, IpAddr>,
    stats: LoginStats,
}

impl std::fmt::Debug for Logins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logins")
            .field("label", &self.label)
            .field("pending", &self.sources.len())
            .finish()
    }
}

impl Logins {
    /// Starts the worker over the database at `db` (it wakes the loop through the shared
    /// waker after each verdict); `label` names the front end in log lines, `metrics` its
    /// counters.
    pub fn new(
        label: &'static str,
        metrics: LoginMetrics,
        db: PathBuf,
        shared: LoginShared,
    ) -> Logins {
        log::info!("{label} accounts: {}", db.display());
        let waker = shared.waker;
        let worker = PasswordWorker::spawn(
            label,
            db,
            Box::new(move || {
                // A failed wake only delays the result to the next loop iteration.
                let _ = waker.wake();
            }),
        );
        Logins {
            label,
            metrics,
            worker,
            budget: shared.budget,
            sources: HashMap::new(),
            stats: LoginStats::default(),
        }
    }

    /// Queues a verification from `ip` under the caller's `job` number; `Some(Busy)` when it
    /// is answered at once: `ip` has used up its failed checks, [`MAX_PENDING_CHECKS`] are
    /// pending, or the worker is gone.
    pub fn verify(
        &mut self,
        now: Instant,
        job: u64,
        ip: IpAddr,
        username: &str,
        password: String,
    ) -> Option<VerifyResult> {
        if !self.budget.may_try(now, ip) {
            self.stats.rate_limited += 1;
            log::debug!("{} login from {ip}: too many failed checks", self.label);
            return Some(VerifyResult::Busy);
        }
        if !self.budget.reserve() {
            self.stats.queue_full += 1;
            log::debug!("{} login from {ip}: checks queue full", self.label);
            return Some(VerifyResult::Busy);
        }
        match self.worker.submit(job, username.to_owned(), password) {
            Ok(()) => {
                self.sources.insert(job, ip);
                None
            }
            Err(e) => {
                self.budget.release();
                self.stats.queue_full += 1;
                log::debug!("{} login: {e}", self.label);
                Some(VerifyResult::Busy)
            }
        }
    }

    /// A finished verification, `(job, verdict)`, if any; a failed one is charged to its
    /// source address.
    pub fn next_result(&mut self, now: Instant) -> Option<(u64, VerifyResult)> {
        let (job, result) = self.worker.try_recv()?;
        if let Some(ip) = self.sources.remove(&job) {
            self.budget.release();
            if result == VerifyResult::Invalid {
                self.budget.failed(now, ip);
            }
        }
        match result {
            VerifyResult::Valid(_) => self.stats.valid += 1,
            VerifyResult::Invalid => self.stats.invalid += 1,
            VerifyResult::Busy => self.stats.busy += 1,
        }
        Some((job, result))
    }

    /// Calls `f(name, label, value)` for every counter.
    pub fn visit(&self, mut f: impl FnMut(&'static str, &'static str, u64)) {
        let (checks, refused) = (self.metrics.checks, self.metrics.refused);
        f(checks, "valid", self.stats.valid);
        f(checks, "invalid", self.stats.invalid);
        f(checks, "busy", self.stats.busy);
        f(refused, "queue_full", self.stats.queue_full);
        f(refused, "rate_limited", self.stats.rate_limited);
    }
}

impl Drop for Logins {
    /// The jobs still queued die with the worker: their places go back to the budget.
    fn drop(&mut self) {
        for _ in self.sources.drain() {
            self.budget.release();
        }
    }
}
