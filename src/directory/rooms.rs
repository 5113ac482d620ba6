//! The other nodes' rooms tables as the directory thread reads them back (one `MGET` of
//! every node's `lobbyd:rooms:{N}`), merged into what a ROOM_LIST copies: joinable rooms
//! first. The games' counterpart is [`super::games`]. Imports only `wire` and the Redis
//! reply type.

use redis::Value;

use crate::wire::directory::{is_joinable, NodeRoomsRepr, MAX_NODE_ROOMS};
use crate::wire::udp_lobby::{RoomRecord, ROOM_RECORD_LEN};

/// The other nodes' rooms as last read, ready for a ROOM_LIST.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteRooms {
    /// Encoded ROOM_LIST records, joinable rooms first (each group in node order, each node's
    /// in its own listing order), at most [`MAX_NODE_ROOMS`].
    pub records: Vec<u8>,
    /// Nodes with a live rooms key, this one excepted.
    pub nodes: usize,
    /// `(node, rooms it lists)` for each of them.
    pub per_node: Vec<(u8, usize)>,
    /// Rooms keys that did not parse, or named another node than their key.
    pub bad_tables: usize,
}

impl RemoteRooms {
    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len() / ROOM_RECORD_LEN
    }

    /// Whether no other node lists a room.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// The other nodes' rooms keys as read, `(node of the key, value)`, merged for a ROOM_LIST:
/// joinable rooms first (each group in node order, each node's in its own order), at most
/// [`MAX_NODE_ROOMS`]; a value that does not parse, or names another node than its key, is
/// skipped and counted.
pub fn merge_tables<'a>(values: impl IntoIterator<Item = (u8, &'a [u8])>) -> RemoteRooms {
    let mut remote = RemoteRooms::default();
    let mut tables = Vec::new();
    for (node, bytes) in values {
        match NodeRoomsRepr::parse(bytes) {
            Ok(table) if table.node == node => tables.push(table),
            _ => remote.bad_tables += 1,
        }
    }
    remote.nodes = tables.len();
    remote.per_node = tables.iter().map(|t| (t.node, t.len())).collect();
    let records = || tables.iter().flat_map(|t| t.record_bytes());
    let joinable = records().filter(|r| is_joinable(&RoomRecord::from_bytes(r)));
    let others = records().filter(|r| !is_joinable(&RoomRecord::from_bytes(r)));
    for record in joinable.chain(others).take(MAX_NODE_ROOMS) {
        remote.records.extend_from_slice(record);
    }
    remote
}

/// The values an `MGET` of `keys` returned, with the node each key names; missing keys
/// (nil) are left out.
pub(super) fn keyed_values<'a>(
    keys: &'a [String],
    values: &'a [Value],
) -> impl Iterator<Item = (u8, &'a [u8])> + 'a {
    keys.iter().zip(values).filter_map(|(key, value)| {
        let Value::BulkString(bytes) = value else {
            return None;
        };
        let node = key.rsplit(':').next().and_then(|n| n.parse::<u8>().ok())?;
        Some((node, &bytes[..]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node's table of rooms `(local id, players, seats, state)`.
    fn table(node: u8, rooms: &[(u32, u16, u16, u8)]) -> Vec<u8> {
        let mut records = vec![0u8; rooms.len() * ROOM_RECORD_LEN];
        for (slot, &(local, players, seats, state)) in
            records.chunks_exact_mut(ROOM_RECORD_LEN).zip(rooms)
        {
            slot[..4].copy_from_slice(&(u32::from(node) << 24 | local).to_be_bytes());
            slot[4..6].copy_from_slice(&players.to_be_bytes());
            slot[6..8].copy_from_slice(&seats.to_be_bytes());
            slot[8..10].copy_from_slice(&(4000 + local as u16).to_be_bytes());
            slot[10] = state;
        }
        let repr = NodeRoomsRepr::new(node, 1, &records).expect("whole records");
        let mut buf = vec![0; repr.buffer_len()];
        repr.emit(&mut buf);
        buf
    }

    fn ids(remote: &RemoteRooms) -> Vec<u32> {
        remote
            .records
            .chunks_exact(ROOM_RECORD_LEN)
            .map(|r| u32::from_be_bytes([r[0], r[1], r[2], r[3]]))
            .collect()
    }

    #[test]
    fn joinable_rooms_of_every_node_come_first() {
        // Node 2: a full room, then an open one; node 3: a playing room, then an open one.
        let two = table(2, &[(1, 4, 4, 0), (2, 1, 4, 0)]);
        let three = table(3, &[(1, 2, 4, 2), (2, 0, 4, 1)]);
        let remote = merge_tables([(2, &two[..]), (3, &three[..])]);
        assert_eq!(
            ids(&remote),
            [2 << 24 | 2, 3 << 24 | 2, 2 << 24 | 1, 3 << 24 | 1]
        );
        assert_eq!((remote.nodes, remote.bad_tables, remote.len()), (2, 0, 4));
    }

    #[test]
    fn bad_or_misplaced_tables_are_skipped_and_counted() {
        let four = table(4, &[(1, 0, 4, 0)]);
        let remote = merge_tables([(5, &four[..]), (6, &[1, 6, 0][..]), (4, &four[..])]);
        assert_eq!(ids(&remote), [4 << 24 | 1]);
        assert_eq!((remote.nodes, remote.bad_tables), (1, 2));
    }

    #[test]
    fn the_merge_stops_at_one_full_list() {
        let rooms: Vec<(u32, u16, u16, u8)> = (1..=100).map(|n| (n, 0, 4, 0)).collect();
        let a = table(1, &rooms);
        let b = table(2, &rooms);
        let remote = merge_tables([(1, &a[..]), (2, &b[..])]);
        assert_eq!(remote.len(), MAX_NODE_ROOMS);
        assert_eq!(remote.nodes, 2);
    }
}
