//! The legacy (2.3.x, 3.x, 4.x) Warzone 2100 lobby connection: one state machine per TCP
//! connection, driven by [`super::WzLobby`].
//!
//! Implements docs/protocols/wz-lobby.md "Legacy protocol" and "Behaviour":
//!
//! ```text
//! Fresh --gaId--> Fresh (id reserved, u32 sent) --addg--> AwaitingStruct --GAMESTRUCT-->
//!   refused:   status 403/406, close
//!   probing:   Probing --result--> Registered (status 200) | status 408, close
//!   no probe:  Registered (status 200)
//! Registered: bare GAMESTRUCT = update (status only if registered as v4), keep = no reply
//! Fresh --list--> list reply, close       anything unexpected --> close (counted)
//! ```
//!
//! What it must not do: answer `keep`, answer a v3 host's update, hang up on `gaId`, keep
//! more than one GAMESTRUCT per connection (the game table's copy), or panic on any input.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use crate::time::TimerKey;
use crate::wire::wz::{
    emit_game_id, motd_command_reply, next_item, GameStruct, Item, ListReplyWriter, WzCommand,
    GAMESTRUCT_LEN,
};

use super::admission::{
    admit, copy_struct, policy_refusal, rewrite, room_refusal, unreachable_text, Verdict,
    STATUS_FORBIDDEN_VERSION, STATUS_OK, STATUS_UNREACHABLE,
};
use super::games::{Game, Owner};
use super::shared::{Held, Shared};
use super::stats::{ProbeOutcome, ProtocolError, Removal, WzRefusal, WzStats};
use super::types::{ConnId, ProbeId, ProbeResult, DEFAULT_GAME_PORT};

/// Where a legacy connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing registered yet (a `gaId` may have reserved an id).
    Fresh,
    /// `addg` received; the GAMESTRUCT comes next.
    AwaitingStruct,
    /// The game is in the table, unlisted, while its port is probed.
    Probing {
        game_id: u32,
        probe: ProbeId,
        target: SocketAddr,
        version: u32,
        host_port: Option<u16>,
    },
    /// The game is listed.
    Registered {
        game_id: u32,
        version: u32,
        host_port: Option<u16>,
    },
    /// A close was requested; further input is ignored.
    Closing,
}

/// One legacy connection.
#[derive(Debug)]
pub(crate) struct LegacyConn {
    id: ConnId,
    ip: IpAddr,
    state: State,
    /// The id the last `gaId` returned, until a game takes it.
    reserved: Option<u32>,
    /// The one deadline of this connection: handshake (Fresh, AwaitingStruct), probe
    /// (Probing) or silence (Registered).
    timer: Option<TimerKey>,
    /// Bytes were left unconsumed by the last `on_bytes` (a message is half there).
    partial: bool,
    /// Opened beyond `max_conns_per_ip`: refused at `addg`.
    over_limit: bool,
}

impl LegacyConn {
    /// A new connection from `ip` (already canonical: IPv4-mapped IPv6 shown as IPv4).
    pub(crate) fn open(
        id: ConnId,
        ip: IpAddr,
        over_limit: bool,
        sh: &mut Shared,
        now: Instant,
    ) -> LegacyConn {
        let mut conn = LegacyConn {
            id,
            ip,
            state: State::Fresh,
            reserved: None,
            timer: None,
            partial: false,
            over_limit,
        };
        let deadline = now + sh.config.handshake_timeout;
        sh.schedule(&mut conn.timer, id, deadline);
        conn
    }

    /// The peer address.
    pub(crate) fn ip(&self) -> IpAddr {
        self.ip
    }

    /// Whether its game is listed: until then it is closed at the handshake deadline and may
    /// be evicted at `--wz-max-conns`.
    pub(crate) fn is_settled(&self) -> bool {
        matches!(self.state, State::Registered { .. })
    }

    /// Whether the connection was opened beyond `max_conns_per_ip`.
    pub(crate) fn over_limit(&self) -> bool {
        self.over_limit
    }

    /// The connection turned out to speak v4: drop this state's deadline (nothing else is
    /// held before the first legacy byte).
    pub(crate) fn abandon(&mut self, sh: &mut Shared, st: &mut WzStats) {
        sh.forget(st, self.take_held());
    }

