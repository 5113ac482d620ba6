//! Game servers of the operator's, one per room (`--instance-exec`; docs/OPERATING.md, "A
//! game server per room"), in place of lobbyd's own relay instances.
//!
//! [`GameServers::start`] takes a port of `--instance-ports` (bound once to see that it is
//! free, then released for the game server to bind), fills in the command's placeholders and
//! spawns it without a shell, in a process group of its own, stdin from `/dev/null`, stdout and
//! stderr into pipes. Nothing here waits on a child: its exit is a readiness event on its
//! pidfd (`pidfd_open`, registered in the poll), after which `try_wait` (`waitpid` with
//! `WNOHANG`) collects it at once, so no zombie is left; its output pipes are non-blocking and
//! read a bounded amount per event, cut into lines of at most [`MAX_LINE`] bytes and logged
//! with the room's id under one shared line budget (what is over it is counted, not logged).
//! A spawn is one `posix_spawn` (or fork and exec) on the loop: it returns once the program is
//! executing or has failed to.
//!
//! [`GameServers::stop`] sends SIGTERM to the server's process group and, if it is still
//! there `--instance-stop-grace` later, SIGKILL (the front end's deadline wakes the loop for
//! it). At shutdown every server is stopped the same way and the loop waits for them at most
//! the grace (and [`KILL_WAIT`] after a SIGKILL). Records of exited servers are removed after
//! the event batch, like instance sockets, so a reused slab key never sees a stale event.
//! Who decides when a room starts or ends is the core; nothing here calls into it.

use std::collections::HashMap;
use std::io::{self, Read};
use std::net::IpAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use mio::unix::pipe::Receiver;
use mio::unix::SourceFd;
use mio::{Interest, Registry};
use rustix::process::{kill_process_group, pidfd_open, Pid, PidfdFlags, Signal};
use slab::Slab;

use crate::config::{CommandTemplate, Placeholders};
use crate::rtype::RoomId;

use crate::net::rtype::instance::PortPool;
use crate::net::rtype::stats::{ExitCause, GameServerStats, SpawnFailure};
use crate::net::token::Target;
use crate::net::warn::WarnBudget;

/// The longest line of a game server's output that is logged; the rest of a longer line is
/// dropped (the line is marked cut).
pub const MAX_LINE: usize = 512;

/// Bytes read from one output pipe per readiness event (then the loop serves others and
/// comes back): a chatty game server costs the loop a bounded slice.
const PIPE_READ_BUDGET: usize = 16 * 1024;

/// How long the shutdown still waits for game servers after their SIGKILL.
pub const KILL_WAIT: Duration = Duration::from_millis(200);

/// Game-server output lines logged per minute, all servers together, and at once.
const LINES_PER_MINUTE: u64 = 1200;
const LINES_BURST: u64 = 200;

/// Which output pipe an event is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// The game server's stdout.
    Out,
    /// Its stderr.
    Err,
}

impl Stream {
    fn as_str(self) -> &'static str {
        match self {
            Stream::Out => "stdout",
            Stream::Err => "stderr",
        }
    }
}

/// One output pipe and the line it is in the middle of.
#[derive(Debug)]
struct LogPipe {
    pipe: Receiver,
    /// The current line's first bytes (at most [`MAX_LINE`]).
    partial: Vec<u8>,
    /// The current line is longer than [`MAX_LINE`]: the rest is dropped.
    cut: bool,
}

/// lobbyd asked the server to stop.
#[derive(Clone, Copy, Debug)]
struct Stopping {
    /// When SIGKILL follows the SIGTERM.
    kill_at: Instant,
    /// When SIGKILL was sent.
    killed: Option<Instant>,
}

/// One running (or just exited) game server.
#[derive(Debug)]
struct GameServer {
    room: RoomId,
    port: u16,
    child: Child,
    /// The process's pid, which is also its process group's id.
    pid: Pid,
    pidfd: OwnedFd,
    out: Option<LogPipe>,
    err: Option<LogPipe>,
    stopping: Option<Stopping>,
    /// Collected: its record goes after the event batch.
    exited: bool,
}

/// Every room's game server.
pub struct GameServers {
    command: CommandTemplate,
    stop_grace: Duration,
    ports: PortPool,
    bind_ip: IpAddr,
    servers: Slab<GameServer>,
    by_room: HashMap<RoomId, usize>,
    /// Slab keys of collected servers, removed after the event batch.
    closing: Vec<usize>,
    /// Servers asked to stop and not collected yet (the SIGKILL deadlines to watch).
    stopping: usize,
    /// Servers killed at start because they could not be watched, until collected.
    strays: Vec<Child>,
    /// The counters.
    pub stats: GameServerStats,
    lines: WarnBudget,
    warnings: WarnBudget,
    churn: WarnBudget,
    read_buf: Box<[u8; 4096]>,
}

