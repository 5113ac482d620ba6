//! The poll loop: one thread, one `mio::Poll`, every socket, and the one seam through which
//! every front end plugs into it.
//!
//! # The seam
//!
//! A front end is one protocol's serving half: it **owns** its sockets (listeners,
//! connections, datagram sockets, probes), its sans-IO core and its buffers, and it has its
//! own **tokens** ([`Target`] variants, `net::token`): the R-Type front end (`net::rtype`)
//! `LobbyUdp`, `Instance`, `TcpListener`, `TcpConn`; the Warzone server (`net::wz`)
//! `WzListener`, `WzConn`, `WzProbe`. It registers them itself, with the registry it is given.
//! The loop owns only the poll, the waker and control channel, the signals, the timerfd
//! that wakes it at the next deadline, and the operators' metrics endpoint (whose connection
//! deadlines it wakes for too).
//!
//! The loop makes these calls, and no others, through [`FrontEnd`]:
//! - `run_due_timers(registry)` when its deadline has passed as a batch of events begins,
//!   and again every [`TIMER_CHECK_EVERY`] events of a long batch: timers first, so a
//!   countdown is not late behind a batch of accepts and joins (a no-op by default);
//! - `ready(registry, target, event)` for every readiness event on one of its tokens;
//! - `after_events(registry)` once per event batch: timers due, deferred work, removal of
//!   what closed in the batch (so a reused slab key never sees a stale event), accepting
//!   again below the limit;
//! - `next_deadline()` before each poll: the loop sleeps until the earliest of them;
//! - `tidy(now)` every few seconds, just before the loop gives free heap pages back: forget
//!   state that decides nothing any more (rate buckets full again) and spare capacity;
//! - `snapshot(&mut Snapshot)` when an operator's page or a test asks: the front end adds its
//!   counters, rooms or games;
//! - `reload()` on SIGHUP;
//! - on SIGINT/SIGTERM or a shutdown request, at the end of the pass that read it (the rest
//!   of its batch served first), **shutdown with a deadline**: `shutdown(registry)`
//!   (stop accepting, queue the protocol's goodbye), then `flush_shutdown(registry)` after
//!   every wake until no front end has bytes left or [`SHUTDOWN_FLUSH`] has passed (or,
//!   while a front end sees its child processes out, its `shutdown_wake`), then
//!   `close_all(registry)`.
//!
//! Readiness is drained until `WouldBlock` under per-socket budgets inside each front end;
//! nothing a peer does ends the loop: only a shutdown request does.
//!
//! **Work left over.** A pass of the loop does bounded work (`net::io::pass`: accepts per
//! listener event, sockets released and deadlines run per pass), so a request that arrives
//! during a flood or a wave of expiring connections waits for one slice, not for all of it.
//! A front end with work left returns a `next_deadline` that has passed (`pass::work_left`):
//! the loop then polls without sleeping and calls `after_events` again, where the next
//! slice is done. That includes a listener left with a backlog, which (edge-triggered) will
//! raise no new event.

use std::io;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::time::{Duration, Instant};

use mio::event::Event;
use mio::{Events, Interest, Poll, Registry, Waker};

use crate::metrics::{ListenerView, LoadHistory, LoadSample, Snapshot, SAMPLE_EVERY, STATUS_ROWS};

use crate::net::http::{MetricsEndpoint, MetricsEndpointStats, MetricsLimits};
use crate::net::io::heap::HeapTrim;
use crate::net::io::pass::refused_at_descriptor_limit;
use crate::net::io::wake::PreciseWake;
use crate::net::loop_stats::PassDurations;
use crate::net::token::{FrontEndKind, Target};
use crate::net::warn::WarnBudget;

/// Readiness events handled per poll.
const EVENTS_CAPACITY: usize = 1024;
/// Events handled between two looks at the clock for timers that fell due meanwhile.
pub const TIMER_CHECK_EVERY: usize = 16;
/// How long shutdown waits for clients to take their last bytes.
pub const SHUTDOWN_FLUSH: Duration = Duration::from_millis(500);

