//! Revisions and the history record format.
//!
//! Every committed change is one record in the history log, stored under its revision encoded
//! big-endian so that the backend's byte order is time order (etcd's `revision.go`). A record
//! does not copy the previous value of its key: it points at the previous record's revision,
//! which compaction keeps as long as a retained record points at it (see `compaction.rs`).
//!
//! Layout of a record (all integers big-endian):
//!
//! ```text
//! tag u8 | create_revision u64 | version u64 | prev_revision u64 | key_len u32 | key | value
//! ```
//!
//! `tag` is [`TAG_PUT`], [`TAG_PUT_LZ4`] or [`TAG_DELETE`] (a tombstone: create_revision,
//! version and value are zero/empty); never the first byte of the sled backend's stubs
//! (`backend.rs`). `prev_revision` is 0 when the key did not exist before this change.
//!
//! A value of [`PACK_MIN`] bytes or more is kept LZ4-compressed when that saves at least an
//! eighth of it ([`pack`]; issue 23: a pod's JSON, 4.2 KB with its managed fields, takes 2.2 KB,
//! an Event's 1.1 KB takes 0.7 KB): [`TAG_PUT_LZ4`], and the value is
//!
//! ```text
//! value_len u32 | LZ4 block
//! ```
//!
//! Records written before compression existed ([`TAG_PUT`] alone) read as they always did.
//! Compression is the records' affair only: every reader gets the value back as it was written
//! ([`Record::value_bytes`]), and the byte counts of the history budget and the live-bytes gauge
//! are of the records as stored. Decoding never panics: a short or malformed record, or a
//! block that does not decompress to its stated length, is [`Error::CorruptRecord`].

use bytes::Bytes;

use crate::error::{Error, Result};

/// A store revision: one global, strictly increasing counter; every committed change takes the
/// next one. 0 means "before anything was written".
pub type Revision = u64;

/// Record tag of a create or update.
const TAG_PUT: u8 = 1;
/// Record tag of a delete (a tombstone).
const TAG_DELETE: u8 = 2;
/// Record tag of a create or update whose value is LZ4-compressed.
const TAG_PUT_LZ4: u8 = 3;
/// Values shorter than this are stored as they are: too little to gain, and the small objects
/// (leases, namespaces, most ConfigMaps) are read most.
pub(crate) const PACK_MIN: usize = 256;
/// LZ4 cannot expand a block more than this (each byte of a match sequence gives at most 255
/// bytes): a stated length beyond it is corrupt, and is refused before anything is allocated.
const LZ4_MAX_RATIO: usize = 255;
/// Bytes before the key: tag, three revisions/counters and the key length.
const HEADER_LEN: usize = 1 + 8 + 8 + 8 + 4;

/// Encodes a revision as a backend key: big-endian, so byte order is revision order.
pub(crate) fn encode_revision(revision: Revision) -> [u8; 8] {
    revision.to_be_bytes()
}

/// Decodes a backend key written by [`encode_revision`].
pub(crate) fn decode_revision(bytes: &[u8]) -> Result<Revision> {
    let array: [u8; 8] = bytes.try_into().map_err(|_| Error::CorruptRecord {
        revision: 0,
        reason: "history key is not an 8-byte revision",
    })?;
    Ok(Revision::from_be_bytes(array))
}

/// What a record did to its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    /// The key was created or updated.
    Put,
    /// The key was deleted.
    Delete,
}

/// A record's value as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    /// The value's bytes as written.
    Plain(&'a [u8]),
    /// An LZ4 block that decompresses to `len` bytes.
    Lz4 { len: u32, block: &'a [u8] },
}

impl Value<'_> {
    /// Bytes the value takes in its record.
    fn stored_len(&self) -> usize {
        match self {
            Value::Plain(value) => value.len(),
            Value::Lz4 { block, .. } => 4 + block.len(),
        }
    }
}

/// A value packed for its record by [`pack`], outside the writer's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Packed {
    /// The value's length.
    len: u32,
    /// Its LZ4 block.
    block: Vec<u8>,
}

impl Packed {
    /// The value as a record holds it.
    pub(crate) fn as_value(&self) -> Value<'_> {
        Value::Lz4 {
            len: self.len,
            block: &self.block,
        }
    }
}

