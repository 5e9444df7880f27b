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
//! Printed once, outside criterion:
//! - where a sync's time goes: the server's answer to the full list, and decoding it;
//! - memory per cached object: the growth of the resident set size (`/proc/self/statm`) while
//!   100,000 separately encoded ConfigMaps are decoded and applied to a [`Store`], divided by
//!   the count (no workspace `unsafe`, so no counting allocator).

use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubemock_apiserver::TestServer;
use kubemock_client::reflector::Writer;
use kubemock_client::request::RequestBuilder;
use kubemock_client::watcher::Event;
use kubemock_client::watcher::{self, InitialList};
use kubemock_client::{
    Api, Client, Config, ListParams, ObjectList, PostParams, SharedInformer, Store,
};
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

    // Where the time of a sync goes: the server's answer, decoding it.
    let items = runtime.block_on(async {
        let request = RequestBuilder::new(api.resource().collection_path(api.namespace()))
            .list(&ListParams::default().at("0", None))
            .expect("no field selector to refuse");
        let started = Instant::now();
        let bytes = api.client().request_bytes(&request).await.expect("list");
        let fetched = started.elapsed();
        let started = Instant::now();
        let list: ObjectList<ConfigMap> = serde_json::from_slice(&bytes).expect("decode");
        eprintln!(
            "full list at resourceVersion=0: server answer {fetched:?} ({:.1} MiB), decode {:?}",
            bytes.len() as f64 / 1048576.0,
            started.elapsed()
        );
        list.items
    });

    // Memory per cached object: every object encoded on its own beforehand; then the RSS
    // growth while each is decoded and applied to a store (what an informer's cache holds:
    // the objects, the key map and the namespace index).
    let encoded: Vec<Vec<u8>> = items
        .iter()
        .map(|cm| serde_json::to_vec(cm).expect("encode"))
        .collect();
    drop(items);
    let before = rss();
    let mut writer = Writer::new(Store::<ConfigMap>::new());
    for bytes in &encoded {
        let cm: ConfigMap = serde_json::from_slice(bytes).expect("decode");
        writer.apply(Event::Apply(cm));
    }
    let after = rss();
    assert_eq!(writer.store().len(), OBJECTS);
    if let (Some(before), Some(after)) = (before, after) {
        eprintln!(
            "store of {OBJECTS} ConfigMaps (~{} bytes of JSON each): RSS +{:.1} MiB = {} bytes per cached object",
            encoded.iter().map(Vec::len).sum::<usize>() / OBJECTS,
            after.saturating_sub(before) as f64 / 1048576.0,
            after.saturating_sub(before) / OBJECTS as u64
        );
    }
    drop(writer);
    drop(encoded);

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
