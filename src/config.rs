//! Command-line configuration for the `lobbyd` binary.
//!
//! Turns the process arguments into a [`CliCommand`]: run the server with a validated
//! [`Config`], print the usage text, or print the version. Every flag's long name is part
//! of the operator contract and must not change. Every value is checked here, once, so the
//! rest of the server can trust `Config` without re-validating it.
//!
//! This module must not touch the environment, the terminal or the network: it only maps
//! strings (and the text of the `--config` file, the one file it reads) to values or to a
//! one-line [`UsageError`] naming the flag (or the file's line and key) and the bad value.
//!
//! Layout: the parsing helpers and [`UsageError`] are the leaf `parse.rs`; a front end with
//! flags of its own has its own file beside it (`rtype.rs` for the R-Type UDP room lobby and
//! TCP lobby, `wz.rs` for the Warzone master server, `general.rs` for the general lobby) with
//! the same three functions, `flags` (name, hint, help text), `declare` (adds them to the
//! `Options`) and `settings_from` (builds its settings struct, a field of [`Config`]; the
//! R-Type settings, [`RtypeSettings`], are spread into `Config`'s own flat fields by
//! `Config::with_rtype`, the one list of them besides the declaration), each
//! called once here from `options` and `config_from`. A flag file imports `parse` and never
//! this file. `file.rs` reads the `--config` file's `key = value` lines; which keys exist is
//! asked of the flag table itself, so a new flag is a valid key with no table of its own.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use getopts::{Matches, Options};

use crate::wire::udp_upstream::records::RecordLayout;

mod directory;
mod file;
mod general;
mod instance_exec;
mod parse;
mod rtype;
mod websocket;
mod wz;

pub use directory::{DirectoryAddr, DirectorySettings};
pub use general::{frame_buffer_len, GeneralSettings, DEFAULT_LOBBY_PORT};
pub use instance_exec::{CommandTemplate, InstanceExecSettings, Placeholders};
pub use parse::UsageError;
pub use rtype::{
    InstancePorts, RtypeSettings, EPHEMERAL_DEFAULT_MAX_ROOMS, MAX_LIST_ROOMS, MAX_PLAYERS,
};
pub use websocket::{WsSettings, DEFAULT_LOBBY_WS_PORT};
pub use wz::{WzSettings, DEFAULT_WZ_PORT};

use file::FileValue;
use parse::{
    declare_flags, number, parsed, seconds, secs, syntax_error, MAX_TIMEOUT_SECS, MIN_TIMEOUT_SECS,
    PORT, WHOLE,
};

/// The log levels `--log` accepts, in the spelling `env_logger` filters understand.
const LOG_LEVELS: [&str; 6] = ["error", "warn", "info", "debug", "trace", "off"];

/// What the command line asks the binary to do.
#[derive(Debug, Clone, PartialEq)]
pub enum CliCommand {
    /// Run the server with this configuration (boxed: it is much larger than the rest).
    Run(Box<Config>),
    /// Print this full usage text to stdout and exit successfully.
    Help(String),
    /// Print this version line (`lobbyd <version>`) to stdout and exit successfully.
    Version(String),
}

