//! The room table one node of a group publishes in the directory (docs/OPERATING.md "More
//! than one process"): the value of the Redis key `lobbyd:rooms:{node}`, the node's listable
//! UDP rooms in ROOM_LIST's own 13-byte record encoding ([`crate::udp_lobby`]), behind a
//! 12-byte header.
//!
//! ```text
//! offset  size  field
//! 0       1     version     1
//! 1       1     node        the publishing node's id (1-255)
//! 2       8     generation  u64, changes whenever the records do
//! 10      2     count       u16, at most MAX_NODE_ROOMS
//! 12      13n   records     ROOM_LIST records, the node's listing order (joinable first)
//! ```
//!
//! The value of `lobbyd:wz:{node}`, the node's listable Warzone games, is [`NodeGamesRepr`]:
//! the same header, then game records (id, port, host address, the listed GAMESTRUCT).
//!
//! All integers big-endian. [`NodeRoomsRepr::parse`] is total: any bytes give a value whose
//! records are exactly `count` whole records, or an [`Error`]; it borrows the records and
//! allocates nothing. The value comes from a store other processes can write, so a reader
//! treats it as untrusted input like any datagram.
//!
//! **A node's inbox** (the Redis stream `lobbyd:inbox:{node}`): a JOIN_ROOM of another node's
//! room is asked of its owner, and answered, as one stream entry each, field `m`, value an
//! [`InboxRepr`]:
//!
//! ```text
//! ask (kind 1)                              answer (kind 2)
//! offset  size  field                       offset  size  field
//! 0       1     kind        1               0       1     kind     2
//! 1       1     from        the asker       1       1     from     the owner
//! 2       8     request     u64             2       8     request  u64, the ask's
//! 10      4     room        u32             10      4     room     u32
//! 14      1     family      4 or 6          14      1     outcome  0 granted, else a refusal
//! 15      4|16  client IP                   15      2     port     the room's instance port
//! +0      2     client port                                         (0 when refused)
//! +2      1     password length (<= 64)
//! +3      n     password
//! ```
//!
//! [`InboxRepr::parse`] is total like the table's, and borrows the password.

use core::fmt;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::udp_lobby::{RoomRecord, ROOM_RECORD_LEN};
use crate::wz::GAMESTRUCT_LEN;

/// The version byte this module reads and writes.
pub const VERSION: u8 = 1;
/// Bytes before the records.
pub const HEADER_LEN: usize = 12;
/// The most records one node publishes: one full ROOM_LIST (a node lists at most that many
/// of its own rooms anywhere).
pub const MAX_NODE_ROOMS: usize = 112;

mod field {
    use crate::Field;
    pub const VERSION: usize = 0;
    pub const NODE: usize = 1;
    pub const GENERATION: Field = 2..10;
    pub const COUNT: Field = 10..12;
}

/// Why a node's room table did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// Shorter than the header.
    Truncated,
    /// A version this reader does not know.
    BadVersion,
    /// Node id 0 (ids are 1-255).
    BadNode,
    /// The length is not the header plus `count` records, or `count` is over
    /// [`MAX_NODE_ROOMS`].
    BadLength,
}

