//! Simulated nodes and their kubelet (issue 6 item 7, kwok-like): registers `nodes` Ready
//! nodes with capacity, addresses and heartbeat Leases in `kube-node-lease`; a pod bound to
//! one of them goes Pending -> Running with podIP, hostIP, startTime, container statuses and
//! the conditions PodScheduled, Initialized, ContainersReady and Ready (Ready after
//! `ready_delay`); its containers exit, end the pod or restart with the kubelet's back-off as
//! [`lifecycle`] and the pod's annotations say, on the [`Clock`] of [`KubeletConfig`]; a pod
//! being deleted gracefully is removed (the kubelet's final delete with grace 0). No container
//! runs anywhere.
//!
//! User-created Node objects annotated [`SIMULATED_ANNOTATION`]`: "true"` (kwok's
//! `kwok.x-k8s.io/node: fake`) are simulated too: reported Ready with the same conditions,
//! addresses and (unless given) capacity, and their pods run; so tests add and remove nodes.
//!
//! Every simulated node's kubelet renews its Lease every [`LEASE_RENEW`] and posts its
//! status when due ([`node::status_due`]), on the manager's [`Clock`], until it is stopped
//! ([`node::is_stopped`], the [`node::DOWN_ANNOTATION`]): then it renews nothing, posts
//! nothing and runs no pods, so the node lifecycle controller finds it unreachable.
//!
//! kwok's Stages (`kwok.x-k8s.io/v1alpha1`), when any names Pod or Node, drive the pods or
//! the nodes' status instead of all of the above ([`stages`]; the Leases stay the
//! kubelet's).
//!
//! In the secure mode they run as [`identity::SIMULATOR_USER`] ([`identity`]).

pub mod identity;
pub mod lifecycle;
pub mod node;
pub mod stages;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubemock_client::events::{EventType, Recorder, object_reference};
use kubemock_client::request::Preconditions;
use kubemock_client::{
    Action, Api, ApiResource, Client, Controller, DeleteParams, DynamicObject, InformerFactory,
    ObjectKey, PostParams, Resource, SharedInformer, Store,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::error::Result;
use lifecycle::Next;

pub use node::{LEASE_DURATION_SECONDS, LEASE_RENEW, NODE_LEASE_NAMESPACE};

/// The annotation (value `"true"`) by which a user-created Node asks to be simulated.
pub const SIMULATED_ANNOTATION: &str = "kubemock.dev/simulated";

/// Wait between attempts to register the nodes.
const REGISTER_RETRY: Duration = Duration::from_millis(500);
/// Concurrent pod syncs.
const WORKERS: usize = 4;
/// Concurrent node heartbeats, at least: one per simulated node beyond that. Each real kubelet
/// renews its own Lease, so a thousand nodes renew a hundred Leases a second whatever the
/// load, and no node's renewal waits for another's. Two workers (the runtime's default) doing
/// that one request after the other fell behind once a busy server answered in more than
/// 20 ms, and the node lifecycle controller found the nodes silent (issue 23's 100k run); 32
/// fell behind the same way once an overloaded server took over 320 ms. Idle workers cost
/// nothing: of them, only the one watching the queue's timer wakes for a due heartbeat
/// (`WorkQueue::get`). Before the queue worked that way, every delayed add woke every idle
/// worker, and a thousand workers cost some 5 % more of the 100,000-pod run's CPU.
const NODE_WORKERS: usize = 32;

/// How the simulated nodes behave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletConfig {
    /// How many nodes (`kubemock-node-0` ...).
    pub nodes: usize,
    /// How long a running pod takes to become Ready (0: at once), unless it says
    /// ([`lifecycle::READY_AFTER_ANNOTATION`]).
    pub ready_delay: Duration,
    /// How long a run-to-completion container runs when neither an annotation nor a `sleep N`
    /// says ([`lifecycle`]).
    pub run_time: Duration,
    /// The time pods start, become Ready, exit and restart on: every simulated duration is
    /// "due at a time on this clock" (a fake clock's moves wake the pods due). The manager
    /// sets it to [`ManagerConfig::clock`](crate::ManagerConfig::clock).
    pub clock: Clock,
}

impl Default for KubeletConfig {
    /// Three nodes, pods Ready at once, run-to-completion containers running
    /// [`lifecycle::DEFAULT_RUN_TIME`], the system clock.
    fn default() -> Self {
        KubeletConfig {
            nodes: 3,
            ready_delay: Duration::ZERO,
            run_time: lifecycle::DEFAULT_RUN_TIME,
            clock: Clock::system(),
        }
    }
}