/// Compresses `value` for its record if it is at least [`PACK_MIN`] bytes and compression saves
/// at least an eighth of it; `None` keeps it as it is. Costs some 6 µs for a 4 KB pod: callers
/// run it before they take the writer's lock.
pub(crate) fn pack(value: &[u8]) -> Option<Packed> {
    if value.len() < PACK_MIN {
        return None;
    }
    let len = u32::try_from(value.len()).ok()?;
    let block = lz4_flex::block::compress(value);
    (4 + block.len() <= value.len() - value.len() / 8).then_some(Packed { len, block })
}

/// One history record, borrowed from its encoded bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record<'a> {
    pub(crate) kind: RecordKind,
    pub(crate) key: &'a [u8],
    /// Revision at which the key's current generation was created (0 for a tombstone).
    pub(crate) create_revision: Revision,
    /// Number of changes since creation, 1 on create (0 for a tombstone).
    pub(crate) version: u64,
    /// Revision of the key's previous record if that was a live value, else 0.
    pub(crate) prev_revision: Revision,
    pub(crate) value: Value<'a>,
}

impl<'a> Record<'a> {
    /// Encodes the record.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.key.len() + self.value.stored_len());
        out.push(match (self.kind, self.value) {
            (RecordKind::Put, Value::Plain(_)) => TAG_PUT,
            (RecordKind::Put, Value::Lz4 { .. }) => TAG_PUT_LZ4,
            (RecordKind::Delete, _) => TAG_DELETE,
        });
        out.extend_from_slice(&self.create_revision.to_be_bytes());
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&self.prev_revision.to_be_bytes());
        // The writer refuses keys over 4 GiB (`Error::KeyTooLong`) before encoding; saturating
        // here only keeps this function total.
        let key_len = u32::try_from(self.key.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&key_len.to_be_bytes());
        out.extend_from_slice(self.key);
        match self.value {
            Value::Plain(value) => out.extend_from_slice(value),
            Value::Lz4 { len, block } => {
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(block);
            }
        }
        out
    }

    /// The value as it was written, from `raw`, the bytes this record was decoded from (stored
    /// under `revision`): a slice of them, or the decompressed block.
    pub(crate) fn value_bytes(&self, raw: &Bytes, revision: Revision) -> Result<Bytes> {
        match self.value {
            Value::Plain(value) => Ok(raw.slice_ref(value)),
            Value::Lz4 { len, block } => {
                let corrupt = |reason| Error::CorruptRecord { revision, reason };
                let len = usize::try_from(len)
                    .map_err(|_| corrupt("value length does not fit in memory"))?;
                let mut value = vec![0u8; len];
                match lz4_flex::block::decompress_into(block, &mut value) {
                    Ok(written) if written == len => Ok(Bytes::from(value)),
                    Ok(_) => Err(corrupt("compressed value shorter than its stated length")),
                    Err(_) => Err(corrupt("compressed value does not decompress")),
                }
            }
        }
    }

    /// Decodes the record stored under `revision`.
    pub(crate) fn decode(bytes: &'a [u8], revision: Revision) -> Result<Record<'a>> {
        let corrupt = |reason| Error::CorruptRecord { revision, reason };
        let (header, rest) = bytes
            .split_at_checked(HEADER_LEN)
            .ok_or_else(|| corrupt("record shorter than its header"))?;
        let kind = match header[0] {
            TAG_PUT | TAG_PUT_LZ4 => RecordKind::Put,
            TAG_DELETE => RecordKind::Delete,
            _ => return Err(corrupt("unknown record tag")),
        };
        let u64_at = |at: usize| {
            let mut array = [0u8; 8];
            array.copy_from_slice(&header[at..at + 8]);
            u64::from_be_bytes(array)
        };
        let mut key_len = [0u8; 4];
        key_len.copy_from_slice(&header[25..29]);
        let key_len = usize::try_from(u32::from_be_bytes(key_len))
            .map_err(|_| corrupt("key length does not fit in memory"))?;
        let (key, value) = rest
            .split_at_checked(key_len)
            .ok_or_else(|| corrupt("key length exceeds the record"))?;
        let value = if header[0] == TAG_PUT_LZ4 {
            let (len, block) = value
                .split_at_checked(4)
                .ok_or_else(|| corrupt("compressed value without its length"))?;
            let mut array = [0u8; 4];
            array.copy_from_slice(len);
            let len = u32::from_be_bytes(array);
            let most = u64::try_from(block.len())
                .unwrap_or(u64::MAX)
                .saturating_mul(LZ4_MAX_RATIO as u64);
            if u64::from(len) > most {
                return Err(corrupt("compressed value states more than it can hold"));
            }
            Value::Lz4 { len, block }
        } else {
            Value::Plain(value)
        };
        let record = Record {
            kind,
            key,
            create_revision: u64_at(1),
            version: u64_at(9),
            prev_revision: u64_at(17),
            value,
        };
        match kind {
            RecordKind::Put if record.create_revision == 0 || record.version == 0 => {
                Err(corrupt("live record without create revision or version"))
            }
            RecordKind::Put if record.create_revision > revision => {
                Err(corrupt("record created after its own revision"))
            }
            RecordKind::Delete if record.value != Value::Plain(&[]) => {
                Err(corrupt("tombstone with a value"))
            }
            _ if record.prev_revision >= revision => {
                Err(corrupt("record points at a later previous revision"))
            }
            _ => Ok(record),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trips() {
        let put = Record {
            kind: RecordKind::Put,
            key: b"/registry/configmaps/default/a",
            create_revision: 3,
            version: 2,
            prev_revision: 3,
            value: Value::Plain(b"{\"data\":{}}"),
        };
        let bytes = put.encode();
        assert_eq!(Record::decode(&bytes, 7).unwrap(), put);

        let tombstone = Record {
            kind: RecordKind::Delete,
            key: b"k",
            create_revision: 0,
            version: 0,
            prev_revision: 7,
            value: Value::Plain(b""),
        };
        assert_eq!(Record::decode(&tombstone.encode(), 9).unwrap(), tombstone);
    }

    #[test]
    fn no_record_starts_like_a_stub_of_a_record_in_pieces() {
        // The sled backend tells a stub from a whole record by its first byte.
        assert_ne!(TAG_PUT, crate::backend::STUB_TAG);
        assert_ne!(TAG_PUT_LZ4, crate::backend::STUB_TAG);
        assert_ne!(TAG_DELETE, crate::backend::STUB_TAG);
    }

    /// A pod as the 100,000-pod benchmark stores it, in shape: repeated field names and
    /// managed fields, as JSON.
    fn pod_json() -> Vec<u8> {
        let mut json = String::from(
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-5d8f-x7k2p","namespace":"default","labels":{"app":"web","pod-template-hash":"5d8f"},"managedFields":["#,
        );
        for manager in ["kube-controller-manager", "kube-scheduler", "kubelet"] {
            json.push_str(&format!(r#"{{"manager":"{manager}","operation":"Update","apiVersion":"v1","time":"2026-11-30T06:00:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{"f:labels":{{".":{{}},"f:app":{{}}}}}},"f:status":{{"f:conditions":{{"k:{{\"type\":\"Ready\"}}":{{".":{{}},"f:status":{{}},"f:type":{{}}}}}}}}}}}},"#));
        }
        json.push_str(r#"{}]},"spec":{"containers":[{"name":"web","image":"nginx","resources":{}}]},"status":{"phase":"Running","conditions":["#);
        for condition in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
            json.push_str(&format!(r#"{{"type":"{condition}","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-30T06:00:01Z"}},"#));
        }
        json.push_str(r#"{}]}}"#);
        json.into_bytes()
    }

    #[test]
    fn large_values_are_stored_compressed_and_read_back_as_written() {
        let value = pod_json();
        let packed = pack(&value).expect("a pod's JSON compresses");
        let put = Record {
            kind: RecordKind::Put,
            key: b"/registry/pods/default/web",
            create_revision: 4,
            version: 3,
            prev_revision: 6,
            value: packed.as_value(),
        };
        let raw = Bytes::from(put.encode());
        assert_eq!(raw[0], TAG_PUT_LZ4);
        assert!(
            raw.len() < HEADER_LEN + put.key.len() + value.len() * 3 / 4,
            "{} bytes for a value of {}",
            raw.len(),
            value.len()
        );
        let decoded = Record::decode(&raw, 7).unwrap();
        assert_eq!(decoded, put);
        assert_eq!(decoded.value_bytes(&raw, 7).unwrap(), value);
    }

    #[test]
    fn small_or_incompressible_values_are_stored_as_they_are() {
        assert_eq!(pack(&[b'a'; PACK_MIN - 1]), None);
        assert!(pack(&[b'a'; PACK_MIN]).is_some());
        // Bytes that do not repeat: compression would save nothing.
        let mut state = 0x9e37_79b9_u32;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                state.to_le_bytes()[0]
            })
            .collect();
        assert_eq!(pack(&noise), None);
        // A plain record's value is a slice of the record, not a copy.
        let plain = Record {
            kind: RecordKind::Put,
            key: b"k",
            create_revision: 1,
            version: 1,
            prev_revision: 0,
            value: Value::Plain(&noise),
        };
        let raw = Bytes::from(plain.encode());
        assert_eq!(raw[0], TAG_PUT);
        let value = Record::decode(&raw, 1)
            .unwrap()
            .value_bytes(&raw, 1)
            .unwrap();
        assert_eq!(value, noise);
        assert_eq!(value.as_ptr(), raw[raw.len() - noise.len()..].as_ptr());
    }

    #[test]
    fn corrupt_compressed_values_are_errors_not_panics() {
        let value = pod_json();
        let packed = pack(&value).unwrap();
        let good = first_put(packed.as_value()).encode();
        let value_at = HEADER_LEN + 3;
        let read = |bytes: Vec<u8>| {
            let raw = Bytes::from(bytes);
            Record::decode(&raw, 1).and_then(|record| record.value_bytes(&raw, 1))
        };
        // Every truncation, and every byte of the length and the block flipped: an error, or
        // (a flip inside a literal) a value of the stated length.
        for len in 0..good.len() {
            let _ = read(good[..len].to_vec());
        }
        for i in value_at..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0xff;
            if let Ok(value) = read(bad) {
                assert_eq!(value.len(), pod_json().len());
            }
        }
        // A stated length the block cannot hold is refused before anything is allocated.
        let mut huge = good.clone();
        huge[value_at..value_at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            Record::decode(&huge, 1),
            Err(Error::CorruptRecord {
                reason: "compressed value states more than it can hold",
                ..
            })
        ));
        // A stated length longer than the block decompresses to.
        let mut long = good.clone();
        let stated = u32::try_from(value.len() + 1).unwrap();
        long[value_at..value_at + 4].copy_from_slice(&stated.to_be_bytes());
        assert!(read(long).is_err());
        // A tombstone never carries a compressed value.
        let mut tombstone = good;
        tombstone[0] = TAG_DELETE;
        assert!(Record::decode(&tombstone, 1).is_err());
    }

    #[test]
    fn revisions_sort_as_bytes() {
        let mut revisions = [300u64, 2, 70_000, 1, 1 << 40];
        let mut encoded: Vec<_> = revisions.iter().map(|r| encode_revision(*r)).collect();
        revisions.sort_unstable();
        encoded.sort_unstable();
        let decoded: Vec<_> = encoded
            .iter()
            .map(|b| decode_revision(b).unwrap())
            .collect();
        assert_eq!(decoded, revisions);
    }

    /// The record of the create of `key` at revision 1.
    fn first_put(value: Value<'_>) -> Record<'_> {
        Record {
            kind: RecordKind::Put,
            key: b"key",
            create_revision: 1,
            version: 1,
            prev_revision: 0,
            value,
        }
    }

    #[test]
    fn malformed_records_are_corrupt_not_panics() {
        let good = first_put(Value::Plain(b"value")).encode();
        // Every truncation and a few bit flips must decode to an error or a valid record.
        for len in 0..good.len() {
            let _ = Record::decode(&good[..len], 1);
        }
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0xff;
            let _ = Record::decode(&bad, 1);
        }
        assert!(matches!(
            Record::decode(&[9u8; HEADER_LEN], 1),
            Err(Error::CorruptRecord { .. })
        ));
        assert!(decode_revision(b"short").is_err());
    }
}
