//! The general lobby's memory budget over loopback (docs/protocols/general-lobby.md, "What
//! the driver does"): every connection's send queue and partial frame share
//! `--lobby-memory-budget`; when it is full the connection holding the most is dropped
//! (`general_dropped_total{memory_budget}`), never a reader, and a frame that declares a large
//! length holds only the bytes that came.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use lobbyd::net::ServerHandle;
use lobbyd::wire::general::{code, ClientRepr, ServerRepr, HEADER_LEN};

use super::client::*;
use crate::common::{eventually, snapshot, REPLY_WAIT};

/// GAME_MESSAGE app code of the payload messages.
const DATA: u32 = 1;
/// GAME_MESSAGE app code that ends the stream.
const END: u32 = 2;
/// Body size of each payload message.
const BODY: usize = 60_000;
/// How many payload messages a reader may be behind the sender: 120 kB, which the kernel
/// buffers take, so a reader never holds a large send queue (it would rightly be dropped).
const WINDOW: u32 = 2;
/// The budget of the tests: under the 1 MiB per-connection cap, so a member that does not
/// read meets the budget first.
const BUDGET: usize = 768 * 1024;

/// What one reader saw.
struct Seen {
    /// Payload messages, each checked intact and in order.
    data: u32,
    /// Members seen going away, in order.
    away: Vec<i32>,
    client: Client,
}

/// Reads `client`'s relays until END, or until `stop_after` payload messages (then it stops
/// reading and hands the client back, still connected), publishing the count in `progress`.
fn read_relays(mut client: Client, stop_after: u32, progress: Arc<AtomicU32>) -> Seen {
    let (mut data, mut away) = (0, Vec::new());
    while data < stop_after {
        let reply = client
            .recv_within(Duration::from_secs(30))
            .expect("relay traffic");
        match reply.repr() {
            ServerRepr::GameMessage {
                game: 1,
                app_code: DATA,
                body,
                ..
            } => {
                assert_eq!(body.len(), BODY, "message {data} intact");
                assert_eq!(body[..4], data.to_le_bytes(), "message order");
                data += 1;
                progress.store(data, Ordering::Release);
            }
            ServerRepr::GameMessage {
                game: 1,
                app_code: END,
                ..
            } => break,
            ServerRepr::MemberInfo { id, flags, .. } if flags & AWAY != 0 => away.push(id),
            _ => panic!("{}: unexpected {reply:?}", client.name),
        }
    }
    Seen { data, away, client }
}

fn memory_drops(server: &ServerHandle) -> Option<u64> {
    snapshot(server).counter("general_dropped_total", "memory_budget")
}

/// Two members stop reading a game's flood, carol from the start and dave after ten
/// messages; the lobby's budget fills before either reaches its own cap: carol, who holds
/// the most, is dropped first, then dave once the budget fills again, while alice and bob,
/// who read, get every message and see them go in that order.
#[test]
fn non_readers_are_dropped_largest_first_while_readers_keep_receiving() {
    let (server, addr) = start_lobby(|c| {
        c.general.memory_budget = BUDGET;
        let core = &mut c.general.core;
        core.max_frame = 128 * 1024;
        core.frame_rate = 100_000;
        core.frame_burst = 100_000;
        core.auto_approve = true;
        core.resume_grace = Duration::from_secs(30);
    });
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let mut carol = Client::enter(addr, "carol", &mut [&mut alice, &mut bob]);
    let mut dave = Client::enter(addr, "dave", &mut [&mut alice, &mut bob, &mut carol]);
    let mut game = Game::new(1, &alice, 4, "flood");
    alice.send(game.create());
    let everyone = &mut [&mut alice, &mut bob, &mut carol, &mut dave];
    expect_all(everyone, &game.info());
    for joiner in 1..4 {
        join_auto(everyone, joiner, &mut game, joiner as i32);
    }
    let (carol_id, dave_id) = (carol.id, dave.id);

    let progress: Vec<Arc<AtomicU32>> = (0..3).map(|_| Arc::new(AtomicU32::new(0))).collect();
    let readers: Vec<_> = [(alice.try_clone(), u32::MAX), (bob, u32::MAX), (dave, 10)]
        .into_iter()
        .zip(&progress)
        .map(|((client, stop_after), p)| {
            let p = Arc::clone(p);
            thread::spawn(move || read_relays(client, stop_after, p))
        })
        .collect();
    let mut send = |seq: u32, app_code: u32, body: &[u8]| {
        let deadline = Instant::now() + Duration::from_secs(30);
        // Alice and bob never fall a window behind (on a busy machine a reader would
        // otherwise rightly hold the most).
        while progress[..2]
            .iter()
            .any(|p| p.load(Ordering::Acquire) + WINDOW <= seq)
        {
            assert!(Instant::now() < deadline, "a reader stalled before {seq}");
            thread::sleep(Duration::from_millis(1));
        }
        alice.send(ClientRepr::ToAll {
            game: 1,
            app_code,
            body,
        });
    };
    let payload = |seq: u32| {
        let mut body = seq.to_le_bytes().to_vec();
        body.resize(BODY, seq as u8);
        body
    };
    let mut sent = 0u32;
    while memory_drops(&server) != Some(2) {
        assert!(sent < 1_000, "not both dropped after {sent} messages");
        send(sent, DATA, &payload(sent));
        sent += 1;
    }
    send(sent, DATA, &payload(sent));
    sent += 1;
    send(sent, END, b"");
    let mut seen: Vec<Seen> = readers
        .into_iter()
        .map(|r| r.join().expect("reader thread"))
        .collect();
    let dave_seen = seen.pop().expect("dave");
    assert_eq!(dave_seen.data, 10);
    for reader in &seen {
        assert_eq!(
            reader.data, sent,
            "{} got every message",
            reader.client.name
        );
        assert_eq!(
            reader.away,
            [carol_id, dave_id],
            "{} saw the largest holder go first",
            reader.client.name
        );
    }
    carol.drain_until_closed(Duration::from_secs(30));
    let mut dave = dave_seen.client;
    dave.drain_until_closed(Duration::from_secs(30));
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("general_dropped_total", "slow_reader"),
        Some(0)
    );
    let general = snap.general.expect("general snapshot");
    assert!(general.buffered_peak <= BUDGET, "{}", general.buffered_peak);
    assert_eq!((general.members, general.members_away), (4, 2));
}

