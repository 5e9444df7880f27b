//! The scheduler (issue 6 item 6): binds pending pods (no nodeName, `default-scheduler`) to
//! Ready, schedulable nodes that fit them ([`fit`]), spreading load; a pod that fits nowhere
//! gets `PodScheduled=False` with reason `Unschedulable` and a `FailedScheduling` event, and
//! is tried again whenever nodes change or a pod that held room on a node goes away or
//! finishes.
//! Decisions are serialised and a pod is counted on its node from the moment it is chosen
//! until the informer shows it there (kube-scheduler's "assumed" pods), so two pods never take
//! the same room; binds run in parallel. A pod's claims are bound first ([`volumes`]): it
//! waits, counted on its node, until they are.
//!
//! What is in use on each node is kept by [`usage`] from the pod informer's events, so that a
//! decision costs O(nodes), not O(pods); the pending pods are an index of the pod cache, so
//! that a node's or a claim's change queues only them, and a pod that frees room queues only
//! the pods found unschedulable since the last one ([`usage::NodeUsage::remove`]). Assumed pods that
//! the cache lost unseen are swept every [`SWEEP_PERIOD`], not at each decision: a sweep reads
//! every assumed pod, and at 100,000 pods doing it per decision starved the pod informer's
//! handlers of the usage lock (issue 23). The nodes a decision reads are a snapshot sorted by
//! name with their allocatable resources parsed ([`fit::NodeInfo`]), remade only when a node
//! changes, and a decision among more than 100 nodes looks at only as many as kube-scheduler
//! would ([`fit::feasible_nodes_to_find`]), from where the last one stopped.

pub mod fit;
pub mod usage;
pub mod volumes;

use crate::clock::Clock;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{
    Node, PersistentVolume, PersistentVolumeClaim, Pod, PodCondition,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubemock_client::events::{EventType, Recorder, object_reference};
use kubemock_client::informer::{HandlerRegistration, Handlers};
use kubemock_client::request::RequestBuilder;
use kubemock_client::{
    Action, Api, ApiResource, Client, Controller, InformerFactory, ObjectKey, PostParams, Resource,
    SharedInformer, Store, WorkQueue,
};
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::error::Result;

/// Concurrent scheduling workers (their binds overlap; their decisions do not).
const WORKERS: usize = 8;

/// The scheduler name pods ask for by default.
pub const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// The pod cache's index of the pods this scheduler is to place ([`pending`]), under the one
/// value [`PENDING`].
const PENDING_INDEX: &str = "scheduler-pending";
const PENDING: &str = "pending";

/// How long the workers wait at start for the usage to take in the pods already cached.
const USAGE_CATCH_UP: Duration = Duration::from_secs(10);

/// How often assumed and waiting pods that the cache no longer has are dropped (upstream's
/// `cleanAssumedPeriod`, `pkg/scheduler/scheduler.go`, is one second too).
pub const SWEEP_PERIOD: Duration = Duration::from_secs(1);

struct Context {
    client: Client,
    /// The scheduler's work queue: pods to decide on.
    queue: WorkQueue<ObjectKey>,
    pods: Store<Pod>,
    nodes: Store<Node>,
    /// What is in use on each node, with the pods bound (or being bound) by this scheduler
    /// that the cache does not show bound yet (assumed) and those whose claims are being
    /// bound on their chosen node (the volume binding's PreBind wait), both counted on their
    /// node. A node is chosen and the pod assumed there in one section under this lock, so
    /// concurrent workers never take the same room; the binds themselves run in parallel
    /// (kube-scheduler's binding cycle). Never held across an await.
    usage: Mutex<usage::NodeUsage>,
    recorder: Recorder,
    /// The time of the `PodScheduled` condition.
    clock: Clock,
    volumes: volumes::VolumeCaches,
    /// The nodes as decisions read them; remade when a node changed.
    node_snapshot: Mutex<NodeSnapshot>,
    /// Where the next decision starts looking (kube-scheduler's `nextStartNodeIndex`).
    next_start: AtomicUsize,
}

/// The node cache as of one generation: sorted by name, allocatable resources parsed.
struct NodeSnapshot {
    generation: Option<u64>,
    nodes: Arc<Vec<fit::NodeInfo>>,
}

impl Context {
    /// The nodes, sorted by name, as of the node cache now: the snapshot, remade if the cache
    /// changed since it was made (its generation moves with the cache, before the handlers
    /// that queue pods on a node's change run, so a pod queued by a change sees it).
    fn nodes(&self) -> Arc<Vec<fit::NodeInfo>> {
        let generation = self.nodes.generation();
        let mut snapshot = self.node_snapshot.lock();
        if snapshot.generation != Some(generation) {
            let (mut nodes, generation) = self.nodes.list_with_generation();
            nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
            // Lock order: the snapshot, then the usage (nothing takes them the other way).
            let mut usage = self.usage.lock();
            let nodes: Vec<fit::NodeInfo> = nodes
                .into_iter()
                .map(|node| {
                    let slot = usage.slot(node.metadata.name.as_deref().unwrap_or_default());
                    fit::NodeInfo::new(node, slot)
                })
                .collect();
            *snapshot = NodeSnapshot {
                generation: Some(generation),
                nodes: Arc::new(nodes),
            };
        }
        snapshot.nodes.clone()
    }
}

/// The scheduler.
pub struct Scheduler {
    client: Client,
    pods: SharedInformer<Pod>,
    nodes: SharedInformer<Node>,
    claims: SharedInformer<PersistentVolumeClaim>,
    volumes: SharedInformer<PersistentVolume>,
    classes: SharedInformer<StorageClass>,
    /// Where event timestamps and condition times come from (the system clock unless set).
    clock: Clock,
}

fn pending(pod: &Pod) -> bool {
    let spec = pod.spec.as_ref();
    spec.and_then(|s| s.node_name.as_deref())
        .is_none_or(str::is_empty)
        && spec
            .and_then(|s| s.scheduler_name.as_deref())
            .is_none_or(|s| s.is_empty() || s == DEFAULT_SCHEDULER)
        && pod.metadata.deletion_timestamp.is_none()
        && !matches!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded" | "Failed")
        )
}

