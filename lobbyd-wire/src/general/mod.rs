//! The general lobby's wire format (the source is the C# game lobby article's "code and
//! length" messages, whose bytes the article leaves to a library we do not have, so `docs/protocols/general-lobby.md` is the contract).
//!
//! Every message is one frame, both directions, all integers little-endian:
//!
//! ```text
//! +-----------+-------------+---------------------------+
//! | code u32  | length u32  | payload[length]           |
//! +-----------+-------------+---------------------------+
//!   0..4        4..8          8..
//! ```
//!
//! The payload is a sequence of parameters (`kind u8 | len u16 | bytes`), see [`params`].
//!
//! Layers, in the smoltcp `wire` shape:
//! - [`next_frame`] cuts the next frame out of a read buffer without copying; a declared length
//!   over the caller's limit is [`Next::Oversized`] from the 8 header bytes alone, so a peer
//!   can never make the reader wait for (or buffer) a large payload.
//! - [`Frame`] is a view over one frame; after [`Frame::new_checked`] no accessor panics, and
//!   the read accessors are total even on an unchecked view.
//! - [`params`] reads and writes parameters: a total, borrowing reader and a writer.
//! - [`client::ClientRepr`] and [`server::ServerRepr`] are the messages of each direction, with
//!   `parse(&Frame)`, `buffer_len` and `emit`; parsing borrows, emitting never allocates.
//!
//! This module must not decide what a message means in the lobby's state, and must not log or
//! count anything: it reports a typed [`Error`] (counted by the core with [`Error::as_str`]).

use core::fmt;

use super::Field;

pub mod client;
pub mod params;
pub mod server;

pub use client::ClientRepr;
pub use params::{ParamReader, ParamWriter, Words};
pub use server::{GameInfo, ServerRepr};

/// Length of the frame header: code (u32) and payload length (u32).
pub const HEADER_LEN: usize = 8;

/// The protocol version HELLO announces.
pub const PROTOCOL_VERSION: u32 = 1;

/// The default bound on a frame's declared payload length (`--lobby-max-frame`).
pub const DEFAULT_MAX_FRAME: usize = 16_384;

/// Length of a resume token (WELCOME, SIGN_IN).
pub const TOKEN_LEN: usize = 16;

/// Longest PING (and so PONG) payload.
pub const MAX_PING_PAYLOAD: usize = 64;

/// Game flag 1: joining needs the game's password.
pub const GAME_LOCKED: u32 = 1;
/// Game flag 2: no one may join.
pub const GAME_CLOSED: u32 = 2;
/// Game flag 4: the game has started.
pub const GAME_IN_PROGRESS: u32 = 4;
/// Game flag 8: the server hosts the game (set by the server only).
pub const GAME_HOSTED: u32 = 8;

/// Player flag 1: the player is ready.
pub const PLAYER_READY: u32 = 1;

/// The member flag bits a client sets (SET_MEMBER); the high 16 bits are the server's.
pub const MEMBER_CLIENT_FLAGS: u32 = 0x0000_FFFF;
/// Member flag bit 16: the member's connection dropped and its resume grace is running.
pub const MEMBER_AWAY: u32 = 1 << 16;

