//! The metrics endpoint over loopback: after a scripted session the counters moved by exactly
//! the expected amounts, /rooms lists the live rooms, the status page (`GET /`) shows
//! every protocol's rooms, parties, games and members with their player-chosen names escaped,
//! and connections that never finish their request cannot hold the endpoint shut (found
//! by `scripts/hostile.sh`).

use crate::common;
use crate::common::tcp_client;
use crate::general_lobby::client as general_client;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use lobbyd::wire::general::{ClientRepr, ServerRepr};
use lobbyd::wire::wz::{GameStruct, GameStructRepr, GAMESTRUCT_LEN};

pub(crate) fn get(addr: SocketAddr, path: &str) -> (String, String) {
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
    let list = "lobbyd_udp_lobby_requests_total{request=\"list_rooms\"}";
    let create = "lobbyd_udp_lobby_requests_total{request=\"create_room\"}";
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
                    &format!("lobbyd_loop_passes_total{{duration=\"{reason}\"}}"),
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
    // The charts of the last 15 minutes: inline SVG, one per chart, no script; the loop took
    // its first sample as it started (nothing open yet: every gauge's one point at the
    // bottom right).
    assert!(page.contains("<h2>Last 15 minutes</h2>"), "{page}");
    assert_eq!(page.matches("<svg ").count(), 4, "{page}");
    for class in ["connections", "members", "rooms", "games"] {
        assert!(
            page.contains(&format!(
                "<polyline class=\"{class}\" fill=\"none\" stroke=\""
            )),
            "{class}: {page}"
        );
    }
    let members = page
        .split("<polyline class=\"members\"")
        .nth(1)
        .and_then(|rest| rest.split("points=\"").nth(1))
        .and_then(|rest| rest.split('"').next())
        .expect("the members line");
    // Newest at the right edge (a loaded machine may have taken a second sample since).
    assert!(
        members.starts_with("270.0,59.0") || members.contains(" 270.0,"),
        "{members}"
    );
    assert!(!page.contains("<script"), "{page}");
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

/// Every metric a server with every front end (and both logins) serves has its `# HELP`
/// line, then its `# TYPE`, and is described in `docs/METRICS.md`: a counter added without a
/// description fails here. Labels name what they hold (a request kind is not a `reason`), and
/// the process and build metrics are there with live values.
#[test]
fn every_metric_has_help_and_a_reference_row() {
    let (db, _) = TempDb::with_users("scrape", &[("ann", "pw")]);
    let mut config = test_config();
    config.metrics = Some("127.0.0.1:0".parse().unwrap());
    config.tcp_port = Some(0);
    config.wz.port = Some(0);
    config.wz.db = db.0.clone();
    config.wz.login = lobbyd::accounts::LoginPolicy::Optional;
    config.general.port = Some(0);
    config.general.core.login = lobbyd::accounts::LoginPolicy::Optional;
    let server = start(config);
    let (head, body) = get(server.metrics_addr().unwrap(), "/metrics");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");

    let reference = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/METRICS.md"));
    let mut helped = "";
    let mut types = 0;
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect("HELP name text");
            assert!(!help.trim().is_empty(), "{line}");
            helped = name;
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            assert_eq!(name, helped, "no # HELP line before {line:?}");
            assert!(kind == "counter" || kind == "gauge", "{line}");
            let row = format!("| `{name}` | {kind} |");
            assert!(reference.contains(&row), "docs/METRICS.md has no row {row}");
            types += 1;
        } else {
            let name = line.split(['{', ' ']).next().unwrap();
            assert_eq!(name, helped, "sample {line:?} outside its metric");
        }
    }
    // Every front end's metrics are there (a fresh server served 114 on main).
    assert!(types > 110, "{types} metrics:\n{body}");
    for prefix in [
        "lobbyd_udp_lobby_",
        "lobbyd_tcp_lobby_",
        "lobbyd_wz_login_checks_total",
        "lobbyd_general_login_checks_total",
        "lobbyd_general_members",
    ] {
        assert!(body.contains(&format!("\n{prefix}")), "no {prefix}");
    }
    for sample in [
        "lobbyd_udp_lobby_requests_total{request=\"list_rooms\"} 0",
        "lobbyd_general_requests_total{request=\"sign_in\"} 0",
        "lobbyd_wz_commands_total{command=\"list\"} 0",
        "lobbyd_wz_login_checks_total{verdict=\"valid\"} 0",
        "lobbyd_general_refusals_total{reason=\"full\"} 0",
        &format!(
            "lobbyd_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        ),
    ] {
        assert!(body.lines().any(|l| l == sample), "no {sample:?}");
    }
    let value = |body: &str, name: &str| -> f64 {
        body.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let number = |name: &str| value(&body, name);
    // This test process is the server's: its figures are this process's. The other tests of
    // this binary open and close descriptors meanwhile, so a scrape must fall between the
    // counts seen just before and just after it (give or take the scrape's own); a few
    // scrapes find a quiet moment.
    let fds = || std::fs::read_dir("/proc/self/fd").unwrap().count() as f64;
    let mut tries = 0;
    let open = loop {
        let before = fds();
        let (_, body) = get(server.metrics_addr().unwrap(), "/metrics");
        let after = fds();
        let open = value(&body, "process_open_fds");
        if open >= 8.0 && open + 8.0 >= before.min(after) && open <= before.max(after) + 8.0 {
            break open;
        }
        tries += 1;
        assert!(tries < 50, "{open} fds, {before} before and {after} after");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(number("process_max_fds") >= open);
    assert!(number("process_resident_memory_bytes") > 1_000_000.0);
    assert!(number("process_cpu_seconds_total") >= 0.0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let started = number("process_start_time_seconds");
    assert!(started <= now + 1.0 && started > now - 3600.0, "{started}");
}

/// `GET /healthz` answers a one-line 200 while the loop serves (HEAD too, any query), for a
/// load balancer or a watchdog; it is not the status page.
#[test]
fn healthz_answers_ok_while_the_loop_turns() {
    let mut config = test_config();
    config.metrics = Some("127.0.0.1:0".parse().unwrap());
    let server = start(config);
    let metrics = server.metrics_addr().unwrap();
    let mut stream = TcpStream::connect(metrics).unwrap();
    stream.set_read_timeout(Some(REPLY_WAIT)).unwrap();
    stream
        .write_all(b"GET /healthz?probe=1 HTTP/1.1\r\nHost: lb\r\n\r\n")
        .unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&reply),
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\
         Connection: close\r\n\r\nok\n"
    );
    // Still answering after other traffic: the loop turns.
    let _ = get(metrics, "/metrics");
    let (head, body) = get(metrics, "/healthz");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert_eq!(body, "ok\n");
    server.shutdown().unwrap();
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
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
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
