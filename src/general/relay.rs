//! The relay of the general lobby (docs/protocols/general-lobby.md, "Relay"): TO_OWNER reaches
//! the game's owner, TO_ALL every player including the sender (the article's GameBroadcast),
//! TO_PLAYER one player (owner only). Only players of the game may send; the body is opaque and
//! GAME_MESSAGE names the sender. A TO_OWNER to a hosted game goes to its game type.
//!
//! This module must not look inside a body, nor keep one beyond the call: each GAME_MESSAGE is
//! encoded once into the output arena.

use crate::wire::general::{ErrorCode, ServerRepr};

use super::games::Games;
use super::output::Ctx;
use super::types::{GameId, GeneralRefusal, MemberId};

const NOT_IN_GAME: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::NotInGame, "not a player of this game");

fn message<'a>(game: GameId, from: MemberId, app_code: u32, body: &'a [u8]) -> ServerRepr<'a> {
    ServerRepr::GameMessage {
        game: game.0,
        from: from.0,
        app_code,
        body,
    }
}

/// TO_OWNER.
pub(crate) fn to_owner(
    cx: &mut Ctx<'_>,
    games: &mut Games,
    from: MemberId,
    game: GameId,
    app_code: u32,
    body: &[u8],
) -> Result<(), GeneralRefusal> {
    let owner = games.table().owner_for(game, from)?;
    cx.stats.relayed += 1;
    if games.table().is_hosted(game) {
        games.hosted_message(cx, game, from, app_code, body);
    } else {
        let frame = cx.out.encode(&message(game, from, app_code, body));
        cx.out.send_member(owner, frame);
    }
    Ok(())
}

/// TO_ALL.
pub(crate) fn to_all(
    cx: &mut Ctx<'_>,
    games: &Games,
    from: MemberId,
    game: GameId,
    app_code: u32,
    body: &[u8],
) -> Result<(), GeneralRefusal> {
    let players = games.table().players_of(game, from)?;
    cx.stats.relayed += 1;
    let frame = cx.out.encode(&message(game, from, app_code, body));
    cx.out.send_members(players, frame);
    Ok(())
}

/// TO_PLAYER.
pub(crate) fn to_player(
    cx: &mut Ctx<'_>,
    games: &Games,
    from: MemberId,
    game: GameId,
    to: MemberId,
    app_code: u32,
    body: &[u8],
) -> Result<(), GeneralRefusal> {
    let players = games.table().players_if_owner(game, from)?;
    if !players.contains(&to.0) {
        return Err(NOT_IN_GAME);
    }
    cx.stats.relayed += 1;
    let frame = cx.out.encode(&message(game, from, app_code, body));
    cx.out.send_member(to, frame);
    Ok(())
}
