//! Poll tokens, decoded into what they stand for.
//!
//! A token packs a kind in its high bits and a slab key in the low 32 bits, so call sites
//! never do raw `usize` arithmetic: they build a [`Target`] and match on it. Each front end
//! (`net::server`'s seam) owns a range of kinds: [`Target::front_end`] says whose a token is.

use mio::Token;

/// What a readiness event is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The UDP room lobby socket.
    LobbyUdp,
    /// The waker that carries control messages (shutdown, snapshots) into the loop.
    Waker,
    /// A game instance socket, by its key in the instance slab.
    Instance(usize),
    /// A game server's pidfd (`--instance-exec`), by its key in the game-server slab.
    GameServer(usize),
    /// A game server's stdout pipe, by the same key.
    GameServerOut(usize),
    /// A game server's stderr pipe, by the same key.
    GameServerErr(usize),
    /// SIGINT, SIGTERM and SIGHUP (only when serving in the main thread).
    Signals,
    /// The metrics endpoint's listener.
    MetricsListener,
    /// A metrics HTTP connection, by its key in the endpoint's slab.
    MetricsConn(usize),
    /// The TCP lobby listener.
    TcpListener,
    /// A TCP lobby connection, by its key in the connection slab.
    TcpConn(usize),
    /// The Warzone master server's listener.
    WzListener,
    /// A Warzone master-server connection, by its key in the driver's slab.
    WzConn(usize),
    /// A Warzone reachability probe, by its key in the probe slab.
    WzProbe(usize),
    /// The general lobby's listener.
    GeneralListener,
    /// A general lobby connection, by its key in the driver's slab.
    GeneralConn(usize),
    /// The timerfd that wakes the loop at its next deadline (`net::io::wake`).
    Timer,
}

const KIND_SHIFT: u32 = 32;
const KEY_MASK: usize = (1 << KIND_SHIFT) - 1;

const KIND_LOBBY_UDP: usize = 1;
const KIND_WAKER: usize = 2;
const KIND_INSTANCE: usize = 3;
const KIND_SIGNALS: usize = 4;
const KIND_METRICS_LISTENER: usize = 5;
const KIND_METRICS_CONN: usize = 6;
const KIND_TIMER: usize = 7;
const KIND_TCP_LISTENER: usize = 20;
const KIND_TCP_CONN: usize = 21;
const KIND_GAME_SERVER: usize = 22;
const KIND_GAME_SERVER_OUT: usize = 23;
const KIND_GAME_SERVER_ERR: usize = 24;
const KIND_WZ_LISTENER: usize = 30;
const KIND_WZ_CONN: usize = 31;
const KIND_WZ_PROBE: usize = 32;
const KIND_GENERAL_LISTENER: usize = 40;
const KIND_GENERAL_CONN: usize = 41;

/// The front ends plugged into the loop, each owning its own tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrontEndKind {
    /// The R-Type UDP room lobby, its game instances and the TCP lobby (`net::rtype`).
    Rtype = 0,
    /// The Warzone 2100 master server (`net::wz`).
    Wz = 1,
    /// The general lobby (`net::general`).
    General = 2,
}

impl FrontEndKind {
    /// How many kinds there are.
    pub const COUNT: usize = 3;
}

