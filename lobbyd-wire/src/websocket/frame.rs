//! WebSocket frames (RFC 6455 section 5): the header, masking, and the frame readers of both
//! ends.
//!
//! ```text
//!  0               1               2               3
//! +-+-+-+-+-------+-+-------------+-------------------------------+
//! |F|R|R|R| opcode|M| length 7    | length 16 or 64 (if 126, 127) |
//! |I|S|S|S|  4    |A|             | big-endian                    |
//! |N|V|V|V|       |S|             |                               |
//! +-+-+-+-+-------+-+-------------+ - - - - - - - - - - - - - - - +
//! | masking key (4 bytes, if MASK) | payload ...                  |
//! +--------------------------------+------------------------------+
//! ```
//!
//! Contract: [`Header::parse`] is total (any bytes: a header, "need more", or
//! [`Violation::Length`] for a 64-bit length with its top bit set); [`next_client_frame`] applies
//! what a server must refuse (section 5.1-5.5: unmasked frames, reserved bits without an
//! extension, reserved opcodes, long or fragmented control frames, continuations out of place,
//! text, data frames over the caller's cap) and decides each from the header alone, before
//! the payload arrives; a whole masked frame is unmasked in place and its payload borrowed.
//! [`Header::emit`] panics only when the caller's buffer is shorter than
//! [`Header::buffer_len`].

use core::ops::Range;

use super::close;

/// The longest header: 2 bytes, an 8-byte length, a 4-byte masking key.
pub const MAX_HEADER_LEN: usize = 14;
/// The longest header the server writes (it never masks).
pub const MAX_SERVER_HEADER_LEN: usize = 10;
/// The longest payload of a control frame (close, ping, pong).
pub const MAX_CONTROL_PAYLOAD: usize = 125;

/// A frame's opcode (4 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpCode {
    /// 0: the next fragment of a message.
    Continuation,
    /// 1: a UTF-8 text message.
    Text,
    /// 2: a binary message.
    Binary,
    /// 8: close.
    Close,
    /// 9: ping.
    Ping,
    /// 10: pong.
    Pong,
    /// 3-7 and 11-15: reserved.
    Reserved(u8),
}

impl OpCode {
    /// The opcode of a header's low 4 bits.
    pub fn from_bits(bits: u8) -> OpCode {
        match bits & 0x0f {
            0 => OpCode::Continuation,
            1 => OpCode::Text,
            2 => OpCode::Binary,
            8 => OpCode::Close,
            9 => OpCode::Ping,
            10 => OpCode::Pong,
            other => OpCode::Reserved(other),
        }
    }

    /// Its 4 bits.
    pub fn bits(self) -> u8 {
        match self {
            OpCode::Continuation => 0,
            OpCode::Text => 1,
            OpCode::Binary => 2,
            OpCode::Close => 8,
            OpCode::Ping => 9,
            OpCode::Pong => 10,
            OpCode::Reserved(bits) => bits & 0x0f,
        }
    }

    /// Close, ping, pong and the reserved 11-15 (bit 3 set).
    pub fn is_control(self) -> bool {
        self.bits() & 0x08 != 0
    }
}

/// A frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The last fragment of its message.
    pub fin: bool,
    /// The three reserved bits (RSV1-3), high to low; 0 without an extension.
    pub rsv: u8,
    /// What the frame is.
    pub opcode: OpCode,
    /// The masking key: every client frame has one, no server frame does.
    pub mask: Option<[u8; 4]>,
    /// The payload length.
    pub payload_len: u64,
}

/// What a server refuses in a client's frames, each with its close code (section 7.4.1) and
/// metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Violation {
    /// A client frame without a masking key (1002).
    Unmasked,
    /// A reserved bit set: no extension was agreed (1002).
    ReservedBits,
    /// A reserved opcode (1002).
    ReservedOpcode,
    /// A control frame fragmented or over 125 bytes (1002).
    BadControl,
    /// A 64-bit length with its top bit set (1002).
    Length,
    /// A continuation with no message begun, or a new message before the last one ended
    /// (1002).
    Continuation,
    /// A close frame with a one-byte payload or a code that may not be sent (1002).
    BadClose,
    /// A text message: the lobby speaks binary (1003).
    Text,
    /// A message over the cap (1009).
    TooBig,
}

