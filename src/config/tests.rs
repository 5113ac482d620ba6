//! Tests of the command line: defaults, every flag's values and the one-line errors for bad
//! ones, help and version. The Warzone flags' tests are in `wz.rs`, using `run` and `reason`.

use super::*;

pub(super) fn run(args: &[&str]) -> Result<Config, UsageError> {
    match parse_args(args.iter().map(|a| a.to_string()))? {
        CliCommand::Run(config) => Ok(*config),
        other => panic!("expected Run, got {other:?}"),
    }
}

/// `run` on a space-separated command line, for values without spaces.
fn run_line(line: &str) -> Result<Config, UsageError> {
    run(&line.split_whitespace().collect::<Vec<_>>())
}

pub(super) fn reason(args: &[&str]) -> String {
    match run(args) {
        Ok(config) => panic!("expected an error for {args:?}, got {config:?}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn defaults() {
    let c = run(&[]).unwrap();
    assert_eq!(c, Config::default());
    assert_eq!(c.bind, IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    assert_eq!((c.udp_port, c.tcp_port), (Some(4242), Some(4242)));
    assert_eq!(
        c.instance_ports,
        InstancePorts::Range { lo: 4300, hi: 4399 }
    );
    assert_eq!(c.max_rooms, 100);
    assert_eq!((c.max_players, c.min_players), (4, 2));
    assert_eq!(c.countdown, Duration::from_secs(5));
    assert_eq!(c.countdown_tick, Duration::from_millis(100));
    assert!(!c.auto_start);
    assert_eq!(c.idle_timeout, Duration::from_secs(30));
    assert_eq!(c.seat_timeout, Duration::from_secs(10));
    assert_eq!(c.reap_grace, Duration::from_secs(2));
    assert_eq!((c.udp_rate, c.udp_reply_bytes), (50, 64_000));
    assert_eq!(c.rate_table_size, 65_536);
    assert_eq!(c.max_list_rooms, 112);
    assert_eq!(c.public_host, None);
    assert_eq!(
        c.spawns,
        vec![
            (100.0, 100.0),
            (100.0, 200.0),
            (100.0, 300.0),
            (100.0, 400.0)
        ]
    );
    assert_eq!((c.max_violations, c.conn_rate), (5, 5));
    assert_eq!((c.max_conns, c.max_conns_per_ip), (10_000, 64));
    assert_eq!(c.log, None);
}

#[test]
fn help_and_version() {
    let help = parse_args(["--help".to_string()]).unwrap();
    let CliCommand::Help(text) = help else {
        panic!("expected Help, got {help:?}");
    };
    assert!(text.contains("--instance-ports LO-HI"));
    assert!(text.contains("(default 4300-4399)"));
    assert_eq!(
        parse_args(["-h".to_string()]).unwrap(),
        CliCommand::Help(text)
    );
    let expected = CliCommand::Version(format!("lobbyd {}", env!("CARGO_PKG_VERSION")));
    assert_eq!(parse_args(["-V".to_string()]).unwrap(), expected);
    assert_eq!(parse_args(["--version".to_string()]).unwrap(), expected);
    // Help wins over a bad value, not over an unknown flag.
    assert!(matches!(
        parse_args(["--port".into(), "x".into(), "-h".into()]),
        Ok(CliCommand::Help(_))
    ));
    assert!(parse_args(["--nope".into(), "-h".into()]).is_err());
}

#[test]
fn bind() {
    assert_eq!(
        run(&["--bind", "127.0.0.1"]).unwrap().bind,
        IpAddr::from([127, 0, 0, 1])
    );
    let v6: IpAddr = "::1".parse().unwrap();
    assert_eq!(run(&["--bind", "::1"]).unwrap().bind, v6);
    assert_eq!(run(&["--bind", "[::1]"]).unwrap().bind, v6);
    assert_eq!(
        reason(&["--bind", "localhost"]),
        "--bind: \"localhost\" is not an IP address"
    );
}

#[test]
fn ports() {
    let c = run(&["--port", "5000"]).unwrap();
    assert_eq!((c.udp_port, c.tcp_port), (Some(5000), Some(5000)));
    let c = run(&["--port", "5000", "--udp-port", "0"]).unwrap();
    assert_eq!((c.udp_port, c.tcp_port), (None, Some(5000)));
    let c = run(&["--tcp-port=0", "--udp-port", "6000"]).unwrap();
    assert_eq!((c.udp_port, c.tcp_port), (Some(6000), None));
    let c = run(&["--port", "0"]).unwrap();
    assert_eq!((c.udp_port, c.tcp_port), (Some(0), Some(0)));
    assert_eq!(
        reason(&["--port", "abc"]),
        "--port: \"abc\" is not a port number (0-65535)"
    );
    assert_eq!(
        reason(&["--udp-port", "65536"]),
        "--udp-port: \"65536\" is not a port number (0-65535)"
    );
    assert!(reason(&["--tcp-port", "-1"]).starts_with("--tcp-port: \"-1\""));
}

#[test]
fn instance_ports() {
    let c = run(&["--instance-ports", "5000-5009"]).unwrap();
    assert_eq!(
        c.instance_ports,
        InstancePorts::Range { lo: 5000, hi: 5009 }
    );
    assert_eq!(c.max_rooms, 10);
    let c = run(&["--instance-ports", "7000"]).unwrap();
    assert_eq!(
        c.instance_ports,
        InstancePorts::Range { lo: 7000, hi: 7000 }
    );
    assert_eq!(c.max_rooms, 1);
    let c = run(&["--instance-ports", "1-65535"]).unwrap();
    assert_eq!(c.max_rooms, 65_535);
    let c = run(&["--instance-ports", "0"]).unwrap();
    assert_eq!(c.instance_ports, InstancePorts::Ephemeral);
    assert_eq!(c.max_rooms, 64);
    for bad in [
        "10-5", "0-0", "0-10", "a-b", "5-", "-5", "1-2-3", "70000", "",
    ] {
        let got = reason(&["--instance-ports", bad]);
        assert!(
            got.starts_with(&format!("--instance-ports: {bad:?} is not")),
            "{got}"
        );
    }
}

#[test]
fn counts() {
    let spawns = "--spawns 0,0;1,1;2,2;3,3;4,4;5,5;6,6;7,7";
    let c = run_line(&format!(
        "--max-rooms 3 --max-players 8 --min-players 1 {spawns}"
    ));
    let c = c.unwrap();
    assert_eq!((c.max_rooms, c.max_players, c.min_players), (3, 8, 1));
    let c = run(&["--instance-ports", "0", "--max-rooms", "500"]).unwrap();
    assert_eq!(c.max_rooms, 500);
    assert_eq!(
        reason(&["--max-rooms", "0"]),
        "--max-rooms: \"0\" is not a whole number (1-65535)"
    );
    assert_eq!(
        reason(&["--max-players", "0"]),
        "--max-players: \"0\" is not a whole number (1-64)"
    );
    assert!(reason(&["--max-players", "65"]).starts_with("--max-players: \"65\""));
    assert_eq!(
        reason(&["--min-players", "3", "--max-players", "2"]),
        "--min-players: 3 is more than --max-players (2)"
    );
    assert!(reason(&["--min-players", "0"]).starts_with("--min-players: \"0\""));
    // The default minimum shrinks to fit a smaller room; an explicit one does not.
    let c = run_line("--max-players 1").unwrap();
    assert_eq!((c.max_players, c.min_players), (1, 1));
    assert!(run_line("--max-players 1 --min-players 2").is_err());
    assert_eq!(run(&[]).unwrap().rtype_udp_records, RecordLayout::V3);
    let c = run(&["--rtype-udp-records", "v1"]).unwrap();
    assert_eq!(c.rtype_udp_records, RecordLayout::V1);
    assert_eq!(
        reason(&["--rtype-udp-records", "v2"]),
        "--rtype-udp-records: \"v2\" is neither v1 nor v3"
    );
    let c = run(&["--max-list-rooms", "1"]).unwrap();
    assert_eq!(c.max_list_rooms, 1);
    assert_eq!(
        reason(&["--max-list-rooms", "113"]),
        "--max-list-rooms: \"113\" is not a whole number (1-112)"
    );
}

#[test]
fn durations() {
    let c = run_line(concat!(
        "--countdown 0.5 --idle-timeout 0.5 --seat-timeout 2.25 ",
        "--reap-grace 0 --countdown-tick 250",
    ))
    .unwrap();
    assert_eq!(c.countdown, Duration::from_millis(500));
    assert_eq!(c.countdown_whole_secs(), 1);
    assert_eq!(c.idle_timeout, Duration::from_millis(500));
    assert_eq!(c.seat_timeout, Duration::from_millis(2250));
    assert_eq!(c.reap_grace, Duration::ZERO);
    assert_eq!(c.countdown_tick, Duration::from_millis(250));
    let c = run(&["--countdown", "255"]).unwrap();
    assert_eq!(c.countdown_whole_secs(), 255);
    assert_eq!(
        run(&["--countdown", "0"]).unwrap().countdown_whole_secs(),
        0
    );
    assert_eq!(
        reason(&["--countdown", "256"]),
        "--countdown: \"256\" is not a number of seconds (0-255)"
    );
    assert!(reason(&["--idle-timeout", "0"]).starts_with("--idle-timeout: \"0\""));
    assert!(reason(&["--seat-timeout", "0"]).starts_with("--seat-timeout: \"0\""));
    for bad in ["-1", "NaN", "inf", "1s", ""] {
        assert!(
            reason(&["--reap-grace", bad]).starts_with("--reap-grace: "),
            "{bad}"
        );
    }
    // One deadline for every front end's connections that have not signed in yet.
    let d = run(&[]).unwrap();
    assert_eq!(d.handshake_timeout, Duration::from_secs(5));
    assert_eq!(d.wz.handshake_timeout, Duration::from_secs(5));
    assert_eq!(d.general.core.sign_in_timeout, Duration::from_secs(5));
    let c = run(&["--handshake-timeout", "1.5"]).unwrap();
    let want = Duration::from_millis(1500);
    assert_eq!(c.handshake_timeout, want);
    assert_eq!(c.wz.handshake_timeout, want);
    assert_eq!(c.general.core.sign_in_timeout, want);
    assert!(reason(&["--handshake-timeout", "0"]).starts_with("--handshake-timeout: \"0\""));
    assert!(reason(&["--countdown-tick", "0"]).starts_with("--countdown-tick: \"0\""));
    assert!(reason(&["--countdown-tick", "10001"]).starts_with("--countdown-tick:"));
    assert!(run(&["--auto-start"]).unwrap().auto_start);
}

#[test]
fn rates_and_limits() {
    let c = run_line(concat!(
        "--udp-rate 7 --udp-reply-bytes 0 --rate-table-size 9 --max-violations 3 ",
        "--conn-rate 60 --max-conns 100 --max-conns-per-ip 2",
    ))
    .unwrap();
    assert_eq!(
        (c.udp_rate, c.udp_reply_bytes, c.rate_table_size),
        (7, 0, 9)
    );
    assert_eq!((c.max_violations, c.conn_rate), (3, 60));
    assert_eq!((c.max_conns, c.max_conns_per_ip), (100, 2));
    assert_eq!(
        reason(&["--udp-rate", "0"]),
        "--udp-rate: \"0\" is not a whole number (1-2147483647)"
    );
    assert_eq!(
        reason(&["--rate-table-size", "0"]),
        "--rate-table-size: \"0\" is not a whole number (1 or more)"
    );
    for flag in [
        "--max-violations",
        "--conn-rate",
        "--max-conns",
        "--max-conns-per-ip",
    ] {
        assert!(
            reason(&[flag, "0"]).starts_with(&format!("{flag}: \"0\"")),
            "{flag}"
        );
        assert!(
            reason(&[flag, "x"]).starts_with(&format!("{flag}: \"x\"")),
            "{flag}"
        );
    }
}

#[test]
fn public_host() {
    let c = run(&["--public-host", "203.0.113.7"]).unwrap();
    assert_eq!(c.public_host, Some(Ipv4Addr::new(203, 0, 113, 7)));
    assert_eq!(
        reason(&["--public-host", "::1"]),
        "--public-host: \"::1\" is not an IPv4 address"
    );
    assert!(reason(&["--public-host", "0.0.0.0"]).starts_with("--public-host: \"0.0.0.0\""));
}

#[test]
fn spawns() {
    let c = run(&["--max-players", "2", "--spawns", "1.5,2; -3,4e1"]).unwrap();
    assert_eq!(c.spawns, vec![(1.5, 2.0), (-3.0, 40.0)]);
    assert_eq!(
        reason(&["--spawns", "1,2;3,4"]),
        "--spawns: 2 spawn points for --max-players 4; give at least one x,y pair per player"
    );
    for bad in ["1,2;3", "1,2;", "a,b", "1,inf", ""] {
        let got = reason(&["--max-players", "1", "--spawns", bad]);
        assert!(
            got.starts_with(&format!("--spawns: {bad:?} is not")),
            "{got}"
        );
    }
}

#[test]
fn log_level() {
    assert_eq!(
        run(&["--log", "DEBUG"]).unwrap().log.as_deref(),
        Some("debug")
    );
    assert_eq!(run(&["--log", "off"]).unwrap().log.as_deref(), Some("off"));
    assert!(reason(&["--log", "loud"]).starts_with("--log: \"loud\" is not a log level"));
}

#[test]
fn syntax_errors() {
    assert_eq!(reason(&["--frobnicate"]), "unknown flag --frobnicate");
    assert_eq!(reason(&["-x"]), "unknown flag -x");
    assert_eq!(reason(&["--port"]), "--port needs a value");
    assert_eq!(
        reason(&["--port", "1", "--port", "2"]),
        "--port given more than once"
    );
    assert_eq!(
        reason(&["--auto-start=yes"]),
        "--auto-start does not take a value"
    );
    assert_eq!(reason(&["serve"]), "unexpected argument \"serve\"");
    assert_eq!(reason(&["--", "--port"]), "unexpected argument \"--port\"");
    // Control characters are escaped, so the reason stays on one line.
    assert!(!reason(&["--port", "1\n2"]).contains('\n'));
}

/// A config file in the temporary directory, removed when dropped.
struct TempConfig(std::path::PathBuf);

impl TempConfig {
    fn new(tag: &str, text: &str) -> TempConfig {
        let path =
            std::env::temp_dir().join(format!("lobbyd-config-{tag}-{}.toml", std::process::id()));
        std::fs::write(&path, text).unwrap();
        TempConfig(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempConfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn config_file_sets_every_kind_of_flag_and_flags_win() {
    let file = TempConfig::new(
        "kinds",
        "max-players = 3\ncountdown = 2.5\nauto-start = true\nmotd = \"hello \\\"there\\\"\"\n\
         lobby-auto-approve = false\nwz-login = 'off'\nlobby-hosted = \"tictactoe=2\"\n\
         tcp-port = 0\n",
    );
    let c = run(&["--config", file.path(), "--tcp-port", "5000"]).unwrap();
    assert_eq!(c.max_players, 3);
    assert_eq!(c.countdown, Duration::from_millis(2500));
    assert!(c.auto_start);
    assert_eq!(c.wz.motd.as_deref(), Some("hello \"there\""));
    assert!(!c.general.core.auto_approve);
    assert_eq!(c.wz.login, crate::accounts::LoginPolicy::Off);
    assert_eq!(c.tcp_port, Some(5000), "the flag wins over the file");
    // Without the file, the defaults.
    let d = run(&["--tcp-port", "5000"]).unwrap();
    assert_ne!(c.general.core.hosted, d.general.core.hosted);
    // A switch on the command line stays on whatever the file says.
    let off = TempConfig::new("switch", "auto-start = false\n");
    assert!(
        run(&["--config", off.path(), "--auto-start"])
            .unwrap()
            .auto_start
    );
    assert!(!run(&["--config", off.path()]).unwrap().auto_start);
}

#[test]
fn config_file_errors_are_one_line_naming_the_key() {
    let cases = [
        (
            "nope = 1\n",
            ":1: nope: unknown key (keys are flags' long names)",
        ),
        (
            "port = 1\nconfig = \"x\"\n",
            ":2: config: not a setting (only on the command line)",
        ),
        (
            "\n\nport = true\n",
            ":3: port: takes a value (a string or a number), not true or false",
        ),
        ("auto-start = 1\n", ":1: auto-start: takes true or false"),
        ("max-players = 0\n", ":1: --max-players: \"0\""),
        (
            "Port = 1\n",
            ":1: Port: unknown key (keys are flags' long names)",
        ),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let file = TempConfig::new(&format!("bad{i}"), text);
        let err = reason(&["--config", file.path()]);
        assert!(
            err.starts_with(&format!("{}{expected}", file.path())),
            "{text:?}: {err}"
        );
        assert!(!err.contains('\n'), "{err}");
    }
}

/// The start-up log's summary: one line per front end, "off" for a disabled one.
#[test]
fn summary_of_the_defaults() {
    let c = run(&[]).unwrap();
    assert_eq!(
        c.summary(),
        [
            "udp room lobby: 0.0.0.0:4242, up to 100 rooms of 2-4 players, instance ports 4300-4399",
            "tcp lobby: 0.0.0.0:4242",
            "warzone master server: 0.0.0.0:9990, login optional",
            "general lobby: 0.0.0.0:4243, login off, hosted games none",
            "general lobby websocket: 0.0.0.0:4244",
        ]
    );
}

/// The summary with the optional parts: the status page, a game server per room and the room
/// directory; the WebSocket port is off with the general lobby.
#[test]
fn summary_with_every_part() {
    let c = run(&[
        "--bind",
        "::1",
        "--port",
        "0",
        "--instance-ports",
        "0",
        "--wz-port",
        "0",
        "--lobby-port",
        "0",
        "--metrics",
        "127.0.0.1:9100",
        "--instance-exec",
        "/usr/bin/game-server --port {port}",
        "--node-id",
        "3",
        "--directory",
        "redis+unix:///run/redis.sock",
        "--reuse-port",
    ])
    .unwrap();
    assert_eq!(
        c.summary(),
        [
            "udp room lobby: [::1]:0, up to 64 rooms of 2-4 players, instance ports chosen by \
             the system",
            "tcp lobby: [::1]:0",
            "warzone master server: off",
            "general lobby: off",
            "general lobby websocket: off",
            "status page and /metrics: 127.0.0.1:9100",
            "game server per room: /usr/bin/game-server --port {port}",
            "room directory: redis+unix:///run/redis.sock, node 3, ports shared (--reuse-port)",
        ]
    );
    let c = run(&["--lobby-hosted", "tictactoe=2", "--lobby-login", "required"]).unwrap();
    assert_eq!(
        c.summary()[3],
        "general lobby: 0.0.0.0:4243, login required, hosted games tictactoe=2"
    );
}
