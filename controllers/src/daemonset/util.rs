//! Pure decisions of the DaemonSet controller, tested without I/O (upstream
//! `daemon_controller.go`, `update.go`, `util/daemonset_util.go`): which nodes should run a
//! daemon pod, the pod a node gets, which pods to create and delete on a node, how far a
//! rolling update may go, what a revision records, and the status the pods add up to.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PodSpec, PodTemplateSpec, Toleration,
};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubemock_apimachinery::intstr;
use serde_json::{Value, json};

use crate::replicaset::pods::{is_available, is_ready};
use crate::scheduler::fit::{selector_matches, untolerated_taint};

/// The label naming a pod's (and a revision's) template hash (upstream
/// `DefaultDaemonSetUniqueLabelKey`).
pub const REVISION_HASH: &str = "controller-revision-hash";
/// The label carrying the template generation a pod was made from (upstream
/// `DaemonSetTemplateGenerationKey`).
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";
/// The DaemonSet annotation the API server keeps the template generation in (upstream
/// `DeprecatedTemplateGeneration`).
pub const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";

/// Node taints every daemon pod tolerates (upstream `AddOrUpdateDaemonPodTolerations`): a
/// daemon survives node problems and runs on cordoned nodes.
const DAEMON_TOLERATIONS: &[(&str, &str)] = &[
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
];
/// Tolerated by host-network daemon pods only.
const NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";

fn exists_toleration(key: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.to_owned()),
        operator: Some("Exists".to_owned()),
        effect: Some(effect.to_owned()),
        ..Toleration::default()
    }
}

/// Upstream `AddOrUpdateTolerationInPodSpec`: replaces a toleration equal but for its
/// `tolerationSeconds`, else appends.
fn add_or_update_toleration(spec: &mut PodSpec, toleration: Toleration) {
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    let same = |t: &Toleration| {
        t.key == toleration.key
            && t.effect == toleration.effect
            && t.operator == toleration.operator
            && t.value == toleration.value
    };
    match tolerations.iter_mut().find(|t| same(t)) {
        Some(existing) => *existing = toleration,
        None => tolerations.push(toleration),
    }
}

/// Adds the tolerations of every daemon pod to `spec`.
pub fn add_daemon_tolerations(spec: &mut PodSpec) {
    for (key, effect) in DAEMON_TOLERATIONS {
        add_or_update_toleration(spec, exists_toleration(key, effect));
    }
    if spec.host_network == Some(true) {
        add_or_update_toleration(spec, exists_toleration(NETWORK_UNAVAILABLE, "NoSchedule"));
    }
}

fn template(ds: &DaemonSet) -> PodTemplateSpec {
    ds.spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default()
}

/// The pod `ds` would run on `node_name`, for the predicates (upstream `NewPod`).
fn new_pod(ds: &DaemonSet, node_name: &str) -> Pod {
    let template = template(ds);
    let mut spec = template.spec.unwrap_or_default();
    spec.node_name = Some(node_name.to_owned());
    add_daemon_tolerations(&mut spec);
    Pod {
        metadata: template.metadata.unwrap_or_default(),
        spec: Some(spec),
        status: None,
    }
}

/// Upstream `NodeShouldRunDaemonPod`: whether `ds` should run a pod on `node` that has none
/// (`should_run`), and whether a pod already there may stay (`should_continue_running`: only
/// untolerated NoExecute taints evict it).
pub fn node_should_run(node: &Node, ds: &DaemonSet) -> (bool, bool) {
    let node_name = node.metadata.name.clone().unwrap_or_default();
    let wanted_node = template(ds)
        .spec
        .and_then(|s| s.node_name)
        .unwrap_or_default();
    if !(wanted_node.is_empty() || wanted_node == node_name) {
        return (false, false);
    }
    let pod = new_pod(ds, &node_name);
    if !selector_matches(&pod, node) {
        return (false, false);
    }
    if untolerated_taint(&pod, node, &["NoSchedule", "NoExecute"]).is_some() {
        return (
            false,
            untolerated_taint(&pod, node, &["NoExecute"]).is_none(),
        );
    }
    (true, true)
}

