//! The room directory a group of lobbyd processes shares in Redis (docs/OPERATING.md "More
//! than one process"), and the `lobbyd-directory` thread that speaks Redis for one node, so
//! the event loop never waits on the network for it.
//!
//! **What is stored.** Soft state with a time to live, refreshed by its owner only: no node
//! ever judges another's health. Each node `N` writes
//! - `lobbyd:node:{N}`: a random token, claimed with `SET NX` and kept with a compare-and-set
//!   script, so a second live process with the same `--node-id` is refused (it logs why and
//!   serves alone);
//! - `lobbyd:rooms:{N}`: its listable UDP rooms ([`crate::wire::directory`]), rewritten on
//!   change (the loop hands a changed table over at most every [`COALESCE`], and the thread
//!   writes it at once: coalescing twice would add up to a second period) and every
//!   [`REFRESH`];
//! - `INCR lobbyd:changes` with each write: a change counter the other nodes poll every
//!   [`NUDGE_POLL`], so a change reaches them without waiting for their [`REFRESH`] read.
//!
//! Both node keys expire [`TTL`] after the last write, so a node that dies or stalls leaves
//! every list by itself, and one that comes back is listed again at its next write. Every
//! [`READ_PERIOD`] (and when the change counter moved) the thread reads every other node's rooms
//! key with one `MGET` and hands the loop the merged records ([`RemoteRooms`]: joinable rooms
//! first), ready to copy into a ROOM_LIST.
//!
//! **The thread's contract** (the shape of the accounts' password worker): commands come in
//! through a bounded queue that the loop fills with `try_send` (a full queue is the loop's to
//! count, never a wait); reports go back through a channel, each followed by `notify` (the
//! loop's waker). Every Redis call has [`IO_TIMEOUT`] read and write timeouts; a failed call
//! drops the connection, reports [`Report::Down`] and reconnects with a jittered backoff
//! doubling from [`BACKOFF_MIN`] to [`BACKOFF_MAX`], then claims and republishes at once.
//! Dropping the [`DirectoryClient`] stops the thread, which deletes its node's keys first
//! when it still owns them, so a node stopped cleanly leaves the lists at once.
//!
//! A JOIN_ROOM of another node's room is asked of its owner through the nodes' inboxes
//! (`inbox.rs`: [`Command::Ask`] and [`Command::Answer`] are sent on this thread's
//! connection, [`Report::Inbox`] comes from a second thread blocked reading this node's).
//! Each node's Warzone games go the same way as its rooms (`lobbyd:wz:{N}`, [`games`]),
//! handed over and reported through a [`GamesLink`] the Warzone front end holds.
//!
//! Imports only `wire`; nothing here knows of the loop or the cores.

pub mod games;
mod handover;
pub mod inbox;
mod rooms;

pub use handover::Handover;
pub use rooms::{merge_tables, RemoteRooms};

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use redis::{Connection, ConnectionAddr, ConnectionInfo, RedisConnectionInfo, Value};

use crate::wire::directory::{NodeRoomsRepr, MAX_NODE_ROOMS};
use crate::wire::udp_lobby::ROOM_RECORD_LEN;
use games::{merge_games, GamesTable, RemoteGames};
use rooms::keyed_values;

/// How long a node's keys live after its last write.
pub const TTL: Duration = Duration::from_millis(3000);
/// How often a node rewrites its keys and reads the others' even when nothing changed.
pub const REFRESH: Duration = Duration::from_secs(1);
/// The shortest time between two hand-overs of a node's rooms (or games) by the loop.
pub const COALESCE: Duration = Duration::from_millis(100);
/// How often a node reads the other nodes' tables even when the change counter did not
/// move: a dead node's keys expire [`TTL`] after its last write, and leave the lists within
/// this period after that.
pub const READ_PERIOD: Duration = Duration::from_millis(500);
/// How often the change counter is polled: a change shows on the other nodes within
/// [`COALESCE`] plus this plus one read (a `GET` of a few bytes 40 times a second per node).
pub const NUDGE_POLL: Duration = Duration::from_millis(25);
/// Connect, read and write timeout of every Redis call.
pub const IO_TIMEOUT: Duration = Duration::from_millis(200);
/// The first reconnection delay.
pub const BACKOFF_MIN: Duration = Duration::from_millis(100);
/// The longest reconnection delay.
pub const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// Commands that may wait for the thread before `submit` refuses.
pub const COMMAND_QUEUE: usize = 64;
/// The largest node id.
const MAX_NODE: u8 = u8::MAX;

