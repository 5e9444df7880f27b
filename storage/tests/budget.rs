//! Memory is bounded by bytes, not by counts (finding 7 of the reliability review): a 900 KiB
//! object replaced 1,000 times must not leave 1,000 superseded copies behind because the
//! retention keeps 10,000 revisions. The history budget overrides the retention floors
//! (reads and watches of what it dropped get `Compacted`, a 410 at the API), a durable store's
//! large records are read back whole, and a watcher's buffer is bounded in bytes.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kubemock_storage::{
    Config, CreateOutcome, Error, Guard, Kv, RangeRequest, SledStore, UpdateOutcome, WatchItem,
};

/// The object of the finding: 900 KiB.
const LARGE: usize = 900 * 1024;
/// A history budget small enough for a test: a handful of the large objects' versions.
const BUDGET: u64 = 8 * 1024 * 1024;

/// A large value whose first bytes say which version it is, the rest bytes that do not repeat:
/// the store keeps values that compress compressed (`revision.rs`), and these tests count each
/// version at its full size.
fn large_value(version: u64) -> Bytes {
    let mut value = Vec::with_capacity(LARGE);
    value.extend_from_slice(&version.to_be_bytes());
    let mut state = version.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while value.len() < LARGE {
        // xorshift64: a fixed sequence per version, with nothing for LZ4 to find.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        value.extend_from_slice(&state.to_le_bytes());
    }
    value.truncate(LARGE);
    Bytes::from(value)
}

/// Only the budget can compact: the default retention (10,000 revisions, 5 minutes) holds
/// every revision of these tests, and the regular pass is an hour away.
fn budgeted(config: Config) -> Config {
    config
        .compaction_interval(Some(Duration::from_secs(3600)))
        .history_budget(BUDGET)
}

/// Creates `/big` and replaces it `updates` times with guarded updates; returns the revision
/// of the create and of the last update.
async fn rewrite_large_object(store: &SledStore, updates: u64) -> (u64, u64) {
    let key = Bytes::from_static(b"/registry/configmaps/default/big");
    let CreateOutcome::Created(created) = store
        .create(key.clone(), large_value(0))
        .await
        .expect("create")
    else {
        panic!("/big is new");
    };
    let last = replace_large_object(store, created.mod_revision, 1..updates + 1).await;
    (created.mod_revision, last)
}

