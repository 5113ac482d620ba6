//! Fuzz target `wire_ws_upgrade`: `lobbyd::fuzzing::wire_websocket::upgrade`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_websocket::upgrade(data));
