//! The poll loop: one thread, one `mio::Poll`, every socket.
//!
//! Readiness is drained until `WouldBlock`; each datagram is parsed by `wire`, decided by the
//! [`Lobby`] core and answered here. The driver has no protocol logic of its own: it maps
//! bytes to requests, outputs to bytes, and binds or closes instance sockets when the core
//! asks. Sends that would block drop the datagram and count it; nothing ends the loop but a
//! shutdown request.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Instant;

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Waker};
use slab::Slab;

use crate::lobby::{
    ConnId, InstanceMessage, InstanceRequest, Lobby, LobbyReply, LobbyRequest, Output, RoomId,
    RoomInfo, TcpMessage,
};
use crate::wire::instance::{
    self as instance_wire, ClientMsg, ClientRepr, RejectReason, ServerMsg, ServerRepr,
};
use crate::wire::udp_lobby::{
    self, Reply, ReplyRepr, Request, RequestRepr, RoomRecord, RoomState as WireRoomState,
};
use mio::net::TcpListener;

use super::http::MetricsEndpoint;
use super::instance::{Instance, PortPool};
use super::stats::DriverStats;
use super::tcp::{TcpLimits, TcpLobby};
use super::token::Target;
use super::wake::PreciseWake;
use super::warn::WarnBudget;
use super::wz::WzDriver;
use super::{Control, RoomView, Snapshot};

/// Largest datagram we accept; anything longer is truncated by the kernel and then fails the
/// length check, so it is dropped as malformed.
const RECV_BUF_LEN: usize = 2048;
/// Room for the largest reply (a ROOM_LIST of at most 112 records is 1472 bytes).
const SEND_BUF_LEN: usize = 2048;

/// Which of the server's two send buffers holds a datagram.
#[derive(Clone, Copy)]
enum Buffer {
    /// `send_buf`: every reply but ROOM_LIST.
    Send,
    /// `list_buf`: the ROOM_LIST, whose records are kept between requests.
    List,
}
/// Readiness events handled per poll.
const EVENTS_CAPACITY: usize = 1024;
/// Datagrams read from one socket before serving the others (fairness under flood).
const RECV_BUDGET: usize = 256;

/// Everything the loop owns.
pub struct Server {
    poll: Poll,
    lobby_udp: Option<UdpSocket>,
    instances: Slab<Instance>,
    /// Instance slab key by room, for sending the core's instance messages.
    by_room: HashMap<RoomId, usize>,
    lobby: Lobby,
    ports: PortPool,
    bind_ip: std::net::IpAddr,
    control: Receiver<Control>,
    recv_buf: Box<[u8; RECV_BUF_LEN]>,
    send_buf: Box<[u8; SEND_BUF_LEN]>,
    /// The last ROOM_LIST sent: its records stay in place between requests.
    list_buf: Box<[u8; SEND_BUF_LEN]>,
    /// The core's list generation `list_buf`'s records were built at, and their count.
    list_cache: Option<(u64, usize)>,
    destinations: Vec<SocketAddr>,
    /// Instance slab keys to remove once the current event batch is done.
    closing: Vec<usize>,
    stats: DriverStats,
    started: Instant,
    metrics: Option<MetricsEndpoint>,
    signals: Option<signal_hook_mio::v1_0::Signals>,
    /// Warnings a peer can trigger are rate-limited through this.
    warnings: WarnBudget,
    /// The TCP lobby's listener and connections, if enabled.
    tcp: Option<TcpLobby>,
    /// The Warzone 2100 master server, when `--wz-port` is enabled.
    wz: Option<WzDriver>,
    /// Wakes the loop at its next deadline to the microsecond (mio's timeout is in ms).
    wake: PreciseWake,
}

impl Server {
    /// A server over already-bound sockets.
    pub(super) fn new(
        poll: Poll,
        lobby_udp: Option<UdpSocket>,
        lobby: Lobby,
        ports: PortPool,
        bind_ip: std::net::IpAddr,
        control: Receiver<Control>,
    ) -> io::Result<Server> {
        let wake = PreciseWake::new(poll.registry())?;
        let mut server = Server {
            poll,
            lobby_udp,
            instances: Slab::new(),
            by_room: HashMap::new(),
            lobby,
            ports,
            bind_ip,
            control,
            recv_buf: Box::new([0; RECV_BUF_LEN]),
            send_buf: Box::new([0; SEND_BUF_LEN]),
            list_buf: Box::new([0; SEND_BUF_LEN]),
            list_cache: None,
            destinations: Vec::with_capacity(16),
            closing: Vec::new(),
            stats: DriverStats::default(),
            started: Instant::now(),
            metrics: None,
            signals: None,
            warnings: WarnBudget::new(Instant::now(), 60, 20),
            tcp: None,
            wz: None,
            wake,
        };
        if let Some(socket) = server.lobby_udp.as_mut() {
            server.poll.registry().register(
                socket,
                Target::LobbyUdp.token(),
                Interest::READABLE,
            )?;
        }
        Ok(server)
    }

