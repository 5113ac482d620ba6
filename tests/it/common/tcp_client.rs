//! A raw R-Type TCP lobby client for the loopback tests (`tcp_lobby.rs`, `tcp_lobby_dos.rs`):
//! frames laid out by hand, not with the server's own emitters, and a client that reads them
//! back with deadlines (`crate::common::tcp_client`).
#![allow(dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::common::{start, test_config, REPLY_WAIT, SILENCE_WAIT};
use lobbyd::config::Config;
use lobbyd::net::ServerHandle;
use lobbyd::wire::tcp_lobby::{next_frame_max, Next, MAX_SERVER_PAYLOAD};

/// A TCP lobby configuration for tests: loopback, OS-chosen ports, no per-IP rate limit worth
/// the name (every test client comes from 127.0.0.1), a short countdown.
pub fn tcp_config() -> Config {
    Config {
        tcp_port: Some(0),
        udp_port: None,
        conn_rate: 10_000,
        countdown: Duration::from_secs(1),
        countdown_tick: Duration::from_millis(100),
        ..test_config()
    }
}

/// Starts a server with `config` and returns it with its TCP lobby's address.
pub fn start_with(config: Config) -> (ServerHandle, SocketAddr) {
    let server = start(config);
    let addr = server.tcp_lobby_addr().expect("tcp lobby enabled");
    (server, addr)
}

pub const CONNECT_REQ: u8 = 0x10;
pub const CONNECT_ACK: u8 = 0x11;
pub const PLAYER_JOIN: u8 = 0x12;
pub const READY_REQ: u8 = 0x13;
pub const PLAYER_READY: u8 = 0x14;
pub const START_REQ: u8 = 0x15;
pub const GAME_START: u8 = 0x16;
pub const DISCONNECT: u8 = 0x17;
pub const PLAYER_LEFT: u8 = 0x18;
pub const COUNTDOWN: u8 = 0x19;
pub const ERROR_MSG: u8 = 0x1F;

pub fn frame(packet_type: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![packet_type];
    out.extend_from_slice(&(payload.len() as u16).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

pub fn name_bytes(name: &str) -> [u8; 32] {
    let mut field = [0u8; 32];
    field[..name.len()].copy_from_slice(name.as_bytes());
    field
}

pub fn connect_req(name: &str) -> Vec<u8> {
    frame(CONNECT_REQ, &name_bytes(name))
}

pub fn player_join(slot: u8, hash: u64, name: &str, ready: bool) -> Vec<u8> {
    let mut payload = vec![slot];
    payload.extend_from_slice(&hash.to_le_bytes());
    payload.extend_from_slice(&name_bytes(name));
    payload.push(u8::from(ready));
    frame(PLAYER_JOIN, &payload)
}

pub fn error_msg(code: u8, text: &str) -> Vec<u8> {
    let mut payload = vec![code];
    payload.extend_from_slice(text.as_bytes());
    payload.push(0);
    frame(ERROR_MSG, &payload)
}

/// What one read brought.
pub enum Fill {
    Data,
    Closed,
    Timeout,
}

/// A raw TCP lobby client.
pub struct Client {
    pub stream: TcpStream,
    pub buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).unwrap();
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// Reads once more from the socket before `deadline`.
    pub fn fill(&mut self, deadline: Instant) -> Fill {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Fill::Timeout;
        }
        self.stream.set_read_timeout(Some(left)).unwrap();
        let mut chunk = [0u8; 4096];
        match self.stream.read(&mut chunk) {
            Ok(0) => Fill::Closed,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Fill::Data
            }
            // Interrupted: a signal, or the process stopped and continued (a read with a
            // timeout is not restarted); the caller reads again until its deadline.
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                Fill::Data
            }
            Err(_) => Fill::Closed,
        }
    }

    /// Takes the next whole frame out of what has been read, if there is one.
    pub fn take_frame(&mut self) -> Option<Vec<u8>> {
        match next_frame_max(&self.buf, MAX_SERVER_PAYLOAD) {
            Next::Frame { consumed, .. } => Some(self.buf.drain(..consumed).collect()),
            _ => None,
        }
    }

    /// The next whole frame within `wait`, or `None` on silence; panics on close.
    pub fn recv_within(&mut self, wait: Duration) -> Option<Vec<u8>> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(frame) = self.take_frame() {
                return Some(frame);
            }
            match self.fill(deadline) {
                Fill::Data => {}
                Fill::Timeout => return None,
                Fill::Closed => panic!("closed while waiting for a frame; have {:02x?}", self.buf),
            }
        }
    }

    pub fn recv(&mut self) -> Vec<u8> {
        self.recv_within(REPLY_WAIT).expect("a frame")
    }

    pub fn expect(&mut self, bytes: &[u8]) {
        assert_eq!(self.recv(), bytes);
    }

    pub fn assert_silent(&mut self) {
        if let Some(frame) = self.recv_within(SILENCE_WAIT) {
            panic!("unexpected frame {frame:02x?}");
        }
    }

    /// Waits for the server to close the connection (EOF or reset); returns the frames that
    /// came before the close.
    pub fn closed_within(&mut self, wait: Duration) -> Result<Vec<Vec<u8>>, String> {
        let deadline = Instant::now() + wait;
        let mut frames = Vec::new();
        loop {
            while let Some(frame) = self.take_frame() {
                frames.push(frame);
            }
            match self.fill(deadline) {
                Fill::Data => {}
                Fill::Timeout => return Err(format!("still open; got {frames:02x?}")),
                Fill::Closed => return Ok(frames),
            }
        }
    }

    /// CONNECT_REQ and its CONNECT_ACK: returns (hash, slot).
    pub fn join(&mut self, name: &str) -> (u64, u8) {
        self.send(&connect_req(name));
        let ack = self.recv();
        assert_eq!(&ack[..3], &[CONNECT_ACK, 9, 0], "{ack:02x?}");
        let hash = u64::from_le_bytes(ack[3..11].try_into().unwrap());
        (hash, ack[11])
    }
}

/// Players joined in order; each newcomer checks the roster it is sent and everyone checks
/// the newcomer's PLAYER_JOIN. Returns the clients and their hashes.
pub fn party(addr: SocketAddr, names: &[&str]) -> (Vec<Client>, Vec<u64>) {
    let mut clients: Vec<Client> = Vec::new();
    let mut hashes = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let mut client = Client::connect(addr);
        let (hash, slot) = client.join(name);
        assert_eq!(slot as usize, i + 1, "lowest free slot");
        assert_ne!(hash, 0);
        assert!(!hashes.contains(&hash), "hash reused");
        for (j, other) in names[..i].iter().enumerate() {
            client.expect(&player_join(j as u8 + 1, hashes[j], other, false));
        }
        let own = player_join(slot, hash, name, false);
        client.expect(&own);
        for other in clients.iter_mut() {
            other.expect(&own);
        }
        clients.push(client);
        hashes.push(hash);
    }
    (clients, hashes)
}

pub fn ready_all(clients: &mut [Client]) {
    for i in 0..clients.len() {
        clients[i].send(&frame(READY_REQ, &[1]));
        let expected = frame(PLAYER_READY, &[i as u8 + 1, 1]);
        for client in clients.iter_mut() {
            client.expect(&expected);
        }
    }
}
