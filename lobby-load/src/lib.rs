//! The load generator behind the `lobby-load` binary: a single-threaded mio client that
//! drives lobbyd's protocols (and a raw UDP echo baseline) and measures what it gets back.
//!
//! It is a client, a crate apart from the server: the server never imports it, and it uses
//! of the server only what a client needs (the wire formats, the default limits of
//! `lobbyd::config` and `lobbyd::wz`, and the driver's `net::io::wake` timerfd alarm,
//! `net::io::batch` `recvmmsg` reads and `net::io::rx_time` kernel receive timestamps). Every message
//! it sends is built, and every reply checked, with lobbyd's own [`lobbyd::wire`] modules, so
//! a load run also checks that the server keeps the wire contract under load.
//!
//! - [`args`]: the command line (getopts) into [`Options`];
//! - [`runner`]: the poll loop shared by every mode, the open-loop [`runner::Pacer`], the
//!   progress line each second; it stops by itself at `--duration` or `--requests`;
//! - [`stats`] and [`histogram`]: counters, errors and timeouts by kind, latency
//!   percentiles, the text and JSON summaries;
//! - [`sources`]: target and source address policy (loopback only unless `--allow-remote`),
//!   and the blocks of loopback addresses a run spreads over by default;
//! - [`caps`] and [`fit`]: lobbyd's default per-address limits, the budgets that keep each
//!   source address within them, and the one line saying what a run adjusted, so every mode
//!   works against `make run` with no flags (`--caps off` for a server with raised limits);
//! - [`setup`]: blocking room creation and joins before the clock starts;
//! - one module per family of modes: [`udp_rr`] (the request/reply engine over UDP) with
//!   [`udp_modes`] (`udp-list`, `udp-create-join`, `echo`) and [`echo_server`]; [`relay`];
//!   [`tcp_engine`] (connection-per-cycle clients over TCP) with [`tcp_modes`] (`tcp-join`,
//!   `tcp-idle`), [`tcp_upstream`] (`tcp-join --dialect upstream`), [`tcp_cycle`] (`tcp-cycle`), [`wz_modes`] (`wz-list`, `wz-host`, their game
//!   ports answering lobbyd's reachability probe in [`wz_probe`]) and
//!   [`general_modes`] (`lobby-join`, `lobby-idle`); [`general_chat`] (`lobby-chat`);
//!   [`hostile`] (`hostile-udp`, `hostile-tcp`, `hostile-wz`, `hostile-lobby`, `hostile-http`:
//!   attackers, for `scripts/hostile.sh`); [`start_rounds`] (`tcp-cycle --spread`);
//!   [`write_floor`] (`write-floor`, the kernel's time to write one countdown tick).

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod args;
pub mod caps;
pub mod dialect;
pub mod echo_server;
pub mod fit;
pub mod general_chat;
pub mod general_modes;
pub mod histogram;
pub mod hostile;
pub mod relay;
pub mod runner;
pub mod setup;
pub mod sources;
pub mod start_rounds;
pub mod stats;
pub mod tcp_cycle;
pub mod tcp_engine;
pub mod tcp_modes;
pub mod tcp_probe;
pub mod tcp_upstream;
pub mod udp_modes;
pub mod udp_rr;
pub mod write_floor;
pub mod ws;
pub mod wz_modes;
pub mod wz_probe;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

pub use caps::Caps;
pub use stats::Summary;

/// What the load generator does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// LIST_ROOMS against the UDP lobby, after creating `--rooms` rooms so the list is full.
    UdpList,
    /// CREATE_ROOM, JOIN_ROOM, HELLO on the instance, LEAVE: a whole short room life.
    UdpCreateJoin,
    /// DATA datagrams relayed by game instances among the members of `--concurrency` rooms.
    Relay,
    /// TCP lobby: connect, CONNECT_REQ, CONNECT_ACK + own PLAYER_JOIN, DISCONNECT; repeat.
    TcpJoin,
    /// TCP lobby: whole parties through READY, START, the countdown, GAME_START and HELLO.
    TcpCycle,
    /// TCP lobby: `--concurrency` joined connections held until the run ends.
    TcpIdle,
    /// Warzone master server: legacy `list` browsers.
    WzList,
    /// Warzone master server: legacy hosts registering a game (`gaId`, `addg`).
    WzHost,
    /// General lobby: connect, sign in, sync, create or join a game, leave; repeat.
    LobbyJoin,
    /// General lobby: `--concurrency` signed-in members held until the run ends.
    LobbyIdle,
    /// General lobby: `--members` members, lobby-wide chat fanned out to all of them.
    LobbyChat,
    /// A raw UDP echo server started in this process: the machine's physical limit.
    Echo,
    /// Attacker: random and near-valid datagrams at the UDP lobby and an instance.
    HostileUdp,
    /// Attacker: a hostile crowd against the TCP lobby (slowloris, floods, junk, a flooded party).
    HostileTcp,
    /// Attacker: a hostile crowd against the Warzone master server.
    HostileWz,
    /// Attacker: a hostile crowd against the general lobby.
    HostileLobby,
    /// Attacker: a hostile crowd against the metrics endpoint.
    HostileHttp,
    /// COUNTDOWN frames written to `--concurrency` loopback connections of the tool's own
    /// in a plain loop: the kernel's floor for one countdown tick.
    WriteFloor,
}

