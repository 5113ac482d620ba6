//! The upstream R-Type client's TCP dialect on the TCP lobby's own port, over real loopback
//! sockets (`docs/protocols/tcp-lobby-upstream.md`): rooms, then the party in that dialect, an
//! RFC client beside it unaffected, a party that never mixes the two, and bad frames counted.
//! Frames are laid out by hand here from the documented bytes, not with the server's emitters.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::common::tcp_client::{self, start_with, tcp_config};
use crate::common::{snapshot, REPLY_WAIT, SILENCE_WAIT};
use lobbyd::config::Config;
use lobbyd::rtype::{CloseCause, Violation};
use lobbyd::wire::tcp_upstream::{next_frame_max, Next, MAX_LEN};

/// A frame of this dialect: `N` u32 LE (type byte plus payload), type, payload.
fn up(packet_type: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = ((payload.len() + 1) as u32).to_le_bytes().to_vec();
    out.push(packet_type);
    out.extend_from_slice(payload);
    out
}

fn name32(name: &str) -> [u8; 32] {
    tcp_client::name_bytes(name)
}

fn record(id: u32, name: &str, players: u8, max: u8, in_game: bool) -> Vec<u8> {
    let mut out = id.to_le_bytes().to_vec();
    out.extend_from_slice(&name32(name));
    out.extend_from_slice(&[players, max, u8::from(in_game)]);
    out
}

fn player_join(number: u8, hash: u64, name: &str) -> Vec<u8> {
    let mut payload = vec![number];
    payload.extend_from_slice(&hash.to_le_bytes());
    payload.extend_from_slice(&name32(name));
    up(0x12, &payload)
}

/// A raw client of this dialect.
struct UpClient {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl UpClient {
    fn connect(addr: SocketAddr) -> UpClient {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).unwrap();
        UpClient {
            stream,
            buf: Vec::new(),
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// The next whole frame within `wait`; `None` on silence or close.
    fn recv_within(&mut self, wait: Duration) -> Option<Vec<u8>> {
        let deadline = Instant::now() + wait;
        loop {
            if let Next::Frame { consumed, .. } = next_frame_max(&self.buf, MAX_LEN) {
                return Some(self.buf.drain(..consumed).collect());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            self.stream.set_read_timeout(Some(left)).unwrap();
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) => {}
                Err(_) => return None,
            }
        }
    }

    fn recv(&mut self) -> Vec<u8> {
        self.recv_within(REPLY_WAIT)
            .unwrap_or_else(|| panic!("a frame; have {:02x?}", self.buf))
    }

    fn expect(&mut self, bytes: &[u8]) {
        assert_eq!(self.recv(), bytes);
    }

    fn assert_silent(&mut self) {
        if let Some(frame) = self.recv_within(SILENCE_WAIT) {
            panic!("unexpected frame {frame:02x?}");
        }
    }

