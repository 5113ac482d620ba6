//! The general lobby core ([`crate::general`]) driven by a fake driver with a virtual clock
//! (the shape of [`super::core_rtype`]). `tests/it/simulation_general.rs` runs it seeded; the fuzz
//! target `core_general` steers it with its input ([`super::script`]).
//!
//! Steps from a few dozen clients: connecting, signing in (new, resumed, refused, checked
//! against accounts), chatting in every scope, creating, joining, answering, leaving, kicking,
//! handing over and starting games, storing data, relaying, listing, joining the hosted
//! tic-tac-toe games and playing moves, sending garbage, dropping and resuming, the clock
//! jumping. After every step:
//! - every frame the core sends parses, and goes to a connection the driver has open;
//! - every whole frame from an open connection is counted (as a request of its code, as
//!   malformed, or as refused for its rate);
//! - every game has an owner who is one of its players, or is hosted (owner 0, flag 8);
//! - no game has more players than seats, no player twice, every player an existing member
//!   (no seat without a member), and each member's game count matches its seats;
//! - no member is in more games (plus asks) than allowed;
//! - member ids handed to new members only grow, and a WELCOME to a member that is not new
//!   answers a SIGN_IN that carried the token last issued to that member (a resume token is
//!   a bearer credential: with the simulation's tiny token space a client may hold a stale
//!   token that was issued again to someone else, and resuming with it is right), or a
//!   SIGN_IN whose password the worker found right (the account's owner takes its member
//!   over);
//! - the outputs of one call are bounded by the members present;
//! - a run marked `Delivery::FanOut` goes to two connections or more, record after record.
//!
//! At the end, once every connection is closed and the graces and asks have run out, the core
//! holds nothing but its open hosted games.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::accounts::{LoginPolicy, UserId, VerifyResult};
use crate::general::{
    ConnId, Delivery, FrameRef, GameId, GeneralConfig, GeneralLobby, GeneralOutput, GeneralStats,
    HostedKind, HostedSpec, JobId, MemberId,
};
use crate::wire::general::{next_frame, ClientRepr, Next, ServerRepr, GAME_HOSTED, TOKEN_LEN};

use super::script::{Choices, Script, ScriptRng};

/// What one client knows about itself.
#[derive(Default)]
struct Client {
    conn: Option<usize>,
    member: Option<MemberId>,
    token: Option<[u8; TOKEN_LEN]>,
    /// The resume token the client's last SIGN_IN carried, if any.
    sent_resume: Option<[u8; TOKEN_LEN]>,
    /// The password of the client's last SIGN_IN was checked and found right: the core may
    /// hand it the member that holds the account (a takeover, like a resume).
    password_valid: bool,
    /// Ask ids this client was sent as an owner.
    asks: Vec<i32>,
}

/// The fake driver and what its clients know.
pub struct GeneralSim {
    lobby: GeneralLobby,
    now: Instant,
    config: GeneralConfig,
    clients: Vec<Client>,
    /// Driver connections open, and which client each belongs to.
    open: BTreeMap<usize, usize>,
    next_conn: usize,
    /// Password checks waiting for a verdict, with the client that asked.
    jobs: Vec<(JobId, usize)>,
    /// The highest member id a WELCOME has given a new member.
    last_new_member: i32,
    /// The token each member was last issued in a WELCOME.
    issued: BTreeMap<i32, [u8; TOKEN_LEN]>,
    /// Game ids seen in GAME_INFO, so requests name real games most of the time.
    games_seen: BTreeSet<i32>,
    frames_seen: u64,
    /// Print every step and frame (`LOBBYD_FUZZ_TRACE=1`, for reading a crash).
    trace: bool,
}

/// What a seeded run reached, for the test's "the simulation did something" checks.
#[derive(Debug, Clone)]
pub struct Reached {
    /// Frames the clients read.
    pub frames_seen: u64,
    /// The highest member id handed to a new member.
    pub last_new_member: i32,
    /// The core's counters.
    pub stats: GeneralStats,
}

