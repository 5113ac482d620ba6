//! The Warzone 2100 master server core ([`crate::wz`]) driven by a fake driver with a virtual
//! clock (the shape of [`super::core_rtype`]). `tests/it/simulation_wz.rs` runs it seeded; the
//! fuzz target `core_wz` steers it with its input ([`super::script`]).
//!
//! Hosts and browsers of both protocols connect from a handful of addresses: legacy
//! connections send `gaId`, `addg` with a GAMESTRUCT of either version (names with banned
//! words, versions below the minimum, ids reused or made up), `list`, `keep`, `motd`, unknown
//! commands and garbage; v4 connections send the handshake (now and then a wrong version) and
//! `login`, `addGame`, `list`, `addPlayer`, `delPlayer`, `delGame` or unknown requests as JSON
//! or BSON, or garbage. Bytes arrive split at any point; probes and password checks are
//! answered late, wrongly or never; connections drop; the clock jumps. After every step:
//! - every game has its host: the owning connection is open, from the game's address, and
//!   the game's stored GAMESTRUCT parses with the game's id; ids are unique, never 0 or
//!   `0xBAD01`, and within `1..=0x7FFF_FFFF`;
//! - at most `max_games` games, at most `max_games_per_ip` per address; probes in flight at
//!   most one per game, reserved ids at most one per connection;
//! - the core tracks exactly the connections the driver has open, and the oldest unsettled
//!   one is one of them;
//! - what the core leaves unconsumed is less than one GAMESTRUCT (legacy) or one frame (v4),
//!   except behind a request that waits for a password check;
//! - outputs go to open connections; every v4 response is a whole frame holding a document
//!   with an integer `status`; one step queues a bounded number of outputs.
//!
//! At the end every probe and check is answered: each open v4 connection has had exactly one
//! response per request. Then everyone leaves and the clock runs out: no game, reserved id,
//! probe or connection is left.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use crate::accounts::{LoginPolicy, UserId, VerifyResult};
use crate::wire::wz::v4::{self, Encoding, Node, Value, HANDSHAKE_LEN, MAX_FRAME};
use crate::wire::wz::{c_string, GameStructRepr, GAMESTRUCT_LEN};
use crate::wz::games::Owner;
use crate::wz::{ConnId, JobId, ProbeId, ProbeResult, WzConfig, WzLobby, WzOutput, WzStats};

use super::script::{Choices, Script, ScriptRng};

/// The addresses clients connect from (one IPv6, which the core must treat alike).
const PEERS: [IpAddr; 4] = [
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, 3)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 4)),
];

/// Largest game id the core may hand out (ids stay positive as an i32).
const MAX_GAME_ID: u32 = 0x7FFF_FFFF;

/// Game names: plain, empty, with a banned word, with bytes a name must not keep.
const NAMES: [&str; 5] = ["Fast NTW", "", "a badword game", "tab\there", "ünïcode"];

/// Netcode versions: 2.3.7, 3.x, 4.x, and two below any minimum.
const VERSIONS: [(u32, u32); 5] = [(2, 98), (0x1000, 0), (0x4000, 0x4f), (0, 0), (1, 1)];

/// What the fake driver knows about one connection.
#[derive(Debug, Default)]
struct Conn {
    ip: Option<IpAddr>,
    /// Speaks v4 (sent the version 4 handshake).
    v4: bool,
    /// Bytes read and not yet consumed by the core.
    buf: Vec<u8>,
    /// Bytes the core sent, not yet read as whole v4 frames.
    received: Vec<u8>,
    /// A password check holds the connection: the driver does not read it.
    waiting: bool,
    /// Well-formed v4 requests sent, and responses read.
    requests: u64,
    responses: u64,
    /// Bytes that are no well-formed v4 request were sent: requests and responses no longer
    /// pair up.
    desynced: bool,
}

