//! A StatefulSet's pods have identities (upstream `stateful_set_utils.go`): a name
//! `<set>-<ordinal>`, labels naming it, a hostname in the set's service, and claims
//! `<template>-<set>-<ordinal>` that outlive the pod. These pure functions derive that
//! identity, tell whether a pod still has it, and decide who owns a claim under the
//! set's retention policy; tested without I/O.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubemock_apimachinery::intstr;

use crate::replicaset::pods::{is_available, is_ready};

/// The label holding a pod's own name (upstream `StatefulSetPodNameLabel`), for services
/// that select one member.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label holding a pod's ordinal (upstream `PodIndexLabel`, on by default since 1.28).
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// The label holding the name of the ControllerRevision a pod was made from (upstream
/// `StatefulSetRevisionLabel`).
pub const REVISION_LABEL: &str = "controller-revision-hash";

/// The claims of a pod whose set's policy for that event is `Delete` go with it.
const DELETE: &str = "Delete";

/// The parent name and ordinal in a pod name, as upstream's `(.*)-([0-9]+)$` reads it: the
/// ordinal is `None` when it does not fit an i32 (the parent is still read).
pub fn parent_and_ordinal(name: &str) -> Option<(&str, Option<i32>)> {
    let (parent, digits) = name.rsplit_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((parent, digits.parse().ok()))
}

/// The pod's ordinal, if its name has one.
pub fn ordinal(pod: &Pod) -> Option<i32> {
    parent_and_ordinal(pod.metadata.name.as_deref().unwrap_or("")).and_then(|(_, o)| o)
}

fn name(set: &StatefulSet) -> &str {
    set.metadata.name.as_deref().unwrap_or("")
}

/// Whether `pod` is named as a member of `set` (upstream `isMemberOf`).
pub fn is_member_of(set: &StatefulSet, pod: &Pod) -> bool {
    parent_and_ordinal(pod.metadata.name.as_deref().unwrap_or(""))
        .is_some_and(|(parent, _)| parent == name(set))
}

/// `spec.replicas` (1 when absent, as the API server defaults it).
pub fn replicas(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1)
        .max(0)
}

/// The first ordinal (`spec.ordinals.start`, default 0).
pub fn start_ordinal(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|s| s.ordinals.as_ref())
        .and_then(|o| o.start)
        .unwrap_or(0)
}

/// Whether the pod's ordinal lies in `[start, start + replicas)`.
pub fn in_ordinal_range(pod: &Pod, set: &StatefulSet) -> bool {
    let start = start_ordinal(set);
    ordinal(pod).is_some_and(|o| o >= start && o < start.saturating_add(replicas(set)))
}

/// The name of the set's pod with `ordinal`.
pub fn pod_name(set: &StatefulSet, ordinal: i32) -> String {
    format!("{}-{ordinal}", name(set))
}

/// The name of the claim from `template` for the pod with `ordinal`.
pub fn claim_name(template: &str, set: &StatefulSet, ordinal: i32) -> String {
    format!("{template}-{}-{ordinal}", name(set))
}

fn claim_templates(set: &StatefulSet) -> &[PersistentVolumeClaim] {
    set.spec
        .as_ref()
        .and_then(|s| s.volume_claim_templates.as_deref())
        .unwrap_or(&[])
}

/// The claims a pod with `ordinal` needs, each with its template's name: the templates
/// renamed, in the set's namespace, labelled with the set's `matchLabels` (upstream
/// `getPersistentVolumeClaims`).
pub fn claims_for(set: &StatefulSet, ordinal: i32) -> Vec<(String, PersistentVolumeClaim)> {
    let match_labels = set
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone())
        .unwrap_or_default();
    claim_templates(set)
        .iter()
        .map(|template| {
            let template_name = template.metadata.name.clone().unwrap_or_default();
            let mut labels = template.metadata.labels.clone().unwrap_or_default();
            labels.extend(match_labels.clone());
            let claim = PersistentVolumeClaim {
                metadata: ObjectMeta {
                    name: Some(claim_name(&template_name, set, ordinal)),
                    namespace: set.metadata.namespace.clone(),
                    labels: Some(labels),
                    annotations: template.metadata.annotations.clone(),
                    ..ObjectMeta::default()
                },
                spec: template.spec.clone(),
                status: None,
            };
            (template_name, claim)
        })
        .collect()
}

