//! The WebSocket opening handshake (RFC 6455 section 4) as the general lobby's WebSocket
//! port serves it, and the plain HTTP/1.1 answers the same port gives before an upgrade.
//!
//! [`parse_request`] reads an HTTP/1.1 request head (httparse, zero-copy: every field borrows
//! the buffer) and decides within [`MAX_HEAD`] bytes and [`MAX_HEADERS`] header lines;
//! [`route`] judges it: an upgrade on the lobby's path (with its `Sec-WebSocket-Accept`), a
//! plain GET of a static file, or a refusal with its status (400, 403, 404, 405, 426).
//! [`accept_key`] is section 4.2.2's SHA-1 and base64 of the client's key and the GUID.
//! The writers append a whole response head to a buffer the caller owns.

use base64ct::{Base64, Encoding};
use sha1::{Digest, Sha1};

/// The longest request head read before it is refused (400).
pub const MAX_HEAD: usize = 8 * 1024;
/// The most header lines a request head may have.
pub const MAX_HEADERS: usize = 32;
/// The GUID section 1.3 appends to the client's key.
const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// The length of a `Sec-WebSocket-Accept` value: base64 of 20 bytes.
pub const ACCEPT_LEN: usize = 28;

/// A request head, every field borrowing the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// The method, e.g. `GET`.
    pub method: &'a str,
    /// The request target as sent (query included).
    pub target: &'a str,
    /// An `Upgrade` header names `websocket`.
    pub upgrade_websocket: bool,
    /// A `Connection` header names `upgrade`.
    pub connection_upgrade: bool,
    /// `Sec-WebSocket-Key`.
    pub key: Option<&'a [u8]>,
    /// `Sec-WebSocket-Version`.
    pub version: Option<&'a [u8]>,
    /// `Origin`.
    pub origin: Option<&'a [u8]>,
}

impl<'a> Request<'a> {
    /// The target's path, without its query.
    pub fn path(&self) -> &'a str {
        self.target.split(['?', '#']).next().unwrap_or("")
    }
}

/// What the front of a connection's buffer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// Not yet a whole head (and under [`MAX_HEAD`]).
    Partial,
    /// A whole head of `head_len` bytes; what follows is the connection's next bytes.
    Complete {
        /// The request.
        request: Request<'a>,
        /// The head's length, its blank line included.
        head_len: usize,
    },
}

/// Why a request head is refused before it is judged (all answered 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadError {
    /// Not HTTP/1.1 syntax (or HTTP/1.0: an upgrade needs 1.1).
    Malformed,
    /// No end of head within [`MAX_HEAD`] bytes.
    TooLong,
    /// More than [`MAX_HEADERS`] header lines.
    TooManyHeaders,
}

impl HeadError {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            HeadError::Malformed => "malformed",
            HeadError::TooLong => "too_long",
            HeadError::TooManyHeaders => "too_many_headers",
        }
    }
}

impl core::fmt::Display for HeadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            HeadError::Malformed => "malformed request head",
            HeadError::TooLong => "request head too long",
            HeadError::TooManyHeaders => "too many header lines",
        })
    }
}

/// Reads a request head from the front of `buf`. Total: never panics, never allocates.
pub fn parse_request(buf: &[u8]) -> Result<Parsed<'_>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => return Err(HeadError::TooLong),
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooManyHeaders),
        Err(_) => return Err(HeadError::Malformed),
    };
    if head_len > MAX_HEAD || req.version != Some(1) {
        return Err(if head_len > MAX_HEAD {
            HeadError::TooLong
        } else {
            HeadError::Malformed
        });
    }
    let (Some(method), Some(target)) = (req.method, req.path) else {
        return Err(HeadError::Malformed);
    };
    let mut request = Request {
        method,
        target,
        upgrade_websocket: false,
        connection_upgrade: false,
        key: None,
        version: None,
        origin: None,
    };
    for header in req.headers.iter() {
        let name = header.name;
        if name.eq_ignore_ascii_case("upgrade") {
            request.upgrade_websocket |= has_token(header.value, b"websocket");
        } else if name.eq_ignore_ascii_case("connection") {
            request.connection_upgrade |= has_token(header.value, b"upgrade");
        } else if name.eq_ignore_ascii_case("sec-websocket-key") {
            request.key = Some(trim(header.value));
        } else if name.eq_ignore_ascii_case("sec-websocket-version") {
            request.version = Some(trim(header.value));
        } else if name.eq_ignore_ascii_case("origin") {
            request.origin = Some(trim(header.value));
        }
    }
    Ok(Parsed::Complete { request, head_len })
}

