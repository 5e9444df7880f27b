//! The sled-backed store: reads at any retained revision, writes through one writer, and the
//! group commit that makes a write durable before anyone sees it.
//!
//! Write path. A write takes the `state` write lock (the single writer), checks existence and
//! its guard against the index, takes the next revision, updates the index and, in ephemeral
//! mode, inserts the history record into the memory log and publishes the event to watchers at
//! once. In durable mode it queues the event and its record instead; the group-commit thread,
//! as soon as events are pending (after yielding its time slice once, so that writers already
//! runnable join the same flush; there is no timer), writes the queued records to sled, calls
//! sled's blocking `flush()`, then publishes everything the flush covered and acknowledges the
//! writers waiting on it. Many writers share one flush, and no writer holds the lock while sled
//! inserts its record.
//!
//! Visibility. Readers and watchers see the *published* revision only: a read at "latest" is a
//! read at the published revision, and the index's newer, not yet durable entries are ignored.
//! So nobody observes a change that a crash could undo, and revisions never go backwards across
//! a restart. Writers check guards against everything committed (there is one writer), and even
//! a failed write (exists, conflict, absent) waits until what it observed is durable.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};
use tokio::sync::oneshot;
use tracing::{error, info, warn};

use crate::Revision;
use crate::backend::{Backend, BackendConfig, PIECE_MISSING, RawRecord};
use crate::budget::Ledger;
use crate::checkpoint;
use crate::error::{BackendError, Error, Result};
use crate::index::{Entry, Index, history_of};
use crate::kv::{
    CreateOutcome, DeleteOutcome, Event, EventKind, GetResponse, Guard, KeyValue, Kv, RangeRequest,
    RangeResponse, UpdateOutcome, WatchStream,
};
use crate::revision::{Packed, Record, RecordKind, Value, pack};
use crate::tips::{Tip, Tips};
use crate::watch::{Hub, Positions, SledWatch};

/// sled's page cache defaults to 1 GiB; a test server should not reserve that much. Objects
/// are read through the cache but the working set of a test is small.
pub const DEFAULT_CACHE_CAPACITY: u64 = 64 * 1024 * 1024;
/// Events a watcher may have queued before it is cut off as lagging: about a second of a busy
/// store's writes, so a healthy consumer never hits it, and at most this many `Arc`s per watcher.
pub const DEFAULT_WATCH_BUFFER: usize = 1024;
/// Bytes (keys and values, previous values included) a watcher may have queued before it is cut
/// off as lagging, whatever the event count: 1,024 queued events of 1 MiB objects would be
/// 1 GiB per watcher. 64 MiB is about half a second of a single writer replacing 1 MiB objects
/// as fast as the store takes them, so a consumer that keeps up never meets it.
pub const DEFAULT_WATCH_BUFFER_BYTES: u64 = 64 * 1024 * 1024;
/// A durable store checkpoints its key index after at least this many revisions (and when it
/// closes), so that open reads the checkpoint and little history after it. Without a floor a
/// small index would be checkpointed every few writes.
pub const DEFAULT_CHECKPOINT_EVERY: u64 = 1_000;
/// The checkpoint interval grows to the index's entries divided by this. Replaying a record at
/// open cost about 100 times as much as reading an index entry from a checkpoint (ConfigMaps
/// of a few hundred bytes to 24 KiB: about 10 µs against 0.1 µs), so with 16 the history after
/// a checkpoint costs open at most about six times the checkpoint's own reading, and writing
/// checkpoints costs about 16 encoded entries a write (a background thread's microsecond).
const CHECKPOINT_INDEX_SHARE: u64 = 16;
/// How often the background compactor samples the revision and applies the retention: fine
/// enough that history never exceeds the retention by much, rare enough to cost nothing.
pub const DEFAULT_COMPACTION_INTERVAL: Duration = Duration::from_secs(30);
/// How many bytes of history (superseded values and tombstones) the store keeps before the
/// compactor drops the oldest regardless of the [`Retention`] floors (`budget.rs`): in memory
/// for an ephemeral store, on disk for a durable one. A test server under a sustained load of
/// tens of thousands of writes a second, or one rewriting large objects, would otherwise hold
/// five minutes or 10,000 revisions of them: gigabytes.
pub const DEFAULT_HISTORY_BUDGET: u64 = 256 * 1024 * 1024;

/// How much history the background compactor keeps. Both minimums hold: history is dropped
/// only when it is older than `min_age` *and* more than `min_revisions` revisions back, unless
/// it outgrows [`Config::history_budget`], which overrides both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Keep at least this many of the latest revisions.
    pub min_revisions: u64,
    /// Keep at least this much time of history.
    pub min_age: Duration,
}

impl Default for Retention {
    /// Five minutes (what a Kubernetes client may hold a resourceVersion for, like etcd's
    /// compaction interval under kube-apiserver) and 10,000 revisions.
    fn default() -> Self {
        Retention {
            min_revisions: 10_000,
            min_age: Duration::from_secs(5 * 60),
        }
    }
}

/// How to open a [`SledStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Data directory for a durable store (sled); `None` for an ephemeral one (history in memory,
    /// never fsyncs, gone when closed).
    pub data_dir: Option<PathBuf>,
    /// sled page cache size in bytes of a durable store (default [`DEFAULT_CACHE_CAPACITY`]).
    pub cache_capacity: u64,
    /// History the background compactor keeps.
    pub retention: Retention,
    /// How often the background compactor runs; `None` disables it (compact on demand only).
    pub compaction_interval: Option<Duration>,
    /// Per-watcher event buffer (default [`DEFAULT_WATCH_BUFFER`]).
    pub watch_buffer: usize,
    /// Per-watcher buffer in bytes (default [`DEFAULT_WATCH_BUFFER_BYTES`]): a watcher with
    /// this much queued is cut off as lagging, however few events that is. A single event
    /// larger than this still reaches a watcher that has nothing queued.
    pub watch_buffer_bytes: u64,
    /// Bytes of history (superseded values and tombstones) the store holds, in memory when
    /// ephemeral and on disk when durable, before the compactor drops the oldest regardless of
    /// the retention (default [`DEFAULT_HISTORY_BUDGET`]; needs the background compactor).
    pub history_budget: u64,
    /// A durable store checkpoints its key index every this many revisions, or every 16th of
    /// its index's entries if that is more (default [`DEFAULT_CHECKPOINT_EVERY`]; 0: only when
    /// it closes).
    pub checkpoint_every: u64,
    /// Whether closing a durable store checkpoints its index (default true, so that the next
    /// open replays no history). Tests turn it off to reopen as after a crash.
    pub checkpoint_at_close: bool,
}

