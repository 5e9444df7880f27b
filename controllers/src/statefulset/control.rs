//! What one sync of a StatefulSet does (upstream `stateful_set_control.go`
//! `updateStatefulSet`), decided without I/O so the ordering guarantees can be tested on
//! their own: pods are processed by ordinal, and under `OrderedReady` the sync stops at the
//! first pod that is missing, unhealthy or terminating, so ordinal i is created only once
//! every lower one is Running, Ready and available, and at most one pod is removed at a
//! time, from the highest ordinal down. The plan lists the writes in upstream's order, in
//! phases; a failed write ends the sync (its executor stops there).

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::utils::{
    claims_for, claims_match_retention, identity_matches, in_ordinal_range, is_created,
    is_finished, is_pending, is_running_and_available, is_running_and_ready, is_terminating,
    is_unavailable, max_unavailable, new_pod, ordinal, pod_claim_is_stale, pod_revision, replicas,
    start_ordinal, storage_matches,
};

/// `podManagementPolicy` that lifts the ordering guarantees.
pub const PARALLEL: &str = "Parallel";
/// `updateStrategy.type` that replaces pods only when a user deletes them.
pub const ON_DELETE: &str = "OnDelete";
/// `updateStrategy.type` that replaces pods of older revisions (the default).
pub const ROLLING_UPDATE: &str = "RollingUpdate";

/// One write of a sync.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Create the pod's missing claims, then the pod (upstream `CreateStatefulPod`).
    CreatePod(Arc<Pod>),
    /// Create the missing claims of a pending pod (upstream
    /// `createMissingPersistentVolumeClaims`).
    CreateClaims(Arc<Pod>),
    /// Delete the pod (upstream `DeleteStatefulPod`).
    DeletePod(Arc<Pod>),
    /// Restore the pod's identity labels and claim volumes, create its missing claims and
    /// set their owners (upstream `UpdateStatefulPod`).
    UpdatePod(Arc<Pod>),
    /// Set the owners of the pod's claims as the retention policy wants (upstream
    /// `UpdatePodClaimForRetentionPolicy`).
    FixClaims(Arc<Pod>),
}

/// Writes that may run together.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// The writes, in upstream's order.
    pub steps: Vec<Step>,
    /// Whether they are independent (Parallel: run in slow-start batches) rather than
    /// ordered (run one by one, stopping at the first failure).
    pub burst: bool,
}

/// What a sync writes, and the status it reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Phases in order; a failure in one skips the rest.
    pub phases: Vec<Phase>,
    /// The status computed from the pods (before the writes), as upstream reports it.
    pub status: StatefulSetStatus,
}

/// What a plan is computed from.
pub struct Input<'a> {
    /// The set, as cached.
    pub set: &'a StatefulSet,
    /// The current revision's name and template.
    pub current: (&'a str, &'a PodTemplateSpec),
    /// The update revision's name and template.
    pub update: (&'a str, &'a PodTemplateSpec),
    /// The set's controller reference (for new pods).
    pub controller: OwnerReference,
    /// The collision count to report.
    pub collision_count: i32,
    /// The set's pods (claimed), in any order.
    pub pods: &'a [Arc<Pod>],
    /// The claims of the set's namespace, by name.
    pub claims: &'a BTreeMap<String, Arc<PersistentVolumeClaim>>,
    /// The time availability is judged at.
    pub now: Timestamp,
}

/// Counts of a status (upstream `replicaStatus`).
#[derive(Debug, Default)]
struct Counts {
    replicas: i32,
    ready: i32,
    available: i32,
    current: i32,
    updated: i32,
}

fn count<'p>(
    pods: impl Iterator<Item = &'p Arc<Pod>>,
    min_ready: i32,
    current: &str,
    update: &str,
    now: Timestamp,
) -> Counts {
    let mut counts = Counts::default();
    for pod in pods {
        if is_created(pod) {
            counts.replicas += 1;
        }
        if is_running_and_ready(pod) {
            counts.ready += 1;
            if is_running_and_available(pod, min_ready, now) {
                counts.available += 1;
            }
        }
        if is_created(pod) && !is_terminating(pod) {
            let revision = pod_revision(pod);
            if revision == current {
                counts.current += 1;
            }
            if revision == update {
                counts.updated += 1;
            }
        }
    }
    counts
}