impl Violation {
    /// The close code the server answers with.
    pub fn close_code(self) -> u16 {
        match self {
            Violation::Text => close::UNSUPPORTED_DATA,
            Violation::TooBig => close::TOO_BIG,
            _ => close::PROTOCOL_ERROR,
        }
    }

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Violation::Unmasked => "unmasked",
            Violation::ReservedBits => "reserved_bits",
            Violation::ReservedOpcode => "reserved_opcode",
            Violation::BadControl => "bad_control",
            Violation::Length => "bad_length",
            Violation::Continuation => "continuation",
            Violation::BadClose => "bad_close",
            Violation::Text => "text",
            Violation::TooBig => "too_big",
        }
    }

    /// Every violation, for the metrics catalogue.
    pub const ALL: [Violation; 9] = [
        Violation::Unmasked,
        Violation::ReservedBits,
        Violation::ReservedOpcode,
        Violation::BadControl,
        Violation::Length,
        Violation::Continuation,
        Violation::BadClose,
        Violation::Text,
        Violation::TooBig,
    ];
}

impl core::fmt::Display for Violation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Violation::Unmasked => "unmasked client frame",
            Violation::ReservedBits => "reserved bits set",
            Violation::ReservedOpcode => "reserved opcode",
            Violation::BadControl => "control frame fragmented or over 125 bytes",
            Violation::Length => "64-bit length with its top bit set",
            Violation::Continuation => "continuation out of place",
            Violation::BadClose => "bad close payload",
            Violation::Text => "text message",
            Violation::TooBig => "message too big",
        })
    }
}

impl Header {
    /// Reads a header from the front of `buf`: `Ok(None)` when `buf` holds less than the
    /// whole header, else the header and its length in bytes. Total.
    pub fn parse(buf: &[u8]) -> Result<Option<(Header, usize)>, Violation> {
        let (Some(&b0), Some(&b1)) = (buf.first(), buf.get(1)) else {
            return Ok(None);
        };
        let masked = b1 & 0x80 != 0;
        let (payload_len, mut at) = match b1 & 0x7f {
            126 => match buf.get(2..4) {
                Some(b) => (u64::from(u16::from_be_bytes([b[0], b[1]])), 4),
                None => return Ok(None),
            },
            127 => match buf.get(2..10) {
                Some(b) => {
                    let mut be = [0u8; 8];
                    be.copy_from_slice(b);
                    let len = u64::from_be_bytes(be);
                    if len >> 63 != 0 {
                        return Err(Violation::Length);
                    }
                    (len, 10)
                }
                None => return Ok(None),
            },
            short => (u64::from(short), 2),
        };
        let mask = if masked {
            let Some(key) = buf.get(at..at + 4) else {
                return Ok(None);
            };
            at += 4;
            Some([key[0], key[1], key[2], key[3]])
        } else {
            None
        };
        let header = Header {
            fin: b0 & 0x80 != 0,
            rsv: (b0 >> 4) & 0x07,
            opcode: OpCode::from_bits(b0),
            mask,
            payload_len,
        };
        Ok(Some((header, at)))
    }

    /// Bytes [`Header::emit`] writes: 2, plus 2 or 8 for the length, plus 4 for a mask.
    pub fn buffer_len(&self) -> usize {
        let len = match self.payload_len {
            0..=125 => 2,
            126..=0xffff => 4,
            _ => 10,
        };
        len + if self.mask.is_some() { 4 } else { 0 }
    }

    /// Writes the header at the front of `buf` (the shortest length encoding) and returns its
    /// length. Panics when `buf` is shorter than [`Header::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        buf[0] = u8::from(self.fin) << 7 | (self.rsv & 0x07) << 4 | self.opcode.bits();
        let mask_bit = if self.mask.is_some() { 0x80 } else { 0 };
        let mut at = match self.payload_len {
            len @ 0..=125 => {
                buf[1] = mask_bit | len as u8;
                2
            }
            len @ 126..=0xffff => {
                buf[1] = mask_bit | 126;
                buf[2..4].copy_from_slice(&(len as u16).to_be_bytes());
                4
            }
            len => {
                buf[1] = mask_bit | 127;
                buf[2..10].copy_from_slice(&len.to_be_bytes());
                10
            }
        };
        if let Some(key) = self.mask {
            buf[at..at + 4].copy_from_slice(&key);
            at += 4;
        }
        at
    }
}

