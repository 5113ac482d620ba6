//! Fuzz targets `wire_ws_upgrade` and `wire_ws_frames`: the general lobby's WebSocket port
//! (`wire::websocket`), fed as its driver feeds it (`net/general/websocket.rs`).
//!
//! `wire_ws_upgrade`: a request head, the bytes read so far. Once a prefix is decided (a
//! whole head or a refusal), more bytes never change it; a buffer of `MAX_HEAD` bytes is
//! always decided; an upgrade's 101 passes a client's check of its accept value, and every
//! refusal reads back as its status.
//!
//! `wire_ws_frames`: the first byte says whether a fragmented message has begun, the next two
//! the payload cap; the rest is a client's stream. Frames are cut as the driver cuts them:
//! each whole frame consumes at least its header and at most the buffer, its payload is within
//! the cap (125 for control frames), re-emitted with its key it reads back the same, and every
//! prefix of a frame reads "need more" or the same refusal.

use crate::wire::websocket::frame::{
    emit_client_frame, next_client_frame, Next, OpCode, MAX_CONTROL_PAYLOAD,
};
use crate::wire::websocket::handshake::{
    accept_key, check_response, emit_refusal, emit_switching, parse_request, route, Parsed, Route,
    UpgradeRefusal, MAX_HEAD,
};

/// Fuzz target `wire_ws_upgrade`.
pub fn upgrade(data: &[u8]) {
    let capped = &data[..data.len().min(MAX_HEAD)];
    let whole = parse_request(capped);
    if capped.len() == MAX_HEAD {
        assert_ne!(whole, Ok(Parsed::Partial), "a full buffer left undecided");
    }
    for cut in [capped.len() / 4, capped.len() / 2, capped.len() * 3 / 4] {
        let early = parse_request(&capped[..cut]);
        if early != Ok(Parsed::Partial) {
            assert_eq!(
                early, whole,
                "more bytes changed the answer decided at {cut}"
            );
        }
    }
    let Ok(Parsed::Complete { request, head_len }) = whole else {
        return;
    };
    assert!(head_len <= capped.len());
    let odd_origins = |origin: &[u8]| origin.len() % 2 == 1;
    let mut out = Vec::new();
    match route(&request, "/lobby", odd_origins) {
        Route::Upgrade { accept } => {
            let key = request.key.unwrap_or_default();
            assert_eq!(accept, accept_key(key));
            assert_eq!(request.path(), "/lobby");
            emit_switching(&accept, &mut out);
            assert_eq!(check_response(&out, key), Ok(Some(out.len())));
        }
        Route::File { path, .. } => assert!(path.starts_with('/') && path != "/lobby"),
        Route::Refuse(refusal) => {
            emit_refusal(refusal, &mut out);
            assert_eq!(check_response(&out, b"key"), Err(refusal.status()));
            if refusal == UpgradeRefusal::Forbidden {
                assert!(request.origin.is_some_and(|o| !odd_origins(o)));
            }
        }
    }
}

/// Fuzz target `wire_ws_frames`.
pub fn frames(data: &[u8]) {
    let [flags, hi, lo, stream @ ..] = data else {
        return;
    };
    let mut in_message = flags & 1 == 1;
    let max = usize::from(u16::from_le_bytes([*hi, *lo]));
    let mut buf = stream.to_vec();
    let mut at = 0;
    while at < buf.len() {
        let original = buf[at..].to_vec();
        let step = match next_client_frame(&mut buf[at..], in_message, max) {
            Next::NeedMore => return,
            Next::Refuse(violation) => {
                for cut in 0..original.len().min(16) {
                    let mut prefix = original[..cut].to_vec();
                    let got = next_client_frame(&mut prefix, in_message, max);
                    assert!(
                        got == Next::NeedMore || got == Next::Refuse(violation),
                        "prefix {cut} read {got:?}, the whole {violation:?}"
                    );
                }
                return;
            }
            Next::Frame {
                header,
                payload,
                consumed,
            } => {
                assert!(consumed >= 6 && consumed <= original.len());
                let limit = if header.opcode.is_control() {
                    MAX_CONTROL_PAYLOAD
                } else {
                    max
                };
                assert!(payload.len() <= limit);
                let key = header.mask.expect("a client frame is masked");
                let mut again = Vec::new();
                emit_client_frame(&mut again, header.fin, header.opcode, key, payload);
                let payload = payload.to_vec();
                match next_client_frame(&mut again, in_message, max) {
                    Next::Frame {
                        header: h,
                        payload: p,
                        ..
                    } => assert!(h == header && p == &payload[..]),
                    other => panic!("re-emitted frame read {other:?}"),
                }
                for cut in 0..consumed {
                    let mut prefix = original[..cut].to_vec();
                    assert_eq!(
                        next_client_frame(&mut prefix, in_message, max),
                        Next::NeedMore
                    );
                }
                match header.opcode {
                    OpCode::Binary | OpCode::Continuation => in_message = !header.fin,
                    _ => {}
                }
                consumed
            }
        };
        at += step;
    }
}
