//! Fuzz target `wire_udp_lobby`: `lobbyd::fuzzing::wire_rtype::udp_lobby`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_rtype::udp_lobby(data));