impl Scheduler {
    /// A scheduler on `factory`'s shared Pod and Node informers.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        Scheduler {
            client,
            pods: factory.informer::<Pod>(),
            nodes: factory.informer::<Node>(),
            claims: factory.informer(),
            volumes: factory.informer(),
            classes: factory.informer(),
            clock: Clock::system(),
        }
    }

    /// Reads the time from `clock` (the server's virtual clock in tests and with
    /// `--virtual-clock`).
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let controller = Controller::new("scheduler", self.pods.clone()).workers(WORKERS);
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            queue: controller.queue(),
            pods: self.pods.store(),
            nodes: self.nodes.store(),
            usage: Mutex::new(usage::NodeUsage::new()),
            recorder: Recorder::new(self.client.clone(), DEFAULT_SCHEDULER)
                .with_clock(self.clock.clone()),
            clock: self.clock.clone(),
            volumes: volumes::VolumeCaches {
                claims: self.claims.store(),
                volumes: self.volumes.store(),
                classes: self.classes.store(),
            },
            node_snapshot: Mutex::new(NodeSnapshot {
                generation: None,
                nodes: Arc::new(Vec::new()),
            }),
            next_start: AtomicUsize::new(0),
        });
        self.pods.store().add_index(PENDING_INDEX, |pod: &Pod| {
            if pending(pod) {
                vec![PENDING.to_owned()]
            } else {
                Vec::new()
            }
        });
        let pending_pods = |pods: Store<Pod>, with_claims: bool| {
            move || -> Vec<ObjectKey> {
                if !with_claims {
                    return pods.index_keys(PENDING_INDEX, PENDING);
                }
                pods.by_index(PENDING_INDEX, PENDING)
                    .iter()
                    .filter(|p| !crate::volume::pod_claim_names(p).is_empty())
                    .map(|p| p.key())
                    .collect()
            }
        };
        // Any node change may make room: every pending pod is tried again; a claim, volume or
        // class that changes may unblock the pending pods with claims.
        let on_node = pending_pods(self.pods.store(), false);
        let on_claim = pending_pods(self.pods.store(), true);
        let on_volume = pending_pods(self.pods.store(), true);
        let on_class = pending_pods(self.pods.store(), true);
        let controller = controller
            .watches(&self.nodes, move |_: &Node| on_node())
            .watches(&self.claims, move |_: &PersistentVolumeClaim| on_claim())
            .watches(&self.volumes, move |_: &PersistentVolume| on_volume())
            .watches(&self.classes, move |_: &StorageClass| on_class());
        let registration = track_usage(&self.pods, &ctx);
        // The workers start once the usage has taken in the pods already cached.
        tokio::select! {
            _ = token.cancelled() => return,
            _ = self.pods.wait_for_sync() => {}
        }
        let deadline = Instant::now() + USAGE_CATCH_UP;
        while registration.backlog() > 0 && Instant::now() < deadline {
            tokio::select! {
                _ = token.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(5)) => {}
            }
        }
        let sweeper = sweep(ctx.clone(), token.clone());
        let run = controller.run(
            move |key| schedule(key, ctx.clone()),
            crate::error::error_policy,
            token,
        );
        tokio::join!(run, sweeper);
    }
}

