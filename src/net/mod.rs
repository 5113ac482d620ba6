//! The driver: binds the sockets, runs the mio loop, and lets a caller stop or inspect it.
//!
//! Only this module imports `mio`. [`run`] serves in the calling thread (the binary);
//! [`spawn`] binds in the caller's thread, so bind errors surface there, then serves in a
//! new thread and returns a [`ServerHandle`] (integration tests bind `127.0.0.1:0` and read
//! the real addresses from it). Control messages reach the loop through a channel plus a
//! `mio::Waker`, so the loop never blocks on them.

pub mod http;
pub mod instance;
pub mod login;
pub mod server;
pub mod stats;
pub mod tcp;
pub mod tcp_frames;
pub mod token;
pub mod wake;
pub mod warn;
pub mod wz;
pub mod wz_probe;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Poll, Waker};

use crate::config::{Config, InstancePorts};
use crate::lobby::{Lobby, LobbyConfig, LobbyStats, PartyConfig, RoomId, RoomState};
use crate::ratelimit::PerIpConfig;

use instance::{PortPool, PortRange};
use server::Server;
pub use stats::DriverStats;
use wz::WzDriver;
pub use wz::{WzGameInfo, WzSnapshot};

/// A request from outside the loop.
#[derive(Debug)]
pub enum Control {
    /// Stop serving and return from the loop.
    Shutdown,
    /// Send back a [`Snapshot`] of the counters and rooms.
    Snapshot(Sender<Snapshot>),
}

/// One room as operators see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoomView {
    /// The room.
    pub room: RoomId,
    /// `"udp"` for a room of the UDP lobby, `"party"` for a TCP lobby party.
    pub kind: &'static str,
    /// Its state.
    pub state: RoomState,
    /// Its instance port, once bound.
    pub port: Option<u16>,
    /// Admitted members.
    pub members: usize,
    /// Live seat reservations.
    pub reservations: usize,
    /// Seats.
    pub max_players: usize,
}

/// The server's counters and rooms at one instant.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The core's counters.
    pub lobby: LobbyStats,
    /// The driver's counters.
    pub driver: DriverStats,
    /// Counters of the other protocols, as (name, reason label or "", value), grouped by name.
    pub extra: Vec<(&'static str, &'static str, u64)>,
    /// Every live room.
    pub rooms: Vec<RoomView>,
    /// Instance sockets open.
    pub open_instances: usize,
    /// Instance ports held.
    pub ports_in_use: usize,
    /// Source IPs tracked by the UDP lobby rate limiter.
    pub rate_table_len: usize,
    /// Time since the server started.
    pub uptime: Duration,
    /// The Warzone master server's counters and games, when it runs.
    pub wz: Option<WzSnapshot>,
}

/// The core's settings derived from the command line.
pub fn lobby_config(config: &Config) -> LobbyConfig {
    let udp_rate = u64::from(config.udp_rate.max(1));
    let reply_bytes = u64::from(config.udp_reply_bytes);
    LobbyConfig {
        max_rooms: config.max_rooms,
        max_rooms_per_ip: config.max_rooms_per_ip,
        max_players: config.max_players,
        countdown_secs: config.countdown_whole_secs(),
        idle_timeout: config.idle_timeout,
        seat_timeout: config.seat_timeout,
        reap_grace: config.reap_grace,
        max_list_rooms: config.max_list_rooms,
        rate: PerIpConfig {
            rate: udp_rate,
            per: Duration::from_secs(1),
            burst: udp_rate.saturating_mul(2),
            byte_rate: reply_bytes,
            byte_burst: reply_bytes.saturating_mul(2),
            max_entries: config.rate_table_size,
        },
        // Fine enough that a deadline is at most 0.25 ms late (the timerfd in `wake.rs` wakes
        // the loop at the tick itself); coarse enough that 4096 slots span a second.
        timer_tick: Duration::from_micros(250),
        party: PartyConfig {
            min_players: config.min_players,
            countdown: config.countdown,
            countdown_tick: config.countdown_tick,
            auto_start: config.auto_start,
            max_violations: config.max_violations,
            spawns: config.spawns.clone(),
            linger: Duration::from_secs(5),
        },
    }
}

fn port_range(ports: InstancePorts) -> PortRange {
    match ports {
        InstancePorts::Range { lo, hi } => PortRange::Range { lo, hi },
        InstancePorts::Ephemeral => PortRange::Ephemeral,
    }
}

/// The sockets and loop built from a configuration, before it runs.
struct Built {
    server: Server,
    waker: Arc<Waker>,
    control: Sender<Control>,
    udp_lobby: Option<SocketAddr>,
    tcp_lobby: Option<SocketAddr>,
    metrics: Option<SocketAddr>,
    wz: Option<SocketAddr>,
}

