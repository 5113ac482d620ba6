//! Request/reply load over UDP, the engine behind `udp-list`, `udp-create-join` and `echo`.
//!
//! Each client is one non-blocking socket on its source address. What it sends and how a
//! reply is judged is an [`Exchange`] (see [`super::udp_modes`]); the engine does the rest:
//! sequence ids, the in-flight window, latency from send to matching reply, timeouts, and
//! closed loop (one request in flight per client, the next sent as soon as the answer comes)
//! or open loop (the [`Pacer`] hands sends out round robin, up to [`WINDOW`] in flight per
//! client). Nothing is allocated per request.
//!
//! Under lobbyd's default caps each source address keeps to its request budget
//! ([`super::fit::udp_budgets`]): a client whose address has spent it waits (closed loop), or
//! the pacer's grant is skipped and counted as `held_by_caps` (open loop); and a mode may hold
//! a client back for limits of its own ([`Exchange::may_send`]).

use std::io::{self, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Interest, Poll, Registry, Token};

use super::caps::Budgets;
use super::fit::{udp_budgets, SMALL_REPLY};
use super::options::Options;
use super::runner::{drive, Pacer, Workload};
use super::stats::{Stats, Summary};

/// Requests in flight per client at most (open loop); a send into an occupied slot counts
/// the old request as a timeout.
pub const WINDOW: usize = 64;
/// Room for any datagram.
const BUF_LEN: usize = 2048;
/// How often in-flight requests are checked against the timeout.
const SWEEP_EVERY: Duration = Duration::from_millis(10);
/// Most sends the pacer hands out at once.
const BURST_CAP: u64 = 10_000;

/// What a client sends next.
#[derive(Clone, Copy, Debug)]
pub struct Outgoing {
    /// Bytes written into the send buffer.
    pub len: usize,
    /// Where to.
    pub to: SocketAddr,
    /// False for messages nothing answers (LEAVE): the client sends its next one at once.
    pub awaits_reply: bool,
}

/// How a received datagram is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The right answer to the request with this sequence id.
    Answer(u16),
    /// An answer to this request, but not the one wanted (counted as an error of this kind).
    Failed(u16, &'static str),
    /// The server declined this request at one of its limits the run keeps to (counted by the
    /// mode, neither completed nor failed: the client waits and goes on).
    Declined(u16),
    /// Not an answer (a notification the mode does not care about).
    Ignore,
    /// Malformed or unexpected, answering nothing (counted as an error of this kind).
    Bad(&'static str),
}

/// One UDP request/reply protocol, seen from its clients.
pub trait Exchange {
    /// The longest reply one request gets, in bytes: what it costs in the server's reply-bytes
    /// budget of the client's address.
    fn reply_len(&self) -> usize {
        SMALL_REPLY
    }
    /// Whether client `client` may send its next request at `now`; a client told no is asked
    /// again at the next tick (limits of the mode's own, such as rooms alive per address).
    fn may_send(&mut self, _client: usize, _now: Instant) -> bool {
        true
    }
    /// Writes client `client`'s next request, with sequence id `seq`, into `buf`.
    fn request(&mut self, client: usize, seq: u16, buf: &mut [u8]) -> Outgoing;
    /// Judges a datagram client `client` received.
    fn reply(&mut self, client: usize, datagram: &[u8], stats: &mut Stats) -> Verdict;
    /// Client `client`'s request went unanswered; the kind of timeout to count.
    fn timed_out(&mut self, _client: usize) -> &'static str {
        "reply"
    }
    /// Periodic chores (keepalives), called at least every 10 ms.
    fn chores(&mut self, _now: Instant) {}
    /// The run is over.
    fn finish(&mut self, _stats: &mut Stats) {}
}

/// What became of a client's turn to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sent {
    /// Its request is on the way.
    Yes,
    /// The socket refused it (counted): try again at the next tick.
    Failed,
    /// Its address's budget, or the mode, says not yet: try again at the next tick.
    NotYet,
}

struct Client {
    socket: UdpSocket,
    seq: u16,
    in_flight: [Option<(u16, Instant)>; WINDOW],
    outstanding: usize,
}

/// Clients driving one [`Exchange`].
pub struct Engine<E> {
    clients: Vec<Client>,
    exchange: E,
    timeout: Duration,
    /// Clients with nothing in flight that must send (closed loop), or retry a failed send.
    idle: Vec<usize>,
    next_client: usize,
    next_sweep: Instant,
    recv_buf: Box<[u8; BUF_LEN]>,
    send_buf: Box<[u8; BUF_LEN]>,
    open_loop: bool,
    /// Each source address's request budget (`None` without caps).
    budgets: Option<Budgets>,
    sources: usize,
    /// Open-loop grants skipped because the client's address had spent its budget.
    held_by_caps: u64,
}

impl<E: Exchange> Engine<E> {
    /// `options.concurrency` clients on the options' sources, registered in `registry`.
    pub fn new(options: &Options, exchange: E, registry: &Registry) -> io::Result<Engine<E>> {
        let mut clients = Vec::with_capacity(options.concurrency);
        for i in 0..options.concurrency {
            let mut socket = UdpSocket::bind(SocketAddr::new(options.source(i), 0))?;
            registry.register(&mut socket, Token(i), Interest::READABLE)?;
            clients.push(Client {
                socket,
                seq: 0,
                in_flight: [None; WINDOW],
                outstanding: 0,
            });
        }
        let open_loop = options.rate.is_some();
        let budgets = udp_budgets(options, exchange.reply_len());
        Ok(Engine {
            idle: if open_loop {
                Vec::new()
            } else {
                (0..clients.len()).collect()
            },
            clients,
            exchange,
            timeout: options.timeout,
            next_client: 0,
            next_sweep: Instant::now() + SWEEP_EVERY,
            recv_buf: Box::new([0; BUF_LEN]),
            send_buf: Box::new([0; BUF_LEN]),
            open_loop,
            budgets,
            sources: options.sources.len().max(1),
            held_by_caps: 0,
        })
    }

