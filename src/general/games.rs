//! The games of the general lobby (docs/protocols/general-lobby.md, "Games", "Joining",
//! "Owners", "Game data", "Server-hosted games"): creation and its limits, the join checks in
//! the article's order, asks and their answers, ownership transfer, kick, start, closing, and
//! the glue to server-hosted games (kept topped up to their count).
//!
//! Every change to a game sends its GAME_INFO to every present member; a game left without
//! players is closed (GAME_CLOSED to all), except a hosted one, which stays open. The games
//! themselves, who plays where and the read-only questions (listing included) are in
//! `super::game_table`; what each address's games hold in `super::shares`.
//!
//! This module must not know connections or sign-in: it routes frames to members through
//! [`super::output::Outbox`], and the façade checks that a member named in a request exists.

use std::net::IpAddr;

use crate::wire::general::{ErrorCode, ServerRepr, GAME_CLOSED, GAME_IN_PROGRESS, GAME_LOCKED};

use super::asks::Asks;
use super::game::{Game, NewGame, NOT_IN_GAME};
use super::game_table::{GameTable, UNKNOWN_GAME};
use super::hosted::{HostedAction, HostedOut, JoinVerdict};
use super::output::{Ctx, Outbox};
use super::shares::AddressShares;
use super::types::{AskId, GameId, GameView, GeneralRefusal, MemberId, Timer, SERVER_MEMBER};

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

/// The game table, the asks waiting for owners, and the addresses' shares.
#[derive(Debug)]
pub(crate) struct Games {
    table: GameTable,
    asks: Asks,
    /// What a hosted game asked for in its last call; drained after each.
    scratch: HostedOut,
    shares: AddressShares,
}

impl Games {
    pub(crate) fn new() -> Games {
        Games {
            table: GameTable::new(),
            asks: Asks::default(),
            scratch: HostedOut::default(),
            shares: AddressShares::default(),
        }
    }

    /// The games and who plays where, for the read-only questions.
    pub(crate) fn table(&self) -> &GameTable {
        &self.table
    }

    /// Games a member plays in plus asks it waits on: what `max_games_per_member` bounds.
    fn load(&self, member: MemberId) -> usize {
        self.table.games_of(member) + self.asks.count_of(member)
    }

