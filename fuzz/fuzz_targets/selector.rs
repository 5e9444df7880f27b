//! Fuzz target `selector`: the properties of [`kubemock_fuzz::selector`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubemock_fuzz::selector(data));
