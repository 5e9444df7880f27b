//! Fuzz target `protobuf`: the properties of [`kubemock_fuzz::protobuf`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubemock_fuzz::protobuf(data));
