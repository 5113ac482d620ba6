//! A node's inbox in the directory (docs/OPERATING.md "More than one process"): the Redis
//! stream `lobbyd:inbox:{node}` through which a JOIN_ROOM of a node's room is asked of it by
//! the node a client asked, and answered into the asker's own inbox. Entries are one field,
//! `m`, whose value is an [`InboxRepr`] (`lobbyd-wire`'s `directory`).
//!
//! Sending is the `lobbyd-directory` thread's, on its command connection ([`send`]:
//! `XADD ... MAXLEN ~ 1000`, so an inbox nobody reads stays bounded). Reading is this file's
//! own thread, `lobbyd-inbox`, on a second connection: `XREAD BLOCK` [`INBOX_BLOCK`] (short,
//! so a clean stop takes at most that long), then `TIME` once a batch is in hand, for the
//! Redis server's clock when it is handled. An ask whose entry id (the server's clock when
//! it was added) is more than [`STALE_AFTER`] older than that is dropped and counted: its
//! asker has answered its client JOIN_FAILED already, so a node resumed after a stall does
//! not reserve seats for asks long answered. No node's own clock is compared with another's.
//! On (re)connect it reads from the newest entry then (as `$` would, without missing an
//! entry added between two reads). What it reads is handed to `mod.rs`, which passes it to
//! the loop as `Report::Inbox` through the same channel and waker as the other reports.
//! Imports only `wire`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use redis::{Connection, ConnectionInfo, Value};

use crate::wire::directory::{AnswerRepr, AskRepr, InboxRepr};

/// How long one `XREAD` waits for an entry.
pub const INBOX_BLOCK: Duration = Duration::from_millis(150);
/// An inbox keeps about this many entries (`MAXLEN ~`).
pub const INBOX_MAXLEN: usize = 1000;
/// An ask older than this (by the Redis server's clock) is dropped: its asker gave up.
pub const STALE_AFTER: Duration = Duration::from_millis(250);
/// Entries one read takes at most.
const READ_COUNT: usize = 256;

/// A JOIN_ROOM asked of a room's owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// The asker's request id.
    pub req: u64,
    /// The room.
    pub room: u32,
    /// The client's address.
    pub client: SocketAddr,
    /// The password it offered.
    pub password: Vec<u8>,
}

/// An owner's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// The ask's request id.
    pub req: u64,
    /// The room.
    pub room: u32,
    /// 0 granted, else the owner's refusal code.
    pub outcome: u8,
    /// The room's instance port when granted.
    pub port: u16,
}

/// What another node put in this node's inbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboxMessage {
    /// Node `from` asks this node, the owner, to decide a JOIN_ROOM.
    Ask {
        /// The asking node: where the answer goes.
        from: u8,
        /// The JOIN_ROOM.
        ask: Ask,
    },
    /// The owner `from` answers one of this node's asks.
    Answer {
        /// The owner.
        from: u8,
        /// Its decision.
        answer: Answer,
    },
}

/// The inbox stream of node `node`.
pub fn inbox_key(node: u8) -> String {
    format!("lobbyd:inbox:{node}")
}

/// Adds `entry` to node `to`'s inbox, trimmed to about [`INBOX_MAXLEN`] entries.
pub(super) fn send(conn: &mut Connection, to: u8, entry: &InboxRepr<'_>) -> redis::RedisResult<()> {
    let mut bytes = vec![0; entry.buffer_len()];
    entry.emit(&mut bytes);
    redis::cmd("XADD")
        .arg(inbox_key(to))
        .arg("MAXLEN")
        .arg("~")
        .arg(INBOX_MAXLEN)
        .arg("*")
        .arg("m")
        .arg(bytes)
        .query(conn)
}

/// The entry for an ask `node` sends.
pub(super) fn ask_entry(node: u8, ask: &Ask) -> InboxRepr<'_> {
    InboxRepr::Ask(AskRepr {
        from: node,
        request: ask.req,
        room: ask.room,
        client: ask.client,
        password: &ask.password,
    })
}

/// The entry for an answer `node` sends.
pub(super) fn answer_entry(node: u8, answer: &Answer) -> InboxRepr<'static> {
    InboxRepr::Answer(AnswerRepr {
        from: node,
        request: answer.req,
        room: answer.room,
        outcome: answer.outcome,
        port: answer.port,
    })
}