/// XORs `bytes` with the masking `key` (section 5.3); masking twice restores the bytes.
pub fn apply_mask(bytes: &mut [u8], key: [u8; 4]) {
    let word = u32::from_ne_bytes(key);
    let mut chunks = bytes.chunks_exact_mut(4);
    for chunk in &mut chunks {
        let masked = u32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]) ^ word;
        chunk.copy_from_slice(&masked.to_ne_bytes());
    }
    for (byte, k) in chunks.into_remainder().iter_mut().zip(key) {
        *byte ^= k;
    }
}

/// The unmasked header of a server frame carrying `len` payload bytes, as an array and the
/// length used.
pub fn server_header(opcode: OpCode, len: usize) -> ([u8; MAX_SERVER_HEADER_LEN], usize) {
    let mut out = [0u8; MAX_SERVER_HEADER_LEN];
    let header = Header {
        fin: true,
        rsv: 0,
        opcode,
        mask: None,
        payload_len: len as u64,
    };
    let n = header.emit(&mut out);
    (out, n)
}

/// A server's close frame with `code` and no reason (4 bytes).
pub fn server_close(code: u16) -> [u8; 4] {
    let [hi, lo] = code.to_be_bytes();
    [0x88, 0x02, hi, lo]
}

/// What a server's reader found at the front of its buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Next<'a> {
    /// Less than the whole frame (its header said nothing to refuse yet).
    NeedMore,
    /// One whole frame, its payload unmasked in place and borrowed; the caller drains
    /// `consumed` bytes after use.
    Frame {
        /// The header (`mask` is the key that was applied).
        header: Header,
        /// The payload, unmasked.
        payload: &'a [u8],
        /// Header plus payload.
        consumed: usize,
    },
    /// Something a server must refuse: close the connection with its code.
    Refuse(Violation),
}

/// Cuts the next client frame from `buf` for a server: `in_message` says a fragmented data
/// message has begun (a continuation is expected), `max_payload` caps a data frame's payload
/// (the caller also caps a fragmented message's total). Refusals are decided from the header
/// alone; a whole frame is unmasked in place. Never copies, allocates or panics.
pub fn next_client_frame(buf: &mut [u8], in_message: bool, max_payload: usize) -> Next<'_> {
    let (header, header_len) = match Header::parse(buf) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => return Next::NeedMore,
        Err(violation) => return Next::Refuse(violation),
    };
    if let Err(violation) = check_client_header(&header, in_message, max_payload) {
        return Next::Refuse(violation);
    }
    // `check_client_header` bounded the length by `max_payload` (or 125), a `usize`.
    let len = header.payload_len as usize;
    let Some(end) = header_len.checked_add(len).filter(|&end| end <= buf.len()) else {
        return Next::NeedMore;
    };
    let payload = &mut buf[header_len..end];
    if let Some(key) = header.mask {
        apply_mask(payload, key);
    }
    if header.opcode == OpCode::Close && !close_payload_ok(payload) {
        return Next::Refuse(Violation::BadClose);
    }
    Next::Frame {
        header,
        payload,
        consumed: end,
    }
}

/// The checks a server makes on a client frame's header (section 5.1-5.5), in order.
fn check_client_header(
    header: &Header,
    in_message: bool,
    max_payload: usize,
) -> Result<(), Violation> {
    if header.mask.is_none() {
        return Err(Violation::Unmasked);
    }
    if header.rsv != 0 {
        return Err(Violation::ReservedBits);
    }
    match header.opcode {
        OpCode::Reserved(_) => Err(Violation::ReservedOpcode),
        OpCode::Close | OpCode::Ping | OpCode::Pong => {
            if !header.fin || header.payload_len > MAX_CONTROL_PAYLOAD as u64 {
                Err(Violation::BadControl)
            } else {
                Ok(())
            }
        }
        OpCode::Continuation if !in_message => Err(Violation::Continuation),
        OpCode::Text | OpCode::Binary if in_message => Err(Violation::Continuation),
        OpCode::Text => Err(Violation::Text),
        OpCode::Continuation | OpCode::Binary => {
            if header.payload_len > max_payload as u64 {
                Err(Violation::TooBig)
            } else {
                Ok(())
            }
        }
    }
}

