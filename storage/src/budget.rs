//! The history byte budget: how many bytes of history (superseded values and tombstones) the
//! store holds, and down to which revision compaction must go to hold no more than a budget.
//!
//! Why it exists: retention by count and age alone does not bound memory or disk. Ten thousand
//! superseded revisions of a 1 MiB object are 10 GiB (finding 7 of the reliability review: a
//! 900 KiB ConfigMap updated 1,000 times held about 1 GiB). So the budget overrides the retention
//! floors: once history outgrows it, the compactor drops the oldest history however young it
//! is, and a read or watch below the new compaction point gets [`crate::Error::Compacted`] (a
//! 410 at the API), as upstream's etcd does once its own quota forces a compaction.
//!
//! Which bytes compaction frees is known when they are written: a value becomes history when a
//! later change of its key replaces it, a tombstone when it is written, and compaction at `C`
//! drops exactly the history that became history at a revision at or below `C` (`index.rs`,
//! `compact_chunk`). So the ledger is a queue of `(revision, bytes)` in revision order: bytes
//! that compaction at that revision or later frees. Entries are merged into buckets of about
//! [`BUCKETS`]th of the budget, so the queue stays short whatever the write rate; a bucket is
//! freed only by a compaction at or past its last revision, so the count errs on the high side
//! by less than one bucket, never low.
//!
//! Worked example (buckets of one byte, so no two entries merge): the writer reports `(3, 40)`,
//! `(5, 30)`, `(9, 50)`: 120 bytes. To hold at most 100 the oldest 40 must go: the target is
//! revision 3, and compacting at 3 leaves `(5, 30)`, `(9, 50)`. To hold at most 79, revision 5.

use std::collections::VecDeque;

use crate::Revision;

/// Buckets the budget is divided into: the ledger's granularity, and so how far above the
/// truth its count may be (a 64th of the budget: 4 MiB of the default 256 MiB).
pub(crate) const BUCKETS: u64 = 64;

/// History bytes by the revision from which compaction frees them.
#[derive(Debug)]
pub(crate) struct Ledger {
    /// What open found, unsorted: sorted into buckets only when a target is first needed, by
    /// the compactor, so that open does not sort the whole history (about 3 ms a 100,000
    /// revisions). Every revision in it is below every bucket's.
    backlog: Vec<(Revision, u64)>,
    /// `(last revision, bytes)` per bucket, oldest first; revisions strictly increase.
    buckets: VecDeque<(Revision, u64)>,
    /// Sum of the backlog's and the buckets' bytes.
    total: u64,
    /// A bucket takes more entries until it holds this many bytes.
    bucket_bytes: u64,
}

impl Ledger {
    /// An empty ledger for `budget` bytes.
    pub(crate) fn new(budget: u64) -> Self {
        Ledger {
            backlog: Vec::new(),
            buckets: VecDeque::new(),
            total: 0,
            bucket_bytes: (budget / BUCKETS).max(1),
        }
    }

    /// A ledger of `history` (pairs in any order), as `Index::history` returns it; revisions
    /// added later must be above all of them.
    pub(crate) fn from_history(budget: u64, history: Vec<(Revision, u64)>) -> Self {
        let mut ledger = Ledger::new(budget);
        ledger.total = history
            .iter()
            .fold(0u64, |total, (_, bytes)| total.saturating_add(*bytes));
        ledger.backlog = history;
        ledger
    }

    /// Sorts the backlog into buckets in front of the others.
    fn settle(&mut self) {
        if self.backlog.is_empty() {
            return;
        }
        let mut backlog = std::mem::take(&mut self.backlog);
        backlog.sort_unstable();
        let later = std::mem::take(&mut self.buckets);
        let total = self.total;
        for (revision, bytes) in backlog {
            self.add(revision, bytes);
        }
        self.buckets.extend(later);
        self.total = total;
    }

