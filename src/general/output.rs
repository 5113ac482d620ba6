//! Where the general lobby core's effects go: the output queue, the byte arena every outgoing
//! frame is encoded into once, the routes from present members to their connections, and the
//! [`Ctx`] each handler gets (clock, settings, outputs, timers, counters).
//!
//! Contract (docs/protocols/general-lobby.md, "Output and back-pressure"):
//! - a frame is encoded once, however many members receive it: a chat line to 1,000 members is
//!   one encode and 1,000 [`GeneralOutput::Send`] records naming the same [`FrameRef`], each
//!   marked [`Delivery::FanOut`] (the driver may gather those into fewer writes; a frame for
//!   one connection alone is [`Delivery::Direct`]);
//! - a [`FrameRef`] stays valid until the next `handle_*` call; at the start of each call, once
//!   the driver has drained the queue, the arena is emptied and, after a spike, both the arena
//!   and the queue give their memory back (down to [`ARENA_KEEP`] bytes and [`QUEUE_KEEP`]
//!   records);
//! - frames for a member who is away (no connection) are dropped: a resume resyncs the state.
//!
//! This module must not decide who receives what; the handlers do.

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use crate::time::TimerWheel;
use crate::wire::general::{ErrorCode, ServerRepr};

use super::stats::GeneralStats;
use super::types::{ConnId, GeneralConfig, GeneralRefusal, JobId, MemberId, Timer};

/// Arena bytes kept across calls; a spike above it is given back once drained.
pub const ARENA_KEEP: usize = 256 * 1024;

/// Output records kept across calls; a spike above it is given back once drained.
pub const QUEUE_KEEP: usize = 4096;

/// Bytes the arena and the queue each keep through the periodic tidy
/// ([`Outbox::release_spare`]). A quiet lobby's calls (a PONG, a reply, a chat line to a few
/// dozen members, a small lobby's sync) fit in that, so they reuse the same two buffers
/// instead of allocating both afresh on the first call after every tidy; two 4 KiB buffers
/// are nothing beside the process's 2 MB, while a burst's (up to [`ARENA_KEEP`] bytes and
/// [`QUEUE_KEEP`] records, about half a megabyte together) is cut back so that the heap trim
/// after the tidy can return its pages.
pub(crate) const IDLE_KEEP_BYTES: usize = 4 * 1024;

/// A run of one or more whole frames in the core's arena, for one connection; read it with
/// `GeneralLobby::frame` before the next `handle_*` call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRef {
    start: usize,
    len: usize,
}

impl FrameRef {
    /// Bytes in the run.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// True for an empty run (never handed to the driver).
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// How many connections one [`GeneralOutput::Send`]'s frames go to, for the driver's choice
/// of when to write them (docs/protocols/general-lobby.md, "What the driver does").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// For this connection alone: a reply, a JOIN_ASK, a private line, a sync.
    Direct,
    /// One of the records of a run the core queued for two or more connections at once (a
    /// newcomer's MEMBER_INFO, MEMBER_LEFT, a lobby or game chat line, a GAME_INFO).
    FanOut,
}

/// Something the driver must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GeneralOutput {
    /// Queue these bytes (one or more whole frames) on the connection.
    Send {
        /// The connection.
        conn: ConnId,
        /// The bytes: `GeneralLobby::frame(frames)`.
        frames: FrameRef,
        /// Whether the same frames go to other connections too.
        delivery: Delivery,
    },
    /// Close the connection once what is queued on it is flushed. The driver then calls
    /// `handle_closed` (the core already treats the connection as gone).
    Close {
        /// The connection.
        conn: ConnId,
    },
    /// Check `password` against `username`'s stored hash, off the loop thread, and report
    /// with `handle_verify_result(now, job, result)`.
    Verify {
        /// The connection that signed in (password checks are limited per address).
        conn: ConnId,
        /// The job's id, given back with the verdict.
        job: JobId,
        /// The account name (at most 64 bytes, the accounts' own bound).
        username: Box<str>,
        /// The password as sent.
        password: Box<str>,
    },
}

