//! The last 15 minutes of load, for the status page's charts: a sample every
//! [`SAMPLE_EVERY`] into a ring of [`HISTORY_LEN`] allocated once, so the loop pays the same
//! few additions per sample forever and never allocates for one.
//!
//! A sample holds counters as they stand (requests served so far per front end) and gauges
//! (connections, members, rooms, games); rates are worked out when a page is drawn, from two
//! neighbouring samples and the time between them. [`render_charts`] draws each series as
//! an inline SVG polyline: no script, no external asset.

use std::fmt::Write;
use std::time::Duration;

/// How often the loop takes a sample.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// Samples kept: 15 minutes of them, plus one so the oldest interval has a rate.
pub const HISTORY_LEN: usize = 91;

/// The front ends whose requests are counted, in [`LoadSample::requests`] order.
pub const REQUEST_SOURCES: [&str; 4] = ["UDP room lobby", "TCP lobby", "Warzone", "General lobby"];

/// The load at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadSample {
    /// When it was taken, in milliseconds since the server started.
    pub at_ms: u64,
    /// Requests served so far, per front end ([`REQUEST_SOURCES`] order).
    pub requests: [u64; REQUEST_SOURCES.len()],
    /// Stream connections open (TCP lobby, Warzone, general lobby).
    pub connections: u64,
    /// Members: of R-Type rooms and parties, and of the general lobby.
    pub members: u64,
    /// R-Type rooms and TCP lobby parties.
    pub rooms: u64,
    /// Warzone and general lobby games.
    pub games: u64,
}

/// The last [`HISTORY_LEN`] samples.
#[derive(Clone, Debug)]
pub struct LoadHistory {
    ring: Box<[LoadSample; HISTORY_LEN]>,
    /// Where the next sample goes.
    next: usize,
    /// Samples held (at most [`HISTORY_LEN`]).
    len: usize,
}

impl Default for LoadHistory {
    fn default() -> LoadHistory {
        LoadHistory {
            ring: Box::new([LoadSample::default(); HISTORY_LEN]),
            next: 0,
            len: 0,
        }
    }
}

impl LoadHistory {
    /// Keeps `sample`, forgetting the oldest once full (no allocation).
    pub fn record(&mut self, sample: LoadSample) {
        self.ring[self.next] = sample;
        self.next = (self.next + 1) % HISTORY_LEN;
        self.len = (self.len + 1).min(HISTORY_LEN);
    }

    /// The samples held, oldest first.
    pub fn samples(&self) -> impl Iterator<Item = &LoadSample> + '_ {
        let start = (self.next + HISTORY_LEN - self.len) % HISTORY_LEN;
        (0..self.len).map(move |i| &self.ring[(start + i) % HISTORY_LEN])
    }
}

/// Chart size in SVG user units.
const WIDTH: f64 = 270.0;
const HEIGHT: f64 = 60.0;
/// Line colours, one per series of a chart.
const COLOURS: [&str; 4] = ["#1f6feb", "#d1242f", "#1a7f37", "#9a6700"];

/// Writes the charts of `samples` (oldest first; the newest drawn at the right edge, one
/// step per [`SAMPLE_EVERY`]): requests/s of each front end `running` (in
/// [`REQUEST_SOURCES`] order), connections, members, and rooms and games.
pub fn render_charts(
    samples: &[LoadSample],
    running: [bool; REQUEST_SOURCES.len()],
    out: &mut String,
) {
    let minutes = (HISTORY_LEN - 1) as u64 * SAMPLE_EVERY.as_secs() / 60;
    let _ = writeln!(
        out,
        "<h2>Last {minutes} minutes</h2>\n<div class=\"charts\">"
    );
    let rates: Vec<[f64; REQUEST_SOURCES.len()]> = samples
        .windows(2)
        .map(|pair| {
            let secs = (pair[1].at_ms.saturating_sub(pair[0].at_ms) as f64 / 1000.0).max(0.001);
            let mut rate = [0.0; REQUEST_SOURCES.len()];
            for (i, r) in rate.iter_mut().enumerate() {
                *r = pair[1].requests[i].saturating_sub(pair[0].requests[i]) as f64 / secs;
            }
            rate
        })
        .collect();
    let request_series: Vec<(&str, Vec<f64>)> = REQUEST_SOURCES
        .iter()
        .enumerate()
        .filter(|(i, _)| running[*i])
        .map(|(i, name)| (*name, rates.iter().map(|r| r[i]).collect()))
        .collect();
    chart(out, "Requests/s", &request_series);
    let gauge = |pick: fn(&LoadSample) -> u64| -> Vec<f64> {
        samples.iter().map(|s| pick(s) as f64).collect()
    };
    chart(
        out,
        "Connections",
        &[("connections", gauge(|s| s.connections))],
    );
    chart(out, "Members", &[("members", gauge(|s| s.members))]);
    chart(
        out,
        "Rooms and games",
        &[("rooms", gauge(|s| s.rooms)), ("games", gauge(|s| s.games))],
    );
    out.push_str("</div>\n");
}

