//! Fuzz target `wire_tcp_lobby`: `lobbyd::fuzzing::wire_rtype::tcp_lobby`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_rtype::tcp_lobby(data));
