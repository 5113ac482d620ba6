//! The games of the general lobby (docs/protocols/general-lobby.md, "Games", "Joining",
//! "Owners", "Game data", "Listing", "Server-hosted games"): creation and its limits, the join
//! checks in the article's order, asks and their answers, ownership transfer, kick, start,
//! closing, listing, and the glue to server-hosted games (kept topped up to their count).
//!
//! Every change to a game sends its GAME_INFO to every present member; a game left without
//! players is closed (GAME_CLOSED to all), except a hosted one, which stays open.
//!
//! This module must not know connections or sign-in: it routes frames to members through
//! [`super::output::Outbox`], and the façade checks that a member named in a request exists.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use crate::wire::general::{ErrorCode, ServerRepr, GAME_CLOSED, GAME_IN_PROGRESS, GAME_LOCKED};

use super::asks::{Ask, Asks};
use super::game::{Game, ListFilter, NewGame, NOT_IN_GAME};
use super::hosted::{HostedAction, HostedOut, JoinVerdict};
use super::output::{Ctx, Outbox};
use super::types::{
    AskId, ConnId, GameId, GameView, GeneralRefusal, MemberId, Timer, SERVER_MEMBER,
};

const UNKNOWN_GAME: GeneralRefusal = GeneralRefusal::new(ErrorCode::UnknownGame, "unknown game");
const NOT_OWNER: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::NotOwner, "only the owner may do this");
const UNKNOWN_ASK: GeneralRefusal = GeneralRefusal::new(ErrorCode::UnknownId, "unknown ask id");
const TOO_MANY_GAMES: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::LimitReached, "too many games");
const ADDRESS_GAMES: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::LimitReached, "too many games from your address");
const ADDRESS_DATA: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::LimitReached, "game data full for your address");
const LOBBY_GAMES_FULL: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::LimitReached, "no more games allowed");
const BAD_SEATS: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::LimitReached, "max players out of range");
const KICK_SELF: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::UnknownId, "cannot kick yourself, leave");

/// Every game, the asks waiting for owners, and who plays where.
#[derive(Debug)]
pub(crate) struct Games {
    games: BTreeMap<GameId, Game>,
    asks: Asks,
    /// The games each member plays in.
    seats: HashMap<MemberId, Vec<GameId>>,
    next_game: i32,
    /// What a hosted game asked for in its last call; drained after each.
    scratch: HostedOut,
    /// The open games (and their data) each address created: one entry per address with a
    /// game, so at most `max_games` entries.
    shares: HashMap<IpAddr, AddressShare>,
}

/// What one address's games hold (`max_games_per_ip`, `game_data_per_ip`).
#[derive(Clone, Copy, Debug, Default)]
struct AddressShare {
    games: usize,
    data_bytes: usize,
}

impl Games {
    pub(crate) fn new() -> Games {
        Games {
            games: BTreeMap::new(),
            asks: Asks::default(),
            seats: HashMap::new(),
            next_game: 1,
            scratch: HostedOut::default(),
            shares: HashMap::new(),
        }
    }

    /// Games a member plays in plus asks it waits on: what `max_games_per_member` bounds.
    fn load(&self, member: MemberId) -> usize {
        self.games_of(member) + self.asks.count_of(member)
    }

    /// Games `member` plays in.
    pub(crate) fn games_of(&self, member: MemberId) -> usize {
        self.seats.get(&member).map_or(0, Vec::len)
    }

    fn seat(&mut self, member: MemberId, id: GameId) {
        self.seats.entry(member).or_default().push(id);
    }

    fn unseat(&mut self, member: MemberId, id: GameId) {
        if let Some(list) = self.seats.get_mut(&member) {
            list.retain(|&g| g != id);
            if list.is_empty() {
                self.seats.remove(&member);
            }
        }
    }

    fn next_game_id(&mut self) -> Option<GameId> {
        let id = GameId(self.next_game);
        self.next_game = self.next_game.checked_add(1)?;
        Some(id)
    }

    fn broadcast_info(&self, out: &mut Outbox, id: GameId) {
        if let Some(game) = self.games.get(&id) {
            let frame = out.encode(&game.info(id));
            out.broadcast(frame);
        }
    }

