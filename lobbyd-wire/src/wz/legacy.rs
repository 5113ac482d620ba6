//! Legacy Warzone 2100 lobby messages other than the GAMESTRUCT itself: command framing, the
//! status reply, the `gaId` reply, the `list` reply, and the `WZLR` reachability probe.
//!
//! Implements docs/protocols/wz-lobby.md "Legacy protocol" (notes sections 1.2, 1.4, 1.5,
//! 1.7 and 4). The framing ([`next_item`]) works over a connection's read buffer without
//! allocating; the server-side writers never allocate beyond the caller's buffer; the
//! client-side list readers ([`read_list_237`], [`read_list_3x`], [`read_list_4x`]) are test
//! helpers that allocate at most one entry per 814 bytes of input. Nothing here panics on peer
//! bytes or reads past a buffer.

use super::gamestruct::{GameStruct, GameStructRepr, GAMESTRUCT_LEN};
use super::Error;

/// The longest MOTD the lobby sends; longer ones are cut at a UTF-8 character boundary, and a
/// status announcing more is [`Error::MotdTooLong`] to the client-side parser.
pub const MAX_MOTD: usize = 1024;

/// The longest raw MOTD sent in answer to the 2.2-era `motd` command (MS-py's bound).
pub const MOTD_COMMAND_MAX: usize = 255;

/// How many games the first batch of a `list` reply holds at most: 3.x reads exactly this many
/// and 4.x treats anything beyond it in batch 1 as a lobby response (PR #918).
pub const FIRST_BATCH_MAX: usize = 11;

/// The `list` reply parameters bit telling 4.x clients to replace batch 1 with batch 2.
pub const IGNORE_FIRST_BATCH: u32 = 1;

/// The 8 zero bytes a lobby sends to a 4.x host's game port to ask "are you the game I listed?".
pub const PROBE_REQUEST: [u8; 8] = [0; 8];

/// Length of a version 1 `WZLR` probe answer: `"WZLR"`, u32 version, u32 gameId.
pub const PROBE_REPLY_LEN: usize = 12;

/// Length of a status reply without its MOTD: u32 code, u32 MOTD length.
const STATUS_HEADER_LEN: usize = 8;

/// The magic a 4.x host opens its probe answer with.
const PROBE_MAGIC: [u8; 4] = *b"WZLR";

/// The probe answer version this module understands (version 2 carries signed JSON instead
/// of a plain gameId).
const PROBE_VERSION: u32 = 1;

/// How many structs a 2.3.7 client reads at most (its `MaxGames`).
const CLIENT_237_MAX_GAMES: usize = 12;

/// A 4-byte command of the Warzone legacy lobby protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WzCommand {
    /// `gaId`: the host asks for a game id; reply u32 BE id.
    GaId,
    /// `addg`: a GAMESTRUCT follows; reply a status.
    Addg,
    /// `list`: a browser asks for the game list.
    List,
    /// `keep`: 4.x host keep-alive; never answered.
    Keep,
    /// `motd`: 2.2-era MOTD request.
    Motd,
    /// Anything else (the server closes the connection).
    Unknown([u8; 4]),
}

impl WzCommand {
    /// The command with this case-sensitive name.
    pub const fn from_name(name: [u8; 4]) -> WzCommand {
        match &name {
            b"gaId" => WzCommand::GaId,
            b"addg" => WzCommand::Addg,
            b"list" => WzCommand::List,
            b"keep" => WzCommand::Keep,
            b"motd" => WzCommand::Motd,
            _ => WzCommand::Unknown(name),
        }
    }

    /// The 4 bytes on the wire.
    pub const fn name(self) -> [u8; 4] {
        match self {
            WzCommand::GaId => *b"gaId",
            WzCommand::Addg => *b"addg",
            WzCommand::List => *b"list",
            WzCommand::Keep => *b"keep",
            WzCommand::Motd => *b"motd",
            WzCommand::Unknown(name) => name,
        }
    }

    /// `Err(UnknownCommand)` for [`WzCommand::Unknown`], so the caller can count it by label.
    pub const fn known(self) -> Result<WzCommand, Error> {
        match self {
            WzCommand::Unknown(_) => Err(Error::UnknownCommand),
            known => Ok(known),
        }
    }
}

/// What the front of a legacy connection's read buffer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// Nothing complete yet: keep the bytes and read more.
    NeedMore,
    /// A command; drop `consumed` bytes (leading separators, the 4 letters and its
    /// terminator if one has arrived).
    Command {
        /// The command.
        cmd: WzCommand,
        /// Bytes to drop from the front of the buffer.
        consumed: usize,
    },
    /// A GAMESTRUCT at `buf[..GAMESTRUCT_LEN]`; `consumed` is always [`GAMESTRUCT_LEN`].
    GameStruct {
        /// Bytes to drop from the front of the buffer (814).
        consumed: usize,
    },
    /// Separator bytes (`\0`, `\n`, `\r`) with nothing complete after them: drop `consumed`
    /// bytes. Also reported before a GAMESTRUCT so the struct always starts at `buf[0]`.
    Garbage {
        /// Bytes to drop from the front of the buffer.
        consumed: usize,
    },
}