    /// Waits for the server to close the connection.
    fn assert_closed(&mut self) {
        self.stream.set_read_timeout(Some(REPLY_WAIT)).unwrap();
        let mut chunk = [0u8; 256];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    panic!("still open")
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// CREATE_ROOM_REQ; returns the new room's id from CREATE_ROOM_ACK.
    fn create(&mut self, name: &str) -> u32 {
        self.send(&up(0x03, &name32(name)));
        let ack = self.recv();
        assert_eq!(&ack[..6], &[6, 0, 0, 0, 0x04, 0x00], "{ack:02x?}");
        u32::from_le_bytes(ack[6..10].try_into().unwrap())
    }

    fn join(&mut self, room: u32) -> Vec<u8> {
        self.send(&up(0x05, &room.to_le_bytes()));
        self.recv()
    }

    /// CONNECT_REQ; returns (hash, number) from the 15-byte CONNECT_ACK.
    fn connect_as(&mut self, name: &str) -> (u64, u8) {
        self.send(&up(0x10, &name32(name)));
        let ack = self.recv();
        assert_eq!(ack.len(), 15, "{ack:02x?}");
        assert_eq!(&ack[..6], &[0x0B, 0, 0, 0, 0x11, 0x00], "{ack:02x?}");
        (u64::from_le_bytes(ack[6..14].try_into().unwrap()), ack[14])
    }
}

fn dialect_config() -> Config {
    Config {
        countdown: Duration::from_secs(5),
        countdown_tick: Duration::from_millis(100),
        max_violations: 5,
        ..tcp_config()
    }
}

#[test]
fn two_upstream_clients_list_create_join_ready_and_start_beside_an_rfc_party() {
    let (server, addr) = start_with(dialect_config());

    // An RFC client first, on the same port: its bytes and replies are the RFC's.
    let mut rfc = tcp_client::Client::connect(addr);
    let (rfc_hash, rfc_slot) = rfc.join("Rita");
    assert_eq!(rfc_slot, 1);
    rfc.expect(&tcp_client::player_join(1, rfc_hash, "Rita", false));

    // The real client's first frame, byte for byte: an empty list (RFC parties are not rooms).
    let mut alice = UpClient::connect(addr);
    alice.send(&[0x01, 0x00, 0x00, 0x00, 0x01]);
    alice.expect(&[0x02, 0x00, 0x00, 0x00, 0x02, 0x00]);
    let room = alice.create("probe");
    // The RFC party took the id before it; an upstream JOIN cannot reach it.
    let mut mixer = UpClient::connect(addr);
    assert_eq!(
        mixer.join(room - 1),
        up(0x06, &[0x02]),
        "an RFC party is no room"
    );

    // Bob lists: the room is there, empty (its creator is not in it before JOIN_ROOM).
    let mut bob = UpClient::connect(addr);
    bob.send(&up(0x01, &[]));
    let mut list = vec![1];
    list.extend_from_slice(&record(room, "probe", 0, 4, false));
    bob.expect(&up(0x02, &list));

    // Alice joins: JOIN_ROOM_ACK 0, and those not in a room hear ROOM_UPDATE.
    assert_eq!(alice.join(room), up(0x06, &[0x00]));
    let update = up(0x07, &record(room, "probe", 1, 4, false));
    bob.expect(&update);
    mixer.expect(&update);
    let (alice_hash, alice_number) = alice.connect_as("Alice");
    assert_eq!(alice_number, 1);
    alice.expect(&player_join(1, alice_hash, "Alice"));

    // Bob joins and connects: the roster first, then his own PLAYER_JOIN to everyone.
    assert_eq!(bob.join(room), up(0x06, &[0x00]));
    mixer.expect(&up(0x07, &record(room, "probe", 2, 4, false)));
    alice.assert_silent();
    let (bob_hash, bob_number) = bob.connect_as("Bob");
    assert_eq!(bob_number, 2);
    assert_ne!(bob_hash, alice_hash);
    bob.expect(&player_join(1, alice_hash, "Alice"));
    let bob_join = player_join(2, bob_hash, "Bob");
    bob.expect(&bob_join);
    alice.expect(&bob_join);

    // READY_REQ toggles, keyed by the sender's own hash; a foreign hash is ignored.
    alice.send(&up(0x13, &alice_hash.to_le_bytes()));
    alice.expect(&[0x02, 0, 0, 0, 0x14, 0x01]);
    bob.expect(&[0x02, 0, 0, 0, 0x14, 0x01]);
    bob.send(&up(0x13, &alice_hash.to_le_bytes()));
    bob.assert_silent();
    alice.assert_silent();

    // Everyone ready: the countdown starts by itself (no START_REQ, no --auto-start).
    bob.send(&up(0x13, &bob_hash.to_le_bytes()));
    for client in [&mut alice, &mut bob] {
        client.expect(&[0x02, 0, 0, 0, 0x14, 0x02]);
        client.expect(&[0x02, 0, 0, 0, 0x19, 0x05]);
    }
    // Bob un-readies during the countdown: PLAYER_READY, then COUNTDOWN 0 (cancelled).
    bob.send(&up(0x13, &bob_hash.to_le_bytes()));
    for client in [&mut alice, &mut bob] {
        let mut got = client.recv();
        // A second may have ticked before the toggle arrived.
        while got == [0x02, 0, 0, 0, 0x19, 0x04] {
            got = client.recv();
        }
        assert_eq!(got, [0x02, 0, 0, 0, 0x14, 0x02]);
        client.expect(&[0x02, 0, 0, 0, 0x19, 0x00]);
    }
    // Ready again: COUNTDOWN 5, 4, 3, 2, 1, then GAME_START with a seed and 60 ticks.
    bob.send(&up(0x13, &bob_hash.to_le_bytes()));
    let mut seeds = Vec::new();
    for client in [&mut alice, &mut bob] {
        client.expect(&[0x02, 0, 0, 0, 0x14, 0x02]);
        for second in (1..=5).rev() {
            client.expect(&[0x02, 0, 0, 0, 0x19, second]);
        }
        let start = client.recv();
        assert_eq!(start.len(), 11, "{start:02x?}");
        assert_eq!(&start[..5], &[0x07, 0, 0, 0, 0x16]);
        assert_eq!(&start[9..], &[0x3C, 0x00]);
        seeds.push(start[5..9].to_vec());
    }
    assert_eq!(seeds[0], seeds[1], "one seed per game");

    // The room now shows in game to those not in a room.
    mixer.send(&up(0x01, &[]));
    let mut list = vec![1];
    list.extend_from_slice(&record(room, "probe", 2, 4, true));
    mixer.expect(&up(0x02, &list));
    assert_eq!(mixer.join(room), up(0x06, &[0x03]));

    // The client's goodbye after GAME_START ends its lobby connection, nobody is told.
    alice.send(&up(0x17, &alice_hash.to_le_bytes()));
    alice.assert_closed();
    bob.assert_silent();

    // The RFC party never heard any of it.
    rfc.assert_silent();
    let snap = snapshot(&server);
    assert_eq!(snap.lobby.tcp.closes(CloseCause::Disconnect), 1);
    assert_eq!(snap.lobby.tcp.games_started, 1);
}

#[test]
fn bad_lengths_are_counted_violations_and_the_stream_goes_on() {
    let (server, addr) = start_with(Config {
        max_violations: 4,
        ..dialect_config()
    });
    let mut client = UpClient::connect(addr);
    client.send(&up(0x01, &[]));
    client.expect(&up(0x02, &[0]));
    // Length 0, then a 2000-byte body (over the longest client frame) skipped unread, then
    // a good LIST_ROOMS_REQ, answered.
    let mut bytes = vec![0, 0, 0, 0];
    bytes.extend_from_slice(&2000u32.to_le_bytes());
    bytes.extend(std::iter::repeat(0x01).take(2000));
    bytes.extend_from_slice(&up(0x01, &[]));
    client.send(&bytes);
    client.expect(&up(0x02, &[0]));
    // A party message before JOIN_ROOM: out of order, counted, ignored.
    client.send(&up(0x10, &name32("Early")));
    client.assert_silent();
    // An RFC CONNECT_REQ's bytes in this dialect's stream: a bad length, the fourth
    // violation, which closes the connection.
    client.send(&tcp_client::connect_req("Rita"));
    client.assert_closed();
    let snap = snapshot(&server);
    let tcp = &snap.lobby.tcp;
    assert_eq!(tcp.violations_of(Violation::BadLength), 3);
    assert_eq!(tcp.violations_of(Violation::NotConnected), 1);
    assert_eq!(tcp.closes(CloseCause::Violations), 1);
}
