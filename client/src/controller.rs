//! The controller runtime: informers feed keys into a rate-limited work queue, N workers take
//! keys and call a level-triggered `reconcile(key)`, and its result decides what happens to
//! the key (the sample-controller loop). Owned objects map to their controller owner's key;
//! a conflict or any other error is retried rate-limited.
//!
//! Also the helpers every reconcile needs: ownerReferences, finalizers, and status updates
//! that tolerate conflicts.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::api::Api;
use crate::error::{Error, Result};
use crate::informer::{Handlers, SharedInformer};
use crate::request::PostParams;
use crate::resource::{ApiResource, ObjectKey, Resource, TypedResource};
use crate::workqueue::WorkQueue;

/// What to do with a key after its reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Done until something changes (the key's failures are forgotten).
    AwaitChange,
    /// Reconcile again after the rate limiter's delay.
    Requeue,
    /// Reconcile again after this long (failures forgotten on success).
    RequeueAfter(Duration),
}

impl Action {
    /// Done until something changes.
    pub fn await_change() -> Self {
        Action::AwaitChange
    }
    /// Reconcile again, rate-limited.
    pub fn requeue() -> Self {
        Action::Requeue
    }
    /// Reconcile again after `delay`.
    pub fn requeue_after(delay: Duration) -> Self {
        Action::RequeueAfter(delay)
    }
}

/// Default number of concurrent workers (client-go controllers commonly run 1–5).
pub const DEFAULT_WORKERS: usize = 2;

type WaitSync = Box<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;
type Register = Box<dyn FnOnce(&WorkQueue<ObjectKey>) + Send>;
type BatchWindow<K> = Arc<dyn Fn(&K, &K) -> Option<Duration> + Send + Sync>;

/// A controller of the primary kind `K`.
pub struct Controller<K> {
    name: String,
    primary: SharedInformer<K>,
    queue: WorkQueue<ObjectKey>,
    workers: usize,
    resync: Option<Duration>,
    /// The window within which updates of a primary object are synced together (`None`:
    /// each at once).
    batch_updates: Option<BatchWindow<K>>,
    /// Handler registrations of secondary sources, run at `run`.
    sources: Vec<Register>,
    /// Sync waits of every informer the controller reads.
    syncs: Vec<WaitSync>,
}

impl<K: Resource> Controller<K> {
    /// A controller named `name` (for logs) of the objects of `primary`.
    pub fn new(name: &str, primary: SharedInformer<K>) -> Self {
        let sync = primary.clone();
        Controller {
            name: name.to_owned(),
            primary,
            queue: WorkQueue::new(),
            workers: DEFAULT_WORKERS,
            resync: None,
            batch_updates: None,
            sources: Vec::new(),
            syncs: vec![Box::new(move || {
                let sync = sync.clone();
                async move { sync.wait_for_sync().await }.boxed()
            })],
        }
    }

    /// Sets the number of concurrent workers.
    #[must_use]
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// Reconciles every primary object every `period` too.
    #[must_use]
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Syncs the updates of a primary object made within `window(old, new)` together
    /// ([`WorkQueue::add_batched`]); an update for which `window` gives `None` (a change of
    /// spec, say), additions and deletions still sync at once. For a controller whose every
    /// sync is costly and writes the object's status, which comes back as an update (the
    /// ReplicaSet controller): without it, those updates chain syncs back to back.
    #[must_use]
    pub fn batch_updates(
        mut self,
        window: impl Fn(&K, &K) -> Option<Duration> + Send + Sync + 'static,
    ) -> Self {
        self.batch_updates = Some(Arc::new(window));
        self
    }

    /// Watches objects of kind `C` owned by primary objects: a change to one queues the key
    /// of its controller owner (an ownerReference with `controller: true` whose kind and
    /// group are the primary's).
    #[must_use]
    pub fn owns<C: Resource>(self, owned: &SharedInformer<C>, primary: &ApiResource) -> Self {
        let kind = primary.kind.clone();
        let group = primary.group.clone();
        let namespaced = primary.namespaced;
        self.watches(owned, move |obj: &C| {
            controller_of(obj.meta())
                .filter(|owner| owner.kind == kind && group_of(&owner.api_version) == group)
                .map(|owner| {
                    let namespace = if namespaced {
                        obj.meta().namespace.as_deref()
                    } else {
                        None
                    };
                    ObjectKey::new(namespace, &owner.name)
                })
                .into_iter()
                .collect()
        })
    }