/// A request from outside the loop.
#[derive(Debug)]
pub enum Control {
    /// Stop serving and return from the loop.
    Shutdown,
    /// Send back a [`Snapshot`] of the counters and rooms (with the status page's names).
    Snapshot(Sender<Snapshot>),
}

/// One protocol's serving half, as the loop sees it (the seam: see the module doc).
pub trait FrontEnd: Send {
    /// One readiness event for a token this front end registered.
    fn ready(&mut self, registry: &Registry, target: Target, event: &Event);
    /// Its deadline has passed before or during a batch of events: run the timers due now
    /// and write what they send, without removing anything (that waits for
    /// `after_events`, so no stale event of the batch meets a reused key).
    fn run_due_timers(&mut self, _registry: &Registry) {}
    /// Once per event batch, after the events: timers due, deferred work, and removal of the
    /// sockets closed in the batch.
    fn after_events(&mut self, registry: &Registry);
    /// Every [`TRIM_EVERY`](crate::net::io::heap::TRIM_EVERY), just before the loop gives the heap's
    /// free pages back: forget what no longer decides anything (rate-limit entries whose
    /// buckets are full again, at most [`FORGET_PER_TIDY`](crate::net::io::heap::FORGET_PER_TIDY) of
    /// them) and give back tables' spare capacity, so the trim returns those pages too and a
    /// crowd that has gone leaves no memory behind.
    fn tidy(&mut self, _now: Instant) {}
    /// When the loop must wake for this front end next; an instant already passed when
    /// work is left from a bounded pass (see "Work left over" in the module doc).
    fn next_deadline(&self) -> Option<Instant>;
    /// Adds this front end's counters, rooms or games to an operators' snapshot.
    fn snapshot(&self, snap: &mut Snapshot);
    /// Adds this front end's requests so far and its connections, members, rooms and games
    /// to a sample of the status page's charts: a few additions, no allocation.
    fn load(&self, sample: &mut LoadSample);
    /// SIGHUP: reread whatever files this front end serves from.
    fn reload(&mut self) {}
    /// The server is going away: stop accepting and queue the protocol's goodbye.
    fn shutdown(&mut self, registry: &Registry);
    /// Writes what is still queued; true while bytes wait (or processes are being seen
    /// out, see `shutdown_wake`). Called after every wake of the shutdown wait, until it
    /// returns false or the shutdown deadline passes.
    fn flush_shutdown(&mut self, registry: &Registry) -> bool;
    /// During the shutdown wait: when this front end must be called again for something
    /// other than bytes (a child process's SIGKILL due, or the end of the wait for it). The
    /// wait lasts until then even past [`SHUTDOWN_FLUSH`]; `None` by default.
    fn shutdown_wake(&self) -> Option<Instant> {
        None
    }
    /// The shutdown wait is over: close every connection.
    fn close_all(&mut self, registry: &Registry);
}

/// Everything the loop owns.
pub struct Server {
    poll: Poll,
    control: Receiver<Control>,
    /// The front ends, at the index of their [`FrontEndKind`].
    front_ends: [Option<Box<dyn FrontEnd>>; FrontEndKind::COUNT],
    started: Instant,
    metrics: Option<MetricsEndpoint>,
    signals: Option<signal_hook_mio::v1_0::Signals>,
    /// Warnings the loop itself may repeat are rate-limited through this.
    warnings: WarnBudget,
    /// Wakes the loop at its next deadline to the microsecond (mio's timeout is in ms).
    wake: PreciseWake,
    /// Gives the heap's free pages back after a spike (`net::io::heap`).
    trim: HeapTrim,
    /// How long each pass of the loop took (`/metrics`).
    passes: PassDurations,
    /// Every bound socket, for the status page.
    listeners: Vec<ListenerView>,
    /// The load of the last 15 minutes (the status page's charts), one sample per
    /// [`SAMPLE_EVERY`], in a ring allocated once.
    history: LoadHistory,
    /// When the next sample is due.
    next_sample: Instant,
}