fn is_separator(byte: u8) -> bool {
    matches!(byte, 0 | b'\n' | b'\r')
}

fn stop_at(skipped: usize) -> Item {
    if skipped == 0 {
        Item::NeedMore
    } else {
        Item::Garbage { consumed: skipped }
    }
}

/// Classify the front of a legacy connection's read buffer.
///
/// Rules (docs/protocols/wz-lobby.md "Framing"):
/// 1. Four bytes `00 00 00 03` or `00 00 00 04` start a GAMESTRUCT: [`Item::GameStruct`] once
///    814 bytes are there, [`Item::NeedMore`] until then.
/// 2. Otherwise a leading `\0`, `\n` or `\r` is a separator and skipped, except that fewer than
///    4 bytes all `\0` might be the start of a version word, so they wait.
/// 3. Otherwise four bytes are a command, case-sensitive. A known command takes its 5th byte
///    too when that is `\0`, `\n` or `\r`; a bare known command with no 5th byte yet is
///    returned at once (third-party `list` clients send 4 bytes and wait). Any other four bytes
///    are [`WzCommand::Unknown`].
/// 4. Skipped separators count in the command's `consumed`; before a GAMESTRUCT, or when
///    nothing complete follows, they are reported alone as [`Item::Garbage`].
///
/// A bare command immediately followed by a GAMESTRUCT (no terminator) is not supported: the
/// struct's first `\0` would be taken as the terminator. Every real client sends the NUL.
pub fn next_item(buf: &[u8]) -> Item {
    let mut skipped = 0;
    while let Some(rest) = buf.get(skipped..) {
        match rest {
            [0, 0, 0, 3 | 4, ..] => {
                if skipped > 0 {
                    return Item::Garbage { consumed: skipped };
                }
                if rest.len() >= GAMESTRUCT_LEN {
                    return Item::GameStruct {
                        consumed: GAMESTRUCT_LEN,
                    };
                }
                return Item::NeedMore;
            }
            [a, b, c, d, after @ ..] if !is_separator(*a) => {
                let cmd = WzCommand::from_name([*a, *b, *c, *d]);
                let terminator = match (cmd, after.first()) {
                    (WzCommand::Unknown(_), _) => 0,
                    (_, Some(&next)) if is_separator(next) => 1,
                    _ => 0,
                };
                return Item::Command {
                    cmd,
                    consumed: skipped + 4 + terminator,
                };
            }
            [first, ..] if is_separator(*first) => {
                let may_be_version = rest.len() < 4 && rest.iter().all(|&b| b == 0);
                if may_be_version {
                    return stop_at(skipped);
                }
                skipped += 1;
            }
            // Empty, or the first 1..3 letters of a command.
            _ => return stop_at(skipped),
        }
    }
    stop_at(skipped)
}

/// The MOTD as a status reply carries it: at most [`MAX_MOTD`] bytes.
fn bounded_motd(motd: &[u8]) -> &[u8] {
    cut_utf8(motd, MAX_MOTD)
}

/// At most `max` bytes of `text`, cut before a UTF-8 continuation byte so a multi-byte
/// character is never split.
fn cut_utf8(text: &[u8], max: usize) -> &[u8] {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while end > 0 && text.get(end).is_some_and(|&b| b & 0xc0 == 0x80) {
        end -= 1;
    }
    &text[..end]
}

/// The reply to the 2.2-era `motd` command: the raw MOTD bytes, no header, at most
/// [`MOTD_COMMAND_MAX`] bytes (cut at a UTF-8 character boundary).
pub fn motd_command_reply(motd: &[u8]) -> &[u8] {
    cut_utf8(motd, MOTD_COMMAND_MAX)
}

/// Bytes [`emit_status`] writes for this MOTD.
pub fn status_len(motd: &[u8]) -> usize {
    STATUS_HEADER_LEN + bounded_motd(motd).len()
}

/// Write a status reply and return its length.
///
/// ```text
/// +-----------+------------+------------------------+
/// | u32 code  | u32 length | MOTD (length bytes, no NUL, <= MAX_MOTD)
/// +-----------+------------+------------------------+
/// ```
///
/// # Panics
/// If `buf` is shorter than [`status_len`]`(motd)` (the caller's own buffer).
pub fn emit_status(buf: &mut [u8], code: u32, motd: &[u8]) -> usize {
    let motd = bounded_motd(motd);
    let len = STATUS_HEADER_LEN + motd.len();
    let out = &mut buf[..len];
    out[0..4].copy_from_slice(&code.to_be_bytes());
    // bounded_motd keeps the length at most MAX_MOTD, far below u32::MAX.
    out[4..8].copy_from_slice(&(motd.len() as u32).to_be_bytes());
    out[STATUS_HEADER_LEN..].copy_from_slice(motd);
    len
}

