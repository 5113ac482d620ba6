//! The members of the general lobby (docs/protocols/general-lobby.md, "Members", "Resume"):
//! each member's names, flags, chat rate, resume token, away grace and account, looked up by
//! id, name and token; the name rules; MEMBER_INFO, SET_MEMBER, the away flag and MEMBER_LEFT.
//!
//! It must not know connections' sign-in life (that is `super::members`, which seats a member
//! here once its SIGN_IN succeeds) nor games. It must not draw randomness of its own: tokens
//! come from the injected [`TokenSource`].

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::accounts::UserId;
use crate::capacity::shrink_spare;
use crate::ratelimit::TokenBucket;
use crate::time::TimerKey;
use crate::wire::general::{ErrorCode, ServerRepr, MEMBER_AWAY, MEMBER_CLIENT_FLAGS, TOKEN_LEN};

use super::output::{Ctx, Outbox};
use super::types::{ConnId, GeneralRefusal, LeaveReason, MemberId, MemberView, Timer, TokenSource};

/// Longest username or display name, in characters (Unicode scalar values).
pub const MAX_NAME_CHARS: usize = 24;

/// How many times the core draws a resume token that is not already live before it gives up
/// on one sign-in ("try again").
const TOKEN_DRAWS: usize = 8;

/// A name is 1 to [`MAX_NAME_CHARS`] characters without control characters (usernames and
/// display names alike).
pub fn valid_name(name: &str) -> bool {
    let chars = name.chars().count();
    (1..=MAX_NAME_CHARS).contains(&chars) && !name.chars().any(char::is_control)
}

pub(super) const NAME_INVALID: GeneralRefusal = GeneralRefusal::new(
    ErrorCode::NameInvalid,
    "names are 1 to 24 characters without control characters",
);

/// A member of the lobby.
#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) username: Box<str>,
    pub(crate) display_name: Box<str>,
    pub(crate) flags: u32,
    conn: Option<ConnId>,
    /// The chat rate of `super::chat`.
    pub(crate) chat: TokenBucket,
    token: [u8; TOKEN_LEN],
    grace: Option<TimerKey>,
    /// The account whose password signed it in (`None` for a guest): a SIGN_IN with that
    /// account's password takes the member over.
    account: Option<UserId>,
}

/// Where a member was when it moved to a new connection ([`Roster::reattach`]).
pub(super) struct Reattached {
    /// Its previous connection, still live as far as the member knew.
    pub(super) old: Option<ConnId>,
    /// True if it was away (the others' view of it changes).
    pub(super) was_away: bool,
}

/// Every member, by id, name and resume token.
pub(crate) struct Roster {
    by_id: BTreeMap<MemberId, Member>,
    by_name: HashMap<Box<str>, MemberId>,
    by_token: HashMap<[u8; TOKEN_LEN], MemberId>,
    next_member: i32,
    tokens: TokenSource,
}

impl Roster {
    pub(super) fn new(tokens: TokenSource) -> Roster {
        Roster {
            by_id: BTreeMap::new(),
            by_name: HashMap::new(),
            by_token: HashMap::new(),
            next_member: 1,
            tokens,
        }
    }

    /// A token not live yet, or `None` after [`TOKEN_DRAWS`] collisions (a broken source).
    pub(super) fn fresh_token(&mut self) -> Option<[u8; TOKEN_LEN]> {
        (0..TOKEN_DRAWS)
            .map(|_| (self.tokens)())
            .find(|token| !self.by_token.contains_key(token))
    }

    /// The member holding `name`.
    pub(super) fn holder(&self, name: &str) -> Option<MemberId> {
        self.by_name.get(name).copied()
    }

    /// The member `token` resumes, if its username is `username`.
    pub(super) fn by_token(&self, token: &[u8; TOKEN_LEN], username: &str) -> Option<MemberId> {
        self.by_token
            .get(token)
            .copied()
            .filter(|id| self.by_id.get(id).is_some_and(|m| &*m.username == username))
    }

    /// The account whose password signed `member` in, if any.
    pub(super) fn account_of(&self, member: MemberId) -> Option<UserId> {
        self.by_id.get(&member).and_then(|m| m.account)
    }

    /// The id the next member gets, `None` when the lobby holds `max_members` or the ids are
    /// spent.
    pub(super) fn next_id(&self, max_members: usize) -> Option<MemberId> {
        let spent = self.next_member.checked_add(1).is_none();
        (self.by_id.len() < max_members && !spent).then_some(MemberId(self.next_member))
    }

    /// A new member `id` (from [`Roster::next_id`]) named `username` on `conn`, with `token`.
    pub(super) fn insert(
        &mut self,
        cx: &Ctx<'_>,
        id: MemberId,
        conn: ConnId,
        username: &str,
        token: [u8; TOKEN_LEN],
        account: Option<UserId>,
    ) {
        self.next_member = id.0.saturating_add(1);
        let chat = TokenBucket::new(
            cx.now,
            cx.config.chat_rate,
            Duration::from_secs(1),
            cx.config.chat_burst,
        );
        self.by_id.insert(
            id,
            Member {
                username: username.into(),
                display_name: username.into(),
                flags: 0,
                conn: Some(conn),
                chat,
                token,
                grace: None,
                account,
            },
        );
        self.by_name.insert(username.into(), id);
        self.by_token.insert(token, id);
    }

