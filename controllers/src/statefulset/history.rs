//! A StatefulSet's history (upstream `controller/history` and the revision half of
//! `stateful_set_utils.go`): each template the set has had is kept as a ControllerRevision
//! `<set>-<hash>` whose data is the patch that restores it, numbered by `revision`, so pods
//! can be told apart by the revision they were made from and a rollback reuses the old
//! name. Pure functions, tested without I/O.

use std::cmp::Ordering;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use serde_json::{Map, Value, json};

use crate::deployment::util::safe_encode;

/// The label of a ControllerRevision holding its hash (upstream
/// `ControllerRevisionHashLabel`).
pub const HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// Revision names keep at most this much of the set's name (upstream: so that the name
/// with its hash stays a valid DNS subdomain).
const MAX_PREFIX: usize = 223;

/// The patch a revision stores (upstream `getPatch`): the set's template, marked to replace
/// the template it is applied to.
pub fn patch_of(set: &StatefulSet) -> Value {
    let template = set.spec.as_ref().map(|s| &s.template);
    let mut template = serde_json::to_value(template).unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut template {
        fields.insert("$patch".to_owned(), json!("replace"));
    } else {
        template = json!({"$patch": "replace"});
    }
    json!({"spec": {"template": template}})
}

/// JSON with object keys sorted at every level, as Go prints the patch it hashes.
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            let mut sorted = Map::new();
            for key in keys {
                sorted.insert(key.clone(), canonical(&fields[key]));
            }
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The hash of a revision's data and the collision count (upstream
/// `HashControllerRevision`: FNV-1 32 of the data, then of the count in decimal, printed in
/// safe characters). The data's bytes are our canonical JSON, not Go's, so values differ
/// from upstream's while keeping their shape and stability.
pub fn hash(data: &Value, collision_count: i32) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash = hash.wrapping_mul(0x0100_0193);
            hash ^= u32::from(*byte);
        }
    };
    feed(canonical(data).to_string().as_bytes());
    feed(collision_count.to_string().as_bytes());
    safe_encode(&hash.to_string())
}

/// The name of the set's revision with `hash`.
pub fn revision_name(set: &StatefulSet, hash: &str) -> String {
    let name = set.metadata.name.as_deref().unwrap_or("");
    let prefix = name.get(..MAX_PREFIX).unwrap_or(name);
    format!("{prefix}-{hash}")
}

/// The revision of the set's current template, numbered `revision` (upstream
/// `newRevision`): the template's labels plus the hash, the set's annotations, the set as
/// controller.
pub fn new_revision(
    set: &StatefulSet,
    controller: OwnerReference,
    revision: i64,
    collision_count: i32,
) -> ControllerRevision {
    // Stored with sorted keys, as Go prints it (kubectl compares the bytes on rollback).
    let data = canonical(&patch_of(set));
    let hash = hash(&data, collision_count);
    let mut labels = set
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(HASH_LABEL.to_owned(), hash.clone());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(revision_name(set, &hash)),
            namespace: set.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: set.metadata.annotations.clone(),
            owner_references: Some(vec![controller]),
            ..ObjectMeta::default()
        },
        data: Some(RawExtension(data)),
        revision,
    }
}

/// The template a revision restores (upstream `ApplyRevision`), `None` if its data is not
/// a template patch.
pub fn template_of(revision: &ControllerRevision) -> Option<PodTemplateSpec> {
    let mut template = revision
        .data
        .as_ref()?
        .0
        .get("spec")?
        .get("template")?
        .clone();
    if let Value::Object(fields) = &mut template {
        fields.remove("$patch");
    }
    serde_json::from_value(template).ok()
}

/// Whether two revisions restore the same state (upstream `EqualRevision`).
pub fn equal(a: &ControllerRevision, b: &ControllerRevision) -> bool {
    let data = |r: &ControllerRevision| r.data.as_ref().map(|d| canonical(&d.0));
    data(a) == data(b)
}

