//! The disruption controller (kube-controller-manager's `disruption-controller`, upstream
//! `pkg/controller/disruption/disruption.go`): keeps each PodDisruptionBudget's status, which
//! the API server's eviction reads to allow or refuse an eviction (`pods/eviction`,
//! `kubectl drain`). For each budget: the pods its selector matches, how many should exist
//! (`expectedPods`: the pods themselves for an integer `minAvailable`, else the scale of their
//! controllers), how many must stay healthy (`desiredHealthy`), how many are ready and not
//! being disrupted (`currentHealthy`), hence `disruptionsAllowed`, with the `DisruptionAllowed`
//! condition. Pods the eviction charged (`disruptedPods`) count as unhealthy until they are
//! gone, for at most two minutes.
//!
//! Also upstream's events (`NoPods`, `UnmanagedPods`, `CalculateExpectedPodCountFailed` on
//! the budget; `NotDeleted` and `MultiplePodDisruptionBudgets` on the pod), and the reset of
//! stale `DisruptionTarget` conditions: an eviction marks the pod before deleting it, and a
//! pod still not being deleted two minutes later gets the condition back to False
//! (`syncStalePodDisruption`). Both kinds of waits run on the controller's clock.
//!
//! Not done (docs/controllers.md): controllers other than ReplicaSets, Deployments,
//! StatefulSets and ReplicationControllers for percentages and `maxUnavailable` (upstream also
//! asks any `scale` subresource).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, PodCondition, ReplicationController};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kubemock_apimachinery::intstr;
use kubemock_client::controller::controller_of;
use kubemock_client::events::{EventType, Recorder, object_reference};
use kubemock_client::{
    Action, Api, ApiResource, Client, Controller, InformerFactory, ObjectKey, PostParams, Resource,
    Selector, SharedInformer, Store,
};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::error::Result;

/// Concurrent syncs (kube-controller-manager runs the disruption controller with one worker).
const WORKERS: usize = 1;
/// How long a pod the eviction charged counts as disrupted before it is expected gone
/// (`DeletionTimeout`).
pub const DELETION_TIMEOUT: Duration = Duration::from_secs(120);
/// The budget's condition (`policy.DisruptionAllowedCondition`).
pub const DISRUPTION_ALLOWED: &str = "DisruptionAllowed";
/// How long an eviction's `DisruptionTarget` condition may stay True on a pod that is not
/// being deleted (`stalePodDisruptionTimeout`).
pub const STALE_POD_DISRUPTION_TIMEOUT: Duration = Duration::from_secs(120);
/// The pod condition an eviction sets before deleting (`v1.DisruptionTarget`).
const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// The kubelet's reason for it, never stale (`v1.PodReasonTerminationByKubelet`).
const TERMINATION_BY_KUBELET: &str = "TerminationByKubelet";
/// The source of upstream's events (its recorder's component).
const COMPONENT: &str = "controllermanager";

/// What a sync needs.
struct Context {
    client: Client,
    budgets: Store<PodDisruptionBudget>,
    pods: Store<Pod>,
    replica_sets: Store<ReplicaSet>,
    deployments: Store<Deployment>,
    stateful_sets: Store<StatefulSet>,
    replication_controllers: Store<ReplicationController>,
    recorder: Recorder,
    clock: Clock,
}

/// The disruption controller.
pub struct DisruptionController {
    client: Client,
    budgets: SharedInformer<PodDisruptionBudget>,
    pods: SharedInformer<Pod>,
    replica_sets: SharedInformer<ReplicaSet>,
    deployments: SharedInformer<Deployment>,
    stateful_sets: SharedInformer<StatefulSet>,
    replication_controllers: SharedInformer<ReplicationController>,
    clock: Clock,
}

