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
//! Contract: every function here is total. Any byte string yields a value or a typed
//! [`DecodeError`]; nothing panics, nothing reads past its buffer, and nothing allocates more
//! than a small multiple of a frame body (which the caller has already bounded with
//! [`next_frame`]). Strings are at most [`MAX_STRING`] bytes and documents nest at most
//! [`MAX_DEPTH`] levels; both are checked before the parser copies or recurses.
//! This module must not touch sockets, clocks or the game table.

use std::borrow::Cow;
use std::fmt;

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

/// The `id` of a request: an integer, or absent (then the response carries `null`).
pub type RequestId = Option<i64>;

/// A method name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method<'a> {
    /// `login`.
    Login,
    /// `addGame`.
    AddGame,
    /// `list`.
    List,
    /// `addPlayer`.
    AddPlayer,
    /// `delPlayer`.
    DelPlayer,
    /// `delGame`.
    DelGame,
    /// Any other name; the server answers [`METHOD_NOT_FOUND`].
    Unknown(Cow<'a, str>),
}

impl<'a> Method<'a> {
    /// Maps a wire name (case-sensitive, as the clients send it) to a method.
    pub fn from_name(name: Cow<'a, str>) -> Method<'a> {
        match name.as_ref() {
            "login" => Method::Login,
            "addGame" => Method::AddGame,
            "list" => Method::List,
            "addPlayer" => Method::AddPlayer,
            "delPlayer" => Method::DelPlayer,
            "delGame" => Method::DelGame,
            _ => Method::Unknown(name),
        }
    }

    /// The wire name.
    pub fn name(&self) -> &str {
        match self {
            Method::Login => "login",
            Method::AddGame => "addGame",
            Method::List => "list",
            Method::AddPlayer => "addPlayer",
            Method::DelPlayer => "delPlayer",
            Method::DelGame => "delGame",
            Method::Unknown(name) => name,
        }
    }
}

/// `login` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login<'a> {
    /// Account name.
    pub username: Cow<'a, str>,
    /// Password in clear (the connection is expected to be private; see the protocol doc).
    pub password: Cow<'a, str>,
}

/// `addGame` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddGame<'a> {
    /// Game name shown in the list.
    pub description: Cow<'a, str>,
    /// Player slots.
    pub max_players: u32,
    /// Players currently in the game.
    pub current_players: u32,
    /// The host's game port (default 2100 is the server's decision).
    pub port: Option<u16>,
    /// Map name.
    pub mapname: Option<Cow<'a, str>>,
    /// The host player's name.
    pub hostplayer: Option<Cow<'a, str>>,
    /// Version string, e.g. "2.3.7".
    pub multi_ver: Option<Cow<'a, str>>,
    /// Netcode version, major.
    pub wz_ver_major: Option<u32>,
    /// Netcode version, minor.
    pub wz_ver_minor: Option<u32>,
    /// Whether the game has a password.
    pub is_private: Option<bool>,
    /// Mod list as the client sends it.
    pub modlist: Option<Cow<'a, str>>,
}

/// `addPlayer` parameters; which are needed is the server's decision.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AddPlayer<'a> {
    /// The host's game.
    pub game_id: Option<u32>,
    /// The slot the player took.
    pub slot: Option<u32>,
    /// The player's in-game name.
    pub name: Option<Cow<'a, str>>,
    /// The player's account id (seed form).
    pub userid: Option<i64>,
    /// The player's account name (implemented form).
    pub username: Option<Cow<'a, str>>,
    /// The player's session id: `sessionid`, or its alias `session`.
    pub sessionid: Option<Cow<'a, str>>,
}

/// `delPlayer` parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DelPlayer {
    /// The host's game.
    pub game_id: Option<u32>,
    /// The slot the player left.
    pub slot: Option<u32>,
    /// The player's account id.
    pub userid: Option<i64>,
}

/// `delGame` parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DelGame {
    /// The game to delist; absent means "the game this connection added".
    pub game_id: Option<u32>,
}

