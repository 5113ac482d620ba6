//! Chat in the general lobby (docs/protocols/general-lobby.md, "Chat"): lobby-wide (game 0),
//! to one game's players, and private; text 1 to 512 bytes of UTF-8 without control
//! characters; within the member's rate, its address's rate and the lobby-wide fan-out
//! budget ([`super::chat_limits`]), excess answered ERROR 10.
//!
//! The speaker hears its own CHAT_FROM (it confirms delivery and the order everyone saw);
//! PRIVATE_FROM goes to the addressee only. A line is encoded once whatever the audience.
//!
//! This module must not decide who is in a game: it asks [`Games`].

use std::net::IpAddr;

use crate::wire::general::{ErrorCode, ServerRepr};

use super::chat_limits::{ChatLimits, MEMBER_RATE};
use super::games::Games;
use super::output::Ctx;
use super::roster::Roster;
use super::types::{GameId, GeneralRefusal, MemberId};

/// Longest chat line, in bytes.
pub const MAX_CHAT_BYTES: usize = 512;

const BAD_TEXT: GeneralRefusal = GeneralRefusal::new(
    ErrorCode::Malformed,
    "chat text is 1 to 512 bytes without control characters",
);
const UNKNOWN_MEMBER: GeneralRefusal = GeneralRefusal::new(ErrorCode::UnknownId, "unknown member");
const AWAY: GeneralRefusal = GeneralRefusal::new(ErrorCode::UnknownId, "member is away");

/// A chat line is 1 to [`MAX_CHAT_BYTES`] bytes without control characters.
pub fn valid_text(text: &str) -> bool {
    (1..=MAX_CHAT_BYTES).contains(&text.len()) && !text.chars().any(char::is_control)
}

/// Where a line comes from: the member, and its connection's address if the driver gave one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Speaker {
    pub(crate) member: MemberId,
    pub(crate) ip: Option<IpAddr>,
}

/// Passes `line` (to `recipients` members) through the member's rate, its address's rate and
/// the lobby's budget, spending from each only if all allow it.
fn admit(
    cx: &mut Ctx<'_>,
    members: &mut Roster,
    limits: &mut ChatLimits,
    from: Speaker,
    line: &ServerRepr<'_>,
    recipients: usize,
) -> Result<(), GeneralRefusal> {
    let Some(member) = members.get_mut(from.member) else {
        return Err(MEMBER_RATE);
    };
    let cost = (line.buffer_len() as u64).saturating_mul(recipients as u64);
    limits.admit(cx, &mut member.chat, from.ip, cost)
}

/// CHAT: game 0 reaches every present member, another game its players (the speaker must be
/// one).
pub(crate) fn chat(
    cx: &mut Ctx<'_>,
    members: &mut Roster,
    limits: &mut ChatLimits,
    games: &Games,
    from: Speaker,
    game: i32,
    text: &str,
) -> Result<(), GeneralRefusal> {
    if !valid_text(text) {
        return Err(BAD_TEXT);
    }
    let players = match game {
        0 => None,
        id => Some(games.table().players_of(GameId(id), from.member)?),
    };
    let line = ServerRepr::ChatFrom {
        game,
        member: from.member.0,
        text,
    };
    let recipients = players.map_or(cx.out.present(), <[i32]>::len);
    admit(cx, members, limits, from, &line, recipients)?;
    cx.stats.chat_lines += 1;
    let frame = cx.out.encode(&line);
    match players {
        None => cx.out.broadcast(frame),
        Some(players) => cx.out.send_members(players, frame),
    }
    Ok(())
}

/// PRIVATE_CHAT: to one present member.
pub(crate) fn private(
    cx: &mut Ctx<'_>,
    members: &mut Roster,
    limits: &mut ChatLimits,
    from: Speaker,
    to: i32,
    text: &str,
) -> Result<(), GeneralRefusal> {
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
    let line = ServerRepr::PrivateFrom {
        from: from.member.0,
        text,
    };
    admit(cx, members, limits, from, &line, 1)?;
    cx.stats.chat_lines += 1;
    let frame = cx.out.encode(&line);
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
