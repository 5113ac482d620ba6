//! lobbyd's game-instance relay protocol: what clients and a room's instance socket say to
//! each other after the UDP lobby handed out the port. Our own design (the seed leaves the
//! game protocol out of scope), on the same framing as the lobby ([`super::frame`]); the full
//! contract and the room lifecycle are in `docs/protocols/instance.md`.
//!
//! ```text
//! code  name         direction         payload
//! 0x01  HELLO        client -> server  empty, or token (8 bytes, u64 little-endian)
//! 0x02  WELCOME      server -> client  slot u8, playerCount u8, maxPlayers u8, state u8
//! 0x03  REJECT       server -> client  reason u8 (1 full, 2 not joinable, 3 unknown token)
//! 0x04  DATA         both ways         slot u8, then 0..=1400 opaque bytes
//! 0x05  LEAVE        client -> server  empty
//! 0x06  PEER_JOINED  server -> client  slot u8
//! 0x07  PEER_LEFT    server -> client  slot u8
//! 0x08  START        client -> server  empty
//! 0x09  COUNTDOWN    server -> client  seconds left u8
//! 0x0A  STARTED      server -> client  empty
//! 0x0B  PING         client -> server  empty
//! 0x0C  PONG         server -> client  empty
//! ```
//!
//! Slots are 1-based, like the TCP lobby's player numbers. In a client's DATA the slot byte is
//! the target (a member's slot, or [`BROADCAST`] for everyone else); in the server's DATA it is
//! the sender. [`rewrite_data_for_delivery`] turns the one into the other in place so the
//! relay never copies the opaque bytes.
//!
//! Sequence ids: WELCOME/REJECT echo the HELLO's, PONG echoes the PING's, relayed DATA keeps
//! the sender's, and PEER_JOINED/PEER_LEFT/COUNTDOWN/STARTED carry a per-room counter.
//!
//! Parsers are total and borrow; emitters write into the caller's buffer and never allocate.
//! Nothing here knows who is a member of which room.

use super::frame::{emit_frame, open, Frame, PacketType, MIN_LEN};
use super::udp_lobby::RoomState;

pub use super::frame::Error;

mod field {
    use crate::Field;

    /// HELLO's optional token.
    pub const TOKEN: Field = 0..8;

    /// WELCOME.
    pub const WELCOME_SLOT: usize = 0;
    pub const WELCOME_PLAYER_COUNT: usize = 1;
    pub const WELCOME_MAX_PLAYERS: usize = 2;
    pub const WELCOME_STATE: usize = 3;

    /// DATA: the slot byte, then the opaque part to the end of the payload.
    pub const DATA_SLOT: usize = 0;
    pub const DATA_OPAQUE: usize = 1;

    /// REJECT, PEER_JOINED, PEER_LEFT, COUNTDOWN: a single byte.
    pub const BYTE: usize = 0;
}

/// Largest opaque part of a DATA message. With the slot byte and the framing a DATA datagram is
/// at most 1413 bytes, under the 1472 bytes that cross Ethernet unfragmented.
pub const MAX_DATA: usize = 1400;
/// Length of HELLO's token.
pub const TOKEN_LEN: usize = 8;
/// Length of WELCOME's payload.
pub const WELCOME_PAYLOAD_LEN: usize = 4;
/// DATA target meaning "every other member of the room".
pub const BROADCAST: u8 = 0xFF;
/// Length of the longest datagram of this protocol, a full DATA.
pub const MAX_DATAGRAM_LEN: usize = MIN_LEN + 1 + MAX_DATA;

/// An instance message type, as carried in the header's second byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// 0x01, client -> server: admit me.
    Hello,
    /// 0x02, server -> client: admitted.
    Welcome,
    /// 0x03, server -> client: not admitted.
    Reject,
    /// 0x04, both ways: relayed game data.
    Data,
    /// 0x05, client -> server: I am leaving.
    Leave,
    /// 0x06, server -> client: a member arrived.
    PeerJoined,
    /// 0x07, server -> client: a member left.
    PeerLeft,
    /// 0x08, client -> server: the owner starts the countdown.
    Start,
    /// 0x09, server -> client: seconds until the game starts.
    Countdown,
    /// 0x0A, server -> client: the game has started.
    Started,
    /// 0x0B, client -> server: keep-alive.
    Ping,
    /// 0x0C, server -> client: keep-alive answer.
    Pong,
    /// Any other code.
    Unknown(u8),
}

impl From<u8> for MessageType {
    fn from(value: u8) -> Self {
        match value {
            0x01 => MessageType::Hello,
            0x02 => MessageType::Welcome,
            0x03 => MessageType::Reject,
            0x04 => MessageType::Data,
            0x05 => MessageType::Leave,
            0x06 => MessageType::PeerJoined,
            0x07 => MessageType::PeerLeft,
            0x08 => MessageType::Start,
            0x09 => MessageType::Countdown,
            0x0a => MessageType::Started,
            0x0b => MessageType::Ping,
            0x0c => MessageType::Pong,
            other => MessageType::Unknown(other),
        }
    }
}

