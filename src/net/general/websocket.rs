//! The general lobby's WebSocket port (`--lobby-ws-port`; docs/protocols/general-lobby.md,
//! "WebSocket transport"): the same core and the same connection slab as the TCP port, a
//! second way in. One core, two transports: a member on either sees the same frames.
//!
//! A connection accepted here starts in [`Transport::Http`]: its request head is read into
//! its partial buffer (counted against `--lobby-memory-budget`, at most
//! `handshake::MAX_HEAD` plus one read) and judged by `wire::websocket::handshake::route`.
//! An upgrade on `/lobby` answers 101 and opens the connection in the core, which greets it
//! as any other; a plain GET is a file of `--lobby-web` (`web.rs`) or 404; anything else gets
//! its status; those answers close the connection once written. No whole head within
//! `--handshake-timeout` closes it without a word.
//!
//! Upgraded, each client frame is cut and checked by `wire::websocket::frame::next_client_frame`
//! where it lies, in the read buffer or the partial buffer, and unmasked there: a binary
//! message in one frame reaches the core without a copy. A fragmented message is gathered in
//! the connection's `message` buffer (counted against the same budget, capped at the frame
//! cap). Every frame the core sends becomes one binary message: a 2- to 10-byte header and
//! the frame, queued together in the connection's capped send queue like a TCP member's, so
//! the slow-reader cap, the memory budget, the per-event frame budget and the fan-out
//! gathering are the TCP port's. What the transport refuses gets a close frame with its code
//! and the connection closes after it; the core is told as for a peer that went away.

use std::io;
use std::time::{Duration, Instant};

use mio::net::TcpListener;
use mio::{Interest, Registry};

use crate::config::WsSettings;
use crate::general::{ConnId, GeneralLobby};
use crate::net::io::buffers::{PartialFrame, QueueFull};
use crate::net::io::pass::AcceptBacklog;
use crate::net::io::stream::{tune_listener, Linger};
use crate::net::token::Target;
use crate::wire::general::{next_frame, Next as GeneralNext, HEADER_LEN};
use crate::wire::websocket::frame::{
    apply_mask, close_code, next_client_frame, server_close, server_header, Next, OpCode,
    MAX_CONTROL_PAYLOAD,
};
use crate::wire::websocket::handshake::{
    emit_file_head, emit_refusal, emit_switching, parse_request, route, Parsed, Refusal, Route,
};

use super::stats::{GeneralDriverStats, WsStats};
use super::web::{Lookup, WebFiles};
use super::{GeneralDriver, SEND_QUEUE_CAP};

/// The path a WebSocket upgrade must ask for.
pub const WS_PATH: &str = "/lobby";

/// What a general lobby connection speaks.
#[derive(Debug)]
pub(super) enum Transport {
    /// The TCP port: frames on the stream.
    Tcp,
    /// The WebSocket port, before the upgrade: an HTTP request head is being read.
    Http,
    /// The WebSocket port, upgraded.
    WebSocket {
        /// A fragmented binary message gathered so far (at most the frame cap).
        message: PartialFrame,
        /// A fragmented message has begun: its continuations are expected.
        in_message: bool,
    },
}

impl Transport {
    /// An upgraded WebSocket connection.
    pub(super) fn is_websocket(&self) -> bool {
        matches!(self, Transport::WebSocket { .. })
    }
}

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
                emit_refusal(Refusal::BadRequest, &mut out);
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
                Lookup::Refused => Refusal::BadRequest,
                Lookup::Missing => Refusal::NotFound,
            },
            Route::Refuse(refusal) => refusal,
        };
        self.stats.refuse(refusal);
        emit_refusal(refusal, &mut out);
        Some((out, None))
    }
}

/// What one client frame came to, for the caller to finish with the whole driver at hand.
enum Step {
    /// The frame is handled: drain `consumed` bytes.
    Took(usize),
    /// Not a whole frame yet.
    NeedMore,
    /// The connection stopped reading (closed, or closing).
    Stop,
}

/// What a frame asks of the driver once the bytes' borrow is over.
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

