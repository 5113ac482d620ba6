//! The upstream ROOM_LIST payload (`docs/protocols/udp-lobby-upstream.md`, "ROOM_LIST"): a
//! big-endian room count, then one record per room in one of two layouts.
//!
//! ```text
//! v1 (upstream 2026-01-07, 11 bytes):
//!   roomId u32 | playerCount u16 | maxPlayers u16 | port u16 | state u8
//! v3 (upstream 2026-01-12 to today, 23 + n + c bytes):
//!   roomId u32 | roomType u8 | playerCount u16 | maxPlayers u16 | port u16 | state u8 |
//!   ownerId u32 | passwordProtected u8 | visibility u8 | countdown u8 |
//!   nameLen u16 | name (n) | codeLen u16 | inviteCode (c)
//! ```
//!
//! The request (LIST_ROOMS) is the same bytes in every upstream version, so the layout is the
//! server's choice, not something a datagram says. The upstream client reads a reply into a
//! 2048-byte buffer: a list never exceeds [`MAX_ROOM_LIST_LEN`] (184 v1 records).
//! [`RoomList::parse`] validates every record once; iterating afterwards cannot fail or panic.
//! [`write_room_records`] fills a caller's buffer and never allocates; framing the records as
//! a ROOM_LIST datagram is `lobby.rs`'s (`finish_room_list`, `emit_room_list`).

use super::frame::{self, read_u16, read_u32, MIN_LEN};
use super::Error;

mod field {
    use crate::Field;

    pub const ROOM_COUNT: Field = 0..2;
    pub const ROOM_RECORDS: usize = 2;

    pub const ROOM_ID: Field = 0..4;
    pub mod v1 {
        use crate::Field;
        pub const PLAYER_COUNT: Field = 4..6;
        pub const MAX_PLAYERS: Field = 6..8;
        pub const PORT: Field = 8..10;
        pub const STATE: usize = 10;
    }
    pub mod v3 {
        use crate::Field;
        pub const ROOM_TYPE: usize = 4;
        pub const PLAYER_COUNT: Field = 5..7;
        pub const MAX_PLAYERS: Field = 7..9;
        pub const PORT: Field = 9..11;
        pub const STATE: usize = 11;
        pub const OWNER_ID: Field = 12..16;
        pub const PASSWORD_PROTECTED: usize = 16;
        pub const VISIBILITY: usize = 17;
        pub const COUNTDOWN: usize = 18;
        pub const NAME_LEN: Field = 19..21;
        pub const NAME: usize = 21;
    }
}

/// Length of the room count that opens the payload.
pub const ROOM_COUNT_LEN: usize = 2;
/// Length of one v1 record.
pub const V1_RECORD_LEN: usize = 11;
/// Length of a v3 record with an empty name and invite code.
pub const V3_RECORD_FIXED_LEN: usize = 23;
/// The upstream client's receive buffer: no ROOM_LIST datagram is longer.
pub const MAX_ROOM_LIST_LEN: usize = 2048;
/// The most v1 records a ROOM_LIST of [`MAX_ROOM_LIST_LEN`] bytes holds (184).
pub const MAX_V1_RECORDS: usize = (MAX_ROOM_LIST_LEN - room_list_len(0)) / V1_RECORD_LEN;

/// Length of a whole ROOM_LIST datagram whose records take `records_len` bytes.
pub const fn room_list_len(records_len: usize) -> usize {
    MIN_LEN + ROOM_COUNT_LEN + records_len
}

/// Which upstream version's record a ROOM_LIST carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordLayout {
    /// The 11-byte record of the seed's day.
    V1,
    /// The variable-length record the upstream client ships today.
    V3,
}

impl RecordLayout {
    /// Both layouts.
    pub const ALL: [RecordLayout; 2] = [RecordLayout::V1, RecordLayout::V3];

    /// The layout a flag value (`v1`, `v3`) names.
    pub fn from_name(name: &str) -> Option<RecordLayout> {
        RecordLayout::ALL.into_iter().find(|l| l.as_str() == name)
    }

    /// The flag value naming this layout (`v1`, `v3`).
    pub const fn as_str(&self) -> &'static str {
        match self {
            RecordLayout::V1 => "v1",
            RecordLayout::V3 => "v3",
        }
    }
}

