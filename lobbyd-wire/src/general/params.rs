//! The general lobby's message parameters: a payload is a sequence of
//!
//! ```text
//! +---------+------------+------------------+
//! | kind u8 | len u16 LE | bytes[len]       |
//! +---------+------------+------------------+
//!   0         1..3         3..
//! ```
//!
//! Kinds: 1 = i32 (len 4), 2 = u32 (len 4), 3 = UTF-8 string, 4 = raw bytes.
//!
//! - [`Param`] is a view over one parameter; after [`Param::new_checked`] no accessor panics.
//! - [`ParamReader`] reads a message's parameters in order, borrowing: a missing, extra,
//!   mistyped or wrongly sized parameter, or invalid UTF-8, is a typed [`Error`]. It is total:
//!   any byte string gives values or an error, never a panic or an allocation.
//! - [`ParamSink`] is where a message lists its parameters once: [`ParamCounter`] measures
//!   them (`buffer_len`), [`ParamWriter`] writes them (`emit`). A string or bytes value longer
//!   than [`MAX_PARAM_LEN`] is cut to fit (a string at a char boundary) by both alike, so
//!   `buffer_len` and `emit` always agree.
//! - [`Words`] is a list of i32 or u32 values carried in one bytes parameter (GAME_INFO's
//!   players and player flags): a borrowed slice when emitting, the wire bytes when parsed.
//!
//! This module must not know which message it is reading: the message parsers say what comes.

use core::fmt;
use core::marker::PhantomData;

use super::Error;
use crate::Field;

/// Length of a parameter's header: kind (u8) and length (u16).
pub const PARAM_HEADER_LEN: usize = 3;

/// Longest parameter value: its length is a u16.
pub const MAX_PARAM_LEN: usize = u16::MAX as usize;

/// Length of a whole i32 or u32 parameter.
pub const INT_PARAM_LEN: usize = PARAM_HEADER_LEN + 4;

mod field {
    use super::Field;

    pub const KIND: usize = 0;
    pub const LENGTH: Field = 1..3;
}

/// A parameter's kind byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// 1: a signed 32-bit integer, 4 bytes.
    I32,
    /// 2: an unsigned 32-bit integer, 4 bytes.
    U32,
    /// 3: UTF-8 text.
    Str,
    /// 4: opaque bytes.
    Bytes,
    /// Any other byte; never what a message expects.
    Unknown(u8),
}

impl From<u8> for Kind {
    fn from(value: u8) -> Self {
        match value {
            1 => Kind::I32,
            2 => Kind::U32,
            3 => Kind::Str,
            4 => Kind::Bytes,
            other => Kind::Unknown(other),
        }
    }
}

impl From<Kind> for u8 {
    fn from(value: Kind) -> Self {
        match value {
            Kind::I32 => 1,
            Kind::U32 => 2,
            Kind::Str => 3,
            Kind::Bytes => 4,
            Kind::Unknown(other) => other,
        }
    }
}

/// A view over one parameter: header then at least the declared value.
///
/// The read accessors never panic, even unchecked (a short buffer reads as kind 0, length 0
/// and an empty value); [`Param::new_checked`] also guarantees the value is all there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Param<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Param<T> {
        Param { buffer }
    }

    /// Wraps a buffer, checking that it holds the header and the whole declared value.
    pub fn new_checked(buffer: T) -> Result<Param<T>, Error> {
        let param = Param::new_unchecked(buffer);
        param.check_len()?;
        Ok(param)
    }

    /// Checks that the buffer holds the header and the whole declared value; bytes after it
    /// (the next parameters) are allowed.
    pub fn check_len(&self) -> Result<(), Error> {
        let len = self.buffer.as_ref().len();
        if len < PARAM_HEADER_LEN || len < self.total_len() {
            Err(Error::ParamTruncated)
        } else {
            Ok(())
        }
    }

    /// The kind byte.
    pub fn kind(&self) -> Kind {
        Kind::from(self.buffer.as_ref().get(field::KIND).copied().unwrap_or(0))
    }

    /// The declared value length.
    pub fn value_len(&self) -> usize {
        match self.buffer.as_ref().get(field::LENGTH) {
            Some(&[lo, hi]) => usize::from(u16::from_le_bytes([lo, hi])),
            _ => 0,
        }
    }

    /// Header plus declared value.
    pub fn total_len(&self) -> usize {
        PARAM_HEADER_LEN + self.value_len()
    }

    /// The value; empty if the buffer does not hold all of it.
    pub fn value(&self) -> &[u8] {
        self.buffer
            .as_ref()
            .get(PARAM_HEADER_LEN..self.total_len())
            .unwrap_or(&[])
    }
}