/// The message codes (`docs/protocols/general-lobby.md`). S = server to client, C = client to
/// server.
pub mod code {
    /// S: server name and protocol version, sent on accept.
    pub const HELLO: u32 = 0x01;
    /// S: sign-in prompt, after HELLO and after each refused SIGN_IN.
    pub const CHALLENGE: u32 = 0x02;
    /// C: username, password, resume token.
    pub const SIGN_IN: u32 = 0x03;
    /// S: member id and resume token.
    pub const WELCOME: u32 = 0x04;
    /// S: error code, the code of the request it answers, text.
    pub const ERROR: u32 = 0x05;
    /// S: ends the state sent after WELCOME.
    pub const SYNC_DONE: u32 = 0x06;
    /// S: a member's id, flags, username and display name.
    pub const MEMBER_INFO: u32 = 0x10;
    /// S: a member left the lobby.
    pub const MEMBER_LEFT: u32 = 0x11;
    /// C: the member's own flags (low 16 bits) and display name.
    pub const SET_MEMBER: u32 = 0x12;
    /// C: chat to the lobby (game 0) or to a game's players.
    pub const CHAT: u32 = 0x20;
    /// S: a chat line.
    pub const CHAT_FROM: u32 = 0x21;
    /// C: chat to one member.
    pub const PRIVATE_CHAT: u32 = 0x22;
    /// S: a private chat line.
    pub const PRIVATE_FROM: u32 = 0x23;
    /// C: create a game.
    pub const CREATE_GAME: u32 = 0x30;
    /// S: a game's state.
    pub const GAME_INFO: u32 = 0x31;
    /// S: a game was closed.
    pub const GAME_CLOSED: u32 = 0x32;
    /// C: ask to join a game.
    pub const JOIN_REQUEST: u32 = 0x33;
    /// S: to a game's owner: a member asks to join.
    pub const JOIN_ASK: u32 = 0x34;
    /// C: from a game's owner: the answer to a JOIN_ASK.
    pub const JOIN_ANSWER: u32 = 0x35;
    /// S: to the requester: the outcome of its JOIN_REQUEST.
    pub const JOIN_RESPONSE: u32 = 0x36;
    /// C: leave a game.
    pub const LEAVE_GAME: u32 = 0x37;
    /// C: owner only: a game's flags and password.
    pub const SET_GAME: u32 = 0x38;
    /// C: the sender's ready flag in a game.
    pub const SET_READY: u32 = 0x39;
    /// C: owner only: start a game.
    pub const START_GAME: u32 = 0x3A;
    /// S: a game started.
    pub const GAME_STARTED: u32 = 0x3B;
    /// C: owner only: remove a player.
    pub const KICK: u32 = 0x3C;
    /// S: to a kicked player.
    pub const KICKED: u32 = 0x3D;
    /// C: owner only: hand ownership to another player.
    pub const GIVE_OWNER: u32 = 0x3E;
    /// C: owner only: store (or delete) a value of the game's data.
    pub const STORE_DATA: u32 = 0x40;
    /// C: owner only: read a value of the game's data.
    pub const FETCH_DATA: u32 = 0x41;
    /// S: a value of a game's data.
    pub const DATA_VALUE: u32 = 0x42;
    /// C: relay to the game's owner.
    pub const TO_OWNER: u32 = 0x43;
    /// C: relay to every player of the game.
    pub const TO_ALL: u32 = 0x44;
    /// C: owner only: relay to one player.
    pub const TO_PLAYER: u32 = 0x45;
    /// S: a relayed message.
    pub const GAME_MESSAGE: u32 = 0x46;
    /// C: list games matching a filter.
    pub const LIST_GAMES: u32 = 0x50;
    /// S: ends a LIST_GAMES answer.
    pub const GAME_LIST_END: u32 = 0x51;
    /// C: liveness probe.
    pub const PING: u32 = 0x60;
    /// S: PING's answer.
    pub const PONG: u32 = 0x61;

    /// Every code a client may send.
    pub const CLIENT: [u32; 20] = [
        SIGN_IN,
        SET_MEMBER,
        CHAT,
        PRIVATE_CHAT,
        CREATE_GAME,
        JOIN_REQUEST,
        JOIN_ANSWER,
        LEAVE_GAME,
        SET_GAME,
        SET_READY,
        START_GAME,
        KICK,
        GIVE_OWNER,
        STORE_DATA,
        FETCH_DATA,
        TO_OWNER,
        TO_ALL,
        TO_PLAYER,
        LIST_GAMES,
        PING,
    ];

    /// Every code the server sends.
    pub const SERVER: [u32; 19] = [
        HELLO,
        CHALLENGE,
        WELCOME,
        ERROR,
        SYNC_DONE,
        MEMBER_INFO,
        MEMBER_LEFT,
        CHAT_FROM,
        PRIVATE_FROM,
        GAME_INFO,
        GAME_CLOSED,
        JOIN_ASK,
        JOIN_RESPONSE,
        GAME_STARTED,
        KICKED,
        DATA_VALUE,
        GAME_MESSAGE,
        GAME_LIST_END,
        PONG,
    ];

