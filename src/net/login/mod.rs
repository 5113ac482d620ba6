//! The driver's login bridge: checks a user's password for whichever core asked, without
//! knowing which one. Everything that touches the account database or the disk runs on the
//! accounts' worker thread ([`PasswordWorker`]: the lookup, read-only and giving up on a
//! locked database after a short busy timeout, then the argon2id check, 19 to 54 ms each,
//! docs/protocols/wz-v4.md "Sessions"); the loop thread only queues jobs and collects
//! verdicts, woken by the loop's `mio::Waker`. Each request carries an opaque job number the
//! caller chose, and its verdict is returned with it, so the caller maps it back to its own
//! request.
//!
//! Password checks are shared fairly (`crate::net::login::queue`): each front end's worker runs one
//! check at a time, taken from a [`FairQueue`] that gives every source address its turn (at
//! most [`CHECKS_PER_ADDRESS`] waiting or running per address), addresses with a recent
//! successful sign-in first, then new ones, then those whose checks waited too long, then
//! those that have only failed; a check that waited [`MAX_WAIT`] is not run. Every front end shares [`LoginBudget`]: each address's
//! history of successes and failures (its standing) and its budget of failed checks, at most
//! [`FAILURES_PER_MINUTE`] a minute ([`FAILURE_BURST`] back to back; tables of at most
//! [`FAILURE_TABLE`] addresses). A check refused by any of these is answered with the
//! protocol's busy answer ([`VerifyResult::Busy`]: the general lobby's CHALLENGE "try again",
//! Warzone v4's "Server busy, try again"), and every verdict and refusal is counted
//! ([`LoginStats`]).
//!
//! The server never creates the database: `lobbyd user add` does (until then every login is
//! answered as a wrong password). Must not log a password or block on the worker.

pub mod queue;

use std::collections::VecDeque;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mio::Waker;

use crate::accounts::worker::PasswordWorker;
use crate::accounts::VerifyResult;
use crate::ratelimit::{PerIpConfig, PerIpLimiter};

use crate::net::login::queue::{AddressBook, FairQueue, Pushed, Refused, Standing, ADDRESS_TABLE};
pub use crate::net::login::queue::{CHECKS_PER_ADDRESS, MAX_QUEUED_CHECKS, MAX_WAIT};

/// Failed checks one source address may have per minute.
pub const FAILURES_PER_MINUTE: u64 = 10;
/// Failed checks one source address may have back to back.
pub const FAILURE_BURST: u64 = 10;
/// Source addresses whose failures are remembered at once (the oldest is forgotten first).
pub const FAILURE_TABLE: usize = 16_384;

/// What the password checks of every front end of one server share: each source address's
/// sign-in history (its [`Standing`] in the queues) and its budget of failed checks. The loop
/// thread is its only user; the locks only let the front ends hold it (they must be `Send`)
/// and are never contended.
#[derive(Debug)]
pub struct LoginBudget {
    failures: Mutex<PerIpLimiter>,
    book: Mutex<AddressBook>,
}

impl LoginBudget {
    /// A budget with empty tables.
    pub fn new() -> Arc<LoginBudget> {
        Arc::new(LoginBudget {
            failures: Mutex::new(PerIpLimiter::new(PerIpConfig {
                rate: FAILURES_PER_MINUTE,
                per: Duration::from_secs(60),
                burst: FAILURE_BURST,
                byte_rate: 0,
                byte_burst: 0,
                max_entries: FAILURE_TABLE,
            })),
            book: Mutex::new(AddressBook::new(ADDRESS_TABLE)),
        })
    }

    /// `ip` may have another check (it has failed checks left in its budget).
    fn may_try(&self, now: Instant, ip: IpAddr) -> bool {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        failures.has_request_token(now, ip)
    }

    /// Where `ip`'s checks queue.
    fn standing(&self, now: Instant, ip: IpAddr) -> Standing {
        let book = self.book.lock().unwrap_or_else(PoisonError::into_inner);
        book.standing(now, ip)
    }

    /// A check from `ip` found the password right.
    fn succeeded(&self, now: Instant, ip: IpAddr) {
        let mut book = self.book.lock().unwrap_or_else(PoisonError::into_inner);
        book.succeeded(now, ip);
    }

    /// A check from `ip` waited too long and was not run: on its record.
    fn expired(&self, ip: IpAddr) {
        let mut book = self.book.lock().unwrap_or_else(PoisonError::into_inner);
        book.expired(ip);
    }

