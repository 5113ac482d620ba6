//! Time building blocks for the sans-IO core.
//!
//! Everything here is pure: no clock reads, no I/O. The current time always comes in as a
//! `std::time::Instant` from the caller, so the core can be driven by a virtual clock in
//! simulations (HOUSE-STYLE section 2) and by the mio driver in production (section 3).
//!
//! - [`wheel`]: a fixed-tick timer wheel over a slab, one-tick slots for the current
//!   revolution and one-revolution slots beyond; the driver's poll timeout is the time to
//!   [`TimerWheel::next_deadline`].

pub mod wheel;

pub use wheel::{TimerKey, TimerWheel};
