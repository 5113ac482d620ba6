//! The limits a chat line passes before it is delivered (docs/protocols/general-lobby.md,
//! "Chat"): the member's own rate, the rate of every member of its address together, and the
//! lobby-wide fan-out budget, with the slow mode that says when that budget is spent.
//!
//! The budget counts what the lobby delivers, not what members send: a line costs its
//! CHAT_FROM (or PRIVATE_FROM) bytes times its recipients, so a line to a lobby of 1,000
//! costs 1,000 times a private one, and the bytes per second fanned out stay under the
//! budget however many members talk at once. When a line does not fit, it is refused
//! (ERROR 10) and slow mode comes on: every present member hears CHAT_FROM(0, 0, text) from
//! the server; [`SLOW_MODE_COOLDOWN`] after the last line refused for the budget, slow mode
//! goes off and the lobby hears that too. Notices are not charged (at most two per cooldown).
//!
//! Sans-IO: time comes in `Ctx::now`; the one deadline is on the core's timer wheel.
//! A check takes nothing unless every limit passes, so a refused line spends no token.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::ratelimit::{PerIpConfig, PerIpLimiter, TokenBucket};
use crate::wire::general::{ErrorCode, ServerRepr};

use super::output::Ctx;
use super::types::{GeneralConfig, GeneralRefusal, Timer, SERVER_MEMBER};

/// How long slow mode stays on after the last line the budget refused.
pub const SLOW_MODE_COOLDOWN: Duration = Duration::from_secs(3);

/// Addresses whose chat rate is tracked at once (more evict the oldest, which then starts
/// again with a full bucket): past the default connection cap, so only a crowd of more
/// addresses than the lobby holds connections could cycle them.
const MAX_CHAT_ADDRESSES: usize = 16_384;

/// The text of slow mode's first notice.
pub const SLOW_MODE_ON: &str = "slow mode: the lobby's chat is over its budget, lines are refused";
/// The text of slow mode's last notice.
pub const SLOW_MODE_OFF: &str = "slow mode over";

pub(crate) const MEMBER_RATE: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::RateLimited, "chat rate limit");
const IP_RATE: GeneralRefusal =
    GeneralRefusal::new(ErrorCode::RateLimited, "chat rate limit of your address");
const SLOW_MODE: GeneralRefusal = GeneralRefusal::new(
    ErrorCode::RateLimited,
    "slow mode: lobby chat over its budget, try again shortly",
);

/// Slow mode while it is on.
#[derive(Debug)]
struct SlowMode {
    /// The last line refused for the budget. One deadline is pending while slow mode is on
    /// (set when it comes on, set again by the check that finds it must stay).
    last_refusal: Instant,
}

/// The per-address chat rates and the lobby-wide fan-out budget.
#[derive(Debug)]
pub(crate) struct ChatLimits {
    per_ip: Option<PerIpLimiter>,
    budget: Option<TokenBucket>,
    /// The budget's capacity: one second of it. A line costing more is charged this much, so
    /// every line fits an untouched budget.
    budget_burst: u64,
    slow: Option<SlowMode>,
}

impl ChatLimits {
    /// Limits as `config` sets them, with full buckets at `now`.
    pub(crate) fn new(config: &GeneralConfig, now: Instant) -> ChatLimits {
        let per_ip = (config.chat_ip_rate != 0).then(|| {
            PerIpLimiter::new(PerIpConfig {
                rate: config.chat_ip_rate,
                per: Duration::from_secs(1),
                burst: config.chat_ip_rate.saturating_mul(2),
                byte_rate: 0,
                byte_burst: 0,
                max_entries: MAX_CHAT_ADDRESSES,
            })
        });
        let budget_burst = config.chat_budget;
        let budget = (budget_burst != 0)
            .then(|| TokenBucket::new(now, budget_burst, Duration::from_secs(1), budget_burst));
        ChatLimits {
            per_ip,
            budget,
            budget_burst,
            slow: None,
        }
    }

    /// True while slow mode is on.
    pub(crate) fn slow_mode(&self) -> bool {
        self.slow.is_some()
    }

    /// Whether a line costing `cost` bytes of fan-out (frame bytes times recipients) may go,
    /// from a member with `member_rate` bucket and address `ip` (unknown: no address rate).
    /// On `Ok` one token of each rate and `cost` of the budget are spent; on `Err` nothing,
    /// and a line refused for the budget turns slow mode on (or keeps it on).
    pub(crate) fn admit(
        &mut self,
        cx: &mut Ctx<'_>,
        member_rate: &mut TokenBucket,
        ip: Option<IpAddr>,
        cost: u64,
    ) -> Result<(), GeneralRefusal> {
        let now = cx.now;
        if member_rate.available(now) == 0 {
            cx.stats.chat_refused[0] += 1;
            return Err(MEMBER_RATE);
        }
        let per_ip = self.per_ip.as_mut().zip(ip);
        if let Some((limiter, ip)) = per_ip {
            if !limiter.has_request_token(now, ip) {
                cx.stats.chat_refused[1] += 1;
                return Err(IP_RATE);
            }
        }
        let cost = cost.min(self.budget_burst);
        if let Some(budget) = self.budget.as_mut() {
            if budget.available(now) < cost {
                cx.stats.chat_refused[2] += 1;
                self.slow_down(cx);
                return Err(SLOW_MODE);
            }
            budget.try_take(now, cost);
        }
        if let Some((limiter, ip)) = self.per_ip.as_mut().zip(ip) {
            limiter.allow_request(now, ip);
        }
        member_rate.try_take(now, 1);
        Ok(())
    }

    /// A line was refused for the budget: slow mode comes on, told to every present member,
    /// or its cooldown starts again.
    fn slow_down(&mut self, cx: &mut Ctx<'_>) {
        let now = cx.now;
        match self.slow.as_mut() {
            Some(slow) => slow.last_refusal = now,
            None => {
                cx.timers.insert(now + SLOW_MODE_COOLDOWN, Timer::SlowMode);
                self.slow = Some(SlowMode { last_refusal: now });
                cx.stats.slow_modes += 1;
                announce(cx, SLOW_MODE_ON);
            }
        }
    }

    /// The slow-mode deadline fired: over once a whole cooldown passed without a line refused
    /// for the budget (told to every present member), else checked again when it would be.
    pub(crate) fn slow_mode_timer(&mut self, cx: &mut Ctx<'_>) {
        let Some(slow) = self.slow.as_mut() else {
            return;
        };
        let ends = slow.last_refusal + SLOW_MODE_COOLDOWN;
        if cx.now < ends {
            cx.timers.insert(ends, Timer::SlowMode);
            return;
        }
        self.slow = None;
        announce(cx, SLOW_MODE_OFF);
    }

    /// Gives back the address table's spare capacity (the periodic tidy).
    pub(crate) fn shrink(&mut self) {
        if let Some(limiter) = self.per_ip.as_mut() {
            limiter.shrink();
        }
    }
}

/// CHAT_FROM(0, 0, text) to every present member: the server speaking to the lobby.
fn announce(cx: &mut Ctx<'_>, text: &str) {
    let frame = cx.out.encode(&ServerRepr::ChatFrom {
        game: 0,
        member: SERVER_MEMBER.0,
        text,
    });
    cx.out.broadcast(frame);
}
