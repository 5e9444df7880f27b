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
//! Format: `MAGIC | revision u64 | keys u64` (big-endian), then per key, in key order,
//! `key_len | key | count | entries`, each entry `mod_revision − previous mod_revision |
//! create_gap | version | size`, where `create_gap` is `mod_revision − create_revision + 1`, or
//! 0 for a tombstone (which has no version); all LEB128 varints (about 5 bytes an entry instead
//! of 32: open reads and checks less), then a checksum of everything before it.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use tracing::debug;

use crate::Revision;
use crate::error::{Error, Result};
use crate::index::{Entry, Index};
use crate::store::Shared;

/// First bytes of a checkpoint (and its format version, the last byte).
const MAGIC: &[u8; 8] = b"kmidxcp2";
/// Keys encoded per hold of the index's read lock: the writer waits at most that long.
const CHECKPOINT_CHUNK_KEYS: usize = 1024;

impl Shared {
    /// Writes a checkpoint of the index at the published revision, unless the last one is at
    /// it already and compaction has removed nothing it lists (`checkpoint_stale`). Call with
    /// the `compaction` lock held. Not flushed: durable with the next flush (the caller's, or
    /// the group commit's). Returns whether it wrote one.
    pub(crate) fn checkpoint_locked(&self) -> Result<bool> {
        let at = self.published.load(Ordering::Acquire);
        if !self.durable
            || (self.checkpointed.load(Ordering::Acquire) >= at
                && !self.checkpoint_stale.load(Ordering::Acquire))
        {
            return Ok(false);
        }
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&at.to_be_bytes());
        let keys_at = out.len();
        out.extend_from_slice(&0u64.to_be_bytes());
        let mut keys = 0u64;
        let mut entries_written = 0u64;
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
                        entries_written += upto as u64;
                        encode_key(&mut out, key, &entries[..upto]);
                    }
                },
            );
            if cursor.is_none() {
                break;
            }
        }
        out[keys_at..keys_at + 8].copy_from_slice(&keys.to_be_bytes());
        let sum = checksum(&out);
        out.extend_from_slice(&sum.to_be_bytes());
        self.backend.write_checkpoint(&out)?;
        self.checkpointed.store(at, Ordering::Release);
        self.checkpoint_entries
            .store(entries_written, Ordering::Release);
        self.checkpoint_stale.store(false, Ordering::Release);
        debug!(revision = at, keys, bytes = out.len(), "index checkpointed");
        Ok(true)
    }
}

fn encode_key(out: &mut Vec<u8>, key: &[u8], entries: &[Entry]) {
    put_varint(out, key.len() as u64);
    out.extend_from_slice(key);
    put_varint(out, entries.len() as u64);
    // (Saturating only keeps this total: the index's entries ascend, and a value is created at
    // or before its revision.)
    let mut previous = 0;
    for entry in entries {
        put_varint(out, entry.mod_revision.saturating_sub(previous));
        previous = entry.mod_revision;
        if entry.is_live() {
            put_varint(
                out,
                entry
                    .mod_revision
                    .saturating_sub(entry.create_revision)
                    .saturating_add(1),
            );
            put_varint(out, entry.version);
        } else {
            put_varint(out, 0);
        }
        put_varint(out, entry.size);
    }
}

