//! The v4 (the seed's "New Lobby Protocol") master-server connection: one state machine per
//! TCP connection that opened with `version\0` + u32 4, driven by [`super::WzLobby`].
//!
//! Implements docs/protocols/wz-v4.md "Messages", "Methods", "Login policy" and "One game
//! table":
//!
//! ```text
//! frame -> decode -> (login gate) -> method -> exactly one response frame, in order
//!   login:   Verify output; later frames wait until the verdict (Resume output)
//!   addGame: admission; probe (later frames wait) -> {gameId, motd} | -403
//!   list, addPlayer, delPlayer, delGame: answered at once
//! bad frame body: error status (-32700 / -500), counted; frame over MAX_FRAME: close
//! ```
//!
//! Games it adds go into the shared [`super::games::GameTable`] as a version 4 GAMESTRUCT
//! built from the request, so legacy browsers list them; the v4 `list` shows every listed
//! game, legacy ones included. What it must not do: answer out of order, keep a request's
//! bytes (the driver's buffer holds them), or panic on any input.

use std::borrow::Cow;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use crate::time::TimerKey;
use crate::wire::wz::v4::{
    decode, next_frame, AddGame, AddPlayer, Encoding, Next, Params, Request, RequestId, Response,
    Value, LOGIN_REQUIRED, MAX_FRAME, METHOD_NOT_FOUND, NOT_ACCEPTABLE, NO_GAME, OK,
    SESSION_INVALID,
};
use crate::wire::wz::{c_string, GameStruct, GameStructRepr, GAMESTRUCT_LEN};

use crate::accounts::{valid_name, LoginPolicy, UserId, VerifyResult};

use super::admission::{admit, rewrite, room_refusal, unreachable_text, Verdict, DESC_SIZE};
use super::games::{Game, Owner};
use super::shared::{Held, Shared};
use super::stats::{ProbeOutcome, ProtocolError, Removal, V4Method, WzRefusal, WzStats};
use super::types::{ConnId, JobId, ProbeId, ProbeResult, DEFAULT_GAME_PORT};

/// The answer to a wrong login. The seed answers it with -405, like "log in first"; the
/// result text tells them apart.
const WRONG_LOGIN_TEXT: &str = "Unknown user or wrong password";

/// Requests answered per [`V4Conn::on_bytes`] call: a `list` answer can be ~100 times its
/// request, so the driver gets to move answers into its capped send queue (and drop a peer
/// that does not read) after every few, instead of one read chunk producing megabytes.
const FRAMES_PER_CALL: usize = 8;

/// A request whose answer waits for something outside the core.
#[derive(Debug)]
enum Pending {
    /// A password verification on the worker.
    Login {
        job: JobId,
        id: RequestId,
        encoding: Encoding,
        username: String,
    },
    /// A reachability probe of the game this request added.
    Probe {
        probe: ProbeId,
        game_id: u32,
        target: SocketAddr,
        id: RequestId,
        encoding: Encoding,
    },
}

/// One v4 connection.
#[derive(Debug)]
pub(crate) struct V4Conn {
    id: ConnId,
    ip: IpAddr,
    /// The account this connection logged in as.
    user: Option<UserId>,
    /// The game this connection added (listed, or being probed while `pending`).
    game: Option<u32>,
    pending: Option<Pending>,
    /// Handshake deadline until settled, then silence deadline; the probe deadline while a
    /// probe is pending.
    timer: Option<TimerKey>,
    /// Until a request was answered with success: when the connection must have settled
    /// (counted from the connection's open, not from the v4 handshake).
    handshake_deadline: Option<Instant>,
    /// Opened beyond `max_conns_per_ip`: `addGame` is refused.
    over_limit: bool,
    closing: bool,
}

