//! Bounded work per loop pass, for every TCP front end: accepts per listener event, sockets
//! released per pass, and deadlines run per pass (hostile traffic: a well-behaved
//! request that arrives while the loop accepts a flood or closes a wave of expired
//! connections waits for all of it; 2-10 ms passes were measured when hundreds of handshake
//! deadlines fell due together).
//!
//! The contract with the loop (`net::server`, the seam): a front end with work left over
//! from a bounded pass says so through [`FrontEnd::next_deadline`](crate::net::server::FrontEnd)
//! by returning [`work_left`]'s instant, which has passed, so the loop polls without
//! sleeping, serves whatever became ready meanwhile, and calls `after_events` again, where
//! the front end does its next slice.
//!
//! The trap this guards against: mio is edge-triggered, so a listener left with a backlog
//! raises no new event. [`AcceptBacklog`] remembers that the budget ran out before
//! `WouldBlock`, and the front end accepts again from `after_events` until the listener is
//! drained.
//!
//! Out of descriptors, a listener still answers: [`AcceptBacklog`] accepts with a spare
//! descriptor and refuses (or, for the metrics endpoint, serves), within the same budget.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use mio::net::{TcpListener, TcpStream};
use mio::Registry;
use rustix::io::Errno;
use slab::Slab;

use crate::net::io::closer::CloseBatch;
use crate::net::io::stream::{Phase, Stream};

/// Connections accepted from one listener per readiness event or pass.
pub const ACCEPTS_PER_PASS: usize = 64;
/// Closed connections whose sockets are released (input read away, descriptor closed) per
/// pass: each costs system calls, and closing a loopback socket runs the peer's side too.
pub const CLOSES_PER_PASS: usize = 64;
/// A pass releasing at least this many sockets hands them to the closer thread
/// (`net::io::closer`); fewer are closed on the loop. A handful of closes costs the loop less than
/// the hand-over does in all (a deregistration each, a channel message, and a wake-up of a
/// thread that competes for the same cores): with every socket handed over, the TCP join
/// pair of `side-by-side.sh tcp`, one close per join, fell from 1.06-1.08 to 0.89-0.93 of the
/// C server. A flood's slices (up to [`CLOSES_PER_PASS`]) still go to the closer.
pub const HAND_OVER_FROM: usize = 8;
/// Deadlines a core runs per pass (each may close a connection and write its goodbye); the
/// rest stay due, so the core's own deadline says the loop must not sleep.
pub const TIMERS_PER_PASS: usize = 64;

/// The deadline of a front end with work left from a bounded pass: now, so the loop polls
/// without waiting. `None` when nothing is left.
pub fn work_left(left: bool) -> Option<Instant> {
    left.then(Instant::now)
}

/// What one accept within the pass's budget gave.
#[derive(Debug)]
pub enum Accepted {
    /// A new connection.
    Conn(TcpStream, SocketAddr),
    /// The listener is drained (`WouldBlock`): a new connection raises a new event.
    Drained,
    /// The budget is spent with connections possibly left: [`AcceptBacklog::take_pending`]
    /// says to come back after the next poll.
    BudgetSpent,
    /// `accept` failed (out of descriptors, say): the front end backs off.
    Failed(io::Error),
}

/// Connections refused for want of a descriptor, by every listener of the process
/// (`/metrics`: `descriptor_limit_refused_total`).
static REFUSED_AT_DESCRIPTOR_LIMIT: AtomicU64 = AtomicU64::new(0);

/// How many connections every listener of the process refused for want of a descriptor.
pub fn refused_at_descriptor_limit() -> u64 {
    REFUSED_AT_DESCRIPTOR_LIMIT.load(Ordering::Relaxed)
}

/// `accept` failed because the process (or the system) has no descriptor left.
fn out_of_descriptors(e: &io::Error) -> bool {
    let raw = e.raw_os_error();
    raw == Some(Errno::MFILE.raw_os_error()) || raw == Some(Errno::NFILE.raw_os_error())
}

/// A listener's accept budget for this pass, whether it was left with a backlog, and its
/// spare descriptor.
///
/// Out of descriptors, `accept` fails and the newcomer would wait in the kernel's backlog,
/// unanswered, until descriptors come back. So the listener closes its spare, accepts
/// with it and closes the newcomer at once (the refusal every TCP front end gives a
/// newcomer over its caps: closed without a word), reopens the spare, and goes on while its
/// budget lasts. The metrics endpoint serves instead ([`AcceptBacklog::serving_at_limit`]):
/// the newcomer keeps the spare's descriptor and the spare is reopened once one is free.
#[derive(Debug)]
pub struct AcceptBacklog {
    left: usize,
    pending: bool,
    spare: SpareDescriptor,
    /// At the limit, hand the connection accepted with the spare over instead of refusing.
    serve_at_limit: bool,
}

