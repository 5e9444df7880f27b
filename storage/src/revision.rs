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
//! `tag` is [`TAG_PUT`] or [`TAG_DELETE`] (a tombstone: create_revision, version and value are
//! zero/empty); never the first byte of the sled backend's stubs (`backend.rs`).
//! `prev_revision` is 0 when the key did not exist before this change. Decoding never panics: a
//! short or malformed record is [`Error::CorruptRecord`].

use crate::error::{Error, Result};

/// A store revision: one global, strictly increasing counter; every committed change takes the
/// next one. 0 means "before anything was written".
pub type Revision = u64;

/// Record tag of a create or update.
const TAG_PUT: u8 = 1;
/// Record tag of a delete (a tombstone).
const TAG_DELETE: u8 = 2;
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
    pub(crate) value: &'a [u8],
}

impl<'a> Record<'a> {
    /// Encodes the record.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.key.len() + self.value.len());
        out.push(match self.kind {
            RecordKind::Put => TAG_PUT,
            RecordKind::Delete => TAG_DELETE,
        });
        out.extend_from_slice(&self.create_revision.to_be_bytes());
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&self.prev_revision.to_be_bytes());
        // The writer refuses keys over 4 GiB (`Error::KeyTooLong`) before encoding; saturating
        // here only keeps this function total.
        let key_len = u32::try_from(self.key.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&key_len.to_be_bytes());
        out.extend_from_slice(self.key);
        out.extend_from_slice(self.value);
        out
    }

    /// Decodes the record stored under `revision`.
    pub(crate) fn decode(bytes: &'a [u8], revision: Revision) -> Result<Record<'a>> {
        let corrupt = |reason| Error::CorruptRecord { revision, reason };
        let (header, rest) = bytes
            .split_at_checked(HEADER_LEN)
            .ok_or_else(|| corrupt("record shorter than its header"))?;
        let kind = match header[0] {
            TAG_PUT => RecordKind::Put,
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
            RecordKind::Delete if !value.is_empty() => Err(corrupt("tombstone with a value")),
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
            value: b"{\"data\":{}}",
        };
        let bytes = put.encode();
        assert_eq!(Record::decode(&bytes, 7).unwrap(), put);

        let tombstone = Record {
            kind: RecordKind::Delete,
            key: b"k",
            create_revision: 0,
            version: 0,
            prev_revision: 7,
            value: b"",
        };
        assert_eq!(Record::decode(&tombstone.encode(), 9).unwrap(), tombstone);
    }

    #[test]
    fn no_record_starts_like_a_stub_of_a_record_in_pieces() {
        // The sled backend tells a stub from a whole record by its first byte.
        assert_ne!(TAG_PUT, crate::backend::STUB_TAG);
        assert_ne!(TAG_DELETE, crate::backend::STUB_TAG);
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

    #[test]
    fn malformed_records_are_corrupt_not_panics() {
        let good = Record {
            kind: RecordKind::Put,
            key: b"key",
            create_revision: 1,
            version: 1,
            prev_revision: 0,
            value: b"value",
        }
        .encode();
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