impl DisruptionController {
    /// A controller on `factory`'s shared informers, reading the time from `clock`.
    pub fn new(client: Client, factory: &InformerFactory, clock: Clock) -> Self {
        DisruptionController {
            client,
            budgets: factory.informer(),
            pods: factory.informer(),
            replica_sets: factory.informer(),
            deployments: factory.informer(),
            stateful_sets: factory.informer(),
            replication_controllers: factory.informer(),
            clock,
        }
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            budgets: self.budgets.store(),
            pods: self.pods.store(),
            replica_sets: self.replica_sets.store(),
            deployments: self.deployments.store(),
            stateful_sets: self.stateful_sets.store(),
            replication_controllers: self.replication_controllers.store(),
            recorder: Recorder::new(self.client.clone(), COMPONENT).with_clock(self.clock.clone()),
            clock: self.clock.clone(),
        });
        let budgets = self.budgets.store();
        // A pod's change queues the budgets that select it (upstream `getPdbForPod`); a
        // controller's change of scale reaches them through its pods' budgets on the next
        // pod change, and through this controller's own informers being read at sync.
        let for_pod = move |pod: &Pod| budgets_of(&budgets, pod);
        let controller = Controller::new("disruption", self.budgets)
            .workers(WORKERS)
            .watches(&self.pods, for_pod)
            .watches(&self.replica_sets, |_: &ReplicaSet| Vec::new())
            .watches(&self.deployments, |_: &Deployment| Vec::new())
            .watches(&self.stateful_sets, |_: &StatefulSet| Vec::new())
            .watches(
                &self.replication_controllers,
                |_: &ReplicationController| Vec::new(),
            );
        // Upstream's second queue: every pod change, for its budgets' count and a stale
        // `DisruptionTarget` condition.
        let pod_controller = Controller::new("disruption-pods", self.pods).workers(WORKERS);
        // On a fake clock, a move is when charged pods fall due and conditions go stale.
        let budget_moves = crate::clock::requeue_all_on_moves(
            self.clock.clone(),
            token.clone(),
            controller.queue(),
            ctx.budgets.clone(),
        );
        let (pod_queue, marked) = (pod_controller.queue(), ctx.pods.clone());
        let pod_moves = crate::clock::requeue_on_moves(self.clock, token.clone(), move |_| {
            for pod in marked.list() {
                if disruption_target(&pod).is_some() {
                    pod_queue.add(pod.key());
                }
            }
        });
        let pod_ctx = ctx.clone();
        let budgets = controller.run(
            move |key| sync(key, ctx.clone()),
            crate::error::error_policy,
            token.clone(),
        );
        let pods = pod_controller.run(
            move |key| sync_pod(key, pod_ctx.clone()),
            crate::error::error_policy,
            token,
        );
        tokio::join!(budgets, pods, budget_moves, pod_moves);
    }
}

