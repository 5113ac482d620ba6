//! Fuzz target `core_rtype_exec`: `lobbyd::fuzzing::core_rtype::fuzz_exec`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::core_rtype::fuzz_exec(data));