/// A close frame's payload is empty, or a code a peer may send (1000-1003, 1007-1011,
/// 3000-4999) and a reason.
fn close_payload_ok(payload: &[u8]) -> bool {
    match payload {
        [] => true,
        [_] => false,
        [hi, lo, ..] => matches!(
            u16::from_be_bytes([*hi, *lo]),
            1000..=1003 | 1007..=1011 | 3000..=4999
        ),
    }
}

/// The status code of a close frame's payload (1005 "no status" when it has none).
pub fn close_code(payload: &[u8]) -> u16 {
    match payload {
        [hi, lo, ..] => u16::from_be_bytes([*hi, *lo]),
        _ => 1005,
    }
}

/// A client's reader of server frames: `Ok(None)` when `buf` holds less than a whole frame,
/// else the header, the payload's range in `buf` and the bytes to drain. Errors:
/// [`Violation::Length`] (a 64-bit length with its top bit set) and [`Violation::Unmasked`],
/// which here stands for its mirror, a masked frame (a server must not mask).
pub fn next_server_frame(buf: &[u8]) -> Result<Option<(Header, Range<usize>, usize)>, Violation> {
    let Some((header, header_len)) = Header::parse(buf)? else {
        return Ok(None);
    };
    if header.mask.is_some() {
        return Err(Violation::Unmasked);
    }
    let Some(end) = usize::try_from(header.payload_len)
        .ok()
        .and_then(|len| header_len.checked_add(len))
        .filter(|&end| end <= buf.len())
    else {
        return Ok(None);
    };
    Ok(Some((header, header_len..end, end)))
}

