//! The operator's limits as the R-Type core sees them: [`RtypeConfig`], with the TCP lobby's
//! share in [`PartyConfig`]. The server builds it from its flags (`net::lobby_config`;
//! docs/OPERATING.md, "Running"); [`RtypeConfig::default`] holds the flags' defaults with a
//! 1 ms timer tick, for tests and simulations.

use std::time::Duration;

use crate::ratelimit::PerIpConfig;
use crate::wire::udp_upstream::records::RecordLayout;

/// A node's number sits above this bit of a room id (`node << 24 | local`).
pub const NODE_SHIFT: u32 = 24;

/// What the core needs to know about the operator's limits.
#[derive(Clone, Debug)]
pub struct RtypeConfig {
    /// Live rooms at most (each holds an instance port until reaped).
    pub max_rooms: usize,
    /// Rooms one IP address may have created and still alive.
    pub max_rooms_per_ip: usize,
    /// Seats per room (1..=255).
    pub max_players: u8,
    /// COUNTDOWN seconds between START and STARTED.
    pub countdown_secs: u8,
    /// A member silent this long is removed.
    pub idle_timeout: Duration,
    /// How long JOIN_SUCCESS / ROOM_CREATED hold a seat for the requester's IP.
    pub seat_timeout: Duration,
    /// How long a Finished room stays listed before its port returns to the pool.
    pub reap_grace: Duration,
    /// Most rooms in one ROOM_LIST (so the datagram is not fragmented).
    pub max_list_rooms: usize,
    /// The ROOM_LIST records of the upstream R-Type UDP dialect (`--rtype-udp-records`): what
    /// a list costs in the requester's reply-byte budget.
    pub upstream_records: RecordLayout,
    /// Per-source-IP request and reply-byte budgets of the UDP lobby.
    pub rate: PerIpConfig,
    /// Granularity of the timer wheel.
    pub timer_tick: Duration,
    /// The TCP lobby's settings.
    pub party: PartyConfig,
    /// Every room's instance is a game server of the operator's (`--instance-exec`), started
    /// with [`Output::StartInstance`](super::Output::StartInstance): lobbyd sees none of its
    /// traffic, so a room never ends for being empty; it ends when its process exits
    /// ([`RtypeCore::handle_instance_exited`](super::RtypeCore::handle_instance_exited)), or
    /// when its party dissolves or cancels its countdown before GAME_START.
    pub instance_exec: bool,
    /// This node's number in a group of processes (`--node-id`): room ids are then
    /// `node << 24 | local`, so every node's ids are its own and the owner of a room is read
    /// from its id. `None`: a single node, ids from 1.
    pub node_id: Option<u8>,
}

impl Default for RtypeConfig {
    fn default() -> Self {
        RtypeConfig {
            max_rooms: 100,
            max_rooms_per_ip: 8,
            max_players: 4,
            countdown_secs: 5,
            idle_timeout: Duration::from_secs(30),
            seat_timeout: Duration::from_secs(10),
            reap_grace: Duration::from_secs(2),
            max_list_rooms: 112,
            upstream_records: RecordLayout::V3,
            node_id: None,
            rate: PerIpConfig {
                rate: 50,
                per: Duration::from_secs(1),
                burst: 100,
                byte_rate: 64_000,
                byte_burst: 128_000,
                max_entries: 65_536,
            },
            timer_tick: Duration::from_millis(1),
            party: PartyConfig::default(),
            instance_exec: false,
        }
    }
}

/// The TCP lobby's settings.
#[derive(Clone, Debug)]
pub struct PartyConfig {
    /// Members a party needs before START_REQ (or `auto_start`) may start it.
    pub min_players: u8,
    /// First COUNTDOWN value.
    pub countdown: Duration,
    /// Interval between COUNTDOWN messages.
    pub countdown_tick: Duration,
    /// Start the countdown by itself once every member is ready and `min_players` are in.
    pub auto_start: bool,
    /// Protocol violations tolerated; the connection is closed at this many.
    pub max_violations: u32,
    /// Spawn position of each slot (index `slot - 1`); at least `max_players` of them.
    pub spawns: Vec<(f32, f32)>,
    /// How long after GAME_START the server closes a connection the client kept open.
    pub linger: Duration,
    /// A connection without CONNECT_ACK this long after it was accepted is closed, whatever
    /// it sends (`--handshake-timeout`).
    pub handshake_timeout: Duration,
    /// Requests per second one connection may make; one over it is a `flood` violation.
    pub request_rate: u64,
    /// Requests one connection may make back to back.
    pub request_burst: u64,
}

impl Default for PartyConfig {
    fn default() -> Self {
        PartyConfig {
            min_players: 2,
            countdown: Duration::from_secs(5),
            countdown_tick: Duration::from_millis(100),
            auto_start: false,
            max_violations: 5,
            spawns: vec![
                (100.0, 100.0),
                (100.0, 200.0),
                (100.0, 300.0),
                (100.0, 400.0),
            ],
            linger: Duration::from_secs(5),
            handshake_timeout: Duration::from_secs(5),
            request_rate: 20,
            request_burst: 40,
        }
    }
}
