//! Fuzz target `wire_udp_upstream`: the upstream R-Type UDP lobby dialect
//! (`docs/protocols/udp-lobby-upstream.md`) and the sniffer that sends a datagram on the UDP
//! lobby port to one dialect's parser or the other's.
//!
//! One datagram is parsed as it is and with its `payloadSize` and CRC-32 made to fit (after
//! the magic, so that mutations reach the messages): as a request, as a reply in both record
//! layouts, and as a bare frame. Whatever parses is emitted again and must parse back the
//! same, emitting the same bytes. The sniffer must agree with the parsers: no datagram is a
//! request in both dialects, and one the sniffer gives to the seed's parser never parses as
//! an upstream message. Nothing here may panic but these assertions.

use crate::wire::udp_lobby;
use crate::wire::udp_upstream::lobby::{emit_room_list, Reply, ReplyRepr, Request, RequestRepr};
use crate::wire::udp_upstream::records::{RecordLayout, MAX_ROOM_LIST_LEN};
use crate::wire::udp_upstream::{sniff, Dialect, Error, Frame, MAGIC, MIN_LEN};

use super::emitted;

/// `data` behind the magic, with its `payloadSize` and CRC-32 rewritten to match its length
/// and content, if it is long enough to be a frame.
fn framed(data: &[u8]) -> Option<Vec<u8>> {
    let mut fixed = MAGIC.to_vec();
    fixed.extend_from_slice(data.get(MAGIC.len()..)?);
    let payload = u16::try_from(fixed.len().checked_sub(MIN_LEN)?).ok()?;
    let mut frame = Frame::new_unchecked(&mut fixed[..]);
    frame.set_payload_size(payload);
    frame.fill_checksum();
    Some(fixed)
}

/// Fuzz target `wire_udp_upstream`.
pub fn udp_upstream(data: &[u8]) {
    datagram(data);
    if let Some(fixed) = framed(data) {
        datagram(&fixed);
    }
}

fn datagram(data: &[u8]) {
    let upstream = RequestRepr::parse(data);
    let seed = udp_lobby::RequestRepr::parse(data);
    assert!(
        upstream.is_err() || seed.is_err(),
        "a request in both dialects"
    );
    match sniff(data) {
        Dialect::Seed => assert!(
            matches!(
                Frame::new_checked(data),
                Err(Error::Truncated | Error::BadMagic)
            ),
            "the sniffer gave an upstream frame to the seed's parser"
        ),
        Dialect::Upstream => assert!(seed.is_err(), "the sniffer took a seed request"),
    }
    // Emitters write tick 0 and originalSize = payloadSize, which parsers ignore: only a
    // datagram written that way must come back byte for byte.
    let canonical = Frame::new_checked(data).is_ok_and(|frame| {
        assert_eq!(frame.payload().len(), usize::from(frame.payload_size()));
        let _ = frame.compressed();
        frame.tick() == 0 && frame.original_size() == frame.payload_size()
    });
    if let Ok(request) = upstream {
        let bytes = emitted(request.buffer_len(), |buf| request.emit(buf));
        assert_eq!(RequestRepr::parse(&bytes), Ok(request));
        // `Other` keeps only its code; every lobby request re-emits byte for byte.
        if canonical && !matches!(request.request, Request::Other(_)) {
            assert_eq!(bytes, data, "a request changed on re-emit");
        }
    }
    for layout in [RecordLayout::V1, RecordLayout::V3] {
        let Ok(reply) = ReplyRepr::parse(data, layout) else {
            continue;
        };
        let bytes = emitted(reply.buffer_len(), |buf| reply.emit(buf));
        assert_eq!(ReplyRepr::parse(&bytes, layout), Ok(reply));
        if canonical {
            assert_eq!(bytes, data, "a reply changed on re-emit");
        }
        if let Reply::RoomList(list) = reply.reply {
            assert_eq!(list.iter().count(), list.len());
            // The server's streaming writer gives the same records, or a prefix of them
            // when the list is longer than the client reads.
            let mut buf = vec![0xa5; MAX_ROOM_LIST_LEN];
            let len = emit_room_list(&mut buf, reply.seq, layout, list.iter());
            let again = match ReplyRepr::parse(&buf[..len], layout).map(|r| r.reply) {
                Ok(Reply::RoomList(again)) => again,
                other => panic!("an emitted ROOM_LIST came back as {other:?}"),
            };
            assert!(again.iter().eq(list.iter().take(again.len())));
            if data.len() <= MAX_ROOM_LIST_LEN {
                assert_eq!(again.len(), list.len(), "a list that fits was cut");
            }
        }
    }
}
