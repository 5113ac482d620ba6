//! The one TCP stream transport every TCP front end runs on: a bounded send queue that
//! survives partial writes, flushing to `WouldBlock` with WRITABLE interest only while bytes
//! wait, close-after-flush with a linger deadline, the accept pause/resume mark, per-IP
//! connection counts. The send queue is a counted buffer of `net::io::buffers`, whose
//! [`MemoryBudget`] holds a front end's send queues and partial input frames together.
//!
//! What stays with each front end is policy, passed in as parameters: the send-queue cap (past
//! it the peer is a slow reader and is dropped, never its neighbours), how long a closing
//! connection may linger, and what happens over a per-IP cap (the TCP lobby refuses at
//! accept; the Warzone server lets its core answer, because refused 4.x hosts reconnect in a
//! loop). Nothing here parses or decides protocol.
//!
//! An idle connection holds no heap buffer: the send queue frees its buffer once drained;
//! and a peer that never reads cannot pin more than [`SEND_BUFFER`] of kernel memory
//! ([`tune_listener`]) on top of its front end's capped queue.
//!
//! System calls per connection are kept to what the job needs (a TCP lobby join
//! costs a connection's whole life): socket options are set once on the listener and
//! inherited by every accepted socket, and a socket closed on the loop is not deregistered
//! first (closing it takes it out of the epoll set). The sockets of each pass's slice of
//! closed connections are deregistered and closed by `net::io::closer`'s thread instead: the
//! close costs the loop far more than the `epoll_ctl`.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Registry, Token};

use crate::capacity::shrink_spare;

use crate::net::io::buffers::{MemoryBudget, QueueFull, SendQueue};
use crate::net::io::closer::CloseBatch;

/// The kernel send buffer asked for on every accepted connection (`SO_SNDBUF`; Linux
/// doubles it). The default grows to megabytes per socket: 200 clients that never read held
/// 678 MB of kernel memory before the user-space caps dropped them.
pub const SEND_BUFFER: usize = 64 * 1024;
/// How long accepting pauses after an accept error (out of descriptors, say) before it is
/// tried again: retrying at once would spin the loop on EMFILE.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Sets up a listener so that every connection it accepts has no Nagle delay (small frames
/// must not wait), a bounded kernel send buffer, and TCP keep-alive when `keepalive` (dead
/// peers of long sessions are found by the kernel). Linux copies a listening socket's
/// options into each socket it accepts, so this costs three system calls once instead of
/// three per connection (a test below checks the inheritance). Failures are logged and
/// ignored: the connections still work.
pub fn tune_listener(listener: &TcpListener, keepalive: bool) {
    let socket = socket2::SockRef::from(listener);
    if let Err(e) = socket.set_nodelay(true) {
        log::debug!("TCP_NODELAY: {e}");
    }
    if let Err(e) = socket.set_send_buffer_size(SEND_BUFFER) {
        log::debug!("SO_SNDBUF: {e}");
    }
    if keepalive {
        if let Err(e) = socket.set_keepalive(true) {
            log::debug!("SO_KEEPALIVE: {e}");
        }
    }
}

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Reading and writing.
    Open,
    /// Closing: no more reading; closed once the queue is flushed or its linger ends.
    Draining,
    /// Gone for the core; removed from its slab after the event batch.
    Closed,
}

/// What a flush left behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flushed {
    /// Bytes still wait (WRITABLE interest is registered), or the connection is open and idle.
    Open,
    /// A draining connection wrote its last byte: close it now.
    Drained,
}

/// One accepted TCP connection with its send queue and close state.
#[derive(Debug)]
pub struct Stream {
    /// The socket.
    pub socket: TcpStream,
    out: SendQueue,
    phase: Phase,
    /// WRITABLE interest is registered (only while the queue is non-empty).
    writable: bool,
    /// Tells this connection from a later one that reuses its slab key (it fits in the
    /// struct's padding: an idle connection's size is checked by the TCP lobby's tests).
    serial: u32,
}

