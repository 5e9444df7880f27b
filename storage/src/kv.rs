//! The store's contract, shaped after etcd's KV and Watch APIs so that an etcd-backed
//! implementation (`kubemock-storage-etcd`) serves the same callers (`docs/store.md`,
//! `docs/etcd.md`; the API server reaches the store only through it). Keys and values are bytes; revisions are integers. Expected outcomes (absent,
//! exists, conflict) are values of the outcome enums here; [`crate::Error`] is for everything
//! else.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures_core::Stream;

use crate::Revision;
use crate::error::Result;

/// A key with its value and the three counters every key carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    /// The key.
    pub key: Bytes,
    /// The value (empty in the `kv` of a delete event).
    pub value: Bytes,
    /// Revision at which this generation of the key was created.
    pub create_revision: Revision,
    /// Revision of the last change to the key (a delete event: the delete's revision).
    pub mod_revision: Revision,
    /// Number of changes to this generation of the key; 1 after create.
    pub version: u64,
}

/// Condition on an update or delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Apply to whatever is current.
    Unconditional,
    /// Apply only if the key's current `mod_revision` is this one (optimistic concurrency).
    ModRevision(Revision),
}

/// A range read: keys starting with `prefix`, in byte order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeRequest {
    /// Only keys starting with these bytes (empty: every key).
    pub prefix: Bytes,
    /// Only keys strictly after this one (pagination).
    pub start_after: Option<Bytes>,
    /// At most this many items; `None` for all.
    pub limit: Option<usize>,
    /// Read at this revision instead of the latest.
    pub revision: Option<Revision>,
}

impl RangeRequest {
    /// Every key starting with `prefix`, at the latest revision.
    pub fn prefix(prefix: impl Into<Bytes>) -> Self {
        RangeRequest {
            prefix: prefix.into(),
            ..RangeRequest::default()
        }
    }

    /// Only keys strictly after `key`.
    #[must_use]
    pub fn start_after(mut self, key: impl Into<Bytes>) -> Self {
        self.start_after = Some(key.into());
        self
    }

    /// At most `limit` items.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Read the snapshot at `revision`.
    #[must_use]
    pub fn at_revision(mut self, revision: Revision) -> Self {
        self.revision = Some(revision);
        self
    }
}

/// The answer to a [`RangeRequest`]: one consistent snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeResponse {
    /// The matching items, in key order.
    pub items: Vec<KeyValue>,
    /// The snapshot's revision: the requested one, or the current one.
    pub revision: Revision,
    /// How many more keys match after the last returned item (0 when `items` holds all).
    pub remaining: u64,
}

impl RangeResponse {
    /// True when the limit cut the result short.
    pub fn more(&self) -> bool {
        self.remaining > 0
    }
}

/// The answer to a get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetResponse {
    /// The key's value at the snapshot, if it existed then.
    pub kv: Option<KeyValue>,
    /// The snapshot's revision.
    pub revision: Revision,
}

/// The outcome of a create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutcome {
    /// Created; the new key with its revision.
    Created(KeyValue),
    /// The key exists; its current state.
    AlreadyExists(KeyValue),
}

/// The outcome of an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// Written.
    Updated {
        /// The key as written, with its new `mod_revision`.
        kv: KeyValue,
        /// The key as it was before.
        prev: KeyValue,
    },
    /// The key does not exist.
    NotFound,
    /// The guard did not match; the key's current state.
    Conflict(KeyValue),
}

/// The outcome of a delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// Deleted at `revision`.
    Deleted {
        /// The delete's revision.
        revision: Revision,
        /// The key as it was before the delete.
        prev: KeyValue,
    },
    /// The key does not exist.
    NotFound,
    /// The guard did not match; the key's current state.
    Conflict(KeyValue),
}

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Created or updated.
    Put,
    /// Deleted.
    Delete,
}

/// One committed change, as a watcher sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// What the change did.
    pub kind: EventKind,
    /// The key after the change. For a delete: the key, an empty value, counters 0 and the
    /// delete's revision as `mod_revision` (as etcd reports it).
    pub kv: KeyValue,
    /// The key before the change, if it existed.
    pub prev: Option<KeyValue>,
}

impl Event {
    /// The change's revision.
    pub fn revision(&self) -> Revision {
        self.kv.mod_revision
    }
}

