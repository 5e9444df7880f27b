//! Persistent storage as a cluster with a dynamic provisioner has it (issue 22 item 6): the
//! PersistentVolume binder ([`binder`], kube-controller-manager's
//! `persistentvolume-binder-controller`), the protection controllers that release the
//! `kubernetes.io/pvc-protection` and `kubernetes.io/pv-protection` finalizers the API server
//! adds ([`protection`]), and a simulated external provisioner with the cluster's default
//! StorageClass `standard` ([`provisioner`], as kind's local-path provisioner: hostPath volumes,
//! `WaitForFirstConsumer`). The scheduler's side (a pod waits for its claims; a
//! `WaitForFirstConsumer` claim learns its node) is in [`crate::scheduler`].
//!
//! This module holds what they share: upstream's annotation names, the claim and volume
//! accessors, and which volume satisfies a claim (`component-helpers/storage/volume/
//! pv_helpers.go`).

pub mod binder;
pub mod protection;
pub mod provisioner;

use k8s_openapi::api::core::v1::{
    Node, ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod,
};
use k8s_openapi::api::storage::v1::StorageClass;
use kubemock_apimachinery::quantity::Quantity;
use kubemock_client::Selector;

/// Set on a claim the binder bound (`AnnBindCompleted`).
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// Set on a claim or volume the binder (not the user) bound (`AnnBoundByController`).
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// The provisioner a claim waits for (`AnnStorageProvisioner`).
pub const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
/// Its deprecated form, still set (`AnnBetaStorageProvisioner`).
pub const ANN_BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
/// The node the scheduler chose for a `WaitForFirstConsumer` claim (`AnnSelectedNode`).
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// Who provisioned a volume (`AnnDynamicallyProvisioned`).
pub const ANN_PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
/// The beta annotation naming a claim's class (`BetaStorageClassAnnotation`).
pub const ANN_BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// The binding mode that waits for a pod (`VolumeBindingWaitForFirstConsumer`).
pub const WAIT_FOR_FIRST_CONSUMER: &str = "WaitForFirstConsumer";
/// The provisioner name of classes nothing provisions (`NotSupportedProvisioner`).
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// An annotation of `meta`'s object.
pub fn annotation<'a>(
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// Sets an annotation, returning whether it changed.
pub fn set_annotation(
    meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
    value: &str,
) -> bool {
    let annotations = meta.annotations.get_or_insert_with(Default::default);
    if annotations.get(key).map(String::as_str) == Some(value) {
        return false;
    }
    annotations.insert(key.to_owned(), value.to_owned());
    true
}

/// A claim's class (`GetPersistentVolumeClaimClass`): the beta annotation, else
/// `spec.storageClassName`, else none (`""`).
pub fn claim_class(claim: &PersistentVolumeClaim) -> &str {
    if let Some(class) = annotation(&claim.metadata, ANN_BETA_STORAGE_CLASS) {
        return class;
    }
    claim
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or("")
}

/// A volume's class (`GetPersistentVolumeClass`).
pub fn volume_class(volume: &PersistentVolume) -> &str {
    if let Some(class) = annotation(&volume.metadata, ANN_BETA_STORAGE_CLASS) {
        return class;
    }
    volume
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or("")
}

/// The claim's `spec.volumeName`, `""` when unset.
pub fn claim_volume_name(claim: &PersistentVolumeClaim) -> &str {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or("")
}

/// The volume's claim reference.
pub fn claim_ref(volume: &PersistentVolume) -> Option<&ObjectReference> {
    volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref())
}

/// Whether the volume's claim reference names this claim (`IsVolumeBoundToClaim`): same
/// name and namespace, and the same uid unless the reference has none (pre-bound by a user).
pub fn is_volume_bound_to_claim(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(reference) = claim_ref(volume) else {
        return false;
    };
    reference.name == claim.metadata.name
        && reference.namespace == claim.metadata.namespace
        && reference
            .uid
            .as_deref()
            .is_none_or(|uid| uid.is_empty() || Some(uid) == claim.metadata.uid.as_deref())
}

