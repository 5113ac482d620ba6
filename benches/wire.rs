//! criterion benches of every protocol's parsers and emitters (`lobbyd-wire/src/`): the per-message
//! cost the server pays before its core sees a request and after it decides a reply.
//!
//! Groups: `udp_lobby`, `instance`, `tcp_lobby`, `wz_legacy`, `wz_v4`. Inputs are built
//! once with the same module's emitters, so each bench measures exactly one direction.

use std::borrow::Cow;
use std::hint::black_box;
use std::net::Ipv4Addr;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use lobbyd::wire::instance::{self, ClientMsg, ClientRepr, ServerMsg, ServerRepr};
use lobbyd::wire::tcp_lobby::{self, name_field, GameStart, PlayerInfo, Slot};
use lobbyd::wire::udp_lobby::{
    emit_room_list, ReplyRepr, Request, RequestRepr, RoomRecord, RoomState,
};
use lobbyd::wire::wz::v4::{self as wz_v4, Encoding, Response, Value};
use lobbyd::wire::wz::{next_item, GameStruct, GameStructRepr, ListReplyWriter, GAMESTRUCT_LEN};

fn records(n: u32) -> impl Iterator<Item = RoomRecord> + Clone {
    (1..=n).map(|i| RoomRecord {
        room_id: i,
        player_count: 2,
        max_players: 4,
        port: 4300 + i as u16,
        state: 0,
    })
}

fn udp_lobby(c: &mut Criterion) {
    let mut g = c.benchmark_group("udp_lobby");
    g.throughput(Throughput::Elements(1));
    let mut list_req = [0u8; 16];
    let len = RequestRepr {
        seq: 7,
        request: Request::ListRooms,
    }
    .emit(&mut list_req);
    let list_req = &list_req[..len];
    g.bench_function("parse_list_rooms", |b| {
        b.iter(|| RequestRepr::parse(black_box(list_req)))
    });
    let mut join_req = [0u8; 16];
    g.bench_function("emit_join_room", |b| {
        b.iter(|| {
            RequestRepr {
                seq: 3,
                request: Request::JoinRoom {
                    room_id: black_box(42),
                },
            }
            .emit(&mut join_req)
        })
    });
    let mut buf = [0u8; 2048];
    g.bench_function("emit_room_list_64", |b| {
        b.iter(|| emit_room_list(&mut buf, 7, black_box(records(64))))
    });
    let len = emit_room_list(&mut buf, 7, records(64));
    let list = buf[..len].to_vec();
    g.bench_function("parse_room_list_64", |b| {
        b.iter(|| match ReplyRepr::parse(black_box(&list)) {
            Ok(ReplyRepr {
                reply: lobbyd::wire::udp_lobby::Reply::RoomList(l),
                ..
            }) => l.iter().count(),
            _ => 0,
        })
    });
    g.finish();
}

fn instance_wire(c: &mut Criterion) {
    let mut g = c.benchmark_group("instance");
    g.throughput(Throughput::Elements(1));
    let mut data = [0u8; 128];
    let len = ClientRepr {
        seq: 9,
        msg: ClientMsg::Data {
            target: 0xFF,
            data: &[0x5a; 51],
        },
    }
    .emit(&mut data);
    let data = data[..len].to_vec();
    g.bench_function("parse_data_64", |b| {
        b.iter(|| ClientRepr::parse(black_box(&data)).is_ok())
    });
    let mut rewritten = data.clone();
    g.bench_function("rewrite_data_for_delivery_64", |b| {
        b.iter(|| instance::rewrite_data_for_delivery(black_box(&mut rewritten), 2))
    });
    let mut out = [0u8; 64];
    g.bench_function("emit_hello_token", |b| {
        b.iter(|| {
            ClientRepr {
                seq: 1,
                msg: ClientMsg::Hello {
                    token: Some(black_box(0x0123_4567_89ab_cdef)),
                },
            }
            .emit(&mut out)
        })
    });
    let welcome = ServerMsg::Welcome {
        slot: 2,
        player_count: 3,
        max_players: 4,
        state: RoomState::Waiting,
    };
    let len = ServerRepr {
        seq: 1,
        msg: welcome,
    }
    .emit(&mut out);
    let welcome_bytes = out[..len].to_vec();
    g.bench_function("parse_welcome", |b| {
        b.iter(|| ServerRepr::parse(black_box(&welcome_bytes)).is_ok())
    });
    g.finish();
}

