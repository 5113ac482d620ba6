//! Blocking steps that prepare a run before the clock starts: create rooms on the UDP lobby,
//! join them, say HELLO on their instances. Each step waits at most its timeout and fails
//! with a message naming the server flag to raise, so a misconfigured server never hangs a
//! run. Built on std sockets with read timeouts; the measured phase uses mio.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use lobbyd::wire::instance::{ClientMsg, ClientRepr, ServerMsg, ServerRepr};
use lobbyd::wire::udp_lobby::{Reply, ReplyRepr, Request, RequestRepr};

/// Room for any datagram the server sends.
const BUF_LEN: usize = 2048;

/// A room this run made, with its instance address.
#[derive(Clone, Copy, Debug)]
pub struct RoomRef {
    /// The room id.
    pub room: u32,
    /// Its game instance.
    pub instance: SocketAddr,
}

/// A UDP socket on `ip`, port chosen by the OS, with a read timeout.
pub fn bind(ip: IpAddr, timeout: Duration) -> io::Result<UdpSocket> {
    let socket = UdpSocket::bind(SocketAddr::new(ip, 0))?;
    socket.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
    Ok(socket)
}

/// Sends `request` and returns the first datagram from `to` for which `answer` returns
/// `Some`, within `timeout`; other datagrams are skipped.
fn exchange<T>(
    socket: &UdpSocket,
    to: SocketAddr,
    request: &[u8],
    timeout: Duration,
    mut answer: impl FnMut(&[u8]) -> Option<T>,
) -> io::Result<T> {
    socket.send_to(request, to)?;
    let deadline = Instant::now() + timeout;
    let mut buf = [0u8; BUF_LEN];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no reply from {to} within {timeout:?}"),
            ));
        }
        socket.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        match socket.recv_from(&mut buf) {
            Ok((len, from)) if from == to => {
                if let Some(value) = answer(&buf[..len]) {
                    return Ok(value);
                }
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
    }
}

fn lobby_request(request: Request, seq: u16) -> Vec<u8> {
    let repr = RequestRepr { seq, request };
    let mut buf = vec![0u8; BUF_LEN];
    let len = repr.emit(&mut buf);
    buf.truncate(len);
    buf
}

/// The lobby's answer to a request with `seq`, or an error naming what it said.
fn lobby_reply(
    socket: &UdpSocket,
    lobby: SocketAddr,
    request: Request,
    seq: u16,
    timeout: Duration,
) -> io::Result<Result<(u32, u16), ()>> {
    let bytes = lobby_request(request, seq);
    exchange(
        socket,
        lobby,
        &bytes,
        timeout,
        |datagram| match ReplyRepr::parse(datagram).ok()? {
            ReplyRepr { seq: s, .. } if s != seq => None,
            ReplyRepr {
                reply: Reply::RoomCreated { room_id, port } | Reply::JoinSuccess { room_id, port },
                ..
            } => Some(Ok((room_id, port))),
            ReplyRepr {
                reply: Reply::JoinFailed,
                ..
            } => Some(Err(())),
            _ => None,
        },
    )
}

/// How long a refused CREATE_ROOM is tried again: the rooms of a run that just ended hold
/// their ports for lobbyd's `--reap-grace` (2 s by default).
const CREATE_PATIENCE: Duration = Duration::from_secs(3);
/// Pause between two tries.
const CREATE_RETRY: Duration = Duration::from_millis(100);