    /// Games `member` plays in.
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
        if !self.shares.may_create(ip, cx.config.max_games_per_ip) {
            cx.stats.games_refused_per_ip[0] += 1;
            return Err(ADDRESS_GAMES);
        }
        if self.table.len() >= cx.config.max_games {
            return Err(LOBBY_GAMES_FULL);
        }
        let id = self.table.next_game_id().ok_or(LOBBY_GAMES_FULL)?;
        let mut game = Game::created(member, new);
        game.address = ip;
        self.shares.add_game(ip);
        self.table.insert(id, game);
        self.table.seat(member, id);
        cx.stats.games_created += 1;
        self.table.broadcast_info(cx.out, id);
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
        let game = self.table.game(id)?;
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
        let Some(owner) = self.table.get(id).map(|g| g.owner) else {
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
            .and_then(|a| self.table.get(a.game))
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
            taken.respond(cx, false, reason);
            return Ok(());
        }
        let full = self
            .table
            .get(taken.game)
            .map_or(true, |g| g.free_seats() == 0);
        if full {
            cx.stats.refuse(ErrorCode::Full);
            taken.respond(cx, false, "game full");
            return Ok(());
        }
        taken.respond(cx, true, reason);
        self.add_player(cx, taken.game, taken.member);
        Ok(())
    }

    /// An ask's timer fired: JOIN_RESPONSE(0, "no answer").
    pub(crate) fn ask_expired(&mut self, cx: &mut Ctx<'_>, ask: AskId) {
        self.asks.disarm(ask);
        if let Some(taken) = self.asks.take(cx, ask) {
            cx.stats.asks_expired += 1;
            taken.respond(cx, false, "no answer");
        }
    }

    /// JOIN_ASK again for every ask waiting on `owner`'s games (after a resume), oldest first.
    pub(crate) fn resend_asks(&self, out: &mut Outbox, owner: MemberId) {
        for (id, _) in self.table.iter().filter(|(_, g)| g.owner == owner) {
            self.asks.send_all(out, id, owner);
        }
    }

    /// Seats `member` in `id`: GAME_INFO to all, GAME_STARTED to it if the game is under way.
    fn add_player(&mut self, cx: &mut Ctx<'_>, id: GameId, member: MemberId) {
        let Some(game) = self.table.get_mut(id) else {
            return;
        };
        game.push_player(member);
        cx.stats.joins += 1;
        let in_progress = game.flags & GAME_IN_PROGRESS != 0;
        if let Some(hosted) = game.hosted.as_mut() {
            hosted
                .game
                .player_joined(cx.now, member, &game.players, &mut self.scratch);
            self.table.seat(member, id);
            return self.apply_hosted(cx, id, true, Some(member));
        }
        self.table.seat(member, id);
        self.table.broadcast_info(cx.out, id);
        if in_progress {
            self.table.send_started(cx.out, id, Some(member));
        }
    }

    /// LEAVE_GAME.
    pub(crate) fn leave(
        &mut self,
        cx: &mut Ctx<'_>,
        member: MemberId,
        id: GameId,
    ) -> Result<(), GeneralRefusal> {
        if !self.table.game(id)?.has(member) {
            return Err(NOT_IN_GAME);
        }
        self.remove_player(cx, id, member);
        Ok(())
    }

    /// Takes `member` out of `id`: the game closes when it was the last player (unless
    /// hosted); an owner leaving hands the game to the next player in join order, ready, with
    /// the waiting asks.
    fn remove_player(&mut self, cx: &mut Ctx<'_>, id: GameId, member: MemberId) {
        let Some(game) = self.table.get_mut(id) else {
            return;
        };
        if !game.has(member) {
            return;
        }
        if game.hosted.is_none() && game.players.len() <= 1 {
            self.table.unseat(member, id);
            return self.close_game(cx, id);
        }
        game.remove_player(member);
        if let Some(hosted) = game.hosted.as_mut() {
            hosted
                .game
                .player_left(cx.now, member, &game.players, &mut self.scratch);
            self.table.unseat(member, id);
            return self.apply_hosted(cx, id, true, None);
        }
        let new_owner = if game.owner == member {
            game.make_owner(None)
        } else {
            None
        };
        self.table.unseat(member, id);
        if let Some(owner) = new_owner {
            self.asks.send_all(cx.out, id, owner);
        }
        self.table.broadcast_info(cx.out, id);
    }

    /// Closes `id`: its asks are answered "game closed", GAME_CLOSED to all.
    fn close_game(&mut self, cx: &mut Ctx<'_>, id: GameId) {
        let waiting: Vec<AskId> = self.asks.of_game(id).collect();
        for ask in waiting {
            if let Some(taken) = self.asks.take(cx, ask) {
                taken.respond(cx, false, "game closed");
            }
        }
        let Some(game) = self.table.remove(id) else {
            return;
        };
        // A closed game no longer counts against its creator's address.
        self.shares.discharge(game.address, game.data_bytes);
        for &player in &game.players {
            self.table.unseat(MemberId(player), id);
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

    /// `member` leaves the lobby: its asks withdrawn, out of every game.
    pub(crate) fn remove_member(&mut self, cx: &mut Ctx<'_>, member: MemberId) {
        for ask in self.asks.of_member(member) {
            self.asks.take(cx, ask);
        }
        for id in self.table.seats_of(member) {
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
        if self.table.owned(id, member)?.set_flags(flags, password) {
            self.table.broadcast_info(cx.out, id);
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
        let game = self.table.get_mut(id).ok_or(UNKNOWN_GAME)?;
        if game.set_ready(member, ready)? {
            self.table.broadcast_info(cx.out, id);
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
        let game = self.table.owned(id, member)?;
        if game.flags & GAME_IN_PROGRESS != 0 {
            return Ok(());
        }
        game.flags |= GAME_IN_PROGRESS;
        self.table.broadcast_info(cx.out, id);
        self.table.send_started(cx.out, id, None);
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
        let game = self.table.owned(id, member)?;
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
        let game = self.table.owned(id, member)?;
        if !game.has(target) {
            return Err(NOT_IN_GAME);
        }
        if target != member {
            game.make_owner(Some(target));
            self.asks.send_all(cx.out, id, target);
            self.table.broadcast_info(cx.out, id);
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
        let game = self.table.owned(id, member)?;
        let before = game.data_bytes;
        let after = game.data_after(key, value);
        if !self
            .shares
            .data_fits(game.address, before, after, limit, ip_limit)
        {
            cx.stats.games_refused_per_ip[1] += 1;
            return Err(ADDRESS_DATA);
        }
        game.store(key, value, limit)?;
        self.shares
            .data_changed(game.address, before, game.data_bytes);
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
        let value = self.table.owned(id, member)?.fetch(key);
        let frame = out.encode(&ServerRepr::DataValue {
            game: id.0,
            key,
            value,
        });
        out.send_member(member, frame);
        Ok(())
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
        if let Some(hosted) = self.table.get_mut(id).and_then(|g| g.hosted.as_mut()) {
            hosted
                .game
                .message(cx.now, from, app_code, body, &mut self.scratch);
            self.apply_hosted(cx, id, false, None);
        }
    }

    /// A hosted game's timer fired.
    pub(crate) fn hosted_timer(&mut self, cx: &mut Ctx<'_>, id: GameId) {
        if let Some(hosted) = self.table.get_mut(id).and_then(|g| g.hosted.as_mut()) {
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
        let Some(game) = self.table.get_mut(id) else {
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
            self.table.broadcast_info(cx.out, id);
        }
        if started {
            self.table.send_started(cx.out, id, None);
        } else if let Some(member) = joined.filter(|_| under_way) {
            self.table.send_started(cx.out, id, Some(member));
        }
        let players = self.table.get(id).map_or(&[][..], |g| &g.players[..]);
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
            let joinable = |table: &GameTable| {
                table
                    .iter()
                    .filter(|(_, g)| g.joinable_hosted(spec.kind))
                    .count()
            };
            while joinable(&self.table) > spec.count {
                let empty = self
                    .table
                    .iter()
                    .find(|(_, g)| g.joinable_hosted(spec.kind) && g.players.is_empty())
                    .map(|(id, _)| id);
                let Some(id) = empty else { break };
                self.close_game(cx, id);
            }
            while joinable(&self.table) < spec.count && self.table.len() < cx.config.max_games {
                let Some(id) = self.table.next_game_id() else {
                    break;
                };
                self.table.insert(id, Game::hosted(spec.kind, id));
                cx.stats.hosted_opened += 1;
                self.table.broadcast_info(cx.out, id);
            }
        }
    }

    /// Asks waiting for owners.
    pub(crate) fn asks(&self) -> usize {
        self.asks.len()
    }

    /// Every game, in id order, for operators.
    pub(crate) fn views(&self) -> impl Iterator<Item = GameView<'_>> {
        self.table.iter().map(|(id, g)| GameView {
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
}
