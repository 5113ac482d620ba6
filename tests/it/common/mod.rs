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
        let deadline = Instant::now() + wait;
        loop {
            // A zero timeout means "block forever" to the OS: wait at least a millisecond.
            let left = deadline.saturating_duration_since(Instant::now());
            let left = left.max(Duration::from_millis(1));
            self.socket.set_read_timeout(Some(left)).unwrap();
            match self.socket.recv_from(&mut buf) {
                Ok((n, from)) => return Some((buf[..n].to_vec(), from)),
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    return None
                }
                // A signal, or the process stopped and continued: a receive with a timeout
                // is not restarted by the kernel.
                Err(e)
                    if e.kind() == std::io::ErrorKind::Interrupted && Instant::now() < deadline => {
                }
                Err(e) => panic!("recv: {e}"),
            }
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

/// A loopback port free for TCP and UDP, for a listener that must be given a number
/// (`--wz-port 0` and `--lobby-port 0` turn those listeners off; an instance port range).
/// A port the OS chose for `bind(0)` and that was let go can be chosen again by the next
/// `bind(0)` or outgoing connection of a test running beside this one before the server
/// binds it; so these come from below the kernel's ephemeral range, which it never hands out
/// by itself, one after another from a starting point of this process's own (the test
/// binaries run at the same time).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const LOW: u32 = 20_000;
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768)
        .min(65_536);
    let span = ephemeral.saturating_sub(LOW);
    let bindable = |port: u16| {
        let tcp = std::net::TcpListener::bind(("127.0.0.1", port));
        tcp.is_ok() && UdpSocket::bind(("127.0.0.1", port)).is_ok()
    };
    if span < 1_000 {
        // An ephemeral range reaching this low leaves nothing to keep apart: the OS chooses.
        let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
        return socket.local_addr().expect("address").port();
    }
    let start = std::process::id().wrapping_mul(2_654_435_761) % span;
    for _ in 0..span {
        let port = (LOW + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span) as u16;
        if bindable(port) {
            return port;
        }
    }
    panic!("no free loopback port in {LOW}..{ephemeral}");
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

/// True if the program `tool` runs (`tool --version`); where it is missing, false after a
/// SKIPPED line naming `test`, except under `CI=true` (where `.ci/run` installs it), where
/// its absence fails the test.
pub fn tool_installed(tool: &str, test: &str) -> bool {
    let installed = std::process::Command::new(tool)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{tool} is not installed (CI installs it: .ci/run)"
        );
        eprintln!("SKIPPED {test}: {tool} is not installed");
    }
    installed
}
