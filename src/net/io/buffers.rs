//! The counted buffers of the TCP front ends: each connection's send queue ([`SendQueue`],
//! surviving partial writes, capped per connection) and unfinished input frame
//! ([`PartialFrame`], grown only as bytes arrive), and the [`MemoryBudget`] that counts them
//! together for a whole front end, so that what clients can make it hold has one ceiling
//! (docs/OPERATING.md, "Memory"). When the budget is full the front end drops the connection
//! that holds the most ([`largest_holder`]). Plain numbers and vectors: no socket, no clock.

use std::io::{self, Write};

use crate::net::io::frames::Tail;

/// A total of heap bytes shared by the buffers of every connection of a front end: their
/// send queues and their partial input frames. Each buffer's capacity is counted (taken as
/// it grows, given back as it is freed), so the total is what those buffers really hold, and
/// a buffer never grows past what is left: a push that does not fit is refused, and the
/// front end frees room by dropping the connection that holds the most (never a small,
/// well-behaved one while a larger holder exists). The budget itself is plain numbers: the
/// buffers are the connections', and each call that grows or frees one passes the budget in.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    limit: usize,
    held: usize,
    peak: usize,
}

impl MemoryBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> MemoryBudget {
        MemoryBudget {
            limit,
            held: 0,
            peak: 0,
        }
    }

    /// A budget that never refuses (a front end whose per-connection caps are its bound).
    pub fn unlimited() -> MemoryBudget {
        MemoryBudget::new(usize::MAX)
    }

    /// The total allowed.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held now by the buffers counted against it.
    pub fn held(&self) -> usize {
        self.held
    }

    /// The most held at once since the start.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Takes `n` bytes if they fit.
    fn take(&mut self, n: usize) -> bool {
        if n > self.limit - self.held.min(self.limit) {
            return false;
        }
        self.grant(n);
        true
    }

    /// Counts `n` bytes held whether or not they fit (an allocator that gave more than
    /// asked).
    fn grant(&mut self, n: usize) {
        self.held = self.held.saturating_add(n);
        self.peak = self.peak.max(self.held);
    }

    /// Gives back `n` bytes.
    fn give(&mut self, n: usize) {
        debug_assert!(n <= self.held, "gave back {n} of {} held", self.held);
        self.held = self.held.saturating_sub(n);
    }
}

/// Which connection goes when a front end's [`MemoryBudget`] is full and `asking` needs
/// room: of the `(key, bytes held)` of its live connections, the one that holds the most;
/// `asking` itself on a tie with it (a connection is never dropped for one that holds no more
/// than it does) or when there are none.
pub fn largest_holder(held: impl Iterator<Item = (usize, usize)>, asking: usize) -> usize {
    held.max_by_key(|&(key, bytes)| (bytes, key == asking))
        .map_or(asking, |(key, _)| key)
}

/// Smallest capacity a counted buffer grows to: a frame or two, so small traffic does not
/// reallocate at every push.
const MIN_GROWTH: usize = 1024;

/// Makes room in `buf` for `extra` more bytes, its capacity counted against `budget`, and
/// at most `max` in all; false (nothing changed) when that does not fit. A buffer grows by a
/// quarter at a time (not doubled) and only as bytes come, so it holds little slack: a frame
/// that declares a megabyte and sends a kilobyte holds about a kilobyte.
fn reserve_counted(buf: &mut Vec<u8>, extra: usize, max: usize, budget: &mut MemoryBudget) -> bool {
    let needed = buf.len().saturating_add(extra);
    let had = buf.capacity();
    if needed <= had {
        return true;
    }
    if needed > max {
        return false;
    }
    let roomy = needed.max(had + had / 4).max(MIN_GROWTH).min(max);
    for target in [roomy, needed] {
        if budget.take(target - had) {
            buf.reserve_exact(target - buf.len());
            budget.grant(buf.capacity().saturating_sub(target));
            return true;
        }
    }
    false
}

/// Frees `buf` and gives its capacity back to `budget`.
fn free_counted(buf: &mut Vec<u8>, budget: &mut MemoryBudget) {
    budget.give(buf.capacity());
    *buf = Vec::new();
}

/// Why a send queue refused bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueFull {
    /// The connection's own cap: its peer does not read.
    Cap,
    /// The front end's [`MemoryBudget`] has no room left: the caller drops the largest
    /// holder and tries again.
    Budget,
    /// The connection is closed.
    Closed,
}

/// Bytes waiting to be written: a heap buffer that exists only while non-empty, its capacity
/// counted against the front end's [`MemoryBudget`].
#[derive(Debug, Default)]
pub struct SendQueue {
    buf: Vec<u8>,
    written: usize,
}

