//! The host's side of the Warzone master server's reachability probe
//! (docs/protocols/wz-lobby.md "Reachability probe"), so `wz-list` and `wz-host` work against
//! lobbyd's default `--wz-check-reachable on`.
//!
//! Each host listens on a game port of its own, on its source address (port chosen by the
//! OS), and announces that port in its version 4 GAMESTRUCT (`hostPort`). lobbyd connects
//! there before it lists the game and sends the 8 zero bytes of `PROBE_REQUEST`; the host
//! answers `"WZLR" | u32 1 | u32 gameId` as a 4.x host does, reads the request and closes.
//! The answer is written as soon as the connection is accepted (12 bytes into an empty socket
//! buffer never block); the request is read before closing, so the close is a FIN, never a
//! reset that could cut the answer short.
//!
//! [`GamePort`] is the non-blocking one for `wz-host`'s mio loop; [`register_answering`] runs a
//! blocking registration for `wz-list`'s setup with the port answered on a scoped thread.

use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Registry, Token};

use lobbyd::wire::wz::{emit_probe_reply, PROBE_REQUEST};

/// How often the blocking answerer looks for the probe.
const ACCEPT_POLL: Duration = Duration::from_millis(1);

/// One host's game port, as the probe moves through it.
#[derive(Debug)]
pub enum GamePort {
    /// Listening for the probe.
    Listening(TcpListener),
    /// The probe connected and has its answer; reading its request until `read` reach 8 bytes
    /// or it closes.
    Answering {
        /// The probe's connection.
        stream: TcpStream,
        /// Request bytes read so far.
        read: usize,
    },
    /// Answered and closed.
    Done,
}

impl GamePort {
    /// A game port on `source`, registered under `token`; its port number is the one to
    /// announce.
    pub fn open(source: IpAddr, registry: &Registry, token: Token) -> io::Result<(GamePort, u16)> {
        let mut listener = TcpListener::bind(SocketAddr::new(source, 0))?;
        registry.register(&mut listener, token, Interest::READABLE)?;
        let port = listener.local_addr()?.port();
        Ok((GamePort::Listening(listener), port))
    }

    /// The port's socket under `token` is ready: accept the probe and answer for `game_id`,
    /// or read what is left of its request. An error names what went wrong.
    pub fn ready(
        &mut self,
        registry: &Registry,
        token: Token,
        game_id: u32,
    ) -> Result<(), &'static str> {
        if let GamePort::Listening(listener) = self {
            let mut stream = match listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(_) => return Err("probe_accept_failed"),
            };
            // One probe per game: the listener is done (dropping it leaves the poll).
            registry
                .register(&mut stream, token, Interest::READABLE)
                .map_err(|_| "probe_accept_failed")?;
            let answer = emit_probe_reply(game_id);
            if !matches!(stream.write(&answer), Ok(n) if n == answer.len()) {
                return Err("probe_answer_failed");
            }
            *self = GamePort::Answering { stream, read: 0 };
        }
        if let GamePort::Answering { stream, read } = self {
            let mut buf = [0u8; PROBE_REQUEST.len()];
            loop {
                match stream.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        *read += n;
                        if *read >= PROBE_REQUEST.len() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    // The prober hung up first: its verdict is made, nothing to answer.
                    Err(_) => break,
                }
            }
            *self = GamePort::Done;
        }
        Ok(())
    }
}

/// Waits for one probe on `listener` until `done` is set or `wait` passes, and answers it for
/// `game_id`; true if a probe came.
fn answer_blocking(
    listener: &std::net::TcpListener,
    game_id: u32,
    wait: Duration,
    done: &AtomicBool,
) -> io::Result<bool> {
    listener.set_nonblocking(true)?;
    let until = Instant::now() + wait;
    while !done.load(Ordering::Acquire) && Instant::now() < until {
        let mut stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(ACCEPT_POLL);
                continue;
            }
            Err(e) => return Err(e),
        };
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(wait))?;
        stream.write_all(&emit_probe_reply(game_id))?;
        let mut request = [0u8; PROBE_REQUEST.len()];
        let mut read = 0;
        while read < request.len() {
            match stream.read(&mut request[read..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n,
            }
        }
        return Ok(true);
    }
    Ok(false)
}

/// Runs `register(port)`, a blocking registration announcing game port `port`, while a
/// scoped thread answers the probe of `listener` for `game_id`.
pub fn register_answering<T>(
    listener: &std::net::TcpListener,
    game_id: u32,
    wait: Duration,
    register: impl FnOnce() -> io::Result<T>,
) -> io::Result<T> {
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let answerer = scope.spawn(|| answer_blocking(listener, game_id, wait, &done));
        let result = register();
        done.store(true, Ordering::Release);
        // A failed answer shows as the server's 408, which `register` reports.
        let _ = answerer.join();
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lobbyd::wire::wz::{parse_probe_reply, ProbeReply, PROBE_REPLY_LEN};

    /// What lobbyd's prober does: connect, send the request, read the answer.
    fn probe(addr: SocketAddr) -> ProbeReply {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream.write_all(&PROBE_REQUEST).unwrap();
        let mut answer = [0u8; PROBE_REPLY_LEN];
        stream.read_exact(&mut answer).unwrap();
        parse_probe_reply(&answer)
    }

    #[test]
    fn the_game_port_answers_one_probe_with_its_game_id() {
        let mut poll = mio::Poll::new().unwrap();
        let token = Token(7);
        let (mut port, number) =
            GamePort::open(IpAddr::from([127, 0, 0, 1]), poll.registry(), token).unwrap();
        let prober = std::thread::spawn(move || probe(SocketAddr::from(([127, 0, 0, 1], number))));
        let mut events = mio::Events::with_capacity(8);
        let until = Instant::now() + Duration::from_secs(5);
        while !matches!(port, GamePort::Done) && Instant::now() < until {
            poll.poll(&mut events, Some(Duration::from_millis(50)))
                .unwrap();
            if events.iter().any(|e| e.token() == token) {
                port.ready(poll.registry(), token, 4242).unwrap();
            }
        }
        assert!(matches!(port, GamePort::Done), "{port:?}");
        assert!(matches!(
            prober.join().unwrap(),
            ProbeReply::Wzlr { game_id: 4242, .. }
        ));
    }

    #[test]
    fn a_blocking_registration_is_probed_meanwhile() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let got = register_answering(&listener, 99, Duration::from_secs(5), || Ok(probe(addr)));
        assert!(matches!(got.unwrap(), ProbeReply::Wzlr { game_id: 99, .. }));
        // No probe (a server with --wz-check-reachable off): the answerer gives up at once.
        let started = Instant::now();
        register_answering(&listener, 1, Duration::from_secs(30), || Ok(())).unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
