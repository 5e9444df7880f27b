//! The reflector: applies the watcher's events to a [`Store`], so the cache mirrors the server.
//! A relist's objects are buffered between `Init` and `InitDone` and swapped in at once; the
//! swap reports objects that vanished meanwhile as deletions (in their last known state).

pub mod store;

use futures_util::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::resource::Resource;
use crate::watcher::Event;

pub use store::{Change, IndexFn, NAMESPACE_INDEX, Store};

/// The one writer of a [`Store`]: turns watcher events into cache changes.
pub struct Writer<K> {
    store: Store<K>,
    /// Objects of the relist in progress (`None` when no relist is in progress).
    relist: Option<Vec<K>>,
}

impl<K: Resource> Writer<K> {
    /// A writer of `store`. There must be only one per store.
    pub fn new(store: Store<K>) -> Self {
        Writer {
            store,
            relist: None,
        }
    }

    /// The store written.
    pub fn store(&self) -> &Store<K> {
        &self.store
    }

    /// Applies one watcher event; returns the resulting changes (none while a relist is
    /// buffered, all of them at its end).
    pub fn apply(&mut self, event: Event<K>) -> Vec<Change<K>> {
        match event {
            Event::Init => {
                self.relist = Some(Vec::new());
                Vec::new()
            }
            Event::InitApply(obj) => {
                match &mut self.relist {
                    Some(buffer) => buffer.push(obj),
                    // An object outside a relist bracket: apply it directly.
                    None => return self.store.apply(obj).into_iter().collect(),
                }
                Vec::new()
            }
            Event::InitDone => {
                let objects = self.relist.take().unwrap_or_default();
                self.store.replace(objects)
            }
            Event::Apply(obj) => self.store.apply(obj).into_iter().collect(),
            Event::Delete(obj) => self.store.delete(obj).into_iter().collect(),
        }
    }
}

/// Runs a reflector: feeds `events` (a [`crate::watcher::Watcher`] stream) into `writer`
/// until `token` is cancelled, calling `on_changes` with what each event changed. Watcher
/// errors are logged; the watcher retries by itself.
pub async fn run<K, S, F>(
    mut writer: Writer<K>,
    events: S,
    token: CancellationToken,
    mut on_changes: F,
) where
    K: Resource,
    S: Stream<Item = crate::Result<Event<K>>>,
    F: FnMut(&mut Writer<K>, Event<K>),
{
    let mut events = std::pin::pin!(events);
    loop {
        let next = tokio::select! {
            _ = token.cancelled() => break,
            next = events.next() => next,
        };
        match next {
            Some(Ok(event)) => on_changes(&mut writer, event),
            Some(Err(err)) => {
                // Which type: a watch that fell behind says only its revisions.
                tracing::warn!(
                    error = %err,
                    kind = std::any::type_name::<K>(),
                    "watch failed; retrying after a backoff"
                );
            }
            None => break,
        }
    }
}
