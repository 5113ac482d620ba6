//! The Warzone 2100 master server over real loopback sockets, asserting on the bytes.
//!
//! Hosts and browsers here behave as the real 2.3.7, 3.x and 4.x games do
//! (docs/protocols/wz-lobby.md; notes `wz2100-lobby-wire.md` sections 1.5, 1.6 and 4).
//! GAMESTRUCTs are built and list replies read with this file's own offsets, not lobbyd's
//! wire module, so an emitter bug cannot hide behind a matching parser. Legacy hosts
//! connect from their own 127.0.0.x address so that a v3 game's fixed probe port 2100 can
//! be served (or left closed) per test without two tests sharing it.

use crate::common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use common::*;
use lobbyd::config::WzSettings;
use lobbyd::metrics::{Snapshot, WzSnapshot};
use lobbyd::net::ServerHandle;

const GAMESTRUCT_LEN: usize = 814;
const MOTD: &str = "Welcome to the test lobby";

/// A server with the Warzone listener on an OS-chosen loopback port.
fn start_wz(tweak: impl FnOnce(&mut WzSettings)) -> ServerHandle {
    let mut config = test_config();
    config.udp_port = None;
    config.wz = WzSettings {
        port: Some(0),
        motd: Some(MOTD.to_owned()),
        probe_timeout: Duration::from_millis(1500),
        ..WzSettings::default()
    };
    tweak(&mut config.wz);
    start(config)
}

fn wz_addr(server: &ServerHandle) -> SocketAddr {
    server.wz_addr().expect("warzone listener enabled")
}

fn wz(snap: &Snapshot) -> &WzSnapshot {
    snap.wz.as_ref().expect("warzone snapshot")
}

/// The value of one counter among the snapshot's extra counters.
fn counter(snap: &Snapshot, name: &str, label: &str) -> u64 {
    snap.counters
        .iter()
        .find(|(n, l, _)| *n == name && *l == label)
        .map(|(_, _, v)| *v)
        .unwrap_or_else(|| panic!("no counter {name}{{{label}}}"))
}

/// A TCP connection to the lobby from the loopback source address `ip`.
pub(crate) fn connect_from(lobby: SocketAddr, ip: &str) -> TcpStream {
    let stream = common::connect_from(lobby, ip);
    stream.set_read_timeout(Some(REPLY_WAIT)).unwrap();
    stream.set_nodelay(true).unwrap();
    stream
}

fn read_exact(stream: &mut TcpStream, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    stream.read_exact(&mut buf).expect("read");
    buf
}

fn read_u32(stream: &mut TcpStream) -> u32 {
    let b = read_exact(stream, 4);
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Reads a status reply: u32 code, u32 length, MOTD.
fn read_status(stream: &mut TcpStream) -> (u32, String) {
    let code = read_u32(stream);
    let len = read_u32(stream) as usize;
    assert!(len <= 1024, "MOTD length {len}");
    let motd = read_exact(stream, len);
    (code, String::from_utf8(motd).expect("UTF-8 MOTD"))
}

/// Asserts the lobby sends nothing for a while (and keeps the connection open).
fn assert_silent(stream: &mut TcpStream) {
    stream.set_read_timeout(Some(SILENCE_WAIT)).unwrap();
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("expected silence, got {other:?} {byte:?}"),
    }
    stream.set_read_timeout(Some(REPLY_WAIT)).unwrap();
}

/// Asserts the lobby closed the connection (EOF, or a reset).
fn assert_closed(stream: &mut TcpStream) {
    let mut rest = Vec::new();
    match stream.read_to_end(&mut rest) {
        Ok(_) => assert!(
            rest.is_empty(),
            "unexpected bytes before close: {rest:02x?}"
        ),
        Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}"),
    }
}

/// A GAMESTRUCT as a host of `generation` ("2.3.7", "3.x", "4.x") fills it (notes 1.3, 4).
pub(crate) struct Host {
    generation: &'static str,
    name: String,
    players: i32,
    host_port: u16,
    game_id: u32,
}

impl Host {
    pub(crate) fn new(generation: &'static str, name: &str) -> Host {
        Host {
            generation,
            name: name.to_owned(),
            players: 1,
            host_port: 0,
            game_id: 0,
        }
    }

    fn gamestruct(&self) -> Vec<u8> {
        let (version, major, minor, vstring) = match self.generation {
            "2.3.7" => (3u32, 2u32, 98u32, "2.3.7"),
            "3.x" => (3, 0x1000, 0, "3.2.3"),
            _ => (4, 0x4000, 0x4f, "4.3.3"),
        };
        let mut gs = vec![0u8; GAMESTRUCT_LEN];
        let put = |gs: &mut Vec<u8>, at: usize, text: &str| {
            gs[at..at + text.len()].copy_from_slice(text.as_bytes());
        };
        let put_u32 = |gs: &mut Vec<u8>, at: usize, v: u32| {
            gs[at..at + 4].copy_from_slice(&v.to_be_bytes());
        };
        put_u32(&mut gs, 0, version);
        put(&mut gs, 4, &self.name);
        put_u32(&mut gs, 68, 72); // dwSize
        put_u32(&mut gs, 116, 4); // max players
        put_u32(&mut gs, 120, self.players as u32);
        put(&mut gs, 220, "Extra");
        if version == 4 {
            gs[377..379].copy_from_slice(&self.host_port.to_be_bytes());
        }
        put(&mut gs, 379, "Rush");
        put(&mut gs, 419, "hostplayer");
        put(&mut gs, 459, vstring);
        put_u32(&mut gs, 778, major);
        put_u32(&mut gs, 782, minor);
        put_u32(&mut gs, 798, self.game_id);
        if self.generation == "2.3.7" {
            put_u32(&mut gs, 802, 0xBAD02);
            put_u32(&mut gs, 806, 0xBAD03);
            put_u32(&mut gs, 810, 0xBAD04);
        } else {
            put_u32(&mut gs, 806, 0x6c696e); // "lin"
            put_u32(&mut gs, 810, (major << 16) | minor);
        }
        gs
    }

    /// `gaId`, then `addg` + GAMESTRUCT; returns the lobby's id and the status read.
    pub(crate) fn register(&mut self, stream: &mut TcpStream) -> (u32, (u32, String)) {
        stream.write_all(b"gaId\0").unwrap();
        self.game_id = read_u32(stream);
        assert_ne!(self.game_id, 0);
        let mut bytes = b"addg\0".to_vec();
        bytes.extend_from_slice(&self.gamestruct());
        stream.write_all(&bytes).unwrap();
        (self.game_id, read_status(stream))
    }
}

