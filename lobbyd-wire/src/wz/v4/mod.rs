//! Warzone 2100 master server protocol v4: handshake, framing, documents, requests, responses.
//!
//! Implements `docs/protocols/wz-v4.md` (the seed "New Lobby Protocol", with the message shape
//! `{method, params, id}` / `{status, result, id}` of its text and of wzlobbyserver-ng's first
//! draft). Everything here is sans-IO: the driver hands in the bytes it has buffered and gets
//! back a decision, a frame body, a decoded [`Request`] or an encoded response frame.
//!
//! ```text
//! handshake  "version\0" u32be(4)                      12 bytes, once, client -> server
//! frame      u32be(len) body[len]                       len <= MAX_FRAME
//! body       BSON document (starts with its i32le length) or JSON object (starts with '{')
//! ```
//!
//! This file holds the handshake, the framing, the document tree ([`Node`]) and the responses;
//! `request.rs` turns a document into a typed [`Request`]; the two encodings are `bson.rs`
//! (hand-written) and `json.rs` (`serde_json` through a depth-counting visitor), and
//! [`parse_document`] picks one per frame.
//!
//! Contract: every function here is total. Any byte string yields a value or a typed
//! [`DecodeError`]; nothing panics, nothing reads past its buffer, and nothing allocates more
//! than a small multiple of a frame body (which the caller has already bounded with
//! [`next_frame`]). Strings are at most [`MAX_STRING`] bytes and documents nest at most
//! [`MAX_DEPTH`] levels; both are checked before the parser copies or recurses.
//! This module must not touch sockets, clocks or the game table.

use std::borrow::Cow;
use std::fmt;

mod bson;
mod json;
mod request;

pub use request::{
    decode, AddGame, AddPlayer, DelGame, DelPlayer, Login, Method, Params, Rejection, Request,
    RequestId,
};

/// The protocol version a v4 client announces in its handshake.
pub const PROTOCOL_VERSION: u32 = 4;
/// Length of the handshake: `"version\0"` plus a big-endian u32.
pub const HANDSHAKE_LEN: usize = 12;
/// The largest frame body the server accepts (64 KiB); a larger announced length is refused
/// before any of the body is buffered.
pub const MAX_FRAME: u32 = 64 * 1024;
/// The longest string (value or key) accepted inside a document, in bytes.
pub const MAX_STRING: usize = 255;
/// The deepest nesting of documents and arrays accepted; the top-level document is depth 1.
pub const MAX_DEPTH: usize = 16;

/// The handshake's magic prefix.
const MAGIC: &[u8; 8] = b"version\0";

/// Response status: success.
pub const OK: i32 = 0;
/// Response status: no such game, or not the caller's game.
pub const NO_GAME: i32 = -402;
/// Response status: refused (bad game name, old version, unreachable host, server busy).
pub const NOT_ACCEPTABLE: i32 = -403;
/// Response status: unknown user or wrong password.
pub const WRONG_LOGIN: i32 = -404;
/// Response status: the server requires `login` before this call.
pub const LOGIN_REQUIRED: i32 = -405;
/// Response status: the player's session is unknown or expired.
pub const SESSION_INVALID: i32 = -406;
/// Response status: the request parsed but its parameters are invalid.
pub const INVALID_DATA: i32 = -500;
/// Response status: the method name is not one this server implements.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// Response status: the frame body is not a well-formed document.
pub const PARSE_ERROR: i32 = -32700;

/// What the first bytes of a connection say about its protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detect {
    /// Everything seen so far is a prefix of the v4 handshake; wait for more bytes.
    NeedMore,
    /// A complete v4 handshake: consume [`HANDSHAKE_LEN`] bytes and speak v4.
    V4,
    /// A v4 handshake announcing another version; the server closes the connection.
    WrongVersion(u32),
    /// Not a v4 handshake: hand the bytes, unconsumed, to the legacy protocol.
    Legacy,
}

/// Decides the protocol of a connection from its first bytes.
///
/// Answers [`Detect::Legacy`] as soon as a byte differs from `"version\0"`, so legacy clients
/// (whose commands start with `list`, `gaId`, `addg`, `keep`, or a GAMESTRUCT version) are
/// never delayed waiting for bytes they will not send.
pub fn detect(buf: &[u8]) -> Detect {
    let seen = buf.len().min(MAGIC.len());
    if buf.get(..seen) != MAGIC.get(..seen) {
        return Detect::Legacy;
    }
    match buf.get(MAGIC.len()..HANDSHAKE_LEN) {
        Some(&[a, b, c, d]) => match u32::from_be_bytes([a, b, c, d]) {
            PROTOCOL_VERSION => Detect::V4,
            other => Detect::WrongVersion(other),
        },
        _ => Detect::NeedMore,
    }
}

