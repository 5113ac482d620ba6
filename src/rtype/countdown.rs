//! A party's way from its lobby to its game (RFC R-Type-TCP-001 sections 5 and 7,
//! `docs/protocols/tcp-lobby.md`, "Server behaviour"; the upstream dialect's countdown in
//! `docs/protocols/tcp-lobby-upstream.md`): whether it may start, the instance it asks the
//! driver for, the countdown once that is bound, GAME_START and the hand-over of its players
//! to the instance, or the countdown cancelled.
//!
//! Each function works on one party, handed in with its id by [`Parties`](super::parties),
//! which owns the parties, finds the one an event is for and keeps the membership (seats,
//! names, hashes). Nothing here adds or removes a party or a member.

use std::time::{Duration, Instant};

use crate::wire::tcp_upstream::Dialect;

use super::conns::TcpConns;
use super::context::{Ctx, TimerEvent};
use super::messages::Output;
use super::party::{slot_of_index, Opener, Party, PartyCountdown, PartyMember};
use super::room::{RoomId, RoomState, Slot};
use super::rooms::Rooms;
use super::tcp_messages::{TcpError, TcpMessage};

/// Queues `msg` to every member of `party`.
pub(super) fn send_party(cx: &mut Ctx<'_>, party: &Party, msg: TcpMessage) {
    for conn in party.conns() {
        cx.send_tcp(conn, msg);
    }
}

/// Why the party cannot start now, if it cannot.
pub(super) fn start_refusal(cx: &Ctx<'_>, party: &Party) -> Option<TcpError> {
    if party.busy() || party.started {
        Some(TcpError::GameStarted)
    } else if party.member_count() < usize::from(cx.config.party.min_players) {
        Some(TcpError::NotEnoughPlayers)
    } else if !party.all_ready() {
        Some(TcpError::NotAllReady)
    } else {
        None
    }
}

/// With `--auto-start`, or always in the upstream dialect (whose client never sends
/// START_REQ), starts the countdown once the party may start.
pub(super) fn maybe_auto_start(cx: &mut Ctx<'_>, id: RoomId, party: &mut Party) {
    let upstream = party.dialect == Dialect::Upstream;
    if (cx.config.party.auto_start || upstream) && start_refusal(cx, party).is_none() {
        open_party_instance(cx, id, party, Opener::Auto);
    }
}

/// Asks the driver for the party's instance socket; the countdown starts when it is bound.
pub(super) fn open_party_instance(cx: &mut Ctx<'_>, id: RoomId, party: &mut Party, opener: Opener) {
    party.opening = Some(opener);
    let players = u8::try_from(party.member_count()).unwrap_or(u8::MAX);
    cx.open_instance(id, players);
}

/// The driver's answer to the party's [`Output::OpenInstance`].
pub(super) fn instance_opened(
    cx: &mut Ctx<'_>,
    conns: &mut TcpConns,
    rooms: &mut Rooms,
    now: Instant,
    id: RoomId,
    party: &mut Party,
    port: Option<u16>,
) {
    let Some(opener) = party.opening.take() else {
        return;
    };
    let Some(port) = port else {
        let error = TcpMessage::Error(TcpError::NoInstance);
        match opener {
            Opener::Request(conn, _) => cx.send_tcp(conn, error),
            Opener::Auto => send_party(cx, party, error),
        }
        return;
    };
    if let Some(room) = rooms.get_mut(id) {
        room.port = Some(port);
    }
    // The party may have changed while the socket was being bound.
    if let Some(error) = start_refusal(cx, party) {
        if let Opener::Request(conn, _) = opener {
            cx.send_tcp(conn, TcpMessage::Error(error));
        }
        release_instance(cx, rooms, id);
        return;
    }
    // The countdown's clock starts when START_REQ was received, not when the socket was
    // bound: parties whose START_REQs came in one event batch share one schedule, so
    // their COUNTDOWNs fall due together and go out in one run of writes.
    let started = match opener {
        Opener::Request(_, at) => at.min(now),
        Opener::Auto => now,
    };
    start_countdown(cx, conns, rooms, now, started, id, party);
}

fn start_countdown(
    cx: &mut Ctx<'_>,
    conns: &mut TcpConns,
    rooms: &mut Rooms,
    now: Instant,
    started: Instant,
    id: RoomId,
    party: &mut Party,
) {
    if let Some(room) = rooms.get_mut(id) {
        room.state = RoomState::Countdown;
    }
    party.countdown = Some(PartyCountdown {
        started,
        next: 0,
        timer: None,
        last_second: 0,
    });
    cx.stats.tcp.countdowns += 1;
    countdown_tick(cx, conns, rooms, now, id, party);
}

