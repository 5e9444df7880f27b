//! The store's errors. Expected outcomes of a request (a key is absent, a name is taken, a
//! guard did not match) are *values* in `kv.rs`, not errors; what is here is everything that
//! stops a request from being answered: a revision outside the readable window, a watcher cut
//! off, a closed store, and fail-stop failures of the backend or of the data on disk.

use std::fmt;
use std::sync::Arc;

use crate::Revision;

/// Result alias for the store.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a store operation could not be answered.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The requested revision is older than the compaction point: its history is gone.
    #[error("required revision {requested} has been compacted (compacted revision {compacted})")]
    Compacted {
        /// The revision the caller asked for (for a watch: the revision it starts after).
        requested: Revision,
        /// The compaction point: the oldest revision still readable.
        compacted: Revision,
    },
    /// The requested revision has not been reached (or is not yet durable).
    #[error("required revision {requested} is a future revision (current revision {current})")]
    FutureRevision {
        /// The revision the caller asked for.
        requested: Revision,
        /// The store's current (visible) revision.
        current: Revision,
    },
    /// A watcher did not consume its events fast enough; its buffer filled and it was cut off
    /// so that writers never wait. The caller may watch again from `delivered`.
    #[error("watcher fell behind and was cancelled after revision {delivered}")]
    WatcherLagged {
        /// The revision of the last event this watcher delivered (or the revision it started
        /// after, if none): every change up to it was delivered.
        delivered: Revision,
    },
    /// The store has been closed.
    #[error("store is closed")]
    Closed,
    /// A networked backend (etcd) could not be reached or did not answer in time; the
    /// operation may or may not have taken effect (as with etcd's own clients). The API server
    /// answers 503, never a guess.
    #[error("storage unavailable: {reason}")]
    Unavailable {
        /// What failed, for the log and the client's message.
        reason: String,
    },
    /// The key is longer than the record format allows (4 GiB); nothing was written.
    #[error("key of {len} bytes is too long")]
    KeyTooLong {
        /// The key's length in bytes.
        len: usize,
    },
    /// The backend failed; the operation did not take effect.
    #[error("storage backend failed to {op}")]
    Backend {
        /// What the store was doing.
        op: &'static str,
        /// The backend's error.
        #[source]
        source: BackendError,
    },
    /// A flush (the group commit's writing of the queued records, then the sync) failed
    /// earlier: the store no longer accepts writes (fail-stop), because it can no longer
    /// promise that an acknowledged write is durable.
    #[error("store stopped accepting writes after a failed flush")]
    Failed {
        /// The flush's error.
        #[source]
        source: BackendError,
    },
    /// A record on disk could not be decoded.
    #[error("corrupt record at revision {revision}: {reason}")]
    CorruptRecord {
        /// The record's revision.
        revision: Revision,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Revisions above the compaction point must be contiguous; one is missing.
    #[error("history has a gap: expected revision {expected}, found {found}")]
    RevisionGap {
        /// The revision that should have come next.
        expected: Revision,
        /// The revision found instead.
        found: Revision,
    },
    /// The in-memory index names a revision the backend does not hold (a bug).
    #[error("index and backend disagree at revision {revision}")]
    IndexMismatch {
        /// The revision the index pointed at.
        revision: Revision,
    },
    /// The data directory was written by an incompatible version of the store.
    #[error("unsupported store format {found} (this build reads format {supported})")]
    UnsupportedFormat {
        /// The format found on disk.
        found: u64,
        /// The format this build reads and writes.
        supported: u64,
    },
}

impl Error {
    /// True for the errors that mean "this revision is outside the readable window" (the
    /// caller should relist or retry), as opposed to failures.
    pub fn is_revision_out_of_range(&self) -> bool {
        matches!(self, Error::Compacted { .. } | Error::FutureRevision { .. })
    }
}

/// An error of the backend (sled), cheap to clone so that one failed flush can be reported to
/// every writer that was waiting on it.
#[derive(Clone)]
pub struct BackendError(pub(crate) Arc<dyn std::error::Error + Send + Sync>);

impl BackendError {
    /// Wraps the error of a backend other than sled (the etcd store's unexpected answers).
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        BackendError(Arc::new(error))
    }
}

impl fmt::Debug for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for BackendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}