impl Config {
    /// An ephemeral store with default settings.
    pub fn ephemeral() -> Self {
        Config {
            data_dir: None,
            cache_capacity: DEFAULT_CACHE_CAPACITY,
            retention: Retention::default(),
            compaction_interval: Some(DEFAULT_COMPACTION_INTERVAL),
            watch_buffer: DEFAULT_WATCH_BUFFER,
            watch_buffer_bytes: DEFAULT_WATCH_BUFFER_BYTES,
            history_budget: DEFAULT_HISTORY_BUDGET,
            checkpoint_every: DEFAULT_CHECKPOINT_EVERY,
            checkpoint_at_close: true,
        }
    }

    /// A durable store in `dir` with default settings.
    pub fn durable(dir: impl Into<PathBuf>) -> Self {
        Config {
            data_dir: Some(dir.into()),
            ..Config::ephemeral()
        }
    }

    /// Sets the page cache size in bytes.
    #[must_use]
    pub fn cache_capacity(mut self, bytes: u64) -> Self {
        self.cache_capacity = bytes;
        self
    }

    /// Sets the retention of the background compactor.
    #[must_use]
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Sets (or, with `None`, disables) the background compaction interval.
    #[must_use]
    pub fn compaction_interval(mut self, interval: Option<Duration>) -> Self {
        self.compaction_interval = interval;
        self
    }

    /// Sets the history budget, in bytes.
    #[must_use]
    pub fn history_budget(mut self, bytes: u64) -> Self {
        self.history_budget = bytes;
        self
    }

    /// Sets the per-watcher buffer in bytes (at least 1).
    #[must_use]
    pub fn watch_buffer_bytes(mut self, bytes: u64) -> Self {
        self.watch_buffer_bytes = bytes.max(1);
        self
    }

    /// Sets how many revisions apart a durable store checkpoints its index (0: at close only).
    #[must_use]
    pub fn checkpoint_every(mut self, revisions: u64) -> Self {
        self.checkpoint_every = revisions;
        self
    }

    /// Sets whether closing checkpoints the index.
    #[must_use]
    pub fn checkpoint_at_close(mut self, checkpoint: bool) -> Self {
        self.checkpoint_at_close = checkpoint;
        self
    }

    /// Sets the per-watcher event buffer (at least 1).
    #[must_use]
    pub fn watch_buffer(mut self, events: usize) -> Self {
        self.watch_buffer = events.max(1);
        self
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::ephemeral()
    }
}

/// The revisioned store on sled. A cheap-clone handle; the store closes when the last handle
/// is dropped or [`SledStore::close`] is called.
#[derive(Clone)]
pub struct SledStore {
    shared: Arc<Shared>,
    lifecycle: Arc<Lifecycle>,
}

/// State shared by the handles, the background threads and (weakly) the watchers.
///
/// Lock order: `state`, then `pending`, then `hub`; `compaction` is taken before `state`;
/// `durability` alone or under `state`, and nothing is taken under it.
pub(crate) struct Shared {
    pub(crate) backend: Backend,
    /// True with a data directory: writes wait for a flush.
    pub(crate) durable: bool,
    pub(crate) config: Config,
    /// Each key's latest change, for reads that need no more than that without the `state`
    /// lock (`tips.rs`). Recorded by the writer under the `state` write lock.
    pub(crate) tips: Tips,
    /// The key index and the last committed revision. Its write lock is the single writer: it
    /// is held from a write's guard check until its event is queued or published. Readers hold
    /// the read lock only to look entries up.
    pub(crate) state: RwLock<State>,
    /// Events committed but not yet durable (durable mode only). Pushed by writers under
    /// `state`; drained by the group-commit thread after each flush.
    pending: Mutex<Pending>,
    /// Wakes the group-commit thread when `pending` gets an event or shutdown begins.
    pending_cv: Condvar,
    /// Watchers and the published revision (`watch.rs`). Publishing and registering a watcher
    /// are serialised by this lock, so a watcher sees each event exactly once.
    pub(crate) hub: Mutex<Hub>,
    /// Where each open watch stands (`watch.rs`): the background compactor does not compact
    /// past the oldest for the history budget while the history is under
    /// [`crate::compaction::WATCH_HOLD_LIMIT`] budgets. A leaf lock.
    pub(crate) positions: Mutex<Positions>,
    /// The published revision (mirror of the hub's, for lock-free reads): what readers and
    /// watchers see. Written only with the hub lock held.
    pub(crate) published: AtomicU64,
    /// The last committed revision (mirror of `state.committed`, for the group-commit thread).
    committed: AtomicU64,
    /// The compaction point: reads below it fail. Raised before history is removed.
    pub(crate) compacted: AtomicU64,
    /// Serialises compactions (on demand and background).
    pub(crate) compaction: Mutex<()>,
    /// Durable revision, fail-stop state and the writers waiting on group commit. The
    /// revision and the failure are written only by the group-commit thread.
    durability: Mutex<Durability>,
    /// Set (under the `state` write lock) when closing: no write starts after it.
    closed: AtomicBool,
    /// Stop flag of the background threads, with its condition variable (which also wakes
    /// the compactor when the history outgrows its budget, and the checkpointer when one is
    /// due).
    pub(crate) stop: Mutex<bool>,
    pub(crate) stop_cv: Condvar,
    /// Set by the writer when the history exceeds its budget (and the flag was clear, so it
    /// wakes the compactor once); cleared by the compactor when it starts a pass.
    pub(crate) budget_pressure: AtomicBool,
    /// The compactor's passes for the budget so far (tests tell a held pass from none).
    pub(crate) budget_passes: AtomicU64,
    /// The history's bytes by the revision compaction frees them at (`budget.rs`): superseded
    /// values and tombstones (live values are the data itself). Added to by the writer under
    /// the `state` write lock, reduced by compaction; a leaf lock, held for one operation.
    pub(crate) ledger: Mutex<Ledger>,
    /// Bytes of the records of the keys' current values: what the store holds for the objects
    /// that exist now, beside the history the `ledger` counts (`/metrics`). Written by the
    /// writer under the `state` write lock, and once at open.
    live_bytes: AtomicU64,
    /// The revision of the last checkpoint of the index (durable only; `checkpoint.rs`).
    /// Written by whoever writes a checkpoint, under the `compaction` lock.
    pub(crate) checkpointed: AtomicU64,
    /// Index entries in the last checkpoint (or, before the first, loaded at open): the
    /// checkpoint interval grows with it. Written with `checkpointed`.
    pub(crate) checkpoint_entries: AtomicU64,
    /// History records open read after the checkpoint (all of them without one). Set once.
    replayed_at_open: u64,
    /// History records open removed below the compaction point: those a checkpoint still
    /// listed though compaction had removed them, or an interrupted compaction left. Set once.
    removed_at_open: AtomicU64,
    /// Set by the group commit when [`Config::checkpoint_every`] revisions were published
    /// since the last checkpoint; cleared by the checkpointer thread, which it wakes.
    checkpoint_due: AtomicBool,
    /// Compaction removed index entries that the last checkpoint still lists: the next
    /// checkpoint is due even at the same revision, or every open would compact them again and
    /// remove their (long gone) records from the backend once more: after a million
    /// revisions compacted to the last 10,000, each reopen took 720 ms, 310 ms without that
    /// (issue 23's reopen benchmark). Set and cleared under the `compaction` lock.
    pub(crate) checkpoint_stale: AtomicBool,
}

