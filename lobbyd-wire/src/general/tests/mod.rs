//! Tests of the general lobby's messages, one file per direction, and their shared helper:
//! golden frames written as spaced hex.

use core::fmt::Debug;

use super::Frame;

/// A checked view over a golden frame.
pub(crate) fn checked(bytes: &[u8]) -> Frame<&[u8]> {
    Frame::new_checked(bytes).expect("golden frame is complete")
}

/// Emits `repr` (its `buffer_len` and `emit`) into 128 bytes of `0xa5` and checks the frame is
/// exactly `golden`, with the tail untouched (a forgotten field would show).
#[track_caller]
pub(crate) fn assert_constructs(
    golden: &[u8],
    repr: &dyn Debug,
    buffer_len: usize,
    emit: impl FnOnce(&mut [u8]) -> usize,
) {
    let mut buf = [0xa5u8; 128];
    assert_eq!(buffer_len, golden.len(), "{repr:?}");
    assert_eq!(emit(&mut buf), golden.len(), "{repr:?}");
    assert_eq!(&buf[..golden.len()], golden, "{repr:?}");
    assert!(buf[golden.len()..].iter().all(|&b| b == 0xa5), "{repr:?}");
}

/// Checks a golden frame's header against `code` and its parse against `expected`.
#[track_caller]
pub(crate) fn assert_deconstructs<'a, R: Debug + PartialEq>(
    golden: &'a [u8],
    code: u32,
    parse: impl FnOnce(&Frame<&'a [u8]>) -> Result<R, super::Error>,
    expected: R,
) {
    let frame = checked(golden);
    assert_eq!(frame.code(), code);
    assert_eq!(
        frame.declared_len() as usize,
        golden.len() - super::HEADER_LEN
    );
    assert_eq!(parse(&frame), Ok(expected));
}

/// Emits into a buffer of exactly `buffer_len` bytes, checking `emit` fills it.
pub(crate) fn emitted(buffer_len: usize, emit: impl FnOnce(&mut [u8]) -> usize) -> Vec<u8> {
    let mut buf = vec![0xa5; buffer_len];
    assert_eq!(emit(&mut buf), buf.len());
    buf
}

/// Bytes from hex digits; spaces and newlines between digit pairs are ignored, so a golden frame
/// can be written one field at a time (`"03000000 0c000000 03 0500 416c696365"`).
pub(crate) fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace())
        .map(|b| match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            other => panic!("not a hex digit: {:?}", char::from(other)),
        })
        .collect();
    assert!(
        digits.len() % 2 == 0,
        "odd number of hex digits in {text:?}"
    );
    digits
        .chunks(2)
        .map(|pair| pair[0] << 4 | pair[1])
        .collect()
}

mod client;
mod server;