impl Mode {
    /// Every mode, in the order `--help` lists them.
    pub const ALL: [Mode; 18] = [
        Mode::UdpList,
        Mode::UdpCreateJoin,
        Mode::Relay,
        Mode::TcpJoin,
        Mode::TcpCycle,
        Mode::TcpIdle,
        Mode::WzList,
        Mode::WzHost,
        Mode::LobbyJoin,
        Mode::LobbyIdle,
        Mode::LobbyChat,
        Mode::Echo,
        Mode::HostileUdp,
        Mode::HostileTcp,
        Mode::HostileWz,
        Mode::HostileLobby,
        Mode::HostileHttp,
        Mode::WriteFloor,
    ];

    /// An attacker of `scripts/hostile.sh`: it means to go past lobbyd's limits, so nothing
    /// fits it to them.
    pub const fn is_hostile(self) -> bool {
        matches!(
            self,
            Mode::HostileUdp
                | Mode::HostileTcp
                | Mode::HostileWz
                | Mode::HostileLobby
                | Mode::HostileHttp
        )
    }

    /// The name on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Mode::UdpList => "udp-list",
            Mode::UdpCreateJoin => "udp-create-join",
            Mode::Relay => "relay",
            Mode::TcpJoin => "tcp-join",
            Mode::TcpCycle => "tcp-cycle",
            Mode::TcpIdle => "tcp-idle",
            Mode::WzList => "wz-list",
            Mode::WzHost => "wz-host",
            Mode::LobbyJoin => "lobby-join",
            Mode::LobbyIdle => "lobby-idle",
            Mode::LobbyChat => "lobby-chat",
            Mode::Echo => "echo",
            Mode::HostileUdp => "hostile-udp",
            Mode::HostileTcp => "hostile-tcp",
            Mode::HostileWz => "hostile-wz",
            Mode::HostileLobby => "hostile-lobby",
            Mode::HostileHttp => "hostile-http",
            Mode::WriteFloor => "write-floor",
        }
    }

    /// The mode named `name`.
    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The port a server of this mode listens on by default.
    pub const fn default_port(self) -> u16 {
        match self {
            Mode::WzList | Mode::WzHost | Mode::HostileWz => 9990,
            Mode::LobbyJoin | Mode::LobbyIdle | Mode::LobbyChat | Mode::HostileLobby => 4243,
            Mode::HostileHttp => 9100,
            _ => 4242,
        }
    }

    /// `--members` unless given: the lobby of `lobby-chat`, a room or party elsewhere.
    pub const fn default_members(self) -> usize {
        match self {
            Mode::LobbyChat => 100,
            _ => 4,
        }
    }

    /// `--duration` unless given: 5 s; `tcp-cycle` 12 s, two party cycles through lobbyd's
    /// default 5 s countdown.
    pub const fn default_duration(self) -> Duration {
        match self {
            Mode::TcpCycle => Duration::from_secs(12),
            _ => Duration::from_secs(5),
        }
    }

    /// `--hold` unless given: how long a `lobby-join` creator waits for a joiner; none
    /// elsewhere (a `wz-host` game is delisted at once).
    pub const fn default_hold(self) -> Duration {
        match self {
            Mode::LobbyJoin => Duration::from_millis(250),
            _ => Duration::ZERO,
        }
    }
}

/// The TCP lobby dialect a `tcp-join` client speaks (`--dialect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpDialect {
    /// RFC R-Type-TCP-001 (docs/protocols/tcp-lobby.md).
    Rfc,
    /// The upstream R-Type client's dialect, rooms first (docs/protocols/tcp-lobby-upstream.md).
    Upstream,
}

