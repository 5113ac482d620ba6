//! The driver's side of the room directory (`crate::directory`): it hands the R-Type front
//! end's listable rooms to the `lobbyd-directory` thread and keeps the other nodes' rooms,
//! as that thread last read them, in a cache the ROOM_LIST reply copies from.
//!
//! The loop never waits on Redis: a change of the local list is queued with `try_send`
//! (a full queue drops it and counts; the change is sent again at the next chance, since
//! the list generation still differs), at most every 100 ms ([`Handover`]); reports arrive through
//! the loop's waker and are drained in `after_events`. The cache is replaced only by a read
//! that differs from it (so an unchanged directory does not rebuild the reply's records),
//! and is dropped [`TTL`] after the last good read: while Redis is down or stalled the node
//! lists its own rooms only, within [`TTL`] plus one loop wake of the last read, and every
//! local operation goes on as if the node were alone.
//!
//! It also carries the JOIN_ROOMs of other nodes' rooms between the R-Type core and the
//! thread: the core's asks and answers go out with `try_send` ([`DirectoryBridge::ask`],
//! [`DirectoryBridge::answer`]; a full queue drops and counts, and a dropped ask is the
//! core's to refuse), and what arrives in this node's inbox is handed over as core values
//! ([`DirectoryBridge::next_inbound`]). No protocol logic here.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use mio::Waker;

use crate::metrics::{DirectoryView, Snapshot};
use crate::rtype::{JoinFailure, OwnerAnswer, RemoteJoin, RoomId};

use crate::directory::inbox::{Answer, Ask, InboxMessage};
use crate::directory::{
    Command, DirectoryAddr, DirectoryClient, GamesLink, Handover, RemoteRooms, Report, SubmitError,
    TTL,
};

/// What arrived in this node's inbox, as the R-Type core takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inbound {
    /// Node `from` asks this node, the owner, to decide a JOIN_ROOM.
    Ask {
        /// The asking node.
        from: u8,
        /// The JOIN_ROOM.
        ask: RemoteJoin,
    },
    /// An owner's answer to this node's ask `req`.
    Answer {
        /// The ask.
        req: u64,
        /// The decision.
        answer: OwnerAnswer,
    },
}

/// Where the directory stands, for the operators' pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectoryState {
    /// Not connected yet, or reconnecting.
    Down,
    /// Connected, the node id ours.
    Up,
    /// Another live process holds this node id: serving alone for good.
    Refused,
}

/// The directory's counters.
#[derive(Clone, Debug, Default)]
pub struct DirectoryStats {
    /// Commands dropped because the thread's queue was full.
    pub cmd_dropped: u64,
    /// Times the directory went down (Redis unreachable or failing).
    pub downs: u64,
    /// Other nodes' tables that did not parse, over every read.
    pub bad_tables: u64,
    /// Reads of the other nodes' rooms.
    pub reads: u64,
    /// Asks in this node's inbox dropped for their age (their asker gave up).
    pub stale_asks: u64,
    /// Inbox entries that did not parse.
    pub bad_entries: u64,
}

/// This node's link to the directory.
pub struct DirectoryBridge {
    client: DirectoryClient,
    node: u8,
    addr: DirectoryAddr,
    state: DirectoryState,
    /// The other nodes' rooms, as last read (empty when older than [`TTL`]).
    remote: RemoteRooms,
    /// When `remote` was read; `None` once it expired (or before the first read).
    remote_read_at: Option<Instant>,
    /// Changes whenever `remote` does.
    remote_generation: u64,
    /// The last good read, for its age.
    last_read: Option<Instant>,
    /// The hand-overs of the local list.
    handover: Handover,
    started: Instant,
    /// Asks and answers read from this node's inbox, for the core.
    inbound: VecDeque<Inbound>,
    /// The counters.
    pub stats: DirectoryStats,
}

impl DirectoryBridge {
    /// Starts the directory thread of node `node` on `addr`, waking the loop with `waker`.
    pub fn start(
        node: u8,
        addr: DirectoryAddr,
        waker: Arc<Waker>,
    ) -> std::io::Result<DirectoryBridge> {
        log::info!("directory: node {node} on {addr}");
        let notify = Arc::new(move || {
            // A failed wake only delays the report to the loop's next pass.
            let _ = waker.wake();
        });
        let client = DirectoryClient::spawn(node, addr.clone(), notify)?;
        Ok(DirectoryBridge {
            client,
            node,
            addr,
            state: DirectoryState::Down,
            remote: RemoteRooms::default(),
            remote_read_at: None,
            remote_generation: 0,
            last_read: None,
            handover: Handover::default(),
            started: Instant::now(),
            inbound: VecDeque::new(),
            stats: DirectoryStats::default(),
        })
    }

