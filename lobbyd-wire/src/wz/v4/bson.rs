//! The hand-written BSON subset of the v4 protocol: double, string, document, array, bool,
//! null, int32, int64 (`docs/protocols/wz-v4.md`, "Encodings"; bsonspec.org 1.1).
//!
//! [`parse`] turns a frame body into a [`Node`] tree: total, zero-copy for strings and keys,
//! every declared length checked against the bytes present before it is used, strings bounded
//! by [`MAX_STRING`] and nesting by [`MAX_DEPTH`] before anything is copied or entered.
//! [`write_doc`] appends a document built from [`Value`]s. Which document is a valid request
//! is decided in the parent module, not here.

use std::borrow::Cow;

use super::{DecodeError, Fields, Node, Value, MAX_DEPTH, MAX_STRING};

const DOUBLE: u8 = 0x01;
const STRING: u8 = 0x02;
const DOCUMENT: u8 = 0x03;
const ARRAY: u8 = 0x04;
const BOOL: u8 = 0x08;
const NULL: u8 = 0x0a;
const INT32: u8 = 0x10;
const INT64: u8 = 0x12;

/// Parses a top-level document that must fill `body` exactly.
pub fn parse(body: &[u8]) -> Result<Node<'_>, DecodeError> {
    let fields = doc(body, 1)?;
    Ok(Node::Doc(fields))
}

fn le_i32(buf: &[u8], at: usize) -> Result<i32, DecodeError> {
    match buf.get(at..at.saturating_add(4)) {
        Some(&[a, b, c, d]) => Ok(i32::from_le_bytes([a, b, c, d])),
        _ => Err(DecodeError::LengthMismatch),
    }
}

fn bytes8(buf: &[u8], at: usize) -> Result<[u8; 8], DecodeError> {
    buf.get(at..at.saturating_add(8))
        .and_then(|s| <[u8; 8]>::try_from(s).ok())
        .ok_or(DecodeError::LengthMismatch)
}

/// Checks a document's own length against `buf` (which must be exactly the document).
fn elements_of(buf: &[u8]) -> Result<&[u8], DecodeError> {
    let declared = le_i32(buf, 0)?;
    if usize::try_from(declared).ok() != Some(buf.len()) || buf.len() < 5 {
        return Err(DecodeError::LengthMismatch);
    }
    match buf.split_last() {
        Some((0, rest)) => Ok(rest.get(4..).unwrap_or_default()),
        _ => Err(DecodeError::BadBson),
    }
}

/// Slices off the embedded document starting at `at`, using its declared length.
fn embedded(buf: &[u8], at: usize) -> Result<(&[u8], usize), DecodeError> {
    let declared = usize::try_from(le_i32(buf, at)?).map_err(|_| DecodeError::LengthMismatch)?;
    let end = at.saturating_add(declared);
    let sub = buf.get(at..end).ok_or(DecodeError::LengthMismatch)?;
    Ok((sub, end))
}

fn str_of(bytes: &[u8]) -> Result<&str, DecodeError> {
    if bytes.len() > MAX_STRING {
        return Err(DecodeError::TooLong);
    }
    std::str::from_utf8(bytes).map_err(|_| DecodeError::BadUtf8)
}

fn doc(buf: &[u8], depth: usize) -> Result<Fields<'_>, DecodeError> {
    let elements = elements_of(buf)?;
    let mut fields = Vec::new();
    let mut at = 0;
    while at < elements.len() {
        let kind = *elements.get(at).ok_or(DecodeError::BadBson)?;
        at += 1;
        let rest = elements.get(at..).unwrap_or_default();
        let key_len = rest
            .iter()
            .position(|b| *b == 0)
            .ok_or(DecodeError::BadBson)?;
        let key = str_of(rest.get(..key_len).unwrap_or_default())?;
        at += key_len + 1;
        let (value, next) = element(elements, kind, at, depth)?;
        fields.push((Cow::Borrowed(key), value));
        at = next;
    }
    Ok(fields)
}