/// The configuration of the seeded simulations: small limits, two hosted tic-tac-toe
/// tables.
pub fn seeded_config(login: LoginPolicy, resume_grace: Duration) -> GeneralConfig {
    GeneralConfig {
        login,
        resume_grace,
        max_games_per_member: 2,
        max_games: 12,
        max_seats: 4,
        max_members: 20,
        game_data: 30_000,
        output_budget: 40,
        chat_burst: 3,
        hosted: vec![HostedSpec {
            kind: HostedKind::TicTacToe,
            count: 2,
        }],
        ..GeneralConfig::default()
    }
}

/// One of the seeded simulations' three configurations, as a script's first byte picks it.
fn scripted_config(choices: &mut impl Choices) -> GeneralConfig {
    match choices.below(3) {
        0 => seeded_config(LoginPolicy::Optional, Duration::from_secs(30)),
        1 => seeded_config(LoginPolicy::Required, Duration::ZERO),
        _ => GeneralConfig {
            auto_approve: true,
            ..seeded_config(LoginPolicy::Off, Duration::from_secs(5))
        },
    }
}

impl GeneralSim {
    /// A lobby with `config` and `clients` clients; resume tokens come from a tiny space
    /// seeded by `token_seed`, so collisions with live tokens happen and must be avoided.
    pub fn new(config: GeneralConfig, clients: usize, token_seed: u64) -> GeneralSim {
        let now = Instant::now();
        let mut token_rng = ScriptRng(token_seed);
        let tokens = Box::new(move || {
            let mut token = [0u8; TOKEN_LEN];
            token[0] = token_rng.below(200) as u8;
            token
        });
        let mut sim = GeneralSim {
            lobby: GeneralLobby::new(config.clone(), now, tokens),
            now,
            config,
            clients: (0..clients).map(|_| Client::default()).collect(),
            open: BTreeMap::new(),
            next_conn: 0,
            jobs: Vec::new(),
            last_new_member: 0,
            issued: BTreeMap::new(),
            games_seen: BTreeSet::new(),
            frames_seen: 0,
            trace: super::trace_enabled(),
        };
        sim.drain();
        sim
    }

    /// What the run reached so far.
    pub fn reached(&self) -> Reached {
        Reached {
            frames_seen: self.frames_seen,
            last_new_member: self.last_new_member,
            stats: self.lobby.stats(),
        }
    }

    fn client_of(&self, conn: ConnId) -> usize {
        *self
            .open
            .get(&conn.0)
            .expect("output to a connection the driver has open")
    }

    /// The most outputs one event may queue: a departure touches each of the member's games
    /// (a GAME_INFO or GAME_CLOSED to everyone, a hosted game topped up) and says MEMBER_LEFT.
    fn event_bound(&self) -> usize {
        (self.config.max_games_per_member + 4) * (self.lobby.connection_count() + 1)
            + self.lobby.ask_count()
            + 16
    }

    /// Carries out every output of one event, as the driver must after each call.
    fn drain(&mut self) {
        self.drain_within(self.event_bound());
    }

    /// Time passes: deadlines run until none is due, the driver draining between calls, each
    /// call within the output budget.
    fn run_timers(&mut self) {
        loop {
            let bound = self.config.output_budget + self.event_bound();
            self.lobby.handle_timeout(self.now);
            self.drain_within(bound);
            if self.lobby.poll_timeout().map_or(true, |at| at > self.now) {
                return;
            }
        }
    }

