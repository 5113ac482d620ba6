//! Scenario tests of the v4 connection kind in [`crate::wz::WzLobby`], sans-IO: handshake and
//! frames split anywhere, login verdicts keeping responses in order, sessions expiring,
//! probes deciding `addGame`, and one game table shared with legacy hosts and browsers.
//! Requests are JSON text so responses can be read with serde_json.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use quickcheck::QuickCheck;
use serde_json::{json, Value as Json};

use super::{addg, host_struct, motd_config, Harness, HOST_V4};
use crate::accounts::{LoginPolicy, UserId, VerifyResult};
use crate::wire::wz::v4::MAX_FRAME;
use crate::wire::wz::{parse_status, read_list_4x};
use crate::wz::stats::{ProtocolError, Removal};
use crate::wz::{ConnId, JobId, ProbeResult, WzConfig, WzOutput};

const PLAYER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
const HANDSHAKE: &[u8] = b"version\0\0\0\0\x04";

fn frame(text: &str) -> Vec<u8> {
    let mut out = (text.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(text.as_bytes());
    out
}

/// Every response frame sent to `conn` in `outputs`, parsed.
fn responses(outputs: &[WzOutput], conn: usize) -> Vec<Json> {
    let bytes = Harness::sent(outputs, conn);
    let mut rest = &bytes[..];
    let mut out = Vec::new();
    while rest.len() >= 4 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        out.push(serde_json::from_slice(&rest[4..4 + len]).expect("JSON response"));
        rest = &rest[4 + len..];
    }
    assert!(rest.is_empty(), "a partial frame was sent");
    out
}

fn verify(outputs: &[WzOutput]) -> Option<(JobId, String, String)> {
    outputs.iter().find_map(|o| match o {
        WzOutput::Verify {
            job,
            username,
            password,
            ..
        } => Some((*job, username.clone(), password.clone())),
        _ => None,
    })
}

fn resumed(outputs: &[WzOutput], conn: usize) -> bool {
    outputs
        .iter()
        .any(|o| matches!(o, WzOutput::Resume { conn: c } if *c == ConnId(conn)))
}

/// A simulation whose connections may hold one v4 frame unconsumed.
fn v4_harness(config: WzConfig) -> Harness {
    let mut sim = Harness::new(config);
    sim.max_left = MAX_FRAME as usize + 4;
    sim
}

fn config(login: LoginPolicy, check_reachable: bool) -> WzConfig {
    WzConfig {
        login,
        check_reachable,
        ..motd_config()
    }
}

/// Opens a v4 connection and returns the one response to `request`.
fn call(sim: &mut Harness, conn: usize, request: &str) -> Json {
    sim.send(conn, &frame(request));
    let out = sim.out();
    let mut all = responses(&out, conn);
    assert_eq!(all.len(), 1, "{out:?}");
    all.remove(0)
}

fn open_v4(sim: &mut Harness, conn: usize, ip: IpAddr) {
    sim.open(conn, ip);
    sim.send(conn, HANDSHAKE);
    assert!(sim.out().is_empty(), "the handshake gets no reply");
}

