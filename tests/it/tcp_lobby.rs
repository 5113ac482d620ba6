//! The R-Type TCP lobby over real loopback sockets against an in-process server, asserting on
//! the bytes (`docs/protocols/tcp-lobby.md`). Expected frames are laid out by hand here, not
//! with the server's own emitters.

use crate::common;
use crate::common::tcp_client;

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use lobbyd::config::{Config, InstancePorts};
use lobbyd::rtype::{CloseCause, TcpError, Violation};
use tcp_client::frame;
use tcp_client::*;

fn countdown_value(bytes: &[u8]) -> f32 {
    assert_eq!(&bytes[..3], &[COUNTDOWN, 4, 0], "{bytes:02x?}");
    f32::from_le_bytes(bytes[3..7].try_into().unwrap())
}

/// Collects COUNTDOWN values until GAME_START; returns them and the GAME_START frame.
fn countdown_to_game_start(client: &mut Client) -> (Vec<f32>, Vec<u8>) {
    let mut values = Vec::new();
    loop {
        let bytes = client.recv();
        match bytes[0] {
            COUNTDOWN => values.push(countdown_value(&bytes)),
            GAME_START => return (values, bytes),
            other => panic!("unexpected type {other:#04x}: {bytes:02x?}"),
        }
    }
}

fn game_start_bytes(
    ip: &str,
    port: u16,
    players: &[(u8, u64, &str)],
    spawns: &[(f32, f32)],
) -> Vec<u8> {
    let mut payload = [0u8; 16].to_vec();
    payload[..ip.len()].copy_from_slice(ip.as_bytes());
    payload.extend_from_slice(&port.to_le_bytes());
    payload.push(players.len() as u8);
    for (slot, hash, name) in players {
        payload.push(*slot);
        payload.extend_from_slice(&hash.to_le_bytes());
        payload.extend_from_slice(&name_bytes(name));
    }
    for (x, y) in spawns {
        payload.extend_from_slice(&x.to_le_bytes());
        payload.extend_from_slice(&y.to_le_bytes());
    }
    frame(GAME_START, &payload)
}

fn game_port(bytes: &[u8]) -> u16 {
    u16::from_le_bytes([bytes[19], bytes[20]])
}

/// The instance HELLO with a token, and the message type and payload of its answer.
fn hello(udp: &UdpClient, port: u16, token: Option<u64>) -> (u8, Vec<u8>) {
    let payload = token.map(u64::to_le_bytes);
    let payload: &[u8] = payload.as_ref().map_or(&[], |p| p);
    udp.send(
        SocketAddr::from(([127, 0, 0, 1], port)),
        &common::frame(0x01, 0x01, 1, payload),
    );
    let reply = udp.recv();
    let n = reply.len();
    (reply[1], reply[8..n - 4].to_vec())
}

