//! The general lobby's WebSocket port over loopback (docs/protocols/general-lobby.md,
//! "WebSocket transport"; RFC 6455): the handshake with the RFC's sample key, the lobby's
//! frames as binary messages (the same golden greeting as on TCP), a mixed TCP and WebSocket
//! lobby, masking, ping/pong, close codes, text, oversized and fragmented messages, refusals
//! before the upgrade (400, 403, 404, 405, 426), a slow reader, and the static files of
//! `--lobby-web`. Every reply is compared byte for byte.

use std::net::SocketAddr;
use std::time::Duration;

use lobbyd::config::Config;
use lobbyd::net::ServerHandle;
use lobbyd::wire::general::{ClientRepr, ServerRepr};
use lobbyd::wire::websocket::frame::{emit_client_frame, OpCode};

use super::client::*;
use crate::common::{eventually, snapshot};

/// A lobby with its WebSocket port on an OS-chosen port: (server, TCP address, WebSocket
/// address).
fn start_ws(tune: impl FnOnce(&mut Config)) -> (ServerHandle, SocketAddr, SocketAddr) {
    let (server, tcp) = start_lobby(|config| {
        config.lobby_ws.port = Some(0);
        tune(config);
    });
    let ws = server.general_ws_addr().expect("WebSocket port enabled");
    (server, tcp, ws)
}

fn counter(server: &ServerHandle, name: &str, label: &str) -> u64 {
    snapshot(server).counter(name, label).unwrap_or(0)
}

/// One masked client frame.
fn client_frame(fin: bool, opcode: OpCode, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    emit_client_frame(&mut out, fin, opcode, [0x11, 0x22, 0x33, 0x44], payload);
    out
}

/// The server closes with `code` (a close frame, then the end of the stream).
#[track_caller]
fn expect_close_code(client: &mut Client, code: u16) {
    let mut got = None;
    while let Some((opcode, payload)) = client.recv_ws_frame() {
        if opcode == OpCode::Close {
            got = Some(payload);
        }
    }
    assert_eq!(got, Some(code.to_be_bytes().to_vec()), "close code {code}");
}

#[test]
fn the_rfc_handshake_then_a_member_signs_in_and_chats_with_a_tcp_member() {
    let (server, tcp, ws) = start_ws(|_| {});
    let mut alice = Client::enter(tcp, "alice", &mut []);
    // `ws_connect` checks the 101 byte for byte: Sec-WebSocket-Accept is the RFC's
    // s3pPLMBiTxaQ9kYGzzhZRbK+xOo= for the sample key; the greeting is the TCP one.
    let mut bob = Client::ws_enter(ws, "bob", &mut [&mut alice]);
    bob.send(ClientRepr::Chat {
        game: 0,
        text: "hello from a browser",
    });
    let line = ServerRepr::ChatFrom {
        game: 0,
        member: bob.id,
        text: "hello from a browser",
    };
    bob.expect(&line);
    alice.expect(&line);
    alice.send(ClientRepr::Chat {
        game: 0,
        text: "hello from TCP",
    });
    let line = ServerRepr::ChatFrom {
        game: 0,
        member: alice.id,
        text: "hello from TCP",
    };
    alice.expect(&line);
    bob.expect(&line);
    bob.send(ClientRepr::Ping { payload: b"keep" });
    bob.expect(&ServerRepr::Pong { payload: b"keep" });

    let snap = snapshot(&server);
    let general = snap.general.as_ref().expect("general lobby");
    assert_eq!((general.ws_connections, general.ws_members), (1, 1));
    assert_eq!(snap.counter("general_ws_upgrades_total", ""), Some(1));
    assert_eq!(snap.counter("general_ws_accepted_total", ""), Some(1));
    assert!(bob.ws_other.is_empty(), "{:?}", bob.ws_other);
}

