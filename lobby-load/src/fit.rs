//! Fitting a run to the server it meets: `lobby-load MODE` against
//! `make run` works with no flags.
//!
//! [`fit`] takes the options as given and returns the ones the run uses, with one line saying
//! what changed: the source addresses (spread over loopback unless `--sources` names them),
//! counts clamped to lobbyd's default totals (rooms, seats, games, members), and, unless
//! `--caps off`, the per-address budgets each mode keeps to ([`super::caps`]). The engines
//! build those budgets with [`udp_budgets`], [`source_pool`] and [`chat_budgets`], so the line
//! and the behaviour come from the same numbers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use super::caps::{Budgets, Caps, Rate, SourcePool};
use super::options::{Mode, Options};
use super::sources::{describe, spread, MAX_SOURCES};

/// Addresses a connection-per-cycle mode takes in turn by default: at 4.5 connections a minute
/// each (lobbyd's default `--conn-rate` with headroom), about 4,900 new connections a second
/// sustained, after a first burst of 262,144.
pub const POOL_SOURCES: usize = MAX_SOURCES;

/// A `conn_rate` in [`Caps`] that stands for "raised on the server, do not pace"
/// (`super::tcp_probe` found it so).
pub const RAISED_CONN_RATE: u64 = u32::MAX as u64;

/// What [`fit`] decided.
#[derive(Clone, Debug)]
pub struct Fitted {
    /// The options the run uses.
    pub options: Options,
    /// One line for stderr saying what was adjusted, if anything was.
    pub note: Option<String>,
}

/// True for modes that open a new connection per cycle from the next address of a pool.
fn uses_pool(mode: Mode) -> bool {
    matches!(
        mode,
        Mode::TcpJoin
            | Mode::TcpIdle
            | Mode::TcpCycle
            | Mode::WzList
            | Mode::WzHost
            | Mode::LobbyJoin
            | Mode::LobbyIdle
    )
}

/// Rooms one address may create under `caps` (every room its own address without caps).
pub fn rooms_per_source(options: &Options) -> usize {
    options
        .caps
        .as_ref()
        .map_or(1, |caps| caps.max_rooms_per_ip.max(1))
}

/// Games one Warzone host address registers for `wz-list` (each its own without caps).
pub fn games_per_host(options: &Options) -> usize {
    options
        .caps
        .as_ref()
        .map_or(1, |caps| caps.wz_games_per_ip.max(1))
}

/// The addresses a run of `options` spreads over by default.
fn default_source_count(o: &Options) -> usize {
    match o.mode {
        Mode::UdpList => o.rooms.div_ceil(rooms_per_source(o)).max(o.concurrency),
        Mode::UdpCreateJoin => o.concurrency,
        Mode::Relay => o.concurrency * o.members.max(2),
        Mode::LobbyChat => o.members,
        Mode::Echo => 1,
        _ => POOL_SOURCES,
    }
}

