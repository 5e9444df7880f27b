//! Fuzz target `merge_patch`: the properties of [`kubemock_fuzz::merge_patch`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubemock_fuzz::merge_patch(data));
