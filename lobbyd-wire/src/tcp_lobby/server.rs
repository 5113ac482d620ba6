//! The seven server-to-client messages of the TCP lobby (RFC R-Type-TCP-001 sections 5.3,
//! 5.4, 5.6, 5.8, 5.10, 5.11 and 5.12), as [`ServerRepr`], with GAME_START's body
//! ([`GameStart`], its [`PlayerInfo`] records and spawn positions) and its dotted-text IP
//! field.
//!
//! The server emits these into a connection's send queue; the parsers serve the test client and
//! the load generator. A received GAME_START stays a view over the frame: [`GameStart::slots`]
//! reads the players and spawns from the bytes without collecting them. Nothing here allocates,
//! and nothing here chooses who is told what: the R-Type core does.

use core::fmt;
use core::net::Ipv4Addr;

use super::{
    check_size, emit_header, error_text, field, parse_flag, payload_array, payload_byte, size,
    Error, ErrorCode, Frame, PacketType, GAME_START_FIXED_LEN, HEADER_LEN, MAX_ERROR_FRAME,
    MAX_GAME_START_PLAYERS, NAME_LEN, PLAYER_INFO_LEN, SERVER_IP_LEN, SPAWN_LEN,
};

/// One PlayerInfo record of GAME_START (41 bytes).
///
/// ```text
/// +--------+----------------+----------------------------+
/// | number | hash u64 LE    | name[32] UTF-8, NUL-padded |
/// +--------+----------------+----------------------------+
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlayerInfo {
    /// Slot number, 1 to the party size.
    pub number: u8,
    /// The player hash, also the UDP HELLO token.
    pub hash: u64,
    /// The name field, NUL-padded.
    pub name: [u8; NAME_LEN],
}

/// A spawn position: x, y as float32.
pub type Spawn = (f32, f32);

/// A GAME_START player and its spawn position. Pairing them in one slice makes a player without
/// a spawn (or a spawn without a player) unrepresentable.
pub type Slot = (PlayerInfo, Spawn);

/// The body of GAME_START (0x16).
///
/// ```text
/// +--------------------------------+---------+-------+
/// | server IP text[16], NUL-padded | port LE | count |
/// +--------------------------------+---------+-------+
/// | count x PlayerInfo (41 bytes each)               |
/// +--------------------------------------------------+
/// | count x spawn (x f32 LE, y f32 LE; 8 bytes each) |
/// +--------------------------------------------------+
/// ```
///
/// Built for emitting with [`GameStart::new`] over a slice of `(PlayerInfo, spawn)` pairs, or
/// obtained from [`ServerRepr::parse`] as a view over the received bytes; either way
/// [`GameStart::slots`] iterates the pairs without allocating.
#[derive(Clone, Copy)]
pub struct GameStart<'a> {
    /// The UDP game endpoint's address, sent as dotted text.
    pub server_ip: Ipv4Addr,
    /// The UDP game endpoint's port.
    pub udp_port: u16,
    slots: Slots<'a>,
}

