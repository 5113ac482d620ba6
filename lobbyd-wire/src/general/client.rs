//! The general lobby's client-to-server messages (the message table of
//! `docs/protocols/general-lobby.md`, direction C).
//!
//! [`ClientRepr::parse`] reads a frame's parameters in order and borrows every string and byte
//! string from the frame; a server-to-client code is [`Error::WrongDirection`], a code of
//! neither direction [`Error::UnknownCode`] (the core answers both with ERROR 14). Each message
//! lists its parameters once, in `params`, for both [`ClientRepr::buffer_len`] and
//! [`ClientRepr::emit`] (used by test clients and the load generator).
//!
//! This module must not judge values the wire allows (name rules, text rules, limits): the
//! core answers those.

use super::params::{ParamCounter, ParamReader, ParamSink, ParamWriter};
use super::{code, emit_header, Error, Frame, HEADER_LEN, MAX_PING_PAYLOAD, TOKEN_LEN};

/// A message from client to server. Parameter letters as in the protocol document:
/// `i` i32, `u` u32, `s` string, `b` bytes; each diagram shows the parameters in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientRepr<'a> {
    /// SIGN_IN (0x03).
    ///
    /// ```text
    /// | s username | s password | b resume token (empty, or the 16 bytes of a WELCOME) |
    /// ```
    SignIn {
        /// The username.
        username: &'a str,
        /// The account password ("" without one).
        password: &'a str,
        /// The resume token; `None` for a new session.
        resume: Option<&'a [u8; TOKEN_LEN]>,
    },
    /// SET_MEMBER (0x12).
    ///
    /// ```text
    /// | u flags (low 16 bits are the client's) | s display name |
    /// ```
    SetMember {
        /// The member flags as sent; the core keeps only the low 16 bits.
        flags: u32,
        /// The display name.
        display_name: &'a str,
    },
    /// CHAT (0x20).
    ///
    /// ```text
    /// | i game id (0 = the whole lobby) | s text |
    /// ```
    Chat {
        /// The game whose players hear it, or 0 for everyone.
        game: i32,
        /// The text.
        text: &'a str,
    },
    /// PRIVATE_CHAT (0x22).
    ///
    /// ```text
    /// | i to member | s text |
    /// ```
    PrivateChat {
        /// The member who hears it.
        to: i32,
        /// The text.
        text: &'a str,
    },
    /// CREATE_GAME (0x30).
    ///
    /// ```text
    /// | u max players | s game type | s version | u flags | s name | s password |
    /// ```
    CreateGame {
        /// Seats, the creator's included.
        max_players: u32,
        /// The game type (any text; `tictactoe` is only hosted by the server).
        game_type: &'a str,
        /// The game's version text.
        version: &'a str,
        /// Game flags.
        flags: u32,
        /// The game's name.
        name: &'a str,
        /// The password joining needs while the game is locked.
        password: &'a str,
    },
    /// JOIN_REQUEST (0x33).
    ///
    /// ```text
    /// | i game id | i request code (the client's own number) | s password |
    /// ```
    JoinRequest {
        /// The game.
        game: i32,
        /// Echoed in the JOIN_RESPONSE.
        request: i32,
        /// The game's password, if it is locked.
        password: &'a str,
    },
    /// JOIN_ANSWER (0x35), from a game's owner.
    ///
    /// ```text
    /// | i ask id | u accept (0/1) | s reason |
    /// ```
    JoinAnswer {
        /// The JOIN_ASK's ask id.
        ask: i32,
        /// Whether the requester may join.
        accept: bool,
        /// Passed on in the JOIN_RESPONSE.
        reason: &'a str,
    },
    /// LEAVE_GAME (0x37).
    ///
    /// ```text
    /// | i game id |
    /// ```
    LeaveGame {
        /// The game.
        game: i32,
    },
    /// SET_GAME (0x38), owner only.
    ///
    /// ```text
    /// | i game id | u flags | s password |
    /// ```
    SetGame {
        /// The game.
        game: i32,
        /// The new game flags.
        flags: u32,
        /// The new password.
        password: &'a str,
    },
    /// SET_READY (0x39).
    ///
    /// ```text
    /// | i game id | u ready (0/1) |
    /// ```
    SetReady {
        /// The game.
        game: i32,
        /// The sender's new ready flag.
        ready: bool,
    },
    /// START_GAME (0x3A), owner only.
    ///
    /// ```text
    /// | i game id |
    /// ```
    StartGame {
        /// The game.
        game: i32,
    },
    /// KICK (0x3C), owner only.
    ///
    /// ```text
    /// | i game id | i member id | s reason |
    /// ```
    Kick {
        /// The game.
        game: i32,
        /// The player to remove.
        member: i32,
        /// Passed on in KICKED.
        reason: &'a str,
    },
    /// GIVE_OWNER (0x3E), owner only.
    ///
    /// ```text
    /// | i game id | i member id |
    /// ```
    GiveOwner {
        /// The game.
        game: i32,
        /// The player who becomes owner.
        member: i32,
    },
    /// STORE_DATA (0x40), owner only.
    ///
    /// ```text
    /// | i game id | s key | b value (empty deletes) |
    /// ```
    StoreData {
        /// The game.
        game: i32,
        /// The key.
        key: &'a str,
        /// The value; empty deletes the key.
        value: &'a [u8],
    },
    /// FETCH_DATA (0x41), owner only.
    ///
    /// ```text
    /// | i game id | s key |
    /// ```
    FetchData {
        /// The game.
        game: i32,
        /// The key.
        key: &'a str,
    },
    /// TO_OWNER (0x43).
    ///
    /// ```text
    /// | i game id | u app code | b body |
    /// ```
    ToOwner {
        /// The game.
        game: i32,
        /// The application's own message code.
        app_code: u32,
        /// Opaque to the server (except for games it hosts).
        body: &'a [u8],
    },
    /// TO_ALL (0x44).
    ///
    /// ```text
    /// | i game id | u app code | b body |
    /// ```
    ToAll {
        /// The game.
        game: i32,
        /// The application's own message code.
        app_code: u32,
        /// Opaque to the server.
        body: &'a [u8],
    },
    /// TO_PLAYER (0x45), owner only.
    ///
    /// ```text
    /// | i game id | i member id | u app code | b body |
    /// ```
    ToPlayer {
        /// The game.
        game: i32,
        /// The player it goes to.
        member: i32,
        /// The application's own message code.
        app_code: u32,
        /// Opaque to the server.
        body: &'a [u8],
    },
    /// LIST_GAMES (0x50).
    ///
    /// ```text
    /// | s game type ("" any) | u flags that must be clear | u min free seats |
    /// ```
    ListGames {
        /// Only games of this type; "" for any.
        game_type: &'a str,
        /// Only games with none of these flags set.
        flags_clear: u32,
        /// Only games with at least this many free seats.
        min_free: u32,
    },
    /// PING (0x60).
    ///
    /// ```text
    /// | b payload (at most 64 bytes) |
    /// ```
    Ping {
        /// Echoed in the PONG.
        payload: &'a [u8],
    },
}

