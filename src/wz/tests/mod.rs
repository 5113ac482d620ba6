//! Scenario tests for [`super::WzLobby`], sans-IO, in quinn-proto's shape: the driver
//! stand-in [`Harness`] and the host-side byte builders here, the legacy protocol's scenarios
//! and properties in [`legacy`], the v4 protocol's in [`v4`].

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use super::{ConnId, ProbeId, ProbeResult, WzConfig, WzLobby, WzOutput};
use crate::accounts::tokens::{counting_tokens, TokenSource};
use crate::wire::wz::{c_string, parse_game_id, parse_status, GameStructRepr, GAMESTRUCT_LEN};

mod legacy;
mod v4;

const HOST_V4: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));

fn addr(ip: IpAddr) -> SocketAddr {
    SocketAddr::new(ip, 40000)
}

/// A GAMESTRUCT as the given client generation's host fills it (notes 1.3 and 4).
fn host_struct(generation: &str, name: &str, game_id: u32, host_port: u16) -> [u8; GAMESTRUCT_LEN] {
    let (version, major, minor, vstring) = match generation {
        "2.3.7" => (3, 2, 98, "2.3.7"),
        "3.x" => (3, 0x1000, 0, "3.2.3"),
        _ => (4, 0x4000, 0x4f, "4.3.3"),
    };
    let mut repr = GameStructRepr::zeroed(version);
    repr.name = c_string(name.as_bytes());
    repr.dw_size = 72;
    repr.max_players = 4;
    repr.current_players = 1;
    repr.extra = c_string(b"Extra");
    repr.host_port = if version == 4 { host_port } else { 0 };
    repr.map_name = c_string(b"Rush");
    repr.host_name = c_string(b"player");
    repr.version_string = c_string(vstring.as_bytes());
    repr.game_version_major = major;
    repr.game_version_minor = minor;
    repr.game_id = game_id;
    // A host that leaves garbage after the terminator: the lobby must not relay it.
    repr.mod_list[200] = b'x';
    repr.to_bytes()
}

fn addg(gs: &[u8; GAMESTRUCT_LEN]) -> Vec<u8> {
    let mut bytes = b"addg\0".to_vec();
    bytes.extend_from_slice(gs);
    bytes
}

/// A driver stand-in: per-connection read buffers, a virtual clock. Tests name a
/// connection by its driver key (a small number); the stand-in wraps it in a [`ConnId`]
/// where it talks to the core, as the driver does.
struct Harness {
    lobby: WzLobby,
    now: Instant,
    bufs: HashMap<usize, Vec<u8>>,
    /// What the core may leave unconsumed: less than one GAMESTRUCT for legacy
    /// connections; v4 tests raise it to one frame.
    max_left: usize,
}

impl Harness {
    fn new(config: WzConfig) -> Harness {
        Harness::with_session_ids(config, counting_tokens())
    }

    fn with_session_ids(config: WzConfig, session_ids: TokenSource) -> Harness {
        let now = Instant::now();
        Harness {
            lobby: WzLobby::new(config, now, session_ids),
            now,
            bufs: HashMap::new(),
            max_left: GAMESTRUCT_LEN,
        }
    }

    fn open(&mut self, conn: usize, ip: IpAddr) {
        self.lobby.handle_open(self.now, ConnId(conn), addr(ip));
        self.bufs.insert(conn, Vec::new());
    }

    fn send(&mut self, conn: usize, bytes: &[u8]) {
        let buf = self.bufs.entry(conn).or_default();
        buf.extend_from_slice(bytes);
        // As the driver does: call again while the core consumes.
        loop {
            let used = self.lobby.handle_bytes(self.now, ConnId(conn), buf);
            assert!(used <= buf.len());
            buf.drain(..used);
            if used == 0 || buf.is_empty() {
                break;
            }
        }
        assert!(buf.len() < self.max_left, "core left {} bytes", buf.len());
    }

    fn close(&mut self, conn: usize) {
        self.lobby.handle_closed(self.now, ConnId(conn));
        self.bufs.remove(&conn);
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        self.lobby.handle_timeout(self.now);
    }

    fn out(&mut self) -> Vec<WzOutput> {
        std::iter::from_fn(|| self.lobby.poll_output()).collect()
    }

    /// Everything sent to `conn` in `outputs`, concatenated.
    fn sent(outputs: &[WzOutput], conn: usize) -> Vec<u8> {
        let mut bytes = Vec::new();
        for output in outputs {
            if let WzOutput::Send { conn: c, bytes: b } = output {
                if *c == ConnId(conn) {
                    bytes.extend_from_slice(b);
                }
            }
        }
        bytes
    }

    fn closed(outputs: &[WzOutput], conn: usize) -> bool {
        outputs
            .iter()
            .any(|o| matches!(o, WzOutput::Close { conn: c } if *c == ConnId(conn)))
    }

    fn probe(outputs: &[WzOutput]) -> Option<(ProbeId, SocketAddr, bool)> {
        outputs.iter().find_map(|o| match o {
            WzOutput::Probe {
                probe,
                addr,
                send_wzlr,
            } => Some((*probe, *addr, *send_wzlr)),
            _ => None,
        })
    }

    fn gaid(&mut self, conn: usize) -> u32 {
        self.send(conn, b"gaId\0");
        let out = self.out();
        assert!(!Harness::closed(&out, conn));
        parse_game_id(&Harness::sent(&out, conn)).unwrap()
    }

    /// Register a game on an open connection, answering the probe with `result`; returns
    /// the status the host read.
    fn register(
        &mut self,
        conn: usize,
        gs: &[u8; GAMESTRUCT_LEN],
        result: ProbeResult,
    ) -> (u32, Vec<u8>, bool) {
        self.send(conn, &addg(gs));
        let mut out = self.out();
        if let Some((probe, _, _)) = Harness::probe(&out) {
            assert!(
                Harness::sent(&out, conn).is_empty(),
                "status before the probe"
            );
            self.now += Duration::from_millis(5);
            self.lobby.handle_probe_result(self.now, probe, result);
            out = self.out();
        }
        let sent = Harness::sent(&out, conn);
        let (code, motd, used) = parse_status(&sent).unwrap();
        assert_eq!(used, sent.len());
        (code, motd.to_vec(), Harness::closed(&out, conn))
    }

    fn list(&mut self, conn: usize) -> Vec<u8> {
        self.open(conn, IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9)));
        self.send(conn, b"list\0");
        let out = self.out();
        assert!(Harness::closed(&out, conn));
        self.close(conn);
        Harness::sent(&out, conn)
    }
}

fn motd_config() -> WzConfig {
    WzConfig {
        motd: "hello".to_owned(),
        ..WzConfig::default()
    }
}