/// The fake driver.
pub struct WzSim {
    lobby: WzLobby,
    now: Instant,
    conns: BTreeMap<usize, Conn>,
    next_conn: usize,
    probes: Vec<ProbeId>,
    jobs: Vec<JobId>,
    /// Session ids read from `login` responses.
    sessions: Vec<String>,
    /// Print every step and output (`LOBBYD_FUZZ_TRACE=1`, for reading a crash).
    trace: bool,
}

/// The configuration of the seeded simulation: small limits, probes on, optional logins.
pub fn seeded_config() -> WzConfig {
    WzConfig {
        motd: "hello".to_owned(),
        banned_words: vec!["badword".to_owned()],
        min_version: Some((2, 98)),
        max_games: 6,
        max_games_per_ip: 2,
        max_conns_per_ip: 3,
        list_limit: 4,
        registration_burst: 6,
        ..WzConfig::default()
    }
}

/// The seeded configuration with the knobs a script's first bytes turn: probing, logins,
/// the minimum version.
fn scripted_config(choices: &mut impl Choices) -> WzConfig {
    WzConfig {
        check_reachable: !choices.one_in(3),
        login: choices
            .pick(&[
                LoginPolicy::Optional,
                LoginPolicy::Required,
                LoginPolicy::Off,
            ])
            .unwrap_or(LoginPolicy::Optional),
        min_version: if choices.one_in(2) {
            None
        } else {
            Some((2, 98))
        },
        ..seeded_config()
    }
}

impl WzSim {
    /// An empty master server with `config`. Session ids come from a small space (4,096
    /// values) seeded by `session_seed`, so an id already live is drawn now and then and the
    /// core must draw again.
    pub fn new(config: WzConfig, session_seed: u64) -> WzSim {
        let now = Instant::now();
        let mut id_rng = ScriptRng(session_seed);
        let session_ids = Box::new(move || {
            let mut id = [0u8; 16];
            id[..2].copy_from_slice(&(id_rng.below(4096) as u16).to_le_bytes());
            id
        });
        WzSim {
            lobby: WzLobby::new(config, now, session_ids),
            now,
            conns: BTreeMap::new(),
            next_conn: 0,
            probes: Vec::new(),
            jobs: Vec::new(),
            sessions: Vec::new(),
            trace: super::trace_enabled(),
        }
    }

    /// The core's counters.
    pub fn stats(&self) -> &WzStats {
        &self.lobby.stats
    }

    /// The most outputs one call may queue: a reply and a close per connection, a probe or
    /// check per connection, and a removal per game.
    fn output_bound(&self) -> usize {
        8 + 4 * self.conns.len() + 2 * self.lobby.games().count()
    }

    /// Carries out every output, as the driver must after each call.
    fn drain(&mut self) {
        let bound = self.output_bound();
        let mut count = 0;
        let mut resumed = Vec::new();
        while let Some(output) = self.lobby.poll_output() {
            if self.trace {
                eprintln!("  {output:?}");
            }
            count += 1;
            assert!(count <= bound, "more than {bound} outputs from one call");
            match output {
                WzOutput::Send { conn, bytes } => self.receive(conn, &bytes),
                WzOutput::Close { conn } => {
                    assert!(
                        self.conns.remove(&conn.0).is_some(),
                        "closing closed {conn:?}"
                    );
                    self.lobby.handle_closed(self.now, conn);
                }
                WzOutput::Verify { conn, job, .. } => {
                    let waiting = self.conns.get_mut(&conn.0).map(|c| &mut c.waiting);
                    *waiting.expect("a check for a closed connection") = true;
                    self.jobs.push(job);
                }
                WzOutput::Resume { conn } => resumed.push(conn.0),
                WzOutput::Probe { probe, .. } => self.probes.push(probe),
            }
        }
        for conn in resumed {
            if let Some(state) = self.conns.get_mut(&conn) {
                state.waiting = false;
                self.pump(conn);
            }
        }
    }

