//! `lobby-load`'s command line: `lobby-load MODE [OPTIONS]`, parsed with getopts into
//! validated [`Options`]. Every value is bounded, so no flag can make a run unbounded.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use getopts::Matches;

use super::dialect::Dialect;
use super::options::{Mode, Options, TcpDialect};
use super::sources::{check_local, parse_sources};

/// Longest run.
pub const MAX_DURATION_SECS: f64 = 3600.0;
/// Most clients (connections for `tcp-idle`).
pub const MAX_CONCURRENCY: usize = 200_000;
/// Largest datagram the tool sends or asks for (the unfragmented UDP payload bound).
pub const MAX_DATAGRAM: usize = 1472;

/// What the command line asks for.
#[derive(Debug)]
pub enum LoadCommand {
    /// Print this text and exit 0.
    Help(String),
    /// Run.
    Run(Box<Options>),
}

fn spec() -> getopts::Options {
    let mut o = getopts::Options::new();
    o.optflag("h", "help", "Print this help and exit.");
    o.optopt(
        "",
        "target",
        "Server address (default 127.0.0.1:4242, wz-* 127.0.0.1:9990, lobby-* 127.0.0.1:4243).",
        "ADDR",
    );
    o.optopt(
        "",
        "duration",
        "Seconds to measure (default 5; tcp-cycle 12, two countdowns of lobbyd's default 5 s; \
         at most 3600).",
        "S",
    );
    o.optopt("", "requests", "Stop after N completed requests.", "N");
    o.optopt(
        "",
        "concurrency",
        "Clients; rooms for relay, connections for tcp-*, wz-*, lobby-join and lobby-idle, \
         lines in flight for lobby-chat (default 16).",
        "N",
    );
    o.optopt(
        "",
        "rate",
        "Open loop: R requests per second in total (datagrams; connection cycles for tcp-*, \
         wz-*, lobby-join; chat lines for lobby-chat). Default: closed loop.",
        "R",
    );
    o.optopt(
        "",
        "sources",
        "Source addresses, e.g. 127.0.0.2-127.0.0.254 or A,B (default: a block of 127.0.0.0/8 \
         sized for the mode when the target is IPv4 loopback, at a random place so runs do not \
         meet each other's per-address state in the server).",
        "IPS",
    );
    o.optopt(
        "",
        "timeout",
        "Milliseconds before an unanswered request is a timeout (default 1000).",
        "MS",
    );
    o.optopt(
        "",
        "rooms",
        "udp-list: rooms created before measuring; wz-list: games registered (default 64).",
        "N",
    );
    o.optopt(
        "",
        "members",
        "relay, tcp-cycle: members per room or party (default 4, at most 64); lobby-chat: \
         members in the lobby (default 100).",
        "N",
    );
    o.optopt(
        "",
        "size",
        "relay, echo: bytes per request datagram; lobby-chat: bytes per chat line, held within 32 to 512 \
         (default 64).",
        "BYTES",
    );
    o.optopt(
        "",
        "reply-size",
        "echo: bytes per reply datagram (default --size).",
        "BYTES",
    );
    o.optopt(
        "",
        "hold",
        "wz-host: milliseconds each host keeps its game listed (default 0); lobby-join: \
         milliseconds a creator waits for a joiner (default 250); at most 60000.",
        "MS",
    );
    o.optopt(
        "",
        "caps",
        "default: keep every source address within lobbyd's default per-address limits \
         (rooms, connections and requests per address, games, chat rate), so a server run \
         without flags refuses nothing; off: the server's limits are raised, go as fast as \
         the mode goes (scripts/bench.sh). What was adjusted is said in one line on stderr.",
        "default|off",
    );
    o.optopt(
        "",
        "max-failures",
        "Percent of requests (completed or failed) that may fail, errors and timeouts, before \
         the exit status is 1 (default 1).",
        "PCT",
    );
    o.optopt(
        "",
        "spread",
        "tcp-cycle: parties start in rounds, each at a random phase over MS once every party \
         is ready (0: all at the same instant); at most 60000. Default: each party starts \
         as soon as it is ready.",
        "MS",
    );
    o.optopt(
        "",
        "dialect",
        "the lobby dialect: seed or rfc (the default, the documents' own), upstream-v1 or \
         upstream-v3 (udp-list, udp-create-join: the upstream R-Type client's UDP spelling, \
         its room list read as lobbyd's --rtype-udp-records says), upstream (tcp-join: the \
         upstream client's TCP dialect; each cycle creates a room, joins it, connects, \
         leaves, so the server's --max-rooms must allow --concurrency rooms).",
        "NAME",
    );
    o.optflag(
        "",
        "allow-remote",
        "Allow a target or source outside loopback.",
    );
    o.optflag(
        "",
        "start",
        "relay: owners send START after setup (countdown, then play).",
    );
    o.optflag(
        "",
        "blocking",
        "echo: a blocking std server, one recv + one send per datagram (default: a mio loop).",
    );
    o.optflag(
        "",
        "ws",
        "lobby-join, lobby-idle, lobby-chat: over lobbyd's WebSocket port (--target is that \
         port, path /lobby), each frame one binary message.",
    );
    o.optflag("", "json", "Print the summary as JSON.");
    o.optflag(
        "q",
        "quiet",
        "No progress line (shown once a second on runs over 2 s, in place on a terminal).",
    );
    o
}

