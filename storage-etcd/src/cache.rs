//! The watch cache: one etcd watch per resource prefix, shared by every watcher of that
//! resource in this process, as upstream's `Cacher` does
//! (`staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go`, `watch_cache.go`). Without it
//! every client watch (and every internal index) held its own gRPC stream in etcd.
//!
//! A cache covers one *cache prefix*: a watched prefix cut after its `depth`-th `/`
//! (`/registry/<group>/<resource>/` for kubemock's keys, depth 4). It holds:
//! - the current objects under the prefix, from a paged list at its start revision and then
//!   its events: `resourceVersion=0` lists are answered from them ([`Kv::range_any`]);
//! - the last `capacity` events, so that a watch from a recent revision is replayed from
//!   memory;
//! - its subscribers: each client watch, with the narrower prefix it asked for (a namespace,
//!   one object) and the revision it starts after.
//!
//! One task (the feeder) follows the etcd watch and applies each event, under the state's
//! lock (never held across an `.await`), to the objects, the window and every subscriber's
//! bounded channel, without waiting: a full channel ends that subscriber as lagging, as the
//! direct watch does. Progress requests of subscribers become one progress request of the
//! feeder's etcd watch; its answer reaches the subscribers that asked, after every event it
//! covers (the same task sent them).
//!
//! When the cache cannot serve a watch exactly, the watch goes to etcd directly, as before:
//! a start revision older than the window (etcd replays it from history, or answers
//! `Compacted`), a replay longer than the subscriber's buffer, a prefix shorter than a cache
//! prefix. When the feeder's etcd watch ends (etcd unavailable, lagged, compacted), every
//! subscriber ends with that error (clients re-watch from their last revision) and the cache
//! is dropped; the next watch or list of the resource starts a new one.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use futures_util::StreamExt;
use kubemock_storage::{
    Error, Event, EventKind, KeyValue, Kv, RangeRequest, RangeResponse, Result, Revision, Watch,
    WatchItem, WatchStream,
};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::watch::{EtcdWatch, Inbox};
use crate::{EtcdStore, Inner};

/// The depth of kubemock's resource prefixes: `/registry/<group>/<resource>/`.
pub const RESOURCE_PREFIX_DEPTH: usize = 4;
/// Events a cache keeps for replays by default (upstream's watch cache starts at 100 and
/// grows with the event rate; a fixed, larger window is simpler and enough for tests).
pub const DEFAULT_WATCH_CACHE_EVENTS: usize = 1024;
/// Items per page of a cache's initial list.
const LIST_PAGE: usize = 1000;

/// The cache prefix of a watched `prefix`: its bytes up to and including its `depth`-th `/`,
/// or `None` when it has fewer.
pub(crate) fn cache_prefix(prefix: &[u8], depth: usize) -> Option<Bytes> {
    if depth == 0 {
        return None;
    }
    let end = prefix
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'/')
        .nth(depth - 1)
        .map(|(at, _)| at + 1)?;
    Some(Bytes::copy_from_slice(&prefix[..end]))
}

/// The caches of one store, by cache prefix.
pub(crate) struct Caches {
    /// `None`: no caches, every watch goes to etcd.
    depth: Option<usize>,
    /// Events each cache keeps.
    capacity: usize,
    map: Mutex<HashMap<Bytes, Arc<Cache>>>,
    /// Cancelled when the last clone of the store is dropped: stops the feeders.
    stop: CancellationToken,
    /// Feeders running (each holds one etcd watch).
    feeders: AtomicUsize,
}

impl Caches {
    pub(crate) fn new(depth: Option<usize>, capacity: usize, stop: CancellationToken) -> Self {
        Caches {
            depth,
            capacity: capacity.max(1),
            map: Mutex::new(HashMap::new()),
            stop,
            feeders: AtomicUsize::new(0),
        }
    }

    /// The feeders now running (one cache each; a stopping one is already out of the map).
    pub(crate) fn len(&self) -> usize {
        self.feeders.load(Ordering::Acquire)
    }

    fn prefix_of(&self, prefix: &[u8]) -> Option<Bytes> {
        self.depth.and_then(|depth| cache_prefix(prefix, depth))
    }

    /// The running cache of `prefix`, if any.
    fn running(&self, prefix: &Bytes) -> Option<Arc<Cache>> {
        self.map.lock().get(prefix).cloned()
    }
}

