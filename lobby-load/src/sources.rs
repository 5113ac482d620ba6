//! Where the load goes and where it comes from.
//!
//! Load targets loopback only (127.0.0.0/8, `::1`, and IPv4-mapped loopback) unless the
//! user passes `--allow-remote`. `--sources 127.0.0.2-127.0.0.254` spreads client sockets
//! over loopback source addresses, so per-IP limits of the server can be exercised (one
//! address) or avoided (many); on Linux every 127/8 address is local without configuration.
//! Without `--sources`, a run against an IPv4 loopback target takes a block of [`spread`]
//! addresses at a random place in 127.1.0.0-127.254.255.255, so the per-address state a
//! previous run left in the server (rate buckets, rooms in their reap grace, away members)
//! is not met again.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::{IpAddr, Ipv4Addr};

/// Most source addresses one run may use.
pub const MAX_SOURCES: usize = 65_536;

/// True for addresses on this machine's loopback.
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Parses `A-B` (an inclusive IPv4 range), a comma-separated list, or one address.
pub fn parse_sources(text: &str) -> Result<Vec<IpAddr>, String> {
    let bad = |what: &str| format!("--sources: {what} in '{text}'");
    if let Some((lo, hi)) = text.split_once('-') {
        let lo: Ipv4Addr = lo.trim().parse().map_err(|_| bad("bad first address"))?;
        let hi: Ipv4Addr = hi.trim().parse().map_err(|_| bad("bad last address"))?;
        let (lo, hi) = (u32::from(lo), u32::from(hi));
        if hi < lo {
            return Err(bad("the range is reversed"));
        }
        if (hi - lo) as usize >= MAX_SOURCES {
            return Err(bad("more than 65536 addresses"));
        }
        return Ok((lo..=hi).map(|n| IpAddr::V4(Ipv4Addr::from(n))).collect());
    }
    let list = text
        .split(',')
        .map(|part| {
            part.trim()
                .parse::<IpAddr>()
                .map_err(|_| bad("a bad address"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if list.len() > MAX_SOURCES {
        return Err(bad("more than 65536 addresses"));
    }
    Ok(list)
}

/// First and last address [`spread`] picks from: 127.0.0.0/16 (where 127.0.0.1 and local
/// resolvers live) and the 127.255.0.0/16 broadcast end are left alone.
const SPREAD_FIRST: u32 = u32::from_be_bytes([127, 1, 0, 0]);
const SPREAD_LAST: u32 = u32::from_be_bytes([127, 254, 255, 255]);

/// `count` consecutive loopback addresses (at most [`MAX_SOURCES`]) at a random place in
/// 127.1.0.0-127.254.255.255.
pub fn spread(count: usize) -> Vec<IpAddr> {
    let count = count.clamp(1, MAX_SOURCES) as u32;
    let places = SPREAD_LAST - SPREAD_FIRST + 1 - count;
    // std's randomly keyed hasher: a different block in every process.
    let first =
        SPREAD_FIRST + (RandomState::new().hash_one(std::process::id()) % u64::from(places)) as u32;
    (first..first + count)
        .map(|n| IpAddr::V4(Ipv4Addr::from(n)))
        .collect()
}

/// `A-B` for a run of addresses, `A` for one, `A, B, ...` for a few: how the one-line
/// summary of a run's adjustments names them.
pub fn describe(addrs: &[IpAddr]) -> String {
    match addrs {
        [] => "none".to_owned(),
        [one] => one.to_string(),
        [first, .., last] => format!("{} sources {first}-{last}", addrs.len()),
    }
}

/// Refuses non-loopback addresses unless `allow_remote`.
pub fn check_local(what: &str, ip: IpAddr, allow_remote: bool) -> Result<(), String> {
    if allow_remote || is_loopback(ip) {
        Ok(())
    } else {
        Err(format!(
            "{what} {ip} is not a loopback address; pass --allow-remote to load a remote host"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_lists_and_single_addresses() {
        let range = parse_sources("127.0.0.2-127.0.0.254").unwrap();
        assert_eq!(range.len(), 253);
        assert_eq!(range[0], IpAddr::from([127, 0, 0, 2]));
        assert_eq!(range[252], IpAddr::from([127, 0, 0, 254]));
        let across = parse_sources("127.0.0.255-127.0.1.1").unwrap();
        assert_eq!(across.len(), 3);
        assert_eq!(parse_sources("127.0.0.9").unwrap().len(), 1);
        assert_eq!(parse_sources("127.0.0.1, ::1").unwrap().len(), 2);
        assert!(parse_sources("127.0.0.9-127.0.0.1").is_err());
        assert!(parse_sources("127.0.0.0-127.255.255.255").is_err());
        assert!(parse_sources("localhost").is_err());
    }

    #[test]
    fn spread_blocks_are_consecutive_loopback_addresses() {
        let block = spread(300);
        assert_eq!(block.len(), 300);
        assert!(block.iter().all(|&ip| is_loopback(ip)));
        let first = match block[0] {
            IpAddr::V4(v4) => u32::from(v4),
            IpAddr::V6(_) => panic!("IPv4 expected"),
        };
        assert!(first >= SPREAD_FIRST && first + 299 <= SPREAD_LAST);
        assert_eq!(block[299], IpAddr::V4(Ipv4Addr::from(first + 299)));
        assert_eq!(spread(MAX_SOURCES + 5).len(), MAX_SOURCES);
        assert!(describe(&block).starts_with("300 sources 127."));
        assert_eq!(describe(&block[..1]), block[0].to_string());
    }

    #[test]
    fn only_loopback_unless_allowed() {
        assert!(check_local("target", "127.1.2.3".parse().unwrap(), false).is_ok());
        assert!(check_local("target", "::1".parse().unwrap(), false).is_ok());
        assert!(check_local("target", "::ffff:127.0.0.1".parse().unwrap(), false).is_ok());
        assert!(check_local("target", "10.0.0.1".parse().unwrap(), false).is_err());
        assert!(check_local("target", "0.0.0.0".parse().unwrap(), false).is_err());
        assert!(check_local("target", "10.0.0.1".parse().unwrap(), true).is_ok());
    }
}
