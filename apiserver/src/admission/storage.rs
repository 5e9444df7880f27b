//! Storage kinds as the real server admits them: PersistentVolumeClaims, PersistentVolumes and
//! StorageClasses. Their defaults (`pkg/apis/core/v1/defaults.go`, `pkg/apis/storage/v1/
//! defaults.go`), the strategies' create-time status (`pkg/registry/core/persistentvolume
//! {,claim}/strategy.go`: phase `Pending`), the admission plugins every cluster runs on them
//! (`plugin/pkg/admission/storage/storageclass/setdefault`: a claim without a class gets the
//! default StorageClass; `.../storageobjectinuseprotection`: the `kubernetes.io/pvc-protection`
//! and `kubernetes.io/pv-protection` finalizers, which the protection controllers remove once
//! nothing uses the object), and the main rules of their validation
//! (`pkg/apis/core/validation`, `pkg/apis/storage/validation`).
//!
//! A claim's storage request may grow only as the PersistentVolumeClaimResize admission
//! plugin allows (bound, of a class with `allowVolumeExpansion`); where upstream would then
//! leave it to an external resizer, kubemock refuses, having none.
//!
//! Not checked (stored as sent): PersistentVolume volume sources beyond "exactly one",
//! mount options, node affinity terms, data sources, StorageClass parameters and
//! allowedTopologies. A claim's immutable-spec refusal carries upstream's sentence without the
//! Go struct diff that follows it there.

use serde_json::{Value, json};

use super::fields::{
    child, default_to, forbidden, go_str, immutable, items, not_supported, obj_at, required,
};
use kubemock_apimachinery::volume::{PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER};

use crate::meta::FieldError;
use crate::object::Object;

/// The beta annotation that named a claim's class before `spec.storageClassName`
/// (`core.BetaStorageClassAnnotation`); a claim carrying it has a class.
const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// `supportedAccessModes`.
const ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
/// `supportedVolumeModes`.
const VOLUME_MODES: [&str; 2] = ["Block", "Filesystem"];
/// `supportedReclaimPolicy` (PersistentVolumes).
const VOLUME_RECLAIM_POLICIES: [&str; 3] = ["Delete", "Recycle", "Retain"];
/// `supportedReclaimPolicy` (StorageClasses).
const CLASS_RECLAIM_POLICIES: [&str; 2] = ["Delete", "Retain"];
/// `supportedVolumeBindingModes`.
const BINDING_MODES: [&str; 2] = ["Immediate", "WaitForFirstConsumer"];
/// The volume sources a PersistentVolume may name (`PersistentVolumeSource`'s fields).
const VOLUME_SOURCES: [&str; 22] = [
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "csi",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "glusterfs",
    "hostPath",
    "iscsi",
    "local",
    "nfs",
    "photonPersistentDisk",
    "portworxVolume",
    "quobyte",
    "rbd",
    "scaleIO",
    "storageos",
    "vsphereVolume",
];

/// `SetDefaults_PersistentVolumeClaimSpec`.
pub(super) fn default_claim(object: &mut Object) {
    default_to(child(object, "spec"), "volumeMode", json!("Filesystem"));
}