/// Everything a run needs, validated.
#[derive(Clone, Debug)]
pub struct Options {
    /// What to do.
    pub mode: Mode,
    /// The server (ignored by `echo`, which starts its own).
    pub target: SocketAddr,
    /// How long to measure.
    pub duration: Duration,
    /// Stop once at least this many requests completed (checked between event batches).
    pub max_requests: Option<u64>,
    /// Clients (rooms for `relay`, connections for `tcp-*`).
    pub concurrency: usize,
    /// Open loop at this many requests per second in total; `None` is closed loop.
    pub rate: Option<f64>,
    /// Source addresses the clients bind, in turn; empty (the default) lets [`fit`] choose:
    /// a block of loopback addresses for a loopback target.
    pub sources: Vec<IpAddr>,
    /// The server limits each source address keeps within (`--caps default`, lobbyd's
    /// defaults); `None` (`--caps off`) sends as fast as the mode goes.
    pub caps: Option<Caps>,
    /// Failed requests (errors and timeouts) as a share of all answered or failed ones
    /// above which the run counts as failed (`--max-failures`, default 0.01).
    pub max_failures: f64,
    /// A request not answered within this counts as a timeout.
    pub timeout: Duration,
    /// `udp-list`: rooms created before measuring; `wz-list`: games registered.
    pub rooms: usize,
    /// `relay`, `tcp-cycle`: members per room or party; `lobby-chat`: members in the lobby.
    pub members: usize,
    /// `relay`, `echo`: bytes of each request datagram; `lobby-chat`: bytes of each line.
    pub size: usize,
    /// `echo`: bytes of each reply datagram (default: `size`).
    pub reply_size: usize,
    /// `relay`: each room's owner sends START after setup, so rooms count down and play
    /// while DATA flows (and clients that stop early vanish mid-countdown or mid-game).
    pub start: bool,
    /// `echo`: the server is a blocking std loop (one `recv_from` + one `send_to` per
    /// datagram) instead of a mio loop.
    pub blocking: bool,
    /// `wz-host`: how long each host keeps its game listed before closing; `lobby-join`: how
    /// long a creator waits for a joiner.
    pub hold: Duration,
    /// `tcp-cycle`: parties start in rounds, at random phases over this
    /// ([`start_rounds`]); `None`: each party starts as soon as it is ready.
    pub spread: Option<Duration>,
    /// `lobby-join`, `lobby-idle`, `lobby-chat`: over lobbyd's WebSocket port (`--target`
    /// is that port), each frame one binary message ([`ws`]).
    pub ws: bool,
    /// `udp-list`, `udp-create-join`: the spelling of the UDP lobby (`--dialect seed`,
    /// `upstream-v1`, `upstream-v3`).
    pub dialect: dialect::Dialect,
    /// `tcp-join`: the TCP lobby dialect its clients speak (`--dialect rfc`, `upstream`).
    pub tcp_dialect: TcpDialect,
    /// Print a JSON summary instead of text.
    pub json: bool,
    /// No progress line.
    pub quiet: bool,
    /// The progress line goes to a terminal: overwrite it in place instead of adding lines.
    pub tty: bool,
}

impl Options {
    /// Defaults for `mode` against `target`: the mode's duration, 16 clients, closed loop,
    /// sources chosen by [`fit`], lobbyd's default caps, and the mode's own `members` and
    /// `hold`.
    pub fn new(mode: Mode, target: SocketAddr) -> Options {
        Options {
            mode,
            target,
            duration: mode.default_duration(),
            max_requests: None,
            concurrency: 16,
            rate: None,
            sources: Vec::new(),
            caps: Some(Caps::lobbyd_defaults()),
            max_failures: 0.01,
            timeout: Duration::from_secs(1),
            rooms: 64,
            members: mode.default_members(),
            size: 64,
            reply_size: 64,
            start: false,
            blocking: false,
            hold: mode.default_hold(),
            spread: None,
            ws: false,
            dialect: dialect::Dialect::Seed,
            tcp_dialect: TcpDialect::Rfc,
            json: false,
            quiet: false,
            tty: false,
        }
    }

    /// The source address of client `i` (127.0.0.1 before [`fit`] chose any).
    pub fn source(&self, i: usize) -> IpAddr {
        match self.sources.len() {
            0 => IpAddr::from([127, 0, 0, 1]),
            n => self.sources[i % n],
        }
    }
}

/// Runs one load test and returns its summary. The options are first [`fit::fit`] to the
/// server (the line saying what changed goes to `progress`, quiet or not), progress lines
/// follow (unless `quiet`); the run stops by itself after `duration` or `max_requests`.
pub fn run(options: &Options, progress: &mut dyn std::io::Write) -> std::io::Result<Summary> {
    let fitted = fit_to_conn_rate(options, fit::fit(options));
    if let Some(note) = &fitted.note {
        writeln!(progress, "lobby-load: {note}")?;
    }
    let mut summary = run_fitted(&fitted.options, progress)?;
    summary.adjusted = fitted.note;
    Ok(summary)
}

