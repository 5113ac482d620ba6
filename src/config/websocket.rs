//! The general lobby's WebSocket port flags (`--lobby-ws-port`, `--lobby-ws-origins`,
//! `--lobby-web`; docs/protocols/general-lobby.md "WebSocket transport"), beside the TCP
//! port's in `general.rs`.
//!
//! Same contract as the parent module: strings in, validated [`WsSettings`] or a one-line
//! [`UsageError`] out. It imports the parsing leaf (`super::parse`), never its parent.
//! Nothing here reads the web directory: the driver loads it at start.

use std::path::PathBuf;

use getopts::{Matches, Options};

use super::parse::{declare_flags, parse_number, UsageError, PORT};

/// The WebSocket port's default.
pub const DEFAULT_LOBBY_WS_PORT: u16 = 4244;

/// The general lobby's WebSocket port. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsSettings {
    /// Listener port (`--lobby-ws-port`, default 4244); `None` when 0 disables it. `Some(0)`
    /// (set by tests) lets the OS choose. Served only while the general lobby is
    /// (`--lobby-port`).
    pub port: Option<u16>,
    /// Browser origins allowed to upgrade (`--lobby-ws-origins`, comma-separated,
    /// `scheme://host[:port]` compared ASCII case-insensitively); empty: any.
    pub origins: Vec<String>,
    /// Static files served on the same port for plain GETs (`--lobby-web DIR`), loaded into
    /// memory at start; `None`: none (every plain GET is 404).
    pub web_dir: Option<PathBuf>,
}

impl Default for WsSettings {
    fn default() -> WsSettings {
        WsSettings {
            port: Some(DEFAULT_LOBBY_WS_PORT),
            origins: Vec::new(),
            web_dir: None,
        }
    }
}

/// The flags for `--help`, as (long name, value hint, description).
pub(super) fn flags(d: &WsSettings) -> Vec<(&'static str, &'static str, String)> {
    vec![
        (
            "lobby-ws-port",
            "PORT",
            format!(
                "General lobby WebSocket port (path /lobby, and static files of --lobby-web); \
                 0 disables it (default {}).",
                d.port.unwrap_or(0)
            ),
        ),
        (
            "lobby-ws-origins",
            "LIST",
            "Browser origins allowed to connect, comma-separated scheme://host[:port]; \
             others get 403 (default any)."
                .into(),
        ),
        (
            "lobby-web",
            "DIR",
            "Serve DIR's files on the WebSocket port (/ is index.html), read at start \
             (default none)."
                .into(),
        ),
    ]
}

/// Declares the flags on `options`.
pub(super) fn declare(options: &mut Options, d: &WsSettings) {
    declare_flags(options, &flags(d));
}

/// Builds the settings from parsed flags.
pub(super) fn settings_from(m: &Matches, d: WsSettings) -> Result<WsSettings, UsageError> {
    let port = match m.opt_str("lobby-ws-port") {
        Some(text) => {
            let port = parse_number("lobby-ws-port", &text, PORT, &(0..=u16::MAX))?;
            (port != 0).then_some(port)
        }
        None => d.port,
    };
    let origins = match m.opt_str("lobby-ws-origins") {
        Some(text) => parse_origins(&text)?,
        None => d.origins,
    };
    let web_dir = match m.opt_str("lobby-web") {
        Some(text) if text.is_empty() => {
            return Err(UsageError::new("--lobby-web: empty directory name".into()))
        }
        Some(text) => Some(PathBuf::from(text)),
        None => d.web_dir,
    };
    Ok(WsSettings {
        port,
        origins,
        web_dir,
    })
}

/// `--lobby-ws-origins`: `scheme://host[:port]` items, comma-separated; `*` alone is any.
fn parse_origins(text: &str) -> Result<Vec<String>, UsageError> {
    let mut origins = Vec::new();
    for item in text
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
    {
        if item == "*" {
            return Ok(Vec::new());
        }
        let well_formed = item.split_once("://").is_some_and(|(scheme, host)| {
            !scheme.is_empty()
                && !host.is_empty()
                && !host.contains('/')
                && item.is_ascii()
                && !item.contains(char::is_whitespace)
        });
        if !well_formed {
            return Err(UsageError::new(format!(
                "--lobby-ws-origins: {item:?} is not scheme://host[:port]"
            )));
        }
        origins.push(item.to_ascii_lowercase());
    }
    Ok(origins)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{reason, run};
    use super::*;

    #[test]
    fn defaults_and_values() {
        let d = run(&[]).unwrap().lobby_ws;
        assert_eq!(d, WsSettings::default());
        assert_eq!(d.port, Some(4244));
        let c = run(&[
            "--lobby-ws-port",
            "0",
            "--lobby-ws-origins",
            "https://Game.example, http://localhost:8080",
            "--lobby-web",
            "examples/web",
        ])
        .unwrap()
        .lobby_ws;
        assert_eq!(c.port, None);
        assert_eq!(
            c.origins,
            ["https://game.example", "http://localhost:8080"].map(String::from)
        );
        assert_eq!(c.web_dir, Some(PathBuf::from("examples/web")));
        assert!(run(&["--lobby-ws-origins", "*"])
            .unwrap()
            .lobby_ws
            .origins
            .is_empty());
    }

    #[test]
    fn refusals() {
        assert!(reason(&["--lobby-ws-origins", "game.example"]).contains("--lobby-ws-origins"));
        assert!(reason(&["--lobby-ws-origins", "https://a/b"]).contains("scheme://host"));
        assert!(reason(&["--lobby-ws-port", "x"]).contains("--lobby-ws-port"));
        assert!(reason(&["--lobby-web", ""]).contains("--lobby-web"));
    }
}
