//! The operator's limits as the R-Type core sees them: [`RtypeConfig`]. The server builds it
//! from its flags (`net::lobby_config`; docs/OPERATING.md, "Running"); [`RtypeConfig::default`] holds the
//! flags' defaults with a 1 ms timer tick, for tests and simulations.

use std::time::Duration;

use crate::ratelimit::PerIpConfig;

use super::party::PartyConfig;

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