/// `value` is a comma-separated list holding `token` (ASCII case-insensitive).
fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|item| trim(item).eq_ignore_ascii_case(token))
}

/// `bytes` without leading and trailing spaces and tabs.
fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !matches!(b, b' ' | b'\t'));
    let end = bytes.iter().rposition(|b| !matches!(b, b' ' | b'\t'));
    match (start, end) {
        (Some(start), Some(end)) => &bytes[start..=end],
        _ => &[],
    }
}

/// `Sec-WebSocket-Accept` for a client's `key` (section 4.2.2): base64 of the SHA-1 of the key
/// and the GUID.
pub fn accept_key(key: &[u8]) -> [u8; ACCEPT_LEN] {
    let mut sha = Sha1::new();
    sha.update(key);
    sha.update(GUID);
    let digest = sha.finalize();
    let mut out = [0u8; ACCEPT_LEN];
    // 20 bytes are exactly 28 base64 characters, so the buffer always fits.
    if Base64::encode(&digest, &mut out).is_err() {
        out = [b'='; ACCEPT_LEN];
    }
    out
}

/// A key is the base64 of 16 bytes (section 4.1): 24 characters.
fn key_is_valid(key: &[u8]) -> bool {
    let mut decoded = [0u8; 18];
    key.len() == 24 && Base64::decode(key, &mut decoded).is_ok_and(|bytes| bytes.len() == 16)
}

/// A refusal before the upgrade, with its status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpgradeRefusal {
    /// 400: a head that did not parse, a bad or missing key, an upgrade without
    /// `Connection: upgrade`, a target that is not a plain path.
    BadRequest,
    /// 403: an `Origin` outside the allowed list.
    Forbidden,
    /// 404: no such file, or an upgrade on another path than the lobby's.
    NotFound,
    /// 405: a method other than GET (or HEAD for a file).
    MethodNotAllowed,
    /// 426: the lobby's path without an upgrade to WebSocket version 13.
    UpgradeRequired,
}

impl UpgradeRefusal {
    /// The status code.
    pub fn status(self) -> u16 {
        match self {
            UpgradeRefusal::BadRequest => 400,
            UpgradeRefusal::Forbidden => 403,
            UpgradeRefusal::NotFound => 404,
            UpgradeRefusal::MethodNotAllowed => 405,
            UpgradeRefusal::UpgradeRequired => 426,
        }
    }

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            UpgradeRefusal::BadRequest => "bad_request",
            UpgradeRefusal::Forbidden => "forbidden_origin",
            UpgradeRefusal::NotFound => "not_found",
            UpgradeRefusal::MethodNotAllowed => "method_not_allowed",
            UpgradeRefusal::UpgradeRequired => "upgrade_required",
        }
    }

    /// Every refusal, for the metrics catalogue.
    pub const ALL: [UpgradeRefusal; 5] = [
        UpgradeRefusal::BadRequest,
        UpgradeRefusal::Forbidden,
        UpgradeRefusal::NotFound,
        UpgradeRefusal::MethodNotAllowed,
        UpgradeRefusal::UpgradeRequired,
    ];

    fn reason(self) -> &'static str {
        match self {
            UpgradeRefusal::BadRequest => "Bad Request",
            UpgradeRefusal::Forbidden => "Forbidden",
            UpgradeRefusal::NotFound => "Not Found",
            UpgradeRefusal::MethodNotAllowed => "Method Not Allowed",
            UpgradeRefusal::UpgradeRequired => "Upgrade Required",
        }
    }
}