/// Logs `conn` in as `user` through the Verify round trip; returns the session id.
fn login(sim: &mut Harness, conn: usize, user: i64) -> String {
    sim.send(
        conn,
        &frame(r#"{"method": "login", "params": {"username": "u", "password": "p"}, "id": 1}"#),
    );
    let (job, username, password) = verify(&sim.out()).expect("a verification");
    assert_eq!((username.as_str(), password.as_str()), ("u", "p"));
    sim.lobby
        .handle_verify_result(sim.now, job, VerifyResult::Valid(UserId(user)));
    let out = sim.out();
    assert!(resumed(&out, conn));
    let reply = &responses(&out, conn)[0];
    assert_eq!(reply["status"], 0);
    assert_eq!(reply["result"]["userid"], user);
    reply["result"]["sessionid"].as_str().unwrap().to_owned()
}

const LOGIN: &str = r#"{"method": "login", "params": {"username": "u", "password": "p"}, "id": 1}"#;

/// Sends a `login` on `conn`, answers its verification with `verdict`, and returns the reply.
fn login_answered(sim: &mut Harness, conn: usize, verdict: VerifyResult) -> Json {
    sim.send(conn, &frame(LOGIN));
    let (job, _, _) = verify(&sim.out()).expect("a verification");
    sim.lobby.handle_verify_result(sim.now, job, verdict);
    responses(&sim.out(), conn).remove(0)
}

const ADD_GAME: &str = r#"{"method": "addGame", "params": {"description": "Fast, NTW", "maxPlayers": 8, "currentPlayers": 1, "port": 2200, "multiVer": "4.3.3", "wzVerMajor": 16384, "wzVerMinor": 79}, "id": 2}"#;

#[test]
fn handshake_and_frames_split_at_every_byte() {
    let request = frame(r#"{"method": "list", "params": "", "id": 9}"#);
    let mut input = HANDSHAKE.to_vec();
    input.extend_from_slice(&request);
    for cut in 0..=input.len() {
        let mut sim = v4_harness(config(LoginPolicy::Off, false));
        sim.open(1, HOST_V4);
        sim.send(1, &input[..cut]);
        let early = sim.out();
        sim.send(1, &input[cut..]);
        let mut out = early;
        out.extend(sim.out());
        assert_eq!(
            responses(&out, 1),
            vec![json!({"status": 0, "result": {"count": 0, "list": []}, "id": 9})],
            "cut at {cut}"
        );
        assert!(!Harness::closed(&out, 1));
    }
}

#[test]
fn pipelined_requests_are_answered_a_few_per_call() {
    let mut sim = v4_harness(config(LoginPolicy::Off, false));
    open_v4(&mut sim, 1, HOST_V4);
    let one = frame(r#"{"method": "list", "id": 1}"#);
    let many: Vec<u8> = one.iter().copied().cycle().take(one.len() * 20).collect();
    let used = sim.lobby.handle_bytes(sim.now, ConnId(1), &many);
    assert_eq!(used, one.len() * 8, "eight frames per call");
    assert_eq!(responses(&sim.out(), 1).len(), 8);
    // The simulated driver calls again while bytes are consumed, as the real one does.
    sim.send(1, &many[used..]);
    assert_eq!(responses(&sim.out(), 1).len(), 12);
}

#[test]
fn wrong_version_and_oversized_frame_close() {
    let mut sim = v4_harness(config(LoginPolicy::Off, false));
    sim.open(1, HOST_V4);
    sim.send(1, b"version\0\0\0\0\x03");
    assert!(Harness::closed(&sim.out(), 1));
    open_v4(&mut sim, 2, HOST_V4);
    sim.send(2, &(64 * 1024 + 1u32).to_be_bytes());
    assert!(Harness::closed(&sim.out(), 2));
    assert_eq!(
        sim.lobby
            .stats
            .protocol_errors_of(ProtocolError::WrongVersion),
        1
    );
    assert_eq!(
        sim.lobby
            .stats
            .protocol_errors_of(ProtocolError::FrameTooLarge),
        1
    );
}

#[test]
fn login_holds_later_requests_until_the_verdict() {
    let mut sim = v4_harness(config(LoginPolicy::Required, false));
    open_v4(&mut sim, 1, HOST_V4);
    let mut both =
        frame(r#"{"method": "login", "params": {"username": "u", "password": "p"}, "id": 1}"#);
    both.extend(frame(r#"{"method": "list", "id": 2}"#));
    sim.send(1, &both);
    let out = sim.out();
    let (job, _, _) = verify(&out).expect("verification requested");
    assert!(
        responses(&out, 1).is_empty(),
        "nothing answered before the verdict"
    );
    sim.lobby
        .handle_verify_result(sim.now, job, VerifyResult::Valid(UserId(4)));
    let out = sim.out();
    assert!(resumed(&out, 1));
    assert_eq!(responses(&out, 1)[0]["id"], 1);
    // The driver feeds the buffered list request again.
    sim.send(1, b"");
    let out = sim.out();
    assert_eq!(
        responses(&out, 1),
        vec![json!({"status": 0, "result": {"count": 0, "list": []}, "id": 2})]
    );
}

#[test]
fn wrong_password_busy_and_late_verdicts() {
    let mut sim = v4_harness(config(LoginPolicy::Optional, false));
    open_v4(&mut sim, 1, HOST_V4);
    let reply = login_answered(&mut sim, 1, VerifyResult::Invalid);
    assert_eq!(
        reply,
        json!({"status": -405, "result": "Unknown user or wrong password", "id": 1})
    );
    let reply = login_answered(&mut sim, 1, VerifyResult::Busy);
    assert_eq!(reply["status"], -403);
    assert_eq!(reply["result"], "Server busy, try again");
    // A verdict for a connection that closed meanwhile is dropped.
    sim.send(1, &frame(LOGIN));
    let (job, _, _) = verify(&sim.out()).unwrap();
    sim.close(1);
    sim.lobby
        .handle_verify_result(sim.now, job, VerifyResult::Valid(UserId(1)));
    assert!(sim.out().is_empty());
    // An invalid name never reaches the database.
    open_v4(&mut sim, 2, HOST_V4);
    let reply = call(
        &mut sim,
        2,
        r#"{"method": "login", "params": {"username": "", "password": "p"}, "id": 3}"#,
    );
    assert_eq!(reply["status"], -405);
}

#[test]
fn session_ids_come_from_the_injected_source() {
    // A broken source: every draw gives the same id, so the second login finds it live.
    let mut sim = Harness::with_session_ids(
        config(LoginPolicy::Optional, false),
        Box::new(|| [0xab; 16]),
    );
    sim.max_left = MAX_FRAME as usize + 4;
    open_v4(&mut sim, 1, HOST_V4);
    assert_eq!(login(&mut sim, 1, 1), "ab".repeat(16));
    open_v4(&mut sim, 2, PLAYER);
    let reply = login_answered(&mut sim, 2, VerifyResult::Valid(UserId(2)));
    assert_eq!(
        reply,
        json!({"status": -403, "result": "Server error: no session could be created, try again", "id": 1})
    );
}

#[test]
fn add_player_checks_live_sessions_of_the_named_user() {
    let mut sim = v4_harness(WzConfig {
        session_ttl: Duration::from_secs(60),
        ..config(LoginPolicy::Optional, false)
    });
    open_v4(&mut sim, 1, HOST_V4);
    let added = call(&mut sim, 1, ADD_GAME);
    assert_eq!(added["status"], 0);
    let game_id = added["result"]["gameId"].as_i64().unwrap();
    open_v4(&mut sim, 2, PLAYER);
    let session = login(&mut sim, 2, 7);
    let add = |user: i64, session: &str| {
        format!(
            r#"{{"method": "addPlayer", "params": {{"gameId": {game_id}, "userid": {user}, "sessionid": "{session}"}}, "id": 5}}"#
        )
    };
    assert_eq!(call(&mut sim, 1, &add(8, &session))["status"], -406);
    assert_eq!(call(&mut sim, 1, &add(7, &session))["status"], 0);
    let no_session =
        format!(r#"{{"method": "addPlayer", "params": {{"gameId": {game_id}}}, "id": 6}}"#);
    assert_eq!(call(&mut sim, 1, &no_session)["status"], -406);
    sim.advance(Duration::from_secs(61));
    assert_eq!(call(&mut sim, 1, &add(7, &session))["status"], -406);
    // Another connection's game is not this host's to change.
    let other = format!(r#"{{"method": "delPlayer", "params": {{"gameId": {game_id}}}, "id": 7}}"#);
    assert_eq!(call(&mut sim, 2, &other)["status"], -402);
}

#[test]
fn probe_decides_add_game_and_timeout_answers() {
    let mut sim = v4_harness(config(LoginPolicy::Off, true));
    open_v4(&mut sim, 1, HOST_V4);
    sim.send(1, &frame(ADD_GAME));
    let out = sim.out();
    let (probe, target, send_wzlr) = Harness::probe(&out).expect("probe");
    assert_eq!(target, "10.0.0.1:2200".parse().unwrap());
    assert!(!send_wzlr);
    assert!(responses(&out, 1).is_empty());
    sim.lobby
        .handle_probe_result(sim.now, probe, ProbeResult::Connected);
    let out = sim.out();
    assert_eq!(responses(&out, 1)[0]["result"]["motd"], "hello");
    assert!(resumed(&out, 1));
    // A second game on the same connection is refused.
    assert_eq!(call(&mut sim, 1, ADD_GAME)["status"], -403);

    open_v4(&mut sim, 2, PLAYER);
    sim.send(2, &frame(ADD_GAME));
    assert!(Harness::probe(&sim.out()).is_some());
    sim.advance(Duration::from_secs(3));
    let out = sim.out();
    let reply = &responses(&out, 2)[0];
    assert_eq!(reply["status"], -403);
    assert!(reply["result"]
        .as_str()
        .unwrap()
        .contains("Game unreachable"));
    assert_eq!(sim.lobby.games().count(), 1);
}

#[test]
fn one_game_table_for_both_protocols() {
    let mut sim = v4_harness(config(LoginPolicy::Off, false));
    open_v4(&mut sim, 1, HOST_V4);
    let v4_id = call(&mut sim, 1, ADD_GAME)["result"]["gameId"]
        .as_i64()
        .unwrap() as u32;
    sim.open(2, PLAYER);
    sim.send(2, b"gaId\0");
    let legacy_id = {
        let out = sim.out();
        let bytes = Harness::sent(&out, 2);
        u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    };
    sim.send(
        2,
        &addg(&host_struct("4.x", "Legacy game", legacy_id, 2100)),
    );
    let (code, _, _) = parse_status(&Harness::sent(&sim.out(), 2)).unwrap();
    assert_eq!(code, 200);

    // A legacy browser sees both, the v4 game as a version 4 GAMESTRUCT.
    let list = sim.list(9);
    let games = read_list_4x(&list).unwrap().games;
    assert_eq!(games.len(), 2);
    assert_eq!(games[0].game_id, v4_id);
    assert_eq!(games[0].version, 4);
    assert_eq!(games[0].host_port, 2200);
    assert_eq!(&games[0].name[..9], b"Fast, NTW");
    assert_eq!(games[0].max_players, 8);
    assert_eq!(games[0].game_version_major, 0x4000);
    assert_eq!(games[1].game_id, legacy_id);

    // A v4 browser sees both too.
    open_v4(&mut sim, 3, PLAYER);
    let list = call(&mut sim, 3, r#"{"method": "list", "id": 4}"#);
    assert_eq!(list["result"]["count"], 2);
    let second = &list["result"]["list"][1];
    assert_eq!(
        (
            second["gameId"].clone(),
            second["host"].clone(),
            second["port"].clone()
        ),
        (json!(legacy_id), json!("10.0.0.2"), json!(2100))
    );
    assert_eq!(second["description"], "Legacy game");
}

#[test]
fn silent_v4_host_is_delisted() {
    let mut sim = v4_harness(WzConfig {
        silence_timeout: Duration::from_secs(30),
        ..config(LoginPolicy::Off, false)
    });
    open_v4(&mut sim, 1, HOST_V4);
    assert_eq!(call(&mut sim, 1, ADD_GAME)["status"], 0);
    sim.advance(Duration::from_secs(29));
    assert_eq!(sim.lobby.games().count(), 1);
    sim.advance(Duration::from_secs(2));
    assert!(Harness::closed(&sim.out(), 1));
    assert_eq!(sim.lobby.games().count(), 0);
    assert_eq!(sim.lobby.stats.removals(Removal::Silence), 1);
}

/// Arbitrary frames (lengths and bodies) on v4 connections, with arbitrary verdicts and
/// probe results, never panic, always answer or close, and hold nothing unbounded.
#[test]
fn arbitrary_frames_never_panic() {
    fn run(chunks: Vec<(u8, Vec<u8>)>) -> bool {
        let mut sim = v4_harness(config(LoginPolicy::Optional, true));
        open_v4(&mut sim, 1, HOST_V4);
        for (pick, body) in chunks {
            let bytes = match pick % 4 {
                // A well-framed body of arbitrary bytes.
                0 => {
                    let mut out = (body.len() as u32).to_be_bytes().to_vec();
                    out.extend_from_slice(&body);
                    out
                }
                // A well-framed JSON-looking body.
                1 => {
                    let text = format!(
                        r#"{{"method": "{}", "params": {{}}, "id": 1}}"#,
                        [
                            "login",
                            "addGame",
                            "list",
                            "addPlayer",
                            "delPlayer",
                            "delGame"
                        ][usize::from(pick) % 6]
                    );
                    frame(&text)
                }
                // Raw bytes: any framing at all.
                _ => body,
            };
            sim.send(1, &bytes);
            for output in sim.out() {
                match output {
                    WzOutput::Verify { job, .. } => {
                        let verdict = match pick % 3 {
                            0 => VerifyResult::Valid(UserId(1)),
                            1 => VerifyResult::Invalid,
                            _ => VerifyResult::Busy,
                        };
                        sim.lobby.handle_verify_result(sim.now, job, verdict);
                    }
                    WzOutput::Probe { probe, .. } => {
                        sim.lobby
                            .handle_probe_result(sim.now, probe, ProbeResult::Refused)
                    }
                    WzOutput::Close { conn } => {
                        sim.close(conn.0);
                        open_v4(&mut sim, conn.0, HOST_V4);
                    }
                    WzOutput::Resume { conn } => sim.send(conn.0, b""),
                    WzOutput::Send { .. } => {}
                }
            }
            let _ = sim.out();
            if sim.lobby.games().count() > 1 || sim.lobby.probes_in_flight() > 1 {
                return false;
            }
        }
        true
    }
    QuickCheck::new()
        .tests(300)
        .quickcheck(run as fn(Vec<(u8, Vec<u8>)>) -> bool);
}

/// Hostile crowds: until a request is answered with success, frames do not extend a v4
/// connection's deadline, which counts from the connection's open; after one, the silence
/// timeout applies.
#[test]
fn an_unsettled_v4_connection_is_closed_at_the_handshake_deadline() {
    let mut sim = v4_harness(config(LoginPolicy::Off, false));
    open_v4(&mut sim, 1, HOST_V4);
    open_v4(&mut sim, 2, PLAYER);
    assert_eq!(sim.lobby.oldest_unsettled(), Some(ConnId(1)));
    for _ in 0..4 {
        sim.advance(Duration::from_secs(1));
        let reply = call(&mut sim, 1, "{not json");
        assert_eq!(reply["status"], -32700);
    }
    let reply = call(&mut sim, 2, r#"{"method": "list", "id": 1}"#);
    assert_eq!(reply["status"], 0);
    assert_eq!(sim.lobby.oldest_unsettled(), Some(ConnId(1)));
    sim.advance(Duration::from_secs(1));
    let out = sim.out();
    assert!(Harness::closed(&out, 1), "{out:?}");
    assert!(!Harness::closed(&out, 2));
    let idle = ProtocolError::IdleTimeout;
    assert_eq!(sim.lobby.stats.protocol_errors_of(idle), 1);
    sim.close(1);
    assert_eq!(sim.lobby.oldest_unsettled(), None);
    // The settled one lives on its silence deadline, from its last frame (at 4 s).
    sim.advance(Duration::from_secs(88));
    assert!(!Harness::closed(&sim.out(), 2));
    sim.advance(Duration::from_secs(1));
    assert!(Harness::closed(&sim.out(), 2));
}

/// A refused login or a refused game does not settle a connection; a successful login does.
#[test]
fn only_a_successful_answer_settles_a_v4_connection() {
    let mut sim = v4_harness(config(LoginPolicy::Optional, true));
    open_v4(&mut sim, 1, HOST_V4);
    let reply = login_answered(&mut sim, 1, VerifyResult::Invalid);
    assert_eq!(reply["status"], -405);
    sim.send(1, &frame(ADD_GAME));
    let (probe, _, _) = Harness::probe(&sim.out()).unwrap();
    sim.lobby
        .handle_probe_result(sim.now, probe, ProbeResult::Refused);
    assert_eq!(responses(&sim.out(), 1)[0]["status"], -403);
    assert_eq!(sim.lobby.oldest_unsettled(), Some(ConnId(1)));
    login(&mut sim, 1, 7);
    assert_eq!(sim.lobby.oldest_unsettled(), None);
    sim.advance(Duration::from_secs(6));
    assert!(!Harness::closed(&sim.out(), 1));
}

/// A group of nodes: this node's listed games leave as game records (what another node
/// lists), and the other nodes' records handed in are listed after this node's own, to
/// legacy and v4 browsers alike, within the list's cap; empty takes them out again.
#[test]
fn other_nodes_games_follow_this_nodes_own() {
    use crate::wire::directory::{GameRecord, GAME_RECORD_LEN};
    let mut sim = v4_harness(WzConfig {
        list_limit: 3,
        ..config(LoginPolicy::Off, false)
    });
    sim.open(1, PLAYER);
    sim.send(1, b"gaId\0");
    let id = {
        let bytes = Harness::sent(&sim.out(), 1);
        u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    };
    let before = sim.lobby.list_generation();
    sim.send(1, &addg(&host_struct("4.x", "Here", id, 2100)));
    assert_ne!(
        sim.lobby.list_generation(),
        before,
        "a new game changes the generation"
    );
    let mut mine = Vec::new();
    sim.lobby.listed_records(200, &mut mine);
    assert_eq!(mine.len(), GAME_RECORD_LEN);
    let record = GameRecord::from_bytes(mine[..].try_into().unwrap());
    assert_eq!(
        (record.game_id, record.port, record.host),
        (id, 2100, PLAYER)
    );

    // Three games of other nodes, one of them unnamed (not shown to v4 browsers).
    let mut remote = Vec::new();
    for (n, name) in ["There", "", "Far"].iter().enumerate() {
        let gamestruct = host_struct("4.x", name, 50 + n as u32, 2300);
        let mut slot = [0u8; GAME_RECORD_LEN];
        let host = IpAddr::V4(Ipv4Addr::new(10, 0, 1, n as u8));
        let game = GameRecord {
            game_id: 50 + n as u32,
            port: 2300,
            host,
            gamestruct: &gamestruct,
        };
        game.emit(&mut slot);
        remote.extend_from_slice(&slot);
    }
    remote.push(7); // a partial record is dropped
    sim.lobby.handle_remote_games(remote);
    assert_eq!(sim.lobby.remote_games(), 3);

    let games = read_list_4x(&sim.list(9)).unwrap().games;
    let ids: Vec<u32> = games.iter().map(|g| g.game_id).collect();
    assert_eq!(
        ids,
        [id, 50, 51],
        "this node's first, cut at the list's cap"
    );

    open_v4(&mut sim, 3, PLAYER);
    let list = call(&mut sim, 3, r#"{"method": "list", "id": 4}"#);
    assert_eq!(list["result"]["count"], 3);
    let there = &list["result"]["list"][1];
    assert_eq!(
        (
            there["gameId"].clone(),
            there["host"].clone(),
            there["port"].clone()
        ),
        (json!(50), json!("10.0.1.0"), json!(2300))
    );
    assert_eq!(list["result"]["list"][2]["description"], "Far");

    sim.lobby.handle_remote_games(Vec::new());
    let games = read_list_4x(&sim.list(9)).unwrap().games;
    assert_eq!(games.len(), 1);
}