impl<'a> Param<&'a [u8]> {
    /// The value with the buffer's lifetime.
    pub fn into_value(self) -> &'a [u8] {
        let end = self.total_len();
        self.buffer.get(PARAM_HEADER_LEN..end).unwrap_or(&[])
    }
}

/// Reads a payload's parameters in order; see the module doc.
#[derive(Debug, Clone)]
pub struct ParamReader<'a> {
    rest: &'a [u8],
}

impl<'a> ParamReader<'a> {
    /// A reader over a frame's payload.
    pub const fn new(payload: &'a [u8]) -> ParamReader<'a> {
        ParamReader { rest: payload }
    }

    /// The next parameter, whatever its kind; `Ok(None)` at the end of the payload.
    pub fn next_param(&mut self) -> Result<Option<Param<&'a [u8]>>, Error> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let param = Param::new_checked(self.rest)?;
        let (this, rest) = self.rest.split_at(param.total_len());
        self.rest = rest;
        Ok(Some(Param::new_unchecked(this)))
    }

    /// The next parameter's value, which must be of `kind`.
    fn take(&mut self, kind: Kind) -> Result<&'a [u8], Error> {
        let param = self.next_param()?.ok_or(Error::MissingParam)?;
        if param.kind() != kind {
            return Err(Error::WrongKind);
        }
        Ok(param.into_value())
    }

    fn word(&mut self, kind: Kind) -> Result<[u8; 4], Error> {
        self.take(kind)?.try_into().map_err(|_| Error::BadSize)
    }

    /// The next parameter as an i32.
    pub fn i32(&mut self) -> Result<i32, Error> {
        self.word(Kind::I32).map(i32::from_le_bytes)
    }

    /// The next parameter as a u32.
    pub fn u32(&mut self) -> Result<u32, Error> {
        self.word(Kind::U32).map(u32::from_le_bytes)
    }

    /// The next parameter as a u32 that must be 0 or 1.
    pub fn flag(&mut self) -> Result<bool, Error> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Error::BadValue),
        }
    }

    /// The next parameter as UTF-8 text.
    pub fn str(&mut self) -> Result<&'a str, Error> {
        core::str::from_utf8(self.take(Kind::Str)?).map_err(|_| Error::NotUtf8)
    }

    /// The next parameter as bytes.
    pub fn bytes(&mut self) -> Result<&'a [u8], Error> {
        self.take(Kind::Bytes)
    }

    /// The next parameter as a bytes list of 4-byte words.
    pub fn words<W: Word>(&mut self) -> Result<Words<'a, W>, Error> {
        Words::from_wire(self.bytes()?)
    }

    /// Ends the message: anything left is [`Error::ExtraParam`].
    pub fn finish(self) -> Result<(), Error> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(Error::ExtraParam)
        }
    }
}

/// The longest prefix of `text` that fits a parameter, ending on a char boundary.
pub fn fit_str(text: &str) -> &str {
    let mut end = text.len().min(MAX_PARAM_LEN);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or("")
}

/// The longest prefix of `bytes` that fits a parameter.
pub fn fit_bytes(bytes: &[u8]) -> &[u8] {
    bytes.get(..MAX_PARAM_LEN).unwrap_or(bytes)
}

/// Length of a whole string parameter holding `text` (cut as [`fit_str`] cuts it).
pub fn str_len(text: &str) -> usize {
    PARAM_HEADER_LEN + fit_str(text).len()
}

/// Length of a whole bytes parameter holding `bytes` (cut as [`fit_bytes`] cuts it).
pub fn bytes_len(bytes: &[u8]) -> usize {
    PARAM_HEADER_LEN + fit_bytes(bytes).len()
}