impl V4Conn {
    /// A connection from `ip` that just completed the version handshake; it must settle (a
    /// request answered with success) by `handshake_deadline`.
    pub(crate) fn open(
        id: ConnId,
        ip: IpAddr,
        over_limit: bool,
        sh: &mut Shared,
        handshake_deadline: Instant,
    ) -> V4Conn {
        let mut conn = V4Conn {
            id,
            ip,
            user: None,
            game: None,
            pending: None,
            timer: None,
            handshake_deadline: Some(handshake_deadline),
            over_limit,
            closing: false,
        };
        sh.schedule(&mut conn.timer, id, handshake_deadline);
        conn
    }

    /// Whether a request of this connection was answered with success: until then it is
    /// closed at the handshake deadline and may be evicted at `--wz-max-conns`.
    pub(crate) fn is_settled(&self) -> bool {
        self.handshake_deadline.is_none()
    }

    /// Arms the deadline the connection has now: the handshake deadline until it settles
    /// (requests do not extend it), then the silence deadline from `now`.
    fn arm_deadline(&mut self, sh: &mut Shared, now: Instant) {
        match self.handshake_deadline {
            Some(at) => sh.schedule(&mut self.timer, self.id, at),
            None => sh.refresh_silence(&mut self.timer, self.id, now),
        }
    }

    /// The peer address.
    pub(crate) fn ip(&self) -> IpAddr {
        self.ip
    }

    /// Answer up to [`FRAMES_PER_CALL`] complete frames at the front of `buf`, stopping at
    /// one that has to wait; returns the bytes consumed (call again while it is non-zero).
    /// What is left after the last call is shorter than one frame (`MAX_FRAME + 4`), or
    /// anything behind a request that waits for a verdict.
    pub(crate) fn on_bytes(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        now: Instant,
        buf: &[u8],
    ) -> usize {
        let mut used = 0;
        let mut frames = 0;
        while !self.closing && self.pending.is_none() && frames < FRAMES_PER_CALL {
            frames += 1;
            let rest = buf.get(used..).unwrap_or(&[]);
            match next_frame(rest, MAX_FRAME) {
                Next::NeedMore => break,
                Next::TooLarge(_) => {
                    let held = self.take_held();
                    sh.protocol_error(st, self.id, held, ProtocolError::FrameTooLarge);
                }
                Next::Frame { body, consumed } => {
                    used += consumed;
                    let settled = self.is_settled();
                    if settled {
                        sh.refresh_silence(&mut self.timer, self.id, now);
                    }
                    self.on_frame(sh, st, now, body);
                    // Frames before the first success do not extend the handshake deadline.
                    if !settled && self.is_settled() {
                        sh.refresh_silence(&mut self.timer, self.id, now);
                    }
                }
            }
        }
        if self.closing {
            return buf.len();
        }
        used.min(buf.len())
    }

    fn on_frame(&mut self, sh: &mut Shared, st: &mut WzStats, now: Instant, body: &[u8]) {
        match decode(body) {
            Err(rejection) => {
                st.v4_decode_error(rejection.error);
                let text = format!("Invalid request: {}", rejection.error);
                let status = rejection.error.status();
                self.respond_text(sh, st, rejection.encoding, status, &text, rejection.id);
            }
            Ok((encoding, request)) => self.on_request(sh, st, now, encoding, request),
        }
    }