    /// History bytes held (rounded up to whole buckets already compacted into).
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Records `bytes` that compaction at `revision` or later frees. `revision` is at least
    /// every revision recorded before (the writer's order).
    pub(crate) fn add(&mut self, revision: Revision, bytes: u64) {
        if bytes == 0 {
            return;
        }
        self.total = self.total.saturating_add(bytes);
        match self.buckets.back_mut() {
            Some((last, held)) if *held < self.bucket_bytes && *last <= revision => {
                *last = revision;
                *held = held.saturating_add(bytes);
            }
            _ => self.buckets.push_back((revision, bytes)),
        }
    }

    /// The least revision to compact at so that at most `limit` bytes remain, or `None` if at
    /// most `limit` are held already.
    pub(crate) fn target(&mut self, limit: u64) -> Option<Revision> {
        if self.total <= limit {
            return None;
        }
        self.settle();
        let mut remaining = self.total;
        for (revision, bytes) in &self.buckets {
            remaining -= bytes;
            if remaining <= limit {
                return Some(*revision);
            }
        }
        // Unreachable: the buckets sum to `total`, so `remaining` reaches 0.
        self.buckets.back().map(|(revision, _)| *revision)
    }

    /// Forgets what compaction at `revision` freed.
    pub(crate) fn compacted(&mut self, revision: Revision) {
        self.settle();
        while let Some((last, bytes)) = self.buckets.front().copied() {
            if last > revision {
                break;
            }
            self.total -= bytes;
            self.buckets.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worked_example() {
        let mut fine = Ledger::new(BUCKETS);
        for (revision, bytes) in [(3, 40), (5, 30), (9, 50)] {
            fine.add(revision, bytes);
        }
        assert_eq!(fine.total(), 120);
        assert_eq!(fine.target(100), Some(3));
        assert_eq!(fine.target(80), Some(3));
        assert_eq!(fine.target(79), Some(5));
        assert_eq!(fine.target(0), Some(9));
        assert_eq!(fine.target(120), None);
        fine.compacted(3);
        assert_eq!(fine.total(), 80);
        assert_eq!(fine.target(100), None);
    }

    #[test]
    fn a_bucket_is_freed_only_at_its_last_revision() {
        // Buckets of 100,000 bytes: the three entries share one.
        let mut ledger = Ledger::new(100_000 * BUCKETS);
        for (revision, bytes) in [(3, 40), (5, 30), (9, 50)] {
            ledger.add(revision, bytes);
        }
        assert_eq!(ledger.target(100), Some(9));
        ledger.compacted(5);
        assert_eq!(ledger.total(), 120);
        ledger.compacted(9);
        assert_eq!(ledger.total(), 0);
    }

    #[test]
    fn buckets_stay_few_under_many_small_additions() {
        let budget = 1 << 20;
        let mut ledger = Ledger::new(budget);
        for revision in 1..=100_000 {
            ledger.add(revision, 100);
        }
        assert_eq!(ledger.total(), 10_000_000);
        // 10 MB in buckets of at least 16 KiB: a few hundred, not 100,000.
        assert!(ledger.buckets.len() < 700, "{}", ledger.buckets.len());
        let target = ledger.target(budget).expect("over budget");
        ledger.compacted(target);
        assert!(ledger.total() <= budget);
        assert!(ledger.total() > budget - budget / BUCKETS - 100);
    }

    #[test]
    fn rebuilding_from_unordered_history_equals_adding_in_order() {
        let history = vec![(9, 5), (2, 7), (4, 1), (2, 3)];
        let mut rebuilt = Ledger::from_history(BUCKETS, history);
        assert_eq!(rebuilt.total(), 16);
        // Later additions are above the history open found.
        rebuilt.add(12, 4);
        let mut added = Ledger::new(BUCKETS);
        for (revision, bytes) in [(2, 3), (2, 7), (4, 1), (9, 5), (12, 4)] {
            added.add(revision, bytes);
        }
        assert_eq!(rebuilt.target(10), added.target(10));
        assert_eq!(rebuilt.buckets, added.buckets);
        rebuilt.compacted(4);
        assert_eq!(rebuilt.total(), 9);
    }
}
