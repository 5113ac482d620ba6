//! The load generator against an in-process lobbyd over loopback: each mode runs for about a
//! second and must complete requests with no error and no timeout, and stop by itself.
//! Nothing here asserts a rate: performance is measured by `scripts/bench.sh`, not tested.
//!
//! Two kinds of server: one with its limits raised and the tool's caps off (`--caps off`, as
//! `scripts/bench.sh` runs it), and one with lobbyd's default limits, only its ports chosen by
//! the OS, where the `lobby-load` binary must work in every mode with no flag but `--target`
//! (`make run`, then `lobby-load MODE`).

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::*;
use lobby_load::dialect::Dialect;
use lobby_load::{self as load, Mode, Options, Summary};
use lobbyd::config::Config;
use lobbyd::wire::udp_upstream::records::RecordLayout;

/// A server whose per-IP limits do not get in the way of a load test.
fn load_config() -> Config {
    Config {
        udp_rate: 1_000_000,
        udp_reply_bytes: 0,
        max_rooms_per_ip: 64,
        reap_grace: Duration::ZERO,
        ..test_config()
    }
}

fn options(mode: Mode, server: &lobbyd::net::ServerHandle) -> Options {
    let mut options = Options::new(mode, server.udp_lobby_addr().unwrap());
    options.caps = None;
    options.duration = Duration::from_millis(800);
    options.concurrency = 4;
    // Generous: two cores shared with a compiler must not turn a slow reply into a failure.
    options.timeout = Duration::from_secs(5);
    options.quiet = true;
    options
}

fn run(options: &Options) -> Summary {
    let mut progress = Vec::new();
    let summary = load::run(options, &mut progress).expect("the run starts");
    assert!(
        summary.completed > 0,
        "nothing completed: {}",
        summary.to_text()
    );
    assert_eq!(summary.failures(), 0, "{}", summary.to_text());
    assert!(
        summary.elapsed >= options.duration
            && summary.elapsed < options.duration + Duration::from_secs(2),
        "the run must stop by itself at --duration: {:?}",
        summary.elapsed
    );
    assert!(summary.sent >= summary.completed.min(1));
    summary
}

#[test]
fn udp_list_reads_full_room_lists() {
    let server = start(load_config());
    let mut options = options(Mode::UdpList, &server);
    options.rooms = 12;
    let summary = run(&options);
    assert_eq!(summary.extra.get("rooms_listed"), Some(&12));
    // Every completed request read a list of at least the 12 rooms (a shorter one is a
    // `short_list` failure, and `run` asserts there is none). When the run ends, its members
    // leave: the rooms it made are reaped, none is left behind on the server.
    let snap = snapshot(&server);
    assert!(snap.lobby.list_requests >= summary.completed);
    assert!(snap.lobby.create_requests >= 12);
    let snap = eventually(&server, Duration::from_secs(5), |s| s.rooms.is_empty());
    assert!(snap.rooms.is_empty(), "rooms left behind: {:?}", snap.rooms);
}

#[test]
fn udp_create_join_runs_whole_room_lives() {
    let server = start(load_config());
    let summary = run(&options(Mode::UdpCreateJoin, &server));
    assert!(summary.extra["cycles"] > 0);
    let snap = snapshot(&server);
    assert!(snap.lobby.create_requests > 0);
    assert!(snap.lobby.join_requests > 0);
}

/// `--dialect upstream-v1|upstream-v3`: the rooms `udp-list` makes in the seed's dialect are
/// read in full in the upstream one, and `udp-create-join` lives whole rooms in it (its
/// RoomSetConfig notices ignored, not counted as errors).
#[test]
fn udp_modes_speak_the_upstream_dialect() {
    for layout in [RecordLayout::V1, RecordLayout::V3] {
        let server = start(Config {
            rtype_udp_records: layout,
            ..load_config()
        });
        let mut list = options(Mode::UdpList, &server);
        list.rooms = 12;
        list.dialect = Dialect::Upstream(layout);
        run(&list);
        let mut cycle = options(Mode::UdpCreateJoin, &server);
        cycle.dialect = Dialect::Upstream(layout);
        let summary = run(&cycle);
        assert!(summary.extra["cycles"] > 0);
        let snap = snapshot(&server);
        assert!(snap.counter("udp_upstream_datagrams_in_total", "") > Some(0));
        assert_eq!(
            snap.counter("udp_upstream_dropped_total", "bad_checksum"),
            Some(0)
        );
    }
}

