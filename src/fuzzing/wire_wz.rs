//! Fuzz targets of the Warzone 2100 wire formats: the legacy command stream and replies
//! (`wire_wz_legacy`), the 814-byte GAMESTRUCT (`wire_wz_gamestruct`) and the v4 handshake,
//! frames and BSON/JSON documents (`wire_wz_v4`). Contracts: `docs/protocols/wz-lobby.md`,
//! `wz-v4.md`.
//!
//! Whatever parses is emitted again and must parse back the same: a GAMESTRUCT byte for byte,
//! a status and a probe answer exactly, a `list` reply as every client generation reads it, a
//! v4 document (without floating-point numbers, which no writer of ours emits) as the same
//! tree in the same encoding, and the error response to a refused request as a document
//! carrying the refusal's status.

use std::borrow::Cow;

use crate::wire::wz::v4::{
    self, decode, detect, parse_document, Detect, Encoding, Node, Response, Value, HANDSHAKE_LEN,
    MAX_FRAME,
};
use crate::wire::wz::{
    emit_probe_reply, next_item, parse_game_id, parse_probe_reply, parse_status, push_status,
    read_list_237, read_list_3x, read_list_4x, GameStruct, GameStructRepr, Item, ListReplyWriter,
    ProbeReply, FIRST_BATCH_MAX, GAMESTRUCT_LEN, MAX_MOTD, PROBE_REPLY_LEN,
};

/// Most GAMESTRUCTs of one input re-listed through [`ListReplyWriter`].
const MAX_LISTED: usize = 16;

/// Fuzz target `wire_wz_gamestruct`: the input as a GAMESTRUCT.
pub fn gamestruct(data: &[u8]) {
    let Ok(view) = GameStruct::new_checked(data) else {
        return;
    };
    let _ = (view.name(), view.host(), view.extra(), view.host_port());
    let _ = (view.secondary_hosts(), view.user_flags(), view.mod_list());
    let Ok(repr) = GameStructRepr::parse(&view) else {
        return;
    };
    let bytes = repr.to_bytes();
    assert_eq!(&bytes[..], &data[..GAMESTRUCT_LEN], "a GAMESTRUCT changes");
    // Sanitizing keeps a valid struct valid, and a second pass changes nothing.
    let mut clean = bytes;
    GameStruct::new_unchecked(&mut clean[..]).sanitize_strings();
    let once = GameStructRepr::parse(&GameStruct::new_unchecked(&clean[..]))
        .expect("a sanitized GAMESTRUCT parses");
    GameStruct::new_unchecked(&mut clean[..]).sanitize_strings();
    assert_eq!(once.to_bytes(), clean, "sanitizing twice changes more");
}

/// Fuzz target `wire_wz_legacy`: the input as a host's command stream (the server's reader),
/// and as the replies a client reads.
pub fn legacy(data: &[u8]) {
    let mut rest = data;
    let mut games = Vec::new();
    loop {
        let consumed = match next_item(rest) {
            Item::NeedMore => break,
            Item::Command { consumed, .. } | Item::Garbage { consumed } => consumed,
            Item::GameStruct { consumed } => {
                assert_eq!(consumed, GAMESTRUCT_LEN);
                let view = GameStruct::new_checked(rest).expect("a whole GAMESTRUCT");
                if let Ok(repr) = GameStructRepr::parse(&view) {
                    if games.len() < MAX_LISTED {
                        games.push(repr);
                    }
                }
                consumed
            }
        };
        assert!(
            (1..=rest.len()).contains(&consumed),
            "no progress or past the end"
        );
        rest = &rest[consumed..];
    }
    relist(&games, data);
    client_replies(data);
}

