//! Benchmarks of the sled store ([`SledStore`]) through its [`Kv`] API.
//!
//! What is measured (every input seeded, so runs are comparable):
//! - `put_1KiB/{durable,ephemeral}/{1,8}`: creates of new keys with 1 KiB values, by 1 writer
//!   and by 8 concurrent writers (tokio tasks on a multi-thread runtime with 2 workers). One
//!   iteration is a batch of [`PUT_BATCH`] puts split across the writers; criterion reports
//!   puts/s. Durable stores live in a fresh temporary data directory, so every put waits for
//!   its group-commit flush.
//! - `get/existing_key_of_10k`: a get at the latest revision of an existing key (a seeded
//!   random pick among 10,000 keys with 1 KiB values).
//! - `range_100k/full` and `range_100k/page_500_middle`: a whole-prefix range of 100,000 keys
//!   with ~100 byte values, and a page of 500 keys starting in the middle of them.
//! - `pod_4KiB/{create,get_of_10k,page_500}` (issue 23's memory: values that compress, which
//!   the store keeps LZ4-compressed): creates by one writer (ephemeral) of pod-like JSON values
//!   of about 4 KiB, distinct per key, with managed fields as the API server writes them; a get
//!   of one of 10,000 such keys; a page of 500 of them.
//! - `watch_fan_out/1000_watchers`: one update, from the call until all 1,000 live watchers of
//!   its prefix have received its event (ephemeral store, so no flush is included).
//! - `reopen/100k_keys/{checkpoint,full_log}`: opening a durable data directory holding 100,000
//!   keys with ~100 byte values; `checkpoint`: the key index was checkpointed at close, so open
//!   reads the checkpoint; `full_log`: no checkpoint was ever written, so open reads the whole
//!   history log (as before checkpoints existed). Close and drop are not timed.
//! - `reopen/100k_revisions_10_keys/{checkpoint,full_log}`: the same for a directory whose 10
//!   keys were updated 100,000 times (~100 byte values, nothing compacted).
//! - `reopen/100k_keys_1M_revisions/{checkpoint,checkpoint_compacted}` (issue 23's reopen
//!   goal): 100,000 keys created, then each updated 9 times (1,000,000 revisions, ~100 byte
//!   values); `checkpoint`: all history kept; `checkpoint_compacted`: compacted to the last
//!   10,000 revisions (the default retention's count) before the close. No `full_log` variant:
//!   replaying a million records ten times would take minutes and says nothing new.
//!
//! Background compaction is disabled everywhere so that it does not disturb measurements.
//! Everything runs under the kubemock binary's allocator (mimalloc), as the store does in the
//! server (figures before 2026-11-29 were taken under the system allocator).
//! Read the medians (`target/criterion/<group>/<bench>/new/estimates.json`, `median`).
//!
//! Targets:
//! - durable puts with 8 writers: at least 20,000/s;
//! - ephemeral single-writer puts: at least 70,000/s;
//! - reopen of 100,000 keys: at most 1 s;
//! - reopen of 100,000 live keys after 1,000,000 revisions: at most 100 ms (issue 23).

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use futures_util::StreamExt;
use kubemock_storage::{
    Config, CreateOutcome, DEFAULT_CHECKPOINT_EVERY, Guard, Kv, RangeRequest, SledStore, WatchItem,
};
use tokio::runtime::Runtime;
use tokio::sync::Notify;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Puts per iteration of the put benchmarks (divisible by every writer count).
const PUT_BATCH: u64 = 256;
/// Writer counts of the put benchmarks.
const WRITERS: [u64; 2] = [1, 8];
/// Size of an object-like value.
const LARGE_VALUE: usize = 1024;
/// Size of a small value (range, watch and reopen benchmarks).
const SMALL_VALUE: usize = 100;
/// Keys in the get benchmark's store.
const GET_KEYS: usize = 10_000;
/// Keys in the range and reopen benchmarks' stores.
const MANY_KEYS: usize = 100_000;
/// Keys of the long-history reopen benchmark...
const FEW_KEYS: usize = 10;
/// ... and the revisions written to them.
const LONG_HISTORY: u64 = 100_000;
/// Rounds of updates of every key after its create in the million-revision reopen benchmark.
const UPDATE_ROUNDS: usize = 9;
/// History kept by the compacted variant of that benchmark (the default retention's count).
const RETAINED_REVISIONS: u64 = 10_000;
/// Page size of the paginated range.
const PAGE: usize = 500;
/// Watchers in the fan-out benchmark.
const WATCHERS: usize = 1_000;
/// Concurrent writers that preload a store (many, so that durable preloads share flushes).
const PRELOAD_WRITERS: usize = 64;
/// Seed of every random input.
const SEED: u64 = 0x6b75_6265_6d6f_636b;