/// Claims or keeps `KEYS[1]` for the token `ARGV[1]` for `ARGV[2]` ms: 1 when it is ours
/// now, 0 when another live token holds it.
const CLAIM: &str = "local v = redis.call('GET', KEYS[1]) \
    if v == ARGV[1] or v == false then \
      redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 \
    end return 0";
/// Deletes `KEYS[1]` (the node key), `KEYS[2]` (its rooms) and `KEYS[4]` (its games) if
/// `KEYS[1]` holds `ARGV[1]`, and bumps the change counter `KEYS[3]` so the other nodes
/// read at once.
const RELEASE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
      redis.call('DEL', KEYS[1], KEYS[2], KEYS[4]) redis.call('INCR', KEYS[3]) return 1 \
    end return 0";
/// The change counter every write bumps.
const CHANGES_KEY: &str = "lobbyd:changes";

/// Where the directory's Redis server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirectoryAddr {
    /// `redis://HOST:PORT`.
    Tcp {
        /// The host name or IP address.
        host: String,
        /// The port.
        port: u16,
    },
    /// `redis+unix:///path`: a Redis server's unix socket.
    Unix(PathBuf),
}

impl fmt::Display for DirectoryAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DirectoryAddr::Tcp { host, port } => write!(f, "redis://{host}:{port}"),
            DirectoryAddr::Unix(path) => write!(f, "redis+unix://{}", path.display()),
        }
    }
}

/// What the loop asks of the thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// This node's listable rooms changed: publish these encoded ROOM_LIST records (at most
    /// [`MAX_NODE_ROOMS`]) under `generation`.
    Publish {
        /// Changes whenever the records do.
        generation: u64,
        /// Whole ROOM_LIST records.
        records: Vec<u8>,
    },
    /// Ask node `owner` to decide a JOIN_ROOM of its room (into its inbox).
    Ask {
        /// The room's node.
        owner: u8,
        /// The JOIN_ROOM.
        ask: inbox::Ask,
    },
    /// Answer node `asker`'s ask (into its inbox).
    Answer {
        /// The asking node.
        asker: u8,
        /// The decision.
        answer: inbox::Answer,
    },
    /// This node's listable Warzone games changed: publish these encoded game records (at
    /// most [`crate::wire::directory::MAX_NODE_GAMES`]) under `generation`.
    PublishGames {
        /// Changes whenever the records do.
        generation: u64,
        /// Whole game records ([`crate::wire::directory::GameRecord`]).
        records: Vec<u8>,
    },
}

/// What the thread tells the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// Connected, and this node's id is ours: publishing and reading.
    Up,
    /// Redis is unreachable or failed a call (the reason, one line); reconnecting.
    Down(String),
    /// Another live process holds this node id: the directory is given up for good (the
    /// reason, one line); the node serves alone.
    Refused(String),
    /// A read of the other nodes' rooms, at this instant.
    Remote(RemoteRooms, Instant),
    /// An ask or answer from this node's inbox.
    Inbox(inbox::InboxMessage),
    /// Inbox entries dropped: asks older than [`inbox::STALE_AFTER`] by the Redis server's
    /// clock, and entries that did not parse.
    InboxDropped {
        /// Stale asks.
        stale: u64,
        /// Unparsable entries.
        bad: u64,
    },
}

/// Why a command was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitError {
    /// [`COMMAND_QUEUE`] commands are waiting.
    Full,
    /// The thread is gone (the node id was refused, or it could not start).
    Stopped,
}

/// The handle of one node's `lobbyd-directory` thread.
pub struct DirectoryClient {
    // Dropped before `thread`: the thread stops once every sender is gone.
    commands: Option<SyncSender<Command>>,
    reports: Receiver<Report>,
    /// The other nodes' games, until [`DirectoryClient::games_link`] takes them.
    games: Option<Receiver<(RemoteGames, Instant)>>,
    thread: Arc<Joiner>,
}

