//! The general lobby's flags (`--lobby-*`, docs/protocols/general-lobby.md "Limits and
//! flags"), kept apart from the other protocols' flags.
//!
//! Same contract as the parent module: strings in, validated [`GeneralSettings`] or a
//! one-line [`UsageError`] out. The core's own settings are built here as the core's type
//! ([`GeneralConfig`]), so they are not spelled twice; the listener's limits sit beside them.
//! It imports the parsing leaf (`super::parse`), never its parent; the parent calls
//! `flags`/`declare`/`settings_from`.

use std::time::Duration;

use getopts::{Matches, Options};

use super::parse::{
    declare_flags, login_policy, number, parse_number, seconds, secs, UsageError, LOGIN_POLICIES,
    MAX_TIMEOUT_SECS, PORT, WHOLE,
};
use crate::general::{GeneralConfig, HostedKind, HostedSpec};
use crate::wire::general::HEADER_LEN;

/// The general lobby's default port.
pub const DEFAULT_LOBBY_PORT: u16 = 4243;
/// Smallest `--lobby-max-frame`: a SIGN_IN with a 24-byte name, a 255-byte password and a
/// 16-byte token fits.
const MIN_MAX_FRAME: usize = 512;
/// Largest `--lobby-max-frame`: every parameter is at most 65,535 bytes, and a connection's
/// read buffer holds one frame.
const MAX_MAX_FRAME: usize = 1024 * 1024;
/// `--lobby-memory-budget`'s default, in MiB: with the lobby's fixed costs at the default
/// limits the process stays far under 512 MiB (README, "Sizing").
const DEFAULT_MEMORY_BUDGET_MIB: usize = 32;
/// Most server-hosted games of one type.
const MAX_HOSTED: usize = 1000;
/// `--lobby-chat-ip-rate`'s default in members talking at `--lobby-chat-rate`: a household or
/// a LAN behind one address talks freely, 64 connections of one address do not.
const CHAT_IP_RATE_MEMBERS: u64 = 4;

/// The general lobby's settings. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneralSettings {
    /// Listener port (`--lobby-port`, default 4243); `None` when `--lobby-port 0` disables
    /// it. `Some(0)` (set by tests) lets the OS choose.
    pub port: Option<u16>,
    /// Most connections at once (`--lobby-max-conns`, default 10000); at the limit
    /// accepting pauses and resumes below 90 %.
    pub max_conns: usize,
    /// Most connections at once from one address (`--lobby-max-conns-per-ip`, default 64);
    /// more are refused at accept.
    pub max_conns_per_ip: usize,
    /// New connections per minute per address (`--lobby-conn-rate`, default 60); more are
    /// refused at accept.
    pub conn_rate: u32,
    /// Bytes all connections' send queues and partial frames may hold together
    /// (`--lobby-memory-budget`, in MiB, default 32); when full, the connection holding the
    /// most is dropped.
    pub memory_budget: usize,
    /// The core's settings (`--lobby-max-frame`, `--lobby-login`, ...; `--idle-timeout` is
    /// shared with the other lobbies).
    pub core: GeneralConfig,
}

impl Default for GeneralSettings {
    fn default() -> GeneralSettings {
        GeneralSettings {
            port: Some(DEFAULT_LOBBY_PORT),
            max_conns: 10_000,
            max_conns_per_ip: 64,
            conn_rate: 60,
            memory_budget: DEFAULT_MEMORY_BUDGET_MIB << 20,
            core: GeneralConfig::default(),
        }
    }
}

