//! The general lobby's test client and server (docs/protocols/general-lobby.md): a raw
//! `std::net` socket that sends frames built with the crate's own emitters
//! (`wire::general::ClientRepr`), cuts what comes back with `next_frame` and compares it, byte
//! for byte, with what the test expects: a `ServerRepr` emitted by the crate, or a golden frame
//! written by hand with [`golden`]. Every wait is bounded.
//!
//! It must not decide what the server should answer: the tests do, one frame at a time.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use lobbyd::config::Config;
use lobbyd::net::ServerHandle;
use lobbyd::wire::general::{
    next_frame, ClientRepr, ErrorCode, Frame, GameInfo, Next, ServerRepr, Words, TOKEN_LEN,
};

use lobbyd::wire::websocket::frame::{emit_client_frame, next_server_frame, OpCode};
use lobbyd::wire::websocket::handshake::emit_client_request;

use crate::common::{start, test_config, REPLY_WAIT};

/// RFC 6455 section 1.3's sample `Sec-WebSocket-Key` (its accept value is
/// `s3pPLMBiTxaQ9kYGzzhZRbK+xOo=`).
pub const SAMPLE_KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// How long a reply that needs a password check (argon2 on a busy machine) may take.
pub const VERIFY_WAIT: Duration = Duration::from_secs(20);

/// Member flag bit 16: away (the resume grace is running).
pub const AWAY: u32 = 1 << 16;

/// Starts a server with only the general lobby, on an OS-chosen loopback port, with short
/// timeouts (the ask timeout at the flag's 1 s minimum, a 1 s resume grace); `tune` adjusts
/// the configuration before the server starts.
pub fn start_lobby(tune: impl FnOnce(&mut Config)) -> (ServerHandle, SocketAddr) {
    let mut config = Config {
        udp_port: None,
        ..test_config()
    };
    let general = &mut config.general;
    general.port = Some(0);
    // Every test client comes from 127.0.0.1.
    general.conn_rate = 100_000;
    general.core.ask_timeout = Duration::from_secs(1);
    general.core.resume_grace = Duration::from_secs(1);
    tune(&mut config);
    let server = start(config);
    let addr = server.general_addr().expect("general lobby enabled");
    (server, addr)
}

/// Bytes from a hand-written golden frame: hex digit pairs, with whitespace ignored, and text
/// between single quotes taken as its UTF-8 bytes
/// (`"05000000 1e000000 02 0400 01000000 02 0400 20000000 03 0d00 'sign in first'"`).
pub fn golden(text: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut nibbles = Vec::new();
    let mut quoted = text.split('\'');
    while let Some(hex) = quoted.next() {
        for c in hex.chars().filter(|c| !c.is_whitespace()) {
            let digit = c.to_digit(16).unwrap_or_else(|| panic!("not hex: {c:?}"));
            nibbles.push(digit as u8);
        }
        assert!(
            nibbles.len() % 2 == 0,
            "odd hex digits before a quote in {text:?}"
        );
        bytes.extend(nibbles.chunks(2).map(|pair| pair[0] << 4 | pair[1]));
        nibbles.clear();
        if let Some(ascii) = quoted.next() {
            bytes.extend_from_slice(ascii.as_bytes());
        }
    }
    bytes
}

/// The bytes of one message, emitted by the crate.
pub fn server_bytes(repr: &ServerRepr<'_>) -> Vec<u8> {
    let mut bytes = vec![0; repr.buffer_len()];
    let len = repr.emit(&mut bytes);
    bytes.truncate(len);
    bytes
}

/// The bytes of one request, emitted by the crate.
pub fn client_bytes(repr: &ClientRepr<'_>) -> Vec<u8> {
    let mut bytes = vec![0; repr.buffer_len()];
    let len = repr.emit(&mut bytes);
    bytes.truncate(len);
    bytes
}

/// One whole frame the server sent.
pub struct Reply(pub Vec<u8>);

