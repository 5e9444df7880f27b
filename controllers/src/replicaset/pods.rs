//! Pure decisions of the ReplicaSet controller, tested without I/O: which pods count, which
//! to delete first on scale-down, the batches creations go in, the pod a template makes, and
//! the status a set of pods adds up to (upstream `controller_utils.go`, `replica_set.go`,
//! `replica_set_utils.go`).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

/// The annotation that orders scale-down among otherwise equal pods (beta, on by default).
pub const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The first batch of a slow start (upstream `SlowStartInitialBatchSize`).
pub const SLOW_START_INITIAL_BATCH: usize = 1;

/// A pod that is neither finished nor being deleted (upstream `IsPodActive`).
pub fn is_active(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none() && !matches!(phase(pod), Some("Succeeded" | "Failed"))
}

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref()?.phase.as_deref()
}

/// The pod's Ready condition, when True: its last transition time.
fn ready_since(pod: &Pod) -> Option<Option<Timestamp>> {
    pod.status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready" && c.status == "True")
        .map(|c| c.last_transition_time.as_ref().map(|t| t.0))
}

/// Whether the pod is Ready.
pub fn is_ready(pod: &Pod) -> bool {
    ready_since(pod).is_some()
}

/// Whether the pod has been Ready for `min_ready_seconds` at `now` (upstream
/// `IsPodAvailable`).
pub fn is_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    ready_since(pod).is_some_and(|since| ready_long_enough(since, min_ready_seconds, now))
}

/// Whether a pod Ready since `since` (its Ready condition's transition time) is available.
fn ready_long_enough(since: Option<Timestamp>, min_ready_seconds: i32, now: Timestamp) -> bool {
    match since {
        _ if min_ready_seconds <= 0 => true,
        None => false,
        Some(since) => {
            kubemock_apimachinery::time::shift_seconds(since, i64::from(min_ready_seconds)) <= now
        }
    }
}

fn phase_ordinal(pod: &Pod) -> u8 {
    match phase(pod) {
        Some("Unknown") => 1,
        Some("Running") => 2,
        _ => 0, // Pending and the rest
    }
}

fn deletion_cost(pod: &Pod) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DELETION_COST))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn max_restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .map(|c| c.restart_count)
        .max()
        .unwrap_or(0)
}

/// `a` after `b`, an unset time counting as the latest (upstream `afterOrZero`).
fn after_or_zero(a: Option<Timestamp>, b: Option<Timestamp>) -> bool {
    match (a, b) {
        (None, _) => true,
        (_, None) => false,
        (Some(a), Some(b)) => a > b,
    }
}

/// Upstream `ActivePodsWithRanks.Less`: whether `a` goes before `b` on scale-down. `rank`:
/// how many related pods share the pod's node (doubled-up pods go first).
fn delete_first(a: &Pod, rank_a: usize, b: &Pod, rank_b: usize) -> bool {
    let node = |p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default()
    };
    let (node_a, node_b) = (node(a), node(b));
    // 1. Unassigned before assigned.
    if node_a != node_b && (node_a.is_empty() || node_b.is_empty()) {
        return node_a.is_empty();
    }
    // 2. Pending before Unknown before Running.
    if phase_ordinal(a) != phase_ordinal(b) {
        return phase_ordinal(a) < phase_ordinal(b);
    }
    // 3. Not ready before ready.
    if is_ready(a) != is_ready(b) {
        return !is_ready(a);
    }
    // 4. Lower deletion cost first.
    if deletion_cost(a) != deletion_cost(b) {
        return deletion_cost(a) < deletion_cost(b);
    }
    // 5. Doubled up before alone.
    if rank_a != rank_b {
        return rank_a > rank_b;
    }
    // 6. Ready for less time first.
    if let (Some(since_a), Some(since_b)) = (ready_since(a), ready_since(b))
        && since_a != since_b
    {
        return after_or_zero(since_a, since_b);
    }
    // 7. More restarts first.
    if max_restarts(a) != max_restarts(b) {
        return max_restarts(a) > max_restarts(b);
    }
    // 8. Newer first.
    let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    if created(a) != created(b) {
        return after_or_zero(created(a), created(b));
    }
    false
}