/// The general lobby's flags for `--help`, as (long name, value hint or "" for a switch,
/// description).
pub(super) fn flags(d: &GeneralSettings) -> Vec<(&'static str, &'static str, String)> {
    let c = &d.core;
    let hosted: Vec<&str> = HostedKind::ALL.iter().map(|k| k.name()).collect();
    vec![
        (
            "lobby-port",
            "PORT",
            format!(
                "General lobby port; 0 disables it (default {}).",
                d.port.unwrap_or(0)
            ),
        ),
        (
            "lobby-login",
            LOGIN_POLICIES,
            format!(
                "General lobby sign-in with account passwords (default {}).",
                c.login.as_str()
            ),
        ),
        (
            "lobby-max-frame",
            "BYTES",
            format!(
                "Largest general lobby frame payload, {MIN_MAX_FRAME} to {MAX_MAX_FRAME} \
                 (default {}).",
                c.max_frame
            ),
        ),
        (
            "lobby-sign-in-tries",
            "N",
            format!(
                "Refused sign-ins before the connection is closed (default {}).",
                c.sign_in_tries
            ),
        ),
        (
            "lobby-max-games-per-member",
            "N",
            format!(
                "Games one member may be in at once (default {}).",
                c.max_games_per_member
            ),
        ),
        (
            "lobby-ask-timeout",
            "SECS",
            format!(
                "How long a game owner has to answer a join request (default {}).",
                secs(c.ask_timeout)
            ),
        ),
        (
            "lobby-auto-approve",
            "",
            "Accept every join request that passes the checks without asking the owner.".into(),
        ),
        (
            "lobby-game-data",
            "BYTES",
            format!(
                "Data stored per general lobby game (default {}).",
                c.game_data
            ),
        ),
        (
            "lobby-chat-rate",
            "N",
            format!(
                "Chat lines per second per member, bursts of twice that (default {}).",
                c.chat_rate
            ),
        ),
        (
            "lobby-chat-ip-rate",
            "N",
            format!(
                "Chat lines per second from one IP address, bursts of twice that; 0 is off \
                 (default {}: {CHAT_IP_RATE_MEMBERS} members at the member rate).",
                c.chat_ip_rate
            ),
        ),
        (
            "lobby-chat-budget",
            "BYTES",
            format!(
                "Chat bytes per second delivered lobby-wide (line x recipients); past it, slow \
                 mode; 0 is off (default {}).",
                c.chat_budget
            ),
        ),
        (
            "lobby-max-games-per-ip",
            "N",
            format!(
                "Open games created from one IP address (default {}).",
                c.max_games_per_ip
            ),
        ),
        (
            "lobby-game-data-per-ip",
            "BYTES",
            format!(
                "Game data stored in the games of one IP address (default {}).",
                c.game_data_per_ip
            ),
        ),
        (
            "lobby-resume-grace",
            "SECS",
            format!(
                "How long a dropped member may resume its session; 0 disables (default {}).",
                secs(c.resume_grace)
            ),
        ),
        (
            "lobby-hosted",
            "TYPE=N",
            format!(
                "Keep N server-hosted games of TYPE open ({}), comma-separated (default none).",
                hosted.join(", ")
            ),
        ),
        (
            "lobby-max-members",
            "N",
            format!(
                "Most general lobby members at once (default {}).",
                c.max_members
            ),
        ),
        (
            "lobby-max-conns",
            "N",
            format!(
                "Most general lobby connections; at the limit accepting pauses (default {}).",
                d.max_conns
            ),
        ),
        (
            "lobby-max-conns-per-ip",
            "N",
            format!(
                "General lobby connections from one IP address (default {}).",
                d.max_conns_per_ip
            ),
        ),
        (
            "lobby-conn-rate",
            "N",
            format!(
                "New general lobby connections per minute per IP address (default {}).",
                d.conn_rate
            ),
        ),
        (
            "lobby-memory-budget",
            "MIB",
            format!(
                "Memory all general lobby send queues and partial frames may hold; when full, \
                 the connection holding the most is dropped (default {}).",
                d.memory_budget >> 20
            ),
        ),
    ]
}

/// Declares the general lobby's flags on `options`.
pub(super) fn declare(options: &mut Options, d: &GeneralSettings) {
    declare_flags(options, &flags(d));
}

