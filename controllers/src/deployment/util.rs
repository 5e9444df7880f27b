//! Pure Deployment arithmetic (upstream `pkg/controller/deployment/util`), tested without
//! I/O: template hashes and `pod-template-hash`, revisions and their annotations, surge and
//! unavailability limits, proportional scaling, status and conditions.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubemock_apimachinery::intstr;

/// The label that ties pods and ReplicaSets to one template.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// Revision of a ReplicaSet (and of its Deployment).
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// Earlier revisions a ReplicaSet had (it was rolled back to).
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
/// The Deployment's replicas when the ReplicaSet was last scaled.
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
/// The Deployment's replicas plus surge when the ReplicaSet was last scaled.
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// Upstream's `maxRevHistoryLengthInChars`.
const REVISION_HISTORY_CHARS: usize = 2000;

/// Annotations never copied from a Deployment to its ReplicaSets.
const NOT_COPIED: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];

/// Defaults the API server applies to apps/v1 Deployments, used when a field is absent (a
/// server without defaulting still gets the real behaviour).
pub const DEFAULT_PROGRESS_DEADLINE_SECONDS: i32 = 600;
/// Default `revisionHistoryLimit`.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

/// `spec.replicas` (default 1).
pub fn replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// A ReplicaSet's `spec.replicas` (default 1).
pub fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

fn rs_status(rs: &ReplicaSet) -> (i32, i32, i32) {
    rs.status.as_ref().map_or((0, 0, 0), |s| {
        (
            s.replicas,
            s.ready_replicas.unwrap_or(0),
            s.available_replicas.unwrap_or(0),
        )
    })
}

/// Whether the strategy is Recreate.
pub fn is_recreate(d: &Deployment) -> bool {
    d.spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        == Some("Recreate")
}

/// `progressDeadlineSeconds`, `None` for "no deadline" (upstream: unset or MaxInt32).
pub fn progress_deadline(d: &Deployment) -> Option<i32> {
    let seconds = d
        .spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .unwrap_or(DEFAULT_PROGRESS_DEADLINE_SECONDS);
    (seconds != i32::MAX).then_some(seconds)
}

/// A percentage or absolute value scaled against `total` (upstream
/// `GetScaledValueFromIntOrPercent`, `kubemock_apimachinery::intstr`); a malformed
/// percentage (which the API server refuses) counts as 0.
fn scaled(value: &IntOrString, total: i32, round_up: bool) -> i32 {
    let value = intstr::IntOrString::from(value.clone());
    intstr::get_scaled_value_from_int_or_percent(&value, i64::from(total), round_up)
        .map_or(0, |n| {
            i32::try_from(n).unwrap_or(if n < 0 { i32::MIN } else { i32::MAX })
        })
}

/// Surge and unavailability of a rolling update (upstream `ResolveFenceposts`): both
/// default to 25%; both 0 means one unavailable.
pub fn fenceposts(d: &Deployment) -> (i32, i32) {
    let rolling = d
        .spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.rolling_update.as_ref());
    let quarter = IntOrString::String("25%".to_owned());
    let surge = rolling
        .and_then(|r| r.max_surge.clone())
        .unwrap_or_else(|| quarter.clone());
    let unavailable = rolling
        .and_then(|r| r.max_unavailable.clone())
        .unwrap_or(quarter);
    let desired = replicas(d);
    let surge = scaled(&surge, desired, true);
    let unavailable = scaled(&unavailable, desired, false);
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge, unavailable)
    }
}

/// Pods above `replicas` a rollout may create (0 for Recreate).
pub fn max_surge(d: &Deployment) -> i32 {
    if is_recreate(d) { 0 } else { fenceposts(d).0 }
}

/// Pods below `replicas` a rollout may leave unavailable (0 for Recreate or no replicas).
pub fn max_unavailable(d: &Deployment) -> i32 {
    if is_recreate(d) || replicas(d) == 0 {
        return 0;
    }
    fenceposts(d).1.min(replicas(d))
}

