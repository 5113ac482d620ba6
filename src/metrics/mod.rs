//! The operators' HTTP endpoint, minus the sockets: request parsing and the pages.
//!
//! `--metrics ADDR` serves `GET /` (the status page for a browser, [`status_page`]),
//! `GET /metrics` (Prometheus text exposition format 0.0.4: every
//! counter of the cores and the drivers, gauges for rooms by state, players, instances and
//! tables, the `process_*` figures and a build-info gauge, each described in [`catalog`]), `GET /rooms` (the live rooms as JSON) and `GET /wz/games`
//! (the Warzone master server's games as JSON). Requests are
//! parsed with `httparse` from a bounded buffer; one request per connection, answered and
//! closed. The driver owns the sockets; nothing here blocks or allocates without bound.

use std::fmt::Write;

use crate::rtype::RoomState;

pub mod catalog;
pub mod history;
pub mod http;
pub mod process;
pub mod snapshot;
pub mod status_page;

pub use history::{LoadHistory, LoadSample, SAMPLE_EVERY};
pub use http::{parse_request, response, HttpError, Route, MAX_REQUEST_LEN};
pub use process::{read_process, ProcessView};
pub use snapshot::{
    Counter, DirectoryNodeView, DirectoryView, GeneralGameInfo, GeneralMemberInfo, GeneralSnapshot,
    ListenerView, RoomView, Snapshot, WzGameInfo, WzSnapshot,
};
pub use status_page::{escape_html, render_status_page, STATUS_ROWS};

/// Writes every counter and gauge of `snap` in the Prometheus text format, each metric
/// introduced by its `# HELP` and `# TYPE` lines from [`catalog`].
pub fn render_prometheus(snap: &Snapshot, out: &mut String) {
    let mut page = Exposition { out, current: "" };
    page.sample("build_info", env!("CARGO_PKG_VERSION"), 1);
    page.sample(
        "uptime_seconds",
        "",
        format_args!("{:.3}", snap.uptime.as_secs_f64()),
    );
    if let Some(process) = &snap.process {
        page.sample("process_resident_memory_bytes", "", process.resident_bytes);
        page.sample("process_open_fds", "", process.open_fds);
        page.sample("process_max_fds", "", process.max_fds);
        page.sample(
            "process_cpu_seconds_total",
            "",
            format_args!("{:.2}", process.cpu_seconds),
        );
        page.sample(
            "process_start_time_seconds",
            "",
            format_args!("{:.2}", process.start_time_seconds),
        );
    }
    snap.lobby
        .visit(|name, label, value| page.sample(name, label, value));
    for (name, label, value) in &snap.counters {
        page.sample(name, label, value);
    }
    for state in [
        RoomState::Waiting,
        RoomState::Countdown,
        RoomState::Playing,
        RoomState::Finished,
    ] {
        let n = snap.rooms.iter().filter(|r| r.state == state).count();
        page.sample("rooms", state_name(state), n);
    }
    let gauges: [(&str, usize); 5] = [
        ("players", snap.rooms.iter().map(|r| r.members).sum()),
        (
            "seat_reservations",
            snap.rooms.iter().map(|r| r.reservations).sum(),
        ),
        ("open_instances", snap.open_instances),
        ("instance_ports_in_use", snap.ports_in_use),
        ("rate_table_entries", snap.rate_table_len),
    ];
    for (name, value) in gauges {
        page.sample(name, "", value);
    }
    if let Some(conns) = snap.tcp_connections {
        page.sample("tcp_lobby_connections", "", conns);
        page.sample("tcp_lobby_buffered_bytes", "", snap.tcp_buffered_bytes);
    }
    if let Some(wz) = &snap.wz {
        let listed = wz.games.iter().filter(|g| g.listed).count();
        page.sample("wz_games", "listed", listed);
        page.sample("wz_games", "probing", wz.games.len() - listed);
        page.sample("wz_connections", "", wz.connections);
        page.sample("wz_probes", "", wz.probes);
        page.sample("wz_buffered_bytes", "", wz.buffered_bytes);
    }
    if let Some(general) = &snap.general {
        let away = general.members_away;
        page.sample("general_members", "present", general.members - away);
        page.sample("general_members", "away", away);
        let hosted = general.games.iter().filter(|g| g.owner == 0).count();
        page.sample("general_games", "member", general.games.len() - hosted);
        page.sample("general_games", "server", hosted);
        page.sample("general_connections", "", general.connections);
        let present = general.members - away;
        let tcp_members = present.saturating_sub(general.ws_members);
        page.sample("general_members_by_transport", "tcp", tcp_members);
        page.sample(
            "general_members_by_transport",
            "websocket",
            general.ws_members,
        );
        page.sample("general_ws_connections", "", general.ws_connections);
        page.sample("general_buffered_bytes", "", general.buffered_bytes);
        page.sample("general_buffered_peak_bytes", "", general.buffered_peak);
    }
}

