//! The driver: binds the sockets, runs the mio loop, and lets a caller stop or inspect it.
//!
//! Only this module imports `mio`. Every listener and socket is bound here, in `build`, and
//! handed to its front end (`rtype`, `wz`), which plugs into the loop (`server`) through its
//! one seam. [`run`] serves in the calling thread (the binary);
//! [`spawn`] binds in the caller's thread, so bind errors surface there, then serves in a
//! new thread and returns a [`ServerHandle`] (integration tests bind `127.0.0.1:0` and read
//! the real addresses from it). Control messages reach the loop through a channel plus a
//! `mio::Waker`, so the loop never blocks on them.

pub mod directory;
pub mod fd_table;
pub mod general;
pub mod http;
pub mod io;
pub mod login;
pub mod loop_stats;
pub mod rtype;
pub mod server;
pub mod token;
pub mod warn;
pub mod wz;

use std::net::SocketAddr;
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, UdpSocket};
use mio::{Poll, Waker};

use crate::accounts::store::check_database;
use crate::accounts::LoginPolicy;
use crate::config::{Config, InstancePorts};
use crate::metrics::{ListenerView, Snapshot};
use crate::ratelimit::PerIpConfig;
use crate::rtype::{PartyConfig, RtypeConfig, RtypeCore};

use directory::DirectoryBridge;
use general::{GeneralDriver, WsPort};
use login::{LoginBudget, LoginShared};
use rtype::game_server::GameServers;
use rtype::instance::{PortPool, PortRange};
use rtype::tcp::{TcpLimits, TcpLobby};
use rtype::udp::UdpLobby;
use rtype::RtypeFrontEnd;
use server::{Control, Server};
use token::FrontEndKind;
use wz::directory::DirectoryGames;
use wz::WzDriver;