/// Whether the pod's name and name label are its identity in `set` (upstream
/// `identityMatches`).
pub fn identity_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let Some(ordinal) = ordinal(pod) else {
        return false;
    };
    let name = pod_name(set, ordinal);
    is_member_of(set, pod)
        && pod.metadata.name.as_deref() == Some(name.as_str())
        && pod.metadata.namespace == set.metadata.namespace
        && pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(POD_NAME_LABEL))
            .map(String::as_str)
            == Some(name.as_str())
}

/// Whether the pod's volumes mount each of its claims (upstream `storageMatches`).
pub fn storage_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let Some(ordinal) = ordinal(pod) else {
        return false;
    };
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
    claims_for(set, ordinal).iter().all(|(template, claim)| {
        volumes.into_iter().flatten().any(|v| {
            v.name == *template
                && v.persistent_volume_claim.as_ref().map(|c| &c.claim_name)
                    == claim.metadata.name.as_ref()
        })
    })
}

/// Sets the pod's name, namespace and identity labels (upstream `updateIdentity`).
pub fn update_identity(set: &StatefulSet, pod: &mut Pod) {
    let Some(ordinal) = ordinal(pod) else {
        return;
    };
    let name = pod_name(set, ordinal);
    pod.metadata.name = Some(name.clone());
    pod.metadata.namespace = set.metadata.namespace.clone();
    let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(POD_NAME_LABEL.to_owned(), name);
    labels.insert(POD_INDEX_LABEL.to_owned(), ordinal.to_string());
}

/// Makes the pod's volumes mount its claims, replacing volumes of the templates' names
/// (upstream `updateStorage`).
pub fn update_storage(set: &StatefulSet, pod: &mut Pod) {
    let Some(ordinal) = ordinal(pod) else {
        return;
    };
    let claims = claims_for(set, ordinal);
    if claims.is_empty() {
        return;
    }
    let spec = pod.spec.get_or_insert_with(Default::default);
    let mut volumes: Vec<Volume> = claims
        .iter()
        .map(|(template, claim)| Volume {
            name: template.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.metadata.name.clone().unwrap_or_default(),
                read_only: None,
            }),
            ..Volume::default()
        })
        .collect();
    for volume in spec.volumes.take().into_iter().flatten() {
        if !claims.iter().any(|(template, _)| *template == volume.name) {
            volumes.push(volume);
        }
    }
    spec.volumes = Some(volumes);
}

/// The pod of `set` with `ordinal` made from `template`, at `revision` (upstream
/// `newStatefulSetPod`, `setPodRevision`): the template's labels, annotations and
/// finalizers, the set as controller, hostname and subdomain, claims mounted.
pub fn new_pod(
    set: &StatefulSet,
    template: &PodTemplateSpec,
    controller: OwnerReference,
    ordinal: i32,
    revision: &str,
) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    let name = pod_name(set, ordinal);
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            generate_name: Some(format!("{}-", self::name(set))),
            namespace: set.metadata.namespace.clone(),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![controller]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    };
    update_identity(set, &mut pod);
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.hostname = Some(name);
    spec.subdomain = set
        .spec
        .as_ref()
        .and_then(|s| s.service_name.clone())
        .filter(|s| !s.is_empty());
    update_storage(set, &mut pod);
    pod.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(REVISION_LABEL.to_owned(), revision.to_owned());
    pod
}

/// The revision a pod was made from (its `controller-revision-hash` label, `""` if none).
pub fn pod_revision(pod: &Pod) -> &str {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(REVISION_LABEL))
        .map_or("", String::as_str)
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// Whether the API server holds the pod (it has a phase; a pod still to create has none).
pub fn is_created(pod: &Pod) -> bool {
    !phase(pod).is_empty()
}

/// Whether the pod is Pending.
pub fn is_pending(pod: &Pod) -> bool {
    phase(pod) == "Pending"
}