/// The exposition text being written: samples of one metric come together, the first
/// preceded by the metric's `# HELP` and `# TYPE` lines.
struct Exposition<'a> {
    out: &'a mut String,
    /// The metric of the last sample written.
    current: &'a str,
}

impl<'a> Exposition<'a> {
    /// Writes one sample of `name` (given without its `lobbyd_` prefix, or in full for
    /// `process_*`), labelled `label_value` unless that is empty. A name missing from the
    /// catalog gets no `# HELP` line and is typed `untyped` (the scrape test fails on it).
    fn sample(&mut self, name: &'a str, label_value: &str, value: impl std::fmt::Display) {
        let info = catalog::metric_info(name);
        let prefix = if info.is_some_and(|m| m.name == name) {
            ""
        } else {
            "lobbyd_"
        };
        if name != self.current {
            self.current = name;
            match info {
                Some(m) => {
                    let _ = writeln!(self.out, "# HELP {} {}", m.name, m.help);
                    let _ = writeln!(self.out, "# TYPE {} {}", m.name, m.kind.as_str());
                }
                None => {
                    let _ = writeln!(self.out, "# TYPE {prefix}{name} untyped");
                }
            }
        }
        if label_value.is_empty() {
            let _ = writeln!(self.out, "{prefix}{name} {value}");
        } else {
            let label = info.map_or("label", |m| m.label);
            let _ = writeln!(
                self.out,
                "{prefix}{name}{{{label}=\"{label_value}\"}} {value}"
            );
        }
    }
}

/// Writes the Warzone master server's games as a JSON array (peer strings escaped).
pub fn render_wz_games_json(snap: &Snapshot, out: &mut String) {
    let games = snap.wz.as_ref().map_or(&[][..], |wz| &wz.games[..]);
    let text = json_text;
    out.push('[');
    for (i, game) in games.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"id\":{},\"protocol\":\"{}\",\"host\":\"{}\",\"listed\":{},\"name\":{},\
             \"version\":{},\"players\":{},\"max_players\":{},\"age_secs\":{}}}",
            game.game_id,
            game.protocol,
            game.host,
            game.listed,
            text(&game.name),
            text(&game.version),
            game.players.0,
            game.players.1,
            game.age_secs
        );
    }
    out.push_str("]\n");
}

/// Writes the live rooms as a JSON array: the R-Type rooms and parties, then the general
/// lobby's games (kind `"general"`, names escaped).
pub fn render_rooms_json(snap: &Snapshot, out: &mut String) {
    out.push('[');
    for (i, room) in snap.rooms.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let port = room
            .port
            .map_or_else(|| "null".to_string(), |p| p.to_string());
        let _ = write!(
            out,
            "{{\"id\":{},\"kind\":\"{}\",\"state\":\"{}\",\"port\":{port},\"members\":{},\
             \"reservations\":{},\"max_players\":{}}}",
            room.room.0,
            room.kind,
            state_name(room.state),
            room.members,
            room.reservations,
            room.max_players
        );
    }
    let games = snap.general.as_ref().map_or(&[][..], |g| &g.games[..]);
    for (i, game) in games.iter().enumerate() {
        if i > 0 || !snap.rooms.is_empty() {
            out.push(',');
        }
        let _ = write!(
            out,
            "{{\"id\":{},\"kind\":\"general\",\"name\":{},\"type\":{},\"owner\":{},\
             \"flags\":{},\"members\":{},\"max_players\":{}}}",
            game.id,
            json_text(&game.name),
            json_text(&game.game_type),
            game.owner,
            game.flags,
            game.players,
            game.max_players
        );
    }
    out.push_str("]\n");
}

