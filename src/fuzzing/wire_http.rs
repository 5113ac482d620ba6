//! Fuzz target `wire_http`: the metrics endpoint's request parser ([`crate::metrics::http`]),
//! fed as the driver feeds it (`net/http.rs`: the bytes read so far, capped at
//! [`MAX_REQUEST_LEN`], parsed after every read).
//!
//! Once an answer is decided for a prefix of the request, more bytes never change it: the
//! route of a complete head, or the refusal of a malformed one, is the one the whole buffer
//! gets. A buffer at the cap is always decided.

use crate::metrics::{parse_request, response, Route, MAX_REQUEST_LEN};

/// Fuzz target `wire_http`.
pub fn http(data: &[u8]) {
    let capped = &data[..data.len().min(MAX_REQUEST_LEN)];
    let whole = parse_request(capped);
    if capped.len() == MAX_REQUEST_LEN {
        assert_ne!(whole, Ok(None), "a full buffer left undecided");
    }
    for cut in [capped.len() / 4, capped.len() / 2, capped.len() * 3 / 4] {
        let early = parse_request(&capped[..cut]);
        if early != Ok(None) {
            assert_eq!(
                early, whole,
                "more bytes changed the answer decided at {cut}"
            );
        }
    }
    let status = match whole {
        Ok(None) => return,
        Ok(Some(Route::Metrics | Route::Rooms | Route::WzGames)) => 200,
        Ok(Some(Route::NotFound)) => 404,
        Ok(Some(Route::MethodNotAllowed)) => 405,
        Err(_) => 400,
    };
    let mut out = Vec::new();
    response(status, "text/plain", "body\n", &mut out);
    assert!(out.starts_with(b"HTTP/1.1 ") && out.ends_with(b"\r\n\r\nbody\n"));
}
