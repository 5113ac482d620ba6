//! The seven client-to-server messages of the upstream TCP lobby dialect, as [`ClientRepr`]:
//! the room requests (LIST_ROOMS_REQ, CREATE_ROOM_REQ, JOIN_ROOM_REQ) and the party requests
//! (CONNECT_REQ, READY_REQ, START_REQ, DISCONNECT). Contract:
//! `docs/protocols/tcp-lobby-upstream.md`, "Messages".
//!
//! Parsing borrows the name fields from the frame; emitting writes into the caller's buffer.
//! Neither allocates. What a request means for a room or a party is the R-Type core's business.

use super::{
    check_size, emit_header, field, payload_array, payload_u32, payload_u64, size, Error, Frame,
    PacketType, HEADER_LEN, NAME_LEN,
};

/// A message from client to server. Diagrams show the payload, after the 5-byte header
/// (`length u32 LE`, `type u8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientRepr<'a> {
    /// LIST_ROOMS_REQ (0x01), empty payload: `01 00 00 00 01`.
    ListRoomsReq,
    /// CREATE_ROOM_REQ (0x03), payload 32 bytes: the room name, NUL-padded, checked by the
    /// core.
    ///
    /// ```text
    /// +----------------------------------+
    /// | name[32], NUL-padded             |
    /// +----------------------------------+
    /// ```
    CreateRoomReq {
        /// The name field as sent.
        name: &'a [u8; NAME_LEN],
    },
    /// JOIN_ROOM_REQ (0x05), payload 4 bytes.
    ///
    /// ```text
    /// +----------------+
    /// | room id u32 LE |
    /// +----------------+
    /// ```
    JoinRoomReq {
        /// The room to join.
        room_id: u32,
    },
    /// CONNECT_REQ (0x10), payload 32 bytes: the player name as the RFC's, checked by the core
    /// with [`validate_name`](crate::tcp_lobby::validate_name).
    ///
    /// ```text
    /// +----------------------------------+
    /// | name[32] UTF-8, NUL-padded       |
    /// +----------------------------------+
    /// ```
    ConnectReq {
        /// The name field as sent.
        name: &'a [u8; NAME_LEN],
    },
    /// READY_REQ (0x13), payload 8 bytes: toggles the sender's ready state if `hash` is the
    /// sender's own (the core ignores a foreign one).
    ///
    /// ```text
    /// +----------------+
    /// | hash u64 LE    |
    /// +----------------+
    /// ```
    ReadyReq {
        /// The hash the sender claims.
        hash: u64,
    },
    /// START_REQ (0x15), empty payload.
    StartReq,
    /// DISCONNECT (0x17), payload 8 bytes: the sender's hash (upstream never checks it).
    ///
    /// ```text
    /// +----------------+
    /// | hash u64 LE    |
    /// +----------------+
    /// ```
    Disconnect {
        /// The hash the sender claims.
        hash: u64,
    },
}

impl<'a> ClientRepr<'a> {
    /// Parses a client frame. Server-to-client types give [`Error::WrongDirection`].
    pub fn parse(frame: &Frame<&'a [u8]>) -> Result<ClientRepr<'a>, Error> {
        frame.check_len()?;
        let packet_type = frame.packet_type();
        let payload = frame.into_payload();
        let Some(len) = packet_type.client_len() else {
            return Err(match packet_type {
                PacketType::Unknown(_) => Error::UnknownType,
                _ => Error::WrongDirection,
            });
        };
        check_size(payload, len - 1)?;
        Ok(match packet_type {
            PacketType::ListRoomsReq => ClientRepr::ListRoomsReq,
            PacketType::CreateRoomReq => ClientRepr::CreateRoomReq {
                name: payload_array(payload, field::NAME)?,
            },
            PacketType::JoinRoomReq => ClientRepr::JoinRoomReq {
                room_id: payload_u32(payload, field::ROOM_ID)?,
            },
            PacketType::ConnectReq => ClientRepr::ConnectReq {
                name: payload_array(payload, field::NAME)?,
            },
            PacketType::ReadyReq => ClientRepr::ReadyReq {
                hash: payload_u64(payload, field::HASH)?,
            },
            PacketType::StartReq => ClientRepr::StartReq,
            PacketType::Disconnect => ClientRepr::Disconnect {
                hash: payload_u64(payload, field::HASH)?,
            },
            // `client_len` is Some only for the seven types above.
            _ => return Err(Error::WrongDirection),
        })
    }

    /// The packet type of this message.
    pub const fn packet_type(&self) -> PacketType {
        match self {
            ClientRepr::ListRoomsReq => PacketType::ListRoomsReq,
            ClientRepr::CreateRoomReq { .. } => PacketType::CreateRoomReq,
            ClientRepr::JoinRoomReq { .. } => PacketType::JoinRoomReq,
            ClientRepr::ConnectReq { .. } => PacketType::ConnectReq,
            ClientRepr::ReadyReq { .. } => PacketType::ReadyReq,
            ClientRepr::StartReq => PacketType::StartReq,
            ClientRepr::Disconnect { .. } => PacketType::Disconnect,
        }
    }

    const fn payload_len(&self) -> usize {
        match self {
            ClientRepr::ListRoomsReq => size::LIST_ROOMS_REQ,
            ClientRepr::CreateRoomReq { .. } => size::CREATE_ROOM_REQ,
            ClientRepr::JoinRoomReq { .. } => size::JOIN_ROOM_REQ,
            ClientRepr::ConnectReq { .. } => size::CONNECT_REQ,
            ClientRepr::ReadyReq { .. } => size::READY_REQ,
            ClientRepr::StartReq => size::START_REQ,
            ClientRepr::Disconnect { .. } => size::DISCONNECT,
        }
    }

    /// Length of the whole frame, header included.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len()
    }

