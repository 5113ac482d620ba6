//! The metrics endpoint's sockets: a listener and short-lived HTTP connections.
//!
//! `GET /healthz` answers `200 ok` while the loop serves and `503 shutting down` once it
//! began shutting down (the endpoint is served through the shutdown wait). One request per
//! connection: read the head into a buffer capped at
//! [`metrics::MAX_REQUEST_LEN`], answer, close once written. At most [`MAX_CONNS`] are open,
//! so a scraper storm cannot grow memory, and none may hold its place: each connection has
//! [`CONN_DEADLINE`] from its accept to send its request and take the answer, and at the cap
//! the oldest connection still sending its request is closed for a newcomer (64
//! connections that never finished a request held the endpoint shut for good); when every
//! connection is being answered the newcomer is closed at once. Pages are rendered by
//! [`crate::metrics`] from a snapshot taken for that request only (names of parties and
//! members only for the status page, `GET /`); nothing here blocks the loop.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Registry};
use slab::Slab;

use crate::metrics::{self, HttpError, Route, Snapshot};

use super::token::Target;

/// Most metrics connections open at once.
pub const MAX_CONNS: usize = 64;
/// How long a connection has, from its accept, to send its request and take the answer.
pub const CONN_DEADLINE: Duration = Duration::from_secs(5);

/// One HTTP connection.
#[derive(Debug)]
struct HttpConn {
    stream: TcpStream,
    request: Vec<u8>,
    response: Vec<u8>,
    written: usize,
    /// Closed at this time, whatever it is doing.
    deadline: Instant,
    /// Queued for removal after the event batch.
    closed: bool,
}

/// The endpoint: listener plus connections.
#[derive(Debug)]
pub struct MetricsEndpoint {
    listener: TcpListener,
    conns: Slab<HttpConn>,
    /// Connections to remove after the event batch.
    closing: Vec<usize>,
    /// The loop is shutting down: `/healthz` answers 503.
    shutting_down: bool,
}

impl MetricsEndpoint {
    /// Wraps a bound listener and registers it.
    pub fn new(mut listener: TcpListener, registry: &Registry) -> io::Result<MetricsEndpoint> {
        registry.register(
            &mut listener,
            Target::MetricsListener.token(),
            Interest::READABLE,
        )?;
        Ok(MetricsEndpoint {
            listener,
            conns: Slab::new(),
            closing: Vec::new(),
            shutting_down: false,
        })
    }

    /// The loop began shutting down: from now on `/healthz` answers 503 (the endpoint is
    /// still served while the front ends flush their goodbyes).
    pub fn begin_shutdown(&mut self) {
        self.shutting_down = true;
    }

    /// Accepts every pending connection.
    pub fn accept(&mut self, registry: &Registry, now: Instant) {
        loop {
            match self.listener.accept() {
                Ok((mut stream, _)) => {
                    // Closed connections leave the slab after the batch; they no longer count.
                    if self.conns.len() - self.closing.len() >= MAX_CONNS
                        && !self.evict_oldest_reader()
                    {
                        continue; // dropped: closed at once
                    }
                    let entry = self.conns.vacant_entry();
                    let token = Target::MetricsConn(entry.key()).token();
                    if registry
                        .register(&mut stream, token, Interest::READABLE)
                        .is_ok()
                    {
                        entry.insert(HttpConn {
                            stream,
                            request: Vec::new(),
                            response: Vec::new(),
                            written: 0,
                            deadline: now + CONN_DEADLINE,
                            closed: false,
                        });
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    log::debug!("metrics accept: {e}");
                    return;
                }
            }
        }
    }

    /// Closes the oldest connection still sending its request, to make room for a newcomer;
    /// false when every connection is being answered.
    fn evict_oldest_reader(&mut self) -> bool {
        let oldest = self
            .conns
            .iter()
            .filter(|(_, c)| !c.closed && c.response.is_empty())
            .min_by_key(|(_, c)| c.deadline)
            .map(|(key, _)| key);
        match oldest {
            Some(key) => {
                self.close(key);
                true
            }
            None => false,
        }
    }

    /// Queues connection `key` for removal after the event batch (once).
    fn close(&mut self, key: usize) {
        if let Some(conn) = self.conns.get_mut(key) {
            if !conn.closed {
                conn.closed = true;
                self.closing.push(key);
            }
        }
    }

    /// Closes every connection past its deadline.
    pub fn expire(&mut self, now: Instant) {
        let late: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| !c.closed && c.deadline <= now)
            .map(|(key, _)| key)
            .collect();
        for key in late {
            self.close(key);
        }
    }

