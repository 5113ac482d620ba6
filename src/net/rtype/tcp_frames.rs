//! Cutting TCP lobby frames out of a byte stream with a fixed, tiny per-connection state, in
//! either dialect the port speaks.
//!
//! Bytes are read into one buffer shared by every connection; complete frames are viewed in
//! place there (no copy, no allocation). Only the tail of a frame split across two reads is
//! kept, in a [`FrameReader`]'s inline array of [`PARTIAL_CAP`] bytes (the largest client
//! frame of either dialect), and a declared length longer than any client message is skipped
//! by counting, never buffered (`docs/protocols/tcp-lobby.md`, "Reading frames";
//! `tcp-lobby-upstream.md`, "Reading frames"). The cutting itself is the shared reader of
//! `net::io::frames`, over the length rule of the connection's dialect ([`RfcFrames`] or
//! [`UpstreamFrames`]).
//!
//! A connection's first bytes (at most 5, kept in the same array) decide its dialect
//! (`crate::wire::tcp_upstream::sniff`): the RFC's 3-byte headers, or the upstream client's
//! `u32` length prefixes, announced once as [`Piece::Upstream`] before its first frame. A
//! stream fitting neither is read as the RFC's, which counts its frames as violations.

use crate::net::io::frames::{self, Cut, InlineTail, LengthRule, Tail};
use crate::wire::tcp_lobby::{self as rfc, Frame};
use crate::wire::tcp_upstream::{self as up, Dialect, Sniff};

/// The largest client frame of either dialect: the upstream length prefix and its 33-byte
/// CONNECT_REQ or CREATE_ROOM_REQ (37; the RFC's CONNECT_REQ is 35).
pub const PARTIAL_CAP: usize = up::LENGTH_LEN + up::MAX_CLIENT_LEN;

/// What the stream yields, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A complete RFC frame (header checked against [`rfc::MAX_CLIENT_PAYLOAD`]).
    Frame(Frame<&'a [u8]>),
    /// An RFC header declaring a longer payload; the payload is being skipped.
    Oversized {
        /// The type byte.
        packet_type: u8,
        /// The declared payload length.
        declared: usize,
    },
    /// The stream's first bytes are the upstream client's dialect; its frames follow.
    Upstream,
    /// A complete upstream-dialect frame (length checked against [`up::MAX_CLIENT_LEN`]).
    UpstreamFrame(up::Frame<&'a [u8]>),
    /// An upstream length of 0 or over the longest client frame; its bytes are being skipped.
    BadLength {
        /// The declared length.
        declared: usize,
    },
}

/// A header a dialect's rule refuses: the piece reporting it ([`Piece::Oversized`] or
/// [`Piece::BadLength`]) and how many bytes after the header are skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    piece: Piece<'static>,
    declared: usize,
}

/// The RFC's length rule: a 3-byte header (type, payload length u16 LE), client payloads of
/// at most [`rfc::MAX_CLIENT_PAYLOAD`] bytes (as `wire::tcp_lobby::next_frame` decides).
#[derive(Debug, Clone, Copy, Default)]
pub struct RfcFrames;

impl LengthRule for RfcFrames {
    const HEADER_LEN: usize = rfc::HEADER_LEN;
    type TooLong = Refused;

    fn frame_len(&self, header: &[u8]) -> Result<usize, Refused> {
        match rfc::next_frame(header) {
            rfc::Next::Oversized {
                packet_type,
                declared,
            } => Err(Refused {
                piece: Piece::Oversized {
                    packet_type,
                    declared,
                },
                declared,
            }),
            _ => Ok(Frame::new_unchecked(header).frame_len()),
        }
    }
}

/// The upstream client's length rule: a `u32` LE length prefix, lengths 1 to
/// [`up::MAX_CLIENT_LEN`] (as `wire::tcp_upstream::next_frame` decides).
#[derive(Debug, Clone, Copy, Default)]
pub struct UpstreamFrames;

impl LengthRule for UpstreamFrames {
    const HEADER_LEN: usize = up::LENGTH_LEN;
    type TooLong = Refused;

    fn frame_len(&self, header: &[u8]) -> Result<usize, Refused> {
        match up::next_frame(header) {
            up::Next::BadLength { declared } => Err(Refused {
                piece: Piece::BadLength { declared },
                declared,
            }),
            _ => Ok(up::Frame::new_unchecked(header).frame_len()),
        }
    }
}

