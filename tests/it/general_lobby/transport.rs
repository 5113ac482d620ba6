//! The general lobby's transport over loopback (docs/protocols/general-lobby.md, "Frames",
//! "Errors", "Transport"): frames split across reads or packed into one, malformed and
//! oversized frames, a slow reader dropped without slowing the others, the idle timeout, the
//! shutdown notice, and `/healthz` while shutdown waits for a connection to drain.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use lobbyd::wire::general::{code, ClientRepr, ErrorCode, ServerRepr, MAX_PING_PAYLOAD};

use super::client::*;
use crate::common::{eventually, snapshot, REPLY_WAIT};

#[test]
fn frames_may_arrive_in_pieces_or_several_at_once() {
    let (_server, addr) = start_lobby(|_| {});
    let mut alice = Client::enter(addr, "alice", &mut []);
    let chat = client_bytes(&ClientRepr::Chat {
        game: 0,
        text: "split in three",
    });
    let ping = client_bytes(&ClientRepr::Ping { payload: b"p" });
    let mut stream = chat.clone();
    stream.extend_from_slice(&ping);
    stream.extend_from_slice(&ping[..5]);
    // Cut inside the header, inside a parameter, and after a whole frame and a half.
    let (first, rest) = stream.split_at(3);
    let (second, third) = rest.split_at(12);
    for piece in [first, second, third] {
        alice.send_raw(piece);
        thread::sleep(Duration::from_millis(50));
    }
    alice.expect(&ServerRepr::ChatFrom {
        game: 0,
        member: alice.id,
        text: "split in three",
    });
    alice.expect(&ServerRepr::Pong { payload: b"p" });
    alice.send_raw(&ping[5..]);
    alice.expect(&ServerRepr::Pong { payload: b"p" });

    // More frames in one write than the server handles per readiness event (64), the last
    // one cut at the end of the write: all are answered, in order.
    let pings: Vec<Vec<u8>> = (0u32..150)
        .map(|n| {
            client_bytes(&ClientRepr::Ping {
                payload: &n.to_le_bytes(),
            })
        })
        .collect();
    let mut burst = pings.concat();
    let tail = burst.split_off(burst.len() - 4);
    alice.send_raw(&burst);
    thread::sleep(Duration::from_millis(50));
    alice.send_raw(&tail);
    for n in 0u32..150 {
        alice.expect(&ServerRepr::Pong {
            payload: &n.to_le_bytes(),
        });
    }
}

/// A client that sends its last request and shuts its sending side still gets the answer:
/// the server writes what is queued before it closes (the member goes away at once).
#[test]
fn a_half_closed_connection_still_gets_its_last_replies() {
    let (server, addr) = start_lobby(|_| {});
    let mut watcher = Client::enter(addr, "watcher", &mut []);
    let mut alice = Client::enter(addr, "alice", &mut [&mut watcher]);
    alice.send(ClientRepr::Ping { payload: b"last" });
    alice.finish_sending();
    let frames = alice.expect_closed();
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0].repr(), ServerRepr::Pong { payload: b"last" });
    // The others see alice away (resume grace) at once.
    let away = watcher.recv();
    assert!(
        matches!(away.repr(), ServerRepr::MemberInfo { id, flags, .. } if id == alice.id && flags & (1 << 16) != 0),
        "{away:?}"
    );
    drop(server);
}

/// At `--lobby-max-conns` a newcomer makes room by closing the oldest connection that has
/// not signed in (a crowd that never signs in cannot hold the lobby full); when
/// every connection is a signed-in member, newcomers wait until one leaves.
#[test]
fn at_the_connection_cap_the_oldest_guest_makes_room_then_newcomers_wait() {
    let (server, addr) = start_lobby(|c| c.general.max_conns = 2);
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut guest = Client::greeted(addr);
    // The cap is reached and nobody waits: nobody is evicted.
    assert!(guest.recv_within(Duration::from_millis(300)).is_none());
    let mut bob = Client::greeted(addr);
    guest.drain_until_closed(REPLY_WAIT);
    let snap = eventually(&server, REPLY_WAIT, |s| {
        s.counter("general_dropped_total", "evicted_guest") == Some(1)
    });
    assert_eq!(
        snap.counter("general_dropped_total", "evicted_guest"),
        Some(1)
    );
    bob.sign_in("bob", "", None);
    bob.read_sync();
    alice.recv(); // bob's MEMBER_INFO
                  // Both connections are members now: a newcomer waits in the backlog, unanswered...
    let mut carol = Client::connect(addr);
    assert!(carol.recv_within(Duration::from_millis(300)).is_none());
    // ...until a member leaves.
    alice.drop_connection();
    carol.expect_bytes(&golden(
        "01000000 10000000  03 0600 'lobbyd'  02 0400 01000000",
    ));
}

