//! The conformance suite as one test binary: each file of `tests/` is a module of it.
//!
//! One binary instead of one per file: each would link the whole API server again (94 MB apiece in
//! a debug build, 3 GB for the suite), and CI's disk ran out while linking them (`ld terminated
//! with signal 7 [Bus error]`). Run one file's tests with `cargo test -p kubemock-conformance
//! --test conformance s4_crud::`.

mod audit;
mod authentication;
mod authorization;
mod cel;
mod metrics;
mod reliability;
mod s10_table;
mod s11_crd;
mod s12_leases_events;
mod s16_bootstrap_rbac;
mod s16_cluster_apis;
mod s16_fixes;
mod s2_discovery;
mod s2_discovery_1_32;
mod s2_openapi;
mod s3_10_defaults;
mod s3_10_services;
mod s3_metadata;
mod s4_crud;
mod s5_6_apply;
mod s5_patch;
mod s6_delete;
mod s7_list;
mod s8_watch;
mod s9_limits;
mod startup;
mod testing_faults;
mod testing_requests;
mod testing_reset;
mod unenforced;
mod vap;
mod webhooks;
