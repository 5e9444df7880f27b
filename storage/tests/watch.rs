//! Watch guarantees (docs/store.md#guarantees, 5 and 6): history then live with no gap and
//! no duplicate, also for a watcher created in the middle of a write burst; slow watchers are
//! cut off without slowing writers; compaction ends watches that need removed history;
//! progress reports the revision up to which everything was delivered.

mod common;

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use kubemock_storage::{Config, Error, Event, Kv, SledStore, WatchItem};

fn key(writer: u64, n: u64) -> Bytes {
    Bytes::from(format!("/burst/{writer}/{n}"))
}

/// Spawns `writers` tasks that each create `per_writer` keys.
fn burst(store: &SledStore, writers: u64, per_writer: u64) -> tokio::task::JoinSet<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for writer in 0..writers {
        let store = store.clone();
        tasks.spawn(async move {
            for n in 0..per_writer {
                store
                    .create(key(writer, n), Bytes::from(vec![b'v'; 64]))
                    .await
                    .expect("create");
            }
        });
    }
    tasks
}

async fn watcher_created_mid_burst_sees_every_later_event_once(store: SledStore) {
    let (writers, per_writer) = (4, 1_500);
    let total = writers * per_writer;
    let mut tasks = burst(&store, writers, per_writer);
    // Start watchers while the burst is under way, at whatever revision it has reached.
    let mut watchers = Vec::new();
    while watchers.len() < 5 {
        let at = store.revision();
        if at > (watchers.len() as u64 + 1) * total / 8 {
            let watch = store
                .watch(Bytes::from_static(b"/burst/"), at)
                .await
                .expect("watch");
            watchers.push((at, watch));
        }
        tokio::task::yield_now().await;
    }
    while let Some(result) = tasks.join_next().await {
        result.expect("writer");
    }
    assert_eq!(store.revision(), total);
    let mut everything = store.watch(Bytes::new(), 0).await.expect("watch from 0");
    let history = common::events_until(&mut everything, total).await;
    common::assert_contiguous(&history, 1, total);
    for (at, mut watch) in watchers {
        assert!(
            at < total,
            "watcher started after the burst: not a mid-burst test"
        );
        let events = common::events_until(&mut watch, total).await;
        common::assert_contiguous(&events, at + 1, total);
        assert_eq!(
            events,
            history[at as usize..],
            "watcher from {at} differs from history"
        );
    }
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
    let mut live = store.watch(Bytes::new(), 0).await.expect("watch");
    for n in 0..600u64 {
        let key = Bytes::from(format!("/k/{}", n % 37));
        match n % 5 {
            0 | 1 => {
                store
                    .create(key, Bytes::from(n.to_string()))
                    .await
                    .expect("create");
            }
            2 | 3 => {
                let guard = kubemock_storage::Guard::Unconditional;
                store
                    .update(key, Bytes::from(n.to_string()), guard)
                    .await
                    .expect("update");
            }
            _ => {
                store
                    .delete(key, kubemock_storage::Guard::Unconditional)
                    .await
                    .expect("delete");
            }
        }
    }
    let current = store.revision();
    let recorded = common::events_until(&mut live, current).await;
    common::assert_contiguous(&recorded, 1, current);
    for after in [0, 1, 100, 255, 256, 257, current - 1, current] {
        let mut replay = store.watch(Bytes::new(), after).await.expect("replay");
        let replayed = common::events_until(&mut replay, current).await;
        assert_eq!(replayed, recorded[after as usize..], "replay after {after}");
    }
    // Replayed deletes and updates carry the previous value.
    assert!(
        recorded
            .iter()
            .any(|e| e.kind == kubemock_storage::EventKind::Delete
                && e.prev.as_ref().is_some_and(|p| !p.value.is_empty()))
    );
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
    let mut tasks = burst(&store, 4, WRITES / 4);
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
    common::create_keys(&store, "/k/", 20).await;
    assert_eq!(store.compact(10).await.expect("compact"), 10);
    match store.watch(Bytes::new(), 9).await.map(|_| ()) {
        Err(Error::Compacted {
            requested: 9,
            compacted: 10,
        }) => {}
        other => panic!("expected Compacted, got {other:?}"),
    }
    // At the compaction point itself, the watch works.
    let mut watch = store
        .watch(Bytes::new(), 10)
        .await
        .expect("watch at compaction point");
    let events = common::events_until(&mut watch, 20).await;
    common::assert_contiguous(&events, 11, 20);
    // A future revision is its own error.
    match store.watch(Bytes::new(), 21).await.map(|_| ()) {
        Err(Error::FutureRevision {
            requested: 21,
            current: 20,
        }) => {}
        other => panic!("expected FutureRevision, got {other:?}"),
    }
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
    let mut watch = store
        .watch(Bytes::from_static(b"/a/"), 0)
        .await
        .expect("watch");
    // Nothing pending: progress at the current revision.
    watch.request_progress();
    assert_eq!(
        common::next_item(&mut watch).await.unwrap().unwrap(),
        WatchItem::Progress(0)
    );
    // Changes elsewhere move the progress revision without events.
    common::create_keys(&store, "/b/", 5).await;
    watch.request_progress();
    assert_eq!(
        common::next_item(&mut watch).await.unwrap().unwrap(),
        WatchItem::Progress(5)
    );
    // A pending event comes before the progress it is covered by.
    store
        .create(Bytes::from_static(b"/a/x"), Bytes::new())
        .await
        .expect("create");
    store
        .create(Bytes::from_static(b"/b/x"), Bytes::new())
        .await
        .expect("create");
    watch.request_progress();
    match common::next_item(&mut watch).await.unwrap().unwrap() {
        WatchItem::Event(event) => assert_eq!(event.revision(), 6),
        other => panic!("expected the event first, got {other:?}"),
    }
    assert_eq!(
        common::next_item(&mut watch).await.unwrap().unwrap(),
        WatchItem::Progress(7)
    );
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
    const WRITES: u64 = 3_000;
    let store = SledStore::open(Config::ephemeral().watch_buffer(1 << 16)).expect("open");
    let key = Bytes::from_static(b"/read-after-event/k");
    store
        .create(key.clone(), Bytes::from_static(b"0"))
        .await
        .expect("create");
    let mut watch = store
        .watch(key.clone(), store.revision())
        .await
        .expect("watch");
    // Many other watchers make the delivery of each event take a while: a reader woken by
    // an early delivery must still see the event's revision.
    let mut others = Vec::new();
    for _ in 0..400 {
        others.push(
            store
                .watch(key.clone(), store.revision())
                .await
                .expect("watch"),
        );
    }
    let writer = {
        let store = store.clone();
        let key = key.clone();
        tokio::spawn(async move {
            for n in 1..=WRITES {
                store
                    .update(
                        key.clone(),
                        Bytes::from(n.to_string()),
                        kubemock_storage::Guard::Unconditional,
                    )
                    .await
                    .expect("update");
            }
        })
    };
    let mut seen = 0;
    while seen < WRITES {
        let Some(item) = watch.next().await else {
            panic!("the watch ended")
        };
        let WatchItem::Event(event) = item.expect("an event") else {
            continue;
        };
        let read = store.get(&key, None).await.expect("get");
        let found = read.kv.expect("the key exists").mod_revision;
        assert!(
            read.revision >= event.revision() && found >= event.revision(),
            "read at {} found revision {found} after the event of revision {}",
            read.revision,
            event.revision()
        );
        seen += 1;
    }
    writer.await.expect("writer");
    drop(others);
}