    /// A check from `ip` failed: one less left in its budget, and on its record.
    fn failed(&self, now: Instant, ip: IpAddr) {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        failures.allow_request(now, ip);
        drop(failures);
        let mut book = self.book.lock().unwrap_or_else(PoisonError::into_inner);
        book.failed(ip);
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
    /// `rate_limited`, `per_address`, `displaced`, `expired`).
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
    /// Checks refused: [`MAX_QUEUED_CHECKS`] were waiting, none of a worse standing (or the
    /// worker was gone).
    pub queue_full: u64,
    /// Checks refused: their address had no failed check left in its budget.
    pub rate_limited: u64,
    /// Checks refused: their address had [`CHECKS_PER_ADDRESS`] waiting or running.
    pub per_address: u64,
    /// Checks taken out of a full queue for one of a better standing.
    pub displaced: u64,
    /// Checks that waited [`MAX_WAIT`] and were not run.
    pub expired: u64,
}

/// A check waiting for the worker.
#[derive(Debug)]
struct Job {
    id: u64,
    ip: IpAddr,
    username: String,
    password: String,
}

/// Password verification state of one front end.
pub struct Logins {
    /// Names the front end in log lines (e.g. `wz v4`).
    label: &'static str,
    metrics: LoginMetrics,
    worker: PasswordWorker,
    budget: Arc<LoginBudget>,
    /// Checks waiting for the worker.
    queue: FairQueue<Job>,
    /// The check the worker has (it gets one at a time, so the queue decides the order).
    running: Option<(u64, IpAddr)>,
    /// Checks answered busy without running (displaced, expired), waiting to be collected.
    answered: VecDeque<u64>,
    /// Scratch for [`FairQueue::expire`].
    expired: Vec<Job>,
    stats: LoginStats,
}

impl std::fmt::Debug for Logins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logins")
            .field("label", &self.label)
            .field("queued", &self.queue.len())
            .field("running", &self.running.is_some())
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
            queue: FairQueue::new(MAX_QUEUED_CHECKS),
            running: None,
            answered: VecDeque::new(),
            expired: Vec::new(),
            stats: LoginStats::default(),
        }
    }

    /// Queues a verification from `ip` under the caller's `job` number; `Some(Busy)` when it
    /// is answered at once: `ip` has used up its failed checks or has
    /// [`CHECKS_PER_ADDRESS`] pending, the queue is full of checks of no worse standing, or the
    /// worker is gone. A check it displaces is answered through [`Logins::next_result`].
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
        let standing = self.budget.standing(now, ip);
        let id = job;
        let job = Job {
            id,
            ip,
            username: username.to_owned(),
            password,
        };
        match self.queue.push(now, ip, standing, job) {
            Pushed::Queued => {}
            Pushed::Displaced(old) => {
                self.stats.displaced += 1;
                self.answered.push_back(old.id);
            }
            Pushed::Refused(why, _) => {
                match why {
                    Refused::PerAddress => self.stats.per_address += 1,
                    Refused::Full => self.stats.queue_full += 1,
                }
                log::debug!("{} login from {ip}: refused ({why:?})", self.label);
                return Some(VerifyResult::Busy);
            }
        }
        self.dispatch(now);
        // A worker that is gone answered this very check busy already: say so now.
        let answered = self.answered.iter().rposition(|&done| done == id)?;
        self.answered.remove(answered);
        Some(VerifyResult::Busy)
    }

    /// Hands the worker the next check when it has none, answering the expired ones busy.
    fn dispatch(&mut self, now: Instant) {
        self.queue.expire(now, &mut self.expired);
        for job in self.expired.drain(..) {
            self.stats.expired += 1;
            self.budget.expired(job.ip);
            self.answered.push_back(job.id);
        }
        while self.running.is_none() {
            let Some((ip, job)) = self.queue.pop() else {
                return;
            };
            match self.worker.submit(job.id, job.username, job.password) {
                Ok(()) => self.running = Some((job.id, ip)),
                Err(e) => {
                    self.queue.finished(ip);
                    self.stats.queue_full += 1;
                    self.answered.push_back(job.id);
                    log::debug!("{} login: {e}", self.label);
                }
            }
        }
    }

    /// A finished verification, `(job, verdict)`, if any: a check answered busy without
    /// running, or the worker's verdict (a failed one is charged to its source address).
    pub fn next_result(&mut self, now: Instant) -> Option<(u64, VerifyResult)> {
        self.dispatch(now);
        if let Some(job) = self.answered.pop_front() {
            return Some((job, VerifyResult::Busy));
        }
        let (job, result) = self.worker.try_recv()?;
        if let Some((_, ip)) = self.running.filter(|&(running, _)| running == job) {
            self.running = None;
            self.queue.finished(ip);
            match result {
                VerifyResult::Valid(_) => self.budget.succeeded(now, ip),
                VerifyResult::Invalid => self.budget.failed(now, ip),
                VerifyResult::Busy => {}
            }
            self.dispatch(now);
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
        f(refused, "per_address", self.stats.per_address);
        f(refused, "displaced", self.stats.displaced);
        f(refused, "expired", self.stats.expired);
    }
}
