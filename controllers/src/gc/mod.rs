//! The garbage collector (docs/api-behaviour.md#propagation-policy): an ownerReference graph built from informers on every served
//! resource that can be listed, watched and deleted (custom resources included, found again
//! whenever a CustomResourceDefinition changes), and workers that
//! - delete objects none of whose owners exist any more (background deletion, dangling
//!   references), with the policy their own finalizers ask for;
//! - for an owner deleted in the foreground (`foregroundDeletion` finalizer), delete its
//!   dependents, and remove the finalizer once no dependent with `blockOwnerDeletion` is left;
//! - for an owner deleted with `Orphan` (`orphan` finalizer), remove the ownerReferences to it
//!   from its dependents, then the finalizer.
//!
//! Decisions come from the informers' caches (metadata-only: `PartialObjectMetadata`); every write is conditional (the uid of what is
//! deleted, the resourceVersion of what is patched), so a stale cache costs a retry, never a
//! wrong deletion. An owner absent from the caches is read from the server before its
//! dependents are called orphans.

mod decide;
mod graph;
mod sync;

pub use decide::{Decision, OwnerState, decide};
pub use graph::{ApiResourceKey, Graph, ObjectRef, OwnerLink};

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubemock_client::informer::Handlers;
use kubemock_client::{Client, DynamicObject, InformerFactory, Resource, Store, WorkQueue};
use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::discovery;

/// The finalizer of an owner whose dependents are orphaned.
pub const ORPHAN: &str = "orphan";
/// The finalizer of an owner deleted in the foreground.
pub const FOREGROUND: &str = "foregroundDeletion";

/// Concurrent workers (kube-controller-manager's `--concurrent-gc-syncs` is 20; the work here
/// is mostly cache reads).
const WORKERS: usize = 8;
/// How often the served resources are discovered again even without a definition change
/// (upstream resyncs its monitors every 30 s).
const REDISCOVERY_PERIOD: Duration = Duration::from_secs(30);
/// Wait before retrying a failed discovery.
const DISCOVERY_RETRY: Duration = Duration::from_secs(1);

/// Resources the garbage collector never watches (upstream's `ignoredResources`): events
/// are many, short-lived and never owners.
const IGNORED: [(&str, &str); 2] = [("", "events"), ("events.k8s.io", "events")];

/// State shared by the handlers and the workers.
pub(crate) struct Shared {
    pub(crate) client: Client,
    /// The ownerReference graph. Written by handlers (short sections, no await), read by
    /// workers.
    pub(crate) graph: Mutex<Graph>,
    /// The caches of the watched resources, by resource. Written when discovery adds a
    /// resource.
    pub(crate) stores: RwLock<HashMap<ApiResourceKey, Store<DynamicObject>>>,
    /// The served resource of each (group, kind), to resolve ownerReferences.
    pub(crate) kinds: RwLock<HashMap<(String, String), ApiResourceKey>>,
    /// Objects to process.
    pub(crate) queue: WorkQueue<ObjectRef>,
}

/// The garbage collector.
pub struct GarbageCollector {
    shared: Arc<Shared>,
    factory: Arc<InformerFactory>,
}

impl GarbageCollector {
    /// A garbage collector creating its informers in `factory` (shared with the other
    /// controllers).
    pub fn new(client: Client, factory: Arc<InformerFactory>) -> Self {
        GarbageCollector {
            shared: Arc::new(Shared {
                client,
                graph: Mutex::new(Graph::default()),
                stores: RwLock::new(HashMap::new()),
                kinds: RwLock::new(HashMap::new()),
                queue: WorkQueue::new(),
            }),
            factory,
        }
    }

