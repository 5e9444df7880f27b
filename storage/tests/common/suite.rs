//! Tests of the store trait's guarantees (docs/store.md#guarantees, 3 to 7) for any backend:
//! storage/tests/{watch,concurrency}.rs run them on sled, storage-etcd/tests/etcd.rs on etcd.
//! Revisions are relative to the store's revision when a test starts (etcd's first revision
//! is 1, not 0); sizes are parameters, so that the networked backend runs smaller ones.

use std::sync::Arc;

use bytes::Bytes;
use kubemock_storage::{
    CreateOutcome, Error, EventKind, Guard, Kv, Revision, UpdateOutcome, WatchItem,
};

use super::{assert_contiguous, create_keys, events_until, next_item};

fn burst_key(writer: u64, n: u64) -> Bytes {
    Bytes::from(format!("/burst/{writer}/{n}"))
}

/// Spawns `writers` tasks that each create `per_writer` keys.
pub fn burst(store: &Arc<dyn Kv>, writers: u64, per_writer: u64) -> tokio::task::JoinSet<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for writer in 0..writers {
        let store = Arc::clone(store);
        tasks.spawn(async move {
            for n in 0..per_writer {
                store
                    .create(burst_key(writer, n), Bytes::from(vec![b'v'; 64]))
                    .await
                    .expect("create");
            }
        });
    }
    tasks
}

async fn current(store: &dyn Kv) -> Revision {
    store.current_revision().await.expect("current revision")
}

