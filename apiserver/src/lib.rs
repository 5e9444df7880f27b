//! kubemock-apiserver: the Kubernetes HTTP API (REST, discovery, watch, patch, admission)
//! served over `kubemock-storage`'s revisioned store.
//!
//! Not yet implemented: this crate will hold the resource registry, the routes, the object
//! metadata rules, watch streaming and the one error-to-`Status` mapping. It depends on
//! `kubemock-storage` and never on the client or the controllers (see `DESIGN.md`).
