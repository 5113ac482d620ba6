//! End-to-end tests of the `lobbyd` command line: exit codes, stdout and stderr of the
//! built binary for help, version, rejected flags and unreadable files (these end before
//! the network is touched), and signals: SIGTERM to a server running on loopback.

use std::process::{Command, Output};

mod common;

use common::LOOPBACK_ARGS;

fn lobbyd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lobbyd"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("the lobbyd binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts exit status 2, nothing on stdout, and exactly the reason line plus the hint
/// on stderr, the reason starting with `prefix`.
fn assert_usage_error(args: &[&str], prefix: &str) {
    let output = lobbyd(args);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
    assert_eq!(stdout(&output), "", "{args:?}");
    let err = stderr(&output);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{args:?}: {err}");
    assert!(
        lines[0].starts_with(&format!("lobbyd: {prefix}")),
        "{args:?}: {err}"
    );
    assert_eq!(lines[1], "Try 'lobbyd --help' for more information.");
}

/// Every flag as the help text must show it, with its value hint.
const FLAGS: [&str; 64] = [
    "-h, --help",
    "-V, --version",
    "--bind ADDR",
    "--port PORT",
    "--udp-port PORT",
    "--tcp-port PORT",
    "--instance-ports LO-HI",
    "--max-rooms N",
    "--max-players N",
    "--min-players N",
    "--countdown SECS",
    "--countdown-tick MS",
    "--auto-start",
    "--idle-timeout SECS",
    "--seat-timeout SECS",
    "--reap-grace SECS",
    "--udp-rate N",
    "--udp-reply-bytes N",
    "--rate-table-size N",
    "--max-list-rooms N",
    "--max-rooms-per-ip N",
    "--public-host IPV4",
    "--spawns X,Y;...",
    "--max-violations N",
    "--conn-rate N",
    "--max-conns N",
    "--max-conns-per-ip N",
    "--handshake-timeout SECS",
    "--metrics ADDR",
    "--log LEVEL",
    "--wz-port PORT",
    "--motd TEXT",
    "--motd-file PATH",
    "--wz-check-reachable on|off",
    "--wz-probe-timeout SECS",
    "--wz-silence-timeout SECS",
    "--wz-min-version MAJOR.MINOR",
    "--wz-banned-words FILE",
    "--wz-max-games-per-ip N",
    "--wz-max-games N",
    "--wz-max-conns N",
    "--wz-max-conns-per-ip N",
    "--wz-register-rate N",
    "--wz-login required|optional|off",
    "--db PATH",
    "--lobby-port PORT",
    "--lobby-login required|optional|off",
    "--lobby-max-frame BYTES",
    "--lobby-sign-in-tries N",
    "--lobby-max-games-per-member N",
    "--lobby-ask-timeout SECS",
    "--lobby-auto-approve",
    "--lobby-game-data BYTES",
    "--lobby-chat-rate N",
    "--lobby-chat-ip-rate N",
    "--lobby-chat-budget BYTES",
    "--lobby-max-games-per-ip N",
    "--lobby-game-data-per-ip BYTES",
    "--lobby-resume-grace SECS",
    "--lobby-hosted TYPE=N",
    "--lobby-max-members N",
    "--lobby-max-conns N",
    "--lobby-max-conns-per-ip N",
    "--lobby-conn-rate N",
];

/// A sample of defaults the help text must quote.
const DEFAULTS: [&str; 11] = [
    "(default 0.0.0.0)",
    "(default 4242)",
    "(default 4300-4399)",
    "(default 30)",
    "(default 64000)",
    "(default 112)",
    "(default \"100,100;100,200;100,300;100,400\")",
    "(default 10000)",
    "(default 9990)",
    "(default lobbyd.sqlite)",
    "(default 4243)",
];