/// Whether the pod has finished, either way (a StatefulSet replaces it).
pub fn is_finished(pod: &Pod) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// Whether the pod is being deleted.
pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Whether the pod is Running with a Ready condition (upstream `isRunningAndReady`).
pub fn is_running_and_ready(pod: &Pod) -> bool {
    phase(pod) == "Running" && is_ready(pod)
}

/// Whether the pod has been Ready for `min_ready_seconds` (upstream `isRunningAndAvailable`).
pub fn is_running_and_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    is_available(pod, min_ready_seconds, now)
}

/// Whether the pod counts as unavailable (upstream `isUnavailable`): not healthy, or not
/// Ready for long enough.
pub fn is_unavailable(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    !is_running_and_ready(pod)
        || is_terminating(pod)
        || !is_running_and_available(pod, min_ready_seconds, now)
}

/// `rollingUpdate.maxUnavailable` as a number of pods: 1 when absent, percentages of
/// `replicas` rounded down, never below 1 (upstream `getStatefulSetMaxUnavailable`).
pub fn max_unavailable(value: Option<&IntOrString>, replicas: i32) -> i32 {
    let Some(value) = value else {
        return 1;
    };
    let value = intstr::IntOrString::from(value.clone());
    // A malformed percentage counts as the default, 1 (the API server refuses one anyway).
    intstr::get_scaled_value_from_int_or_percent(&value, i64::from(replicas), false)
        .map_or(1, |n| i32::try_from(n).unwrap_or(i32::MAX))
        .max(1)
}

/// The set's claim retention policy: (whenDeleted, whenScaled) are `Delete`.
fn retention(set: &StatefulSet) -> (bool, bool) {
    let policy = set
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_claim_retention_policy.as_ref());
    let is_delete = |p: Option<&String>| p.is_some_and(|p| p == DELETE);
    (
        is_delete(policy.and_then(|p| p.when_deleted.as_ref())),
        is_delete(policy.and_then(|p| p.when_scaled.as_ref())),
    )
}

/// Whether claims are deleted when their pod is scaled away (so that an old claim still
/// owned by a gone pod is stale).
pub fn deletes_when_scaled(set: &StatefulSet) -> bool {
    retention(set).1
}

/// The owner a reference names, as upstream's `matchesRef` compares it: group version, kind
/// and name (not uid).
#[derive(Clone, Copy)]
struct Owner<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    uid: &'a str,
}

impl<'a> Owner<'a> {
    fn set(set: &'a StatefulSet) -> Self {
        Owner {
            api_version: "apps/v1",
            kind: "StatefulSet",
            name: name(set),
            uid: set.metadata.uid.as_deref().unwrap_or(""),
        }
    }

    fn pod(pod: &'a Pod) -> Self {
        Owner {
            api_version: "v1",
            kind: "Pod",
            name: pod.metadata.name.as_deref().unwrap_or(""),
            uid: pod.metadata.uid.as_deref().unwrap_or(""),
        }
    }

    fn matches(&self, r: &OwnerReference) -> bool {
        r.api_version == self.api_version && r.kind == self.kind && r.name == self.name
    }

    fn reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.to_owned(),
            kind: self.kind.to_owned(),
            name: self.name.to_owned(),
            uid: self.uid.to_owned(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }
}

fn refs(claim: &PersistentVolumeClaim) -> &[OwnerReference] {
    claim.metadata.owner_references.as_deref().unwrap_or(&[])
}

/// A reference that names `owner` but another uid: left by an owner of the same name that
/// is gone (upstream `hasStaleOwnerRef`).
fn has_stale_ref(claim: &PersistentVolumeClaim, owner: Owner<'_>) -> bool {
    refs(claim)
        .iter()
        .find(|r| owner.matches(r))
        .is_some_and(|r| r.uid != owner.uid)
}

fn has_ref(claim: &PersistentVolumeClaim, owner: Owner<'_>) -> bool {
    !owner.uid.is_empty() && refs(claim).iter().any(|r| r.uid == owner.uid)
}