impl Reply {
    /// The frame, decoded by the crate's parser (a frame it cannot parse fails the test).
    pub fn repr(&self) -> ServerRepr<'_> {
        let frame = Frame::new_checked(&self.0[..]).expect("a whole frame");
        ServerRepr::parse(&frame)
            .unwrap_or_else(|e| panic!("server frame does not parse ({e}): {:02x?}", self.0))
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let frame = Frame::new_checked(&self.0[..]).map_err(|_| std::fmt::Error)?;
        match ServerRepr::parse(&frame) {
            Ok(repr) => write!(f, "{repr:?}"),
            Err(e) => write!(f, "unparsable ({e}) {:02x?}", self.0),
        }
    }
}

/// What one read brought.
enum Fill {
    Data,
    Closed,
    Timeout,
}

/// A general lobby connection; after [`Client::sign_in`] it knows its member id and token.
pub struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
    /// The member id from WELCOME (0 before).
    pub id: i32,
    /// The username signed in with.
    pub name: String,
    /// The resume token from the last WELCOME.
    pub token: [u8; TOKEN_LEN],
    pings: u32,
    /// Over the WebSocket port: each frame goes as one masked binary message, and each
    /// binary message read is one frame (`websocket.rs`).
    websocket: bool,
    /// The WebSocket control frames and text messages read meanwhile, as (opcode, payload).
    pub ws_other: Vec<(OpCode, Vec<u8>)>,
}

impl Client {
    /// Connects without reading anything.
    pub fn connect(addr: SocketAddr) -> Client {
        Client::over(TcpStream::connect(addr).expect("connect"))
    }

    /// Connects from the loopback address `source` (127.0.0.x) and checks the greeting.
    pub fn greeted_from(addr: SocketAddr, source: &str) -> Client {
        let mut client = Client::over(crate::common::connect_from(addr, source));
        client.expect_greeting();
        client
    }

    fn over(stream: TcpStream) -> Client {
        stream.set_nodelay(true).expect("nodelay");
        Client {
            stream,
            buf: Vec::new(),
            id: 0,
            name: String::new(),
            token: [0; TOKEN_LEN],
            pings: 0,
            websocket: false,
            ws_other: Vec::new(),
        }
    }

    /// Connects to the WebSocket port and upgrades on `path` with the RFC's sample key
    /// (checking the 101 and its `Sec-WebSocket-Accept` byte for byte), without reading on.
    pub fn ws_connect(addr: SocketAddr, path: &str) -> Client {
        let mut client = Client::connect(addr);
        let mut request = Vec::new();
        emit_client_request(&addr.to_string(), path, SAMPLE_KEY, None, &mut request);
        client.send_raw(&request);
        let head = client.read_head();
        assert_eq!(
            head,
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
        );
        client.websocket = true;
        client
    }

    /// Over the WebSocket port, upgraded and greeted (the same golden HELLO and CHALLENGE
    /// as on TCP, each its own binary message).
    pub fn ws_greeted(addr: SocketAddr) -> Client {
        let mut client = Client::ws_connect(addr, "/lobby");
        client.expect_greeting();
        client
    }

    /// [`Client::enter`] over the WebSocket port.
    pub fn ws_enter(addr: SocketAddr, name: &str, present: &mut [&mut Client]) -> Client {
        let mut client = Client::ws_greeted(addr);
        client.sign_in(name, "", None);
        client.read_sync();
        let info = member_info(client.id, 0, name, name);
        expect_all(present, &info);
        client
    }

