//! Fuzz target `wire_instance`: `lobbyd::fuzzing::wire_rtype::instance`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_rtype::instance(data));