#[test]
fn connections_over_the_per_address_cap_or_rate_are_refused_at_accept() {
    let (server, addr) = start_lobby(|c| {
        c.general.max_conns_per_ip = 2;
        c.general.conn_rate = 4;
    });
    let first = Client::greeted(addr);
    let _second = Client::greeted(addr);
    // A third at once from the same address: closed without a word.
    let mut third = Client::connect(addr);
    assert!(third.expect_closed().is_empty());
    first.drop_connection();
    eventually(&server, REPLY_WAIT, |s| {
        s.general.as_ref().is_some_and(|g| g.connections == 1)
    });
    // A seat is free again, and this is the fourth connection of the minute.
    let _fourth = Client::greeted(addr);
    let mut fifth = Client::connect(addr);
    assert!(fifth.expect_closed().is_empty());
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("general_refused_total", "max_conns_per_ip"),
        Some(1)
    );
    assert_eq!(snap.counter("general_refused_total", "conn_rate"), Some(1));
    assert_eq!(snap.counter("general_accepted_total", ""), Some(3));
}

#[test]
fn malformed_frames_are_answered_error_2_or_14_and_counted() {
    let (server, addr) = start_lobby(|_| {});
    let mut alice = Client::enter(addr, "alice", &mut []);
    let cases = [
        (
            "20000000 07000000  01 0400 00000000",
            ErrorCode::Malformed,
            "parameter missing",
        ),
        (
            "20000000 12000000  01 0400 00000000  03 0100 'a'  02 0400 01000000",
            ErrorCode::Malformed,
            "unexpected extra parameter",
        ),
        (
            "20000000 0b000000  01 0400 00000000  04 0100 'a'",
            ErrorCode::Malformed,
            "parameter of the wrong kind",
        ),
        (
            "20000000 0a000000  01 0300 000000  03 0100 'a'",
            ErrorCode::Malformed,
            "parameter of the wrong size",
        ),
        (
            "20000000 0b000000  01 0400 00000000  03 0100 ff",
            ErrorCode::Malformed,
            "string parameter is not valid UTF-8",
        ),
        (
            "20000000 0b000000  01 0400 00000000  03 0500 'a'",
            ErrorCode::Malformed,
            "parameter runs past the end of the message",
        ),
        (
            "35000000 11000000  01 0400 01000000  02 0400 02000000  03 0000",
            ErrorCode::Malformed,
            "parameter value out of range",
        ),
        (
            "99000000 00000000",
            ErrorCode::UnknownCode,
            "unknown message code",
        ),
        (
            "31000000 00000000",
            ErrorCode::UnknownCode,
            "message code not allowed in this direction",
        ),
    ];
    for (frame, error, text) in cases {
        let bytes = golden(frame);
        let request = u32::from_le_bytes(bytes[..4].try_into().expect("a code"));
        alice.send_raw(&bytes);
        alice.expect_error(error, request, text);
    }
    // The connection is still served.
    alice.expect_quiet();
    let snap = snapshot(&server);
    for label in [
        "missing_param",
        "extra_param",
        "wrong_kind",
        "bad_size",
        "not_utf8",
        "param_truncated",
        "bad_value",
        "unknown_code",
        "wrong_direction",
    ] {
        assert_eq!(
            snap.counter("general_malformed_total", label),
            Some(1),
            "{label}"
        );
    }
    assert_eq!(snap.counter("general_refusals_total", "malformed"), Some(7));
    assert_eq!(
        snap.counter("general_refusals_total", "unknown_code"),
        Some(2)
    );
}

