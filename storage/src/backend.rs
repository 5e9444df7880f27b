//! The history log's backends: sled for a durable store, memory for an ephemeral one. This is
//! the only module that names `sled`, and it only uses calls present in both sled 0.34 and 1.0
//! (`open_tree`, `get`, `insert`, `range`, `apply_batch`, `flush`), so that moving sled
//! versions, or backends, touches this file alone.
//!
//! Both hold the same thing: the log, big-endian revisions to history records (`revision.rs`),
//! and the compaction point. A durable one also holds the latest checkpoint of the key index
//! (`checkpoint.rs`), a cache of what the log says: the current revision is the log's last key
//! (or the compaction point, or the checkpoint's revision, if compaction removed everything
//! after them), and the key index is the checkpoint's plus the log after it (or, without a
//! usable checkpoint, the whole log). On disk, sled keeps the log in one tree, the checkpoint in
//! another, and the format version and the compaction point in a third.
//!
//! Large records are stored in pieces. sled 0.34 keeps a written value in memory until its page
//! cache evicts the page holding it, and its cache hears of page accesses in batches of 64 per
//! shard (of 256): a thousand 900 KiB records stayed resident, about 1 GiB whatever the cache's
//! capacity, while a gigabyte of 8 KiB values stayed within about 80 MiB. So a record longer
//! than [`PIECE`] is written, in one atomic batch, as a short stub under its revision followed
//! by its pieces under the revision and a 4-byte piece number: keys sort right after the stub
//! and before the next revision, so a scan of the log meets a record's pieces right after its
//! stub. Only this module knows; the rest of the store reads and writes whole records.
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

/// The on-disk format this build writes: 2 stores large records in pieces (format 1 never did,
/// so this build reads it too, and marks the directory 2 on open).
const FORMAT: u64 = 2;
/// The oldest on-disk format this build reads.
const OLDEST_FORMAT: u64 = 1;
/// The longest record stored in one value, and the size of the pieces of longer ones: values
/// this small stay within sled's page cache (see the module doc).
pub(crate) const PIECE: usize = 8 * 1024;
/// First byte of a stub. No record starts with it: records start with their tag, 1 or 2
/// (`revision.rs`, which tests that).
pub(crate) const STUB_TAG: u8 = 0xC5;
/// Length of a stub: tag, record length (u64) and piece count (u32).
const STUB_LEN: usize = 1 + 8 + 4;
/// Key in the checkpoint tree of the checkpoint's piece count; the pieces are under 8-byte
/// big-endian piece numbers.
const CHECKPOINT_HEAD: &[u8] = b"head";
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

/// The sled database and its three trees.
pub(crate) struct SledLog {
    db: sled::Db,
    log: sled::Tree,
    meta: sled::Tree,
    checkpoint: sled::Tree,
    /// sled's data file (`DIR/db`), opened again to sync it: see [`SledLog::flush`].
    file: std::fs::File,
    /// Syncs of `file` that succeeded (for the tests: every flush syncs).
    syncs: AtomicU64,
}

/// The in-memory log. Only the store's single writer inserts (at increasing revisions) and only
/// compaction removes; readers hold the lock just long enough to clone a buffer.
pub(crate) struct MemoryLog {
    records: Arc<RwLock<BTreeMap<Revision, Bytes>>>,
    compacted: AtomicU64,
}