/// A dialect's rule, and how its frames are handed out.
trait DialectRule: LengthRule<TooLong = Refused> {
    /// A whole frame the rule cut.
    fn piece(frame: &[u8]) -> Piece<'_>;
}

impl DialectRule for RfcFrames {
    fn piece(frame: &[u8]) -> Piece<'_> {
        Piece::Frame(Frame::new_unchecked(frame))
    }
}

impl DialectRule for UpstreamFrames {
    fn piece(frame: &[u8]) -> Piece<'_> {
        Piece::UpstreamFrame(up::Frame::new_unchecked(frame))
    }
}

/// How the stream is being cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// Its first bytes have not told the dialect yet.
    Sniffing,
    /// RFC R-Type-TCP-001 frames.
    Rfc,
    /// The upstream client's frames.
    Upstream,
}

/// Per-connection framing state: the dialect, a partial frame (or the first bytes) and a
/// count of bytes to skip.
#[derive(Debug, Clone, Copy)]
pub struct FrameReader {
    frames: frames::FrameReader<InlineTail<PARTIAL_CAP>>,
    framing: Framing,
    /// Bytes still to skip, a u32 kept as four little-endian bytes: byte-aligned, the reader
    /// is 44 bytes with no padding.
    skip: [u8; 4],
}

impl Default for FrameReader {
    fn default() -> Self {
        FrameReader {
            frames: frames::FrameReader::default(),
            framing: Framing::Sniffing,
            skip: [0; 4],
        }
    }
}