impl GameServers {
    /// Runs `command` per room on ports of `ports`, bound on `bind_ip`; `stop_grace`
    /// between SIGTERM and SIGKILL.
    pub fn new(
        command: CommandTemplate,
        stop_grace: Duration,
        ports: PortPool,
        bind_ip: IpAddr,
    ) -> GameServers {
        let now = Instant::now();
        GameServers {
            command,
            stop_grace,
            ports,
            bind_ip,
            servers: Slab::new(),
            by_room: HashMap::new(),
            closing: Vec::new(),
            stopping: 0,
            strays: Vec::new(),
            stats: GameServerStats::default(),
            lines: WarnBudget::at_level(log::Level::Info, now, LINES_PER_MINUTE, LINES_BURST),
            warnings: WarnBudget::new(now, 60, 20),
            churn: WarnBudget::at_level(log::Level::Info, now, 120, 60),
            read_buf: Box::new([0; 4096]),
        }
    }

    /// Game servers alive (started, not collected).
    pub fn running(&self) -> usize {
        self.servers.iter().filter(|(_, s)| !s.exited).count()
    }

    /// Instance ports held by game servers.
    pub fn ports_in_use(&self) -> usize {
        self.ports.in_use()
    }

    /// Starts `room`'s game server; its port, or `None` when no port is free or the
    /// command could not be run (counted and warned about).
    pub fn start(
        &mut self,
        registry: &Registry,
        now: Instant,
        room: RoomId,
        players: u8,
        seed: u32,
    ) -> Option<u16> {
        // Bound to see that the port is free, then closed for the game server to bind.
        let Some((socket, port)) = self.ports.bind(self.bind_ip) else {
            return self.refuse(now, room, SpawnFailure::NoPort, "no instance port is free");
        };
        drop(socket);
        let values = Placeholders {
            port,
            room: room.0,
            players,
            seed,
        };
        let argv = self.command.argv(&values);
        let Some((program, args)) = argv.split_first() else {
            self.ports.release(port);
            return self.refuse(now, room, SpawnFailure::Spawn, "empty command");
        };
        let spawned = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                self.ports.release(port);
                let why = format!("cannot run {program:?}: {e}");
                return self.refuse(now, room, SpawnFailure::Spawn, &why);
            }
        };
        let pid = Pid::from_child(&child);
        let entry = self.servers.vacant_entry();
        let key = entry.key();
        match watch(registry, key, &mut child, pid) {
            Ok((pidfd, out, err)) => {
                entry.insert(GameServer {
                    room,
                    port,
                    child,
                    pid,
                    pidfd,
                    out: Some(out),
                    err: Some(err),
                    stopping: None,
                    exited: false,
                });
            }
            Err(e) => {
                // Unwatched, it could be neither stopped nor its exit seen later: it goes
                // now, and is collected after the event batch (`remove_closed`).
                let _ = kill_process_group(pid, Signal::KILL);
                self.strays.push(child);
                self.ports.release(port);
                let why = format!("cannot watch its process: {e}");
                return self.refuse(now, room, SpawnFailure::Watch, &why);
            }
        }
        self.by_room.insert(room, key);
        self.stats.spawned += 1;
        self.churn.warn(
            now,
            format_args!(
                "{room}: game server pid {} on port {port}: {}",
                pid.as_raw_nonzero(),
                argv.join(" ")
            ),
        );
        Some(port)
    }

    fn refuse(
        &mut self,
        now: Instant,
        room: RoomId,
        reason: SpawnFailure,
        why: &str,
    ) -> Option<u16> {
        self.stats.failed(reason);
        self.warnings.warn(
            now,
            format_args!("{room}: no game server ({why}); room refused"),
        );
        None
    }

    /// `room`'s game server is no longer wanted: SIGTERM to its process group now, SIGKILL
    /// after the grace if it is still there. From now on the room has no server here (a
    /// party may start a new one while this one winds down), and its exit is not reported.
    pub fn stop(&mut self, now: Instant, room: RoomId) {
        if let Some(key) = self.by_room.remove(&room) {
            self.stop_key(now, key);
        }
    }

    fn stop_key(&mut self, now: Instant, key: usize) {
        let Some(server) = self.servers.get_mut(key) else {
            return;
        };
        if server.exited || server.stopping.is_some() {
            return;
        }
        server.stopping = Some(Stopping {
            kill_at: now + self.stop_grace,
            killed: None,
        });
        self.stopping += 1;
        if let Err(e) = kill_process_group(server.pid, Signal::TERM) {
            log::debug!("{}: SIGTERM: {e}", server.room);
        }
        if self.stop_grace.is_zero() {
            self.kill_overdue(now);
        }
    }

    /// Stops every game server (lobbyd is stopping).
    pub fn stop_all(&mut self, now: Instant) {
        self.by_room.clear();
        let keys: Vec<usize> = self.servers.iter().map(|(key, _)| key).collect();
        for key in keys {
            self.stop_key(now, key);
        }
    }

    /// SIGKILL to every process group whose grace is over.
    pub fn kill_overdue(&mut self, now: Instant) {
        if self.stopping == 0 {
            return;
        }
        for (_, server) in self.servers.iter_mut() {
            let Some(stopping) = server.stopping.as_mut() else {
                continue;
            };
            if server.exited || stopping.killed.is_some() || stopping.kill_at > now {
                continue;
            }
            stopping.killed = Some(now);
            if let Err(e) = kill_process_group(server.pid, Signal::KILL) {
                log::debug!("{}: SIGKILL: {e}", server.room);
            }
        }
    }

    /// When the loop must wake next for a SIGKILL.
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.stopping == 0 {
            return None;
        }
        self.servers
            .iter()
            .filter(|(_, s)| !s.exited)
            .filter_map(|(_, s)| s.stopping.filter(|st| st.killed.is_none()))
            .map(|st| st.kill_at)
            .min()
    }

    /// The pidfd of server `key` is readable: collects it if it has exited; the room it
    /// served, for the core, unless lobbyd had stopped it. Its record goes after the batch.
    pub fn exit_event(&mut self, now: Instant, key: usize) -> Option<RoomId> {
        let server = self.servers.get_mut(key).filter(|s| !s.exited)?;
        let status = match server.child.try_wait() {
            Ok(Some(status)) => status,
            Ok(None) => return None,
            Err(e) => {
                log::debug!("{}: waitpid: {e}", server.room);
                return None;
            }
        };
        self.collected(now, key, status)
    }

    /// Records the end of server `key` (collected with `status`): counted by cause, the
    /// rest of its process group told to go, its record closed after the batch. The room
    /// whose game ended by itself, for the core; `None` when lobbyd had stopped it.
    fn collected(&mut self, now: Instant, key: usize, status: ExitStatus) -> Option<RoomId> {
        let server = &mut self.servers[key];
        server.exited = true;
        let cause = match server.stopping {
            Some(stopping) => {
                self.stopping -= 1;
                if stopping.killed.is_some() {
                    ExitCause::Killed
                } else {
                    ExitCause::Stopped
                }
            }
            None if status.success() => ExitCause::Exited,
            None => ExitCause::Failed,
        };
        if server.stopping.is_none() {
            // The leader is gone: whatever it left in its group goes too.
            let _ = kill_process_group(server.pid, Signal::TERM);
        }
        let room = server.room;
        let port = server.port;
        if let Some(i) = ExitCause::ALL.iter().position(|c| *c == cause) {
            self.stats.exited[i] += 1;
        }
        let by_itself = self.by_room.get(&room) == Some(&key);
        if by_itself {
            self.by_room.remove(&room);
        }
        self.closing.push(key);
        let how = match (status.code(), status.signal()) {
            (Some(code), _) => format!("exit status {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            _ => "unknown status".to_string(),
        };
        self.churn.warn(
            now,
            format_args!(
                "{room}: game server on port {port} ended ({}, {how})",
                cause.as_str()
            ),
        );
        by_itself.then_some(room)
    }

    /// Output pipe `stream` of server `key` is readable: reads at most `PIPE_READ_BUDGET`
    /// bytes and logs the complete lines; asks for another event if more may wait.
    pub fn output_event(&mut self, registry: &Registry, now: Instant, key: usize, stream: Stream) {
        let Some(server) = self.servers.get_mut(key) else {
            return;
        };
        let room = server.room;
        let slot = match stream {
            Stream::Out => &mut server.out,
            Stream::Err => &mut server.err,
        };
        let Some(pipe) = slot.as_mut() else {
            return;
        };
        let mut read = 0;
        let ended = loop {
            if read >= PIPE_READ_BUDGET {
                let token = output_target(key, stream).token();
                if let Err(e) = registry.reregister(&mut pipe.pipe, token, Interest::READABLE) {
                    log::debug!("{room}: reregister {}: {e}", stream.as_str());
                }
                break false;
            }
            match pipe.pipe.read(&mut self.read_buf[..]) {
                Ok(0) => break true,
                Ok(n) => {
                    read += n;
                    let mut log = OutputLog {
                        lines: &mut self.lines,
                        stats: &mut self.stats,
                        now,
                        room,
                        stream,
                    };
                    split_lines(pipe, &self.read_buf[..n], &mut |line, cut| {
                        log.line(line, cut)
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    log::debug!("{room}: read {}: {e}", stream.as_str());
                    break true;
                }
            }
        };
        if ended {
            if let Some(mut pipe) = slot.take() {
                self.last_line(now, room, stream, &mut pipe);
                if let Err(e) = registry.deregister(&mut pipe.pipe) {
                    log::debug!("{room}: deregister {}: {e}", stream.as_str());
                }
            }
        }
    }

    /// Logs the unfinished line `pipe` holds (its server is gone or closed the pipe).
    fn last_line(&mut self, now: Instant, room: RoomId, stream: Stream, pipe: &mut LogPipe) {
        if pipe.partial.is_empty() {
            return;
        }
        let mut log = OutputLog {
            lines: &mut self.lines,
            stats: &mut self.stats,
            now,
            room,
            stream,
        };
        log.line(&pipe.partial, pipe.cut);
        pipe.partial.clear();
        pipe.cut = false;
    }

    /// Removes the records of servers collected in this batch: what their pipes still hold
    /// is read (within the usual budget) and logged, their pipes and pidfds deregistered and
    /// closed, their ports back in the pool. Servers that could not be watched and were
    /// killed at start are collected here once they are gone.
    pub fn remove_closed(&mut self, registry: &Registry, now: Instant) {
        self.strays
            .retain_mut(|child| matches!(child.try_wait(), Ok(None)));
        let closing = std::mem::take(&mut self.closing);
        for &key in &closing {
            self.output_event(registry, now, key, Stream::Out);
            self.output_event(registry, now, key, Stream::Err);
        }
        for key in closing {
            let Some(mut server) = self.servers.try_remove(key) else {
                continue;
            };
            let room = server.room;
            for (stream, pipe) in [
                (Stream::Out, &mut server.out),
                (Stream::Err, &mut server.err),
            ] {
                let Some(pipe) = pipe.as_mut() else {
                    continue;
                };
                self.last_line(now, room, stream, pipe);
                if let Err(e) = registry.deregister(&mut pipe.pipe) {
                    log::debug!("{}: deregister pipe: {e}", server.room);
                }
            }
            let fd = server.pidfd.as_raw_fd();
            if let Err(e) = registry.deregister(&mut SourceFd(&fd)) {
                log::debug!("{}: deregister pidfd: {e}", server.room);
            }
            self.ports.release(server.port);
        }
    }

    /// During shutdown: collects every server that has exited, SIGKILLs those past their
    /// grace; true while some are still to be waited for (see [`GameServers::shutdown_wake`]).
    pub fn poll_shutdown(&mut self, now: Instant) -> bool {
        let keys: Vec<usize> = self
            .servers
            .iter()
            .filter(|(_, s)| !s.exited)
            .map(|(key, _)| key)
            .collect();
        for key in keys {
            if let Ok(Some(status)) = self.servers[key].child.try_wait() {
                self.collected(now, key, status);
            }
        }
        self.kill_overdue(now);
        self.shutdown_wake(now).is_some()
    }

    /// During shutdown: when the servers next need the loop (a SIGKILL due, or the end of
    /// the [`KILL_WAIT`] after one), while any alive is still waited for.
    pub fn shutdown_wake(&self, now: Instant) -> Option<Instant> {
        self.servers
            .iter()
            .filter(|(_, s)| !s.exited)
            .filter_map(|(_, s)| s.stopping)
            .map(|st| st.killed.map_or(st.kill_at, |at| at + KILL_WAIT))
            .filter(|at| *at > now)
            .min()
    }

    /// The shutdown wait is over: what has not exited is left to the system (it had its
    /// SIGKILL), and said so.
    pub fn close_all(&mut self) {
        let left = self.running();
        if left > 0 {
            log::warn!("{left} game servers had not exited when lobbyd stopped");
        }
    }
}

/// Where one server's output lines go: the log, under the shared line budget.
struct OutputLog<'a> {
    lines: &'a mut WarnBudget,
    stats: &'a mut GameServerStats,
    now: Instant,
    room: RoomId,
    stream: Stream,
}

impl OutputLog<'_> {
    fn line(&mut self, line: &[u8], cut: bool) {
        let text = String::from_utf8_lossy(line);
        let mark = if cut { " [cut]" } else { "" };
        let before = self.lines.suppressed();
        let (room, stream) = (self.room, self.stream.as_str());
        self.lines.warn(
            self.now,
            format_args!("{room} game server {stream}: {text}{mark}"),
        );
        if self.lines.suppressed() > before {
            self.stats.lines_dropped += 1;
        } else {
            self.stats.lines_logged += 1;
        }
    }
}