async fn history_of_large_objects_stays_within_its_byte_budget(store: SledStore, updates: u64) {
    let (created, last) = rewrite_large_object(&store, updates).await;
    // The compactor runs beside the writer: wait (with a deadline) for it to catch up.
    let deadline = Instant::now() + common::WAIT;
    while store.history_bytes() > BUDGET {
        assert!(
            Instant::now() < deadline,
            "history stays at {} bytes, over its budget of {BUDGET}",
            store.history_bytes()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // 1,000 versions of 900 KiB are 880 MiB; the budget holds 9 of them.
    assert!(
        store.history_bytes() <= BUDGET,
        "history {} > budget {BUDGET}",
        store.history_bytes()
    );
    // Under its budget the compactor may still be working down to its low-water mark (when
    // durable, in steps, as revisions are published): a watch it overtakes fails with
    // `Compacted`, as a client's gets a 410, and starts again from the new point.
    let (compacted, events) = loop {
        let compacted = store.compaction_point();
        let watched = match store.watch(Bytes::new(), compacted).await {
            Ok(mut watch) => common::try_events_until(&mut watch, last).await,
            Err(err) => Err(err),
        };
        match watched {
            Ok(events) => break (compacted, events),
            Err(Error::Compacted { .. }) if Instant::now() < deadline => continue,
            Err(err) => panic!("watch from the compaction point {compacted}: {err}"),
        }
    };
    assert!(
        compacted > created && last - compacted < 10,
        "the budget overrides the 10,000-revision floor: compacted at {compacted} of {last}"
    );
    // What it dropped is gone for reads and watches alike (a 410 at the API)...
    assert!(matches!(
        store
            .get(b"/registry/configmaps/default/big", Some(created))
            .await,
        Err(Error::Compacted { .. })
    ));
    assert!(matches!(
        store.watch(Bytes::new(), created).await.map(|_| ()),
        Err(Error::Compacted { .. })
    ));
    // ... what it kept is whole, and the latest value is the last update's.
    common::assert_contiguous(&events, compacted + 1, last);
    for event in &events {
        assert_eq!(event.kv.value.len(), LARGE);
        let prev = event.prev.as_ref().expect("an update has a previous value");
        assert_eq!(prev.value.len(), LARGE);
    }
    let latest = store
        .get(b"/registry/configmaps/default/big", None)
        .await
        .expect("get")
        .kv
        .expect("the object exists");
    assert_eq!(latest.value, large_value(updates));
    assert_eq!(latest.version, updates + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_7_history_of_large_objects_stays_within_its_byte_budget_ephemeral() {
    let store = SledStore::open(budgeted(Config::ephemeral())).expect("open");
    history_of_large_objects_stays_within_its_byte_budget(store, 1_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finding_7_history_of_large_objects_stays_within_its_byte_budget_durable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SledStore::open(budgeted(Config::durable(dir.path()))).expect("open");
    // Fewer than the finding's 1,000 (each is a flush of 900 KiB), still 30 times the budget.
    history_of_large_objects_stays_within_its_byte_budget(store, 300).await;
}

#[tokio::test]
async fn finding_7_a_slow_watcher_of_large_objects_is_cut_off_by_bytes_not_count() {
    const WATCH_BYTES: u64 = 4 * 1024 * 1024;
    const UPDATES: u64 = 20;
    // Room for 1,024 events, but only 4 MiB of them.
    let store = SledStore::open(
        Config::ephemeral()
            .watch_buffer(1024)
            .watch_buffer_bytes(WATCH_BYTES),
    )
    .expect("open");
    let mut slow = store.watch(Bytes::new(), 0).await.expect("watch");
    let (_, last) = rewrite_large_object(&store, UPDATES).await;
    assert_eq!(store.live_watchers(), 0, "the slow watcher was cut off");
    let mut delivered = Vec::new();
    let error = loop {
        match common::next_item(&mut slow).await {
            Some(Ok(WatchItem::Event(event))) => delivered.push(event),
            Some(Err(err)) => break err,
            other => panic!("slow watcher: {other:?}"),
        }
    };
    // A create (900 KiB), then updates (1.8 MiB each, with the previous value): the create and
    // one update fit in 4 MiB, a second update would not.
    assert_eq!(delivered.len(), 2, "events queued within 4 MiB");
    common::assert_contiguous(&delivered, 1, 2);
    assert!(
        matches!(error, Error::WatcherLagged { delivered: 2 }),
        "{error:?}"
    );
    // Resuming replays the rest, however large, in order.
    let mut resumed = store.watch(Bytes::new(), 2).await.expect("resume");
    let rest = common::events_until(&mut resumed, last).await;
    common::assert_contiguous(&rest, 3, last);
}

#[tokio::test]
async fn one_event_larger_than_the_watch_byte_budget_still_reaches_an_idle_watcher() {
    let store = SledStore::open(Config::ephemeral().watch_buffer_bytes(1024)).expect("open");
    let mut watch = store.watch(Bytes::new(), 0).await.expect("watch");
    let (_, last) = rewrite_large_object(&store, 0).await;
    let events = common::events_until(&mut watch, last).await;
    common::assert_contiguous(&events, 1, last);
}

#[tokio::test]
async fn durable_records_of_every_size_read_back_whole_after_reopen() {
    // Around the backend's piece size (8 KiB) and well past it.
    let sizes = [
        0,
        1,
        8 * 1024 - 40,
        8 * 1024,
        8 * 1024 + 1,
        3 * 8 * 1024,
        LARGE,
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let config = || Config::durable(dir.path()).compaction_interval(None);
    let mut written = Vec::new();
    {
        let store = SledStore::open(config()).expect("open");
        for (i, size) in sizes.iter().enumerate() {
            let key = Bytes::from(format!("/k/{i}"));
            let value = Bytes::from(vec![i as u8 + 1; *size]);
            store
                .create(key.clone(), value.clone())
                .await
                .expect("create");
            written.push((key, value));
        }
        // Replace the largest, delete one in pieces, and compact both away.
        store
            .update(
                written[6].0.clone(),
                Bytes::from_static(b"small"),
                Guard::Unconditional,
            )
            .await
            .expect("update");
        store
            .delete(written[5].0.clone(), Guard::Unconditional)
            .await
            .expect("delete");
        let revision = store.revision();
        assert_eq!(store.compact(revision).await.expect("compact"), revision);
        store.close();
    }
    let store = SledStore::open(config()).expect("reopen");
    let all = store
        .range(RangeRequest::prefix("/k/"))
        .await
        .expect("range");
    let got: Vec<(Bytes, Bytes)> = all.items.into_iter().map(|kv| (kv.key, kv.value)).collect();
    let mut want = written[..5].to_vec();
    want.push((written[6].0.clone(), Bytes::from_static(b"small")));
    assert_eq!(got, want);
}

#[tokio::test]
async fn live_and_history_bytes_follow_every_change_and_survive_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = || Config::durable(dir.path()).compaction_interval(None);
    let gauges = |store: &SledStore| {
        let gauges = store.gauges();
        let value = |name: &str| {
            gauges
                .iter()
                .find(|gauge| gauge.name == name)
                .map(|gauge| gauge.value)
        };
        (
            value("kubemock_store_live_bytes"),
            value("kubemock_store_history_bytes"),
        )
    };
    let (a, b) = (Bytes::from_static(b"/k/a"), Bytes::from_static(b"/k/b"));
    let (live, history) = {
        let store = SledStore::open(config()).expect("open");
        assert_eq!((store.live_bytes(), store.history_bytes()), (0, 0));
        store
            .create(a.clone(), Bytes::from(vec![b'a'; 100]))
            .await
            .expect("create a");
        let one = store.live_bytes();
        // A record is its key, its value and a header of fixed length.
        assert!(one > 104, "{one}");
        store
            .create(b.clone(), Bytes::from(vec![b'b'; 10]))
            .await
            .expect("create b");
        assert_eq!(store.live_bytes(), 2 * one - 90);
        assert_eq!(store.history_bytes(), 0);
        // The replaced value becomes history; the new one is live.
        store
            .update(
                a.clone(),
                Bytes::from(vec![b'A'; 150]),
                Guard::Unconditional,
            )
            .await
            .expect("update a");
        assert_eq!(store.live_bytes(), 2 * one - 90 + 50);
        assert_eq!(store.history_bytes(), one);
        // A delete moves the value to history, and its tombstone is history too.
        store
            .delete(b.clone(), Guard::Unconditional)
            .await
            .expect("delete b");
        assert_eq!(store.live_bytes(), one + 50);
        let tombstone = store.history_bytes() - one - (one - 90);
        assert!(tombstone > 4 && tombstone < one, "{tombstone}");
        assert_eq!(
            gauges(&store),
            (Some(store.live_bytes()), Some(store.history_bytes()))
        );
        // Compaction frees history, never the live records.
        let revision = store.revision();
        assert_eq!(store.compact(revision).await.expect("compact"), revision);
        assert_eq!(store.live_bytes(), one + 50);
        assert_eq!(store.history_bytes(), 0);
        store
            .update(
                a.clone(),
                Bytes::from(vec![b'a'; 100]),
                Guard::Unconditional,
            )
            .await
            .expect("update a again");
        let counts = (store.live_bytes(), store.history_bytes());
        assert_eq!(counts, (one, one + 50));
        store.close();
        counts
    };
    // Counted again at open, from the index.
    let store = SledStore::open(config()).expect("reopen");
    assert_eq!((store.live_bytes(), store.history_bytes()), (live, history));
    assert_eq!(gauges(&store), (Some(live), Some(history)));
}

/// Replaces `/big`, last written at `revision`, with each of `versions` in turn; returns the
/// revision of the last.
async fn replace_large_object(
    store: &SledStore,
    mut revision: u64,
    versions: std::ops::Range<u64>,
) -> u64 {
    for version in versions {
        let outcome = store
            .update(
                Bytes::from_static(b"/registry/configmaps/default/big"),
                large_value(version),
                Guard::ModRevision(revision),
            )
            .await
            .expect("update");
        let UpdateOutcome::Updated { kv, .. } = outcome else {
            panic!("the guarded update applies: {outcome:?}");
        };
        revision = kv.mod_revision;
    }
    revision
}

/// Waits until the compactor has finished a pass for the budget after this call.
async fn budget_pass(store: &SledStore, before: u64) {
    let deadline = Instant::now() + common::WAIT;
    while store.budget_passes() <= before {
        assert!(Instant::now() < deadline, "no pass for the budget");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A live watch of a prefix nobody writes (Namespaces, definitions: every server has some)
/// has been given everything up to the published revision, however old its last event: it
/// holds none of the other keys' history from the budget. Its position used to stay at its
/// start for good, so the history of the 100,000-pod benchmark stayed at twice the budget
/// (505-509 MiB for a minute after Ready, against a 256 MiB budget).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_live_watch_holds_no_history_from_the_budget() {
    let store = SledStore::open(budgeted(Config::ephemeral())).expect("open");
    let mut quiet = store
        .watch(Bytes::from_static(b"/registry/namespaces/"), 0)
        .await
        .expect("watch");
    // The create and 13 updates: 11.3 MiB of history, over the 8 MiB budget and under twice
    // it. Nothing holds it, so the compactor cuts it, while these writes go on or after them
    // (when it cut it to under the budget already, no further pass comes: wait for the
    // compaction itself). If the quiet watch still held its start, the whole history would be
    // kept, and the compaction point would stay below the create for good.
    let (created, last) = rewrite_large_object(&store, 13).await;
    let deadline = Instant::now() + common::WAIT;
    while store.compaction_point() <= created {
        assert!(
            Instant::now() < deadline,
            "no compaction for the budget despite the quiet watch: {}",
            store.compaction_point()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The quiet watch goes on: its progress is the latest revision, and a namespace created
    // now is its next event.
    let events = common::events_until(&mut quiet, last).await;
    assert!(events.is_empty());
    let CreateOutcome::Created(namespace) = store
        .create(
            Bytes::from_static(b"/registry/namespaces/quiet"),
            Bytes::from_static(b"{}"),
        )
        .await
        .expect("create")
    else {
        panic!("the namespace is new");
    };
    let events = common::events_until(&mut quiet, namespace.mod_revision).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kv, namespace);
}

/// An open watch that stands behind keeps, from the budget's compaction, the history it has
/// still to read, while the history is under twice the budget (`compaction.rs`,
/// `WATCH_HOLD_LIMIT`); once it has read on, the budget compacts again; past twice the budget
/// the budget wins, and a watch still standing behind fails with `Compacted`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_watch_keeps_the_history_it_has_to_read_up_to_twice_the_budget() {
    let store = SledStore::open(budgeted(Config::ephemeral())).expect("open");
    let mut behind = store.watch(Bytes::new(), 0).await.expect("watch");
    // The create and 12 updates: 10.5 MiB of history, over the 8 MiB budget and under twice it.
    let (created, last) = rewrite_large_object(&store, 12).await;
    assert!(store.history_bytes() > BUDGET && store.history_bytes() <= 2 * BUDGET);
    // A pass for the budget that starts after one more write (so after all of them) leaves
    // everything: without the hold it would compact to the fourth revision at least.
    let passes = store.budget_passes();
    let last = replace_large_object(&store, last, 13..14).await;
    budget_pass(&store, passes).await;
    assert_eq!(
        store.compaction_point(),
        0,
        "nothing compacted under the watch"
    );
    // The watch reads all of it, in order.
    let events = common::events_until(&mut behind, last).await;
    common::assert_contiguous(&events, created, last);
    // Read on, it no longer holds anything: the next pass compacts for the budget.
    let passes = store.budget_passes();
    let last = replace_large_object(&store, last, 14..15).await;
    budget_pass(&store, passes).await;
    assert!(
        store.compaction_point() > created,
        "compacted once the watch read on"
    );
    let events = common::events_until(&mut behind, last).await;
    assert_eq!(events.len(), 1);
    drop(behind);

    // Past twice the budget, the budget wins over a watch standing behind: only the budget
    // can compact here (the retention keeps 10,000 revisions), so a compaction past where the
    // watch stands is the budget's. The history then need not stay under the budget: the
    // writes go on after that pass, and the stuck watch, not read until it fails, holds again
    // what they add up to twice the budget.
    let standing = store.compaction_point();
    let mut stuck = store.watch(Bytes::new(), standing).await.expect("watch");
    replace_large_object(&store, last, 15..45).await;
    let deadline = Instant::now() + common::WAIT;
    while store.compaction_point() <= standing {
        assert!(
            Instant::now() < deadline,
            "still compacted at {} with {} bytes of history",
            store.compaction_point(),
            store.history_bytes()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let error = loop {
        match common::next_item(&mut stuck).await {
            Some(Ok(WatchItem::Event(_))) => {}
            Some(Err(err)) => break err,
            other => panic!("the stuck watch: {other:?}"),
        }
    };
    assert!(matches!(error, Error::Compacted { .. }), "{error:?}");
}

/// A pod-like JSON value of some 4 KB that compresses, distinct per `n`.
fn compressible_value(n: u64) -> Bytes {
    let mut json = format!(r#"{{"kind":"Pod","metadata":{{"name":"web-{n}","managedFields":["#);
    for manager in 0..12 {
        json.push_str(&format!(
            r#"{{"manager":"manager-{manager}","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{{"f:status":{{"f:conditions":{{".":{{}}}},"f:phase":{{}}}}}}}},"#
        ));
    }
    json.push_str(&format!(r#"{{}}]}},"status":{{"version":{n}}}}}"#));
    Bytes::from(json)
}

/// Values that compress are kept compressed in their records (`revision.rs`): the live and
/// history bytes count the smaller records, and every read gives the values back as written,
/// in memory and from disk after a reopen: a get, a page, a watch from history with its
/// previous values, and a live watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_values_read_back_as_written_through_every_path_and_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = || Config::durable(dir.path()).compaction_interval(None);
    let (live, last) = {
        let store = SledStore::open(config()).expect("open");
        for n in 0..10 {
            store
                .create(pod_key(n), compressible_value(n))
                .await
                .expect("create");
        }
        let mut last = 0;
        for n in 0..10 {
            let outcome = store
                .update(
                    pod_key(n),
                    compressible_value(100 + n),
                    Guard::Unconditional,
                )
                .await
                .expect("update");
            let UpdateOutcome::Updated { kv, prev } = outcome else {
                panic!("the key exists: {outcome:?}");
            };
            assert_eq!(prev.value, compressible_value(n));
            last = kv.mod_revision;
        }
        // Ten records of the values' size and more would be over this.
        let written: usize = (0..10).map(|n| compressible_value(100 + n).len()).sum();
        let live = store.live_bytes();
        assert!(
            live < u64::try_from(written / 2).expect("small"),
            "{live} bytes of records for {written} bytes of values"
        );
        check_compressed_reads(&store, last).await;
        // A live watch gets the value as written.
        let mut watch = store.watch(Bytes::new(), last).await.expect("watch");
        let outcome = store
            .update(pod_key(0), compressible_value(100), Guard::Unconditional)
            .await
            .expect("rewrite");
        let UpdateOutcome::Updated { kv, .. } = outcome else {
            panic!("the key exists: {outcome:?}");
        };
        let events = common::events_until(&mut watch, kv.mod_revision).await;
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].kv.value, compressible_value(100));
        store
            .update(pod_key(0), compressible_value(100), Guard::Unconditional)
            .await
            .expect("rewrite");
        store.close();
        (live, last)
    };
    let store = SledStore::open(config()).expect("reopen");
    assert_eq!(store.live_bytes(), live);
    check_compressed_reads(&store, last).await;
}

fn pod_key(n: u64) -> Bytes {
    Bytes::from(format!("/registry/pods/default/web-{n}"))
}

/// After ten creates (`compressible_value(n)`) and ten updates (`compressible_value(100 + n)`),
/// the last at `last`: every read path gives the values as written.
async fn check_compressed_reads(store: &SledStore, last: u64) {
    for n in 0..10 {
        let got = store.get(&pod_key(n), None).await.expect("get").kv;
        assert_eq!(got.expect("live").value, compressible_value(100 + n));
    }
    let page = store
        .range(RangeRequest::prefix(&b"/registry/pods/"[..]).limit(4))
        .await
        .expect("range");
    let values: Vec<_> = page.items.into_iter().map(|kv| kv.value).collect();
    let expected: Vec<_> = [0, 1, 2, 3].map(|n| compressible_value(100 + n)).into();
    assert_eq!(values, expected);
    assert_eq!(page.remaining, 6);
    // From the start of history: each create, then each update with the create as its
    // previous value.
    let mut watch = store.watch(Bytes::new(), 0).await.expect("watch");
    let mut events = common::events_until(&mut watch, last).await;
    events.retain(|event| event.revision() <= last);
    assert_eq!(events.len(), 20);
    for (n, event) in (0..10).chain(0..10).zip(&events[..]) {
        if event.prev.is_none() {
            assert_eq!(event.kv.value, compressible_value(n));
        } else {
            assert_eq!(event.kv.value, compressible_value(100 + n));
            let prev = event.prev.as_ref().map(|prev| &prev.value);
            assert_eq!(prev, Some(&compressible_value(n)));
        }
    }
    assert!(events[..10].iter().all(|event| event.prev.is_none()));
    assert!(events[10..].iter().all(|event| event.prev.is_some()));
}