#[derive(Clone, Copy)]
enum Slots<'a> {
    Pairs(&'a [Slot]),
    // The validated player and spawn arrays of a received GAME_START, with the count.
    Wire { bytes: &'a [u8], count: usize },
}

impl<'a> GameStart<'a> {
    /// A GAME_START for `slots`, in the order they will be sent (the lobby sends slot order).
    /// `None` if there are more than [`MAX_GAME_START_PLAYERS`] slots: the count is one byte.
    pub fn new(server_ip: Ipv4Addr, udp_port: u16, slots: &'a [Slot]) -> Option<GameStart<'a>> {
        if slots.len() > MAX_GAME_START_PLAYERS {
            return None;
        }
        Some(GameStart {
            server_ip,
            udp_port,
            slots: Slots::Pairs(slots),
        })
    }

    /// Number of players (N on the wire).
    pub fn player_count(&self) -> usize {
        match self.slots {
            Slots::Pairs(pairs) => pairs.len(),
            Slots::Wire { count, .. } => count,
        }
    }

    /// The players with their spawn positions, in wire order.
    pub fn slots(&self) -> SlotIter<'a> {
        SlotIter {
            slots: self.slots,
            index: 0,
        }
    }

    fn payload_len(&self) -> usize {
        GAME_START_FIXED_LEN + self.player_count() * (PLAYER_INFO_LEN + SPAWN_LEN)
    }

    fn parse(payload: &'a [u8]) -> Result<GameStart<'a>, Error> {
        let count = usize::from(payload_byte(payload, field::GAME_START_COUNT)?);
        let expected = GAME_START_FIXED_LEN + count * (PLAYER_INFO_LEN + SPAWN_LEN);
        check_size(payload, expected)?;
        let ip_field: &[u8; SERVER_IP_LEN] = payload_array(payload, field::GAME_START_IP)?;
        let port: &[u8; 2] = payload_array(payload, field::GAME_START_PORT)?;
        let bytes = payload
            .get(field::GAME_START_SLOTS..)
            .ok_or(Error::BadPayloadSize)?;
        Ok(GameStart {
            server_ip: parse_ip_field(ip_field)?,
            udp_port: u16::from_le_bytes(*port),
            slots: Slots::Wire { bytes, count },
        })
    }

    fn emit(&self, payload: &mut [u8]) {
        write_ip_field(self.server_ip, &mut payload[field::GAME_START_IP]);
        payload[field::GAME_START_PORT].copy_from_slice(&self.udp_port.to_le_bytes());
        // `new` and `parse` both bound the count by u8::MAX.
        payload[field::GAME_START_COUNT] = self.player_count() as u8;
        let (infos, spawns) =
            payload[field::GAME_START_SLOTS..].split_at_mut(self.player_count() * PLAYER_INFO_LEN);
        let records = infos
            .chunks_exact_mut(PLAYER_INFO_LEN)
            .zip(spawns.chunks_exact_mut(SPAWN_LEN));
        for ((info_out, spawn_out), (info, (x, y))) in records.zip(self.slots()) {
            info_out[field::INFO_NUMBER] = info.number;
            info_out[field::INFO_HASH].copy_from_slice(&info.hash.to_le_bytes());
            info_out[field::INFO_NAME].copy_from_slice(&info.name);
            spawn_out[field::SPAWN_X].copy_from_slice(&x.to_le_bytes());
            spawn_out[field::SPAWN_Y].copy_from_slice(&y.to_le_bytes());
        }
    }
}

impl PartialEq for GameStart<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.server_ip == other.server_ip
            && self.udp_port == other.udp_port
            && self.slots().eq(other.slots())
    }
}

impl fmt::Debug for GameStart<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GameStart")
            .field("server_ip", &self.server_ip)
            .field("udp_port", &self.udp_port)
            .field("slots", &DebugSlots(*self))
            .finish()
    }
}

struct DebugSlots<'a>(GameStart<'a>);

impl fmt::Debug for DebugSlots<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.slots()).finish()
    }
}

/// Iterator over a GAME_START's players and spawn positions; see [`GameStart::slots`].
#[derive(Clone)]
pub struct SlotIter<'a> {
    slots: Slots<'a>,
    index: usize,
}

impl Iterator for SlotIter<'_> {
    type Item = Slot;

    fn next(&mut self) -> Option<Slot> {
        let slot = match self.slots {
            Slots::Pairs(pairs) => pairs.get(self.index).copied()?,
            Slots::Wire { bytes, count } => wire_slot(bytes, count, self.index)?,
        };
        self.index += 1;
        Some(slot)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let total = match self.slots {
            Slots::Pairs(pairs) => pairs.len(),
            Slots::Wire { count, .. } => count,
        };
        let left = total.saturating_sub(self.index);
        (left, Some(left))
    }
}

