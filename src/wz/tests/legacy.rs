//! Scenario tests of the legacy connection kind in [`crate::wz::WzLobby`]: byte scripts
//! exactly as real 2.3.7, 3.x and 4.x hosts and browsers send them (notes sections 1.6 and
//! 4), read back with the wire module's client-side readers, plus properties over arbitrary
//! scripts.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use quickcheck::{Arbitrary, Gen, QuickCheck};

use super::{addg, host_struct, motd_config, Harness, HOST_V4};
use crate::wire::wz::{
    parse_status, read_list_237, read_list_3x, read_list_4x, ClientList, GameStructRepr,
};
use crate::wz::stats::{ProbeOutcome, ProtocolError, Removal, WzRefusal};
use crate::wz::{ProbeId, ProbeResult, WzConfig, WzOutput};

const HOST_V6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));

fn host_of(game: &GameStructRepr) -> &[u8] {
    let end = game.host.iter().position(|&b| b == 0).unwrap_or(40);
    &game.host[..end]
}

fn assert_listed(list: &ClientList, ids: &[u32]) {
    let got: Vec<u32> = list.games.iter().map(|g| g.game_id).collect();
    assert_eq!(got, ids);
    for game in &list.games {
        assert_ne!(game.dw_size, 0);
        assert_eq!(
            game.mod_list, [0; 255],
            "stale bytes after the terminator relayed"
        );
    }
}

#[test]
fn host_237_registers_on_two_sockets_and_reregisters() {
    let mut sim = Harness::new(motd_config());
    sim.open(1, HOST_V4);
    sim.open(2, HOST_V6);
    let id = sim.gaid(1);
    assert_ne!(id, 0);
    let gs = host_struct("2.3.7", "my game", id, 0);

    sim.send(1, &addg(&gs));
    let out = sim.out();
    let (probe1, target, wzlr) = Harness::probe(&out).unwrap();
    assert_eq!(target, SocketAddr::new(HOST_V4, 2100));
    assert!(!wzlr, "2.3.7 hosts do not know the WZLR probe");
    sim.send(2, &addg(&gs));
    let out = sim.out();
    let (probe2, target, _) = Harness::probe(&out).unwrap();
    assert_eq!(target, SocketAddr::new(HOST_V6, 2100));
    sim.lobby
        .handle_probe_result(sim.now, probe2, ProbeResult::Connected);
    sim.lobby
        .handle_probe_result(sim.now, probe1, ProbeResult::Connected);
    let out = sim.out();
    assert_eq!(parse_status(&Harness::sent(&out, 1)).unwrap().0, 200);
    assert_eq!(parse_status(&Harness::sent(&out, 2)).unwrap().0, 200);
    assert_eq!(parse_status(&Harness::sent(&out, 2)).unwrap().1, b"hello");

    let reply = sim.list(10);
    let list = read_list_237(&reply).unwrap();
    assert_eq!(list.games.len(), 2);
    assert_eq!(list.games[0].game_id, id);
    assert_eq!(host_of(&list.games[0]), b"10.0.0.1");
    assert_eq!(host_of(&list.games[1]), b"2001:db8::1");
    assert!(list.games.iter().all(|g| g.dw_size != 0));
    assert_ne!(
        list.games[1].game_id, id,
        "the v6 socket sent no gaId: fresh id"
    );

    // A player joins: the 2.3.7 host closes both sockets and starts over with a new gaId.
    sim.close(1);
    sim.close(2);
    assert_eq!(sim.lobby.games().count(), 0);
    sim.open(3, HOST_V4);
    let new_id = sim.gaid(3);
    assert_ne!(new_id, id);
    let (code, _, closed) = sim.register(
        3,
        &host_struct("2.3.7", "my game", new_id, 0),
        ProbeResult::Connected,
    );
    assert_eq!((code, closed), (200, false));
    assert_listed(&read_list_237(&sim.list(11)).unwrap(), &[new_id]);
}

