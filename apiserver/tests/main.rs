//! The API server's integration tests as one test binary: each file of `tests/` is a module of it.
//!
//! One binary instead of one per file: each would link the whole API server again (94 MB apiece in
//! a debug build), and CI's disk ran out while linking them (`ld terminated with signal 7 [Bus
//! error]`). Run one file's tests with `cargo test -p kubemock-apiserver --test apiserver
//! discovery::`.

mod discovery;
mod nonresource;
mod protobuf;
mod watch;
