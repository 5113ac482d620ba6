//! `tcp-join --dialect upstream`: players of the upstream R-Type client's TCP dialect joining
//! lobbyd's TCP lobby (docs/protocols/tcp-lobby-upstream.md), as the real client does it.
//!
//! Each cycle: connect, CREATE_ROOM_REQ (a room of its own), JOIN_ROOM_REQ on the ACK (the
//! creator is not in its room before), CONNECT_REQ on the JOIN_ROOM_ACK, wait for CONNECT_ACK
//! and the player's own PLAYER_JOIN (latency from the CREATE_ROOM_REQ write to it: the whole
//! path a real client takes from the room list to its party), then DISCONNECT with its hash
//! and wait for the server to close; repeat. One completed request is one join. At most
//! `--concurrency` rooms exist at once: the server's `--max-rooms` must allow that many.

use std::time::Instant;

use lobbyd::wire::tcp_upstream::{
    next_frame_max, ClientRepr, ConnectStatus, CreateStatus, JoinStatus, Next, ServerRepr,
    LENGTH_LEN, MAX_LEN,
};

use super::tcp_engine::{each_frame_by, Ctx, Cut, Script, Step};
use super::tcp_modes::player_name;

/// A server frame of any legitimate size.
pub const MAX_FRAME: usize = LENGTH_LEN + MAX_LEN;

/// Appends `msg` to `out`.
fn push(out: &mut Vec<u8>, msg: ClientRepr<'_>) {
    let at = out.len();
    out.resize(at + msg.buffer_len(), 0);
    msg.emit(&mut out[at..]);
}

/// The next server frame of this dialect in `data`.
fn cut_frame(data: &[u8]) -> Cut<ServerRepr<'_>> {
    match next_frame_max(data, MAX_LEN) {
        Next::NeedMore => Cut::NeedMore,
        Next::BadLength { .. } => Cut::Fail("bad_length"),
        Next::Frame { frame, consumed } => match ServerRepr::parse(&frame) {
            Ok(repr) => Cut::Frame(repr, consumed),
            Err(e) => Cut::Fail(e.as_str()),
        },
    }
}

/// One joining client of this dialect.
#[derive(Debug, Default)]
pub struct UpstreamJoiner {
    sent: Option<Instant>,
    me: Option<(u8, u64)>,
    joined: bool,
}

/// `tcp-join --dialect upstream`.
#[derive(Debug, Default)]
pub struct UpstreamJoin;

impl UpstreamJoin {
    /// Judges one frame; `Some` ends the batch.
    fn frame(
        c: &mut UpstreamJoiner,
        i: usize,
        repr: ServerRepr<'_>,
        ctx: &mut Ctx<'_>,
    ) -> Option<Step> {
        match repr {
            ServerRepr::CreateRoomAck { status, room_id } => match status {
                CreateStatus::Created => {
                    push(ctx.out, ClientRepr::JoinRoomReq { room_id });
                    None
                }
                _ => Some(Step::Fail("create_refused")),
            },
            ServerRepr::JoinRoomAck { status } => match status {
                JoinStatus::Joined => {
                    let name = player_name(i);
                    push(ctx.out, ClientRepr::ConnectReq { name: &name });
                    None
                }
                JoinStatus::Full => Some(Step::Fail("room_full")),
                JoinStatus::NotFound => Some(Step::Fail("room_not_found")),
                JoinStatus::InGame | JoinStatus::Unknown(_) => Some(Step::Fail("room_in_game")),
            },
            ServerRepr::ConnectAck {
                status: ConnectStatus::Accepted,
                hash,
                number,
            } if c.me.is_none() => {
                c.me = Some((number, hash));
                None
            }
            ServerRepr::ConnectAck { .. } => Some(Step::Fail("connect_refused")),
            ServerRepr::PlayerJoin { number, hash, .. } if c.me == Some((number, hash)) => {
                if c.joined {
                    return Some(Step::Fail("duplicate_join"));
                }
                c.joined = true;
                let sent = c.sent.unwrap_or(ctx.now);
                ctx.stats.complete(ctx.now.saturating_duration_since(sent));
                push(ctx.out, ClientRepr::Disconnect { hash });
                None
            }
            // Rooms changing while this client is not in one yet, and its party's news.
            ServerRepr::RoomUpdate(_)
            | ServerRepr::PlayerJoin { .. }
            | ServerRepr::PlayerReady { .. }
            | ServerRepr::PlayerLeft { .. } => None,
            _ => Some(Step::Fail("unexpected_frame")),
        }
    }
}

impl Script for UpstreamJoin {
    type Client = UpstreamJoiner;
    const MAX_PENDING: usize = MAX_FRAME;

    fn opened(&mut self, i: usize, c: &mut UpstreamJoiner, ctx: &mut Ctx<'_>) {
        let name = player_name(i);
        push(ctx.out, ClientRepr::CreateRoomReq { name: &name });
        c.sent = Some(ctx.now);
    }

    fn received(
        &mut self,
        i: usize,
        c: &mut UpstreamJoiner,
        data: &[u8],
        ctx: &mut Ctx<'_>,
    ) -> (usize, Step) {
        each_frame_by(data, cut_frame, |repr| Self::frame(c, i, repr, ctx))
    }

    fn eof(&mut self, _i: usize, c: &mut UpstreamJoiner, _ctx: &mut Ctx<'_>) -> Step {
        if c.joined {
            Step::Done
        } else {
            Step::Fail("closed_before_join")
        }
    }

    fn timed_out(&mut self, _i: usize, c: &mut UpstreamJoiner) -> &'static str {
        if c.joined {
            "disconnect"
        } else {
            "join"
        }
    }
}