    /// Watches objects of kind `C`: a change to one queues the keys `map` returns.
    #[must_use]
    pub fn watches<C: Resource>(
        self,
        informer: &SharedInformer<C>,
        map: impl Fn(&C) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        self.watches_with(informer, map, |queue, key| queue.add(key))
    }

    /// Watches objects of kind `C` whose changes come in bursts: a change to one queues the
    /// keys `map` returns once `window(key)` has passed, together with the changes made
    /// meanwhile ([`WorkQueue::add_batched`]).
    #[must_use]
    pub fn watches_batched<C: Resource>(
        self,
        informer: &SharedInformer<C>,
        map: impl Fn(&C) -> Vec<ObjectKey> + Send + Sync + 'static,
        window: impl Fn(&ObjectKey) -> Duration + Send + Sync + 'static,
    ) -> Self {
        self.watches_with(informer, map, move |queue, key| {
            let wait = window(&key);
            queue.add_batched(key, wait);
        })
    }

    fn watches_with<C: Resource>(
        mut self,
        informer: &SharedInformer<C>,
        map: impl Fn(&C) -> Vec<ObjectKey> + Send + Sync + 'static,
        enqueue: impl Fn(&WorkQueue<ObjectKey>, ObjectKey) + Send + Sync + 'static,
    ) -> Self {
        let map = Arc::new(map);
        let enqueue = Arc::new(enqueue);
        let source = informer.clone();
        self.sources
            .push(Box::new(move |queue: &WorkQueue<ObjectKey>| {
                let (q1, q2, q3) = (queue.clone(), queue.clone(), queue.clone());
                let (m1, m2, m3) = (map.clone(), map.clone(), map);
                let (e1, e2, e3) = (enqueue.clone(), enqueue.clone(), enqueue);
                source.add_handler(
                    Handlers::new()
                        .on_add(move |obj: &Arc<C>| m1(obj).into_iter().for_each(|k| e1(&q1, k)))
                        .on_update(move |old: &Arc<C>, new: &Arc<C>| {
                            if old.resource_version() == new.resource_version() {
                                return; // a resync of a secondary object changes nothing
                            }
                            let mut keys = m2(old);
                            keys.extend(m2(new));
                            keys.dedup();
                            keys.into_iter().for_each(|k| e2(&q2, k));
                        })
                        .on_delete(move |obj: &Arc<C>| {
                            m3(obj).into_iter().for_each(|k| e3(&q3, k))
                        }),
                );
            }));
        let sync = informer.clone();
        self.syncs.push(Box::new(move || {
            let sync = sync.clone();
            async move { sync.wait_for_sync().await }.boxed()
        }));
        self
    }

    /// The controller's queue (to queue keys from elsewhere).
    pub fn queue(&self) -> WorkQueue<ObjectKey> {
        self.queue.clone()
    }