impl Stream {
    /// A new open connection (already registered READABLE), numbered `serial` by its front
    /// end.
    pub fn new(socket: TcpStream, serial: u32) -> Stream {
        Stream {
            socket,
            out: SendQueue::default(),
            phase: Phase::Open,
            writable: false,
            serial,
        }
    }

    /// The number its front end gave it.
    pub fn serial(&self) -> u32 {
        self.serial
    }

    /// Where it is in its life.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Still reading and writing.
    pub fn is_open(&self) -> bool {
        self.phase == Phase::Open
    }

    /// The kernel took less than was queued at the last flush (WRITABLE interest is
    /// registered): writing again before the socket says it is writable would only fail.
    pub fn is_blocked(&self) -> bool {
        self.writable
    }

    /// Bytes waiting to be written.
    pub fn pending(&self) -> usize {
        self.out.pending()
    }

    /// Heap bytes its send queue holds (what `budget` counts for it).
    pub fn held(&self) -> usize {
        self.out.capacity()
    }

    /// Queues `bytes` behind what waits; refused when that would pass `cap` (a slow reader:
    /// the caller drops it), when `budget` has no room, or when the connection is closed.
    pub fn queue(
        &mut self,
        bytes: &[u8],
        cap: usize,
        budget: &mut MemoryBudget,
    ) -> Result<(), QueueFull> {
        if self.phase == Phase::Closed {
            return Err(QueueFull::Closed);
        }
        self.out.push(bytes, cap, budget)
    }

    /// Queues `parts` one after the other, all or none (a WebSocket frame's header and its
    /// payload), with [`Stream::queue`]'s refusals.
    pub fn queue_parts(
        &mut self,
        parts: &[&[u8]],
        cap: usize,
        budget: &mut MemoryBudget,
    ) -> Result<(), QueueFull> {
        if self.phase == Phase::Closed {
            return Err(QueueFull::Closed);
        }
        self.out.push_parts(parts, cap, budget)
    }

    /// Stops reading and closes once flushed. True the first time (the caller then starts
    /// its linger deadline).
    pub fn start_draining(&mut self) -> bool {
        if self.phase != Phase::Open {
            return false;
        }
        self.phase = Phase::Draining;
        true
    }

    /// Marks it closed and frees its send queue (a closed connection is never written
    /// again), giving the bytes back to `budget`; true the first time (the caller then
    /// schedules its removal).
    pub fn mark_closed(&mut self, budget: &mut MemoryBudget) -> bool {
        if self.phase == Phase::Closed {
            return false;
        }
        self.phase = Phase::Closed;
        self.out.clear(budget);
        true
    }

    /// Writes what waits until `WouldBlock`, adding the bytes written to `bytes_out` (and
    /// giving a drained queue's buffer back to `budget`), and
    /// registers the interest the connection needs now: READABLE while open, WRITABLE exactly
    /// while bytes wait. An error means the peer is gone (the caller closes it).
    pub fn flush(
        &mut self,
        registry: &Registry,
        token: Token,
        bytes_out: &mut u64,
        budget: &mut MemoryBudget,
    ) -> io::Result<Flushed> {
        if self.phase == Phase::Closed {
            return Ok(Flushed::Open);
        }
        if !self.out.is_empty() {
            *bytes_out += self.out.write_to(&mut self.socket, budget)? as u64;
        }
        let pending = !self.out.is_empty();
        if self.phase == Phase::Draining && !pending {
            return Ok(Flushed::Drained);
        }
        self.set_writable(registry, token, pending)?;
        Ok(Flushed::Open)
    }

    /// Registers WRITABLE interest or drops it (a draining connection, which no longer
    /// reads, always needs a reregistration the first time).
    fn set_writable(
        &mut self,
        registry: &Registry,
        token: Token,
        writable: bool,
    ) -> io::Result<()> {
        let reading_changed = self.phase == Phase::Draining && !self.writable && writable;
        if writable != self.writable || reading_changed {
            self.writable = writable;
            let interest = self.interest();
            registry.reregister(&mut self.socket, token, interest)?;
        }
        Ok(())
    }

