//! Wakes the loop at its next deadline to the microsecond: a Linux `timerfd` registered in
//! the loop's one `Poll`. The load generator (`lobby-load`) uses it too, to send a scheduled
//! request at its time rather than at whatever event wakes its loop first.
//!
//! Why: `mio::Poll::poll` takes its timeout in whole milliseconds, rounded up (epoll_wait),
//! so every deadline was reached up to 1 ms late on top of the timer wheel's own tick; the
//! TCP lobby's COUNTDOWN frames measured 1-2 ms behind their schedule on an idle machine
//! (docs/PERFORMANCE.md). The timerfd fires at the deadline itself. The poll timeout stays
//! as it was, as a fallback: it is never earlier than the timerfd, so it only matters if
//! arming failed.
//!
//! Re-arming costs a system call, so [`PreciseWake::arm`] only re-arms when the deadline
//! moves earlier than the armed one (or nothing is armed). A deadline that moved later
//! (its timer was cancelled) just gets one early, harmless wake-up, after which the loop
//! arms the new one.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
    Timespec,
};

/// The loop's precise alarm clock.
#[derive(Debug)]
pub struct PreciseWake {
    fd: OwnedFd,
    /// The deadline the timerfd will fire at, if any.
    armed: Option<Instant>,
}

impl PreciseWake {
    /// A disarmed timerfd (CLOCK_MONOTONIC, the clock `Instant` reads), registered under
    /// `token` (the server's is `Target::Timer`).
    pub fn new(registry: &Registry, token: Token) -> io::Result<PreciseWake> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        registry.register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)?;
        Ok(PreciseWake { fd, armed: None })
    }

    /// Makes sure the loop wakes by `deadline` (seen from `now`). Deadlines already due
    /// need no timer: the caller polls without waiting.
    pub fn arm(&mut self, deadline: Instant, now: Instant) -> io::Result<()> {
        if deadline <= now {
            return Ok(());
        }
        if let Some(armed) = self.armed {
            if armed > now && armed <= deadline {
                return Ok(());
            }
        }
        // Relative time: `Instant` does not expose its CLOCK_MONOTONIC reading, but the
        // distance is exact to the nanosecond (never zero here, which would disarm).
        let wait = deadline
            .saturating_duration_since(now)
            .max(Duration::from_nanos(1));
        let value = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: Timespec {
                tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: i64::from(wait.subsec_nanos()),
            },
        };
        timerfd_settime(&self.fd, TimerfdTimerFlags::empty(), &value)?;
        self.armed = Some(deadline);
        Ok(())
    }

    /// The timerfd fired: consume its expiration count so the next firing is a new edge.
    pub fn fired(&mut self) {
        let mut count = [0u8; 8];
        // One read takes the whole count; `WouldBlock` means a spurious event.
        let _ = rustix::io::read(&self.fd, &mut count);
        self.armed = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::token::Target;
    use mio::{Events, Poll};

    /// The timerfd wakes a poll with no timeout at the deadline, well under a millisecond
    /// late on an idle machine; here only "not early, not absurdly late" is asserted.
    #[test]
    fn wakes_a_poll_at_the_deadline() {
        let mut poll = Poll::new().unwrap();
        let mut wake = PreciseWake::new(poll.registry(), Target::Timer.token()).unwrap();
        let mut events = Events::with_capacity(4);
        let start = Instant::now();
        let deadline = start + Duration::from_micros(2500);
        wake.arm(deadline, start).unwrap();
        poll.poll(&mut events, Some(Duration::from_secs(5)))
            .unwrap();
        let woke = Instant::now();
        assert!(events
            .iter()
            .any(|e| Target::from_token(e.token()) == Some(Target::Timer)));
        assert!(woke >= deadline, "woke {:?} early", deadline - woke);
        assert!(woke - deadline < Duration::from_secs(1));
        wake.fired();
        // Drained: a poll now times out instead of seeing the timer again.
        poll.poll(&mut events, Some(Duration::from_millis(20)))
            .unwrap();
        assert!(events.is_empty());
    }

    /// A later deadline keeps the earlier armed one (one early wake-up instead of a system
    /// call); an earlier one re-arms.
    #[test]
    fn re_arms_only_for_earlier_deadlines() {
        let poll = Poll::new().unwrap();
        let mut wake = PreciseWake::new(poll.registry(), Target::Timer.token()).unwrap();
        let now = Instant::now();
        wake.arm(now + Duration::from_secs(10), now).unwrap();
        wake.arm(now + Duration::from_secs(20), now).unwrap();
        assert_eq!(wake.armed, Some(now + Duration::from_secs(10)));
        wake.arm(now + Duration::from_secs(5), now).unwrap();
        assert_eq!(wake.armed, Some(now + Duration::from_secs(5)));
        wake.arm(now, now).unwrap();
        assert_eq!(wake.armed, Some(now + Duration::from_secs(5)));
        wake.fired();
        assert_eq!(wake.armed, None);
    }
}