/// One room as a ROOM_LIST lists it. The v1 layout carries only `room_id`, `player_count`,
/// `max_players`, `port` and `state`; reading one gives zero and empty for the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ListedRoom<'a> {
    /// The room's id, as JOIN_ROOM names it.
    pub room_id: u32,
    /// Upstream's room type: 0 quick play, 1 ranked.
    pub room_type: u8,
    /// Players in the room.
    pub player_count: u16,
    /// Seats in the room.
    pub max_players: u16,
    /// UDP port of the room's game instance.
    pub port: u16,
    /// The room state code (0 waiting, 1 countdown, 2 playing, 3 finished).
    pub state: u8,
    /// Upstream's id of the room's owner.
    pub owner_id: u32,
    /// Non-zero when a JOIN_ROOM needs the room's password.
    pub password_protected: u8,
    /// Upstream's visibility: 0 public, 1 unlisted, 2 friends only, 3 invite only.
    pub visibility: u8,
    /// Seconds left of the room's countdown, 0 when none runs.
    pub countdown: u8,
    /// The room's name (v3).
    pub name: &'a [u8],
    /// The room's invite code (v3).
    pub invite_code: &'a [u8],
}

impl<'a> ListedRoom<'a> {
    /// Bytes this room's record takes in `layout`.
    pub fn record_len(&self, layout: RecordLayout) -> usize {
        match layout {
            RecordLayout::V1 => V1_RECORD_LEN,
            RecordLayout::V3 => V3_RECORD_FIXED_LEN + self.name.len() + self.invite_code.len(),
        }
    }

    /// Reads the record at the start of `bytes`: the room and the record's length, or
    /// `None` when `bytes` is too short for it.
    fn read(layout: RecordLayout, bytes: &'a [u8]) -> Option<(ListedRoom<'a>, usize)> {
        match layout {
            RecordLayout::V1 => {
                let record = bytes.get(..V1_RECORD_LEN)?;
                let room = ListedRoom {
                    room_id: read_u32(&record[field::ROOM_ID]),
                    player_count: read_u16(&record[field::v1::PLAYER_COUNT]),
                    max_players: read_u16(&record[field::v1::MAX_PLAYERS]),
                    port: read_u16(&record[field::v1::PORT]),
                    state: record[field::v1::STATE],
                    ..ListedRoom::default()
                };
                Some((room, V1_RECORD_LEN))
            }
            RecordLayout::V3 => {
                let fixed = bytes.get(..field::v3::NAME)?;
                let name_len = usize::from(read_u16(&fixed[field::v3::NAME_LEN]));
                let code_at = field::v3::NAME + name_len;
                let name = bytes.get(field::v3::NAME..code_at)?;
                let code_len = usize::from(read_u16(bytes.get(code_at..code_at + 2)?));
                let end = code_at + 2 + code_len;
                let invite_code = bytes.get(code_at + 2..end)?;
                let room = ListedRoom {
                    room_id: read_u32(&fixed[field::ROOM_ID]),
                    room_type: fixed[field::v3::ROOM_TYPE],
                    player_count: read_u16(&fixed[field::v3::PLAYER_COUNT]),
                    max_players: read_u16(&fixed[field::v3::MAX_PLAYERS]),
                    port: read_u16(&fixed[field::v3::PORT]),
                    state: fixed[field::v3::STATE],
                    owner_id: read_u32(&fixed[field::v3::OWNER_ID]),
                    password_protected: fixed[field::v3::PASSWORD_PROTECTED],
                    visibility: fixed[field::v3::VISIBILITY],
                    countdown: fixed[field::v3::COUNTDOWN],
                    name,
                    invite_code,
                };
                Some((room, end))
            }
        }
    }

    /// Writes the record into exactly [`ListedRoom::record_len`] bytes.
    ///
    /// # Panics
    /// If `out` is shorter, or a v3 name or invite code is longer than 65,535 bytes.
    fn write(&self, layout: RecordLayout, out: &mut [u8]) {
        out[field::ROOM_ID].copy_from_slice(&self.room_id.to_be_bytes());
        match layout {
            RecordLayout::V1 => {
                out[field::v1::PLAYER_COUNT].copy_from_slice(&self.player_count.to_be_bytes());
                out[field::v1::MAX_PLAYERS].copy_from_slice(&self.max_players.to_be_bytes());
                out[field::v1::PORT].copy_from_slice(&self.port.to_be_bytes());
                out[field::v1::STATE] = self.state;
            }
            RecordLayout::V3 => {
                let name_len = u16::try_from(self.name.len()).expect("name fits nameLen");
                let code_len = u16::try_from(self.invite_code.len()).expect("code fits codeLen");
                out[field::v3::ROOM_TYPE] = self.room_type;
                out[field::v3::PLAYER_COUNT].copy_from_slice(&self.player_count.to_be_bytes());
                out[field::v3::MAX_PLAYERS].copy_from_slice(&self.max_players.to_be_bytes());
                out[field::v3::PORT].copy_from_slice(&self.port.to_be_bytes());
                out[field::v3::STATE] = self.state;
                out[field::v3::OWNER_ID].copy_from_slice(&self.owner_id.to_be_bytes());
                out[field::v3::PASSWORD_PROTECTED] = self.password_protected;
                out[field::v3::VISIBILITY] = self.visibility;
                out[field::v3::COUNTDOWN] = self.countdown;
                out[field::v3::NAME_LEN].copy_from_slice(&name_len.to_be_bytes());
                let code_at = field::v3::NAME + self.name.len();
                out[field::v3::NAME..code_at].copy_from_slice(self.name);
                out[code_at..code_at + 2].copy_from_slice(&code_len.to_be_bytes());
                out[code_at + 2..code_at + 2 + self.invite_code.len()]
                    .copy_from_slice(self.invite_code);
            }
        }
    }
}

