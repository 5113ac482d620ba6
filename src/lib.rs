//! lobbyd: a game lobby server on one synchronous mio event loop.
//!
//! # Layout
//!
//! - [`wire`]: one module per protocol. Zero-copy views over `&[u8]` with checked
//!   constructors (after `new_checked` no accessor panics) plus plain `Repr` types with
//!   `parse`/`emit`, in the style of smoltcp's `wire`. No I/O, no allocation on parse.
//! - [`config`]: the command line. Parses flags into a validated `Config` (or help,
//!   version, or a one-line usage error); the rest of the server trusts it as is.
//!
//! More modules join this map as they land: the sans-IO lobby core, the timer wheel,
//! the mio driver and metrics.

#![forbid(unsafe_code)]

pub mod config;
pub mod wire;
