//! One room's game instance as lobbyd's relay serves it (`docs/protocols/instance.md`): HELLO
//! and the seats it takes (a party's players by the token of their GAME_START), LEAVE, PING,
//! START and the UDP room's countdown, DATA forwarded among the members, PEER_JOINED and
//! PEER_LEFT, and the housekeeping that drops silent members and ends an empty game.
//!
//! Each function works on one room, handed in with its id by [`Rooms`](super::rooms), which
//! owns the table, finds the room a datagram or a timer is for, and opens, lists and reaps
//! rooms. Nothing here adds a room to the table or removes one.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::context::{Ctx, TimerEvent};
use super::messages::{InstanceMessage, InstanceRequest, Output, RejectReason};
use super::room::{Countdown, Room, RoomId, RoomKind, RoomState, SeatRefusal, Slot};
use super::stats::InstanceIgnore;

/// A well-formed control datagram from `from` on room `id`'s instance socket.
pub(super) fn handle_request(
    cx: &mut Ctx<'_>,
    now: Instant,
    id: RoomId,
    room: &mut Room,
    from: SocketAddr,
    seq: u16,
    request: InstanceRequest,
) {
    match request {
        InstanceRequest::Hello { token } => hello(cx, now, id, room, from, seq, token),
        InstanceRequest::Leave => {
            let Some(slot) = room.slot_of(from) else {
                cx.stats.ignored(InstanceIgnore::NotMember);
                return;
            };
            cx.stats.leaves += 1;
            remove_member(cx, now, id, room, slot);
        }
        InstanceRequest::Start => start(cx, now, id, room, from),
        InstanceRequest::Ping => {
            let Some(slot) = room.slot_of(from) else {
                cx.stats.ignored(InstanceIgnore::NotMember);
                return;
            };
            room.touch(slot, now);
            cx.push(Output::Instance {
                room: id,
                to: from,
                seq,
                msg: InstanceMessage::Pong,
            });
        }
    }
}

fn hello(
    cx: &mut Ctx<'_>,
    now: Instant,
    id: RoomId,
    room: &mut Room,
    from: SocketAddr,
    seq: u16,
    token: Option<u64>,
) {
    let (slot, is_new) = match room.slot_of(from) {
        Some(slot) => {
            room.touch(slot, now);
            (slot, false)
        }
        None if room.kind == RoomKind::Party => match party_hello(cx, now, room, from, token) {
            Some(slot) => (slot, true),
            None => {
                reject(cx, id, from, seq, RejectReason::UnknownToken);
                return;
            }
        },
        None => {
            let expired = room.expire_reservations(now);
            cx.stats.reservations_expired += expired as u64;
            match room.admit(from, now) {
                Ok(slot) => (slot, true),
                Err(refusal) => {
                    let reason = match refusal {
                        SeatRefusal::Full => RejectReason::Full,
                        SeatRefusal::NotJoinable => RejectReason::NotJoinable,
                    };
                    reject(cx, id, from, seq, reason);
                    return;
                }
            }
        }
    };
    cx.stats.welcomes += 1;
    let welcome = InstanceMessage::Welcome {
        slot,
        player_count: u8::try_from(room.member_count()).unwrap_or(u8::MAX),
        max_players: u8::try_from(room.max_players()).unwrap_or(u8::MAX),
        state: room.state,
    };
    cx.push(Output::Instance {
        room: id,
        to: from,
        seq,
        msg: welcome,
    });
    if is_new {
        // The newcomer learns who is already here, one PEER_JOINED per member ...
        for index in 0..room.max_players() {
            let peer_slot = Slot::try_from(index + 1).unwrap_or(Slot::MAX);
            if peer_slot == slot || room.member(peer_slot).is_none() {
                continue;
            }
            let seq = room.take_seq();
            cx.push(Output::Instance {
                room: id,
                to: from,
                seq,
                msg: InstanceMessage::PeerJoined(peer_slot),
            });
        }
        // ... and the others learn about the newcomer.
        broadcast(cx, id, room, InstanceMessage::PeerJoined(slot), Some(slot));
        arm_housekeeping(cx, id, room);
    }
}

