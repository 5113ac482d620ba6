//! The general lobby's WebSocket port (`--lobby-ws-port`; docs/protocols/general-lobby.md,
//! "WebSocket transport"): the same core and the same connection slab as the TCP port, a
//! second way in. One core, two transports: a member on either sees the same frames.
//!
//! A connection accepted here starts in [`Transport::Http`]: its request head is read into
//! the tail of its frame reader, the buffer a TCP connection keeps split frames in (counted against `--lobby-memory-budget`, at most
//! `handshake::MAX_HEAD` plus one read) and judged by `wire::websocket::handshake::route`.
//! An upgrade on `/lobby` answers 101 and opens the connection in the core, which greets it
//! as any other; a plain GET is a file of `--lobby-web` (`web.rs`) or 404; anything else gets
//! its status; those answers close the connection once written. No whole head within
//! `--handshake-timeout` closes it without a word.
//!
//! Upgraded, each client frame is cut and checked by `wire::websocket::frame::next_client_frame`
//! where it lies, in the read buffer or the kept tail, and unmasked there: a binary
//! message in one frame reaches the core without a copy. A fragmented message is gathered in
//! the connection's `message` buffer (counted against the same budget, capped at the frame
//! cap). Every frame the core sends becomes one binary message: a 2- to 10-byte header and
//! the frame, queued together in the connection's capped send queue like a TCP member's, so
//! the slow-reader cap, the memory budget, the per-event frame budget and the fan-out
//! gathering are the TCP port's. What the transport refuses gets a close frame with its code
//! and the connection closes after it; the core is told as for a peer that went away.
//!
//! The reading runs in the driver beside the TCP reader (`general/mod.rs`, whose `serve`
//! hands a WebSocket connection's bytes to `ws_serve`); what a frame asks for is decided here
//! ([`next_outcome`]); the writing (binary messages, pongs, close frames) is the `Outbound`
//! side's (`general/outbound.rs`).

use std::io;
use std::time::{Duration, Instant};

use mio::net::TcpListener;
use mio::{Interest, Registry};

use crate::config::WsSettings;
use crate::general::{ConnId, GeneralLobby};
use crate::net::io::pass::AcceptBacklog;
use crate::net::io::stream::{tune_listener, Linger};
use crate::net::token::Target;
use crate::wire::general::{next_frame, Next as GeneralNext, HEADER_LEN};
use crate::wire::websocket::frame::{
    apply_mask, close_code, next_client_frame, server_close, server_header, Next, OpCode,
    MAX_CONTROL_PAYLOAD,
};
use crate::wire::websocket::handshake::{
    emit_file_head, emit_refusal, emit_switching, parse_request, route, Parsed, Route,
    UpgradeRefusal,
};

use super::outbound::{Conn, Outbound, Transport};
use super::stats::{GeneralDriverStats, WsStats};
use super::web::{Lookup, WebFiles};

/// The path a WebSocket upgrade must ask for.
pub const WS_PATH: &str = "/lobby";

/// The WebSocket port: its listener, its settings and files, and its counters.
pub struct WsPort {
    pub(super) listener: TcpListener,
    pub(super) accepts: AcceptBacklog,
    origins: Vec<String>,
    web: WebFiles,
    /// The deadlines of connections still reading their request head.
    pub(super) upgrades: Linger,
    pub(super) stats: WsStats,
}

impl WsPort {
    /// Serves the WebSocket port on a bound `listener` with `settings`; its files are read
    /// now (before the loop runs), and a request head must be whole within `upgrade_timeout`.
    pub fn new(
        mut listener: TcpListener,
        registry: &Registry,
        settings: &WsSettings,
        upgrade_timeout: Duration,
    ) -> io::Result<WsPort> {
        let web = match &settings.web_dir {
            Some(dir) => WebFiles::load(dir)?,
            None => WebFiles::default(),
        };
        tune_listener(&listener, true);
        registry.register(
            &mut listener,
            Target::GeneralWsListener.token(),
            Interest::READABLE,
        )?;
        Ok(WsPort {
            listener,
            accepts: AcceptBacklog::default(),
            origins: settings.origins.clone(),
            web,
            upgrades: Linger::new(upgrade_timeout),
            stats: WsStats::default(),
        })
    }

    /// A browser page from `origin` may connect (`--lobby-ws-origins`; empty: any).
    fn origin_allowed(&self, origin: &[u8]) -> bool {
        self.origins.is_empty()
            || (self.origins.iter()).any(|allowed| allowed.as_bytes().eq_ignore_ascii_case(origin))
    }