impl Error {
    /// A short label for metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Error::Truncated => "truncated",
            Error::BadVersion => "bad_version",
            Error::BadNode => "bad_node",
            Error::BadLength => "bad_length",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One node's room table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeRoomsRepr<'a> {
    /// The publishing node.
    pub node: u8,
    /// Changes whenever the records do.
    pub generation: u64,
    /// Whole ROOM_LIST records, `count` of them.
    records: &'a [u8],
}

impl<'a> NodeRoomsRepr<'a> {
    /// A table over `records`, encoded ROOM_LIST records (a whole number of them, at most
    /// [`MAX_NODE_ROOMS`]; `None` otherwise).
    pub fn new(node: u8, generation: u64, records: &'a [u8]) -> Option<NodeRoomsRepr<'a>> {
        let whole = records.len() % ROOM_RECORD_LEN == 0;
        (node != 0 && whole && records.len() / ROOM_RECORD_LEN <= MAX_NODE_ROOMS).then_some(
            NodeRoomsRepr {
                node,
                generation,
                records,
            },
        )
    }

    /// Parses a table; total.
    pub fn parse(buf: &'a [u8]) -> Result<NodeRoomsRepr<'a>, Error> {
        let (node, generation, records) = parse_table(buf, ROOM_RECORD_LEN, MAX_NODE_ROOMS)?;
        Ok(NodeRoomsRepr {
            node,
            generation,
            records,
        })
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len() / ROOM_RECORD_LEN
    }

    /// Whether the node lists no room.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The records' bytes, as ROOM_LIST carries them.
    pub fn record_bytes(&self) -> impl Iterator<Item = &'a [u8; ROOM_RECORD_LEN]> + 'a {
        self.records
            .chunks_exact(ROOM_RECORD_LEN)
            .filter_map(|chunk| <&[u8; ROOM_RECORD_LEN]>::try_from(chunk).ok())
    }

    /// The records, decoded.
    pub fn records(&self) -> impl Iterator<Item = RoomRecord> + 'a {
        self.record_bytes().map(RoomRecord::from_bytes)
    }

    /// Bytes [`NodeRoomsRepr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.records.len()
    }

    /// Writes the table into `buf[..self.buffer_len()]`; returns that length.
    ///
    /// # Panics
    /// If `buf` is shorter than [`NodeRoomsRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        emit_table(buf, self.node, self.generation, self.len(), self.records)
    }
}

/// The longest password an ask carries (a room's password is at most 64 bytes).
pub const MAX_ASK_PASSWORD: usize = 64;
/// The kind byte of an ask.
pub const KIND_ASK: u8 = 1;
/// The kind byte of an answer.
pub const KIND_ANSWER: u8 = 2;
/// Bytes of an answer.
pub const ANSWER_LEN: usize = 17;
/// Bytes of an ask before the client address.
const ASK_HEADER_LEN: usize = 15;

/// Why an inbox entry did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InboxError {
    /// Shorter than its kind's layout says.
    Truncated,
    /// A kind byte this reader does not know.
    BadKind,
    /// Node id 0 in `from`.
    BadNode,
    /// An ask's address family is neither 4 nor 6.
    BadFamily,
    /// A password over [`MAX_ASK_PASSWORD`], or bytes after the message.
    BadLength,
}

impl InboxError {
    /// A short label for metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            InboxError::Truncated => "truncated",
            InboxError::BadKind => "bad_kind",
            InboxError::BadNode => "bad_node",
            InboxError::BadFamily => "bad_family",
            InboxError::BadLength => "bad_length",
        }
    }
}

impl fmt::Display for InboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A JOIN_ROOM of room `room`, asked of its owner by node `from` for the client at
/// `client` (whose address the seat is reserved for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AskRepr<'a> {
    /// The asking node (1-255): where the answer goes.
    pub from: u8,
    /// The asker's request id, echoed in the answer.
    pub request: u64,
    /// The room.
    pub room: u32,
    /// The client's address as the asking node saw it.
    pub client: SocketAddr,
    /// The password the client offered (at most [`MAX_ASK_PASSWORD`] bytes).
    pub password: &'a [u8],
}

/// The owner's answer to an ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AnswerRepr {
    /// The owner (1-255).
    pub from: u8,
    /// The ask's request id.
    pub request: u64,
    /// The room.
    pub room: u32,
    /// 0: a seat is reserved, at `port`; else why not (the owner's refusal code).
    pub outcome: u8,
    /// The room's instance port (0 when refused).
    pub port: u16,
}

/// One entry of a node's inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InboxRepr<'a> {
    /// A JOIN_ROOM for the owner to decide.
    Ask(AskRepr<'a>),
    /// The owner's decision.
    Answer(AnswerRepr),
}