struct Context {
    client: Client,
    pods: Store<Pod>,
    nodes: Store<Node>,
    config: KubeletConfig,
    /// Pod IPs handed out per node index (a counter each). Written by the pod workers.
    next_ip: Mutex<HashMap<usize, u32>>,
    /// Indexes (for addresses) of the simulated user-created nodes, by name, from
    /// `config.nodes` up, in the order they were seen; never reused. Written by both workers.
    extra_nodes: Mutex<HashMap<String, usize>>,
    /// Pods waiting for a time on a fake clock, with that time; the clock's moves queue the
    /// ones due. Written by the pod workers and the clock task.
    wakes: Mutex<HashMap<ObjectKey, Timestamp>>,
    /// The last Lease each node's kubelet wrote, by node name, so a renewal is one write;
    /// dropped on a conflict or a missing Lease (read again next time). Written by the node
    /// worker only.
    leases: Mutex<HashMap<String, Lease>>,
    recorder: Recorder,
    /// The Stages that, when any names Pod or Node, drive that kind instead of the kubelet.
    stages: stages::Stages,
}

impl Context {
    /// The index of a node this kubelet simulates: a registered one, or a user-created one
    /// that opts in.
    fn node_index(&self, name: &str) -> Option<usize> {
        if let Some(index) = node_index(name, self.config.nodes) {
            return Some(index);
        }
        let node = self.nodes.get_by(None, name)?;
        if !is_simulated(&node) {
            return None;
        }
        let mut extra = self.extra_nodes.lock();
        let next = self.config.nodes + extra.len();
        Some(*extra.entry(name.to_owned()).or_insert(next))
    }

    /// Syncs `key` again at `due` on the kubelet's clock: after the remaining real time on
    /// the system clock, or when a fake clock's move reaches it.
    fn wake_at(&self, key: &ObjectKey, due: Timestamp) -> Action {
        let now = self.config.clock.now();
        if due <= now {
            return Action::RequeueAfter(Duration::ZERO);
        }
        if self.config.clock.subscribe().is_some() {
            self.wakes.lock().insert(key.clone(), due);
            // A move between reading the time and the insert found no entry to wake: read
            // the time again, after the insert, so that such a move is never lost.
            if due <= self.config.clock.now() {
                self.wakes.lock().remove(key);
                return Action::RequeueAfter(Duration::ZERO);
            }
            return Action::AwaitChange;
        }
        Action::RequeueAfter(kubemock_apimachinery::time::until(now, due))
    }
}

/// What a pod's sync reads of its node ([`sync_pod`]): the node object it is (its uid), and
/// whether it is simulated and stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NodeFacts {
    uid: Option<String>,
    simulated: bool,
    stopped: bool,
}

impl NodeFacts {
    fn of(node: &Node) -> Self {
        NodeFacts {
            uid: node.metadata.uid.clone(),
            simulated: is_simulated(node),
            stopped: node::is_stopped(node),
        }
    }
}

/// Whether a Node object asks to be simulated.
pub fn is_simulated(node: &Node) -> bool {
    node.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SIMULATED_ANNOTATION))
        .is_some_and(|v| v == "true")
}

/// The simulated nodes and kubelet.
pub struct Kubelet {
    client: Client,
    pods: SharedInformer<Pod>,
    nodes: SharedInformer<Node>,
    stages: SharedInformer<DynamicObject>,
    config: KubeletConfig,
}

impl Kubelet {
    /// Simulated nodes per `config`, reading pods through `factory`'s shared informer.
    pub fn new(client: Client, factory: &InformerFactory, config: KubeletConfig) -> Self {
        Kubelet {
            client,
            pods: factory.informer::<Pod>(),
            nodes: factory.informer::<Node>(),
            stages: factory.dynamic(&stages::resource()),
            config,
        }
    }

