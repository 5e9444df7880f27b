//! The DaemonSet controller (kube-controller-manager's `daemonset-controller`): one pod per
//! eligible node (nodeSelector, required node affinity, taints against the pod's tolerations
//! plus the ones every daemon pod gets), created for the scheduler to bind through a
//! `metadata.name` node affinity; pods on nodes that no longer want them, excess and
//! finished pods deleted; a ControllerRevision per template (`<ds>-<hash>`) and the
//! `controller-revision-hash` / `pod-template-generation` labels; RollingUpdate
//! (maxUnavailable, maxSurge) and OnDelete updates; the status `kubectl rollout status`
//! reads. Pods are the DaemonSet's by controller reference (adopted and released by
//! selector); expectations prevent duplicate creates.
//!
//! One deviation: upstream leaves pods bound to a deleted node to the pod GC controller
//! (`podgc`), which kubemock does not have; this controller force-deletes its own.

mod backoff;
mod history;
mod sync;
pub mod util;

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use kubemock_client::controller::controller_of;
use kubemock_client::events::Recorder;
use kubemock_client::informer::Handlers;
use kubemock_client::{
    ApiResource, Client, Controller, InformerFactory, ObjectKey, Resource, Selector,
    SharedInformer, Store, WorkQueue,
};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;

use crate::replicaset::Expectations;

/// Concurrent DaemonSet syncs (kube-controller-manager's `--concurrent-daemonset-syncs`).
const WORKERS: usize = 2;

/// At most this many pods are created or deleted in one sync (upstream `BurstReplicas`).
const BURST_REPLICAS: usize = 250;

/// What a sync needs.
pub(crate) struct Context {
    pub(crate) client: Client,
    pub(crate) daemonsets: Store<DaemonSet>,
    pub(crate) pods: Store<Pod>,
    pub(crate) nodes: Store<Node>,
    pub(crate) revisions: Store<ControllerRevision>,
    pub(crate) expectations: Arc<Expectations>,
    pub(crate) backoff: backoff::Backoff,
    pub(crate) recorder: Recorder,
    /// Where the controller reads the time (availability after `minReadySeconds`, deadlines).
    pub(crate) clock: Clock,
}

/// The DaemonSet controller.
pub struct DaemonSetController {
    client: Client,
    daemonsets: SharedInformer<DaemonSet>,
    pods: SharedInformer<Pod>,
    nodes: SharedInformer<Node>,
    revisions: SharedInformer<ControllerRevision>,
    clock: Clock,
}

impl DaemonSetController {
    /// A controller on `factory`'s shared DaemonSet, Pod, Node and ControllerRevision
    /// informers.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        DaemonSetController {
            client,
            daemonsets: factory.informer::<DaemonSet>(),
            pods: factory.informer::<Pod>(),
            nodes: factory.informer::<Node>(),
            revisions: factory.informer::<ControllerRevision>(),
            clock: Clock::system(),
        }
    }

    /// Reads the time from `clock` (the system clock by default): minReadySeconds expire as
    /// it moves.
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let expectations = Arc::new(Expectations::default());
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            daemonsets: self.daemonsets.store(),
            pods: self.pods.store(),
            nodes: self.nodes.store(),
            revisions: self.revisions.store(),
            expectations: expectations.clone(),
            backoff: backoff::Backoff::default(),
            recorder: Recorder::new(self.client.clone(), "daemonset-controller")
                .with_clock(self.clock.clone()),
            clock: self.clock.clone(),
        });
        let (for_pods, for_nodes) = (self.daemonsets.store(), self.daemonsets.store());
        // Pods map to their controller, or (orphans) to every DaemonSet selecting them; any
        // node change may change where daemons should run, so it concerns every DaemonSet.
        let controller = Controller::new("daemonset", self.daemonsets)
            .workers(WORKERS)
            .owns(&self.revisions, &ApiResource::of::<DaemonSet>())
            .watches(&self.pods, move |pod: &Pod| owners_of(&for_pods, pod))
            .watches(&self.nodes, move |_: &Node| {
                for_nodes.list().iter().map(|ds| ds.key()).collect()
            });
        observe_expectations(
            &self.pods,
            controller.queue(),
            ctx.daemonsets.clone(),
            expectations,
        );
        // A fake clock that moves makes every object due for a look: what waits for a time
        // (availability, deadlines) is requeued "after" real time otherwise.
        let clock_moves = crate::clock::requeue_all_on_moves(
            self.clock.clone(),
            token.clone(),
            controller.queue(),
            ctx.daemonsets.clone(),
        );
        let run = controller.run(
            move |key| sync::sync(key, ctx.clone()),
            crate::error::error_policy,
            token,
        );
        tokio::join!(run, clock_moves);
    }
}

