//! The general lobby's way out, [`Outbound`]: the core, its connections, and the core's
//! outputs carried onto their sockets (docs/protocols/general-lobby.md, "Transport"); the
//! way in (listener, admission, the frame reader) is the driver in `general/mod.rs`, which
//! hands frames to the core through it, and stands above this file: the connection record
//! ([`Conn`]) and the core's name for a connection ([`conn_id`]) are defined here. A frame goes into its connection's capped
//! send queue ([`SEND_QUEUE_CAP`]: past it the member does not read and is dropped); replies
//! ([`Delivery::Direct`]) are written after the event batch, the connections served in it
//! first; fan-out frames ([`Delivery::FanOut`]) gather for [`FANOUT_DELAY`] so that a member
//! gets one write per period whatever the traffic; a queue past [`FLUSH_EARLY`] is written at
//! once; and writes go a slice at a time ([`FLUSH_SLICE`]) so requests are served between
//! slices of a large fan-out. Closes wait for the queue to drain (the driver's linger), and
//! password checks go to the login bridge.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use mio::Registry;
use slab::Slab;

use crate::accounts::VerifyResult;
use crate::general::{ConnId, Delivery, FrameRef, GeneralLobby, GeneralOutput};
use crate::net::general::stats::GeneralDriverStats;
use crate::net::io::buffers::{largest_holder, MemoryBudget, PartialFrame, QueueFull};
use crate::net::io::frames::FrameReader;
use crate::net::io::pass::Closing;
use crate::net::io::stream::{Flushed, Linger, Phase, Stream};
use crate::net::login::Logins;
use crate::net::token::Target;
use crate::net::warn::WarnBudget;

/// Most bytes queued for one connection; past it the member is not reading and is dropped.
/// A full sync (every member and game) of a large lobby is written as it is queued (see
/// [`FLUSH_EARLY`]), so only a peer that does not read reaches it.
pub const SEND_QUEUE_CAP: usize = 1024 * 1024;
/// A connection with this many bytes queued is written at once rather than at the end of
/// the event batch (unless the kernel is known to be full for it), so a burst (a sign-in
/// storm: each newcomer's MEMBER_INFO to everyone) never grows every member's queue far; the
/// memory a queue grew to stays with the process after it drains.
const FLUSH_EARLY: usize = 1024;
/// Connections written per slice of a fan-out before the loop polls again: a sign-in to a
/// lobby of 1,000 members queues a frame for every one of them, and a request that arrives
/// meanwhile is served between slices instead of after the whole fan-out. Sixteen writes
/// (tens of microseconds) is what a request waits at most; a poll between slices costs one
/// `epoll_wait` per 16 writes (measured: 128 kept the sign-in p99 at half rate near 2 ms).
const FLUSH_SLICE: usize = 16;
/// How long a fan-out frame (one the core sends to several connections, marked
/// [`Delivery::FanOut`]: another member's MEMBER_INFO or MEMBER_LEFT, a chat line, a
/// GAME_INFO) may wait for the next ones to share its write. In a busy lobby every member
/// gets frames from every sign-in, chat line and game change; written as they come, each
/// costs a system call and a wake-up of the reader, and the loop, kept busy by those writes,
/// is preempted by the readers while requests wait. Gathered over 2 ms they cost at most one
/// write per member per period whatever the traffic, a delay no player sees (measured at half
/// the peak sign-in rate with 1,000 members: sign-in p99 0.4 ms against 0.9-2 ms without it;
/// docs/PERFORMANCE.md). Frames for one connection alone ([`Delivery::Direct`]: a reply, a
/// JOIN_ASK, a private line), closes and a queue past [`FLUSH_EARLY`] are not delayed.
const FANOUT_DELAY: Duration = Duration::from_millis(2);

/// How long a connection the core closed may take to read what is queued for it.
pub const LINGER: Duration = Duration::from_secs(2);

/// The core's name for connection `key`: the slab key in the low 32 bits, the connection's
/// serial above, so an output the core queued for a connection that is gone can never reach
/// a later connection that reuses its slab key (it no longer matches, and is dropped).
pub(super) fn conn_id(key: usize, serial: u32) -> ConnId {
    ConnId((u64::from(serial) << 32 | key as u64) as usize)
}

/// The slab key and serial a [`ConnId`] names.
pub(super) fn key_of(conn: ConnId) -> (usize, u32) {
    let raw = conn.0 as u64;
    ((raw & u64::from(u32::MAX)) as usize, (raw >> 32) as u32)
}

