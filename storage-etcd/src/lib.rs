//! kubemock-storage-etcd: the store trait ([`kubemock_storage::Kv`]) over etcd v3's gRPC API,
//! so that several `kubemock serve` processes can share one etcd (`docs/etcd.md`). A crate of
//! its own so that the embedded store stays free of gRPC.
//!
//! # Mapping
//! - A key `k` is stored at etcd key `prefix + k` (`--etcd-prefix`, default `/registry`);
//!   values are the bytes the API server gives (JSON).
//! - The revision is etcd's revision; `create_revision`, `mod_revision` and `version` are
//!   etcd's.
//! - Create, update and delete are one `Txn` each: compare the key's `version` (exists or not)
//!   and, for a guarded write, its `mod_revision`; on failure the same transaction reads the
//!   key, so a `Conflict` carries the state that made it fail.
//! - Ranges are one etcd `Range` with `limit` and `revision` (a page is a snapshot at the
//!   first page's revision); `count` gives `remaining`.
//! - Watch: one etcd watch per resource prefix, shared through a watch cache that also
//!   answers `resourceVersion=0` lists (`cache.rs`); a watch the cache cannot serve exactly
//!   gets an etcd watch (one gRPC stream) of its own, with `prev_kv`; progress from etcd's
//!   `RequestProgress`, checked against reads (`watch.rs`).
//! - Compaction: etcd's `Compact`, by the sled store's [`Retention`] policy in the background;
//!   the compaction point is learnt from etcd (a cancelled watch reports it).
//!
//! # Errors
//! etcd unreachable, or not answering within the request timeout, is
//! [`Error::Unavailable`] (the API server's 503): never a panic, never a guess.

mod cache;
mod client;
mod proto;
pub mod testing;
mod watch;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use kubemock_storage::{
    CreateOutcome, DeleteOutcome, Error, GetResponse, Guard, KeyValue, Kv, RangeRequest,
    RangeResponse, Result, Retention, Revision, UpdateOutcome, WatchStream,
};
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::{debug, info, warn};

pub use cache::{DEFAULT_WATCH_CACHE_EVENTS, RESOURCE_PREFIX_DEPTH};
pub use client::Tls;
use client::{Client, Failure, backend};
use proto::{request_op, response_op};

/// etcd's key prefix by default: upstream's `--etcd-prefix` default (kube-apiserver's
/// `storagebackend.Config.Prefix`).
pub const DEFAULT_PREFIX: &str = "/registry";
/// How long one call to etcd may take before it fails as [`Error::Unavailable`]: longer than
/// an etcd leader election (about a second with etcd's defaults), shorter than a client's
/// patience.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a probe for the compaction point waits for etcd to cancel its watch: etcd checks
/// unsynced watchers every 100 ms (`watchable_store.go`, `syncWatchersLoop`).
const COMPACTION_PROBE_WAIT: Duration = Duration::from_secs(5);

/// How to reach etcd, and the policies the store applies on top of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdConfig {
    /// Client URLs (`http://127.0.0.1:2379`), balanced over.
    pub endpoints: Vec<String>,
    /// Every key is stored under this prefix.
    pub prefix: String,
    /// TLS material for `https://` endpoints.
    pub tls: Tls,
    /// Bound of each call.
    pub request_timeout: Duration,
    /// History kept by the background compactor.
    pub retention: Retention,
    /// How often the background compactor samples the revision; `None`: no background
    /// compaction.
    pub compaction_interval: Option<Duration>,
    /// Events a watcher may have queued before it is cut off as lagging.
    pub watch_buffer: usize,
    /// Watch caches cover prefixes cut after this many `/` ([`RESOURCE_PREFIX_DEPTH`]);
    /// `None`: no watch cache, one etcd watch per store watch.
    pub watch_cache_depth: Option<usize>,
    /// Events each watch cache keeps for replays.
    pub watch_cache_events: usize,
}

