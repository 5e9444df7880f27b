//! What the API server and the volume controllers agree on about persistent storage: which
//! StorageClass is the cluster's default (`pkg/volume/util/storageclass.go`,
//! `GetDefaultClass`; asked by the DefaultStorageClass admission plugin on a new claim and by
//! the PersistentVolume binder's retroactive assignment), and the in-use protection
//! finalizers the server adds and the protection controllers remove
//! (`pkg/volume/util/finalizer.go`).

use serde_json::Value;

/// The finalizer that keeps a claim a pod uses (`PVCProtectionFinalizer`).
pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";
/// The finalizer that keeps a bound volume (`PVProtectionFinalizer`).
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";

/// The annotations that mark a StorageClass default (`IsDefaultStorageClassAnnotation` and
/// its beta form, both honoured).
pub const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/// Whether a StorageClass (as JSON) is marked default (`IsDefaultAnnotation`: `"true"`).
pub fn is_default_class(class: &Value) -> bool {
    DEFAULT_CLASS_ANNOTATIONS
        .iter()
        .any(|key| class["metadata"]["annotations"][*key].as_str() == Some("true"))
}

/// The name of the default class among `classes` (as JSON): of those marked default, the
/// newest by `creationTimestamp`, then the lowest name; `None` when none is marked.
pub fn default_class_name(classes: &[Value]) -> Option<String> {
    let name = |c: &Value| c["metadata"]["name"].as_str().unwrap_or("").to_owned();
    // RFC 3339 in UTC to the second, as the server writes it: text order is time order.
    let created = |c: &Value| {
        c["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    classes
        .iter()
        .filter(|c| is_default_class(c))
        .min_by(|a, b| {
            created(b)
                .cmp(&created(a))
                .then_with(|| name(a).cmp(&name(b)))
        })
        .map(name)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_default_is_the_newest_marked_class_then_the_lowest_name() {
        let class = |name: &str, created: &str, annotation: Option<&str>| {
            let annotations = match annotation {
                Some(key) => json!({key: "true"}),
                None => json!({}),
            };
            json!({"metadata": {"name": name, "creationTimestamp": created,
                "annotations": annotations}})
        };
        let marked = Some(DEFAULT_CLASS_ANNOTATIONS[0]);
        let classes = [
            class("old", "2024-01-01T00:00:00Z", marked),
            class("b", "2025-01-01T00:00:00Z", marked),
            class(
                "a",
                "2025-01-01T00:00:00Z",
                Some(DEFAULT_CLASS_ANNOTATIONS[1]),
            ),
            class("newest-unmarked", "2026-01-01T00:00:00Z", None),
        ];
        assert_eq!(default_class_name(&classes).as_deref(), Some("a"));
        assert_eq!(default_class_name(&classes[3..]), None);
        assert_eq!(default_class_name(&classes[..1]).as_deref(), Some("old"));
    }
}
