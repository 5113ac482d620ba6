//! The R-Type core: a sans-IO state machine for rooms, seats, game instances and the TCP
//! lobby's parties.
//!
//! It implements the behaviour of the UDP room lobby (`docs/protocols/udp-lobby.md`, "Server
//! behaviour"), of lobbyd's game-instance relay (`docs/protocols/instance.md`) and of the
//! TCP lobby (RFC R-Type-TCP-001, `docs/protocols/tcp-lobby.md`). It owns no socket, never
//! reads the clock and draws no randomness of its own: the driver hands it decoded requests
//! (a TCP frame becomes a [`TcpInput`] here, in `tcp_codec.rs`), the current time and a
//! [`HashSource`] for player hashes, through `handle_*` methods, and collects what to do
//! through [`RtypeCore::poll_output`] (send a reply, bind or close an instance socket, send on
//! or close a TCP connection) and [`RtypeCore::poll_timeout`] (when to call
//! [`RtypeCore::handle_timeout`] next). Timers run on one fixed-tick [`TimerWheel`].
//!
//! The shape is the general lobby core's: [`RtypeCore`] (this file) is the façade, over
//! components that each own their state, and every handler gets a `Ctx` (`context.rs`: the
//! settings, the output queue, the timer wheel, the counters, the hash source):
//! - `rooms.rs`, `Rooms`: the room table, the UDP room lobby (in both its spellings, the
//!   seed's and the upstream R-Type program's, over one table; `reply_len.rs`: what each reply
//!   costs in the reply-byte budget) and every room's instance (`relay.rs`, handed one room;
//!   over `room.rs`, one room, and `room_map.rs`, the table and its list order);
//! - `parties.rs`, `Parties`: the TCP lobby's parties (over `party.rs`, one party) and the
//!   live player hashes; `countdown.rs`: a party's way to its game (instance, countdown,
//!   GAME_START);
//! - `conns.rs`, `TcpConns`: the TCP lobby's connection records, deadlines, request rates;
//! - `remote_join.rs`, `RemoteJoins` (in `Rooms`): JOIN_ROOM of another node's room, asked
//!   of its owner through the directory and answered by it alone;
//! - `tcp.rs`: the handlers that join those two (a request, a violation, a close, a
//!   deadline);
//! - `tcp_codec.rs`: a checked TCP frame as a [`TcpInput`], a [`TcpMessage`] as its wire
//!   form;
//! - the vocabulary, below everything: `config.rs`, `messages.rs` (UDP and instance, and
//!   [`Output`]), `tcp_messages.rs`, `stats.rs`, `tcp_stats.rs`.
//!
//! The output queue is bounded by what one `handle_*` call produces (the driver drains it
//! after each: a TCP request queues at most one message per party member plus a newcomer's
//! roster, a UDP request one reply), and after a burst its memory is given back once drained
//! ([`OUTPUT_KEEP`]).
//!
//! Instance sockets are bound by the driver: CREATE_ROOM yields [`Output::OpenInstance`],
//! the driver answers with [`RtypeCore::handle_instance_opened`], and only then is ROOM_CREATED
//! (or JOIN_FAILED) queued. So a listed room always has a live socket, and a room's socket is
//! closed ([`Output::CloseInstance`]) in the same step that removes it from the list. With
//! `--instance-exec` ([`RtypeConfig::instance_exec`]) the instance is a game server of the
//! operator's: [`Output::StartInstance`] in place of `OpenInstance`, answered the same way,
//! and its exit is an input ([`RtypeCore::handle_instance_exited`]) that ends its room.

mod config;
mod conns;
mod context;
mod countdown;
mod messages;
mod parties;
mod party;
mod relay;
mod remote_join;
mod reply_len;
pub mod room;
pub mod room_map;
mod rooms;
pub mod stats;
mod tcp;
mod tcp_codec;
mod tcp_messages;
mod tcp_stats;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Instant;

