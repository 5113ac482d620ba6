//! What goes in and out of the TCP lobby core: the driver's connection names, the decoded
//! client requests, protocol violations, and the messages and errors sent back
//! (RFC R-Type-TCP-001 section 5; the wire encoding is `crate::wire::tcp_lobby`, or
//! `crate::wire::tcp_upstream` for a connection of the upstream client's dialect, whose room
//! requests and replies are here too: `docs/protocols/tcp-lobby-upstream.md`).

use std::time::Duration;

use super::room::{RoomId, Slot};
use crate::wire::tcp_lobby::NAME_LEN;
use crate::wire::tcp_upstream::{JoinStatus, RoomRecord};

/// A TCP lobby connection, named by the driver (its slab key). The driver tells the core when
/// one closes before it reuses the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub usize);

/// A well-formed client message, decoded by the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpRequest {
    /// CONNECT_REQ with its raw 32-byte name field.
    Connect {
        /// The name field as sent (checked here: a bad name is answered, not a violation).
        name: [u8; NAME_LEN],
    },
    /// READY_REQ.
    Ready(bool),
    /// START_REQ.
    Start,
    /// DISCONNECT (in the upstream dialect with a hash, which is not checked, as upstream).
    Disconnect,
    /// Upstream dialect: LIST_ROOMS_REQ.
    ListRooms,
    /// Upstream dialect: CREATE_ROOM_REQ with its raw 32-byte name field.
    CreateRoom {
        /// The room name field as sent.
        name: [u8; NAME_LEN],
    },
    /// Upstream dialect: JOIN_ROOM_REQ.
    JoinRoom(u32),
    /// Upstream dialect: READY_REQ, a toggle of the sender's ready flag keyed by its hash.
    ToggleReady {
        /// The hash the sender claims (a foreign one is ignored).
        hash: u64,
    },
}

/// A protocol violation: ignored, counted, and fatal at `max_violations`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Violation {
    /// A type byte that is not one of the RFC's eleven.
    UnknownType,
    /// A server-to-client type sent by the client.
    WrongDirection,
    /// A payload size that is not the one of its type.
    BadPayloadSize,
    /// A field value out of range (a ready flag other than 0 or 1).
    BadValue,
    /// A declared payload longer than any client message (skipped unread).
    Oversized,
    /// CONNECT_REQ after CONNECT_ACK.
    AlreadyConnected,
    /// READY_REQ or START_REQ before CONNECT_ACK.
    NotConnected,
    /// A request over the connection's request rate (ignored).
    Flood,
    /// Upstream dialect: a frame length of 0 or longer than any client frame (its bytes are
    /// skipped unread).
    BadLength,
}

impl Violation {
    /// Every reason, for exporting all counters.
    pub const ALL: [Violation; 9] = [
        Violation::UnknownType,
        Violation::WrongDirection,
        Violation::BadPayloadSize,
        Violation::BadValue,
        Violation::Oversized,
        Violation::AlreadyConnected,
        Violation::NotConnected,
        Violation::Flood,
        Violation::BadLength,
    ];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Violation::UnknownType => "unknown_type",
            Violation::WrongDirection => "wrong_direction",
            Violation::BadPayloadSize => "bad_payload_size",
            Violation::BadValue => "bad_value",
            Violation::Oversized => "oversized",
            Violation::AlreadyConnected => "already_connected",
            Violation::NotConnected => "not_connected",
            Violation::Flood => "flood",
            Violation::BadLength => "bad_length",
        }
    }
}

/// ERROR_MSG codes (RFC section 5.12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TcpError {
    /// 0x01 "Lobby full".
    LobbyFull,
    /// 0x02 "Name already taken".
    NameTaken,
    /// 0x03 "Invalid name".
    InvalidName,
    /// 0x04 "Game already started".
    GameStarted,
    /// 0x05 "Not all players ready".
    NotAllReady,
    /// 0x06 "Minimum players not reached".
    NotEnoughPlayers,
    /// 0xFF "no game instance available".
    NoInstance,
    /// 0xFF "no player id available" (the random source failed repeatedly).
    NoPlayerId,
    /// 0xFF "server shutting down".
    ShuttingDown,
}

