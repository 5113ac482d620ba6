//! What each address's games hold in the general lobby (docs/protocols/general-lobby.md,
//! "Limits": `max_games_per_ip`, `game_data_per_ip`): the open games an address created and
//! the game data they store, counted until each game closes.
//!
//! One entry per address with an open game, so at most `max_games` entries. It must not know
//! games or members: the caller passes the address and the byte counts.

use std::collections::HashMap;
use std::net::IpAddr;

/// The open games (and their data) of each address that created one.
#[derive(Debug, Default)]
pub(super) struct AddressShares {
    shares: HashMap<IpAddr, AddressShare>,
}

/// What one address's games hold.
#[derive(Clone, Copy, Debug, Default)]
struct AddressShare {
    games: usize,
    data_bytes: usize,
}

impl AddressShares {
    /// True if `ip` (when known) may create another game under `max_games`.
    pub(super) fn may_create(&self, ip: Option<IpAddr>, max_games: usize) -> bool {
        let share = ip.and_then(|ip| self.shares.get(&ip));
        !share.is_some_and(|share| share.games >= max_games)
    }

    /// `ip` created a game.
    pub(super) fn add_game(&mut self, ip: Option<IpAddr>) {
        if let Some(ip) = ip {
            self.shares.entry(ip).or_default().games += 1;
        }
    }

    /// A game of `ip` holding `data_bytes` closed: it no longer counts.
    pub(super) fn discharge(&mut self, ip: Option<IpAddr>, data_bytes: usize) {
        let Some(ip) = ip else {
            return;
        };
        if let Some(share) = self.shares.get_mut(&ip) {
            share.games = share.games.saturating_sub(1);
            share.data_bytes = share.data_bytes.saturating_sub(data_bytes);
            if share.games == 0 {
                self.shares.remove(&ip);
            }
        }
    }

    /// False if a game of `ip` growing from `before` to `after` bytes of data (within the
    /// game's own `limit`) would take the address past `ip_limit`.
    pub(super) fn data_fits(
        &self,
        ip: Option<IpAddr>,
        before: usize,
        after: usize,
        limit: usize,
        ip_limit: usize,
    ) -> bool {
        let Some(share) = ip.and_then(|ip| self.shares.get(&ip)) else {
            return true;
        };
        !(after > before && after <= limit && share.data_bytes - before + after > ip_limit)
    }

    /// A game of `ip` now holds `after` bytes of data instead of `before`.
    pub(super) fn data_changed(&mut self, ip: Option<IpAddr>, before: usize, after: usize) {
        if let Some(share) = ip.and_then(|ip| self.shares.get_mut(&ip)) {
            share.data_bytes = share.data_bytes - before + after;
        }
    }
}