impl EtcdConfig {
    /// etcd at `endpoints`, with the defaults: prefix `/registry`, the sled store's retention,
    /// compaction interval and watch buffer.
    pub fn new(endpoints: Vec<String>) -> Self {
        EtcdConfig {
            endpoints,
            prefix: DEFAULT_PREFIX.to_owned(),
            tls: Tls::default(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            retention: Retention::default(),
            compaction_interval: Some(kubemock_storage::DEFAULT_COMPACTION_INTERVAL),
            watch_buffer: kubemock_storage::DEFAULT_WATCH_BUFFER,
            watch_cache_depth: Some(RESOURCE_PREFIX_DEPTH),
            watch_cache_events: DEFAULT_WATCH_CACHE_EVENTS,
        }
    }

    /// The watch caches' prefix depth (`None`: no watch cache).
    #[must_use]
    pub fn watch_cache_depth(mut self, depth: Option<usize>) -> Self {
        self.watch_cache_depth = depth;
        self
    }

    /// Events each watch cache keeps.
    #[must_use]
    pub fn watch_cache_events(mut self, events: usize) -> Self {
        self.watch_cache_events = events.max(1);
        self
    }

    /// Keys under `prefix`.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// TLS material.
    #[must_use]
    pub fn tls(mut self, tls: Tls) -> Self {
        self.tls = tls;
        self
    }

    /// The retention policy of the background compactor.
    #[must_use]
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// The background compactor's interval (`None`: off).
    #[must_use]
    pub fn compaction_interval(mut self, interval: Option<Duration>) -> Self {
        self.compaction_interval = interval;
        self
    }

    /// The request timeout.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The per-watcher event buffer.
    #[must_use]
    pub fn watch_buffer(mut self, events: usize) -> Self {
        self.watch_buffer = events.max(1);
        self
    }
}

/// The store over etcd. Cheap to clone; the background compactor and the watch caches stop
/// when the last clone is dropped.
#[derive(Clone)]
pub struct EtcdStore {
    inner: Arc<Inner>,
    /// Cancels the watch caches' feeders (which hold `inner`) when the last clone goes.
    _alive: Arc<DropGuard>,
}

/// How many etcd watches a store holds ([`EtcdStore::watch_counts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchCounts {
    /// Open etcd watch streams: the caches' and the direct ones.
    pub etcd_watches: usize,
    /// Running watch caches (one etcd watch each).
    pub caches: usize,
}

pub(crate) struct Inner {
    pub(crate) client: Client,
    /// The key prefix, as bytes.
    pub(crate) prefix: Bytes,
    /// The highest compaction point this store has seen (its own compactions, etcd's
    /// answers); etcd is asked again whenever a read finds it stale.
    pub(crate) compacted: AtomicU64,
    /// The highest revision seen in one of etcd's answers ([`Kv::revision_now`]).
    pub(crate) seen: AtomicU64,
    pub(crate) watch_buffer: usize,
    pub(crate) caches: cache::Caches,
    /// Open etcd watches ([`watch::EtcdWatch`]s alive).
    pub(crate) etcd_watches: AtomicUsize,
    /// What a compaction must bring up to its point first, one per open etcd watch (dead
    /// entries are dropped as new ones come).
    pub(crate) marks: parking_lot::Mutex<Vec<std::sync::Weak<watch::Mark>>>,
    /// etcd answers progress requests after every event it covers ([`ordered_progress`]), so
    /// its answers need no reads to be believed (`watch.rs`).
    pub(crate) ordered_progress: bool,
}

