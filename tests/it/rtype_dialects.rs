//! The UDP room lobby in both its spellings on one port (`docs/protocols/udp-lobby.md`, the
//! seed's, and `docs/protocols/udp-lobby-upstream.md`, the upstream R-Type program's), over
//! real loopback sockets, asserting on the bytes: one room table seen by both, each reply in
//! the dialect of its request with its sequence id, passwords checked, RoomSetConfig after a
//! create or join, the 2048-byte bound of an upstream ROOM_LIST, and what is dropped and
//! counted without an answer.
//!
//! Upstream datagrams are built and checked with this file's own framing helper (not lobbyd's
//! emitters), and the captured and documented datagrams are written out byte for byte.

use crate::common;

use std::net::SocketAddr;

use common::*;
use lobbyd::config::Config;
use lobbyd::net::ServerHandle;
use lobbyd::rtype::JoinFailure;
use lobbyd::wire::udp_upstream::records::RecordLayout;

/// LIST_ROOMS, sequence 0, as captured from the upstream client.
const UPSTREAM_LIST_ROOMS: [u8; 21] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x42, 0x2f, 0x7b, 0x06,
];
/// The empty ROOM_LIST answering it.
const UPSTREAM_ROOM_LIST_EMPTY: [u8; 23] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x02, 0x41, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00,
    0x02, 0x00, 0x00, 0x08, 0xe7, 0x24, 0xb2,
];
/// v3 CREATE_ROOM, sequence 1: public, "Alpha", password "pw12".
const UPSTREAM_CREATE_ALPHA: [u8; 35] = [
    0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x01, 0x42, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0e, 0x00,
    0x0e, 0x00, 0x00, 0x05, 0x41, 0x6c, 0x70, 0x68, 0x61, 0x00, 0x04, 0x70, 0x77, 0x31, 0x32, 0x6c,
    0xde, 0x7d, 0x6b,
];

/// An upstream datagram: magic, version 1, the header fields, payload, CRC-32.
fn upstream(packet_type: u8, message_type: u8, seq: u16, payload: &[u8]) -> Vec<u8> {
    upstream_with_version(0x01, packet_type, message_type, seq, payload)
}

fn upstream_with_version(
    version: u8,
    packet_type: u8,
    message_type: u8,
    seq: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut bytes = vec![0xa3, 0x5f, 0xc8, 0x1d, version, packet_type, message_type];
    bytes.extend_from_slice(&seq.to_be_bytes());
    bytes.extend_from_slice(&[0, 0, 0, 0]);
    let size = payload.len() as u16;
    bytes.extend_from_slice(&size.to_be_bytes());
    bytes.extend_from_slice(&size.to_be_bytes());
    bytes.extend_from_slice(payload);
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_be_bytes());
    bytes
}

/// A seed-dialect datagram.
fn seed(packet_type: u8, message_type: u8, seq: u16, payload: &[u8]) -> Vec<u8> {
    frame(packet_type, message_type, seq, payload)
}

/// `roomId u32, port u16`.
fn room_port(room: u32, port: u16) -> Vec<u8> {
    let mut payload = room.to_be_bytes().to_vec();
    payload.extend_from_slice(&port.to_be_bytes());
    payload
}

/// The RoomSetConfig lobbyd sends after a create or join: upstream's default difficulty.
fn room_config(seq: u16, room: u32) -> Vec<u8> {
    let mut payload = room.to_be_bytes().to_vec();
    payload.extend_from_slice(&[0x01, 0x00, 0x64, 0x00, 0x64, 0x00, 0x64, 0x03]);
    upstream(0x02, 0x71, seq, &payload)
}