impl<'a> InboxRepr<'a> {
    /// Parses an entry; total.
    pub fn parse(buf: &'a [u8]) -> Result<InboxRepr<'a>, InboxError> {
        let kind = *buf.first().ok_or(InboxError::Truncated)?;
        if kind != KIND_ASK && kind != KIND_ANSWER {
            return Err(InboxError::BadKind);
        }
        let header = if kind == KIND_ASK {
            ASK_HEADER_LEN
        } else {
            ANSWER_LEN
        };
        if buf.len() < header {
            return Err(InboxError::Truncated);
        }
        let from = buf[1];
        if from == 0 {
            return Err(InboxError::BadNode);
        }
        let request = u64::from_be_bytes(array(&buf[2..10]));
        let room = u32::from_be_bytes(array(&buf[10..14]));
        if kind == KIND_ANSWER {
            if buf.len() != ANSWER_LEN {
                return Err(InboxError::BadLength);
            }
            return Ok(InboxRepr::Answer(AnswerRepr {
                from,
                request,
                room,
                outcome: buf[14],
                port: u16::from_be_bytes(array(&buf[15..17])),
            }));
        }
        let (ip, rest) = match buf[14] {
            4 if buf.len() >= ASK_HEADER_LEN + 4 => (
                IpAddr::V4(Ipv4Addr::from(array::<4>(&buf[15..19]))),
                &buf[19..],
            ),
            6 if buf.len() >= ASK_HEADER_LEN + 16 => (
                IpAddr::V6(Ipv6Addr::from(array::<16>(&buf[15..31]))),
                &buf[31..],
            ),
            4 | 6 => return Err(InboxError::Truncated),
            _ => return Err(InboxError::BadFamily),
        };
        if rest.len() < 3 {
            return Err(InboxError::Truncated);
        }
        let port = u16::from_be_bytes(array(&rest[..2]));
        let len = usize::from(rest[2]);
        let password = &rest[3..];
        if len > MAX_ASK_PASSWORD {
            return Err(InboxError::BadLength);
        }
        if password.len() != len {
            return Err(if password.len() < len {
                InboxError::Truncated
            } else {
                InboxError::BadLength
            });
        }
        Ok(InboxRepr::Ask(AskRepr {
            from,
            request,
            room,
            client: SocketAddr::new(ip, port),
            password,
        }))
    }

    /// Bytes [`InboxRepr::emit`] writes (an ask's password cut to [`MAX_ASK_PASSWORD`]).
    pub fn buffer_len(&self) -> usize {
        match self {
            InboxRepr::Answer(_) => ANSWER_LEN,
            InboxRepr::Ask(ask) => {
                let ip = if ask.client.is_ipv4() { 4 } else { 16 };
                ASK_HEADER_LEN + ip + 3 + ask.password.len().min(MAX_ASK_PASSWORD)
            }
        }
    }

    /// Writes the entry into `buf[..self.buffer_len()]`; returns that length.
    ///
    /// # Panics
    /// If `buf` is shorter than [`InboxRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let len = self.buffer_len();
        let buf = &mut buf[..len];
        let (kind, from, request, room) = match self {
            InboxRepr::Ask(a) => (KIND_ASK, a.from, a.request, a.room),
            InboxRepr::Answer(a) => (KIND_ANSWER, a.from, a.request, a.room),
        };
        buf[0] = kind;
        buf[1] = from;
        buf[2..10].copy_from_slice(&request.to_be_bytes());
        buf[10..14].copy_from_slice(&room.to_be_bytes());
        match self {
            InboxRepr::Answer(answer) => {
                buf[14] = answer.outcome;
                buf[15..17].copy_from_slice(&answer.port.to_be_bytes());
            }
            InboxRepr::Ask(ask) => {
                let at = match ask.client.ip() {
                    IpAddr::V4(ip) => {
                        buf[14] = 4;
                        buf[15..19].copy_from_slice(&ip.octets());
                        19
                    }
                    IpAddr::V6(ip) => {
                        buf[14] = 6;
                        buf[15..31].copy_from_slice(&ip.octets());
                        31
                    }
                };
                let password = &ask.password[..ask.password.len().min(MAX_ASK_PASSWORD)];
                buf[at..at + 2].copy_from_slice(&ask.client.port().to_be_bytes());
                // At most MAX_ASK_PASSWORD, inside a u8.
                buf[at + 2] = password.len() as u8;
                buf[at + 3..].copy_from_slice(password);
            }
        }
        len
    }
}

