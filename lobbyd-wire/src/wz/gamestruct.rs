//! The Warzone 2100 GAMESTRUCT: the fixed 814-byte, big-endian game description that hosts
//! register with `addg` (and resend bare as updates) and that the lobby lists.
//!
//! Implements docs/protocols/wz-lobby.md "GAMESTRUCT" (notes section 1.3). Versions 3
//! (2.3.x–3.x) and 4 (4.x, which takes the last two bytes of `extra` for a BE `hostPort`) are
//! accepted; every other version is [`Error::BadVersion`].
//!
//! Contract: after [`GameStruct::new_checked`] succeeds no accessor panics and none reads past
//! the 814 bytes. String fields are fixed-size C char arrays: accessors return the bytes before
//! the first NUL *within the field*, or the whole field when it holds no NUL (real hosts always
//! terminate; [`GameStruct::sanitize_strings`] forces the last byte of every string field to NUL
//! before the lobby stores or relays a struct). This module never allocates.

use crate::Field;

use super::Error;

/// Size in bytes of every GAMESTRUCT, whatever its version.
pub const GAMESTRUCT_LEN: usize = 814;

mod field {
    use crate::Field;

    pub const VERSION: Field = 0..4;
    pub const NAME: Field = 4..68;
    pub const DW_SIZE: Field = 68..72;
    pub const DW_FLAGS: Field = 72..76;
    pub const HOST: Field = 76..116;
    pub const MAX_PLAYERS: Field = 116..120;
    pub const CURRENT_PLAYERS: Field = 120..124;
    /// Four i32 `dwUserFlags`, 4 bytes apart.
    pub const USER_FLAGS: Field = 124..140;
    pub const SECONDARY_HOST_0: Field = 140..180;
    pub const SECONDARY_HOST_1: Field = 180..220;
    /// `extra` as version 3 lays it out (159 bytes).
    pub const EXTRA_V3: Field = 220..379;
    /// `extra` as version 4 lays it out (157 bytes, the last two became `hostPort`).
    pub const EXTRA_V4: Field = 220..377;
    pub const HOST_PORT: Field = 377..379;
    pub const MAP_NAME: Field = 379..419;
    pub const HOST_NAME: Field = 419..459;
    pub const VERSION_STRING: Field = 459..523;
    pub const MOD_LIST: Field = 523..778;
    pub const GAME_VERSION_MAJOR: Field = 778..782;
    pub const GAME_VERSION_MINOR: Field = 782..786;
    pub const PRIVATE_GAME: Field = 786..790;
    pub const PURE_GAME: Field = 790..794;
    pub const MODS: Field = 794..798;
    pub const GAME_ID: Field = 798..802;
    pub const LIMITS: Field = 802..806;
    pub const FUTURE3: Field = 806..810;
    pub const FUTURE4: Field = 810..814;
}

/// Byte ranges of the version-independent string fields (extra is handled apart because its
/// size depends on the version).
const FIXED_STRING_FIELDS: [Field; 7] = [
    field::NAME,
    field::HOST,
    field::SECONDARY_HOST_0,
    field::SECONDARY_HOST_1,
    field::MAP_NAME,
    field::HOST_NAME,
    field::VERSION_STRING,
];

/// The bytes of a C string stored in a fixed-size field: up to the first NUL, or the whole
/// field when it holds none.
fn c_str(field: &[u8]) -> &[u8] {
    match field.iter().position(|&b| b == 0) {
        Some(end) => &field[..end],
        None => field,
    }
}

/// Build a NUL-padded fixed-size C string field from `s`: copied up to its first NUL, truncated
/// to `N - 1` bytes (at a UTF-8 character boundary when `s` is UTF-8), so the result is always
/// NUL-terminated. For fixtures and for fields the lobby writes.
pub fn c_string<const N: usize>(s: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    store_c_string(&mut out, s);
    out
}

/// Write `s` into `dst` as a NUL-terminated, NUL-padded C string (see [`c_string`]).
fn store_c_string(dst: &mut [u8], s: &[u8]) {
    let s = c_str(s);
    let room = dst.len().saturating_sub(1);
    let mut len = s.len().min(room);
    // Do not cut a multi-byte UTF-8 sequence in half: back off over continuation bytes.
    if len < s.len() {
        while len > 0 && s.get(len).is_some_and(|&b| b & 0xc0 == 0x80) {
            len -= 1;
        }
    }
    let (head, tail) = dst.split_at_mut(len);
    head.copy_from_slice(&s[..len]);
    tail.fill(0);
}

/// Truncate a C string field at its first NUL, zero everything after it and force the last
/// byte to NUL, so no stale bytes after the terminator are ever relayed to other clients.
fn sanitize_c_string(dst: &mut [u8]) {
    let end = dst.iter().position(|&b| b == 0).unwrap_or(dst.len());
    if let Some(rest) = dst.get_mut(end..) {
        rest.fill(0);
    }
    if let Some(last) = dst.last_mut() {
        *last = 0;
    }
}