/// A watch: from the cache when it can serve it exactly, else from etcd directly.
pub(crate) async fn watch(
    store: &EtcdStore,
    prefix: Bytes,
    after: Revision,
) -> Result<WatchStream> {
    let caches = &store.inner.caches;
    let Some(key) = caches.prefix_of(&prefix) else {
        return direct(store, &prefix, after).await;
    };
    let cache = match caches.running(&key) {
        Some(cache) => cache,
        None => match start(store, key, Some(after)).await {
            Ok(cache) => cache,
            // Its history is compacted, or not yet written: etcd's own answer says which.
            Err(Error::Compacted { .. } | Error::FutureRevision { .. }) => {
                return direct(store, &prefix, after).await;
            }
            Err(err) => return Err(err),
        },
    };
    if after > cache.state.lock().revision {
        // Written after what the cache has seen, or never: etcd says which.
        let current = store.inner.current_revision().await?;
        if after > current {
            return Err(Error::FutureRevision {
                requested: after,
                current,
            });
        }
    }
    match cache.subscribe(prefix.clone(), after, store.inner.watch_buffer) {
        Some(watch) => Ok(Box::new(watch)),
        None => direct(store, &prefix, after).await,
    }
}

/// A watch of etcd, not shared.
async fn direct(store: &EtcdStore, prefix: &[u8], after: Revision) -> Result<WatchStream> {
    Ok(Box::new(
        EtcdWatch::start(&store.inner, prefix, after).await?,
    ))
}

/// `resourceVersion=0`: a whole prefix at the cache's revision, starting the cache if none
/// runs. Anything else (a page, a snapshot, a prefix no cache covers) is a read of etcd.
pub(crate) async fn range_any(store: &EtcdStore, request: RangeRequest) -> Result<RangeResponse> {
    let whole =
        request.start_after.is_none() && request.limit.is_none() && request.revision.is_none();
    let key = store
        .inner
        .caches
        .prefix_of(&request.prefix)
        .filter(|_| whole);
    let Some(key) = key else {
        return store.range(request).await;
    };
    let cache = match store.inner.caches.running(&key) {
        Some(cache) => cache,
        None => start(store, key, None).await?,
    };
    match cache.list(&request.prefix) {
        Some(response) => Ok(response),
        None => store.range(request).await,
    }
}

/// Starts the cache of `key` at revision `at` (`None`: the latest): its initial list, its
/// etcd watch, its feeder. When another task started one meanwhile, that one is used.
async fn start(store: &EtcdStore, key: Bytes, at: Option<Revision>) -> Result<Arc<Cache>> {
    let (objects, revision) = list(store, &key, at).await?;
    let watch = EtcdWatch::start(&store.inner, &key, revision).await?;
    let caches = &store.inner.caches;
    let (progress, progress_wanted) = mpsc::channel(1);
    let cache = Arc::new(Cache {
        prefix: key.clone(),
        state: Mutex::new(State {
            revision,
            events: VecDeque::new(),
            window_start: revision,
            objects,
            subscribers: Vec::new(),
            stopped: false,
            next_id: 0,
        }),
        progress,
        capacity: caches.capacity,
    });
    {
        let mut map = caches.map.lock();
        if let Some(running) = map.get(&key) {
            return Ok(Arc::clone(running));
        }
        map.insert(key.clone(), Arc::clone(&cache));
    }
    debug!(prefix = %String::from_utf8_lossy(&key), revision, "watch cache started");
    caches.feeders.fetch_add(1, Ordering::AcqRel);
    tokio::spawn(feed(
        Arc::clone(&store.inner),
        Arc::clone(&cache),
        watch,
        progress_wanted,
        caches.stop.clone(),
    ));
    Ok(cache)
}

/// Every key under `key` at `at` (`None`: the latest), page by page on one snapshot.
async fn list(
    store: &EtcdStore,
    key: &Bytes,
    at: Option<Revision>,
) -> Result<(BTreeMap<Bytes, KeyValue>, Revision)> {
    let mut objects = BTreeMap::new();
    let mut request = RangeRequest::prefix(key.clone()).limit(LIST_PAGE);
    request.revision = at;
    loop {
        let page = store.range(request.clone()).await?;
        let more = page.more();
        request.revision = Some(page.revision);
        if let Some(last) = page.items.last() {
            request.start_after = Some(last.key.clone());
        }
        objects.extend(page.items.into_iter().map(|kv| (kv.key.clone(), kv)));
        if !more {
            return Ok((objects, page.revision));
        }
    }
}