use crate::time::wheel::TimerWheel;
use crate::wire::tcp_lobby::NAME_LEN;
use crate::wire::tcp_upstream::RoomRecord;

pub use config::{PartyConfig, RtypeConfig, NODE_SHIFT};
pub use context::HashSource;
pub use messages::{
    Dialect, InstanceMessage, InstanceRequest, LobbyReply, LobbyRequest, Output, OwnerAnswer,
    RejectReason, RemoteJoin, RoomInfo, RoomSettings, MAX_PASSWORD, MAX_ROOM_NAME, UNNAMED_ROOM,
};
pub use party::{Party, PartyMember};
pub use remote_join::{ASK_TIMEOUT, MAX_PENDING_ASKS};
pub use room::{Room, RoomId, RoomKind, RoomState, Slot};
pub use stats::{InstanceIgnore, JoinFailure, RtypeStats};
pub use tcp_codec::{server_repr, upstream_repr, TcpInput};
pub use tcp_messages::{ConnClose, ConnId, TcpError, TcpMessage, TcpRequest, Violation};
pub use tcp_stats::{CloseCause, PartyStats, UPSTREAM_REFUSALS};

use conns::TcpConns;
use context::{Ctx, TimerEvent};
use parties::Parties;
use rooms::Rooms;
use tcp::Tcp;

/// Output records the queue keeps room for once drained; a burst above it (a countdown tick
/// in thousands of parties, say) is given back.
pub const OUTPUT_KEEP: usize = 4096;

/// Timer wheel slots: one revolution is 4,096 ticks (0.41 s at the driver's 100 us tick).
/// Later deadlines (idle connections, room housekeeping) wait a level up in the wheel and
/// cost no wake-ups until their revolution comes.
const TIMER_SLOTS: usize = 4096;

/// Builds a [`Ctx`] from the core's shared fields, leaving the components free to borrow.
macro_rules! ctx {
    ($core:ident) => {
        Ctx {
            config: &$core.config,
            out: &mut $core.outputs,
            timers: &mut $core.timers,
            stats: &mut $core.stats,
            hashes: &mut $core.hashes,
        }
    };
}

/// Builds the TCP handlers' view of the components.
macro_rules! tcp {
    ($core:ident) => {
        Tcp {
            conns: &mut $core.conns,
            parties: &mut $core.parties,
            rooms: &mut $core.rooms,
        }
    };
}

/// The R-Type core: every room, party and TCP connection, their timers and the queue of
/// outputs.
pub struct RtypeCore {
    config: RtypeConfig,
    timers: TimerWheel<TimerEvent>,
    outputs: VecDeque<Output>,
    hashes: HashSource,
    /// Rooms, the UDP room lobby and the instances (`rooms.rs`).
    rooms: Rooms,
    /// TCP lobby parties (`parties.rs`).
    parties: Parties,
    /// TCP lobby connections (`conns.rs`).
    conns: TcpConns,
    /// The core's counters.
    pub stats: RtypeStats,
}