impl From<MessageType> for u8 {
    fn from(value: MessageType) -> Self {
        match value {
            MessageType::Hello => 0x01,
            MessageType::Welcome => 0x02,
            MessageType::Reject => 0x03,
            MessageType::Data => 0x04,
            MessageType::Leave => 0x05,
            MessageType::PeerJoined => 0x06,
            MessageType::PeerLeft => 0x07,
            MessageType::Start => 0x08,
            MessageType::Countdown => 0x09,
            MessageType::Started => 0x0a,
            MessageType::Ping => 0x0b,
            MessageType::Pong => 0x0c,
            MessageType::Unknown(other) => other,
        }
    }
}

/// Why a HELLO was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// 1: every seat is taken or reserved.
    Full,
    /// 2: the room is past Countdown (Playing or Finished).
    NotJoinable,
    /// 3: the token names no player the TCP lobby knows.
    UnknownToken,
    /// Any other code.
    Unknown(u8),
}

impl From<u8> for RejectReason {
    fn from(value: u8) -> Self {
        match value {
            1 => RejectReason::Full,
            2 => RejectReason::NotJoinable,
            3 => RejectReason::UnknownToken,
            other => RejectReason::Unknown(other),
        }
    }
}

impl From<RejectReason> for u8 {
    fn from(value: RejectReason) -> Self {
        match value {
            RejectReason::Full => 1,
            RejectReason::NotJoinable => 2,
            RejectReason::UnknownToken => 3,
            RejectReason::Unknown(other) => other,
        }
    }
}

/// A message a client sends to an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientMsg<'a> {
    /// HELLO (0x01): ask for a seat, optionally naming the TCP lobby player.
    Hello {
        /// The 8 bytes of the player hash from the TCP lobby's CONNECT_ACK, read as a
        /// little-endian `u64` exactly as that message carries it.
        token: Option<u64>,
    },
    /// DATA (0x04): relay `data` to `target`.
    Data {
        /// A member's slot (1..=254) or [`BROADCAST`].
        target: u8,
        /// The opaque game bytes, borrowed from the datagram.
        data: &'a [u8],
    },
    /// LEAVE (0x05).
    Leave,
    /// START (0x08).
    Start,
    /// PING (0x0B).
    Ping,
}

/// A decoded client datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientRepr<'a> {
    /// The client's sequence id.
    pub seq: u16,
    /// The message.
    pub msg: ClientMsg<'a>,
}

impl<'a> ClientRepr<'a> {
    /// Decodes a datagram received on an instance socket.
    ///
    /// Checks, in order: the frame (`Truncated`, `BadLength`, `BadChecksum`); packetType 0x01
    /// and no compression (`BadPacketType`, `Compressed`); the message type (server-only codes
    /// give `WrongDirection`, others outside the table `UnknownMessage`); the payload size
    /// (`BadPayloadSize`); a DATA target of 0 (`BadSlot`).
    pub fn parse(buf: &'a [u8]) -> Result<ClientRepr<'a>, Error> {
        let frame = open(buf, PacketType::CLIENT_TO_SERVER)?;
        let seq = frame.seq();
        let message_type = MessageType::from(frame.message_type());
        let payload = frame.into_payload();
        let msg = match message_type {
            MessageType::Hello => match payload.len() {
                0 => ClientMsg::Hello { token: None },
                TOKEN_LEN => {
                    let mut token = [0u8; TOKEN_LEN];
                    token.copy_from_slice(&payload[field::TOKEN]);
                    ClientMsg::Hello {
                        token: Some(u64::from_le_bytes(token)),
                    }
                }
                _ => return Err(Error::BadPayloadSize),
            },
            MessageType::Data => {
                let (target, data) = split_data(payload)?;
                if target == 0 {
                    return Err(Error::BadSlot);
                }
                ClientMsg::Data { target, data }
            }
            MessageType::Leave => empty(payload, ClientMsg::Leave)?,
            MessageType::Start => empty(payload, ClientMsg::Start)?,
            MessageType::Ping => empty(payload, ClientMsg::Ping)?,
            MessageType::Welcome
            | MessageType::Reject
            | MessageType::PeerJoined
            | MessageType::PeerLeft
            | MessageType::Countdown
            | MessageType::Started
            | MessageType::Pong => return Err(Error::WrongDirection),
            MessageType::Unknown(_) => return Err(Error::UnknownMessage),
        };
        Ok(ClientRepr { seq, msg })
    }

    fn payload_len(&self) -> usize {
        match self.msg {
            ClientMsg::Hello { token: None } => 0,
            ClientMsg::Hello { token: Some(_) } => TOKEN_LEN,
            ClientMsg::Data { data, .. } => 1 + data.len(),
            ClientMsg::Leave | ClientMsg::Start | ClientMsg::Ping => 0,
        }
    }

    /// Length of the datagram [`ClientRepr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        MIN_LEN + self.payload_len()
    }