#[test]
fn host_3x_updates_get_no_reply() {
    let mut sim = Harness::new(motd_config());
    sim.open(1, HOST_V4);
    let id = sim.gaid(1);
    let mut repr = GameStructRepr::parse(
        &crate::wire::wz::GameStruct::new_checked(&host_struct("3.x", "three", id, 0)[..]).unwrap(),
    )
    .unwrap();
    let (code, motd, closed) = sim.register(1, &repr.to_bytes(), ProbeResult::Connected);
    assert_eq!((code, motd.as_slice(), closed), (200, &b"hello"[..], false));

    repr.current_players = 3;
    sim.send(1, &repr.to_bytes());
    assert_eq!(sim.out(), vec![], "a 3.x host reads no reply to an update");
    sim.send(1, b"keep\0");
    assert_eq!(sim.out(), vec![]);

    let list = read_list_3x(&sim.list(10)).unwrap();
    assert_listed(&list, &[id]);
    assert_eq!(list.games[0].current_players, 3);
    assert_eq!(host_of(&list.games[0]), b"10.0.0.1");
    assert_eq!(list.status, Some((200, b"hello".to_vec())));
    assert_eq!(sim.lobby.stats.updates, 1);
}

#[test]
fn host_4x_probe_updates_and_keep() {
    let mut sim = Harness::new(motd_config());
    sim.open(1, HOST_V4);
    let id = sim.gaid(1);
    let gs = host_struct("4.x", "four", id, 2200);
    sim.send(1, &addg(&gs));
    let out = sim.out();
    let (probe, target, wzlr) = Harness::probe(&out).unwrap();
    assert_eq!(target, SocketAddr::new(HOST_V4, 2200));
    assert!(wzlr);
    assert!(Harness::sent(&out, 1).is_empty());
    sim.lobby
        .handle_probe_result(sim.now, probe, ProbeResult::Wzlr { game_id: id });
    let out = sim.out();
    assert_eq!(parse_status(&Harness::sent(&out, 1)).unwrap().0, 200);

    // Every update gets a status; keep never does.
    for players in 2..4 {
        sim.advance(Duration::from_secs(7));
        let mut repr =
            GameStructRepr::parse(&crate::wire::wz::GameStruct::new_checked(&gs[..]).unwrap())
                .unwrap();
        repr.current_players = players;
        sim.send(1, &repr.to_bytes());
        let out = sim.out();
        let sent = Harness::sent(&out, 1);
        let (code, motd, used) = parse_status(&sent).unwrap();
        assert_eq!((code, motd, used), (200, &b"hello"[..], sent.len()));
    }
    for _ in 0..5 {
        sim.advance(Duration::from_secs(25));
        sim.send(1, b"keep\0");
        assert_eq!(sim.out(), vec![], "keep is never answered");
    }
    let list = read_list_4x(&sim.list(10)).unwrap();
    assert_listed(&list, &[id]);
    assert_eq!(list.games[0].host_port, 2200);
    assert_eq!(list.games[0].current_players, 3);
    assert_eq!(host_of(&list.games[0]), b"10.0.0.1");
    assert_eq!(list.status, Some((200, b"hello".to_vec())));
    let view = sim.lobby.games().next().unwrap();
    assert_eq!(
        (view.game_id, view.game_port, view.listed),
        (id, 2200, true)
    );
}