/// The keys of the budgets in `pod`'s namespace whose selector matches it.
fn budgets_of(budgets: &Store<PodDisruptionBudget>, pod: &Pod) -> Vec<ObjectKey> {
    let namespace = pod.metadata.namespace.as_deref();
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    budgets
        .list()
        .iter()
        .filter(|budget| budget.metadata.namespace.as_deref() == namespace)
        .filter(|budget| selector_of(budget).is_some_and(|s| s.matches(&labels)))
        .map(|budget| budget.key())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The budget's pod selector: `None` selects nothing (a null selector), an empty one every
/// pod of the namespace (policy/v1).
fn selector_of(budget: &PodDisruptionBudget) -> Option<Selector> {
    let selector = budget.spec.as_ref()?.selector.as_ref()?;
    Selector::from_label_selector(selector).ok()
}

/// One budget's status (upstream `sync`/`trySync`, and `failSafe` when the expected count
/// cannot be computed).
async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(budget) = ctx.budgets.get(&key) else {
        return Ok(Action::await_change());
    };
    let now = ctx.clock.now();
    let pods = pods_of(&ctx, &budget);
    let reference = object_reference(&*budget, &ApiResource::of::<PodDisruptionBudget>());
    if pods.is_empty() {
        ctx.recorder
            .publish(
                &reference,
                EventType::Normal,
                "NoPods",
                "No matching pods found",
            )
            .await;
    }
    let status = match expected(&ctx, &budget, &pods) {
        Ok(Expected {
            expected_pods,
            desired_healthy,
            unmanaged,
        }) => {
            if unmanaged {
                let selector = budget
                    .spec
                    .as_ref()
                    .and_then(|s| s.selector.as_ref())
                    .and_then(|s| serde_json::to_value(s).ok())
                    .map_or_else(
                        || "nil".to_owned(),
                        |s| kubemock_apimachinery::go::label_selector_string(&s),
                    );
                let message = format!(
                    "Pods selected by this PodDisruptionBudget (selector: {selector}) were found to be \
                     unmanaged. As a result, the status of the PDB cannot be calculated correctly, \
                     which may result in undefined behavior. To account for these pods please set \
                     \".spec.minAvailable\" field of the PDB to an integer value."
                );
                ctx.recorder
                    .publish(&reference, EventType::Warning, "UnmanagedPods", &message)
                    .await;
            }
            let (disrupted, recheck, overdue) = disrupted_pods(&budget, &pods, now);
            for pod in overdue {
                let namespace = budget.metadata.namespace.clone().unwrap_or_default();
                // Upstream names the budget's namespace twice (`pdb.Namespace, pdb.Namespace`).
                let message = format!(
                    "Pod was expected by PDB {namespace}/{namespace} to be deleted but it wasn't"
                );
                let pod = object_reference(&*pod, &ApiResource::of::<Pod>());
                ctx.recorder
                    .publish(&pod, EventType::Warning, "NotDeleted", &message)
                    .await;
            }
            let current_healthy = healthy(&pods, &disrupted, now);
            let allowed = if expected_pods <= 0 {
                0
            } else {
                (current_healthy - desired_healthy).max(0)
            };
            let mut status = PodDisruptionBudgetStatus {
                current_healthy,
                desired_healthy,
                expected_pods,
                disruptions_allowed: allowed,
                disrupted_pods: (!disrupted.is_empty()).then_some(disrupted),
                observed_generation: budget.metadata.generation,
                conditions: budget.status.as_ref().and_then(|s| s.conditions.clone()),
            };
            let (reason, value) = if allowed > 0 {
                ("SufficientPods", "True")
            } else {
                ("InsufficientPods", "False")
            };
            set_condition(&mut status, value, reason, "", now);
            write(&ctx, &budget, status).await?;
            return Ok(match recheck {
                Some(at) => Action::requeue_after(kubemock_apimachinery::time::until(now, at)),
                None => Action::await_change(),
            });
        }
        Err(message) => {
            ctx.recorder
                .publish(
                    &reference,
                    EventType::Warning,
                    "CalculateExpectedPodCountFailed",
                    &format!("Failed to calculate the number of expected pods: {message}"),
                )
                .await;
            let mut status = budget.status.clone().unwrap_or_default();
            status.disruptions_allowed = 0;
            set_condition(&mut status, "False", "SyncFailed", &message, now);
            status
        }
    };
    write(&ctx, &budget, status).await?;
    Ok(Action::await_change())
}

/// Writes `status` unless the budget has it already.
async fn write(
    ctx: &Context,
    budget: &PodDisruptionBudget,
    status: PodDisruptionBudgetStatus,
) -> Result<()> {
    if budget.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let mut updated = budget.clone();
    updated.status = Some(status);
    let namespace = budget.metadata.namespace.as_deref().unwrap_or_default();
    let name = budget.metadata.name.as_deref().unwrap_or_default();
    Api::<PodDisruptionBudget>::namespaced(ctx.client.clone(), namespace)
        .replace_status(name, &PostParams::default(), &updated)
        .await?;
    Ok(())
}

