//! Fuzz target `core_general`: `lobbyd::fuzzing::core_general::fuzz`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::core_general::fuzz(data));
