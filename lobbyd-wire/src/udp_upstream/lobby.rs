//! The upstream R-Type lobby messages (`docs/protocols/udp-lobby-upstream.md`, "Messages") on
//! the framing of [`super::frame`]: the seed's seven codes with the payloads the upstream
//! program gives them, and RoomSetConfig.
//!
//! ```text
//! client -> lobby  0x40 LIST_ROOMS     (empty)
//!                  0x42 CREATE_ROOM    (empty)                                       v1
//!                                    | visibility u8, nameLen u16, name, passLen u16, pass  v2, v3
//!                  0x44 JOIN_ROOM      roomId u32                                    v1
//!                                    | roomId u32, passLen u16, pass                 v2
//!                                    | roomId u32, passLen u16, pass, spectator u8   v3
//! lobby -> client  0x41 ROOM_LIST      roomCount u16, records (`records`)
//!                  0x43 ROOM_CREATED   roomId u32, port u16
//!                  0x45 JOIN_SUCCESS   roomId u32, port u16
//!                  0x46 JOIN_FAILED    (empty): the failure of any request
//!                  0x71 RoomSetConfig  roomId u32, mode u8, enemy u16, playerSpeed u16,
//!                                      score u16 (percent), lives u8
//! ```
//!
//! The server writes a ROOM_LIST without allocating: `records::write_room_records`, then
//! [`finish_room_list`] (or both at once, [`emit_room_list`]).
//!
//! [`RequestRepr::parse`] accepts exactly these layouts (upstream's own reader tolerates
//! partial ones; its client never sends them). Any other code a client may send (the game,
//! auth, room administration, chat and leaderboard messages) parses to [`Request::Other`], for
//! the driver to drop and count by [`MessageFamily`]; lobby replies sent by a client are
//! [`Error::WrongDirection`]. Strings are bytes borrowed from the datagram, unchecked.

use super::frame::{emit_frame, open, read_u16, read_u32, PacketType, MIN_LEN};
use super::records::{
    write_room_records, ListedRoom, RecordLayout, RoomList, WrittenRecords, ROOM_COUNT_LEN,
};
use super::Error;

mod field {
    use crate::Field;

    pub const CREATE_VISIBILITY: usize = 0;
    pub const CREATE_NAME_LEN: Field = 1..3;
    pub const CREATE_NAME: usize = 3;

    pub const JOIN_ROOM_ID: Field = 0..4;
    pub const JOIN_PASSWORD_LEN: Field = 4..6;

    pub const REPLY_ROOM_ID: Field = 0..4;
    pub const REPLY_PORT: Field = 4..6;

    pub const CONFIG_ROOM_ID: Field = 0..4;
    pub const CONFIG_MODE: usize = 4;
    pub const CONFIG_ENEMY: Field = 5..7;
    pub const CONFIG_PLAYER_SPEED: Field = 7..9;
    pub const CONFIG_SCORE: Field = 9..11;
    pub const CONFIG_LIVES: usize = 11;
}

/// Length of a v1 JOIN_ROOM payload (the room id alone).
pub const JOIN_ROOM_ID_LEN: usize = 4;
/// Length of ROOM_CREATED's and JOIN_SUCCESS's payload.
pub const ROOM_PORT_PAYLOAD_LEN: usize = 6;
/// Length of RoomSetConfig's payload.
pub const ROOM_CONFIG_PAYLOAD_LEN: usize = 12;
/// Length of a whole ROOM_CREATED or JOIN_SUCCESS datagram.
pub const ROOM_PORT_LEN: usize = MIN_LEN + ROOM_PORT_PAYLOAD_LEN;
/// Length of a whole JOIN_FAILED datagram.
pub const JOIN_FAILED_LEN: usize = MIN_LEN;
/// Length of a whole RoomSetConfig datagram.
pub const ROOM_CONFIG_LEN: usize = MIN_LEN + ROOM_CONFIG_PAYLOAD_LEN;