/// A frame header declaring `declared` payload bytes, then `sent` of them.
fn unfinished_frame(declared: usize, sent: usize) -> Vec<u8> {
    let mut bytes = code::CHAT.to_le_bytes().to_vec();
    bytes.extend_from_slice(&(declared as u32).to_le_bytes());
    assert_eq!(bytes.len(), HEADER_LEN);
    bytes.resize(HEADER_LEN + sent, b'x');
    bytes
}

/// A frame declaring 1 MiB holds only what came; when a second unfinished frame does not fit
/// the budget, the connection holding the larger one is dropped, the other keeps its bytes,
/// and a member that sends whole frames is served throughout.
#[test]
fn unfinished_frames_hold_what_came_and_the_largest_goes_when_the_budget_is_full() {
    let (server, addr) = start_lobby(|c| {
        c.general.memory_budget = BUDGET;
        c.general.core.max_frame = 1024 * 1024;
    });
    let mut member = Client::enter(addr, "member", &mut []);
    let buffered = |server: &ServerHandle| {
        snapshot(server)
            .general
            .expect("general snapshot")
            .buffered_bytes
    };

    let mut big = Client::greeted(addr);
    big.send_raw(&unfinished_frame(1024 * 1024, 400 * 1024));
    eventually(&server, REPLY_WAIT, |s| {
        s.general
            .as_ref()
            .is_some_and(|g| g.buffered_bytes >= 400 * 1024)
    });
    let held = buffered(&server);
    assert!(
        held < 400 * 1024 * 5 / 4 + 4096,
        "a frame declaring 1 MiB with 400 KiB sent holds {held} bytes"
    );
    member.send(ClientRepr::Ping { payload: b"one" });
    member.expect(&ServerRepr::Pong { payload: b"one" });

    // 400 + 300 KiB plus their slack do not fit 768 KiB: the larger holder goes.
    let mut small = Client::greeted(addr);
    small.send_raw(&unfinished_frame(1024 * 1024, 300 * 1024));
    assert!(big.expect_closed().is_empty(), "closed without a word");
    let snap = eventually(&server, REPLY_WAIT, |s| {
        s.general
            .as_ref()
            .is_some_and(|g| g.buffered_bytes >= 300 * 1024)
    });
    assert_eq!(
        snap.counter("general_dropped_total", "memory_budget"),
        Some(1)
    );
    let general = snap.general.expect("general snapshot");
    assert!(general.buffered_bytes < 300 * 1024 * 5 / 4 + 4096);
    assert!(general.buffered_peak <= BUDGET, "{}", general.buffered_peak);
    assert!(
        small.recv_within(Duration::from_millis(300)).is_none(),
        "the smaller holder stays"
    );
    member.send(ClientRepr::Ping { payload: b"two" });
    member.expect(&ServerRepr::Pong { payload: b"two" });
    assert_eq!(
        snapshot(&server).counter("general_dropped_total", "memory_budget"),
        Some(1)
    );
}
