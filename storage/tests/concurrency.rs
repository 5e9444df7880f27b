//! Optimistic concurrency under contention (docs/store.md#guarantees, 3): many tasks
//! read-modify-write one counter with guarded updates; no increment may be lost.

mod common;

use bytes::Bytes;
use kubemock_storage::{Config, CreateOutcome, Guard, Kv, SledStore, UpdateOutcome};

const TASKS: u64 = 16;
const INCREMENTS_PER_TASK: u64 = 50;

fn parse_counter(value: &[u8]) -> u64 {
    let text = std::str::from_utf8(value).expect("counter is text");
    text.parse().expect("counter is a number")
}

async fn counter_equals_successful_updates(store: SledStore) {
    let key = Bytes::from_static(b"/counter");
    let created = store
        .create(key.clone(), Bytes::from_static(b"0"))
        .await
        .expect("create");
    assert!(matches!(created, CreateOutcome::Created(_)));

    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..TASKS {
        let (store, key) = (store.clone(), key.clone());
        tasks.spawn(async move {
            let (mut successes, mut conflicts) = (0u64, 0u64);
            while successes < INCREMENTS_PER_TASK {
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
    while let Some(result) = tasks.join_next().await {
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
    assert_eq!(successes, TASKS * INCREMENTS_PER_TASK);
    assert_eq!(value, successes, "an increment was lost");
    // One create plus one revision per successful update; conflicts take none.
    assert_eq!(final_kv.version, successes + 1);
    assert_eq!(store.revision(), successes + 1);
    store.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn guarded_increments_are_never_lost_ephemeral() {
    counter_equals_successful_updates(SledStore::open(Config::ephemeral()).expect("open")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn guarded_increments_are_never_lost_durable() {
    let dir = tempfile::tempdir().expect("tempdir");
    counter_equals_successful_updates(SledStore::open(Config::durable(dir.path())).expect("open"))
        .await;
}
