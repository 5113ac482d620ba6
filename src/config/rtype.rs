//! The R-Type front end's flags: the UDP room lobby with its game instances
//! (docs/protocols/udp-lobby.md) and the TCP lobby (docs/protocols/tcp-lobby.md), kept apart
//! from the other protocols' flags.
//!
//! Same contract as the parent module: strings in, validated [`RtypeSettings`] or a one-line
//! [`UsageError`] out. Its fields are `Config`'s own (flat, as the server and the tests read
//! them), which the parent fills from it. It imports the parsing leaf (`super::parse`), never
//! its parent; the parent calls `flags`/`declare`/`settings_from`, and asks
//! [`UDP_LOBBY_FLAGS`]/[`TCP_LOBBY_FLAGS`] which `--help` section a flag goes to.

use std::fmt;
use std::net::Ipv4Addr;
use std::time::Duration;

use getopts::{Matches, Options};

use crate::wire::udp_upstream::records::RecordLayout;

use super::parse::{
    declare_flags, number, parse_number, parsed, seconds, secs, UsageError, MAX_TIMEOUT_SECS,
    MILLIS, MIN_TIMEOUT_SECS, PORT, WHOLE,
};

/// The most room summaries one LIST reply can carry in a 1472-byte UDP datagram.
pub const MAX_LIST_ROOMS: usize = 112;

/// The most players a room can hold; seat numbers must fit the wire formats.
pub const MAX_PLAYERS: u8 = 64;

/// Rooms allowed when instance ports are chosen by the OS and no `--max-rooms` is given.
pub const EPHEMERAL_DEFAULT_MAX_ROOMS: usize = 64;

/// The longest `--countdown`: the UDP instance announces it in a one-byte field.
const MAX_COUNTDOWN_SECS: f64 = 255.0;

/// `--tcp-memory-budget`'s default, in MiB: a TCP lobby party's broadcasts are a few small
/// frames, so a client that reads holds almost nothing queued; 16 MiB is 256 full 64 KiB
/// send queues at once, where `--max-conns` (10,000) full queues would be 640 MiB.
const DEFAULT_TCP_MEMORY_BUDGET_MIB: usize = 16;

/// The UDP ports game instances bind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstancePorts {
    /// Every port from `lo` to `hi` inclusive; `1 <= lo <= hi`.
    Range {
        /// The lowest port in the pool.
        lo: u16,
        /// The highest port in the pool.
        hi: u16,
    },
    /// Each instance binds port 0 and the OS picks a free port (`--instance-ports 0`).
    Ephemeral,
}

impl InstancePorts {
    /// The room limit used when `--max-rooms` is not given: one room per port in the
    /// range, or [`EPHEMERAL_DEFAULT_MAX_ROOMS`] when the OS chooses the ports.
    pub fn default_max_rooms(&self) -> usize {
        match *self {
            InstancePorts::Range { lo, hi } => usize::from(hi) - usize::from(lo) + 1,
            InstancePorts::Ephemeral => EPHEMERAL_DEFAULT_MAX_ROOMS,
        }
    }
}

impl fmt::Display for InstancePorts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            InstancePorts::Range { lo, hi } => write!(f, "{lo}-{hi}"),
            InstancePorts::Ephemeral => f.write_str("0"),
        }
    }
}

/// The R-Type front end's settings: each is the [`Config`](super::Config) field of the same
/// name. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct RtypeSettings {
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
}

impl Default for RtypeSettings {
    fn default() -> RtypeSettings {
        let instance_ports = InstancePorts::Range { lo: 4300, hi: 4399 };
        RtypeSettings {
            udp_port: Some(4242),
            tcp_port: Some(4242),
            instance_ports,
            max_rooms_per_ip: 8,
            max_rooms: instance_ports.default_max_rooms(),
            max_players: 4,
            min_players: 2,
            countdown: Duration::from_secs(5),
            countdown_tick: Duration::from_millis(100),
            auto_start: false,
            game_start_linger: Duration::from_secs(5),
            seat_timeout: Duration::from_secs(10),
            reap_grace: Duration::from_secs(2),
            udp_rate: 50,
            udp_reply_bytes: 64_000,
            rate_table_size: 65_536,
            max_list_rooms: MAX_LIST_ROOMS,
            rtype_udp_records: RecordLayout::V3,
            public_host: None,
            spawns: vec![
                (100.0, 100.0),
                (100.0, 200.0),
                (100.0, 300.0),
                (100.0, 400.0),
            ],
            max_violations: 5,
            conn_rate: 5,
            max_conns: 10_000,
            max_conns_per_ip: 64,
            tcp_memory_budget: DEFAULT_TCP_MEMORY_BUDGET_MIB << 20,
        }
    }
}