#[test]
fn masking_ping_pong_and_the_close_codes() {
    let (server, _tcp, ws) = start_ws(|_| {});
    // A ping is answered with a pong carrying its payload; the lobby goes on.
    let mut alice = Client::ws_enter(ws, "alice", &mut []);
    alice.send_wire(&client_frame(true, OpCode::Ping, b"are you there"));
    assert_eq!(
        alice.recv_ws_frame(),
        Some((OpCode::Pong, b"are you there".to_vec()))
    );
    // A peer's close is echoed with its code, then the connection closes.
    alice.send_wire(&client_frame(true, OpCode::Close, &1000u16.to_be_bytes()));
    expect_close_code(&mut alice, 1000);

    // An unmasked frame: 1002.
    let mut bob = Client::ws_greeted(ws);
    bob.send_wire(&[0x82, 0x02, 0xab, 0xcd]);
    expect_close_code(&mut bob, 1002);
    // A text message: 1003.
    let mut carol = Client::ws_greeted(ws);
    carol.send_wire(&client_frame(true, OpCode::Text, b"{\"hello\":1}"));
    expect_close_code(&mut carol, 1003);
    // Two lobby frames in one message: 1007.
    let mut dave = Client::ws_greeted(ws);
    let ping = client_bytes(&ClientRepr::Ping { payload: b"x" });
    dave.send_wire(&client_frame(
        true,
        OpCode::Binary,
        &[ping.clone(), ping].concat(),
    ));
    expect_close_code(&mut dave, 1007);

    assert_eq!(counter(&server, "general_ws_pings_total", ""), 1);
    assert_eq!(counter(&server, "general_ws_closed_total", "peer_close"), 1);
    assert_eq!(counter(&server, "general_ws_closed_total", "unmasked"), 1);
    assert_eq!(counter(&server, "general_ws_closed_total", "text"), 1);
    assert_eq!(
        counter(&server, "general_ws_closed_total", "not_one_frame"),
        1
    );
}

#[test]
fn oversized_and_fragmented_messages() {
    let (server, _tcp, ws) = start_ws(|config| config.general.core.max_frame = 512);
    // A message in three fragments, within the cap, is one frame for the lobby.
    let mut alice = Client::ws_greeted(ws);
    let ping = client_bytes(&ClientRepr::Ping {
        payload: b"in pieces",
    });
    let (a, rest) = ping.split_at(3);
    let (b, c) = rest.split_at(6);
    let mut wire = client_frame(false, OpCode::Binary, a);
    // A control frame may come between fragments.
    wire.extend(client_frame(true, OpCode::Ping, b"between"));
    wire.extend(client_frame(false, OpCode::Continuation, b));
    wire.extend(client_frame(true, OpCode::Continuation, c));
    alice.send_wire(&wire);
    assert_eq!(
        alice.recv_ws_frame(),
        Some((OpCode::Pong, b"between".to_vec()))
    );
    alice.expect(&ServerRepr::Pong {
        payload: b"in pieces",
    });

    // One frame declaring more than the cap (8 + 512): 1009 from its header alone.
    let mut bob = Client::ws_greeted(ws);
    bob.send_wire(&client_frame(true, OpCode::Binary, &[0u8; 521])[..20]);
    expect_close_code(&mut bob, 1009);
    // Fragments each under the cap whose total passes it: 1009.
    let mut carol = Client::ws_greeted(ws);
    let mut wire = client_frame(false, OpCode::Binary, &[0u8; 300]);
    wire.extend(client_frame(false, OpCode::Continuation, &[0u8; 300]));
    carol.send_wire(&wire);
    expect_close_code(&mut carol, 1009);
    // A continuation with no message begun: 1002.
    let mut dave = Client::ws_greeted(ws);
    dave.send_wire(&client_frame(true, OpCode::Continuation, b"x"));
    expect_close_code(&mut dave, 1002);
    assert_eq!(counter(&server, "general_ws_closed_total", "too_big"), 2);
    assert_eq!(
        counter(&server, "general_ws_closed_total", "continuation"),
        1
    );
}

