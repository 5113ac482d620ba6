//! The hot paths allocate nothing once warm (issue 3: "allocations on the hot path: there
//! should be none"): a UDP LIST_ROOMS answered with 64 rooms, a DATA relayed to three room
//! mates, and the parsers every datagram or TCP frame goes through. A counting allocator
//! wraps the system one in this test binary only; counts are per thread, so the test
//! harness's other threads do not disturb them.

#[path = "common/core_fixture.rs"]
mod fixture;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Instant;

use fixture::{addr, broadcast_data, list_once, lobby, room_of_four, with_rooms};
use lobbyd::wire::instance::{self, ClientRepr};
use lobbyd::wire::tcp_lobby::{self, Next};
use lobbyd::wire::udp_lobby::RequestRepr;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the only addition is bumping a const-initialised thread-local
// `Cell`, which neither allocates nor unwinds (`try_with` ignores a thread being torn down).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's guarantees for `layout` are passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this `layout` (every allocation of
        // this binary goes through `alloc` above).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: as for `dealloc`; `new_size` is passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` on this thread.
fn allocations(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn counter_sees_an_allocation() {
    // The instrument itself works: a Vec with capacity allocates once.
    assert_eq!(
        allocations(|| drop(std::hint::black_box(Vec::<u8>::with_capacity(8)))),
        1
    );
}

#[test]
fn list_rooms_allocates_nothing() {
    let now = Instant::now();
    let mut lobby = lobby(now);
    with_rooms(&mut lobby, now, 64);
    let mut buf = [0u8; 2048];
    let mut list = |seq: u16| list_once(&mut lobby, now, addr(9, 40_000), seq, &mut buf);
    // Warm-up: the first request from an address creates its rate-limiter entry.
    assert_eq!(list(0), 846);
    let mut len = 0;
    assert_eq!(allocations(|| len = list(1)), 0);
    assert_eq!(len, 846);
}

#[test]
fn relay_allocates_nothing() {
    let now = Instant::now();
    let mut lobby = lobby(now);
    let room = room_of_four(&mut lobby, now);
    let mut pristine = [0u8; 64];
    let len = broadcast_data(&mut pristine);
    let mut datagram = pristine;
    let mut destinations = Vec::with_capacity(8);
    let mut relay = || {
        // The driver's receive buffer: a fresh client datagram, rewritten in place.
        datagram = pristine;
        let parsed = ClientRepr::parse(&datagram[..len]).is_ok();
        let sender = lobby.relay_data(now, room, addr(1, 2000), 0xFF, &mut destinations);
        if let Some(sender) = sender {
            instance::rewrite_data_for_delivery(&mut datagram[..len], sender);
        }
        (parsed, destinations.len())
    };
    relay();
    let mut result = (false, 0);
    assert_eq!(allocations(|| result = relay()), 0);
    assert_eq!(result, (true, 3));
}

#[test]
fn parsers_allocate_nothing() {
    // The spec's golden LIST_ROOMS request, and a TCP CONNECT_REQ frame as "Alice".
    let list_request = [0x01, 0x40, 0, 0, 0, 0, 0, 0, 0xed, 0x83, 0xaa, 0x8e];
    let mut connect = vec![0x10, 0x20, 0x00];
    connect.extend_from_slice(b"Alice");
    connect.resize(35, 0);
    let mut ok = (false, false);
    let count = allocations(|| {
        ok.0 = RequestRepr::parse(&list_request).is_ok();
        ok.1 = match tcp_lobby::next_frame(&connect) {
            Next::Frame { frame, consumed } => {
                consumed == 35 && tcp_lobby::ClientRepr::parse(&frame).is_ok()
            }
            _ => false,
        };
    });
    assert_eq!(count, 0);
    assert_eq!(ok, (true, true));
}