impl Server {
    /// A loop over `poll` with no front end yet.
    pub(super) fn new(poll: Poll, control: Receiver<Control>) -> io::Result<Server> {
        let wake = PreciseWake::new(poll.registry(), Target::Timer.token())?;
        Ok(Server {
            poll,
            control,
            front_ends: Default::default(),
            started: Instant::now(),
            metrics: None,
            signals: None,
            warnings: WarnBudget::new(Instant::now(), 60, 20),
            wake,
            trim: HeapTrim::new(Instant::now()),
            passes: PassDurations::default(),
            listeners: Vec::new(),
            history: LoadHistory::default(),
            next_sample: Instant::now(),
        })
    }

    /// The loop's registry, for front ends to register their sockets with.
    pub(super) fn registry(&self) -> &Registry {
        self.poll.registry()
    }

    /// Plugs a front end in; its tokens are those of `kind`.
    pub(super) fn serve(&mut self, kind: FrontEndKind, front_end: Box<dyn FrontEnd>) {
        self.front_ends[kind as usize] = Some(front_end);
    }

    /// Every bound socket, as the status page lists them.
    pub(super) fn set_listeners(&mut self, listeners: Vec<ListenerView>) {
        self.listeners = listeners;
    }

    /// Serves the metrics endpoint on `listener`, within `limits`.
    pub(super) fn serve_metrics(
        &mut self,
        listener: mio::net::TcpListener,
        limits: MetricsLimits,
    ) -> io::Result<()> {
        self.metrics = Some(MetricsEndpoint::new(
            listener,
            self.poll.registry(),
            limits,
        )?);
        Ok(())
    }

    /// Stops on SIGINT/SIGTERM (and reloads on SIGHUP) delivered to this process.
    /// `signals` come from [`signals`], created before the sockets were bound.
    pub(super) fn handle_signals(
        &mut self,
        mut signals: signal_hook_mio::v1_0::Signals,
    ) -> io::Result<()> {
        self.poll
            .registry()
            .register(&mut signals, Target::Signals.token(), Interest::READABLE)?;
        self.signals = Some(signals);
        Ok(())
    }

    fn front_ends(&mut self) -> impl Iterator<Item = &mut Box<dyn FrontEnd>> {
        self.front_ends.iter_mut().flatten()
    }

    /// True when a termination signal arrived.
    fn serve_signals(&mut self) -> bool {
        let Some(signals) = self.signals.as_mut() else {
            return false;
        };
        let mut stop = false;
        let mut reload = false;
        for signal in signals.pending() {
            match signal {
                signal_hook::consts::SIGHUP => reload = true,
                other => {
                    log::info!("signal {other}: shutting down");
                    stop = true;
                }
            }
        }
        if reload {
            log::info!("SIGHUP: reloading");
            for front_end in self.front_ends() {
                front_end.reload();
            }
        }
        stop
    }

    fn metrics_ready(&mut self, target: Target) {
        let Some(mut endpoint) = self.metrics.take() else {
            return;
        };
        match target {
            Target::MetricsListener => endpoint.accept(self.poll.registry(), Instant::now()),
            Target::MetricsConn(key) => {
                // The endpoint is out of `self` while it answers: its counters come along.
                let stats = endpoint.stats();
                endpoint.ready(key, self.poll.registry(), |rows| {
                    self.snapshot_with(rows, Some(stats))
                })
            }
            _ => {}
        }
        self.metrics = Some(endpoint);
    }

    /// The earliest deadline of any front end.
    fn front_end_deadline(&self) -> Option<Instant> {
        self.front_ends
            .iter()
            .flatten()
            .filter_map(|front_end| front_end.next_deadline())
            .min()
    }

    /// Runs the timers of every front end if the earliest deadline has passed; returns the
    /// earliest deadline after that.
    fn timers_first(&mut self, deadline: Option<Instant>) -> Option<Instant> {
        if !deadline.is_some_and(|at| Instant::now() >= at) {
            return deadline;
        }
        let registry = self.poll.registry();
        for front_end in self.front_ends.iter_mut().flatten() {
            front_end.run_due_timers(registry);
        }
        self.front_end_deadline()
    }