/// Whether a listed room takes joins: Waiting or Countdown with a free seat (the order of
/// docs/protocols/udp-lobby.md "LIST_ROOMS": joinable rooms first).
pub fn is_joinable(record: &RoomRecord) -> bool {
    record.state <= 1 && record.player_count < record.max_players
}

/// One node's Warzone games, the value of `lobbyd:wz:{node}`: the same 12-byte header as
/// [`NodeRoomsRepr`] (version, node, generation, count), then `count` game records of
/// [`GAME_RECORD_LEN`] bytes, the node's listing order:
///
/// ```text
/// offset  size  field
/// 0       4     game id    u32, the owning node's id
/// 4       2     port       u16, the game port browsers join
/// 6       16    host       the host's IPv6 address (an IPv4 host as ::ffff:a.b.c.d)
/// 22      814   gamestruct the GAMESTRUCT exactly as the owning node lists it
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeGamesRepr<'a> {
    /// The publishing node.
    pub node: u8,
    /// Changes whenever the records do.
    pub generation: u64,
    /// Whole game records, `count` of them.
    records: &'a [u8],
}

/// Bytes of one game record in a [`NodeGamesRepr`].
pub const GAME_RECORD_LEN: usize = 22 + GAMESTRUCT_LEN;
/// The most games one node publishes: one full Warzone list (a list shows at most that
/// many games).
pub const MAX_NODE_GAMES: usize = 200;

mod game_field {
    use crate::Field;
    pub const ID: Field = 0..4;
    pub const PORT: Field = 4..6;
    pub const HOST: Field = 6..22;
    pub const GAMESTRUCT: Field = 22..super::GAME_RECORD_LEN;
}

/// One game of another node, as its table carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GameRecord<'a> {
    /// The game's id on its node.
    pub game_id: u32,
    /// The game port browsers join.
    pub port: u16,
    /// The host's address.
    pub host: IpAddr,
    /// The GAMESTRUCT as listed.
    pub gamestruct: &'a [u8; GAMESTRUCT_LEN],
}