    fn on_request(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        now: Instant,
        enc: Encoding,
        request: Request<'_>,
    ) {
        let Request { method, params, id } = request;
        st.v4_request(V4Method::of(&method));
        let gate = sh.config.login == LoginPolicy::Required
            && self.user.is_none()
            && !matches!(params, Params::Login(_));
        if gate {
            self.respond_text(sh, st, enc, LOGIN_REQUIRED, "Please login first!", id);
            return;
        }
        match params {
            Params::Login(login) => {
                if sh.config.login == LoginPolicy::Off {
                    let text = "Unknown method \"login\": logins are disabled on this server";
                    self.respond_text(sh, st, enc, METHOD_NOT_FOUND, text, id);
                } else if !valid_name(&login.username) {
                    // No account can have this name; the answer is the same as for a
                    // wrong password.
                    self.respond_text(sh, st, enc, LOGIN_REQUIRED, WRONG_LOGIN_TEXT, id);
                } else {
                    let username = login.username.into_owned();
                    let job =
                        sh.start_verify(self.id, username.clone(), login.password.into_owned());
                    self.pending = Some(Pending::Login {
                        job,
                        id,
                        encoding: enc,
                        username,
                    });
                }
            }
            Params::AddGame(game) => self.add_game(sh, st, now, enc, &game, id),
            Params::List => {
                let list = list_value(sh);
                self.respond(sh, st, enc, OK, list, id);
            }
            Params::AddPlayer(player) => self.add_player(sh, st, now, enc, &player, id),
            Params::DelPlayer(player) => match self.own_game(player.game_id) {
                Ok(game_id) => {
                    move_players(sh, game_id, -1);
                    self.respond_text(sh, st, enc, OK, "ok", id);
                }
                Err(text) => self.respond_text(sh, st, enc, NO_GAME, &text, id),
            },
            Params::DelGame(del) => match self.own_game(del.game_id) {
                Ok(game_id) => {
                    sh.remove_game(st, game_id, Removal::Deleted);
                    self.game = None;
                    self.respond_text(sh, st, enc, OK, "ok", id);
                }
                Err(text) => self.respond_text(sh, st, enc, NO_GAME, &text, id),
            },
            Params::Unknown => {
                let text = format!("Unknown method {:?}", method.name());
                self.respond_text(sh, st, enc, METHOD_NOT_FOUND, &text, id);
            }
        }
    }

    fn add_game(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        now: Instant,
        enc: Encoding,
        params: &AddGame<'_>,
        id: RequestId,
    ) {
        if let Some(game_id) = self.game {
            let text = format!(
                "This connection already hosts game {game_id}; delGame it before adding another."
            );
            self.respond_text(sh, st, enc, NOT_ACCEPTABLE, &text, id);
            return;
        }
        let game_id = sh.table.allocate_id();
        let game_port = match params.port {
            Some(port) if port != 0 => port,
            _ => DEFAULT_GAME_PORT,
        };
        let mut stored = Box::new(gamestruct_of(params, game_port));
        rewrite(&mut stored, self.ip, game_id, None);
        let verdict = admit(sh, now, self.ip, self.over_limit, &view_of(&stored));
        let game = Game {
            id: game_id,
            owner: Owner::V4(self.id),
            peer: self.ip,
            game_port,
            listed: false,
            registered_at: now,
            updated_at: now,
            gamestruct: stored,
        };
        let added = match verdict {
            Some(verdict) => Err(verdict),
            None => sh
                .table
                .add(game)
                .map_err(|error| room_refusal(sh, error, self.ip)),
        };
        if let Err(Verdict { reason, text, .. }) = added {
            sh.table.release_id(game_id);
            st.refuse(reason);
            self.respond_text(sh, st, enc, NOT_ACCEPTABLE, &text, id);
            return;
        }
        self.game = Some(game_id);
        if sh.config.check_reachable {
            let target = SocketAddr::new(self.ip, game_port);
            // v4-protocol hosts are not 4.x games: they get the plain connect test only.
            let probe = sh.start_probe(st, self.id, &mut self.timer, now, target, false);
            self.pending = Some(Pending::Probe {
                probe,
                game_id,
                target,
                id,
                encoding: enc,
            });
        } else {
            self.list_game(sh, st, enc, game_id, id);
        }
    }

    /// The game passed every check: list it and answer `addGame`.
    fn list_game(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        enc: Encoding,
        game_id: u32,
        id: RequestId,
    ) {
        sh.list_game(st, game_id);
        let result = Value::Object(vec![
            (Cow::Borrowed("gameId"), Value::Int(i64::from(game_id))),
            (Cow::Borrowed("motd"), Value::String(sh.config.motd.clone())),
        ]);
        self.respond(sh, st, enc, OK, result, id);
    }

