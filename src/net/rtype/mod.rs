//! The R-Type front end: the UDP room lobby, its game instances and the TCP lobby around the
//! one [`RtypeCore`] core they share (parties are rooms: same id space, same `--max-rooms`, same
//! instance relay).
//!
//! It plugs into the loop through the [`FrontEnd`] seam (`net::server`). Readiness on a UDP
//! socket or a TCP lobby connection gives decoded inputs ([`crate::net::rtype::udp`], [`crate::net::rtype::tcp`])
//! that go to the core one at a time; after each, every output the core queued is carried
//! out by [`RtypeFrontEnd::dispatch`]: replies, instance messages and relays queued in `udp`,
//! frames and closes queued on `tcp`'s connections, instance sockets bound or closed. So the
//! core's queue never holds more than one input's outputs. UDP sockets are read a batch at a
//! time (`recvmmsg`), and the datagrams queued while serving a batch leave together
//! (`sendmmsg`) before the next read and before each `ready` returns to the loop, so a
//! member's datagrams reach its room mates within the event that produced them.
//!
//! TCP frames are written once per event batch ([`RtypeFrontEnd::flush_tcp`], from
//! `after_events`), so a connection sent several frames in one batch (a party mate who
//! sees one player leave and another join, the last COUNTDOWN and GAME_START) gets them in
//! one `send` (fewer system calls per join). Timers already due run, and their
//! frames are written, before the batch's other events ([`FrontEnd::run_due_timers`]): a
//! countdown is not held up behind a batch of joins. No protocol logic here.
//!
//! With `--instance-exec` a room's instance is a game server of the operator's
//! ([`game_server`]): the core's [`Output::StartInstance`] spawns it, [`Output::CloseInstance`]
//! stops it, and its exit (an event on its pidfd) goes to the core as
//! [`RtypeCore::handle_instance_exited`]. At shutdown the front end stops every game server
//! and keeps the loop's shutdown wait going until they are gone or past their grace.

pub mod game_server;
pub mod instance;
pub mod random;
pub mod stats;
pub mod tcp;
pub mod tcp_frames;
pub mod udp;
pub mod udp_upstream;

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use mio::event::Event;
use mio::Registry;

use crate::metrics::{LoadSample, RoomView, Snapshot};
use crate::rtype::{ConnId, Output, RoomId, RtypeCore, TcpInput};
use crate::wire::tcp_lobby::validate_name;

use crate::net::directory::{DirectoryBridge, Inbound};
use crate::net::io::heap::FORGET_PER_TIDY;
use crate::net::io::pass::TIMERS_PER_PASS;
use crate::net::rtype::game_server::{GameServers, Stream};
use crate::net::rtype::tcp::{Readiness, TcpLobby};
use crate::net::rtype::udp::{Batch, ReadSize, Received, UdpLobby};
use crate::net::server::FrontEnd;
use crate::net::token::Target;

/// Full batches read from one socket before serving the others (fairness under flood):
/// `RECV_BATCHES * BATCH` datagrams (a game instance reads a short batch first, see
/// [`instance_read_size`]).
const RECV_BATCHES: usize = 4;

/// The size of read `round` (from 0) of a game instance's readiness event: the first asks for
/// [`ReadSize::First`] datagrams, as a room with one DATA in flight has one waiting, the next
/// [`RECV_BATCHES`] for full batches. The lobby socket is always read in full batches: one
/// socket for every client, where LIST_ROOMS arrive in bursts.
fn instance_read_size(round: usize) -> ReadSize {
    if round == 0 {
        ReadSize::First
    } else {
        ReadSize::Full
    }
}

/// How far back a TCP lobby request may count as received: its kernel receive timestamp is
/// taken up to this long before the loop read it, no further. The timestamp lets a START_REQ
/// that waited in its socket while the loop was busy (writing a burst of COUNTDOWNs, or
/// descheduled) start its countdown on time, so the wait does not shift every COUNTDOWN of
/// the party (docs/PERFORMANCE.md, "Measured decisions"). The bound keeps a request that sat
/// far longer (a wall-clock step, an overloaded loop) from starting a countdown whose first
/// values are already past: a countdown loses at most this much of its first interval.
const MAX_BACKDATE: Duration = Duration::from_millis(10);

