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
//! Format: `MAGIC | revision u64 | parts u64` (big-endian), then the parts, then a checksum of
//! everything before it. A part is `keys u64 | length u64 | keys`: up to [`PART_KEYS`] keys,
//! each, in key order, `key_len | key | count | entries`, each entry `mod_revision − previous
//! mod_revision | create_gap | version | size`, where `create_gap` is `mod_revision −
//! create_revision + 1`, or 0 for a tombstone (which has no version); all LEB128 varints (about
//! 5 bytes an entry instead of 32: open reads and checks less). The parts let open decode a
//! checkpoint on several threads (decoding a million entries was a third of a reopen); the
//! previous format (`kmidxcp2`: `keys u64` where `parts u64` is, then the keys) reads as one
//! part.

use std::num::NonZeroUsize;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use tracing::debug;

use crate::Revision;
use crate::error::{Error, Result};
use crate::index::{Entry, Index};
use crate::store::Shared;

/// First bytes of a checkpoint (and its format version, the last byte).
const MAGIC: &[u8; 8] = b"kmidxcp3";
/// First bytes of a checkpoint in the format before parts; still read.
const MAGIC_ONE_PART: &[u8; 8] = b"kmidxcp2";
/// Keys per part: 100,000 keys make 7 parts, enough to share between a machine's threads.
const PART_KEYS: u64 = 16_384;
/// Most threads that decode one checkpoint (beyond a few, memory is the limit).
const MAX_DECODE_THREADS: usize = 4;
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
        let mut encoder = Encoder::new(at, PART_KEYS);
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
                        entries_written += upto as u64;
                        encoder.key(key, &entries[..upto]);
                    }
                },
            );
            if cursor.is_none() {
                break;
            }
        }
        let keys = encoder.keys;
        let out = encoder.finish();
        self.backend.write_checkpoint(&out)?;
        self.checkpointed.store(at, Ordering::Release);
        self.checkpoint_entries
            .store(entries_written, Ordering::Release);
        self.checkpoint_stale.store(false, Ordering::Release);
        debug!(revision = at, keys, bytes = out.len(), "index checkpointed");
        Ok(true)
    }
}

/// Writes a checkpoint's bytes: the header, the keys (given in order) in parts, the checksum.
struct Encoder {
    out: Vec<u8>,
    /// Keys per part.
    part_keys: u64,
    /// Where the parts' count goes.
    parts_at: usize,
    parts: u64,
    /// Where the open part's header starts, and its keys so far.
    part: Option<(usize, u64)>,
    keys: u64,
}