/// The core's settings derived from the command line.
pub fn lobby_config(config: &Config) -> RtypeConfig {
    let udp_rate = u64::from(config.udp_rate.max(1));
    let reply_bytes = u64::from(config.udp_reply_bytes);
    RtypeConfig {
        max_rooms: config.max_rooms,
        max_rooms_per_ip: config.max_rooms_per_ip,
        max_players: config.max_players,
        countdown_secs: config.countdown_whole_secs(),
        idle_timeout: config.idle_timeout,
        seat_timeout: config.seat_timeout,
        reap_grace: config.reap_grace,
        max_list_rooms: config.max_list_rooms,
        upstream_records: config.rtype_udp_records,
        node_id: config.directory.node_id,
        rate: PerIpConfig {
            rate: udp_rate,
            per: Duration::from_secs(1),
            burst: udp_rate.saturating_mul(2),
            byte_rate: reply_bytes,
            byte_burst: reply_bytes.saturating_mul(2),
            max_entries: config.rate_table_size,
        },
        // A deadline is rounded up to the tick: this is how late a COUNTDOWN may be before
        // the timerfd (`wake.rs`) wakes the loop. 100 us rather than 250 trades some loop CPU
        // at tens of thousands of COUNTDOWNs a second for a lower lateness (measured in
        // docs/PERFORMANCE.md).
        timer_tick: Duration::from_micros(100),
        party: PartyConfig {
            min_players: config.min_players,
            countdown: config.countdown,
            countdown_tick: config.countdown_tick,
            auto_start: config.auto_start,
            max_violations: config.max_violations,
            spawns: config.spawns.clone(),
            linger: config.game_start_linger,
            handshake_timeout: config.handshake_timeout,
            ..PartyConfig::default()
        },
        instance_exec: config.instance_exec.command.is_some(),
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
    addrs: Bound,
}

/// Where each listener was bound (`None`: disabled).
#[derive(Clone, Copy, Debug)]
struct Bound {
    udp_lobby: Option<SocketAddr>,
    tcp_lobby: Option<SocketAddr>,
    metrics: Option<SocketAddr>,
    wz: Option<SocketAddr>,
    general: Option<SocketAddr>,
    general_ws: Option<SocketAddr>,
}

impl Bound {
    /// The bound sockets as the status page lists them, the instance port range among them.
    fn listeners(&self, config: &Config) -> Vec<ListenerView> {
        let instances = match config.instance_ports {
            InstancePorts::Range { lo, hi } => format!("{}:{lo}-{hi}", config.bind),
            InstancePorts::Ephemeral => format!("{}, ports chosen by the OS", config.bind),
        };
        let view = |name, transport, addr: Option<SocketAddr>| {
            addr.map(|addr| ListenerView {
                name,
                transport,
                address: addr.to_string(),
            })
        };
        [
            view("UDP room lobby", "udp", self.udp_lobby),
            self.udp_lobby.map(|_| ListenerView {
                name: "game instances",
                transport: "udp",
                address: instances,
            }),
            view("TCP lobby", "tcp", self.tcp_lobby),
            view("Warzone master server", "tcp", self.wz),
            view("general lobby", "tcp", self.general),
            view("general lobby WebSocket (/lobby)", "tcp", self.general_ws),
            view("metrics and status page", "tcp", self.metrics),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// Names the listener and address in a bind error, so the operator sees which flag to change
/// (`tcp lobby 127.0.0.1:4242: Address already in use`).
fn bind_error(what: &str, addr: SocketAddr) -> impl FnOnce(std::io::Error) -> std::io::Error + '_ {
    move |e| std::io::Error::new(e.kind(), format!("{what} {addr}: {e}"))
}

/// Connections the kernel may hold for a listener until they are accepted (the `listen`
/// backlog; Linux caps it at `net.core.somaxconn`). mio and std ask for 128, which a
/// connection flood fills between two accept batches (`net::io::pass`); the kernel then drops
/// SYNs, a well-behaved client's too, and that client retries only a second later.
pub const LISTEN_BACKLOG: i32 = 1024;

/// Binds a TCP listener at `addr` (non-blocking, close-on-exec, `SO_REUSEADDR` as mio sets
/// it, a [`LISTEN_BACKLOG`] backlog; `SO_REUSEPORT` when `reuse_port`, so the processes of
/// one user share it) and returns it with its bound address.
fn listen(
    what: &str,
    addr: SocketAddr,
    reuse_port: bool,
) -> std::io::Result<(TcpListener, SocketAddr)> {
    let bind = || -> std::io::Result<std::net::TcpListener> {
        let domain = socket2::Domain::for_address(addr);
        let socket = socket2::Socket::new(domain, socket2::Type::STREAM, None)?;
        socket.set_reuse_address(true)?;
        if reuse_port {
            socket.set_reuse_port(true)?;
        }
        socket.set_nonblocking(true)?;
        socket.bind(&addr.into())?;
        socket.listen(LISTEN_BACKLOG)?;
        Ok(socket.into())
    };
    let listener = TcpListener::from_std(bind().map_err(bind_error(what, addr))?);
    let bound = listener.local_addr()?;
    log::info!("{what} listening on {bound}");
    Ok((listener, bound))
}

/// Binds the UDP room lobby's socket at `addr` (non-blocking; `SO_REUSEPORT` when
/// `reuse_port`: the kernel then spreads datagrams over the processes sharing the port by
/// their source, and each process answers what it receives).
fn bind_udp(addr: SocketAddr, reuse_port: bool) -> std::io::Result<UdpSocket> {
    let domain = socket2::Domain::for_address(addr);
    let socket = socket2::Socket::new(domain, socket2::Type::DGRAM, None)?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    Ok(UdpSocket::from_std(socket.into()))
}

/// Binds every listener and socket of `config`, here and nowhere else, and plugs each front
/// end into the loop.
fn build(config: &Config) -> std::io::Result<Built> {
    // Read the Warzone files first: a wrong path stops the start before anything binds.
    let wz_config = wz::core_config(&config.wz)?;
    let logins = [
        (config.wz.port.is_some(), config.wz.login),
        (config.general.port.is_some(), config.general.core.login),
    ];
    if logins
        .iter()
        .any(|&(serving, login)| serving && login != LoginPolicy::Off)
    {
        check_database(&config.wz.db).map_err(std::io::Error::other)?;
    }
    // Before the password worker starts: growing the table later, with two threads, waits
    // for an RCU grace period inside the loop's `accept` (`net::fd_table`).
    if let Some(size) = fd_table::reserve(fd_table::descriptors_needed(config)) {
        log::debug!("descriptor table reserved for {size} descriptors");
    }
    io::closer::start();
    let poll = Poll::new()?;
    let waker = Arc::new(server::waker(&poll)?);
    let (control, receiver) = mpsc::channel();
    let mut server = Server::new(poll, receiver)?;

    let udp_socket = match config.udp_port {
        Some(port) => {
            let addr = SocketAddr::new(config.bind, port);
            let socket = bind_udp(addr, config.directory.reuse_port)
                .map_err(bind_error("udp room lobby", addr))?;
            log::info!("udp room lobby listening on {}", socket.local_addr()?);
            Some(socket)
        }
        None => {
            log::info!("udp room lobby disabled (--udp-port 0)");
            None
        }
    };
    let udp_lobby = udp_socket.as_ref().map(UdpSocket::local_addr).transpose()?;
    let tcp_listener = match config.tcp_port {
        Some(port) => Some(listen(
            "tcp lobby",
            SocketAddr::new(config.bind, port),
            config.directory.reuse_port,
        )?),
        None => {
            log::info!("tcp lobby disabled (--tcp-port 0)");
            None
        }
    };
    let tcp_lobby = tcp_listener.as_ref().map(|(_, bound)| *bound);
    let metrics_listener = match config.metrics {
        Some(addr) => Some(listen("metrics endpoint", addr, false)?),
        None => None,
    };
    let metrics = metrics_listener.as_ref().map(|(_, bound)| *bound);
    let wz_listener = match config.wz.port {
        Some(port) => Some(listen(
            "warzone master server",
            SocketAddr::new(config.bind, port),
            config.directory.reuse_port,
        )?),
        None => {
            log::info!("warzone master server disabled (--wz-port 0)");
            None
        }
    };
    let wz = wz_listener.as_ref().map(|(_, bound)| *bound);
    let general_listener = match config.general.port {
        Some(port) => Some(listen(
            "general lobby",
            SocketAddr::new(config.bind, port),
            false,
        )?),
        None => {
            log::info!("general lobby disabled (--lobby-port 0)");
            None
        }
    };
    let general = general_listener.as_ref().map(|(_, bound)| *bound);
    // The WebSocket port is a second way into the general lobby: served with it.
    let general_ws_listener = match (config.general.port, config.lobby_ws.port) {
        (Some(_), Some(port)) => Some(listen(
            "general lobby websocket",
            SocketAddr::new(config.bind, port),
            false,
        )?),
        (None, Some(_)) => {
            log::info!("general lobby websocket disabled with the general lobby");
            None
        }
        (_, None) => {
            log::info!("general lobby websocket disabled (--lobby-ws-port 0)");
            None
        }
    };
    let general_ws = general_ws_listener.as_ref().map(|(_, bound)| *bound);

    let registry = server.registry();
    let ports = PortPool::new(port_range(config.instance_ports));
    let udp = UdpLobby::new(
        udp_socket,
        registry,
        ports,
        config.bind,
        config.rtype_udp_records,
    )?;
    let tcp = match tcp_listener {
        Some((listener, _)) => Some(TcpLobby::new(listener, registry, tcp_limits(config))?),
        None => None,
    };
    let lobby = RtypeCore::new(
        lobby_config(config),
        Instant::now(),
        rtype::random::OsRandom::hash_source(),
    );
    let mut rtype = RtypeFrontEnd::new(lobby, udp, tcp);
    if let Some(command) = &config.instance_exec.command {
        log::info!("each room runs its own game server: {command}");
        let ports = PortPool::new(port_range(config.instance_ports));
        let grace = config.instance_exec.stop_grace;
        let servers = GameServers::new(command.clone(), grace, ports, config.bind);
        rtype = rtype.with_game_servers(servers);
    }
    let mut games_link = None;
    if let (Some(node), Some(addr)) = (config.directory.node_id, &config.directory.directory) {
        let mut bridge = DirectoryBridge::start(node, addr.clone(), Arc::clone(&waker))?;
        if wz_listener.is_some() {
            games_link = bridge.games_link();
        }
        rtype.set_directory(bridge);
    }
    // One bound on password checks for every front end (`net::login`).
    let login = LoginShared {
        waker: Arc::clone(&waker),
        budget: LoginBudget::new(),
    };
    let wz_driver = match wz_listener {
        Some((listener, _)) => {
            let login = login.clone();
            let mut driver = WzDriver::new(listener, registry, &config.wz, wz_config, login)?;
            if let Some(link) = games_link {
                driver.set_directory(DirectoryGames::new(link));
            }
            Some(driver)
        }
        None => None,
    };
    let general_driver = match general_listener {
        Some((listener, _)) => {
            let db = &config.wz.db;
            let ws = match general_ws_listener {
                Some((listener, _)) => Some(WsPort::new(
                    listener,
                    registry,
                    &config.lobby_ws,
                    config.general.core.sign_in_timeout,
                )?),
                None => None,
            };
            Some(GeneralDriver::new(
                listener,
                registry,
                &config.general,
                db,
                login,
                ws,
            )?)
        }
        None => None,
    };
    server.serve(FrontEndKind::Rtype, Box::new(rtype));
    if let Some(driver) = wz_driver {
        server.serve(FrontEndKind::Wz, Box::new(driver));
    }
    if let Some(driver) = general_driver {
        server.serve(FrontEndKind::General, Box::new(driver));
    }
    if let Some((listener, _)) = metrics_listener {
        server.serve_metrics(listener, metrics_limits(config))?;
    }
    let addrs = Bound {
        udp_lobby,
        tcp_lobby,
        metrics,
        wz,
        general,
        general_ws,
    };
    server.set_listeners(addrs.listeners(config));
    Ok(Built {
        server,
        waker,
        control,
        addrs,
    })
}

/// The TCP lobby listener's limits from the command line.
fn tcp_limits(config: &Config) -> TcpLimits {
    TcpLimits {
        max_conns: config.max_conns,
        max_conns_per_ip: config.max_conns_per_ip,
        conn_rate: config.conn_rate,
        rate_table_size: config.rate_table_size,
        public_host: config.public_host,
        memory_budget: config.tcp_memory_budget,
    }
}

/// The metrics endpoint's admission limits from the command line.
fn metrics_limits(config: &Config) -> http::MetricsLimits {
    http::MetricsLimits {
        max_conns_per_ip: config.metrics_max_conns_per_ip,
        conn_rate: config.metrics_conn_rate,
        rate_table_size: config.rate_table_size,
    }
}

/// Binds every socket of `config` and serves in the calling thread until shut down.
pub fn run(config: &Config) -> std::io::Result<()> {
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
    addrs: Bound,
    waker: Arc<Waker>,
    control: Sender<Control>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

/// Binds every socket of `config` in this thread, then serves in a new one.
pub fn spawn(config: &Config) -> std::io::Result<ServerHandle> {
    let Built {
        mut server,
        waker,
        control,
        addrs,
    } = build(config)?;
    let thread = std::thread::Builder::new()
        .name("lobbyd".into())
        .spawn(move || server.run())?;
    Ok(ServerHandle {
        addrs,
        waker,
        control,
        thread: Some(thread),
    })
}

impl ServerHandle {
    /// The UDP room lobby's bound address, if enabled.
    pub fn udp_lobby_addr(&self) -> Option<SocketAddr> {
        self.addrs.udp_lobby
    }

    /// The TCP lobby listener's bound address, if enabled.
    pub fn tcp_lobby_addr(&self) -> Option<SocketAddr> {
        self.addrs.tcp_lobby
    }

    /// The metrics endpoint's bound address, if enabled.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.addrs.metrics
    }

    /// The Warzone master server's bound address, if enabled.
    pub fn wz_addr(&self) -> Option<SocketAddr> {
        self.addrs.wz
    }

    /// The general lobby's bound address, if enabled.
    pub fn general_addr(&self) -> Option<SocketAddr> {
        self.addrs.general
    }

    /// The general lobby's WebSocket port's bound address, if enabled.
    pub fn general_ws_addr(&self) -> Option<SocketAddr> {
        self.addrs.general_ws
    }

    /// The counters and rooms, as the loop sees them between two events, with the names of
    /// as many parties and members as the status page shows
    /// ([`crate::metrics::STATUS_ROWS`]).
    pub fn snapshot(&self) -> std::io::Result<Snapshot> {
        let (reply, receiver) = mpsc::channel();
        self.send(Control::Snapshot(reply))?;
        receiver
            .recv_timeout(Duration::from_secs(10))
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::TimedOut, e))
    }

    /// Stops the loop and waits for its thread.
    pub fn shutdown(mut self) -> std::io::Result<()> {
        self.stop()
    }

    fn send(&self, control: Control) -> std::io::Result<()> {
        self.control.send(control).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "server loop has stopped")
        })?;
        self.waker.wake()
    }

    fn stop(&mut self) -> std::io::Result<()> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        // The loop may already have stopped on an error; joining reports it.
        let _ = self.send(Control::Shutdown);
        thread
            .join()
            .map_err(|_| std::io::Error::other("server thread panicked"))?
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            log::error!("server stopped with an error: {e}");
        }
    }
}