    /// Moves `id` to `conn` with the `fresh` token: its grace ends and the away flag goes.
    pub(super) fn reattach(
        &mut self,
        cx: &mut Ctx<'_>,
        id: MemberId,
        conn: ConnId,
        fresh: [u8; TOKEN_LEN],
    ) -> Option<Reattached> {
        let member = self.by_id.get_mut(&id)?;
        self.by_token.remove(&member.token);
        self.by_token.insert(fresh, id);
        member.token = fresh;
        let old = member.conn.take();
        if let Some(key) = member.grace.take() {
            cx.timers.cancel(key);
        }
        let was_away = member.flags & MEMBER_AWAY != 0;
        member.flags &= !MEMBER_AWAY;
        member.conn = Some(conn);
        Some(Reattached { old, was_away })
    }

    /// Encodes WELCOME, the member's own MEMBER_INFO, then every other member's in id order
    /// (the first part of the sync; the façade adds the games and SYNC_DONE).
    pub(crate) fn encode_welcome(&self, out: &mut Outbox, member: MemberId) {
        let Some(me) = self.by_id.get(&member) else {
            return;
        };
        out.encode(&ServerRepr::Welcome {
            member: member.0,
            token: &me.token,
        });
        out.encode(&info(member, me));
        for (&id, other) in self.by_id.iter().filter(|(&id, _)| id != member) {
            out.encode(&info(id, other));
        }
    }

    /// Sends `member`'s MEMBER_INFO to every other present member.
    pub(crate) fn announce(&self, out: &mut Outbox, member: MemberId) {
        if let Some(m) = self.by_id.get(&member) {
            let frame = out.encode(&info(member, m));
            out.broadcast_except(Some(member), frame);
        }
    }

    /// SET_MEMBER: the low 16 flag bits and the display name; nothing is sent when nothing
    /// changes.
    pub(crate) fn set_member(
        &mut self,
        out: &mut Outbox,
        member: MemberId,
        flags: u32,
        display_name: &str,
    ) -> Result<(), GeneralRefusal> {
        if !valid_name(display_name) {
            return Err(NAME_INVALID);
        }
        let Some(m) = self.by_id.get_mut(&member) else {
            return Ok(());
        };
        let flags = (flags & MEMBER_CLIENT_FLAGS) | (m.flags & !MEMBER_CLIENT_FLAGS);
        if flags == m.flags && &*m.display_name == display_name {
            return Ok(());
        }
        m.flags = flags;
        if &*m.display_name != display_name {
            m.display_name = display_name.into();
        }
        let frame = out.encode(&info(member, m));
        out.broadcast(frame);
        Ok(())
    }

    /// `member` lost its connection: away for the resume grace (MEMBER_INFO with the away flag
    /// to the others), or gone at once without a grace. While `shutting_down` nobody is
    /// announced away.
    pub(super) fn go_away(
        &mut self,
        cx: &mut Ctx<'_>,
        member: MemberId,
        shutting_down: bool,
    ) -> Option<MemberId> {
        cx.out.detach(member);
        let m = self.by_id.get_mut(&member)?;
        m.conn = None;
        if shutting_down {
            return None;
        }
        if cx.config.resume_grace.is_zero() {
            return Some(member);
        }
        m.flags |= MEMBER_AWAY;
        let deadline = cx.now + cx.config.resume_grace;
        m.grace = Some(cx.timers.insert(deadline, Timer::Grace(member)));
        let frame = cx.out.encode(&info(member, m));
        cx.out.broadcast(frame);
        None
    }

    /// An away member's grace timer fired: true if it must leave now.
    pub(crate) fn grace_over(&mut self, member: MemberId) -> bool {
        self.by_id.get_mut(&member).is_some_and(|m| {
            m.grace = None;
            m.conn.is_none()
        })
    }

    /// `member` leaves the lobby (after the façade gave up its seats): MEMBER_LEFT to all.
    pub(crate) fn remove(&mut self, cx: &mut Ctx<'_>, member: MemberId, reason: LeaveReason) {
        let Some(m) = self.by_id.remove(&member) else {
            return;
        };
        self.by_name.remove(&m.username);
        self.by_token.remove(&m.token);
        if let Some(key) = m.grace {
            cx.timers.cancel(key);
        }
        cx.out.detach(member);
        cx.stats.leave(reason);
        let frame = cx.out.encode(&ServerRepr::MemberLeft { id: member.0 });
        cx.out.broadcast(frame);
    }

    /// Gives back the tables' spare capacity once they are less than a quarter full.
    pub(super) fn shrink(&mut self, floor: usize) {
        shrink_spare(&mut self.by_name, floor);
        shrink_spare(&mut self.by_token, floor);
    }

    /// True if a member has this id.
    pub(crate) fn contains(&self, member: MemberId) -> bool {
        self.by_id.contains_key(&member)
    }

    /// True if the member exists and has a connection.
    pub(crate) fn is_present(&self, member: MemberId) -> bool {
        self.by_id.get(&member).is_some_and(|m| m.conn.is_some())
    }

    pub(crate) fn get_mut(&mut self, member: MemberId) -> Option<&mut Member> {
        self.by_id.get_mut(&member)
    }

    /// Members, present or away.
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Every member, in id order, with the number of games it plays in from `games_of`.
    pub(crate) fn views<'a>(
        &'a self,
        games_of: impl Fn(MemberId) -> usize + 'a,
    ) -> impl Iterator<Item = MemberView<'a>> + 'a {
        self.by_id.iter().map(move |(&id, m)| MemberView {
            id,
            username: &m.username,
            display_name: &m.display_name,
            flags: m.flags,
            games: games_of(id),
        })
    }
}

impl std::fmt::Debug for Roster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Roster")
            .field("members", &self.by_id.len())
            .finish_non_exhaustive()
    }
}

fn info(id: MemberId, member: &Member) -> ServerRepr<'_> {
    ServerRepr::MemberInfo {
        id: id.0,
        flags: member.flags,
        username: &member.username,
        display_name: &member.display_name,
    }
}
