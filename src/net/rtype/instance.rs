//! Game-instance sockets: the port pool they are bound from, and the socket record.
//!
//! CREATE_ROOM binds a UDP socket on the next free port of `--instance-ports`, skipping ports
//! our own rooms hold and ports another process holds (the bind fails), round-robin from the
//! last port handed out so a just-released port is not handed out again at once (stale
//! datagrams from the previous room's players then go nowhere). `--instance-ports 0` lets the
//! operating system choose (tests).

use std::collections::HashSet;
use std::io;
use std::net::{IpAddr, SocketAddr};

use mio::net::UdpSocket;

use crate::rtype::RoomId;

/// Where instance ports come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortRange {
    /// Ports `lo..=hi`.
    Range {
        /// First port.
        lo: u16,
        /// Last port.
        hi: u16,
    },
    /// Port 0: the operating system picks one per socket.
    Ephemeral,
}

/// Hands out instance ports and binds their sockets.
#[derive(Debug)]
pub struct PortPool {
    range: PortRange,
    /// Offset into the range of the next port to try.
    cursor: u32,
    in_use: HashSet<u16>,
}

impl PortPool {
    /// A pool over `range`, nothing in use.
    pub fn new(range: PortRange) -> PortPool {
        PortPool {
            range,
            cursor: 0,
            in_use: HashSet::new(),
        }
    }

    /// Binds a non-blocking UDP socket on `ip` at the next free port, or `None` when every
    /// port of the range is taken (by us or by another process).
    pub fn bind(&mut self, ip: IpAddr) -> Option<(UdpSocket, u16)> {
        match self.range {
            PortRange::Ephemeral => {
                let socket = UdpSocket::bind(SocketAddr::new(ip, 0)).ok()?;
                let port = socket.local_addr().ok()?.port();
                self.in_use.insert(port);
                Some((socket, port))
            }
            PortRange::Range { lo, hi } => {
                let len = u32::from(hi) - u32::from(lo) + 1;
                for step in 0..len {
                    let offset = (self.cursor + step) % len;
                    let Ok(port) = u16::try_from(u32::from(lo) + offset) else {
                        continue;
                    };
                    if self.in_use.contains(&port) {
                        continue;
                    }
                    match UdpSocket::bind(SocketAddr::new(ip, port)) {
                        Ok(socket) => {
                            self.cursor = (offset + 1) % len;
                            self.in_use.insert(port);
                            return Some((socket, port));
                        }
                        Err(e) => log::debug!("instance port {port} unavailable: {e}"),
                    }
                }
                None
            }
        }
    }

    /// Returns `port` to the pool.
    pub fn release(&mut self, port: u16) {
        self.in_use.remove(&port);
    }

    /// Ports currently held by live instances.
    pub fn in_use(&self) -> usize {
        self.in_use.len()
    }

    /// How many ports the range has (`None` for ephemeral ports).
    pub fn capacity(&self) -> Option<usize> {
        match self.range {
            PortRange::Range { lo, hi } => Some(usize::from(hi) - usize::from(lo) + 1),
            PortRange::Ephemeral => None,
        }
    }
}

/// A bound instance socket and the room it serves.
#[derive(Debug)]
pub struct Instance {
    /// The socket, registered in the poll under `Target::Instance(key)`.
    pub socket: UdpSocket,
    /// The room this socket serves.
    pub room: RoomId,
    /// The bound port.
    pub port: u16,
}

/// Reads the local address of a socket for logs, tolerating failure.
pub fn local_addr(socket: &UdpSocket) -> io::Result<SocketAddr> {
    socket.local_addr()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    #[test]
    fn skips_ports_held_elsewhere_and_round_robins() {
        // Find two adjacent free ports by letting the OS pick one, then use a 3-port range
        // around it where the first port is held by a foreign socket.
        let foreign = std::net::UdpSocket::bind((LOCALHOST, 0)).unwrap();
        let lo = foreign.local_addr().unwrap().port();
        let Some(hi) = lo.checked_add(2) else { return };
        let mut pool = PortPool::new(PortRange::Range { lo, hi });
        let mut got = Vec::new();
        while let Some((_socket, port)) = pool.bind(LOCALHOST) {
            got.push(port);
            if got.len() > 3 {
                break;
            }
        }
        assert!(!got.contains(&lo), "bound a port another socket holds");
        assert!(got.len() <= 2);
        assert_eq!(pool.in_use(), got.len());
        for port in &got {
            pool.release(*port);
        }
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn ephemeral_ports_are_real() {
        let mut pool = PortPool::new(PortRange::Ephemeral);
        let (socket, port) = pool.bind(LOCALHOST).unwrap();
        assert_eq!(local_addr(&socket).unwrap().port(), port);
        assert_ne!(port, 0);
        assert_eq!(pool.capacity(), None);
    }
}