    /// Re-arms the interest it has, so an edge-triggered poll comes back to a connection
    /// whose read budget ran out with data possibly left.
    pub fn rearm(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        let interest = self.interest();
        registry.reregister(&mut self.socket, token, interest)
    }

    /// The interest this connection needs now.
    pub fn interest(&self) -> Interest {
        match (self.phase == Phase::Open, self.writable) {
            (true, true) => Interest::READABLE | Interest::WRITABLE,
            (false, true) => Interest::WRITABLE,
            _ => Interest::READABLE,
        }
    }

    /// Closes the socket, after reading away what the peer sent that will never be handled:
    /// closing with unread bytes sends RST, which can destroy our last message in the peer's
    /// receive queue. It is not deregistered first: on Linux, closing the last descriptor of
    /// a socket removes it from every epoll set (mio's epoll selector keeps no state per
    /// source, and no descriptor of ours is ever duplicated), which saves an `epoll_ctl` per
    /// connection; events already returned for it are dropped by the caller's stale-key
    /// checks as before.
    pub fn release(mut self, registry: &Registry) {
        discard_input(&mut self.socket);
        if !cfg!(target_os = "linux") {
            if let Err(e) = registry.deregister(&mut self.socket) {
                log::debug!("deregister a closed connection: {e}");
            }
        }
    }

    /// Like [`Self::release`], but the close itself is left to `batch` (`net::io::closer`: the
    /// kernel's work for a close is done off the loop). The socket is deregistered first:
    /// its descriptor outlives its slab key, and a later connection on that key must not
    /// receive its events.
    pub fn release_to(mut self, registry: &Registry, batch: &mut CloseBatch) {
        discard_input(&mut self.socket);
        if let Err(e) = registry.deregister(&mut self.socket) {
            // Still registered: closing it here is what takes it out of the epoll set.
            log::debug!("deregister a closed connection: {e}");
            return;
        }
        batch.push(self.socket);
    }
}