/// The validated server configuration. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// IP address every listener binds (`--bind`, default `0.0.0.0`; IPv6 allowed).
    pub bind: IpAddr,
    /// UDP room lobby port (`--udp-port`, else `--port`, default 4242); `None` when
    /// `--udp-port 0` disables it. `Some(0)` (from `--port 0`) lets the OS choose.
    pub udp_port: Option<u16>,
    /// TCP lobby port (`--tcp-port`, else `--port`, default 4242); `None` when
    /// `--tcp-port 0` disables it. `Some(0)` (from `--port 0`) lets the OS choose.
    pub tcp_port: Option<u16>,
    /// UDP ports for game instances (`--instance-ports`, default 4300-4399).
    pub instance_ports: InstancePorts,
    /// Most live rooms one source IP may have created (`--max-rooms-per-ip`, default 8).
    pub max_rooms_per_ip: usize,
    /// Most rooms open at once (`--max-rooms`, default the size of the port range, or 64
    /// for ephemeral ports); always at least 1.
    pub max_rooms: usize,
    /// Most players per room (`--max-players`, default 4, 1 to 64).
    pub max_players: u8,
    /// Players a TCP lobby room needs before it can start (`--min-players`, default 2 or
    /// `max_players` if that is lower, 1 to `max_players`).
    pub min_players: u8,
    /// Countdown before a game starts (`--countdown`, default 5 s, 0 to 255 s). The UDP
    /// instance announces it in whole seconds ([`Config::countdown_whole_secs`]); the TCP
    /// lobby uses the exact value.
    pub countdown: Duration,
    /// Interval between TCP lobby COUNTDOWN messages (`--countdown-tick`, default 100 ms,
    /// 1 to 10000 ms).
    pub countdown_tick: Duration,
    /// Start a TCP lobby party's countdown by itself once every member is ready and at least
    /// `min_players` are in (`--auto-start`).
    pub auto_start: bool,
    /// How long after GAME_START the TCP lobby closes a connection its client kept open
    /// (5 s). Not a flag: the game's clients close by themselves and a server has no reason
    /// to change it; tests that only need the close to come shorten it.
    pub game_start_linger: Duration,
    /// How long a silent peer is kept (`--idle-timeout`, default 30 s, more than 0).
    pub idle_timeout: Duration,
    /// How long a seat stays reserved after JOIN_SUCCESS/ROOM_CREATED for the player to
    /// reach the instance (`--seat-timeout`, default 10 s, more than 0).
    pub seat_timeout: Duration,
    /// How long a finished room stays listed before its port returns to the pool
    /// (`--reap-grace`, default 2 s, may be 0).
    pub reap_grace: Duration,
    /// UDP lobby requests per second per source IP (`--udp-rate`, default 50); the
    /// limiter allows bursts of twice this, so it is capped at `u32::MAX / 2`.
    pub udp_rate: u32,
    /// UDP lobby reply bytes per second per source IP (`--udp-reply-bytes`, default
    /// 64000); 0 means unlimited.
    pub udp_reply_bytes: u32,
    /// Most source IPs the rate limiters track at once (`--rate-table-size`, default 65536).
    pub rate_table_size: usize,
    /// Most rooms in one LIST reply (`--max-list-rooms`, default 112, 1 to 112).
    pub max_list_rooms: usize,
    /// The ROOM_LIST record layout of the upstream R-Type UDP dialect
    /// (`--rtype-udp-records v1|v3`, default v3).
    pub rtype_udp_records: RecordLayout,
    /// Server IP sent in TCP GAME_START (`--public-host`); `None` means the local address
    /// of the client's own connection.
    pub public_host: Option<Ipv4Addr>,
    /// TCP lobby spawn points as `(x, y)`, one per seat (`--spawns`, default
    /// `100,100;100,200;100,300;100,400`); at least `max_players` of them.
    pub spawns: Vec<(f32, f32)>,
    /// Protocol violations tolerated before a peer is dropped (`--max-violations`, default 5).
    pub max_violations: u32,
    /// New TCP connections per minute per IP (`--conn-rate`, default 5).
    pub conn_rate: u32,
    /// Most TCP connections open at once (`--max-conns`, default 10000).
    pub max_conns: usize,
    /// Most TCP connections open at once from one IP (`--max-conns-per-ip`, default 64).
    pub max_conns_per_ip: usize,
    /// Bytes all TCP lobby send queues may hold together (`--tcp-memory-budget`, in MiB,
    /// default 16); when full, the connection holding the most is dropped.
    pub tcp_memory_budget: usize,
    /// How long a connection may take to sign in (`--handshake-timeout`, default 5 s, more
    /// than 0): a TCP lobby connection's CONNECT_ACK, a Warzone connection's registration or
    /// first answered v4 request, a general lobby connection's WELCOME. Until then it is
    /// closed at the deadline whatever it sends, and it is the first to go at a connection
    /// cap.
    pub handshake_timeout: Duration,
    /// Where the operators' HTTP endpoint (`/metrics`, `/rooms`) listens (`--metrics ADDR`);
    /// off by default. Bind it to loopback: it is not authenticated.
    pub metrics: Option<SocketAddr>,
    /// Most metrics endpoint connections open at once from one address
    /// (`--metrics-max-conns-per-ip`, default 8); more are closed at accept.
    pub metrics_max_conns_per_ip: usize,
    /// New metrics endpoint connections per minute per address, in bursts of as many
    /// (`--metrics-conn-rate`, default 120); more are closed at accept.
    pub metrics_conn_rate: u32,
    /// The `--log` level if one was given (lower case, one of error, warn, info, debug,
    /// trace, off); `None` lets `RUST_LOG` decide, falling back to info.
    pub log: Option<String>,
    /// The Warzone 2100 master server (`--wz-*`, `--motd*`, `--db`; see [`WzSettings`]).
    pub wz: WzSettings,
    /// A game server per room in place of lobbyd's relay (`--instance-exec`,
    /// `--instance-stop-grace`).
    pub instance_exec: InstanceExecSettings,
    /// The general lobby (`--lobby-*`; see [`GeneralSettings`]).
    pub general: GeneralSettings,
    /// This node's place in a group of processes (`--node-id`, `--directory`,
    /// `--reuse-port`; see [`DirectorySettings`]).
    pub directory: DirectorySettings,
    /// The general lobby's WebSocket port (`--lobby-ws-*`, `--lobby-web`; see
    /// [`WsSettings`]).
    pub lobby_ws: WsSettings,
}

