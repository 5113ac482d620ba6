//! The baseline: a raw UDP echo server on its own thread, the least work a server can do per
//! datagram on this machine.
//!
//! By default it is built like lobbyd's loop before batching (one thread, one mio `Poll`,
//! edge-triggered, drain until `WouldBlock`, one `send_to` per datagram), so the ratio of a
//! lobbyd mode to `echo` in the same session measures what lobbyd's own work costs. With
//! `--blocking` ([`EchoServer::start_blocking`]) it is the simplest server std allows, no mio:
//! a blocking `recv_from` and one `send_to` per datagram, like the C baseline servers'
//! LIST_ROOMS server (a mio baseline is itself slower than that, so a ratio to it alone flatters
//! lobbyd). Either answers each datagram with `reply_size` bytes: the request copied to the
//! front, zeros after it, so a 12-byte request can draw a reply the size of a 64-room
//! ROOM_LIST.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};

/// A running echo server; dropping it stops it.
pub struct EchoServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<u64>>>,
}

impl EchoServer {
    /// Binds `bind` and serves on a new thread.
    pub fn start(bind: SocketAddr, reply_size: usize) -> io::Result<EchoServer> {
        let mut socket = UdpSocket::bind(bind)?;
        let addr = socket.local_addr()?;
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut socket, Token(0), Interest::READABLE)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("echo".into())
            .spawn(move || serve(poll, socket, reply_size, &flag))?;
        Ok(EchoServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Binds `bind` and serves on a new thread with blocking std sockets: one `recv_from`
    /// and one `send_to` per datagram, no poll.
    pub fn start_blocking(bind: SocketAddr, reply_size: usize) -> io::Result<EchoServer> {
        let socket = std::net::UdpSocket::bind(bind)?;
        let addr = socket.local_addr()?;
        // The stop flag is looked at between datagrams and after this much silence.
        socket.set_read_timeout(Some(Duration::from_millis(20)))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("echo".into())
            .spawn(move || serve_blocking(&socket, reply_size, &flag))?;
        Ok(EchoServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server and returns how many datagrams it answered.
    pub fn stop(mut self) -> io::Result<u64> {
        self.join()
    }

    fn join(&mut self) -> io::Result<u64> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .map_err(|_| io::Error::other("echo thread panicked"))?,
            None => Ok(0),
        }
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        let _ = self.join();
    }
}

fn serve(
    mut poll: Poll,
    socket: UdpSocket,
    reply_size: usize,
    stop: &AtomicBool,
) -> io::Result<u64> {
    let mut events = Events::with_capacity(16);
    let mut buf = vec![0u8; 65_536];
    let mut answered = 0u64;
    while !stop.load(Ordering::Relaxed) {
        match poll.poll(&mut events, Some(Duration::from_millis(20))) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        if events.is_empty() {
            continue;
        }
        loop {
            let (len, from) = match socket.recv_from(&mut buf) {
                Ok(received) => received,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // ICMP errors of earlier sends surface here; keep serving.
                Err(_) => continue,
            };
            if socket
                .send_to(reply(&mut buf, len, reply_size), from)
                .is_ok()
            {
                answered += 1;
            }
        }
    }
    Ok(answered)
}

/// The blocking server's loop: one `recv_from`, one `send_to`, until `stop`.
fn serve_blocking(
    socket: &std::net::UdpSocket,
    reply_size: usize,
    stop: &AtomicBool,
) -> io::Result<u64> {
    let mut buf = vec![0u8; 65_536];
    let mut answered = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let (len, from) = match socket.recv_from(&mut buf) {
            Ok(received) => received,
            // The read timeout (to look at `stop`), a signal, or an ICMP error of an
            // earlier send: keep serving.
            Err(_) => continue,
        };
        if socket
            .send_to(reply(&mut buf, len, reply_size), from)
            .is_ok()
        {
            answered += 1;
        }
    }
    Ok(answered)
}

/// The reply to the `len`-byte request at the front of `buf`: the request, padded with zeros
/// to `reply_size` bytes (the tail may still hold bytes of an earlier, longer datagram).
fn reply(buf: &mut [u8], len: usize, reply_size: usize) -> &[u8] {
    if reply_size > len {
        buf[len..reply_size].fill(0);
    }
    &buf[..reply_size]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One 4-byte request to `server`, answered with 40 bytes; then stopped.
    fn echoes_with_the_reply_size(server: EchoServer) {
        let client = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        client.send_to(&[1, 2, 3, 4], server.addr()).unwrap();
        let mut buf = [0xa5u8; 100];
        let (len, from) = client.recv_from(&mut buf).unwrap();
        assert_eq!(from, server.addr());
        assert_eq!(len, 40);
        assert_eq!(&buf[..4], &[1, 2, 3, 4]);
        assert!(buf[4..40].iter().all(|&b| b == 0));
        assert_eq!(server.stop().unwrap(), 1);
    }

    #[test]
    fn mio_server_echoes_with_the_reply_size() {
        let bind = "127.0.0.1:0".parse().unwrap();
        echoes_with_the_reply_size(EchoServer::start(bind, 40).unwrap());
    }

    #[test]
    fn blocking_server_echoes_with_the_reply_size() {
        let bind = "127.0.0.1:0".parse().unwrap();
        echoes_with_the_reply_size(EchoServer::start_blocking(bind, 40).unwrap());
    }
}