#[test]
fn help_lists_every_flag() {
    for arg in ["--help", "-h"] {
        let output = lobbyd(&[arg]);
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(stderr(&output), "");
        let text = stdout(&output);
        assert!(text.contains("Usage: lobbyd"), "{text}");
        for needle in FLAGS.iter().chain(&DEFAULTS) {
            assert!(text.contains(needle), "help lacks {needle:?}:\n{text}");
        }
        // One help row per flag, so a flag added without updating FLAGS fails here.
        let rows = text.lines().filter(|l| l.trim_start().starts_with('-'));
        assert_eq!(rows.count(), FLAGS.len(), "{text}");
    }
}

#[test]
fn version() {
    for arg in ["-V", "--version"] {
        let output = lobbyd(&[arg]);
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(stdout(&output), "lobbyd 0.1.0\n");
        assert_eq!(stderr(&output), "");
    }
}

#[test]
fn bad_values_exit_2_with_one_line_reason() {
    assert_usage_error(
        &["--port", "abc"],
        "--port: \"abc\" is not a port number (0-65535)",
    );
    assert_usage_error(&["--tcp-port", "70000"], "--tcp-port: \"70000\"");
    assert_usage_error(&["--instance-ports", "10-5"], "--instance-ports: \"10-5\"");
    assert_usage_error(&["--max-players", "0"], "--max-players: \"0\"");
    assert_usage_error(&["--idle-timeout", "soon"], "--idle-timeout: \"soon\"");
    assert_usage_error(&["--frobnicate"], "unknown flag --frobnicate");
    assert_usage_error(&["stray"], "unexpected argument \"stray\"");
    assert_usage_error(
        &["--max-players", "5", "--spawns", "1,1;2,2"],
        "--spawns: 2 spawn points for --max-players 5",
    );
    assert_usage_error(
        &["--min-players", "5"],
        "--min-players: 5 is more than --max-players (4)",
    );
    assert_usage_error(&["--port"], "--port needs a value");
    assert_usage_error(&["--port", "1\n2"], "--port: \"1\\n2\"");
}

#[test]
fn bad_warzone_values_exit_2_with_one_line_reason() {
    assert_usage_error(&["--wz-port", "99999"], "--wz-port: \"99999\"");
    assert_usage_error(
        &["--wz-check-reachable", "maybe"],
        "--wz-check-reachable: \"maybe\" is not on or off",
    );
    assert_usage_error(
        &["--wz-login", "sometimes"],
        "--wz-login: \"sometimes\" is not required, optional or off",
    );
    assert_usage_error(
        &["--wz-min-version", "four"],
        "--wz-min-version: \"four\" is not MAJOR.MINOR",
    );
    assert_usage_error(&["--wz-probe-timeout", "5"], "--wz-probe-timeout: \"5\"");
    assert_usage_error(&["--wz-silence-timeout", "-1"], "--wz-silence-timeout:");
    assert_usage_error(
        &["--wz-max-games-per-ip", "0"],
        "--wz-max-games-per-ip: \"0\"",
    );
    assert_usage_error(
        &["--motd", "x", "--motd-file", "y"],
        "--motd and --motd-file exclude each other",
    );
    assert_usage_error(&["--db", ""], "--db: empty path");
}

/// A MOTD or banned-words file that cannot be read stops the server at start with exit 1
/// and the path in the message; nothing is served on a half-read configuration.
#[test]
fn unreadable_warzone_files_exit_1() {
    for flag in ["--motd-file", "--wz-banned-words"] {
        let mut args = LOOPBACK_ARGS.to_vec();
        args.extend(["--wz-port", "0", flag, "/nonexistent/lobbyd-test-file"]);
        let output = lobbyd(&args);
        assert_eq!(output.status.code(), Some(1), "{flag}: {output:?}");
        assert!(
            stderr(&output).contains("/nonexistent/lobbyd-test-file"),
            "{flag}: {}",
            stderr(&output)
        );
    }
}

