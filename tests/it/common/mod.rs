//! Shared helpers of the integration tests: an in-process server on loopback port 0 and
//! small raw-socket clients that speak bytes.
#![allow(dead_code)]

pub mod core_fixture;
pub mod tcp_client;

use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use lobbyd::accounts::store::AccountStore;
use lobbyd::config::{Config, GeneralSettings, InstancePorts, WsSettings, WzSettings};
use lobbyd::metrics::Snapshot;
use lobbyd::net::{self, ServerHandle};

/// Flags that make the `lobbyd` binary serve on loopback with OS-chosen UDP/TCP lobby and
/// instance ports, without the general lobby and its WebSocket port (their default ports
/// would collide between tests; the Warzone port is the caller's: `--wz-port 0` disables it).
pub const LOOPBACK_ARGS: [&str; 10] = [
    "--bind",
    "127.0.0.1",
    "--port",
    "0",
    "--instance-ports",
    "0",
    "--lobby-port",
    "0",
    "--lobby-ws-port",
    "0",
];

/// How long a test waits for a reply that must come.
pub const REPLY_WAIT: Duration = Duration::from_secs(5);
/// How long a test waits to be confident no reply comes.
pub const SILENCE_WAIT: Duration = Duration::from_millis(300);

/// A configuration for tests: loopback, OS-chosen ports everywhere.
pub fn test_config() -> Config {
    Config {
        bind: "127.0.0.1".parse().unwrap(),
        udp_port: Some(0),
        tcp_port: None,
        instance_ports: InstancePorts::Ephemeral,
        wz: WzSettings {
            port: None,
            ..WzSettings::default()
        },
        general: GeneralSettings {
            port: None,
            ..GeneralSettings::default()
        },
        lobby_ws: WsSettings {
            port: None,
            ..WsSettings::default()
        },
        ..Config::default()
    }
}

/// Starts a server with `config`.
pub fn start(config: Config) -> ServerHandle {
    let _ = env_logger::builder().is_test(true).try_init();
    net::spawn(&config).expect("server starts")
}

/// A snapshot of the server's counters.
pub fn snapshot(server: &ServerHandle) -> Snapshot {
    server.snapshot().expect("snapshot")
}

/// A UDP client bound on a loopback address.
pub struct UdpClient {
    pub socket: UdpSocket,
}

impl UdpClient {
    /// A client on 127.0.0.1.
    pub fn new() -> UdpClient {
        UdpClient::on("127.0.0.1")
    }

    /// A client on another loopback address (its own rate-limit bucket and seat reservations).
    pub fn on(ip: &str) -> UdpClient {
        let socket = UdpSocket::bind((ip, 0)).expect("bind client");
        UdpClient { socket }
    }

    /// The client's address.
    pub fn addr(&self) -> SocketAddr {
        self.socket.local_addr().unwrap()
    }

    /// Sends raw bytes.
    pub fn send(&self, to: SocketAddr, bytes: &[u8]) {
        self.socket.send_to(bytes, to).expect("send");
    }

    /// The next datagram within `wait`, with its source.
    pub fn recv_within(&self, wait: Duration) -> Option<(Vec<u8>, SocketAddr)> {
        let mut buf = vec![0u8; 65536];
        // A zero timeout means "block forever" to the OS: wait at least a millisecond.
        let wait = wait.max(Duration::from_millis(1));
        self.socket.set_read_timeout(Some(wait)).unwrap();
        match self.socket.recv_from(&mut buf) {
            Ok((n, from)) => Some((buf[..n].to_vec(), from)),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                None
            }
            Err(e) => panic!("recv: {e}"),
        }
    }

    /// The next datagram; panics if none comes within [`REPLY_WAIT`].
    pub fn recv(&self) -> Vec<u8> {
        self.recv_within(REPLY_WAIT).expect("a reply").0
    }

    /// Asserts nothing arrives within [`SILENCE_WAIT`].
    pub fn assert_silent(&self) {
        if let Some((bytes, from)) = self.recv_within(SILENCE_WAIT) {
            panic!("unexpected datagram from {from}: {bytes:02x?}");
        }
    }
}

/// Builds a datagram with the R-Type framing, the CRC computed over what precedes it.
pub fn frame(packet_type: u8, message_type: u8, seq: u16, payload: &[u8]) -> Vec<u8> {
    frame_with_sizes(
        packet_type,
        message_type,
        seq,
        payload.len() as u16,
        payload.len() as u16,
        payload,
    )
}

/// Like [`frame`], with header sizes chosen by the caller (to build malformed datagrams).
pub fn frame_with_sizes(
    packet_type: u8,
    message_type: u8,
    seq: u16,
    payload_size: u16,
    original_size: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut out = vec![packet_type, message_type];
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&payload_size.to_be_bytes());
    out.extend_from_slice(&original_size.to_be_bytes());
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// A TCP connection to `addr` from the loopback source address `source` (127.0.0.x: std
/// cannot bind before connecting).
pub fn connect_from(addr: SocketAddr, source: &str) -> TcpStream {
    let source: IpAddr = source.parse().expect("source address");
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    socket
        .bind(&SocketAddr::new(source, 0).into())
        .expect("bind the source address");
    socket
        .connect_timeout(&addr.into(), REPLY_WAIT)
        .expect("connect");
    socket.into()
}

/// Polls `cond` on fresh snapshots until it holds or `wait` passes.
pub fn eventually(
    server: &ServerHandle,
    wait: Duration,
    cond: impl Fn(&Snapshot) -> bool,
) -> Snapshot {
    let deadline = Instant::now() + wait;
    loop {
        let snap = snapshot(server);
        if cond(&snap) || Instant::now() >= deadline {
            return snap;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A fresh account database path, removed when dropped.
pub struct TempDb(pub std::path::PathBuf);

impl TempDb {
    /// A database holding `users` (name, password); returns it with their account ids.
    pub fn with_users(tag: &str, users: &[(&str, &str)]) -> (TempDb, Vec<i64>) {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let db = TempDb(std::env::temp_dir().join(format!(
            "lobbyd-{tag}-{}-{nanos}.sqlite",
            std::process::id()
        )));
        let store = AccountStore::open(&db.0).expect("open db");
        let ids = users
            .iter()
            .map(|(name, pw)| store.add_user(name, pw).expect("add user").0)
            .collect();
        (db, ids)
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