#[test]
fn list_reply_serves_every_generation_with_many_games() {
    let config = WzConfig {
        check_reachable: false,
        max_games_per_ip: 100,
        registration_burst: 100,
        ..motd_config()
    };
    let mut sim = Harness::new(config);
    let mut ids = Vec::new();
    for conn in 0..15 {
        sim.open(conn, HOST_V4);
        let id = sim.gaid(conn);
        let (code, _, _) = sim.register(
            conn,
            &host_struct("4.x", "g", id, 0),
            ProbeResult::Connected,
        );
        assert_eq!(code, 200);
        ids.push(id);
    }
    let reply = sim.list(100);
    assert_listed(&read_list_237(&reply).unwrap(), &ids[..11]);
    assert_listed(&read_list_3x(&reply).unwrap(), &ids[..11]);
    assert_listed(&read_list_4x(&reply).unwrap(), &ids);
    // A bare 4-byte `list` (third-party readers) works too.
    sim.open(101, HOST_V6);
    sim.send(101, b"list");
    let out = sim.out();
    assert_listed(&read_list_4x(&Harness::sent(&out, 101)).unwrap(), &ids);
}

#[test]
fn addg_split_at_every_byte_boundary() {
    let gs = host_struct("4.x", "split", 0, 0);
    let whole = addg(&gs);
    for split in 0..=whole.len() {
        let mut sim = Harness::new(motd_config());
        sim.open(1, HOST_V4);
        let id = sim.gaid(1);
        sim.send(1, &whole[..split]);
        let mut out = sim.out();
        assert!(Harness::probe(&out).is_none() || split == whole.len());
        sim.advance(Duration::from_millis(44));
        sim.send(1, &whole[split..]);
        out.extend(sim.out());
        let (probe, _, _) =
            Harness::probe(&out).unwrap_or_else(|| panic!("no probe at split {split}"));
        sim.lobby
            .handle_probe_result(sim.now, probe, ProbeResult::Wzlr { game_id: id });
        assert_eq!(
            parse_status(&Harness::sent(&sim.out(), 1)).unwrap().0,
            200,
            "split {split}"
        );
    }
    // And one byte at a time.
    let mut sim = Harness::new(motd_config());
    sim.open(1, HOST_V4);
    for byte in &whole {
        sim.send(1, &[*byte]);
    }
    assert!(Harness::probe(&sim.out()).is_some());
}

#[test]
fn unreachable_host_gets_408_then_close() {
    let mut sim = Harness::new(motd_config());
    sim.open(1, HOST_V4);
    let id = sim.gaid(1);
    let (code, motd, closed) =
        sim.register(1, &host_struct("3.x", "g", id, 0), ProbeResult::Refused);
    assert_eq!((code, closed), (408, true));
    let motd = String::from_utf8(motd).unwrap();
    assert!(
        motd.contains("failed to open a connection to 10.0.0.1:2100."),
        "{motd}"
    );
    assert_eq!(sim.lobby.games().count(), 0);
    assert_eq!(sim.lobby.reserved_ids(), 0);
    assert_eq!(sim.lobby.stats.refusals(WzRefusal::Unreachable), 1);

    // The driver never answers: the core decides within the addg reply budget.
    sim.open(2, HOST_V4);
    sim.send(2, &addg(&host_struct("2.3.7", "g", 0, 0)));
    let (probe, _, _) = Harness::probe(&sim.out()).unwrap();
    let deadline = sim.lobby.poll_timeout().unwrap();
    assert!(deadline - sim.now < Duration::from_millis(2500));
    sim.advance(Duration::from_millis(2000));
    assert_eq!(sim.out(), vec![]);
    sim.advance(Duration::from_millis(300));
    let out = sim.out();
    assert_eq!(parse_status(&Harness::sent(&out, 2)).unwrap().0, 408);
    assert!(Harness::closed(&out, 2));
    sim.lobby
        .handle_probe_result(sim.now, probe, ProbeResult::Connected);
    assert_eq!(sim.out(), vec![]);
    assert_eq!(sim.lobby.stats.stale_probe_results, 1);
    assert_eq!(sim.lobby.stats.probe_outcomes_of(ProbeOutcome::TimedOut), 1);
}

