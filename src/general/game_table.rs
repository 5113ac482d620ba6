//! The table of the general lobby's games (docs/protocols/general-lobby.md, "Games",
//! "Listing"): the games by id, who plays where, the next game id, the read-only questions
//! the chat, the relays and the operators ask of it, and the frames that describe games
//! (GAME_INFO, GAME_STARTED, the listing).
//!
//! It holds no rules: which change is allowed, and what follows it, is decided in
//! `super::games`. It must not know asks, addresses or connections.

use std::collections::{BTreeMap, HashMap};

use crate::wire::general::{ErrorCode, ServerRepr};

use super::game::{Game, ListFilter, NOT_IN_GAME};
use super::output::Outbox;
use super::types::{ConnId, GameId, GeneralRefusal, MemberId};

pub(super) const UNKNOWN_GAME: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::UnknownGame, "unknown game");
pub(super) const NOT_OWNER: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::NotOwner, "only the owner may do this");

/// Every game by id, and the games each member plays in.
#[derive(Debug)]
pub(crate) struct GameTable {
    games: BTreeMap<GameId, Game>,
    /// The games each member plays in.
    seats: HashMap<MemberId, Vec<GameId>>,
    next_game: i32,
}

impl GameTable {
    pub(super) fn new() -> GameTable {
        GameTable {
            games: BTreeMap::new(),
            seats: HashMap::new(),
            next_game: 1,
        }
    }

    /// Games `member` plays in.
    pub(crate) fn games_of(&self, member: MemberId) -> usize {
        self.seats.get(&member).map_or(0, Vec::len)
    }

    /// The ids of the games `member` plays in.
    pub(super) fn seats_of(&self, member: MemberId) -> Vec<GameId> {
        self.seats.get(&member).cloned().unwrap_or_default()
    }

    pub(super) fn seat(&mut self, member: MemberId, id: GameId) {
        self.seats.entry(member).or_default().push(id);
    }

    pub(super) fn unseat(&mut self, member: MemberId, id: GameId) {
        if let Some(list) = self.seats.get_mut(&member) {
            list.retain(|&g| g != id);
            if list.is_empty() {
                self.seats.remove(&member);
            }
        }
    }

    /// The next game id, `None` once the ids are spent.
    pub(super) fn next_game_id(&mut self) -> Option<GameId> {
        let id = GameId(self.next_game);
        self.next_game = self.next_game.checked_add(1)?;
        Some(id)
    }

    pub(super) fn insert(&mut self, id: GameId, game: Game) {
        self.games.insert(id, game);
    }

    pub(super) fn remove(&mut self, id: GameId) -> Option<Game> {
        self.games.remove(&id)
    }

    pub(super) fn get(&self, id: GameId) -> Option<&Game> {
        self.games.get(&id)
    }

    pub(super) fn get_mut(&mut self, id: GameId) -> Option<&mut Game> {
        self.games.get_mut(&id)
    }

    /// Every game, in id order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (GameId, &Game)> {
        self.games.iter().map(|(&id, g)| (id, g))
    }

    pub(super) fn game(&self, id: GameId) -> Result<&Game, GeneralRefusal> {
        self.games.get(&id).ok_or(UNKNOWN_GAME)
    }

    /// The game `id`, if `member` owns it.
    pub(super) fn owned(
        &mut self,
        id: GameId,
        member: MemberId,
    ) -> Result<&mut Game, GeneralRefusal> {
        let game = self.games.get_mut(&id).ok_or(UNKNOWN_GAME)?;
        if game.owner == member {
            Ok(game)
        } else {
            Err(NOT_OWNER)
        }
    }

    /// The players of `id`, if `member` is one of them (chat and relay).
    pub(crate) fn players_of(
        &self,
        id: GameId,
        member: MemberId,
    ) -> Result<&[i32], GeneralRefusal> {
        let game = self.game(id)?;
        if game.has(member) {
            Ok(&game.players)
        } else {
            Err(NOT_IN_GAME)
        }
    }

    /// The owner of `id`, if `member` is one of its players (TO_OWNER).
    pub(crate) fn owner_for(
        &self,
        id: GameId,
        member: MemberId,
    ) -> Result<MemberId, GeneralRefusal> {
        let game = self.game(id)?;
        if game.has(member) {
            Ok(game.owner)
        } else {
            Err(NOT_IN_GAME)
        }
    }

    /// The players of `id`, if `member` owns it (TO_PLAYER).
    pub(crate) fn players_if_owner(
        &self,
        id: GameId,
        member: MemberId,
    ) -> Result<&[i32], GeneralRefusal> {
        let game = self.game(id)?;
        if game.owner == member {
            Ok(&game.players)
        } else {
            Err(NOT_OWNER)
        }
    }

    /// True if `id` is hosted by the server.
    pub(crate) fn is_hosted(&self, id: GameId) -> bool {
        self.games.get(&id).is_some_and(|g| g.hosted.is_some())
    }

    /// GAME_INFO of `id` to every present member.
    pub(super) fn broadcast_info(&self, out: &mut Outbox, id: GameId) {
        if let Some(game) = self.games.get(&id) {
            let frame = out.encode(&game.info(id));
            out.broadcast(frame);
        }
    }

    /// GAME_STARTED of `id` to `to`, or to every player of it.
    pub(super) fn send_started(&self, out: &mut Outbox, id: GameId, to: Option<MemberId>) {
        let Some(game) = self.games.get(&id) else {
            return;
        };
        let frame = out.encode(&ServerRepr::GameStarted {
            game: id.0,
            flags: game.flags,
        });
        match to {
            Some(member) => out.send_member(member, frame),
            None => out.send_members(&game.players, frame),
        }
    }

    /// Encodes GAME_INFO for every game, in id order (the sync after WELCOME).
    pub(crate) fn encode_all(&self, out: &mut Outbox) {
        for (&id, game) in &self.games {
            out.encode(&game.info(id));
        }
    }

    /// LIST_GAMES: one GAME_INFO per match, in id order, then GAME_LIST_END, as one run.
    pub(crate) fn list(&self, out: &mut Outbox, conn: ConnId, filter: ListFilter<'_>) {
        let mark = out.mark();
        let mut count = 0u32;
        for (&id, game) in self.games.iter().filter(|(_, g)| g.matches(&filter)) {
            out.encode(&game.info(id));
            count += 1;
        }
        out.encode(&ServerRepr::GameListEnd { count });
        let frames = out.since(mark);
        out.send(conn, frames);
    }

    /// Games held, hosted ones included.
    pub(crate) fn len(&self) -> usize {
        self.games.len()
    }

    /// The players of `id` in join order with their flags.
    pub(crate) fn roster(&self, id: GameId) -> Option<(&[i32], &[u32])> {
        self.games
            .get(&id)
            .map(|g| (&g.players[..], &g.player_flags[..]))
    }
}
