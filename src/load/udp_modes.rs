//! The [`Exchange`]s of the UDP request/reply modes: what each client sends and how each
//! reply is judged, with the crate's own wire modules.
//!
//! - [`ListRooms`] (`udp-list`): LIST_ROOMS; a ROOM_LIST with fewer rooms than the run
//!   created is a `short_list` error. The rooms are made before the clock starts and kept
//!   alive (HELLO, then PING every second) so the list stays full however long the run.
//! - [`CreateJoin`] (`udp-create-join`): per client, CREATE_ROOM -> ROOM_CREATED, JOIN_ROOM of
//!   that room -> JOIN_SUCCESS, HELLO on its instance -> WELCOME, LEAVE; the room then
//!   finishes and is reaped. Each answered step is one request; `cycles` counts whole lives.
//! - [`Echo`] (`echo`): datagrams of `--size` bytes to the built-in echo server, answered
//!   with `--reply-size` bytes.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use crate::wire::instance::{ClientMsg, ClientRepr, ServerMsg, ServerRepr};
use crate::wire::udp_lobby::{Reply, ReplyRepr, Request, RequestRepr};

use super::echo_server::EchoServer;
use super::setup::{self, RoomRef};
use super::stats::Stats;
use super::udp_rr::{Exchange, Outgoing, Verdict};
use super::Options;

/// Interval of the keepalive PINGs of `udp-list`'s room members: short enough for a server
/// run with a short `--idle-timeout` (the bench and soak scripts use 3 s).
const KEEPALIVE_EVERY: Duration = Duration::from_secs(1);

fn lobby_request(buf: &mut [u8], seq: u16, request: Request, to: SocketAddr) -> Outgoing {
    Outgoing {
        len: RequestRepr { seq, request }.emit(buf),
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
    expected: usize,
    members: Vec<(UdpSocket, SocketAddr)>,
    next_keepalive: Instant,
    keepalive_seq: u16,
}

impl ListRooms {
    /// Creates `options.rooms` rooms (creators spread over the sources) and joins each.
    pub fn setup(options: &Options) -> io::Result<ListRooms> {
        let lobby = options.target;
        let wait = options.timeout.max(Duration::from_secs(1));
        let mut members = Vec::with_capacity(options.rooms);
        for r in 0..options.rooms {
            let socket = setup::bind(options.source(r), wait)?;
            let room = setup::create_room(&socket, lobby, r as u16, wait)?;
            setup::hello(&socket, room.instance, 0, None, wait)?;
            members.push((socket, room.instance));
        }
        Ok(ListRooms {
            lobby,
            expected: options.rooms,
            members,
            next_keepalive: Instant::now() + KEEPALIVE_EVERY,
            keepalive_seq: 1,
        })
    }
}

impl Exchange for ListRooms {
    fn request(&mut self, _client: usize, seq: u16, buf: &mut [u8]) -> Outgoing {
        lobby_request(buf, seq, Request::ListRooms, self.lobby)
    }

    fn reply(&mut self, _client: usize, datagram: &[u8], _stats: &mut Stats) -> Verdict {
        match ReplyRepr::parse(datagram) {
            Ok(ReplyRepr {
                seq,
                reply: Reply::RoomList(list),
            }) if list.len() < self.expected => Verdict::Failed(seq, "short_list"),
            Ok(ReplyRepr {
                seq,
                reply: Reply::RoomList(_),
            }) => Verdict::Answer(seq),
            Ok(ReplyRepr { seq, .. }) => Verdict::Failed(seq, "unexpected_reply"),
            Err(e) => Verdict::Bad(e.as_str()),
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
    steps: Vec<Step>,
    /// The sequence id each client waits for, so a late answer never moves its script.
    expect: Vec<u16>,
    cycles: u64,
}

impl CreateJoin {
    /// One script per client, each starting with CREATE_ROOM.
    pub fn new(options: &Options) -> CreateJoin {
        CreateJoin {
            lobby: options.target,
            steps: vec![Step::Create; options.concurrency],
            expect: vec![0; options.concurrency],
            cycles: 0,
        }
    }

    fn instance(&self, port: u16) -> SocketAddr {
        SocketAddr::new(self.lobby.ip(), port)
    }
}

impl Exchange for CreateJoin {
    fn request(&mut self, client: usize, seq: u16, buf: &mut [u8]) -> Outgoing {
        self.expect[client] = seq;
        match self.steps[client] {
            Step::Create => lobby_request(buf, seq, Request::CreateRoom, self.lobby),
            Step::Join(room) => lobby_request(
                buf,
                seq,
                Request::JoinRoom { room_id: room.room },
                self.lobby,
            ),
            Step::Hello(room) => {
                instance_message(buf, seq, ClientMsg::Hello { token: None }, room.instance)
            }
            Step::Leave(room) => {
                self.steps[client] = Step::Create;
                self.cycles += 1;
                instance_message(buf, seq, ClientMsg::Leave, room.instance)
            }
        }
    }

    fn reply(&mut self, client: usize, datagram: &[u8], _stats: &mut Stats) -> Verdict {
        let step = self.steps[client];
        let (seq, next, verdict) = match step {
            Step::Create | Step::Join(_) => match ReplyRepr::parse(datagram) {
                Err(e) => return Verdict::Bad(e.as_str()),
                Ok(ReplyRepr { seq, reply }) => match (step, reply) {
                    (Step::Create, Reply::RoomCreated { room_id, port }) => {
                        let room = RoomRef {
                            room: room_id,
                            instance: self.instance(port),
                        };
                        (seq, Step::Join(room), Verdict::Answer(seq))
                    }
                    (Step::Join(room), Reply::JoinSuccess { room_id, .. })
                        if room_id == room.room =>
                    {
                        (seq, Step::Hello(room), Verdict::Answer(seq))
                    }
                    (Step::Create, Reply::JoinFailed) => {
                        (seq, Step::Create, Verdict::Failed(seq, "create_refused"))
                    }
                    (_, Reply::JoinFailed) => {
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
        kind
    }

    fn finish(&mut self, stats: &mut Stats) {
        stats.set("cycles", self.cycles);
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
    /// Starts the echo server on the target's IP, port chosen by the OS.
    pub fn start(options: &Options) -> io::Result<Echo> {
        let server =
            EchoServer::start(SocketAddr::new(options.target.ip(), 0), options.reply_size)?;
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