/// A volume's phase, `""` when unset.
pub fn volume_phase(volume: &PersistentVolume) -> &str {
    volume
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// A claim's phase, `""` when unset.
pub fn claim_phase(claim: &PersistentVolumeClaim) -> &str {
    claim
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// The storage a claim requests.
pub fn requested_storage(claim: &PersistentVolumeClaim) -> Option<Quantity> {
    let requests = claim.spec.as_ref()?.resources.as_ref()?.requests.as_ref()?;
    Quantity::try_from(requests.get("storage")?).ok()
}

/// The storage a volume holds.
pub fn volume_storage(volume: &PersistentVolume) -> Option<Quantity> {
    let capacity = volume.spec.as_ref()?.capacity.as_ref()?;
    Quantity::try_from(capacity.get("storage")?).ok()
}

/// Whether the volume modes differ, an unset one being `Filesystem`
/// (`CheckVolumeModeMismatches`).
pub fn volume_mode_mismatch(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let claim_mode = claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or("Filesystem");
    let volume_mode = volume
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or("Filesystem");
    claim_mode != volume_mode
}

/// Whether the volume offers every access mode the claim asks for (`CheckAccessModes`).
pub fn access_modes_fit(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let offered = volume
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default();
    claim
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default()
        .iter()
        .all(|mode| offered.contains(mode))
}

/// Whether the claim's label selector matches the volume (no selector: yes).
fn selector_fits(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let Some(selector) = claim.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
        return true;
    };
    let Ok(selector) = Selector::from_label_selector(selector) else {
        return false;
    };
    let empty = Default::default();
    selector.matches(volume.metadata.labels.as_ref().unwrap_or(&empty))
}

/// Whether the volume's required node affinity admits the node (`CheckNodeAffinity`); a
/// volume without one fits every node.
pub fn volume_fits_node(volume: &PersistentVolume, node: &Node) -> bool {
    let Some(terms) = volume
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
        .map(|r| &r.node_selector_terms)
    else {
        return true;
    };
    terms
        .iter()
        .any(|term| crate::scheduler::fit::term_matches(term, node))
}

/// The volume that best satisfies the claim (`FindMatchingVolume`): the one bound to it
/// already, else the smallest Available volume of its class, size, mode, access modes and
/// selector; with `node`, only volumes whose node affinity admits it (the scheduler's path),
/// without it none at all for a delayed-binding claim that is not pre-bound (the binder's).
pub fn find_matching_volume<'v>(
    claim: &PersistentVolumeClaim,
    volumes: &'v [std::sync::Arc<PersistentVolume>],
    node: Option<&Node>,
    delay_binding: bool,
) -> Option<&'v PersistentVolume> {
    let requested = requested_storage(claim)?;
    let class = claim_class(claim);
    let mut best: Option<(&PersistentVolume, Quantity)> = None;
    for volume in volumes {
        let volume = volume.as_ref();
        if claim_ref(volume).is_some() && !is_volume_bound_to_claim(volume, claim) {
            continue;
        }
        let Some(size) = volume_storage(volume) else {
            continue;
        };
        if size < requested
            || volume_mode_mismatch(claim, volume)
            || volume.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let node_fits = node.is_none_or(|node| volume_fits_node(volume, node));
        if is_volume_bound_to_claim(volume, claim) {
            return node_fits.then_some(volume);
        }
        if node.is_none() && delay_binding {
            continue;
        }
        if volume_phase(volume) != "Available"
            || !selector_fits(claim, volume)
            || volume_class(volume) != class
            || !node_fits
            || !access_modes_fit(claim, volume)
        {
            continue;
        }
        if best.as_ref().is_none_or(|(_, smallest)| size < *smallest) {
            best = Some((volume, size));
        }
    }
    best.map(|(volume, _)| volume)
}

/// Whether a claim's class binds only once a pod uses it (`IsDelayBindingMode`): a class that
/// does not exist does not delay.
pub fn is_delay_binding(
    claim: &PersistentVolumeClaim,
    classes: &[std::sync::Arc<StorageClass>],
) -> bool {
    let class = claim_class(claim);
    !class.is_empty()
        && classes.iter().any(|c| {
            c.metadata.name.as_deref() == Some(class)
                && c.volume_binding_mode.as_deref() == Some(WAIT_FOR_FIRST_CONSUMER)
        })
}

/// The claims a pod's volumes name (`persistentVolumeClaim.claimName`; generic ephemeral
/// volumes' claims, `<pod>-<volume>`, too).
pub fn pod_claim_names(pod: &Pod) -> Vec<String> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or("");
    pod.spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|volume| {
            if let Some(claim) = &volume.persistent_volume_claim {
                Some(claim.claim_name.clone())
            } else {
                volume
                    .ephemeral
                    .as_ref()
                    .map(|_| format!("{pod_name}-{}", volume.name))
            }
        })
        .collect()
}

/// Whether a pod has finished (`Succeeded` or `Failed`): its claims are free.
pub fn pod_finished(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// The reference to `claim` a bound volume holds (`reference.GetReference`).
pub fn reference_to(claim: &PersistentVolumeClaim) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("PersistentVolumeClaim".to_owned()),
        name: claim.metadata.name.clone(),
        namespace: claim.metadata.namespace.clone(),
        uid: claim.metadata.uid.clone(),
        resource_version: claim.metadata.resource_version.clone(),
        field_path: None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn claim(spec: serde_json::Value) -> PersistentVolumeClaim {
        serde_json::from_value(
            json!({"metadata": {"name": "c", "namespace": "ns", "uid": "u1"},
            "spec": spec}),
        )
        .expect("a claim")
    }

    fn volume(name: &str, size: &str, extra: serde_json::Value) -> Arc<PersistentVolume> {
        let mut spec = json!({"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
            "storageClassName": "fast", "hostPath": {"path": "/x"}});
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                spec.insert(k.clone(), v.clone());
            }
        }
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec,
                "status": {"phase": "Available"}}))
            .expect("a volume"),
        )
    }

    #[test]
    fn the_smallest_fitting_volume_wins_and_a_prebound_one_before_it() {
        let c = claim(
            json!({"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
            "resources": {"requests": {"storage": "1Gi"}}}),
        );
        let volumes = vec![
            volume("big", "10Gi", json!({})),
            volume("small", "2Gi", json!({})),
            volume("tiny", "500Mi", json!({})),
            volume("other-class", "1Gi", json!({"storageClassName": "slow"})),
            volume("rwx", "1Gi", json!({"accessModes": ["ReadWriteMany"]})),
        ];
        let found = find_matching_volume(&c, &volumes, None, false).expect("a match");
        assert_eq!(found.metadata.name.as_deref(), Some("small"));
        assert!(find_matching_volume(&c, &volumes, None, true).is_none());
        let mut prebound = volumes.clone();
        prebound.push(volume(
            "mine",
            "20Gi",
            json!({"claimRef": {"name": "c", "namespace": "ns"}}),
        ));
        let found = find_matching_volume(&c, &prebound, None, true).expect("the pre-bound one");
        assert_eq!(found.metadata.name.as_deref(), Some("mine"));
    }
}
