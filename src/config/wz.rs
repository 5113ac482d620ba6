//! The Warzone 2100 master server's flags (docs/protocols/wz-lobby.md "Configuration",
//! docs/protocols/wz-v4.md "Login policy"), kept apart from the other protocols' flags.
//!
//! Same contract as the parent module: strings in, a validated [`WzSettings`] or a one-line
//! [`UsageError`] out. Files named by flags (MOTD, banned words, account database) are only
//! recorded here; the server reads them at start and on SIGHUP. It imports the parsing leaf
//! (`super::parse`), never its parent; the parent calls `flags`/`declare`/`settings_from`.

use std::path::PathBuf;
use std::time::Duration;

use getopts::{Matches, Options};

use super::parse::{
    declare_flags, login_policy, number, parse_number, seconds, secs, UsageError, LOGIN_POLICIES,
    MAX_TIMEOUT_SECS, MIN_TIMEOUT_SECS, PORT, WHOLE,
};
use crate::accounts::{LoginPolicy, DEFAULT_DB};
use crate::wire::wz::MAX_MOTD;

/// The port every Warzone 2100 client has built in.
pub const DEFAULT_WZ_PORT: u16 = 9990;

/// The longest probe timeout: 2.3.x/3.x hosts read the `addg` status with a 2.5 s timeout,
/// and the core answers at most 2.3 s after the GAMESTRUCT (see `wz::ADDG_REPLY_BUDGET`).
const MAX_PROBE_TIMEOUT_SECS: f64 = 2.2;

/// `--wz-memory-budget`'s default, in MiB: a `list` reply or a status line is a few
/// kilobytes, so a peer that reads holds almost nothing queued; 16 MiB is 16 full 1 MiB send
/// queues at once, where `--wz-max-conns` (4,096) full queues would be 4 GiB (and their
/// 64 KiB read buffers 256 MiB).
const DEFAULT_MEMORY_BUDGET_MIB: usize = 16;

/// The Warzone 2100 master server's settings. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct WzSettings {
    /// Listener port (`--wz-port`, default 9990); `None` when `--wz-port 0` disables it.
    /// `Some(0)` (set by tests) lets the OS choose.
    pub port: Option<u16>,
    /// The MOTD text (`--motd`); `None` keeps the built-in welcome text.
    pub motd: Option<String>,
    /// A file holding the MOTD (`--motd-file`), read at start and on SIGHUP.
    pub motd_file: Option<PathBuf>,
    /// Probe each game's port before listing it (`--wz-check-reachable on|off`, default on).
    pub check_reachable: bool,
    /// Connect timeout of a reachability probe (`--wz-probe-timeout`, default 2 s).
    pub probe_timeout: Duration,
    /// A registered host silent this long is dropped (`--wz-silence-timeout`, default 90 s).
    pub silence_timeout: Duration,
    /// Lowest netcode version `(major, minor)` accepted (`--wz-min-version`).
    pub min_version: Option<(u32, u32)>,
    /// A file of words refused in game names (`--wz-banned-words`), read at start and on
    /// SIGHUP.
    pub banned_words: Option<PathBuf>,
    /// Most games at once from one address (`--wz-max-games-per-ip`, default 4).
    pub max_games_per_ip: usize,
    /// Most games held at once (`--wz-max-games`, default 1000).
    pub max_games: usize,
    /// Most master-server connections at once (`--wz-max-conns`, default 4096); at the
    /// limit the listener pauses instead of refusing.
    pub max_conns: usize,
    /// Connections from one address beyond this are refused at `addg`
    /// (`--wz-max-conns-per-ip`, default 16).
    pub max_conns_per_ip: usize,
    /// Bytes all master-server send queues and read buffers may hold together
    /// (`--wz-memory-budget`, in MiB, default 16); when full, the connection holding the most
    /// is dropped.
    pub memory_budget: usize,
    /// Game registrations per minute from one address (`--wz-register-rate`, default 30;
    /// bursts of two thirds of it).
    pub registrations_per_minute: u32,
    /// The v4 login policy (`--wz-login`, default optional).
    pub login: LoginPolicy,
    /// The account database (`--db`, default `lobbyd.sqlite`, as `lobbyd user`).
    pub db: PathBuf,
    /// A connection that has not registered a game (legacy) or had a v4 request answered
    /// with success by then is closed (the shared `--handshake-timeout`, default 5 s).
    pub handshake_timeout: Duration,
}

