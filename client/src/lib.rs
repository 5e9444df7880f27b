//! kubemock-client: a Kubernetes client in the client-go tradition, for any API server.
//!
//! Not yet implemented: this crate will hold kubeconfig loading, the REST client and `Api<K>`,
//! the reflector, store/indexer and listers, shared informers, the work queue, the controller
//! runtime and leader election. It knows only HTTP: never sled, axum or the storage crate.