/// One general lobby connection.
#[derive(Debug)]
pub(super) struct Conn {
    pub(super) stream: Stream,
    pub(super) ip: IpAddr,
    /// Its framing state: the start of a frame split across reads, and what is left of a read
    /// when the frame budget ran out, counted against the driver's [`MemoryBudget`].
    pub(super) input: FrameReader<PartialFrame>,
    /// Whole frames wait in `input` beyond this event's budget.
    pub(super) backlogged: bool,
    /// The key waits in the driver's `dirty` list for a write.
    pub(super) in_dirty: bool,
    /// The key waits in the driver's `gathering` list for a write.
    pub(super) in_gathering: bool,
}

/// The general lobby past its reader: the core, its connections, and the way out of the
/// core's outputs onto their sockets (send queues under one memory budget, the write
/// schedule, closing and lingering). The driver's way in (`GeneralDriver`) hands it each
/// frame's connection and reaches the core through it.
pub(super) struct Outbound {
    pub(super) core: GeneralLobby,
    pub(super) conns: Slab<Conn>,
    pub(super) logins: Option<Logins>,
    /// `--lobby-memory-budget`: every connection's send queue and kept input together.
    pub(super) budget: MemoryBudget,
    pub(super) stats: GeneralDriverStats,
    pub(super) warnings: WarnBudget,
    /// Connections to remove after the event batch, a slice per pass.
    pub(super) closing: Closing,
    /// Connections the core closed, flushing within [`LINGER`].
    pub(super) lingering: Linger,
    /// Connections closed while the core's outputs are being carried out, told to the core
    /// once those are: a departure then queues its notices after the previous one's were
    /// carried out, so a crowd leaving at once (each failed write closing another
    /// connection) never piles one output record per member per departure.
    closed_meanwhile: Vec<ConnId>,
    /// The core's outputs are being carried out.
    carrying: bool,
    /// Connections with bytes for them alone queued since their last write, written a slice
    /// at a time after the event batch ([`FLUSH_SLICE`]).
    pub(super) dirty: VecDeque<usize>,
    /// Connections with fan-out bytes queued since their last write and when they are due
    /// ([`FANOUT_DELAY`] after the first of them), oldest first; a slice at a time once due.
    pub(super) gathering: VecDeque<(Instant, usize)>,
    /// Connections that sent frames in this event batch: their replies are written first,
    /// ahead of the fan-out to everybody else.
    pub(super) served: Vec<usize>,
}

impl Outbound {
    /// The way out of `core`, with no connection yet.
    pub(super) fn new(
        core: GeneralLobby,
        logins: Option<Logins>,
        budget: MemoryBudget,
        now: Instant,
    ) -> Outbound {
        Outbound {
            core,
            conns: Slab::new(),
            logins,
            budget,
            stats: GeneralDriverStats::default(),
            warnings: WarnBudget::new(now, 60, 20),
            closing: Closing::default(),
            lingering: Linger::new(LINGER),
            closed_meanwhile: Vec::new(),
            carrying: false,
            dirty: VecDeque::new(),
            gathering: VecDeque::new(),
            served: Vec::new(),
        }
    }

    /// Carries out the core's outputs: frames into send queues (written at once past
    /// [`FLUSH_EARLY`]), closes, password checks.
    pub(super) fn carry_out(&mut self, registry: &Registry, now: Instant) {
        if std::mem::replace(&mut self.carrying, true) {
            return;
        }
        loop {
            self.carry_out_queued(registry, now);
            // One departure at a time: its notices are carried out before the next is told.
            let Some(id) = self.closed_meanwhile.pop() else {
                break;
            };
            self.core.handle_closed(now, id);
        }
        self.carrying = false;
    }