/// What the single writer guards.
pub(crate) struct State {
    pub(crate) index: Index,
    /// The last committed (written to the backend) revision; may be ahead of `published`.
    committed: Revision,
}

struct Pending {
    /// Committed events in revision order, waiting for a flush.
    events: VecDeque<Arc<Event>>,
    /// Their history records, in the same order: the group commit writes them to the backend
    /// before it flushes, outside the writer's lock (see [`Shared::run_group_commit`]), and
    /// drops them with their events once flushed. Until then a writer that needs one reads it
    /// from here ([`Shared::record_for`]).
    records: VecDeque<(Revision, Bytes)>,
    /// Set when closing: the group-commit thread drains `events` and exits.
    shutdown: bool,
}

struct Durability {
    /// Every revision up to this one is durable.
    revision: Revision,
    /// Set when a flush failed: nothing more will become durable.
    failed: Option<BackendError>,
    /// The writers waiting for a revision to become durable, by revision: a write waits for
    /// its own, a refused one (a conflict, say) for the revision it read at, which others may
    /// wait for too. A flush wakes exactly the writers it covers: with one channel that all of
    /// them watched, each flush woke every waiting writer, and at 64 concurrent creates most
    /// of them only to wait again.
    waiting: BTreeMap<Revision, Vec<oneshot::Sender<()>>>,
}

/// A change the writer applies to one key.
enum Change {
    Put {
        value: Bytes,
        /// The value compressed for its record ([`pack`], before the writer's lock), if that
        /// pays.
        packed: Option<Packed>,
        /// `None` for a new generation (the create's own revision).
        create_revision: Option<Revision>,
        version: u64,
    },
    Delete,
}

/// Why a guarded write of an existing key does not proceed.
enum Refused {
    NotFound,
    Conflict(KeyValue),
}

/// Owns the background threads; dropping the last handle closes the store.
struct Lifecycle {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl SledStore {
    /// Opens (or creates) a store: opens sled, rebuilds the key index from the history log,
    /// finishes an interrupted compaction and starts the background threads. Blocks for as long
    /// as the rebuild takes (call it from `spawn_blocking` in async code if that matters).
    pub fn open(config: Config) -> Result<Self> {
        let started = std::time::Instant::now();
        let backend = Backend::open(&BackendConfig {
            data_dir: config.data_dir.as_deref(),
            cache_capacity: config.cache_capacity,
        })?;
        let compacted = backend.compacted()?;
        let backend_opened = started.elapsed();
        let tips = Tips::default();
        let loaded = load_index(&backend, compacted)?;
        let index_loaded = started.elapsed();
        let current = loaded.last.max(compacted);
        let durable = config.data_dir.is_some();
        let history_budget = config.history_budget;
        let shared = Arc::new(Shared {
            backend,
            durable,
            tips,
            state: RwLock::new(State {
                index: loaded.index,
                committed: current,
            }),
            pending: Mutex::new(Pending {
                events: VecDeque::new(),
                records: VecDeque::new(),
                shutdown: false,
            }),
            pending_cv: Condvar::new(),
            hub: Mutex::new(Hub::new(current)),
            positions: Mutex::new(Positions::default()),
            published: AtomicU64::new(current),
            committed: AtomicU64::new(current),
            compacted: AtomicU64::new(compacted),
            compaction: Mutex::new(()),
            durability: Mutex::new(Durability {
                revision: current,
                failed: None,
                waiting: BTreeMap::new(),
            }),
            closed: AtomicBool::new(false),
            stop: Mutex::new(false),
            stop_cv: Condvar::new(),
            budget_pressure: AtomicBool::new(false),
            budget_passes: AtomicU64::new(0),
            ledger: Mutex::new(Ledger::new(history_budget)),
            live_bytes: AtomicU64::new(0),
            checkpointed: AtomicU64::new(loaded.checkpoint),
            checkpoint_due: AtomicBool::new(false),
            checkpoint_stale: AtomicBool::new(false),
            replayed_at_open: loaded.replayed,
            removed_at_open: AtomicU64::new(0),
            checkpoint_entries: AtomicU64::new(0),
            config,
        });
        // A crash between persisting a compaction point and removing the history below it
        // leaves superseded records behind; and a checkpoint names the records compacted away
        // after it (`checkpoint.rs`). Remove them now, and checkpoint without them soon.
        let removed_at_open = match compacted {
            0 => 0,
            _ => shared.remove_history(compacted)?,
        };
        shared
            .removed_at_open
            .store(removed_at_open as u64, Ordering::Release);
        if removed_at_open > 0 && durable {
            shared.checkpoint_stale.store(true, Ordering::Release);
            // The checkpointer, started below, writes one at once.
            if shared.config.checkpoint_every > 0 {
                shared.checkpoint_due.store(true, Ordering::Release);
            }
        }
        {
            let state = shared.state.read();
            let index = &state.index;
            // Two walks of the index side by side: one records every key's tip, the other
            // gathers the history. (Of a reopen of 100,000 keys after a million revisions,
            // recording the tips was about a sixth, gathering the history a twentieth.)
            let entries: usize = index.iter().map(|(_, entries)| entries.len()).sum();
            let record_tips = || {
                let mut tips = shared.tips.loader(index.key_count());
                for (key, entries) in index.iter() {
                    if let Some(last) = entries.last() {
                        tips.record(key, Tip::of(*last));
                    }
                }
            };
            let history = std::thread::scope(|scope| {
                let thread = std::thread::Builder::new()
                    .name("kubemock-open-tips".to_owned())
                    .spawn_scoped(scope, record_tips)
                    .ok();
                if thread.is_none() {
                    // No thread to be had: one walk after the other.
                    record_tips();
                }
                // (Sized first, so that a million entries are not copied as it grows.)
                let mut history = Vec::with_capacity(entries.saturating_sub(index.key_count()));
                let mut live = 0;
                for (_, entries) in index.iter() {
                    history_of(entries, &mut history);
                    live += entries
                        .last()
                        .filter(|entry| entry.is_live())
                        .map_or(0, |entry| entry.size);
                }
                let recorded = thread.is_none_or(|thread| thread.join().is_ok());
                recorded.then_some((history, live))
            });
            let Some((history, live)) = history else {
                return Err(Error::Backend {
                    op: "record the keys' latest changes at open",
                    source: BackendError(Arc::new(std::io::Error::other("the thread panicked"))),
                });
            };
            // The checkpoint interval's basis until the first checkpoint.
            shared
                .checkpoint_entries
                .store(entries as u64, Ordering::Release);
            shared.live_bytes.store(live, Ordering::Release);
            let ledger = Ledger::from_history(history_budget, history);
            // Reopened with a smaller budget: the compactor's first pass is for it.
            if ledger.total() > history_budget {
                shared.budget_pressure.store(true, Ordering::Release);
            }
            *shared.ledger.lock() = ledger;
        }
        let mut threads = Vec::new();
        if durable {
            let for_thread = Arc::clone(&shared);
            threads.push(spawn_thread("kubemock-group-commit", move || {
                for_thread.run_group_commit();
            })?);
            let for_thread = Arc::clone(&shared);
            threads.push(spawn_thread("kubemock-checkpointer", move || {
                for_thread.run_checkpointer();
            })?);
        }
        if let Some(interval) = shared.config.compaction_interval {
            let for_thread = Arc::clone(&shared);
            threads.push(spawn_thread("kubemock-compactor", move || {
                for_thread.run_compactor(interval);
            })?);
        }
        info!(
            durable,
            revision = current,
            compacted,
            checkpoint = loaded.checkpoint,
            replayed = loaded.replayed,
            backend_ms = backend_opened.as_millis() as u64,
            index_ms = (index_loaded - backend_opened).as_millis() as u64,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "store opened"
        );
        Ok(SledStore {
            lifecycle: Arc::new(Lifecycle {
                shared: Arc::clone(&shared),
                threads: Mutex::new(threads),
            }),
            shared,
        })
    }

