//! The short profile of `scripts/hostile.sh` (hostile traffic as a shipped,
//! bounded test): the `lobbyd` binary on loopback under every `lobby-load hostile-*` attacker
//! at once, for about ten seconds, while a well-behaved client (`udp-list`, `tcp-join`,
//! `wz-list`, `lobby-join`, and a /metrics scrape every second) uses every front end from
//! addresses no attacker uses. It asserts what must hold on any machine, however loaded: no
//! well-behaved request refused or unanswered, no attacker saw a flooded party's reader
//! dropped or a listener gone, lobbyd alive, its RSS within a bound, and its descriptors back
//! to where they started once the attack is over. Latency is the script's business (timed
//! targets do not belong in tests).

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the attackers run.
const ATTACK: Duration = Duration::from_secs(10);
/// The well-behaved client starts this long after the attackers (their crowds are in by then).
const CLIENT_DELAY: Duration = Duration::from_millis(1500);
/// How long the well-behaved client runs.
const CLIENT_RUN: Duration = Duration::from_secs(7);
/// lobbyd's RSS may not pass this during the attack (the bound of `scripts/hostile.sh`; this
/// short profile, capped at a few hundred connections per front end, peaks near 10 MB).
const RSS_BOUND_KB: u64 = 96 * 1024;
/// Descriptors lobbyd may hold above its start once the attack is over.
const FD_SLACK: usize = 16;
/// The well-behaved client's addresses: no attacker uses them.
const GOOD: &str = "127.0.0.2-127.0.0.250";

