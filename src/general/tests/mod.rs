//! Scenario tests of the general lobby core, driven like the driver drives it (frames in,
//! outputs drained after every call) with a virtual clock, a deterministic token source, and
//! exact expectations: each connection's received bytes must equal the frames the test lists.
//!
//! One file per area of docs/protocols/general-lobby.md: sign-in, games, chat and relay,
//! resume, hosted games, output memory.

mod address_limits;
mod chat_relay;
mod games;
mod hosted;
mod output;
mod resume;
mod sign_in;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::wire::general::{next_frame, ClientRepr, ErrorCode, Next, ServerRepr, TOKEN_LEN};

use super::{ConnId, Delivery, GeneralConfig, GeneralLobby, GeneralOutput, JobId, MemberId};

/// The token the deterministic source hands out `n`-th (from 1): sixteen bytes of `n`.
pub(crate) fn token(n: u8) -> [u8; TOKEN_LEN] {
    [n; TOKEN_LEN]
}

/// The defaults, with an idle timeout long enough that only the tests about idleness meet it.
pub(crate) fn config() -> GeneralConfig {
    GeneralConfig {
        idle_timeout: Duration::from_secs(3600),
        ..GeneralConfig::default()
    }
}

/// A fake driver around the core.
pub(crate) struct Harness {
    pub(crate) lobby: GeneralLobby,
    pub(crate) now: Instant,
    /// Bytes each connection received and the test has not looked at yet.
    inbox: BTreeMap<ConnId, Vec<u8>>,
    /// Connections the core asked to close.
    pub(crate) closed: BTreeSet<ConnId>,
    /// Verifications asked for, oldest first.
    pub(crate) verifies: Vec<(JobId, String, String)>,
    /// Send records marked [`Delivery::Direct`] and [`Delivery::FanOut`], in that order.
    pub(crate) deliveries: [u64; 2],
}

impl Harness {
    pub(crate) fn new(config: GeneralConfig) -> Harness {
        let now = Instant::now();
        let mut next = 0u8;
        let tokens = Box::new(move || {
            next = next.wrapping_add(1);
            token(next)
        });
        let mut sim = Harness {
            lobby: GeneralLobby::new(config, now, tokens),
            now,
            inbox: BTreeMap::new(),
            closed: BTreeSet::new(),
            verifies: Vec::new(),
            deliveries: [0; 2],
        };
        sim.drain();
        sim
    }

    /// Carries out every output, as the driver must after each call.
    pub(crate) fn drain(&mut self) {
        while let Some(output) = self.lobby.poll_output() {
            match output {
                GeneralOutput::Send {
                    conn,
                    frames,
                    delivery,
                } => {
                    self.deliveries[usize::from(delivery == Delivery::FanOut)] += 1;
                    assert!(
                        !self.closed.contains(&conn),
                        "send to {conn:?} after its close"
                    );
                    let bytes = self.lobby.frame(frames);
                    assert_eq!(bytes.len(), frames.len());
                    self.inbox.entry(conn).or_default().extend_from_slice(bytes);
                }
                GeneralOutput::Close { conn } => {
                    assert!(self.closed.insert(conn), "{conn:?} closed twice");
                }
                GeneralOutput::Verify {
                    job,
                    username,
                    password,
                    ..
                } => self.verifies.push((job, username.into(), password.into())),
            }
        }
    }

    pub(crate) fn open(&mut self, conn: usize) {
        self.lobby.handle_open(self.now, ConnId(conn));
        self.drain();
    }

    /// Sends raw bytes holding exactly one frame.
    pub(crate) fn send_bytes(&mut self, conn: usize, bytes: &[u8]) {
        match next_frame(bytes, self.lobby.config().max_frame) {
            Next::Frame { frame, consumed } => {
                assert_eq!(consumed, bytes.len(), "one frame at a time");
                self.lobby.handle_frame(self.now, ConnId(conn), &frame);
            }
            Next::Oversized { code, .. } => {
                self.lobby.handle_oversized(self.now, ConnId(conn), code);
            }
            Next::NeedMore => panic!("incomplete frame"),
        }
        self.drain();
    }

    pub(crate) fn send(&mut self, conn: usize, request: ClientRepr<'_>) {
        let mut bytes = vec![0; request.buffer_len()];
        request.emit(&mut bytes);
        self.send_bytes(conn, &bytes);
    }

    pub(crate) fn close(&mut self, conn: usize) {
        self.closed.remove(&ConnId(conn));
        self.lobby.handle_closed(self.now, ConnId(conn));
        self.drain();
    }

