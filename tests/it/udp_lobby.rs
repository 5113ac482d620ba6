//! The UDP room lobby over real loopback sockets, asserting on the bytes.
//!
//! Expected replies are built with this file's own framing helper (not lobbyd's emitters),
//! so an emitter bug cannot hide behind a matching parser.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::*;
use lobbyd::config::InstancePorts;
use lobbyd::rtype::JoinFailure;
use lobbyd::wire::frame::Error as FrameError;

const LIST: u8 = 0x40;
const ROOM_LIST: u8 = 0x41;
const CREATE: u8 = 0x42;
const CREATED: u8 = 0x43;
const JOIN: u8 = 0x44;
const JOIN_SUCCESS: u8 = 0x45;
const JOIN_FAILED: u8 = 0x46;

fn lobby_addr(server: &lobbyd::net::ServerHandle) -> SocketAddr {
    server.udp_lobby_addr().expect("udp lobby enabled")
}

fn request(message_type: u8, seq: u16, payload: &[u8]) -> Vec<u8> {
    frame(0x01, message_type, seq, payload)
}

fn reply(message_type: u8, seq: u16, payload: &[u8]) -> Vec<u8> {
    frame(0x02, message_type, seq, payload)
}

/// Room records of a ROOM_LIST: (roomId, playerCount, maxPlayers, port, state).
pub(crate) fn records(datagram: &[u8]) -> Vec<(u32, u16, u16, u16, u8)> {
    assert!(datagram.len() >= 14, "short ROOM_LIST {datagram:02x?}");
    assert_eq!(&datagram[..2], &[0x02, ROOM_LIST]);
    let payload_size = u16::from_be_bytes([datagram[4], datagram[5]]) as usize;
    assert_eq!(datagram.len(), 12 + payload_size);
    assert_eq!(
        &datagram[6..8],
        &datagram[4..6],
        "originalSize = payloadSize"
    );
    let crc = crc32fast::hash(&datagram[..datagram.len() - 4]);
    assert_eq!(&datagram[datagram.len() - 4..], &crc.to_be_bytes());
    let count = u16::from_be_bytes([datagram[8], datagram[9]]) as usize;
    assert_eq!(payload_size, 2 + 13 * count);
    datagram[10..10 + 13 * count]
        .chunks(13)
        .map(|r| {
            assert_eq!(&r[11..13], &[0, 0], "reserved bytes of a record");
            (
                u32::from_be_bytes([r[0], r[1], r[2], r[3]]),
                u16::from_be_bytes([r[4], r[5]]),
                u16::from_be_bytes([r[6], r[7]]),
                u16::from_be_bytes([r[8], r[9]]),
                r[10],
            )
        })
        .collect()
}

fn create(client: &UdpClient, lobby: SocketAddr, seq: u16) -> (u32, u16) {
    client.send(lobby, &request(CREATE, seq, &[]));
    let bytes = client.recv();
    assert_eq!(bytes.len(), 18, "ROOM_CREATED {bytes:02x?}");
    let room = u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    let port = u16::from_be_bytes([bytes[12], bytes[13]]);
    let mut payload = room.to_be_bytes().to_vec();
    payload.extend_from_slice(&port.to_be_bytes());
    assert_eq!(bytes, reply(CREATED, seq, &payload));
    (room, port)
}

#[test]
fn list_empty_is_the_documented_bytes() {
    let server = start(test_config());
    let client = UdpClient::new();
    // The spec's golden request: ListRooms with sequence 0.
    let golden = [0x01, 0x40, 0, 0, 0, 0, 0, 0, 0xed, 0x83, 0xaa, 0x8e];
    assert_eq!(request(LIST, 0, &[]), golden);
    client.send(lobby_addr(&server), &golden);
    assert_eq!(client.recv(), reply(ROOM_LIST, 0, &[0, 0]));
}

#[test]
fn create_then_list_then_join() {
    let server = start(test_config());
    let lobby = lobby_addr(&server);
    let alice = UdpClient::new();
    let (room, port) = create(&alice, lobby, 7);
    assert_eq!(room, 1);
    // The port is a live socket: a HELLO there is answered.
    assert_ne!(port, 0);
    alice.send(lobby, &request(LIST, 0x1234, &[]));
    let list = alice.recv();
    assert_eq!(&list[2..4], &[0x12, 0x34], "sequence echoed");
    assert_eq!(records(&list), vec![(1, 1, 4, port, 0)]);
    let bob = UdpClient::on("127.0.0.2");
    bob.send(lobby, &request(JOIN, 99, &1u32.to_be_bytes()));
    let mut payload = 1u32.to_be_bytes().to_vec();
    payload.extend_from_slice(&port.to_be_bytes());
    assert_eq!(bob.recv(), reply(JOIN_SUCCESS, 99, &payload));
    bob.send(lobby, &request(LIST, 3, &[]));
    assert_eq!(records(&bob.recv()), vec![(1, 2, 4, port, 0)]);
    // Ids only grow.
    assert_eq!(create(&bob, lobby, 1).0, 2);
}