    /// Bytes the core sent on `conn`; a v4 connection reads them as response frames.
    fn receive(&mut self, conn: ConnId, bytes: &[u8]) {
        let state = self
            .conns
            .get_mut(&conn.0)
            .expect("bytes for a connection the driver has open");
        if !state.v4 {
            return;
        }
        state.received.extend_from_slice(bytes);
        while let v4::Next::Frame { body, consumed } = v4::next_frame(&state.received, u32::MAX) {
            let (_, doc) = v4::parse_document(body);
            let doc = doc.expect("the core's responses parse");
            assert!(
                matches!(doc.get("status"), Some(Node::Int(_))),
                "a response without a status: {doc:?}"
            );
            if let Some(Node::Str(session)) = doc.get("result").and_then(|r| r.get("sessionid")) {
                self.sessions.push(session.to_string());
            }
            state.responses += 1;
            state.received.drain(..consumed);
        }
    }

    /// Hands `conn`'s buffered bytes to the core as the driver does: again while it consumes.
    fn pump(&mut self, conn: usize) {
        loop {
            let Some(state) = self.conns.get_mut(&conn) else {
                return;
            };
            if state.waiting || state.buf.is_empty() {
                break;
            }
            let buf = std::mem::take(&mut state.buf);
            let used = self.lobby.handle_bytes(self.now, ConnId(conn), &buf);
            assert!(used <= buf.len(), "consumed more than was there");
            if let Some(state) = self.conns.get_mut(&conn) {
                state.buf = buf;
                state.buf.drain(..used);
            }
            self.drain();
            if used == 0 {
                break;
            }
        }
        let Some(state) = self.conns.get(&conn) else {
            return;
        };
        if !state.waiting {
            let most = if state.v4 {
                MAX_FRAME as usize + 4
            } else {
                GAMESTRUCT_LEN
            };
            assert!(
                state.buf.len() < most,
                "the core left {} bytes",
                state.buf.len()
            );
        }
    }

    /// Bytes arriving on `conn`, in one or two reads.
    fn send(&mut self, conn: usize, bytes: &[u8], choices: &mut impl Choices) {
        // The driver does not read a connection held by a password check.
        if self.conns.get(&conn).map_or(true, |c| c.waiting) {
            return;
        }
        let cut = choices.below(bytes.len() as u64 + 1) as usize;
        for part in [&bytes[..cut], &bytes[cut..]] {
            if let Some(state) = self.conns.get_mut(&conn) {
                state.buf.extend_from_slice(part);
                self.pump(conn);
            }
        }
    }

    /// Checks every invariant of the module doc that holds between steps.
    pub fn check(&self) {
        let config = self.lobby.config();
        let mut ids = BTreeSet::new();
        let mut per_ip: BTreeMap<IpAddr, usize> = BTreeMap::new();
        for game in self.lobby.games() {
            let (Owner::Legacy(owner) | Owner::V4(owner)) = game.owner;
            let host = self.conns.get(&owner.0);
            assert!(host.is_some(), "game {} without its host", game.game_id);
            assert_eq!(
                host.and_then(|c| c.ip).map(|ip| ip.to_canonical()),
                Some(game.peer)
            );
            assert!(ids.insert(game.game_id), "game id {} twice", game.game_id);
            assert!((1..=MAX_GAME_ID).contains(&game.game_id) && game.game_id != 0xBAD01);
            let stored = GameStructRepr::parse(&game.gamestruct).expect("a stored GAMESTRUCT");
            assert_eq!(stored.game_id, game.game_id);
            *per_ip.entry(game.peer).or_default() += 1;
        }
        assert!(ids.len() <= config.max_games);
        assert!(per_ip.values().all(|n| *n <= config.max_games_per_ip));
        assert!(self.lobby.probes_in_flight() <= ids.len());
        assert!(self.lobby.reserved_ids() <= self.conns.len());
        assert_eq!(self.lobby.connections(), self.conns.len());
        if let Some(conn) = self.lobby.oldest_unsettled() {
            assert!(self.conns.contains_key(&conn.0));
        }
    }

    fn conn(&self, choices: &mut impl Choices) -> usize {
        let open: Vec<usize> = self.conns.keys().copied().collect();
        choices.pick(&open).unwrap_or(0)
    }