impl TcpError {
    /// Every error, for exporting all counters.
    pub const ALL: [TcpError; 9] = [
        TcpError::LobbyFull,
        TcpError::NameTaken,
        TcpError::InvalidName,
        TcpError::GameStarted,
        TcpError::NotAllReady,
        TcpError::NotEnoughPlayers,
        TcpError::NoInstance,
        TcpError::NoPlayerId,
        TcpError::ShuttingDown,
    ];

    /// The wire code.
    pub fn code(self) -> u8 {
        match self {
            TcpError::LobbyFull => 0x01,
            TcpError::NameTaken => 0x02,
            TcpError::InvalidName => 0x03,
            TcpError::GameStarted => 0x04,
            TcpError::NotAllReady => 0x05,
            TcpError::NotEnoughPlayers => 0x06,
            TcpError::NoInstance | TcpError::NoPlayerId | TcpError::ShuttingDown => 0xFF,
        }
    }

    /// The text sent after the code.
    pub fn text(self) -> &'static str {
        match self {
            TcpError::LobbyFull => "Lobby full",
            TcpError::NameTaken => "Name already taken",
            TcpError::InvalidName => "Invalid name",
            TcpError::GameStarted => "Game already started",
            TcpError::NotAllReady => "Not all players ready",
            TcpError::NotEnoughPlayers => "Minimum players not reached",
            TcpError::NoInstance => "no game instance available",
            TcpError::NoPlayerId => "no player id available",
            TcpError::ShuttingDown => "server shutting down",
        }
    }

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            TcpError::LobbyFull => "lobby_full",
            TcpError::NameTaken => "name_taken",
            TcpError::InvalidName => "invalid_name",
            TcpError::GameStarted => "game_started",
            TcpError::NotAllReady => "not_all_ready",
            TcpError::NotEnoughPlayers => "not_enough_players",
            TcpError::NoInstance => "no_instance",
            TcpError::NoPlayerId => "no_player_id",
            TcpError::ShuttingDown => "shutting_down",
        }
    }
}

/// A message for one TCP lobby client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpMessage {
    /// CONNECT_ACK.
    ConnectAck {
        /// The player hash.
        hash: u64,
        /// The slot (player number).
        slot: Slot,
    },
    /// PLAYER_JOIN.
    PlayerJoin {
        /// The slot.
        slot: Slot,
        /// The player hash.
        hash: u64,
        /// The name field, NUL-padded.
        name: [u8; NAME_LEN],
        /// The ready flag.
        ready: bool,
    },
    /// PLAYER_READY.
    PlayerReady {
        /// The slot.
        slot: Slot,
        /// The new flag.
        ready: bool,
    },
    /// PLAYER_LEFT.
    PlayerLeft(Slot),
    /// COUNTDOWN: time left (sent as float32 seconds).
    Countdown(Duration),
    /// GAME_START of this party: the driver encodes [`crate::rtype::RtypeCore::game_start_players`] with the
    /// party's instance port and the server address of this connection.
    GameStart(RoomId),
    /// ERROR_MSG (nothing in the upstream dialect, which has no error message).
    Error(TcpError),
    /// Upstream dialect: LIST_ROOMS_ACK; the driver encodes
    /// [`crate::rtype::RtypeCore::upstream_rooms`].
    RoomList,
    /// Upstream dialect: CREATE_ROOM_ACK, the new room or `None` for refused.
    RoomCreated(Option<RoomId>),
    /// Upstream dialect: JOIN_ROOM_ACK.
    JoinResult(JoinStatus),
    /// Upstream dialect: ROOM_UPDATE, to connections not in a room.
    RoomUpdate(RoomRecord),
    /// Upstream dialect: CONNECT_ACK with status 1 (refused; hash and number 0).
    ConnectRefused,
}

/// Why a connection the driver reports closed went away.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConnClose {
    /// The peer closed (read returned 0).
    PeerClosed,
    /// A read or write error.
    Error,
    /// Its send queue passed the cap: a client that does not read is dropped.
    SlowReader,
    /// Closed at `--max-conns` to make room for a newcomer: the oldest connection without
    /// CONNECT_ACK ([`crate::rtype::RtypeCore::oldest_pending_conn`]).
    Evicted,
}
