//! The R-Type UDP sockets: the room lobby socket and the game-instance sockets.
//!
//! Implements the datagram half of `docs/protocols/udp-lobby.md` and
//! `docs/protocols/instance.md`. Datagrams come and go in batches (`net::io::batch`):
//! `recv_lobby` / `recv_instance` read up to [`BATCH`] datagrams with one
//! `recvmmsg` (first sending what is queued, since a relay's bytes are still in the receive
//! slots), `lobby_datagram` / `instance_datagram` parse one of them where it landed and
//! return the decoded input (or count the drop); each `send_*` and `relay` encodes one output
//! of the core into the send queue, and `flush` writes the queue with one `sendmmsg` per run
//! of datagrams leaving from the same socket, in the order they were queued. The front end
//! flushes before it returns to the loop, so no datagram waits past the readiness event that
//! produced it. A lobby datagram opening with the upstream R-Type magic goes to
//! `net::rtype::udp_upstream` instead of the seed's parser, and its replies go out in that
//! dialect (`docs/protocols/udp-lobby-upstream.md`). Who decides is the [`crate::rtype::RtypeCore`] core, driven by the R-Type front end
//! (`net::rtype`); nothing here calls back into it. Sends that would block drop the datagram
//! and count it. Instance sockets closed by the core are removed after the event batch (the
//! queue flushed first), so a reused slab key never sees a stale event.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsFd;
use std::time::Instant;

use mio::net::UdpSocket;
use mio::{Interest, Registry};
use slab::Slab;

use crate::rtype::{
    Dialect, InstanceMessage, InstanceRequest, LobbyReply, LobbyRequest, RoomId, RoomInfo,
    RtypeCore,
};
use crate::wire::instance::{
    self as instance_wire, ClientMsg, ClientRepr, RejectReason, ServerMsg, ServerRepr,
};
use crate::wire::udp_lobby::{
    self, Reply, ReplyRepr, Request, RequestRepr, RoomRecord, RoomState as WireRoomState,
};
use crate::wire::udp_upstream::records::RecordLayout;
use crate::wire::udp_upstream::sniff;

use crate::net::io::batch::{DatagramQueue, RecvBatch, SLOT_LEN};
use crate::net::rtype::instance::{Instance, PortPool};
use crate::net::rtype::stats::UdpStats;
use crate::net::rtype::udp_upstream::{self, UpstreamList, UpstreamRefusal};
use crate::net::token::Target;
use crate::net::warn::WarnBudget;

pub use crate::net::io::batch::{ReadSize, BATCH};

/// What one read (`recvmmsg`) of a UDP socket gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batch {
    /// This many datagrams (1 to [`BATCH`]) are in the receive batch; fewer than the read
    /// asked for means the socket was drained ([`UdpLobby::drained`]).
    Read(usize),
    /// Nothing left to read (`WouldBlock`), or the socket is gone.
    Empty,
    /// A receive error (counted unless `Interrupted`); the socket may hold more.
    Failed,
}

/// One datagram of the receive batch, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received<'a> {
    /// A datagram that was dropped before the core (malformed, counted).
    Dropped,
    /// A lobby request for the core.
    Lobby {
        /// Its sender.
        from: SocketAddr,
        /// Its sequence number.
        seq: u16,
        /// Its spelling, which the reply takes.
        dialect: Dialect,
        /// The request, borrowing the receive batch.
        request: LobbyRequest<'a>,
    },
    /// An instance request for the core.
    Instance {
        /// Its sender.
        from: SocketAddr,
        /// Its sequence number.
        seq: u16,
        /// The request.
        request: InstanceRequest,
    },
    /// A DATA datagram to relay: it stays in its receive slot.
    Data {
        /// Its sender.
        from: SocketAddr,
        /// The slot (or broadcast) it is for.
        target: u8,
        /// Its index in the receive batch.
        index: usize,
    },
}