/// Joins the threads when the last handle ([`DirectoryClient`] or [`GamesLink`]) goes, after
/// each dropped its command sender, so the directory thread has seen its queue close and
/// released its keys; the inbox reader is told to stop first.
struct Joiner {
    thread: Option<JoinHandle<()>>,
    /// The inbox reader (`inbox.rs`).
    reader: Option<JoinHandle<()>>,
    /// Tells the inbox reader to stop.
    stop: Arc<AtomicBool>,
}

impl Drop for Joiner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // A panic on a thread has nothing left to report to; ignore it.
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

impl DirectoryClient {
    /// Starts the thread for node `node` (1-255) on the Redis server at `addr`; `notify` is
    /// called on it after each report.
    pub fn spawn(
        node: u8,
        addr: DirectoryAddr,
        notify: Arc<dyn Fn() + Send + Sync>,
    ) -> std::io::Result<DirectoryClient> {
        let (commands, queue) = mpsc::sync_channel(COMMAND_QUEUE);
        let (outbox, reports) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let info = connection_info(&addr);
        let times = inbox::ReaderTimes {
            io_timeout: IO_TIMEOUT,
            backoff_min: BACKOFF_MIN,
            backoff_max: BACKOFF_MAX,
        };
        let (reader_outbox, reader_notify) = (outbox.clone(), notify.clone());
        let deliver = Box::new(move |batch: inbox::Batch| {
            let mut sent = false;
            if batch.stale != 0 || batch.bad != 0 {
                let dropped = Report::InboxDropped {
                    stale: batch.stale,
                    bad: batch.bad,
                };
                sent |= reader_outbox.send(dropped).is_ok();
            }
            for message in batch.messages {
                sent |= reader_outbox.send(Report::Inbox(message)).is_ok();
            }
            if sent {
                reader_notify();
            }
        });
        let reader = inbox::spawn_reader(node, info, times, deliver, stop.clone())?;
        let node_stop = stop.clone();
        let (games_outbox, games) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("lobbyd-directory".into())
            .spawn(move || {
                let mut node = Node::new(node, addr, outbox, notify);
                node.games_reports = Some(games_outbox);
                node.run(&queue);
                // Refused or stopped: nothing is asked of this node any more.
                node_stop.store(true, Ordering::Relaxed);
            })?;
        Ok(DirectoryClient {
            commands: Some(commands),
            reports,
            games: Some(games),
            thread: Arc::new(Joiner {
                thread: Some(thread),
                reader: Some(reader),
                stop,
            }),
        })
    }

    /// The Warzone front end's handle on the same thread (once; `None` after).
    pub fn games_link(&mut self) -> Option<GamesLink> {
        Some(GamesLink {
            commands: self.commands.clone(),
            reports: self.games.take()?,
            _thread: Arc::clone(&self.thread),
        })
    }

    /// Queues a command without waiting.
    pub fn submit(&self, command: Command) -> Result<(), SubmitError> {
        try_submit(self.commands.as_ref(), command)
    }

    /// A report, if one is waiting.
    pub fn try_recv(&self) -> Option<Report> {
        self.reports.try_recv().ok()
    }
}

/// The thread's state.
struct Node {
    id: u8,
    info: ConnectionInfo,
    addr: DirectoryAddr,
    /// This process's claim on `lobbyd:node:{id}`.
    token: String,
    node_key: String,
    rooms_key: String,
    /// Every other node's rooms key, for the `MGET`.
    other_keys: Vec<String>,
    reports: mpsc::Sender<Report>,
    /// Where reads of the other nodes' games go (the [`GamesLink`]).
    games_reports: Option<mpsc::Sender<(RemoteGames, Instant)>>,
    /// This node's games and every node's games key.
    games: GamesTable,
    notify: Arc<dyn Fn() + Send + Sync>,
    conn: Option<Connection>,
    /// The next connection attempt, while down.
    reconnect_at: Instant,
    backoff: Duration,
    /// Whether the last report was `Down` (so it is not repeated each attempt).
    reported_down: bool,
    /// The latest table to publish (header and records).
    table: Vec<u8>,
    /// The latest table is not written yet.
    dirty: bool,
    next_refresh: Instant,
    /// The next read of the other nodes' tables, changed or not.
    next_read: Instant,
    next_poll: Instant,
    /// The change counter as last seen.
    changes: Option<i64>,
    /// A source of jitter.
    rng: u64,
}