    /// Runs until a shutdown request arrives (or the control channel is dropped).
    pub fn run(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(EVENTS_CAPACITY);
        self.take_sample(Instant::now());
        loop {
            let front_end_deadline = self.front_end_deadline();
            let deadline = front_end_deadline
                .into_iter()
                .chain([self.trim.deadline(), self.next_sample])
                .chain(self.metrics.as_ref().and_then(|m| m.next_deadline()))
                .min();
            let now = Instant::now();
            if let Some(at) = deadline {
                if let Err(e) = self.wake.arm(at, now) {
                    // The millisecond poll timeout below still wakes the loop.
                    self.warnings
                        .warn(now, format_args!("cannot arm the loop's timerfd: {e}"));
                }
            }
            let timeout = deadline.map(|at| at.saturating_duration_since(now));
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            let pass_began = Instant::now();
            let mut timers = self.timers_first(front_end_deadline);
            // A shutdown request ends the loop after this pass, not in it: the rest of the
            // batch is served first, since its edges do not come again (a health check
            // accepted in the same batch would otherwise wait unanswered until the endpoint
            // closes).
            let mut stop = false;
            for (n, event) in events.iter().enumerate() {
                if n % TIMER_CHECK_EVERY == TIMER_CHECK_EVERY - 1 {
                    timers = self.timers_first(timers);
                }
                let Some(target) = Target::from_token(event.token()) else {
                    continue;
                };
                match target {
                    Target::Waker => stop |= self.serve_control(),
                    Target::Signals => stop |= self.serve_signals(),
                    Target::Timer => self.wake.fired(),
                    Target::MetricsListener | Target::MetricsConn(_) => self.metrics_ready(target),
                    _ => {
                        let Some(kind) = target.front_end() else {
                            continue;
                        };
                        if let Some(front_end) = self.front_ends[kind as usize].as_mut() {
                            front_end.ready(self.poll.registry(), target, event);
                        }
                    }
                }
            }
            if let Some(endpoint) = self.metrics.as_mut() {
                endpoint.after_events(self.poll.registry(), Instant::now());
            }
            let registry = self.poll.registry();
            for front_end in self.front_ends.iter_mut().flatten() {
                front_end.after_events(registry);
            }
            if stop {
                return self.shutdown();
            }
            // One clock read ends the pass; a second only when a tidy and trim ran in it.
            let mut ended = Instant::now();
            if self.trim.deadline() <= ended {
                for front_end in self.front_ends.iter_mut().flatten() {
                    front_end.tidy(ended);
                }
                if let Some(endpoint) = self.metrics.as_mut() {
                    endpoint.tidy(ended);
                }
                self.trim.due(ended);
                ended = Instant::now();
            }
            if self.next_sample <= ended {
                self.take_sample(ended);
            }
            self.passes
                .record(ended.saturating_duration_since(pass_began));
        }
    }

