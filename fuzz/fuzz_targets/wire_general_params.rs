//! Fuzz target `wire_general_params`: `lobbyd::fuzzing::wire_general::params`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_general::params(data));