/// The time a TCP lobby request read at `read_at` counts as received at: when it reached
/// the socket (`arrived`, the kernel's stamp), but no more than [`MAX_BACKDATE`] before the
/// read, and never after it.
fn received_at(arrived: Instant, read_at: Instant) -> Instant {
    let earliest = read_at.checked_sub(MAX_BACKDATE).unwrap_or(read_at);
    arrived.clamp(earliest, read_at)
}

/// The R-Type lobby core and its sockets.
pub struct RtypeFrontEnd {
    lobby: RtypeCore,
    udp: UdpLobby,
    tcp: Option<TcpLobby>,
    /// The rooms' game servers with `--instance-exec` (then no relay socket is bound).
    servers: Option<GameServers>,
    /// Reused for every relayed DATA datagram.
    destinations: Vec<SocketAddr>,
    /// Reused for the inputs of each TCP lobby readiness event.
    tcp_inputs: Vec<TcpInput>,
    /// When the current event batch's first TCP lobby input was read: the time a request
    /// counts as received at when its read was not stamped by the kernel (they were all in
    /// the kernel by then), so such START_REQs read in one batch share one schedule.
    batch_started: Option<Instant>,
    /// The room directory a group of nodes shares (`--directory`): this node's listable
    /// rooms go out through it, the other nodes' come back into ROOM_LIST.
    directory: Option<DirectoryBridge>,
}

impl RtypeFrontEnd {
    /// The core with its UDP sockets and, when `--tcp-port` is enabled, the TCP lobby.
    pub fn new(lobby: RtypeCore, udp: UdpLobby, tcp: Option<TcpLobby>) -> RtypeFrontEnd {
        RtypeFrontEnd {
            lobby,
            udp,
            tcp,
            servers: None,
            destinations: Vec::with_capacity(16),
            tcp_inputs: Vec::new(),
            batch_started: None,
            directory: None,
        }
    }

    /// Shares this node's UDP rooms with a group through `directory`, and lists theirs.
    pub fn set_directory(&mut self, directory: DirectoryBridge) {
        self.directory = Some(directory);
    }

    /// The directory's reports taken (the other nodes' rooms into the list, or out of it
    /// once stale; its state and what arrived in this node's inbox to the core) and this
    /// node's list handed over when it changed (coalesced).
    fn sync_directory(&mut self, registry: &Registry) {
        let Some(directory) = self.directory.as_mut() else {
            return;
        };
        let now = Instant::now();
        if directory.poll(now) {
            self.udp
                .set_remote_rooms(directory.remote_records(), directory.remote_generation());
            self.lobby.handle_remote_listed(directory.remote_len());
        }
        self.lobby.handle_directory_state(directory.is_up());
        let mut inbound = false;
        while let Some(message) = self.directory.as_mut().and_then(|d| d.next_inbound()) {
            inbound = true;
            match message {
                Inbound::Ask { from, ask } => self.lobby.handle_remote_join(now, from, ask),
                Inbound::Answer { req, answer } => self.lobby.handle_owner_answer(now, req, answer),
            }
            self.dispatch(registry);
        }
        if inbound {
            self.udp.flush();
        }
        let Some(directory) = self.directory.as_mut() else {
            return;
        };
        if directory.publish_due(self.lobby.list_generation(), now) {
            let (generation, records) = self.udp.local_records(&self.lobby);
            directory.publish(generation, records, now);
        }
    }

    /// Runs each room's instance as a game server of `servers` (`--instance-exec`); the
    /// core must have been configured with [`crate::rtype::RtypeConfig::instance_exec`].
    pub fn with_game_servers(mut self, servers: GameServers) -> RtypeFrontEnd {
        self.servers = Some(servers);
        self
    }

    /// A game server's pidfd is readable: if it exited, its room goes (core input).
    fn game_server_exited(&mut self, registry: &Registry, key: usize) {
        let now = Instant::now();
        let Some(room) = self.servers.as_mut().and_then(|s| s.exit_event(now, key)) else {
            return;
        };
        self.lobby.handle_instance_exited(now, room);
        self.dispatch(registry);
    }

    fn game_server_output(&mut self, registry: &Registry, key: usize, stream: Stream) {
        if let Some(servers) = self.servers.as_mut() {
            servers.output_event(registry, Instant::now(), key, stream);
        }
    }