/// Appends one client frame (`fin`, `opcode`, masked with `key`) carrying `payload` to
/// `out`.
pub fn emit_client_frame(
    out: &mut Vec<u8>,
    fin: bool,
    opcode: OpCode,
    key: [u8; 4],
    payload: &[u8],
) {
    let header = Header {
        fin,
        rsv: 0,
        opcode,
        mask: Some(key),
        payload_len: payload.len() as u64,
    };
    let mut head = [0u8; MAX_HEADER_LEN];
    let n = header.emit(&mut head);
    out.extend_from_slice(&head[..n]);
    let start = out.len();
    out.extend_from_slice(payload);
    apply_mask(&mut out[start..], key);
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::quickcheck;

    /// RFC 6455 section 5.7: a single-frame unmasked text message "Hello".
    const UNMASKED_HELLO: [u8; 7] = [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f];
    /// The same, masked (key 37 fa 21 3d).
    const MASKED_HELLO: [u8; 11] = [
        0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
    ];
    /// A 256-byte unmasked binary message's header (section 5.7).
    const BINARY_256: [u8; 4] = [0x82, 0x7e, 0x01, 0x00];
    /// A 65,536-byte unmasked binary message's header (section 5.7).
    const BINARY_64K: [u8; 10] = [0x82, 0x7f, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00];

    #[test]
    fn deconstruct() {
        let (header, len) = Header::parse(&UNMASKED_HELLO).unwrap().unwrap();
        assert_eq!(len, 2);
        assert_eq!(
            header,
            Header {
                fin: true,
                rsv: 0,
                opcode: OpCode::Text,
                mask: None,
                payload_len: 5
            }
        );
        let (header, len) = Header::parse(&MASKED_HELLO).unwrap().unwrap();
        assert_eq!((len, header.mask), (6, Some([0x37, 0xfa, 0x21, 0x3d])));
        let (header, len) = Header::parse(&BINARY_256).unwrap().unwrap();
        assert_eq!(
            (len, header.opcode, header.payload_len),
            (4, OpCode::Binary, 256)
        );
        let (header, len) = Header::parse(&BINARY_64K).unwrap().unwrap();
        assert_eq!((len, header.payload_len), (10, 65_536));
    }

    #[test]
    fn construct() {
        for (golden, len) in [
            (&UNMASKED_HELLO[..2], 5usize),
            (&BINARY_256[..], 256),
            (&BINARY_64K[..], 65_536),
        ] {
            let opcode = if len == 5 {
                OpCode::Text
            } else {
                OpCode::Binary
            };
            let (head, n) = server_header(opcode, len);
            assert_eq!(&head[..n], golden);
        }
        let mut out = vec![0xa5; 0];
        emit_client_frame(
            &mut out,
            true,
            OpCode::Text,
            [0x37, 0xfa, 0x21, 0x3d],
            b"Hello",
        );
        assert_eq!(out, MASKED_HELLO);
        assert_eq!(server_close(1009), [0x88, 0x02, 0x03, 0xf1]);
    }

    #[test]
    fn a_server_reads_the_masked_hello_only_as_text_refused() {
        let mut buf = MASKED_HELLO;
        assert_eq!(
            next_client_frame(&mut buf, false, 1024),
            Next::Refuse(Violation::Text)
        );
        let mut binary = MASKED_HELLO;
        binary[0] = 0x82;
        match next_client_frame(&mut binary, false, 1024) {
            Next::Frame {
                payload, consumed, ..
            } => assert_eq!((payload, consumed), (&b"Hello"[..], 11)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn refusals_are_decided_from_the_header() {
        let cases: [(&[u8], bool, Violation); 8] = [
            (&UNMASKED_HELLO[..2], false, Violation::Unmasked),
            (&[0xc2, 0x80], false, Violation::ReservedBits),
            (&[0x83, 0x80], false, Violation::ReservedOpcode),
            (&[0x09, 0x80], false, Violation::BadControl),
            (&[0x89, 0xfe, 0x00, 0x7e], false, Violation::BadControl),
            (&[0x80, 0x80], false, Violation::Continuation),
            (&[0x82, 0x80], true, Violation::Continuation),
            (&[0x82, 0xfe, 0x04, 0x01], false, Violation::TooBig),
        ];
        for (bytes, in_message, violation) in cases {
            let mut buf = bytes.to_vec();
            if buf[1] & 0x80 != 0 {
                buf.extend_from_slice(&[1, 2, 3, 4]);
            }
            assert_eq!(
                next_client_frame(&mut buf, in_message, 1024),
                Next::Refuse(violation),
                "{bytes:02x?}"
            );
        }
        let mut huge = [0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(
            next_client_frame(&mut huge, false, 1024),
            Next::Refuse(Violation::Length)
        );
        let mut one_byte_close = [0x88, 0x81, 1, 2, 3, 4, 0x55];
        assert_eq!(
            next_client_frame(&mut one_byte_close, false, 1024),
            Next::Refuse(Violation::BadClose)
        );
    }

    #[test]
    fn a_partial_frame_needs_more_and_is_left_masked() {
        let mut frame = Vec::new();
        emit_client_frame(&mut frame, true, OpCode::Binary, [1, 2, 3, 4], &[9u8; 300]);
        for cut in 0..frame.len() {
            let mut part = frame[..cut].to_vec();
            let before = part.clone();
            assert_eq!(next_client_frame(&mut part, false, 1024), Next::NeedMore);
            assert_eq!(part, before);
        }
    }

    quickcheck! {
        fn round_trip(payload: Vec<u8>, key: u32, fin: bool, ping: bool) -> bool {
            let opcode = if ping { OpCode::Ping } else { OpCode::Binary };
            let payload = if ping { &payload[..payload.len().min(125)] } else { &payload[..] };
            let fin = fin || ping;
            let mut buf = Vec::new();
            emit_client_frame(&mut buf, fin, opcode, key.to_be_bytes(), payload);
            buf.extend_from_slice(b"next");
            let total = buf.len();
            match next_client_frame(&mut buf, false, 1 << 20) {
                Next::Frame { header, payload: got, consumed } => {
                    header.fin == fin && header.opcode == opcode && got == payload
                        && consumed == total - 4
                }
                _ => false,
            }
        }

        fn server_frames_round_trip(payload: Vec<u8>) -> bool {
            let (head, n) = server_header(OpCode::Binary, payload.len());
            let mut buf = head[..n].to_vec();
            buf.extend_from_slice(&payload);
            match next_server_frame(&buf) {
                Ok(Some((header, range, end))) => {
                    header.opcode == OpCode::Binary && buf[range] == payload[..] && end == buf.len()
                }
                _ => false,
            }
        }

        fn arbitrary_bytes_never_panic(bytes: Vec<u8>, in_message: bool, max: u16) -> bool {
            let mut buf = bytes.clone();
            let _ = next_client_frame(&mut buf, in_message, usize::from(max));
            let _ = next_server_frame(&bytes);
            true
        }

        fn masking_twice_restores(bytes: Vec<u8>, key: u32) -> bool {
            let mut buf = bytes.clone();
            apply_mask(&mut buf, key.to_le_bytes());
            apply_mask(&mut buf, key.to_le_bytes());
            buf == bytes
        }
    }
}
