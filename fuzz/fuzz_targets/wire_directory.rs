//! Fuzz target `wire_directory`: `lobbyd::fuzzing::wire_rtype::directory`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_rtype::directory(data));
