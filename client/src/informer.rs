//! Shared informers: one reflector per resource type feeding one cache and any number of event
//! handlers, so that every controller in a process shares one list+watch per type.
//!
//! Delivery guarantees:
//! - each handler sees the changes of the cache once, per object in order, from its own task;
//! - a handler added late first receives `on_add` for everything cached, atomically with
//!   respect to later changes (no change lost, none doubled);
//! - a slow handler never blocks the reflector or the other handlers, and its backlog is
//!   bounded: beyond [`HANDLER_BUFFER`] queued notifications, further ones are coalesced per
//!   object (the handler then sees the object's state before the backlog and its latest
//!   state), so the backlog never exceeds the buffer plus one entry per object.
//!   (client-go's handlers are fed from unbounded ring buffers instead.)
//! - with a resync period, `on_update(obj, obj)` is delivered for every cached object
//!   periodically.
//! - with [`Transform::DropManagedFields`], objects are cached and handed out without
//!   `metadata.managedFields`, as kube-controller-manager's and kube-scheduler's informers keep
//!   them (issue 23: the field sets are a good part of a pod's size, in every cache).

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::FutureExt;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::api::Api;
use crate::compact::compact;
use crate::reflector::{self, Change, Store, Writer};
use crate::resource::{ApiResource, DynamicObject, ObjectKey, Resource, TypedResource};
use crate::transport::Client;
use crate::watcher::{self, ListerWatcher, Watcher};

/// Notifications a handler may have queued in order before further ones are coalesced per
/// object: enough for bursts, small enough to bound memory.
pub const HANDLER_BUFFER: usize = 4096;

/// Reacts to changes of an informer's cache. Handlers run on their own task and should only
/// compute keys and enqueue work (no I/O).
pub trait EventHandler<K>: Send + Sync + 'static {
    /// An object appeared.
    fn on_add(&self, _obj: &Arc<K>) {}
    /// An object changed (or a resync: `old` and `new` are the same).
    fn on_update(&self, _old: &Arc<K>, _new: &Arc<K>) {}
    /// An object was deleted; its last known state.
    fn on_delete(&self, _obj: &Arc<K>) {}
}

type AddFn<K> = Box<dyn Fn(&Arc<K>) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;

/// An [`EventHandler`] made of closures.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// let handler = kubemock_client::informer::Handlers::<ConfigMap>::new()
///     .on_add(|cm| println!("added {:?}", cm.metadata.name));
/// ```
pub struct Handlers<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<AddFn<K>>,
}

impl<K> Default for Handlers<K> {
    fn default() -> Self {
        Handlers {
            add: None,
            update: None,
            delete: None,
        }
    }
}

