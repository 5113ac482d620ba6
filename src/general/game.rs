//! One game of the general lobby and the rules that need nothing but the game itself
//! (docs/protocols/general-lobby.md, "Games", "Owners", "Game data", "Listing"): seats, the
//! owner and its ready flag, client flags, ready flags, the stored data and its byte bound,
//! list filters, GAME_INFO.
//!
//! This module must not send anything: `super::games` decides who hears of a change.

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::time::TimerKey;
use crate::wire::general::{
    ErrorCode, GameInfo, ServerRepr, Words, GAME_CLOSED, GAME_HOSTED, GAME_IN_PROGRESS,
    PLAYER_READY,
};

use super::hosted::HostedGame;
use super::tictactoe::TicTacToe;
use super::types::{GameId, GeneralRefusal, HostedKind, MemberId, SERVER_MEMBER};

/// Bytes of bookkeeping each stored key costs against `game_data`, so a flood of tiny keys is
/// bounded too.
pub const DATA_KEY_COST: usize = 32;

/// Flags only the server sets: a client's CREATE_GAME or SET_GAME never changes them.
const SERVER_GAME_FLAGS: u32 = GAME_IN_PROGRESS | GAME_HOSTED;

pub(crate) const NOT_IN_GAME: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::NotInGame, "not a player of this game");
const DATA_FULL: GeneralRefusal = GeneralRefusal::new(ErrorCode::LimitReached, "game data full");

/// A CREATE_GAME's fields.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NewGame<'a> {
    pub(crate) max_players: u32,
    pub(crate) game_type: &'a str,
    pub(crate) version: &'a str,
    pub(crate) flags: u32,
    pub(crate) name: &'a str,
    pub(crate) password: &'a str,
}

/// A LIST_GAMES filter.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ListFilter<'a> {
    pub(crate) game_type: &'a str,
    pub(crate) flags_clear: u32,
    pub(crate) min_free: u32,
}

/// The server's side of a hosted game: its type, its state, its timer.
#[derive(Debug)]
pub(crate) struct Hosted {
    pub(crate) kind: HostedKind,
    pub(crate) game: Box<dyn HostedGame>,
    pub(crate) timer: Option<TimerKey>,
}

/// One game.
#[derive(Debug)]
pub(crate) struct Game {
    pub(crate) owner: MemberId,
    pub(crate) max_players: u32,
    pub(crate) name: Box<str>,
    pub(crate) game_type: Box<str>,
    version: Box<str>,
    pub(crate) password: Box<str>,
    pub(crate) flags: u32,
    /// Member ids in join order (the owner need not be first after a GIVE_OWNER).
    pub(crate) players: Vec<i32>,
    /// Player flags, same order.
    pub(crate) player_flags: Vec<u32>,
    data: BTreeMap<Box<str>, Box<[u8]>>,
    pub(crate) data_bytes: usize,
    pub(crate) hosted: Option<Hosted>,
    /// The address its creator signed in from, whose share it counts against until it
    /// closes (with its data); `None` for a hosted game or an address the core was not given.
    pub(crate) address: Option<IpAddr>,
}

impl Game {
    /// A member's new game: the creator is owner and first player, ready.
    pub(crate) fn created(owner: MemberId, new: NewGame<'_>) -> Game {
        Game {
            owner,
            max_players: new.max_players,
            name: new.name.into(),
            game_type: new.game_type.into(),
            version: new.version.into(),
            password: new.password.into(),
            flags: new.flags & !SERVER_GAME_FLAGS,
            players: vec![owner.0],
            player_flags: vec![PLAYER_READY],
            data: BTreeMap::new(),
            data_bytes: 0,
            hosted: None,
            address: None,
        }
    }

    /// A server-hosted game of `kind`, empty, named after its type and id.
    pub(crate) fn hosted(kind: HostedKind, id: GameId) -> Game {
        let game: Box<dyn HostedGame> = match kind {
            HostedKind::TicTacToe => Box::new(TicTacToe::new()),
        };
        Game {
            owner: SERVER_MEMBER,
            max_players: game.max_players(),
            name: format!("{} #{}", kind.name(), id.0).into(),
            game_type: kind.name().into(),
            version: "1".into(),
            password: "".into(),
            flags: GAME_HOSTED,
            players: Vec::new(),
            player_flags: Vec::new(),
            data: BTreeMap::new(),
            data_bytes: 0,
            hosted: Some(Hosted {
                kind,
                game,
                timer: None,
            }),
            address: None,
        }
    }