/// The pod a missing ordinal gets (upstream `newVersionedStatefulSetPod`): the current
/// revision below the partition (or below `currentReplicas` without a rollingUpdate
/// block), the update revision otherwise.
fn versioned_pod(input: &Input<'_>, ordinal: i32) -> Pod {
    let set = input.set;
    let spec = set.spec.as_ref();
    let strategy = spec.and_then(|s| s.update_strategy.as_ref());
    let start = start_ordinal(set);
    let use_current = match strategy.and_then(|s| s.rolling_update.as_ref()) {
        None => {
            strategy
                .and_then(|s| s.type_.as_deref())
                .unwrap_or(ROLLING_UPDATE)
                == ROLLING_UPDATE
                && ordinal
                    < start.saturating_add(
                        set.status
                            .as_ref()
                            .and_then(|s| s.current_replicas)
                            .unwrap_or(0),
                    )
        }
        Some(rolling) => ordinal < start.saturating_add(rolling.partition.unwrap_or(0)),
    };
    let (revision, template) = if use_current {
        input.current
    } else {
        input.update
    };
    new_pod(set, template, input.controller.clone(), ordinal, revision)
}

/// Whether a claim of the pod is not in the cache.
fn misses_claims(
    set: &StatefulSet,
    pod: &Pod,
    claims: &BTreeMap<String, Arc<PersistentVolumeClaim>>,
) -> bool {
    let Some(ordinal) = ordinal(pod) else {
        return false;
    };
    claims_for(set, ordinal).iter().any(|(_, claim)| {
        claim
            .metadata
            .name
            .as_ref()
            .is_none_or(|n| !claims.contains_key(n))
    })
}

/// Upstream `processReplica` for one pod of the ordinal range: its writes, and whether an
/// ordered sync must stop here.
fn process_replica(
    input: &Input<'_>,
    monotonic: bool,
    min_ready: i32,
    pod: &Arc<Pod>,
    steps: &mut Vec<Step>,
) -> bool {
    let set = input.set;
    // A finished pod (even Succeeded: evicted pods end either way) is replaced once gone.
    if is_finished(pod) {
        if !is_terminating(pod) {
            steps.push(Step::DeletePod(pod.clone()));
        }
        return true;
    }
    if !is_created(pod) {
        if pod_claim_is_stale(set, pod, input.claims) {
            return true; // its claim waits for the garbage collector
        }
        steps.push(Step::CreatePod(pod.clone()));
        return monotonic;
    }
    if is_pending(pod) && misses_claims(set, pod, input.claims) {
        steps.push(Step::CreateClaims(pod.clone()));
    }
    if monotonic
        && (is_terminating(pod)
            || !is_running_and_ready(pod)
            || !is_running_and_available(pod, min_ready, input.now))
    {
        return true;
    }
    if identity_matches(set, pod)
        && storage_matches(set, pod)
        && claims_match_retention(set, pod, input.claims)
    {
        return false;
    }
    steps.push(Step::UpdatePod(pod.clone()));
    false
}