impl<K> Handlers<K> {
    /// No reactions yet.
    pub fn new() -> Self {
        Self::default()
    }
    /// Reacts to additions.
    #[must_use]
    pub fn on_add(mut self, f: impl Fn(&Arc<K>) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }
    /// Reacts to updates.
    #[must_use]
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }
    /// Reacts to deletions.
    #[must_use]
    pub fn on_delete(mut self, f: impl Fn(&Arc<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> EventHandler<K> for Handlers<K> {
    fn on_add(&self, obj: &Arc<K>) {
        if let Some(f) = &self.add {
            f(obj);
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }
    fn on_delete(&self, obj: &Arc<K>) {
        if let Some(f) = &self.delete {
            f(obj);
        }
    }
}

/// The backlog of one handler: in order up to [`HANDLER_BUFFER`], coalesced per object beyond.
struct Backlog<K> {
    /// Notifications in arrival order.
    ordered: VecDeque<Change<K>>,
    /// Keys of coalesced notifications, in order of first arrival. Non-empty only while the
    /// ordered buffer overflowed; every later notification goes here until both drain, so
    /// each object's notifications stay in order.
    coalesced_order: VecDeque<ObjectKey>,
    /// Per key: the state the handler last saw (`None`: absent), whether the object exists
    /// now, and its latest state (for a deletion, the deleted state).
    coalesced: HashMap<ObjectKey, Coalesced<K>>,
}

/// A coalesced backlog entry: the state the handler last saw, whether the object exists
/// now, and its latest state.
type Coalesced<K> = (Option<Arc<K>>, bool, Arc<K>);

impl<K: Resource> Backlog<K> {
    fn new() -> Self {
        Backlog {
            ordered: VecDeque::new(),
            coalesced_order: VecDeque::new(),
            coalesced: HashMap::new(),
        }
    }

    fn push(&mut self, change: Change<K>) {
        if self.coalesced_order.is_empty() && self.ordered.len() < HANDLER_BUFFER {
            self.ordered.push_back(change);
            return;
        }
        let key = change.key();
        let (before, exists, latest) = match change {
            Change::Added(obj) => (None, true, obj),
            Change::Updated(old, new) => (Some(old), true, new),
            Change::Deleted(obj) => (Some(obj.clone()), false, obj),
        };
        match self.coalesced.get_mut(&key) {
            Some(entry) => {
                entry.1 = exists;
                entry.2 = latest;
            }
            None => {
                self.coalesced_order.push_back(key.clone());
                self.coalesced.insert(key, (before, exists, latest));
            }
        }
    }

    fn pop(&mut self) -> Option<Change<K>> {
        if let Some(change) = self.ordered.pop_front() {
            return Some(change);
        }
        while let Some(key) = self.coalesced_order.pop_front() {
            match self.coalesced.remove(&key) {
                Some((None, true, new)) => return Some(Change::Added(new)),
                Some((Some(old), true, new)) => return Some(Change::Updated(old, new)),
                Some((Some(_), false, last)) => return Some(Change::Deleted(last)),
                _ => {}
            }
        }
        None
    }

    fn len(&self) -> usize {
        self.ordered.len() + self.coalesced.len()
    }
}

/// One registered handler: its backlog and the wake-up of its task.
struct Registration<K> {
    backlog: Mutex<Backlog<K>>,
    wake: Notify,
}

impl<K: Resource> Registration<K> {
    fn push(&self, change: Change<K>) {
        self.backlog.lock().push(change);
        self.wake.notify_one();
    }
}

/// A handle on an added handler.
pub struct HandlerRegistration<K> {
    registration: Arc<Registration<K>>,
}

impl<K: Resource> HandlerRegistration<K> {
    /// Notifications queued for this handler and not yet delivered.
    pub fn backlog(&self) -> usize {
        self.registration.backlog.lock().len()
    }
}

/// What an informer does to each object before caching it (client-go's `TransformFunc`, in
/// the form kubemock's controllers use).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Transform {
    /// Objects are cached as received.
    #[default]
    None,
    /// `metadata.managedFields` is dropped: the `trim` transform of kube-controller-manager's
    /// shared informers (`cmd/kube-controller-manager/app/controllermanager.go`) and of
    /// kube-scheduler's pod informer (`pkg/scheduler/scheduler.go`). An update written from
    /// such a cached object keeps the server's managed fields (an update without them keeps
    /// the live object's).
    DropManagedFields,
}

impl Transform {
    fn apply<K: Resource>(self, event: &mut watcher::Event<K>) {
        match (self, event) {
            (Transform::None, _) | (_, watcher::Event::Init) | (_, watcher::Event::InitDone) => {}
            (
                Transform::DropManagedFields,
                watcher::Event::InitApply(obj)
                | watcher::Event::Apply(obj)
                | watcher::Event::Delete(obj),
            ) => obj.meta_mut().managed_fields = None,
        }
    }
}

struct Inner<K> {
    /// The cache.
    store: Store<K>,
    /// The registered handlers. Lock order: taken before the store's lock; every cache
    /// change is applied and handed to the handlers under it, so that a late handler's
    /// snapshot and the changes after it fit together.
    handlers: Mutex<Vec<Arc<Registration<K>>>>,
    /// Where lists and watches come from, and how.
    source: Arc<dyn ListerWatcher<K>>,
    config: watcher::Config,
    /// Applied to each object before it is cached.
    transform: Transform,
    /// Set by the first `run`: an informer runs once.
    started: AtomicBool,
    /// Cancelled when the informer stops; ends handler and resync tasks.
    stopped: CancellationToken,
    /// Handler and resync tasks.
    tasks: TaskTracker,
}

/// A shared informer: one cache, one list+watch, many handlers. Cheap to clone.
pub struct SharedInformer<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for SharedInformer<K> {
    fn clone(&self) -> Self {
        SharedInformer {
            inner: self.inner.clone(),
        }
    }
}

impl<K: Resource> SharedInformer<K> {
    /// An informer over `source` (an [`Api`], or any lister-watcher).
    pub fn new(source: impl ListerWatcher<K>, config: watcher::Config) -> Self {
        Self::with_transform(source, config, Transform::None)
    }

    /// An informer over `source` that applies `transform` to each object before caching it.
    pub fn with_transform(
        source: impl ListerWatcher<K>,
        config: watcher::Config,
        transform: Transform,
    ) -> Self {
        SharedInformer {
            inner: Arc::new(Inner {
                store: Store::new(),
                handlers: Mutex::new(Vec::new()),
                source: Arc::new(source),
                config,
                transform,
                started: AtomicBool::new(false),
                stopped: CancellationToken::new(),
                tasks: TaskTracker::new(),
            }),
        }
    }

    /// The cache (a lister).
    pub fn store(&self) -> Store<K> {
        self.inner.store.clone()
    }

    /// Whether the first list has been applied.
    pub fn has_synced(&self) -> bool {
        self.inner.store.has_synced()
    }

    /// Waits for the first list.
    pub async fn wait_for_sync(&self) {
        self.inner.store.wait_for_sync().await;
    }

    /// Adds a handler. When the cache already holds objects, the handler first gets `on_add`
    /// for each. Must be called inside a tokio runtime (the handler gets a task).
    pub fn add_handler(&self, handler: impl EventHandler<K>) -> HandlerRegistration<K> {
        self.add_handler_with_resync(handler, None)
    }

    /// Adds a handler that also gets `on_update(obj, obj)` for every cached object every
    /// `resync` (after the cache has synced).
    pub fn add_handler_with_resync(
        &self,
        handler: impl EventHandler<K>,
        resync: Option<Duration>,
    ) -> HandlerRegistration<K> {
        let registration = Arc::new(Registration {
            backlog: Mutex::new(Backlog::new()),
            wake: Notify::new(),
        });
        {
            let mut handlers = self.inner.handlers.lock();
            for obj in self.inner.store.list() {
                registration.push(Change::Added(obj));
            }
            handlers.push(registration.clone());
        }
        let task_registration = registration.clone();
        let stopped = self.inner.stopped.clone();
        self.inner.tasks.spawn(async move {
            loop {
                loop {
                    let next = task_registration.backlog.lock().pop();
                    let Some(change) = next else { break };
                    match &change {
                        Change::Added(obj) => handler.on_add(obj),
                        Change::Updated(old, new) => handler.on_update(old, new),
                        Change::Deleted(obj) => handler.on_delete(obj),
                    }
                }
                tokio::select! {
                    _ = stopped.cancelled() => break,
                    _ = task_registration.wake.notified() => {}
                }
            }
        });
        if let Some(period) = resync.filter(|p| !p.is_zero()) {
            let inner = self.inner.clone();
            let target = registration.clone();
            self.inner.tasks.spawn(async move {
                let start = tokio::time::Instant::now() + period;
                let mut ticker = tokio::time::interval_at(start, period);
                ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        _ = inner.stopped.cancelled() => break,
                        _ = ticker.tick() => {}
                    }
                    if !inner.store.has_synced() {
                        continue;
                    }
                    let _handlers = inner.handlers.lock();
                    for obj in inner.store.list() {
                        target.push(Change::Updated(obj.clone(), obj));
                    }
                }
            });
        }
        HandlerRegistration { registration }
    }

    /// Runs the reflector until `token` is cancelled, then stops the handler tasks and waits
    /// for them. Runs once; later calls return at once.
    pub async fn run(&self, token: CancellationToken) {
        if self.inner.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let watcher = Watcher::new(
            SharedSource(self.inner.source.clone()),
            self.inner.config.clone(),
        );
        let writer = Writer::new(self.inner.store.clone());
        let inner = self.inner.clone();
        reflector::run(
            writer,
            watcher.into_stream(),
            token,
            move |writer, mut event| {
                inner.transform.apply(&mut event);
                if let watcher::Event::InitApply(obj)
                | watcher::Event::Apply(obj)
                | watcher::Event::Delete(obj) = &mut event
                {
                    compact(obj);
                }
                let handlers = inner.handlers.lock();
                for change in writer.apply(event) {
                    for handler in handlers.iter() {
                        handler.push(change.clone());
                    }
                }
            },
        )
        .await;
        self.inner.stopped.cancel();
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
    }
}