/// Whether etcd `version` has the fix of etcd-io/etcd#15220 (3.4.31, 3.5.13, 3.6 and later),
/// as upstream's check has it (`apiserver/pkg/storage/feature/feature_support_checker.go`:
/// 3.4.31+ and 3.5.13+ support `RequestWatchProgress`). Anything unparsable is taken as
/// without it.
pub(crate) fn ordered_progress(version: &str) -> bool {
    let mut parts = version
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .map(|part| part.parse::<u64>().ok());
    let (Some(Some(major)), Some(Some(minor)), Some(Some(patch))) =
        (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    match (major, minor) {
        (3, 4) => patch >= 31,
        (3, 5) => patch >= 13,
        (3, minor) => minor >= 6,
        (major, _) => major > 3,
    }
}

impl EtcdStore {
    /// Connects to etcd (one `Status` call, so that a wrong URL fails here rather than at the
    /// first request) and starts the background compactor. Must run inside a tokio runtime.
    pub async fn connect(config: EtcdConfig) -> Result<Self> {
        let client = Client::new(&config.endpoints, &config.tls, config.request_timeout)?;
        let status = client.status().await?;
        info!(
            endpoints = %config.endpoints.join(","),
            version = %status.version,
            prefix = %config.prefix,
            revision = status.header.as_ref().map_or(0, |h| h.revision),
            "connected to etcd"
        );
        let stop = CancellationToken::new();
        let inner = Arc::new(Inner {
            client,
            prefix: Bytes::from(config.prefix.clone().into_bytes()),
            compacted: AtomicU64::new(0),
            seen: AtomicU64::new(0),
            watch_buffer: config.watch_buffer,
            caches: cache::Caches::new(
                config.watch_cache_depth,
                config.watch_cache_events,
                stop.clone(),
            ),
            etcd_watches: AtomicUsize::new(0),
            marks: parking_lot::Mutex::new(Vec::new()),
            // One member's version stands for the cluster only when there is one member: a
            // cluster being upgraded mixes versions (upstream's check asks every endpoint).
            ordered_progress: config.endpoints.len() == 1 && ordered_progress(&status.version),
        });
        let store = EtcdStore {
            inner,
            _alive: Arc::new(stop.drop_guard()),
        };
        // The compaction point as etcd has it (another server may have compacted).
        if let Err(err) = store.compacted_revision().await {
            warn!(error = %err, "cannot read etcd's compaction point yet");
        }
        if let Some(interval) = config.compaction_interval {
            tokio::spawn(run_compactor(
                Arc::downgrade(&store.inner),
                interval,
                config.retention,
            ));
        }
        Ok(store)
    }

    /// The etcd key of `key`.
    fn full(&self, key: &[u8]) -> Bytes {
        self.inner.full(key)
    }

    /// Whether this store believes etcd's progress answers as they come: a single etcd with
    /// the fix of etcd-io/etcd#15220. Otherwise reads prove them (docs/etcd.md).
    pub fn progress_is_ordered(&self) -> bool {
        self.inner.ordered_progress
    }

    /// How many etcd watches this store holds now: with the watch cache, one per resource
    /// prefix watched, plus one per watch the cache could not serve.
    pub fn watch_counts(&self) -> WatchCounts {
        WatchCounts {
            etcd_watches: self.inner.etcd_watches.load(Ordering::Acquire),
            caches: self.inner.caches.len(),
        }
    }
}

impl Inner {
    /// The etcd key of `key`.
    pub(crate) fn full(&self, key: &[u8]) -> Bytes {
        let mut full = BytesMut::with_capacity(self.prefix.len() + key.len());
        full.extend_from_slice(&self.prefix);
        full.extend_from_slice(key);
        full.freeze()
    }

    /// The store's key of etcd key `full` (without the prefix).
    pub(crate) fn strip(&self, full: Bytes) -> Result<Bytes> {
        if full.starts_with(&self.prefix) {
            Ok(full.slice(self.prefix.len()..))
        } else {
            Err(backend(format!(
                "etcd returned key {:?} outside the prefix",
                String::from_utf8_lossy(&full)
            )))
        }
    }

    /// An etcd key-value as the store's.
    pub(crate) fn kv(&self, kv: proto::KeyValue) -> Result<KeyValue> {
        Ok(KeyValue {
            key: self.strip(kv.key)?,
            value: kv.value,
            create_revision: revision(kv.create_revision),
            mod_revision: revision(kv.mod_revision),
            version: revision(kv.version),
        })
    }

    /// A range read, with a compacted or future revision answered as the store's errors.
    pub(crate) async fn range(&self, request: proto::RangeRequest) -> Result<proto::RangeResponse> {
        let at = revision(request.revision);
        match self.client.range(request).await {
            Ok(response) => {
                self.saw(response.header.as_ref());
                Ok(response)
            }
            Err(Failure::Compacted) => Err(Error::Compacted {
                requested: at,
                compacted: self.probe_compacted().await?,
            }),
            Err(Failure::Future) => Err(Error::FutureRevision {
                requested: at,
                current: self.current_revision().await?,
            }),
            Err(Failure::Other(err)) => Err(err),
        }
    }

    /// The etcd revision to read the store's revision `at` at (`None`: the latest, etcd's 0).
    /// The store's revision 0 is the empty state before the first change: etcd's first
    /// revision, 1, holds no key either, so it is read there (unless compacted).
    pub(crate) fn read_at(&self, at: Option<Revision>) -> Result<i64> {
        match at {
            None => Ok(0),
            Some(0) => {
                let compacted = self.compacted.load(Ordering::Acquire);
                if compacted > 0 {
                    return Err(Error::Compacted {
                        requested: 0,
                        compacted,
                    });
                }
                Ok(1)
            }
            Some(at) => Ok(etcd_revision(at)),
        }
    }

    /// etcd's current revision: the header of a count-only read of one key.
    pub(crate) async fn current_revision(&self) -> Result<Revision> {
        let response = self
            .client
            .range(proto::RangeRequest {
                key: self.prefix.clone(),
                count_only: true,
                ..Default::default()
            })
            .await
            .map_err(Failure::into_error)?;
        Ok(self.saw(response.header.as_ref()))
    }

    /// Records the revision of an answer's header; returns it.
    pub(crate) fn saw(&self, header: Option<&proto::ResponseHeader>) -> Revision {
        let at = header_revision(header);
        self.seen.fetch_max(at, Ordering::AcqRel);
        at
    }

    /// A transaction, its header's revision recorded.
    pub(crate) async fn txn(&self, request: proto::TxnRequest) -> Result<proto::TxnResponse> {
        let response = self.client.txn(request).await?;
        self.saw(response.header.as_ref());
        Ok(response)
    }

    /// Records a compaction point seen; returns the highest known.
    pub(crate) fn saw_compacted(&self, compacted: Revision) -> Revision {
        self.compacted
            .fetch_max(compacted, Ordering::AcqRel)
            .max(compacted)
    }

    /// Compacts etcd at `at` (a no-op at or below the known point).
    pub(crate) async fn compact(&self, at: Revision) -> Result<Revision> {
        let known = self.compacted.load(Ordering::Acquire);
        if at <= known {
            return Ok(known);
        }
        // Past `at`, the open watches could no longer prove their progress answers. With an
        // etcd whose answers need no proof, it still spares a watch that is replaying history
        // being cancelled as compacted (etcd cancels a replaying watcher behind compaction).
        watch::freshen(self, at).await;
        match self
            .client
            .compact(proto::CompactionRequest {
                revision: etcd_revision(at),
                physical: false,
            })
            .await
        {
            Ok(_) => {
                debug!(revision = at, "compacted etcd");
                Ok(self.saw_compacted(at))
            }
            // Someone (another server) compacted at or past it.
            Err(Failure::Compacted) => self.probe_compacted().await,
            Err(Failure::Future) => Err(Error::FutureRevision {
                requested: at,
                current: self.current_revision().await?,
            }),
            Err(Failure::Other(err)) => Err(err),
        }
    }

    /// Asks etcd for its compaction point: a watch from revision 1 of a key nobody writes is
    /// cancelled with the compaction point when history has been compacted (etcd has no
    /// other API for it). Called only when a read found history compacted.
    pub(crate) async fn probe_compacted(&self) -> Result<Revision> {
        let probe = watch::probe_compaction(self, COMPACTION_PROBE_WAIT).await?;
        Ok(self.saw_compacted(probe))
    }
}

/// A revision from etcd (an int64 that is never negative) as the store's.
pub(crate) fn revision(value: i64) -> Revision {
    u64::try_from(value).unwrap_or(0)
}

/// A revision of the store as etcd's int64 (revisions never come near 2^63).
pub(crate) fn etcd_revision(value: Revision) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The revision of a response header.
pub(crate) fn header_revision(header: Option<&proto::ResponseHeader>) -> Revision {
    header.map_or(0, |header| revision(header.revision))
}

/// The end of the range of every key starting with `prefix` (etcd's `GetPrefixRangeEnd`):
/// the prefix with its last byte below 0xff incremented and what follows dropped; `\0` (every
/// key from the start) when there is none.
pub(crate) fn prefix_end(prefix: &[u8]) -> Bytes {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Bytes::from(end);
        }
    }
    Bytes::from_static(b"\0")
}

