//! The node lifecycle controller (kube-controller-manager's `node-lifecycle-controller`,
//! upstream `pkg/controller/nodelifecycle/node_lifecycle_controller.go`): a node whose kubelet
//! has neither renewed its Lease nor posted a Ready heartbeat for [`NODE_MONITOR_GRACE_PERIOD`]
//! is marked Unknown ("Kubelet stopped posting node status."), its pods' Ready condition is
//! set False, and it is tainted `node.kubernetes.io/unreachable` (`not-ready` when its kubelet
//! reports Ready False) NoSchedule and NoExecute, so the scheduler avoids it and the taint
//! eviction controller ([`crate::tainteviction`]) deletes its pods after their toleration
//! seconds. When the node is Ready again its taints go.
//!
//! Time comes from the manager's [`Clock`]: each node is looked at every
//! [`NODE_MONITOR_PERIOD`] (real time, for the system clock), and again, all of them, each
//! time a fake clock moves, after [`CLOCK_MOVE_SETTLE`] so the simulated kubelets (on the
//! same clock) have renewed their Leases at the new time first.
//!
//! Not done (docs/controllers.md): the NoExecute taints are not rate-limited per zone
//! (`--node-eviction-rate` 0.1/s, `--secondary-node-eviction-rate`): a partially disrupted
//! zone of more than 50 nodes is tainted at the normal pace; node labels are not reconciled
//! (`reconcileNodeLabels`).

