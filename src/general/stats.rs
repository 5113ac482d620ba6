//! Counters of the general lobby core, for `/metrics` (docs/protocols/general-lobby.md,
//! "Counters"). Every refusal is counted by its ERROR code, whether it went out as an ERROR, a
//! JOIN_RESPONSE(0) or a CHALLENGE(1); malformed frames by the wire layer's reason.
//!
//! This module must not decide anything: it counts what the core reports.

use crate::wire::general::{code, Error, ErrorCode};

use super::types::{CloseReason, LeaveReason};

fn index_of<T: PartialEq>(all: &[T], item: &T) -> Option<usize> {
    all.iter().position(|x| x == item)
}

/// Counters of the general lobby core.
#[derive(Clone, Debug, Default)]
pub struct GeneralStats {
    /// Connections opened.
    pub connections_opened: u64,
    /// Connections the core closed, by reason (index in [`CloseReason::ALL`]).
    pub closes: [u64; CloseReason::ALL.len()],
    /// Well-formed requests, by code (index in [`code::CLIENT`]).
    pub requests: [u64; code::CLIENT.len()],
    /// Malformed frames, by reason (index in [`Error::ALL`]).
    pub malformed: [u64; Error::ALL.len()],
    /// Refusals, by ERROR code (index in [`ErrorCode::ALL`]).
    pub refusals: [u64; ErrorCode::ALL.len()],
    /// New members welcomed.
    pub sign_ins: u64,
    /// Members resumed with a token.
    pub resumes: u64,
    /// Members taken over by a SIGN_IN with their account's password.
    pub takeovers: u64,
    /// SIGN_INs answered "try again" because the password check was busy.
    pub verify_busy: u64,
    /// Verification results for connections gone or no longer waiting.
    pub stale_verify_results: u64,
    /// Members who left the lobby, by reason (index in [`LeaveReason::ALL`]).
    pub left: [u64; LeaveReason::ALL.len()],
    /// Games created by members.
    pub games_created: u64,
    /// Server-hosted games opened.
    pub hosted_opened: u64,
    /// Games closed.
    pub games_closed: u64,
    /// JOIN_ASKs sent to owners (re-sends not counted).
    pub asks: u64,
    /// JOIN_ASKs that expired unanswered.
    pub asks_expired: u64,
    /// Players who joined a game.
    pub joins: u64,
    /// Chat lines accepted (lobby, game and private).
    pub chat_lines: u64,
    /// Relay messages accepted (TO_OWNER, TO_ALL, TO_PLAYER).
    pub relayed: u64,
    /// Send records handed to the driver (one frame, or a run of frames for one connection).
    pub sends: u64,
    /// Bytes encoded into the output arena (each frame once, however many receive it).
    pub bytes_encoded: u64,
    /// Times `handle_timeout` stopped early to let the driver drain the output queue.
    pub output_budget_stops: u64,
    /// Chat lines refused for a rate or budget, by limit (index in [`CHAT_LIMITS`]).
    pub chat_refused: [u64; CHAT_LIMITS.len()],
    /// Times the lobby's chat slow mode came on.
    pub slow_modes: u64,
    /// CREATE_GAMEs and STORE_DATAs refused for their address's share, by limit (index in
    /// [`ADDRESS_GAME_LIMITS`]).
    pub games_refused_per_ip: [u64; ADDRESS_GAME_LIMITS.len()],
}

/// The labels of `general_chat_refused_total`: the member's rate, its address's rate, the
/// lobby-wide budget (slow mode).
pub const CHAT_LIMITS: [&str; 3] = ["member_rate", "ip_rate", "lobby_budget"];

/// The labels of `general_games_refused_per_ip_total`: the address's games, its game data.
pub const ADDRESS_GAME_LIMITS: [&str; 2] = ["games", "data"];

impl GeneralStats {
    /// Counts a well-formed request.
    pub fn request(&mut self, request: u32) {
        if let Some(i) = index_of(&code::CLIENT, &request) {
            self.requests[i] += 1;
        }
    }

    /// How many well-formed requests of `request` came in.
    pub fn requests_of(&self, request: u32) -> u64 {
        index_of(&code::CLIENT, &request).map_or(0, |i| self.requests[i])
    }

    /// Counts a malformed frame.
    pub fn malformed(&mut self, error: Error) {
        if let Some(i) = index_of(&Error::ALL, &error) {
            self.malformed[i] += 1;
        }
    }

    /// How many frames were malformed for `error`'s reason.
    pub fn malformed_of(&self, error: Error) -> u64 {
        index_of(&Error::ALL, &error).map_or(0, |i| self.malformed[i])
    }

    /// Counts a refusal.
    pub fn refuse(&mut self, code: ErrorCode) {
        if let Some(i) = index_of(&ErrorCode::ALL, &code) {
            self.refusals[i] += 1;
        }
    }

    /// How many refusals carried `code`.
    pub fn refusals_of(&self, code: ErrorCode) -> u64 {
        index_of(&ErrorCode::ALL, &code).map_or(0, |i| self.refusals[i])
    }