impl<'a> GameRecord<'a> {
    /// Reads one whole record.
    pub fn from_bytes(bytes: &'a [u8; GAME_RECORD_LEN]) -> GameRecord<'a> {
        let host = Ipv6Addr::from(array::<16>(&bytes[game_field::HOST]));
        let host = host.to_ipv4_mapped().map_or(IpAddr::V6(host), IpAddr::V4);
        let (_, gamestruct) = bytes.split_at(game_field::GAMESTRUCT.start);
        GameRecord {
            game_id: u32::from_be_bytes(array(&bytes[game_field::ID])),
            port: u16::from_be_bytes(array(&bytes[game_field::PORT])),
            host,
            gamestruct: <&[u8; GAMESTRUCT_LEN]>::try_from(gamestruct)
                .expect("a record's tail is one GAMESTRUCT"),
        }
    }

    /// Writes the record into `buf` (whole).
    pub fn emit(&self, buf: &mut [u8; GAME_RECORD_LEN]) {
        buf[game_field::ID].copy_from_slice(&self.game_id.to_be_bytes());
        buf[game_field::PORT].copy_from_slice(&self.port.to_be_bytes());
        let host = match self.host {
            IpAddr::V4(v4) => v4.to_ipv6_mapped(),
            IpAddr::V6(v6) => v6,
        };
        buf[game_field::HOST].copy_from_slice(&host.octets());
        buf[game_field::GAMESTRUCT].copy_from_slice(self.gamestruct);
    }
}

impl<'a> NodeGamesRepr<'a> {
    /// A table over `records`, encoded game records (a whole number of them, at most
    /// [`MAX_NODE_GAMES`]; `None` otherwise).
    pub fn new(node: u8, generation: u64, records: &'a [u8]) -> Option<NodeGamesRepr<'a>> {
        let whole = records.len() % GAME_RECORD_LEN == 0;
        (node != 0 && whole && records.len() / GAME_RECORD_LEN <= MAX_NODE_GAMES).then_some(
            NodeGamesRepr {
                node,
                generation,
                records,
            },
        )
    }

    /// Parses a table; total.
    pub fn parse(buf: &'a [u8]) -> Result<NodeGamesRepr<'a>, Error> {
        let (node, generation, records) = parse_table(buf, GAME_RECORD_LEN, MAX_NODE_GAMES)?;
        Ok(NodeGamesRepr {
            node,
            generation,
            records,
        })
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len() / GAME_RECORD_LEN
    }

    /// Whether the node lists no game.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The records' bytes.
    pub fn record_bytes(&self) -> impl Iterator<Item = &'a [u8; GAME_RECORD_LEN]> + 'a {
        self.records
            .chunks_exact(GAME_RECORD_LEN)
            .filter_map(|chunk| <&[u8; GAME_RECORD_LEN]>::try_from(chunk).ok())
    }

    /// The records, decoded.
    pub fn records(&self) -> impl Iterator<Item = GameRecord<'a>> + 'a {
        self.record_bytes().map(GameRecord::from_bytes)
    }

    /// Bytes [`NodeGamesRepr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.records.len()
    }

    /// Writes the table into `buf[..self.buffer_len()]`; returns that length.
    ///
    /// # Panics
    /// If `buf` is shorter than [`NodeGamesRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        emit_table(buf, self.node, self.generation, self.len(), self.records)
    }
}

/// The header of either table read, and its records checked: `(node, generation, records)`.
fn parse_table(buf: &[u8], record_len: usize, max: usize) -> Result<(u8, u64, &[u8]), Error> {
    if buf.len() < HEADER_LEN {
        return Err(Error::Truncated);
    }
    if buf[field::VERSION] != VERSION {
        return Err(Error::BadVersion);
    }
    let node = buf[field::NODE];
    if node == 0 {
        return Err(Error::BadNode);
    }
    let generation = u64::from_be_bytes(array(&buf[field::GENERATION]));
    let count = usize::from(u16::from_be_bytes(array(&buf[field::COUNT])));
    let records = &buf[HEADER_LEN..];
    if count > max || records.len() != count * record_len {
        return Err(Error::BadLength);
    }
    Ok((node, generation, records))
}

/// Writes either table's header and its records; returns the length.
fn emit_table(buf: &mut [u8], node: u8, generation: u64, count: usize, records: &[u8]) -> usize {
    let len = HEADER_LEN + records.len();
    let buf = &mut buf[..len];
    buf[field::VERSION] = VERSION;
    buf[field::NODE] = node;
    buf[field::GENERATION].copy_from_slice(&generation.to_be_bytes());
    // `new` and `parse` bound the count by the table's maximum, well inside a u16.
    let count = u16::try_from(count).unwrap_or(u16::MAX);
    buf[field::COUNT].copy_from_slice(&count.to_be_bytes());
    buf[HEADER_LEN..].copy_from_slice(records);
    len
}

fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&bytes[..N]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::quickcheck;

    /// Node 7, generation 0x0102030405060708, one room: id 7<<24|1, 1 of 4 players, port
    /// 4300 (0x10cc), Waiting.
    const GOLDEN: [u8; 25] = [
        0x01, 0x07, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x00, 0x01, // header
        0x07, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x04, 0x10, 0xcc, 0x00, 0x00, 0x00,
    ];

    fn golden_record() -> RoomRecord {
        RoomRecord {
            room_id: 7 << 24 | 1,
            player_count: 1,
            max_players: 4,
            port: 4300,
            state: 0,
        }
    }