/// Sends the countdown value due now and arms the next one, or starts the game. In the
/// upstream dialect a value goes out only when its whole second (rounded up) changes, and
/// 0 never (it means cancelled there): GAME_START follows 1.
pub(super) fn countdown_tick(
    cx: &mut Ctx<'_>,
    conns: &mut TcpConns,
    rooms: &mut Rooms,
    now: Instant,
    id: RoomId,
    party: &mut Party,
) {
    let total = cx.config.party.countdown;
    let tick = cx.config.party.countdown_tick;
    let upstream = party.dialect == Dialect::Upstream;
    let Some(countdown) = party.countdown.as_mut() else {
        return;
    };
    let elapsed = tick.saturating_mul(countdown.next).min(total);
    let remaining = total - elapsed;
    countdown.next += 1;
    countdown.timer = None;
    let started = countdown.started;
    let next_at = started + tick.saturating_mul(countdown.next).min(total);
    if !upstream {
        send_party(cx, party, TcpMessage::Countdown(remaining));
    } else if !remaining.is_zero() {
        let second = remaining.as_secs() + u64::from(remaining.subsec_nanos() > 0);
        if second != countdown.last_second {
            countdown.last_second = second;
            send_party(
                cx,
                party,
                TcpMessage::Countdown(Duration::from_secs(second)),
            );
        }
    }
    if remaining.is_zero() {
        game_start(cx, conns, rooms, now, id, party);
        return;
    }
    let key = cx.timers.insert(next_at, TimerEvent::PartyTick(id));
    if let Some(countdown) = party.countdown.as_mut() {
        countdown.timer = Some(key);
    }
}

/// GAME_START: the room plays, its instance expects exactly these players, their TCP
/// connections are closed after the linger time unless the clients close first.
fn game_start(
    cx: &mut Ctx<'_>,
    conns: &mut TcpConns,
    rooms: &mut Rooms,
    now: Instant,
    id: RoomId,
    party: &mut Party,
) {
    let expires = now + cx.config.seat_timeout;
    let linger = now + cx.config.party.linger;
    party.countdown = None;
    party.started = true;
    if party.dialect == Dialect::Upstream {
        // The seed GAME_START announces: the injected source's bits, as a hash's.
        party.seed = (cx.hashes)() as u32;
    }
    let roster: Vec<(Slot, PartyMember)> = party.members().map(|(s, m)| (s, *m)).collect();
    let Some(room) = rooms.get_mut(id) else {
        return;
    };
    room.state = RoomState::Playing;
    for (slot, member) in &roster {
        room.expect(*slot, member.hash, expires);
    }
    for (_, member) in &roster {
        conns.transferred(member.conn, id);
        cx.send_tcp(member.conn, TcpMessage::GameStart(id));
    }
    cx.stats.tcp.games_started += 1;
    party.linger = Some(cx.timers.insert(linger, TimerEvent::PartyLinger(id)));
    rooms.arm_housekeeping(cx, id);
}

/// The countdown cannot go on (too few members: `error` 0x06; the game server exited:
/// 0xFF "no game instance available"; in the upstream dialect, a player un-readied):
/// stop it, tell everyone (ERROR `error`, then PLAYER_READY(0) for every member; in the
/// upstream dialect COUNTDOWN 0, the ready flags kept) and release the instance.
pub(super) fn cancel_countdown(
    cx: &mut Ctx<'_>,
    rooms: &mut Rooms,
    id: RoomId,
    party: &mut Party,
    error: TcpError,
) {
    let Some(countdown) = party.countdown.take() else {
        return;
    };
    if let Some(key) = countdown.timer {
        cx.timers.cancel(key);
    }
    if party.dialect == Dialect::Upstream {
        cx.stats.tcp.countdowns_cancelled += 1;
        send_party(cx, party, TcpMessage::Countdown(Duration::ZERO));
        release_instance(cx, rooms, id);
        return;
    }
    let mut slots = Vec::new();
    for (index, seat) in party.seats.iter_mut().enumerate() {
        if let Some(member) = seat.as_mut() {
            member.ready = false;
            slots.push(slot_of_index(index));
        }
    }
    cx.stats.tcp.countdowns_cancelled += 1;
    send_party(cx, party, TcpMessage::Error(error));
    for slot in slots {
        send_party(cx, party, TcpMessage::PlayerReady { slot, ready: false });
    }
    release_instance(cx, rooms, id);
}

/// Closes a party's instance socket while the party lives on (countdown cancelled).
fn release_instance(cx: &mut Ctx<'_>, rooms: &mut Rooms, id: RoomId) {
    let Some(room) = rooms.get_mut(id) else {
        return;
    };
    room.state = RoomState::Waiting;
    if room.port.take().is_some() {
        cx.push(Output::CloseInstance { room: id });
    }
}