/// A compare of `key`'s version (`Compare.target = VERSION`).
fn compare_version(key: &Bytes, result: i32, version: i64) -> proto::Compare {
    proto::Compare {
        result,
        target: proto::TARGET_VERSION,
        key: key.clone(),
        target_union: Some(proto::compare::TargetUnion::Version(version)),
    }
}

/// The compares of a guarded write: the key exists, and its mod revision is the guard's.
fn write_compares(key: &Bytes, guard: Guard) -> Vec<proto::Compare> {
    let mut compares = vec![compare_version(key, proto::COMPARE_GREATER, 0)];
    if let Guard::ModRevision(expected) = guard {
        compares.push(proto::Compare {
            result: proto::COMPARE_EQUAL,
            target: proto::TARGET_MOD,
            key: key.clone(),
            target_union: Some(proto::compare::TargetUnion::ModRevision(etcd_revision(
                expected,
            ))),
        });
    }
    compares
}

/// A read of one key, as a transaction's operation.
fn read_op(key: &Bytes) -> proto::RequestOp {
    proto::RequestOp {
        request: Some(request_op::Request::RequestRange(proto::RangeRequest {
            key: key.clone(),
            ..Default::default()
        })),
    }
}

/// The key read by a transaction's failure branch ([`read_op`]), if it exists.
fn failed_read(inner: &Inner, response: proto::TxnResponse) -> Result<Option<KeyValue>> {
    match response.responses.into_iter().next() {
        Some(proto::ResponseOp {
            response: Some(response_op::Response::ResponseRange(range)),
        }) => range
            .kvs
            .into_iter()
            .next()
            .map(|kv| inner.kv(kv))
            .transpose(),
        _ => Err(backend(
            "etcd answered a failed transaction without its read".to_owned(),
        )),
    }
}

