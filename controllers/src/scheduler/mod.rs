//! The scheduler (issue 6 item 6): binds pending pods (no nodeName, `default-scheduler`) to
//! Ready, schedulable nodes that fit them ([`fit`]), spreading load; a pod that fits nowhere
//! gets `PodScheduled=False` with reason `Unschedulable` and a `FailedScheduling` event, and
//! is tried again whenever nodes change or a pod goes away. Decisions are serialised and a
//! pod is counted on its node from the moment it is chosen until the informer shows it there
//! (kube-scheduler's "assumed" pods), so two pods never take the same room; binds run in
//! parallel.

pub mod fit;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, PodCondition};
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
    /// Serialises the decisions (usage, choice, assumption); never held across an await.
    deciding: Mutex<()>,
    recorder: Recorder,
}

/// The scheduler.
pub struct Scheduler {
    client: Client,
    pods: SharedInformer<Pod>,
    nodes: SharedInformer<Node>,
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
        }
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            pods: self.pods.store(),
            nodes: self.nodes.store(),
            assumed: Mutex::new(HashMap::new()),
            deciding: Mutex::new(()),
            recorder: Recorder::new(self.client.clone(), DEFAULT_SCHEDULER),
        });
        let pods = self.pods.store();
        // Any node change may make room: every pending pod is tried again.
        let controller = Controller::new("scheduler", self.pods.clone())
            .workers(WORKERS)
            .watches(&self.nodes, move |_: &Node| {
                pods.list()
                    .iter()
                    .filter(|p| pending(p))
                    .map(|p| p.key())
                    .collect()
            });
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
                if let Some(node) = assumed.get(&pod.key()) {
                    add(&node.clone(), pod);
                }
            }
        }
    }
    // Assumed pods the cache no longer has are gone.
    assumed.retain(|key, _| ctx.pods.get(key).is_some());
    used
}

/// Schedules one pod.
async fn schedule(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(pod) = ctx.pods.get(&key) else {
        ctx.assumed.lock().remove(&key);
        return Ok(Action::AwaitChange);
    };
    if !pending(&pod) || ctx.assumed.lock().contains_key(&key) {
        return Ok(Action::AwaitChange);
    }
    let mut nodes: Vec<Node> = ctx.nodes.list().iter().map(|n| (**n).clone()).collect();
    nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let decision = {
        let _deciding = ctx.deciding.lock();
        if ctx.assumed.lock().contains_key(&key) {
            return Ok(Action::AwaitChange); // another worker has it
        }
        let used = usage(&ctx);
        let decision = fit::choose(&pod, &nodes, &used)
            .map(|node| node.metadata.name.clone().unwrap_or_default());
        if let Ok(node_name) = &decision {
            ctx.assumed.lock().insert(key.clone(), node_name.clone());
        }
        decision
    };
    let namespace = key.namespace.clone().unwrap_or_default();
    let reference = object_reference(pod.as_ref(), &ApiResource::of::<Pod>());
    match decision {
        Ok(node_name) => {
            let binding = json!({"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": key.name, "namespace": namespace},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}});
            let body = serde_json::to_vec(&binding).map_err(kubemock_client::Error::Encode)?;
            let collection = format!("/api/v1/namespaces/{namespace}/pods/{}/binding", key.name);
            let request = RequestBuilder::new(collection).create(&PostParams::default(), body);
            match ctx.client.request::<serde_json::Value>(&request).await {
                Ok(_) => {}
                Err(err) => {
                    ctx.assumed.lock().remove(&key);
                    // Deleted or bound meanwhile: the next event says what to do.
                    if err.is_not_found() || err.is_conflict() {
                        return Ok(Action::AwaitChange);
                    }
                    return Err(err.into());
                }
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
        Err(message) => {
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
            if !already {
                let mut updated = (*pod).clone();
                let status = updated.status.get_or_insert_with(Default::default);
                status.phase.get_or_insert_with(|| "Pending".to_owned());
                let conditions = status.conditions.get_or_insert_with(Vec::new);
                conditions.retain(|c| c.type_ != "PodScheduled");
                conditions.push(PodCondition {
                    type_: "PodScheduled".to_owned(),
                    status: "False".to_owned(),
                    reason: Some("Unschedulable".to_owned()),
                    message: Some(message.clone()),
                    last_transition_time: Some(Time(kubemock_client::resource::now())),
                    last_probe_time: None,
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
                ctx.recorder
                    .publish(&reference, EventType::Warning, "FailedScheduling", &message)
                    .await;
            }
            Ok(Action::AwaitChange)
        }
    }
}
