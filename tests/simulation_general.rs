//! Seeded simulation of the general lobby core alone, with a virtual clock and a fake driver
//! (the shape of `tests/simulation.rs`).
//!
//! Thousands of random steps from a few dozen clients: connecting, signing in (new, resumed,
//! refused, checked against accounts), chatting in every scope, creating, joining, answering,
//! leaving, kicking, handing over and starting games, storing data, relaying, listing, joining
//! the hosted tic-tac-toe games and playing moves, sending garbage, dropping and resuming, the
//! clock jumping. After every step:
//! - every frame the core sends parses, and goes to a connection the driver has open;
//! - every game has an owner who is one of its players, or is hosted (owner 0, flag 8);
//! - no game has more players than seats, no player twice, every player an existing member;
//! - no member is in more games (plus asks) than allowed;
//! - member ids handed to new members only grow;
//! - the outputs of one call are bounded by the members present.
//!
//! At the end, once every connection is closed and the graces and asks have run out, the core
//! holds nothing but its open hosted games.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use lobbyd::accounts::UserId;
use lobbyd::accounts::{LoginPolicy, VerifyResult};
use lobbyd::general::{
    ConnId, GameId, GeneralConfig, GeneralLobby, GeneralOutput, HostedKind, HostedSpec, JobId,
    MemberId,
};
use lobbyd::wire::general::{next_frame, ClientRepr, Next, ServerRepr, GAME_HOSTED, TOKEN_LEN};

/// splitmix64: tiny, seedable, good enough to pick actions.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        if items.is_empty() {
            None
        } else {
            Some(items[self.below(items.len() as u64) as usize])
        }
    }
}

/// What one client knows about itself.
#[derive(Default)]
struct Client {
    conn: Option<usize>,
    member: Option<MemberId>,
    token: Option<[u8; TOKEN_LEN]>,
    /// Ask ids this client was sent as an owner.
    asks: Vec<i32>,
}

struct Sim {
    lobby: GeneralLobby,
    now: Instant,
    config: GeneralConfig,
    clients: Vec<Client>,
    /// Driver connections open, and which client each belongs to.
    open: BTreeMap<usize, usize>,
    next_conn: usize,
    /// Password checks waiting for a verdict.
    jobs: Vec<JobId>,
    /// The highest member id a WELCOME has given a new member.
    last_new_member: i32,
    /// Game ids seen in GAME_INFO, so requests name real games most of the time.
    games_seen: BTreeSet<i32>,
    frames_seen: u64,
}