/// A shared lister-watcher (the informer keeps its source in an `Arc`).
struct SharedSource<K>(Arc<dyn ListerWatcher<K>>);

impl<K: Resource> ListerWatcher<K> for SharedSource<K> {
    fn list(
        &self,
        params: crate::request::ListParams,
    ) -> futures_util::future::BoxFuture<'static, crate::Result<crate::resource::ObjectList<K>>>
    {
        self.0.list(params)
    }
    fn watch(
        &self,
        params: crate::request::WatchParams,
        resource_version: String,
    ) -> futures_util::future::BoxFuture<
        'static,
        crate::Result<
            futures_util::stream::BoxStream<
                'static,
                crate::Result<crate::transport::WatchEvent<K>>,
            >,
        >,
    > {
        self.0.watch(params, resource_version)
    }
}

/// Starts one informer on a task of the tracker.
type Starter = Box<dyn FnOnce(CancellationToken, &TaskTracker) + Send>;

/// A future that resolves once an informer has synced.
type SyncWait = Box<dyn Fn() -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>;

/// Creates and shares informers: one per resource type and namespace.
pub struct InformerFactory {
    client: Client,
    /// Namespace to watch (`None`: all).
    namespace: Option<String>,
    config: watcher::Config,
    /// Applied by informers created from now on.
    transform: Transform,
    /// Informers by resource; `Box<SharedInformer<K>>` as `Any`.
    /// By resource, and whether the informer holds metadata alone ([`InformerFactory::metadata`]).
    informers: Mutex<HashMap<(ApiResource, bool), Box<dyn Any + Send + Sync>>>,
    /// Runs of started informers.
    starters: Mutex<Vec<Starter>>,
    /// Sync waits of every informer.
    synced: Mutex<Vec<SyncWait>>,
    tasks: TaskTracker,
}