/// One listed game as a client reads it from the GAMESTRUCT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub(crate) name: String,
    pub(crate) host: String,
    dw_size: i32,
    players: i32,
    host_port: u16,
    game_id: u32,
}

fn c_str(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn listed(gs: &[u8]) -> Listed {
    assert_eq!(gs.len(), GAMESTRUCT_LEN);
    Listed {
        name: c_str(&gs[4..68]),
        host: c_str(&gs[76..116]),
        dw_size: be32(gs, 68) as i32,
        players: be32(gs, 120) as i32,
        host_port: u16::from_be_bytes([gs[377], gs[378]]),
        game_id: be32(gs, 798),
    }
}

/// Sends `list\0` and reads the whole reply (the lobby closes after it).
pub(crate) fn list_bytes(lobby: SocketAddr, command: &[u8]) -> Vec<u8> {
    let mut stream = connect_from(lobby, "127.0.0.1");
    stream.write_all(command).unwrap();
    let mut reply = Vec::new();
    stream
        .read_to_end(&mut reply)
        .expect("list reply then close");
    reply
}

/// A cursor that panics on a short reply, as a client's failed read would end its listing.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        assert!(self.pos + n <= self.buf.len(), "reply too short");
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        out
    }
    fn u32(&mut self) -> u32 {
        be32(self.take(4), 0)
    }
    fn games(&mut self, n: usize) -> Vec<Listed> {
        (0..n).map(|_| listed(self.take(GAMESTRUCT_LEN))).collect()
    }
    fn status(&mut self) -> (u32, String) {
        let code = self.u32();
        let len = self.u32() as usize;
        (code, c_str(self.take(len)))
    }
    fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }
}

/// 2.3.7 `NETfindGame`: u32 count, then min(count, 12) GAMESTRUCTs, nothing else read.
fn read_as_237(reply: &[u8]) -> Vec<Listed> {
    let mut r = Reader { buf: reply, pos: 0 };
    let count = r.u32() as usize;
    r.games(count.min(12))
}

/// 3.x: u32 count, min(count, 11) GAMESTRUCTs, then a status.
fn read_as_3x(reply: &[u8]) -> (Vec<Listed>, (u32, String)) {
    let mut r = Reader { buf: reply, pos: 0 };
    let count = r.u32() as usize;
    let games = r.games(count.min(11));
    (games, r.status())
}

/// 4.x `NETenumerateGames`: count + GAMESTRUCTs, a mandatory status, an optional flags
/// word and second batch (replacing the first when IGNORE_FIRST_BATCH = 1 is set); games
/// with dwSize 0 are skipped.
pub(crate) fn read_as_4x(reply: &[u8]) -> (Vec<Listed>, (u32, String)) {
    let mut r = Reader { buf: reply, pos: 0 };
    let count = r.u32() as usize;
    let mut games = r.games(count);
    let status = r.status();
    if !r.at_end() {
        let flags = r.u32();
        let second_count = r.u32() as usize;
        let second = r.games(second_count);
        if flags & 1 != 0 {
            games = second;
        } else {
            games.extend(second);
        }
    }
    assert!(r.at_end(), "bytes after the list reply");
    games.retain(|g| g.dw_size != 0);
    (games, status)
}

/// A game port on `ip:port` that accepts connections (and, if `wzlr` is given, answers the
/// 8-zero-byte probe with `WZLR` + 1 + that id); returns the requests it saw when joined.
struct GamePort {
    addr: SocketAddr,
    thread: JoinHandle<Vec<Vec<u8>>>,
}

impl GamePort {
    fn open(ip: &str, port: u16, answers: usize, wzlr: Option<u32>) -> GamePort {
        let listener = TcpListener::bind((ip, port)).expect("bind game port");
        let addr = listener.local_addr().unwrap();
        let thread = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for _ in 0..answers {
                let (mut stream, _) = listener.accept().expect("probe connects");
                stream.set_read_timeout(Some(REPLY_WAIT)).unwrap();
                let mut request = vec![0u8; 8];
                match wzlr {
                    Some(id) => {
                        stream.read_exact(&mut request).expect("probe request");
                        let mut answer = b"WZLR".to_vec();
                        answer.extend_from_slice(&1u32.to_be_bytes());
                        answer.extend_from_slice(&id.to_be_bytes());
                        stream.write_all(&answer).unwrap();
                    }
                    None => {
                        // A 2.3.x/3.x host: the lobby connects and sends nothing.
                        let n = stream.read(&mut request).unwrap_or(0);
                        request.truncate(n);
                    }
                }
                seen.push(request);
            }
            seen
        });
        GamePort { addr, thread }
    }

    fn requests(self) -> Vec<Vec<u8>> {
        self.thread.join().expect("game port thread")
    }
}

#[test]
fn host_237_registers_and_reregisters_on_change() {
    let server = start_wz(|_| {});
    let lobby = wz_addr(&server);
    let ip = "127.0.0.21";
    let port = GamePort::open(ip, 2100, 2, None);

    let mut first = connect_from(lobby, ip);
    let mut host = Host::new("2.3.7", "Classic 2v2");
    let (id1, status) = host.register(&mut first);
    assert_eq!(status, (200, MOTD.to_owned()));

    let games = read_as_237(&list_bytes(lobby, b"list\0"));
    assert_eq!(
        games,
        vec![Listed {
            name: "Classic 2v2".into(),
            host: ip.into(),
            dw_size: 72,
            players: 1,
            host_port: 0,
            game_id: id1,
        }]
    );

    // A player joined: 2.3.7 re-registers on a new connection with a new gaId, then
    // closes the old one.
    host.players = 2;
    let mut second = connect_from(lobby, ip);
    let (id2, status) = host.register(&mut second);
    assert_eq!(status.0, 200);
    assert_ne!(id1, id2);
    drop(first);
    eventually(&server, REPLY_WAIT, |s| wz(s).games.len() == 1);
    let games = read_as_237(&list_bytes(lobby, b"list\0"));
    assert_eq!(games.len(), 1);
    assert_eq!((games[0].game_id, games[0].players), (id2, 2));

    // Both probes were plain connects: a v3 host is sent nothing.
    assert_eq!(port.requests(), vec![Vec::<u8>::new(), Vec::new()]);
    let snap = snapshot(&server);
    assert_eq!(counter(&snap, "wz_probe_outcomes_total", "connected"), 2);
    assert_eq!(counter(&snap, "wz_games_removed_total", "closed"), 1);
}

