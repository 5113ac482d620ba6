//! Fuzz target `wire_wz_v4`: `lobbyd::fuzzing::wire_wz::v4`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_wz::v4(data));
