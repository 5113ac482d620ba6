//! Hostile clients against the R-Type TCP lobby over loopback:
//! connections that never finish their CONNECT_REQ must not hold the lobby full, and a member
//! flooding its party must be the only one to pay for it, and when `--tcp-memory-budget` is
//! full the member holding the most queued bytes goes, never one that reads
//! (`docs/protocols/tcp-lobby.md`, "Server behaviour").

use crate::common;
use crate::common::tcp_client;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use lobbyd::config::Config;
use lobbyd::rtype::{CloseCause, Violation};
use tcp_client::frame;
use tcp_client::*;

/// The default `--handshake-timeout`.
const HANDSHAKE: Duration = Duration::from_secs(5);

/// A connection that announces an oversized CONNECT_REQ (`10 ff ff`) and then trickles its
/// payload, one byte at a time, never completing a frame.
struct Trickler {
    stream: TcpStream,
    opened: Instant,
    closed: Option<Duration>,
}

impl Trickler {
    fn open(addr: SocketAddr) -> Trickler {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream
            .write_all(&[CONNECT_REQ, 0xFF, 0xFF])
            .expect("header");
        stream.set_nonblocking(true).unwrap();
        Trickler {
            stream,
            opened: Instant::now(),
            closed: None,
        }
    }

    /// One more byte of the payload, and a look at whether the server has closed.
    fn trickle(&mut self) {
        if self.closed.is_some() {
            return;
        }
        let _ = self.stream.write(&[0xAB]);
        let mut buf = [0u8; 64];
        match self.stream.read(&mut buf) {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            // EOF, a reset, or bytes (it is owed none): the server let it go.
            _ => self.closed = Some(self.opened.elapsed()),
        }
    }
}

/// A crowd that sends the header of an oversized frame and then one byte
/// at a time took every seat and kept it (any byte reset the idle timer). Now a connection
/// holds no seat before its CONNECT_ACK, and `--handshake-timeout` closes it whatever it
/// trickles.
#[test]
fn trickling_connections_hold_no_seat_and_are_closed_at_the_handshake_deadline() {
    let (server, addr) = start_with(Config {
        max_rooms: 1,
        max_players: 2,
        spawns: vec![(0.0, 0.0); 2],
        ..tcp_config()
    });
    let mut crowd: Vec<Trickler> = (0..4).map(|_| Trickler::open(addr)).collect();
    for t in crowd.iter_mut() {
        t.trickle();
    }
    // The only party's two seats are free for players who do say who they are.
    let mut alice = Client::connect(addr);
    let mut bob = Client::connect(addr);
    let (hash_a, slot_a) = alice.join("Alice");
    let (hash_b, slot_b) = bob.join("Bob");
    assert_eq!((slot_a, slot_b), (1, 2));
    alice.expect(&player_join(1, hash_a, "Alice", false));
    alice.expect(&player_join(2, hash_b, "Bob", false));
    bob.expect(&player_join(1, hash_a, "Alice", false));
    bob.expect(&player_join(2, hash_b, "Bob", false));

    let deadline = Instant::now() + HANDSHAKE + Duration::from_secs(4);
    while crowd.iter().any(|t| t.closed.is_none()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        for t in crowd.iter_mut() {
            t.trickle();
        }
    }
    for t in &crowd {
        let at = t.closed.expect("a trickling connection is still open");
        assert!(
            at >= HANDSHAKE - Duration::from_millis(500) && at < HANDSHAKE + Duration::from_secs(2),
            "closed {at:?} after connecting"
        );
    }
    let snap = eventually(&server, REPLY_WAIT, |s| {
        s.lobby.tcp.closes(CloseCause::HandshakeTimeout) == 4
    });
    let tcp = &snap.lobby.tcp;
    assert_eq!(tcp.closes(CloseCause::HandshakeTimeout), 4);
    assert_eq!(tcp.violations_of(Violation::Oversized), 4);
    assert_eq!(tcp.closes(CloseCause::LobbyFull), 0);
    // The players were never bothered.
    alice.send(&frame(READY_REQ, &[1]));
    bob.expect(&frame(PLAYER_READY, &[1, 1]));
}