#[test]
fn an_oversized_frame_is_answered_error_11_and_the_connection_closed() {
    let (server, addr) = start_lobby(|c| c.general.core.max_frame = 512);
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    // Exactly at the limit is a frame (here one whose PING payload is too long).
    let at_limit = client_bytes(&ClientRepr::Ping { payload: &[7; 509] });
    assert_eq!(at_limit.len(), 8 + 512);
    alice.send_raw(&at_limit);
    alice.expect_error(
        ErrorCode::Malformed,
        code::PING,
        "parameter of the wrong size",
    );
    alice.expect_quiet();
    // One byte over: ERROR 11 naming the frame's code, then the close.
    let mut over = golden("20000000 01020000");
    over.extend_from_slice(&[b'x'; 513]);
    alice.send_raw(&over);
    alice.expect_last_bytes(&golden(
        "05000000 20000000  02 0400 0b000000  02 0400 20000000  03 0f00 'frame too large'",
    ));
    bob.expect(&member_info(alice.id, AWAY, "alice", "alice"));
    let snap = eventually(&server, REPLY_WAIT, |s| {
        s.counter("general_closed_total", "oversized") == Some(1)
    });
    assert_eq!(snap.counter("general_closed_total", "oversized"), Some(1));
    assert_eq!(
        snap.counter("general_refusals_total", "frame_too_large"),
        Some(1)
    );
}

/// GAME_MESSAGE app code of the slow-reader test's payload messages.
const DATA: u32 = 1;
/// GAME_MESSAGE app code that ends the slow-reader test's stream.
const END: u32 = 2;
/// Body size of each payload message.
const BODY: usize = 60_000;
/// How many payload messages a reader may be behind the sender: 480 kB, under the send
/// queue's bound, so only a member that does not read at all can pass it.
const WINDOW: u32 = 8;

/// The `seq`-th payload: its number, then bytes that depend on it.
fn body(seq: u32) -> Vec<u8> {
    let mut body = seq.to_le_bytes().to_vec();
    body.extend((4..BODY).map(|i| (i as u32 ^ seq) as u8));
    body
}

/// Reads `client`'s relays from `sender` until END, checking each arrives once, in order,
/// intact, and publishing how many came in `progress`; returns that count, whether `slow` was
/// seen going away, and the client (still connected).
fn count_relays(
    mut client: Client,
    sender: i32,
    slow: i32,
    progress: Arc<AtomicU32>,
) -> (u32, bool, Client) {
    let mut next = 0u32;
    let mut saw_away = false;
    loop {
        let reply = client
            .recv_within(Duration::from_secs(30))
            .expect("relay traffic");
        match reply.repr() {
            ServerRepr::GameMessage {
                game: 1,
                from,
                app_code: DATA,
                body: got,
            } if from == sender => {
                assert!(got == body(next), "message {next} arrived damaged");
                next += 1;
                progress.store(next, Ordering::Release);
            }
            ServerRepr::GameMessage {
                game: 1,
                app_code: END,
                ..
            } => return (next, saw_away, client),
            ServerRepr::MemberInfo { id, flags, .. } if id == slow && flags & AWAY != 0 => {
                saw_away = true;
            }
            _ => panic!("{}: unexpected {reply:?}", client.name),
        }
    }
}

