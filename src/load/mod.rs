//! The load generator behind the `lobby-load` binary: a single-threaded mio client that
//! drives lobbyd's protocols (and a raw UDP echo baseline) and measures what it gets back.
//!
//! It is a client, kept apart from the server: the server's driver (`net`) never uses it.
//! Every message it sends is built, and every reply checked, with the crate's own [`crate::wire`]
//! modules, so a load run also checks that the server keeps the wire contract under load.
//!
//! - [`args`]: the command line (getopts) into [`Options`];
//! - [`runner`]: the poll loop shared by every mode, the open-loop [`runner::Pacer`], the
//!   progress line each second; it stops by itself at `--duration` or `--requests`;
//! - [`stats`] and [`histogram`]: counters, errors and timeouts by kind, latency
//!   percentiles, the text and JSON summaries;
//! - [`sources`]: target and source address policy (loopback only unless `--allow-remote`);
//! - [`setup`]: blocking room creation and joins before the clock starts;
//! - one module per family of modes: [`udp_rr`] (the request/reply engine over UDP) with
//!   [`udp_modes`] (`udp-list`, `udp-create-join`, `echo`) and [`echo_server`]; [`relay`];
//!   [`tcp_engine`] (connection-per-cycle clients over TCP) with [`tcp_modes`] (`tcp-join`,
//!   `tcp-idle`), [`tcp_cycle`] (`tcp-cycle`), [`wz_modes`] (`wz-list`, `wz-host`) and
//!   [`general_modes`] (`lobby-join`, `lobby-idle`); [`general_chat`] (`lobby-chat`);
//!   [`start_rounds`] (`tcp-cycle --spread`); [`write_floor`] (`write-floor`, the kernel's
//!   time to write one countdown tick).

pub mod args;
pub mod echo_server;
pub mod general_chat;
pub mod general_modes;
pub mod histogram;
pub mod relay;
pub mod runner;
pub mod setup;
pub mod sources;
pub mod start_rounds;
pub mod stats;
pub mod tcp_cycle;
pub mod tcp_engine;
pub mod tcp_modes;
pub mod udp_modes;
pub mod udp_rr;
pub mod write_floor;
pub mod wz_modes;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

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
    /// COUNTDOWN frames written to `--concurrency` loopback connections of the tool's own
    /// in a plain loop: the kernel's floor for one countdown tick.
    WriteFloor,
}

impl Mode {
    /// Every mode, in the order `--help` lists them.
    pub const ALL: [Mode; 13] = [
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
        Mode::WriteFloor,
    ];

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
            Mode::WzList | Mode::WzHost => 9990,
            Mode::LobbyJoin | Mode::LobbyIdle | Mode::LobbyChat => 4243,
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

    /// `--hold` unless given: how long a `lobby-join` creator waits for a joiner; none
    /// elsewhere (a `wz-host` game is delisted at once).
    pub const fn default_hold(self) -> Duration {
        match self {
            Mode::LobbyJoin => Duration::from_millis(250),
            _ => Duration::ZERO,
        }
    }
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
    /// Source addresses the clients bind, in turn.
    pub sources: Vec<IpAddr>,
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
    /// `wz-host`: how long each host keeps its game listed before closing; `lobby-join`: how
    /// long a creator waits for a joiner.
    pub hold: Duration,
    /// `tcp-cycle`: parties start in rounds, at random phases over this
    /// ([`start_rounds`]); `None`: each party starts as soon as it is ready.
    pub spread: Option<Duration>,
    /// Print a JSON summary instead of text.
    pub json: bool,
    /// No progress line.
    pub quiet: bool,
}

impl Options {
    /// Defaults for `mode` against `target`: 5 s, 16 clients, closed loop, 127.0.0.1, and the
    /// mode's own `members` and `hold`.
    pub fn new(mode: Mode, target: SocketAddr) -> Options {
        Options {
            mode,
            target,
            duration: Duration::from_secs(5),
            max_requests: None,
            concurrency: 16,
            rate: None,
            sources: vec![IpAddr::from([127, 0, 0, 1])],
            timeout: Duration::from_secs(1),
            rooms: 64,
            members: mode.default_members(),
            size: 64,
            reply_size: 64,
            start: false,
            hold: mode.default_hold(),
            spread: None,
            json: false,
            quiet: false,
        }
    }

    /// The source address of client `i`.
    pub fn source(&self, i: usize) -> IpAddr {
        self.sources[i % self.sources.len()]
    }
}

/// Runs one load test and returns its summary. Progress lines go to `progress` (unless
/// `quiet`); the run stops by itself after `duration` or `max_requests`.
pub fn run(options: &Options, progress: &mut dyn std::io::Write) -> std::io::Result<Summary> {
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
            let target = format!("echo server {}", echo.addr());
            udp_rr::run_exchange(options, target, echo, progress)
        }
        Mode::Relay => relay::run(options, progress),
        Mode::TcpJoin => run_tcp(
            options,
            tcp_modes::LobbyJoin::new(false, options.concurrency),
            options.concurrency,
            progress,
        ),
        Mode::TcpIdle => run_tcp(
            options,
            tcp_modes::LobbyJoin::new(true, options.concurrency),
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
            general_modes::GeneralJoin::new(false, options.concurrency, options.hold),
            options.concurrency,
            progress,
        ),
        Mode::LobbyIdle => run_tcp(
            options,
            general_modes::GeneralJoin::new(true, options.concurrency, options.hold),
            tcp_modes::IDLE_RAMP,
            progress,
        ),
        Mode::LobbyChat => general_chat::run(options, progress),
        Mode::WriteFloor => write_floor::run(options, progress),
    }
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