/// The template without the `pod-template-hash` label.
fn without_hash(template: &PodTemplateSpec) -> serde_json::Value {
    let mut t = template.clone();
    if let Some(labels) = t.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(POD_TEMPLATE_HASH);
        if labels.is_empty()
            && let Some(meta) = t.metadata.as_mut()
        {
            meta.labels = None;
        }
    }
    serde_json::to_value(t).unwrap_or_default()
}

/// Whether two templates are equal apart from `pod-template-hash` (upstream
/// `EqualIgnoreHash`).
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    without_hash(a) == without_hash(b)
}

/// The `pod-template-hash` of a template (upstream `ComputeHash`: FNV-32a of the template,
/// plus the collision count, as safe characters). The hash differs from upstream's (which
/// hashes Go's printing of the struct) but has its shape and stability.
pub fn template_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash ^= u32::from(*byte);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    };
    feed(without_hash(template).to_string().as_bytes());
    if let Some(count) = collision_count {
        feed(&count.to_le_bytes());
    }
    safe_encode(&hash.to_string())
}

/// Upstream `rand.SafeEncodeString`: characters that cannot spell words.
pub fn safe_encode(text: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    text.bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

/// A ReplicaSet's revision (0 when absent or invalid).
pub fn revision(rs: &ReplicaSet) -> i64 {
    annotation(rs, REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn annotation<'a>(rs: &'a ReplicaSet, key: &str) -> Option<&'a str> {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// An annotation as an i32.
pub fn int_annotation(rs: &ReplicaSet, key: &str) -> Option<i32> {
    annotation(rs, key).and_then(|v| v.parse().ok())
}

/// Copies the Deployment's annotations to `rs` (except revision and replica annotations);
/// whether anything changed.
fn copy_annotations(d: &Deployment, rs: &mut ReplicaSet) -> bool {
    let mut changed = false;
    let target = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    for (k, v) in d.metadata.annotations.iter().flatten() {
        if NOT_COPIED.contains(&k.as_str()) || target.get(k) == Some(v) {
            continue;
        }
        target.insert(k.clone(), v.clone());
        changed = true;
    }
    changed
}

/// Sets the desired- and max-replicas annotations; whether they changed.
pub fn set_replicas_annotations(rs: &mut ReplicaSet, desired: i32, max: i32) -> bool {
    let annotations = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let mut changed = false;
    for (key, value) in [(DESIRED_REPLICAS, desired), (MAX_REPLICAS, max)] {
        let value = value.to_string();
        if annotations.get(key) != Some(&value) {
            annotations.insert(key.to_owned(), value);
            changed = true;
        }
    }
    changed
}

/// Whether the replica annotations differ from `desired` / `max`.
pub fn replicas_annotations_need_update(rs: &ReplicaSet, desired: i32, max: i32) -> bool {
    int_annotation(rs, DESIRED_REPLICAS) != Some(desired)
        || int_annotation(rs, MAX_REPLICAS) != Some(max)
}

/// Upstream `SetNewReplicaSetAnnotations`: copied annotations, the new revision (keeping the
/// old one in the history when rolling back to this ReplicaSet), and for a new ReplicaSet
/// the replica annotations. Whether anything changed.
pub fn set_new_rs_annotations(
    d: &Deployment,
    rs: &mut ReplicaSet,
    new_revision: i64,
    exists: bool,
) -> bool {
    let mut changed = copy_annotations(d, rs);
    let annotations = rs.metadata.annotations.get_or_insert_with(BTreeMap::new);
    let old = annotations.get(REVISION).cloned();
    let old_number = match old.as_deref() {
        None | Some("") => 0,
        Some(text) => match text.parse::<i64>() {
            Ok(n) => n,
            Err(_) => return false,
        },
    };
    if old_number < new_revision {
        annotations.insert(REVISION.to_owned(), new_revision.to_string());
        changed = true;
        if let Some(old) = old.filter(|o| !o.is_empty()) {
            let history = annotations
                .get(REVISION_HISTORY)
                .cloned()
                .unwrap_or_default();
            let mut entries: Vec<String> = history
                .split(',')
                .filter(|e| !e.is_empty())
                .map(str::to_owned)
                .collect();
            entries.push(old);
            while entries.iter().map(|e| e.len() + 1).sum::<usize>() > REVISION_HISTORY_CHARS + 1 {
                entries.remove(0);
            }
            annotations.insert(REVISION_HISTORY.to_owned(), entries.join(","));
        }
    }
    if !exists {
        let desired = replicas(d);
        changed |= set_replicas_annotations(rs, desired, desired + max_surge(d));
    }
    changed
}

/// Upstream `ReplicaSetsByCreationTimestamp`: oldest first, then by name.
pub fn by_creation(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    let created = |rs: &ReplicaSet| rs.metadata.creation_timestamp.as_ref().map(|t| t.0);
    created(a)
        .cmp(&created(b))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// The ReplicaSet whose template is the Deployment's (the oldest, if several).
pub fn find_new<'a>(d: &Deployment, replicasets: &'a [ReplicaSet]) -> Option<&'a ReplicaSet> {
    let template = d
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let mut sorted: Vec<&ReplicaSet> = replicasets.iter().collect();
    sorted.sort_by(|a, b| by_creation(a, b));
    sorted.into_iter().find(|rs| {
        rs.spec
            .as_ref()
            .and_then(|s| s.template.as_ref())
            .is_some_and(|t| equal_ignore_hash(t, &template))
    })
}

/// The Deployment's replicas a new ReplicaSet may have now (upstream `NewRSNewReplicas`).
pub fn new_rs_new_replicas(d: &Deployment, all: &[&ReplicaSet], new_rs_replicas: i32) -> i32 {
    if is_recreate(d) {
        return replicas(d);
    }
    let current: i32 = all.iter().map(|rs| rs_replicas(rs)).sum();
    let max_total = replicas(d) + max_surge(d);
    if current >= max_total {
        return new_rs_replicas;
    }
    let up = (max_total - current).min(replicas(d) - new_rs_replicas);
    new_rs_replicas + up
}

/// Upstream `GetProportion`: how many of `to_add` (so far `added`) `rs` gets.
pub fn proportion(rs: &ReplicaSet, d: &Deployment, to_add: i32, added: i32) -> i32 {
    let size = rs_replicas(rs);
    if size == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = if replicas(d) == 0 {
        -size
    } else {
        let deployment_replicas = replicas(d) + max_surge(d);
        let annotated = int_annotation(rs, MAX_REPLICAS)
            .filter(|n| *n != 0)
            .unwrap_or_else(|| d.status.as_ref().map_or(0, |s| s.replicas.unwrap_or(0)));
        if annotated == 0 {
            0
        } else {
            let new_size = f64::from(size) * f64::from(deployment_replicas) / f64::from(annotated);
            new_size.round() as i32 - size
        }
    };
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// A condition of type `kind`, now.
pub fn condition(
    kind: &str,
    status: &str,
    reason: &str,
    message: String,
    now: Timestamp,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: kind.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message),
        last_update_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// The condition of type `kind`.
pub fn get_condition<'a>(
    status: &'a DeploymentStatus,
    kind: &str,
) -> Option<&'a DeploymentCondition> {
    status.conditions.iter().flatten().find(|c| c.type_ == kind)
}

