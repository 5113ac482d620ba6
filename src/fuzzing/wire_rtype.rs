//! Fuzz targets of the R-Type wire formats: the UDP room lobby (`wire_udp_lobby`), the game
//! instance relay (`wire_instance`), the TCP lobby's frames, payloads and stream reader
//! (`wire_tcp_lobby`), the upstream client's TCP dialect with its sniffer
//! (`wire_tcp_upstream`), and the room table a node publishes in the directory
//! (`wire_directory`, `lobbyd-wire`'s `directory`). Contracts: `docs/protocols/udp-lobby.md`,
//! `instance.md`, `tcp-lobby.md`, `tcp-lobby-upstream.md`.
//!
//! Each target parses its input as every message the module reads; whatever parses is emitted
//! again and must parse back to the same message, emitting the same bytes (a round trip
//! through the module's own `emit`). A datagram is parsed twice: as it is, and with its
//! `payloadSize` and CRC-32 made to fit (a mutation almost never keeps them right, so without
//! this the fuzzer would not get past the framing). Nothing here may panic but these
//! assertions.

use crate::net::rtype::tcp_frames::{FrameReader, Piece};
use crate::wire::directory::{InboxRepr, NodeGamesRepr, NodeRoomsRepr};
use crate::wire::frame::{Frame, PacketType, MIN_LEN};
use crate::wire::instance::{self, rewrite_data_for_delivery, ClientMsg, ServerMsg};
use crate::wire::tcp_lobby::{
    self as tcp, name_field, next_frame, next_frame_max, validate_name, Next, MAX_SERVER_PAYLOAD,
};
use crate::wire::tcp_upstream as up;
use crate::wire::udp_lobby::{self, emit_room_list, Reply, ReplyRepr, RequestRepr};

use super::emitted;

/// `data` with its `payloadSize` and CRC-32 rewritten to match its length and content, if it
/// is long enough to be a frame.
fn framed(data: &[u8]) -> Option<Vec<u8>> {
    let mut fixed = data.to_vec();
    let payload = u16::try_from(fixed.len().checked_sub(MIN_LEN)?).ok()?;
    let mut frame = Frame::new_unchecked(&mut fixed[..]);
    frame.set_payload_size(payload);
    frame.fill_checksum();
    Some(fixed)
}

/// Fuzz target `wire_directory`: one node's room table, one node's Warzone games table, and
/// one entry of a node's inbox (an ask of a room's owner, or its answer), as read from the
/// directory; what parses emits the same bytes and has exactly its count of records (each
/// game record emitting its own bytes too).
pub fn directory(data: &[u8]) {
    if let Ok(table) = NodeRoomsRepr::parse(data) {
        assert_eq!(table.records().count(), table.len());
        let bytes = emitted(table.buffer_len(), |buf| table.emit(buf));
        assert_eq!(bytes, data, "a parsed table emits its own bytes");
    }
    if let Ok(entry) = InboxRepr::parse(data) {
        let bytes = emitted(entry.buffer_len(), |buf| entry.emit(buf));
        assert_eq!(bytes, data, "a parsed inbox entry emits its own bytes");
    }
    if let Ok(table) = NodeGamesRepr::parse(data) {
        for record in table.record_bytes() {
            let mut again = [0u8; crate::wire::directory::GAME_RECORD_LEN];
            crate::wire::directory::GameRecord::from_bytes(record).emit(&mut again);
            // An IPv6 host written as ::ffff:a.b.c.d reads back as IPv4 and is written the
            // same way, so every record emits its own bytes.
            assert_eq!(&again, record, "a parsed game record emits its own bytes");
        }
        let bytes = emitted(table.buffer_len(), |buf| table.emit(buf));
        assert_eq!(bytes, data, "a parsed games table emits its own bytes");
    }
}

/// Fuzz target `wire_udp_lobby`: one datagram, read as a request, a reply and a bare frame.
pub fn udp_lobby(data: &[u8]) {
    udp_datagram(data);
    if let Some(fixed) = framed(data) {
        udp_datagram(&fixed);
    }
}

fn udp_datagram(data: &[u8]) {
    frame_view(data);
    if let Ok(request) = RequestRepr::parse(data) {
        let bytes = emitted(request.buffer_len(), |buf| request.emit(buf));
        assert_eq!(RequestRepr::parse(&bytes), Ok(request));
    }
    if let Ok(reply) = ReplyRepr::parse(data) {
        let bytes = emitted(reply.buffer_len(), |buf| reply.emit(buf));
        assert_eq!(ReplyRepr::parse(&bytes), Ok(reply));
        if let Reply::RoomList(list) = reply.reply {
            assert_eq!(list.iter().count(), list.len());
            // The server's streaming emitter writes the same records (reserved bytes zeroed).
            let mut buf = vec![0xa5; bytes.len()];
            let len = emit_room_list(&mut buf, reply.seq, list.iter());
            let again = ReplyRepr::parse(&buf[..len]).expect("an emitted ROOM_LIST parses");
            let Reply::RoomList(again) = again.reply else {
                panic!("ROOM_LIST came back as {again:?}");
            };
            assert!(again.iter().eq(list.iter()), "records changed");
        }
    }
}