impl Node {
    fn new(
        id: u8,
        addr: DirectoryAddr,
        reports: mpsc::Sender<Report>,
        notify: Arc<dyn Fn() + Send + Sync>,
    ) -> Node {
        let seed = getrandom::u64().unwrap_or_else(|_| {
            // No OS randomness: the clock and the process id still tell processes apart.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            nanos ^ u64::from(std::process::id()) << 32
        });
        let info = connection_info(&addr);
        let now = Instant::now();
        let empty = NodeRoomsRepr::new(id, 0, &[]).map_or_else(Vec::new, |t| {
            let mut buf = vec![0; t.buffer_len()];
            t.emit(&mut buf);
            buf
        });
        Node {
            id,
            info,
            addr,
            token: format!("{seed:016x}-{}", std::process::id()),
            node_key: format!("lobbyd:node:{id}"),
            rooms_key: format!("lobbyd:rooms:{id}"),
            other_keys: (1..=MAX_NODE)
                .filter(|&n| n != id)
                .map(|n| format!("lobbyd:rooms:{n}"))
                .collect(),
            reports,
            games_reports: None,
            games: GamesTable::new(id),
            notify,
            conn: None,
            reconnect_at: now,
            backoff: BACKOFF_MIN,
            reported_down: false,
            table: empty,
            dirty: true,
            next_refresh: now,
            next_read: now,
            next_poll: now,
            changes: None,
            rng: seed | 1,
        }
    }

    fn report(&self, report: Report) {
        if self.reports.send(report).is_ok() {
            (self.notify)();
        }
    }