#[test]
fn wzlr_with_wrong_game_id_is_refused() {
    let mut sim = Harness::new(motd_config());
    sim.open(1, HOST_V4);
    let id = sim.gaid(1);
    let (code, _, closed) = sim.register(
        1,
        &host_struct("4.x", "g", id, 0),
        ProbeResult::Wzlr { game_id: id + 1 },
    );
    assert_eq!((code, closed), (408, true));
    assert_eq!(sim.lobby.stats.refusals(WzRefusal::WrongGameId), 1);
    assert_eq!(sim.lobby.games().count(), 0);
}

#[test]
fn host_disconnect_and_silence_delist_at_once() {
    let mut sim = Harness::new(motd_config());
    sim.open(1, HOST_V4);
    sim.open(2, HOST_V6);
    sim.register(1, &host_struct("3.x", "a", 0, 0), ProbeResult::Connected);
    sim.register(2, &host_struct("4.x", "b", 0, 0), ProbeResult::Connected);
    assert_eq!(sim.lobby.games().count(), 2);
    sim.close(1);
    assert_eq!(read_list_4x(&sim.list(10)).unwrap().games.len(), 1);
    assert_eq!(sim.lobby.stats.removals(Removal::Closed), 1);

    // The 4.x host keeps alive; then goes quiet.
    sim.advance(Duration::from_secs(80));
    sim.send(2, b"keep\0");
    sim.advance(Duration::from_secs(80));
    assert_eq!(sim.lobby.games().count(), 1);
    sim.advance(Duration::from_secs(11));
    let out = sim.out();
    assert!(Harness::closed(&out, 2));
    assert!(Harness::sent(&out, 2).is_empty());
    assert_eq!(sim.lobby.games().count(), 0);
    assert_eq!(sim.lobby.stats.removals(Removal::Silence), 1);
}

#[test]
fn banned_words_min_version_and_per_ip_limits() {
    let config = WzConfig {
        banned_words: vec!["BadWord".to_owned()],
        min_version: Some((0x1000, 0)),
        max_games_per_ip: 1,
        ..motd_config()
    };
    let mut sim = Harness::new(config);
    sim.open(1, HOST_V4);
    let (code, motd, closed) = sim.register(
        1,
        &host_struct("4.x", "my BADWORD game", 0, 0),
        ProbeResult::Connected,
    );
    assert_eq!((code, closed), (406, true));
    assert!(String::from_utf8(motd).unwrap().contains("name"));
    assert_eq!(sim.lobby.stats.probes_started, 0);

    sim.open(2, HOST_V4);
    let (code, _, closed) = sim.register(
        2,
        &host_struct("2.3.7", "old", 0, 0),
        ProbeResult::Connected,
    );
    assert_eq!((code, closed), (403, true));
    assert_eq!(sim.lobby.stats.refusals(WzRefusal::MinVersion), 1);

    sim.open(3, HOST_V4);
    assert_eq!(
        sim.register(3, &host_struct("3.x", "ok", 0, 0), ProbeResult::Connected)
            .0,
        200
    );
    sim.open(4, HOST_V4);
    let (code, _, closed) = sim.register(
        4,
        &host_struct("4.x", "second", 0, 0),
        ProbeResult::Connected,
    );
    assert_eq!((code, closed), (406, true));
    assert_eq!(sim.lobby.stats.refusals(WzRefusal::GamesPerIp), 1);

    // An update that renames the game to a banned name: 4.x gets the reason, then close.
    sim.open(5, HOST_V6);
    let id = sim.gaid(5);
    sim.register(
        5,
        &host_struct("4.x", "fine", id, 0),
        ProbeResult::Connected,
    );
    sim.send(5, &host_struct("4.x", "now badword", id, 0));
    let out = sim.out();
    assert_eq!(parse_status(&Harness::sent(&out, 5)).unwrap().0, 406);
    assert!(Harness::closed(&out, 5));
    assert_eq!(sim.lobby.games().count(), 1);
}

