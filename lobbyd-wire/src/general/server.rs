//! The general lobby's server-to-client messages (the message table of
//! `docs/protocols/general-lobby.md`, direction S).
//!
//! [`ServerRepr::emit`] writes into a caller's buffer and never allocates: GAME_INFO takes its
//! players and player flags as borrowed [`Words`] lists. [`ServerRepr::parse`] (for clients:
//! tests, the load generator) borrows every string, byte string and list from the frame; a
//! client-to-server code is [`Error::WrongDirection`], a code of neither direction
//! [`Error::UnknownCode`].
//!
//! This module must not decide who receives what: the core does.

use super::client::ping_payload;
use super::params::{ParamCounter, ParamReader, ParamSink, ParamWriter, Words};
use super::{code, emit_header, Error, ErrorCode, Frame, HEADER_LEN, TOKEN_LEN};

/// GAME_INFO's body: a game's whole state.
///
/// ```text
/// | i id | i owner | u max players | s name | s game type | s version | u flags |
/// | b players (i32 each, join order) | b player flags (u32 each, same order) |
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GameInfo<'a> {
    /// The game id.
    pub id: i32,
    /// The owner's member id; 0 for a game the server hosts.
    pub owner: i32,
    /// Seats.
    pub max_players: u32,
    /// The game's name.
    pub name: &'a str,
    /// The game type.
    pub game_type: &'a str,
    /// The version text.
    pub version: &'a str,
    /// Game flags.
    pub flags: u32,
    /// The players' member ids, in join order.
    pub players: Words<'a, i32>,
    /// Each player's flags, in the same order (so as many as players).
    pub player_flags: Words<'a, u32>,
}

/// A message from server to client. Parameter letters as in the protocol document:
/// `i` i32, `u` u32, `s` string, `b` bytes; each diagram shows the parameters in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerRepr<'a> {
    /// HELLO (0x01), sent on accept.
    ///
    /// ```text
    /// | s server name | u protocol version (1) |
    /// ```
    Hello {
        /// The server's name.
        server_name: &'a str,
        /// [`super::PROTOCOL_VERSION`].
        version: u32,
    },
    /// CHALLENGE (0x02).
    ///
    /// ```text
    /// | s text | u failed (0 first, 1 after a refused SIGN_IN) |
    /// ```
    Challenge {
        /// The prompt, or why the last SIGN_IN was refused.
        text: &'a str,
        /// Whether a SIGN_IN was just refused.
        failed: bool,
    },
    /// WELCOME (0x04).
    ///
    /// ```text
    /// | i member id | b resume token (16 bytes) |
    /// ```
    Welcome {
        /// The member's id.
        member: i32,
        /// The single-use token a SIGN_IN may carry to resume this member.
        token: &'a [u8; TOKEN_LEN],
    },
    /// ERROR (0x05).
    ///
    /// ```text
    /// | u error code | u code of the request it answers (0: none) | s text |
    /// ```
    Error {
        /// The error code.
        code: ErrorCode,
        /// The code of the request it answers.
        request: u32,
        /// Human-readable detail.
        text: &'a str,
    },
    /// SYNC_DONE (0x06): no parameters.
    SyncDone,
    /// MEMBER_INFO (0x10).
    ///
    /// ```text
    /// | i id | u flags | s username | s display name |
    /// ```
    MemberInfo {
        /// The member's id.
        id: i32,
        /// Member flags (low 16 bits the member's, high 16 the server's).
        flags: u32,
        /// The username.
        username: &'a str,
        /// The display name.
        display_name: &'a str,
    },
    /// MEMBER_LEFT (0x11).
    ///
    /// ```text
    /// | i id |
    /// ```
    MemberLeft {
        /// The member who left.
        id: i32,
    },
    /// CHAT_FROM (0x21).
    ///
    /// ```text
    /// | i game id (0 = the lobby) | i member id | s text |
    /// ```
    ChatFrom {
        /// The game whose players hear it, or 0.
        game: i32,
        /// The speaker.
        member: i32,
        /// The text.
        text: &'a str,
    },
    /// PRIVATE_FROM (0x23).
    ///
    /// ```text
    /// | i from member | s text |
    /// ```
    PrivateFrom {
        /// The speaker.
        from: i32,
        /// The text.
        text: &'a str,
    },
    /// GAME_INFO (0x31); see [`GameInfo`].
    GameInfo(GameInfo<'a>),
    /// GAME_CLOSED (0x32).
    ///
    /// ```text
    /// | i id |
    /// ```
    GameClosed {
        /// The game.
        id: i32,
    },
    /// JOIN_ASK (0x34), to the owner.
    ///
    /// ```text
    /// | i game id | i member id | i ask id |
    /// ```
    JoinAsk {
        /// The game.
        game: i32,
        /// Who asks.
        member: i32,
        /// The id JOIN_ANSWER names.
        ask: i32,
    },
    /// JOIN_RESPONSE (0x36), to the requester.
    ///
    /// ```text
    /// | i game id | i request code | u accepted (0/1) | s reason |
    /// ```
    JoinResponse {
        /// The game.
        game: i32,
        /// The JOIN_REQUEST's request code.
        request: i32,
        /// Whether the requester is now a player.
        accepted: bool,
        /// Why (the owner's reason, or the server's).
        reason: &'a str,
    },
    /// GAME_STARTED (0x3B).
    ///
    /// ```text
    /// | i game id | u flags |
    /// ```
    GameStarted {
        /// The game.
        game: i32,
        /// Its flags.
        flags: u32,
    },
    /// KICKED (0x3D).
    ///
    /// ```text
    /// | i game id | s reason |
    /// ```
    Kicked {
        /// The game.
        game: i32,
        /// The owner's reason.
        reason: &'a str,
    },
    /// DATA_VALUE (0x42).
    ///
    /// ```text
    /// | i game id | s key | b value (empty when absent) |
    /// ```
    DataValue {
        /// The game.
        game: i32,
        /// The key.
        key: &'a str,
        /// The value, empty when absent.
        value: &'a [u8],
    },
    /// GAME_MESSAGE (0x46).
    ///
    /// ```text
    /// | i game id | i from member (0: the server) | u app code | b body |
    /// ```
    GameMessage {
        /// The game.
        game: i32,
        /// The sender.
        from: i32,
        /// The application's own message code.
        app_code: u32,
        /// The body as sent.
        body: &'a [u8],
    },
    /// GAME_LIST_END (0x51).
    ///
    /// ```text
    /// | u games sent |
    /// ```
    GameListEnd {
        /// GAME_INFOs sent for the LIST_GAMES.
        count: u32,
    },
    /// PONG (0x61).
    ///
    /// ```text
    /// | b the PING's payload |
    /// ```
    Pong {
        /// The PING's payload.
        payload: &'a [u8],
    },
}

