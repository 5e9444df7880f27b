//! The in-memory key index: for every key, the revisions at which it changed (etcd's
//! `key_index.go`). It lets a read at any retained revision find the right record without
//! scanning history, and a write check existence and guards without touching the backend.
//! A durable store checkpoints it (`checkpoint.rs`) so that open reads the checkpoint and only
//! the history written after it; without one, `store.rs` rebuilds it from the whole log.
//! Beside the map it keeps the keys live at its latest revision in a counted set
//! (`ranked.rs`) and its last creates and deletes, so that a paginated range counts the matches
//! after its page without walking them (`docs/store.md`, "How `remaining` is counted").
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

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

use bytes::Bytes;

use crate::Revision;
use crate::ranked::RankedSet;

/// How many recent creates and deletes the index remembers, to count a range at an older
/// revision from the count at the latest one (`Index::count_live`). A read older than that
/// many of them counts by walking the range instead.
const RECENT_FLIPS: usize = 10_000;

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

/// The index. Invariants: each key's entries are non-empty and ascending by `mod_revision`;
/// `live` holds exactly the keys whose last entry is live; `recent` holds every create and
/// delete above its floor.
#[derive(Debug, Default)]
pub(crate) struct Index {
    keys: BTreeMap<Bytes, Vec<Entry>>,
    /// The keys live at the index's latest revision, counted (`ranked.rs`): a range's count
    /// at the latest revision is a difference of two ranks.
    live: RankedSet,
    /// The last creates and deletes, to correct that count for a read at an older revision.
    recent: RecentFlips,
}

/// The last [`RECENT_FLIPS`] changes of the index that made a key live or not live (creates
/// and deletes; an update changes no count), oldest first.
///
/// A range's count at revision `R` is its count now plus, for each flip after `R` inside the
/// range, +1 for a delete (the key was live before it) and −1 for a create. For one key the
/// terms telescope: its first change after `R` starts from its state at `R` and its last
/// ends at its state now, so the sum is (live at `R`) − (live now), whatever happened between.
#[derive(Debug, Default)]
struct RecentFlips {
    /// `(revision, key, true for a create)`, ascending by revision.
    flips: VecDeque<(Revision, Bytes, bool)>,
    /// Every flip above this revision is in `flips`.
    floor: Revision,
}

impl RecentFlips {
    fn push(&mut self, revision: Revision, key: Bytes, created: bool) {
        if let Some(&(last, _, _)) = self.flips.back() {
            if last >= revision {
                // Out of order (the store never does this): forget what came before, so that a
                // read below this point counts by walking.
                self.floor = self.floor.max(last);
                self.flips.clear();
            }
        }
        if self.flips.len() == RECENT_FLIPS {
            if let Some((oldest, _, _)) = self.flips.pop_front() {
                self.floor = self.floor.max(oldest);
            }
        }
        self.flips.push_back((revision, key, created));
    }