/// Where a message's parameters go: [`ParamWriter`] writes them, [`ParamCounter`] measures
/// them, so each message lists its parameters once for both `buffer_len` and `emit`.
pub trait ParamSink {
    /// An i32 parameter.
    fn i32(&mut self, value: i32);
    /// A u32 parameter.
    fn u32(&mut self, value: u32);
    /// A string parameter (cut as [`fit_str`] cuts it).
    fn str(&mut self, text: &str);
    /// A bytes parameter (cut as [`fit_bytes`] cuts it).
    fn bytes(&mut self, bytes: &[u8]);
    /// A bytes parameter holding `words` (at most [`MAX_WORDS`] of them).
    fn words<W: Word>(&mut self, words: &Words<'_, W>);
    /// A u32 parameter of 0 or 1.
    fn flag(&mut self, value: bool) {
        self.u32(u32::from(value));
    }
}

/// Counts the bytes a message's parameters take.
#[derive(Debug, Default, Clone, Copy)]
pub struct ParamCounter {
    len: usize,
}

impl ParamCounter {
    /// Bytes counted so far.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// True while nothing is counted.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl ParamSink for ParamCounter {
    fn i32(&mut self, _: i32) {
        self.len += INT_PARAM_LEN;
    }
    fn u32(&mut self, _: u32) {
        self.len += INT_PARAM_LEN;
    }
    fn str(&mut self, text: &str) {
        self.len += str_len(text);
    }
    fn bytes(&mut self, bytes: &[u8]) {
        self.len += bytes_len(bytes);
    }
    fn words<W: Word>(&mut self, words: &Words<'_, W>) {
        self.len += PARAM_HEADER_LEN + words.wire_len();
    }
}

/// Writes parameters one after the other into a buffer sized with a [`ParamCounter`].
///
/// Panics if the buffer is too short: the emitters size it with `buffer_len` first.
#[derive(Debug)]
pub struct ParamWriter<'b> {
    buf: &'b mut [u8],
    at: usize,
}

impl<'b> ParamWriter<'b> {
    /// A writer at the start of `buf` (a frame's payload area).
    pub fn new(buf: &'b mut [u8]) -> ParamWriter<'b> {
        ParamWriter { buf, at: 0 }
    }

    /// Bytes written so far.
    pub const fn len(&self) -> usize {
        self.at
    }

    /// True while nothing is written.
    pub const fn is_empty(&self) -> bool {
        self.at == 0
    }

    /// Writes a header and returns the value's area.
    fn header(&mut self, kind: Kind, len: usize) -> &mut [u8] {
        let start = self.at;
        let end = start + PARAM_HEADER_LEN + len;
        let param = &mut self.buf[start..end];
        param[field::KIND] = u8::from(kind);
        // Every caller passes a length cut to MAX_PARAM_LEN.
        param[field::LENGTH].copy_from_slice(&(len as u16).to_le_bytes());
        self.at = end;
        &mut param[PARAM_HEADER_LEN..]
    }
}

impl ParamSink for ParamWriter<'_> {
    fn i32(&mut self, value: i32) {
        self.header(Kind::I32, 4)
            .copy_from_slice(&value.to_le_bytes());
    }

    fn u32(&mut self, value: u32) {
        self.header(Kind::U32, 4)
            .copy_from_slice(&value.to_le_bytes());
    }

    fn str(&mut self, text: &str) {
        let text = fit_str(text);
        self.header(Kind::Str, text.len())
            .copy_from_slice(text.as_bytes());
    }

    fn bytes(&mut self, bytes: &[u8]) {
        let bytes = fit_bytes(bytes);
        self.header(Kind::Bytes, bytes.len()).copy_from_slice(bytes);
    }

    fn words<W: Word>(&mut self, words: &Words<'_, W>) {
        let area = self.header(Kind::Bytes, words.wire_len());
        for (out, word) in area.chunks_exact_mut(4).zip(words.iter()) {
            out.copy_from_slice(&word.to_le());
        }
    }
}

/// A 4-byte little-endian value a [`Words`] list can hold: `i32` or `u32`.
pub trait Word: Copy + PartialEq + fmt::Debug {
    /// From its 4 little-endian bytes.
    fn from_le(bytes: [u8; 4]) -> Self;
    /// To its 4 little-endian bytes.
    fn to_le(self) -> [u8; 4];
}