/// Every [`SWEEP_PERIOD`] until `token` is cancelled: drops the assumed and waiting pods
/// that the cache no longer has (upstream `cleanupAssumedPods`,
/// `pkg/scheduler/backend/cache/cache.go`), and queues what their room lets in. The cache is
/// read outside the usage lock; only the pods found gone are checked again under it.
async fn sweep(ctx: Arc<Context>, token: CancellationToken) {
    let mut tick = tokio::time::interval(SWEEP_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tick.tick() => {}
        }
        let decided = ctx.usage.lock().decided();
        let gone: Vec<ObjectKey> = decided
            .into_iter()
            .filter(|key| ctx.pods.get(key).is_none())
            .collect();
        if gone.is_empty() {
            continue;
        }
        let retry = ctx
            .usage
            .lock()
            .sweep(gone, |key| ctx.pods.get(key).is_some());
        retry.into_iter().for_each(|key| ctx.queue.add(key));
    }
}

/// Keeps the usage from the pod informer's events; a pod that goes away, finishes or moves
/// frees room, and the pods found unschedulable are tried again once the usage shows it.
fn track_usage(pods: &SharedInformer<Pod>, ctx: &Arc<Context>) -> HandlerRegistration<Pod> {
    let (added, updated, deleted) = (ctx.clone(), ctx.clone(), ctx.clone());
    pods.add_handler(
        Handlers::new()
            .on_add(move |pod: &Arc<Pod>| {
                let retry = added.usage.lock().apply(pod);
                retry.into_iter().for_each(|key| added.queue.add(key));
            })
            .on_update(move |_: &Arc<Pod>, pod: &Arc<Pod>| {
                let retry = updated.usage.lock().apply(pod);
                retry.into_iter().for_each(|key| updated.queue.add(key));
            })
            .on_delete(move |pod: &Arc<Pod>| {
                let retry = deleted.usage.lock().remove(&pod.key());
                retry.into_iter().for_each(|key| deleted.queue.add(key));
            }),
    )
}

/// Schedules one pod.
async fn schedule(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(pod) = ctx.pods.get(&key) else {
        let retry = ctx.usage.lock().remove(&key);
        retry.into_iter().for_each(|key| ctx.queue.add(key));
        return Ok(Action::AwaitChange);
    };
    if !pending(&pod) || ctx.usage.lock().is_assumed(&key) {
        return Ok(Action::AwaitChange);
    }
    let nodes = ctx.nodes();
    // PreFilter: the pod's claims.
    let claims = match volumes::pod_claims(&pod, &ctx.volumes) {
        Ok(claims) => claims,
        Err(message) => {
            ctx.usage.lock().stop_waiting(&key);
            let message = fit::prefilter_message(nodes.len(), &message);
            return mark_unschedulable(&ctx, &key, &pod, message).await;
        }
    };
    // PreBind: a pod waiting for its claims on a chosen node goes there once they are bound.
    let waiting_on = ctx.usage.lock().waiting_on(&key).map(str::to_owned);
    if let Some(node_name) = waiting_on {
        if !claims.all_bound() {
            return Ok(Action::AwaitChange);
        }
        let fits = nodes
            .iter()
            .find(|n| n.node().metadata.name.as_deref() == Some(&node_name))
            .is_some_and(|node| volumes::plan_for_node(&claims, node.node(), &ctx.volumes).is_ok());
        {
            let mut usage = ctx.usage.lock();
            usage.stop_waiting(&key);
            if fits {
                usage.assume(&pod, node_name.clone());
            }
        }
        if fits {
            return bind(&ctx, &key, &pod, node_name).await;
        }
    }
    let decision = {
        let mut usage = ctx.usage.lock();
        if usage.is_assumed(&key) {
            return Ok(Action::AwaitChange); // another worker has it
        }
        let start = ctx.next_start.load(Ordering::Relaxed);
        let (decision, examined) = fit::choose_with(
            &pod,
            &nodes,
            usage.table(),
            &|node| volumes::plan_for_node(&claims, node, &ctx.volumes).map(drop),
            start,
        );
        let decision = decision.map(|info| info.node().clone());
        if !nodes.is_empty() {
            ctx.next_start
                .store((start + examined) % nodes.len(), Ordering::Relaxed);
        }
        match &decision {
            Ok(node) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                if claims.all_bound() {
                    usage.assume(&pod, name);
                } else {
                    usage.wait(&pod, name);
                }
            }
            Err(_) => usage.unschedulable(key.clone()),
        }
        decision
    };
    match decision {
        Ok(node) if claims.all_bound() => {
            let name = node.metadata.name.clone().unwrap_or_default();
            bind(&ctx, &key, &pod, name).await
        }
        Ok(node) => {
            // Reserve the volumes, or hand the claims to their provisioner for this node; the
            // claims' changes bring the pod back here.
            let plans = match volumes::plan_for_node(&claims, &node, &ctx.volumes) {
                Ok(plans) => plans,
                Err(_) => {
                    ctx.usage.lock().stop_waiting(&key);
                    return Ok(Action::Requeue);
                }
            };
            let name = node.metadata.name.clone().unwrap_or_default();
            if let Err(err) = prebind(&ctx, plans, &name).await {
                ctx.usage.lock().stop_waiting(&key);
                return Err(err);
            }
            Ok(Action::AwaitChange)
        }
        Err(message) => mark_unschedulable(&ctx, &key, &pod, message).await,
    }
}