/// The runtime every benchmark runs on: multi-threaded with 2 workers (this machine's cores).
fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build the tokio runtime")
}

fn ephemeral() -> SledStore {
    SledStore::open(Config::ephemeral().compaction_interval(None)).expect("open an ephemeral store")
}

fn durable(dir: &Path) -> SledStore {
    SledStore::open(Config::durable(dir).compaction_interval(None)).expect("open a durable store")
}

fn random_bytes(rng: &mut fastrand::Rng, len: usize) -> Bytes {
    let mut buf = vec![0; len];
    rng.fill(&mut buf);
    Bytes::from(buf)
}

/// `count` keys `{prefix}{i:06}`, in key order.
fn keys(prefix: &str, count: usize) -> Vec<Bytes> {
    (0..count)
        .map(|i| Bytes::from(format!("{prefix}{i:06}")))
        .collect()
}

/// Creates `keys` with seeded random values of `value_len` bytes, by [`PRELOAD_WRITERS`]
/// concurrent writers.
async fn preload(store: &SledStore, keys: &[Bytes], value_len: usize) {
    let mut rng = fastrand::Rng::with_seed(SEED);
    let chunk = keys.len().div_ceil(PRELOAD_WRITERS).max(1);
    let mut tasks = Vec::with_capacity(PRELOAD_WRITERS);
    for part in keys.chunks(chunk) {
        let items: Vec<(Bytes, Bytes)> = part
            .iter()
            .map(|key| (key.clone(), random_bytes(&mut rng, value_len)))
            .collect();
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for (key, value) in items {
                let outcome = store.create(key, value).await.expect("preload a key");
                assert!(
                    matches!(outcome, CreateOutcome::Created(_)),
                    "preloaded key already exists"
                );
            }
        }));
    }
    for task in tasks {
        task.await.expect("preload task");
    }
}

/// One writer's share of a put batch: creates `/registry/bench/{writer}/{n}` for `count`
/// consecutive `n` from `first`.
async fn put_run(store: SledStore, writer: u64, first: u64, count: u64, values: Arc<[Bytes]>) {
    for n in first..first + count {
        let key = Bytes::from(format!("/registry/bench/{writer}/{n:012}"));
        let value = values[(n % values.len() as u64) as usize].clone();
        let outcome = store.create(key, value).await.expect("put");
        debug_assert!(matches!(outcome, CreateOutcome::Created(_)));
    }
}

fn bench_puts(c: &mut Criterion) {
    let rt = runtime();
    let mut rng = fastrand::Rng::with_seed(SEED);
    let values: Arc<[Bytes]> = (0..64)
        .map(|_| random_bytes(&mut rng, LARGE_VALUE))
        .collect();
    let mut group = c.benchmark_group("put_1KiB");
    group.throughput(Throughput::Elements(PUT_BATCH));
    // A durable single-writer batch waits for PUT_BATCH flushes: few, long iterations.
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(20);
    for mode in ["durable", "ephemeral"] {
        for writers in WRITERS {
            let dir = tempfile::tempdir().expect("create a data directory");
            let store = match mode {
                "durable" => durable(dir.path()),
                _ => ephemeral(),
            };
            // Next key number of every writer; keys are never reused, so every put is a create.
            let mut next = 0;
            group.bench_with_input(BenchmarkId::new(mode, writers), &writers, |b, &writers| {
                b.to_async(&rt).iter_custom(|iters| {
                    let per_writer = iters * PUT_BATCH / writers;
                    let first = next;
                    next += per_writer;
                    let store = store.clone();
                    let values = Arc::clone(&values);
                    async move {
                        let start = Instant::now();
                        let tasks: Vec<_> = (0..writers)
                            .map(|writer| {
                                tokio::spawn(put_run(
                                    store.clone(),
                                    writer,
                                    first,
                                    per_writer,
                                    Arc::clone(&values),
                                ))
                            })
                            .collect();
                        for task in tasks {
                            task.await.expect("writer task");
                        }
                        start.elapsed()
                    }
                });
            });
            store.close();
            drop(store);
            drop(dir);
        }
    }
    group.finish();
}