    fn add_player(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        now: Instant,
        enc: Encoding,
        player: &AddPlayer<'_>,
        id: RequestId,
    ) {
        let game_id = match self.own_game(player.game_id) {
            Ok(game_id) => game_id,
            Err(text) => return self.respond_text(sh, st, enc, NO_GAME, &text, id),
        };
        if sh.config.login != LoginPolicy::Off && !session_matches(sh, now, player) {
            self.respond_text(sh, st, enc, SESSION_INVALID, "invalid", id);
            return;
        }
        move_players(sh, game_id, 1);
        self.respond_text(sh, st, enc, OK, "ok", id);
    }

    /// The game a request names: this connection's game, which `requested` (if given) must
    /// equal. The error is the -402 text.
    fn own_game(&self, requested: Option<u32>) -> Result<u32, String> {
        match (self.game, requested) {
            (Some(game), None) => Ok(game),
            (Some(game), Some(asked)) if game == asked => Ok(game),
            (_, Some(asked)) => Err(format!("Game {asked} is not hosted on this connection")),
            (None, None) => Err("This connection hosts no game".to_owned()),
        }
    }

    /// The worker's verdict on this connection's login.
    pub(crate) fn on_verified(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        now: Instant,
        job: JobId,
        result: VerifyResult,
    ) {
        let Some(Pending::Login {
            job: expected,
            id,
            encoding,
            username,
        }) = self.pending.take()
        else {
            return;
        };
        if job != expected {
            return;
        }
        match result {
            VerifyResult::Valid(user) => match sh.sessions.create(now, user) {
                Some(session) => {
                    self.user = Some(user);
                    sh.user_names.insert(user, username);
                    let result = Value::Object(vec![
                        (Cow::Borrowed("userid"), Value::Int(user.0)),
                        (
                            Cow::Borrowed("sessionid"),
                            Value::String(session.to_string()),
                        ),
                    ]);
                    self.respond(sh, st, encoding, OK, result, id);
                }
                None => {
                    let text = "Server error: no session could be created, try again";
                    self.respond_text(sh, st, encoding, NOT_ACCEPTABLE, text, id);
                }
            },
            VerifyResult::Invalid => {
                self.respond_text(sh, st, encoding, LOGIN_REQUIRED, WRONG_LOGIN_TEXT, id)
            }
            VerifyResult::Busy => {
                let text = "Server busy, try again";
                self.respond_text(sh, st, encoding, NOT_ACCEPTABLE, text, id);
            }
        }
        self.arm_deadline(sh, now);
        sh.resume(self.id);
    }

    /// The driver's verdict on this connection's probe (already removed from the probe map).
    pub(crate) fn on_probe_result(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        now: Instant,
        probe: ProbeId,
        result: ProbeResult,
    ) {
        match self.pending {
            Some(Pending::Probe {
                probe: expected, ..
            }) if expected == probe => {}
            _ => {
                st.stale_probe_results += 1;
                return;
            }
        }
        let outcome = match result {
            ProbeResult::Refused => ProbeOutcome::Refused,
            ProbeResult::TimedOut => ProbeOutcome::TimedOut,
            // A WZLR answer is not asked for; any answer proves the port is open.
            ProbeResult::Connected | ProbeResult::Wzlr { .. } => ProbeOutcome::Connected,
        };
        self.probe_verdict(sh, st, now, outcome);
    }