/// Sends `request` as it is to the WebSocket port and returns everything until the close.
fn http(ws: SocketAddr, request: &str) -> String {
    let mut client = Client::connect(ws);
    client.send_wire(request.as_bytes());
    String::from_utf8_lossy(&client.read_to_close()).into_owned()
}

const UPGRADE: &str = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
                       Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";

#[test]
fn refusals_before_the_upgrade() {
    let (server, _tcp, ws) = start_ws(|config| {
        config.lobby_ws.origins = vec!["https://game.example".into()];
    });
    let forbidden = http(
        ws,
        &format!("GET /lobby HTTP/1.1\r\n{UPGRADE}Origin: https://evil.example\r\n\r\n"),
    );
    assert_eq!(
        forbidden,
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: 10\r\nConnection: close\r\n\r\nForbidden\n"
    );
    let elsewhere = http(ws, &format!("GET /chat HTTP/1.1\r\n{UPGRADE}\r\n"));
    assert!(
        elsewhere.starts_with("HTTP/1.1 404 Not Found\r\n"),
        "{elsewhere}"
    );
    let plain = http(ws, "GET /lobby HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(
        plain.starts_with(
            "HTTP/1.1 426 Upgrade Required\r\nUpgrade: websocket\r\n\
                               Sec-WebSocket-Version: 13\r\n"
        ),
        "{plain}"
    );
    let garbage = http(ws, "\x16\x03\x01 not http\r\n\r\n");
    assert!(
        garbage.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{garbage}"
    );
    let no_key = http(
        ws,
        "GET /lobby HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Version: 13\r\n\r\n",
    );
    assert!(
        no_key.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{no_key}"
    );
    // The allowed origin upgrades.
    let mut allowed = Client::connect(ws);
    allowed.send_wire(
        format!("GET /lobby HTTP/1.1\r\n{UPGRADE}Origin: https://GAME.example\r\n\r\n").as_bytes(),
    );
    assert!(allowed.read_head().starts_with("HTTP/1.1 101 "));
    let snap = snapshot(&server);
    assert_eq!(
        snap.counter("general_ws_refused_total", "forbidden_origin"),
        Some(1)
    );
    assert_eq!(
        snap.counter("general_ws_refused_total", "not_found"),
        Some(1)
    );
    assert_eq!(
        snap.counter("general_ws_refused_total", "upgrade_required"),
        Some(1)
    );
    assert_eq!(
        snap.counter("general_ws_refused_total", "malformed"),
        Some(1)
    );
    assert_eq!(
        snap.counter("general_ws_refused_total", "bad_request"),
        Some(1)
    );
}

