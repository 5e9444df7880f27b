//! Fuzz target `decode`: the properties of [`kubemock_fuzz::decode`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubemock_fuzz::decode(data));
