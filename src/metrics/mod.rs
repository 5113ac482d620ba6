//! The operators' HTTP endpoint, minus the sockets: request parsing and the pages.
//!
//! `--metrics ADDR` serves `GET /` (the status page for a browser, [`status_page`]),
//! `GET /metrics` (Prometheus text exposition format 0.0.4: every
//! counter of the core and the driver, by protocol and reason, plus gauges for rooms by state,
//! players, instances and tables), `GET /rooms` (the live rooms as JSON) and `GET /wz/games`
//! (the Warzone master server's games as JSON). Requests are
//! parsed with `httparse` from a bounded buffer; one request per connection, answered and
//! closed. The driver owns the sockets; nothing here blocks or allocates without bound.

use std::fmt::Write;

use crate::rtype::RoomState;

pub mod http;
pub mod snapshot;
pub mod status_page;

pub use http::{parse_request, response, HttpError, Route, MAX_REQUEST_LEN};
pub use snapshot::{
    Counter, GeneralGameInfo, GeneralMemberInfo, GeneralSnapshot, ListenerView, RoomView, Snapshot,
    WzGameInfo, WzSnapshot,
};
pub use status_page::{escape_html, render_status_page, STATUS_ROWS};

/// Writes every counter and gauge of `snap` in the Prometheus text format.
pub fn render_prometheus(snap: &Snapshot, out: &mut String) {
    let mut last_name = "";
    let mut counter = |name: &'static str, label: &'static str, value: u64| {
        if name != last_name {
            let _ = writeln!(out, "# TYPE lobbyd_{name} counter");
            last_name = name;
        }
        if label.is_empty() {
            let _ = writeln!(out, "lobbyd_{name} {value}");
        } else {
            let _ = writeln!(out, "lobbyd_{name}{{reason=\"{label}\"}} {value}");
        }
    };
    snap.lobby.visit(&mut counter);
    for (name, label, value) in &snap.counters {
        counter(name, label, *value);
    }
    let _ = writeln!(out, "# TYPE lobbyd_rooms gauge");
    for state in [
        RoomState::Waiting,
        RoomState::Countdown,
        RoomState::Playing,
        RoomState::Finished,
    ] {
        let n = snap.rooms.iter().filter(|r| r.state == state).count();
        let _ = writeln!(out, "lobbyd_rooms{{state=\"{}\"}} {n}", state_name(state));
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
        let _ = writeln!(out, "# TYPE lobbyd_{name} gauge\nlobbyd_{name} {value}");
    }
    if let Some(conns) = snap.tcp_connections {
        let _ = writeln!(
            out,
            "# TYPE lobbyd_tcp_lobby_connections gauge\nlobbyd_tcp_lobby_connections {conns}"
        );
    }
    if let Some(wz) = &snap.wz {
        let listed = wz.games.iter().filter(|g| g.listed).count();
        let _ = writeln!(
            out,
            "# TYPE lobbyd_wz_games gauge\nlobbyd_wz_games{{state=\"listed\"}} {listed}\n\
             lobbyd_wz_games{{state=\"probing\"}} {}",
            wz.games.len() - listed
        );
        for (name, value) in [("wz_connections", wz.connections), ("wz_probes", wz.probes)] {
            let _ = writeln!(out, "# TYPE lobbyd_{name} gauge\nlobbyd_{name} {value}");
        }
    }
    if let Some(general) = &snap.general {
        let away = general.members_away;
        let _ = writeln!(
            out,
            "# TYPE lobbyd_general_members gauge\nlobbyd_general_members{{state=\"present\"}} {}\n\
             lobbyd_general_members{{state=\"away\"}} {away}",
            general.members - away
        );
        let hosted = general.games.iter().filter(|g| g.owner == 0).count();
        let _ = writeln!(
            out,
            "# TYPE lobbyd_general_games gauge\nlobbyd_general_games{{owner=\"member\"}} {}\n\
             lobbyd_general_games{{owner=\"server\"}} {hosted}",
            general.games.len() - hosted
        );
        let _ = writeln!(
            out,
            "# TYPE lobbyd_general_connections gauge\nlobbyd_general_connections {}",
            general.connections
        );
    }
    let _ = writeln!(
        out,
        "# TYPE lobbyd_uptime_seconds gauge\nlobbyd_uptime_seconds {:.3}",
        snap.uptime.as_secs_f64()
    );
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
            // As the UDP front end reports them (net::stats::UdpStats::visit).
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
            "lobbyd_udp_lobby_requests_total{reason=\"list_rooms\"} 7",
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
        ] {
            assert!(out.lines().any(|l| l == line), "missing {line:?} in\n{out}");
        }
        // Every sample line is "name{labels} value" or "name value"; TYPE lines once per name.
        let mut types = std::collections::HashSet::new();
        for line in out.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                assert!(types.insert(rest.to_string()), "duplicate {line}");
                continue;
            }
            let (_, value) = line.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
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