    /// Sends client `i`'s next request (and any unanswered messages before it), if the mode
    /// and its address's budget allow it now.
    fn send(&mut self, i: usize, now: Instant, stats: &mut Stats) -> Sent {
        // A script may send a few unanswered messages in a row; bounded all the same.
        for _ in 0..4 {
            if !self.exchange.may_send(i, now) {
                return Sent::NotYet;
            }
            if let Some(budgets) = self.budgets.as_mut() {
                if !budgets.try_take(i % self.sources, now) {
                    return Sent::NotYet;
                }
            }
            let client = &mut self.clients[i];
            let seq = client.seq;
            client.seq = client.seq.wrapping_add(1);
            let out = self.exchange.request(i, seq, &mut self.send_buf[..]);
            if let Err(e) = client.socket.send_to(&self.send_buf[..out.len], out.to) {
                stats.error(match e.kind() {
                    io::ErrorKind::WouldBlock => "send_would_block",
                    _ => "send_failed",
                });
                return Sent::Failed;
            }
            stats.sent += 1;
            if !out.awaits_reply {
                continue;
            }
            let slot = &mut client.in_flight[usize::from(seq) % WINDOW];
            if slot.replace((seq, now)).is_some() {
                stats.timeout("window_overrun");
            } else {
                client.outstanding += 1;
            }
            return Sent::Yes;
        }
        Sent::Yes
    }

    fn sweep(&mut self, now: Instant, stats: &mut Stats) {
        for (i, client) in self.clients.iter_mut().enumerate() {
            if client.outstanding == 0 {
                continue;
            }
            for slot in client.in_flight.iter_mut() {
                if slot.is_some_and(|(_, sent)| now.saturating_duration_since(sent) >= self.timeout)
                {
                    *slot = None;
                    client.outstanding -= 1;
                    stats.timeout(self.exchange.timed_out(i));
                    if !self.open_loop {
                        self.idle.push(i);
                    }
                }
            }
        }
    }
}

impl<E: Exchange> Workload for Engine<E> {
    fn ready(&mut self, _registry: &Registry, token: Token, now: Instant, stats: &mut Stats) {
        let i = token.0;
        loop {
            let Some(client) = self.clients.get_mut(i) else {
                return;
            };
            let len = match client.socket.recv_from(&mut self.recv_buf[..]) {
                Ok((len, _)) => len,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    stats.error("recv_failed");
                    continue;
                }
            };
            let (seq, failure) = match self.exchange.reply(i, &self.recv_buf[..len], stats) {
                Verdict::Answer(seq) => (seq, None),
                Verdict::Failed(seq, kind) => (seq, Some(Some(kind))),
                Verdict::Declined(seq) => (seq, Some(None)),
                Verdict::Ignore => continue,
                Verdict::Bad(kind) => {
                    stats.error(kind);
                    continue;
                }
            };
            let client = &mut self.clients[i];
            let slot = &mut client.in_flight[usize::from(seq) % WINDOW];
            match *slot {
                Some((sent_seq, sent)) if sent_seq == seq => {
                    *slot = None;
                    client.outstanding -= 1;
                    match failure {
                        None => stats.complete(now.saturating_duration_since(sent)),
                        Some(Some(kind)) => stats.error(kind),
                        Some(None) => {}
                    }
                    if !self.open_loop && self.send(i, now, stats) != Sent::Yes {
                        self.idle.push(i);
                    }
                }
                // The answer to a request already counted as a timeout.
                _ => stats.add("late_replies", 1),
            }
        }
    }

    fn tick(&mut self, _registry: &Registry, now: Instant, pacer: &mut Pacer, stats: &mut Stats) {
        self.exchange.chores(now);
        if now >= self.next_sweep {
            self.sweep(now, stats);
            self.next_sweep = now + SWEEP_EVERY;
        }
        // Clients whose send fails or must wait stay idle and are retried at the next tick.
        let mut idle = std::mem::take(&mut self.idle);
        idle.retain(|&i| self.send(i, now, stats) != Sent::Yes);
        self.idle = idle;
        if self.clients.is_empty() {
            return;
        }
        for _ in 0..pacer.due(now, BURST_CAP) {
            let i = self.next_client;
            self.next_client = (self.next_client + 1) % self.clients.len();
            if self.send(i, now, stats) == Sent::NotYet {
                self.held_by_caps += 1;
            }
        }
    }

    fn finish(&mut self, _now: Instant, stats: &mut Stats) {
        if self.held_by_caps > 0 {
            stats.set("held_by_caps", self.held_by_caps);
        }
        self.exchange.finish(stats);
    }
}

/// Runs one request/reply mode: `exchange` says what each client sends and how replies are
/// judged, `target` is what the progress line and summary call the server.
pub fn run_exchange<E: Exchange>(
    options: &Options,
    target: String,
    exchange: E,
    progress: &mut dyn Write,
) -> io::Result<Summary> {
    let poll = Poll::new()?;
    let mut engine = Engine::new(options, exchange, poll.registry())?;
    drive(options, target, poll, &mut engine, progress)
}