/// The template generation the API server recorded on `ds` (upstream
/// `GetTemplateGeneration`; `None` when absent or unparsable).
pub fn template_generation(ds: &DaemonSet) -> Option<i64> {
    ds.metadata
        .annotations
        .as_ref()?
        .get(TEMPLATE_GENERATION_ANNOTATION)?
        .parse()
        .ok()
}

/// The template new pods are made from (upstream `CreatePodTemplate`): the daemon
/// tolerations, and the generation and hash labels.
pub fn pod_template(ds: &DaemonSet, generation: Option<i64>, hash: &str) -> PodTemplateSpec {
    let mut template = template(ds);
    add_daemon_tolerations(template.spec.get_or_insert_with(PodSpec::default));
    let labels = template
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(BTreeMap::new);
    if let Some(generation) = generation {
        labels.insert(TEMPLATE_GENERATION_LABEL.to_owned(), generation.to_string());
    }
    if !hash.is_empty() {
        labels.insert(REVISION_HASH.to_owned(), hash.to_owned());
    }
    template
}

/// Upstream `ReplaceDaemonSetPodNodeNameNodeAffinity`: the pod's required node affinity
/// becomes exactly "the node named `node_name`", which the scheduler then honours.
pub fn target_node_affinity(affinity: Option<Affinity>, node_name: &str) -> Affinity {
    let selector = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: Some(vec![NodeSelectorRequirement {
                key: "metadata.name".to_owned(),
                operator: "In".to_owned(),
                values: Some(vec![node_name.to_owned()]),
            }]),
            match_expressions: None,
        }],
    };
    let mut affinity = affinity.unwrap_or_default();
    affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default)
        .required_during_scheduling_ignored_during_execution = Some(selector);
    affinity
}

/// The node a daemon pod is for (upstream `GetTargetNodeName`): its `nodeName`, or before
/// binding the single `metadata.name In [node]` of its required node affinity.
pub fn target_node(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(node) = spec.node_name.as_ref().filter(|n| !n.is_empty()) {
        return Some(node.clone());
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms
        .iter()
        .flat_map(|t| t.match_fields.iter().flatten())
        .find(|r| r.key == "metadata.name" && r.operator == "In")
        .and_then(|r| match r.values.as_deref() {
            Some([node]) => Some(node.clone()),
            _ => None,
        })
}

fn label<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// Upstream `IsPodUpdated`: the pod has the current hash, or the current template
/// generation.
pub fn is_updated(pod: &Pod, hash: &str, generation: Option<i64>) -> bool {
    let generation_matches = generation
        .is_some_and(|g| label(pod, TEMPLATE_GENERATION_LABEL) == Some(g.to_string().as_str()));
    let hash_matches = !hash.is_empty() && label(pod, REVISION_HASH) == Some(hash);
    hash_matches || generation_matches
}

/// Upstream `GetScaledValueFromIntOrPercent` rounding up (`kubemock_apimachinery::intstr`);
/// `None` for a malformed percentage.
fn scaled_up(value: &IntOrString, total: i32) -> Option<i32> {
    let value = intstr::IntOrString::from(value.clone());
    let scaled = intstr::get_scaled_value_from_int_or_percent(&value, i64::from(total), true);
    i32::try_from(scaled.ok()?).ok()
}

fn is_rolling_update(ds: &DaemonSet) -> bool {
    ds.spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        .is_none_or(|t| t == "RollingUpdate")
}

fn rolling_value(
    ds: &DaemonSet,
    field: fn(&k8s_openapi::api::apps::v1::RollingUpdateDaemonSet) -> Option<IntOrString>,
) -> Option<IntOrString> {
    if !is_rolling_update(ds) {
        return None;
    }
    ds.spec
        .as_ref()?
        .update_strategy
        .as_ref()?
        .rolling_update
        .as_ref()
        .and_then(field)
}

/// Upstream `SurgeCount`: extra pods a rolling update may run, of `desired`.
pub fn surge_count(ds: &DaemonSet, desired: i32) -> Result<i32, String> {
    match rolling_value(ds, |r| r.max_surge.clone()) {
        None => Ok(0),
        Some(v) => scaled_up(&v, desired).ok_or_else(|| format!("invalid maxSurge {v:?}")),
    }
}

/// Upstream `UnavailableCount`: pods a rolling update may leave unavailable, of `desired`.
pub fn unavailable_count(ds: &DaemonSet, desired: i32) -> Result<i32, String> {
    match rolling_value(ds, |r| r.max_unavailable.clone()) {
        None => Ok(0),
        Some(v) => scaled_up(&v, desired).ok_or_else(|| format!("invalid maxUnavailable {v:?}")),
    }
}

/// Upstream `AllowsSurge`.
pub fn allows_surge(ds: &DaemonSet) -> bool {
    surge_count(ds, 1).is_ok_and(|n| n > 0)
}

/// Upstream `podByCreationTimestampAndPhase`: bound pods first, then the oldest, then by name.
pub fn by_creation(a: &Pod, b: &Pod) -> Ordering {
    let bound = |p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty())
    };
    let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    bound(b)
        .cmp(&bound(a))
        .then_with(|| created(a).cmp(&created(b)))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.as_ref()?.phase.as_deref()
}

fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

/// What one node needs (upstream `podsShouldBeOnNode`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct NodePlan {
    /// A pod is to be created there.
    pub create: bool,
    /// Pods to delete (excess or no longer wanted).
    pub delete: Vec<String>,
    /// Failed pods, to delete once their node's backoff allows (`FailedDaemonPod`).
    pub failed: Vec<String>,
    /// Succeeded pods, to delete (`SucceededDaemonPod`).
    pub succeeded: Vec<String>,
}

/// The plan for a node: `pods` are the daemon pods targeting it (any state).
pub fn plan_node(
    ds: &DaemonSet,
    (should_run, should_continue): (bool, bool),
    pods: &[Pod],
    hash: &str,
    now: Timestamp,
) -> NodePlan {
    let mut plan = NodePlan::default();
    if should_run && pods.is_empty() {
        plan.create = true;
        return plan;
    }
    if !should_continue {
        plan.delete = pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .map(name)
            .collect();
        return plan;
    }
    let mut running: Vec<&Pod> = Vec::new();
    for pod in pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        match phase(pod) {
            Some("Failed") => plan.failed.push(name(pod)),
            Some("Succeeded") => plan.succeeded.push(name(pod)),
            _ => running.push(pod),
        }
    }
    running.sort_by(|a, b| by_creation(a, b));
    if !allows_surge(ds) {
        // More than one: all but the oldest go.
        plan.delete.extend(running.iter().skip(1).map(|p| name(p)));
        return plan;
    }
    if running.len() <= 1 {
        plan.create = running.is_empty() && should_run;
        return plan;
    }
    // Surging: one old and one new pod may share the node, until the new one is available
    // (or the old one is not ready); any others go.
    let min_ready = min_ready_seconds(ds);
    let (mut oldest_new, mut oldest_old) = (None, None);
    for pod in running {
        let slot = if label(pod, REVISION_HASH) == Some(hash) {
            &mut oldest_new
        } else {
            &mut oldest_old
        };
        if slot.is_none() {
            *slot = Some(pod);
        } else {
            plan.delete.push(name(pod));
        }
    }
    if let (Some(new), Some(old)) = (oldest_new, oldest_old)
        && (!is_ready(old) || is_available(new, min_ready, now))
    {
        plan.delete.push(name(old));
    }
    plan
}