    /// GAME_INFO of this game.
    pub(crate) fn info(&self, id: GameId) -> ServerRepr<'_> {
        ServerRepr::GameInfo(GameInfo {
            id: id.0,
            owner: self.owner.0,
            max_players: self.max_players,
            name: &self.name,
            game_type: &self.game_type,
            version: &self.version,
            flags: self.flags,
            players: Words::new(&self.players),
            player_flags: Words::new(&self.player_flags),
        })
    }

    pub(crate) fn has(&self, member: MemberId) -> bool {
        self.players.contains(&member.0)
    }

    pub(crate) fn free_seats(&self) -> u32 {
        self.max_players
            .saturating_sub(u32::try_from(self.players.len()).unwrap_or(u32::MAX))
    }

    /// A hosted game of `kind` a member could join now.
    pub(crate) fn joinable_hosted(&self, kind: HostedKind) -> bool {
        self.hosted.as_ref().is_some_and(|h| h.kind == kind)
            && self.free_seats() > 0
            && self.flags & (GAME_IN_PROGRESS | GAME_CLOSED) == 0
    }

    /// LIST_GAMES: the type if one is given, none of `flags_clear`, enough free seats.
    pub(crate) fn matches(&self, filter: &ListFilter<'_>) -> bool {
        (filter.game_type.is_empty() || *self.game_type == *filter.game_type)
            && self.flags & filter.flags_clear == 0
            && self.free_seats() >= filter.min_free
    }

    /// Seats `member`, ready.
    pub(crate) fn push_player(&mut self, member: MemberId) {
        self.players.push(member.0);
        self.player_flags.push(PLAYER_READY);
    }

    /// Takes `member`'s seat; false if it had none.
    pub(crate) fn remove_player(&mut self, member: MemberId) -> bool {
        let Some(at) = self.players.iter().position(|&p| p == member.0) else {
            return false;
        };
        self.players.remove(at);
        self.player_flags.remove(at);
        true
    }

    /// Makes `to` (or, for `None`, the first player in join order) the owner, with its ready
    /// flag set (the article's rule); returns the new owner.
    pub(crate) fn make_owner(&mut self, to: Option<MemberId>) -> Option<MemberId> {
        let at = match to {
            Some(to) => self.players.iter().position(|&p| p == to.0)?,
            None if self.players.is_empty() => return None,
            None => 0,
        };
        self.owner = MemberId(*self.players.get(at)?);
        if let Some(flags) = self.player_flags.get_mut(at) {
            *flags |= PLAYER_READY;
        }
        Some(self.owner)
    }

    /// SET_GAME: the client's flag bits (the server's stay) and the password; true if the
    /// flags changed (the password is not in GAME_INFO).
    pub(crate) fn set_flags(&mut self, flags: u32, password: &str) -> bool {
        let flags = (flags & !SERVER_GAME_FLAGS) | (self.flags & SERVER_GAME_FLAGS);
        if *self.password != *password {
            self.password = password.into();
        }
        let changed = self.flags != flags;
        self.flags = flags;
        changed
    }

    /// SET_READY: true if the player's flag changed.
    pub(crate) fn set_ready(
        &mut self,
        member: MemberId,
        ready: bool,
    ) -> Result<bool, GeneralRefusal> {
        let at = self
            .players
            .iter()
            .position(|&p| p == member.0)
            .ok_or(NOT_IN_GAME)?;
        let flags = self.player_flags.get_mut(at).ok_or(NOT_IN_GAME)?;
        let new = if ready {
            *flags | PLAYER_READY
        } else {
            *flags & !PLAYER_READY
        };
        let changed = new != *flags;
        *flags = new;
        Ok(changed)
    }

    /// STORE_DATA: an empty value deletes the key; the data stays within `limit` bytes, each
    /// key costing its key and value plus [`DATA_KEY_COST`].
    pub(crate) fn store(
        &mut self,
        key: &str,
        value: &[u8],
        limit: usize,
    ) -> Result<(), GeneralRefusal> {
        let old = self.data.get(key).map_or(0, |v| data_cost(key, v));
        if value.is_empty() {
            if self.data.remove(key).is_some() {
                self.data_bytes -= old;
            }
            return Ok(());
        }
        let total = self.data_after(key, value);
        if total > limit {
            return Err(DATA_FULL);
        }
        self.data.insert(key.into(), value.into());
        self.data_bytes = total;
        Ok(())
    }

    /// The game's data bytes once `key` holds `value` (empty: deleted).
    pub(crate) fn data_after(&self, key: &str, value: &[u8]) -> usize {
        let old = self.data.get(key).map_or(0, |v| data_cost(key, v));
        let new = if value.is_empty() {
            0
        } else {
            data_cost(key, value)
        };
        self.data_bytes - old + new
    }

    /// FETCH_DATA: the value, empty when absent.
    pub(crate) fn fetch(&self, key: &str) -> &[u8] {
        self.data.get(key).map_or(&[][..], |v| &v[..])
    }
}

/// What `key` holding `value` costs against `game_data`.
fn data_cost(key: &str, value: &[u8]) -> usize {
    key.len() + value.len() + DATA_KEY_COST
}
