//! Join asks waiting for an owner's JOIN_ANSWER (docs/protocols/general-lobby.md, "Joining"):
//! ids from 1, never reused; each with its expiry on the timer wheel; found by id, by game
//! (oldest first, to pass them to a new owner) and by requester (to count them against its
//! games and withdraw them when it leaves).
//!
//! This module must not decide an answer: `super::games` does, and sends the responses.

use std::collections::{BTreeSet, HashMap};

use crate::time::TimerKey;
use crate::wire::general::ServerRepr;

use super::output::{Ctx, Outbox};
use super::types::{AskId, GameId, MemberId, Timer};

/// One ask.
#[derive(Debug)]
pub(crate) struct Ask {
    pub(crate) game: GameId,
    pub(crate) member: MemberId,
    /// The JOIN_REQUEST's request code, echoed in the JOIN_RESPONSE.
    pub(crate) request: i32,
    timer: Option<TimerKey>,
}

impl Ask {
    /// JOIN_RESPONSE to the member who asked.
    pub(crate) fn respond(&self, cx: &mut Ctx<'_>, accepted: bool, reason: &str) {
        let frame = cx.out.encode(&ServerRepr::JoinResponse {
            game: self.game.0,
            request: self.request,
            accepted,
            reason,
        });
        cx.out.send_member(self.member, frame);
    }
}

/// The asks waiting for owners.
#[derive(Debug)]
pub(crate) struct Asks {
    by_id: HashMap<AskId, Ask>,
    by_game: BTreeSet<(GameId, AskId)>,
    by_member: HashMap<MemberId, Vec<AskId>>,
    next: i32,
}

impl Default for Asks {
    fn default() -> Asks {
        Asks {
            by_id: HashMap::new(),
            by_game: BTreeSet::new(),
            by_member: HashMap::new(),
            next: 1,
        }
    }
}

impl Asks {
    /// A new ask expiring after `ask_timeout`; `None` once the ids are spent.
    pub(crate) fn open(
        &mut self,
        cx: &mut Ctx<'_>,
        game: GameId,
        member: MemberId,
        request: i32,
    ) -> Option<AskId> {
        let ask = AskId(self.next);
        self.next = self.next.checked_add(1)?;
        let timer = Some(
            cx.timers
                .insert(cx.now + cx.config.ask_timeout, Timer::Ask(ask)),
        );
        self.by_id.insert(
            ask,
            Ask {
                game,
                member,
                request,
                timer,
            },
        );
        self.by_game.insert((game, ask));
        self.by_member.entry(member).or_default().push(ask);
        Some(ask)
    }

    /// Forgets an ask everywhere (cancelling its expiry) and returns it.
    pub(crate) fn take(&mut self, cx: &mut Ctx<'_>, ask: AskId) -> Option<Ask> {
        let taken = self.by_id.remove(&ask)?;
        if let Some(key) = taken.timer {
            cx.timers.cancel(key);
        }
        self.by_game.remove(&(taken.game, ask));
        if let Some(list) = self.by_member.get_mut(&taken.member) {
            list.retain(|&a| a != ask);
            if list.is_empty() {
                self.by_member.remove(&taken.member);
            }
        }
        Some(taken)
    }

    /// The ask's expiry fired: the wheel already dropped it.
    pub(crate) fn disarm(&mut self, ask: AskId) {
        if let Some(waiting) = self.by_id.get_mut(&ask) {
            waiting.timer = None;
        }
    }

    pub(crate) fn get(&self, ask: AskId) -> Option<&Ask> {
        self.by_id.get(&ask)
    }

    /// True if `member` already waits on an ask for `game`.
    pub(crate) fn waiting(&self, game: GameId, member: MemberId) -> bool {
        self.by_member
            .get(&member)
            .is_some_and(|list| list.iter().any(|a| self.by_game.contains(&(game, *a))))
    }

    /// The asks of `game`, oldest first.
    pub(crate) fn of_game(&self, game: GameId) -> impl Iterator<Item = AskId> + '_ {
        self.by_game
            .range((game, AskId(i32::MIN))..=(game, AskId(i32::MAX)))
            .map(|&(_, ask)| ask)
    }

    /// The asks `member` waits on.
    pub(crate) fn of_member(&self, member: MemberId) -> Vec<AskId> {
        self.by_member.get(&member).cloned().unwrap_or_default()
    }

    /// How many asks `member` waits on.
    pub(crate) fn count_of(&self, member: MemberId) -> usize {
        self.by_member.get(&member).map_or(0, Vec::len)
    }

    /// JOIN_ASK to `owner` for each ask of `game`, oldest first.
    pub(crate) fn send_all(&self, out: &mut Outbox, game: GameId, owner: MemberId) {
        for ask in self.of_game(game) {
            if let Some(a) = self.by_id.get(&ask) {
                let frame = out.encode(&ServerRepr::JoinAsk {
                    game: game.0,
                    member: a.member.0,
                    ask: ask.0,
                });
                out.send_member(owner, frame);
            }
        }
    }

    /// Asks waiting.
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }
}
