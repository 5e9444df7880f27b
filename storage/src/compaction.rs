//! Compaction: history older than the retention window is dropped, so the log does not grow
//! forever, while every key's state at the compaction point stays readable.
//!
//! `compact(C)` persists C as the compaction point (flushed in durable mode, together with a
//! checkpoint of the index at or past C if the last one is older: `checkpoint.rs`), raises the
//! in-memory point, so reads and watches below C fail with [`Error::Compacted`] from then on,
//! and then removes, key by key, the records no read at C or later can reach (see `index.rs`
//! for which). Removal happens in chunks so that writers never wait long for the index lock.
//! A crash in the middle leaves superseded records, which the next open removes.
//!
//! The background compactor samples the published revision every interval and compacts to the
//! newest revision that is both older than `min_age` and more than `min_revisions` back (etcd's
//! revision-sampling periodic compactor). The history's bytes are budgeted (`budget.rs`): when
//! they outgrow the budget the writer wakes the compactor at once, which then compacts as far
//! as it takes to bring them down to [`BUDGET_LOW_WATER`] of the budget, whatever the retention
//! says; but not past the history an open watch has still to read, while the history is under
//! [`WATCH_HOLD_LIMIT`] budgets.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tracing::{debug, warn};

use crate::Revision;
use crate::error::{Error, Result};
use crate::store::{Retention, Shared};

/// Keys compacted per hold of the index lock.
const COMPACTION_CHUNK_KEYS: usize = 1024;
/// Revisions removed from the backend per batch.
const REMOVAL_BATCH: usize = 8192;
/// A compaction for the budget brings the history down to this fraction of it (7/8), so that
/// under a sustained load of replacements a pass runs once per eighth of the budget written,
/// not after every write.
const BUDGET_LOW_WATER: (u64, u64) = (7, 8);
/// How soon the compactor tries again when a pass for the budget could not go far enough
/// because the revisions it needed were not published yet (durable mode, a group commit away).
const BUDGET_RETRY: Duration = Duration::from_millis(5);
/// Up to this many budgets of history, a compaction for the budget stops short of the history
/// an open watch has still to read (`watch.rs`, `Positions`); past it the budget wins and a
/// watch that far behind fails with `Compacted`, as one past the retention window always does.
/// Without it, the 100,000-pod benchmark's pod watches, a few seconds behind at 8,000
/// revisions a second, lost their history to the 256 MiB budget and their informers listed all
/// 100,000 pods again: 1 GiB more at the peak, and tens of CPU seconds.
pub(crate) const WATCH_HOLD_LIMIT: u64 = 2;
/// How long the compactor leaves the budget alone after a pass an open watch held back: the
/// writes keep signalling the budget, and without a pause it would spin on them.
const WATCH_HOLD_RETRY: Duration = Duration::from_millis(50);

impl Shared {
    /// Compacts at `revision`; returns the compaction point afterwards. Blocking.
    pub(crate) fn compact(&self, revision: Revision) -> Result<Revision> {
        let _compaction = self.compaction.lock();
        let current = self.published.load(Ordering::Acquire);
        if revision > current {
            return Err(Error::FutureRevision {
                requested: revision,
                current,
            });
        }
        let compacted = self.compacted.load(Ordering::Acquire);
        if revision <= compacted {
            return Ok(compacted);
        }
        if self.durable && self.checkpointed.load(Ordering::Acquire) < revision {
            // The records this removes must be below the checkpoint open starts from, or it
            // would miss that they are gone (`checkpoint.rs`, rule 2).
            self.checkpoint_locked()?;
        }
        self.backend.set_compacted(revision)?;
        if self.durable {
            // The point (and that checkpoint) must be durable before any record below it is
            // removed; otherwise a crash could reopen with a point below history that no
            // longer exists.
            self.backend.flush()?;
        }
        self.compacted.store(revision, Ordering::Release);
        let removed = self.remove_history(revision)?;
        if self.durable && removed > 0 {
            // The checkpoint lists what was just removed. Rewrite it once the removals are as
            // many as the revisions that would make one due: before that, open re-removing
            // them costs no more than replaying the history after a checkpoint does.
            self.checkpoint_stale.store(true, Ordering::Release);
            if removed as u64 >= self.checkpoint_interval() && self.config.checkpoint_every > 0 {
                self.request_checkpoint();
            }
        }
        self.ledger.lock().compacted(revision);
        debug!(revision, removed, "compacted");
        Ok(revision)
    }

    /// Removes from the index and the backend every record superseded at `revision`. Returns
    /// how many records were removed.
    pub(crate) fn remove_history(&self, revision: Revision) -> Result<usize> {
        let mut cursor = None;
        let mut removed = Vec::new();
        let mut emptied = Vec::new();
        let mut total = 0;
        loop {
            cursor = self.state.write().index.compact_chunk(
                cursor.as_ref(),
                COMPACTION_CHUNK_KEYS,
                revision,
                &mut removed,
                &mut emptied,
            );
            for key in emptied.drain(..) {
                self.tips.forget(&key, revision);
            }
            if removed.len() >= REMOVAL_BATCH || (cursor.is_none() && !removed.is_empty()) {
                self.backend.remove(&removed)?;
                total += removed.len();
                removed.clear();
            }
            if cursor.is_none() {
                return Ok(total);
            }
        }
    }

