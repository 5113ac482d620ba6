//! `hostile-udp`: random and near-valid datagrams at the UDP lobby and at a game instance
//! (docs/protocols/udp-lobby.md, instance.md).
//!
//! Before the clock, the mode creates one room from the first `--sources` address and says
//! HELLO on its instance, then PINGs it every second so the instance stays open. Then, `--rate`
//! datagrams a second (2,000 by default), from up to [`SOCKETS`] sockets on the other source
//! addresses in turn, half to the lobby and half to the instance:
//! - a third random bytes, 0 to 1,472 of them;
//! - two thirds near-valid: a request of that protocol (LIST_ROOMS, CREATE_ROOM, JOIN_ROOM;
//!   HELLO with a made-up token, DATA, LEAVE, START, PING), emitted with the crate's own wire
//!   modules, then damaged half of the time ([`super::mutate`]: the CRC then fails, or the
//!   sizes lie, or the CRC is right over wrong fields).
//!
//! A CREATE_ROOM or JOIN_ROOM that comes out valid has its CRC broken before it is sent: the
//! crowd must not take rooms or seats from the well-behaved clients. Replies are read and
//! counted (`replies`); nothing the server says is an error for an attacker.

use std::io;
use std::net::{SocketAddr, UdpSocket as StdUdpSocket};
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Interest, Registry, Token};

use lobbyd::wire::instance::{ClientMsg, ClientRepr};
use lobbyd::wire::udp_lobby::{Request, RequestRepr, MAX_UNFRAGMENTED};

use super::super::options::Options;
use super::super::runner::{Pacer, Workload};
use super::super::setup;
use super::super::stats::Stats;
use super::{mutate, HostileRng};

/// Attack sockets at most (one per source address).
pub const SOCKETS: usize = 256;
/// Datagrams a second when `--rate` is not given.
pub const DEFAULT_RATE: f64 = 2000.0;
/// Interval of the room owner's PINGs.
const KEEPALIVE_EVERY: Duration = Duration::from_secs(1);
/// Most datagrams sent in one tick (a stalled tick does not become one huge burst).
const BURST_CAP: u64 = 2000;

/// The UDP attacker.
pub struct UdpAttack {
    lobby: SocketAddr,
    instance: SocketAddr,
    room: u32,
    owner: StdUdpSocket,
    sockets: Vec<UdpSocket>,
    next_socket: usize,
    pacer: Pacer,
    rng: HostileRng,
    next_keepalive: Instant,
    keepalive_seq: u16,
    buf: Vec<u8>,
    recv_buf: Box<[u8]>,
}

impl UdpAttack {
    /// Creates the room and binds the attack sockets.
    pub fn setup(options: &Options, registry: &Registry) -> io::Result<UdpAttack> {
        let lobby = options.target;
        let wait = options.timeout.max(Duration::from_secs(1));
        let owner = setup::bind(options.source(0), wait)?;
        let room = setup::create_room(&owner, lobby, 1, wait)?;
        setup::hello(&owner, room.instance, 2, None, wait)?;
        let attackers = if options.sources.len() > 1 {
            &options.sources[1..]
        } else {
            &options.sources[..]
        };
        let mut sockets = Vec::new();
        for (i, &ip) in attackers.iter().take(SOCKETS).enumerate() {
            let mut socket = UdpSocket::bind(SocketAddr::new(ip, 0))?;
            registry.register(&mut socket, Token(i), Interest::READABLE)?;
            sockets.push(socket);
        }
        let now = Instant::now();
        Ok(UdpAttack {
            lobby,
            instance: room.instance,
            room: room.room,
            owner,
            sockets,
            next_socket: 0,
            pacer: Pacer::new(now, Some(options.rate.unwrap_or(DEFAULT_RATE))),
            rng: HostileRng::seeded(),
            next_keepalive: now + KEEPALIVE_EVERY,
            keepalive_seq: 2,
            buf: Vec::with_capacity(MAX_UNFRAGMENTED),
            recv_buf: vec![0; 2048].into_boxed_slice(),
        })
    }