impl Default for Config {
    fn default() -> Config {
        Config::with_rtype(RtypeSettings::default())
    }
}

impl Config {
    /// The configuration with the R-Type front end's settings `rtype` (its file's defaults,
    /// or what its flags set) in their flat fields and every other setting's default. The
    /// one place the R-Type fields are listed beside their declaration: both lists are
    /// exhaustive, so a field added to one and not the other does not compile.
    fn with_rtype(rtype: RtypeSettings) -> Config {
        let RtypeSettings {
            udp_port,
            tcp_port,
            instance_ports,
            max_rooms_per_ip,
            max_rooms,
            max_players,
            min_players,
            countdown,
            countdown_tick,
            auto_start,
            game_start_linger,
            seat_timeout,
            reap_grace,
            udp_rate,
            udp_reply_bytes,
            rate_table_size,
            max_list_rooms,
            rtype_udp_records,
            public_host,
            spawns,
            max_violations,
            conn_rate,
            max_conns,
            max_conns_per_ip,
            tcp_memory_budget,
        } = rtype;
        Config {
            bind: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            udp_port,
            tcp_port,
            instance_ports,
            max_rooms_per_ip,
            max_rooms,
            max_players,
            min_players,
            countdown,
            countdown_tick,
            auto_start,
            game_start_linger,
            seat_timeout,
            reap_grace,
            udp_rate,
            udp_reply_bytes,
            rate_table_size,
            max_list_rooms,
            rtype_udp_records,
            public_host,
            spawns,
            max_violations,
            conn_rate,
            max_conns,
            max_conns_per_ip,
            tcp_memory_budget,
            idle_timeout: Duration::from_secs(30),
            handshake_timeout: Duration::from_secs(5),
            metrics: None,
            metrics_max_conns_per_ip: 8,
            metrics_conn_rate: 120,
            log: None,
            wz: WzSettings::default(),
            instance_exec: InstanceExecSettings::default(),
            general: GeneralSettings::default(),
            directory: DirectorySettings::default(),
            lobby_ws: WsSettings::default(),
        }
    }