    /// Reads an HTTP response head (to its blank line) and returns it; what follows stays.
    pub fn read_head(&mut self) -> String {
        let deadline = Instant::now() + REPLY_WAIT;
        loop {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head: Vec<u8> = self.buf.drain(..end + 4).collect();
                return String::from_utf8(head).expect("ASCII head");
            }
            match self.fill(deadline) {
                Fill::Data => {}
                Fill::Timeout | Fill::Closed => panic!("no response head: {:?}", self.buf),
            }
        }
    }

    /// Everything until the server closes (within [`REPLY_WAIT`]), raw.
    pub fn read_to_close(&mut self) -> Vec<u8> {
        let deadline = Instant::now() + REPLY_WAIT;
        loop {
            match self.fill(deadline) {
                Fill::Data => {}
                Fill::Closed => return std::mem::take(&mut self.buf),
                Fill::Timeout => panic!("not closed; have {:?}", self.buf),
            }
        }
    }

    /// Writes `bytes` as they are, WebSocket or not.
    pub fn send_wire(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// The next WebSocket frame the server sends, raw: (opcode, payload), or `None` when it
    /// closes the connection first.
    pub fn recv_ws_frame(&mut self) -> Option<(OpCode, Vec<u8>)> {
        let deadline = Instant::now() + REPLY_WAIT;
        loop {
            if let Some((header, range, end)) = next_server_frame(&self.buf).expect("server frame")
            {
                let payload = self.buf[range].to_vec();
                self.buf.drain(..end);
                assert!(header.fin && header.rsv == 0, "{header:?}");
                return Some((header.opcode, payload));
            }
            match self.fill(deadline) {
                Fill::Data => {}
                Fill::Closed => return None,
                Fill::Timeout => panic!("no WebSocket frame; have {:02x?}", self.buf),
            }
        }
    }

    /// Shuts the sending side (the peer then reads EOF), keeping the receiving side open.
    pub fn finish_sending(&mut self) {
        self.stream
            .shutdown(std::net::Shutdown::Write)
            .expect("shutdown write");
    }

    /// Connects and checks the greeting: HELLO("lobbyd", 1) then CHALLENGE("sign in", 0), on
    /// golden bytes.
    pub fn greeted(addr: SocketAddr) -> Client {
        let mut client = Client::connect(addr);
        client.expect_greeting();
        client
    }

    fn expect_greeting(&mut self) {
        self.expect_bytes(&golden(
            "01000000 10000000  03 0600 'lobbyd'  02 0400 01000000",
        ));
        self.expect_bytes(&golden(
            "02000000 11000000  03 0700 'sign in'  02 0400 00000000",
        ));
    }

    /// Connects, signs in as `name` (no password, no token) and reads the whole sync; each of
    /// `present` gets the newcomer's MEMBER_INFO.
    pub fn enter(addr: SocketAddr, name: &str, present: &mut [&mut Client]) -> Client {
        let mut client = Client::greeted(addr);
        client.sign_in(name, "", None);
        client.read_sync();
        let info = member_info(client.id, 0, name, name);
        expect_all(present, &info);
        client
    }

    /// Sends one request, emitted by the crate.
    pub fn send(&mut self, request: ClientRepr<'_>) {
        self.send_raw(&client_bytes(&request));
    }

    /// Sends raw bytes in one write (over WebSocket: as one masked binary message).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        if self.websocket {
            let mut message = Vec::new();
            emit_client_frame(
                &mut message,
                true,
                OpCode::Binary,
                [0x5a, 0x17, 0xc3, 0x01],
                bytes,
            );
            self.stream.write_all(&message).expect("send");
            return;
        }
        self.stream.write_all(bytes).expect("send");
    }

    /// SIGN_IN, then the WELCOME (whose member id and token are kept); the rest of the sync
    /// is the caller's to read.
    pub fn sign_in(&mut self, name: &str, password: &str, resume: Option<&[u8; TOKEN_LEN]>) {
        self.send(ClientRepr::SignIn {
            username: name,
            password,
            resume,
        });
        let reply = self.recv_within(VERIFY_WAIT).expect("a WELCOME");
        match reply.repr() {
            ServerRepr::Welcome { member, token } => {
                self.id = member;
                self.token = *token;
            }
            _ => panic!("expected a WELCOME, got {reply:?}"),
        }
        self.name = name.to_owned();
    }

    /// Reads frames up to and including SYNC_DONE; returns those before it.
    pub fn read_sync(&mut self) -> Vec<Reply> {
        let mut sync = Vec::new();
        loop {
            let reply = self.recv();
            if matches!(reply.repr(), ServerRepr::SyncDone) {
                return sync;
            }
            sync.push(reply);
        }
    }

    /// Reads once more from the socket before `deadline`.
    fn fill(&mut self, deadline: Instant) -> Fill {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Fill::Timeout;
        }
        self.stream.set_read_timeout(Some(left)).expect("timeout");
        let mut chunk = [0u8; 64 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) => Fill::Closed,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Fill::Data
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Fill::Data,
            Err(e) if e.kind() == ErrorKind::Interrupted => Fill::Data,
            Err(_) => Fill::Closed,
        }
    }

    /// The next whole frame already read, if any.
    fn take_frame(&mut self) -> Option<Reply> {
        while self.websocket {
            let (header, range, end) = next_server_frame(&self.buf).expect("server frame")?;
            let payload = self.buf[range].to_vec();
            self.buf.drain(..end);
            assert!(header.fin, "the server sends no fragments");
            if header.opcode != OpCode::Binary {
                self.ws_other.push((header.opcode, payload));
                continue;
            }
            match next_frame(&payload, usize::MAX) {
                Next::Frame { consumed, .. } if consumed == payload.len() => {
                    return Some(Reply(payload));
                }
                _ => panic!("a binary message that is not one frame: {payload:02x?}"),
            }
        }
        match next_frame(&self.buf, usize::MAX) {
            Next::Frame { consumed, .. } => Some(Reply(self.buf.drain(..consumed).collect())),
            _ => None,
        }
    }

    /// The next frame within `wait`, or `None` on silence; panics if the server closes.
    pub fn recv_within(&mut self, wait: Duration) -> Option<Reply> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(reply) = self.take_frame() {
                return Some(reply);
            }
            match self.fill(deadline) {
                Fill::Data => {}
                Fill::Timeout => return None,
                Fill::Closed => panic!(
                    "{}: closed while waiting for a frame; have {:02x?}",
                    self.name, self.buf
                ),
            }
        }
    }

    /// The next frame; panics if none comes within [`REPLY_WAIT`].
    #[track_caller]
    pub fn recv(&mut self) -> Reply {
        let name = self.name.clone();
        self.recv_within(REPLY_WAIT)
            .unwrap_or_else(|| panic!("{name}: no frame within {REPLY_WAIT:?}"))
    }

    /// The next frame is exactly `bytes`.
    #[track_caller]
    pub fn expect_bytes(&mut self, bytes: &[u8]) {
        let got = self.recv();
        if got.0 != bytes {
            panic!(
                "{}: received\n  {got:?}\n  {:02x?}\nexpected\n  {:?}\n  {bytes:02x?}",
                self.name,
                got.0,
                Reply(bytes.to_vec())
            );
        }
    }

    /// The next frame is exactly `want`.
    #[track_caller]
    pub fn expect(&mut self, want: &ServerRepr<'_>) {
        self.expect_bytes(&server_bytes(want));
    }

    /// The next frame is this member's own MEMBER_INFO as signed in (the sync's first).
    #[track_caller]
    pub fn expect_own_info(&mut self) {
        let name = self.name.clone();
        self.expect(&member_info(self.id, 0, &name, &name));
    }

    /// The next frame is ERROR(code, request, text).
    #[track_caller]
    pub fn expect_error(&mut self, code: ErrorCode, request: u32, text: &str) {
        self.expect(&ServerRepr::Error {
            code,
            request,
            text,
        });
    }

    /// Nothing is waiting for this client: a PING's PONG is the very next frame. Call it once
    /// the server has handled what might have reached the client (another recipient got it),
    /// so "nothing came" is proved by order rather than by a long wait.
    #[track_caller]
    pub fn expect_quiet(&mut self) {
        self.pings += 1;
        let payload = self.pings.to_le_bytes();
        self.send(ClientRepr::Ping { payload: &payload });
        self.expect(&ServerRepr::Pong { payload: &payload });
    }

    /// Waits (at most [`REPLY_WAIT`]) for the server to close the connection; returns the
    /// frames that came first.
    #[track_caller]
    pub fn expect_closed(&mut self) -> Vec<Reply> {
        let deadline = Instant::now() + REPLY_WAIT;
        let mut frames = Vec::new();
        loop {
            while let Some(reply) = self.take_frame() {
                frames.push(reply);
            }
            match self.fill(deadline) {
                Fill::Data => {}
                Fill::Timeout => panic!("{}: still open; got {frames:?}", self.name),
                Fill::Closed => {
                    assert!(self.buf.is_empty(), "stray bytes {:02x?}", self.buf);
                    return frames;
                }
            }
        }
    }

    /// The server sends exactly `bytes`, then closes the connection.
    #[track_caller]
    pub fn expect_last_bytes(&mut self, bytes: &[u8]) {
        let last = self.expect_closed();
        let got: Vec<&[u8]> = last.iter().map(|reply| &reply.0[..]).collect();
        assert!(
            got == [bytes],
            "{}: before the close, received\n  {last:?}\nexpected\n  {:?}",
            self.name,
            Reply(bytes.to_vec())
        );
    }

    /// The server sends exactly `want`, then closes the connection.
    #[track_caller]
    pub fn expect_last(&mut self, want: &ServerRepr<'_>) {
        self.expect_last_bytes(&server_bytes(want));
    }

    /// SIGN_IN as `username`, refused with CHALLENGE(`text`, failed) (waiting for a password
    /// check if there is one).
    #[track_caller]
    pub fn expect_sign_in_refused(
        &mut self,
        username: &str,
        password: &str,
        resume: Option<&[u8; TOKEN_LEN]>,
        text: &str,
    ) {
        self.send(ClientRepr::SignIn {
            username,
            password,
            resume,
        });
        let reply = self.recv_within(VERIFY_WAIT).expect("a CHALLENGE");
        let want = server_bytes(&ServerRepr::Challenge { text, failed: true });
        assert!(
            reply.0 == want,
            "{}: {reply:?}, not refused {text:?}",
            self.name
        );
    }

    /// Reads and drops everything until the server closes the connection (at most `wait`).
    pub fn drain_until_closed(&mut self, wait: Duration) {
        let deadline = Instant::now() + wait;
        loop {
            self.buf.clear();
            match self.fill(deadline) {
                Fill::Data => {}
                Fill::Closed => return,
                Fill::Timeout => panic!("{}: still open after {wait:?}", self.name),
            }
        }
    }

    /// Closes the connection the way a crashed client would: both directions at once.
    pub fn drop_connection(self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// A second handle on the same socket (for a reader thread), with the same identity;
    /// nothing may be buffered yet.
    pub fn try_clone(&self) -> Client {
        assert!(self.buf.is_empty(), "frames already buffered");
        Client {
            stream: self.stream.try_clone().expect("clone socket"),
            buf: Vec::new(),
            id: self.id,
            name: self.name.clone(),
            token: self.token,
            pings: 0,
            websocket: self.websocket,
            ws_other: Vec::new(),
        }
    }
}

