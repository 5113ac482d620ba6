//! The legacy protocol as the real 2.3.7, 3.x and 4.x games speak it
//! (docs/protocols/wz-lobby.md, "Legacy protocol"): registration, updates, the reachability
//! probe, the list reply read by every client generation, refusals and malformed input.

use super::*;

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