    #[test]
    fn deconstruct() {
        let repr = NodeRoomsRepr::parse(&GOLDEN).unwrap();
        assert_eq!(repr.node, 7);
        assert_eq!(repr.generation, 0x0102_0304_0506_0708);
        assert_eq!(repr.len(), 1);
        assert_eq!(repr.records().collect::<Vec<_>>(), vec![golden_record()]);
    }

    #[test]
    fn construct() {
        let repr = NodeRoomsRepr::new(7, 0x0102_0304_0506_0708, &GOLDEN[HEADER_LEN..]).unwrap();
        let mut buf = [0xa5; 25];
        assert_eq!(repr.emit(&mut buf), 25);
        assert_eq!(buf, GOLDEN);
    }

    #[test]
    fn errors() {
        assert_eq!(NodeRoomsRepr::parse(&GOLDEN[..11]), Err(Error::Truncated));
        let mut bad = GOLDEN;
        bad[0] = 2;
        assert_eq!(NodeRoomsRepr::parse(&bad), Err(Error::BadVersion));
        let mut bad = GOLDEN;
        bad[1] = 0;
        assert_eq!(NodeRoomsRepr::parse(&bad), Err(Error::BadNode));
        assert_eq!(NodeRoomsRepr::parse(&GOLDEN[..24]), Err(Error::BadLength));
        let mut bad = GOLDEN;
        bad[11] = 2;
        assert_eq!(NodeRoomsRepr::parse(&bad), Err(Error::BadLength));
        // A count over MAX_NODE_ROOMS is refused even when the length agrees.
        let mut big = vec![0u8; HEADER_LEN + 113 * ROOM_RECORD_LEN];
        big[..HEADER_LEN].copy_from_slice(&GOLDEN[..HEADER_LEN]);
        big[10..12].copy_from_slice(&113u16.to_be_bytes());
        assert_eq!(NodeRoomsRepr::parse(&big), Err(Error::BadLength));
        assert!(NodeRoomsRepr::new(0, 1, &[]).is_none());
        assert!(NodeRoomsRepr::new(1, 1, &[0; 12]).is_none());
    }

    #[test]
    fn joinable_is_waiting_or_countdown_with_a_free_seat() {
        let open = golden_record();
        assert!(is_joinable(&open));
        assert!(is_joinable(&RoomRecord { state: 1, ..open }));
        assert!(!is_joinable(&RoomRecord { state: 2, ..open }));
        assert!(!is_joinable(&RoomRecord {
            player_count: 4,
            ..open
        }));
    }

    /// Node 2 asks for room 1<<24|5 for 127.0.0.3:40000 (0x9c40) with password "pw",
    /// request 9.
    const GOLDEN_ASK: [u8; 26] = [
        0x01, 0x02, 0, 0, 0, 0, 0, 0, 0, 0x09, 0x01, 0x00, 0x00, 0x05, 0x04, 127, 0, 0, 3, 0x9c,
        0x40, 0x02, b'p', b'w', 0, 0,
    ];
    /// Node 1 grants request 9, room 1<<24|5, port 4301 (0x10cd).
    const GOLDEN_ANSWER: [u8; 17] = [
        0x02, 0x01, 0, 0, 0, 0, 0, 0, 0, 0x09, 0x01, 0x00, 0x00, 0x05, 0x00, 0x10, 0xcd,
    ];