impl Word for i32 {
    fn from_le(bytes: [u8; 4]) -> Self {
        i32::from_le_bytes(bytes)
    }
    fn to_le(self) -> [u8; 4] {
        self.to_le_bytes()
    }
}

impl Word for u32 {
    fn from_le(bytes: [u8; 4]) -> Self {
        u32::from_le_bytes(bytes)
    }
    fn to_le(self) -> [u8; 4] {
        self.to_le_bytes()
    }
}

/// Most words one bytes parameter holds.
pub const MAX_WORDS: usize = MAX_PARAM_LEN / 4;

/// A list of 4-byte words in one bytes parameter: borrowed values to emit, or the received
/// bytes (a whole number of words) after parsing. Iterating never allocates.
#[derive(Clone, Copy)]
pub struct Words<'a, W> {
    source: Source<'a, W>,
}

#[derive(Clone, Copy)]
enum Source<'a, W> {
    Values(&'a [W]),
    Wire(&'a [u8], PhantomData<W>),
}

impl<'a, W: Word> Words<'a, W> {
    /// A list over `values` (only the first [`MAX_WORDS`] are sent).
    pub const fn new(values: &'a [W]) -> Words<'a, W> {
        Words {
            source: Source::Values(values),
        }
    }

    /// A list over received bytes; [`Error::BadSize`] unless they are whole words.
    pub fn from_wire(bytes: &'a [u8]) -> Result<Words<'a, W>, Error> {
        if bytes.len() % 4 == 0 {
            Ok(Words {
                source: Source::Wire(bytes, PhantomData),
            })
        } else {
            Err(Error::BadSize)
        }
    }

    /// Number of words (as sent: at most [`MAX_WORDS`]).
    pub fn len(&self) -> usize {
        match self.source {
            Source::Values(values) => values.len().min(MAX_WORDS),
            Source::Wire(bytes, _) => bytes.len() / 4,
        }
    }

    /// True for an empty list.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the list takes on the wire.
    pub fn wire_len(&self) -> usize {
        self.len() * 4
    }

    /// The words, in order.
    pub fn iter(&self) -> WordIter<'a, W> {
        WordIter {
            source: self.source,
            index: 0,
            len: self.len(),
        }
    }
}

impl<W: Word> PartialEq for Words<'_, W> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<W: Word + Eq> Eq for Words<'_, W> {}

impl<W: Word> fmt::Debug for Words<'_, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Iterator over a [`Words`] list.
#[derive(Clone)]
pub struct WordIter<'a, W> {
    source: Source<'a, W>,
    index: usize,
    len: usize,
}

impl<W: Word> Iterator for WordIter<'_, W> {
    type Item = W;

    fn next(&mut self) -> Option<W> {
        if self.index >= self.len {
            return None;
        }
        let word = match self.source {
            Source::Values(values) => values.get(self.index).copied()?,
            Source::Wire(bytes, _) => {
                let at = self.index * 4;
                W::from_le(bytes.get(at..at + 4)?.try_into().ok()?)
            }
        };
        self.index += 1;
        Some(word)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.len.saturating_sub(self.index);
        (left, Some(left))
    }
}

impl<W: Word> ExactSizeIterator for WordIter<'_, W> {}

#[cfg(test)]
mod test {
    use super::super::tests::hex;
    use super::*;
    use quickcheck::{quickcheck, Arbitrary, Gen};

    #[test]
    fn deconstruct() {
        let payload = hex("01 0400 feffffff  02 0400 2a000000  03 0300 416263  04 0000");
        let first = Param::new_checked(&payload[..]).expect("complete");
        assert_eq!(first.kind(), Kind::I32);
        assert_eq!(first.value_len(), 4);
        assert_eq!(first.total_len(), 7);
        assert_eq!(first.value(), &[0xfe, 0xff, 0xff, 0xff]);
        let mut reader = ParamReader::new(&payload);
        assert_eq!(reader.i32(), Ok(-2));
        assert_eq!(reader.u32(), Ok(42));
        assert_eq!(reader.str(), Ok("Abc"));
        assert_eq!(reader.bytes(), Ok(&[][..]));
        assert_eq!(reader.next_param(), Ok(None));
        assert_eq!(reader.finish(), Ok(()));
    }