#[test]
fn two_players_through_game_start_exact_bytes() {
    // The close after GAME_START is shortened from its 5 s: the test needs its order (after
    // GAME_START, without PLAYER_LEFT) and that it is not immediate, not the full wait.
    let linger = Duration::from_secs(1);
    let (server, addr) = start_with(Config {
        countdown: Duration::from_secs(1),
        countdown_tick: Duration::from_millis(100),
        game_start_linger: linger,
        ..tcp_config()
    });
    let (mut clients, hashes) = party(addr, &["Alice", "Bob"]);
    ready_all(&mut clients);
    let snap = snapshot(&server);
    assert_eq!(snap.rooms.len(), 1);
    assert_eq!(snap.rooms[0].kind, "party");
    assert_eq!(snap.rooms[0].members, 2);
    assert_eq!(snap.rooms[0].port, None, "no socket while waiting");

    clients[1].send(&frame(START_REQ, &[]));
    let (values, game_start) = countdown_to_game_start(&mut clients[0]);
    let game_start_seen = Instant::now();
    let (values_b, game_start_b) = countdown_to_game_start(&mut clients[1]);
    let expected = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0];
    assert_eq!(values, expected);
    assert_eq!(values_b, expected);
    assert!(values.windows(2).all(|w| w[0] > w[1]));
    let port = game_port(&game_start);
    assert_ne!(port, 0);
    let players = [(1, hashes[0], "Alice"), (2, hashes[1], "Bob")];
    let spawns = [(100.0, 100.0), (100.0, 200.0)];
    assert_eq!(
        game_start,
        game_start_bytes("127.0.0.1", port, &players, &spawns)
    );
    assert_eq!(game_start_b, game_start);
    let snap = snapshot(&server);
    assert_eq!(snap.rooms[0].port, Some(port));
    assert_eq!(snap.lobby.tcp.games_started, 1);

    // The instance admits exactly these two hashes, each into its lobby slot.
    let stranger = UdpClient::on("127.0.0.3");
    for token in [None, Some(hashes[0] ^ 0xFF), Some(0)] {
        assert_eq!(hello(&stranger, port, token), (0x03, vec![3]), "{token:?}");
    }
    let bob = UdpClient::on("127.0.0.2");
    let (kind, welcome) = hello(&bob, port, Some(hashes[1]));
    assert_eq!((kind, welcome), (0x02, vec![2, 1, 4, 2]));
    let alice = UdpClient::on("127.0.0.1");
    let (kind, welcome) = hello(&alice, port, Some(hashes[0]));
    assert_eq!((kind, welcome), (0x02, vec![1, 2, 4, 2]));
    // A hash is used up: the same token from elsewhere is unknown now.
    assert_eq!(hello(&stranger, port, Some(hashes[0])), (0x03, vec![3]));

    // Alice leaves the TCP lobby herself; Bob hears nothing about it, and the server closes
    // Bob's connection the linger after GAME_START without a PLAYER_LEFT.
    drop(clients.remove(0));
    let frames = clients[0].closed_within(REPLY_WAIT).unwrap();
    assert!(frames.is_empty(), "{frames:02x?}");
    // The linger after GAME_START was sent, which was at or before we saw it.
    let after = game_start_seen.elapsed();
    assert!(after >= linger / 2, "closed {after:?} after GAME_START");
    let snap = eventually(&server, REPLY_WAIT, |s| {
        s.lobby.tcp.closes(CloseCause::Linger) == 1
    });
    assert_eq!(snap.lobby.tcp.closes(CloseCause::Linger), 1);
    assert_eq!(snap.lobby.tcp.closes(CloseCause::PeerClosed), 1);
}

#[test]
fn four_players_with_public_host() {
    let (_server, addr) = start_with(Config {
        public_host: Some(Ipv4Addr::new(203, 0, 113, 7)),
        spawns: vec![(1.5, -2.0), (3.0, 4.0), (5.0, 6.0), (7.0, 8.25)],
        ..tcp_config()
    });
    let names = ["Ann", "Ben", "Cid", "Dee"];
    let (mut clients, hashes) = party(addr, &names);
    ready_all(&mut clients);
    clients[3].send(&frame(START_REQ, &[]));
    let mut starts = Vec::new();
    for client in clients.iter_mut() {
        let (values, game_start) = countdown_to_game_start(client);
        assert_eq!(values.first(), Some(&1.0));
        assert_eq!(values.last(), Some(&0.0));
        assert_eq!(values.len(), 11);
        assert!(values.windows(2).all(|w| w[0] > w[1]), "{values:?}");
        starts.push(game_start);
    }
    let port = game_port(&starts[0]);
    let players: Vec<(u8, u64, &str)> =
        (0..4).map(|i| (i as u8 + 1, hashes[i], names[i])).collect();
    let expected = game_start_bytes(
        "203.0.113.7",
        port,
        &players,
        &[(1.5, -2.0), (3.0, 4.0), (5.0, 6.0), (7.0, 8.25)],
    );
    assert_eq!(expected.len(), 22 + 49 * 4);
    for start in &starts {
        assert_eq!(start, &expected);
    }
    // A fifth client opens a new party: slot 1 again.
    let mut fifth = Client::connect(addr);
    assert_eq!(fifth.join("Eve").1, 1);
}