    /// Serves until the command queue closes or the node id is refused.
    fn run(&mut self, inbox: &Receiver<Command>) {
        loop {
            let now = Instant::now();
            if self.conn.is_none() && now >= self.reconnect_at && !self.connect() {
                return;
            }
            if self.conn.is_some() {
                if let Err(e) = self.due_work(Instant::now()) {
                    self.down(&e);
                }
            }
            let wake = self.next_wake();
            let wait = wake.saturating_duration_since(Instant::now());
            match inbox.recv_timeout(wait) {
                Ok(Command::Publish {
                    generation,
                    records,
                }) => self.set_table(generation, &records),
                Ok(Command::Ask { owner, ask }) => {
                    let entry = inbox::ask_entry(self.id, &ask);
                    self.send_inbox(owner, &entry);
                }
                Ok(Command::Answer { asker, answer }) => {
                    let entry = inbox::answer_entry(self.id, &answer);
                    self.send_inbox(asker, &entry);
                }
                Ok(Command::PublishGames {
                    generation,
                    records,
                }) => self.games.set(self.id, generation, &records),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.release();
                    return;
                }
            }
        }
    }

    /// Adds `entry` to node `to`'s inbox; while down it is dropped (an ask's asker times
    /// out, an answer's ask too).
    fn send_inbox(&mut self, to: u8, entry: &crate::wire::directory::InboxRepr<'_>) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        if let Err(e) = inbox::send(conn, to, entry) {
            self.down(&e);
        }
    }

    /// When the thread next has something to do.
    fn next_wake(&self) -> Instant {
        if self.conn.is_none() {
            return self.reconnect_at;
        }
        if self.dirty || self.games.dirty {
            return Instant::now();
        }
        self.next_refresh.min(self.next_poll)
    }

    fn set_table(&mut self, generation: u64, records: &[u8]) {
        let cut = records.len().min(MAX_NODE_ROOMS * ROOM_RECORD_LEN);
        let cut = cut - cut % ROOM_RECORD_LEN;
        if let Some(table) = NodeRoomsRepr::new(self.id, generation, &records[..cut]) {
            self.table.resize(table.buffer_len(), 0);
            table.emit(&mut self.table);
            self.dirty = true;
        }
    }

    /// Connects and claims the node id; false when the id is refused (the thread stops).
    fn connect(&mut self) -> bool {
        let result = redis::Client::open(self.info.clone())
            .and_then(|client| client.get_connection_with_timeout(IO_TIMEOUT))
            .and_then(|conn| {
                conn.set_read_timeout(Some(IO_TIMEOUT))?;
                conn.set_write_timeout(Some(IO_TIMEOUT))?;
                Ok(conn)
            });
        let mut conn = match result {
            Ok(conn) => conn,
            Err(e) => {
                self.down(&e);
                return true;
            }
        };
        match self.claim(&mut conn) {
            Ok(true) => {}
            Ok(false) => {
                let reason = format!(
                    "node id {} is held by another live process on {} (same --node-id \
                     twice?): serving this node's rooms alone",
                    self.id, self.addr
                );
                log::error!("directory: {reason}");
                self.report(Report::Refused(reason));
                return false;
            }
            Err(e) => {
                self.down(&e);
                return true;
            }
        }
        log::info!("directory: node {} connected to {}", self.id, self.addr);
        self.conn = Some(conn);
        self.backoff = BACKOFF_MIN;
        self.reported_down = false;
        // Republish and read at once.
        let now = Instant::now();
        self.dirty = true;
        self.next_refresh = now;
        self.next_read = now;
        self.next_poll = now;
        self.changes = None;
        self.report(Report::Up);
        true
    }

    /// Claims or keeps the node key: whether it is ours.
    fn claim(&self, conn: &mut Connection) -> redis::RedisResult<bool> {
        let ours: i64 = redis::cmd("EVAL")
            .arg(CLAIM)
            .arg(1)
            .arg(&self.node_key)
            .arg(&self.token)
            .arg(TTL.as_millis() as u64)
            .query(conn)?;
        Ok(ours == 1)
    }

    /// A failed call: drop the connection and try again after the backoff.
    fn down(&mut self, e: &redis::RedisError) {
        self.conn = None;
        let jitter = self.next_random() % 500 + 500; // 50 % to 100 % of the backoff
        let delay = self.backoff * jitter as u32 / 1000;
        self.reconnect_at = Instant::now() + delay;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
        if !self.reported_down {
            self.reported_down = true;
            let reason = format!("{}: {e}", self.addr);
            log::warn!("directory down: {reason}; serving this node's rooms alone until back");
            self.report(Report::Down(reason));
        }
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64: jitter only, no secret.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// Writes what is due, polls the change counter, reads when due.
    fn due_work(&mut self, now: Instant) -> redis::RedisResult<()> {
        let refresh = now >= self.next_refresh;
        // The loop coalesced the hand-over already.
        let write_due = self.dirty || self.games.dirty;
        if refresh || write_due {
            self.write(refresh)?;
            if refresh {
                self.next_refresh = now + REFRESH;
            }
        }
        // A key's expiry bumps no counter: a dead node's tables are seen gone at this read.
        let mut read = now >= self.next_read;
        if now >= self.next_poll {
            self.next_poll = now + NUDGE_POLL;
            let conn = self.conn.as_mut().ok_or_else(not_connected)?;
            let changes: Option<i64> = redis::cmd("GET").arg(CHANGES_KEY).query(conn)?;
            if changes != self.changes {
                self.changes = changes;
                read = true;
            }
        }
        if read {
            self.next_read = now + READ_PERIOD;
            self.read()?;
        }
        Ok(())
    }

    /// Keeps the node key and writes the rooms key (and the games key when it changed or on
    /// a `refresh`), in one round trip; a lost node key (another process took the id while
    /// this one was cut off) ends the claim.
    fn write(&mut self, refresh: bool) -> redis::RedisResult<()> {
        let changed = self.dirty || self.games.dirty;
        let conn = self.conn.as_mut().ok_or_else(not_connected)?;
        let mut pipe = redis::pipe();
        pipe.cmd("EVAL")
            .arg(CLAIM)
            .arg(1)
            .arg(&self.node_key)
            .arg(&self.token)
            .arg(TTL.as_millis() as u64);
        pipe.cmd("SET")
            .arg(&self.rooms_key)
            .arg(&self.table[..])
            .arg("PX")
            .arg(TTL.as_millis() as u64)
            .ignore();
        if let Some(games) = self
            .games
            .table
            .as_ref()
            .filter(|_| refresh || self.games.dirty)
        {
            pipe.cmd("SET")
                .arg(&self.games.key)
                .arg(&games[..])
                .arg("PX")
                .arg(TTL.as_millis() as u64)
                .ignore();
        }
        if changed {
            pipe.cmd("INCR").arg(CHANGES_KEY).ignore();
        }
        let (ours,): (i64,) = pipe.query(conn)?;
        if ours != 1 {
            // The rooms key written above is another process's now: leave it to expire.
            return Err(redis::RedisError::from((
                redis::ErrorKind::ResponseError,
                "node id taken by another process while this one was cut off",
            )));
        }
        self.dirty = false;
        self.games.dirty = false;
        Ok(())
    }

    /// Reads every other node's rooms key (and games key, once this node has a Warzone
    /// front end) in one round trip, and reports them merged.
    fn read(&mut self) -> redis::RedisResult<()> {
        let conn = self.conn.as_mut().ok_or_else(not_connected)?;
        let with_games = self.games.table.is_some();
        let mut pipe = redis::pipe();
        pipe.cmd("MGET").arg(&self.other_keys);
        if with_games {
            pipe.cmd("MGET").arg(&self.games.other_keys);
        }
        let mut replies: Vec<Vec<Value>> = pipe.query(conn)?;
        let read_at = Instant::now();
        let games = if with_games { replies.pop() } else { None };
        let values = replies.pop().unwrap_or_default();
        if let (Some(games), Some(to)) = (games, self.games_reports.as_ref()) {
            let remote = merge_games(keyed_values(&self.games.other_keys, &games));
            if to.send((remote, read_at)).is_ok() {
                (self.notify)();
            }
        }
        let remote = merge_tables(keyed_values(&self.other_keys, &values));
        self.report(Report::Remote(remote, read_at));
        Ok(())
    }

    /// Deletes this node's keys if they are still ours (a clean stop).
    fn release(&mut self) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        let result: redis::RedisResult<i64> = redis::cmd("EVAL")
            .arg(RELEASE)
            .arg(4)
            .arg(&self.node_key)
            .arg(&self.rooms_key)
            .arg(CHANGES_KEY)
            .arg(&self.games.key)
            .arg(&self.token)
            .query(conn);
        if let Err(e) = result {
            log::debug!("directory: keys left to expire: {e}");
        }
    }
}

