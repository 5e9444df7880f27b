//! Checkpoints of the key index, so that opening a durable store costs the size of the index
//! and of the history written since the last checkpoint, not of all retained history.
//!
//! Why it exists: the index is derived from the history log, and rebuilding it meant reading
//! and decoding every retained record, values included (finding 8 of the reliability review:
//! restart time grew with history, from 60 ms to 350–450 ms at about 100,000 revisions). A
//! checkpoint is the index's entries (keys and four integers per change, no values) as of one
//! published revision, written in one atomic step next to the log; open reads it, then applies
//! only the log's records after it.
//!
//! A checkpoint is a cache of what the log says, never the only copy: a missing or undecodable
//! one means a full rebuild (with a warning). What keeps it exact:
//! 1. It holds only entries at or below its revision, and only *published* revisions, which
//!    are durable: it never describes a change the log may have lost.
//! 2. Compaction removes records only after a checkpoint at or past the compaction point is
//!    durable (`compaction.rs`). So every record a checkpoint omits because it was written
//!    after it is still in the log at open, and the records it names that compaction has
//!    removed since are at or below the persisted compaction point, where open's compaction of
//!    the loaded index drops them (as it finishes an interrupted compaction).
//! 3. Checkpoints and compactions are serialised by the `compaction` lock, and entries at or
//!    below a revision change only by compaction: so the index can be read in chunks, letting
//!    the writer in between, and still give one consistent snapshot.
//!
//! Format (integers big-endian): `MAGIC | revision u64 | keys u64`, then per key `key_len u32 |
//! key | entries u32 | entries × (mod_revision, create_revision, version, size: u64)`, then an
//! FNV-1a 64 checksum of everything before it.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use tracing::debug;

use crate::Revision;
use crate::error::{Error, Result};
use crate::index::{Entry, Index};
use crate::store::Shared;

/// First bytes of a checkpoint (and its format version, the last byte).
const MAGIC: &[u8; 8] = b"kmidxcp1";
/// Keys encoded per hold of the index's read lock: the writer waits at most that long.
const CHECKPOINT_CHUNK_KEYS: usize = 1024;

impl Shared {
    /// Writes a checkpoint of the index at the published revision, unless the last one is at
    /// it already. Call with the `compaction` lock held. Not flushed: durable with the next
    /// flush (the caller's, or the group commit's). Returns the checkpoint's revision.
    pub(crate) fn checkpoint_locked(&self) -> Result<Revision> {
        let at = self.published.load(Ordering::Acquire);
        if !self.durable || self.checkpointed.load(Ordering::Acquire) >= at {
            return Ok(self.checkpointed.load(Ordering::Acquire));
        }
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&at.to_be_bytes());
        let keys_at = out.len();
        out.extend_from_slice(&0u64.to_be_bytes());
        let mut keys = 0u64;
        let mut cursor = None;
        loop {
            cursor = self.state.read().index.visit_chunk(
                cursor.as_ref(),
                CHECKPOINT_CHUNK_KEYS,
                |key, entries| {
                    // Entries above `at` may not be durable yet; the log has them at open.
                    let upto = entries.partition_point(|e| e.mod_revision <= at);
                    if upto > 0 {
                        keys += 1;
                        encode_key(&mut out, key, &entries[..upto]);
                    }
                },
            );
            if cursor.is_none() {
                break;
            }
        }
        out[keys_at..keys_at + 8].copy_from_slice(&keys.to_be_bytes());
        let sum = fnv1a(&out);
        out.extend_from_slice(&sum.to_be_bytes());
        self.backend.write_checkpoint(&out)?;
        self.checkpointed.store(at, Ordering::Release);
        debug!(revision = at, keys, bytes = out.len(), "index checkpointed");
        Ok(at)
    }
}