#[test]
fn a_slow_reader_is_dropped_and_counted_while_readers_get_everything() {
    let (server, addr) = start_lobby(|c| {
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
    let mut game = Game::new(1, &alice, 3, "flood");
    alice.send(game.create());
    let everyone = &mut [&mut alice, &mut bob, &mut carol];
    expect_all(everyone, &game.info());
    join_auto(everyone, 1, &mut game, 1);
    join_auto(everyone, 2, &mut game, 2);
    carol.expect_quiet();

    // Alice floods the game (her own copies read on another thread); bob reads everything;
    // carol reads nothing. Alice never runs more than a window ahead of her two readers (on a
    // busy machine they would otherwise fall behind too, and rightly be dropped).
    let (alice_id, carol_id) = (alice.id, carol.id);
    let progress = [Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0))];
    let readers = [(alice.try_clone(), &progress[0]), (bob, &progress[1])].map(|(c, p)| {
        let p = Arc::clone(p);
        thread::spawn(move || count_relays(c, alice_id, carol_id, p))
    });
    let mut send = |seq: u32, app_code: u32, body: &[u8]| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while progress
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
    let dropped = |server: &lobbyd::net::ServerHandle| {
        snapshot(server).counter("general_dropped_total", "slow_reader")
    };
    let started = Instant::now();
    let mut sent = 0u32;
    while dropped(&server) != Some(1) {
        assert!(sent < 2_000, "carol not dropped after {sent} messages");
        for _ in 0..8 {
            send(sent, DATA, &body(sent));
            sent += 1;
        }
    }
    // The others keep getting every message after the drop, too.
    for _ in 0..8 {
        send(sent, DATA, &body(sent));
        sent += 1;
    }
    send(sent, END, b"");
    let readers = readers.map(|reader| {
        let (got, saw_away, client) = reader.join().expect("reader thread");
        assert_eq!(got, sent, "{} got every message", client.name);
        assert!(saw_away, "{} saw carol go away", client.name);
        client
    });
    eprintln!(
        "slow reader dropped after {sent} messages of {BODY} bytes in {:?}",
        started.elapsed()
    );
    carol.drain_until_closed(Duration::from_secs(30));
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("general_dropped_total", "slow_reader"),
        Some(1)
    );
    let general = snap.general.expect("general snapshot");
    assert_eq!((general.members, general.members_away), (3, 1));
    for mut reader in readers {
        reader.expect_quiet();
    }
}

#[test]
fn a_silent_member_is_dropped_after_the_idle_timeout() {
    let (server, addr) = start_lobby(|c| {
        c.general.core.idle_timeout = Duration::from_secs(1);
        // Alice stays away (not gone) for the rest of the test.
        c.general.core.resume_grace = Duration::from_secs(30);
    });
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    // Bob pings every 100 ms and stays; alice says nothing.
    let started = Instant::now();
    let mut saw_away = false;
    // At least 1.6 s (bob outlives the timeout by pinging), and until alice is seen away
    // (later on a loaded machine), at most 10 s.
    for n in 0u32.. {
        let elapsed = started.elapsed();
        if (saw_away && elapsed > Duration::from_millis(1600)) || elapsed > Duration::from_secs(10)
        {
            break;
        }
        let payload = n.to_le_bytes();
        bob.send(ClientRepr::Ping { payload: &payload });
        loop {
            let reply = bob.recv();
            match reply.repr() {
                ServerRepr::Pong { payload: got } if got == payload => break,
                ServerRepr::MemberInfo { id, flags, .. } if id == alice.id && flags == AWAY => {
                    saw_away = true;
                }
                _ => panic!("bob: unexpected {reply:?}"),
            }
        }
        thread::sleep(Duration::from_millis(100));
    }
    assert!(saw_away, "bob saw alice go away");
    alice.expect_last(&notice("idle timeout"));
    bob.expect_quiet();
    assert_eq!(
        snapshot(&server).counter("general_closed_total", "idle"),
        Some(1)
    );
}

#[test]
fn shutdown_tells_every_connection_before_closing_it() {
    let (server, addr) = start_lobby(|_| {});
    let mut alice = Client::enter(addr, "alice", &mut []);
    let mut bob = Client::enter(addr, "bob", &mut [&mut alice]);
    let mut guest = Client::greeted(addr);
    guest.expect_quiet();
    // The same path as SIGTERM.
    server.shutdown().expect("clean shutdown");
    let goodbye = golden(
        "05000000 25000000  02 0400 00000000  02 0400 00000000  03 1400 'server shutting down'",
    );
    for client in [&mut alice, &mut bob, &mut guest] {
        client.expect_last_bytes(&goodbye);
    }
}