impl Sim {
    fn new(config: GeneralConfig, clients: usize, seed: u64) -> Sim {
        let now = Instant::now();
        let mut token_rng = Rng(seed ^ 0xA5A5);
        let tokens = Box::new(move || {
            let mut token = [0u8; TOKEN_LEN];
            // A tiny token space, so collisions with live tokens happen and must be avoided.
            token[0] = token_rng.below(200) as u8;
            token
        });
        let mut sim = Sim {
            lobby: GeneralLobby::new(config.clone(), now, tokens),
            now,
            config,
            clients: (0..clients).map(|_| Client::default()).collect(),
            open: BTreeMap::new(),
            next_conn: 0,
            jobs: Vec::new(),
            last_new_member: 0,
            games_seen: BTreeSet::new(),
            frames_seen: 0,
        };
        sim.drain();
        sim
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
        while let Some(output) = self.lobby.poll_output() {
            match output {
                GeneralOutput::Send { conn, frames } => {
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
                GeneralOutput::Verify { job, .. } => self.jobs.push(job),
            }
        }
    }

    /// Reads what a client received: every frame must parse.
    fn read(&mut self, client: usize, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let Next::Frame { frame, consumed } = next_frame(bytes, usize::MAX) else {
                panic!("a partial frame from the core");
            };
            let repr = ServerRepr::parse(&frame).expect("the core sends only valid frames");
            self.frames_seen += 1;
            let me = &mut self.clients[client];
            match repr {
                ServerRepr::Welcome { member, token } => {
                    if me.member != Some(MemberId(member)) {
                        assert!(member > self.last_new_member, "member id {member} reused");
                        self.last_new_member = member;
                        me.asks.clear();
                    }
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

    fn feed(&mut self, conn: usize, bytes: &[u8]) {
        match next_frame(bytes, self.config.max_frame) {
            Next::Frame { frame, .. } => self.lobby.handle_frame(self.now, ConnId(conn), &frame),
            Next::Oversized { code, .. } => {
                self.lobby.handle_oversized(self.now, ConnId(conn), code)
            }
            Next::NeedMore => return,
        }
        self.drain();
    }

    /// SIGN_IN: mostly the client's own name (resuming when it has a token), now and then a
    /// name that is taken or invalid.
    fn sign_in(&mut self, client: usize, rng: &mut Rng) {
        let names = ["ann", "bo", "cy", "", "ann\n"];
        let own = format!("c{client}");
        let name = match rng.below(6) {
            0 => rng.pick(&names).unwrap_or("ann"),
            _ => own.as_str(),
        };
        let token = self.clients[client].token;
        let resume = token.as_ref().filter(|_| rng.below(3) > 0);
        let password = if rng.below(3) > 0 { "pw" } else { "" };
        self.send(
            client,
            ClientRepr::SignIn {
                username: name,
                password,
                resume,
            },
        );
    }

    fn check(&self) {
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

    fn step(&mut self, rng: &mut Rng) {
        let client = rng.below(self.clients.len() as u64) as usize;
        // Half the time a game the client plays in, else any game seen, now and then any id.
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
        let game = match rng.below(8) {
            0 => rng.below(6) as i32,
            1..=4 if !mine.is_empty() => rng.pick(&mine).unwrap_or(0),
            _ => rng.pick(&seen).unwrap_or(0),
        };
        let other = 1 + rng.below(self.last_new_member.max(1) as u64 + 2) as i32;
        let names = ["ann", "bo", "", "ann\n"];
        // A client without a connection mostly reconnects.
        let action = match self.clients[client].conn {
            None if rng.below(4) > 0 => 0,
            _ => rng.below(40),
        };
        match action {
            0..=3 => {
                if self.clients[client].conn.is_none() {
                    self.next_conn += 1;
                    let conn = self.next_conn;
                    self.open.insert(conn, client);
                    self.clients[client].conn = Some(conn);
                    let peer = SocketAddr::from(([127, 0, 0, 1], 1000 + conn as u16));
                    self.lobby.handle_open(self.now, ConnId(conn), peer);
                    self.drain();
                    // Most clients sign in at once; the others linger as guests.
                    if rng.below(5) > 0 {
                        self.sign_in(client, rng);
                    }
                }
            }
            4..=7 => self.sign_in(client, rng),
            8 | 36 => {
                if let Some(job) = self.jobs.pop() {
                    let result = match rng.below(3) {
                        0 => VerifyResult::Valid(UserId(1)),
                        1 => VerifyResult::Invalid,
                        _ => VerifyResult::Busy,
                    };
                    self.lobby.handle_verify_result(self.now, job, result);
                    self.drain();
                }
            }
            9 | 10 => {
                let scope = [0, game][rng.below(2) as usize];
                self.send(
                    client,
                    ClientRepr::Chat {
                        game: scope,
                        text: "hello",
                    },
                );
            }
            11 => self.send(
                client,
                ClientRepr::PrivateChat {
                    to: other,
                    text: "psst",
                },
            ),
            12 | 13 => {
                let game_type = ["chess", "tictactoe", "go"][rng.below(3) as usize];
                self.send(
                    client,
                    ClientRepr::CreateGame {
                        max_players: rng.below(5) as u32,
                        game_type,
                        version: "1",
                        flags: rng.below(16) as u32,
                        name: "g",
                        password: "pw",
                    },
                );
            }
            14..=16 => {
                let password = ["pw", "no"][rng.below(2) as usize];
                self.send(
                    client,
                    ClientRepr::JoinRequest {
                        game,
                        request: 7,
                        password,
                    },
                );
            }
            17 | 18 => {
                let ask = rng.pick(&self.clients[client].asks).unwrap_or(99);
                let accept = rng.below(4) > 0;
                self.send(
                    client,
                    ClientRepr::JoinAnswer {
                        ask,
                        accept,
                        reason: "",
                    },
                );
            }
            19 => self.send(client, ClientRepr::LeaveGame { game }),
            20 => {
                let flags = rng.below(8) as u32;
                self.send(
                    client,
                    ClientRepr::SetGame {
                        game,
                        flags,
                        password: "pw",
                    },
                );
            }
            21 => {
                let ready = rng.below(2) == 0;
                self.send(client, ClientRepr::SetReady { game, ready });
            }
            22 => self.send(client, ClientRepr::StartGame { game }),
            23 => self.send(
                client,
                ClientRepr::Kick {
                    game,
                    member: other,
                    reason: "x",
                },
            ),
            24 => self.send(
                client,
                ClientRepr::GiveOwner {
                    game,
                    member: other,
                },
            ),
            25 => {
                let value = vec![1u8; rng.below(3) as usize * 20_000];
                self.send(
                    client,
                    ClientRepr::StoreData {
                        game,
                        key: "k",
                        value: &value[..value.len().min(16_000)],
                    },
                );
            }
            26 => self.send(client, ClientRepr::FetchData { game, key: "k" }),
            27 | 28 => {
                let body = [rng.below(10) as u8];
                let request = match rng.below(3) {
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
                };
                self.send(client, request);
            }
            29 => {
                let game_type = ["", "chess", "tictactoe"][rng.below(3) as usize];
                self.send(
                    client,
                    ClientRepr::ListGames {
                        game_type,
                        flags_clear: rng.below(8) as u32,
                        min_free: rng.below(3) as u32,
                    },
                );
            }
            30 => {
                let display_name = rng.pick(&names).unwrap_or("x");
                self.send(
                    client,
                    ClientRepr::SetMember {
                        flags: rng.next() as u32,
                        display_name,
                    },
                );
            }
            31 => self.send(client, ClientRepr::Ping { payload: b"p" }),
            32 => {
                // Garbage: a random code and payload, sometimes an oversized header.
                if let Some(conn) = self.clients[client].conn {
                    let len = if rng.below(10) == 0 {
                        1 << 20
                    } else {
                        rng.below(12) as u32
                    };
                    let mut bytes = (rng.below(0x70) as u32).to_le_bytes().to_vec();
                    bytes.extend_from_slice(&len.to_le_bytes());
                    bytes.extend((0..len.min(12)).map(|_| rng.next() as u8));
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
                let by = match rng.below(200) {
                    0 => Duration::from_secs(31),
                    1..=4 => Duration::from_secs(rng.below(3)),
                    _ => Duration::from_millis(rng.below(400)),
                };
                self.now += by;
                self.run_timers();
            }
        }
    }
}

fn run(seed: u64, steps: usize, config: GeneralConfig) {
    let mut sim = Sim::new(config, 24, seed);
    let mut rng = Rng(seed);
    for _ in 0..steps {
        sim.step(&mut rng);
        sim.check();
    }
    let stats = sim.lobby.stats();
    eprintln!(
        "seed {seed}: {} frames, {} sign-ins, {} resumes, {} games, {} joins, {} asks, {} chat, {} relayed",
        sim.frames_seen,
        stats.sign_ins,
        stats.resumes,
        stats.games_created,
        stats.joins,
        stats.asks,
        stats.chat_lines,
        stats.relayed
    );
    assert!(
        sim.frames_seen > steps as u64,
        "the simulation did little: {}",
        sim.frames_seen
    );
    assert!(sim.last_new_member > 5, "few members ever signed in");
    // Everyone leaves; graces, asks and deadlines run out.
    let open: Vec<usize> = sim.open.keys().copied().collect();
    for conn in open {
        sim.open.remove(&conn);
        sim.lobby.handle_closed(sim.now, ConnId(conn));
        sim.drain();
    }
    for job in std::mem::take(&mut sim.jobs) {
        sim.lobby
            .handle_verify_result(sim.now, job, VerifyResult::Invalid);
        sim.drain();
    }
    for _ in 0..4 {
        sim.now += Duration::from_secs(61);
        sim.run_timers();
        sim.check();
    }
    assert_eq!(sim.lobby.member_count(), 0);
    assert_eq!(sim.lobby.connection_count(), 0);
    assert_eq!(sim.lobby.guest_count(), 0);
    assert_eq!(sim.lobby.ask_count(), 0);
    assert_eq!(sim.lobby.verification_count(), 0);
    assert_eq!(sim.lobby.output_count(), 0);
    let hosted: usize = sim.config.hosted.iter().map(|h| h.count).sum();
    assert_eq!(
        sim.lobby.game_count(),
        hosted,
        "only the open hosted games remain"
    );
    assert!(sim
        .lobby
        .games()
        .all(|g| g.players == 0 && g.id > GameId(0)));
    assert_eq!(sim.lobby.timer_count(), 0, "no deadline left behind");
}

fn config(login: LoginPolicy, resume_grace: Duration) -> GeneralConfig {
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

#[test]
fn seeded_simulation_with_resume_grace() {
    for seed in 1..=4 {
        run(
            seed,
            3_000,
            config(LoginPolicy::Optional, Duration::from_secs(30)),
        );
    }
}

#[test]
fn seeded_simulation_without_grace_and_with_accounts() {
    for seed in 11..=13 {
        run(seed, 8_000, config(LoginPolicy::Required, Duration::ZERO));
    }
}

#[test]
fn seeded_simulation_with_auto_approval() {
    let config = GeneralConfig {
        auto_approve: true,
        ..config(LoginPolicy::Off, Duration::from_secs(5))
    };
    for seed in 21..=23 {
        run(seed, 8_000, config.clone());
    }
}
