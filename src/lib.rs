//! kubemock as a library: the [`testing`] helper that starts an in-process, ephemeral
//! cluster for a Rust test, with the test powers of `testing.kubemock.dev/v1` (faults, the
//! request log, reset, the clock) at hand; and [`in_process`], how the binary's own
//! components reach its server in memory. The `kubemock` binary is `src/main.rs`.

pub mod in_process;
pub mod testing;
