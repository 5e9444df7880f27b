//! Watch guarantees (docs/store.md#guarantees, 5 and 6): history then live with no gap and
//! no duplicate, also for a watcher created in the middle of a write burst; slow watchers are
//! cut off without slowing writers; compaction ends watches that need removed history;
//! progress reports the revision up to which everything was delivered.

mod common;

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use kubemock_storage::{Config, Error, Event, Kv, SledStore, WatchItem};

async fn watcher_created_mid_burst_sees_every_later_event_once(store: SledStore) {
    common::suite::watcher_created_mid_burst_sees_every_later_event_once(Arc::new(store), 4, 1_500)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_created_mid_burst_sees_every_later_event_once_ephemeral() {
    // A buffer larger than the burst: this test is about registering mid-burst, not about lag.
    let store = SledStore::open(Config::ephemeral().watch_buffer(1 << 16)).expect("open");
    watcher_created_mid_burst_sees_every_later_event_once(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_created_mid_burst_sees_every_later_event_once_durable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config::durable(dir.path()).watch_buffer(1 << 16);
    let store = SledStore::open(config).expect("open");
    watcher_created_mid_burst_sees_every_later_event_once(store).await;
}

#[tokio::test]
async fn replay_from_an_old_revision_equals_the_live_history() {
    let store = SledStore::open(Config::ephemeral().watch_buffer(10_000)).expect("open");
    common::suite::replay_from_an_old_revision_equals_the_live_history(&store, 600).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_watcher_is_cut_off_with_lag_error_and_writers_never_wait() {
    const BUFFER: usize = 16;
    const WRITES: u64 = 2_000;
    let store = SledStore::open(Config::ephemeral().watch_buffer(BUFFER)).expect("open");
    // Never polled while the writes happen.
    let mut slow = store.watch(Bytes::new(), 0).await.expect("slow watch");
    assert_eq!(store.live_watchers(), 1);
    // If a writer waited on the slow watcher, this would never finish (and the test times out).
    let shared: Arc<dyn Kv> = Arc::new(store.clone());
    let mut tasks = common::suite::burst(&shared, 4, WRITES / 4);
    while let Some(result) = tasks.join_next().await {
        result.expect("writer");
    }
    assert_eq!(store.revision(), WRITES);
    assert_eq!(
        store.live_watchers(),
        0,
        "the slow watcher is no longer subscribed"
    );

    // The slow watcher drains what it had buffered, then ends with the lag error naming the
    // last revision it delivered, then ends.
    let mut delivered = Vec::new();
    let error = loop {
        match common::next_item(&mut slow).await {
            Some(Ok(WatchItem::Event(event))) => delivered.push(event),
            Some(Err(err)) => break err,
            other => panic!("slow watcher: {other:?}"),
        }
    };
    assert_eq!(delivered.len(), BUFFER);
    common::assert_contiguous(&delivered, 1, BUFFER as u64);
    match error {
        Error::WatcherLagged { delivered } => assert_eq!(delivered, BUFFER as u64),
        other => panic!("expected WatcherLagged, got {other:?}"),
    }
    assert!(
        slow.next().await.is_none(),
        "the stream ends after its error"
    );

    // Resuming from the last delivered revision gets the rest.
    let mut resumed = store
        .watch(Bytes::new(), BUFFER as u64)
        .await
        .expect("resume");
    let rest = common::events_until(&mut resumed, WRITES).await;
    common::assert_contiguous(&rest, BUFFER as u64 + 1, WRITES);
}

#[tokio::test]
async fn watch_below_the_compaction_point_fails_compacted() {
    let store = SledStore::open(Config::ephemeral()).expect("open");
    common::suite::watch_below_the_compaction_point_fails_compacted(&store).await;
}

#[tokio::test]
async fn replaying_watcher_overtaken_by_compaction_fails_compacted() {
    let store = SledStore::open(Config::ephemeral()).expect("open");
    common::create_keys(&store, "/k/", 2_000).await;
    let mut watch = store.watch(Bytes::new(), 0).await.expect("watch");
    // The first chunk of history is read...
    assert!(matches!(
        common::next_item(&mut watch).await,
        Some(Ok(WatchItem::Event(_)))
    ));
    // ... then compaction removes what the watcher still needs.
    store.compact(1_500).await.expect("compact");
    let error = loop {
        match common::next_item(&mut watch).await {
            Some(Ok(WatchItem::Event(_))) => {}
            Some(Err(err)) => break err,
            other => panic!("{other:?}"),
        }
    };
    assert!(
        matches!(
            error,
            Error::Compacted {
                compacted: 1_500,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn progress_reports_the_revision_everything_was_delivered_up_to() {
    let store = SledStore::open(Config::ephemeral()).expect("open");
    common::suite::progress_reports_the_revision_everything_was_delivered_up_to(&store).await;
}

#[tokio::test]
async fn closing_the_store_ends_watches_with_closed() {
    let store = SledStore::open(Config::ephemeral()).expect("open");
    store
        .create(Bytes::from_static(b"/k"), Bytes::new())
        .await
        .expect("create");
    let mut live = store.watch(Bytes::new(), 1).await.expect("watch");
    let mut replaying = store.watch(Bytes::new(), 0).await.expect("watch");
    store.close();
    assert!(matches!(
        common::next_item(&mut live).await,
        Some(Err(Error::Closed))
    ));
    // A replaying watcher may still deliver history it had, then ends with Closed.
    let mut items: Vec<Result<WatchItem, Error>> = Vec::new();
    while let Some(item) = common::next_item(&mut replaying).await {
        items.push(item);
    }
    assert!(
        matches!(items.last(), Some(Err(Error::Closed))),
        "{items:?}"
    );
    assert!(matches!(
        store.create(Bytes::from_static(b"/j"), Bytes::new()).await,
        Err(Error::Closed)
    ));
    assert!(matches!(
        store.watch(Bytes::new(), 1).await.map(|_| ()),
        Err(Error::Closed)
    ));
}

#[tokio::test]
async fn watchers_on_one_store_share_each_event() {
    let store = SledStore::open(Config::ephemeral()).expect("open");
    let mut a = store.watch(Bytes::new(), 0).await.expect("watch");
    let mut b = store.watch(Bytes::new(), 0).await.expect("watch");
    store
        .create(Bytes::from_static(b"/k"), Bytes::new())
        .await
        .expect("create");
    let (Some(Ok(WatchItem::Event(x))), Some(Ok(WatchItem::Event(y)))) = (
        common::next_item(&mut a).await,
        common::next_item(&mut b).await,
    ) else {
        panic!("both watchers get the event");
    };
    assert!(
        Arc::ptr_eq(&x, &y),
        "one allocation per event, not per watcher"
    );
    let _: &Event = &x;
}

/// A reader reacting to an event sees at least that event's revision (what a controller that
/// GETs an object after its watch event relies on): the published revision moves before
/// watchers are told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_after_an_event_sees_at_least_that_revision() {
    let store = SledStore::open(Config::ephemeral().watch_buffer(1 << 16)).expect("open");
    common::suite::a_read_after_an_event_sees_at_least_that_revision(Arc::new(store), 3_000, 400)
        .await;
}
