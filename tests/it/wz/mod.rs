//! The Warzone 2100 master server over real loopback sockets, asserting on the bytes: the
//! legacy protocol of the real games in `legacy.rs`, the v4 protocol in `v4.rs`, over the
//! hosts, browsers and game ports written here.
//!
//! Hosts and browsers here behave as the real 2.3.7, 3.x and 4.x games do
//! (docs/protocols/wz-lobby.md, "Legacy protocol").
//! GAMESTRUCTs are built and list replies read with this file's own offsets, not lobbyd's
//! wire module, so an emitter bug cannot hide behind a matching parser. Legacy hosts
//! connect from their own 127.0.0.x address so that a v3 game's fixed probe port 2100 can
//! be served (or left closed) per test without two tests sharing it.

mod legacy;
pub(crate) mod v4;

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
