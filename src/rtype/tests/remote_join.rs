//! Unit tests of JOIN_ROOM of another node's room (`remote_join.rs`): the asker's side (an
//! ask, its answer, its timeout, a late answer, the cap, the directory down) and the
//! owner's (the local JOIN logic, a repeated ask refreshing the seat).

use super::super::*;
use super::seeded_hashes;
use std::net::Ipv4Addr;
use std::time::Duration;

fn addr(last: u8) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::new(127, 0, 0, last), 5000))
}

/// Node `node` of a group, its directory up.
fn node(node: u8, now: Instant) -> RtypeCore {
    let config = RtypeConfig {
        node_id: Some(node),
        ..RtypeConfig::default()
    };
    let mut core = RtypeCore::new(config, now, seeded_hashes());
    core.handle_directory_state(true);
    core
}

fn drain(core: &mut RtypeCore) -> Vec<Output> {
    std::iter::from_fn(|| core.poll_output()).collect()
}

/// The only output: a JOIN reply to `to` with `seq`.
fn join_reply(outputs: &[Output], to: SocketAddr, seq: u16) -> LobbyReply {
    match outputs {
        [Output::Lobby {
            to: t,
            seq: s,
            reply,
            ..
        }] if *t == to && *s == seq => *reply,
        _ => panic!("not one JOIN reply: {outputs:?}"),
    }
}

const REMOTE: u32 = 1 << NODE_SHIFT | 7;

/// JOIN_ROOM of node 1's room through node 2: the ask it yields.
fn ask(core: &mut RtypeCore, now: Instant, from: SocketAddr, seq: u16) -> RemoteJoin {
    core.handle_lobby_request(now, from, seq, LobbyRequest::JoinRoom(REMOTE));
    match drain(core)[..] {
        [Output::AskOwner { owner: 1, req }] => *core.pending_ask(req).unwrap(),
        ref other => panic!("no ask: {other:?}"),
    }
}

#[test]
fn an_ask_is_answered_with_the_owners_port() {
    let now = Instant::now();
    let mut two = node(2, now);
    let ask = ask(&mut two, now, addr(3), 9);
    assert_eq!((ask.room, ask.client), (RoomId(REMOTE), addr(3)));
    let granted = OwnerAnswer::Granted {
        room: RoomId(REMOTE),
        port: 4301,
    };
    two.handle_owner_answer(now + Duration::from_millis(5), ask.req, granted);
    let reply = join_reply(&drain(&mut two), addr(3), 9);
    assert_eq!(
        reply,
        LobbyReply::JoinSuccess {
            room: RoomId(REMOTE),
            port: 4301
        }
    );
    // The timer is gone with the ask: nothing more happens.
    two.handle_timeout(now + Duration::from_secs(1));
    assert!(drain(&mut two).is_empty());
    assert_eq!(
        (two.stats.remote.granted, two.stats.remote.timeouts),
        (1, 0)
    );
}

#[test]
fn no_answer_in_time_is_join_failed_and_a_late_answer_is_dropped() {
    let now = Instant::now();
    let mut two = node(2, now);
    let ask = ask(&mut two, now, addr(3), 9);
    two.handle_timeout(now + ASK_TIMEOUT - Duration::from_millis(2));
    assert!(drain(&mut two).is_empty(), "not before its time");
    two.handle_timeout(now + ASK_TIMEOUT + Duration::from_millis(2));
    let reply = join_reply(&drain(&mut two), addr(3), 9);
    assert_eq!(reply, LobbyReply::JoinFailed(JoinFailure::OwnerUnreachable));
    let granted = OwnerAnswer::Granted {
        room: RoomId(REMOTE),
        port: 4301,
    };
    two.handle_owner_answer(now + ASK_TIMEOUT * 2, ask.req, granted);
    assert!(
        drain(&mut two).is_empty(),
        "a late grant is not a JOIN_SUCCESS"
    );
    let remote = &two.stats.remote;
    assert_eq!(
        (remote.timeouts, remote.late_answers, remote.granted),
        (1, 1, 0)
    );
}