    /// Carries out what the core has queued now (a connection closed meanwhile waits in
    /// `closed_meanwhile`).
    fn carry_out_queued(&mut self, registry: &Registry, now: Instant) {
        while let Some(output) = self.core.poll_output() {
            match output {
                GeneralOutput::Send {
                    conn,
                    frames,
                    delivery,
                } => {
                    let (key, serial) = key_of(conn);
                    let Some(was_idle) = (self.conns.get(key))
                        .filter(|c| c.stream.serial() == serial)
                        .map(|c| c.stream.pending() == 0)
                    else {
                        continue;
                    };
                    match self.queue_within_budget(now, key, frames) {
                        Ok(()) => {}
                        Err(QueueFull::Cap) => {
                            self.stats.slow_readers += 1;
                            self.warnings.warn(
                                now,
                                format_args!("general lobby: dropping a member that does not read"),
                            );
                            self.close(now, key);
                            continue;
                        }
                        Err(QueueFull::Budget | QueueFull::Closed) => continue,
                    }
                    let Some(c) = self.conns.get(key) else {
                        continue;
                    };
                    if c.stream.is_blocked() {
                        // The kernel is full for it: its WRITABLE event writes the queue.
                    } else if c.stream.pending() >= FLUSH_EARLY {
                        self.flush(registry, now, key);
                    } else if delivery == Delivery::Direct {
                        // Also when fan-out waits on it already: this frame does not wait.
                        self.mark_dirty(key);
                    } else if was_idle {
                        self.mark_gathering(now + FANOUT_DELAY, key);
                    }
                }
                GeneralOutput::Close { conn } => {
                    let (key, serial) = key_of(conn);
                    if let Some(c) = self
                        .conns
                        .get_mut(key)
                        .filter(|c| c.stream.serial() == serial)
                    {
                        if c.stream.start_draining() {
                            self.lingering.start(now, key, c.stream.serial());
                            // It is not read again.
                            c.input.clear(&mut self.budget);
                            self.mark_dirty(key);
                        }
                    }
                }
                GeneralOutput::Verify {
                    conn,
                    job,
                    username,
                    password,
                } => {
                    let (key, serial) = key_of(conn);
                    let ip = (self.conns.get(key))
                        .filter(|c| c.stream.serial() == serial)
                        .map(|c| c.ip);
                    let decided = match (self.logins.as_mut(), ip) {
                        (Some(logins), Some(ip)) => {
                            logins.verify(now, job.0, ip, &username, password.into())
                        }
                        _ => Some(VerifyResult::Busy),
                    };
                    if let Some(result) = decided {
                        self.core.handle_verify_result(now, job, result);
                    }
                }
            }
        }
    }

    /// Queues `frames` on `key`'s connection. While `--lobby-memory-budget` has no room for
    /// them, the connection holding the most is dropped (`key` itself when it is that one:
    /// then the frames are not queued). The core learns of the dropped connections once the
    /// outputs are carried out (`closed_meanwhile`): telling it starts a new call, which may
    /// reuse the arena `frames` points into.
    fn queue_within_budget(
        &mut self,
        now: Instant,
        key: usize,
        frames: FrameRef,
    ) -> Result<(), QueueFull> {
        loop {
            let Some(c) = self.conns.get_mut(key) else {
                return Err(QueueFull::Closed);
            };
            let bytes = self.core.frame(frames);
            match c.stream.queue(bytes, SEND_QUEUE_CAP, &mut self.budget) {
                Err(QueueFull::Budget) => {
                    if self.shed(now, key) == key {
                        return Err(QueueFull::Budget);
                    }
                }
                other => return other,
            }
        }
    }

    /// Puts `key` on the list of connections to write after the batch (once).
    fn mark_dirty(&mut self, key: usize) {
        if let Some(conn) = self.conns.get_mut(key) {
            if !conn.in_dirty {
                conn.in_dirty = true;
                self.dirty.push_back(key);
            }
        }
    }

    /// Puts `key` on the list of connections to write at `due` (once; `due` is never earlier
    /// than the last one listed, so the list stays in order).
    fn mark_gathering(&mut self, due: Instant, key: usize) {
        if let Some(conn) = self.conns.get_mut(key) {
            if !conn.in_gathering {
                conn.in_gathering = true;
                self.gathering.push_back((due, key));
            }
        }
    }

    /// Carries out the core's outputs, writes the replies of the connections served in this
    /// batch, then one slice of everything else queued ([`FLUSH_SLICE`]; the rest after the
    /// next poll, which then does not wait), and carries out what those writes caused (a
    /// failed write closes a connection, whose departure the core announces to the others).
    pub(super) fn settle(&mut self, registry: &Registry, now: Instant) {
        self.carry_out(registry, now);
        let served = std::mem::take(&mut self.served);
        for &key in &served {
            self.flush(registry, now, key);
        }
        self.served = served;
        self.served.clear();
        self.carry_out(registry, now);
        self.flush_dirty(registry, now, FLUSH_SLICE);
        self.carry_out(registry, now);
    }