fn element(
    buf: &[u8],
    kind: u8,
    at: usize,
    depth: usize,
) -> Result<(Node<'_>, usize), DecodeError> {
    Ok(match kind {
        DOUBLE => (Node::Double(f64::from_le_bytes(bytes8(buf, at)?)), at + 8),
        STRING => {
            let declared = le_i32(buf, at)?;
            let len = usize::try_from(declared).map_err(|_| DecodeError::LengthMismatch)?;
            if len == 0 {
                return Err(DecodeError::LengthMismatch);
            }
            let start = at + 4;
            let end = start.saturating_add(len);
            let raw = buf.get(start..end).ok_or(DecodeError::LengthMismatch)?;
            let Some((0, text)) = raw.split_last() else {
                return Err(DecodeError::BadBson);
            };
            (Node::Str(Cow::Borrowed(str_of(text)?)), end)
        }
        DOCUMENT | ARRAY => {
            if depth >= MAX_DEPTH {
                return Err(DecodeError::TooDeep);
            }
            let (sub, end) = embedded(buf, at)?;
            let fields = doc(sub, depth + 1)?;
            let node = if kind == DOCUMENT {
                Node::Doc(fields)
            } else {
                Node::Array(fields.into_iter().map(|(_, v)| v).collect())
            };
            (node, end)
        }
        BOOL => match buf.get(at) {
            Some(0) => (Node::Bool(false), at + 1),
            Some(1) => (Node::Bool(true), at + 1),
            Some(_) => return Err(DecodeError::BadBson),
            None => return Err(DecodeError::LengthMismatch),
        },
        NULL => (Node::Null, at),
        INT32 => (Node::Int(i64::from(le_i32(buf, at)?)), at + 4),
        INT64 => (Node::Int(i64::from_le_bytes(bytes8(buf, at)?)), at + 8),
        _ => return Err(DecodeError::BadBson),
    })
}

/// Appends a document holding `fields` to `out`.
pub fn write_doc<'v>(fields: impl Iterator<Item = (&'v str, &'v Value)>, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    for (key, value) in fields {
        write_element(key, value, out);
    }
    out.push(0);
    patch_len(out, start);
}

fn patch_len(out: &mut [u8], start: usize) {
    let len = i32::try_from(out.len() - start).unwrap_or(i32::MAX);
    if let Some(prefix) = out.get_mut(start..start + 4) {
        prefix.copy_from_slice(&len.to_le_bytes());
    }
}

fn cstring(key: &str, out: &mut Vec<u8>) {
    // A NUL inside a key would end it early on the wire; drop it rather than corrupt.
    out.extend(key.bytes().filter(|b| *b != 0));
    out.push(0);
}

