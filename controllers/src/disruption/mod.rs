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
//! Not done (docs/controllers.md): the events upstream records (`NoPods`, `UnmanagedPods`, ...), the reset
//! of stale `DisruptionTarget` pod conditions, and controllers other than ReplicaSets,
//! Deployments, StatefulSets and ReplicationControllers for percentages and `maxUnavailable`
//! (upstream also asks any `scale` subresource).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::chrono::{DateTime, Utc};
use kubemock_apimachinery::intstr;
use kubemock_client::controller::controller_of;
use kubemock_client::{
    Action, Api, Client, Controller, InformerFactory, ObjectKey, PostParams, Resource, Selector,
    SharedInformer, Store,
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

/// What a sync needs.
struct Context {
    client: Client,
    budgets: Store<PodDisruptionBudget>,
    pods: Store<Pod>,
    replica_sets: Store<ReplicaSet>,
    deployments: Store<Deployment>,
    stateful_sets: Store<StatefulSet>,
    replication_controllers: Store<ReplicationController>,
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
            client: self.client,
            budgets: self.budgets.store(),
            pods: self.pods.store(),
            replica_sets: self.replica_sets.store(),
            deployments: self.deployments.store(),
            stateful_sets: self.stateful_sets.store(),
            replication_controllers: self.replication_controllers.store(),
            clock: self.clock,
        });
        let budgets = self.budgets.store();
        // A pod's change queues the budgets that select it (upstream `getPdbForPod`); a
        // controller's change of scale reaches them through its pods' budgets on the next
        // pod change, and through this controller's own informers being read at sync.
        let for_pod = move |pod: &Pod| budgets_of(&budgets, pod);
        Controller::new("disruption", self.budgets)
            .workers(WORKERS)
            .watches(&self.pods, for_pod)
            .watches(&self.replica_sets, |_: &ReplicaSet| Vec::new())
            .watches(&self.deployments, |_: &Deployment| Vec::new())
            .watches(&self.stateful_sets, |_: &StatefulSet| Vec::new())
            .watches(
                &self.replication_controllers,
                |_: &ReplicationController| Vec::new(),
            )
            .run(
                move |key| sync(key, ctx.clone()),
                crate::error::error_policy,
                token,
            )
            .await;
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
    let status = match expected(&ctx, &budget, &pods) {
        Ok((expected_pods, desired_healthy)) => {
            let (disrupted, recheck) = disrupted_pods(&budget, &pods, now);
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
                Some(at) => Action::requeue_after((at - now).to_std().unwrap_or_default()),
                None => Action::await_change(),
            });
        }
        Err(message) => {
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
    now: DateTime<Utc>,
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

/// (`expectedPods`, `desiredHealthy`) as upstream's `getExpectedPodCount`; the message of
/// `failSafe` when a controller or a percentage cannot be read.
fn expected(
    ctx: &Context,
    budget: &PodDisruptionBudget,
    pods: &[Arc<Pod>],
) -> std::result::Result<(i32, i32), String> {
    let spec = budget.spec.clone().unwrap_or_default();
    let scaled = |value: &k8s_openapi::apimachinery::pkg::util::intstr::IntOrString, total: i32| {
        let value = intstr::IntOrString::from(value.clone());
        intstr::get_scaled_value_from_int_or_percent(&value, i64::from(total), true)
            .map(|n| i32::try_from(n).unwrap_or(i32::MAX))
            .map_err(|err| err.to_string())
    };
    if let Some(max_unavailable) = &spec.max_unavailable {
        let expected = expected_scale(ctx, pods)?;
        let desired = (expected - scaled(max_unavailable, expected)?).max(0);
        return Ok((expected, desired));
    }
    match &spec.min_available {
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(min)) => {
            Ok((i32::try_from(pods.len()).unwrap_or(i32::MAX), *min))
        }
        Some(percent) => {
            let expected = expected_scale(ctx, pods)?;
            Ok((expected, scaled(percent, expected)?))
        }
        None => Ok((0, 0)),
    }
}

/// The summed scale of the pods' controllers (upstream `getExpectedScale` and its finders:
/// ReplicationControllers, ReplicaSets not owned by a Deployment, Deployments through their
/// ReplicaSets, StatefulSets). Pods without a controller are left out, as upstream leaves them
/// out; a controller that cannot be found fails the sync.
fn expected_scale(ctx: &Context, pods: &[Arc<Pod>]) -> std::result::Result<i32, String> {
    /// The default `replicas` of these kinds.
    const DEFAULT_REPLICAS: i32 = 1;
    let mut owners_seen = BTreeSet::new();
    // By the controller that scales: a Deployment's ReplicaSets all count as it, once.
    let mut scales: BTreeMap<String, i32> = BTreeMap::new();
    for pod in pods {
        let Some(owner) = controller_of(&pod.metadata) else {
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
    Ok(scales.values().sum())
}

/// Upstream `buildDisruptedPodMap`: the charged pods still there and not yet overdue, and
/// when the earliest of them falls due.
fn disrupted_pods(
    budget: &PodDisruptionBudget,
    pods: &[Arc<Pod>],
    now: DateTime<Utc>,
) -> (BTreeMap<String, Time>, Option<DateTime<Utc>>) {
    let mut kept = BTreeMap::new();
    let mut recheck: Option<DateTime<Utc>> = None;
    let Some(charged) = budget
        .status
        .as_ref()
        .and_then(|s| s.disrupted_pods.as_ref())
    else {
        return (kept, recheck);
    };
    let timeout = k8s_openapi::chrono::Duration::from_std(DELETION_TIMEOUT).unwrap_or_default();
    for pod in pods {
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = pod.metadata.name.clone().unwrap_or_default();
        let Some(at) = charged.get(&name) else {
            continue;
        };
        let due = at.0 + timeout;
        if due < now {
            tracing::info!(pod = %name, "pod was expected to be deleted but it wasn't");
            continue;
        }
        recheck = Some(recheck.map_or(due, |r| r.min(due)));
        kept.insert(name, at.clone());
    }
    (kept, recheck)
}

/// Upstream `countHealthyPods`: ready pods not going away and not recently disrupted.
fn healthy(pods: &[Arc<Pod>], disrupted: &BTreeMap<String, Time>, now: DateTime<Utc>) -> i32 {
    let timeout = k8s_openapi::chrono::Duration::from_std(DELETION_TIMEOUT).unwrap_or_default();
    let count = pods
        .iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            disrupted.get(name).is_none_or(|at| at.0 + timeout <= now)
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