/// `apimeta.SetStatusCondition` of `DisruptionAllowed`: the transition time changes only
/// with the status; the condition's observed generation is the status's.
fn set_condition(
    status: &mut PodDisruptionBudgetStatus,
    value: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    let generation = status.observed_generation;
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    match conditions
        .iter_mut()
        .find(|c| c.type_ == DISRUPTION_ALLOWED)
    {
        Some(condition) => {
            if condition.status != value {
                condition.status = value.to_owned();
                condition.last_transition_time = Time(now);
            }
            condition.reason = reason.to_owned();
            condition.message = message.to_owned();
            condition.observed_generation = generation;
        }
        None => conditions.push(Condition {
            type_: DISRUPTION_ALLOWED.to_owned(),
            status: value.to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            observed_generation: generation,
            last_transition_time: Time(now),
        }),
    }
}

/// The pods of the budget's namespace its selector matches (upstream `getPodsForPdb`).
fn pods_of(ctx: &Context, budget: &PodDisruptionBudget) -> Vec<Arc<Pod>> {
    let Some(selector) = selector_of(budget) else {
        return Vec::new();
    };
    let namespace = budget.metadata.namespace.as_deref();
    ctx.pods
        .list()
        .into_iter()
        .filter(|pod| pod.metadata.namespace.as_deref() == namespace)
        .filter(|pod| selector.matches(&pod.metadata.labels.clone().unwrap_or_default()))
        .collect()
}

/// What upstream's `getExpectedPodCount` computes.
struct Expected {
    /// `expectedPods`.
    expected_pods: i32,
    /// `desiredHealthy`.
    desired_healthy: i32,
    /// Whether pods without a controller were left out of a scale.
    unmanaged: bool,
}

/// The budget's [`Expected`] counts as upstream's `getExpectedPodCount`; the message of
/// `failSafe` when a controller or a percentage cannot be read.
fn expected(
    ctx: &Context,
    budget: &PodDisruptionBudget,
    pods: &[Arc<Pod>],
) -> std::result::Result<Expected, String> {
    let spec = budget.spec.clone().unwrap_or_default();
    let scaled = |value: &k8s_openapi::apimachinery::pkg::util::intstr::IntOrString, total: i32| {
        let value = intstr::IntOrString::from(value.clone());
        intstr::get_scaled_value_from_int_or_percent(&value, i64::from(total), true)
            .map(|n| i32::try_from(n).unwrap_or(i32::MAX))
            .map_err(|err| err.to_string())
    };
    if let Some(max_unavailable) = &spec.max_unavailable {
        let (expected, unmanaged) = expected_scale(ctx, pods)?;
        let desired = (expected - scaled(max_unavailable, expected)?).max(0);
        return Ok(Expected {
            expected_pods: expected,
            desired_healthy: desired,
            unmanaged,
        });
    }
    match &spec.min_available {
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(min)) => Ok(Expected {
            expected_pods: i32::try_from(pods.len()).unwrap_or(i32::MAX),
            desired_healthy: *min,
            unmanaged: false,
        }),
        Some(percent) => {
            let (expected, unmanaged) = expected_scale(ctx, pods)?;
            Ok(Expected {
                expected_pods: expected,
                desired_healthy: scaled(percent, expected)?,
                unmanaged,
            })
        }
        None => Ok(Expected {
            expected_pods: 0,
            desired_healthy: 0,
            unmanaged: false,
        }),
    }
}