    fn probe_verdict(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        now: Instant,
        outcome: ProbeOutcome,
    ) {
        let Some(Pending::Probe {
            game_id,
            target,
            id,
            encoding,
            ..
        }) = self.pending.take()
        else {
            return;
        };
        st.probe_outcome(outcome);
        if outcome == ProbeOutcome::Connected {
            self.list_game(sh, st, encoding, game_id, id);
        } else {
            sh.remove_game(st, game_id, Removal::Refused);
            self.game = None;
            st.refuse(WzRefusal::Unreachable);
            let text = unreachable_text(target);
            self.respond_text(sh, st, encoding, NOT_ACCEPTABLE, &text, id);
        }
        self.arm_deadline(sh, now);
        sh.resume(self.id);
    }

    /// This connection's deadline passed.
    pub(crate) fn on_timer(&mut self, sh: &mut Shared, st: &mut WzStats, now: Instant) {
        self.timer = None;
        if let Some(Pending::Probe { probe, .. }) = self.pending {
            // The driver never reported: decide now.
            sh.probes.remove(&probe);
            self.probe_verdict(sh, st, now, ProbeOutcome::TimedOut);
            return;
        }
        self.closing_removal(sh, st, Removal::Silence, ProtocolError::IdleTimeout);
    }

    /// Silence: a connection with a game loses it (counted as a removal); one without is
    /// an idle connection (counted as a protocol error).
    fn closing_removal(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        removal: Removal,
        idle: ProtocolError,
    ) {
        if self.game.is_none() {
            st.protocol_error(idle);
        }
        sh.shut(st, self.id, self.take_held(), removal);
    }

    /// The connection is gone: forget its game at once.
    pub(crate) fn on_closed(&mut self, sh: &mut Shared, st: &mut WzStats) {
        sh.forget(st, self.take_held());
    }

    /// Take out what this connection holds in [`Shared`] (the deadline, the game, a probe
    /// or verification in flight) for [`Shared::release`]; it is closing from now on.
    /// `None` if it already was.
    fn take_held(&mut self) -> Option<Held> {
        if std::mem::replace(&mut self.closing, true) {
            return None;
        }
        let (probe, verification) = match self.pending.take() {
            Some(Pending::Probe { probe, .. }) => (Some(probe), None),
            Some(Pending::Login { job, .. }) => (None, Some(job)),
            None => (None, None),
        };
        Some(Held {
            timer: self.timer.take(),
            reserved_id: None,
            game: self.game.take(),
            probe,
            verification,
        })
    }

    fn respond_text(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        enc: Encoding,
        status: i32,
        text: &str,
        id: RequestId,
    ) {
        self.respond(sh, st, enc, status, Value::String(text.to_owned()), id);
    }

    /// Sends one response; a success settles the connection (the caller then arms its
    /// silence deadline).
    fn respond(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        enc: Encoding,
        status: i32,
        result: Value,
        id: RequestId,
    ) {
        if status == OK {
            self.handshake_deadline = None;
        }
        st.v4_status(status);
        let mut bytes = Vec::new();
        Response { status, result, id }.encode(enc, &mut bytes);
        sh.send(self.id, bytes);
    }
}

/// Whether `player`'s session is live and belongs to the user it names (when it names one).
fn session_matches(sh: &mut Shared, now: Instant, player: &AddPlayer<'_>) -> bool {
    let Some(session) = player.sessionid.as_deref() else {
        return false;
    };
    let Some(user) = sh.sessions.validate(now, session) else {
        return false;
    };
    let id_matches = player.userid.map_or(true, |id| id == user.0);
    let name_matches = player.username.as_deref().map_or(true, |name| {
        sh.user_names.get(&user).is_some_and(|n| n == name)
    });
    id_matches && name_matches
}

/// Add `delta` to a game's current players, within 0..=i32::MAX.
fn move_players(sh: &mut Shared, game_id: u32, delta: i32) {
    if let Some(game) = sh.table.get_mut(game_id) {
        let mut view = GameStruct::new_unchecked(&mut game.gamestruct[..]);
        let players = view.current_players().max(0).saturating_add(delta).max(0);
        view.set_current_players(players);
    }
}

