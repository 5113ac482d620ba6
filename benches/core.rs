//! criterion benches of the R-Type core's hot paths, without sockets: what one UDP request
//! costs the server's logic, so `scripts/bench.sh` can tell the core's share from the
//! kernel's.
//!
//! - `list_rooms_64`: LIST_ROOMS with 64 rooms: rate limiter, reply queued, ROOM_LIST of 64
//!   records emitted (the driver's whole per-request work apart from the two syscalls).
//! - `relay_data_broadcast_4`: DATA from one member of a 4-member room to the 3 others:
//!   membership lookup, idle refresh, destinations, in-place rewrite.
//! - `timer_wheel`: insert then drain 1024 timers a few ticks apart, and insert + cancel.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use lobbyd::time::TimerWheel;
use lobbyd::wire::instance;

#[path = "../tests/it/common/core_fixture.rs"]
mod fixture;

use fixture::{addr, broadcast_data, list_once, lobby, room_of_four, with_rooms};

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
            let len = list_once(&mut lobby, now, client, 7, &mut buf);
            black_box(len)
        })
    });
    group.finish();
}

fn relay_data(c: &mut Criterion) {
    let now = Instant::now();
    let mut lobby = lobby(now);
    let room = room_of_four(&mut lobby, now);
    let mut datagram = [0u8; 64];
    let len = broadcast_data(&mut datagram);
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