/// Each client's next frame is exactly `want`.
#[track_caller]
pub fn expect_all(clients: &mut [&mut Client], want: &ServerRepr<'_>) {
    for client in clients.iter_mut() {
        client.expect(want);
    }
}

/// ERROR(0, 0, `text`): a notice that answers no request, before the server closes.
pub fn notice(text: &str) -> ServerRepr<'_> {
    ServerRepr::Error {
        code: ErrorCode::Notice,
        request: 0,
        text,
    }
}

/// A MEMBER_INFO.
pub fn member_info<'a>(id: i32, flags: u32, username: &'a str, display: &'a str) -> ServerRepr<'a> {
    ServerRepr::MemberInfo {
        id,
        flags,
        username,
        display_name: display,
    }
}

/// The MEMBER_INFO of `client` as signed in: no flags, its username as display name.
pub fn info_of(client: &Client) -> ServerRepr<'_> {
    member_info(client.id, 0, &client.name, &client.name)
}

/// A game as the test expects it: what CREATE_GAME asks for and GAME_INFO shows.
#[derive(Clone, Debug)]
pub struct Game {
    /// The id the server gives it.
    pub id: i32,
    /// The owner's member id.
    pub owner: i32,
    /// Seats.
    pub max_players: u32,
    /// Its name.
    pub name: &'static str,
    /// Its type.
    pub game_type: &'static str,
    /// Its version text.
    pub version: &'static str,
    /// Game flags.
    pub flags: u32,
    /// Its password.
    pub password: &'static str,
    /// Players in join order.
    pub players: Vec<i32>,
    /// Their player flags.
    pub ready: Vec<u32>,
}

