//! Reopen and compaction persistence (DESIGN.md, store guarantees 1, 7 and 9): keys, values,
//! revisions, history and the compaction point survive a restart; background compaction
//! honours its retention.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kubemock_storage::{
    Config, CreateOutcome, Error, Guard, Kv, RangeRequest, Retention, SledStore,
};

fn durable(dir: &tempfile::TempDir) -> Config {
    Config::durable(dir.path()).compaction_interval(None)
}

#[tokio::test]
async fn keys_values_revisions_and_compaction_point_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (before, old_snapshot) = {
        let store = SledStore::open(durable(&dir)).expect("open");
        for n in 0..50u64 {
            store
                .create(
                    Bytes::from(format!("/k/{n:02}")),
                    Bytes::from(format!("v{n}")),
                )
                .await
                .expect("create");
        }
        for n in 0..50u64 {
            if n % 3 == 0 {
                store
                    .update(
                        Bytes::from(format!("/k/{n:02}")),
                        Bytes::from(format!("w{n}")),
                        Guard::Unconditional,
                    )
                    .await
                    .expect("update");
            }
            if n % 7 == 0 {
                store
                    .delete(Bytes::from(format!("/k/{n:02}")), Guard::Unconditional)
                    .await
                    .expect("delete");
            }
        }
        store.compact(60).await.expect("compact");
        let old_snapshot = store
            .range(RangeRequest::prefix("/k/").at_revision(65))
            .await
            .expect("range");
        let before = store
            .range(RangeRequest::prefix("/k/"))
            .await
            .expect("range");
        store.close();
        (before, old_snapshot)
    };
    let store = SledStore::open(durable(&dir)).expect("reopen");
    assert_eq!(store.revision(), before.revision);
    assert_eq!(store.compaction_point(), 60);
    let after = store
        .range(RangeRequest::prefix("/k/"))
        .await
        .expect("range");
    assert_eq!(after, before, "latest state after reopen");
    let old_after = store
        .range(RangeRequest::prefix("/k/").at_revision(65))
        .await
        .expect("range");
    assert_eq!(old_after, old_snapshot, "history after reopen");
    assert!(matches!(
        store.get(b"/k/01", Some(59)).await,
        Err(Error::Compacted {
            requested: 59,
            compacted: 60
        })
    ));
    match store
        .create(Bytes::from_static(b"/next"), Bytes::new())
        .await
        .expect("create")
    {
        CreateOutcome::Created(kv) => assert_eq!(kv.mod_revision, before.revision + 1),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn revision_survives_compacting_everything_away() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = SledStore::open(durable(&dir)).expect("open");
        store
            .create(Bytes::from_static(b"/k"), Bytes::new())
            .await
            .expect("create");
        store
            .delete(Bytes::from_static(b"/k"), Guard::Unconditional)
            .await
            .expect("delete");
        // Compacting at the delete removes every record.
        store.compact(2).await.expect("compact");
        store.close();
    }
    let store = SledStore::open(durable(&dir)).expect("reopen");
    assert_eq!((store.revision(), store.compaction_point()), (2, 2));
    match store
        .create(Bytes::from_static(b"/k"), Bytes::new())
        .await
        .expect("create")
    {
        CreateOutcome::Created(kv) => {
            assert_eq!((kv.mod_revision, kv.create_revision, kv.version), (3, 3, 1));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn ephemeral_store_starts_empty_every_time() {
    let store = SledStore::open(Config::ephemeral()).expect("open");
    store
        .create(Bytes::from_static(b"/k"), Bytes::new())
        .await
        .expect("create");
    assert!(!store.is_durable());
    drop(store);
    let store = SledStore::open(Config::ephemeral()).expect("open");
    assert_eq!(store.revision(), 0);
    assert_eq!(store.get(b"/k", None).await.expect("get").kv, None);
}

#[tokio::test]
async fn background_compaction_keeps_the_retained_revisions() {
    let retention = Retention {
        min_revisions: 10,
        min_age: Duration::ZERO,
    };
    let store = SledStore::open(
        Config::ephemeral()
            .retention(retention)
            .compaction_interval(Some(Duration::from_millis(5))),
    )
    .expect("open");
    common::create_keys(&store, "/k/", 100).await;
    let deadline = Instant::now() + common::WAIT;
    while store.compaction_point() < 90 {
        assert!(
            Instant::now() < deadline,
            "background compaction never reached 90"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        store.compaction_point(),
        90,
        "keeps exactly the last 10 revisions"
    );
    // Everything is still readable at the compaction point.
    let snapshot = store
        .range(RangeRequest::prefix("/k/").at_revision(90))
        .await
        .expect("range");
    assert_eq!(snapshot.items.len(), 90);
}

#[tokio::test]
async fn reads_outside_the_window_fail_with_their_own_errors() {
    let store = SledStore::open(Config::ephemeral()).expect("open");
    common::create_keys(&store, "/k/", 5).await;
    store.compact(3).await.expect("compact");
    assert!(matches!(
        store
            .range(RangeRequest::prefix("/k/").at_revision(2))
            .await,
        Err(Error::Compacted {
            requested: 2,
            compacted: 3
        })
    ));
    assert!(matches!(
        store.get(b"/k/1", Some(6)).await,
        Err(Error::FutureRevision {
            requested: 6,
            current: 5
        })
    ));
    assert!(matches!(
        store.compact(6).await,
        Err(Error::FutureRevision { .. })
    ));
    // Compacting below the point is a no-op that reports the point.
    assert_eq!(store.compact(1).await.expect("compact"), 3);
    assert!(
        Error::Compacted {
            requested: 2,
            compacted: 3
        }
        .is_revision_out_of_range()
    );
}
