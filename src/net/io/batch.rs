//! Datagram batches for the R-Type UDP sockets: up to [`BATCH`]
//! datagrams read with one `recvmmsg` and written with one `sendmmsg`, in buffers allocated
//! once, so the system calls per datagram fall as the load rises.
//!
//! - [`RecvBatch`]: [`BATCH`] receive slots of [`SLOT_LEN`] bytes filled by one `recvmmsg`.
//!   The parsers read each datagram where it landed; a relayed DATA is rewritten there and
//!   sent from there.
//! - [`DatagramQueue`]: the datagrams queued for sending, each naming its socket (the caller's
//!   `S`), its destination and where its bytes are: one of the queue's own slots (a reply
//!   emitted in place) or a receive slot (a relay, never copied). [`DatagramQueue::send_run`]
//!   writes the queued datagrams of one socket with as few `sendmmsg` calls as the kernel
//!   allows and hands each datagram's outcome to the caller as `send_to`'s was (a datagram
//!   that would block is dropped and counted; the others still go).
//!
//! Nothing here allocates after `new` and a thread's first read. The sockets are
//! non-blocking (mio's). `recvmmsg` is called through `nix` (rustix lists it as not yet
//! implemented), `sendmmsg` through `rustix` (nix's needs its results iterated to count what
//! was sent): both safe APIs, no `unsafe` here.
//! On Linux a non-blocking `recvmmsg` stops only at an empty queue or an error, so a short
//! batch means the socket was drained ([`RecvBatch::drained`]): with edge-triggered readiness
//! the next datagram raises a new event, and no extra empty read is needed.

use std::cell::RefCell;
use std::io::{self, IoSlice, IoSliceMut};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::sys::socket::{recvmmsg, MsgFlags, MultiHeaders, SockaddrStorage};
use rustix::net::{sendmmsg, sendto, MMsgHdr, SendAncillaryBuffer, SendFlags, SocketAddrAny};

/// Datagrams per system call, each way.
pub const BATCH: usize = 64;
/// Bytes per slot: a datagram longer than this is cut by the kernel and then fails its
/// length check (the largest valid one, a full ROOM_LIST, is 1472 bytes).
pub const SLOT_LEN: usize = 2048;

/// `count` slots of [`SLOT_LEN`] zeroed bytes, on the heap.
fn slots(count: usize) -> Box<[[u8; SLOT_LEN]]> {
    vec![[0; SLOT_LEN]; count].into_boxed_slice()
}

thread_local! {
    /// nix's preallocated `mmsghdr` array and the sender addresses it points into, made on a
    /// thread's first read. It holds raw pointers, so it is not `Send` and cannot live in a
    /// [`RecvBatch`]: the front end is built on one thread and served on another, and an
    /// `unsafe impl Send` is not worth the crate's one exception to `deny(unsafe_code)`. A
    /// loop is one thread, so one per thread is one per loop; a read uses it only within
    /// the call.
    static RECV_HEADERS: RefCell<Option<MultiHeaders<SockaddrStorage>>> =
        const { RefCell::new(None) };
}

/// Datagrams asked for by the first read of a readiness event ([`ReadSize::First`]).
pub const FIRST_READ: usize = 8;

/// How many datagrams one read asks for. The user-space cost of a `recvmmsg` is its
/// headers, built for each call (they borrow the slots): about 23 instructions each
/// (callgrind, docs/PERFORMANCE.md), so asking for [`BATCH`] when one datagram is waiting,
/// as on a game instance whose room has one DATA in flight, cost ~1,500 instructions per
/// datagram, half of lobbyd's own work on a relayed DATA. The first read of a game
/// instance's event asks for a few; only a socket that filled it is read in full batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadSize {
    /// [`FIRST_READ`] datagrams.
    First,
    /// [`BATCH`] datagrams.
    Full,
}

impl ReadSize {
    /// Datagrams asked for.
    pub fn datagrams(self) -> usize {
        match self {
            ReadSize::First => FIRST_READ,
            ReadSize::Full => BATCH,
        }
    }
}

