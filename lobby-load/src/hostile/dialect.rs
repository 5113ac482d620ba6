//! What the hostile crowd ([`super::crowd`]) sends to each TCP front end, built with the
//! crate's own wire modules: the opening of a slowloris connection, the sign-in of a member,
//! the request a never-reading member repeats, a flooder's burst, near-valid streams, and how a
//! party member's sign-in is read. Protocols: docs/protocols/tcp-lobby.md, wz-lobby.md,
//! wz-v4.md, general-lobby.md, and the metrics endpoint's HTTP/1.x (docs/OPERATING.md, "The
//! status page and `/metrics`").
//!
//! Near-valid streams never sign anyone in: a CONNECT_REQ or SIGN_IN that a mutation left
//! valid gets a control character in its name, so attackers never take party seats, lobby
//! members or rooms from the well-behaved clients (that would be a full lobby, not a defect).

use lobbyd::wire::general::{self, ClientRepr as GeneralRequest, ServerRepr as GeneralReply};
use lobbyd::wire::tcp_lobby::{self, name_field, validate_name, ClientRepr as TcpRequest};

use super::super::general_client::{self, SignInStep};
use super::super::options::Mode;
use super::super::tcp_engine::Step;
use super::super::tcp_modes;
use super::super::wz_modes::host_gamestruct;
use super::{mutate, HostileRng};

/// READY_REQs a TCP lobby flooder writes at once: 56 KB, the TCP lobby's party-flood burst.
pub const TCP_FLOOD_FRAMES: usize = 14_000;
/// Chat lines, then PINGs, a general lobby flooder writes at once.
pub const GENERAL_FLOOD_FRAMES: usize = 1_000;
/// The v4 protocol's opening: `version\0` and the big-endian version 4.
const WZ_V4_OPENING: &[u8] = b"version\0\0\0\0\x04";
/// A general lobby slowloris declares a frame this long, then trickles its payload.
const GENERAL_SLOW_LEN: u32 = 16_384;
/// Longest near-valid stream.
pub const MAX_NEAR_VALID: usize = 8 * 1024;

/// A TCP front end of lobbyd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Front {
    /// The R-Type TCP lobby (`hostile-tcp`).
    TcpLobby,
    /// The Warzone 2100 master server, legacy and v4 (`hostile-wz`).
    Wz,
    /// The general lobby (`hostile-lobby`).
    General,
    /// The operators' metrics endpoint (`hostile-http`).
    Http,
}

/// Where a party member's sign-in is, as read from the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignIn {
    /// Not signed in yet.
    Pending,
    /// Signed in (CONNECT_ACK, WELCOME).
    Done,
    /// Refused: why.
    Refused(&'static str),
}

impl Front {
    /// The front end a `hostile-*` mode attacks (`None` for `hostile-udp` and other modes).
    pub fn of(mode: Mode) -> Option<Front> {
        match mode {
            Mode::HostileTcp => Some(Front::TcpLobby),
            Mode::HostileWz => Some(Front::Wz),
            Mode::HostileLobby => Some(Front::General),
            Mode::HostileHttp => Some(Front::Http),
            _ => None,
        }
    }

    /// True when members form parties or a lobby, so one can flood the others.
    pub fn has_party(self) -> bool {
        matches!(self, Front::TcpLobby | Front::General)
    }

    /// A slowloris connection's first bytes: a frame or request head left unfinished.
    pub fn slow_opening(self, out: &mut Vec<u8>) {
        match self {
            // The header of an oversized frame, then nothing more.
            Front::TcpLobby => out.extend_from_slice(&[0x10, 0xff, 0xff]),
            Front::Wz => out.extend_from_slice(b"addg\0"),
            Front::General => {
                out.extend_from_slice(&3u32.to_le_bytes());
                out.extend_from_slice(&GENERAL_SLOW_LEN.to_le_bytes());
            }
            Front::Http => out.extend_from_slice(b"GET /metrics HTTP/1.1\r\nX-Slow: "),
        }
    }

    /// The byte a slowloris connection adds every second (never one that completes an
    /// HTTP head).
    pub fn trickle(self, rng: &mut HostileRng) -> u8 {
        match self {
            Front::Http => b'a',
            _ => rng.next_u64() as u8,
        }
    }