/// How the reader connects and reconnects.
#[derive(Debug, Clone, Copy)]
pub(super) struct ReaderTimes {
    /// Connect and write timeout (a read waits [`INBOX_BLOCK`] longer).
    pub(super) io_timeout: Duration,
    /// The first reconnection delay.
    pub(super) backoff_min: Duration,
    /// The longest reconnection delay.
    pub(super) backoff_max: Duration,
}

/// Starts the `lobbyd-inbox` thread of node `node`, which hands each non-empty read to
/// `deliver`; it stops within [`INBOX_BLOCK`] plus the I/O timeout of `stop` being set.
pub(super) fn spawn_reader(
    node: u8,
    info: ConnectionInfo,
    times: ReaderTimes,
    deliver: Box<dyn Fn(Batch) + Send>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("lobbyd-inbox".into())
        .spawn(move || {
            let mut reader = Reader {
                node,
                key: inbox_key(node),
                info,
                times,
                deliver,
                stop,
            };
            reader.run();
        })
}

struct Reader {
    node: u8,
    key: String,
    info: ConnectionInfo,
    times: ReaderTimes,
    deliver: Box<dyn Fn(Batch) + Send>,
    stop: Arc<AtomicBool>,
}

/// What one read brought.
#[derive(Debug, Default)]
pub(super) struct Batch {
    /// Asks and answers, in the inbox's order.
    pub(super) messages: Vec<InboxMessage>,
    /// Asks dropped for their age.
    pub(super) stale: u64,
    /// Entries that did not parse.
    pub(super) bad: u64,
}

impl Reader {
    fn run(&mut self) {
        let mut backoff = self.times.backoff_min;
        let mut warned = false;
        while !self.stop.load(Ordering::Relaxed) {
            let result = self.connect().and_then(|(mut conn, last)| {
                backoff = self.times.backoff_min;
                warned = false;
                self.serve(&mut conn, last)
            });
            if let Err(e) = result {
                if !warned {
                    warned = true;
                    log::warn!("directory: node {} inbox unreadable: {e}", self.node);
                }
                self.pause(backoff);
                backoff = (backoff * 2).min(self.times.backoff_max);
            }
        }
    }

    /// Sleeps `wait`, in short steps so a stop is seen.
    fn pause(&self, wait: Duration) {
        let step = Duration::from_millis(50);
        let mut left = wait;
        while !left.is_zero() && !self.stop.load(Ordering::Relaxed) {
            let nap = left.min(step);
            std::thread::sleep(nap);
            left -= nap;
        }
    }

    /// Connects; returns the connection and the newest entry id now.
    fn connect(&self) -> redis::RedisResult<(Connection, String)> {
        let client = redis::Client::open(self.info.clone())?;
        let io = self.times.io_timeout;
        let mut conn = client.get_connection_with_timeout(io)?;
        conn.set_read_timeout(Some(INBOX_BLOCK + io))?;
        conn.set_write_timeout(Some(io))?;
        let newest: Value = redis::cmd("XREVRANGE")
            .arg(&self.key)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1)
            .query(&mut conn)?;
        let last = match &newest {
            Value::Array(entries) => entries.first().and_then(entry_id),
            _ => None,
        };
        Ok((conn, last.unwrap_or_else(|| "0-0".to_owned())))
    }

    /// Reads until stopped or a call fails.
    fn serve(&mut self, conn: &mut Connection, mut last: String) -> redis::RedisResult<()> {
        while !self.stop.load(Ordering::Relaxed) {
            let read: Value = redis::cmd("XREAD")
                .arg("COUNT")
                .arg(READ_COUNT)
                .arg("BLOCK")
                .arg(INBOX_BLOCK.as_millis() as u64)
                .arg("STREAMS")
                .arg(&self.key)
                .arg(&last)
                .query(conn)?;
            if matches!(read, Value::Nil) {
                continue;
            }
            // The server's clock now, after the entries were received (not when they were
            // sent: a reply that waited in the socket while this process was stopped would
            // carry a clock as old as its entries).
            let time: Vec<u64> = redis::cmd("TIME").query(conn)?;
            let now_ms = match time[..] {
                [secs, micros] => secs * 1000 + micros / 1000,
                _ => 0,
            };
            let batch = read_batch(&read, now_ms, &mut last);
            (self.deliver)(batch);
        }
        Ok(())
    }
}

