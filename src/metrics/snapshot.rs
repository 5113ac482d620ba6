//! What the operators' pages show: the server's counters, rooms and games at one instant.
//!
//! The loop fills a [`Snapshot`] by asking every front end to add its part (the seam in
//! `net::server`), then the renderers in [`super`] turn it into text. The types live here,
//! beside the pages that read them, so the renderers depend on nothing of the driver: a front
//! end reports its counters as `(name, label, value)` triples through its `visit` method.

use std::net::SocketAddr;
use std::time::Duration;

use super::history::LoadSample;
use super::process::ProcessView;
use crate::rtype::{RoomId, RoomState, RtypeStats};

/// One counter sample: metric name (without the `lobbyd_` prefix), label value or `""`,
/// value (the label's name and the help text are the catalog's, `super::catalog`). Samples of one name are kept together (the exposition format wants one `# TYPE`
/// line per name).
pub type Counter = (&'static str, &'static str, u64);

/// One bound socket as operators see it (the status page's listener table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerView {
    /// What it serves: "UDP room lobby", "TCP lobby", ...
    pub name: &'static str,
    /// `"udp"` or `"tcp"`.
    pub transport: &'static str,
    /// The bound address, or for the game instances their port range.
    pub address: String,
}

/// The room directory of a group of nodes, as the status page shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirectoryView {
    /// This node's id.
    pub node: u8,
    /// The directory's address (`redis://...`).
    pub address: String,
    /// `up`, `down` or `refused` (another live process holds this node id).
    pub state: &'static str,
    /// Other nodes with a live room table.
    pub remote_nodes: usize,
    /// Their rooms this node lists.
    pub remote_rooms: usize,
    /// Milliseconds since their rooms were last read.
    pub sync_age_ms: u64,
}

/// Another node of the group, as this node last read it from the directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirectoryNodeView {
    /// Its node id.
    pub node: u8,
    /// Its rooms this node read (listed after this node's own, within the list's cap).
    pub rooms: usize,
    /// Its Warzone games this node read.
    pub games: usize,
    /// Milliseconds since its tables were last read.
    pub age_ms: u64,
}

/// One room as operators see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoomView {
    /// The room.
    pub room: RoomId,
    /// `"udp"` for a room of the UDP lobby, `"party"` for a TCP lobby party.
    pub kind: &'static str,
    /// Its state.
    pub state: RoomState,
    /// Its instance port, once bound.
    pub port: Option<u16>,
    /// Admitted members.
    pub members: usize,
    /// Live seat reservations.
    pub reservations: usize,
    /// Seats.
    pub max_players: usize,
    /// A party's players' names in slot order, for the first [`Snapshot::detail_rows`]
    /// parties (empty otherwise, and for UDP rooms, whose players have no names).
    pub players: Vec<String>,
}

/// One master-server game as operators see it (`/wz/games`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WzGameInfo {
    /// The lobby's game id.
    pub game_id: u32,
    /// `"legacy"` or `"v4"`.
    pub protocol: &'static str,
    /// The host's address and game port.
    pub host: SocketAddr,
    /// False while the reachability probe runs.
    pub listed: bool,
    /// The game name (lossy UTF-8).
    pub name: String,
    /// The host's version string.
    pub version: String,
    /// Players in / slots.
    pub players: (i32, i32),
    /// Seconds since it registered.
    pub age_secs: u64,
}

/// The Warzone master server's games and gauges at one instant (its counters are in
/// [`Snapshot::counters`]).
#[derive(Clone, Debug, Default)]
pub struct WzSnapshot {
    /// Every game held.
    pub games: Vec<WzGameInfo>,
    /// Open master-server connections.
    pub connections: usize,
    /// Probes in flight.
    pub probes: usize,
    /// Bytes the connections' send queues and read buffers hold (`--wz-memory-budget`
    /// bounds it).
    pub buffered_bytes: usize,
}

/// One general lobby game as operators see it (`/rooms`, kind `"general"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneralGameInfo {
    /// The game's id.
    pub id: i32,
    /// Its owner's member id (0: hosted by the server).
    pub owner: i32,
    /// Its name.
    pub name: String,
    /// Its game type.
    pub game_type: String,
    /// Its flags (1 locked, 2 closed, 4 in progress, 8 hosted).
    pub flags: u32,
    /// Players in it.
    pub players: usize,
    /// Its seats.
    pub max_players: usize,
}