pub mod health;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubemock_client::events::{EventType, Recorder, object_reference};
use kubemock_client::{
    Action, Api, ApiResource, Client, Controller, InformerFactory, ObjectKey, PostParams, Resource,
    SharedInformer, Store,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::error::Result;
use crate::kubelet::NODE_LEASE_NAMESPACE;
use health::NodeHealth;

/// How long a node's kubelet may stay silent (no Lease renewal, no Ready heartbeat) before
/// its node is Unknown: kube-controller-manager's `--node-monitor-grace-period` default in
/// 1.32 (`pkg/controller/nodelifecycle/config/v1alpha1/defaults.go`: 50 s, above HTTP/2's
/// ping and read-idle timeouts together).
pub const NODE_MONITOR_GRACE_PERIOD: Duration = Duration::from_secs(50);
/// The same for a node whose kubelet never posted a status, counted from its creation
/// (`--node-startup-grace-period` default).
pub const NODE_STARTUP_GRACE_PERIOD: Duration = Duration::from_secs(60);
/// How often each node's health is checked (`--node-monitor-period` default,
/// `cloud-provider/config/v1alpha1/defaults.go`): a real-time period, which a fake clock's
/// moves add to.
pub const NODE_MONITOR_PERIOD: Duration = Duration::from_secs(5);
/// Real time between a fake clock's move and the look at every node it causes: the
/// simulated kubelets renew their Leases at the new time as soon as it moves, and a node
/// judged before that renewal reached this controller's informer would be marked Unknown for
/// a moment (upstream's clock never jumps, so it has no such case).
pub const CLOCK_MOVE_SETTLE: Duration = Duration::from_millis(1000);
/// Concurrent node syncs (upstream `nodeUpdateWorkerSize` is 8; one keeps zone decisions
/// serial here, and nodes are few).
const WORKERS: usize = 1;

/// What a sync reads and writes through.
struct Context {
    client: Client,
    nodes: Store<Node>,
    leases: Store<Lease>,
    pods: Store<Pod>,
    recorder: Recorder,
    clock: Clock,
    /// Per node name: its observed health, and its pods already looked at in its current
    /// not-Ready spell, by uid, with the resourceVersion they were left at (so each pod is
    /// marked once, and again only once it changed, as upstream marks them on the node's
    /// transition and on each change of a pod, `processPod`). Written by the sync worker.
    health: Mutex<HashMap<String, (NodeHealth, Marked)>>,
    /// Whether every zone was fully disrupted at the last sync: leaving that state restarts
    /// every node's grace period (upstream `handleDisruption`). Written by the sync worker.
    all_disrupted: Mutex<bool>,
    /// The zones' states, made from the node cache of the generation they are kept with:
    /// every sync needs them, and making them reads every node, so a sync per node made a
    /// pass over all nodes quadratic (a thousand nodes took a million reads every period).
    zones: Mutex<Option<(u64, Arc<Zones>)>>,
}

/// The pods of a node looked at in its not-Ready spell: uid to the resourceVersion it was
/// left at (a pod written since, its status set Ready again, is looked at again).
type Marked = HashMap<String, String>;

/// Each zone's state and its number of nodes ([`health::zones`]).
type Zones = std::collections::BTreeMap<String, (health::ZoneState, usize)>;

impl Context {
    /// The zones as the node cache has them now: kept until the cache changes.
    fn zones(&self) -> Arc<Zones> {
        let mut cached = self.zones.lock();
        let generation = self.nodes.generation();
        if let Some((at, zones)) = cached.as_ref()
            && *at == generation
        {
            return zones.clone();
        }
        let (nodes, generation) = self.nodes.list_with_generation();
        let zones = Arc::new(health::zones(
            &nodes.iter().map(AsRef::as_ref).collect::<Vec<_>>(),
        ));
        *cached = Some((generation, zones.clone()));
        zones
    }
}

/// The node lifecycle controller.
pub struct NodeLifecycleController {
    client: Client,
    nodes: SharedInformer<Node>,
    leases: SharedInformer<Lease>,
    pods: SharedInformer<Pod>,
    clock: Clock,
}

impl NodeLifecycleController {
    /// A controller on `factory`'s shared Node, Lease and Pod informers, reading the time
    /// from `clock`.
    pub fn new(client: Client, factory: &InformerFactory, clock: Clock) -> Self {
        NodeLifecycleController {
            client,
            nodes: factory.informer(),
            leases: factory.informer(),
            pods: factory.informer(),
            clock,
        }
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            nodes: self.nodes.store(),
            leases: self.leases.store(),
            pods: self.pods.store(),
            // Upstream's recorder: `eventBroadcaster.NewRecorder(..., "node-controller")`.
            recorder: Recorder::new(self.client.clone(), "node-controller")
                .with_clock(self.clock.clone()),
            clock: self.clock.clone(),
            health: Mutex::new(HashMap::new()),
            all_disrupted: Mutex::new(false),
            zones: Mutex::new(None),
        });
        crate::podindex::index_by_node(&ctx.pods);
        let pod_nodes = ctx.nodes.clone();
        let controller = Controller::new("node-lifecycle", self.nodes)
            .workers(WORKERS)
            .watches(&self.leases, |lease: &Lease| {
                if lease.metadata.namespace.as_deref() == Some(NODE_LEASE_NAMESPACE) {
                    lease
                        .metadata
                        .name
                        .iter()
                        .map(|n| ObjectKey::new(None, n))
                        .collect()
                } else {
                    Vec::new()
                }
            })
            .watches(&self.pods, move |pod: &Pod| {
                // A pod concerns its node's sync only while that node is not Ready: then the
                // pod is marked not Ready too (upstream's `podUpdated`/`processPod`, which
                // look at a pod only when its node is not Ready). Queuing the node on every
                // pod change made a sync, and a pass over the zones, per pod write.
                pod.spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .filter(|name| {
                        pod_nodes.get_by(None, name).is_some_and(
                            |node| matches!(health::ready_status(&node), Some(s) if s != "True"),
                        )
                    })
                    .map(|n| ObjectKey::new(None, n))
                    .into_iter()
                    .collect()
            });
        let queue = controller.queue();
        let nodes = ctx.nodes.clone();
        let clock_moves = crate::clock::requeue_on_moves(self.clock.clone(), token.clone(), |_| {
            for node in nodes.list() {
                queue.add_after(node.key(), CLOCK_MOVE_SETTLE);
            }
        });
        let run = controller.run(
            move |key| sync(key, ctx.clone()),
            crate::error::error_policy,
            token.clone(),
        );
        tokio::join!(run, clock_moves);
    }
}

