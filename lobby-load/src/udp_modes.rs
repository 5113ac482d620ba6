//! The [`Exchange`]s of the UDP request/reply modes: what each client sends and how each
//! reply is judged, with the crate's own wire modules.
//!
//! - [`ListRooms`] (`udp-list`): LIST_ROOMS; a ROOM_LIST with fewer rooms than the run
//!   created is a `short_list` error. The rooms are made before the clock starts (as many
//!   per source address as lobbyd's `--max-rooms-per-ip` allows under caps, else one each),
//!   kept alive (HELLO, then PING every second) so the list stays full however long the run,
//!   and left when it ends, so they are reaped after the server's grace.
//! - [`CreateJoin`] (`udp-create-join`): per client, CREATE_ROOM -> ROOM_CREATED, JOIN_ROOM of
//!   that room -> JOIN_SUCCESS, HELLO on its instance -> WELCOME, LEAVE; the room then
//!   finishes and is reaped. Each answered step is one request; `cycles` counts whole lives.
//!   Under caps a client creates a room only while its address has fewer than
//!   `--max-rooms-per-ip` rooms alive and the run fewer than `--max-rooms` ([`RoomBudget`]): a
//!   left room counts until the server has surely reaped it. A CREATE_ROOM the lobby still
//!   refuses (its rooms are taken by others, or by an earlier run's in their reap grace) is
//!   counted as `creates_refused` and the client waits [`REFUSED_PAUSE`] before it asks again.
//!
//! Both lobby modes speak `--dialect` ([`Dialect`]) to the lobby; `udp-list` creates its rooms
//! in the seed's dialect whatever it lists in, so an upstream run also checks that the two
//! dialects share one room table.
//! - [`Echo`] (`echo`): datagrams of `--size` bytes to the built-in echo server, answered
//!   with `--reply-size` bytes.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use super::caps::Caps;
use super::dialect::{Answer, Ask, Dialect};
use super::fit::rooms_per_source;

use lobbyd::wire::instance::{ClientMsg, ClientRepr, ServerMsg, ServerRepr};

use super::echo_server::EchoServer;
use super::options::Options;
use super::setup::{self, RoomRef};
use super::stats::Stats;
use super::udp_rr::{Exchange, Outgoing, Verdict};

/// Interval of the keepalive PINGs of `udp-list`'s room members: short enough for a server
/// run with a short `--idle-timeout` (the bench and soak scripts use 3 s).
const KEEPALIVE_EVERY: Duration = Duration::from_secs(1);

fn lobby_request(buf: &mut [u8], seq: u16, dialect: Dialect, ask: Ask, to: SocketAddr) -> Outgoing {
    Outgoing {
        len: dialect.emit(ask, seq, buf),
        to,
        awaits_reply: true,
    }
}

fn instance_message(buf: &mut [u8], seq: u16, msg: ClientMsg<'_>, to: SocketAddr) -> Outgoing {
    Outgoing {
        len: ClientRepr { seq, msg }.emit(buf),
        to,
        awaits_reply: !matches!(msg, ClientMsg::Leave),
    }
}

/// `udp-list`.
pub struct ListRooms {
    lobby: SocketAddr,
    dialect: Dialect,
    expected: usize,
    members: Vec<(UdpSocket, SocketAddr)>,
    next_keepalive: Instant,
    keepalive_seq: u16,
}

impl ListRooms {
    /// Creates `options.rooms` rooms (creators spread over the sources, as many per address
    /// as the caps allow) and joins each.
    pub fn setup(options: &Options) -> io::Result<ListRooms> {
        let lobby = options.target;
        let wait = options.timeout.max(Duration::from_secs(1));
        let per_source = rooms_per_source(options);
        let mut members = Vec::with_capacity(options.rooms);
        for r in 0..options.rooms {
            let socket = setup::bind(options.source(r / per_source), wait)?;
            let room = setup::create_room(&socket, lobby, r as u16, wait)?;
            setup::hello(&socket, room.instance, 0, None, wait)?;
            members.push((socket, room.instance));
        }
        Ok(ListRooms {
            lobby,
            dialect: options.dialect,
            expected: options.rooms,
            members,
            next_keepalive: Instant::now() + KEEPALIVE_EVERY,
            keepalive_seq: 1,
        })
    }
}

