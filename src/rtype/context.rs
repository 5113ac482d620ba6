//! What every handler of the R-Type core works with: the [`Ctx`] (settings, the output queue,
//! the timer wheel, the counters and the source of player hashes), the [`TimerEvent`]s on the
//! wheel, and the [`HashSource`] the driver injects.
//!
//! The components (`rooms`, `conns`, `parties`) each own their state; what they share lives
//! in the façade ([`super::RtypeCore`] in `mod.rs`) and reaches them through a `Ctx` built
//! for each call, as in the general lobby core. Time is not in it: the handlers that need the
//! time of their event take it as an argument, and three of the driver's inputs (a
//! violation, a close, shutdown) carry none and need none.
//!
//! This file must not decide anything: it only says where effects go.

use std::collections::VecDeque;

use crate::time::wheel::TimerWheel;

use super::config::RtypeConfig;
use super::messages::Output;
use super::room::RoomId;
use super::stats::RtypeStats;
use super::tcp_messages::{ConnId, TcpError, TcpMessage};
use super::tcp_stats::index_of;

/// Where the core gets its 64-bit player hashes (CONNECT_ACK, the HELLO token): the driver
/// injects the operating system's CSPRNG, tests and simulations a seeded sequence. The core
/// refuses 0 and a hash already live, and draws again.
pub type HashSource = Box<dyn FnMut() -> u64 + Send>;

/// What a timer entry stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TimerEvent {
    /// A room's reservations and idle members are due for a look.
    Housekeeping(RoomId),
    /// A UDP room's next COUNTDOWN second.
    CountdownTick(RoomId),
    /// A Finished room's grace is over: it goes.
    Reap(RoomId),
    /// A party's next COUNTDOWN value.
    PartyTick(RoomId),
    /// A started party's connections have lingered long enough.
    PartyLinger(RoomId),
    /// A TCP connection's handshake or idle deadline.
    ConnDeadline(ConnId),
    /// An ask of another node's room had no answer in time.
    RemoteJoinTimeout(u64),
}

/// What each handler gets: the settings, and where its effects go.
pub(super) struct Ctx<'a> {
    /// The settings.
    pub(super) config: &'a RtypeConfig,
    /// Outputs for the driver, in order.
    pub(super) out: &'a mut VecDeque<Output>,
    /// Deadlines.
    pub(super) timers: &'a mut TimerWheel<TimerEvent>,
    /// Counters.
    pub(super) stats: &'a mut RtypeStats,
    /// Player hashes.
    pub(super) hashes: &'a mut HashSource,
}

impl Ctx<'_> {
    /// Queues an output for the driver.
    pub(super) fn push(&mut self, output: Output) {
        self.out.push_back(output);
    }

    /// Asks the driver for room `id`'s instance: lobbyd's own relay socket, or with
    /// `--instance-exec` the operator's game server for `players` players and a fresh seed.
    pub(super) fn open_instance(&mut self, id: RoomId, players: u8) {
        let output = if self.config.instance_exec {
            // The high half: the low one is what a simulation's counter source varies.
            let seed = ((self.hashes)() >> 32) as u32;
            Output::StartInstance {
                room: id,
                players,
                seed,
            }
        } else {
            Output::OpenInstance { room: id }
        };
        self.out.push_back(output);
    }

    /// Queues a TCP lobby message, counting the ERRORs sent by code.
    pub(super) fn send_tcp(&mut self, conn: ConnId, msg: TcpMessage) {
        if let TcpMessage::Error(error) = msg {
            if let Some(i) = index_of(&TcpError::ALL, error) {
                self.stats.tcp.errors[i] += 1;
            }
        }
        self.out.push_back(Output::Tcp { conn, msg });
    }
}