/// The flags of the `--help` section "R-Type UDP room lobby and game instances".
pub(super) const UDP_LOBBY_FLAGS: [&str; 13] = [
    "udp-port",
    "instance-ports",
    "max-rooms",
    "max-rooms-per-ip",
    "max-players",
    "countdown",
    "seat-timeout",
    "reap-grace",
    "udp-rate",
    "udp-reply-bytes",
    "rate-table-size",
    "max-list-rooms",
    "rtype-udp-records",
];

/// The flags of the `--help` section "R-Type TCP lobby".
pub(super) const TCP_LOBBY_FLAGS: [&str; 11] = [
    "tcp-port",
    "min-players",
    "countdown-tick",
    "auto-start",
    "public-host",
    "spawns",
    "max-violations",
    "conn-rate",
    "max-conns",
    "max-conns-per-ip",
    "tcp-memory-budget",
];

/// The R-Type flags as (long name, value hint or "" for a switch, description), in help
/// order; descriptions quote `d` so help and behaviour cannot drift.
pub(super) fn flags(d: &RtypeSettings) -> Vec<(&'static str, &'static str, String)> {
    vec![
        (
            "udp-port",
            "PORT",
            "UDP lobby port; 0 disables it (default --port).".into(),
        ),
        (
            "tcp-port",
            "PORT",
            "TCP lobby port; 0 disables it (default --port).".into(),
        ),
        (
            "instance-ports",
            "LO-HI",
            format!(
                "UDP ports for game instances, LO-HI or N; 0 lets the OS choose (default {}).",
                d.instance_ports
            ),
        ),
        (
            "max-rooms",
            "N",
            format!(
                "Most rooms at once (default the number of instance ports, \
                 {EPHEMERAL_DEFAULT_MAX_ROOMS} for 0)."
            ),
        ),
        (
            "max-rooms-per-ip",
            "N",
            format!(
                "Most live rooms created from one IP address (default {}).",
                d.max_rooms_per_ip
            ),
        ),
        (
            "max-players",
            "N",
            format!(
                "Most players per room, 1-{MAX_PLAYERS} (default {}).",
                d.max_players
            ),
        ),
        (
            "min-players",
            "N",
            format!(
                "Players a TCP lobby room needs to start (default {}, at most --max-players).",
                d.min_players
            ),
        ),
        (
            "countdown",
            "SECS",
            format!(
                "Countdown before a game starts, 0-255 (default {}).",
                secs(d.countdown)
            ),
        ),
        (
            "countdown-tick",
            "MS",
            format!(
                "TCP lobby COUNTDOWN interval, 1-10000 (default {}).",
                d.countdown_tick.as_millis()
            ),
        ),
        (
            "auto-start",
            "",
            "Start the TCP lobby countdown by itself once all members are ready and the minimum is in.".into(),
        ),
        (
            "seat-timeout",
            "SECS",
            format!(
                "Seat reservation after JOIN_SUCCESS/ROOM_CREATED (default {}).",
                secs(d.seat_timeout)
            ),
        ),
        (
            "reap-grace",
            "SECS",
            format!(
                "How long a finished room stays listed (default {}).",
                secs(d.reap_grace)
            ),
        ),
        (
            "udp-rate",
            "N",
            format!(
                "UDP lobby requests/s per source IP, burst twice that (default {}).",
                d.udp_rate
            ),
        ),
        (
            "udp-reply-bytes",
            "N",
            format!(
                "UDP reply bytes/s per source IP; 0 = unlimited (default {}).",
                d.udp_reply_bytes
            ),
        ),
        (
            "rate-table-size",
            "N",
            format!(
                "Most source IPs the rate limiters track (default {}).",
                d.rate_table_size
            ),
        ),
        (
            "max-list-rooms",
            "N",
            format!(
                "Most rooms per LIST reply, 1-{MAX_LIST_ROOMS} (default {}).",
                d.max_list_rooms
            ),
        ),
        (
            "rtype-udp-records",
            "v1|v3",
            format!(
                "ROOM_LIST records of the upstream R-Type UDP client: v1 (11 bytes, its \
                 first version) or v3 (named rooms, today's client) (default {}).",
                d.rtype_udp_records.as_str()
            ),
        ),
        (
            "public-host",
            "IPV4",
            "Server IP sent in TCP GAME_START (default the local address of the client's \
             connection)."
                .into(),
        ),
        (
            "spawns",
            "X,Y;...",
            format!(
                "TCP spawn points, at least --max-players of them (default \"{}\").",
                spawn_list(&d.spawns)
            ),
        ),
        (
            "max-violations",
            "N",
            format!(
                "Protocol violations before a peer is dropped (default {}).",
                d.max_violations
            ),
        ),
        (
            "conn-rate",
            "N",
            format!(
                "New TCP connections per minute per IP (default {}).",
                d.conn_rate
            ),
        ),
        (
            "max-conns",
            "N",
            format!("Most TCP connections at once (default {}).", d.max_conns),
        ),
        (
            "max-conns-per-ip",
            "N",
            format!(
                "Most TCP connections at once per IP (default {}).",
                d.max_conns_per_ip
            ),
        ),
        (
            "tcp-memory-budget",
            "MIB",
            format!(
                "Memory all TCP lobby send queues may hold; when full, the connection holding \
                 the most is dropped (default {}).",
                d.tcp_memory_budget >> 20
            ),
        ),
    ]
}

