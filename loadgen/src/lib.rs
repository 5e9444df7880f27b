//! The load generator's library part: what tests outside this crate drive as well as its
//! binary. Everything else of the load generator lives in the binary (`main.rs`).
//!
//! # Layout
//! - [`watchcheck`]: writers and reflector-like watchers over HTTP, and the check that every
//!   watcher saw exactly the acknowledged history.

pub mod watchcheck;
