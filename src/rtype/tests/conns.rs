//! Unit tests of the TCP lobby's connection records against hostile clients:
//! the handshake deadline, the eviction order, the request rate, and the output queue after
//! a burst. Same virtual clock and harness as `parties.rs`.

use std::time::Duration;

use super::harness::{name, to, Harness};
use super::parties::{closed, config, error};
use crate::rtype::{
    CloseCause, ConnClose, ConnId, Output, PartyConfig, RtypeConfig, TcpError, TcpMessage,
    TcpRequest, Violation, OUTPUT_KEEP,
};

const SEC: Duration = Duration::from_secs(1);

#[test]
fn a_pending_connection_is_closed_at_the_handshake_deadline_whatever_it_sends() {
    let mut h = Harness::new(config());
    h.open(1);
    h.open(2);
    // Connection 1 keeps sending complete, valid frames that never get it a CONNECT_ACK.
    for _ in 0..12 {
        h.advance(Duration::from_millis(400));
        let out = h.req(1, TcpRequest::Connect { name: [0; 32] });
        assert_eq!(to(&out, 1), [error(TcpError::InvalidName)]);
    }
    // Connection 2 says who it is just in time.
    h.advance(Duration::from_millis(100));
    h.join(2, "InTime");
    let out = h.advance(Duration::from_millis(100));
    assert_eq!(closed(&out), [1], "{out:?}");
    assert_eq!(h.lobby.stats.tcp.closes(CloseCause::HandshakeTimeout), 1);
    // From its CONNECT_ACK on, connection 2 has the idle deadline instead.
    assert!(closed(&h.advance(20 * SEC)).is_empty());
    assert_eq!(closed(&h.advance(10 * SEC)), [2]);
    assert_eq!(h.lobby.stats.tcp.closes(CloseCause::Idle), 1);
}

#[test]
fn a_short_idle_timeout_closes_a_silent_pending_connection_first() {
    let mut h = Harness::new(RtypeConfig {
        idle_timeout: SEC,
        ..config()
    });
    h.open(1);
    assert_eq!(closed(&h.advance(SEC)), [1]);
    assert_eq!(h.lobby.stats.tcp.closes(CloseCause::Idle), 1);
    assert_eq!(h.lobby.stats.tcp.closes(CloseCause::HandshakeTimeout), 0);
}

#[test]
fn the_oldest_pending_connection_is_offered_for_eviction() {
    let mut h = Harness::new(config());
    assert_eq!(h.lobby.oldest_pending_conn(), None);
    for conn in [7, 3, 5] {
        h.open(conn);
    }
    assert_eq!(h.lobby.oldest_pending_conn(), Some(ConnId(7)));
    h.req(
        7,
        TcpRequest::Connect {
            name: name("Seven"),
        },
    );
    assert_eq!(h.lobby.oldest_pending_conn(), Some(ConnId(3)));
    h.lobby.handle_tcp_closed(ConnId(3), ConnClose::PeerClosed);
    assert_eq!(h.lobby.oldest_pending_conn(), Some(ConnId(5)));
    h.lobby.handle_tcp_closed(ConnId(5), ConnClose::Evicted);
    assert_eq!(h.lobby.oldest_pending_conn(), None);
    assert!(h.drain().is_empty(), "a pending connection leaves silently");
    assert_eq!(h.lobby.stats.tcp.closes(CloseCause::Evicted), 1);
    // A member is never offered.
    assert!(h.lobby.tcp_conn_is_open(ConnId(7)));
    assert_eq!(h.lobby.tcp_conn_count(), 1);
}

