//! Optimistic concurrency under contention (docs/store.md#guarantees, 3) on the sled store:
//! many tasks read-modify-write one counter with guarded updates; no increment may be lost
//! (`common::suite::counter_equals_successful_updates`, also run on etcd).

mod common;

use std::sync::Arc;

use kubemock_storage::{Config, Kv, SledStore};

const TASKS: u64 = 16;
const INCREMENTS_PER_TASK: u64 = 50;

async fn counter_equals_successful_updates(store: SledStore) {
    let shared: Arc<dyn Kv> = Arc::new(store.clone());
    common::suite::counter_equals_successful_updates(shared, TASKS, INCREMENTS_PER_TASK).await;
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