fn bench_get(c: &mut Criterion) {
    let rt = runtime();
    let store = ephemeral();
    let keys = keys("/registry/configmaps/default/cm-", GET_KEYS);
    rt.block_on(preload(&store, &keys, LARGE_VALUE));
    let mut rng = fastrand::Rng::with_seed(SEED);
    let mut group = c.benchmark_group("get");
    group.bench_function("existing_key_of_10k", |b| {
        b.to_async(&rt).iter(|| {
            let key = keys[rng.usize(..keys.len())].clone();
            let store = &store;
            async move {
                let response = store.get(&key, None).await.expect("get");
                debug_assert!(response.kv.is_some());
                black_box(response)
            }
        });
    });
    group.finish();
    store.close();
}

/// A pod as the API server stores it, in shape (about 4 KiB of JSON, managed fields included),
/// distinct per `n`.
fn pod_json(n: u64) -> Bytes {
    let mut json = format!(
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"web-{n:06}","namespace":"default","uid":"{n:08x}-7c15-4f4a-9e37-79b97f4a7c15","resourceVersion":"{n}","labels":{{"app":"web","pod-template-hash":"{n:x}"}},"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-5d8f","uid":"0b6f7e52-2d8a-4d55-9c2c-{n:012}","controller":true,"blockOwnerDeletion":true}}],"managedFields":["#
    );
    for manager in ["kube-controller-manager", "kube-scheduler", "kubelet"] {
        json.push_str(&format!(
            r#"{{"manager":"{manager}","operation":"Update","apiVersion":"v1","time":"2026-11-30T06:{:02}:{:02}Z","fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{"f:labels":{{".":{{}},"f:app":{{}},"f:pod-template-hash":{{}}}}}},"f:spec":{{"f:containers":{{"k:{{\"name\":\"web\"}}":{{".":{{}},"f:image":{{}},"f:name":{{}},"f:resources":{{}}}}}},"f:dnsPolicy":{{}},"f:restartPolicy":{{}}}},"f:status":{{"f:conditions":{{"k:{{\"type\":\"Ready\"}}":{{".":{{}},"f:lastTransitionTime":{{}},"f:status":{{}},"f:type":{{}}}}}},"f:phase":{{}},"f:podIP":{{}}}}}}}},"#,
            n % 60,
            (n / 60) % 60
        ));
    }
    json.push_str(&format!(
        r#"{{}}],"creationTimestamp":"2026-11-30T06:00:00Z"}},"spec":{{"nodeName":"kubemock-node-{}","containers":[{{"name":"web","image":"nginx:1.27","resources":{{}},"terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent","volumeMounts":[{{"name":"kube-api-access-{n:05x}","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}}]}}],"restartPolicy":"Always","dnsPolicy":"ClusterFirst","serviceAccountName":"default","tolerations":[{{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}},{{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}}]}},"status":{{"phase":"Running","podIP":"10.0.{}.{}","conditions":["#,
        n % 1000,
        (n / 256) % 256,
        n % 256
    ));
    for condition in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
        json.push_str(&format!(
            r#"{{"type":"{condition}","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-30T06:00:{:02}Z"}},"#,
            n % 60
        ));
    }
    json.push_str(r#"{}]}}"#);
    Bytes::from(json)
}

fn bench_pods(c: &mut Criterion) {
    let rt = runtime();
    let store = ephemeral();
    let prefix = "/registry/pods/default/web-";
    let keys = keys(prefix, GET_KEYS);
    rt.block_on(async {
        for (n, key) in (0..).zip(&keys) {
            store
                .create(key.clone(), pod_json(n))
                .await
                .expect("preload a pod");
        }
    });
    let values: Vec<Bytes> = (0..PUT_BATCH).map(pod_json).collect();
    let mut group = c.benchmark_group("pod_4KiB");
    let mut next = 0u64;
    group.throughput(Throughput::Elements(PUT_BATCH));
    group.bench_function("create", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let first = next;
            next += iters * PUT_BATCH;
            let (store, values) = (&store, &values);
            async move {
                let start = Instant::now();
                for n in first..first + iters * PUT_BATCH {
                    let key = Bytes::from(format!("/registry/pods/bench/web-{n:012}"));
                    let value = values[(n % PUT_BATCH) as usize].clone();
                    black_box(store.create(key, value).await.expect("create"));
                }
                start.elapsed()
            }
        });
    });
    group.throughput(Throughput::Elements(1));
    let mut rng = fastrand::Rng::with_seed(SEED);
    group.bench_function("get_of_10k", |b| {
        b.to_async(&rt).iter(|| {
            let key = keys[rng.usize(..keys.len())].clone();
            let store = &store;
            async move { black_box(store.get(&key, None).await.expect("get")) }
        });
    });
    let page = RangeRequest::prefix(prefix)
        .start_after(keys[GET_KEYS / 2 - 1].clone())
        .limit(PAGE);
    group.throughput(Throughput::Elements(PAGE as u64));
    group.bench_function("page_500", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(store.range(page.clone()).await.expect("range")) });
    });
    group.finish();
    store.close();
}