fn encode_key(out: &mut Vec<u8>, key: &[u8], entries: &[Entry]) {
    // Keys are at most 4 GiB (`Error::KeyTooLong`), and a key has at most one entry per
    // revision: both fit, saturating only keeps this total.
    out.extend_from_slice(&u32::try_from(key.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(
        &u32::try_from(entries.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    for entry in entries {
        out.extend_from_slice(&entry.mod_revision.to_be_bytes());
        out.extend_from_slice(&entry.create_revision.to_be_bytes());
        out.extend_from_slice(&entry.version.to_be_bytes());
        out.extend_from_slice(&entry.size.to_be_bytes());
    }
}

/// Decodes a checkpoint: its revision and index. Never panics; anything malformed (a wrong
/// checksum, an entry out of order or above the checkpoint's revision) is an error.
pub(crate) fn decode(bytes: &[u8]) -> Result<(Revision, Index)> {
    let corrupt = |reason| Error::CorruptRecord {
        revision: 0,
        reason,
    };
    let (body, sum) = bytes
        .split_last_chunk::<8>()
        .ok_or(corrupt("checkpoint shorter than its checksum"))?;
    if fnv1a(body) != u64::from_be_bytes(*sum) {
        return Err(corrupt("checkpoint checksum mismatch"));
    }
    let mut reader = Reader { rest: body };
    if reader.take(MAGIC.len())? != MAGIC {
        return Err(corrupt("not a checkpoint of this format"));
    }
    let at = reader.u64()?;
    let keys = reader.u64()?;
    let mut index = Index::default();
    for _ in 0..keys {
        let key_len = reader.u32()? as usize;
        let key = Bytes::copy_from_slice(reader.take(key_len)?);
        let count = reader.u32()?;
        if count == 0 {
            return Err(corrupt("checkpoint key without entries"));
        }
        for _ in 0..count {
            let entry = Entry {
                mod_revision: reader.u64()?,
                create_revision: reader.u64()?,
                version: reader.u64()?,
                size: reader.u64()?,
            };
            if entry.mod_revision > at || entry.create_revision > entry.mod_revision {
                return Err(corrupt("checkpoint entry after its revision"));
            }
            if !index.push(&key, entry) {
                return Err(corrupt("checkpoint entries out of order"));
            }
        }
    }
    if !reader.rest.is_empty() {
        return Err(corrupt("checkpoint longer than its keys"));
    }
    Ok((at, index))
}

/// Reads big-endian fields off the front of a slice.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        let (taken, rest) = self
            .rest
            .split_at_checked(len)
            .ok_or(Error::CorruptRecord {
                revision: 0,
                reason: "checkpoint truncated",
            })?;
        self.rest = rest;
        Ok(taken)
    }

    fn u64(&mut self) -> Result<u64> {
        let mut array = [0u8; 8];
        array.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(array))
    }

    fn u32(&mut self) -> Result<u32> {
        let mut array = [0u8; 4];
        array.copy_from_slice(self.take(4)?);
        Ok(u32::from_be_bytes(array))
    }
}

/// FNV-1a, 64 bits: a checksum against a checkpoint that is not what was written (sled checks
/// its own pages; this also catches a bug in the encoder).
fn fnv1a(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(PRIME)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(revision: Revision, create: Revision, version: u64) -> Entry {
        Entry {
            mod_revision: revision,
            create_revision: create,
            version,
            size: 100 + revision,
        }
    }

    fn encode(at: Revision, keys: &[(&[u8], Vec<Entry>)]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&at.to_be_bytes());
        out.extend_from_slice(&(keys.len() as u64).to_be_bytes());
        for (key, entries) in keys {
            encode_key(&mut out, key, entries);
        }
        let sum = fnv1a(&out);
        out.extend_from_slice(&sum.to_be_bytes());
        out
    }

    #[test]
    fn a_checkpoint_round_trips() {
        // The index's worked example (`index.rs`).
        let a = vec![
            entry(1, 1, 1),
            entry(3, 1, 2),
            Entry::tombstone(4, 40),
            entry(5, 5, 1),
        ];
        let b = vec![entry(2, 2, 1)];
        let bytes = encode(5, &[(b"a", a.clone()), (b"b", b.clone())]);
        let (at, index) = decode(&bytes).expect("decodes");
        assert_eq!(at, 5);
        assert_eq!(index.at(b"a", 3), Some(a[1]));
        assert_eq!(index.at(b"a", 4), None);
        assert_eq!(index.latest(b"a"), Some(a[3]));
        assert_eq!(index.latest(b"b"), Some(b[0]));
        let mut history = index.history();
        history.sort_unstable();
        assert_eq!(history, vec![(3, 101), (4, 40), (4, 103)]);
    }

    #[test]
    fn damaged_checkpoints_are_errors_not_panics() {
        let good = encode(9, &[(b"key", vec![entry(2, 2, 1), entry(9, 2, 2)])]);
        assert!(decode(&good).is_ok());
        for len in 0..good.len() {
            assert!(decode(&good[..len]).is_err(), "truncated to {len}");
        }
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            assert!(decode(&bad).is_err(), "byte {i} flipped");
        }
        // Well-formed but wrong: an entry after the checkpoint's revision, entries out of order.
        let late = encode(8, &[(b"key", vec![entry(9, 9, 1)])]);
        assert!(decode(&late).is_err());
        let unordered = encode(9, &[(b"key", vec![entry(5, 5, 1), entry(3, 3, 1)])]);
        assert!(decode(&unordered).is_err());
    }
}
