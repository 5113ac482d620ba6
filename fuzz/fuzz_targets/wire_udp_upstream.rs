//! Fuzz target `wire_udp_upstream`: `lobbyd::fuzzing::wire_udp_upstream::udp_upstream`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_udp_upstream::udp_upstream(data));
