//! `--instance-exec`: a game server of the operator's per room, over real loopback sockets
//! and real processes. The stand-in game server is a Python 3 script written for these tests
//! (standard library only): a UDP echo on its `{port}` that records its arguments, pid and
//! process group in a file once bound, and exits on the word `quit`. With `stubborn` it
//! ignores SIGTERM and starts a `sleep` in its process group, so only SIGKILL to the whole
//! group ends them.

use crate::common;

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::tcp_client::{self, party, ready_all, start_with, COUNTDOWN, GAME_START, START_REQ};
use common::*;
use lobbyd::config::{CommandTemplate, Config, InstanceExecSettings};

const STAND_IN: &str = r#"
import os, signal, socket, subprocess, sys
port, record, players, seed, mode = sys.argv[1:6]
extra = ""
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    extra = str(subprocess.Popen(["sleep", "60"]).pid)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", int(port)))
with open(record + ".tmp", "w") as f:
    f.write(" ".join(sys.argv[1:] + [str(os.getpid()), str(os.getpgid(0)), extra]))
os.rename(record + ".tmp", record)
print("stand-in listening on", port, flush=True)
while True:
    data, peer = s.recvfrom(2048)
    if data == b"quit":
        s.sendto(b"bye", peer)
        sys.exit(0)
    s.sendto(b"echo:" + data, peer)
"#;

