//! Replays every committed fuzz input, `fuzz/corpus/TARGET/*` and the crash reproducers
//! `fuzz/regressions/TARGET/*`, through the fuzz targets' own entry points
//! (`lobbyd::fuzzing::TARGETS`) on the stable toolchain: a bug a campaign once found stays
//! fixed, and the corpora keep exercising every parser and core in CI.
//!
//! `cargo test --test it -- --ignored write_seed_corpora` writes the seed inputs
//! the corpora started from: the golden messages of each wire module, built by the emitters
//! their golden-vector tests check, and seeded random scripts for the core targets.
//! `replay_one` (ignored) runs a single input, for reading a crash.

use std::net::Ipv4Addr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::{fs, io};

use lobbyd::fuzzing::script::{Choices, ScriptRng};
use lobbyd::fuzzing::{target, TARGETS};
use lobbyd::wire::general::{self, ErrorCode, ParamWriter};
use lobbyd::wire::instance::{self, ClientMsg, ServerMsg};
use lobbyd::wire::tcp_lobby::{self, name_field, GameStart, PlayerInfo};
use lobbyd::wire::tcp_upstream as up;
use lobbyd::wire::udp_lobby::{self, emit_room_list, Reply, Request, RoomRecord, RoomState};
use lobbyd::wire::wz::v4::{Encoding, Value};
use lobbyd::wire::wz::{
    c_string, emit_probe_reply, push_status, GameStructRepr, ListReplyWriter, GAMESTRUCT_LEN,
};

fn fuzz_dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(kind)
}

/// The files of `fuzz/KIND/TARGET/`, none if the folder does not exist.
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let Ok(dir) = fs::read_dir(fuzz_dir(kind).join(target)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = dir.filter_map(|e| Some(e.ok()?.path())).collect();
    files.sort();
    files
}

#[test]
fn every_committed_corpus_file_and_reproducer_replays_clean() {
    // Every folder names a target, so a renamed target cannot leave its inputs unreplayed.
    for kind in ["corpus", "regressions"] {
        let Ok(dir) = fs::read_dir(fuzz_dir(kind)) else {
            continue;
        };
        for entry in dir.map(|e| e.expect("a readable fuzz folder")) {
            let name = entry.file_name().to_string_lossy().into_owned();
            assert!(
                target(&name).is_some(),
                "fuzz/{kind}/{name}: no such target"
            );
        }
    }
    let mut failures = Vec::new();
    for (name, run) in TARGETS {
        let corpus = inputs("corpus", name);
        assert!(!corpus.is_empty(), "fuzz/corpus/{name} is empty");
        for path in corpus.iter().chain(&inputs("regressions", name)) {
            let data = fs::read(path).expect("a readable corpus file");
            if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
                failures.push(path.display().to_string());
            }
        }
    }
    assert!(failures.is_empty(), "inputs that fail: {failures:#?}");
}

/// Replays one input on a stable build, for reading a crash (a core target prints its steps
/// and outputs with `LOBBYD_FUZZ_TRACE=1`):
/// `FUZZ_TARGET=core_wz FUZZ_INPUT=fuzz/artifacts/core_wz/crash-... cargo test --test it
/// -- --ignored replay_one --nocapture`.
#[test]
#[ignore = "needs FUZZ_TARGET and FUZZ_INPUT"]
fn replay_one() {
    let name = std::env::var("FUZZ_TARGET").expect("FUZZ_TARGET names a target");
    let path = std::env::var("FUZZ_INPUT").expect("FUZZ_INPUT names a file");
    let run = target(&name).expect("a known target");
    run(&fs::read(path).expect("a readable input"));
}

/// Writes the seeds into `fuzz/corpus/TARGET/seed-N` (run before the first campaign).
#[test]
#[ignore = "writes files; run by hand to regenerate the seed corpora"]
fn write_seed_corpora() -> io::Result<()> {
    let seeds: [(&str, Vec<Vec<u8>>); 19] = [
        ("wire_udp_lobby", udp_lobby()),
        ("wire_instance", instance()),
        ("wire_tcp_lobby", tcp_lobby()),
        ("wire_tcp_upstream", tcp_upstream()),
        ("wire_directory", directory()),
        ("wire_udp_upstream", udp_upstream()),
        ("wire_wz_legacy", wz_legacy()),
        (
            "wire_wz_gamestruct",
            vec![host_struct(3).to_vec(), host_struct(4).to_vec()],
        ),
        ("wire_wz_v4", wz_v4()),
        ("wire_http", http()),
        ("wire_ws_upgrade", ws_upgrade()),
        ("wire_ws_frames", ws_frames()),
        ("wire_general_frames", general_frames()),
        ("wire_general_params", general_params()),
        ("core_rtype_udp", scripts(1)),
        ("core_rtype_tcp", scripts(2)),
        ("core_rtype_exec", scripts(5)),
        ("core_wz", scripts(3)),
        ("core_general", scripts(4)),
    ];
    for (name, inputs) in seeds {
        let dir = fuzz_dir("corpus").join(name);
        fs::create_dir_all(&dir)?;
        for (n, input) in inputs.iter().enumerate() {
            fs::write(dir.join(format!("seed-{n}")), input)?;
        }
    }
    Ok(())
}

