//! Cutting TCP lobby frames out of a byte stream with a fixed, tiny per-connection state, in
//! either dialect the port speaks.
//!
//! Bytes are read into one buffer shared by every connection; complete frames are viewed in
//! place there (no copy, no allocation). Only the tail of a frame split across two reads is
//! kept, in a [`FrameReader`]'s inline array of [`PARTIAL_CAP`] bytes (the largest client
//! frame of either dialect), and a declared length longer than any client message is skipped
//! by counting, never buffered (`docs/protocols/tcp-lobby.md`, "Reading frames";
//! `tcp-lobby-upstream.md`, "Reading frames").
//!
//! A connection's first bytes (at most 5, kept in the same array) decide its dialect
//! (`crate::wire::tcp_upstream::sniff`): the RFC's 3-byte headers, or the upstream client's
//! `u32` length prefixes, announced once as [`Piece::Upstream`] before its first frame. A
//! stream fitting neither is read as the RFC's, which counts its frames as violations.

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

/// What the front of a buffer holds, in either dialect.
enum Cut<'a> {
    /// A piece that occupies `consumed` bytes.
    Whole(Piece<'a>, usize),
    /// A header of `header` bytes whose `declared` bytes that follow are to be skipped.
    Skip(Piece<'a>, usize, usize),
    /// Not enough bytes.
    NeedMore,
}

/// Per-connection framing state: the dialect, a partial frame and a count of bytes to skip.
#[derive(Debug, Clone, Copy)]
pub struct FrameReader {
    partial: [u8; PARTIAL_CAP],
    len: u8,
    framing: Framing,
    skip: u32,
}

impl Default for FrameReader {
    fn default() -> Self {
        FrameReader {
            partial: [0; PARTIAL_CAP],
            len: 0,
            framing: Framing::Sniffing,
            skip: 0,
        }
    }
}

impl FrameReader {
    /// Feeds `data` and calls `on_piece` for every piece it completes, in stream order.
    /// Stops early (and returns false) when `on_piece` returns false; the rest of `data` is
    /// then dropped (the connection is closing).
    pub fn push(&mut self, mut data: &[u8], on_piece: &mut impl FnMut(Piece<'_>) -> bool) -> bool {
        if self.framing == Framing::Sniffing {
            let len = usize::from(self.len);
            let take = (up::HEADER_LEN - len).min(data.len());
            self.partial[len..len + take].copy_from_slice(&data[..take]);
            // At most 5.
            self.len += take as u8;
            data = &data[take..];
            match up::sniff(&self.partial[..usize::from(self.len)]) {
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
            // The sniffed bytes begin the stream: cut them as its first bytes.
            let head = self.partial;
            let n = usize::from(self.len);
            self.len = 0;
            if !self.push_framed(&head[..n], on_piece) {
                return false;
            }
        }
        self.push_framed(data, on_piece)
    }

    /// The front of `buf` in the connection's dialect.
    fn cut<'a>(&self, buf: &'a [u8]) -> Cut<'a> {
        match self.framing {
            Framing::Upstream => match up::next_frame(buf) {
                up::Next::Frame { frame, consumed } => {
                    Cut::Whole(Piece::UpstreamFrame(frame), consumed)
                }
                up::Next::BadLength { declared } => {
                    Cut::Skip(Piece::BadLength { declared }, up::LENGTH_LEN, declared)
                }
                up::Next::NeedMore => Cut::NeedMore,
            },
            Framing::Rfc | Framing::Sniffing => match rfc::next_frame(buf) {
                rfc::Next::Frame { frame, consumed } => Cut::Whole(Piece::Frame(frame), consumed),
                rfc::Next::Oversized {
                    packet_type,
                    declared,
                } => Cut::Skip(
                    Piece::Oversized {
                        packet_type,
                        declared,
                    },
                    rfc::HEADER_LEN,
                    declared,
                ),
                rfc::Next::NeedMore => Cut::NeedMore,
            },
        }
    }

    fn push_framed(
        &mut self,
        mut data: &[u8],
        on_piece: &mut impl FnMut(Piece<'_>) -> bool,
    ) -> bool {
        loop {
            if self.skip > 0 {
                let n = usize::try_from(self.skip)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                // n <= skip, a u32.
                self.skip -= n as u32;
                data = &data[n..];
            }
            if data.is_empty() {
                return true;
            }
            if self.len > 0 {
                let len = usize::from(self.len);
                let take = self.missing().min(data.len());
                self.partial[len..len + take].copy_from_slice(&data[..take]);
                self.len += take as u8;
                data = &data[take..];
                let partial = self.partial;
                match self.cut(&partial[..usize::from(self.len)]) {
                    Cut::NeedMore => continue,
                    Cut::Whole(piece, _) => {
                        self.len = 0;
                        if !on_piece(piece) {
                            return false;
                        }
                    }
                    Cut::Skip(piece, _, declared) => {
                        self.len = 0;
                        self.skip = u32::try_from(declared).unwrap_or(u32::MAX);
                        if !on_piece(piece) {
                            return false;
                        }
                    }
                }
                continue;
            }
            match self.cut(data) {
                Cut::Whole(piece, consumed) => {
                    if !on_piece(piece) {
                        return false;
                    }
                    data = &data[consumed..];
                }
                Cut::Skip(piece, header, declared) => {
                    data = &data[header..];
                    self.skip = u32::try_from(declared).unwrap_or(u32::MAX);
                    if !on_piece(piece) {
                        return false;
                    }
                }
                Cut::NeedMore => {
                    // Less than one whole frame is left, and a whole frame fits the array.
                    let n = data.len().min(PARTIAL_CAP);
                    self.partial[..n].copy_from_slice(&data[..n]);
                    self.len = n as u8;
                    return true;
                }
            }
        }
    }

    /// Bytes still needed to complete the partial frame (its header first).
    fn missing(&self) -> usize {
        let len = usize::from(self.len);
        match self.framing {
            Framing::Upstream => {
                if len < up::LENGTH_LEN {
                    return up::LENGTH_LEN - len;
                }
                let [l0, l1, l2, l3, ..] = self.partial;
                let declared =
                    usize::try_from(u32::from_le_bytes([l0, l1, l2, l3])).unwrap_or(usize::MAX);
                (up::LENGTH_LEN + declared.min(up::MAX_CLIENT_LEN)).saturating_sub(len)
            }
            Framing::Rfc | Framing::Sniffing => {
                if len < rfc::HEADER_LEN {
                    return rfc::HEADER_LEN - len;
                }
                let declared = usize::from(u16::from_le_bytes([self.partial[1], self.partial[2]]));
                (rfc::HEADER_LEN + declared.min(rfc::MAX_CLIENT_PAYLOAD)).saturating_sub(len)
            }
        }
    }

    /// Bytes of an oversized payload still to be skipped (they complete no frame).
    pub fn skipping(&self) -> usize {
        usize::try_from(self.skip).unwrap_or(usize::MAX)
    }

    /// Whether part of a frame (or of the first bytes) or a skip is in progress.
    pub fn is_mid_frame(&self) -> bool {
        self.len > 0 || self.skip > 0
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