/// Append a status reply to `out` and return its length.
pub fn push_status(out: &mut Vec<u8>, code: u32, motd: &[u8]) -> usize {
    let start = out.len();
    out.resize(start + status_len(motd), 0);
    emit_status(&mut out[start..], code, motd)
}

/// Read a status reply (client side): `(code, motd, consumed)`.
///
/// `Err(Truncated)` while incomplete; `Err(MotdTooLong)` if it announces more than
/// [`MAX_MOTD`] bytes (no lobby of ours does, and a client must not wait for 4 GiB).
pub fn parse_status(buf: &[u8]) -> Result<(u32, &[u8], usize), Error> {
    let code = read_u32_at(buf, 0)?;
    let len = read_u32_at(buf, 4)? as usize;
    if len > MAX_MOTD {
        return Err(Error::MotdTooLong);
    }
    let end = STATUS_HEADER_LEN + len;
    let motd = buf.get(STATUS_HEADER_LEN..end).ok_or(Error::Truncated)?;
    Ok((code, motd, end))
}

/// The reply to `gaId`: the game id as a BE u32.
pub const fn emit_game_id(game_id: u32) -> [u8; 4] {
    game_id.to_be_bytes()
}

/// Read a `gaId` reply (client side); `Err(Truncated)` before 4 bytes.
pub fn parse_game_id(buf: &[u8]) -> Result<u32, Error> {
    read_u32_at(buf, 0)
}

fn read_u32_at(buf: &[u8], at: usize) -> Result<u32, Error> {
    match buf.get(at..).and_then(|rest| rest.first_chunk::<4>()) {
        Some(word) => Ok(u32::from_be_bytes(*word)),
        None => Err(Error::Truncated),
    }
}

/// Bytes a `list` reply for `games` games and this MOTD takes.
pub fn list_reply_len(games: usize, motd: &[u8]) -> usize {
    4 + games.min(FIRST_BATCH_MAX) * GAMESTRUCT_LEN
        + status_len(motd)
        + 4
        + 4
        + games * GAMESTRUCT_LEN
}

/// Writes the `list` reply that every client generation reads correctly.
///
/// ```text
/// u32 n1 = min(count, 11) | n1 GAMESTRUCTs      <- 2.3.7 and 3.x stop here (3.x: + status)
/// u32 code | u32 len | MOTD                     <- status, mandatory for 4.x
/// u32 1 (IGNORE_FIRST_BATCH)                    <- 4.x: replace batch 1 with batch 2
/// u32 count | count GAMESTRUCTs                 <- the full list, for 4.x
/// ```
///
/// It appends to a buffer the caller reuses; the size is bounded by the number of games, which
/// the server caps.
#[derive(Debug)]
pub struct ListReplyWriter<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> ListReplyWriter<'a> {
    /// A writer appending to `out` (existing contents are kept).
    pub fn new(out: &'a mut Vec<u8>) -> ListReplyWriter<'a> {
        ListReplyWriter { out }
    }

    /// Append the whole reply for `games` (stored, already sanitized GAMESTRUCT bytes) and
    /// return the number of bytes appended.
    pub fn write<'g, I>(self, games: I, code: u32, motd: &[u8]) -> usize
    where
        I: IntoIterator<Item = &'g [u8; GAMESTRUCT_LEN]>,
        I::IntoIter: Clone,
    {
        // A count field is a u32; no server holds more games, but never announce fewer than
        // are written.
        let games = games.into_iter().take(u32::MAX as usize);
        let count = games.clone().count();
        let start = self.out.len();
        self.out.reserve(list_reply_len(count, motd));

        let first = count.min(FIRST_BATCH_MAX);
        self.out.extend_from_slice(&(first as u32).to_be_bytes());
        for game in games.clone().take(first) {
            self.out.extend_from_slice(game);
        }
        push_status(self.out, code, motd);
        self.out
            .extend_from_slice(&IGNORE_FIRST_BATCH.to_be_bytes());
        self.out.extend_from_slice(&(count as u32).to_be_bytes());
        for game in games {
            self.out.extend_from_slice(game);
        }
        self.out.len() - start
    }
}

/// What a client made of a `list` reply (test helper output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientList {
    /// The games the client would show, in order.
    pub games: Vec<GameStructRepr>,
    /// The status it read, if it reads one and one was there.
    pub status: Option<(u32, Vec<u8>)>,
}

