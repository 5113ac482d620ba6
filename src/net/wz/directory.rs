//! The Warzone driver's side of the directory (`crate::directory::games`): it hands this
//! node's listed games to the `lobbyd-directory` thread and gives the core the other nodes'
//! games as that thread last read them, so every list (legacy and v4) shows them after the
//! node's own. Registration stays local: nothing here touches a game of another node.
//!
//! The same contract as the rooms' bridge ([`crate::net::directory`]): a change of the local
//! games is queued with `try_send` at most every 100 ms ([`Handover`]) (a full queue drops it and
//! counts; the generation still differs, so it is offered again), reads arrive through the
//! loop's waker, and the other nodes' games are dropped [`TTL`] after the last good read, so
//! while Redis is down or stalled the node lists its own games only. No protocol logic here.

use std::time::Instant;

use crate::directory::{GamesLink, Handover, SubmitError, TTL};
use crate::metrics::Snapshot;
use crate::wire::directory::MAX_NODE_GAMES;
use crate::wz::WzLobby;

/// This node's Warzone games in the directory, and the other nodes' in the core.
pub struct DirectoryGames {
    link: GamesLink,
    /// `(node, games)` of the read the core's remote games come from.
    per_node: Vec<(u8, usize)>,
    /// When that read was made; `None` once it expired (or before the first).
    read_at: Option<Instant>,
    /// The hand-overs of the core's listed games.
    handover: Handover,
    /// Game tables dropped because the thread's queue was full.
    dropped: u64,
    /// Other nodes' games tables that did not parse, over every read.
    bad_tables: u64,
}

impl std::fmt::Debug for DirectoryGames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectoryGames")
            .field("per_node", &self.per_node)
            .field("read_at", &self.read_at)
            .field("handover", &self.handover)
            .finish_non_exhaustive()
    }
}

impl DirectoryGames {
    /// Shares this node's games through `link`.
    pub fn new(link: GamesLink) -> DirectoryGames {
        DirectoryGames {
            link,
            per_node: Vec::new(),
            read_at: None,
            handover: Handover::default(),
            dropped: 0,
            bad_tables: 0,
        }
    }

    /// Takes the thread's reads into `core`, drops an expired one, and hands `core`'s
    /// listed games to the thread when they changed (at most every 100 ms ([`Handover`])).
    pub fn sync(&mut self, core: &mut WzLobby, now: Instant) {
        while let Some((remote, read_at)) = self.link.try_recv() {
            self.bad_tables += remote.bad_tables as u64;
            self.per_node = remote.per_node;
            self.read_at = Some(read_at);
            core.handle_remote_games(remote.records);
        }
        if self.read_at.is_some_and(|at| now >= at + TTL) {
            self.read_at = None;
            self.per_node.clear();
            core.handle_remote_games(Vec::new());
        }
        let generation = core.list_generation();
        if self.handover.is_due(generation, now) {
            let mut records = Vec::new();
            core.listed_records(MAX_NODE_GAMES, &mut records);
            let taken = match self.link.publish(generation, records) {
                Ok(()) | Err(SubmitError::Stopped) => true,
                Err(SubmitError::Full) => {
                    self.dropped += 1;
                    false
                }
            };
            self.handover.tried(generation, now, taken);
        }
    }

    /// When [`DirectoryGames::sync`] is next due: a pending hand-over of the games at
    /// `generation`, or the expiry of the last read.
    pub fn next_deadline(&self, generation: u64) -> Option<Instant> {
        let expiry = self.read_at.map(|at| at + TTL);
        let publish = self.handover.due_at(generation, Instant::now());
        publish.into_iter().chain(expiry).min()
    }

    /// Calls `f(name, label, value)` for the counters and gauges (`remote` is the core's
    /// count of other nodes' games).
    pub fn visit(&self, remote: usize, mut f: impl FnMut(&'static str, &'static str, u64)) {
        f("directory_remote_games", "", remote as u64);
        f("directory_games_dropped_total", "", self.dropped);
        f("directory_bad_game_tables_total", "", self.bad_tables);
    }

    /// Adds each other node's games, as last read, to the status page's rows.
    pub fn add_nodes(&self, now: Instant, snap: &mut Snapshot) {
        let Some(read_at) = self.read_at else {
            return;
        };
        let age = u64::try_from(now.saturating_duration_since(read_at).as_millis());
        for &(node, games) in &self.per_node {
            snap.add_directory_node(node, 0, games, age.unwrap_or(u64::MAX));
        }
    }
}
