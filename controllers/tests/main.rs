//! The controllers' integration tests as one test binary: each file of `tests/` is a module of it,
//! and `common` is their shared cluster fixture.
//!
//! One binary instead of one per file: each would link the API server and every controller again
//! (183 MB apiece in a debug build, 3 GB for the suite), and CI's disk ran out while linking them
//! (`ld terminated with signal 7 [Bus error]`). Run one file's tests with `cargo test -p
//! kubemock-controllers --test controllers deployment::`.

mod common;
mod cronjob;
mod daemonset;
mod deployment;
mod disruption;
mod endpoints;
mod gc;
mod job;
mod kubelet;
mod lifecycle;
mod namespace;
mod nodelifecycle;
mod replicaset;
mod resourcequota;
mod rootca;
mod scale;
mod statefulset;
mod storage;