fn view_of(bytes: &[u8; GAMESTRUCT_LEN]) -> GameStruct<&[u8]> {
    GameStruct::new_unchecked(&bytes[..])
}

/// The version 4 GAMESTRUCT a v4 `addGame` is listed as (to legacy browsers too).
fn gamestruct_of(params: &AddGame<'_>, game_port: u16) -> [u8; GAMESTRUCT_LEN] {
    let text = |value: &Option<Cow<'_, str>>| value.as_deref().unwrap_or("").as_bytes().to_vec();
    let mut repr = GameStructRepr::zeroed(4);
    repr.name = c_string(params.description.as_bytes());
    repr.dw_size = DESC_SIZE;
    repr.max_players = i32::try_from(params.max_players).unwrap_or(i32::MAX);
    repr.current_players = i32::try_from(params.current_players).unwrap_or(i32::MAX);
    repr.extra = c_string(b"Extra");
    repr.host_port = game_port;
    repr.map_name = c_string(&text(&params.mapname));
    repr.host_name = c_string(&text(&params.hostplayer));
    repr.version_string = c_string(&text(&params.multi_ver));
    repr.mod_list = c_string(&text(&params.modlist));
    repr.game_version_major = params.wz_ver_major.unwrap_or(0);
    repr.game_version_minor = params.wz_ver_minor.unwrap_or(0);
    repr.private_game = u32::from(params.is_private.unwrap_or(false));
    repr.to_bytes()
}

/// The v4 `list` result: `{"count": n, "list": [game, ...]}` over every listed game of
/// either protocol with a non-empty name, this node's then the other nodes' of a group, at
/// most `list_limit`.
fn list_value(sh: &Shared) -> Value {
    let local = sh
        .table
        .iter()
        .filter(|game| game.listed)
        .map(|game| (game.game_id, game.peer, game.game_port, game.gamestruct));
    let remote = sh.remote_games().map(|game| {
        let gamestruct = GameStruct::new_unchecked(&game.gamestruct[..]);
        (game.game_id, game.host, game.port, gamestruct)
    });
    let games: Vec<Value> = local
        .chain(remote)
        .filter(|(_, _, _, gamestruct)| !gamestruct.name().is_empty())
        .take(sh.config.list_limit)
        .map(|(id, host, port, gamestruct)| game_value(id, host, port, &gamestruct))
        .collect();
    Value::Object(vec![
        (
            Cow::Borrowed("count"),
            Value::Int(i64::try_from(games.len()).unwrap_or(i64::MAX)),
        ),
        (Cow::Borrowed("list"), Value::Array(games)),
    ])
}

/// One game as a v4 list entry (the keys of the 2011 implementation, plus `gameId`).
fn game_value(game_id: u32, host: IpAddr, port: u16, gs: &GameStruct<&[u8]>) -> Value {
    let text = |bytes: &[u8]| Value::String(String::from_utf8_lossy(bytes).into_owned());
    let fields: Vec<(&'static str, Value)> = vec![
        ("gameId", Value::Int(i64::from(game_id))),
        ("host", Value::String(host.to_string())),
        ("port", Value::Int(i64::from(port))),
        ("description", text(gs.name())),
        (
            "currentPlayers",
            Value::Int(i64::from(gs.current_players())),
        ),
        ("maxPlayers", Value::Int(i64::from(gs.max_players()))),
        ("multiVer", text(gs.version_string())),
        ("wzVerMajor", Value::Int(i64::from(gs.game_version_major()))),
        ("wzVerMinor", Value::Int(i64::from(gs.game_version_minor()))),
        ("isPrivate", Value::Bool(gs.private_game() != 0)),
        ("modlist", text(gs.mod_list())),
        ("mapname", text(gs.map_name())),
        ("hostplayer", text(gs.host_name())),
    ];
    Value::Object(
        fields
            .into_iter()
            .map(|(key, value)| (Cow::Borrowed(key), value))
            .collect(),
    )
}
