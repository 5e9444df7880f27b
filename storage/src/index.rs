//! The in-memory key index: for every key, the revisions at which it changed (etcd's
//! `key_index.go`). It lets a read at any retained revision find the right record without
//! scanning history, and a write check existence and guards without touching the backend.
//! A durable store checkpoints it (`checkpoint.rs`) so that open reads the checkpoint and only
//! the history written after it; without one, `store.rs` rebuilds it from the whole log.
//!
//! Worked example (reused by the tests below). Writes: rev 1 put `a`; rev 2 put `b`; rev 3 put
//! `a`; rev 4 delete `a`; rev 5 put `a`. Entries:
//!
//! ```text
//! a: [1 put c1 v1] [3 put c1 v2] [4 tombstone] [5 put c5 v1]
//! b: [2 put c2 v1]
//! ```
//!
//! At revision 3, `a` is the record at 3 (version 2); at 4 it is absent; at 5 it is the record
//! at 5 (a new generation: created at 5, version 1). Compacting at 4 drops `a`'s entries 1, 3
//! and 4 (nothing at or below 4 is live for `a`), keeps `b`'s 2 (live at 4), and leaves
//! `a: [5]`. Compacting at 5 then changes nothing.

use std::collections::BTreeMap;
use std::ops::Bound;

use bytes::Bytes;

use crate::Revision;

/// One change of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The change's revision: where its record lives in the history log.
    pub(crate) mod_revision: Revision,
    /// Creation revision of the generation; 0 marks a tombstone.
    pub(crate) create_revision: Revision,
    /// Version within the generation; 0 for a tombstone.
    pub(crate) version: u64,
    /// Length of the change's encoded history record: what dropping it frees (`budget.rs`).
    pub(crate) size: u64,
}

impl Entry {
    /// A delete of the key at `revision`, whose record is `size` bytes long.
    pub(crate) fn tombstone(revision: Revision, size: u64) -> Self {
        Entry {
            mod_revision: revision,
            create_revision: 0,
            version: 0,
            size,
        }
    }

    /// True if the key has a value after this change.
    pub(crate) fn is_live(&self) -> bool {
        self.create_revision != 0
    }
}

/// The index. Invariant: each key's entries are non-empty and ascending by `mod_revision`.
#[derive(Debug, Default)]
pub(crate) struct Index {
    keys: BTreeMap<Bytes, Vec<Entry>>,
}

/// A page of a range read: `(key, entry)` pairs of live keys, and how many more matched.
pub(crate) struct RangePage {
    pub(crate) entries: Vec<(Bytes, Entry)>,
    pub(crate) remaining: u64,
}

impl Index {
    /// Number of keys with at least one retained entry (live or not).
    pub(crate) fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// Records a change. Returns false (and changes nothing) if `entry` is not newer than the
    /// key's last entry, which would break the ordering invariant.
    pub(crate) fn push(&mut self, key: &[u8], entry: Entry) -> bool {
        match self.keys.get_mut(key) {
            Some(entries) => {
                if entries
                    .last()
                    .is_some_and(|last| last.mod_revision >= entry.mod_revision)
                {
                    return false;
                }
                entries.push(entry);
            }
            None => {
                self.keys.insert(Bytes::copy_from_slice(key), vec![entry]);
            }
        }
        true
    }

    /// An index of `keys` with their entries (a checkpoint's), built in one pass. `None` if
    /// the keys are not strictly ascending or a key's entries are empty or not strictly
    /// ascending.
    pub(crate) fn from_sorted(keys: Vec<(Bytes, Vec<Entry>)>) -> Option<Self> {
        let keys_ascend = keys.windows(2).all(|pair| pair[0].0 < pair[1].0);
        let entries_ascend = keys.iter().all(|(_, entries)| {
            !entries.is_empty()
                && entries
                    .windows(2)
                    .all(|pair| pair[0].mod_revision < pair[1].mod_revision)
        });
        // From sorted input the map is built without a search per key.
        (keys_ascend && entries_ascend).then(|| Index {
            keys: keys.into_iter().collect(),
        })
    }

    /// The key's live entry at the latest revision.
    pub(crate) fn latest(&self, key: &[u8]) -> Option<Entry> {
        self.keys
            .get(key)
            .and_then(|entries| entries.last())
            .filter(|entry| entry.is_live())
            .copied()
    }

    /// The key's live entry at `revision`.
    pub(crate) fn at(&self, key: &[u8], revision: Revision) -> Option<Entry> {
        self.keys
            .get(key)
            .and_then(|entries| live_at(entries, revision))
    }

    /// The shared key of a stored key: lets callers build `Bytes` without copying.
    pub(crate) fn shared_key(&self, key: &[u8]) -> Option<Bytes> {
        self.keys.get_key_value(key).map(|(key, _)| key.clone())
    }