impl Exchange for ListRooms {
    fn reply_len(&self) -> usize {
        self.dialect.list_reply_max()
    }

    fn request(&mut self, _client: usize, seq: u16, buf: &mut [u8]) -> Outgoing {
        lobby_request(buf, seq, self.dialect, Ask::ListRooms, self.lobby)
    }

    fn reply(&mut self, _client: usize, datagram: &[u8], _stats: &mut Stats) -> Verdict {
        match self.dialect.parse(datagram) {
            Ok((seq, Answer::RoomList(len))) if len < self.expected => {
                Verdict::Failed(seq, "short_list")
            }
            Ok((seq, Answer::RoomList(_))) => Verdict::Answer(seq),
            Ok((_, Answer::Notice)) => Verdict::Ignore,
            Ok((seq, _)) => Verdict::Failed(seq, "unexpected_reply"),
            Err(label) => Verdict::Bad(label),
        }
    }

    fn chores(&mut self, now: Instant) {
        if now < self.next_keepalive {
            return;
        }
        self.next_keepalive = now + KEEPALIVE_EVERY;
        self.keepalive_seq = self.keepalive_seq.wrapping_add(1);
        for (socket, instance) in &self.members {
            setup::keepalive(socket, *instance, self.keepalive_seq);
        }
    }

    fn finish(&mut self, stats: &mut Stats) {
        stats.set("rooms_listed", self.expected as u64);
        let seq = self.keepalive_seq.wrapping_add(1);
        for (socket, instance) in &self.members {
            setup::leave(socket, *instance, seq);
        }
    }
}

/// The rooms `udp-create-join` has alive on the server, per source address and in all, so
/// that it never asks for one over lobbyd's `--max-rooms-per-ip` or `--max-rooms`. A room
/// counts from its CREATE_ROOM until the server has surely reaped it: its LEAVE plus the
/// reap grace, or, when the run lost track of it (a timeout, a refused join), the longest a
/// forgotten seat or member can hold it.
#[derive(Debug)]
pub struct RoomBudget {
    per_source: usize,
    total: usize,
    /// Rooms each address holds now (created, not yet left).
    open: Vec<usize>,
    open_total: usize,
    /// Rooms left or lost: their address and when the server has surely reaped them.
    lapsing: Vec<(usize, Instant)>,
    lapse: Duration,
    lapse_lost: Duration,
}

/// How long a client whose CREATE_ROOM was refused under caps waits before it asks again.
pub const REFUSED_PAUSE: Duration = Duration::from_millis(100);

/// Added to the server's own times: its loop may run a little late on a busy machine.
const REAP_MARGIN: Duration = Duration::from_millis(500);

impl RoomBudget {
    /// The budget of `sources` addresses under `caps`.
    pub fn new(caps: &Caps, sources: usize) -> RoomBudget {
        RoomBudget {
            per_source: caps.max_rooms_per_ip,
            total: caps.max_rooms,
            open: vec![0; sources.max(1)],
            open_total: 0,
            lapsing: Vec::new(),
            lapse: caps.reap_grace + REAP_MARGIN,
            lapse_lost: caps.seat_timeout.max(caps.idle_timeout) + caps.reap_grace + REAP_MARGIN,
        }
    }

    /// Whether `source` may create one more room at `now`.
    pub fn allows(&mut self, source: usize, now: Instant) -> bool {
        self.lapsing.retain(|&(_, until)| until > now);
        let source = source % self.open.len();
        let mine = self.open[source] + self.lapsing.iter().filter(|l| l.0 == source).count();
        mine < self.per_source && self.open_total + self.lapsing.len() < self.total
    }

    /// `source` asked for a room.
    pub fn created(&mut self, source: usize) {
        let k = source % self.open.len();
        self.open[k] += 1;
        self.open_total += 1;
    }

    /// The lobby refused `source`'s room: it never existed.
    pub fn refused(&mut self, source: usize) {
        let k = source % self.open.len();
        let open = &mut self.open[k];
        *open = open.saturating_sub(1);
        self.open_total = self.open_total.saturating_sub(1);
    }

    /// `source`'s room was left (`lost`: or lost track of) at `now`.
    pub fn released(&mut self, source: usize, now: Instant, lost: bool) {
        self.refused(source);
        let lapse = if lost { self.lapse_lost } else { self.lapse };
        self.lapsing.push((source % self.open.len(), now + lapse));
    }
}