    /// One random step with its outputs carried out, then the invariants checked.
    pub fn step(&mut self, choices: &mut impl Choices) {
        let kind = choices.below(32);
        if self.trace {
            eprintln!("step {kind} at {:?}", self.now);
        }
        match kind {
            0..=3 => self.open(choices),
            4 => {
                let conn = self.conn(choices);
                if self.conns.remove(&conn).is_some() {
                    self.lobby.handle_closed(self.now, ConnId(conn));
                    self.drain();
                }
            }
            5..=15 => {
                let conn = self.conn(choices);
                let v4 = self.conns.get(&conn).is_some_and(|c| c.v4);
                let bytes = if v4 {
                    self.v4_request(choices)
                } else {
                    legacy_message(choices, &self.game_ids())
                };
                // Counted before sending: the response may come within the call.
                if let Some(state) = self.conns.get_mut(&conn).filter(|c| !c.waiting && v4) {
                    state.requests += 1;
                }
                self.send(conn, &bytes, choices);
            }
            16 => {
                let conn = self.conn(choices);
                let bytes = choices.bytes(24);
                if let Some(state) = self.conns.get_mut(&conn) {
                    state.desynced |= !bytes.is_empty() && !state.waiting;
                }
                self.send(conn, &bytes, choices);
            }
            17..=20 => self.probe_result(choices),
            21 | 22 => self.verdict(choices),
            23 => {
                // A verdict or probe result nobody asked for.
                let job = JobId(choices.below(8));
                self.lobby
                    .handle_verify_result(self.now, job, VerifyResult::Invalid);
                let probe = ProbeId(choices.below(8));
                self.lobby
                    .handle_probe_result(self.now, probe, ProbeResult::Refused);
                self.drain();
            }
            24 => self.wait(Duration::from_secs(1 + choices.below(100))),
            _ => self.wait(Duration::from_millis(choices.below(1000))),
        }
        self.check();
    }

    fn wait(&mut self, by: Duration) {
        self.now += by;
        self.lobby.handle_timeout(self.now);
        self.drain();
    }

    fn open(&mut self, choices: &mut impl Choices) {
        self.next_conn += 1;
        let conn = self.next_conn;
        let ip = choices.pick(&PEERS).unwrap_or(PEERS[0]);
        let peer = SocketAddr::new(ip, 40_000 + choices.below(4) as u16);
        let v4 = choices.below(3) == 0;
        self.conns.insert(
            conn,
            Conn {
                ip: Some(ip),
                v4,
                ..Conn::default()
            },
        );
        self.lobby.handle_open(self.now, ConnId(conn), peer);
        self.drain();
        if v4 {
            let version = if choices.one_in(16) { 3 } else { 4 };
            let mut handshake = b"version\0".to_vec();
            handshake.extend_from_slice(&u32::to_be_bytes(version));
            debug_assert_eq!(handshake.len(), HANDSHAKE_LEN);
            self.send(conn, &handshake, choices);
        }
    }

    fn game_ids(&self) -> Vec<u32> {
        self.lobby.games().map(|g| g.game_id).collect()
    }

    fn probe_result(&mut self, choices: &mut impl Choices) {
        let Some(probe) = self.probes.pop() else {
            return;
        };
        let game_id = choices
            .pick(&self.game_ids())
            .unwrap_or(0)
            .wrapping_add(choices.below(2) as u32);
        let result = match choices.below(4) {
            0 => ProbeResult::Refused,
            1 => ProbeResult::TimedOut,
            2 => ProbeResult::Connected,
            _ => ProbeResult::Wzlr { game_id },
        };
        self.now += Duration::from_millis(choices.below(2500));
        self.lobby.handle_probe_result(self.now, probe, result);
        self.drain();
    }

    fn verdict(&mut self, choices: &mut impl Choices) {
        let Some(job) = self.jobs.pop() else {
            return;
        };
        let result = match choices.below(3) {
            0 => VerifyResult::Valid(UserId(1 + choices.below(3) as i64)),
            1 => VerifyResult::Invalid,
            _ => VerifyResult::Busy,
        };
        self.lobby.handle_verify_result(self.now, job, result);
        self.drain();
    }

