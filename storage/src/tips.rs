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
use parking_lot::RwLock;

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
    fn shard(&self, key: &[u8]) -> &RwLock<HashMap<Bytes, Tip>> {
        // Truncation is fine: any bits of the hash pick a shard.
        #[allow(clippy::cast_possible_truncation)]
        let index = self.hasher.hash_one(key) as usize % SHARDS;
        &self.shards[index]
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

    /// Makes room for `keys` more keys at once (open records every key).
    pub(crate) fn reserve(&self, keys: usize) {
        for shard in &self.shards {
            shard.write().reserve(keys / SHARDS + 1);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