    /// Reads the lobby socket batch by batch, each datagram to the core in turn; the
    /// replies are queued and leave in one `sendmmsg` before the next read.
    fn lobby_readable(&mut self, registry: &Registry) {
        for _ in 0..RECV_BATCHES {
            let count = match self.udp.recv_lobby(ReadSize::Full) {
                Batch::Read(count) => count,
                Batch::Empty => return,
                Batch::Failed => continue,
            };
            let now = Instant::now();
            for index in 0..count {
                if let Received::Lobby {
                    from,
                    seq,
                    dialect,
                    request,
                } = self.udp.lobby_datagram(index)
                {
                    self.lobby
                        .handle_lobby_request_in(now, from, dialect, seq, request);
                    self.dispatch(registry);
                }
            }
            if self.udp.drained() {
                // A short batch drained the socket: the next datagram raises a new event.
                return;
            }
        }
        // Budget spent with data possibly left: come back without waiting for a new edge.
        self.udp.requeue(registry, Target::LobbyUdp);
    }

    /// Reads instance `key` batch by batch, as [`Self::lobby_readable`] does.
    fn instance_readable(&mut self, registry: &Registry, key: usize) {
        for round in 0..=RECV_BATCHES {
            let (Some(room), batch) = self.udp.recv_instance(key, instance_read_size(round)) else {
                return;
            };
            let count = match batch {
                Batch::Read(count) => count,
                Batch::Empty => return,
                Batch::Failed => continue,
            };
            let now = Instant::now();
            for index in 0..count {
                match self.udp.instance_datagram(room, index) {
                    Received::Instance { from, seq, request } => {
                        self.lobby
                            .handle_instance_request(now, room, from, seq, request);
                        self.dispatch(registry);
                    }
                    Received::Data {
                        from,
                        target,
                        index,
                    } => self.relay(now, key, room, from, target, index),
                    Received::Dropped | Received::Lobby { .. } => {}
                }
            }
            if self.udp.drained() {
                return;
            }
        }
        self.udp.requeue(registry, Target::Instance(key));
    }

    /// Forwards a DATA datagram: the core picks the destinations, `udp` rewrites it in place
    /// and queues a copy for each.
    fn relay(
        &mut self,
        now: Instant,
        key: usize,
        room: RoomId,
        from: SocketAddr,
        target: u8,
        index: usize,
    ) {
        let mut destinations = std::mem::take(&mut self.destinations);
        if let Some(sender) = self
            .lobby
            .relay_data(now, room, from, target, &mut destinations)
        {
            self.udp.relay(key, sender, &destinations, index);
        }
        self.destinations = destinations;
    }

    /// Carries out everything the core has queued.
    fn dispatch(&mut self, registry: &Registry) {
        while let Some(output) = self.lobby.poll_output() {
            match output {
                Output::Lobby {
                    to,
                    seq,
                    dialect,
                    reply,
                } => self
                    .udp
                    .send_lobby_reply(to, seq, dialect, reply, &self.lobby),
                Output::Instance { room, to, seq, msg } => {
                    self.udp.send_instance_message(room, to, seq, msg)
                }
                Output::OpenInstance { room } => {
                    let now = Instant::now();
                    let port = self.udp.open_instance(registry, now, room);
                    self.lobby.handle_instance_opened(now, room, port);
                }
                Output::StartInstance {
                    room,
                    players,
                    seed,
                } => {
                    let now = Instant::now();
                    let port = match self.servers.as_mut() {
                        Some(servers) => servers.start(registry, now, room, players, seed),
                        None => self.udp.open_instance(registry, now, room),
                    };
                    self.lobby.handle_instance_opened(now, room, port);
                }
                Output::CloseInstance { room } => {
                    if let Some(servers) = self.servers.as_mut() {
                        servers.stop(Instant::now(), room);
                    }
                    self.udp.close_instance(room);
                }
                Output::Tcp { conn, msg } => {
                    if let Some(tcp) = self.tcp.as_mut() {
                        tcp.send(conn, msg, &mut self.lobby);
                    }
                }
                Output::CloseConn { conn } => {
                    if let Some(tcp) = self.tcp.as_mut() {
                        tcp.close_when_flushed(conn);
                    }
                }
                Output::AskOwner { owner, req } => {
                    let queued = match (self.directory.as_mut(), self.lobby.pending_ask(req)) {
                        (Some(directory), Some(ask)) => directory.ask(owner, ask),
                        _ => false,
                    };
                    if !queued {
                        self.lobby.handle_ask_dropped(Instant::now(), req);
                    }
                }
                Output::AnswerAsker { asker, req, answer } => {
                    if let Some(directory) = self.directory.as_mut() {
                        directory.answer(asker, req, answer);
                    }
                }
            }
        }
    }