    /// What this configuration serves, for the start-up log: one line per front end (where
    /// it listens, or "off"), then the status page, the game servers and the room
    /// directory, each only when it is used. Port 0 is shown as asked; the
    /// driver logs the port the system chose once it is bound.
    pub fn summary(&self) -> Vec<String> {
        let at = |port: Option<u16>| port.map(|port| SocketAddr::new(self.bind, port));
        let instance_ports = match self.instance_ports {
            InstancePorts::Ephemeral => "chosen by the system".to_owned(),
            ports => ports.to_string(),
        };
        let mut lines = Vec::new();
        lines.push(match at(self.udp_port) {
            Some(addr) => format!(
                "udp room lobby: {addr}, up to {} rooms of {}-{} players, instance ports {}",
                self.max_rooms, self.min_players, self.max_players, instance_ports
            ),
            None => "udp room lobby: off".to_owned(),
        });
        lines.push(match at(self.tcp_port) {
            Some(addr) => format!("tcp lobby: {addr}"),
            None => "tcp lobby: off".to_owned(),
        });
        lines.push(match at(self.wz.port) {
            Some(addr) => format!("warzone master server: {addr}, login {}", self.wz.login),
            None => "warzone master server: off".to_owned(),
        });
        let general = &self.general.core;
        lines.push(match at(self.general.port) {
            Some(addr) => {
                let hosted: Vec<String> = general
                    .hosted
                    .iter()
                    .map(|spec| format!("{}={}", spec.kind.name(), spec.count))
                    .collect();
                let hosted = if hosted.is_empty() {
                    "none".to_owned()
                } else {
                    hosted.join(",")
                };
                format!(
                    "general lobby: {addr}, login {}, hosted games {hosted}",
                    general.login
                )
            }
            None => "general lobby: off".to_owned(),
        });
        lines.push(match (at(self.general.port), at(self.lobby_ws.port)) {
            (Some(_), Some(addr)) => match &self.lobby_ws.web_dir {
                Some(dir) => format!(
                    "general lobby websocket: {addr}, web page from {}",
                    dir.display()
                ),
                None => format!("general lobby websocket: {addr}"),
            },
            _ => "general lobby websocket: off".to_owned(),
        });
        if let Some(addr) = self.metrics {
            lines.push(format!("status page and /metrics: {addr}"));
        }
        if let Some(command) = &self.instance_exec.command {
            lines.push(format!("game server per room: {command}"));
        }
        if let Some(directory) = &self.directory.directory {
            let node = self
                .directory
                .node_id
                .map_or_else(String::new, |node| format!(", node {node}"));
            let shared = if self.directory.reuse_port {
                ", ports shared (--reuse-port)"
            } else {
                ""
            };
            lines.push(format!("room directory: {directory}{node}{shared}"));
        }
        lines
    }

    /// The countdown in whole seconds for the UDP instance's one-byte field, rounded up so
    /// a sub-second countdown still shows at least one tick.
    pub fn countdown_whole_secs(&self) -> u8 {
        let secs = self.countdown.as_secs() + u64::from(self.countdown.subsec_nanos() > 0);
        u8::try_from(secs).unwrap_or(u8::MAX)
    }
}

/// Parses the arguments after the program name into a [`CliCommand`].
///
/// `-h`/`--help` and `-V`/`--version` win over any value checks, but not over unknown
/// flags or malformed syntax.
pub fn parse_args<I: IntoIterator<Item = String>>(args: I) -> Result<CliCommand, UsageError> {
    let defaults = Config::default();
    let options = options(&defaults);
    let args: Vec<String> = args.into_iter().collect();
    let mut matches = options.parse(&args).map_err(syntax_error)?;
    if matches.opt_present("help") {
        return Ok(CliCommand::Help(usage(&options)));
    }
    if matches.opt_present("version") {
        return Ok(CliCommand::Version(version()));
    }
    if let Some(stray) = matches.free.first() {
        return Err(UsageError::new(format!("unexpected argument {stray:?}")));
    }
    let mut from_file = Vec::new();
    if let Some(path) = matches.opt_str("config") {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| UsageError::new(format!("--config: cannot read {path}: {e}")))?;
        from_file = file_flags(&options, &matches, &path, &text)?;
        let mut merged = args;
        merged.extend(from_file.iter().map(|f| f.arg.clone()));
        matches = options.parse(&merged).map_err(syntax_error)?;
    }
    config_from(&matches, defaults)
        .map(|config| CliCommand::Run(Box::new(config)))
        .map_err(
            |err| match from_file.iter().find(|f| names_flag(&err, &f.key)) {
                // A value from the file: say where it came from.
                Some(f) => UsageError::new(format!("{}:{}: {err}", f.path, f.line)),
                None => err,
            },
        )
}

