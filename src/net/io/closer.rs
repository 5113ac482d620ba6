//! Closing released TCP sockets on a helper thread, so the kernel's work for each close is
//! not done inside the loop's passes (the hostile-traffic run's p99).
//!
//! On Linux, `close` of a connected TCP socket sends its FIN (or RST) at once, and over
//! loopback (or any local peer) the kernel delivers that segment, the peer's ACK and the
//! peer process's wake-up in softirq work run inside the closing thread's system call
//! (8-11 us of CPU per close on the 2-core test VM without the wake-up, 25 us of wall time
//! per close measured in the loop under the hostile run). Under a connection flood the loop
//! released up to 64 sockets per front end per pass: two thirds of the passes over 1 ms
//! were `after_events` passes made of these slices, and every well-behaved request that
//! arrived meanwhile waited for them.
//!
//! So the loop still does what decides behaviour (reads away unread input, so the close
//! sends FIN and not RST, and takes the socket out of its epoll set, because the descriptor
//! now outlives its slab key), then hands the socket to one closer thread, a batch per slice
//! and one channel message per batch. The loop stays the only thread that touches sockets'
//! contents; the closer only drops them. The closer runs 10 nice levels below the thread
//! that started it: closing is background work that must not preempt the loop.
//!
//! Bounded: at most [`MAX_IN_FLIGHT`] sockets wait for the closer; past that (a closer
//! starved of CPU), or without a closer (it could not be started), the loop closes them
//! itself as before, so descriptors never pile up.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::OnceLock;

use mio::net::TcpStream;

/// Sockets handed to the closer and not yet closed, at most.
pub const MAX_IN_FLIGHT: usize = 4096;
/// How many nice levels below its starter the closer runs.
const NICER_BY: i32 = 10;

/// Sockets handed over and not closed yet.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// The closer thread's mailbox; `None` when it could not be started.
fn closer() -> Option<&'static Sender<Vec<TcpStream>>> {
    static CLOSER: OnceLock<Option<Sender<Vec<TcpStream>>>> = OnceLock::new();
    CLOSER
        .get_or_init(|| match spawn() {
            Ok(sender) => Some(sender),
            Err(e) => {
                log::warn!("no closer thread ({e}): sockets are closed on the loop");
                None
            }
        })
        .as_ref()
}

fn spawn() -> io::Result<Sender<Vec<TcpStream>>> {
    let (sender, batches) = mpsc::channel::<Vec<TcpStream>>();
    std::thread::Builder::new()
        .name("lobbyd-closer".into())
        .spawn(move || {
            lower_priority();
            for batch in batches {
                let closed = batch.len();
                drop(batch);
                IN_FLIGHT.fetch_sub(closed, Ordering::Relaxed);
            }
        })?;
    Ok(sender)
}

/// Linux keeps a nice value per thread: this one lowers only the calling thread's.
fn lower_priority() {
    let lowered = rustix::process::getpriority_process(None)
        .and_then(|nice| rustix::process::setpriority_process(None, (nice + NICER_BY).min(19)));
    if let Err(e) = lowered {
        log::debug!("closer thread priority unchanged: {e}");
    }
}

/// Starts the closer thread now (at start-up), rather than on the first close in the loop.
pub fn start() {
    let _ = closer();
}

/// Sockets to close, collected during one slice and handed over together by [`Self::send`]
/// (one channel message and at most one thread wake-up per slice). Dropped unsent, it
/// closes them where it is.
#[derive(Debug, Default)]
pub struct CloseBatch {
    sockets: Vec<TcpStream>,
}

impl CloseBatch {
    /// Adds a socket that is out of the loop's epoll set and whose input was read away.
    pub fn push(&mut self, socket: TcpStream) {
        self.sockets.push(socket);
    }

    /// Hands the batch to the closer thread, or closes it here when the closer is missing
    /// or [`MAX_IN_FLIGHT`] would be passed.
    pub fn send(self) {
        let count = self.sockets.len();
        if count == 0 {
            return;
        }
        let Some(closer) = closer() else {
            return;
        };
        if IN_FLIGHT.fetch_add(count, Ordering::Relaxed) + count > MAX_IN_FLIGHT {
            IN_FLIGHT.fetch_sub(count, Ordering::Relaxed);
            return;
        }
        if let Err(mpsc::SendError(unsent)) = closer.send(self.sockets) {
            IN_FLIGHT.fetch_sub(unsent.len(), Ordering::Relaxed);
        }
    }
}

/// Sockets waiting for the closer now (for tests).
pub fn in_flight() -> usize {
    IN_FLIGHT.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::time::{Duration, Instant};

    #[test]
    fn a_batch_sent_to_the_closer_is_closed_with_a_fin() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut clients = Vec::new();
        let mut batch = CloseBatch::default();
        for _ in 0..8 {
            clients.push(std::net::TcpStream::connect(addr).unwrap());
            let (accepted, _) = listener.accept().unwrap();
            batch.push(TcpStream::from_std(accepted));
        }
        batch.send();
        for mut client in clients {
            client
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut buf = [0u8; 8];
            // End of stream (a FIN), not a reset and not a timeout.
            assert_eq!(client.read(&mut buf).unwrap(), 0);
        }
        let give_up = Instant::now() + Duration::from_secs(10);
        while in_flight() > 0 && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(in_flight(), 0, "every socket handed over was closed");
    }
}