/// The writes of one sync and the status to report.
pub fn plan(input: &Input<'_>) -> Plan {
    let set = input.set;
    let spec = set.spec.clone().unwrap_or_default();
    let min_ready = spec.min_ready_seconds.unwrap_or(0);
    let (current, update) = (input.current.0, input.update.0);
    let mut status = StatefulSetStatus {
        observed_generation: set.metadata.generation,
        current_revision: Some(current.to_owned()),
        update_revision: Some(update.to_owned()),
        collision_count: Some(input.collision_count),
        conditions: set.status.as_ref().and_then(|s| s.conditions.clone()),
        ..StatefulSetStatus::default()
    };
    if set.metadata.deletion_timestamp.is_some() {
        let counts = count(input.pods.iter(), min_ready, current, update, input.now);
        set_counts(&mut status, &counts);
        return Plan {
            phases: Vec::new(),
            status,
        };
    }

    // Pods of the ordinal range by index (new ones where missing), and the condemned rest.
    let start = start_ordinal(set);
    let count_wanted = usize::try_from(replicas(set)).unwrap_or(0);
    let mut slots: Vec<Option<Arc<Pod>>> = vec![None; count_wanted];
    let mut condemned: Vec<Arc<Pod>> = Vec::new();
    for pod in input.pods {
        let Some(ordinal) = ordinal(pod) else {
            continue;
        };
        if in_ordinal_range(pod, set) {
            if let Some(slot) = usize::try_from(ordinal - start)
                .ok()
                .and_then(|i| slots.get_mut(i))
            {
                *slot = Some(pod.clone());
            }
        } else {
            condemned.push(pod.clone());
        }
    }
    let replicas: Vec<Arc<Pod>> = slots
        .into_iter()
        .zip(start..)
        .map(|(slot, ordinal)| slot.unwrap_or_else(|| Arc::new(versioned_pod(input, ordinal))))
        .collect();
    condemned.sort_by_key(|p| Reverse(ordinal(p)));
    let counts = count(
        replicas.iter().chain(&condemned),
        min_ready,
        current,
        update,
        input.now,
    );
    set_counts(&mut status, &counts);

    let unavailable = |p: &Arc<Pod>| is_unavailable(p, min_ready, input.now);
    let first_unavailable = replicas
        .iter()
        .chain(condemned.iter().rev())
        .find(|p| unavailable(p))
        .and_then(|p| p.metadata.name.clone());
    let monotonic = spec.pod_management_policy.as_deref() != Some(PARALLEL);
    let mut phases = Vec::new();
    let finish = |steps: Vec<Step>, phases: &mut Vec<Phase>| {
        if !steps.is_empty() {
            phases.push(Phase {
                steps,
                burst: !monotonic,
            });
        }
    };

    // The ordinal range, lowest first.
    let mut steps = Vec::new();
    for pod in &replicas {
        if process_replica(input, monotonic, min_ready, pod, &mut steps) && monotonic {
            finish(steps, &mut phases);
            return Plan { phases, status };
        }
    }
    finish(steps, &mut phases);

    // Claims of condemned pods get the owners the policy wants before the pods go.
    let steps = condemned
        .iter()
        .filter(|p| !claims_match_retention(set, p, input.claims))
        .map(|p| Step::FixClaims(p.clone()))
        .collect();
    finish(steps, &mut phases);

    // Condemned pods, highest first; ordered: one at a time, each once healthy (except the
    // first unhealthy pod, which may go).
    let mut steps = Vec::new();
    for pod in &condemned {
        if is_terminating(pod) {
            if monotonic {
                finish(steps, &mut phases);
                return Plan { phases, status };
            }
            continue;
        }
        let first = first_unavailable.is_some() && pod.metadata.name == first_unavailable;
        if monotonic
            && !first
            && (!is_running_and_ready(pod) || !is_running_and_available(pod, min_ready, input.now))
        {
            finish(steps, &mut phases);
            return Plan { phases, status };
        }
        steps.push(Step::DeletePod(pod.clone()));
        if monotonic {
            finish(steps, &mut phases);
            return Plan { phases, status };
        }
    }
    finish(steps, &mut phases);

    let strategy = spec.update_strategy.unwrap_or_default();
    if strategy.type_.as_deref() == Some(ON_DELETE) {
        return Plan { phases, status };
    }
    // Rolling update (upstream `updateStatefulSetAfterInvariantEstablished`): replace pods
    // of other revisions from the highest index down to the partition, keeping at most
    // maxUnavailable unavailable.
    let rolling = strategy.rolling_update.unwrap_or_default();
    let partition = usize::try_from(rolling.partition.unwrap_or(0)).unwrap_or(0);
    let max_unavailable = usize::try_from(max_unavailable(
        rolling.max_unavailable.as_ref(),
        i32::try_from(replicas.len()).unwrap_or(i32::MAX),
    ))
    .unwrap_or(1);
    let unavailable_now = replicas.iter().filter(|p| unavailable(p)).count();
    if unavailable_now > max_unavailable {
        return Plan { phases, status };
    }
    let mut budget = max_unavailable - unavailable_now;
    let mut steps = Vec::new();
    for (index, pod) in replicas.iter().enumerate().rev() {
        if index < partition || budget == 0 {
            break;
        }
        if pod_revision(pod) != update && !is_terminating(pod) {
            steps.push(Step::DeletePod(pod.clone()));
            budget -= 1;
            let current = status
                .current_replicas
                .unwrap_or(0)
                .saturating_sub(1)
                .max(0);
            status.current_replicas = Some(current).filter(|n| *n > 0);
        }
    }
    finish(steps, &mut phases);
    Plan { phases, status }
}

