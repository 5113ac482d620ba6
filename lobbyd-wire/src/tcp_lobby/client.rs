//! The four client-to-server messages of the TCP lobby, CONNECT_REQ, READY_REQ, START_REQ and
//! DISCONNECT (RFC R-Type-TCP-001 sections 5.2, 5.5, 5.7 and 5.9), as [`ClientRepr`].
//!
//! Parsing borrows the name field from the frame; emitting writes into the caller's buffer.
//! Neither allocates. What a request means for a party is the R-Type core's business.

use super::{
    check_size, emit_header, field, parse_flag, payload_array, payload_byte, size, Error, Frame,
    PacketType, HEADER_LEN, NAME_LEN,
};

/// A message from client to server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientRepr<'a> {
    /// CONNECT_REQ (0x10), payload 32 bytes: the raw name field, checked later by
    /// [`validate_name`](super::validate_name) because an invalid name is answered, not
    /// counted as a violation.
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
    /// READY_REQ (0x13), payload 1 byte: 0 = not ready, 1 = ready.
    ///
    /// ```text
    /// +-------+
    /// | ready |
    /// +-------+
    /// ```
    ReadyReq {
        /// The desired ready state.
        ready: bool,
    },
    /// START_REQ (0x15), empty payload.
    StartReq,
    /// DISCONNECT (0x17), empty payload.
    Disconnect,
}

impl<'a> ClientRepr<'a> {
    /// Parses a client frame. Server-to-client types give [`Error::WrongDirection`].
    pub fn parse(frame: &Frame<&'a [u8]>) -> Result<ClientRepr<'a>, Error> {
        frame.check_len()?;
        let payload = frame.into_payload();
        match frame.packet_type() {
            PacketType::ConnectReq => {
                check_size(payload, size::CONNECT_REQ)?;
                Ok(ClientRepr::ConnectReq {
                    name: payload_array(payload, field::CONNECT_REQ_NAME)?,
                })
            }
            PacketType::ReadyReq => {
                check_size(payload, size::READY_REQ)?;
                Ok(ClientRepr::ReadyReq {
                    ready: parse_flag(payload_byte(payload, field::READY_REQ_READY)?)?,
                })
            }
            PacketType::StartReq => {
                check_size(payload, size::START_REQ)?;
                Ok(ClientRepr::StartReq)
            }
            PacketType::Disconnect => {
                check_size(payload, size::DISCONNECT)?;
                Ok(ClientRepr::Disconnect)
            }
            PacketType::Unknown(_) => Err(Error::UnknownType),
            _ => Err(Error::WrongDirection),
        }
    }

    /// The packet type of this message.
    pub const fn packet_type(&self) -> PacketType {
        match self {
            ClientRepr::ConnectReq { .. } => PacketType::ConnectReq,
            ClientRepr::ReadyReq { .. } => PacketType::ReadyReq,
            ClientRepr::StartReq => PacketType::StartReq,
            ClientRepr::Disconnect => PacketType::Disconnect,
        }
    }

    /// Length of the whole frame, header included.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
            + match self {
                ClientRepr::ConnectReq { .. } => size::CONNECT_REQ,
                ClientRepr::ReadyReq { .. } => size::READY_REQ,
                ClientRepr::StartReq => size::START_REQ,
                ClientRepr::Disconnect => size::DISCONNECT,
            }
    }

    /// Writes the whole frame at the start of `buf` and returns its length.
    ///
    /// Panics if `buf` is shorter than [`ClientRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let len = self.buffer_len();
        let payload = emit_header(buf, self.packet_type(), len - HEADER_LEN);
        match *self {
            ClientRepr::ConnectReq { name } => {
                payload[field::CONNECT_REQ_NAME].copy_from_slice(name);
            }
            ClientRepr::ReadyReq { ready } => payload[field::READY_REQ_READY] = u8::from(ready),
            ClientRepr::StartReq | ClientRepr::Disconnect => {}
        }
        len
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::super::{name_field, next_frame, Next, ServerRepr};
    use super::*;
    use quickcheck::quickcheck;

    #[test]
    fn construct() {
        check_construct(&client_goldens(&name_field("Alice")));
    }

    #[test]
    fn parse() {
        check_parse::<ClientRepr, ServerRepr>(&client_goldens(&name_field("Alice")));
    }

    #[test]
    fn emit() {
        check_emit(&client_goldens(&name_field("Alice")));
    }

    #[test]
    fn every_error_variant() {
        // Truncated: the view does not hold the declared payload.
        assert_eq!(
            ClientRepr::parse(&Frame::new_unchecked(&[0x13, 0x01, 0x00][..])),
            Err(Error::Truncated)
        );
        // UnknownType.
        let unknown = [0x20, 0x00, 0x00];
        assert_eq!(
            ClientRepr::parse(&checked(&unknown)),
            Err(Error::UnknownType)
        );
        // WrongDirection: a client sending PLAYER_JOIN.
        assert_eq!(
            ClientRepr::parse(&checked(&PLAYER_JOIN_BYTES)),
            Err(Error::WrongDirection)
        );
        // BadPayloadSize: every client type with one byte too few and one too many.
        check_bad_payload_sizes(&[(0x10, 32), (0x13, 1), (0x15, 0), (0x17, 0)], |f| {
            ClientRepr::parse(f).map(|_| ())
        });
        // BadValue: a ready flag other than 0/1.
        assert_eq!(
            ClientRepr::parse(&checked(&[0x13, 0x01, 0x00, 0x02])),
            Err(Error::BadValue)
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