/// The one address a run uses when it cannot spread: loopback of the target's family for a
/// loopback target, else the unspecified address (the OS picks the route's).
fn single_source(target: IpAddr) -> IpAddr {
    match (target, super::sources::is_loopback(target)) {
        (IpAddr::V4(_), true) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        (IpAddr::V6(_), true) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        (IpAddr::V4(_), false) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        (IpAddr::V6(_), false) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// The options a run uses, and the line saying what was adjusted.
pub fn fit(given: &Options) -> Fitted {
    let mut o = given.clone();
    // Attackers mean to go past the limits; write-floor meets no server at all.
    if o.mode.is_hostile() || o.mode == Mode::WriteFloor {
        return Fitted {
            options: o,
            note: None,
        };
    }
    let mut notes: Vec<String> = Vec::new();
    let caps = o.caps.clone();
    if let Some(caps) = &caps {
        clamp_to_caps(&mut o, caps, &mut notes);
    }
    let loopback_v4 = matches!(o.target.ip(), IpAddr::V4(v4) if v4.is_loopback());
    if o.sources.is_empty() {
        o.sources = if loopback_v4 && o.mode != Mode::Echo {
            spread(default_source_count(&o))
        } else {
            vec![single_source(o.target.ip())]
        };
    }
    if let Some(caps) = &caps {
        describe_budgets(&o, caps, &mut notes);
    } else if given.sources.is_empty() && o.sources.len() > 1 {
        notes.push(format!(
            "clients over {} (--caps off: no per-address pacing)",
            describe(&o.sources)
        ));
    }
    let note = (!notes.is_empty()).then(|| {
        let raised = o
            .caps
            .as_ref()
            .is_some_and(|c| c.conn_rate >= RAISED_CONN_RATE);
        let tail = if raised {
            " (lobbyd's defaults but --conn-rate, found raised; --caps off for a server with \
             raised limits)"
        } else if o.caps.is_some() {
            " (lobbyd's defaults; --caps off for a server with raised limits)"
        } else {
            ""
        };
        format!("{}: {}{tail}", o.mode.name(), notes.join("; "))
    });
    Fitted { options: o, note }
}

/// Counts over lobbyd's default totals come down to them.
fn clamp_to_caps(o: &mut Options, caps: &Caps, notes: &mut Vec<String>) {
    let mut clamped = Vec::new();
    let mut clamp = |value: &mut usize, most: usize, what: &str, flag: String| {
        if *value > most {
            clamped.push(format!("{what} {} -> {most} ({flag})", *value));
            *value = most;
        }
    };
    match o.mode {
        Mode::UdpList => clamp(
            &mut o.rooms,
            caps.max_rooms,
            "--rooms",
            format!("--max-rooms {}", caps.max_rooms),
        ),
        Mode::Relay => {
            clamp(
                &mut o.concurrency,
                caps.max_rooms,
                "--concurrency",
                format!("--max-rooms {}", caps.max_rooms),
            );
            clamp(
                &mut o.members,
                caps.max_players,
                "--members",
                format!("--max-players {}", caps.max_players),
            );
        }
        Mode::TcpIdle => clamp(
            &mut o.concurrency,
            caps.max_rooms * caps.max_players,
            "--concurrency",
            format!(
                "{} parties of --max-players {}",
                caps.max_rooms, caps.max_players
            ),
        ),
        Mode::TcpCycle => {
            if o.members != caps.max_players {
                notes.push(format!(
                    "--members {} -> {} (parties fill at --max-players {})",
                    o.members, caps.max_players, caps.max_players
                ));
                o.members = caps.max_players;
            }
            let players = caps.max_players.max(1);
            // Half the rooms: a party's room is held for the reap grace after its game.
            let most = (caps.max_rooms / 2 * players).max(players);
            clamp(
                &mut o.concurrency,
                most,
                "--concurrency",
                format!(
                    "--max-rooms {}, half held in their reap grace",
                    caps.max_rooms
                ),
            );
        }
        Mode::WzList => clamp(
            &mut o.rooms,
            caps.wz_max_games,
            "--rooms",
            format!("--wz-max-games {}", caps.wz_max_games),
        ),
        Mode::WzHost => clamp(
            &mut o.concurrency,
            caps.wz_max_games,
            "--concurrency",
            format!("--wz-max-games {}", caps.wz_max_games),
        ),
        Mode::LobbyIdle => clamp(
            &mut o.concurrency,
            caps.lobby_max_members * 9 / 10,
            "--concurrency",
            format!(
                "nine tenths of --lobby-max-members {}",
                caps.lobby_max_members
            ),
        ),
        Mode::LobbyChat => clamp(
            &mut o.members,
            caps.lobby_max_members * 9 / 10,
            "--members",
            format!(
                "nine tenths of --lobby-max-members {}",
                caps.lobby_max_members
            ),
        ),
        Mode::UdpCreateJoin | Mode::TcpJoin | Mode::LobbyJoin | Mode::Echo | Mode::WriteFloor => {}
        // The attackers are never fitted (see `fit`).
        Mode::HostileUdp
        | Mode::HostileTcp
        | Mode::HostileWz
        | Mode::HostileLobby
        | Mode::HostileHttp => {}
    }
    notes.append(&mut clamped);
}

/// What each address keeps to, in the words of lobbyd's flags.
fn describe_budgets(o: &Options, caps: &Caps, notes: &mut Vec<String>) {
    let sources = describe(&o.sources);
    match o.mode {
        Mode::UdpList => {
            let per = rooms_per_source(o);
            let creators = o.rooms.div_ceil(per).min(o.sources.len());
            notes.push(format!(
                "{} rooms over {} (--max-rooms-per-ip {per})",
                o.rooms,
                describe(&o.sources[..creators.max(1)])
            ));
            notes.push(format!(
                "{} clients, each address within {:.0} lists/s (--udp-rate {}, --udp-reply-bytes {})",
                o.concurrency,
                udp_rate(caps, o.dialect.list_reply_max()).per_second(),
                caps.udp_rate,
                caps.udp_reply_bytes
            ));
        }
        Mode::UdpCreateJoin => notes.push(format!(
            "{} clients over {sources}, each address within {:.0} requests/s (--udp-rate {}) and \
             {} rooms alive, {} in all, a left room counted for its reap grace \
             (--max-rooms-per-ip {}, --max-rooms {}, --reap-grace {} s)",
            o.concurrency,
            udp_rate(caps, SMALL_REPLY).per_second(),
            caps.udp_rate,
            caps.max_rooms_per_ip,
            caps.max_rooms,
            caps.max_rooms_per_ip,
            caps.max_rooms,
            caps.reap_grace.as_secs_f64()
        )),
        Mode::Relay => notes.push(format!(
            "{} rooms of {} members over {sources}, one address each",
            o.concurrency,
            o.members.max(2)
        )),
        Mode::TcpJoin | Mode::TcpIdle | Mode::TcpCycle => {
            let rate = caps.tcp_connections();
            notes.push(if caps.conn_rate >= RAISED_CONN_RATE {
                format!("connections from {sources}")
            } else {
                format!(
                    "connections from {sources}, each within {} then {:.1} a minute \
                     (--conn-rate {})",
                    rate.burst,
                    rate.per_minute(),
                    caps.conn_rate
                )
            });
            if o.mode == Mode::TcpIdle {
                notes.push(format!(
                    "held connections send READY_REQ every {} s (--idle-timeout {} s)",
                    caps.keepalive().as_secs(),
                    caps.idle_timeout.as_secs()
                ));
            }
            if o.mode == Mode::TcpCycle && o.duration <= caps.countdown + Duration::from_secs(1) {
                notes.push(format!(
                    "--duration {} s is shorter than a party's cycle (--countdown {} s): \
                     nothing may complete",
                    o.duration.as_secs_f64(),
                    caps.countdown.as_secs_f64()
                ));
            }
        }
        Mode::WzList => {
            let per = games_per_host(o);
            let hosts = o.rooms.div_ceil(per).min(o.sources.len());
            notes.push(format!(
                "{} games hosted from {} (--wz-max-games-per-ip {per}), each answering the \
                 reachability probe on its game port; browsers from {sources}",
                o.rooms,
                describe(&o.sources[..hosts.max(1)])
            ));
        }
        Mode::WzHost => {
            let rate = caps.wz_registrations();
            notes.push(format!(
                "hosts from {sources}, each within {} then {:.1} registrations a minute and {} \
                 games at once (--wz-register-rate {}, --wz-max-games-per-ip {}); each host \
                 answers the reachability probe on its game port",
                rate.burst,
                rate.per_minute(),
                wz_games_open(caps),
                caps.wz_register_rate,
                caps.wz_games_per_ip
            ));
        }
        Mode::LobbyJoin | Mode::LobbyIdle => {
            let rate = caps.lobby_connections();
            notes.push(format!(
                "connections from {sources}, each within {} then {:.1} a minute \
                 (--lobby-conn-rate {})",
                rate.burst,
                rate.per_minute(),
                caps.lobby_conn_rate
            ));
            if o.mode == Mode::LobbyJoin && !caps.resume_grace.is_zero() {
                notes.push(format!(
                    "each client resumes its member after its first cycle (--lobby-resume-grace \
                     {} s keeps a closed member away)",
                    caps.resume_grace.as_secs()
                ));
            } else if o.mode == Mode::LobbyIdle {
                notes.push(format!(
                    "held members PING every {} s (--idle-timeout {} s)",
                    caps.keepalive().as_secs(),
                    caps.idle_timeout.as_secs()
                ));
            }
        }
        Mode::LobbyChat => notes.push(format!(
            "{} members over {sources}, each within {:.1} lines/s (--lobby-chat-rate {}), \
             a silent one PINGs every {} s (--idle-timeout {} s)",
            o.members,
            caps.chat_lines().per_second(),
            caps.chat_rate,
            caps.keepalive().as_secs(),
            caps.idle_timeout.as_secs()
        )),
        Mode::Echo | Mode::WriteFloor => {}
        // The attackers are never fitted (see `fit`).
        Mode::HostileUdp
        | Mode::HostileTcp
        | Mode::HostileWz
        | Mode::HostileLobby
        | Mode::HostileHttp => {}
    }
}

/// A reply to CREATE_ROOM or JOIN_ROOM, or an instance's WELCOME: well under 64 bytes.
pub const SMALL_REPLY: usize = 64;

fn udp_rate(caps: &Caps, reply_len: usize) -> Rate {
    caps.udp_requests(reply_len)
}

/// Games one Warzone host address keeps at once: one below the cap, since the server counts
/// a closed host's game until it has read the close.
pub fn wz_games_open(caps: &Caps) -> usize {
    caps.wz_games_per_ip.saturating_sub(1).max(1)
}

/// The per-address request budgets of a UDP request/reply run whose replies are at most
/// `reply_len` bytes, one per source address; `None` without caps.
pub fn udp_budgets(o: &Options, reply_len: usize) -> Option<Budgets> {
    if o.mode == Mode::Echo {
        // The tool's own echo server has no limits.
        return None;
    }
    let caps = o.caps.as_ref()?;
    Some(Budgets::new(udp_rate(caps, reply_len), o.sources.len()))
}

/// The chat budgets of `lobby-chat`, one per member; `None` without caps.
pub fn chat_budgets(o: &Options, members: usize) -> Option<Budgets> {
    let caps = o.caps.as_ref()?;
    Some(Budgets::new(caps.chat_lines(), members))
}

/// The source pool of a connection-per-cycle mode: the run's addresses, each within the
/// connection rate and the connections (or games) at once its protocol allows.
pub fn source_pool(o: &Options) -> SourcePool {
    let pool = SourcePool::new(o.sources.clone());
    let Some(caps) = o.caps.as_ref() else {
        return pool;
    };
    if !uses_pool(o.mode) {
        return pool;
    }
    match o.mode {
        Mode::TcpJoin | Mode::TcpIdle | Mode::TcpCycle => pool
            .with_rate(caps.tcp_connections())
            .with_max_open(caps.max_conns_per_ip.saturating_sub(1)),
        Mode::WzHost => pool
            .with_rate(caps.wz_registrations())
            .with_max_open(wz_games_open(caps).min(caps.wz_conns_per_ip)),
        Mode::LobbyJoin | Mode::LobbyIdle => pool
            .with_rate(caps.lobby_connections())
            .with_max_open(caps.lobby_conns_per_ip.saturating_sub(1)),
        // Browsers: lobbyd limits no list requests per address.
        _ => pool,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(mode: Mode) -> Options {
        Options::new(mode, "127.0.0.1:4242".parse().unwrap())
    }

    #[test]
    fn loopback_runs_spread_and_say_so() {
        let fitted = fit(&options(Mode::UdpList));
        assert_eq!(fitted.options.sources.len(), 16);
        let note = fitted.note.unwrap();
        assert!(
            note.starts_with("udp-list: 64 rooms over 8 sources 127."),
            "{note}"
        );
        assert!(note.contains("--max-rooms-per-ip 8"), "{note}");
        assert!(!note.contains('\n'));
        let tcp = fit(&options(Mode::TcpJoin)).options;
        assert_eq!(tcp.sources.len(), POOL_SOURCES);
        // The echo baseline runs its own server: nothing to fit.
        let echo = fit(&options(Mode::Echo));
        assert_eq!(echo.options.sources, vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]);
        assert!(echo.note.is_none());
    }

    #[test]
    fn counts_come_down_to_the_defaults() {
        let mut relay = options(Mode::Relay);
        relay.concurrency = 500;
        relay.members = 6;
        let fitted = fit(&relay);
        assert_eq!(fitted.options.concurrency, 100);
        assert_eq!(fitted.options.members, 4);
        assert_eq!(fitted.options.sources.len(), 400);
        let mut cycle = options(Mode::TcpCycle);
        cycle.members = 2;
        let fitted = fit(&cycle);
        assert_eq!(fitted.options.members, 4);
        assert!(fitted.note.unwrap().contains("--members 2 -> 4"));
    }

    #[test]
    fn given_sources_and_caps_off_are_kept() {
        let mut o = options(Mode::TcpJoin);
        o.sources = vec![IpAddr::from([127, 0, 0, 7])];
        o.caps = None;
        let fitted = fit(&o);
        assert_eq!(fitted.options.sources, o.sources);
        assert!(fitted.note.is_none());
        let pool = source_pool(&fitted.options);
        assert_eq!(pool.len(), 1);
        let mut off = options(Mode::UdpCreateJoin);
        off.caps = None;
        let fitted = fit(&off);
        assert_eq!(fitted.options.sources.len(), 16);
        assert!(fitted.note.unwrap().contains("--caps off"));
        assert!(udp_budgets(&fitted.options, 64).is_none());
    }

    #[test]
    fn remote_targets_use_one_unspecified_source() {
        let mut o = options(Mode::UdpList);
        o.target = "192.0.2.1:4242".parse().unwrap();
        let fitted = fit(&o);
        assert_eq!(
            fitted.options.sources,
            vec![IpAddr::V4(Ipv4Addr::UNSPECIFIED)]
        );
    }
}