/// A connection mode fitted to lobbyd's default `--conn-rate` is fitted again without that
/// pacing when the server welcomes more connections in a row than the default allows
/// ([`tcp_probe`]); the note says so.
fn fit_to_conn_rate(given: &Options, fitted: fit::Fitted) -> fit::Fitted {
    let Some(caps) = given.caps.as_ref() else {
        return fitted;
    };
    if !matches!(given.mode, Mode::TcpJoin | Mode::TcpIdle | Mode::TcpCycle) {
        return fitted;
    }
    let Some(source) = tcp_probe::probe_source(given.target, &fitted.options.sources) else {
        return fitted;
    };
    let count = usize::try_from(caps.conn_rate)
        .unwrap_or(usize::MAX)
        .saturating_add(1);
    let wait = given.timeout.min(Duration::from_secs(2));
    match tcp_probe::welcomed_in_a_row(source, given.target, count, wait) {
        Ok(welcomed) if welcomed == count => {}
        _ => return fitted,
    }
    let mut raised = given.clone();
    if let Some(caps) = raised.caps.as_mut() {
        caps.conn_rate = fit::RAISED_CONN_RATE;
    }
    let mut refitted = fit::fit(&raised);
    let probe = format!(
        "lobbyd welcomed {count} connections in a row from {source}, more than its default \
         --conn-rate allows: connections are not paced by it"
    );
    refitted.note = Some(match refitted.note.take() {
        Some(note) => format!("{note}; {probe}"),
        None => probe,
    });
    refitted
}

fn run_fitted(options: &Options, progress: &mut dyn std::io::Write) -> std::io::Result<Summary> {
    match options.mode {
        Mode::UdpList => udp_rr::run_exchange(
            options,
            options.target.to_string(),
            udp_modes::ListRooms::setup(options)?,
            progress,
        ),
        Mode::UdpCreateJoin => udp_rr::run_exchange(
            options,
            options.target.to_string(),
            udp_modes::CreateJoin::new(options),
            progress,
        ),
        Mode::Echo => {
            let echo = udp_modes::Echo::start(options)?;
            let kind = if options.blocking { "blocking " } else { "" };
            let target = format!("{kind}echo server {}", echo.addr());
            udp_rr::run_exchange(options, target, echo, progress)
        }
        Mode::Relay => relay::run(options, progress),
        Mode::TcpJoin if options.tcp_dialect == TcpDialect::Upstream => run_tcp(
            options,
            tcp_upstream::UpstreamJoin,
            options.concurrency,
            progress,
        ),
        Mode::TcpJoin => run_tcp(
            options,
            tcp_modes::LobbyJoin::new(false, options.concurrency, None),
            options.concurrency,
            progress,
        ),
        Mode::TcpIdle => run_tcp(
            options,
            tcp_modes::LobbyJoin::new(true, options.concurrency, keepalive(options)),
            tcp_modes::IDLE_RAMP,
            progress,
        ),
        Mode::TcpCycle => run_tcp(
            options,
            tcp_cycle::Cycle::new(options),
            options.concurrency,
            progress,
        ),
        Mode::WzList => run_tcp(
            options,
            wz_modes::WzList::setup(options)?,
            options.concurrency,
            progress,
        ),
        Mode::WzHost => run_tcp(
            options,
            wz_modes::WzHost::new(options),
            options.concurrency,
            progress,
        ),
        Mode::LobbyJoin => run_tcp(
            options,
            general_modes::GeneralJoin::new(
                false,
                options.concurrency,
                options.hold,
                resumes(options),
                None,
            ),
            options.concurrency,
            progress,
        ),
        Mode::LobbyIdle => run_tcp(
            options,
            general_modes::GeneralJoin::new(
                true,
                options.concurrency,
                options.hold,
                false,
                keepalive(options),
            ),
            tcp_modes::IDLE_RAMP,
            progress,
        ),
        Mode::LobbyChat => general_chat::run(options, progress),
        Mode::HostileUdp
        | Mode::HostileTcp
        | Mode::HostileWz
        | Mode::HostileLobby
        | Mode::HostileHttp => hostile::run(options, progress),
        Mode::WriteFloor => write_floor::run(options, progress),
    }
}

/// How often a held connection shows it is alive: under caps, a third of lobbyd's default
/// `--idle-timeout`; without, never (the server's is raised past the run).
fn keepalive(options: &Options) -> Option<Duration> {
    options.caps.as_ref().map(Caps::keepalive)
}

/// Whether `lobby-join` clients resume their member: under caps, when lobbyd's default
/// `--lobby-resume-grace` would keep each closed one away.
fn resumes(options: &Options) -> bool {
    options
        .caps
        .as_ref()
        .is_some_and(|caps| !caps.resume_grace.is_zero())
}

/// Runs a TCP script with at most `ramp` clients busy at once (closed loop).
fn run_tcp<S: tcp_engine::Script>(
    options: &Options,
    script: S,
    ramp: usize,
    progress: &mut dyn std::io::Write,
) -> std::io::Result<Summary> {
    let poll = mio::Poll::new()?;
    let mut engine = tcp_engine::TcpEngine::new(options, script, ramp);
    runner::drive(
        options,
        options.target.to_string(),
        poll,
        &mut engine,
        progress,
    )
}