    /// Writes the whole frame at the start of `buf` and returns its length.
    ///
    /// Panics if `buf` is shorter than [`ClientRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let payload = emit_header(buf, self.packet_type(), self.payload_len());
        match *self {
            ClientRepr::ListRoomsReq | ClientRepr::StartReq => {}
            ClientRepr::CreateRoomReq { name } | ClientRepr::ConnectReq { name } => {
                payload[field::NAME].copy_from_slice(name);
            }
            ClientRepr::JoinRoomReq { room_id } => {
                payload[field::ROOM_ID].copy_from_slice(&room_id.to_le_bytes());
            }
            ClientRepr::ReadyReq { hash } | ClientRepr::Disconnect { hash } => {
                payload[field::HASH].copy_from_slice(&hash.to_le_bytes());
            }
        }
        self.buffer_len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::{next_frame, Next, ServerRepr};
    use super::*;
    use quickcheck::quickcheck;

    #[test]
    fn construct() {
        check_construct(&client_goldens(&room_name(), &alice_name()));
    }

    #[test]
    fn parse() {
        check_parse::<ClientRepr, ServerRepr>(&client_goldens(&room_name(), &alice_name()));
    }

    #[test]
    fn emit() {
        check_emit(&client_goldens(&room_name(), &alice_name()));
    }

    #[test]
    fn deconstruct() {
        let Ok(ClientRepr::JoinRoomReq { room_id }) =
            ClientRepr::parse(&checked(&JOIN_ROOM_REQ_BYTES))
        else {
            panic!("JOIN_ROOM_REQ golden must parse");
        };
        assert_eq!(room_id, 1);
        let Ok(ClientRepr::CreateRoomReq { name }) =
            ClientRepr::parse(&checked(&CREATE_ROOM_REQ_BYTES))
        else {
            panic!("CREATE_ROOM_REQ golden must parse");
        };
        assert_eq!(&name[..6], b"probe\0");
    }

    #[test]
    fn every_error_variant() {
        // Truncated: the view does not hold the declared body.
        assert_eq!(
            ClientRepr::parse(&Frame::new_unchecked(&[9, 0, 0, 0, 0x13, 1][..])),
            Err(Error::Truncated)
        );
        // Empty: length 0.
        assert_eq!(
            ClientRepr::parse(&Frame::new_unchecked(&[0, 0, 0, 0][..])),
            Err(Error::Empty)
        );
        // UnknownType.
        assert_eq!(
            ClientRepr::parse(&checked(&[1, 0, 0, 0, 0x20])),
            Err(Error::UnknownType)
        );
        // WrongDirection: a client sending ROOM_UPDATE, and ERROR_MSG.
        assert_eq!(
            ClientRepr::parse(&checked(&room_update_bytes())),
            Err(Error::WrongDirection)
        );
        assert_eq!(
            ClientRepr::parse(&checked(&[1, 0, 0, 0, 0x1F])),
            Err(Error::WrongDirection)
        );
        // BadPayloadSize: every client type with one byte too few and one too many.
        check_bad_payload_sizes(
            &[
                (0x01, 0),
                (0x03, 32),
                (0x05, 4),
                (0x10, 32),
                (0x13, 8),
                (0x15, 0),
                (0x17, 8),
            ],
            |f| ClientRepr::parse(f).map(|_| ()),
        );
    }

    quickcheck! {
        fn client_round_trip(msg: ClientMsg) -> bool {
            let repr = msg.repr();
            let bytes = emit_client(&repr);
            match next_frame(&bytes) {
                Next::Frame { frame, consumed } => {
                    consumed == bytes.len() && ClientRepr::parse(&frame) == Ok(repr)
                }
                _ => false,
            }
        }
    }
}
