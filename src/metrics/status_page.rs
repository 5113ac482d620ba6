//! The status page an operator opens in a browser: `GET /` on the `--metrics` listener.
//!
//! One server-rendered HTML page, no external asset and no script (it reloads itself every
//! 5 s with `<meta http-equiv=refresh>`): uptime and version, every listener with its bound
//! address, the UDP rooms with their instances and players, the TCP lobby's parties with their
//! state and players, charts of the last 15 minutes (requests/s per front end, connections,
//! members, rooms and games: inline SVG, [`super::history`]), the Warzone games listed, the general lobby's members and games, and the
//! refusal counters of `/metrics` grouped by protocol, with links to `/metrics`, `/rooms` and
//! `/wz/games`.
//!
//! Room, game, player and member names are chosen by players: every one goes through
//! [`escape_html`], the one escape function of the page. Rendering runs only when the page is
//! requested, from the snapshot taken for that request, and each table shows at most
//! [`STATUS_ROWS`] rows, then "and N more", so a page costs the same however full the server.

use std::fmt::Write;

use super::history::render_charts;
use super::{state_name, RoomView, Snapshot};

/// Rows per table at most; the snapshot names as many parties and members.
pub const STATUS_ROWS: usize = 50;

/// How the counters of one protocol are named (their prefix) and titled.
const PROTOCOLS: [(&str, &str); 5] = [
    ("udp_lobby_", "UDP room lobby"),
    ("instance_", "game instances"),
    ("tcp_lobby_", "TCP lobby"),
    ("wz_", "Warzone master server"),
    ("general_", "general lobby"),
];

/// Parts of a counter name that make it a refusal: a request or connection the server turned
/// down at a limit or a rule.
const REFUSALS: [&str; 6] = [
    "refus",
    "join_failed",
    "rate_limited",
    "reply_budget_exceeded",
    "rejects",
    "over_limit",
];

/// Appends `text` to `out` with the five HTML special characters escaped, so any text a
/// player chose shows as text, in an element or in a quoted attribute.
pub fn escape_html(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// One table: a title with a count, a header row, at most [`STATUS_ROWS`] rows.
struct Table<'a> {
    out: &'a mut String,
    rows: usize,
}

impl<'a> Table<'a> {
    /// Opens a table of `total` items titled `title` with `columns`; an empty one says `empty`.
    fn open(out: &'a mut String, title: &str, total: usize, columns: &[&str]) -> Table<'a> {
        let _ = write!(
            out,
            "<h2>{title} <small>({total})</small></h2>\n<table><tr>"
        );
        for column in columns {
            let _ = write!(out, "<th>{column}</th>");
        }
        out.push_str("</tr>\n");
        Table { out, rows: 0 }
    }

    /// One row of cells, each already escaped or made of the server's own text.
    fn row(&mut self, cells: &[&str]) {
        self.rows += 1;
        self.out.push_str("<tr>");
        for cell in cells {
            let _ = write!(self.out, "<td>{cell}</td>");
        }
        self.out.push_str("</tr>\n");
    }

    /// Closes the table: "none" when empty, "and N more" when `total` did not fit.
    fn close(self, total: usize, columns: usize) {
        if total == 0 {
            let _ = writeln!(self.out, "<tr><td colspan={columns}>none</td></tr>");
        } else if total > self.rows {
            let _ = writeln!(
                self.out,
                "<tr><td colspan={columns} class=more>and {} more</td></tr>",
                total - self.rows
            );
        }
        self.out.push_str("</table>\n");
    }
}

/// `text`, escaped, as a new string (for a table cell).
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_html(text, &mut out);
    out
}