    fn golden_ask() -> InboxRepr<'static> {
        InboxRepr::Ask(AskRepr {
            from: 2,
            request: 9,
            room: 1 << 24 | 5,
            client: "127.0.0.3:40000".parse().unwrap(),
            password: b"pw",
        })
    }

    #[test]
    fn inbox_golden_bytes() {
        assert_eq!(InboxRepr::parse(&GOLDEN_ASK[..24]), Ok(golden_ask()));
        let mut buf = [0xa5; 24];
        assert_eq!(golden_ask().emit(&mut buf), 24);
        assert_eq!(buf[..], GOLDEN_ASK[..24]);
        let answer = InboxRepr::Answer(AnswerRepr {
            from: 1,
            request: 9,
            room: 1 << 24 | 5,
            outcome: 0,
            port: 4301,
        });
        assert_eq!(InboxRepr::parse(&GOLDEN_ANSWER), Ok(answer));
        let mut buf = [0xa5; ANSWER_LEN];
        assert_eq!(answer.emit(&mut buf), ANSWER_LEN);
        assert_eq!(buf, GOLDEN_ANSWER);
    }

    #[test]
    fn inbox_errors() {
        assert_eq!(InboxRepr::parse(&[]), Err(InboxError::Truncated));
        assert_eq!(InboxRepr::parse(&[3]), Err(InboxError::BadKind));
        assert_eq!(
            InboxRepr::parse(&GOLDEN_ANSWER[..16]),
            Err(InboxError::Truncated)
        );
        assert_eq!(
            InboxRepr::parse(&GOLDEN_ASK[..23]),
            Err(InboxError::Truncated)
        );
        assert_eq!(
            InboxRepr::parse(&GOLDEN_ASK[..18]),
            Err(InboxError::Truncated)
        );
        // Two bytes after the password.
        assert_eq!(InboxRepr::parse(&GOLDEN_ASK), Err(InboxError::BadLength));
        let mut bad = GOLDEN_ASK;
        bad[14] = 5;
        assert_eq!(InboxRepr::parse(&bad[..24]), Err(InboxError::BadFamily));
        let mut bad = GOLDEN_ANSWER;
        bad[1] = 0;
        assert_eq!(InboxRepr::parse(&bad), Err(InboxError::BadNode));
        let mut long = GOLDEN_ASK[..22].to_vec();
        long[21] = 65;
        long.extend_from_slice(&[b'x'; 65]);
        assert_eq!(InboxRepr::parse(&long), Err(InboxError::BadLength));
    }

    /// Node 3, generation 9, one game: id 0x01020304, port 2100 (0x0834), host 10.0.0.7,
    /// a GAMESTRUCT of bytes `0x5a`.
    fn golden_games() -> Vec<u8> {
        let mut bytes = vec![
            0x01, 0x03, 0, 0, 0, 0, 0, 0, 0, 0x09, 0x00, 0x01, // header
            0x01, 0x02, 0x03, 0x04, 0x08, 0x34, // id, port
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 7, // ::ffff:10.0.0.7
        ];
        bytes.extend_from_slice(&[0x5a; GAMESTRUCT_LEN]);
        bytes
    }

    #[test]
    fn games_deconstruct_and_construct() {
        let golden = golden_games();
        let repr = NodeGamesRepr::parse(&golden).unwrap();
        assert_eq!((repr.node, repr.generation, repr.len()), (3, 9, 1));
        let game = repr.records().next().unwrap();
        assert_eq!(game.game_id, 0x0102_0304);
        assert_eq!(game.port, 2100);
        assert_eq!(game.host, IpAddr::from([10, 0, 0, 7]));
        assert_eq!(game.gamestruct, &[0x5a; GAMESTRUCT_LEN]);

        let mut record = [0u8; GAME_RECORD_LEN];
        game.emit(&mut record);
        let repr = NodeGamesRepr::new(3, 9, &record).unwrap();
        let mut buf = vec![0xa5; repr.buffer_len()];
        assert_eq!(repr.emit(&mut buf), golden.len());
        assert_eq!(buf, golden);
    }

    #[test]
    fn games_errors() {
        let golden = golden_games();
        assert_eq!(NodeGamesRepr::parse(&golden[..11]), Err(Error::Truncated));
        assert_eq!(
            NodeGamesRepr::parse(&golden[..golden.len() - 1]),
            Err(Error::BadLength)
        );
        // A rooms table is not a games table (its records are 13 bytes).
        assert_eq!(NodeGamesRepr::parse(&GOLDEN), Err(Error::BadLength));
        let mut big = vec![0u8; HEADER_LEN + 201 * GAME_RECORD_LEN];
        big[..HEADER_LEN].copy_from_slice(&golden[..HEADER_LEN]);
        big[10..12].copy_from_slice(&201u16.to_be_bytes());
        assert_eq!(NodeGamesRepr::parse(&big), Err(Error::BadLength));
        assert!(NodeGamesRepr::new(0, 1, &[]).is_none());
        assert!(NodeGamesRepr::new(1, 1, &[0; 13]).is_none());
    }

    quickcheck! {
        fn arbitrary_bytes_never_panic(data: Vec<u8>) -> bool {
            let _ = NodeRoomsRepr::parse(&data);
            let _ = InboxRepr::parse(&data);
            true
        }

        fn ask_round_trip(
            from: u8, request: u64, room: u32, client: SocketAddr, password: Vec<u8>
        ) -> bool {
            let password = &password[..password.len().min(MAX_ASK_PASSWORD)];
            // The flow label and scope of a v6 address are not carried.
            let client = SocketAddr::new(client.ip(), client.port());
            let repr = InboxRepr::Ask(AskRepr { from: from.max(1), request, room, client, password });
            let mut buf = vec![0xa5; repr.buffer_len()];
            repr.emit(&mut buf);
            InboxRepr::parse(&buf) == Ok(repr)
        }

        fn answer_round_trip(from: u8, request: u64, room: u32, outcome: u8, port: u16) -> bool {
            let repr = InboxRepr::Answer(AnswerRepr { from: from.max(1), request, room, outcome, port });
            let mut buf = vec![0xa5; repr.buffer_len()];
            repr.emit(&mut buf);
            InboxRepr::parse(&buf) == Ok(repr)
        }

        fn round_trip(node: u8, generation: u64, records: Vec<u8>) -> bool {
            let node = node.max(1);
            let whole = records.len() / ROOM_RECORD_LEN * ROOM_RECORD_LEN;
            let records = &records[..whole.min(MAX_NODE_ROOMS * ROOM_RECORD_LEN)];
            let repr = NodeRoomsRepr::new(node, generation, records).unwrap();
            let mut buf = vec![0xa5; repr.buffer_len()];
            repr.emit(&mut buf);
            NodeRoomsRepr::parse(&buf) == Ok(repr)
        }

        fn games_never_panic(data: Vec<u8>) -> bool {
            let _ = NodeGamesRepr::parse(&data);
            true
        }

        fn games_round_trip(node: u8, generation: u64, games: Vec<(u32, u16, u128, u8)>) -> bool {
            let node = node.max(1);
            let mut records = vec![0u8; games.len().min(MAX_NODE_GAMES) * GAME_RECORD_LEN];
            let mut written = Vec::new();
            for (slot, &(game_id, port, host, fill)) in
                records.chunks_exact_mut(GAME_RECORD_LEN).zip(&games)
            {
                // Every other game from an IPv4 host, stored as ::ffff:a.b.c.d.
                let host = if fill % 2 == 0 {
                    IpAddr::V4(core::net::Ipv4Addr::from(host as u32))
                } else {
                    IpAddr::V6(Ipv6Addr::from(host | 1 << 127))
                };
                let gamestruct = [fill; GAMESTRUCT_LEN];
                let record = GameRecord { game_id, port, host, gamestruct: &gamestruct };
                let slot = <&mut [u8; GAME_RECORD_LEN]>::try_from(slot).unwrap();
                record.emit(slot);
                written.push((game_id, port, host, gamestruct));
            }
            let repr = NodeGamesRepr::new(node, generation, &records).unwrap();
            let mut buf = vec![0xa5; repr.buffer_len()];
            repr.emit(&mut buf);
            let back = NodeGamesRepr::parse(&buf).unwrap();
            let read: Vec<_> = back
                .records()
                .map(|r| (r.game_id, r.port, r.host, *r.gamestruct))
                .collect();
            back == repr && read == written
        }
    }
}