    /// Sets the clock the kubelets renew their Leases, post their status and run their pods
    /// by ([`KubeletConfig::clock`]).
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.config.clock = clock;
        self
    }

    /// Registers the nodes, keeps their Leases fresh and runs their pods until `token` is
    /// cancelled.
    pub async fn run(self, token: CancellationToken) {
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            pods: self.pods.store(),
            nodes: self.nodes.store(),
            next_ip: Mutex::new(HashMap::new()),
            extra_nodes: Mutex::new(HashMap::new()),
            wakes: Mutex::new(HashMap::new()),
            leases: Mutex::new(HashMap::new()),
            config: self.config.clone(),
            recorder: Recorder::new(self.client.clone(), "kubelet")
                .with_clock(self.config.clock.clone()),
            stages: stages::Stages::new(self.stages.store(), self.config.clock.now()),
        });
        // Stages are read only where they can be: a server that does not serve them (a real
        // cluster without kwok's CRD) or refuses this kubelet would leave their informer
        // never synced, and the controllers waiting on it would never start.
        let stages_served = stages_readable(&self.client, &token).await;
        // Each Stage taken up is announced by an Event on it.
        let stage_ctx = ctx.clone();
        let stage_token = token.clone();
        let stage_informer = self.stages.clone();
        let announcer = tokio::spawn(async move {
            if stages_served {
                Controller::new("kubelet-stages", stage_informer)
                    .run(
                        move |key| announce_stage(key, stage_ctx.clone()),
                        crate::error::error_policy,
                        stage_token,
                    )
                    .await;
            }
        });
        // Each simulated node's heartbeat: its Lease and status, again every LEASE_RENEW
        // (sync_node requeues itself), and at once when a fake clock moves.
        let node_ctx = ctx.clone();
        let node_store = self.nodes.store();
        let mut node_controller = Controller::new("kubelet-nodes", self.nodes.clone())
            .workers(NODE_WORKERS.max(self.config.nodes));
        if stages_served {
            node_controller = node_controller.watches(&self.stages, move |_| {
                node_store.list().iter().map(|n| n.key()).collect()
            });
        }
        let node_queue = node_controller.queue();
        let simulated_nodes = tokio::spawn(node_controller.run(
            move |key| sync_node(key, node_ctx.clone()),
            crate::error::error_policy,
            token.clone(),
        ));
        let node_clock_moves = tokio::spawn(crate::clock::requeue_all_on_moves(
            self.config.clock.clone(),
            token.clone(),
            node_queue,
            self.nodes.store(),
        ));
        if self.config.nodes > 0 {
            loop {
                match register_nodes(&self.client, self.config.nodes, &self.config.clock).await {
                    Ok(()) => break,
                    Err(err) => {
                        tracing::debug!(error = %err, "registering the simulated nodes failed; retrying")
                    }
                }
                tokio::select! {
                    _ = token.cancelled() => return,
                    _ = tokio::time::sleep(REGISTER_RETRY) => {}
                }
            }
            tracing::info!(nodes = self.config.nodes, "simulated nodes registered");
        }
        // A node becoming known (or simulated) concerns the pods bound to it.
        let pods = self.pods.store();
        let stage_pods = self.pods.store();
        let mut controller = Controller::new("kubelet", self.pods).workers(WORKERS);
        if stages_served {
            // A Stage's change concerns every pod (Stages take over, or hand back).
            controller = controller.watches(&self.stages, move |_| {
                stage_pods.list().iter().map(|p| p.key()).collect()
            });
        }
        crate::podindex::index_by_node(&pods);
        // Only what a pod's sync reads of its node concerns its pods: which node it is, whether
        // it is simulated, and whether it is stopped. A heartbeat (a status posted, or a Stage
        // for Node moving it) changes none of that; queuing every pod of the node on each one
        // made a sync per pod per heartbeat. One entry per node name ever seen (a deleted
        // node's stays; a node made again under its name has a new uid).
        let seen: Mutex<HashMap<String, NodeFacts>> = Mutex::new(HashMap::new());
        let controller = controller.watches(&self.nodes, move |node: &Node| {
            let name = node.metadata.name.as_deref().unwrap_or_default();
            let facts = NodeFacts::of(node);
            if seen.lock().insert(name.to_owned(), facts.clone()) == Some(facts) {
                return Vec::new();
            }
            crate::podindex::keys_on_node(&pods, name)
        });
        // A fake clock's move wakes the pods whose time it reached.
        let queue = controller.queue();
        let wake_ctx = ctx.clone();
        let clock_moves =
            crate::clock::requeue_on_moves(self.config.clock.clone(), token.clone(), move |now| {
                let due: Vec<ObjectKey> = {
                    let mut wakes = wake_ctx.wakes.lock();
                    let due: Vec<ObjectKey> = wakes
                        .iter()
                        .filter(|(_, at)| **at <= now)
                        .map(|(key, _)| key.clone())
                        .collect();
                    for key in &due {
                        wakes.remove(key);
                    }
                    due
                };
                for key in due {
                    queue.add(key);
                }
            });
        let run = controller.run(
            move |key| sync_pod(key, ctx.clone()),
            crate::error::error_policy,
            token.clone(),
        );
        tokio::join!(run, clock_moves);
        for task in [node_clock_moves, simulated_nodes, announcer] {
            if let Err(err) = task.await {
                tracing::warn!(error = %err, "a kubelet task failed");
            }
        }
    }
}