    /// Writes up to `slice` of the connections written to since their last flush, then up
    /// to `slice` of those whose fan-out is due (a connection on both lists is written once:
    /// the second finds nothing queued).
    fn flush_dirty(&mut self, registry: &Registry, now: Instant, slice: usize) {
        for _ in 0..slice {
            let Some(key) = self.dirty.pop_front() else {
                break;
            };
            if let Some(conn) = self.conns.get_mut(key) {
                conn.in_dirty = false;
            }
            self.flush(registry, now, key);
        }
        for _ in 0..slice {
            match self.gathering.front() {
                Some(&(due, key)) if due <= now => {
                    self.gathering.pop_front();
                    if let Some(conn) = self.conns.get_mut(key) {
                        conn.in_gathering = false;
                    }
                    self.flush(registry, now, key);
                }
                _ => return,
            }
        }
    }

    /// Writes what is queued for `key`; closes it once drained (a lingering close) or on a
    /// write error.
    pub(super) fn flush(&mut self, registry: &Registry, now: Instant, key: usize) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        let token = Target::GeneralConn(key).token();
        match conn
            .stream
            .flush(registry, token, &mut self.stats.bytes_out, &mut self.budget)
        {
            Ok(Flushed::Open) => {}
            Ok(Flushed::Drained) => self.close(now, key),
            Err(e) => {
                if conn.stream.phase() == Phase::Open {
                    log::debug!("general lobby: write {key}: {e}");
                    self.stats.io_errors += 1;
                }
                self.close(now, key);
            }
        }
    }

    /// The peer shut its sending side: the core forgets the connection now (its member is
    /// away), and what is queued for it (the replies to its last frames) is still written
    /// before the socket closes, within [`LINGER`].
    pub(super) fn peer_finished(&mut self, registry: &Registry, now: Instant, key: usize) {
        let id = self.id(key);
        self.core.handle_closed(now, id);
        self.carry_out(registry, now);
        if let Some(c) = self.conns.get_mut(key) {
            if c.stream.start_draining() {
                self.lingering.start(now, key, c.stream.serial());
            }
            // It is not read again.
            c.input.clear(&mut self.budget);
        }
        self.flush(registry, now, key);
    }

    /// The core's name for the connection at slab key `key` (see [`conn_id`]).
    pub(super) fn id(&self, key: usize) -> ConnId {
        conn_id(key, self.conns.get(key).map_or(0, |c| c.stream.serial()))
    }

    /// Closes `key` now: the core forgets it (also when it asked for the close, or was told
    /// at the peer's EOF: `handle_closed` of a connection it already forgot does nothing) and
    /// the slab entry goes after the event batch.
    pub(super) fn close(&mut self, now: Instant, key: usize) {
        if let Some(id) = self.close_quietly(key) {
            if self.carrying {
                self.closed_meanwhile.push(id);
            } else {
                self.core.handle_closed(now, id);
            }
        }
    }

    /// Closes `key` and frees its buffers, without telling the core yet: the caller does,
    /// with the id returned (none when it was closed already).
    fn close_quietly(&mut self, key: usize) -> Option<ConnId> {
        let conn = self.conns.get_mut(key)?;
        if !conn.stream.mark_closed(&mut self.budget) {
            return None;
        }
        conn.input.clear(&mut self.budget);
        self.closing.push(key);
        Some(self.id(key))
    }

    /// `--lobby-memory-budget` is full and `asking` needs room: closes the connection whose
    /// send queue and partial frame hold the most (`asking` itself when nobody else holds
    /// more, or when nobody holds anything), counts and logs it. Returns its key.
    pub(super) fn shed(&mut self, now: Instant, asking: usize) -> usize {
        let holds = |c: &Conn| c.stream.held() + c.input.tail().capacity();
        let live = (self.conns.iter()).filter(|(_, c)| c.stream.phase() != Phase::Closed);
        let victim = largest_holder(live.map(|(key, c)| (key, holds(c))), asking);
        let held = self.conns.get(victim).map_or(0, holds);
        self.stats.memory_budget_drops += 1;
        self.warnings.warn(
            now,
            format_args!(
                "general lobby: --lobby-memory-budget full ({} of {} bytes held): dropping \
                 the connection that holds the most ({held} bytes)",
                self.budget.held(),
                self.budget.limit()
            ),
        );
        self.close(now, victim);
        victim
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_id_names_its_key_and_serial() {
        for (key, serial) in [(0, 0), (1, 1), (7, u32::MAX), (u32::MAX as usize, 12345)] {
            assert_eq!(key_of(conn_id(key, serial)), (key, serial));
        }
        // The same key with another serial is another connection for the core.
        assert_ne!(conn_id(3, 1), conn_id(3, 2));
    }
}