/// What the port does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route<'a> {
    /// Upgrade to WebSocket; the 101 carries this `Sec-WebSocket-Accept`.
    Upgrade {
        /// The accept value.
        accept: [u8; ACCEPT_LEN],
    },
    /// A plain GET (or HEAD: no body) of this path, for the static files.
    File {
        /// The path, without its query; `/` stands for `/index.html`.
        path: &'a str,
        /// HEAD: the headers only.
        head_only: bool,
    },
    /// Answer with this status and close.
    Refuse(UpgradeRefusal),
}

/// Judges `request` for a port whose WebSocket path is `ws_path`; `origin_allowed` says
/// whether a browser's `Origin` may connect (a request without `Origin`, from a program
/// rather than a page, is not checked: a browser always sends one). Checked in this order:
/// the target is a path (400); an upgrade elsewhere than `ws_path` is 404; on `ws_path`:
/// GET (405), `Upgrade: websocket` and version 13 (426), `Connection: upgrade` and a key of
/// 16 bytes (400), the origin (403); any other GET or HEAD is a file.
pub fn route<'a>(
    request: &Request<'a>,
    ws_path: &str,
    origin_allowed: impl Fn(&[u8]) -> bool,
) -> Route<'a> {
    if !request.target.starts_with('/') {
        return Route::Refuse(UpgradeRefusal::BadRequest);
    }
    let path = request.path();
    if path != ws_path {
        if request.upgrade_websocket {
            return Route::Refuse(UpgradeRefusal::NotFound);
        }
        return match request.method {
            "GET" => Route::File {
                path,
                head_only: false,
            },
            "HEAD" => Route::File {
                path,
                head_only: true,
            },
            _ => Route::Refuse(UpgradeRefusal::MethodNotAllowed),
        };
    }
    if request.method != "GET" {
        return Route::Refuse(UpgradeRefusal::MethodNotAllowed);
    }
    if !request.upgrade_websocket || request.version != Some(b"13") {
        return Route::Refuse(UpgradeRefusal::UpgradeRequired);
    }
    let Some(key) = request.key.filter(|key| key_is_valid(key)) else {
        return Route::Refuse(UpgradeRefusal::BadRequest);
    };
    if !request.connection_upgrade {
        return Route::Refuse(UpgradeRefusal::BadRequest);
    }
    if request.origin.is_some_and(|origin| !origin_allowed(origin)) {
        return Route::Refuse(UpgradeRefusal::Forbidden);
    }
    Route::Upgrade {
        accept: accept_key(key),
    }
}

/// Appends the 101 answer with `accept` to `out`.
pub fn emit_switching(accept: &[u8; ACCEPT_LEN], out: &mut Vec<u8>) {
    out.extend_from_slice(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Accept: ",
    );
    out.extend_from_slice(accept);
    out.extend_from_slice(b"\r\n\r\n");
}

/// Appends a refusal with a one-line text body to `out`; the connection closes after it.
/// A 426 names the version and protocol the port speaks.
pub fn emit_refusal(refusal: UpgradeRefusal, out: &mut Vec<u8>) {
    let reason = refusal.reason();
    let status = refusal.status();
    let body_len = reason.len() + 1;
    out.extend_from_slice(format!("HTTP/1.1 {status} {reason}\r\n").as_bytes());
    if refusal == UpgradeRefusal::UpgradeRequired {
        out.extend_from_slice(b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n");
    }
    if refusal == UpgradeRefusal::MethodNotAllowed {
        out.extend_from_slice(b"Allow: GET, HEAD\r\n");
    }
    out.extend_from_slice(
        format!(
            "Content-Type: text/plain; charset=utf-8\r\nContent-Length: {body_len}\r\n\
             Connection: close\r\n\r\n{reason}\n"
        )
        .as_bytes(),
    );
}

/// Appends a 200 head for a file of `len` bytes of `content_type` to `out` (the caller
/// appends the body); the connection closes after it.
pub fn emit_file_head(content_type: &str, len: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len}\r\n\
             Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n\
             Connection: close\r\n\r\n"
        )
        .as_bytes(),
    );
}