/// The datagrams of one `recvmmsg`.
pub struct RecvBatch {
    slots: Box<[[u8; SLOT_LEN]]>,
    /// Length of each datagram read, and its sender (`None`: not an IP address).
    received: [(usize, Option<SocketAddr>); BATCH],
    count: usize,
    /// Datagrams the last read asked for.
    asked: usize,
}

impl Default for RecvBatch {
    fn default() -> Self {
        RecvBatch::new()
    }
}

impl RecvBatch {
    /// Empty, its slots and headers allocated.
    pub fn new() -> RecvBatch {
        RecvBatch {
            slots: slots(BATCH),
            received: [(0, None); BATCH],
            count: 0,
            asked: 0,
        }
    }

    /// Reads up to `size` datagrams from `socket` into the slots (the previous batch is
    /// gone); how many. `WouldBlock` when there was none.
    pub fn recv(&mut self, socket: &impl AsRawFd, size: ReadSize) -> io::Result<usize> {
        self.count = 0;
        self.asked = size.datagrams();
        match size {
            ReadSize::First => self.recv_n::<FIRST_READ>(socket),
            ReadSize::Full => self.recv_n::<BATCH>(socket),
        }
    }

    /// One `recvmmsg` of at most `N` datagrams, its headers built for `N` slots only.
    fn recv_n<const N: usize>(&mut self, socket: &impl AsRawFd) -> io::Result<usize> {
        let RecvBatch {
            slots,
            received,
            count,
            ..
        } = self;
        RECV_HEADERS.with(|headers| {
            let mut free = slots.iter_mut();
            let mut iovs: [[IoSliceMut<'_>; 1]; N] = std::array::from_fn(|_| {
                [IoSliceMut::new(
                    free.next().map_or(&mut [][..], |slot| &mut slot[..]),
                )]
            });
            // Never borrowed twice: nothing in here reads again.
            let mut headers = headers
                .try_borrow_mut()
                .map_err(|_| io::Error::other("recvmmsg headers in use"))?;
            let headers = headers.get_or_insert_with(|| MultiHeaders::preallocate(BATCH, None));
            let results = recvmmsg(
                socket.as_raw_fd(),
                headers,
                iovs.iter_mut(),
                MsgFlags::empty(),
                None,
            )?;
            for (entry, msg) in received.iter_mut().zip(results) {
                *entry = (msg.bytes, msg.address.and_then(socket_addr));
                *count += 1;
            }
            Ok(*count)
        })
    }

    /// Datagrams in the batch.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when the batch holds no datagram.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// True when the last read was short (fewer datagrams than it asked for): the socket's
    /// queue was empty when it returned.
    pub fn drained(&self) -> bool {
        self.count < self.asked
    }

    /// Datagram `i` of the batch and its sender (`None` for a sender that is not an IP
    /// address, or `i` past the batch).
    pub fn datagram(&self, i: usize) -> Option<(&[u8], SocketAddr)> {
        let (len, from) = *self.received[..self.count].get(i)?;
        Some((&self.slots[i][..len], from?))
    }

    /// Datagram `i` of the batch, writable in place (empty past the batch).
    pub fn datagram_mut(&mut self, i: usize) -> &mut [u8] {
        match self.received[..self.count].get(i) {
            Some(&(len, _)) => &mut self.slots[i][..len],
            None => &mut [],
        }
    }
}

/// An IP socket address from what the kernel wrote.
fn socket_addr(address: SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = address.as_sockaddr_in() {
        return Some(SocketAddr::from(*v4));
    }
    address.as_sockaddr_in6().map(|v6| SocketAddr::from(*v6))
}

/// Where a queued datagram's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bytes {
    /// The queue's own slot `slot`.
    Own { slot: usize },
    /// Receive slot `slot` of the [`RecvBatch`] given to [`DatagramQueue::send_run`].
    Received { slot: usize },
}

struct Queued<S> {
    socket: S,
    bytes: Bytes,
    len: usize,
    to: SocketAddrAny,
}