fn set_counts(status: &mut StatefulSetStatus, counts: &Counts) {
    let positive = |n: i32| Some(n).filter(|n| *n > 0);
    status.replicas = counts.replicas;
    status.ready_replicas = positive(counts.ready);
    status.available_replicas = Some(counts.available);
    status.current_replicas = positive(counts.current);
    status.updated_replicas = positive(counts.updated);
}

/// Completes a rolling update once every wanted pod is updated and ready: the update
/// revision becomes current (upstream `completeRollingUpdate`).
pub fn complete_rolling_update(set: &StatefulSet, status: &mut StatefulSetStatus) {
    let rolling = set
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        .is_none_or(|t| t == ROLLING_UPDATE);
    let wanted = replicas(set);
    if rolling
        && status.updated_replicas.unwrap_or(0) == wanted
        && status.ready_replicas.unwrap_or(0) == wanted
        && status.replicas == wanted
    {
        status.current_replicas = status.updated_replicas;
        status.current_revision = status.update_revision.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    fn set(replicas: i32, extra: serde_json::Value) -> StatefulSet {
        let mut spec = json!({
            "replicas": replicas,
            "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
        });
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "set-uid", "generation": 2},
            "spec": spec
        }))
        .expect("a set")
    }

    fn controller() -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: "StatefulSet".into(),
            name: "web".into(),
            uid: "set-uid".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    /// A pod of `set` at `revision`: `ready`, `pending`, `failed` or `terminating`.
    fn pod(set: &StatefulSet, ordinal: i32, revision: &str, state: &str) -> Arc<Pod> {
        let template = set.spec.as_ref().expect("spec").template.clone();
        let mut pod = new_pod(set, &template, controller(), ordinal, revision);
        pod.metadata.uid = Some(format!("pod-{ordinal}"));
        let ready = PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            last_transition_time: Some(Time(now())),
            ..PodCondition::default()
        };
        let phase = match state {
            "pending" => "Pending",
            "failed" => "Failed",
            _ => "Running",
        };
        pod.status = Some(PodStatus {
            phase: Some(phase.into()),
            conditions: (phase == "Running").then(|| vec![ready]),
            ..PodStatus::default()
        });
        if state == "terminating" {
            pod.metadata.deletion_timestamp = Some(Time(now()));
        }
        Arc::new(pod)
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1_800_000_000).expect("a time")
    }

    fn template(set: &StatefulSet) -> PodTemplateSpec {
        set.spec.as_ref().expect("spec").template.clone()
    }

    fn plan_for(set: &StatefulSet, pods: &[Arc<Pod>], current: &str, update: &str) -> Plan {
        let t = template(set);
        plan(&Input {
            set,
            current: (current, &t),
            update: (update, &t),
            controller: controller(),
            collision_count: 0,
            pods,
            claims: &BTreeMap::new(),
            now: now(),
        })
    }

    /// The steps as `verb name` strings, per phase.
    fn steps(plan: &Plan) -> Vec<Vec<String>> {
        plan.phases
            .iter()
            .map(|phase| {
                phase
                    .steps
                    .iter()
                    .map(|step| {
                        let (verb, pod) = match step {
                            Step::CreatePod(p) => ("create", p),
                            Step::CreateClaims(p) => ("claims", p),
                            Step::DeletePod(p) => ("delete", p),
                            Step::UpdatePod(p) => ("update", p),
                            Step::FixClaims(p) => ("fix", p),
                        };
                        format!("{verb} {}", pod.metadata.name.as_deref().unwrap_or(""))
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn ordered_ready_creates_an_ordinal_only_after_the_lower_ones_are_ready() {
        let s = set(3, json!({}));
        assert_eq!(steps(&plan_for(&s, &[], "r1", "r1")), [["create web-0"]]);
        let ready = [pod(&s, 0, "r1", "ready")];
        assert_eq!(steps(&plan_for(&s, &ready, "r1", "r1")), [["create web-1"]]);
        let pending = [pod(&s, 0, "r1", "ready"), pod(&s, 1, "r1", "pending")];
        assert!(steps(&plan_for(&s, &pending, "r1", "r1")).is_empty());
        let plan = plan_for(&s, &pending, "r1", "r1");
        assert_eq!(plan.status.replicas, 2);
        assert_eq!(plan.status.ready_replicas, Some(1));
        assert_eq!(plan.status.available_replicas, Some(1));
        assert_eq!(plan.status.current_replicas, Some(2));
        assert_eq!(plan.status.updated_replicas, Some(2));
        assert_eq!(plan.status.observed_generation, Some(2));
        assert_eq!(plan.status.collision_count, Some(0));
    }

    #[test]
    fn a_new_pod_waits_until_its_predecessor_has_been_ready_for_min_ready_seconds() {
        let s = set(2, json!({"minReadySeconds": 30}));
        let plan = plan_for(&s, &[pod(&s, 0, "r1", "ready")], "r1", "r1");
        assert!(steps(&plan).is_empty(), "ready for 0 s of 30");
        assert_eq!(plan.status.ready_replicas, Some(1));
        assert_eq!(plan.status.available_replicas, Some(0));
    }

    #[test]
    fn parallel_creates_and_deletes_everything_at_once() {
        let s = set(3, json!({"podManagementPolicy": "Parallel"}));
        let plan = plan_for(&s, &[pod(&s, 1, "r1", "pending")], "r1", "r1");
        assert_eq!(steps(&plan), [["create web-0", "create web-2"]]);
        assert!(plan.phases[0].burst);
        let s = set(1, json!({"podManagementPolicy": "Parallel"}));
        let pods: Vec<_> = (0..3).map(|i| pod(&s, i, "r1", "pending")).collect();
        assert_eq!(
            steps(&plan_for(&s, &pods, "r1", "r1")),
            [["delete web-2", "delete web-1"]]
        );
    }

    #[test]
    fn ordered_scale_down_removes_the_highest_ordinal_and_waits_for_it() {
        let s = set(1, json!({}));
        let pods: Vec<_> = (0..3).map(|i| pod(&s, i, "r1", "ready")).collect();
        assert_eq!(steps(&plan_for(&s, &pods, "r1", "r1")), [["delete web-2"]]);
        let pods = [
            pod(&s, 0, "r1", "ready"),
            pod(&s, 1, "r1", "ready"),
            pod(&s, 2, "r1", "terminating"),
        ];
        assert!(steps(&plan_for(&s, &pods, "r1", "r1")).is_empty());
        // The first unhealthy pod may go even though it is not ready.
        let pods = [
            pod(&s, 0, "r1", "ready"),
            pod(&s, 1, "r1", "ready"),
            pod(&s, 2, "r1", "pending"),
        ];
        assert_eq!(steps(&plan_for(&s, &pods, "r1", "r1")), [["delete web-2"]]);
        let pods = [
            pod(&s, 0, "r1", "ready"),
            pod(&s, 1, "r1", "pending"),
            pod(&s, 2, "r1", "pending"),
        ];
        assert!(
            steps(&plan_for(&s, &pods, "r1", "r1")).is_empty(),
            "unhealthy web-2 waits: web-1 is the first unhealthy pod"
        );
    }

    #[test]
    fn a_failed_pod_is_deleted_to_be_recreated() {
        let s = set(2, json!({}));
        let pods = [pod(&s, 0, "r1", "failed"), pod(&s, 1, "r1", "ready")];
        assert_eq!(steps(&plan_for(&s, &pods, "r1", "r1")), [["delete web-0"]]);
    }

    #[test]
    fn a_rolling_update_replaces_old_pods_from_the_highest_ordinal_down_to_the_partition() {
        let s = set(3, json!({}));
        let old: Vec<_> = (0..3).map(|i| pod(&s, i, "r1", "ready")).collect();
        let plan = plan_for(&s, &old, "r1", "r2");
        assert_eq!(steps(&plan), [["delete web-2"]]);
        assert_eq!(
            plan.status.current_replicas,
            Some(2),
            "the deleted pod no longer counts"
        );
        assert_eq!(plan.status.updated_replicas, None);

        let mid = [
            pod(&s, 0, "r1", "ready"),
            pod(&s, 1, "r1", "ready"),
            pod(&s, 2, "r2", "pending"),
        ];
        assert!(
            steps(&plan_for(&s, &mid, "r1", "r2")).is_empty(),
            "waits for web-2"
        );

        let s = set(
            3,
            json!({"updateStrategy": {"type": "RollingUpdate",
                "rollingUpdate": {"partition": 2}}}),
        );
        let pods = [
            pod(&s, 0, "r1", "ready"),
            pod(&s, 1, "r1", "ready"),
            pod(&s, 2, "r2", "ready"),
        ];
        assert!(
            steps(&plan_for(&s, &pods, "r1", "r2")).is_empty(),
            "ordinals below the partition keep their revision"
        );
        // A missing ordinal below the partition comes back at the current revision.
        let plan = plan_for(&s, &pods[1..], "r1", "r2");
        let Step::CreatePod(created) = &plan.phases[0].steps[0] else {
            panic!("a create: {plan:?}");
        };
        assert_eq!(pod_revision(created), "r1");

        let s = set(
            4,
            json!({"updateStrategy": {"type": "RollingUpdate",
                "rollingUpdate": {"partition": 0, "maxUnavailable": 2}}}),
        );
        let old: Vec<_> = (0..4).map(|i| pod(&s, i, "r1", "ready")).collect();
        assert_eq!(
            steps(&plan_for(&s, &old, "r1", "r2")),
            [["delete web-3", "delete web-2"]]
        );
    }

    #[test]
    fn on_delete_leaves_old_pods_alone() {
        let s = set(2, json!({"updateStrategy": {"type": "OnDelete"}}));
        let old: Vec<_> = (0..2).map(|i| pod(&s, i, "r1", "ready")).collect();
        assert!(steps(&plan_for(&s, &old, "r1", "r2")).is_empty());
        let plan = plan_for(&s, &old[..1], "r1", "r2");
        let Step::CreatePod(created) = &plan.phases[0].steps[0] else {
            panic!("a create: {plan:?}");
        };
        assert_eq!(
            pod_revision(created),
            "r2",
            "replacements get the update revision"
        );
    }

    #[test]
    fn ordinals_start_at_spec_ordinals_start() {
        let s = set(2, json!({"ordinals": {"start": 5}}));
        assert_eq!(steps(&plan_for(&s, &[], "r1", "r1")), [["create web-5"]]);
        let pods = [pod(&s, 0, "r1", "ready"), pod(&s, 5, "r1", "ready")];
        assert_eq!(
            steps(&plan_for(&s, &pods, "r1", "r1")),
            [["create web-6"]],
            "web-0 is out of range but waits for the range to be healthy"
        );
    }

    #[test]
    fn a_rolling_update_completes_once_every_pod_is_updated_and_ready() {
        let s = set(2, json!({}));
        let pods: Vec<_> = (0..2).map(|i| pod(&s, i, "r2", "ready")).collect();
        let mut status = plan_for(&s, &pods, "r1", "r2").status;
        assert_eq!(status.current_revision.as_deref(), Some("r1"));
        complete_rolling_update(&s, &mut status);
        assert_eq!(status.current_revision.as_deref(), Some("r2"));
        assert_eq!(status.current_replicas, Some(2));

        let pods = [pod(&s, 0, "r2", "ready"), pod(&s, 1, "r2", "pending")];
        let mut status = plan_for(&s, &pods, "r1", "r2").status;
        complete_rolling_update(&s, &mut status);
        assert_eq!(status.current_revision.as_deref(), Some("r1"));
    }
}