    /// The next datagram into `self.buf`, and where it goes.
    fn next_datagram(&mut self) -> SocketAddr {
        self.buf.clear();
        let to_lobby = self.rng.chance(50);
        let to = if to_lobby { self.lobby } else { self.instance };
        if self.rng.below(3) == 0 {
            let len = self.rng.below(MAX_UNFRAGMENTED + 1);
            self.rng.extend(&mut self.buf, len);
            return to;
        }
        let seq = self.rng.next_u64() as u16;
        let mut frame = [0u8; MAX_UNFRAGMENTED];
        let len = if to_lobby {
            let request = match self.rng.below(3) {
                0 => Request::ListRooms,
                1 => Request::CreateRoom,
                _ => Request::JoinRoom {
                    room_id: if self.rng.chance(50) {
                        self.room
                    } else {
                        self.rng.next_u64() as u32
                    },
                },
            };
            RequestRepr { seq, request }.emit(&mut frame)
        } else {
            let mut data = [0u8; 64];
            self.rng.fill(&mut data);
            let msg = match self.rng.below(5) {
                0 => ClientMsg::Hello {
                    token: self.rng.chance(50).then(|| self.rng.next_u64()),
                },
                1 => ClientMsg::Data {
                    target: self.rng.next_u64() as u8,
                    data: &data[..self.rng.below(data.len() + 1)],
                },
                2 => ClientMsg::Leave,
                3 => ClientMsg::Start,
                _ => ClientMsg::Ping,
            };
            ClientRepr { seq, msg }.emit(&mut frame)
        };
        self.buf.extend_from_slice(&frame[..len]);
        if self.rng.chance(50) {
            mutate(&mut self.rng, &mut self.buf, MAX_UNFRAGMENTED);
        }
        if to_lobby {
            spoil_seat_requests(&mut self.buf);
        }
        to
    }
}

/// A CREATE_ROOM or JOIN_ROOM that parses gets its CRC broken: attackers take no room or seat.
fn spoil_seat_requests(datagram: &mut [u8]) {
    let takes_a_seat = matches!(
        RequestRepr::parse(datagram),
        Ok(RequestRepr {
            request: Request::CreateRoom | Request::JoinRoom { .. },
            ..
        })
    );
    if let (true, Some(last)) = (takes_a_seat, datagram.last_mut()) {
        *last ^= 0xff;
    }
}

impl Workload for UdpAttack {
    fn ready(&mut self, _registry: &Registry, token: Token, _now: Instant, stats: &mut Stats) {
        let Some(socket) = self.sockets.get(token.0) else {
            return;
        };
        loop {
            match socket.recv_from(&mut self.recv_buf) {
                Ok(_) => stats.add("replies", 1),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    fn tick(&mut self, _registry: &Registry, now: Instant, _pacer: &mut Pacer, stats: &mut Stats) {
        if now >= self.next_keepalive {
            self.next_keepalive = now + KEEPALIVE_EVERY;
            self.keepalive_seq = self.keepalive_seq.wrapping_add(1);
            setup::keepalive(&self.owner, self.instance, self.keepalive_seq);
        }
        if self.sockets.is_empty() {
            return;
        }
        for _ in 0..self.pacer.due(now, BURST_CAP) {
            let to = self.next_datagram();
            let socket = &self.sockets[self.next_socket % self.sockets.len()];
            self.next_socket = self.next_socket.wrapping_add(1);
            stats.sent += 1;
            match socket.send_to(&self.buf, to) {
                Ok(_) => stats.complete(Duration::ZERO),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => stats.add("send_would_block", 1),
                Err(_) => stats.add("send_failed", 1),
            }
        }
    }

    fn finish(&mut self, _now: Instant, stats: &mut Stats) {
        stats.set("sockets", self.sockets.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seat_requests_never_go_out_valid() {
        let mut buf = [0u8; 64];
        for request in [Request::CreateRoom, Request::JoinRoom { room_id: 3 }] {
            let len = RequestRepr { seq: 1, request }.emit(&mut buf);
            let mut datagram = buf[..len].to_vec();
            spoil_seat_requests(&mut datagram);
            assert!(RequestRepr::parse(&datagram).is_err());
        }
        let len = RequestRepr {
            seq: 1,
            request: Request::ListRooms,
        }
        .emit(&mut buf);
        let mut list = buf[..len].to_vec();
        spoil_seat_requests(&mut list);
        assert!(RequestRepr::parse(&list).is_ok());
    }
}
