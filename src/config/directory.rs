//! The flags of a node in a group of lobbyd processes (docs/OPERATING.md "More than one
//! process"): `--node-id`, `--directory` (the Redis server holding the room directory) and
//! `--reuse-port`.
//!
//! Same contract as the parent module: strings in, a validated [`DirectorySettings`] or a
//! one-line [`UsageError`] out. The directory's address is only checked for its form here;
//! whether Redis answers is the directory thread's business at run time (an unreachable
//! Redis at start is a warning, not an error). Imports the parsing leaf, never its parent.

use std::path::PathBuf;

use getopts::{Matches, Options};

use super::parse::{declare_flags, parse_number, UsageError, WHOLE};
pub use crate::directory::DirectoryAddr;

/// A node's place in a group of processes. `Default` is a single node alone: no node id, no
/// directory, no shared ports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectorySettings {
    /// This node's number in the group (`--node-id`, 1-255); room ids carry it in their top
    /// byte. Only with `directory`.
    pub node_id: Option<u8>,
    /// The Redis server of the room directory (`--directory`).
    pub directory: Option<DirectoryAddr>,
    /// Bind the UDP lobby, TCP lobby and Warzone listeners with `SO_REUSEPORT`
    /// (`--reuse-port`), so several processes of one user share their ports.
    pub reuse_port: bool,
}

/// The directory flags for `--help`, as (long name, value hint or "" for a switch,
/// description).
pub(super) fn flags() -> Vec<(&'static str, &'static str, String)> {
    vec![
        (
            "node-id",
            "N",
            "This node's number in a group, 1-255; room ids carry it (needs --directory).".into(),
        ),
        (
            "directory",
            "URL",
            "Share rooms with the other nodes through Redis at redis://HOST:PORT or \
             redis+unix:///PATH (default none: a single node)."
                .into(),
        ),
        (
            "reuse-port",
            "",
            "Bind the UDP lobby, TCP lobby and Warzone ports with SO_REUSEPORT, shared by the \
             nodes of one user."
                .into(),
        ),
    ]
}

/// Declares the directory flags on `options`.
pub(super) fn declare(options: &mut Options) {
    declare_flags(options, &flags());
}

/// Builds the directory settings from parsed flags.
pub(super) fn settings_from(m: &Matches) -> Result<DirectorySettings, UsageError> {
    let node_id = m
        .opt_str("node-id")
        .map(|text| parse_number("node-id", &text, WHOLE, &(1..=u8::MAX)))
        .transpose()?;
    let directory = m
        .opt_str("directory")
        .map(|text| parse_directory(&text))
        .transpose()?;
    if node_id.is_some() != directory.is_some() {
        return Err(UsageError::new(
            "--node-id and --directory go together: a node of a group needs both".to_string(),
        ));
    }
    Ok(DirectorySettings {
        node_id,
        directory,
        reuse_port: m.opt_present("reuse-port"),
    })
}

/// Parses `redis://HOST:PORT` or `redis+unix:///PATH`.
fn parse_directory(text: &str) -> Result<DirectoryAddr, UsageError> {
    let bad = |why: &str| {
        UsageError::new(format!(
            "--directory: {text:?} {why} (redis://HOST:PORT or redis+unix:///PATH)"
        ))
    };
    if let Some(path) = text.strip_prefix("redis+unix://") {
        if !path.starts_with('/') || path.len() < 2 {
            return Err(bad("needs an absolute socket path"));
        }
        return Ok(DirectoryAddr::Unix(PathBuf::from(path)));
    }
    let Some(rest) = text.strip_prefix("redis://") else {
        return Err(bad("is not a Redis address"));
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() => (host, port),
        _ => return Err(bad("needs a host and a port")),
    };
    // `[::1]` is how a URL spells an IPv6 host.
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.contains(['/', '@', '[', ']']) || port.is_empty() {
        return Err(bad("needs a host and a port"));
    }
    let port = match port.parse::<u16>() {
        Ok(port) if port != 0 => port,
        _ => return Err(bad("has no valid port")),
    };
    Ok(DirectoryAddr::Tcp {
        host: host.to_string(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_addresses_parse() {
        assert_eq!(
            parse_directory("redis://127.0.0.1:6379"),
            Ok(DirectoryAddr::Tcp {
                host: "127.0.0.1".into(),
                port: 6379
            })
        );
        assert_eq!(
            parse_directory("redis://[::1]:7000/"),
            Ok(DirectoryAddr::Tcp {
                host: "::1".into(),
                port: 7000
            })
        );
        assert_eq!(
            parse_directory("redis+unix:///run/redis/r.sock"),
            Ok(DirectoryAddr::Unix(PathBuf::from("/run/redis/r.sock")))
        );
        for bad in [
            "",
            "127.0.0.1:6379",
            "redis://",
            "redis://host",
            "redis://:6379",
            "redis://host:0",
            "redis://host:99999",
            "redis://user@host:1",
            "redis+unix://relative",
            "redis+unix://",
            "http://host:80",
        ] {
            assert!(parse_directory(bad).is_err(), "{bad:?}");
        }
    }
}