impl Default for AcceptBacklog {
    /// A listener's backlog that refuses at the descriptor limit; opens its spare.
    fn default() -> AcceptBacklog {
        AcceptBacklog {
            left: 0,
            pending: false,
            spare: SpareDescriptor::open(),
            serve_at_limit: false,
        }
    }
}

impl AcceptBacklog {
    /// A backlog that, out of descriptors, serves one connection with its spare.
    pub fn serving_at_limit() -> AcceptBacklog {
        AcceptBacklog {
            serve_at_limit: true,
            ..AcceptBacklog::default()
        }
    }

    /// A new accept batch begins (a readiness event, or a pass resuming the backlog).
    pub fn begin(&mut self) {
        self.left = ACCEPTS_PER_PASS;
        self.pending = false;
        // Lent to a connection served at the limit: back once a descriptor is free.
        self.spare.restore();
    }

    /// Accepts one connection, unless this batch's budget is spent.
    pub fn accept(&mut self, listener: &TcpListener) -> Accepted {
        loop {
            if self.left == 0 {
                self.pending = true;
                return Accepted::BudgetSpent;
            }
            match listener.accept() {
                Ok((stream, peer)) => {
                    self.left -= 1;
                    return Accepted::Conn(stream, peer);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Accepted::Drained,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if out_of_descriptors(&e) && self.spare.lend() => {
                    match self.accept_with_spare(listener) {
                        Some(accepted) => return accepted,
                        None => continue,
                    }
                }
                Err(e) => return Accepted::Failed(e),
            }
        }
    }

    /// The spare was just closed: accepts one connection with its descriptor. `None` when
    /// the newcomer was refused and the spare is back (accept the next one);
    /// otherwise what the caller gets.
    fn accept_with_spare(&mut self, listener: &TcpListener) -> Option<Accepted> {
        let accepted = loop {
            match listener.accept() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        match accepted {
            Ok((stream, peer)) => {
                self.left -= 1;
                if self.serve_at_limit {
                    // Reopened by `begin` once the connection has given its descriptor back.
                    return Some(Accepted::Conn(stream, peer));
                }
                REFUSED_AT_DESCRIPTOR_LIMIT.fetch_add(1, Ordering::Relaxed);
                drop(stream);
                if self.spare.restore() {
                    None
                } else {
                    Some(Accepted::Failed(io::Error::from_raw_os_error(
                        Errno::MFILE.raw_os_error(),
                    )))
                }
            }
            Err(e) => {
                self.spare.restore();
                Some(if e.kind() == io::ErrorKind::WouldBlock {
                    Accepted::Drained
                } else {
                    Accepted::Failed(e)
                })
            }
        }
    }

    /// Reopens the spare if it was lent (a connection served at the limit has just given
    /// its descriptor back, say); true when it is held afterwards.
    pub fn restore_spare(&mut self) -> bool {
        self.spare.restore()
    }

    /// The last batch stopped at its budget: the listener may hold more.
    pub fn is_pending(&self) -> bool {
        self.pending
    }

    /// True (once) when the last batch stopped at its budget: accept again now.
    pub fn take_pending(&mut self) -> bool {
        std::mem::take(&mut self.pending)
    }
}

/// Connections closed and waiting to leave their slab, oldest first, released a slice per
/// pass.
#[derive(Debug, Default)]
pub struct Closing {
    keys: VecDeque<usize>,
}

impl Closing {
    /// Slab key `key` was just marked closed.
    pub fn push(&mut self, key: usize) {
        self.keys.push_back(key);
    }

    /// Closed connections still in the slab (they no longer count as open).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Nothing waits to be released.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Takes at most [`CLOSES_PER_PASS`] closed connections out of `slab` and releases each
    /// one's socket (from [`HAND_OVER_FROM`] on, [`Stream::release_to`]: closed by the closer
    /// thread, `net::io::closer`; fewer, [`Stream::release`]); `take` turns a connection into its
    /// stream, after whatever bookkeeping its front end keeps (per-IP counts). A key is taken
    /// only while its entry is closed: a key pushed twice must not, a slice later, take the
    /// new connection that reuses it.
    pub fn release_slice<C>(
        &mut self,
        slab: &mut Slab<C>,
        registry: &Registry,
        stream: impl Fn(&C) -> &Stream,
        mut take: impl FnMut(C) -> Stream,
    ) {
        let slice = self.keys.len().min(CLOSES_PER_PASS);
        let hand_over = slice >= HAND_OVER_FROM;
        let mut batch = CloseBatch::default();
        for key in self.keys.drain(..slice) {
            let closed = slab
                .get(key)
                .is_some_and(|conn| stream(conn).phase() == Phase::Closed);
            if !closed {
                continue;
            }
            let released = take(slab.remove(key));
            if hand_over {
                released.release_to(registry, &mut batch);
            } else {
                released.release(registry);
            }
        }
        batch.send();
    }
}

/// A descriptor held open so that a listener out of descriptors can still accept one
/// connection: close the spare, accept, answer or refuse, reopen the spare.
#[derive(Debug)]
pub struct SpareDescriptor {
    file: Option<File>,
}

impl SpareDescriptor {
    /// Opens the spare (on `/dev/null`); a failure leaves it missing, retried by
    /// [`SpareDescriptor::restore`].
    pub fn open() -> SpareDescriptor {
        SpareDescriptor {
            file: File::open("/dev/null").ok(),
        }
    }

    /// Closes the spare so that the next descriptor the process asks for is free; false
    /// when there was none to close.
    pub fn lend(&mut self) -> bool {
        self.file.take().is_some()
    }

    /// Reopens the spare if it was lent; true when it is held afterwards.
    pub fn restore(&mut self) -> bool {
        if self.file.is_none() {
            self.file = File::open("/dev/null").ok();
        }
        self.file.is_some()
    }

    /// The spare is held.
    pub fn is_held(&self) -> bool {
        self.file.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::io::buffers::MemoryBudget;
    use std::time::Duration;

    fn listener() -> (TcpListener, SocketAddr) {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        (TcpListener::from_std(std_listener), addr)
    }

    /// Accepts one batch, retrying while the kernel has not queued the connections yet.
    fn accept_batch(backlog: &mut AcceptBacklog, listener: &TcpListener, want: usize) -> usize {
        backlog.begin();
        let mut got = 0;
        let give_up = Instant::now() + Duration::from_secs(10);
        while Instant::now() < give_up {
            match backlog.accept(listener) {
                Accepted::Conn(..) => got += 1,
                Accepted::BudgetSpent => return got,
                Accepted::Drained if got >= want => return got,
                Accepted::Drained => std::thread::sleep(Duration::from_millis(1)),
                Accepted::Failed(e) => panic!("accept: {e}"),
            }
        }
        got
    }

    #[test]
    fn a_batch_stops_at_its_budget_and_remembers_the_backlog() {
        let (listener, addr) = listener();
        let total = ACCEPTS_PER_PASS + 10;
        let _clients: Vec<_> = (0..total)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        let mut backlog = AcceptBacklog::default();
        assert_eq!(
            accept_batch(&mut backlog, &listener, total),
            ACCEPTS_PER_PASS
        );
        assert!(backlog.is_pending());
        assert!(backlog.take_pending(), "the backlog is reported once");
        assert!(!backlog.take_pending());
        // No new connection, so no new edge: the rest is there all the same.
        assert_eq!(accept_batch(&mut backlog, &listener, 10), 10);
        assert!(!backlog.is_pending(), "drained");
    }

    /// Accepts the one connection just opened to `listener`.
    fn accept_one(listener: &TcpListener) -> TcpStream {
        let give_up = Instant::now() + Duration::from_secs(10);
        let mut backlog = AcceptBacklog::default();
        loop {
            backlog.begin();
            if let Accepted::Conn(stream, _) = backlog.accept(listener) {
                return stream;
            }
            assert!(Instant::now() < give_up, "no connection to accept");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn closing_releases_a_slice_and_never_a_reused_key() {
        let (listener, addr) = listener();
        let poll = mio::Poll::new().unwrap();
        let mut slab: Slab<Stream> = Slab::new();
        let mut closing = Closing::default();
        let mut budget = MemoryBudget::unlimited();
        let n = CLOSES_PER_PASS + 5;
        let mut clients = Vec::new();
        while slab.len() < n {
            clients.push(std::net::TcpStream::connect(addr).unwrap());
            let key = slab.insert(Stream::new(accept_one(&listener), slab.len() as u32));
            assert!(slab[key].mark_closed(&mut budget));
            closing.push(key);
        }
        // The last key of the first slice pushed twice: its second push must not take the
        // later connection that reuses it (the slab hands out the key freed last).
        let twice = CLOSES_PER_PASS - 1;
        closing.push(twice);
        let mut released = 0;
        let mut release_slice = |closing: &mut Closing, slab: &mut Slab<Stream>| {
            closing.release_slice(
                slab,
                poll.registry(),
                |s| s,
                |s| {
                    released += 1;
                    s
                },
            )
        };
        release_slice(&mut closing, &mut slab);
        assert_eq!(closing.len(), 6);
        assert_eq!(slab.len(), n - CLOSES_PER_PASS);
        // The key is free again: a new open connection takes it.
        clients.push(std::net::TcpStream::connect(addr).unwrap());
        assert_eq!(slab.insert(Stream::new(accept_one(&listener), 999)), twice);
        release_slice(&mut closing, &mut slab);
        assert!(closing.is_empty());
        assert_eq!(released, n, "every closed connection released");
        assert_eq!(slab.len(), 1);
        assert_eq!(
            slab[twice].serial(),
            999,
            "the open connection on the reused key stays"
        );
    }

    #[test]
    fn the_spare_is_lent_and_restored() {
        let mut spare = SpareDescriptor::open();
        assert!(spare.is_held());
        assert!(spare.lend());
        assert!(!spare.lend(), "lent once");
        assert!(!spare.is_held());
        assert!(spare.restore());
        assert!(spare.is_held());
    }
}