/// Watchers started while writers are busy see every later event once, in order, equal to
/// the history a watcher from the start sees.
pub async fn watcher_created_mid_burst_sees_every_later_event_once(
    store: Arc<dyn Kv>,
    writers: u64,
    per_writer: u64,
) {
    let base = current(store.as_ref()).await;
    let total = writers * per_writer;
    let mut tasks = burst(&store, writers, per_writer);
    // Start watchers while the burst is under way, at whatever revision it has reached.
    let mut watchers = Vec::new();
    while watchers.len() < 5 {
        let at = current(store.as_ref()).await;
        if at > base + (watchers.len() as u64 + 1) * total / 8 {
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
    let last = base + total;
    assert_eq!(current(store.as_ref()).await, last);
    let mut everything = store
        .watch(Bytes::new(), base)
        .await
        .expect("watch from base");
    let history = events_until(&mut everything, last).await;
    assert_contiguous(&history, base + 1, last);
    for (at, mut watch) in watchers {
        assert!(
            at < last,
            "watcher started after the burst: not a mid-burst test"
        );
        let events = events_until(&mut watch, last).await;
        assert_contiguous(&events, at + 1, last);
        assert_eq!(
            events,
            history[(at - base) as usize..],
            "watcher from {at} differs from history"
        );
    }
}

/// A watch from any old revision replays exactly what a live watcher saw.
pub async fn replay_from_an_old_revision_equals_the_live_history(store: &dyn Kv, writes: u64) {
    let base = current(store).await;
    let mut live = store.watch(Bytes::new(), base).await.expect("watch");
    for n in 0..writes {
        let key = Bytes::from(format!("/k/{}", n % 37));
        match n % 5 {
            0 | 1 => {
                store
                    .create(key, Bytes::from(n.to_string()))
                    .await
                    .expect("create");
            }
            2 | 3 => {
                store
                    .update(key, Bytes::from(n.to_string()), Guard::Unconditional)
                    .await
                    .expect("update");
            }
            _ => {
                store
                    .delete(key, Guard::Unconditional)
                    .await
                    .expect("delete");
            }
        }
    }
    let last = current(store).await;
    let recorded = events_until(&mut live, last).await;
    assert_contiguous(&recorded, base + 1, last);
    let mut starts = vec![base, base + 1, last - 1, last];
    // Around the sled store's replay chunks (256 revisions).
    starts.extend(
        [100, 255, 256, 257]
            .map(|n| base + n)
            .into_iter()
            .filter(|at| *at < last),
    );
    for after in starts {
        let mut replay = store.watch(Bytes::new(), after).await.expect("replay");
        let replayed = events_until(&mut replay, last).await;
        assert_eq!(
            replayed,
            recorded[(after - base) as usize..],
            "replay after {after}"
        );
    }
    // Replayed deletes and updates carry the previous value.
    assert!(recorded.iter().any(
        |e| e.kind == EventKind::Delete && e.prev.as_ref().is_some_and(|p| !p.value.is_empty())
    ));
}

/// Compaction: a watch below the compaction point fails `Compacted`, one at it works, one
/// above the current revision fails `FutureRevision`; reads likewise. (Each test here writes
/// keys of its own, so that several can run on one store.)
pub async fn watch_below_the_compaction_point_fails_compacted(store: &dyn Kv) {
    let base = current(store).await;
    create_keys(store, "/compaction/", 20).await;
    let (point, last) = (base + 10, base + 20);
    assert_eq!(store.compact(point).await.expect("compact"), point);
    assert_eq!(store.compacted_revision().await.expect("compacted"), point);
    match store.watch(Bytes::new(), point - 1).await.map(|_| ()) {
        Err(Error::Compacted {
            requested,
            compacted,
        }) if (requested, compacted) == (point - 1, point) => {}
        other => panic!("expected Compacted, got {other:?}"),
    }
    match store.get(b"/compaction/0", Some(point - 1)).await {
        Err(Error::Compacted {
            requested,
            compacted,
        }) if (requested, compacted) == (point - 1, point) => {}
        other => panic!("expected Compacted, got {other:?}"),
    }
    // At the compaction point itself, the watch and the read work.
    assert!(
        store
            .get(b"/compaction/0", Some(point))
            .await
            .expect("get")
            .kv
            .is_some()
    );
    let mut watch = store
        .watch(Bytes::new(), point)
        .await
        .expect("watch at compaction point");
    let events = events_until(&mut watch, last).await;
    assert_contiguous(&events, point + 1, last);
    // A future revision is its own error.
    match store.watch(Bytes::new(), last + 1).await.map(|_| ()) {
        Err(Error::FutureRevision { requested, current })
            if (requested, current) == (last + 1, last) => {}
        other => panic!("expected FutureRevision, got {other:?}"),
    }
    // Compacting below the point changes nothing.
    assert_eq!(store.compact(point - 5).await.expect("compact"), point);
}

/// Progress reports the revision up to which everything was delivered, after the events it
/// covers.
pub async fn progress_reports_the_revision_everything_was_delivered_up_to(store: &dyn Kv) {
    let base = current(store).await;
    let mut watch = store
        .watch(Bytes::from_static(b"/a/"), base)
        .await
        .expect("watch");
    // Nothing pending: progress at the current revision.
    watch.request_progress();
    assert_eq!(
        next_item(&mut watch)
            .await
            .expect("item")
            .expect("progress"),
        WatchItem::Progress(base)
    );
    // Changes elsewhere move the progress revision without events.
    create_keys(store, "/b/", 5).await;
    watch.request_progress();
    assert_eq!(
        next_item(&mut watch)
            .await
            .expect("item")
            .expect("progress"),
        WatchItem::Progress(base + 5)
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
    match next_item(&mut watch).await.expect("item").expect("event") {
        WatchItem::Event(event) => assert_eq!(event.revision(), base + 6),
        other => panic!("expected the event first, got {other:?}"),
    }
    assert_eq!(
        next_item(&mut watch)
            .await
            .expect("item")
            .expect("progress"),
        WatchItem::Progress(base + 7)
    );
    // A deleted key is an event before the progress past it.
    store
        .delete(Bytes::from_static(b"/a/x"), Guard::Unconditional)
        .await
        .expect("delete");
    watch.request_progress();
    match next_item(&mut watch).await.expect("item").expect("event") {
        WatchItem::Event(event) => {
            assert_eq!(
                (event.kind, event.revision()),
                (EventKind::Delete, base + 8)
            );
        }
        other => panic!("expected the delete first, got {other:?}"),
    }
    assert_eq!(
        next_item(&mut watch)
            .await
            .expect("item")
            .expect("progress"),
        WatchItem::Progress(base + 8)
    );
}

fn parse_counter(value: &[u8]) -> u64 {
    let text = std::str::from_utf8(value).expect("counter is text");
    text.parse().expect("counter is a number")
}

/// Optimistic concurrency under contention (guarantee 3): `tasks` tasks read-modify-write
/// one counter with guarded updates; no increment may be lost.
pub async fn counter_equals_successful_updates(store: Arc<dyn Kv>, tasks: u64, increments: u64) {
    let base = current(store.as_ref()).await;
    let key = Bytes::from_static(b"/counter");
    let created = store
        .create(key.clone(), Bytes::from_static(b"0"))
        .await
        .expect("create");
    assert!(matches!(created, CreateOutcome::Created(_)));

    let mut set = tokio::task::JoinSet::new();
    for _ in 0..tasks {
        let (store, key) = (Arc::clone(&store), key.clone());
        set.spawn(async move {
            let (mut successes, mut conflicts) = (0u64, 0u64);
            while successes < increments {
                let current = store
                    .get(&key, None)
                    .await
                    .expect("get")
                    .kv
                    .expect("counter");
                let value: u64 = parse_counter(&current.value);
                let next = Bytes::from((value + 1).to_string());
                match store
                    .update(key.clone(), next, Guard::ModRevision(current.mod_revision))
                    .await
                    .expect("update")
                {
                    UpdateOutcome::Updated { prev, .. } => {
                        assert_eq!(prev.mod_revision, current.mod_revision);
                        successes += 1;
                    }
                    UpdateOutcome::Conflict(now) => {
                        assert_ne!(now.mod_revision, current.mod_revision);
                        conflicts += 1;
                    }
                    UpdateOutcome::NotFound => panic!("counter vanished"),
                }
                tokio::task::yield_now().await;
            }
            (successes, conflicts)
        });
    }
    let (mut successes, mut conflicts) = (0, 0);
    while let Some(result) = set.join_next().await {
        let (s, c) = result.expect("task");
        successes += s;
        conflicts += c;
    }
    let final_kv = store
        .get(&key, None)
        .await
        .expect("get")
        .kv
        .expect("counter");
    let value: u64 = parse_counter(&final_kv.value);
    eprintln!("{successes} successful guarded updates, {conflicts} conflicts");
    assert_eq!(successes, tasks * increments);
    assert_eq!(value, successes, "an increment was lost");
    // One create plus one revision per successful update; conflicts take none.
    assert_eq!(final_kv.version, successes + 1);
    assert_eq!(current(store.as_ref()).await, base + successes + 1);
}

/// A reader reacting to an event sees at least that event's revision (what a controller that
/// GETs an object after its watch event relies on), with `others` more watchers of the key
/// making each delivery take a while.
pub async fn a_read_after_an_event_sees_at_least_that_revision(
    store: Arc<dyn Kv>,
    writes: u64,
    others: usize,
) {
    let key = Bytes::from_static(b"/read-after-event/k");
    store
        .create(key.clone(), Bytes::from_static(b"0"))
        .await
        .expect("create");
    let start = current(store.as_ref()).await;
    let mut watch = store.watch(key.clone(), start).await.expect("watch");
    let mut other_watches = Vec::new();
    for _ in 0..others {
        other_watches.push(store.watch(key.clone(), start).await.expect("watch"));
    }
    let writer = {
        let store = Arc::clone(&store);
        let key = key.clone();
        tokio::spawn(async move {
            for n in 1..=writes {
                store
                    .update(
                        key.clone(),
                        Bytes::from(n.to_string()),
                        Guard::Unconditional,
                    )
                    .await
                    .expect("update");
            }
        })
    };
    let mut seen = 0;
    while seen < writes {
        let Some(item) = next_item(&mut watch).await else {
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
    drop(other_watches);
}