#[test]
fn host_3x_bare_updates_get_no_reply() {
    let server = start_wz(|_| {});
    let lobby = wz_addr(&server);
    let ip = "127.0.0.22";
    let port = GamePort::open(ip, 2100, 1, None);
    let mut stream = connect_from(lobby, ip);
    let mut host = Host::new("3.x", "Three");
    let (id, status) = host.register(&mut stream);
    assert_eq!(status, (200, MOTD.to_owned()));

    host.players = 3;
    stream.write_all(&host.gamestruct()).unwrap();
    assert_silent(&mut stream);

    let (games, status) = read_as_3x(&list_bytes(lobby, b"list\0"));
    assert_eq!(status, (200, MOTD.to_owned()));
    assert_eq!(games.len(), 1);
    assert_eq!(
        (games[0].game_id, games[0].players, games[0].host.as_str()),
        (id, 3, ip)
    );
    let snap = snapshot(&server);
    assert_eq!(counter(&snap, "wz_updates_total", ""), 1);
    drop(port);
}

#[test]
fn host_4x_status_after_update_keep_unanswered_wzlr_probe() {
    let server = start_wz(|_| {});
    let lobby = wz_addr(&server);
    let mut stream = connect_from(lobby, "127.0.0.1");

    stream.write_all(b"gaId\0").unwrap();
    let id = read_u32(&mut stream);
    // The host's game port answers the lobby's probe with the id it got.
    let port = GamePort::open("127.0.0.1", 0, 1, Some(id));
    let mut host = Host::new("4.x", "Four");
    host.game_id = id;
    host.host_port = port.addr.port();
    // 4.3.3 sometimes sends `addg\0` and the struct 44 ms apart.
    stream.write_all(b"addg\0").unwrap();
    std::thread::sleep(Duration::from_millis(44));
    stream.write_all(&host.gamestruct()).unwrap();
    assert_eq!(read_status(&mut stream), (200, MOTD.to_owned()));
    assert_eq!(port.requests(), vec![vec![0u8; 8]]);

    // Every update gets a status; `keep` never gets anything.
    host.players = 2;
    stream.write_all(&host.gamestruct()).unwrap();
    assert_eq!(read_status(&mut stream), (200, MOTD.to_owned()));
    stream.write_all(b"keep\0").unwrap();
    assert_silent(&mut stream);
    host.players = 3;
    stream.write_all(&host.gamestruct()).unwrap();
    // The next bytes are exactly this update's status: nothing answered `keep`.
    assert_eq!(read_status(&mut stream), (200, MOTD.to_owned()));

    let (games, status) = read_as_4x(&list_bytes(lobby, b"list\0"));
    assert_eq!(status, (200, MOTD.to_owned()));
    assert_eq!(
        games,
        vec![Listed {
            name: "Four".into(),
            host: "127.0.0.1".into(),
            dw_size: 72,
            players: 3,
            host_port: host.host_port,
            game_id: id,
        }]
    );
    let snap = snapshot(&server);
    assert_eq!(counter(&snap, "wz_probe_outcomes_total", "wzlr_match"), 1);
    assert_eq!(counter(&snap, "wz_commands_total", "keep"), 1);
    assert_eq!(counter(&snap, "wz_updates_total", ""), 2);
}

#[test]
fn wzlr_answer_for_another_game_is_refused() {
    let server = start_wz(|_| {});
    let lobby = wz_addr(&server);
    let mut stream = connect_from(lobby, "127.0.0.1");
    stream.write_all(b"gaId\0").unwrap();
    let id = read_u32(&mut stream);
    let port = GamePort::open("127.0.0.1", 0, 1, Some(id + 1000));
    let mut host = Host::new("4.x", "Impostor");
    host.game_id = id;
    host.host_port = port.addr.port();
    let mut bytes = b"addg\0".to_vec();
    bytes.extend_from_slice(&host.gamestruct());
    stream.write_all(&bytes).unwrap();
    let (code, motd) = read_status(&mut stream);
    assert_eq!(code, 408);
    assert!(motd.contains("answered for another game"), "{motd}");
    assert_closed(&mut stream);
    drop(port);
}

/// 13 games: 2.3.7 and 3.x show the first batch of 11 (3.x then reads the status; 2.3.7
/// could take 12 but the batch announces 11), 4.x shows all 13 through
/// IGNORE_FIRST_BATCH; `list`, `list\n` and a bare 4-byte `list` all work.
#[test]
fn list_reply_read_by_every_client_generation() {
    let server = start_wz(|w| {
        w.check_reachable = false;
        w.max_games_per_ip = 20;
    });
    let lobby = wz_addr(&server);
    let mut hosts = Vec::new();
    let mut ids = Vec::new();
    for n in 0..13 {
        let mut stream = connect_from(lobby, "127.0.0.1");
        let mut host = Host::new("4.x", &format!("game {n}"));
        host.host_port = 2100 + n;
        let (id, status) = host.register(&mut stream);
        assert_eq!(status.0, 200);
        ids.push(id);
        hosts.push(stream);
    }
    for command in [&b"list\0"[..], b"list\n", b"list"] {
        let reply = list_bytes(lobby, command);
        let old = read_as_237(&reply);
        assert_eq!(old.len(), 11);
        let (three, status) = read_as_3x(&reply);
        assert_eq!(three.len(), 11);
        assert_eq!(status, (200, MOTD.to_owned()));
        let (four, status) = read_as_4x(&reply);
        assert_eq!(status, (200, MOTD.to_owned()));
        let got: Vec<u32> = four.iter().map(|g| g.game_id).collect();
        assert_eq!(got, ids);
        for (n, game) in four.iter().enumerate() {
            assert_eq!(game.name, format!("game {n}"));
            assert_eq!(game.host, "127.0.0.1");
            assert_eq!(game.host_port, 2100 + n as u16);
            assert_eq!(game.dw_size, 72);
        }
        assert_eq!(&old[..], &four[..11]);
        assert_eq!(&three[..], &four[..11]);
    }
    drop(hosts);
}