    /// Stable snake_case name of a client code, for per-request counters; `None` for any other.
    pub const fn client_label(code: u32) -> Option<&'static str> {
        Some(match code {
            SIGN_IN => "sign_in",
            SET_MEMBER => "set_member",
            CHAT => "chat",
            PRIVATE_CHAT => "private_chat",
            CREATE_GAME => "create_game",
            JOIN_REQUEST => "join_request",
            JOIN_ANSWER => "join_answer",
            LEAVE_GAME => "leave_game",
            SET_GAME => "set_game",
            SET_READY => "set_ready",
            START_GAME => "start_game",
            KICK => "kick",
            GIVE_OWNER => "give_owner",
            STORE_DATA => "store_data",
            FETCH_DATA => "fetch_data",
            TO_OWNER => "to_owner",
            TO_ALL => "to_all",
            TO_PLAYER => "to_player",
            LIST_GAMES => "list_games",
            PING => "ping",
            _ => return None,
        })
    }
}

mod field {
    use super::Field;

    pub const CODE: Field = 0..4;
    pub const LENGTH: Field = 4..8;
}

/// Why bytes could not be turned into a message.
///
/// The core answers every one of them ERROR 2 (malformed), except [`Error::UnknownCode`] and
/// [`Error::WrongDirection`] (ERROR 14), and counts them by [`Error::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// The buffer is shorter than the header or than the declared payload. Frames returned by
    /// [`next_frame`] are always complete, so the server never sees this from a peer.
    Truncated,
    /// The code is not in the table.
    UnknownCode,
    /// The code belongs to the other direction (a client sent GAME_INFO, say).
    WrongDirection,
    /// A parameter's header or declared bytes run past the end of the payload.
    ParamTruncated,
    /// The message ends before all its parameters.
    MissingParam,
    /// Parameters follow the message's last one.
    ExtraParam,
    /// A parameter has another kind than the message requires at its place.
    WrongKind,
    /// A parameter has a length its kind or message forbids (an i32 of 3 bytes, a resume token
    /// of 5, a player list that is not a whole number of i32s, a PING payload over 64 bytes).
    BadSize,
    /// A string parameter is not valid UTF-8.
    NotUtf8,
    /// A value the message does not allow (a yes/no other than 0 or 1, player flags that do not
    /// pair with the players).
    BadValue,
}

impl Error {
    /// Every variant, in declaration order, so metrics can pre-register one counter each.
    pub const ALL: [Error; 10] = [
        Error::Truncated,
        Error::UnknownCode,
        Error::WrongDirection,
        Error::ParamTruncated,
        Error::MissingParam,
        Error::ExtraParam,
        Error::WrongKind,
        Error::BadSize,
        Error::NotUtf8,
        Error::BadValue,
    ];

