//! The binary's and the library's integration tests as one test binary: each file of `tests/` is a
//! module of it, and `common` is what they share.
//!
//! One binary instead of one per file: each would link the binary's whole library again (up to
//! 190 MB apiece in a debug build), and CI's disk ran out while linking them (`ld terminated
//! with signal 7 [Bus error]`). Run one file's tests with `cargo test --test integration kubectl::`.

mod audit;
mod cluster;
mod common;
mod controller_manager;
mod envtest;
mod etcd_cluster;
mod fixtures;
mod httpfuzz;
mod identities;
mod in_process;
mod kill9;
mod kubectl;
mod kubectl_s16;
mod readme;
mod request_log;
mod security;
mod serve;
mod watch_faults;
mod watchcheck;
