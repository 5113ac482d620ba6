//! Tests of the general lobby's messages, one file per direction, and their shared helper:
//! golden frames written as spaced hex.

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