/// The DaemonSet controlling `pod` (by name; its uid checked when cached).
fn controlling_daemonset(daemonsets: &Store<DaemonSet>, pod: &Pod) -> Option<ObjectKey> {
    let owner = controller_of(&pod.metadata)?;
    if owner.kind != "DaemonSet" || !owner.api_version.starts_with("apps/") {
        return None;
    }
    let namespace = pod.metadata.namespace.as_deref();
    if let Some(ds) = daemonsets.get_by(namespace, &owner.name)
        && ds.metadata.uid.as_deref() != Some(owner.uid.as_str())
    {
        return None; // a DaemonSet of that name, but not the owner
    }
    Some(ObjectKey::new(namespace, &owner.name))
}

/// Whether a selector selects nothing for a controller (upstream refuses to act on it).
pub(crate) fn selector_is_empty(ds: &DaemonSet) -> bool {
    ds.spec.as_ref().is_none_or(|s| {
        s.selector
            .match_labels
            .as_ref()
            .is_none_or(|m| m.is_empty())
            && s.selector
                .match_expressions
                .as_ref()
                .is_none_or(|e| e.is_empty())
    })
}

/// The DaemonSets a change of `pod` concerns: its controller, or for an orphan every
/// DaemonSet of its namespace that selects it (to adopt it).
fn owners_of(daemonsets: &Store<DaemonSet>, pod: &Pod) -> Vec<ObjectKey> {
    if controller_of(&pod.metadata).is_some() {
        return controlling_daemonset(daemonsets, pod).into_iter().collect();
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    daemonsets
        .list_namespace(&namespace)
        .iter()
        .filter(|ds| {
            !selector_is_empty(ds)
                && ds
                    .spec
                    .as_ref()
                    .and_then(|s| Selector::from_label_selector(&s.selector).ok())
                    .is_some_and(|selector| selector.matches(&labels))
        })
        .map(|ds| ds.key())
        .collect()
}

/// Records observed creations and deletions of daemon pods (upstream `addPod`, `updatePod`,
/// `deletePod`), then queues the owner so that it syncs with the expectation met.
fn observe_expectations(
    pods: &SharedInformer<Pod>,
    queue: WorkQueue<ObjectKey>,
    daemonsets: Store<DaemonSet>,
    expectations: Arc<Expectations>,
) {
    let (q1, q2, q3) = (queue.clone(), queue.clone(), queue);
    let (d1, d2, d3) = (daemonsets.clone(), daemonsets.clone(), daemonsets);
    let (e1, e2, e3) = (expectations.clone(), expectations.clone(), expectations);
    pods.add_handler(
        Handlers::new()
            .on_add(move |pod: &Arc<Pod>| {
                let Some(owner) = controlling_daemonset(&d1, pod) else {
                    return;
                };
                if pod.metadata.deletion_timestamp.is_some() {
                    e1.deletion_observed(&owner, &pod.key());
                } else {
                    e1.creation_observed(&owner);
                }
                q1.add(owner);
            })
            .on_update(move |old: &Arc<Pod>, new: &Arc<Pod>| {
                // A graceful deletion counts when it starts, not when the kubelet ends it.
                if old.metadata.deletion_timestamp.is_none()
                    && new.metadata.deletion_timestamp.is_some()
                    && let Some(owner) = controlling_daemonset(&d2, new)
                {
                    e2.deletion_observed(&owner, &new.key());
                    q2.add(owner);
                }
            })
            .on_delete(move |pod: &Arc<Pod>| {
                let Some(owner) = controlling_daemonset(&d3, pod) else {
                    return;
                };
                e3.deletion_observed(&owner, &pod.key());
                q3.add(owner);
            }),
    );
}