/// One heartbeat of a simulated node's kubelet (a registered node, or a user-created one
/// that opts in) unless it is stopped: its status posted when due (Ready, with the
/// conditions, addresses and node info of the simulated nodes, and their capacity unless the
/// node states its own), and its Lease renewed when due (upstream's kubelet
/// `tryUpdateNodeStatus` and its node lease controller). Then again in [`LEASE_RENEW`].
async fn sync_node(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(node) = ctx.nodes.get(&key) else {
        ctx.leases.lock().remove(&key.name);
        return Ok(Action::AwaitChange);
    };
    if node.metadata.deletion_timestamp.is_some() || node::is_stopped(&node) {
        return Ok(Action::AwaitChange);
    }
    let Some(index) = ctx.node_index(&key.name) else {
        return Ok(Action::AwaitChange);
    };
    let now = ctx.config.clock.now();
    // Stages for Node drive the node's status; the kubelet only renews its Lease.
    if ctx.stages.drives("Node") {
        // (Renewed whatever the Stage's write gave, as below.)
        let action = stages::sync_node(&ctx, &key, &node).await;
        renew_lease(&ctx, &node, now).await?;
        return Ok(match action? {
            Action::RequeueAfter(after) => Action::RequeueAfter(after.min(LEASE_RENEW)),
            _ => Action::RequeueAfter(LEASE_RENEW),
        });
    }
    if node::status_due(&node, now) {
        let mut updated = (*node).clone();
        updated.status = Some(node::posted_status(
            index,
            &key.name,
            node.status.as_ref(),
            &Time(now),
        ));
        let api: Api<Node> = Api::all(ctx.client.clone());
        match api
            .replace_status(&key.name, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => tracing::debug!(node = %key.name, "simulated node posted its status"),
            Err(err) if err.is_not_found() => return Ok(Action::AwaitChange),
            Err(err) => {
                // The Lease is renewed all the same: upstream's kubelet posts its status and
                // renews its Lease in two loops, so one failing never silences the other. Here
                // a status write that conflicted (the node lifecycle controller wrote the node,
                // and this cache had not seen it yet) skipped the renewal, and each retry
                // waited longer (the queue's backoff) while the node stayed silent.
                renew_lease(&ctx, &node, now).await?;
                return Err(err.into());
            }
        }
    }
    renew_lease(&ctx, &node, now).await?;
    Ok(Action::RequeueAfter(LEASE_RENEW))
}

/// Renews the Lease of `node` in [`NODE_LEASE_NAMESPACE`] when due, creating it when it is
/// missing (upstream `component-helpers/apimachinery/lease/controller.go`, `sync`).
async fn renew_lease(ctx: &Context, node: &Node, now: jiff::Timestamp) -> Result<()> {
    let name = node.metadata.name.clone().unwrap_or_default();
    let api: Api<Lease> = Api::namespaced(ctx.client.clone(), NODE_LEASE_NAMESPACE);
    let cached = ctx.leases.lock().get(&name).cloned();
    let current = match cached {
        Some(lease) => Some(lease),
        None => api.get_opt(&name).await?,
    };
    if let Some(current) = &current
        && !node::lease_due(current, now)
        && current
            .metadata
            .owner_references
            .as_ref()
            .is_some_and(|o| !o.is_empty())
    {
        ctx.leases.lock().insert(name, current.clone());
        return Ok(());
    }
    let lease = node::lease(node, current.as_ref(), now);
    let written = match &current {
        Some(_) => api.replace(&name, &PostParams::default(), &lease).await,
        None => api.create(&PostParams::default(), &lease).await,
    };
    match written {
        Ok(written) => {
            ctx.leases.lock().insert(name, written);
            Ok(())
        }
        Err(err) => {
            // Read it again next time (a conflict, or a Lease deleted under us).
            ctx.leases.lock().remove(&name);
            if err.is_conflict() || err.is_not_found() || err.is_already_exists() {
                Ok(())
            } else {
                Err(err.into())
            }
        }
    }
}

