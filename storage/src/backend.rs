//! The history log's backends: sled for a durable store, memory for an ephemeral one. This is
//! the only module that names `sled`, and it only uses calls present in both sled 0.34 and 1.0
//! (`open_tree`, `get`, `insert`, `range`, `apply_batch`, `flush`), so that moving sled
//! versions, or backends, touches this file alone.
//!
//! Both hold the same thing: the log, big-endian revisions to history records (`revision.rs`),
//! and the compaction point. Nothing else is stored: the current revision is the log's last key
//! (or the compaction point, if compaction removed everything), and the key index is rebuilt
//! from the log on open. On disk, sled keeps the log in one tree and the format version and the
//! compaction point in another.
//!
//! An ephemeral store keeps its log in memory (an ordered map of shared buffers) instead of
//! sled's temporary mode: it is never flushed and gone at close either way, and sled's
//! temporary mode still paid for its page cache, its log serialisation and writes to a
//! temporary file (about an eighth of the API server's CPU per created object, and a file
//! created at every start). The retention window bounds what it holds, as on disk.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::RwLock;

use crate::Revision;
use crate::error::{BackendError, Error, Result};
use crate::revision::{decode_revision, encode_revision};

/// The on-disk format this build reads and writes.
const FORMAT: u64 = 1;
/// Meta key of the format version.
const META_FORMAT: &[u8] = b"format";
/// Meta key of the compaction point.
const META_COMPACTED: &[u8] = b"compacted";
/// Records a scan of the memory log copies out per hold of its lock.
const MEMORY_SCAN_CHUNK: usize = 256;

/// How long `open` keeps retrying a data directory whose lock is held. sled releases its file
/// lock from a background I/O thread shortly *after* the last handle of a database is dropped,
/// so a store closed and reopened in one process can briefly find it still held. A directory
/// locked by another live process still fails, after this delay.
const LOCK_RETRY_FOR: Duration = Duration::from_secs(3);
/// Pause between attempts while the lock is held.
const LOCK_RETRY_EVERY: Duration = Duration::from_millis(10);

/// A stored history record's bytes (sled's buffers are wrapped without a copy), so that values
/// read from it are slices of the same buffer.
pub(crate) type RawRecord = Bytes;

/// Where and how to open the backend.
pub(crate) struct BackendConfig<'a> {
    /// Data directory; `None` for an ephemeral (in-memory) log.
    pub(crate) data_dir: Option<&'a Path>,
    /// sled's page cache size in bytes (durable only).
    pub(crate) cache_capacity: u64,
}

/// The history log and the compaction point.
pub(crate) enum Backend {
    /// On disk.
    Sled(SledLog),
    /// In memory (ephemeral stores).
    Memory(MemoryLog),
}

/// The sled database and its two trees.
pub(crate) struct SledLog {
    db: sled::Db,
    log: sled::Tree,
    meta: sled::Tree,
}

/// The in-memory log. Only the store's single writer inserts (at increasing revisions) and only
/// compaction removes; readers hold the lock just long enough to clone a buffer.
pub(crate) struct MemoryLog {
    records: Arc<RwLock<BTreeMap<Revision, Bytes>>>,
    compacted: AtomicU64,
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
    /// Opens the log: sled in `data_dir` (created if missing), or an empty one in memory.
    pub(crate) fn open(config: &BackendConfig<'_>) -> Result<Self> {
        match config.data_dir {
            Some(dir) => Ok(Backend::Sled(SledLog::open(dir, config.cache_capacity)?)),
            None => Ok(Backend::Memory(MemoryLog::default())),
        }
    }

    /// Stores the record of `revision`.
    pub(crate) fn insert(&self, revision: Revision, record: Vec<u8>) -> Result<()> {
        match self {
            Backend::Sled(sled) => sled.insert(revision, record),
            Backend::Memory(memory) => {
                memory.records.write().insert(revision, Bytes::from(record));
                Ok(())
            }
        }
    }

    /// The record of `revision`, if retained.
    pub(crate) fn get(&self, revision: Revision) -> Result<Option<RawRecord>> {
        match self {
            Backend::Sled(sled) => sled.get(revision),
            Backend::Memory(memory) => Ok(memory.records.read().get(&revision).cloned()),
        }
    }