#[test]
fn the_directory_down_or_too_many_asks_refuse_at_once() {
    let now = Instant::now();
    let mut two = node(2, now);
    two.handle_directory_state(false);
    two.handle_lobby_request(now, addr(3), 1, LobbyRequest::JoinRoom(REMOTE));
    let reply = join_reply(&drain(&mut two), addr(3), 1);
    assert_eq!(reply, LobbyReply::JoinFailed(JoinFailure::OwnerUnreachable));
    assert_eq!(two.stats.remote.unavailable, 1);
    two.handle_directory_state(true);
    let mut reqs = std::collections::BTreeSet::new();
    for i in 0..MAX_PENDING_ASKS {
        // Many addresses, so no per-IP budget is in the way.
        let from = SocketAddr::from((Ipv4Addr::from(0x7f00_0100 + i as u32), 5000));
        two.handle_lobby_request(now, from, 1, LobbyRequest::JoinRoom(REMOTE));
        match drain(&mut two)[..] {
            [Output::AskOwner { req, .. }] => assert!(reqs.insert(req), "request id reused"),
            ref other => panic!("{other:?}"),
        }
    }
    assert_eq!(two.pending_asks(), MAX_PENDING_ASKS);
    two.handle_lobby_request(now, addr(3), 2, LobbyRequest::JoinRoom(REMOTE));
    let reply = join_reply(&drain(&mut two), addr(3), 2);
    assert_eq!(reply, LobbyReply::JoinFailed(JoinFailure::OwnerUnreachable));
    assert_eq!(two.stats.remote.over_cap, 1);
    // A dropped ask (the directory's queue full) is answered at once.
    let first = *reqs.iter().next().unwrap();
    two.handle_ask_dropped(now, first);
    assert_eq!(drain(&mut two).len(), 1);
    assert_eq!(two.stats.remote.dropped, 1);
}

#[test]
fn the_owner_runs_the_local_join_and_a_repeat_refreshes_the_seat() {
    let now = Instant::now();
    let mut one = node(1, now);
    one.handle_lobby_request(now, addr(2), 1, LobbyRequest::CreateRoom);
    let room = match drain(&mut one)[..] {
        [Output::OpenInstance { room }] => room,
        ref other => panic!("{other:?}"),
    };
    one.handle_instance_opened(now, room, Some(4301));
    drain(&mut one);
    let ask = RemoteJoin::new(5, room, addr(3), b"").unwrap();
    for _ in 0..3 {
        one.handle_remote_join(now, 2, ask);
        let answer = match drain(&mut one)[..] {
            [Output::AnswerAsker {
                asker: 2,
                req: 5,
                answer,
            }] => answer,
            ref other => panic!("{other:?}"),
        };
        assert_eq!(answer, OwnerAnswer::Granted { room, port: 4301 });
    }
    let seats = one.room(room).map(|r| r.reservation_count());
    assert_eq!(
        seats,
        Some(2),
        "the creator's seat and one for the asked client"
    );
    // A room it does not have: refused, with the reason.
    let missing = RemoteJoin::new(6, RoomId(room.0 + 1), addr(3), b"").unwrap();
    one.handle_remote_join(now, 2, missing);
    match drain(&mut one)[..] {
        [Output::AnswerAsker { answer, .. }] => {
            assert_eq!(answer, OwnerAnswer::Refused(JoinFailure::NoSuchRoom))
        }
        ref other => panic!("{other:?}"),
    }
    assert_eq!(one.stats.remote.served, 4);
}

#[test]
fn a_single_node_never_asks() {
    let now = Instant::now();
    let mut alone = RtypeCore::new(RtypeConfig::default(), now, seeded_hashes());
    alone.handle_lobby_request(now, addr(3), 1, LobbyRequest::JoinRoom(REMOTE));
    let reply = join_reply(&drain(&mut alone), addr(3), 1);
    assert_eq!(reply, LobbyReply::JoinFailed(JoinFailure::NoSuchRoom));
}

#[test]
fn refusal_codes_round_trip() {
    for reason in JoinFailure::ALL {
        assert_eq!(JoinFailure::from_code(reason.code()), Some(reason));
    }
    assert_eq!(JoinFailure::from_code(0), None);
    assert_eq!(JoinFailure::from_code(200), None);
}

#[test]
fn a_password_longer_than_any_room_cannot_be_asked() {
    let client = addr(1);
    let ask = RemoteJoin::new(1, RoomId(1), client, b"pw").unwrap();
    assert_eq!(ask.password(), b"pw");
    assert!(RemoteJoin::new(1, RoomId(1), client, &[b'x'; MAX_PASSWORD]).is_some());
    assert!(RemoteJoin::new(1, RoomId(1), client, &[b'x'; MAX_PASSWORD + 1]).is_none());
}
