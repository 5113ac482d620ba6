//! Fuzz target `wire_tcp_upstream`: `lobbyd::fuzzing::wire_rtype::tcp_upstream`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_rtype::tcp_upstream(data));