impl ExactSizeIterator for SlotIter<'_> {}

/// Reads slot `index` from the player and spawn arrays of a validated GAME_START.
fn wire_slot(bytes: &[u8], count: usize, index: usize) -> Option<Slot> {
    if index >= count {
        return None;
    }
    let info_at = index * PLAYER_INFO_LEN;
    let info = bytes.get(info_at..info_at + PLAYER_INFO_LEN)?;
    let spawn_at = count * PLAYER_INFO_LEN + index * SPAWN_LEN;
    let spawn = bytes.get(spawn_at..spawn_at + SPAWN_LEN)?;
    let hash: [u8; 8] = info.get(field::INFO_HASH)?.try_into().ok()?;
    let name: [u8; NAME_LEN] = info.get(field::INFO_NAME)?.try_into().ok()?;
    let x: [u8; 4] = spawn.get(field::SPAWN_X)?.try_into().ok()?;
    let y: [u8; 4] = spawn.get(field::SPAWN_Y)?.try_into().ok()?;
    Some((
        PlayerInfo {
            number: *info.get(field::INFO_NUMBER)?,
            hash: u64::from_le_bytes(hash),
            name,
        },
        (f32::from_le_bytes(x), f32::from_le_bytes(y)),
    ))
}

/// Writes `ip` as dotted decimal text into the 16-byte field, NUL-terminated and NUL-padded.
/// The longest address, "255.255.255.255", is 15 bytes, so the NUL always fits.
fn write_ip_field(ip: Ipv4Addr, field: &mut [u8]) {
    field.fill(0);
    let mut at = 0;
    for (index, octet) in ip.octets().into_iter().enumerate() {
        if index > 0 {
            field[at] = b'.';
            at += 1;
        }
        let digits = [octet / 100, octet / 10 % 10, octet % 10];
        let skip = match octet {
            100.. => 0,
            10..=99 => 1,
            _ => 2,
        };
        for digit in &digits[skip..] {
            field[at] = b'0' + digit;
            at += 1;
        }
    }
}

/// Reads the server IP field: dotted IPv4 text up to the first NUL, which must be present.
fn parse_ip_field(field: &[u8; SERVER_IP_LEN]) -> Result<Ipv4Addr, Error> {
    let end = field.iter().position(|&b| b == 0).ok_or(Error::BadValue)?;
    let text = field.get(..end).ok_or(Error::BadValue)?;
    core::str::from_utf8(text)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or(Error::BadValue)
}

/// A message from server to client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ServerRepr<'a> {
    /// CONNECT_ACK (0x11), payload 9 bytes.
    ///
    /// ```text
    /// +-------------+--------+
    /// | hash u64 LE | number |
    /// +-------------+--------+
    /// ```
    ConnectAck {
        /// The player hash.
        hash: u64,
        /// The slot number.
        number: u8,
    },
    /// PLAYER_JOIN (0x12), payload 42 bytes.
    ///
    /// ```text
    /// +--------+-------------+----------------------------+-------+
    /// | number | hash u64 LE | name[32] UTF-8, NUL-padded | ready |
    /// +--------+-------------+----------------------------+-------+
    /// ```
    PlayerJoin {
        /// The slot number.
        number: u8,
        /// The player hash.
        hash: u64,
        /// The name field.
        name: &'a [u8; NAME_LEN],
        /// The player's ready flag.
        ready: bool,
    },
    /// PLAYER_READY (0x14), payload 2 bytes.
    ///
    /// ```text
    /// +--------+-------+
    /// | number | ready |
    /// +--------+-------+
    /// ```
    PlayerReady {
        /// The slot number.
        number: u8,
        /// The new ready flag.
        ready: bool,
    },
    /// GAME_START (0x16), payload 19 + 49 x N bytes; see [`GameStart`].
    GameStart(GameStart<'a>),
    /// PLAYER_LEFT (0x18), payload 1 byte: the slot number.
    ///
    /// ```text
    /// +--------+
    /// | number |
    /// +--------+
    /// ```
    PlayerLeft {
        /// The slot number.
        number: u8,
    },
    /// COUNTDOWN (0x19), payload 4 bytes: seconds remaining, float32 LE.
    ///
    /// ```text
    /// +----------------------+
    /// | remaining f32 LE     |
    /// +----------------------+
    /// ```
    Countdown {
        /// Seconds until GAME_START.
        remaining: f32,
    },
    /// ERROR_MSG (0x1F), payload 1 + text + NUL, whole frame at most 256 bytes.
    ///
    /// ```text
    /// +------+------------------------+-----+
    /// | code | text UTF-8 (0..=251)   | NUL |
    /// +------+------------------------+-----+
    /// ```
    ///
    /// Emitting sends [`error_text`] of `message`: cut at its first NUL and to 251 bytes at a
    /// char boundary. Parsing also accepts the RFC's 4-byte minimum (code only) as an empty text.
    Error {
        /// The error code.
        code: ErrorCode,
        /// The text.
        message: &'a str,
    },
}