impl Default for WzSettings {
    fn default() -> WzSettings {
        WzSettings {
            port: Some(DEFAULT_WZ_PORT),
            motd: None,
            motd_file: None,
            check_reachable: true,
            probe_timeout: Duration::from_secs(2),
            silence_timeout: Duration::from_secs(90),
            min_version: None,
            banned_words: None,
            max_games_per_ip: 4,
            max_games: 1000,
            max_conns: 4096,
            max_conns_per_ip: 16,
            memory_budget: DEFAULT_MEMORY_BUDGET_MIB << 20,
            registrations_per_minute: 30,
            login: LoginPolicy::Optional,
            db: PathBuf::from(DEFAULT_DB),
            handshake_timeout: Duration::from_secs(5),
        }
    }
}

/// The Warzone flags for `--help`, as (long name, value hint, description).
pub(super) fn flags(d: &WzSettings) -> Vec<(&'static str, &'static str, String)> {
    vec![
        (
            "wz-port",
            "PORT",
            format!(
                "Warzone 2100 master server port; 0 disables it (default {}).",
                d.port.unwrap_or(0)
            ),
        ),
        (
            "motd",
            "TEXT",
            format!("Warzone message of the day, at most {MAX_MOTD} bytes."),
        ),
        (
            "motd-file",
            "PATH",
            "Read the Warzone MOTD from PATH (at start and on SIGHUP).".into(),
        ),
        (
            "wz-check-reachable",
            "on|off",
            "Probe a game's port before listing it (default on).".into(),
        ),
        (
            "wz-probe-timeout",
            "SECS",
            format!(
                "Reachability probe timeout, at most {MAX_PROBE_TIMEOUT_SECS} (default {}).",
                secs(d.probe_timeout)
            ),
        ),
        (
            "wz-silence-timeout",
            "SECS",
            format!(
                "Drop a Warzone host silent this long (default {}).",
                secs(d.silence_timeout)
            ),
        ),
        (
            "wz-min-version",
            "MAJOR.MINOR",
            "Lowest netcode version hosts may have, e.g. 2.98 or 0x4000.0x4f (default none)."
                .into(),
        ),
        (
            "wz-banned-words",
            "FILE",
            "Refuse game names with a word from FILE (reread on SIGHUP).".into(),
        ),
        (
            "wz-max-games-per-ip",
            "N",
            format!(
                "Most Warzone games hosted from one IP address (default {}).",
                d.max_games_per_ip
            ),
        ),
        (
            "wz-max-games",
            "N",
            format!(
                "Most Warzone games listed at once (default {}).",
                d.max_games
            ),
        ),
        (
            "wz-max-conns",
            "N",
            format!(
                "Most Warzone connections at once; at the limit accepting pauses (default {}).",
                d.max_conns
            ),
        ),
        (
            "wz-max-conns-per-ip",
            "N",
            format!(
                "Warzone connections from one IP address that may host (default {}).",
                d.max_conns_per_ip
            ),
        ),
        (
            "wz-memory-budget",
            "MIB",
            format!(
                "Memory all Warzone send queues and read buffers may hold; when full, the \
                 connection holding the most is dropped (default {}).",
                d.memory_budget >> 20
            ),
        ),
        (
            "wz-register-rate",
            "N",
            format!(
                "Warzone game registrations per minute per IP address (default {}).",
                d.registrations_per_minute
            ),
        ),
        (
            "wz-login",
            LOGIN_POLICIES,
            format!("Warzone v4 login policy (default {}).", d.login.as_str()),
        ),
        (
            "db",
            "PATH",
            format!(
                "Account database shared by the Warzone v4 and general lobby logins (default {}).",
                d.db.display()
            ),
        ),
    ]
}

/// Declares the Warzone flags on `options`.
pub(super) fn declare(options: &mut Options, d: &WzSettings) {
    declare_flags(options, &flags(d));
}

