//! Fuzz target `strategic_patch`: the properties of [`kubemock_fuzz::strategic_patch`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubemock_fuzz::strategic_patch(data));