#[test]
fn relay_counts_forwarded_datagrams() {
    let server = start(load_config());
    let mut options = options(Mode::Relay, &server);
    options.concurrency = 3;
    options.members = 3;
    let summary = run(&options);
    assert_eq!(summary.extra["rooms"], 3);
    // Every datagram goes to the two other members; the server counted what it forwarded.
    let snap = snapshot(&server);
    assert!(snap.lobby.data_forwarded >= summary.completed);
    assert!(summary.completed <= summary.sent * 2);
}

#[test]
fn relay_open_loop_keeps_its_rate() {
    let server = start(load_config());
    let mut options = options(Mode::Relay, &server);
    options.concurrency = 2;
    options.members = 2;
    options.rate = Some(500.0);
    let summary = run(&options);
    // 500/s for 0.8 s is 400 sends; the pacer never sends ahead of its schedule.
    assert!(summary.sent <= 401, "sent {}", summary.sent);
}

#[test]
fn echo_baseline_answers_every_datagram() {
    let mut options = Options::new(Mode::Echo, "127.0.0.1:0".parse().unwrap());
    options.caps = None;
    options.duration = Duration::from_millis(800);
    options.concurrency = 2;
    options.size = 12;
    options.reply_size = 846;
    options.timeout = Duration::from_secs(5);
    options.quiet = true;
    let summary = run(&options);
    assert!(summary.extra["echo_answered"] >= summary.completed);
}

#[test]
fn max_requests_stops_the_run_early() {
    let mut options = Options::new(Mode::Echo, "127.0.0.1:0".parse().unwrap());
    options.duration = Duration::from_secs(30);
    options.max_requests = Some(500);
    options.concurrency = 1;
    options.quiet = true;
    let summary = load::run(&options, &mut Vec::new()).unwrap();
    // Checked between event batches, so a batch may finish a few more.
    assert!(summary.completed >= 500, "{}", summary.completed);
    assert!(summary.elapsed < Duration::from_secs(10));
}