    /// Closes the store: refuses new operations, makes every committed write durable and
    /// publishes it, ends every watch with [`Error::Closed`] and stops the background threads.
    /// Idempotent; dropping the last handle does the same. The database itself (and, with a
    /// data directory, its file lock) is released when the last handle is dropped, so drop
    /// every handle before opening the same directory again.
    pub fn close(&self) {
        self.lifecycle.shutdown();
    }

    /// True if the store has a data directory.
    pub fn is_durable(&self) -> bool {
        self.shared.durable
    }

    /// The current (published) revision, without a future.
    pub fn revision(&self) -> Revision {
        self.shared.published.load(Ordering::Acquire)
    }

    /// The compaction point, without a future.
    pub fn compaction_point(&self) -> Revision {
        self.shared.compacted.load(Ordering::Acquire)
    }

    /// Number of watchers currently receiving live events.
    pub fn live_watchers(&self) -> usize {
        self.shared.hub.lock().len()
    }

    /// Bytes of history (superseded values and tombstones) the store holds, as its budget
    /// counts them ([`Config::history_budget`]): at most a 64th of the budget above the truth.
    pub fn history_bytes(&self) -> u64 {
        self.shared.ledger.lock().total()
    }

    /// Bytes of the records of the keys' current values (each key's latest change, when it is
    /// not a delete): what the store holds for the objects that exist now, apart from history.
    pub fn live_bytes(&self) -> u64 {
        self.shared.live_bytes.load(Ordering::Relaxed)
    }

    /// How many passes for the history budget the background compactor has made (each
    /// finished, compaction included, when this counts it). Only for tests.
    #[doc(hidden)]
    pub fn budget_passes(&self) -> u64 {
        self.shared.budget_passes.load(Ordering::Acquire)
    }

    /// [`Kv::range`], but counting `remaining` by walking the rest of the range, as the store
    /// did before it kept a counted set of live keys (`docs/store.md`). Only for tests and the
    /// benchmark that compare the two.
    #[doc(hidden)]
    pub fn range_counting_by_walk(&self, request: &RangeRequest) -> Result<RangeResponse> {
        self.shared.range(request, true)
    }

    /// The revision of the last checkpoint of the key index (0 if none; always 0 when
    /// ephemeral). Open replays only the history after it.
    pub fn checkpoint_revision(&self) -> Revision {
        self.shared.checkpointed.load(Ordering::Acquire)
    }

    /// How many history records open read after the index checkpoint (without a checkpoint,
    /// the whole log): what reopening cost beyond the checkpoint itself.
    pub fn replayed_at_open(&self) -> u64 {
        self.shared.replayed_at_open
    }

    /// How many history records open removed below the compaction point: records the index
    /// checkpoint still listed though compaction had removed them (a checkpoint older than the
    /// last compaction, as after a crash), or that an interrupted compaction left behind.
    pub fn removed_at_open(&self) -> u64 {
        self.shared.removed_at_open.load(Ordering::Acquire)
    }

    /// Writes a checkpoint of the key index at the current revision now (durable stores; a
    /// no-op for ephemeral ones), and makes it durable. Blocking. Returns its revision.
    pub fn checkpoint(&self) -> Result<Revision> {
        self.shared.check_open()?;
        self.shared.checkpoint_durably()
    }
}

fn spawn_thread(name: &str, body: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(body)
        .map_err(|source| Error::Backend {
            op: "start a background thread",
            source: BackendError(Arc::new(source)),
        })
}

/// The key index as open finds it.
struct Loaded {
    index: Index,
    /// The last revision the index covers: the log's last record's, or the checkpoint's.
    last: Revision,
    /// The checkpoint's revision (0 without a usable one).
    checkpoint: Revision,
    /// Log records read after the checkpoint.
    replayed: u64,
}

/// Loads the key index: the checkpoint's (`checkpoint.rs`), if there is a usable one, then the
/// log's records after it (etcd's restore, from a snapshot), checking that revisions above the
/// compaction point are contiguous. Without a checkpoint, the whole log.
fn load_index(backend: &Backend, compacted: Revision) -> Result<Loaded> {
    let (mut index, checkpoint) = match backend.read_checkpoint()? {
        None => (Index::default(), 0),
        Some(bytes) => match checkpoint::decode(&bytes) {
            Ok((at, index)) => (index, at),
            Err(err) => {
                warn!(error = %err, "unusable index checkpoint; rebuilding from the whole log");
                (Index::default(), 0)
            }
        },
    };
    let mut last = checkpoint;
    let mut replayed = 0;
    // Below either point the log may have gaps (compacted; or not read, the checkpoint's).
    let mut expected = compacted.max(checkpoint) + 1;
    let from = if checkpoint > 0 { checkpoint + 1 } else { 1 };
    let mut half_removed = Vec::new();
    for item in backend.scan(from, Revision::MAX) {
        let (revision, raw) = match item {
            Ok(item) => item,
            // A removal a crash interrupted (`backend.rs`): compaction had dropped the record.
            Err(Error::CorruptRecord { revision, reason })
                if reason == PIECE_MISSING && revision <= compacted =>
            {
                half_removed.push(revision);
                continue;
            }
            Err(err) => return Err(err),
        };
        let record = Record::decode(&raw, revision)?;
        if revision >= expected {
            if revision != expected {
                return Err(Error::RevisionGap {
                    expected,
                    found: revision,
                });
            }
            expected += 1;
        }
        let entry = entry_of(&record, revision, raw.len());
        if !index.push(record.key, entry) {
            return Err(Error::CorruptRecord {
                revision,
                reason: "record older than its key's previous record",
            });
        }
        last = revision;
        replayed += 1;
    }
    backend.remove(&half_removed)?;
    Ok(Loaded {
        index,
        last,
        checkpoint,
        replayed,
    })
}

fn entry_of(record: &Record<'_>, revision: Revision, size: usize) -> Entry {
    match record.kind {
        RecordKind::Put => Entry {
            mod_revision: revision,
            create_revision: record.create_revision,
            version: record.version,
            size: size as u64,
        },
        RecordKind::Delete => Entry::tombstone(revision, size as u64),
    }
}

impl Shared {
    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Resolves the revision a read is served at.
    fn read_revision(&self, requested: Option<Revision>) -> Result<Revision> {
        self.check_open()?;
        let current = self.published.load(Ordering::Acquire);
        let Some(requested) = requested else {
            return Ok(current);
        };
        if requested > current {
            return Err(Error::FutureRevision { requested, current });
        }
        let compacted = self.compacted.load(Ordering::Acquire);
        if requested < compacted {
            return Err(Error::Compacted {
                requested,
                compacted,
            });
        }
        Ok(requested)
    }

