//! The ReplicaSet controller (issue 6 item 1): keeps `spec.replicas` pods with a controller
//! reference to each ReplicaSet, adopting matching orphans and releasing pods that no longer
//! match; creates in slow-start batches and deletes the least valuable pods first; never
//! resizes again before the informer has shown its last creations and deletions
//! (expectations); and reports replicas, fullyLabeledReplicas, readyReplicas,
//! availableReplicas, observedGeneration and the `ReplicaFailure` condition.

mod expectations;
pub mod pods;
mod sync;

pub use expectations::{EXPECTATIONS_TTL, Expectations};

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kubemock_client::controller::controller_of;
use kubemock_client::events::Recorder;
use kubemock_client::informer::Handlers;
use kubemock_client::{
    Client, Controller, InformerFactory, ObjectKey, Resource, Selector, SharedInformer, Store,
    WorkQueue,
};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;

/// Concurrent ReplicaSet syncs (kube-controller-manager's `--concurrent-replicaset-syncs`).
const WORKERS: usize = 5;

/// At most this many pods are created or deleted in one sync (upstream `BurstReplicas`).
pub const BURST_REPLICAS: usize = 500;

/// Changes of a ReplicaSet's pods, and updates of the ReplicaSet (its own status writes
/// among them), within a window are synced together: [`POD_BATCH`], plus [`BATCH_PER_POD`]
/// for each of its pods, at most [`POD_BATCH_MAX`]. A sync reads every pod of the
/// ReplicaSet (some 2.5 µs each on the 2-core machine), so one sync per pod change costs
/// pods² over a rollout (10,000 pods becoming Ready: 10⁸ pod reads); the window growing with
/// the pods keeps the syncs of one ReplicaSet to a few percent of a core.
/// kube-controller-manager enqueues each change, but is held back by its client's QPS limit,
/// which it writes each status under. Changes that complete the expected creations or
/// deletions of a step sync at once: the next step never waits.
pub const POD_BATCH: Duration = Duration::from_millis(50);

/// What each pod of a ReplicaSet adds to its batching window.
pub const BATCH_PER_POD: Duration = Duration::from_micros(50);

/// The longest batching window (a ReplicaSet of 20,000 pods or more).
pub const POD_BATCH_MAX: Duration = Duration::from_secs(1);

/// The batching window of a ReplicaSet whose status counts `replicas` pods.
fn batch_window(replicas: i32) -> Duration {
    let pods = u32::try_from(replicas).unwrap_or(0);
    (POD_BATCH + BATCH_PER_POD * pods).min(POD_BATCH_MAX)
}

/// The batching window of the ReplicaSet `rs`.
fn batch_window_of(rs: &ReplicaSet) -> Duration {
    batch_window(rs.status.as_ref().map_or(0, |s| s.replicas))
}

/// The batching window of an update of a ReplicaSet from `old` to `new`: `None` (sync at
/// once) when its spec (the generation) or its deletion changed, so that scaling never waits
/// for a window; status-only updates (the controller's own writes coming back) are batched.
fn update_window(old: &ReplicaSet, new: &ReplicaSet) -> Option<Duration> {
    let changed = old.metadata.generation != new.metadata.generation
        || old.metadata.deletion_timestamp != new.metadata.deletion_timestamp;
    (!changed).then(|| batch_window_of(new))
}

/// What a sync needs.
pub(crate) struct Context {
    pub(crate) client: Client,
    pub(crate) replicasets: Store<ReplicaSet>,
    pub(crate) pods: Store<Pod>,
    pub(crate) expectations: Arc<Expectations>,
    pub(crate) recorder: Recorder,
    /// Where the controller reads the time (availability after `minReadySeconds`, deadlines).
    pub(crate) clock: Clock,
}

/// The ReplicaSet controller.
pub struct ReplicaSetController {
    client: Client,
    replicasets: SharedInformer<ReplicaSet>,
    pods: SharedInformer<Pod>,
    clock: Clock,
}

impl ReplicaSetController {
    /// A controller on `factory`'s shared ReplicaSet and Pod informers.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        ReplicaSetController {
            client,
            replicasets: factory.informer::<ReplicaSet>(),
            pods: factory.informer::<Pod>(),
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
            replicasets: self.replicasets.store(),
            pods: self.pods.store(),
            expectations: expectations.clone(),
            recorder: Recorder::new(self.client.clone(), "replicaset-controller")
                .with_clock(self.clock.clone()),
            clock: self.clock.clone(),
        });
        crate::podindex::index_by_controller(&ctx.pods);
        let replicasets = self.replicasets.store();
        let windows = self.replicasets.store();
        // Pods map to their controller, or (orphans) to every ReplicaSet that selects them.
        // Its own status writes come back as updates: synced with the pod changes.
        let controller = Controller::new("replicaset", self.replicasets)
            .workers(WORKERS)
            .batch_updates(update_window);
        let controller = controller.watches_batched(
            &self.pods,
            move |pod: &Pod| owners_of(&replicasets, pod),
            move |key: &ObjectKey| {
                windows
                    .get(key)
                    .map_or(POD_BATCH, |rs| batch_window_of(&rs))
            },
        );
        observe_expectations(
            &self.pods,
            controller.queue(),
            ctx.replicasets.clone(),
            expectations,
        );
        // A fake clock that moves makes every object due for a look: what waits for a time
        // (availability, deadlines) is requeued "after" real time otherwise.
        let clock_moves = crate::clock::requeue_all_on_moves(
            self.clock.clone(),
            token.clone(),
            controller.queue(),
            ctx.replicasets.clone(),
        );
        let run = controller.run(
            move |key| sync::sync(key, ctx.clone()),
            crate::error::error_policy,
            token,
        );
        tokio::join!(run, clock_moves);
    }
}