/// The shared datagram framing: a checked view never reads past the buffer.
fn frame_view(data: &[u8]) {
    if let Ok(frame) = Frame::new_checked(data) {
        assert!(frame.payload().len() <= data.len());
        let _ = (frame.message_type(), frame.seq(), frame.original_size());
        let _ = (frame.verify_checksum(), frame.packet_type());
        for expected in [PacketType::CLIENT_TO_SERVER, PacketType::SERVER_TO_CLIENT] {
            let _ = crate::wire::frame::check_policy(&frame, expected);
        }
    }
    let _ = udp_lobby::RoomList::parse(data).map(|list| list.iter().count());
}

/// Fuzz target `wire_instance`: one datagram, read as a client and a server message; a
/// client DATA rewritten for delivery must read as the server's DATA of the same bytes.
pub fn instance(data: &[u8]) {
    instance_datagram(data);
    if let Some(fixed) = framed(data) {
        instance_datagram(&fixed);
    }
}

fn instance_datagram(data: &[u8]) {
    if let Ok(client) = instance::ClientRepr::parse(data) {
        let bytes = emitted(client.buffer_len(), |buf| client.emit(buf));
        assert_eq!(instance::ClientRepr::parse(&bytes), Ok(client));
        if let ClientMsg::Data { data: opaque, .. } = client.msg {
            let mut relayed = data.to_vec();
            rewrite_data_for_delivery(&mut relayed, 7);
            let delivered = instance::ServerRepr::parse(&relayed).expect("a relayed DATA parses");
            assert_eq!(delivered.seq, client.seq);
            assert_eq!(
                delivered.msg,
                ServerMsg::Data {
                    sender: 7,
                    data: opaque
                }
            );
        }
    }
    if let Ok(server) = instance::ServerRepr::parse(data) {
        let bytes = emitted(server.buffer_len(), |buf| server.emit(buf));
        assert_eq!(instance::ServerRepr::parse(&bytes), Ok(server));
    }
    // Whatever the bytes, the in-place rewrite stays inside them.
    let mut copy = data.to_vec();
    rewrite_data_for_delivery(&mut copy, 1);
    assert_eq!(copy.len(), data.len());
}

/// A piece of a TCP lobby stream, owned, for comparing two ways of cutting one stream.
#[derive(Debug, PartialEq, Eq)]
enum OwnedPiece {
    Frame(Vec<u8>),
    Oversized { packet_type: u8, declared: usize },
    Upstream,
    UpstreamFrame(Vec<u8>),
    BadLength { declared: usize },
}

fn owned(piece: Piece<'_>) -> OwnedPiece {
    match piece {
        Piece::Frame(frame) => OwnedPiece::Frame(frame.into_inner().to_vec()),
        Piece::Oversized {
            packet_type,
            declared,
        } => OwnedPiece::Oversized {
            packet_type,
            declared,
        },
        Piece::Upstream => OwnedPiece::Upstream,
        Piece::UpstreamFrame(frame) => OwnedPiece::UpstreamFrame(frame.into_inner().to_vec()),
        Piece::BadLength { declared } => OwnedPiece::BadLength { declared },
    }
}

/// Fuzz target `wire_tcp_lobby`: one TCP stream, cut into client frames by the server's
/// reader (whole, and again in small reads, which must give the same pieces; in whichever
/// dialect its first bytes choose, announced at most once and first), each frame parsed as a
/// client message of its dialect; the same bytes cut as RFC server frames and parsed as
/// server messages.
pub fn tcp_lobby(data: &[u8]) {
    let mut whole = Vec::new();
    FrameReader::default().push(data, &mut |piece| {
        whole.push(owned(piece));
        true
    });
    // The same stream in reads of 1 to 8 bytes, the sizes drawn from the stream itself.
    let mut reader = FrameReader::default();
    let mut pieces = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let n = (usize::from(rest[0]) % 8 + 1).min(rest.len());
        reader.push(&rest[..n], &mut |piece| {
            pieces.push(owned(piece));
            true
        });
        rest = &rest[n..];
    }
    assert_eq!(
        pieces, whole,
        "the reader depends on how the stream is split"
    );
    let upstream = whole.first() == Some(&OwnedPiece::Upstream);
    assert_eq!(
        upstream,
        up::sniff(data) == up::Sniff::Dialect(up::Dialect::Upstream),
        "the reader and the sniffer disagree"
    );
    for (i, piece) in whole.iter().enumerate() {
        match piece {
            OwnedPiece::Frame(bytes) => {
                assert!(!upstream, "an RFC frame in an upstream stream");
                let Next::Frame { frame, .. } = next_frame(bytes) else {
                    panic!("a piece is not one whole frame");
                };
                client_frame(frame);
            }
            OwnedPiece::UpstreamFrame(bytes) => {
                assert!(upstream, "an upstream frame in an RFC stream");
                let up::Next::Frame { frame, .. } = up::next_frame(bytes) else {
                    panic!("a piece is not one whole upstream frame");
                };
                upstream_client_frame(frame);
            }
            OwnedPiece::Upstream => assert_eq!(i, 0, "the dialect announced late"),
            OwnedPiece::Oversized { .. } => assert!(!upstream),
            OwnedPiece::BadLength { .. } => assert!(upstream),
        }
    }
    let mut rest = data;
    while let Next::Frame { frame, consumed } = next_frame_max(rest, MAX_SERVER_PAYLOAD) {
        server_frame(frame);
        rest = &rest[consumed..];
    }
}