/// A HELLO on a party's instance: admitted only with the token of a player of its
/// GAME_START, into that player's slot.
fn party_hello(
    cx: &mut Ctx<'_>,
    now: Instant,
    room: &mut Room,
    from: SocketAddr,
    token: Option<u64>,
) -> Option<Slot> {
    let expired = room.expire_reservations(now);
    cx.stats.reservations_expired += expired as u64;
    let slot = token.and_then(|token| room.admit_token(token, from, now));
    if slot.is_none() {
        cx.stats.tcp.unknown_tokens += 1;
    }
    slot
}

fn start(cx: &mut Ctx<'_>, now: Instant, id: RoomId, room: &mut Room, from: SocketAddr) {
    let Some(slot) = room.slot_of(from) else {
        cx.stats.ignored(InstanceIgnore::NotMember);
        return;
    };
    room.touch(slot, now);
    if room.owner != Some(slot) {
        cx.stats.ignored(InstanceIgnore::NotOwner);
        return;
    }
    if room.state != RoomState::Waiting {
        cx.stats.ignored(InstanceIgnore::BadState);
        return;
    }
    room.state = RoomState::Countdown;
    room.countdown = Some(Countdown {
        started: now,
        remaining: cx.config.countdown_secs,
    });
    countdown_step(cx, id, room);
}

/// A UDP room's countdown timer fired: one second less, announced.
pub(super) fn countdown_tick(cx: &mut Ctx<'_>, id: RoomId, room: &mut Room) {
    room.timers.countdown = None;
    if let Some(countdown) = room.countdown.as_mut() {
        countdown.remaining = countdown.remaining.saturating_sub(1);
    }
    countdown_step(cx, id, room);
}

/// Announces the current countdown value and arms the next tick, or starts the game.
fn countdown_step(cx: &mut Ctx<'_>, id: RoomId, room: &mut Room) {
    let total = cx.config.countdown_secs;
    let Some(countdown) = room.countdown else {
        return;
    };
    if countdown.remaining == 0 {
        room.countdown = None;
        room.state = RoomState::Playing;
        room.clear_reservations();
        cx.stats.games_started += 1;
        broadcast(cx, id, room, InstanceMessage::Started, None);
        return;
    }
    broadcast(
        cx,
        id,
        room,
        InstanceMessage::Countdown(countdown.remaining),
        None,
    );
    // Tick k fires at started + k seconds, computed from the start: no drift.
    let elapsed = u32::from(total - countdown.remaining) + 1;
    let deadline = countdown.started + Duration::from_secs(u64::from(elapsed));
    room.timers.countdown = Some(cx.timers.insert(deadline, TimerEvent::CountdownTick(id)));
}

/// Sends `msg` to every member of room `id` except `except`.
fn broadcast(
    cx: &mut Ctx<'_>,
    id: RoomId,
    room: &mut Room,
    msg: InstanceMessage,
    except: Option<Slot>,
) {
    // One event, one sequence number: every member sees the same value for it (taken
    // only if someone receives the event).
    let mut seq = None;
    let count = room.max_players();
    for index in 0..count {
        let slot = Slot::try_from(index + 1).unwrap_or(Slot::MAX);
        if Some(slot) == except {
            continue;
        }
        let Some(addr) = room.member(slot).map(|m| m.addr) else {
            continue;
        };
        let seq = *seq.get_or_insert_with(|| room.take_seq());
        cx.push(Output::Instance {
            room: id,
            to: addr,
            seq,
            msg,
        });
    }
}