/// The usage text.
pub fn usage() -> String {
    let modes: Vec<&str> = Mode::ALL.iter().map(|m| m.name()).collect();
    let brief = format!(
        "Usage: lobby-load MODE [OPTIONS]\n\nMODE is one of: {}.\n\
         Every run stops by itself after --duration (or --requests) and targets loopback only\n\
         unless --allow-remote is given. echo starts its own UDP echo server: the baseline.\n\
         Against lobbyd's defaults (make run) every mode works with no flags. Exit status: 0\n\
         when the run completed within --max-failures, 1 when it did not, 2 for a usage\n\
         error, 3 when setup failed (the message names the server flag in the way).\n\
         hostile-* modes are attackers (scripts/hostile.sh): --concurrency connections held,\n\
         --rate junk connections (hostile-udp: datagrams) a second, --members the flooded party.",
        modes.join(", ")
    );
    spec().usage(&brief)
}

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<LoadCommand, String> {
    let m = spec().parse(args).map_err(|e| e.to_string())?;
    if m.opt_present("help") {
        return Ok(LoadCommand::Help(usage()));
    }
    let [mode] = m.free.as_slice() else {
        return Err("expected exactly one MODE".into());
    };
    let mode = Mode::from_name(mode).ok_or_else(|| format!("unknown mode '{mode}'"))?;
    let allow_remote = m.opt_present("allow-remote");
    let target = match m.opt_str("target") {
        Some(text) => parse_target(&text, mode.default_port())?,
        None => SocketAddr::new(IpAddr::from([127, 0, 0, 1]), mode.default_port()),
    };
    check_local("target", target.ip(), allow_remote)?;
    let mut o = Options::new(mode, target);
    if let Some(text) = m.opt_str("sources") {
        o.sources = parse_sources(&text)?;
        for &ip in &o.sources {
            check_local("source", ip, allow_remote)?;
        }
    }
    let secs = number::<f64>(&m, "duration", mode.default_duration().as_secs_f64())?;
    if !(secs > 0.0 && secs <= MAX_DURATION_SECS) {
        return Err(format!("--duration must be in (0, {MAX_DURATION_SECS}]"));
    }
    o.duration = Duration::from_secs_f64(secs);
    o.max_requests = m
        .opt_str("requests")
        .map(|t| parse_in::<u64>("requests", &t, 1, u64::MAX))
        .transpose()?;
    o.concurrency = bounded(&m, "concurrency", 16, 1, MAX_CONCURRENCY)?;
    o.rate = match m.opt_str("rate") {
        Some(t) => {
            let rate: f64 = t.parse().map_err(|_| format!("--rate: bad number '{t}'"))?;
            if !(rate > 0.0 && rate <= 1e8) {
                return Err("--rate must be in (0, 1e8]".into());
            }
            Some(rate)
        }
        None => None,
    };
    let timeout_ms = bounded(&m, "timeout", 1000, 1, 60_000)?;
    o.timeout = Duration::from_millis(timeout_ms as u64);
    o.rooms = bounded(&m, "rooms", 64, 0, 112)?;
    let most_members = match mode {
        Mode::LobbyChat => MAX_CONCURRENCY,
        _ => 64,
    };
    o.members = bounded(&m, "members", o.members, 1, most_members)?;
    o.size = bounded(&m, "size", 64, 12, MAX_DATAGRAM)?;
    o.reply_size = bounded(&m, "reply-size", o.size, 12, MAX_DATAGRAM)?;
    if let Some(text) = m.opt_str("hold") {
        o.hold = Duration::from_millis(parse_in::<u64>("hold", &text, 0, 60_000)?);
    }
    o.caps = match m.opt_str("caps").as_deref() {
        None | Some("default") => o.caps,
        Some("off") => None,
        Some(other) => return Err(format!("--caps: '{other}' is neither default nor off")),
    };
    if let Some(text) = m.opt_str("max-failures") {
        let pct: f64 = text
            .trim_end_matches('%')
            .parse()
            .map_err(|_| format!("--max-failures: bad number '{text}'"))?;
        if !(0.0..=100.0).contains(&pct) {
            return Err("--max-failures must be a percentage, 0 to 100".into());
        }
        o.max_failures = pct / 100.0;
    }
    if let Some(text) = m.opt_str("spread") {
        o.spread = Some(Duration::from_millis(parse_in::<u64>(
            "spread", &text, 0, 60_000,
        )?));
    }
    // One flag for both transports: "seed" and "rfc" name the documents' dialect (the
    // default), the upstream values are each for the modes that speak them.
    match m.opt_str("dialect").as_deref() {
        None | Some("seed") | Some("rfc") => {}
        Some("upstream") if mode == Mode::TcpJoin => o.tcp_dialect = TcpDialect::Upstream,
        Some("upstream") => return Err("--dialect upstream: tcp-join only".into()),
        Some(text) => {
            let udp = Dialect::from_name(text).ok_or_else(|| {
                format!(
                    "--dialect: '{text}' is none of rfc, upstream, {}",
                    Dialect::NAMES.join(", ")
                )
            })?;
            if !matches!(mode, Mode::UdpList | Mode::UdpCreateJoin) {
                return Err(format!(
                    "--dialect {text}: udp-list and udp-create-join only"
                ));
            }
            o.dialect = udp;
        }
    }
    o.start = m.opt_present("start");
    o.blocking = m.opt_present("blocking");
    o.ws = m.opt_present("ws");
    o.json = m.opt_present("json");
    o.quiet = m.opt_present("quiet");
    Ok(LoadCommand::Run(Box::new(o)))
}

