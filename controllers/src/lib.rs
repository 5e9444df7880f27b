//! kubemock-controllers: the in-tree controllers (ReplicaSet, Deployment, garbage collector,
//! namespace, scheduler, simulated nodes and kubelet) and the controller manager.
//!
//! Not yet implemented: every controller here will be built on `kubemock-client` alone, exactly
//! as an out-of-tree controller would be, so the manager also runs against a real cluster.