/// The ReplicaSet controlling `pod` (by name; its uid checked when cached).
fn controlling_replicaset(replicasets: &Store<ReplicaSet>, pod: &Pod) -> Option<ObjectKey> {
    let owner = controller_of(&pod.metadata)?;
    if owner.kind != "ReplicaSet" || !owner.api_version.starts_with("apps/") {
        return None;
    }
    let namespace = pod.metadata.namespace.as_deref();
    if let Some(rs) = replicasets.get_by(namespace, &owner.name)
        && rs.metadata.uid.as_deref() != Some(owner.uid.as_str())
    {
        return None; // a ReplicaSet of that name, but not the owner
    }
    Some(ObjectKey::new(namespace, &owner.name))
}

/// The ReplicaSets a change of `pod` concerns: its controller, or for an orphan every
/// ReplicaSet of its namespace that selects it (to adopt it).
fn owners_of(replicasets: &Store<ReplicaSet>, pod: &Pod) -> Vec<ObjectKey> {
    if controller_of(&pod.metadata).is_some() {
        return controlling_replicaset(replicasets, pod)
            .into_iter()
            .collect();
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    replicasets
        .list_namespace(&namespace)
        .iter()
        .filter(|rs| {
            rs.spec
                .as_ref()
                .and_then(|s| Selector::from_label_selector(&s.selector).ok())
                .is_some_and(|selector| !selector_is_empty(&rs.spec) && selector.matches(&labels))
        })
        .map(|rs| rs.key())
        .collect()
}

/// An empty selector selects nothing for a controller (upstream refuses to adopt with it).
fn selector_is_empty(spec: &Option<k8s_openapi::api::apps::v1::ReplicaSetSpec>) -> bool {
    spec.as_ref().is_none_or(|s| {
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

/// Records observed creations and deletions of pods (upstream `addPod`, `updatePod`,
/// `deletePod`), then queues the owner so that it syncs with the expectation met.
fn observe_expectations(
    pods: &SharedInformer<Pod>,
    queue: WorkQueue<ObjectKey>,
    replicasets: Store<ReplicaSet>,
    expectations: Arc<Expectations>,
) {
    let (q1, q2, q3) = (queue.clone(), queue.clone(), queue);
    let (r1, r2, r3) = (replicasets.clone(), replicasets.clone(), replicasets);
    let (e1, e2, e3) = (expectations.clone(), expectations.clone(), expectations);
    pods.add_handler(
        Handlers::new()
            .on_add(move |pod: &Arc<Pod>| {
                let Some(owner) = controlling_replicaset(&r1, pod) else {
                    return;
                };
                let waited = !e1.satisfied(&owner);
                if pod.metadata.deletion_timestamp.is_some() {
                    e1.deletion_observed(&owner, &pod.key());
                } else {
                    e1.creation_observed(&owner);
                }
                queue_observed(&q1, &r1, &e1, owner, waited);
            })
            .on_update(move |old: &Arc<Pod>, new: &Arc<Pod>| {
                // A graceful deletion counts when it starts, not when the kubelet ends it.
                if old.metadata.deletion_timestamp.is_none()
                    && new.metadata.deletion_timestamp.is_some()
                    && let Some(owner) = controlling_replicaset(&r2, new)
                {
                    let waited = !e2.satisfied(&owner);
                    e2.deletion_observed(&owner, &new.key());
                    queue_observed(&q2, &r2, &e2, owner, waited);
                }
            })
            .on_delete(move |pod: &Arc<Pod>| {
                let Some(owner) = controlling_replicaset(&r3, pod) else {
                    return;
                };
                let waited = !e3.satisfied(&owner);
                e3.deletion_observed(&owner, &pod.key());
                queue_observed(&q3, &r3, &e3, owner, waited);
            }),
    );
}

/// Queues `owner` after an observed creation or deletion: at once when that met the
/// expectations it `waited` on (the next step of a slow start goes now), else with its other
/// pod changes.
fn queue_observed(
    queue: &WorkQueue<ObjectKey>,
    replicasets: &Store<ReplicaSet>,
    expectations: &Expectations,
    owner: ObjectKey,
    waited: bool,
) {
    if waited && expectations.satisfied(&owner) {
        queue.add(owner);
    } else {
        let window = replicasets
            .get(&owner)
            .map_or(POD_BATCH, |rs| batch_window_of(&rs));
        queue.add_batched(owner, window);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batching_window_grows_with_the_pods_up_to_a_second() {
        assert_eq!(batch_window(0), POD_BATCH);
        assert_eq!(batch_window(-3), POD_BATCH);
        assert_eq!(batch_window(1_000), Duration::from_millis(100));
        assert_eq!(batch_window(10_000), Duration::from_millis(550));
        assert_eq!(batch_window(100_000), POD_BATCH_MAX);
    }

    #[test]
    fn spec_changes_and_deletion_sync_at_once_status_updates_are_batched() {
        use k8s_openapi::api::apps::v1::ReplicaSetStatus;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
        let old = ReplicaSet {
            metadata: ObjectMeta {
                generation: Some(1),
                ..ObjectMeta::default()
            },
            status: Some(ReplicaSetStatus {
                replicas: 1_000,
                ..ReplicaSetStatus::default()
            }),
            ..ReplicaSet::default()
        };
        let mut status_only = old.clone();
        if let Some(status) = status_only.status.as_mut() {
            status.ready_replicas = Some(10);
        }
        assert_eq!(
            update_window(&old, &status_only),
            Some(Duration::from_millis(100))
        );
        let mut scaled = old.clone();
        scaled.metadata.generation = Some(2);
        assert_eq!(update_window(&old, &scaled), None);
        let mut deleted = old.clone();
        deleted.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(update_window(&old, &deleted), None);
    }
}