    /// Takes the thread's reports and expires a stale cache; true when the remote rooms
    /// changed (the caller tells the core their new count).
    pub fn poll(&mut self, now: Instant) -> bool {
        let mut changed = false;
        while let Some(report) = self.client.try_recv() {
            match report {
                Report::Up => self.state = DirectoryState::Up,
                Report::Down(_) => {
                    if self.state == DirectoryState::Up {
                        self.stats.downs += 1;
                    }
                    self.state = DirectoryState::Down;
                }
                Report::Refused(_) => {
                    self.state = DirectoryState::Refused;
                    changed |= self.clear();
                }
                Report::Remote(remote, read_at) => {
                    self.stats.reads += 1;
                    self.stats.bad_tables += remote.bad_tables as u64;
                    self.remote_read_at = Some(read_at);
                    self.last_read = Some(read_at);
                    if remote.records != self.remote.records {
                        changed = true;
                        self.remote_generation += 1;
                    }
                    self.remote = remote;
                }
                Report::Inbox(message) => match inbound(message) {
                    Some(message) => self.inbound.push_back(message),
                    None => self.stats.bad_entries += 1,
                },
                Report::InboxDropped { stale, bad } => {
                    self.stats.stale_asks += stale;
                    self.stats.bad_entries += bad;
                }
            }
        }
        if self.remote_read_at.is_some_and(|at| now >= at + TTL) {
            self.remote_read_at = None;
            changed |= self.clear();
        }
        changed
    }

    /// The next ask or answer read from this node's inbox.
    pub fn next_inbound(&mut self) -> Option<Inbound> {
        self.inbound.pop_front()
    }

    /// Whether asks can reach other nodes now.
    pub fn is_up(&self) -> bool {
        self.state == DirectoryState::Up
    }

    /// Hands the core's ask of node `owner` to the thread; false when it could not be
    /// queued (counted), which the core answers with JOIN_FAILED.
    pub fn ask(&mut self, owner: u8, ask: &RemoteJoin) -> bool {
        let command = Command::Ask {
            owner,
            ask: Ask {
                req: ask.req,
                room: ask.room.0,
                client: ask.client,
                password: ask.password().to_vec(),
            },
        };
        let queued = self.client.submit(command).is_ok();
        if !queued {
            self.stats.cmd_dropped += 1;
        }
        queued
    }

    /// Hands the core's answer to node `asker`'s ask `req` to the thread; a full queue
    /// drops it (counted: the asker times out).
    pub fn answer(&mut self, asker: u8, req: u64, answer: OwnerAnswer) {
        let (room, outcome, port) = match answer {
            OwnerAnswer::Granted { room, port } => (room.0, 0, port),
            OwnerAnswer::Refused(reason) => (0, reason.code(), 0),
        };
        let command = Command::Answer {
            asker,
            answer: Answer {
                req,
                room,
                outcome,
                port,
            },
        };
        if self.client.submit(command).is_err() {
            self.stats.cmd_dropped += 1;
        }
    }

    /// Forgets the remote rooms; true if there were any.
    fn clear(&mut self) -> bool {
        self.remote_read_at = None;
        self.remote.nodes = 0;
        self.remote.per_node.clear();
        if self.remote.records.is_empty() {
            return false;
        }
        self.remote.records.clear();
        self.remote_generation += 1;
        true
    }

    /// The other nodes' rooms now: encoded ROOM_LIST records, joinable first.
    pub fn remote_records(&self) -> &[u8] {
        &self.remote.records
    }

    /// How many records [`DirectoryBridge::remote_records`] holds.
    pub fn remote_len(&self) -> usize {
        self.remote.len()
    }

    /// Changes whenever [`DirectoryBridge::remote_records`] does.
    pub fn remote_generation(&self) -> u64 {
        self.remote_generation
    }

    /// Whether the local list at `generation` should be handed over now: it changed since
    /// the last hand-over, which was at least 100 ms ago ([`Handover`]).
    pub fn publish_due(&self, generation: u64, now: Instant) -> bool {
        self.state != DirectoryState::Refused && self.handover.is_due(generation, now)
    }

