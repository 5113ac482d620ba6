//! The R-Type datagram framing shared by the UDP room lobby and the game-instance relay.
//!
//! Implements the seed's "Packet Structure" (section 3 of the lobby protocol): an 8-byte
//! big-endian `PacketHeader`, the payload, then a big-endian CRC-32 (IEEE, as zlib computes
//! it) of every byte before it.
//!
//! ```text
//!  0        1         2       4           6            8          8+P       12+P
//! +--------+---------+-------+-----------+------------+----------+---------+
//! | packet | message | seq   | payload   | original   | payload  | CRC-32  |
//! | type   | type    | (BE)  | size (BE) | size (BE)  | P bytes  | (BE)    |
//! +--------+---------+-------+-----------+------------+----------+---------+
//! ```
//!
//! [`Frame::new_checked`] validates length, declared payload size and checksum once; after it
//! succeeds no accessor can panic or read past the buffer. [`check_policy`] holds the rules
//! both protocols apply on top (direction byte, no compression), so they cannot drift apart.
//!
//! This module knows nothing about message types or payload contents, and it never allocates.

use core::fmt;
mod field {
    use crate::Field;

    pub const PACKET_TYPE: usize = 0;
    pub const MESSAGE_TYPE: usize = 1;
    pub const SEQ: Field = 2..4;
    pub const PAYLOAD_SIZE: Field = 4..6;
    pub const ORIGINAL_SIZE: Field = 6..8;
}

/// Length of the `PacketHeader`.
pub const HEADER_LEN: usize = 8;
/// Length of the trailing CRC-32.
pub const CRC_LEN: usize = 4;
/// Length of the shortest valid datagram: a header and a checksum around an empty payload.
pub const MIN_LEN: usize = HEADER_LEN + CRC_LEN;
/// Largest payload the 16-bit `payloadSize` field can declare.
pub const MAX_PAYLOAD_LEN: usize = u16::MAX as usize;

/// The header's first byte: which way the datagram travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PacketType(pub u8);

impl PacketType {
    /// A datagram sent by a client to the lobby or to a game instance.
    pub const CLIENT_TO_SERVER: PacketType = PacketType(0x01);
    /// A datagram sent by the lobby or a game instance to a client.
    pub const SERVER_TO_CLIENT: PacketType = PacketType(0x02);
}

impl From<u8> for PacketType {
    fn from(value: u8) -> Self {
        PacketType(value)
    }
}

impl From<PacketType> for u8 {
    fn from(value: PacketType) -> Self {
        value.0
    }
}

/// Why a datagram was refused, by the framing or by a protocol built on it.
///
/// Every variant maps to a metric label through [`Error::as_str`]; the server counts dropped
/// datagrams per reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// Shorter than a header plus a checksum.
    Truncated,
    /// The datagram length disagrees with the header's `payloadSize`.
    BadLength,
    /// The trailing CRC-32 does not match the bytes before it.
    BadChecksum,
    /// The direction byte is not the one expected from this peer.
    BadPacketType,
    /// `originalSize` says the payload is compressed, which neither protocol supports.
    Compressed,
    /// The message type is not part of the protocol.
    UnknownMessage,
    /// A message type that only travels the other way (e.g. a reply sent by a client).
    WrongDirection,
    /// The payload has the wrong size for its message type.
    BadPayloadSize,
    /// A slot byte no message may carry (slot 0 as a DATA target).
    BadSlot,
}

impl Error {
    /// Every variant, in declaration order, for registering one counter per reason.
    pub const ALL: [Error; 9] = [
        Error::Truncated,
        Error::BadLength,
        Error::BadChecksum,
        Error::BadPacketType,
        Error::Compressed,
        Error::UnknownMessage,
        Error::WrongDirection,
        Error::BadPayloadSize,
        Error::BadSlot,
    ];