/// A message type of the upstream lobby, as carried in the header's seventh byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// 0x40, client -> lobby: list the rooms.
    ListRooms,
    /// 0x41, lobby -> client: the room list.
    RoomList,
    /// 0x42, client -> lobby: create a room.
    CreateRoom,
    /// 0x43, lobby -> client: the room was created.
    RoomCreated,
    /// 0x44, client -> lobby: join a room.
    JoinRoom,
    /// 0x45, lobby -> client: the join was accepted.
    JoinSuccess,
    /// 0x46, lobby -> client: a request was refused.
    JoinFailed,
    /// 0x71: a room's configuration (sent by the lobby after a create or join).
    RoomSetConfig,
    /// Any other code.
    Other(u8),
}

impl From<u8> for MessageType {
    fn from(value: u8) -> Self {
        match value {
            0x40 => MessageType::ListRooms,
            0x41 => MessageType::RoomList,
            0x42 => MessageType::CreateRoom,
            0x43 => MessageType::RoomCreated,
            0x44 => MessageType::JoinRoom,
            0x45 => MessageType::JoinSuccess,
            0x46 => MessageType::JoinFailed,
            0x71 => MessageType::RoomSetConfig,
            other => MessageType::Other(other),
        }
    }
}

impl From<MessageType> for u8 {
    fn from(value: MessageType) -> Self {
        match value {
            MessageType::ListRooms => 0x40,
            MessageType::RoomList => 0x41,
            MessageType::CreateRoom => 0x42,
            MessageType::RoomCreated => 0x43,
            MessageType::JoinRoom => 0x44,
            MessageType::JoinSuccess => 0x45,
            MessageType::JoinFailed => 0x46,
            MessageType::RoomSetConfig => 0x71,
            MessageType::Other(other) => other,
        }
    }
}

/// The group an upstream message code belongs to, for counting the ones lobbyd does not
/// serve (upstream `PacketHeader.hpp`'s table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageFamily {
    /// 0x00-0x3F: the game protocol (hello, input, snapshots, disconnect, ...).
    Game,
    /// 0x40-0x49: the lobby (0x47-0x49: password prompts, leave room).
    Lobby,
    /// 0x50-0x5A: accounts (login, register, password, token, stats).
    Auth,
    /// 0x60-0x62: state checksums and rollback.
    Sync,
    /// 0x63-0x6F, 0x71, 0x72: room administration (kick, ban, roles, players, start,
    /// config, ready).
    Room,
    /// 0x70: chat.
    Chat,
    /// 0x73-0x74: the leaderboard.
    Leaderboard,
    /// A code upstream does not define.
    Undefined,
}

impl MessageFamily {
    /// Every family, in declaration order, for registering one counter each.
    pub const ALL: [MessageFamily; 8] = [
        MessageFamily::Game,
        MessageFamily::Lobby,
        MessageFamily::Auth,
        MessageFamily::Sync,
        MessageFamily::Room,
        MessageFamily::Chat,
        MessageFamily::Leaderboard,
        MessageFamily::Undefined,
    ];

    /// The family of message code `code`.
    pub const fn of(code: u8) -> MessageFamily {
        match code {
            0x00..=0x3f => MessageFamily::Game,
            0x40..=0x49 => MessageFamily::Lobby,
            0x50..=0x5a => MessageFamily::Auth,
            0x60..=0x62 => MessageFamily::Sync,
            0x63..=0x6f | 0x71 | 0x72 => MessageFamily::Room,
            0x70 => MessageFamily::Chat,
            0x73 | 0x74 => MessageFamily::Leaderboard,
            _ => MessageFamily::Undefined,
        }
    }

    /// Short snake_case label used as the metric label of this family.
    pub const fn as_str(&self) -> &'static str {
        match self {
            MessageFamily::Game => "game",
            MessageFamily::Lobby => "lobby",
            MessageFamily::Auth => "auth",
            MessageFamily::Sync => "sync",
            MessageFamily::Room => "room",
            MessageFamily::Chat => "chat",
            MessageFamily::Leaderboard => "leaderboard",
            MessageFamily::Undefined => "undefined",
        }
    }
}