#[test]
fn gaid_is_always_answered_even_over_the_connection_limit() {
    let config = WzConfig {
        max_conns_per_ip: 1,
        ..motd_config()
    };
    let mut sim = Harness::new(config);
    sim.open(1, HOST_V4);
    sim.open(2, HOST_V4);
    assert_ne!(sim.gaid(2), 0);
    let (code, _, closed) = sim.register(2, &host_struct("4.x", "g", 0, 0), ProbeResult::Connected);
    assert_eq!((code, closed), (406, true));
    assert_eq!(sim.lobby.stats.refusals(WzRefusal::ConnsPerIp), 1);
}

#[test]
fn registration_rate_is_limited_per_address() {
    let config = WzConfig {
        check_reachable: false,
        registration_burst: 2,
        registrations_per_minute: 1,
        ..motd_config()
    };
    let mut sim = Harness::new(config);
    for conn in 0..3 {
        sim.open(conn, HOST_V4);
        let (code, _, _) = sim.register(
            conn,
            &host_struct("2.3.7", "g", 0, 0),
            ProbeResult::Connected,
        );
        sim.close(conn);
        assert_eq!(code, if conn < 2 { 200 } else { 406 });
    }
    assert_eq!(sim.lobby.stats.refusals(WzRefusal::RateLimited), 1);
}

#[test]
fn malformed_input_closes_and_counts() {
    let mut sim = Harness::new(WzConfig {
        check_reachable: false,
        ..motd_config()
    });
    let cases: Vec<(Vec<u8>, ProtocolError)> = vec![
        (b"HELO\0".to_vec(), ProtocolError::UnknownCommand),
        (
            host_struct("3.x", "g", 0, 0).to_vec(),
            ProtocolError::GameStructWithoutAddg,
        ),
        (b"addg\0list\0".to_vec(), ProtocolError::ExpectedGameStruct),
        (
            [b"addg\0".as_slice(), &[0, 0, 0, 9], &[0; 20]].concat(),
            ProtocolError::BadVersion,
        ),
        (
            [addg(&host_struct("3.x", "g", 0, 0)), b"addg\0".to_vec()].concat(),
            ProtocolError::DuplicateAddg,
        ),
        (
            // Oversized: bytes after the 814 are no command.
            [addg(&host_struct("3.x", "g", 0, 0)), vec![0x41; 86]].concat(),
            ProtocolError::UnknownCommand,
        ),
    ];
    for (conn, (bytes, reason)) in cases.into_iter().enumerate() {
        let before = sim.lobby.stats.protocol_errors_of(reason);
        sim.open(conn, HOST_V4);
        sim.send(conn, &bytes);
        assert!(Harness::closed(&sim.out(), conn), "{reason:?}");
        assert_eq!(sim.lobby.stats.protocol_errors_of(reason), before + 1);
        sim.close(conn);
        assert_eq!(sim.lobby.games().count(), 0, "{reason:?}");
    }

    // Truncated: the connection closes, or goes idle, with part of a struct buffered.
    let partial = &addg(&host_struct("3.x", "g", 0, 0))[..500];
    sim.open(50, HOST_V4);
    sim.send(50, partial);
    sim.close(50);
    sim.open(51, HOST_V4);
    sim.send(51, partial);
    sim.advance(Duration::from_secs(11));
    assert!(Harness::closed(&sim.out(), 51));
    assert_eq!(
        sim.lobby.stats.protocol_errors_of(ProtocolError::Truncated),
        2
    );
    // A 2.2-era struct after addg is told to upgrade.
    sim.open(52, HOST_V4);
    sim.send(52, &[b"addg\0".as_slice(), &[0, 0, 0, 2]].concat());
    let out = sim.out();
    assert_eq!(parse_status(&Harness::sent(&out, 52)).unwrap().0, 403);
    assert!(Harness::closed(&out, 52));
}

/// One step of an arbitrary driver script.
#[derive(Debug, Clone)]
enum Step {
    Open(u8, bool),
    Bytes(u8, Vec<u8>),
    Addg(u8, u8),
    Close(u8),
    Advance(u16),
    Probe(u8),
}

