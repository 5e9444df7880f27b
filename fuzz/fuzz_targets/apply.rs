//! Fuzz target `apply`: the properties of [`kubemock_fuzz::apply`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubemock_fuzz::apply(data));
