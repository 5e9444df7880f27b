//! An ordered set of keys that can count: how many of its keys lie in a key range, in
//! O(log n). The key index (`index.rs`) keeps the keys live at its latest revision in one, so
//! that a paginated range's count of the items after the page (the API server's
//! `remainingItemCount`) is a difference of two ranks instead of a walk over the rest of the
//! range (see `docs/store.md`, "How `remaining` is counted").
//!
//! Layout: the keys in sorted blocks of at most [`BLOCK_MAX`] keys each, and a Fenwick tree
//! over the blocks' lengths. A rank is a binary search over the blocks' last keys, a prefix
//! sum in the tree, and a binary search inside one block. An insert or a removal shifts at
//! most one block and updates the tree in O(log blocks); splitting, merging or dropping a
//! block rebuilds the tree in O(blocks), once per many changes. Keys are [`Bytes`], so the
//! set shares their buffers with the index's map: it costs one `Bytes` (32 bytes) per key,
//! times the blocks' unused capacity.

use std::ops::Bound;

use bytes::Bytes;

/// Most keys a block holds: a block this full is split in two before an insert.
const BLOCK_MAX: usize = 256;
/// A block left with fewer keys than this after a removal is merged into a neighbour when
/// both fit in one block.
const BLOCK_MIN: usize = BLOCK_MAX / 8;
/// Keys per block when built from sorted keys: room for inserts before the first split.
const BLOCK_FILL: usize = BLOCK_MAX * 3 / 4;

/// The set. Invariants: every block is non-empty and sorted, the blocks are in order (each
/// block's keys are above the previous block's), and `tree` is the Fenwick tree of the block
/// lengths.
#[derive(Debug, Default)]
pub(crate) struct RankedSet {
    blocks: Vec<Vec<Bytes>>,
    /// `tree[i]` (1-based) sums the lengths of the blocks `(i - lowbit(i), i]`.
    tree: Vec<usize>,
    len: usize,
}

impl RankedSet {
    /// A set of `keys`, which must be strictly ascending (`None` if they are not).
    pub(crate) fn from_sorted(keys: impl IntoIterator<Item = Bytes>) -> Option<Self> {
        let mut set = RankedSet::default();
        let mut block = Vec::with_capacity(BLOCK_FILL);
        for key in keys {
            let last = block
                .last()
                .or_else(|| set.blocks.last().and_then(|b| b.last()));
            if last.is_some_and(|last: &Bytes| *last >= key) {
                return None;
            }
            block.push(key);
            if block.len() == BLOCK_FILL {
                set.blocks.push(std::mem::replace(
                    &mut block,
                    Vec::with_capacity(BLOCK_FILL),
                ));
            }
        }
        if !block.is_empty() {
            block.shrink_to_fit();
            set.blocks.push(block);
        }
        set.len = set.blocks.iter().map(Vec::len).sum();
        set.rebuild_tree();
        Some(set)
    }

    /// Number of keys.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Adds `key`; false if it was there.
    pub(crate) fn insert(&mut self, key: Bytes) -> bool {
        if self.blocks.is_empty() {
            self.blocks.push(vec![key]);
            self.len = 1;
            self.rebuild_tree();
            return true;
        }
        // The first block whose last key is not below `key`, or the last block.
        let mut b = self.block_of(&key).min(self.blocks.len() - 1);
        let Err(mut at) = self.blocks[b].binary_search(&key) else {
            return false;
        };
        if self.blocks[b].len() >= BLOCK_MAX {
            let tail = self.blocks[b].split_off(BLOCK_MAX / 2);
            self.blocks.insert(b + 1, tail);
            if at >= BLOCK_MAX / 2 {
                // `key` sorts after the first half's keys.
                b += 1;
                at -= BLOCK_MAX / 2;
            }
            self.blocks[b].insert(at, key);
            self.len += 1;
            self.rebuild_tree();
            return true;
        }
        self.blocks[b].insert(at, key);
        self.len += 1;
        self.add(b, 1);
        true
    }

    /// Removes `key`; false if it was not there.
    pub(crate) fn remove(&mut self, key: &[u8]) -> bool {
        let b = self.block_of(key);
        let Some(block) = self.blocks.get_mut(b) else {
            return false;
        };
        let Ok(at) = block.binary_search_by(|probe| probe.as_ref().cmp(key)) else {
            return false;
        };
        block.remove(at);
        self.len -= 1;
        let remaining = block.len();
        if remaining == 0 {
            self.blocks.remove(b);
            self.rebuild_tree();
        } else if remaining < BLOCK_MIN
            && b + 1 < self.blocks.len()
            && remaining + self.blocks[b + 1].len() <= BLOCK_MAX
        {
            let next = self.blocks.remove(b + 1);
            self.blocks[b].extend(next);
            self.rebuild_tree();
        } else if remaining < BLOCK_MIN
            && b > 0
            && remaining + self.blocks[b - 1].len() <= BLOCK_MAX
        {
            let this = self.blocks.remove(b);
            self.blocks[b - 1].extend(this);
            self.rebuild_tree();
        } else {
            self.sub(b, 1);
        }
        true
    }