impl Game {
    /// A game `owner` is about to create as the `id`-th game: version "1.0", no flags, no
    /// password, the owner seated and ready.
    pub fn new(id: i32, owner: &Client, max_players: u32, name: &'static str) -> Game {
        Game {
            id,
            owner: owner.id,
            max_players,
            name,
            game_type: "chess",
            version: "1.0",
            flags: 0,
            password: "",
            players: vec![owner.id],
            ready: vec![1],
        }
    }

    /// The server's `id`-th game, tic-tac-toe, as it opens it: empty, flag 8.
    pub fn tictactoe(id: i32, name: &'static str) -> Game {
        Game {
            id,
            owner: 0,
            max_players: 2,
            name,
            game_type: "tictactoe",
            version: "1",
            flags: 8,
            password: "",
            players: Vec::new(),
            ready: Vec::new(),
        }
    }

    /// The CREATE_GAME that makes it.
    pub fn create(&self) -> ClientRepr<'_> {
        ClientRepr::CreateGame {
            max_players: self.max_players,
            game_type: self.game_type,
            version: self.version,
            flags: self.flags,
            name: self.name,
            password: self.password,
        }
    }

    /// Its GAME_INFO.
    pub fn info(&self) -> ServerRepr<'_> {
        ServerRepr::GameInfo(GameInfo {
            id: self.id,
            owner: self.owner,
            max_players: self.max_players,
            name: self.name,
            game_type: self.game_type,
            version: self.version,
            flags: self.flags,
            players: Words::new(&self.players),
            player_flags: Words::new(&self.ready),
        })
    }

    /// Seats `member`, ready.
    pub fn seat(&mut self, member: i32) {
        self.players.push(member);
        self.ready.push(1);
    }

    /// Takes `member`'s seat.
    pub fn unseat(&mut self, member: i32) {
        let at = self.players.iter().position(|&p| p == member);
        let at = at.unwrap_or_else(|| panic!("{member} is not a player"));
        self.players.remove(at);
        self.ready.remove(at);
    }
}