/// The next frame in a receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next<'a> {
    /// A whole frame: its body, and how many buffer bytes (prefix + body) it took.
    Frame {
        /// The document bytes, without the length prefix.
        body: &'a [u8],
        /// Bytes to drop from the front of the buffer.
        consumed: usize,
    },
    /// The frame is not complete yet.
    NeedMore,
    /// The announced body length is over the limit; the server closes the connection.
    TooLarge(u32),
}

/// Splits the next `u32be length + body` frame off the front of `buf`.
///
/// The length is checked against `max_len` as soon as its four bytes are present, so the
/// caller never buffers more than `max_len + 4` bytes for a frame.
pub fn next_frame(buf: &[u8], max_len: u32) -> Next<'_> {
    let len = match buf.get(..4) {
        Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
        _ => return Next::NeedMore,
    };
    if len > max_len {
        return Next::TooLarge(len);
    }
    let end = 4usize.saturating_add(len as usize);
    match buf.get(4..end) {
        Some(body) => Next::Frame {
            body,
            consumed: end,
        },
        None => Next::NeedMore,
    }
}

/// The serialisation of a document; a response uses the encoding of its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// BSON (bsonspec.org 1.1), the seed's choice.
    Bson,
    /// JSON (RFC 8259), what the implemented protocol switched to.
    Json,
}

impl Encoding {
    /// Guesses the encoding of a frame body.
    ///
    /// A BSON document announces its own length in its first four bytes (i32 little-endian);
    /// when that equals the body length the body is BSON (a JSON text cannot satisfy this and
    /// end in NUL). Otherwise a body whose first non-whitespace byte is `{` is JSON, and
    /// anything else is taken as (broken) BSON.
    pub fn sniff(body: &[u8]) -> Encoding {
        if let Some(&[a, b, c, d]) = body.get(..4) {
            let declared = i32::from_le_bytes([a, b, c, d]);
            if usize::try_from(declared).ok() == Some(body.len()) && body.last() == Some(&0) {
                return Encoding::Bson;
            }
        }
        match body.iter().find(|b| !is_json_space(**b)) {
            Some(b'{') => Encoding::Json,
            _ => Encoding::Bson,
        }
    }
}

