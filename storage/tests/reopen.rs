//! Reopen and compaction persistence (docs/store.md#guarantees, 1, 7 and 9): keys, values,
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

/// Puts `rounds` new values on each of `keys` keys (creating them first): `keys * rounds`
/// revisions of history over a few live keys.
async fn churn(store: &SledStore, keys: u64, rounds: u64) {
    for round in 0..rounds {
        for n in 0..keys {
            let key = Bytes::from(format!("/k/{n:02}"));
            let value = Bytes::from(format!("v{round}"));
            if round == 0 && store.get(&key, None).await.expect("get").kv.is_none() {
                store.create(key, value).await.expect("create");
            } else {
                store
                    .update(key, value, Guard::Unconditional)
                    .await
                    .expect("update");
            }
        }
    }
}

#[tokio::test]
async fn finding_8_reopen_reads_the_index_checkpoint_and_only_the_history_after_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = |at_close| {
        durable(&dir)
            .checkpoint_every(0)
            .checkpoint_at_close(at_close)
    };
    // 3,000 revisions over 10 keys, closed cleanly: the close checkpoints the index.
    let (latest, old) = {
        let store = SledStore::open(config(true)).expect("open");
        churn(&store, 10, 300).await;
        let latest = store
            .range(RangeRequest::prefix("/k/"))
            .await
            .expect("range");
        let old = store
            .range(RangeRequest::prefix("/k/").at_revision(1_500))
            .await
            .expect("range");
        store.close();
        (latest, old)
    };
    {
        let store = SledStore::open(config(false)).expect("reopen");
        assert_eq!(store.checkpoint_revision(), 3_000);
        assert_eq!(
            store.replayed_at_open(),
            0,
            "no history read beyond the checkpoint"
        );
        let range = |revision| {
            let request = RangeRequest::prefix("/k/");
            let store = store.clone();
            async move {
                let request = match revision {
                    Some(revision) => request.at_revision(revision),
                    None => request,
                };
                store.range(request).await.expect("range")
            }
        };
        assert_eq!(
            range(None).await,
            latest,
            "latest state from the checkpoint"
        );
        assert_eq!(range(Some(1_500)).await, old, "history from the checkpoint");
        // A checkpoint at 5,500, then 100 more writes, then a close without one (a crash).
        churn(&store, 10, 250).await;
        assert_eq!(store.checkpoint().expect("checkpoint"), 5_500);
        churn(&store, 10, 10).await;
        store.close();
    }
    let store = SledStore::open(config(false)).expect("reopen");
    assert_eq!(store.revision(), 5_600);
    assert_eq!(store.checkpoint_revision(), 5_500);
    assert_eq!(
        store.replayed_at_open(),
        100,
        "only the history after the checkpoint"
    );
    let kv = store
        .get(b"/k/07", None)
        .await
        .expect("get")
        .kv
        .expect("live");
    assert_eq!(
        (kv.value, kv.mod_revision, kv.version),
        ("v9".into(), 5_598, 560)
    );
    let at_4000 = store.get(b"/k/09", Some(4_000)).await.expect("get").kv;
    assert_eq!(at_4000.map(|kv| kv.mod_revision), Some(4_000));
}