/// A port already in use stops the start with exit 1 and one line naming the listener and
/// the address.
#[test]
fn bind_errors_name_the_listener_and_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let mut args = LOOPBACK_ARGS.to_vec();
    args.extend(["--wz-port", "0", "--tcp-port", &port, "--udp-port", "0"]);
    let output = lobbyd(&args);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let expected = format!("lobbyd: tcp lobby 127.0.0.1:{port}: ");
    assert!(
        stderr(&output).lines().any(|l| l.starts_with(&expected)),
        "{}",
        stderr(&output)
    );
}

/// An account database in a directory that does not exist stops the start with exit 1 and
/// one line (the Warzone server's default `--wz-login optional` uses it), instead of failing
/// every login later. The check runs before anything is bound.
#[test]
fn account_database_in_a_missing_directory_exits_1() {
    let mut args = LOOPBACK_ARGS.to_vec();
    args.extend(["--db", "/nonexistent-lobbyd-dir/accounts.sqlite"]);
    let output = lobbyd(&args);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let err = stderr(&output);
    assert!(
        err.lines()
            .any(|l| l.starts_with("lobbyd: account database ")
                && l.contains("/nonexistent-lobbyd-dir")),
        "{err}"
    );
}

/// A `lobbyd` serving on loopback with OS-chosen ports, once it has logged its addresses;
/// returns the child and its TCP lobby address.
fn running_lobbyd() -> (std::process::Child, std::net::SocketAddr) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lobbyd"))
        .args(LOOPBACK_ARGS)
        .args(["--wz-port", "0", "--log", "info"])
        .env_remove("RUST_LOG")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("lobbyd starts");
    // Wait until it has bound its sockets (it logs the real addresses).
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines().map_while(Result::ok);
    let mut udp = false;
    let mut tcp = None;
    for line in lines.by_ref() {
        udp |= line.contains("udp room lobby listening on 127.0.0.1:");
        if let Some((_, addr)) = line.split_once("tcp lobby listening on ") {
            tcp = addr.trim().parse().ok();
        }
        if udp && tcp.is_some() {
            break;
        }
    }
    assert!(udp, "lobbyd never reported its UDP address");
    let tcp = tcp.expect("lobbyd never reported its TCP lobby address");
    // Keep draining its log so the child never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, tcp)
}

/// Sends SIGTERM and asserts the process exits 0 within a few seconds.
fn terminate_exits_zero(child: &mut std::process::Child) {
    use std::time::{Duration, Instant};
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert_eq!(status.code(), Some(0));
            break;
        }
        assert!(Instant::now() < deadline, "lobbyd ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGTERM stops a running server cleanly: exit code 0 within a second or two.
#[test]
fn sigterm_exits_zero() {
    let (mut child, _) = running_lobbyd();
    terminate_exits_zero(&mut child);
}

/// On SIGTERM a TCP lobby member is told ERROR_MSG 0xFF "server shutting down", then the
/// connection closes and the process exits 0.
#[test]
fn sigterm_notifies_tcp_lobby_members() {
    use std::io::{Read, Write};
    use std::time::Duration;
    let (mut child, tcp) = running_lobbyd();
    let mut member = std::net::TcpStream::connect(tcp).unwrap();
    member
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut connect = vec![0x10, 0x20, 0x00];
    connect.extend_from_slice(b"Alice");
    connect.resize(35, 0);
    member.write_all(&connect).unwrap();
    // CONNECT_ACK (12 bytes) and Alice's own PLAYER_JOIN (45 bytes).
    let mut joined = [0u8; 57];
    member.read_exact(&mut joined).unwrap();
    assert_eq!(&joined[..3], &[0x11, 0x09, 0x00]);
    terminate_exits_zero(&mut child);
    let mut rest = Vec::new();
    member.read_to_end(&mut rest).unwrap();
    let mut expected = vec![0x1F, 22, 0, 0xFF];
    expected.extend_from_slice(b"server shutting down\0");
    assert_eq!(rest, expected);
}