    /// Stable snake_case label, for metrics and logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Error::Truncated => "truncated",
            Error::UnknownCode => "unknown_code",
            Error::WrongDirection => "wrong_direction",
            Error::ParamTruncated => "param_truncated",
            Error::MissingParam => "missing_param",
            Error::ExtraParam => "extra_param",
            Error::WrongKind => "wrong_kind",
            Error::BadSize => "bad_size",
            Error::NotUtf8 => "not_utf8",
            Error::BadValue => "bad_value",
        }
    }

    /// A short English sentence for the ERROR 2 text the server sends back.
    pub const fn text(self) -> &'static str {
        match self {
            Error::Truncated => "frame truncated",
            Error::UnknownCode => "unknown message code",
            Error::WrongDirection => "message code not allowed in this direction",
            Error::ParamTruncated => "parameter runs past the end of the message",
            Error::MissingParam => "parameter missing",
            Error::ExtraParam => "unexpected extra parameter",
            Error::WrongKind => "parameter of the wrong kind",
            Error::BadSize => "parameter of the wrong size",
            Error::NotUtf8 => "string parameter is not valid UTF-8",
            Error::BadValue => "parameter value out of range",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

/// The ERROR message's error codes (`docs/protocols/general-lobby.md`), plus 0 for notices
/// that answer no request (shutdown, idle, sign-in deadline, a session resumed elsewhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 0: the server closes the connection for a reason of its own; the request code is 0.
    Notice,
    /// 1: the request needs a signed-in member.
    NotSignedIn,
    /// 2: the request did not parse.
    Malformed,
    /// 3: no game has this id.
    UnknownGame,
    /// 4: only the game's owner may do this.
    NotOwner,
    /// 5: the member is in the game already (or already asked to join it).
    AlreadyInGame,
    /// 6: no free seat.
    Full,
    /// 7: the game is closed to newcomers.
    Closed,
    /// 8: wrong password (game or account) or resume token.
    WrongPassword,
    /// 9: the name breaks the rules or is taken.
    NameInvalid,
    /// 10: too many requests; this one was dropped.
    RateLimited,
    /// 11: the frame's declared length is over the limit; the connection is closed.
    FrameTooLarge,
    /// 12: the member is not a player of the game.
    NotInGame,
    /// 13: no member or ask has this id (for the sender).
    UnknownId,
    /// 14: the code is not one a client may send.
    UnknownCode,
    /// 15: a limit is reached (games per member, members, games, data bytes, seats).
    LimitReached,
    /// A code this table does not define.
    Other(u32),
}

impl ErrorCode {
    /// Every defined code, in numeric order, so metrics can pre-register one counter each.
    pub const ALL: [ErrorCode; 16] = [
        ErrorCode::Notice,
        ErrorCode::NotSignedIn,
        ErrorCode::Malformed,
        ErrorCode::UnknownGame,
        ErrorCode::NotOwner,
        ErrorCode::AlreadyInGame,
        ErrorCode::Full,
        ErrorCode::Closed,
        ErrorCode::WrongPassword,
        ErrorCode::NameInvalid,
        ErrorCode::RateLimited,
        ErrorCode::FrameTooLarge,
        ErrorCode::NotInGame,
        ErrorCode::UnknownId,
        ErrorCode::UnknownCode,
        ErrorCode::LimitReached,
    ];

    /// Stable snake_case label, for metrics and logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Notice => "notice",
            ErrorCode::NotSignedIn => "not_signed_in",
            ErrorCode::Malformed => "malformed",
            ErrorCode::UnknownGame => "unknown_game",
            ErrorCode::NotOwner => "not_owner",
            ErrorCode::AlreadyInGame => "already_in_game",
            ErrorCode::Full => "full",
            ErrorCode::Closed => "closed",
            ErrorCode::WrongPassword => "wrong_password",
            ErrorCode::NameInvalid => "name_invalid",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::FrameTooLarge => "frame_too_large",
            ErrorCode::NotInGame => "not_in_game",
            ErrorCode::UnknownId => "unknown_id",
            ErrorCode::UnknownCode => "unknown_code",
            ErrorCode::LimitReached => "limit_reached",
            ErrorCode::Other(_) => "other",
        }
    }
}

impl From<u32> for ErrorCode {
    fn from(value: u32) -> Self {
        match value {
            0 => ErrorCode::Notice,
            1 => ErrorCode::NotSignedIn,
            2 => ErrorCode::Malformed,
            3 => ErrorCode::UnknownGame,
            4 => ErrorCode::NotOwner,
            5 => ErrorCode::AlreadyInGame,
            6 => ErrorCode::Full,
            7 => ErrorCode::Closed,
            8 => ErrorCode::WrongPassword,
            9 => ErrorCode::NameInvalid,
            10 => ErrorCode::RateLimited,
            11 => ErrorCode::FrameTooLarge,
            12 => ErrorCode::NotInGame,
            13 => ErrorCode::UnknownId,
            14 => ErrorCode::UnknownCode,
            15 => ErrorCode::LimitReached,
            other => ErrorCode::Other(other),
        }
    }
}