/// A flag the config file adds to the command line.
struct FileFlag {
    /// `--key=value` or `--key`.
    arg: String,
    /// The key, for error messages.
    key: String,
    /// Where it was set.
    path: String,
    line: usize,
}

/// Turns the settings of a config file into flags, for every key the command line does not
/// set already (flags win over the file). Any long flag is a key, found by asking `options`
/// how it parses: a switch takes a boolean, a flag with a value a string or a number.
fn file_flags(
    options: &Options,
    given: &Matches,
    path: &str,
    text: &str,
) -> Result<Vec<FileFlag>, UsageError> {
    let mut flags = Vec::new();
    for setting in file::parse_config_file(path, text)? {
        let fail = |what: &str| {
            UsageError::new(format!("{path}:{}: {}: {what}", setting.line, setting.key))
        };
        let key = &setting.key;
        let is_flag_name = key.len() > 1
            && key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if matches!(key.as_str(), "config" | "help" | "version") {
            return Err(fail("not a setting (only on the command line)"));
        }
        let switch = match options.parse([format!("--{key}")]) {
            _ if !is_flag_name => return Err(fail("unknown key (keys are flags' long names)")),
            Ok(_) => true,
            Err(getopts::Fail::ArgumentMissing(_)) => false,
            Err(_) => return Err(fail("unknown key (keys are flags' long names)")),
        };
        if given.opt_present(key) {
            continue;
        }
        let arg = match (&setting.value, switch) {
            (FileValue::Bool(true), true) => format!("--{key}"),
            (FileValue::Bool(false), true) => continue,
            (_, true) => return Err(fail("takes true or false")),
            (FileValue::Bool(_), false) => {
                return Err(fail(
                    "takes a value (a string or a number), not true or false",
                ))
            }
            (FileValue::Text(value) | FileValue::Number(value), false) => {
                format!("--{key}={value}")
            }
        };
        flags.push(FileFlag {
            arg,
            key: key.clone(),
            path: path.to_string(),
            line: setting.line,
        });
    }
    Ok(flags)
}

/// True when `err` is about the flag `key` (its reason names `--key` as a whole word).
fn names_flag(err: &UsageError, key: &str) -> bool {
    let flag = format!("--{key}");
    err.reason.match_indices(&flag).any(|(at, _)| {
        !err.reason[at + flag.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
    })
}

/// The `--version` line.
fn version() -> String {
    format!("lobbyd {}", env!("CARGO_PKG_VERSION"))
}

/// The `--help` text: every flag with its default, in one section per front end.
fn usage(options: &Options) -> String {
    let mut sections: Vec<(HelpGroup, Vec<String>)> =
        HelpGroup::ALL.iter().map(|&g| (g, Vec::new())).collect();
    // getopts formats one row per flag, in declaration order; each goes to its section.
    let rows = options.usage_with_format(|rows| rows.collect::<Vec<String>>().join("\0"));
    for row in rows.split('\0') {
        let name = row
            .split_whitespace()
            .find_map(|word| word.strip_prefix("--"))
            .unwrap_or("");
        let group = HelpGroup::of(name);
        if let Some((_, rows)) = sections.iter_mut().find(|(g, _)| *g == group) {
            rows.push(row.to_string());
        }
    }
    let mut text = format!(
        "{}\n\nUsage: lobbyd [OPTIONS]\n       lobbyd user add|del|list ...   (accounts of --db; \
         lobbyd user --help)\n\nA game lobby server: R-Type UDP room lobby and game instances, \
         R-Type TCP lobby, Warzone 2100 master server, general lobby.\n",
        version()
    );
    for (group, rows) in sections.iter().filter(|(_, rows)| !rows.is_empty()) {
        text.push_str(&format!("\n{}:\n{}\n", group.title(), rows.join("\n")));
    }
    text.push_str(
        "\nDurations in seconds accept decimals (e.g. 0.5).\nWithout --log, RUST_LOG sets the \
         log filter (default info).\nA --config FILE takes the same settings, one `long-name = \
         value` per line (TOML: strings, numbers, true/false for switches); flags win over it.\n",
    );
    text
}

/// The sections of `--help`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HelpGroup {
    General,
    UdpLobby,
    TcpLobby,
    Warzone,
    GeneralLobby,
    Metrics,
    Directory,
}