    /// Writes the datagram at the start of `buf` and returns its length. A DATA longer than
    /// [`MAX_DATA`] is written as given and will be refused by the server.
    ///
    /// # Panics
    /// If `buf` is shorter than [`ClientRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let message_type = match self.msg {
            ClientMsg::Hello { .. } => MessageType::Hello,
            ClientMsg::Data { .. } => MessageType::Data,
            ClientMsg::Leave => MessageType::Leave,
            ClientMsg::Start => MessageType::Start,
            ClientMsg::Ping => MessageType::Ping,
        };
        emit_frame(
            buf,
            PacketType::CLIENT_TO_SERVER,
            message_type.into(),
            self.seq,
            self.payload_len(),
            |payload| match self.msg {
                ClientMsg::Hello { token: Some(token) } => {
                    payload[field::TOKEN].copy_from_slice(&token.to_le_bytes());
                }
                ClientMsg::Data { target, data } => write_data(payload, target, data),
                ClientMsg::Hello { token: None }
                | ClientMsg::Leave
                | ClientMsg::Start
                | ClientMsg::Ping => {}
            },
        )
    }
}

/// A message an instance sends to a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerMsg<'a> {
    /// WELCOME (0x02): the HELLO was accepted.
    Welcome {
        /// The client's 1-based slot.
        slot: u8,
        /// Members now in the room, the client included.
        player_count: u8,
        /// Seats in the room.
        max_players: u8,
        /// The room's state.
        state: RoomState,
    },
    /// REJECT (0x03): the HELLO was refused.
    Reject(RejectReason),
    /// DATA (0x04): game bytes relayed from another member.
    Data {
        /// The sender's slot.
        sender: u8,
        /// The opaque game bytes, borrowed.
        data: &'a [u8],
    },
    /// PEER_JOINED (0x06): the member in this slot arrived.
    PeerJoined(u8),
    /// PEER_LEFT (0x07): the member in this slot left or timed out.
    PeerLeft(u8),
    /// COUNTDOWN (0x09): whole seconds until STARTED.
    Countdown(u8),
    /// STARTED (0x0A): the room is Playing.
    Started,
    /// PONG (0x0C): answer to PING.
    Pong,
}

/// A decoded or to-be-emitted server datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServerRepr<'a> {
    /// Sequence id, chosen by the rules in the module doc.
    pub seq: u16,
    /// The message.
    pub msg: ServerMsg<'a>,
}

impl<'a> ServerRepr<'a> {
    /// Decodes a datagram sent by an instance (for clients, tests and the load generator).
    ///
    /// Same order as [`ClientRepr::parse`] with packetType 0x02; client-only codes give
    /// `WrongDirection`.
    pub fn parse(buf: &'a [u8]) -> Result<ServerRepr<'a>, Error> {
        let frame = open(buf, PacketType::SERVER_TO_CLIENT)?;
        let seq = frame.seq();
        let message_type = MessageType::from(frame.message_type());
        let payload = frame.into_payload();
        let msg = match message_type {
            MessageType::Welcome => {
                if payload.len() != WELCOME_PAYLOAD_LEN {
                    return Err(Error::BadPayloadSize);
                }
                ServerMsg::Welcome {
                    slot: payload[field::WELCOME_SLOT],
                    player_count: payload[field::WELCOME_PLAYER_COUNT],
                    max_players: payload[field::WELCOME_MAX_PLAYERS],
                    state: RoomState::from(payload[field::WELCOME_STATE]),
                }
            }
            MessageType::Reject => ServerMsg::Reject(RejectReason::from(one_byte(payload)?)),
            MessageType::Data => {
                let (sender, data) = split_data(payload)?;
                ServerMsg::Data { sender, data }
            }
            MessageType::PeerJoined => ServerMsg::PeerJoined(one_byte(payload)?),
            MessageType::PeerLeft => ServerMsg::PeerLeft(one_byte(payload)?),
            MessageType::Countdown => ServerMsg::Countdown(one_byte(payload)?),
            MessageType::Started => empty(payload, ServerMsg::Started)?,
            MessageType::Pong => empty(payload, ServerMsg::Pong)?,
            MessageType::Hello | MessageType::Leave | MessageType::Start | MessageType::Ping => {
                return Err(Error::WrongDirection)
            }
            MessageType::Unknown(_) => return Err(Error::UnknownMessage),
        };
        Ok(ServerRepr { seq, msg })
    }

    fn payload_len(&self) -> usize {
        match self.msg {
            ServerMsg::Welcome { .. } => WELCOME_PAYLOAD_LEN,
            ServerMsg::Data { data, .. } => 1 + data.len(),
            ServerMsg::Reject(_)
            | ServerMsg::PeerJoined(_)
            | ServerMsg::PeerLeft(_)
            | ServerMsg::Countdown(_) => 1,
            ServerMsg::Started | ServerMsg::Pong => 0,
        }
    }

    /// Length of the datagram [`ServerRepr::emit`] writes.
    pub fn buffer_len(&self) -> usize {
        MIN_LEN + self.payload_len()
    }

    /// Writes the datagram at the start of `buf` and returns its length, without allocating.
    /// Relayed DATA normally goes through [`rewrite_data_for_delivery`] instead.
    ///
    /// # Panics
    /// If `buf` is shorter than [`ServerRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let message_type = match self.msg {
            ServerMsg::Welcome { .. } => MessageType::Welcome,
            ServerMsg::Reject(_) => MessageType::Reject,
            ServerMsg::Data { .. } => MessageType::Data,
            ServerMsg::PeerJoined(_) => MessageType::PeerJoined,
            ServerMsg::PeerLeft(_) => MessageType::PeerLeft,
            ServerMsg::Countdown(_) => MessageType::Countdown,
            ServerMsg::Started => MessageType::Started,
            ServerMsg::Pong => MessageType::Pong,
        };
        emit_frame(
            buf,
            PacketType::SERVER_TO_CLIENT,
            message_type.into(),
            self.seq,
            self.payload_len(),
            |payload| match self.msg {
                ServerMsg::Welcome {
                    slot,
                    player_count,
                    max_players,
                    state,
                } => {
                    payload[field::WELCOME_SLOT] = slot;
                    payload[field::WELCOME_PLAYER_COUNT] = player_count;
                    payload[field::WELCOME_MAX_PLAYERS] = max_players;
                    payload[field::WELCOME_STATE] = state.into();
                }
                ServerMsg::Reject(reason) => payload[field::BYTE] = reason.into(),
                ServerMsg::Data { sender, data } => write_data(payload, sender, data),
                ServerMsg::PeerJoined(slot) | ServerMsg::PeerLeft(slot) => {
                    payload[field::BYTE] = slot;
                }
                ServerMsg::Countdown(seconds) => payload[field::BYTE] = seconds,
                ServerMsg::Started | ServerMsg::Pong => {}
            },
        )
    }
}

