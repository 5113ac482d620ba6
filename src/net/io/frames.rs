//! Cutting length-prefixed frames out of a TCP byte stream, for the front ends whose frames
//! declare their length in a fixed header: the R-Type TCP lobby (`net::rtype::tcp_frames`)
//! and the general lobby (`net::general`). Warzone's legacy stream has no length prefix; its
//! core cuts it.
//!
//! A front end reads into one buffer shared by its connections, and a frame wholly inside
//! that buffer is handed out in place: no copy, no allocation. Only bytes that must outlive
//! the read (the start of a frame split across reads, or what a connection over its frame
//! budget left unserved) are kept, per connection, in a [`Tail`]: a small inline array
//! ([`InlineTail`]) where the largest frame is small, or the front end's counted buffer
//! ([`crate::net::io::buffers::PartialFrame`]), which grows only as bytes arrive and counts
//! against its [`crate::net::io::buffers::MemoryBudget`]. Completing a split frame takes from
//! the read only the bytes it misses; the frames after it are again cut in place.
//!
//! The protocol comes in as a [`LengthRule`]: its header's size, and the whole frame's length
//! from the header bytes or a typed error for a header that declares too much. The rule is
//! passed to each call, so a stream whose first bytes choose its protocol (the TCP lobby's two
//! dialects) keeps them here with [`FrameReader::keep`] and is then read with the rule they
//! chose, the same one from its first frame on. That is
//! decided from the header alone, so a frame over the limit is never waited for nor kept;
//! what then happens to its payload is the front end's choice (the TCP lobby skips it by
//! counting, the general lobby answers and closes). No socket, no clock, no protocol here.

/// How long a frame is, from its header: the one thing a protocol tells [`FrameReader`].
pub trait LengthRule {
    /// Bytes of the header that say how long the frame is (at least one).
    const HEADER_LEN: usize;
    /// What a header declaring too long a frame reports (the protocol's typed error).
    type TooLong: Copy;
    /// The whole frame's length, header included, from exactly its first
    /// [`Self::HEADER_LEN`] bytes; or why the frame is refused. A length shorter than the
    /// header is taken as the header alone.
    fn frame_len(&self, header: &[u8]) -> Result<usize, Self::TooLong>;
}

/// Where a connection keeps bytes between reads: the start of a frame, or frames its budget
/// left unserved. Growing may be refused (an array is full, a memory budget is spent); then
/// nothing changes.
pub trait Tail {
    /// What growing the tail is counted against: `()` for an array, the front end's memory
    /// budget for a heap buffer.
    type Budget;
    /// The bytes kept, oldest first.
    fn bytes(&self) -> &[u8];
    /// Appends `bytes`; false (nothing appended) when there is no room for them.
    fn extend(&mut self, bytes: &[u8], budget: &mut Self::Budget) -> bool;
    /// Drops the first `n` bytes (all of them when fewer are kept).
    fn consume(&mut self, n: usize, budget: &mut Self::Budget);
}

/// A [`Tail`] of at most `N` bytes (`N` < 256) inside the connection itself: no heap, a
/// fixed size, for protocols whose largest frame is small.
#[derive(Debug, Clone, Copy)]
pub struct InlineTail<const N: usize> {
    buf: [u8; N],
    len: u8,
}

impl<const N: usize> InlineTail<N> {
    /// `len` is a `u8`.
    const FITS: () = assert!(N <= u8::MAX as usize, "an InlineTail holds under 256 bytes");
}

impl<const N: usize> Default for InlineTail<N> {
    fn default() -> Self {
        let () = Self::FITS;
        InlineTail {
            buf: [0; N],
            len: 0,
        }
    }
}

impl<const N: usize> Tail for InlineTail<N> {
    type Budget = ();