/// At `--max-conns` the oldest connection without CONNECT_ACK is closed
/// to make room for a newcomer; members are never evicted.
#[test]
fn at_max_conns_the_oldest_connection_without_connect_ack_makes_room() {
    let (server, addr) = start_with(Config {
        max_conns: 3,
        ..tcp_config()
    });
    let mut member = Client::connect(addr);
    let (hash, _) = member.join("Member");
    member.expect(&player_join(1, hash, "Member", false));
    let mut oldest = Client::connect(addr);
    std::thread::sleep(Duration::from_millis(50));
    let mut younger = Client::connect(addr);
    // Both silent connections are in the server's hands before the newcomer arrives.
    eventually(&server, REPLY_WAIT, |s| s.lobby.tcp.admitted == 3);
    let mut newcomer = Client::connect(addr);
    let (_, slot) = newcomer.join("Newcomer");
    assert_eq!(slot, 2);
    assert!(oldest.closed_within(REPLY_WAIT).unwrap().is_empty());
    younger.assert_silent();
    let join = member.recv();
    assert_eq!(&join[..4], &[PLAYER_JOIN, 42, 0, 2], "{join:02x?}");
    let snap = snapshot(&server);
    assert_eq!(snap.lobby.tcp.closes(CloseCause::Evicted), 1);
    assert!(snap
        .counters
        .contains(&("tcp_lobby_dropped_total", "evicted", 1)));
    // The younger one still gets its turn.
    assert_eq!(younger.join("Younger").1, 3);
}

/// What one reader of a flooded party got: every frame until the flooder's PLAYER_LEFT.
fn frames_until_left(reader: &mut Client, flooder_slot: u8) -> Vec<Vec<u8>> {
    let left = frame(PLAYER_LEFT, &[flooder_slot]);
    let mut frames = Vec::new();
    loop {
        let bytes = reader.recv();
        if bytes == left {
            return frames;
        }
        frames.push(bytes);
    }
}

/// A party flood: one member writes 14,000 READY_REQs (56 KB) in one write. Every other
/// member reads promptly and must stay connected, getting what the RFC says: the flooder's
/// PLAYER_READY (once when the flag does not change, coalesced), then its PLAYER_LEFT when
/// it is dropped for flooding. A flooder that toggles its flag is dropped the same way, after
/// at most a burst's worth of PLAYER_READYs.
#[test]
fn a_flooding_member_is_dropped_and_its_readers_stay() {
    for toggle in [false, true] {
        let (server, addr) = start_with(tcp_config());
        let (mut clients, _) = party(addr, &["Flood", "R1", "R2", "R3"]);
        let mut flood = Vec::with_capacity(14_000 * 4);
        for i in 0..14_000u32 {
            let flag = if toggle { (i % 2 == 0) as u8 } else { 1 };
            flood.extend_from_slice(&frame(READY_REQ, &[flag]));
        }
        assert_eq!(flood.len(), 56_000);
        let mut flooder = clients.remove(0);
        // The server may close it before it has taken every byte.
        let _ = flooder.stream.write_all(&flood);
        for reader in clients.iter_mut() {
            let frames = frames_until_left(reader, 1);
            assert!(!frames.is_empty() && frames.len() <= 64, "{}", frames.len());
            for (i, bytes) in frames.iter().enumerate() {
                let flag = if toggle { (i % 2 == 0) as u8 } else { 1 };
                assert_eq!(bytes, &frame(PLAYER_READY, &[1, flag]), "frame {i}");
            }
            if !toggle {
                assert_eq!(frames.len(), 1, "an unchanged flag is not announced again");
            }
        }
        assert!(flooder.closed_within(REPLY_WAIT).is_ok());
        // Every reader is still in the party and served.
        clients[0].send(&frame(READY_REQ, &[1]));
        for reader in clients.iter_mut() {
            reader.expect(&frame(PLAYER_READY, &[2, 1]));
        }
        let snap = snapshot(&server);
        let tcp = &snap.lobby.tcp;
        assert!(tcp.violations_of(Violation::Flood) >= 1, "{tcp:?}");
        assert_eq!(tcp.closes(CloseCause::Violations), 1, "{tcp:?}");
        assert_eq!(tcp.closes(CloseCause::SlowReader), 0, "{tcp:?}");
        assert!(snap
            .counters
            .contains(&("tcp_lobby_dropped_total", "slow_reader", 0)));
    }
}

/// `--tcp-memory-budget` of the budget test (in bytes): far under one queue's 64 KiB cap, so a
/// member that does not read meets the budget first.
const TCP_BUDGET: usize = 24 * 1024;
/// Bytes Dave reads before he stops: more than the budget, so Carol always holds more.
const DAVE_READS: usize = 40 * 1024;
/// Threads joining and leaving the party.
const CHURNERS: usize = 4;

/// A member whose socket has a small receive buffer, so the kernel takes little of what it
/// does not read and its queue on the server grows sooner.
fn tight_client(addr: SocketAddr) -> Client {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
    socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
    socket.connect(&addr.into()).expect("connect");
    let stream: TcpStream = socket.into();
    stream.set_nodelay(true).unwrap();
    Client {
        stream,
        buf: Vec::new(),
    }
}