    fn send_started(&self, out: &mut Outbox, id: GameId, to: Option<MemberId>) {
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

    fn game(&self, id: GameId) -> Result<&Game, GeneralRefusal> {
        self.games.get(&id).ok_or(UNKNOWN_GAME)
    }

    fn owned(&mut self, id: GameId, member: MemberId) -> Result<&mut Game, GeneralRefusal> {
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

    /// CREATE_GAME: the creator is owner and first player, ready. The game counts against
    /// the share of `ip`, the creator's address (if known), until it closes.
    pub(crate) fn create(
        &mut self,
        cx: &mut Ctx<'_>,
        member: MemberId,
        ip: Option<IpAddr>,
        new: NewGame<'_>,
    ) -> Result<GameId, GeneralRefusal> {
        if new.max_players == 0 || new.max_players > cx.config.max_seats {
            return Err(BAD_SEATS);
        }
        if self.load(member) >= cx.config.max_games_per_member {
            return Err(TOO_MANY_GAMES);
        }
        let share = ip.and_then(|ip| self.shares.get(&ip)).copied();
        if share.is_some_and(|share| share.games >= cx.config.max_games_per_ip) {
            cx.stats.games_refused_per_ip[0] += 1;
            return Err(ADDRESS_GAMES);
        }
        if self.games.len() >= cx.config.max_games {
            return Err(LOBBY_GAMES_FULL);
        }
        let id = self.next_game_id().ok_or(LOBBY_GAMES_FULL)?;
        let mut game = Game::created(member, new);
        game.address = ip;
        if let Some(ip) = ip {
            self.shares.entry(ip).or_default().games += 1;
        }
        self.games.insert(id, game);
        self.seat(member, id);
        cx.stats.games_created += 1;
        self.broadcast_info(cx.out, id);
        Ok(id)
    }

    /// JOIN_REQUEST, checked in the article's order; a failed check is answered
    /// JOIN_RESPONSE(0, reason) at once, without bothering the owner.
    pub(crate) fn join_request(
        &mut self,
        cx: &mut Ctx<'_>,
        member: MemberId,
        id: GameId,
        request: i32,
        password: &str,
    ) {
        let verdict = self.check_join(cx, member, id, password);
        let respond = |cx: &mut Ctx<'_>, accepted: bool, reason: &str| {
            let frame = cx.out.encode(&ServerRepr::JoinResponse {
                game: id.0,
                request,
                accepted,
                reason,
            });
            cx.out.send_member(member, frame);
        };
        match verdict {
            Err(refusal) => {
                cx.stats.refuse(refusal.code);
                respond(cx, false, refusal.text);
            }
            Ok(Some(JoinVerdict::Refuse(reason))) => respond(cx, false, reason),
            Ok(Some(JoinVerdict::Accept(reason))) => {
                respond(cx, true, reason);
                self.add_player(cx, id, member);
            }
            Ok(None) if cx.config.auto_approve => {
                respond(cx, true, "");
                self.add_player(cx, id, member);
            }
            Ok(None) => self.ask_owner(cx, member, id, request),
        }
    }

    /// The checks of a JOIN_REQUEST; `Ok(Some(_))` when a hosted game decided, `Ok(None)` when
    /// the owner (or auto-approval) decides.
    fn check_join(
        &self,
        cx: &Ctx<'_>,
        member: MemberId,
        id: GameId,
        password: &str,
    ) -> Result<Option<JoinVerdict>, GeneralRefusal> {
        let game = self.game(id)?;
        if game.has(member) {
            return Err(GeneralRefusal::new(
                ErrorCode::AlreadyInGame,
                "already in the game",
            ));
        }
        if self.asks.waiting(id, member) {
            return Err(GeneralRefusal::new(
                ErrorCode::AlreadyInGame,
                "already asked",
            ));
        }
        if game.free_seats() == 0 {
            return Err(GeneralRefusal::new(ErrorCode::Full, "game full"));
        }
        if game.flags & GAME_CLOSED != 0 {
            return Err(GeneralRefusal::new(ErrorCode::Closed, "game closed"));
        }
        if game.flags & GAME_LOCKED != 0 && *password != *game.password {
            return Err(GeneralRefusal::new(
                ErrorCode::WrongPassword,
                "wrong password",
            ));
        }
        if self.load(member) >= cx.config.max_games_per_member {
            return Err(TOO_MANY_GAMES);
        }
        Ok(game
            .hosted
            .as_ref()
            .map(|h| h.game.can_join(member, &game.players)))
    }

    fn ask_owner(&mut self, cx: &mut Ctx<'_>, member: MemberId, id: GameId, request: i32) {
        let Some(owner) = self.games.get(&id).map(|g| g.owner) else {
            return;
        };
        let Some(ask) = self.asks.open(cx, id, member, request) else {
            return;
        };
        cx.stats.asks += 1;
        let frame = cx.out.encode(&ServerRepr::JoinAsk {
            game: id.0,
            member: member.0,
            ask: ask.0,
        });
        cx.out.send_member(owner, frame);
    }

    fn respond(cx: &mut Ctx<'_>, ask: &Ask, accepted: bool, reason: &str) {
        let frame = cx.out.encode(&ServerRepr::JoinResponse {
            game: ask.game.0,
            request: ask.request,
            accepted,
            reason,
        });
        cx.out.send_member(ask.member, frame);
    }

    /// JOIN_ANSWER from the owner; the seat is checked again now.
    pub(crate) fn join_answer(
        &mut self,
        cx: &mut Ctx<'_>,
        owner: MemberId,
        ask: AskId,
        accept: bool,
        reason: &str,
    ) -> Result<(), GeneralRefusal> {
        let mine = self
            .asks
            .get(ask)
            .and_then(|a| self.games.get(&a.game))
            .is_some_and(|game| game.owner == owner);
        let taken = mine.then(|| self.asks.take(cx, ask)).flatten();
        let Some(taken) = taken else {
            return Err(UNKNOWN_ASK);
        };
        if !accept {
            let reason = if reason.is_empty() {
                "refused by the owner"
            } else {
                reason
            };
            Self::respond(cx, &taken, false, reason);
            return Ok(());
        }
        let full = self
            .games
            .get(&taken.game)
            .map_or(true, |g| g.free_seats() == 0);
        if full {
            cx.stats.refuse(ErrorCode::Full);
            Self::respond(cx, &taken, false, "game full");
            return Ok(());
        }
        Self::respond(cx, &taken, true, reason);
        self.add_player(cx, taken.game, taken.member);
        Ok(())
    }

    /// An ask's timer fired: JOIN_RESPONSE(0, "no answer").
    pub(crate) fn ask_expired(&mut self, cx: &mut Ctx<'_>, ask: AskId) {
        self.asks.disarm(ask);
        if let Some(taken) = self.asks.take(cx, ask) {
            cx.stats.asks_expired += 1;
            Self::respond(cx, &taken, false, "no answer");
        }
    }

    /// JOIN_ASK again for every ask waiting on `owner`'s games (after a resume), oldest first.
    pub(crate) fn resend_asks(&self, out: &mut Outbox, owner: MemberId) {
        for (&id, _) in self.games.iter().filter(|(_, g)| g.owner == owner) {
            self.asks.send_all(out, id, owner);
        }
    }

    /// Seats `member` in `id`: GAME_INFO to all, GAME_STARTED to it if the game is under way.
    fn add_player(&mut self, cx: &mut Ctx<'_>, id: GameId, member: MemberId) {
        let Some(game) = self.games.get_mut(&id) else {
            return;
        };
        game.push_player(member);
        cx.stats.joins += 1;
        let in_progress = game.flags & GAME_IN_PROGRESS != 0;
        if let Some(hosted) = game.hosted.as_mut() {
            hosted
                .game
                .player_joined(cx.now, member, &game.players, &mut self.scratch);
            self.seat(member, id);
            return self.apply_hosted(cx, id, true, Some(member));
        }
        self.seat(member, id);
        self.broadcast_info(cx.out, id);
        if in_progress {
            self.send_started(cx.out, id, Some(member));
        }
    }

    /// LEAVE_GAME.
    pub(crate) fn leave(
        &mut self,
        cx: &mut Ctx<'_>,
        member: MemberId,
        id: GameId,
    ) -> Result<(), GeneralRefusal> {
        if !self.game(id)?.has(member) {
            return Err(NOT_IN_GAME);
        }
        self.remove_player(cx, id, member);
        Ok(())
    }

    /// Takes `member` out of `id`: the game closes when it was the last player (unless
    /// hosted); an owner leaving hands the game to the next player in join order, ready, with
    /// the waiting asks.
    fn remove_player(&mut self, cx: &mut Ctx<'_>, id: GameId, member: MemberId) {
        let Some(game) = self.games.get_mut(&id) else {
            return;
        };
        if !game.has(member) {
            return;
        }
        if game.hosted.is_none() && game.players.len() <= 1 {
            self.unseat(member, id);
            return self.close_game(cx, id);
        }
        game.remove_player(member);
        if let Some(hosted) = game.hosted.as_mut() {
            hosted
                .game
                .player_left(cx.now, member, &game.players, &mut self.scratch);
            self.unseat(member, id);
            return self.apply_hosted(cx, id, true, None);
        }
        let new_owner = if game.owner == member {
            game.make_owner(None)
        } else {
            None
        };
        self.unseat(member, id);
        if let Some(owner) = new_owner {
            self.asks.send_all(cx.out, id, owner);
        }
        self.broadcast_info(cx.out, id);
    }

    /// Closes `id`: its asks are answered "game closed", GAME_CLOSED to all.
    fn close_game(&mut self, cx: &mut Ctx<'_>, id: GameId) {
        let waiting: Vec<AskId> = self.asks.of_game(id).collect();
        for ask in waiting {
            if let Some(taken) = self.asks.take(cx, ask) {
                Self::respond(cx, &taken, false, "game closed");
            }
        }
        let Some(game) = self.games.remove(&id) else {
            return;
        };
        self.discharge(&game);
        for &player in &game.players {
            self.unseat(MemberId(player), id);
        }
        let hosted = game.hosted.is_some();
        if let Some(key) = game.hosted.and_then(|h| h.timer) {
            cx.timers.cancel(key);
        }
        cx.stats.games_closed += 1;
        let frame = cx.out.encode(&ServerRepr::GameClosed { id: id.0 });
        cx.out.broadcast(frame);
        // A member's game gone may make room for a hosted game `max_games` held back.
        if !hosted {
            self.top_up_hosted(cx);
        }
    }

    /// A closed game no longer counts against its creator's address.
    fn discharge(&mut self, game: &Game) {
        let Some(ip) = game.address else {
            return;
        };
        if let Some(share) = self.shares.get_mut(&ip) {
            share.games = share.games.saturating_sub(1);
            share.data_bytes = share.data_bytes.saturating_sub(game.data_bytes);
            if share.games == 0 {
                self.shares.remove(&ip);
            }
        }
    }

    /// `member` leaves the lobby: its asks withdrawn, out of every game.
    pub(crate) fn remove_member(&mut self, cx: &mut Ctx<'_>, member: MemberId) {
        for ask in self.asks.of_member(member) {
            self.asks.take(cx, ask);
        }
        for id in self.seats.get(&member).cloned().unwrap_or_default() {
            self.remove_player(cx, id, member);
        }
    }

    /// SET_GAME: GAME_INFO only when the flags change.
    pub(crate) fn set_game(
        &mut self,
        cx: &mut Ctx<'_>,
        member: MemberId,
        id: GameId,
        flags: u32,
        password: &str,
    ) -> Result<(), GeneralRefusal> {
        if self.owned(id, member)?.set_flags(flags, password) {
            self.broadcast_info(cx.out, id);
        }
        Ok(())
    }

    /// SET_READY: GAME_INFO only when the flag changes.
    pub(crate) fn set_ready(
        &mut self,
        cx: &mut Ctx<'_>,
        member: MemberId,
        id: GameId,
        ready: bool,
    ) -> Result<(), GeneralRefusal> {
        let game = self.games.get_mut(&id).ok_or(UNKNOWN_GAME)?;
        if game.set_ready(member, ready)? {
            self.broadcast_info(cx.out, id);
        }
        Ok(())
    }

    /// START_GAME: flag 4, GAME_INFO to all, GAME_STARTED to the players; a game already
    /// under way sends nothing.
    pub(crate) fn start(
        &mut self,
        cx: &mut Ctx<'_>,
        member: MemberId,
        id: GameId,
    ) -> Result<(), GeneralRefusal> {
        let game = self.owned(id, member)?;
        if game.flags & GAME_IN_PROGRESS != 0 {
            return Ok(());
        }
        game.flags |= GAME_IN_PROGRESS;
        self.broadcast_info(cx.out, id);
        self.send_started(cx.out, id, None);
        Ok(())
    }

    /// KICK: KICKED to the player, then it leaves the game.
    pub(crate) fn kick(
        &mut self,
        cx: &mut Ctx<'_>,
        member: MemberId,
        id: GameId,
        target: MemberId,
        reason: &str,
    ) -> Result<(), GeneralRefusal> {
        let game = self.owned(id, member)?;
        if target == member {
            return Err(KICK_SELF);
        }
        if !game.has(target) {
            return Err(NOT_IN_GAME);
        }
        let frame = cx.out.encode(&ServerRepr::Kicked { game: id.0, reason });
        cx.out.send_member(target, frame);
        self.remove_player(cx, id, target);
        Ok(())
    }

    /// GIVE_OWNER: the owner hands the game over, with the waiting asks (to itself: nothing
    /// happens).
    pub(crate) fn give_owner(
        &mut self,
        cx: &mut Ctx<'_>,
        member: MemberId,
        id: GameId,
        target: MemberId,
    ) -> Result<(), GeneralRefusal> {
        let game = self.owned(id, member)?;
        if !game.has(target) {
            return Err(NOT_IN_GAME);
        }
        if target != member {
            game.make_owner(Some(target));
            self.asks.send_all(cx.out, id, target);
            self.broadcast_info(cx.out, id);
        }
        Ok(())
    }

    /// STORE_DATA.
    pub(crate) fn store_data(
        &mut self,
        cx: &mut Ctx<'_>,
        member: MemberId,
        id: GameId,
        key: &str,
        value: &[u8],
    ) -> Result<(), GeneralRefusal> {
        let (limit, ip_limit) = (cx.config.game_data, cx.config.game_data_per_ip);
        let game = self.games.get_mut(&id).ok_or(UNKNOWN_GAME)?;
        if game.owner != member {
            return Err(NOT_OWNER);
        }
        let before = game.data_bytes;
        let share = game.address.and_then(|ip| self.shares.get_mut(&ip));
        if let Some(share) = share.as_ref() {
            let after = game.data_after(key, value);
            if after > before && after <= limit && share.data_bytes - before + after > ip_limit {
                cx.stats.games_refused_per_ip[1] += 1;
                return Err(ADDRESS_DATA);
            }
        }
        game.store(key, value, limit)?;
        if let Some(share) = share {
            share.data_bytes = share.data_bytes - before + game.data_bytes;
        }
        Ok(())
    }

    /// FETCH_DATA: DATA_VALUE to the owner, empty when the key is absent.
    pub(crate) fn fetch_data(
        &mut self,
        out: &mut Outbox,
        member: MemberId,
        id: GameId,
        key: &str,
    ) -> Result<(), GeneralRefusal> {
        let value = self.owned(id, member)?.fetch(key);
        let frame = out.encode(&ServerRepr::DataValue {
            game: id.0,
            key,
            value,
        });
        out.send_member(member, frame);
        Ok(())
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

    /// TO_OWNER to a hosted game: the game type handles it.
    pub(crate) fn hosted_message(
        &mut self,
        cx: &mut Ctx<'_>,
        id: GameId,
        from: MemberId,
        app_code: u32,
        body: &[u8],
    ) {
        if let Some(hosted) = self.games.get_mut(&id).and_then(|g| g.hosted.as_mut()) {
            hosted
                .game
                .message(cx.now, from, app_code, body, &mut self.scratch);
            self.apply_hosted(cx, id, false, None);
        }
    }

    /// A hosted game's timer fired.
    pub(crate) fn hosted_timer(&mut self, cx: &mut Ctx<'_>, id: GameId) {
        if let Some(hosted) = self.games.get_mut(&id).and_then(|g| g.hosted.as_mut()) {
            hosted.timer = None;
            hosted.game.timer(cx.now, &mut self.scratch);
            self.apply_hosted(cx, id, false, None);
        }
    }

    /// Carries out what a hosted game asked for, after one call: flags and timer first, then
    /// GAME_INFO to all (when its players or flags changed), GAME_STARTED (to every player when
    /// it starts, to a player who `joined` a game under way), then its messages; finally the
    /// hosted games are topped up.
    fn apply_hosted(
        &mut self,
        cx: &mut Ctx<'_>,
        id: GameId,
        players_changed: bool,
        joined: Option<MemberId>,
    ) {
        let Some(game) = self.games.get_mut(&id) else {
            self.scratch.drain();
            return;
        };
        let old_flags = game.flags;
        let mut messages = Vec::new();
        for action in self.scratch.drain() {
            match action {
                HostedAction::Start => game.flags |= GAME_IN_PROGRESS,
                HostedAction::Reset => game.flags &= !GAME_IN_PROGRESS,
                HostedAction::Timer(at) => {
                    if let Some(hosted) = game.hosted.as_mut() {
                        if let Some(key) = hosted.timer.take() {
                            cx.timers.cancel(key);
                        }
                        hosted.timer = at.map(|at| cx.timers.insert(at, Timer::Hosted(id)));
                    }
                }
                message => messages.push(message),
            }
        }
        let started = old_flags & GAME_IN_PROGRESS == 0 && game.flags & GAME_IN_PROGRESS != 0;
        let under_way = game.flags & GAME_IN_PROGRESS != 0;
        let changed = players_changed || game.flags != old_flags;
        if changed {
            self.broadcast_info(cx.out, id);
        }
        if started {
            self.send_started(cx.out, id, None);
        } else if let Some(member) = joined.filter(|_| under_way) {
            self.send_started(cx.out, id, Some(member));
        }
        let players = self.games.get(&id).map_or(&[][..], |g| &g.players[..]);
        for message in messages {
            let (to, app_code, body) = match message {
                HostedAction::ToAll { app_code, body } => (None, app_code, body),
                HostedAction::ToPlayer {
                    member,
                    app_code,
                    body,
                } => (Some(member), app_code, body),
                HostedAction::Start | HostedAction::Reset | HostedAction::Timer(_) => continue,
            };
            let frame = cx.out.encode(&ServerRepr::GameMessage {
                game: id.0,
                from: SERVER_MEMBER.0,
                app_code,
                body: &body,
            });
            match to {
                Some(member) => cx.out.send_member(member, frame),
                None => cx.out.send_members(players, frame),
            }
        }
        if changed {
            self.top_up_hosted(cx);
        }
    }

    /// Keeps `count` joinable hosted games of each configured type: opens games while there
    /// are fewer, closes empty ones (lowest id first) while there are more.
    pub(crate) fn top_up_hosted(&mut self, cx: &mut Ctx<'_>) {
        for spec in &cx.config.hosted {
            let joinable = |games: &BTreeMap<GameId, Game>| {
                games
                    .values()
                    .filter(|g| g.joinable_hosted(spec.kind))
                    .count()
            };
            while joinable(&self.games) > spec.count {
                let empty = self
                    .games
                    .iter()
                    .find(|(_, g)| g.joinable_hosted(spec.kind) && g.players.is_empty())
                    .map(|(&id, _)| id);
                let Some(id) = empty else { break };
                self.close_game(cx, id);
            }
            while joinable(&self.games) < spec.count && self.games.len() < cx.config.max_games {
                let Some(id) = self.next_game_id() else { break };
                self.games.insert(id, Game::hosted(spec.kind, id));
                cx.stats.hosted_opened += 1;
                self.broadcast_info(cx.out, id);
            }
        }
    }

    /// Games held, hosted ones included.
    pub(crate) fn len(&self) -> usize {
        self.games.len()
    }

    /// Asks waiting for owners.
    pub(crate) fn asks(&self) -> usize {
        self.asks.len()
    }

    /// Every game, in id order, for operators.
    pub(crate) fn views(&self) -> impl Iterator<Item = GameView<'_>> {
        self.games.iter().map(|(&id, g)| GameView {
            id,
            owner: g.owner,
            name: &g.name,
            game_type: &g.game_type,
            flags: g.flags,
            players: g.players.len(),
            max_players: g.max_players,
            asks: self.asks.of_game(id).count(),
            data_bytes: g.data_bytes,
        })
    }

    /// The players of `id` in join order with their flags.
    pub(crate) fn roster(&self, id: GameId) -> Option<(&[i32], &[u32])> {
        self.games
            .get(&id)
            .map(|g| (&g.players[..], &g.player_flags[..]))
    }
}