#[test]
fn binary_prints_json_and_refuses_remote_targets() {
    let exe = env!("CARGO_BIN_EXE_lobby-load");
    let out = Command::new(exe)
        .args([
            "echo",
            "--duration",
            "0.5",
            "--concurrency",
            "2",
            "--json",
            "--timeout",
            "5000",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["mode"], "echo");
    assert!(json["completed"].as_u64().unwrap() > 0);
    assert_eq!(json["errors"], serde_json::json!({}));
    assert!(json["latency_us"]["p99"].as_f64().unwrap() > 0.0);

    let out = Command::new(exe)
        .args(["udp-list", "--target", "192.0.2.1:4242", "--duration", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-remote"));
}

/// A server with the TCP lobby and the Warzone master server on, limits out of the way and
/// short countdowns; reachability probes on (the tool answers them on its game ports).
fn tcp_config() -> Config {
    let mut config = Config {
        tcp_port: Some(0),
        conn_rate: 1_000_000,
        max_conns_per_ip: 10_000,
        countdown: Duration::from_millis(300),
        countdown_tick: Duration::from_millis(50),
        ..load_config()
    };
    config.wz.port = Some(0);
    config.wz.max_games_per_ip = 1000;
    config
}

fn tcp_options(mode: Mode, target: std::net::SocketAddr) -> Options {
    let mut options = Options::new(mode, target);
    options.caps = None;
    options.duration = Duration::from_millis(1000);
    options.concurrency = 4;
    options.timeout = Duration::from_secs(5);
    options.quiet = true;
    options
}

#[test]
fn tcp_join_joins_and_disconnects() {
    let server = start(tcp_config());
    let options = tcp_options(Mode::TcpJoin, server.tcp_lobby_addr().unwrap());
    let summary = run(&options);
    // Each completed join is one connection; every earlier one has been closed by now.
    assert!(summary.sent >= summary.completed);
    let json = summary.to_json();
    assert_eq!(json["errors"], serde_json::json!({}));
    assert!(json["latency_us"]["p99"].as_f64().unwrap() > 0.0);
}

#[test]
fn tcp_join_in_the_upstream_dialect_creates_joins_connects_and_leaves() {
    let server = start(tcp_config());
    let mut options = tcp_options(Mode::TcpJoin, server.tcp_lobby_addr().unwrap());
    options.tcp_dialect = lobby_load::TcpDialect::Upstream;
    let summary = run(&options);
    assert!(summary.completed > 0);
    let json = summary.to_json();
    assert_eq!(json["errors"], serde_json::json!({}));
    // Every join was a room of its own, and every connection spoke the upstream dialect.
    let snap = server.snapshot().expect("a snapshot");
    assert!(snap.lobby.tcp.rooms_created >= summary.completed);
    // (The run may stop between a connect and its first bytes.)
    let tcp = &snap.lobby.tcp;
    assert!(tcp.upstream_conns >= summary.completed && tcp.upstream_conns <= tcp.admitted);
}

/// `tcp-cycle` with `players` clients in parties of 4 for `millis`: whole parties complete,
/// every member gets every COUNTDOWN.
fn run_parties(players: usize, spread: Option<Duration>, millis: u64) -> Summary {
    let server = start(tcp_config());
    let mut options = tcp_options(Mode::TcpCycle, server.tcp_lobby_addr().unwrap());
    options.concurrency = players;
    options.members = 4;
    options.spread = spread;
    options.duration = Duration::from_millis(millis);
    let summary = run(&options);
    assert!(summary.extra["players"] >= 4 * summary.completed);
    assert_eq!(summary.extra["parties_failed"], 0);
    // 300 ms at 50 ms ticks: 7 values (0.3 .. 0.0) to each member of each party.
    let (_, samples) = summary.lateness.expect("COUNTDOWN lateness measured");
    assert!(samples >= 7 * 4 * summary.completed, "{samples}");
    // Lateness is taken when a frame reached the socket, which is never after the tool's
    // poll saw it: the percentiles of the one cannot exceed those of the other.
    let json = summary.to_json();
    let at_socket = json["countdown_lateness_us"]["p99"].as_f64().unwrap();
    let seen = json["extra"]["seen_p99_us"].as_f64().unwrap();
    assert!(at_socket <= seen + 1.0, "{}", summary.to_text());
    summary
}

#[test]
fn tcp_cycle_runs_whole_parties_and_measures_the_countdown() {
    run_parties(8, None, 1500);
}

#[test]
fn tcp_cycle_spread_starts_parties_in_rounds() {
    let summary = run_parties(12, Some(Duration::from_millis(200)), 2500);
    assert!(summary.extra["rounds"] >= 1, "{}", summary.to_text());
}

#[test]
fn write_floor_delivers_every_frame_of_every_burst() {
    // The mode needs no server: it writes to connections of its own.
    let mut options = Options::new(Mode::WriteFloor, "127.0.0.1:1".parse().unwrap());
    options.concurrency = 16;
    options.duration = Duration::from_millis(600);
    options.timeout = Duration::from_secs(5);
    options.quiet = true;
    let summary = run(&options);
    let bursts = summary.extra["bursts"];
    assert_eq!(bursts, summary.completed);
    assert_eq!(summary.extra["connections"], 16);
    // Every frame of every burst is read (the reader gets one more period after the last).
    assert_eq!(
        summary.extra["frames"],
        bursts * 16,
        "{}",
        summary.to_text()
    );
    let (_, samples) = summary.lateness.expect("lateness of each frame");
    assert_eq!(samples, bursts * 16);
}

#[test]
fn tcp_idle_holds_every_connection() {
    let server = start(tcp_config());
    let mut options = tcp_options(Mode::TcpIdle, server.tcp_lobby_addr().unwrap());
    options.concurrency = 40;
    let summary = run(&options);
    assert_eq!(summary.completed, 40);
    assert_eq!(summary.extra["held"], 40);
    assert!(summary.extra.contains_key("all_held_ms"));
}

#[test]
fn wz_list_reads_whole_lists() {
    let server = start(tcp_config());
    let mut options = tcp_options(Mode::WzList, server.wz_addr().unwrap());
    options.rooms = 8;
    let summary = run(&options);
    assert_eq!(summary.extra["games_listed"], 8);
    assert!(
        snapshot(&server)
            .counter("wz_list_replies_total", "")
            .unwrap_or(0)
            >= summary.completed
    );
}

#[test]
fn wz_host_registers_games() {
    let server = start(tcp_config());
    let mut options = tcp_options(Mode::WzHost, server.wz_addr().unwrap());
    options.hold = Duration::from_millis(20);
    let summary = run(&options);
    assert!(
        snapshot(&server)
            .counter("wz_games_listed_total", "")
            .unwrap_or(0)
            >= summary.completed
    );
}

/// A server with the general lobby on and its limits out of the way: no resume grace (each
/// cycle's member leaves at once), per-address caps and chat rates raised, no lobby-wide chat
/// budget.
fn general_config() -> Config {
    let mut config = load_config();
    config.general.port = Some(0);
    config.general.max_conns_per_ip = 10_000;
    config.general.conn_rate = 1_000_000;
    config.general.core.resume_grace = Duration::ZERO;
    config.general.core.chat_rate = 100_000;
    config.general.core.chat_burst = 200_000;
    config.general.core.chat_ip_rate = 0;
    config.general.core.chat_budget = 0;
    config.general.core.frame_rate = 100_000;
    config.general.core.frame_burst = 200_000;
    config
}

#[test]
fn lobby_join_signs_in_creates_joins_and_leaves() {
    let server = start(general_config());
    let mut options = tcp_options(Mode::LobbyJoin, server.general_addr().unwrap());
    options.hold = Duration::from_millis(100);
    let summary = run(&options);
    let count = |name: &str| summary.extra.get(name).copied().unwrap_or(0);
    // Every completed sync starts a cycle; all but the last few (cut by the run's end) close.
    assert!(count("cycles") > 0, "{}", summary.to_text());
    assert!(count("cycles") <= summary.completed);
    assert!(count("games_created") > 0, "{}", summary.to_text());
    // Turns alternate, so joiners meet creators whatever the timing.
    assert!(count("joins_accepted") > 0, "{}", summary.to_text());
    assert!(count("creators_joined") > 0, "{}", summary.to_text());
    let snap = snapshot(&server);
    assert!(snap.counter("general_sign_ins_total", "").unwrap_or(0) >= summary.completed);
    assert!(snap.counter("general_joins_total", "").unwrap_or(0) >= count("joins_accepted"));
}

#[test]
fn lobby_idle_holds_every_member() {
    let server = start(general_config());
    let mut options = tcp_options(Mode::LobbyIdle, server.general_addr().unwrap());
    options.concurrency = 40;
    let summary = run(&options);
    assert_eq!(summary.completed, 40);
    assert_eq!(summary.extra["held"], 40);
    assert!(summary.extra.contains_key("all_held_ms"));
    // Each member signed in once and held its connection: no member left during the run.
    let snap = snapshot(&server);
    assert_eq!(snap.counter("general_sign_ins_total", ""), Some(40));
    assert_eq!(snap.counter("general_games_created_total", ""), Some(0));
}

#[test]
fn lobby_chat_counts_every_copy_of_every_line() {
    let server = start(general_config());
    let mut options = tcp_options(Mode::LobbyChat, server.general_addr().unwrap());
    options.members = 12;
    options.concurrency = 3;
    options.sources = load::sources::parse_sources("127.0.0.2-127.0.0.5").unwrap();
    let summary = run(&options);
    assert_eq!(summary.extra["members"], 12);
    // Each line reaches all 12 members; only lines still in flight at the end are short.
    assert!(summary.completed <= summary.sent * 12);
    assert!(
        summary.extra["unreceived_copies"] <= 3 * 12,
        "{}",
        summary.to_text()
    );
    assert_eq!(summary.extra["late_copies"], 0);
    // The server said every line whose copies came back (all but the 3 in flight at most).
    let said = snapshot(&server)
        .counter("general_chat_lines_total", "")
        .unwrap_or(0);
    assert!(said + 3 >= summary.sent, "{said} of {}", summary.sent);
}

/// `--ws`: `lobby-join` and `lobby-chat` over the WebSocket port sign in, play and chat as
/// over TCP, and lobbyd counts them as WebSocket members.
#[test]
fn lobby_join_and_chat_over_websocket() {
    let mut config = general_config();
    config.lobby_ws.port = Some(0);
    let server = start(config);
    let ws = server.general_ws_addr().unwrap();
    let mut options = tcp_options(Mode::LobbyJoin, ws);
    options.hold = Duration::from_millis(100);
    options.ws = true;
    let summary = run(&options);
    let count = |name: &str| summary.extra.get(name).copied().unwrap_or(0);
    assert!(count("joins_accepted") > 0, "{}", summary.to_text());
    assert_eq!(summary.failures(), 0, "{}", summary.to_text());
    let upgrades = snapshot(&server)
        .counter("general_ws_upgrades_total", "")
        .unwrap_or(0);
    assert!(upgrades >= summary.completed, "{upgrades}");

    let mut options = tcp_options(Mode::LobbyChat, ws);
    options.members = 8;
    options.concurrency = 2;
    options.ws = true;
    let summary = run(&options);
    assert_eq!(summary.extra["members"], 8);
    assert!(summary.completed > 0, "{}", summary.to_text());
    assert_eq!(summary.extra["late_copies"], 0);
}

#[test]
fn lobby_chat_open_loop_keeps_its_rate() {
    let server = start(general_config());
    let mut options = tcp_options(Mode::LobbyChat, server.general_addr().unwrap());
    options.members = 5;
    options.rate = Some(400.0);
    options.duration = Duration::from_millis(800);
    let summary = run(&options);
    // 400 lines/s for 0.8 s is 320 lines; the pacer never sends ahead of its schedule.
    assert!(summary.sent <= 321, "sent {}", summary.sent);
    assert!(summary.completed <= summary.sent * 5);
}

/// A TCP relay on loopback in front of `upstream` that holds back the server's first bytes to
/// every connection but the first for `delay`: a server that takes that long to answer each
/// sign-in, as a loaded one does. Serves `connections` connections, then stops.
fn slow_sign_in_relay(
    upstream: std::net::SocketAddr,
    connections: usize,
    delay: Duration,
) -> std::net::SocketAddr {
    use std::net::{Shutdown, TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").expect("relay binds");
    let addr = listener.local_addr().expect("relay address");
    let pipe = |mut from: TcpStream, mut to: TcpStream, wait: Duration| {
        std::thread::spawn(move || {
            std::thread::sleep(wait);
            let _ = std::io::copy(&mut from, &mut to);
            let _ = to.shutdown(Shutdown::Write);
        })
    };
    std::thread::spawn(move || {
        for k in 0..connections {
            let Ok((client, _)) = listener.accept() else {
                return;
            };
            let server = TcpStream::connect(upstream).expect("relay connects upstream");
            let wait = if k == 0 { Duration::ZERO } else { delay };
            pipe(
                client.try_clone().unwrap(),
                server.try_clone().unwrap(),
                Duration::ZERO,
            );
            pipe(server, client, wait);
        }
    });
    addr
}

/// The soak's failed rounds: a setup that lasts longer than lobbyd's
/// `--idle-timeout` (each sign-in slow on a loaded machine) must not lose its first members to
/// the idle check while they wait, silent, for the others.
#[test]
fn lobby_chat_setup_keeps_its_members_alive_through_a_slow_sign_in() {
    let mut config = general_config();
    config.general.core.idle_timeout = Duration::from_secs(3);
    let server = start(config);
    let members = 4;
    let relay = slow_sign_in_relay(
        server.general_addr().unwrap(),
        members,
        Duration::from_millis(1300),
    );
    let mut options = tcp_options(Mode::LobbyChat, relay);
    options.members = members;
    options.concurrency = 2;
    options.duration = Duration::from_millis(500);
    // About 3.9 s of setup: longer than the idle timeout, and no member speaks before it ends.
    let summary = run(&options);
    assert_eq!(summary.extra["members"], members as u64);
    // The first members PINGed while the others signed in.
    assert!(
        summary.extra.get("keepalive_pings").copied().unwrap_or(0) > 0,
        "{}",
        summary.to_text()
    );
    assert_eq!(
        snapshot(&server).counter("general_closed_total", "idle"),
        Some(0),
        "{}",
        summary.to_text()
    );
}

/// lobbyd as `make run` starts it, but on loopback with every port chosen by the OS: all its
/// limits at their defaults. With OS-chosen instance ports `--max-rooms` would default to 64;
/// it is set to the default range's 100, so the rooms limit is the one `make run` has too.
fn default_server() -> lobbyd::net::ServerHandle {
    let mut config = Config {
        tcp_port: Some(0),
        max_rooms: Config::default().max_rooms,
        ..test_config()
    };
    config.wz.port = Some(0);
    config.general.port = Some(0);
    start(config)
}

/// Runs the `lobby-load` binary in `mode` against `target` for `secs` seconds with no other
/// flag than a generous reply timeout (a shared 2-core machine) and `--json`; asserts exit 0,
/// completed requests, and the stderr line saying what the run adjusted. Returns the summary
/// and the stderr text.
fn run_binary(mode: &str, target: std::net::SocketAddr, secs: &str) -> (serde_json::Value, String) {
    let target = target.to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_lobby-load"))
        .args([mode, "--target", &target, "--duration", secs])
        .args(["--timeout", "5000", "--json"])
        .output()
        .expect("lobby-load runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{mode}: {:?}\n{stderr}", out.status);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON summary");
    assert!(json["completed"].as_u64().unwrap() > 0, "{mode}: {json}");
    let note = format!("lobby-load: {mode}: ");
    assert_eq!(stderr.matches(&note).count(), 1, "{stderr}");
    assert_eq!(
        json["adjusted"].as_str().map(|a| a.contains(mode)),
        Some(true)
    );
    (json, stderr)
}

/// One UDP lobby mode against the defaults: 16 clients spread over loopback addresses.
fn udp_default(mode: &str) -> serde_json::Value {
    let server = default_server();
    let (json, stderr) = run_binary(mode, server.udp_lobby_addr().unwrap(), "1");
    // A one-second run prints no progress line.
    assert!(!stderr.contains("[   1s]"), "{stderr}");
    json
}

#[test]
fn defaults_udp_list_spreads_its_rooms_within_max_rooms_per_ip() {
    let json = udp_default("udp-list");
    assert_eq!(json["extra"]["rooms_listed"], 64);
    let adjusted = json["adjusted"].as_str().unwrap();
    assert!(
        adjusted.contains("64 rooms over 8 sources 127."),
        "{adjusted}"
    );
}

#[test]
fn defaults_udp_create_join_keeps_rooms_within_the_caps() {
    let json = udp_default("udp-create-join");
    assert!(json["extra"]["cycles"].as_u64().unwrap() > 0, "{json}");
}

#[test]
fn defaults_relay_fills_rooms_from_their_own_addresses() {
    let json = udp_default("relay");
    assert_eq!(json["extra"]["rooms"], 16);
}

#[test]
fn defaults_echo_needs_no_server_and_adjusts_nothing() {
    let out = Command::new(env!("CARGO_BIN_EXE_lobby-load"))
        .args(["echo", "--duration", "1", "--timeout", "5000", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr, "",
        "its own server: nothing to adjust, no progress for 1 s"
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["completed"].as_u64().unwrap() > 0);
    assert!(json["adjusted"].is_null());
}

#[test]
fn defaults_tcp_join_paces_each_address_within_the_connection_rate() {
    let server = default_server();
    let (json, _) = run_binary("tcp-join", server.tcp_lobby_addr().unwrap(), "1");
    let adjusted = json["adjusted"].as_str().unwrap();
    assert!(adjusted.contains("--conn-rate 5"), "{adjusted}");
    assert!(!adjusted.contains("welcomed"), "{adjusted}");
    // The server refused one connection, the sixth of the tool's probe from an address of its
    // own (which found the default rate); every address of the run kept within its rate.
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("tcp_lobby_refused_total", "conn_rate"),
        Some(1)
    );
}

/// The C baseline servers' side-by-side script (`tcp`) starts lobbyd with a raised
/// `--conn-rate` and names 253 sources without `--caps off`: the tool must find the raised rate, not pace the
/// run at lobbyd's default (about 500 joins a second from 253 addresses).
#[test]
fn tcp_join_finds_a_raised_conn_rate_and_does_not_pace_by_it() {
    let server = start(tcp_config());
    let target = server.tcp_lobby_addr().unwrap().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_lobby-load"))
        .args(["tcp-join", "--target", &target, "--duration", "1"])
        .args([
            "--sources",
            "127.0.0.2-127.0.0.3",
            "--timeout",
            "5000",
            "--json",
        ])
        .output()
        .expect("lobby-load runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON summary");
    let adjusted = json["adjusted"].as_str().unwrap_or_default();
    assert!(
        adjusted.contains("lobbyd welcomed 6 connections in a row from 127.255.255.253"),
        "{adjusted}"
    );
    assert!(!adjusted.contains("--conn-rate 5)"), "{adjusted}");
    // Paced at the default rate, two addresses would make at most 2 x 4 joins in a second.
    let completed = json["completed"].as_u64().unwrap();
    assert!(completed > 8, "{completed} joins: paced\n{json}");
    assert_eq!(
        snapshot(&server).counter("tcp_lobby_refused_total", "conn_rate"),
        Some(0)
    );
}

#[test]
fn defaults_tcp_idle_holds_its_connections() {
    let server = default_server();
    let (json, _) = run_binary("tcp-idle", server.tcp_lobby_addr().unwrap(), "1");
    assert_eq!(json["extra"]["held"], 16);
}

#[test]
fn defaults_tcp_cycle_runs_parties_through_the_default_countdown() {
    let server = default_server();
    // A party's cycle takes lobbyd's default 5 s countdown: the one mode that needs longer.
    let (json, stderr) = run_binary("tcp-cycle", server.tcp_lobby_addr().unwrap(), "8");
    assert_eq!(json["extra"]["parties_failed"], 0);
    assert!(json["countdown_lateness_us"]["samples"].as_u64().unwrap() > 0);
    // Runs over 2 s show progress: plain lines, since stderr is not a terminal here.
    assert!(stderr.contains("\n[   1s]"), "{stderr}");
    assert!(!stderr.contains('\r'), "{stderr:?}");
}

#[test]
fn defaults_wz_list_answers_the_reachability_probes() {
    let server = default_server();
    let (json, _) = run_binary("wz-list", server.wz_addr().unwrap(), "1");
    assert_eq!(json["extra"]["games_listed"], 64);
    let snap = snapshot(&server);
    // Probed as 4.x hosts: each game's port answered WZLR with its id.
    assert_eq!(
        snap.counter("wz_probe_outcomes_total", "wzlr_match"),
        Some(64)
    );
}

#[test]
fn defaults_wz_host_registers_within_the_per_address_limits() {
    let server = default_server();
    let (json, _) = run_binary("wz-host", server.wz_addr().unwrap(), "1");
    let registered = json["completed"].as_u64().unwrap();
    let snap = snapshot(&server);
    assert!(
        snap.counter("wz_probe_outcomes_total", "wzlr_match")
            .unwrap_or(0)
            >= registered
    );
}

#[test]
fn defaults_lobby_join_resumes_its_members() {
    let server = default_server();
    let (json, _) = run_binary("lobby-join", server.general_addr().unwrap(), "1");
    let count = |name: &str| json["extra"][name].as_u64().unwrap_or(0);
    assert!(count("cycles") > 0, "{json}");
    assert_eq!(count("resumes_refused"), 0, "{json}");
    // The lobby holds one member per client however many cycles ran (16 by default).
    let members = snapshot(&server).general.map_or(0, |g| g.members);
    assert!(
        members <= 16,
        "{members} members after {} cycles",
        count("cycles")
    );
}

#[test]
fn defaults_lobby_idle_holds_its_members() {
    let server = default_server();
    let (json, _) = run_binary("lobby-idle", server.general_addr().unwrap(), "1");
    assert_eq!(json["extra"]["held"], 16);
}

#[test]
fn defaults_lobby_chat_keeps_each_member_within_the_chat_rate() {
    let server = default_server();
    let (json, _) = run_binary("lobby-chat", server.general_addr().unwrap(), "1");
    assert_eq!(json["extra"]["members"], 100);
    assert_eq!(
        json["errors"],
        serde_json::json!({}),
        "no ERROR 10 (chat rate)"
    );
}