/// The driver re-sends an unchanged ROOM_LIST without rebuilding it: the same records under
/// each request's own sequence id and checksum; and a change made by a timer alone (a seat
/// reservation running out, then the empty room going) shows in the very next list.
#[test]
fn repeated_lists_are_exact_and_follow_timer_changes() {
    let mut config = test_config();
    config.seat_timeout = std::time::Duration::from_millis(300);
    config.reap_grace = std::time::Duration::ZERO;
    let server = start(config);
    let lobby = lobby_addr(&server);
    let alice = UdpClient::new();
    let (room, port) = create(&alice, lobby, 1);
    let mut record = room.to_be_bytes().to_vec();
    record.extend_from_slice(&1u16.to_be_bytes());
    record.extend_from_slice(&4u16.to_be_bytes());
    record.extend_from_slice(&port.to_be_bytes());
    // State Waiting, then two reserved zero bytes (docs/protocols/udp-lobby.md).
    record.extend_from_slice(&[0, 0, 0]);
    let mut payload = vec![0, 1];
    payload.extend_from_slice(&record);
    for seq in [10, 11, 0xffff] {
        alice.send(lobby, &request(LIST, seq, &[]));
        assert_eq!(alice.recv(), reply(ROOM_LIST, seq, &payload));
    }
    // Nobody reaches the instance: the reservation lapses and the room is reaped.
    let snap = eventually(&server, Duration::from_secs(5), |s| s.rooms.is_empty());
    assert!(snap.rooms.is_empty(), "room still alive: {:?}", snap.rooms);
    alice.send(lobby, &request(LIST, 12, &[]));
    assert_eq!(alice.recv(), reply(ROOM_LIST, 12, &[0, 0]));
}

#[test]
fn every_join_failed_reason() {
    let mut config = test_config();
    config.max_players = 1;
    config.countdown = Duration::ZERO;
    let server = start(config);
    let lobby = lobby_addr(&server);
    let client = UdpClient::new();
    let failed = |seq: u16| reply(JOIN_FAILED, seq, &[]);

    client.send(lobby, &request(JOIN, 1, &0u32.to_be_bytes()));
    assert_eq!(client.recv(), failed(1), "room id 0");
    client.send(lobby, &request(JOIN, 2, &77u32.to_be_bytes()));
    assert_eq!(client.recv(), failed(2), "unknown room");

    let (room, port) = create(&client, lobby, 3);
    let other = UdpClient::on("127.0.0.3");
    other.send(lobby, &request(JOIN, 4, &room.to_be_bytes()));
    assert_eq!(
        other.recv(),
        failed(4),
        "full: the creator's reservation holds the seat"
    );

    // The creator takes its seat and starts at once (countdown 0): the room is Playing.
    let player = UdpClient::new();
    let instance: SocketAddr = SocketAddr::new(lobby.ip(), port);
    player.send(instance, &frame(0x01, 0x01, 0, &[]));
    assert_eq!(player.recv()[1], 0x02, "WELCOME");
    player.send(instance, &frame(0x01, 0x08, 1, &[]));
    assert_eq!(player.recv(), frame(0x02, 0x0A, 0, &[]), "STARTED");
    other.send(lobby, &request(JOIN, 5, &room.to_be_bytes()));
    assert_eq!(other.recv(), failed(5), "playing");

    let snap = snapshot(&server);
    for reason in [
        JoinFailure::RoomZero,
        JoinFailure::NoSuchRoom,
        JoinFailure::Full,
        JoinFailure::NotJoinable,
    ] {
        assert_eq!(snap.lobby.join_failures(reason), 1, "{reason:?}");
    }
}

#[test]
fn max_rooms_and_no_bindable_port() {
    // One instance port, held by a foreign socket: CREATE_ROOM gets JOIN_FAILED.
    let foreign = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = foreign.local_addr().unwrap().port();
    let mut config = test_config();
    config.instance_ports = InstancePorts::Range { lo: port, hi: port };
    config.max_rooms = 1;
    let server = start(config);
    let lobby = lobby_addr(&server);
    let client = UdpClient::new();
    client.send(lobby, &request(CREATE, 1, &[]));
    assert_eq!(client.recv(), reply(JOIN_FAILED, 1, &[]));
    drop(foreign);
    let (_, got) = create(&client, lobby, 2);
    assert_eq!(got, port);
    client.send(lobby, &request(CREATE, 3, &[]));
    assert_eq!(client.recv(), reply(JOIN_FAILED, 3, &[]), "max rooms");
    let snap = snapshot(&server);
    assert_eq!(snap.lobby.join_failures(JoinFailure::NoInstancePort), 1);
    assert_eq!(snap.lobby.join_failures(JoinFailure::MaxRooms), 1);
}

