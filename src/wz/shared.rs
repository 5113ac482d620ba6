//! [`Shared`]: the state every Warzone connection works on, whatever its protocol: the
//! configuration, the game table, the timer wheel, the probes and password checks in
//! flight, the login sessions and the queue of [`WzOutput`]s; plus [`Held`], what one
//! connection holds in it, so that both connection kinds close through one path.
//!
//! Implements the bookkeeping of docs/protocols/wz-lobby.md "Behaviour" (one deadline per
//! connection, a game leaves the list the moment its connection goes). The state machines
//! (`legacy`, `v4`) call down into it; it calls nothing above it. What it must not do:
//! decide anything about a protocol (that is the state machines' and `admission`'s job),
//! read a clock, or hold a resource that no connection's [`Held`] accounts for.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::accounts::sessions::Sessions;
use crate::accounts::tokens::TokenSource;
use crate::accounts::UserId;
use crate::ratelimit::{PerIpConfig, PerIpLimiter};
use crate::time::{TimerKey, TimerWheel};
use crate::wire::directory::{GameRecord, GAME_RECORD_LEN};
use crate::wire::wz::push_status;

use super::games::GameTable;
use super::policy::NamePolicy;
use super::stats::{ProtocolError, Removal, WzStats};
use super::types::{ConnId, JobId, ProbeId, WzConfig, WzOutput, ADDG_REPLY_BUDGET, PROBE_GRACE};

/// Timer granularity: deadlines fire at most this late.
const TIMER_TICK: Duration = Duration::from_millis(10);

/// Timer wheel slots (one revolution = 40.96 s; later deadlines wait a level up).
const TIMER_SLOTS: usize = 4096;

/// State shared by every connection kind: configuration, games, timers, outputs.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: WzConfig,
    pub(crate) policy: NamePolicy,
    pub(crate) table: GameTable,
    pub(crate) outputs: VecDeque<WzOutput>,
    /// One entry per connection with a deadline; the value is the connection, whose state
    /// says what the deadline means.
    pub(crate) timers: TimerWheel<ConnId>,
    pub(crate) limiter: PerIpLimiter,
    /// Probes in flight and the connection waiting for each.
    pub(crate) probes: HashMap<ProbeId, ConnId>,
    next_probe: u64,
    /// Password verifications in flight and the connection waiting for each.
    pub(crate) verifications: HashMap<JobId, ConnId>,
    next_job: u64,
    /// v4 login sessions.
    pub(crate) sessions: Sessions,
    /// The account name of each user who logged in (for `addPlayer`'s `username`); one
    /// entry per account, so bounded by the database.
    pub(crate) user_names: HashMap<UserId, String>,
    /// Other nodes' listed games (whole [`GameRecord`]s, at most one full list), listed
    /// after this node's own; empty when this node is not one of a group.
    pub(crate) remote_games: Vec<u8>,
}

/// Everything one connection holds in [`Shared`], taken out of the connection when it
/// closes so that [`Shared::release`] gives it all back in one place.
#[derive(Debug, Default)]
pub(crate) struct Held {
    /// The connection's one deadline.
    pub(crate) timer: Option<TimerKey>,
    /// A game id reserved (by a legacy `gaId`) that no game took.
    pub(crate) reserved_id: Option<u32>,
    /// The connection's game in the table, listed or being probed.
    pub(crate) game: Option<u32>,
    /// The probe in flight for that game.
    pub(crate) probe: Option<ProbeId>,
    /// The password verification in flight for the connection's `login`.
    pub(crate) verification: Option<JobId>,
}

impl Shared {
    /// Empty state under `config`, its timer wheel starting at `now`, session ids drawn
    /// from `session_ids`.
    pub(crate) fn new(config: WzConfig, now: Instant, session_ids: TokenSource) -> Shared {
        let limiter = PerIpLimiter::new(PerIpConfig {
            rate: config.registrations_per_minute,
            per: Duration::from_secs(60),
            burst: config.registration_burst,
            byte_rate: 0,
            byte_burst: 0,
            max_entries: config.rate_limit_table,
        });
        Shared {
            policy: NamePolicy::new(&config.banned_words),
            table: GameTable::new(config.max_games, config.max_games_per_ip),
            outputs: VecDeque::new(),
            timers: TimerWheel::new(now, TIMER_TICK, TIMER_SLOTS),
            limiter,
            probes: HashMap::new(),
            next_probe: 1,
            verifications: HashMap::new(),
            next_job: 1,
            sessions: Sessions::new(config.session_ttl, config.max_sessions, session_ids),
            user_names: HashMap::new(),
            remote_games: Vec::new(),
            config,
        }
    }