fn write_element(key: &str, value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => {
            out.push(NULL);
            cstring(key, out);
        }
        Value::Bool(b) => {
            out.push(BOOL);
            cstring(key, out);
            out.push(u8::from(*b));
        }
        Value::Int(i) => match i32::try_from(*i) {
            Ok(small) => {
                out.push(INT32);
                cstring(key, out);
                out.extend_from_slice(&small.to_le_bytes());
            }
            Err(_) => {
                out.push(INT64);
                cstring(key, out);
                out.extend_from_slice(&i.to_le_bytes());
            }
        },
        Value::String(s) => {
            out.push(STRING);
            cstring(key, out);
            let len = i32::try_from(s.len() + 1).unwrap_or(i32::MAX);
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(s.as_bytes());
            out.push(0);
        }
        Value::Object(fields) => {
            out.push(DOCUMENT);
            cstring(key, out);
            write_doc(fields.iter().map(|(k, v)| (k.as_ref(), v)), out);
        }
        Value::Array(items) => {
            out.push(ARRAY);
            cstring(key, out);
            let start = out.len();
            out.extend_from_slice(&[0; 4]);
            for (index, item) in items.iter().enumerate() {
                write_element(&index.to_string(), item, out);
            }
            out.push(0);
            patch_len(out, start);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::super::tests::{error_of, login_expected};
    use super::super::{decode, DecodeError, Encoding, Params, Response, MAX_DEPTH, OK};

    /// The seed's login request, as BSON built by hand, element by element.
    fn login_bson() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&[0x5f, 0, 0, 0]); // document length 95
        b.push(0x02); // string
        b.extend_from_slice(b"method\0");
        b.extend_from_slice(&[6, 0, 0, 0]); // "login" + NUL
        b.extend_from_slice(b"login\0");
        b.push(0x03); // embedded document
        b.extend_from_slice(b"params\0");
        b.extend_from_slice(&[56, 0, 0, 0]); // embedded length 56
        b.push(0x02);
        b.extend_from_slice(b"username\0");
        b.extend_from_slice(&[10, 0, 0, 0]);
        b.extend_from_slice(b"Fastdeath\0");
        b.push(0x02);
        b.extend_from_slice(b"password\0");
        b.extend_from_slice(&[13, 0, 0, 0]);
        b.extend_from_slice(b"mysecretpass\0");
        b.push(0x00); // end of params
        b.push(0x10); // int32
        b.extend_from_slice(b"id\0");
        b.extend_from_slice(&[1, 0, 0, 0]);
        b.push(0x00); // end of document
        b
    }

    /// `{"status": 0, "result": "ok", "id": 3}` as a BSON frame built by hand.
    fn ok_response_bson_frame() -> Vec<u8> {
        let mut b = vec![0, 0, 0, 40]; // frame length, big-endian
        b.extend_from_slice(&[40, 0, 0, 0]); // document length, little-endian
        b.push(0x10);
        b.extend_from_slice(b"status\0");
        b.extend_from_slice(&[0, 0, 0, 0]);
        b.push(0x02);
        b.extend_from_slice(b"result\0");
        b.extend_from_slice(&[3, 0, 0, 0]);
        b.extend_from_slice(b"ok\0");
        b.push(0x10);
        b.extend_from_slice(b"id\0");
        b.extend_from_slice(&[3, 0, 0, 0]);
        b.push(0x00);
        b
    }

    #[test]
    fn deconstruct_seed_bson() {
        let body = login_bson();
        assert_eq!(Encoding::sniff(&body), Encoding::Bson);
        let (encoding, request) = decode(&body).expect("login decodes");
        assert_eq!(encoding, Encoding::Bson);
        assert_eq!(request, login_expected());
        // Zero-copy: the strings point into the frame body.
        let Params::Login(login) = request.params else {
            panic!("not login")
        };
        assert!(matches!(login.username, Cow::Borrowed(_)));
    }

    #[test]
    fn construct_response_bson() {
        let mut out = vec![0xa5; 3];
        Response::text(OK, "ok", Some(3)).encode(Encoding::Bson, &mut out);
        assert_eq!(&out[..3], &[0xa5; 3]);
        assert_eq!(&out[3..], &ok_response_bson_frame()[..]);
    }

    #[test]
    fn deep_nesting() {
        // Documents nested inside each other, built inside out.
        let nest = |levels: usize| {
            let mut doc = vec![5, 0, 0, 0, 0];
            for _ in 1..levels {
                let mut outer = vec![0, 0, 0, 0, 0x03, b'x', 0];
                outer.extend_from_slice(&doc);
                outer.push(0);
                let len = outer.len() as i32;
                outer[..4].copy_from_slice(&len.to_le_bytes());
                doc = outer;
            }
            doc
        };
        assert_eq!(
            error_of(&nest(MAX_DEPTH)),
            DecodeError::MissingField("method")
        );
        assert_eq!(error_of(&nest(MAX_DEPTH + 1)), DecodeError::TooDeep);
    }

    #[test]
    fn lying_lengths() {
        let good = login_bson();
        // Declared total one more / one less than present: not even sniffed as a match.
        let mut longer = good.clone();
        longer[0] += 1;
        assert_eq!(error_of(&longer), DecodeError::LengthMismatch);
        assert_eq!(
            error_of(&good[..good.len() - 1]),
            DecodeError::LengthMismatch
        );
        // Embedded document claiming to run past its parent.
        let mut params = good.clone();
        params[31] = 200;
        assert_eq!(error_of(&params), DecodeError::LengthMismatch);
        // String length past the end, negative, and zero.
        for bad in [200u8, 0xff, 0] {
            let mut s = good.clone();
            s[12] = bad;
            if bad == 0xff {
                s[13..16].copy_from_slice(&[0xff; 3]);
            }
            assert_eq!(
                error_of(&s),
                DecodeError::LengthMismatch,
                "string length {bad}"
            );
        }
        // String length shorter than its bytes: the NUL is not where it claims.
        let mut short = good.clone();
        short[12] = 3;
        assert_eq!(error_of(&short), DecodeError::BadBson);
        // Negative document length.
        assert_eq!(
            error_of(&[0xff, 0xff, 0xff, 0xff, 0]),
            DecodeError::LengthMismatch
        );
    }
}