    /// Runs until `token` is cancelled: discovers resources (again whenever a definition
    /// changes), watches them, and processes the queue.
    pub async fn run(self, token: CancellationToken) {
        let definitions_changed = Arc::new(Notify::new());
        {
            let notify = definitions_changed.clone();
            let (n1, n2, n3) = (notify.clone(), notify.clone(), notify);
            self.factory
                .informer::<CustomResourceDefinition>()
                .add_handler(
                    Handlers::new()
                        .on_add(move |_: &Arc<CustomResourceDefinition>| n1.notify_one())
                        .on_update(move |_, _| n2.notify_one())
                        .on_delete(move |_| n3.notify_one()),
                );
            self.factory.start(&token);
        }
        let mut workers = JoinSet::new();
        for _ in 0..WORKERS {
            let shared = self.shared.clone();
            let token = token.clone();
            workers.spawn(async move {
                loop {
                    let next = tokio::select! {
                        _ = token.cancelled() => break,
                        next = shared.queue.get() => next,
                    };
                    let Some(item) = next else { break };
                    match sync::process(&shared, &item).await {
                        Ok(()) => shared.queue.forget(&item),
                        Err(err) => {
                            tracing::debug!(object = ?item, error = %err, "garbage collection failed; retrying");
                            shared.queue.add_rate_limited(item.clone());
                        }
                    }
                    shared.queue.done(&item);
                }
            });
        }
        loop {
            let discovered = discovery::preferred_resources(&self.shared.client).await;
            let wait = match discovered {
                Ok(discovered) => {
                    self.watch(&discovered.resources, &token);
                    if discovered.failed.is_empty() {
                        REDISCOVERY_PERIOD
                    } else {
                        DISCOVERY_RETRY
                    }
                }
                Err(err) => {
                    tracing::warn!(error = %err, "garbage collector: discovery failed");
                    DISCOVERY_RETRY
                }
            };
            tokio::select! {
                _ = token.cancelled() => break,
                _ = definitions_changed.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
        self.shared.queue.shutdown();
        while workers.join_next().await.is_some() {}
    }

    /// Starts informers (with the graph's handlers) on the resources not watched yet.
    fn watch(&self, served: &[discovery::ServedResource], token: &CancellationToken) {
        let mut added = 0;
        for served in served {
            let resource = &served.resource;
            if !served.supports(&["list", "watch", "delete"])
                || IGNORED.contains(&(resource.group.as_str(), resource.plural.as_str()))
            {
                continue;
            }
            let key = ApiResourceKey::of(resource);
            self.shared
                .kinds
                .write()
                .insert((resource.group.clone(), resource.kind.clone()), key.clone());
            if self.shared.stores.read().contains_key(&key) {
                continue;
            }
            // Metadata alone: the collector reads nothing else, and its full copies of every
            // pod and event were a third of the process's memory at 10,000 pods
            // (docs/benchmarks.md). kube-controller-manager's collector watches metadata too
            // (`k8s.io/controller-manager/pkg/informerfactory`: a metadata informer) where no
            // typed informer of the resource already runs, whose cache it shares then.
            let informer = self.factory.metadata(resource);
            self.shared
                .stores
                .write()
                .insert(key.clone(), informer.store());
            let (s1, s2, s3) = (
                self.shared.clone(),
                self.shared.clone(),
                self.shared.clone(),
            );
            let (k1, k2, k3) = (key.clone(), key.clone(), key);
            informer.add_handler(
                Handlers::new()
                    .on_add(move |obj: &Arc<DynamicObject>| s1.observe(&k1, None, Some(obj)))
                    .on_update(move |old, new| s2.observe(&k2, Some(old), Some(new)))
                    .on_delete(move |obj| s3.observe(&k3, Some(obj), None)),
            );
            added += 1;
        }
        if added > 0 {
            tracing::debug!(added, "garbage collector watches more resources");
            self.factory.start(token);
        }
    }
}

/// Whether `obj` is being deleted and waits for the garbage collector (orphan or
/// foreground finalizer).
fn waits_for_collector(obj: &DynamicObject) -> bool {
    obj.meta().deletion_timestamp.is_some()
        && obj
            .meta()
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == ORPHAN || f == FOREGROUND)
}

impl Shared {
    /// A handler's view of one change: updates the graph and queues what the change
    /// concerns. No I/O.
    fn observe(
        &self,
        resource: &ApiResourceKey,
        old: Option<&Arc<DynamicObject>>,
        new: Option<&Arc<DynamicObject>>,
    ) {
        let mut queue = Vec::new();
        {
            let mut graph = self.graph.lock();
            match (old, new) {
                (_, Some(new)) => {
                    let uid = new.meta().uid.clone().unwrap_or_default();
                    let here = ObjectRef {
                        resource: resource.clone(),
                        key: new.key(),
                    };
                    let links =
                        OwnerLink::of(new.meta().owner_references.as_deref().unwrap_or_default());
                    let previous = graph.upsert(&uid, here.clone(), links.clone());
                    if !links.is_empty() || waits_for_collector(new) {
                        queue.push(here);
                    }
                    // Owners whose dependents changed may finish a foreground deletion.
                    if previous != links {
                        for link in previous.iter().chain(&links) {
                            queue.extend(graph.object(&link.uid).cloned());
                        }
                    }
                    // An owner that starts (or changes) its deletion concerns its dependents.
                    let deletion_changed = old.is_some_and(|old| {
                        old.meta().deletion_timestamp != new.meta().deletion_timestamp
                            || old.meta().finalizers != new.meta().finalizers
                    });
                    if deletion_changed {
                        queue.extend(graph.dependents(&uid).into_iter().map(|(d, _)| d));
                    }
                }
                (Some(old), None) => {
                    let uid = old.meta().uid.clone().unwrap_or_default();
                    let owners = graph.remove(&uid);
                    // Its dependents may have lost their last owner; its owners, a blocker.
                    queue.extend(graph.dependents(&uid).into_iter().map(|(d, _)| d));
                    for link in owners {
                        queue.extend(graph.object(&link.uid).cloned());
                    }
                }
                (None, None) => {}
            }
        }
        for item in queue {
            self.queue.add(item);
        }
    }

    /// The cache of `resource`, when watched.
    pub(crate) fn store(&self, resource: &ApiResourceKey) -> Option<Store<DynamicObject>> {
        self.stores.read().get(resource).cloned()
    }

    /// The served resource of an ownerReference's apiVersion and kind.
    pub(crate) fn resource_of(&self, api_version: &str, kind: &str) -> Option<ApiResourceKey> {
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        self.kinds
            .read()
            .get(&(group.to_owned(), kind.to_owned()))
            .cloned()
    }
}