/// Builds the Warzone settings from parsed flags.
/// Builds the Warzone settings from parsed flags; `handshake_timeout` is the shared
/// `--handshake-timeout`.
pub(super) fn settings_from(
    m: &Matches,
    d: WzSettings,
    handshake_timeout: Duration,
) -> Result<WzSettings, UsageError> {
    let port = match m.opt_str("wz-port") {
        Some(text) => {
            let port = parse_number("wz-port", &text, PORT, &(0..=u16::MAX))?;
            (port != 0).then_some(port)
        }
        None => d.port,
    };
    let motd = m.opt_str("motd");
    let motd_file = m.opt_str("motd-file").map(PathBuf::from);
    if motd.is_some() && motd_file.is_some() {
        return Err(UsageError::new(
            "--motd and --motd-file exclude each other; give one".to_string(),
        ));
    }
    if let Some(text) = &motd {
        if text.len() > MAX_MOTD {
            return Err(UsageError::new(format!(
                "--motd: {} bytes is longer than {MAX_MOTD}",
                text.len()
            )));
        }
    }
    let check_reachable = match m.opt_str("wz-check-reachable").as_deref() {
        None => d.check_reachable,
        Some("on") => true,
        Some("off") => false,
        Some(other) => {
            return Err(UsageError::new(format!(
                "--wz-check-reachable: {other:?} is not on or off"
            )))
        }
    };
    let login = login_policy(m, "wz-login", d.login)?;
    let min_version = match m.opt_str("wz-min-version") {
        Some(text) => Some(parse_version(&text)?),
        None => d.min_version,
    };
    let path = |flag: &str| match m.opt_str(flag) {
        Some(text) if text.is_empty() => Err(UsageError::new(format!("--{flag}: empty path"))),
        other => Ok(other.map(PathBuf::from)),
    };
    let motd_file = motd_file.filter(|p| !p.as_os_str().is_empty());
    if m.opt_str("motd-file").is_some() && motd_file.is_none() {
        return Err(UsageError::new("--motd-file: empty path".to_string()));
    }
    Ok(WzSettings {
        port,
        motd,
        motd_file,
        check_reachable,
        probe_timeout: seconds(
            m,
            "wz-probe-timeout",
            MIN_TIMEOUT_SECS..=MAX_PROBE_TIMEOUT_SECS,
            d.probe_timeout,
        )?,
        silence_timeout: seconds(
            m,
            "wz-silence-timeout",
            MIN_TIMEOUT_SECS..=MAX_TIMEOUT_SECS,
            d.silence_timeout,
        )?,
        min_version,
        banned_words: path("wz-banned-words")?.or(d.banned_words),
        max_games_per_ip: number(
            m,
            "wz-max-games-per-ip",
            WHOLE,
            1..=usize::from(u16::MAX),
            d.max_games_per_ip,
        )?,
        max_games: number(m, "wz-max-games", WHOLE, 1..=100_000, d.max_games)?,
        max_conns: number(m, "wz-max-conns", WHOLE, 1..=1_000_000, d.max_conns)?,
        max_conns_per_ip: number(
            m,
            "wz-max-conns-per-ip",
            WHOLE,
            1..=1_000_000,
            d.max_conns_per_ip,
        )?,
        memory_budget: number(
            m,
            "wz-memory-budget",
            WHOLE,
            1..=1024 * 1024,
            d.memory_budget >> 20,
        )? << 20,
        registrations_per_minute: number(
            m,
            "wz-register-rate",
            WHOLE,
            1..=1_000_000,
            d.registrations_per_minute,
        )?,
        login,
        db: path("db")?.unwrap_or(d.db),
        handshake_timeout,
    })
}