/// A bounds-checked cursor over a reply, for the client readers.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    fn u32(&mut self) -> Result<u32, Error> {
        let value = read_u32_at(self.rest(), 0)?;
        self.pos += 4;
        Ok(value)
    }

    fn game(&mut self) -> Result<GameStructRepr, Error> {
        let view = GameStruct::new_checked(self.rest())?;
        let repr = GameStructRepr::parse(&view)?;
        self.pos += GAMESTRUCT_LEN;
        Ok(repr)
    }

    /// Read up to `count` games; each needs 814 bytes, so the Vec stays bounded by the input.
    fn games(&mut self, count: usize) -> Result<Vec<GameStructRepr>, Error> {
        let mut games = Vec::new();
        for _ in 0..count {
            games.push(self.game()?);
        }
        Ok(games)
    }

    fn status(&mut self) -> Result<(u32, Vec<u8>), Error> {
        let (code, motd, consumed) = parse_status(self.rest())?;
        self.pos += consumed;
        Ok((code, motd.to_vec()))
    }
}

/// Read a `list` reply as a 2.3.7 client does: u32 count, then min(count, 12) GAMESTRUCTs,
/// nothing else.
pub fn read_list_237(buf: &[u8]) -> Result<ClientList, Error> {
    let mut cursor = Cursor { buf, pos: 0 };
    let count = cursor.u32()? as usize;
    let games = cursor.games(count.min(CLIENT_237_MAX_GAMES))?;
    Ok(ClientList {
        games,
        status: None,
    })
}

/// Read a `list` reply as a 3.x client does: u32 count, min(count, 11) GAMESTRUCTs, then a
/// status it only logs when missing.
pub fn read_list_3x(buf: &[u8]) -> Result<ClientList, Error> {
    let mut cursor = Cursor { buf, pos: 0 };
    let count = cursor.u32()? as usize;
    let games = cursor.games(count.min(FIRST_BATCH_MAX))?;
    let status = cursor.status().ok();
    Ok(ClientList { games, status })
}

/// Read a `list` reply as a 4.x client does: u32 count + count GAMESTRUCTs, a mandatory
/// status, then an optional u32 parameters word. With the word present a second batch
/// (u32 count + GAMESTRUCTs) is read if bytes remain: it replaces batch 1 when
/// `IGNORE_FIRST_BATCH` is set, and is shown after it otherwise. Games with `dwSize == 0` are
/// skipped, as `readGameStructsList` does.
pub fn read_list_4x(buf: &[u8]) -> Result<ClientList, Error> {
    let mut cursor = Cursor { buf, pos: 0 };
    let count = cursor.u32()? as usize;
    let mut games = cursor.games(count)?;
    let status = cursor.status()?;
    if let Ok(flags) = cursor.u32() {
        if !cursor.rest().is_empty() {
            let second_count = cursor.u32()? as usize;
            let second = cursor.games(second_count)?;
            if flags & IGNORE_FIRST_BATCH != 0 {
                games = second;
            } else {
                games.extend(second);
            }
        }
    }
    games.retain(|game| game.dw_size != 0);
    Ok(ClientList {
        games,
        status: Some(status),
    })
}

/// What a host's game port answered to [`PROBE_REQUEST`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeReply {
    /// A prefix of a `WZLR` answer: read more.
    NeedMore,
    /// A version 1 `WZLR` answer.
    Wzlr {
        /// The answer version (1).
        version: u32,
        /// The game id the host holds; the lobby checks it against the listed game.
        game_id: u32,
    },
    /// Not a version 1 `WZLR` answer (an older host, another program, or version 2 signed
    /// JSON); the plain connect test decides.
    NotWzlr,
}

/// Classify what a host's game port sent back to the probe.
///
/// ```text
/// "WZLR" | u32 version = 1 | u32 gameId
/// ```
pub fn parse_probe_reply(buf: &[u8]) -> ProbeReply {
    let magic_len = buf.len().min(PROBE_MAGIC.len());
    if buf.get(..magic_len) != PROBE_MAGIC.get(..magic_len) {
        return ProbeReply::NotWzlr;
    }
    let Ok(version) = read_u32_at(buf, 4) else {
        return ProbeReply::NeedMore;
    };
    if version != PROBE_VERSION {
        return ProbeReply::NotWzlr;
    }
    match read_u32_at(buf, 8) {
        Ok(game_id) => ProbeReply::Wzlr { version, game_id },
        Err(_) => ProbeReply::NeedMore,
    }
}