/// Creates the nodes, or reports them Ready again when they exist (a durable store).
async fn register_nodes(client: &Client, count: usize, clock: &Clock) -> Result<()> {
    let api: Api<Node> = Api::all(client.clone());
    let now = Time(clock.now());
    for index in 0..count {
        let wanted = node::node(index, &now);
        match api.create(&PostParams::default(), &wanted).await {
            Ok(created) => {
                // Status is not taken on create where the status subresource exists.
                let mut with_status = created;
                with_status.status = wanted.status.clone();
                api.replace_status(
                    &node::node_name(index),
                    &PostParams::default(),
                    &with_status,
                )
                .await?;
            }
            Err(err) if err.is_already_exists() => {
                let mut existing = api.get(&node::node_name(index)).await?;
                existing.status = Some(node::node_status(index, &now));
                api.replace_status(&node::node_name(index), &PostParams::default(), &existing)
                    .await?;
            }
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}

/// The index of a simulated node by name.
fn node_index(name: &str, count: usize) -> Option<usize> {
    name.strip_prefix("kubemock-node-")?
        .parse::<usize>()
        .ok()
        .filter(|i| *i < count)
}

/// One step of one pod on a simulated node.
async fn sync_pod(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(pod) = ctx.pods.get(&key) else {
        ctx.stages.forget("Pod", &key);
        return Ok(Action::AwaitChange);
    };
    let node_name = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default();
    let Some(index) = ctx.node_index(&node_name) else {
        return Ok(Action::AwaitChange);
    };
    // A stopped kubelet runs nothing: its pods stay as they are (a pod evicted from it stays
    // Terminating) until it starts again; its node's change queues them again.
    if ctx
        .nodes
        .get_by(None, &node_name)
        .is_some_and(|node| node::is_stopped(&node))
    {
        return Ok(Action::AwaitChange);
    }
    // Stages for Pod drive every pod on the simulated nodes, the kubelet's lifecycle steps
    // aside (its deletion included: kwok's `pod-delete` Stage is what removes them).
    if ctx.stages.drives("Pod") {
        return stages::sync_pod(&ctx, &key, &pod).await;
    }
    let namespace = key.namespace.clone().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let reference = object_reference(pod.as_ref(), &ApiResource::of::<Pod>());
    let containers: Vec<String> = pod
        .spec
        .as_ref()
        .map(|s| s.containers.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default();
    if pod.metadata.deletion_timestamp.is_some() {
        // The kubelet's final delete: containers stopped, the pod removed.
        for name in &containers {
            ctx.recorder
                .publish(
                    &reference,
                    EventType::Normal,
                    "Killing",
                    &format!("Stopping container {name}"),
                )
                .await;
        }
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        return match api.delete(&key.name, &params).await {
            Ok(_) => Ok(Action::AwaitChange),
            Err(err) if err.is_not_found() || err.is_conflict() => Ok(Action::AwaitChange),
            Err(err) => Err(err.into()),
        };
    }
    let status = pod.status.clone().unwrap_or_default();
    let now = Time(ctx.config.clock.now());
    let write = |mut updated: Pod, status| {
        updated.status = Some(status);
        let api = api.clone();
        let name = key.name.clone();
        async move {
            api.replace_status_unread(&name, &PostParams::default(), &updated)
                .await
        }
    };
    match status.phase.as_deref() {
        Some("Succeeded" | "Failed") => Ok(Action::AwaitChange),
        Some("Running") => {
            // Ephemeral containers (`kubectl debug`) start when they are added.
            let ephemeral = node::ephemeral_statuses(
                &pod,
                status.ephemeral_container_statuses.as_deref(),
                &now,
            );
            if ephemeral.is_some() && ephemeral != status.ephemeral_container_statuses {
                let mut updated = status.clone();
                updated.ephemeral_container_statuses = ephemeral;
                write((*pod).clone(), updated).await?;
                return Ok(Action::AwaitChange);
            }
            let plan = plan_of(&pod, &ctx.config);
            match lifecycle::next(&pod, &status, &plan, now.0) {
                Next::Nothing => Ok(Action::AwaitChange),
                Next::At(due) => Ok(ctx.wake_at(&key, due)),
                Next::Write(updated, events) => {
                    write((*pod).clone(), *updated).await?;
                    for (warning, reason, message) in events {
                        let kind = if warning {
                            EventType::Warning
                        } else {
                            EventType::Normal
                        };
                        ctx.recorder
                            .publish(&reference, kind, reason, &message)
                            .await;
                    }
                    // The write's watch event syncs the pod again.
                    Ok(Action::AwaitChange)
                }
            }
        }
        _ => {
            let n = {
                let mut counters = ctx.next_ip.lock();
                let counter = counters.entry(index).or_insert(0);
                *counter = counter.wrapping_add(1);
                *counter - 1
            };
            let plan = plan_of(&pod, &ctx.config);
            let ready = plan.ready_after.is_zero();
            let running = node::running_status(
                &pod,
                &node::node_ip(index),
                &node::pod_ip(index, n),
                &now,
                ready,
                &now,
            );
            write((*pod).clone(), running).await?;
            for container in pod.spec.iter().flat_map(|s| s.containers.iter()) {
                let image = container.image.clone().unwrap_or_default();
                let name = &container.name;
                for (reason, message) in [
                    (
                        "Pulled",
                        format!("Container image \"{image}\" already present on machine"),
                    ),
                    ("Created", format!("Created container: {name}")),
                    ("Started", format!("Started container {name}")),
                ] {
                    ctx.recorder
                        .publish(&reference, EventType::Normal, reason, &message)
                        .await;
                }
            }
            // The write's watch event syncs the pod again, to wait for its next step.
            Ok(Action::AwaitChange)
        }
    }
}

/// Whether this kubelet can list kwok's Stages (the server serves them and lets it); if not,
/// says why, once: the kubelet then runs its own lifecycle only.
async fn stages_readable(client: &Client, token: &CancellationToken) -> bool {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &stages::resource());
    let params = kubemock_client::ListParams {
        limit: Some(1),
        ..kubemock_client::ListParams::default()
    };
    loop {
        match api.list(&params).await {
            Ok(_) => return true,
            // An answer (404 not served, 403 not allowed) is final; no answer (the server
            // not up yet) is asked again.
            Err(err) if err.code().is_some() => {
                tracing::warn!(error = %err, "kwok's Stages (kwok.x-k8s.io/v1alpha1) cannot be listed: the simulated kubelet ignores Stages and runs its own lifecycle");
                return false;
            }
            Err(err) => {
                tracing::debug!(error = %err, "listing kwok's Stages failed; retrying");
                tokio::select! {
                    _ = token.cancelled() => return false,
                    _ = tokio::time::sleep(REGISTER_RETRY) => {}
                }
            }
        }
    }
}

/// Announces a Stage the kubelet takes up by an Event on it ([`stages::LOADED_REASON`]),
/// once per version of it.
async fn announce_stage(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(stage) = ctx.stages.store().get(&key) else {
        return Ok(Action::AwaitChange);
    };
    let version = stage.metadata.resource_version.clone().unwrap_or_default();
    let value = serde_json::to_value(&*stage).map_err(|e| crate::Error::Stage(e.to_string()))?;
    let compiled = kubemock_apimachinery::stage::Stage::compile(&value);
    if let Ok(compiled) = compiled
        && ctx.stages.announce(&key.name, &version)
    {
        let reference = object_reference(stage.as_ref(), &stages::resource());
        ctx.recorder
            .publish(
                &reference,
                EventType::Normal,
                stages::LOADED_REASON,
                &format!(
                    "the simulated kubelet runs this Stage on {} objects",
                    compiled.kind
                ),
            )
            .await;
    }
    Ok(Action::AwaitChange)
}

/// The pod's [`lifecycle::Plan`] under the kubelet's defaults; annotations that do not parse
/// are logged (and ignored).
fn plan_of(pod: &Pod, config: &KubeletConfig) -> lifecycle::Plan {
    let plan = lifecycle::plan(pod, config.ready_delay, config.run_time);
    if !plan.invalid.is_empty() {
        tracing::warn!(
            pod = pod.metadata.name.as_deref().unwrap_or_default(),
            invalid = ?plan.invalid,
            "pod annotations that are not a number of seconds or an exit code are ignored"
        );
    }
    plan
}
