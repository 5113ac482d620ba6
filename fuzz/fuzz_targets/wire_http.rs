//! Fuzz target `wire_http`: `lobbyd::fuzzing::wire_http::http`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lobbyd::fuzzing::wire_http::http(data));