impl FrameReader {
    /// Feeds `data` and calls `on_piece` for every piece it completes, in stream order.
    /// Stops early (and returns false) when `on_piece` returns false; the rest of `data` is
    /// then dropped (the connection is closing).
    pub fn push(&mut self, mut data: &[u8], on_piece: &mut impl FnMut(Piece<'_>) -> bool) -> bool {
        if self.framing == Framing::Sniffing {
            let kept = self.frames.tail().bytes().len();
            let take = up::HEADER_LEN.saturating_sub(kept).min(data.len());
            // The first bytes are kept as the start of the stream; nothing was handed out
            // yet, so no rule is consulted. At most 5 bytes: the array has room.
            self.frames.keep(&RfcFrames, &data[..take], &mut 0, &mut ());
            data = &data[take..];
            match up::sniff(self.frames.tail().bytes()) {
                // Fewer than 5 bytes so far, all of `data` kept.
                Sniff::NeedMore => return true,
                Sniff::Dialect(Dialect::Upstream) => {
                    self.framing = Framing::Upstream;
                    if !on_piece(Piece::Upstream) {
                        return false;
                    }
                }
                Sniff::Dialect(Dialect::Rfc) | Sniff::Neither => self.framing = Framing::Rfc,
            }
        }
        match self.framing {
            Framing::Upstream => self.push_framed(&UpstreamFrames, data, on_piece),
            Framing::Rfc | Framing::Sniffing => self.push_framed(&RfcFrames, data, on_piece),
        }
    }

    /// Cuts the kept bytes followed by `data` with the dialect's `rule`.
    fn push_framed<R: DialectRule>(
        &mut self,
        rule: &R,
        data: &[u8],
        on_piece: &mut impl FnMut(Piece<'_>) -> bool,
    ) -> bool {
        let mut at = 0;
        loop {
            let skip = self.skipping();
            let skipped = self.frames.skip(rule, skip, data, &mut at, &mut ());
            // At most `skip`, a u32.
            self.set_skip((skip - skipped) as u32);
            let piece = match self.frames.next(rule, data, &mut at, &mut ()) {
                Cut::Frame(bytes) => R::piece(bytes),
                Cut::TooLong(Refused { piece, declared }) => {
                    self.set_skip(u32::try_from(declared).unwrap_or(u32::MAX));
                    piece
                }
                // Less than one whole frame is left, and a whole frame of either dialect fits
                // the array: the array never refuses.
                Cut::NeedMore | Cut::NoRoom => return true,
            };
            if !on_piece(piece) {
                return false;
            }
        }
    }

    /// Bytes of an oversized payload still to be skipped (they complete no frame).
    pub fn skipping(&self) -> usize {
        usize::try_from(u32::from_le_bytes(self.skip)).unwrap_or(usize::MAX)
    }

    fn set_skip(&mut self, skip: u32) {
        self.skip = skip.to_le_bytes();
    }

    /// Whether part of a frame (or of the first bytes) or a skip is in progress.
    pub fn is_mid_frame(&self) -> bool {
        let kept = match self.framing {
            Framing::Upstream => self.frames.kept_len(&UpstreamFrames),
            Framing::Rfc | Framing::Sniffing => self.frames.kept_len(&RfcFrames),
        };
        kept > 0 || self.skipping() > 0
    }

    /// Whether the stream speaks the upstream client's dialect.
    pub fn is_upstream(&self) -> bool {
        self.framing == Framing::Upstream
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Eq)]
    enum Owned {
        Frame(Vec<u8>),
        Oversized(u8, usize),
        Upstream,
        UpstreamFrame(Vec<u8>),
        BadLength(usize),
    }

    fn pieces(chunks: &[&[u8]]) -> Vec<Owned> {
        let mut reader = FrameReader::default();
        let mut out = Vec::new();
        for chunk in chunks {
            reader.push(chunk, &mut |piece| {
                out.push(match piece {
                    Piece::Frame(frame) => Owned::Frame(frame.into_inner().to_vec()),
                    Piece::Oversized {
                        packet_type,
                        declared,
                    } => Owned::Oversized(packet_type, declared),
                    Piece::Upstream => Owned::Upstream,
                    Piece::UpstreamFrame(frame) => {
                        Owned::UpstreamFrame(frame.into_inner().to_vec())
                    }
                    Piece::BadLength { declared } => Owned::BadLength(declared),
                });
                true
            });
        }
        out
    }

    fn stream() -> Vec<u8> {
        let mut bytes = vec![0x10, 0x20, 0x00];
        bytes.extend_from_slice(b"Alice");
        bytes.resize(35, 0);
        bytes.extend_from_slice(&[0x13, 0x01, 0x00, 0x01]); // READY_REQ 1
        bytes.extend_from_slice(&[0x42, 0x00, 0x01]); // unknown type, 256-byte payload
        bytes.extend(std::iter::repeat(0xAB).take(256));
        bytes.extend_from_slice(&[0x15, 0x00, 0x00]); // START_REQ
        bytes.extend_from_slice(&[0x99, 0x05, 0x00, 1, 2, 3, 4, 5]); // unknown, small
        bytes
    }

    fn expected() -> Vec<Owned> {
        let s = stream();
        vec![
            Owned::Frame(s[..35].to_vec()),
            Owned::Frame(s[35..39].to_vec()),
            Owned::Oversized(0x42, 256),
            Owned::Frame(vec![0x15, 0, 0]),
            Owned::Frame(vec![0x99, 0x05, 0x00, 1, 2, 3, 4, 5]),
        ]
    }

    /// The upstream client's session: LIST, a length of 0, CREATE, a 2000-byte body skipped,
    /// JOIN.
    fn upstream_stream() -> Vec<u8> {
        let mut bytes = vec![0x01, 0, 0, 0, 0x01];
        bytes.extend_from_slice(&[0, 0, 0, 0]);
        bytes.extend_from_slice(&[0x21, 0, 0, 0, 0x03]);
        bytes.extend_from_slice(b"probe");
        bytes.resize(bytes.len() + 27, 0);
        bytes.extend_from_slice(&2000u32.to_le_bytes());
        bytes.extend(std::iter::repeat(0x05).take(2000));
        bytes.extend_from_slice(&[0x05, 0, 0, 0, 0x05, 1, 0, 0, 0]);
        bytes
    }

    fn upstream_expected() -> Vec<Owned> {
        let s = upstream_stream();
        vec![
            Owned::Upstream,
            Owned::UpstreamFrame(s[..5].to_vec()),
            Owned::BadLength(0),
            Owned::UpstreamFrame(s[9..46].to_vec()),
            Owned::BadLength(2000),
            Owned::UpstreamFrame(s[s.len() - 9..].to_vec()),
        ]
    }

    #[test]
    fn whole_stream_at_once() {
        assert_eq!(pieces(&[&stream()]), expected());
        assert_eq!(pieces(&[&upstream_stream()]), upstream_expected());
    }

    #[test]
    fn every_single_split_point_and_byte_by_byte() {
        for (s, expected) in [
            (stream(), expected()),
            (upstream_stream(), upstream_expected()),
        ] {
            for at in 0..=s.len() {
                assert_eq!(pieces(&[&s[..at], &s[at..]]), expected, "split at {at}");
            }
            let bytes: Vec<&[u8]> = s.chunks(1).collect();
            assert_eq!(pieces(&bytes), expected);
        }
    }

    #[test]
    fn a_stream_of_neither_dialect_is_read_as_the_rfc() {
        // Byte 0 is no RFC type and no upstream length: RFC frames of unknown types.
        assert_eq!(
            pieces(&[&[0x02, 0x00, 0x00, 0x15, 0x00, 0x00]]),
            vec![
                Owned::Frame(vec![0x02, 0, 0]),
                Owned::Frame(vec![0x15, 0, 0])
            ]
        );
        let mut reader = FrameReader::default();
        reader.push(&[0x10], &mut |_| true);
        assert!(!reader.is_upstream());
        let mut reader = FrameReader::default();
        reader.push(&[0x01, 0, 0, 0], &mut |_| panic!("undecided"));
        assert!(reader.is_mid_frame() && !reader.is_upstream());
        reader.push(&[0x01], &mut |_| true);
        assert!(reader.is_upstream() && !reader.is_mid_frame());
    }

    #[test]
    fn stops_when_asked() {
        let mut reader = FrameReader::default();
        let mut seen = 0;
        let go = reader.push(&stream(), &mut |_| {
            seen += 1;
            seen < 2
        });
        assert!(!go);
        assert_eq!(seen, 2);
    }

    #[test]
    fn largest_skip_is_counted_not_buffered() {
        let mut reader = FrameReader::default();
        let mut seen = Vec::new();
        reader.push(&[0x10, 0xFF, 0xFF], &mut |p| {
            seen.push(matches!(
                p,
                Piece::Oversized {
                    declared: 65535,
                    ..
                }
            ));
            true
        });
        let junk = vec![0u8; 65535];
        reader.push(&junk, &mut |_| panic!("junk parsed"));
        assert!(!reader.is_mid_frame());
        reader.push(&[0x15, 0, 0], &mut |p| {
            seen.push(matches!(p, Piece::Frame(_)));
            true
        });
        assert_eq!(seen, vec![true, true]);
        assert!(std::mem::size_of::<FrameReader>() <= 44);
    }

    /// Pieces completed by feeding `reader` what the TCP lobby driver reads for a budget of
    /// `k` pieces: what is left of a skip plus three bytes per piece, at most `bytes`.
    fn pieces_of_one_read(reader: &mut FrameReader, bytes: &[u8], k: usize) -> usize {
        let n = (reader.skipping() + 3 * k).min(bytes.len());
        let mut pieces = 0;
        // The dialect's announcement is no piece of the stream: it comes once, with no bytes.
        reader.push(&bytes[..n], &mut |piece| {
            pieces += usize::from(piece != Piece::Upstream);
            true
        });
        pieces
    }

    #[test]
    fn three_bytes_per_allowed_piece_never_complete_more_pieces() {
        // The worst case: 3-byte frames, the first one split so a single byte completes it.
        let starts: Vec<u8> = std::iter::repeat([0x15, 0, 0])
            .take(100)
            .flatten()
            .collect();
        for k in 1..=64 {
            let mut reader = FrameReader::default();
            reader.push(&starts[..2], &mut |_| true);
            assert_eq!(
                pieces_of_one_read(&mut reader, &starts[2..], k),
                k,
                "k = {k}"
            );
        }
        // A skip in progress is read past without a piece.
        let mut reader = FrameReader::default();
        reader.push(&[0x10, 0xE8, 0x03], &mut |_| true);
        let mut bytes = vec![0xAB; 1000];
        bytes.extend_from_slice(&starts);
        assert_eq!(pieces_of_one_read(&mut reader, &bytes, 5), 5);
    }

    quickcheck::quickcheck! {
        fn a_read_sized_for_k_pieces_completes_at_most_k(
            before: Vec<u8>,
            bytes: Vec<u8>,
            k: u8
        ) -> bool {
            let mut reader = FrameReader::default();
            reader.push(&before, &mut |_| true);
            let k = usize::from(k % 64) + 1;
            pieces_of_one_read(&mut reader, &bytes, k) <= k
        }

        fn arbitrary_splits_parse_the_same(bytes: Vec<u8>, cuts: Vec<usize>) -> bool {
            let whole = pieces(&[&bytes]);
            let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut at = 0;
            for point in points {
                chunks.push(&bytes[at..point]);
                at = point;
            }
            chunks.push(&bytes[at..]);
            pieces(&chunks) == whole
        }
    }
}