/// Adds the R-Type flags to `options`.
pub(super) fn declare(options: &mut Options, d: &RtypeSettings) {
    declare_flags(options, &flags(d));
}

/// Builds the R-Type settings from parsed flags; `port` is `--port` (each of `--udp-port` and
/// `--tcp-port` defaults to it).
pub(super) fn settings_from(
    m: &Matches,
    d: RtypeSettings,
    port: u16,
) -> Result<RtypeSettings, UsageError> {
    // `--port 0` asks the OS for a port; only the per-protocol overrides disable with 0.
    let enabled = |p: u16| (p != 0).then_some(p);
    let udp_port = match m.opt_str("udp-port") {
        Some(_) => enabled(number(m, "udp-port", PORT, 0..=u16::MAX, port)?),
        None => Some(port),
    };
    let tcp_port = match m.opt_str("tcp-port") {
        Some(_) => enabled(number(m, "tcp-port", PORT, 0..=u16::MAX, port)?),
        None => Some(port),
    };
    let instance_ports = match m.opt_str("instance-ports") {
        Some(text) => parse_instance_ports(&text)?,
        None => d.instance_ports,
    };
    let max_rooms = number(
        m,
        "max-rooms",
        WHOLE,
        1..=usize::from(u16::MAX),
        instance_ports.default_max_rooms(),
    )?;
    let max_players = number(m, "max-players", WHOLE, 1..=MAX_PLAYERS, d.max_players)?;
    // The default only applies as far as it fits: `--max-players 1` alone is valid.
    let min_default = d.min_players.min(max_players);
    let min_players = number(m, "min-players", WHOLE, 1..=u8::MAX, min_default)?;
    if min_players > max_players {
        return Err(UsageError::new(format!(
            "--min-players: {min_players} is more than --max-players ({max_players})"
        )));
    }
    let countdown = seconds(m, "countdown", 0.0..=MAX_COUNTDOWN_SECS, d.countdown)?;
    let countdown_tick = m
        .opt_str("countdown-tick")
        .map(|text| parse_number("countdown-tick", &text, MILLIS, &(1..=10_000u16)))
        .transpose()?
        .map_or(d.countdown_tick, |ms| Duration::from_millis(u64::from(ms)));
    let spawns = match m.opt_str("spawns") {
        Some(text) => parse_spawns(&text)?,
        None => d.spawns,
    };
    if spawns.len() < usize::from(max_players) {
        return Err(UsageError::new(format!(
            "--spawns: {} spawn points for --max-players {max_players}; give at least one x,y \
             pair per player",
            spawns.len()
        )));
    }
    let public_host = parsed::<Ipv4Addr>(m, "public-host", "an IPv4 address")?;
    let rtype_udp_records = match m.opt_str("rtype-udp-records") {
        None => d.rtype_udp_records,
        Some(text) => RecordLayout::from_name(&text).ok_or_else(|| {
            UsageError::new(format!(
                "--rtype-udp-records: {text:?} is neither v1 nor v3"
            ))
        })?,
    };
    if public_host.is_some_and(|ip| ip.is_unspecified()) {
        return Err(UsageError::new(
            "--public-host: \"0.0.0.0\" is not an address clients can reach".to_string(),
        ));
    }
    let timeouts = MIN_TIMEOUT_SECS..=MAX_TIMEOUT_SECS;
    Ok(RtypeSettings {
        udp_port,
        tcp_port,
        instance_ports,
        max_rooms_per_ip: number(
            m,
            "max-rooms-per-ip",
            WHOLE,
            1..=usize::from(u16::MAX),
            d.max_rooms_per_ip,
        )?,
        max_rooms,
        max_players,
        min_players,
        countdown,
        countdown_tick,
        auto_start: m.opt_present("auto-start"),
        seat_timeout: seconds(m, "seat-timeout", timeouts, d.seat_timeout)?,
        reap_grace: seconds(m, "reap-grace", 0.0..=MAX_TIMEOUT_SECS, d.reap_grace)?,
        udp_rate: number(m, "udp-rate", WHOLE, 1..=u32::MAX / 2, d.udp_rate)?,
        udp_reply_bytes: number(m, "udp-reply-bytes", WHOLE, 0..=u32::MAX, d.udp_reply_bytes)?,
        rate_table_size: number(
            m,
            "rate-table-size",
            WHOLE,
            1..=usize::MAX,
            d.rate_table_size,
        )?,
        max_list_rooms: number(
            m,
            "max-list-rooms",
            WHOLE,
            1..=MAX_LIST_ROOMS,
            d.max_list_rooms,
        )?,
        rtype_udp_records,
        public_host,
        spawns,
        max_violations: number(m, "max-violations", WHOLE, 1..=u32::MAX, d.max_violations)?,
        conn_rate: number(m, "conn-rate", WHOLE, 1..=u32::MAX, d.conn_rate)?,
        max_conns: number(m, "max-conns", WHOLE, 1..=usize::MAX, d.max_conns)?,
        max_conns_per_ip: number(
            m,
            "max-conns-per-ip",
            WHOLE,
            1..=usize::MAX,
            d.max_conns_per_ip,
        )?,
        tcp_memory_budget: number(
            m,
            "tcp-memory-budget",
            WHOLE,
            1..=1024 * 1024,
            d.tcp_memory_budget >> 20,
        )? << 20,
        // Not a flag: `game_start_linger`.
        ..d
    })
}