/// Parameters, typed per method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Params<'a> {
    /// For [`Method::Login`].
    Login(Login<'a>),
    /// For [`Method::AddGame`].
    AddGame(AddGame<'a>),
    /// For [`Method::List`] (params are `""`, `{}`, `null` or absent).
    List,
    /// For [`Method::AddPlayer`].
    AddPlayer(AddPlayer<'a>),
    /// For [`Method::DelPlayer`].
    DelPlayer(DelPlayer),
    /// For [`Method::DelGame`].
    DelGame(DelGame),
    /// For [`Method::Unknown`]: params are not looked at.
    Unknown,
}

/// A decoded request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// What the client asks for.
    pub method: Method<'a>,
    /// Its parameters.
    pub params: Params<'a>,
    /// Echoed back in the response.
    pub id: RequestId,
}

/// A request that could not be decoded, with what the server needs to answer it anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejection {
    /// Why.
    pub error: DecodeError,
    /// The encoding to answer in (the sniffed one, even if the body is broken).
    pub encoding: Encoding,
    /// The request id, when the document parsed far enough to carry one.
    pub id: RequestId,
}

/// Decodes a frame body into a request, and tells the encoding to answer in.
pub fn decode(body: &[u8]) -> Result<(Encoding, Request<'_>), Rejection> {
    let (encoding, doc) = parse_document(body);
    let reject = |error, id| Rejection {
        error,
        encoding,
        id,
    };
    let doc = doc.map_err(|e| reject(e, None))?;
    let id = match doc.get("id") {
        None | Some(Node::Null) => None,
        Some(Node::Int(i)) => Some(*i),
        Some(_) => return Err(reject(DecodeError::WrongType("id"), None)),
    };
    let request = Request::from_document(doc, id).map_err(|e| reject(e, id))?;
    Ok((encoding, request))
}

impl<'a> Request<'a> {
    /// Builds a request from a parsed document whose `id` has already been read.
    fn from_document(doc: Node<'a>, id: RequestId) -> Result<Request<'a>, DecodeError> {
        let Node::Doc(mut fields) = doc else {
            return Err(DecodeError::WrongType("document"));
        };
        let method = match take(&mut fields, "method") {
            Some(Node::Str(name)) => Method::from_name(name),
            Some(_) => return Err(DecodeError::WrongType("method")),
            None => return Err(DecodeError::MissingField("method")),
        };
        let params = match &method {
            Method::Unknown(_) => Params::Unknown,
            _ => {
                let mut p = match take(&mut fields, "params") {
                    None | Some(Node::Null) => Vec::new(),
                    Some(Node::Str(s)) if s.is_empty() => Vec::new(),
                    Some(Node::Doc(p)) => p,
                    Some(_) => return Err(DecodeError::WrongType("params")),
                };
                parse_params(&method, &mut p)?
            }
        };
        Ok(Request { method, params, id })
    }
}

fn parse_params<'a>(
    method: &Method<'a>,
    p: &mut Vec<(Cow<'a, str>, Node<'a>)>,
) -> Result<Params<'a>, DecodeError> {
    Ok(match method {
        Method::Login => Params::Login(Login {
            username: required(text(p, "username")?, "username")?,
            password: required(text(p, "password")?, "password")?,
        }),
        Method::AddGame => Params::AddGame(AddGame {
            description: required(text(p, "description")?, "description")?,
            max_players: required(int(p, "maxPlayers")?, "maxPlayers")?,
            current_players: required(int(p, "currentPlayers")?, "currentPlayers")?,
            port: int(p, "port")?,
            mapname: text(p, "mapname")?,
            hostplayer: text(p, "hostplayer")?,
            multi_ver: text(p, "multiVer")?,
            wz_ver_major: int(p, "wzVerMajor")?,
            wz_ver_minor: int(p, "wzVerMinor")?,
            is_private: flag(p, "isPrivate")?,
            modlist: text(p, "modlist")?,
        }),
        Method::List => Params::List,
        Method::AddPlayer => {
            let sessionid = text(p, "sessionid")?;
            let session = text(p, "session")?;
            Params::AddPlayer(AddPlayer {
                game_id: int(p, "gameId")?,
                slot: int(p, "slot")?,
                name: text(p, "name")?,
                userid: int(p, "userid")?,
                username: text(p, "username")?,
                sessionid: sessionid.or(session),
            })
        }
        Method::DelPlayer => Params::DelPlayer(DelPlayer {
            game_id: int(p, "gameId")?,
            slot: int(p, "slot")?,
            userid: int(p, "userid")?,
        }),
        Method::DelGame => Params::DelGame(DelGame {
            game_id: int(p, "gameId")?,
        }),
        Method::Unknown(_) => Params::Unknown,
    })
}