impl Target {
    /// The token registered for this target.
    pub fn token(self) -> Token {
        let (kind, key) = match self {
            Target::LobbyUdp => (KIND_LOBBY_UDP, 0),
            Target::Waker => (KIND_WAKER, 0),
            Target::Instance(key) => (KIND_INSTANCE, key & KEY_MASK),
            Target::GameServer(key) => (KIND_GAME_SERVER, key & KEY_MASK),
            Target::GameServerOut(key) => (KIND_GAME_SERVER_OUT, key & KEY_MASK),
            Target::GameServerErr(key) => (KIND_GAME_SERVER_ERR, key & KEY_MASK),
            Target::Signals => (KIND_SIGNALS, 0),
            Target::MetricsListener => (KIND_METRICS_LISTENER, 0),
            Target::MetricsConn(key) => (KIND_METRICS_CONN, key & KEY_MASK),
            Target::TcpListener => (KIND_TCP_LISTENER, 0),
            Target::TcpConn(key) => (KIND_TCP_CONN, key & KEY_MASK),
            Target::WzListener => (KIND_WZ_LISTENER, 0),
            Target::WzConn(key) => (KIND_WZ_CONN, key & KEY_MASK),
            Target::WzProbe(key) => (KIND_WZ_PROBE, key & KEY_MASK),
            Target::GeneralListener => (KIND_GENERAL_LISTENER, 0),
            Target::GeneralConn(key) => (KIND_GENERAL_CONN, key & KEY_MASK),
            Target::Timer => (KIND_TIMER, 0),
        };
        Token((kind << KIND_SHIFT) | key)
    }

    /// The target a token was registered for, or `None` for a token we never issue.
    pub fn from_token(token: Token) -> Option<Target> {
        let key = token.0 & KEY_MASK;
        match token.0 >> KIND_SHIFT {
            KIND_LOBBY_UDP => Some(Target::LobbyUdp),
            KIND_WAKER => Some(Target::Waker),
            KIND_INSTANCE => Some(Target::Instance(key)),
            KIND_GAME_SERVER => Some(Target::GameServer(key)),
            KIND_GAME_SERVER_OUT => Some(Target::GameServerOut(key)),
            KIND_GAME_SERVER_ERR => Some(Target::GameServerErr(key)),
            KIND_SIGNALS => Some(Target::Signals),
            KIND_METRICS_LISTENER => Some(Target::MetricsListener),
            KIND_METRICS_CONN => Some(Target::MetricsConn(key)),
            KIND_TCP_LISTENER => Some(Target::TcpListener),
            KIND_TCP_CONN => Some(Target::TcpConn(key)),
            KIND_WZ_LISTENER => Some(Target::WzListener),
            KIND_WZ_CONN => Some(Target::WzConn(key)),
            KIND_WZ_PROBE => Some(Target::WzProbe(key)),
            KIND_GENERAL_LISTENER => Some(Target::GeneralListener),
            KIND_GENERAL_CONN => Some(Target::GeneralConn(key)),
            KIND_TIMER => Some(Target::Timer),
            _ => None,
        }
    }
}

impl Target {
    /// The front end whose token this is; `None` for the loop's own (waker, signals, timer,
    /// metrics).
    pub fn front_end(self) -> Option<FrontEndKind> {
        match self {
            Target::LobbyUdp
            | Target::Instance(_)
            | Target::GameServer(_)
            | Target::GameServerOut(_)
            | Target::GameServerErr(_)
            | Target::TcpListener
            | Target::TcpConn(_) => Some(FrontEndKind::Rtype),
            Target::WzListener | Target::WzConn(_) | Target::WzProbe(_) => Some(FrontEndKind::Wz),
            Target::GeneralListener | Target::GeneralConn(_) => Some(FrontEndKind::General),
            Target::Waker
            | Target::Signals
            | Target::Timer
            | Target::MetricsListener
            | Target::MetricsConn(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for target in [
            Target::LobbyUdp,
            Target::Waker,
            Target::Instance(0),
            Target::Instance(12345),
            Target::GameServer(4),
            Target::GameServerOut(5),
            Target::GameServerErr(6),
            Target::Signals,
            Target::MetricsListener,
            Target::MetricsConn(7),
            Target::TcpListener,
            Target::TcpConn(9),
            Target::WzListener,
            Target::WzConn(3),
            Target::WzProbe(9),
            Target::GeneralListener,
            Target::GeneralConn(11),
            Target::Timer,
        ] {
            assert_eq!(Target::from_token(target.token()), Some(target));
        }
        assert_eq!(Target::from_token(Token(0)), None);
        assert_eq!(Target::from_token(Token(usize::MAX)), None);
    }
}