/// Formats spawn points the way `--spawns` takes them.
fn spawn_list(spawns: &[(f32, f32)]) -> String {
    let pairs: Vec<String> = spawns.iter().map(|(x, y)| format!("{x},{y}")).collect();
    pairs.join(";")
}

/// `--instance-ports`: `0` (OS-chosen), `N` (one port) or `LO-HI` with `1 <= LO <= HI`.
fn parse_instance_ports(text: &str) -> Result<InstancePorts, UsageError> {
    if text == "0" {
        return Ok(InstancePorts::Ephemeral);
    }
    let (lo, hi) = text.split_once('-').unwrap_or((text, text));
    match (lo.parse::<u16>(), hi.parse::<u16>()) {
        (Ok(lo), Ok(hi)) if 1 <= lo && lo <= hi => Ok(InstancePorts::Range { lo, hi }),
        _ => Err(UsageError::new(format!(
            "--instance-ports: {text:?} is not a port range LO-HI with 1 <= LO <= HI <= 65535 \
             (or 0 for OS-chosen ports)"
        ))),
    }
}

/// `--spawns`: `x,y` pairs of finite numbers separated by `;`.
fn parse_spawns(text: &str) -> Result<Vec<(f32, f32)>, UsageError> {
    let coordinate = |s: &str| s.trim().parse::<f32>().ok().filter(|v| v.is_finite());
    text.split(';')
        .map(|pair| {
            let (x, y) = pair.split_once(',')?;
            Some((coordinate(x)?, coordinate(y)?))
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            UsageError::new(format!(
                "--spawns: {text:?} is not a list of x,y number pairs separated by ';'"
            ))
        })
}