/// The socket a queued datagram leaves from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Socket {
    /// The UDP lobby socket.
    Lobby,
    /// Instance `key` of the slab.
    Instance(usize),
}

/// What the ROOM_LIST records in `list_buf` were built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ListCache {
    /// The core's list generation.
    local_generation: u64,
    /// The remote rooms' generation.
    remote_generation: u64,
    /// This node's records, first.
    local: usize,
    /// Every record, the other nodes' after this node's.
    count: usize,
}

/// The UDP lobby socket, the instance sockets and their buffers.
pub struct UdpLobby {
    socket: Option<UdpSocket>,
    instances: Slab<Instance>,
    /// Instance slab key by room, for sending the core's instance messages.
    by_room: HashMap<RoomId, usize>,
    ports: PortPool,
    bind_ip: IpAddr,
    /// The datagrams of the last read, whichever socket it was.
    recv: RecvBatch,
    /// Datagrams waiting for `flush`.
    queue: DatagramQueue<Socket>,
    /// The last ROOM_LIST built: its records stay in place between requests and are copied
    /// into each reply.
    list_buf: Box<[u8; SLOT_LEN]>,
    /// What `list_buf`'s records were built from, and their counts.
    list_cache: Option<ListCache>,
    /// The upstream dialect's ROOM_LIST records and what they were built from. They list
    /// this node's rooms only: `remote` holds other nodes' rooms as the seed's records
    /// (no name, no password flag), which the upstream layouts cannot carry as they are.
    upstream_list: UpstreamList,
    /// Other nodes' rooms (the directory's cache, encoded records, joinable first), listed
    /// after this node's own; empty without a directory.
    remote: Vec<u8>,
    /// Changes whenever `remote` does.
    remote_generation: u64,
    /// Instance slab keys to remove once the current event batch is done.
    closing: Vec<usize>,
    /// The UDP counters.
    pub stats: UdpStats,
    warnings: WarnBudget,
    /// Instance opened/closed lines: one per room each, so their number is the peers' to
    /// choose; 20,000 rooms must not write 40,000 lines.
    churn: WarnBudget,
}

impl UdpLobby {
    /// The lobby socket (`None` when `--udp-port 0`: instances still serve TCP parties),
    /// registered here, and the pool instance sockets are bound from.
    pub fn new(
        mut socket: Option<UdpSocket>,
        registry: &Registry,
        ports: PortPool,
        bind_ip: IpAddr,
        upstream_records: RecordLayout,
    ) -> io::Result<UdpLobby> {
        if let Some(socket) = socket.as_mut() {
            registry.register(socket, Target::LobbyUdp.token(), Interest::READABLE)?;
        }
        Ok(UdpLobby {
            socket,
            instances: Slab::new(),
            by_room: HashMap::new(),
            ports,
            bind_ip,
            recv: RecvBatch::new(),
            queue: DatagramQueue::new(),
            list_buf: Box::new([0; SLOT_LEN]),
            list_cache: None,
            upstream_list: UpstreamList::new(upstream_records),
            remote: Vec::new(),
            remote_generation: 0,
            closing: Vec::new(),
            stats: UdpStats::default(),
            warnings: WarnBudget::new(Instant::now(), 60, 20),
            churn: WarnBudget::at_level(log::Level::Info, Instant::now(), 120, 60),
        })
    }

    /// Instance sockets open.
    pub fn open_instances(&self) -> usize {
        self.instances.len()
    }

    /// Instance ports held.
    pub fn ports_in_use(&self) -> usize {
        self.ports.in_use()
    }

    /// Reads a batch of up to `size` datagrams from the lobby socket (after sending what is
    /// queued).
    pub fn recv_lobby(&mut self, size: ReadSize) -> Batch {
        self.flush();
        let Some(socket) = self.socket.as_ref() else {
            return Batch::Empty;
        };
        match self.recv.recv(socket, size) {
            Ok(n) => Batch::Read(n),
            Err(e) => self.recv_error(e, "udp lobby"),
        }
    }