/// The fields of a document, in wire order.
type Fields<'a> = Vec<(Cow<'a, str>, Node<'a>)>;

/// Removes and returns the first field named `key` (so strings move out without a copy).
fn take<'a>(fields: &mut Vec<(Cow<'a, str>, Node<'a>)>, key: &str) -> Option<Node<'a>> {
    let at = fields.iter().position(|(k, _)| k == key)?;
    Some(fields.swap_remove(at).1)
}

fn required<T>(value: Option<T>, name: &'static str) -> Result<T, DecodeError> {
    value.ok_or(DecodeError::MissingField(name))
}

/// An optional string field; `null` counts as absent.
fn text<'a>(
    p: &mut Vec<(Cow<'a, str>, Node<'a>)>,
    name: &'static str,
) -> Result<Option<Cow<'a, str>>, DecodeError> {
    match take(p, name) {
        None | Some(Node::Null) => Ok(None),
        Some(Node::Str(s)) => Ok(Some(s)),
        Some(_) => Err(DecodeError::WrongType(name)),
    }
}

/// An optional integer field, range-checked into `T`; `null` counts as absent.
fn int<T: TryFrom<i64>>(p: &mut Fields<'_>, name: &'static str) -> Result<Option<T>, DecodeError> {
    match take(p, name) {
        None | Some(Node::Null) => Ok(None),
        Some(Node::Int(i)) => T::try_from(i)
            .map(Some)
            .map_err(|_| DecodeError::OutOfRange(name)),
        Some(_) => Err(DecodeError::WrongType(name)),
    }
}

/// An optional boolean; C clients may send 0/1, so integers count (non-zero is true).
fn flag(p: &mut Fields<'_>, name: &'static str) -> Result<Option<bool>, DecodeError> {
    match take(p, name) {
        None | Some(Node::Null) => Ok(None),
        Some(Node::Bool(b)) => Ok(Some(b)),
        Some(Node::Int(i)) => Ok(Some(i != 0)),
        Some(_) => Err(DecodeError::WrongType(name)),
    }
}

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

/// The hand-written BSON subset: double, string, document, array, bool, null, int32, int64.
mod bson {
    use super::{DecodeError, Node, Value, MAX_DEPTH, MAX_STRING};
    use std::borrow::Cow;

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
        let declared =
            usize::try_from(le_i32(buf, at)?).map_err(|_| DecodeError::LengthMismatch)?;
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

    type Fields<'a> = Vec<(Cow<'a, str>, Node<'a>)>;

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
}

/// JSON via `serde_json`, into [`Node`] through a depth-counting visitor, so the depth limit
/// is enforced before each level is entered and unescaped strings are borrowed.
mod json {
    use super::{DecodeError, Node, Value, MAX_DEPTH, MAX_STRING};
    use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
    use std::borrow::Cow;
    use std::cell::Cell;
    use std::fmt;