/// The summed scale of the pods' controllers (upstream `getExpectedScale` and its finders:
/// ReplicationControllers, ReplicaSets not owned by a Deployment, Deployments through their
/// ReplicaSets, StatefulSets). Pods without a controller are left out, as upstream leaves them
/// out (and reported: the second value); a controller that cannot be found fails the sync.
fn expected_scale(ctx: &Context, pods: &[Arc<Pod>]) -> std::result::Result<(i32, bool), String> {
    /// The default `replicas` of these kinds.
    const DEFAULT_REPLICAS: i32 = 1;
    let mut owners_seen = BTreeSet::new();
    // By the controller that scales: a Deployment's ReplicaSets all count as it, once.
    let mut scales: BTreeMap<String, i32> = BTreeMap::new();
    let mut unmanaged = false;
    for pod in pods {
        let Some(owner) = controller_of(&pod.metadata) else {
            unmanaged = true;
            continue;
        };
        if !owners_seen.insert(owner.uid.clone()) {
            continue;
        }
        let namespace = pod.metadata.namespace.as_deref();
        let key = ObjectKey::new(namespace, &owner.name);
        let same = |uid: Option<&str>, want: &str| uid == Some(want);
        let found: Option<(String, Option<i32>)> =
            match (owner.api_version.as_str(), owner.kind.as_str()) {
                ("v1", "ReplicationController") => ctx
                    .replication_controllers
                    .get(&key)
                    .filter(|rc| same(rc.metadata.uid.as_deref(), &owner.uid))
                    .map(|rc| (owner.uid.clone(), rc.spec.as_ref().and_then(|s| s.replicas))),
                ("apps/v1", "StatefulSet") => ctx
                    .stateful_sets
                    .get(&key)
                    .filter(|set| same(set.metadata.uid.as_deref(), &owner.uid))
                    .map(|set| {
                        (
                            owner.uid.clone(),
                            set.spec.as_ref().and_then(|s| s.replicas),
                        )
                    }),
                ("apps/v1", "ReplicaSet") => ctx
                    .replica_sets
                    .get(&key)
                    .filter(|set| same(set.metadata.uid.as_deref(), &owner.uid))
                    .and_then(|set| match controller_of(&set.metadata) {
                        Some(parent) if parent.kind == "Deployment" => ctx
                            .deployments
                            .get(&ObjectKey::new(namespace, &parent.name))
                            .filter(|d| same(d.metadata.uid.as_deref(), &parent.uid))
                            .map(|d| {
                                (parent.uid.clone(), d.spec.as_ref().and_then(|s| s.replicas))
                            }),
                        _ => Some((
                            owner.uid.clone(),
                            set.spec.as_ref().and_then(|s| s.replicas),
                        )),
                    }),
                _ => None,
            };
        let Some((uid, replicas)) = found else {
            return Err(format!(
                "found no controllers for pod \"{}\"",
                pod.metadata.name.as_deref().unwrap_or_default()
            ));
        };
        scales.insert(uid, replicas.unwrap_or(DEFAULT_REPLICAS));
    }
    Ok((scales.values().sum(), unmanaged))
}

/// What upstream's `buildDisruptedPodMap` finds: the charged pods still there and not yet
/// overdue, when the earliest of them falls due, and the overdue ones (each a `NotDeleted`
/// event).
type Disrupted = (BTreeMap<String, Time>, Option<Timestamp>, Vec<Arc<Pod>>);

/// Upstream `buildDisruptedPodMap` ([`Disrupted`]).
fn disrupted_pods(budget: &PodDisruptionBudget, pods: &[Arc<Pod>], now: Timestamp) -> Disrupted {
    let mut kept = BTreeMap::new();
    let mut recheck: Option<Timestamp> = None;
    let mut overdue = Vec::new();
    let Some(charged) = budget
        .status
        .as_ref()
        .and_then(|s| s.disrupted_pods.as_ref())
    else {
        return (kept, recheck, overdue);
    };
    let timeout = jiff::SignedDuration::try_from(DELETION_TIMEOUT).unwrap_or_default();
    for pod in pods {
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = pod.metadata.name.clone().unwrap_or_default();
        let Some(at) = charged.get(&name) else {
            continue;
        };
        let due = kubemock_apimachinery::time::shift(at.0, timeout);
        if due < now {
            tracing::info!(pod = %name, "pod was expected to be deleted but it wasn't");
            overdue.push(pod.clone());
            continue;
        }
        recheck = Some(recheck.map_or(due, |r| r.min(due)));
        kept.insert(name, at.clone());
    }
    (kept, recheck, overdue)
}

