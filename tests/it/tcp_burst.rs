//! A burst of connections at each TCP front end (the TCP lobby, the Warzone master server,
//! the general lobby), opened at once and then abandoned past the handshake deadline: every
//! one is accepted and every one is closed, gauges back to 0 (the loop accepts a
//! bounded batch per pass and releases closed sockets a slice per pass, `src/net/io/pass.rs`;
//! this proves nothing is lost by the slicing: the listener is edge-triggered, so a backlog
//! left after a batch must be served without a new event).

use crate::common;
use crate::common::tcp_client;

use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use lobbyd::config::{Config, GeneralSettings, WzSettings};
use lobbyd::metrics::Snapshot;
use lobbyd::net::ServerHandle;
use tcp_client::Client;

/// `--handshake-timeout` for these servers.
const HANDSHAKE: Duration = Duration::from_secs(2);
/// How long everything may take on a loaded 2-core machine.
const WAIT: Duration = Duration::from_secs(60);

fn config() -> Config {
    Config {
        udp_port: None,
        handshake_timeout: HANDSHAKE,
        ..test_config()
    }
}

/// Opens `count` connections to `addr` as fast as the kernel takes them, says nothing on
/// them, and waits until the server has closed every one (EOF or reset).
fn burst_and_abandon(addr: SocketAddr, count: usize) -> Vec<TcpStream> {
    let started = Instant::now();
    let crowd: Vec<TcpStream> = (0..count)
        .map(|i| {
            let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {i}: {e}"));
            stream.set_nonblocking(true).unwrap();
            stream
        })
        .collect();
    let mut open: Vec<bool> = vec![true; count];
    let mut buf = [0u8; 256];
    while open.iter().any(|&o| o) {
        assert!(
            started.elapsed() < WAIT,
            "{} of {count} connections still open after {WAIT:?}",
            open.iter().filter(|&&o| o).count()
        );
        for (stream, open) in crowd.iter().zip(open.iter_mut()).filter(|(_, o)| **o) {
            match (&*stream).read(&mut buf) {
                // Bytes (a goodbye) are read away; the end comes next.
                Ok(n) if n > 0 => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                _ => *open = false,
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        started.elapsed() >= HANDSHAKE - Duration::from_millis(100),
        "closed before the handshake deadline"
    );
    crowd
}

fn counter(snap: &Snapshot, name: &str) -> u64 {
    snap.counters
        .iter()
        .find(|(n, label, _)| *n == name && label.is_empty())
        .map_or(0, |&(_, _, value)| value)
}

/// Waits until `gauge` is 0 and returns the snapshot.
fn drained(server: &ServerHandle, gauge: impl Fn(&Snapshot) -> usize) -> Snapshot {
    let snap = eventually(server, WAIT, |s| gauge(s) == 0);
    assert_eq!(gauge(&snap), 0, "connections left");
    snap
}

#[test]
fn a_burst_at_the_tcp_lobby_is_all_accepted_and_all_closed() {
    const COUNT: usize = 2_000;
    let server = start(Config {
        tcp_port: Some(0),
        max_conns: 2 * COUNT,
        max_conns_per_ip: 2 * COUNT,
        conn_rate: 10 * COUNT as u32,
        ..config()
    });
    let addr = server.tcp_lobby_addr().expect("tcp lobby");
    let _crowd = burst_and_abandon(addr, COUNT);
    let snap = drained(&server, |s| s.tcp_connections.unwrap_or(usize::MAX));
    assert_eq!(counter(&snap, "tcp_lobby_accepted_total"), COUNT as u64);
    assert_eq!(
        snap.lobby
            .tcp
            .closes(lobbyd::rtype::CloseCause::HandshakeTimeout),
        COUNT as u64
    );
}

/// The classic trap, made certain: connections wait in the kernel's backlog while accepting
/// is paused (every seat signed in), then the members leave and accepting resumes with
/// more queued than one batch takes, and no newcomer arrives to raise a new edge. Every
/// queued connection must still be accepted (and closed at its deadline or evicted).
#[test]
fn a_backlog_left_when_accepting_resumes_is_served_without_a_new_event() {
    const MEMBERS: usize = 10;
    // More than one batch, and more than the 128 of mio's (and std's) default backlog: the
    // server asks for 1,024 (`net::LISTEN_BACKLOG`), so every connect completes at once.
    const QUEUED: usize = 300;
    let server = start(Config {
        tcp_port: Some(0),
        max_conns: MEMBERS,
        max_conns_per_ip: 10 * QUEUED,
        conn_rate: 10 * QUEUED as u32,
        ..config()
    });
    let addr = server.tcp_lobby_addr().expect("tcp lobby");
    let members: Vec<Client> = (0..MEMBERS)
        .map(|i| {
            let mut member = Client::connect(addr);
            member.join(&format!("M{i}"));
            member
        })
        .collect();
    let crowd: Vec<TcpStream> = (0..QUEUED)
        .map(|_| {
            let stream = TcpStream::connect(addr).expect("connect");
            stream.set_nonblocking(true).unwrap();
            stream
        })
        .collect();
    let snap = eventually(&server, WAIT, |s| {
        counter(s, "tcp_lobby_accept_paused_total") > 0
    });
    assert_eq!(counter(&snap, "tcp_lobby_accepted_total"), MEMBERS as u64);
    drop(members);
    let snap = eventually(&server, WAIT, |s| {
        counter(s, "tcp_lobby_accepted_total") == (MEMBERS + QUEUED) as u64
            && s.tcp_connections == Some(0)
    });
    assert_eq!(
        counter(&snap, "tcp_lobby_accepted_total"),
        (MEMBERS + QUEUED) as u64,
        "connections left in the backlog"
    );
    assert_eq!(snap.tcp_connections, Some(0));
    let mut buf = [0u8; 64];
    for stream in &crowd {
        stream.set_nonblocking(false).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        loop {
            match (&*stream).read(&mut buf) {
                Ok(n) if n > 0 => continue,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    panic!("a queued connection was never closed")
                }
                _ => break,
            }
        }
    }
}

#[test]
fn a_burst_at_the_warzone_master_server_is_all_accepted_and_all_closed() {
    const COUNT: usize = 1_000;
    let server = start(Config {
        wz: WzSettings {
            port: Some(0),
            max_conns: 2 * COUNT,
            max_conns_per_ip: 2 * COUNT,
            handshake_timeout: HANDSHAKE,
            ..WzSettings::default()
        },
        ..config()
    });
    let addr = server.wz_addr().expect("wz");
    let _crowd = burst_and_abandon(addr, COUNT);
    let snap = drained(&server, |s| {
        s.wz.as_ref().map_or(usize::MAX, |wz| wz.connections)
    });
    assert_eq!(counter(&snap, "wz_accepted_total"), COUNT as u64);
}

#[test]
fn a_burst_at_the_general_lobby_is_all_accepted_and_all_closed() {
    const COUNT: usize = 1_000;
    let defaults = GeneralSettings::default();
    let server = start(Config {
        general: GeneralSettings {
            port: Some(0),
            max_conns: 2 * COUNT,
            max_conns_per_ip: 2 * COUNT,
            conn_rate: 10 * COUNT as u32,
            memory_budget: defaults.memory_budget,
            core: lobbyd::general::GeneralConfig {
                sign_in_timeout: HANDSHAKE,
                ..defaults.core
            },
        },
        ..config()
    });
    let addr = server.general_addr().expect("general lobby");
    let _crowd = burst_and_abandon(addr, COUNT);
    let snap = drained(&server, |s| {
        s.general.as_ref().map_or(usize::MAX, |g| g.connections)
    });
    assert_eq!(counter(&snap, "general_accepted_total"), COUNT as u64);
}