    /// The flips after `revision`, newest first, or `None` if some of them are no longer
    /// remembered.
    fn since(&self, revision: Revision) -> Option<impl Iterator<Item = (&Bytes, bool)>> {
        (revision >= self.floor).then(|| {
            self.flips
                .iter()
                .rev()
                .take_while(move |(flipped, _, _)| *flipped > revision)
                .map(|(_, key, created)| (key, *created))
        })
    }
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
        let found = self
            .keys
            .range_mut::<[u8], _>((Bound::Included(key), Bound::Included(key)))
            .next();
        let (shared, was_live) = match found {
            Some((shared, entries)) => {
                let last = entries.last().copied();
                if last.is_some_and(|last| last.mod_revision >= entry.mod_revision) {
                    return false;
                }
                entries.push(entry);
                (shared.clone(), last.is_some_and(|last| last.is_live()))
            }
            None => {
                let shared = Bytes::copy_from_slice(key);
                self.keys.insert(shared.clone(), vec![entry]);
                (shared, false)
            }
        };
        if was_live != entry.is_live() {
            if was_live {
                self.live.remove(key);
            } else {
                self.live.insert(shared.clone());
            }
            self.recent.push(entry.mod_revision, shared, !was_live);
        }
        true
    }

    /// An index of `keys` with their entries (a checkpoint's at revision `at`), built in one
    /// pass. `None` if the keys are not strictly ascending. Each key's entries must be
    /// non-empty and strictly ascending: the caller checks that (the checkpoint's decoder, as
    /// it reads them), and it is only asserted here in debug builds.
    pub(crate) fn from_sorted(keys: Vec<(Bytes, Vec<Entry>)>, at: Revision) -> Option<Self> {
        debug_assert!(keys.iter().all(|(_, entries)| {
            !entries.is_empty()
                && entries
                    .windows(2)
                    .all(|pair| pair[0].mod_revision < pair[1].mod_revision)
        }));
        if !keys.windows(2).all(|pair| pair[0].0 < pair[1].0) {
            return None;
        }
        let live = RankedSet::from_sorted(
            keys.iter()
                .filter(|(_, entries)| entries.last().is_some_and(Entry::is_live))
                .map(|(key, _)| key.clone()),
        )?;
        // From sorted input the map is built without a search per key.
        Some(Index {
            keys: keys.into_iter().collect(),
            live,
            // The changes up to the checkpoint are not known one by one.
            recent: RecentFlips {
                flips: VecDeque::new(),
                floor: at,
            },
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
    /// with the number of further matches. The page is a walk; the count is not
    /// (`count_live`).
    pub(crate) fn range(
        &self,
        prefix: &[u8],
        start_after: Option<&[u8]>,
        revision: Revision,
        limit: Option<usize>,
    ) -> RangePage {
        let lower = lower_bound(prefix, start_after);
        let limit = limit.unwrap_or(usize::MAX);
        let mut entries = Vec::new();
        if limit > 0 {
            for (key, key_entries) in self.candidates(prefix, lower) {
                if let Some(entry) = live_at(key_entries, revision) {
                    entries.push((key.clone(), entry));
                    if entries.len() == limit {
                        break;
                    }
                }
            }
        }
        let remaining = if entries.len() < limit {
            // The walk reached the end of the range.
            0
        } else {
            let after = entries
                .last()
                .map_or(lower, |(key, _)| Bound::Excluded(key.as_ref()));
            self.count_live(prefix, after, revision)
        };
        RangePage { entries, remaining }
    }

    /// The same page as [`Index::range`], with the count of further matches by walking the
    /// rest of the range (what `range` did before it counted from `live`): the tests' reference
    /// and the benchmark's "before".
    pub(crate) fn range_by_walk(
        &self,
        prefix: &[u8],
        start_after: Option<&[u8]>,
        revision: Revision,
        limit: Option<usize>,
    ) -> RangePage {
        let limit = limit.unwrap_or(usize::MAX);
        let mut page = RangePage {
            entries: Vec::new(),
            remaining: 0,
        };
        for (key, entries) in self.candidates(prefix, lower_bound(prefix, start_after)) {
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

    /// The keys from `lower` on that start with `prefix`, with their entries.
    fn candidates<'a>(
        &'a self,
        prefix: &'a [u8],
        lower: Bound<&'a [u8]>,
    ) -> impl Iterator<Item = (&'a Bytes, &'a Vec<Entry>)> + 'a {
        self.keys
            .range::<[u8], _>((lower, Bound::Unbounded))
            .take_while(move |(key, _)| key.starts_with(prefix))
    }

    /// How many keys under `prefix`, from `lower` on, are live at `revision`.
    ///
    /// At the latest revision this is the number of `live` keys between `lower` and the end of
    /// the prefix: two ranks. At an older revision the creates and deletes since then correct
    /// it (`RecentFlips`). Older than the remembered ones (`RECENT_FLIPS`), it walks the range.
    fn count_live(&self, prefix: &[u8], lower: Bound<&[u8]>, revision: Revision) -> u64 {
        let Some(flips) = self.recent.since(revision) else {
            return self.count_by_walk(prefix, lower, revision);
        };
        let end = prefix_end(prefix);
        let upper = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let mut count = self.live.count(lower, upper) as i64;
        for (key, created) in flips {
            if key.starts_with(prefix) && above(key, lower) {
                count += if created { -1 } else { 1 };
            }
        }
        // Never negative while the invariants hold; if they did not, the walk is right.
        u64::try_from(count).unwrap_or_else(|_| self.count_by_walk(prefix, lower, revision))
    }

    fn count_by_walk(&self, prefix: &[u8], lower: Bound<&[u8]>, revision: Revision) -> u64 {
        self.candidates(prefix, lower)
            .filter(|(_, entries)| live_at(entries, revision).is_some())
            .count() as u64
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
    /// revision from which compaction may drop it and its record's size, in no order (see
    /// [`history_of`]).
    #[cfg(test)]
    pub(crate) fn history(&self) -> Vec<(Revision, u64)> {
        let mut history = Vec::new();
        for entries in self.keys.values() {
            history_of(entries, &mut history);
        }
        history
    }

    /// Every key with its entries, in key order. Holds the caller's lock for the whole walk:
    /// for open, before anyone else can write; elsewhere `visit_chunk`.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Bytes, &[Entry])> {
        self.keys
            .iter()
            .map(|(key, entries)| (key, entries.as_slice()))
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
            // A key compaction empties was deleted (its last entry was a tombstone), so it is
            // not in `live`; removing it anyway keeps `live` a subset of `keys` whatever
            // happened.
            self.live.remove(key);
        }
        next
    }
}

/// Where a range starts: after `start_after` if that is inside or past the prefix, else at
/// the prefix.
fn lower_bound<'a>(prefix: &'a [u8], start_after: Option<&'a [u8]>) -> Bound<&'a [u8]> {
    match start_after {
        Some(after) if after >= prefix => Bound::Excluded(after),
        _ => Bound::Included(prefix),
    }
}

/// True if `key` is within `lower`.
fn above(key: &[u8], lower: Bound<&[u8]>) -> bool {
    match lower {
        Bound::Included(bound) => key >= bound,
        Bound::Excluded(bound) => key > bound,
        Bound::Unbounded => true,
    }
}

/// The first key above every key that starts with `prefix` (etcd's range end of a prefix),
/// or `None` if there is none (an empty prefix, or one of only 0xff bytes).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|byte| *byte != 0xff)?;
    let mut end = prefix[..=last].to_vec();
    end[last] += 1;
    Some(end)
}

