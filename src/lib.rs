//! kubemock as a library: the [`testing`] helper that starts an in-process, ephemeral
//! cluster for a Rust test, with the test powers of `testing.kubemock.dev/v1` (faults, the
//! request log, reset, the clock) at hand. The `kubemock` binary is `src/main.rs`.

pub mod testing;
