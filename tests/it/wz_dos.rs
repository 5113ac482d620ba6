//! Hostile clients against the Warzone 2100 master server over loopback (the handshake-deadline
//! rule on this listener): a connection that has not completed a registration (legacy) or a
//! first request (v4) within `--handshake-timeout` is closed whatever it sends, and at
//! `--wz-max-conns` the oldest such connection makes room for a newcomer
//! (`docs/protocols/wz-lobby.md`, "Lifetime and timers" and "Serving"); and (defect 4) a v4
//! login while another process holds the account database's write lock never stalls the
//! event loop: the lookup runs on the login worker, which answers "busy" after its short
//! busy timeout (`docs/protocols/wz-v4.md`, login).

use crate::common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use lobbyd::accounts::worker::LOOKUP_BUSY;
use lobbyd::accounts::LoginPolicy;
use lobbyd::config::WzSettings;
use lobbyd::net::ServerHandle;
use lobbyd::wire::udp_lobby::{Reply, ReplyRepr, Request, RequestRepr};

/// The default `--handshake-timeout`.
const HANDSHAKE: Duration = Duration::from_secs(5);
/// A v4 connection's opening: `version\0` and the big-endian version 4.
const V4_HANDSHAKE: &[u8] = b"version\0\0\0\0\x04";

fn start_wz(tweak: impl FnOnce(&mut WzSettings)) -> (ServerHandle, SocketAddr) {
    let mut config = test_config();
    config.udp_port = None;
    config.wz = WzSettings {
        port: Some(0),
        check_reachable: false,
        login: lobbyd::accounts::LoginPolicy::Off,
        ..WzSettings::default()
    };
    tweak(&mut config.wz);
    let server = start(config);
    let addr = server.wz_addr().expect("warzone listener enabled");
    (server, addr)
}

fn counter(server: &ServerHandle, name: &str, label: &str) -> u64 {
    snapshot(server)
        .counters
        .iter()
        .find(|(n, l, _)| *n == name && *l == label)
        .map_or_else(|| panic!("no counter {name}{{{label}}}"), |(_, _, v)| *v)
}

/// One v4 frame: a big-endian u32 length, then the body.
fn v4_frame(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// A raw master-server connection that notes when the server closed it.
struct Peer {
    stream: TcpStream,
    opened: Instant,
    closed: Option<Duration>,
}

impl Peer {
    fn open(addr: SocketAddr, first: &[u8]) -> Peer {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream.write_all(first).expect("first bytes");
        stream.set_nonblocking(true).unwrap();
        Peer {
            stream,
            opened: Instant::now(),
            closed: None,
        }
    }

    /// Sends `bytes` (while open) and reads away whatever came, noting a close.
    fn poke(&mut self, bytes: &[u8]) {
        if self.closed.is_some() {
            return;
        }
        let _ = self.stream.write_all(bytes);
        let mut buf = [0u8; 4096];
        loop {
            match self.stream.read(&mut buf) {
                Ok(n) if n > 0 => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                _ => {
                    self.closed = Some(self.opened.elapsed());
                    return;
                }
            }
        }
    }

    /// A v4 request answered within [`REPLY_WAIT`]; returns the response body.
    fn call(&mut self, body: &[u8]) -> Vec<u8> {
        self.stream.set_nonblocking(false).unwrap();
        self.stream.set_read_timeout(Some(REPLY_WAIT)).unwrap();
        self.stream.write_all(&v4_frame(body)).expect("request");
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).expect("response length");
        let mut response = vec![0u8; u32::from_be_bytes(len) as usize];
        self.stream
            .read_exact(&mut response)
            .expect("response body");
        self.stream.set_nonblocking(true).unwrap();
        response
    }
}

fn is_ok_list(response: &[u8]) -> bool {
    let text = String::from_utf8_lossy(response);
    text.contains("\"status\":0") || text.contains("\"status\": 0")
}

