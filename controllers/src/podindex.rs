//! The pod cache's index of pods by the node they are bound to (`spec.nodeName`), for the
//! controllers that act on a node's pods when the node changes (the kubelet, the node
//! lifecycle and taint eviction controllers): a node's change then costs its own pods, not
//! a scan of every cached pod (issue 23: 100,000 pods on 1,000 heartbeating nodes).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kubemock_client::{ObjectKey, Store};

/// The index's name in the pod cache.
const BY_NODE: &str = "pods-by-node";

/// Indexes `pods` by node (at once for the cached pods; every controller sharing the cache
/// may call it, the index is the same).
pub fn index_by_node(pods: &Store<Pod>) {
    pods.add_index(BY_NODE, |pod: &Pod| {
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .into_iter()
            .collect()
    });
}

/// The cached pods bound to `node` (the cache must be [`index_by_node`]ed).
pub fn on_node(pods: &Store<Pod>, node: &str) -> Vec<Arc<Pod>> {
    pods.by_index(BY_NODE, node)
}

/// The keys of the cached pods bound to `node` (the cache must be [`index_by_node`]ed).
pub fn keys_on_node(pods: &Store<Pod>, node: &str) -> Vec<ObjectKey> {
    pods.index_keys(BY_NODE, node)
}