    /// Runs until `token` is cancelled: waits for the caches, then reconciles with
    /// `workers` workers. `error_policy` decides what a failed reconcile leads to
    /// ([`default_error_policy`]: a rate-limited retry). On cancellation, the queue shuts down
    /// and the reconciles in flight finish before this returns. The informers themselves are
    /// run by their owner (an [`crate::InformerFactory`]).
    pub async fn run<F, Fut, E, P>(self, reconcile: F, error_policy: P, token: CancellationToken)
    where
        F: Fn(ObjectKey) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: std::fmt::Display + Send + 'static,
        P: Fn(&ObjectKey, &E, u32) -> Action + Send + Sync + 'static,
    {
        let queue = self.queue.clone();
        let (qa, qu, qd) = (queue.clone(), queue.clone(), queue.clone());
        let batch_updates = self.batch_updates;
        self.primary.add_handler_with_resync(
            Handlers::new()
                .on_add(move |obj: &Arc<K>| qa.add(obj.key()))
                .on_update(move |old: &Arc<K>, new: &Arc<K>| {
                    match batch_updates.as_ref().and_then(|window| window(old, new)) {
                        Some(window) => qu.add_batched(new.key(), window),
                        None => qu.add(new.key()),
                    }
                })
                .on_delete(move |obj: &Arc<K>| qd.add(obj.key())),
            self.resync,
        );
        for register in self.sources {
            register(&queue);
        }
        let syncs: Vec<_> = self.syncs.iter().map(|wait| wait()).collect();
        tokio::select! {
            _ = token.cancelled() => {
                queue.shutdown();
                return;
            }
            _ = futures_util::future::join_all(syncs) => {}
        }
        tracing::info!(controller = %self.name, workers = self.workers, "caches synced; starting workers");
        let reconcile = Arc::new(reconcile);
        let error_policy = Arc::new(error_policy);
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..self.workers {
            let queue = queue.clone();
            let token = token.clone();
            let reconcile = reconcile.clone();
            let error_policy = error_policy.clone();
            let name = self.name.clone();
            workers.spawn(async move {
                loop {
                    let next = tokio::select! {
                        _ = token.cancelled() => break,
                        next = queue.get() => next,
                    };
                    let Some(key) = next else { break };
                    let span = tracing::debug_span!("reconcile", controller = %name, %key);
                    let result = reconcile(key.clone()).instrument(span).await;
                    match result {
                        Ok(Action::AwaitChange) => queue.forget(&key),
                        Ok(Action::Requeue) => queue.add_rate_limited(key.clone()),
                        Ok(Action::RequeueAfter(delay)) => {
                            queue.forget(&key);
                            queue.add_after(key.clone(), delay);
                        }
                        Err(err) => {
                            let retries = queue.num_requeues(&key);
                            tracing::debug!(controller = %name, %key, error = %err, retries, "reconcile failed");
                            match error_policy(&key, &err, retries) {
                                Action::AwaitChange => queue.forget(&key),
                                Action::Requeue => queue.add_rate_limited(key.clone()),
                                Action::RequeueAfter(delay) => queue.add_after(key.clone(), delay),
                            }
                        }
                    }
                    queue.done(&key);
                }
            });
        }
        token.cancelled().await;
        queue.shutdown_with_drain().await;
        while workers.join_next().await.is_some() {}
        tracing::info!(controller = %self.name, "stopped");
    }
}

/// The error policy of client-go controllers: retry rate-limited, forever.
pub fn default_error_policy<E>(_key: &ObjectKey, _err: &E, _retries: u32) -> Action {
    Action::Requeue
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// The ownerReference with `controller: true`, if any.
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// An ownerReference to `owner` (of `resource`), as its controller when `controller`; `None`
/// when the owner has no uid or name yet (not created).
pub fn owner_reference<K: Resource>(
    owner: &K,
    resource: &ApiResource,
    controller: bool,
) -> Option<OwnerReference> {
    let meta = owner.meta();
    Some(OwnerReference {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
        name: meta.name.clone()?,
        uid: meta.uid.clone()?,
        controller: controller.then_some(true),
        block_owner_deletion: controller.then_some(true),
    })
}

/// A controller ownerReference to a typed `owner`.
pub fn controller_reference<K: TypedResource>(owner: &K) -> Option<OwnerReference> {
    owner_reference(owner, &K::api_resource(), true)
}

/// Whether `obj` carries `finalizer`.
pub fn has_finalizer<K: Resource>(obj: &K, finalizer: &str) -> bool {
    obj.meta()
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizer)
}

/// Adds `finalizer` to `obj` (a PUT carrying its resourceVersion: a Conflict if `obj` is
/// stale, which means "requeue"). Returns the updated object.
pub async fn add_finalizer<K: Resource>(api: &Api<K>, obj: &K, finalizer: &str) -> Result<K> {
    if has_finalizer(obj, finalizer) {
        return Ok(obj.clone());
    }
    let mut updated = obj.clone();
    updated
        .meta_mut()
        .finalizers
        .get_or_insert_with(Vec::new)
        .push(finalizer.to_owned());
    replace_object(api, &updated).await
}

/// Removes `finalizer` from `obj` (conditional PUT, as [`add_finalizer`]). Removing the last
/// finalizer of an object being deleted deletes it (docs/api-behaviour.md#finalizers); then the answer is the final
/// state.
pub async fn remove_finalizer<K: Resource>(api: &Api<K>, obj: &K, finalizer: &str) -> Result<K> {
    if !has_finalizer(obj, finalizer) {
        return Ok(obj.clone());
    }
    let mut updated = obj.clone();
    if let Some(list) = updated.meta_mut().finalizers.as_mut() {
        list.retain(|f| f != finalizer);
    }
    replace_object(api, &updated).await
}

async fn replace_object<K: Resource>(api: &Api<K>, obj: &K) -> Result<K> {
    let name = obj.meta().name.clone().unwrap_or_default();
    match obj.meta().namespace.as_deref() {
        Some(ns) if api.namespace() != Some(ns) => {
            let scoped: Api<K> = Api::namespaced_with(api.client().clone(), ns, api.resource());
            scoped.replace(&name, &PostParams::default(), obj).await
        }
        _ => api.replace(&name, &PostParams::default(), obj).await,
    }
}