/// Builds the general lobby's settings from parsed flags; `idle_timeout` is the shared
/// `--idle-timeout`.
pub(super) fn settings_from(
    m: &Matches,
    d: GeneralSettings,
    idle_timeout: Duration,
) -> Result<GeneralSettings, UsageError> {
    let port = match m.opt_str("lobby-port") {
        Some(text) => {
            let port = parse_number("lobby-port", &text, PORT, &(0..=u16::MAX))?;
            (port != 0).then_some(port)
        }
        None => d.port,
    };
    let c = d.core;
    let chat_rate = number(m, "lobby-chat-rate", WHOLE, 1..=1000, c.chat_rate)?;
    let hosted = match m.opt_str("lobby-hosted") {
        Some(text) => parse_hosted(&text)?,
        None => c.hosted.clone(),
    };
    let core = GeneralConfig {
        login: login_policy(m, "lobby-login", c.login)?,
        max_frame: number(
            m,
            "lobby-max-frame",
            WHOLE,
            MIN_MAX_FRAME..=MAX_MAX_FRAME,
            c.max_frame,
        )?,
        sign_in_tries: number(m, "lobby-sign-in-tries", WHOLE, 1..=100, c.sign_in_tries)?,
        max_games_per_member: number(
            m,
            "lobby-max-games-per-member",
            WHOLE,
            1..=1000,
            c.max_games_per_member,
        )?,
        ask_timeout: seconds(
            m,
            "lobby-ask-timeout",
            1.0..=MAX_TIMEOUT_SECS,
            c.ask_timeout,
        )?,
        auto_approve: m.opt_present("lobby-auto-approve") || c.auto_approve,
        game_data: number(
            m,
            "lobby-game-data",
            WHOLE,
            0..=16 * 1024 * 1024,
            c.game_data,
        )?,
        chat_rate,
        chat_burst: chat_rate.saturating_mul(2),
        chat_ip_rate: number(
            m,
            "lobby-chat-ip-rate",
            WHOLE,
            0..=1_000_000,
            chat_rate.saturating_mul(CHAT_IP_RATE_MEMBERS),
        )?,
        chat_budget: number(m, "lobby-chat-budget", WHOLE, 0..=1 << 40, c.chat_budget)?,
        max_games_per_ip: number(
            m,
            "lobby-max-games-per-ip",
            WHOLE,
            1..=1_000_000,
            c.max_games_per_ip,
        )?,
        game_data_per_ip: number(
            m,
            "lobby-game-data-per-ip",
            WHOLE,
            0..=1 << 36,
            c.game_data_per_ip,
        )?,
        resume_grace: seconds(
            m,
            "lobby-resume-grace",
            0.0..=MAX_TIMEOUT_SECS,
            c.resume_grace,
        )?,
        hosted,
        max_members: number(m, "lobby-max-members", WHOLE, 1..=1_000_000, c.max_members)?,
        idle_timeout,
        ..c
    };
    Ok(GeneralSettings {
        port,
        max_conns: number(m, "lobby-max-conns", WHOLE, 1..=1_000_000, d.max_conns)?,
        max_conns_per_ip: number(
            m,
            "lobby-max-conns-per-ip",
            WHOLE,
            1..=1_000_000,
            d.max_conns_per_ip,
        )?,
        conn_rate: number(m, "lobby-conn-rate", WHOLE, 1..=1_000_000_000, d.conn_rate)?,
        memory_budget: number(
            m,
            "lobby-memory-budget",
            WHOLE,
            1..=1024 * 1024,
            d.memory_budget >> 20,
        )? << 20,
        core,
    })
}

/// `--lobby-hosted`: `TYPE=N[,TYPE=N...]`, each type once.
fn parse_hosted(text: &str) -> Result<Vec<HostedSpec>, UsageError> {
    let bad = |why: String| UsageError::new(format!("--lobby-hosted: {text:?}: {why}"));
    let mut specs: Vec<HostedSpec> = Vec::new();
    for item in text.split(',').filter(|item| !item.is_empty()) {
        let (name, count) = item
            .split_once('=')
            .ok_or_else(|| bad(format!("{item:?} is not TYPE=N")))?;
        let kind = HostedKind::from_name(name.trim())
            .ok_or_else(|| bad(format!("no hosted game type {name:?}")))?;
        let count: usize = count
            .trim()
            .parse()
            .ok()
            .filter(|n| (1..=MAX_HOSTED).contains(n))
            .ok_or_else(|| bad(format!("{count:?} is not a number from 1 to {MAX_HOSTED}")))?;
        if specs.iter().any(|spec| spec.kind == kind) {
            return Err(bad(format!("{name:?} is given twice")));
        }
        specs.push(HostedSpec { kind, count });
    }
    Ok(specs)
}

/// The read buffer a connection needs for one whole frame of `max_frame` payload bytes.
pub fn frame_buffer_len(max_frame: usize) -> usize {
    HEADER_LEN + max_frame
}

#[cfg(test)]
mod tests {
    use super::super::tests::{reason, run};
    use super::*;
    use crate::accounts::LoginPolicy;

    #[test]
    fn defaults() {
        let g = run(&[]).unwrap().general;
        assert_eq!(g, GeneralSettings::default());
        assert_eq!(g.port, Some(4243));
        assert_eq!(g.core.max_frame, 16_384);
        assert_eq!(g.core.sign_in_tries, 3);
        assert_eq!(g.core.max_games_per_member, 4);
        assert_eq!(g.core.ask_timeout, Duration::from_secs(30));
        assert!(!g.core.auto_approve);
        assert_eq!(g.core.game_data, 65_536);
        assert_eq!((g.core.chat_rate, g.core.chat_burst), (5, 10));
        assert_eq!((g.core.chat_ip_rate, g.core.chat_budget), (20, 5 << 20));
        assert_eq!(
            (g.core.max_games_per_ip, g.core.game_data_per_ip),
            (16, 256 << 10)
        );
        assert_eq!(g.core.resume_grace, Duration::from_secs(30));
        assert!(g.core.hosted.is_empty());
        assert_eq!(g.core.idle_timeout, Duration::from_secs(30));
    }