    fn drain_within(&mut self, bound: usize) {
        assert!(
            self.lobby.output_count() <= bound,
            "{} outputs queued by one call (bound {bound})",
            self.lobby.output_count()
        );
        // The fan-out run being carried out and its records so far.
        let mut run = None;
        while let Some(output) = self.lobby.poll_output() {
            let fan_out = match &output {
                GeneralOutput::Send {
                    frames,
                    delivery: Delivery::FanOut,
                    ..
                } => Some(*frames),
                _ => None,
            };
            run = match (run, fan_out) {
                (Some((frames, records)), Some(next)) if frames == next => {
                    Some((frames, records + 1))
                }
                (ended, next) => {
                    check_fan_out_run(ended);
                    next.map(|frames| (frames, 1))
                }
            };
            match output {
                GeneralOutput::Send { conn, frames, .. } => {
                    let client = self.client_of(conn);
                    let bytes = self.lobby.frame(frames).to_vec();
                    self.read(client, &bytes);
                }
                GeneralOutput::Close { conn } => {
                    let client = self.client_of(conn);
                    self.open.remove(&conn.0);
                    self.clients[client].conn = None;
                    self.lobby.handle_closed(self.now, conn);
                }
                GeneralOutput::Verify { job, conn, .. } => {
                    let client = self.client_of(conn);
                    self.jobs.push((job, client));
                }
            }
        }
        check_fan_out_run(run);
    }