    fn bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }

    fn extend(&mut self, bytes: &[u8], _: &mut ()) -> bool {
        let len = usize::from(self.len);
        let Some(room) = self.buf.get_mut(len..len + bytes.len()) else {
            return false;
        };
        room.copy_from_slice(bytes);
        // At most N < 256.
        self.len = (len + bytes.len()) as u8;
        true
    }

    fn consume(&mut self, n: usize, _: &mut ()) {
        let len = usize::from(self.len);
        let n = n.min(len);
        self.buf.copy_within(n..len, 0);
        self.len = (len - n) as u8;
    }
}

/// What [`FrameReader::next`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut<'a, E> {
    /// A whole frame, header included: in place in the read when it lies wholly inside it,
    /// else from the kept bytes (dropped from them at the next call or at
    /// [`FrameReader::release`]).
    Frame(&'a [u8]),
    /// A header declaring too long a frame: the header is consumed, its payload is not (the
    /// caller skips it with [`FrameReader::skip`], or stops reading).
    TooLong(E),
    /// The read is used up: nothing is left of it, or what is left (less than one frame) is
    /// kept for the next read.
    NeedMore,
    /// Bytes that must be kept do not fit the tail (its budget is spent): nothing was taken
    /// from the read. The caller makes room (or gives up on the connection) and calls again.
    NoRoom,
}

/// A connection's framing state: the bytes kept between reads, and whether the first frame
/// among them was handed out. Reading goes through a cursor `at` into the caller's read
/// buffer, so the caller may use the rest of its state between two frames.
#[derive(Debug, Clone, Copy, Default)]
pub struct FrameReader<T> {
    kept: T,
    /// The first frame in `kept` was handed out and is dropped at the next call.
    served: bool,
}

