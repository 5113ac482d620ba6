//! The metrics endpoint over loopback: after a scripted session the counters moved by exactly
//! the expected amounts, /rooms lists the live rooms, the status page (`GET /`) shows
//! every protocol's rooms, parties, games and members with their player-chosen names escaped,
//! and connections that never finish their request cannot hold the endpoint shut (found
//! by `scripts/hostile.sh`).

mod common;
// Only a member signing in and creating a game are needed here.
#[allow(dead_code)]
#[path = "general_lobby/client.rs"]
mod general_client;
#[path = "common/tcp_client.rs"]
mod tcp_client;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use lobbyd::wire::general::{ClientRepr, ServerRepr};
use lobbyd::wire::wz::{GameStruct, GameStructRepr, GAMESTRUCT_LEN};

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
    // Every datagram above was served in a pass of the loop, each pass counted by how long it
    // took (most are far under a millisecond; a loaded machine may stretch a few).
    let passes = |body: &str| -> u64 {
        ["under_1ms", "1ms_to_5ms", "over_5ms"]
            .iter()
            .map(|reason| {
                value(
                    body,
                    &format!("lobbyd_loop_passes_total{{reason=\"{reason}\"}}"),
                )
            })
            .sum()
    };
    let (was, now) = (passes(&before), passes(&after));
    assert!(now >= was + 6, "{was} -> {now} passes");

    let (head, rooms) = get(metrics, "/rooms");
    assert!(head.contains("application/json"), "{head}");
    assert!(
        rooms.starts_with("[{\"id\":1,\"kind\":\"udp\",\"state\":\"waiting\",\"port\":"),
        "{rooms}"
    );
    let (head, _) = get(metrics, "/nope");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}

/// A name that is markup if a page forgets to escape it, and how it must show.
const EVIL: &str = "<script>&\"'";
const EVIL_HTML: &str = "&lt;script&gt;&amp;&quot;&#39;";

/// Registers a legacy Warzone game named `name` (`addg` and a version 3 GAMESTRUCT) and returns
/// the host's connection, which keeps it listed, once its status 200 is read.
fn wz_host(addr: SocketAddr, name: &str) -> TcpStream {
    let mut repr = GameStructRepr::zeroed(3);
    repr.name[..name.len()].copy_from_slice(name.as_bytes());
    repr.max_players = 4;
    repr.current_players = 1;
    let mut gamestruct = [0u8; GAMESTRUCT_LEN];
    repr.emit(&mut GameStruct::new_unchecked(&mut gamestruct[..]));
    let mut host = TcpStream::connect(addr).unwrap();
    host.set_read_timeout(Some(REPLY_WAIT)).unwrap();
    host.write_all(b"addg\0").unwrap();
    host.write_all(&gamestruct).unwrap();
    let mut head = [0u8; 8];
    host.read_exact(&mut head).unwrap();
    assert_eq!(&head[..4], &200u32.to_be_bytes(), "status 200");
    let motd_len = u32::from_be_bytes([head[4], head[5], head[6], head[7]]) as usize;
    host.read_exact(&mut vec![0u8; motd_len]).unwrap();
    host
}