    /// Short snake_case label used as the metric name of this drop reason.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Error::Truncated => "truncated",
            Error::BadLength => "bad_length",
            Error::BadChecksum => "bad_checksum",
            Error::BadPacketType => "bad_packet_type",
            Error::Compressed => "compressed",
            Error::UnknownMessage => "unknown_message",
            Error::WrongDirection => "wrong_direction",
            Error::BadPayloadSize => "bad_payload_size",
            Error::BadSlot => "bad_slot",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Error::Truncated => "datagram shorter than header and checksum",
            Error::BadLength => "datagram length disagrees with payloadSize",
            Error::BadChecksum => "CRC-32 mismatch",
            Error::BadPacketType => "unexpected packetType",
            Error::Compressed => "compressed payload (originalSize differs from payloadSize)",
            Error::UnknownMessage => "unknown messageType",
            Error::WrongDirection => "messageType travels the other way",
            Error::BadPayloadSize => "payload size wrong for messageType",
            Error::BadSlot => "invalid slot byte",
        };
        f.write_str(text)
    }
}

impl std::error::Error for Error {}

/// A zero-copy view of one framed datagram.
///
/// Built with [`Frame::new_checked`] on received bytes; [`Frame::new_unchecked`] is for
/// emitting into a buffer of exactly `MIN_LEN + payload length` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    /// Wraps a buffer without validating it; accessors may panic if it is shorter than
    /// [`MIN_LEN`].
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Wraps a buffer after checking, in this order, that it holds a header and a checksum
    /// ([`Error::Truncated`]), that its length is exactly `12 + payloadSize`
    /// ([`Error::BadLength`]) and that the CRC-32 matches ([`Error::BadChecksum`]).
    pub fn new_checked(buffer: T) -> Result<Frame<T>, Error> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        if !frame.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        Ok(frame)
    }

    /// Checks the buffer length against [`MIN_LEN`] and the declared `payloadSize`.
    pub fn check_len(&self) -> Result<(), Error> {
        let len = self.buffer.as_ref().len();
        if len < MIN_LEN {
            return Err(Error::Truncated);
        }
        if MIN_LEN + usize::from(self.payload_size()) != len {
            return Err(Error::BadLength);
        }
        Ok(())
    }

    /// Gives the wrapped buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The direction byte.
    pub fn packet_type(&self) -> PacketType {
        PacketType(self.buffer.as_ref()[field::PACKET_TYPE])
    }

    /// The raw message type; each protocol decodes it into its own enum.
    pub fn message_type(&self) -> u8 {
        self.buffer.as_ref()[field::MESSAGE_TYPE]
    }

    /// The sequence id.
    pub fn seq(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::SEQ])
    }

    /// The declared payload length.
    pub fn payload_size(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::PAYLOAD_SIZE])
    }

    /// The declared uncompressed length (0 or `payloadSize` when uncompressed).
    pub fn original_size(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::ORIGINAL_SIZE])
    }

    /// The bytes between header and checksum.
    pub fn payload(&self) -> &[u8] {
        let buf = self.buffer.as_ref();
        &buf[HEADER_LEN..buf.len() - CRC_LEN]
    }

    /// The CRC-32 carried in the last four bytes.
    pub fn checksum(&self) -> u32 {
        let buf = self.buffer.as_ref();
        read_u32(&buf[buf.len() - CRC_LEN..])
    }

    /// The CRC-32 of every byte before the checksum field.
    pub fn compute_checksum(&self) -> u32 {
        let buf = self.buffer.as_ref();
        crc32fast::hash(&buf[..buf.len() - CRC_LEN])
    }

    /// Whether the carried checksum matches the bytes.
    pub fn verify_checksum(&self) -> bool {
        self.checksum() == self.compute_checksum()
    }
}

impl<'a> Frame<&'a [u8]> {
    /// The payload, borrowed for as long as the underlying buffer rather than the view, so
    /// parsed representations can point into the receive buffer.
    pub fn into_payload(self) -> &'a [u8] {
        let buf = self.buffer;
        &buf[HEADER_LEN..buf.len() - CRC_LEN]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Sets the direction byte.
    pub fn set_packet_type(&mut self, value: PacketType) {
        self.buffer.as_mut()[field::PACKET_TYPE] = value.0;
    }