#[test]
fn every_error_code() {
    // One room allowed, two seats. 0x03 (the connection stays and may retry), 0x06, 0x02,
    // 0x01 (the third CONNECT_REQ, refused and closed), 0x05, 0x04.
    let (server, addr) = start_with(Config {
        max_rooms: 1,
        max_players: 2,
        ..tcp_config()
    });
    let mut a = Client::connect(addr);
    let mut b = Client::connect(addr);
    a.send(&frame(CONNECT_REQ, &[0u8; 32]));
    a.expect(&error_msg(0x03, "Invalid name"));
    a.send(&connect_req("bad\nname"));
    a.expect(&error_msg(0x03, "Invalid name"));
    let (hash_a, _) = a.join("Alice");
    a.expect(&player_join(1, hash_a, "Alice", false));
    a.send(&frame(READY_REQ, &[1]));
    a.expect(&frame(PLAYER_READY, &[1, 1]));
    a.send(&frame(START_REQ, &[]));
    a.expect(&error_msg(0x06, "Minimum players not reached"));
    b.send(&connect_req("Alice"));
    b.expect(&error_msg(0x02, "Name already taken"));
    let (hash_b, _) = b.join("Bob");
    b.expect(&player_join(1, hash_a, "Alice", true));
    b.expect(&player_join(2, hash_b, "Bob", false));
    a.expect(&player_join(2, hash_b, "Bob", false));
    // A connection holds no seat before its CONNECT_REQ: the third is refused at it.
    let mut c = Client::connect(addr);
    c.send(&connect_req("Carl"));
    let frames = c.closed_within(REPLY_WAIT).unwrap();
    assert_eq!(frames, vec![error_msg(0x01, "Lobby full")]);
    a.send(&frame(START_REQ, &[]));
    a.expect(&error_msg(0x05, "Not all players ready"));
    b.send(&frame(READY_REQ, &[1]));
    a.expect(&frame(PLAYER_READY, &[2, 1]));
    b.expect(&frame(PLAYER_READY, &[2, 1]));
    b.send(&frame(START_REQ, &[]));
    assert_eq!(countdown_value(&a.recv()), 1.0);
    assert_eq!(countdown_value(&b.recv()), 1.0);
    a.send(&frame(START_REQ, &[]));
    a.send(&frame(READY_REQ, &[0]));
    // Both answered with 0x04, between countdown values.
    let mut errors = 0;
    while errors < 2 {
        let bytes = a.recv();
        if bytes[0] == ERROR_MSG {
            assert_eq!(bytes, error_msg(0x04, "Game already started"));
            errors += 1;
        }
    }
    let snap = snapshot(&server);
    for (error, n) in [
        (TcpError::LobbyFull, 1),
        (TcpError::InvalidName, 2),
        (TcpError::NameTaken, 1),
        (TcpError::NotEnoughPlayers, 1),
        (TcpError::NotAllReady, 1),
        (TcpError::GameStarted, 2),
    ] {
        assert_eq!(snap.lobby.tcp.errors_sent(error), n, "{error:?}");
    }
}

#[test]
fn no_game_instance_available_is_0xff_and_nothing_else() {
    // The only instance port is held by another socket, so binding fails.
    let foreign = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = foreign.local_addr().unwrap().port();
    let (server, addr) = start_with(Config {
        instance_ports: InstancePorts::Range { lo: port, hi: port },
        max_rooms: 4,
        ..tcp_config()
    });
    let (mut clients, _) = party(addr, &["A", "B"]);
    ready_all(&mut clients);
    clients[0].send(&frame(START_REQ, &[]));
    clients[0].expect(&error_msg(0xFF, "no game instance available"));
    clients[1].assert_silent();
    clients[0].assert_silent();
    let snap = snapshot(&server);
    assert_eq!(snap.rooms[0].state, lobbyd::rtype::RoomState::Waiting);
    // Once the port is free, the same START works.
    drop(foreign);
    clients[1].send(&frame(START_REQ, &[]));
    assert_eq!(countdown_value(&clients[0].recv()), 1.0);
}