/// What `op` failing with a backend's error (sled's, or the file system's) is to the store.
fn backend_error<E>(op: &'static str) -> impl Fn(E) -> Error + Copy
where
    E: std::error::Error + Send + Sync + 'static,
{
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
    pub(crate) fn insert(&self, revision: Revision, record: Bytes) -> Result<()> {
        match self {
            Backend::Sled(sled) => sled.insert(revision, &record),
            Backend::Memory(memory) => {
                memory.records.write().insert(revision, record);
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
            // Up to the last piece of `to`'s record.
            Backend::Sled(sled) => Scan::Sled(Box::new(
                sled.log
                    .range(encode_revision(from).to_vec()..=piece_key(to, u32::MAX).to_vec())
                    .peekable(),
            )),
            Backend::Memory(memory) => Scan::Memory(MemoryScan {
                records: Arc::clone(&memory.records),
                next: Some(from),
                to,
                chunk: Vec::new().into_iter(),
            }),
        }
    }

    /// Removes the records of `revisions` in one atomic batch.
    pub(crate) fn remove(&self, revisions: &[Revision]) -> Result<()> {
        match self {
            Backend::Sled(sled) => sled.remove(revisions),
            Backend::Memory(memory) => {
                let mut records = memory.records.write();
                for revision in revisions {
                    records.remove(revision);
                }
                Ok(())
            }
        }
    }

    /// Replaces the checkpoint with `bytes` in one atomic step (durable only after the next
    /// [`Backend::flush`]). A memory log keeps none.
    pub(crate) fn write_checkpoint(&self, bytes: &[u8]) -> Result<()> {
        match self {
            Backend::Sled(sled) => sled.write_checkpoint(bytes),
            Backend::Memory(_) => Ok(()),
        }
    }

    /// The checkpoint, if one was written.
    pub(crate) fn read_checkpoint(&self) -> Result<Option<Vec<u8>>> {
        match self {
            Backend::Sled(sled) => sled.read_checkpoint(),
            Backend::Memory(_) => Ok(None),
        }
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
            Backend::Sled(sled) => sled.flush(),
            Backend::Memory(_) => Ok(()),
        }
    }

    /// Syncs of the data file so far (0 for a memory log).
    #[cfg(test)]
    pub(crate) fn syncs(&self) -> u64 {
        match self {
            Backend::Sled(sled) => sled.syncs.load(Ordering::Relaxed),
            Backend::Memory(_) => 0,
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
        let checkpoint = db
            .open_tree("checkpoint")
            .map_err(backend_error("open the checkpoint tree"))?;
        // sled names its data file `db` (sled 0.34 `Config::db_path`); it exists once sled has
        // opened. Syncing the directory makes the names of the files sled created durable.
        let file = std::fs::File::open(dir.join("db"))
            .map_err(backend_error("open the data file to sync it"))?;
        std::fs::File::open(dir)
            .and_then(|dir| dir.sync_all())
            .map_err(backend_error("sync the data directory"))?;
        let backend = SledLog {
            db,
            log,
            meta,
            checkpoint,
            file,
            syncs: AtomicU64::new(0),
        };
        match backend.meta_u64(META_FORMAT)? {
            Some(FORMAT) => {}
            None => backend.set_meta_u64(META_FORMAT, FORMAT)?,
            // Durable at the first flush, with the first record that needs it.
            Some(found) if (OLDEST_FORMAT..FORMAT).contains(&found) => {
                backend.set_meta_u64(META_FORMAT, FORMAT)?;
            }
            Some(found) => {
                return Err(Error::UnsupportedFormat {
                    found,
                    supported: FORMAT,
                });
            }
        }
        Ok(backend)
    }

    /// Makes every earlier write durable: sled's flush, then `fdatasync` of its data file.
    ///
    /// sled 0.34's flush writes its buffers with `sync_file_range` alone (`iobuf.rs`, on
    /// Linux), which neither flushes the drive's volatile cache nor writes the file's metadata,
    /// so the log's growth could be lost with power: "there are no guarantees that the data will
    /// be available after a crash" (sync_file_range(2)). Its periodic `fsync` is off here
    /// (`flush_every_ms(None)`). etcd's WAL makes a batch durable with one `fdatasync`; this is
    /// that one call, on a second descriptor of the same file (a sync covers the file, whatever
    /// descriptor wrote it).
    fn flush(&self) -> Result<()> {
        self.db.flush().map_err(backend_error("flush to disk"))?;
        self.file
            .sync_data()
            .map_err(backend_error("sync the data file"))?;
        self.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn insert(&self, revision: Revision, record: &[u8]) -> Result<()> {
        let key = encode_revision(revision);
        if record.len() <= PIECE {
            self.log
                .insert(key, record)
                .map_err(backend_error("write a history record"))?;
            return Ok(());
        }
        let pieces = record.chunks(PIECE);
        let count = u32::try_from(pieces.len()).map_err(|_| Error::CorruptRecord {
            revision,
            reason: "record too long to store",
        })?;
        let mut batch = sled::Batch::default();
        batch.insert(&key, stub(record.len() as u64, count).as_slice());
        for (number, piece) in (0u32..).zip(pieces) {
            batch.insert(piece_key(revision, number).as_slice(), piece);
        }
        self.log
            .apply_batch(batch)
            .map_err(backend_error("write a history record"))
    }

    fn get(&self, revision: Revision) -> Result<Option<RawRecord>> {
        let Some(value) = self
            .log
            .get(encode_revision(revision))
            .map_err(backend_error("read a history record"))?
        else {
            return Ok(None);
        };
        let Some((len, count)) = parse_stub(&value, revision)? else {
            return Ok(Some(Bytes::from_owner(value)));
        };
        let mut pieces = self
            .log
            .range(piece_key(revision, 0)..=piece_key(revision, u32::MAX))
            .peekable();
        assemble(revision, len, count, &mut pieces).map(Some)
    }

    /// Removes key by key, not in one batch: removal need not be atomic (open finishes an
    /// interrupted compaction), and sled holds every page a batch touches until the batch
    /// ends: one batch removing a compaction's worth of large records held hundreds of
    /// megabytes. A record in pieces loses its pieces first and its stub last, so that a crash
    /// in between leaves a stub that names missing pieces (which the next removal of that
    /// revision completes), never pieces that no stub names.
    fn remove(&self, revisions: &[Revision]) -> Result<()> {
        let error = backend_error("remove compacted records");
        for revision in revisions {
            let key = encode_revision(*revision);
            let Some(value) = self.log.get(key).map_err(error)? else {
                continue;
            };
            if let Some((_, count)) = parse_stub(&value, *revision)? {
                for number in 0..count {
                    self.log
                        .remove(piece_key(*revision, number))
                        .map_err(error)?;
                }
            }
            self.log.remove(key).map_err(error)?;
        }
        Ok(())
    }

    fn write_checkpoint(&self, bytes: &[u8]) -> Result<()> {
        let old = self.checkpoint_pieces()?.unwrap_or(0);
        let pieces = bytes.chunks(PIECE);
        let count = pieces.len() as u64;
        let mut batch = sled::Batch::default();
        for (number, piece) in (0u64..).zip(pieces) {
            batch.insert(&number.to_be_bytes(), piece);
        }
        for number in count..old {
            batch.remove(&number.to_be_bytes());
        }
        batch.insert(CHECKPOINT_HEAD, &count.to_be_bytes());
        self.checkpoint
            .apply_batch(batch)
            .map_err(backend_error("write the index checkpoint"))
    }

    fn checkpoint_pieces(&self) -> Result<Option<u64>> {
        let Some(raw) = self
            .checkpoint
            .get(CHECKPOINT_HEAD)
            .map_err(backend_error("read the index checkpoint"))?
        else {
            return Ok(None);
        };
        let array: [u8; 8] = raw.as_ref().try_into().map_err(|_| Error::CorruptRecord {
            revision: 0,
            reason: "checkpoint head is not an 8-byte count",
        })?;
        Ok(Some(u64::from_be_bytes(array)))
    }

    fn read_checkpoint(&self) -> Result<Option<Vec<u8>>> {
        let Some(count) = self.checkpoint_pieces()? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        for number in 0..count {
            let piece = self
                .checkpoint
                .get(number.to_be_bytes())
                .map_err(backend_error("read the index checkpoint"))?
                .ok_or(Error::CorruptRecord {
                    revision: 0,
                    reason: "checkpoint piece missing",
                })?;
            bytes.extend_from_slice(&piece);
        }
        Ok(Some(bytes))
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

/// The stub of a record of `len` bytes in `count` pieces.
fn stub(len: u64, count: u32) -> [u8; STUB_LEN] {
    let mut stub = [0u8; STUB_LEN];
    stub[0] = STUB_TAG;
    stub[1..9].copy_from_slice(&len.to_be_bytes());
    stub[9..].copy_from_slice(&count.to_be_bytes());
    stub
}

/// The record length and piece count of a stub, or `None` for a whole record.
fn parse_stub(value: &[u8], revision: Revision) -> Result<Option<(u64, u32)>> {
    if value.first() != Some(&STUB_TAG) {
        return Ok(None);
    }
    let corrupt = Error::CorruptRecord {
        revision,
        reason: "malformed stub of a record in pieces",
    };
    let stub: &[u8; STUB_LEN] = value.try_into().map_err(|_| corrupt.clone())?;
    let mut len = [0u8; 8];
    len.copy_from_slice(&stub[1..9]);
    let mut count = [0u8; 4];
    count.copy_from_slice(&stub[9..]);
    Ok(Some((u64::from_be_bytes(len), u32::from_be_bytes(count))))
}

/// The log key of piece `number` of the record at `revision`: the revision's key, then the
/// piece number, so pieces sort after their stub and before the next revision.
fn piece_key(revision: Revision, number: u32) -> [u8; 12] {
    let mut key = [0u8; 12];
    key[..8].copy_from_slice(&encode_revision(revision));
    key[8..].copy_from_slice(&number.to_be_bytes());
    key
}

/// Reads the `count` pieces of the record at `revision` from `pieces` (log items in key
/// order, from its first piece on) and joins them; they must add up to `len` bytes. Takes only
/// the record's own pieces from `pieces`: after an error the iterator is at the next record.
fn assemble(
    revision: Revision,
    len: u64,
    count: u32,
    pieces: &mut std::iter::Peekable<impl Iterator<Item = sled::Result<(sled::IVec, sled::IVec)>>>,
) -> Result<RawRecord> {
    let corrupt = |reason| Error::CorruptRecord { revision, reason };
    let capacity = usize::try_from(len).map_err(|_| corrupt("record longer than memory"))?;
    // Not trusted for more than a few pieces' worth before the pieces are there to back it.
    let mut record = Vec::with_capacity(capacity.min(PIECE * 16));
    for number in 0..count {
        let expected = piece_key(revision, number);
        match pieces.next_if(|item| {
            item.as_ref()
                .map_or(true, |(key, _)| key.as_ref() == expected)
        }) {
            Some(Ok((_, piece))) => record.extend_from_slice(&piece),
            Some(Err(err)) => return Err(backend_error("read a history record")(err)),
            None => {
                // Leave the iterator at the next record, past what is left of this one.
                let prefix = encode_revision(revision);
                while pieces
                    .next_if(|item| {
                        item.as_ref().is_ok_and(|(key, _)| {
                            key.len() > prefix.len() && key.starts_with(&prefix)
                        })
                    })
                    .is_some()
                {}
                return Err(corrupt(PIECE_MISSING));
            }
        }
    }
    if record.len() as u64 != len {
        return Err(corrupt("record pieces do not add up to its length"));
    }
    Ok(Bytes::from(record))
}

/// The reason of the [`Error::CorruptRecord`] of a record in pieces whose pieces are missing:
/// what a removal interrupted by a crash leaves behind (see `SledLog::remove`), which open
/// tells apart from other damage below the compaction point.
pub(crate) const PIECE_MISSING: &str = "record piece missing";

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
    Sled(Box<std::iter::Peekable<sled::Iter>>),
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
                            let revision = decode_revision(&key)?;
                            match parse_stub(&value, revision)? {
                                None => Ok((revision, Bytes::from_owner(value))),
                                Some((len, count)) => {
                                    Ok((revision, assemble(revision, len, count, iter)?))
                                }
                            }
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

    /// A flush ends with a sync of sled's data file (sled's own flush does not make its writes
    /// durable against power loss: `SledLog::flush`), and a memory log syncs nothing.
    #[test]
    fn a_durable_flush_syncs_the_data_file() {
        let dir = tempfile::tempdir().expect("a data directory");
        let log = Backend::open(&BackendConfig {
            data_dir: Some(dir.path()),
            cache_capacity: 1 << 20,
        })
        .expect("a sled log opens");
        assert_eq!(log.syncs(), 0);
        for revision in 1..=3 {
            log.insert(revision, vec![1; 100].into()).expect("insert");
            log.flush().expect("flush");
            assert_eq!(log.syncs(), revision);
        }
        assert!(
            dir.path().join("db").is_file(),
            "sled's data file is DIR/db"
        );
        let memory = memory();
        memory.insert(1, vec![1].into()).expect("insert");
        memory.flush().expect("flush");
        assert_eq!(memory.syncs(), 0);
    }

    /// The log's flushes write into space the file already has (`kubemock-sled`'s
    /// `prepare_ahead`): an `fdatasync` after a write that extends the file also commits the new
    /// size through the file system's journal. Upstream sled extended the file at nearly every
    /// flush. Records written that way survive a reopen, and writing goes on after it.
    #[test]
    fn flushes_write_inside_the_file_and_what_they_wrote_survives_reopen() {
        let dir = tempfile::tempdir().expect("a data directory");
        let config = BackendConfig {
            data_dir: Some(dir.path()),
            cache_capacity: 1 << 20,
        };
        let record = |revision: Revision| -> Bytes {
            let mut bytes = vec![(revision % 251) as u8; 2048];
            bytes[..8].copy_from_slice(&revision.to_be_bytes());
            bytes.into()
        };
        let file_len = || {
            std::fs::metadata(dir.path().join("db"))
                .expect("sled's data file")
                .len()
        };
        // sled's segment (`Config::segment_size`'s default): the zeroes are written a segment at
        // a time.
        const SEGMENT: u64 = 512 * 1024;
        let log = Backend::open(&config).expect("a sled log opens");
        let (mut grew, mut last_len) = (0u64, 0);
        // Some 3 MiB of records. Counted once the first zeroes are in (before them, the writes
        // into the first segment extend the file): from then on the file grows only by the
        // zeroes, one segment at a time, so by at most one change per segment it ends with,
        // however the thread that writes them runs against the flushes.
        for revision in 1..=1_500 {
            log.insert(revision, record(revision)).expect("insert");
            log.flush().expect("flush");
            let len = file_len();
            if last_len > SEGMENT && len != last_len {
                grew += 1;
            }
            last_len = len;
        }
        let segments = file_len() / SEGMENT;
        assert!(
            grew <= segments,
            "the file's size changed at {grew} flushes; it holds {segments} segments"
        );
        drop(log);
        for round in 0..2 {
            let log = Backend::open(&config).expect("the sled log reopens");
            let written = 1_500 + round * 500;
            for revision in 1..=written {
                let found = log.get(revision).expect("get");
                assert_eq!(found, Some(record(revision)), "revision {revision}");
            }
            for revision in written + 1..=written + 500 {
                log.insert(revision, record(revision)).expect("insert");
                log.flush().expect("flush");
            }
        }
    }

    #[test]
    fn memory_scans_cross_chunks_and_skip_removed_records() {
        let log = memory();
        for revision in 1..=1000 {
            log.insert(revision, revision.to_be_bytes().to_vec().into())
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
            log.insert(revision, vec![1].into()).expect("insert");
        }
        let mut scan = log.scan(1, Revision::MAX);
        assert_eq!(
            scan.next().map(|item| item.map(|(r, _)| r).ok()),
            Some(Some(1))
        );
        for revision in 301..=600 {
            log.insert(revision, vec![1].into()).expect("insert");
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
