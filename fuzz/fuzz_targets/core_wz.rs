//! Fuzz target `core_wz`: `lobbyd::fuzzing::core_wz::fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::core_wz::fuzz(data));
