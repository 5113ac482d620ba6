//! `relay`: DATA datagrams through game instances.
//!
//! Setup (before the clock): `--concurrency` rooms are created on the UDP lobby, and
//! `--members` sockets per room join and say HELLO on the room's instance. Then members take
//! turns sending DATA to everyone else (target 0xFF); every relayed copy a member receives
//! is one completed request, its latency measured from the send time carried in the
//! payload. Each copy is checked: well-formed (the crate's `wire::instance`), from the slot
//! that sent it, to a member of the same room.
//!
//! When the run ends every member sends LEAVE, so the rooms finish and are reaped after the
//! server's grace rather than held until its idle timeout.
//!
//! With `--start` the owner sends START once the room is full: the room counts down and
//! plays while the DATA flows (COUNTDOWN and STARTED are not relay traffic and are skipped).
//!
//! Each readable member socket is read with one `recvmmsg` of a few slots (lobbyd's
//! [`RecvBatch`]): a member has one copy waiting at a time in closed loop, and the short
//! batch proves the socket drained, where reading until `WouldBlock` took a second, empty
//! system call per copy. After setup every member socket is connected to its room's
//! instance: a send then skips the kernel's route lookup, and only the instance's datagrams
//! reach the member (a copy from anywhere else would not be a relayed copy).
//!
//! Closed loop: each room has one datagram in flight; when all its copies have arrived (or
//! the timeout passed, the missing copies counted as `lost_copy` timeouts) the next member
//! sends. Open loop: the pacer hands sends to the rooms round robin, nothing waits.
//!
//! ```text
//! opaque part of each DATA: room u32 | id u32 | send time ns u64 | member u8 | zeros
//! ```

use std::io::{self, Write};
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Interest, Poll, Registry, Token};

use lobbyd::net::io::batch::{ReadSize, RecvBatch};
use lobbyd::wire::instance::{ClientMsg, ClientRepr, ServerMsg, ServerRepr, BROADCAST, MAX_DATA};

use super::options::Options;
use super::runner::{drive, Pacer, Workload};
use super::setup;
use super::stats::{Stats, Summary};

/// Bytes of the opaque part the tool needs: room, id, send time, member.
const STAMP_LEN: usize = 17;
/// Frame overhead of a DATA datagram: header 8, slot 1, CRC 4.
const DATA_OVERHEAD: usize = 13;
const BUF_LEN: usize = 2048;
const SWEEP_EVERY: Duration = Duration::from_millis(10);

struct InFlight {
    id: u32,
    sent: Instant,
    remaining: usize,
}

struct Room {
    members: Vec<UdpSocket>,
    /// The slot WELCOME gave each member.
    slots: Vec<u8>,
    next_sender: usize,
    next_id: u32,
    current: Option<InFlight>,
}

/// The `relay` workload.
pub struct Relay {
    rooms: Vec<Room>,
    members: usize,
    opaque_len: usize,
    epoch: Instant,
    timeout: Duration,
    open_loop: bool,
    next_room: usize,
    idle: Vec<usize>,
    next_sweep: Instant,
    opaque: Box<[u8; MAX_DATA]>,
    /// Where each DATA and LEAVE is emitted.
    buf: Box<[u8; BUF_LEN]>,
    /// Where the copies are read.
    recv: RecvBatch,
}