#[test]
fn leaving_during_countdown_with_enough_players_goes_on() {
    let (_server, addr) = start_with(Config {
        countdown: Duration::from_secs(1),
        ..tcp_config()
    });
    let (mut clients, hashes) = party(addr, &["A", "B", "C"]);
    ready_all(&mut clients);
    clients[0].send(&frame(START_REQ, &[]));
    for client in clients.iter_mut() {
        assert_eq!(countdown_value(&client.recv()), 1.0);
    }
    clients[2].send(&frame(DISCONNECT, &[]));
    assert!(clients[2].closed_within(REPLY_WAIT).unwrap().is_empty());
    clients.truncate(2);
    for client in clients.iter_mut() {
        let mut saw_left = false;
        loop {
            let bytes = client.recv();
            match bytes[0] {
                PLAYER_LEFT => {
                    assert_eq!(bytes, frame(PLAYER_LEFT, &[3]));
                    saw_left = true;
                }
                COUNTDOWN => {}
                GAME_START => {
                    assert!(saw_left);
                    assert_eq!(bytes[21], 2, "two players in GAME_START");
                    assert_eq!(
                        u64::from_le_bytes(bytes[23..31].try_into().unwrap()),
                        hashes[0]
                    );
                    break;
                }
                _ => panic!("{bytes:02x?}"),
            }
        }
    }
}

#[test]
fn leaving_during_countdown_below_minimum_cancels() {
    let (server, addr) = start_with(Config {
        countdown: Duration::from_secs(1),
        min_players: 2,
        ..tcp_config()
    });
    let (mut clients, _) = party(addr, &["A", "B"]);
    ready_all(&mut clients);
    clients[1].send(&frame(START_REQ, &[]));
    for client in clients.iter_mut() {
        assert_eq!(countdown_value(&client.recv()), 1.0);
    }
    // B vanishes without DISCONNECT.
    drop(clients.pop());
    let a = &mut clients[0];
    loop {
        let bytes = a.recv();
        if bytes[0] == COUNTDOWN {
            continue;
        }
        assert_eq!(bytes, frame(PLAYER_LEFT, &[2]));
        break;
    }
    a.expect(&error_msg(0x06, "Minimum players not reached"));
    a.expect(&frame(PLAYER_READY, &[1, 0]));
    a.assert_silent();
    let snap = eventually(&server, REPLY_WAIT, |s| s.open_instances == 0);
    assert_eq!(snap.open_instances, 0, "instance released");
    assert_eq!(snap.rooms[0].state, lobbyd::rtype::RoomState::Waiting);
    assert_eq!(snap.lobby.tcp.countdowns_cancelled, 1);
}