/// The target of output pipe `stream` of server `key`.
fn output_target(key: usize, stream: Stream) -> Target {
    match stream {
        Stream::Out => Target::GameServerOut(key),
        Stream::Err => Target::GameServerErr(key),
    }
}

/// Opens a pidfd for the child and registers it and the child's output pipes under `key`.
fn watch(
    registry: &Registry,
    key: usize,
    child: &mut Child,
    pid: Pid,
) -> io::Result<(OwnedFd, LogPipe, LogPipe)> {
    let pidfd = pidfd_open(pid, PidfdFlags::NONBLOCK)?;
    let fd = pidfd.as_raw_fd();
    registry.register(
        &mut SourceFd(&fd),
        Target::GameServer(key).token(),
        Interest::READABLE,
    )?;
    let pipes = (child.stdout.take(), child.stderr.take());
    let (Some(out), Some(err)) = pipes else {
        return Err(io::Error::other("no output pipes"));
    };
    let mut out = LogPipe::new(Receiver::from(out))?;
    let mut err = LogPipe::new(Receiver::from(err))?;
    registry.register(
        &mut out.pipe,
        Target::GameServerOut(key).token(),
        Interest::READABLE,
    )?;
    registry.register(
        &mut err.pipe,
        Target::GameServerErr(key).token(),
        Interest::READABLE,
    )?;
    Ok((pidfd, out, err))
}

