//! The general lobby (docs/protocols/general-lobby.md) over real loopback sockets
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

mod chat_relay;
pub mod client;
mod crowd_limits;
mod example_client;
mod games;
mod hosted;
mod login_limits;
mod memory;
mod resume;
mod sign_in;
mod sign_in_under_attack;
mod transport;
mod websocket;
