//! The printers of the storage kinds: PersistentVolumes, PersistentVolumeClaims and
//! StorageClasses (`printPersistentVolume`, `printPersistentVolumeClaim`, `printStorageClass`).

use serde_json::{Value, json};

use super::{
    AGE, Column, NAME, age, column, docs, field, flag, list, map, name, quantity, text, wide,
};

pub(super) const PERSISTENT_VOLUME_COLUMNS: &[Column] = &[
    NAME,
    column("Capacity", "string", docs::PV_CAPACITY),
    column("Access Modes", "string", docs::PV_ACCESS_MODES),
    column("Reclaim Policy", "string", docs::PV_RECLAIM_POLICY),
    column("Status", "string", docs::PV_PHASE),
    column("Claim", "string", docs::PV_CLAIM_REF),
    column("StorageClass", "string", docs::PV_STORAGE_CLASS),
    column(
        "VolumeAttributesClass",
        "string",
        docs::PV_VOLUME_ATTRIBUTES_CLASS,
    ),
    column("Reason", "string", docs::PV_REASON),
    AGE,
    wide("VolumeMode", docs::PV_VOLUME_MODE),
];

pub(super) const PERSISTENT_VOLUME_CLAIM_COLUMNS: &[Column] = &[
    NAME,
    column("Status", "string", docs::PVC_PHASE),
    column("Volume", "string", docs::PVC_VOLUME_NAME),
    column("Capacity", "string", docs::PVC_CAPACITY),
    column("Access Modes", "string", docs::PVC_ACCESS_MODES),
    column("StorageClass", "string", docs::PVC_STORAGE_CLASS),
    column(
        "VolumeAttributesClass",
        "string",
        docs::PVC_VOLUME_ATTRIBUTES_CLASS,
    ),
    AGE,
    wide("VolumeMode", docs::PVC_VOLUME_MODE),
];

pub(super) const STORAGE_CLASS_COLUMNS: &[Column] = &[
    NAME,
    column("Provisioner", "string", docs::SC_PROVISIONER),
    column("ReclaimPolicy", "string", docs::SC_RECLAIM_POLICY),
    column("VolumeBindingMode", "string", docs::SC_VOLUME_BINDING_MODE),
    column(
        "AllowVolumeExpansion",
        "string",
        docs::SC_ALLOW_VOLUME_EXPANSION,
    ),
    AGE,
];

/// The annotation that names a volume's or a claim's class before `storageClassName`.
const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// `printPersistentVolume`.
pub(super) fn persistent_volume(volume: &Value, now: i128) -> Vec<Value> {
    let claim = match field(volume, &["spec", "claimRef"]) {
        Some(claim) => format!("{}/{}", text(claim, &["namespace"]), text(claim, &["name"])),
        None => String::new(),
    };
    // `helper.GetPersistentVolumeClass`.
    let class = annotation(volume, BETA_STORAGE_CLASS)
        .unwrap_or_else(|| text(volume, &["spec", "storageClassName"]));
    vec![
        json!(name(volume)),
        json!(storage(volume, &["spec", "capacity"])),
        json!(access_modes(list(volume, &["spec", "accessModes"]))),
        json!(defaulted(
            text(volume, &["spec", "persistentVolumeReclaimPolicy"]),
            "Retain"
        )),
        json!(phase(volume)),
        json!(claim),
        json!(class),
        json!(volume_attributes_class(volume)),
        json!(text(volume, &["status", "reason"])),
        json!(age(volume, now)),
        json!(volume_mode(volume)),
    ]
}

/// `printPersistentVolumeClaim`: capacity and access modes once bound to a volume.
pub(super) fn persistent_volume_claim(claim: &Value, now: i128) -> Vec<Value> {
    let volume = text(claim, &["spec", "volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            storage(claim, &["status", "capacity"]),
            access_modes(list(claim, &["status", "accessModes"])),
        )
    };
    // `helper.GetPersistentVolumeClaimClass`.
    let class = annotation(claim, BETA_STORAGE_CLASS)
        .unwrap_or_else(|| text(claim, &["spec", "storageClassName"]));
    vec![
        json!(name(claim)),
        json!(phase(claim)),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class),
        json!(volume_attributes_class(claim)),
        json!(age(claim, now)),
        json!(volume_mode(claim)),
    ]
}

/// `printStorageClass`: the default class is marked, reclaim policy and binding mode default.
pub(super) fn storage_class(class: &Value, now: i128) -> Vec<Value> {
    // `storageutil.IsDefaultAnnotation`.
    let is_default = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .into_iter()
    .any(|key| annotation(class, key) == Some("true"));
    let name = if is_default {
        format!("{} (default)", name(class))
    } else {
        name(class).to_owned()
    };
    vec![
        json!(name),
        json!(text(class, &["provisioner"])),
        json!(defaulted(text(class, &["reclaimPolicy"]), "Delete")),
        json!(defaulted(text(class, &["volumeBindingMode"]), "Immediate")),
        json!(flag(class, &["allowVolumeExpansion"])),
        json!(age(class, now)),
    ]
}

/// The annotation `key` of `object`, if set (even to "").
fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    map(object, &["metadata", "annotations"])
        .and_then(|annotations| annotations.get(key))
        .and_then(Value::as_str)
}

/// `value`, or the `default` the real server would have stored for an empty field.
fn defaulted<'a>(value: &'a str, default: &'a str) -> &'a str {
    if value.is_empty() { default } else { value }
}