    /// Hands the local list at `generation` (encoded records) to the thread; a full queue
    /// drops it and counts (it is offered again at the next pass, its generation still new).
    pub fn publish(&mut self, generation: u64, records: &[u8], now: Instant) {
        let command = Command::Publish {
            generation,
            records: records.to_vec(),
        };
        let taken = match self.client.submit(command) {
            Ok(()) => true,
            Err(SubmitError::Full) => {
                self.stats.cmd_dropped += 1;
                false
            }
            // Refused: the thread is gone and the node serves alone.
            Err(SubmitError::Stopped) => true,
        };
        self.handover.tried(generation, now, taken);
    }

    /// When the bridge next needs the loop: a pending hand-over of the local list at
    /// `generation`, or the cache's expiry.
    pub fn next_deadline(&self, generation: u64) -> Option<Instant> {
        let publish = (self.state != DirectoryState::Refused)
            .then(|| self.handover.due_at(generation, Instant::now()))
            .flatten();
        let expiry = self.remote_read_at.map(|at| at + TTL);
        publish.into_iter().chain(expiry).min()
    }

    /// Where the directory stands.
    pub fn state(&self) -> DirectoryState {
        self.state
    }

    /// This node's id.
    pub fn node(&self) -> u8 {
        self.node
    }

    /// The directory's address.
    pub fn addr(&self) -> &DirectoryAddr {
        &self.addr
    }

    /// Other nodes with rooms in the cache.
    pub fn remote_nodes(&self) -> usize {
        self.remote.nodes
    }

    /// Milliseconds since the last good read (since the start before the first).
    pub fn sync_age_ms(&self, now: Instant) -> u64 {
        let since = self.last_read.unwrap_or(self.started);
        u64::try_from(now.saturating_duration_since(since).as_millis()).unwrap_or(u64::MAX)
    }

    /// The Warzone front end's handle on the same directory thread (once).
    pub fn games_link(&mut self) -> Option<GamesLink> {
        self.client.games_link()
    }

    /// Adds each other node's rooms, as last read, to the status page's rows.
    pub fn add_nodes(&self, now: Instant, snap: &mut Snapshot) {
        let age = self.sync_age_ms(now);
        for &(node, rooms) in &self.remote.per_node {
            snap.add_directory_node(node, rooms, 0, age);
        }
    }

    /// The status page's line.
    pub fn view(&self, now: Instant) -> DirectoryView {
        DirectoryView {
            node: self.node,
            address: self.addr.to_string(),
            state: match self.state {
                DirectoryState::Up => "up",
                DirectoryState::Down => "down",
                DirectoryState::Refused => "refused",
            },
            remote_nodes: self.remote.nodes,
            remote_rooms: self.remote_len(),
            sync_age_ms: self.sync_age_ms(now),
        }
    }

    /// Calls `f(name, label, value)` for the directory's counters and gauges.
    pub fn visit(&self, now: Instant, mut f: impl FnMut(&'static str, &'static str, u64)) {
        f(
            "directory_up",
            "",
            u64::from(self.state == DirectoryState::Up),
        );
        f(
            "directory_node_refused",
            "",
            u64::from(self.state == DirectoryState::Refused),
        );
        f("directory_last_sync_age_ms", "", self.sync_age_ms(now));
        f("directory_remote_rooms", "", self.remote_len() as u64);
        f("directory_remote_nodes", "", self.remote.nodes as u64);
        f("directory_cmd_dropped_total", "", self.stats.cmd_dropped);
        f("directory_down_total", "", self.stats.downs);
        f("directory_bad_tables_total", "", self.stats.bad_tables);
        f("directory_reads_total", "", self.stats.reads);
        f("directory_stale_asks_total", "", self.stats.stale_asks);
        f(
            "directory_bad_inbox_entries_total",
            "",
            self.stats.bad_entries,
        );
    }
}

/// An inbox message as the core takes it (`None`: an ask with a password longer than any
/// room's, which the wire format already refuses); an answer naming no known refusal is a
/// refusal for want of the room.
fn inbound(message: InboxMessage) -> Option<Inbound> {
    Some(match message {
        InboxMessage::Ask { from, ask } => Inbound::Ask {
            from,
            ask: RemoteJoin::new(ask.req, RoomId(ask.room), ask.client, &ask.password)?,
        },
        InboxMessage::Answer { answer, .. } => Inbound::Answer {
            req: answer.req,
            answer: match answer.outcome {
                0 => OwnerAnswer::Granted {
                    room: RoomId(answer.room),
                    port: answer.port,
                },
                code => OwnerAnswer::Refused(
                    JoinFailure::from_code(code).unwrap_or(JoinFailure::NoSuchRoom),
                ),
            },
        },
    })
}