/// A directory for one test's stand-in script and records, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("lobbyd-instance-exec-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("stand_in.py"), STAND_IN).unwrap();
        Scratch(dir)
    }

    /// The command: the stand-in with the four placeholders, recording into this directory.
    /// A `stubborn` one ignores SIGTERM from its first instant (a shell's `trap` before the
    /// interpreter starts), so however slowly Python starts, only SIGKILL ends it.
    fn command(&self, mode: &str) -> String {
        let script = self.0.join("stand_in.py");
        let args = format!(
            "{{port}} '{}/room-{{room}}' {{players}} {{seed}} {mode}",
            self.0.display()
        );
        if mode == "stubborn" {
            let shell = format!("trap \"\" TERM; exec python3 {} \"$@\"", script.display());
            format!("sh -c '{shell}' sh {args}")
        } else {
            format!("python3 '{}' {args}", script.display())
        }
    }

    fn record_path(&self, room: u32) -> PathBuf {
        self.0.join(format!("room-{room}"))
    }

    /// What the stand-in of `room` recorded once bound: its argv after the script, its pid,
    /// its process group, and (stubborn) its `sleep`'s pid.
    fn record(&self, room: u32) -> Record {
        self.record_where(room, |_| true)
    }

    /// [`Scratch::record`] of the stand-in of `room` on `port` (a room's next server).
    fn record_on(&self, room: u32, port: u16) -> Record {
        self.record_where(room, |words| words.first() == Some(&port.to_string()))
    }

    fn record_where(&self, room: u32, wanted: impl Fn(&[String]) -> bool) -> Record {
        let path = self.record_path(room);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let words: Vec<String> = text.split(' ').map(str::to_string).collect();
            if words.len() >= 7 && wanted(&words) {
                return Record {
                    args: words[..5].to_vec(),
                    pid: words[5].parse().unwrap(),
                    pgid: words[6].parse().unwrap(),
                    extra: words.get(7).and_then(|w| w.parse().ok()),
                };
            }
            assert!(Instant::now() < deadline, "room {room}: no stand-in record");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[derive(Debug)]
struct Record {
    args: Vec<String>,
    pid: u32,
    pgid: u32,
    extra: Option<u32>,
}

fn exec_settings(command: &str, grace: Duration) -> InstanceExecSettings {
    InstanceExecSettings {
        command: Some(CommandTemplate::parse(command).unwrap()),
        stop_grace: grace,
    }
}

fn exec_config(command: &str, grace: Duration) -> Config {
    Config {
        instance_exec: exec_settings(command, grace),
        ..test_config()
    }
}

/// The TCP lobby with `command` per party and a countdown of `countdown`.
fn party_config(command: &str, grace: Duration, countdown: Duration) -> Config {
    Config {
        instance_exec: exec_settings(command, grace),
        countdown,
        ..tcp_client::tcp_config()
    }
}

/// `pid`'s state letter and parent, or `None` once the process is gone.
fn proc_state(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ppid ...": the command may hold spaces, so read after its ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Waits until `pid` is no longer running: gone, or (when not ours) a zombie of another
/// parent. A zombie whose parent is this process (the in-process lobbyd) fails: nobody
/// collected it.
fn assert_gone(pid: u32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match proc_state(pid) {
            None => return,
            Some(('Z', ppid)) if ppid == std::process::id() => {}
            Some(('Z', _)) => return,
            Some(_) => {}
        }
        assert!(
            Instant::now() < deadline,
            "{what} (pid {pid}) still there: {:?}",
            proc_state(pid)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn create(client: &UdpClient, lobby: SocketAddr) -> Vec<u8> {
    client.send(lobby, &frame(0x01, 0x42, 1, &[]));
    client.recv()
}

/// ROOM_CREATED's room id and port.
fn created(bytes: &[u8]) -> (u32, u16) {
    assert_eq!(&bytes[..2], &[0x02, 0x43], "ROOM_CREATED {bytes:02x?}");
    let room = u32::from_be_bytes(bytes[8..12].try_into().unwrap());
    let port = u16::from_be_bytes([bytes[12], bytes[13]]);
    (room, port)
}

/// The room ids of a LIST_ROOMS reply.
fn listed(client: &UdpClient, lobby: SocketAddr) -> Vec<u32> {
    client.send(lobby, &frame(0x01, 0x40, 2, &[]));
    let bytes = client.recv();
    assert_eq!(&bytes[..2], &[0x02, 0x41]);
    let count = u16::from_be_bytes([bytes[8], bytes[9]]) as usize;
    bytes[10..10 + 13 * count]
        .chunks(13)
        .map(|r| u32::from_be_bytes(r[..4].try_into().unwrap()))
        .collect()
}

fn counter(server: &lobbyd::net::ServerHandle, name: &str, label: &str) -> u64 {
    snapshot(server).counter(name, label).unwrap_or(0)
}

fn echo(port: u16, bytes: &[u8]) -> Vec<u8> {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    socket.send_to(bytes, ("127.0.0.1", port)).unwrap();
    let mut buf = [0u8; 2048];
    let (n, _) = socket.recv_from(&mut buf).expect("the game server answers");
    buf[..n].to_vec()
}

#[test]
fn a_room_runs_its_game_server_until_it_exits() {
    let scratch = Scratch::new("room");
    let server = start(exec_config(
        &scratch.command("normal"),
        Duration::from_secs(5),
    ));
    let lobby = server.udp_lobby_addr().unwrap();
    let client = UdpClient::new();
    let (room, port) = created(&create(&client, lobby));
    let record = scratch.record(room);
    // Each placeholder filled in: the port of ROOM_CREATED, the room, its seats, a seed.
    assert_eq!(record.args[0], port.to_string());
    assert_eq!(
        Path::new(&record.args[1]),
        scratch.record_path(room).as_path()
    );
    assert_eq!(record.args[2], "4", "--max-players");
    assert!(record.args[3].parse::<u32>().is_ok(), "{record:?}");
    assert_eq!(record.pgid, record.pid, "a process group of its own");
    // The client reaches its game server on the port it was given.
    assert_eq!(echo(port, b"hello"), b"echo:hello");
    assert_eq!(listed(&client, lobby), [room]);
    assert_eq!(counter(&server, "game_servers_spawned_total", ""), 1);
    assert_eq!(counter(&server, "game_servers_running", ""), 1);
    // It says its last word and exits: the room is reaped, the process collected.
    assert_eq!(echo(port, b"quit"), b"bye");
    let snap = eventually(&server, Duration::from_secs(10), |s| s.rooms.is_empty());
    assert!(snap.rooms.is_empty(), "{:?}", snap.rooms);
    assert!(listed(&client, lobby).is_empty());
    assert_gone(record.pid, "the exited game server");
    assert_eq!(counter(&server, "game_servers_exited_total", "exited"), 1);
    assert_eq!(counter(&server, "game_servers_running", ""), 0);
    // Its output went to the log, line by line.
    assert!(counter(&server, "game_server_log_lines_total", "") >= 1);
    // The port is free again and the next room gets a server of its own.
    let (next, next_port) = created(&create(&client, lobby));
    assert!(next > room);
    scratch.record(next);
    assert_eq!(echo(next_port, b"again"), b"echo:again");
}

#[test]
fn a_command_that_does_not_exist_refuses_the_room() {
    let server = start(exec_config(
        "/nonexistent/lobbyd-game-server --port {port}",
        Duration::from_secs(1),
    ));
    let lobby = server.udp_lobby_addr().unwrap();
    let client = UdpClient::new();
    // JOIN_FAILED, empty payload: the refusal of CREATE_ROOM.
    assert_eq!(create(&client, lobby), frame(0x02, 0x46, 1, &[]));
    assert!(
        listed(&client, lobby).is_empty(),
        "never listed without a server"
    );
    assert_eq!(
        counter(&server, "game_server_spawn_failures_total", "spawn"),
        1
    );
    assert_eq!(counter(&server, "game_servers_spawned_total", ""), 0);
    assert_eq!(snapshot(&server).ports_in_use, 0, "its port went back");
}

/// A party's game server starts with its countdown, for its players; GAME_START names its
/// port; the game goes on after the lobby connections close.
#[test]
fn a_party_runs_its_game_server_past_its_lobby() {
    let scratch = Scratch::new("party");
    let command = scratch.command("normal");
    let config = party_config(&command, Duration::from_secs(5), Duration::from_secs(1));
    let (server, addr) = start_with(config);
    let (mut clients, _) = party(addr, &["Alice", "Bob"]);
    ready_all(&mut clients);
    clients[0].send(&tcp_client::frame(START_REQ, &[]));
    let game_start = loop {
        let bytes = clients[1].recv();
        if bytes[0] == GAME_START {
            break bytes;
        }
        assert_eq!(bytes[0], COUNTDOWN, "{bytes:02x?}");
    };
    let port = u16::from_le_bytes([game_start[19], game_start[20]]);
    let room = snapshot(&server).rooms[0].room.0;
    let record = scratch.record(room);
    assert_eq!(
        record.args[0],
        port.to_string(),
        "GAME_START names its port"
    );
    assert_eq!(record.args[2], "2", "the party's players");
    assert_eq!(echo(port, b"in game"), b"echo:in game");
    // The lobby connections go (DISCONNECT, linger): the game goes on.
    drop(clients);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(echo(port, b"still"), b"echo:still");

    assert_eq!(echo(port, b"quit"), b"bye");
    assert_gone(record.pid, "the party's game server");
}

/// A party whose countdown is cancelled (a player left) has its game server stopped with
/// SIGTERM. (A countdown long enough for the slowest Python start.)
#[test]
fn a_cancelled_party_has_its_game_server_stopped() {
    let scratch = Scratch::new("cancel");
    let command = scratch.command("normal");
    let config = party_config(&command, Duration::from_secs(5), Duration::from_secs(60));
    let (server, addr) = start_with(config);
    let (mut clients, _) = party(addr, &["Carol", "Dave"]);
    ready_all(&mut clients);
    clients[0].send(&tcp_client::frame(START_REQ, &[]));
    assert_eq!(clients[1].recv()[0], COUNTDOWN);
    let room = snapshot(&server).rooms[0].room.0;
    let stopped = scratch.record(room);
    clients.pop();
    assert_gone(stopped.pid, "the cancelled party's game server");
    let snap = eventually(&server, Duration::from_secs(5), |s| {
        s.counter("game_servers_exited_total", "stopped") == Some(1)
    });
    assert_eq!(
        snap.counter("game_servers_exited_total", "stopped"),
        Some(1)
    );
    assert_eq!(snap.counter("game_servers_running", ""), Some(0));
    assert_eq!(snap.rooms.len(), 1, "the party stays in its lobby");
    assert_eq!(snap.rooms[0].port, None);
}

/// A game server that ignores SIGTERM, and a process it started in its group, get SIGKILL
/// once `--instance-stop-grace` has passed.
#[test]
fn sigkill_to_the_group_after_the_grace() {
    let scratch = Scratch::new("stubborn");
    let command = scratch.command("stubborn");
    let config = party_config(
        &command,
        Duration::from_millis(500),
        Duration::from_secs(60),
    );
    let (server, addr) = start_with(config);
    let (mut clients, _) = party(addr, &["Erin", "Finn"]);
    ready_all(&mut clients);
    clients[0].send(&tcp_client::frame(START_REQ, &[]));
    assert_eq!(clients[1].recv()[0], COUNTDOWN);
    let room = snapshot(&server).rooms[0].room.0;
    let record = scratch.record(room);
    let sleeper = record.extra.expect("the stand-in's sleep");
    let stopped_at = Instant::now();
    clients.pop();
    // SIGTERM is ignored: still running well within the grace.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        matches!(proc_state(record.pid), Some((s, _)) if s != 'Z'),
        "ended before its SIGKILL"
    );
    assert_gone(record.pid, "the stubborn game server");
    assert_gone(sleeper, "the process it started");
    assert!(stopped_at.elapsed() >= Duration::from_millis(500));
    let snap = eventually(&server, Duration::from_secs(5), |s| {
        s.counter("game_servers_exited_total", "killed") == Some(1)
    });
    assert_eq!(snap.counter("game_servers_exited_total", "killed"), Some(1));
}

/// A party whose countdown was cancelled starts again at once: its new game server is the
/// room's, and the old one (ignoring SIGTERM, killed after the grace) ending during the new
/// countdown changes nothing for the party.
#[test]
fn a_stopped_server_ending_late_leaves_the_next_one_alone() {
    let scratch = Scratch::new("restart");
    let command = scratch.command("stubborn");
    // The countdown outlasts the stubborn server's start (a Python interpreter) on a loaded
    // machine: Hal must leave while the first countdown runs.
    let config = party_config(
        &command,
        Duration::from_millis(300),
        Duration::from_secs(10),
    );
    let (server, addr) = start_with(config);
    let (mut clients, _) = party(addr, &["Gus", "Hal"]);
    ready_all(&mut clients);
    clients[0].send(&tcp_client::frame(START_REQ, &[]));
    assert_eq!(clients[0].recv()[0], COUNTDOWN);
    let room = snapshot(&server).rooms[0].room.0;
    // Running (and ignoring SIGTERM) before it is told to stop: only SIGKILL ends it.
    let first = scratch.record(room);
    // Hal leaves: the countdown is cancelled, the first server told to stop.
    clients.pop();
    let mut gus = clients.pop().unwrap();
    let mut cancelled = Vec::new();
    while cancelled.len() < 3 {
        let kind = gus.recv()[0];
        if kind != COUNTDOWN {
            cancelled.push(kind);
        }
    }
    assert_eq!(
        cancelled,
        [0x18, 0x1F, 0x14],
        "PLAYER_LEFT, ERROR, PLAYER_READY"
    );
    // Ivy joins, both get ready, and the countdown starts again with a new server.
    let mut ivy = tcp_client::Client::connect(addr);
    ivy.join("Ivy");
    for client in [&mut gus, &mut ivy] {
        client.send(&tcp_client::frame(0x13, &[1]));
    }
    // Both PLAYER_READY seen (after Ivy's PLAYER_JOIN) before the START_REQ.
    let mut ready = 0;
    while ready < 2 {
        if gus.recv()[0] == 0x14 {
            ready += 1;
        }
    }
    gus.send(&tcp_client::frame(START_REQ, &[]));
    // The first one is killed after its grace, during the second countdown, which goes on
    // to GAME_START, naming the second server's port.
    let game_start = loop {
        let bytes = ivy.recv();
        if bytes[0] == GAME_START {
            break bytes;
        }
        assert!(matches!(bytes[0], 0x12 | 0x14 | COUNTDOWN), "{bytes:02x?}");
    };
    let port = u16::from_le_bytes([game_start[19], game_start[20]]);
    assert_gone(first.pid, "the stopped game server");
    scratch.record_on(room, port);
    assert_eq!(echo(port, b"on"), b"echo:on");
    let snap = eventually(&server, Duration::from_secs(5), |s| {
        s.counter("game_servers_exited_total", "killed") == Some(1)
    });
    assert_eq!(snap.counter("game_servers_exited_total", "killed"), Some(1));
    assert_eq!(snap.counter("game_servers_running", ""), Some(1));
}

/// SIGTERM to the `lobbyd` binary stops every game server before it exits.
#[test]
fn lobbyd_stopping_stops_its_game_servers() {
    use std::io::{BufRead, BufReader};
    let scratch = Scratch::new("shutdown");
    let command = scratch.command("normal");
    let mut args = LOOPBACK_ARGS.to_vec();
    args.extend(["--wz-port", "0", "--tcp-port", "0", "--log", "info"]);
    args.extend(["--instance-exec", &command, "--instance-stop-grace", "3"]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lobbyd"))
        .args(&args)
        .env_remove("RUST_LOG")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("lobbyd starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let lobby: SocketAddr = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| {
            let (_, rest) = line.split_once("] udp room lobby listening on ")?;
            rest.trim().parse().ok()
        })
        .expect("the UDP lobby's address in the log");
    let log = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let client = UdpClient::new();
    let (room, port) = created(&create(&client, lobby));
    let record = scratch.record(room);
    assert_eq!(echo(port, b"ping"), b"echo:ping");
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "lobbyd did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    // Its game server got SIGTERM and was collected by lobbyd before it exited: not left
    // running, and not handed to init as a zombie.
    assert!(
        proc_state(record.pid).is_none(),
        "{:?}",
        proc_state(record.pid)
    );
    let log = log.join().unwrap().join("\n");
    assert!(
        log.contains(&format!(
            "room {room}: game server on port {port} ended (stopped"
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "room {room} game server stdout: stand-in listening on {port}"
        )),
        "{log}"
    );
}
