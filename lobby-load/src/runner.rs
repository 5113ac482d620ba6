//! The poll loop every mode runs in, the open-loop pacer and the progress line.
//!
//! A mode is a [`Workload`]: it registers its sockets, reacts to readiness and is ticked
//! after every poll (to send, to pace, to sweep timeouts). The loop owns the clock: it
//! stops at the deadline or once `--requests` completed, whatever the server does, so every
//! run is bounded in time and count.
//!
//! The progress line (stderr in the binary) comes once a second on runs longer than
//! [`PROGRESS_AFTER`], unless `--quiet`: rewritten in place with `\r` on a terminal, one line
//! per second otherwise (a log file or a pipe).

use std::io::{self, Write};
use std::time::{Duration, Instant};

use mio::{Events, Poll, Registry, Token};

use lobbyd::net::io::wake::PreciseWake;

use super::options::Options;
use super::stats::{Percentiles, Stats, Summary};

/// Longest sleep in one poll: timeouts and progress are checked at least this often.
const MAX_POLL_WAIT: Duration = Duration::from_millis(10);
/// Poll wait in open loop, the pacing granularity.
const PACED_POLL_WAIT: Duration = Duration::from_millis(1);
/// Runs this short or shorter show no progress line: the summary follows at once.
pub const PROGRESS_AFTER: Duration = Duration::from_secs(2);
/// The loop's alarm clock; workloads number their sockets from 0 up.
const ALARM: Token = Token(usize::MAX - 1);

/// One mode's clients.
pub trait Workload {
    /// Reacts to readiness of the socket registered under `token`.
    fn ready(&mut self, registry: &Registry, token: Token, now: Instant, stats: &mut Stats);
    /// Called after every poll: sends what closed loop or the pacer allows, sweeps timeouts.
    fn tick(&mut self, registry: &Registry, now: Instant, pacer: &mut Pacer, stats: &mut Stats);
    /// Called once when the measurement ends, before the summary (close, count what is open).
    fn finish(&mut self, _now: Instant, _stats: &mut Stats) {}
    /// When the workload needs a tick before its next event, if ever (a scheduled send): a
    /// timerfd wakes the poll then, to the microsecond. Why not the poll's timeout alone:
    /// mio rounds it up to the millisecond, so the send went out at whatever event woke the
    /// loop first, and `tcp-cycle --spread` parties started in step with the COUNTDOWN bursts
    /// of parties already running instead of at their random phases.
    fn next_wake(&self) -> Option<Instant> {
        None
    }
}

/// Open-loop send schedule: `rate` sends per second from `start`, whatever the replies.
#[derive(Debug)]
pub struct Pacer {
    start: Instant,
    rate: Option<f64>,
    granted: u64,
    /// The end of the run: nothing is due past it.
    end: Option<Instant>,
}

impl Pacer {
    /// A pacer for `rate` requests per second (`None`: closed loop, the pacer grants nothing).
    pub fn new(start: Instant, rate: Option<f64>) -> Pacer {
        Pacer {
            start,
            rate,
            granted: 0,
            end: None,
        }
    }

    /// The same pacer granting nothing past `end`: the loop's last turn can come a little
    /// after the run's end (a late wake-up), and a run of D seconds at R per second sends
    /// at most R times D.
    pub fn until(self, end: Instant) -> Pacer {
        Pacer {
            end: Some(end),
            ..self
        }
    }

    /// True in open loop.
    pub fn is_open_loop(&self) -> bool {
        self.rate.is_some()
    }

    /// How many sends are due at `now` and not granted yet; they count as granted. Bounded
    /// by `cap` so a stall does not turn into one huge burst.
    pub fn due(&mut self, now: Instant, cap: u64) -> u64 {
        let Some(rate) = self.rate else {
            return 0;
        };
        // Nanoseconds times rate, then one division: exact for whole milliseconds, where
        // `secs_f64 * rate` can land just below an integer.
        let now = self.end.map_or(now, |end| now.min(end));
        let elapsed = now.saturating_duration_since(self.start).as_nanos() as f64;
        let target = (elapsed * rate / 1e9) as u64;
        let due = target.saturating_sub(self.granted);
        // Sends skipped past the cap are forgotten, not owed.
        self.granted += due;
        due.min(cap)
    }
}