impl<T: Tail> FrameReader<T> {
    /// The next frame of the stream made of the kept bytes followed by `data[*at..]`,
    /// advancing `*at` past what it takes from `data`. Frames come in stream order, each
    /// once, whatever the split of the stream into reads.
    pub fn next<'a, R: LengthRule>(
        &'a mut self,
        rule: &R,
        data: &'a [u8],
        at: &mut usize,
        budget: &mut T::Budget,
    ) -> Cut<'a, R::TooLong> {
        self.release(rule, budget);
        let header = R::HEADER_LEN;
        let start = (*at).min(data.len());
        loop {
            let kept = self.kept.bytes().len();
            if kept == 0 {
                // Cut in place.
                let rest = &data[start..];
                if let Some(head) = rest.get(..header) {
                    match rule.frame_len(head) {
                        Err(too_long) => {
                            *at = start + header;
                            return Cut::TooLong(too_long);
                        }
                        Ok(len) => {
                            if let Some(frame) = rest.get(..len.max(header)) {
                                *at = start + frame.len();
                                return Cut::Frame(frame);
                            }
                        }
                    }
                }
                // Less than one frame is left: it waits for the next read.
                if !rest.is_empty() {
                    if !self.kept.extend(rest, budget) {
                        return Cut::NoRoom;
                    }
                    *at = data.len();
                }
                return Cut::NeedMore;
            }
            // The kept bytes start a frame: the header first, then the rest of the frame.
            let need = match self.kept.bytes().get(..header) {
                None => header,
                Some(head) => match rule.frame_len(head) {
                    Ok(len) => len.max(header),
                    Err(too_long) => {
                        self.kept.consume(header, budget);
                        return Cut::TooLong(too_long);
                    }
                },
            };
            if kept >= need {
                self.served = true;
                return Cut::Frame(&self.kept.bytes()[..need]);
            }
            let from = (*at).min(data.len());
            let take = (need - kept).min(data.len() - from);
            if take == 0 {
                return Cut::NeedMore;
            }
            if !self.kept.extend(&data[from..from + take], budget) {
                return Cut::NoRoom;
            }
            *at = from + take;
        }
    }

    /// Keeps `data[*at..]` unread for later (a connection whose frame budget ran out, or the
    /// first bytes of a stream whose rule they decide), behind what is kept already; false
    /// (nothing kept) when it does not fit. `rule` only drops a frame handed out before:
    /// before the first frame any rule will do, and the stream may then be read with another.
    pub fn keep<R: LengthRule>(
        &mut self,
        rule: &R,
        data: &[u8],
        at: &mut usize,
        budget: &mut T::Budget,
    ) -> bool {
        self.release(rule, budget);
        let rest = data.get(*at..).unwrap_or(&[]);
        if !rest.is_empty() && !self.kept.extend(rest, budget) {
            return false;
        }
        *at = data.len();
        true
    }

    /// Drops up to `n` bytes of the stream (the kept bytes first, then `data[*at..]`, as
    /// [`Self::next`] would read them) and returns how many it dropped: the payload of a
    /// frame refused as too long, discarded by counting and never kept.
    pub fn skip<R: LengthRule>(
        &mut self,
        rule: &R,
        n: usize,
        data: &[u8],
        at: &mut usize,
        budget: &mut T::Budget,
    ) -> usize {
        self.release(rule, budget);
        let from_kept = n.min(self.kept.bytes().len());
        self.kept.consume(from_kept, budget);
        let from = (*at).min(data.len());
        let from_data = (n - from_kept).min(data.len() - from);
        *at = from + from_data;
        from_kept + from_data
    }

    /// Drops the frame last handed out from the kept bytes, if any (the next call would): a
    /// counted tail gives its memory back at once.
    pub fn release<R: LengthRule>(&mut self, rule: &R, budget: &mut T::Budget) {
        if !std::mem::take(&mut self.served) {
            return;
        }
        let header = R::HEADER_LEN;
        let len = match self.kept.bytes().get(..header).map(|h| rule.frame_len(h)) {
            Some(Ok(len)) => len.max(header),
            // Not a frame `next` handed out (the tail was cleared meanwhile): nothing to drop.
            _ => return,
        };
        self.kept.consume(len, budget);
    }

    /// Drops everything kept (the connection is not read again).
    pub fn clear(&mut self, budget: &mut T::Budget) {
        self.served = false;
        let len = self.kept.bytes().len();
        self.kept.consume(len, budget);
    }

    /// Bytes kept and not yet handed out.
    pub fn kept_len<R: LengthRule>(&self, rule: &R) -> usize {
        let kept = self.kept.bytes();
        if !self.served {
            return kept.len();
        }
        let header = R::HEADER_LEN;
        match kept.get(..header).map(|h| rule.frame_len(h)) {
            Some(Ok(len)) => kept.len().saturating_sub(len.max(header)),
            _ => kept.len(),
        }
    }

    /// The tail itself (what it holds, for a front end's memory accounting).
    pub fn tail(&self) -> &T {
        &self.kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::io::buffers::{MemoryBudget, PartialFrame};

    /// A toy protocol: a 2-byte header (kind, payload length), payloads up to `max`.
    struct Toy {
        max: u8,
    }

    impl LengthRule for Toy {
        const HEADER_LEN: usize = 2;
        type TooLong = (u8, u8);
        fn frame_len(&self, header: &[u8]) -> Result<usize, (u8, u8)> {
            if header[1] > self.max {
                return Err((header[0], header[1]));
            }
            Ok(2 + usize::from(header[1]))
        }
    }

    const TOY: Toy = Toy { max: 20 };

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Owned {
        Frame(Vec<u8>),
        TooLong(u8, u8),
    }

    /// A tail of either kind, under test.
    trait Fresh: Tail + Sized {
        fn budget() -> Self::Budget;
        fn fresh() -> FrameReader<Self>;
    }

    impl Fresh for InlineTail<22> {
        fn budget() {}
        fn fresh() -> FrameReader<Self> {
            FrameReader::default()
        }
    }

    impl Fresh for PartialFrame {
        fn budget() -> MemoryBudget {
            MemoryBudget::new(1 << 20)
        }
        fn fresh() -> FrameReader<Self> {
            FrameReader::default()
        }
    }

    /// Everything `chunks` yield, read one after the other; a refused header's payload is
    /// skipped as the TCP lobby does. Every frame from a chunk wholly inside it must be a
    /// view of the chunk (zero-copy).
    fn cut_all<T: Fresh>(chunks: &[&[u8]]) -> Vec<Owned> {
        let mut reader = T::fresh();
        let mut budget = T::budget();
        let mut out = Vec::new();
        let mut skip = 0;
        for chunk in chunks {
            let mut at = 0;
            loop {
                skip -= reader.skip(&TOY, skip, chunk, &mut at, &mut budget);
                let before = at;
                match reader.next(&TOY, chunk, &mut at, &mut budget) {
                    Cut::Frame(frame) => {
                        // Taken whole from this read: it must be the read's own bytes.
                        if at - before == frame.len() {
                            assert!(std::ptr::eq(frame.as_ptr(), chunk[before..].as_ptr()));
                        }
                        out.push(Owned::Frame(frame.to_vec()));
                    }
                    Cut::TooLong((kind, len)) => {
                        out.push(Owned::TooLong(kind, len));
                        skip = usize::from(len);
                    }
                    Cut::NeedMore => break,
                    Cut::NoRoom => panic!("a tail of room for a frame refused one"),
                }
            }
            assert_eq!(at, chunk.len(), "a read is used up");
        }
        out
    }

    fn stream() -> Vec<u8> {
        let mut s = vec![1, 3, b'a', b'b', b'c']; // a frame
        s.extend_from_slice(&[2, 0]); // an empty one
        s.extend_from_slice(&[3, 200]); // too long: 200 bytes skipped
        s.extend(std::iter::repeat(0xEE).take(200));
        s.extend_from_slice(&[4, 20]); // the largest
        s.extend(1..=20);
        s.extend_from_slice(&[5, 1, 9]);
        s
    }

    fn expected() -> Vec<Owned> {
        let s = stream();
        vec![
            Owned::Frame(s[..5].to_vec()),
            Owned::Frame(vec![2, 0]),
            Owned::TooLong(3, 200),
            Owned::Frame(s[209..231].to_vec()),
            Owned::Frame(vec![5, 1, 9]),
        ]
    }

    fn every_split<T: Fresh>() {
        let s = stream();
        assert_eq!(cut_all::<T>(&[&s]), expected());
        for at in 0..=s.len() {
            assert_eq!(cut_all::<T>(&[&s[..at], &s[at..]]), expected(), "at {at}");
        }
        let bytes: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(cut_all::<T>(&bytes), expected(), "byte by byte");
    }

    #[test]
    fn every_split_point_and_byte_by_byte_inline() {
        every_split::<InlineTail<22>>();
    }

    #[test]
    fn every_split_point_and_byte_by_byte_counted() {
        every_split::<PartialFrame>();
    }

    #[test]
    fn a_too_long_header_is_refused_from_the_header_alone() {
        let mut reader = FrameReader::<InlineTail<22>>::default();
        let mut at = 0;
        // Split inside the header: kept, then refused once whole, and nothing kept.
        assert_eq!(reader.next(&TOY, &[7], &mut at, &mut ()), Cut::NeedMore);
        at = 0;
        assert_eq!(
            reader.next(&TOY, &[255, 1, 2], &mut at, &mut ()),
            Cut::TooLong((7, 255))
        );
        assert_eq!((at, reader.kept_len(&TOY)), (1, 0));
        assert_eq!(reader.skip(&TOY, 255, &[255, 1, 2], &mut at, &mut ()), 2);
        assert_eq!(at, 3);
    }

    #[test]
    fn a_frame_inside_the_read_is_not_copied_and_a_split_one_takes_only_what_it_misses() {
        let mut budget = MemoryBudget::new(1 << 20);
        let mut reader = FrameReader::<PartialFrame>::default();
        let first = [1, 2, b'x'];
        let mut at = 0;
        assert_eq!(
            reader.next(&TOY, &first, &mut at, &mut budget),
            Cut::NeedMore
        );
        assert_eq!(reader.kept_len(&TOY), 3);
        let second = [b'y', 6, 1, b'z', 6, 0];
        at = 0;
        assert_eq!(
            reader.next(&TOY, &second, &mut at, &mut budget),
            Cut::Frame(&[1, 2, b'x', b'y'][..])
        );
        assert_eq!(at, 1, "only the missing byte is copied");
        reader.release(&TOY, &mut budget);
        assert_eq!((reader.kept_len(&TOY), budget.held()), (0, 0));
        let Cut::Frame(frame) = reader.next(&TOY, &second, &mut at, &mut budget) else {
            panic!("the next frame is whole in the read");
        };
        assert!(std::ptr::eq(frame.as_ptr(), second[1..].as_ptr()));
        assert_eq!(
            reader.next(&TOY, &second, &mut at, &mut budget),
            Cut::Frame(&[6, 0][..])
        );
        assert_eq!(
            reader.next(&TOY, &second, &mut at, &mut budget),
            Cut::NeedMore
        );
    }

    #[test]
    fn kept_bytes_count_against_the_budget_and_grow_only_as_they_arrive() {
        struct Big;
        impl LengthRule for Big {
            const HEADER_LEN: usize = 4;
            type TooLong = ();
            fn frame_len(&self, header: &[u8]) -> Result<usize, ()> {
                let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
                Ok(4 + len as usize)
            }
        }
        let mut budget = MemoryBudget::new(64 * 1024);
        let mut reader = FrameReader::<PartialFrame>::default();
        // A header declaring a megabyte, then a kilobyte: about a kilobyte is held.
        let mut first = (1u32 << 20).to_le_bytes().to_vec();
        first.extend_from_slice(&[0; 1000]);
        let mut at = 0;
        assert_eq!(
            reader.next(&Big, &first, &mut at, &mut budget),
            Cut::NeedMore
        );
        assert_eq!(budget.held(), reader.tail().capacity());
        assert!(budget.held() < 2048, "{} held", budget.held());
        // More than the budget has room for: refused, nothing taken, nothing changed.
        let more = vec![0u8; 64 * 1024];
        at = 0;
        let held = budget.held();
        assert_eq!(reader.next(&Big, &more, &mut at, &mut budget), Cut::NoRoom);
        assert_eq!((at, budget.held(), reader.kept_len(&Big)), (0, held, 1004));
        // Cleared: everything given back.
        reader.clear(&mut budget);
        assert_eq!((budget.held(), reader.tail().capacity()), (0, 0));
    }

    #[test]
    fn bytes_kept_past_a_budget_are_served_first_then_the_next_read() {
        let mut budget = MemoryBudget::new(1 << 20);
        let mut reader = FrameReader::<PartialFrame>::default();
        let read = [1, 0, 2, 1, b'a', 3, 2, b'b'];
        let mut at = 0;
        assert_eq!(
            reader.next(&TOY, &read, &mut at, &mut budget),
            Cut::Frame(&[1, 0][..])
        );
        // The frame budget ran out: the rest of the read is kept.
        assert!(reader.keep(&TOY, &read, &mut at, &mut budget));
        assert_eq!((at, reader.kept_len(&TOY)), (read.len(), 6));
        assert_eq!(budget.held(), reader.tail().capacity());
        let next_read = [b'c', 4, 0];
        let mut at = 0;
        let mut seen = Vec::new();
        loop {
            match reader.next(&TOY, &next_read, &mut at, &mut budget) {
                Cut::Frame(frame) => seen.push(frame.to_vec()),
                Cut::NeedMore => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            seen,
            vec![vec![2, 1, b'a'], vec![3, 2, b'b', b'c'], vec![4, 0]]
        );
        assert_eq!((reader.kept_len(&TOY), budget.held()), (0, 0));
    }

    #[test]
    fn first_bytes_kept_before_the_rule_is_chosen_start_the_stream_it_reads() {
        // A rule with a 4-byte header: a u32 LE length of what follows.
        struct Wide;
        impl LengthRule for Wide {
            const HEADER_LEN: usize = 4;
            type TooLong = u32;
            fn frame_len(&self, header: &[u8]) -> Result<usize, u32> {
                let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
                if len > 8 {
                    return Err(len);
                }
                Ok(4 + len as usize)
            }
        }
        for (first, rest) in [
            (&[2u8, 0, 0][..], &[0, b'a', b'b', 9, 0][..]),
            (&[2, 0, 0, 0, b'a'], &[b'b', 9, 0]),
        ] {
            let mut reader = FrameReader::<InlineTail<12>>::default();
            // Kept under one rule, before any frame: nothing is consulted nor dropped.
            assert!(reader.keep(&TOY, first, &mut 0, &mut ()));
            assert_eq!(reader.kept_len(&Wide), first.len());
            let mut at = 0;
            assert_eq!(
                reader.next(&Wide, rest, &mut at, &mut ()),
                Cut::Frame(&[2, 0, 0, 0, b'a', b'b'][..])
            );
            assert_eq!(reader.next(&Wide, rest, &mut at, &mut ()), Cut::NeedMore);
            assert_eq!((at, reader.kept_len(&Wide)), (rest.len(), 2));
            assert_eq!(reader.tail().bytes(), [9, 0]);
            // A refused header among the kept bytes is consumed from them.
            let mut at = 0;
            assert_eq!(
                reader.next(&Wide, &[0, 0, 1], &mut at, &mut ()),
                Cut::TooLong(9)
            );
            assert_eq!(reader.skip(&Wide, 9, &[0, 0, 1], &mut at, &mut ()), 1);
        }
    }

    #[test]
    fn an_inline_tail_refuses_past_its_size_and_shifts_on_consume() {
        let mut tail = InlineTail::<4>::default();
        assert!(tail.extend(&[1, 2, 3], &mut ()));
        assert!(!tail.extend(&[4, 5], &mut ()));
        assert_eq!(tail.bytes(), [1, 2, 3]);
        tail.consume(1, &mut ());
        assert_eq!(tail.bytes(), [2, 3]);
        tail.consume(9, &mut ());
        assert!(tail.bytes().is_empty());
    }

    /// A stream of toy frames (payloads capped to the rule's limit, so none is refused).
    fn encode(frames: &[(u8, Vec<u8>)]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for (kind, payload) in frames {
            let payload = &payload[..payload.len().min(20)];
            bytes.extend_from_slice(&[*kind, payload.len() as u8]);
            bytes.extend_from_slice(payload);
        }
        bytes
    }

    fn split<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut at = 0;
        for point in points {
            chunks.push(&bytes[at..point]);
            at = point;
        }
        chunks.push(&bytes[at..]);
        chunks
    }

    quickcheck::quickcheck! {
        fn any_split_of_a_frame_stream_yields_the_same_frames(
            frames: Vec<(u8, Vec<u8>)>,
            cuts: Vec<usize>
        ) -> bool {
            let bytes = encode(&frames);
            let whole = cut_all::<PartialFrame>(&[&bytes]);
            let chunks = split(&bytes, &cuts);
            whole.len() == frames.len()
                && cut_all::<PartialFrame>(&chunks) == whole
                && cut_all::<InlineTail<22>>(&chunks) == whole
        }

        fn any_split_of_any_bytes_yields_the_same_pieces(bytes: Vec<u8>, cuts: Vec<usize>) -> bool {
            let whole = cut_all::<InlineTail<22>>(&[&bytes]);
            let chunks = split(&bytes, &cuts);
            cut_all::<InlineTail<22>>(&chunks) == whole
                && cut_all::<PartialFrame>(&chunks) == whole
        }
    }
}