#[async_trait]
impl Kv for EtcdStore {
    async fn get(&self, key: &[u8], at: Option<Revision>) -> Result<GetResponse> {
        let response = self
            .inner
            .range(proto::RangeRequest {
                key: self.full(key),
                revision: self.inner.read_at(at)?,
                ..Default::default()
            })
            .await
            .map_err(|err| asked(err, at))?;
        let revision = at.unwrap_or_else(|| header_revision(response.header.as_ref()));
        let kv = response
            .kvs
            .into_iter()
            .next()
            .map(|kv| self.inner.kv(kv))
            .transpose()?;
        Ok(GetResponse { kv, revision })
    }

    async fn mod_revision(&self, key: &[u8]) -> Result<Option<Revision>> {
        let response = self
            .inner
            .range(proto::RangeRequest {
                key: self.full(key),
                keys_only: true,
                ..Default::default()
            })
            .await?;
        Ok(response.kvs.first().map(|kv| revision(kv.mod_revision)))
    }

    async fn range(&self, request: RangeRequest) -> Result<RangeResponse> {
        let base = self.full(&request.prefix);
        let range_end = prefix_end(&base);
        let key = match &request.start_after {
            Some(after) => {
                // The first key strictly after `after`: `after` followed by a zero byte.
                let mut start = BytesMut::from(self.full(after).as_ref());
                start.extend_from_slice(b"\0");
                let start = start.freeze();
                if start > base { start } else { base }
            }
            None => base,
        };
        let limit = request.limit.map_or(0, |limit| limit as i64);
        let response = self
            .inner
            .range(proto::RangeRequest {
                key,
                range_end,
                // etcd's limit 0 means "no limit": a limit of 0 items only counts.
                limit,
                count_only: request.limit == Some(0),
                revision: self.inner.read_at(request.revision)?,
                ..Default::default()
            })
            .await
            .map_err(|err| asked(err, request.revision))?;
        let revision = request
            .revision
            .unwrap_or_else(|| header_revision(response.header.as_ref()));
        let count = revision_count(response.count);
        let items = response
            .kvs
            .into_iter()
            .map(|kv| self.inner.kv(kv))
            .collect::<Result<Vec<_>>>()?;
        let remaining = count.saturating_sub(items.len() as u64);
        Ok(RangeResponse {
            items,
            revision,
            remaining,
        })
    }

