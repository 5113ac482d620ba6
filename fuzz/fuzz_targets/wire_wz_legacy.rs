//! Fuzz target `wire_wz_legacy`: `lobbyd::fuzzing::wire_wz::legacy`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_wz::legacy(data));