impl InformerFactory {
    /// A factory of informers watching all namespaces.
    pub fn new(client: Client) -> Self {
        Self::build(client, None)
    }

    /// A factory of informers watching one namespace.
    pub fn namespaced(client: Client, namespace: &str) -> Self {
        Self::build(client, Some(namespace.to_owned()))
    }

    fn build(client: Client, namespace: Option<String>) -> Self {
        InformerFactory {
            client,
            namespace,
            config: watcher::Config::default(),
            transform: Transform::None,
            informers: Mutex::new(HashMap::new()),
            starters: Mutex::new(Vec::new()),
            synced: Mutex::new(Vec::new()),
            tasks: TaskTracker::new(),
        }
    }

    /// Sets the watcher configuration of informers created from now on.
    #[must_use]
    pub fn with_config(mut self, config: watcher::Config) -> Self {
        self.config = config;
        self
    }

    /// Sets what informers created from now on do to each object before caching it
    /// (client-go's `informers.WithTransform`).
    #[must_use]
    pub fn with_transform(mut self, transform: Transform) -> Self {
        self.transform = transform;
        self
    }

    /// The shared informer of a typed kind.
    pub fn informer<K: TypedResource>(&self) -> SharedInformer<K> {
        self.informer_for(&K::api_resource(), false)
    }

    /// The shared informer of an untyped resource.
    pub fn dynamic(&self, resource: &ApiResource) -> SharedInformer<DynamicObject> {
        self.informer_for(resource, false)
    }

    /// The shared metadata-only informer of a resource (client-go's `metadatainformer`): it
    /// lists and watches `PartialObjectMetadata`, so its cache holds each object's `metadata`
    /// alone, under the kind `PartialObjectMetadata`. For handlers that read nothing else,
    /// such as the garbage collector's: a fraction of the memory and decoding of
    /// [`InformerFactory::dynamic`]'s. Distinct from the resource's full informer.
    pub fn metadata(&self, resource: &ApiResource) -> SharedInformer<DynamicObject> {
        self.informer_for(resource, true)
    }