/// Writes the volume binding's decisions for `node` (`bindAPIUpdate`): a reserved volume's
/// claimRef, or the selected node on a claim to provision.
async fn prebind(ctx: &Context, plans: Vec<volumes::Plan>, node: &str) -> Result<()> {
    use crate::volume::{ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, reference_to};
    for plan in plans {
        match plan {
            volumes::Plan::Static(claim, volume) => {
                let mut updated = (*volume).clone();
                updated.spec.get_or_insert_with(Default::default).claim_ref =
                    Some(reference_to(&claim));
                updated
                    .metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(ANN_BOUND_BY_CONTROLLER.to_owned(), "yes".to_owned());
                let api: Api<PersistentVolume> = Api::all(ctx.client.clone());
                let name = volume.metadata.name.clone().unwrap_or_default();
                api.replace(&name, &PostParams::default(), &updated).await?;
            }
            volumes::Plan::Provision(claim) => {
                let mut updated = (*claim).clone();
                updated
                    .metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(ANN_SELECTED_NODE.to_owned(), node.to_owned());
                let namespace = claim.metadata.namespace.as_deref().unwrap_or("");
                let api: Api<PersistentVolumeClaim> =
                    Api::namespaced(ctx.client.clone(), namespace);
                let name = claim.metadata.name.clone().unwrap_or_default();
                api.replace(&name, &PostParams::default(), &updated).await?;
            }
        }
    }
    Ok(())
}

/// Binds the assumed pod to `node_name` and records the `Scheduled` event.
async fn bind(ctx: &Context, key: &ObjectKey, pod: &Pod, node_name: String) -> Result<Action> {
    let namespace = key.namespace.clone().unwrap_or_default();
    let reference = object_reference(pod, &ApiResource::of::<Pod>());
    let binding = json!({"apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": key.name, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}});
    let body = serde_json::to_vec(&binding).map_err(kubemock_client::Error::Encode)?;
    let collection = format!("/api/v1/namespaces/{namespace}/pods/{}/binding", key.name);
    let request = RequestBuilder::new(collection).create(&PostParams::default(), body);
    if let Err(err) = ctx.client.request::<serde_json::Value>(&request).await {
        ctx.usage.lock().forget(key);
        // Deleted or bound meanwhile: the next event says what to do.
        if err.is_not_found() || err.is_conflict() {
            return Ok(Action::AwaitChange);
        }
        return Err(err.into());
    }
    ctx.recorder
        .publish(
            &reference,
            EventType::Normal,
            "Scheduled",
            &format!(
                "Successfully assigned {namespace}/{} to {node_name}",
                key.name
            ),
        )
        .await;
    Ok(Action::AwaitChange)
}

/// `PodScheduled=False`, reason `Unschedulable`, with `message`, and a `FailedScheduling`
/// event, unless the pod says so already.
async fn mark_unschedulable(
    ctx: &Context,
    key: &ObjectKey,
    pod: &Pod,
    message: String,
) -> Result<Action> {
    let namespace = key.namespace.clone().unwrap_or_default();
    let current = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"));
    let already = current.is_some_and(|c| {
        c.status == "False"
            && c.reason.as_deref() == Some("Unschedulable")
            && c.message.as_deref() == Some(message.as_str())
    });
    if already {
        return Ok(Action::AwaitChange);
    }
    let mut updated = pod.clone();
    let status = updated.status.get_or_insert_with(Default::default);
    status.phase.get_or_insert_with(|| "Pending".to_owned());
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    conditions.retain(|c| c.type_ != "PodScheduled");
    conditions.push(PodCondition {
        type_: "PodScheduled".to_owned(),
        status: "False".to_owned(),
        reason: Some("Unschedulable".to_owned()),
        message: Some(message.clone()),
        last_transition_time: Some(Time(ctx.clock.now())),
        ..PodCondition::default()
    });
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    match api
        .replace_status(&key.name, &PostParams::default(), &updated)
        .await
    {
        Ok(_) => {}
        Err(err) if err.is_not_found() => return Ok(Action::AwaitChange),
        Err(err) => return Err(err.into()),
    }
    let reference = object_reference(pod, &ApiResource::of::<Pod>());
    ctx.recorder
        .publish(&reference, EventType::Warning, "FailedScheduling", &message)
        .await;
    Ok(Action::AwaitChange)
}