    /// Judges the request head at the front of `head`: `None` while it is incomplete, else
    /// the answer to write and, for an upgrade, the head's length (what follows it is
    /// WebSocket frames). Counts the outcome.
    fn answer(&mut self, head: &[u8]) -> Option<(Vec<u8>, Option<usize>)> {
        let mut out = Vec::new();
        let (request, head_len) = match parse_request(head) {
            Ok(Parsed::Partial) => return None,
            Ok(Parsed::Complete { request, head_len }) => (request, head_len),
            Err(error) => {
                self.stats.bad_head(error);
                emit_refusal(UpgradeRefusal::BadRequest, &mut out);
                return Some((out, None));
            }
        };
        let refusal = match route(&request, WS_PATH, |origin| self.origin_allowed(origin)) {
            Route::Upgrade { accept } => {
                self.stats.upgrades += 1;
                emit_switching(&accept, &mut out);
                return Some((out, Some(head_len)));
            }
            Route::File { path, head_only } => match self.web.get(path) {
                Lookup::Found(file) => {
                    self.stats.files += 1;
                    emit_file_head(file.content_type, file.body.len(), &mut out);
                    if !head_only {
                        out.extend_from_slice(&file.body);
                    }
                    return Some((out, None));
                }
                Lookup::Refused => UpgradeRefusal::BadRequest,
                Lookup::Missing => UpgradeRefusal::NotFound,
            },
            Route::Refuse(refusal) => refusal,
        };
        self.stats.refuse(refusal);
        emit_refusal(refusal, &mut out);
        Some((out, None))
    }
}

/// The WebSocket way in, for one connection's read: the parts of the driver
/// (`general/mod.rs`) it reads with, borrowed.
pub(super) struct WsReader<'a> {
    pub(super) out: &'a mut Outbound,
    pub(super) ws: &'a mut WsPort,
    /// The driver's read buffer, shared by every connection.
    pub(super) read_buf: &'a mut [u8],
    /// The driver's connections with frames left past their budget.
    pub(super) backlog: &'a mut Vec<usize>,
    /// The longest general lobby frame, header included (`--lobby-max-frame`).
    pub(super) frame_cap: usize,
}