impl LogPipe {
    fn new(pipe: Receiver) -> io::Result<LogPipe> {
        pipe.set_nonblocking(true)?;
        Ok(LogPipe {
            pipe,
            partial: Vec::new(),
            cut: false,
        })
    }
}

/// Cuts `bytes` into lines after what `pipe` holds of the current one: `emit(line, cut)` for
/// each complete line (without its newline; at most [`MAX_LINE`] bytes, `cut` when longer);
/// an unfinished line stays in `pipe`.
fn split_lines(pipe: &mut LogPipe, bytes: &[u8], emit: &mut impl FnMut(&[u8], bool)) {
    let mut rest = bytes;
    while let Some(at) = rest.iter().position(|b| *b == b'\n') {
        keep(pipe, &rest[..at]);
        emit(&pipe.partial, pipe.cut);
        pipe.partial.clear();
        pipe.cut = false;
        rest = &rest[at + 1..];
    }
    keep(pipe, rest);
}

/// Adds `bytes` to the current line, up to [`MAX_LINE`].
fn keep(pipe: &mut LogPipe, bytes: &[u8]) {
    let room = MAX_LINE - pipe.partial.len();
    if bytes.len() > room {
        pipe.cut = true;
    }
    pipe.partial
        .extend_from_slice(&bytes[..bytes.len().min(room)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(chunks: &[&[u8]]) -> (Vec<(String, bool)>, usize) {
        let (_sender, receiver) = mio::unix::pipe::new().unwrap();
        let mut pipe = LogPipe::new(receiver).unwrap();
        let mut lines = Vec::new();
        for chunk in chunks {
            split_lines(&mut pipe, chunk, &mut |line, cut| {
                lines.push((String::from_utf8_lossy(line).into_owned(), cut));
            });
        }
        (lines, pipe.partial.len())
    }

    #[test]
    fn output_is_cut_into_bounded_lines() {
        let (lines, left) = lines_of(&[b"one\ntw", b"o\n\nthr", b"ee"]);
        let expect = [("one", false), ("two", false), ("", false)];
        let expect: Vec<(String, bool)> = expect.iter().map(|(l, c)| (l.to_string(), *c)).collect();
        assert_eq!(lines, expect);
        assert_eq!(left, 5, "an unfinished line waits");
        let long = vec![b'x'; MAX_LINE * 3];
        let (lines, left) = lines_of(&[&long, &long, b"\nshort\n"]);
        assert_eq!(lines.len(), 2);
        assert_eq!((lines[0].0.len(), lines[0].1), (MAX_LINE, true));
        assert_eq!(lines[1], ("short".to_string(), false));
        assert_eq!(left, 0);
    }
}
