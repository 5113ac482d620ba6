//! lobbyd: a game lobby server on one synchronous mio event loop.
//!
//! # Layout
//!
//! - [`wire`]: one module per protocol. Zero-copy views over `&[u8]` with checked
//!   constructors (after `new_checked` no accessor panics) plus plain `Repr` types with
//!   `parse`/`emit`, in the style of smoltcp's `wire`. No I/O, no allocation on parse.
//!
//! - [`time`]: pure time building blocks; [`time::TimerWheel`] is the fixed-tick hashed
//!   timer wheel whose next deadline becomes the driver's poll timeout. No clock reads:
//!   `now` is always passed in.
//! - [`ratelimit`]: integer token buckets and [`ratelimit::PerIpLimiter`], a bounded
//!   per-source-IP table (request and reply-byte buckets) against floods and reflection.
//!
//! More modules join this map as they land: the sans-IO lobby core, the mio driver,
//! configuration and metrics.

#![forbid(unsafe_code)]

pub mod ratelimit;
pub mod time;
pub mod wire;
