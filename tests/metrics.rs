//! The metrics endpoint over loopback: after a scripted session the counters moved by exactly
//! the expected amounts, and /rooms lists the live rooms; connections that never finish their
//! request cannot hold the endpoint shut (issue 13, found by `scripts/hostile.sh`).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

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

/// A full house of connections that never finish their request (a slowloris crowd at the
/// endpoint's cap) neither keeps a scraper out (the oldest makes room for it) nor stays past
/// the connection deadline.
#[test]
fn unfinished_requests_cannot_hold_the_endpoint_shut() {
    let mut config = test_config();
    config.metrics = Some("127.0.0.1:0".parse().unwrap());
    let server = start(config);
    let metrics = server.metrics_addr().expect("metrics enabled");
    let opened = Instant::now();
    let mut crowd: Vec<TcpStream> = (0..lobbyd::net::http::MAX_CONNS)
        .map(|_| {
            let mut stream = TcpStream::connect(metrics).unwrap();
            stream
                .write_all(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
                .unwrap();
            stream
        })
        .collect();
    // Every one of them accepted and waiting for the rest of its head.
    std::thread::sleep(Duration::from_millis(300));

    for _ in 0..2 {
        let (head, body) = get(metrics, "/metrics");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(body.contains("lobbyd_uptime_seconds"), "{body}");
    }

    // Each of the crowd is closed by the deadline at the latest (the oldest, for the scraper,
    // sooner), whatever it trickles.
    let deadline = lobbyd::net::http::CONN_DEADLINE + Duration::from_secs(3);
    for stream in &mut crowd {
        let left = deadline.saturating_sub(opened.elapsed());
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        let _ = stream.write_all(b"a");
        let mut buf = [0u8; 64];
        let closed = match stream.read(&mut buf) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        };
        assert!(closed, "still open {:?} after connecting", opened.elapsed());
    }
}