/// The `lobbyd` binary of the same build: another package's binary, so Cargo does not name it
/// (`CARGO_BIN_EXE_*` covers this package's only); it sits beside `lobby-load`. `cargo test`
/// at the workspace root (`make test`) builds both before running any test.
fn lobbyd_binary() -> std::path::PathBuf {
    let path = std::path::Path::new(env!("CARGO_BIN_EXE_lobby-load")).with_file_name("lobbyd");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo test` at the workspace root, or `cargo build --bin lobbyd` \
         first",
        path.display()
    );
    path
}

/// The `lobbyd` binary, its listeners, and the thread draining its log.
struct Lobbyd {
    child: Child,
    udp: SocketAddr,
    tcp: SocketAddr,
    wz: SocketAddr,
    general: SocketAddr,
    metrics: SocketAddr,
}

impl Lobbyd {
    fn start() -> Lobbyd {
        let (wz_port, lobby_port) = (common::free_port(), common::free_port());
        let mut child = Command::new(lobbyd_binary())
            // --bind, --port 0, --instance-ports 0 (the rest of them would disable the lobby).
            .args(&common::LOOPBACK_ARGS[..6])
            .args(["--wz-port", &wz_port.to_string()])
            .args(["--lobby-port", &lobby_port.to_string()])
            .args(["--lobby-ws-port", "0"])
            .args(["--metrics", "127.0.0.1:0", "--log", "info"])
            // Caps a crowd of a few hundred reaches, and lobby-join's members leave as they go.
            .args(["--max-conns", "300", "--wz-max-conns", "200"])
            .args(["--lobby-max-conns", "300", "--lobby-resume-grace", "0"])
            .env_remove("RUST_LOG")
            .stderr(Stdio::piped())
            .spawn()
            .expect("lobbyd starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut lines = BufReader::new(stderr).lines();
        let mut found: [Option<SocketAddr>; 5] = [None; 5];
        let labels = [
            "udp room lobby listening on ",
            "tcp lobby listening on ",
            "warzone master server listening on ",
            "general lobby listening on ",
            "metrics endpoint listening on ",
        ];
        for line in lines.by_ref().map_while(Result::ok) {
            for (slot, label) in found.iter_mut().zip(labels) {
                if let Some((_, addr)) = line.split_once(label) {
                    *slot = addr.trim().parse().ok();
                }
            }
            if found.iter().all(Option::is_some) {
                break;
            }
        }
        let [Some(udp), Some(tcp), Some(wz), Some(general), Some(metrics)] = found else {
            let _ = child.kill();
            panic!("lobbyd did not report every listener: {found:?}");
        };
        // Keep draining the log so lobbyd never blocks on a full pipe.
        std::thread::spawn(move || lines.map_while(Result::ok).count());
        Lobbyd {
            child,
            udp,
            tcp,
            wz,
            general,
            metrics,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("lobbyd's /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    fn descriptors(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .expect("lobbyd's descriptors")
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Lobbyd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `lobby-load` run in the background, its output captured.
struct Load {
    name: &'static str,
    child: Child,
}

fn load(name: &'static str, mode: &str, target: SocketAddr, args: &[&str]) -> Load {
    let child = Command::new(env!("CARGO_BIN_EXE_lobby-load"))
        .args([mode, "--target", &target.to_string(), "-q"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lobby-load starts");
    Load { name, child }
}

impl Load {
    /// Waits for the run (killing it past `deadline`) and returns its exit code and output.
    fn finish(mut self, deadline: Instant) -> (Option<i32>, String) {
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                _ => {
                    let _ = self.child.kill();
                    break;
                }
            }
        }
        let mut text = String::new();
        if let Some(mut out) = self.child.stdout.take() {
            let _ = out.read_to_string(&mut text);
        }
        if let Some(mut err) = self.child.stderr.take() {
            let _ = err.read_to_string(&mut text);
        }
        let code = self.child.wait().ok().and_then(|s| s.code());
        (code, text)
    }
}

/// One /metrics fetch: true when a 200 answer came.
fn scrape(metrics: SocketAddr) -> bool {
    let fetch = || -> std::io::Result<String> {
        let mut stream = TcpStream::connect_timeout(&metrics, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")?;
        let mut text = String::new();
        stream.read_to_string(&mut text)?;
        Ok(text)
    };
    fetch().is_ok_and(|text| text.starts_with("HTTP/1.1 200"))
}

/// Waits for every run and returns the failures: a run that did not exit 0, or (for the
/// well-behaved client, whose summaries are JSON) one with an error or a timeout.
fn failures(runs: Vec<Load>, deadline: Instant) -> Vec<String> {
    let mut failed = Vec::new();
    for run in runs {
        let name = run.name;
        let (code, text) = run.finish(deadline);
        let refused = text
            .lines()
            .find(|l| l.starts_with('{'))
            .is_some_and(|json| {
                !json.contains("\"errors\":{}") || !json.contains("\"timeouts\":{}")
            });
        if code != Some(0) || refused {
            failed.push(format!("{name}: exit {code:?}\n{text}"));
        }
    }
    failed
}

#[test]
fn hostile_crowds_never_refuse_a_well_behaved_client() {
    let mut server = Lobbyd::start();
    std::thread::sleep(Duration::from_millis(300));
    let rss_start = server.rss_kb();
    let fds_start = server.descriptors();
    let started = Instant::now();

    // Each attacker from its own 127.x/16: mode, target, sources, crowd and rate.
    let attack = ATTACK.as_secs().to_string();
    let attackers: Vec<Load> = [
        (
            "hostile-udp",
            server.udp,
            "127.1.0.1-127.1.0.255",
            "1",
            "500",
        ),
        (
            "hostile-tcp",
            server.tcp,
            "127.2.0.1-127.2.255.254",
            "400",
            "50",
        ),
        (
            "hostile-wz",
            server.wz,
            "127.3.0.1-127.3.255.254",
            "250",
            "50",
        ),
        (
            "hostile-lobby",
            server.general,
            "127.4.0.1-127.4.255.254",
            "400",
            "50",
        ),
        (
            "hostile-http",
            server.metrics,
            "127.5.0.1-127.5.255.254",
            "80",
            "10",
        ),
    ]
    .into_iter()
    .map(|(mode, target, sources, crowd, rate)| {
        let args = ["--duration", &attack, "--sources", sources];
        load(
            mode,
            mode,
            target,
            &[&args[..], &["--concurrency", crowd, "--rate", rate]].concat(),
        )
    })
    .collect();

    std::thread::sleep(CLIENT_DELAY);
    let run = CLIENT_RUN.as_secs().to_string();
    let client = |mode: &'static str, target, sources: &str, rate: &str, extra: &[&str]| {
        let mut args = vec!["--duration", &run, "--json", "--timeout", "5000"];
        args.extend_from_slice(&["--sources", sources, "--rate", rate]);
        args.extend_from_slice(extra);
        load(mode, mode, target, &args)
    };
    let clients = vec![
        client("udp-list", server.udp, "127.0.0.2", "20", &["--rooms", "0"]),
        client("tcp-join", server.tcp, GOOD, "4", &[]),
        client("wz-list", server.wz, GOOD, "5", &["--rooms", "0"]),
        client("lobby-join", server.general, GOOD, "4", &[]),
    ];

    // Meanwhile: lobbyd's RSS, and a scraper's view of /metrics.
    let mut rss_peak = rss_start;
    let (mut scrapes, mut scrapes_failed) = (0, 0);
    let mut next_scrape = Instant::now();
    while started.elapsed() < ATTACK && server.alive() {
        rss_peak = rss_peak.max(server.rss_kb());
        if Instant::now() >= next_scrape {
            scrapes += 1;
            scrapes_failed += usize::from(!scrape(server.metrics));
            next_scrape += Duration::from_secs(1);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "lobbyd RSS {rss_start} kB at the start, {rss_peak} kB at the peak; {scrapes} scrapes"
    );
    let deadline = started + ATTACK + Duration::from_secs(30);
    let mut failed = failures(clients, deadline);
    failed.extend(failures(attackers, deadline));
    assert!(server.alive(), "lobbyd died");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert!(scrapes > 0);
    assert_eq!(scrapes_failed, 0, "/metrics fetches failed");
    assert!(
        rss_peak <= RSS_BOUND_KB,
        "RSS {rss_start} kB at the start, {rss_peak} kB at the peak"
    );

    // Every attacker connection is gone once the handshake deadlines (5 s) have passed.
    let back_by = Instant::now() + Duration::from_secs(15);
    let mut fds = server.descriptors();
    while fds > fds_start + FD_SLACK && Instant::now() < back_by {
        std::thread::sleep(Duration::from_millis(200));
        fds = server.descriptors();
    }
    eprintln!("lobbyd descriptors: {fds_start} at the start, {fds} after the attack");
    assert!(
        fds <= fds_start + FD_SLACK,
        "{fds} descriptors after the attack, {fds_start} before"
    );
    assert!(server.alive(), "lobbyd died");
}