    /// Live keys under `prefix` (after `start_after`) at `revision`, at most `limit` of them,
    /// with the number of further matches.
    pub(crate) fn range(
        &self,
        prefix: &[u8],
        start_after: Option<&[u8]>,
        revision: Revision,
        limit: Option<usize>,
    ) -> RangePage {
        let lower = match start_after {
            Some(after) if after >= prefix => Bound::Excluded(after),
            _ => Bound::Included(prefix),
        };
        let limit = limit.unwrap_or(usize::MAX);
        let mut page = RangePage {
            entries: Vec::new(),
            remaining: 0,
        };
        let candidates = self
            .keys
            .range::<[u8], _>((lower, Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix));
        for (key, entries) in candidates {
            if let Some(entry) = live_at(entries, revision) {
                if page.entries.len() < limit {
                    page.entries.push((key.clone(), entry));
                } else {
                    page.remaining += 1;
                }
            }
        }
        page
    }

    /// Calls `visit` with the keys from `cursor` (inclusive) on and their entries, at most
    /// `max_keys` of them. Returns where to continue, or `None` when done. (The checkpoint
    /// writes the index in such chunks, releasing the lock between them.)
    pub(crate) fn visit_chunk(
        &self,
        cursor: Option<&Bytes>,
        max_keys: usize,
        mut visit: impl FnMut(&Bytes, &[Entry]),
    ) -> Option<Bytes> {
        let lower = cursor.map_or(Bound::Unbounded, |key| Bound::Included(key.as_ref()));
        for (seen, (key, entries)) in self
            .keys
            .range::<[u8], _>((lower, Bound::Unbounded))
            .enumerate()
        {
            if seen == max_keys {
                return Some(key.clone());
            }
            visit(key, entries);
        }
        None
    }

    /// The history the index holds: for every entry that is not a key's live latest one, the
    /// revision from which compaction may drop it and its record's size, in no order. A
    /// superseded value may go once the change that replaced it is at or below the compaction
    /// point; a tombstone once it is itself (see `compact_chunk`).
    pub(crate) fn history(&self) -> Vec<(Revision, u64)> {
        let mut history = Vec::new();
        for entries in self.keys.values() {
            for (i, entry) in entries.iter().enumerate() {
                if !entry.is_live() {
                    history.push((entry.mod_revision, entry.size));
                } else if let Some(next) = entries.get(i + 1) {
                    history.push((next.mod_revision, entry.size));
                }
            }
        }
        history
    }

    /// Compacts at `revision` the keys from `cursor` (inclusive) on, at most `max_keys` of
    /// them: drops every entry that no read at `revision` or later can reach, appending their
    /// revisions to `removed`. Returns where to continue, or `None` when done.
    ///
    /// A key keeps its entries above `revision` and its latest entry at or below `revision` if
    /// that one is live (it is the key's state at `revision`, and the previous value of the
    /// key's next change). A key left with no entries is removed (and appended to `emptied`).
    pub(crate) fn compact_chunk(
        &mut self,
        cursor: Option<&Bytes>,
        max_keys: usize,
        revision: Revision,
        removed: &mut Vec<Revision>,
        emptied: &mut Vec<Bytes>,
    ) -> Option<Bytes> {
        let lower = cursor.map_or(Bound::Unbounded, |key| Bound::Included(key.as_ref()));
        let first_emptied = emptied.len();
        let mut next = None;
        for (seen, (key, entries)) in self
            .keys
            .range_mut::<[u8], _>((lower, Bound::Unbounded))
            .enumerate()
        {
            if seen == max_keys {
                next = Some(key.clone());
                break;
            }
            // Entries at or below `revision`: keep only the last, and only if live.
            let at_or_below = entries.partition_point(|e| e.mod_revision <= revision);
            let keep_last = at_or_below > 0 && entries[at_or_below - 1].is_live();
            let drop = if keep_last {
                at_or_below - 1
            } else {
                at_or_below
            };
            if drop > 0 {
                removed.extend(entries.drain(..drop).map(|e| e.mod_revision));
            }
            if entries.is_empty() {
                emptied.push(key.clone());
            }
        }
        for key in &emptied[first_emptied..] {
            self.keys.remove(key);
        }
        next
    }
}