fn bench_range(c: &mut Criterion) {
    let rt = runtime();
    let store = ephemeral();
    let prefix = "/registry/configmaps/range/cm-";
    let keys = keys(prefix, MANY_KEYS);
    rt.block_on(preload(&store, &keys, SMALL_VALUE));
    let full = RangeRequest::prefix(prefix);
    let page = RangeRequest::prefix(prefix)
        .start_after(keys[MANY_KEYS / 2 - 1].clone())
        .limit(PAGE);
    let check = rt.block_on(store.range(full.clone())).expect("range");
    assert_eq!(check.items.len(), MANY_KEYS);
    let check = rt.block_on(store.range(page.clone())).expect("range");
    assert_eq!(check.items.len(), PAGE);

    let mut group = c.benchmark_group("range_100k");
    // A full range takes tens of milliseconds.
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(20);
    group.throughput(Throughput::Elements(MANY_KEYS as u64));
    group.bench_function("full", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(store.range(full.clone()).await.expect("range")) });
    });
    group.throughput(Throughput::Elements(PAGE as u64));
    group.bench_function("page_500_middle", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(store.range(page.clone()).await.expect("range")) });
    });
    group.finish();
    store.close();
}

fn bench_watch_fan_out(c: &mut Criterion) {
    let rt = runtime();
    let store = ephemeral();
    let prefix = Bytes::from_static(b"/registry/configmaps/watched/");
    let key = Bytes::from_static(b"/registry/configmaps/watched/fan-out");
    let value = random_bytes(&mut fastrand::Rng::with_seed(SEED), SMALL_VALUE);
    rt.block_on(store.create(key.clone(), value.clone()))
        .expect("create the watched key");

    // Every watcher task counts the events it receives; the one that completes a round
    // wakes the benchmark.
    let received = Arc::new(AtomicUsize::new(0));
    let all_received = Arc::new(Notify::new());
    let watchers = rt.block_on(async {
        let after = store.revision();
        let mut tasks = Vec::with_capacity(WATCHERS);
        for _ in 0..WATCHERS {
            let mut watch = store
                .watch(prefix.clone(), after)
                .await
                .expect("start a watch");
            let received = Arc::clone(&received);
            let all_received = Arc::clone(&all_received);
            tasks.push(tokio::spawn(async move {
                // Ends with the store's close.
                while let Some(Ok(item)) = watch.next().await {
                    if let WatchItem::Event(_) = item
                        && received.fetch_add(1, Ordering::AcqRel) + 1 == WATCHERS
                    {
                        all_received.notify_one();
                    }
                }
            }));
        }
        tasks
    });
    assert_eq!(store.live_watchers(), WATCHERS);

    let mut group = c.benchmark_group("watch_fan_out");
    group.bench_function("1000_watchers", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let store = store.clone();
            let key = key.clone();
            let value = value.clone();
            let received = Arc::clone(&received);
            let all_received = Arc::clone(&all_received);
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    received.store(0, Ordering::Release);
                    let start = Instant::now();
                    store
                        .update(key.clone(), value.clone(), Guard::Unconditional)
                        .await
                        .expect("update");
                    while received.load(Ordering::Acquire) < WATCHERS {
                        all_received.notified().await;
                    }
                    total += start.elapsed();
                }
                total
            }
        });
    });
    group.finish();

    store.close();
    rt.block_on(async {
        for task in watchers {
            task.await.expect("watcher task");
        }
    });
}