/// One chart: a titled SVG with a polyline per series, scaled to the largest value.
fn chart(out: &mut String, title: &str, series: &[(&str, Vec<f64>)]) {
    let max = series
        .iter()
        .flat_map(|(_, values)| values.iter().copied())
        .fold(0.0_f64, f64::max);
    let scale = if max > 0.0 { max } else { 1.0 };
    let legend: Vec<String> = series
        .iter()
        .zip(COLOURS)
        .map(|((name, values), colour)| {
            let now = values.last().copied().unwrap_or(0.0);
            format!(
                "<span style=\"color:{colour}\">{name} {}</span>",
                figure(now)
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "<figure><figcaption>{title} (peak {}): {}</figcaption>\n\
         <svg width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         role=\"img\" aria-label=\"{title}\"><rect width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         fill=\"none\" stroke=\"#d0d7de\"/>",
        figure(max),
        legend.join(" ")
    );
    let step = WIDTH / (HISTORY_LEN - 1) as f64;
    for ((name, values), colour) in series.iter().zip(COLOURS) {
        // The newest point at the right edge; older ones leftwards, one step per sample.
        let first_x = WIDTH - step * values.len().saturating_sub(1) as f64;
        let _ = write!(
            out,
            "<polyline class=\"{}\" fill=\"none\" stroke=\"{colour}\" points=\"",
            name.to_ascii_lowercase().replace(' ', "-")
        );
        for (i, value) in values.iter().enumerate() {
            let x = first_x + step * i as f64;
            let y = HEIGHT - value / scale * (HEIGHT - 2.0) - 1.0;
            let _ = write!(out, "{}{x:.1},{y:.1}", if i > 0 { " " } else { "" });
        }
        out.push_str("\"/>");
    }
    out.push_str("</svg></figure>\n");
}

/// A figure for a caption: whole numbers plain, rates to one decimal.
fn figure(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(i: u64) -> LoadSample {
        LoadSample {
            at_ms: i * 10_000,
            requests: [i * 50, 0, i * 10, 0],
            connections: i,
            members: 2 * i,
            rooms: 1,
            games: i % 2,
        }
    }

    #[test]
    fn ring_keeps_the_last_samples_oldest_first() {
        let mut history = LoadHistory::default();
        assert_eq!(history.samples().count(), 0);
        for i in 0..3 {
            history.record(sample(i));
        }
        let at: Vec<u64> = history.samples().map(|s| s.at_ms).collect();
        assert_eq!(at, [0, 10_000, 20_000]);
        for i in 3..200 {
            history.record(sample(i));
        }
        let at: Vec<u64> = history.samples().map(|s| s.at_ms / 10_000).collect();
        assert_eq!(at, (200 - HISTORY_LEN as u64..200).collect::<Vec<_>>());
    }

    /// The points of the polyline of class `class` in `page`.
    fn points(page: &str, class: &str) -> Vec<(f64, f64)> {
        let start = page
            .find(&format!("<polyline class=\"{class}\""))
            .unwrap_or_else(|| panic!("no {class} line in\n{page}"));
        let rest = &page[start..];
        let list = rest
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        list.split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn charts_draw_the_injected_samples() {
        // Three samples 10 s apart: UDP requests 0, 50, 150 -> 5/s then 10/s; members 0, 4, 2.
        let samples = [
            LoadSample {
                at_ms: 0,
                ..LoadSample::default()
            },
            LoadSample {
                at_ms: 10_000,
                requests: [50, 0, 0, 0],
                members: 4,
                ..LoadSample::default()
            },
            LoadSample {
                at_ms: 20_000,
                requests: [150, 0, 0, 0],
                members: 2,
                ..LoadSample::default()
            },
        ];
        let mut page = String::new();
        render_charts(&samples, [true, true, false, false], &mut page);
        assert_eq!(page.matches("<svg ").count(), 4, "{page}");
        assert!(
            !page.contains("Warzone") && !page.contains("General lobby"),
            "{page}"
        );
        assert_eq!(page.matches("</svg>").count(), 4);
        assert!(!page.contains("<script"), "{page}");
        let step = WIDTH / (HISTORY_LEN - 1) as f64;
        let round = |v: f64| (v * 10.0).round() / 10.0;
        // Rates: the higher one at the top (y = 1), half of it half-way down.
        assert_eq!(
            points(&page, "udp-room-lobby"),
            [(round(WIDTH - step), 30.0), (WIDTH, 1.0)]
        );
        assert_eq!(
            points(&page, "tcp-lobby"),
            [(round(WIDTH - step), 59.0), (WIDTH, 59.0)]
        );
        assert_eq!(
            points(&page, "members"),
            [
                (round(WIDTH - 2.0 * step), 59.0),
                (round(WIDTH - step), 1.0),
                (WIDTH, 30.0)
            ]
        );
        assert!(
            page.contains(
                "Requests/s (peak 10): <span style=\"color:#1f6feb\">UDP room lobby 10</span>"
            ),
            "{page}"
        );
        assert!(page.contains("Members (peak 4)"), "{page}");
    }

    #[test]
    fn a_full_history_spans_the_chart() {
        let samples: Vec<LoadSample> = (0..HISTORY_LEN as u64).map(sample).collect();
        let mut page = String::new();
        render_charts(&samples, [true; 4], &mut page);
        let members = points(&page, "members");
        assert_eq!(members.len(), HISTORY_LEN);
        assert_eq!((members[0].0, members[HISTORY_LEN - 1].0), (0.0, WIDTH));
        assert_eq!(points(&page, "udp-room-lobby").len(), HISTORY_LEN - 1);
    }
}
