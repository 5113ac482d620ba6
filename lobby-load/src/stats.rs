//! What a run counts, and the summary it prints.
//!
//! [`Stats`] is written on the hot path: one histogram record and a few integer increments
//! per request; errors and timeouts are keyed by a `&'static str` kind so counting one
//! allocates only the first time that kind is seen. [`Summary`] is computed once at the
//! end and rendered as text or JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::histogram::Histogram;
use super::options::Options;

/// Counters of one run.
#[derive(Debug, Default)]
pub struct Stats {
    /// Requests answered correctly (for `relay`: relayed datagrams received).
    pub completed: u64,
    /// Requests sent (for `relay`: datagrams sent to the instance).
    pub sent: u64,
    /// Latency of each completed request, in nanoseconds.
    pub latency: Histogram,
    /// The same, for the current progress interval only.
    pub interval: Histogram,
    /// Wrong or failed answers, by kind.
    pub errors: BTreeMap<&'static str, u64>,
    /// Requests that got no answer in time, by kind.
    pub timeouts: BTreeMap<&'static str, u64>,
    /// Mode-specific counts (cycles, connections held, rooms created, ...).
    pub extra: BTreeMap<&'static str, u64>,
    /// `tcp-cycle`: how late each COUNTDOWN arrived against the schedule computed from
    /// the first one, in nanoseconds.
    pub lateness: Option<Histogram>,
}

impl Stats {
    /// Counts one completed request that took `latency`.
    pub fn complete(&mut self, latency: Duration) {
        let nanos = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        self.completed += 1;
        self.latency.record(nanos);
        self.interval.record(nanos);
    }

    /// Counts an error of `kind`.
    pub fn error(&mut self, kind: &'static str) {
        *self.errors.entry(kind).or_default() += 1;
    }

    /// Counts a timeout of `kind`.
    pub fn timeout(&mut self, kind: &'static str) {
        *self.timeouts.entry(kind).or_default() += 1;
    }

    /// Adds `n` to the mode-specific counter `name`.
    pub fn add(&mut self, name: &'static str, n: u64) {
        *self.extra.entry(name).or_default() += n;
    }

    /// Sets the mode-specific gauge `name`.
    pub fn set(&mut self, name: &'static str, value: u64) {
        self.extra.insert(name, value);
    }

    /// Records how late a COUNTDOWN arrived.
    pub fn lateness(&mut self, late: Duration) {
        let nanos = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
        self.lateness
            .get_or_insert_with(Histogram::new)
            .record(nanos);
    }

    /// Errors plus timeouts of every kind.
    pub fn failures(&self) -> u64 {
        self.errors.values().sum::<u64>() + self.timeouts.values().sum::<u64>()
    }
}

/// Latency percentiles, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest value.
    pub max: f64,
}

impl Percentiles {
    /// The percentiles of `h` (nanoseconds) in microseconds.
    pub fn of(h: &Histogram) -> Percentiles {
        let us = |nanos: u64| nanos as f64 / 1000.0;
        Percentiles {
            p50: us(h.percentile(50.0)),
            p99: us(h.percentile(99.0)),
            p999: us(h.percentile(99.9)),
            max: us(h.max()),
        }
    }
}

/// The result of one run.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The mode's name.
    pub mode: &'static str,
    /// The target (or the echo server's address).
    pub target: String,
    /// Clients.
    pub concurrency: usize,
    /// Open-loop rate asked for, if any.
    pub rate: Option<f64>,
    /// Measured time.
    pub elapsed: Duration,
    /// Requests completed.
    pub completed: u64,
    /// Requests sent.
    pub sent: u64,
    /// Completed per second.
    pub per_second: f64,
    /// Latency of completed requests.
    pub latency: Percentiles,
    /// Errors by kind.
    pub errors: BTreeMap<&'static str, u64>,
    /// Timeouts by kind.
    pub timeouts: BTreeMap<&'static str, u64>,
    /// Mode-specific counts.
    pub extra: BTreeMap<&'static str, u64>,
    /// `tcp-cycle`: COUNTDOWN lateness percentiles and sample count.
    pub lateness: Option<(Percentiles, u64)>,
    /// What the run adjusted to the server's limits (the line [`super::fit`] printed).
    pub adjusted: Option<String>,
}

impl Summary {
    /// Builds the summary of `stats` measured over `elapsed`.
    pub fn new(options: &Options, target: String, stats: &Stats, elapsed: Duration) -> Summary {
        let secs = elapsed.as_secs_f64().max(1e-9);
        Summary {
            mode: options.mode.name(),
            target,
            concurrency: options.concurrency,
            rate: options.rate,
            elapsed,
            completed: stats.completed,
            sent: stats.sent,
            per_second: stats.completed as f64 / secs,
            latency: Percentiles::of(&stats.latency),
            errors: stats.errors.clone(),
            timeouts: stats.timeouts.clone(),
            extra: stats.extra.clone(),
            lateness: stats
                .lateness
                .as_ref()
                .map(|h| (Percentiles::of(h), h.count())),
            adjusted: None,
        }
    }