/// The output queue, its arena, and the routes from present members to connections.
#[derive(Debug, Default)]
pub(crate) struct Outbox {
    arena: Vec<u8>,
    queue: VecDeque<GeneralOutput>,
    routes: BTreeMap<MemberId, ConnId>,
    /// Send records queued, for the counters.
    pub(crate) sends: u64,
    /// Bytes encoded, for the counters.
    pub(crate) bytes_encoded: u64,
}

impl Outbox {
    /// Starts a `handle_*` call: once the driver has drained every output, the arena is
    /// emptied, and memory held after a spike is given back.
    pub(crate) fn begin(&mut self) {
        if !self.queue.is_empty() {
            return;
        }
        self.arena.clear();
        if self.arena.capacity() > ARENA_KEEP {
            self.arena.shrink_to(ARENA_KEEP);
        }
        if self.queue.capacity() > QUEUE_KEEP {
            self.queue.shrink_to(QUEUE_KEEP);
        }
    }

    /// Between calls, when nothing waits: empties the arena and cuts the arena and the queue
    /// back to [`IDLE_KEEP_BYTES`] each, leaving smaller ones as they are (the periodic tidy
    /// calls this every few seconds).
    pub(crate) fn release_spare(&mut self) {
        if self.queue.is_empty() {
            self.arena.clear();
            // `shrink_to` leaves a buffer at or under its argument untouched.
            self.arena.shrink_to(IDLE_KEEP_BYTES);
            self.queue
                .shrink_to(IDLE_KEEP_BYTES / std::mem::size_of::<GeneralOutput>());
        }
    }

    /// Encodes one frame into the arena.
    pub(crate) fn encode(&mut self, repr: &ServerRepr<'_>) -> FrameRef {
        let start = self.arena.len();
        let len = repr.buffer_len();
        self.arena.resize(start + len, 0);
        repr.emit(&mut self.arena[start..]);
        self.bytes_encoded += len as u64;
        FrameRef { start, len }
    }

    /// Where the next encoded frame starts, to gather a run with [`Outbox::since`].
    pub(crate) fn mark(&self) -> usize {
        self.arena.len()
    }

    /// Every frame encoded since `mark`, as one run.
    pub(crate) fn since(&self, mark: usize) -> FrameRef {
        FrameRef {
            start: mark,
            len: self.arena.len().saturating_sub(mark),
        }
    }

    /// The bytes of a run; empty for a run no longer in the arena.
    pub(crate) fn bytes(&self, frames: FrameRef) -> &[u8] {
        self.arena
            .get(frames.start..frames.start + frames.len)
            .unwrap_or(&[])
    }

    /// Queues `frames` for `conn` alone.
    pub(crate) fn send(&mut self, conn: ConnId, frames: FrameRef) {
        if !frames.is_empty() {
            self.sends += 1;
            self.queue.push_back(GeneralOutput::Send {
                conn,
                frames,
                delivery: Delivery::Direct,
            });
        }
    }

    /// Encodes `repr` and queues it for `conn`.
    pub(crate) fn reply(&mut self, conn: ConnId, repr: &ServerRepr<'_>) {
        let frame = self.encode(repr);
        self.send(conn, frame);
    }

    /// Queues `frames` for `member` if it is present.
    pub(crate) fn send_member(&mut self, member: MemberId, frames: FrameRef) {
        if let Some(&conn) = self.routes.get(&member) {
            self.send(conn, frames);
        }
    }

    /// Queues `frames` for each present member of `members`.
    pub(crate) fn send_members(&mut self, members: &[i32], frames: FrameRef) {
        let routes = &self.routes;
        let conns = members
            .iter()
            .filter_map(|&member| routes.get(&MemberId(member)).copied());
        fan_out(&mut self.queue, &mut self.sends, frames, conns);
    }