/// Runs `workload` for the options' duration and returns the summary.
pub fn drive(
    options: &Options,
    target: String,
    mut poll: Poll,
    workload: &mut dyn Workload,
    progress: &mut dyn Write,
) -> io::Result<Summary> {
    let mut events = Events::with_capacity(1024);
    let mut stats = Stats::default();
    let start = Instant::now();
    let end = start + options.duration;
    let mut pacer = Pacer::new(start, options.rate).until(end);
    let mut next_report = start + Duration::from_secs(1);
    let mut last_completed = 0u64;
    let show_progress = !options.quiet && options.duration > PROGRESS_AFTER;
    let mut shown = false;
    let wait_cap = if pacer.is_open_loop() {
        PACED_POLL_WAIT
    } else {
        MAX_POLL_WAIT
    };
    // Without the timerfd (it cannot fail on Linux short of running out of descriptors)
    // the poll's millisecond timeout is the fallback.
    let mut alarm = PreciseWake::new(poll.registry(), ALARM).ok();
    workload.tick(poll.registry(), start, &mut pacer, &mut stats);
    loop {
        let now = Instant::now();
        let done = options.max_requests.is_some_and(|n| stats.completed >= n);
        if now >= end || done {
            break;
        }
        let wake = workload.next_wake();
        if let (Some(alarm), Some(at)) = (alarm.as_mut(), wake) {
            // On failure the poll's timeout below still wakes the loop, a little late.
            let _ = alarm.arm(at, now);
        }
        let wake = wake.unwrap_or(end);
        let wait = end
            .min(next_report)
            .min(wake)
            .saturating_duration_since(now)
            .min(wait_cap);
        match poll.poll(&mut events, Some(wait)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        let now = Instant::now();
        for event in events.iter() {
            if event.token() == ALARM {
                if let Some(alarm) = alarm.as_mut() {
                    alarm.fired();
                }
                continue;
            }
            workload.ready(poll.registry(), event.token(), now, &mut stats);
        }
        workload.tick(poll.registry(), now, &mut pacer, &mut stats);
        if now >= next_report {
            if show_progress {
                report(progress, options.tty, now - start, &stats, last_completed)?;
                shown = true;
            }
            last_completed = stats.completed;
            stats.interval.clear();
            next_report += Duration::from_secs(1);
        }
    }
    if shown && options.tty {
        // The summary starts on a line of its own.
        writeln!(progress)?;
    }
    let stop = Instant::now();
    workload.finish(stop, &mut stats);
    Ok(Summary::new(options, target, &stats, stop - start))
}

/// One progress line: on a terminal it replaces the previous one (`\r`, then erase to the end
/// of the line), elsewhere it is a line of its own.
fn report(
    out: &mut dyn Write,
    tty: bool,
    at: Duration,
    stats: &Stats,
    last: u64,
) -> io::Result<()> {
    let p = Percentiles::of(&stats.interval);
    let (start, end) = if tty { ("\r", "\x1b[K") } else { ("", "\n") };
    write!(
        out,
        "{start}[{:>4.0}s] {:>9}/s  p50 {:>8.1}us  p99 {:>8.1}us  max {:>9.1}us  errors {}  timeouts {}{end}",
        at.as_secs_f64(),
        stats.completed - last,
        p.p50,
        p.p99,
        p.max,
        stats.errors.values().sum::<u64>(),
        stats.timeouts.values().sum::<u64>(),
    )?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacer_grants_the_rate_and_forgets_what_it_capped() {
        let start = Instant::now();
        let mut pacer = Pacer::new(start, Some(1000.0));
        assert!(pacer.is_open_loop());
        assert_eq!(pacer.due(start, 100), 0);
        assert_eq!(pacer.due(start + Duration::from_millis(10), 100), 10);
        assert_eq!(pacer.due(start + Duration::from_millis(10), 100), 0);
        // A 1 s stall: 990 due, only 100 sent now, the rest forgotten.
        assert_eq!(pacer.due(start + Duration::from_millis(1000), 100), 100);
        assert_eq!(pacer.due(start + Duration::from_millis(1001), 100), 1);
    }

    #[test]
    fn pacer_grants_nothing_past_the_end_of_the_run() {
        let start = Instant::now();
        let end = start + Duration::from_millis(800);
        let mut pacer = Pacer::new(start, Some(500.0)).until(end);
        assert_eq!(pacer.due(start + Duration::from_millis(790), 1000), 395);
        // The last turn of the loop comes 5 ms late: the sends due until the end, none past it.
        assert_eq!(pacer.due(start + Duration::from_millis(805), 1000), 5);
        assert_eq!(pacer.due(start + Duration::from_millis(900), 1000), 0);
    }

    #[test]
    fn progress_lines_overwrite_on_a_terminal_only() {
        let mut stats = Stats::default();
        stats.complete(Duration::from_micros(5));
        let mut plain = Vec::new();
        report(&mut plain, false, Duration::from_secs(3), &stats, 0).unwrap();
        let plain = String::from_utf8(plain).unwrap();
        assert!(
            plain.starts_with("[   3s]") && plain.ends_with('\n'),
            "{plain:?}"
        );
        let mut tty = Vec::new();
        report(&mut tty, true, Duration::from_secs(3), &stats, 0).unwrap();
        let tty = String::from_utf8(tty).unwrap();
        assert!(
            tty.starts_with("\r[   3s]") && tty.ends_with("\x1b[K"),
            "{tty:?}"
        );
        assert!(!tty.contains('\n'));
    }

    #[test]
    fn closed_loop_pacer_grants_nothing() {
        let start = Instant::now();
        let mut pacer = Pacer::new(start, None);
        assert!(!pacer.is_open_loop());
        assert_eq!(pacer.due(start + Duration::from_secs(5), 100), 0);
    }
}
