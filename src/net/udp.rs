//! The R-Type UDP sockets: the room lobby socket and the game-instance sockets.
//!
//! Implements the datagram half of `docs/protocols/udp-lobby.md` and
//! `docs/protocols/instance.md`: each `recv_*` reads one datagram, parses it with `wire` and
//! returns the decoded input (or counts the drop); each `send_*` encodes one output of the core
//! and sends it. Who decides is the [`crate::lobby::Lobby`] core, driven by the R-Type front end
//! (`net::rtype`); nothing here calls back into it. Sends that would block drop the datagram
//! and count it. Instance sockets closed by the core are removed after the event batch, so a
//! reused slab key never sees a stale event.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use mio::net::UdpSocket;
use mio::{Interest, Registry};
use slab::Slab;

use crate::lobby::{
    InstanceMessage, InstanceRequest, Lobby, LobbyReply, LobbyRequest, RoomId, RoomInfo,
};
use crate::wire::instance::{
    self as instance_wire, ClientMsg, ClientRepr, RejectReason, ServerMsg, ServerRepr,
};
use crate::wire::udp_lobby::{
    self, Reply, ReplyRepr, Request, RequestRepr, RoomRecord, RoomState as WireRoomState,
};

use super::instance::{Instance, PortPool};
use super::stats::UdpStats;
use super::token::Target;
use super::warn::WarnBudget;

/// Largest datagram we accept; anything longer is truncated by the kernel and then fails the
/// length check, so it is dropped as malformed.
const RECV_BUF_LEN: usize = 2048;
/// Room for the largest reply (a ROOM_LIST of at most 112 records is 1472 bytes).
const SEND_BUF_LEN: usize = 2048;

/// What one read from a UDP socket gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// Nothing left to read (`WouldBlock`), or the socket is gone.
    Empty,
    /// A datagram that was dropped before the core (malformed, counted) or a receive error.
    Dropped,
    /// A lobby request for the core.
    Lobby {
        /// Its sender.
        from: SocketAddr,
        /// Its sequence number.
        seq: u16,
        /// The request.
        request: LobbyRequest,
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
    /// A DATA datagram to relay: it stays in the receive buffer, `len` bytes long.
    Data {
        /// Its sender.
        from: SocketAddr,
        /// The slot (or broadcast) it is for.
        target: u8,
        /// Its length in the receive buffer.
        len: usize,
    },
}

/// Which of the two send buffers holds a datagram.
#[derive(Clone, Copy)]
enum Buffer {
    /// `send_buf`: every reply but ROOM_LIST.
    Send,
    /// `list_buf`: the ROOM_LIST, whose records are kept between requests.
    List,
}

/// The UDP lobby socket, the instance sockets and their buffers.
pub struct UdpLobby {
    socket: Option<UdpSocket>,
    instances: Slab<Instance>,
    /// Instance slab key by room, for sending the core's instance messages.
    by_room: HashMap<RoomId, usize>,
    ports: PortPool,
    bind_ip: IpAddr,
    recv_buf: Box<[u8; RECV_BUF_LEN]>,
    send_buf: Box<[u8; SEND_BUF_LEN]>,
    /// The last ROOM_LIST sent: its records stay in place between requests.
    list_buf: Box<[u8; SEND_BUF_LEN]>,
    /// The core's list generation `list_buf`'s records were built at, and their count.
    list_cache: Option<(u64, usize)>,
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
            recv_buf: Box::new([0; RECV_BUF_LEN]),
            send_buf: Box::new([0; SEND_BUF_LEN]),
            list_buf: Box::new([0; SEND_BUF_LEN]),
            list_cache: None,
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