#[test]
fn unreachable_host_refused_with_reason_and_closed() {
    let server = start_wz(|_| {});
    let lobby = wz_addr(&server);
    // Nothing listens on 127.0.0.23:2100.
    let mut stream = connect_from(lobby, "127.0.0.23");
    let mut host = Host::new("3.x", "Behind NAT");
    let (_, (code, motd)) = host.register(&mut stream);
    assert_eq!(code, 408);
    assert!(
        motd.contains("Game unreachable") && motd.contains("127.0.0.23:2100"),
        "{motd}"
    );
    assert_closed(&mut stream);
    let (games, _) = read_as_4x(&list_bytes(lobby, b"list\0"));
    assert!(games.is_empty());
    let snap = snapshot(&server);
    assert_eq!(counter(&snap, "wz_refused_total", "unreachable"), 1);
    assert_eq!(counter(&snap, "wz_probe_outcomes_total", "refused"), 1);
}

#[test]
fn host_disconnect_removes_the_game_at_once() {
    let server = start_wz(|w| w.check_reachable = false);
    let lobby = wz_addr(&server);
    let mut stream = connect_from(lobby, "127.0.0.1");
    let mut host = Host::new("4.x", "Short lived");
    let (id, _) = host.register(&mut stream);
    let (games, _) = read_as_4x(&list_bytes(lobby, b"list\0"));
    assert_eq!(games.len(), 1);
    assert_eq!(games[0].game_id, id);
    drop(stream);
    let snap = eventually(&server, REPLY_WAIT, |s| wz(s).games.is_empty());
    assert!(wz(&snap).games.is_empty());
    let (games, _) = read_as_4x(&list_bytes(lobby, b"list\0"));
    assert!(games.is_empty());
    assert_eq!(counter(&snap, "wz_games_removed_total", "closed"), 1);
}

#[test]
fn policy_refusals_after_addg() {
    let dir = std::env::temp_dir().join(format!("lobbyd-wz-words-{}", std::process::id()));
    std::fs::write(&dir, "# banned\nbadword\n").unwrap();
    let words = dir.clone();
    let server = start_wz(move |w| {
        w.check_reachable = false;
        w.banned_words = Some(words);
        w.min_version = Some((0x1000, 0));
    });
    let lobby = wz_addr(&server);

    let mut stream = connect_from(lobby, "127.0.0.1");
    let (_, (code, motd)) = Host::new("2.3.7", "Old one").register(&mut stream);
    assert_eq!(code, 403);
    assert!(motd.contains("too old"), "{motd}");
    assert_closed(&mut stream);

    let mut stream = connect_from(lobby, "127.0.0.1");
    let (_, (code, motd)) = Host::new("4.x", "my BADWORD game").register(&mut stream);
    assert_eq!(code, 406);
    assert!(motd.contains("Game name not acceptable"), "{motd}");
    assert_closed(&mut stream);

    let snap = snapshot(&server);
    assert_eq!(counter(&snap, "wz_refused_total", "min_version"), 1);
    assert_eq!(counter(&snap, "wz_refused_total", "banned_name"), 1);
    let _ = std::fs::remove_file(dir);
}

#[test]
fn malformed_legacy_input_is_closed_and_counted() {
    let server = start_wz(|_| {});
    let lobby = wz_addr(&server);
    let mut stream = connect_from(lobby, "127.0.0.1");
    stream.write_all(b"hack\0").unwrap();
    assert_closed(&mut stream);
    // A bare GAMESTRUCT with no addg.
    let mut stream = connect_from(lobby, "127.0.0.1");
    stream
        .write_all(&Host::new("4.x", "x").gamestruct())
        .unwrap();
    assert_closed(&mut stream);
    // A v4 handshake announcing version 5.
    let mut stream = connect_from(lobby, "127.0.0.1");
    stream.write_all(b"version\0\0\0\0\x05").unwrap();
    assert_closed(&mut stream);
    // The server still serves.
    let (games, status) = read_as_4x(&list_bytes(lobby, b"list\0"));
    assert!(games.is_empty());
    assert_eq!(status.0, 200);
    let snap = snapshot(&server);
    assert_eq!(
        counter(&snap, "wz_protocol_errors_total", "unknown_command"),
        1
    );
    assert_eq!(
        counter(&snap, "wz_protocol_errors_total", "gamestruct_without_addg"),
        1
    );
    assert_eq!(
        counter(&snap, "wz_protocol_errors_total", "v4_wrong_version"),
        1
    );
}

// ---------------------------------------------------------------------------------------
// v4 protocol
// ---------------------------------------------------------------------------------------

use lobbyd::wire::wz::v4::{parse_document, Encoding, Node, Value};
use serde_json::{json, Value as Json};

/// A v4 client: handshake sent, frames in both directions.
pub(crate) struct V4 {
    stream: TcpStream,
}

impl V4 {
    pub(crate) fn connect(lobby: SocketAddr) -> V4 {
        let mut stream = connect_from(lobby, "127.0.0.1");
        stream.write_all(b"version\0\0\0\0\x04").unwrap();
        V4 { stream }
    }

    fn send_frame(&mut self, body: &[u8]) {
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        self.stream.write_all(&frame).unwrap();
    }

    fn read_frame(&mut self) -> Vec<u8> {
        let len = read_u32(&mut self.stream) as usize;
        assert!(len < 1 << 20, "response frame of {len} bytes");
        read_exact(&mut self.stream, len)
    }

    /// Sends a BSON request built from JSON and returns the response as JSON.
    fn bson(&mut self, method: &str, params: Json, id: i64) -> Json {
        let request = to_value(&json!({"method": method, "params": params, "id": id}));
        let mut frame = Vec::new();
        request.encode(Encoding::Bson, &mut frame);
        self.stream.write_all(&frame).unwrap();
        let body = self.read_frame();
        let (encoding, doc) = parse_document(&body);
        assert_eq!(
            encoding,
            Encoding::Bson,
            "answered in the request's encoding"
        );
        // A BSON document: i32 LE length equal to the body, NUL-terminated.
        assert_eq!(
            i32::from_le_bytes([body[0], body[1], body[2], body[3]]) as usize,
            body.len()
        );
        to_json(&doc.expect("a well-formed BSON response"))
    }