impl<'a> ServerRepr<'a> {
    /// Parses a server frame (client side). Client-to-server types give
    /// [`Error::WrongDirection`].
    pub fn parse(frame: &Frame<&'a [u8]>) -> Result<ServerRepr<'a>, Error> {
        frame.check_len()?;
        let payload = frame.into_payload();
        match frame.packet_type() {
            PacketType::ConnectAck => {
                check_size(payload, size::CONNECT_ACK)?;
                Ok(ServerRepr::ConnectAck {
                    hash: u64::from_le_bytes(*payload_array(payload, field::CONNECT_ACK_HASH)?),
                    number: payload_byte(payload, field::CONNECT_ACK_NUMBER)?,
                })
            }
            PacketType::PlayerJoin => {
                check_size(payload, size::PLAYER_JOIN)?;
                Ok(ServerRepr::PlayerJoin {
                    number: payload_byte(payload, field::PLAYER_JOIN_NUMBER)?,
                    hash: u64::from_le_bytes(*payload_array(payload, field::PLAYER_JOIN_HASH)?),
                    name: payload_array(payload, field::PLAYER_JOIN_NAME)?,
                    ready: parse_flag(payload_byte(payload, field::PLAYER_JOIN_READY)?)?,
                })
            }
            PacketType::PlayerReady => {
                check_size(payload, size::PLAYER_READY)?;
                Ok(ServerRepr::PlayerReady {
                    number: payload_byte(payload, field::PLAYER_READY_NUMBER)?,
                    ready: parse_flag(payload_byte(payload, field::PLAYER_READY_READY)?)?,
                })
            }
            PacketType::GameStart => GameStart::parse(payload).map(ServerRepr::GameStart),
            PacketType::PlayerLeft => {
                check_size(payload, size::PLAYER_LEFT)?;
                Ok(ServerRepr::PlayerLeft {
                    number: payload_byte(payload, field::PLAYER_LEFT_NUMBER)?,
                })
            }
            PacketType::Countdown => {
                check_size(payload, size::COUNTDOWN)?;
                Ok(ServerRepr::Countdown {
                    remaining: f32::from_le_bytes(*payload_array(
                        payload,
                        field::COUNTDOWN_REMAINING,
                    )?),
                })
            }
            PacketType::ErrorMsg => parse_error_msg(payload),
            PacketType::Unknown(_) => Err(Error::UnknownType),
            _ => Err(Error::WrongDirection),
        }
    }

    /// The packet type of this message.
    pub const fn packet_type(&self) -> PacketType {
        match self {
            ServerRepr::ConnectAck { .. } => PacketType::ConnectAck,
            ServerRepr::PlayerJoin { .. } => PacketType::PlayerJoin,
            ServerRepr::PlayerReady { .. } => PacketType::PlayerReady,
            ServerRepr::GameStart(_) => PacketType::GameStart,
            ServerRepr::PlayerLeft { .. } => PacketType::PlayerLeft,
            ServerRepr::Countdown { .. } => PacketType::Countdown,
            ServerRepr::Error { .. } => PacketType::ErrorMsg,
        }
    }

    fn payload_len(&self) -> usize {
        match self {
            ServerRepr::ConnectAck { .. } => size::CONNECT_ACK,
            ServerRepr::PlayerJoin { .. } => size::PLAYER_JOIN,
            ServerRepr::PlayerReady { .. } => size::PLAYER_READY,
            ServerRepr::GameStart(game_start) => game_start.payload_len(),
            ServerRepr::PlayerLeft { .. } => size::PLAYER_LEFT,
            ServerRepr::Countdown { .. } => size::COUNTDOWN,
            ServerRepr::Error { message, .. } => 1 + error_text(message).len() + 1,
        }
    }

    /// Length of the whole frame, header included.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len()
    }

