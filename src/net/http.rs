//! The metrics endpoint's sockets: a listener and short-lived HTTP connections.
//!
//! One request per connection: read the head into a buffer capped at
//! [`metrics::MAX_REQUEST_LEN`], answer, close once written. At most [`MAX_CONNS`] are open;
//! more are accepted and closed at once, so a scraper storm cannot grow memory. Pages are
//! rendered by [`crate::metrics`] from a snapshot taken for that request only (names of
//! parties and members only for the status page, `GET /`); nothing here blocks the loop.

use std::io::{self, Read, Write};

use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Registry};
use slab::Slab;

use crate::metrics::{self, HttpError, Route, Snapshot};

use super::token::Target;

/// Most metrics connections open at once.
pub const MAX_CONNS: usize = 64;

/// One HTTP connection.
#[derive(Debug)]
struct HttpConn {
    stream: TcpStream,
    request: Vec<u8>,
    response: Vec<u8>,
    written: usize,
}

/// The endpoint: listener plus connections.
#[derive(Debug)]
pub struct MetricsEndpoint {
    listener: TcpListener,
    conns: Slab<HttpConn>,
    /// Connections to remove after the event batch.
    closing: Vec<usize>,
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
        })
    }

    /// Accepts every pending connection.
    pub fn accept(&mut self, registry: &Registry) {
        loop {
            match self.listener.accept() {
                Ok((mut stream, _)) => {
                    if self.conns.len() >= MAX_CONNS {
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

    /// Reads a request, answers it with pages rendered from `snapshot(rows)` (naming `rows`
    /// parties and members at most), writes it out.
    pub fn ready(
        &mut self,
        key: usize,
        registry: &Registry,
        snapshot: impl FnOnce(usize) -> Snapshot,
    ) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        if conn.response.is_empty() {
            let mut buf = [0u8; 1024];
            loop {
                match conn.stream.read(&mut buf) {
                    Ok(0) => {
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
