//! The R-Type core's one test harness: the core with a virtual clock, seeded player hashes
//! and a fake driver that grants instance ports 4300.. on request (or refuses them when
//! `ports_left` is 0), with shorthands for the UDP room lobby, the instances and the TCP
//! lobby's connections.

use super::super::*;
use super::seeded_hashes;
use crate::rtype::{InstanceRequest, LobbyReply, LobbyRequest, RtypeConfig};
use crate::wire::tcp_lobby::name_field;
use std::net::Ipv4Addr;
use std::time::Duration;

pub(super) fn peer(n: u8) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::new(127, 0, 0, n), 40000))
}

pub(super) fn name(text: &str) -> [u8; NAME_LEN] {
    name_field(text)
}

pub(super) struct Harness {
    pub(super) lobby: RtypeCore,
    pub(super) now: Instant,
    /// Instance ports the fake driver still grants (0: it refuses the next).
    pub(super) ports_left: usize,
    next_port: u16,
    /// The instances open now, with their ports.
    pub(super) open_ports: Vec<(RoomId, u16)>,
    /// The game servers started (`--instance-exec`): room, players, seed.
    pub(super) started: Vec<(RoomId, u8, u32)>,
    /// Whether a relay socket asked for fails the test (every instance must be a game
    /// server under `--instance-exec`).
    pub(super) no_relays: bool,
}

impl Harness {
    pub(super) fn new(config: RtypeConfig) -> Harness {
        let now = Instant::now();
        Harness {
            lobby: RtypeCore::new(config, now, seeded_hashes()),
            now,
            ports_left: usize::MAX,
            next_port: 4300,
            open_ports: Vec::new(),
            started: Vec::new(),
            no_relays: false,
        }
    }

    pub(super) fn drain(&mut self) -> Vec<Output> {
        let mut out = Vec::new();
        while let Some(o) = self.lobby.poll_output() {
            match o {
                Output::OpenInstance { room } if self.no_relays => {
                    panic!("{room}: a relay socket asked for")
                }
                Output::OpenInstance { room } | Output::StartInstance { room, .. } => {
                    if let Output::StartInstance { players, seed, .. } = o {
                        self.started.push((room, players, seed));
                    }
                    let port = (self.ports_left > 0).then(|| {
                        self.ports_left -= 1;
                        self.next_port += 1;
                        self.next_port - 1
                    });
                    if let Some(port) = port {
                        self.open_ports.push((room, port));
                    }
                    self.lobby.handle_instance_opened(self.now, room, port);
                }
                Output::CloseInstance { room } => {
                    self.open_ports.retain(|(r, _)| *r != room);
                    out.push(o);
                }
                other => out.push(other),
            }
        }
        out
    }

    pub(super) fn open(&mut self, conn: usize) -> Vec<Output> {
        self.lobby
            .handle_tcp_open(self.now, ConnId(conn), peer(conn as u8));
        self.drain()
    }

    pub(super) fn req(&mut self, conn: usize, request: TcpRequest) -> Vec<Output> {
        self.lobby
            .handle_tcp_request(self.now, ConnId(conn), request);
        self.drain()
    }

    /// Opens `conn` and connects it as `who`; returns its (hash, slot).
    pub(super) fn join(&mut self, conn: usize, who: &str) -> (u64, Slot) {
        self.open(conn);
        let out = self.req(conn, TcpRequest::Connect { name: name(who) });
        match to(&out, conn).first() {
            Some(TcpMessage::ConnectAck { hash, slot }) => (*hash, *slot),
            other => panic!("no CONNECT_ACK for {who}: {other:?} in {out:?}"),
        }
    }

    /// The game server of `room` exited.
    pub(super) fn exited(&mut self, room: RoomId) -> Vec<Output> {
        self.lobby.handle_instance_exited(self.now, room);
        self.drain()
    }

    pub(super) fn advance(&mut self, by: Duration) -> Vec<Output> {
        self.now += by;
        self.lobby.handle_timeout(self.now);
        self.drain()
    }

    pub(super) fn all_ready(&mut self, conns: &[usize]) {
        for &conn in conns {
            self.req(conn, TcpRequest::Ready(true));
        }
    }

    pub(super) fn lobby(&mut self, from: SocketAddr, seq: u16, req: LobbyRequest) -> Vec<Output> {
        self.lobby.handle_lobby_request(self.now, from, seq, req);
        self.drain()
    }

    pub(super) fn instance(
        &mut self,
        room: RoomId,
        from: SocketAddr,
        req: InstanceRequest,
    ) -> Vec<Output> {
        self.lobby
            .handle_instance_request(self.now, room, from, 7, req);
        self.drain()
    }

    pub(super) fn create(&mut self, from: SocketAddr) -> (RoomId, u16) {
        match self.lobby(from, 1, LobbyRequest::CreateRoom).as_slice() {
            [Output::Lobby {
                reply: LobbyReply::RoomCreated { room, port },
                ..
            }] => (*room, *port),
            other => panic!("unexpected {other:?}"),
        }
    }

    pub(super) fn hello(&mut self, room: RoomId, from: SocketAddr) -> Vec<Output> {
        self.instance(room, from, InstanceRequest::Hello { token: None })
    }
}

pub(super) fn to(outputs: &[Output], conn: usize) -> Vec<TcpMessage> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Tcp { conn: c, msg } if c.0 == conn => Some(*msg),
            _ => None,
        })
        .collect()
}