/// CREATE_ROOM's payload (v2 and v3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CreateRoom<'a> {
    /// Upstream's visibility code (0 public, 1 unlisted, 2 friends only, 3 invite only).
    pub visibility: u8,
    /// The room's name.
    pub name: &'a [u8],
    /// The room's password, empty for none.
    pub password: &'a [u8],
}

/// What a v2 or v3 JOIN_ROOM carries after the room id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct JoinCredentials<'a> {
    /// The password offered, empty for none.
    pub password: &'a [u8],
    /// v3's spectator byte (non-zero: join as a spectator); `None` in a v2 request.
    pub spectator: Option<u8>,
}

/// A request a client sends to the lobby.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Request<'a> {
    /// LIST_ROOMS (0x40).
    ListRooms,
    /// CREATE_ROOM (0x42): `None` for v1's empty payload (upstream names the room
    /// "New Room").
    CreateRoom(Option<CreateRoom<'a>>),
    /// JOIN_ROOM (0x44).
    JoinRoom {
        /// The room to join.
        room_id: u32,
        /// The password and spectator byte (v2, v3); `None` for v1's bare room id.
        credentials: Option<JoinCredentials<'a>>,
    },
    /// Any other code that may travel from a client; its payload is not looked at.
    Other(u8),
}

/// A decoded client request and the sequence id its reply must echo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestRepr<'a> {
    /// The client's sequence id.
    pub seq: u16,
    /// What the client asks for.
    pub request: Request<'a>,
}

impl<'a> RequestRepr<'a> {
    /// Decodes a datagram received by the lobby.
    ///
    /// Checks, in order: [`super::frame::open`] with packetType 0x01 (`Truncated`,
    /// `BadMagic`, `BadVersion`, `BadLength`, `BadChecksum`, `Compressed`, `BadPacketType`);
    /// the message type (0x41, 0x43, 0x45, 0x46 give `WrongDirection`); the payload layout of
    /// the three lobby requests (`BadPayloadSize`).
    pub fn parse(buf: &'a [u8]) -> Result<RequestRepr<'a>, Error> {
        let frame = open(buf, PacketType::CLIENT_TO_SERVER)?;
        let seq = frame.seq();
        let code = frame.message_type();
        let payload = frame.into_payload();
        let request = match MessageType::from(code) {
            MessageType::ListRooms if payload.is_empty() => Request::ListRooms,
            MessageType::ListRooms => return Err(Error::BadPayloadSize),
            MessageType::CreateRoom => Request::CreateRoom(parse_create(payload)?),
            MessageType::JoinRoom => parse_join(payload)?,
            MessageType::RoomList
            | MessageType::RoomCreated
            | MessageType::JoinSuccess
            | MessageType::JoinFailed => return Err(Error::WrongDirection),
            MessageType::RoomSetConfig | MessageType::Other(_) => Request::Other(code),
        };
        Ok(RequestRepr { seq, request })
    }

    fn message_type(&self) -> MessageType {
        match self.request {
            Request::ListRooms => MessageType::ListRooms,
            Request::CreateRoom(_) => MessageType::CreateRoom,
            Request::JoinRoom { .. } => MessageType::JoinRoom,
            Request::Other(code) => MessageType::from(code),
        }
    }

    fn payload_len(&self) -> usize {
        match self.request {
            Request::ListRooms | Request::CreateRoom(None) | Request::Other(_) => 0,
            Request::CreateRoom(Some(create)) => 5 + create.name.len() + create.password.len(),
            Request::JoinRoom { credentials, .. } => {
                JOIN_ROOM_ID_LEN
                    + credentials.map_or(0, |c| {
                        2 + c.password.len() + usize::from(c.spectator.is_some())
                    })
            }
        }
    }

    /// Length of the datagram [`RequestRepr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        MIN_LEN + self.payload_len()
    }

