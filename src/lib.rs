//! lobbyd: a game lobby server on one synchronous mio event loop.
//!
//! # Layout
//!
//! - [`wire`]: one module per protocol. Zero-copy views over `&[u8]` with checked
//!   constructors (after `new_checked` no accessor panics) plus plain `Repr` types with
//!   `parse`/`emit`, in the style of smoltcp's `wire`. No I/O, no allocation on parse.
//! - [`wz`]: the Warzone 2100 master server's non-wire state: accounts (SQLite, argon2id),
//!   the password-verification worker thread, and login sessions.
//! - [`cli_user`]: `lobbyd user add|del|list`, account administration from the shell.
//!
//! More modules join this map as they land: the sans-IO lobby core, the timer wheel,
//! the mio driver, configuration and metrics.

#![forbid(unsafe_code)]

pub mod cli_user;
pub mod wire;
pub mod wz;