    /// Consume what can be acted on at the front of `buf`; returns the bytes consumed.
    pub(crate) fn on_bytes(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        now: Instant,
        buf: &[u8],
    ) -> usize {
        let mut used = 0;
        while self.state != State::Closing {
            let rest = buf.get(used..).unwrap_or(&[]);
            if self.state == State::AwaitingStruct {
                if let [0, 0, 0, version @ (1 | 2 | 5..), ..] = rest {
                    self.bad_struct_version(sh, st, u32::from(*version));
                    break;
                }
            }
            match next_item(rest) {
                Item::NeedMore => break,
                Item::Garbage { consumed } => used += consumed,
                Item::Command { cmd, consumed } => {
                    used += consumed;
                    self.on_command(sh, st, now, cmd);
                }
                Item::GameStruct { consumed } => {
                    used += consumed;
                    match rest.get(..GAMESTRUCT_LEN) {
                        Some(raw) => self.on_gamestruct(sh, st, now, raw),
                        None => self.protocol_error(sh, st, ProtocolError::Truncated),
                    }
                }
            }
        }
        if self.state == State::Closing {
            self.partial = false;
            return buf.len();
        }
        self.partial = used < buf.len();
        used.min(buf.len())
    }

    fn bad_struct_version(&mut self, sh: &mut Shared, st: &mut WzStats, version: u32) {
        if version < 3 {
            // A 2.2-era host (GAMESTRUCT_VERSION 2): it reads a status after addg.
            let motd = "This version of Warzone 2100 is too old for this lobby; \
                        the game is NOT hosted. Please upgrade.";
            let verdict = Verdict::new(WzRefusal::MinVersion, STATUS_FORBIDDEN_VERSION, motd);
            self.refuse(sh, st, verdict);
        } else {
            self.protocol_error(sh, st, ProtocolError::BadVersion);
        }
    }

    fn on_command(&mut self, sh: &mut Shared, st: &mut WzStats, now: Instant, cmd: WzCommand) {
        if cmd.known().is_err() {
            self.protocol_error(sh, st, ProtocolError::UnknownCommand);
            return;
        }
        st.command(cmd);
        match (self.state, cmd) {
            (State::Closing, _) => {}
            (State::Probing { .. }, WzCommand::Keep) => {}
            (State::Probing { .. }, _) => {
                self.protocol_error(sh, st, ProtocolError::InputWhileProbing)
            }
            (State::AwaitingStruct, _) => {
                self.protocol_error(sh, st, ProtocolError::ExpectedGameStruct)
            }
            (State::Fresh, WzCommand::GaId) => {
                if let Some(old) = self.reserved.take() {
                    sh.table.release_id(old);
                }
                let id = sh.table.allocate_id();
                self.reserved = Some(id);
                sh.send(self.id, emit_game_id(id).to_vec());
            }
            (State::Fresh, WzCommand::Addg) => self.state = State::AwaitingStruct,
            (State::Fresh, WzCommand::List) => {
                let mut bytes = Vec::new();
                // This node's games, then the other nodes' of a group.
                let remote = sh.remote_games().map(|game| game.gamestruct);
                let games = sh.table.listed().chain(remote).take(sh.config.list_limit);
                ListReplyWriter::new(&mut bytes).write(games, STATUS_OK, sh.config.motd.as_bytes());
                sh.send(self.id, bytes);
                st.list_replies += 1;
                self.shut(sh, st, Removal::Closed);
            }
            (State::Fresh, WzCommand::Motd) => {
                let reply = motd_command_reply(sh.config.motd.as_bytes()).to_vec();
                sh.send(self.id, reply);
                self.shut(sh, st, Removal::Closed);
            }
            // A keep-alive before registering proves nothing; it does not extend the idle
            // deadline, and it is never answered.
            (State::Fresh, _) => {}
            (State::Registered { game_id, .. }, WzCommand::GaId) => {
                // Idempotent: the host asks again for the id it already has.
                sh.send(self.id, emit_game_id(game_id).to_vec());
                sh.refresh_silence(&mut self.timer, self.id, now);
            }
            (State::Registered { .. }, WzCommand::Keep) => {
                sh.refresh_silence(&mut self.timer, self.id, now)
            }
            (State::Registered { .. }, WzCommand::Addg) => {
                self.protocol_error(sh, st, ProtocolError::DuplicateAddg)
            }
            (State::Registered { .. }, _) => {
                self.protocol_error(sh, st, ProtocolError::UnexpectedCommand)
            }
        }
    }