/// Node tables: empty, one room, two rooms of which one full.
fn directory() -> Vec<Vec<u8>> {
    use lobbyd::wire::directory::NodeRoomsRepr;
    let records: Vec<u8> = [(1u32, 1u16, 4u16, 0u8), (2, 4, 4, 2)]
        .iter()
        .flat_map(|&(local, players, max, state)| {
            let mut record = [0u8; 13];
            record[..4].copy_from_slice(&(5 << 24 | local).to_be_bytes());
            record[4..6].copy_from_slice(&players.to_be_bytes());
            record[6..8].copy_from_slice(&max.to_be_bytes());
            record[8..10].copy_from_slice(&4300u16.to_be_bytes());
            record[10] = state;
            record
        })
        .collect();
    [0, 13, 26]
        .iter()
        .map(|&len| {
            let table = NodeRoomsRepr::new(5, len as u64, &records[..len]).expect("whole records");
            emit(table.buffer_len(), |buf| table.emit(buf))
        })
        .collect()
}

fn emit(len: usize, emit: impl FnOnce(&mut [u8]) -> usize) -> Vec<u8> {
    let mut buf = vec![0; len];
    let n = emit(&mut buf);
    buf.truncate(n);
    buf
}

/// The upstream dialect's golden messages (both record layouts), and a bad-CRC and a
/// compressed LIST_ROOMS.
fn udp_upstream() -> Vec<Vec<u8>> {
    use lobbyd::wire::udp_upstream::lobby::{
        emit_room_list, CreateRoom, JoinCredentials, Reply, ReplyRepr, Request, RequestRepr,
        RoomConfig,
    };
    use lobbyd::wire::udp_upstream::records::{ListedRoom, RecordLayout};
    let mut out: Vec<Vec<u8>> = [
        Request::ListRooms,
        Request::CreateRoom(None),
        Request::CreateRoom(Some(CreateRoom {
            visibility: 0,
            name: b"Alpha",
            password: b"pw12",
        })),
        Request::JoinRoom {
            room_id: 7,
            credentials: None,
        },
        Request::JoinRoom {
            room_id: 7,
            credentials: Some(JoinCredentials {
                password: b"pw12",
                spectator: Some(0),
            }),
        },
        Request::Other(0x50),
    ]
    .into_iter()
    .map(|request| {
        let repr = RequestRepr { seq: 1, request };
        emit(repr.buffer_len(), |b| repr.emit(b))
    })
    .collect();
    for reply in [
        Reply::RoomCreated {
            room_id: 7,
            port: 50107,
        },
        Reply::JoinSuccess {
            room_id: 7,
            port: 50107,
        },
        Reply::JoinFailed,
        Reply::RoomConfig(RoomConfig::upstream_default(7)),
    ] {
        let repr = ReplyRepr { seq: 1, reply };
        out.push(emit(repr.buffer_len(), |b| repr.emit(b)));
    }
    let room = ListedRoom {
        room_id: 7,
        player_count: 1,
        max_players: 4,
        port: 50107,
        password_protected: 1,
        name: b"Alpha",
        ..ListedRoom::default()
    };
    for layout in [RecordLayout::V1, RecordLayout::V3] {
        out.push(emit(2048, |b| emit_room_list(b, 2, layout, [room, room])));
    }
    let mut bad_crc = out[0].clone();
    bad_crc[20] ^= 1;
    let mut compressed = out[0].clone();
    compressed[4] |= 0x80;
    out.extend([bad_crc, compressed]);
    out
}

