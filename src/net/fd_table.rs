//! The process's descriptor table, sized once at start for every socket the limits allow
//! (the hostile-traffic run's p99).
//!
//! Linux grows a process's descriptor table by doubling, in the system call that needs a
//! descriptor past its end (`accept4`, `socket`), and in a process with more than one thread
//! it first waits for an RCU grace period (`expand_fdtable` calls `synchronize_rcu`): the
//! loop thread sleeps for several scheduler ticks. lobbyd always has a second thread (the
//! password worker), so a flood that takes it from 15 to 5,000 descriptors slept the loop
//! 6-20 ms in one `accept4` at each doubling on a quiet machine, 80 ms on a loaded one
//! (`perf record -e sched:sched_switch -g`: `synchronize_rcu_normal <- expand_files <-
//! alloc_fd <- __sys_accept4`), the worst pauses of the run. The table never shrinks, so
//! one descriptor placed at the highest slot the limits need, then closed, makes it large
//! enough for the whole life of the process: at start, before any thread exists in the
//! binary, no grace period is waited for at all.
//!
//! It must not: grow the table past `RLIMIT_NOFILE` (the kernel refuses, and descriptors
//! past it could never be used), or fail the start (a table left small still works).
//!
//! At the limit itself every listener must still answer (a newcomer left in the kernel's
//! backlog hangs until it gives up): each keeps a `pass::SpareDescriptor` open, which it closes
//! to accept one connection when `accept` fails for want of a descriptor, then reopens
//! (`net::io::pass`). And the rooms, which hold their instance socket for a whole game, may not
//! be promised more descriptors than the limit leaves beside the connections
//! ([`check_descriptor_limit`], refused at start).

use std::fs::File;
use std::io;
use std::os::fd::RawFd;

use rustix::process::{getrlimit, Resource};

use crate::config::{Config, UsageError};

/// Descriptors the loop may hold besides its connections and instance sockets: listeners,
/// the poll, its timerfd and waker, signals, the account database, closed connections
/// waiting for their slice (`net::io::pass`) and newcomers accepted at a cap before an eviction.
const SLACK: usize = 1024;

/// Tables smaller than this are what the kernel gives a process anyway: nothing to do.
const SMALL_TABLE: usize = 256;

/// Descriptors one room holds for its whole game: its instance socket, or with
/// `--instance-exec` its game server's pidfd and two output pipes.
pub fn descriptors_per_room(config: &Config) -> usize {
    if config.instance_exec.command.is_some() {
        3
    } else {
        1
    }
}

/// How many descriptors `config` may have open at once: every connection cap of the TCP
/// front ends it serves, [`descriptors_per_room`] per room, the metrics endpoint's
/// connections, and [`SLACK`].
pub fn descriptors_needed(config: &Config) -> usize {
    let caps = [
        (config.tcp_port.is_some(), config.max_conns),
        (config.wz.port.is_some(), config.wz.max_conns),
        (config.general.port.is_some(), config.general.max_conns),
        (config.metrics.is_some(), crate::net::http::MAX_CONNS),
        (
            config.udp_port.is_some(),
            config
                .max_rooms
                .saturating_mul(descriptors_per_room(config)),
        ),
    ];
    caps.iter()
        .filter(|(serving, _)| *serving)
        .fold(SLACK, |sum, (_, cap)| sum.saturating_add(*cap))
}

/// Grows the descriptor table to hold `needed` descriptors (at most `RLIMIT_NOFILE`'s
/// current value); returns the table size asked for, or `None` when nothing was done.
/// Errors are logged and ignored: the table then grows as it would have.
pub fn reserve(needed: usize) -> Option<usize> {
    let limit = getrlimit(Resource::Nofile)
        .current
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let size = needed.min(limit);
    if size <= SMALL_TABLE {
        return None;
    }
    let highest = RawFd::try_from(size - 1).ok()?;
    match place_at_or_above(highest) {
        // Closed again when dropped; the table keeps its size.
        Ok(()) => Some(size),
        Err(e) => {
            log::debug!("descriptor table of {size} not reserved: {e}");
            None
        }
    }
}

/// `RLIMIT_NOFILE`'s current (soft) value, `None` when unlimited.
pub fn open_file_limit() -> Option<u64> {
    getrlimit(Resource::Nofile).current
}

/// Descriptors held whatever the traffic, counted against the limit before any room: the
/// standard streams, the poll, its timerfd and waker, the signal pipe, five listeners and
/// their spares, the account database and its journal, with room to spare.
pub const FIXED_DESCRIPTORS: usize = 64;