fn is_json_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Why a frame body could not be decoded into a [`Request`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// Malformed BSON: unknown element type, missing terminator, bad boolean, bad cstring.
    BadBson,
    /// Malformed JSON, or a JSON text that is not an object.
    BadJson,
    /// A string is not valid UTF-8.
    BadUtf8,
    /// Documents or arrays nest deeper than [`MAX_DEPTH`].
    TooDeep,
    /// A BSON length disagrees with the bytes present (declared != actual, or past the end).
    LengthMismatch,
    /// A string or key is longer than [`MAX_STRING`] bytes.
    TooLong,
    /// A required field is absent.
    MissingField(&'static str),
    /// A field has the wrong type.
    WrongType(&'static str),
    /// An integer field is outside the range of its type.
    OutOfRange(&'static str),
}

impl DecodeError {
    /// One error per metric label, for registering counters up front.
    pub const ALL: [DecodeError; 9] = [
        DecodeError::BadBson,
        DecodeError::BadJson,
        DecodeError::BadUtf8,
        DecodeError::TooDeep,
        DecodeError::LengthMismatch,
        DecodeError::TooLong,
        DecodeError::MissingField(""),
        DecodeError::WrongType(""),
        DecodeError::OutOfRange(""),
    ];

    /// A stable metric label (the field name, if any, is not part of it).
    pub fn as_str(&self) -> &'static str {
        match self {
            DecodeError::BadBson => "bad_bson",
            DecodeError::BadJson => "bad_json",
            DecodeError::BadUtf8 => "bad_utf8",
            DecodeError::TooDeep => "too_deep",
            DecodeError::LengthMismatch => "length_mismatch",
            DecodeError::TooLong => "too_long",
            DecodeError::MissingField(_) => "missing_field",
            DecodeError::WrongType(_) => "wrong_type",
            DecodeError::OutOfRange(_) => "out_of_range",
        }
    }

    /// The response status the server answers this error with.
    pub fn status(&self) -> i32 {
        match self {
            DecodeError::MissingField(_)
            | DecodeError::WrongType(_)
            | DecodeError::OutOfRange(_) => INVALID_DATA,
            _ => PARSE_ERROR,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::BadBson => write!(f, "malformed BSON document"),
            DecodeError::BadJson => write!(f, "malformed JSON object"),
            DecodeError::BadUtf8 => write!(f, "string is not UTF-8"),
            DecodeError::TooDeep => write!(f, "nesting deeper than {MAX_DEPTH}"),
            DecodeError::LengthMismatch => write!(f, "BSON length does not match the data"),
            DecodeError::TooLong => write!(f, "string longer than {MAX_STRING} bytes"),
            DecodeError::MissingField(name) => write!(f, "missing field {name:?}"),
            DecodeError::WrongType(name) => write!(f, "field {name:?} has the wrong type"),
            DecodeError::OutOfRange(name) => write!(f, "field {name:?} is out of range"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A decoded document value. Strings borrow from the frame body when they can (always in BSON,
/// in JSON when the string has no escapes); the tree itself is bounded by the body length.
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    /// BSON null, JSON null.
    Null,
    /// A boolean.
    Bool(bool),
    /// BSON int32/int64, a JSON integer that fits in i64.
    Int(i64),
    /// BSON double, a JSON number with a fraction or exponent, or too large for i64.
    Double(f64),
    /// A UTF-8 string of at most [`MAX_STRING`] bytes.
    Str(Cow<'a, str>),
    /// An object; keys in wire order, duplicates kept (lookups take the first).
    Doc(Vec<(Cow<'a, str>, Node<'a>)>),
    /// An array (BSON array keys are ignored; order is wire order).
    Array(Vec<Node<'a>>),
}

impl<'a> Node<'a> {
    /// The first value under `key`, if this is a document that has it.
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Doc(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Parses a frame body (either encoding) into a document tree.
pub fn parse_document(body: &[u8]) -> (Encoding, Result<Node<'_>, DecodeError>) {
    let encoding = Encoding::sniff(body);
    let doc = match encoding {
        Encoding::Bson => bson::parse(body),
        Encoding::Json => json::parse(body),
    };
    (encoding, doc)
}

/// The fields of a document, in wire order (what [`Node::Doc`] holds).
type Fields<'a> = Vec<(Cow<'a, str>, Node<'a>)>;

/// A value in a response (or, in tests and tools, a request) document.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer; BSON int32 when it fits, int64 otherwise.
    Int(i64),
    /// A string.
    String(String),
    /// An object, keys in order.
    Object(Vec<(Cow<'static, str>, Value)>),
    /// An array.
    Array(Vec<Value>),
}

impl Value {
    /// Appends this value as a document (no frame prefix). A non-object is wrapped as
    /// `{"result": value}` so that a BSON top level is always a document.
    pub fn encode_document(&self, encoding: Encoding, out: &mut Vec<u8>) {
        match self {
            Value::Object(fields) => match encoding {
                Encoding::Bson => bson::write_doc(fields.iter().map(|(k, v)| (k.as_ref(), v)), out),
                Encoding::Json => json::write(self, out),
            },
            other => Value::Object(vec![(Cow::Borrowed("result"), other.clone())])
                .encode_document(encoding, out),
        }
    }

    /// Appends this value as a complete frame (u32be length + document), e.g. a request
    /// built by a test client or load generator.
    pub fn encode(&self, encoding: Encoding, out: &mut Vec<u8>) {
        framed(out, |out| self.encode_document(encoding, out));
    }
}

/// Writes a u32be length prefix, then whatever `body` appends, then patches the length.
fn framed(out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    body(out);
    let len = u32::try_from(out.len() - start - 4).unwrap_or(u32::MAX);
    if let Some(prefix) = out.get_mut(start..start + 4) {
        prefix.copy_from_slice(&len.to_be_bytes());
    }
}

/// A response: `{"status": i32, "result": ..., "id": ...}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// One of the status constants ([`OK`], [`NOT_ACCEPTABLE`], ...).
    pub status: i32,
    /// A string, an object or an array.
    pub result: Value,
    /// The request's id (`null` when it had none).
    pub id: RequestId,
}

impl Response {
    /// A response with a string result.
    pub fn text(status: i32, result: &str, id: RequestId) -> Response {
        Response {
            status,
            result: Value::String(result.to_owned()),
            id,
        }
    }

    /// Appends this response to `out` as a complete frame: u32be length + document.
    /// Response frames are not bounded by [`MAX_FRAME`]: a long `list` may exceed it.
    pub fn encode(&self, encoding: Encoding, out: &mut Vec<u8>) {
        let fields = [
            ("status", &Value::Int(i64::from(self.status))),
            ("result", &self.result),
            ("id", &self.id.map_or(Value::Null, Value::Int)),
        ];
        framed(out, |out| match encoding {
            Encoding::Bson => bson::write_doc(fields.iter().map(|(k, v)| (*k, *v)), out),
            Encoding::Json => json::write_object(fields.iter().map(|(k, v)| (*k, *v)), out),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{Arbitrary, Gen, QuickCheck};

    // Shared with the tests of `request`, `bson` and `json`.

    pub(super) fn login_expected() -> Request<'static> {
        Request {
            method: Method::Login,
            params: Params::Login(Login {
                username: "Fastdeath".into(),
                password: "mysecretpass".into(),
            }),
            id: Some(1),
        }
    }

    pub(super) fn decoded(body: &[u8]) -> Request<'_> {
        match decode(body) {
            Ok((_, request)) => request,
            Err(rejection) => panic!("rejected: {rejection:?}"),
        }
    }

    pub(super) fn error_of(body: &[u8]) -> DecodeError {
        match decode(body) {
            Ok(request) => panic!("accepted: {request:?}"),
            Err(rejection) => rejection.error,
        }
    }

    #[test]
    fn detect_handshake() {
        let hs = b"version\0\0\0\0\x04";
        assert_eq!(detect(hs), Detect::V4);
        assert_eq!(detect(b"version\0\0\0\0\x04list"), Detect::V4);
        for n in 0..HANDSHAKE_LEN {
            assert_eq!(detect(&hs[..n]), Detect::NeedMore, "prefix {n}");
        }
        assert_eq!(detect(b"version\0\0\0\0\x03"), Detect::WrongVersion(3));
        assert_eq!(detect(b"list\0"), Detect::Legacy);
        assert_eq!(detect(b"l"), Detect::Legacy);
        assert_eq!(detect(b"gaId\0"), Detect::Legacy);
        assert_eq!(detect(b"vers!"), Detect::Legacy);
        assert_eq!(detect(&[0, 0, 0, 4]), Detect::Legacy);
        assert_eq!(detect(b"version\x01"), Detect::Legacy);
    }

    #[test]
    fn frames() {
        let buf = [0, 0, 0, 2, b'{', b'}', 9];
        assert_eq!(
            next_frame(&buf, MAX_FRAME),
            Next::Frame {
                body: b"{}",
                consumed: 6
            }
        );
        assert_eq!(next_frame(&buf[..5], MAX_FRAME), Next::NeedMore);
        assert_eq!(next_frame(&buf[..3], MAX_FRAME), Next::NeedMore);
        assert_eq!(next_frame(&[0, 1, 0, 1], MAX_FRAME), Next::TooLarge(65537));
        assert_eq!(next_frame(&[0xff; 4], MAX_FRAME), Next::TooLarge(u32::MAX));
        assert_eq!(
            next_frame(&[0, 0, 0, 0], MAX_FRAME),
            Next::Frame {
                body: b"",
                consumed: 4
            }
        );
    }

    #[test]
    fn encodings_agree() {
        let request = Value::Object(vec![
            ("method".into(), Value::String("addGame".into())),
            (
                "params".into(),
                Value::Object(vec![
                    ("description".into(), Value::String("Fast, NTW".into())),
                    ("maxPlayers".into(), Value::Int(8)),
                    ("currentPlayers".into(), Value::Int(1)),
                    ("isPrivate".into(), Value::Bool(false)),
                    ("mapname".into(), Value::Null),
                ]),
            ),
            ("id".into(), Value::Int(i64::from(i32::MAX) + 1)),
        ]);
        let mut bson = Vec::new();
        let mut json = Vec::new();
        request.encode_document(Encoding::Bson, &mut bson);
        request.encode_document(Encoding::Json, &mut json);
        assert_eq!(Encoding::sniff(&bson), Encoding::Bson);
        assert_eq!(decode(&bson).map(|(_, r)| r), decode(&json).map(|(_, r)| r));
        assert_eq!(decoded(&bson).id, Some(i64::from(i32::MAX) + 1));
        let mut frame = vec![0xa5];
        request.encode(Encoding::Json, &mut frame);
        assert_eq!(
            next_frame(&frame[1..], MAX_FRAME),
            Next::Frame {
                body: &json[..],
                consumed: json.len() + 4
            }
        );
    }

    /// Does a decoded tree hold exactly what an encoded value held?
    fn same(value: &Value, node: &Node<'_>) -> bool {
        match (value, node) {
            (Value::Null, Node::Null) => true,
            (Value::Bool(a), Node::Bool(b)) => a == b,
            (Value::Int(a), Node::Int(b)) => a == b,
            (Value::String(a), Node::Str(b)) => a == b,
            (Value::Object(a), Node::Doc(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
            }
            (Value::Array(a), Node::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(va, vb)| same(va, vb))
            }
            _ => false,
        }
    }

    pub(super) fn arbitrary_text(g: &mut Gen) -> String {
        let s = String::arbitrary(g);
        let mut end = s.len().min(MAX_STRING);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s[..end].replace('\0', "")
    }

    fn arbitrary_value(g: &mut Gen, depth: usize) -> Value {
        let choice = u8::arbitrary(g) % if depth + 1 >= MAX_DEPTH { 4 } else { 6 };
        match choice {
            0 => Value::Null,
            1 => Value::Bool(bool::arbitrary(g)),
            2 => Value::Int(i64::arbitrary(g)),
            3 => Value::String(arbitrary_text(g)),
            4 => Value::Array(
                (0..u8::arbitrary(g) % 4)
                    .map(|_| arbitrary_value(g, depth + 1))
                    .collect(),
            ),
            _ => arbitrary_object(g, depth + 1),
        }
    }

    fn arbitrary_object(g: &mut Gen, depth: usize) -> Value {
        let n = u8::arbitrary(g) % 4;
        Value::Object(
            (0..n)
                .map(|_| (Cow::Owned(arbitrary_text(g)), arbitrary_value(g, depth)))
                .collect(),
        )
    }

    #[derive(Debug, Clone)]
    struct Doc(Value);

    impl Arbitrary for Doc {
        fn arbitrary(g: &mut Gen) -> Doc {
            Doc(arbitrary_object(g, 1))
        }
    }

    #[test]
    fn round_trip_documents() {
        fn prop(doc: Doc) -> bool {
            [Encoding::Bson, Encoding::Json].iter().all(|encoding| {
                let mut body = Vec::new();
                doc.0.encode_document(*encoding, &mut body);
                let (sniffed, node) = parse_document(&body);
                sniffed == *encoding && node.is_ok_and(|n| same(&doc.0, &n))
            })
        }
        QuickCheck::new()
            .tests(300)
            .quickcheck(prop as fn(Doc) -> bool);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        fn prop(bytes: Vec<u8>) -> bool {
            let _ = detect(&bytes);
            let _ = next_frame(&bytes, MAX_FRAME);
            let _ = decode(&bytes);
            // The same bytes with a truthful BSON length in front, and behind a JSON brace,
            // so the fuzz reaches the element parsers and not only the length checks.
            let mut bson = ((bytes.len() + 5) as i32).to_le_bytes().to_vec();
            bson.extend_from_slice(&bytes);
            bson.push(0);
            let _ = decode(&bson);
            let mut json = b"{".to_vec();
            json.extend_from_slice(&bytes);
            let _ = decode(&json);
            true
        }
        QuickCheck::new()
            .tests(2000)
            .quickcheck(prop as fn(Vec<u8>) -> bool);
    }

    #[test]
    fn mutated_documents_never_panic() {
        fn prop(doc: Doc, at: usize, byte: u8) -> bool {
            [Encoding::Bson, Encoding::Json].iter().all(|encoding| {
                let mut body = Vec::new();
                doc.0.encode_document(*encoding, &mut body);
                let at = at % body.len();
                body[at] = byte;
                let _ = decode(&body);
                let _ = decode(&body[..at]);
                true
            })
        }
        QuickCheck::new()
            .tests(1000)
            .quickcheck(prop as fn(Doc, usize, u8) -> bool);
    }

    #[test]
    fn error_labels() {
        let labels: Vec<&str> = DecodeError::ALL.iter().map(|e| e.as_str()).collect();
        let mut unique = labels.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), labels.len());
        assert_eq!(DecodeError::MissingField("x").as_str(), "missing_field");
        assert_eq!(
            DecodeError::WrongType("id").to_string(),
            "field \"id\" has the wrong type"
        );
    }
}
