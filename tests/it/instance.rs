//! Game instances over real loopback sockets: a whole relay session, asserting on the bytes.

use crate::common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use lobbyd::config::InstancePorts;

const HELLO: u8 = 0x01;
const WELCOME: u8 = 0x02;
const REJECT: u8 = 0x03;
const DATA: u8 = 0x04;
const LEAVE: u8 = 0x05;
const PEER_JOINED: u8 = 0x06;
const PEER_LEFT: u8 = 0x07;
const START: u8 = 0x08;
const COUNTDOWN: u8 = 0x09;
const STARTED: u8 = 0x0A;
const PING: u8 = 0x0B;
const PONG: u8 = 0x0C;

fn to_server(message_type: u8, seq: u16, payload: &[u8]) -> Vec<u8> {
    frame(0x01, message_type, seq, payload)
}

/// Message type and payload of a server datagram, after checking its framing.
fn parts(datagram: &[u8]) -> (u8, Vec<u8>) {
    assert!(datagram.len() >= 12, "short {datagram:02x?}");
    assert_eq!(datagram[0], 0x02, "packetType");
    let n = datagram.len();
    assert_eq!(
        &datagram[n - 4..],
        &crc32fast::hash(&datagram[..n - 4]).to_be_bytes()
    );
    assert_eq!(
        u16::from_be_bytes([datagram[4], datagram[5]]) as usize,
        n - 12
    );
    (datagram[1], datagram[8..n - 4].to_vec())
}

fn create_room(client: &UdpClient, lobby: SocketAddr) -> (u32, SocketAddr) {
    client.send(lobby, &frame(0x01, 0x42, 1, &[]));
    let bytes = client.recv();
    assert_eq!(bytes[1], 0x43, "ROOM_CREATED {bytes:02x?}");
    let room = u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    let port = u16::from_be_bytes([bytes[12], bytes[13]]);
    (room, SocketAddr::new(lobby.ip(), port))
}

#[test]
fn full_relay_session() {
    let port = free_port();
    let mut config = test_config();
    config.instance_ports = InstancePorts::Range { lo: port, hi: port };
    config.max_rooms = 1;
    config.countdown = Duration::from_secs(2);
    config.reap_grace = Duration::from_millis(200);
    let server = start(config);
    let lobby = server.udp_lobby_addr().unwrap();

    let alice = UdpClient::on("127.0.0.1");
    let bob = UdpClient::on("127.0.0.2");
    let carol = UdpClient::on("127.0.0.3");
    let dave = UdpClient::on("127.0.0.4");
    let (room, instance) = create_room(&alice, lobby);
    assert_eq!(instance.port(), port);

    // HELLO -> WELCOME(slot, playerCount, maxPlayers, state), echoing the sequence id.
    alice.send(instance, &to_server(HELLO, 0x0101, &[]));
    assert_eq!(alice.recv(), frame(0x02, WELCOME, 0x0101, &[1, 1, 4, 0]));
    // A repeated HELLO is answered again, the same way.
    alice.send(instance, &to_server(HELLO, 0x0101, &[]));
    assert_eq!(alice.recv(), frame(0x02, WELCOME, 0x0101, &[1, 1, 4, 0]));

    bob.send(lobby, &frame(0x01, 0x44, 2, &room.to_be_bytes()));
    assert_eq!(bob.recv()[1], 0x45, "JOIN_SUCCESS");
    bob.send(instance, &to_server(HELLO, 7, &[]));
    assert_eq!(bob.recv(), frame(0x02, WELCOME, 7, &[2, 2, 4, 0]));
    assert_eq!(parts(&bob.recv()), (PEER_JOINED, vec![1]));
    assert_eq!(parts(&alice.recv()), (PEER_JOINED, vec![2]));

    carol.send(instance, &to_server(HELLO, 1, &[]));
    assert_eq!(carol.recv(), frame(0x02, WELCOME, 1, &[3, 3, 4, 0]));
    assert_eq!(parts(&carol.recv()), (PEER_JOINED, vec![1]));
    assert_eq!(parts(&carol.recv()), (PEER_JOINED, vec![2]));
    assert_eq!(parts(&alice.recv()), (PEER_JOINED, vec![3]));
    assert_eq!(parts(&bob.recv()), (PEER_JOINED, vec![3]));

    // DATA to everyone: the others get DATA(sender slot, bytes) with the sender's seq.
    alice.send(instance, &to_server(DATA, 0x4242, &[0xFF, b'h', b'i']));
    let delivered = frame(0x02, DATA, 0x4242, &[1, b'h', b'i']);
    assert_eq!(bob.recv(), delivered);
    assert_eq!(carol.recv(), delivered);
    alice.assert_silent();

    // DATA to one slot.
    bob.send(instance, &to_server(DATA, 9, &[3, 0xde, 0xad]));
    assert_eq!(carol.recv(), frame(0x02, DATA, 9, &[2, 0xde, 0xad]));
    alice.assert_silent();
    // Non-members' DATA goes nowhere.
    dave.send(instance, &to_server(DATA, 9, &[0xFF, 1]));
    alice.assert_silent();
    bob.assert_silent();

    // The owner leaves: the others hear PEER_LEFT(1); bob (lowest slot) now owns the room.
    alice.send(instance, &to_server(LEAVE, 3, &[]));
    assert_eq!(parts(&bob.recv()), (PEER_LEFT, vec![1]));
    assert_eq!(parts(&carol.recv()), (PEER_LEFT, vec![1]));
    carol.send(instance, &to_server(START, 4, &[]));
    carol.assert_silent();
    let started_at = Instant::now();
    bob.send(instance, &to_server(START, 5, &[]));
    assert_eq!(parts(&bob.recv()), (COUNTDOWN, vec![2]));
    assert_eq!(parts(&carol.recv()), (COUNTDOWN, vec![2]));
    assert_eq!(parts(&bob.recv()), (COUNTDOWN, vec![1]));
    assert_eq!(parts(&bob.recv()), (STARTED, vec![]));
    assert!(started_at.elapsed() >= Duration::from_millis(1900));
    assert_eq!(parts(&carol.recv()), (COUNTDOWN, vec![1]));
    assert_eq!(parts(&carol.recv()), (STARTED, vec![]));

    // Playing: joins are refused on the instance and in the lobby.
    dave.send(instance, &to_server(HELLO, 6, &[]));
    assert_eq!(dave.recv(), frame(0x02, REJECT, 6, &[2]));
    dave.send(lobby, &frame(0x01, 0x44, 7, &room.to_be_bytes()));
    assert_eq!(dave.recv(), frame(0x02, 0x46, 7, &[]));
    dave.send(lobby, &frame(0x01, 0x40, 8, &[]));
    let list = dave.recv();
    assert_eq!(&list[10..14], &room.to_be_bytes());
    assert_eq!(list[20], 2, "listed as Playing");

    bob.send(instance, &to_server(PING, 0xBEEF, &[]));
    assert_eq!(bob.recv(), frame(0x02, PONG, 0xBEEF, &[]));

    // Everyone leaves: Finished, then reaped; the port goes back to the pool.
    bob.send(instance, &to_server(LEAVE, 1, &[]));
    assert_eq!(parts(&carol.recv()), (PEER_LEFT, vec![2]));
    carol.send(instance, &to_server(LEAVE, 1, &[]));
    // The room leaves the core's table before its socket is closed (after the event batch):
    // wait for both.
    let snap = eventually(&server, Duration::from_secs(5), |s| {
        s.rooms.is_empty() && s.open_instances == 0
    });
    assert!(snap.rooms.is_empty(), "room not reaped: {:?}", snap.rooms);
    assert_eq!(snap.open_instances, 0);
    dave.send(lobby, &frame(0x01, 0x40, 9, &[]));
    assert_eq!(dave.recv(), frame(0x02, 0x41, 9, &[0, 0]));
    let (room2, instance2) = create_room(&dave, lobby);
    assert_eq!(room2, room + 1, "ids are not reused");
    assert_eq!(instance2.port(), port, "port reused");
}