/// `everyone[joiner]` joins `game` on a lobby that approves by itself (`--lobby-auto-approve`),
/// with `request` as its request code: JOIN_RESPONSE(1) to it, then the GAME_INFO to all.
pub fn join_auto(everyone: &mut [&mut Client], joiner: usize, game: &mut Game, request: i32) {
    everyone[joiner].send(join_request(game.id, request, ""));
    everyone[joiner].expect(&join_response(game.id, request, true, ""));
    game.seat(everyone[joiner].id);
    expect_all(everyone, &game.info());
}

/// A JOIN_REQUEST.
pub fn join_request(game: i32, request: i32, password: &str) -> ClientRepr<'_> {
    ClientRepr::JoinRequest {
        game,
        request,
        password,
    }
}

/// A JOIN_ANSWER.
pub fn answer(ask: i32, accept: bool, reason: &str) -> ClientRepr<'_> {
    ClientRepr::JoinAnswer {
        ask,
        accept,
        reason,
    }
}

/// A JOIN_RESPONSE.
pub fn join_response(game: i32, request: i32, accepted: bool, reason: &str) -> ServerRepr<'_> {
    ServerRepr::JoinResponse {
        game,
        request,
        accepted,
        reason,
    }
}

/// A GAME_MESSAGE.
pub fn game_message(game: i32, from: i32, app_code: u32, body: &[u8]) -> ServerRepr<'_> {
    ServerRepr::GameMessage {
        game,
        from,
        app_code,
        body,
    }
}