/// One pod (upstream's `addPod`/`updatePod` and `syncStalePodDisruption`): the
/// `MultiplePodDisruptionBudgets` warning when several budgets select it, and its
/// `DisruptionTarget` condition reset to False once stale.
async fn sync_pod(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(pod) = ctx.pods.get(&key) else {
        return Ok(Action::await_change());
    };
    let budgets = budgets_of(&ctx.budgets, &pod);
    if budgets.len() > 1 {
        let message = format!(
            "Pod \"{}\"/\"{}\" matches multiple PodDisruptionBudgets.  Chose \"{}\" arbitrarily.",
            key.namespace.as_deref().unwrap_or_default(),
            key.name,
            budgets[0].name
        );
        let reference = object_reference(&*pod, &ApiResource::of::<Pod>());
        ctx.recorder
            .publish(
                &reference,
                EventType::Warning,
                "MultiplePodDisruptionBudgets",
                &message,
            )
            .await;
    }
    let Some(since) = disruption_target(&pod) else {
        return Ok(Action::await_change());
    };
    let now = ctx.clock.now();
    let timeout = jiff::SignedDuration::try_from(STALE_POD_DISRUPTION_TIMEOUT).unwrap_or_default();
    let left =
        kubemock_apimachinery::time::until(now, kubemock_apimachinery::time::shift(since, timeout));
    if !left.is_zero() {
        return Ok(Action::requeue_after(left));
    }
    // `UpdatePodCondition`: the condition replaced whole, its transition now.
    let mut updated = (*pod).clone();
    let status = updated.status.get_or_insert_with(Default::default);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let reset = PodCondition {
        type_: DISRUPTION_TARGET.to_owned(),
        status: "False".to_owned(),
        last_transition_time: Some(Time(now)),
        ..PodCondition::default()
    };
    match conditions.iter_mut().find(|c| c.type_ == DISRUPTION_TARGET) {
        Some(condition) => *condition = reset,
        None => conditions.push(reset),
    }
    let namespace = key.namespace.as_deref().unwrap_or_default();
    Api::<Pod>::namespaced(ctx.client.clone(), namespace)
        .replace_status(&key.name, &PostParams::default(), &updated)
        .await?;
    tracing::debug!(pod = %key.name, "reset stale DisruptionTarget condition to False");
    Ok(Action::await_change())
}

/// When a pod's `DisruptionTarget` condition turned True, if it may go stale (upstream's
/// `nonTerminatingPodHasStaleDisruptionCondition`): not for a pod being deleted or in a
/// terminal phase, nor for the kubelet's own condition.
fn disruption_target(pod: &Pod) -> Option<Timestamp> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = pod.status.as_ref()?;
    if matches!(status.phase.as_deref(), Some("Succeeded" | "Failed")) {
        return None;
    }
    let condition = status
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == DISRUPTION_TARGET)?;
    if condition.status != "True" || condition.reason.as_deref() == Some(TERMINATION_BY_KUBELET) {
        return None;
    }
    // A condition without a transition time is stale at once (Go's zero time).
    Some(
        condition
            .last_transition_time
            .as_ref()
            .map_or(Timestamp::MIN, |t| t.0),
    )
}

/// Upstream `countHealthyPods`: ready pods not going away and not recently disrupted.
fn healthy(pods: &[Arc<Pod>], disrupted: &BTreeMap<String, Time>, now: Timestamp) -> i32 {
    let timeout = jiff::SignedDuration::try_from(DELETION_TIMEOUT).unwrap_or_default();
    let count = pods
        .iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            disrupted
                .get(name)
                .is_none_or(|at| kubemock_apimachinery::time::shift(at.0, timeout) <= now)
        })
        .filter(|pod| is_ready(pod))
        .count();
    i32::try_from(count).unwrap_or(i32::MAX)
}

/// Whether the pod's `Ready` condition is `True` (`podutil.IsPodReady`).
fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}