/// "3 d 04:05:06" or "04:05:06".
fn uptime(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d} d {h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// The instance port of a room, or a dash before it is bound.
fn port(room: &RoomView) -> String {
    room.port.map_or_else(|| "-".to_owned(), |p| p.to_string())
}

/// Writes the whole status page of `snap`.
pub fn render_status_page(snap: &Snapshot, out: &mut String) {
    out.push_str(
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>\
         <meta http-equiv=refresh content=5><title>lobbyd status</title><style>\
         body{font:14px system-ui,sans-serif;margin:1em 2em;color:#222}\
         table{border-collapse:collapse;margin-bottom:1em}\
         th,td{border:1px solid #ccc;padding:2px 8px;text-align:left}\
         th{background:#eee}td.more{font-style:italic}.zero{color:#999}\
         figure{display:inline-block;margin:0 1.5em 1em 0}figcaption{font-size:12px}\
         </style></head><body>\n",
    );
    let _ = write!(
        out,
        "<h1>lobbyd {}</h1>\n<p>up {} &middot; <a href=\"/metrics\">/metrics</a> &middot; \
         <a href=\"/rooms\">/rooms</a>",
        env!("CARGO_PKG_VERSION"),
        uptime(snap.uptime.as_secs())
    );
    if snap.wz.is_some() {
        out.push_str(" &middot; <a href=\"/wz/games\">/wz/games</a>");
    }
    out.push_str(" &middot; this page reloads every 5 s</p>\n");
    listeners(snap, out);
    directory(snap, out);
    let running = [
        true,
        snap.tcp_connections.is_some(),
        snap.wz.is_some(),
        snap.general.is_some(),
    ];
    render_charts(&snap.history, running, out);
    udp_rooms(snap, out);
    parties(snap, out);
    wz_games(snap, out);
    general(snap, out);
    refusals(snap, out);
    out.push_str("</body></html>\n");
}

fn listeners(snap: &Snapshot, out: &mut String) {
    let columns = ["what", "transport", "address"];
    let mut table = Table::open(out, "Listeners", snap.listeners.len(), &columns);
    for l in snap.listeners.iter().take(STATUS_ROWS) {
        table.row(&[l.name, l.transport, &escaped(&l.address)]);
    }
    table.close(snap.listeners.len(), columns.len());
}

/// One line on the room directory, when this node is one of a group.
fn directory(snap: &Snapshot, out: &mut String) {
    let Some(d) = &snap.directory else {
        return;
    };
    let _ = writeln!(
        out,
        "<h2>Directory</h2>\n<p>node {} on {}: <b>{}</b> &middot; {} other nodes, {} of their \
         rooms listed &middot; last read {} ms ago</p>",
        d.node,
        escaped(&d.address),
        d.state,
        d.remote_nodes,
        d.remote_rooms,
        d.sync_age_ms
    );
    if snap.directory_nodes.is_empty() {
        return;
    }
    let columns = ["node", "rooms", "games", "last read"];
    let total = snap.directory_nodes.len();
    let mut table = Table::open(out, "Other nodes", total, &columns);
    for n in &snap.directory_nodes {
        let cells = [
            n.node.to_string(),
            n.rooms.to_string(),
            n.games.to_string(),
            format!("{} ms ago", n.age_ms),
        ];
        table.row(&[&cells[0], &cells[1], &cells[2], &cells[3]]);
    }
    table.close(total, columns.len());
}

fn udp_rooms(snap: &Snapshot, out: &mut String) {
    let rooms = || snap.rooms.iter().filter(|r| r.kind == "udp");
    let total = rooms().count();
    let columns = [
        "room",
        "state",
        "instance port",
        "players",
        "seats reserved",
    ];
    let mut table = Table::open(out, "UDP rooms", total, &columns);
    for room in rooms().take(STATUS_ROWS) {
        table.row(&[
            &room.room.0.to_string(),
            state_name(room.state),
            &port(room),
            &format!("{} / {}", room.members, room.max_players),
            &room.reservations.to_string(),
        ]);
    }
    table.close(total, columns.len());
}

fn parties(snap: &Snapshot, out: &mut String) {
    let parties = || snap.rooms.iter().filter(|r| r.kind == "party");
    let total = parties().count();
    let columns = ["party", "state", "instance port", "players", "names"];
    let mut table = Table::open(out, "TCP lobby parties", total, &columns);
    for party in parties().take(STATUS_ROWS) {
        let mut names = String::new();
        for (i, name) in party.players.iter().enumerate() {
            if i > 0 {
                names.push_str(", ");
            }
            escape_html(name, &mut names);
        }
        table.row(&[
            &party.room.0.to_string(),
            state_name(party.state),
            &port(party),
            &format!("{} / {}", party.members, party.max_players),
            &names,
        ]);
    }
    table.close(total, columns.len());
}

fn wz_games(snap: &Snapshot, out: &mut String) {
    let Some(wz) = &snap.wz else {
        return;
    };
    let columns = ["id", "name", "host", "version", "players", "state", "age"];
    let title = format!(
        "Warzone games, {} connections, {} probes running",
        wz.connections, wz.probes
    );
    let mut table = Table::open(out, &title, wz.games.len(), &columns);
    for game in wz.games.iter().take(STATUS_ROWS) {
        table.row(&[
            &game.game_id.to_string(),
            &escaped(&game.name),
            &game.host.to_string(),
            &escaped(&game.version),
            &format!("{} / {}", game.players.0, game.players.1),
            if game.listed { "listed" } else { "probing" },
            &format!("{} s", game.age_secs),
        ]);
    }
    table.close(wz.games.len(), columns.len());
}

/// The general lobby's game flags in words.
fn game_flags(flags: u32) -> String {
    let words: Vec<&str> = [
        (1, "locked"),
        (2, "closed"),
        (4, "in progress"),
        (8, "hosted"),
    ]
    .into_iter()
    .filter(|(bit, _)| flags & bit != 0)
    .map(|(_, word)| word)
    .collect();
    if words.is_empty() {
        "open".to_owned()
    } else {
        words.join(", ")
    }
}

fn general(snap: &Snapshot, out: &mut String) {
    let Some(general) = &snap.general else {
        return;
    };
    let columns = ["id", "username", "display name", "state", "games"];
    let present = general.members - general.members_away;
    let title = format!(
        "General lobby members, {} on TCP, {} on WebSocket, {} away, {} connections",
        present.saturating_sub(general.ws_members),
        general.ws_members,
        general.members_away,
        general.connections
    );
    let mut table = Table::open(out, &title, general.members, &columns);
    for m in general.member_list.iter().take(STATUS_ROWS) {
        table.row(&[
            &m.id.to_string(),
            &escaped(&m.username),
            &escaped(&m.display_name),
            if m.away { "away" } else { "present" },
            &m.games.to_string(),
        ]);
    }
    table.close(general.members, columns.len());

    let columns = ["id", "name", "type", "owner", "players", "flags"];
    let mut table = Table::open(out, "General lobby games", general.games.len(), &columns);
    for game in general.games.iter().take(STATUS_ROWS) {
        let owner = match game.owner {
            0 => "the server".to_owned(),
            id => format!("member {id}"),
        };
        table.row(&[
            &game.id.to_string(),
            &escaped(&game.name),
            &escaped(&game.game_type),
            &owner,
            &format!("{} / {}", game.players, game.max_players),
            &game_flags(game.flags),
        ]);
    }
    table.close(general.games.len(), columns.len());
}

fn refusals(snap: &Snapshot, out: &mut String) {
    let mut counters: Vec<(&'static str, &'static str, u64)> = Vec::new();
    snap.lobby
        .visit(&mut |name, label, value| counters.push((name, label, value)));
    counters.extend(snap.counters.iter().copied());
    counters.retain(|(name, _, _)| REFUSALS.iter().any(|part| name.contains(part)));
    out.push_str("<h2>Refusals <small>(from /metrics, since start)</small></h2>\n");
    for (prefix, title) in PROTOCOLS {
        let mine: Vec<_> = counters
            .iter()
            .filter(|(name, _, _)| name.starts_with(prefix))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let total: u64 = mine.iter().map(|c| c.2).sum();
        let _ = write!(
            out,
            "<h3>{title} <small>({total})</small></h3>\n<table><tr><th>counter</th>\
             <th>reason</th><th>count</th></tr>\n"
        );
        for (name, label, value) in mine {
            let class = if *value == 0 { " class=zero" } else { "" };
            let _ = writeln!(
                out,
                "<tr{class}><td>lobbyd_{name}</td><td>{label}</td><td>{value}</td></tr>"
            );
        }
        out.push_str("</table>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::LoadSample;
    use crate::metrics::{
        DirectoryView, GeneralGameInfo, GeneralMemberInfo, GeneralSnapshot, ListenerView,
        WzGameInfo, WzSnapshot,
    };
    use crate::rtype::{JoinFailure, RoomId, RoomState};
    use std::time::Duration;

    const EVIL: &str = "<script>&\"'";
    const EVIL_ESCAPED: &str = "&lt;script&gt;&amp;&quot;&#39;";

    #[test]
    fn escaping_turns_markup_into_text() {
        let mut out = String::new();
        escape_html("<script>alert(1)</script>", &mut out);
        assert_eq!(out, "&lt;script&gt;alert(1)&lt;/script&gt;");
        assert_eq!(escaped(EVIL), EVIL_ESCAPED);
        assert_eq!(escaped("plain é"), "plain é");
    }

    fn room(id: u32, kind: &'static str, players: Vec<String>) -> RoomView {
        RoomView {
            room: RoomId(id),
            kind,
            state: RoomState::Waiting,
            port: Some(4300),
            members: players.len(),
            reservations: 0,
            max_players: 4,
            players,
        }
    }

    fn snapshot() -> Snapshot {
        let mut snap = Snapshot {
            uptime: Duration::from_secs(90_061),
            history: vec![
                LoadSample {
                    at_ms: 0,
                    members: 3,
                    ..LoadSample::default()
                },
                LoadSample {
                    at_ms: 10_000,
                    requests: [20, 0, 0, 0],
                    members: 6,
                    ..LoadSample::default()
                },
            ],
            listeners: vec![ListenerView {
                name: "UDP room lobby",
                transport: "udp",
                address: "127.0.0.1:4242".into(),
            }],
            rooms: vec![room(1, "udp", vec![]), room(2, "party", vec![EVIL.into()])],
            counters: vec![
                ("tcp_lobby_refused_total", "conn_rate", 3),
                ("tcp_lobby_bytes_in_total", "", 99),
            ],
            wz: Some(WzSnapshot {
                games: vec![WzGameInfo {
                    game_id: 5,
                    protocol: "legacy",
                    host: "127.0.0.1:2100".parse().unwrap(),
                    listed: true,
                    name: EVIL.into(),
                    version: "4.3.3".into(),
                    players: (1, 4),
                    age_secs: 3,
                }],
                connections: 1,
                probes: 0,
                buffered_bytes: 0,
            }),
            general: Some(GeneralSnapshot {
                members: 1,
                member_list: vec![GeneralMemberInfo {
                    id: 1,
                    username: "alice".into(),
                    display_name: EVIL.into(),
                    away: false,
                    games: 1,
                }],
                members_away: 0,
                connections: 1,
                ws_connections: 0,
                ws_members: 0,
                buffered_bytes: 0,
                buffered_peak: 0,
                games: vec![GeneralGameInfo {
                    id: 1,
                    owner: 1,
                    name: EVIL.into(),
                    game_type: "chess".into(),
                    flags: 1 | 4,
                    players: 1,
                    max_players: 2,
                }],
            }),
            directory: Some(DirectoryView {
                node: 2,
                address: "redis://127.0.0.1:6379".into(),
                state: "up",
                remote_nodes: 1,
                remote_rooms: 3,
                sync_age_ms: 250,
            }),
            ..Snapshot::default()
        };
        snap.add_directory_node(7, 3, 0, 250);
        snap.add_directory_node(7, 0, 2, 240);
        snap.lobby.join_failed(JoinFailure::Full);
        snap
    }

    #[test]
    fn the_page_shows_every_part_and_escapes_every_name() {
        let mut page = String::new();
        render_status_page(&snapshot(), &mut page);
        assert!(page.starts_with("<!doctype html>"));
        assert!(page.contains("<meta http-equiv=refresh content=5>"));
        assert!(page.contains(concat!("lobbyd ", env!("CARGO_PKG_VERSION"))));
        assert!(page.contains("up 1 d 01:01:01"), "{page}");
        // The charts, drawn from the samples: members 3 then 6, 2 requests/s.
        assert_eq!(page.matches("<svg ").count(), 4, "{page}");
        assert!(
            page.contains("class=\"members\" fill=\"none\" stroke=\"#1f6feb\" points=\"267.0,30.0 270.0,1.0\"/>"),
            "{page}"
        );
        assert!(page.contains("UDP room lobby 2</span>"), "{page}");
        for link in ["/metrics", "/rooms", "/wz/games"] {
            assert!(page.contains(&format!("<a href=\"{link}\">")), "{link}");
        }
        assert!(page.contains("<td>127.0.0.1:4242</td>"));
        assert!(
            page.contains(
                "<p>node 2 on redis://127.0.0.1:6379: <b>up</b> &middot; 1 other nodes, 3 of \
                 their rooms listed &middot; last read 250 ms ago</p>"
            ),
            "{page}"
        );
        // Node 7's rooms and games, from two front ends, in one row.
        assert!(
            page.contains("<h2>Other nodes <small>(1)</small>"),
            "{page}"
        );
        assert!(
            page.contains("<tr><td>7</td><td>3</td><td>2</td><td>250 ms ago</td></tr>"),
            "{page}"
        );
        assert!(page.contains("<h2>UDP rooms <small>(1)</small>"));
        assert!(page.contains("<h2>TCP lobby parties <small>(1)</small>"));
        assert!(page.contains("<td>locked, in progress</td>"));
        // Four player-chosen names, all escaped, none raw.
        assert_eq!(page.matches(EVIL_ESCAPED).count(), 4, "{page}");
        assert!(!page.contains("<script>"));
        // Refusals by protocol: the core's JOIN_FAILED and the TCP lobby's refusals, not its
        // byte counts.
        assert!(
            page.contains("<h3>UDP room lobby <small>(1)</small>"),
            "{page}"
        );
        assert!(
            page.contains("<td>lobbyd_tcp_lobby_refused_total</td><td>conn_rate</td><td>3</td>")
        );
        assert!(!page.contains("bytes_in"));
    }

    #[test]
    fn long_tables_stop_at_the_row_cap() {
        let snap = Snapshot {
            rooms: (1..=STATUS_ROWS as u32 + 7)
                .map(|id| room(id, "udp", vec![]))
                .collect(),
            ..Snapshot::default()
        };
        let mut page = String::new();
        render_status_page(&snap, &mut page);
        assert!(page.contains("and 7 more"), "{page}");
        assert_eq!(page.matches("<td>waiting</td>").count(), STATUS_ROWS);
        // No Warzone or general lobby on this server: no such sections, no /wz/games link.
        assert!(!page.contains("Warzone") && !page.contains("General lobby"));
        assert!(page.contains("<h2>TCP lobby parties <small>(0)</small></h2>"));
        assert!(page.contains(">none</td>"));
    }
}