impl HelpGroup {
    const ALL: [HelpGroup; 7] = [
        HelpGroup::General,
        HelpGroup::UdpLobby,
        HelpGroup::TcpLobby,
        HelpGroup::Warzone,
        HelpGroup::GeneralLobby,
        HelpGroup::Metrics,
        HelpGroup::Directory,
    ];

    fn title(self) -> &'static str {
        match self {
            HelpGroup::General => "General options",
            HelpGroup::UdpLobby => "R-Type UDP room lobby and game instances",
            HelpGroup::TcpLobby => "R-Type TCP lobby",
            HelpGroup::Warzone => "Warzone 2100 master server",
            HelpGroup::GeneralLobby => "General lobby",
            HelpGroup::Metrics => "Metrics and status page",
            HelpGroup::Directory => "More than one process (a group of nodes)",
        }
    }

    /// The section of the flag `name`: the front ends' own files by prefix, the shared
    /// table here by name; a flag not named below is a general option.
    fn of(name: &str) -> HelpGroup {
        if name.starts_with("lobby-") {
            return HelpGroup::GeneralLobby;
        }
        if name.starts_with("wz-") || name.starts_with("motd") {
            return HelpGroup::Warzone;
        }
        if name.starts_with("metrics") {
            return HelpGroup::Metrics;
        }
        if name.starts_with("instance-") {
            return HelpGroup::UdpLobby;
        }
        match name {
            "node-id" | "directory" | "reuse-port" => HelpGroup::Directory,
            _ if rtype::UDP_LOBBY_FLAGS.contains(&name) => HelpGroup::UdpLobby,
            _ if rtype::TCP_LOBBY_FLAGS.contains(&name) => HelpGroup::TcpLobby,
            _ => HelpGroup::General,
        }
    }
}

/// Declares every flag; descriptions quote `defaults` so help and behaviour cannot drift.
fn options(d: &Config) -> Options {
    // (long name, value hint or "" for a plain switch, description), in help order.
    let flags: [(&str, &str, String); 11] = [
        ("help", "", "Print this help and exit.".into()),
        ("version", "", "Print the version and exit.".into()),
        (
            "config",
            "FILE",
            "Read settings from FILE: TOML, every flag's long name a key (flags win).".into(),
        ),
        (
            "bind",
            "ADDR",
            format!("IP address for every listener (default {}).", d.bind),
        ),
        (
            "port",
            "PORT",
            format!(
                "UDP room lobby and TCP lobby port; 0 lets the OS choose (default {}).",
                d.udp_port.unwrap_or(0)
            ),
        ),
        (
            "idle-timeout",
            "SECS",
            format!(
                "Drop silent peers after this (default {}).",
                secs(d.idle_timeout)
            ),
        ),
        (
            "handshake-timeout",
            "SECS",
            format!(
                "Close a connection not signed in by then (TCP lobby CONNECT_ACK, Warzone \
                 registration or first v4 answer, general lobby WELCOME) (default {}).",
                secs(d.handshake_timeout)
            ),
        ),
        (
            "metrics",
            "ADDR",
            "Serve GET /metrics, /healthz, /rooms and the status page (/) over HTTP on ADDR, \
             e.g. 127.0.0.1:9100 (default off)."
                .into(),
        ),
        (
            "metrics-max-conns-per-ip",
            "N",
            format!(
                "Most metrics connections at once per IP (default {}).",
                d.metrics_max_conns_per_ip
            ),
        ),
        (
            "metrics-conn-rate",
            "N",
            format!(
                "New metrics connections per minute per IP (default {}).",
                d.metrics_conn_rate
            ),
        ),
        (
            "log",
            "LEVEL",
            format!("Log level: {} (default info).", LOG_LEVELS.join("|")),
        ),
    ];
    // The R-Type flags come after `--port`, ahead of the other shared ones.
    let (first, rest) = flags.split_at(5);
    let mut options = Options::new();
    declare_flags(&mut options, first);
    rtype::declare(&mut options, &RtypeSettings::default());
    declare_flags(&mut options, rest);
    instance_exec::declare(&mut options, &d.instance_exec);
    wz::declare(&mut options, &d.wz);
    general::declare(&mut options, &d.general);
    directory::declare(&mut options);
    websocket::declare(&mut options, &d.lobby_ws);
    options
}