/// Oldest first: by revision, then creation, then name (upstream
/// `SortControllerRevisions`).
pub fn sort(revisions: &mut [ControllerRevision]) {
    revisions.sort_by(|a, b| {
        a.revision
            .cmp(&b.revision)
            .then_with(|| {
                let created = |r: &ControllerRevision| r.metadata.creation_timestamp.clone();
                created(a)
                    .partial_cmp(&created(b))
                    .unwrap_or(Ordering::Equal)
            })
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

/// The number after the highest of sorted `revisions` (1 for none).
pub fn next_revision(revisions: &[ControllerRevision]) -> i64 {
    revisions.last().map_or(1, |r| r.revision.saturating_add(1))
}

/// The revisions to delete so that at most `limit` are kept beside the live ones, oldest
/// first (upstream `truncateHistory`); `revisions` sorted, `live` the names in use.
pub fn to_truncate<'a>(
    revisions: &'a [ControllerRevision],
    live: &[&str],
    limit: i32,
) -> Vec<&'a ControllerRevision> {
    let history: Vec<&ControllerRevision> = revisions
        .iter()
        .filter(|r| !live.contains(&r.metadata.name.as_deref().unwrap_or("")))
        .collect();
    let Ok(limit) = usize::try_from(limit) else {
        return Vec::new(); // a negative limit keeps everything
    };
    let excess = history.len().saturating_sub(limit);
    history.into_iter().take(excess).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(image: &str) -> StatefulSet {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "u",
                "annotations": {"note": "kept"}},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "serviceName": "web",
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": image}]}}}
        }))
        .expect("a set")
    }

    fn owner() -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: "StatefulSet".into(),
            name: "web".into(),
            uid: "u".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    fn numbered(name: &str, revision: i64) -> ControllerRevision {
        ControllerRevision {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            data: None,
            revision,
        }
    }

    #[test]
    fn a_revision_stores_the_template_as_a_replacing_patch() {
        let r = new_revision(&set("nginx:1"), owner(), 3, 0);
        let data = &r.data.as_ref().expect("data").0;
        assert_eq!(data["spec"]["template"]["$patch"], "replace");
        assert_eq!(
            data["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx:1"
        );
        assert_eq!(data.as_object().map(|o| o.len()), Some(1), "only spec");
        assert_eq!(r.revision, 3);
        let hash = r.metadata.labels.as_ref().expect("labels")[HASH_LABEL].clone();
        assert_eq!(r.metadata.name, Some(format!("web-{hash}")));
        assert_eq!(r.metadata.labels.as_ref().expect("labels")["app"], "web");
        assert_eq!(
            r.metadata.annotations.as_ref().expect("annotations")["note"],
            "kept"
        );
        let template = template_of(&r).expect("a template");
        assert_eq!(Some(template), set("nginx:1").spec.map(|s| s.template));
    }

    #[test]
    fn hashes_change_with_the_template_and_the_collision_count_only() {
        let a = patch_of(&set("nginx:1"));
        assert_eq!(hash(&a, 0), hash(&patch_of(&set("nginx:1")), 0));
        assert_ne!(hash(&a, 0), hash(&patch_of(&set("nginx:2")), 0));
        assert_ne!(hash(&a, 0), hash(&a, 1));
        assert_eq!(
            hash(&json!({"b": 1, "a": {"d": 2, "c": 3}}), 0),
            hash(&json!({"a": {"c": 3, "d": 2}, "b": 1}), 0),
            "key order does not matter"
        );
        assert!(
            hash(&a, 0)
                .bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
        );
        assert!(equal(
            &new_revision(&set("nginx:1"), owner(), 1, 0),
            &new_revision(&set("nginx:1"), owner(), 2, 5)
        ));
        assert!(!equal(
            &new_revision(&set("nginx:1"), owner(), 1, 0),
            &new_revision(&set("nginx:2"), owner(), 1, 0)
        ));
    }

    #[test]
    fn history_is_truncated_oldest_first_sparing_live_revisions() {
        let mut revisions = vec![
            numbered("r3", 3),
            numbered("r1", 1),
            numbered("r4", 4),
            numbered("r2", 2),
        ];
        sort(&mut revisions);
        assert_eq!(next_revision(&revisions), 5);
        assert_eq!(next_revision(&[]), 1);
        let names = |rs: Vec<&ControllerRevision>| {
            rs.into_iter()
                .map(|r| r.metadata.name.clone().unwrap_or_default())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(to_truncate(&revisions, &["r1", "r4"], 1)), ["r2"]);
        assert_eq!(
            names(to_truncate(&revisions, &["r4"], 0)),
            ["r1", "r2", "r3"]
        );
        assert!(to_truncate(&revisions, &["r4"], 10).is_empty());
        assert!(to_truncate(&revisions, &[], -1).is_empty());
    }
}