    async fn create(&self, key: Bytes, value: Bytes) -> Result<CreateOutcome> {
        let full = self.full(&key);
        let response = self
            .inner
            .txn(proto::TxnRequest {
                compare: vec![compare_version(&full, proto::COMPARE_EQUAL, 0)],
                success: vec![proto::RequestOp {
                    request: Some(request_op::Request::RequestPut(proto::PutRequest {
                        key: full.clone(),
                        value: value.clone(),
                        prev_kv: false,
                    })),
                }],
                failure: vec![read_op(&full)],
            })
            .await?;
        if response.succeeded {
            let at = header_revision(response.header.as_ref());
            return Ok(CreateOutcome::Created(KeyValue {
                key,
                value,
                create_revision: at,
                mod_revision: at,
                version: 1,
            }));
        }
        match failed_read(&self.inner, response)? {
            Some(current) => Ok(CreateOutcome::AlreadyExists(current)),
            // The compare said the key exists and the same transaction's read found none.
            None => Err(backend(format!(
                "etcd refused to create {:?} but holds no such key",
                String::from_utf8_lossy(&key)
            ))),
        }
    }

    async fn update(&self, key: Bytes, value: Bytes, guard: Guard) -> Result<UpdateOutcome> {
        let full = self.full(&key);
        let response = self
            .inner
            .txn(proto::TxnRequest {
                compare: write_compares(&full, guard),
                success: vec![proto::RequestOp {
                    request: Some(request_op::Request::RequestPut(proto::PutRequest {
                        key: full.clone(),
                        value: value.clone(),
                        prev_kv: true,
                    })),
                }],
                failure: vec![read_op(&full)],
            })
            .await?;
        if !response.succeeded {
            return Ok(match failed_read(&self.inner, response)? {
                None => UpdateOutcome::NotFound,
                Some(current) => UpdateOutcome::Conflict(current),
            });
        }
        let at = header_revision(response.header.as_ref());
        let prev = match response.responses.into_iter().next() {
            Some(proto::ResponseOp {
                response:
                    Some(response_op::Response::ResponsePut(proto::PutResponse {
                        prev_kv: Some(prev),
                        ..
                    })),
            }) => self.inner.kv(prev)?,
            _ => {
                return Err(backend(
                    "etcd answered an update without the previous value".to_owned(),
                ));
            }
        };
        Ok(UpdateOutcome::Updated {
            kv: KeyValue {
                key,
                value,
                create_revision: prev.create_revision,
                mod_revision: at,
                version: prev.version + 1,
            },
            prev,
        })
    }

    async fn delete(&self, key: Bytes, guard: Guard) -> Result<DeleteOutcome> {
        let full = self.full(&key);
        let response = self
            .inner
            .txn(proto::TxnRequest {
                compare: write_compares(&full, guard),
                success: vec![proto::RequestOp {
                    request: Some(request_op::Request::RequestDeleteRange(
                        proto::DeleteRangeRequest {
                            key: full.clone(),
                            range_end: Bytes::new(),
                            prev_kv: true,
                        },
                    )),
                }],
                failure: vec![read_op(&full)],
            })
            .await?;
        if !response.succeeded {
            return Ok(match failed_read(&self.inner, response)? {
                None => DeleteOutcome::NotFound,
                Some(current) => DeleteOutcome::Conflict(current),
            });
        }
        let at = header_revision(response.header.as_ref());
        let prev = match response.responses.into_iter().next() {
            Some(proto::ResponseOp {
                response: Some(response_op::Response::ResponseDeleteRange(deleted)),
            }) => deleted.prev_kvs.into_iter().next(),
            _ => None,
        };
        match prev {
            Some(prev) => Ok(DeleteOutcome::Deleted {
                revision: at,
                prev: self.inner.kv(prev)?,
            }),
            None => Err(backend(
                "etcd answered a delete without the deleted value".to_owned(),
            )),
        }
    }

    async fn watch(&self, prefix: Bytes, after: Revision) -> Result<WatchStream> {
        cache::watch(self, prefix, after).await
    }

    async fn range_any(&self, request: RangeRequest) -> Result<RangeResponse> {
        cache::range_any(self, request).await
    }

