//! Expectations (upstream `controller_utils.go` `ControllerExpectations` with UID tracking):
//! after creating or deleting pods, a ReplicaSet is not resized again until the informer has
//! shown those creations and deletions, so a slow informer never causes duplicate creates or
//! deletes. A record expires after [`EXPECTATIONS_TTL`] (a lost event must not wedge a
//! ReplicaSet forever).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use kubemock_client::ObjectKey;
use parking_lot::Mutex;
use tokio::time::Instant;

/// How long expectations hold at most (upstream `ExpectationsTimeout`: 5 minutes).
pub const EXPECTATIONS_TTL: Duration = Duration::from_secs(300);

#[derive(Debug)]
struct Record {
    /// Creations not observed yet.
    adds: i64,
    /// Pods whose deletion has not been observed yet.
    deletes: HashSet<ObjectKey>,
    /// When the record was set.
    since: Instant,
}

/// Expectations of every ReplicaSet, by its key. Guarded by a short sync lock (handlers and
/// workers), never held across an await.
#[derive(Debug, Default)]
pub struct Expectations {
    records: Mutex<HashMap<ObjectKey, Record>>,
}

impl Expectations {
    /// Whether `owner` may be resized: nothing pending, or its record expired, or none.
    pub fn satisfied(&self, owner: &ObjectKey) -> bool {
        match self.records.lock().get(owner) {
            None => true,
            Some(r) => {
                (r.adds <= 0 && r.deletes.is_empty()) || r.since.elapsed() > EXPECTATIONS_TTL
            }
        }
    }

    /// Expects `adds` creations for `owner` (replacing any record).
    pub fn expect_creations(&self, owner: &ObjectKey, adds: usize) {
        self.records.lock().insert(
            owner.clone(),
            Record {
                adds: i64::try_from(adds).unwrap_or(i64::MAX),
                deletes: HashSet::new(),
                since: Instant::now(),
            },
        );
    }

    /// Expects the deletion of `pods` of `owner` (replacing any record).
    pub fn expect_deletions(&self, owner: &ObjectKey, pods: impl IntoIterator<Item = ObjectKey>) {
        self.records.lock().insert(
            owner.clone(),
            Record {
                adds: 0,
                deletes: pods.into_iter().collect(),
                since: Instant::now(),
            },
        );
    }

    /// Expects `adds` creations and the deletion of `pods` of `owner` at once (replacing any
    /// record; upstream `SetExpectations`).
    pub fn expect(
        &self,
        owner: &ObjectKey,
        adds: usize,
        pods: impl IntoIterator<Item = ObjectKey>,
    ) {
        self.records.lock().insert(
            owner.clone(),
            Record {
                adds: i64::try_from(adds).unwrap_or(i64::MAX),
                deletes: pods.into_iter().collect(),
                since: Instant::now(),
            },
        );
    }

    /// A creation was observed (or will never happen: the create failed).
    pub fn creation_observed(&self, owner: &ObjectKey) {
        if let Some(r) = self.records.lock().get_mut(owner) {
            r.adds -= 1;
        }
    }

    /// The deletion of `pod` was observed (or will never happen).
    pub fn deletion_observed(&self, owner: &ObjectKey, pod: &ObjectKey) {
        if let Some(r) = self.records.lock().get_mut(owner) {
            r.deletes.remove(pod);
        }
    }

    /// Forgets `owner` (it was deleted).
    pub fn forget(&self, owner: &ObjectKey) {
        self.records.lock().remove(owner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn expectations_hold_until_observed_or_expired() {
        let e = Expectations::default();
        let rs = ObjectKey::new(Some("ns"), "rs");
        assert!(e.satisfied(&rs));
        e.expect_creations(&rs, 2);
        assert!(!e.satisfied(&rs));
        e.creation_observed(&rs);
        assert!(!e.satisfied(&rs));
        e.creation_observed(&rs);
        assert!(e.satisfied(&rs));

        let pod = ObjectKey::new(Some("ns"), "p");
        e.expect_deletions(&rs, [pod.clone()]);
        assert!(!e.satisfied(&rs));
        e.deletion_observed(&rs, &ObjectKey::new(Some("ns"), "other"));
        assert!(!e.satisfied(&rs));
        e.deletion_observed(&rs, &pod);
        assert!(e.satisfied(&rs));

        e.expect_creations(&rs, 1);
        tokio::time::advance(EXPECTATIONS_TTL + Duration::from_secs(1)).await;
        assert!(e.satisfied(&rs), "an expired record no longer blocks");
    }
}