/// The most rooms `config` may promise under a descriptor limit of `limit`: what is left
/// after [`FIXED_DESCRIPTORS`] and the connection caps of the TCP listeners served (the
/// metrics endpoint's among them), the caps counted up to half of the limit. A connection
/// past the limit is refused at accept and leaves soon (the spare descriptor answers it); a
/// room holds its instance socket (or its game server's descriptors,
/// [`descriptors_per_room`]) for the whole game, so it is the one that must fit.
pub fn rooms_allowed(config: &Config, limit: u64) -> usize {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let connections = [
        (config.tcp_port.is_some(), config.max_conns),
        (config.wz.port.is_some(), config.wz.max_conns),
        (config.general.port.is_some(), config.general.max_conns),
        (config.metrics.is_some(), crate::net::http::MAX_CONNS),
    ]
    .iter()
    .filter(|(serving, _)| *serving)
    .fold(0usize, |sum, (_, cap)| sum.saturating_add(*cap));
    let left = limit
        .saturating_sub(FIXED_DESCRIPTORS)
        .saturating_sub(connections.min(limit / 2));
    left / descriptors_per_room(config)
}

/// Refuses a `--max-rooms` larger than the descriptor limit `limit` allows
/// ([`rooms_allowed`]); `None` (unlimited) allows any. The error is one line naming both.
pub fn check_descriptor_limit(config: &Config, limit: Option<u64>) -> Result<(), UsageError> {
    let Some(limit) = limit else {
        return Ok(());
    };
    let allowed = rooms_allowed(config, limit);
    if config.udp_port.is_none() || config.max_rooms <= allowed {
        return Ok(());
    }
    Err(UsageError {
        reason: format!(
            "--max-rooms {} is more than the descriptor limit allows: RLIMIT_NOFILE {limit} \
             leaves room for {allowed} rooms beside the connection caps; lower --max-rooms or \
             raise the limit (ulimit -n, LimitNOFILE)",
            config.max_rooms
        ),
    })
}

/// Opens one descriptor numbered `min` or above, and closes it.
fn place_at_or_above(min: RawFd) -> io::Result<()> {
    let file = File::open("/dev/null")?;
    let _high = rustix::io::fcntl_dupfd_cloexec(&file, min)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn needs_every_cap_of_what_is_served_and_nothing_of_the_rest() {
        let mut config = Config {
            tcp_port: Some(1),
            metrics: None,
            udp_port: None,
            max_conns: 100,
            ..Config::default()
        };
        config.wz.port = None;
        config.general.port = Some(2);
        config.general.max_conns = 30;
        assert_eq!(descriptors_needed(&config), SLACK + 130);
    }

    #[test]
    fn rooms_get_what_the_connection_caps_leave_under_the_limit() {
        let mut config = Config {
            tcp_port: Some(1),
            metrics: None,
            max_conns: 100,
            max_rooms: 800,
            ..Config::default()
        };
        config.wz.port = None;
        config.general.port = None;
        // 1024 - 64 fixed - 100 connections.
        assert_eq!(rooms_allowed(&config, 1024), 860);
        assert!(check_descriptor_limit(&config, Some(1024)).is_ok());
        assert!(check_descriptor_limit(&config, None).is_ok(), "unlimited");
        // Connection caps count up to half of the limit.
        config.max_conns = 10_000;
        assert_eq!(rooms_allowed(&config, 1024), 1024 - 64 - 512);
        let err = check_descriptor_limit(&config, Some(1024)).unwrap_err();
        assert!(err.reason.starts_with("--max-rooms 800 "), "{err}");
        assert!(err.reason.contains("RLIMIT_NOFILE 1024"), "{err}");
        assert!(!err.reason.contains('\n'), "{err}");
        // Without the UDP side there are no instance sockets.
        config.udp_port = None;
        assert!(check_descriptor_limit(&config, Some(1024)).is_ok());
        // A limit below the fixed needs leaves no room at all.
        assert_eq!(rooms_allowed(&config, 10), 0);
    }

    #[test]
    fn a_game_server_room_counts_its_pidfd_and_pipes() {
        let mut config = Config {
            tcp_port: None,
            metrics: None,
            max_rooms: 100,
            ..Config::default()
        };
        config.wz.port = None;
        config.general.port = None;
        assert_eq!(rooms_allowed(&config, 1024), 960);
        assert_eq!(descriptors_needed(&config), SLACK + 100);
        config.instance_exec.command = Some(crate::config::CommandTemplate::parse("game").unwrap());
        assert_eq!(rooms_allowed(&config, 1024), 320);
        assert_eq!(descriptors_needed(&config), SLACK + 300);
    }

    #[test]
    fn a_reserved_table_places_a_descriptor_at_its_top_without_keeping_it() {
        let limit = getrlimit(Resource::Nofile).current.unwrap_or(1024);
        let size = usize::try_from(limit).unwrap_or(1024).min(4096);
        if size <= SMALL_TABLE {
            // A limit this low leaves nothing to reserve (and nothing to test).
            assert_eq!(reserve(size), None);
            return;
        }
        assert_eq!(reserve(size), Some(size));
        // The slot used is free again: the next descriptor is a low one.
        let file = File::open("/dev/null").unwrap();
        assert!((file.as_raw_fd() as usize) < size - 1);
        assert_eq!(reserve(1), None, "a small table is left alone");
    }
}