#[test]
fn status_page_shows_every_protocol_and_escapes_names() {
    let mut config = test_config();
    config.metrics = Some("127.0.0.1:0".parse().unwrap());
    config.tcp_port = Some(0);
    config.wz.port = Some(0);
    // The test's Warzone host has no game port to probe.
    config.wz.check_reachable = false;
    config.general.port = Some(0);
    let server = start(config);
    let metrics = server.metrics_addr().unwrap();

    // A UDP room, and one JOIN_FAILED (no such room) for the refusal counters.
    let udp = UdpClient::new();
    let lobby = server.udp_lobby_addr().unwrap();
    udp.send(lobby, &frame(0x01, 0x42, 1, &[]));
    let created = udp.recv();
    assert_eq!(created[1], 0x43, "ROOM_CREATED");
    udp.send(lobby, &frame(0x01, 0x44, 2, &99u32.to_be_bytes()));
    udp.recv();
    // A TCP lobby party whose player is named with markup.
    let mut player = tcp_client::Client::connect(server.tcp_lobby_addr().unwrap());
    player.join(&format!("p{EVIL}"));
    player.recv(); // its own PLAYER_JOIN
                   // A Warzone game, a general lobby member and its game, all named with markup.
    let _host = wz_host(server.wz_addr().unwrap(), &format!("w{EVIL}"));
    let mut member = general_client::Client::greeted(server.general_addr().unwrap());
    member.sign_in(&format!("m{EVIL}"), "", None);
    member.read_sync();
    member.send(ClientRepr::CreateGame {
        max_players: 2,
        game_type: "chess",
        version: "1.0",
        flags: 0,
        name: &format!("g{EVIL}"),
        password: "",
    });
    assert!(matches!(member.recv().repr(), ServerRepr::GameInfo(_)));

    let (head, page) = get(metrics, "/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.contains("Content-Type: text/html; charset=utf-8"),
        "{head}"
    );
    assert!(page.starts_with("<!doctype html>"), "{page}");
    assert!(page.contains("<meta http-equiv=refresh content=5>"));
    assert!(page.contains(concat!("<h1>lobbyd ", env!("CARGO_PKG_VERSION"), "</h1>")));
    assert!(page.contains("<p>up 00:00:"), "{page}");
    for link in ["/metrics", "/rooms", "/wz/games"] {
        assert!(
            page.contains(&format!("<a href=\"{link}\">{link}</a>")),
            "{link}"
        );
    }
    // Every listener with its bound address.
    for (name, transport, addr) in [
        ("UDP room lobby", "udp", server.udp_lobby_addr()),
        ("TCP lobby", "tcp", server.tcp_lobby_addr()),
        ("Warzone master server", "tcp", server.wz_addr()),
        ("general lobby", "tcp", server.general_addr()),
        ("metrics and status page", "tcp", server.metrics_addr()),
    ] {
        let row = format!(
            "<tr><td>{name}</td><td>{transport}</td><td>{}</td></tr>",
            addr.unwrap()
        );
        assert!(page.contains(&row), "{row} in\n{page}");
    }
    assert!(page
        .contains("<td>game instances</td><td>udp</td><td>127.0.0.1, ports chosen by the OS</td>"));
    // The UDP room with its instance port and players; the party with its state and player.
    let port = u16::from_be_bytes([created[12], created[13]]);
    assert!(
        page.contains("<h2>UDP rooms <small>(1)</small></h2>"),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "<tr><td>1</td><td>waiting</td><td>{port}</td><td>0 / 4</td><td>1</td></tr>"
        )),
        "{page}"
    );
    assert!(page.contains("<h2>TCP lobby parties <small>(1)</small></h2>"));
    assert!(
        page.contains(&format!(
            "<td>waiting</td><td>-</td><td>1 / 4</td><td>p{EVIL_HTML}</td>"
        )),
        "{page}"
    );
    // The Warzone game, the member and its game; their names escaped, never raw.
    assert!(page.contains(&format!("<td>w{EVIL_HTML}</td>")), "{page}");
    assert!(
        page.contains(&format!(
            "<td>m{EVIL_HTML}</td><td>m{EVIL_HTML}</td><td>present</td><td>1</td>"
        )),
        "{page}"
    );
    assert!(
        page.contains(&format!("<td>g{EVIL_HTML}</td><td>chess</td>")),
        "{page}"
    );
    assert!(!page.contains("<script"), "a raw name in\n{page}");
    // The refusal counters of /metrics, by protocol.
    assert!(
        page.contains("<h3>UDP room lobby <small>(1)</small></h3>"),
        "{page}"
    );
    assert!(
        page.contains("<td>lobbyd_udp_lobby_join_failed_total</td><td>no_such_room</td><td>1</td>")
    );
    for protocol in ["TCP lobby", "Warzone master server", "general lobby"] {
        assert!(
            page.contains(&format!("<h3>{protocol} <small>")),
            "{protocol}"
        );
    }
}