    /// Writes the request datagram at the start of `buf` and returns its length. `Other`
    /// is written with an empty payload.
    ///
    /// # Panics
    /// If `buf` is shorter than [`RequestRepr::buffer_len`], or a name or password is longer
    /// than its 16-bit length (or the payload than `payloadSize`) can declare.
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        emit_frame(
            buf,
            PacketType::CLIENT_TO_SERVER,
            self.message_type().into(),
            self.seq,
            self.payload_len(),
            |payload| match self.request {
                Request::ListRooms | Request::CreateRoom(None) | Request::Other(_) => {}
                Request::CreateRoom(Some(create)) => {
                    payload[field::CREATE_VISIBILITY] = create.visibility;
                    let rest =
                        put_string(&mut payload[field::CREATE_NAME_LEN.start..], create.name);
                    put_string(rest, create.password);
                }
                Request::JoinRoom {
                    room_id,
                    credentials,
                } => {
                    payload[field::JOIN_ROOM_ID].copy_from_slice(&room_id.to_be_bytes());
                    if let Some(c) = credentials {
                        let rest =
                            put_string(&mut payload[field::JOIN_PASSWORD_LEN.start..], c.password);
                        if let Some(spectator) = c.spectator {
                            rest[0] = spectator;
                        }
                    }
                }
            },
        )
    }
}

/// CREATE_ROOM: empty, or exactly visibility, name and password.
fn parse_create(payload: &[u8]) -> Result<Option<CreateRoom<'_>>, Error> {
    if payload.is_empty() {
        return Ok(None);
    }
    let name_len = payload
        .get(field::CREATE_NAME_LEN)
        .map(read_u16)
        .ok_or(Error::BadPayloadSize)?;
    let (name, rest) = take_string(&payload[field::CREATE_NAME..], name_len)?;
    let (password_len, rest) = take_u16(rest)?;
    let (password, rest) = take_string(rest, password_len)?;
    if !rest.is_empty() {
        return Err(Error::BadPayloadSize);
    }
    Ok(Some(CreateRoom {
        visibility: payload[field::CREATE_VISIBILITY],
        name,
        password,
    }))
}

/// JOIN_ROOM: the room id, then nothing (v1), a password (v2), or a password and the
/// spectator byte (v3).
fn parse_join(payload: &[u8]) -> Result<Request<'_>, Error> {
    let room_id = payload
        .get(field::JOIN_ROOM_ID)
        .map(read_u32)
        .ok_or(Error::BadPayloadSize)?;
    if payload.len() == JOIN_ROOM_ID_LEN {
        return Ok(Request::JoinRoom {
            room_id,
            credentials: None,
        });
    }
    let (password_len, rest) = take_u16(&payload[field::JOIN_PASSWORD_LEN.start..])?;
    let (password, rest) = take_string(rest, password_len)?;
    let spectator = match rest {
        [] => None,
        [byte] => Some(*byte),
        _ => return Err(Error::BadPayloadSize),
    };
    Ok(Request::JoinRoom {
        room_id,
        credentials: Some(JoinCredentials {
            password,
            spectator,
        }),
    })
}

fn take_u16(bytes: &[u8]) -> Result<(u16, &[u8]), Error> {
    match bytes {
        [high, low, rest @ ..] => Ok((u16::from_be_bytes([*high, *low]), rest)),
        _ => Err(Error::BadPayloadSize),
    }
}

fn take_string(bytes: &[u8], len: u16) -> Result<(&[u8], &[u8]), Error> {
    let len = usize::from(len);
    if bytes.len() < len {
        return Err(Error::BadPayloadSize);
    }
    Ok(bytes.split_at(len))
}

/// Writes `len u16, bytes` at the start of `out` and returns what follows.
fn put_string<'b>(out: &'b mut [u8], bytes: &[u8]) -> &'b mut [u8] {
    let len = u16::try_from(bytes.len()).expect("string fits its 16-bit length");
    out[..2].copy_from_slice(&len.to_be_bytes());
    out[2..2 + bytes.len()].copy_from_slice(bytes);
    &mut out[2 + bytes.len()..]
}

/// RoomSetConfig's payload: a room's difficulty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RoomConfig {
    /// The room.
    pub room_id: u32,
    /// Upstream's difficulty: 0 noob, 1 hell, 2 nightmare, 3 custom.
    pub mode: u8,
    /// Enemy strength, in percent.
    pub enemy_percent: u16,
    /// Player speed, in percent.
    pub player_speed_percent: u16,
    /// Score, in percent.
    pub score_percent: u16,
    /// Lives per player.
    pub lives: u8,
}