    /// Serves the metrics endpoint on `listener`.
    pub(super) fn serve_metrics(&mut self, listener: mio::net::TcpListener) -> io::Result<()> {
        self.metrics = Some(MetricsEndpoint::new(listener, self.poll.registry())?);
        Ok(())
    }

    /// The loop's registry, for sockets built outside the server.
    pub(super) fn registry(&self) -> &mio::Registry {
        self.poll.registry()
    }

    /// Serves the Warzone 2100 master server (its listener is already registered).
    pub(super) fn serve_wz(&mut self, driver: WzDriver) {
        self.wz = Some(driver);
    }

    /// Stops on SIGINT/SIGTERM (and reloads on SIGHUP) delivered to this process.
    /// `signals` come from [`signals`], created before the sockets were bound.
    pub(super) fn handle_signals(
        &mut self,
        mut signals: signal_hook_mio::v1_0::Signals,
    ) -> io::Result<()> {
        self.poll
            .registry()
            .register(&mut signals, Target::Signals.token(), Interest::READABLE)?;
        self.signals = Some(signals);
        Ok(())
    }

    /// True when a termination signal arrived.
    fn serve_signals(&mut self) -> bool {
        let Some(signals) = self.signals.as_mut() else {
            return false;
        };
        let mut stop = false;
        for signal in signals.pending() {
            match signal {
                signal_hook::consts::SIGHUP => match self.wz.as_mut() {
                    Some(wz) => wz.reload(),
                    None => log::info!("SIGHUP: nothing to reload"),
                },
                other => {
                    log::info!("signal {other}: shutting down");
                    stop = true;
                }
            }
        }
        stop
    }

    fn metrics_ready(&mut self, target: Target) {
        let Some(mut endpoint) = self.metrics.take() else {
            return;
        };
        match target {
            Target::MetricsListener => endpoint.accept(self.poll.registry()),
            Target::MetricsConn(key) => {
                endpoint.ready(key, self.poll.registry(), || self.snapshot())
            }
            _ => {}
        }
        self.metrics = Some(endpoint);
    }

    /// Runs until a shutdown request arrives (or the control channel is dropped).
    pub fn run(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(EVENTS_CAPACITY);
        loop {
            let wz_deadline = self.wz.as_ref().and_then(WzDriver::next_deadline);
            let deadline = [self.lobby.poll_timeout(), self.tcp_deadline(), wz_deadline]
                .into_iter()
                .flatten()
                .min();
            let now = Instant::now();
            if let Some(at) = deadline {
                if let Err(e) = self.wake.arm(at, now) {
                    // The millisecond poll timeout below still wakes the loop.
                    self.warnings
                        .warn(now, format_args!("cannot arm the loop's timerfd: {e}"));
                }
            }
            let timeout = deadline.map(|at| at.saturating_duration_since(now));
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for event in events.iter() {
                match Target::from_token(event.token()) {
                    Some(Target::LobbyUdp) => self.lobby_readable(),
                    Some(Target::Instance(key)) => self.instance_readable(key),
                    Some(Target::Waker) if self.serve_control() => return self.shutdown_tcp(),
                    Some(Target::Signals) if self.serve_signals() => return self.shutdown_tcp(),
                    Some(Target::Timer) => self.wake.fired(),
                    Some(Target::TcpListener) => self.tcp_accept(),
                    Some(Target::TcpConn(key)) => self.tcp_ready(key, event),
                    Some(target @ (Target::MetricsListener | Target::MetricsConn(_))) => {
                        self.metrics_ready(target)
                    }
                    Some(
                        target @ (Target::WzListener | Target::WzConn(_) | Target::WzProbe(_)),
                    ) => {
                        if let Some(wz) = self.wz.as_mut() {
                            wz.ready(self.poll.registry(), target, event);
                        }
                    }
                    Some(Target::Waker | Target::Signals) | None => {}
                }
            }
            self.lobby.handle_timeout(Instant::now());
            self.dispatch();
            self.remove_closed();
            if let Some(wz) = self.wz.as_mut() {
                wz.after_events(self.poll.registry());
            }
        }
    }

