//! What a run is: the [`Mode`] (one per `--mode`, with its defaults), the TCP lobby dialect
//! its clients speak, and the validated [`Options`] every mode reads. Plain values: `args.rs`
//! fills them from the command line, `fit.rs` adjusts them to the server's limits, and the
//! modes read them; nothing here runs anything.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::caps::Caps;
use crate::dialect;

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
