//! The hot paths allocate nothing once warm ("allocations on the hot path: there
//! should be none"): a UDP LIST_ROOMS answered with 64 rooms, a DATA relayed to three room
//! mates, and the parsers every datagram or TCP frame goes through; and the driver's batch
//! path: the R-Type front end on real loopback sockets reading with
//! `recvmmsg` and answering with `sendmmsg`, LIST_ROOMS and relays, the send queue filling
//! up mid-batch; and the TCP lobby's read with its kernel receive timestamp (`recvmsg`).
//! A counting allocator wraps the system one in this test binary only; counts
//! are per thread, so the test harness's other threads do not disturb them.

use crate::common::core_fixture as fixture;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Instant;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::Duration;

use fixture::{addr, broadcast_data, list_once, lobby, room_of_four, with_rooms};
use lobbyd::net::io::rx_time;
use lobbyd::net::rtype::instance::{PortPool, PortRange};
use lobbyd::net::rtype::udp::UdpLobby;
use lobbyd::net::rtype::RtypeFrontEnd;
use lobbyd::net::server::FrontEnd;
use lobbyd::net::token::Target;
use lobbyd::wire::instance::{self, ClientMsg, ClientRepr, ServerMsg, ServerRepr};
use lobbyd::wire::tcp_lobby::{self, Next};
use lobbyd::wire::udp_lobby::{Reply, ReplyRepr, Request, RequestRepr};
use lobbyd::wire::udp_upstream::lobby::{
    Request as UpstreamRequest, RequestRepr as UpstreamRequestRepr,
};
use lobbyd::wire::udp_upstream::records::RecordLayout;
use mio::{Events, Poll};

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

