//! What a write to `/status` (and the other subresources that write part of an object) keeps
//! from the stored object: each kind's `StatusStrategy.PrepareForUpdate` in
//! `pkg/registry/*/*/strategy.go`. Every one keeps the spec; some also keep metadata (a
//! Deployment its labels, a Pod its owner references, an APIService its labels, annotations,
//! finalizers and owner references, the flow-control kinds and VolumeAttachments all of it, a
//! custom resource everything but its status and managed fields:
//! `customresource/status_strategy.go`). The metadata a write may never change (uid,
//! generation, creation and deletion times) is restored by the caller for every write, so a
//! status write never moves `metadata.generation`.

use serde_json::{Value, json};

use crate::meta;
use crate::object::{self, Object};
use crate::registry::Resource;

/// Which metadata a kind's status strategy keeps from the stored object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeptMetadata {
    /// None: the status write may change labels, annotations and the rest.
    None,
    /// `metadata.labels` (Deployments).
    Labels,
    /// `metadata.ownerReferences` (Pods: old kubelets corrupted them).
    OwnerReferences,
    /// Labels, annotations, finalizers and owner references (APIServices).
    UserMetadata,
    /// All of it but `managedFields` (flow control, VolumeAttachments, custom resources).
    All,
}

/// The metadata `resource`'s status strategy keeps.
fn kept_metadata(resource: &Resource) -> KeptMetadata {
    if resource.is_custom() {
        return KeptMetadata::All;
    }
    match (resource.group.as_str(), resource.plural.as_str()) {
        ("apps", "deployments") => KeptMetadata::Labels,
        ("", "pods") => KeptMetadata::OwnerReferences,
        ("apiregistration.k8s.io", "apiservices") => KeptMetadata::UserMetadata,
        ("flowcontrol.apiserver.k8s.io", _) | ("storage.k8s.io", "volumeattachments") => {
            KeptMetadata::All
        }
        _ => KeptMetadata::None,
    }
}

/// The object a `/status` write of `body` over `existing` stores: the body's status and
/// metadata over the stored object's everything else, less the metadata the kind keeps.
pub(crate) fn status_update(resource: &Resource, existing: &Object, body: Object) -> Object {
    let mut updated = existing.clone();
    match body.get("status") {
        Some(status) => updated.insert("status".to_owned(), status.clone()),
        None => updated.shift_remove("status"),
    };
    let kept = kept_metadata(resource);
    let mut metadata = body
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let stored = existing
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let keep: &[&str] = match kept {
        KeptMetadata::None => &[],
        KeptMetadata::Labels => &["labels"],
        KeptMetadata::OwnerReferences => &["ownerReferences"],
        KeptMetadata::UserMetadata => &["labels", "annotations", "finalizers", "ownerReferences"],
        KeptMetadata::All => &[],
    };
    if kept == KeptMetadata::All {
        let managed = metadata.get("managedFields").cloned();
        metadata = stored;
        match managed {
            Some(managed) => metadata.insert("managedFields".to_owned(), managed),
            None => metadata.shift_remove("managedFields"),
        };
    } else {
        for field in keep {
            match stored.get(*field) {
                Some(value) => metadata.insert((*field).to_owned(), value.clone()),
                None => metadata.shift_remove(*field),
            };
        }
    }
    updated.insert("metadata".to_owned(), Value::Object(metadata));
    match (resource.group.as_str(), resource.plural.as_str()) {
        ("", "pods") => backfill_qos_class(existing, &mut updated),
        ("", "persistentvolumes") => stamp_phase_transition(existing, &mut updated),
        _ => {}
    }
    updated
}

/// `podStatusStrategy`: a status without a QoS class keeps the stored one (old kubelets
/// dropped it).
fn backfill_qos_class(existing: &Object, updated: &mut Object) {
    let stored = existing
        .get("status")
        .and_then(|s| s.get("qosClass"))
        .cloned();
    let Some(stored) = stored else { return };
    if let Value::Object(status) = updated.entry("status").or_insert_with(|| json!({}))
        && status
            .get("qosClass")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        status.insert("qosClass".to_owned(), stored);
    }
}

