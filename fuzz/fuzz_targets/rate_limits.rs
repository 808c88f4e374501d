#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentic_test_support::fuzz::rate_limits::check(data));