    /// Writes the whole frame at the start of `buf` and returns its length. Never allocates.
    ///
    /// Panics if `buf` is shorter than [`ServerRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let payload_len = self.payload_len();
        let payload = emit_header(buf, self.packet_type(), payload_len);
        match *self {
            ServerRepr::ConnectAck { hash, number } => {
                payload[field::CONNECT_ACK_HASH].copy_from_slice(&hash.to_le_bytes());
                payload[field::CONNECT_ACK_NUMBER] = number;
            }
            ServerRepr::PlayerJoin {
                number,
                hash,
                name,
                ready,
            } => {
                payload[field::PLAYER_JOIN_NUMBER] = number;
                payload[field::PLAYER_JOIN_HASH].copy_from_slice(&hash.to_le_bytes());
                payload[field::PLAYER_JOIN_NAME].copy_from_slice(name);
                payload[field::PLAYER_JOIN_READY] = u8::from(ready);
            }
            ServerRepr::PlayerReady { number, ready } => {
                payload[field::PLAYER_READY_NUMBER] = number;
                payload[field::PLAYER_READY_READY] = u8::from(ready);
            }
            ServerRepr::GameStart(ref game_start) => game_start.emit(payload),
            ServerRepr::PlayerLeft { number } => payload[field::PLAYER_LEFT_NUMBER] = number,
            ServerRepr::Countdown { remaining } => {
                payload[field::COUNTDOWN_REMAINING].copy_from_slice(&remaining.to_le_bytes());
            }
            ServerRepr::Error { code, message } => {
                let text = error_text(message);
                payload[field::ERROR_CODE] = u8::from(code);
                let end = field::ERROR_TEXT + text.len();
                payload[field::ERROR_TEXT..end].copy_from_slice(text.as_bytes());
                payload[end] = 0;
            }
        }
        HEADER_LEN + payload_len
    }
}