impl<'a> ServerRepr<'a> {
    /// Parses a server frame (client side); see the module doc for the errors.
    pub fn parse(frame: &Frame<&'a [u8]>) -> Result<ServerRepr<'a>, Error> {
        frame.check_len()?;
        let mut p = ParamReader::new(frame.into_payload());
        let repr = match frame.code() {
            code::HELLO => ServerRepr::Hello {
                server_name: p.str()?,
                version: p.u32()?,
            },
            code::CHALLENGE => ServerRepr::Challenge {
                text: p.str()?,
                failed: p.flag()?,
            },
            code::WELCOME => ServerRepr::Welcome {
                member: p.i32()?,
                token: p.bytes()?.try_into().map_err(|_| Error::BadSize)?,
            },
            code::ERROR => ServerRepr::Error {
                code: ErrorCode::from(p.u32()?),
                request: p.u32()?,
                text: p.str()?,
            },
            code::SYNC_DONE => ServerRepr::SyncDone,
            code::MEMBER_INFO => ServerRepr::MemberInfo {
                id: p.i32()?,
                flags: p.u32()?,
                username: p.str()?,
                display_name: p.str()?,
            },
            code::MEMBER_LEFT => ServerRepr::MemberLeft { id: p.i32()? },
            code::CHAT_FROM => ServerRepr::ChatFrom {
                game: p.i32()?,
                member: p.i32()?,
                text: p.str()?,
            },
            code::PRIVATE_FROM => ServerRepr::PrivateFrom {
                from: p.i32()?,
                text: p.str()?,
            },
            code::GAME_INFO => {
                let info = GameInfo {
                    id: p.i32()?,
                    owner: p.i32()?,
                    max_players: p.u32()?,
                    name: p.str()?,
                    game_type: p.str()?,
                    version: p.str()?,
                    flags: p.u32()?,
                    players: p.words()?,
                    player_flags: p.words()?,
                };
                if info.players.len() != info.player_flags.len() {
                    return Err(Error::BadValue);
                }
                ServerRepr::GameInfo(info)
            }
            code::GAME_CLOSED => ServerRepr::GameClosed { id: p.i32()? },
            code::JOIN_ASK => ServerRepr::JoinAsk {
                game: p.i32()?,
                member: p.i32()?,
                ask: p.i32()?,
            },
            code::JOIN_RESPONSE => ServerRepr::JoinResponse {
                game: p.i32()?,
                request: p.i32()?,
                accepted: p.flag()?,
                reason: p.str()?,
            },
            code::GAME_STARTED => ServerRepr::GameStarted {
                game: p.i32()?,
                flags: p.u32()?,
            },
            code::KICKED => ServerRepr::Kicked {
                game: p.i32()?,
                reason: p.str()?,
            },
            code::DATA_VALUE => ServerRepr::DataValue {
                game: p.i32()?,
                key: p.str()?,
                value: p.bytes()?,
            },
            code::GAME_MESSAGE => ServerRepr::GameMessage {
                game: p.i32()?,
                from: p.i32()?,
                app_code: p.u32()?,
                body: p.bytes()?,
            },
            code::GAME_LIST_END => ServerRepr::GameListEnd { count: p.u32()? },
            code::PONG => ServerRepr::Pong {
                payload: ping_payload(p.bytes()?)?,
            },
            other if code::CLIENT.contains(&other) => return Err(Error::WrongDirection),
            _ => return Err(Error::UnknownCode),
        };
        p.finish()?;
        Ok(repr)
    }

    /// The message code.
    pub const fn code(&self) -> u32 {
        match self {
            ServerRepr::Hello { .. } => code::HELLO,
            ServerRepr::Challenge { .. } => code::CHALLENGE,
            ServerRepr::Welcome { .. } => code::WELCOME,
            ServerRepr::Error { .. } => code::ERROR,
            ServerRepr::SyncDone => code::SYNC_DONE,
            ServerRepr::MemberInfo { .. } => code::MEMBER_INFO,
            ServerRepr::MemberLeft { .. } => code::MEMBER_LEFT,
            ServerRepr::ChatFrom { .. } => code::CHAT_FROM,
            ServerRepr::PrivateFrom { .. } => code::PRIVATE_FROM,
            ServerRepr::GameInfo(_) => code::GAME_INFO,
            ServerRepr::GameClosed { .. } => code::GAME_CLOSED,
            ServerRepr::JoinAsk { .. } => code::JOIN_ASK,
            ServerRepr::JoinResponse { .. } => code::JOIN_RESPONSE,
            ServerRepr::GameStarted { .. } => code::GAME_STARTED,
            ServerRepr::Kicked { .. } => code::KICKED,
            ServerRepr::DataValue { .. } => code::DATA_VALUE,
            ServerRepr::GameMessage { .. } => code::GAME_MESSAGE,
            ServerRepr::GameListEnd { .. } => code::GAME_LIST_END,
            ServerRepr::Pong { .. } => code::PONG,
        }
    }

    /// Lists the parameters, in order, into `sink`.
    fn params(&self, sink: &mut impl ParamSink) {
        match *self {
            ServerRepr::Hello {
                server_name,
                version,
            } => {
                sink.str(server_name);
                sink.u32(version);
            }
            ServerRepr::Challenge { text, failed } => {
                sink.str(text);
                sink.flag(failed);
            }
            ServerRepr::Welcome { member, token } => {
                sink.i32(member);
                sink.bytes(token);
            }
            ServerRepr::Error {
                code,
                request,
                text,
            } => {
                sink.u32(u32::from(code));
                sink.u32(request);
                sink.str(text);
            }
            ServerRepr::SyncDone => {}
            ServerRepr::MemberInfo {
                id,
                flags,
                username,
                display_name,
            } => {
                sink.i32(id);
                sink.u32(flags);
                sink.str(username);
                sink.str(display_name);
            }
            ServerRepr::MemberLeft { id } | ServerRepr::GameClosed { id } => sink.i32(id),
            ServerRepr::ChatFrom { game, member, text } => {
                sink.i32(game);
                sink.i32(member);
                sink.str(text);
            }
            ServerRepr::PrivateFrom { from, text } => {
                sink.i32(from);
                sink.str(text);
            }
            ServerRepr::GameInfo(ref info) => {
                sink.i32(info.id);
                sink.i32(info.owner);
                sink.u32(info.max_players);
                sink.str(info.name);
                sink.str(info.game_type);
                sink.str(info.version);
                sink.u32(info.flags);
                sink.words(&info.players);
                sink.words(&info.player_flags);
            }
            ServerRepr::JoinAsk { game, member, ask } => {
                sink.i32(game);
                sink.i32(member);
                sink.i32(ask);
            }
            ServerRepr::JoinResponse {
                game,
                request,
                accepted,
                reason,
            } => {
                sink.i32(game);
                sink.i32(request);
                sink.flag(accepted);
                sink.str(reason);
            }
            ServerRepr::GameStarted { game, flags } => {
                sink.i32(game);
                sink.u32(flags);
            }
            ServerRepr::Kicked { game, reason } => {
                sink.i32(game);
                sink.str(reason);
            }
            ServerRepr::DataValue { game, key, value } => {
                sink.i32(game);
                sink.str(key);
                sink.bytes(value);
            }
            ServerRepr::GameMessage {
                game,
                from,
                app_code,
                body,
            } => {
                sink.i32(game);
                sink.i32(from);
                sink.u32(app_code);
                sink.bytes(body);
            }
            ServerRepr::GameListEnd { count } => sink.u32(count),
            ServerRepr::Pong { payload } => sink.bytes(payload),
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
    /// Panics if `buf` is shorter than [`ServerRepr::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) -> usize {
        let len = self.buffer_len();
        let payload = emit_header(buf, self.code(), len - HEADER_LEN);
        self.params(&mut ParamWriter::new(payload));
        len
    }
}