    /// Serves pending control messages; true when the loop must stop.
    fn serve_control(&mut self) -> bool {
        loop {
            match self.control.try_recv() {
                Ok(Control::Shutdown) => return true,
                Ok(Control::Snapshot(reply)) => {
                    // The requester may have given up waiting; that is not our problem.
                    let _ = reply.send(self.snapshot());
                }
                Err(TryRecvError::Empty) => return false,
                Err(TryRecvError::Disconnected) => return true,
            }
        }
    }

    fn snapshot(&self) -> Snapshot {
        let wz = self.wz.as_ref().map(WzDriver::snapshot);
        let mut extra = Vec::new();
        if let Some(tcp) = self.tcp.as_ref() {
            tcp.stats
                .visit(|name, label, value| extra.push((name, label, value)));
        }
        if let Some(wz) = &wz {
            wz.core
                .visit(|name, label, value| extra.push((name, label, value)));
            wz.driver
                .visit(|name, label, value| extra.push((name, label, value)));
        }
        Snapshot {
            lobby: self.lobby.stats.clone(),
            driver: self.stats.clone(),
            extra,
            wz,
            rooms: self
                .lobby
                .rooms()
                .map(|room| RoomView {
                    room: room.id,
                    kind: room.kind.as_str(),
                    state: room.state,
                    port: room.port,
                    members: room.member_count() + self.lobby.lobby_members(room.id),
                    reservations: room.reservation_count(),
                    max_players: room.max_players(),
                })
                .collect(),
            open_instances: self.instances.len(),
            ports_in_use: self.ports.in_use(),
            rate_table_len: self.lobby.rate_table_len(),
            uptime: self.started.elapsed(),
        }
    }