    /// Errors plus timeouts.
    pub fn failures(&self) -> u64 {
        self.errors.values().sum::<u64>() + self.timeouts.values().sum::<u64>()
    }

    /// Why the run counts as failed, if it does: nothing completed, or failures (errors and
    /// timeouts) are more than `max_failures` of the requests that completed or failed.
    pub fn shortfall(&self, max_failures: f64) -> Option<String> {
        if self.completed == 0 {
            return Some(format!(
                "nothing completed in {:.1} s",
                self.elapsed.as_secs_f64()
            ));
        }
        let failures = self.failures();
        let share = failures as f64 / (self.completed + failures) as f64;
        (share > max_failures).then(|| {
            format!(
                "{failures} of {} requests failed ({:.2} %, more than --max-failures {} %)",
                self.completed + failures,
                share * 100.0,
                max_failures * 100.0
            )
        })
    }

    /// The summary as one JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        let percentiles = |p: &Percentiles| serde_json::json!({ "p50": p.p50, "p99": p.p99, "p999": p.p999, "max": p.max });
        serde_json::json!({
            "mode": self.mode,
            "target": self.target,
            "concurrency": self.concurrency,
            "rate": self.rate,
            "elapsed_s": self.elapsed.as_secs_f64(),
            "completed": self.completed,
            "sent": self.sent,
            "per_second": self.per_second,
            "latency_us": percentiles(&self.latency),
            "errors": self.errors,
            "timeouts": self.timeouts,
            "extra": self.extra,
            "adjusted": self.adjusted,
            "countdown_lateness_us": self.lateness.map(|(p, n)| {
                let mut v = percentiles(&p);
                v["samples"] = n.into();
                v
            }),
        })
    }

    /// The summary as a few lines of text.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let loop_kind = match self.rate {
            Some(rate) => format!("open loop at {rate}/s"),
            None => "closed loop".to_owned(),
        };
        let l = &self.latency;
        // Writing into a String cannot fail.
        let _ = writeln!(
            out,
            "{} -> {}: {} clients, {}, {:.2} s",
            self.mode,
            self.target,
            self.concurrency,
            loop_kind,
            self.elapsed.as_secs_f64()
        );
        let _ = writeln!(
            out,
            "  completed {} of {} sent: {:.0}/s",
            self.completed, self.sent, self.per_second
        );
        let _ = writeln!(
            out,
            "  latency us: p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
            l.p50, l.p99, l.p999, l.max
        );
        if let Some((p, n)) = self.lateness {
            let _ = writeln!(
                out,
                "  countdown lateness us ({n} samples): p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
                p.p50, p.p99, p.p999, p.max
            );
        }
        for (title, map) in [
            ("errors", &self.errors),
            ("timeouts", &self.timeouts),
            ("counts", &self.extra),
        ] {
            if map.is_empty() {
                let _ = writeln!(out, "  {title}: none");
            } else {
                let items: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let _ = writeln!(out, "  {title}: {}", items.join(" "));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Mode;

    #[test]
    fn summary_counts_rates_and_failures() {
        let options = Options::new(Mode::Echo, "127.0.0.1:1".parse().unwrap());
        let mut stats = Stats::default();
        for micros in 1..=100u64 {
            stats.complete(Duration::from_micros(micros));
        }
        stats.sent = 103;
        stats.error("bad_reply");
        stats.timeout("reply");
        stats.timeout("reply");
        stats.add("cycles", 4);
        let summary = Summary::new(&options, "x".into(), &stats, Duration::from_secs(2));
        assert_eq!(summary.completed, 100);
        assert_eq!(summary.per_second, 50.0);
        assert_eq!(summary.failures(), 3);
        assert_eq!(summary.latency.max, 100.0);
        assert!(summary.latency.p50 >= 50.0 && summary.latency.p50 < 51.0);
        let json = summary.to_json();
        assert_eq!(json["completed"], 100);
        assert_eq!(json["timeouts"]["reply"], 2);
        assert_eq!(json["extra"]["cycles"], 4);
        assert!(json["countdown_lateness_us"].is_null());
        let text = summary.to_text();
        assert!(text.contains("errors: bad_reply=1"), "{text}");
        assert!(text.contains("50/s"), "{text}");
        // 3 failed of 103: within 5 %, not within 1 %.
        assert_eq!(summary.shortfall(0.05), None);
        let over = summary.shortfall(0.01).unwrap();
        assert!(over.contains("3 of 103 requests failed"), "{over}");
        let nothing = Summary::new(&options, "x".into(), &Stats::default(), Duration::ZERO);
        assert!(nothing
            .shortfall(1.0)
            .unwrap()
            .contains("nothing completed"));
    }

    #[test]
    fn lateness_appears_once_recorded() {
        let options = Options::new(Mode::Relay, "127.0.0.1:1".parse().unwrap());
        let mut stats = Stats::default();
        stats.lateness(Duration::from_micros(300));
        let summary = Summary::new(&options, "x".into(), &stats, Duration::from_secs(1));
        assert_eq!(summary.to_json()["countdown_lateness_us"]["samples"], 1);
        assert!(summary.to_text().contains("countdown lateness"));
    }
}
