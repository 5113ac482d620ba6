//! Fuzz target `wire_general_frames`: `lobbyd::fuzzing::wire_general::frames`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_general::frames(data));
