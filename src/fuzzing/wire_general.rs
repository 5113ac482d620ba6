//! Fuzz targets of the general lobby's wire format (`docs/protocols/general-lobby.md`): frames
//! and messages of both directions (`wire_general_frames`) and the parameter layer under them
//! (`wire_general_params`).
//!
//! Parameters carry their exact length and kind, so re-emitting whatever parses gives back
//! the very same bytes: a frame read as a message, a payload read as parameters.

use crate::wire::general::params::{Kind, ParamSink};
use crate::wire::general::{
    next_frame, ClientRepr, Frame, Next, ParamReader, ParamWriter, ServerRepr, Words,
    DEFAULT_MAX_FRAME, HEADER_LEN,
};

use super::emitted;

/// Fuzz target `wire_general_frames`: a stream cut into frames as the server cuts it (up to
/// the default frame limit), each frame read as a client and as a server message.
pub fn frames(data: &[u8]) {
    let mut rest = data;
    while let Next::Frame { frame, consumed } = next_frame(rest, DEFAULT_MAX_FRAME) {
        assert_eq!(consumed, HEADER_LEN + frame.payload().len());
        let original = &rest[..consumed];
        if let Ok(repr) = ClientRepr::parse(&frame) {
            let bytes = emitted(repr.buffer_len(), |buf| repr.emit(buf));
            assert_eq!(bytes, original, "{repr:?} changes through emit");
        }
        if let Ok(repr) = ServerRepr::parse(&frame) {
            let bytes = emitted(repr.buffer_len(), |buf| repr.emit(buf));
            assert_eq!(bytes, original, "{repr:?} changes through emit");
        }
        rest = &rest[consumed..];
    }
    // An unchecked view over anything never reads past it.
    let view = Frame::new_unchecked(data);
    assert!(view.payload().len() <= data.len());
}

/// Fuzz target `wire_general_params`: the input as one payload, read parameter by parameter
/// and written again; and through each typed reader.
pub fn params(data: &[u8]) {
    let mut reader = ParamReader::new(data);
    let mut values = Vec::new();
    loop {
        match reader.next_param() {
            Ok(Some(param)) => values.push((param.kind(), param.into_value())),
            Ok(None) => break,
            Err(_) => return typed_reads(data),
        }
    }
    let mut out = vec![0xa5; data.len()];
    let mut writer = ParamWriter::new(&mut out);
    for (kind, value) in values {
        match (kind, <[u8; 4]>::try_from(value)) {
            (Kind::I32, Ok(word)) => writer.i32(i32::from_le_bytes(word)),
            (Kind::U32, Ok(word)) => writer.u32(u32::from_le_bytes(word)),
            (Kind::Str, _) => match core::str::from_utf8(value) {
                Ok(text) => writer.str(text),
                Err(_) => return typed_reads(data),
            },
            (Kind::Bytes, _) => writer.bytes(value),
            // No writer emits a mistyped or unknown parameter.
            _ => return typed_reads(data),
        }
    }
    assert_eq!(writer.len(), data.len());
    assert_eq!(out, data, "parameters change through the writer");
    typed_reads(data);
}

/// Each typed reader, from the start of the payload: a value or an error, never a panic.
fn typed_reads(data: &[u8]) {
    let _ = ParamReader::new(data).i32();
    let _ = ParamReader::new(data).u32();
    let _ = ParamReader::new(data).flag();
    let _ = ParamReader::new(data).str();
    let _ = ParamReader::new(data).finish();
    if let Ok(words) = ParamReader::new(data).words::<u32>() {
        assert_eq!(words.iter().count(), words.len());
        let values: Vec<u32> = words.iter().collect();
        assert!(Words::new(&values) == words);
    }
}