/// The entries of an `XREAD` reply read at `now_ms` (the Redis server's clock), moving
/// `last` past them: asks older than [`STALE_AFTER`] and entries that do not parse are
/// counted, not kept.
fn read_batch(read: &Value, now_ms: u64, last: &mut String) -> Batch {
    let mut batch = Batch::default();
    // RESP2: [[key, [entry, ...]]]; RESP3: {key: [entry, ...]}.
    let entries = match read {
        Value::Array(streams) => streams.first().and_then(|s| match s {
            Value::Array(pair) => pair.get(1),
            _ => None,
        }),
        Value::Map(streams) => streams.first().map(|(_, entries)| entries),
        _ => None,
    };
    let Some(Value::Array(entries)) = entries else {
        return batch;
    };
    for entry in entries {
        let Some(id) = entry_id(entry) else {
            batch.bad += 1;
            continue;
        };
        let added_ms = id
            .split('-')
            .next()
            .and_then(|ms| ms.parse::<u64>().ok())
            .unwrap_or(0);
        *last = id;
        match entry_message(entry) {
            Some(InboxMessage::Ask { .. })
                if now_ms.saturating_sub(added_ms) > STALE_AFTER.as_millis() as u64 =>
            {
                batch.stale += 1;
            }
            Some(message) => batch.messages.push(message),
            None => batch.bad += 1,
        }
    }
    batch
}

/// A stream entry's id (`[id, [field, value, ...]]`).
fn entry_id(entry: &Value) -> Option<String> {
    let Value::Array(parts) = entry else {
        return None;
    };
    match parts.first()? {
        Value::BulkString(id) => String::from_utf8(id.clone()).ok(),
        Value::SimpleString(id) => Some(id.clone()),
        _ => None,
    }
}

/// A stream entry's message: its field `m`, parsed.
fn entry_message(entry: &Value) -> Option<InboxMessage> {
    let Value::Array(parts) = entry else {
        return None;
    };
    let Some(Value::Array(fields)) = parts.get(1) else {
        return None;
    };
    let value = fields.chunks_exact(2).find_map(|pair| match pair {
        [Value::BulkString(name), Value::BulkString(value)] if name == b"m" => Some(value),
        _ => None,
    })?;
    Some(match InboxRepr::parse(value).ok()? {
        InboxRepr::Ask(ask) => InboxMessage::Ask {
            from: ask.from,
            ask: Ask {
                req: ask.request,
                room: ask.room,
                client: ask.client,
                password: ask.password.to_vec(),
            },
        },
        InboxRepr::Answer(answer) => InboxMessage::Answer {
            from: answer.from,
            answer: Answer {
                req: answer.request,
                room: answer.room,
                outcome: answer.outcome,
                port: answer.port,
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, value: Vec<u8>) -> Value {
        Value::Array(vec![
            Value::BulkString(id.as_bytes().to_vec()),
            Value::Array(vec![
                Value::BulkString(b"m".to_vec()),
                Value::BulkString(value),
            ]),
        ])
    }

    fn bytes(entry: &InboxRepr<'_>) -> Vec<u8> {
        let mut buf = vec![0; entry.buffer_len()];
        entry.emit(&mut buf);
        buf
    }

    #[test]
    fn stale_asks_and_bad_entries_are_counted_not_kept() {
        let ask = Ask {
            req: 7,
            room: 1 << 24 | 1,
            client: "127.0.0.2:5000".parse().unwrap(),
            password: Vec::new(),
        };
        let answer = Answer {
            req: 8,
            room: 3 << 24 | 1,
            outcome: 0,
            port: 4400,
        };
        let read = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"lobbyd:inbox:1".to_vec()),
            Value::Array(vec![
                // Added 1 s before the read: stale.
                entry("9000-0", bytes(&ask_entry(2, &ask))),
                // An answer is never stale: the core drops it if its ask timed out.
                entry("9001-0", bytes(&answer_entry(3, &answer))),
                entry("9900-0", vec![9, 9]),
                entry("9950-0", bytes(&ask_entry(2, &ask))),
            ]),
        ])]);
        let mut last = "0-0".to_owned();
        let batch = read_batch(&read, 10_000, &mut last);
        assert_eq!((batch.stale, batch.bad), (1, 1));
        assert_eq!(
            batch.messages,
            [
                InboxMessage::Answer { from: 3, answer },
                InboxMessage::Ask { from: 2, ask }
            ]
        );
        assert_eq!(last, "9950-0");
        // A timed-out read changes nothing.
        let batch = read_batch(&Value::Nil, 10_000, &mut last);
        assert!(batch.messages.is_empty());
        assert_eq!(last, "9950-0");
    }
}
