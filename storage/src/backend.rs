//! The sled backend: the only module that names `sled`, and it only uses calls present in both
//! sled 0.34 and 1.0 (`open_tree`, `get`, `insert`, `range`, `apply_batch`, `flush`),
//! so that moving sled versions, or backends, touches this file alone.
//!
//! Two trees: `log` maps big-endian revisions to history records (`revision.rs`), `meta` holds
//! the format version and the compaction point. Nothing else is stored: the current revision is
//! the log's last key (or the compaction point, if compaction removed everything), and the key
//! index is rebuilt from the log on open.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Revision;
use crate::error::{BackendError, Error, Result};
use crate::revision::{decode_revision, encode_revision};

/// The on-disk format this build reads and writes.
const FORMAT: u64 = 1;
/// Meta key of the format version.
const META_FORMAT: &[u8] = b"format";
/// Meta key of the compaction point.
const META_COMPACTED: &[u8] = b"compacted";

/// How long `open` keeps retrying a data directory whose lock is held. sled releases its file
/// lock from a background I/O thread shortly *after* the last handle of a database is dropped,
/// so a store closed and reopened in one process can briefly find it still held. A directory
/// locked by another live process still fails, after this delay.
const LOCK_RETRY_FOR: Duration = Duration::from_secs(3);
/// Pause between attempts while the lock is held.
const LOCK_RETRY_EVERY: Duration = Duration::from_millis(10);

/// A stored history record's bytes. Only this module names the backend's buffer type.
pub(crate) type RawRecord = sled::IVec;

/// Where and how to open the backend.
pub(crate) struct BackendConfig<'a> {
    /// Data directory; `None` for a temporary (ephemeral) database.
    pub(crate) data_dir: Option<&'a Path>,
    /// Page cache size in bytes.
    pub(crate) cache_capacity: u64,
}

/// The sled database and its two trees.
pub(crate) struct Backend {
    db: sled::Db,
    log: sled::Tree,
    meta: sled::Tree,
}

fn backend_error(op: &'static str) -> impl FnOnce(sled::Error) -> Error {
    move |source| Error::Backend {
        op,
        source: BackendError(Arc::new(source)),
    }
}

/// Opens the database, retrying for [`LOCK_RETRY_FOR`] while its directory lock is held.
fn open_retrying_lock(config: &sled::Config) -> sled::Result<sled::Db> {
    let deadline = Instant::now() + LOCK_RETRY_FOR;
    loop {
        match config.open() {
            // sled reports a held lock only as an I/O error with this text.
            Err(sled::Error::Io(err))
                if err.to_string().contains("could not acquire lock")
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(LOCK_RETRY_EVERY);
            }
            result => return result,
        }
    }
}

impl Backend {
    /// Opens (or creates) the database. A temporary database never fsyncs and disappears when
    /// dropped; a durable one is flushed only when the store asks (group commit), never by a
    /// timer of sled's own.
    pub(crate) fn open(config: &BackendConfig<'_>) -> Result<Self> {
        // HighThroughput: sled cleans its log segments less eagerly, trading disk space for
        // cheaper flushes (about 30,000 vs 27,000 grouped 1 KiB writes/s on the development
        // machine); a test server's data directory is small either way.
        let sled_config = sled::Config::new()
            .cache_capacity(config.cache_capacity)
            .mode(sled::Mode::HighThroughput)
            .flush_every_ms(None);
        let sled_config = match config.data_dir {
            Some(dir) => sled_config.path(dir),
            None => sled_config.temporary(true),
        };
        let db = open_retrying_lock(&sled_config).map_err(backend_error("open the database"))?;
        let log = db
            .open_tree("log")
            .map_err(backend_error("open the history tree"))?;
        let meta = db
            .open_tree("meta")
            .map_err(backend_error("open the meta tree"))?;
        let backend = Backend { db, log, meta };
        match backend.meta_u64(META_FORMAT)? {
            None => backend.set_meta_u64(META_FORMAT, FORMAT)?,
            Some(FORMAT) => {}
            Some(found) => {
                return Err(Error::UnsupportedFormat {
                    found,
                    supported: FORMAT,
                });
            }
        }
        Ok(backend)
    }

    /// Stores the record of `revision`.
    pub(crate) fn insert(&self, revision: Revision, record: Vec<u8>) -> Result<()> {
        self.log
            .insert(encode_revision(revision), record)
            .map_err(backend_error("write a history record"))?;
        Ok(())
    }

    /// The record of `revision`, if retained.
    pub(crate) fn get(&self, revision: Revision) -> Result<Option<RawRecord>> {
        self.log
            .get(encode_revision(revision))
            .map_err(backend_error("read a history record"))
    }

    /// Records with revisions in `from..=to`, in revision order.
    pub(crate) fn scan(
        &self,
        from: Revision,
        to: Revision,
    ) -> impl Iterator<Item = Result<(Revision, RawRecord)>> + use<> {
        self.log
            .range(encode_revision(from)..=encode_revision(to))
            .map(|item| {
                let (key, value) = item.map_err(backend_error("scan the history"))?;
                Ok((decode_revision(&key)?, value))
            })
    }

    /// Removes the records of `revisions` in one atomic batch.
    pub(crate) fn remove(&self, revisions: &[Revision]) -> Result<()> {
        let mut batch = sled::Batch::default();
        for revision in revisions {
            batch.remove(&encode_revision(*revision));
        }
        self.log
            .apply_batch(batch)
            .map_err(backend_error("remove compacted records"))
    }

    /// The persisted compaction point (0 if never compacted).
    pub(crate) fn compacted(&self) -> Result<Revision> {
        Ok(self.meta_u64(META_COMPACTED)?.unwrap_or(0))
    }

    /// Persists the compaction point (durable only after the next [`Backend::flush`]).
    pub(crate) fn set_compacted(&self, revision: Revision) -> Result<()> {
        self.set_meta_u64(META_COMPACTED, revision)
    }

    /// Makes every earlier write durable. Blocks; called by the group-commit thread.
    pub(crate) fn flush(&self) -> Result<()> {
        self.db
            .flush()
            .map(|_| ())
            .map_err(backend_error("flush to disk"))
    }

    fn meta_u64(&self, key: &[u8]) -> Result<Option<u64>> {
        let Some(raw) = self.meta.get(key).map_err(backend_error("read metadata"))? else {
            return Ok(None);
        };
        let array: [u8; 8] = raw.as_ref().try_into().map_err(|_| Error::CorruptRecord {
            revision: 0,
            reason: "metadata value is not an 8-byte integer",
        })?;
        Ok(Some(u64::from_be_bytes(array)))
    }

    fn set_meta_u64(&self, key: &[u8], value: u64) -> Result<()> {
        self.meta
            .insert(key, &value.to_be_bytes())
            .map_err(backend_error("write metadata"))?;
        Ok(())
    }
}