/// The `count` pods to delete first among `pods` (upstream `getPodsToDelete`); `related`:
/// every active pod of the owner's family, to rank pods by how many share their node.
pub fn pods_to_delete<'a, P: Borrow<Pod>>(
    pods: &'a [P],
    related: &[P],
    count: usize,
) -> Vec<&'a P> {
    let mut per_node: HashMap<String, usize> = HashMap::new();
    for pod in related {
        if let Some(node) = pod
            .borrow()
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty())
        {
            *per_node.entry(node).or_default() += 1;
        }
    }
    let rank = |p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .and_then(|n| per_node.get(n).copied())
            .unwrap_or(0)
    };
    let mut ranked: Vec<(&P, usize)> = pods.iter().map(|p| (p, rank(p.borrow()))).collect();
    ranked.sort_by(|(a, ra), (b, rb)| {
        let (a, b): (&Pod, &Pod) = ((*a).borrow(), (*b).borrow());
        if delete_first(a, *ra, b, *rb) {
            Ordering::Less
        } else if delete_first(b, *rb, a, *ra) {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    });
    ranked.into_iter().take(count).map(|(p, _)| p).collect()
}

/// The batch sizes of a slow start of `total` creations: 1, 2, 4, ... (upstream
/// `slowStartBatch`); creation stops at the first batch with a failure.
pub fn slow_start_batches(total: usize) -> Vec<usize> {
    let mut batches = Vec::new();
    let mut remaining = total;
    let mut size = SLOW_START_INITIAL_BATCH.min(remaining);
    while size > 0 {
        batches.push(size);
        remaining -= size;
        size = (size * 2).min(remaining);
    }
    batches
}

/// The pod `rs`'s template makes (upstream `GetPodFromTemplate`): `{name}-` generated names,
/// the template's labels, annotations and finalizers, the controller reference, its spec.
pub fn pod_from_template(rs: &ReplicaSet, controller: OwnerReference) -> Pod {
    let template = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.clone())
        .unwrap_or_default();
    let template_meta = template.metadata.unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-", rs.metadata.name.clone().unwrap_or_default())),
            namespace: rs.metadata.namespace.clone(),
            labels: template_meta.labels,
            annotations: template_meta.annotations,
            finalizers: template_meta.finalizers,
            owner_references: Some(vec![controller]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    }
}

/// Whether every label of `wanted` is on `labels` (a selector made of the template's labels).
fn has_all(
    labels: Option<&BTreeMap<String, String>>,
    wanted: Option<&BTreeMap<String, String>>,
) -> bool {
    wanted
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// What failed in the last manage step, for the `ReplicaFailure` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManageFailure {
    /// `FailedCreate` or `FailedDelete`.
    pub reason: &'static str,
    /// The error.
    pub message: String,
}

