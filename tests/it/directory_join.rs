//! JOIN_ROOM of another node's room through the room directory (docs/OPERATING.md "More than
//! one process"): asked of the room's owner over the Redis stream inboxes, answered by it
//! alone, then HELLO straight to the owner's instance port. Real sockets on loopback, a
//! private `redis-server` per test (`directory.rs`'s helpers), nodes in this process or as a
//! child process to kill with SIGKILL or stop with SIGSTOP. Clients bind distinct 127.0.0.x
//! sources: seats are reserved per address.

use crate::common;

use std::net::SocketAddr;
use std::process::Child;
use std::time::{Duration, Instant};

use common::*;
use lobbyd::config::{Config, InstancePorts};
use lobbyd::net::ServerHandle;

use crate::common::free_port;
use crate::directory::{
    create, list, lobby, node, node_config, nodes_up, until_listed, wait_up, Redis, JOIN,
    JOIN_FAILED, JOIN_SUCCESS, SHOW_WAIT,
};
use crate::udp_lobby::records;

const HELLO: u8 = 0x01;
const WELCOME: u8 = 0x02;
const LEAVE: u8 = 0x05;
const PEER_JOINED: u8 = 0x06;
const PEER_LEFT: u8 = 0x07;

/// The most a JOIN of a dead or stopped node's room may take to fail: the 250 ms ask
/// timeout and a loop pass.
const FAIL_WITHIN: Duration = Duration::from_millis(300);

/// The next datagram from `from` within `wait` (others are skipped).
fn recv_from(client: &UdpClient, from: SocketAddr, wait: Duration) -> Option<Vec<u8>> {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        match client.recv_within(left) {
            Some((bytes, source)) if source == from => return Some(bytes),
            Some(_) => {}
            None => return None,
        }
    }
}

/// JOIN_SUCCESS's room and port, or `None` for JOIN_FAILED (anything else fails).
fn outcome(reply: &[u8]) -> Option<(u32, u16)> {
    match reply[1] {
        JOIN_SUCCESS => Some((
            u32::from_be_bytes([reply[8], reply[9], reply[10], reply[11]]),
            u16::from_be_bytes([reply[12], reply[13]]),
        )),
        JOIN_FAILED => None,
        _ => panic!("not a JOIN reply: {reply:02x?}"),
    }
}

/// JOIN_ROOM of `room` through the node at `to`: its reply.
fn join(client: &UdpClient, to: SocketAddr, room: u32, seq: u16) -> Vec<u8> {
    client.send(to, &frame(0x01, JOIN, seq, &room.to_be_bytes()));
    recv_from(client, to, REPLY_WAIT).expect("a JOIN reply")
}

/// A node whose instances bind `port` only.
fn node_on_port(redis: &Redis, id: u8, port: u16) -> ServerHandle {
    start(Config {
        instance_ports: InstancePorts::Range { lo: port, hi: port },
        ..node_config(redis, id)
    })
}