/// Reads and drops what the peer sent but we will never handle, so closing sends FIN (not
/// RST, which could destroy our last message in the peer's receive queue). Bounded.
pub fn discard_input(stream: &mut impl Read) {
    let mut sink = [0u8; 1024];
    for _ in 0..64 {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Closing connections in deadline order, each known by its slab key and a serial that tells
/// it from a later connection reusing the key. The grace is constant per front end, so
/// pushing keeps the queue sorted.
#[derive(Debug)]
pub struct Linger {
    grace: Duration,
    queue: VecDeque<(Instant, usize, u32)>,
}

impl Linger {
    /// Connections may take `grace` to flush before they are closed anyway.
    pub fn new(grace: Duration) -> Linger {
        Linger {
            grace,
            queue: VecDeque::new(),
        }
    }

    /// Starts the grace of connection `key` (serial `serial`) at `now`.
    pub fn start(&mut self, now: Instant, key: usize, serial: u32) {
        self.queue.push_back((now + self.grace, key, serial));
    }

    /// The earliest deadline.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.queue.front().map(|(at, _, _)| *at)
    }

    /// The next connection whose grace ended by `now`, as `(key, serial)`.
    pub fn expired(&mut self, now: Instant) -> Option<(usize, u32)> {
        match self.queue.front() {
            Some(&(at, key, serial)) if at <= now => {
                self.queue.pop_front();
                Some((key, serial))
            }
            _ => None,
        }
    }
}

/// Stops accepting at the connection limit and resumes below 90 % of it (sozu's
/// `check_limits`): the kernel keeps newcomers in its backlog meanwhile, and the gap stops
/// the listener from flapping at the limit.
#[derive(Debug, Clone, Copy)]
pub struct AcceptGate {
    max_conns: usize,
    paused: bool,
    /// After an accept error: no retry before this instant.
    backoff_until: Option<Instant>,
}

impl AcceptGate {
    /// A gate for at most `max_conns` open connections.
    pub fn new(max_conns: usize) -> AcceptGate {
        AcceptGate {
            max_conns,
            paused: false,
            backoff_until: None,
        }
    }

    /// Accepting is paused.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// `open` connections fill the limit.
    pub fn is_full(&self, open: usize) -> bool {
        open >= self.max_conns
    }

    /// Pauses accepting (at the limit, or after an accept error); true when it was not
    /// paused yet (count it once).
    pub fn pause(&mut self) -> bool {
        !std::mem::replace(&mut self.paused, true)
    }

    /// Pauses after an accept error for [`ACCEPT_BACKOFF`]; true when it was not paused yet.
    pub fn back_off(&mut self, now: Instant) -> bool {
        self.backoff_until = Some(now + ACCEPT_BACKOFF);
        self.pause()
    }

    /// When a back-off ends (the loop must wake then to resume accepting).
    pub fn deadline(&self) -> Option<Instant> {
        self.backoff_until.filter(|_| self.paused)
    }

    /// Resumes when paused, fewer than 90 % of the limit are open and any back-off is over;
    /// true when it did.
    pub fn try_resume(&mut self, open: usize, now: Instant) -> bool {
        let backed_off = self.backoff_until.map_or(true, |until| now >= until);
        if self.paused && backed_off && below_resume_mark(open, self.max_conns) {
            self.paused = false;
            self.backoff_until = None;
            return true;
        }
        false
    }
}

/// Accepting resumes once fewer than 90 % of `max_conns` are open.
pub fn below_resume_mark(open: usize, max_conns: usize) -> bool {
    open.saturating_mul(10) < max_conns.saturating_mul(9)
}

/// The capacity [`PerIpCounts`] keeps however few addresses are connected
/// ([`shrink_spare`]'s floor).
const PER_IP_FLOOR: usize = 64;

/// Open connections per source address, for per-IP caps.
#[derive(Debug, Default)]
pub struct PerIpCounts {
    open: HashMap<IpAddr, usize>,
}

impl PerIpCounts {
    /// Connections open from `ip`.
    pub fn get(&self, ip: IpAddr) -> usize {
        self.open.get(&ip).copied().unwrap_or(0)
    }

    /// Counts one more from `ip`.
    pub fn add(&mut self, ip: IpAddr) {
        *self.open.entry(ip).or_insert(0) += 1;
    }

    /// Counts one fewer from `ip`; the entry goes with its last connection.
    pub fn remove(&mut self, ip: IpAddr) {
        if let Some(count) = self.open.get_mut(&ip) {
            *count -= 1;
            if *count == 0 {
                self.open.remove(&ip);
            }
        }
    }

    /// Gives back the table's spare capacity once it is less than a quarter full: a flood
    /// of connections from many addresses would otherwise leave its peak size behind. For
    /// the front end's periodic tidy.
    pub fn shrink(&mut self) {
        shrink_spare(&mut self.open, PER_IP_FLOOR);
    }
}

/// IPv4-mapped IPv6 peers count as their IPv4 address for the per-IP limits.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_threshold_is_below_ninety_percent() {
        for (open, max, resume) in [
            (0, 1, true),
            (1, 2, true),
            (8, 10, true),
            (9, 10, false),
            (89, 100, true),
            (90, 100, false),
            (usize::MAX, usize::MAX, false),
        ] {
            assert_eq!(below_resume_mark(open, max), resume, "{open} of {max}");
        }
    }

    #[test]
    fn accept_gate_pauses_once_and_resumes_below_the_mark() {
        let mut gate = AcceptGate::new(10);
        assert!(!gate.is_full(9) && gate.is_full(10));
        let now = Instant::now();
        assert!(gate.pause(), "first pause counts");
        assert!(!gate.pause(), "a second one does not");
        assert!(!gate.try_resume(9, now));
        assert!(gate.is_paused());
        assert!(gate.try_resume(8, now));
        assert!(!gate.is_paused());
        assert!(!gate.try_resume(0, now), "not paused: nothing to resume");
    }

    #[test]
    fn accept_errors_back_off_instead_of_spinning() {
        let mut gate = AcceptGate::new(10);
        let now = Instant::now();
        assert!(gate.back_off(now));
        assert_eq!(gate.deadline(), Some(now + ACCEPT_BACKOFF));
        assert!(!gate.try_resume(0, now), "not before the back-off ends");
        assert!(!gate.try_resume(0, now + ACCEPT_BACKOFF / 2));
        assert!(gate.try_resume(0, now + ACCEPT_BACKOFF));
        assert_eq!(gate.deadline(), None);
    }

    #[test]
    fn linger_expires_in_deadline_order() {
        let t0 = Instant::now();
        let mut linger = Linger::new(Duration::from_secs(10));
        linger.start(t0, 3, 1);
        linger.start(t0 + Duration::from_secs(1), 5, 2);
        assert_eq!(linger.next_deadline(), Some(t0 + Duration::from_secs(10)));
        assert_eq!(linger.expired(t0 + Duration::from_secs(9)), None);
        assert_eq!(linger.expired(t0 + Duration::from_secs(10)), Some((3, 1)));
        assert_eq!(linger.expired(t0 + Duration::from_secs(10)), None);
        assert_eq!(linger.expired(t0 + Duration::from_secs(11)), Some((5, 2)));
        assert_eq!(linger.next_deadline(), None);
    }

    #[test]
    fn per_ip_counts_forget_an_address_with_its_last_connection() {
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let mut counts = PerIpCounts::default();
        counts.add(ip);
        counts.add(ip);
        assert_eq!(counts.get(ip), 2);
        counts.remove(ip);
        counts.remove(ip);
        assert_eq!(counts.get(ip), 0);
        assert!(counts.open.is_empty());
        counts.remove(ip);
        assert_eq!(counts.get(ip), 0);
    }

    #[test]
    fn per_ip_counts_give_back_a_crowds_table() {
        let mut counts = PerIpCounts::default();
        let crowd: Vec<IpAddr> = (0..5_000u32)
            .map(|n| IpAddr::from((0x0a00_0000 | n).to_be_bytes()))
            .collect();
        crowd.iter().for_each(|&ip| counts.add(ip));
        let peak = counts.open.capacity();
        crowd[10..].iter().for_each(|&ip| counts.remove(ip));
        counts.shrink();
        assert!(
            counts.open.capacity() <= 4 * PER_IP_FLOOR,
            "{}",
            counts.open.capacity()
        );
        assert!(counts.open.capacity() < peak);
        assert!(crowd[..10].iter().all(|&ip| counts.get(ip) == 1));
    }

    /// What `tune_listener` relies on: an accepted socket carries the listener's options.
    #[test]
    fn accepted_sockets_inherit_the_listeners_options() {
        for keepalive in [false, true] {
            let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = std_listener.local_addr().unwrap();
            std_listener.set_nonblocking(true).unwrap();
            let listener = TcpListener::from_std(std_listener);
            tune_listener(&listener, keepalive);
            let _client = std::net::TcpStream::connect(addr).unwrap();
            let accepted = loop {
                match listener.accept() {
                    Ok((stream, _)) => break stream,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(1))
                    }
                    Err(e) => panic!("accept: {e}"),
                }
            };
            let socket = socket2::SockRef::from(&accepted);
            assert!(socket.nodelay().unwrap(), "TCP_NODELAY inherited");
            assert_eq!(socket.keepalive().unwrap(), keepalive, "SO_KEEPALIVE");
            let sndbuf = socket.send_buffer_size().unwrap();
            // Linux doubles the value asked for; the default is far larger.
            assert!(
                (SEND_BUFFER..=2 * SEND_BUFFER).contains(&sndbuf),
                "SO_SNDBUF {sndbuf}"
            );
        }
    }

    #[test]
    fn mapped_ipv6_counts_as_ipv4() {
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(canonical_ip(mapped), "192.0.2.1".parse::<IpAddr>().unwrap());
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        assert_eq!(canonical_ip(v6), v6);
    }
}