/// Turns a client DATA datagram, in place, into the DATA datagram the instance delivers:
/// packetType becomes 0x02, the slot byte becomes `sender`, `originalSize` becomes
/// `payloadSize` (a client may send 0 there), and the CRC-32 is recomputed. The length,
/// sequence id and opaque bytes are unchanged, so the relay forwards the receive buffer
/// without copying.
///
/// `datagram` must be exactly the bytes [`ClientRepr::parse`] accepted as DATA. A buffer that
/// is not even a well-formed frame with a slot byte is left untouched rather than indexed out
/// of bounds, so a caller's mistake cannot become a panic.
pub fn rewrite_data_for_delivery(datagram: &mut [u8], sender: u8) {
    let mut frame = Frame::new_unchecked(datagram);
    if frame.check_len().is_err() || frame.payload_size() == 0 {
        return;
    }
    frame.set_packet_type(PacketType::SERVER_TO_CLIENT);
    let size = frame.payload_size();
    frame.set_original_size(size);
    frame.payload_mut()[field::DATA_SLOT] = sender;
    frame.fill_checksum();
}

/// Splits a DATA payload into its slot byte and opaque part, enforcing 1..=1 + MAX_DATA bytes.
fn split_data(payload: &[u8]) -> Result<(u8, &[u8]), Error> {
    match payload.split_first() {
        Some((&slot, data)) if data.len() <= MAX_DATA => Ok((slot, data)),
        _ => Err(Error::BadPayloadSize),
    }
}

fn write_data(payload: &mut [u8], slot: u8, data: &[u8]) {
    payload[field::DATA_SLOT] = slot;
    payload[field::DATA_OPAQUE..].copy_from_slice(data);
}

fn one_byte(payload: &[u8]) -> Result<u8, Error> {
    match payload {
        [byte] => Ok(*byte),
        _ => Err(Error::BadPayloadSize),
    }
}