/// `passLen u16, password`.
fn string(bytes: &[u8]) -> Vec<u8> {
    let mut out = (bytes.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(bytes);
    out
}

/// A v3 JOIN_ROOM payload.
fn join_v3(room: u32, password: &[u8], spectator: u8) -> Vec<u8> {
    let mut payload = room.to_be_bytes().to_vec();
    payload.extend_from_slice(&string(password));
    payload.push(spectator);
    payload
}

/// A v3 ROOM_LIST record.
fn record_v3(room: u32, players: u16, port: u16, password: bool, name: &[u8]) -> Vec<u8> {
    let mut record = room.to_be_bytes().to_vec();
    record.push(0); // quick play
    record.extend_from_slice(&players.to_be_bytes());
    record.extend_from_slice(&4u16.to_be_bytes());
    record.extend_from_slice(&port.to_be_bytes());
    record.push(0); // waiting
    record.extend_from_slice(&[0, 0, 0, 0]); // owner
    record.extend_from_slice(&[u8::from(password), 0, 0]); // password, visibility, countdown
    record.extend_from_slice(&string(name));
    record.extend_from_slice(&[0, 0]); // no invite code
    record
}

/// A ROOM_LIST payload: the count, then the records.
fn list_payload(records: &[Vec<u8>]) -> Vec<u8> {
    let mut payload = (records.len() as u16).to_be_bytes().to_vec();
    for record in records {
        payload.extend_from_slice(record);
    }
    payload
}

fn server_with(records: RecordLayout) -> (ServerHandle, SocketAddr) {
    let config = Config {
        rtype_udp_records: records,
        ..test_config()
    };
    let server = start(config);
    let lobby = server.udp_lobby_addr().expect("udp lobby enabled");
    (server, lobby)
}

/// A seed CREATE_ROOM answered with ROOM_CREATED: the room and its port.
fn seed_create(client: &UdpClient, lobby: SocketAddr, seq: u16) -> (u32, u16) {
    client.send(lobby, &seed(0x01, 0x42, seq, &[]));
    let bytes = client.recv();
    assert_eq!(bytes.len(), 18, "ROOM_CREATED {bytes:02x?}");
    let room = u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    let port = u16::from_be_bytes([bytes[12], bytes[13]]);
    assert_eq!(bytes, seed(0x02, 0x43, seq, &room_port(room, port)));
    (room, port)
}

fn counter(server: &ServerHandle, name: &str, label: &str) -> u64 {
    snapshot(server)
        .counter(name, label)
        .unwrap_or_else(|| panic!("{name}{{{label}}} is reported"))
}

#[test]
fn upstream_list_rooms_gets_the_documented_empty_list() {
    let (_server, lobby) = server_with(RecordLayout::V3);
    let client = UdpClient::new();
    client.send(lobby, &UPSTREAM_LIST_ROOMS);
    assert_eq!(client.recv(), UPSTREAM_ROOM_LIST_EMPTY);
    client.assert_silent();
}

#[test]
fn one_lobby_two_spellings() {
    let (server, lobby) = server_with(RecordLayout::V3);
    let seed_client = UdpClient::on("127.0.0.2");
    let upstream_client = UdpClient::on("127.0.0.3");
    let joiner = UdpClient::on("127.0.0.4");

    // A room created in the seed's dialect is listed to an upstream client, named as
    // upstream names a room created without one.
    let (seed_room, seed_port) = seed_create(&seed_client, lobby, 7);
    upstream_client.send(lobby, &upstream(0x01, 0x40, 2, &[]));
    let one = list_payload(&[record_v3(seed_room, 1, seed_port, false, b"New Room")]);
    assert_eq!(upstream_client.recv(), upstream(0x02, 0x41, 2, &one));

    // The upstream client's CREATE_ROOM (the golden bytes, sequence 1): ROOM_CREATED, then
    // RoomSetConfig, both echoing its sequence id.
    upstream_client.send(lobby, &UPSTREAM_CREATE_ALPHA);
    let created = upstream_client.recv();
    assert_eq!(created.len(), 27, "ROOM_CREATED {created:02x?}");
    let alpha = u32::from_be_bytes([created[17], created[18], created[19], created[20]]);
    let alpha_port = u16::from_be_bytes([created[21], created[22]]);
    assert_eq!(alpha, seed_room + 1);
    assert_eq!(
        created,
        upstream(0x02, 0x43, 1, &room_port(alpha, alpha_port))
    );
    assert_eq!(upstream_client.recv(), room_config(1, alpha));

    // The seed client lists both, in its own 13-byte records.
    seed_client.send(lobby, &seed(0x01, 0x40, 8, &[]));
    let mut records = vec![0, 2];
    for (room, port) in [(seed_room, seed_port), (alpha, alpha_port)] {
        records.extend_from_slice(&room_port(room, 0)[..4]);
        records.extend_from_slice(&[0, 1, 0, 4]);
        records.extend_from_slice(&port.to_be_bytes());
        records.extend_from_slice(&[0, 0, 0]);
    }
    assert_eq!(seed_client.recv(), seed(0x02, 0x41, 8, &records));

    // The upstream list shows the password flag and the name.
    upstream_client.send(lobby, &upstream(0x01, 0x40, 3, &[]));
    let two = list_payload(&[
        record_v3(seed_room, 1, seed_port, false, b"New Room"),
        record_v3(alpha, 1, alpha_port, true, b"Alpha"),
    ]);
    assert_eq!(upstream_client.recv(), upstream(0x02, 0x41, 3, &two));

    // The password is checked: the seed's JOIN_ROOM offers none, an upstream one a wrong
    // one, a spectator is refused; the right one gets in.
    seed_client.send(lobby, &seed(0x01, 0x44, 9, &alpha.to_be_bytes()));
    assert_eq!(seed_client.recv(), seed(0x02, 0x46, 9, &[]));
    joiner.send(lobby, &upstream(0x01, 0x44, 4, &join_v3(alpha, b"pw13", 0)));
    assert_eq!(joiner.recv(), upstream(0x02, 0x46, 4, &[]));
    joiner.send(lobby, &upstream(0x01, 0x44, 5, &join_v3(alpha, b"pw12", 1)));
    assert_eq!(joiner.recv(), upstream(0x02, 0x46, 5, &[]));
    joiner.send(lobby, &upstream(0x01, 0x44, 6, &join_v3(alpha, b"pw12", 0)));
    assert_eq!(
        joiner.recv(),
        upstream(0x02, 0x45, 6, &room_port(alpha, alpha_port))
    );
    assert_eq!(joiner.recv(), room_config(6, alpha));

    // An upstream client joins the seed's room with the v1 form, and the seed client sees
    // the seat taken.
    joiner.send(lobby, &upstream(0x01, 0x44, 7, &seed_room.to_be_bytes()));
    assert_eq!(
        joiner.recv(),
        upstream(0x02, 0x45, 7, &room_port(seed_room, seed_port))
    );
    assert_eq!(joiner.recv(), room_config(7, seed_room));
    seed_client.send(lobby, &seed(0x01, 0x40, 10, &[]));
    let list = seed_client.recv();
    assert_eq!(
        &list[10..16],
        &[&seed_room.to_be_bytes()[..], &[0, 2]].concat()[..]
    );
    seed_client.assert_silent();
    upstream_client.assert_silent();
    joiner.assert_silent();

    let snap = snapshot(&server);
    assert_eq!(snap.lobby.join_failures(JoinFailure::BadPassword), 2);
    assert_eq!(snap.lobby.join_failures(JoinFailure::Spectator), 1);
    assert_eq!(snap.lobby.rooms_created, 2);
}

#[test]
fn v1_records_and_the_2048_byte_bound() {
    let config = Config {
        rtype_udp_records: RecordLayout::V1,
        max_rooms: 200,
        max_rooms_per_ip: 200,
        udp_rate: 10_000,
        udp_reply_bytes: 0,
        ..test_config()
    };
    let server = start(config);
    let lobby = server.udp_lobby_addr().expect("udp lobby enabled");
    let creator = UdpClient::on("127.0.0.5");
    let reader = UdpClient::on("127.0.0.6");
    let (first, first_port) = seed_create(&creator, lobby, 0);

    // One 11-byte record: roomId, playerCount, maxPlayers, port, state.
    reader.send(lobby, &UPSTREAM_LIST_ROOMS);
    let mut one = vec![0, 1];
    one.extend_from_slice(&first.to_be_bytes());
    one.extend_from_slice(&[0, 1, 0, 4]);
    one.extend_from_slice(&first_port.to_be_bytes());
    one.push(0);
    assert_eq!(reader.recv(), upstream(0x02, 0x41, 0, &one));

    // 190 rooms: the seed's list stops at 112 (1470 bytes), the upstream one at 184
    // records, 2047 bytes, what the upstream client's 2048-byte buffer holds.
    for seq in 1..190 {
        seed_create(&creator, lobby, seq);
    }
    reader.send(lobby, &seed(0x01, 0x40, 1, &[]));
    assert_eq!(reader.recv().len(), 14 + 13 * 112);
    reader.send(lobby, &upstream(0x01, 0x40, 2, &[]));
    let list = reader.recv();
    assert_eq!(list.len(), 23 + 11 * 184);
    assert_eq!(&list[17..19], &184u16.to_be_bytes());
    let crc = crc32fast::hash(&list[..list.len() - 4]);
    assert_eq!(&list[list.len() - 4..], &crc.to_be_bytes());
    drop(server);
}

#[test]
fn refused_create_is_an_empty_join_failed() {
    let config = Config {
        max_rooms: 1,
        ..test_config()
    };
    let server = start(config);
    let lobby = server.udp_lobby_addr().expect("udp lobby enabled");
    let client = UdpClient::on("127.0.0.7");
    // A name over the 32 bytes lobbyd keeps.
    let mut long = vec![0];
    long.extend_from_slice(&string(&[b'n'; 33]));
    long.extend_from_slice(&string(b""));
    client.send(lobby, &upstream(0x01, 0x42, 3, &long));
    assert_eq!(client.recv(), upstream(0x02, 0x46, 3, &[]));
    // v1's empty CREATE_ROOM creates; the next one is over --max-rooms.
    client.send(lobby, &upstream(0x01, 0x42, 4, &[]));
    let created = client.recv();
    assert_eq!(&created[..9], &upstream(0x02, 0x43, 4, &[0; 6])[..9]);
    assert_eq!(client.recv()[6], 0x71, "RoomSetConfig");
    client.send(lobby, &UPSTREAM_CREATE_ALPHA);
    assert_eq!(client.recv(), upstream(0x02, 0x46, 1, &[]));
    client.assert_silent();
    let snap = snapshot(&server);
    assert_eq!(snap.lobby.join_failures(JoinFailure::BadSettings), 1);
    assert_eq!(snap.lobby.join_failures(JoinFailure::MaxRooms), 1);
}

#[test]
fn malformed_and_unserved_datagrams_are_counted_and_not_answered() {
    let (server, lobby) = server_with(RecordLayout::V3);
    let client = UdpClient::on("127.0.0.8");
    let mut bad_crc = UPSTREAM_LIST_ROOMS;
    bad_crc[20] ^= 1;
    let mut bad_length = UPSTREAM_LIST_ROOMS.to_vec();
    bad_length.push(0);
    let dropped: Vec<(&str, Vec<u8>)> = vec![
        ("bad_checksum", bad_crc.to_vec()),
        (
            "compressed",
            upstream_with_version(0x81, 0x01, 0x40, 1, &[]),
        ),
        (
            "bad_version",
            upstream_with_version(0x02, 0x01, 0x40, 1, &[]),
        ),
        ("truncated", UPSTREAM_LIST_ROOMS[..20].to_vec()),
        ("bad_length", bad_length),
        ("bad_packet_type", upstream(0x02, 0x40, 1, &[])),
        ("wrong_direction", upstream(0x01, 0x46, 1, &[])),
        ("bad_payload_size", upstream(0x01, 0x44, 1, &[0, 0, 7])),
    ];
    for (reason, bytes) in &dropped {
        let before = counter(&server, "udp_upstream_dropped_total", reason);
        client.send(lobby, bytes);
        client.assert_silent();
        let after = counter(&server, "udp_upstream_dropped_total", reason);
        assert_eq!(after, before + 1, "{reason} not counted for {bytes:02x?}");
    }
    // Login, chat, leaderboard, the client's disconnect, a room config from a client.
    let unserved: [(&str, u8, &[u8]); 5] = [
        ("auth", 0x50, b"\x00\x05alice\x00\x06secret"),
        ("chat", 0x70, b"hello"),
        ("leaderboard", 0x73, b""),
        ("game", 0x07, b""),
        ("room", 0x71, &[0, 0, 0, 1, 1, 0, 100, 0, 100, 0, 100, 3]),
    ];
    for (family, code, payload) in unserved {
        let before = counter(&server, "udp_upstream_unserved_total", family);
        client.send(lobby, &upstream(0x01, code, 1, payload));
        client.assert_silent();
        let after = counter(&server, "udp_upstream_unserved_total", family);
        assert_eq!(after, before + 1, "{family} not counted");
    }
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("udp_upstream_datagrams_in_total", ""),
        Some((dropped.len() + unserved.len()) as u64)
    );
    // None of it reached the seed's parser or the core.
    assert_eq!(
        snap.counter("udp_lobby_dropped_total", "bad_packet_type"),
        Some(0)
    );
    assert_eq!(snap.lobby.list_requests, 0);
}