    #[test]
    fn construct() {
        let golden = hex("01 0400 feffffff  02 0400 2a000000  03 0300 416263  04 0000  04 0800 01000000 ffffffff");
        let mut buf = [0xa5u8; 64];
        let list = [1i32, -1];
        let words = Words::new(&list[..]);
        fn write(sink: &mut impl ParamSink, words: &Words<'_, i32>) {
            sink.i32(-2);
            sink.u32(42);
            sink.str("Abc");
            sink.bytes(&[]);
            sink.words(words);
        }
        let mut counter = ParamCounter::default();
        assert!(counter.is_empty());
        write(&mut counter, &words);
        assert_eq!(counter.len(), golden.len());
        let mut writer = ParamWriter::new(&mut buf);
        assert!(writer.is_empty());
        write(&mut writer, &words);
        assert_eq!(writer.len(), golden.len());
        assert_eq!(&buf[..golden.len()], &golden[..]);
        assert!(buf[golden.len()..].iter().all(|&b| b == 0xa5));
    }

    #[test]
    fn every_reader_error() {
        // Missing, then extra.
        assert_eq!(ParamReader::new(&[]).i32(), Err(Error::MissingParam));
        assert_eq!(
            ParamReader::new(&hex("04 0000")).finish(),
            Err(Error::ExtraParam)
        );
        // Even a truncated leftover is "extra": the message had all it needed.
        assert_eq!(
            ParamReader::new(&hex("04")).finish(),
            Err(Error::ExtraParam)
        );
        // Wrong kind: an u32 where an i32 is due, and an unknown kind byte.
        assert_eq!(
            ParamReader::new(&hex("02 0400 00000000")).i32(),
            Err(Error::WrongKind)
        );
        assert_eq!(
            ParamReader::new(&hex("07 0000")).bytes(),
            Err(Error::WrongKind)
        );
        // Wrongly sized integers.
        assert_eq!(
            ParamReader::new(&hex("01 0300 000000")).i32(),
            Err(Error::BadSize)
        );
        assert_eq!(
            ParamReader::new(&hex("02 0500 0000000000")).u32(),
            Err(Error::BadSize)
        );
        // Truncated header and value.
        assert_eq!(
            ParamReader::new(&hex("03 05")).str(),
            Err(Error::ParamTruncated)
        );
        assert_eq!(
            ParamReader::new(&hex("03 0500 6162")).str(),
            Err(Error::ParamTruncated)
        );
        // Invalid UTF-8, flags, word lists.
        assert_eq!(
            ParamReader::new(&hex("03 0100 ff")).str(),
            Err(Error::NotUtf8)
        );
        assert_eq!(
            ParamReader::new(&hex("02 0400 02000000")).flag(),
            Err(Error::BadValue)
        );
        assert_eq!(
            ParamReader::new(&hex("04 0300 010203")).words::<i32>(),
            Err(Error::BadSize)
        );
    }

    #[test]
    fn param_views_are_total() {
        let short = Param::new_unchecked(&[3u8, 9][..]);
        assert_eq!(short.kind(), Kind::Str);
        assert_eq!(short.value_len(), 0);
        assert_eq!(
            Param::new_checked(&[3u8, 9][..]),
            Err(Error::ParamTruncated)
        );
        let cut = Param::new_unchecked(&[3u8, 4, 0, b'a'][..]);
        assert_eq!(cut.value(), &[] as &[u8]);
        assert_eq!(cut.into_value(), &[] as &[u8]);
        for byte in 0..=u8::MAX {
            assert_eq!(u8::from(Kind::from(byte)), byte);
        }
    }

    #[test]
    fn long_values_are_cut_consistently() {
        let long = "é".repeat(40_000); // 80 000 bytes of 2-byte chars
        assert_eq!(fit_str(&long).len(), 65_534);
        assert_eq!(str_len(&long), PARAM_HEADER_LEN + 65_534);
        let bytes = vec![7u8; 70_000];
        assert_eq!(bytes_len(&bytes), PARAM_HEADER_LEN + MAX_PARAM_LEN);
        let mut buf = vec![0u8; str_len(&long) + bytes_len(&bytes)];
        let mut writer = ParamWriter::new(&mut buf);
        writer.str(&long);
        writer.bytes(&bytes);
        assert_eq!(writer.len(), buf.len());
        let mut reader = ParamReader::new(&buf);
        assert_eq!(reader.str(), Ok(fit_str(&long)));
        assert_eq!(reader.bytes().map(<[u8]>::len), Ok(MAX_PARAM_LEN));
        let many = vec![5u32; MAX_WORDS + 3];
        let words = Words::new(&many[..]);
        assert_eq!(words.len(), MAX_WORDS);
        assert_eq!(words.iter().len(), MAX_WORDS);
    }