/// Appends a client's upgrade request for `path` on `host` with `key` (and `origin`, when
/// given) to `out`.
pub fn emit_client_request(
    host: &str,
    path: &str,
    key: &str,
    origin: Option<&str>,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(
        format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        )
        .as_bytes(),
    );
    if let Some(origin) = origin {
        out.extend_from_slice(format!("Origin: {origin}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
}

/// A client's check of the server's answer at the front of `buf`: `Ok(None)` while the head
/// is incomplete, `Ok(Some(head_len))` for a 101 whose `Sec-WebSocket-Accept` matches `key`,
/// else `Err(status)` (0 when the head does not parse or the accept value is wrong).
pub fn check_response(buf: &[u8], key: &[u8]) -> Result<Option<usize>, u16> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let head_len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return Ok(None),
        _ => return Err(0),
    };
    let code = resp.code.unwrap_or(0);
    if code != 101 {
        return Err(code);
    }
    let expected = accept_key(key);
    let accepted = resp
        .headers
        .iter()
        .any(|h| h.name.eq_ignore_ascii_case("sec-websocket-accept") && trim(h.value) == expected);
    if accepted {
        Ok(Some(head_len))
    } else {
        Err(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::quickcheck;

    /// RFC 6455 section 1.3's sample key and its accept value.
    const SAMPLE_KEY: &[u8] = b"dGhlIHNhbXBsZSBub25jZQ==";
    const SAMPLE_ACCEPT: &[u8] = b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

    /// Section 1.2's client handshake.
    const SAMPLE_REQUEST: &[u8] = b"GET /chat HTTP/1.1\r\nHost: server.example.com\r\n\
        Upgrade: websocket\r\nConnection: Upgrade\r\n\
        Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: http://example.com\r\n\
        Sec-WebSocket-Protocol: chat, superchat\r\nSec-WebSocket-Version: 13\r\n\r\nrest";

    #[test]
    fn the_rfc_sample_key() {
        assert_eq!(&accept_key(SAMPLE_KEY)[..], SAMPLE_ACCEPT);
    }

    #[test]
    fn deconstruct_the_rfc_request() {
        let Ok(Parsed::Complete { request, head_len }) = parse_request(SAMPLE_REQUEST) else {
            panic!("parses");
        };
        assert_eq!(head_len, SAMPLE_REQUEST.len() - 4);
        assert_eq!(
            request,
            Request {
                method: "GET",
                target: "/chat",
                upgrade_websocket: true,
                connection_upgrade: true,
                key: Some(SAMPLE_KEY),
                version: Some(b"13"),
                origin: Some(b"http://example.com"),
            }
        );
        let any = |_: &[u8]| true;
        assert_eq!(
            route(&request, "/chat", any),
            Route::Upgrade {
                accept: SAMPLE_ACCEPT.try_into().unwrap()
            }
        );
        assert_eq!(
            route(&request, "/lobby", any),
            Route::Refuse(UpgradeRefusal::NotFound)
        );
        let only = |o: &[u8]| o == b"https://game.example";
        assert_eq!(
            route(&request, "/chat", only),
            Route::Refuse(UpgradeRefusal::Forbidden)
        );
    }

    #[test]
    fn every_cut_of_a_head_is_partial() {
        for cut in 0..SAMPLE_REQUEST.len() - 4 {
            assert_eq!(parse_request(&SAMPLE_REQUEST[..cut]), Ok(Parsed::Partial));
        }
    }

    #[test]
    fn routes() {
        let head = |text: &str| {
            let text = format!("{text}\r\n\r\n");
            let bytes: &'static [u8] = Box::leak(text.into_bytes().into_boxed_slice());
            match parse_request(bytes) {
                Ok(Parsed::Complete { request, .. }) => request,
                other => panic!("{other:?}"),
            }
        };
        let any = |_: &[u8]| true;
        let upgrade = "Upgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n\
                       Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==";
        let cases = [
            (format!("GET /lobby HTTP/1.1\r\n{upgrade}"), None),
            (
                "GET /lobby HTTP/1.1\r\nHost: x".into(),
                Some(UpgradeRefusal::UpgradeRequired),
            ),
            (
                format!("GET /lobby HTTP/1.1\r\n{}", upgrade.replace("13", "8")),
                Some(UpgradeRefusal::UpgradeRequired),
            ),
            (
                format!("GET /lobby HTTP/1.1\r\n{}", upgrade.replace("dGhl", "")),
                Some(UpgradeRefusal::BadRequest),
            ),
            (
                format!(
                    "GET /lobby HTTP/1.1\r\n{}",
                    upgrade.replace("keep-alive, Upgrade", "close")
                ),
                Some(UpgradeRefusal::BadRequest),
            ),
            (
                format!("POST /lobby HTTP/1.1\r\n{upgrade}"),
                Some(UpgradeRefusal::MethodNotAllowed),
            ),
            (
                format!("GET /other HTTP/1.1\r\n{upgrade}"),
                Some(UpgradeRefusal::NotFound),
            ),
            (
                "DELETE /x HTTP/1.1".into(),
                Some(UpgradeRefusal::MethodNotAllowed),
            ),
            ("GET * HTTP/1.1".into(), Some(UpgradeRefusal::BadRequest)),
        ];
        for (text, refusal) in cases {
            let got = route(&head(&text), "/lobby", any);
            match refusal {
                Some(refusal) => assert_eq!(got, Route::Refuse(refusal), "{text}"),
                None => assert!(matches!(got, Route::Upgrade { .. }), "{text}: {got:?}"),
            }
        }
        assert_eq!(
            route(&head("GET /app.js?v=2 HTTP/1.1"), "/lobby", any),
            Route::File {
                path: "/app.js",
                head_only: false
            }
        );
    }

    #[test]
    fn refusals_of_the_head_itself() {
        assert_eq!(
            parse_request(b"GET / HTTP/1.0\r\n\r\n"),
            Err(HeadError::Malformed)
        );
        assert_eq!(
            parse_request(b"\x00\x01\r\n\r\n"),
            Err(HeadError::Malformed)
        );
        let mut long = b"GET / HTTP/1.1\r\nX: ".to_vec();
        long.resize(MAX_HEAD, b'a');
        assert_eq!(parse_request(&long), Err(HeadError::TooLong));
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(parse_request(&many), Err(HeadError::TooManyHeaders));
    }

    #[test]
    fn construct_and_check_the_answer() {
        let mut out = vec![];
        emit_switching(&accept_key(SAMPLE_KEY), &mut out);
        assert_eq!(
            out,
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
              Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
        );
        assert_eq!(check_response(&out, SAMPLE_KEY), Ok(Some(out.len())));
        assert_eq!(check_response(&out[..20], SAMPLE_KEY), Ok(None));
        assert_eq!(check_response(&out, b"other"), Err(0));
        let mut refused = vec![];
        emit_refusal(UpgradeRefusal::Forbidden, &mut refused);
        assert_eq!(
            refused,
            b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n\
              Content-Length: 10\r\nConnection: close\r\n\r\nForbidden\n"
        );
        assert_eq!(check_response(&refused, SAMPLE_KEY), Err(403));
        let mut request = vec![];
        emit_client_request(
            "h",
            "/lobby",
            "dGhlIHNhbXBsZSBub25jZQ==",
            None,
            &mut request,
        );
        let Ok(Parsed::Complete { request, .. }) = parse_request(&request) else {
            panic!("client request parses");
        };
        assert!(matches!(
            route(&request, "/lobby", |_| false),
            Route::Upgrade { .. }
        ));
    }

    quickcheck! {
        fn arbitrary_bytes_never_panic(bytes: Vec<u8>) -> bool {
            if let Ok(Parsed::Complete { request, head_len }) = parse_request(&bytes) {
                let _ = route(&request, "/lobby", |o| o.len() % 2 == 0);
                return head_len <= bytes.len();
            }
            let _ = check_response(&bytes, SAMPLE_KEY);
            true
        }
    }
}