    /// Sends a JSON request (as text) and returns the response parsed as JSON.
    pub(crate) fn json(&mut self, text: &str) -> Json {
        self.send_frame(text.as_bytes());
        let body = self.read_frame();
        assert_eq!(body.first(), Some(&b'{'), "answered in JSON");
        serde_json::from_slice(&body).expect("a JSON response")
    }
}

/// JSON -> the library's request value (objects keep their key order).
fn to_value(json: &Json) -> Value {
    match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::Int(n.as_i64().expect("integer")),
        Json::String(s) => Value::String(s.clone()),
        Json::Array(items) => Value::Array(items.iter().map(to_value).collect()),
        Json::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone().into(), to_value(v)))
                .collect(),
        ),
    }
}

/// A decoded BSON document -> JSON, for assertions.
fn to_json(node: &Node<'_>) -> Json {
    match node {
        Node::Null => Json::Null,
        Node::Bool(b) => json!(b),
        Node::Int(i) => json!(i),
        Node::Double(d) => json!(d),
        Node::Str(s) => json!(s.as_ref()),
        Node::Array(items) => Json::Array(items.iter().map(to_json).collect()),
        Node::Doc(fields) => Json::Object(
            fields
                .iter()
                .map(|(k, v)| (k.to_string(), to_json(v)))
                .collect(),
        ),
    }
}

/// The `list` request `{"method": "list", "params": "", "id": 1}` as BSON bytes written out
/// by hand from bsonspec.org, independent of lobbyd's writer.
const GOLDEN_BSON_LIST: [u8; 43] = [
    43, 0, 0, 0, // document length
    0x02, b'm', b'e', b't', b'h', b'o', b'd', 0, 5, 0, 0, 0, b'l', b'i', b's', b't',
    0, // method
    0x02, b'p', b'a', b'r', b'a', b'm', b's', 0, 1, 0, 0, 0, 0, // params: ""
    0x10, b'i', b'd', 0, 1, 0, 0, 0, // id: int32 1
    0, // end of document
];

#[test]
fn v4_bson_login_add_game_list_players_del_game() {
    let (db, ids) = TempDb::with_users("bson", &[("alice", "correct horse"), ("bob", "battery")]);
    let (alice, bob) = (ids[0], ids[1]);
    let db_path = db.0.clone();
    let server = start_wz(move |w| w.db = db_path);
    let lobby = wz_addr(&server);
    let port = GamePort::open("127.0.0.1", 0, 1, None);
    let game_port = port.addr.port();

    let mut host = V4::connect(lobby);
    let wrong = host.bson(
        "login",
        json!({"username": "alice", "password": "wrong"}),
        1,
    );
    assert_eq!(
        wrong,
        json!({"status": -405, "result": "Unknown user or wrong password", "id": 1})
    );
    let unknown = host.bson("login", json!({"username": "nobody", "password": "x"}), 2);
    assert_eq!(unknown["status"], -405);
    let ok = host.bson(
        "login",
        json!({"username": "alice", "password": "correct horse"}),
        3,
    );
    assert_eq!(
        (ok["status"].clone(), ok["id"].clone()),
        (json!(0), json!(3))
    );
    assert_eq!(ok["result"]["userid"], alice);
    let alice_session = ok["result"]["sessionid"].as_str().unwrap().to_owned();
    assert_eq!(alice_session.len(), 32);
    assert!(alice_session.bytes().all(|b| b.is_ascii_hexdigit()));

    let added = host.bson(
        "addGame",
        json!({"description": "Fast, NTW", "maxPlayers": 8, "currentPlayers": 1,
               "port": game_port, "mapname": "Rush", "hostplayer": "alice",
               "multiVer": "4.3.3", "wzVerMajor": 0x4000, "wzVerMinor": 0x4f}),
        4,
    );
    assert_eq!(added["status"], 0, "{added}");
    assert_eq!(added["result"]["motd"], MOTD);
    let game_id = added["result"]["gameId"].as_i64().unwrap();
    assert!(game_id > 0);
    // The probe was a plain connect: nothing sent to the game port.
    assert_eq!(port.requests(), vec![Vec::<u8>::new()]);

    // A player logs in on its own connection and lists with a hand-made BSON request.
    let mut player = V4::connect(lobby);
    let login = player.bson(
        "login",
        json!({"username": "bob", "password": "battery"}),
        1,
    );
    let bob_session = login["result"]["sessionid"].as_str().unwrap().to_owned();
    player.send_frame(&GOLDEN_BSON_LIST);
    let body = player.read_frame();
    let listed = to_json(&parse_document(&body).1.unwrap());
    let entry = json!({"gameId": game_id, "host": "127.0.0.1", "port": game_port,
        "description": "Fast, NTW", "currentPlayers": 1, "maxPlayers": 8, "multiVer": "4.3.3",
        "wzVerMajor": 0x4000, "wzVerMinor": 0x4f, "isPrivate": false, "modlist": "",
        "mapname": "Rush", "hostplayer": "alice"});
    assert_eq!(
        listed,
        json!({"status": 0, "result": {"count": 1, "list": [entry.clone()]}, "id": 1})
    );

    // Legacy 4.x browsers see the v4 game too.
    let (games, _) = read_as_4x(&list_bytes(lobby, b"list\0"));
    assert_eq!(games.len(), 1);
    assert_eq!(
        (games[0].name.as_str(), games[0].host_port, games[0].game_id),
        ("Fast, NTW", game_port, game_id as u32)
    );

    // addPlayer checks the player's session.
    let forged = "0123456789abcdef0123456789abcdef";
    let bad = host.bson(
        "addPlayer",
        json!({"gameId": game_id, "slot": 1, "name": "bob", "userid": bob, "sessionid": forged}),
        5,
    );
    assert_eq!(bad, json!({"status": -406, "result": "invalid", "id": 5}));
    let stolen = host.bson(
        "addPlayer",
        json!({"gameId": game_id, "userid": alice, "sessionid": bob_session}),
        6,
    );
    assert_eq!(stolen["status"], -406);
    let good = host.bson(
        "addPlayer",
        json!({"gameId": game_id, "slot": 1, "name": "bob", "userid": bob,
               "sessionid": bob_session}),
        7,
    );
    assert_eq!(good, json!({"status": 0, "result": "ok", "id": 7}));
    let list = player.bson("list", json!(""), 2);
    assert_eq!(list["result"]["list"][0]["currentPlayers"], 2);
    let other = host.bson(
        "addPlayer",
        json!({"gameId": 999_999, "sessionid": bob_session}),
        8,
    );
    assert_eq!(other["status"], -402);

    let left = host.bson("delPlayer", json!({"gameId": game_id, "slot": 1}), 9);
    assert_eq!(left, json!({"status": 0, "result": "ok", "id": 9}));
    let list = player.bson("list", json!({}), 3);
    assert_eq!(list["result"]["list"][0]["currentPlayers"], 1);

    let unknown = host.bson("frobnicate", json!({}), 10);
    assert_eq!(unknown["status"], -32601);
    assert!(unknown["result"].as_str().unwrap().contains("frobnicate"));

    let deleted = host.bson("delGame", json!({"gameId": game_id}), 11);
    assert_eq!(deleted, json!({"status": 0, "result": "ok", "id": 11}));
    let list = player.bson("list", Json::Null, 4);
    assert_eq!(list["result"], json!({"count": 0, "list": []}));
    let (games, _) = read_as_4x(&list_bytes(lobby, b"list\0"));
    assert!(games.is_empty());
    let again = host.bson("delGame", json!({}), 12);
    assert_eq!(again["status"], -402);

    let snap = snapshot(&server);
    assert_eq!(counter(&snap, "wz_v4_connections_total", ""), 2);
    assert_eq!(counter(&snap, "wz_v4_requests_total", "login"), 4);
    assert_eq!(
        counter(&snap, "wz_v4_responses_total", "session_invalid"),
        2
    );
    assert_eq!(counter(&snap, "wz_games_removed_total", "deleted"), 1);
}

