//! Helpers shared by the storage integration tests.
#![allow(dead_code, unreachable_pub)]

pub mod model;
pub mod suite;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use kubemock_storage::{Error, Event, Kv, Revision, WatchItem, WatchStream};

/// Deadline for any single wait in a test: generous, because CI machines are slow, and only
/// ever reached when something is broken.
pub const WAIT: Duration = Duration::from_secs(60);

/// The seed for randomised tests: `KUBEMOCK_TEST_SEED` if set, else fresh. Printed so that a
/// failure can be replayed.
pub fn seed(test: &str) -> u64 {
    let seed = std::env::var("KUBEMOCK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("{test}: seed {seed} (replay with KUBEMOCK_TEST_SEED={seed})");
    seed
}

/// The next item of a watch, failing the test if none arrives within [`WAIT`].
pub async fn next_item(watch: &mut WatchStream) -> Option<Result<WatchItem, Error>> {
    tokio::time::timeout(WAIT, watch.next())
        .await
        .expect("watch produced nothing before the deadline")
}

/// Collects a watch's events until it reports progress at `revision` (everything up to it
/// delivered). Panics on an error or a stream end.
pub async fn events_until(watch: &mut WatchStream, revision: Revision) -> Vec<Arc<Event>> {
    match try_events_until(watch, revision).await {
        Ok(events) => events,
        Err(err) => panic!("watch failed: {err}"),
    }
}

/// [`events_until`], with the watch's error returned instead of a panic (a stream end still
/// panics).
pub async fn try_events_until(
    watch: &mut WatchStream,
    revision: Revision,
) -> Result<Vec<Arc<Event>>, Error> {
    let mut events = Vec::new();
    watch.request_progress();
    loop {
        match next_item(watch).await {
            Some(Ok(WatchItem::Event(event))) => events.push(event),
            Some(Ok(WatchItem::Progress(at))) if at >= revision => return Ok(events),
            Some(Ok(WatchItem::Progress(_))) => watch.request_progress(),
            Some(Err(err)) => return Err(err),
            None => panic!("watch ended"),
        }
    }
}

/// Asserts that `events` carry exactly the revisions `from..=to`, in order.
pub fn assert_contiguous(events: &[Arc<Event>], from: Revision, to: Revision) {
    let revisions: Vec<Revision> = events.iter().map(|e| e.revision()).collect();
    let expected: Vec<Revision> = (from..=to).collect();
    assert_eq!(
        revisions, expected,
        "events are not exactly revisions {from}..={to}"
    );
}

/// Creates the keys `{prefix}0` .. `{prefix}{count - 1}` with empty values, one revision each.
pub async fn create_keys(store: &dyn Kv, prefix: &str, count: u64) {
    for n in 0..count {
        store
            .create(Bytes::from(format!("{prefix}{n}")), Bytes::new())
            .await
            .expect("create");
    }
}