    /// The background compactor's loop; returns when the store closes.
    pub(crate) fn run_compactor(&self, interval: Duration) {
        let retention = self.config.retention;
        let mut samples = VecDeque::new();
        let mut next_sample = Instant::now() + interval;
        let mut retry = false;
        // Set when an open watch held the last pass back: the budget's signal is ignored until
        // then, and then the budget is looked at again, signal or not.
        let mut held_until: Option<Instant> = None;
        loop {
            {
                let mut stop = self.stop.lock();
                loop {
                    if *stop {
                        return;
                    }
                    let now = Instant::now();
                    let held = held_until.filter(|until| now < *until);
                    if held_until.is_some() && held.is_none() {
                        break;
                    }
                    if (held.is_none() && self.budget_pressure.load(Ordering::Acquire))
                        || now >= next_sample
                    {
                        break;
                    }
                    let mut wake = next_sample;
                    if retry {
                        wake = wake.min(now + BUDGET_RETRY);
                    }
                    if let Some(until) = held {
                        wake = wake.min(until);
                    }
                    if self.stop_cv.wait_until(&mut stop, wake).timed_out() && retry {
                        break;
                    }
                }
            }
            let was_held = held_until.take().is_some();
            let now = Instant::now();
            let current = self.published.load(Ordering::Acquire);
            let mut target = None;
            if now >= next_sample {
                target = retention_target(&mut samples, now, current, retention);
                next_sample = now + interval;
            }
            // Cleared before the target is read: a write after this wakes the next pass.
            let pressure = self.budget_pressure.swap(false, Ordering::AcqRel) || retry || was_held;
            retry = false;
            if pressure {
                let budget = self.config.history_budget;
                let low_water = budget / BUDGET_LOW_WATER.1 * BUDGET_LOW_WATER.0;
                let (by_budget, history) = {
                    let mut ledger = self.ledger.lock();
                    (ledger.target(low_water), ledger.total())
                };
                if let Some(by_budget) = by_budget {
                    // Revisions not yet published (durable mode) cannot be compacted yet.
                    retry = by_budget > current;
                    let by_budget = by_budget.min(current);
                    // Held back, the pass compacts nothing for the budget, rather than up to
                    // where the watch stands: each compaction walks the whole index, and one
                    // every `WATCH_HOLD_RETRY` behind a watch that moved a little each time
                    // doubled the 100,000-pod benchmark's CPU.
                    let oldest = self.positions.lock().oldest(current);
                    if history <= budget.saturating_mul(WATCH_HOLD_LIMIT)
                        && let Some(oldest) = oldest.filter(|oldest| *oldest < by_budget)
                    {
                        debug!(by_budget, oldest, history, "an open watch holds history");
                        held_until = Some(Instant::now() + WATCH_HOLD_RETRY);
                    } else {
                        target = target.max(Some(by_budget));
                    }
                }
            }
            if let Some(target) =
                target.filter(|target| *target > self.compacted.load(Ordering::Acquire))
                && let Err(err) = self.compact(target)
            {
                warn!(error = %err, target, "background compaction failed");
            }
            if pressure {
                self.budget_passes.fetch_add(1, Ordering::Release);
            }
        }
    }
}

/// Records the sample `(now, current)` and returns the revision the retention allows compacting
/// to, if any. `samples` holds the compactor's past samples, oldest first; samples no longer
/// needed are dropped (the newest one old enough is kept as the next candidate's floor).
/// Public for other implementations of [`crate::Kv`] (the etcd store's compactor), so that
/// both backends keep history by one policy.
pub fn retention_target(
    samples: &mut VecDeque<(Instant, Revision)>,
    now: Instant,
    current: Revision,
    retention: Retention,
) -> Option<Revision> {
    samples.push_back((now, current));
    let old_enough = |at: Instant| now.saturating_duration_since(at) >= retention.min_age;
    // Drop samples older than the newest sample that is old enough.
    while samples.len() > 1 && samples.get(1).is_some_and(|(at, _)| old_enough(*at)) {
        samples.pop_front();
    }
    let (at, by_age) = *samples.front()?;
    if !old_enough(at) {
        return None;
    }
    let by_count = current.saturating_sub(retention.min_revisions);
    Some(by_age.min(by_count)).filter(|target| *target > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    fn retention(min_revisions: u64, minutes: u64) -> Retention {
        Retention {
            min_revisions,
            min_age: MINUTE * minutes as u32,
        }
    }

    #[test]
    fn nothing_is_compacted_before_the_age_is_reached() {
        let start = Instant::now();
        let mut samples = VecDeque::new();
        let policy = retention(10, 5);
        for minute in 0..5 {
            let now = start + MINUTE * minute;
            assert_eq!(
                retention_target(&mut samples, now, 1_000 * (u64::from(minute) + 1), policy),
                None
            );
        }
        // At minute 5 the sample of minute 0 (revision 1,000) is old enough.
        let now = start + MINUTE * 5;
        assert_eq!(
            retention_target(&mut samples, now, 6_000, policy),
            Some(1_000)
        );
        // A minute later the sample of minute 1 (2,000) is, and older samples are dropped.
        let now = start + MINUTE * 6;
        assert_eq!(
            retention_target(&mut samples, now, 7_000, policy),
            Some(2_000)
        );
        assert_eq!(samples.front().map(|s| s.1), Some(2_000));
    }

    #[test]
    fn the_revision_count_caps_the_target() {
        let start = Instant::now();
        let mut samples = VecDeque::new();
        let policy = retention(10_000, 5);
        retention_target(&mut samples, start, 9_000, policy);
        // Old enough by age, but only 3,000 revisions back.
        assert_eq!(
            retention_target(&mut samples, start + MINUTE * 5, 12_000, policy),
            Some(2_000)
        );
    }

    #[test]
    fn zero_age_compacts_by_count_alone() {
        let mut samples = VecDeque::new();
        let policy = retention(5, 0);
        let now = Instant::now();
        assert_eq!(retention_target(&mut samples, now, 3, policy), None);
        assert_eq!(retention_target(&mut samples, now, 25, policy), Some(20));
        assert_eq!(samples.len(), 1);
    }
}
