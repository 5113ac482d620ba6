//! The v4 protocol (docs/protocols/wz-v4.md): BSON and JSON sessions with logins against a
//! temporary SQLite file, games added, listed (also to legacy browsers) and deleted.

use super::*;

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
