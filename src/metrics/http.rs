//! Request parsing and response heads for the operators' HTTP endpoint (no sockets: the
//! driver's `net::http` owns them).
//!
//! Requests are parsed with `httparse` from a buffer bounded by [`MAX_REQUEST_LEN`]; anything
//! longer is answered 431. One request per connection, answered and closed.

/// Longest request head we read; anything longer is answered 431 and closed.
pub const MAX_REQUEST_LEN: usize = 4096;

/// Where a parsed request goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// `GET /`: the status page (HTML).
    Status,
    /// `GET /metrics`.
    Metrics,
    /// `GET /rooms`.
    Rooms,
    /// `GET /wz/games`: the Warzone master server's games.
    WzGames,
    /// `GET /healthz`: 200 while the loop serves, 503 once it is shutting down.
    Health,
    /// Any other path: 404.
    NotFound,
    /// A method other than GET or HEAD: 405.
    MethodNotAllowed,
}

/// Why a request head could not be served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// Not HTTP/1.x: 400.
    Malformed,
    /// The head does not fit [`MAX_REQUEST_LEN`]: 431.
    TooLarge,
}

/// Parses a request head from `buf`: `Ok(None)` until it is complete.
pub fn parse_request(buf: &[u8]) -> Result<Option<Route>, HttpError> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(buf) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) if buf.len() >= MAX_REQUEST_LEN => {
            return Err(HttpError::TooLarge)
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HttpError::TooLarge),
        Err(_) => return Err(HttpError::Malformed),
    }
    let route = match (request.method, request.path) {
        (Some("GET" | "HEAD"), Some(path)) => {
            // Query strings are ignored.
            match path.split('?').next() {
                Some("/" | "/index.html") => Route::Status,
                Some("/metrics") => Route::Metrics,
                Some("/rooms") => Route::Rooms,
                Some("/wz/games") => Route::WzGames,
                Some("/healthz") => Route::Health,
                _ => Route::NotFound,
            }
        }
        _ => Route::MethodNotAllowed,
    };
    Ok(Some(route))
}

/// A whole HTTP/1.1 response with `Connection: close`.
pub fn response(status: u16, content_type: &str, body: &str, out: &mut Vec<u8>) {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    };
    out.clear();
    out.extend_from_slice(
        format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(body.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests() {
        assert_eq!(parse_request(b"GET /metrics HTTP/1.1\r\n"), Ok(None));
        assert_eq!(
            parse_request(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Ok(Some(Route::Metrics))
        );
        assert_eq!(
            parse_request(b"GET /rooms?x=1 HTTP/1.0\r\n\r\n"),
            Ok(Some(Route::Rooms))
        );
        assert_eq!(
            parse_request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
            Ok(Some(Route::Status))
        );
        assert_eq!(
            parse_request(b"GET /healthz HTTP/1.1\r\n\r\n"),
            Ok(Some(Route::Health))
        );
        assert_eq!(
            parse_request(b"GET /nope HTTP/1.1\r\n\r\n"),
            Ok(Some(Route::NotFound))
        );
        assert_eq!(
            parse_request(b"POST /metrics HTTP/1.1\r\n\r\n"),
            Ok(Some(Route::MethodNotAllowed))
        );
        assert_eq!(
            parse_request(b"\x16\x03\x01garbage"),
            Err(HttpError::Malformed)
        );
        let mut long = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        long.resize(MAX_REQUEST_LEN, b'a');
        assert_eq!(parse_request(&long), Err(HttpError::TooLarge));
    }

    #[test]
    fn response_head() {
        let mut out = Vec::new();
        response(404, "text/plain", "no\n", &mut out);
        assert_eq!(
            out,
            b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\
              Connection: close\r\n\r\nno\n"
        );
    }

    quickcheck::quickcheck! {
        fn arbitrary_requests_never_panic(bytes: Vec<u8>) -> bool {
            let _ = parse_request(&bytes);
            true
        }
    }
}