    /// Writes every TCP connection with bytes queued since the last flush. A failed write
    /// closes a connection, which may queue more outputs: they are carried out, and written,
    /// in turn.
    fn flush_tcp(&mut self, registry: &Registry) {
        loop {
            match self.tcp.as_mut() {
                Some(tcp) => tcp.flush(&mut self.lobby, registry),
                None => return,
            }
            if !self.lobby.has_output() {
                return;
            }
            self.dispatch(registry);
        }
    }

    /// Readiness on TCP lobby connection `key`: what it sent goes to the core input by input,
    /// each one's outputs carried out before the next; once the core has let the connection
    /// go, the rest is dropped.
    fn tcp_ready(&mut self, registry: &Registry, key: usize, event: &Event) {
        let Some(tcp) = self.tcp.as_mut() else {
            return;
        };
        let readiness = Readiness {
            readable: event.is_readable(),
            closed: event.is_read_closed() || event.is_error(),
            writable: event.is_writable(),
        };
        let mut inputs = std::mem::take(&mut self.tcp_inputs);
        let arrived = tcp.ready(key, readiness, &mut self.lobby, registry, &mut inputs);
        self.dispatch(registry);
        let conn = ConnId(key);
        let now = match arrived {
            Some(stamp) => {
                let read_at = Instant::now();
                let at = stamp.at(read_at, SystemTime::now()).unwrap_or(read_at);
                received_at(at, read_at)
            }
            None => *self.batch_started.get_or_insert_with(Instant::now),
        };
        for input in inputs.drain(..) {
            if !self.lobby.tcp_conn_is_open(conn) {
                break;
            }
            self.lobby.handle_tcp_input(now, conn, input);
            self.dispatch(registry);
        }
        self.tcp_inputs = inputs;
    }

    fn tcp_accept(&mut self, registry: &Registry) {
        if let Some(tcp) = self.tcp.as_mut() {
            tcp.accept(&mut self.lobby, registry);
        }
        self.dispatch(registry);
    }
}

impl FrontEnd for RtypeFrontEnd {
    fn ready(&mut self, registry: &Registry, target: Target, event: &Event) {
        match target {
            Target::LobbyUdp => self.lobby_readable(registry),
            Target::Instance(key) => self.instance_readable(registry, key),
            Target::TcpListener => self.tcp_accept(registry),
            Target::TcpConn(key) => self.tcp_ready(registry, key, event),
            Target::GameServer(key) => self.game_server_exited(registry, key),
            Target::GameServerOut(key) => self.game_server_output(registry, key, Stream::Out),
            Target::GameServerErr(key) => self.game_server_output(registry, key, Stream::Err),
            _ => {}
        }
        // No datagram waits past the event that produced it.
        self.udp.flush();
    }

    fn run_due_timers(&mut self, registry: &Registry) {
        let now = Instant::now();
        if let Some(servers) = self.servers.as_mut() {
            servers.kill_overdue(now);
        }
        // The loop's deadline may be the transport's (a draining connection), not a timer.
        if !self.lobby.poll_timeout().is_some_and(|at| at <= now) {
            return;
        }
        self.lobby.handle_timeout_within(now, TIMERS_PER_PASS);
        self.dispatch(registry);
        // A timer's datagrams (a remote JOIN's JOIN_FAILED, a COUNTDOWN) leave now.
        self.udp.flush();
        self.flush_tcp(registry);
    }

    fn after_events(&mut self, registry: &Registry) {
        self.batch_started = None;
        self.lobby
            .handle_timeout_within(Instant::now(), TIMERS_PER_PASS);
        self.dispatch(registry);
        self.udp.flush();
        self.flush_tcp(registry);
        let accept_now = match self.tcp.as_mut() {
            Some(tcp) => tcp.remove_closed(registry, Instant::now()),
            None => false,
        };
        if accept_now {
            self.tcp_accept(registry);
            self.flush_tcp(registry);
        }
        self.udp.remove_closed(registry, Instant::now());
        if let Some(servers) = self.servers.as_mut() {
            servers.kill_overdue(Instant::now());
            servers.remove_closed(registry, Instant::now());
        }
        self.sync_directory(registry);
    }