#[test]
fn silent_member_is_removed() {
    let mut config = test_config();
    config.idle_timeout = Duration::from_millis(600);
    let server = start(config);
    let lobby = server.udp_lobby_addr().unwrap();
    let quiet = UdpClient::on("127.0.0.1");
    let chatty = UdpClient::on("127.0.0.2");
    let (_, instance) = create_room(&quiet, lobby);
    quiet.send(instance, &to_server(HELLO, 1, &[]));
    quiet.recv();
    chatty.send(instance, &to_server(HELLO, 1, &[]));
    chatty.recv();
    chatty.recv(); // PEER_JOINED(1)
                   // chatty keeps pinging; quiet says nothing and is dropped after the idle timeout.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left = None;
    while Instant::now() < deadline && left.is_none() {
        chatty.send(instance, &to_server(PING, 2, &[]));
        while let Some((bytes, _)) = chatty.recv_within(Duration::from_millis(100)) {
            if bytes[1] == PEER_LEFT {
                left = Some(bytes);
            }
        }
    }
    let left = left.expect("PEER_LEFT for the silent member");
    assert_eq!(parts(&left), (PEER_LEFT, vec![1]));
    assert_eq!(snapshot(&server).lobby.idle_removed, 1);
}

#[test]
fn full_room_rejects_and_malformed_datagrams_are_counted() {
    let mut config = test_config();
    config.max_players = 1;
    let server = start(config);
    let lobby = server.udp_lobby_addr().unwrap();
    let owner = UdpClient::on("127.0.0.1");
    let (_, instance) = create_room(&owner, lobby);
    let stranger = UdpClient::on("127.0.0.2");
    // The creator's reservation holds the only seat.
    stranger.send(instance, &to_server(HELLO, 3, &[]));
    assert_eq!(stranger.recv(), frame(0x02, REJECT, 3, &[1]));
    owner.send(instance, &to_server(HELLO, 1, &[]));
    assert_eq!(owner.recv(), frame(0x02, WELCOME, 1, &[1, 1, 1, 0]));
    // Malformed: bad CRC, server-only type, HELLO with a 3-byte payload.
    let mut bad = to_server(PING, 1, &[]);
    bad[3] ^= 0xFF;
    owner.send(instance, &bad);
    owner.send(instance, &to_server(WELCOME, 1, &[1, 1, 1, 0]));
    owner.send(instance, &to_server(HELLO, 1, &[1, 2, 3]));
    owner.assert_silent();
    let snap = snapshot(&server);
    let dropped: u64 = snap
        .counters
        .iter()
        .filter(|(name, _, _)| *name == "instance_dropped_total")
        .map(|(_, _, value)| value)
        .sum();
    assert_eq!(dropped, 3);
    // The member is unaffected.
    owner.send(instance, &to_server(PING, 2, &[]));
    assert_eq!(owner.recv(), frame(0x02, PONG, 2, &[]));
}