    pub(crate) fn advance(&mut self, by: Duration) {
        self.now += by;
        self.lobby.handle_timeout(self.now);
        self.drain();
    }

    /// Takes what `conn` received.
    pub(crate) fn take(&mut self, conn: usize) -> Vec<u8> {
        self.inbox.remove(&ConnId(conn)).unwrap_or_default()
    }

    /// Forgets everything received so far.
    pub(crate) fn clear(&mut self) {
        self.inbox.clear();
    }

    /// `conn` received exactly `expected`, in order (then its inbox is empty).
    #[track_caller]
    pub(crate) fn expect(&mut self, conn: usize, expected: &[ServerRepr<'_>]) {
        let got = self.take(conn);
        let want = frames(expected);
        if got != want {
            panic!(
                "conn {conn} received\n  {}\nexpected\n  {}",
                describe(&got),
                describe(&want)
            );
        }
    }

    /// `conn` received nothing.
    #[track_caller]
    pub(crate) fn expect_none(&mut self, conn: usize) {
        self.expect(conn, &[]);
    }

    /// `conn` received one ERROR with `code` answering `request`, whatever its text.
    #[track_caller]
    pub(crate) fn expect_error(&mut self, conn: usize, code: ErrorCode, request: u32) {
        let got = self.take(conn);
        let ok = match next_frame(&got, usize::MAX) {
            Next::Frame { frame, consumed } if consumed == got.len() => matches!(
                ServerRepr::parse(&frame),
                Ok(ServerRepr::Error { code: c, request: r, .. }) if c == code && r == request
            ),
            _ => false,
        };
        assert!(
            ok,
            "conn {conn}: expected ERROR {code:?} to {request:#x}, got {}",
            describe(&got)
        );
    }

    /// Opens `conn` and signs in as `name` (no password); returns the member id. Everyone's
    /// inbox is cleared afterwards.
    pub(crate) fn member(&mut self, conn: usize, name: &str) -> MemberId {
        self.open(conn);
        self.sign_in_opened(conn, name)
    }

    /// Signs in `conn`, already open, as `name` (no password); returns the member id.
    /// Everyone's inbox is cleared afterwards.
    pub(crate) fn sign_in_opened(&mut self, conn: usize, name: &str) -> MemberId {
        self.take(conn);
        self.send(
            conn,
            ClientRepr::SignIn {
                username: name,
                password: "",
                resume: None,
            },
        );
        let got = self.take(conn);
        self.clear();
        welcome_of(&got).expect("sign-in succeeds").0
    }
}

/// The member id and token of the WELCOME at the front of `bytes`.
pub(crate) fn welcome_of(bytes: &[u8]) -> Option<(MemberId, [u8; TOKEN_LEN])> {
    let Next::Frame { frame, .. } = next_frame(bytes, usize::MAX) else {
        return None;
    };
    match ServerRepr::parse(&frame) {
        Ok(ServerRepr::Welcome { member, token }) => Some((MemberId(member), *token)),
        _ => None,
    }
}

/// The bytes of `reprs`, one frame after the other.
pub(crate) fn frames(reprs: &[ServerRepr<'_>]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for repr in reprs {
        let start = bytes.len();
        bytes.resize(start + repr.buffer_len(), 0);
        repr.emit(&mut bytes[start..]);
    }
    bytes
}

/// The frames in `bytes`, decoded, one per line (for failure messages).
pub(crate) fn describe(mut bytes: &[u8]) -> String {
    let mut lines = Vec::new();
    while let Next::Frame { frame, consumed } = next_frame(bytes, usize::MAX) {
        lines.push(format!("{:?}", ServerRepr::parse(&frame)));
        bytes = &bytes[consumed..];
    }
    if !bytes.is_empty() {
        lines.push(format!("{} stray bytes", bytes.len()));
    }
    if lines.is_empty() {
        return "(nothing)".to_owned();
    }
    lines.join("\n  ")
}

/// Number of frames in `bytes`.
pub(crate) fn count_frames(mut bytes: &[u8]) -> usize {
    let mut count = 0;
    while let Next::Frame { consumed, .. } = next_frame(bytes, usize::MAX) {
        count += 1;
        bytes = &bytes[consumed..];
    }
    count
}

/// A MEMBER_INFO.
pub(crate) fn member_info<'a>(id: MemberId, flags: u32, name: &'a str) -> ServerRepr<'a> {
    ServerRepr::MemberInfo {
        id: id.0,
        flags,
        username: name,
        display_name: name,
    }
}
