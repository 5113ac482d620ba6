//! The metrics endpoint over loopback: after a scripted session the counters moved by exactly
//! the expected amounts, and /rooms lists the live rooms.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use common::*;

fn get(addr: SocketAddr, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(REPLY_WAIT)).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    (head.to_string(), body.to_string())
}

fn value(body: &str, sample: &str) -> u64 {
    body.lines()
        .find_map(|line| line.strip_prefix(sample)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no sample {sample} in\n{body}"))
}

#[test]
fn counters_move_by_exact_amounts() {
    let mut config = test_config();
    config.metrics = Some("127.0.0.1:0".parse().unwrap());
    let server = start(config);
    let metrics = server.metrics_addr().expect("metrics enabled");
    let lobby = server.udp_lobby_addr().unwrap();

    let (head, before) = get(metrics, "/metrics");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    let list = "lobbyd_udp_lobby_requests_total{reason=\"list_rooms\"}";
    let create = "lobbyd_udp_lobby_requests_total{reason=\"create_room\"}";
    let crc = "lobbyd_udp_lobby_dropped_total{reason=\"bad_checksum\"}";
    let no_room = "lobbyd_udp_lobby_join_failed_total{reason=\"no_such_room\"}";
    for sample in [list, create, crc, no_room] {
        assert_eq!(value(&before, sample), 0, "{sample}");
    }

    let client = UdpClient::new();
    for seq in 0..3 {
        client.send(lobby, &frame(0x01, 0x40, seq, &[]));
        client.recv();
    }
    client.send(lobby, &frame(0x01, 0x42, 9, &[]));
    client.recv();
    client.send(lobby, &frame(0x01, 0x44, 10, &77u32.to_be_bytes()));
    client.recv();
    let mut bad = frame(0x01, 0x40, 11, &[]);
    bad[9] ^= 0x40;
    client.send(lobby, &bad);
    client.assert_silent();

    let (_, after) = get(metrics, "/metrics");
    assert_eq!(value(&after, list), 3);
    assert_eq!(value(&after, create), 1);
    assert_eq!(value(&after, crc), 1);
    assert_eq!(value(&after, no_room), 1);
    assert_eq!(value(&after, "lobbyd_rooms{state=\"waiting\"}"), 1);
    assert_eq!(value(&after, "lobbyd_open_instances"), 1);
    assert_eq!(value(&after, "lobbyd_udp_lobby_datagrams_in_total"), 6);

    let (head, rooms) = get(metrics, "/rooms");
    assert!(head.contains("application/json"), "{head}");
    assert!(
        rooms.starts_with("[{\"id\":1,\"kind\":\"udp\",\"state\":\"waiting\",\"port\":"),
        "{rooms}"
    );
    let (head, _) = get(metrics, "/nope");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}
