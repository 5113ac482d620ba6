//! The metrics endpoint's sockets: a listener and short-lived HTTP connections.
//!
//! `GET /healthz` answers `200 ok` while the loop serves and `503 shutting down` once it
//! began shutting down (the endpoint is served through the shutdown wait and closed as it
//! ends). One request per
//! connection: read the head into a buffer capped at
//! [`metrics::MAX_REQUEST_LEN`], answer, close once written. At most [`MAX_CONNS`] are open,
//! so a scraper storm cannot grow memory, and none may hold its place: each connection has
//! [`CONN_DEADLINE`] from its accept to send its request and take the answer, and at the cap
//! the oldest connection still sending its request is closed for a newcomer (64
//! connections that never finished a request held the endpoint shut for good); when every
//! connection is being answered the newcomer is closed at once. Pages are rendered by
//! [`crate::metrics`] from a snapshot taken for that request only (names of parties and
//! members only for the status page, `GET /`); nothing here blocks the loop.
//!
//! The cost of a connect flood lands on the flooder, as at the other TCP listeners: a
//! newcomer over `--metrics-max-conns-per-ip` open connections or `--metrics-conn-rate` new
//! ones per minute from its address is closed at once, without a word (counted,
//! `metrics_http_refused_total`); the connection evicted at the cap is the oldest one
//! still sending its request from the address holding the most, so a crowd evicts its own
//! before a lone scraper's; and at most [`ACCEPTS_PER_PASS`](crate::net::io::pass::ACCEPTS_PER_PASS)
//! newcomers are taken per pass, the rest after the next poll, so a flood of connections
//! delays the lobbies by one slice, not by all of it. Out of descriptors, the endpoint serves
//! one connection at a time with its spare descriptor (`net::io::pass`).

use std::cmp::Reverse;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Registry};
use slab::Slab;

use crate::metrics::{self, HttpError, Route, Snapshot};

use crate::net::io::admission::{PerIpAdmission, Refused};
use crate::net::io::pass::{work_left, AcceptBacklog, Accepted};
use crate::net::io::stream::ACCEPT_BACKOFF;
use crate::net::token::Target;

/// Most metrics connections open at once.
pub const MAX_CONNS: usize = 64;
/// How long a connection has, from its accept, to send its request and take the answer.
pub const CONN_DEADLINE: Duration = Duration::from_secs(5);

/// Who may open a connection to the endpoint (`--metrics-max-conns-per-ip`,
/// `--metrics-conn-rate`, `--rate-table-size`).
#[derive(Clone, Copy, Debug)]
pub struct MetricsLimits {
    /// Most connections open at once from one address.
    pub max_conns_per_ip: usize,
    /// New connections per minute from one address, in bursts of as many.
    pub conn_rate: u32,
    /// Most addresses the rate limiter tracks.
    pub rate_table_size: usize,
}

/// What the endpoint did with its newcomers (`/metrics`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MetricsEndpointStats {
    /// Connections accepted and served.
    pub accepted: u64,
    /// Closed at once: their address already held `--metrics-max-conns-per-ip`.
    pub refused_per_ip: u64,
    /// Closed at once: their address was over `--metrics-conn-rate`.
    pub refused_conn_rate: u64,
    /// Closed at once: [`MAX_CONNS`] were open and all of them being answered.
    pub refused_full: u64,
    /// Connections still sending their request closed at the cap for a newcomer.
    pub evicted: u64,
    /// `accept` errors (out of descriptors with the spare in use, say).
    pub accept_errors: u64,
}

impl MetricsEndpointStats {
    /// Reports every counter as `(name, reason, value)`.
    pub fn visit(&self, f: &mut dyn FnMut(&'static str, &'static str, u64)) {
        f("metrics_http_accepted_total", "", self.accepted);
        f("metrics_http_refused_total", "per_ip", self.refused_per_ip);
        f(
            "metrics_http_refused_total",
            "conn_rate",
            self.refused_conn_rate,
        );
        f("metrics_http_refused_total", "full", self.refused_full);
        f("metrics_http_evicted_total", "", self.evicted);
        f("metrics_http_accept_errors_total", "", self.accept_errors);
    }
}

/// One HTTP connection.
#[derive(Debug)]
struct HttpConn {
    stream: TcpStream,
    /// The peer's address, as the per-address limits count it.
    ip: IpAddr,
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
    /// This pass's accept budget, the backlog left over, the spare descriptor.
    accepts: AcceptBacklog,
    /// After an accept error: no accepting before this instant.
    retry_at: Option<Instant>,
    /// New connections per minute per address, and open ones (closed ones until they
    /// leave the slab).
    admission: PerIpAdmission,
    stats: MetricsEndpointStats,
}