/// A borrowed, validated view over the records of a ROOM_LIST payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RoomList<'a> {
    layout: RecordLayout,
    count: u16,
    // Exactly `count` whole records: `parse` walked them.
    records: &'a [u8],
}

impl<'a> RoomList<'a> {
    /// Validates a ROOM_LIST payload in `layout`: the count, then exactly that many whole
    /// records and nothing after them ([`Error::BadPayloadSize`] otherwise).
    pub fn parse(payload: &'a [u8], layout: RecordLayout) -> Result<RoomList<'a>, Error> {
        let count_bytes = payload
            .get(field::ROOM_COUNT)
            .ok_or(Error::BadPayloadSize)?;
        let count = read_u16(count_bytes);
        let records = &payload[field::ROOM_RECORDS..];
        let mut at = 0;
        for _ in 0..count {
            let (_, len) = ListedRoom::read(layout, &records[at..]).ok_or(Error::BadPayloadSize)?;
            at += len;
        }
        if at != records.len() {
            return Err(Error::BadPayloadSize);
        }
        Ok(RoomList {
            layout,
            count,
            records,
        })
    }

    /// The record layout.
    pub fn layout(&self) -> RecordLayout {
        self.layout
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        usize::from(self.count)
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The records, in wire order.
    pub fn iter(&self) -> impl Iterator<Item = ListedRoom<'a>> + 'a {
        let layout = self.layout;
        let mut rest = self.records;
        std::iter::from_fn(move || {
            let (room, len) = ListedRoom::read(layout, rest)?;
            rest = &rest[len..];
            Some(room)
        })
    }

    /// Length of the payload this list occupies.
    pub(crate) fn payload_len(&self) -> usize {
        ROOM_COUNT_LEN + self.records.len()
    }

    /// Writes the count and records into a payload of [`RoomList::payload_len`] bytes.
    pub(crate) fn write(&self, payload: &mut [u8]) {
        payload[field::ROOM_COUNT].copy_from_slice(&self.count.to_be_bytes());
        payload[field::ROOM_RECORDS..].copy_from_slice(self.records);
    }
}

/// What [`write_room_records`] left in the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct WrittenRecords {
    /// Records written.
    pub count: usize,
    /// Bytes they take.
    pub len: usize,
}

/// Writes ROOM_LIST records in `layout` into their place in `buf` (after header and count)
/// and says how many fit; `lobby::finish_room_list` then frames them, as many times as needed with
/// other sequence ids (the driver keeps them while the list does not change).
///
/// Stops at the first room whose record would take the datagram past `buf` or
/// [`MAX_ROOM_LIST_LEN`] (so the list is a prefix of `rooms`, in its order), or at 65,535
/// records.
///
/// # Panics
/// If `buf` is shorter than an empty list, `room_list_len(0)` = 23 bytes.
pub fn write_room_records<'r>(
    buf: &mut [u8],
    layout: RecordLayout,
    rooms: impl IntoIterator<Item = ListedRoom<'r>>,
) -> WrittenRecords {
    let end = buf.len().min(MAX_ROOM_LIST_LEN);
    assert!(end >= room_list_len(0), "buffer too short for a ROOM_LIST");
    let start = frame::HEADER_LEN + field::ROOM_RECORDS;
    let space = end - room_list_len(0);
    let mut written = WrittenRecords::default();
    for room in rooms {
        let len = room.record_len(layout);
        if written.len + len > space || written.count == usize::from(u16::MAX) {
            break;
        }
        let at = start + written.len;
        room.write(layout, &mut buf[at..at + len]);
        written.count += 1;
        written.len += len;
    }
    written
}