/// S2: a JOIN of a node-1 room through node 2 is granted by node 1: JOIN_SUCCESS names the
/// room and node 1's instance port (its `--instance-ports` range), and a HELLO straight
/// there is WELCOMEd into the seat the owner reserved.
#[test]
fn a_join_through_another_node_is_granted_by_the_owner() {
    let Some(redis) = Redis::start("s2") else {
        return;
    };
    let port = free_port();
    let one = node_on_port(&redis, 1, port);
    let two = node(&redis, 2);
    for node in [&one, &two] {
        wait_up(node);
    }
    let creator = UdpClient::on("127.0.0.20");
    let (room, room_port) = create(&creator, lobby(&one));
    assert_eq!((room >> 24, room_port), (1, port));
    let joiner = UdpClient::on("127.0.0.21");
    let reply = join(&joiner, lobby(&two), room, 9);
    assert_eq!(
        reply,
        frame(
            0x02,
            JOIN_SUCCESS,
            9,
            &[&room.to_be_bytes()[..], &port.to_be_bytes()].concat()
        ),
        "JOIN_SUCCESS with node 1's port"
    );
    let instance = SocketAddr::from(([127, 0, 0, 1], port));
    creator.send(instance, &frame(0x01, HELLO, 1, &[]));
    assert_eq!(creator.recv(), frame(0x02, WELCOME, 1, &[1, 1, 4, 0]));
    joiner.send(instance, &frame(0x01, HELLO, 2, &[]));
    assert_eq!(joiner.recv(), frame(0x02, WELCOME, 2, &[2, 2, 4, 0]));
    let asker = snapshot(&two);
    assert_eq!(
        asker.counter("directory_remote_joins_total", "asked"),
        Some(1)
    );
    assert_eq!(
        asker.counter("directory_remote_joins_total", "granted"),
        Some(1)
    );
    assert_eq!(asker.counter("directory_rpc_timeouts_total", ""), Some(0));
    assert_eq!(
        snapshot(&one).counter("directory_asks_served_total", ""),
        Some(1)
    );
    // A room the owner does not have: refused by the owner, not timed out.
    let reply = join(&joiner, lobby(&two), 1 << 24 | 0xffff, 10);
    assert_eq!(reply, frame(0x02, JOIN_FAILED, 10, &[]));
    let asker = snapshot(&two);
    assert_eq!(
        asker.counter("directory_remote_joins_total", "refused"),
        Some(1)
    );
    assert_eq!(asker.counter("directory_rpc_timeouts_total", ""), Some(0));
}