/// The `list` reply written for `games` reads back the same for each client generation.
fn relist(games: &[GameStructRepr], motd: &[u8]) {
    let structs: Vec<[u8; GAMESTRUCT_LEN]> = games.iter().map(|g| g.to_bytes()).collect();
    let mut reply = Vec::new();
    ListReplyWriter::new(&mut reply).write(structs.iter(), 7, motd);
    let first = games.len().min(FIRST_BATCH_MAX);
    let old = read_list_237(&reply).expect("2.3.7 reads the list");
    assert_eq!(old.games, games[..first]);
    let three = read_list_3x(&reply).expect("3.x reads the list");
    assert_eq!(three.games, games[..first]);
    assert_eq!(three.status.as_ref().map(|s| s.0), Some(7));
    let four = read_list_4x(&reply).expect("4.x reads the list");
    let shown: Vec<GameStructRepr> = games.iter().filter(|g| g.dw_size != 0).copied().collect();
    assert_eq!(four.games, shown);
    let (code, sent_motd) = four.status.expect("4.x reads the status");
    assert_eq!(code, 7);
    assert!(sent_motd.len() <= MAX_MOTD && motd.starts_with(&sent_motd));
}

/// The client-side readers: status, `gaId` reply, `list` replies, the probe answer.
fn client_replies(data: &[u8]) {
    if let Ok((code, motd, used)) = parse_status(data) {
        let mut again = Vec::new();
        push_status(&mut again, code, motd);
        assert_eq!(again, &data[..used], "a status changes");
    }
    let _ = parse_game_id(data);
    for read in [read_list_237, read_list_3x, read_list_4x] {
        if let Ok(list) = read(data) {
            assert!(list.games.len() <= data.len() / GAMESTRUCT_LEN);
        }
    }
    match parse_probe_reply(data) {
        ProbeReply::Wzlr { game_id, .. } => {
            assert_eq!(emit_probe_reply(game_id), data[..PROBE_REPLY_LEN]);
        }
        ProbeReply::NeedMore => assert!(data.len() < PROBE_REPLY_LEN),
        ProbeReply::NotWzlr => {}
    }
}

/// Fuzz target `wire_wz_v4`: the input as a connection's first bytes (handshake, then
/// frames), and as one frame body.
pub fn v4(data: &[u8]) {
    let frames = match detect(data) {
        Detect::V4 => &data[HANDSHAKE_LEN..],
        Detect::NeedMore => {
            assert!(data.len() < HANDSHAKE_LEN);
            &[]
        }
        Detect::WrongVersion(_) | Detect::Legacy => data,
    };
    let mut rest = frames;
    while let v4::Next::Frame { body, consumed } = v4::next_frame(rest, MAX_FRAME) {
        assert_eq!(consumed, 4 + body.len());
        body_round_trip(body);
        rest = &rest[consumed..];
    }
    body_round_trip(data);
}

fn body_round_trip(body: &[u8]) {
    let (encoding, doc) = parse_document(body);
    assert_eq!(encoding, Encoding::sniff(body));
    if let Ok(node) = doc {
        if let Some(value) = value_of(&node) {
            let mut again = Vec::new();
            value.encode_document(encoding, &mut again);
            let (encoding_again, reparsed) = parse_document(&again);
            assert_eq!(encoding_again, encoding);
            assert_eq!(reparsed, Ok(node), "a document changes through its writer");
        }
    }
    match decode(body) {
        Ok((encoding, request)) => {
            assert_eq!(encoding, Encoding::sniff(body));
            let _ = request.method.name();
        }
        Err(rejection) => {
            // The server answers a refusal with a response in the request's encoding.
            let status = rejection.error.status();
            let text = rejection.error.to_string();
            let mut frame = Vec::new();
            Response::text(status, &text, rejection.id).encode(rejection.encoding, &mut frame);
            let v4::Next::Frame { body, .. } = v4::next_frame(&frame, u32::MAX) else {
                panic!("an error response is not one whole frame");
            };
            let (encoding, doc) = parse_document(body);
            assert_eq!(encoding, rejection.encoding);
            let doc = doc.expect("an error response parses");
            assert_eq!(doc.get("status"), Some(&Node::Int(i64::from(status))));
        }
    }
}

/// The [`Value`] that writes `node`, unless it holds a floating-point number (no writer of
/// ours emits one).
fn value_of(node: &Node<'_>) -> Option<Value> {
    Some(match node {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(*b),
        Node::Int(i) => Value::Int(*i),
        Node::Double(_) => return None,
        Node::Str(s) => Value::String(s.to_string()),
        Node::Array(items) => Value::Array(items.iter().map(value_of).collect::<Option<_>>()?),
        Node::Doc(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| Some((Cow::Owned(k.to_string()), value_of(v)?)))
                .collect::<Option<_>>()?,
        ),
    })
}
