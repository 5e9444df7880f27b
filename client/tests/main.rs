//! The client's integration tests against a real server as one test binary: each file of `tests/`
//! is a module of it, and `common` is what they share.
//!
//! One binary instead of one per file: each would link the client and the whole API server again
//! (100 MB apiece in a debug build), and CI's disk ran out while linking them (`ld terminated with
//! signal 7 [Bus error]`). Run one file's tests with `cargo test -p kubemock-client --test client
//! informer::`.

mod api;
mod common;
mod controller;
mod informer;
mod leader;
mod tls;