fn min_ready_seconds(ds: &DaemonSet) -> i32 {
    ds.spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

/// Upstream `findUpdatedPodsOnNode`: the node's one new and one old live pod, or `None`
/// when it has more of either (the manage step prunes it first).
fn updated_pods_on_node<'a>(
    pods: &'a [Pod],
    hash: &str,
    generation: Option<i64>,
) -> Option<(Option<&'a Pod>, Option<&'a Pod>)> {
    let (mut new, mut old) = (None, None);
    for pod in pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        let slot = if is_updated(pod, hash, generation) {
            &mut new
        } else {
            &mut old
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(pod);
    }
    Some((new, old))
}

/// One step of a rolling update.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RolloutStep {
    /// Old pods to delete.
    pub delete: Vec<String>,
    /// Nodes that get a new pod next to their old one (surge).
    pub create: Vec<String>,
}

/// Upstream `rollingUpdate`: which old pods to replace now, within maxUnavailable (deleting
/// first) or maxSurge (creating first). `pods`: the daemon pods by target node, `wanted`:
/// each node's `(should_run, should_continue)`.
pub fn rolling_update(
    ds: &DaemonSet,
    wanted: &BTreeMap<String, (bool, bool)>,
    pods: &BTreeMap<String, Vec<Pod>>,
    hash: &str,
    now: Timestamp,
) -> Result<RolloutStep, String> {
    let generation = template_generation(ds);
    let min_ready = min_ready_seconds(ds);
    let available = |p: &Pod| is_available(p, min_ready, now);
    // Every node that should run a pod is considered, with or without pods.
    let mut by_node: BTreeMap<&str, &[Pod]> = pods
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_slice()))
        .collect();
    let desired = wanted.values().filter(|(run, _)| *run).count();
    for (node, _) in wanted.iter().filter(|(_, (run, _))| *run) {
        by_node.entry(node.as_str()).or_insert(&[]);
    }
    let desired = i32::try_from(desired).unwrap_or(i32::MAX);
    let mut max_unavailable = unavailable_count(ds, desired)?;
    let max_surge = surge_count(ds, desired)?;
    if desired > 0 && max_unavailable == 0 && max_surge == 0 {
        max_unavailable = 1;
    }
    let mut step = RolloutStep::default();
    if max_surge == 0 {
        let mut unavailable = 0;
        let mut replacements = Vec::new();
        let mut candidates = Vec::new();
        for pods in by_node.values() {
            let Some((new, old)) = updated_pods_on_node(pods, hash, generation) else {
                unavailable += 1;
                continue;
            };
            match (new, old) {
                (None, None) | (Some(_), Some(_)) => unavailable += 1,
                (Some(new), None) => {
                    if !available(new) {
                        unavailable += 1;
                    }
                }
                (None, Some(old)) => {
                    if !available(old) {
                        replacements.push(name(old));
                        unavailable += 1;
                    } else if unavailable < max_unavailable {
                        candidates.push(name(old));
                    }
                }
            }
        }
        let room = usize::try_from((max_unavailable - unavailable).max(0)).unwrap_or(0);
        step.delete = replacements;
        step.delete.extend(candidates.into_iter().take(room));
        return Ok(step);
    }
    let should_run = |node: &str| wanted.get(node).is_some_and(|(run, _)| *run);
    let mut not_wanted = Vec::new();
    let mut candidates = Vec::new();
    let (mut surge, mut available_count) = (0, 0);
    for (node, pods) in &by_node {
        let Some((new, old)) = updated_pods_on_node(pods, hash, generation) else {
            surge += 1;
            continue;
        };
        if old.or(new).is_some_and(available) {
            available_count += 1;
        }
        match (new, old) {
            (_, None) => {}
            (None, Some(old)) => {
                if !available(old) {
                    if should_run(node) {
                        step.create.push((*node).to_owned());
                    } else {
                        step.delete.push(name(old));
                    }
                } else if !should_run(node) {
                    not_wanted.push(name(old));
                } else if surge < max_surge {
                    candidates.push((*node).to_owned());
                }
            }
            (Some(new), Some(old)) => {
                if available(new) {
                    step.delete.push(name(old));
                } else {
                    surge += 1;
                }
            }
        }
    }
    // Pods on nodes no longer wanted go only while enough others are available.
    let deletable = usize::try_from((available_count - desired).max(0)).unwrap_or(0);
    step.delete.extend(not_wanted.into_iter().take(deletable));
    let room = usize::try_from((max_surge - surge).max(0)).unwrap_or(0);
    step.create.extend(candidates.into_iter().take(room));
    Ok(step)
}