    /// Reads what a client received: every frame must parse.
    fn read(&mut self, client: usize, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let Next::Frame { frame, consumed } = next_frame(bytes, usize::MAX) else {
                panic!("a partial frame from the core");
            };
            let repr = ServerRepr::parse(&frame).expect("the core sends only valid frames");
            if self.trace {
                eprintln!("  to client {client}: {repr:?}");
            }
            self.frames_seen += 1;
            let me = &mut self.clients[client];
            match repr {
                ServerRepr::Welcome { member, token } => {
                    if member > self.last_new_member {
                        self.last_new_member = member;
                    } else {
                        let last = self.issued.get(&member);
                        let resumed = me.sent_resume.is_some() && me.sent_resume.as_ref() == last;
                        assert!(
                            resumed || me.password_valid,
                            "member {member} welcomed again without its last token or the \
                             account's password (sent {:?}, last issued {last:?})",
                            me.sent_resume
                        );
                    }
                    if me.member != Some(MemberId(member)) {
                        me.asks.clear();
                    }
                    self.issued.insert(member, *token);
                    me.member = Some(MemberId(member));
                    me.token = Some(*token);
                }
                ServerRepr::JoinAsk { ask, .. } => me.asks.push(ask),
                ServerRepr::GameInfo(info) => {
                    self.games_seen.insert(info.id);
                }
                _ => {}
            }
            bytes = &bytes[consumed..];
        }
    }

    fn send(&mut self, client: usize, request: ClientRepr<'_>) {
        let Some(conn) = self.clients[client].conn else {
            return;
        };
        let mut bytes = vec![0; request.buffer_len()];
        request.emit(&mut bytes);
        self.feed(conn, &bytes);
    }

    /// A connection's bytes, cut as the driver cuts them; a whole frame must be counted.
    fn feed(&mut self, conn: usize, bytes: &[u8]) {
        let counted = |stats: &GeneralStats| {
            stats.requests.iter().sum::<u64>()
                + stats.malformed.iter().sum::<u64>()
                + stats.refusals.iter().sum::<u64>()
        };
        let before = counted(&self.lobby.stats());
        match next_frame(bytes, self.config.max_frame) {
            Next::Frame { frame, .. } => {
                self.lobby.handle_frame(self.now, ConnId(conn), &frame);
                let after = counted(&self.lobby.stats());
                assert!(
                    after > before,
                    "frame {:#x} on {conn} not counted",
                    frame.code()
                );
            }
            Next::Oversized { code, .. } => {
                self.lobby.handle_oversized(self.now, ConnId(conn), code)
            }
            Next::NeedMore => return,
        }
        self.drain();
    }

    /// SIGN_IN: mostly the client's own name (resuming when it has a token), now and then a
    /// name that is taken or invalid.
    fn sign_in(&mut self, client: usize, choices: &mut impl Choices) {
        let names = ["ann", "bo", "cy", "", "ann\n"];
        let own = format!("c{client}");
        let name = match choices.below(6) {
            0 => choices.pick(&names).unwrap_or("ann"),
            _ => own.as_str(),
        };
        let token = self.clients[client].token;
        let resume = token.as_ref().filter(|_| choices.below(3) > 0);
        self.clients[client].sent_resume = resume.copied();
        self.clients[client].password_valid = false;
        let password = if choices.below(3) > 0 { "pw" } else { "" };
        self.send(
            client,
            ClientRepr::SignIn {
                username: name,
                password,
                resume,
            },
        );
    }

    /// Checks every invariant of the module doc that holds between steps.
    pub fn check(&self) {
        let members: BTreeMap<MemberId, usize> =
            self.lobby.members().map(|m| (m.id, m.games)).collect();
        let mut seats: BTreeMap<MemberId, usize> = BTreeMap::new();
        for game in self.lobby.games() {
            let (players, flags) = self
                .lobby
                .roster(game.id)
                .expect("a listed game has a roster");
            assert_eq!(players.len(), flags.len());
            assert!(
                players.len() <= game.max_players as usize,
                "{:?} overfull",
                game.id
            );
            let unique: BTreeSet<i32> = players.iter().copied().collect();
            assert_eq!(
                unique.len(),
                players.len(),
                "a player twice in {:?}",
                game.id
            );
            if game.flags & GAME_HOSTED != 0 {
                assert_eq!(game.owner, MemberId(0), "hosted game with a member owner");
            } else {
                assert!(
                    players.contains(&game.owner.0),
                    "{:?}: owner {:?} is not a player",
                    game.id,
                    game.owner
                );
            }
            for &player in players {
                assert!(
                    members.contains_key(&MemberId(player)),
                    "ghost player {player}"
                );
                *seats.entry(MemberId(player)).or_default() += 1;
            }
        }
        for (member, games) in &members {
            assert_eq!(
                seats.get(member).copied().unwrap_or(0),
                *games,
                "{member:?} seats"
            );
            assert!(
                *games <= self.config.max_games_per_member,
                "{member:?} in {games} games"
            );
        }
        assert!(self.lobby.member_count() <= self.config.max_members);
        assert!(self.lobby.present_count() <= self.open.len());
        assert!(self.lobby.connection_count() <= self.open.len());
    }

    /// A game for `client`'s request: half the time one it plays in, else any game seen, now
    /// and then any id.
    fn game(&self, client: usize, choices: &mut impl Choices) -> i32 {
        let mine: Vec<i32> = self.clients[client]
            .member
            .map(|me| {
                self.lobby
                    .games()
                    .filter(|g| {
                        self.lobby
                            .roster(g.id)
                            .is_some_and(|(players, _)| players.contains(&me.0))
                    })
                    .map(|g| g.id.0)
                    .collect()
            })
            .unwrap_or_default();
        let seen: Vec<i32> = self.games_seen.iter().copied().collect();
        match choices.below(8) {
            0 => choices.below(6) as i32,
            1..=4 if !mine.is_empty() => choices.pick(&mine).unwrap_or(0),
            _ => choices.pick(&seen).unwrap_or(0),
        }
    }

    /// One random step with its outputs carried out, then the invariants checked.
    pub fn step(&mut self, choices: &mut impl Choices) {
        let client = choices.below(self.clients.len() as u64) as usize;
        // A client without a connection mostly reconnects.
        let action = match self.clients[client].conn {
            None if choices.below(4) > 0 => 0,
            _ => choices.below(40),
        };
        if self.trace {
            eprintln!("step {action} by client {client} at {:?}", self.now);
        }
        match action {
            0..=3 => self.connect(client, choices),
            4..=7 => self.sign_in(client, choices),
            8 | 36 => self.verdict(choices),
            9..=31 => self.request(client, action, choices),
            32 => {
                // Garbage: a random code and payload, sometimes an oversized header.
                if let Some(conn) = self.clients[client].conn {
                    let code = choices.below(0x70) as u32;
                    let len = if choices.one_in(10) {
                        1 << 20
                    } else {
                        choices.below(12) as u32
                    };
                    let mut bytes = code.to_le_bytes().to_vec();
                    bytes.extend_from_slice(&len.to_le_bytes());
                    bytes.extend(choices.bytes(len.min(12) as usize));
                    self.feed(conn, &bytes);
                }
            }
            33 | 34 => {
                if let Some(conn) = self.clients[client].conn.take() {
                    self.open.remove(&conn);
                    self.lobby.handle_closed(self.now, ConnId(conn));
                    self.drain();
                }
            }
            _ => {
                let by = match choices.below(200) {
                    0 => Duration::from_secs(31),
                    1..=4 => Duration::from_secs(choices.below(3)),
                    _ => Duration::from_millis(choices.below(400)),
                };
                self.now += by;
                self.run_timers();
            }
        }
        self.check();
    }

    fn connect(&mut self, client: usize, choices: &mut impl Choices) {
        if self.clients[client].conn.is_some() {
            return;
        }
        self.next_conn += 1;
        let conn = self.next_conn;
        self.open.insert(conn, client);
        self.clients[client].conn = Some(conn);
        self.lobby.handle_open(self.now, ConnId(conn));
        self.drain();
        // Most clients sign in at once; the others linger as guests.
        if choices.below(5) > 0 {
            self.sign_in(client, choices);
        }
    }

    /// The password worker's verdict on the latest check.
    fn verdict(&mut self, choices: &mut impl Choices) {
        if let Some((job, client)) = self.jobs.pop() {
            let result = match choices.below(3) {
                0 => VerifyResult::Valid(UserId(1)),
                1 => VerifyResult::Invalid,
                _ => VerifyResult::Busy,
            };
            if let VerifyResult::Valid(_) = result {
                self.clients[client].password_valid = true;
            }
            self.lobby.handle_verify_result(self.now, job, result);
            self.drain();
        }
    }

    /// A well-formed request of kind `action` (9..=31) from `client`.
    fn request(&mut self, client: usize, action: u64, choices: &mut impl Choices) {
        let game = self.game(client, choices);
        let other = 1 + choices.below(self.last_new_member.max(1) as u64 + 2) as i32;
        let names = ["ann", "bo", "", "ann\n"];
        let body = [choices.below(10) as u8];
        // STORE_DATA's value: empty, or larger than the game data limit once cut to a frame.
        let value = match action {
            25 => vec![1u8; choices.below(3) as usize * 20_000],
            _ => Vec::new(),
        };
        let request = match action {
            9 | 10 => ClientRepr::Chat {
                game: [0, game][choices.below(2) as usize],
                text: "hello",
            },
            11 => ClientRepr::PrivateChat {
                to: other,
                text: "psst",
            },
            12 | 13 => ClientRepr::CreateGame {
                max_players: choices.below(5) as u32,
                game_type: choices.pick(&["chess", "tictactoe", "go"]).unwrap_or("go"),
                version: "1",
                flags: choices.below(16) as u32,
                name: "g",
                password: "pw",
            },
            14..=16 => ClientRepr::JoinRequest {
                game,
                request: 7,
                password: choices.pick(&["pw", "no"]).unwrap_or("pw"),
            },
            17 | 18 => ClientRepr::JoinAnswer {
                ask: choices.pick(&self.clients[client].asks).unwrap_or(99),
                accept: choices.below(4) > 0,
                reason: "",
            },
            19 => ClientRepr::LeaveGame { game },
            20 => ClientRepr::SetGame {
                game,
                flags: choices.below(8) as u32,
                password: "pw",
            },
            21 => ClientRepr::SetReady {
                game,
                ready: choices.one_in(2),
            },
            22 => ClientRepr::StartGame { game },
            23 => ClientRepr::Kick {
                game,
                member: other,
                reason: "x",
            },
            24 => ClientRepr::GiveOwner {
                game,
                member: other,
            },
            25 => ClientRepr::StoreData {
                game,
                key: "k",
                value: &value[..value.len().min(16_000)],
            },
            26 => ClientRepr::FetchData { game, key: "k" },
            27 | 28 => match choices.below(3) {
                0 => ClientRepr::ToOwner {
                    game,
                    app_code: 1,
                    body: &body,
                },
                1 => ClientRepr::ToAll {
                    game,
                    app_code: 1,
                    body: &body,
                },
                _ => ClientRepr::ToPlayer {
                    game,
                    member: other,
                    app_code: 1,
                    body: &body,
                },
            },
            29 => ClientRepr::ListGames {
                game_type: choices.pick(&["", "chess", "tictactoe"]).unwrap_or(""),
                flags_clear: choices.below(8) as u32,
                min_free: choices.below(3) as u32,
            },
            30 => ClientRepr::SetMember {
                flags: choices.below(1 << 32) as u32,
                display_name: choices.pick(&names).unwrap_or("x"),
            },
            _ => ClientRepr::Ping { payload: b"p" },
        };
        self.send(client, request);
    }

    /// Everyone leaves; graces, asks and deadlines run out. The core must then hold nothing
    /// but its open hosted games.
    pub fn wind_down(&mut self) {
        let open: Vec<usize> = self.open.keys().copied().collect();
        for conn in open {
            self.open.remove(&conn);
            self.lobby.handle_closed(self.now, ConnId(conn));
            self.drain();
        }
        for (job, _) in std::mem::take(&mut self.jobs) {
            self.lobby
                .handle_verify_result(self.now, job, VerifyResult::Invalid);
            self.drain();
        }
        for _ in 0..4 {
            self.now += Duration::from_secs(61);
            self.run_timers();
            self.check();
        }
        assert_eq!(self.lobby.member_count(), 0);
        assert_eq!(self.lobby.connection_count(), 0);
        assert_eq!(self.lobby.guest_count(), 0);
        assert_eq!(self.lobby.ask_count(), 0);
        assert_eq!(self.lobby.verification_count(), 0);
        assert_eq!(self.lobby.output_count(), 0);
        let hosted: usize = self.config.hosted.iter().map(|h| h.count).sum();
        assert_eq!(
            self.lobby.game_count(),
            hosted,
            "only the open hosted games remain"
        );
        assert!(self
            .lobby
            .games()
            .all(|g| g.players == 0 && g.id > GameId(0)));
        assert_eq!(self.lobby.timer_count(), 0, "no deadline left behind");
    }
}

