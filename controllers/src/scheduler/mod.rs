//! The scheduler (issue 6 item 6): binds pending pods (no nodeName, `default-scheduler`) to
//! Ready, schedulable nodes that fit them ([`fit`]), spreading load; a pod that fits nowhere
//! gets `PodScheduled=False` with reason `Unschedulable` and a `FailedScheduling` event, and
//! is tried again whenever nodes change or a pod goes away. Decisions are serialised and a
//! pod is counted on its node from the moment it is chosen until the informer shows it there
//! (kube-scheduler's "assumed" pods), so two pods never take the same room; binds run in
//! parallel. A pod's claims are bound first ([`volumes`]): it waits, counted on its node, until
//! they are.

pub mod fit;
pub mod volumes;

use crate::clock::Clock;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Node, PersistentVolume, PersistentVolumeClaim, Pod, PodCondition,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubemock_client::events::{EventType, Recorder, object_reference};
use kubemock_client::informer::Handlers;
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

struct Context {
    client: Client,
    pods: Store<Pod>,
    nodes: Store<Node>,
    /// Pods bound (or being bound) by this scheduler that the cache does not show bound yet:
    /// pod -> node. A node is chosen and the pod assumed there in one section under
    /// `deciding`, so concurrent workers never take the same room; the binds themselves run
    /// in parallel (kube-scheduler's binding cycle).
    assumed: Mutex<HashMap<ObjectKey, String>>,
    /// Pods whose node is chosen and whose claims are being bound there (the volume
    /// binding's PreBind wait): pod -> node. Counted on the node like assumed pods.
    waiting: Mutex<HashMap<ObjectKey, String>>,
    /// Serialises the decisions (usage, choice, assumption); never held across an await.
    deciding: Mutex<()>,
    recorder: Recorder,
    /// The time of the `PodScheduled` condition.
    clock: Clock,
    volumes: volumes::VolumeCaches,
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
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            pods: self.pods.store(),
            nodes: self.nodes.store(),
            assumed: Mutex::new(HashMap::new()),
            waiting: Mutex::new(HashMap::new()),
            deciding: Mutex::new(()),
            recorder: Recorder::new(self.client.clone(), DEFAULT_SCHEDULER)
                .with_clock(self.clock.clone()),
            clock: self.clock.clone(),
            volumes: volumes::VolumeCaches {
                claims: self.claims.store(),
                volumes: self.volumes.store(),
                classes: self.classes.store(),
            },
        });
        let pending_pods = |pods: Store<Pod>, with_claims: bool| {
            move || -> Vec<ObjectKey> {
                pods.list()
                    .iter()
                    .filter(|p| pending(p))
                    .filter(|p| !with_claims || !crate::volume::pod_claim_names(p).is_empty())
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
        let controller = Controller::new("scheduler", self.pods.clone())
            .workers(WORKERS)
            .watches(&self.nodes, move |_: &Node| on_node())
            .watches(&self.claims, move |_: &PersistentVolumeClaim| on_claim())
            .watches(&self.volumes, move |_: &PersistentVolume| on_volume())
            .watches(&self.classes, move |_: &StorageClass| on_class());
        retry_on_pod_removal(&self.pods, controller.queue());
        controller
            .run(
                move |key| schedule(key, ctx.clone()),
                crate::error::error_policy,
                token,
            )
            .await;
    }
}

/// A pod that goes away frees room: the pending pods are tried again.
fn retry_on_pod_removal(pods: &SharedInformer<Pod>, queue: WorkQueue<ObjectKey>) {
    let store = pods.store();
    pods.add_handler(Handlers::new().on_delete(move |_: &Arc<Pod>| {
        for pod in store.list().iter().filter(|p| pending(p)) {
            queue.add(pod.key());
        }
    }));
}

/// What is in use on each node: the cached pods bound there (not finished) and the assumed
/// ones.
fn usage(ctx: &Context) -> HashMap<String, BTreeMap<String, i128>> {
    let mut used: HashMap<String, BTreeMap<String, i128>> = HashMap::new();
    let mut assumed = ctx.assumed.lock();
    let pods = ctx.pods.list();
    let mut add = |node: &str, pod: &Pod| {
        let entry = used.entry(node.to_owned()).or_default();
        for (resource, value) in fit::pod_requests(pod) {
            *entry.entry(resource).or_default() += value;
        }
    };
    for pod in &pods {
        let finished = matches!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded" | "Failed")
        );
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .filter(|n| !n.is_empty());
        match node {
            Some(node) => {
                assumed.remove(&pod.key());
                if !finished {
                    add(node, pod);
                }
            }
            None => {
                let key = pod.key();
                if let Some(node) = assumed.get(&key) {
                    add(&node.clone(), pod);
                } else if let Some(node) = ctx.waiting.lock().get(&key) {
                    add(&node.clone(), pod);
                }
            }
        }
    }
    // Assumed pods the cache no longer has are gone.
    assumed.retain(|key, _| ctx.pods.get(key).is_some());
    ctx.waiting
        .lock()
        .retain(|key, _| ctx.pods.get(key).is_some());
    used
}

/// Schedules one pod.
async fn schedule(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(pod) = ctx.pods.get(&key) else {
        ctx.assumed.lock().remove(&key);
        ctx.waiting.lock().remove(&key);
        return Ok(Action::AwaitChange);
    };
    if !pending(&pod) || ctx.assumed.lock().contains_key(&key) {
        return Ok(Action::AwaitChange);
    }
    let mut nodes: Vec<Node> = ctx.nodes.list().iter().map(|n| (**n).clone()).collect();
    nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    // PreFilter: the pod's claims.
    let claims = match volumes::pod_claims(&pod, &ctx.volumes) {
        Ok(claims) => claims,
        Err(message) => {
            ctx.waiting.lock().remove(&key);
            let message = fit::prefilter_message(nodes.len(), &message);
            return mark_unschedulable(&ctx, &key, &pod, message).await;
        }
    };
    // PreBind: a pod waiting for its claims on a chosen node goes there once they are bound.
    let waiting_on = ctx.waiting.lock().get(&key).cloned();
    if let Some(node_name) = waiting_on {
        if !claims.all_bound() {
            return Ok(Action::AwaitChange);
        }
        let node = nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(&node_name));
        ctx.waiting.lock().remove(&key);
        if node.is_some_and(|node| volumes::plan_for_node(&claims, node, &ctx.volumes).is_ok()) {
            ctx.assumed.lock().insert(key.clone(), node_name.clone());
            return bind(&ctx, &key, &pod, node_name).await;
        }
    }
    let decision = {
        let _deciding = ctx.deciding.lock();
        if ctx.assumed.lock().contains_key(&key) {
            return Ok(Action::AwaitChange); // another worker has it
        }
        let used = usage(&ctx);
        let decision = fit::choose_with(&pod, &nodes, &used, &|node| {
            volumes::plan_for_node(&claims, node, &ctx.volumes).map(drop)
        })
        .cloned();
        if let Ok(node) = &decision {
            let name = node.metadata.name.clone().unwrap_or_default();
            if claims.all_bound() {
                ctx.assumed.lock().insert(key.clone(), name);
            } else {
                ctx.waiting.lock().insert(key.clone(), name);
            }
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
                    ctx.waiting.lock().remove(&key);
                    return Ok(Action::Requeue);
                }
            };
            let name = node.metadata.name.clone().unwrap_or_default();
            if let Err(err) = prebind(&ctx, plans, &name).await {
                ctx.waiting.lock().remove(&key);
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
        ctx.assumed.lock().remove(key);
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