/// The status the nodes and daemon pods add up to (upstream `updateDaemonSetStatus`);
/// `observed`: the sync acted on this generation.
pub fn compute_status(
    ds: &DaemonSet,
    wanted: &BTreeMap<String, (bool, bool)>,
    pods: &BTreeMap<String, Vec<Pod>>,
    hash: &str,
    observed: bool,
    now: Timestamp,
) -> DaemonSetStatus {
    let generation = template_generation(ds);
    let min_ready = min_ready_seconds(ds);
    let (mut desired, mut current, mut misscheduled) = (0, 0, 0);
    let (mut ready, mut available, mut updated) = (0, 0, 0);
    for (node, (should_run, _)) in wanted {
        let mut on_node: Vec<&Pod> = pods.get(node).into_iter().flatten().collect();
        if !should_run {
            if !on_node.is_empty() {
                misscheduled += 1;
            }
            continue;
        }
        desired += 1;
        on_node.sort_by(|a, b| by_creation(a, b));
        let Some(pod) = on_node.first() else {
            continue;
        };
        current += 1;
        if is_ready(pod) {
            ready += 1;
            if is_available(pod, min_ready, now) {
                available += 1;
            }
        }
        if is_updated(pod, hash, generation) {
            updated += 1;
        }
    }
    let mut status = ds.status.clone().unwrap_or_default();
    if observed {
        status.observed_generation = ds.metadata.generation;
    }
    let nonzero = |n: i32| Some(n).filter(|n| *n != 0);
    status.desired_number_scheduled = desired;
    status.current_number_scheduled = current;
    status.number_misscheduled = misscheduled;
    status.number_ready = ready;
    status.updated_number_scheduled = nonzero(updated);
    status.number_available = nonzero(available);
    status.number_unavailable = nonzero(desired - available);
    status
}

/// What a revision records (upstream `getPatch`): a patch restoring the template.
pub fn revision_data(ds: &DaemonSet) -> Value {
    let mut template = serde_json::to_value(template(ds)).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut template {
        map.insert("$patch".to_owned(), json!("replace"));
    }
    json!({"spec": {"template": template}})
}

/// Whether `revision` records `ds`'s current template (upstream `Match`).
pub fn revision_matches(ds: &DaemonSet, revision: &ControllerRevision) -> bool {
    revision.data.as_ref() == Some(&RawExtension(revision_data(ds)))
}

