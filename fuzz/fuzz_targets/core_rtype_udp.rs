//! Fuzz target `core_rtype_udp`: `lobbyd::fuzzing::core_rtype::fuzz_udp`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::core_rtype::fuzz_udp(data));