/// The TCP lobby's stamped read (`recvmsg` with the kernel's receive timestamp, into the
/// transport's preallocated control buffer) allocates nothing once the buffer exists.
#[test]
fn stamped_tcp_read_allocates_nothing() {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    rx_time::enable(&listener).unwrap();
    let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    let mut buf = [0u8; 64];
    let mut control = rx_time::control_buffer();
    let mut stamped = 0;
    for _ in 0..20 {
        client.write_all(b"START_REQ").unwrap();
        let mut read = Ok((0, None));
        assert_eq!(
            allocations(|| read = rx_time::read(&server, &mut buf, &mut control)),
            0
        );
        let (len, stamp) = read.unwrap();
        assert_eq!(&buf[..len], b"START_REQ");
        stamped += usize::from(stamp.is_some());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Stamping switches on a moment after the first `enable` on the machine: the later
    // reads, at least, went through the stamped path.
    assert!(stamped > 0, "no read was stamped");
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

/// The R-Type front end on a loopback UDP lobby socket, served by hand in this thread.
struct Served {
    poll: Poll,
    events: Events,
    front_end: RtypeFrontEnd,
    lobby: SocketAddr,
}

impl Served {
    fn start() -> Served {
        Served::with_remote_rooms(0)
    }

    /// A front end that lists `remote` rooms of other nodes after its own (as the room
    /// directory's cache hands them over).
    fn with_remote_rooms(remote: usize) -> Served {
        let poll = Poll::new().unwrap();
        let socket = mio::net::UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let lobby_addr = socket.local_addr().unwrap();
        let ip = Ipv4Addr::LOCALHOST.into();
        let pool = PortPool::new(PortRange::Ephemeral);
        let records = RecordLayout::V3;
        let mut udp = UdpLobby::new(Some(socket), poll.registry(), pool, ip, records).unwrap();
        let mut core = lobby(Instant::now());
        if remote > 0 {
            let records: Vec<u8> = (0..remote as u32)
                .flat_map(|n| {
                    let mut record = [0u8; 13];
                    record[..4].copy_from_slice(&(2 << 24 | (n + 1)).to_be_bytes());
                    record[6..8].copy_from_slice(&4u16.to_be_bytes());
                    record[8..10].copy_from_slice(&(5000 + n as u16).to_be_bytes());
                    record
                })
                .collect();
            udp.set_remote_rooms(&records, 1);
            core.handle_remote_listed(remote);
        }
        Served {
            poll,
            events: Events::with_capacity(64),
            front_end: RtypeFrontEnd::new(core, udp, None),
            lobby: lobby_addr,
        }
    }

    /// One wake of the loop (waiting at most 20 ms): every readiness event, then the
    /// after-batch work.
    fn serve_once(&mut self) {
        self.poll
            .poll(&mut self.events, Some(Duration::from_millis(20)))
            .unwrap();
        let registry = self.poll.registry();
        for event in self.events.iter() {
            if let Some(target) = Target::from_token(event.token()) {
                self.front_end.ready(registry, target, event);
            }
        }
        self.front_end.after_events(registry);
    }

    /// Serves until each of `clients` has received `each` more datagrams of `len` bytes
    /// (non-blocking sockets), read into a stack buffer: nothing here allocates but the
    /// server. Returns the sequence numbers the first client got, in order of arrival.
    fn serve_until(&mut self, clients: &[&UdpSocket], each: usize, len: usize) -> [u16; 64] {
        let mut got = [0usize; 8];
        let mut seqs = [0u16; 64];
        let mut buf = [0u8; 2048];
        for _ in 0..500 {
            if got[..clients.len()].iter().all(|&n| n == each) {
                return seqs;
            }
            self.serve_once();
            for (k, client) in clients.iter().enumerate() {
                while let Ok(n) = client.recv(&mut buf) {
                    assert_eq!(n, len, "client {k}");
                    if k == 0 && got[0] < seqs.len() {
                        seqs[got[0]] = u16::from_be_bytes([buf[2], buf[3]]);
                    }
                    got[k] += 1;
                }
            }
        }
        panic!("served {got:?}, wanted {each} each");
    }

    /// Serves until `client` has a datagram; returns it.
    fn answer(&mut self, client: &UdpSocket) -> Vec<u8> {
        let mut buf = [0u8; 2048];
        for _ in 0..100 {
            if let Ok(len) = client.recv(&mut buf) {
                return buf[..len].to_vec();
            }
            self.serve_once();
        }
        panic!("no answer");
    }
}

/// A non-blocking client on 127.0.0.`n`.
fn client(n: u8) -> UdpSocket {
    let socket = UdpSocket::bind((Ipv4Addr::new(127, 0, 0, n), 0)).unwrap();
    socket.set_nonblocking(true).unwrap();
    socket
}

fn lobby_request(seq: u16, request: Request) -> Vec<u8> {
    let mut buf = [0u8; 64];
    let len = RequestRepr { seq, request }.emit(&mut buf);
    buf[..len].to_vec()
}

/// A room created by `members[0]` and joined by the others, each one WELCOMEd on its
/// instance, every PEER_JOINED read; the instance's address.
fn room_of(served: &mut Served, members: &[UdpSocket]) -> SocketAddr {
    members[0]
        .send_to(&lobby_request(0, Request::CreateRoom), served.lobby)
        .unwrap();
    let created = served.answer(&members[0]);
    let Ok(ReplyRepr {
        reply: Reply::RoomCreated { room_id, port },
        ..
    }) = ReplyRepr::parse(&created)
    else {
        panic!("not ROOM_CREATED: {created:02x?}");
    };
    let instance = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut hello = [0u8; 64];
    let hello_len = ClientRepr {
        seq: 0,
        msg: ClientMsg::Hello { token: None },
    }
    .emit(&mut hello);
    for (k, member) in members.iter().enumerate() {
        if k > 0 {
            let join = lobby_request(0, Request::JoinRoom { room_id });
            member.send_to(&join, served.lobby).unwrap();
            served.answer(member);
        }
        member.send_to(&hello[..hello_len], instance).unwrap();
        while !matches!(
            ServerRepr::parse(&served.answer(member)),
            Ok(ServerRepr {
                msg: ServerMsg::Welcome { .. },
                ..
            })
        ) {}
    }
    // The PEER_JOINED still on their way.
    served.serve_once();
    let mut buf = [0u8; 2048];
    for member in members {
        while member.recv(&mut buf).is_ok() {}
    }
    instance
}

#[test]
fn batch_path_allocates_nothing() {
    let mut served = Served::start();
    // 63 rooms from one address, then a room of four whose relays are counted: a 64-room
    // ROOM_LIST (846 bytes).
    let creator = client(1);
    for seq in 0..63 {
        creator
            .send_to(&lobby_request(seq, Request::CreateRoom), served.lobby)
            .unwrap();
        served.answer(&creator);
    }
    let members: Vec<UdpSocket> = (2..6).map(client).collect();
    let instance = room_of(&mut served, &members);
    let lister = client(9);
    let mut data = [0u8; 64];
    let data_len = broadcast_data(&mut data);
    let lists: Vec<Vec<u8>> = (0..32)
        .map(|seq| lobby_request(seq, Request::ListRooms))
        .collect();
    let member_refs: Vec<&UdpSocket> = members.iter().collect();

    // One round: 32 LIST_ROOMS waiting in the socket (one `recvmmsg`, one `sendmmsg`), then
    // 32 DATA broadcasts (96 copies: the send queue fills and is written mid-batch).
    let round = |served: &mut Served| -> u64 {
        for list in &lists {
            lister.send_to(list, served.lobby).unwrap();
        }
        let mut seqs = [0u16; 64];
        let mut count = allocations(|| seqs = served.serve_until(&[&lister], 32, 846));
        let in_order: Vec<u16> = (0..32).collect();
        assert_eq!(
            seqs[..32],
            in_order[..],
            "replies in the order of the requests"
        );
        for k in 0..32 {
            members[k % 4].send_to(&data[..data_len], instance).unwrap();
        }
        // Every member gets the 8 broadcasts of each of the 3 others.
        count += allocations(|| {
            served.serve_until(&member_refs, 24, data_len);
        });
        count
    };
    // Warm-up: the lister's rate-limiter entry, the thread's `recvmmsg` headers.
    round(&mut served);
    assert_eq!(round(&mut served), 0);
}

/// The upstream dialect's LIST_ROOMS through the same batch path: sniffed, parsed, answered
/// from the cached v3 records, no allocation once warm.
#[test]
fn upstream_list_path_allocates_nothing() {
    let mut served = Served::start();
    let creator = client(11);
    for seq in 0..63 {
        creator
            .send_to(&lobby_request(seq, Request::CreateRoom), served.lobby)
            .unwrap();
        served.answer(&creator);
    }
    let lister = client(12);
    let lists: Vec<Vec<u8>> = (0..32u16)
        .map(|seq| {
            let repr = UpstreamRequestRepr {
                seq,
                request: UpstreamRequest::ListRooms,
            };
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut buf);
            buf
        })
        .collect();
    // 63 v3 records named "New Room", 31 bytes each.
    let len = 23 + 63 * 31;
    let round = |served: &mut Served| -> u64 {
        for list in &lists {
            lister.send_to(list, served.lobby).unwrap();
        }
        allocations(|| {
            served.serve_until(&[&lister], 32, len);
        })
    };
    round(&mut served);
    assert_eq!(round(&mut served), 0);
}

/// A ROOM_LIST with other nodes' rooms after this node's (the room directory's cache): the
/// same allocation-free path, the records copied from the cache built once.
#[test]
fn list_with_remote_rooms_allocates_nothing() {
    let mut served = Served::with_remote_rooms(40);
    let creator = client(1);
    for seq in 0..8 {
        creator
            .send_to(&lobby_request(seq, Request::CreateRoom), served.lobby)
            .unwrap();
        served.answer(&creator);
    }
    let lister = client(9);
    let lists: Vec<Vec<u8>> = (0..32)
        .map(|seq| lobby_request(seq, Request::ListRooms))
        .collect();
    // 8 local rooms and 40 remote ones: 14 + 13 * 48 bytes.
    let len = 14 + 13 * 48;
    let round = |served: &mut Served| -> u64 {
        for list in &lists {
            lister.send_to(list, served.lobby).unwrap();
        }
        allocations(|| {
            served.serve_until(&[&lister], 32, len);
        })
    };
    // Warm-up: the lister's rate-limiter entry, the list records built once.
    round(&mut served);
    assert_eq!(round(&mut served), 0);
    // The remote rooms come after the local ones.
    lister
        .send_to(&lobby_request(99, Request::ListRooms), served.lobby)
        .unwrap();
    let reply = served.answer(&lister);
    let ids: Vec<u32> = reply[10..reply.len() - 4]
        .chunks(13)
        .map(|r| u32::from_be_bytes([r[0], r[1], r[2], r[3]]))
        .collect();
    assert!(ids[..8].iter().all(|id| id >> 24 == 0), "{ids:x?}");
    assert!(ids[8..].iter().all(|id| id >> 24 == 2), "{ids:x?}");
    // The upstream dialect's ROOM_LIST lists this node's 8 rooms only: the remote records
    // are the seed's layout, which carries no name or password flag.
    let repr = UpstreamRequestRepr {
        seq: 100,
        request: UpstreamRequest::ListRooms,
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf);
    lister.send_to(&buf, served.lobby).unwrap();
    assert_eq!(served.answer(&lister).len(), 23 + 8 * 31);
}