/// Joins the party and leaves it again until `stop`: each round sends every member a
/// PLAYER_JOIN and a PLAYER_LEFT (49 bytes), the only traffic a silent member is sent.
fn churn(addr: SocketAddr, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut stream) = TcpStream::connect(addr) else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(REPLY_WAIT));
        if stream.write_all(&connect_req("Churn")).is_err() {
            continue;
        }
        // CONNECT_ACK's header (or an ERROR's, when the party is full).
        let mut head = [0u8; 3];
        if stream.read_exact(&mut head).is_ok() {
            let _ = stream.write_all(&frame(DISCONNECT, &[]));
        }
    }
}

/// Reads every frame until `stop` and returns the client with the names of the players whose
/// PLAYER_LEFT it saw, in order (a slot is reused, so names are kept from PLAYER_JOIN).
fn read_lefts(mut client: Client, stop: &AtomicBool) -> (Client, Vec<String>) {
    let mut names = std::collections::HashMap::new();
    let mut lefts = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        while let Some(bytes) = client.take_frame() {
            match bytes[0] {
                PLAYER_JOIN => {
                    let name = &bytes[12..44];
                    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                    names.insert(bytes[3], String::from_utf8_lossy(&name[..end]).into_owned());
                }
                PLAYER_LEFT => lefts.push(names.remove(&bytes[3]).unwrap_or_default()),
                _ => {}
            }
        }
        if let Fill::Closed = client.fill(Instant::now() + Duration::from_millis(50)) {
            panic!("the reading member was dropped");
        }
    }
    (client, lefts)
}

/// Carol never reads, Dave stops reading after 40 KiB, Alice reads everything, while
/// newcomers join and leave their party. Once the kernel holds what it can for them, their
/// queues grow against `--tcp-memory-budget`: Carol, holding the most, is dropped first, then
/// Dave; Alice sees them leave in that order, is never dropped, and is still served.
#[test]
fn a_full_memory_budget_drops_the_largest_holder_first_and_readers_stay() {
    let (server, addr) = start_with(Config {
        max_rooms: 1,
        max_players: 8,
        spawns: vec![(0.0, 0.0); 8],
        conn_rate: 1_000_000,
        tcp_memory_budget: TCP_BUDGET,
        ..tcp_config()
    });
    let mut alice = Client::connect(addr);
    assert_eq!(alice.join("Alice").1, 1);
    let mut carol = tight_client(addr);
    assert_eq!(carol.join("Carol").1, 2);
    let mut dave = tight_client(addr);
    assert_eq!(dave.join("Dave").1, 3);

    let stop = Arc::new(AtomicBool::new(false));
    let alice_reads = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || read_lefts(alice, &stop))
    };
    let dave_reads = thread::spawn(move || {
        let mut read = 0;
        while read < DAVE_READS {
            let before = dave.buf.len();
            if let Fill::Closed = dave.fill(Instant::now() + Duration::from_secs(30)) {
                panic!("dave dropped while reading");
            }
            read += dave.buf.len() - before;
        }
        dave
    });
    let churners: Vec<_> = (0..CHURNERS)
        .map(|_| {
            let stop = Arc::clone(&stop);
            thread::spawn(move || churn(addr, &stop))
        })
        .collect();

    let drops =
        |s: &lobbyd::metrics::Snapshot| s.counter("tcp_lobby_dropped_total", "memory_budget");
    let deadline = Instant::now() + Duration::from_secs(60);
    while drops(&snapshot(&server)) != Some(2) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    for churner in churners {
        churner.join().unwrap();
    }
    let (mut alice, lefts) = alice_reads.join().unwrap();
    let mut dave = dave_reads.join().unwrap();

    let snap = snapshot(&server);
    assert_eq!(drops(&snap), Some(2), "{:?}", snap.counters);
    assert_eq!(
        snap.counter("tcp_lobby_dropped_total", "slow_reader"),
        Some(0)
    );
    assert_eq!(snap.lobby.tcp.closes(CloseCause::SlowReader), 2);
    // The largest holder went first.
    let watched: Vec<&str> = (lefts.iter().map(String::as_str))
        .filter(|&name| name != "Churn")
        .collect();
    assert_eq!(watched, ["Carol", "Dave"]);
    // Both were closed after what the kernel held for them; neither got everything.
    let carol_got = carol.closed_within(REPLY_WAIT).expect("carol closed");
    let dave_got = dave.closed_within(REPLY_WAIT).expect("dave closed");
    assert!(!carol_got.is_empty() && !dave_got.is_empty());
    // Alice is still in her party and served.
    alice.send(&frame(READY_REQ, &[1]));
    let ready = frame(PLAYER_READY, &[1, 1]);
    while alice.recv() != ready {}
}
