//! Fuzz target `json_patch`: the properties of [`kubemock_fuzz::json_patch`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubemock_fuzz::json_patch(data));