impl Encoder {
    fn new(at: Revision, part_keys: u64) -> Self {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&at.to_be_bytes());
        let parts_at = out.len();
        out.extend_from_slice(&0u64.to_be_bytes());
        Encoder {
            out,
            part_keys: part_keys.max(1),
            parts_at,
            parts: 0,
            part: None,
            keys: 0,
        }
    }

    fn key(&mut self, key: &[u8], entries: &[Entry]) {
        let (start, keys) = match self.part {
            Some((start, keys)) if keys < self.part_keys => (start, keys),
            _ => {
                self.close_part();
                let start = self.out.len();
                self.out.extend_from_slice(&[0; 16]);
                self.parts += 1;
                (start, 0)
            }
        };
        encode_key(&mut self.out, key, entries);
        self.part = Some((start, keys + 1));
        self.keys += 1;
    }

    /// Fills in the open part's header.
    fn close_part(&mut self) {
        if let Some((start, keys)) = self.part.take() {
            let length = (self.out.len() - start - 16) as u64;
            self.out[start..start + 8].copy_from_slice(&keys.to_be_bytes());
            self.out[start + 8..start + 16].copy_from_slice(&length.to_be_bytes());
        }
    }

    fn finish(mut self) -> Vec<u8> {
        self.close_part();
        let parts = self.parts.to_be_bytes();
        self.out[self.parts_at..self.parts_at + 8].copy_from_slice(&parts);
        let sum = checksum(&self.out);
        self.out.extend_from_slice(&sum.to_be_bytes());
        self.out
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
/// checksum, an entry out of order or above the checkpoint's revision) is an error. The parts
/// are decoded on up to [`MAX_DECODE_THREADS`] threads, this one checking the checksum first.
pub(crate) fn decode(bytes: &[u8]) -> Result<(Revision, Index)> {
    let threads = std::thread::available_parallelism()
        .map_or(1, NonZeroUsize::get)
        .min(MAX_DECODE_THREADS);
    decode_on(bytes, threads)
}

fn corrupt(reason: &'static str) -> Error {
    Error::CorruptRecord {
        revision: 0,
        reason,
    }
}

/// [`decode`] on at most `threads` threads.
fn decode_on(bytes: &[u8], threads: usize) -> Result<(Revision, Index)> {
    let (body, sum) = bytes
        .split_last_chunk::<8>()
        .ok_or(corrupt("checkpoint shorter than its checksum"))?;
    let mut reader = Reader { rest: body };
    let magic = reader.take(MAGIC.len())?;
    let at = reader.u64()?;
    let mut parts = Vec::new();
    if magic == MAGIC {
        let count = reader.u64()?;
        for _ in 0..count {
            let keys = reader.u64()?;
            let length = usize::try_from(reader.u64()?)
                .map_err(|_| corrupt("checkpoint part longer than memory"))?;
            parts.push((keys, reader.take(length)?));
        }
        if !reader.rest.is_empty() {
            return Err(corrupt("checkpoint longer than its parts"));
        }
    } else if magic == MAGIC_ONE_PART {
        let keys = reader.u64()?;
        parts.push((keys, reader.rest));
    } else {
        return Err(corrupt("not a checkpoint of this format"));
    }
    // Contiguous runs of parts, one per thread, of about equal bytes.
    let share = body.len() / threads.max(1) + 1;
    let mut runs: Vec<&[(u64, &[u8])]> = Vec::new();
    let mut rest = parts.as_slice();
    while !rest.is_empty() {
        let mut bytes = 0;
        let mut end = 0;
        while end < rest.len() && (end == 0 || bytes < share) {
            bytes += rest[end].1.len();
            end += 1;
        }
        let (run, after) = rest.split_at(end);
        runs.push(run);
        rest = after;
    }
    let (first, others) = runs
        .split_first()
        .map_or((&[][..], &[][..]), |(f, o)| (*f, o));
    let (checked, decoded) = std::thread::scope(|scope| {
        // A run whose thread cannot start is decoded here.
        let handles: Vec<_> = others
            .iter()
            .map(|run| {
                let thread = std::thread::Builder::new()
                    .name("kubemock-checkpoint-decode".to_owned())
                    .spawn_scoped(scope, move || decode_parts(run, at))
                    .ok();
                (run, thread)
            })
            .collect();
        let checked = checksum(body) == u64::from_be_bytes(*sum);
        let mut decoded = vec![decode_parts(first, at)];
        for (run, thread) in handles {
            decoded.push(match thread {
                Some(thread) => thread
                    .join()
                    .unwrap_or_else(|_| Err(corrupt("checkpoint decoder thread panicked"))),
                None => decode_parts(run, at),
            });
        }
        (checked, decoded)
    });
    if !checked {
        return Err(corrupt("checkpoint checksum mismatch"));
    }
    let mut keys = Vec::new();
    for run in decoded {
        let run = run?;
        if keys.is_empty() {
            keys = run;
        } else {
            keys.extend(run);
        }
    }
    let index = Index::from_sorted(keys, at).ok_or(corrupt("checkpoint keys out of order"))?;
    Ok((at, index))
}

/// Decodes a run of parts (`(keys, bytes)`) into their keys and entries.
fn decode_parts(parts: &[(u64, &[u8])], at: Revision) -> Result<Vec<(Bytes, Vec<Entry>)>> {
    let total: u64 = parts.iter().map(|(keys, _)| *keys).sum();
    let bytes: usize = parts.iter().map(|(_, part)| part.len()).sum();
    // Not trusted to size an allocation beyond what the bytes could hold.
    let mut keys = Vec::with_capacity(usize::try_from(total).unwrap_or(usize::MAX).min(bytes / 3));
    for (count, part) in parts {
        let mut reader = Reader { rest: part };
        for _ in 0..*count {
            keys.push(decode_key(&mut reader, at)?);
        }
        if !reader.rest.is_empty() {
            return Err(corrupt("checkpoint part longer than its keys"));
        }
    }
    Ok(keys)
}

/// Decodes one key and its entries.
fn decode_key(reader: &mut Reader<'_>, at: Revision) -> Result<(Bytes, Vec<Entry>)> {
    let key_len = usize::try_from(reader.varint()?)
        .map_err(|_| corrupt("checkpoint key longer than memory"))?;
    let key = Bytes::copy_from_slice(reader.take(key_len)?);
    let count = reader.varint()?;
    // The entries' order is checked here, while they are at hand, not in a walk of the
    // million of them after (`Index::from_sorted` checks the keys').
    if count == 0 {
        return Err(corrupt("checkpoint key without entries"));
    }
    let capacity = usize::try_from(count)
        .unwrap_or(usize::MAX)
        .min(reader.rest.len() / 3);
    let mut entries = Vec::with_capacity(capacity);
    let mut mod_revision: Revision = 0;
    for _ in 0..count {
        // Entries ascend strictly from revision 1: every step is at least one.
        let step = reader.varint()?;
        if step == 0 {
            return Err(corrupt("checkpoint entries out of order"));
        }
        mod_revision = mod_revision
            .checked_add(step)
            .ok_or(corrupt("checkpoint revision overflows"))?;
        let entry = match reader.varint()? {
            0 => Entry::tombstone(mod_revision, reader.varint()?),
            gap => Entry {
                mod_revision,
                create_revision: mod_revision
                    .checked_add(1)
                    .and_then(|next| next.checked_sub(gap))
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
    Ok((key, entries))
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
            .ok_or(corrupt("checkpoint truncated"))?;
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
        Err(corrupt("checkpoint varint malformed or truncated"))
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
        encode_in_parts(at, keys, PART_KEYS)
    }

    fn encode_in_parts(at: Revision, keys: &[(&[u8], Vec<Entry>)], part_keys: u64) -> Vec<u8> {
        let mut encoder = Encoder::new(at, part_keys);
        for (key, entries) in keys {
            encoder.key(key, entries);
        }
        encoder.finish()
    }

    /// Every key of `index` with its entries, in order.
    fn contents(index: &Index) -> Vec<(Bytes, Vec<Entry>)> {
        index
            .iter()
            .map(|(key, entries)| (key.clone(), entries.to_vec()))
            .collect()
    }

    /// Ten keys, some with several entries and a tombstone.
    fn ten_keys() -> Vec<(Vec<u8>, Vec<Entry>)> {
        (0..10u64)
            .map(|i| {
                let mut entries = vec![entry(i + 1, i + 1, 1)];
                if i % 3 == 0 {
                    entries.push(entry(20 + i, i + 1, 2));
                    entries.push(Entry::tombstone(40 + i, 7));
                }
                (format!("/k{i:02}").into_bytes(), entries)
            })
            .collect()
    }

    #[test]
    fn parts_decode_alike_on_any_number_of_threads() {
        let keys = ten_keys();
        let keys: Vec<(&[u8], Vec<Entry>)> = keys
            .iter()
            .map(|(key, entries)| (key.as_slice(), entries.clone()))
            .collect();
        let expected: Vec<(Bytes, Vec<Entry>)> = keys
            .iter()
            .map(|(key, entries)| (Bytes::copy_from_slice(key), entries.clone()))
            .collect();
        for part_keys in [1, 3, 10, 64] {
            let bytes = encode_in_parts(50, &keys, part_keys);
            for threads in [1, 2, 3, 4, 16] {
                let (at, index) = decode_on(&bytes, threads).expect("decodes");
                assert_eq!(at, 50);
                assert_eq!(
                    contents(&index),
                    expected,
                    "{part_keys} a part, {threads} threads"
                );
            }
        }
        // Keys out of order across two parts (each in order on its own) are refused.
        let mut swapped = keys.clone();
        swapped.swap(2, 7);
        let bytes = encode_in_parts(50, &swapped[..], 5);
        assert!(decode_on(&bytes, 2).is_err());
    }

    #[test]
    fn an_empty_index_checkpoints_as_no_parts() {
        let bytes = encode(7, &[]);
        for threads in [1, 4] {
            let (at, index) = decode_on(&bytes, threads).expect("decodes");
            assert_eq!(at, 7);
            assert_eq!(index.key_count(), 0);
        }
    }

    #[test]
    fn a_checkpoint_of_the_format_before_parts_still_decodes() {
        let keys = ten_keys();
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC_ONE_PART);
        out.extend_from_slice(&50u64.to_be_bytes());
        out.extend_from_slice(&(keys.len() as u64).to_be_bytes());
        for (key, entries) in &keys {
            encode_key(&mut out, key, entries);
        }
        let sum = checksum(&out);
        out.extend_from_slice(&sum.to_be_bytes());
        let (at, index) = decode(&out).expect("decodes");
        assert_eq!(at, 50);
        assert_eq!(
            contents(&index),
            keys.iter()
                .map(|(key, entries)| (Bytes::copy_from_slice(key), entries.clone()))
                .collect::<Vec<_>>()
        );
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
        let one = encode(9, &[(b"key", vec![entry(2, 2, 1), entry(9, 2, 2)])]);
        let keys = ten_keys();
        let keys: Vec<(&[u8], Vec<Entry>)> = keys
            .iter()
            .map(|(key, entries)| (key.as_slice(), entries.clone()))
            .collect();
        let parts = encode_in_parts(50, &keys, 3);
        for good in [one, parts] {
            assert!(decode_on(&good, 2).is_ok());
            for len in 0..good.len() {
                assert!(decode_on(&good[..len], 2).is_err(), "truncated to {len}");
            }
            for i in 0..good.len() {
                let mut bad = good.clone();
                bad[i] ^= 0x40;
                assert!(decode_on(&bad, 2).is_err(), "byte {i} flipped");
            }
        }
        // Well-formed but wrong: an entry after the checkpoint's revision, a revision twice,
        // revisions descending, a key without entries, a key twice.
        let late = encode(8, &[(b"key", vec![entry(9, 9, 1)])]);
        assert!(decode(&late).is_err());
        let repeated = encode(9, &[(b"key", vec![entry(5, 5, 1), entry(5, 5, 2)])]);
        assert!(decode(&repeated).is_err());
        let descending = encode(9, &[(b"key", vec![entry(7, 7, 1), entry(5, 5, 1)])]);
        assert!(decode(&descending).is_err());
        let empty = encode(9, &[(b"key", vec![])]);
        assert!(decode(&empty).is_err());
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