fn udp_lobby() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = [
        Request::ListRooms,
        Request::CreateRoom,
        Request::JoinRoom { room_id: 7 },
    ]
    .into_iter()
    .map(|request| {
        let repr = udp_lobby::RequestRepr { seq: 1, request };
        emit(repr.buffer_len(), |b| repr.emit(b))
    })
    .collect();
    for reply in [
        Reply::RoomCreated {
            room_id: 7,
            port: 4300,
        },
        Reply::JoinSuccess {
            room_id: 7,
            port: 4300,
        },
        Reply::JoinFailed,
    ] {
        let repr = udp_lobby::ReplyRepr { seq: 2, reply };
        out.push(emit(repr.buffer_len(), |b| repr.emit(b)));
    }
    let rooms = (1..=2).map(|n| RoomRecord {
        room_id: n,
        player_count: 1,
        max_players: 4,
        port: 4300 + n as u16,
        state: u8::from(RoomState::Waiting),
    });
    out.push(emit(udp_lobby::MAX_UNFRAGMENTED, |b| {
        emit_room_list(b, 3, rooms)
    }));
    out
}

fn instance() -> Vec<Vec<u8>> {
    let client = [
        ClientMsg::Hello { token: None },
        ClientMsg::Hello {
            token: Some(0x1122),
        },
        ClientMsg::Data {
            target: instance::BROADCAST,
            data: b"game bytes",
        },
        ClientMsg::Leave,
        ClientMsg::Start,
        ClientMsg::Ping,
    ]
    .map(|msg| {
        let repr = instance::ClientRepr { seq: 5, msg };
        emit(repr.buffer_len(), |b| repr.emit(b))
    });
    let server = [
        ServerMsg::Welcome {
            slot: 1,
            player_count: 1,
            max_players: 4,
            state: RoomState::Waiting,
        },
        ServerMsg::Data {
            sender: 2,
            data: b"game bytes",
        },
        ServerMsg::PeerJoined(2),
        ServerMsg::Countdown(3),
        ServerMsg::Started,
        ServerMsg::Pong,
    ]
    .map(|msg| {
        let repr = instance::ServerRepr { seq: 6, msg };
        emit(repr.buffer_len(), |b| repr.emit(b))
    });
    client.into_iter().chain(server).collect()
}

fn tcp_lobby() -> Vec<Vec<u8>> {
    let alice = name_field("Alice");
    let client = [
        tcp_lobby::ClientRepr::ConnectReq { name: &alice },
        tcp_lobby::ClientRepr::ReadyReq { ready: true },
        tcp_lobby::ClientRepr::StartReq,
        tcp_lobby::ClientRepr::Disconnect,
    ]
    .map(|repr| emit(repr.buffer_len(), |b| repr.emit(b)));
    let slots = [1, 2].map(|number| {
        let info = PlayerInfo {
            number,
            hash: 0xABCD + u64::from(number),
            name: alice,
        };
        (info, (100.0, 100.0 * f32::from(number)))
    });
    let start = GameStart::new(Ipv4Addr::new(127, 0, 0, 1), 4300, &slots).expect("two players");
    let server = [
        tcp_lobby::ServerRepr::ConnectAck {
            hash: 0xABCD,
            number: 1,
        },
        tcp_lobby::ServerRepr::PlayerJoin {
            number: 1,
            hash: 0xABCD,
            name: &alice,
            ready: false,
        },
        tcp_lobby::ServerRepr::GameStart(start),
        tcp_lobby::ServerRepr::Countdown { remaining: 2.5 },
        tcp_lobby::ServerRepr::Error {
            code: tcp_lobby::ErrorCode::LobbyFull,
            message: "Lobby full",
        },
    ]
    .map(|repr| emit(repr.buffer_len(), |b| repr.emit(b)));
    let mut out: Vec<Vec<u8>> = vec![client.concat(), b"\x10\xff\xff".to_vec()];
    out.extend(client);
    out.extend(server);
    out
}