/// `/healthz` answers 200 while the loop turns, and 503 from the moment shutdown begins
/// while the shutdown waits for a connection that does not read (its PONGs fill its socket,
/// then wait in its send queue); once the wait is over the status listener is closed.
#[test]
fn healthz_is_503_while_shutdown_waits_for_a_connection_to_drain() {
    const OK: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\
                      Connection: close\r\n\r\nok\n";
    const DOWN: &str = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n\
                        Content-Length: 14\r\nConnection: close\r\n\r\nshutting down\n";
    let (server, addr) = start_lobby(|c| {
        c.metrics = Some("127.0.0.1:0".parse().unwrap());
        // The test asks /healthz over and over.
        c.metrics_conn_rate = 1_000_000;
        let core = &mut c.general.core;
        core.frame_rate = 1_000_000;
        core.frame_burst = 1_000_000;
    });
    let metrics = server.metrics_addr().expect("metrics enabled");
    assert_eq!(healthz(metrics).expect("the endpoint answers"), OK);

    // A guest pings and never reads, from a socket with a small receive buffer, until the
    // server holds PONG bytes it cannot send (more than a partial PING waiting to be read,
    // far less than the send-queue cap that would drop it as a slow reader).
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    socket.set_recv_buffer_size(4096).expect("SO_RCVBUF");
    socket.connect(&addr.into()).expect("connect");
    let mut guest = std::net::TcpStream::from(socket);
    let ping = client_bytes(&ClientRepr::Ping {
        payload: &[0x5a; MAX_PING_PAYLOAD],
    });
    let batch = ping.repeat(256);
    let held = |server: &lobbyd::net::ServerHandle| {
        snapshot(server).general.map_or(0, |g| g.buffered_bytes)
    };
    let mut batches = 0;
    while held(&server) < 16 * 1024 {
        assert!(
            batches < 200,
            "nothing held after {batches} batches of 256 PINGs"
        );
        guest.write_all(&batch).expect("PINGs");
        batches += 1;
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        snapshot(&server).counter("general_dropped_total", "slow_reader"),
        Some(0)
    );

    // The same path as SIGTERM, on another thread: it returns once the wait is over.
    let stopping = thread::spawn(move || server.shutdown());
    let deadline = Instant::now() + REPLY_WAIT;
    let answer = loop {
        let answer = healthz(metrics).expect("the endpoint answers through the wait");
        if answer != OK || Instant::now() > deadline {
            break answer;
        }
        thread::sleep(Duration::from_millis(1));
    };
    assert_eq!(answer, DOWN);
    // Still 503 on a second look while the guest's bytes are held (or closed, once the
    // wait is over).
    if let Some(again) = healthz(metrics) {
        assert_eq!(again, DOWN);
    }
    stopping
        .join()
        .expect("shutdown thread")
        .expect("clean shutdown");
    assert!(healthz(metrics).is_none(), "the status listener is closed");
}

/// `GET /healthz` on `metrics`: the whole answer, or `None` when the connection is refused.
fn healthz(metrics: std::net::SocketAddr) -> Option<String> {
    let mut stream = std::net::TcpStream::connect(metrics).ok()?;
    stream.set_read_timeout(Some(REPLY_WAIT)).unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: lb\r\n\r\n")
        .ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).ok()?;
    Some(String::from_utf8_lossy(&answer).into_owned())
}

#[test]
fn a_fan_out_wider_than_one_write_slice_reaches_every_member_in_order() {
    // The driver writes a fan-out a slice of connections at a time between polls; 300
    // members is more than two slices. Every member gets the line, after every MEMBER_INFO
    // queued before it (each member's frames keep their order).
    const MEMBERS: usize = 300;
    let (_server, addr) = start_lobby(|c| c.general.max_conns_per_ip = MEMBERS + 1);
    let mut members: Vec<Client> = (0..MEMBERS)
        .map(|i| {
            let mut member = Client::greeted(addr);
            member.sign_in(&format!("m{i}"), "", None);
            member.read_sync();
            member
        })
        .collect();
    let speaker = members[0].id;
    members[0].send(ClientRepr::Chat {
        game: 0,
        text: "to all 300",
    });
    let line = server_bytes(&ServerRepr::ChatFrom {
        game: 0,
        member: speaker,
        text: "to all 300",
    });
    for (i, member) in members.iter_mut().enumerate() {
        // Member i saw the sign-ins of members i+1.. first.
        for _ in i + 1..MEMBERS {
            let reply = member.recv();
            assert!(
                matches!(reply.repr(), ServerRepr::MemberInfo { .. }),
                "m{i}: {reply:?} before the chat line"
            );
        }
        member.expect_bytes(&line);
    }
}