    /// The earliest deadline of an open connection.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.conns
            .iter()
            .filter(|(_, c)| !c.closed)
            .map(|(_, c)| c.deadline)
            .min()
    }

    /// Reads a request, answers it with pages rendered from `snapshot(rows)` (naming `rows`
    /// parties and members at most), writes it out.
    pub fn ready(
        &mut self,
        key: usize,
        registry: &Registry,
        snapshot: impl FnOnce(usize) -> Snapshot,
    ) {
        let Some(conn) = self.conns.get_mut(key).filter(|c| !c.closed) else {
            return;
        };
        if conn.response.is_empty() {
            let mut buf = [0u8; 1024];
            loop {
                match conn.stream.read(&mut buf) {
                    Ok(0) => {
                        conn.closed = true;
                        self.closing.push(key);
                        return;
                    }
                    Ok(n) => {
                        let room = metrics::MAX_REQUEST_LEN - conn.request.len();
                        conn.request.extend_from_slice(&buf[..n.min(room)]);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => {
                        conn.closed = true;
                        self.closing.push(key);
                        return;
                    }
                }
            }
            let (status, content_type, body) = match metrics::parse_request(&conn.request) {
                Ok(None) => return,
                Ok(Some(Route::Status)) => {
                    let mut body = String::new();
                    metrics::render_status_page(&snapshot(metrics::STATUS_ROWS), &mut body);
                    (200, "text/html; charset=utf-8", body)
                }
                Ok(Some(Route::Metrics)) => {
                    let mut body = String::new();
                    metrics::render_prometheus(&snapshot(0), &mut body);
                    (200, "text/plain; version=0.0.4", body)
                }
                Ok(Some(Route::Rooms)) => {
                    let mut body = String::new();
                    metrics::render_rooms_json(&snapshot(0), &mut body);
                    (200, "application/json", body)
                }
                Ok(Some(Route::WzGames)) => {
                    let mut body = String::new();
                    metrics::render_wz_games_json(&snapshot(0), &mut body);
                    (200, "application/json", body)
                }
                Ok(Some(Route::Health)) if self.shutting_down => {
                    (503, "text/plain", "shutting down\n".into())
                }
                Ok(Some(Route::Health)) => (200, "text/plain", "ok\n".into()),
                Ok(Some(Route::NotFound)) => (404, "text/plain", "not found\n".into()),
                Ok(Some(Route::MethodNotAllowed)) => {
                    (405, "text/plain", "method not allowed\n".into())
                }
                Err(HttpError::TooLarge) => (431, "text/plain", "request too large\n".into()),
                Err(HttpError::Malformed) => (400, "text/plain", "bad request\n".into()),
            };
            metrics::response(status, content_type, &body, &mut conn.response);
            let token = Target::MetricsConn(key).token();
            if registry
                .reregister(&mut conn.stream, token, Interest::WRITABLE)
                .is_err()
            {
                conn.closed = true;
                self.closing.push(key);
                return;
            }
        }
        while conn.written < conn.response.len() {
            match conn.stream.write(&conn.response[conn.written..]) {
                Ok(0) => break,
                Ok(n) => conn.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        conn.closed = true;
        self.closing.push(key);
    }

    /// Removes the connections finished in this event batch.
    pub fn remove_closed(&mut self, registry: &Registry) {
        for key in self.closing.drain(..) {
            if let Some(mut conn) = self.conns.try_remove(key) {
                let _ = registry.deregister(&mut conn.stream);
            }
        }
    }

    /// The listener's bound address.
    pub fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll};

    /// Serves one request on a real loopback socket through the endpoint and returns the
    /// bytes the client got.
    fn exchange(endpoint: &mut MetricsEndpoint, poll: &mut Poll, request: &[u8]) -> String {
        let mut client = std::net::TcpStream::connect(endpoint.local_addr().unwrap()).unwrap();
        client.write_all(request).unwrap();
        client
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let mut events = Events::with_capacity(16);
        let mut reply = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            poll.poll(&mut events, Some(Duration::from_millis(20)))
                .unwrap();
            for event in events.iter() {
                match Target::from_token(event.token()) {
                    Some(Target::MetricsListener) => {
                        endpoint.accept(poll.registry(), Instant::now())
                    }
                    Some(Target::MetricsConn(key)) => {
                        endpoint.ready(key, poll.registry(), |_| Snapshot::default())
                    }
                    _ => {}
                }
            }
            endpoint.remove_closed(poll.registry());
            let mut buf = [0u8; 256];
            match client.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => reply.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
        }
        String::from_utf8(reply).unwrap()
    }

    #[test]
    fn healthz_is_503_once_shutting_down() {
        let mut poll = Poll::new().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut endpoint = MetricsEndpoint::new(listener, poll.registry()).unwrap();
        let ok = exchange(&mut endpoint, &mut poll, b"GET /healthz HTTP/1.1\r\n\r\n");
        assert!(
            ok.starts_with("HTTP/1.1 200 OK\r\n") && ok.ends_with("\r\n\r\nok\n"),
            "{ok}"
        );
        endpoint.begin_shutdown();
        let down = exchange(&mut endpoint, &mut poll, b"GET /healthz HTTP/1.1\r\n\r\n");
        assert_eq!(
            down,
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n\
             Content-Length: 14\r\nConnection: close\r\n\r\nshutting down\n"
        );
        // The other pages are still served while the front ends say goodbye.
        let metrics = exchange(&mut endpoint, &mut poll, b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(metrics.starts_with("HTTP/1.1 200 OK\r\n"), "{metrics}");
    }
}