fn connection_info(addr: &DirectoryAddr) -> ConnectionInfo {
    ConnectionInfo {
        addr: match addr {
            DirectoryAddr::Tcp { host, port } => ConnectionAddr::Tcp(host.clone(), *port),
            DirectoryAddr::Unix(path) => ConnectionAddr::Unix(path.clone()),
        },
        redis: RedisConnectionInfo::default(),
    }
}

/// Queues `command` on the thread's queue without waiting.
fn try_submit(commands: Option<&SyncSender<Command>>, command: Command) -> Result<(), SubmitError> {
    let commands = commands.ok_or(SubmitError::Stopped)?;
    commands.try_send(command).map_err(|e| match e {
        TrySendError::Full(_) => SubmitError::Full,
        TrySendError::Disconnected(_) => SubmitError::Stopped,
    })
}

fn not_connected() -> redis::RedisError {
    redis::RedisError::from((redis::ErrorKind::IoError, "not connected"))
}

/// The Warzone front end's handle on the node's `lobbyd-directory` thread: it hands over
/// this node's games and takes the other nodes' (the same contract as
/// [`DirectoryClient`]: `try_send`, a channel back, the loop's waker).
pub struct GamesLink {
    // Dropped before `_thread`.
    commands: Option<SyncSender<Command>>,
    reports: Receiver<(RemoteGames, Instant)>,
    _thread: Arc<Joiner>,
}

impl GamesLink {
    /// Queues this node's games (whole game records) without waiting.
    pub fn publish(&self, generation: u64, records: Vec<u8>) -> Result<(), SubmitError> {
        let command = Command::PublishGames {
            generation,
            records,
        };
        try_submit(self.commands.as_ref(), command)
    }

    /// A read of the other nodes' games, if one is waiting.
    pub fn try_recv(&self) -> Option<(RemoteGames, Instant)> {
        self.reports.try_recv().ok()
    }
}