/// Datagrams waiting for `sendmmsg`, in the order they were queued; `S` names a socket.
pub struct DatagramQueue<S> {
    slots: Box<[[u8; SLOT_LEN]]>,
    slots_used: usize,
    /// At most [`BATCH`] entries (its capacity, reserved once).
    queued: Vec<Queued<S>>,
}

impl<S: Copy + Eq> Default for DatagramQueue<S> {
    fn default() -> Self {
        DatagramQueue::new()
    }
}

impl<S: Copy + Eq> DatagramQueue<S> {
    /// Empty, its slots and entries allocated.
    pub fn new() -> DatagramQueue<S> {
        DatagramQueue {
            slots: slots(BATCH),
            slots_used: 0,
            queued: Vec::with_capacity(BATCH),
        }
    }

    /// Datagrams queued.
    pub fn len(&self) -> usize {
        self.queued.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queued.is_empty()
    }

    /// True when one more datagram does not fit: send what is queued first.
    pub fn is_full(&self) -> bool {
        self.queued.len() == BATCH
    }

    /// Queues a datagram for `socket` to `to`, written by `emit` into a slot of
    /// [`SLOT_LEN`] bytes (it returns the length). Returns false, queuing nothing, when the
    /// queue is full.
    pub fn push_emitted(
        &mut self,
        socket: S,
        to: SocketAddr,
        emit: impl FnOnce(&mut [u8]) -> usize,
    ) -> bool {
        if self.is_full() {
            return false;
        }
        let slot = self.slots_used;
        let len = emit(&mut self.slots[slot][..]).min(SLOT_LEN);
        self.slots_used += 1;
        self.push(socket, Bytes::Own { slot }, len, to);
        true
    }

    /// Queues receive slot `slot`'s first `len` bytes (of the [`RecvBatch`] that will be
    /// given to [`DatagramQueue::send_run`]) for `socket` to `to`. Returns false, queuing
    /// nothing, when the queue is full.
    pub fn push_received(&mut self, socket: S, to: SocketAddr, slot: usize, len: usize) -> bool {
        if self.is_full() || slot >= BATCH {
            return false;
        }
        self.push(socket, Bytes::Received { slot }, len.min(SLOT_LEN), to);
        true
    }

    fn push(&mut self, socket: S, bytes: Bytes, len: usize, to: SocketAddr) {
        self.queued.push(Queued {
            socket,
            bytes,
            len,
            to: SocketAddrAny::from(to),
        });
    }

    /// The queued datagrams cut into runs of one socket each, in order: `(socket, start,
    /// end)` of the first run starting at `start` (`None` past the end).
    pub fn run_at(&self, start: usize) -> Option<(S, usize, usize)> {
        let socket = self.queued.get(start)?.socket;
        let len = self.queued[start..]
            .iter()
            .take_while(|q| q.socket == socket)
            .count();
        Some((socket, start, start + len))
    }

    /// Sends the queued datagrams `start..end` (one socket's run, see
    /// [`DatagramQueue::run_at`]) on `socket`; `received` holds the slots relays point at.
    /// `outcome` gets each datagram's result and length, in order.
    pub fn send_run<'a>(
        &'a self,
        socket: BorrowedFd<'_>,
        (start, end): (usize, usize),
        received: &'a RecvBatch,
        mut outcome: impl FnMut(io::Result<usize>, usize),
    ) {
        let Some(run) = self.queued.get(start..end) else {
            return;
        };
        let bytes = |q: &'a Queued<S>| -> &'a [u8] {
            let slot = match q.bytes {
                Bytes::Own { slot } => self.slots.get(slot),
                Bytes::Received { slot } => received.slots.get(slot),
            };
            slot.map_or(&[][..], |slot| &slot[..q.len])
        };
        if let [one] = run {
            // One datagram: plain `sendto`, without building a batch's headers.
            let result = sendto(socket, bytes(one), SendFlags::empty(), &one.to);
            outcome(result.map_err(io::Error::from), one.len);
            return;
        }
        // The headers are built for each call (they borrow the datagrams), in an array sized
        // to the run: a relay's 3 copies should not pay for 64 headers.
        match run.len() {
            0..=4 => send_batch::<S, 4>(socket, run, bytes, outcome),
            5..=16 => send_batch::<S, 16>(socket, run, bytes, outcome),
            _ => send_batch::<S, BATCH>(socket, run, bytes, outcome),
        }
    }

    /// Forgets every queued datagram (after they were sent).
    pub fn clear(&mut self) {
        self.queued.clear();
        self.slots_used = 0;
    }
}