/// CREATE_ROOM from `socket`: the new room, or an error if the lobby still refused it after
/// [`CREATE_PATIENCE`] of tries.
pub fn create_room(
    socket: &UdpSocket,
    lobby: SocketAddr,
    seq: u16,
    timeout: Duration,
) -> io::Result<RoomRef> {
    let give_up = Instant::now() + CREATE_PATIENCE;
    loop {
        match lobby_reply(socket, lobby, Request::CreateRoom, seq, timeout)? {
            Ok((room, port)) => {
                return Ok(RoomRef {
                    room,
                    instance: SocketAddr::new(lobby.ip(), port),
                })
            }
            Err(()) if Instant::now() < give_up => std::thread::sleep(CREATE_RETRY),
            Err(()) => break,
        }
    }
    Err(io::Error::other(format!(
        "the lobby at {lobby} refused CREATE_ROOM from {} (JOIN_FAILED): raise lobbyd's \
             --max-rooms / --max-rooms-per-ip, or spread clients with --sources",
        socket.local_addr()?.ip()
    )))
}

/// JOIN_ROOM from `socket`, then HELLO on the instance: the member's slot.
pub fn join_and_hello(
    socket: &UdpSocket,
    lobby: SocketAddr,
    room: RoomRef,
    seq: u16,
    timeout: Duration,
) -> io::Result<u8> {
    if lobby_reply(
        socket,
        lobby,
        Request::JoinRoom { room_id: room.room },
        seq,
        timeout,
    )?
    .is_err()
    {
        return Err(io::Error::other(format!(
            "the lobby refused JOIN_ROOM {} (full, or --max-players too low for --members)",
            room.room
        )));
    }
    hello(socket, room.instance, seq.wrapping_add(1), None, timeout)
}

/// HELLO on an instance (with a TCP lobby token, if any): the slot from WELCOME.
pub fn hello(
    socket: &UdpSocket,
    instance: SocketAddr,
    seq: u16,
    token: Option<u64>,
    timeout: Duration,
) -> io::Result<u8> {
    let mut buf = [0u8; 64];
    let len = ClientRepr {
        seq,
        msg: ClientMsg::Hello { token },
    }
    .emit(&mut buf);
    let verdict =
        exchange(
            socket,
            instance,
            &buf[..len],
            timeout,
            |datagram| match ServerRepr::parse(datagram).ok()? {
                ServerRepr {
                    seq: s,
                    msg: ServerMsg::Welcome { slot, .. },
                } if s == seq => Some(Ok(slot)),
                ServerRepr {
                    seq: s,
                    msg: ServerMsg::Reject(reason),
                } if s == seq => Some(Err(reason)),
                _ => None,
            },
        )?;
    verdict.map_err(|reason| {
        io::Error::other(format!("instance {instance} refused HELLO: {reason:?}"))
    })
}

/// Sends START from `socket` (the room's owner) to `instance`; nothing answers it.
pub fn start(socket: &UdpSocket, instance: SocketAddr, seq: u16) -> io::Result<()> {
    let mut buf = [0u8; 16];
    let len = ClientRepr {
        seq,
        msg: ClientMsg::Start,
    }
    .emit(&mut buf);
    socket.send_to(&buf[..len], instance).map(drop)
}

/// Sends LEAVE from `socket` (a member) to `instance`, so the room finishes and is reaped
/// when the run ends instead of lapsing by idleness; best effort, nothing answers it.
pub fn leave(socket: &UdpSocket, instance: SocketAddr, seq: u16) {
    let mut buf = [0u8; 16];
    let len = ClientRepr {
        seq,
        msg: ClientMsg::Leave,
    }
    .emit(&mut buf);
    let _ = socket.send_to(&buf[..len], instance);
}

/// Sends PING from `socket` to `instance` and discards whatever is queued on the socket, so a
/// member that only listens is not removed for idleness.
pub fn keepalive(socket: &UdpSocket, instance: SocketAddr, seq: u16) {
    let mut buf = [0u8; BUF_LEN];
    let len = ClientRepr {
        seq,
        msg: ClientMsg::Ping,
    }
    .emit(&mut buf);
    // Best effort: a lost PING is retried at the next keepalive.
    let _ = socket.send_to(&buf[..len], instance);
    let _ = socket.set_nonblocking(true);
    while socket.recv_from(&mut buf).is_ok() {}
    let _ = socket.set_nonblocking(false);
}