/// Builds and cross-checks the configuration from parsed flags.
fn config_from(m: &Matches, d: Config) -> Result<Config, UsageError> {
    let handshake_timeout = seconds(
        m,
        "handshake-timeout",
        MIN_TIMEOUT_SECS..=MAX_TIMEOUT_SECS,
        d.handshake_timeout,
    )?;
    let wz = wz::settings_from(m, d.wz.clone(), handshake_timeout)?;
    let instance_exec = instance_exec::settings_from(m, d.instance_exec.clone())?;
    let directory = directory::settings_from(m)?;
    let bind = match m.opt_str("bind") {
        Some(text) => parse_bind(&text)?,
        None => d.bind,
    };
    let port = number(m, "port", PORT, 0..=u16::MAX, d.udp_port.unwrap_or(0))?;
    let rtype = rtype::settings_from(m, RtypeSettings::default(), port)?;
    let idle_timeout = seconds(
        m,
        "idle-timeout",
        MIN_TIMEOUT_SECS..=MAX_TIMEOUT_SECS,
        d.idle_timeout,
    )?;
    let mut general = general::settings_from(m, d.general.clone(), idle_timeout)?;
    general.core.sign_in_timeout = handshake_timeout;
    let lobby_ws = websocket::settings_from(m, d.lobby_ws.clone())?;
    let log = match m.opt_str("log") {
        Some(text) => Some(parse_log_level(&text)?),
        None => None,
    };
    let metrics = parsed::<SocketAddr>(m, "metrics", "an address like 127.0.0.1:9100")?;
    Ok(Config {
        bind,
        idle_timeout,
        handshake_timeout,
        metrics,
        metrics_max_conns_per_ip: number(
            m,
            "metrics-max-conns-per-ip",
            WHOLE,
            1..=usize::MAX,
            d.metrics_max_conns_per_ip,
        )?,
        metrics_conn_rate: number(
            m,
            "metrics-conn-rate",
            WHOLE,
            1..=u32::MAX,
            d.metrics_conn_rate,
        )?,
        log,
        wz,
        instance_exec,
        general,
        directory,
        lobby_ws,
        ..Config::with_rtype(rtype)
    })
}

/// `--bind`: an IPv4 or IPv6 address; IPv6 may be written in brackets.
fn parse_bind(text: &str) -> Result<IpAddr, UsageError> {
    let bare = text
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or(text);
    bare.parse()
        .map_err(|_| UsageError::new(format!("--bind: {text:?} is not an IP address")))
}

/// `--log`: one of [`LOG_LEVELS`], case-insensitive, stored in lower case.
fn parse_log_level(text: &str) -> Result<String, UsageError> {
    let level = text.to_ascii_lowercase();
    if LOG_LEVELS.contains(&level.as_str()) {
        Ok(level)
    } else {
        Err(UsageError::new(format!(
            "--log: {text:?} is not a log level ({})",
            LOG_LEVELS.join("|")
        )))
    }
}

#[cfg(test)]
mod tests;