    fn on_gamestruct(&mut self, sh: &mut Shared, st: &mut WzStats, now: Instant, raw: &[u8]) {
        match self.state {
            State::Fresh => self.protocol_error(sh, st, ProtocolError::GameStructWithoutAddg),
            State::Probing { .. } => self.protocol_error(sh, st, ProtocolError::InputWhileProbing),
            State::AwaitingStruct => self.register(sh, st, now, raw),
            State::Registered {
                game_id,
                version,
                host_port,
            } => self.update(sh, st, now, raw, game_id, version, host_port),
            State::Closing => {}
        }
    }

    fn register(&mut self, sh: &mut Shared, st: &mut WzStats, now: Instant, raw: &[u8]) {
        let Some(mut stored) = copy_struct(raw) else {
            self.protocol_error(sh, st, ProtocolError::BadVersion);
            return;
        };
        let game_id = match self.reserved.take() {
            Some(id) => id,
            None => sh.table.allocate_id(),
        };
        // Hold the id through the checks so a refusal below gives it back.
        self.reserved = Some(game_id);
        rewrite(&mut stored, self.ip, game_id, None);
        let view = GameStruct::new_unchecked(&stored[..]);
        let version = view.version();
        let host_port = view.host_port();

        let refusal = admit(sh, now, self.ip, self.over_limit, &view);
        if let Some(verdict) = refusal {
            self.refuse(sh, st, verdict);
            return;
        }

        let game_port = match host_port {
            Some(port) if port != 0 => port,
            _ => DEFAULT_GAME_PORT,
        };
        let game = Game {
            id: game_id,
            owner: Owner::Legacy(self.id),
            peer: self.ip,
            game_port,
            listed: false,
            registered_at: now,
            updated_at: now,
            gamestruct: stored,
        };
        if let Err(error) = sh.table.add(game) {
            let verdict = room_refusal(sh, error, self.ip);
            self.refuse(sh, st, verdict);
            return;
        }
        self.reserved = None;

        if sh.config.check_reachable {
            let target = SocketAddr::new(self.ip, game_port);
            let probe = sh.start_probe(st, self.id, &mut self.timer, now, target, version == 4);
            self.state = State::Probing {
                game_id,
                probe,
                target,
                version,
                host_port,
            };
        } else {
            self.list_game(sh, st, now, game_id, version, host_port);
        }
    }

    /// The game passed every check: list it and tell the host.
    fn list_game(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        now: Instant,
        game_id: u32,
        version: u32,
        host_port: Option<u16>,
    ) {
        sh.list_game(st, game_id);
        self.state = State::Registered {
            game_id,
            version,
            host_port,
        };
        sh.send_status(self.id, STATUS_OK, &sh.config.motd.clone());
        sh.refresh_silence(&mut self.timer, self.id, now);
    }

    #[allow(clippy::too_many_arguments)]
    fn update(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        now: Instant,
        raw: &[u8],
        game_id: u32,
        version: u32,
        host_port: Option<u16>,
    ) {
        let changed = match GameStruct::new_checked(raw) {
            Ok(incoming) => incoming.version() != version || incoming.host_port() != host_port,
            Err(_) => true,
        };
        if changed {
            self.protocol_error(sh, st, ProtocolError::ChangedUpdate);
            return;
        }
        let Some(game) = sh.table.get_mut(game_id) else {
            self.protocol_error(sh, st, ProtocolError::UnexpectedCommand);
            return;
        };
        let dw_size = GameStruct::new_unchecked(&game.gamestruct[..]).dw_size();
        if let Some(bytes) = raw.get(..GAMESTRUCT_LEN) {
            game.gamestruct.copy_from_slice(bytes);
        }
        rewrite(&mut game.gamestruct, self.ip, game_id, Some(dw_size));
        game.updated_at = now;
        let refusal = match sh.table.get(game_id) {
            Some(game) => policy_refusal(sh, &GameStruct::new_unchecked(&game.gamestruct[..])),
            None => None,
        };
        if let Some(verdict) = refusal {
            st.refuse(verdict.reason);
            // A 3.x host reads nothing after an update: only a 4.x host gets the reason.
            if version == 4 {
                sh.send_status(self.id, verdict.status, &verdict.text);
            }
            self.shut(sh, st, Removal::Refused);
            return;
        }
        st.updates += 1;
        if version == 4 {
            sh.send_status(self.id, STATUS_OK, &sh.config.motd.clone());
        }
        sh.refresh_silence(&mut self.timer, self.id, now);
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
        let State::Probing {
            game_id,
            probe: expected,
            target,
            version,
            host_port,
        } = self.state
        else {
            st.stale_probe_results += 1;
            return;
        };
        if probe != expected {
            st.stale_probe_results += 1;
            return;
        }
        let outcome = match result {
            ProbeResult::Refused => ProbeOutcome::Refused,
            ProbeResult::TimedOut => ProbeOutcome::TimedOut,
            ProbeResult::Connected => ProbeOutcome::Connected,
            ProbeResult::Wzlr { game_id: got } if got == game_id => ProbeOutcome::WzlrMatch,
            ProbeResult::Wzlr { game_id: got } => {
                st.probe_outcome(ProbeOutcome::WzlrMismatch);
                let motd = format!(
                    "Game unreachable: {target} answered for another game (id {got}, this game \
                     is {game_id}). The game is NOT hosted."
                );
                let verdict = Verdict::new(WzRefusal::WrongGameId, STATUS_UNREACHABLE, motd);
                self.refuse(sh, st, verdict);
                return;
            }
        };
        self.probe_verdict(sh, st, now, outcome);
        if matches!(outcome, ProbeOutcome::Connected | ProbeOutcome::WzlrMatch) {
            self.list_game(sh, st, now, game_id, version, host_port);
        }
    }