    fn tidy(&mut self, now: Instant) {
        self.lobby.tidy(now, FORGET_PER_TIDY);
        if let Some(tcp) = self.tcp.as_mut() {
            tcp.tidy(now);
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let tcp = self.tcp.as_ref().and_then(TcpLobby::next_deadline);
        let kills = self.servers.as_ref().and_then(GameServers::next_deadline);
        let directory = self
            .directory
            .as_ref()
            .and_then(|d| d.next_deadline(self.lobby.list_generation()));
        [self.lobby.poll_timeout(), tcp, kills, directory]
            .into_iter()
            .flatten()
            .min()
    }

    fn load(&self, sample: &mut LoadSample) {
        let stats = &self.lobby.stats;
        sample.requests[0] += stats.list_requests + stats.create_requests + stats.join_requests;
        if let Some(tcp) = self.tcp.as_ref() {
            sample.requests[1] += tcp.stats.frames_in;
            sample.connections += tcp.conn_count() as u64;
        }
        // One pass over the rooms, bounded by --max-rooms.
        for room in self.lobby.rooms() {
            sample.rooms += 1;
            sample.members += (room.member_count() + self.lobby.lobby_members(room.id)) as u64;
        }
    }

    fn snapshot(&self, snap: &mut Snapshot) {
        snap.lobby = self.lobby.stats.clone();
        snap.add_counters(|f| self.udp.stats.visit(f));
        if let Some(directory) = self.directory.as_ref() {
            let now = Instant::now();
            snap.add_counters(|f| directory.visit(now, f));
            snap.add_counters(|f| self.lobby.stats.remote.visit(f));
            snap.directory = Some(directory.view(now));
            directory.add_nodes(now, snap);
        }
        if let Some(tcp) = self.tcp.as_ref() {
            snap.add_counters(|f| tcp.stats.visit(f));
            snap.tcp_connections = Some(tcp.conn_count());
            snap.tcp_buffered_bytes = tcp.buffered_bytes();
        }
        snap.rooms = self
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
                players: Vec::new(),
            })
            .collect();
        snap.rooms.sort_unstable_by_key(|view| view.room.0);
        // Names only for the status page, and only for the parties it shows.
        let parties = snap.rooms.iter_mut().filter_map(|view| {
            let party = self.lobby.party(view.room)?;
            Some((view, party))
        });
        for (view, party) in parties.take(snap.detail_rows) {
            view.players = party
                .members()
                .map(|(_, member)| validate_name(&member.name).unwrap_or("?").to_owned())
                .collect();
        }
        snap.open_instances = self.udp.open_instances();
        snap.ports_in_use = self.udp.ports_in_use();
        if let Some(servers) = self.servers.as_ref() {
            snap.add_counters(|f| servers.stats.visit(servers.running(), f));
            snap.open_instances += servers.running();
            snap.ports_in_use += servers.ports_in_use();
        }
        snap.rate_table_len = self.lobby.rate_table_len();
    }

    fn shutdown(&mut self, registry: &Registry) {
        if let Some(servers) = self.servers.as_mut() {
            servers.stop_all(Instant::now());
        }
        if self.tcp.is_none() {
            return;
        }
        // Every TCP lobby member is told the server is going away (docs/protocols/tcp-lobby.md).
        self.lobby.handle_shutdown();
        self.dispatch(registry);
        self.udp.flush();
        self.flush_tcp(registry);
    }

    fn flush_shutdown(&mut self, registry: &Registry) -> bool {
        let bytes = self.tcp.as_mut().is_some_and(|tcp| tcp.flush_all(registry));
        let servers = self
            .servers
            .as_mut()
            .is_some_and(|servers| servers.poll_shutdown(Instant::now()));
        bytes || servers
    }

    fn shutdown_wake(&self) -> Option<Instant> {
        let now = Instant::now();
        self.servers.as_ref().and_then(|s| s.shutdown_wake(now))
    }

    fn close_all(&mut self, registry: &Registry) {
        if let Some(servers) = self.servers.as_mut() {
            servers.close_all();
        }
        if let Some(tcp) = self.tcp.as_mut() {
            tcp.close_all(registry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_count_from_their_arrival_within_the_backdate_bound() {
        let read_at = Instant::now() + Duration::from_secs(1);
        let ms = Duration::from_millis;
        assert_eq!(received_at(read_at - ms(3), read_at), read_at - ms(3));
        assert_eq!(received_at(read_at, read_at), read_at);
        // Sat in the socket longer than the bound: counted from the bound.
        assert_eq!(
            received_at(read_at - ms(500), read_at),
            read_at - MAX_BACKDATE
        );
        // A stamp after the read (the clocks are read apart): counted from the read.
        assert_eq!(received_at(read_at + ms(1), read_at), read_at);
    }
}