    fn informer_for<K: Resource>(
        &self,
        resource: &ApiResource,
        metadata_only: bool,
    ) -> SharedInformer<K> {
        let mut informers = self.informers.lock();
        let key = (resource.clone(), metadata_only);
        if let Some(existing) = informers
            .get(&key)
            .and_then(|b| b.downcast_ref::<SharedInformer<K>>())
        {
            return existing.clone();
        }
        let api: Api<K> = match &self.namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
            None => Api::all_with(self.client.clone(), resource),
        };
        let api = if metadata_only {
            api.metadata_only()
        } else {
            api
        };
        let informer = SharedInformer::with_transform(api, self.config.clone(), self.transform);
        informers.insert(key, Box::new(informer.clone()));
        let runner = informer.clone();
        self.starters
            .lock()
            .push(Box::new(move |token, tasks: &TaskTracker| {
                tasks.spawn(async move { runner.run(token).await });
            }));
        let synced = informer.clone();
        self.synced.lock().push(Box::new(move || {
            let synced = synced.clone();
            async move { synced.wait_for_sync().await }.boxed()
        }));
        informer
    }

    /// Starts every informer created so far (and not started yet) on its own task; they stop
    /// when `token` is cancelled (await [`InformerFactory::shutdown`]).
    pub fn start(&self, token: &CancellationToken) {
        for start in self.starters.lock().drain(..) {
            start(token.child_token(), &self.tasks);
        }
    }

    /// Waits until every informer created so far has synced.
    pub async fn wait_for_sync(&self) {
        let waits: Vec<_> = self.synced.lock().iter().map(|wait| wait()).collect();
        futures_util::future::join_all(waits).await;
    }

    /// Waits for the started informers to stop (after their token was cancelled).
    pub async fn shutdown(&self) {
        self.tasks.close();
        self.tasks.wait().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn cm(name: &str, rv: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some(name.into()),
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
    }

    fn describe(change: Change<ConfigMap>) -> String {
        match change {
            Change::Added(o) => format!("add {} {}", o.key(), o.resource_version()),
            Change::Updated(o, n) => {
                format!(
                    "update {} {}->{}",
                    n.key(),
                    o.resource_version(),
                    n.resource_version()
                )
            }
            Change::Deleted(o) => format!("delete {} {}", o.key(), o.resource_version()),
        }
    }

    #[test]
    fn a_full_backlog_coalesces_per_object_and_stays_bounded() {
        let mut backlog = Backlog::new();
        for i in 0..HANDLER_BUFFER {
            backlog.push(Change::Added(cm(&format!("fill{i}"), "1")));
        }
        // Overflow: a's add and two updates collapse into one add of the latest state; b's
        // update and delete into one delete of the state the handler knew; c's add+delete
        // into nothing.
        backlog.push(Change::Added(cm("a", "2")));
        backlog.push(Change::Updated(cm("b", "1"), cm("b", "3")));
        backlog.push(Change::Updated(cm("a", "2"), cm("a", "4")));
        backlog.push(Change::Added(cm("c", "5")));
        backlog.push(Change::Deleted(cm("b", "6")));
        backlog.push(Change::Updated(cm("a", "4"), cm("a", "7")));
        backlog.push(Change::Deleted(cm("c", "8")));
        assert_eq!(backlog.len(), HANDLER_BUFFER + 3);
        for _ in 0..HANDLER_BUFFER {
            backlog.pop();
        }
        let rest: Vec<String> = std::iter::from_fn(|| backlog.pop()).map(describe).collect();
        assert_eq!(rest, vec!["add ns/a 7", "delete ns/b 6"]);
        // Drained: back to ordered delivery.
        backlog.push(Change::Added(cm("d", "9")));
        assert_eq!(backlog.ordered.len(), 1);
    }

    use crate::transport::WatchEvent;
    use crate::watcher::script::{Script, gone, page};

    /// Records what a handler sees.
    #[derive(Clone, Default)]
    struct Recording(Arc<Mutex<Vec<String>>>);

    impl EventHandler<ConfigMap> for Recording {
        fn on_add(&self, obj: &Arc<ConfigMap>) {
            self.0.lock().push(describe(Change::Added(obj.clone())));
        }
        fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
            self.0
                .lock()
                .push(describe(Change::Updated(old.clone(), new.clone())));
        }
        fn on_delete(&self, obj: &Arc<ConfigMap>) {
            self.0.lock().push(describe(Change::Deleted(obj.clone())));
        }
    }

    impl Recording {
        async fn wait_for(&self, n: usize) -> Vec<String> {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
            while self.0.lock().len() < n {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "only {:?}",
                    self.0.lock()
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            self.0.lock().clone()
        }
    }

    fn plain(name: &str, rv: &str) -> ConfigMap {
        Arc::unwrap_or_clone(cm(name, rv))
    }

    #[tokio::test(start_paused = true)]
    async fn a_relist_reports_vanished_objects_as_deletions_with_their_last_state() {
        let script = Script::default();
        script
            .list(page("10", None, vec![plain("a", "3"), plain("b", "4")]))
            .watch(vec![Ok(WatchEvent::Modified(plain("a", "11"))), gone()])
            .list(page("30", None, vec![plain("a", "11"), plain("c", "25")]))
            .watch_hanging(vec![]);
        let informer = SharedInformer::new(script, watcher::Config::default());
        let seen = Recording::default();
        informer.add_handler(seen.clone());
        let token = CancellationToken::new();
        let run = tokio::spawn({
            let informer = informer.clone();
            let token = token.clone();
            async move { informer.run(token).await }
        });
        let events = seen.wait_for(5).await;
        assert_eq!(
            events,
            vec![
                "add ns/a 3",
                "add ns/b 4",
                "update ns/a 3->11",
                "add ns/c 25",
                "delete ns/b 4"
            ]
        );
        let mut keys: Vec<String> = informer
            .store()
            .list()
            .iter()
            .map(|o| o.key().to_string())
            .collect();
        keys.sort();
        assert_eq!(keys, vec!["ns/a", "ns/c"]);
        token.cancel();
        run.await.expect("informer stops");
    }

    #[tokio::test(start_paused = true)]
    async fn late_handlers_get_the_current_state_and_resync_delivers_updates_periodically() {
        let script = Script::default();
        script
            .list(page("10", None, vec![plain("a", "3")]))
            .watch_hanging(vec![]);
        let informer = SharedInformer::new(script, watcher::Config::default());
        let token = CancellationToken::new();
        let run = tokio::spawn({
            let informer = informer.clone();
            let token = token.clone();
            async move { informer.run(token).await }
        });
        informer.wait_for_sync().await;
        let late = Recording::default();
        let start = tokio::time::Instant::now();
        informer.add_handler_with_resync(late.clone(), Some(Duration::from_secs(30)));
        assert_eq!(late.wait_for(1).await, vec!["add ns/a 3"]);
        let events = late.wait_for(3).await;
        assert_eq!(
            events,
            vec!["add ns/a 3", "update ns/a 3->3", "update ns/a 3->3"]
        );
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_secs(60) && elapsed < Duration::from_secs(61),
            "{elapsed:?}"
        );
        token.cancel();
        run.await.expect("informer stops");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 3)]
    async fn a_stalled_handler_neither_blocks_others_nor_grows_beyond_one_entry_per_object() {
        const EVENTS: u64 = 20_000;
        const KEYS: u64 = 100;
        let script = Script::default();
        let events = (0..EVENTS)
            .map(|i| {
                Ok(WatchEvent::Modified(plain(
                    &format!("o{}", i % KEYS),
                    &(20 + i).to_string(),
                )))
            })
            .collect();
        script.list(page("10", None, vec![])).watch_hanging(events);
        let informer = SharedInformer::new(script, watcher::Config::default());

        // The stalled handler blocks its task (and a runtime thread) until released.
        let (release, released) = std::sync::mpsc::sync_channel::<()>(1);
        let released = Mutex::new(Some(released));
        let last_seen: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let stalled = informer.add_handler({
            let (last_seen, last_seen_updates) = (last_seen.clone(), last_seen.clone());
            Handlers::new()
                .on_add(move |obj: &Arc<ConfigMap>| {
                    if let Some(rx) = released.lock().take() {
                        let _ = rx.recv();
                    }
                    last_seen
                        .lock()
                        .insert(obj.key().to_string(), obj.resource_version().to_owned());
                })
                .on_update({
                    move |_, obj: &Arc<ConfigMap>| {
                        last_seen_updates
                            .lock()
                            .insert(obj.key().to_string(), obj.resource_version().to_owned());
                    }
                })
        });
        let fast_seen: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        informer.add_handler({
            let (add, update) = (fast_seen.clone(), fast_seen.clone());
            Handlers::new()
                .on_add(move |obj: &Arc<ConfigMap>| {
                    add.lock()
                        .insert(obj.key().to_string(), obj.resource_version().to_owned());
                })
                .on_update(move |_, obj: &Arc<ConfigMap>| {
                    update
                        .lock()
                        .insert(obj.key().to_string(), obj.resource_version().to_owned());
                })
        });
        let token = CancellationToken::new();
        let run = tokio::spawn({
            let informer = informer.clone();
            let token = token.clone();
            async move { informer.run(token).await }
        });
        let caught_up = |seen: &Mutex<HashMap<String, String>>| {
            (0..KEYS).all(|k| {
                let last = EVENTS - KEYS + k;
                seen.lock().get(&format!("ns/o{k}")) == Some(&(20 + last).to_string())
            })
        };

        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while !caught_up(&fast_seen) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the fast handler catches up while the other is stalled"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            last_seen.lock().is_empty(),
            "the stalled handler is still stalled"
        );
        assert!(
            stalled.backlog() <= HANDLER_BUFFER + KEYS as usize,
            "backlog {} is bounded",
            stalled.backlog()
        );
        release.send(()).expect("release");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while !caught_up(&last_seen) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the stalled handler catches up"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        token.cancel();
        run.await.expect("informer stops");
    }
}
