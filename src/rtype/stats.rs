//! Counters the R-Type core keeps about its own decisions.
//!
//! Plain `u64` fields (one thread, no atomics). The driver keeps its own counters for what it
//! drops before the core sees it (malformed datagrams); both are exported by the metrics
//! endpoint through [`RtypeStats::visit`], which names each counter once.

/// Why a JOIN_ROOM or CREATE_ROOM got JOIN_FAILED.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JoinFailure {
    /// JOIN_ROOM for room id 0, never a valid id.
    RoomZero,
    /// No room has that id (never existed, or reaped).
    NoSuchRoom,
    /// Every seat is taken by members or reservations.
    Full,
    /// The room is Playing or Finished.
    NotJoinable,
    /// CREATE_ROOM while `--max-rooms` rooms exist.
    MaxRooms,
    /// CREATE_ROOM while this IP already has its share of rooms.
    MaxRoomsPerIp,
    /// CREATE_ROOM but no instance port could be bound.
    NoInstancePort,
    /// The room id space (u32) is exhausted.
    NoRoomId,
    /// JOIN_ROOM without the password of a protected room, or with another one.
    BadPassword,
    /// JOIN_ROOM asking to watch: lobbyd's game instances have no spectators.
    Spectator,
    /// CREATE_ROOM with a name or password longer than lobbyd keeps.
    BadSettings,
    /// JOIN_ROOM of another node's room whose owner did not answer within 250 ms, or could
    /// not be asked (directory down, too many asks waiting, the directory's queue full).
    OwnerUnreachable,
}

impl JoinFailure {
    /// Every reason, for exporting all counters (including zeros).
    pub const ALL: [JoinFailure; 12] = [
        JoinFailure::RoomZero,
        JoinFailure::NoSuchRoom,
        JoinFailure::Full,
        JoinFailure::NotJoinable,
        JoinFailure::MaxRooms,
        JoinFailure::MaxRoomsPerIp,
        JoinFailure::NoInstancePort,
        JoinFailure::NoRoomId,
        JoinFailure::BadPassword,
        JoinFailure::Spectator,
        JoinFailure::BadSettings,
        JoinFailure::OwnerUnreachable,
    ];

    /// The reason's code in an owner's answer (1 and up; 0 means granted).
    pub fn code(self) -> u8 {
        let index = JoinFailure::ALL
            .iter()
            .position(|r| *r == self)
            .unwrap_or(0);
        // ALL has a dozen entries.
        index as u8 + 1
    }

    /// The reason an owner's answer names; `None` for 0 (granted) or an unknown code.
    pub fn from_code(code: u8) -> Option<JoinFailure> {
        JoinFailure::ALL
            .get(usize::from(code).checked_sub(1)?)
            .copied()
    }

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            JoinFailure::RoomZero => "room_zero",
            JoinFailure::NoSuchRoom => "no_such_room",
            JoinFailure::Full => "full",
            JoinFailure::NotJoinable => "not_joinable",
            JoinFailure::MaxRooms => "max_rooms",
            JoinFailure::MaxRoomsPerIp => "max_rooms_per_ip",
            JoinFailure::NoInstancePort => "no_instance_port",
            JoinFailure::NoRoomId => "no_room_id",
            JoinFailure::BadPassword => "bad_password",
            JoinFailure::Spectator => "spectator",
            JoinFailure::BadSettings => "bad_settings",
            JoinFailure::OwnerUnreachable => "owner_unreachable",
        }
    }
}

/// Why an instance datagram was ignored by the core (it was well-formed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InstanceIgnore {
    /// DATA, PING, LEAVE or START from an address that is not a member.
    NotMember,
    /// START from a member that is not the owner.
    NotOwner,
    /// START while not Waiting.
    BadState,
    /// DATA addressed to an empty slot or to the sender itself.
    BadTarget,
    /// A datagram for a room the core no longer has (raced with reaping).
    StaleRoom,
}

impl InstanceIgnore {
    /// Every reason.
    pub const ALL: [InstanceIgnore; 5] = [
        InstanceIgnore::NotMember,
        InstanceIgnore::NotOwner,
        InstanceIgnore::BadState,
        InstanceIgnore::BadTarget,
        InstanceIgnore::StaleRoom,
    ];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            InstanceIgnore::NotMember => "not_member",
            InstanceIgnore::NotOwner => "not_owner",
            InstanceIgnore::BadState => "bad_state",
            InstanceIgnore::BadTarget => "bad_target",
            InstanceIgnore::StaleRoom => "stale_room",
        }
    }
}

/// Counters of JOIN_ROOMs of other nodes' rooms (`remote_join.rs`).
#[derive(Clone, Debug, Default)]
pub struct RemoteJoinStats {
    /// Asks sent to a room's owner.
    pub asked: u64,
    /// Asks the owner granted in time.
    pub granted: u64,
    /// Asks the owner refused in time.
    pub refused: u64,
    /// Asks with no answer within 250 ms (JOIN_FAILED).
    pub timeouts: u64,
    /// Answers to no waiting ask (after its timeout), dropped.
    pub late_answers: u64,
    /// Remote JOIN_ROOMs refused at once: the directory was down.
    pub unavailable: u64,
    /// Remote JOIN_ROOMs refused at once: too many asks were waiting.
    pub over_cap: u64,
    /// Asks the directory's queue had no room for (JOIN_FAILED at once).
    pub dropped: u64,
    /// Other nodes' asks this node decided as the owner.
    pub served: u64,
}