/// A legacy peer repeating `keep` before registering, and a v4 peer sending frames that are
/// all answered with errors, are closed at the handshake deadline; a v4 peer whose first
/// request succeeded (a `list`) stays.
#[test]
fn connections_without_a_completed_first_step_are_closed_at_the_handshake_deadline() {
    let (server, addr) = start_wz(|_| {});
    let mut keeper = Peer::open(addr, b"keep\0");
    let mut v4_garbage = Peer::open(addr, V4_HANDSHAKE);
    let mut v4_lister = Peer::open(addr, V4_HANDSHAKE);
    assert!(is_ok_list(
        &v4_lister.call(br#"{"method": "list", "id": 1}"#)
    ));

    let deadline = Instant::now() + HANDSHAKE + Duration::from_secs(3);
    while (keeper.closed.is_none() || v4_garbage.closed.is_none()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        keeper.poke(b"keep\0");
        v4_garbage.poke(&v4_frame(b"not a request"));
        v4_lister.poke(&[]);
    }
    for (what, peer) in [("legacy keep", &keeper), ("v4 garbage", &v4_garbage)] {
        let at = peer.closed.unwrap_or_else(|| panic!("{what} still open"));
        assert!(
            at >= HANDSHAKE - Duration::from_millis(500) && at < HANDSHAKE + Duration::from_secs(2),
            "{what} closed {at:?} after connecting"
        );
    }
    assert_eq!(v4_lister.closed, None);
    assert!(is_ok_list(
        &v4_lister.call(br#"{"method": "list", "id": 2}"#)
    ));
    assert_eq!(
        counter(&server, "wz_protocol_errors_total", "idle_timeout"),
        2
    );
}

/// At `--wz-max-conns` the oldest connection that has not completed its first step is closed
/// to make room; a connection that has (a v4 `list` answered) is never evicted.
#[test]
fn at_max_conns_the_oldest_unregistered_connection_makes_room() {
    let (server, addr) = start_wz(|w| w.max_conns = 3);
    let mut settled = Peer::open(addr, V4_HANDSHAKE);
    assert!(is_ok_list(&settled.call(br#"{"method": "list", "id": 1}"#)));
    let mut oldest = Peer::open(addr, b"");
    std::thread::sleep(Duration::from_millis(50));
    let mut younger = Peer::open(addr, b"");
    eventually(&server, REPLY_WAIT, |s| {
        s.counters.contains(&("wz_accepted_total", "", 3))
    });
    let mut newcomer = Peer::open(addr, V4_HANDSHAKE);
    assert!(is_ok_list(
        &newcomer.call(br#"{"method": "list", "id": 1}"#)
    ));
    let deadline = Instant::now() + REPLY_WAIT;
    while oldest.closed.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        oldest.poke(&[]);
    }
    assert!(oldest.closed.is_some(), "the oldest was not evicted");
    younger.poke(&[]);
    settled.poke(&[]);
    assert_eq!((younger.closed, settled.closed), (None, None));
    assert_eq!(counter(&server, "wz_evicted_total", ""), 1);
}

/// Reads one v4 response frame (length, then body) within `wait`.
fn read_v4_response(stream: &mut TcpStream, wait: Duration) -> Vec<u8> {
    stream.set_nonblocking(false).unwrap();
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).expect("response length");
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).expect("response body");
    body
}

/// True when bytes wait on `stream` (a response has come), without consuming them.
fn has_bytes(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let ready = matches!(stream.peek(&mut byte), Ok(n) if n > 0);
    ready
}

/// A locked account database: while another connection holds the account database's write lock
/// (`BEGIN EXCLUSIVE`: an admin transaction, a VACUUM, a backup), v4 logins wait on the login
/// worker, not on the event loop: a UDP LIST_ROOMS sent meanwhile is answered at once (before
/// the fix it took 5 s, SQLite's default busy timeout, on the loop thread), and each login
/// gets -403 "Server busy, try again" after the worker's short busy timeout. Once the lock is
/// released a login succeeds.
#[test]
fn a_locked_account_database_never_stalls_the_loop() {
    /// Logins queued on the one worker: each waits out the busy timeout in turn, so the
    /// window in which the loop must keep serving lasts LOGINS x LOOKUP_BUSY.
    const LOGINS: usize = 4;
    let (db, _) = TempDb::with_users("locked", &[("ann", "pw")]);
    let mut config = test_config();
    config.wz = WzSettings {
        port: Some(0),
        check_reachable: false,
        login: LoginPolicy::Optional,
        db: db.0.clone(),
        ..WzSettings::default()
    };
    let server = start(config);
    let wz = server.wz_addr().expect("warzone listener enabled");
    let lobby = server.udp_lobby_addr().expect("udp lobby enabled");

    let holder = rusqlite::Connection::open(&db.0).expect("open the database");
    holder
        .execute_batch("PRAGMA journal_mode=DELETE; BEGIN EXCLUSIVE;")
        .expect("take the write lock");

    let login = br#"{"method": "login", "params": {"username": "ann", "password": "pw"}, "id": 1}"#;
    let sent = Instant::now();
    let mut logins: Vec<TcpStream> = (0..LOGINS)
        .map(|_| {
            let mut peer = Peer::open(wz, V4_HANDSHAKE);
            peer.stream.write_all(&v4_frame(login)).expect("login");
            peer.stream
        })
        .collect();

    // Let the loop read the logins and hand them to the worker, then ask the UDP lobby.
    std::thread::sleep(Duration::from_millis(50));
    let player = UdpClient::new();
    let mut request = [0u8; 16];
    let len = RequestRepr {
        seq: 7,
        request: Request::ListRooms,
    }
    .emit(&mut request);
    let asked = Instant::now();
    player.send(lobby, &request[..len]);
    let (reply, _) = player
        .recv_within(Duration::from_secs(1))
        .expect("LIST_ROOMS answered within 1 s while the database is locked");
    let list_took = asked.elapsed();
    let answered_logins = logins.iter().filter(|s| has_bytes(s)).count();
    assert!(matches!(
        ReplyRepr::parse(&reply),
        Ok(ReplyRepr {
            seq: 7,
            reply: Reply::RoomList(_)
        })
    ));
    // The loop answered while logins were still waiting on the lock: it was not the one
    // waiting (were it, every login would have been answered before it read the datagram).
    assert!(
        answered_logins < LOGINS,
        "LIST_ROOMS ({list_took:?}) came after every login was answered"
    );

    for stream in &mut logins {
        let response = read_v4_response(stream, REPLY_WAIT);
        let text = String::from_utf8_lossy(&response);
        assert!(
            text.contains("-403") && text.contains("Server busy, try again"),
            "{text}"
        );
    }
    let logins_took = sent.elapsed();
    assert!(
        logins_took >= LOOKUP_BUSY,
        "busy answered after {logins_took:?}, before the busy timeout"
    );
    // Each answered after the worker's short busy timeout, not SQLite's default 5 s (then
    // the four would take 20 s); the bound leaves room for a loaded machine.
    assert!(
        logins_took < Duration::from_secs(5) * LOGINS as u32 / 2,
        "{LOGINS} busy answers took {logins_took:?}"
    );

    holder.execute_batch("COMMIT;").expect("release the lock");
    let mut again = Peer::open(wz, V4_HANDSHAKE);
    let response = String::from_utf8_lossy(&again.call(login)).into_owned();
    assert!(
        is_ok_list(response.as_bytes()) && response.contains("sessionid"),
        "{response}"
    );
}

/// `--wz-memory-budget` of the budget test: far under one queue's 1 MiB cap, so a peer that
/// does not read meets the budget first.
const WZ_BUDGET: usize = 64 * 1024;
/// What Dave's queue holds at least before Carol starts: more than half the budget (with
/// room for a growth step), so whatever Carol holds when the budget is full is less.
const DAVE_HOLDS: usize = WZ_BUDGET / 2 + 4096;
/// A v4 `list` request (no games are listed, so each reply is a few dozen bytes).
const LIST: &[u8] = br#"{"method": "list", "id": 1}"#;

/// Writes `n` `list` requests in one go (a peer that does not read its replies).
fn flood_lists(stream: &mut TcpStream, n: usize) -> std::io::Result<()> {
    let one = v4_frame(LIST);
    stream.set_nonblocking(false)?;
    stream.write_all(&one.repeat(n))
}

/// Reads what `stream` was sent until the server closes it (EOF or reset) within `wait`;
/// returns the bytes read, or `None` when it is still open.
fn bytes_until_closed(stream: &mut TcpStream, wait: Duration) -> Option<usize> {
    stream.set_nonblocking(false).unwrap();
    let deadline = Instant::now() + wait;
    let mut total = 0;
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return Some(total),
            Ok(n) => total += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Some(total),
        }
    }
}

/// Reads the responses to `n` requests within `wait`, each one a successful `list`.
fn read_lists(stream: &mut TcpStream, n: usize, wait: Duration) {
    for i in 0..n {
        let body = read_v4_response(stream, wait);
        assert!(is_ok_list(&body), "response {i}: {body:02x?}");
    }
}

fn budget_drops(server: &ServerHandle) -> u64 {
    counter(server, "wz_memory_budget_drops_total", "")
}

fn buffered(server: &ServerHandle) -> usize {
    snapshot(server).wz.expect("wz runs").buffered_bytes
}

/// `--wz-memory-budget` holds every send queue together. Dave sends `list` after `list`
/// without reading until his queue holds over half the budget, then stops; Carol does the
/// same without stopping. When the budget is full for Carol's next reply it is Dave, holding
/// the most, who is dropped, not Carol (who then reads every reply she is owed and stays);
/// when Carol alone fills the budget she goes too. Alice, who reads her replies, is served
/// throughout, and each drop is counted.
#[test]
fn a_full_memory_budget_drops_the_largest_holder_first_and_readers_stay() {
    let (server, addr) = start_wz(|w| w.memory_budget = WZ_BUDGET);
    let mut alice = Peer::open(addr, V4_HANDSHAKE);
    assert!(is_ok_list(&alice.call(LIST)));
    let mut dave = Peer::open(addr, V4_HANDSHAKE);
    let mut carol = Peer::open(addr, V4_HANDSHAKE);

    // Dave's queue grows (once the kernel buffers are full) to over half the budget. Each
    // step is read and answered before the next (so his read buffer is empty when the gauge
    // is read).
    let deadline = Instant::now() + Duration::from_secs(30);
    let bytes_in = || counter(&server, "wz_bytes_in_total", "");
    while buffered(&server) < DAVE_HOLDS {
        assert!(Instant::now() < deadline, "dave's queue never grew");
        let until = bytes_in() + 50 * v4_frame(LIST).len() as u64;
        flood_lists(&mut dave.stream, 50).expect("dave's requests");
        while bytes_in() < until {
            assert!(Instant::now() < deadline, "dave's requests were not read");
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    assert_eq!(budget_drops(&server), 0);
    let dave_holds = buffered(&server);
    assert!(dave_holds < WZ_BUDGET, "{dave_holds}");

    // Carol floods in steps until the budget is full for her: Dave goes first.
    let mut carol_sent = 0;
    while budget_drops(&server) == 0 {
        assert!(Instant::now() < deadline, "the budget never filled");
        flood_lists(&mut carol.stream, 50).expect("carol's requests");
        carol_sent += 50;
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(budget_drops(&server), 1);
    let dave_got = bytes_until_closed(&mut dave.stream, REPLY_WAIT).expect("dave dropped");
    assert!(dave_got > 0);
    // Carol was not dropped: every reply she is owed comes, then she is still served.
    read_lists(&mut carol.stream, carol_sent, REPLY_WAIT);
    assert!(is_ok_list(&carol.call(LIST)));
    assert!(is_ok_list(&alice.call(LIST)));

    // Carol alone fills the budget now, and goes.
    while budget_drops(&server) == 1 {
        assert!(Instant::now() < deadline, "the budget never filled again");
        if flood_lists(&mut carol.stream, 50).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    eventually(&server, REPLY_WAIT, |s| {
        s.counter("wz_memory_budget_drops_total", "") == Some(2)
    });
    assert!(bytes_until_closed(&mut carol.stream, REPLY_WAIT).is_some());
    // Alice reads, so she was never the one to go.
    for _ in 0..3 {
        assert!(is_ok_list(&alice.call(LIST)));
    }
    alice.poke(&[]);
    assert_eq!(alice.closed, None);
    assert_eq!(budget_drops(&server), 2);
    assert_eq!(counter(&server, "wz_send_overflow_total", ""), 0);
}

/// The read buffers count against `--wz-memory-budget` too: a peer that sends most of a large
/// v4 frame and stops holds its bytes until the budget is full for another peer's, and then
/// it, holding the most, is dropped; the other keeps its connection, and a reader is served.
#[test]
fn half_sent_frames_count_against_the_memory_budget() {
    let (server, addr) = start_wz(|w| w.memory_budget = WZ_BUDGET);
    let mut alice = Peer::open(addr, V4_HANDSHAKE);
    assert!(is_ok_list(&alice.call(LIST)));
    // A frame that declares 60,000 bytes, of which 48,000 come (three quarters of the budget).
    let mut big = Peer::open(addr, V4_HANDSHAKE);
    let mut head = 60_000u32.to_be_bytes().to_vec();
    head.extend_from_slice(&[b' '; 48_000]);
    big.stream.set_nonblocking(false).unwrap();
    big.stream.write_all(&head).unwrap();
    let deadline = Instant::now() + REPLY_WAIT;
    while buffered(&server) < 48_000 {
        assert!(Instant::now() < deadline, "the frame was not buffered");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(budget_drops(&server), 0);
    // Another sends 24,000 bytes of its own: they do not fit beside the first.
    let mut small = Peer::open(addr, V4_HANDSHAKE);
    let mut head = 60_000u32.to_be_bytes().to_vec();
    head.extend_from_slice(&[b' '; 24_000]);
    small.stream.set_nonblocking(false).unwrap();
    small.stream.write_all(&head).unwrap();
    eventually(&server, REPLY_WAIT, |s| {
        s.counter("wz_memory_budget_drops_total", "") == Some(1)
    });
    assert!(bytes_until_closed(&mut big.stream, REPLY_WAIT).is_some());
    small.stream.set_nonblocking(true).unwrap();
    small.poke(&[]);
    assert_eq!(small.closed, None, "the smaller holder was dropped");
    assert!(is_ok_list(&alice.call(LIST)));
    assert_eq!(budget_drops(&server), 1);
}