/// The feeder: follows the cache's etcd watch until it ends or the store is dropped.
async fn feed(
    inner: Arc<Inner>,
    cache: Arc<Cache>,
    mut watch: EtcdWatch,
    mut progress_wanted: mpsc::Receiver<()>,
    stop: CancellationToken,
) {
    let error = loop {
        tokio::select! {
            () = stop.cancelled() => break Error::Closed,
            Some(()) = progress_wanted.recv() => watch.request_progress(),
            item = watch.next() => match item {
                Some(Ok(WatchItem::Event(event))) => cache.apply(event),
                Some(Ok(WatchItem::Progress(at))) => {
                    if cache.progressed(at) {
                        watch.request_progress();
                    }
                }
                Some(Err(err)) => break err,
                None => break Error::Closed,
            },
        }
    };
    debug!(
        prefix = %String::from_utf8_lossy(&cache.prefix),
        error = %error,
        "watch cache stopped"
    );
    {
        let mut map = inner.caches.map.lock();
        if map
            .get(&cache.prefix)
            .is_some_and(|running| Arc::ptr_eq(running, &cache))
        {
            map.remove(&cache.prefix);
        }
    }
    cache.stop(&error);
    inner.caches.feeders.fetch_sub(1, Ordering::AcqRel);
}

/// One resource prefix's cache.
struct Cache {
    prefix: Bytes,
    state: Mutex<State>,
    /// Asks the feeder for a progress answer (capacity 1: one pending covers all).
    progress: mpsc::Sender<()>,
    capacity: usize,
}

/// What a cache knows, under its lock.
struct State {
    /// Every change under the prefix up to this revision has been applied.
    revision: Revision,
    /// The last events, oldest first: every event above `window_start` is here.
    events: VecDeque<Arc<Event>>,
    window_start: Revision,
    /// The keys under the prefix at `revision`.
    objects: BTreeMap<Bytes, KeyValue>,
    subscribers: Vec<Subscriber>,
    /// The feeder has ended: nothing is applied any more.
    stopped: bool,
    next_id: u64,
}

/// One watch served by a cache.
struct Subscriber {
    id: u64,
    /// Only keys starting with this.
    filter: Bytes,
    /// Only events after this revision.
    after: Revision,
    items: mpsc::Sender<Result<WatchItem>>,
    /// Asked for progress, not yet answered.
    wants_progress: bool,
}

impl Subscriber {
    /// Queues `item` without waiting; false when the subscriber is gone or lagged (a full
    /// channel: dropping the sender ends its stream with `WatcherLagged`).
    fn send(&self, item: WatchItem) -> bool {
        match self.items.try_send(Ok(item)) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                debug!(filter = %String::from_utf8_lossy(&self.filter), "cached watcher lagged");
                false
            }
            Err(TrySendError::Closed(_)) => false,
        }
    }
}

impl Cache {
    /// A subscriber for keys under `filter` after `after`, its missed events replayed from the
    /// window; `None` when the window cannot replay them exactly (too old, too many for
    /// `buffer`) or the cache has stopped.
    fn subscribe(
        self: &Arc<Self>,
        filter: Bytes,
        after: Revision,
        buffer: usize,
    ) -> Option<CachedWatch> {
        let mut state = self.state.lock();
        if state.stopped || after < state.window_start {
            return None;
        }
        let (sender, items) = mpsc::channel(buffer);
        let replay = state
            .events
            .iter()
            .filter(|event| event.revision() > after && event.kv.key.starts_with(&filter));
        for event in replay {
            if sender
                .try_send(Ok(WatchItem::Event(Arc::clone(event))))
                .is_err()
            {
                return None;
            }
        }
        let id = state.next_id;
        state.next_id += 1;
        state.subscribers.push(Subscriber {
            id,
            filter,
            after,
            items: sender,
            wants_progress: false,
        });
        Some(CachedWatch {
            cache: Arc::clone(self),
            id,
            inbox: Inbox::new(items, after),
        })
    }

