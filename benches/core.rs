//! criterion benches of the lobby core's hot paths, without sockets: what one UDP request
//! costs the server's logic, so `scripts/bench.sh` can tell the core's share from the
//! kernel's.
//!
//! - `list_rooms_64`: LIST_ROOMS with 64 rooms: rate limiter, reply queued, ROOM_LIST of 64
//!   records emitted (the driver's whole per-request work apart from the two syscalls).
//! - `relay_data_broadcast_4`: DATA from one member of a 4-member room to the 3 others:
//!   membership lookup, idle refresh, destinations, in-place rewrite.
//! - `timer_wheel`: insert then drain 1024 timers a few ticks apart, and insert + cancel.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use lobbyd::lobby::{
    InstanceRequest, Lobby, LobbyConfig, LobbyReply, LobbyRequest, Output, RoomId,
};
use lobbyd::ratelimit::PerIpConfig;
use lobbyd::time::TimerWheel;
use lobbyd::wire::instance::{self, ClientMsg, ClientRepr};
use lobbyd::wire::udp_lobby::{emit_room_list, RoomRecord};

fn addr(n: u8, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, n)), port)
}

/// A lobby with no rate limits in the way (as `bench.sh` runs lobbyd).
fn lobby(now: Instant) -> Lobby {
    Lobby::new(
        LobbyConfig {
            max_rooms: 200,
            max_rooms_per_ip: 200,
            rate: PerIpConfig {
                rate: u64::from(u32::MAX),
                per: Duration::from_secs(1),
                burst: u64::from(u32::MAX),
                byte_rate: 0,
                byte_burst: 0,
                max_entries: 65_536,
            },
            ..LobbyConfig::default()
        },
        now,
    )
}

/// Creates `n` rooms, each with its instance bound on port 5000 + i; returns their ids.
fn with_rooms(lobby: &mut Lobby, now: Instant, n: u16) -> Vec<RoomId> {
    let mut rooms = Vec::new();
    for i in 0..n {
        lobby.handle_lobby_request(now, addr(1, 1000 + i), i, LobbyRequest::CreateRoom);
        while let Some(output) = lobby.poll_output() {
            if let Output::OpenInstance { room } = output {
                lobby.handle_instance_opened(now, room, Some(5000 + i));
                rooms.push(room);
            }
        }
    }
    while lobby.poll_output().is_some() {}
    rooms
}

fn list_rooms(c: &mut Criterion) {
    let now = Instant::now();
    let mut lobby = lobby(now);
    with_rooms(&mut lobby, now, 64);
    let client = addr(9, 40_000);
    let mut buf = [0u8; 2048];
    let mut group = c.benchmark_group("core");
    group.throughput(Throughput::Elements(1));
    group.bench_function("list_rooms_64", |b| {
        b.iter(|| {
            lobby.handle_lobby_request(now, client, 7, LobbyRequest::ListRooms);
            let mut len = 0;
            while let Some(output) = lobby.poll_output() {
                if let Output::Lobby {
                    seq,
                    reply: LobbyReply::RoomList,
                    ..
                } = output
                {
                    let records = lobby.room_list().map(|info| RoomRecord {
                        room_id: info.room.0,
                        player_count: info.player_count,
                        max_players: info.max_players,
                        port: info.port,
                        state: info.state.code(),
                    });
                    len = emit_room_list(&mut buf, seq, records);
                }
            }
            black_box(len)
        })
    });
    group.finish();
}

fn relay_data(c: &mut Criterion) {
    let now = Instant::now();
    let mut lobby = lobby(now);
    let room = with_rooms(&mut lobby, now, 1)[0];
    for member in 1..=4 {
        let request = InstanceRequest::Hello { token: None };
        lobby.handle_instance_request(now, room, addr(member, 2000), 0, request);
    }
    while lobby.poll_output().is_some() {}
    let mut datagram = [0u8; 64];
    let len = ClientRepr {
        seq: 1,
        msg: ClientMsg::Data {
            target: instance::BROADCAST,
            data: &[0x5a; 32],
        },
    }
    .emit(&mut datagram);
    let mut destinations = Vec::with_capacity(8);
    let mut group = c.benchmark_group("core");
    group.throughput(Throughput::Elements(1));
    group.bench_function("relay_data_broadcast_4", |b| {
        b.iter(|| {
            let sender = lobby.relay_data(now, room, addr(1, 2000), 0xFF, &mut destinations);
            if let Some(sender) = sender {
                instance::rewrite_data_for_delivery(&mut datagram[..len], sender);
            }
            black_box(destinations.len())
        })
    });
    group.finish();
}

fn timer_wheel(c: &mut Criterion) {
    let start = Instant::now();
    let tick = Duration::from_millis(1);
    let mut group = c.benchmark_group("timer_wheel");
    group.throughput(Throughput::Elements(1024));
    group.bench_function("insert_then_drain_1024", |b| {
        let mut wheel = TimerWheel::new(start, tick, 4096);
        let mut base = start;
        b.iter(|| {
            for i in 0..1024u32 {
                wheel.insert(base + Duration::from_micros(u64::from(i % 64) * 250), i);
            }
            base += Duration::from_millis(20);
            let mut fired = 0u32;
            while wheel.poll_expired(base).is_some() {
                fired += 1;
            }
            black_box(fired)
        })
    });
    group.bench_function("insert_then_cancel_1024", |b| {
        let mut wheel = TimerWheel::new(start, tick, 4096);
        let mut keys = Vec::with_capacity(1024);
        b.iter(|| {
            for i in 0..1024u32 {
                keys.push(wheel.insert(start + Duration::from_millis(u64::from(i)), i));
            }
            for key in keys.drain(..) {
                black_box(wheel.cancel(key));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, list_rooms, relay_data, timer_wheel);
criterion_main!(benches);