impl Relay {
    /// Creates and fills the rooms, registering every member socket.
    pub fn setup(options: &Options, registry: &Registry) -> io::Result<Relay> {
        let m = options.members.max(2);
        let wait = options.timeout.max(Duration::from_secs(1));
        let mut rooms = Vec::with_capacity(options.concurrency);
        for r in 0..options.concurrency {
            let creator = setup::bind(options.source(r * m), wait)?;
            let room = setup::create_room(&creator, options.target, 1, wait)?;
            let mut sockets = vec![(
                setup::hello(&creator, room.instance, 2, None, wait)?,
                creator,
            )];
            for k in 1..m {
                let socket = setup::bind(options.source(r * m + k), wait)?;
                let slot = setup::join_and_hello(&socket, options.target, room, 3, wait)?;
                sockets.push((slot, socket));
            }
            if options.start {
                setup::start(&sockets[0].1, room.instance, 4)?;
            }
            let mut members = Vec::with_capacity(m);
            let mut slots = Vec::with_capacity(m);
            for (k, (slot, socket)) in sockets.into_iter().enumerate() {
                socket.set_nonblocking(true)?;
                socket.connect(room.instance)?;
                let mut socket = UdpSocket::from_std(socket);
                registry.register(&mut socket, Token(r * m + k), Interest::READABLE)?;
                members.push(socket);
                slots.push(slot);
            }
            rooms.push(Room {
                members,
                slots,
                next_sender: 0,
                next_id: 0,
                current: None,
            });
        }
        let open_loop = options.rate.is_some();
        let size = options
            .size
            .clamp(DATA_OVERHEAD + STAMP_LEN, DATA_OVERHEAD + MAX_DATA);
        Ok(Relay {
            idle: if open_loop {
                Vec::new()
            } else {
                (0..rooms.len()).collect()
            },
            rooms,
            members: m,
            opaque_len: size - DATA_OVERHEAD,
            epoch: Instant::now(),
            timeout: options.timeout,
            open_loop,
            next_room: 0,
            next_sweep: Instant::now() + SWEEP_EVERY,
            opaque: Box::new([0; MAX_DATA]),
            buf: Box::new([0; BUF_LEN]),
            recv: RecvBatch::new(),
        })
    }

    /// The next member of room `r` sends one DATA to everyone else.
    fn send(&mut self, r: usize, now: Instant, stats: &mut Stats) -> bool {
        let room = &mut self.rooms[r];
        let member = room.next_sender;
        room.next_sender = (member + 1) % room.members.len();
        let id = room.next_id;
        room.next_id = id.wrapping_add(1);
        let stamp =
            u64::try_from(now.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX);
        let opaque = &mut self.opaque[..self.opaque_len];
        opaque[0..4].copy_from_slice(&(r as u32).to_be_bytes());
        opaque[4..8].copy_from_slice(&id.to_be_bytes());
        opaque[8..16].copy_from_slice(&stamp.to_be_bytes());
        opaque[16] = member as u8;
        let len = ClientRepr {
            seq: id as u16,
            msg: ClientMsg::Data {
                target: BROADCAST,
                data: opaque,
            },
        }
        .emit(&mut self.buf[..]);
        if let Err(e) = room.members[member].send(&self.buf[..len]) {
            stats.error(match e.kind() {
                io::ErrorKind::WouldBlock => "send_would_block",
                _ => "send_failed",
            });
            return false;
        }
        stats.sent += 1;
        if !self.open_loop {
            room.current = Some(InFlight {
                id,
                sent: now,
                remaining: room.members.len() - 1,
            });
        }
        true
    }

    /// Judges datagram `i` of the last read, received by a member of room `r`.
    fn received(&mut self, r: usize, i: usize, now: Instant, stats: &mut Stats) {
        let Some((datagram, _)) = self.recv.datagram(i) else {
            // Not an IP sender: nothing lobbyd sends.
            return stats.error("foreign_sender");
        };
        let (sender_slot, stamp) = match ServerRepr::parse(datagram) {
            Ok(ServerRepr {
                msg: ServerMsg::Data { sender, data },
                ..
            }) => match Stamp::read(data) {
                Some(stamp) => (sender, stamp),
                None => return stats.error("foreign_data"),
            },
            // PEER_JOINED, PONG and the like are not relay traffic.
            Ok(_) => return,
            Err(e) => return stats.error(e.as_str()),
        };
        if stamp.room as usize != r {
            return stats.error("misrouted");
        }
        let room = &mut self.rooms[r];
        if room.slots.get(usize::from(stamp.member)) != Some(&sender_slot) {
            return stats.error("wrong_sender_slot");
        }
        let sent = self.epoch + Duration::from_nanos(stamp.nanos);
        stats.complete(now.saturating_duration_since(sent));
        let Some(current) = room.current.as_mut() else {
            return;
        };
        if current.id != stamp.id {
            // A copy of a datagram already given up on.
            return stats.add("late_copies", 1);
        }
        current.remaining -= 1;
        if current.remaining == 0 {
            room.current = None;
            if !self.send(r, now, stats) {
                self.idle.push(r);
            }
        }
    }