    /// Parses a JSON object that fills `body` (surrounding whitespace allowed).
    pub fn parse(body: &[u8]) -> Result<Node<'_>, DecodeError> {
        let fault = Cell::new(None);
        let mut de = serde_json::Deserializer::from_slice(body);
        let node = NodeSeed {
            depth: 0,
            fault: &fault,
        }
        .deserialize(&mut de)
        .and_then(|node| de.end().map(|()| node));
        match node {
            Ok(node @ Node::Doc(_)) => Ok(node),
            Ok(_) => Err(DecodeError::BadJson),
            Err(_) => Err(fault.get().unwrap_or(DecodeError::BadJson)),
        }
    }

    #[derive(Clone, Copy)]
    struct NodeSeed<'c> {
        depth: usize,
        fault: &'c Cell<Option<DecodeError>>,
    }

    impl NodeSeed<'_> {
        fn fail<E: de::Error>(&self, error: DecodeError) -> E {
            self.fault.set(Some(error));
            E::custom(error)
        }

        fn text<'de, E: de::Error>(&self, s: Cow<'de, str>) -> Result<Cow<'de, str>, E> {
            if s.len() > MAX_STRING {
                Err(self.fail(DecodeError::TooLong))
            } else {
                Ok(s)
            }
        }

        fn deeper<E: de::Error>(&self) -> Result<NodeSeed<'_>, E> {
            if self.depth >= MAX_DEPTH {
                Err(self.fail(DecodeError::TooDeep))
            } else {
                Ok(NodeSeed {
                    depth: self.depth + 1,
                    fault: self.fault,
                })
            }
        }
    }

    impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
        type Value = Node<'de>;
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Node<'de>, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for NodeSeed<'_> {
        type Value = Node<'de>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Node<'de>, E> {
            Ok(Node::Null)
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node<'de>, E> {
            Ok(Node::Bool(v))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node<'de>, E> {
            Ok(Node::Int(v))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node<'de>, E> {
            // Above i64::MAX the value is no valid id or count; keep it as a number.
            Ok(i64::try_from(v).map_or(Node::Double(v as f64), Node::Int))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node<'de>, E> {
            Ok(Node::Double(v))
        }
        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Node<'de>, E> {
            self.text(Cow::Borrowed(v)).map(Node::Str)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Node<'de>, E> {
            // Length first: never copy a string that is about to be refused.
            self.text(Cow::Borrowed(v))
                .map(|s| Node::Str(Cow::Owned(s.into_owned())))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
            let inner = self.deeper()?;
            let mut fields = Vec::new();
            while let Some(key) = map.next_key_seed(KeySeed(inner))? {
                let value = map.next_value_seed(inner)?;
                fields.push((key, value));
            }
            Ok(Node::Doc(fields))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
            let inner = self.deeper()?;
            let mut items = Vec::new();
            while let Some(item) = seq.next_element_seed(inner)? {
                items.push(item);
            }
            Ok(Node::Array(items))
        }
    }

    struct KeySeed<'c>(NodeSeed<'c>);

    impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
        type Value = Cow<'de, str>;
        fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
            d.deserialize_str(self)
        }
    }

    impl<'de> Visitor<'de> for KeySeed<'_> {
        type Value = Cow<'de, str>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object key")
        }
        fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
            self.0.text(Cow::Borrowed(v))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Cow<'de, str>, E> {
            self.0
                .text(Cow::Borrowed(v))
                .map(|s| Cow::Owned(s.into_owned()))
        }
    }

    /// Appends `value` as JSON text.
    pub fn write(value: &Value, out: &mut Vec<u8>) {
        match value {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
            Value::String(s) => string(s, out),
            Value::Object(fields) => write_object(fields.iter().map(|(k, v)| (k.as_ref(), v)), out),
            Value::Array(items) => {
                out.push(b'[');
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        out.extend_from_slice(b", ");
                    }
                    write(item, out);
                }
                out.push(b']');
            }
        }
    }

    /// Appends an object, in the seed's `{"key": value, ...}` layout.
    pub fn write_object<'v>(fields: impl Iterator<Item = (&'v str, &'v Value)>, out: &mut Vec<u8>) {
        out.push(b'{');
        for (n, (key, value)) in fields.enumerate() {
            if n > 0 {
                out.extend_from_slice(b", ");
            }
            string(key, out);
            out.extend_from_slice(b": ");
            write(value, out);
        }
        out.push(b'}');
    }

    fn string(s: &str, out: &mut Vec<u8>) {
        out.push(b'"');
        for c in s.chars() {
            match c {
                '"' => out.extend_from_slice(b"\\\""),
                '\\' => out.extend_from_slice(b"\\\\"),
                '\n' => out.extend_from_slice(b"\\n"),
                '\r' => out.extend_from_slice(b"\\r"),
                '\t' => out.extend_from_slice(b"\\t"),
                c if u32::from(c) < 0x20 => {
                    out.extend_from_slice(format!("\\u{:04x}", u32::from(c)).as_bytes())
                }
                c => {
                    let mut utf8 = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                }
            }
        }
        out.push(b'"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{quickcheck, Arbitrary, Gen, QuickCheck};

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

    fn login_expected() -> Request<'static> {
        Request {
            method: Method::Login,
            params: Params::Login(Login {
                username: "Fastdeath".into(),
                password: "mysecretpass".into(),
            }),
            id: Some(1),
        }
    }

    fn decoded(body: &[u8]) -> Request<'_> {
        match decode(body) {
            Ok((_, request)) => request,
            Err(rejection) => panic!("rejected: {rejection:?}"),
        }
    }

    fn error_of(body: &[u8]) -> DecodeError {
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
    fn deconstruct_seed_json() {
        let login = br#"{"method": "login", "params": {"username": "Fastdeath", "password": "mysecretpass"}, "id": 1}"#;
        assert_eq!(decode(login).map(|(e, _)| e), Ok(Encoding::Json));
        assert_eq!(decoded(login), login_expected());

        let add = br#"{"method": "addGame", "params": {"description": "Fast, NTW", "maxPlayers": 8, "currentPlayers": 1}, "id": 2}"#;
        let Params::AddGame(game) = decoded(add).params else {
            panic!("not addGame")
        };
        assert_eq!(game.description, "Fast, NTW");
        assert_eq!((game.max_players, game.current_players), (8, 1));
        assert_eq!(
            (game.port, game.mapname, game.is_private),
            (None, None, None)
        );

        for list in [
            &br#"{"method": "list", "params": "", "id": 2}"#[..],
            br#"{"method": "list", "params": {}, "id": 2}"#,
            br#"{"method": "list", "id": 2}"#,
        ] {
            let r = decoded(list);
            assert_eq!(
                (r.method, r.params, r.id),
                (Method::List, Params::List, Some(2))
            );
        }

        let add_player = br#"{"method": "addPlayer", "params": {"userid": 2, "sessionid": "0123abcd"}, "id": 3}"#;
        let Params::AddPlayer(p) = decoded(add_player).params else {
            panic!("not addPlayer")
        };
        assert_eq!(
            (p.userid, p.sessionid.as_deref()),
            (Some(2), Some("0123abcd"))
        );

        let del_player = br#"{"method": "delPlayer", "params": {"userid": 2}, "id": 4}"#;
        assert_eq!(
            decoded(del_player).params,
            Params::DelPlayer(DelPlayer {
                userid: Some(2),
                ..DelPlayer::default()
            })
        );
        // The seed's delGame carries a userid; unknown keys are ignored.
        let del_game = br#"{"method": "delGame", "params": {"userid": 2}, "id": 4}"#;
        assert_eq!(
            decoded(del_game).params,
            Params::DelGame(DelGame { game_id: None })
        );
        let del_game = br#"{"method": "delGame", "params": {"gameId": 7}}"#;
        let r = decoded(del_game);
        assert_eq!(
            (r.params, r.id),
            (Params::DelGame(DelGame { game_id: Some(7) }), None)
        );
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
    fn construct_response_json() {
        let mut out = vec![0xa5];
        let welcome = "Welcome to Warzone! Your game is now listed in the lobby server";
        Response::text(OK, welcome, Some(1)).encode(Encoding::Json, &mut out);
        let text = format!(r#"{{"status": 0, "result": "{welcome}", "id": 1}}"#);
        let mut golden = vec![0xa5];
        golden.extend_from_slice(&(text.len() as u32).to_be_bytes());
        golden.extend_from_slice(text.as_bytes());
        assert_eq!(out, golden);

        let mut out = Vec::new();
        let result = Value::Object(vec![
            ("userid".into(), Value::Int(2)),
            ("sessionid".into(), Value::String("ab\"\\\n\u{1}é".into())),
        ]);
        Response {
            status: OK,
            result,
            id: None,
        }
        .encode(Encoding::Json, &mut out);
        assert_eq!(
            &out[4..],
            r#"{"status": 0, "result": {"userid": 2, "sessionid": "ab\"\\\n\u0001é"}, "id": null}"#
                .as_bytes()
        );
    }

    #[test]
    fn deep_nesting() {
        let ok = format!(
            r#"{{"method": "list", "x": {}1{}}}"#,
            "[".repeat(MAX_DEPTH - 1),
            "]".repeat(MAX_DEPTH - 1)
        );
        assert!(decode(ok.as_bytes()).is_ok());
        let deep = format!(
            r#"{{"method": "list", "x": {}1{}}}"#,
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        assert_eq!(error_of(deep.as_bytes()), DecodeError::TooDeep);
        let very_deep = format!("{{\"a\": {}", "[".repeat(100_000));
        assert_eq!(error_of(very_deep.as_bytes()), DecodeError::TooDeep);

        // BSON: documents nested inside each other, built inside out.
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

    #[test]
    fn wrong_types_and_missing_fields() {
        let cases: &[(&[u8], DecodeError)] = &[
            (br#"{"params": {}}"#, DecodeError::MissingField("method")),
            (br#"{"method": 1}"#, DecodeError::WrongType("method")),
            (br#"{"method": "list", "id": "1"}"#, DecodeError::WrongType("id")),
            (br#"{"method": "list", "id": 1.5}"#, DecodeError::WrongType("id")),
            (br#"{"method": "list", "params": []}"#, DecodeError::WrongType("params")),
            (br#"{"method": "list", "params": "x"}"#, DecodeError::WrongType("params")),
            (br#"{"method": "login", "params": {"username": "a"}}"#, DecodeError::MissingField("password")),
            (br#"{"method": "login", "params": {"username": 5, "password": "p"}}"#, DecodeError::WrongType("username")),
            (br#"{"method": "addGame", "params": {"description": "d", "maxPlayers": 8}}"#, DecodeError::MissingField("currentPlayers")),
            (br#"{"method": "addGame", "params": {"description": "d", "maxPlayers": -1, "currentPlayers": 0}}"#, DecodeError::OutOfRange("maxPlayers")),
            (br#"{"method": "addGame", "params": {"description": "d", "maxPlayers": 8, "currentPlayers": 0, "port": 70000}}"#, DecodeError::OutOfRange("port")),
            (br#"{"method": "addGame", "params": {"description": "d", "maxPlayers": 8, "currentPlayers": 0, "isPrivate": "no"}}"#, DecodeError::WrongType("isPrivate")),
            (br#"{"method": "addPlayer", "params": {"gameId": "1"}}"#, DecodeError::WrongType("gameId")),
            (br#"{"method": "delGame", "params": {"gameId": 99999999999}}"#, DecodeError::OutOfRange("gameId")),
            (br#"{"method": "list"} x"#, DecodeError::BadJson),
            (br#"{"method": "list""#, DecodeError::BadJson),
            (b"  {\"method\": \"l\\ud800\"}", DecodeError::BadJson),
        ];
        for (body, error) in cases {
            assert_eq!(error_of(body), *error, "{}", String::from_utf8_lossy(body));
            assert_eq!(
                error.as_str(),
                DecodeError::ALL
                    .iter()
                    .find(|e| e.as_str() == error.as_str())
                    .map_or("", |e| e.as_str())
            );
        }
        let long = format!(r#"{{"method": "{}"}}"#, "m".repeat(MAX_STRING + 1));
        assert_eq!(error_of(long.as_bytes()), DecodeError::TooLong);
        let escaped = format!(r#"{{"method": "\n{}"}}"#, "m".repeat(MAX_STRING));
        assert_eq!(error_of(escaped.as_bytes()), DecodeError::TooLong);
        let rejection = decode(br#"{"method": "login", "id": 9}"#).unwrap_err();
        assert_eq!(
            (rejection.id, rejection.encoding),
            (Some(9), Encoding::Json)
        );
        assert_eq!(rejection.error.status(), INVALID_DATA);
        assert_eq!(DecodeError::BadBson.status(), PARSE_ERROR);
    }

    #[test]
    fn unknown_method_and_aliases() {
        let r = decoded(br#"{"method": "logout", "params": [1, 2], "id": 5}"#);
        assert_eq!(r.method, Method::Unknown("logout".into()));
        assert_eq!((r.params, r.id), (Params::Unknown, Some(5)));
        let r = decoded(br#"{"method": "addPlayer", "params": {"gameId": 1, "slot": 2, "name": "n", "username": "u", "session": "s", "isPrivate": true}}"#);
        assert_eq!(
            r.params,
            Params::AddPlayer(AddPlayer {
                game_id: Some(1),
                slot: Some(2),
                name: Some("n".into()),
                userid: None,
                username: Some("u".into()),
                sessionid: Some("s".into()),
            })
        );
        let r = decoded(br#"{"method": "addGame", "params": {"description": "d", "maxPlayers": 8, "currentPlayers": 0, "port": 2100, "mapname": "Rush", "hostplayer": "h", "multiVer": "2.3.7", "wzVerMajor": 2, "wzVerMinor": 98, "isPrivate": 1, "modlist": ""}}"#);
        assert_eq!(
            r.params,
            Params::AddGame(AddGame {
                description: "d".into(),
                max_players: 8,
                current_players: 0,
                port: Some(2100),
                mapname: Some("Rush".into()),
                hostplayer: Some("h".into()),
                multi_ver: Some("2.3.7".into()),
                wz_ver_major: Some(2),
                wz_ver_minor: Some(98),
                is_private: Some(true),
                modlist: Some("".into()),
            })
        );
        for method in [
            "login",
            "addGame",
            "list",
            "addPlayer",
            "delPlayer",
            "delGame",
            "x",
        ] {
            assert_eq!(Method::from_name(method.into()).name(), method);
        }
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

    fn arbitrary_text(g: &mut Gen) -> String {
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
    fn round_trip_login() {
        fn prop(id: i64) -> bool {
            let mut g = Gen::new(300);
            let (user, pass) = (arbitrary_text(&mut g), arbitrary_text(&mut g));
            let request = Value::Object(vec![
                ("method".into(), Value::String("login".into())),
                (
                    "params".into(),
                    Value::Object(vec![
                        ("username".into(), Value::String(user.clone())),
                        ("password".into(), Value::String(pass.clone())),
                    ]),
                ),
                ("id".into(), Value::Int(id)),
            ]);
            [Encoding::Bson, Encoding::Json].iter().all(|encoding| {
                let mut body = Vec::new();
                request.encode_document(*encoding, &mut body);
                decode(&body).is_ok_and(|(e, r)| {
                    e == *encoding
                        && r.id == Some(id)
                        && r.params
                            == Params::Login(Login {
                                username: user.as_str().into(),
                                password: pass.as_str().into(),
                            })
                })
            })
        }
        quickcheck(prop as fn(i64) -> bool);
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