/// The `storage` quantity of the resource list at `path` (Go's zero `Quantity`, `0`, when
/// there is none).
fn storage(object: &Value, path: &[&str]) -> String {
    let mut path = path.to_vec();
    path.push("storage");
    quantity(object, &path).unwrap_or_else(|| "0".to_owned())
}

/// A volume's or claim's phase (`Pending` until set), `Terminating` once deleted.
fn phase(object: &Value) -> &str {
    if field(object, &["metadata", "deletionTimestamp"]).is_some() {
        "Terminating"
    } else {
        defaulted(text(object, &["status", "phase"]), "Pending")
    }
}

fn volume_attributes_class(object: &Value) -> &str {
    field(object, &["spec", "volumeAttributesClassName"])
        .and_then(Value::as_str)
        .unwrap_or("<unset>")
}

/// The volume mode (`Filesystem` unless set).
fn volume_mode(object: &Value) -> &str {
    defaulted(text(object, &["spec", "volumeMode"]), "Filesystem")
}

/// `helper.GetAccessModesAsString`: the modes present, each once, in a fixed order.
fn access_modes(modes: &[Value]) -> String {
    let has = |mode: &str| modes.iter().any(|m| m.as_str() == Some(mode));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .into_iter()
    .filter(|(mode, _)| has(mode))
    .map(|(_, short)| short)
    .collect::<Vec<_>>()
    .join(",")
}

#[cfg(test)]
mod tests {
    use super::super::tests::{CREATED, cells};
    use super::*;
    use crate::registry::Printer;

    #[test]
    fn access_modes_print_short_once_each_in_a_fixed_order() {
        let modes = json!([
            "ReadWriteOncePod",
            "ReadWriteMany",
            "ReadWriteOnce",
            "ReadWriteOnce"
        ]);
        assert_eq!(access_modes(modes.as_array().unwrap()), "RWO,RWX,RWOP");
        assert_eq!(access_modes(&[]), "");
    }

    #[test]
    fn persistent_volumes_print_capacity_modes_policy_phase_claim_and_class() {
        let volume = json!({
            "metadata": {"name": "pv1", "creationTimestamp": CREATED},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "fast",
                     "claimRef": {"namespace": "ns", "name": "data"}, "volumeMode": "Block"},
            "status": {"phase": "Bound"},
        });
        assert_eq!(
            cells(Printer::PersistentVolume, volume),
            [
                json!("pv1"),
                json!("10Gi"),
                json!("RWO"),
                json!("Delete"),
                json!("Bound"),
                json!("ns/data"),
                json!("fast"),
                json!("<unset>"),
                json!(""),
                json!("10m"),
                json!("Block")
            ]
        );
        let bare = json!({"metadata": {"name": "pv2", "deletionTimestamp": CREATED,
                                       "annotations": {BETA_STORAGE_CLASS: "old"}},
                          "spec": {"storageClassName": "new"}});
        let bare = cells(Printer::PersistentVolume, bare);
        assert_eq!(
            (&bare[1], &bare[3], &bare[4], &bare[5], &bare[6], &bare[10]),
            (
                &json!("0"),
                &json!("Retain"),
                &json!("Terminating"),
                &json!(""),
                &json!("old"),
                &json!("Filesystem")
            ),
            "defaults; the beta annotation wins over the class name"
        );
    }

    #[test]
    fn claims_print_capacity_and_modes_only_once_bound() {
        let pending = json!({
            "metadata": {"name": "data", "creationTimestamp": CREATED},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "storageClassName": "standard"},
            "status": {"phase": "Pending"},
        });
        assert_eq!(
            cells(Printer::PersistentVolumeClaim, pending),
            [
                json!("data"),
                json!("Pending"),
                json!(""),
                json!(""),
                json!(""),
                json!("standard"),
                json!("<unset>"),
                json!("10m"),
                json!("Filesystem")
            ]
        );
        let bound = json!({
            "metadata": {"name": "data"},
            "spec": {"volumeName": "pv1", "volumeAttributesClassName": "gold"},
            "status": {"phase": "Bound", "capacity": {"storage": "2Gi"},
                       "accessModes": ["ReadWriteMany", "ReadOnlyMany"]},
        });
        assert_eq!(
            cells(Printer::PersistentVolumeClaim, bound)[1..7],
            [
                json!("Bound"),
                json!("pv1"),
                json!("2Gi"),
                json!("ROX,RWX"),
                json!(""),
                json!("gold")
            ]
        );
    }

    #[test]
    fn storage_classes_mark_the_default_and_read_defaults() {
        let class = json!({
            "metadata": {"name": "standard", "creationTimestamp": CREATED,
                         "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": true,
        });
        assert_eq!(
            cells(Printer::StorageClass, class),
            [
                json!("standard (default)"),
                json!("rancher.io/local-path"),
                json!("Delete"),
                json!("WaitForFirstConsumer"),
                json!(true),
                json!("10m")
            ]
        );
        let plain = json!({"metadata": {"name": "slow", "annotations": {
            "storageclass.beta.kubernetes.io/is-default-class": "false"}}, "provisioner": "p",
            "reclaimPolicy": "Retain"});
        assert_eq!(
            cells(Printer::StorageClass, plain)[..5],
            [
                json!("slow"),
                json!("p"),
                json!("Retain"),
                json!("Immediate"),
                json!(false)
            ]
        );
    }
}