/// A full house of connections that never finish their request (a slowloris crowd at the
/// endpoint's cap, each address within its cap) neither keeps a scraper out (the oldest of
/// an address holding the most makes room for it) nor stays past the connection deadline.
#[test]
fn unfinished_requests_cannot_hold_the_endpoint_shut() {
    let mut config = test_config();
    config.metrics = Some("127.0.0.1:0".parse().unwrap());
    let server = start(config);
    let metrics = server.metrics_addr().expect("metrics enabled");
    let opened = Instant::now();
    // From as many addresses as it takes to fill the endpoint within the per-address cap.
    let per_ip = lobbyd::config::Config::default().metrics_max_conns_per_ip;
    let mut crowd: Vec<TcpStream> = (0..lobbyd::net::http::MAX_CONNS)
        .map(|n| {
            let mut stream = connect_from(metrics, &format!("127.0.1.{}", 1 + n / per_ip));
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

/// Reads what the endpoint sends `stream` until it closes: its bytes, or `None` when the
/// connection was not closed within [`REPLY_WAIT`].
fn read_until_closed(stream: &mut TcpStream) -> Option<Vec<u8>> {
    stream.set_read_timeout(Some(REPLY_WAIT)).unwrap();
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Some(bytes),
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            // Closed with our request unread: the kernel resets rather than closes.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Some(bytes),
            Err(_) => return None,
        }
    }
}

/// A scrape from `source`: the response's head and body.
fn scrape_from(metrics: SocketAddr, source: &str) -> (String, String) {
    let mut stream = connect_from(metrics, source);
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")
        .unwrap();
    let bytes = read_until_closed(&mut stream).expect("the scrape is answered and closed");
    let text = String::from_utf8(bytes).expect("UTF-8");
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    (head.to_string(), body.to_string())
}

/// A crowd from one address twice the endpoint's size, every one holding an unfinished
/// request: past `--metrics-max-conns-per-ip` each newcomer is closed at once, so the
/// crowd never fills the endpoint nor evicts the scraper that connected before it from
/// another address; the scraper is answered, and the refusals are counted.
#[test]
fn a_crowd_past_its_per_address_cap_is_refused_and_cannot_evict_a_scraper() {
    let mut config = test_config();
    config.metrics = Some("127.0.0.1:0".parse().unwrap());
    config.metrics_max_conns_per_ip = 4;
    // Only the per-address cap is under test here.
    config.metrics_conn_rate = 1_000_000;
    let server = start(config);
    let metrics = server.metrics_addr().expect("metrics enabled");
    let crowd_size = 2 * lobbyd::net::http::MAX_CONNS;

    let mut scraper = connect_from(metrics, "127.0.0.3");
    let mut crowd: Vec<TcpStream> = (0..crowd_size)
        .map(|_| {
            let mut stream = connect_from(metrics, "127.0.0.2");
            stream
                .write_all(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
                .unwrap();
            stream
        })
        .collect();
    // The last of the crowd is refused: closed without a byte.
    let refused = read_until_closed(crowd.last_mut().unwrap());
    assert_eq!(refused.as_deref(), Some(&b""[..]), "refused at once");
    // The first four are held, waiting for the rest of their request.
    crowd[0]
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = [0u8; 16];
    let held = crowd[0].read(&mut buf);
    assert!(
        held.as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock
                || e.kind() == std::io::ErrorKind::TimedOut),
        "the first of the crowd is still served: {held:?}"
    );

    scraper
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")
        .unwrap();
    let answer = read_until_closed(&mut scraper).expect("answered and closed");
    let text = String::from_utf8(answer).unwrap();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let (_, body) = text.split_once("\r\n\r\n").unwrap();
    let per_ip = "lobbyd_metrics_http_refused_total{reason=\"per_ip\"}";
    assert_eq!(value(body, per_ip) as usize, crowd_size - 4, "{body}");
    assert_eq!(value(body, "lobbyd_metrics_http_evicted_total"), 0);
    assert_eq!(value(body, "lobbyd_metrics_http_accepted_total"), 4 + 1);
}

/// Past `--metrics-conn-rate` new connections a minute an address is closed at accept,
/// without a word, while another address scrapes as usual.
#[test]
fn an_address_past_the_connection_rate_is_refused_and_another_scrapes() {
    let mut config = test_config();
    config.metrics = Some("127.0.0.1:0".parse().unwrap());
    config.metrics_conn_rate = 3;
    let server = start(config);
    let metrics = server.metrics_addr().expect("metrics enabled");

    for _ in 0..3 {
        let (head, _) = scrape_from(metrics, "127.0.0.4");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    }
    let mut fourth = connect_from(metrics, "127.0.0.4");
    let _ = fourth.write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n");
    assert_eq!(
        read_until_closed(&mut fourth).as_deref(),
        Some(&b""[..]),
        "the fourth in a minute is closed without an answer"
    );
    let (head, body) = scrape_from(metrics, "127.0.0.5");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let rate = "lobbyd_metrics_http_refused_total{reason=\"conn_rate\"}";
    assert_eq!(value(&body, rate), 1, "{body}");
}