impl RtypeCore {
    /// A core with no rooms; `now` anchors the timer wheel. TCP player hashes come from
    /// `hashes` (the driver passes the operating system's CSPRNG, simulations a seeded
    /// sequence).
    pub fn new(config: RtypeConfig, now: Instant, hashes: HashSource) -> RtypeCore {
        RtypeCore {
            timers: TimerWheel::new(now, config.timer_tick, TIMER_SLOTS),
            rooms: Rooms::new(&config),
            config,
            outputs: VecDeque::new(),
            hashes,
            parties: Parties::default(),
            conns: TcpConns::default(),
            stats: RtypeStats::default(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &RtypeConfig {
        &self.config
    }

    /// The next thing for the driver to do. Once the queue is drained, memory it held after
    /// a burst is given back (down to [`OUTPUT_KEEP`] records).
    pub fn poll_output(&mut self) -> Option<Output> {
        let output = self.outputs.pop_front();
        if output.is_none() && self.outputs.capacity() > OUTPUT_KEEP {
            self.outputs.shrink_to(OUTPUT_KEEP);
        }
        output
    }

    /// Whether outputs are waiting for [`RtypeCore::poll_output`].
    pub fn has_output(&self) -> bool {
        !self.outputs.is_empty()
    }

    /// The periodic tidy (the driver calls it every few seconds): forgets up to `budget`
    /// rate-limit entries whose buckets are full again and gives back spare capacity.
    /// Changes no decision.
    pub fn tidy(&mut self, now: Instant, budget: usize) {
        self.rooms.tidy(now, budget);
    }

    /// When [`RtypeCore::handle_timeout`] must be called next, if any timer is armed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next_deadline()
    }

    /// Number of rooms alive (bound, opening or finishing).
    pub fn room_count(&self) -> usize {
        self.rooms.len()
    }

    /// A room, for inspection (operators' views, tests).
    pub fn room(&self, id: RoomId) -> Option<&Room> {
        self.rooms.get(id)
    }

    /// Every room, in no particular order.
    pub fn rooms(&self) -> impl Iterator<Item = &Room> + '_ {
        self.rooms.values()
    }

    /// Source IPs tracked by the UDP lobby's rate limiter.
    pub fn rate_table_len(&self) -> usize {
        self.rooms.rate_table_len()
    }

    /// The ROOM_LIST records of the seed's dialect: at most `max_list_rooms`, joinable rooms
    /// first, each group in creation order. Allocates nothing.
    pub fn room_list(&self) -> impl Iterator<Item = RoomInfo<'_>> {
        self.rooms.room_list(self.config.max_list_rooms)
    }