/// Whether the claim has a controller other than the set and the pod while the policy
/// deletes claims (upstream `hasUnexpectedController`).
fn has_unexpected_controller(claim: &PersistentVolumeClaim, set: &StatefulSet, pod: &Pod) -> bool {
    let (when_deleted, when_scaled) = retention(set);
    if !when_deleted && !when_scaled {
        return false;
    }
    let (set, pod) = (Owner::set(set), Owner::pod(pod));
    refs(claim).iter().any(|r| {
        if set.matches(r) {
            r.uid != set.uid
        } else if pod.matches(r) {
            r.uid != pod.uid
        } else {
            r.controller == Some(true)
        }
    })
}

/// Whether the set or the pod owns the claim without being its controller.
fn has_non_controller_owner(claim: &PersistentVolumeClaim, set: &StatefulSet, pod: &Pod) -> bool {
    let (set, pod) = (Owner::set(set), Owner::pod(pod));
    refs(claim).iter().any(|r| {
        ((!set.uid.is_empty() && r.uid == set.uid) || (!pod.uid.is_empty() && r.uid == pod.uid))
            && r.controller != Some(true)
    })
}

/// Whether the claim's owners agree with the retention policy (upstream
/// `isClaimOwnerUpToDate`): no reference when both are Retain; the set when whenDeleted is
/// Delete; the pod, once scaled away, when whenScaled is Delete (and then not the set).
/// Claims with stale references or another controller are left alone.
pub fn claim_owners_up_to_date(
    claim: &PersistentVolumeClaim,
    set: &StatefulSet,
    pod: &Pod,
) -> bool {
    let (set_owner, pod_owner) = (Owner::set(set), Owner::pod(pod));
    if has_stale_ref(claim, set_owner) || has_stale_ref(claim, pod_owner) {
        return true;
    }
    if has_unexpected_controller(claim, set, pod) {
        return !(has_ref(claim, set_owner) || has_ref(claim, pod_owner));
    }
    if has_non_controller_owner(claim, set, pod) {
        return false;
    }
    let (when_deleted, when_scaled) = retention(set);
    let scaled_down = !in_ordinal_range(pod, set);
    let want_set = when_deleted && !(when_scaled && scaled_down);
    let want_pod = when_scaled && scaled_down;
    has_ref(claim, set_owner) == want_set && has_ref(claim, pod_owner) == want_pod
}

/// The claim's ownerReferences under the retention policy (upstream
/// `updateClaimOwnerRefForSetAndPod`): references to the set and the pod removed, then the
/// ones the policy wants added as controller references.
pub fn claim_owners(
    claim: &PersistentVolumeClaim,
    set: &StatefulSet,
    pod: &Pod,
) -> Vec<OwnerReference> {
    let (set_owner, pod_owner) = (Owner::set(set), Owner::pod(pod));
    let unexpected = has_unexpected_controller(claim, set, pod);
    let mut kept: Vec<OwnerReference> = refs(claim)
        .iter()
        .filter(|r| !set_owner.matches(r) && !pod_owner.matches(r))
        .cloned()
        .collect();
    if unexpected {
        return kept;
    }
    let (when_deleted, when_scaled) = retention(set);
    let scaled_down = !in_ordinal_range(pod, set);
    if when_scaled && scaled_down && !pod_owner.uid.is_empty() {
        kept.push(pod_owner.reference());
    }
    if when_deleted && !(when_scaled && scaled_down) && !set_owner.uid.is_empty() {
        kept.push(set_owner.reference());
    }
    kept
}

/// Whether a claim of the pod still refers to an earlier pod of its name, so that the pod
/// must wait for the garbage collector to remove it (upstream `PodClaimIsStale`).
pub fn pod_claim_is_stale(
    set: &StatefulSet,
    pod: &Pod,
    claims: &BTreeMap<String, Arc<PersistentVolumeClaim>>,
) -> bool {
    if !deletes_when_scaled(set) {
        return false;
    }
    let Some(ordinal) = ordinal(pod) else {
        return false;
    };
    claims_for(set, ordinal).iter().any(|(_, wanted)| {
        wanted
            .metadata
            .name
            .as_ref()
            .and_then(|n| claims.get(n))
            .is_some_and(|claim| has_stale_ref(claim, Owner::pod(pod)))
    })
}