/// `ADDR:PORT`, `[V6]:PORT`, or a bare address with the mode's default port.
fn parse_target(text: &str, default_port: u16) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let bare = text.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<IpAddr>()
        .map(|ip| SocketAddr::new(ip, default_port))
        .map_err(|_| format!("--target: bad address '{text}' (want IP:PORT)"))
}

fn number<T: std::str::FromStr>(m: &Matches, name: &str, default: T) -> Result<T, String> {
    match m.opt_str(name) {
        Some(t) => t.parse().map_err(|_| format!("--{name}: bad number '{t}'")),
        None => Ok(default),
    }
}

fn parse_in<T>(name: &str, text: &str, lo: T, hi: T) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    let value: T = text
        .parse()
        .map_err(|_| format!("--{name}: bad number '{text}'"))?;
    if value < lo || value > hi {
        return Err(format!("--{name} must be in {lo}..={hi}"));
    }
    Ok(value)
}

fn bounded(m: &Matches, name: &str, default: usize, lo: usize, hi: usize) -> Result<usize, String> {
    match m.opt_str(name) {
        Some(t) => parse_in(name, &t, lo, hi),
        None => Ok(default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lobbyd::wire::udp_upstream::records::RecordLayout;

    fn run(args: &[&str]) -> Result<Options, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(&args)? {
            LoadCommand::Run(o) => Ok(*o),
            LoadCommand::Help(_) => Err("help".into()),
        }
    }

    #[test]
    fn defaults_per_mode() {
        let o = run(&["udp-list"]).unwrap();
        assert_eq!(o.target, "127.0.0.1:4242".parse().unwrap());
        assert_eq!(o.duration, Duration::from_secs(5));
        assert!(o.sources.is_empty(), "chosen by fit");
        assert!(o.caps.is_some());
        assert_eq!(o.max_failures, 0.01);
        assert_eq!(
            run(&["tcp-cycle"]).unwrap().duration,
            Duration::from_secs(12)
        );
        assert!(run(&["relay", "--caps", "off"]).unwrap().caps.is_none());
        assert!(run(&["relay", "--caps", "maybe"]).is_err());
        assert_eq!(
            run(&["relay", "--max-failures", "5%"])
                .unwrap()
                .max_failures,
            0.05
        );
        assert_eq!(
            run(&["relay", "--max-failures", "0"]).unwrap().max_failures,
            0.0
        );
        assert!(run(&["relay", "--max-failures", "101"]).is_err());
        assert_eq!(o.rate, None);
        assert_eq!(o.rooms, 64);
        assert_eq!(run(&["echo", "--size", "12"]).unwrap().reply_size, 12);
        let wz = run(&["wz-host", "--hold", "250"]).unwrap();
        assert_eq!(wz.target, "127.0.0.1:9990".parse().unwrap());
        assert_eq!(wz.hold, Duration::from_millis(250));
        assert_eq!(run(&["tcp-cycle"]).unwrap().target.port(), 4242);
        assert!(run(&["wz-host", "--hold", "70000"]).is_err());
        let join = run(&["lobby-join"]).unwrap();
        assert_eq!(join.target, "127.0.0.1:4243".parse().unwrap());
        assert_eq!(join.hold, Duration::from_millis(250));
        assert_eq!(
            run(&["lobby-join", "--hold", "0"]).unwrap().hold,
            Duration::ZERO
        );
        let chat = run(&["lobby-chat", "--members", "5000"]).unwrap();
        assert_eq!((chat.members, chat.target.port()), (5000, 4243));
        assert_eq!(run(&["lobby-chat"]).unwrap().members, 100);
        assert!(run(&["relay", "--members", "65"]).is_err());
        assert_eq!(run(&["tcp-cycle"]).unwrap().spread, None);
        assert_eq!(
            run(&["tcp-cycle", "--spread", "1000"]).unwrap().spread,
            Some(Duration::from_secs(1))
        );
        assert!(run(&["tcp-cycle", "--spread", "70000"]).is_err());
    }

    #[test]
    fn flags_are_read_and_bounded() {
        let o = run(&[
            "relay",
            "--target",
            "127.0.0.5:4000",
            "--duration",
            "0.5",
            "--concurrency",
            "8",
            "--rate",
            "2500",
            "--sources",
            "127.0.0.2-127.0.0.4",
            "--json",
            "--requests",
            "10",
            "--start",
        ])
        .unwrap();
        assert_eq!(o.target.port(), 4000);
        assert_eq!(o.duration, Duration::from_millis(500));
        assert_eq!(o.concurrency, 8);
        assert_eq!(o.rate, Some(2500.0));
        assert_eq!(o.sources.len(), 3);
        assert_eq!(o.max_requests, Some(10));
        assert!(o.json);
        assert!(o.start);
        assert_eq!(
            run(&["echo", "--target", "::1"]).unwrap().target.port(),
            4242
        );
        assert!(run(&["relay", "--duration", "0"]).is_err());
        assert!(run(&["relay", "--duration", "7200"]).is_err());
        assert!(run(&["relay", "--size", "5000"]).is_err());
        assert!(run(&["relay", "--rate", "-1"]).is_err());
        assert!(run(&["nope"]).is_err());
        assert!(run(&[]).is_err());
        assert!(matches!(run(&["--help"]), Err(e) if e == "help"));
    }

    #[test]
    fn remote_targets_need_allow_remote() {
        assert!(run(&["udp-list", "--target", "192.0.2.1:4242"]).is_err());
        assert!(run(&["udp-list", "--sources", "192.0.2.1"]).is_err());
        let o = run(&["udp-list", "--target", "192.0.2.1:4242", "--allow-remote"]).unwrap();
        assert_eq!(o.target.ip(), "192.0.2.1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn dialect_is_rfc_or_upstream_for_tcp_join() {
        assert_eq!(run(&["tcp-join"]).unwrap().tcp_dialect, TcpDialect::Rfc);
        assert_eq!(
            run(&["tcp-join", "--dialect", "upstream"])
                .unwrap()
                .tcp_dialect,
            TcpDialect::Upstream
        );
        assert_eq!(
            run(&["tcp-join", "--dialect", "rfc"]).unwrap().tcp_dialect,
            TcpDialect::Rfc
        );
        assert!(run(&["tcp-idle", "--dialect", "upstream"]).is_err());
        assert!(run(&["tcp-join", "--dialect", "aernw1"]).is_err());
        assert!(run(&["tcp-join", "--dialect", "upstream-v3"]).is_err());
    }

    #[test]
    fn dialect_is_seed_or_upstream_v1_v3_for_the_udp_lobby_modes() {
        assert_eq!(run(&["udp-list"]).unwrap().dialect, Dialect::Seed);
        assert_eq!(
            run(&["udp-list", "--dialect", "seed"]).unwrap().dialect,
            Dialect::Seed
        );
        assert_eq!(
            run(&["udp-create-join", "--dialect", "upstream-v1"])
                .unwrap()
                .dialect,
            Dialect::Upstream(RecordLayout::V1)
        );
        assert_eq!(
            run(&["udp-list", "--dialect", "upstream-v3"])
                .unwrap()
                .dialect,
            Dialect::Upstream(RecordLayout::V3)
        );
        assert!(run(&["udp-list", "--dialect", "upstream"]).is_err());
        assert!(run(&["tcp-cycle", "--dialect", "upstream-v1"]).is_err());
        assert!(run(&["udp-list", "--dialect", "v3"]).is_err());
    }

    #[test]
    fn echo_blocking_is_a_flag() {
        assert!(run(&["echo", "--blocking"]).unwrap().blocking);
        assert!(!run(&["echo"]).unwrap().blocking);
    }
}