#[test]
fn idle_connection_is_closed_and_announced() {
    let (server, addr) = start_with(Config {
        idle_timeout: Duration::from_millis(800),
        ..tcp_config()
    });
    // Before Quiet's last byte, so its close cannot come earlier than 800 ms after this.
    let started = Instant::now();
    let (mut clients, _) = party(addr, &["Quiet", "Chatty"]);
    let mut left = None;
    // Chatty keeps talking (READY toggles, starting with a change: a READY that changes
    // nothing is not answered) while Quiet says nothing.
    for round in 0..40 {
        let flag = (round + 1) % 2;
        clients[1].send(&frame(READY_REQ, &[flag]));
        loop {
            let bytes = clients[1].recv();
            if bytes[0] == PLAYER_LEFT {
                left = Some(bytes);
            } else {
                assert_eq!(bytes, frame(PLAYER_READY, &[2, flag]));
                break;
            }
        }
        if left.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(left, Some(frame(PLAYER_LEFT, &[1])));
    assert!(started.elapsed() >= Duration::from_millis(800));
    // Quiet got the PLAYER_READYs, then the close.
    let frames = clients[0].closed_within(REPLY_WAIT).unwrap();
    assert!(frames.iter().all(|f| f[0] == PLAYER_READY), "{frames:02x?}");
    assert_eq!(snapshot(&server).lobby.tcp.closes(CloseCause::Idle), 1);
}

#[test]
fn per_ip_connection_rate() {
    let (server, addr) = start_with(Config {
        conn_rate: 3,
        ..tcp_config()
    });
    let mut kept: Vec<Client> = (0..3).map(|_| Client::connect(addr)).collect();
    let mut over = Client::connect(addr);
    assert!(over.closed_within(REPLY_WAIT).unwrap().is_empty());
    // The three within the rate are served.
    for (i, client) in kept.iter_mut().enumerate() {
        assert_eq!(client.join(&format!("p{i}")).1, i as u8 + 1);
    }
    let snap = snapshot(&server);
    assert!(snap
        .counters
        .contains(&("tcp_lobby_refused_total", "conn_rate", 1)));
    assert_eq!(snap.lobby.tcp.admitted, 3);
}

#[test]
fn max_conns_per_ip() {
    let (server, addr) = start_with(Config {
        max_conns_per_ip: 2,
        ..tcp_config()
    });
    let _a = Client::connect(addr);
    let _b = Client::connect(addr);
    let mut c = Client::connect(addr);
    assert!(c.closed_within(REPLY_WAIT).unwrap().is_empty());
    let snap = snapshot(&server);
    assert!(snap
        .counters
        .contains(&("tcp_lobby_refused_total", "max_conns_per_ip", 1)));
}

#[test]
fn violations_are_ignored_then_fatal_and_oversized_payloads_skipped() {
    let (server, addr) = start_with(Config {
        max_violations: 5,
        ..tcp_config()
    });
    let mut other = Client::connect(addr);
    other.join("Other");
    other.recv();
    let mut bad = Client::connect(addr);
    // An oversized CONNECT_REQ (1000-byte payload) is skipped unread; the frame after it works.
    let mut bytes = vec![CONNECT_REQ, 0xE8, 0x03];
    bytes.extend(std::iter::repeat(b'A').take(1000));
    bytes.extend_from_slice(&connect_req("Bad"));
    bad.send(&bytes);
    let ack = bad.recv();
    assert_eq!(ack[0], CONNECT_ACK);
    assert_eq!(ack[11], 2);
    bad.recv(); // roster
    bad.recv(); // own join
    other.recv();
    // Unknown type, server-to-client type, wrong size: ignored, the connection stays.
    bad.send(&frame(0x42, &[1, 2]));
    bad.send(&frame(PLAYER_LEFT, &[1]));
    bad.send(&frame(READY_REQ, &[1, 1]));
    bad.send(&frame(READY_REQ, &[1]));
    bad.expect(&frame(PLAYER_READY, &[2, 1]));
    other.expect(&frame(PLAYER_READY, &[2, 1]));
    // The fifth violation (a second CONNECT_REQ) closes it; the other player is told.
    bad.send(&connect_req("Again"));
    assert!(bad.closed_within(REPLY_WAIT).unwrap().is_empty());
    other.expect(&frame(PLAYER_LEFT, &[2]));
    let snap = snapshot(&server);
    let tcp = &snap.lobby.tcp;
    for reason in [
        Violation::Oversized,
        Violation::UnknownType,
        Violation::WrongDirection,
        Violation::BadPayloadSize,
        Violation::AlreadyConnected,
    ] {
        assert_eq!(tcp.violations_of(reason), 1, "{reason:?}");
    }
    assert_eq!(tcp.closes(CloseCause::Violations), 1);
}

#[test]
fn frames_split_at_arbitrary_boundaries() {
    let (_server, addr) = start_with(tcp_config());
    let mut stream = connect_req("Split");
    stream.extend_from_slice(&frame(READY_REQ, &[1]));
    stream.extend_from_slice(&frame(READY_REQ, &[0]));
    let reference = {
        let mut client = Client::connect(addr);
        client.send(&stream);
        let frames: Vec<Vec<u8>> = (0..4).map(|_| client.recv()).collect();
        client.send(&frame(DISCONNECT, &[]));
        frames
    };
    for chunk in [1, 2, 5, 17, 34] {
        let mut client = Client::connect(addr);
        for piece in stream.chunks(chunk) {
            client.send(piece);
            std::thread::sleep(Duration::from_millis(2));
        }
        let frames: Vec<Vec<u8>> = (0..4).map(|_| client.recv()).collect();
        // Same frames but for the random hash.
        let mask = |f: &Vec<u8>| {
            let mut f = f.clone();
            if f[0] == CONNECT_ACK {
                f[3..11].fill(0);
            } else if f[0] == PLAYER_JOIN {
                f[4..12].fill(0);
            }
            f
        };
        assert_eq!(
            frames.iter().map(mask).collect::<Vec<_>>(),
            reference.iter().map(mask).collect::<Vec<_>>(),
            "chunks of {chunk}"
        );
        client.send(&frame(DISCONNECT, &[]));
        assert!(client.closed_within(REPLY_WAIT).unwrap().is_empty());
    }
}

#[test]
fn shutdown_notice_reaches_every_connection() {
    let (server, addr) = start_with(tcp_config());
    let (mut clients, _) = party(addr, &["A", "B"]);
    let mut pending = Client::connect(addr);
    std::thread::sleep(Duration::from_millis(100));
    server.shutdown().unwrap();
    for client in clients.iter_mut().chain(std::iter::once(&mut pending)) {
        let frames = client.closed_within(REPLY_WAIT).unwrap();
        assert_eq!(frames, vec![error_msg(0xFF, "server shutting down")]);
    }
}

#[test]
fn slow_reader_is_dropped_without_slowing_the_others() {
    let (server, addr) = start_with(tcp_config());
    // The slow client's tiny receive buffer makes the server's queue for it fill sooner.
    let slow_socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    slow_socket.set_recv_buffer_size(4096).unwrap();
    slow_socket.connect(&addr.into()).unwrap();
    let mut slow = Client {
        stream: slow_socket.into(),
        buf: Vec::new(),
    };
    let (_, slow_slot) = slow.join("Slow");
    let mut fast = Client::connect(addr);
    fast.join("Fast");
    while fast.recv_within(Duration::from_millis(200)).is_some() {}
    // Players come and go in the other seats, each costing the slow client a PLAYER_JOIN and a
    // PLAYER_LEFT it never reads (one member's own requests are rate-limited, so it takes
    // newcomers to fill a queue). Meanwhile the fast member toggles READY at a player's pace
    // and waits for its own PLAYER_READY each time: every round trip stays short even while
    // the slow queue fills up.
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut worst = Duration::ZERO;
            let mut rounds = 0u64;
            let mut dropped = false;
            let deadline = Instant::now() + Duration::from_secs(60);
            while !dropped && Instant::now() < deadline {
                let flag = ((rounds + 1) % 2) as u8;
                let sent = Instant::now();
                fast.send(&frame(READY_REQ, &[flag]));
                loop {
                    let bytes = fast.recv();
                    if bytes == frame(PLAYER_READY, &[2, flag]) {
                        break;
                    }
                    if bytes == frame(PLAYER_LEFT, &[slow_slot]) {
                        dropped = true;
                    }
                }
                worst = worst.max(sent.elapsed());
                rounds += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            done.store(true, Ordering::Relaxed);
            (fast, dropped, worst, rounds)
        })
    };
    let mut comings = 0u64;
    while !done.load(Ordering::Relaxed) {
        let mut visitor = Client::connect(addr);
        visitor.join(&format!("V{comings}"));
        visitor.send(&frame(DISCONNECT, &[]));
        comings += 1;
    }
    let (mut fast, dropped, worst, rounds) = watcher.join().unwrap();
    assert!(
        dropped,
        "slow reader never dropped after {comings} visitors"
    );
    assert!(
        worst < Duration::from_secs(2),
        "a round trip took {worst:?}"
    );
    let snap = snapshot(&server);
    assert!(snap
        .counters
        .contains(&("tcp_lobby_dropped_total", "slow_reader", 1)));
    assert_eq!(snap.lobby.tcp.closes(CloseCause::SlowReader), 1);
    // The fast one is still served.
    let flag = ((rounds + 1) % 2) as u8;
    fast.send(&frame(READY_REQ, &[flag]));
    // (Frames of the last visitors may still be queued ahead of the answer.)
    while fast.recv() != frame(PLAYER_READY, &[2, flag]) {}
    eprintln!(
        "slow reader dropped after {comings} visitors, {rounds} rounds, worst round trip {worst:?}"
    );
}