#[test]
fn requests_over_the_rate_are_flood_violations_and_the_flooder_goes() {
    let mut h = Harness::new(config());
    h.join(1, "Flood");
    h.join(2, "Reader");
    let burst = PartyConfig::default().request_burst;
    // A burst's worth of requests at one instant (its CONNECT_REQ was the first) is served
    // ...
    for i in 1..burst {
        let out = h.req(1, TcpRequest::Ready(i % 2 == 1));
        assert_eq!(to(&out, 2).len(), 1, "request {i}");
    }
    // ... the next ones are ignored violations until the fifth closes the flooder.
    for i in 0..4 {
        let out = h.req(1, TcpRequest::Ready(i % 2 == 0));
        assert!(out.is_empty(), "{out:?}");
    }
    let out = h.req(1, TcpRequest::Start);
    assert_eq!(closed(&out), [1]);
    assert_eq!(to(&out, 2), [TcpMessage::PlayerLeft(1)]);
    let stats = &h.lobby.stats.tcp;
    assert_eq!(stats.violations_of(Violation::Flood), 5);
    assert_eq!(stats.closes(CloseCause::Violations), 1);
}

#[test]
fn the_rate_refills_and_disconnect_is_always_honoured() {
    let mut h = Harness::new(config());
    h.join(1, "A");
    h.join(2, "B");
    let party = PartyConfig::default();
    for i in 1..party.request_burst {
        h.req(1, TcpRequest::Ready(i % 2 == 1));
    }
    // A second later, a second's worth is allowed again.
    h.advance(SEC);
    for i in 0..party.request_rate {
        let out = h.req(1, TcpRequest::Ready(i % 2 == 1));
        assert_eq!(to(&out, 2).len(), 1, "request {i}");
    }
    assert_eq!(h.lobby.stats.tcp.violations_of(Violation::Flood), 0);
    let out = h.req(1, TcpRequest::Disconnect);
    assert_eq!(closed(&out), [1]);
    assert_eq!(h.lobby.stats.tcp.closes(CloseCause::Disconnect), 1);
}

#[test]
fn a_ready_that_changes_nothing_sends_nothing() {
    let mut h = Harness::new(config());
    h.join(1, "A");
    h.join(2, "B");
    assert!(h.req(1, TcpRequest::Ready(false)).is_empty());
    let out = h.req(1, TcpRequest::Ready(true));
    let ready = TcpMessage::PlayerReady {
        slot: 1,
        ready: true,
    };
    assert_eq!((to(&out, 1), to(&out, 2)), (vec![ready], vec![ready]));
    assert!(h.req(1, TcpRequest::Ready(true)).is_empty());
}

/// A hostile client's burst: a 128 KiB burst of READY toggles into a 64-player party made
/// 2 million queued outputs (118 MB) that the queue kept. One member's burst now queues at
/// most its request burst times the party, and once drained the queue keeps at most
/// [`OUTPUT_KEEP`] records, even after every member bursts at once.
#[test]
fn a_burst_leaves_the_output_queue_bounded_and_gives_its_memory_back() {
    let players = 64u8;
    let mut h = Harness::new(RtypeConfig {
        max_players: players,
        party: PartyConfig {
            spawns: vec![(0.0, 0.0); usize::from(players)],
            ..PartyConfig::default()
        },
        ..config()
    });
    for conn in 1..=usize::from(players) {
        h.join(conn, &format!("P{conn}"));
    }
    let burst = PartyConfig::default().request_burst;
    // 32,768 READY_REQs (128 KiB) from one member, nobody draining in between.
    for i in 0..32_768u32 {
        h.lobby
            .handle_tcp_request(h.now, ConnId(1), TcpRequest::Ready(i % 2 == 0));
    }
    let queued = h.lobby.outputs.len();
    let bound = (burst as usize + 1) * usize::from(players) + 1;
    assert!(queued <= bound, "{queued} outputs queued (bound {bound})");
    assert!(h.drain().contains(&Output::CloseConn { conn: ConnId(1) }));
    // Every other member bursts at once, still without draining.
    for conn in 2..=usize::from(players) {
        for i in 0..burst {
            h.lobby
                .handle_tcp_request(h.now, ConnId(conn), TcpRequest::Ready(i % 2 == 0));
        }
    }
    let peak = h.lobby.outputs.capacity();
    assert!(peak > 4 * OUTPUT_KEEP, "the burst was {peak} records");
    h.drain();
    let kept = h.lobby.outputs.capacity();
    assert!(kept <= OUTPUT_KEEP, "{kept} records kept after the burst");
}