fn bench_reopen(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("reopen");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    // With the index checkpointed at close, and with no checkpoint ever (so that every open
    // reads the whole log, as before checkpoints existed).
    for (name, checkpoints) in [("checkpoint", true), ("full_log", false)] {
        let config = |dir: &Path| {
            Config::durable(dir)
                .compaction_interval(None)
                .checkpoint_every(if checkpoints {
                    DEFAULT_CHECKPOINT_EVERY
                } else {
                    0
                })
                .checkpoint_at_close(checkpoints)
        };
        // Many keys, no history...
        let many_keys = tempfile::tempdir().expect("create a data directory");
        {
            let store = SledStore::open(config(many_keys.path())).expect("open");
            let keys = keys("/registry/configmaps/reopen/cm-", MANY_KEYS);
            rt.block_on(preload(&store, &keys, SMALL_VALUE));
            store.close();
        }
        // ... and a long history over few keys.
        let long_history = tempfile::tempdir().expect("create a data directory");
        {
            let store = SledStore::open(config(long_history.path())).expect("open");
            rt.block_on(rewrite(&store, FEW_KEYS, LONG_HISTORY));
            store.close();
        }
        for (bench, dir, revision) in [
            ("100k_keys", &many_keys, MANY_KEYS as u64),
            ("100k_revisions_10_keys", &long_history, LONG_HISTORY),
        ] {
            group.bench_function(BenchmarkId::new(bench, name), |b| {
                b.iter_custom(|iters| time_reopens(iters, || config(dir.path()), revision));
            });
        }
    }
    // 100,000 live keys after a million revisions, with the index checkpointed, with all the
    // history and with only the last 10,000 revisions of it.
    let config = |dir: &Path| {
        Config::durable(dir)
            .compaction_interval(None)
            .checkpoint_at_close(true)
    };
    let revisions = (MANY_KEYS * (1 + UPDATE_ROUNDS)) as u64;
    for (name, compact) in [("checkpoint", false), ("checkpoint_compacted", true)] {
        let dir = tempfile::tempdir().expect("create a data directory");
        {
            let store = SledStore::open(config(dir.path())).expect("open");
            let keys = keys("/registry/configmaps/million/cm-", MANY_KEYS);
            rt.block_on(async {
                preload(&store, &keys, SMALL_VALUE).await;
                update_rounds(&store, &keys, UPDATE_ROUNDS).await;
                assert_eq!(store.revision(), revisions);
                if compact {
                    store
                        .compact(revisions - RETAINED_REVISIONS)
                        .await
                        .expect("compact");
                }
            });
            store.close();
        }
        group.bench_function(BenchmarkId::new("100k_keys_1M_revisions", name), |b| {
            b.iter_custom(|iters| time_reopens(iters, || config(dir.path()), revisions));
        });
    }
    group.finish();
}

/// Opens a store `iters` times with `config()` and checks its revision; the time the opens
/// took (not the closes and drops).
fn time_reopens(iters: u64, config: impl Fn() -> Config, revision: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let start = Instant::now();
        let store = SledStore::open(config()).expect("reopen");
        total += start.elapsed();
        assert_eq!(store.revision(), revision);
        store.close();
        drop(store);
    }
    total
}

/// Updates every one of `keys` `rounds` times with seeded random ~100 byte values, by
/// [`PRELOAD_WRITERS`] concurrent writers (each owning a share of the keys).
async fn update_rounds(store: &SledStore, keys: &[Bytes], rounds: usize) {
    let chunk = keys.len().div_ceil(PRELOAD_WRITERS).max(1);
    let mut tasks = Vec::with_capacity(PRELOAD_WRITERS);
    for (writer, part) in keys.chunks(chunk).enumerate() {
        let part = part.to_vec();
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(SEED ^ writer as u64);
            for _ in 0..rounds {
                for key in &part {
                    let value = random_bytes(&mut rng, SMALL_VALUE);
                    store
                        .update(key.clone(), value, Guard::Unconditional)
                        .await
                        .expect("update");
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("writer task");
    }
}

/// Writes `revisions` changes to `keys` keys (`keys` writers, each creating its key, then
/// updating it), with seeded random ~100 byte values.
async fn rewrite(store: &SledStore, keys: usize, revisions: u64) {
    let per_key = revisions / keys as u64;
    let mut tasks = Vec::with_capacity(keys);
    for key in 0..keys {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(SEED ^ key as u64);
            let name = Bytes::from(format!("/registry/configmaps/history/cm-{key}"));
            let outcome = store
                .create(name.clone(), random_bytes(&mut rng, SMALL_VALUE))
                .await
                .expect("create");
            assert!(matches!(outcome, CreateOutcome::Created(_)));
            for _ in 1..per_key {
                let value = random_bytes(&mut rng, SMALL_VALUE);
                store
                    .update(name.clone(), value, Guard::Unconditional)
                    .await
                    .expect("update");
            }
        }));
    }
    for task in tasks {
        task.await.expect("writer task");
    }
}

criterion_group!(
    benches,
    bench_puts,
    bench_get,
    bench_pods,
    bench_range,
    bench_watch_fan_out,
    bench_reopen
);
criterion_main!(benches);