#[test]
fn accepting_pauses_at_max_conns_and_resumes_below_ninety_percent() {
    let (server, addr) = start_with(Config {
        max_conns: 2,
        ..tcp_config()
    });
    let mut a = Client::connect(addr);
    let mut b = Client::connect(addr);
    a.join("A");
    b.join("B");
    // The third waits in the kernel's backlog: connected, but nobody answers it.
    let mut c = Client::connect(addr);
    c.send(&connect_req("C"));
    c.assert_silent();
    let snap = snapshot(&server);
    assert!(snap
        .counters
        .contains(&("tcp_lobby_accept_paused_total", "", 1)));
    // One leaves: below 90% of 2, accepting resumes and the waiting client is served.
    a.send(&frame(DISCONNECT, &[]));
    assert_eq!(c.recv()[0], CONNECT_ACK);
}

#[test]
fn metrics_and_room_view_show_the_tcp_lobby() {
    use std::io::Read as _;
    let (server, addr) = start_with(Config {
        metrics: Some("127.0.0.1:0".parse().unwrap()),
        ..tcp_config()
    });
    let (_clients, _) = party(addr, &["A", "B"]);
    let mut http = TcpStream::connect(server.metrics_addr().unwrap()).unwrap();
    http.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    http.read_to_string(&mut text).unwrap();
    for line in [
        "lobbyd_tcp_lobby_accepted_total 2",
        "lobbyd_tcp_lobby_connected_total 2",
        "lobbyd_tcp_lobby_parties_opened_total 1",
        "lobbyd_tcp_lobby_refused_total{reason=\"conn_rate\"} 0",
        "lobbyd_tcp_lobby_violations_total{reason=\"oversized\"} 0",
        "lobbyd_tcp_lobby_errors_sent_total{error=\"lobby_full\"} 0",
        "lobbyd_tcp_lobby_closed_total{reason=\"slow_reader\"} 0",
        "lobbyd_players 2",
        "lobbyd_rooms{state=\"waiting\"} 1",
        "lobbyd_tcp_lobby_connections 2",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    }
    let mut http = TcpStream::connect(server.metrics_addr().unwrap()).unwrap();
    http.write_all(b"GET /rooms HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    http.read_to_string(&mut text).unwrap();
    assert!(
        text.ends_with(
            "[{\"id\":1,\"kind\":\"party\",\"state\":\"waiting\",\"port\":null,\"members\":2,\
             \"reservations\":0,\"max_players\":4}]\n"
        ),
        "{text}"
    );
}