    fn gauges(&self) -> Vec<kubemock_storage::Gauge> {
        let counts = self.watch_counts();
        vec![
            kubemock_storage::Gauge {
                name: "kubemock_etcd_watches",
                help: "Open etcd watch streams: one per watch cache, plus one per watch a cache could not serve.",
                value: counts.etcd_watches as u64,
            },
            kubemock_storage::Gauge {
                name: "kubemock_etcd_watch_caches",
                help: "Running watch caches: resource prefixes followed by one etcd watch each.",
                value: counts.caches as u64,
            },
        ]
    }

    async fn current_revision(&self) -> Result<Revision> {
        self.inner.current_revision().await
    }

    /// The highest revision this store has seen in etcd's answers: its own writes and reads,
    /// not other servers' writes since (bookkeeping such as the request log; a read that must
    /// be current asks [`Kv::current_revision`]).
    fn revision_now(&self) -> Option<Revision> {
        Some(self.inner.seen.load(Ordering::Acquire)).filter(|seen| *seen > 0)
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        let known = self.inner.compacted.load(Ordering::Acquire);
        // A read at the known point fails when etcd has compacted further (another server).
        let at = known.max(1);
        match self
            .inner
            .client
            .range(proto::RangeRequest {
                key: self.inner.prefix.clone(),
                count_only: true,
                revision: etcd_revision(at),
                ..Default::default()
            })
            .await
        {
            Ok(_) | Err(Failure::Future) => Ok(known),
            Err(Failure::Compacted) => self.inner.probe_compacted().await,
            Err(Failure::Other(err)) => Err(err),
        }
    }

    async fn compact(&self, at: Revision) -> Result<Revision> {
        self.inner.compact(at).await
    }
}

/// A revision error as the caller asked (`at`, which [`Inner::read_at`] may have moved).
fn asked(err: Error, at: Option<Revision>) -> Error {
    match (err, at) {
        (Error::Compacted { compacted, .. }, Some(requested)) => Error::Compacted {
            requested,
            compacted,
        },
        (Error::FutureRevision { current, .. }, Some(requested)) => {
            Error::FutureRevision { requested, current }
        }
        (err, _) => err,
    }
}

/// etcd's `count` (int64) as a count.
fn revision_count(count: i64) -> u64 {
    u64::try_from(count).unwrap_or(0)
}

/// The background compactor: samples etcd's revision every `interval` and compacts by the
/// sled store's retention policy ([`kubemock_storage::retention_target`]). Every server over
/// one etcd runs one; compacting at or below the point another has reached is a no-op. Ends
/// when the store is dropped.
async fn run_compactor(inner: Weak<Inner>, interval: Duration, retention: Retention) {
    let mut samples = VecDeque::new();
    loop {
        tokio::time::sleep(interval).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let current = match inner.current_revision().await {
            Ok(current) => current,
            Err(err) => {
                warn!(error = %err, "compactor cannot read etcd's revision");
                continue;
            }
        };
        let target =
            kubemock_storage::retention_target(&mut samples, Instant::now(), current, retention);
        if let Some(target) = target
            && target > inner.compacted.load(Ordering::Acquire)
            && let Err(err) = inner.compact(target).await
        {
            warn!(error = %err, target, "background compaction of etcd failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_ordered_from_the_fixed_versions_on() {
        for fixed in [
            "3.4.31", "3.4.40", "3.5.13", "3.5.21", "3.6.0", "3.6.16", "v3.7.3", "4.0.0",
        ] {
            assert!(ordered_progress(fixed), "{fixed}");
        }
        for buggy in [
            "3.4.23", "3.4.30", "3.5.0", "3.5.12", "3.3.27", "2.3.8", "", "3.x.1", "3.5",
        ] {
            assert!(!ordered_progress(buggy), "{buggy}");
        }
    }

    #[test]
    fn prefix_end_is_etcds() {
        assert_eq!(prefix_end(b"/registry/"), Bytes::from_static(b"/registry0"));
        assert_eq!(prefix_end(b"a\xff"), Bytes::from_static(b"b"));
        assert_eq!(prefix_end(b"\xff\xff"), Bytes::from_static(b"\0"));
        assert_eq!(prefix_end(b""), Bytes::from_static(b"\0"));
    }
}