    /// Records with revisions in `from..=to`, in revision order.
    pub(crate) fn scan(&self, from: Revision, to: Revision) -> Scan {
        match self {
            Backend::Sled(sled) => Scan::Sled(Box::new(
                sled.log.range(encode_revision(from)..=encode_revision(to)),
            )),
            Backend::Memory(memory) => Scan::Memory(MemoryScan {
                records: Arc::clone(&memory.records),
                next: Some(from),
                to,
                chunk: Vec::new().into_iter(),
            }),
        }
    }

    /// Removes the records of `revisions` in one atomic batch; returns the memory it freed
    /// (0 on disk).
    pub(crate) fn remove(&self, revisions: &[Revision]) -> Result<u64> {
        match self {
            Backend::Sled(sled) => sled.remove(revisions).map(|()| 0),
            Backend::Memory(memory) => {
                let mut records = memory.records.write();
                Ok(revisions
                    .iter()
                    .filter_map(|revision| records.remove(revision))
                    .map(|record| record.len() as u64)
                    .sum())
            }
        }
    }

    /// Whether the log is in memory (an ephemeral store).
    pub(crate) fn in_memory(&self) -> bool {
        matches!(self, Backend::Memory(_))
    }

    /// The persisted compaction point (0 if never compacted).
    pub(crate) fn compacted(&self) -> Result<Revision> {
        match self {
            Backend::Sled(sled) => Ok(sled.meta_u64(META_COMPACTED)?.unwrap_or(0)),
            Backend::Memory(memory) => Ok(memory.compacted.load(Ordering::Acquire)),
        }
    }

    /// Persists the compaction point (durable only after the next [`Backend::flush`]).
    pub(crate) fn set_compacted(&self, revision: Revision) -> Result<()> {
        match self {
            Backend::Sled(sled) => sled.set_meta_u64(META_COMPACTED, revision),
            Backend::Memory(memory) => {
                memory.compacted.store(revision, Ordering::Release);
                Ok(())
            }
        }
    }

    /// Makes every earlier write durable. Blocks; called by the group-commit thread (a memory
    /// log has nothing to flush).
    pub(crate) fn flush(&self) -> Result<()> {
        match self {
            Backend::Sled(sled) => sled
                .db
                .flush()
                .map(|_| ())
                .map_err(backend_error("flush to disk")),
            Backend::Memory(_) => Ok(()),
        }
    }
}