#[test]
fn v4_json_with_login_required() {
    let (db, _) = TempDb::with_users("json", &[("carol", "s3cret")]);
    let db_path = db.0.clone();
    let server = start_wz(move |w| {
        w.db = db_path;
        w.login = lobbyd::accounts::LoginPolicy::Required;
        w.check_reachable = false;
    });
    let lobby = wz_addr(&server);
    let mut client = V4::connect(lobby);
    let refused = client.json(r#"{"method": "list", "params": "", "id": 7}"#);
    assert_eq!(
        refused,
        json!({"status": -405, "result": "Please login first!", "id": 7})
    );
    let refused = client.json(
        r#"{"method": "addGame", "params": {"description": "x", "maxPlayers": 2, "currentPlayers": 1}, "id": 8}"#,
    );
    assert_eq!(refused["status"], -405);
    let wrong = client.json(
        r#"{"method": "login", "params": {"username": "carol", "password": "nope"}, "id": 9}"#,
    );
    assert_eq!(
        wrong,
        json!({"status": -405, "result": "Unknown user or wrong password", "id": 9})
    );
    // A request queued behind the login is answered after it, in order.
    let login =
        br#"{"method": "login", "params": {"username": "carol", "password": "s3cret"}, "id": 10}"#;
    let list = br#"{"method": "list", "id": 11}"#;
    client.send_frame(login);
    client.send_frame(list);
    let first: Json = serde_json::from_slice(&client.read_frame()).unwrap();
    let second: Json = serde_json::from_slice(&client.read_frame()).unwrap();
    assert_eq!(
        (first["status"].clone(), first["id"].clone()),
        (json!(0), json!(10))
    );
    assert_eq!(
        second,
        json!({"status": 0, "result": {"count": 0, "list": []}, "id": 11})
    );
    let added = client.json(
        r#"{"method": "addGame", "params": {"description": "Logged in", "maxPlayers": 4, "currentPlayers": 1, "port": 2100}, "id": 12}"#,
    );
    assert_eq!(added["status"], 0, "{added}");
    // Closing the connection delists its game at once, as for legacy hosts.
    drop(client);
    let snap = eventually(&server, REPLY_WAIT, |s| wz(s).games.is_empty());
    assert_eq!(counter(&snap, "wz_games_removed_total", "closed"), 1);
    assert_eq!(counter(&snap, "wz_v4_responses_total", "login_required"), 3);
}

#[test]
fn v4_unreachable_game_refused() {
    let server = start_wz(|w| w.login = lobbyd::accounts::LoginPolicy::Off);
    let lobby = wz_addr(&server);
    // A port that was just free: nothing listens on it.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut client = V4::connect(lobby);
    let refused = client.bson(
        "addGame",
        json!({"description": "Nobody home", "maxPlayers": 2, "currentPlayers": 1,
               "port": closed}),
        1,
    );
    assert_eq!(refused["status"], -403);
    let text = refused["result"].as_str().unwrap();
    assert!(
        text.contains("Game unreachable") && text.contains(&format!("127.0.0.1:{closed}")),
        "{text}"
    );
    // login is off: an unknown method.
    let login = client.bson("login", json!({"username": "a", "password": "b"}), 2);
    assert_eq!(login["status"], -32601);
    let list = client.bson("list", json!(""), 3);
    assert_eq!(list["result"]["count"], 0);
    let snap = snapshot(&server);
    assert_eq!(counter(&snap, "wz_refused_total", "unreachable"), 1);
}

#[test]
fn v4_malformed_frames_get_error_status_and_are_counted() {
    let server = start_wz(|w| w.login = lobbyd::accounts::LoginPolicy::Off);
    let lobby = wz_addr(&server);
    let mut client = V4::connect(lobby);

    // BSON whose declared length (48) lies about the 8 bytes present.
    client.send_frame(&[48, 0, 0, 0, 0x0A, b'x', 0, 0]);
    let reply = to_json(&parse_document(&client.read_frame()).1.unwrap());
    assert_eq!(reply["status"], -32700);
    assert_eq!(reply["id"], Json::Null);
    assert!(reply["result"]
        .as_str()
        .unwrap()
        .starts_with("Invalid request: "));

    // JSON nested 40 deep.
    let deep = format!(
        r#"{{"method": "list", "params": {}1{}, "id": 2}}"#,
        r#"{"a": "#.repeat(40),
        "}".repeat(40)
    );
    let reply = client.json(&deep);
    assert_eq!(reply["status"], -32700);

    // Wrong type, then a missing field: -500 with the request id.
    let reply = client.json(
        r#"{"method": "addGame", "params": {"description": 5, "maxPlayers": 8, "currentPlayers": 1}, "id": 3}"#,
    );
    assert_eq!(
        (reply["status"].clone(), reply["id"].clone()),
        (json!(-500), json!(3))
    );
    assert!(reply["result"].as_str().unwrap().contains("description"));
    let reply = client.json(r#"{"method": "addGame", "params": {"maxPlayers": 8}, "id": 4}"#);
    assert_eq!(reply["status"], -500);
    assert!(reply["result"].as_str().unwrap().contains("missing"));

    // An over-long string.
    let long = format!(r#"{{"method": "{}", "id": 5}}"#, "m".repeat(300));
    assert_eq!(client.json(&long)["status"], -32700);

    // The connection still works.
    let list = client.json(r#"{"method": "list", "params": {}, "id": 6}"#);
    assert_eq!(list["status"], 0);

    // A frame announcing 1 MiB is refused before its body: the connection closes.
    client
        .stream
        .write_all(&(1u32 << 20).to_be_bytes())
        .unwrap();
    assert_closed(&mut client.stream);

    let snap = snapshot(&server);
    for (reason, n) in [
        ("length_mismatch", 1),
        ("too_deep", 1),
        ("wrong_type", 1),
        ("missing_field", 1),
        ("too_long", 1),
    ] {
        assert_eq!(
            counter(&snap, "wz_v4_decode_errors_total", reason),
            n,
            "{reason}"
        );
    }
    assert_eq!(
        counter(&snap, "wz_protocol_errors_total", "v4_frame_too_large"),
        1
    );
}

// ---------------------------------------------------------------------------------------
// The binary: SIGHUP reloads the MOTD and banned words without dropping anyone.
// ---------------------------------------------------------------------------------------

/// The raw MOTD as the 2.2-era `motd\0` command returns it.
fn motd_of(lobby: SocketAddr) -> String {
    let reply = list_bytes(lobby, b"motd\0");
    String::from_utf8(reply).expect("UTF-8 MOTD")
}

#[test]
fn sighup_reloads_motd_and_banned_words_keeping_connections() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = std::env::temp_dir().join(format!("lobbyd-wz-hup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let motd = dir.join("motd.txt");
    let words = dir.join("words.txt");
    std::fs::write(&motd, "first motd\n").unwrap();
    std::fs::write(&words, "# none yet\n").unwrap();
    // A port that was free a moment ago (the binary cannot report an OS-chosen wz port
    // back to this test other than through its log, which is read below anyway).
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lobbyd"))
        .args(LOOPBACK_ARGS)
        .args([
            "--wz-port",
            &port.to_string(),
            "--wz-check-reachable",
            "off",
        ])
        .args(["--wz-login", "off", "--log", "info"])
        .arg("--motd-file")
        .arg(&motd)
        .arg("--wz-banned-words")
        .arg(&words)
        .env_remove("RUST_LOG")
        .stderr(Stdio::piped())
        .spawn()
        .expect("lobbyd starts");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let ready = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.contains("warzone master server listening on 127.0.0.1:"));
    assert!(ready, "lobbyd never reported its warzone address");
    // Keep draining the log so the child never blocks on a full pipe.
    let drain = std::thread::spawn(move || lines.map_while(Result::ok).count());
    let lobby: SocketAddr = ([127, 0, 0, 1], port).into();

    assert_eq!(motd_of(lobby), "first motd");
    let mut stream = connect_from(lobby, "127.0.0.1");
    let (_, status) = Host::new("4.x", "rude game").register(&mut stream);
    assert_eq!(status, (200, "first motd".to_owned()));

    std::fs::write(&motd, "second motd\n").unwrap();
    std::fs::write(&words, "rude\n").unwrap();
    let hup = Command::new("kill")
        .args(["-HUP", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let deadline = std::time::Instant::now() + REPLY_WAIT;
    while motd_of(lobby) != "second motd" {
        assert!(std::time::Instant::now() < deadline, "MOTD not reloaded");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The registered host was not dropped: its update is answered with the new MOTD...
    // and refused, because its name now holds a banned word (a 4.x host gets the reason).
    let mut update = Host::new("4.x", "rude game");
    update.players = 2;
    stream.write_all(&update.gamestruct()).unwrap();
    let (code, text) = read_status(&mut stream);
    assert_eq!(code, 406);
    assert!(text.contains("Game name not acceptable"), "{text}");
    // A new game with a clean name gets the new MOTD.
    let mut other = connect_from(lobby, "127.0.0.1");
    let (_, status) = Host::new("4.x", "polite game").register(&mut other);
    assert_eq!(status, (200, "second motd".to_owned()));

    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(0));
    drain.join().unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

/// `--wz-max-conns 2`: a third connection waits in the backlog unserved (never accepted and
/// closed, which would loop a 4.x host) when every connection holds a registered game (a
/// connection that has not registered would be evicted instead, see `wz_dos.rs`), and is
/// served once one of them closes.
/// `--wz-max-conns-per-ip 1`: the second connection from one address may list but not host.
#[test]
fn connection_limits_pause_accepting_and_refuse_extra_hosts() {
    let server = start_wz(|w| {
        w.check_reachable = false;
        w.max_conns = 2;
        w.max_conns_per_ip = 1;
    });
    let lobby = wz_addr(&server);
    let mut first = connect_from(lobby, "127.0.0.1");
    let (_, (code, _)) = Host::new("4.x", "First from here").register(&mut first);
    assert_eq!(code, 200);
    let mut second = connect_from(lobby, "127.0.0.1");
    let (_, (code, motd)) = Host::new("4.x", "Second from here").register(&mut second);
    assert_eq!(code, 406);
    assert!(motd.contains("Too many connections"), "{motd}");
    assert_closed(&mut second);
    // Two registered hosts hold the two connections: nobody can be evicted to make room.
    let mut other = connect_from(lobby, "127.0.0.2");
    let (_, (code, _)) = Host::new("4.x", "Other address").register(&mut other);
    assert_eq!(code, 200);
    let snap = eventually(&server, REPLY_WAIT, |s| {
        counter(s, "wz_accepted_total", "") == 3
    });
    assert_eq!(counter(&snap, "wz_accepted_total", ""), 3);

    let mut third = connect_from(lobby, "127.0.0.1");
    third.write_all(b"list\0").unwrap();
    assert_silent(&mut third);
    let snap = snapshot(&server);
    assert_eq!(counter(&snap, "wz_accepted_total", ""), 3);
    assert!(counter(&snap, "wz_accept_pauses_total", "") >= 1);
    assert_eq!(counter(&snap, "wz_evicted_total", ""), 0);

    drop(first);
    let mut reply = Vec::new();
    third
        .read_to_end(&mut reply)
        .expect("list reply once accepted");
    let (games, (code, _)) = read_as_4x(&reply);
    assert_eq!((games.len(), code), (1, 200));
}

/// Registrations from one address are rate-limited: with the defaults (30/min, burst 20)
/// the 21st in a row is refused with 406; `--wz-register-rate 600` lets 25 through.
#[test]
fn registration_rate_per_address_is_configurable() {
    let registrations_until_refused = |rate: Option<u32>| {
        let server = start_wz(|w| {
            w.check_reachable = false;
            if let Some(rate) = rate {
                w.registrations_per_minute = rate;
            }
        });
        let lobby = wz_addr(&server);
        for n in 1..=25 {
            let mut host = connect_from(lobby, "127.0.0.1");
            let (_, (code, motd)) = Host::new("4.x", "Again and again").register(&mut host);
            if code != 200 {
                assert_eq!(code, 406, "{motd}");
                assert!(motd.contains("Too many games registered"), "{motd}");
                return n;
            }
        }
        0
    };
    assert_eq!(registrations_until_refused(None), 21);
    assert_eq!(registrations_until_refused(Some(600)), 0);
}

#[test]
fn shutdown_closes_master_server_connections() {
    let server = start_wz(|w| w.check_reachable = false);
    let lobby = wz_addr(&server);
    let mut host = connect_from(lobby, "127.0.0.1");
    let (_, status) = Host::new("4.x", "Until shutdown").register(&mut host);
    assert_eq!(status.0, 200);
    let mut v4 = V4::connect(lobby);
    assert_eq!(v4.bson("list", json!(""), 1)["result"]["count"], 1);
    server.shutdown().expect("clean shutdown");
    assert_closed(&mut host);
    assert_closed(&mut v4.stream);
}

/// 200 games from 200 addresses make a ~330 KB legacy list reply and ~60 KB v4 list
/// responses. A browser with a tiny receive buffer that reads late still gets every byte
/// intact (the send queue survives partial writes); a v4 client that pipelines requests and
/// never reads is dropped once its queue passes the cap, and nobody else notices.
#[test]
fn send_queues_survive_partial_writes_and_are_bounded() {
    let server = start_wz(|w| {
        w.check_reachable = false;
        w.login = lobbyd::accounts::LoginPolicy::Off;
    });
    let lobby = wz_addr(&server);
    let mut hosts = Vec::new();
    for n in 0..200u16 {
        let ip = format!("127.0.{}.{}", 1 + n / 250, 1 + n % 250);
        let mut stream = connect_from(lobby, &ip);
        let mut host = Host::new("4.x", &format!("crowded {n}"));
        host.host_port = 3000 + n;
        let (_, status) = host.register(&mut stream);
        assert_eq!(status.0, 200, "{ip}");
        hosts.push(stream);
    }

    let small_reader = || {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        socket.set_recv_buffer_size(4096).unwrap();
        socket.connect_timeout(&lobby.into(), REPLY_WAIT).unwrap();
        let stream: TcpStream = socket.into();
        stream.set_read_timeout(Some(REPLY_WAIT)).unwrap();
        stream
    };

    let mut browser = small_reader();
    browser.write_all(b"list\0").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut reply = Vec::new();
    browser
        .read_to_end(&mut reply)
        .expect("whole reply, then close");
    let (games, status) = read_as_4x(&reply);
    assert_eq!(status, (200, MOTD.to_owned()));
    assert_eq!(games.len(), 200);
    for (n, game) in games.iter().enumerate() {
        assert_eq!(game.name, format!("crowded {n}"));
        assert_eq!(game.host_port, 3000 + n as u16);
    }

    // A v4 client asks for the list 400 times and reads nothing: 400 x ~60 KB is more than
    // the kernel's socket buffers (a few MB on loopback) plus the 1 MiB queue.
    let mut greedy = small_reader();
    greedy.write_all(b"version\0\0\0\0\x04").unwrap();
    let request = br#"{"method": "list", "id": 1}"#;
    let mut frames = Vec::new();
    for _ in 0..400 {
        frames.extend_from_slice(&(request.len() as u32).to_be_bytes());
        frames.extend_from_slice(request);
    }
    greedy.write_all(&frames).unwrap();
    let snap = eventually(&server, REPLY_WAIT, |s| {
        counter(s, "wz_send_overflow_total", "") == 1
    });
    assert_eq!(counter(&snap, "wz_send_overflow_total", ""), 1);
    // Everyone else is still served.
    let (games, _) = read_as_4x(&list_bytes(lobby, b"list\0"));
    assert_eq!(games.len(), 200);
    assert_eq!(wz(&snap).games.len(), 200);

    drop(hosts);
}

#[test]
fn operators_see_games_and_counters_over_http() {
    let mut config = test_config();
    config.udp_port = None;
    config.metrics = Some("127.0.0.1:0".parse().unwrap());
    config.wz = WzSettings {
        port: Some(0),
        check_reachable: false,
        ..WzSettings::default()
    };
    let server = start(config);
    let lobby = wz_addr(&server);
    let metrics = server.metrics_addr().expect("metrics enabled");
    let mut host = connect_from(lobby, "127.0.0.1");
    let (id, _) = Host::new("4.x", "Seen \"by\" ops").register(&mut host);

    let get = |path: &str| {
        let mut stream = TcpStream::connect(metrics).unwrap();
        stream.set_read_timeout(Some(REPLY_WAIT)).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        body.to_owned()
    };
    let games: Json = serde_json::from_str(&get("/wz/games")).expect("JSON");
    assert_eq!(games[0]["id"], id);
    assert_eq!(games[0]["name"], "Seen \"by\" ops");
    assert_eq!(games[0]["protocol"], "legacy");
    assert_eq!(games[0]["listed"], true);
    let text = get("/metrics");
    for sample in [
        "lobbyd_wz_games{state=\"listed\"} 1",
        "lobbyd_wz_commands_total{command=\"gaid\"} 1",
        "lobbyd_wz_commands_total{command=\"addg\"} 1",
        "lobbyd_wz_games_listed_total 1",
        "lobbyd_wz_accepted_total 1",
    ] {
        assert!(text.lines().any(|l| l == sample), "no {sample} in\n{text}");
    }
}