    fn sweep(&mut self, now: Instant, stats: &mut Stats) {
        for (r, room) in self.rooms.iter_mut().enumerate() {
            let overdue = room
                .current
                .as_ref()
                .is_some_and(|c| now.saturating_duration_since(c.sent) >= self.timeout);
            if overdue {
                if let Some(current) = room.current.take() {
                    *stats.timeouts.entry("lost_copy").or_default() += current.remaining as u64;
                }
                self.idle.push(r);
            }
        }
    }
}

/// The tool's stamp in a DATA's opaque part.
struct Stamp {
    room: u32,
    id: u32,
    nanos: u64,
    member: u8,
}

impl Stamp {
    fn read(data: &[u8]) -> Option<Stamp> {
        let stamp = data.get(..STAMP_LEN)?;
        let u32_at = |at: usize| {
            u32::from_be_bytes([stamp[at], stamp[at + 1], stamp[at + 2], stamp[at + 3]])
        };
        let mut nanos = [0u8; 8];
        nanos.copy_from_slice(&stamp[8..16]);
        Some(Stamp {
            room: u32_at(0),
            id: u32_at(4),
            nanos: u64::from_be_bytes(nanos),
            member: stamp[16],
        })
    }
}

impl Workload for Relay {
    fn ready(&mut self, _registry: &Registry, token: Token, now: Instant, stats: &mut Stats) {
        let (r, k) = (token.0 / self.members, token.0 % self.members);
        loop {
            let Some(socket) = self.rooms.get(r).and_then(|room| room.members.get(k)) else {
                return;
            };
            match self.recv.recv(socket, ReadSize::First) {
                Ok(count) => {
                    for i in 0..count {
                        self.received(r, i, now, stats);
                    }
                    if self.recv.drained() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => stats.error("recv_failed"),
            }
        }
    }

    fn tick(&mut self, _registry: &Registry, now: Instant, pacer: &mut Pacer, stats: &mut Stats) {
        if now >= self.next_sweep {
            self.sweep(now, stats);
            self.next_sweep = now + SWEEP_EVERY;
        }
        let mut idle = std::mem::take(&mut self.idle);
        idle.retain(|&r| !self.send(r, now, stats));
        self.idle = idle;
        if self.rooms.is_empty() {
            return;
        }
        for _ in 0..pacer.due(now, 10_000) {
            let r = self.next_room;
            self.next_room = (r + 1) % self.rooms.len();
            self.send(r, now, stats);
        }
    }

    fn finish(&mut self, _now: Instant, stats: &mut Stats) {
        for room in &self.rooms {
            let len = ClientRepr {
                seq: room.next_id as u16,
                msg: ClientMsg::Leave,
            }
            .emit(&mut self.buf[..]);
            for member in &room.members {
                // Best effort: a lost LEAVE lets the seat lapse by idleness.
                let _ = member.send(&self.buf[..len]);
            }
        }
        let expected = stats.sent * (self.members as u64 - 1);
        stats.set("rooms", self.rooms.len() as u64);
        stats.set("datagram_bytes", (self.opaque_len + DATA_OVERHEAD) as u64);
        stats.set(
            "unreceived_copies",
            expected.saturating_sub(stats.completed),
        );
    }
}

/// Runs `relay`.
pub fn run(options: &Options, progress: &mut dyn Write) -> io::Result<Summary> {
    let poll = Poll::new()?;
    let mut relay = Relay::setup(options, poll.registry())?;
    drive(
        options,
        options.target.to_string(),
        poll,
        &mut relay,
        progress,
    )
}
