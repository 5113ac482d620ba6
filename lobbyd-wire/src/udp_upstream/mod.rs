//! The upstream R-Type UDP lobby dialect: what the R-Type program the UDP lobby seed came from
//! actually sends (`docs/protocols/udp-lobby-upstream.md`), served on the same port as the
//! seed's dialect ([`crate::udp_lobby`]).
//!
//! The seed describes an 8-byte header; the upstream program never had one. Its datagrams open
//! with a 4-byte magic and carry a 17-byte big-endian header, the payload and a CRC-32 trailer
//! ([`frame`]); its lobby messages use the seed's codes 0x40..=0x46 with payloads that changed
//! across upstream versions, plus RoomSetConfig (0x71) after a create or join ([`lobby`]).
//!
//! [`sniff`] tells the two dialects apart from the first four bytes of a datagram, so the
//! driver decides which parser runs before parsing anything. No client-to-server datagram of
//! the seed's dialect starts with the magic (its first byte is the packetType, 0x01), and every
//! upstream datagram does.
//!
//! Parsers are total and never allocate; variable-length fields (room name, password, invite
//! code) borrow from the datagram. Errors are the small `Copy` enum [`Error`], each with a
//! metric label. Nothing here decides who may create or join a room.

pub mod frame;
pub mod lobby;
pub mod records;

pub use frame::{Error, Frame, CRC_LEN, HEADER_LEN, MAGIC, MIN_LEN};

/// Which spelling of the UDP room lobby a datagram is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// The seed document's dialect (`udp_lobby`): an 8-byte header whose first byte is the
    /// packetType (0x01 from a client).
    Seed,
    /// The upstream program's dialect: the 4-byte magic `A3 5F C8 1D`, then a 17-byte header.
    Upstream,
}

impl Dialect {
    /// Short snake_case label for metrics and logs.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Dialect::Seed => "seed",
            Dialect::Upstream => "upstream",
        }
    }
}

/// Decides a datagram's dialect from its first bytes: [`Dialect::Upstream`] when it opens with
/// the full magic, [`Dialect::Seed`] otherwise.
///
/// Anything without the magic goes to the seed's parser, which refuses what is not its own
/// with the typed error it always gave (a datagram shorter than 12 bytes is `Truncated`, a
/// first byte other than 0x01 is `BadPacketType`), so a datagram in neither dialect is still
/// dropped and counted once. A magic followed by garbage is the upstream parser's to refuse.
/// One 4-byte comparison: the seed's hot path pays nothing else.
pub fn sniff(datagram: &[u8]) -> Dialect {
    if datagram.starts_with(&MAGIC) {
        Dialect::Upstream
    } else {
        Dialect::Seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::quickcheck;

    // The seed's own LIST_ROOMS example and the upstream client's LIST_ROOMS (research capture).
    const SEED_LIST_ROOMS: [u8; 12] = [
        0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xed, 0x83, 0xaa, 0x8e,
    ];
    const UPSTREAM_LIST_ROOMS: [u8; 21] = [
        0xa3, 0x5f, 0xc8, 0x1d, 0x01, 0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x42, 0x2f, 0x7b, 0x06,
    ];

    #[test]
    fn sniff_golden() {
        assert_eq!(sniff(&SEED_LIST_ROOMS), Dialect::Seed);
        assert_eq!(sniff(&UPSTREAM_LIST_ROOMS), Dialect::Upstream);
        // The magic alone is enough to decide; the upstream parser refuses the rest.
        assert_eq!(sniff(&MAGIC), Dialect::Upstream);
        // Three bytes of magic, an empty datagram, another first byte: the seed's parser
        // refuses them as it always did.
        assert_eq!(sniff(&MAGIC[..3]), Dialect::Seed);
        assert_eq!(sniff(&[]), Dialect::Seed);
        assert_eq!(sniff(&[0xa3, 0x5f, 0xc8, 0x1e, 0x01]), Dialect::Seed);
        assert_eq!(sniff(&[0x02, 0x41]), Dialect::Seed);
    }

    #[test]
    fn no_seed_request_opens_with_the_magic() {
        // Every seed client-to-server datagram starts with packetType 0x01, never 0xA3.
        let mut buf = [0u8; 16];
        let len = crate::udp_lobby::RequestRepr {
            seq: 0xa35f,
            request: crate::udp_lobby::Request::JoinRoom {
                room_id: 0xc81d_0000,
            },
        }
        .emit(&mut buf);
        assert_eq!(sniff(&buf[..len]), Dialect::Seed);
    }

    #[test]
    fn dialect_labels() {
        assert_eq!(Dialect::Seed.as_str(), "seed");
        assert_eq!(Dialect::Upstream.as_str(), "upstream");
    }

    quickcheck! {
        fn sniff_is_the_magic(bytes: Vec<u8>) -> bool {
            (sniff(&bytes) == Dialect::Upstream) == (bytes.len() >= 4 && bytes[..4] == MAGIC)
        }
    }
}

#[cfg(test)]
mod lobby_tests;
