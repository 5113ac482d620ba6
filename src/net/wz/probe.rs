//! Reachability probes of Warzone game ports (docs/protocols/wz-lobby.md "Reachability
//! probe"), as the master-server core asks for them with `WzOutput::Probe`.
//!
//! Each probe is a non-blocking `mio::net::TcpStream::connect` registered in the loop's one
//! `Poll` (READABLE | WRITABLE under its own token): the connect completes or fails on a
//! readiness event, never by blocking. When asked it then sends the 8 zero bytes of
//! `PROBE_REQUEST` and reads at most the 12-byte `WZLR` answer. Every probe ends by its
//! deadline; finished probes are deregistered after the event batch. At most
//! [`MAX_PROBES`] run at once (the core already bounds them by its game table).

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::event::Event;
use mio::net::TcpStream;
use mio::{Interest, Registry};
use slab::Slab;

use crate::wire::wz::{parse_probe_reply, ProbeReply, PROBE_REPLY_LEN, PROBE_REQUEST};
use crate::wz::{ProbeId, ProbeResult};

use crate::net::token::Target;

/// Most probes in flight; beyond it a probe fails at once as timed out.
pub const MAX_PROBES: usize = 4096;

/// Where one probe is.
#[derive(Debug)]
enum Phase {
    /// The connect is in progress.
    Connecting,
    /// Connected, request sent; `len` bytes of the answer read.
    Reading {
        answer: [u8; PROBE_REPLY_LEN],
        len: usize,
    },
    /// Reported to the core; removed after the event batch.
    Done,
}

#[derive(Debug)]
struct Probe {
    stream: TcpStream,
    id: ProbeId,
    send_wzlr: bool,
    deadline: Instant,
    phase: Phase,
}

/// The probes in flight.
#[derive(Debug, Default)]
pub struct Probes {
    probes: Slab<Probe>,
    /// Finished probes to deregister after the event batch.
    finished: Vec<usize>,
}

impl Probes {
    /// Starts a probe of `addr`; a result that is known at once (connect refused
    /// synchronously, too many probes) is returned instead of being waited for.
    pub fn start(
        &mut self,
        registry: &Registry,
        now: Instant,
        timeout: Duration,
        id: ProbeId,
        addr: SocketAddr,
        send_wzlr: bool,
    ) -> Option<ProbeResult> {
        if self.probes.len() >= MAX_PROBES {
            return Some(ProbeResult::TimedOut);
        }
        let mut stream = match TcpStream::connect(addr) {
            Ok(stream) => stream,
            Err(e) => {
                log::debug!("probe {addr}: {e}");
                return Some(ProbeResult::Refused);
            }
        };
        let entry = self.probes.vacant_entry();
        let token = Target::WzProbe(entry.key()).token();
        if let Err(e) =
            registry.register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
        {
            log::warn!("probe {addr}: cannot register: {e}");
            return Some(ProbeResult::Refused);
        }
        entry.insert(Probe {
            stream,
            id,
            send_wzlr,
            deadline: now + timeout,
            phase: Phase::Connecting,
        });
        None
    }

    /// Handles readiness of probe `key`; returns the probe's result when it is known.
    pub fn ready(&mut self, key: usize, event: &Event) -> Option<(ProbeId, ProbeResult)> {
        let probe = self.probes.get_mut(key)?;
        let result = match probe.phase {
            Phase::Done => return None,
            Phase::Connecting => probe.on_connect_event(event),
            Phase::Reading { .. } => probe.read_answer(),
        }?;
        probe.phase = Phase::Done;
        self.finished.push(key);
        Some((probe.id, result))
    }

    /// Ends every probe whose deadline passed: not connected yet is `TimedOut`; connected
    /// without a whole answer is `Connected` (the connect test passed).
    pub fn expire(&mut self, now: Instant, mut report: impl FnMut(ProbeId, ProbeResult)) {
        for (key, probe) in self.probes.iter_mut() {
            if probe.deadline > now {
                continue;
            }
            let result = match probe.phase {
                Phase::Done => continue,
                Phase::Connecting => ProbeResult::TimedOut,
                Phase::Reading { .. } => ProbeResult::Connected,
            };
            probe.phase = Phase::Done;
            self.finished.push(key);
            report(probe.id, result);
        }
    }

    /// The earliest deadline of a running probe.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.probes
            .iter()
            .filter(|(_, probe)| !matches!(probe.phase, Phase::Done))
            .map(|(_, probe)| probe.deadline)
            .min()
    }

    /// Deregisters and closes the probes finished in this batch.
    pub fn remove_finished(&mut self, registry: &Registry) {
        for key in self.finished.drain(..) {
            if let Some(mut probe) = self.probes.try_remove(key) {
                let _ = registry.deregister(&mut probe.stream);
            }
        }
    }

    /// Probes running or awaiting removal.
    pub fn len(&self) -> usize {
        self.probes.len()
    }

    /// True if no probe is held.
    pub fn is_empty(&self) -> bool {
        self.probes.is_empty()
    }
}

impl Probe {
    /// The connect finished (or a spurious wake-up): decide, or move on to the request.
    fn on_connect_event(&mut self, event: &Event) -> Option<ProbeResult> {
        if let Ok(Some(_)) | Err(_) = self.stream.take_error() {
            return Some(ProbeResult::Refused);
        }
        match self.stream.peer_addr() {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotConnected => {
                // Still connecting, unless the event says the attempt is over.
                return (event.is_error() || event.is_write_closed())
                    .then_some(ProbeResult::Refused);
            }
            Err(_) => return Some(ProbeResult::Refused),
        }
        if !self.send_wzlr {
            return Some(ProbeResult::Connected);
        }
        // Eight bytes into a fresh socket's empty send buffer: a short write means the
        // host is not reading like a 4.x game, and the connect test already passed.
        match self.stream.write(&PROBE_REQUEST) {
            Ok(n) if n == PROBE_REQUEST.len() => {}
            _ => return Some(ProbeResult::Connected),
        }
        self.phase = Phase::Reading {
            answer: [0; PROBE_REPLY_LEN],
            len: 0,
        };
        self.read_answer()
    }

    /// Reads what the host answered so far.
    fn read_answer(&mut self) -> Option<ProbeResult> {
        let Phase::Reading { answer, len } = &mut self.phase else {
            return None;
        };
        loop {
            let Some(room) = answer.get_mut(*len..) else {
                return Some(ProbeResult::Connected);
            };
            if room.is_empty() {
                return Some(classify(&answer[..]));
            }
            match self.stream.read(room) {
                Ok(0) => return Some(classify(answer.get(..*len).unwrap_or(&[]))),
                Ok(n) => {
                    *len += n;
                    match parse_probe_reply(answer.get(..*len).unwrap_or(&[])) {
                        ProbeReply::NeedMore => {}
                        _ => return Some(classify(answer.get(..*len).unwrap_or(&[]))),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Some(ProbeResult::Connected),
            }
        }
    }
}

/// What a (complete or cut) answer proves: a `WZLR` game id, or just a working connect.
fn classify(answer: &[u8]) -> ProbeResult {
    match parse_probe_reply(answer) {
        ProbeReply::Wzlr { game_id, .. } => ProbeResult::Wzlr { game_id },
        ProbeReply::NeedMore | ProbeReply::NotWzlr => ProbeResult::Connected,
    }
}