    /// Sets the raw message type.
    pub fn set_message_type(&mut self, value: u8) {
        self.buffer.as_mut()[field::MESSAGE_TYPE] = value;
    }

    /// Sets the sequence id.
    pub fn set_seq(&mut self, value: u16) {
        self.buffer.as_mut()[field::SEQ].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the declared payload length.
    pub fn set_payload_size(&mut self, value: u16) {
        self.buffer.as_mut()[field::PAYLOAD_SIZE].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the declared uncompressed length.
    pub fn set_original_size(&mut self, value: u16) {
        self.buffer.as_mut()[field::ORIGINAL_SIZE].copy_from_slice(&value.to_be_bytes());
    }

    /// The bytes between header and checksum, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let buf = self.buffer.as_mut();
        let end = buf.len() - CRC_LEN;
        &mut buf[HEADER_LEN..end]
    }

    /// Computes the CRC-32 of every byte before the checksum field and stores it; call last.
    pub fn fill_checksum(&mut self) {
        let crc = self.compute_checksum();
        let buf = self.buffer.as_mut();
        let start = buf.len() - CRC_LEN;
        buf[start..].copy_from_slice(&crc.to_be_bytes());
    }
}

/// Writes a whole uncompressed frame at the start of `buf` and returns its length
/// (`MIN_LEN + payload_len`).
///
/// `originalSize` is set equal to `payloadSize`. `fill` receives exactly `payload_len` bytes
/// to write the payload into; the checksum is computed after it returns.
///
/// # Panics
/// If `payload_len` exceeds [`MAX_PAYLOAD_LEN`] or `buf` is shorter than the frame. Both are
/// programming errors of the caller; no peer input reaches them.
pub fn emit_frame(
    buf: &mut [u8],
    packet_type: PacketType,
    message_type: u8,
    seq: u16,
    payload_len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> usize {
    assert!(
        payload_len <= MAX_PAYLOAD_LEN,
        "payload longer than payloadSize can declare"
    );
    let size = payload_len as u16;
    let total = MIN_LEN + payload_len;
    let mut frame = Frame::new_unchecked(&mut buf[..total]);
    frame.set_packet_type(packet_type);
    frame.set_message_type(message_type);
    frame.set_seq(seq);
    frame.set_payload_size(size);
    frame.set_original_size(size);
    fill(frame.payload_mut());
    frame.fill_checksum();
    total
}

/// The rules both protocols apply to a checked frame before looking at its message type:
/// the direction byte must be `expected` ([`Error::BadPacketType`]), and `originalSize` must be
/// 0 or equal to `payloadSize`, since compression is not supported ([`Error::Compressed`]).
pub fn check_policy<T: AsRef<[u8]>>(frame: &Frame<T>, expected: PacketType) -> Result<(), Error> {
    if frame.packet_type() != expected {
        return Err(Error::BadPacketType);
    }
    let original = frame.original_size();
    if original != 0 && original != frame.payload_size() {
        return Err(Error::Compressed);
    }
    Ok(())
}

/// [`Frame::new_checked`] followed by [`check_policy`]: the common first step of every parser.
pub fn open(buf: &[u8], expected: PacketType) -> Result<Frame<&[u8]>, Error> {
    let frame = Frame::new_checked(buf)?;
    check_policy(&frame, expected)?;
    Ok(frame)
}

/// Reads a big-endian `u16` from a two-byte slice taken at a field offset.
pub(crate) fn read_u16(bytes: &[u8]) -> u16 {
    u16::from_be_bytes([bytes[0], bytes[1]])
}

/// Reads a big-endian `u32` from a four-byte slice taken at a field offset.
pub(crate) fn read_u32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{quickcheck, TestResult};

    // The seed's only example: LOBBY_LIST_ROOMS with sequenceId 0. Checked against
    // `python3 -c "import zlib; print(hex(zlib.crc32(bytes.fromhex('0140000000000000'))))"`.
    static LIST_ROOMS_SEQ0: [u8; 12] = [
        0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xed, 0x83, 0xaa, 0x8e,
    ];

    // Header 02 45 0003 0006 0006, payload 0000002a 1f92; CRC from python3 zlib.crc32.
    static WITH_PAYLOAD: [u8; 18] = [
        0x02, 0x45, 0x00, 0x03, 0x00, 0x06, 0x00, 0x06, 0x00, 0x00, 0x00, 0x2a, 0x1f, 0x92, 0xff,
        0xde, 0x8a, 0xa3,
    ];

    fn with_crc(mut bytes: Vec<u8>) -> Vec<u8> {
        let crc = crc32fast::hash(&bytes);
        bytes.extend_from_slice(&crc.to_be_bytes());
        bytes
    }

    #[test]
    fn deconstruct() {
        let frame = Frame::new_checked(&LIST_ROOMS_SEQ0[..]).unwrap();
        assert_eq!(frame.packet_type(), PacketType::CLIENT_TO_SERVER);
        assert_eq!(frame.message_type(), 0x40);
        assert_eq!(frame.seq(), 0);
        assert_eq!(frame.payload_size(), 0);
        assert_eq!(frame.original_size(), 0);
        assert_eq!(frame.payload(), &[] as &[u8]);
        assert_eq!(frame.checksum(), 0xed83_aa8e);

        let frame = Frame::new_checked(&WITH_PAYLOAD[..]).unwrap();
        assert_eq!(frame.packet_type(), PacketType::SERVER_TO_CLIENT);
        assert_eq!(frame.message_type(), 0x45);
        assert_eq!(frame.seq(), 3);
        assert_eq!(frame.payload_size(), 6);
        assert_eq!(frame.original_size(), 6);
        assert_eq!(frame.payload(), &[0x00, 0x00, 0x00, 0x2a, 0x1f, 0x92]);
        assert_eq!(frame.checksum(), 0xffde_8aa3);
        assert_eq!(frame.into_payload(), &[0x00, 0x00, 0x00, 0x2a, 0x1f, 0x92]);
    }

    #[test]
    fn construct() {
        let mut buf = [0xa5u8; 12];
        let mut frame = Frame::new_unchecked(&mut buf[..]);
        frame.set_packet_type(PacketType::CLIENT_TO_SERVER);
        frame.set_message_type(0x40);
        frame.set_seq(0);
        frame.set_payload_size(0);
        frame.set_original_size(0);
        frame.fill_checksum();
        assert_eq!(buf, LIST_ROOMS_SEQ0);
    }

    #[test]
    fn emit() {
        let mut buf = [0xa5u8; 32];
        let len = emit_frame(&mut buf, PacketType::CLIENT_TO_SERVER, 0x40, 0, 0, |_| {});
        assert_eq!(len, 12);
        assert_eq!(&buf[..len], &LIST_ROOMS_SEQ0[..]);
        assert!(
            buf[len..].iter().all(|&b| b == 0xa5),
            "wrote past the frame"
        );

        let mut buf = [0xa5u8; 18];
        let len = emit_frame(&mut buf, PacketType::SERVER_TO_CLIENT, 0x45, 3, 6, |p| {
            p.copy_from_slice(&[0x00, 0x00, 0x00, 0x2a, 0x1f, 0x92]);
        });
        assert_eq!(&buf[..len], &WITH_PAYLOAD[..]);
    }

    #[test]
    fn error_truncated() {
        assert_eq!(Frame::new_checked(&[][..]), Err(Error::Truncated));
        assert_eq!(
            Frame::new_checked(&LIST_ROOMS_SEQ0[..11]),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn error_bad_length() {
        // payloadSize says 6 but the datagram is cut short by one byte.
        assert_eq!(
            Frame::new_checked(&WITH_PAYLOAD[..17]),
            Err(Error::BadLength)
        );
        // Trailing garbage after the checksum is a length error too, not a checksum error.
        let mut long = LIST_ROOMS_SEQ0.to_vec();
        long.push(0);
        assert_eq!(Frame::new_checked(&long[..]), Err(Error::BadLength));
    }

    #[test]
    fn error_bad_checksum() {
        let mut bad = LIST_ROOMS_SEQ0;
        bad[11] ^= 1;
        assert_eq!(Frame::new_checked(&bad[..]), Err(Error::BadChecksum));
        let mut bad = WITH_PAYLOAD;
        bad[10] ^= 0x80;
        assert_eq!(Frame::new_checked(&bad[..]), Err(Error::BadChecksum));
    }

    #[test]
    fn length_checked_before_checksum() {
        // Both wrong: the length error wins, as documented.
        let mut bad = WITH_PAYLOAD[..17].to_vec();
        bad[0] ^= 0xff;
        assert_eq!(Frame::new_checked(&bad[..]), Err(Error::BadLength));
    }

    #[test]
    fn error_bad_packet_type() {
        let frame = Frame::new_checked(&LIST_ROOMS_SEQ0[..]).unwrap();
        assert_eq!(
            check_policy(&frame, PacketType::SERVER_TO_CLIENT),
            Err(Error::BadPacketType)
        );
        assert_eq!(check_policy(&frame, PacketType::CLIENT_TO_SERVER), Ok(()));
    }

    #[test]
    fn error_compressed() {
        // payloadSize 1, originalSize 5: a compressed payload.
        let bytes = with_crc(vec![0x01, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x05, 0x00]);
        assert_eq!(
            open(&bytes, PacketType::CLIENT_TO_SERVER).map(|f| f.seq()),
            Err(Error::Compressed)
        );
        // originalSize 0 is accepted as "not compressed".
        let bytes = with_crc(vec![0x01, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00]);
        assert!(open(&bytes, PacketType::CLIENT_TO_SERVER).is_ok());
    }

    #[test]
    fn policy_checks_packet_type_first() {
        let bytes = with_crc(vec![0x02, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x05, 0x00]);
        assert_eq!(
            open(&bytes, PacketType::CLIENT_TO_SERVER).map(|f| f.seq()),
            Err(Error::BadPacketType)
        );
    }

    #[test]
    fn error_labels_unique_and_snake_case() {
        for (i, a) in Error::ALL.iter().enumerate() {
            assert!(a
                .as_str()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_'));
            assert!(!a.to_string().is_empty());
            for b in &Error::ALL[i + 1..] {
                assert_ne!(a, b);
                assert_ne!(a.as_str(), b.as_str());
            }
        }
        assert_eq!(Error::Truncated.as_str(), "truncated");
        assert_eq!(Error::BadChecksum.as_str(), "bad_checksum");
    }

    quickcheck! {
        fn arbitrary_bytes_never_panic(bytes: Vec<u8>) -> bool {
            if let Ok(frame) = Frame::new_checked(&bytes[..]) {
                let _ = (frame.packet_type(), frame.message_type(), frame.seq());
                let _ = (frame.original_size(), frame.checksum());
                let _ = check_policy(&frame, PacketType::CLIENT_TO_SERVER);
                frame.payload().len() == usize::from(frame.payload_size())
            } else {
                true
            }
        }

        fn emitted_frames_check(pt: u8, mt: u8, seq: u16, payload: Vec<u8>) -> TestResult {
            let mut buf = vec![0xa5u8; MIN_LEN + payload.len()];
            let len = emit_frame(&mut buf, PacketType(pt), mt, seq, payload.len(), |p| {
                p.copy_from_slice(&payload)
            });
            let frame = match Frame::new_checked(&buf[..len]) {
                Ok(frame) => frame,
                Err(_) => return TestResult::failed(),
            };
            TestResult::from_bool(
                frame.packet_type() == PacketType(pt)
                    && frame.message_type() == mt
                    && frame.seq() == seq
                    && frame.payload() == &payload[..]
                    && frame.original_size() == frame.payload_size(),
            )
        }
    }
}