impl RemoteJoinStats {
    /// Calls `f(name, label, value)` for every counter (exported with `--directory` only).
    pub fn visit(&self, mut f: impl FnMut(&'static str, &'static str, u64)) {
        f("directory_remote_joins_total", "asked", self.asked);
        f("directory_remote_joins_total", "granted", self.granted);
        f("directory_remote_joins_total", "refused", self.refused);
        f("directory_rpc_timeouts_total", "", self.timeouts);
        f("directory_late_answers_total", "", self.late_answers);
        let at_once = "directory_remote_joins_refused_at_once_total";
        f(at_once, "directory_down", self.unavailable);
        f(at_once, "too_many_pending", self.over_cap);
        f(at_once, "queue_full", self.dropped);
        f("directory_asks_served_total", "", self.served);
    }
}

/// The core's counters.
#[derive(Clone, Debug, Default)]
pub struct RtypeStats {
    /// LIST_ROOMS requests answered.
    pub list_requests: u64,
    /// CREATE_ROOM requests accepted for processing.
    pub create_requests: u64,
    /// JOIN_ROOM requests accepted for processing.
    pub join_requests: u64,
    /// UDP lobby requests dropped by the per-IP request bucket.
    pub rate_limited: u64,
    /// UDP lobby replies not sent because the per-IP reply-bytes budget was spent.
    pub reply_budget_exceeded: u64,
    /// JOIN_FAILED replies, by reason (index: position in [`JoinFailure::ALL`]).
    pub join_failed: [u64; JoinFailure::ALL.len()],
    /// Rooms created (instance bound).
    pub rooms_created: u64,
    /// Rooms removed after their grace period.
    pub rooms_reaped: u64,
    /// HELLOs answered with WELCOME (including repeats).
    pub welcomes: u64,
    /// HELLOs answered with REJECT full / not joinable / unknown token.
    pub rejects: [u64; 3],
    /// DATA datagrams forwarded (one per destination).
    pub data_forwarded: u64,
    /// Well-formed instance datagrams the core ignored, by reason.
    pub instance_ignored: [u64; InstanceIgnore::ALL.len()],
    /// Members removed for silence.
    pub idle_removed: u64,
    /// Members that sent LEAVE.
    pub leaves: u64,
    /// Seat reservations that expired unused.
    pub reservations_expired: u64,
    /// Countdowns that reached STARTED.
    pub games_started: u64,
    /// The TCP lobby's counters.
    pub tcp: super::tcp_stats::PartyStats,
    /// Joins of other nodes' rooms.
    pub remote: RemoteJoinStats,
}

impl RtypeStats {
    /// Counts a JOIN_FAILED.
    pub fn join_failed(&mut self, reason: JoinFailure) {
        if let Some(i) = JoinFailure::ALL.iter().position(|r| *r == reason) {
            self.join_failed[i] += 1;
        }
    }

    /// How many JOIN_FAILED were sent for `reason`.
    pub fn join_failures(&self, reason: JoinFailure) -> u64 {
        JoinFailure::ALL
            .iter()
            .position(|r| *r == reason)
            .map_or(0, |i| self.join_failed[i])
    }

    /// Counts an ignored instance datagram.
    pub fn ignored(&mut self, reason: InstanceIgnore) {
        if let Some(i) = InstanceIgnore::ALL.iter().position(|r| *r == reason) {
            self.instance_ignored[i] += 1;
        }
    }

    /// How many instance datagrams were ignored for `reason`.
    pub fn ignores(&self, reason: InstanceIgnore) -> u64 {
        InstanceIgnore::ALL
            .iter()
            .position(|r| *r == reason)
            .map_or(0, |i| self.instance_ignored[i])
    }

    /// Calls `f(name, label, value)` for every counter; `label` is "" for unlabelled ones.
    pub fn visit(&self, mut f: impl FnMut(&'static str, &'static str, u64)) {
        f("udp_lobby_requests_total", "list_rooms", self.list_requests);
        f(
            "udp_lobby_requests_total",
            "create_room",
            self.create_requests,
        );
        f("udp_lobby_requests_total", "join_room", self.join_requests);
        f("udp_lobby_rate_limited_total", "", self.rate_limited);
        f(
            "udp_lobby_reply_budget_exceeded_total",
            "",
            self.reply_budget_exceeded,
        );
        for (reason, value) in JoinFailure::ALL.iter().zip(self.join_failed) {
            f("udp_lobby_join_failed_total", reason.as_str(), value);
        }
        f("rooms_created_total", "", self.rooms_created);
        f("rooms_reaped_total", "", self.rooms_reaped);
        f("instance_welcomes_total", "", self.welcomes);
        for (reason, value) in ["full", "not_joinable", "unknown_token"]
            .iter()
            .zip(self.rejects)
        {
            f("instance_rejects_total", reason, value);
        }
        f("instance_data_forwarded_total", "", self.data_forwarded);
        for (reason, value) in InstanceIgnore::ALL.iter().zip(self.instance_ignored) {
            f("instance_ignored_total", reason.as_str(), value);
        }
        f("instance_idle_removed_total", "", self.idle_removed);
        f("instance_leaves_total", "", self.leaves);
        f(
            "seat_reservations_expired_total",
            "",
            self.reservations_expired,
        );
        f("games_started_total", "", self.games_started);
        self.tcp.visit(f);
    }
}
