//! The upstream R-Type datagram framing: magic, a 17-byte big-endian header, the payload, and a
//! big-endian CRC-32 trailer (`docs/protocols/udp-lobby-upstream.md`, "Framing").
//!
//! ```text
//!  0       4        5        6        7     9      13        15         17         17+P
//! +-------+--------+--------+--------+-----+------+---------+----------+----------+--------+
//! | magic | version| packet | message| seq | tick | payload | original | payload  | CRC-32 |
//! | A35FC81D| |0x80| type   | type   | BE  | BE   | size BE | size BE  | P bytes  | BE     |
//! +-------+--------+--------+--------+-----+------+---------+----------+----------+--------+
//! ```
//!
//! The version byte is 1; its bit 0x80 says the payload is LZ4-compressed, which lobbyd does
//! not accept ([`Error::Compressed`]) and never sends. The CRC-32 is zlib's (IEEE, reflected)
//! over every byte before it. Upstream never checks it; lobbyd does ([`Error::BadChecksum`]).
//! `tickId` is 0 in every lobby message and ignored on receipt, as is `originalSize` while
//! the compression bit is clear.
//!
//! [`Frame::new_checked`] validates length, magic, version, declared payload size and checksum
//! once; after it succeeds no accessor can panic or read past the buffer. This module knows
//! nothing about message types, and it never allocates.

use core::fmt;

pub use crate::frame::PacketType;
pub(crate) use crate::frame::{read_u16, read_u32};

mod field {
    use crate::Field;

    pub const MAGIC: Field = 0..4;
    pub const VERSION: usize = 4;
    pub const PACKET_TYPE: usize = 5;
    pub const MESSAGE_TYPE: usize = 6;
    pub const SEQ: Field = 7..9;
    pub const TICK: Field = 9..13;
    pub const PAYLOAD_SIZE: Field = 13..15;
    pub const ORIGINAL_SIZE: Field = 15..17;
}

/// The four bytes every upstream datagram opens with.
pub const MAGIC: [u8; 4] = [0xa3, 0x5f, 0xc8, 0x1d];
/// The protocol version in the low seven bits of the version byte.
pub const VERSION: u8 = 1;
/// The version byte's bit saying the payload is LZ4-compressed.
pub const COMPRESSED_BIT: u8 = 0x80;
/// Length of the header, magic included.
pub const HEADER_LEN: usize = 17;
/// Length of the trailing CRC-32.
pub const CRC_LEN: usize = 4;
/// Length of the shortest valid datagram: header and checksum around an empty payload.
pub const MIN_LEN: usize = HEADER_LEN + CRC_LEN;
/// Largest payload the 16-bit `payloadSize` field can declare.
pub const MAX_PAYLOAD_LEN: usize = u16::MAX as usize;

/// Why an upstream datagram was refused, by the framing or by the lobby messages on it.
///
/// Every variant has a metric label ([`Error::as_str`]); the server counts drops per reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// Shorter than a header plus a checksum (21 bytes).
    Truncated,
    /// The first four bytes are not the magic.
    BadMagic,
    /// The version's low seven bits are not 1.
    BadVersion,
    /// The datagram length disagrees with the header's `payloadSize`.
    BadLength,
    /// The trailing CRC-32 does not match the bytes before it.
    BadChecksum,
    /// The version byte's compression bit is set.
    Compressed,
    /// The packetType is not the one expected from this peer.
    BadPacketType,
    /// A lobby message type that only travels the other way (a reply sent by a client).
    WrongDirection,
    /// The payload does not have a layout its message type allows.
    BadPayloadSize,
}

impl Error {
    /// Every variant, in declaration order, for registering one counter per reason.
    pub const ALL: [Error; 9] = [
        Error::Truncated,
        Error::BadMagic,
        Error::BadVersion,
        Error::BadLength,
        Error::BadChecksum,
        Error::Compressed,
        Error::BadPacketType,
        Error::WrongDirection,
        Error::BadPayloadSize,
    ];