    /// The error for a record the index pointed at but the backend no longer holds, during a
    /// read at `read_at`: compaction overtook the read, or the index is wrong.
    pub(crate) fn missing_record(&self, revision: Revision, read_at: Revision) -> Error {
        let compacted = self.compacted.load(Ordering::Acquire);
        if read_at < compacted {
            Error::Compacted {
                requested: read_at,
                compacted,
            }
        } else {
            Error::IndexMismatch { revision }
        }
    }

    /// The backend's record at `revision`, for a read at `read_at`: absent, or half removed, is
    /// [`Error::Compacted`] if compaction overtook the read, else the index is wrong.
    pub(crate) fn record_for(&self, revision: Revision, read_at: Revision) -> Result<RawRecord> {
        // Only the writer reads past the published revision (the current value of a key it
        // changes). The group commit drops a record from `pending` only after writing it to
        // the backend, and publishes it after that: so a record not yet published is in
        // `pending` or, looked for there first, in the backend.
        if self.durable && revision > self.published.load(Ordering::Acquire) {
            let pending = self.pending.lock();
            let at = pending.records.partition_point(|(r, _)| *r < revision);
            if let Some((found, raw)) = pending.records.get(at) {
                if *found == revision {
                    return Ok(raw.clone());
                }
            }
        }
        match self.backend.get(revision) {
            Ok(Some(raw)) => Ok(raw),
            Ok(None) => Err(self.missing_record(revision, read_at)),
            Err(err) => Err(self.overtaken(err, read_at)),
        }
    }

    /// `err`, unless compaction has passed `read_at` meanwhile: then what the reader got was
    /// history being removed under it, and the answer is [`Error::Compacted`].
    pub(crate) fn overtaken(&self, err: Error, read_at: Revision) -> Error {
        let compacted = self.compacted.load(Ordering::Acquire);
        if read_at < compacted {
            Error::Compacted {
                requested: read_at,
                compacted,
            }
        } else {
            err
        }
    }

    /// Loads the value of `key` at the index `entry`, for a read at `read_at`.
    fn load(&self, key: Bytes, entry: Entry, read_at: Revision) -> Result<KeyValue> {
        let raw = self.record_for(entry.mod_revision, read_at)?;
        let record = Record::decode(&raw, entry.mod_revision)?;
        if record.kind != RecordKind::Put || record.key != key.as_ref() {
            return Err(Error::IndexMismatch {
                revision: entry.mod_revision,
            });
        }
        Ok(KeyValue {
            value: record.value_bytes(&raw, entry.mod_revision)?,
            key,
            create_revision: entry.create_revision,
            mod_revision: entry.mod_revision,
            version: entry.version,
        })
    }

    /// Loads the live value a history record replaced (its `prev_revision`), for a read or
    /// watch at `read_at`.
    pub(crate) fn load_prev(
        &self,
        record: &Record<'_>,
        read_at: Revision,
    ) -> Result<Option<KeyValue>> {
        if record.prev_revision == 0 {
            return Ok(None);
        }
        let raw = self.record_for(record.prev_revision, read_at)?;
        let prev = Record::decode(&raw, record.prev_revision)?;
        if prev.kind != RecordKind::Put || prev.key != record.key {
            return Err(Error::IndexMismatch {
                revision: record.prev_revision,
            });
        }
        Ok(Some(KeyValue {
            key: raw.slice_ref(prev.key),
            value: prev.value_bytes(&raw, record.prev_revision)?,
            create_revision: prev.create_revision,
            mod_revision: record.prev_revision,
            version: prev.version,
        }))
    }

    /// Builds the event of a history record, decoded from `raw`, as a replaying watcher at
    /// `read_at` sees it.
    pub(crate) fn event_of(
        &self,
        raw: &RawRecord,
        record: &Record<'_>,
        revision: Revision,
        read_at: Revision,
    ) -> Result<Event> {
        let key = raw.slice_ref(record.key);
        let prev = self.load_prev(record, read_at)?;
        Ok(match record.kind {
            RecordKind::Put => Event {
                kind: EventKind::Put,
                kv: KeyValue {
                    key,
                    value: record.value_bytes(raw, revision)?,
                    create_revision: record.create_revision,
                    mod_revision: revision,
                    version: record.version,
                },
                prev,
            },
            RecordKind::Delete => Event {
                kind: EventKind::Delete,
                kv: tombstone_kv(key, revision),
                prev,
            },
        })
    }

    fn get(&self, key: &[u8], revision: Option<Revision>) -> Result<GetResponse> {
        let read_at = self.read_revision(revision)?;
        let found = {
            let state = self.state.read();
            state
                .index
                .at(key, read_at)
                .and_then(|entry| Some((state.index.shared_key(key)?, entry)))
        };
        let kv = match found {
            Some((key, entry)) => Some(self.load(key, entry, read_at)?),
            None => None,
        };
        Ok(GetResponse {
            kv,
            revision: read_at,
        })
    }

    fn mod_revision(&self, key: &[u8]) -> Result<Option<Revision>> {
        let read_at = self.read_revision(None)?;
        // The latest change answers when the read sees it; one not yet published does not
        // (durable mode), and the index knows what was there before it.
        match self.tips.get(key) {
            None => return Ok(None),
            Some(tip) if tip.revision <= read_at => return Ok(tip.live.then_some(tip.revision)),
            Some(_) => {}
        }
        Ok(self
            .state
            .read()
            .index
            .at(key, read_at)
            .map(|entry| entry.mod_revision))
    }