fn read_u32(bytes: &[u8], at: Field) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at]);
    u32::from_be_bytes(word)
}

fn write_u32(bytes: &mut [u8], at: Field, value: u32) {
    bytes[at].copy_from_slice(&value.to_be_bytes());
}

/// A read/write view of one GAMESTRUCT at the start of a buffer.
///
/// ```text
///  0      4        68      72       76      116     120     124         140           220
/// +------+--------+-------+--------+-------+-------+-------+-----------+-------------+--
/// | ver  | name   | dwSize| dwFlags| host  | maxPl | curPl | userFlags | 2nd hosts   | extra
/// | u32  | [64]   | i32   | i32    | [40]  | i32   | i32   | 4 x i32   | 2 x [40]    | [159]
/// +------+--------+-------+--------+-------+-------+-------+-----------+-------------+--
///   (v4: extra[157] + u16 hostPort at 377)
///  379      419       459        523      778   782   786   790   794   798   802   806   810
/// --+-------+---------+----------+--------+-----+-----+-----+-----+-----+-----+-----+-----+-----+
///   |mapname|hostname |versionstr| modlist|major|minor|priv |pure |mods |gameId|lim |fut3 |fut4 |
///   | [40]  | [40]    | [64]     | [255]  | u32 | u32 | u32 | u32 | u32 | u32 | u32 | u32 | u32 |
/// --+-------+---------+----------+--------+-----+-----+-----+-----+-----+-----+-----+-----+-----+
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GameStruct<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> GameStruct<T> {
    /// Wrap a buffer without any check. Only for emitting into a buffer of at least
    /// [`GAMESTRUCT_LEN`] bytes; accessors panic on a shorter one.
    pub const fn new_unchecked(buffer: T) -> GameStruct<T> {
        GameStruct { buffer }
    }

    /// Wrap a buffer and check it: at least [`GAMESTRUCT_LEN`] bytes (bytes past 814 are not
    /// part of the struct) and a version word of 3 or 4.
    pub fn new_checked(buffer: T) -> Result<GameStruct<T>, Error> {
        let view = GameStruct::new_unchecked(buffer);
        view.check_len()?;
        match view.version() {
            3 | 4 => Ok(view),
            _ => Err(Error::BadVersion),
        }
    }

    /// `Err(Truncated)` if the buffer is shorter than [`GAMESTRUCT_LEN`].
    pub fn check_len(&self) -> Result<(), Error> {
        if self.buffer.as_ref().len() < GAMESTRUCT_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The 814 bytes of the struct (without anything the buffer holds after it).
    pub fn as_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[..GAMESTRUCT_LEN]
    }

    fn u32_at(&self, at: Field) -> u32 {
        read_u32(self.buffer.as_ref(), at)
    }

    fn i32_at(&self, at: Field) -> i32 {
        // The C struct declares these int32_t; the bits travel unchanged.
        self.u32_at(at) as i32
    }

    fn str_at(&self, at: Field) -> &[u8] {
        c_str(&self.buffer.as_ref()[at])
    }

    /// `GAMESTRUCT_VERSION` (3 or 4 after `new_checked`).
    pub fn version(&self) -> u32 {
        self.u32_at(field::VERSION)
    }

    /// The game name.
    pub fn name(&self) -> &[u8] {
        self.str_at(field::NAME)
    }

    /// `desc.dwSize`; 4.x browsers skip listed games where it is 0.
    pub fn dw_size(&self) -> i32 {
        self.i32_at(field::DW_SIZE)
    }

    /// `desc.dwFlags` (unused, 0 from real hosts).
    pub fn dw_flags(&self) -> i32 {
        self.i32_at(field::DW_FLAGS)
    }

    /// `desc.host`: empty from hosts, filled in by the lobby with the address it saw.
    pub fn host(&self) -> &[u8] {
        self.str_at(field::HOST)
    }

    /// `desc.dwMaxPlayers`.
    pub fn max_players(&self) -> i32 {
        self.i32_at(field::MAX_PLAYERS)
    }

    /// `desc.dwCurrentPlayers`.
    pub fn current_players(&self) -> i32 {
        self.i32_at(field::CURRENT_PLAYERS)
    }

    /// `desc.dwUserFlags[0..4]` (4.x: game type, spectator slots, blind mode, unused).
    pub fn user_flags(&self) -> [i32; 4] {
        let start = field::USER_FLAGS.start;
        core::array::from_fn(|i| self.i32_at(start + 4 * i..start + 4 * i + 4))
    }

    /// `secondaryHosts[0..2]` (empty from real hosts).
    pub fn secondary_hosts(&self) -> [&[u8]; 2] {
        [
            self.str_at(field::SECONDARY_HOST_0),
            self.str_at(field::SECONDARY_HOST_1),
        ]
    }

    fn extra_field(&self) -> Field {
        if self.version() == 4 {
            field::EXTRA_V4
        } else {
            field::EXTRA_V3
        }
    }

    /// `extra` ("Extra" from real hosts): 159 bytes in v3, 157 in v4.
    pub fn extra(&self) -> &[u8] {
        self.str_at(self.extra_field())
    }

    /// The host's game port (BE u16 at offset 377) for a version 4 struct; `None` for version
    /// 3, where those bytes belong to `extra` and the game port is 2100.
    pub fn host_port(&self) -> Option<u16> {
        if self.version() == 4 {
            let bytes = self.buffer.as_ref();
            let start = field::HOST_PORT.start;
            Some(u16::from_be_bytes([bytes[start], bytes[start + 1]]))
        } else {
            None
        }
    }

    /// `mapname`.
    pub fn map_name(&self) -> &[u8] {
        self.str_at(field::MAP_NAME)
    }

    /// `hostname`: the host player's name.
    pub fn host_name(&self) -> &[u8] {
        self.str_at(field::HOST_NAME)
    }

    /// `versionstring`, e.g. "2.3.7" or "4.3.3".
    pub fn version_string(&self) -> &[u8] {
        self.str_at(field::VERSION_STRING)
    }

    /// `modlist`.
    pub fn mod_list(&self) -> &[u8] {
        self.str_at(field::MOD_LIST)
    }

    /// `game_version_major` (netcode major).
    pub fn game_version_major(&self) -> u32 {
        self.u32_at(field::GAME_VERSION_MAJOR)
    }

    /// `game_version_minor` (netcode minor).
    pub fn game_version_minor(&self) -> u32 {
        self.u32_at(field::GAME_VERSION_MINOR)
    }

    /// `privateGame` (non-zero: password protected).
    pub fn private_game(&self) -> u32 {
        self.u32_at(field::PRIVATE_GAME)
    }

    /// `pureGame` (v3) / `pureMap` (v4).
    pub fn pure_game(&self) -> u32 {
        self.u32_at(field::PURE_GAME)
    }

    /// `Mods` (a count, 0 from real hosts).
    pub fn mods(&self) -> u32 {
        self.u32_at(field::MODS)
    }

    /// `gameId`: 0 until the host got its `gaId` reply; the lobby overwrites it.
    pub fn game_id(&self) -> u32 {
        self.u32_at(field::GAME_ID)
    }

    /// `future2` in 2.3.x (0xBAD02), the `limits` bitmask from 3.x on.
    pub fn limits(&self) -> u32 {
        self.u32_at(field::LIMITS)
    }

    /// `future3` in 2.3.x (0xBAD03), the OS tag ("win", "mac", "lin" as 0x77696e...) from 3.x.
    pub fn future3(&self) -> u32 {
        self.u32_at(field::FUTURE3)
    }

    /// `future4` in 2.3.x (0xBAD04), `netcode major << 16 | minor` in 4.x.
    pub fn future4(&self) -> u32 {
        self.u32_at(field::FUTURE4)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> GameStruct<T> {
    fn bytes_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Store `host` in `desc.host`: NUL-terminated, truncated to 39 bytes, the rest zeroed.
    pub fn set_host(&mut self, host: &str) {
        store_c_string(&mut self.bytes_mut()[field::HOST], host.as_bytes());
    }

    /// Set `desc.dwSize` (the lobby forces it non-zero so 4.x browsers show the game).
    pub fn set_dw_size(&mut self, value: i32) {
        write_u32(self.bytes_mut(), field::DW_SIZE, value as u32);
    }

    /// Set `desc.dwCurrentPlayers` (v4 `addPlayer`/`delPlayer` move it).
    pub fn set_current_players(&mut self, value: i32) {
        write_u32(self.bytes_mut(), field::CURRENT_PLAYERS, value as u32);
    }

    /// Set `gameId` (the lobby stores its own id, whatever the host sent).
    pub fn set_game_id(&mut self, value: u32) {
        write_u32(self.bytes_mut(), field::GAME_ID, value);
    }

    /// Make every string field a clean C string within its size: cut at the first NUL, zero the
    /// rest and force the last byte to NUL. Version 4's `hostPort` is left alone; for any
    /// other version the full 159-byte v3 `extra` is treated as the string.
    pub fn sanitize_strings(&mut self) {
        let extra = self.extra_field();
        let bytes = self.bytes_mut();
        for at in FIXED_STRING_FIELDS {
            sanitize_c_string(&mut bytes[at]);
        }
        sanitize_c_string(&mut bytes[extra]);
        sanitize_c_string(&mut bytes[field::MOD_LIST]);
    }
}

/// An owned GAMESTRUCT, every field as it travels (string fields are the raw fixed-size
/// arrays, so parse and emit round-trip exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GameStructRepr {
    /// 3 or 4.
    pub version: u32,
    /// `name[64]`.
    pub name: [u8; 64],
    /// `desc.dwSize`.
    pub dw_size: i32,
    /// `desc.dwFlags`.
    pub dw_flags: i32,
    /// `desc.host[40]`.
    pub host: [u8; 40],
    /// `desc.dwMaxPlayers`.
    pub max_players: i32,
    /// `desc.dwCurrentPlayers`.
    pub current_players: i32,
    /// `desc.dwUserFlags[4]`.
    pub user_flags: [i32; 4],
    /// `secondaryHosts[2][40]`.
    pub secondary_hosts: [[u8; 40]; 2],
    /// The first 157 bytes of `extra` (all of v4's `extra`).
    pub extra: [u8; 157],
    /// Bytes 377..379 read as a BE u16: v4's `hostPort`; in v3 the last two bytes of `extra`
    /// (NUL from real hosts, which is why a 4.x client reading them gets port 0).
    pub host_port: u16,
    /// `mapname[40]`.
    pub map_name: [u8; 40],
    /// `hostname[40]`.
    pub host_name: [u8; 40],
    /// `versionstring[64]`.
    pub version_string: [u8; 64],
    /// `modlist[255]`.
    pub mod_list: [u8; 255],
    /// `game_version_major`.
    pub game_version_major: u32,
    /// `game_version_minor`.
    pub game_version_minor: u32,
    /// `privateGame`.
    pub private_game: u32,
    /// `pureGame` / `pureMap`.
    pub pure_game: u32,
    /// `Mods`.
    pub mods: u32,
    /// `gameId`.
    pub game_id: u32,
    /// `future2` / `limits`.
    pub limits: u32,
    /// `future3` / OS tag.
    pub future3: u32,
    /// `future4` / netcode version.
    pub future4: u32,
}

impl GameStructRepr {
    /// An all-zero struct of the given version (every string empty).
    pub const fn zeroed(version: u32) -> GameStructRepr {
        GameStructRepr {
            version,
            name: [0; 64],
            dw_size: 0,
            dw_flags: 0,
            host: [0; 40],
            max_players: 0,
            current_players: 0,
            user_flags: [0; 4],
            secondary_hosts: [[0; 40]; 2],
            extra: [0; 157],
            host_port: 0,
            map_name: [0; 40],
            host_name: [0; 40],
            version_string: [0; 64],
            mod_list: [0; 255],
            game_version_major: 0,
            game_version_minor: 0,
            private_game: 0,
            pure_game: 0,
            mods: 0,
            game_id: 0,
            limits: 0,
            future3: 0,
            future4: 0,
        }
    }

    /// Read every field of a checked view.
    pub fn parse<T: AsRef<[u8]>>(view: &GameStruct<T>) -> Result<GameStructRepr, Error> {
        view.check_len()?;
        let version = view.version();
        if version != 3 && version != 4 {
            return Err(Error::BadVersion);
        }
        let bytes = view.as_bytes();
        let array = |at: Field| -> [u8; 40] {
            let mut out = [0u8; 40];
            out.copy_from_slice(&bytes[at]);
            out
        };
        let mut repr = GameStructRepr::zeroed(version);
        repr.name.copy_from_slice(&bytes[field::NAME]);
        repr.dw_size = view.dw_size();
        repr.dw_flags = view.dw_flags();
        repr.host = array(field::HOST);
        repr.max_players = view.max_players();
        repr.current_players = view.current_players();
        repr.user_flags = view.user_flags();
        repr.secondary_hosts = [
            array(field::SECONDARY_HOST_0),
            array(field::SECONDARY_HOST_1),
        ];
        repr.extra.copy_from_slice(&bytes[field::EXTRA_V4]);
        let port = field::HOST_PORT.start;
        repr.host_port = u16::from_be_bytes([bytes[port], bytes[port + 1]]);
        repr.map_name = array(field::MAP_NAME);
        repr.host_name = array(field::HOST_NAME);
        repr.version_string
            .copy_from_slice(&bytes[field::VERSION_STRING]);
        repr.mod_list.copy_from_slice(&bytes[field::MOD_LIST]);
        repr.game_version_major = view.game_version_major();
        repr.game_version_minor = view.game_version_minor();
        repr.private_game = view.private_game();
        repr.pure_game = view.pure_game();
        repr.mods = view.mods();
        repr.game_id = view.game_id();
        repr.limits = view.limits();
        repr.future3 = view.future3();
        repr.future4 = view.future4();
        Ok(repr)
    }

    /// Always [`GAMESTRUCT_LEN`].
    pub const fn buffer_len(&self) -> usize {
        GAMESTRUCT_LEN
    }

    /// Write every one of the 814 bytes.
    ///
    /// # Panics
    /// If the view's buffer is shorter than [`GAMESTRUCT_LEN`] (our own buffer, never a peer's).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut GameStruct<T>) {
        let bytes = &mut view.bytes_mut()[..GAMESTRUCT_LEN];
        write_u32(bytes, field::VERSION, self.version);
        bytes[field::NAME].copy_from_slice(&self.name);
        write_u32(bytes, field::DW_SIZE, self.dw_size as u32);
        write_u32(bytes, field::DW_FLAGS, self.dw_flags as u32);
        bytes[field::HOST].copy_from_slice(&self.host);
        write_u32(bytes, field::MAX_PLAYERS, self.max_players as u32);
        write_u32(bytes, field::CURRENT_PLAYERS, self.current_players as u32);
        let flags = field::USER_FLAGS.start;
        for (i, flag) in self.user_flags.iter().enumerate() {
            let at = flags + 4 * i;
            write_u32(bytes, at..at + 4, *flag as u32);
        }
        bytes[field::SECONDARY_HOST_0].copy_from_slice(&self.secondary_hosts[0]);
        bytes[field::SECONDARY_HOST_1].copy_from_slice(&self.secondary_hosts[1]);
        bytes[field::EXTRA_V4].copy_from_slice(&self.extra);
        bytes[field::HOST_PORT].copy_from_slice(&self.host_port.to_be_bytes());
        bytes[field::MAP_NAME].copy_from_slice(&self.map_name);
        bytes[field::HOST_NAME].copy_from_slice(&self.host_name);
        bytes[field::VERSION_STRING].copy_from_slice(&self.version_string);
        bytes[field::MOD_LIST].copy_from_slice(&self.mod_list);
        write_u32(bytes, field::GAME_VERSION_MAJOR, self.game_version_major);
        write_u32(bytes, field::GAME_VERSION_MINOR, self.game_version_minor);
        write_u32(bytes, field::PRIVATE_GAME, self.private_game);
        write_u32(bytes, field::PURE_GAME, self.pure_game);
        write_u32(bytes, field::MODS, self.mods);
        write_u32(bytes, field::GAME_ID, self.game_id);
        write_u32(bytes, field::LIMITS, self.limits);
        write_u32(bytes, field::FUTURE3, self.future3);
        write_u32(bytes, field::FUTURE4, self.future4);
    }

    /// The struct as its 814 wire bytes (for fixtures and for the lobby's stored copy).
    pub fn to_bytes(&self) -> [u8; GAMESTRUCT_LEN] {
        let mut out = [0u8; GAMESTRUCT_LEN];
        self.emit(&mut GameStruct::new_unchecked(&mut out[..]));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{quickcheck, Arbitrary, Gen, QuickCheck};

    fn arbitrary_array<const N: usize>(g: &mut Gen) -> [u8; N] {
        core::array::from_fn(|_| u8::arbitrary(g))
    }

    impl Arbitrary for GameStructRepr {
        fn arbitrary(g: &mut Gen) -> GameStructRepr {
            GameStructRepr {
                version: if bool::arbitrary(g) { 3 } else { 4 },
                name: arbitrary_array(g),
                dw_size: i32::arbitrary(g),
                dw_flags: i32::arbitrary(g),
                host: arbitrary_array(g),
                max_players: i32::arbitrary(g),
                current_players: i32::arbitrary(g),
                user_flags: [
                    i32::arbitrary(g),
                    i32::arbitrary(g),
                    i32::arbitrary(g),
                    i32::arbitrary(g),
                ],
                secondary_hosts: [arbitrary_array(g), arbitrary_array(g)],
                extra: arbitrary_array(g),
                host_port: u16::arbitrary(g),
                map_name: arbitrary_array(g),
                host_name: arbitrary_array(g),
                version_string: arbitrary_array(g),
                mod_list: arbitrary_array(g),
                game_version_major: u32::arbitrary(g),
                game_version_minor: u32::arbitrary(g),
                private_game: u32::arbitrary(g),
                pure_game: u32::arbitrary(g),
                mods: u32::arbitrary(g),
                game_id: u32::arbitrary(g),
                limits: u32::arbitrary(g),
                future3: u32::arbitrary(g),
                future4: u32::arbitrary(g),
            }
        }
    }

    /// Append `value` as a BE u32.
    fn be32(out: &mut Vec<u8>, value: u32) {
        out.extend_from_slice(&value.to_be_bytes());
    }

    /// Append `text` as a NUL-padded C char array of `size` bytes.
    fn chars(out: &mut Vec<u8>, text: &[u8], size: usize) {
        assert!(text.len() < size);
        out.extend_from_slice(text);
        out.resize(out.len() + size - text.len(), 0);
    }

    /// A version 3 GAMESTRUCT as a 2.3.7 host sends it, field by field.
    fn golden_v3() -> Vec<u8> {
        let mut b = Vec::new();
        be32(&mut b, 3); //                      0: GAMESTRUCT_VERSION
        chars(&mut b, b"Test game", 64); //      4: name
        be32(&mut b, 72); //                    68: desc.dwSize
        be32(&mut b, 0); //                     72: desc.dwFlags
        chars(&mut b, b"", 40); //              76: desc.host
        be32(&mut b, 4); //                    116: dwMaxPlayers
        be32(&mut b, 1); //                    120: dwCurrentPlayers
        for _ in 0..4 {
            be32(&mut b, 0); //                124: dwUserFlags[0..4]
        }
        chars(&mut b, b"", 40); //             140: secondaryHosts[0]
        chars(&mut b, b"", 40); //             180: secondaryHosts[1]
        chars(&mut b, b"Extra", 159); //       220: extra[159]
        chars(&mut b, b"Rush", 40); //         379: mapname
        chars(&mut b, b"host", 40); //         419: hostname
        chars(&mut b, b"2.3.7", 64); //        459: versionstring
        chars(&mut b, b"", 255); //            523: modlist
        be32(&mut b, 2); //                    778: game_version_major
        be32(&mut b, 98); //                   782: game_version_minor
        be32(&mut b, 0); //                    786: privateGame
        be32(&mut b, 0); //                    790: pureGame
        be32(&mut b, 0); //                    794: Mods
        be32(&mut b, 0); //                    798: gameId
        be32(&mut b, 0xBAD02); //              802: future2
        be32(&mut b, 0xBAD03); //              806: future3
        be32(&mut b, 0xBAD04); //              810: future4
        assert_eq!(b.len(), GAMESTRUCT_LEN);
        b
    }

    /// A version 4 GAMESTRUCT as the 4.3.3 host of notes section 4 sends it.
    fn golden_v4() -> Vec<u8> {
        let mut b = Vec::new();
        be32(&mut b, 4); //                      0: GAMESTRUCT_VERSION
        chars(&mut b, b"4.3.3 game", 64); //     4: name
        be32(&mut b, 72); //                    68: desc.dwSize
        be32(&mut b, 0); //                     72: desc.dwFlags
        chars(&mut b, b"", 40); //              76: desc.host
        be32(&mut b, 8); //                    116: dwMaxPlayers
        be32(&mut b, 2); //                    120: dwCurrentPlayers
        be32(&mut b, 0); //                    124: dwUserFlags[0] game type
        be32(&mut b, 0x0001_0002); //          128: dwUserFlags[1] spectators
        be32(&mut b, 0); //                    132: dwUserFlags[2]
        be32(&mut b, 0); //                    136: dwUserFlags[3]
        chars(&mut b, b"", 40); //             140: secondaryHosts[0]
        chars(&mut b, b"", 40); //             180: secondaryHosts[1]
        chars(&mut b, b"Extra", 157); //       220: extra[157]
        b.extend_from_slice(&2100u16.to_be_bytes()); // 377: hostPort
        chars(&mut b, b"Sk-Rush", 40); //      379: mapname
        chars(&mut b, b"player", 40); //       419: hostname
        chars(&mut b, b"4.3.3", 64); //        459: versionstring
        chars(&mut b, b"", 255); //            523: modlist
        be32(&mut b, 0x4000); //               778: game_version_major
        be32(&mut b, 0x4f); //                 782: game_version_minor
        be32(&mut b, 1); //                    786: privateGame
        be32(&mut b, 0); //                    790: pureMap
        be32(&mut b, 0); //                    794: Mods
        be32(&mut b, 7); //                    798: gameId
        be32(&mut b, 0); //                    802: limits
        be32(&mut b, 0x6c696e); //             806: OS tag "lin"
        be32(&mut b, 0x4000_004f); //          810: netcode version
        assert_eq!(b.len(), GAMESTRUCT_LEN);
        b
    }

    fn repr_v3() -> GameStructRepr {
        let mut r = GameStructRepr::zeroed(3);
        r.name = c_string(b"Test game");
        r.dw_size = 72;
        r.max_players = 4;
        r.current_players = 1;
        r.extra = c_string(b"Extra");
        r.map_name = c_string(b"Rush");
        r.host_name = c_string(b"host");
        r.version_string = c_string(b"2.3.7");
        r.game_version_major = 2;
        r.game_version_minor = 98;
        r.limits = 0xBAD02;
        r.future3 = 0xBAD03;
        r.future4 = 0xBAD04;
        r
    }

    fn repr_v4() -> GameStructRepr {
        let mut r = GameStructRepr::zeroed(4);
        r.name = c_string(b"4.3.3 game");
        r.dw_size = 72;
        r.max_players = 8;
        r.current_players = 2;
        r.user_flags = [0, 0x0001_0002, 0, 0];
        r.extra = c_string(b"Extra");
        r.host_port = 2100;
        r.map_name = c_string(b"Sk-Rush");
        r.host_name = c_string(b"player");
        r.version_string = c_string(b"4.3.3");
        r.game_version_major = 0x4000;
        r.game_version_minor = 0x4f;
        r.private_game = 1;
        r.game_id = 7;
        r.future3 = 0x6c696e;
        r.future4 = 0x4000_004f;
        r
    }

    #[test]
    fn deconstruct_v3() {
        let bytes = golden_v3();
        let g = GameStruct::new_checked(&bytes[..]).unwrap();
        assert_eq!(g.version(), 3);
        assert_eq!(g.name(), b"Test game");
        assert_eq!(g.dw_size(), 72);
        assert_eq!(g.dw_flags(), 0);
        assert_eq!(g.host(), b"");
        assert_eq!(g.max_players(), 4);
        assert_eq!(g.current_players(), 1);
        assert_eq!(g.user_flags(), [0; 4]);
        assert_eq!(g.secondary_hosts(), [&b""[..], &b""[..]]);
        assert_eq!(g.extra(), b"Extra");
        assert_eq!(g.host_port(), None);
        assert_eq!(g.map_name(), b"Rush");
        assert_eq!(g.host_name(), b"host");
        assert_eq!(g.version_string(), b"2.3.7");
        assert_eq!(g.mod_list(), b"");
        assert_eq!(g.game_version_major(), 2);
        assert_eq!(g.game_version_minor(), 98);
        assert_eq!(g.private_game(), 0);
        assert_eq!(g.pure_game(), 0);
        assert_eq!(g.mods(), 0);
        assert_eq!(g.game_id(), 0);
        assert_eq!(g.limits(), 0xBAD02);
        assert_eq!(g.future3(), 0xBAD03);
        assert_eq!(g.future4(), 0xBAD04);
    }

    #[test]
    fn deconstruct_v4() {
        let bytes = golden_v4();
        let g = GameStruct::new_checked(&bytes[..]).unwrap();
        assert_eq!(g.version(), 4);
        assert_eq!(g.name(), b"4.3.3 game");
        assert_eq!(g.dw_size(), 72);
        assert_eq!(g.dw_flags(), 0);
        assert_eq!(g.host(), b"");
        assert_eq!(g.max_players(), 8);
        assert_eq!(g.current_players(), 2);
        assert_eq!(g.user_flags(), [0, 0x0001_0002, 0, 0]);
        assert_eq!(g.secondary_hosts(), [&b""[..], &b""[..]]);
        assert_eq!(g.extra(), b"Extra");
        assert_eq!(g.host_port(), Some(2100));
        assert_eq!(g.map_name(), b"Sk-Rush");
        assert_eq!(g.host_name(), b"player");
        assert_eq!(g.version_string(), b"4.3.3");
        assert_eq!(g.mod_list(), b"");
        assert_eq!(g.game_version_major(), 0x4000);
        assert_eq!(g.game_version_minor(), 0x4f);
        assert_eq!(g.private_game(), 1);
        assert_eq!(g.pure_game(), 0);
        assert_eq!(g.mods(), 0);
        assert_eq!(g.game_id(), 7);
        assert_eq!(g.limits(), 0);
        assert_eq!(g.future3(), 0x6c696e);
        assert_eq!(g.future4(), 0x4000_004f);
    }

    #[test]
    fn construct() {
        for (repr, golden) in [(repr_v3(), golden_v3()), (repr_v4(), golden_v4())] {
            let mut buf = [0xa5u8; GAMESTRUCT_LEN + 3];
            repr.emit(&mut GameStruct::new_unchecked(&mut buf[..]));
            assert_eq!(&buf[..GAMESTRUCT_LEN], &golden[..]);
            assert_eq!(buf[GAMESTRUCT_LEN..], [0xa5; 3], "wrote past the struct");
        }
    }

    #[test]
    fn parse() {
        let v3 = golden_v3();
        let v4 = golden_v4();
        let parsed = GameStructRepr::parse(&GameStruct::new_unchecked(&v3[..])).unwrap();
        assert_eq!(parsed, repr_v3());
        let parsed = GameStructRepr::parse(&GameStruct::new_unchecked(&v4[..])).unwrap();
        assert_eq!(parsed, repr_v4());
    }

    #[test]
    fn emit() {
        assert_eq!(&repr_v3().to_bytes()[..], &golden_v3()[..]);
        assert_eq!(&repr_v4().to_bytes()[..], &golden_v4()[..]);
        assert_eq!(repr_v4().buffer_len(), GAMESTRUCT_LEN);
    }

    #[test]
    fn checked_rejects_short_and_bad_versions() {
        let bytes = golden_v4();
        assert_eq!(
            GameStruct::new_checked(&bytes[..GAMESTRUCT_LEN - 1]),
            Err(Error::Truncated)
        );
        assert_eq!(GameStruct::new_checked(&[][..]), Err(Error::Truncated));
        for version in [0u32, 1, 2, 5, 0x0400_0000, u32::MAX] {
            let mut bytes = golden_v4();
            bytes[..4].copy_from_slice(&version.to_be_bytes());
            assert_eq!(GameStruct::new_checked(&bytes[..]), Err(Error::BadVersion));
            assert_eq!(
                GameStructRepr::parse(&GameStruct::new_unchecked(&bytes[..])),
                Err(Error::BadVersion)
            );
        }
        // Bytes past the struct are not part of it.
        let mut longer = golden_v3();
        longer.extend_from_slice(b"list\0");
        let g = GameStruct::new_checked(&longer[..]).unwrap();
        assert_eq!(g.as_bytes(), &golden_v3()[..]);
    }

    #[test]
    fn string_without_nul_stops_at_field_end() {
        let mut bytes = golden_v3();
        bytes[4..68].fill(b'N');
        bytes[76..116].fill(b'H');
        let g = GameStruct::new_checked(&bytes[..]).unwrap();
        assert_eq!(g.name(), &[b'N'; 64][..]);
        assert_eq!(g.host(), &[b'H'; 40][..]);
    }

    #[test]
    fn v4_extra_excludes_host_port() {
        let mut bytes = golden_v4();
        bytes[220..377].fill(b'x');
        let g = GameStruct::new_checked(&bytes[..]).unwrap();
        assert_eq!(g.extra().len(), 157);
        assert_eq!(g.host_port(), Some(2100));
    }

    #[test]
    fn setters_rewrite_lobby_fields() {
        let mut bytes = golden_v4();
        bytes[76..116].fill(0xff);
        let mut g = GameStruct::new_checked(&mut bytes[..]).unwrap();
        g.set_host("192.0.2.7");
        g.set_dw_size(1);
        g.set_game_id(0xdead_beef);
        g.set_current_players(3);
        assert_eq!(g.host(), b"192.0.2.7");
        assert_eq!(g.dw_size(), 1);
        assert_eq!(g.current_players(), 3);
        assert_eq!(g.game_id(), 0xdead_beef);
        assert!(bytes[76 + 9..116].iter().all(|&b| b == 0));
        assert_eq!(&bytes[120..124], &[0, 0, 0, 3]);

        let long = "2001:db8:1111:2222:3333:4444:5555:6666:7777";
        let mut g = GameStruct::new_checked(&mut bytes[..]).unwrap();
        g.set_host(long);
        assert_eq!(g.host(), &long.as_bytes()[..39]);
        assert_eq!(bytes[115], 0);
    }

    #[test]
    fn c_string_truncates_at_char_boundary() {
        let s: [u8; 4] = c_string("abé".as_bytes()); // é is two bytes: 'a' 'b' 0xc3 0xa9
                                                     // 'é' is 0xc3 0xa9: half of it would not be UTF-8, so it goes whole.
        assert_eq!(s, [b'a', b'b', 0, 0]);
        let s: [u8; 4] = c_string("aéb".as_bytes());
        assert_eq!(s, [b'a', 0xc3, 0xa9, 0]);
        let s: [u8; 3] = c_string("aé".as_bytes());
        assert_eq!(s, [b'a', 0, 0]);
        let s: [u8; 4] = c_string(b"a\0bc");
        assert_eq!(s, [b'a', 0, 0, 0]);
    }

    #[test]
    fn sanitize_strings_terminates_every_field() {
        for version in [3u32, 4] {
            let mut bytes = [b'Z'; GAMESTRUCT_LEN];
            bytes[..4].copy_from_slice(&version.to_be_bytes());
            // A NUL early in the name, with junk after it.
            bytes[4 + 3] = 0;
            let mut g = GameStruct::new_checked(&mut bytes[..]).unwrap();
            g.sanitize_strings();
            assert_eq!(g.name(), b"ZZZ");
            assert_eq!(g.host().len(), 39);
            assert_eq!(g.secondary_hosts()[0].len(), 39);
            assert_eq!(g.secondary_hosts()[1].len(), 39);
            assert_eq!(g.map_name().len(), 39);
            assert_eq!(g.host_name().len(), 39);
            assert_eq!(g.version_string().len(), 63);
            assert_eq!(g.mod_list().len(), 254);
            // Numbers are untouched.
            assert_eq!(g.dw_size(), i32::from_be_bytes([b'Z'; 4]));
            assert_eq!(g.game_id(), u32::from_be_bytes([b'Z'; 4]));
            if version == 4 {
                assert_eq!(g.extra().len(), 156);
                assert_eq!(g.host_port(), Some(u16::from_be_bytes([b'Z'; 2])));
            } else {
                assert_eq!(g.extra().len(), 158);
            }
            assert!(bytes[4..68].iter().skip(3).all(|&b| b == 0));
        }
    }

    quickcheck! {
        fn repr_round_trip(repr: GameStructRepr) -> bool {
            let bytes = repr.to_bytes();
            GameStructRepr::parse(&GameStruct::new_checked(&bytes[..]).unwrap()) == Ok(repr)
        }
    }

    fn view_is_total(data: Vec<u8>, version: bool) -> bool {
        let mut data = data;
        // Half the time make the version valid so the accessors run.
        if version && data.len() >= 4 {
            data[..4].copy_from_slice(&4u32.to_be_bytes());
        }
        if let Ok(mut g) = GameStruct::new_checked(&mut data[..]) {
            let _ = (g.name(), g.host(), g.extra(), g.host_port(), g.mod_list());
            let _ = (g.user_flags(), g.secondary_hosts(), g.future4());
            g.sanitize_strings();
            g.set_host("203.0.113.200");
            return match GameStructRepr::parse(&g) {
                Ok(repr) => repr.to_bytes()[..] == g.as_bytes()[..],
                Err(_) => false,
            };
        }
        GameStructRepr::parse(&GameStruct::new_unchecked(&data[..])).is_err()
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // Sizes around 814 so both the short and the full paths are exercised.
        QuickCheck::new()
            .rng(Gen::new(1700))
            .tests(300)
            .quickcheck(view_is_total as fn(Vec<u8>, bool) -> bool);
    }
}
