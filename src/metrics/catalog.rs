//! Every metric `/metrics` serves, with its type, its label's name and its help text: the one
//! place a metric is described.
//!
//! The front ends report counters as `(name, label value, value)` triples and know nothing of
//! the exposition format; the renderer looks each name up here for its `# HELP` line, its
//! `# TYPE` and the name of its label. `docs/METRICS.md` is this table as a page (a unit test
//! keeps the two equal), and an integration test scrapes a server with every front end on
//! and fails on any metric missing from it, so a new counter cannot ship undescribed.
//!
//! Label names say what the label holds: `reason` only for why something was refused,
//! dropped or closed; `request`, `command`, `method` for request kinds; `verdict`,
//! `outcome`, `status` for results; `state`, `owner` for what a gauge splits by.

/// Whether a metric only goes up or can go down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// Only goes up (from 0 at start).
    Counter,
    /// A value now.
    Gauge,
}

impl MetricKind {
    /// The word of the `# TYPE` line.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
        }
    }
}

/// One metric's description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricInfo {
    /// The full exposition name (`lobbyd_...` or `process_...`).
    pub name: &'static str,
    /// Counter or gauge.
    pub kind: MetricKind,
    /// The name of its one label, or `""` when it has none.
    pub label: &'static str,
    /// The `# HELP` text (one line, no backslash).
    pub help: &'static str,
}

const fn counter(name: &'static str, label: &'static str, help: &'static str) -> MetricInfo {
    MetricInfo {
        name,
        kind: MetricKind::Counter,
        label,
        help,
    }
}

const fn gauge(name: &'static str, label: &'static str, help: &'static str) -> MetricInfo {
    MetricInfo {
        name,
        kind: MetricKind::Gauge,
        label,
        help,
    }
}

/// The description of the metric `name`, given with or without its `lobbyd_` prefix.
pub fn metric_info(name: &str) -> Option<&'static MetricInfo> {
    METRICS
        .iter()
        .find(|m| m.name == name || m.name.strip_prefix("lobbyd_") == Some(name))
}