fn tcp_lobby_wire(c: &mut Criterion) {
    let mut g = c.benchmark_group("tcp_lobby");
    g.throughput(Throughput::Elements(1));
    let name = name_field("Alice");
    let mut req = [0u8; 64];
    let len = tcp_lobby::ClientRepr::ConnectReq { name: &name }.emit(&mut req);
    let req = req[..len].to_vec();
    g.bench_function("next_frame_parse_connect_req", |b| {
        b.iter(|| match tcp_lobby::next_frame(black_box(&req)) {
            tcp_lobby::Next::Frame { frame, .. } => tcp_lobby::ClientRepr::parse(&frame).is_ok(),
            _ => false,
        })
    });
    let slots: Vec<Slot> = (1..=4u8)
        .map(|n| {
            (
                PlayerInfo {
                    number: n,
                    hash: 0x1111 * u64::from(n),
                    name: name_field("player"),
                },
                (100.0, 100.0 * f32::from(n)),
            )
        })
        .collect();
    let start = GameStart::new(Ipv4Addr::new(192, 168, 1, 10), 4300, &slots).unwrap();
    let mut out = vec![0u8; 512];
    g.bench_function("emit_game_start_4", |b| {
        b.iter(|| tcp_lobby::ServerRepr::GameStart(black_box(start)).emit(&mut out))
    });
    let len = tcp_lobby::ServerRepr::GameStart(start).emit(&mut out);
    let game_start = out[..len].to_vec();
    g.bench_function("parse_game_start_4", |b| {
        b.iter(|| {
            match tcp_lobby::next_frame_max(black_box(&game_start), tcp_lobby::MAX_SERVER_PAYLOAD) {
                tcp_lobby::Next::Frame { frame, .. } => {
                    match tcp_lobby::ServerRepr::parse(&frame) {
                        Ok(tcp_lobby::ServerRepr::GameStart(gs)) => gs.slots().count(),
                        _ => 0,
                    }
                }
                _ => 0,
            }
        })
    });
    let mut small = [0u8; 16];
    g.bench_function("emit_countdown", |b| {
        b.iter(|| {
            tcp_lobby::ServerRepr::Countdown {
                remaining: black_box(4.9),
            }
            .emit(&mut small)
        })
    });
    g.finish();
}

fn sample_gamestruct(id: u32) -> [u8; GAMESTRUCT_LEN] {
    let mut repr = GameStructRepr::zeroed(4);
    repr.name[..9].copy_from_slice(b"load game");
    repr.max_players = 8;
    repr.current_players = 2;
    repr.map_name[..6].copy_from_slice(b"Rush-T");
    repr.version_string[..5].copy_from_slice(b"4.3.3");
    repr.game_version_major = 4;
    repr.game_version_minor = 1;
    repr.game_id = id;
    repr.to_bytes()
}

fn wz_legacy(c: &mut Criterion) {
    let mut g = c.benchmark_group("wz_legacy");
    g.throughput(Throughput::Elements(1));
    let bytes = sample_gamestruct(7);
    g.bench_function("parse_gamestruct", |b| {
        b.iter(|| {
            GameStruct::new_checked(black_box(&bytes[..]))
                .and_then(|v| GameStructRepr::parse(&v))
                .is_ok()
        })
    });
    let repr = GameStructRepr::parse(&GameStruct::new_checked(&bytes[..]).unwrap()).unwrap();
    g.bench_function("emit_gamestruct", |b| b.iter(|| black_box(repr).to_bytes()));
    let mut stored = bytes;
    g.bench_function("sanitize_and_rewrite", |b| {
        b.iter(|| {
            let mut view = GameStruct::new_checked(&mut stored[..]).unwrap();
            view.sanitize_strings();
            view.set_host("127.0.0.1");
            view.set_game_id(black_box(9));
        })
    });
    g.bench_function("next_item_list_command", |b| {
        b.iter(|| next_item(black_box(b"list\0")))
    });
    let games: Vec<[u8; GAMESTRUCT_LEN]> = (1..=64).map(sample_gamestruct).collect();
    let mut out = Vec::with_capacity(128 * 1024);
    g.bench_function("write_list_reply_64", |b| {
        b.iter(|| {
            out.clear();
            ListReplyWriter::new(&mut out).write(games.iter(), 200, b"Welcome to lobbyd")
        })
    });
    g.finish();
}

fn v4_request(encoding: Encoding) -> Vec<u8> {
    let params = Value::Object(vec![
        (
            Cow::Borrowed("description"),
            Value::String("load game".into()),
        ),
        (Cow::Borrowed("maxPlayers"), Value::Int(8)),
        (Cow::Borrowed("currentPlayers"), Value::Int(1)),
        (Cow::Borrowed("port"), Value::Int(2100)),
        (Cow::Borrowed("mapname"), Value::String("Rush-T".into())),
        (Cow::Borrowed("multiVer"), Value::String("4.3.3".into())),
    ]);
    let request = Value::Object(vec![
        (Cow::Borrowed("method"), Value::String("addGame".into())),
        (Cow::Borrowed("params"), params),
        (Cow::Borrowed("id"), Value::Int(1)),
    ]);
    let mut framed = Vec::new();
    request.encode(encoding, &mut framed);
    framed.split_off(4)
}

fn wz_v4_wire(c: &mut Criterion) {
    let mut g = c.benchmark_group("wz_v4");
    g.throughput(Throughput::Elements(1));
    for (name, encoding) in [("bson", Encoding::Bson), ("json", Encoding::Json)] {
        let body = v4_request(encoding);
        g.bench_function(format!("decode_add_game_{name}"), |b| {
            b.iter(|| wz_v4::decode(black_box(&body)).is_ok())
        });
        let response = Response::text(wz_v4::OK, "game listed", Some(1));
        let mut out = Vec::with_capacity(256);
        g.bench_function(format!("encode_response_{name}"), |b| {
            b.iter(|| {
                out.clear();
                response.encode(encoding, &mut out);
                out.len()
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    udp_lobby,
    instance_wire,
    tcp_lobby_wire,
    wz_legacy,
    wz_v4_wire
);
criterion_main!(benches);
