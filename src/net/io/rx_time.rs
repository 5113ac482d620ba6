//! When bytes reached a TCP socket: the kernel's receive timestamp (`SO_TIMESTAMPNS`).
//!
//! Two users, one reason: a time taken when a loop gets round to a socket also counts how
//! busy that loop was. lobbyd's TCP lobby starts a party's countdown from when its START_REQ
//! reached the socket (`net::rtype`), so a loop busy writing a burst, or descheduled, when the
//! request came in does not shift the party's whole schedule. The load
//! tool (`lobby-load tcp-cycle`, `write-floor`) stamps each COUNTDOWN the same way, so its own
//! busy passes do not count as the server's lateness. Over loopback the kernel stamps a
//! segment when the sender's `write` delivers it (the loopback device clears the transmit
//! time so that the receive path stamps it).
//!
//! Stamping is asked for on a socket with [`enable`]; a listener's setting is inherited by
//! every socket it accepts. A read's stamp is that of the last segment it consumed.
//!
//! The stamp is `CLOCK_REALTIME`; a [`Stamp`] becomes an [`Instant`] by its age, read from
//! both clocks back to back, when its user asks (the TCP lobby keeps one stamp of the reads of
//! a readiness event and converts that one, with the instant it takes anyway). A step of the
//! wall clock between the arrival and the read shifts that one stamp: a stamp "in the future"
//! counts as arriving now, and users bound how far back they take one (the TCP lobby:
//! [`crate::net::rtype`]'s `MAX_BACKDATE`).

use std::io::{self, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
use nix::sys::time::TimeSpec;

/// Asks the kernel to stamp every segment read from `socket`.
pub fn enable(socket: &impl AsFd) -> io::Result<()> {
    setsockopt(socket, sockopt::ReceiveTimestampns, &true).map_err(io::Error::from)
}

/// A control buffer for one [`read`]: room for one `SCM_TIMESTAMPNS` message.
pub fn control_buffer() -> Vec<u8> {
    nix::cmsg_space!(TimeSpec)
}

/// When a read's last byte reached the socket, as the kernel stamped it (wall clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp(TimeSpec);

impl Stamp {
    /// The stamp as an [`Instant`], by its age now.
    pub fn to_instant(self) -> Option<Instant> {
        self.at(Instant::now(), SystemTime::now())
    }

    /// The stamp as an [`Instant`], by its age at `now`, `wall` being the wall clock read
    /// with it (`None` for a stamp no `SystemTime` can hold).
    pub fn at(self, now: Instant, wall: SystemTime) -> Option<Instant> {
        let secs = u64::try_from(self.0.tv_sec()).ok()?;
        let nanos = u32::try_from(self.0.tv_nsec()).ok()?;
        let stamp = UNIX_EPOCH.checked_add(Duration::new(secs, nanos))?;
        // A stamp "in the future" (a clock step): age zero.
        let age = wall.duration_since(stamp).unwrap_or_default();
        Some(now.checked_sub(age).unwrap_or(now))
    }
}

/// Reads from `socket` into `buf` as `read(2)` would; with the read's length, its [`Stamp`]
/// (`None`: not stamped: [`enable`] was not called, or the kernel had not yet switched
/// receive stamping on, which it does asynchronously after the first `enable` on the
/// machine).
pub fn read(
    socket: &impl AsRawFd,
    buf: &mut [u8],
    control: &mut [u8],
) -> io::Result<(usize, Option<Stamp>)> {
    let mut iov = [IoSliceMut::new(buf)];
    let msg = recvmsg::<()>(
        socket.as_raw_fd(),
        &mut iov,
        Some(control),
        MsgFlags::empty(),
    )
    .map_err(io::Error::from)?;
    let mut stamp = None;
    // A truncated control buffer (it cannot be, it fits the one message) leaves no stamp.
    if let Ok(cmsgs) = msg.cmsgs() {
        for cmsg in cmsgs {
            if let ControlMessageOwned::ScmTimestampns(ts) = cmsg {
                stamp = Some(Stamp(ts));
            }
        }
    }
    Ok((msg.bytes, stamp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};

    /// Bytes written, then read after a pause: the stamp is the write's time (between the
    /// instants around the write), not the read's. The kernel switches receive stamping on
    /// asynchronously after the first `enable` on the machine, so a read may come unstamped
    /// at first: the test writes again until one is stamped (a few tries at most).
    #[test]
    fn stamps_when_the_bytes_arrived_not_when_they_were_read() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        enable(&server).unwrap();
        let mut buf = [0u8; 64];
        let mut control = control_buffer();
        for _ in 0..100 {
            let before = Instant::now();
            client.write_all(b"COUNTDOWN").unwrap();
            let after = Instant::now();
            std::thread::sleep(Duration::from_millis(50));
            let (len, stamp) = read(&server, &mut buf, &mut control).unwrap();
            let read_at = Instant::now();
            assert_eq!(&buf[..len], b"COUNTDOWN");
            let Some(stamp) = stamp.and_then(Stamp::to_instant) else {
                continue;
            };
            // The clocks are read twice to convert, so allow a little slack either side,
            // far less than the 50 ms pause that tells the write's time from the read's.
            let slack = Duration::from_millis(10);
            assert!(stamp + slack >= before, "stamp before the write");
            assert!(
                stamp <= after + slack,
                "stamp {:?} after the write",
                stamp - after
            );
            assert!(read_at - stamp >= Duration::from_millis(40));
            return;
        }
        panic!("no read was stamped in 100 tries");
    }

    /// A listener's stamping is inherited by the sockets it accepts (what the TCP lobby relies
    /// on: one `setsockopt` on the listener, none per connection).
    #[test]
    fn accepted_sockets_inherit_the_listeners_stamping() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        enable(&listener).unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let mut buf = [0u8; 8];
        let mut control = control_buffer();
        // Stamping switches on asynchronously after the first `enable` on the machine.
        for _ in 0..100 {
            client.write_all(b"x").unwrap();
            let (len, stamp) = read(&server, &mut buf, &mut control).unwrap();
            assert_eq!(len, 1);
            if stamp.is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no read of an accepted socket was stamped in 100 tries");
    }

    /// Without `enable`, reads work and carry no stamp.
    #[test]
    fn unstamped_without_enable() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        client.write_all(b"x").unwrap();
        let mut buf = [0u8; 8];
        let mut control = control_buffer();
        let (len, stamp) = read(&server, &mut buf, &mut control).unwrap();
        assert_eq!((len, stamp), (1, None));
    }
}