    #[test]
    fn values() {
        let g = run(&[
            "--lobby-port",
            "0",
            "--lobby-login",
            "required",
            "--lobby-max-frame",
            "4096",
            "--lobby-sign-in-tries",
            "5",
            "--lobby-max-games-per-member",
            "2",
            "--lobby-ask-timeout",
            "1.5",
            "--lobby-auto-approve",
            "--lobby-game-data",
            "100",
            "--lobby-chat-rate",
            "7",
            "--lobby-chat-budget",
            "0",
            "--lobby-max-games-per-ip",
            "3",
            "--lobby-game-data-per-ip",
            "1000",
            "--lobby-resume-grace",
            "0",
            "--lobby-hosted",
            "tictactoe=3",
            "--lobby-max-members",
            "50",
            "--lobby-max-conns",
            "60",
            "--lobby-max-conns-per-ip",
            "6",
            "--lobby-conn-rate",
            "600",
            "--idle-timeout",
            "12",
        ])
        .unwrap()
        .general;
        assert_eq!(g.port, None);
        assert_eq!(g.core.login, LoginPolicy::Required);
        assert_eq!(g.core.max_frame, 4096);
        assert_eq!(g.core.sign_in_tries, 5);
        assert_eq!(g.core.max_games_per_member, 2);
        assert_eq!(g.core.ask_timeout, Duration::from_millis(1500));
        assert!(g.core.auto_approve);
        assert_eq!(g.core.game_data, 100);
        assert_eq!((g.core.chat_rate, g.core.chat_burst), (7, 14));
        assert_eq!(
            (g.core.chat_ip_rate, g.core.chat_budget),
            (28, 0),
            "derived ip rate"
        );
        assert_eq!(
            (g.core.max_games_per_ip, g.core.game_data_per_ip),
            (3, 1000)
        );
        assert_eq!(g.core.resume_grace, Duration::ZERO);
        assert_eq!(
            g.core.hosted,
            vec![HostedSpec {
                kind: HostedKind::TicTacToe,
                count: 3
            }]
        );
        assert_eq!(g.core.max_members, 50);
        assert_eq!((g.max_conns, g.max_conns_per_ip, g.conn_rate), (60, 6, 600));
        assert_eq!(g.core.idle_timeout, Duration::from_secs(12));
    }

    #[test]
    fn bad_values_are_one_line_errors() {
        for (args, start) in [
            (&["--lobby-port", "70000"][..], "--lobby-port"),
            (&["--lobby-login", "sometimes"][..], "--lobby-login"),
            (&["--lobby-max-frame", "10"][..], "--lobby-max-frame"),
            (&["--lobby-sign-in-tries", "0"][..], "--lobby-sign-in-tries"),
            (&["--lobby-chat-rate", "0"][..], "--lobby-chat-rate"),
            (&["--lobby-chat-ip-rate", "x"][..], "--lobby-chat-ip-rate"),
            (
                &["--lobby-max-games-per-ip", "0"][..],
                "--lobby-max-games-per-ip",
            ),
            (&["--lobby-ask-timeout", "0"][..], "--lobby-ask-timeout"),
            (&["--lobby-hosted", "chess=1"][..], "--lobby-hosted"),
            (&["--lobby-hosted", "tictactoe"][..], "--lobby-hosted"),
            (&["--lobby-hosted", "tictactoe=0"][..], "--lobby-hosted"),
            (
                &["--lobby-hosted", "tictactoe=1,tictactoe=2"][..],
                "--lobby-hosted",
            ),
        ] {
            let why = reason(args);
            assert!(why.starts_with(start), "{args:?}: {why}");
            assert!(!why.contains('\n'), "{args:?}: {why}");
        }
    }

    #[test]
    fn hosted_list() {
        assert_eq!(parse_hosted("").unwrap(), vec![]);
        assert_eq!(
            parse_hosted("tictactoe=2,").unwrap(),
            vec![HostedSpec {
                kind: HostedKind::TicTacToe,
                count: 2
            }]
        );
    }
}
