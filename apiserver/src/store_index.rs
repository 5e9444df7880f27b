//! In-memory indexes the server keeps over one key prefix of its store (RBAC's roles and
//! bindings, the admission webhook configurations and policies, the Faults): loaded at
//! startup, then followed by a watch from the revision read (listed again when the watch
//! fails, as after a compaction), until shutdown. One implementation of that loop and of
//! "caught up": a write of an indexed object answers only once the index reflects it
//! ([`Progress::synced`]), so the next request sees it, as upstream's informers plus
//! `WaitForCacheSync` would not guarantee but users expect.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use kubemock_storage::{EventKind, KeyValue, Kv, RangeRequest, Revision, WatchItem};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use crate::status::{ApiError, ApiResult};

/// How long a write waits for an index to catch up before it answers anyway (the watch
/// delivers in microseconds; this bounds a stalled one).
const SYNC_WAIT: Duration = Duration::from_secs(5);
/// Pause before listing again after the watch failed.
const RELIST_DELAY: Duration = Duration::from_millis(100);

/// An index over the store's keys under [`StoreIndex::PREFIX`].
pub(crate) trait StoreIndex: Send + Sync + 'static {
    /// The index, as logs name it (`"RBAC index"`).
    const NAME: &'static str;
    /// The key prefix it holds.
    const PREFIX: &'static str;
    /// Replaces its content with `items`, every key under the prefix at one revision.
    fn replace(&self, items: &[KeyValue]);
    /// Applies one stored object (a put) or its removal, under its storage key.
    fn apply(&self, key: &[u8], value: Option<&[u8]>);
    /// How far it has caught up.
    fn progress(&self) -> &Progress;
}

/// How far an index has caught up with the store.
#[derive(Debug)]
pub(crate) struct Progress {
    caught_up: watch::Sender<Revision>,
    /// Asks the follower's watch for a progress notification (a write the index does not
    /// hold may be followed by none for a while).
    wanted: Notify,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            caught_up: watch::Sender::new(0),
            wanted: Notify::new(),
        }
    }
}

impl Progress {
    /// Records that the index reflects every change up to `revision`.
    pub(crate) fn caught_up(&self, revision: Revision) {
        self.caught_up.send_if_modified(|current| {
            let moved = revision > *current;
            if moved {
                *current = revision;
            }
            moved
        });
    }

    /// Waits (at most [`SYNC_WAIT`]) until the index `name` reflects every change up to
    /// `revision`.
    pub(crate) async fn synced(&self, revision: Revision, name: &str) {
        let mut progress = self.caught_up.subscribe();
        if *progress.borrow_and_update() >= revision {
            return;
        }
        self.wanted.notify_one();
        let caught_up = progress.wait_for(|seen| *seen >= revision);
        if tokio::time::timeout(SYNC_WAIT, caught_up).await.is_err() {
            warn!(revision, index = name, "the index did not catch up in time");
        }
    }
}

/// Loads `index` from the store, then follows it on a task of `tasks` until `shutdown`.
pub(crate) async fn start<I: StoreIndex>(
    index: &Arc<I>,
    store: &Arc<dyn Kv>,
    shutdown: &CancellationToken,
    tasks: &TaskTracker,
) -> ApiResult<()> {
    let revision = load(store.as_ref(), index.as_ref()).await?;
    tasks.spawn(follow(
        Arc::clone(store),
        shutdown.clone(),
        Arc::clone(index),
        revision,
    ));
    Ok(())
}

/// Reads every key under the prefix into the index; returns the revision read at.
async fn load<I: StoreIndex>(store: &dyn Kv, index: &I) -> ApiResult<Revision> {
    let listed = store
        .range(RangeRequest::prefix(I::PREFIX))
        .await
        .map_err(ApiError::from_storage)?;
    index.replace(&listed.items);
    index.progress().caught_up(listed.revision);
    debug!(
        index = I::NAME,
        objects = listed.items.len(),
        revision = listed.revision,
        "index loaded"
    );
    Ok(listed.revision)
}

/// Applies every change after `revision`; lists again when the watch fails (compacted, cut
/// off for lagging), until `shutdown`.
async fn follow<I: StoreIndex>(
    store: Arc<dyn Kv>,
    shutdown: CancellationToken,
    index: Arc<I>,
    mut revision: Revision,
) {
    let progress = index.progress();
    loop {
        match store.watch(I::PREFIX.into(), revision).await {
            Ok(mut watch) => loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = progress.wanted.notified() => watch.request_progress(),
                    item = watch.next() => match item {
                        Some(Ok(WatchItem::Event(event))) => {
                            let value = match event.kind {
                                EventKind::Put => Some(event.kv.value.as_ref()),
                                EventKind::Delete => None,
                            };
                            index.apply(&event.kv.key, value);
                            revision = event.revision();
                            progress.caught_up(revision);
                        }
                        Some(Ok(WatchItem::Progress(seen))) => progress.caught_up(seen),
                        Some(Err(err)) => {
                            warn!(index = I::NAME, error = %err, "index watch failed; listing again");
                            break;
                        }
                        None => break,
                    },
                }
            },
            Err(err) => warn!(index = I::NAME, error = %err, "index cannot watch; listing again"),
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(RELIST_DELAY) => {}
        }
        match load(store.as_ref(), index.as_ref()).await {
            Ok(listed) => revision = listed,
            Err(err) => warn!(index = I::NAME, error = %err.message, "index cannot list"),
        }
    }
}