fn empty<M>(payload: &[u8], msg: M) -> Result<M, Error> {
    if payload.is_empty() {
        Ok(msg)
    } else {
        Err(Error::BadPayloadSize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{quickcheck, Arbitrary, Gen, TestResult};

    // Golden datagrams, laid out by hand from the message table in the module doc (header
    // big-endian: packetType, messageType, seq, payloadSize, originalSize; then the payload).
    // Each CRC-32 was computed independently with
    // `python3 -c "import zlib; print(hex(zlib.crc32(bytes.fromhex('<header+payload>'))))"`.

    // 01 01 0000 0000 0000 | crc: HELLO without token, seq 0.
    static HELLO: [u8; 12] = [
        0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0xff, 0xd4, 0x43,
    ];
    // 01 01 0001 0008 0008 | efcdab8967452301 | crc: HELLO with token 0x0123456789abcdef
    // (little-endian on the wire), seq 1.
    static HELLO_TOKEN: [u8; 20] = [
        0x01, 0x01, 0x00, 0x01, 0x00, 0x08, 0x00, 0x08, 0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23,
        0x01, 0x06, 0xbc, 0xa6, 0xda,
    ];
    // 02 02 0001 0004 0004 | 02 03 04 00 | crc: WELCOME slot 2, 3 of 4 players, Waiting, seq 1.
    static WELCOME: [u8; 16] = [
        0x02, 0x02, 0x00, 0x01, 0x00, 0x04, 0x00, 0x04, 0x02, 0x03, 0x04, 0x00, 0x15, 0x15, 0xc4,
        0x77,
    ];
    // 02 03 0001 0001 0001 | 01 | crc: REJECT full, seq 1.
    static REJECT: [u8; 13] = [
        0x02, 0x03, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0x01, 0x5b, 0x8c, 0x8e, 0xdc,
    ];
    // 01 04 0010 0003 0003 | ff 6869 | crc: client DATA "hi" to everyone, seq 0x10.
    static DATA_CLIENT: [u8; 15] = [
        0x01, 0x04, 0x00, 0x10, 0x00, 0x03, 0x00, 0x03, 0xff, 0x68, 0x69, 0x6c, 0xaa, 0x2e, 0x83,
    ];
    // 01 04 0010 0003 0000 | ff 6869 | crc: the same with originalSize 0.
    static DATA_CLIENT_ORIGINAL_0: [u8; 15] = [
        0x01, 0x04, 0x00, 0x10, 0x00, 0x03, 0x00, 0x00, 0xff, 0x68, 0x69, 0x7e, 0x1f, 0x81, 0x6d,
    ];
    // 02 04 0010 0003 0003 | 02 6869 | crc: that DATA delivered from slot 2, seq kept.
    static DATA_SERVER: [u8; 15] = [
        0x02, 0x04, 0x00, 0x10, 0x00, 0x03, 0x00, 0x03, 0x02, 0x68, 0x69, 0x48, 0x54, 0xa8, 0x01,
    ];
    // 01 04 0011 0001 0001 | 03 | crc: client DATA with an empty opaque part to slot 3.
    static DATA_CLIENT_EMPTY: [u8; 13] = [
        0x01, 0x04, 0x00, 0x11, 0x00, 0x01, 0x00, 0x01, 0x03, 0x85, 0x1c, 0xd8, 0xb7,
    ];
    // 01 05 0005 0000 0000 | crc: LEAVE, seq 5.
    static LEAVE: [u8; 12] = [
        0x01, 0x05, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x33, 0x50, 0x7f, 0x20,
    ];
    // 02 06 0100 0001 0001 | 03 | crc: PEER_JOINED slot 3, room counter 0x100.
    static PEER_JOINED: [u8; 13] = [
        0x02, 0x06, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x03, 0x90, 0x49, 0x39, 0x85,
    ];
    // 02 07 0101 0001 0001 | 03 | crc: PEER_LEFT slot 3, room counter 0x101.
    static PEER_LEFT: [u8; 13] = [
        0x02, 0x07, 0x01, 0x01, 0x00, 0x01, 0x00, 0x01, 0x03, 0x97, 0xbf, 0xea, 0xbe,
    ];
    // 01 08 0006 0000 0000 | crc: START, seq 6.
    static START: [u8; 12] = [
        0x01, 0x08, 0x00, 0x06, 0x00, 0x00, 0x00, 0x00, 0x15, 0x27, 0x64, 0x30,
    ];
    // 02 09 0102 0001 0001 | 03 | crc: COUNTDOWN 3 s, room counter 0x102.
    static COUNTDOWN: [u8; 13] = [
        0x02, 0x09, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0x03, 0x04, 0xa1, 0x8a, 0x22,
    ];
    // 02 0a 0105 0000 0000 | crc: STARTED, room counter 0x105.
    static STARTED: [u8; 12] = [
        0x02, 0x0a, 0x01, 0x05, 0x00, 0x00, 0x00, 0x00, 0x80, 0xcb, 0xdb, 0x8f,
    ];
    // 01 0b 0007 0000 0000 | crc: PING, seq 7.
    static PING: [u8; 12] = [
        0x01, 0x0b, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x19, 0xaf, 0x57, 0x1d,
    ];
    // 02 0c 0007 0000 0000 | crc: PONG echoing seq 7.
    static PONG: [u8; 12] = [
        0x02, 0x0c, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x52, 0x87, 0x6e, 0x70,
    ];

    fn client_cases() -> Vec<(&'static [u8], ClientRepr<'static>)> {
        vec![
            (
                &HELLO[..],
                ClientRepr {
                    seq: 0,
                    msg: ClientMsg::Hello { token: None },
                },
            ),
            (
                &HELLO_TOKEN[..],
                ClientRepr {
                    seq: 1,
                    msg: ClientMsg::Hello {
                        token: Some(0x0123_4567_89ab_cdef),
                    },
                },
            ),
            (
                &DATA_CLIENT[..],
                ClientRepr {
                    seq: 0x10,
                    msg: ClientMsg::Data {
                        target: BROADCAST,
                        data: b"hi",
                    },
                },
            ),
            (
                &DATA_CLIENT_EMPTY[..],
                ClientRepr {
                    seq: 0x11,
                    msg: ClientMsg::Data {
                        target: 3,
                        data: b"",
                    },
                },
            ),
            (
                &LEAVE[..],
                ClientRepr {
                    seq: 5,
                    msg: ClientMsg::Leave,
                },
            ),
            (
                &START[..],
                ClientRepr {
                    seq: 6,
                    msg: ClientMsg::Start,
                },
            ),
            (
                &PING[..],
                ClientRepr {
                    seq: 7,
                    msg: ClientMsg::Ping,
                },
            ),
        ]
    }

    fn server_cases() -> Vec<(&'static [u8], ServerRepr<'static>)> {
        vec![
            (
                &WELCOME[..],
                ServerRepr {
                    seq: 1,
                    msg: ServerMsg::Welcome {
                        slot: 2,
                        player_count: 3,
                        max_players: 4,
                        state: RoomState::Waiting,
                    },
                },
            ),
            (
                &REJECT[..],
                ServerRepr {
                    seq: 1,
                    msg: ServerMsg::Reject(RejectReason::Full),
                },
            ),
            (
                &DATA_SERVER[..],
                ServerRepr {
                    seq: 0x10,
                    msg: ServerMsg::Data {
                        sender: 2,
                        data: b"hi",
                    },
                },
            ),
            (
                &PEER_JOINED[..],
                ServerRepr {
                    seq: 0x100,
                    msg: ServerMsg::PeerJoined(3),
                },
            ),
            (
                &PEER_LEFT[..],
                ServerRepr {
                    seq: 0x101,
                    msg: ServerMsg::PeerLeft(3),
                },
            ),
            (
                &COUNTDOWN[..],
                ServerRepr {
                    seq: 0x102,
                    msg: ServerMsg::Countdown(3),
                },
            ),
            (
                &STARTED[..],
                ServerRepr {
                    seq: 0x105,
                    msg: ServerMsg::Started,
                },
            ),
            (
                &PONG[..],
                ServerRepr {
                    seq: 7,
                    msg: ServerMsg::Pong,
                },
            ),
        ]
    }

    /// Header + payload with a correct CRC appended, for the error cases.
    fn framed(header_and_payload: &[u8]) -> Vec<u8> {
        let mut bytes = header_and_payload.to_vec();
        bytes.extend_from_slice(&crc32fast::hash(header_and_payload).to_be_bytes());
        bytes
    }

    /// A frame with a valid CRC around `payload`.
    fn frame_of(packet_type: u8, code: u8, payload: &[u8]) -> Vec<u8> {
        let size = (payload.len() as u16).to_be_bytes();
        let mut hp = vec![packet_type, code, 0, 9, size[0], size[1], size[0], size[1]];
        hp.extend_from_slice(payload);
        framed(&hp)
    }

    #[test]
    fn deconstruct() {
        let frame = Frame::new_checked(&HELLO_TOKEN[..]).unwrap();
        assert_eq!(frame.packet_type(), PacketType::CLIENT_TO_SERVER);
        assert_eq!(MessageType::from(frame.message_type()), MessageType::Hello);
        assert_eq!(frame.seq(), 1);
        assert_eq!(frame.payload(), &0x0123_4567_89ab_cdefu64.to_le_bytes()[..]);

        let frame = Frame::new_checked(&DATA_SERVER[..]).unwrap();
        assert_eq!(frame.packet_type(), PacketType::SERVER_TO_CLIENT);
        assert_eq!(MessageType::from(frame.message_type()), MessageType::Data);
        assert_eq!(frame.payload(), &[0x02, b'h', b'i']);

        let frame = Frame::new_checked(&WELCOME[..]).unwrap();
        assert_eq!(
            MessageType::from(frame.message_type()),
            MessageType::Welcome
        );
        assert_eq!(frame.payload(), &[2, 3, 4, 0]);
    }

    #[test]
    fn parse() {
        for (bytes, repr) in client_cases() {
            assert_eq!(ClientRepr::parse(bytes), Ok(repr), "{bytes:02x?}");
        }
        for (bytes, repr) in server_cases() {
            assert_eq!(ServerRepr::parse(bytes), Ok(repr), "{bytes:02x?}");
        }
        // A client may leave originalSize at 0.
        assert_eq!(
            ClientRepr::parse(&DATA_CLIENT_ORIGINAL_0).map(|r| r.msg),
            Ok(ClientMsg::Data {
                target: BROADCAST,
                data: b"hi"
            })
        );
    }

    #[test]
    fn construct() {
        for (golden, repr) in client_cases() {
            let mut buf = vec![0xa5u8; golden.len()];
            assert_eq!(repr.emit(&mut buf), golden.len());
            assert_eq!(&buf[..], golden, "{repr:?}");
        }
        for (golden, repr) in server_cases() {
            let mut buf = vec![0xa5u8; golden.len()];
            assert_eq!(repr.emit(&mut buf), golden.len());
            assert_eq!(&buf[..], golden, "{repr:?}");
        }
    }

    #[test]
    fn emit() {
        for (golden, repr) in client_cases() {
            assert_eq!(repr.buffer_len(), golden.len());
            let mut buf = [0xa5u8; 64];
            let len = repr.emit(&mut buf);
            assert_eq!(&buf[..len], golden);
            assert!(
                buf[len..].iter().all(|&b| b == 0xa5),
                "wrote past the datagram"
            );
        }
        for (golden, repr) in server_cases() {
            assert_eq!(repr.buffer_len(), golden.len());
            let mut buf = [0xa5u8; 64];
            let len = repr.emit(&mut buf);
            assert_eq!(&buf[..len], golden);
            assert!(
                buf[len..].iter().all(|&b| b == 0xa5),
                "wrote past the datagram"
            );
        }
    }

    #[test]
    fn rewrite_for_delivery() {
        let mut datagram = DATA_CLIENT;
        rewrite_data_for_delivery(&mut datagram, 2);
        assert_eq!(datagram, DATA_SERVER);

        // originalSize 0 from the client is normalised, so the result is the same datagram.
        let mut datagram = DATA_CLIENT_ORIGINAL_0;
        rewrite_data_for_delivery(&mut datagram, 2);
        assert_eq!(datagram, DATA_SERVER);
    }

    #[test]
    fn rewrite_leaves_malformed_untouched() {
        // Empty payload: no slot byte. Then a buffer too short to be a frame at all.
        let mut no_slot = [0x01u8, 0x04, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4];
        rewrite_data_for_delivery(&mut no_slot, 2);
        assert_eq!(no_slot, [0x01u8, 0x04, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]);
        let mut short = [0x01u8, 0x04, 0, 0];
        rewrite_data_for_delivery(&mut short, 2);
        assert_eq!(short, [0x01u8, 0x04, 0, 0]);
    }

    #[test]
    fn data_size_bounds() {
        let max = vec![0x5au8; MAX_DATA];
        let repr = ClientRepr {
            seq: 1,
            msg: ClientMsg::Data {
                target: 1,
                data: &max,
            },
        };
        let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
        let len = repr.emit(&mut buf);
        assert_eq!(len, MAX_DATAGRAM_LEN);
        assert!(len <= super::super::udp_lobby::MAX_UNFRAGMENTED);
        assert_eq!(ClientRepr::parse(&buf[..len]), Ok(repr));
    }

    #[test]
    fn code_conversions_round_trip() {
        for code in 0..=u8::MAX {
            assert_eq!(u8::from(MessageType::from(code)), code);
            assert_eq!(u8::from(RejectReason::from(code)), code);
        }
        assert_eq!(MessageType::from(0x0d), MessageType::Unknown(0x0d));
        assert_eq!(RejectReason::from(0), RejectReason::Unknown(0));
    }

    #[test]
    fn error_truncated() {
        assert_eq!(ClientRepr::parse(&PING[..11]), Err(Error::Truncated));
        assert_eq!(ServerRepr::parse(&[]), Err(Error::Truncated));
    }

    #[test]
    fn error_bad_length() {
        assert_eq!(ClientRepr::parse(&DATA_CLIENT[..14]), Err(Error::BadLength));
    }

    #[test]
    fn error_bad_checksum() {
        let mut bad = DATA_CLIENT;
        bad[9] = b'H';
        assert_eq!(ClientRepr::parse(&bad), Err(Error::BadChecksum));
    }

    #[test]
    fn error_bad_packet_type() {
        assert_eq!(ClientRepr::parse(&DATA_SERVER), Err(Error::BadPacketType));
        assert_eq!(ServerRepr::parse(&DATA_CLIENT), Err(Error::BadPacketType));
        assert_eq!(
            ClientRepr::parse(&frame_of(0x00, 0x0b, &[])),
            Err(Error::BadPacketType)
        );
    }

    #[test]
    fn error_compressed() {
        // DATA with payloadSize 3, originalSize 200.
        let bytes = framed(&[0x01, 0x04, 0, 0, 0, 3, 0, 200, 0xff, b'h', b'i']);
        assert_eq!(ClientRepr::parse(&bytes), Err(Error::Compressed));
    }

    #[test]
    fn error_unknown_message() {
        for code in [0x00, 0x0d, 0x40, 0xff] {
            assert_eq!(
                ClientRepr::parse(&frame_of(0x01, code, &[])),
                Err(Error::UnknownMessage)
            );
            assert_eq!(
                ServerRepr::parse(&frame_of(0x02, code, &[])),
                Err(Error::UnknownMessage)
            );
        }
    }

    #[test]
    fn error_wrong_direction() {
        for code in [0x02, 0x03, 0x06, 0x07, 0x09, 0x0a, 0x0c] {
            assert_eq!(
                ClientRepr::parse(&frame_of(0x01, code, &[])),
                Err(Error::WrongDirection)
            );
        }
        for code in [0x01, 0x05, 0x08, 0x0b] {
            assert_eq!(
                ServerRepr::parse(&frame_of(0x02, code, &[])),
                Err(Error::WrongDirection)
            );
        }
    }

    #[test]
    fn error_bad_payload_size() {
        let too_long = vec![1u8; 2 + MAX_DATA];
        for (code, payload) in [
            (0x01, &[0u8; 7][..]),
            (0x01, &[0u8; 9][..]),
            (0x01, &[0u8; 1][..]),
            (0x04, &[][..]),
            (0x04, &too_long[..]),
            (0x05, &[0][..]),
            (0x08, &[0][..]),
            (0x0b, &[0][..]),
        ] {
            assert_eq!(
                ClientRepr::parse(&frame_of(0x01, code, payload)),
                Err(Error::BadPayloadSize),
                "code {code:#04x}, {} bytes",
                payload.len()
            );
        }
        for (code, payload) in [
            (0x02, &[0u8; 3][..]),
            (0x02, &[0u8; 5][..]),
            (0x03, &[][..]),
            (0x03, &[1, 1][..]),
            (0x04, &[][..]),
            (0x04, &too_long[..]),
            (0x06, &[][..]),
            (0x07, &[1, 2][..]),
            (0x09, &[][..]),
            (0x0a, &[0][..]),
            (0x0c, &[0][..]),
        ] {
            assert_eq!(
                ServerRepr::parse(&frame_of(0x02, code, payload)),
                Err(Error::BadPayloadSize),
                "code {code:#04x}, {} bytes",
                payload.len()
            );
        }
    }

    #[test]
    fn error_bad_slot() {
        assert_eq!(
            ClientRepr::parse(&frame_of(0x01, 0x04, &[0, b'x'])),
            Err(Error::BadSlot)
        );
        // Every other target byte is well-formed; membership is the core's business.
        for target in 1..=u8::MAX {
            assert!(ClientRepr::parse(&frame_of(0x01, 0x04, &[target])).is_ok());
        }
    }

    /// Owned inputs for the borrowed reprs, so quickcheck can generate them.
    #[derive(Debug, Clone)]
    struct Case {
        seq: u16,
        kind: u8,
        byte: u8,
        token: u64,
        data: Vec<u8>,
    }

    impl Arbitrary for Case {
        fn arbitrary(g: &mut Gen) -> Self {
            let mut data = Vec::<u8>::arbitrary(g);
            data.truncate(MAX_DATA);
            Case {
                seq: u16::arbitrary(g),
                kind: u8::arbitrary(g),
                byte: u8::arbitrary(g),
                token: u64::arbitrary(g),
                data,
            }
        }
    }

    impl Case {
        fn client(&self) -> ClientRepr<'_> {
            let msg = match self.kind % 6 {
                0 => ClientMsg::Hello { token: None },
                1 => ClientMsg::Hello {
                    token: Some(self.token),
                },
                2 => ClientMsg::Data {
                    target: self.byte.max(1),
                    data: &self.data,
                },
                3 => ClientMsg::Leave,
                4 => ClientMsg::Start,
                _ => ClientMsg::Ping,
            };
            ClientRepr { seq: self.seq, msg }
        }

        fn server(&self) -> ServerRepr<'_> {
            let bytes = self.token.to_le_bytes();
            let msg = match self.kind % 8 {
                0 => ServerMsg::Welcome {
                    slot: bytes[0],
                    player_count: bytes[1],
                    max_players: bytes[2],
                    state: RoomState::from(bytes[3]),
                },
                1 => ServerMsg::Reject(RejectReason::from(self.byte)),
                2 => ServerMsg::Data {
                    sender: self.byte,
                    data: &self.data,
                },
                3 => ServerMsg::PeerJoined(self.byte),
                4 => ServerMsg::PeerLeft(self.byte),
                5 => ServerMsg::Countdown(self.byte),
                6 => ServerMsg::Started,
                _ => ServerMsg::Pong,
            };
            ServerRepr { seq: self.seq, msg }
        }
    }

    quickcheck! {
        fn client_round_trip(case: Case) -> bool {
            let repr = case.client();
            let mut buf = vec![0xa5u8; repr.buffer_len()];
            repr.emit(&mut buf) == buf.len() && ClientRepr::parse(&buf) == Ok(repr)
        }

        fn server_round_trip(case: Case) -> bool {
            let repr = case.server();
            let mut buf = vec![0xa5u8; repr.buffer_len()];
            repr.emit(&mut buf) == buf.len() && ServerRepr::parse(&buf) == Ok(repr)
        }

        fn rewrite_matches_server_emit(case: Case, sender: u8) -> bool {
            let client = ClientRepr {
                seq: case.seq,
                msg: ClientMsg::Data { target: case.byte.max(1), data: &case.data },
            };
            let mut relayed = vec![0u8; client.buffer_len()];
            client.emit(&mut relayed);
            rewrite_data_for_delivery(&mut relayed, sender);
            let server = ServerRepr {
                seq: case.seq,
                msg: ServerMsg::Data { sender, data: &case.data },
            };
            let mut expected = vec![0u8; server.buffer_len()];
            server.emit(&mut expected);
            relayed == expected && ServerRepr::parse(&relayed) == Ok(server)
        }

        fn arbitrary_bytes_never_panic(bytes: Vec<u8>) -> bool {
            let _ = ClientRepr::parse(&bytes);
            let _ = ServerRepr::parse(&bytes);
            true
        }

        // Random bytes almost never carry a valid CRC; this reaches the checks behind it.
        fn arbitrary_valid_frames_never_panic(
            packet_type: u8,
            code: u8,
            payload: Vec<u8>
        ) -> TestResult {
            if payload.len() > usize::from(u16::MAX) {
                return TestResult::discard();
            }
            let bytes = frame_of(packet_type % 3, code % 14, &payload);
            let client = ClientRepr::parse(&bytes);
            let server = ServerRepr::parse(&bytes);
            TestResult::from_bool(client.is_err() || server.is_err())
        }
    }
}