/// One general lobby member as operators see it (the status page).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneralMemberInfo {
    /// Its id.
    pub id: i32,
    /// Its username.
    pub username: String,
    /// Its display name.
    pub display_name: String,
    /// Its connection dropped and its resume grace runs.
    pub away: bool,
    /// Games it plays in.
    pub games: usize,
}

/// The general lobby's members, games and gauges at one instant (its counters are in
/// [`Snapshot::counters`]).
#[derive(Clone, Debug, Default)]
pub struct GeneralSnapshot {
    /// Members signed in or away (within their resume grace).
    pub members: usize,
    /// The first [`Snapshot::detail_rows`] members, in id order.
    pub member_list: Vec<GeneralMemberInfo>,
    /// Of those, members away.
    pub members_away: usize,
    /// Open connections, signed in or not, both ports.
    pub connections: usize,
    /// Of those, upgraded WebSocket connections (`--lobby-ws-port`).
    pub ws_connections: usize,
    /// Present members on a WebSocket connection (the others present are on TCP).
    pub ws_members: usize,
    /// Bytes the connections' send queues and partial frames hold (`--lobby-memory-budget`
    /// bounds it).
    pub buffered_bytes: usize,
    /// The most they held at once since the start.
    pub buffered_peak: usize,
    /// Every game.
    pub games: Vec<GeneralGameInfo>,
}

/// The server's counters and rooms at one instant.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// How many parties and members the front ends describe by name (the status page's
    /// rows; 0 for the counters-only pages, which then copy no names).
    pub detail_rows: usize,
    /// Every bound socket, in the order lobbyd logs them at start.
    pub listeners: Vec<ListenerView>,
    /// The R-Type core's counters (UDP room lobby, instances, TCP parties).
    pub lobby: RtypeStats,
    /// Every other counter, front end by front end, in the order they are rendered.
    pub counters: Vec<Counter>,
    /// Every live R-Type room and party, by id.
    pub rooms: Vec<RoomView>,
    /// Instance sockets open.
    pub open_instances: usize,
    /// Instance ports held.
    pub ports_in_use: usize,
    /// Source IPs tracked by the UDP lobby rate limiter.
    pub rate_table_len: usize,
    /// Open TCP lobby connections (joined or not), when the TCP lobby runs.
    pub tcp_connections: Option<usize>,
    /// Bytes the TCP lobby's send queues hold (`--tcp-memory-budget` bounds it).
    pub tcp_buffered_bytes: usize,
    /// Time since the server started.
    pub uptime: Duration,
    /// The process's memory, descriptors and CPU time, where `/proc` tells them.
    pub process: Option<ProcessView>,
    /// The load of the last 15 minutes, oldest first (for the status page only: empty
    /// when no names are asked for, [`Snapshot::detail_rows`] 0).
    pub history: Vec<LoadSample>,
    /// The Warzone master server's games, when it runs.
    pub wz: Option<WzSnapshot>,
    /// The general lobby's members and games, when it runs.
    pub general: Option<GeneralSnapshot>,
    /// The room directory, when this node is one of a group (`--directory`).
    pub directory: Option<DirectoryView>,
    /// The other nodes of the group, by node id (rooms and games added by their front
    /// ends through [`Snapshot::add_directory_node`]).
    pub directory_nodes: Vec<DirectoryNodeView>,
}

impl Snapshot {
    /// Adds what one front end read of another node (its rooms or its games, read
    /// `age_ms` ago) to that node's row.
    pub fn add_directory_node(&mut self, node: u8, rooms: usize, games: usize, age_ms: u64) {
        let at = match self.directory_nodes.binary_search_by_key(&node, |n| n.node) {
            Ok(at) => at,
            Err(at) => {
                let row = DirectoryNodeView {
                    node,
                    ..DirectoryNodeView::default()
                };
                self.directory_nodes.insert(at, row);
                at
            }
        };
        let row = &mut self.directory_nodes[at];
        row.rooms += rooms;
        row.games += games;
        row.age_ms = row.age_ms.max(age_ms);
    }

    /// Adds counters reported through a `visit(|name, label, value|)` method.
    pub fn add_counters(
        &mut self,
        visit: impl FnOnce(&mut dyn FnMut(&'static str, &'static str, u64)),
    ) {
        let counters = &mut self.counters;
        visit(&mut |name, label, value| counters.push((name, label, value)));
    }

    /// The value of one counter, if it was reported.
    pub fn counter(&self, name: &str, label: &str) -> Option<u64> {
        self.counters
            .iter()
            .find(|(n, l, _)| *n == name && *l == label)
            .map(|(_, _, v)| *v)
    }
}