impl GeneralDriver {
    /// Hands the first `n` bytes of the read buffer to `key`'s transport (a TCP
    /// connection's are cut by `take_bytes`). False when the connection stopped reading.
    pub(super) fn ws_take_bytes(
        &mut self,
        registry: &Registry,
        now: Instant,
        key: usize,
        n: usize,
        budget: &mut usize,
    ) -> bool {
        let Some(conn) = self.conns.get(key) else {
            return false;
        };
        if matches!(conn.transport, Transport::Http) {
            if !self.keep_partial(now, key, 0, n) {
                return false;
            }
            return self.serve_head(registry, now, key, budget);
        }
        if !conn.partial.is_empty() {
            if !self.keep_partial(now, key, 0, n) {
                return false;
            }
            return self.ws_serve_partial(registry, now, key, budget);
        }
        let mut at = 0;
        while at < n {
            if *budget == 0 {
                if self.keep_partial(now, key, at, n) {
                    self.park(key);
                }
                return false;
            }
            match self.ws_step(now, key, Some((at, n))) {
                Step::NeedMore => return self.keep_partial(now, key, at, n),
                Step::Stop => {
                    self.carry_out(registry, now);
                    return false;
                }
                Step::Took(consumed) => {
                    at += consumed;
                    *budget -= 1;
                    self.carry_out(registry, now);
                    if !self.conns.get(key).is_some_and(|c| c.stream.is_open()) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Serves whole frames waiting in an upgraded connection's partial buffer, within
    /// `budget`; false when the connection stopped reading.
    pub(super) fn ws_serve_partial(
        &mut self,
        registry: &Registry,
        now: Instant,
        key: usize,
        budget: &mut usize,
    ) -> bool {
        loop {
            let Some(conn) = self.conns.get_mut(key).filter(|c| c.stream.is_open()) else {
                return false;
            };
            if conn.partial.is_empty() || !conn.transport.is_websocket() {
                conn.backlogged = false;
                return true;
            }
            if *budget == 0 {
                self.park(key);
                return false;
            }
            match self.ws_step(now, key, None) {
                Step::NeedMore => {
                    if let Some(conn) = self.conns.get_mut(key) {
                        conn.backlogged = false;
                    }
                    return true;
                }
                Step::Stop => {
                    self.carry_out(registry, now);
                    return false;
                }
                Step::Took(consumed) => {
                    *budget -= 1;
                    if let Some(conn) = self.conns.get_mut(key) {
                        conn.partial.consume(consumed, &mut self.budget);
                    }
                    self.carry_out(registry, now);
                }
            }
        }
    }

    /// Answers the request head in `key`'s partial buffer once it is whole: an upgrade opens
    /// the connection in the core (and serves any frames that came behind the head), any
    /// other answer closes it once written.
    fn serve_head(
        &mut self,
        registry: &Registry,
        now: Instant,
        key: usize,
        budget: &mut usize,
    ) -> bool {
        let (Some(conn), Some(ws)) = (self.conns.get_mut(key), self.ws.as_mut()) else {
            return false;
        };
        let Some((response, upgrade)) = ws.answer(conn.partial.bytes()) else {
            return true;
        };
        let ip = conn.ip;
        match upgrade {
            Some(head_len) => {
                conn.partial.consume(head_len, &mut self.budget);
                conn.transport = Transport::WebSocket {
                    message: PartialFrame::default(),
                    in_message: false,
                };
                if !self.queue_local(now, key, &[&response]) {
                    return false;
                }
                let id = self.id(key);
                self.core.handle_open_from(now, id, ip);
                self.carry_out(registry, now);
                self.ws_serve_partial(registry, now, key, budget)
            }
            None => {
                conn.partial.clear(&mut self.budget);
                if self.queue_local(now, key, &[&response]) {
                    self.finish(now, key);
                }
                false
            }
        }
    }

    /// Cuts, checks and handles one client frame of `key`, from `read_buf[from..to]` or
    /// (`None`) from its partial buffer.
    fn ws_step(&mut self, now: Instant, key: usize, source: Option<(usize, usize)>) -> Step {
        loop {
            let outcome = self.ws_frame(now, key, source);
            let id = self.id(key);
            return match outcome {
                Outcome::Took(consumed) => Step::Took(consumed),
                Outcome::NeedMore => Step::NeedMore,
                Outcome::NeedRoom => {
                    if self.shed(now, key) == key {
                        return Step::Stop;
                    }
                    continue;
                }
                Outcome::Pong(payload, len, consumed) => {
                    if let Some(ws) = self.ws.as_mut() {
                        ws.stats.pings += 1;
                    }
                    let (head, n) = server_header(OpCode::Pong, len);
                    if !self.queue_local(now, key, &[&head[..n], &payload[..len]]) {
                        return Step::Stop;
                    }
                    Step::Took(consumed)
                }
                Outcome::PeerClose(code) => {
                    if let Some(ws) = self.ws.as_mut() {
                        ws.stats.peer_closes += 1;
                    }
                    // Echo the peer's code (section 5.5.1); a close without one gets none.
                    let echo = server_close(code);
                    let reply: &[u8] = if code == 1005 { &[0x88, 0x00] } else { &echo };
                    if self.queue_local(now, key, &[reply]) {
                        self.core.handle_closed(now, id);
                        self.finish(now, key);
                    }
                    Step::Stop
                }
                Outcome::Refuse(code) => {
                    if self.queue_local(now, key, &[&server_close(code)]) {
                        self.core.handle_closed(now, id);
                        self.finish(now, key);
                    }
                    Step::Stop
                }
            };
        }
    }

    /// The part of [`Self::ws_step`] that holds the bytes: decides what the frame asks for.
    fn ws_frame(&mut self, now: Instant, key: usize, source: Option<(usize, usize)>) -> Outcome {
        let id = self.id(key);
        let cap = self.frame_cap;
        let Some(conn) = self.conns.get_mut(key) else {
            return Outcome::NeedMore;
        };
        let super::Conn {
            transport, partial, ..
        } = conn;
        let Transport::WebSocket {
            message,
            in_message,
        } = transport
        else {
            return Outcome::NeedMore;
        };
        let bytes: &mut [u8] = match source {
            Some((from, to)) => &mut self.read_buf[from..to],
            None => partial.bytes_mut(),
        };
        let room = cap.saturating_sub(message.bytes().len());
        let (header, payload, consumed) = match next_client_frame(bytes, *in_message, room) {
            Next::NeedMore => return Outcome::NeedMore,
            Next::Refuse(violation) => {
                if let Some(ws) = self.ws.as_mut() {
                    ws.stats.violation(violation);
                }
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
                if deliver(&mut self.core, &mut self.stats, now, id, payload, max_frame) {
                    Outcome::Took(consumed)
                } else {
                    self.not_one_frame()
                }
            }
            OpCode::Binary | OpCode::Continuation => {
                let len = payload.len();
                if !message.extend(payload, &mut self.budget) {
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
                    &mut self.core,
                    &mut self.stats,
                    now,
                    id,
                    message.bytes(),
                    max_frame,
                );
                message.clear(&mut self.budget);
                if whole {
                    Outcome::Took(consumed)
                } else {
                    self.not_one_frame()
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

    fn not_one_frame(&mut self) -> Outcome {
        if let Some(ws) = self.ws.as_mut() {
            ws.stats.not_one_frame += 1;
        }
        Outcome::Refuse(crate::wire::websocket::close::INVALID_PAYLOAD)
    }

    /// Queues bytes of the driver's own (an HTTP answer, a pong, a close frame) for `key`,
    /// all or none, within the memory budget and the slow-reader cap; false when `key` was
    /// dropped instead.
    pub(super) fn queue_local(&mut self, now: Instant, key: usize, parts: &[&[u8]]) -> bool {
        loop {
            let Some(conn) = self.conns.get_mut(key) else {
                return false;
            };
            match conn
                .stream
                .queue_parts(parts, SEND_QUEUE_CAP, &mut self.budget)
            {
                Ok(()) => {
                    self.mark_dirty(key);
                    return true;
                }
                Err(QueueFull::Budget) => {
                    if self.shed(now, key) == key {
                        return false;
                    }
                }
                Err(QueueFull::Cap) => {
                    self.stats.slow_readers += 1;
                    self.close(now, key);
                    return false;
                }
                Err(QueueFull::Closed) => return false,
            }
        }
    }

    /// Stops reading `key` and closes it once what is queued is written (within
    /// [`super::LINGER`]); its buffers go now.
    pub(super) fn finish(&mut self, now: Instant, key: usize) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        if conn.stream.start_draining() {
            self.lingering.start(now, key, conn.stream.serial());
        }
        conn.partial.clear(&mut self.budget);
        if let Transport::WebSocket { message, .. } = &mut conn.transport {
            message.clear(&mut self.budget);
        }
        self.mark_dirty(key);
    }

    /// Closes the connections whose request head did not come whole in time.
    pub(super) fn expire_upgrades(&mut self, now: Instant) {
        while let Some((key, serial)) = self.ws.as_mut().and_then(|ws| ws.upgrades.expired(now)) {
            let waiting = self.conns.get(key).is_some_and(|c| {
                c.stream.serial() == serial
                    && c.stream.is_open()
                    && matches!(c.transport, Transport::Http)
            });
            if waiting {
                if let Some(ws) = self.ws.as_mut() {
                    ws.stats.upgrade_timeouts += 1;
                }
                self.close(now, key);
            }
        }
    }

    /// Queues the core's `frames` (a run of whole frames) for the upgraded connection `key`,
    /// each as one binary message, within the budget (the connection holding the most is
    /// dropped while it has no room: `key` itself when it is that one).
    pub(super) fn queue_ws_frames(
        &mut self,
        now: Instant,
        key: usize,
        frames: crate::general::FrameRef,
    ) -> Result<(), QueueFull> {
        let mut at = 0;
        loop {
            let Some(c) = self.conns.get_mut(key) else {
                return Err(QueueFull::Closed);
            };
            let run = self.core.frame(frames);
            let Some(rest) = run.get(at..).filter(|rest| !rest.is_empty()) else {
                return Ok(());
            };
            let len = match next_frame(rest, usize::MAX) {
                GeneralNext::Frame { consumed, .. } => consumed,
                // The core's runs are whole frames; anything else goes as it is.
                _ => rest.len(),
            };
            let (head, n) = server_header(OpCode::Binary, len);
            match c.stream.queue_parts(
                &[&head[..n], &rest[..len]],
                SEND_QUEUE_CAP,
                &mut self.budget,
            ) {
                Ok(()) => at += len,
                Err(QueueFull::Budget) => {
                    if self.shed(now, key) == key {
                        return Err(QueueFull::Budget);
                    }
                }
                Err(other) => return Err(other),
            }
        }
    }

    /// WebSocket connections upgraded, and of them those carrying a member.
    pub(super) fn ws_counts(&self) -> (usize, usize) {
        let mut open = 0;
        let mut members = 0;
        for (key, conn) in &self.conns {
            if conn.transport.is_websocket() && conn.stream.is_open() {
                open += 1;
                members += usize::from(self.core.is_member_conn(self.id(key)));
            }
        }
        (open, members)
    }
}