#[test]
fn static_files_share_the_port_and_never_leave_their_folder() {
    let dir = std::env::temp_dir().join(format!("lobbyd-it-web-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("site")).unwrap();
    std::fs::write(dir.join("site/index.html"), "<h1>lobby</h1>").unwrap();
    std::fs::write(dir.join("site/app.js"), "export {};").unwrap();
    std::fs::write(dir.join("secret.txt"), "secret").unwrap();
    let site = dir.join("site");
    let (server, _tcp, ws) = start_ws(|config| config.lobby_ws.web_dir = Some(site));
    let index = http(ws, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(
        index,
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 14\r\n\
         Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n\
         <h1>lobby</h1>"
    );
    let js = http(ws, "GET /app.js?v=1 HTTP/1.1\r\n\r\n");
    assert!(
        js.contains("Content-Type: text/javascript; charset=utf-8\r\n"),
        "{js}"
    );
    assert!(js.ends_with("\r\n\r\nexport {};"), "{js}");
    let escape = http(ws, "GET /../secret.txt HTTP/1.1\r\n\r\n");
    assert!(
        escape.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{escape}"
    );
    let missing = http(ws, "GET /secret.txt HTTP/1.1\r\n\r\n");
    assert!(
        missing.starts_with("HTTP/1.1 404 Not Found\r\n"),
        "{missing}"
    );
    let post = http(ws, "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    assert!(
        post.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
        "{post}"
    );
    assert_eq!(counter(&server, "general_ws_files_total", ""), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_mixed_lobby_plays_a_game_together() {
    let (_server, tcp, ws) = start_ws(|config| config.general.core.auto_approve = true);
    let mut owner = Client::ws_enter(ws, "owner", &mut []);
    let mut player = Client::enter(tcp, "player", &mut [&mut owner]);
    owner.send(ClientRepr::CreateGame {
        name: "mixed",
        game_type: "chess",
        max_players: 2,
        flags: 0,
        password: "",
        version: "1",
    });
    let created = owner.recv();
    let ServerRepr::GameInfo(info) = created.repr() else {
        panic!("expected a GAME_INFO, got {created:?}");
    };
    let game = info.id;
    assert_eq!(
        player.recv().0,
        created.0,
        "the TCP member sees the same GAME_INFO bytes"
    );
    player.send(ClientRepr::JoinRequest {
        game,
        request: 7,
        password: "",
    });
    let joined = player.recv();
    assert!(
        matches!(
            joined.repr(),
            ServerRepr::JoinResponse { accepted: true, .. }
        ),
        "{joined:?}"
    );
    owner.send(ClientRepr::Chat {
        game,
        text: "gl hf",
    });
    let line = ServerRepr::ChatFrom {
        game,
        member: owner.id,
        text: "gl hf",
    };
    // Each sees the other's join, then the line.
    let seen = |client: &mut Client| loop {
        let reply = client.recv();
        if reply.repr() == line {
            return;
        }
    };
    seen(&mut owner);
    seen(&mut player);
}

#[test]
fn a_slow_websocket_reader_is_dropped_without_hurting_the_others() {
    let (server, tcp, ws) = start_ws(|config| {
        config.general.core.auto_approve = true;
        config.general.core.max_frame = 65_536;
    });
    let mut talker = Client::enter(tcp, "talker", &mut []);
    talker.send(ClientRepr::CreateGame {
        max_players: 3,
        game_type: "chess",
        version: "1",
        flags: 0,
        name: "relay",
        password: "",
    });
    let created = talker.recv();
    let ServerRepr::GameInfo(info) = created.repr() else {
        panic!("expected a GAME_INFO, got {created:?}");
    };
    let game = info.id;
    // Two WebSocket players: one that reads, one that never does.
    let mut listener = Client::ws_enter(ws, "listener", &mut []);
    let sleeper = Client::ws_enter(ws, "sleeper", &mut []);
    for (n, client) in [&mut listener].into_iter().enumerate() {
        client.send(ClientRepr::JoinRequest {
            game,
            request: n as i32,
            password: "",
        });
    }
    let mut sleeper = sleeper;
    sleeper.send(ClientRepr::JoinRequest {
        game,
        request: 9,
        password: "",
    });
    let body = vec![0x5au8; 60_000];
    let relay = ServerRepr::GameMessage {
        game,
        from: talker.id,
        app_code: 1,
        body: &body,
    };
    let relayed = |client: &mut Client| loop {
        if client.recv().repr() == relay {
            return;
        }
    };
    let mut dropped = false;
    for round in 0..300 {
        talker.send(ClientRepr::ToAll {
            game,
            app_code: 1,
            body: &body,
        });
        relayed(&mut talker);
        relayed(&mut listener);
        if round % 10 == 9 && counter(&server, "general_dropped_total", "slow_reader") > 0 {
            eprintln!("dropped after {} relays", round + 1);
            dropped = true;
            break;
        }
    }
    assert!(dropped, "the sleeper was never dropped");
    let snap = eventually(&server, Duration::from_secs(5), |s| {
        s.general.as_ref().is_some_and(|g| g.ws_connections == 1)
    });
    assert_eq!(snap.general.as_ref().map(|g| g.ws_members), Some(1));
    drop(sleeper);
    // The reader goes on as before.
    listener.send(ClientRepr::Ping {
        payload: b"still here",
    });
    loop {
        if listener.recv().repr()
            == (ServerRepr::Pong {
                payload: b"still here",
            })
        {
            break;
        }
    }
}
