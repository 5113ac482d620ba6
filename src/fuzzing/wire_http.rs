//! Fuzz target `wire_http`: the metrics endpoint's request parser ([`crate::metrics::http`]),
//! fed as the driver feeds it (`net/http.rs`: the bytes read so far, capped at
//! [`MAX_REQUEST_LEN`], parsed after every read).
//!
//! Once an answer is decided for a prefix of the request, more bytes never change it: the
//! route of a complete head, or the refusal of a malformed one, is the one the whole buffer
//! gets. A buffer at the cap is always decided. The same bytes, as a player-chosen name on
//! the status page (`GET /`), come out of [`escape_html`] with no markup character left and
//! unescape back to themselves.

use crate::metrics::{escape_html, parse_request, response, Route, MAX_REQUEST_LEN};

/// Fuzz target `wire_http`.
pub fn http(data: &[u8]) {
    name_on_the_status_page(data);
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
        Ok(Some(
            Route::Status | Route::Metrics | Route::Rooms | Route::WzGames | Route::Health,
        )) => 200,
        Ok(Some(Route::NotFound)) => 404,
        Ok(Some(Route::MethodNotAllowed)) => 405,
        Err(_) => 400,
    };
    let mut out = Vec::new();
    response(status, "text/plain", "body\n", &mut out);
    assert!(out.starts_with(b"HTTP/1.1 ") && out.ends_with(b"\r\n\r\nbody\n"));
}

/// A name shown on the status page stays text: no `<`, `>`, quote or bare `&` survives
/// escaping, and the escaped text unescapes back to the name.
fn name_on_the_status_page(data: &[u8]) {
    let name = String::from_utf8_lossy(data);
    let mut page = String::new();
    escape_html(&name, &mut page);
    assert!(
        !page.contains(['<', '>', '"', '\'']),
        "markup left in {page:?}"
    );
    let back = page
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    assert_eq!(back, name, "escaping is not reversible");
}
