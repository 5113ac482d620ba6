//! The general lobby (issue 10, docs/protocols/general-lobby.md) over real loopback sockets
//! against an in-process server, asserting on exact bytes.
//!
//! Requests are emitted with the crate's `wire::general` emitters (a few are written by hand);
//! every reply is compared byte for byte with the expected frame, and each server message kind
//! is checked at least once against a golden frame written by hand (HELLO and CHALLENGE in
//! every greeting; WELCOME, MEMBER_INFO, SYNC_DONE, ERROR and PONG in `sign_in`; GAME_INFO in
//! `sign_in` and `games`; JOIN_ASK, JOIN_RESPONSE, GAME_STARTED, KICKED, DATA_VALUE,
//! GAME_CLOSED, GAME_LIST_END in `games`; MEMBER_LEFT in `resume`; CHAT_FROM, PRIVATE_FROM and
//! GAME_MESSAGE in `chat_relay`), so an emitter bug cannot hide behind a matching parser.
//!
//! Each test starts its own server on port 0 with the timeouts it needs as short as the flags
//! allow, and every wait is bounded. "Nothing else arrived" is proved by order where it can be
//! (a PING's PONG is the next frame), not by waiting.

mod common;

#[path = "general_lobby/chat_relay.rs"]
mod chat_relay;
#[path = "general_lobby/client.rs"]
mod client;
#[path = "general_lobby/crowd_limits.rs"]
mod crowd_limits;
#[path = "general_lobby/games.rs"]
mod games;
#[path = "general_lobby/hosted.rs"]
mod hosted;
#[path = "general_lobby/login_limits.rs"]
mod login_limits;
#[path = "general_lobby/resume.rs"]
mod resume;
#[path = "general_lobby/sign_in.rs"]
mod sign_in;
#[path = "general_lobby/transport.rs"]
mod transport;