/// Sends `run` (at most `N` datagrams, one socket) with `sendmmsg` calls until each one went
/// or failed; `outcome` gets each datagram's result and length, in order.
fn send_batch<'d, S, const N: usize>(
    socket: BorrowedFd<'_>,
    run: &'d [Queued<S>],
    bytes: impl Fn(&'d Queued<S>) -> &'d [u8],
    mut outcome: impl FnMut(io::Result<usize>, usize),
) {
    let run = &run[..run.len().min(N)];
    let iovs: [IoSlice<'_>; N] =
        std::array::from_fn(|i| IoSlice::new(run.get(i).map_or(&[][..], &bytes)));
    let mut controls: [SendAncillaryBuffer<'_, '_, '_>; N] =
        std::array::from_fn(|_| SendAncillaryBuffer::default());
    // `sendmmsg` takes a contiguous array: entries past the run are built (empty, no address)
    // but never passed to the kernel.
    let mut i = 0;
    let mut msgs: [MMsgHdr<'_>; N] = controls.each_mut().map(|control| {
        let iov = std::slice::from_ref(&iovs[i]);
        let msg = match run.get(i) {
            Some(q) => MMsgHdr::new_with_addr(&q.to, iov, control),
            None => MMsgHdr::new(iov, control),
        };
        i += 1;
        msg
    });
    let mut next = 0;
    while next < run.len() {
        match sendmmsg(socket, &mut msgs[next..run.len()], SendFlags::empty()) {
            Ok(sent) if sent > 0 => {
                let done = (next + sent).min(run.len());
                for (msg, q) in msgs[next..done].iter().zip(&run[next..done]) {
                    outcome(Ok(msg.bytes_sent()), q.len);
                }
                next = done;
            }
            // Nothing sent and no error (not seen in practice): count the first datagram as
            // failed so the loop always ends.
            Ok(_) => {
                outcome(Err(io::ErrorKind::WriteZero.into()), run[next].len);
                next += 1;
            }
            // The first datagram failed (an error past the first is not reported: the call
            // returns the count sent, and the next call starts at the failed one). Count it
            // and go on with the rest, as one `send_to` each did.
            Err(e) => {
                outcome(Err(e.into()), run[next].len);
                next += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    /// A non-blocking receiver with `count` datagrams waiting, each its index as one byte.
    fn receiver_holding(count: u8) -> UdpSocket {
        let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        for i in 0..count {
            sender
                .send_to(&[i], receiver.local_addr().unwrap())
                .unwrap();
        }
        receiver.set_nonblocking(true).unwrap();
        receiver
    }

    #[test]
    fn a_first_read_takes_a_few_and_says_whether_the_socket_was_drained() {
        let mut batch = RecvBatch::new();
        let socket = receiver_holding(3);
        assert_eq!(batch.recv(&socket, ReadSize::First).unwrap(), 3);
        assert!(batch.drained(), "3 of the 8 asked for: nothing left");
        assert_eq!(batch.datagram(2).map(|(bytes, _)| bytes), Some(&[2u8][..]));

        let socket = receiver_holding(FIRST_READ as u8 + 2);
        assert_eq!(batch.recv(&socket, ReadSize::First).unwrap(), FIRST_READ);
        assert!(!batch.drained(), "a full first read may have left some");
        assert_eq!(batch.recv(&socket, ReadSize::Full).unwrap(), 2);
        assert!(batch.drained());
        let first_left = FIRST_READ as u8;
        assert_eq!(
            batch.datagram(0).map(|(bytes, _)| bytes),
            Some(&[first_left][..])
        );
        let empty = batch.recv(&socket, ReadSize::Full).unwrap_err();
        assert_eq!(empty.kind(), io::ErrorKind::WouldBlock);
    }
}
