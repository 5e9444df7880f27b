//! Benchmarks of informers against a local in-process kubemock server holding
//! [`OBJECTS`] ConfigMaps (seeded once, [`SEED_WRITERS`] concurrent creates).
//!
//! - `informer/initial_sync_100k/rv0_full_list`: a new informer lists with
//!   `resourceVersion=0` (client-go's default: the server answers the whole list at once) and
//!   fills its cache; timed until `has_synced`.
//! - `informer/initial_sync_100k/paginated_500`: the same with a consistent, paginated list
//!   (500 per page, kube-rs's default).
//!
//! Target: an initial sync of 100,000 objects in at most 2 s.
//!
//! Memory per cached object is measured once, outside criterion, and printed: the resident
//! set size (`/proc/self/statm`) before and after an informer synced, divided by the object
//! count. The server runs in the same process, so the figure also counts what the list
//! answer left behind in freed-but-retained heap; it is an upper bound of the cache's cost.

use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubemock_apiserver::TestServer;
use kubemock_client::watcher::{self, InitialList};
use kubemock_client::{Api, Client, Config, PostParams, SharedInformer};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

/// Objects in the server.
const OBJECTS: usize = 100_000;
/// Concurrent creates while seeding.
const SEED_WRITERS: usize = 64;

fn configmap(i: usize) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("cm-{i:06}")),
            labels: Some([("app".to_owned(), format!("app-{}", i % 100))].into()),
            ..ObjectMeta::default()
        },
        data: Some([("key".to_owned(), format!("value-{i}"))].into()),
        ..ConfigMap::default()
    }
}

async fn seed(api: &Api<ConfigMap>) {
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..SEED_WRITERS {
        let api = api.clone();
        let next = next.clone();
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= OBJECTS {
                    break;
                }
                api.create(&PostParams::default(), &configmap(i))
                    .await
                    .expect("create");
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("seeder");
    }
}

/// Syncs a new informer; returns it and the time from its start until it had synced.
async fn sync(api: &Api<ConfigMap>, initial: InitialList) -> (SharedInformer<ConfigMap>, Duration) {
    let started = Instant::now();
    let informer = SharedInformer::new(
        api.clone(),
        watcher::Config::default().initial_list(initial),
    );
    let token = CancellationToken::new();
    let run = tokio::spawn({
        let informer = informer.clone();
        let token = token.clone();
        async move { informer.run(token).await }
    });
    informer.wait_for_sync().await;
    let elapsed = started.elapsed();
    assert_eq!(informer.store().len(), OBJECTS);
    token.cancel();
    run.await.expect("informer stops");
    (informer, elapsed)
}

/// Resident set size in bytes.
fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn informer(c: &mut Criterion) {
    let runtime: Runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (server, api) = runtime.block_on(async {
        let server = TestServer::start().await.expect("server");
        let client = Client::new(Config::new(server.url())).expect("client");
        let api: Api<ConfigMap> = Api::namespaced(client, "default");
        let seeding = Instant::now();
        seed(&api).await;
        eprintln!("seeded {OBJECTS} ConfigMaps in {:?}", seeding.elapsed());
        (server, api)
    });

    // Memory per cached object: a warm-up sync first (server-side buffers and caches), then
    // one measured sync whose informer is kept.
    runtime.block_on(async {
        drop(sync(&api, InitialList::Any).await);
        let before = rss();
        let (informer, elapsed) = sync(&api, InitialList::Any).await;
        let after = rss();
        if let (Some(before), Some(after)) = (before, after) {
            eprintln!(
                "informer sync of {OBJECTS} objects: {elapsed:?}; RSS +{:.1} MiB = {} bytes per cached object",
                after.saturating_sub(before) as f64 / 1048576.0,
                after.saturating_sub(before) / OBJECTS as u64
            );
        }
        drop(informer);
    });

    let mut group = c.benchmark_group("informer");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.measurement_time(Duration::from_secs(20));
    for (name, initial) in [
        ("rv0_full_list", InitialList::Any),
        ("paginated_500", InitialList::MostRecent),
    ] {
        group.bench_function(format!("initial_sync_100k/{name}"), |b| {
            b.to_async(&runtime).iter_custom(|iterations| {
                let api = api.clone();
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iterations {
                        let (informer, elapsed) = sync(&api, initial).await;
                        total += elapsed;
                        drop(informer);
                    }
                    total
                }
            });
        });
    }
    group.finish();
    drop(server);
}

criterion_group!(benches, informer);
criterion_main!(benches);