    #[test]
    fn words_compare_by_value() {
        let wire = hex("01000000 feffffff");
        let parsed = Words::<i32>::from_wire(&wire).expect("whole words");
        assert_eq!(parsed, Words::new(&[1, -2][..]));
        assert_ne!(parsed, Words::new(&[1][..]));
        assert_eq!(format!("{parsed:?}"), "[1, -2]");
        assert!(Words::<u32>::new(&[]).is_empty());
    }

    /// One parameter of any kind, as a generator of payloads that reach deep into the reader.
    #[derive(Clone, Debug)]
    struct RawParam(u8, Vec<u8>, Option<u16>);

    impl Arbitrary for RawParam {
        fn arbitrary(g: &mut Gen) -> Self {
            let kind = u8::arbitrary(g) % 6;
            let value = Vec::<u8>::arbitrary(g);
            // Now and then a length that lies.
            let lie = if u8::arbitrary(g) % 8 == 0 {
                Some(u16::arbitrary(g))
            } else {
                None
            };
            RawParam(kind, value, lie)
        }
    }

    quickcheck! {
        fn arbitrary_bytes_never_panic(bytes: Vec<u8>) -> bool {
            let mut reader = ParamReader::new(&bytes);
            let mut seen = 0;
            while let Ok(Some(param)) = reader.next_param() {
                seen += param.total_len();
                assert!(seen <= bytes.len());
            }
            for step in 0..6u8 {
                let mut reader = ParamReader::new(&bytes);
                let _ = match step {
                    0 => reader.i32().map(drop),
                    1 => reader.u32().map(drop),
                    2 => reader.str().map(drop),
                    3 => reader.bytes().map(drop),
                    4 => reader.words::<u32>().map(|w| assert_eq!(w.iter().count(), w.len())),
                    _ => reader.flag().map(drop),
                };
                let _ = reader.finish();
            }
            true
        }

        fn arbitrary_params_never_panic(params: Vec<RawParam>) -> bool {
            let mut bytes = Vec::new();
            for RawParam(kind, value, lie) in &params {
                bytes.push(*kind);
                let len = lie.unwrap_or(value.len() as u16);
                bytes.extend_from_slice(&len.to_le_bytes());
                bytes.extend_from_slice(value);
            }
            let mut reader = ParamReader::new(&bytes);
            for step in 0.. {
                let result = match step % 5 {
                    0 => reader.i32().map(drop),
                    1 => reader.u32().map(drop),
                    2 => reader.str().map(drop),
                    3 => reader.words::<i32>().map(drop),
                    _ => reader.bytes().map(drop),
                };
                if result.is_err() {
                    break;
                }
            }
            true
        }

        fn round_trip(ints: Vec<i32>, text: String, bytes: Vec<u8>) -> bool {
            let words = Words::new(&ints[..]);
            let first = ints.first().copied().unwrap_or(0);
            let len = INT_PARAM_LEN * 2 + str_len(&text) + bytes_len(&bytes)
                + PARAM_HEADER_LEN + words.wire_len();
            let mut buf = vec![0xa5; len];
            let mut writer = ParamWriter::new(&mut buf);
            writer.i32(first);
            writer.u32(first as u32);
            writer.str(&text);
            writer.bytes(&bytes);
            writer.words(&words);
            assert_eq!(writer.len(), len);
            let mut reader = ParamReader::new(&buf);
            reader.i32() == Ok(first)
                && reader.u32() == Ok(first as u32)
                && reader.str() == Ok(text.as_str())
                && reader.bytes() == Ok(&bytes[..])
                && reader.words::<i32>() == Ok(words)
                && reader.finish() == Ok(())
        }
    }
}