/// Upstream `SetDeploymentCondition`: the same status and reason change nothing; the same
/// status keeps its transition time; the condition moves to the end.
pub fn set_condition(status: &mut DeploymentStatus, mut new: DeploymentCondition) {
    if let Some(current) = get_condition(status, &new.type_) {
        if current.status == new.status && current.reason == new.reason {
            return;
        }
        if current.status == new.status {
            new.last_transition_time = current.last_transition_time.clone();
        }
    }
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    conditions.retain(|c| c.type_ != new.type_);
    conditions.push(new);
}

/// Removes the condition of type `kind`.
pub fn remove_condition(status: &mut DeploymentStatus, kind: &str) {
    if let Some(conditions) = status.conditions.as_mut() {
        conditions.retain(|c| c.type_ != kind);
        if conditions.is_empty() {
            status.conditions = None;
        }
    }
}

/// Upstream `calculateStatus`: counts from the ReplicaSets and the Available condition.
pub fn calculate_status(
    all: &[&ReplicaSet],
    new_rs: Option<&ReplicaSet>,
    d: &Deployment,
    now: Timestamp,
) -> DeploymentStatus {
    let sum = |f: &dyn Fn(&ReplicaSet) -> i32| all.iter().map(|rs| f(rs)).sum::<i32>();
    let available = sum(&|rs| rs_status(rs).2);
    let total = sum(&rs_replicas);
    let previous = d.status.clone().unwrap_or_default();
    let mut status = DeploymentStatus {
        observed_generation: d.metadata.generation,
        replicas: Some(sum(&|rs| rs_status(rs).0)).filter(|n| *n != 0),
        updated_replicas: new_rs.map(|rs| rs_status(rs).0).filter(|n| *n != 0),
        ready_replicas: Some(sum(&|rs| rs_status(rs).1)).filter(|n| *n != 0),
        available_replicas: Some(available).filter(|n| *n != 0),
        unavailable_replicas: Some((total - available).max(0)).filter(|n| *n != 0),
        collision_count: previous.collision_count,
        conditions: previous.conditions.clone(),
        // Fields of later Kubernetes versions (`terminatingReplicas`): unset, as 1.32 has them.
        ..DeploymentStatus::default()
    };
    if available >= replicas(d) - max_unavailable(d) {
        set_condition(
            &mut status,
            condition(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.".to_owned(),
                now,
            ),
        );
    } else {
        set_condition(
            &mut status,
            condition(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.".to_owned(),
                now,
            ),
        );
    }
    status
}

