//! Wire formats, one module per protocol.
//!
//! The contract every module here keeps (smoltcp's `wire` pattern):
//! - a view `Packet<T: AsRef<[u8]>>` whose `new_checked` validates every length once, after
//!   which no accessor can panic or read past the buffer;
//! - a `Repr` (plain struct or enum) with `parse(&Packet) -> Result<Repr, Error>`,
//!   `buffer_len()` and `emit(&mut Packet)`; variable-length parts borrow from the buffer;
//! - one small `Copy` error enum per protocol with a hand-written `Display`;
//! - parsers are total: any byte string yields a value or a typed error, never a panic,
//!   never an allocation sized by a peer.
/// A named byte range inside a message (smoltcp's `wire::field::Field`); each protocol's
/// private `mod field` lists its offsets as these.
pub type Field = core::ops::Range<usize>;

pub mod frame;
pub mod general;
pub mod instance;
pub mod tcp_lobby;
pub mod udp_lobby;
pub mod wz;
pub mod wz_v4;