impl Arbitrary for Step {
    fn arbitrary(g: &mut Gen) -> Step {
        let conn = u8::arbitrary(g) % 6;
        match u8::arbitrary(g) % 10 {
            0 => Step::Open(conn, bool::arbitrary(g)),
            9 => Step::Probe(u8::arbitrary(g) & 0x7f | 2),
            1 => Step::Close(conn),
            2 => Step::Advance(u16::arbitrary(g)),
            3 => Step::Probe(u8::arbitrary(g)),
            4 => Step::Addg(conn, u8::arbitrary(g)),
            5 => {
                let pick = [&b"gaId\0"[..], b"keep\0", b"list", b"addg\0", b"motd\0"];
                Step::Bytes(
                    conn,
                    pick[usize::from(u8::arbitrary(g)) % pick.len()].to_vec(),
                )
            }
            _ => Step::Bytes(conn, Vec::<u8>::arbitrary(g)),
        }
    }
}

fn run_script(steps: Vec<Step>) -> bool {
    let config = WzConfig {
        max_games: 3,
        max_games_per_ip: 2,
        ..motd_config()
    };
    let mut sim = Harness::new(config);
    let mut probes: Vec<ProbeId> = Vec::new();
    for step in steps {
        match step {
            Step::Open(conn, v6) => sim.open(usize::from(conn), if v6 { HOST_V6 } else { HOST_V4 }),
            Step::Close(conn) => sim.close(usize::from(conn)),
            Step::Advance(ms) => {
                // Mostly short steps (probe and idle deadlines), sometimes past the silence.
                let ms = if ms > 60000 {
                    u64::from(ms) * 2
                } else {
                    u64::from(ms) % 4000
                };
                sim.advance(Duration::from_millis(ms));
            }
            Step::Bytes(conn, bytes) => sim.send(usize::from(conn), &bytes),
            Step::Addg(conn, kind) => {
                let conn = usize::from(conn);
                if !sim.bufs.contains_key(&conn) {
                    sim.open(conn, if kind & 8 == 0 { HOST_V4 } else { HOST_V6 });
                }
                let generation = ["2.3.7", "3.x", "4.x"][usize::from(kind % 3)];
                let gs = host_struct(generation, "g", u32::from(kind), u16::from(kind));
                // Mostly whole registrations; sometimes a bare update, sometimes cut short.
                let bytes = if kind & 0x30 == 0x30 {
                    gs.to_vec()
                } else {
                    addg(&gs)
                };
                let cut = if kind & 0xc0 == 0xc0 {
                    usize::from(kind)
                } else {
                    0
                };
                sim.send(conn, &bytes[..bytes.len() - cut]);
            }
            Step::Probe(pick) => {
                // Mostly the latest probe, sometimes an older (maybe stale) one.
                let index = if pick & 0x80 == 0 {
                    probes.len().checked_sub(1)
                } else {
                    Some(usize::from(pick) % probes.len().max(1))
                };
                if let Some(&probe) = index.and_then(|i| probes.get(i)) {
                    let result = match pick % 4 {
                        0 => ProbeResult::Refused,
                        1 => ProbeResult::TimedOut,
                        2 => ProbeResult::Connected,
                        _ => ProbeResult::Wzlr {
                            game_id: u32::from(pick),
                        },
                    };
                    sim.lobby.handle_probe_result(sim.now, probe, result);
                }
            }
        }
        for output in sim.out() {
            match output {
                WzOutput::Probe { probe, .. } => probes.push(probe),
                WzOutput::Close { conn } => sim.close(conn.0),
                WzOutput::Send { .. } | WzOutput::Verify { .. } | WzOutput::Resume { .. } => {}
            }
        }
        // Bounded state: games by the cap, ids and probes by the open connections.
        if sim.lobby.games().count() > 3
            || sim.lobby.reserved_ids() > sim.lobby.connections()
            || sim.lobby.probes_in_flight() > sim.lobby.connections()
        {
            return false;
        }
    }
    let open: Vec<usize> = sim.bufs.keys().copied().collect();
    for conn in open {
        sim.close(conn);
    }
    sim.lobby.games().count() == 0
        && sim.lobby.reserved_ids() == 0
        && sim.lobby.probes_in_flight() == 0
        && sim.lobby.connections() == 0
        && sim.lobby.poll_timeout().is_none()
}

