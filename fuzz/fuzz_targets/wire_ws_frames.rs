//! Fuzz target `wire_ws_frames`: `lobbyd::fuzzing::wire_websocket::frames`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_websocket::frames(data));
