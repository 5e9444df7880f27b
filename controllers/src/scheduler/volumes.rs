//! The scheduler's volume binding (kube-scheduler's `VolumeBinding` plugin, upstream
//! `pkg/scheduler/framework/plugins/volumebinding/`): a pod whose claims are missing, being
//! deleted, or unbound with an `Immediate` class is unschedulable before any node is looked at
//! (PreFilter); a node must satisfy the node affinity of the volumes the pod's bound claims use,
//! and offer each unbound `WaitForFirstConsumer` claim a matching Available volume or a
//! provisioner (Filter). Once a node is chosen the scheduler reserves those volumes for their
//! claims, or names the node on the claims to provision (`volume.kubernetes.io/selected-node`),
//! and the pod waits until every claim is bound before it is bound itself (PreBind).
//!
//! Not done: upstream's bind timeout (a pod waits as long as it takes), CSI storage capacity,
//! volume limits per node, and scoring nodes by volume.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kubemock_client::{ObjectKey, Store};

use crate::volume::{
    ANN_SELECTED_NODE, NO_PROVISIONER, annotation, claim_class, claim_volume_name,
    find_matching_volume, is_delay_binding, pod_claim_names, volume_fits_node,
};

/// `ErrReasonBindConflict`.
pub const BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// `ErrReasonNodeConflict`.
pub const NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
/// `ErrReasonPVNotExist`.
pub const PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
/// PreFilter's refusal of unbound Immediate claims.
pub const UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// The informer caches the volume binding reads.
#[derive(Clone)]
pub struct VolumeCaches {
    /// PersistentVolumeClaims.
    pub claims: Store<PersistentVolumeClaim>,
    /// PersistentVolumes.
    pub volumes: Store<PersistentVolume>,
    /// StorageClasses.
    pub classes: Store<StorageClass>,
}

/// A pod's claims, as the PreFilter sorted them.
#[derive(Default)]
pub struct PodClaims {
    /// The volumes of its bound claims (`None`: the volume does not exist).
    pub bound: Vec<Option<Arc<PersistentVolume>>>,
    /// Its unbound `WaitForFirstConsumer` claims.
    pub delayed: Vec<Arc<PersistentVolumeClaim>>,
}

impl PodClaims {
    /// Whether the pod waits for nothing.
    pub fn all_bound(&self) -> bool {
        self.delayed.is_empty()
    }
}

/// How a delayed claim is satisfied on the chosen node.
pub enum Plan {
    /// Reserve this Available volume for it.
    Static(Arc<PersistentVolumeClaim>, Arc<PersistentVolume>),
    /// Name the node on it, for its provisioner.
    Provision(Arc<PersistentVolumeClaim>),
}

/// PreFilter: the pod's claims, or the message that makes it unschedulable on every node.
pub fn pod_claims(pod: &Pod, caches: &VolumeCaches) -> Result<PodClaims, String> {
    let namespace = pod.metadata.namespace.as_deref();
    let classes = caches.classes.list();
    let mut claims = PodClaims::default();
    for name in pod_claim_names(pod) {
        let Some(claim) = caches.claims.get(&ObjectKey::new(namespace, &name)) else {
            return Err(format!("persistentvolumeclaim \"{name}\" not found"));
        };
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(format!("persistentvolumeclaim \"{name}\" is being deleted"));
        }
        let volume_name = claim_volume_name(&claim);
        if !volume_name.is_empty() {
            claims
                .bound
                .push(caches.volumes.get(&ObjectKey::new(None, volume_name)));
        } else if is_delay_binding(&claim, &classes) {
            claims.delayed.push(claim);
        } else {
            return Err(UNBOUND_IMMEDIATE.to_owned());
        }
    }
    Ok(claims)
}

/// Filter: how `node` satisfies the pod's claims, or its reason not to.
pub fn plan_for_node(
    claims: &PodClaims,
    node: &Node,
    caches: &VolumeCaches,
) -> Result<Vec<Plan>, String> {
    for volume in &claims.bound {
        match volume {
            None => return Err(PV_NOT_EXIST.to_owned()),
            Some(volume) if !volume_fits_node(volume, node) => {
                return Err(NODE_CONFLICT.to_owned());
            }
            Some(_) => {}
        }
    }
    let node_name = node.metadata.name.as_deref().unwrap_or("");
    let volumes = caches.volumes.list();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut plans = Vec::new();
    for claim in &claims.delayed {
        if let Some(selected) = annotation(&claim.metadata, ANN_SELECTED_NODE) {
            // Already handed to a provisioner for a node: only that node will do.
            if selected != node_name {
                return Err(BIND_CONFLICT.to_owned());
            }
            continue;
        }
        let free: Vec<Arc<PersistentVolume>> = volumes
            .iter()
            .filter(|v| !taken.contains(v.metadata.name.as_deref().unwrap_or("")))
            .cloned()
            .collect();
        if let Some(volume) = find_matching_volume(claim, &free, Some(node), true) {
            let name = volume.metadata.name.clone().unwrap_or_default();
            let volume = free
                .iter()
                .find(|v| v.metadata.name.as_deref() == Some(&name))
                .cloned();
            taken.insert(name);
            if let Some(volume) = volume {
                plans.push(Plan::Static(claim.clone(), volume));
            }
            continue;
        }
        if !can_provision(claim, node, caches) {
            return Err(BIND_CONFLICT.to_owned());
        }
        plans.push(Plan::Provision(claim.clone()));
    }
    Ok(plans)
}

/// Whether the claim's class can provision a volume reachable from `node`
/// (`checkVolumeProvisions`): it exists, names a provisioner, and its allowedTopologies (if
/// any) admit the node's labels.
fn can_provision(claim: &PersistentVolumeClaim, node: &Node, caches: &VolumeCaches) -> bool {
    let Some(class) = caches
        .classes
        .get(&ObjectKey::new(None, claim_class(claim)))
    else {
        return false;
    };
    if class.provisioner == NO_PROVISIONER {
        return false;
    }
    let Some(topologies) = class
        .allowed_topologies
        .as_deref()
        .filter(|t| !t.is_empty())
    else {
        return true;
    };
    let empty = Default::default();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    topologies.iter().any(|term| {
        term.match_label_expressions
            .as_deref()
            .unwrap_or_default()
            .iter()
            .all(|requirement| {
                labels
                    .get(&requirement.key)
                    .is_some_and(|value| requirement.values.contains(value))
            })
    })
}