/// Upstream `DeploymentComplete`.
pub fn complete(d: &Deployment, status: &DeploymentStatus) -> bool {
    let want = replicas(d);
    status.updated_replicas.unwrap_or(0) == want
        && status.replicas.unwrap_or(0) == want
        && status.available_replicas.unwrap_or(0) == want
        && status.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0)
}

/// Upstream `DeploymentProgressing`: more updated, ready or available pods, or fewer old.
pub fn progressing(d: &Deployment, new: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let n = |v: Option<i32>| v.unwrap_or(0);
    let old_old = n(old.replicas) - n(old.updated_replicas);
    let new_old = n(new.replicas) - n(new.updated_replicas);
    n(new.updated_replicas) > n(old.updated_replicas)
        || new_old < old_old
        || n(new.ready_replicas) > n(old.ready_replicas)
        || n(new.available_replicas) > n(old.available_replicas)
}

/// Upstream `DeploymentTimedOut`: the Progressing condition was last updated longer than the
/// deadline ago (and the rollout has not completed).
pub fn timed_out(d: &Deployment, status: &DeploymentStatus, now: Timestamp) -> bool {
    let Some(deadline) = progress_deadline(d) else {
        return false;
    };
    let Some(condition) = get_condition(status, "Progressing") else {
        return false;
    };
    match condition.reason.as_deref() {
        Some("NewReplicaSetAvailable") => false,
        Some("ProgressDeadlineExceeded") => true,
        _ => condition.last_update_time.as_ref().is_some_and(|from| {
            kubemock_apimachinery::time::shift_seconds(from.0, i64::from(deadline)) < now
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(
        replicas: i32,
        surge: serde_json::Value,
        unavailable: serde_json::Value,
    ) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "generation": 1},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
        }))
        .expect("a deployment")
    }

    fn rs(name: &str, replicas: i32, max_replicas: Option<i32>) -> ReplicaSet {
        let mut rs: ReplicaSet = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}}
        }))
        .expect("a replicaset");
        if let Some(max) = max_replicas {
            rs.metadata.annotations = Some([(MAX_REPLICAS.to_owned(), max.to_string())].into());
        }
        rs
    }

    #[test]
    fn fenceposts_round_surge_up_and_unavailability_down() {
        assert_eq!(
            fenceposts(&deployment(10, json!("25%"), json!("25%"))),
            (3, 2)
        );
        assert_eq!(
            fenceposts(&deployment(3, json!("25%"), json!("25%"))),
            (1, 0)
        );
        assert_eq!(fenceposts(&deployment(3, json!(0), json!(0))), (0, 1));
        assert_eq!(max_unavailable(&deployment(2, json!(1), json!(5))), 2);
    }

    #[test]
    fn hashes_ignore_the_hash_label_and_change_with_the_template_and_collisions() {
        let d = deployment(3, json!(1), json!(1));
        let template = d.spec.clone().expect("spec").template;
        let hash = template_hash(&template, None);
        assert!(
            hash.chars()
                .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)),
            "{hash}"
        );
        let mut labelled = template.clone();
        labelled
            .metadata
            .get_or_insert_with(Default::default)
            .labels
            .get_or_insert_with(Default::default)
            .insert(POD_TEMPLATE_HASH.into(), hash.clone());
        assert!(equal_ignore_hash(&template, &labelled));
        assert_eq!(template_hash(&labelled, None), hash);
        assert_ne!(template_hash(&template, Some(1)), hash);
        let mut changed = template.clone();
        changed.spec.as_mut().expect("spec").containers[0].image = Some("nginx:2".into());
        assert!(!equal_ignore_hash(&template, &changed));
        assert_ne!(template_hash(&changed, None), hash);
    }

    #[test]
    fn new_replica_sets_grow_within_the_surge() {
        let d = deployment(10, json!(3), json!(2));
        let old = rs("old", 10, None);
        let new = rs("new", 0, None);
        assert_eq!(new_rs_new_replicas(&d, &[&old, &new], 0), 3);
        let old = rs("old", 8, None);
        let new = rs("new", 3, None);
        assert_eq!(new_rs_new_replicas(&d, &[&old, &new], 3), 5);
    }

    #[test]
    fn proportional_scaling_follows_the_max_replicas_annotation() {
        // A rollout of 10 (surge 3) scaled to 20 (surge 5): each ReplicaSet grows by its share.
        let d = deployment(20, json!(5), json!(2));
        let old = rs("old", 8, Some(13));
        let new = rs("new", 5, Some(13));
        let to_add = 25 - 13;
        let first = proportion(&old, &d, to_add, 0);
        let second = proportion(&new, &d, to_add, first);
        assert_eq!((first, second), (7, 5));
    }

    #[test]
    fn revisions_move_to_the_history_on_rollback() {
        let d = deployment(1, json!(1), json!(1));
        let mut rs = rs("a", 1, None);
        assert!(set_new_rs_annotations(&d, &mut rs, 1, false));
        assert_eq!(revision(&rs), 1);
        assert_eq!(int_annotation(&rs, DESIRED_REPLICAS), Some(1));
        assert_eq!(int_annotation(&rs, MAX_REPLICAS), Some(2));
        assert!(set_new_rs_annotations(&d, &mut rs, 3, true));
        assert_eq!(revision(&rs), 3);
        assert_eq!(annotation(&rs, REVISION_HISTORY), Some("1"));
        assert!(
            !set_new_rs_annotations(&d, &mut rs, 2, true),
            "never lowered"
        );
    }

    #[test]
    fn conditions_keep_their_transition_time_while_the_status_holds() {
        let t0 = Timestamp::from_second(1_000).expect("time");
        let t1 = Timestamp::from_second(2_000).expect("time");
        let mut status = DeploymentStatus::default();
        set_condition(
            &mut status,
            condition("Progressing", "True", "ReplicaSetUpdated", "a".into(), t0),
        );
        set_condition(
            &mut status,
            condition(
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                "b".into(),
                t1,
            ),
        );
        let c = get_condition(&status, "Progressing").expect("set");
        assert_eq!(c.reason.as_deref(), Some("NewReplicaSetAvailable"));
        assert_eq!(c.last_transition_time, Some(Time(t0)));
        assert_eq!(c.last_update_time, Some(Time(t1)));
    }
}
