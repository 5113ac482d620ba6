//! Telling a TCP lobby with a raised `--conn-rate` from one on lobbyd's default: the
//! connection modes (`tcp-join`, `tcp-idle`, `tcp-cycle`) keep each source address
//! within the default rate, 5 new connections a minute, so that they work
//! against `make run`. Against a server started with a raised rate, as
//! the C baseline servers' side-by-side script starts it (and names 253 sources, so no `--caps`
//! flag can be added there), that pacing would cap the run at about 500 joins a second, a
//! number that measures the tool and not the server.
//!
//! Before such a run, one address that the run does not use opens the default rate plus one
//! connections in a row, each a CONNECT_REQ answered by CONNECT_ACK. lobbyd closes a
//! connection over its rate at once, without a word: if every one was welcomed, the server's
//! rate is above the default and the run is not paced by it (the other caps stay). Costs a
//! few milliseconds on loopback; a refused probe costs the server one counted refusal.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use lobbyd::wire::tcp_lobby::{ClientRepr, ServerRepr};

use super::tcp_engine::{connect_blocking, Cut};
use super::tcp_modes::{cut_frame, player_name, push, MAX_FRAME};

/// The addresses a probe may use, first one the run does not: the top of 127.0.0.0/8,
/// which the default spread reaches last.
const PROBE_SOURCES: [Ipv4Addr; 4] = [
    Ipv4Addr::new(127, 255, 255, 253),
    Ipv4Addr::new(127, 255, 255, 252),
    Ipv4Addr::new(127, 255, 255, 251),
    Ipv4Addr::new(127, 255, 255, 250),
];

/// What a probe connection got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// CONNECT_ACK: the server took the connection.
    Welcomed,
    /// Closed, reset or answered with an ERROR_MSG before any CONNECT_ACK.
    Refused,
}

/// The address a probe uses for a run from `sources` against `target`: a loopback IPv4
/// address outside the run's, or none (a remote or IPv6 target has no spare source).
pub fn probe_source(target: SocketAddr, sources: &[IpAddr]) -> Option<IpAddr> {
    if !matches!(target.ip(), IpAddr::V4(v4) if v4.is_loopback()) {
        return None;
    }
    PROBE_SOURCES
        .iter()
        .map(|&a| IpAddr::V4(a))
        .find(|a| !sources.contains(a))
}

/// Opens `count` connections in a row from `source` and returns how many were welcomed
/// before the first refusal (it stops there: the next ones would be refused too).
pub fn welcomed_in_a_row(
    source: IpAddr,
    target: SocketAddr,
    count: usize,
    wait: Duration,
) -> io::Result<usize> {
    for k in 0..count {
        if join_once(source, target, k, wait)? == Answer::Refused {
            return Ok(k);
        }
    }
    Ok(count)
}

/// One probe connection: CONNECT_REQ, then what came back first.
fn join_once(source: IpAddr, target: SocketAddr, k: usize, wait: Duration) -> io::Result<Answer> {
    let mut stream = connect_blocking(source, target, wait)?;
    let mut request = Vec::new();
    let name = player_name(usize::MAX - k);
    push(&mut request, ClientRepr::ConnectReq { name: &name });
    if stream.write_all(&request).is_err() {
        return Ok(Answer::Refused);
    }
    let deadline = Instant::now() + wait;
    let mut buf = vec![0u8; MAX_FRAME];
    let mut have = 0;
    loop {
        match cut_frame(&buf[..have]) {
            Cut::Frame(ServerRepr::ConnectAck { .. }, _) => return Ok(Answer::Welcomed),
            Cut::Frame(..) | Cut::Fail(_) => return Ok(Answer::Refused),
            Cut::NeedMore => {}
        }
        if have == buf.len() || Instant::now() >= deadline {
            return Ok(Answer::Refused);
        }
        match stream.read(&mut buf[have..]) {
            Ok(0) => return Ok(Answer::Refused),
            Ok(n) => have += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset
                        | io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(Answer::Refused)
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_source_is_outside_the_run_and_only_on_ipv4_loopback() {
        let target: SocketAddr = "127.0.0.1:4242".parse().unwrap();
        let first = IpAddr::V4(PROBE_SOURCES[0]);
        assert_eq!(probe_source(target, &[]), Some(first));
        assert_eq!(
            probe_source(target, &[first]),
            Some(IpAddr::V4(PROBE_SOURCES[1]))
        );
        let all: Vec<IpAddr> = PROBE_SOURCES.iter().map(|&a| IpAddr::V4(a)).collect();
        assert_eq!(probe_source(target, &all), None);
        assert_eq!(probe_source("[::1]:4242".parse().unwrap(), &[]), None);
        assert_eq!(probe_source("192.0.2.1:4242".parse().unwrap(), &[]), None);
    }
}
