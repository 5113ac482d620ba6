//! End-to-end tests of the `lobbyd` command line: exit codes, stdout and stderr of the
//! built binary for help, version, rejected flags and unreadable files (these end before
//! the network is touched), and signals: SIGTERM to a server running on loopback.

use std::process::{Command, Output};

use crate::common;

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
const FLAGS: [&str; 79] = [
    "-h, --help",
    "-V, --version",
    "--config FILE",
    "--bind ADDR",
    "--port PORT",
    "--udp-port PORT",
    "--tcp-port PORT",
    "--instance-ports LO-HI",
    "--instance-exec CMD",
    "--instance-stop-grace SECS",
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
    "--rtype-udp-records v1|v3",
    "--max-rooms-per-ip N",
    "--public-host IPV4",
    "--spawns X,Y;...",
    "--max-violations N",
    "--conn-rate N",
    "--max-conns N",
    "--max-conns-per-ip N",
    "--tcp-memory-budget MIB",
    "--handshake-timeout SECS",
    "--metrics ADDR",
    "--metrics-max-conns-per-ip N",
    "--metrics-conn-rate N",
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
    "--wz-memory-budget MIB",
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
    "--lobby-resume-grace SECS",
    "--lobby-hosted TYPE=N",
    "--lobby-max-members N",
    "--lobby-max-conns N",
    "--lobby-max-conns-per-ip N",
    "--lobby-conn-rate N",
    "--lobby-memory-budget MIB",
    "--lobby-chat-ip-rate N",
    "--lobby-chat-budget BYTES",
    "--lobby-max-games-per-ip N",
    "--lobby-game-data-per-ip BYTES",
    "--node-id N",
    "--directory URL",
    "--reuse-port",
    "--lobby-ws-port PORT",
    "--lobby-ws-origins LIST",
    "--lobby-web DIR",
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
    assert_usage_error(&["--tcp-memory-budget", "0"], "--tcp-memory-budget: \"0\"");
    assert_usage_error(
        &["--wz-memory-budget", "1048577"],
        "--wz-memory-budget: \"1048577\"",
    );
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

#[test]
fn bad_directory_values_exit_2_with_one_line_reason() {
    let redis = "redis://127.0.0.1:6379";
    assert_usage_error(
        &["--node-id", "0", "--directory", redis],
        "--node-id: \"0\"",
    );
    assert_usage_error(
        &["--node-id", "256", "--directory", redis],
        "--node-id: \"256\"",
    );
    assert_usage_error(&["--node-id", "3"], "--node-id and --directory go together");
    assert_usage_error(
        &["--directory", redis],
        "--node-id and --directory go together",
    );
    assert_usage_error(
        &["--node-id", "3", "--directory", "127.0.0.1:6379"],
        "--directory: \"127.0.0.1:6379\" is not a Redis address",
    );
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

/// A running `lobbyd` with `args` (run by `wrapper`, e.g. `prlimit`, when not empty) and its
/// log lines (stderr), as they come.
fn spawn_wrapped(
    wrapper: &[&str],
    args: &[&str],
) -> (std::process::Child, impl Iterator<Item = String> + Send) {
    use std::io::{BufRead, BufReader};
    let binary = env!("CARGO_BIN_EXE_lobbyd");
    let mut command = match wrapper.split_first() {
        Some((program, wrapper_args)) => {
            let mut command = std::process::Command::new(program);
            command.args(wrapper_args).arg(binary);
            command
        }
        None => std::process::Command::new(binary),
    };
    let mut child = command
        .args(args)
        .env_remove("RUST_LOG")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("lobbyd starts");
    let stderr = child.stderr.take().unwrap();
    (child, BufReader::new(stderr).lines().map_while(Result::ok))
}

/// A running `lobbyd` with `args` and its log lines (stderr), as they come.
fn spawn_logging(args: &[&str]) -> (std::process::Child, impl Iterator<Item = String> + Send) {
    spawn_wrapped(&[], args)
}

/// A `lobbyd` started with `args` (run by `wrapper`, e.g. `prlimit`, when not empty), once
/// it has logged the address of each listener named in `listeners` (as its log names them:
/// "udp room lobby", "tcp lobby", ...); returns the child and those addresses, in order.
pub(crate) fn spawn_lobbyd(
    wrapper: &[&str],
    args: &[&str],
    listeners: &[&str],
) -> (std::process::Child, Vec<std::net::SocketAddr>) {
    let (child, mut lines) = spawn_wrapped(wrapper, args);
    let mut found: Vec<Option<std::net::SocketAddr>> = vec![None; listeners.len()];
    let mut log = Vec::new();
    for line in lines.by_ref() {
        for (name, addr) in listeners.iter().zip(found.iter_mut()) {
            if let Some((_, rest)) = line.split_once(&format!("] {name} listening on ")) {
                *addr = rest.trim().parse().ok();
            }
        }
        log.push(line);
        if found.iter().all(Option::is_some) {
            break;
        }
    }
    let addrs: Vec<_> = found.into_iter().flatten().collect();
    assert_eq!(
        addrs.len(),
        listeners.len(),
        "lobbyd log:\n{}",
        log.join("\n")
    );
    // Keep draining its log so the child never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, addrs)
}

/// A `lobbyd` serving on loopback with OS-chosen ports, once it has logged its addresses;
/// returns the child and its TCP lobby address.
fn running_lobbyd() -> (std::process::Child, std::net::SocketAddr) {
    let mut args = LOOPBACK_ARGS.to_vec();
    args.extend(["--wz-port", "0", "--log", "info"]);
    let (child, addrs) = spawn_lobbyd(&[], &args, &["udp room lobby", "tcp lobby"]);
    (child, addrs[1])
}

/// The start-up log says what is served, one line per front end ("off" for a disabled one),
/// not the whole configuration as one line of Rust debug output.
#[test]
fn the_start_up_log_is_a_summary_one_line_per_front_end() {
    let mut args = LOOPBACK_ARGS.to_vec();
    args.extend(["--wz-port", "0", "--log", "info"]);
    let (mut child, lines) = spawn_wrapped(&[], &args);
    let mut log = Vec::new();
    // The driver's last listener line ends the start-up; lobbyd exiting ends the lines too.
    for line in lines {
        let last = line.contains("general lobby websocket disabled");
        log.push(line);
        if last {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let text = log.join("\n");
    let summary = [
        format!("lobbyd {} starting", env!("CARGO_PKG_VERSION")),
        "udp room lobby: 127.0.0.1:0, up to 64 rooms of 2-4 players, instance ports chosen by \
         the system"
            .to_owned(),
        "tcp lobby: 127.0.0.1:0".to_owned(),
        "warzone master server: off".to_owned(),
        "general lobby: off".to_owned(),
        "general lobby websocket: off".to_owned(),
    ];
    for wanted in &summary {
        assert!(
            log.iter()
                .any(|line| line.ends_with(&format!("] {wanted}"))),
            "no line {wanted:?} in the log:\n{text}"
        );
    }
    assert!(
        !text.contains("Config {"),
        "the whole Config logged:\n{text}"
    );
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

/// A config file in a fresh temporary directory, removed when dropped.
struct ConfigFile(std::path::PathBuf);

impl ConfigFile {
    fn new(tag: &str, text: &str) -> ConfigFile {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!(
            "lobbyd-cli-{tag}-{}-{nanos}.toml",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        ConfigFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The settings of `--config FILE` are applied (the TCP lobby off, the metrics endpoint on),
/// and a flag given on the command line wins over the file's value for it (`--log info`
/// over the file's `warn`: without it, none of these info lines would be logged).
#[test]
fn config_file_values_apply_and_flags_win() {
    let file = ConfigFile::new(
        "apply",
        "# lobbyd on loopback, the TCP lobby off\nbind = \"127.0.0.1\"\nport = 0\n\
         instance-ports = \"0\"\ntcp-port = 0\nlobby-port = 0 # general lobby off\n\
         wz-port = 0\nmetrics = '127.0.0.1:0'\nlog = \"warn\"\n",
    );
    let (mut child, mut lines) = spawn_logging(&["--config", file.path(), "--log", "info"]);
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let done = line.contains("metrics endpoint listening on 127.0.0.1:");
        seen.push(line);
        if done {
            break;
        }
    }
    std::thread::spawn(move || lines.for_each(drop));
    terminate_exits_zero(&mut child);
    let log = seen.join("\n");
    assert!(
        log.contains("metrics endpoint listening on 127.0.0.1:"),
        "{log}"
    );
    assert!(
        log.contains("udp room lobby listening on 127.0.0.1:"),
        "{log}"
    );
    assert!(log.contains("tcp lobby disabled"), "{log}");
    assert!(!log.contains("general lobby listening"), "{log}");
}

/// A bad key or value in the config file: exit 2, one line naming the file, the line and
/// the key; a flag on the command line does not rescue an unknown key.
#[test]
fn config_file_errors_name_the_key_and_exit_2() {
    let unknown = ConfigFile::new("unknown", "port = 0\nmax-romos = 3\n");
    assert_usage_error(
        &["--config", unknown.path(), "--max-rooms", "3"],
        &format!(
            "{}:2: max-romos: unknown key (keys are flags' long names)",
            unknown.path()
        ),
    );
    let bad_value = ConfigFile::new("value", "\nmax-players = 99\n");
    assert_usage_error(
        &["--config", bad_value.path()],
        &format!("{}:2: --max-players: \"99\"", bad_value.path()),
    );
    // The same bad value overridden by a flag is never looked at.
    let output = lobbyd(&["--config", bad_value.path(), "--max-players", "0"]);
    assert!(
        stderr(&output).starts_with("lobbyd: --max-players: \"0\""),
        "{output:?}"
    );
    let switch = ConfigFile::new("switch", "auto-start = \"yes\"\n");
    assert_usage_error(
        &["--config", switch.path()],
        &format!("{}:1: auto-start: takes true or false", switch.path()),
    );
    let syntax = ConfigFile::new("syntax", "motd = \"unterminated\n");
    assert_usage_error(
        &["--config", syntax.path()],
        &format!("{}:1: motd: unterminated string", syntax.path()),
    );
    assert_usage_error(
        &["--config", "/nonexistent-lobbyd-dir/lobbyd.toml"],
        "--config: cannot read /nonexistent-lobbyd-dir/lobbyd.toml",
    );
}

/// `--help` is grouped by front end, lists `lobbyd user`, and says `--db` is shared.
#[test]
fn help_is_grouped_by_front_end() {
    let text = stdout(&lobbyd(&["--help"]));
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("help lacks {needle:?}:\n{text}"))
    };
    assert!(text.contains("lobbyd user add|del|list"), "{text}");
    let sections = [
        "General options:",
        "R-Type UDP room lobby and game instances:",
        "R-Type TCP lobby:",
        "Warzone 2100 master server:",
        "General lobby:",
        "Metrics and status page:",
    ];
    for pair in sections.windows(2) {
        assert!(at(pair[0]) < at(pair[1]), "{pair:?} out of order:\n{text}");
    }
    // Each flag under its front end's heading.
    for (flag, section) in [
        ("--db PATH", 0),
        ("--config FILE", 0),
        ("--udp-port PORT", 1),
        ("--max-list-rooms N", 1),
        ("--rtype-udp-records v1|v3", 1),
        ("--spawns X,Y;...", 2),
        ("--wz-login", 3),
        ("--motd TEXT", 3),
        ("--lobby-port PORT", 4),
        ("--lobby-ws-port PORT", 4),
        ("--metrics ADDR", 5),
    ] {
        let flag_at = at(flag);
        assert!(flag_at > at(sections[section]), "{flag}:\n{text}");
        if let Some(next) = sections.get(section + 1) {
            assert!(flag_at < at(next), "{flag}:\n{text}");
        }
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    assert!(
        words.join(" ").contains(
            "--db PATH Account database shared by the Warzone v4 and general lobby logins"
        ),
        "{text}"
    );
}

/// Waits at most a few seconds for `child` to exit; its exit code and stderr, or `None` (the
/// child killed) when it was still running.
fn exit_of(mut child: std::process::Child) -> Option<(Option<i32>, String)> {
    use std::io::Read;
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return Some((status.code(), err));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `--max-rooms` whose instance sockets the descriptor limit cannot hold beside the
/// connection caps is refused before anything binds: exit 2, one line naming both.
#[test]
fn max_rooms_past_the_descriptor_limit_exits_2_naming_both() {
    let mut args = vec!["--nofile=1024:1024", env!("CARGO_BIN_EXE_lobbyd")];
    args.extend(LOOPBACK_ARGS);
    args.extend(["--wz-port", "0", "--max-rooms", "5000"]);
    let child = std::process::Command::new("prlimit")
        .args(&args)
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux) runs lobbyd");
    let (code, err) = exit_of(child).expect("lobbyd refused to start");
    assert_eq!(code, Some(2), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("lobbyd: --max-rooms 5000 "), "{err}");
    assert!(lines[0].contains("RLIMIT_NOFILE 1024"), "{err}");
}

/// Reads from `stream` until the peer closes: its bytes, or `None` when it was still open
/// after five seconds (a newcomer left in the backlog, unanswered).
fn read_until_closed(stream: &mut std::net::TcpStream) -> Option<Vec<u8>> {
    use std::io::Read;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Some(bytes),
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// Out of descriptors (the rooms' instance sockets and a crowd of held connections fill
/// the limit), every TCP listener still answers a newcomer: the TCP lobby, the Warzone
/// master server and the general lobby close it at once, their refusal, and the metrics
/// endpoint serves it, counting the refusals.
#[test]
fn every_listener_answers_at_the_descriptor_limit() {
    use std::io::Write;
    let (wz_port, lobby_port) = (common::free_port(), common::free_port());
    let (wz_port, lobby_port) = (wz_port.to_string(), lobby_port.to_string());
    let args = [
        "--bind",
        "127.0.0.1",
        "--port",
        "0",
        "--instance-ports",
        "0",
        "--wz-port",
        &wz_port,
        "--lobby-port",
        &lobby_port,
        // Its default (4244) would collide with any other lobbyd on this machine.
        "--lobby-ws-port",
        "0",
        "--metrics",
        "127.0.0.1:0",
        "--wz-login",
        "off",
        "--lobby-login",
        "off",
        "--max-rooms",
        "48",
        "--max-conns-per-ip",
        "1000",
        "--conn-rate",
        "1000000",
        "--handshake-timeout",
        "60",
        "--seat-timeout",
        "60",
        "--idle-timeout",
        "60",
        "--log",
        "info",
    ];
    let listeners = [
        "udp room lobby",
        "tcp lobby",
        "warzone master server",
        "general lobby",
        "metrics endpoint",
    ];
    let (child, addrs) = spawn_lobbyd(&["prlimit", "--nofile=256:256"], &args, &listeners);
    // Killed however the test ends: a failed assertion must not leave it running.
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _child = KillOnDrop(child);
    let [udp, tcp, wz, general, metrics] = addrs[..] else {
        unreachable!("one address per listener")
    };
    // 48 rooms, 8 per address, each holding an instance socket.
    for n in 0..48 {
        let client = common::UdpClient::on(&format!("127.0.2.{}", 1 + n / 8));
        client.send(udp, &common::frame(0x01, 0x42, 1, &[]));
        assert_eq!(client.recv()[1], 0x43, "ROOM_CREATED");
    }
    // A crowd at the TCP lobby, more than the descriptors left: the last ones are refused.
    let mut crowd: Vec<_> = (0..300)
        .map(|_| common::connect_from(tcp, "127.0.3.1"))
        .collect();
    let last = read_until_closed(crowd.last_mut().unwrap());
    assert_eq!(
        last.as_deref(),
        Some(&b""[..]),
        "the TCP lobby refuses at the limit"
    );

    for (name, addr) in [
        ("tcp lobby", tcp),
        ("warzone", wz),
        ("general lobby", general),
    ] {
        let mut newcomer = common::connect_from(addr, "127.0.3.2");
        let answer = read_until_closed(&mut newcomer);
        assert_eq!(
            answer.as_deref(),
            Some(&b""[..]),
            "{name} refuses at the limit"
        );
    }
    let mut scraper = common::connect_from(metrics, "127.0.3.3");
    scraper
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")
        .unwrap();
    let answer = read_until_closed(&mut scraper).expect("the metrics endpoint answers");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let refused = text
        .lines()
        .find_map(|l| l.strip_prefix("lobbyd_descriptor_limit_refused_total "))
        .and_then(|v| v.parse::<u64>().ok())
        .expect("the refusals counted");
    assert!(refused >= 4, "{refused}");
    drop(crowd);
}
