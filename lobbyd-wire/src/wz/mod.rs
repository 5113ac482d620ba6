//! The Warzone 2100 master-server ("lobby") wire protocols, both spoken on TCP port 9990: the
//! legacy protocol of real 2.3.x, 3.x and 4.x clients, and the v4 protocol of BSON or JSON
//! documents.
//!
//! Legacy (docs/protocols/wz-lobby.md, "Legacy protocol", which states every byte-level fact
//! and where it comes from):
//! - [`gamestruct`]: the fixed 814-byte big-endian GAMESTRUCT, as a zero-copy view
//!   [`GameStruct`] (after [`GameStruct::new_checked`] no accessor panics) and a plain owned
//!   [`GameStructRepr`] for round trips and fixtures;
//! - [`legacy`]: command framing over a connection's read buffer ([`next_item`]), the status
//!   reply, the `gaId` reply, the `list` reply shaped for every client generation
//!   ([`ListReplyWriter`]), bounded client-side readers for tests, and the `WZLR` reachability
//!   probe.
//!
//! The legacy code does no I/O, reads no clock and does not allocate on the server's parse
//! path; every parser is total (a value or an [`Error`], never a panic, never a read past the
//! buffer).
//!
//! v4 (docs/protocols/wz-v4.md): [`v4`], the handshake, the length-prefixed frames, the BSON
//! and JSON document decoders and the requests and responses. It has its own error type,
//! [`v4::DecodeError`], and its own stated bounds: a document tree allocates, but never more
//! than a small multiple of a frame body the caller has already bounded.

use core::fmt;

pub mod gamestruct;
pub mod legacy;
pub mod v4;

pub use gamestruct::{c_string, GameStruct, GameStructRepr, GAMESTRUCT_LEN};
pub use legacy::{
    emit_game_id, emit_probe_reply, emit_status, list_reply_len, motd_command_reply, next_item,
    parse_game_id, parse_probe_reply, parse_status, push_status, read_list_237, read_list_3x,
    read_list_4x, status_len, ClientList, Item, ListReplyWriter, ProbeReply, WzCommand,
    FIRST_BATCH_MAX, IGNORE_FIRST_BATCH, MAX_MOTD, MOTD_COMMAND_MAX, PROBE_REPLY_LEN,
    PROBE_REQUEST,
};

/// Why a legacy Warzone 2100 message could not be parsed.
///
/// `as_str()` gives a stable snake_case label for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// The buffer ends before the message does (for a stream: wait for more bytes).
    Truncated,
    /// A GAMESTRUCT whose version word is neither 3 nor 4.
    BadVersion,
    /// A 4-byte command that is not one of `gaId`, `addg`, `list`, `keep`, `motd`.
    UnknownCommand,
    /// A status reply announcing a MOTD longer than [`MAX_MOTD`].
    MotdTooLong,
}

impl Error {
    /// Every variant, in declaration order (for registering metric labels up front).
    pub const ALL: [Error; 4] = [
        Error::Truncated,
        Error::BadVersion,
        Error::UnknownCommand,
        Error::MotdTooLong,
    ];

    /// A stable snake_case label, for metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            Error::Truncated => "truncated",
            Error::BadVersion => "bad_version",
            Error::UnknownCommand => "unknown_command",
            Error::MotdTooLong => "motd_too_long",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Error::Truncated => "message truncated",
            Error::BadVersion => "GAMESTRUCT version is not 3 or 4",
            Error::UnknownCommand => "unknown lobby command",
            Error::MotdTooLong => "status MOTD longer than the lobby's bound",
        };
        f.write_str(text)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_labels_are_distinct_snake_case() {
        let labels: Vec<&str> = Error::ALL.iter().map(|e| e.as_str()).collect();
        for (i, label) in labels.iter().enumerate() {
            assert!(label.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
            assert!(!labels[..i].contains(label), "duplicate label {label}");
        }
        for e in Error::ALL {
            assert!(!e.to_string().is_empty());
        }
    }
}
