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
use crate::net::io::buffers::PartialFrame;
use crate::net::io::pass::AcceptBacklog;
use crate::net::io::stream::{tune_listener, Linger};
use crate::net::token::Target;
use crate::wire::general::{next_frame, Next as GeneralNext, HEADER_LEN};
use crate::wire::websocket::frame::{
    apply_mask, close_code, next_client_frame, Next, OpCode, MAX_CONTROL_PAYLOAD,
};
use crate::wire::websocket::handshake::{
    emit_file_head, emit_refusal, emit_switching, parse_request, route, Parsed, Refusal, Route,
};

use super::outbound::{Conn, Outbound};
use super::stats::{GeneralDriverStats, WsStats};
use super::web::{Lookup, WebFiles};

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
    /// Just upgraded: no message begun.
    pub(super) fn upgraded() -> Transport {
        Transport::WebSocket {
            message: PartialFrame::default(),
            in_message: false,
        }
    }

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
    pub(super) fn answer(&mut self, head: &[u8]) -> Option<(Vec<u8>, Option<usize>)> {
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

/// What one client frame came to, for the driver's reader (`ws_step`).
pub(super) enum Step {
    /// The frame is handled: drain `consumed` bytes.
    Took(usize),
    /// Not a whole frame yet.
    NeedMore,
    /// The connection stopped reading (closed, or closing).
    Stop,
}

/// What a frame asks of the driver once the bytes' borrow is over ([`next_outcome`]).
pub(super) enum Outcome {
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
pub(super) fn next_outcome(
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