impl From<ErrorCode> for u32 {
    fn from(value: ErrorCode) -> Self {
        match value {
            ErrorCode::Notice => 0,
            ErrorCode::NotSignedIn => 1,
            ErrorCode::Malformed => 2,
            ErrorCode::UnknownGame => 3,
            ErrorCode::NotOwner => 4,
            ErrorCode::AlreadyInGame => 5,
            ErrorCode::Full => 6,
            ErrorCode::Closed => 7,
            ErrorCode::WrongPassword => 8,
            ErrorCode::NameInvalid => 9,
            ErrorCode::RateLimited => 10,
            ErrorCode::FrameTooLarge => 11,
            ErrorCode::NotInGame => 12,
            ErrorCode::UnknownId => 13,
            ErrorCode::UnknownCode => 14,
            ErrorCode::LimitReached => 15,
            ErrorCode::Other(other) => other,
        }
    }
}

/// What the read buffer holds next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next<'a> {
    /// One complete frame; the caller drains `consumed` bytes (header plus payload) after use.
    Frame {
        /// The frame, borrowing the read buffer.
        frame: Frame<&'a [u8]>,
        /// Bytes this frame occupies at the front of the buffer.
        consumed: usize,
    },
    /// The buffer holds less than a header, or less than the declared payload.
    NeedMore,
    /// The header declares a payload longer than the limit (the server answers ERROR 11 with
    /// `code` and closes the connection once that is flushed).
    Oversized {
        /// The frame's code, for the ERROR's request field.
        code: u32,
        /// The declared payload length.
        declared: u32,
    },
}

/// Cuts the next frame from `buf`, with payloads of at most `max_len` bytes. Never copies,
/// never allocates, never panics; an over-long declared length is reported from the header.
pub fn next_frame(buf: &[u8], max_len: usize) -> Next<'_> {
    let Some(header) = buf.get(..HEADER_LEN) else {
        return Next::NeedMore;
    };
    let view = Frame::new_unchecked(header);
    let declared = view.declared_len();
    // Decided from the header alone, so an oversized frame never waits for its payload.
    let Some(payload_len) = usize::try_from(declared).ok().filter(|&len| len <= max_len) else {
        return Next::Oversized {
            code: view.code(),
            declared,
        };
    };
    let consumed = HEADER_LEN + payload_len;
    match buf.get(..consumed) {
        Some(bytes) => Next::Frame {
            frame: Frame::new_unchecked(bytes),
            consumed,
        },
        None => Next::NeedMore,
    }
}

/// A view over one frame: the header followed by at least the declared payload.
///
/// The read accessors never panic, even on an unchecked view (a short buffer reads as code 0,
/// length 0 and an empty payload); [`Frame::new_checked`] also guarantees the payload is there.
/// The setters are for emitting into a buffer the caller sized and panic if it is too short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Wraps a buffer, checking that it holds the header and the whole declared payload.
    pub fn new_checked(buffer: T) -> Result<Frame<T>, Error> {
        let frame = Frame::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    /// Checks that the buffer holds the header and the whole declared payload. Bytes after the
    /// payload are allowed and ignored.
    pub fn check_len(&self) -> Result<(), Error> {
        let len = self.buffer.as_ref().len();
        let needed = usize::try_from(self.declared_len())
            .ok()
            .and_then(|payload| payload.checked_add(HEADER_LEN));
        match needed {
            Some(needed) if len >= HEADER_LEN && len >= needed => Ok(()),
            _ => Err(Error::Truncated),
        }
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The message code.
    pub fn code(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::CODE)
    }

    /// The declared payload length, as the header says it.
    pub fn declared_len(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::LENGTH)
    }

    /// The payload; empty if the buffer does not hold all of it.
    pub fn payload(&self) -> &[u8] {
        payload_of(self.buffer.as_ref(), self.declared_len())
    }
}

