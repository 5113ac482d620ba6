//! JOIN_ROOM of another node's room (docs/OPERATING.md "More than one process"): only the
//! room's owner (the node in the room id's top byte, [`super::NODE_SHIFT`]) decides it, so
//! two nodes can never both grant its last seat.
//!
//! On the node a client asked: the JOIN_ROOM becomes [`Output::AskOwner`] (a request id and
//! the owner; the room, the client's address and password wait here, for the driver to read)
//! and a [`ASK_TIMEOUT`] timer; the
//! owner's answer comes back as [`RemoteJoins::answered`] and becomes JOIN_SUCCESS with the
//! owner's instance port, or JOIN_FAILED. No answer within [`ASK_TIMEOUT`] is JOIN_FAILED and
//! nothing else: a remote room is never granted locally nor from the listed records. An
//! answer after that is dropped and counted. At most [`MAX_PENDING_ASKS`] asks wait at once
//! (one more is refused at once and counted); a request id is never reused (a `u64` counter).
//! While the driver reports the directory down, a remote JOIN_ROOM is refused at once.
//!
//! On the owner, an ask runs the same JOIN logic as a local JOIN_ROOM (`rooms.rs`: a seat
//! reserved for the client's address for `--seat-timeout`, a repeated JOIN refreshing it)
//! and yields [`Output::AnswerAsker`].
//!
//! This file decides only when an ask is made and how its answer is told; the JOIN itself is
//! `rooms.rs`'s.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::time::wheel::TimerKey;

use super::config::NODE_SHIFT;
use super::context::{Ctx, TimerEvent};
use super::messages::{Output, OwnerAnswer, RemoteJoin, ReplyTo};
use super::room::RoomId;
use super::stats::JoinFailure;

/// How long an ask may wait for its owner's answer.
pub const ASK_TIMEOUT: Duration = Duration::from_millis(250);
/// Asks waiting for an answer at most.
pub const MAX_PENDING_ASKS: usize = 1024;

/// The node that owns room `id` when it is not this one (`None`: ours, or a single node).
pub(super) fn remote_owner(node: Option<u8>, id: u32) -> Option<u8> {
    let me = node?;
    // The top byte: the shift leaves 8 bits.
    let owner = (id >> NODE_SHIFT) as u8;
    (owner != 0 && owner != me).then_some(owner)
}

/// An ask waiting for its answer.
#[derive(Clone, Copy, Debug)]
struct Pending {
    to: ReplyTo,
    timer: TimerKey,
    ask: RemoteJoin,
}

/// The asks this node made and the directory's state.
#[derive(Default)]
pub(super) struct RemoteJoins {
    pending: HashMap<u64, Pending>,
    /// The last request id handed out.
    last_req: u64,
    /// Whether the driver reports the directory up.
    up: bool,
}

impl RemoteJoins {
    /// The driver's report: the directory is up (asks can reach owners) or not.
    pub(super) fn set_up(&mut self, up: bool) {
        self.up = up;
    }

    /// Asks waiting for an answer.
    pub(super) fn pending(&self) -> usize {
        self.pending.len()
    }

    /// A JOIN_ROOM of `room`, owned by `owner`, from `to`: asked of the owner, or refused at
    /// once (the error, for the caller to answer).
    pub(super) fn ask(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Instant,
        to: ReplyTo,
        owner: u8,
        room: u32,
        password: &[u8],
    ) -> Result<(), JoinFailure> {
        if !self.up {
            cx.stats.remote.unavailable += 1;
            return Err(JoinFailure::OwnerUnreachable);
        }
        if self.pending.len() >= MAX_PENDING_ASKS {
            cx.stats.remote.over_cap += 1;
            return Err(JoinFailure::OwnerUnreachable);
        }
        self.last_req += 1;
        let req = self.last_req;
        let ask =
            RemoteJoin::new(req, RoomId(room), to.to, password).ok_or(JoinFailure::BadPassword)?;
        let timer = cx
            .timers
            .insert(now + ASK_TIMEOUT, TimerEvent::RemoteJoinTimeout(req));
        self.pending.insert(req, Pending { to, timer, ask });
        cx.stats.remote.asked += 1;
        cx.push(Output::AskOwner { owner, req });
        Ok(())
    }

    /// The JOIN_ROOM of ask `req`, while it waits.
    pub(super) fn get(&self, req: u64) -> Option<&RemoteJoin> {
        self.pending.get(&req).map(|pending| &pending.ask)
    }

    /// The owner's answer to ask `req`: where to send the client's reply, or `None` for an
    /// answer to no waiting ask (late or unknown: counted, dropped).
    pub(super) fn answered(
        &mut self,
        cx: &mut Ctx<'_>,
        req: u64,
        answer: OwnerAnswer,
    ) -> Option<ReplyTo> {
        let Some(pending) = self.pending.remove(&req) else {
            cx.stats.remote.late_answers += 1;
            return None;
        };
        cx.timers.cancel(pending.timer);
        match answer {
            OwnerAnswer::Granted { .. } => cx.stats.remote.granted += 1,
            OwnerAnswer::Refused(_) => cx.stats.remote.refused += 1,
        }
        Some(pending.to)
    }

    /// Ask `req` could not be handed to the directory (its queue was full): where to send
    /// the client's JOIN_FAILED.
    pub(super) fn dropped(&mut self, cx: &mut Ctx<'_>, req: u64) -> Option<ReplyTo> {
        let pending = self.pending.remove(&req)?;
        cx.timers.cancel(pending.timer);
        cx.stats.remote.dropped += 1;
        Some(pending.to)
    }

    /// Ask `req`'s time is up: where to send the client's JOIN_FAILED (`None` if answered).
    pub(super) fn timed_out(&mut self, cx: &mut Ctx<'_>, req: u64) -> Option<ReplyTo> {
        let pending = self.pending.remove(&req)?;
        cx.stats.remote.timeouts += 1;
        Some(pending.to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_is_the_top_byte_unless_it_is_this_node() {
        assert_eq!(remote_owner(Some(2), 1 << 24 | 5), Some(1));
        assert_eq!(remote_owner(Some(1), 1 << 24 | 5), None);
        assert_eq!(remote_owner(None, 1 << 24 | 5), None);
        assert_eq!(remote_owner(Some(1), 5), None);
        assert_eq!(remote_owner(Some(1), 255 << 24), Some(255));
    }
}