fn tcp_upstream() -> Vec<Vec<u8>> {
    let alice = name_field("Alice");
    let room = name_field("probe");
    let client = [
        up::ClientRepr::ListRoomsReq,
        up::ClientRepr::CreateRoomReq { name: &room },
        up::ClientRepr::JoinRoomReq { room_id: 1 },
        up::ClientRepr::ConnectReq { name: &alice },
        up::ClientRepr::ReadyReq { hash: 0xABCD },
        up::ClientRepr::StartReq,
        up::ClientRepr::Disconnect { hash: 0xABCD },
    ]
    .map(|repr| emit(repr.buffer_len(), |b| repr.emit(b)));
    let record = up::RoomRecord {
        id: 1,
        name: room,
        players: 2,
        max_players: 4,
        in_game: false,
    };
    let records = [record; 3];
    let list = up::RoomList::new(&records).expect("three fit");
    let server = [
        up::ServerRepr::ListRoomsAck(list),
        up::ServerRepr::RoomUpdate(record),
        up::ServerRepr::ConnectAck {
            status: up::ConnectStatus::Accepted,
            hash: 0xABCD,
            number: 1,
        },
        up::ServerRepr::PlayerJoin {
            number: 1,
            hash: 0xABCD,
            name: &alice,
        },
        up::ServerRepr::Countdown { seconds: 5 },
        up::ServerRepr::GameStart {
            seed: 7,
            tick_rate: up::UPSTREAM_TICK_RATE,
        },
    ]
    .map(|repr| emit(repr.buffer_len(), |b| repr.emit(b)));
    // A whole client session, a bad length then a good frame, and each message alone.
    let mut out: Vec<Vec<u8>> = vec![
        client.concat(),
        b"\xff\x00\x00\x00\x01\x01\x00\x00\x00\x01".to_vec(),
    ];
    out.extend(client);
    out.extend(server);
    out
}

/// A GAMESTRUCT as a 3.x (version 3) or 4.x (version 4) host fills it.
fn host_struct(version: u32) -> [u8; GAMESTRUCT_LEN] {
    let mut repr = GameStructRepr::zeroed(version);
    repr.name = c_string(b"Fast NTW");
    repr.dw_size = 72;
    repr.max_players = 4;
    repr.current_players = 1;
    repr.host_port = if version == 4 { 2100 } else { 0 };
    repr.map_name = c_string(b"Rush");
    repr.host_name = c_string(b"player");
    repr.version_string = c_string(b"4.3.3");
    repr.game_version_major = 0x4000;
    repr.game_version_minor = 0x4f;
    repr.game_id = 9;
    repr.to_bytes()
}

fn wz_legacy() -> Vec<Vec<u8>> {
    let mut host = b"gaId\0addg\0".to_vec();
    host.extend_from_slice(&host_struct(4));
    host.extend_from_slice(b"keep\0");
    let mut status = Vec::new();
    push_status(&mut status, 200, b"Welcome");
    let mut list = Vec::new();
    let games = [host_struct(3), host_struct(4)];
    ListReplyWriter::new(&mut list).write(games.iter(), 200, b"Welcome");
    vec![
        host,
        b"list\0".to_vec(),
        b"motd\0".to_vec(),
        status,
        list,
        emit_probe_reply(9).to_vec(),
    ]
}

fn wz_v4() -> Vec<Vec<u8>> {
    let request = |method: &'static str, params: Vec<(&'static str, Value)>| {
        let params = params.into_iter().map(|(k, v)| (k.into(), v)).collect();
        Value::Object(vec![
            ("method".into(), Value::String(method.into())),
            ("params".into(), Value::Object(params)),
            ("id".into(), Value::Int(1)),
        ])
    };
    let login = request(
        "login",
        vec![
            ("username", Value::String("u".into())),
            ("password", Value::String("p".into())),
        ],
    );
    let add = request(
        "addGame",
        vec![
            ("description", Value::String("Fast, NTW".into())),
            ("maxPlayers", Value::Int(8)),
            ("currentPlayers", Value::Int(1)),
            ("port", Value::Int(2200)),
        ],
    );
    let mut out = Vec::new();
    for encoding in [Encoding::Json, Encoding::Bson] {
        let mut session = b"version\0\0\0\0\x04".to_vec();
        login.encode(encoding, &mut session);
        add.encode(encoding, &mut session);
        request("list", Vec::new()).encode(encoding, &mut session);
        out.push(session);
        let mut body = Vec::new();
        add.encode_document(encoding, &mut body);
        out.push(body);
    }
    out
}

fn http() -> Vec<Vec<u8>> {
    [
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "HEAD /rooms HTTP/1.0\r\n\r\n",
        "GET /wz/games?x=1 HTTP/1.1\r\nAccept: */*\r\n\r\n",
        "POST / HTTP/1.1\r\n\r\n",
    ]
    .map(|text| text.as_bytes().to_vec())
    .to_vec()
}