    /// Short snake_case label used as the metric name of this drop reason.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Error::Truncated => "truncated",
            Error::BadMagic => "bad_magic",
            Error::BadVersion => "bad_version",
            Error::BadLength => "bad_length",
            Error::BadChecksum => "bad_checksum",
            Error::Compressed => "compressed",
            Error::BadPacketType => "bad_packet_type",
            Error::WrongDirection => "wrong_direction",
            Error::BadPayloadSize => "bad_payload_size",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Error::Truncated => "datagram shorter than header and checksum",
            Error::BadMagic => "not the upstream magic",
            Error::BadVersion => "unsupported protocol version",
            Error::BadLength => "datagram length disagrees with payloadSize",
            Error::BadChecksum => "CRC-32 mismatch",
            Error::Compressed => "compressed payload (version bit 0x80)",
            Error::BadPacketType => "unexpected packetType",
            Error::WrongDirection => "messageType travels the other way",
            Error::BadPayloadSize => "payload layout wrong for messageType",
        };
        f.write_str(text)
    }
}

impl std::error::Error for Error {}

/// A zero-copy view of one upstream datagram.
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

    /// Wraps a buffer after checking, in this order: it holds a header and a checksum
    /// ([`Error::Truncated`]), the magic ([`Error::BadMagic`]), version 1
    /// ([`Error::BadVersion`]), a length of exactly `21 + payloadSize` ([`Error::BadLength`]),
    /// and a matching CRC-32 ([`Error::BadChecksum`]).
    pub fn new_checked(buffer: T) -> Result<Frame<T>, Error> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        if frame.buffer.as_ref()[field::MAGIC] != MAGIC {
            return Err(Error::BadMagic);
        }
        if frame.version() != VERSION {
            return Err(Error::BadVersion);
        }
        if MIN_LEN + usize::from(frame.payload_size()) != frame.buffer.as_ref().len() {
            return Err(Error::BadLength);
        }
        if !frame.verify_checksum() {
            return Err(Error::BadChecksum);
        }
        Ok(frame)
    }

    /// Checks that the buffer holds at least a header and a checksum.
    pub fn check_len(&self) -> Result<(), Error> {
        if self.buffer.as_ref().len() < MIN_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives the wrapped buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The protocol version (the version byte without its compression bit).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION] & !COMPRESSED_BIT
    }

    /// Whether the version byte's compression bit is set.
    pub fn compressed(&self) -> bool {
        self.buffer.as_ref()[field::VERSION] & COMPRESSED_BIT != 0
    }

    /// The direction byte.
    pub fn packet_type(&self) -> PacketType {
        PacketType(self.buffer.as_ref()[field::PACKET_TYPE])
    }

    /// The raw message type.
    pub fn message_type(&self) -> u8 {
        self.buffer.as_ref()[field::MESSAGE_TYPE]
    }

    /// The sequence id.
    pub fn seq(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::SEQ])
    }

    /// The game tick (0 in lobby messages).
    pub fn tick(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::TICK])
    }

    /// The declared payload length.
    pub fn payload_size(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::PAYLOAD_SIZE])
    }

    /// The declared uncompressed length (meaningful only with the compression bit).
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
    /// The payload, borrowed for as long as the underlying buffer rather than the view.
    pub fn into_payload(self) -> &'a [u8] {
        let buf = self.buffer;
        &buf[HEADER_LEN..buf.len() - CRC_LEN]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Writes the magic.
    pub fn set_magic(&mut self) {
        self.buffer.as_mut()[field::MAGIC].copy_from_slice(&MAGIC);
    }

    /// Sets the version byte (version and compression bit together).
    pub fn set_version_byte(&mut self, value: u8) {
        self.buffer.as_mut()[field::VERSION] = value;
    }

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

    /// Sets the game tick.
    pub fn set_tick(&mut self, value: u32) {
        self.buffer.as_mut()[field::TICK].copy_from_slice(&value.to_be_bytes());
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

/// Writes a whole uncompressed lobby datagram at the start of `buf` and returns its length
/// (`MIN_LEN + payload_len`): magic, version 1, tick 0, `originalSize` equal to
/// `payloadSize` (as the upstream client and server write it), the payload `fill` writes
/// into exactly `payload_len` bytes, then the checksum.
///
/// # Panics
/// If `payload_len` exceeds [`MAX_PAYLOAD_LEN`] or `buf` is shorter than the datagram: the
/// caller's bug, never a peer's bytes.
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
    frame.set_magic();
    frame.set_version_byte(VERSION);
    frame.set_packet_type(packet_type);
    frame.set_message_type(message_type);
    frame.set_seq(seq);
    frame.set_tick(0);
    frame.set_payload_size(size);
    frame.set_original_size(size);
    fill(frame.payload_mut());
    frame.fill_checksum();
    total
}