/// An item of a watch stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchItem {
    /// A change, in revision order. Shared: one event reaches many watchers.
    Event(Arc<Event>),
    /// Answer to [`Watch::request_progress`]: every change up to this revision under the
    /// watched prefix has been delivered (the source of Kubernetes BOOKMARK events).
    Progress(Revision),
}

/// A watch: a stream of [`WatchItem`]s that ends after yielding one error (compaction, lag,
/// close) or never.
pub trait Watch: Stream<Item = Result<WatchItem>> + Send + Unpin {
    /// Asks for a [`WatchItem::Progress`]: it is yielded as soon as nothing else is pending
    /// for this watcher (like etcd's `RequestProgress`).
    fn request_progress(&mut self);
}

/// A gauge a backend reports for `/metrics` ([`Kv::gauges`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gauge {
    /// The metric's name.
    pub name: &'static str,
    /// Its `# HELP` text.
    pub help: &'static str,
    /// Its value now.
    pub value: u64,
}

/// A boxed watch, as [`Kv::watch`] returns it.
pub type WatchStream = Box<dyn Watch>;

/// The store: etcd's KV and Watch APIs over bytes. Every method is async because a networked
/// implementation needs it; the sled implementation answers reads without waiting and writes
/// once they are durable.
#[async_trait]
pub trait Kv: Send + Sync {
    /// The value of `key` at `revision` (default: latest).
    async fn get(&self, key: &[u8], revision: Option<Revision>) -> Result<GetResponse>;

    /// The mod revision of `key`'s latest value, `None` when it does not exist: a get without
    /// the value, for callers that cache what they derive from a value and only need to know
    /// whether it changed.
    async fn mod_revision(&self, key: &[u8]) -> Result<Option<Revision>>;

    /// Keys under a prefix, in key order, from one snapshot.
    async fn range(&self, request: RangeRequest) -> Result<RangeResponse>;

    /// A range that may be answered at a revision older than the latest, from a cache
    /// (Kubernetes' `resourceVersion=0` list: "any version"). The answer is still one
    /// consistent snapshot, at the revision it reports. By default it is [`Kv::range`]; the
    /// etcd store answers whole prefixes from its watch cache (`docs/etcd.md`).
    async fn range_any(&self, request: RangeRequest) -> Result<RangeResponse> {
        self.range(request).await
    }

    /// Creates `key`; fails (as a value) if it exists.
    async fn create(&self, key: Bytes, value: Bytes) -> Result<CreateOutcome>;

    /// Replaces the value of an existing `key`.
    async fn update(&self, key: Bytes, value: Bytes, guard: Guard) -> Result<UpdateOutcome>;

    /// Deletes `key`.
    async fn delete(&self, key: Bytes, guard: Guard) -> Result<DeleteOutcome>;

    /// Every change under `prefix` with a revision strictly greater than `after`: history
    /// first, then live changes, in revision order, with no gap and no duplicate. `after` must
    /// be at least the compaction point and at most the current revision.
    async fn watch(&self, prefix: Bytes, after: Revision) -> Result<WatchStream>;

    /// The current revision: the last change visible to readers and watchers.
    async fn current_revision(&self) -> Result<Revision>;

    /// The backend's own gauges for `/metrics` (the etcd store's watch counts); none by
    /// default.
    fn gauges(&self) -> Vec<Gauge> {
        Vec::new()
    }

    /// The current revision when the implementation holds it in memory and can answer without
    /// a future (the sled store: one atomic load); `None` when it cannot (then ask
    /// [`Kv::current_revision`]). For per-request bookkeeping such as the request log, where
    /// the boxed future of an async trait call is a measurable share of a GET's cost.
    fn revision_now(&self) -> Option<Revision> {
        None
    }

    /// True when this process is the store's only writer (the embedded store, which one
    /// process opens); false when other processes may write it too (etcd). State derived from
    /// stored objects may then be rebuilt exactly from them, with no writer of another
    /// process in flight (the Service address allocator's repair, `docs/etcd.md`).
    fn sole_writer(&self) -> bool {
        false
    }

    /// The compaction point: the oldest revision still readable.
    async fn compacted_revision(&self) -> Result<Revision>;

    /// Drops history older than `revision` (keeping every key's state at `revision`); returns
    /// the compaction point afterwards. Compacting at or below the current point is a no-op.
    async fn compact(&self, revision: Revision) -> Result<Revision>;
}