/// `persistentvolumeStatusStrategy` (PersistentVolumeLastPhaseTransitionTime, on in 1.32): an
/// unchanged phase keeps its transition time, a changed one gets now unless the writer set a
/// new one.
fn stamp_phase_transition(existing: &Object, updated: &mut Object) {
    let field = |object: &Object, key: &str| {
        object
            .get("status")
            .and_then(|s| s.get(key))
            .filter(|v| !v.is_null())
            .cloned()
    };
    let (old_phase, new_phase) = (field(existing, "phase"), field(updated, "phase"));
    let old_time = field(existing, "lastPhaseTransitionTime");
    let new_time = field(updated, "lastPhaseTransitionTime");
    let stamped = if old_phase == new_phase && new_time.is_none() {
        old_time
    } else if old_phase != new_phase && (new_time.is_none() || new_time == old_time) {
        Some(json!(meta::now_rfc3339()))
    } else {
        return;
    };
    if let Value::Object(status) = updated.entry("status").or_insert_with(|| json!({})) {
        match stamped {
            Some(time) => status.insert("lastPhaseTransitionTime".to_owned(), time),
            None => status.shift_remove("lastPhaseTransitionTime"),
        };
    }
}

/// `podEphemeralContainersStrategy` (`dropNonEphemeralContainerUpdates`): the stored pod with
/// the body's `spec.ephemeralContainers`, and nothing else of the body.
pub(crate) fn ephemeral_containers_update(existing: &Object, body: &Object) -> Object {
    let mut updated = existing.clone();
    let containers = body
        .get("spec")
        .and_then(|s| s.get("ephemeralContainers"))
        .filter(|c| !c.is_null())
        .cloned();
    if let Value::Object(spec) = updated.entry("spec").or_insert_with(|| json!({})) {
        match containers {
            Some(containers) => spec.insert("ephemeralContainers".to_owned(), containers),
            None => spec.shift_remove("ephemeralContainers"),
        };
    }
    if let Some(managed) = body
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .cloned()
    {
        object::metadata_mut(&mut updated).insert("managedFields".to_owned(), managed);
    }
    updated
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn object(value: Value) -> Object {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_deployment_status_write_keeps_spec_and_labels_but_takes_annotations() {
        let registry = Registry::builtin();
        let deployments = registry.lookup("apps", "v1", "deployments").unwrap();
        let existing = object(json!({"metadata": {"name": "web", "labels": {"app": "web"},
            "annotations": {"a": "1"}}, "spec": {"replicas": 1}, "status": {}}));
        let body = object(
            json!({"metadata": {"name": "web", "labels": {"app": "evil"},
            "annotations": {"a": "2"}}, "spec": {"replicas": 5},
            "status": {"observedGeneration": 1}}),
        );
        let updated = status_update(&deployments, &existing, body);
        assert_eq!(updated["spec"], json!({"replicas": 1}));
        assert_eq!(updated["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(updated["metadata"]["annotations"], json!({"a": "2"}));
        assert_eq!(updated["status"], json!({"observedGeneration": 1}));
    }

    #[test]
    fn a_flow_schema_status_write_keeps_all_metadata() {
        let registry = Registry::builtin();
        let schemas = registry
            .lookup("flowcontrol.apiserver.k8s.io", "v1", "flowschemas")
            .unwrap();
        let existing = object(json!({"metadata": {"name": "f", "labels": {"a": "1"}}}));
        let body = object(json!({"metadata": {"name": "f", "labels": {"a": "2"},
            "managedFields": [{"manager": "m"}]}, "status": {"conditions": []}}));
        let updated = status_update(&schemas, &existing, body);
        assert_eq!(
            updated["metadata"],
            json!({"name": "f", "labels": {"a": "1"}, "managedFields": [{"manager": "m"}]})
        );
    }

    #[test]
    fn a_persistent_volume_phase_change_is_stamped() {
        let registry = Registry::builtin();
        let volumes = registry.lookup("", "v1", "persistentvolumes").unwrap();
        let existing = object(
            json!({"metadata": {"name": "pv"}, "status": {"phase": "Pending",
            "lastPhaseTransitionTime": "2024-01-01T00:00:00Z"}}),
        );
        let same = status_update(
            &volumes,
            &existing,
            object(json!({"metadata": {"name": "pv"}, "status": {"phase": "Pending"}})),
        );
        assert_eq!(
            same["status"]["lastPhaseTransitionTime"],
            "2024-01-01T00:00:00Z"
        );
        let bound = status_update(
            &volumes,
            &existing,
            object(json!({"metadata": {"name": "pv"}, "status": {"phase": "Bound"}})),
        );
        assert_ne!(
            bound["status"]["lastPhaseTransitionTime"],
            "2024-01-01T00:00:00Z"
        );
    }
}