#[test]
fn malformed_datagrams_are_dropped_silently_and_counted() {
    let server = start(test_config());
    let lobby = lobby_addr(&server);
    let client = UdpClient::new();
    let good = request(LIST, 5, &[]);
    let mut bad_crc = good.clone();
    bad_crc[11] ^= 1;
    let cases: Vec<(FrameError, Vec<u8>)> = vec![
        (FrameError::Truncated, good[..11].to_vec()),
        (FrameError::Truncated, vec![]),
        // payloadSize says 4 but the datagram has no payload.
        (
            FrameError::BadLength,
            frame_with_sizes(0x01, LIST, 1, 4, 4, &[]),
        ),
        (FrameError::BadChecksum, bad_crc),
        (FrameError::BadPacketType, frame(0x02, LIST, 1, &[])),
        (FrameError::BadPacketType, frame(0x00, LIST, 1, &[])),
        (
            FrameError::Compressed,
            frame_with_sizes(0x01, JOIN, 1, 4, 9, &1u32.to_be_bytes()),
        ),
        (FrameError::UnknownMessage, frame(0x01, 0x47, 1, &[])),
        (FrameError::UnknownMessage, frame(0x01, 0x00, 1, &[])),
        (
            FrameError::WrongDirection,
            frame(0x01, ROOM_LIST, 1, &[0, 0]),
        ),
        (FrameError::WrongDirection, frame(0x01, JOIN_FAILED, 1, &[])),
        (FrameError::BadPayloadSize, frame(0x01, LIST, 1, &[0])),
        (FrameError::BadPayloadSize, frame(0x01, JOIN, 1, &[0, 0, 1])),
        (
            FrameError::BadPayloadSize,
            frame(0x01, CREATE, 1, &[1, 2, 3, 4]),
        ),
    ];
    for (error, bytes) in &cases {
        let drops = |snap: lobbyd::metrics::Snapshot| {
            snap.counter("udp_lobby_dropped_total", error.as_str())
                .expect("counted by reason")
        };
        let before = drops(snapshot(&server));
        client.send(lobby, bytes);
        client.assert_silent();
        let after = drops(snapshot(&server));
        assert_eq!(after, before + 1, "{error:?} not counted for {bytes:02x?}");
    }
    // A JOIN_ROOM with originalSize 0 is accepted (0 means "not compressed").
    client.send(
        lobby,
        &frame_with_sizes(0x01, JOIN, 8, 4, 0, &9u32.to_be_bytes()),
    );
    assert_eq!(client.recv(), reply(JOIN_FAILED, 8, &[]));
    // The server is still fine for everyone.
    client.send(lobby, &good);
    assert_eq!(client.recv(), reply(ROOM_LIST, 5, &[0, 0]));
}

#[test]
fn rate_limit_drops_excess_requests_per_ip() {
    let mut config = test_config();
    config.udp_rate = 5; // burst 10
    let server = start(config);
    let lobby = lobby_addr(&server);
    let flooder = UdpClient::new();
    for seq in 0..40 {
        flooder.send(lobby, &request(LIST, seq, &[]));
    }
    let mut answered = 0;
    while flooder.recv_within(SILENCE_WAIT).is_some() {
        answered += 1;
    }
    // The burst of 10 plus whatever refilled while sending (5/s): far fewer than 40.
    assert!((10..=13).contains(&answered), "answered {answered}");
    let snap = snapshot(&server);
    assert_eq!(snap.lobby.rate_limited, 40 - answered as u64);
    // Another source address has its own bucket.
    let other = UdpClient::on("127.0.0.9");
    other.send(lobby, &request(LIST, 1, &[]));
    assert_eq!(other.recv(), reply(ROOM_LIST, 1, &[0, 0]));
}

#[test]
fn room_list_fits_one_datagram_joinable_first() {
    let mut config = test_config();
    config.max_rooms = 130;
    config.max_rooms_per_ip = 130;
    config.max_players = 1;
    config.udp_rate = 10_000;
    config.udp_reply_bytes = 0;
    let server = start(config);
    let lobby = lobby_addr(&server);
    let creator = UdpClient::new();
    for seq in 0..120 {
        create(&creator, lobby, seq);
    }
    let other = UdpClient::on("127.0.0.4");
    other.send(lobby, &request(LIST, 1, &[]));
    let list = other.recv();
    assert!(list.len() <= 1472, "{} bytes", list.len());
    assert_eq!(records(&list).len(), 112);
    assert_eq!(snapshot(&server).rooms.len(), 120);
}

#[test]
fn joinable_rooms_are_listed_first() {
    let mut config = test_config();
    config.max_players = 2;
    let server = start(config);
    let lobby = lobby_addr(&server);
    let a = UdpClient::on("127.0.0.10");
    let b = UdpClient::on("127.0.0.11");
    let (r1, _) = create(&a, lobby, 1);
    let (r2, _) = create(&b, lobby, 2);
    // r1 becomes full: its creator plus one joiner.
    let c = UdpClient::on("127.0.0.12");
    c.send(lobby, &request(JOIN, 3, &r1.to_be_bytes()));
    assert_eq!(c.recv()[1], JOIN_SUCCESS);
    c.send(lobby, &request(LIST, 4, &[]));
    let ids: Vec<u32> = records(&c.recv()).iter().map(|r| r.0).collect();
    assert_eq!(ids, vec![r2, r1]);
}