    /// Number of keys strictly below `key` (`inclusive`: at or below it).
    fn rank(&self, key: &[u8], inclusive: bool) -> usize {
        let b = self.block_of(key);
        let Some(block) = self.blocks.get(b) else {
            return self.len;
        };
        let within = block.partition_point(|probe| {
            if inclusive {
                probe.as_ref() <= key
            } else {
                probe.as_ref() < key
            }
        });
        self.prefix(b) + within
    }

    /// Number of keys between `lower` and `upper`.
    pub(crate) fn count(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> usize {
        let below_lower = match lower {
            Bound::Unbounded => 0,
            Bound::Included(key) => self.rank(key, false),
            Bound::Excluded(key) => self.rank(key, true),
        };
        let below_upper = match upper {
            Bound::Unbounded => self.len,
            Bound::Included(key) => self.rank(key, true),
            Bound::Excluded(key) => self.rank(key, false),
        };
        below_upper.saturating_sub(below_lower)
    }

    /// Heap bytes the set holds (its blocks' capacity and the tree), not counting the key
    /// buffers, which it shares.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        let blocks: usize = self
            .blocks
            .iter()
            .map(|block| block.capacity() * std::mem::size_of::<Bytes>())
            .sum();
        blocks
            + self.blocks.capacity() * std::mem::size_of::<Vec<Bytes>>()
            + self.tree.capacity() * std::mem::size_of::<usize>()
    }

    /// The first block whose last key is at or above `key` (`blocks.len()` if none is).
    fn block_of(&self, key: &[u8]) -> usize {
        self.blocks
            .partition_point(|block| block.last().is_some_and(|last| last.as_ref() < key))
    }

    /// Total length of the blocks before block `b`.
    fn prefix(&self, b: usize) -> usize {
        let mut i = b;
        let mut sum = 0;
        while i > 0 {
            sum += self.tree[i];
            i &= i - 1;
        }
        sum
    }

    fn add(&mut self, b: usize, n: usize) {
        let mut i = b + 1;
        while i < self.tree.len() {
            self.tree[i] += n;
            i += i & i.wrapping_neg();
        }
    }

    fn sub(&mut self, b: usize, n: usize) {
        let mut i = b + 1;
        while i < self.tree.len() {
            self.tree[i] -= n;
            i += i & i.wrapping_neg();
        }
    }

    fn rebuild_tree(&mut self) {
        self.tree.clear();
        self.tree.push(0);
        self.tree.extend(self.blocks.iter().map(Vec::len));
        for i in 1..self.tree.len() {
            let parent = i + (i & i.wrapping_neg());
            if parent < self.tree.len() {
                self.tree[parent] += self.tree[i];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::ops::RangeBounds;

    use super::*;

    fn key(n: u32) -> Bytes {
        Bytes::from(format!("k{n:06}"))
    }

    /// Counts of the set against a `BTreeSet` after each of many random inserts and removals,
    /// crossing block splits and merges.
    #[test]
    fn counts_equal_a_btreeset_under_random_changes() {
        let mut rng = fastrand::Rng::with_seed(23);
        let mut set = RankedSet::from_sorted((0..700).step_by(3).map(key)).unwrap_or_default();
        let mut model: BTreeSet<Bytes> = (0..700).step_by(3).map(key).collect();
        for step in 0..20_000 {
            let k = key(rng.u32(..2_000));
            if rng.u8(..5) < 3 {
                assert_eq!(set.insert(k.clone()), model.insert(k));
            } else {
                assert_eq!(set.remove(&k), model.remove(&k));
            }
            assert_eq!(set.len(), model.len());
            if step % 7 == 0 {
                let a = key(rng.u32(..2_100));
                let b = key(rng.u32(..2_100));
                let bounds = [
                    (Bound::Included(a.as_ref()), Bound::Excluded(b.as_ref())),
                    (Bound::Excluded(a.as_ref()), Bound::Unbounded),
                    (Bound::Unbounded, Bound::Included(b.as_ref())),
                ];
                for (lower, upper) in bounds {
                    let expected = model
                        .iter()
                        .filter(|k| {
                            let k: &[u8] = k.as_ref();
                            RangeBounds::<[u8]>::contains(&(lower, upper), k)
                        })
                        .count();
                    assert_eq!(set.count(lower, upper), expected, "step {step}");
                }
            }
        }
        // Every block non-empty and ordered, and the tree matches.
        assert!(set.blocks.iter().all(|b| !b.is_empty()));
        let flat: Vec<&Bytes> = set.blocks.iter().flatten().collect();
        assert!(flat.windows(2).all(|w| w[0] < w[1]));
        for b in 0..=set.blocks.len() {
            let expected: usize = set.blocks[..b].iter().map(Vec::len).sum();
            assert_eq!(set.prefix(b), expected);
        }
    }

    #[test]
    fn from_sorted_refuses_unordered_keys() {
        assert!(RankedSet::from_sorted([key(2), key(1)]).is_none());
        assert!(RankedSet::from_sorted([key(1), key(1)]).is_none());
        let set = RankedSet::from_sorted((0..1_000).map(key)).unwrap_or_default();
        assert_eq!(set.len(), 1_000);
        assert_eq!(
            set.count(Bound::Excluded(b"k000499"), Bound::Unbounded),
            500
        );
    }
}
