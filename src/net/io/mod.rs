//! Socket plumbing shared by every front end, with no protocol in it: the TCP stream transport
//! and its counted buffers, the frame reader over any length-prefixed header, the per-address admission at accept, UDP datagram batches, receive timestamps, the closer thread, the
//! timer heap, the loop's timerfd wake-up, and the bounded work of one loop pass.
//!
//! Nothing here imports a front end or the loop (`net::server`): the front ends (`net::rtype`,
//! `net::wz`, `net::general`) and the metrics endpoint (`net::http`) stand above it.

pub mod admission;
pub mod batch;
pub mod buffers;
pub mod closer;
pub mod frames;
pub mod heap;
pub mod pass;
pub mod rx_time;
pub mod stream;
pub mod wake;