/// One node: its health observed, its conditions Unknown when silent, its taints made what
/// its conditions call for, its pods marked not Ready when it is not. Then again in
/// [`NODE_MONITOR_PERIOD`].
async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(node) = ctx.nodes.get(&key) else {
        ctx.health.lock().remove(&key.name);
        return Ok(Action::AwaitChange);
    };
    let now = ctx.clock.now();
    let lease = ctx
        .leases
        .get(&ObjectKey::new(Some(NODE_LEASE_NAMESPACE), &key.name));
    let zones = ctx.zones();
    let all_disrupted = health::all_disrupted(&zones);
    let leaving_disruption = {
        let mut was = ctx.all_disrupted.lock();
        let leaving = *was && !all_disrupted;
        *was = all_disrupted;
        leaving
    };
    let (health, marked, previously_ready) = {
        let mut map = ctx.health.lock();
        if leaving_disruption {
            // Every node gets a new grace period (upstream, on exiting disruption mode).
            for (health, _) in map.values_mut() {
                health.probe = now;
            }
        }
        let previous = map.get(&key.name).cloned();
        let previously_ready = previous
            .as_ref()
            .and_then(|(h, _)| h.ready.as_ref())
            .is_some_and(|c| c.status == "True");
        let health = health::observe(
            previous.as_ref().map(|(h, _)| h),
            &node,
            lease.as_deref(),
            now,
        );
        let marked = previous.map(|(_, m)| m).unwrap_or_default();
        map.insert(key.name.clone(), (health.clone(), marked.clone()));
        (health, marked, previously_ready)
    };
    let grace = if health.ready.is_some() {
        NODE_MONITOR_GRACE_PERIOD
    } else {
        NODE_STARTUP_GRACE_PERIOD
    };
    let mut node = (*node).clone();
    if health::is_silent(&health, grace, now)
        && let Some(conditions) = health::silent_conditions(&node, now)
    {
        node.status.get_or_insert_with(Default::default).conditions = Some(conditions);
        let api: Api<Node> = Api::all(ctx.client.clone());
        node = match api
            .replace_status(&key.name, &PostParams::default(), &node)
            .await
        {
            Ok(written) => written,
            Err(err) if err.is_not_found() => return Ok(Action::AwaitChange),
            Err(err) => return Err(err.into()),
        };
        // What the controller last saw, for a run that wants to know why: its informer's
        // Lease (a lagging watch shows an old renewal) and its last probe.
        tracing::info!(
            node = %key.name,
            probe = %health.probe,
            lease_renewed = ?health.lease.as_ref().map(|renewed| renewed.0),
            "node stopped posting status; marked Unknown"
        );
    }
    let ready = health::ready_status(&node).map(str::to_owned);
    if previously_ready && ready.as_deref() != Some("True") {
        let reference = object_reference(&node, &ApiResource::of::<Node>());
        ctx.recorder
            .publish(
                &reference,
                EventType::Normal,
                "NodeNotReady",
                &format!("Node {} status is now: NodeNotReady", key.name),
            )
            .await;
    }
    retaint(&ctx, &node, ready.as_deref(), &zones, all_disrupted, now).await?;
    mark_pods(&ctx, &key.name, ready.as_deref(), marked).await?;
    Ok(Action::RequeueAfter(NODE_MONITOR_PERIOD))
}

