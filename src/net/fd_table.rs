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

use std::fs::File;
use std::io;
use std::os::fd::RawFd;

use rustix::process::{getrlimit, Resource};

use crate::config::Config;

/// Descriptors the loop may hold besides its connections and instance sockets: listeners,
/// the poll, its timerfd and waker, signals, the account database, closed connections
/// waiting for their slice (`net::pass`) and newcomers accepted at a cap before an eviction.
const SLACK: usize = 1024;

/// Tables smaller than this are what the kernel gives a process anyway: nothing to do.
const SMALL_TABLE: usize = 256;

/// How many descriptors `config` may have open at once: every connection cap of the TCP
/// front ends it serves, one UDP socket per room, the metrics endpoint's connections, and
/// [`SLACK`].
pub fn descriptors_needed(config: &Config) -> usize {
    let caps = [
        (config.tcp_port.is_some(), config.max_conns),
        (config.wz.port.is_some(), config.wz.max_conns),
        (config.general.port.is_some(), config.general.max_conns),
        (config.metrics.is_some(), super::http::MAX_CONNS),
        (config.udp_port.is_some(), config.max_rooms),
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