    /// Every listed room in the same order, for the upstream dialect's ROOM_LIST, which takes
    /// as many as its 2048 bytes hold. Allocates nothing.
    pub fn upstream_room_list(&self) -> impl Iterator<Item = RoomInfo<'_>> {
        self.rooms.listing()
    }

    /// Changes whenever anything [`RtypeCore::room_list`] shows may have changed: while it
    /// stays the same, a ROOM_LIST built earlier is still exact (the driver re-frames it).
    pub fn list_generation(&self) -> u64 {
        self.rooms.list_generation()
    }

    /// The directory's input: the driver now appends `count` records of other nodes' rooms
    /// to every ROOM_LIST, after this node's own and within `--max-list-rooms` (the core
    /// charges the reply-byte budget for what is sent). 0 when the directory is down.
    pub fn handle_remote_listed(&mut self, count: usize) {
        self.rooms.set_remote_listed(count);
    }

    /// The driver's report on the directory: up (asks reach the owners of other nodes'
    /// rooms) or not (a JOIN_ROOM of another node's room is refused at once).
    pub fn handle_directory_state(&mut self, up: bool) {
        self.rooms.remote.set_up(up);
    }

    /// Asks of other nodes' rooms waiting for their owner's answer.
    pub fn pending_asks(&self) -> usize {
        self.rooms.remote.pending()
    }

    /// The JOIN_ROOM of ask `req` ([`Output::AskOwner`]) while it waits for its answer.
    pub fn pending_ask(&self, req: u64) -> Option<&RemoteJoin> {
        self.rooms.remote.get(req)
    }

    /// The owner's answer to this node's ask `req` ([`Output::AskOwner`]): the client gets
    /// JOIN_SUCCESS with the owner's port, or JOIN_FAILED. An answer after the ask's
    /// [`ASK_TIMEOUT`] (or to no ask of this node's) is dropped and counted.
    pub fn handle_owner_answer(&mut self, now: Instant, req: u64, answer: OwnerAnswer) {
        let mut cx = ctx!(self);
        let Some(to) = self.rooms.remote.answered(&mut cx, req, answer) else {
            return;
        };
        let result = match answer {
            OwnerAnswer::Granted { room, port } => Ok((room, port)),
            OwnerAnswer::Refused(reason) => Err(reason),
        };
        self.rooms.answer_join(&mut cx, now, to, result);
    }

    /// The driver could not hand ask `req` to the directory (its queue was full): the
    /// client gets JOIN_FAILED now.
    pub fn handle_ask_dropped(&mut self, now: Instant, req: u64) {
        let mut cx = ctx!(self);
        if let Some(to) = self.rooms.remote.dropped(&mut cx, req) {
            let result = Err(JoinFailure::OwnerUnreachable);
            self.rooms.answer_join(&mut cx, now, to, result);
        }
    }

    /// Node `asker` asks this node, the room's owner, to decide a JOIN_ROOM: the same JOIN
    /// logic as a local one (a seat reserved for the client's address), answered with
    /// [`Output::AnswerAsker`].
    pub fn handle_remote_join(&mut self, now: Instant, asker: u8, ask: RemoteJoin) {
        let mut cx = ctx!(self);
        cx.stats.remote.served += 1;
        let password = ask.password();
        let answer = match self
            .rooms
            .join_room(&mut cx, now, ask.client, ask.room.0, password, false)
        {
            Ok((room, port)) => OwnerAnswer::Granted { room, port },
            Err(reason) => OwnerAnswer::Refused(reason),
        };
        cx.push(Output::AnswerAsker {
            asker,
            req: ask.req,
            answer,
        });
    }

    /// A UDP lobby request in the seed's dialect from `from` with sequence id `seq`.
    pub fn handle_lobby_request(
        &mut self,
        now: Instant,
        from: SocketAddr,
        seq: u16,
        request: LobbyRequest<'_>,
    ) {
        self.handle_lobby_request_in(now, from, Dialect::Seed, seq, request);
    }

    /// A UDP lobby request spelled in `dialect` from `from` with sequence id `seq`; the
    /// reply goes out in the same spelling.
    pub fn handle_lobby_request_in(
        &mut self,
        now: Instant,
        from: SocketAddr,
        dialect: Dialect,
        seq: u16,
        request: LobbyRequest<'_>,
    ) {
        let mut cx = ctx!(self);
        self.rooms
            .handle_lobby_request(&mut cx, now, from, dialect, seq, request);
    }

    /// The driver's answer to [`Output::OpenInstance`]: the bound port, or `None` when no
    /// port of the instance range could be bound. A port bound for a room that is gone by
    /// then is handed back at once ([`Output::CloseInstance`]).
    pub fn handle_instance_opened(&mut self, now: Instant, id: RoomId, port: Option<u16>) {
        let mut cx = ctx!(self);
        if self.rooms.get(id).map(|room| room.kind) == Some(RoomKind::Party) {
            let (conns, rooms) = (&mut self.conns, &mut self.rooms);
            self.parties
                .instance_opened(&mut cx, conns, rooms, now, id, port);
        } else {
            self.rooms.instance_opened(&mut cx, now, id, port);
        }
    }

    /// The driver's report that room `id`'s game server exited (`--instance-exec`): the
    /// room is reaped now, whatever its state (gone from ROOM_LIST, its port back in the
    /// pool, a started party's connections still open closed). A party still in its lobby
    /// (counting down) stays, its countdown cancelled (ERROR [`TcpError::NoInstance`]). A room
    /// already gone is ignored.
    pub fn handle_instance_exited(&mut self, now: Instant, id: RoomId) {
        if self.rooms.is_opening(id) {
            self.handle_instance_opened(now, id, None);
            return;
        }
        let mut cx = ctx!(self);
        if self.parties.instance_exited(&mut cx, &mut self.rooms, id) {
            return;
        }
        if self.rooms.reap(&mut cx, id) {
            tcp::reaped(&mut cx, &mut tcp!(self), id);
            cx.stats.rooms_reaped += 1;
            cx.push(Output::CloseInstance { room: id });
        }
    }

    /// A well-formed control datagram from `from` on `room`'s instance socket.
    pub fn handle_instance_request(
        &mut self,
        now: Instant,
        id: RoomId,
        from: SocketAddr,
        seq: u16,
        request: InstanceRequest,
    ) {
        let mut cx = ctx!(self);
        self.rooms
            .handle_instance_request(&mut cx, now, id, from, seq, request);
    }

    /// A DATA datagram from `from` on `id`'s socket, addressed to `target` (a slot, or 0xFF
    /// for everyone else). Fills `destinations` with where to forward it and returns the
    /// sender's slot, or `None` (and counts why) when it must be dropped. The driver then
    /// rewrites the datagram in place and sends it, so the payload is never copied.
    pub fn relay_data(
        &mut self,
        now: Instant,
        id: RoomId,
        from: SocketAddr,
        target: u8,
        destinations: &mut Vec<SocketAddr>,
    ) -> Option<Slot> {
        let mut cx = ctx!(self);
        self.rooms
            .relay_data(&mut cx, now, id, from, target, destinations)
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.handle_timeout_within(now, usize::MAX);
    }

    /// Runs at most `budget` of the timers due at `now` (the driver bounds its work per loop
    /// pass); the rest stay due, and [`RtypeCore::poll_timeout`] says so.
    pub fn handle_timeout_within(&mut self, now: Instant, budget: usize) {
        for _ in 0..budget {
            let Some(event) = self.timers.poll_expired(now) else {
                return;
            };
            let mut cx = ctx!(self);
            match event {
                TimerEvent::Housekeeping(id) => self.rooms.housekeeping(&mut cx, now, id),
                TimerEvent::CountdownTick(id) => self.rooms.countdown_tick(&mut cx, id),
                TimerEvent::Reap(id) => {
                    if self.rooms.reap(&mut cx, id) {
                        tcp::reaped(&mut cx, &mut tcp!(self), id);
                        cx.stats.rooms_reaped += 1;
                        cx.push(Output::CloseInstance { room: id });
                    }
                }
                TimerEvent::PartyTick(id) => {
                    let (conns, rooms) = (&mut self.conns, &mut self.rooms);
                    self.parties.countdown_tick(&mut cx, conns, rooms, now, id);
                }
                TimerEvent::PartyLinger(id) => tcp::linger(&mut cx, &mut tcp!(self), id),
                TimerEvent::ConnDeadline(conn) => {
                    tcp::deadline(&mut cx, &mut tcp!(self), now, conn)
                }
                TimerEvent::RemoteJoinTimeout(req) => {
                    if let Some(to) = self.rooms.remote.timed_out(&mut cx, req) {
                        let result = Err(JoinFailure::OwnerUnreachable);
                        self.rooms.answer_join(&mut cx, now, to, result);
                    }
                }
            }
        }
    }

    /// A party, for inspection.
    pub fn party(&self, id: RoomId) -> Option<&Party> {
        self.parties.get(id)
    }

    /// Players still in a party's TCP lobby (0 once the game started), for the operators'
    /// room view.
    pub fn lobby_members(&self, id: RoomId) -> usize {
        self.parties.lobby_members(id)
    }

    /// The players of a party's GAME_START in slot order: slot, hash, name field and spawn.
    pub fn game_start_players(
        &self,
        id: RoomId,
    ) -> impl Iterator<Item = (Slot, u64, [u8; NAME_LEN], (f32, f32))> + '_ {
        self.parties
            .game_start_players(&self.config.party.spawns, id)
    }

    /// TCP lobby connections the core knows (pending, connected or transferred).
    pub fn tcp_conn_count(&self) -> usize {
        self.conns.len()
    }

    /// Whether the core still serves `conn` (it has not closed it, nor been told it closed):
    /// the driver stops handing it input once this is false.
    pub fn tcp_conn_is_open(&self, conn: ConnId) -> bool {
        self.conns.is_open(conn)
    }

    /// The party a connection is in, once it has its CONNECT_ACK.
    pub fn party_of(&self, conn: ConnId) -> Option<RoomId> {
        self.conns.party_of(conn)
    }

    /// The connection accepted longest ago that still has no CONNECT_ACK: at `--max-conns`
    /// the driver closes it (reporting [`ConnClose::Evicted`]) to make room for a newcomer.
    pub fn oldest_pending_conn(&self) -> Option<ConnId> {
        self.conns.oldest_pending()
    }

    /// The driver accepted a connection from `peer`. It joins no party yet: that waits for
    /// its CONNECT_REQ, which must come within `--handshake-timeout`.
    pub fn handle_tcp_open(&mut self, now: Instant, conn: ConnId, peer: SocketAddr) {
        let mut cx = ctx!(self);
        self.conns.open(&mut cx, now, conn, peer);
    }

    /// One input from `conn`'s stream ([`TcpInput::of_frame`], [`TcpInput::OVERSIZED`], or
    /// its end), received at `now`.
    pub fn handle_tcp_input(&mut self, now: Instant, conn: ConnId, input: TcpInput) {
        match input {
            TcpInput::Request(request) => self.handle_tcp_request(now, conn, request),
            TcpInput::Violation(reason) => self.handle_tcp_violation(conn, reason),
            TcpInput::Closed(why) => self.handle_tcp_closed(conn, why),
            TcpInput::Upstream => self.handle_tcp_upstream(conn),
        }
    }

    /// The driver found `conn`'s first bytes in the upstream client's dialect
    /// (`docs/protocols/tcp-lobby-upstream.md`): its requests go to rooms first, and its
    /// handshake deadline no longer applies (its player browses rooms; the idle one does).
    pub fn handle_tcp_upstream(&mut self, conn: ConnId) {
        let mut cx = ctx!(self);
        tcp::upstream(&mut cx, &mut tcp!(self), conn);
    }

    /// The rooms of the upstream dialect as LIST_ROOMS_ACK lists them: oldest first, at most
    /// 52 (the client's 2048-byte frame). Allocates nothing.
    pub fn upstream_rooms(&self) -> impl Iterator<Item = RoomRecord> + '_ {
        self.parties.room_records()
    }

    /// The seed party `id`'s GAME_START announced in the upstream dialect.
    pub fn party_seed(&self, id: RoomId) -> u32 {
        self.parties.seed(id)
    }

    /// A decoded request from `conn`: within the connection's request rate it counts as
    /// activity and goes to its party; over it, it is a `flood` violation and ignored
    /// (DISCONNECT is always honoured).
    pub fn handle_tcp_request(&mut self, now: Instant, conn: ConnId, request: TcpRequest) {
        let mut cx = ctx!(self);
        tcp::request(&mut cx, &mut tcp!(self), now, conn, request);
    }

    /// A malformed or out-of-place message from `conn`: counted, ignored, and the connection
    /// is closed once it has made `--max-violations` of them. It is not activity.
    pub fn handle_tcp_violation(&mut self, conn: ConnId, reason: Violation) {
        let mut cx = ctx!(self);
        tcp::violation(&mut cx, &mut tcp!(self), conn, reason);
    }

    /// The driver closed `conn` (peer closed, socket error, slow reader, evicted).
    pub fn handle_tcp_closed(&mut self, conn: ConnId, why: ConnClose) {
        let mut cx = ctx!(self);
        tcp::closed(&mut cx, &mut tcp!(self), conn, why);
    }

    /// The server is stopping: every connection gets ERROR 0xFF "server shutting down" and
    /// is closed once that is flushed. Nobody gets PLAYER_LEFT: everyone is told the same
    /// thing at once.
    pub fn handle_shutdown(&mut self) {
        let mut cx = ctx!(self);
        self.conns.shutdown(&mut cx);
    }
}

#[cfg(test)]
mod tests;