    /// A range read; `by_walk` counts the remainder by walking it (`Index::range_by_walk`).
    fn range(&self, request: &RangeRequest, by_walk: bool) -> Result<RangeResponse> {
        let read_at = self.read_revision(request.revision)?;
        let page = {
            let state = self.state.read();
            let range = if by_walk {
                Index::range_by_walk
            } else {
                Index::range
            };
            range(
                &state.index,
                &request.prefix,
                request.start_after.as_deref(),
                read_at,
                request.limit,
            )
        };
        let items = page
            .entries
            .into_iter()
            .map(|(key, entry)| self.load(key, entry, read_at))
            .collect::<Result<Vec<_>>>()?;
        Ok(RangeResponse {
            items,
            revision: read_at,
            remaining: page.remaining,
        })
    }

    /// Refuses a write when closed or after a failed flush. Call with the `state` write lock.
    fn check_writable_locked(&self) -> Result<()> {
        self.check_open()?;
        if let Some(source) = &self.durability.lock().failed {
            return Err(Error::Failed {
                source: source.clone(),
            });
        }
        Ok(())
    }

    /// Commits one change at the next revision: history record, index, and the event (queued
    /// for the group commit, or published at once when ephemeral). Returns the event's `kv`.
    /// Call with the `state` write lock; on error nothing has changed.
    fn commit_locked(
        &self,
        state: &mut State,
        key: Bytes,
        change: Change,
        prev: Option<KeyValue>,
    ) -> Result<KeyValue> {
        if u32::try_from(key.len()).is_err() {
            return Err(Error::KeyTooLong { len: key.len() });
        }
        let revision = state.committed + 1;
        let (record, kv, kind) = match change {
            Change::Put {
                value,
                packed,
                create_revision,
                version,
            } => {
                let create_revision = create_revision.unwrap_or(revision);
                let record = Record {
                    kind: RecordKind::Put,
                    key: &key,
                    create_revision,
                    version,
                    prev_revision: prev.as_ref().map_or(0, |p| p.mod_revision),
                    value: packed
                        .as_ref()
                        .map_or(Value::Plain(&value), Packed::as_value),
                }
                .encode();
                let kv = KeyValue {
                    key: key.clone(),
                    value,
                    create_revision,
                    mod_revision: revision,
                    version,
                };
                (record, kv, EventKind::Put)
            }
            Change::Delete => {
                let record = Record {
                    kind: RecordKind::Delete,
                    key: &key,
                    create_revision: 0,
                    version: 0,
                    prev_revision: prev.as_ref().map_or(0, |p| p.mod_revision),
                    value: Value::Plain(&[]),
                }
                .encode();
                (
                    record,
                    tombstone_kv(key.clone(), revision),
                    EventKind::Delete,
                )
            }
        };
        let size = record.len() as u64;
        // The value this change replaced, and a tombstone itself, are history from now on.
        let replaced = prev
            .as_ref()
            .and_then(|_| state.index.latest(&key))
            .map_or(0, |replaced| replaced.size);
        let (superseded, live) = match kind {
            EventKind::Put => (replaced, size),
            EventKind::Delete => (replaced + size, 0),
        };
        let record = Bytes::from(record);
        if !self.durable {
            self.backend.insert(revision, record.clone())?;
        }
        let entry = match kind {
            EventKind::Put => Entry {
                mod_revision: revision,
                create_revision: kv.create_revision,
                version: kv.version,
                size,
            },
            EventKind::Delete => Entry::tombstone(revision, size),
        };
        if !state.index.push(&key, entry) {
            return Err(Error::IndexMismatch { revision });
        }
        self.note_history(revision, superseded);
        // The only writer of the count holds the `state` write lock: no update is lost.
        let live_bytes = self.live_bytes.load(Ordering::Relaxed);
        self.live_bytes.store(
            (live_bytes + live).saturating_sub(replaced),
            Ordering::Relaxed,
        );
        // Before the change is published (below, or by the group commit): see `tips.rs`.
        self.tips.record(&key, Tip::of(entry));
        let event = Arc::new(Event {
            kind,
            kv: kv.clone(),
            prev,
        });
        state.committed = revision;
        if self.durable {
            // Queued before `committed` moves: the group commit reads `committed` without the
            // writer's lock, and takes every record up to it from `pending`.
            {
                let mut pending = self.pending.lock();
                pending.events.push_back(event);
                pending.records.push_back((revision, record));
            }
            self.committed.store(revision, Ordering::Release);
            self.pending_cv.notify_one();
        } else {
            self.committed.store(revision, Ordering::Release);
            self.publish(std::slice::from_ref(&event), revision);
        }
        Ok(kv)
    }

    /// Counts `bytes` more history, freed by compaction at `revision`, and wakes the compactor
    /// when the history outgrows its budget.
    fn note_history(&self, revision: Revision, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let total = {
            let mut ledger = self.ledger.lock();
            ledger.add(revision, bytes);
            ledger.total()
        };
        if total > self.config.history_budget && !self.budget_pressure.swap(true, Ordering::AcqRel)
        {
            // Under the compactor's lock, so the wake-up cannot fall between its check of the
            // flag and its wait.
            let _stop = self.stop.lock();
            self.stop_cv.notify_all();
        }
    }

    /// The current value of `key` for the writer. Call with the `state` lock.
    fn current_locked(&self, state: &State, key: &Bytes) -> Result<Option<KeyValue>> {
        match state.index.latest(key) {
            Some(entry) => Ok(Some(self.load(key.clone(), entry, entry.mod_revision)?)),
            None => Ok(None),
        }
    }

    fn create(&self, key: Bytes, value: Bytes) -> Result<(CreateOutcome, Revision)> {
        let packed = pack(&value);
        let mut state = self.state.write();
        self.check_writable_locked()?;
        if let Some(current) = self.current_locked(&state, &key)? {
            return Ok((CreateOutcome::AlreadyExists(current), state.committed));
        }
        let change = Change::Put {
            value,
            packed,
            create_revision: None,
            version: 1,
        };
        let kv = self.commit_locked(&mut state, key, change, None)?;
        let revision = kv.mod_revision;
        Ok((CreateOutcome::Created(kv), revision))
    }

    /// The current value of `key` if it exists and `guard` holds, else why not. Call with the
    /// `state` lock.
    fn guarded_locked(
        &self,
        state: &State,
        key: &Bytes,
        guard: Guard,
    ) -> Result<Result<KeyValue, Refused>> {
        let Some(current) = self.current_locked(state, key)? else {
            return Ok(Err(Refused::NotFound));
        };
        match guard {
            Guard::ModRevision(expected) if expected != current.mod_revision => {
                Ok(Err(Refused::Conflict(current)))
            }
            _ => Ok(Ok(current)),
        }
    }