    /// A well-formed v4 request frame, JSON or BSON, whose fields may still be wrong.
    fn v4_request(&self, choices: &mut impl Choices) -> Vec<u8> {
        let text = |s: &str| Value::String(s.to_owned());
        let int = |i: i64| Value::Int(i);
        let game = i64::from(choices.pick(&self.game_ids()).unwrap_or(7));
        let sessions: Vec<&str> = self.sessions.iter().map(String::as_str).collect();
        let session = choices.pick(&sessions).unwrap_or("nosuchsession");
        let (method, params) = match choices.below(7) {
            0 => (
                "login",
                vec![
                    (
                        "username",
                        text(choices.pick(&["u", "", "bad name"]).unwrap_or("u")),
                    ),
                    ("password", text("p")),
                ],
            ),
            1 | 2 => {
                let (major, minor) = choices.pick(&VERSIONS).unwrap_or((2, 98));
                vec_params(
                    "addGame",
                    [
                        ("description", text(choices.pick(&NAMES).unwrap_or(""))),
                        ("maxPlayers", int(choices.below(12) as i64)),
                        ("currentPlayers", int(choices.below(12) as i64 - 1)),
                        (
                            "port",
                            int(choices.pick(&[0, 2100, 2200, 70_000]).unwrap_or(0)),
                        ),
                        ("multiVer", text("4.3.3")),
                        ("wzVerMajor", int(i64::from(major))),
                        ("wzVerMinor", int(i64::from(minor))),
                        ("isPrivate", Value::Bool(choices.one_in(2))),
                    ],
                )
            }
            3 => ("list", Vec::new()),
            4 => vec_params(
                "addPlayer",
                [
                    ("gameId", int(game)),
                    ("slot", int(choices.below(9) as i64)),
                    ("name", text("p")),
                    ("sessionid", text(session)),
                ],
            ),
            5 => match choices.below(2) {
                0 => vec_params(
                    "delPlayer",
                    [
                        ("gameId", int(game)),
                        ("slot", int(choices.below(9) as i64)),
                    ],
                ),
                _ => vec_params("delGame", [("gameId", int(game))]),
            },
            _ => ("nosuchmethod", Vec::new()),
        };
        let params: Vec<(Cow<'static, str>, Value)> = params
            .into_iter()
            .filter(|_| !choices.one_in(12))
            .map(|(k, v)| (Cow::Borrowed(k), v))
            .collect();
        let mut fields = vec![
            (Cow::Borrowed("method"), text(method)),
            (Cow::Borrowed("params"), Value::Object(params)),
        ];
        if !choices.one_in(8) {
            fields.push((Cow::Borrowed("id"), int(choices.below(100) as i64)));
        }
        let encoding = if choices.one_in(2) {
            Encoding::Json
        } else {
            Encoding::Bson
        };
        let mut out = Vec::new();
        Value::Object(fields).encode(encoding, &mut out);
        out
    }

    /// Answers every probe and password check (none is left hanging): afterwards every open
    /// v4 connection has had one response per request.
    fn settle(&mut self) {
        while !self.probes.is_empty() || !self.jobs.is_empty() {
            if let Some(probe) = self.probes.pop() {
                self.lobby
                    .handle_probe_result(self.now, probe, ProbeResult::Connected);
            }
            if let Some(job) = self.jobs.pop() {
                self.lobby
                    .handle_verify_result(self.now, job, VerifyResult::Valid(UserId(1)));
            }
            self.drain();
        }
        for (conn, state) in &self.conns {
            if state.v4 && !state.desynced {
                assert_eq!(
                    state.requests, state.responses,
                    "conn {conn}: requests and responses differ"
                );
            }
        }
    }

    /// Every request answered; then everyone leaves and the clock runs out: nothing is left.
    pub fn wind_down(&mut self) {
        self.settle();
        self.check();
        let open: Vec<usize> = self.conns.keys().copied().collect();
        for conn in open {
            self.conns.remove(&conn);
            self.lobby.handle_closed(self.now, ConnId(conn));
            self.drain();
        }
        self.settle();
        self.wait(Duration::from_secs(600));
        self.check();
        assert_eq!(self.lobby.games().count(), 0, "games left behind");
        assert_eq!(self.lobby.reserved_ids(), 0, "reserved ids left behind");
        assert_eq!(self.lobby.probes_in_flight(), 0, "probes left behind");
        assert_eq!(self.lobby.connections(), 0);
    }
}

fn vec_params<const N: usize>(
    method: &'static str,
    params: [(&'static str, Value); N],
) -> (&'static str, Vec<(&'static str, Value)>) {
    (method, params.into())
}

/// A legacy command, with a GAMESTRUCT for `addg`, or four bytes of no command.
fn legacy_message(choices: &mut impl Choices, game_ids: &[u32]) -> Vec<u8> {
    let mut bytes = match choices.below(16) {
        0..=3 => b"gaId".to_vec(),
        4..=9 => {
            let mut bytes = b"addg\0".to_vec();
            bytes.extend_from_slice(&gamestruct(choices, game_ids));
            return bytes;
        }
        10 | 11 => b"keep".to_vec(),
        12 | 13 => b"list".to_vec(),
        14 => b"motd".to_vec(),
        _ => b"bogu".to_vec(),
    };
    // Real clients end a command with NUL; third-party ones send the bare four letters.
    if !choices.one_in(4) {
        bytes.push(choices.pick(b"\0\n\r").unwrap_or(0));
    }
    bytes
}

/// A GAMESTRUCT as some host generation fills it, with the fields the core judges drawn.
fn gamestruct(choices: &mut impl Choices, game_ids: &[u32]) -> [u8; GAMESTRUCT_LEN] {
    let mut repr = GameStructRepr::zeroed(3 + choices.below(2) as u32);
    repr.name = c_string(choices.pick(&NAMES).unwrap_or("").as_bytes());
    repr.dw_size = 72;
    repr.max_players = choices.below(12) as i32;
    repr.current_players = choices.below(12) as i32;
    repr.host_port = choices.pick(&[0, 2100, 2200]).unwrap_or(0);
    repr.map_name = c_string(b"Rush");
    repr.host_name = c_string(b"player");
    repr.version_string = c_string(b"4.3.3");
    let (major, minor) = choices.pick(&VERSIONS).unwrap_or((2, 98));
    repr.game_version_major = major;
    repr.game_version_minor = minor;
    // Ids are handed out in order: a few past the highest listed one are likely reserved.
    let top = game_ids.iter().max().map_or(0, |id| u64::from(*id));
    repr.game_id = match choices.below(3) {
        0 => choices.below(top + 4) as u32,
        _ => choices.pick(game_ids).unwrap_or(0),
    };
    if choices.one_in(4) {
        // Garbage after a terminator: the lobby must not relay it.
        repr.mod_list[200] = b'x';
    }
    repr.to_bytes()
}

/// The seeded simulation of `tests/it/simulation_wz.rs`: `steps` steps, then the wind-down.
/// Returns the counters so the test can check the run reached the interesting places.
pub fn simulate(seed: u64, steps: usize) -> WzStats {
    let mut sim = WzSim::new(seeded_config(), !seed);
    let mut rng = ScriptRng(seed);
    for _ in 0..steps {
        sim.step(&mut rng);
    }
    sim.wind_down();
    sim.stats().clone()
}

/// Fuzz target `core_wz`: the Warzone master server, scripted by `input`.
pub fn fuzz(input: &[u8]) {
    let mut script = Script::new(input);
    // A fixed session seed: the input's bytes keep steering the same choices as before.
    let mut sim = WzSim::new(scripted_config(&mut script), 0);
    while !script.is_done() {
        sim.step(&mut script);
    }
    sim.wind_down();
}
