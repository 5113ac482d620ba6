//! Fuzz target `wire_wz_gamestruct`: `lobbyd::fuzzing::wire_wz::gamestruct`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_wz::gamestruct(data));
