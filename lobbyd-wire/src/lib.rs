//! lobbyd's wire formats, one module per protocol (plus the datagram framing two of them
//! share): bytes in, typed messages out, and back. The server re-exports this crate as
//! `lobbyd::wire`; a Rust client can depend on it alone.
//!
//! Every module follows one of two families.
//!
//! **(a) Fixed-layout messages**, smoltcp's `wire` pattern: a view over the bytes whose
//! `new_checked` validates every length once, after which no accessor panics or reads past
//! the buffer; a plain `Repr` with `parse`, `buffer_len` and `emit`, where `parse` borrows the
//! variable-length parts from the buffer and never allocates, and `emit` writes into a buffer
//! (or a view over one) that the caller sized with `buffer_len`. Offsets are named constants
//! in each module's private `mod field`, the ranges typed [`Field`].
//! - [`frame`]: the R-Type datagram framing (header, payload, CRC-32) shared by the next two,
//!   as the view [`frame::Frame`].
//! - [`udp_upstream`]: the upstream R-Type program's spelling of the UDP room lobby (its own
//!   17-byte framing, `udp_upstream::Frame`, and `RequestRepr`/`ReplyRepr`), and `sniff`,
//!   which tells a datagram's dialect from its first four bytes.
//! - [`directory`]: the room table a node of a group publishes in the directory (a header
//!   and ROOM_LIST's own records), `NodeRoomsRepr` with `parse`/`buffer_len`/`emit`.
//! - [`udp_lobby`] and [`instance`]: `RequestRepr`/`ReplyRepr` and `ClientRepr`/`ServerRepr`
//!   on that framing. Their `parse` takes the datagram, `&[u8]`, not a `&Frame`: a datagram
//!   is exactly one message, so `parse` opens it itself ([`frame::open`]: length, CRC-32,
//!   direction byte, no compression) and these checks run once, where a `&Frame` argument
//!   could be an unchecked view, whose accessors panic on a short buffer.
//! - [`tcp_lobby`]: the view `tcp_lobby::Frame` (whose read accessors are total even
//!   unchecked) and `ClientRepr::parse(&Frame)`/`ServerRepr::parse(&Frame)`; frames are cut
//!   from a stream by `next_frame`, which refuses an oversized frame from its header alone.
//! - [`wz::gamestruct`]: the 814-byte Warzone GAMESTRUCT, the view `GameStruct` and
//!   `GameStructRepr::parse(&GameStruct)`, `emit` into a `GameStruct`.
//! - [`general`]: the general lobby's `code u32 | length u32 | parameters` frames
//!   (little-endian), the view `general::Frame` and `ClientRepr::parse(&Frame)`/
//!   `ServerRepr::parse(&Frame)` over a total, borrowing parameter reader
//!   ([`general::params`]); frames are cut from a stream by `general::next_frame`, which
//!   refuses an oversized frame from its 8 header bytes alone.
//! - [`tcp_upstream`]: the upstream R-Type client's dialect of the TCP lobby (`u32`
//!   little-endian length frames, room messages before the party ones), the view
//!   `tcp_upstream::Frame` and `ClientRepr`/`ServerRepr`, cut by `tcp_upstream::next_frame`
//!   (a length of 0 or over the limit refused from its 4 bytes alone); `tcp_upstream::sniff`
//!   tells it from the RFC dialect on a connection's first 5 bytes at most.
//!
//! **(b) Stream and document protocols**: total decoders over a connection's read buffer,
//! each with a stated bound on what a peer can make it wait for, copy or allocate; writers
//! fill or append to a buffer the caller owns, or return a fixed-size array.
//! - [`wz::legacy`]: the legacy Warzone commands and status lines. `next_item` never asks
//!   for more than one GAMESTRUCT (814 bytes) before it decides; a client-side status read
//!   refuses a MOTD over `MAX_MOTD` bytes before waiting for it; the client-side list readers
//!   (test helpers) allocate at most one entry per 814 bytes of input.
//! - [`wz::v4`]: the v4 handshake (decided within its 12 bytes), `u32` length-prefixed frames
//!   refused over the caller's limit (`MAX_FRAME`, 64 KiB) from the prefix alone, and BSON or
//!   JSON documents whose strings are at most `MAX_STRING` bytes and whose nesting is at most
//!   `MAX_DEPTH` levels, both checked before copying or recursing; a document tree allocates
//!   at most a small multiple of its already bounded frame body.
//! - [`websocket`]: the general lobby's second transport (RFC 6455): an upgrade request head
//!   decided within `MAX_HEAD` bytes, client frames refused over the caller's cap from their
//!   header alone and unmasked in place.
//!
//! Both families: every parser is total, any byte string yields a value or a typed error and
//! never a panic; an emitter panics only on its caller's bug (a buffer shorter than it said it
//! needs, a payload longer than the format can declare), never on a peer's bytes. The
//! errors are small `Copy` enums with a hand-written `Display` and an `as_str` metric label:
//! [`frame::Error`] (shared by the two datagram protocols), [`udp_upstream::Error`],
//! [`tcp_lobby::Error`] and [`tcp_lobby::NameError`], [`tcp_upstream::Error`],
//! [`general::Error`], [`directory::Error`], [`wz::Error`] (legacy and GAMESTRUCT),
//! [`wz::v4::DecodeError`].
//! Nothing here does I/O, reads a clock, logs or counts, or decides what a message means for
//! the lobby: the cores do.

#![deny(unsafe_code)]
#![warn(missing_docs)]

/// A named byte range inside a message (smoltcp's `wire::field::Field`); each protocol's
/// private `mod field` lists its offsets as these.
pub type Field = core::ops::Range<usize>;

pub mod directory;
pub mod frame;
pub mod general;
pub mod instance;
pub mod tcp_lobby;
pub mod tcp_upstream;
pub mod udp_lobby;
pub mod udp_upstream;
pub mod websocket;
pub mod wz;
