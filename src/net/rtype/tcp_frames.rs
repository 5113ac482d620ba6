//! Cutting TCP lobby frames out of a byte stream with a fixed, tiny per-connection state.
//!
//! Bytes are read into one buffer shared by every connection; complete frames are viewed in
//! place there (no copy, no allocation). Only the tail of a frame split across two reads is
//! kept, in a [`FrameReader`]'s inline array of [`PARTIAL_CAP`] bytes (the largest client
//! frame), and a declared payload longer than any client message is skipped by counting,
//! never buffered (`docs/protocols/tcp-lobby.md`, "Reading frames"). The cutting itself is the
//! shared reader of `net::io::frames`, over the TCP lobby's header ([`ClientFrames`]).

use crate::net::io::frames::{self, Cut, InlineTail, LengthRule};
use crate::wire::tcp_lobby::{next_frame, Frame, Next, HEADER_LEN, MAX_CLIENT_PAYLOAD};

/// The largest client frame: header plus CONNECT_REQ's 32-byte payload.
pub const PARTIAL_CAP: usize = HEADER_LEN + MAX_CLIENT_PAYLOAD;

/// What the stream yields, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A complete frame (header checked against [`MAX_CLIENT_PAYLOAD`]).
    Frame(Frame<&'a [u8]>),
    /// A header declaring a longer payload; the payload is being skipped.
    Oversized {
        /// The type byte.
        packet_type: u8,
        /// The declared payload length.
        declared: usize,
    },
}

/// The TCP lobby's length rule: a 3-byte header (type, payload length u16 LE), client
/// payloads of at most [`MAX_CLIENT_PAYLOAD`] bytes (as `wire::tcp_lobby::next_frame` decides).
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientFrames;

/// A header [`ClientFrames`] refuses: its type byte and declared payload length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Oversized {
    packet_type: u8,
    declared: usize,
}

impl LengthRule for ClientFrames {
    const HEADER_LEN: usize = HEADER_LEN;
    type TooLong = Oversized;

    fn frame_len(&self, header: &[u8]) -> Result<usize, Oversized> {
        match next_frame(header) {
            Next::Oversized {
                packet_type,
                declared,
            } => Err(Oversized {
                packet_type,
                declared,
            }),
            _ => Ok(Frame::new_unchecked(header).frame_len()),
        }
    }
}

/// Per-connection framing state: a partial frame and a count of bytes to skip.
#[derive(Debug, Clone, Copy, Default)]
pub struct FrameReader {
    frames: frames::FrameReader<InlineTail<PARTIAL_CAP>>,
    /// Bytes still to skip, a u16 kept as two little-endian bytes: byte-aligned, the reader
    /// is 39 bytes, which keeps an idle connection's slab entry within its size.
    skip: [u8; 2],
}

impl FrameReader {
    /// Feeds `data` and calls `on_piece` for every piece it completes, in stream order.
    /// Stops early (and returns false) when `on_piece` returns false; the rest of `data` is
    /// then dropped (the connection is closing).
    pub fn push(&mut self, data: &[u8], on_piece: &mut impl FnMut(Piece<'_>) -> bool) -> bool {
        let mut at = 0;
        loop {
            let skip = self.skipping();
            let skipped = (self.frames).skip(&ClientFrames, skip, data, &mut at, &mut ());
            // At most `skip`, a u16.
            self.set_skip((skip - skipped) as u16);
            let piece = match self.frames.next(&ClientFrames, data, &mut at, &mut ()) {
                Cut::Frame(bytes) => Piece::Frame(Frame::new_unchecked(bytes)),
                Cut::TooLong(Oversized {
                    packet_type,
                    declared,
                }) => {
                    self.set_skip(u16::try_from(declared).unwrap_or(u16::MAX));
                    Piece::Oversized {
                        packet_type,
                        declared,
                    }
                }
                // Less than one whole frame is left, and a whole frame fits the array: the
                // array never refuses.
                Cut::NeedMore | Cut::NoRoom => return true,
            };
            if !on_piece(piece) {
                return false;
            }
        }
    }

    /// Bytes of an oversized payload still to be skipped (they complete no frame).
    pub fn skipping(&self) -> usize {
        usize::from(u16::from_le_bytes(self.skip))
    }

    fn set_skip(&mut self, skip: u16) {
        self.skip = skip.to_le_bytes();
    }

    /// Whether part of a frame or a skip is in progress.
    pub fn is_mid_frame(&self) -> bool {
        self.frames.kept_len(&ClientFrames) > 0 || self.skipping() > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Eq)]
    enum Owned {
        Frame(Vec<u8>),
        Oversized(u8, usize),
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

    #[test]
    fn whole_stream_at_once() {
        assert_eq!(pieces(&[&stream()]), expected());
    }

    #[test]
    fn every_single_split_point_and_byte_by_byte() {
        let s = stream();
        for at in 0..=s.len() {
            assert_eq!(pieces(&[&s[..at], &s[at..]]), expected(), "split at {at}");
        }
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(pieces(&bytes), expected());
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
        assert!(std::mem::size_of::<FrameReader>() <= 40);
    }

    /// Pieces completed by feeding `reader` what the TCP lobby driver reads for a budget of
    /// `k` pieces: what is left of a skip plus three bytes per piece, at most `bytes`.
    fn pieces_of_one_read(reader: &mut FrameReader, bytes: &[u8], k: usize) -> usize {
        let n = (reader.skipping() + 3 * k).min(bytes.len());
        let mut pieces = 0;
        reader.push(&bytes[..n], &mut |_| {
            pieces += 1;
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
