//! Benchmarks of the [`WorkQueue`]: how many items per second pass through add → get → done.
//!
//! - `workqueue/add_get_done/1_worker`: one task adds [`ITEMS`] distinct keys, then takes and
//!   finishes each (current-thread runtime; no contention).
//! - `workqueue/add_get_done/4_workers`: one producer adds [`ITEMS`] distinct keys while four
//!   worker tasks take and finish them (multi-thread runtime, 2 threads).
//! - `workqueue/add_duplicate`: adds of a key that is already queued (the deduplication path).
//!
//! criterion reports elements/s (one element = one item through add, get and done).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kubemock_client::WorkQueue;
use tokio::runtime::Runtime;

/// Items per iteration.
const ITEMS: u64 = 10_000;

fn keys() -> Vec<String> {
    (0..ITEMS)
        .map(|i| format!("namespace-{}/object-{i}", i % 10))
        .collect()
}

fn add_get_done(c: &mut Criterion) {
    let mut group = c.benchmark_group("workqueue");
    group.throughput(Throughput::Elements(ITEMS));
    let keys = keys();

    let single = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    group.bench_function("add_get_done/1_worker", |b| {
        b.to_async(&single).iter(|| async {
            let queue = WorkQueue::new();
            for key in &keys {
                queue.add(key.clone());
            }
            for _ in 0..ITEMS {
                let item = queue.get().await.expect("item");
                queue.done(black_box(&item));
            }
        });
    });

    let multi: Runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("runtime");
    group.bench_function("add_get_done/4_workers", |b| {
        b.to_async(&multi).iter(|| async {
            let queue = WorkQueue::new();
            let mut workers = tokio::task::JoinSet::new();
            for _ in 0..4 {
                let queue = queue.clone();
                workers.spawn(async move {
                    let mut done = 0u64;
                    while let Some(item) = queue.get().await {
                        queue.done(&item);
                        done += 1;
                    }
                    done
                });
            }
            for key in &keys {
                queue.add(key.clone());
            }
            queue.shutdown_with_drain().await;
            let mut total = 0;
            while let Some(done) = workers.join_next().await {
                total += done.expect("worker");
            }
            assert_eq!(total, ITEMS);
        });
    });

    group.bench_function("add_duplicate", |b| {
        let queue = WorkQueue::new();
        queue.add(keys[0].clone());
        b.iter(|| {
            for _ in 0..ITEMS {
                queue.add(black_box(keys[0].clone()));
            }
        });
    });
    group.finish();
}

criterion_group!(benches, add_get_done);
criterion_main!(benches);