/// Old revisions to delete (upstream `cleanupHistory`): beyond `revisionHistoryLimit`, the
/// oldest first, never one a pod still runs.
pub fn revisions_to_delete<'a>(
    ds: &DaemonSet,
    old: &'a [ControllerRevision],
    live_hashes: &[String],
) -> Vec<&'a ControllerRevision> {
    let limit = ds
        .spec
        .as_ref()
        .and_then(|s| s.revision_history_limit)
        .unwrap_or(10);
    let mut excess = old
        .len()
        .saturating_sub(usize::try_from(limit).unwrap_or(0));
    let mut sorted: Vec<&ControllerRevision> = old.iter().collect();
    sorted.sort_by_key(|r| r.revision);
    let mut doomed = Vec::new();
    for revision in sorted {
        if excess == 0 {
            break;
        }
        let hash = revision
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(REVISION_HASH));
        if hash.is_some_and(|h| live_hashes.contains(h)) {
            continue;
        }
        doomed.push(revision);
        excess -= 1;
    }
    doomed
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).expect("valid")
    }

    fn ds(spec: Value) -> DaemonSet {
        let mut full = json!({
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
        });
        if let (Value::Object(full), Value::Object(extra)) = (&mut full, spec) {
            full.extend(extra);
        }
        serde_json::from_value(json!({
            "metadata": {"name": "d", "namespace": "ns", "generation": 2,
                "annotations": {TEMPLATE_GENERATION_ANNOTATION: "2"}},
            "spec": full
        }))
        .expect("a daemonset")
    }

    fn node(name: &str, labels: Value, taints: Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints}}))
        .expect("a node")
    }

    /// A daemon pod on `node` of revision `hash`, created at `created`, Ready since `ready`.
    fn pod(name: &str, node: &str, hash: &str, created: i64, ready: Option<i64>) -> Pod {
        let conditions = ready.map(
            |t| json!([{"type": "Ready", "status": "True", "lastTransitionTime": Time(at(t))}]),
        );
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"app": "d", REVISION_HASH: hash},
                "creationTimestamp": Time(at(created))},
            "spec": {"nodeName": node, "containers": []},
            "status": {"phase": "Running", "conditions": conditions}
        }))
        .expect("a pod")
    }

    #[test]
    fn selectors_affinity_and_taints_decide_where_daemons_run() {
        let plain = ds(json!({}));
        let selective = ds(json!({"template": {"metadata": {"labels": {"app": "d"}},
            "spec": {"nodeSelector": {"disk": "ssd"}, "containers": []}}}));
        let ssd = node("a", json!({"disk": "ssd"}), json!([]));
        let hdd = node("b", json!({"disk": "hdd"}), json!([]));
        assert_eq!(node_should_run(&ssd, &selective), (true, true));
        assert_eq!(node_should_run(&hdd, &selective), (false, false));
        assert_eq!(node_should_run(&hdd, &plain), (true, true));

        let no_schedule = node(
            "c",
            json!({}),
            json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
        );
        assert_eq!(
            node_should_run(&no_schedule, &plain),
            (false, true),
            "a NoSchedule taint keeps running pods"
        );
        let no_execute = node(
            "d",
            json!({}),
            json!([{"key": "dedicated", "effect": "NoExecute"}]),
        );
        assert_eq!(node_should_run(&no_execute, &plain), (false, false));
        let tolerant = ds(json!({"template": {"metadata": {"labels": {"app": "d"}},
            "spec": {"tolerations": [{"key": "dedicated", "operator": "Exists"}], "containers": []}}}));
        assert_eq!(node_should_run(&no_execute, &tolerant), (true, true));

        // The daemon tolerations: cordoned, pressured and not-ready nodes still run daemons.
        let cordoned = node(
            "e",
            json!({}),
            json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
                {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]),
        );
        assert_eq!(node_should_run(&cordoned, &plain), (true, true));
        let network = node(
            "f",
            json!({}),
            json!([{"key": NETWORK_UNAVAILABLE, "effect": "NoSchedule"}]),
        );
        assert_eq!(node_should_run(&network, &plain), (false, true));
        let host = ds(json!({"template": {"metadata": {"labels": {"app": "d"}},
            "spec": {"hostNetwork": true, "containers": []}}}));
        assert_eq!(node_should_run(&network, &host), (true, true));
    }

    #[test]
    fn new_pods_target_their_node_and_carry_the_revision() {
        let d = ds(
            json!({"template": {"metadata": {"labels": {"app": "d"}}, "spec": {
            "containers": [],
            "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                "effect": "NoSchedule", "tolerationSeconds": 5}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchExpressions": [{"key": "x", "operator": "Exists"}]}]}}}}}}),
        );
        let template = pod_template(&d, template_generation(&d), "abc");
        let labels = template.metadata.as_ref().and_then(|m| m.labels.clone());
        assert_eq!(
            labels,
            Some(
                [
                    ("app".into(), "d".into()),
                    (REVISION_HASH.into(), "abc".into()),
                    (TEMPLATE_GENERATION_LABEL.into(), "2".into())
                ]
                .into()
            )
        );
        let spec = template.spec.expect("spec");
        let tolerations = spec.tolerations.clone().expect("tolerations");
        assert_eq!(
            tolerations.len(),
            6,
            "replaced, not duplicated: {tolerations:?}"
        );
        assert_eq!(tolerations[0].toleration_seconds, None);
        let affinity = target_node_affinity(spec.affinity, "node-1");
        let pod = Pod {
            spec: Some(PodSpec {
                affinity: Some(affinity.clone()),
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        assert_eq!(target_node(&pod).as_deref(), Some("node-1"));
        let terms = affinity
            .node_affinity
            .and_then(|a| a.required_during_scheduling_ignored_during_execution)
            .expect("required")
            .node_selector_terms;
        assert_eq!(terms.len(), 1, "the template's terms are replaced");
    }

    #[test]
    fn a_node_keeps_one_pod_and_drops_finished_ones() {
        let d = ds(json!({}));
        let now = at(100);
        assert_eq!(
            plan_node(&d, (true, true), &[], "h", now),
            NodePlan {
                create: true,
                ..NodePlan::default()
            }
        );
        let newer = pod("newer", "n", "h", 10, Some(10));
        let older = pod("older", "n", "h", 5, Some(10));
        let mut failed = pod("failed", "n", "h", 1, None);
        failed.status.as_mut().expect("status").phase = Some("Failed".into());
        let plan = plan_node(&d, (true, true), &[newer, older.clone(), failed], "h", now);
        assert_eq!(plan.delete, vec!["newer"]);
        assert_eq!(plan.failed, vec!["failed"]);
        assert!(!plan.create);
        let plan = plan_node(&d, (false, false), &[older], "h", now);
        assert_eq!(plan.delete, vec!["older"]);
    }

    #[test]
    fn surging_keeps_the_old_pod_until_the_new_one_is_available() {
        let d = ds(json!({"updateStrategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}}));
        let old = pod("old", "n", "old", 0, Some(0));
        let starting = pod("new", "n", "h", 50, None);
        let plan = plan_node(&d, (true, true), &[old.clone(), starting], "h", at(100));
        assert!(plan.delete.is_empty(), "{plan:?}");
        let ready = pod("new", "n", "h", 50, Some(60));
        let plan = plan_node(&d, (true, true), &[old, ready], "h", at(100));
        assert_eq!(plan.delete, vec!["old"]);
    }

    fn everywhere(nodes: &[&str]) -> BTreeMap<String, (bool, bool)> {
        nodes
            .iter()
            .map(|n| ((*n).to_owned(), (true, true)))
            .collect()
    }

    #[test]
    fn rolling_updates_replace_at_most_max_unavailable_pods() {
        let d = ds(json!({}));
        let wanted = everywhere(&["a", "b", "c"]);
        let mut pods: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
        for n in ["a", "b", "c"] {
            pods.insert(
                n.into(),
                vec![pod(&format!("{n}-old"), n, "old", 0, Some(0))],
            );
        }
        let step = rolling_update(&d, &wanted, &pods, "h", at(100)).expect("valid");
        assert_eq!(step.delete, vec!["a-old"], "one at a time");
        // a is being replaced (new pod not ready yet): nothing more goes.
        pods.insert("a".into(), vec![pod("a-new", "a", "h", 90, None)]);
        let step = rolling_update(&d, &wanted, &pods, "h", at(100)).expect("valid");
        assert_eq!(step, RolloutStep::default());
        // A node without any pod counts as unavailable too.
        pods.remove("a");
        let step = rolling_update(&d, &wanted, &pods, "h", at(100)).expect("valid");
        assert_eq!(step, RolloutStep::default());
        // Once a's new pod is available, b's old one goes; an unavailable old pod always goes.
        pods.insert("a".into(), vec![pod("a-new", "a", "h", 90, Some(95))]);
        pods.insert("c".into(), vec![pod("c-old", "c", "old", 0, None)]);
        let step = rolling_update(&d, &wanted, &pods, "h", at(100)).expect("valid");
        assert_eq!(
            step.delete,
            vec!["c-old"],
            "c is already unavailable: b waits"
        );

        let percent = ds(json!({"updateStrategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "50%"}}}));
        assert_eq!(unavailable_count(&percent, 3), Ok(2), "rounded up");
        let on_delete = ds(json!({"updateStrategy": {"type": "OnDelete"}}));
        assert_eq!(unavailable_count(&on_delete, 3), Ok(0));
    }

    #[test]
    fn surging_rollouts_create_before_deleting() {
        let d = ds(json!({"updateStrategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}}));
        let wanted = everywhere(&["a", "b"]);
        let mut pods: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
        for n in ["a", "b"] {
            pods.insert(
                n.into(),
                vec![pod(&format!("{n}-old"), n, "old", 0, Some(0))],
            );
        }
        let step = rolling_update(&d, &wanted, &pods, "h", at(100)).expect("valid");
        assert_eq!(step.create, vec!["a"]);
        assert!(step.delete.is_empty());
        pods.get_mut("a")
            .expect("a")
            .push(pod("a-new", "a", "h", 90, Some(95)));
        let step = rolling_update(&d, &wanted, &pods, "h", at(100)).expect("valid");
        assert_eq!(step.delete, vec!["a-old"]);
        assert_eq!(step.create, vec!["b"]);
    }

    #[test]
    fn status_counts_the_oldest_pod_of_each_wanted_node() {
        let d = ds(json!({"minReadySeconds": 30}));
        let mut wanted = everywhere(&["a", "b", "c"]);
        wanted.insert("d".into(), (false, false));
        let mut pods: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
        pods.insert("a".into(), vec![pod("a1", "a", "h", 0, Some(0))]);
        pods.insert("b".into(), vec![pod("b1", "b", "old", 0, Some(90))]);
        pods.insert("d".into(), vec![pod("d1", "d", "h", 0, Some(0))]);
        let status = compute_status(&d, &wanted, &pods, "h", true, at(100));
        assert_eq!(status.desired_number_scheduled, 3);
        assert_eq!(status.current_number_scheduled, 2);
        assert_eq!(status.number_misscheduled, 1);
        assert_eq!(status.number_ready, 2);
        assert_eq!(
            status.number_available,
            Some(1),
            "b is ready for 10 s of 30"
        );
        assert_eq!(status.number_unavailable, Some(2));
        assert_eq!(status.updated_number_scheduled, Some(1));
        assert_eq!(status.observed_generation, Some(2));
        let unobserved = compute_status(&d, &wanted, &pods, "h", false, at(100));
        assert_eq!(unobserved.observed_generation, None);
    }

    #[test]
    fn history_keeps_the_limit_and_every_revision_in_use() {
        let d = ds(json!({"revisionHistoryLimit": 1}));
        let revision = |name: &str, number: i64| ControllerRevision {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.into()),
                labels: Some([(REVISION_HASH.into(), name.into())].into()),
                ..Default::default()
            },
            data: None,
            revision: number,
        };
        let old = vec![revision("r3", 3), revision("r1", 1), revision("r2", 2)];
        let names = |doomed: Vec<&ControllerRevision>| -> Vec<String> {
            doomed
                .iter()
                .map(|r| r.metadata.name.clone().unwrap_or_default())
                .collect()
        };
        assert_eq!(names(revisions_to_delete(&d, &old, &[])), vec!["r1", "r2"]);
        assert_eq!(
            names(revisions_to_delete(&d, &old, &["r1".into()])),
            vec!["r2", "r3"]
        );
        let mut current = revision("cur", 4);
        current.data = Some(RawExtension(revision_data(&d)));
        assert!(revision_matches(&d, &current));
        let changed = ds(json!({"template": {"metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "c", "image": "y"}]}}}));
        assert!(!revision_matches(&changed, &current));
    }
}