/// A JSON string literal of `text`.
fn json_text(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

fn state_name(state: RoomState) -> &'static str {
    match state {
        RoomState::Waiting => "waiting",
        RoomState::Countdown => "countdown",
        RoomState::Playing => "playing",
        RoomState::Finished => "finished",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtype::{JoinFailure, RoomId, RtypeStats};
    use std::time::Duration;

    fn snapshot() -> Snapshot {
        let mut lobby = RtypeStats {
            list_requests: 7,
            ..RtypeStats::default()
        };
        lobby.join_failed(JoinFailure::Full);
        Snapshot {
            lobby,
            // As the UDP front end reports them (net::rtype::stats::UdpStats::visit).
            counters: vec![
                ("udp_lobby_dropped_total", "truncated", 0),
                ("udp_lobby_dropped_total", "bad_checksum", 2),
            ],
            rooms: vec![
                RoomView {
                    room: RoomId(1),
                    kind: "udp",
                    state: RoomState::Waiting,
                    port: Some(4300),
                    members: 2,
                    reservations: 1,
                    max_players: 4,
                    players: Vec::new(),
                },
                RoomView {
                    room: RoomId(2),
                    kind: "udp",
                    state: RoomState::Playing,
                    port: None,
                    members: 3,
                    reservations: 0,
                    max_players: 4,
                    players: Vec::new(),
                },
            ],
            open_instances: 1,
            ports_in_use: 1,
            rate_table_len: 5,
            tcp_connections: Some(3),
            uptime: Duration::from_millis(1500),
            process: Some(ProcessView {
                resident_bytes: 5 << 20,
                open_fds: 9,
                max_fds: 1024,
                cpu_seconds: 0.25,
                start_time_seconds: 1_700_000_000.5,
            }),
            wz: None,
            general: None,
            ..Snapshot::default()
        }
    }

    #[test]
    fn prometheus_text() {
        let mut out = String::new();
        render_prometheus(&snapshot(), &mut out);
        for line in [
            "lobbyd_udp_lobby_requests_total{request=\"list_rooms\"} 7",
            "lobbyd_udp_lobby_join_failed_total{reason=\"full\"} 1",
            "lobbyd_udp_lobby_dropped_total{reason=\"bad_checksum\"} 2",
            "lobbyd_udp_lobby_dropped_total{reason=\"truncated\"} 0",
            "lobbyd_rooms{state=\"waiting\"} 1",
            "lobbyd_rooms{state=\"playing\"} 1",
            "lobbyd_players 5",
            "lobbyd_seat_reservations 1",
            "lobbyd_rate_table_entries 5",
            "lobbyd_tcp_lobby_connections 3",
            "lobbyd_uptime_seconds 1.500",
            "# HELP lobbyd_players Members of R-Type rooms and parties now.",
            "# TYPE lobbyd_players gauge",
            "# TYPE lobbyd_udp_lobby_requests_total counter",
            concat!(
                "lobbyd_build_info{version=\"",
                env!("CARGO_PKG_VERSION"),
                "\"} 1"
            ),
            "process_open_fds 9",
            "process_start_time_seconds 1700000000.50",
        ] {
            assert!(out.lines().any(|l| l == line), "missing {line:?} in\n{out}");
        }
        // Every sample line is "name{labels} value" or "name value"; HELP and TYPE lines
        // once per name, HELP first.
        let mut types = std::collections::HashSet::new();
        let mut helped = "";
        for line in out.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                helped = rest.split(' ').next().unwrap();
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap();
                assert_eq!(name, helped, "{line} without its HELP");
                assert!(!rest.ends_with(" untyped"), "{line}");
                assert!(types.insert(rest.to_string()), "duplicate {line}");
                continue;
            }
            let (_, value) = line.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
    }

    /// A counter a front end reports but the catalog does not describe is still served, but
    /// without help and untyped, which the scrape test over every front end rejects.
    #[test]
    fn undescribed_counter_has_no_help() {
        let mut snap = snapshot();
        snap.counters.push(("not_in_the_catalog_total", "x", 1));
        let mut out = String::new();
        render_prometheus(&snap, &mut out);
        assert!(out.contains(
            "# TYPE lobbyd_not_in_the_catalog_total untyped\n\
             lobbyd_not_in_the_catalog_total{label=\"x\"} 1\n"
        ));
        assert!(!out.contains("# HELP lobbyd_not_in_the_catalog_total"));
    }

    #[test]
    fn rooms_json() {
        let mut out = String::new();
        render_rooms_json(&snapshot(), &mut out);
        assert_eq!(
            out,
            "[{\"id\":1,\"kind\":\"udp\",\"state\":\"waiting\",\"port\":4300,\"members\":2,\
             \"reservations\":1,\"max_players\":4},{\"id\":2,\"kind\":\"udp\",\
             \"state\":\"playing\",\"port\":null,\"members\":3,\"reservations\":0,\
             \"max_players\":4}]\n"
        );
    }

    #[test]
    fn wz_games_page_and_gauges() {
        let mut snap = snapshot();
        snap.wz = Some(WzSnapshot {
            games: vec![WzGameInfo {
                game_id: 7,
                protocol: "legacy",
                host: "192.0.2.7:2100".parse().unwrap(),
                listed: true,
                name: "a \"quoted\" \\ name".into(),
                version: "4.3.3".into(),
                players: (1, 4),
                age_secs: 12,
            }],
            connections: 3,
            probes: 0,
            buffered_bytes: 0,
        });
        let mut json = String::new();
        render_wz_games_json(&snap, &mut json);
        assert_eq!(
            json,
            "[{\"id\":7,\"protocol\":\"legacy\",\"host\":\"192.0.2.7:2100\",\"listed\":true,\
             \"name\":\"a \\\"quoted\\\" \\\\ name\",\"version\":\"4.3.3\",\"players\":1,\
             \"max_players\":4,\"age_secs\":12}]\n"
        );
        let mut text = String::new();
        render_prometheus(&snap, &mut text);
        assert!(
            text.contains("lobbyd_wz_games{state=\"listed\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("lobbyd_wz_games{state=\"probing\"} 0\n"),
            "{text}"
        );
        assert!(text.contains("lobbyd_wz_connections 3\n"), "{text}");
        assert_eq!(
            parse_request(b"GET /wz/games HTTP/1.1\r\n\r\n"),
            Ok(Some(Route::WzGames))
        );
    }
}