/// The live entry at `revision` among a key's ascending entries.
fn live_at(entries: &[Entry], revision: Revision) -> Option<Entry> {
    let at_or_below = entries.partition_point(|e| e.mod_revision <= revision);
    at_or_below
        .checked_sub(1)
        .map(|i| entries[i])
        .filter(Entry::is_live)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(revision: Revision, create: Revision, version: u64) -> Entry {
        Entry {
            mod_revision: revision,
            create_revision: create,
            version,
            size: 10 * revision,
        }
    }

    /// The worked example of the module doc.
    fn example() -> Index {
        let mut index = Index::default();
        assert!(index.push(b"a", put(1, 1, 1)));
        assert!(index.push(b"b", put(2, 2, 1)));
        assert!(index.push(b"a", put(3, 1, 2)));
        assert!(index.push(b"a", Entry::tombstone(4, 40)));
        assert!(index.push(b"a", put(5, 5, 1)));
        index
    }

    #[test]
    fn reads_at_each_revision_follow_the_worked_example() {
        let index = example();
        assert_eq!(index.at(b"a", 0), None);
        assert_eq!(index.at(b"a", 1), Some(put(1, 1, 1)));
        assert_eq!(index.at(b"a", 2), Some(put(1, 1, 1)));
        assert_eq!(index.at(b"a", 3), Some(put(3, 1, 2)));
        assert_eq!(index.at(b"a", 4), None);
        assert_eq!(index.at(b"a", 5), Some(put(5, 5, 1)));
        assert_eq!(index.latest(b"a"), Some(put(5, 5, 1)));
        assert_eq!(index.at(b"b", 1), None);
        assert_eq!(index.latest(b"missing"), None);
    }

    #[test]
    fn push_refuses_an_older_entry() {
        let mut index = example();
        assert!(!index.push(b"a", put(5, 5, 2)));
        assert!(!index.push(b"a", put(2, 1, 2)));
        assert_eq!(index.latest(b"a"), Some(put(5, 5, 1)));
    }

    #[test]
    fn range_counts_what_the_limit_leaves_out() {
        let index = example();
        let page = index.range(b"", None, 5, Some(1));
        assert_eq!(page.entries, vec![(Bytes::from_static(b"a"), put(5, 5, 1))]);
        assert_eq!(page.remaining, 1);
        let page = index.range(b"", Some(b"a"), 5, Some(1));
        assert_eq!(page.entries, vec![(Bytes::from_static(b"b"), put(2, 2, 1))]);
        assert_eq!(page.remaining, 0);
        // `a` is deleted at 4.
        let page = index.range(b"", None, 4, None);
        assert_eq!(page.entries.len(), 1);
        // A prefix excludes, and a start_after before the prefix is ignored.
        let page = index.range(b"b", Some(b"0"), 5, None);
        assert_eq!(page.entries.len(), 1);
        assert_eq!(index.range(b"c", None, 5, None).entries, vec![]);
    }

    #[test]
    fn compaction_follows_the_worked_example() {
        let mut index = example();
        let mut removed = Vec::new();
        assert_eq!(
            index.compact_chunk(None, usize::MAX, 4, &mut removed, &mut Vec::new()),
            None
        );
        removed.sort_unstable();
        assert_eq!(removed, vec![1, 3, 4]);
        assert_eq!(index.at(b"a", 5), Some(put(5, 5, 1)));
        assert_eq!(index.at(b"b", 4), Some(put(2, 2, 1)));
        assert_eq!(index.key_count(), 2);

        removed.clear();
        index.compact_chunk(None, usize::MAX, 5, &mut removed, &mut Vec::new());
        assert!(removed.is_empty());
    }

    #[test]
    fn history_pairs_each_dropped_record_with_the_revision_that_frees_it() {
        let mut index = example();
        let mut history = index.history();
        history.sort_unstable();
        // a@1 is replaced at 3, a@3 at 4 (the delete), the tombstone frees itself at 4; a@5
        // and b@2 are live.
        assert_eq!(history, vec![(3, 10), (4, 30), (4, 40)]);
        // Exactly what compaction at 4 drops.
        let mut removed = Vec::new();
        index.compact_chunk(None, usize::MAX, 4, &mut removed, &mut Vec::new());
        assert_eq!(removed.len(), history.len());
        assert!(index.history().is_empty());
    }

    #[test]
    fn visiting_in_chunks_sees_every_key_once() {
        let index = example();
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            cursor = index.visit_chunk(cursor.as_ref(), 1, |key, entries| {
                seen.push((key.clone(), entries.len()));
            });
            if cursor.is_none() {
                break;
            }
        }
        assert_eq!(
            seen,
            vec![(Bytes::from_static(b"a"), 4), (Bytes::from_static(b"b"), 1)]
        );
    }

    #[test]
    fn compaction_in_chunks_equals_compaction_at_once() {
        let mut whole = example();
        let mut chunked = example();
        let mut removed_whole = Vec::new();
        whole.compact_chunk(None, usize::MAX, 3, &mut removed_whole, &mut Vec::new());
        let mut removed_chunked = Vec::new();
        let mut cursor = None;
        loop {
            cursor =
                chunked.compact_chunk(cursor.as_ref(), 1, 3, &mut removed_chunked, &mut Vec::new());
            if cursor.is_none() {
                break;
            }
        }
        assert_eq!(removed_whole, removed_chunked);
        assert_eq!(removed_whole, vec![1]);
        assert_eq!(whole.keys, chunked.keys);
    }

    #[test]
    fn a_key_deleted_before_the_compaction_point_disappears() {
        let mut index = Index::default();
        index.push(b"x", put(1, 1, 1));
        index.push(b"x", Entry::tombstone(2, 20));
        let mut removed = Vec::new();
        index.compact_chunk(None, usize::MAX, 2, &mut removed, &mut Vec::new());
        assert_eq!(removed, vec![1, 2]);
        assert_eq!(index.key_count(), 0);
    }
}