/// Every metric, in the order of `docs/METRICS.md` (by front end).
pub const METRICS: &[MetricInfo] = &[
    // The process and the loop.
    gauge("lobbyd_build_info", "version", "Always 1; the label is the lobbyd version."),
    gauge("lobbyd_uptime_seconds", "", "Seconds since the server started."),
    counter("lobbyd_loop_passes_total", "duration", "Passes of the event loop, by how long the pass took (under_1ms, 1ms_to_5ms, over_5ms)."),
    gauge("process_resident_memory_bytes", "", "Resident memory of the process, in bytes."),
    gauge("process_open_fds", "", "File descriptors the process has open."),
    gauge("process_max_fds", "", "The process's limit on open file descriptors (soft RLIMIT_NOFILE)."),
    counter("process_cpu_seconds_total", "", "CPU time the process has used, user plus system, in seconds."),
    gauge("process_start_time_seconds", "", "When the process started, in seconds since the Unix epoch."),
    counter("lobbyd_metrics_http_accepted_total", "", "Metrics connections accepted and served."),
    counter("lobbyd_metrics_http_refused_total", "reason", "Metrics connections closed at accept, by reason (per_ip, conn_rate, full)."),
    counter("lobbyd_metrics_http_evicted_total", "", "Metrics connections still sending their request closed at the endpoint's cap for a newcomer."),
    counter("lobbyd_metrics_http_accept_errors_total", "", "Accept errors on the metrics endpoint (accepting resumes after a back-off)."),
    counter("lobbyd_descriptor_limit_refused_total", "", "Newcomers accepted with a listener's spare descriptor at the descriptor limit and closed at once (the metrics endpoint serves them)."),
    // UDP room lobby and game instances.
    counter("lobbyd_udp_lobby_requests_total", "request", "UDP room lobby requests served, by request (list_rooms, create_room, join_room)."),
    counter("lobbyd_udp_lobby_rate_limited_total", "", "UDP room lobby requests dropped by the per-address request budget (--udp-rate)."),
    counter("lobbyd_udp_lobby_reply_budget_exceeded_total", "", "UDP room lobby replies not sent because the address's reply-bytes budget was spent (--udp-reply-bytes)."),
    counter("lobbyd_udp_lobby_join_failed_total", "reason", "JOIN_FAILED replies, by reason."),
    counter("lobbyd_udp_lobby_dropped_total", "reason", "UDP room lobby datagrams dropped as malformed, by reason."),
    counter("lobbyd_udp_lobby_datagrams_in_total", "", "Datagrams received on the UDP room lobby socket."),
    counter("lobbyd_udp_upstream_datagrams_in_total", "", "Datagrams on the UDP room lobby socket in the upstream R-Type dialect (they open with a3 5f c8 1d)."),
    counter("lobbyd_udp_upstream_dropped_total", "reason", "Upstream-dialect UDP lobby datagrams dropped as malformed, by reason (bad_checksum, compressed, ...)."),
    counter("lobbyd_udp_upstream_unserved_total", "family", "Well-formed upstream-dialect datagrams lobbyd does not serve, dropped unanswered, by message family (auth, chat, leaderboard, room, game, ...)."),
    counter("lobbyd_rooms_created_total", "", "Rooms created (their game instance bound)."),
    counter("lobbyd_rooms_reaped_total", "", "Rooms removed after their grace period."),
    counter("lobbyd_instance_welcomes_total", "", "Game instance HELLOs answered with WELCOME (repeats included)."),
    counter("lobbyd_instance_rejects_total", "reason", "Game instance HELLOs answered with REJECT, by reason."),
    counter("lobbyd_instance_data_forwarded_total", "", "Game instance DATA datagrams forwarded (one per destination)."),
    counter("lobbyd_instance_ignored_total", "reason", "Well-formed game instance datagrams ignored, by reason."),
    counter("lobbyd_instance_dropped_total", "reason", "Game instance datagrams dropped as malformed, by reason."),
    counter("lobbyd_instance_idle_removed_total", "", "Game instance members removed for silence (--idle-timeout)."),
    counter("lobbyd_instance_leaves_total", "", "Game instance members that sent LEAVE."),
    counter("lobbyd_instance_datagrams_in_total", "", "Datagrams received on game instance sockets."),
    counter("lobbyd_seat_reservations_expired_total", "", "Seat reservations that expired unused (--seat-timeout)."),
    counter("lobbyd_games_started_total", "", "UDP room countdowns that reached STARTED."),
    counter("lobbyd_udp_bytes_in_total", "", "Bytes received on every UDP socket (room lobby and instances)."),
    counter("lobbyd_udp_datagrams_out_total", "", "Datagrams sent on every UDP socket."),
    counter("lobbyd_udp_bytes_out_total", "", "Bytes sent on every UDP socket."),
    counter("lobbyd_udp_send_would_block_total", "", "UDP sends dropped because the socket buffer was full."),
    counter("lobbyd_udp_send_errors_total", "", "UDP sends that failed with an error other than a full buffer."),
    counter("lobbyd_udp_recv_errors_total", "", "UDP receive errors."),
    counter("lobbyd_instances_bound_total", "", "Game instance sockets bound."),
    counter("lobbyd_instance_bind_failures_total", "", "Game instance binds that failed on every port tried."),
    gauge("lobbyd_rooms", "state", "R-Type rooms and TCP lobby parties now, by state."),
    gauge("lobbyd_players", "", "Members of R-Type rooms and parties now."),
    gauge("lobbyd_seat_reservations", "", "Live seat reservations now."),
    counter("lobbyd_game_servers_spawned_total", "", "Game servers started for rooms and parties (--instance-exec)."),
    counter("lobbyd_game_servers_exited_total", "outcome", "Game servers that ended, by outcome (exited: status 0 by itself; failed: other status or a signal lobbyd did not send; stopped: after lobbyd's SIGTERM; killed: SIGKILL after --instance-stop-grace)."),
    counter("lobbyd_game_server_spawn_failures_total", "reason", "Rooms and parties refused because their game server could not start, by reason (no_port, spawn, watch)."),
    counter("lobbyd_game_server_log_lines_total", "", "Lines of game server output logged."),
    counter("lobbyd_game_server_log_lines_dropped_total", "", "Lines of game server output over the log budget, not logged."),
    gauge("lobbyd_game_servers_running", "", "Game servers running now (--instance-exec)."),
    gauge("lobbyd_open_instances", "", "Game instances open now: relay sockets, or game servers with --instance-exec."),
    gauge("lobbyd_instance_ports_in_use", "", "Game instance ports held now."),
    gauge("lobbyd_rate_table_entries", "", "Source addresses the UDP room lobby's rate limiter tracks now."),
    // R-Type TCP lobby.
    counter("lobbyd_tcp_lobby_accepted_total", "", "TCP lobby connections accepted."),
    counter("lobbyd_tcp_lobby_refused_total", "reason", "TCP lobby connections closed at accept, by reason (conn_rate, max_conns_per_ip)."),
    counter("lobbyd_tcp_lobby_accept_paused_total", "", "Times the TCP lobby stopped accepting at --max-conns."),
    counter("lobbyd_tcp_lobby_accept_errors_total", "", "TCP lobby accept() errors."),
    counter("lobbyd_tcp_lobby_dropped_total", "reason", "TCP lobby connections the driver dropped, by reason."),
    counter("lobbyd_tcp_lobby_bytes_in_total", "", "Bytes read from TCP lobby connections."),
    counter("lobbyd_tcp_lobby_bytes_out_total", "", "Bytes written to TCP lobby connections."),
    counter("lobbyd_tcp_lobby_frames_out_total", "", "Frames queued to TCP lobby connections."),
    counter("lobbyd_tcp_lobby_frames_in_total", "", "Frames (and oversized headers) read from TCP lobby connections."),
    counter("lobbyd_tcp_lobby_admitted_total", "", "TCP lobby connections handed to the lobby."),
    counter("lobbyd_tcp_lobby_connected_total", "", "CONNECT_ACKs sent."),
    counter("lobbyd_tcp_lobby_parties_opened_total", "", "TCP lobby parties opened."),
    counter("lobbyd_tcp_lobby_countdowns_total", "", "TCP lobby countdowns started."),
    counter("lobbyd_tcp_lobby_countdowns_cancelled_total", "", "TCP lobby countdowns cancelled because too few members remained."),
    counter("lobbyd_tcp_lobby_games_started_total", "", "GAME_STARTs (one per party)."),
    counter("lobbyd_tcp_lobby_errors_sent_total", "error", "ERROR_MSGs sent, by error."),
    counter("lobbyd_tcp_lobby_violations_total", "reason", "TCP lobby protocol violations, by reason."),
    counter("lobbyd_tcp_lobby_closed_total", "reason", "TCP lobby connections closed, by reason."),
    counter("lobbyd_tcp_lobby_unknown_tokens_total", "", "Game instance HELLOs refused because their token named no expected player."),
    counter("lobbyd_tcp_lobby_upstream_conns_total", "", "TCP lobby connections whose first bytes were the upstream R-Type client's dialect."),
    counter("lobbyd_tcp_lobby_upstream_rooms_created_total", "", "Rooms created by upstream-dialect clients (CREATE_ROOM_REQ)."),
    counter("lobbyd_tcp_lobby_upstream_refused_total", "reason", "Upstream-dialect requests refused, by reason (create_refused, room_full, room_not_found, room_in_game, connect_refused, start_refused, game_started)."),
    counter("lobbyd_tcp_lobby_upstream_foreign_ready_total", "", "Upstream-dialect READY_REQs ignored because their hash was not the sender's."),
    gauge("lobbyd_tcp_lobby_connections", "", "TCP lobby connections open now, joined or not."),
    gauge("lobbyd_tcp_lobby_buffered_bytes", "", "Bytes TCP lobby send queues hold now, against --tcp-memory-budget."),
    // The room directory of a group of nodes (--directory).
    gauge("lobbyd_directory_up", "", "1 while this node is connected to the room directory (--directory) and holds its node id, else 0."),
    gauge("lobbyd_directory_node_refused", "", "1 when another live process held this --node-id at start: this node serves its rooms alone."),
    gauge("lobbyd_directory_last_sync_age_ms", "", "Milliseconds since the other nodes' rooms were last read from the directory (since start before the first read)."),
    gauge("lobbyd_directory_remote_rooms", "", "Other nodes' rooms this node lists now (after its own)."),
    gauge("lobbyd_directory_remote_nodes", "", "Other nodes with a live room table in the directory now."),
    counter("lobbyd_directory_cmd_dropped_total", "", "Room-table updates (sent again at the next change or pass), asks and answers dropped because the directory thread's queue was full."),
    counter("lobbyd_directory_down_total", "", "Times the directory went down (Redis unreachable, failing or too slow)."),
    counter("lobbyd_directory_bad_tables_total", "", "Other nodes' room tables read from the directory that did not parse (or named another node), skipped."),
    counter("lobbyd_directory_reads_total", "", "Reads of the other nodes' room tables."),
    counter("lobbyd_directory_remote_joins_total", "outcome", "JOIN_ROOMs of other nodes' rooms asked of their owner (asked), and the owners' answers received in time (granted, refused)."),
    counter("lobbyd_directory_rpc_timeouts_total", "", "Asks of another node's room with no answer within 250 ms: the client got JOIN_FAILED."),
    counter("lobbyd_directory_late_answers_total", "", "Owners' answers that came after their ask timed out (or named no ask), dropped."),
    counter("lobbyd_directory_remote_joins_refused_at_once_total", "reason", "JOIN_ROOMs of other nodes' rooms refused without asking, by reason (directory_down, too_many_pending, queue_full)."),
    counter("lobbyd_directory_asks_served_total", "", "Other nodes' asks this node decided as the owner of the room."),
    counter("lobbyd_directory_stale_asks_total", "", "Asks in this node's inbox older than 250 ms by the Redis server's clock (a node resumed after a stall), dropped unanswered."),
    counter("lobbyd_directory_bad_inbox_entries_total", "", "Entries of this node's inbox that did not parse, dropped."),
    gauge("lobbyd_directory_remote_games", "", "Other nodes' Warzone games this node lists now (after its own; served with the Warzone master server)."),
    counter("lobbyd_directory_games_dropped_total", "", "Warzone game-table updates dropped because the directory thread's queue was full (sent again at the next pass)."),
    counter("lobbyd_directory_bad_game_tables_total", "", "Other nodes' Warzone game tables read from the directory that did not parse (or named another node), skipped."),
    // Warzone 2100 master server.
    counter("lobbyd_wz_connections_opened_total", "", "Warzone connections opened."),
    counter("lobbyd_wz_connections_over_limit_total", "", "Warzone connections beyond --wz-max-conns-per-ip (refused at addg)."),
    counter("lobbyd_wz_commands_total", "command", "Warzone legacy commands received, by command."),
    counter("lobbyd_wz_games_listed_total", "", "Warzone games listed (every check and the probe passed)."),
    counter("lobbyd_wz_updates_total", "", "GAMESTRUCT updates applied to listed Warzone games."),
    counter("lobbyd_wz_refused_total", "reason", "Warzone hosts refused, by reason."),
    counter("lobbyd_wz_protocol_errors_total", "reason", "Warzone connections closed for a protocol error, by reason."),
    counter("lobbyd_wz_probes_started_total", "", "Warzone reachability probes started."),
    counter("lobbyd_wz_probe_outcomes_total", "outcome", "Warzone reachability probes ended, by outcome."),
    counter("lobbyd_wz_stale_probe_results_total", "", "Warzone probe results for probes no longer awaited."),
    counter("lobbyd_wz_games_removed_total", "reason", "Warzone games removed from the list, by reason."),
    counter("lobbyd_wz_list_replies_total", "", "Warzone list replies sent."),
    counter("lobbyd_wz_v4_connections_total", "", "Warzone connections that completed the v4 handshake."),
    counter("lobbyd_wz_v4_requests_total", "method", "Warzone v4 requests decoded, by method."),
    counter("lobbyd_wz_v4_decode_errors_total", "reason", "Warzone v4 frames that did not decode, by reason."),
    counter("lobbyd_wz_v4_responses_total", "status", "Warzone v4 responses sent, by status."),
    counter("lobbyd_wz_accepted_total", "", "Warzone connections accepted."),
    counter("lobbyd_wz_accept_pauses_total", "", "Times the Warzone listener stopped accepting at --wz-max-conns (or after an accept error)."),
    counter("lobbyd_wz_evicted_total", "", "Unsettled Warzone connections closed at --wz-max-conns to make room for a newcomer."),
    counter("lobbyd_wz_send_overflow_total", "", "Warzone connections dropped because their send queue passed its cap."),
    counter("lobbyd_wz_memory_budget_drops_total", "", "Warzone connections dropped, the one holding the most, because --wz-memory-budget was full."),
    counter("lobbyd_wz_io_errors_total", "", "Warzone connections that ended with a read or write error."),
    counter("lobbyd_wz_bytes_in_total", "", "Bytes read from Warzone connections."),
    counter("lobbyd_wz_bytes_out_total", "", "Bytes written to Warzone connections."),
    counter("lobbyd_wz_reload_failures_total", "", "MOTD or banned-words reloads that failed (the old values stay)."),
    counter("lobbyd_wz_linger_timeouts_total", "", "Warzone connections closed with replies still queued after the linger wait."),
    counter("lobbyd_wz_login_checks_total", "verdict", "Warzone v4 password checks run, by verdict (valid, invalid, busy)."),
    counter("lobbyd_wz_login_refused_total", "reason", "Warzone v4 password checks answered busy without running, by reason."),
    gauge("lobbyd_wz_games", "state", "Warzone games now, by state (listed, probing)."),
    gauge("lobbyd_wz_connections", "", "Warzone connections open now."),
    gauge("lobbyd_wz_probes", "", "Warzone reachability probes in flight now."),
    gauge("lobbyd_wz_buffered_bytes", "", "Bytes Warzone send queues and read buffers hold now, against --wz-memory-budget."),
    // General lobby.
    counter("lobbyd_general_connections_opened_total", "", "General lobby connections opened."),
    counter("lobbyd_general_closed_total", "reason", "General lobby connections the lobby closed, by reason."),
    counter("lobbyd_general_requests_total", "request", "Well-formed general lobby requests, by request."),
    counter("lobbyd_general_malformed_total", "reason", "Malformed general lobby frames, by reason."),
    counter("lobbyd_general_refusals_total", "reason", "General lobby requests refused with ERROR, by the error's code."),
    counter("lobbyd_general_sign_ins_total", "", "General lobby members welcomed."),
    counter("lobbyd_general_resumes_total", "", "General lobby members resumed with a token."),
    counter("lobbyd_general_takeovers_total", "", "General lobby members taken over by a sign-in with their account's password (the old connection closed)."),
    counter("lobbyd_general_verify_busy_total", "", "SIGN_INs answered try-again because the password check was busy."),
    counter("lobbyd_general_stale_verify_results_total", "", "Password check results for connections gone or no longer waiting."),
    counter("lobbyd_general_members_left_total", "reason", "General lobby members who left, by reason."),
    counter("lobbyd_general_games_created_total", "", "General lobby games created by members."),
    counter("lobbyd_general_hosted_opened_total", "", "Server-hosted general lobby games opened."),
    counter("lobbyd_general_games_closed_total", "", "General lobby games closed."),
    counter("lobbyd_general_asks_total", "", "JOIN_ASKs sent to game owners (re-sends not counted)."),
    counter("lobbyd_general_asks_expired_total", "", "JOIN_ASKs that expired unanswered."),
    counter("lobbyd_general_joins_total", "", "Players who joined a general lobby game."),
    counter("lobbyd_general_chat_lines_total", "", "Chat lines accepted (lobby, game and private)."),
    counter("lobbyd_general_chat_refused_total", "reason", "General lobby chat lines refused with ERROR 10, by the limit (member_rate, ip_rate, lobby_budget)."),
    counter("lobbyd_general_slow_modes_total", "", "Times the general lobby's chat went into slow mode (its fan-out budget spent)."),
    counter("lobbyd_general_games_refused_per_ip_total", "reason", "General lobby games or game data refused because the creator's address held its share, by reason (games, data)."),
    counter("lobbyd_general_relayed_total", "", "Relay messages accepted (TO_OWNER, TO_ALL, TO_PLAYER)."),
    counter("lobbyd_general_sends_total", "", "Send records handed to the driver (a frame, or a run of frames for one connection)."),
    counter("lobbyd_general_bytes_encoded_total", "", "Bytes encoded into the output arena (each frame once, however many receive it)."),
    counter("lobbyd_general_output_budget_stops_total", "", "Times the lobby's timers stopped early to let the driver drain the output queue."),
    counter("lobbyd_general_accepted_total", "", "General lobby connections accepted."),
    counter("lobbyd_general_refused_total", "reason", "General lobby connections refused at accept, by reason (conn_rate, max_conns_per_ip)."),
    counter("lobbyd_general_accept_pauses_total", "", "Times the general lobby stopped accepting at --lobby-max-conns (or after an accept error)."),
    counter("lobbyd_general_dropped_total", "reason", "General lobby connections the driver dropped, by reason."),
    counter("lobbyd_general_bytes_in_total", "", "Bytes read from general lobby connections."),
    counter("lobbyd_general_bytes_out_total", "", "Bytes written to general lobby connections."),
    counter("lobbyd_general_frames_in_total", "", "Frames handed to the general lobby."),
    counter("lobbyd_general_ws_accepted_total", "", "Connections accepted on the general lobby's WebSocket port."),
    counter("lobbyd_general_ws_upgrades_total", "", "Connections upgraded to WebSocket on /lobby (101 sent, opened in the lobby)."),
    counter("lobbyd_general_ws_refused_total", "reason", "Requests on the WebSocket port answered with an error status before an upgrade, by reason (bad_request, malformed, too_long, too_many_headers: 400; forbidden_origin: 403; not_found: 404; method_not_allowed: 405; upgrade_required: 426)."),
    counter("lobbyd_general_ws_files_total", "", "Static files of --lobby-web served on the WebSocket port (200)."),
    counter("lobbyd_general_ws_closed_total", "reason", "WebSocket connections closed by the transport, by reason (the close code's cause: unmasked, reserved_bits, reserved_opcode, bad_control, bad_length, continuation, bad_close: 1002; text: 1003; not_one_frame: 1007; too_big: 1009; peer_close; upgrade_timeout)."),
    counter("lobbyd_general_ws_pings_total", "", "WebSocket pings answered with a pong."),
    counter("lobbyd_general_login_checks_total", "verdict", "General lobby password checks run, by verdict (valid, invalid, busy)."),
    counter("lobbyd_general_login_refused_total", "reason", "General lobby password checks answered busy without running, by reason."),
    gauge("lobbyd_general_members", "state", "General lobby members now, by state (present, away within their resume grace)."),
    gauge("lobbyd_general_games", "owner", "General lobby games now, by owner (member, server)."),
    gauge("lobbyd_general_connections", "", "General lobby connections open now, signed in or not."),
    gauge("lobbyd_general_ws_connections", "", "Of those, upgraded WebSocket connections."),
    gauge("lobbyd_general_members_by_transport", "transport", "General lobby members present now, by transport (tcp, websocket)."),
    gauge("lobbyd_general_buffered_bytes", "", "Bytes general lobby send queues and partial frames hold now, against --lobby-memory-budget."),
    gauge("lobbyd_general_buffered_peak_bytes", "", "Most bytes general lobby send queues and partial frames held at once since start (at most --lobby-memory-budget)."),
];

