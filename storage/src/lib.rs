//! kubemock-storage: a revisioned (etcd-like) MVCC key-value store on sled (in memory when
//! ephemeral), with watch and compaction. Every resourceVersion, watch, paginated list and
//! optimistic-concurrency conflict of the API server above comes from here.
//!
//! It knows nothing of HTTP, JSON or Kubernetes kinds: keys and values are bytes, revisions are
//! integers. Callers use the [`Kv`] trait (etcd's KV + Watch API), which the etcd-backed
//! implementation (crate `kubemock-storage-etcd`, `docs/etcd.md`) implements too, so callers
//! do not know which one they have.
//!
//! # Tour
//!
//! ```
//! use futures_util::StreamExt;
//! use kubemock_storage::{Config, CreateOutcome, Guard, Kv, RangeRequest, SledStore,
//!     UpdateOutcome, WatchItem};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> kubemock_storage::Result<()> {
//! let store = SledStore::open(Config::ephemeral())?;   // Config::durable(dir) for a data directory
//!
//! // Every change takes the next global revision.
//! let CreateOutcome::Created(a) = store.create("/cm/a".into(), "1".into()).await? else { panic!() };
//! assert_eq!((a.mod_revision, a.version), (1, 1));
//!
//! // Guarded writes: optimistic concurrency on mod_revision.
//! let stale = Guard::ModRevision(0);
//! assert!(matches!(store.update("/cm/a".into(), "2".into(), stale).await?, UpdateOutcome::Conflict(_)));
//! store.update("/cm/a".into(), "2".into(), Guard::ModRevision(1)).await?;
//!
//! // Reads at the latest or an older revision, by prefix, paginated.
//! let old = store.get(b"/cm/a", Some(1)).await?;
//! assert_eq!(old.kv.unwrap().value, "1");
//! let page = store.range(RangeRequest::prefix("/cm/").limit(10)).await?;
//! assert_eq!((page.items.len(), page.revision), (1, 2));
//!
//! // Watch from an old revision: history, then live changes.
//! let mut watch = store.watch("/cm/".into(), 0).await?;
//! let Some(Ok(WatchItem::Event(first))) = watch.next().await else { panic!() };
//! assert_eq!(first.revision(), 1);
//! # Ok(()) }
//! ```
//!
//! # Layout
//! - `kv`: the [`Kv`] trait and its request, response and event types.
//! - `error`: [`Error`]: compaction, future revisions, lag, close, backend and corruption.
//! - `revision`: the [`Revision`] type and the history record format.
//! - `index`: the in-memory key index (key to revisions), loaded on open.
//! - `checkpoint`: checkpoints of the index, so that open reads the history after the last one
//!   only.
//! - `tips`: each key's latest change, readable without the writer's lock.
//! - `backend`: the history log: sled on disk (the only module that names it; large records in
//!   pieces), or memory for an ephemeral store.
//! - `budget`: the history's bytes, by the revision compaction frees them at.
//! - `store`: [`SledStore`]: reads, the single writer, group commit, open and close.
//! - `watch`: replay then live delivery, the hub, progress.
//! - `compaction`: on-demand and background compaction with a retention window and a byte
//!   budget.
//!
//! # Guarantees
//! 1. One global revision: every committed change takes the next one; strictly increasing,
//!    contiguous, never reused for a change anyone has seen, also across restarts.
//! 2. Every key carries `create_revision`, `mod_revision` and `version`.
//! 3. Updates and deletes can be guarded by the expected `mod_revision`; a mismatch is a
//!    `Conflict` outcome carrying the current state.
//! 4. Get and range at the latest or any retained older revision; a range is one snapshot.
//! 5. Watch: history then live, in revision order, no gap, no duplicate; a watcher that cannot
//!    keep up (its buffer full, in events or in bytes) ends with [`Error::WatcherLagged`] and
//!    never slows writers.
//! 6. Progress: a watcher can learn the revision up to which it has seen everything.
//! 7. Compaction in the background (retention by count and age, overridden by a budget of
//!    history bytes) and on demand; reads and watches below the compaction point fail with
//!    [`Error::Compacted`], above the current revision with [`Error::FutureRevision`].
//! 8. Durability: with a data directory a write is acknowledged only after a flush covering it
//!    (group commit), and nobody sees a change before it is durable. Without one, the
//!    history lives in memory and nothing touches the disk.
//! 9. Reopen recovers the revision, the keys and the history since the compaction point,
//!    reading the index's last checkpoint and the history written after it.

mod backend;
mod budget;
mod checkpoint;
mod compaction;
mod error;
mod index;
mod kv;
mod ranked;
mod revision;
mod store;
mod tips;
mod watch;

pub use compaction::retention_target;
pub use error::{BackendError, Error, Result};
pub use kv::{
    CreateOutcome, DeleteOutcome, Event, EventKind, Gauge, GetResponse, Guard, KeyValue, Kv,
    RangeRequest, RangeResponse, UpdateOutcome, Watch, WatchItem, WatchStream,
};
pub use revision::Revision;
pub use store::{
    Config, DEFAULT_CACHE_CAPACITY, DEFAULT_CHECKPOINT_EVERY, DEFAULT_COMPACTION_INTERVAL,
    DEFAULT_HISTORY_BUDGET, DEFAULT_WATCH_BUFFER, DEFAULT_WATCH_BUFFER_BYTES, Retention, SledStore,
};