impl<'a> ClientRepr<'a> {
    /// Parses a client frame; see the module doc for the errors.
    pub fn parse(frame: &Frame<&'a [u8]>) -> Result<ClientRepr<'a>, Error> {
        frame.check_len()?;
        let mut p = ParamReader::new(frame.into_payload());
        let repr = match frame.code() {
            code::SIGN_IN => ClientRepr::SignIn {
                username: p.str()?,
                password: p.str()?,
                resume: match p.bytes()? {
                    [] => None,
                    token => Some(token.try_into().map_err(|_| Error::BadSize)?),
                },
            },
            code::SET_MEMBER => ClientRepr::SetMember {
                flags: p.u32()?,
                display_name: p.str()?,
            },
            code::CHAT => ClientRepr::Chat {
                game: p.i32()?,
                text: p.str()?,
            },
            code::PRIVATE_CHAT => ClientRepr::PrivateChat {
                to: p.i32()?,
                text: p.str()?,
            },
            code::CREATE_GAME => ClientRepr::CreateGame {
                max_players: p.u32()?,
                game_type: p.str()?,
                version: p.str()?,
                flags: p.u32()?,
                name: p.str()?,
                password: p.str()?,
            },
            code::JOIN_REQUEST => ClientRepr::JoinRequest {
                game: p.i32()?,
                request: p.i32()?,
                password: p.str()?,
            },
            code::JOIN_ANSWER => ClientRepr::JoinAnswer {
                ask: p.i32()?,
                accept: p.flag()?,
                reason: p.str()?,
            },
            code::LEAVE_GAME => ClientRepr::LeaveGame { game: p.i32()? },
            code::SET_GAME => ClientRepr::SetGame {
                game: p.i32()?,
                flags: p.u32()?,
                password: p.str()?,
            },
            code::SET_READY => ClientRepr::SetReady {
                game: p.i32()?,
                ready: p.flag()?,
            },
            code::START_GAME => ClientRepr::StartGame { game: p.i32()? },
            code::KICK => ClientRepr::Kick {
                game: p.i32()?,
                member: p.i32()?,
                reason: p.str()?,
            },
            code::GIVE_OWNER => ClientRepr::GiveOwner {
                game: p.i32()?,
                member: p.i32()?,
            },
            code::STORE_DATA => ClientRepr::StoreData {
                game: p.i32()?,
                key: p.str()?,
                value: p.bytes()?,
            },
            code::FETCH_DATA => ClientRepr::FetchData {
                game: p.i32()?,
                key: p.str()?,
            },
            code::TO_OWNER => ClientRepr::ToOwner {
                game: p.i32()?,
                app_code: p.u32()?,
                body: p.bytes()?,
            },
            code::TO_ALL => ClientRepr::ToAll {
                game: p.i32()?,
                app_code: p.u32()?,
                body: p.bytes()?,
            },
            code::TO_PLAYER => ClientRepr::ToPlayer {
                game: p.i32()?,
                member: p.i32()?,
                app_code: p.u32()?,
                body: p.bytes()?,
            },
            code::LIST_GAMES => ClientRepr::ListGames {
                game_type: p.str()?,
                flags_clear: p.u32()?,
                min_free: p.u32()?,
            },
            code::PING => ClientRepr::Ping {
                payload: ping_payload(p.bytes()?)?,
            },
            other if code::SERVER.contains(&other) => return Err(Error::WrongDirection),
            _ => return Err(Error::UnknownCode),
        };
        p.finish()?;
        Ok(repr)
    }

    /// The message code.
    pub const fn code(&self) -> u32 {
        match self {
            ClientRepr::SignIn { .. } => code::SIGN_IN,
            ClientRepr::SetMember { .. } => code::SET_MEMBER,
            ClientRepr::Chat { .. } => code::CHAT,
            ClientRepr::PrivateChat { .. } => code::PRIVATE_CHAT,
            ClientRepr::CreateGame { .. } => code::CREATE_GAME,
            ClientRepr::JoinRequest { .. } => code::JOIN_REQUEST,
            ClientRepr::JoinAnswer { .. } => code::JOIN_ANSWER,
            ClientRepr::LeaveGame { .. } => code::LEAVE_GAME,
            ClientRepr::SetGame { .. } => code::SET_GAME,
            ClientRepr::SetReady { .. } => code::SET_READY,
            ClientRepr::StartGame { .. } => code::START_GAME,
            ClientRepr::Kick { .. } => code::KICK,
            ClientRepr::GiveOwner { .. } => code::GIVE_OWNER,
            ClientRepr::StoreData { .. } => code::STORE_DATA,
            ClientRepr::FetchData { .. } => code::FETCH_DATA,
            ClientRepr::ToOwner { .. } => code::TO_OWNER,
            ClientRepr::ToAll { .. } => code::TO_ALL,
            ClientRepr::ToPlayer { .. } => code::TO_PLAYER,
            ClientRepr::ListGames { .. } => code::LIST_GAMES,
            ClientRepr::Ping { .. } => code::PING,
        }
    }

    /// Lists the parameters, in order, into `sink`.
    fn params(&self, sink: &mut impl ParamSink) {
        match *self {
            ClientRepr::SignIn {
                username,
                password,
                resume,
            } => {
                sink.str(username);
                sink.str(password);
                sink.bytes(resume.map_or(&[][..], |token| &token[..]));
            }
            ClientRepr::SetMember {
                flags,
                display_name,
            } => {
                sink.u32(flags);
                sink.str(display_name);
            }
            ClientRepr::Chat { game: id, text } | ClientRepr::PrivateChat { to: id, text } => {
                sink.i32(id);
                sink.str(text);
            }
            ClientRepr::CreateGame {
                max_players,
                game_type,
                version,
                flags,
                name,
                password,
            } => {
                sink.u32(max_players);
                sink.str(game_type);
                sink.str(version);
                sink.u32(flags);
                sink.str(name);
                sink.str(password);
            }
            ClientRepr::JoinRequest {
                game,
                request,
                password,
            } => {
                sink.i32(game);
                sink.i32(request);
                sink.str(password);
            }
            ClientRepr::JoinAnswer {
                ask,
                accept,
                reason,
            } => {
                sink.i32(ask);
                sink.flag(accept);
                sink.str(reason);
            }
            ClientRepr::LeaveGame { game } | ClientRepr::StartGame { game } => sink.i32(game),
            ClientRepr::SetGame {
                game,
                flags,
                password,
            } => {
                sink.i32(game);
                sink.u32(flags);
                sink.str(password);
            }
            ClientRepr::SetReady { game, ready } => {
                sink.i32(game);
                sink.flag(ready);
            }
            ClientRepr::Kick {
                game,
                member,
                reason,
            } => {
                sink.i32(game);
                sink.i32(member);
                sink.str(reason);
            }
            ClientRepr::GiveOwner { game, member } => {
                sink.i32(game);
                sink.i32(member);
            }
            ClientRepr::StoreData { game, key, value } => {
                sink.i32(game);
                sink.str(key);
                sink.bytes(value);
            }
            ClientRepr::FetchData { game, key } => {
                sink.i32(game);
                sink.str(key);
            }
            ClientRepr::ToOwner {
                game,
                app_code,
                body,
            }
            | ClientRepr::ToAll {
                game,
                app_code,
                body,
            } => {
                sink.i32(game);
                sink.u32(app_code);
                sink.bytes(body);
            }
            ClientRepr::ToPlayer {
                game,
                member,
                app_code,
                body,
            } => {
                sink.i32(game);
                sink.i32(member);
                sink.u32(app_code);
                sink.bytes(body);
            }
            ClientRepr::ListGames {
                game_type,
                flags_clear,
                min_free,
            } => {
                sink.str(game_type);
                sink.u32(flags_clear);
                sink.u32(min_free);
            }
            ClientRepr::Ping { payload } => sink.bytes(payload),
        }
    }

    /// Length of the whole frame, header included.
    pub fn buffer_len(&self) -> usize {
        let mut counter = ParamCounter::default();
        self.params(&mut counter);
        HEADER_LEN + counter.len()
    }

    /// Writes the whole frame at the start of `buf` and returns its length. Never allocates.
    ///
    /// Panics if `buf` is shorter than [`ClientRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let len = self.buffer_len();
        let payload = emit_header(buf, self.code(), len - HEADER_LEN);
        self.params(&mut ParamWriter::new(payload));
        len
    }
}

/// PING and PONG carry at most [`MAX_PING_PAYLOAD`] bytes.
pub(super) fn ping_payload(payload: &[u8]) -> Result<&[u8], Error> {
    if payload.len() <= MAX_PING_PAYLOAD {
        Ok(payload)
    } else {
        Err(Error::BadSize)
    }
}
