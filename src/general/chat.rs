//! Chat in the general lobby (docs/protocols/general-lobby.md, "Chat"): lobby-wide (game 0),
//! to one game's players, and private; text 1 to 512 bytes of UTF-8 without control
//! characters; `chat_rate` lines per second per member (burst `chat_burst`), with
//! `crate::ratelimit`'s token bucket, excess answered ERROR 10.
//!
//! The speaker hears its own CHAT_FROM (it confirms delivery and the order everyone saw);
//! PRIVATE_FROM goes to the addressee only. A line is encoded once whatever the audience.
//!
//! This module must not decide who is in a game: it asks [`Games`].

use crate::wire::general::{ErrorCode, ServerRepr};

use super::games::Games;
use super::members::Members;
use super::output::Ctx;
use super::types::{GameId, MemberId, Refusal};

/// Longest chat line, in bytes.
pub const MAX_CHAT_BYTES: usize = 512;

const BAD_TEXT: Refusal = Refusal::new(
    ErrorCode::Malformed,
    "chat text is 1 to 512 bytes without control characters",
);
const RATE_LIMITED: Refusal = Refusal::new(ErrorCode::RateLimited, "chat rate limit");
const UNKNOWN_MEMBER: Refusal = Refusal::new(ErrorCode::UnknownId, "unknown member");
const AWAY: Refusal = Refusal::new(ErrorCode::UnknownId, "member is away");

/// A chat line is 1 to [`MAX_CHAT_BYTES`] bytes without control characters.
pub fn valid_text(text: &str) -> bool {
    (1..=MAX_CHAT_BYTES).contains(&text.len()) && !text.chars().any(char::is_control)
}

/// Spends one of `member`'s chat tokens.
fn take_token(cx: &mut Ctx<'_>, members: &mut Members, member: MemberId) -> Result<(), Refusal> {
    let taken = members
        .get_mut(member)
        .is_some_and(|m| m.chat.try_take(cx.now, 1));
    if taken {
        Ok(())
    } else {
        Err(RATE_LIMITED)
    }
}

/// CHAT: game 0 reaches every present member, another game its players (the speaker must be
/// one).
pub(crate) fn chat(
    cx: &mut Ctx<'_>,
    members: &mut Members,
    games: &Games,
    from: MemberId,
    game: i32,
    text: &str,
) -> Result<(), Refusal> {
    if !valid_text(text) {
        return Err(BAD_TEXT);
    }
    let players = match game {
        0 => None,
        id => Some(games.players_of(GameId(id), from)?),
    };
    take_token(cx, members, from)?;
    cx.stats.chat_lines += 1;
    let frame = cx.out.encode(&ServerRepr::ChatFrom {
        game,
        member: from.0,
        text,
    });
    match players {
        None => cx.out.broadcast(frame),
        Some(players) => cx.out.send_members(players, frame),
    }
    Ok(())
}

/// PRIVATE_CHAT: to one present member.
pub(crate) fn private(
    cx: &mut Ctx<'_>,
    members: &mut Members,
    from: MemberId,
    to: i32,
    text: &str,
) -> Result<(), Refusal> {
    if !valid_text(text) {
        return Err(BAD_TEXT);
    }
    let to = MemberId(to);
    if !members.contains(to) {
        return Err(UNKNOWN_MEMBER);
    }
    if !members.is_present(to) {
        return Err(AWAY);
    }
    take_token(cx, members, from)?;
    cx.stats.chat_lines += 1;
    let frame = cx
        .out
        .encode(&ServerRepr::PrivateFrom { from: from.0, text });
    cx.out.send_member(to, frame);
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn text_rules() {
        assert!(valid_text("hello"));
        assert!(valid_text(&"é".repeat(256)));
        assert!(!valid_text(&"é".repeat(257)), "513 bytes");
        assert!(!valid_text(""));
        assert!(!valid_text("a\nb"));
        assert!(!valid_text("a\u{7f}"));
        assert!(valid_text("Zoë 🚀"));
    }
}