/// Makes the node's taints what its conditions call for (upstream
/// `doNoScheduleTaintingPass` and `processTaintBaseEviction`): NoSchedule taints always, the
/// NoExecute not-ready/unreachable taint where the zones allow it (and off every node when
/// every zone is fully disrupted).
async fn retaint(
    ctx: &Context,
    node: &Node,
    ready: Option<&str>,
    zones: &Zones,
    all_disrupted: bool,
    now: jiff::Timestamp,
) -> Result<()> {
    let wanted = health::condition_taints(node);
    let has = |key: &str| {
        node.spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .is_some_and(|t| t.iter().any(|t| t.effect == "NoExecute" && t.key == key))
    };
    let no_execute = match health::no_execute_taint(ready) {
        _ if all_disrupted => None,
        // Already tainted for the other status: swapped at once, whatever the zone.
        Some(key) if has(health::NOT_READY) || has(health::UNREACHABLE) => Some(key),
        Some(key) if health::may_taint(zones, &health::zone_key(node)) => Some(key),
        Some(_) => None,
        None => None,
    };
    let Some(taints) = health::retainted(node, &wanted, no_execute, now) else {
        return Ok(());
    };
    let mut updated = node.clone();
    updated.spec.get_or_insert_with(Default::default).taints =
        (!taints.is_empty()).then_some(taints);
    let name = node.metadata.name.clone().unwrap_or_default();
    let api: Api<Node> = Api::all(ctx.client.clone());
    match api.replace(&name, &PostParams::default(), &updated).await {
        Ok(_) => {
            tracing::debug!(node = %name, ?no_execute, "node taints updated");
            Ok(())
        }
        Err(err) if err.is_not_found() => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// Sets the Ready condition of the node's pods False while the node is not Ready, each pod
/// once per not-Ready spell (upstream `MarkPodsNotReady`, with its `NodeNotReady` event).
/// `marked`: the pods already looked at in this spell, unchanged since.
async fn mark_pods(
    ctx: &Context,
    node_name: &str,
    ready: Option<&str>,
    mut marked: Marked,
) -> Result<()> {
    if ready == Some("True") || ready.is_none() {
        // Ready (or not yet reporting): a later spell starts afresh.
        if !marked.is_empty() {
            marked.clear();
            store_marked(ctx, node_name, marked);
        }
        return Ok(());
    }
    let pods: Vec<Arc<Pod>> = crate::podindex::on_node(&ctx.pods, node_name);
    let now = ctx.clock.now();
    for pod in pods {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let mut version = pod.metadata.resource_version.clone().unwrap_or_default();
        if marked.get(&uid) == Some(&version) {
            continue;
        }
        let mut updated = (*pod).clone();
        let mut changed = false;
        if let Some(condition) = updated
            .status
            .as_mut()
            .and_then(|s| s.conditions.as_mut())
            .and_then(|c| c.iter_mut().find(|c| c.type_ == "Ready"))
            && condition.status != "False"
        {
            condition.status = "False".to_owned();
            condition.last_transition_time = Some(Time(now));
            changed = true;
        }
        if changed {
            let namespace = pod.metadata.namespace.clone().unwrap_or_default();
            let name = pod.metadata.name.clone().unwrap_or_default();
            let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
            match api
                .replace_status(&name, &PostParams::default(), &updated)
                .await
            {
                Ok(written) => {
                    version = written
                        .metadata
                        .resource_version
                        .clone()
                        .unwrap_or_default();
                    let reference = object_reference(&written, &ApiResource::of::<Pod>());
                    ctx.recorder
                        .publish(
                            &reference,
                            EventType::Warning,
                            "NodeNotReady",
                            "Node is not ready",
                        )
                        .await;
                }
                Err(err) if err.is_not_found() => {}
                Err(err) => {
                    store_marked(ctx, node_name, marked);
                    return Err(err.into());
                }
            }
        }
        marked.insert(uid, version);
    }
    store_marked(ctx, node_name, marked);
    Ok(())
}

/// Records the pods marked not Ready in the node's current spell.
fn store_marked(ctx: &Context, node_name: &str, marked: Marked) {
    if let Some((_, current)) = ctx.health.lock().get_mut(node_name) {
        *current = marked;
    }
}