impl RoomConfig {
    /// What the upstream lobby sends for a room it created: its "hell" preset (mode 1,
    /// every multiplier 100 %, 3 lives).
    pub const fn upstream_default(room_id: u32) -> RoomConfig {
        RoomConfig {
            room_id,
            mode: 1,
            enemy_percent: 100,
            player_speed_percent: 100,
            score_percent: 100,
            lives: 3,
        }
    }

    fn read(payload: &[u8]) -> Result<RoomConfig, Error> {
        if payload.len() != ROOM_CONFIG_PAYLOAD_LEN {
            return Err(Error::BadPayloadSize);
        }
        Ok(RoomConfig {
            room_id: read_u32(&payload[field::CONFIG_ROOM_ID]),
            mode: payload[field::CONFIG_MODE],
            enemy_percent: read_u16(&payload[field::CONFIG_ENEMY]),
            player_speed_percent: read_u16(&payload[field::CONFIG_PLAYER_SPEED]),
            score_percent: read_u16(&payload[field::CONFIG_SCORE]),
            lives: payload[field::CONFIG_LIVES],
        })
    }

    fn write(&self, payload: &mut [u8]) {
        payload[field::CONFIG_ROOM_ID].copy_from_slice(&self.room_id.to_be_bytes());
        payload[field::CONFIG_MODE] = self.mode;
        payload[field::CONFIG_ENEMY].copy_from_slice(&self.enemy_percent.to_be_bytes());
        payload[field::CONFIG_PLAYER_SPEED]
            .copy_from_slice(&self.player_speed_percent.to_be_bytes());
        payload[field::CONFIG_SCORE].copy_from_slice(&self.score_percent.to_be_bytes());
        payload[field::CONFIG_LIVES] = self.lives;
    }
}

/// A message the lobby sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reply<'a> {
    /// ROOM_LIST (0x41). The server writes lists with [`emit_room_list`]; this
    /// variant is for clients, tests and re-emitting a parsed list.
    RoomList(RoomList<'a>),
    /// ROOM_CREATED (0x43).
    RoomCreated {
        /// The new room.
        room_id: u32,
        /// UDP port of its game instance.
        port: u16,
    },
    /// JOIN_SUCCESS (0x45).
    JoinSuccess {
        /// The joined room.
        room_id: u32,
        /// UDP port of its game instance.
        port: u16,
    },
    /// JOIN_FAILED (0x46), the answer to any refused request.
    JoinFailed,
    /// RoomSetConfig (0x71), after ROOM_CREATED and JOIN_SUCCESS.
    RoomConfig(RoomConfig),
}

/// A decoded lobby message and the sequence id it echoes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplyRepr<'a> {
    /// The sequence id of the request being answered.
    pub seq: u16,
    /// The answer.
    pub reply: Reply<'a>,
}