    /// Reads a batch of up to `size` datagrams from instance `key` (after sending what is
    /// queued), with the room it serves (`None`: no such instance).
    pub fn recv_instance(&mut self, key: usize, size: ReadSize) -> (Option<RoomId>, Batch) {
        self.flush();
        let Some(instance) = self.instances.get(key) else {
            return (None, Batch::Empty);
        };
        let room = instance.room;
        let batch = match self.recv.recv(&instance.socket, size) {
            Ok(n) => Batch::Read(n),
            Err(e) => self.recv_error(e, "instance"),
        };
        (Some(room), batch)
    }

    /// True when the last read got fewer datagrams than it asked for: its socket was
    /// drained, and with edge-triggered readiness the next datagram raises a new event.
    pub fn drained(&self) -> bool {
        self.recv.drained()
    }

    /// Decodes datagram `index` of the batch read from the lobby socket, in the dialect its
    /// first bytes say.
    pub fn lobby_datagram(&mut self, index: usize) -> Received<'_> {
        let Some((datagram, from)) = self.recv.datagram(index) else {
            self.stats.recv_errors += 1;
            return Received::Dropped;
        };
        self.stats.lobby_datagrams_in += 1;
        self.stats.udp_bytes_in += datagram.len() as u64;
        if sniff(datagram) == Dialect::Upstream {
            self.stats.upstream_datagrams_in += 1;
            return match udp_upstream::decode(datagram) {
                Ok((seq, request)) => Received::Lobby {
                    from,
                    seq,
                    dialect: Dialect::Upstream,
                    request,
                },
                Err(refusal) => {
                    log::trace!("udp lobby: dropped upstream datagram from {from}: {refusal:?}");
                    match refusal {
                        UpstreamRefusal::Malformed(error) => self.stats.upstream_drop(error),
                        UpstreamRefusal::Unserved(family) => self.stats.upstream_unserved(family),
                    }
                    Received::Dropped
                }
            };
        }
        match RequestRepr::parse(datagram) {
            Ok(RequestRepr { seq, request }) => Received::Lobby {
                from,
                seq,
                dialect: Dialect::Seed,
                request: match request {
                    Request::ListRooms => LobbyRequest::ListRooms,
                    Request::CreateRoom => LobbyRequest::CreateRoom,
                    Request::JoinRoom { room_id } => LobbyRequest::JoinRoom(room_id),
                },
            },
            Err(error) => {
                log::trace!("udp lobby: dropped datagram from {from}: {error}");
                self.stats.lobby_drop(error);
                Received::Dropped
            }
        }
    }

    /// Decodes datagram `index` of the batch read from `room`'s instance socket.
    pub fn instance_datagram(&mut self, room: RoomId, index: usize) -> Received<'_> {
        let Some((datagram, from)) = self.recv.datagram(index) else {
            self.stats.recv_errors += 1;
            return Received::Dropped;
        };
        self.stats.instance_datagrams_in += 1;
        self.stats.udp_bytes_in += datagram.len() as u64;
        match ClientRepr::parse(datagram) {
            Ok(ClientRepr { seq, msg }) => {
                let request = match msg {
                    ClientMsg::Data { target, .. } => {
                        return Received::Data {
                            from,
                            target,
                            index,
                        }
                    }
                    ClientMsg::Hello { token } => InstanceRequest::Hello { token },
                    ClientMsg::Leave => InstanceRequest::Leave,
                    ClientMsg::Start => InstanceRequest::Start,
                    ClientMsg::Ping => InstanceRequest::Ping,
                };
                Received::Instance { from, seq, request }
            }
            Err(error) => {
                log::trace!("{room}: dropped datagram from {from}: {error}");
                self.stats.instance_drop(error);
                Received::Dropped
            }
        }
    }

    fn recv_error(&mut self, e: io::Error, what: &str) -> Batch {
        match e.kind() {
            io::ErrorKind::WouldBlock => Batch::Empty,
            io::ErrorKind::Interrupted => Batch::Failed,
            _ => {
                // ICMP errors from earlier sends surface here on some systems; keep going.
                self.stats.recv_errors += 1;
                log::debug!("{what} recv: {e}");
                Batch::Failed
            }
        }
    }

    /// Queues the DATA datagram `index` of the batch (read from instance `key`) for
    /// `destinations`, rewritten in place for delivery (same length): every copy is sent
    /// from the receive slot, so the payload is never copied.
    pub fn relay(&mut self, key: usize, sender: u8, destinations: &[SocketAddr], index: usize) {
        let datagram = self.recv.datagram_mut(index);
        let len = datagram.len();
        instance_wire::rewrite_data_for_delivery(datagram, sender);
        if !self.instances.contains(key) {
            return;
        }
        for to in destinations {
            self.make_room();
            let queued = self
                .queue
                .push_received(Socket::Instance(key), *to, index, len);
            debug_assert!(queued, "the queue was flushed to make room");
        }
    }

    /// Sends what is queued now, if the queue is full.
    fn make_room(&mut self) {
        if self.queue.is_full() {
            self.flush();
        }
    }

    /// Writes every queued datagram: one `sendmmsg` per run of the same socket (more only
    /// when one fails), each outcome counted as one `send_to`'s was.
    pub fn flush(&mut self) {
        let mut start = 0;
        while let Some((socket, run_start, run_end)) = self.queue.run_at(start) {
            let socket = match socket {
                Socket::Lobby => self.socket.as_ref(),
                Socket::Instance(key) => self.instances.get(key).map(|i| &i.socket),
            };
            // A socket gone since (never within a batch: removal waits for `flush`): the
            // datagrams go nowhere, as a send on a closed socket did.
            if let Some(socket) = socket {
                let stats = &mut self.stats;
                self.queue.send_run(
                    socket.as_fd(),
                    (run_start, run_end),
                    &self.recv,
                    |result, len| stats.count_send(result, len),
                );
            }
            start = run_end;
        }
        self.queue.clear();
    }

    /// Queues the core's reply to a lobby request, in `dialect` (`lobby` is read for
    /// ROOM_LIST).
    pub fn send_lobby_reply(
        &mut self,
        to: SocketAddr,
        seq: u16,
        dialect: Dialect,
        reply: LobbyReply,
        lobby: &RtypeCore,
    ) {
        if dialect == Dialect::Upstream {
            self.send_upstream_reply(to, seq, reply, lobby);
            return;
        }
        let reply = match reply {
            LobbyReply::RoomList => {
                let count = self.room_list_records(lobby).count;
                self.make_room();
                let records = &self.list_buf[..udp_lobby::room_list_len(count)];
                let queued = self.queue.push_emitted(Socket::Lobby, to, |slot| {
                    slot[..records.len()].copy_from_slice(records);
                    udp_lobby::finish_room_list(slot, seq, count)
                });
                debug_assert!(queued, "the queue was flushed to make room");
                return;
            }
            LobbyReply::RoomCreated { room, port } => Reply::RoomCreated {
                room_id: room.0,
                port,
            },
            LobbyReply::JoinSuccess { room, port } => Reply::JoinSuccess {
                room_id: room.0,
                port,
            },
            LobbyReply::JoinFailed(_) => Reply::JoinFailed,
        };
        self.make_room();
        let queued = self.queue.push_emitted(Socket::Lobby, to, |slot| {
            ReplyRepr { seq, reply }.emit(slot)
        });
        debug_assert!(queued, "the queue was flushed to make room");
    }

    /// Queues the core's reply in the upstream dialect: the ROOM_LIST from its cache, or the
    /// reply and the RoomSetConfig that follows a create or join.
    fn send_upstream_reply(
        &mut self,
        to: SocketAddr,
        seq: u16,
        reply: LobbyReply,
        lobby: &RtypeCore,
    ) {
        self.make_room();
        if reply == LobbyReply::RoomList {
            let list = &mut self.upstream_list;
            let queued = self
                .queue
                .push_emitted(Socket::Lobby, to, |slot| list.emit(lobby, seq, slot));
            debug_assert!(queued, "the queue was flushed to make room");
            return;
        }
        let (first, config) = udp_upstream::replies(seq, reply);
        for repr in std::iter::once(first).chain(config) {
            self.make_room();
            let queued = self
                .queue
                .push_emitted(Socket::Lobby, to, |slot| repr.emit(slot));
            debug_assert!(queued, "the queue was flushed to make room");
        }
    }

    /// The records of the current ROOM_LIST in `list_buf`: this node's rooms, then the other
    /// nodes' (the directory's cache), at most `--max-list-rooms` in all. They are rebuilt
    /// only when the core's list generation or the remote rooms moved since they were
    /// written; each reply copies them and writes its own header, count and checksum
    /// (profiled: building the list was most of lobbyd's user time under a LIST_ROOMS load,
    /// docs/PERFORMANCE.md, "Measured decisions"). Allocates nothing.
    fn room_list_records(&mut self, lobby: &RtypeCore) -> ListCache {
        let local_generation = lobby.list_generation();
        let remote_generation = self.remote_generation;
        match self.list_cache {
            Some(cache)
                if cache.local_generation == local_generation
                    && cache.remote_generation == remote_generation =>
            {
                cache
            }
            _ => {
                let records = lobby.room_list().map(|info: RoomInfo| RoomRecord {
                    room_id: info.room.0,
                    player_count: info.player_count,
                    max_players: info.max_players,
                    port: info.port,
                    state: info.state.code(),
                });
                let local = udp_lobby::write_room_records(&mut self.list_buf[..], records);
                // Whole records within the cap, which a datagram (and `list_buf`) holds.
                let room_left = (lobby.config().max_list_rooms)
                    .min(udp_lobby::MAX_LIST_ROOMS_UNFRAGMENTED)
                    .saturating_sub(local);
                let start = udp_lobby::ROOM_RECORDS_OFFSET + local * udp_lobby::ROOM_RECORD_LEN;
                let remote_len = self
                    .remote
                    .len()
                    .min(room_left * udp_lobby::ROOM_RECORD_LEN);
                let remote_len = remote_len - remote_len % udp_lobby::ROOM_RECORD_LEN;
                self.list_buf[start..start + remote_len]
                    .copy_from_slice(&self.remote[..remote_len]);
                let cache = ListCache {
                    local_generation,
                    remote_generation,
                    local,
                    count: local + remote_len / udp_lobby::ROOM_RECORD_LEN,
                };
                self.list_cache = Some(cache);
                cache
            }
        }
    }

    /// This node's listable rooms as encoded ROOM_LIST records (what it publishes in the
    /// directory), with the core's list generation they were built at.
    pub fn local_records(&mut self, lobby: &RtypeCore) -> (u64, &[u8]) {
        let cache = self.room_list_records(lobby);
        let start = udp_lobby::ROOM_RECORDS_OFFSET;
        let end = start + cache.local * udp_lobby::ROOM_RECORD_LEN;
        (cache.local_generation, &self.list_buf[start..end])
    }

    /// Lists these other nodes' rooms (encoded records, joinable first) after this node's
    /// own from now on; `generation` changes whenever they do.
    pub fn set_remote_rooms(&mut self, records: &[u8], generation: u64) {
        self.remote.clear();
        self.remote.extend_from_slice(records);
        self.remote_generation = generation;
    }

    /// Queues one of the core's instance messages from `room`'s socket.
    pub fn send_instance_message(
        &mut self,
        room: RoomId,
        to: SocketAddr,
        seq: u16,
        msg: InstanceMessage,
    ) {
        let msg = match msg {
            InstanceMessage::Welcome {
                slot,
                player_count,
                max_players,
                state,
            } => ServerMsg::Welcome {
                slot,
                player_count,
                max_players,
                state: WireRoomState::from(state.code()),
            },
            InstanceMessage::Reject(reason) => ServerMsg::Reject(RejectReason::from(reason as u8)),
            InstanceMessage::PeerJoined(slot) => ServerMsg::PeerJoined(slot),
            InstanceMessage::PeerLeft(slot) => ServerMsg::PeerLeft(slot),
            InstanceMessage::Countdown(secs) => ServerMsg::Countdown(secs),
            InstanceMessage::Started => ServerMsg::Started,
            InstanceMessage::Pong => ServerMsg::Pong,
        };
        let Some(&key) = self.by_room.get(&room) else {
            return;
        };
        self.make_room();
        let queued = self.queue.push_emitted(Socket::Instance(key), to, |slot| {
            ServerRepr { seq, msg }.emit(slot)
        });
        debug_assert!(queued, "the queue was flushed to make room");
    }

    /// Binds and registers `room`'s instance socket; its port, or `None` when no port could
    /// be bound (counted and warned about).
    pub fn open_instance(
        &mut self,
        registry: &Registry,
        now: Instant,
        room: RoomId,
    ) -> Option<u16> {
        let Some((mut socket, port)) = self.ports.bind(self.bind_ip) else {
            self.stats.instance_bind_failures += 1;
            let message = format_args!("{room}: no instance port could be bound");
            self.warnings.warn(now, message);
            return None;
        };
        let entry = self.instances.vacant_entry();
        let key = entry.key();
        if let Err(e) = registry.register(
            &mut socket,
            Target::Instance(key).token(),
            Interest::READABLE,
        ) {
            let message = format_args!("{room}: cannot register instance socket: {e}");
            self.warnings.warn(now, message);
            self.ports.release(port);
            self.stats.instance_bind_failures += 1;
            return None;
        }
        let addr = socket
            .local_addr()
            .map_or_else(|_| format!("port {port}"), |a| a.to_string());
        self.churn.warn(
            now,
            format_args!("{room}: game instance listening on {addr}"),
        );
        entry.insert(Instance { socket, room, port });
        self.by_room.insert(room, key);
        self.stats.instances_bound += 1;
        Some(port)
    }

    /// Closes `room`'s instance socket after the event batch, so a reused slab key never
    /// sees a stale event.
    pub fn close_instance(&mut self, room: RoomId) {
        if let Some(key) = self.by_room.remove(&room) {
            self.closing.push(key);
        }
    }

    /// Removes the instance sockets closed in this batch and returns their ports, after
    /// sending what is still queued (a closing instance's last messages go out first).
    pub fn remove_closed(&mut self, registry: &Registry, now: Instant) {
        self.flush();
        for key in self.closing.drain(..) {
            if let Some(mut instance) = self.instances.try_remove(key) {
                if let Err(e) = registry.deregister(&mut instance.socket) {
                    log::debug!("{}: deregister: {e}", instance.room);
                }
                self.ports.release(instance.port);
                self.churn.warn(
                    now,
                    format_args!(
                        "{}: game instance on port {} closed",
                        instance.room, instance.port
                    ),
                );
            }
        }
    }

    /// Makes the loop come back to `target` soon, because its socket may still hold data
    /// after the per-socket receive budget was spent (mio is edge-triggered).
    pub fn requeue(&mut self, registry: &Registry, target: Target) {
        let result = match target {
            Target::LobbyUdp => match self.socket.as_mut() {
                Some(socket) => registry.reregister(socket, target.token(), Interest::READABLE),
                None => Ok(()),
            },
            Target::Instance(key) => match self.instances.get_mut(key) {
                Some(instance) => {
                    registry.reregister(&mut instance.socket, target.token(), Interest::READABLE)
                }
                None => Ok(()),
            },
            _ => Ok(()),
        };
        if let Err(e) = result {
            log::warn!("reregister {target:?}: {e}");
        }
    }
}
