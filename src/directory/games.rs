//! The Warzone half of the directory (docs/OPERATING.md "More than one process"): each node
//! publishes its listable Warzone games as `lobbyd:wz:{N}` ([`crate::wire::directory`]'s
//! [`NodeGamesRepr`]), beside its rooms and with the same lifetime (written on change,
//! coalesced, and every second; [`super::TTL`] after the last write it is gone), and reads
//! every other node's with the same reads as the rooms, so a Warzone LIST on any node shows
//! the games of every node: its own first, then the others' (the DDNet merge). Registration
//! stays with the node the host is connected to; only the list is shared.
//!
//! This file holds the thread's side of the games table and the merge of what it reads;
//! the thread itself (connection, timers, reports) is [`super`]'s. Imports only `wire`.

use crate::wire::directory::{NodeGamesRepr, GAME_RECORD_LEN, MAX_NODE_GAMES};

/// The other nodes' Warzone games as last read, ready for a list reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteGames {
    /// Encoded game records, in node order (each node's in its own listing order), at most
    /// [`MAX_NODE_GAMES`].
    pub records: Vec<u8>,
    /// `(node, games it lists)` for each node with a live games key, this one excepted.
    pub per_node: Vec<(u8, usize)>,
    /// Games keys that did not parse, or named another node than their key.
    pub bad_tables: usize,
}

impl RemoteGames {
    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len() / GAME_RECORD_LEN
    }

    /// Whether no other node lists a game.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// The other nodes' games keys as read, `(node of the key, value)`, merged in node order,
/// at most [`MAX_NODE_GAMES`]; a value that does not parse, or names another node than its
/// key, is skipped and counted.
pub fn merge_games<'a>(values: impl IntoIterator<Item = (u8, &'a [u8])>) -> RemoteGames {
    let mut remote = RemoteGames::default();
    for (node, bytes) in values {
        match NodeGamesRepr::parse(bytes) {
            Ok(table) if table.node == node => {
                remote.per_node.push((node, table.len()));
                for record in table.record_bytes() {
                    if remote.len() == MAX_NODE_GAMES {
                        break;
                    }
                    remote.records.extend_from_slice(record);
                }
            }
            _ => remote.bad_tables += 1,
        }
    }
    remote
}

/// The thread's copy of this node's games table and every node's games key.
pub(super) struct GamesTable {
    /// The latest table (header and records); `None` until this node's Warzone front end
    /// first publishes (a node without one neither writes nor reads games).
    pub(super) table: Option<Vec<u8>>,
    /// The latest table is not written yet.
    pub(super) dirty: bool,
    /// `lobbyd:wz:{this node}`.
    pub(super) key: String,
    /// Every other node's games key, for the `MGET`.
    pub(super) other_keys: Vec<String>,
}

impl GamesTable {
    pub(super) fn new(node: u8) -> GamesTable {
        GamesTable {
            table: None,
            dirty: false,
            key: games_key(node),
            other_keys: (1..=u8::MAX)
                .filter(|&n| n != node)
                .map(games_key)
                .collect(),
        }
    }

    /// Takes this node's listable games (whole game records, cut to [`MAX_NODE_GAMES`]).
    pub(super) fn set(&mut self, node: u8, generation: u64, records: &[u8]) {
        let cut = records.len().min(MAX_NODE_GAMES * GAME_RECORD_LEN);
        let cut = cut - cut % GAME_RECORD_LEN;
        if let Some(repr) = NodeGamesRepr::new(node, generation, &records[..cut]) {
            let table = self.table.get_or_insert_with(Vec::new);
            table.resize(repr.buffer_len(), 0);
            repr.emit(table);
            self.dirty = true;
        }
    }
}

fn games_key(node: u8) -> String {
    format!("lobbyd:wz:{node}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::directory::GameRecord;
    use crate::wire::wz::GAMESTRUCT_LEN;

    /// A node's games table with these game ids.
    fn table(node: u8, ids: &[u32]) -> Vec<u8> {
        let gamestruct = [node; GAMESTRUCT_LEN];
        let mut records = vec![0u8; ids.len() * GAME_RECORD_LEN];
        for (slot, &game_id) in records.chunks_exact_mut(GAME_RECORD_LEN).zip(ids) {
            let record = GameRecord {
                game_id,
                port: 2100,
                host: [127, 0, 0, node].into(),
                gamestruct: &gamestruct,
            };
            record.emit(slot.try_into().expect("a whole record"));
        }
        let mut games = GamesTable::new(node);
        games.set(node, 1, &records);
        games.table.expect("a table")
    }

    fn ids(remote: &RemoteGames) -> Vec<(u32, u8)> {
        NodeGamesRepr::new(1, 0, &remote.records)
            .expect("whole records")
            .records()
            .map(|g| (g.game_id, g.gamestruct[0]))
            .collect()
    }

    #[test]
    fn games_of_every_node_in_node_order() {
        let two = table(2, &[5, 6]);
        let three = table(3, &[5]);
        let remote = merge_games([(2, &two[..]), (3, &three[..])]);
        assert_eq!(ids(&remote), [(5, 2), (6, 2), (5, 3)]);
        assert_eq!(remote.per_node, [(2, 2), (3, 1)]);
        assert_eq!(remote.bad_tables, 0);
    }

    #[test]
    fn bad_or_misplaced_tables_are_skipped_and_counted() {
        let four = table(4, &[1]);
        let remote = merge_games([(5, &four[..]), (6, &[1, 6][..]), (4, &four[..])]);
        assert_eq!(ids(&remote), [(1, 4)]);
        assert_eq!((remote.per_node.len(), remote.bad_tables), (1, 2));
    }

    #[test]
    fn the_merge_stops_at_one_full_list() {
        let many: Vec<u32> = (1..=150).collect();
        let a = table(1, &many);
        let b = table(2, &many);
        let remote = merge_games([(1, &a[..]), (2, &b[..])]);
        assert_eq!(remote.len(), MAX_NODE_GAMES);
        assert_eq!(remote.per_node, [(1, 150), (2, 150)]);
    }
}