/// What a finalizer-guarded reconcile is asked to do.
#[derive(Debug)]
pub enum FinalizerEvent<K> {
    /// The object lives: bring the world in line with it.
    Apply(Arc<K>),
    /// The object is being deleted: clean up; the finalizer is removed when this succeeds.
    Cleanup(Arc<K>),
}

/// Failure of [`finalizer`].
#[derive(Debug, thiserror::Error)]
pub enum FinalizerError<E: std::error::Error + 'static> {
    /// The reconcile (apply or cleanup) failed.
    #[error("reconcile failed")]
    Reconcile(#[source] E),
    /// Adding or removing the finalizer failed.
    #[error("finalizer update failed")]
    Client(#[source] Error),
}

/// Runs `reconcile` under `finalizer` (kube-rs's pattern): an object without it gets it first
/// (and the resulting change reconciles it again); a deleted object with it is cleaned up, then
/// released; a deleted object without it needs nothing.
pub async fn finalizer<K, F, Fut, E>(
    api: &Api<K>,
    finalizer_name: &str,
    obj: Arc<K>,
    reconcile: F,
) -> Result<Action, FinalizerError<E>>
where
    K: Resource,
    F: FnOnce(FinalizerEvent<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: std::error::Error + 'static,
{
    let deleting = obj.meta().deletion_timestamp.is_some();
    let present = has_finalizer(obj.as_ref(), finalizer_name);
    match (deleting, present) {
        (false, false) => {
            add_finalizer(api, obj.as_ref(), finalizer_name)
                .await
                .map_err(FinalizerError::Client)?;
            Ok(Action::AwaitChange)
        }
        (false, true) => reconcile(FinalizerEvent::Apply(obj))
            .await
            .map_err(FinalizerError::Reconcile),
        (true, true) => {
            let action = reconcile(FinalizerEvent::Cleanup(obj.clone()))
                .await
                .map_err(FinalizerError::Reconcile)?;
            match remove_finalizer(api, obj.as_ref(), finalizer_name).await {
                Ok(_) => Ok(action),
                Err(err) if err.is_not_found() => Ok(Action::AwaitChange),
                Err(err) => Err(FinalizerError::Client(err)),
            }
        }
        (true, false) => Ok(Action::AwaitChange),
    }
}

/// Attempts of [`update_status`] (client-go's `retry.DefaultRetry`: 5).
pub const STATUS_UPDATE_ATTEMPTS: u32 = 5;
/// Wait between attempts of [`update_status`] (client-go: 10 ms, jittered).
pub const STATUS_UPDATE_BACKOFF: Duration = Duration::from_millis(10);

/// Reads `name`, applies `mutate` and writes its status; on a Conflict, reads again and
/// retries (client-go's `RetryOnConflict`). Returns the written object.
pub async fn update_status<K: Resource>(
    api: &Api<K>,
    name: &str,
    mut mutate: impl FnMut(&mut K),
) -> Result<K> {
    let mut attempt = 0;
    loop {
        let mut obj = api.get(name).await?;
        mutate(&mut obj);
        match api.replace_status(name, &PostParams::default(), &obj).await {
            Err(err) if err.is_conflict() && attempt + 1 < STATUS_UPDATE_ATTEMPTS => {
                attempt += 1;
                let jitter = STATUS_UPDATE_BACKOFF.mul_f64(fastrand::f64() * 0.1);
                tokio::time::sleep(STATUS_UPDATE_BACKOFF + jitter).await;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

    #[test]
    fn owner_references_point_at_the_controller() {
        let deployment = Deployment {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                uid: Some("u1".into()),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        };
        let reference = controller_reference(&deployment).expect("has uid");
        assert_eq!(reference.api_version, "apps/v1");
        assert_eq!(reference.kind, "Deployment");
        assert_eq!(reference.controller, Some(true));
        let rs = ReplicaSet {
            metadata: ObjectMeta {
                owner_references: Some(vec![reference]),
                ..ObjectMeta::default()
            },
            ..ReplicaSet::default()
        };
        assert_eq!(
            controller_of(&rs.metadata).map(|r| r.name.as_str()),
            Some("web")
        );
        assert_eq!(group_of("apps/v1"), "apps");
        assert_eq!(group_of("v1"), "");
        assert!(controller_reference(&Deployment::default()).is_none());
    }
}