/// The status `pods` (the owned, active pods) add up to (upstream `calculateStatus`, plus the
/// observed generation).
pub fn compute_status<P: Borrow<Pod>>(
    rs: &ReplicaSet,
    pods: &[P],
    failure: Option<&ManageFailure>,
    now: Timestamp,
) -> ReplicaSetStatus {
    let mut status = rs.status.clone().unwrap_or_default();
    let spec = rs.spec.as_ref();
    let template_labels = spec
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.as_ref());
    let min_ready = spec.and_then(|s| s.min_ready_seconds).unwrap_or(0);
    // One pass over the pods (a ReplicaSet may have thousands, read on every change of one).
    let (mut fully_labeled, mut ready, mut available) = (0_usize, 0_usize, 0_usize);
    for pod in pods {
        let pod: &Pod = pod.borrow();
        fully_labeled += usize::from(has_all(pod.metadata.labels.as_ref(), template_labels));
        if let Some(since) = ready_since(pod) {
            ready += 1;
            available += usize::from(ready_long_enough(since, min_ready, now));
        }
    }
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    status.replicas = count(pods.len());
    status.fully_labeled_replicas = Some(count(fully_labeled));
    status.ready_replicas = Some(count(ready));
    status.available_replicas = Some(count(available));
    status.observed_generation = rs.metadata.generation;
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let has_failure = conditions.iter().any(|c| c.type_ == "ReplicaFailure");
    match failure {
        Some(failure) if !has_failure => conditions.push(ReplicaSetCondition {
            type_: "ReplicaFailure".to_owned(),
            status: "True".to_owned(),
            reason: Some(failure.reason.to_owned()),
            message: Some(failure.message.clone()),
            last_transition_time: Some(Time(now)),
        }),
        None if has_failure => conditions.retain(|c| c.type_ != "ReplicaFailure"),
        _ => {}
    }
    if status.conditions.as_ref().is_some_and(Vec::is_empty) {
        status.conditions = None;
    }
    // Upstream omits zero counts (omitempty).
    for field in [
        &mut status.fully_labeled_replicas,
        &mut status.ready_replicas,
        &mut status.available_replicas,
    ] {
        if *field == Some(0) {
            *field = None;
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodSpec, PodStatus};

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).expect("valid")
    }

    fn pod(name: &str, node: &str, phase: &str, ready_at: Option<i64>, created: i64) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                creation_timestamp: Some(Time(at(created))),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: (!node.is_empty()).then(|| node.to_owned()),
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: ready_at.map(|t| {
                    vec![PodCondition {
                        type_: "Ready".into(),
                        status: "True".into(),
                        last_transition_time: Some(Time(at(t))),
                        ..PodCondition::default()
                    }]
                }),
                ..PodStatus::default()
            }),
        }
    }

    fn names(pods: Vec<&Pod>) -> Vec<&str> {
        pods.iter()
            .map(|p| p.metadata.name.as_deref().unwrap_or(""))
            .collect()
    }

    #[test]
    fn scale_down_takes_unscheduled_then_pending_then_unready_then_newer_pods() {
        let pods = vec![
            pod("running-old", "n1", "Running", Some(10), 0),
            pod("running-new", "n2", "Running", Some(10), 5),
            pod("unready", "n3", "Running", None, 0),
            pod("pending", "n4", "Pending", None, 0),
            pod("unscheduled", "", "Pending", None, 0),
            pod("ready-recently", "n5", "Running", Some(50), 0),
        ];
        let order = names(pods_to_delete(&pods, &pods, pods.len()));
        assert_eq!(
            order,
            vec![
                "unscheduled",
                "pending",
                "unready",
                "ready-recently",
                "running-new",
                "running-old"
            ]
        );
        assert_eq!(
            names(pods_to_delete(&pods, &pods, 2)),
            vec!["unscheduled", "pending"]
        );
    }

    #[test]
    fn doubled_up_pods_go_before_lonely_ones() {
        let pods = vec![
            pod("alone", "n1", "Running", Some(10), 0),
            pod("crowded", "n2", "Running", Some(10), 0),
        ];
        let related = vec![
            pods[0].clone(),
            pods[1].clone(),
            pod("sibling", "n2", "Running", Some(10), 0),
        ];
        assert_eq!(names(pods_to_delete(&pods, &related, 1)), vec!["crowded"]);
    }

    #[test]
    fn slow_start_doubles_the_batches() {
        assert_eq!(slow_start_batches(0), Vec::<usize>::new());
        assert_eq!(slow_start_batches(1), vec![1]);
        assert_eq!(slow_start_batches(10), vec![1, 2, 4, 3]);
        assert_eq!(slow_start_batches(500).iter().sum::<usize>(), 500);
    }

    #[test]
    fn status_counts_labelled_ready_and_available_pods() {
        let mut rs: ReplicaSet = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "generation": 3},
            "spec": {"replicas": 3, "minReadySeconds": 30, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web", "tier": "front"}}}}
        }))
        .expect("a replicaset");
        let mut labelled = pod("a", "n1", "Running", Some(0), 0);
        labelled.metadata.labels = Some(
            [
                ("app".into(), "web".into()),
                ("tier".into(), "front".into()),
            ]
            .into(),
        );
        let recent = pod("b", "n1", "Running", Some(90), 0);
        let unready = pod("c", "n1", "Running", None, 0);
        let pods = vec![labelled, recent, unready];
        let status = compute_status(&rs, &pods, None, at(100));
        assert_eq!(status.replicas, 3);
        assert_eq!(status.fully_labeled_replicas, Some(1));
        assert_eq!(status.ready_replicas, Some(2));
        assert_eq!(
            status.available_replicas,
            Some(1),
            "b is ready for 10 s of 30"
        );
        assert_eq!(status.observed_generation, Some(3));
        assert_eq!(status.conditions, None);

        let failure = ManageFailure {
            reason: "FailedCreate",
            message: "quota".into(),
        };
        let status = compute_status::<Pod>(&rs, &[], Some(&failure), at(100));
        let condition = &status.conditions.as_ref().expect("set")[0];
        assert_eq!(
            (condition.type_.as_str(), condition.reason.as_deref()),
            ("ReplicaFailure", Some("FailedCreate"))
        );
        rs.status = Some(status);
        assert_eq!(
            compute_status::<Pod>(&rs, &[], None, at(101)).conditions,
            None,
            "cleared on success"
        );
    }
}
