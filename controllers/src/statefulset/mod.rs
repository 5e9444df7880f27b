//! The StatefulSet controller (kube-controller-manager's `statefulset-controller`): pods
//! with stable identities `<set>-<ordinal>`, each with its own claims from the volume claim
//! templates, created in order and removed in reverse order (`OrderedReady`) or all at once
//! (`Parallel`); the template's history as ControllerRevisions; rolling updates from the
//! highest ordinal down to the partition within maxUnavailable, or `OnDelete`; the claim
//! retention policy through ownerReferences the garbage collector acts on; and the status
//! `kubectl rollout status` reads.
//!
//! Pods are found by name and claimed by selector; no expectations are kept (as upstream):
//! names are fixed, so a create the cache has not shown yet fails with AlreadyExists and a
//! delete carries the pod's uid, and either way the sync is simply retried.

pub mod control;
pub mod history;
mod sync;
pub mod utils;

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kubemock_client::controller::controller_of;
use kubemock_client::events::Recorder;
use kubemock_client::{
    ApiResource, Client, Controller, InformerFactory, ObjectKey, Resource, Selector,
    SharedInformer, Store,
};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;

/// Concurrent StatefulSet syncs (kube-controller-manager's
/// `--concurrent-statefulset-syncs`).
const WORKERS: usize = 5;

/// What a sync reads and writes with.
pub(crate) struct Context {
    pub(crate) client: Client,
    pub(crate) sets: Store<StatefulSet>,
    pub(crate) pods: Store<Pod>,
    pub(crate) revisions: Store<ControllerRevision>,
    pub(crate) claims: Store<PersistentVolumeClaim>,
    pub(crate) recorder: Recorder,
    /// Where the controller reads the time (availability after `minReadySeconds`, deadlines).
    pub(crate) clock: Clock,
}

/// The StatefulSet controller.
pub struct StatefulSetController {
    client: Client,
    sets: SharedInformer<StatefulSet>,
    pods: SharedInformer<Pod>,
    revisions: SharedInformer<ControllerRevision>,
    claims: SharedInformer<PersistentVolumeClaim>,
    clock: Clock,
}

impl StatefulSetController {
    /// A controller on `factory`'s shared StatefulSet, Pod, ControllerRevision and
    /// PersistentVolumeClaim informers.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        StatefulSetController {
            client,
            sets: factory.informer::<StatefulSet>(),
            pods: factory.informer::<Pod>(),
            revisions: factory.informer::<ControllerRevision>(),
            claims: factory.informer::<PersistentVolumeClaim>(),
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
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            sets: self.sets.store(),
            pods: self.pods.store(),
            revisions: self.revisions.store(),
            claims: self.claims.store(),
            recorder: Recorder::new(self.client.clone(), "statefulset-controller")
                .with_clock(self.clock.clone()),
            clock: self.clock.clone(),
        });
        let sets = self.sets.store();
        let owner = ApiResource::of::<StatefulSet>();
        let controller = Controller::new("statefulset", self.sets)
            .workers(WORKERS)
            .watches(&self.pods, move |pod: &Pod| owners_of(&sets, pod))
            .owns(&self.revisions, &owner)
            .owns(&self.claims, &owner);
        // A fake clock that moves makes every object due for a look: what waits for a time
        // (availability, deadlines) is requeued "after" real time otherwise.
        let clock_moves = crate::clock::requeue_all_on_moves(
            self.clock.clone(),
            token.clone(),
            controller.queue(),
            ctx.sets.clone(),
        );
        let run = controller.run(
            move |key| sync::sync(key, ctx.clone()),
            crate::error::error_policy,
            token,
        );
        tokio::join!(run, clock_moves);
    }
}

/// The StatefulSets a change of `pod` concerns (upstream `addPod`/`updatePod`/`deletePod`):
/// its controller, or for an orphan every set of its namespace that selects it.
fn owners_of(sets: &Store<StatefulSet>, pod: &Pod) -> Vec<ObjectKey> {
    let namespace = pod.metadata.namespace.as_deref();
    if let Some(owner) = controller_of(&pod.metadata) {
        if owner.kind != "StatefulSet" || !owner.api_version.starts_with("apps/") {
            return Vec::new();
        }
        if let Some(set) = sets.get_by(namespace, &owner.name)
            && set.metadata.uid.as_deref() != Some(owner.uid.as_str())
        {
            return Vec::new(); // a set of that name, but not the owner
        }
        return vec![ObjectKey::new(namespace, &owner.name)];
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    sets.list_namespace(namespace.unwrap_or_default())
        .iter()
        .filter(|set| {
            let Some(selector) = set.spec.as_ref().map(|s| &s.selector) else {
                return false;
            };
            let empty = selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
                && selector
                    .match_expressions
                    .as_ref()
                    .is_none_or(|e| e.is_empty());
            !empty && Selector::from_label_selector(selector).is_ok_and(|s| s.matches(&labels))
        })
        .map(|set| set.key())
        .collect()
}