/// Whether every existing claim of the pod agrees with the retention policy (upstream
/// `ClaimsMatchRetentionPolicy`; claims not created yet are left to a later sync).
pub fn claims_match_retention(
    set: &StatefulSet,
    pod: &Pod,
    claims: &BTreeMap<String, Arc<PersistentVolumeClaim>>,
) -> bool {
    let Some(ordinal) = ordinal(pod) else {
        return true;
    };
    claims_for(set, ordinal).iter().all(|(_, wanted)| {
        wanted
            .metadata
            .name
            .as_ref()
            .and_then(|n| claims.get(n))
            .is_none_or(|claim| claim_owners_up_to_date(claim, set, pod))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(policy: (&str, &str)) -> StatefulSet {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "set-uid"},
            "spec": {
                "replicas": 2,
                "serviceName": "nginx",
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}],
                        "volumes": [{"name": "www", "emptyDir": {}}, {"name": "cache", "emptyDir": {}}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "www", "labels": {"tier": "db"}},
                    "spec": {"accessModes": ["ReadWriteOnce"]}}],
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": policy.0, "whenScaled": policy.1}
            }
        }))
        .expect("a set")
    }

    fn created(mut pod: Pod, uid: &str) -> Pod {
        pod.metadata.uid = Some(uid.to_owned());
        pod
    }

    fn controller() -> OwnerReference {
        Owner::set(&set(("Retain", "Retain"))).reference()
    }

    #[test]
    fn names_are_read_like_upstreams_pattern() {
        assert_eq!(parent_and_ordinal("web-0"), Some(("web", Some(0))));
        assert_eq!(parent_and_ordinal("my-web-12"), Some(("my-web", Some(12))));
        assert_eq!(parent_and_ordinal("web-99999999999"), Some(("web", None)));
        assert_eq!(parent_and_ordinal("web-x1"), None);
        assert_eq!(parent_and_ordinal("web-"), None);
        assert_eq!(parent_and_ordinal("web"), None);
    }

    #[test]
    fn a_new_pod_has_its_identity_claims_and_revision() {
        let s = set(("Retain", "Retain"));
        let template = s.spec.as_ref().expect("spec").template.clone();
        let pod = new_pod(&s, &template, controller(), 1, "web-abc");
        assert_eq!(pod.metadata.name.as_deref(), Some("web-1"));
        let labels = pod.metadata.labels.clone().expect("labels");
        assert_eq!(labels["app"], "web");
        assert_eq!(labels[POD_NAME_LABEL], "web-1");
        assert_eq!(labels[POD_INDEX_LABEL], "1");
        assert_eq!(labels[REVISION_LABEL], "web-abc");
        let spec = pod.spec.clone().expect("spec");
        assert_eq!(spec.hostname.as_deref(), Some("web-1"));
        assert_eq!(spec.subdomain.as_deref(), Some("nginx"));
        let volumes = spec.volumes.expect("volumes");
        let names: Vec<&str> = volumes.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names,
            ["www", "cache"],
            "the template's volume of the claim's name is replaced"
        );
        assert_eq!(
            volumes[0]
                .persistent_volume_claim
                .as_ref()
                .map(|c| c.claim_name.as_str()),
            Some("www-web-1")
        );
        assert!(identity_matches(&s, &pod) && storage_matches(&s, &pod));

        let mut stripped = pod.clone();
        stripped.spec.as_mut().expect("spec").volumes = None;
        stripped
            .metadata
            .labels
            .as_mut()
            .expect("labels")
            .remove(POD_NAME_LABEL);
        assert!(!identity_matches(&s, &stripped) && !storage_matches(&s, &stripped));
        update_identity(&s, &mut stripped);
        update_storage(&s, &mut stripped);
        assert!(identity_matches(&s, &stripped) && storage_matches(&s, &stripped));
    }

    #[test]
    fn claims_carry_the_template_labels_and_the_selector() {
        let claims = claims_for(&set(("Retain", "Retain")), 3);
        assert_eq!(claims.len(), 1);
        let (template, claim) = &claims[0];
        assert_eq!(template, "www");
        assert_eq!(claim.metadata.name.as_deref(), Some("www-web-3"));
        let labels = claim.metadata.labels.clone().expect("labels");
        assert_eq!(labels.get("tier").map(String::as_str), Some("db"));
        assert_eq!(labels.get("app").map(String::as_str), Some("web"));
    }

    #[test]
    fn max_unavailable_defaults_to_one_and_rounds_percentages_down() {
        assert_eq!(max_unavailable(None, 10), 1);
        assert_eq!(max_unavailable(Some(&IntOrString::Int(3)), 10), 3);
        assert_eq!(
            max_unavailable(Some(&IntOrString::String("25%".into())), 10),
            2
        );
        assert_eq!(
            max_unavailable(Some(&IntOrString::String("5%".into())), 10),
            1
        );
    }

    #[test]
    fn claim_owners_follow_the_retention_policy() {
        let template = set(("Retain", "Retain")).spec.expect("spec").template;
        let live = created(
            new_pod(&set(("Retain", "Retain")), &template, controller(), 0, "r"),
            "p0",
        );
        let gone = created(
            new_pod(&set(("Retain", "Retain")), &template, controller(), 5, "r"),
            "p5",
        );
        let bare = claims_for(&set(("Retain", "Retain")), 0).remove(0).1;
        let uids = |refs: Vec<OwnerReference>| refs.into_iter().map(|r| r.uid).collect::<Vec<_>>();

        let retain = set(("Retain", "Retain"));
        assert!(claim_owners_up_to_date(&bare, &retain, &live));
        assert!(uids(claim_owners(&bare, &retain, &gone)).is_empty());

        let on_delete = set(("Delete", "Retain"));
        assert!(!claim_owners_up_to_date(&bare, &on_delete, &live));
        assert_eq!(uids(claim_owners(&bare, &on_delete, &live)), ["set-uid"]);
        assert_eq!(uids(claim_owners(&bare, &on_delete, &gone)), ["set-uid"]);

        let on_scale = set(("Retain", "Delete"));
        assert!(claim_owners_up_to_date(&bare, &on_scale, &live));
        assert_eq!(uids(claim_owners(&bare, &on_scale, &gone)), ["p5"]);

        let both = set(("Delete", "Delete"));
        assert_eq!(uids(claim_owners(&bare, &both, &live)), ["set-uid"]);
        assert_eq!(uids(claim_owners(&bare, &both, &gone)), ["p5"]);
        let mut owned = bare.clone();
        owned.metadata.owner_references = Some(claim_owners(&bare, &both, &gone));
        assert!(claim_owners_up_to_date(&owned, &both, &gone));
        let mut grown = both.clone();
        grown.spec.as_mut().expect("spec").replicas = Some(6);
        assert!(
            !claim_owners_up_to_date(&owned, &grown, &gone),
            "scaled back up: the set, not the pod, owns it"
        );
        assert_eq!(uids(claim_owners(&owned, &grown, &gone)), ["set-uid"]);
    }

    #[test]
    fn a_claim_of_an_earlier_pod_of_the_name_is_stale_when_scaling_deletes() {
        let s = set(("Retain", "Delete"));
        let template = s.spec.as_ref().expect("spec").template.clone();
        let old = created(new_pod(&s, &template, controller(), 0, "r"), "old");
        let mut claim = claims_for(&s, 0).remove(0).1;
        claim.metadata.owner_references = Some(vec![Owner::pod(&old).reference()]);
        let claims = BTreeMap::from([("www-web-0".to_owned(), Arc::new(claim))]);
        let replacement = new_pod(&s, &template, controller(), 0, "r");
        assert!(pod_claim_is_stale(&s, &replacement, &claims));
        assert!(!pod_claim_is_stale(&s, &old, &claims));
        assert!(!pod_claim_is_stale(
            &set(("Retain", "Retain")),
            &replacement,
            &claims
        ));
    }
}