/// Where one `udp-create-join` client is in its room's life.
#[derive(Clone, Copy, Debug)]
enum Step {
    Create,
    Join(RoomRef),
    Hello(RoomRef),
    Leave(RoomRef),
}

/// `udp-create-join`.
pub struct CreateJoin {
    lobby: SocketAddr,
    dialect: Dialect,
    steps: Vec<Step>,
    /// The sequence id each client waits for, so a late answer never moves its script.
    expect: Vec<u16>,
    cycles: u64,
    /// Rooms alive per address under caps.
    rooms: Option<RoomBudget>,
    sources: usize,
    /// Under caps, when each client may ask for a room again after a refusal.
    paused_until: Vec<Option<Instant>>,
    creates_refused: u64,
}

impl CreateJoin {
    /// One script per client, each starting with CREATE_ROOM.
    pub fn new(options: &Options) -> CreateJoin {
        let sources = options.sources.len().max(1);
        CreateJoin {
            lobby: options.target,
            dialect: options.dialect,
            steps: vec![Step::Create; options.concurrency],
            expect: vec![0; options.concurrency],
            cycles: 0,
            rooms: options
                .caps
                .as_ref()
                .map(|caps| RoomBudget::new(caps, sources)),
            sources,
            paused_until: vec![None; options.concurrency],
            creates_refused: 0,
        }
    }

    fn instance(&self, port: u16) -> SocketAddr {
        SocketAddr::new(self.lobby.ip(), port)
    }

    /// Client `client`'s room is over (`lost`: the run lost track of it).
    fn room_ended(&mut self, client: usize, lost: bool) {
        let source = client % self.sources;
        if let Some(rooms) = self.rooms.as_mut() {
            rooms.released(source, Instant::now(), lost);
        }
    }
}

impl Exchange for CreateJoin {
    fn may_send(&mut self, client: usize, now: Instant) -> bool {
        let source = client % self.sources;
        match (self.steps[client], self.rooms.as_mut()) {
            (Step::Create, Some(rooms)) => {
                if self.paused_until[client].is_some_and(|until| now < until) {
                    return false;
                }
                rooms.allows(source, now)
            }
            _ => true,
        }
    }

    fn request(&mut self, client: usize, seq: u16, buf: &mut [u8]) -> Outgoing {
        self.expect[client] = seq;
        match self.steps[client] {
            Step::Create => {
                if let Some(rooms) = self.rooms.as_mut() {
                    rooms.created(client % self.sources);
                }
                lobby_request(buf, seq, self.dialect, Ask::CreateRoom, self.lobby)
            }
            Step::Join(room) => {
                lobby_request(buf, seq, self.dialect, Ask::JoinRoom(room.room), self.lobby)
            }
            Step::Hello(room) => {
                instance_message(buf, seq, ClientMsg::Hello { token: None }, room.instance)
            }
            Step::Leave(room) => {
                self.steps[client] = Step::Create;
                self.cycles += 1;
                self.room_ended(client, false);
                instance_message(buf, seq, ClientMsg::Leave, room.instance)
            }
        }
    }