/// [`Frame::new_checked`], then the compression bit ([`Error::Compressed`]), then the
/// direction byte ([`Error::BadPacketType`]): the first step of every lobby parser.
pub fn open(buf: &[u8], expected: PacketType) -> Result<Frame<&[u8]>, Error> {
    let frame = Frame::new_checked(buf)?;
    if frame.compressed() {
        return Err(Error::Compressed);
    }
    if frame.packet_type() != expected {
        return Err(Error::BadPacketType);
    }
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{quickcheck, TestResult};

    // LIST_ROOMS, sequence 0, as the upstream client sends it (captured from the real
    // client); CRC checked with
    // `python3 -c "import zlib; print(hex(zlib.crc32(bytes.fromhex('a35fc81d010140' + '00' * 10))))"`.
    static LIST_ROOMS_SEQ0: [u8; 21] = [
        0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x42, 0x2f, 0x7b, 0x06,
    ];

    // JOIN_SUCCESS, sequence 4, room 7 on port 50107 (`c3 bb`); CRC from python3 zlib.crc32.
    static WITH_PAYLOAD: [u8; 27] = [
        0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x02, 0x45, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06,
        0x00, 0x06, 0x00, 0x00, 0x00, 0x07, 0xc3, 0xbb, 0x5f, 0x63, 0x95, 0x97,
    ];

    fn with_crc(mut bytes: Vec<u8>) -> Vec<u8> {
        let crc = crc32fast::hash(&bytes);
        bytes.extend_from_slice(&crc.to_be_bytes());
        bytes
    }

    fn header(version: u8, packet_type: u8, payload: &[u8]) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[version, packet_type, 0x40, 0, 9, 0, 0, 0, 0]);
        let size = payload.len() as u16;
        bytes.extend_from_slice(&size.to_be_bytes());
        bytes.extend_from_slice(&size.to_be_bytes());
        bytes.extend_from_slice(payload);
        bytes
    }

    #[test]
    fn deconstruct() {
        let frame = Frame::new_checked(&LIST_ROOMS_SEQ0[..]).unwrap();
        assert_eq!(frame.version(), 1);
        assert!(!frame.compressed());
        assert_eq!(frame.packet_type(), PacketType::CLIENT_TO_SERVER);
        assert_eq!(frame.message_type(), 0x40);
        assert_eq!(frame.seq(), 0);
        assert_eq!(frame.tick(), 0);
        assert_eq!(frame.payload_size(), 0);
        assert_eq!(frame.original_size(), 0);
        assert_eq!(frame.payload(), &[] as &[u8]);
        assert_eq!(frame.checksum(), 0x422f_7b06);

        let frame = Frame::new_checked(&WITH_PAYLOAD[..]).unwrap();
        assert_eq!(frame.packet_type(), PacketType::SERVER_TO_CLIENT);
        assert_eq!(frame.message_type(), 0x45);
        assert_eq!(frame.seq(), 4);
        assert_eq!(frame.payload_size(), 6);
        assert_eq!(frame.original_size(), 6);
        assert_eq!(frame.payload(), &[0, 0, 0, 7, 0xc3, 0xbb]);
        assert_eq!(frame.into_payload(), &[0, 0, 0, 7, 0xc3, 0xbb]);
    }

    #[test]
    fn construct() {
        let mut buf = [0xa5u8; 21];
        let mut frame = Frame::new_unchecked(&mut buf[..]);
        frame.set_magic();
        frame.set_version_byte(VERSION);
        frame.set_packet_type(PacketType::CLIENT_TO_SERVER);
        frame.set_message_type(0x40);
        frame.set_seq(0);
        frame.set_tick(0);
        frame.set_payload_size(0);
        frame.set_original_size(0);
        frame.fill_checksum();
        assert_eq!(buf, LIST_ROOMS_SEQ0);
    }

    #[test]
    fn emit() {
        let mut buf = [0xa5u8; 40];
        let len = emit_frame(&mut buf, PacketType::CLIENT_TO_SERVER, 0x40, 0, 0, |_| {});
        assert_eq!(&buf[..len], &LIST_ROOMS_SEQ0[..]);
        assert!(
            buf[len..].iter().all(|&b| b == 0xa5),
            "wrote past the frame"
        );
        let len = emit_frame(&mut buf, PacketType::SERVER_TO_CLIENT, 0x45, 4, 6, |p| {
            p.copy_from_slice(&[0, 0, 0, 7, 0xc3, 0xbb]);
        });
        assert_eq!(&buf[..len], &WITH_PAYLOAD[..]);
    }

    #[test]
    fn error_truncated() {
        assert_eq!(Frame::new_checked(&[][..]), Err(Error::Truncated));
        assert_eq!(
            Frame::new_checked(&LIST_ROOMS_SEQ0[..20]),
            Err(Error::Truncated)
        );
        // A seed datagram is shorter than any upstream one.
        assert_eq!(
            Frame::new_checked(&[0x01, 0x40, 0, 0, 0, 0, 0, 0, 0xed, 0x83, 0xaa, 0x8e][..]),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn error_bad_magic() {
        let mut bad = LIST_ROOMS_SEQ0;
        bad[3] = 0x1e;
        assert_eq!(Frame::new_checked(&bad[..]), Err(Error::BadMagic));
    }

    #[test]
    fn error_bad_version() {
        for version in [0x00, 0x02, 0x7f, 0x82] {
            let bytes = with_crc(header(version, 0x01, &[]));
            assert_eq!(Frame::new_checked(&bytes[..]), Err(Error::BadVersion));
        }
        // The compression bit is not part of the version.
        let bytes = with_crc(header(0x81, 0x01, &[]));
        assert!(Frame::new_checked(&bytes[..]).is_ok());
    }

    #[test]
    fn error_bad_length() {
        assert_eq!(
            Frame::new_checked(&WITH_PAYLOAD[..26]),
            Err(Error::BadLength)
        );
        let mut long = LIST_ROOMS_SEQ0.to_vec();
        long.push(0);
        assert_eq!(Frame::new_checked(&long[..]), Err(Error::BadLength));
    }

    #[test]
    fn error_bad_checksum() {
        let mut bad = LIST_ROOMS_SEQ0;
        bad[20] ^= 1;
        assert_eq!(Frame::new_checked(&bad[..]), Err(Error::BadChecksum));
        // The tick is covered by the checksum too.
        let mut bad = WITH_PAYLOAD;
        bad[10] = 1;
        assert_eq!(Frame::new_checked(&bad[..]), Err(Error::BadChecksum));
    }

    #[test]
    fn error_compressed_and_packet_type() {
        let bytes = with_crc(header(0x81, 0x01, &[1, 2, 3]));
        assert_eq!(
            open(&bytes, PacketType::CLIENT_TO_SERVER).map(|f| f.seq()),
            Err(Error::Compressed)
        );
        // Compression is refused before the direction is looked at.
        let bytes = with_crc(header(0x81, 0x02, &[]));
        assert_eq!(
            open(&bytes, PacketType::CLIENT_TO_SERVER).map(|f| f.seq()),
            Err(Error::Compressed)
        );
        let bytes = with_crc(header(0x01, 0x02, &[]));
        assert_eq!(
            open(&bytes, PacketType::CLIENT_TO_SERVER).map(|f| f.seq()),
            Err(Error::BadPacketType)
        );
        assert_eq!(
            open(&bytes, PacketType::SERVER_TO_CLIENT).map(|f| f.seq()),
            Ok(9)
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
                assert_ne!(a.as_str(), b.as_str());
            }
        }
    }

    quickcheck! {
        fn arbitrary_bytes_never_panic(bytes: Vec<u8>) -> bool {
            match Frame::new_checked(&bytes[..]) {
                Ok(frame) => {
                    let _ = (frame.packet_type(), frame.message_type(), frame.seq(), frame.tick());
                    let _ = (frame.original_size(), frame.compressed());
                    frame.payload().len() == usize::from(frame.payload_size())
                }
                Err(_) => true,
            }
        }

        fn magic_prefixed_bytes_never_panic(rest: Vec<u8>) -> bool {
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&rest);
            let _ = open(&bytes, PacketType::CLIENT_TO_SERVER);
            true
        }

        fn emitted_frames_check(pt: u8, mt: u8, seq: u16, payload: Vec<u8>) -> TestResult {
            let mut buf = vec![0xa5u8; MIN_LEN + payload.len()];
            let len = emit_frame(&mut buf, PacketType(pt), mt, seq, payload.len(), |p| {
                p.copy_from_slice(&payload)
            });
            let Ok(frame) = Frame::new_checked(&buf[..len]) else {
                return TestResult::failed();
            };
            TestResult::from_bool(
                frame.packet_type() == PacketType(pt)
                    && frame.message_type() == mt
                    && frame.seq() == seq
                    && frame.tick() == 0
                    && !frame.compressed()
                    && frame.payload() == &payload[..]
                    && frame.original_size() == frame.payload_size(),
            )
        }
    }
}