    fn lobby_readable(&mut self) {
        for _ in 0..RECV_BUDGET {
            let Some(socket) = self.lobby_udp.as_ref() else {
                return;
            };
            let (len, from) = match socket.recv_from(&mut self.recv_buf[..]) {
                Ok(received) => received,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // ICMP errors from earlier sends surface here on some systems; keep going.
                    self.stats.recv_errors += 1;
                    log::debug!("udp lobby recv: {e}");
                    continue;
                }
            };
            self.stats.lobby_datagrams_in += 1;
            self.stats.udp_bytes_in += len as u64;
            let now = Instant::now();
            match RequestRepr::parse(&self.recv_buf[..len]) {
                Ok(RequestRepr { seq, request }) => {
                    let request = match request {
                        Request::ListRooms => LobbyRequest::ListRooms,
                        Request::CreateRoom => LobbyRequest::CreateRoom,
                        Request::JoinRoom { room_id } => LobbyRequest::JoinRoom(room_id),
                    };
                    self.lobby.handle_lobby_request(now, from, seq, request);
                }
                Err(error) => {
                    log::trace!("udp lobby: dropped datagram from {from}: {error}");
                    self.stats.lobby_drop(error);
                }
            }
            self.dispatch();
        }
        // Budget spent with data possibly left: mio is edge-triggered, so come back to this
        // socket without waiting for a new edge.
        self.requeue(Target::LobbyUdp);
    }

    fn instance_readable(&mut self, key: usize) {
        for _ in 0..RECV_BUDGET {
            let Some(instance) = self.instances.get(key) else {
                return;
            };
            let room = instance.room;
            let (len, from) = match instance.socket.recv_from(&mut self.recv_buf[..]) {
                Ok(received) => received,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.stats.recv_errors += 1;
                    log::debug!("{room} recv: {e}");
                    continue;
                }
            };
            self.stats.instance_datagrams_in += 1;
            self.stats.udp_bytes_in += len as u64;
            let now = Instant::now();
            let parsed = match ClientRepr::parse(&self.recv_buf[..len]) {
                Ok(ClientRepr { seq, msg }) => match msg {
                    ClientMsg::Data { target, .. } => Ok((seq, None, Some(target))),
                    ClientMsg::Hello { token } => {
                        Ok((seq, Some(InstanceRequest::Hello { token }), None))
                    }
                    ClientMsg::Leave => Ok((seq, Some(InstanceRequest::Leave), None)),
                    ClientMsg::Start => Ok((seq, Some(InstanceRequest::Start), None)),
                    ClientMsg::Ping => Ok((seq, Some(InstanceRequest::Ping), None)),
                },
                Err(error) => Err(error),
            };
            match parsed {
                Ok((_, None, Some(target))) => self.relay(now, key, room, from, target, len),
                Ok((seq, Some(request), _)) => {
                    self.lobby
                        .handle_instance_request(now, room, from, seq, request);
                }
                Ok(_) => {}
                Err(error) => {
                    log::trace!("{room}: dropped datagram from {from}: {error}");
                    self.stats.instance_drop(error);
                }
            }
            self.dispatch();
        }
        self.requeue(Target::Instance(key));
    }

    /// Forwards a DATA datagram: the core picks the destinations, the datagram is rewritten
    /// in place (same length) and sent to each, so the payload is never copied.
    fn relay(
        &mut self,
        now: Instant,
        key: usize,
        room: RoomId,
        from: SocketAddr,
        target: u8,
        len: usize,
    ) {
        let mut destinations = std::mem::take(&mut self.destinations);
        if let Some(sender) = self
            .lobby
            .relay_data(now, room, from, target, &mut destinations)
        {
            instance_wire::rewrite_data_for_delivery(&mut self.recv_buf[..len], sender);
            if let Some(instance) = self.instances.get(key) {
                for to in &destinations {
                    let result = instance.socket.send_to(&self.recv_buf[..len], *to);
                    self.stats.count_send(result, len);
                }
            }
        }
        self.destinations = destinations;
    }

    /// Carries out everything the core has queued.
    fn dispatch(&mut self) {
        while let Some(output) = self.lobby.poll_output() {
            match output {
                Output::Lobby { to, seq, reply } => self.send_lobby_reply(to, seq, reply),
                Output::Instance { room, to, seq, msg } => {
                    self.send_instance_message(room, to, seq, msg)
                }
                Output::OpenInstance { room } => self.open_instance(room),
                Output::CloseInstance { room } => self.close_instance(room),
                Output::Tcp { conn, msg } => self.tcp_send(conn, msg),
                Output::CloseConn { conn } => self.tcp_close(conn),
            }
            if !self.lobby.has_output() {
                // TCP bytes are written once the batch is queued; a failed write closes a
                // connection and may queue more outputs, which this loop then carries out.
                self.tcp_flush();
            }
        }
    }

    fn send_lobby_reply(&mut self, to: SocketAddr, seq: u16, reply: LobbyReply) {
        let reply = match reply {
            LobbyReply::RoomList => {
                let len = self.room_list_datagram(seq);
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
        if let Some(socket) = self.lobby_udp.as_ref() {
            let result = socket.send_to(bytes, to);
            self.stats.count_send(result, len);
        }
    }

    /// A ROOM_LIST answering `seq` in `list_buf`, its length returned. The records are
    /// rebuilt only when the core's list generation moved since they were written; otherwise
    /// only header, count and checksum are rewritten (profiled: building the list was most
    /// of lobbyd's user time under a LIST_ROOMS load, docs/BENCHMARKS.md).
    fn room_list_datagram(&mut self, seq: u16) -> usize {
        let generation = self.lobby.list_generation();
        let count = match self.list_cache {
            Some((built, count)) if built == generation => count,
            _ => {
                let records = self.lobby.room_list().map(|info: RoomInfo| RoomRecord {
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

    fn send_instance_message(
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

    fn open_instance(&mut self, room: RoomId) {
        let now = Instant::now();
        let Some((mut socket, port)) = self.ports.bind(self.bind_ip) else {
            self.stats.instance_bind_failures += 1;
            let message = format_args!("{room}: no instance port could be bound");
            self.warnings.warn(now, message);
            self.lobby.handle_instance_opened(now, room, None);
            return;
        };
        let entry = self.instances.vacant_entry();
        let key = entry.key();
        if let Err(e) = self.poll.registry().register(
            &mut socket,
            Target::Instance(key).token(),
            Interest::READABLE,
        ) {
            let message = format_args!("{room}: cannot register instance socket: {e}");
            self.warnings.warn(now, message);
            self.ports.release(port);
            self.stats.instance_bind_failures += 1;
            self.lobby.handle_instance_opened(now, room, None);
            return;
        }
        log::info!(
            "{room}: game instance listening on {}",
            socket
                .local_addr()
                .map_or_else(|_| format!("port {port}"), |a| a.to_string())
        );
        entry.insert(Instance { socket, room, port });
        self.by_room.insert(room, key);
        self.stats.instances_bound += 1;
        self.lobby.handle_instance_opened(now, room, Some(port));
    }

    fn close_instance(&mut self, room: RoomId) {
        if let Some(key) = self.by_room.remove(&room) {
            // Removed after the event batch, so a reused slab key never sees a stale event.
            self.closing.push(key);
        }
    }

    fn remove_closed(&mut self) {
        if let Some(endpoint) = self.metrics.as_mut() {
            endpoint.remove_closed(self.poll.registry());
        }
        self.tcp_remove_closed();
        for key in self.closing.drain(..) {
            if let Some(mut instance) = self.instances.try_remove(key) {
                if let Err(e) = self.poll.registry().deregister(&mut instance.socket) {
                    log::debug!("{}: deregister: {e}", instance.room);
                }
                self.ports.release(instance.port);
                log::info!(
                    "{}: game instance on port {} closed",
                    instance.room,
                    instance.port
                );
            }
        }
    }

    /// Makes the loop come back to `target` soon, because its socket may still hold data
    /// after the per-socket receive budget was spent.
    fn requeue(&mut self, target: Target) {
        let registry = self.poll.registry();
        let result = match target {
            Target::LobbyUdp => match self.lobby_udp.as_mut() {
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

/// TCP lobby hooks: the transport lives in `tcp.rs`; these only hand it the poll and core.
impl Server {
    /// Serves the TCP lobby on `listener`.
    pub(super) fn serve_tcp(&mut self, listener: TcpListener, limits: TcpLimits) -> io::Result<()> {
        self.tcp = Some(TcpLobby::new(listener, self.poll.registry(), limits)?);
        Ok(())
    }

    fn tcp_deadline(&self) -> Option<Instant> {
        self.tcp.as_ref().and_then(TcpLobby::next_deadline)
    }

    fn tcp_accept(&mut self) {
        if let Some(tcp) = self.tcp.as_mut() {
            tcp.accept(&mut self.lobby, self.poll.registry());
        }
        self.dispatch();
    }

    fn tcp_ready(&mut self, key: usize, event: &mio::event::Event) {
        let readable = event.is_readable() || event.is_read_closed() || event.is_error();
        if let Some(tcp) = self.tcp.as_mut() {
            let registry = self.poll.registry();
            tcp.ready(
                key,
                readable,
                event.is_writable(),
                &mut self.lobby,
                registry,
            );
        }
        self.dispatch();
    }

    fn tcp_send(&mut self, conn: ConnId, msg: TcpMessage) {
        if let Some(tcp) = self.tcp.as_mut() {
            tcp.send(conn, msg, &mut self.lobby);
        }
    }

    fn tcp_close(&mut self, conn: ConnId) {
        if let Some(tcp) = self.tcp.as_mut() {
            tcp.close_when_flushed(conn);
        }
    }

    fn tcp_flush(&mut self) {
        if let Some(tcp) = self.tcp.as_mut() {
            tcp.flush(&mut self.lobby, self.poll.registry());
        }
    }

    fn tcp_remove_closed(&mut self) {
        let Some(tcp) = self.tcp.as_mut() else {
            return;
        };
        if tcp.remove_closed(self.poll.registry(), Instant::now()) {
            self.tcp_accept();
        }
    }

    /// Before the loop returns: every connection is told the server is going away, and what
    /// is queued is flushed for at most [`SHUTDOWN_FLUSH`].
    fn shutdown_tcp(&mut self) -> io::Result<()> {
        if self.tcp.is_none() {
            return Ok(());
        }
        self.lobby.handle_shutdown();
        self.dispatch();
        let deadline = Instant::now() + SHUTDOWN_FLUSH;
        if let Some(tcp) = self.tcp.as_mut() {
            tcp.drain_all(&mut self.poll, deadline);
        }
        Ok(())
    }
}

/// How long shutdown waits for TCP lobby clients to take their last bytes.
const SHUTDOWN_FLUSH: std::time::Duration = std::time::Duration::from_millis(500);

impl DriverStats {
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

/// Catches SIGINT, SIGTERM and SIGHUP from now on; create it before binding anything, so a
/// signal sent as soon as the start-up log shows an address is queued, not fatal.
pub(super) fn signals() -> io::Result<signal_hook_mio::v1_0::Signals> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    signal_hook_mio::v1_0::Signals::new([SIGINT, SIGTERM, SIGHUP])
}

/// A waker must outlive the poll loop; the handle keeps it.
pub(super) fn waker(poll: &Poll) -> io::Result<Waker> {
    Waker::new(poll.registry(), Target::Waker.token())
}
