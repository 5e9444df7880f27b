//! The taint eviction controller (kube-controller-manager's `taint-eviction-controller`,
//! upstream `pkg/controller/tainteviction/taint_eviction.go`): a pod on a node with a
//! NoExecute taint it does not tolerate is deleted at once; one that tolerates every such
//! taint, some for a limited `tolerationSeconds`, is deleted once the shortest of those has
//! passed; one that tolerates them forever stays. Before the delete the pod gets the
//! `DisruptionTarget` condition (reason `DeletionByTaintManager`), and an event says so.
//! The node lifecycle controller's unreachable and not-ready taints, with the 300 s
//! tolerations the DefaultTolerationSeconds admission plugin gives every pod, make a pod of a
//! node that went down go five minutes later.
//!
//! Time comes from the manager's [`Clock`]. A pod's wait counts from when the node's
//! NoExecute taints were added (their `timeAdded`, stamped on the same clock by the node
//! lifecycle controller), else from when this controller first saw the pod under them
//! (upstream counts from the latter, which is the same moment but for the informers' lag; the
//! former makes a test that moves a fake clock deterministic). A pod waiting is looked at
//! again when its time comes (real time, for the system clock) and each time a fake clock
//! moves.

pub mod decide;

use std::collections::HashMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubemock_client::events::{EventType, Recorder};
use kubemock_client::request::Preconditions;
use kubemock_client::{
    Action, Api, Client, Controller, DeleteParams, InformerFactory, ObjectKey, PostParams,
    SharedInformer, Store,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::error::Result;
use decide::Verdict;

/// The pod condition an eviction adds (`v1.DisruptionTarget`).
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// Its reason when this controller deletes the pod.
pub const REASON: &str = "DeletionByTaintManager";
/// Its message (upstream's words).
pub const MESSAGE: &str = "Taint manager: deleting due to NoExecute taint";
/// Concurrent pod syncs (upstream runs 8 workers sharded by node).
const WORKERS: usize = 2;

/// What a sync reads and writes through.
struct Context {
    client: Client,
    pods: Store<Pod>,
    nodes: Store<Node>,
    recorder: Recorder,
    clock: Clock,
    /// Pods waiting for their toleration to run out, by key: when this controller first saw
    /// each under its node's NoExecute taints. Written by the sync workers (one key is never
    /// synced by two at once).
    waiting: Mutex<HashMap<ObjectKey, Timestamp>>,
}

/// The taint eviction controller.
pub struct TaintEvictionController {
    client: Client,
    pods: SharedInformer<Pod>,
    nodes: SharedInformer<Node>,
    clock: Clock,
}

impl TaintEvictionController {
    /// A controller on `factory`'s shared Pod and Node informers, reading the time from
    /// `clock`.
    pub fn new(client: Client, factory: &InformerFactory, clock: Clock) -> Self {
        TaintEvictionController {
            client,
            pods: factory.informer(),
            nodes: factory.informer(),
            clock,
        }
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            pods: self.pods.store(),
            nodes: self.nodes.store(),
            recorder: Recorder::new(self.client.clone(), "taint-eviction-controller")
                .with_clock(self.clock.clone()),
            clock: self.clock.clone(),
            waiting: Mutex::new(HashMap::new()),
        });
        let pods = self.pods.store();
        crate::podindex::index_by_node(&pods);
        // A node's taints concern every pod on it.
        let controller = Controller::new("taint-eviction", self.pods)
            .workers(WORKERS)
            .watches(&self.nodes, move |node: &Node| {
                let name = node.metadata.name.as_deref().unwrap_or_default();
                crate::podindex::keys_on_node(&pods, name)
            });
        let queue = controller.queue();
        let waiting = ctx.clone();
        let clock_moves = crate::clock::requeue_on_moves(self.clock.clone(), token.clone(), |_| {
            let keys: Vec<ObjectKey> = waiting.waiting.lock().keys().cloned().collect();
            for key in keys {
                queue.add(key);
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

/// One pod: deleted now, later, or never, per its node's NoExecute taints and its
/// tolerations (upstream `processPodOnNode`).
async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let pod = ctx.pods.get(&key);
    let node = pod
        .as_ref()
        .and_then(|p| p.spec.as_ref())
        .and_then(|s| s.node_name.as_deref())
        .and_then(|name| ctx.nodes.get_by(None, name));
    let (Some(pod), Some(node)) = (pod, node) else {
        ctx.waiting.lock().remove(&key);
        return Ok(Action::AwaitChange);
    };
    if pod.metadata.deletion_timestamp.is_some() {
        ctx.waiting.lock().remove(&key);
        return Ok(Action::AwaitChange);
    }
    let now = ctx.clock.now();
    let seen = ctx.waiting.lock().get(&key).copied().unwrap_or(now);
    match decide::verdict(&pod, &node, seen, now) {
        Verdict::Stay => {
            // A pod that was waiting had its deletion cancelled.
            if ctx.waiting.lock().remove(&key).is_some() {
                cancelled(&ctx, &key).await;
            }
            Ok(Action::AwaitChange)
        }
        Verdict::EvictAt(due) if due > now => {
            ctx.waiting.lock().entry(key).or_insert(now);
            let left = kubemock_apimachinery::time::until(now, due);
            Ok(Action::RequeueAfter(left))
        }
        Verdict::EvictAt(_) => {
            evict(&ctx, &key, &pod, now).await?;
            ctx.waiting.lock().remove(&key);
            Ok(Action::AwaitChange)
        }
    }
}

/// Upstream's event when a scheduled deletion is cancelled (the taints went, or are now
/// tolerated forever).
async fn cancelled(ctx: &Context, key: &ObjectKey) {
    let reference = pod_reference(key);
    let message = format!("Cancelling deletion of Pod {}", qualified(key));
    ctx.recorder
        .publish(
            &reference,
            EventType::Normal,
            "TaintManagerEviction",
            &message,
        )
        .await;
}

/// Marks the pod `DisruptionTarget` and deletes it (upstream `addConditionAndDeletePod`),
/// with upstream's event first.
async fn evict(ctx: &Context, key: &ObjectKey, pod: &Pod, now: Timestamp) -> Result<()> {
    let reference = pod_reference(key);
    let message = format!("Marking for deletion Pod {}", qualified(key));
    ctx.recorder
        .publish(
            &reference,
            EventType::Normal,
            "TaintManagerEviction",
            &message,
        )
        .await;
    let namespace = key.namespace.clone().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let mut updated = pod.clone();
    let status = updated.status.get_or_insert_with(Default::default);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let wanted = PodCondition {
        type_: DISRUPTION_TARGET.to_owned(),
        status: "True".to_owned(),
        reason: Some(REASON.to_owned()),
        message: Some(MESSAGE.to_owned()),
        last_transition_time: Some(Time(now)),
        ..PodCondition::default()
    };
    let same = |c: &PodCondition| {
        c.status == wanted.status && c.reason == wanted.reason && c.message == wanted.message
    };
    match conditions.iter_mut().find(|c| c.type_ == DISRUPTION_TARGET) {
        Some(current) if same(current) => {}
        Some(current) => *current = wanted,
        None => conditions.push(wanted),
    }
    if updated.status != pod.status {
        match api
            .replace_status(&key.name, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => {}
            Err(err) if err.is_not_found() => return Ok(()),
            Err(err) => return Err(err.into()),
        }
    }
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: pod.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(&key.name, &params).await {
        Ok(_) => {
            tracing::info!(pod = %key, "deleted a pod for an untolerated NoExecute taint");
            Ok(())
        }
        Err(err) if err.is_not_found() || err.is_conflict() => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// `namespace/name`, as upstream's `NamespacedName.String()`.
fn qualified(key: &ObjectKey) -> String {
    format!(
        "{}/{}",
        key.namespace.as_deref().unwrap_or_default(),
        key.name
    )
}

/// The reference upstream's events name: the pod by namespace and name.
fn pod_reference(key: &ObjectKey) -> k8s_openapi::api::core::v1::ObjectReference {
    k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("Pod".to_owned()),
        name: Some(key.name.clone()),
        namespace: key.namespace.clone(),
        ..Default::default()
    }
}