impl SendQueue {
    /// Bytes queued and not yet written.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.written
    }

    /// Nothing waits.
    pub fn is_empty(&self) -> bool {
        self.pending() == 0
    }

    /// Queues `bytes`, or refuses if more than `cap` bytes would then wait or `budget` has no
    /// room for the growth.
    pub fn push(
        &mut self,
        bytes: &[u8],
        cap: usize,
        budget: &mut MemoryBudget,
    ) -> Result<(), QueueFull> {
        if self.pending() + bytes.len() > cap {
            return Err(QueueFull::Cap);
        }
        if self.written > 0 && (self.written >= self.buf.len() / 2 || self.must_compact(bytes)) {
            self.buf.drain(..self.written);
            self.written = 0;
        }
        if !reserve_counted(&mut self.buf, bytes.len(), cap, budget) {
            return Err(QueueFull::Budget);
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// The written head must go to make room within the cap.
    fn must_compact(&self, bytes: &[u8]) -> bool {
        self.buf.len() + bytes.len() > self.buf.capacity()
    }

    /// Writes until done or `WouldBlock` and returns the bytes written; frees the buffer
    /// (giving its capacity back to `budget`) once everything is written.
    pub fn write_to(
        &mut self,
        stream: &mut impl Write,
        budget: &mut MemoryBudget,
    ) -> io::Result<usize> {
        let mut total = 0;
        while self.written < self.buf.len() {
            match stream.write(&self.buf[self.written..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.written += n;
                    total += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(total),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        // Idle connections hold no heap memory.
        self.clear(budget);
        Ok(total)
    }

    /// Drops what waits and frees the buffer.
    pub fn clear(&mut self, budget: &mut MemoryBudget) {
        free_counted(&mut self.buf, budget);
        self.written = 0;
    }

    /// Heap bytes held (what the budget counts for it).
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }
}

/// Input kept between reads (the start of a frame split across reads, or what a connection
/// over its frame budget left unserved), its capacity counted against the front end's
/// [`MemoryBudget`]. It grows only as bytes arrive (a large declared length reserves nothing)
/// and is freed once its frames are served. The general lobby's frame reader keeps it as its
/// [`Tail`]; Warzone's driver, whose core cuts its own input, as its read buffer.
#[derive(Debug, Default)]
pub struct PartialFrame {
    buf: Vec<u8>,
}

impl PartialFrame {
    /// The bytes held.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Nothing held.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Heap bytes held (what the budget counts for it).
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Appends `bytes`; false (nothing appended) when `budget` has no room for them.
    pub fn extend(&mut self, bytes: &[u8], budget: &mut MemoryBudget) -> bool {
        if !reserve_counted(&mut self.buf, bytes.len(), usize::MAX, budget) {
            return false;
        }
        self.buf.extend_from_slice(bytes);
        true
    }

    /// Drops the first `n` bytes (a served frame); the buffer is freed once empty.
    pub fn consume(&mut self, n: usize, budget: &mut MemoryBudget) {
        self.buf.drain(..n.min(self.buf.len()));
        if self.buf.is_empty() {
            self.clear(budget);
        }
    }

    /// Drops everything and frees the buffer.
    pub fn clear(&mut self, budget: &mut MemoryBudget) {
        free_counted(&mut self.buf, budget);
    }
}

impl Tail for PartialFrame {
    type Budget = MemoryBudget;

    fn bytes(&self) -> &[u8] {
        PartialFrame::bytes(self)
    }

    fn extend(&mut self, bytes: &[u8], budget: &mut MemoryBudget) -> bool {
        PartialFrame::extend(self, bytes, budget)
    }

    fn consume(&mut self, n: usize, budget: &mut MemoryBudget) {
        PartialFrame::consume(self, n, budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_queue_survives_partial_writes_and_frees_when_drained() {
        /// Accepts at most `step` bytes per write, then would block once.
        struct Trickle {
            got: Vec<u8>,
            step: usize,
            block_next: bool,
        }
        impl Write for Trickle {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                if std::mem::take(&mut self.block_next) {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                self.block_next = true;
                let n = buf.len().min(self.step);
                self.got.extend_from_slice(&buf[..n]);
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut written = 0;
        let mut budget = MemoryBudget::new(64 * 1024);
        let mut queue = SendQueue::default();
        let mut peer = Trickle {
            got: Vec::new(),
            step: 3,
            block_next: false,
        };
        let mut sent = Vec::new();
        for i in 0..50u8 {
            let frame = [i; 7];
            assert_eq!(queue.push(&frame, 64 * 1024, &mut budget), Ok(()));
            assert_eq!(budget.held(), queue.capacity());
            sent.extend_from_slice(&frame);
            written += queue.write_to(&mut peer, &mut budget).unwrap();
        }
        while !queue.is_empty() {
            written += queue.write_to(&mut peer, &mut budget).unwrap();
        }
        assert_eq!(peer.got, sent);
        assert_eq!(queue.capacity(), 0, "drained queue keeps no buffer");
        assert_eq!(budget.held(), 0, "and gives its bytes back");
        assert_eq!(written, sent.len());
    }

    #[test]
    fn send_queue_refuses_past_the_cap() {
        let cap = 64 * 1024;
        let mut budget = MemoryBudget::unlimited();
        let mut queue = SendQueue::default();
        let chunk = [0u8; 1000];
        let mut pushed = 0;
        while queue.push(&chunk, cap, &mut budget).is_ok() {
            pushed += chunk.len();
        }
        assert_eq!(queue.push(&chunk, cap, &mut budget), Err(QueueFull::Cap));
        assert!(pushed <= cap && pushed + chunk.len() > cap);
        assert!(queue.capacity() <= cap, "never grows past its cap");
        assert_eq!(budget.held(), queue.capacity());
    }

    #[test]
    fn the_largest_holder_goes_and_the_asker_on_a_tie() {
        assert_eq!(
            largest_holder([(1, 10), (2, 30), (3, 20)].into_iter(), 3),
            2
        );
        assert_eq!(
            largest_holder([(1, 30), (2, 30), (3, 20)].into_iter(), 1),
            1
        );
        assert_eq!(largest_holder([(1, 30), (5, 30)].into_iter(), 1), 1);
        assert_eq!(largest_holder([(1, 0), (4, 0)].into_iter(), 4), 4);
        assert_eq!(largest_holder(std::iter::empty(), 7), 7);
    }

    #[test]
    fn queues_share_a_budget_and_give_it_back() {
        let mut budget = MemoryBudget::new(10_000);
        let mut queues: Vec<SendQueue> = (0..3).map(|_| SendQueue::default()).collect();
        let chunk = [7u8; 1000];
        // The queues fill the budget together, whatever their own caps.
        let mut pushed = 0;
        'fill: loop {
            for queue in &mut queues {
                match queue.push(&chunk, 1 << 20, &mut budget) {
                    Ok(()) => pushed += chunk.len(),
                    Err(full) => {
                        assert_eq!(full, QueueFull::Budget);
                        break 'fill;
                    }
                }
            }
        }
        let held: usize = queues.iter().map(SendQueue::capacity).sum();
        assert_eq!(
            budget.held(),
            held,
            "the budget counts every buffer's capacity"
        );
        assert!(held <= budget.limit() && pushed <= held);
        assert!(pushed + chunk.len() > budget.limit() - 2 * MIN_GROWTH);
        assert_eq!(budget.peak(), held);
        // Freeing one queue makes room for another.
        let freed = queues[0].capacity();
        queues[0].clear(&mut budget);
        assert_eq!(budget.held(), held - freed);
        assert_eq!(queues[1].push(&chunk, 1 << 20, &mut budget), Ok(()));
        for queue in &mut queues {
            queue.clear(&mut budget);
        }
        assert_eq!(budget.held(), 0);
        assert_eq!(budget.peak(), held, "the peak stays");
    }

    #[test]
    fn a_growing_buffer_holds_little_slack() {
        let mut budget = MemoryBudget::unlimited();
        let mut queue = SendQueue::default();
        let chunk = [1u8; 3000];
        for _ in 0..200 {
            queue.push(&chunk, usize::MAX, &mut budget).unwrap();
            let slack = queue.capacity() - queue.pending();
            assert!(slack <= queue.pending() / 4 + MIN_GROWTH, "{slack} spare");
        }
    }

    #[test]
    fn a_partial_frame_grows_only_as_bytes_arrive() {
        let mut budget = MemoryBudget::new(8 * 1024);
        let mut partial = PartialFrame::default();
        // A header declaring a megabyte reserves nothing beyond what came.
        assert!(partial.extend(&[0u8; 10], &mut budget));
        assert!(partial.capacity() <= MIN_GROWTH);
        assert_eq!(budget.held(), partial.capacity());
        while partial.extend(&[0u8; 500], &mut budget) {}
        assert!(budget.held() <= budget.limit());
        assert!(partial.bytes().len() + 500 > budget.limit() - MIN_GROWTH);
        let len = partial.bytes().len();
        partial.consume(10, &mut budget);
        assert_eq!(partial.bytes().len(), len - 10);
        partial.consume(len, &mut budget);
        assert!(partial.is_empty());
        assert_eq!((partial.capacity(), budget.held()), (0, 0));
    }

    #[test]
    fn an_exhausted_budget_refuses_without_changing_anything() {
        let mut budget = MemoryBudget::new(2048);
        let mut partial = PartialFrame::default();
        assert!(partial.extend(&[1u8; 2000], &mut budget));
        let mut queue = SendQueue::default();
        assert_eq!(
            queue.push(&[2u8; 100], 1 << 20, &mut budget),
            Err(QueueFull::Budget)
        );
        assert_eq!((queue.capacity(), queue.pending()), (0, 0));
        assert!(!partial.extend(&[1u8; 100], &mut budget));
        assert_eq!(partial.bytes().len(), 2000);
        assert_eq!(budget.held(), partial.capacity());
    }
}