    /// Reads and decodes one datagram from the lobby socket.
    pub fn recv_lobby(&mut self) -> Received {
        let Some(socket) = self.socket.as_ref() else {
            return Received::Empty;
        };
        let (len, from) = match socket.recv_from(&mut self.recv_buf[..]) {
            Ok(received) => received,
            Err(e) => return self.recv_error(e, "udp lobby"),
        };
        self.stats.lobby_datagrams_in += 1;
        self.stats.udp_bytes_in += len as u64;
        match RequestRepr::parse(&self.recv_buf[..len]) {
            Ok(RequestRepr { seq, request }) => Received::Lobby {
                from,
                seq,
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

    /// Reads and decodes one datagram from instance `key`, with the room it serves.
    pub fn recv_instance(&mut self, key: usize) -> (Option<RoomId>, Received) {
        let Some(instance) = self.instances.get(key) else {
            return (None, Received::Empty);
        };
        let room = instance.room;
        let (len, from) = match instance.socket.recv_from(&mut self.recv_buf[..]) {
            Ok(received) => received,
            Err(e) => return (Some(room), self.recv_error(e, "instance")),
        };
        self.stats.instance_datagrams_in += 1;
        self.stats.udp_bytes_in += len as u64;
        let received = match ClientRepr::parse(&self.recv_buf[..len]) {
            Ok(ClientRepr { seq, msg }) => {
                let request = match msg {
                    ClientMsg::Data { target, .. } => {
                        return (Some(room), Received::Data { from, target, len })
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
        };
        (Some(room), received)
    }

    fn recv_error(&mut self, e: io::Error, what: &str) -> Received {
        match e.kind() {
            io::ErrorKind::WouldBlock => Received::Empty,
            io::ErrorKind::Interrupted => Received::Dropped,
            _ => {
                // ICMP errors from earlier sends surface here on some systems; keep going.
                self.stats.recv_errors += 1;
                log::debug!("{what} recv: {e}");
                Received::Dropped
            }
        }
    }

    /// Forwards the DATA datagram in the receive buffer (`len` bytes, from instance `key`) to
    /// `destinations`, rewritten in place for delivery (same length), so the payload is never
    /// copied.
    pub fn relay(&mut self, key: usize, sender: u8, destinations: &[SocketAddr], len: usize) {
        instance_wire::rewrite_data_for_delivery(&mut self.recv_buf[..len], sender);
        if let Some(instance) = self.instances.get(key) {
            for to in destinations {
                let result = instance.socket.send_to(&self.recv_buf[..len], *to);
                self.stats.count_send(result, len);
            }
        }
    }

    /// Sends the core's reply to a lobby request (`lobby` is read for ROOM_LIST).
    pub fn send_lobby_reply(&mut self, to: SocketAddr, seq: u16, reply: LobbyReply, lobby: &Lobby) {
        let reply = match reply {
            LobbyReply::RoomList => {
                let len = self.room_list_datagram(seq, lobby);
                self.send_from_lobby(to, Buffer::List, len);
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
        let len = ReplyRepr { seq, reply }.emit(&mut self.send_buf[..]);
        self.send_from_lobby(to, Buffer::Send, len);
    }

    /// Sends the first `len` bytes of `buffer` from the UDP lobby socket.
    fn send_from_lobby(&mut self, to: SocketAddr, buffer: Buffer, len: usize) {
        let bytes = match buffer {
            Buffer::Send => &self.send_buf[..len],
            Buffer::List => &self.list_buf[..len],
        };
        if let Some(socket) = self.socket.as_ref() {
            let result = socket.send_to(bytes, to);
            self.stats.count_send(result, len);
        }
    }

    /// A ROOM_LIST answering `seq` in `list_buf`, its length returned. The records are
    /// rebuilt only when the core's list generation moved since they were written; otherwise
    /// only header, count and checksum are rewritten (profiled: building the list was most
    /// of lobbyd's user time under a LIST_ROOMS load, docs/BENCHMARKS.md).
    fn room_list_datagram(&mut self, seq: u16, lobby: &Lobby) -> usize {
        let generation = lobby.list_generation();
        let count = match self.list_cache {
            Some((built, count)) if built == generation => count,
            _ => {
                let records = lobby.room_list().map(|info: RoomInfo| RoomRecord {
                    room_id: info.room.0,
                    player_count: info.player_count,
                    max_players: info.max_players,
                    port: info.port,
                    state: info.state.code(),
                });
                let count = udp_lobby::write_room_records(&mut self.list_buf[..], records);
                self.list_cache = Some((generation, count));
                count
            }
        };
        udp_lobby::finish_room_list(&mut self.list_buf[..], seq, count)
    }

    /// Sends one of the core's instance messages from `room`'s socket.
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
        let len = ServerRepr { seq, msg }.emit(&mut self.send_buf[..]);
        let Some(instance) = self.instance_of(room) else {
            return;
        };
        let result = instance.socket.send_to(&self.send_buf[..len], to);
        self.stats.count_send(result, len);
    }

    fn instance_of(&self, room: RoomId) -> Option<&Instance> {
        self.instances.get(*self.by_room.get(&room)?)
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

    /// Removes the instance sockets closed in this batch and returns their ports.
    pub fn remove_closed(&mut self, registry: &Registry, now: Instant) {
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

impl UdpStats {
    /// Counts the outcome of one `send_to`.
    fn count_send(&mut self, result: io::Result<usize>, len: usize) {
        match result {
            Ok(_) => {
                self.udp_datagrams_out += 1;
                self.udp_bytes_out += len as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.send_would_block += 1,
            Err(e) => {
                self.send_errors += 1;
                log::debug!("udp send: {e}");
            }
        }
    }
}