#[test]
fn arbitrary_scripts_never_panic_and_stay_bounded() {
    QuickCheck::new()
        .tests(300)
        .quickcheck(run_script as fn(Vec<Step>) -> bool);
}

#[test]
fn stats_visit_covers_every_counter() {
    let mut sim = Harness::new(motd_config());
    sim.open(1, HOST_V4);
    sim.send(1, b"zzzz");
    let mut seen = Vec::new();
    sim.lobby
        .stats
        .visit(|name, label, value| seen.push((name, label, value)));
    assert!(seen.contains(&("wz_protocol_errors_total", "unknown_command", 1)));
    assert!(seen.contains(&("wz_connections_opened_total", "", 1)));
    assert!(seen
        .iter()
        .all(|(name, _, _)| name.starts_with("wz_") && name.ends_with("_total")));
}

#[test]
fn ipv4_mapped_peer_is_listed_and_probed_as_ipv4() {
    let mut sim = Harness::new(motd_config());
    let mapped = IpAddr::V6(Ipv4Addr::new(10, 0, 0, 7).to_ipv6_mapped());
    sim.open(1, mapped);
    sim.send(1, &addg(&host_struct("3.x", "g", 0, 0)));
    let (probe, target, _) = Harness::probe(&sim.out()).unwrap();
    assert_eq!(target, "10.0.0.7:2100".parse().unwrap());
    sim.lobby
        .handle_probe_result(sim.now, probe, ProbeResult::Connected);
    sim.out();
    let list = read_list_3x(&sim.list(10)).unwrap();
    assert_eq!(host_of(&list.games[0]), b"10.0.0.7");
}

#[test]
fn reachability_check_off_lists_at_once() {
    let mut sim = Harness::new(WzConfig {
        check_reachable: false,
        ..motd_config()
    });
    sim.open(1, HOST_V4);
    sim.send(1, &addg(&host_struct("4.x", "g", 0, 0)));
    let out = sim.out();
    assert!(Harness::probe(&out).is_none());
    assert_eq!(parse_status(&Harness::sent(&out, 1)).unwrap().0, 200);
    assert_eq!(sim.lobby.stats.games_listed, 1);
}

/// Hostile crowds: a legacy connection settles when its game is listed; until then `keep` does not
/// extend its deadline and it is offered for eviction, oldest first.
#[test]
fn a_listed_host_is_settled_and_the_others_time_out() {
    let mut sim = Harness::new(motd_config());
    sim.open(1, HOST_V4);
    sim.open(2, HOST_V6);
    assert_eq!(sim.lobby.oldest_unsettled(), Some(crate::wz::ConnId(1)));
    let id = sim.gaid(1);
    let gs = host_struct("4.x", "settled", id, 2200);
    let (code, _, closed) = sim.register(1, &gs, ProbeResult::Connected);
    assert_eq!((code, closed), (200, false));
    assert_eq!(sim.lobby.oldest_unsettled(), Some(crate::wz::ConnId(2)));
    for _ in 0..4 {
        sim.advance(Duration::from_secs(1));
        sim.send(2, b"keep\0");
    }
    sim.advance(Duration::from_secs(1));
    let out = sim.out();
    assert!(
        Harness::closed(&out, 2) && !Harness::closed(&out, 1),
        "{out:?}"
    );
    let idle = ProtocolError::IdleTimeout;
    assert_eq!(sim.lobby.stats.protocol_errors_of(idle), 1);
}