/// A fan-out run that ended after `records` records (`None`: no run) reached two connections
/// or more: a frame for one connection alone is marked `Delivery::Direct`.
fn check_fan_out_run(run: Option<(FrameRef, usize)>) {
    if let Some((frames, records)) = run {
        assert!(records >= 2, "{frames:?} marked fan-out for one connection");
    }
}

/// The seeded simulation of `tests/it/simulation_general.rs`: 24 clients, `steps` steps, then
/// the wind-down. Returns what the steps reached (before the wind-down).
pub fn simulate(seed: u64, steps: usize, config: GeneralConfig) -> Reached {
    let mut sim = GeneralSim::new(config, 24, seed ^ 0xA5A5);
    let mut rng = ScriptRng(seed);
    for _ in 0..steps {
        sim.step(&mut rng);
    }
    let reached = sim.reached();
    sim.wind_down();
    reached
}

/// Fuzz target `core_general`: the general lobby, scripted by `input`.
pub fn fuzz(input: &[u8]) {
    let mut script = Script::new(input);
    let config = scripted_config(&mut script);
    let token_seed = script.below(1 << 16);
    let mut sim = GeneralSim::new(config, 24, token_seed);
    while !script.is_done() {
        sim.step(&mut script);
    }
    sim.wind_down();
}
