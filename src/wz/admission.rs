//! Admission of a hosted game, shared by the legacy and v4 connections: the checks a new
//! game passes before it enters the table (connection limit, minimum version, banned words,
//! table and per-address limits, registration rate) and the rewrite of its GAMESTRUCT into
//! the form it is listed in.
//!
//! Implements docs/protocols/wz-lobby.md "Registration" step 1 and 2 (the refusal table and
//! its texts). The legacy protocol sends the code and text as a status; v4 sends the text
//! with status -403. Nothing here does I/O or panics; it reads [`Shared`] and charges only
//! the registration rate limiter.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use crate::wire::wz::{GameStruct, GAMESTRUCT_LEN};

use super::games::AddError;
use super::policy::version_allowed;
use super::shared::Shared;
use super::stats::WzRefusal;

/// `sizeof(desc)` in the C client: the `dwSize` a listed game gets when the host sent 0.
pub(crate) const DESC_SIZE: i32 = 72;

/// Legacy status: listed.
pub(crate) const STATUS_OK: u32 = 200;
/// Legacy status: netcode version below `--wz-min-version`.
pub(crate) const STATUS_FORBIDDEN_VERSION: u32 = 403;
/// Legacy status: refused by a name, limit or rate policy.
pub(crate) const STATUS_NOT_ACCEPTABLE: u32 = 406;
/// Legacy status: the game port is unreachable.
pub(crate) const STATUS_UNREACHABLE: u32 = 408;

/// Why a game is not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// The counter it is counted under.
    pub(crate) reason: WzRefusal,
    /// The legacy status code the host gets.
    pub(crate) status: u32,
    /// The text for the host (the legacy status's MOTD, the v4 result).
    pub(crate) text: String,
}

impl Verdict {
    /// A refusal counted as `reason`, with the legacy `status` and the host's `text`.
    pub(crate) fn new(reason: WzRefusal, status: u32, text: impl Into<String>) -> Verdict {
        Verdict {
            reason,
            status,
            text: text.into(),
        }
    }
}

/// The policy verdict on a (rewritten) GAMESTRUCT: version and name.
pub(crate) fn policy_refusal(sh: &Shared, view: &GameStruct<&[u8]>) -> Option<Verdict> {
    if !version_allowed(
        sh.config.min_version,
        view.game_version_major(),
        view.game_version_minor(),
    ) {
        let motd = format!(
            "Your Warzone 2100 version ({}) is too old for this lobby; the game is NOT \
             hosted. Please upgrade.",
            String::from_utf8_lossy(view.version_string())
        );
        return Some(Verdict::new(
            WzRefusal::MinVersion,
            STATUS_FORBIDDEN_VERSION,
            motd,
        ));
    }
    if sh.policy.is_banned(view.name()) {
        let motd = "Game name not acceptable. The game is NOT hosted, change the name of \
                    your game.";
        return Some(Verdict::new(
            WzRefusal::BannedName,
            STATUS_NOT_ACCEPTABLE,
            motd,
        ));
    }
    None
}

/// Every check a new game from `ip` passes before it enters the table, in the documented
/// order; the registration rate is charged only when everything else passed.
pub(crate) fn admit(
    sh: &mut Shared,
    now: Instant,
    ip: IpAddr,
    over_limit: bool,
    view: &GameStruct<&[u8]>,
) -> Option<Verdict> {
    if over_limit {
        let motd = format!(
            "Too many connections from your address {ip}; the game is NOT hosted. Close \
             other Warzone 2100 sessions and try again."
        );
        return Some(Verdict::new(
            WzRefusal::ConnsPerIp,
            STATUS_NOT_ACCEPTABLE,
            motd,
        ));
    }
    if let Some(verdict) = policy_refusal(sh, view) {
        return Some(verdict);
    }
    if let Err(error) = sh.table.check_room(ip) {
        return Some(room_refusal(sh, error, ip));
    }
    if !sh.limiter.allow_request(now, ip) {
        let motd = format!(
            "Too many games registered from your address {ip} in a short time; the game is \
             NOT hosted. Wait a minute and try again."
        );
        return Some(Verdict::new(
            WzRefusal::RateLimited,
            STATUS_NOT_ACCEPTABLE,
            motd,
        ));
    }
    None
}

/// The refusal for a full table or a full address.
pub(crate) fn room_refusal(sh: &Shared, error: AddError, ip: IpAddr) -> Verdict {
    match error {
        AddError::TooManyFromAddress => Verdict::new(
            WzRefusal::GamesPerIp,
            STATUS_NOT_ACCEPTABLE,
            format!(
                "Too many games hosted from your address {ip} (at most {}); the game is \
                 NOT hosted.",
                sh.config.max_games_per_ip
            ),
        ),
        AddError::Full | AddError::IdInUse => Verdict::new(
            WzRefusal::LobbyFull,
            STATUS_NOT_ACCEPTABLE,
            "The lobby is full; the game is NOT hosted. Try again later.",
        ),
    }
}

/// The text a host whose game port did not accept the probe's connection gets.
pub(crate) fn unreachable_text(target: SocketAddr) -> String {
    format!(
        "Game unreachable, failed to open a connection to {target}. The game is NOT hosted: \
         make sure TCP port {} is forwarded to your computer and allowed through your firewall.",
        target.port()
    )
}

/// The one copy of a peer's GAMESTRUCT the lobby keeps, if `raw` is a valid one.
pub(crate) fn copy_struct(raw: &[u8]) -> Option<Box<[u8; GAMESTRUCT_LEN]>> {
    GameStruct::new_checked(raw).ok()?;
    let bytes: &[u8; GAMESTRUCT_LEN] = raw.get(..GAMESTRUCT_LEN)?.try_into().ok()?;
    Some(Box::new(*bytes))
}

/// Sanitize the strings and apply the lobby's fields: `desc.host` = the address the lobby
/// saw, `gameId` = the lobby's id, `dwSize` = `keep_size` or, when the host sent 0, 72.
pub(crate) fn rewrite(
    bytes: &mut [u8; GAMESTRUCT_LEN],
    ip: IpAddr,
    game_id: u32,
    keep_size: Option<i32>,
) {
    let mut view = GameStruct::new_unchecked(&mut bytes[..]);
    view.sanitize_strings();
    view.set_host(&ip.to_string());
    view.set_game_id(game_id);
    let size = keep_size.unwrap_or_else(|| view.dw_size());
    view.set_dw_size(if size == 0 { DESC_SIZE } else { size });
}