fn ws_upgrade() -> Vec<Vec<u8>> {
    let upgrade = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
                   Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
    [
        format!("GET /lobby HTTP/1.1\r\nHost: 127.0.0.1:4244\r\n{upgrade}\r\n"),
        format!("GET /lobby HTTP/1.1\r\n{upgrade}Origin: https://game.example\r\n\r\n"),
        format!("GET /chat HTTP/1.1\r\n{upgrade}\r\n"),
        "GET /index.html?v=1 HTTP/1.1\r\nHost: x\r\n\r\n".into(),
        "GET /lobby HTTP/1.1\r\n\r\n".into(),
        "HEAD /../x HTTP/1.1\r\n\r\n".into(),
    ]
    .map(String::into_bytes)
    .to_vec()
}

fn ws_frames() -> Vec<Vec<u8>> {
    use lobbyd::wire::websocket::frame::{emit_client_frame, OpCode};
    let key = [0x37, 0xfa, 0x21, 0x3d];
    let ping = general_frames().remove(0);
    let mut seeds = Vec::new();
    // flags (bit 0: a message has begun), the cap (u16 LE), then the stream.
    let mut one = vec![0, 0x00, 0x40];
    emit_client_frame(&mut one, true, OpCode::Binary, key, &ping);
    emit_client_frame(&mut one, true, OpCode::Ping, key, b"hi");
    seeds.push(one);
    let mut fragmented = vec![0, 0x00, 0x02];
    emit_client_frame(&mut fragmented, false, OpCode::Binary, key, &ping[..4]);
    emit_client_frame(&mut fragmented, true, OpCode::Pong, key, b"");
    emit_client_frame(&mut fragmented, true, OpCode::Continuation, key, &ping[4..]);
    emit_client_frame(
        &mut fragmented,
        true,
        OpCode::Close,
        key,
        &1000u16.to_be_bytes(),
    );
    seeds.push(fragmented);
    let mut refused = vec![1, 0xff, 0xff];
    emit_client_frame(&mut refused, true, OpCode::Continuation, key, &[0; 300]);
    emit_client_frame(&mut refused, true, OpCode::Text, key, b"text");
    seeds.push(refused);
    seeds.push(vec![
        0, 0x10, 0x00, 0x82, 0x05, b'h', b'e', b'l', b'l', b'o',
    ]);
    seeds
}

fn general_frames() -> Vec<Vec<u8>> {
    let token = [7u8; general::TOKEN_LEN];
    let client = [
        general::ClientRepr::SignIn {
            username: "ann",
            password: "pw",
            resume: Some(&token),
        },
        general::ClientRepr::Chat {
            game: 0,
            text: "hello",
        },
        general::ClientRepr::CreateGame {
            max_players: 4,
            game_type: "tictactoe",
            version: "1",
            flags: 1,
            name: "g",
            password: "pw",
        },
        general::ClientRepr::JoinRequest {
            game: 1,
            request: 7,
            password: "pw",
        },
        general::ClientRepr::StoreData {
            game: 1,
            key: "k",
            value: b"value",
        },
        general::ClientRepr::ListGames {
            game_type: "",
            flags_clear: 2,
            min_free: 1,
        },
        general::ClientRepr::Ping { payload: b"p" },
    ]
    .map(|repr| emit(repr.buffer_len(), |b| repr.emit(b)));
    let server = [
        general::ServerRepr::Hello {
            server_name: "lobbyd",
            version: general::PROTOCOL_VERSION,
        },
        general::ServerRepr::Welcome {
            member: 1,
            token: &token,
        },
        general::ServerRepr::Error {
            code: ErrorCode::Malformed,
            request: 0x30,
            text: "malformed",
        },
        general::ServerRepr::SyncDone,
    ]
    .map(|repr| emit(repr.buffer_len(), |b| repr.emit(b)));
    let mut out = vec![client.concat()];
    out.extend(client);
    out.extend(server);
    out
}

fn general_params() -> Vec<Vec<u8>> {
    use lobbyd::wire::general::params::ParamSink;
    let mut buf = vec![0u8; 64];
    let mut writer = ParamWriter::new(&mut buf);
    writer.i32(-5);
    writer.u32(7);
    writer.str("text");
    writer.bytes(&[1, 0, 0, 0, 2, 0, 0, 0]);
    let len = writer.len();
    buf.truncate(len);
    vec![buf.clone(), buf[..7].to_vec(), buf[14..].to_vec()]
}

/// Eight random scripts of 64 to 2048 bytes: the fuzzer grows its corpus from there.
fn scripts(seed: u64) -> Vec<Vec<u8>> {
    let mut rng = ScriptRng(seed);
    (0..8u32)
        .map(|n| {
            let len = 64usize << (n % 6);
            (0..len).map(|_| rng.below(256) as u8).collect()
        })
        .collect()
}
