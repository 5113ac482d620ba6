//! Fuzz target `core_rtype_tcp`: `lobbyd::fuzzing::core_rtype::fuzz_tcp`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::core_rtype::fuzz_tcp(data));