    /// Other nodes' listed games, in the order the driver handed them over.
    pub(crate) fn remote_games(&self) -> impl Iterator<Item = GameRecord<'_>> + Clone {
        self.remote_games
            .chunks_exact(GAME_RECORD_LEN)
            .filter_map(|chunk| <&[u8; GAME_RECORD_LEN]>::try_from(chunk).ok())
            .map(GameRecord::from_bytes)
    }

    /// Replace the connection's timer with one at `deadline`.
    pub(crate) fn schedule(&mut self, timer: &mut Option<TimerKey>, conn: ConnId, at: Instant) {
        self.cancel(timer);
        *timer = Some(self.timers.insert(at, conn));
    }

    /// Cancel the connection's timer, if any.
    pub(crate) fn cancel(&mut self, timer: &mut Option<TimerKey>) {
        if let Some(key) = timer.take() {
            self.timers.cancel(key);
        }
    }

    /// Restart a connection's silence deadline.
    pub(crate) fn refresh_silence(
        &mut self,
        timer: &mut Option<TimerKey>,
        conn: ConnId,
        now: Instant,
    ) {
        let deadline = now + self.config.silence_timeout;
        self.schedule(timer, conn, deadline);
    }

    /// Queue bytes for `conn`.
    pub(crate) fn send(&mut self, conn: ConnId, bytes: Vec<u8>) {
        self.outputs.push_back(WzOutput::Send { conn, bytes });
    }

    /// Queue a legacy status (`code` and text) for `conn`.
    pub(crate) fn send_status(&mut self, conn: ConnId, code: u32, motd: &str) {
        let mut bytes = Vec::new();
        push_status(&mut bytes, code, motd.as_bytes());
        self.send(conn, bytes);
    }

    /// Ask the driver to close `conn` once what is queued for it is flushed.
    pub(crate) fn close(&mut self, conn: ConnId) {
        self.outputs.push_back(WzOutput::Close { conn });
    }

    /// Ask the driver to feed `conn`'s buffered bytes again.
    pub(crate) fn resume(&mut self, conn: ConnId) {
        self.outputs.push_back(WzOutput::Resume { conn });
    }

    /// Emit a password verification for `conn` and return its job id.
    pub(crate) fn start_verify(
        &mut self,
        conn: ConnId,
        username: String,
        password: String,
    ) -> JobId {
        let job = JobId(self.next_job);
        self.next_job = self.next_job.wrapping_add(1);
        self.verifications.insert(job, conn);
        self.outputs.push_back(WzOutput::Verify {
            conn,
            job,
            username,
            password,
        });
        job
    }

    /// Emit a probe of `target` for `conn`, count it, and set the connection's deadline to
    /// when the core decides without the driver's answer (the probe timeout plus
    /// [`PROBE_GRACE`], within [`ADDG_REPLY_BUDGET`]). Returns the probe's id.
    pub(crate) fn start_probe(
        &mut self,
        st: &mut WzStats,
        conn: ConnId,
        timer: &mut Option<TimerKey>,
        now: Instant,
        target: SocketAddr,
        send_wzlr: bool,
    ) -> ProbeId {
        let probe = ProbeId(self.next_probe);
        self.next_probe = self.next_probe.wrapping_add(1);
        self.probes.insert(probe, conn);
        self.outputs.push_back(WzOutput::Probe {
            probe,
            addr: target,
            send_wzlr,
        });
        st.probes_started += 1;
        let wait = (self.config.probe_timeout + PROBE_GRACE).min(ADDG_REPLY_BUDGET);
        self.schedule(timer, conn, now + wait);
        probe
    }

    /// A game passed every check (and its probe): show it in lists from now on.
    pub(crate) fn list_game(&mut self, st: &mut WzStats, game_id: u32) {
        if let Some(game) = self.table.get_mut(game_id) {
            game.listed = true;
        }
        st.games_listed += 1;
    }

    /// Take a game out of the table (the list) and count why.
    pub(crate) fn remove_game(&mut self, st: &mut WzStats, game_id: u32, removal: Removal) {
        if self.table.remove(game_id).is_some() {
            st.removed(removal);
        }
    }

    /// Give back everything a connection held: its deadline, its reserved id, its probe or
    /// password check in flight, and its game, whose removal is counted as `removal`.
    pub(crate) fn release(&mut self, st: &mut WzStats, held: Held, removal: Removal) {
        let Held {
            mut timer,
            reserved_id,
            game,
            probe,
            verification,
        } = held;
        self.cancel(&mut timer);
        if let Some(id) = reserved_id {
            self.table.release_id(id);
        }
        if let Some(probe) = probe {
            self.probes.remove(&probe);
        }
        if let Some(job) = verification {
            self.verifications.remove(&job);
        }
        if let Some(game_id) = game {
            self.remove_game(st, game_id, removal);
        }
    }

    /// Close a connection from the core's side: give back what it held and ask the driver
    /// to close it. `held` is `None` when the connection was already closing, and then
    /// nothing happens: a connection is shut once.
    pub(crate) fn shut(
        &mut self,
        st: &mut WzStats,
        conn: ConnId,
        held: Option<Held>,
        removal: Removal,
    ) {
        if let Some(held) = held {
            self.release(st, held, removal);
            self.close(conn);
        }
    }

    /// The connection is gone, closed by the peer or the driver: give back what it held,
    /// its game counted as closed. `None` (it was shut already) gives back nothing.
    pub(crate) fn forget(&mut self, st: &mut WzStats, held: Option<Held>) {
        if let Some(held) = held {
            self.release(st, held, Removal::Closed);
        }
    }

    /// Count a protocol error (even on a closing connection: the peer still sent it) and
    /// shut the connection for it.
    pub(crate) fn protocol_error(
        &mut self,
        st: &mut WzStats,
        conn: ConnId,
        held: Option<Held>,
        reason: ProtocolError,
    ) {
        st.protocol_error(reason);
        self.shut(st, conn, held, Removal::ProtocolError);
    }
}