    fn update(&self, key: Bytes, value: Bytes, guard: Guard) -> Result<(UpdateOutcome, Revision)> {
        let packed = pack(&value);
        let mut state = self.state.write();
        self.check_writable_locked()?;
        let current = match self.guarded_locked(&state, &key, guard)? {
            Ok(current) => current,
            Err(Refused::NotFound) => return Ok((UpdateOutcome::NotFound, state.committed)),
            Err(Refused::Conflict(kv)) => {
                return Ok((UpdateOutcome::Conflict(kv), state.committed));
            }
        };
        let change = Change::Put {
            value,
            packed,
            create_revision: Some(current.create_revision),
            version: current.version + 1,
        };
        let kv = self.commit_locked(&mut state, key, change, Some(current.clone()))?;
        let revision = kv.mod_revision;
        Ok((UpdateOutcome::Updated { kv, prev: current }, revision))
    }

    fn delete(&self, key: Bytes, guard: Guard) -> Result<(DeleteOutcome, Revision)> {
        let mut state = self.state.write();
        self.check_writable_locked()?;
        let current = match self.guarded_locked(&state, &key, guard)? {
            Ok(current) => current,
            Err(Refused::NotFound) => return Ok((DeleteOutcome::NotFound, state.committed)),
            Err(Refused::Conflict(kv)) => {
                return Ok((DeleteOutcome::Conflict(kv), state.committed));
            }
        };
        let kv = self.commit_locked(&mut state, key, Change::Delete, Some(current.clone()))?;
        let revision = kv.mod_revision;
        let outcome = DeleteOutcome::Deleted {
            revision,
            prev: current,
        };
        Ok((outcome, revision))
    }

    /// Waits until `revision` is durable (at once when ephemeral).
    async fn wait_durable(&self, revision: Revision) -> Result<()> {
        if !self.durable {
            return Ok(());
        }
        let woken = {
            let mut durability = self.durability.lock();
            if durability.revision >= revision {
                return Ok(());
            }
            if let Some(source) = &durability.failed {
                return Err(Error::Failed {
                    source: source.clone(),
                });
            }
            let (sender, receiver) = oneshot::channel();
            durability.waiting.entry(revision).or_default().push(sender);
            receiver
        };
        if woken.await.is_ok() {
            return Ok(());
        }
        // Dropped unanswered: the flush failed, or the group commit is gone (closed).
        let durability = self.durability.lock();
        match &durability.failed {
            _ if durability.revision >= revision => Ok(()),
            Some(source) => Err(Error::Failed {
                source: source.clone(),
            }),
            None => Err(Error::Closed),
        }
    }

    /// Makes every revision up to `target` durable for the writers: wakes those waiting on one.
    fn acknowledge(&self, target: Revision) {
        let covered = {
            let mut durability = self.durability.lock();
            durability.revision = target;
            let later = durability.waiting.split_off(&target.saturating_add(1));
            std::mem::replace(&mut durability.waiting, later)
        };
        for writer in covered.into_values().flatten() {
            // A writer that stopped waiting (its request was cancelled) does not mind.
            let _ = writer.send(());
        }
    }

    /// Fail-stop after a failed flush: no revision will become durable any more. Every
    /// waiting writer is told so.
    fn fail(&self, source: BackendError) {
        let waiting = {
            let mut durability = self.durability.lock();
            durability.failed = Some(source);
            std::mem::take(&mut durability.waiting)
        };
        drop(waiting);
    }

    /// The group-commit loop (durable mode): flush as soon as anything is pending, publish what
    /// the flush covered, acknowledge its writers. Exits once closing and drained, or after a
    /// failed flush (fail-stop).
    fn run_group_commit(&self) {
        loop {
            {
                let mut pending = self.pending.lock();
                while pending.events.is_empty() && !pending.shutdown {
                    self.pending_cv.wait(&mut pending);
                }
                if pending.events.is_empty() {
                    return;
                }
            }
            // Not a timer: give writers that are already runnable (typically those the previous
            // flush just acknowledged) one scheduling turn to commit into this flush.
            std::thread::yield_now();
            // Every event up to `target` is already in `pending`: writers queue the event
            // before they advance `committed`.
            let target = self.committed.load(Ordering::Acquire);
            // The records are written here rather than by each writer under its lock: there,
            // sled's insert (some 10 µs) made the writer's critical section three times as
            // long, and at 64 concurrent durable creates the API server's async workers parked
            // on that lock some 650 times a second, each time leaving a core idle. The price:
            // one batch's inserts no longer overlap the previous batch's flush, which costs
            // writers of the store alone (no API work between writes) some 10 % at 8 writers;
            // docs/benchmarks.md has both measurements, and a variant that gave it back.
            if let Err(err) = self
                .write_records(target)
                .and_then(|()| self.backend.flush())
            {
                error!(error = %err, "writing or flushing the history failed; the store stops accepting writes");
                let source = match err {
                    Error::Backend { source, .. } => source,
                    other => BackendError(Arc::new(other)),
                };
                self.fail(source);
                // Nothing will be published any more: end the watches rather than leave them
                // waiting forever.
                self.close_watchers();
                return;
            }
            let events: Vec<Arc<Event>> = {
                let mut pending = self.pending.lock();
                let covered = pending
                    .events
                    .iter()
                    .take_while(|e| e.revision() <= target)
                    .count();
                pending.records.drain(..covered);
                pending.events.drain(..covered).collect()
            };
            self.publish(&events, target);
            self.acknowledge(target);
            let every = self.checkpoint_interval();
            if self.config.checkpoint_every > 0
                && target.saturating_sub(self.checkpointed.load(Ordering::Acquire)) >= every
            {
                self.request_checkpoint();
            }
        }
    }

    /// Writes the pending records up to `through` to the backend (not flushed). Called by the
    /// group commit alone, which drops them from `pending` once flushed, before it publishes
    /// them: so every record in `pending` is one it has not written yet.
    fn write_records(&self, through: Revision) -> Result<()> {
        let records: Vec<(Revision, Bytes)> = {
            let pending = self.pending.lock();
            let end = pending.records.partition_point(|(r, _)| *r <= through);
            pending.records.range(..end).cloned().collect()
        };
        for (revision, record) in records {
            self.backend.insert(revision, record)?;
        }
        Ok(())
    }

    /// Wakes the checkpointer (durable mode) to write a checkpoint, unless one is due already.
    pub(crate) fn request_checkpoint(&self) {
        if !self.checkpoint_due.swap(true, Ordering::AcqRel) {
            let _stop = self.stop.lock();
            self.stop_cv.notify_all();
        }
    }

    /// The checkpoint interval in revisions: [`Config::checkpoint_every`], or the last
    /// checkpoint's entries divided by [`CHECKPOINT_INDEX_SHARE`] if that is more.
    pub(crate) fn checkpoint_interval(&self) -> u64 {
        self.config
            .checkpoint_every
            .max(self.checkpoint_entries.load(Ordering::Acquire) / CHECKPOINT_INDEX_SHARE)
    }