impl SledLog {
    fn open(dir: &Path, cache_capacity: u64) -> Result<Self> {
        // HighThroughput: sled cleans its log segments less eagerly, trading disk space for
        // cheaper flushes (about 30,000 vs 27,000 grouped 1 KiB writes/s on the development
        // machine); a test server's data directory is small either way.
        let sled_config = sled::Config::new()
            .cache_capacity(cache_capacity)
            .mode(sled::Mode::HighThroughput)
            .flush_every_ms(None)
            .path(dir);
        let db = open_retrying_lock(&sled_config).map_err(backend_error("open the database"))?;
        let log = db
            .open_tree("log")
            .map_err(backend_error("open the history tree"))?;
        let meta = db
            .open_tree("meta")
            .map_err(backend_error("open the meta tree"))?;
        let backend = SledLog { db, log, meta };
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

    fn insert(&self, revision: Revision, record: Vec<u8>) -> Result<()> {
        self.log
            .insert(encode_revision(revision), record)
            .map_err(backend_error("write a history record"))?;
        Ok(())
    }

    fn get(&self, revision: Revision) -> Result<Option<RawRecord>> {
        Ok(self
            .log
            .get(encode_revision(revision))
            .map_err(backend_error("read a history record"))?
            .map(Bytes::from_owner))
    }

    fn remove(&self, revisions: &[Revision]) -> Result<()> {
        let mut batch = sled::Batch::default();
        for revision in revisions {
            batch.remove(&encode_revision(*revision));
        }
        self.log
            .apply_batch(batch)
            .map_err(backend_error("remove compacted records"))
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

impl Default for MemoryLog {
    fn default() -> Self {
        MemoryLog {
            records: Arc::new(RwLock::new(BTreeMap::new())),
            compacted: AtomicU64::new(0),
        }
    }
}

/// A scan of the log in revision order. It owns what it needs (a scan outlives no lock): sled's
/// iterator, or the memory log and a chunk of records copied out of it under its read lock.
pub(crate) enum Scan {
    Sled(Box<sled::Iter>),
    Memory(MemoryScan),
}

/// See [`Scan`].
pub(crate) struct MemoryScan {
    records: Arc<RwLock<BTreeMap<Revision, Bytes>>>,
    /// Where the next chunk starts; `None` when the range is exhausted.
    next: Option<Revision>,
    to: Revision,
    chunk: std::vec::IntoIter<(Revision, Bytes)>,
}

impl Iterator for Scan {
    type Item = Result<(Revision, RawRecord)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Scan::Sled(iter) => {
                let item = iter.next()?;
                Some(
                    item.map_err(backend_error("scan the history"))
                        .and_then(|(key, value)| {
                            Ok((decode_revision(&key)?, Bytes::from_owner(value)))
                        }),
                )
            }
            Scan::Memory(scan) => scan.next().map(Ok),
        }
    }
}

impl MemoryScan {
    fn next(&mut self) -> Option<(Revision, Bytes)> {
        if let Some(item) = self.chunk.next() {
            return Some(item);
        }
        let from = self.next.filter(|from| *from <= self.to)?;
        let chunk: Vec<_> = self
            .records
            .read()
            .range(from..=self.to)
            .take(MEMORY_SCAN_CHUNK)
            .map(|(revision, record)| (*revision, record.clone()))
            .collect();
        // A short chunk ends the range; else continue after its last revision.
        self.next = match chunk.last() {
            Some((last, _)) if chunk.len() == MEMORY_SCAN_CHUNK => last.checked_add(1),
            _ => None,
        };
        self.chunk = chunk.into_iter();
        self.chunk.next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> Backend {
        Backend::open(&BackendConfig {
            data_dir: None,
            cache_capacity: 0,
        })
        .expect("a memory log opens")
    }

    fn revisions(scan: Scan) -> Vec<Revision> {
        scan.map(|item| item.expect("a memory scan does not fail").0)
            .collect()
    }

    #[test]
    fn memory_scans_cross_chunks_and_skip_removed_records() {
        let log = memory();
        for revision in 1..=1000 {
            log.insert(revision, revision.to_be_bytes().to_vec())
                .expect("insert");
        }
        let removed: Vec<Revision> = (1..=1000).filter(|r| r % 3 == 0).collect();
        log.remove(&removed).expect("remove");
        let kept = |from: Revision, to: Revision| -> Vec<Revision> {
            (from..=to.min(1000)).filter(|r| r % 3 != 0).collect()
        };
        // Ranges shorter than, equal to and longer than a chunk, ending inside and past the log.
        for (from, to) in [
            (1, 1000),
            (1, Revision::MAX),
            (255, 256 + 255),
            (2, 2 + 3 * MEMORY_SCAN_CHUNK as Revision),
            (999, 5000),
            (1001, Revision::MAX),
            (10, 9),
        ] {
            assert_eq!(
                revisions(log.scan(from, to)),
                kept(from, to),
                "{from}..={to}"
            );
        }
        let Some(record) = log.get(7).expect("get") else {
            panic!("revision 7 is kept");
        };
        assert_eq!(record.as_ref(), 7u64.to_be_bytes());
        assert!(log.get(6).expect("get").is_none());
    }

    #[test]
    fn memory_scan_sees_records_inserted_after_its_first_chunk() {
        let log = memory();
        for revision in 1..=300 {
            log.insert(revision, vec![1]).expect("insert");
        }
        let mut scan = log.scan(1, Revision::MAX);
        assert_eq!(
            scan.next().map(|item| item.map(|(r, _)| r).ok()),
            Some(Some(1))
        );
        for revision in 301..=600 {
            log.insert(revision, vec![1]).expect("insert");
        }
        assert_eq!(revisions(scan), (2..=600).collect::<Vec<_>>());
    }

    #[test]
    fn memory_compaction_point_round_trips() {
        let log = memory();
        assert_eq!(log.compacted().expect("read"), 0);
        log.set_compacted(42).expect("write");
        log.flush().expect("flush");
        assert_eq!(log.compacted().expect("read"), 42);
    }
}
