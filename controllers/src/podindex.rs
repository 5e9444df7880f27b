//! The pod cache's index of pods by the node they are bound to (`spec.nodeName`), for the
//! controllers that act on a node's pods when the node changes (the kubelet, the node
//! lifecycle and taint eviction controllers): a node's change then costs its own pods, not
//! a scan of every cached pod (issue 23: 100,000 pods on 1,000 heartbeating nodes). And by
//! controller, for the ReplicaSet controller's claims.

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

/// The index's name in the pod cache: pods by their controller's uid.
const BY_CONTROLLER: &str = "pods-by-controller";

/// The index value of the pods without a controller in `namespace` (no uid looks like it).
fn orphans_in(namespace: &str) -> String {
    format!("orphan/{namespace}")
}

/// Indexes `pods` by their controller's uid, and the pods without a controller by namespace,
/// for the controllers that claim pods (the ReplicaSet controller): a sync then reads its own
/// pods and the orphans it may adopt, not every pod of the namespace, whose other pods a claim
/// skips anyway (issue 23: 100 ReplicaSets of 1,000 pods in one namespace).
pub fn index_by_controller(pods: &Store<Pod>) {
    pods.add_index(
        BY_CONTROLLER,
        |pod: &Pod| match kubemock_client::controller::controller_of(&pod.metadata) {
            Some(reference) => vec![reference.uid.clone()],
            None => vec![orphans_in(
                pod.metadata.namespace.as_deref().unwrap_or_default(),
            )],
        },
    );
}

/// The cached pods in `namespace` that the controller `uid` controls, and the orphans there:
/// every pod a claim by that controller can keep or adopt (the cache must be
/// [`index_by_controller`]ed).
pub fn claimable(pods: &Store<Pod>, namespace: &str, uid: &str) -> Vec<Arc<Pod>> {
    let mut found: Vec<Arc<Pod>> = pods
        .by_index(BY_CONTROLLER, uid)
        .into_iter()
        .filter(|p| p.metadata.namespace.as_deref() == Some(namespace))
        .collect();
    found.extend(pods.by_index(BY_CONTROLLER, &orphans_in(namespace)));
    found
}
