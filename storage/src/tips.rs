//! The latest change of every key, readable without the store's `state` lock.
//!
//! Why it exists: the API server asks for a key's mod revision on every namespaced create
//! (NamespaceLifecycle admission reads the namespace's). Through the index that is a read of the
//! `state` lock, which the single writer holds for the whole of each write (including the
//! backend insert); on two cores about one create in six blocked there behind another worker's
//! write, idling its core. Here the same answer comes from a sharded map whose locks are held
//! only for one map operation.
//!
//! Consistency: the writer records a change here (under the `state` write lock, after the index)
//! before it publishes the change, so a reader that reads at a published revision finds every
//! change up to it. A tip newer than the read's revision is not the answer at that revision:
//! the caller falls back to the index. Compaction forgets a key only once the index has dropped
//! it (its last change, a delete, at or below the compaction point), and only if no newer
//! change has been recorded since.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use bytes::Bytes;
use parking_lot::{RwLock, RwLockWriteGuard};

use crate::Revision;
use crate::index::Entry;

/// Shards of the map: enough that two workers rarely meet on one.
const SHARDS: usize = 16;

/// A key's latest change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tip {
    /// The change's revision.
    pub(crate) revision: Revision,
    /// False when the change was a delete.
    pub(crate) live: bool,
}

impl Tip {
    /// The tip an index entry makes.
    pub(crate) fn of(entry: Entry) -> Tip {
        Tip {
            revision: entry.mod_revision,
            live: entry.is_live(),
        }
    }
}

/// Latest change per key, in shards.
pub(crate) struct Tips {
    hasher: RandomState,
    shards: Vec<RwLock<HashMap<Bytes, Tip>>>,
}

impl Default for Tips {
    fn default() -> Self {
        Tips {
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
        }
    }
}

impl Tips {
    fn shard_index(&self, key: &[u8]) -> usize {
        // Truncation is fine: any bits of the hash pick a shard.
        #[allow(clippy::cast_possible_truncation)]
        let index = self.hasher.hash_one(key) as usize % SHARDS;
        index
    }

    fn shard(&self, key: &[u8]) -> &RwLock<HashMap<Bytes, Tip>> {
        &self.shards[self.shard_index(key)]
    }

    /// The key's latest change, `None` if it has none (never written, or deleted and
    /// compacted away).
    pub(crate) fn get(&self, key: &[u8]) -> Option<Tip> {
        self.shard(key).read().get(key).copied()
    }

    /// Records a change of `key` (the writer's, in revision order).
    pub(crate) fn record(&self, key: &Bytes, tip: Tip) {
        let mut shard = self.shard(key).write();
        match shard.get_mut(key.as_ref()) {
            Some(existing) => *existing = tip,
            None => {
                shard.insert(key.clone(), tip);
            }
        }
    }

    /// A loader for open, which records every key of the loaded index: it holds every shard
    /// for its whole life, with room made for `keys` more keys, and records a key with one
    /// lookup and no lock of its own (recording 100,000 keys one `record` at a time was about
    /// a fifth of a reopen).
    pub(crate) fn loader(&self, keys: usize) -> Loader<'_> {
        let mut shards: Vec<_> = self.shards.iter().map(|shard| shard.write()).collect();
        for shard in &mut shards {
            shard.reserve(keys / SHARDS + 1);
        }
        Loader { tips: self, shards }
    }

    /// Forgets `key` if its latest change is at or below `revision` (compaction dropped it
    /// from the index).
    pub(crate) fn forget(&self, key: &[u8], revision: Revision) {
        let mut shard = self.shard(key).write();
        if shard.get(key).is_some_and(|tip| tip.revision <= revision) {
            shard.remove(key);
        }
    }

    /// Number of keys with a tip.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|shard| shard.read().len()).sum()
    }
}

/// Every shard of [`Tips`], held to record many keys (`Tips::loader`).
pub(crate) struct Loader<'a> {
    tips: &'a Tips,
    shards: Vec<RwLockWriteGuard<'a, HashMap<Bytes, Tip>>>,
}

impl Loader<'_> {
    /// Records `key`'s latest change (replacing any tip it had).
    pub(crate) fn record(&mut self, key: &Bytes, tip: Tip) {
        let index = self.tips.shard_index(key);
        self.shards[index].insert(key.clone(), tip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loader_records_every_key_it_is_given() {
        let tips = Tips::default();
        let keys: Vec<Bytes> = (0..100).map(|i| Bytes::from(format!("/ns/k{i}"))).collect();
        {
            let mut loader = tips.loader(keys.len());
            for (i, key) in keys.iter().enumerate() {
                let tip = Tip {
                    revision: i as Revision + 1,
                    live: i % 2 == 0,
                };
                loader.record(key, tip);
            }
        }
        assert_eq!(tips.len(), 100);
        assert_eq!(
            tips.get(b"/ns/k7"),
            Some(Tip {
                revision: 8,
                live: false
            })
        );
        // The shards are free again once the loader is gone.
        tips.record(
            &keys[7],
            Tip {
                revision: 101,
                live: true,
            },
        );
        assert_eq!(tips.get(b"/ns/k7").map(|tip| tip.revision), Some(101));
    }

    #[test]
    fn latest_change_wins_and_forget_spares_newer_changes() {
        let tips = Tips::default();
        let key = Bytes::from_static(b"/ns/a");
        assert_eq!(tips.get(b"/ns/a"), None);
        tips.record(
            &key,
            Tip {
                revision: 3,
                live: true,
            },
        );
        tips.record(
            &key,
            Tip {
                revision: 5,
                live: false,
            },
        );
        assert_eq!(
            tips.get(b"/ns/a"),
            Some(Tip {
                revision: 5,
                live: false
            })
        );
        // A compaction below the delete keeps it; one at or above it forgets the key.
        tips.forget(b"/ns/a", 4);
        assert_eq!(tips.len(), 1);
        tips.forget(b"/ns/a", 5);
        assert_eq!(tips.get(b"/ns/a"), None);
        // A create after the compaction's point survives a late forget.
        tips.record(
            &key,
            Tip {
                revision: 9,
                live: true,
            },
        );
        tips.forget(b"/ns/a", 6);
        assert_eq!(
            tips.get(b"/ns/a"),
            Some(Tip {
                revision: 9,
                live: true
            })
        );
    }
}