/// `docs/METRICS.md`'s table rows, one per metric.
pub fn reference_rows() -> impl Iterator<Item = String> {
    METRICS.iter().map(|m| {
        let label = if m.label.is_empty() {
            String::new()
        } else {
            format!("`{}`", m.label)
        };
        format!(
            "| `{}` | {} | {label} | {} |",
            m.name,
            m.kind.as_str(),
            m.help
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_help_is_one_plain_line() {
        let mut names = std::collections::HashSet::new();
        for m in METRICS {
            assert!(names.insert(m.name), "{} twice", m.name);
            assert!(
                !m.help.is_empty() && !m.help.contains(['\n', '\\']),
                "{}",
                m.name
            );
            assert_eq!(
                m.kind == MetricKind::Counter,
                m.name.ends_with("_total"),
                "{}: counters and only counters end in _total",
                m.name
            );
        }
    }

    #[test]
    fn lookup_with_and_without_prefix() {
        assert_eq!(
            metric_info("udp_lobby_requests_total").map(|m| m.label),
            Some("request")
        );
        assert_eq!(
            metric_info("process_open_fds").map(|m| m.kind),
            Some(MetricKind::Gauge)
        );
        assert!(metric_info("open_fds").is_none());
    }

    /// The reference page is this table: every metric has its row, and no row names a
    /// metric that is not served.
    #[test]
    fn docs_metrics_page_is_this_table() {
        let page = include_str!("../../docs/METRICS.md");
        let rows: Vec<&str> = page
            .lines()
            .filter(|l| l.starts_with("| `lobbyd_") || l.starts_with("| `process_"))
            .collect();
        let expected: Vec<String> = reference_rows().collect();
        for row in &expected {
            assert!(rows.contains(&row.as_str()), "docs/METRICS.md lacks\n{row}");
        }
        for row in &rows {
            assert!(
                expected.iter().any(|e| e == row),
                "docs/METRICS.md has a row for no metric:\n{row}"
            );
        }
    }
}