/// Appends `value` as a LEB128 varint: 7 bits a byte, low bits first, high bit "more".
fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
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
    if checksum(body) != u64::from_be_bytes(*sum) {
        return Err(corrupt("checkpoint checksum mismatch"));
    }
    let mut reader = Reader { rest: body };
    if reader.take(MAGIC.len())? != MAGIC {
        return Err(corrupt("not a checkpoint of this format"));
    }
    let at = reader.u64()?;
    let key_count = reader.u64()?;
    // Not trusted to size an allocation beyond what the bytes left could hold.
    let mut keys = Vec::with_capacity(
        usize::try_from(key_count)
            .unwrap_or(usize::MAX)
            .min(reader.rest.len() / 3),
    );
    for _ in 0..key_count {
        let key_len = usize::try_from(reader.varint()?)
            .map_err(|_| corrupt("checkpoint key longer than memory"))?;
        let key = Bytes::copy_from_slice(reader.take(key_len)?);
        let count = reader.varint()?;
        let capacity = usize::try_from(count)
            .unwrap_or(usize::MAX)
            .min(reader.rest.len() / 3);
        let mut entries = Vec::with_capacity(capacity);
        let mut mod_revision: Revision = 0;
        for _ in 0..count {
            mod_revision = mod_revision
                .checked_add(reader.varint()?)
                .ok_or(corrupt("checkpoint revision overflows"))?;
            let entry = match reader.varint()? {
                0 => Entry::tombstone(mod_revision, reader.varint()?),
                gap => Entry {
                    mod_revision,
                    create_revision: (mod_revision + 1)
                        .checked_sub(gap)
                        .filter(|create| *create > 0)
                        .ok_or(corrupt("checkpoint entry created before revision 1"))?,
                    version: reader.varint()?,
                    size: reader.varint()?,
                },
            };
            if entry.mod_revision > at {
                return Err(corrupt("checkpoint entry after its revision"));
            }
            entries.push(entry);
        }
        keys.push((key, entries));
    }
    if !reader.rest.is_empty() {
        return Err(corrupt("checkpoint longer than its keys"));
    }
    let index =
        Index::from_sorted(keys, at).ok_or(corrupt("checkpoint keys or entries out of order"))?;
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

    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for (i, byte) in self.rest.iter().enumerate().take(10) {
            let bits = u64::from(byte & 0x7f);
            // The tenth byte may carry only the 64th bit.
            if i == 9 && bits > 1 {
                break;
            }
            value |= bits << (7 * i);
            if byte & 0x80 == 0 {
                self.rest = &self.rest[i + 1..];
                return Ok(value);
            }
        }
        Err(Error::CorruptRecord {
            revision: 0,
            reason: "checkpoint varint malformed or truncated",
        })
    }
}

/// A checksum against a checkpoint that is not what was written (sled checks its own pages;
/// this also catches a bug in the encoder): FNV-1a's multiply-and-xor over 8-byte words, with a
/// final mix, about eight times faster than byte by byte (open checks every byte).
fn checksum(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut words = bytes.chunks_exact(8);
    let mut hash = OFFSET ^ bytes.len() as u64;
    for word in &mut words {
        let mut array = [0u8; 8];
        array.copy_from_slice(word);
        hash = (hash ^ u64::from_le_bytes(array)).wrapping_mul(PRIME);
        hash ^= hash >> 29;
    }
    for byte in words.remainder() {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(PRIME);
    }
    hash ^ (hash >> 32)
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
        let sum = checksum(&out);
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
        // Well-formed but wrong: an entry after the checkpoint's revision, a revision twice, a
        // key twice.
        let late = encode(8, &[(b"key", vec![entry(9, 9, 1)])]);
        assert!(decode(&late).is_err());
        let repeated = encode(9, &[(b"key", vec![entry(5, 5, 1), entry(5, 5, 2)])]);
        assert!(decode(&repeated).is_err());
        let twice = encode(
            9,
            &[
                (b"key", vec![entry(5, 5, 1)]),
                (b"key", vec![entry(7, 7, 1)]),
            ],
        );
        assert!(decode(&twice).is_err());
    }

    #[test]
    fn varints_round_trip_at_their_boundaries() {
        for value in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            let mut reader = Reader { rest: &out };
            assert_eq!(reader.varint().expect("decodes"), value);
            assert!(reader.rest.is_empty());
        }
        // Eleven continuation bytes, and a tenth byte beyond 64 bits, are malformed.
        assert!(Reader { rest: &[0xff; 11] }.varint().is_err());
        let mut too_big = vec![0xff; 9];
        too_big.push(0x02);
        assert!(Reader { rest: &too_big }.varint().is_err());
    }
}