/// A compaction after the last checkpoint leaves that checkpoint listing what it removed: a
/// clean close must checkpoint again, even with no write since, or every open compacts the
/// same entries again and removes their records from the log once more (issue 23: a million
/// revisions compacted to the last 10,000 made each reopen take 720 ms instead of 70).
#[tokio::test]
async fn a_close_after_a_compaction_checkpoints_so_that_open_removes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = |at_close| {
        durable(&dir)
            .checkpoint_every(0)
            .checkpoint_at_close(at_close)
    };
    {
        let store = SledStore::open(config(true)).expect("open");
        churn(&store, 10, 300).await;
        // The compaction checkpoints at 3,000 first (its rule), then removes 2,980 records.
        assert_eq!(store.compact(2_990).await.expect("compact"), 2_990);
        assert_eq!(store.checkpoint_revision(), 3_000);
        store.close();
    }
    {
        let store = SledStore::open(config(false)).expect("reopen");
        assert_eq!(store.revision(), 3_000);
        assert_eq!(store.removed_at_open(), 0, "the close checkpointed");
        assert_eq!(store.replayed_at_open(), 0);
        // A compaction, then a crash (no checkpoint at close, none due by count).
        churn(&store, 10, 10).await;
        assert_eq!(store.compact(3_095).await.expect("compact"), 3_095);
        store.close();
    }
    {
        let store = SledStore::open(config(true)).expect("reopen after a crash");
        assert_eq!(store.revision(), 3_100);
        assert!(
            store.removed_at_open() > 0,
            "the checkpoint at 3,000 still listed what the compaction at 3,095 removed"
        );
        let kv = store
            .get(b"/k/03", None)
            .await
            .expect("get")
            .kv
            .expect("live");
        assert_eq!(kv.mod_revision, 3_094);
        store.close();
    }
    // Its clean close wrote a checkpoint without them.
    let store = SledStore::open(config(false)).expect("reopen");
    assert_eq!(store.removed_at_open(), 0);
    assert_eq!(store.compacted_revision().await.expect("point"), 3_095);
    assert_eq!(
        store
            .get(b"/k/03", Some(3_000))
            .await
            .err()
            .map(|err| matches!(err, Error::Compacted { .. })),
        Some(true)
    );
}

#[tokio::test]
async fn the_index_is_checkpointed_every_so_many_revisions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SledStore::open(durable(&dir).checkpoint_every(100)).expect("open");
    churn(&store, 5, 100).await;
    // The checkpointer runs beside the writers: wait (with a deadline) for it.
    let deadline = Instant::now() + common::WAIT;
    while store.checkpoint_revision() < 400 {
        assert!(
            Instant::now() < deadline,
            "no checkpoint past 400 (last at {})",
            store.checkpoint_revision()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ephemeral = SledStore::open(Config::ephemeral()).expect("open");
    common::create_keys(&ephemeral, "/k/", 10).await;
    assert_eq!(ephemeral.checkpoint().expect("a no-op"), 0);
    assert_eq!(ephemeral.checkpoint_revision(), 0);
}

#[tokio::test]
async fn changes_compacted_away_after_a_checkpoint_stay_away_after_a_crash() {
    // A checkpoint names /k/a live; after it /k/a is deleted and compaction removes both its
    // value and its tombstone. Reopened without a checkpoint at close (as after a crash), the
    // store must not bring /k/a back from the older checkpoint.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = || durable(&dir).checkpoint_every(0).checkpoint_at_close(false);
    let before = {
        let store = SledStore::open(config()).expect("open");
        for key in ["/k/a", "/k/b", "/k/c"] {
            store.create(key.into(), "1".into()).await.expect("create");
        }
        assert_eq!(store.checkpoint().expect("checkpoint"), 3);
        store
            .delete("/k/a".into(), Guard::Unconditional)
            .await
            .expect("delete");
        store
            .update("/k/b".into(), "2".into(), Guard::Unconditional)
            .await
            .expect("update");
        assert_eq!(store.compact(5).await.expect("compact"), 5);
        assert!(
            store.checkpoint_revision() >= 5,
            "compaction checkpoints at or past its point before it removes anything"
        );
        store
            .create("/k/d".into(), "1".into())
            .await
            .expect("create");
        let before = store
            .range(RangeRequest::prefix("/k/"))
            .await
            .expect("range");
        store.close();
        before
    };
    let store = SledStore::open(config()).expect("reopen");
    assert_eq!((store.revision(), store.compaction_point()), (6, 5));
    let after = store
        .range(RangeRequest::prefix("/k/"))
        .await
        .expect("range");
    assert_eq!(after, before);
    let keys: Vec<_> = after.items.iter().map(|kv| kv.key.clone()).collect();
    assert_eq!(keys, vec!["/k/b", "/k/c", "/k/d"]);
}