/// `SetDefaults_PersistentVolume` (and its spec's).
pub(super) fn default_volume(object: &mut Object) {
    let spec = child(object, "spec");
    default_to(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
    default_to(spec, "volumeMode", json!("Filesystem"));
    if let Some(Value::Object(host_path)) = spec.get_mut("hostPath") {
        default_to(host_path, "type", json!(""));
    }
}

/// `SetDefaults_StorageClass`.
pub(super) fn default_class(object: &mut Object) {
    default_to(object, "reclaimPolicy", json!("Delete"));
    default_to(object, "volumeBindingMode", json!("Immediate"));
}

/// The strategies' `PrepareForCreate` (status `Pending`; a volume's phase transition time) and
/// StorageObjectInUseProtection's finalizer.
pub(super) fn prepare_create(object: &mut Object, volume: bool) {
    let status = if volume {
        json!({"phase": "Pending", "lastPhaseTransitionTime": crate::meta::now_rfc3339()})
    } else {
        json!({"phase": "Pending"})
    };
    object.insert("status".to_owned(), status);
    let finalizer = if volume {
        PV_PROTECTION_FINALIZER
    } else {
        PVC_PROTECTION_FINALIZER
    };
    let metadata = crate::object::metadata_mut(object);
    let finalizers = metadata.entry("finalizers").or_insert_with(|| json!([]));
    if !finalizers.is_array() {
        *finalizers = json!([]);
    }
    if let Value::Array(finalizers) = finalizers
        && !finalizers.iter().any(|f| f == finalizer)
    {
        finalizers.push(json!(finalizer));
    }
}

/// Whether a claim already names a class (`helper.PersistentVolumeClaimHasClass`): the beta
/// annotation, or `spec.storageClassName` present, even empty ("no class").
pub(super) fn claim_has_class(object: &Object) -> bool {
    obj_at(object, &["metadata", "annotations", BETA_CLASS_ANNOTATION]).is_some()
        || obj_at(object, &["spec", "storageClassName"]).is_some_and(|c| !c.is_null())
}

/// Access modes: at least one when `required_detail` says so, each supported, ReadWriteOncePod
/// alone.
fn validate_access_modes(
    spec: &Value,
    at: &str,
    required_detail: &str,
    errors: &mut Vec<FieldError>,
) {
    let modes = items(Some(spec), "accessModes");
    if modes.is_empty() {
        errors.push(required(format!("{at}.accessModes"), required_detail));
    }
    let (mut once_pod, mut others) = (false, false);
    for mode in modes {
        let mode = mode.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(&mode) {
            errors.push(not_supported(
                format!("{at}.accessModes"),
                mode,
                &ACCESS_MODES,
            ));
        } else if mode == "ReadWriteOncePod" {
            once_pod = true;
        } else {
            others = true;
        }
    }
    if once_pod && others {
        errors.push(forbidden(
            format!("{at}.accessModes"),
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
}

/// `storage` in `quantities` (a claim's requests, a volume's capacity) must be above zero.
fn validate_positive_storage(
    quantities: Option<&Value>,
    field: &str,
    errors: &mut Vec<FieldError>,
) {
    let Some(text) = quantities
        .and_then(|q| q.get("storage"))
        .and_then(Value::as_str)
    else {
        return;
    };
    // Unparsable quantities were refused when the body was decoded.
    if let Ok(quantity) = kubemock_apimachinery::quantity::Quantity::parse(text)
        && quantity.sign() <= 0
    {
        errors.push(super::fields::invalid(
            field.to_owned(),
            go_str(&quantity.to_string()),
            "must be greater than zero",
        ));
    }
}

/// `ValidatePersistentVolumeClaimSpec`'s main rules.
pub(super) fn validate_claim(object: &Object, errors: &mut Vec<FieldError>) {
    let spec = object.get("spec").unwrap_or(&Value::Null);
    validate_access_modes(spec, "spec", "at least 1 access mode is required", errors);
    let requests = spec.get("resources").and_then(|r| r.get("requests"));
    if requests.and_then(|r| r.get("storage")).is_none() {
        errors.push(required("spec.resources[storage]", ""));
    } else {
        validate_positive_storage(requests, "spec.resources[storage]", errors);
    }
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str)
        && !VOLUME_MODES.contains(&mode)
    {
        errors.push(not_supported("spec.volumeMode", mode, &VOLUME_MODES));
    }
}

/// The storage a claim requests (`spec.resources.requests.storage`), when it parses.
pub(super) fn requested_storage(
    claim: &Object,
) -> Option<kubemock_apimachinery::quantity::Quantity> {
    obj_at(claim, &["spec", "resources", "requests", "storage"])
        .and_then(Value::as_str)
        .and_then(|s| kubemock_apimachinery::quantity::Quantity::parse(s).ok())
}

/// The claim's class as `GetPersistentVolumeClaimClass` reads it: the beta annotation, else
/// `spec.storageClassName`, else none (`""`).
pub(super) fn claim_class(claim: &Object) -> &str {
    obj_at(claim, &["metadata", "annotations", BETA_CLASS_ANNOTATION])
        .or_else(|| obj_at(claim, &["spec", "storageClassName"]))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Why the PersistentVolumeClaimResize admission plugin refuses an update of `old` to `new`
/// (`plugin/pkg/admission/storage/persistentvolume/resize/admission.go`), given whether the
/// claim's class allows expansion; `None` when it does not grow the request, or may.
pub(super) fn resize_refusal(
    old: &Object,
    new: &Object,
    class_allows: bool,
) -> Option<&'static str> {
    let (Some(old_size), Some(new_size)) = (requested_storage(old), requested_storage(new)) else {
        return None;
    };
    if new_size <= old_size {
        return None;
    }
    if obj_at(old, &["status", "phase"]).and_then(Value::as_str) != Some("Bound") {
        return Some("Only bound persistent volume claims can be expanded");
    }
    let (old_class, new_class) = (claim_class(old), claim_class(new));
    if !class_allows || old_class.is_empty() || old_class != new_class {
        return Some(
            "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
        );
    }
    // Upstream lets it through to an external resizer; kubemock has none, and a claim whose
    // request grew while nothing resized it would look accepted and never change.
    Some(
        "kubemock does not simulate volume expansion: no resizer acts on the claim, so its capacity would never change",
    )
}

/// `ValidatePersistentVolumeClaimUpdate`: the spec is immutable but for the storage request
/// (not below its old value) and the volume name of a claim not yet bound to one.
pub(super) fn validate_claim_update(old: &Object, new: &Object, errors: &mut Vec<FieldError>) {
    let spec_without = |object: &Object, volume_name: bool| {
        let mut spec = object.get("spec").cloned().unwrap_or(Value::Null);
        if let Value::Object(spec) = &mut spec {
            if let Some(Value::Object(resources)) = spec.get_mut("resources")
                && let Some(Value::Object(requests)) = resources.get_mut("requests")
            {
                requests.shift_remove("storage");
            }
            if volume_name {
                spec.shift_remove("volumeName");
            }
        }
        spec
    };
    let unbound = obj_at(old, &["spec", "volumeName"])
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    // A claim with no class at all may get one (`validateStorageClassUpgradeFromNil`: the
    // binder's retroactive default class).
    let classless = !claim_has_class(old);
    let comparable = |object: &Object| {
        let mut spec = spec_without(object, unbound);
        if classless && let Value::Object(spec) = &mut spec {
            spec.shift_remove("storageClassName");
        }
        spec
    };
    if comparable(old) != comparable(new) {
        errors.push(forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    if let (Some(old_size), Some(new_size)) = (requested_storage(old), requested_storage(new))
        && new_size < old_size
    {
        errors.push(forbidden(
            "spec.resources.requests.storage",
            "field can not be less than previous value",
        ));
    }
}

/// `ValidatePersistentVolumeSpec`'s main rules.
pub(super) fn validate_volume(object: &Object, errors: &mut Vec<FieldError>) {
    let spec = object.get("spec").unwrap_or(&Value::Null);
    validate_access_modes(spec, "spec", "", errors);
    let capacity = spec.get("capacity").and_then(Value::as_object);
    if capacity.is_none_or(|c| c.is_empty()) {
        errors.push(required("spec.capacity", ""));
    }
    if capacity.is_some_and(|c| !c.contains_key("storage") || c.len() > 1) {
        errors.push(not_supported("spec.capacity", "", &["storage"]));
    }
    validate_positive_storage(spec.get("capacity"), "spec.capacity[storage]", errors);
    if let Some(policy) = spec
        .get("persistentVolumeReclaimPolicy")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        && !VOLUME_RECLAIM_POLICIES.contains(&policy)
    {
        errors.push(not_supported(
            "spec.persistentVolumeReclaimPolicy",
            policy,
            &VOLUME_RECLAIM_POLICIES,
        ));
    }
    let sources: Vec<&str> = VOLUME_SOURCES
        .iter()
        .copied()
        .filter(|s| spec.get(*s).is_some_and(|v| !v.is_null()))
        .collect();
    match sources.as_slice() {
        [] => errors.push(required("spec", "must specify a volume type")),
        [_] => {}
        [_, rest @ ..] => {
            for source in rest {
                errors.push(forbidden(
                    format!("spec.{source}"),
                    "may not specify more than 1 volume type",
                ));
            }
        }
    }
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str)
        && !VOLUME_MODES.contains(&mode)
    {
        errors.push(not_supported("spec.volumeMode", mode, &VOLUME_MODES));
    }
}

/// `ValidatePersistentVolumeUpdate`: the volume mode is immutable.
pub(super) fn validate_volume_update(old: &Object, new: &Object, errors: &mut Vec<FieldError>) {
    let mode = |object: &Object| obj_at(object, &["spec", "volumeMode"]).cloned();
    if mode(old) != mode(new) {
        let value = mode(new)
            .and_then(|m| m.as_str().map(go_str))
            .unwrap_or_else(|| "null".to_owned());
        errors.push(immutable("volumeMode", value));
    }
}

/// `ValidateStorageClass`'s main rules.
pub(super) fn validate_class(object: &Object, errors: &mut Vec<FieldError>) {
    let provisioner = object
        .get("provisioner")
        .and_then(Value::as_str)
        .unwrap_or("");
    if provisioner.is_empty() {
        errors.push(required("provisioner", ""));
    }
    if let Some(policy) = object.get("reclaimPolicy").and_then(Value::as_str)
        && !CLASS_RECLAIM_POLICIES.contains(&policy)
    {
        errors.push(not_supported(
            "reclaimPolicy",
            policy,
            &CLASS_RECLAIM_POLICIES,
        ));
    }
    if let Some(mode) = object.get("volumeBindingMode").and_then(Value::as_str)
        && !BINDING_MODES.contains(&mode)
    {
        errors.push(not_supported("volumeBindingMode", mode, &BINDING_MODES));
    }
}

/// `ValidateStorageClassUpdate`: parameters, provisioner, reclaim policy and binding mode are
/// fixed.
pub(super) fn validate_class_update(old: &Object, new: &Object, errors: &mut Vec<FieldError>) {
    let empty_map = json!({});
    let parameters = |o: &Object| {
        o.get("parameters")
            .filter(|p| !p.is_null())
            .unwrap_or(&empty_map)
            .clone()
    };
    if parameters(old) != parameters(new) {
        errors.push(forbidden(
            "parameters",
            "updates to parameters are forbidden.",
        ));
    }
    for (field, what) in [
        ("provisioner", "provisioner"),
        ("reclaimPolicy", "reclaimPolicy"),
    ] {
        if old.get(field) != new.get(field) {
            errors.push(forbidden(
                field,
                &format!("updates to {what} are forbidden."),
            ));
        }
    }
    if old.get("volumeBindingMode") != new.get("volumeBindingMode") {
        let value = new
            .get("volumeBindingMode")
            .and_then(Value::as_str)
            .map(go_str)
            .unwrap_or_else(|| "null".to_owned());
        errors.push(immutable("volumeBindingMode", value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Object {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("test objects are objects"),
        }
    }

    fn rendered(errors: &[FieldError]) -> Vec<String> {
        errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect()
    }

    #[test]
    fn claims_get_upstreams_required_and_immutable_errors() {
        let mut errors = Vec::new();
        validate_claim(&object(json!({"spec": {}})), &mut errors);
        assert_eq!(
            rendered(&errors),
            [
                "spec.accessModes: Required value: at least 1 access mode is required",
                "spec.resources[storage]: Required value",
            ]
        );
        let old = object(json!({"spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}));
        let mut bound = old.clone();
        bound["spec"]["volumeName"] = json!("pv-1");
        let mut errors = Vec::new();
        validate_claim_update(&old, &bound, &mut errors);
        assert!(errors.is_empty(), "binding an unbound claim is allowed");
        let mut changed = bound.clone();
        changed["spec"]["accessModes"] = json!(["ReadWriteMany"]);
        changed["spec"]["resources"]["requests"]["storage"] = json!("512Mi");
        let mut errors = Vec::new();
        validate_claim_update(&bound, &changed, &mut errors);
        assert_eq!(
            rendered(&errors),
            [
                "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
                "spec.resources.requests.storage: Forbidden: field can not be less than previous value",
            ]
        );
    }

    #[test]
    fn growing_a_claim_is_refused_as_the_resize_plugin_refuses_it() {
        let claim = |size: &str, phase: &str| {
            object(json!({"spec": {"storageClassName": "standard",
                "resources": {"requests": {"storage": size}}}, "status": {"phase": phase}}))
        };
        let bound = claim("1Gi", "Bound");
        assert_eq!(resize_refusal(&bound, &claim("1Gi", "Bound"), false), None);
        assert_eq!(
            resize_refusal(&claim("1Gi", "Pending"), &claim("2Gi", "Pending"), true),
            Some("Only bound persistent volume claims can be expanded")
        );
        assert!(
            resize_refusal(&bound, &claim("2Gi", "Bound"), false).is_some_and(
                |why| why.starts_with("only dynamically provisioned pvc can be resized")
            )
        );
        assert!(
            resize_refusal(&bound, &claim("2Gi", "Bound"), true)
                .is_some_and(|why| why.starts_with("kubemock does not simulate volume expansion"))
        );
    }

    #[test]
    fn volumes_need_capacity_modes_and_exactly_one_source() {
        let mut errors = Vec::new();
        validate_volume(&object(json!({"spec": {}})), &mut errors);
        assert_eq!(
            rendered(&errors),
            [
                "spec.accessModes: Required value",
                "spec.capacity: Required value",
                "spec: Required value: must specify a volume type",
            ]
        );
        let mut errors = Vec::new();
        validate_volume(
            &object(json!({"spec": {"accessModes": ["ReadWriteOnce"],
                "capacity": {"storage": "1Gi"}, "hostPath": {"path": "/a"},
                "nfs": {"server": "s", "path": "/"}}})),
            &mut errors,
        );
        assert_eq!(
            rendered(&errors),
            ["spec.nfs: Forbidden: may not specify more than 1 volume type"]
        );
    }

    #[test]
    fn classes_need_a_provisioner_and_keep_it() {
        let mut errors = Vec::new();
        validate_class(&object(json!({"volumeBindingMode": "Later"})), &mut errors);
        assert_eq!(
            rendered(&errors),
            [
                "provisioner: Required value",
                "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"",
            ]
        );
        let old = object(json!({"provisioner": "a", "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate"}));
        let new = object(json!({"provisioner": "b", "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer", "parameters": {"x": "y"}}));
        let mut errors = Vec::new();
        validate_class_update(&old, &new, &mut errors);
        assert_eq!(
            rendered(&errors),
            [
                "parameters: Forbidden: updates to parameters are forbidden.",
                "provisioner: Forbidden: updates to provisioner are forbidden.",
                "volumeBindingMode: Invalid value: \"WaitForFirstConsumer\": field is immutable",
            ]
        );
    }
}