impl<'a> Frame<&'a [u8]> {
    /// The payload with the buffer's lifetime, so parsed representations can outlive the view.
    pub fn into_payload(self) -> &'a [u8] {
        payload_of(self.buffer, self.declared_len())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Sets the code. Panics if the buffer is shorter than the header.
    pub fn set_code(&mut self, value: u32) {
        self.buffer.as_mut()[field::CODE].copy_from_slice(&value.to_le_bytes());
    }

    /// Sets the declared payload length. Panics if the buffer is shorter than the header.
    pub fn set_declared_len(&mut self, value: u32) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&value.to_le_bytes());
    }

    /// The payload, mutably. Panics if the buffer does not hold the declared payload.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + self.declared_len() as usize;
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

fn read_u32(bytes: &[u8], at: Field) -> u32 {
    match bytes.get(at) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => 0,
    }
}

fn payload_of(bytes: &[u8], declared: u32) -> &[u8] {
    usize::try_from(declared)
        .ok()
        .and_then(|len| bytes.get(HEADER_LEN..HEADER_LEN.checked_add(len)?))
        .unwrap_or(&[])
}

/// Writes a frame header for a `payload_len`-byte payload at the start of `buf` and returns the
/// payload area. Panics if `buf` is shorter than the frame: emitters size it with
/// `buffer_len`, and every payload they build is far below `u32::MAX`.
fn emit_header(buf: &mut [u8], code: u32, payload_len: usize) -> &mut [u8] {
    let mut frame = Frame::new_unchecked(&mut buf[..HEADER_LEN + payload_len]);
    frame.set_code(code);
    frame.set_declared_len(payload_len as u32);
    let (_, payload) = frame.into_inner().split_at_mut(HEADER_LEN);
    payload
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod test {
    use super::tests::hex;
    use super::*;
    use quickcheck::quickcheck;

    #[test]
    fn deconstruct() {
        let bytes = hex("60000000 04000000 04 0100 2a");
        let frame = Frame::new_checked(&bytes[..]).expect("complete");
        assert_eq!(frame.code(), code::PING);
        assert_eq!(frame.declared_len(), 4);
        assert_eq!(frame.payload(), &[0x04, 0x01, 0x00, 0x2a]);
        assert_eq!(frame.into_payload(), &[0x04, 0x01, 0x00, 0x2a]);
    }

    #[test]
    fn construct() {
        let mut buf = [0xa5u8; 16];
        let payload = emit_header(&mut buf, code::SYNC_DONE, 0);
        assert!(payload.is_empty());
        assert_eq!(&buf[..8], &hex("06000000 00000000")[..]);
        assert!(buf[8..].iter().all(|&b| b == 0xa5));

        let mut buf = [0xa5u8; 12];
        let mut frame = Frame::new_unchecked(&mut buf[..]);
        frame.set_code(0x0102_0304);
        frame.set_declared_len(2);
        frame.payload_mut().copy_from_slice(&[7, 8]);
        assert_eq!(&buf[..10], &hex("04030201 02000000 0708")[..]);
        assert_eq!(&buf[10..], &[0xa5, 0xa5]);
    }

    #[test]
    fn reader_needs_more_then_frames() {
        let mut stream = hex("60000000 03000000 04 0000");
        stream.extend_from_slice(&hex("06000000 00000000"));
        for cut in 0..11 {
            assert_eq!(next_frame(&stream[..cut], 64), Next::NeedMore, "cut {cut}");
        }
        let Next::Frame { frame, consumed } = next_frame(&stream, 64) else {
            panic!("first frame is complete");
        };
        assert_eq!((frame.code(), consumed), (code::PING, 11));
        let Next::Frame { frame, consumed } = next_frame(&stream[11..], 64) else {
            panic!("second frame is complete");
        };
        assert_eq!((frame.code(), consumed), (code::SYNC_DONE, 8));
    }

    #[test]
    fn reader_oversized_from_header_alone() {
        // 16 385 declared bytes, one past the default limit: reported with 8 bytes in hand.
        assert_eq!(
            next_frame(&hex("20000000 01400000"), DEFAULT_MAX_FRAME),
            Next::Oversized {
                code: code::CHAT,
                declared: 16_385
            }
        );
        assert_eq!(
            next_frame(&hex("ffffffff ffffffff 00"), DEFAULT_MAX_FRAME),
            Next::Oversized {
                code: u32::MAX,
                declared: u32::MAX
            }
        );
        // Exactly at the limit waits for its payload.
        assert_eq!(
            next_frame(&hex("20000000 00400000"), DEFAULT_MAX_FRAME),
            Next::NeedMore
        );
    }

    #[test]
    fn frame_views_are_total() {
        assert_eq!(Frame::new_checked(&[1u8, 0, 0][..]), Err(Error::Truncated));
        let short = hex("60000000 05000000 0400");
        assert_eq!(Frame::new_checked(&short[..]), Err(Error::Truncated));
        let view = Frame::new_unchecked(&short[..]);
        assert_eq!(view.payload(), &[] as &[u8]);
        let empty = Frame::new_unchecked(&[][..]);
        assert_eq!((empty.code(), empty.declared_len()), (0, 0));
        let huge = hex("01000000 ffffffff");
        assert_eq!(Frame::new_checked(&huge[..]), Err(Error::Truncated));
        // Bytes after the payload are not part of the frame.
        let longer = hex("06000000 00000000 99");
        let frame = Frame::new_checked(&longer[..]).expect("complete");
        assert!(frame.payload().is_empty());
    }

    #[test]
    fn codes() {
        for c in 0..=0x100u32 {
            let client = code::CLIENT.contains(&c);
            let server = code::SERVER.contains(&c);
            assert!(!(client && server), "{c:#x} in both directions");
            assert_eq!(code::client_label(c).is_some(), client, "{c:#x}");
        }
        let mut labels: Vec<_> = code::CLIENT
            .iter()
            .filter_map(|&c| code::client_label(c))
            .collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), code::CLIENT.len());
    }

    #[test]
    fn error_labels_and_codes() {
        let labels: Vec<&str> = Error::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(
            labels,
            [
                "truncated",
                "unknown_code",
                "wrong_direction",
                "param_truncated",
                "missing_param",
                "extra_param",
                "wrong_kind",
                "bad_size",
                "not_utf8",
                "bad_value"
            ]
        );
        for error in Error::ALL {
            assert!(!error.to_string().is_empty());
        }
        for (number, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(u32::from(*code), number as u32);
            assert_eq!(ErrorCode::from(number as u32), *code);
            assert_ne!(code.as_str(), "other");
        }
        assert_eq!(ErrorCode::from(16), ErrorCode::Other(16));
        assert_eq!(u32::from(ErrorCode::Other(99)), 99);
    }

    quickcheck! {
        fn arbitrary_bytes_never_panic(bytes: Vec<u8>, max_len: u16) -> bool {
            if let Next::Frame { frame, consumed } = next_frame(&bytes, usize::from(max_len)) {
                assert!(consumed <= bytes.len());
                assert_eq!(frame.payload().len() + HEADER_LEN, consumed);
                let _ = ClientRepr::parse(&frame);
                let _ = ServerRepr::parse(&frame);
            }
            let unchecked = Frame::new_unchecked(&bytes[..]);
            let _ = ClientRepr::parse(&unchecked);
            let _ = ServerRepr::parse(&unchecked);
            true
        }

        fn frames_of_any_code_and_payload_never_panic(pick: u8, raw: u32, payload: Vec<u8>) -> bool {
            // Mostly codes of the table, so the payload reaches a message parser.
            let known = [&code::CLIENT[..], &code::SERVER[..]].concat();
            let code = known.get(usize::from(pick)).copied().unwrap_or(raw);
            let mut bytes = code.to_le_bytes().to_vec();
            bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&payload);
            let frame = Frame::new_checked(&bytes[..]).expect("complete by construction");
            let _ = ClientRepr::parse(&frame);
            let _ = ServerRepr::parse(&frame);
            true
        }
    }
}