/// A DATA datagram from `from` on the room's socket, addressed to `target` (a slot, or 0xFF
/// for everyone else). Fills `destinations` with where to forward it and returns the
/// sender's slot, or `None` (and counts why) when it must be dropped.
pub(super) fn relay_data(
    cx: &mut Ctx<'_>,
    now: Instant,
    room: &mut Room,
    from: SocketAddr,
    target: u8,
    destinations: &mut Vec<SocketAddr>,
) -> Option<Slot> {
    let Some(sender) = room.slot_of(from) else {
        cx.stats.ignored(InstanceIgnore::NotMember);
        return None;
    };
    room.touch(sender, now);
    if target == 0xFF {
        destinations.extend(
            room.members()
                .filter(|(slot, _)| *slot != sender)
                .map(|(_, m)| m.addr),
        );
    } else {
        match room.member(target) {
            Some(member) if target != sender => destinations.push(member.addr),
            _ => {
                cx.stats.ignored(InstanceIgnore::BadTarget);
                return None;
            }
        }
    }
    cx.stats.data_forwarded += destinations.len() as u64;
    Some(sender)
}

/// Removes a member, tells the others, and finishes the room if it is now empty.
fn remove_member(cx: &mut Ctx<'_>, now: Instant, id: RoomId, room: &mut Room, slot: Slot) {
    if room.remove(slot).is_none() {
        return;
    }
    broadcast(cx, id, room, InstanceMessage::PeerLeft(slot), None);
    finish_if_empty(cx, now, id, room);
}

fn finish_if_empty(cx: &mut Ctx<'_>, now: Instant, id: RoomId, room: &mut Room) {
    // A game server's players are not seen here: its room ends when its process does.
    if cx.config.instance_exec {
        return;
    }
    if room.is_empty() && room.state != RoomState::Finished {
        finish(cx, now, id, room);
    }
}

/// Moves a room to Finished and schedules its removal.
fn finish(cx: &mut Ctx<'_>, now: Instant, id: RoomId, room: &mut Room) {
    room.state = RoomState::Finished;
    room.countdown = None;
    let timers = std::mem::take(&mut room.timers);
    if let Some((key, _)) = timers.housekeeping {
        cx.timers.cancel(key);
    }
    if let Some(key) = timers.countdown {
        cx.timers.cancel(key);
    }
    if let Some(key) = timers.reap {
        cx.timers.cancel(key);
    }
    let key = cx
        .timers
        .insert(now + cx.config.reap_grace, TimerEvent::Reap(id));
    room.timers.reap = Some(key);
}

/// Arms (or moves earlier) the room's housekeeping timer to its next deadline.
pub(super) fn arm_housekeeping(cx: &mut Ctx<'_>, id: RoomId, room: &mut Room) {
    let idle = cx.config.idle_timeout;
    let Some(deadline) = room.next_housekeeping(idle) else {
        return;
    };
    if let Some((key, armed)) = room.timers.housekeeping {
        if armed <= deadline {
            return;
        }
        cx.timers.cancel(key);
    }
    let key = cx.timers.insert(deadline, TimerEvent::Housekeeping(id));
    room.timers.housekeeping = Some((key, deadline));
}

/// A room's housekeeping timer fired: expired reservations and silent members go, and
/// an empty room finishes.
pub(super) fn housekeeping(cx: &mut Ctx<'_>, now: Instant, id: RoomId, room: &mut Room) {
    let idle = cx.config.idle_timeout;
    room.timers.housekeeping = None;
    let expired = room.expire_reservations(now);
    cx.stats.reservations_expired += expired as u64;
    while let Some(slot) = room.first_idle_member(now, idle) {
        cx.stats.idle_removed += 1;
        remove_member(cx, now, id, room, slot);
    }
    finish_if_empty(cx, now, id, room);
    if room.state != RoomState::Finished {
        arm_housekeeping(cx, id, room);
    }
}

/// Answers a HELLO with REJECT and counts it by reason.
fn reject(cx: &mut Ctx<'_>, id: RoomId, to: SocketAddr, seq: u16, reason: RejectReason) {
    cx.stats.rejects[reason as usize - 1] += 1;
    cx.push(Output::Instance {
        room: id,
        to,
        seq,
        msg: InstanceMessage::Reject(reason),
    });
}