    fn reply(&mut self, client: usize, datagram: &[u8], _stats: &mut Stats) -> Verdict {
        let step = self.steps[client];
        // The upstream lobby's RoomSetConfig follows ROOM_CREATED and JOIN_SUCCESS, and may
        // land when the client has moved on to its instance.
        if let Ok((_, Answer::Notice)) = self.dialect.parse(datagram) {
            return Verdict::Ignore;
        }
        let (seq, next, verdict) = match step {
            Step::Create | Step::Join(_) => match self.dialect.parse(datagram) {
                Err(label) => return Verdict::Bad(label),
                Ok((seq, answer)) => match (step, answer) {
                    (Step::Create, Answer::RoomCreated { room_id, port }) => {
                        let room = RoomRef {
                            room: room_id,
                            instance: self.instance(port),
                        };
                        (seq, Step::Join(room), Verdict::Answer(seq))
                    }
                    (Step::Join(room), Answer::JoinSuccess { room_id, .. })
                        if room_id == room.room =>
                    {
                        (seq, Step::Hello(room), Verdict::Answer(seq))
                    }
                    (Step::Create, Answer::JoinFailed) if self.rooms.is_some() => {
                        self.creates_refused += 1;
                        self.paused_until[client] = Some(Instant::now() + REFUSED_PAUSE);
                        (seq, Step::Create, Verdict::Declined(seq))
                    }
                    (Step::Create, Answer::JoinFailed) => {
                        (seq, Step::Create, Verdict::Failed(seq, "create_refused"))
                    }
                    (_, Answer::JoinFailed) => {
                        (seq, Step::Create, Verdict::Failed(seq, "join_refused"))
                    }
                    _ => (seq, Step::Create, Verdict::Failed(seq, "unexpected_reply")),
                },
            },
            Step::Hello(room) => match ServerRepr::parse(datagram) {
                Err(e) => return Verdict::Bad(e.as_str()),
                Ok(ServerRepr {
                    seq,
                    msg: ServerMsg::Welcome { .. },
                }) => (seq, Step::Leave(room), Verdict::Answer(seq)),
                Ok(ServerRepr {
                    seq,
                    msg: ServerMsg::Reject(_),
                }) => (seq, Step::Create, Verdict::Failed(seq, "hello_rejected")),
                // Notifications (PEER_JOINED, COUNTDOWN, ...) answer nothing.
                Ok(_) => return Verdict::Ignore,
            },
            Step::Leave(_) => return Verdict::Ignore,
        };
        // Only the answer to the request in flight moves the script; the engine counts a
        // late one.
        if seq == self.expect[client] {
            self.steps[client] = next;
            match (step, verdict) {
                (Step::Create, Verdict::Failed(..) | Verdict::Declined(_)) => {
                    if let Some(rooms) = self.rooms.as_mut() {
                        rooms.refused(client % self.sources);
                    }
                }
                (_, Verdict::Failed(..)) => self.room_ended(client, true),
                _ => {}
            }
        }
        verdict
    }

    fn timed_out(&mut self, client: usize) -> &'static str {
        let kind = match self.steps[client] {
            Step::Create => "create",
            Step::Join(_) => "join",
            Step::Hello(_) | Step::Leave(_) => "hello",
        };
        // Start over; a room left behind lapses by itself (seat timeout, then reaping).
        self.steps[client] = Step::Create;
        self.room_ended(client, true);
        kind
    }

    fn finish(&mut self, stats: &mut Stats) {
        stats.set("cycles", self.cycles);
        if self.rooms.is_some() {
            stats.set("creates_refused", self.creates_refused);
        }
    }
}

/// `echo`: the built-in echo server and its clients.
pub struct Echo {
    server: Option<EchoServer>,
    addr: SocketAddr,
    size: usize,
    reply_size: usize,
}

/// Marks the tool's echo datagrams (a frame-like header: type, code, seq).
const ECHO_CODE: u8 = 0xEE;

impl Echo {
    /// Starts the echo server (blocking with `--blocking`, else on mio) on the target's IP,
    /// port chosen by the OS.
    pub fn start(options: &Options) -> io::Result<Echo> {
        let bind = SocketAddr::new(options.target.ip(), 0);
        let server = if options.blocking {
            EchoServer::start_blocking(bind, options.reply_size)?
        } else {
            EchoServer::start(bind, options.reply_size)?
        };
        Ok(Echo {
            addr: server.addr(),
            server: Some(server),
            size: options.size,
            reply_size: options.reply_size,
        })
    }

    /// The echo server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Exchange for Echo {
    fn request(&mut self, _client: usize, seq: u16, buf: &mut [u8]) -> Outgoing {
        buf[..self.size].fill(0);
        buf[0] = 0x01;
        buf[1] = ECHO_CODE;
        buf[2..4].copy_from_slice(&seq.to_be_bytes());
        Outgoing {
            len: self.size,
            to: self.addr,
            awaits_reply: true,
        }
    }

    fn reply(&mut self, _client: usize, datagram: &[u8], _stats: &mut Stats) -> Verdict {
        match datagram {
            [0x01, ECHO_CODE, hi, lo, ..] if datagram.len() == self.reply_size => {
                Verdict::Answer(u16::from_be_bytes([*hi, *lo]))
            }
            _ => Verdict::Bad("bad_echo"),
        }
    }

    fn finish(&mut self, stats: &mut Stats) {
        if let Some(server) = self.server.take() {
            match server.stop() {
                Ok(answered) => stats.set("echo_answered", answered),
                Err(_) => stats.error("echo_server_failed"),
            }
        }
    }
}