    /// Member `n`'s sign-in (TCP lobby, general lobby), a v4 opening (Warzone) or a request
    /// (metrics): what a never-reading or party connection writes first.
    pub fn sign_in(self, n: u64, out: &mut Vec<u8>) {
        let name = format!("h{:x}-{n}", std::process::id());
        match self {
            Front::TcpLobby => {
                let field = name_field(&name);
                tcp_modes::push(out, TcpRequest::ConnectReq { name: &field });
            }
            Front::General => general_client::push(out, &general_client::sign_in(&name)),
            Front::Wz => out.extend_from_slice(WZ_V4_OPENING),
            Front::Http => out.extend_from_slice(b"GET /metrics HTTP/1.1\r\n\r\n"),
        }
    }

    /// The request a signed-in connection that never reads repeats (its `step`-th), each
    /// answered by the server: output that piles up for a reader that never comes.
    pub fn output_request(self, step: u32, out: &mut Vec<u8>) {
        match self {
            Front::TcpLobby => tcp_modes::push(
                out,
                TcpRequest::ReadyReq {
                    ready: step % 2 == 0,
                },
            ),
            Front::General => general_client::push(
                out,
                &GeneralRequest::Ping {
                    payload: &[0x5a; general::MAX_PING_PAYLOAD],
                },
            ),
            Front::Wz => v4_frame(
                out,
                format!(r#"{{"method":"list","id":{step}}}"#).as_bytes(),
            ),
            // One request per connection: nothing more to ask.
            Front::Http => {}
        }
    }

    /// A flooder's burst: 14,000 READY_REQs (TCP lobby), or chat lines
    /// and PINGs (general lobby), in one write.
    pub fn flood(self, out: &mut Vec<u8>) {
        match self {
            Front::TcpLobby => {
                for i in 0..TCP_FLOOD_FRAMES {
                    tcp_modes::push(out, TcpRequest::ReadyReq { ready: i % 2 == 0 });
                }
            }
            Front::General => {
                let line = "flood ".repeat(10);
                for _ in 0..GENERAL_FLOOD_FRAMES {
                    general_client::push(
                        out,
                        &GeneralRequest::Chat {
                            game: 0,
                            text: &line,
                        },
                    );
                }
                for _ in 0..GENERAL_FLOOD_FRAMES {
                    general_client::push(out, &GeneralRequest::Ping { payload: b"flood" });
                }
            }
            Front::Wz | Front::Http => {}
        }
    }

    /// Reads a party member's sign-in from the server's bytes (`step` carries the general
    /// lobby's progress): the bytes consumed and where the sign-in is.
    pub fn read_sign_in(self, step: &mut SignInStep, data: &[u8]) -> (usize, SignIn) {
        let mut verdict = SignIn::Pending;
        let (used, end) = match self {
            Front::TcpLobby => tcp_modes::each_frame(data, |repr| match repr {
                tcp_lobby::ServerRepr::ConnectAck { .. } => {
                    verdict = SignIn::Done;
                    Some(Step::Done)
                }
                tcp_lobby::ServerRepr::Error { code, .. } => {
                    verdict = SignIn::Refused(tcp_modes::error_kind(code));
                    Some(Step::Done)
                }
                _ => None,
            }),
            Front::General => general_client::each_frame(data, |repr| {
                let welcome = matches!(repr, GeneralReply::Welcome { .. });
                match general_client::sign_in_frame(step, repr) {
                    Err(kind) => {
                        verdict = SignIn::Refused(kind);
                        Some(Step::Done)
                    }
                    Ok(_) if welcome => {
                        verdict = SignIn::Done;
                        Some(Step::Done)
                    }
                    Ok(_) => None,
                }
            }),
            Front::Wz | Front::Http => return (data.len(), SignIn::Done),
        };
        if let Step::Fail(kind) = end {
            verdict = SignIn::Refused(kind);
        }
        (used, verdict)
    }

    /// A near-valid stream: one to eight messages of this front end's protocol, each damaged
    /// half of the time, into `out`.
    pub fn near_valid(self, rng: &mut HostileRng, out: &mut Vec<u8>) {
        let mut msg = Vec::with_capacity(256);
        for _ in 0..=rng.below(8) {
            msg.clear();
            match self {
                Front::TcpLobby => tcp_message(rng, &mut msg),
                Front::General => general_message(rng, &mut msg),
                Front::Wz => wz_message(rng, &mut msg),
                Front::Http => http_message(rng, &mut msg),
            }
            if rng.chance(50) {
                mutate(rng, &mut msg, MAX_NEAR_VALID);
            }
            if out.len() + msg.len() > MAX_NEAR_VALID {
                break;
            }
            out.extend_from_slice(&msg);
        }
        self.spoil_sign_ins(out);
    }

    /// Every CONNECT_REQ or SIGN_IN of `stream` that would sign in, cut as the server cuts
    /// frames (a mutation can make one out of the bytes of two), gets a control character in
    /// its name.
    fn spoil_sign_ins(self, stream: &mut [u8]) {
        let mut at = 0;
        while at < stream.len() {
            let rest = &stream[at..];
            let (consumed, name_at) = match self {
                Front::TcpLobby => match tcp_lobby::next_frame(rest) {
                    tcp_lobby::Next::Frame { frame, consumed } => {
                        let signs_in = matches!(
                            TcpRequest::parse(&frame),
                            Ok(TcpRequest::ConnectReq { name }) if validate_name(name).is_ok()
                        );
                        (consumed, signs_in.then_some(tcp_lobby::HEADER_LEN))
                    }
                    // The server skips an oversized frame's payload and reads on.
                    tcp_lobby::Next::Oversized { declared, .. } => {
                        (tcp_lobby::HEADER_LEN + declared, None)
                    }
                    tcp_lobby::Next::NeedMore => return,
                },
                Front::General => match general::next_frame(rest, GENERAL_SLOW_LEN as usize) {
                    general::Next::Frame { frame, consumed } => {
                        let signs_in = matches!(
                            GeneralRequest::parse(&frame),
                            Ok(GeneralRequest::SignIn { username, .. }) if !username.is_empty()
                        );
                        // The username's first byte: after its parameter's kind and length.
                        (consumed, signs_in.then_some(general::HEADER_LEN + 3))
                    }
                    // The server closes the connection after an oversized header.
                    general::Next::Oversized { .. } | general::Next::NeedMore => return,
                },
                Front::Wz | Front::Http => return,
            };
            if let Some(offset) = name_at {
                stream[at + offset] = 0x07;
            }
            at += consumed;
        }
    }
}

/// One v4 frame (big-endian length, then the body) into `out`.
fn v4_frame(out: &mut Vec<u8>, body: &[u8]) {
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
}

/// A random printable name of up to `most` characters (possibly empty).
fn random_name(rng: &mut HostileRng, most: usize) -> String {
    (0..rng.below(most + 1))
        .map(|_| char::from(b'!' + rng.below(94) as u8))
        .collect()
}

fn tcp_message(rng: &mut HostileRng, out: &mut Vec<u8>) {
    match rng.below(6) {
        0 => {
            let field = name_field(&random_name(rng, 40));
            tcp_modes::push(out, TcpRequest::ConnectReq { name: &field });
        }
        1 => tcp_modes::push(
            out,
            TcpRequest::ReadyReq {
                ready: rng.chance(50),
            },
        ),
        2 => tcp_modes::push(out, TcpRequest::StartReq),
        // A server-to-client or unknown type with a short payload.
        3 => {
            let len = rng.below(40);
            out.extend_from_slice(&[0x11 + rng.below(0xef) as u8, len as u8, 0]);
            rng.extend(out, len);
        }
        // An oversized frame's header and part of its payload.
        4 => {
            out.extend_from_slice(&[0x10, 0xff, 0xff]);
            let len = rng.below(512);
            rng.extend(out, len);
        }
        _ => {
            let len = rng.below(64);
            rng.extend(out, len);
        }
    }
}

fn general_message(rng: &mut HostileRng, out: &mut Vec<u8>) {
    let name = random_name(rng, 30);
    let text = random_name(rng, 200);
    let msg = match rng.below(8) {
        0 => general_client::sign_in(&name),
        1 => GeneralRequest::Chat {
            game: rng.below(4) as i32,
            text: &text,
        },
        2 => GeneralRequest::CreateGame {
            max_players: rng.below(10) as u32,
            game_type: &name,
            version: "1",
            flags: rng.next_u64() as u32,
            name: &text,
            password: "",
        },
        3 => GeneralRequest::JoinRequest {
            game: rng.below(16) as i32,
            request: 1,
            password: &name,
        },
        4 => GeneralRequest::ListGames {
            game_type: &name,
            flags_clear: 0,
            min_free: 0,
        },
        5 => GeneralRequest::Ping {
            payload: text.as_bytes().get(..text.len().min(80)).unwrap_or(&[]),
        },
        // A header with any code and a declared length, maybe over the limit.
        6 => {
            out.extend_from_slice(&(rng.below(0x70) as u32).to_le_bytes());
            let len = if rng.chance(20) {
                rng.next_u64() as u32
            } else {
                rng.below(64) as u32
            };
            out.extend_from_slice(&len.to_le_bytes());
            rng.extend(out, (len as usize).min(64));
            return;
        }
        _ => {
            let len = rng.below(64);
            rng.extend(out, len);
            return;
        }
    };
    general_client::push(out, &msg);
}

fn wz_message(rng: &mut HostileRng, out: &mut Vec<u8>) {
    match rng.below(7) {
        0 => out.extend_from_slice(b"list\0"),
        1 => out.extend_from_slice(b"gaId\0"),
        2 => out.extend_from_slice(b"keep\0"),
        3 => {
            out.extend_from_slice(b"addg\0");
            let word = rng.next_u64();
            out.extend_from_slice(&host_gamestruct(word as u32, (word >> 32) as u16));
        }
        4 => {
            out.extend_from_slice(WZ_V4_OPENING);
            let id = rng.below(1000);
            let body = match rng.below(3) {
                0 => format!(r#"{{"method":"list","id":{id}}}"#),
                1 => format!(r#"{{"method":"addGame","params":{{"gameId":{id}}},"id":{id}}}"#),
                _ => format!(r#"{{"method":"{}","id":{id}}}"#, random_name(rng, 12)),
            };
            v4_frame(out, body.as_bytes());
        }
        5 => {
            out.extend_from_slice(&random_name(rng, 12).into_bytes());
            out.push(0);
        }
        _ => {
            let len = rng.below(64);
            rng.extend(out, len);
        }
    }
}

fn http_message(rng: &mut HostileRng, out: &mut Vec<u8>) {
    let path = ["/metrics", "/rooms", "/wz/games", "/", "/x"][rng.below(5)];
    let method = ["GET", "POST", "HEAD", "BREW"][rng.below(4)];
    let text = format!(
        "{method} {path}{} HTTP/1.{}\r\nHost: {}\r\n\r\n",
        random_name(rng, 20),
        rng.below(2),
        random_name(rng, 30)
    );
    out.extend_from_slice(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_valid_streams_never_sign_in() {
        let mut rng = HostileRng::with_seed(3);
        for front in [Front::TcpLobby, Front::General, Front::Wz, Front::Http] {
            for _ in 0..2000 {
                let mut out = Vec::new();
                front.near_valid(&mut rng, &mut out);
                assert!(out.len() <= MAX_NEAR_VALID);
                let mut at = 0;
                while let Some(rest) = out.get(at..).filter(|r| !r.is_empty()) {
                    at += match front {
                        Front::TcpLobby => match tcp_lobby::next_frame(rest) {
                            tcp_lobby::Next::Frame { frame, consumed } => {
                                if let Ok(TcpRequest::ConnectReq { name }) =
                                    TcpRequest::parse(&frame)
                                {
                                    assert!(validate_name(name).is_err(), "{out:02x?}");
                                }
                                consumed
                            }
                            tcp_lobby::Next::Oversized { declared, .. } => {
                                tcp_lobby::HEADER_LEN + declared
                            }
                            tcp_lobby::Next::NeedMore => break,
                        },
                        Front::General => match general::next_frame(rest, 16_384) {
                            general::Next::Frame { frame, consumed } => {
                                if let Ok(GeneralRequest::SignIn { username, .. }) =
                                    GeneralRequest::parse(&frame)
                                {
                                    assert!(
                                        username.is_empty() || username.starts_with('\u{7}'),
                                        "{out:02x?}"
                                    );
                                }
                                consumed
                            }
                            _ => break,
                        },
                        Front::Wz | Front::Http => break,
                    };
                }
            }
        }
    }

    #[test]
    fn sign_in_is_read_from_the_replies() {
        let mut step = SignInStep::default();
        let mut bytes = [0u8; 64];
        let len = tcp_lobby::ServerRepr::ConnectAck { hash: 9, number: 1 }.emit(&mut bytes);
        assert_eq!(
            Front::TcpLobby.read_sign_in(&mut step, &bytes[..len]),
            (len, SignIn::Done)
        );
        assert_eq!(
            Front::TcpLobby.read_sign_in(&mut step, &bytes[..len - 1]),
            (0, SignIn::Pending)
        );
        let mut flood = Vec::new();
        Front::TcpLobby.flood(&mut flood);
        assert_eq!(flood.len(), TCP_FLOOD_FRAMES * 4);
    }
}