    /// The checkpointer's loop (durable mode): writes a checkpoint of the index whenever the
    /// group commit says one is due. Not flushed here: the next group commit (or close) makes
    /// it durable, and until then the previous one serves. Returns when the store closes.
    fn run_checkpointer(&self) {
        loop {
            {
                let mut stop = self.stop.lock();
                while !*stop && !self.checkpoint_due.load(Ordering::Acquire) {
                    self.stop_cv.wait(&mut stop);
                }
                if *stop {
                    return;
                }
            }
            self.checkpoint_due.store(false, Ordering::Release);
            let result = {
                let _compaction = self.compaction.lock();
                self.checkpoint_locked()
            };
            if let Err(err) = result {
                warn!(error = %err, "index checkpoint failed; open will replay more history");
            }
        }
    }

    /// Writes a checkpoint at the published revision if the last one is older or stale, and
    /// flushes it. Blocking. Returns the checkpoint's revision.
    pub(crate) fn checkpoint_durably(&self) -> Result<Revision> {
        let _compaction = self.compaction.lock();
        if self.checkpoint_locked()? {
            self.backend.flush()?;
        }
        Ok(self.checkpointed.load(Ordering::Acquire))
    }
}

fn tombstone_kv(key: Bytes, revision: Revision) -> KeyValue {
    KeyValue {
        key,
        value: Bytes::new(),
        create_revision: 0,
        mod_revision: revision,
        version: 0,
    }
}

impl Lifecycle {
    fn shutdown(&self) {
        let shared = &self.shared;
        {
            // Under the writer lock: every write either committed before this (and its event
            // is pending, so the group commit flushes it) or sees `closed`.
            let _state = shared.state.write();
            shared.closed.store(true, Ordering::Release);
        }
        shared.pending.lock().shutdown = true;
        shared.pending_cv.notify_all();
        *shared.stop.lock() = true;
        shared.stop_cv.notify_all();
        let threads: Vec<_> = self.threads.lock().drain(..).collect();
        for thread in threads {
            if thread.join().is_err() {
                error!("a store background thread panicked");
            }
        }
        // Everything committed is published now: checkpoint it, so that the next open reads
        // no history (not after a failed flush: nothing more can be made durable).
        if shared.durable
            && shared.config.checkpoint_at_close
            && shared.durability.lock().failed.is_none()
            && let Err(err) = shared.checkpoint_durably()
        {
            warn!(error = %err, "index checkpoint at close failed; open will replay history");
        }
        shared.close_watchers();
    }
}

impl Drop for Lifecycle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[async_trait]
impl Kv for SledStore {
    async fn get(&self, key: &[u8], revision: Option<Revision>) -> Result<GetResponse> {
        self.shared.get(key, revision)
    }

    async fn mod_revision(&self, key: &[u8]) -> Result<Option<Revision>> {
        self.shared.mod_revision(key)
    }

    async fn range(&self, request: RangeRequest) -> Result<RangeResponse> {
        self.shared.range(&request, false)
    }

    async fn create(&self, key: Bytes, value: Bytes) -> Result<CreateOutcome> {
        let (outcome, wait) = self.shared.create(key, value)?;
        self.shared.wait_durable(wait).await?;
        Ok(outcome)
    }

    async fn update(&self, key: Bytes, value: Bytes, guard: Guard) -> Result<UpdateOutcome> {
        let (outcome, wait) = self.shared.update(key, value, guard)?;
        self.shared.wait_durable(wait).await?;
        Ok(outcome)
    }

    async fn delete(&self, key: Bytes, guard: Guard) -> Result<DeleteOutcome> {
        let (outcome, wait) = self.shared.delete(key, guard)?;
        self.shared.wait_durable(wait).await?;
        Ok(outcome)
    }

    async fn watch(&self, prefix: Bytes, after: Revision) -> Result<WatchStream> {
        Ok(Box::new(SledWatch::start(&self.shared, prefix, after)?))
    }

    async fn current_revision(&self) -> Result<Revision> {
        self.shared.check_open()?;
        Ok(self.revision())
    }

    fn revision_now(&self) -> Option<Revision> {
        Some(self.revision())
    }

    fn gauges(&self) -> Vec<crate::Gauge> {
        vec![
            crate::Gauge {
                name: "kubemock_store_live_bytes",
                help: "Bytes of the store's records of the current objects (each key's latest value), apart from history.",
                value: self.live_bytes(),
            },
            crate::Gauge {
                name: "kubemock_store_history_bytes",
                help: "Bytes of history (superseded values and tombstones) the store holds, as its history budget counts them; compaction frees them.",
                value: self.history_bytes(),
            },
        ]
    }

    fn sole_writer(&self) -> bool {
        true
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        self.shared.check_open()?;
        Ok(self.compaction_point())
    }

    async fn compact(&self, revision: Revision) -> Result<Revision> {
        // Compaction scans the whole index: off the async worker when there is a runtime.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return self.shared.compact(revision);
        };
        let shared = Arc::clone(&self.shared);
        match runtime
            .spawn_blocking(move || shared.compact(revision))
            .await
        {
            Ok(result) => result,
            Err(join_error) => Err(Error::Backend {
                op: "compact",
                source: BackendError(Arc::new(join_error)),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits (with a timeout) until `n` writers are waiting for durability.
    async fn until_waiting(shared: &Shared, n: usize) {
        tokio::time::timeout(Duration::from_secs(10), async {
            while shared.durability.lock().waiting.values().flatten().count() < n {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("writers waiting");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_flush_wakes_the_writers_it_covers_and_a_failed_one_every_other() {
        let dir = tempfile::tempdir().expect("a directory");
        let store = SledStore::open(Config::durable(dir.path())).expect("open");
        let shared = Arc::clone(&store.shared);
        let durable = shared.durability.lock().revision;
        shared.wait_durable(durable).await.expect("durable already");
        // Two writers on one revision (a refused write waits for the revision it read at),
        // one on the next.
        let wait = |revision| {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move { shared.wait_durable(revision).await })
        };
        let first = [wait(durable + 1), wait(durable + 1)];
        let second = wait(durable + 2);
        until_waiting(&shared, 3).await;

        shared.acknowledge(durable + 1);
        for writer in first {
            writer.await.expect("joined").expect("covered by the flush");
        }
        assert!(!second.is_finished(), "not covered");
        assert_eq!(shared.durability.lock().waiting.len(), 1);

        shared.fail(BackendError(Arc::new(std::io::Error::other("disk gone"))));
        let failed = second.await.expect("joined");
        assert!(matches!(failed, Err(Error::Failed { .. })), "{failed:?}");
        // Later writers hear it at once; a revision already durable stays so.
        let later = shared.wait_durable(durable + 3).await;
        assert!(matches!(later, Err(Error::Failed { .. })), "{later:?}");
        shared.wait_durable(durable + 1).await.expect("was durable");
        let refused = store
            .create(Bytes::from_static(b"/k"), Bytes::from_static(b"v"))
            .await;
        assert!(matches!(refused, Err(Error::Failed { .. })), "{refused:?}");
    }
}