/// A version 1 `WZLR` answer, as a 4.x host sends it (for fake hosts in tests).
pub fn emit_probe_reply(game_id: u32) -> [u8; PROBE_REPLY_LEN] {
    let mut out = [0u8; PROBE_REPLY_LEN];
    out[..4].copy_from_slice(&PROBE_MAGIC);
    out[4..8].copy_from_slice(&PROBE_VERSION.to_be_bytes());
    out[8..].copy_from_slice(&game_id.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wz::gamestruct::c_string;
    use quickcheck::{quickcheck, Arbitrary, Gen, QuickCheck};

    /// A small valid GAMESTRUCT whose name and id identify it.
    fn game(version: u32, id: u32) -> [u8; GAMESTRUCT_LEN] {
        let mut repr = GameStructRepr::zeroed(version);
        repr.name = c_string(format!("game {id}").as_bytes());
        repr.dw_size = 72;
        repr.game_id = id;
        repr.to_bytes()
    }

    fn ids(list: &ClientList) -> Vec<u32> {
        list.games.iter().map(|g| g.game_id).collect()
    }

    #[test]
    fn command_names_round_trip() {
        for cmd in [
            WzCommand::GaId,
            WzCommand::Addg,
            WzCommand::List,
            WzCommand::Keep,
            WzCommand::Motd,
            WzCommand::Unknown(*b"LIST"),
        ] {
            assert_eq!(WzCommand::from_name(cmd.name()), cmd);
        }
        assert_eq!(WzCommand::from_name(*b"gaid"), WzCommand::Unknown(*b"gaid"));
        assert_eq!(WzCommand::List.known(), Ok(WzCommand::List));
        assert_eq!(
            WzCommand::Unknown(*b"join").known(),
            Err(Error::UnknownCommand)
        );
    }

    #[test]
    fn framing_commands() {
        let cases: &[(&[u8], Item)] = &[
            (b"", Item::NeedMore),
            (b"li", Item::NeedMore),
            (b"lis", Item::NeedMore),
            (
                b"list",
                Item::Command {
                    cmd: WzCommand::List,
                    consumed: 4,
                },
            ),
            (
                b"list\0",
                Item::Command {
                    cmd: WzCommand::List,
                    consumed: 5,
                },
            ),
            (
                b"list\n",
                Item::Command {
                    cmd: WzCommand::List,
                    consumed: 5,
                },
            ),
            (
                b"gaId\0addg\0",
                Item::Command {
                    cmd: WzCommand::GaId,
                    consumed: 5,
                },
            ),
            (
                b"keepkeep",
                Item::Command {
                    cmd: WzCommand::Keep,
                    consumed: 4,
                },
            ),
            (
                b"\r\n\0motd\0",
                Item::Command {
                    cmd: WzCommand::Motd,
                    consumed: 8,
                },
            ),
            (
                b"LIST\0",
                Item::Command {
                    cmd: WzCommand::Unknown(*b"LIST"),
                    consumed: 4,
                },
            ),
            (
                b"GET / HTTP/1.0",
                Item::Command {
                    cmd: WzCommand::Unknown(*b"GET "),
                    consumed: 4,
                },
            ),
            (b"\n\r\n", Item::Garbage { consumed: 3 }),
            (b"\nli", Item::Garbage { consumed: 1 }),
            // Up to three NULs might begin a version word: wait.
            (b"\0", Item::NeedMore),
            (b"\0\0\0", Item::NeedMore),
            (b"\n\0\0", Item::Garbage { consumed: 1 }),
            (b"\0\n", Item::Garbage { consumed: 2 }),
            // Four NULs are not a version word: the first is a separator.
            (b"\0\0\0\0", Item::Garbage { consumed: 1 }),
            // An unknown version: its NULs are skipped, then 0x05... is no command.
            (
                b"\0\0\0\x05abc",
                Item::Command {
                    cmd: WzCommand::Unknown(*b"\x05abc"),
                    consumed: 7,
                },
            ),
        ];
        for (bytes, expected) in cases {
            assert_eq!(next_item(bytes), *expected, "input {bytes:?}");
        }
    }

    #[test]
    fn framing_gamestructs() {
        for version in [3, 4] {
            let g = game(version, 9);
            assert_eq!(next_item(&g[..4]), Item::NeedMore);
            assert_eq!(next_item(&g[..GAMESTRUCT_LEN - 1]), Item::NeedMore);
            assert_eq!(
                next_item(&g),
                Item::GameStruct {
                    consumed: GAMESTRUCT_LEN
                }
            );
            // "addg\0" + struct, in one segment and split as the 4.3.3 host does.
            let mut stream = b"addg\0".to_vec();
            stream.extend_from_slice(&g);
            assert_eq!(
                next_item(&stream),
                Item::Command {
                    cmd: WzCommand::Addg,
                    consumed: 5
                }
            );
            assert_eq!(
                next_item(&stream[5..]),
                Item::GameStruct {
                    consumed: GAMESTRUCT_LEN
                }
            );
            // The bare command came first, its NUL later with the struct.
            assert_eq!(
                next_item(&stream[..4]),
                Item::Command {
                    cmd: WzCommand::Addg,
                    consumed: 4
                }
            );
            assert_eq!(next_item(&stream[4..8]), Item::Garbage { consumed: 1 });
            assert_eq!(next_item(&stream[4..7]), Item::NeedMore);
            assert_eq!(next_item(&stream[4..]), Item::Garbage { consumed: 1 });
            // Separators then a struct: reported first, so the struct starts at buf[0].
            let mut padded = b"\n\0".to_vec();
            padded.extend_from_slice(&g);
            assert_eq!(next_item(&padded), Item::Garbage { consumed: 2 });
        }
    }

    #[test]
    fn status_deconstruct_and_construct() {
        let golden = [
            0x00, 0x00, 0x00, 0xc8, // code 200
            0x00, 0x00, 0x00, 0x05, // MOTD length
            0x68, 0x65, 0x6c, 0x6c, 0x6f, // "hello"
        ];
        assert_eq!(parse_status(&golden), Ok((200, &b"hello"[..], 13)));
        let mut buf = [0xa5u8; 16];
        assert_eq!(emit_status(&mut buf, 200, b"hello"), 13);
        assert_eq!(buf[..13], golden);
        assert_eq!(buf[13..], [0xa5; 3]);
        assert_eq!(status_len(b"hello"), 13);

        let mut pushed = vec![1u8];
        assert_eq!(push_status(&mut pushed, 200, b"hello"), 13);
        assert_eq!(pushed[1..], golden);

        for cut in 0..golden.len() {
            assert_eq!(parse_status(&golden[..cut]), Err(Error::Truncated));
        }
        let too_long = [0, 0, 0, 200, 0, 0, 4, 1];
        assert_eq!(parse_status(&too_long), Err(Error::MotdTooLong));
    }

    #[test]
    fn status_motd_is_bounded_at_a_char_boundary() {
        let ascii = vec![b'm'; MAX_MOTD + 10];
        assert_eq!(status_len(&ascii), 8 + MAX_MOTD);
        // 'é' (2 bytes) straddling the bound is dropped whole.
        let mut text = "a".repeat(MAX_MOTD - 1);
        text.push_str("éz");
        let mut buf = vec![0u8; 8 + MAX_MOTD];
        let len = emit_status(&mut buf, 200, text.as_bytes());
        assert_eq!(len, 8 + MAX_MOTD - 1);
        let (code, motd, consumed) = parse_status(&buf[..len]).unwrap();
        assert_eq!((code, consumed), (200, len));
        assert!(core::str::from_utf8(motd).is_ok());
    }

    #[test]
    fn motd_command_reply_is_raw_and_bounded() {
        assert_eq!(motd_command_reply(b"welcome"), b"welcome");
        let long = "é".repeat(200); // 400 bytes, 2 per character
        let reply = motd_command_reply(long.as_bytes());
        assert_eq!(reply.len(), 254);
        assert!(core::str::from_utf8(reply).is_ok());
    }

    #[test]
    fn game_id_reply() {
        assert_eq!(emit_game_id(0x0102_0304), [1, 2, 3, 4]);
        assert_eq!(parse_game_id(&[1, 2, 3, 4, 9]), Ok(0x0102_0304));
        assert_eq!(parse_game_id(&[1, 2, 3]), Err(Error::Truncated));
    }

    #[test]
    fn list_reply_empty() {
        let mut out = Vec::new();
        let games: [[u8; GAMESTRUCT_LEN]; 0] = [];
        let written = ListReplyWriter::new(&mut out).write(&games, 200, b"hi");
        let golden = [
            0, 0, 0, 0, // batch 1 count
            0, 0, 0, 200, 0, 0, 0, 2, b'h', b'i', // status
            0, 0, 0, 1, // IGNORE_FIRST_BATCH
            0, 0, 0, 0, // batch 2 count
        ];
        assert_eq!(out, golden);
        assert_eq!(written, golden.len());
        assert_eq!(list_reply_len(0, b"hi"), golden.len());

        assert_eq!(read_list_237(&out).unwrap().games, vec![]);
        let v3 = read_list_3x(&out).unwrap();
        assert_eq!(v3.games, vec![]);
        assert_eq!(v3.status, Some((200, b"hi".to_vec())));
        let v4 = read_list_4x(&out).unwrap();
        assert_eq!(v4.games, vec![]);
        assert_eq!(v4.status, Some((200, b"hi".to_vec())));
    }

    #[test]
    fn list_reply_thirteen_games_for_every_client() {
        let games: Vec<[u8; GAMESTRUCT_LEN]> = (1..=13).map(|id| game(3 + id % 2, id)).collect();
        let mut out = vec![0xeeu8; 3]; // the writer appends to what is there
        let written = ListReplyWriter::new(&mut out).write(&games, 400, b"upgrade");
        assert_eq!(written, list_reply_len(13, b"upgrade"));
        let reply = &out[3..];
        assert_eq!(reply.len(), written);

        // Layout: first batch of 11, status, flags, full batch.
        assert_eq!(reply[..4], [0, 0, 0, 11]);
        let status_at = 4 + 11 * GAMESTRUCT_LEN;
        assert_eq!(
            parse_status(&reply[status_at..]),
            Ok((400, &b"upgrade"[..], 15))
        );
        assert_eq!(
            reply[status_at + 15..status_at + 23],
            [0, 0, 0, 1, 0, 0, 0, 13]
        );
        assert_eq!(
            &reply[status_at + 23..status_at + 23 + GAMESTRUCT_LEN],
            &games[0]
        );

        let first_eleven: Vec<u32> = (1..=11).collect();
        let v237 = read_list_237(reply).unwrap();
        assert_eq!(ids(&v237), first_eleven);
        assert_eq!(v237.games[0].name, c_string(b"game 1"));
        let v3 = read_list_3x(reply).unwrap();
        assert_eq!(ids(&v3), first_eleven);
        assert_eq!(v3.status, Some((400, b"upgrade".to_vec())));
        let v4 = read_list_4x(reply).unwrap();
        assert_eq!(ids(&v4), (1..=13).collect::<Vec<u32>>());
        assert_eq!(v4.status, Some((400, b"upgrade".to_vec())));
    }

    #[test]
    fn client_4x_variants() {
        let games: Vec<[u8; GAMESTRUCT_LEN]> = (1..=3).map(|id| game(4, id)).collect();
        let mut reply = Vec::new();
        ListReplyWriter::new(&mut reply).write(&games, 200, b"");
        let flags_at = 4 + 3 * GAMESTRUCT_LEN + 8;
        // No parameters word: batch 1 is used.
        assert_eq!(ids(&read_list_4x(&reply[..flags_at]).unwrap()), [1, 2, 3]);
        // Flags 0: both batches are shown.
        let mut both = reply.clone();
        both[flags_at + 3] = 0;
        assert_eq!(ids(&read_list_4x(&both).unwrap()), [1, 2, 3, 1, 2, 3]);
        // A missing status is fatal for 4.x, only logged by 3.x.
        let no_status = &reply[..4 + 3 * GAMESTRUCT_LEN];
        assert_eq!(read_list_4x(no_status), Err(Error::Truncated));
        assert_eq!(read_list_3x(no_status).unwrap().status, None);
        // dwSize 0 games are skipped by 4.x.
        let mut hidden = GameStructRepr::zeroed(4);
        hidden.game_id = 5;
        let mut reply = Vec::new();
        ListReplyWriter::new(&mut reply).write([&hidden.to_bytes(), &games[0]], 200, b"");
        assert_eq!(ids(&read_list_4x(&reply).unwrap()), [1]);
        // A hostile count is bounded by the bytes present.
        assert_eq!(
            read_list_4x(&[0xff, 0xff, 0xff, 0xff]),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn probe_replies() {
        let reply = emit_probe_reply(0x0a0b_0c0d);
        assert_eq!(
            reply,
            [0x57, 0x5a, 0x4c, 0x52, 0, 0, 0, 1, 0x0a, 0x0b, 0x0c, 0x0d]
        );
        assert_eq!(
            parse_probe_reply(&reply),
            ProbeReply::Wzlr {
                version: 1,
                game_id: 0x0a0b_0c0d
            }
        );
        for cut in 0..PROBE_REPLY_LEN {
            assert_eq!(parse_probe_reply(&reply[..cut]), ProbeReply::NeedMore);
        }
        assert_eq!(parse_probe_reply(b"WZLX"), ProbeReply::NotWzlr);
        assert_eq!(parse_probe_reply(&[0, 0, 0, 0]), ProbeReply::NotWzlr);
        assert_eq!(
            parse_probe_reply(b"WZLR\0\0\0\x02\0\0\0\x10{}"),
            ProbeReply::NotWzlr
        );
        assert_eq!(PROBE_REQUEST, [0; 8]);
    }

    /// One piece of a host's or browser's byte stream.
    #[derive(Debug, Clone)]
    enum Piece {
        /// A known command with its terminator (`None`: bare 4 bytes).
        Cmd(WzCommand, Option<u8>),
        /// A separator byte between items.
        Sep(u8),
        /// A GAMESTRUCT.
        Struct(Vec<u8>),
    }

    #[derive(Debug, Clone)]
    struct Stream {
        pieces: Vec<Piece>,
        cuts: Vec<usize>,
    }

    const TERMINATORS: [Option<u8>; 4] = [None, Some(0), Some(b'\n'), Some(b'\r')];

    impl Arbitrary for Stream {
        fn arbitrary(g: &mut Gen) -> Stream {
            let known = [
                WzCommand::GaId,
                WzCommand::Addg,
                WzCommand::List,
                WzCommand::Keep,
                WzCommand::Motd,
            ];
            let count = usize::arbitrary(g) % 12;
            let mut pieces = Vec::new();
            for _ in 0..count {
                let piece = match u8::arbitrary(g) % 4 {
                    0 | 1 => Piece::Cmd(
                        *g.choose(&known).unwrap_or(&WzCommand::List),
                        *g.choose(&TERMINATORS).unwrap_or(&None),
                    ),
                    2 => Piece::Sep(*g.choose(&[0, b'\n', b'\r']).unwrap_or(&0)),
                    _ => {
                        let version = 3 + u32::from(bool::arbitrary(g));
                        Piece::Struct(game(version, u32::arbitrary(g)).to_vec())
                    }
                };
                // Unsupported by design: a bare command directly followed by a struct.
                if let (Some(Piece::Cmd(_, None)), Piece::Struct(_)) = (pieces.last(), &piece) {
                    pieces.push(Piece::Sep(0));
                }
                pieces.push(piece);
            }
            let cuts = (0..usize::arbitrary(g) % 20)
                .map(|_| usize::arbitrary(g) % 900 + 1)
                .collect();
            Stream { pieces, cuts }
        }
    }

    #[derive(Debug, PartialEq)]
    enum Event {
        Cmd(WzCommand),
        Struct(Vec<u8>),
    }

    /// Feed `bytes` in chunks of the given sizes the way the server does, collecting items.
    fn drive(bytes: &[u8], cuts: &[usize]) -> Vec<Event> {
        let mut events = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        let mut fed = 0;
        let mut sizes = cuts.iter().copied();
        while fed < bytes.len() {
            let size = sizes.next().unwrap_or(bytes.len());
            let end = (fed + size).min(bytes.len());
            buf.extend_from_slice(&bytes[fed..end]);
            fed = end;
            loop {
                let consumed = match next_item(&buf) {
                    Item::NeedMore => break,
                    Item::Command { cmd, consumed } => {
                        events.push(Event::Cmd(cmd));
                        consumed
                    }
                    Item::GameStruct { consumed } => {
                        events.push(Event::Struct(buf[..consumed].to_vec()));
                        consumed
                    }
                    Item::Garbage { consumed } => consumed,
                };
                assert!(consumed > 0 && consumed <= buf.len());
                buf.drain(..consumed);
            }
        }
        events
    }

    fn check_stream(stream: Stream) -> bool {
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        for piece in &stream.pieces {
            match piece {
                Piece::Cmd(cmd, terminator) => {
                    bytes.extend_from_slice(&cmd.name());
                    bytes.extend(terminator);
                    expected.push(Event::Cmd(*cmd));
                }
                Piece::Sep(byte) => bytes.push(*byte),
                Piece::Struct(g) => {
                    bytes.extend_from_slice(g);
                    expected.push(Event::Struct(g.clone()));
                }
            }
        }
        drive(&bytes, &[]) == expected && drive(&bytes, &stream.cuts) == expected
    }

    #[test]
    fn split_streams_yield_the_same_items() {
        QuickCheck::new()
            .tests(300)
            .quickcheck(check_stream as fn(Stream) -> bool);
    }

    fn all_parsers_are_total(data: Vec<u8>) -> bool {
        match next_item(&data) {
            Item::NeedMore => {}
            Item::Command { consumed, .. }
            | Item::GameStruct { consumed }
            | Item::Garbage { consumed } => assert!(consumed > 0 && consumed <= data.len()),
        }
        if let Ok((_, motd, consumed)) = parse_status(&data) {
            assert!(motd.len() <= MAX_MOTD && consumed <= data.len());
        }
        let _ = parse_game_id(&data);
        let _ = parse_probe_reply(&data);
        for list in [
            read_list_237(&data),
            read_list_3x(&data),
            read_list_4x(&data),
        ]
        .into_iter()
        .flatten()
        {
            assert!(list.games.len() <= data.len() / GAMESTRUCT_LEN);
        }
        true
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        QuickCheck::new()
            .rng(Gen::new(4000))
            .tests(300)
            .quickcheck(all_parsers_are_total as fn(Vec<u8>) -> bool);
    }

    fn corrupted_list_is_handled(cut: usize, flip: usize, byte: u8) -> bool {
        let games: Vec<[u8; GAMESTRUCT_LEN]> = (1..=13).map(|id| game(4, id)).collect();
        let mut data = Vec::new();
        ListReplyWriter::new(&mut data).write(&games, 200, b"motd");
        let at = flip % data.len();
        data[at] = byte;
        data.truncate(cut % (data.len() + 1));
        all_parsers_are_total(data)
    }

    #[test]
    fn corrupted_list_replies_never_panic() {
        // Mostly-valid replies cut and corrupted at random, which random bytes rarely reach.
        QuickCheck::new()
            .tests(200)
            .quickcheck(corrupted_list_is_handled as fn(usize, usize, u8) -> bool);
    }

    quickcheck! {
        fn status_round_trip(code: u32, motd: Vec<u8>) -> bool {
            let mut buf = vec![0u8; status_len(&motd)];
            let len = emit_status(&mut buf, code, &motd);
            let sent = &motd[..len - 8];
            parse_status(&buf) == Ok((code, sent, len)) && motd.starts_with(sent)
        }

        fn probe_round_trip(game_id: u32) -> bool {
            parse_probe_reply(&emit_probe_reply(game_id))
                == ProbeReply::Wzlr { version: 1, game_id }
        }
    }
}