impl MetricsEndpoint {
    /// Wraps a bound listener and registers it.
    pub fn new(
        mut listener: TcpListener,
        registry: &Registry,
        limits: MetricsLimits,
    ) -> io::Result<MetricsEndpoint> {
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
            accepts: AcceptBacklog::serving_at_limit(),
            retry_at: None,
            admission: PerIpAdmission::new(
                limits.conn_rate,
                limits.max_conns_per_ip,
                limits.rate_table_size,
            ),
            stats: MetricsEndpointStats::default(),
        })
    }

    /// What the endpoint did with its newcomers so far.
    pub fn stats(&self) -> MetricsEndpointStats {
        self.stats
    }

    /// The loop began shutting down: from now on `/healthz` answers 503 (the endpoint is
    /// still served while the front ends flush their goodbyes).
    pub fn begin_shutdown(&mut self) {
        self.shutting_down = true;
    }

    /// Accepts pending connections, at most this pass's budget (the rest after the next
    /// poll: [`MetricsEndpoint::after_events`]).
    pub fn accept(&mut self, registry: &Registry, now: Instant) {
        if self.retry_at.is_some_and(|at| now < at) {
            return;
        }
        self.retry_at = None;
        self.accepts.begin();
        loop {
            match self.accepts.accept(&self.listener) {
                Accepted::Conn(stream, peer) => self.admit(registry, now, stream, peer),
                Accepted::Drained | Accepted::BudgetSpent => return,
                Accepted::Failed(e) => {
                    // Retried after a back-off rather than at once, which would spin the loop
                    // (the listener is edge-triggered: no new event would come).
                    log::debug!("metrics accept: {e}");
                    self.stats.accept_errors += 1;
                    self.retry_at = Some(now + ACCEPT_BACKOFF);
                    return;
                }
            }
        }
    }

    /// Serves a newcomer within the limits; dropping it closes it at once, without a word.
    fn admit(
        &mut self,
        registry: &Registry,
        now: Instant,
        mut stream: TcpStream,
        peer: SocketAddr,
    ) {
        let ip = match self.admission.check(now, peer) {
            Ok(ip) => ip,
            Err(Refused::ConnRate) => {
                self.stats.refused_conn_rate += 1;
                log::debug!("metrics endpoint: {peer} over --metrics-conn-rate, closed");
                return;
            }
            Err(Refused::PerIp) => {
                self.stats.refused_per_ip += 1;
                log::debug!("metrics endpoint: {peer} over --metrics-max-conns-per-ip, closed");
                return;
            }
        };
        // Closed connections leave the slab after the batch; they no longer count.
        if self.conns.len() - self.closing.len() >= MAX_CONNS && !self.evict_a_reader() {
            self.stats.refused_full += 1;
            return;
        }
        let entry = self.conns.vacant_entry();
        let token = Target::MetricsConn(entry.key()).token();
        if let Err(e) = registry.register(&mut stream, token, Interest::READABLE) {
            log::debug!("metrics endpoint: register {peer}: {e}");
            return;
        }
        entry.insert(HttpConn {
            stream,
            ip,
            request: Vec::new(),
            response: Vec::new(),
            written: 0,
            deadline: now + CONN_DEADLINE,
            closed: false,
        });
        self.admission.opened(ip);
        self.stats.accepted += 1;
    }

    /// Closes a connection still sending its request, to make room for a newcomer: the
    /// oldest of the address holding the most connections (a crowd's before a lone
    /// scraper's); false when every connection is being answered.
    fn evict_a_reader(&mut self) -> bool {
        let admission = &self.admission;
        let victim = self
            .conns
            .iter()
            .filter(|(_, c)| !c.closed && c.response.is_empty())
            .max_by_key(|(_, c)| (admission.open_from(c.ip), Reverse(c.deadline)))
            .map(|(key, _)| key);
        match victim {
            Some(key) => {
                self.close(key);
                self.stats.evicted += 1;
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
    fn expire(&mut self, now: Instant) {
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

    /// When the loop must wake for the endpoint next: the earliest deadline of an open
    /// connection, the end of an accept back-off, or now when newcomers were left in the
    /// backlog by this pass's budget.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.conns
            .iter()
            .filter(|(_, c)| !c.closed)
            .map(|(_, c)| c.deadline)
            .chain(self.retry_at)
            .chain(work_left(self.accepts.is_pending()))
            .min()
    }

    /// Once per event batch, after the events: closes the connections past their deadline,
    /// removes the closed ones, and accepts the next slice of a backlog (or after a
    /// back-off).
    pub fn after_events(&mut self, registry: &Registry, now: Instant) {
        self.expire(now);
        if self.remove_closed(registry) > 0 && self.accepts.restore_spare() {
            // Out of descriptors, the spare is what accepting waited for: no need to wait
            // for the back-off's end.
            self.retry_at = self.retry_at.map(|_| now);
        }
        let retry_due = self.retry_at.is_some_and(|at| now >= at);
        if self.accepts.take_pending() || retry_due {
            self.accept(registry, now);
        }
    }

    /// Forgets addresses whose rate buckets are full again and gives back spare capacity.
    pub fn tidy(&mut self, now: Instant) {
        self.admission.tidy(now);
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

    /// Removes the connections finished in this event batch; how many.
    fn remove_closed(&mut self, registry: &Registry) -> usize {
        let mut removed = 0;
        for key in self.closing.drain(..) {
            if let Some(mut conn) = self.conns.try_remove(key) {
                let _ = registry.deregister(&mut conn.stream);
                self.admission.closed(conn.ip);
                removed += 1;
            }
        }
        removed
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
        let limits = MetricsLimits {
            max_conns_per_ip: 8,
            conn_rate: 120,
            rate_table_size: 1024,
        };
        let mut endpoint = MetricsEndpoint::new(listener, poll.registry(), limits).unwrap();
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