    /// Count the outcome; on failure refuse with 408.
    fn probe_verdict(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        _now: Instant,
        outcome: ProbeOutcome,
    ) {
        st.probe_outcome(outcome);
        if let State::Probing { target, .. } = self.state {
            if matches!(outcome, ProbeOutcome::Refused | ProbeOutcome::TimedOut) {
                let motd = unreachable_text(target);
                let verdict = Verdict::new(WzRefusal::Unreachable, STATUS_UNREACHABLE, motd);
                self.refuse(sh, st, verdict);
            }
        }
    }

    /// This connection's deadline passed.
    pub(crate) fn on_timer(&mut self, sh: &mut Shared, st: &mut WzStats, now: Instant) {
        self.timer = None;
        match self.state {
            State::Fresh | State::AwaitingStruct => {
                let reason = if self.partial {
                    ProtocolError::Truncated
                } else {
                    ProtocolError::IdleTimeout
                };
                self.protocol_error(sh, st, reason);
            }
            State::Probing { probe, .. } => {
                // The driver never reported: decide now so the addg status stays in budget.
                sh.probes.remove(&probe);
                self.probe_verdict(sh, st, now, ProbeOutcome::TimedOut);
            }
            State::Registered { .. } => self.shut(sh, st, Removal::Silence),
            State::Closing => {}
        }
    }

    /// The connection is gone: forget its game at once.
    pub(crate) fn on_closed(&mut self, sh: &mut Shared, st: &mut WzStats) {
        if self.partial && self.state != State::Closing {
            st.protocol_error(ProtocolError::Truncated);
        }
        sh.forget(st, self.take_held());
    }

    /// Count the refusal, send its status, then close.
    fn refuse(&mut self, sh: &mut Shared, st: &mut WzStats, verdict: Verdict) {
        st.refuse(verdict.reason);
        sh.send_status(self.id, verdict.status, &verdict.text);
        self.shut(sh, st, Removal::Refused);
    }

    /// Count the error and close (see [`Shared::protocol_error`]); also for an error found
    /// before the legacy parser ran (a v4 handshake with the wrong version).
    pub(crate) fn protocol_error(
        &mut self,
        sh: &mut Shared,
        st: &mut WzStats,
        reason: ProtocolError,
    ) {
        sh.protocol_error(st, self.id, self.take_held(), reason);
    }

    /// Drop everything this connection holds and ask the driver to close it, once.
    fn shut(&mut self, sh: &mut Shared, st: &mut WzStats, removal: Removal) {
        sh.shut(st, self.id, self.take_held(), removal);
    }

    /// Take out what this connection holds in [`Shared`] (the deadline, a reserved id, the
    /// game and its probe) for [`Shared::release`]; the state becomes Closing. `None` if it
    /// already was.
    fn take_held(&mut self) -> Option<Held> {
        let (game, probe) = match std::mem::replace(&mut self.state, State::Closing) {
            State::Closing => return None,
            State::Probing { game_id, probe, .. } => (Some(game_id), Some(probe)),
            State::Registered { game_id, .. } => (Some(game_id), None),
            State::Fresh | State::AwaitingStruct => (None, None),
        };
        Some(Held {
            timer: self.timer.take(),
            reserved_id: self.reserved.take(),
            game,
            probe,
            verification: None,
        })
    }
}