impl WsReader<'_> {
    /// Hands `key`'s bytes to its WebSocket port transport, within `budget`: first what is
    /// kept from earlier reads, then `read_buf[..n]` (the request head until the upgrade,
    /// then client frames, unmasked and cut where they lie). The WebSocket counterpart of the
    /// driver's `serve`, keeping its bytes in the same counted tail; false when the
    /// connection stopped reading.
    pub(super) fn serve(
        &mut self,
        registry: &Registry,
        now: Instant,
        key: usize,
        n: usize,
        budget: &mut usize,
    ) -> bool {
        let Some(conn) = self.out.conns.get(key) else {
            return false;
        };
        if matches!(conn.transport, Transport::Http) {
            if !self.keep_tail(now, key, 0, n) {
                return false;
            }
            return self.serve_head(registry, now, key, budget);
        }
        if n == 0 || !conn.input.tail().is_empty() {
            if !self.keep_tail(now, key, 0, n) {
                return false;
            }
            return self.serve_kept(registry, now, key, budget);
        }
        let mut at = 0;
        while at < n {
            if *budget == 0 {
                if self.keep_tail(now, key, at, n) {
                    self.park(key);
                }
                return false;
            }
            match self.step(now, key, Some((at, n))) {
                Step::NeedMore => return self.keep_tail(now, key, at, n),
                Step::Stop => {
                    self.out.carry_out(registry, now);
                    return false;
                }
                Step::Took(consumed) => {
                    at += consumed;
                    *budget -= 1;
                    self.out.carry_out(registry, now);
                    if !self.out.conns.get(key).is_some_and(|c| c.stream.is_open()) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Serves whole frames waiting in an upgraded connection's kept bytes, within `budget`;
    /// false when the connection stopped reading.
    fn serve_kept(
        &mut self,
        registry: &Registry,
        now: Instant,
        key: usize,
        budget: &mut usize,
    ) -> bool {
        loop {
            let Some(conn) = self.out.conns.get_mut(key).filter(|c| c.stream.is_open()) else {
                return false;
            };
            if conn.input.tail().is_empty() || !conn.transport.is_websocket() {
                conn.backlogged = false;
                return true;
            }
            if *budget == 0 {
                self.park(key);
                return false;
            }
            match self.step(now, key, None) {
                Step::NeedMore => {
                    if let Some(conn) = self.out.conns.get_mut(key) {
                        conn.backlogged = false;
                    }
                    return true;
                }
                Step::Stop => {
                    self.out.carry_out(registry, now);
                    return false;
                }
                Step::Took(consumed) => {
                    *budget -= 1;
                    if let Some(conn) = self.out.conns.get_mut(key) {
                        conn.input
                            .tail_mut()
                            .consume(consumed, &mut self.out.budget);
                    }
                    self.out.carry_out(registry, now);
                }
            }
        }
    }

    /// Appends `read_buf[from..to]` to `key`'s kept bytes, dropping the connections that
    /// hold the most while `--lobby-memory-budget` has no room for it; false when `key`
    /// itself was dropped (it held the most).
    fn keep_tail(&mut self, now: Instant, key: usize, from: usize, to: usize) -> bool {
        loop {
            let Some(conn) = self.out.conns.get_mut(key) else {
                return false;
            };
            let bytes = &self.read_buf[from..to];
            if conn.input.tail_mut().extend(bytes, &mut self.out.budget) {
                return true;
            }
            if self.out.shed(now, key) == key {
                return false;
            }
        }
    }

    /// Answers the request head in `key`'s kept bytes once it is whole: an upgrade opens
    /// the connection in the core (and serves any frames that came behind the head), any
    /// other answer closes it once written.
    fn serve_head(
        &mut self,
        registry: &Registry,
        now: Instant,
        key: usize,
        budget: &mut usize,
    ) -> bool {
        let (Some(conn), Some(ws)) = (self.out.conns.get_mut(key), Some(&mut *self.ws)) else {
            return false;
        };
        let Some((response, upgrade)) = ws.answer(conn.input.tail().bytes()) else {
            return true;
        };
        let ip = conn.ip;
        match upgrade {
            Some(head_len) => {
                (conn.input.tail_mut()).consume(head_len, &mut self.out.budget);
                conn.transport = Transport::upgraded();
                if !self.out.queue_local(now, key, &[&response]) {
                    return false;
                }
                let id = self.out.id(key);
                self.out.core.handle_open_from(now, id, ip);
                self.out.carry_out(registry, now);
                self.serve_kept(registry, now, key, budget)
            }
            None => {
                conn.input.clear(&mut self.out.budget);
                if self.out.queue_local(now, key, &[&response]) {
                    self.out.finish(now, key);
                }
                false
            }
        }
    }

    /// Cuts, checks and handles one client frame of `key`, from `read_buf[from..to]` or
    /// (`None`) from its kept bytes.
    fn step(&mut self, now: Instant, key: usize, source: Option<(usize, usize)>) -> Step {
        let ws = &mut *self.ws;
        let frame_cap = self.frame_cap;
        loop {
            let outcome = next_outcome(
                self.out,
                &mut ws.stats,
                self.read_buf,
                now,
                key,
                source,
                frame_cap,
            );
            let id = self.out.id(key);
            return match outcome {
                Outcome::Took(consumed) => Step::Took(consumed),
                Outcome::NeedMore => Step::NeedMore,
                Outcome::NeedRoom => {
                    if self.out.shed(now, key) == key {
                        return Step::Stop;
                    }
                    continue;
                }
                Outcome::Pong(payload, len, consumed) => {
                    ws.stats.pings += 1;
                    let (head, n) = server_header(OpCode::Pong, len);
                    if !self
                        .out
                        .queue_local(now, key, &[&head[..n], &payload[..len]])
                    {
                        return Step::Stop;
                    }
                    Step::Took(consumed)
                }
                Outcome::PeerClose(code) => {
                    ws.stats.peer_closes += 1;
                    // Echo the peer's code (section 5.5.1); a close without one gets none.
                    let echo = server_close(code);
                    let reply: &[u8] = if code == 1005 { &[0x88, 0x00] } else { &echo };
                    if self.out.queue_local(now, key, &[reply]) {
                        self.out.core.handle_closed(now, id);
                        self.out.finish(now, key);
                    }
                    Step::Stop
                }
                Outcome::Refuse(code) => {
                    if self.out.queue_local(now, key, &[&server_close(code)]) {
                        self.out.core.handle_closed(now, id);
                        self.out.finish(now, key);
                    }
                    Step::Stop
                }
            };
        }
    }

    /// Marks `key` as having whole frames left for after this batch.
    fn park(&mut self, key: usize) {
        if self.out.mark_backlogged(key) {
            self.backlog.push(key);
        }
    }
}

/// What one client frame came to, for the driver's reader (`ws_step`).
enum Step {
    /// The frame is handled: drain `consumed` bytes.
    Took(usize),
    /// Not a whole frame yet.
    NeedMore,
    /// The connection stopped reading (closed, or closing).
    Stop,
}

/// What a frame asks of the driver once the bytes' borrow is over ([`next_outcome`]).
enum Outcome {
    Took(usize),
    NeedMore,
    Pong([u8; MAX_CONTROL_PAYLOAD], usize, usize),
    PeerClose(u16),
    Refuse(u16),
    /// The fragment did not fit the budget; the frame was masked again to be read anew.
    NeedRoom,
}

/// Hands a binary message to the core when it is exactly one general lobby frame (an
/// over-long declared length is the core's ERROR 11, as on TCP); false when it is not.
fn deliver(
    core: &mut GeneralLobby,
    stats: &mut GeneralDriverStats,
    now: Instant,
    id: ConnId,
    payload: &[u8],
    max_frame: usize,
) -> bool {
    match next_frame(payload, max_frame) {
        GeneralNext::Frame { frame, consumed } if consumed == payload.len() => {
            stats.frames_in += 1;
            core.handle_frame(now, id, &frame);
            true
        }
        GeneralNext::Oversized { code, .. } => {
            core.handle_oversized(now, id, code);
            true
        }
        _ => false,
    }
}

/// Cuts and checks one client frame of `key`, from `read_buf[from..to]` or (`None`) from
/// its kept bytes, unmasking it where it lies, and hands a whole binary message to the core:
/// what the frame asks of the driver (the driver's `ws_step` carries it out).
fn next_outcome(
    out: &mut Outbound,
    stats: &mut WsStats,
    read_buf: &mut [u8],
    now: Instant,
    key: usize,
    source: Option<(usize, usize)>,
    cap: usize,
) -> Outcome {
    let id = out.id(key);
    let Some(conn) = out.conns.get_mut(key) else {
        return Outcome::NeedMore;
    };
    let Conn {
        transport, input, ..
    } = conn;
    let Transport::WebSocket {
        message,
        in_message,
    } = transport
    else {
        return Outcome::NeedMore;
    };
    let bytes: &mut [u8] = match source {
        Some((from, to)) => &mut read_buf[from..to],
        None => input.tail_mut().bytes_mut(),
    };
    let room = cap.saturating_sub(message.bytes().len());
    let (header, payload, consumed) = match next_client_frame(bytes, *in_message, room) {
        Next::NeedMore => return Outcome::NeedMore,
        Next::Refuse(violation) => {
            stats.violation(violation);
            return Outcome::Refuse(violation.close_code());
        }
        Next::Frame {
            header,
            payload,
            consumed,
        } => (header, payload, consumed),
    };
    let max_frame = cap - HEADER_LEN;
    match header.opcode {
        OpCode::Binary if header.fin => {
            if deliver(&mut out.core, &mut out.stats, now, id, payload, max_frame) {
                Outcome::Took(consumed)
            } else {
                not_one_frame(stats)
            }
        }
        OpCode::Binary | OpCode::Continuation => {
            let len = payload.len();
            if !message.extend(payload, &mut out.budget) {
                // Served again once there is room: it must read as it came.
                if let Some(mask) = header.mask {
                    apply_mask(&mut bytes[consumed - len..consumed], mask);
                }
                return Outcome::NeedRoom;
            }
            *in_message = true;
            if !header.fin {
                return Outcome::Took(consumed);
            }
            *in_message = false;
            let whole = deliver(
                &mut out.core,
                &mut out.stats,
                now,
                id,
                message.bytes(),
                max_frame,
            );
            message.clear(&mut out.budget);
            if whole {
                Outcome::Took(consumed)
            } else {
                not_one_frame(stats)
            }
        }
        OpCode::Ping => {
            let mut pong = [0u8; MAX_CONTROL_PAYLOAD];
            pong[..payload.len()].copy_from_slice(payload);
            Outcome::Pong(pong, payload.len(), consumed)
        }
        OpCode::Close => Outcome::PeerClose(close_code(payload)),
        // Pongs are not asked for; text and reserved opcodes were refused above.
        _ => Outcome::Took(consumed),
    }
}

/// A binary message that is not exactly one general lobby frame: counted, and closed with
/// 1007.
fn not_one_frame(stats: &mut WsStats) -> Outcome {
    stats.not_one_frame += 1;
    Outcome::Refuse(crate::wire::websocket::close::INVALID_PAYLOAD)
}
