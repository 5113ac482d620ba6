//! `write-floor`: what the kernel alone needs to deliver one COUNTDOWN tick, the floor that
//! lobbyd's COUNTDOWN lateness is held against.
//!
//! The tool opens `--concurrency` loopback connections to a listener of its own (from the
//! `--sources` addresses in turn, like `tcp-cycle`'s clients), then, every
//! [`BURST_EVERY`], one thread writes one COUNTDOWN frame (7 bytes, as lobbyd sends it) to
//! every accepted socket in a plain loop of `write` calls: all the frames of parties due at
//! the same instant, with no lobby logic at all. A second thread polls the client ends, as
//! `tcp-cycle` does, and reads them.
//!
//! It reports, per burst, the time the write loop took (`latency_us`: the kernel's time to
//! write those frames), and per frame the time from the burst's start to the frame being
//! read (`countdown_lateness_us`, measured as `tcp-cycle` measures a COUNTDOWN against its
//! due time: from the kernel's receive timestamp, [`lobbyd::net::io::rx_time`]). Counts: `frames`
//! read, `bursts`, `connections`.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};

use lobbyd::wire::tcp_lobby::ServerRepr;

use super::options::Options;
use super::stats::{Stats, Summary};
use super::tcp_engine::connect_blocking;
use lobbyd::net::io::rx_time::{self, Stamp};

/// Time between bursts: lobbyd's default `--countdown-tick`.
pub const BURST_EVERY: Duration = Duration::from_millis(100);
/// The reader's longest poll wait (it checks for the end of the run this often).
const READER_WAIT: Duration = Duration::from_millis(10);

/// Runs the bursts for `--duration` and returns the summary.
pub fn run(options: &Options, progress: &mut dyn Write) -> io::Result<Summary> {
    let listener = TcpListener::bind(SocketAddr::new(IpAddr::from([127, 0, 0, 1]), 0))?;
    let addr = listener.local_addr()?;
    let mut writers = Vec::with_capacity(options.concurrency);
    let mut readers = Vec::with_capacity(options.concurrency);
    for i in 0..options.concurrency {
        let client = connect_blocking(options.source(i), addr, options.timeout)?;
        let (server, _) = listener.accept()?;
        server.set_nodelay(true)?;
        server.set_nonblocking(true)?;
        client.set_nonblocking(true)?;
        writers.push(server);
        readers.push(client);
    }
    if !options.quiet {
        writeln!(
            progress,
            "write-floor: {} connections to {addr}, a burst every {} ms",
            options.concurrency,
            BURST_EVERY.as_millis()
        )?;
    }
    let mut frame = [0u8; 16];
    let len = ServerRepr::Countdown { remaining: 1.0 }.emit(&mut frame);
    let frame = &frame[..len];

    let base = Instant::now();
    // Nanoseconds from `base` to the start of the latest burst.
    let burst_start = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (burst_start, stop) = (Arc::clone(&burst_start), Arc::clone(&stop));
        let frame_len = frame.len();
        thread::spawn(move || read_frames(readers, frame_len, base, &burst_start, &stop))
    };

    let mut stats = Stats::default();
    let start = Instant::now();
    let end = start + options.duration;
    let mut next = start + BURST_EVERY;
    while next < end {
        thread::sleep(next.saturating_duration_since(Instant::now()));
        let t0 = Instant::now();
        let since_base = u64::try_from(t0.duration_since(base).as_nanos()).unwrap_or(u64::MAX);
        burst_start.store(since_base, Ordering::Release);
        for socket in &mut writers {
            stats.sent += 1;
            match socket.write(frame) {
                Ok(n) if n == frame.len() => {}
                Ok(_) => stats.error("short_write"),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => stats.error("would_block"),
                Err(_) => stats.error("write_failed"),
            }
        }
        stats.complete(t0.elapsed());
        next += BURST_EVERY;
    }
    // The last frames get one more burst period to arrive.
    thread::sleep(BURST_EVERY);
    stop.store(true, Ordering::Release);
    let lateness = reader
        .join()
        .map_err(|_| io::Error::other("the reader thread panicked"))??;
    let elapsed = start.elapsed();
    stats.set("bursts", stats.completed);
    stats.set("connections", options.concurrency as u64);
    stats.set("frames", lateness.len() as u64);
    for late in lateness {
        stats.lateness(late);
    }
    Ok(Summary::new(
        options,
        format!("own listener {addr}"),
        &stats,
        elapsed,
    ))
}

/// The reader thread: polls the client ends and returns, per frame read, the time since the
/// start of the burst that wrote it.
fn read_frames(
    sockets: Vec<TcpStream>,
    frame_len: usize,
    base: Instant,
    burst_start: &AtomicU64,
    stop: &AtomicBool,
) -> io::Result<Vec<Duration>> {
    let mut poll = Poll::new()?;
    let mut sockets: Vec<mio::net::TcpStream> = sockets
        .into_iter()
        .map(mio::net::TcpStream::from_std)
        .collect();
    for (i, socket) in sockets.iter_mut().enumerate() {
        rx_time::enable(socket)?;
        poll.registry()
            .register(socket, Token(i), Interest::READABLE)?;
    }
    let mut control = rx_time::control_buffer();
    // Bytes of a frame split across reads, per connection.
    let mut partial = vec![0usize; sockets.len()];
    let mut events = Events::with_capacity(1024);
    let mut buf = [0u8; 4096];
    let mut lateness = Vec::new();
    while !stop.load(Ordering::Acquire) {
        match poll.poll(&mut events, Some(READER_WAIT)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        let now = Instant::now();
        let started = base + Duration::from_nanos(burst_start.load(Ordering::Acquire));
        for event in events.iter() {
            let i = event.token().0;
            let Some(socket) = sockets.get_mut(i) else {
                continue;
            };
            loop {
                match rx_time::read(socket, &mut buf, &mut control) {
                    Ok((0, _)) => break,
                    Ok((n, stamp)) => {
                        let arrived = stamp.and_then(Stamp::to_instant).unwrap_or(now);
                        let late = arrived.saturating_duration_since(started);
                        let bytes = partial[i] + n;
                        for _ in 0..bytes / frame_len {
                            lateness.push(late);
                        }
                        partial[i] = bytes % frame_len;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
    }
    Ok(lateness)
}