    /// Counts a connection the core closed.
    pub fn close(&mut self, reason: CloseReason) {
        if let Some(i) = index_of(&CloseReason::ALL, &reason) {
            self.closes[i] += 1;
        }
    }

    /// How many connections the core closed for `reason`.
    pub fn closes_of(&self, reason: CloseReason) -> u64 {
        index_of(&CloseReason::ALL, &reason).map_or(0, |i| self.closes[i])
    }

    /// Counts a member leaving.
    pub fn leave(&mut self, reason: LeaveReason) {
        if let Some(i) = index_of(&LeaveReason::ALL, &reason) {
            self.left[i] += 1;
        }
    }

    /// How many members left for `reason`.
    pub fn left_of(&self, reason: LeaveReason) -> u64 {
        index_of(&LeaveReason::ALL, &reason).map_or(0, |i| self.left[i])
    }

    /// Calls `f(name, label, value)` for every counter; `label` is "" for unlabelled ones.
    pub fn visit(&self, mut f: impl FnMut(&'static str, &'static str, u64)) {
        f(
            "general_connections_opened_total",
            "",
            self.connections_opened,
        );
        for (reason, value) in CloseReason::ALL.iter().zip(self.closes) {
            f("general_closed_total", reason.as_str(), value);
        }
        for (request, value) in code::CLIENT.iter().zip(self.requests) {
            let label = code::client_label(*request).unwrap_or("");
            f("general_requests_total", label, value);
        }
        for (error, value) in Error::ALL.iter().zip(self.malformed) {
            f("general_malformed_total", error.as_str(), value);
        }
        for (code, value) in ErrorCode::ALL.iter().zip(self.refusals) {
            f("general_refusals_total", code.as_str(), value);
        }
        f("general_sign_ins_total", "", self.sign_ins);
        f("general_resumes_total", "", self.resumes);
        f("general_takeovers_total", "", self.takeovers);
        f("general_verify_busy_total", "", self.verify_busy);
        f(
            "general_stale_verify_results_total",
            "",
            self.stale_verify_results,
        );
        for (reason, value) in LeaveReason::ALL.iter().zip(self.left) {
            f("general_members_left_total", reason.as_str(), value);
        }
        f("general_games_created_total", "", self.games_created);
        f("general_hosted_opened_total", "", self.hosted_opened);
        f("general_games_closed_total", "", self.games_closed);
        f("general_asks_total", "", self.asks);
        f("general_asks_expired_total", "", self.asks_expired);
        f("general_joins_total", "", self.joins);
        f("general_chat_lines_total", "", self.chat_lines);
        f("general_relayed_total", "", self.relayed);
        f("general_sends_total", "", self.sends);
        f("general_bytes_encoded_total", "", self.bytes_encoded);
        f(
            "general_output_budget_stops_total",
            "",
            self.output_budget_stops,
        );
        for (label, value) in CHAT_LIMITS.iter().zip(self.chat_refused) {
            f("general_chat_refused_total", label, value);
        }
        f("general_slow_modes_total", "", self.slow_modes);
        for (label, value) in ADDRESS_GAME_LIMITS.iter().zip(self.games_refused_per_ip) {
            f("general_games_refused_per_ip_total", label, value);
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn counts_by_label_and_visits_every_counter() {
        let mut stats = GeneralStats::default();
        stats.request(code::CHAT);
        stats.request(code::GAME_INFO); // not a client code: ignored
        stats.malformed(Error::NotUtf8);
        stats.refuse(ErrorCode::Full);
        stats.refuse(ErrorCode::Other(77)); // not a defined code: ignored
        stats.close(CloseReason::Idle);
        stats.leave(LeaveReason::GraceExpired);
        assert_eq!(stats.requests_of(code::CHAT), 1);
        assert_eq!(stats.requests_of(code::GAME_INFO), 0);
        assert_eq!(stats.malformed_of(Error::NotUtf8), 1);
        assert_eq!(stats.refusals_of(ErrorCode::Full), 1);
        assert_eq!(stats.refusals_of(ErrorCode::Other(77)), 0);
        assert_eq!(stats.closes_of(CloseReason::Idle), 1);
        assert_eq!(stats.left_of(LeaveReason::GraceExpired), 1);

        let mut seen = Vec::new();
        stats.visit(|name, label, value| seen.push((name, label, value)));
        assert!(seen.contains(&("general_requests_total", "chat", 1)));
        assert!(seen.contains(&("general_refusals_total", "full", 1)));
        assert!(seen.contains(&("general_malformed_total", "not_utf8", 1)));
        assert!(seen.contains(&("general_closed_total", "idle", 1)));
        assert!(seen.contains(&("general_members_left_total", "grace_expired", 1)));
        let labelled = code::CLIENT.len()
            + Error::ALL.len()
            + ErrorCode::ALL.len()
            + CloseReason::ALL.len()
            + LeaveReason::ALL.len()
            + CHAT_LIMITS.len()
            + ADDRESS_GAME_LIMITS.len();
        assert_eq!(seen.len(), labelled + 18);
        assert!(seen.iter().all(|(name, ..)| name.starts_with("general_")));
    }
}
