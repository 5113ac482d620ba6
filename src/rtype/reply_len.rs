//! What each UDP room lobby reply costs in the requester's reply-byte budget (`--udp-reply-bytes`,
//! seed section 14), in the spelling it goes out in: the seed's 8-byte header or the upstream
//! dialect's 17-byte one (`docs/protocols/udp-lobby-upstream.md`), where ROOM_CREATED and
//! JOIN_SUCCESS are followed by a RoomSetConfig. The sizes are the wire crate's, so budget and
//! bytes sent cannot drift apart.

use crate::wire::udp_lobby;
use crate::wire::udp_upstream::lobby::{JOIN_FAILED_LEN, ROOM_CONFIG_LEN, ROOM_PORT_LEN};
use crate::wire::udp_upstream::records::{
    room_list_len, ListedRoom, RecordLayout, MAX_ROOM_LIST_LEN,
};

use super::messages::{Dialect, LobbyReply, RoomInfo};

/// Bytes of a seed-dialect ROOM_CREATED or JOIN_SUCCESS (6-byte payload).
const SEED_ROOM_PORT_LEN: usize = udp_lobby::room_list_len(0) - 2 + 6;
/// Bytes of a seed-dialect JOIN_FAILED (empty payload).
const SEED_JOIN_FAILED_LEN: usize = udp_lobby::room_list_len(0) - 2;

/// Bytes `reply` (other than ROOM_LIST) takes on the wire in `dialect`.
pub(super) fn lobby_reply_len(dialect: Dialect, reply: LobbyReply) -> usize {
    match (dialect, reply) {
        (Dialect::Seed, LobbyReply::JoinFailed(_)) => SEED_JOIN_FAILED_LEN,
        (Dialect::Seed, _) => SEED_ROOM_PORT_LEN,
        (Dialect::Upstream, LobbyReply::JoinFailed(_)) => JOIN_FAILED_LEN,
        (Dialect::Upstream, _) => ROOM_PORT_LEN + ROOM_CONFIG_LEN,
    }
}

/// Bytes of the upstream ROOM_LIST the driver writes for `rooms` (in listing order) in
/// `layout`: records up to the first that would take it past [`MAX_ROOM_LIST_LEN`], as
/// `records::write_room_records` stops.
pub(super) fn upstream_list_len<'a>(
    layout: RecordLayout,
    rooms: impl Iterator<Item = RoomInfo<'a>>,
) -> usize {
    let mut len = room_list_len(0);
    for info in rooms {
        let record = ListedRoom {
            name: info.name,
            ..ListedRoom::default()
        }
        .record_len(layout);
        if len + record > MAX_ROOM_LIST_LEN {
            break;
        }
        len += record;
    }
    len
}