    /// Queues `frames` for every present member except `except`.
    pub(crate) fn broadcast_except(&mut self, except: Option<MemberId>, frames: FrameRef) {
        let conns = (self.routes.iter())
            .filter(|&(&member, _)| Some(member) != except)
            .map(|(_, &conn)| conn);
        fan_out(&mut self.queue, &mut self.sends, frames, conns);
    }

    /// Queues `frames` for every present member.
    pub(crate) fn broadcast(&mut self, frames: FrameRef) {
        self.broadcast_except(None, frames);
    }

    /// Queues a close of `conn` after what is queued on it.
    pub(crate) fn close(&mut self, conn: ConnId) {
        self.queue.push_back(GeneralOutput::Close { conn });
    }

    /// Queues a password verification for `conn`'s SIGN_IN.
    pub(crate) fn verify(&mut self, conn: ConnId, job: JobId, username: &str, password: &str) {
        self.queue.push_back(GeneralOutput::Verify {
            conn,
            job,
            username: username.into(),
            password: password.into(),
        });
    }

    /// The next output, oldest first.
    pub(crate) fn pop(&mut self) -> Option<GeneralOutput> {
        self.queue.pop_front()
    }

    /// Outputs waiting for the driver.
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// Routes `member`'s frames to `conn` from now on.
    pub(crate) fn attach(&mut self, member: MemberId, conn: ConnId) {
        self.routes.insert(member, conn);
    }

    /// Stops routing `member`'s frames (it is away or gone).
    pub(crate) fn detach(&mut self, member: MemberId) {
        self.routes.remove(&member);
    }

    /// Members present (with a connection).
    pub(crate) fn present(&self) -> usize {
        self.routes.len()
    }

    /// Arena bytes in use and held, for tests of the spike rule.
    #[cfg(test)]
    pub(crate) fn arena_sizes(&self) -> (usize, usize) {
        (self.arena.len(), self.arena.capacity())
    }

    /// Queue capacity held, for tests of the spike rule.
    #[cfg(test)]
    pub(crate) fn queue_capacity(&self) -> usize {
        self.queue.capacity()
    }
}

/// Queues `frames` for each of `conns`: [`Delivery::FanOut`] when they are two or more,
/// [`Delivery::Direct`] for one alone.
fn fan_out(
    queue: &mut VecDeque<GeneralOutput>,
    sends: &mut u64,
    frames: FrameRef,
    mut conns: impl Iterator<Item = ConnId>,
) {
    if frames.is_empty() {
        return;
    }
    let Some(first) = conns.next() else {
        return;
    };
    let second = conns.next();
    let delivery = match second {
        Some(_) => Delivery::FanOut,
        None => Delivery::Direct,
    };
    for conn in std::iter::once(first).chain(second).chain(conns) {
        *sends += 1;
        queue.push_back(GeneralOutput::Send {
            conn,
            frames,
            delivery,
        });
    }
}

/// What each handler works with: the time of the event, the settings, and where effects go.
pub(crate) struct Ctx<'a> {
    /// The time of the event being handled.
    pub(crate) now: Instant,
    /// The settings.
    pub(crate) config: &'a GeneralConfig,
    /// Outputs.
    pub(crate) out: &'a mut Outbox,
    /// Deadlines.
    pub(crate) timers: &'a mut TimerWheel<Timer>,
    /// Counters.
    pub(crate) stats: &'a mut GeneralStats,
}

impl Ctx<'_> {
    /// Sends ERROR(code, request, text) to `conn` and counts the refusal.
    pub(crate) fn refuse(&mut self, conn: ConnId, request: u32, refusal: GeneralRefusal) {
        self.stats.refuse(refusal.code);
        self.out.reply(
            conn,
            &ServerRepr::Error {
                code: refusal.code,
                request,
                text: refusal.text,
            },
        );
    }

    /// Sends ERROR(0, 0, text): a notice that answers no request (not counted as a refusal).
    pub(crate) fn notice(&mut self, conn: ConnId, text: &str) {
        self.out.reply(
            conn,
            &ServerRepr::Error {
                code: ErrorCode::Notice,
                request: 0,
                text,
            },
        );
    }
}