    /// The objects under `prefix` at the cache's revision; `None` once stopped.
    fn list(&self, prefix: &Bytes) -> Option<RangeResponse> {
        let state = self.state.lock();
        if state.stopped {
            return None;
        }
        let items = state
            .objects
            .range::<Bytes, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .map(|(_, kv)| kv.clone())
            .collect();
        Some(RangeResponse {
            items,
            revision: state.revision,
            remaining: 0,
        })
    }

    /// Applies one event: objects, window, subscribers.
    fn apply(&self, event: Arc<Event>) {
        let mut state = self.state.lock();
        let at = event.revision();
        match event.kind {
            EventKind::Put => {
                state.objects.insert(event.kv.key.clone(), event.kv.clone());
            }
            EventKind::Delete => {
                state.objects.remove(&event.kv.key);
            }
        }
        state.revision = state.revision.max(at);
        state.subscribers.retain(|subscriber| {
            if at <= subscriber.after || !event.kv.key.starts_with(&subscriber.filter) {
                return !subscriber.items.is_closed();
            }
            subscriber.send(WatchItem::Event(Arc::clone(&event)))
        });
        state.events.push_back(event);
        while state.events.len() > self.capacity {
            if let Some(dropped) = state.events.pop_front() {
                state.window_start = dropped.revision();
            }
        }
    }

    /// Etcd's watch has delivered everything up to `at`: answers the subscribers that asked.
    /// Returns whether one still waits for more (its start is later than `at`).
    fn progressed(&self, at: Revision) -> bool {
        let mut state = self.state.lock();
        state.revision = state.revision.max(at);
        let mut waiting = false;
        state.subscribers.retain_mut(|subscriber| {
            if !subscriber.wants_progress {
                return true;
            }
            if at < subscriber.after {
                waiting = true;
                return true;
            }
            subscriber.wants_progress = false;
            subscriber.send(WatchItem::Progress(at))
        });
        waiting
    }

    /// Asks for progress on behalf of subscriber `id`.
    fn want_progress(&self, id: u64) {
        {
            let mut state = self.state.lock();
            if let Some(subscriber) = state.subscribers.iter_mut().find(|s| s.id == id) {
                subscriber.wants_progress = true;
            }
        }
        // Full: a request is already pending, its answer covers this one.
        let _ = self.progress.try_send(());
    }

    /// The feeder has ended with `error`: every subscriber ends with it.
    fn stop(&self, error: &Error) {
        let mut state = self.state.lock();
        state.stopped = true;
        for subscriber in state.subscribers.drain(..) {
            // A full channel: the subscriber ends as lagging instead, which also re-watches.
            let _ = subscriber.items.try_send(Err(error.clone()));
        }
    }

    fn unsubscribe(&self, id: u64) {
        self.state.lock().subscribers.retain(|s| s.id != id);
    }
}

/// A watch served by a cache.
pub(crate) struct CachedWatch {
    cache: Arc<Cache>,
    id: u64,
    inbox: Inbox,
}

impl Stream for CachedWatch {
    type Item = Result<WatchItem>;

    /// A closed channel means the cache dropped this watcher for lagging.
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().inbox.poll(cx, || None)
    }
}

impl Watch for CachedWatch {
    fn request_progress(&mut self) {
        self.cache.want_progress(self.id);
    }
}

impl Drop for CachedWatch {
    fn drop(&mut self) {
        self.cache.unsubscribe(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_prefix_is_cut_after_the_depth_th_slash() {
        let cut = |prefix: &str, depth| cache_prefix(prefix.as_bytes(), depth);
        assert_eq!(
            cut("/registry/core/pods/default/web", 4),
            Some(Bytes::from_static(b"/registry/core/pods/"))
        );
        assert_eq!(
            cut("/registry/core/pods/", 4),
            Some(Bytes::from_static(b"/registry/core/pods/"))
        );
        assert_eq!(cut("/registry/core/pods", 4), None);
        assert_eq!(cut("/registry/", 4), None);
        assert_eq!(cut("", 4), None);
        assert_eq!(cut("a/3", 1), Some(Bytes::from_static(b"a/")));
        assert_eq!(cut("b", 1), None);
        assert_eq!(cut("a/", 0), None);
    }
}