/// S3: one free seat, six addresses JOIN it through three nodes at once, a thousand rounds:
/// exactly one success each round, and the owner's room is never over capacity. The winner
/// takes the seat (HELLO) and gives it back (LEAVE) before the next round.
#[test]
fn one_free_seat_is_granted_once_whichever_nodes_are_asked() {
    let Some(redis) = Redis::start("s3") else {
        return;
    };
    let port = free_port();
    let one = start(Config {
        max_players: 2,
        idle_timeout: Duration::from_secs(600),
        instance_ports: InstancePorts::Range { lo: port, hi: port },
        ..node_config(&redis, 1)
    });
    let nodes = [one, node(&redis, 2), node(&redis, 3)];
    for node in &nodes {
        wait_up(node);
    }
    let creator = UdpClient::on("127.0.0.30");
    let (room, _) = create(&creator, lobby(&nodes[0]));
    let instance = SocketAddr::from(([127, 0, 0, 1], port));
    creator.send(instance, &frame(0x01, HELLO, 1, &[]));
    assert_eq!(creator.recv(), frame(0x02, WELCOME, 1, &[1, 1, 2, 0]));
    let clients: Vec<UdpClient> = (31..37)
        .map(|n| UdpClient::on(&format!("127.0.0.{n}")))
        .collect();
    let rounds = 1000;
    let began = Instant::now();
    for round in 0..rounds {
        let seq = round as u16;
        // Client i asks node i % 3: two through the owner, four through the others.
        for (i, client) in clients.iter().enumerate() {
            client.send(
                lobby(&nodes[i % 3]),
                &frame(0x01, JOIN, seq, &room.to_be_bytes()),
            );
        }
        let mut winners = Vec::new();
        for (i, client) in clients.iter().enumerate() {
            let reply = recv_from(client, lobby(&nodes[i % 3]), REPLY_WAIT).expect("a reply");
            if outcome(&reply).is_some() {
                winners.push(i);
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let view = snapshot(&nodes[0]);
        for r in &view.rooms {
            assert!(
                r.members + r.reservations <= r.max_players,
                "round {round}: room {:?} over capacity",
                r.room
            );
        }
        let winner = &clients[winners[0]];
        winner.send(instance, &frame(0x01, HELLO, 2, &[]));
        assert_eq!(winner.recv(), frame(0x02, WELCOME, 2, &[2, 2, 2, 0]));
        assert_eq!(winner.recv()[1], PEER_JOINED);
        winner.send(instance, &frame(0x01, LEAVE, 3, &[]));
        // The creator hears the winner come and go: the seat is free again.
        assert_eq!(creator.recv()[1], PEER_JOINED);
        assert_eq!(creator.recv()[1], PEER_LEFT);
    }
    eprintln!(
        "directory S3 (loaded test machine): {rounds} rounds of 6 JOINs through 3 nodes in {:?}",
        began.elapsed()
    );
    let timeouts: u64 = nodes
        .iter()
        .filter_map(|n| snapshot(n).counter("directory_rpc_timeouts_total", ""))
        .sum();
    assert_eq!(timeouts, 0);
}

/// Node `id` as a child process with a long seat timeout (so the creators' reservations
/// outlive the test and phantom ones would show in the counts).
fn child_node(redis: &Redis, id: u8) -> (Child, SocketAddr) {
    crate::directory::child_node(redis, id, &["--seat-timeout", "60"])
}

fn signal(child: &Child, name: &str) {
    let status = std::process::Command::new("kill")
        .args([name, &child.id().to_string()])
        .status()
        .expect("kill(1)");
    assert!(status.success(), "kill {name}");
}

/// A JOIN's room, its outcome (JOIN_SUCCESS's room and port) and how long its reply took.
type Joined = (u32, Option<(u32, u16)>, Duration);

/// JOINs of every room in `rooms` at once, each through `via` (by index), from `client`:
/// `(room, outcome, how long its reply took)`.
fn join_all(client: &UdpClient, via: &[SocketAddr], rooms: &[u32], seq: u16) -> Vec<Joined> {
    let sent = Instant::now();
    for (i, room) in rooms.iter().enumerate() {
        let to = via[i % via.len()];
        client.send(
            to,
            &frame(0x01, JOIN, seq.wrapping_add(i as u16), &room.to_be_bytes()),
        );
    }
    let mut out = vec![None; rooms.len()];
    while out.iter().any(Option::is_none) {
        let (reply, _) = client.recv_within(REPLY_WAIT).expect("every JOIN answered");
        let i = usize::from(u16::from_be_bytes([reply[2], reply[3]]).wrapping_sub(seq));
        if let Some(slot) = out.get_mut(i) {
            *slot = Some((rooms[i], outcome(&reply), sent.elapsed()));
        }
    }
    out.into_iter().flatten().collect()
}

/// S4, the join half: node 1 killed with SIGKILL during a join loop over every room of
/// three nodes: from then on every JOIN of its rooms fails within 300 ms and none names its
/// ports, while every JOIN of the other nodes' rooms succeeds.
#[test]
fn joins_of_a_killed_nodes_rooms_fail_fast() {
    let Some(redis) = Redis::start("s4j") else {
        return;
    };
    let (two, three) = nodes_up(&redis, 2, 3);
    let (mut child, one) = child_node(&redis, 1);
    let creator = UdpClient::on("127.0.0.40");
    let mut dead: Vec<(u32, u16)> = (0..3).map(|_| create(&creator, one)).collect();
    let live: Vec<u32> = (0..2)
        .map(|_| create(&creator, lobby(&two)).0)
        .chain((0..2).map(|_| create(&creator, lobby(&three)).0))
        .collect();
    let all_listed = |server: &ServerHandle| {
        until_listed(&creator, lobby(server), SHOW_WAIT, |ids| {
            dead.iter().all(|(r, _)| ids.contains(r)) && live.iter().all(|r| ids.contains(r))
        })
    };
    assert!(all_listed(&two).is_some() && all_listed(&three).is_some());
    let dead_ports: Vec<u16> = dead.iter().map(|(_, p)| *p).collect();
    let rooms: Vec<u32> = dead.drain(..).map(|(r, _)| r).chain(live.clone()).collect();
    let via = [lobby(&two), lobby(&three)];
    let joiner = UdpClient::on("127.0.0.41");
    // Before the kill: every room joinable through either node.
    for (room, result, _) in join_all(&joiner, &via, &rooms, 100) {
        assert!(result.is_some(), "room {room:#x} joined before the kill");
    }
    signal(&child, "-KILL");
    let _ = child.wait();
    let mut slowest = Duration::ZERO;
    for pass in 0..5u16 {
        for (room, result, took) in join_all(&joiner, &via, &rooms, 200 + pass * 16) {
            if room >> 24 == 1 {
                assert!(
                    result.is_none(),
                    "room {room:#x} of the killed node granted"
                );
                assert!(took <= FAIL_WITHIN, "room {room:#x} failed after {took:?}");
                slowest = slowest.max(took);
            } else {
                let (_, port) = result.unwrap_or_else(|| panic!("room {room:#x} refused"));
                assert!(!dead_ports.contains(&port));
            }
        }
    }
    eprintln!(
        "directory S4 (loaded test machine): JOINs of a killed node's rooms failed within \
         {slowest:?}"
    );
}

/// S5: node 1 stopped (SIGSTOP) for 5 s, then resumed: JOINs of its rooms through node 2
/// fail within 300 ms while it is stopped; its rooms leave node 2's list, and are listed
/// again within 1.5 s of SIGCONT, with no phantom seat from the asks it missed; an idle
/// node (node 3, no change all along) stays listed.
#[test]
fn a_stopped_node_resumes_without_phantom_seats() {
    let Some(redis) = Redis::start("s5") else {
        return;
    };
    let (two, three) = nodes_up(&redis, 2, 3);
    let (mut child, one) = child_node(&redis, 1);
    let creator = UdpClient::on("127.0.0.50");
    let (room, _) = create(&creator, one);
    let (idle_room, _) = create(&creator, lobby(&three));
    let shown = until_listed(&creator, lobby(&two), SHOW_WAIT, |ids| {
        ids.contains(&room) && ids.contains(&idle_room)
    });
    assert!(shown.is_some(), "both rooms listed on node 2");
    signal(&child, "-STOP");
    let stopped = Instant::now();
    // Asks from three addresses while it is stopped: each fails fast.
    let askers: Vec<UdpClient> = (51..54)
        .map(|n| UdpClient::on(&format!("127.0.0.{n}")))
        .collect();
    for (i, asker) in askers.iter().enumerate() {
        let sent = Instant::now();
        let reply = join(asker, lobby(&two), room, i as u16);
        assert_eq!(outcome(&reply), None, "a stopped node's room granted");
        assert!(
            sent.elapsed() <= FAIL_WITHIN,
            "failed after {:?}",
            sent.elapsed()
        );
    }
    let gone = until_listed(&creator, lobby(&two), Duration::from_secs(5), |ids| {
        !ids.contains(&room)
    });
    assert!(gone.is_some(), "the stopped node's room left the list");
    assert!(
        list(&creator, lobby(&two)).contains(&idle_room),
        "the idle node stays listed"
    );
    std::thread::sleep(Duration::from_secs(5).saturating_sub(stopped.elapsed()));
    signal(&child, "-CONT");
    let resumed = Instant::now();
    let back = until_listed(&creator, lobby(&two), Duration::from_secs(5), |ids| {
        ids.contains(&room)
    });
    let back = back.expect("listed again");
    eprintln!("directory S5 (loaded test machine): listed again {back:?} after SIGCONT");
    assert!(
        back <= Duration::from_millis(1500),
        "listed again after {back:?}"
    );
    // Only the creator's seat: the three asks it missed reserved nothing.
    std::thread::sleep(Duration::from_millis(300));
    creator.send(lobby(&two), &frame(0x01, 0x40, 77, &[]));
    let listed = records(&recv_from(&creator, lobby(&two), REPLY_WAIT).expect("a list"));
    let record = listed.iter().find(|r| r.0 == room).expect("listed");
    assert_eq!(record.1, 1, "players of the resumed node's room");
    // And it serves asks again.
    let reply = join(&askers[0], lobby(&two), room, 99);
    assert!(outcome(&reply).is_some(), "granted once resumed");
    let _ = resumed;
    let _ = child.kill();
    let _ = child.wait();
}