fn build(config: &Config) -> io::Result<Built> {
    // Read the Warzone files first: a wrong path stops the start before anything binds.
    let wz_config = wz::core_config(&config.wz)?;
    let poll = Poll::new()?;
    let waker = Arc::new(server::waker(&poll)?);
    let udp_lobby_socket = match config.udp_port {
        Some(port) => Some(UdpSocket::bind(SocketAddr::new(config.bind, port))?),
        None => None,
    };
    let udp_lobby = match udp_lobby_socket.as_ref() {
        Some(socket) => Some(socket.local_addr()?),
        None => None,
    };
    match udp_lobby {
        Some(addr) => log::info!("udp room lobby listening on {addr}"),
        None => log::info!("udp room lobby disabled (--udp-port 0)"),
    }
    let (control, receiver) = mpsc::channel();
    let lobby = Lobby::new(lobby_config(config), Instant::now());
    let ports = PortPool::new(port_range(config.instance_ports));
    let bind_ip: IpAddr = config.bind;
    let mut server = Server::new(poll, udp_lobby_socket, lobby, ports, bind_ip, receiver)?;
    let tcp_lobby = tcp::bind(config, &mut server)?;
    let metrics = match config.metrics {
        Some(addr) => {
            let listener = mio::net::TcpListener::bind(addr)?;
            let bound = listener.local_addr()?;
            server.serve_metrics(listener)?;
            log::info!("metrics endpoint listening on http://{bound}/metrics");
            Some(bound)
        }
        None => None,
    };
    let wz = match config.wz.port {
        Some(port) => {
            let listener = mio::net::TcpListener::bind(SocketAddr::new(config.bind, port))?;
            let bound = listener.local_addr()?;
            let registry = server.registry();
            let waker = Arc::clone(&waker);
            let driver = WzDriver::new(listener, registry, &config.wz, wz_config, waker)?;
            server.serve_wz(driver);
            log::info!("warzone master server listening on {bound}");
            Some(bound)
        }
        None => {
            log::info!("warzone master server disabled (--wz-port 0)");
            None
        }
    };
    Ok(Built {
        server,
        waker,
        control,
        udp_lobby,
        tcp_lobby,
        metrics,
        wz,
    })
}

/// Binds every socket of `config` and serves in the calling thread until shut down.
pub fn run(config: &Config) -> io::Result<()> {
    let signals = server::signals()?;
    let Built {
        mut server,
        control,
        ..
    } = build(config)?;
    server.handle_signals(signals)?;
    // Held for the loop's lifetime: a dropped sender reads as a shutdown request.
    let _control = control;
    server.run()?;
    log::info!("lobbyd stopped");
    Ok(())
}

/// A server running in its own thread.
pub struct ServerHandle {
    udp_lobby: Option<SocketAddr>,
    tcp_lobby: Option<SocketAddr>,
    metrics: Option<SocketAddr>,
    wz: Option<SocketAddr>,
    waker: Arc<Waker>,
    control: Sender<Control>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

/// Binds every socket of `config` in this thread, then serves in a new one.
pub fn spawn(config: &Config) -> io::Result<ServerHandle> {
    let Built {
        mut server,
        waker,
        control,
        udp_lobby,
        tcp_lobby,
        metrics,
        wz,
    } = build(config)?;
    let thread = std::thread::Builder::new()
        .name("lobbyd".into())
        .spawn(move || server.run())?;
    Ok(ServerHandle {
        udp_lobby,
        tcp_lobby,
        metrics,
        wz,
        waker,
        control,
        thread: Some(thread),
    })
}

impl ServerHandle {
    /// The UDP room lobby's bound address, if enabled.
    pub fn udp_lobby_addr(&self) -> Option<SocketAddr> {
        self.udp_lobby
    }

    /// The TCP lobby listener's bound address, if enabled.
    pub fn tcp_lobby_addr(&self) -> Option<SocketAddr> {
        self.tcp_lobby
    }

    /// The metrics endpoint's bound address, if enabled.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics
    }

    /// The Warzone master server's bound address, if enabled.
    pub fn wz_addr(&self) -> Option<SocketAddr> {
        self.wz
    }

    /// The counters and rooms, as the loop sees them between two events.
    pub fn snapshot(&self) -> io::Result<Snapshot> {
        let (reply, receiver) = mpsc::channel();
        self.send(Control::Snapshot(reply))?;
        receiver
            .recv_timeout(Duration::from_secs(10))
            .map_err(|e| io::Error::new(io::ErrorKind::TimedOut, e))
    }

    /// Stops the loop and waits for its thread.
    pub fn shutdown(mut self) -> io::Result<()> {
        self.stop()
    }

    fn send(&self, control: Control) -> io::Result<()> {
        self.control
            .send(control)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "server loop has stopped"))?;
        self.waker.wake()
    }

    fn stop(&mut self) -> io::Result<()> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        // The loop may already have stopped on an error; joining reports it.
        let _ = self.send(Control::Shutdown);
        thread
            .join()
            .map_err(|_| io::Error::other("server thread panicked"))?
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            log::error!("server stopped with an error: {e}");
        }
    }
}