/// `--wz-min-version`: `MAJOR.MINOR`, each decimal or `0x` hexadecimal (netcode versions:
/// 2.3.7 is 2.98, 3.x 0x1000.0, 4.x 0x4000.N).
fn parse_version(text: &str) -> Result<(u32, u32), UsageError> {
    let component = |s: &str| match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => s.parse::<u32>().ok(),
    };
    text.split_once('.')
        .and_then(|(major, minor)| Some((component(major)?, component(minor)?)))
        .ok_or_else(|| {
            UsageError::new(format!(
                "--wz-min-version: {text:?} is not MAJOR.MINOR (decimal or 0x hex numbers)"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{reason, run};
    use super::*;

    #[test]
    fn defaults() {
        let w = run(&[]).unwrap().wz;
        assert_eq!(w, WzSettings::default());
        assert_eq!(w.port, Some(9990));
        assert!(w.check_reachable);
        assert_eq!(w.login, LoginPolicy::Optional);
        assert_eq!(w.db, PathBuf::from("lobbyd.sqlite"));
        assert_eq!(w.probe_timeout, Duration::from_secs(2));
        assert_eq!(w.silence_timeout, Duration::from_secs(90));
        assert_eq!((w.max_games_per_ip, w.max_games), (4, 1000));
        assert_eq!((w.max_conns, w.max_conns_per_ip), (4096, 16));
        assert_eq!(w.memory_budget, 16 << 20);
        assert_eq!(w.registrations_per_minute, 30);
        assert_eq!((w.motd.as_deref(), w.min_version), (None, None));
    }

    #[test]
    fn values() {
        let w = run(&[
            "--wz-port",
            "0",
            "--motd",
            "hello there",
            "--wz-check-reachable",
            "off",
            "--wz-probe-timeout",
            "0.5",
            "--wz-silence-timeout",
            "30",
            "--wz-min-version",
            "0x4000.0x4f",
            "--wz-banned-words",
            "words.txt",
            "--wz-max-games-per-ip",
            "2",
            "--wz-max-games",
            "10",
            "--wz-max-conns",
            "100",
            "--wz-max-conns-per-ip",
            "3",
            "--wz-register-rate",
            "600",
            "--wz-login",
            "required",
            "--db",
            "/tmp/x.sqlite",
        ])
        .unwrap()
        .wz;
        assert_eq!(w.port, None);
        assert_eq!(w.motd.as_deref(), Some("hello there"));
        assert!(!w.check_reachable);
        assert_eq!(w.probe_timeout, Duration::from_millis(500));
        assert_eq!(w.silence_timeout, Duration::from_secs(30));
        assert_eq!(w.min_version, Some((0x4000, 0x4f)));
        assert_eq!(w.banned_words, Some(PathBuf::from("words.txt")));
        assert_eq!((w.max_games_per_ip, w.max_games), (2, 10));
        assert_eq!((w.max_conns, w.max_conns_per_ip), (100, 3));
        assert_eq!(w.registrations_per_minute, 600);
        assert_eq!(w.login, LoginPolicy::Required);
        assert_eq!(w.db, PathBuf::from("/tmp/x.sqlite"));
        let w = run(&["--wz-port", "9999", "--wz-min-version", "2.98"])
            .unwrap()
            .wz;
        assert_eq!((w.port, w.min_version), (Some(9999), Some((2, 98))));
        let w = run(&["--motd-file", "motd.txt", "--wz-login", "off"])
            .unwrap()
            .wz;
        assert_eq!(w.motd_file, Some(PathBuf::from("motd.txt")));
        assert_eq!(w.login, LoginPolicy::Off);
    }

    #[test]
    fn bad_values() {
        assert_eq!(
            reason(&["--wz-port", "x"]),
            "--wz-port: \"x\" is not a port number (0-65535)"
        );
        assert_eq!(
            reason(&["--wz-check-reachable", "yes"]),
            "--wz-check-reachable: \"yes\" is not on or off"
        );
        assert_eq!(
            reason(&["--wz-login", "always"]),
            "--wz-login: \"always\" is not required, optional or off"
        );
        for bad in ["4", "4.x", ".1", "0x.1", "1.2.3", "-1.0"] {
            assert!(
                reason(&["--wz-min-version", bad])
                    .starts_with(&format!("--wz-min-version: {bad:?} is not MAJOR.MINOR")),
                "{bad}"
            );
        }
        assert!(reason(&["--wz-probe-timeout", "3"]).starts_with("--wz-probe-timeout: \"3\""));
        assert!(reason(&["--wz-probe-timeout", "0"]).starts_with("--wz-probe-timeout: \"0\""));
        assert!(reason(&["--wz-silence-timeout", "0"]).starts_with("--wz-silence-timeout:"));
        assert!(reason(&["--wz-max-games-per-ip", "0"]).starts_with("--wz-max-games-per-ip:"));
        assert!(reason(&["--wz-max-conns", "0"]).starts_with("--wz-max-conns:"));
        assert!(reason(&["--wz-register-rate", "0"]).starts_with("--wz-register-rate:"));
        assert!(reason(&["--wz-max-conns-per-ip", "x"]).starts_with("--wz-max-conns-per-ip:"));
        assert!(reason(&["--wz-max-games", "0"]).starts_with("--wz-max-games:"));
        assert_eq!(
            reason(&["--motd", "a", "--motd-file", "b"]),
            "--motd and --motd-file exclude each other; give one"
        );
        let long = "m".repeat(MAX_MOTD + 1);
        assert_eq!(
            reason(&["--motd", &long]),
            format!("--motd: {} bytes is longer than {MAX_MOTD}", MAX_MOTD + 1)
        );
        assert_eq!(reason(&["--db", ""]), "--db: empty path");
        assert_eq!(reason(&["--motd-file", ""]), "--motd-file: empty path");
    }
}