impl<'a> ReplyRepr<'a> {
    /// Decodes a datagram sent by the lobby (for clients, tests and the load generator),
    /// reading a ROOM_LIST's records in `layout`.
    ///
    /// Same order as [`RequestRepr::parse`], with packetType 0x02; request codes give
    /// `WrongDirection`, other codes `BadPayloadSize` (no payload layout is known for them);
    /// a payload of the wrong length or layout `BadPayloadSize`.
    pub fn parse(buf: &'a [u8], layout: RecordLayout) -> Result<ReplyRepr<'a>, Error> {
        let frame = open(buf, PacketType::SERVER_TO_CLIENT)?;
        let seq = frame.seq();
        let message_type = MessageType::from(frame.message_type());
        let payload = frame.into_payload();
        let reply = match message_type {
            MessageType::RoomList => Reply::RoomList(RoomList::parse(payload, layout)?),
            MessageType::RoomCreated => {
                let (room_id, port) = read_room_port(payload)?;
                Reply::RoomCreated { room_id, port }
            }
            MessageType::JoinSuccess => {
                let (room_id, port) = read_room_port(payload)?;
                Reply::JoinSuccess { room_id, port }
            }
            MessageType::JoinFailed if payload.is_empty() => Reply::JoinFailed,
            MessageType::RoomSetConfig => Reply::RoomConfig(RoomConfig::read(payload)?),
            MessageType::ListRooms | MessageType::CreateRoom | MessageType::JoinRoom => {
                return Err(Error::WrongDirection)
            }
            MessageType::JoinFailed | MessageType::Other(_) => return Err(Error::BadPayloadSize),
        };
        Ok(ReplyRepr { seq, reply })
    }

    fn payload_len(&self) -> usize {
        match self.reply {
            Reply::RoomList(list) => list.payload_len(),
            Reply::RoomCreated { .. } | Reply::JoinSuccess { .. } => ROOM_PORT_PAYLOAD_LEN,
            Reply::JoinFailed => 0,
            Reply::RoomConfig(_) => ROOM_CONFIG_PAYLOAD_LEN,
        }
    }

    /// Length of the datagram [`ReplyRepr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        MIN_LEN + self.payload_len()
    }

    /// Writes the datagram at the start of `buf` and returns its length.
    ///
    /// # Panics
    /// If `buf` is shorter than [`ReplyRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let message_type = match self.reply {
            Reply::RoomList(_) => MessageType::RoomList,
            Reply::RoomCreated { .. } => MessageType::RoomCreated,
            Reply::JoinSuccess { .. } => MessageType::JoinSuccess,
            Reply::JoinFailed => MessageType::JoinFailed,
            Reply::RoomConfig(_) => MessageType::RoomSetConfig,
        };
        emit_frame(
            buf,
            PacketType::SERVER_TO_CLIENT,
            message_type.into(),
            self.seq,
            self.payload_len(),
            |payload| match self.reply {
                Reply::RoomList(list) => list.write(payload),
                Reply::RoomCreated { room_id, port } | Reply::JoinSuccess { room_id, port } => {
                    payload[field::REPLY_ROOM_ID].copy_from_slice(&room_id.to_be_bytes());
                    payload[field::REPLY_PORT].copy_from_slice(&port.to_be_bytes());
                }
                Reply::JoinFailed => {}
                Reply::RoomConfig(config) => config.write(payload),
            },
        )
    }
}

fn read_room_port(payload: &[u8]) -> Result<(u32, u16), Error> {
    if payload.len() != ROOM_PORT_PAYLOAD_LEN {
        return Err(Error::BadPayloadSize);
    }
    Ok((
        read_u32(&payload[field::REPLY_ROOM_ID]),
        read_u16(&payload[field::REPLY_PORT]),
    ))
}

/// Frames the records [`write_room_records`] left in `buf` as a ROOM_LIST answering `seq`:
/// header, count and checksum around them. Returns the datagram's length.
///
/// # Panics
/// If `written` does not describe records that fit in `buf` (the caller's bug).
pub fn finish_room_list(buf: &mut [u8], seq: u16, written: WrittenRecords) -> usize {
    let count = u16::try_from(written.count).expect("at most 65,535 records");
    emit_frame(
        buf,
        PacketType::SERVER_TO_CLIENT,
        MessageType::RoomList.into(),
        seq,
        ROOM_COUNT_LEN + written.len,
        |payload| payload[..ROOM_COUNT_LEN].copy_from_slice(&count.to_be_bytes()),
    )
}

/// Writes a whole ROOM_LIST answering `seq` into `buf` and returns its length:
/// [`write_room_records`] then [`finish_room_list`].
///
/// # Panics
/// If `buf` is shorter than an empty list, `room_list_len(0)` = 23 bytes.
pub fn emit_room_list<'r>(
    buf: &mut [u8],
    seq: u16,
    layout: RecordLayout,
    rooms: impl IntoIterator<Item = ListedRoom<'r>>,
) -> usize {
    let written = write_room_records(buf, layout, rooms);
    finish_room_list(buf, seq, written)
}