fn client_frame(frame: tcp::Frame<&[u8]>) {
    let Ok(repr) = tcp::ClientRepr::parse(&frame) else {
        return;
    };
    let bytes = emitted(repr.buffer_len(), |buf| repr.emit(buf));
    let Next::Frame { frame: again, .. } = next_frame(&bytes) else {
        panic!("{repr:?} emits no whole frame");
    };
    assert_eq!(tcp::ClientRepr::parse(&again), Ok(repr));
    if let tcp::ClientRepr::ConnectReq { name } = repr {
        if let Ok(text) = validate_name(name) {
            assert_eq!(validate_name(&name_field(text)), Ok(text));
        }
    }
}

fn server_frame(frame: tcp::Frame<&[u8]>) {
    let Ok(repr) = tcp::ServerRepr::parse(&frame) else {
        return;
    };
    // Compared as bytes: a COUNTDOWN or spawn position may be a NaN.
    let bytes = emitted(repr.buffer_len(), |buf| repr.emit(buf));
    let Next::Frame { frame: again, .. } = next_frame_max(&bytes, MAX_SERVER_PAYLOAD) else {
        panic!("a server message emits no whole frame");
    };
    let again = tcp::ServerRepr::parse(&again).expect("an emitted server message parses");
    assert_eq!(emitted(again.buffer_len(), |buf| again.emit(buf)), bytes);
}

/// Fuzz target `wire_tcp_upstream`: one TCP stream in the upstream client's dialect. The
/// sniffer judges its first bytes (and must agree with the reader), the stream is cut into
/// client frames as the server cuts it (skipping a bad length's bytes), each parsed as a
/// client message, and cut again as server frames, each parsed as a server message; whatever
/// parses must emit the same bytes back.
pub fn tcp_upstream(data: &[u8]) {
    match up::sniff(data) {
        up::Sniff::Dialect(up::Dialect::Upstream) => {
            assert!(!matches!(up::next_frame(data), up::Next::BadLength { .. }));
        }
        up::Sniff::Dialect(up::Dialect::Rfc) => assert!((0x10..=0x1F).contains(&data[0])),
        up::Sniff::NeedMore => assert!(data.len() < up::HEADER_LEN),
        up::Sniff::Neither => {}
    }
    let mut rest = data;
    loop {
        match up::next_frame(rest) {
            up::Next::Frame { frame, consumed } => {
                upstream_client_frame(frame);
                rest = &rest[consumed..];
            }
            up::Next::BadLength { declared } => {
                let skip = up::LENGTH_LEN.saturating_add(declared).min(rest.len());
                rest = &rest[skip..];
            }
            up::Next::NeedMore => break,
        }
    }
    let mut rest = data;
    while let up::Next::Frame { frame, consumed } = up::next_frame_max(rest, up::MAX_LEN) {
        upstream_server_frame(frame);
        rest = &rest[consumed..];
    }
}

fn upstream_client_frame(frame: up::Frame<&[u8]>) {
    let Ok(repr) = up::ClientRepr::parse(&frame) else {
        return;
    };
    let bytes = emitted(repr.buffer_len(), |buf| repr.emit(buf));
    assert_eq!(bytes, frame.into_inner(), "{repr:?} emits other bytes");
    assert_eq!(
        up::sniff(&bytes),
        up::Sniff::Dialect(up::Dialect::Upstream),
        "a client frame is not sniffed as its dialect"
    );
}

fn upstream_server_frame(frame: up::Frame<&[u8]>) {
    let Ok(repr) = up::ServerRepr::parse(&frame) else {
        return;
    };
    let bytes = emitted(repr.buffer_len(), |buf| repr.emit(buf));
    assert_eq!(bytes, frame.into_inner(), "{repr:?} emits other bytes");
    if let up::ServerRepr::ListRoomsAck(list) = repr {
        assert_eq!(list.records().count(), list.len());
        // The server's streaming emitter writes the same list.
        let mut buf = vec![0xa5; bytes.len()];
        let len = up::emit_room_list(&mut buf, list.records());
        assert_eq!(buf[..len], bytes[..], "the streamed list differs");
    }
}