/// The live entry at `revision` among a key's ascending entries.
fn live_at(entries: &[Entry], revision: Revision) -> Option<Entry> {
    let at_or_below = entries.partition_point(|e| e.mod_revision <= revision);
    at_or_below
        .checked_sub(1)
        .map(|i| entries[i])
        .filter(Entry::is_live)
}

/// Appends one key's history to `history`: for every entry that is not the key's live latest
/// one, the revision from which compaction may drop it and its record's size. A superseded
/// value may go once the change that replaced it is at or below the compaction point; a
/// tombstone once it is itself (see `Index::compact_chunk`).
pub(crate) fn history_of(entries: &[Entry], history: &mut Vec<(Revision, u64)>) {
    for (i, entry) in entries.iter().enumerate() {
        if !entry.is_live() {
            history.push((entry.mod_revision, entry.size));
        } else if let Some(next) = entries.get(i + 1) {
            history.push((next.mod_revision, entry.size));
        }
    }
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
    /// Every `(prefix, start_after, limit)` of interest at `revision`: `range` must give the
    /// walk's page and count.
    fn assert_counts_equal_the_walk(index: &Index, revision: Revision, rng: &mut fastrand::Rng) {
        let prefixes: [&[u8]; 5] = [b"", b"/a/", b"/a/1", b"/b/", b"/c/"];
        for _ in 0..6 {
            let prefix = prefixes[rng.usize(..prefixes.len())];
            let after = match rng.u8(..3) {
                0 => None,
                _ => Some(format!(
                    "/{}/{}",
                    ["a", "b", "c"][rng.usize(..3)],
                    rng.u8(..40)
                )),
            };
            let limit = match rng.u8(..4) {
                0 => None,
                _ => Some(rng.usize(0..12)),
            };
            let after = after.as_deref().map(str::as_bytes);
            let got = index.range(prefix, after, revision, limit);
            let want = index.range_by_walk(prefix, after, revision, limit);
            assert_eq!(got.entries, want.entries, "at {revision}");
            assert_eq!(
                got.remaining, want.remaining,
                "remaining at {revision}, prefix {prefix:?}, after {after:?}, limit {limit:?}"
            );
        }
    }

    /// Random puts, deletes, compactions and reloads (as from a checkpoint): at every retained
    /// revision, `range` counts what the walk counts.
    #[test]
    fn remaining_equals_the_walk_at_every_retained_revision() {
        let seed = std::env::var("KUBEMOCK_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| fastrand::u64(..));
        eprintln!("seed {seed} (replay with KUBEMOCK_TEST_SEED={seed})");
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut index = Index::default();
        let mut revision: Revision = 0;
        let mut compacted: Revision = 0;
        let mut versions: BTreeMap<Vec<u8>, (Revision, u64)> = BTreeMap::new();
        for step in 0..1_500 {
            let key = format!("/{}/{}", ["a", "b", "c"][rng.usize(..3)], rng.u8(..40));
            revision += 1;
            let entry = match versions.get(key.as_bytes()).copied() {
                Some(_) if rng.u8(..3) == 0 => {
                    versions.remove(key.as_bytes());
                    Entry::tombstone(revision, 5)
                }
                Some((create, version)) => {
                    versions.insert(key.clone().into_bytes(), (create, version + 1));
                    put(revision, create, version + 1)
                }
                None => {
                    versions.insert(key.clone().into_bytes(), (revision, 1));
                    put(revision, revision, 1)
                }
            };
            assert!(index.push(key.as_bytes(), entry));
            if step % 97 == 96 {
                compacted = rng.u64(compacted..=revision);
                index.compact_chunk(
                    None,
                    usize::MAX,
                    compacted,
                    &mut Vec::new(),
                    &mut Vec::new(),
                );
            }
            if step % 331 == 330 {
                // As a checkpoint load does: the keys and entries, sorted, at `revision`.
                let mut keys = Vec::new();
                index.visit_chunk(None, usize::MAX, |key, entries| {
                    keys.push((key.clone(), entries.to_vec()));
                });
                index = Index::from_sorted(keys, revision).unwrap_or_default();
            }
            if step % 50 == 49 {
                for at in compacted.max(1)..=revision {
                    assert_counts_equal_the_walk(&index, at, &mut rng);
                }
            }
        }
        assert_eq!(index.live.len(), versions.len());
    }

    /// A read older than the remembered changes counts by walking, and still exactly.
    #[test]
    fn a_read_older_than_the_recent_changes_counts_by_walking() {
        let mut index = Index::default();
        for n in 0..100u64 {
            index.push(format!("/a/{n:03}").as_bytes(), put(n + 1, n + 1, 1));
        }
        // Deletes and re-creates, more than `RECENT_FLIPS` of them.
        let mut revision = 100;
        for round in 0..(RECENT_FLIPS as u64 / 100 + 1) {
            for n in 0..100u64 {
                revision += 1;
                let key = format!("/a/{n:03}");
                let entry = if round % 2 == 0 {
                    Entry::tombstone(revision, 5)
                } else {
                    put(revision, revision, 1)
                };
                index.push(key.as_bytes(), entry);
            }
        }
        assert!(index.recent.since(100).is_none());
        let page = index.range(b"/a/", None, 100, Some(10));
        assert_eq!(page.entries.len(), 10);
        assert_eq!(page.remaining, 90);
        // And at the latest revision, from the live set.
        assert!(index.recent.since(revision).is_some());
        let latest = index.range_by_walk(b"/a/", None, revision, Some(10));
        let page = index.range(b"/a/", None, revision, Some(10));
        assert_eq!(page.remaining, latest.remaining);
    }

    #[test]
    fn prefix_end_is_the_first_key_past_the_prefix() {
        assert_eq!(prefix_end(b"/registry/"), Some(b"/registry0".to_vec()));
        assert_eq!(prefix_end(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }

    /// The live set's memory per key, at the size of issue 23 (355,000 keys, built one push
    /// at a time and from a checkpoint). It shares the keys' buffers, so it should cost about
    /// one `Bytes` (32 bytes) per key, times its blocks' spare room.
    #[test]
    fn the_live_set_costs_tens_of_bytes_per_key() {
        const KEYS: u64 = 355_000;
        let mut index = Index::default();
        for n in 0..KEYS {
            // Scattered keys, so that blocks split as they do under creates in random order.
            let k = (n * 7_919) % KEYS;
            index.push(
                format!("/registry/configmaps/ns/cm-{k:06}").as_bytes(),
                put(n + 1, n + 1, 1),
            );
        }
        let pushed = index.live.heap_bytes() as f64 / KEYS as f64;
        let mut keys = Vec::new();
        index.visit_chunk(None, usize::MAX, |key, entries| {
            keys.push((key.clone(), entries.to_vec()));
        });
        let loaded = Index::from_sorted(keys, KEYS).unwrap_or_default();
        let from_checkpoint = loaded.live.heap_bytes() as f64 / KEYS as f64;
        eprintln!(
            "live set: {pushed:.1} bytes/key built by pushes, {from_checkpoint:.1} from a checkpoint"
        );
        assert_eq!(loaded.live.len(), KEYS as usize);
        assert!(pushed < 80.0 && from_checkpoint < 80.0);
    }
}