    /// Records the load now for the status page's charts and sets the next sample's time
    /// (one [`SAMPLE_EVERY`] on, or after `now` if the loop was held up past it).
    fn take_sample(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.started).as_millis();
        let mut sample = LoadSample {
            at_ms: u64::try_from(elapsed).unwrap_or(u64::MAX),
            ..LoadSample::default()
        };
        for front_end in self.front_ends.iter().flatten() {
            front_end.load(&mut sample);
        }
        self.history.record(sample);
        self.next_sample = (self.next_sample + SAMPLE_EVERY).max(now + SAMPLE_EVERY / 2);
    }

    /// Serves pending control messages; true when the loop must stop.
    fn serve_control(&mut self) -> bool {
        loop {
            match self.control.try_recv() {
                Ok(Control::Shutdown) => return true,
                Ok(Control::Snapshot(reply)) => {
                    // The requester may have given up waiting; that is not our problem.
                    let _ = reply.send(self.snapshot(STATUS_ROWS));
                }
                Err(TryRecvError::Empty) => return false,
                Err(TryRecvError::Disconnected) => return true,
            }
        }
    }

    /// The front ends' counters, rooms and games, naming the first `detail_rows` parties and
    /// members (only the status page asks for names; the other pages pass 0).
    fn snapshot(&self, detail_rows: usize) -> Snapshot {
        self.snapshot_with(detail_rows, self.metrics.as_ref().map(|m| m.stats()))
    }

    /// [`Server::snapshot`] with the metrics endpoint's counters given (it is out of `self`
    /// while it answers a request).
    fn snapshot_with(
        &self,
        detail_rows: usize,
        endpoint: Option<MetricsEndpointStats>,
    ) -> Snapshot {
        let mut snap = Snapshot {
            uptime: self.started.elapsed(),
            process: crate::metrics::read_process(),
            history: if detail_rows > 0 {
                self.history.samples().copied().collect()
            } else {
                Vec::new()
            },
            detail_rows,
            listeners: self.listeners.clone(),
            ..Snapshot::default()
        };
        for front_end in self.front_ends.iter().flatten() {
            front_end.snapshot(&mut snap);
        }
        if let Some(stats) = endpoint {
            snap.add_counters(|f| stats.visit(f));
        }
        let counters = &mut snap.counters;
        counters.push((
            "descriptor_limit_refused_total",
            "",
            refused_at_descriptor_limit(),
        ));
        self.passes
            .visit(&mut |name, reason, value| counters.push((name, reason, value)));
        snap
    }

    /// Before the loop returns: every front end says goodbye, and what is queued is flushed
    /// for at most [`SHUTDOWN_FLUSH`] (the wait wakes on any writable edge, then every front
    /// end writes again, so no edge is lost between them). The metrics endpoint is served
    /// through the wait, its `/healthz` answering 503, and closed as the wait ends: never
    /// open and unanswered while the front ends close and stop their threads (a password
    /// check finishing, the room directory releasing its keys), so a health check gets 503
    /// or a refused connection, never a hang.
    fn shutdown(&mut self) -> io::Result<()> {
        let deadline = Instant::now() + SHUTDOWN_FLUSH;
        if let Some(endpoint) = self.metrics.as_mut() {
            endpoint.begin_shutdown();
        }
        let registry = self.poll.registry();
        for front_end in self.front_ends.iter_mut().flatten() {
            front_end.shutdown(registry);
        }
        let mut events = Events::with_capacity(256);
        loop {
            // The operators' endpoint stays served: a health check learns of the shutdown.
            for event in events.iter() {
                if let Some(target @ (Target::MetricsListener | Target::MetricsConn(_))) =
                    Target::from_token(event.token())
                {
                    self.metrics_ready(target);
                }
            }
            if let Some(endpoint) = self.metrics.as_mut() {
                endpoint.after_events(self.poll.registry(), Instant::now());
            }
            let registry = self.poll.registry();
            let mut pending = false;
            for front_end in self.front_ends.iter_mut().flatten() {
                pending |= front_end.flush_shutdown(registry);
            }
            let now = Instant::now();
            // A front end seeing child processes out keeps the wait going to its own wake.
            let wake = self
                .front_ends
                .iter()
                .flatten()
                .filter_map(|front_end| front_end.shutdown_wake())
                .min();
            let end = wake.map_or(deadline, |at| at.max(deadline));
            if !pending || now >= end {
                break;
            }
            let next = wake.map_or(end, |at| at.min(end));
            if let Err(e) = self
                .poll
                .poll(&mut events, Some(next.saturating_duration_since(now)))
            {
                if e.kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
        }
        self.metrics = None;
        let registry = self.poll.registry();
        for front_end in self.front_ends.iter_mut().flatten() {
            front_end.close_all(registry);
        }
        Ok(())
    }
}

/// Catches SIGINT, SIGTERM and SIGHUP from now on; create it before binding anything, so a
/// signal sent as soon as the start-up log shows an address is queued, not fatal.
pub(super) fn signals() -> io::Result<signal_hook_mio::v1_0::Signals> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    signal_hook_mio::v1_0::Signals::new([SIGINT, SIGTERM, SIGHUP])
}

/// A waker must outlive the poll loop; the handle keeps it.
pub(super) fn waker(poll: &Poll) -> io::Result<Waker> {
    Waker::new(poll.registry(), Target::Waker.token())
}
