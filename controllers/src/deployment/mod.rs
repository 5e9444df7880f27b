//! The Deployment controller (issue 6 item 2): a ReplicaSet per pod template (named
//! `{deployment}-{pod-template-hash}`), revisions, RollingUpdate within maxSurge and
//! maxUnavailable, Recreate, proportional scaling mid-rollout, pause and resume, rollback
//! (`kubectl rollout undo` writes an old template back: its ReplicaSet becomes the new one
//! with the next revision), revisionHistoryLimit cleanup, and the Available and Progressing
//! conditions with the real reasons, including progressDeadlineSeconds.

mod sync;
pub mod util;

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kubemock_client::controller::controller_of;
use kubemock_client::events::Recorder;
use kubemock_client::informer::Handlers;
use kubemock_client::{
    ApiResource, Client, Controller, InformerFactory, ObjectKey, Resource, Selector,
    SharedInformer, Store,
};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;

/// Concurrent Deployment syncs (kube-controller-manager's `--concurrent-deployment-syncs`).
const WORKERS: usize = 5;

/// What a sync needs.
pub(crate) struct Context {
    pub(crate) client: Client,
    pub(crate) deployments: Store<Deployment>,
    pub(crate) replicasets: Store<ReplicaSet>,
    pub(crate) pods: Store<Pod>,
    pub(crate) recorder: Recorder,
    /// Where the controller reads the time (availability after `minReadySeconds`, deadlines).
    pub(crate) clock: Clock,
}

/// The Deployment controller.
pub struct DeploymentController {
    client: Client,
    deployments: SharedInformer<Deployment>,
    replicasets: SharedInformer<ReplicaSet>,
    pods: SharedInformer<Pod>,
    clock: Clock,
}

impl DeploymentController {
    /// A controller on `factory`'s shared Deployment, ReplicaSet and Pod informers.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        DeploymentController {
            client,
            deployments: factory.informer::<Deployment>(),
            replicasets: factory.informer::<ReplicaSet>(),
            pods: factory.informer::<Pod>(),
            clock: Clock::system(),
        }
    }

    /// Reads the time from `clock` (the system clock by default): progressDeadlineSeconds and minReadySeconds expire as
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
            deployments: self.deployments.store(),
            replicasets: self.replicasets.store(),
            pods: self.pods.store(),
            recorder: Recorder::new(self.client.clone(), "deployment-controller")
                .with_clock(self.clock.clone()),
            clock: self.clock.clone(),
        });
        let deployments = self.deployments.store();
        let controller = Controller::new("deployment", self.deployments)
            .workers(WORKERS)
            // ReplicaSets map to their controller, or (orphans) to every Deployment selecting them.
            .watches(&self.replicasets, move |rs: &ReplicaSet| {
                owners_of(&deployments, rs)
            });
        // A deleted pod may let a Recreate rollout proceed (upstream `deletePod`).
        let queue = controller.queue();
        let replicasets = self.replicasets.store();
        self.pods
            .add_handler(Handlers::new().on_delete(move |pod: &Arc<Pod>| {
                let Some(owner) = controller_of(&pod.metadata) else {
                    return;
                };
                if owner.kind != "ReplicaSet" {
                    return;
                }
                let Some(rs) = replicasets.get_by(pod.metadata.namespace.as_deref(), &owner.name)
                else {
                    return;
                };
                if let Some(d) = controller_of(&rs.metadata).filter(|d| d.kind == "Deployment") {
                    queue.add(ObjectKey::new(pod.metadata.namespace.as_deref(), &d.name));
                }
            }));
        let controller = controller.watches(&self.pods, |_: &Pod| Vec::new());
        // A fake clock that moves makes every object due for a look: what waits for a time
        // (availability, deadlines) is requeued "after" real time otherwise.
        let clock_moves = crate::clock::requeue_all_on_moves(
            self.clock.clone(),
            token.clone(),
            controller.queue(),
            ctx.deployments.clone(),
        );
        let run = controller.run(
            move |key| sync::sync(key, ctx.clone()),
            crate::error::error_policy,
            token,
        );
        tokio::join!(run, clock_moves);
    }
}

/// The Deployments a change of `rs` concerns.
fn owners_of(deployments: &Store<Deployment>, rs: &ReplicaSet) -> Vec<ObjectKey> {
    let namespace = rs.metadata.namespace.as_deref();
    if let Some(owner) = controller_of(&rs.metadata) {
        let deployment = ApiResource::of::<Deployment>();
        if owner.kind != deployment.kind || !owner.api_version.starts_with("apps/") {
            return Vec::new();
        }
        return vec![ObjectKey::new(namespace, &owner.name)];
    }
    let labels = rs.metadata.labels.clone().unwrap_or_default();
    deployments
        .list_namespace(namespace.unwrap_or_default())
        .iter()
        .filter(|d| {
            d.spec
                .as_ref()
                .and_then(|s| Selector::from_label_selector(&s.selector).ok())
                .is_some_and(|selector| selector.matches(&labels))
        })
        .map(|d| d.key())
        .collect()
}