/// ERROR_MSG: code only (the RFC's 4-byte minimum frame), or code, NUL-free UTF-8 text and a
/// final NUL, within the 256-byte frame limit.
fn parse_error_msg(payload: &[u8]) -> Result<ServerRepr<'_>, Error> {
    let Some((&code, rest)) = payload.split_first() else {
        return Err(Error::BadPayloadSize);
    };
    if HEADER_LEN + payload.len() > MAX_ERROR_FRAME {
        return Err(Error::BadPayloadSize);
    }
    let message = match rest.split_last() {
        None => "",
        Some((0, text)) if !text.contains(&0) => {
            core::str::from_utf8(text).map_err(|_| Error::BadValue)?
        }
        Some(_) => return Err(Error::BadValue),
    };
    Ok(ServerRepr::Error {
        code: ErrorCode::from(code),
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::{
        name_field, next_frame_max, ClientRepr, Next, MAX_ERROR_TEXT, MAX_SERVER_PAYLOAD,
    };
    use super::*;
    use quickcheck::quickcheck;

    #[test]
    fn deconstruct() {
        let f = checked(&GAME_START_BYTES);
        let Ok(ServerRepr::GameStart(game_start)) = ServerRepr::parse(&f) else {
            panic!("GAME_START golden must parse");
        };
        assert_eq!(game_start.server_ip, Ipv4Addr::new(192, 168, 1, 10));
        assert_eq!(game_start.udp_port, 5000);
        assert_eq!(game_start.player_count(), 2);
        let slots: Vec<Slot> = game_start.slots().collect();
        assert_eq!(slots, golden_slots());
        assert_eq!(game_start.slots().len(), 2);
    }

    #[test]
    fn construct() {
        check_construct(&server_goldens(&name_field("Bob"), &golden_slots()));
    }

    #[test]
    fn parse() {
        check_parse::<ServerRepr, ClientRepr>(&server_goldens(&name_field("Bob"), &golden_slots()));
    }

    #[test]
    fn emit() {
        check_emit(&server_goldens(&name_field("Bob"), &golden_slots()));
    }

    #[test]
    fn every_error_variant() {
        // Truncated: the view does not hold the declared payload.
        assert_eq!(
            ServerRepr::parse(&Frame::new_unchecked(&[0x14, 0x02, 0x00, 0x01][..])),
            Err(Error::Truncated)
        );
        // UnknownType.
        let unknown = [0x20, 0x00, 0x00];
        assert_eq!(
            ServerRepr::parse(&checked(&unknown)),
            Err(Error::UnknownType)
        );
        // WrongDirection: a server sending START_REQ.
        assert_eq!(
            ServerRepr::parse(&checked(&START_REQ_BYTES)),
            Err(Error::WrongDirection)
        );
        // BadPayloadSize: every fixed-size server type with one byte too few and one too many.
        check_bad_payload_sizes(
            &[(0x11, 9), (0x12, 42), (0x14, 2), (0x18, 1), (0x19, 4)],
            |f| ServerRepr::parse(f).map(|_| ()),
        );
        // GAME_START: count disagrees with length, and shorter than its fixed part.
        let mut game_start = GAME_START_BYTES.to_vec();
        game_start[21] = 3;
        assert_eq!(
            ServerRepr::parse(&checked(&game_start)),
            Err(Error::BadPayloadSize)
        );
        assert_eq!(
            ServerRepr::parse(&checked(&[0x16, 0x02, 0x00, 0x31, 0x00])),
            Err(Error::BadPayloadSize)
        );
        // ERROR_MSG: empty payload, and a frame over 256 bytes.
        assert_eq!(
            ServerRepr::parse(&checked(&[0x1F, 0x00, 0x00])),
            Err(Error::BadPayloadSize)
        );
        let mut long_error = vec![0x1F, 254, 0x00, 0xFF];
        long_error.resize(HEADER_LEN + 253, b'x');
        long_error.push(0);
        assert_eq!(
            ServerRepr::parse(&checked(&long_error)),
            Err(Error::BadPayloadSize)
        );
        // BadValue: ready flags other than 0/1.
        let mut join = PLAYER_JOIN_BYTES;
        join[44] = 0xFF;
        assert_eq!(ServerRepr::parse(&checked(&join)), Err(Error::BadValue));
        assert_eq!(
            ServerRepr::parse(&checked(&[0x14, 0x02, 0x00, 0x01, 0x02])),
            Err(Error::BadValue)
        );
        // BadValue: IP text without NUL, or not an address.
        let mut no_nul = GAME_START_BYTES;
        no_nul[3..19].fill(b'1');
        assert_eq!(ServerRepr::parse(&checked(&no_nul)), Err(Error::BadValue));
        let mut not_ip = GAME_START_BYTES;
        not_ip[3..8].copy_from_slice(b"host\0");
        assert_eq!(ServerRepr::parse(&checked(&not_ip)), Err(Error::BadValue));
        // BadValue: error text not NUL-terminated, with an inner NUL, or not UTF-8.
        for payload in [
            &[0x01, b'a'][..],
            &[0x01, b'a', 0, b'b', 0],
            &[0x01, 0xC3, 0],
        ] {
            let mut bytes = vec![0x1F, payload.len() as u8, 0];
            bytes.extend_from_slice(payload);
            assert_eq!(ServerRepr::parse(&checked(&bytes)), Err(Error::BadValue));
        }
    }

    #[test]
    fn error_message_truncation() {
        let long = "é".repeat(200); // 400 bytes, 2-byte chars
        let repr = ServerRepr::Error {
            code: ErrorCode::Generic,
            message: &long,
        };
        assert_eq!(repr.buffer_len(), MAX_ERROR_FRAME - 1); // 250 text bytes: 251 splits a char
        let mut buf = [0xa5u8; 300];
        let len = repr.emit(&mut buf);
        let Next::Frame { frame, .. } = next_frame_max(&buf[..len], MAX_SERVER_PAYLOAD) else {
            panic!("emitted frame is complete");
        };
        let Ok(ServerRepr::Error { code, message }) = ServerRepr::parse(&frame) else {
            panic!("emitted error parses");
        };
        assert_eq!(code, ErrorCode::Generic);
        assert_eq!(message, "é".repeat(125));

        let ascii = "y".repeat(300);
        assert_eq!(error_text(&ascii).len(), MAX_ERROR_TEXT);
        let repr = ServerRepr::Error {
            code: ErrorCode::Generic,
            message: &ascii,
        };
        assert_eq!(repr.buffer_len(), MAX_ERROR_FRAME);
        assert_eq!(error_text("before\0after"), "before");
        // The RFC's 4-byte minimum: a code without text.
        assert_eq!(
            ServerRepr::parse(&checked(&[0x1F, 0x01, 0x00, 0x05])),
            Ok(ServerRepr::Error {
                code: ErrorCode::NotAllReady,
                message: ""
            })
        );
    }

    #[test]
    fn game_start_limits() {
        let slot = (alice(), (0.0, 0.0));
        let many = vec![slot; 256];
        let ip = Ipv4Addr::new(255, 255, 255, 255);
        assert!(GameStart::new(ip, 1, &many).is_none());
        let game_start = GameStart::new(ip, 1, &many[..255]).expect("255 fit");
        let repr = ServerRepr::GameStart(game_start);
        assert_eq!(repr.buffer_len(), HEADER_LEN + MAX_SERVER_PAYLOAD);
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf);
        assert_eq!(&buf[3..19], b"255.255.255.255\0");
        let Next::Frame { frame, .. } = next_frame_max(&buf, MAX_SERVER_PAYLOAD) else {
            panic!("largest GAME_START fits the client limit");
        };
        assert_eq!(ServerRepr::parse(&frame), Ok(repr));
        let empty = GameStart::new(Ipv4Addr::new(0, 0, 0, 0), 0, &[]).expect("zero players");
        let mut buf = [0xa5u8; 22];
        assert_eq!(ServerRepr::GameStart(empty).emit(&mut buf), 22);
        assert_eq!(&buf[3..11], b"0.0.0.0\0");
    }

    quickcheck! {
        fn server_round_trip(msg: ServerMsg) -> bool {
            let repr = msg.repr();
            let bytes = emit_server(&repr);
            let Next::Frame { frame, consumed } = next_frame_max(&bytes, MAX_SERVER_PAYLOAD)
            else {
                return false;
            };
            let Ok(parsed) = ServerRepr::parse(&frame) else {
                return false;
            };
            // Re-emitting compares floats by bit pattern (== alone would equate 0.0 and -0.0).
            consumed == bytes.len() && parsed == repr && emit_server(&parsed) == bytes
        }

    }
}
