//! Informers against an in-process kubemock server: initial sync of many objects, every change
//! delivered once and in order to every handler under concurrent writers, and a relist after
//! the store was compacted past the reflector's resourceVersion (docs/api-behaviour.md#expired-watches, #how-clients-recover).

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kubemock_client::informer::Handlers;
use kubemock_client::watcher::{self, InitialList};
use kubemock_client::{
    Api, ApiResource, DeleteParams, InformerFactory, ListParams, Patch, PatchParams, PostParams,
    SharedInformer, Transform,
};
use kubemock_storage::Kv;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use common::{Proxy, client_for, configmap, create_configmaps, namespace, server, wait_until};

/// Key -> resourceVersion of every object the server lists.
async fn server_state(api: &Api<ConfigMap>) -> BTreeMap<String, String> {
    api.list_all(&ListParams::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(|cm| {
            (
                cm.metadata.name.clone().unwrap_or_default(),
                cm.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn cache_state(informer: &SharedInformer<ConfigMap>) -> BTreeMap<String, String> {
    informer
        .store()
        .list()
        .iter()
        .map(|cm| {
            (
                cm.metadata.name.clone().unwrap_or_default(),
                cm.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn start(
    informer: &SharedInformer<ConfigMap>,
    token: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let informer = informer.clone();
    let token = token.clone();
    tokio::spawn(async move { informer.run(token).await })
}

/// Starts `informer`, waits for its initial sync, then creates `watched` (a ConfigMap named
/// `watched` in `default`) and waits until the informer has cached it from its watch.
async fn sync_then_watch(
    informer: &SharedInformer<ConfigMap>,
    api: &Api<ConfigMap>,
    watched: &ConfigMap,
    token: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let run = start(informer, token);
    tokio::time::timeout(Duration::from_secs(30), informer.wait_for_sync())
        .await
        .expect("synced");
    api.create(&PostParams::default(), watched)
        .await
        .expect("create");
    wait_until(Duration::from_secs(10), "the watched object", || async {
        informer
            .store()
            .get_by(Some("default"), "watched")
            .is_some()
    })
    .await;
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_syncs_ten_thousand_objects() {
    const OBJECTS: usize = 10_000;
    let (_server, client) = server().await;
    namespace(&client, "many").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "many");
    let seeding = Instant::now();
    create_configmaps(&api, "cm", OBJECTS, 16).await;
    eprintln!("seeded {OBJECTS} objects in {:?}", seeding.elapsed());

    for initial in [InitialList::MostRecent, InitialList::Any] {
        let informer = SharedInformer::new(
            api.clone(),
            watcher::Config::default().initial_list(initial),
        );
        let token = CancellationToken::new();
        let run = start(&informer, &token);
        let syncing = Instant::now();
        tokio::time::timeout(Duration::from_secs(60), informer.wait_for_sync())
            .await
            .expect("synced in time");
        eprintln!(
            "{initial:?}: synced {OBJECTS} objects in {:?}",
            syncing.elapsed()
        );
        assert_eq!(informer.store().len(), OBJECTS);
        assert_eq!(cache_state(&informer), server_state(&api).await);
        assert_eq!(informer.store().list_namespace("many").len(), OBJECTS);
        token.cancel();
        run.await.expect("informer stops");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_list_informer_syncs_and_follows_changes() {
    let (_server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    create_configmaps(&api, "s", 50, 4).await;
    let informer = SharedInformer::new(api.clone(), watcher::Config::default().streaming_list());
    let token = CancellationToken::new();
    let run = start(&informer, &token);
    tokio::time::timeout(Duration::from_secs(30), informer.wait_for_sync())
        .await
        .expect("synced");
    assert_eq!(cache_state(&informer), server_state(&api).await);
    api.create(&PostParams::default(), &configmap("late", "1"))
        .await
        .expect("create");
    wait_until(Duration::from_secs(10), "the new object", || async {
        informer.store().get_by(Some("default"), "late").is_some()
    })
    .await;
    token.cancel();
    run.await.expect("informer stops");
}

/// `InformerFactory::metadata` (client-go's metadata informer): the cache holds
/// `PartialObjectMetadata`, listed and watched, with the objects' labels, uid and
/// resourceVersion and nothing of their data; updates and deletions arrive as well; and the
/// resource's full informer from the same factory is a different one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metadata_informer_caches_metadata_alone() {
    let (_server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let labelled = |name: &str| {
        let mut cm = configmap(name, "a value the metadata informer never holds");
        cm.metadata.labels = Some([("app".to_owned(), name.to_owned())].into());
        cm
    };
    let listed = api
        .create(&PostParams::default(), &labelled("listed"))
        .await
        .expect("create");
    let factory = InformerFactory::new(client.clone());
    let resource = ApiResource::of::<ConfigMap>();
    let informer = factory.metadata(&resource);
    let full = factory.dynamic(&resource);
    let token = CancellationToken::new();
    factory.start(&token);
    tokio::time::timeout(Duration::from_secs(30), factory.wait_for_sync())
        .await
        .expect("synced");
    let watched = api
        .create(&PostParams::default(), &labelled("watched"))
        .await
        .expect("create");
    wait_until(
        Duration::from_secs(10),
        "the watched object in both caches",
        || async {
            informer
                .store()
                .get_by(Some("default"), "watched")
                .is_some()
                && full.store().get_by(Some("default"), "watched").is_some()
        },
    )
    .await;
    for (name, created) in [("listed", &listed), ("watched", &watched)] {
        let cached = informer
            .store()
            .get_by(Some("default"), name)
            .expect("cached");
        assert_eq!(cached.kind, "PartialObjectMetadata", "{name}");
        assert_eq!(cached.api_version, "meta.k8s.io/v1", "{name}");
        assert_eq!(cached.metadata.uid, created.metadata.uid, "{name}");
        assert_eq!(
            cached.metadata.resource_version, created.metadata.resource_version,
            "{name}"
        );
        assert_eq!(
            cached
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app"))
                .map(String::as_str),
            Some(name)
        );
        assert!(
            cached.data.is_empty(),
            "{name}: no data but metadata: {:?}",
            cached.data
        );
        // The full informer of the same factory is another one: it holds the whole object.
        let whole = full
            .store()
            .get_by(Some("default"), name)
            .expect("in the full informer's cache");
        assert!(whole.data.contains_key("data"), "{name}: {whole:?}");
    }
    // A change of metadata, then a deletion, reach the metadata cache.
    api.patch(
        "watched",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"labels": {"app": "changed"}}})),
    )
    .await
    .expect("patch");
    wait_until(Duration::from_secs(10), "the changed label", || async {
        informer
            .store()
            .get_by(Some("default"), "watched")
            .and_then(|cm| cm.metadata.labels.as_ref()?.get("app").cloned())
            .as_deref()
            == Some("changed")
    })
    .await;
    api.delete("listed", &DeleteParams::default())
        .await
        .expect("delete");
    wait_until(Duration::from_secs(10), "the deletion", || async {
        informer.store().get_by(Some("default"), "listed").is_none()
    })
    .await;
    token.cancel();
}

/// `Transform::DropManagedFields` (kube-controller-manager's `trim`): the listed objects, the
/// watched ones and what handlers get come without managed fields; the server keeps them, also
/// through an update written from the trimmed copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_can_cache_objects_without_managed_fields() {
    let (_server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &configmap("listed", "1"))
        .await
        .expect("create");
    let informer = SharedInformer::with_transform(
        api.clone(),
        watcher::Config::default(),
        Transform::DropManagedFields,
    );
    let handed: Arc<Mutex<Vec<bool>>> = Arc::default();
    let seen = handed.clone();
    informer.add_handler(Handlers::new().on_add(move |cm: &Arc<ConfigMap>| {
        seen.lock().push(cm.metadata.managed_fields.is_some());
    }));
    let token = CancellationToken::new();
    let run = sync_then_watch(&informer, &api, &configmap("watched", "1"), &token).await;
    wait_until(Duration::from_secs(10), "both handed out", || async {
        handed.lock().len() == 2
    })
    .await;
    assert_eq!(
        *handed.lock(),
        vec![false, false],
        "handlers get trimmed objects"
    );
    for name in ["listed", "watched"] {
        let cached = informer
            .store()
            .get_by(Some("default"), name)
            .expect("cached");
        assert!(cached.metadata.managed_fields.is_none(), "{name} trimmed");
        let stored = api.get(name).await.expect("get");
        assert!(
            stored.metadata.managed_fields.is_some(),
            "{name} on the server"
        );
    }
    // An update from the trimmed copy leaves the server's managed fields in place.
    let mut update = (*informer
        .store()
        .get_by(Some("default"), "watched")
        .expect("cached"))
    .clone();
    update.data = Some(BTreeMap::from([("k".to_owned(), "2".to_owned())]));
    let written = api
        .replace("watched", &PostParams::default(), &update)
        .await
        .expect("replace");
    assert!(
        written
            .metadata
            .managed_fields
            .is_some_and(|m| !m.is_empty())
    );
    token.cancel();
    run.await.expect("informer stops");
}

/// The informer caches decoded objects without the spare room serde leaves in their lists
/// (`client/src/compact.rs`), listed and watched alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_caches_objects_without_spare_room() {
    let (_server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let with_finalizers = |name: &str| {
        let mut cm = configmap(name, "1");
        cm.metadata.finalizers = Some(vec!["example.com/a".to_owned(), "example.com/b".to_owned()]);
        cm
    };
    api.create(&PostParams::default(), &with_finalizers("listed"))
        .await
        .expect("create");
    let informer = SharedInformer::new(api.clone(), watcher::Config::default());
    let token = CancellationToken::new();
    let run = sync_then_watch(&informer, &api, &with_finalizers("watched"), &token).await;
    for name in ["listed", "watched"] {
        let cached = informer
            .store()
            .get_by(Some("default"), name)
            .expect("cached");
        let finalizers = cached.metadata.finalizers.as_ref().expect("finalizers");
        assert_eq!(finalizers.len(), 2, "{name}");
        // serde decodes two strings into room for four.
        assert_eq!(finalizers.capacity(), 2, "{name}");
    }
    token.cancel();
    run.await.expect("informer stops");
}

/// What a handler saw per object, in order: `add RV`, `update RV`, `delete`.
type Seen = Arc<Mutex<HashMap<String, Vec<String>>>>;

fn recording_handler(seen: &Seen) -> Handlers<ConfigMap> {
    let (a, u, d) = (seen.clone(), seen.clone(), seen.clone());
    let name = |cm: &ConfigMap| cm.metadata.name.clone().unwrap_or_default();
    let rv = |cm: &ConfigMap| cm.metadata.resource_version.clone().unwrap_or_default();
    Handlers::new()
        .on_add(move |cm: &Arc<ConfigMap>| {
            a.lock()
                .entry(name(cm))
                .or_default()
                .push(format!("add {}", rv(cm)))
        })
        .on_update(move |old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
            assert_ne!(
                old.metadata.resource_version, new.metadata.resource_version,
                "no resync configured"
            );
            u.lock()
                .entry(name(new))
                .or_default()
                .push(format!("update {}", rv(new)));
        })
        .on_delete(move |cm: &Arc<ConfigMap>| {
            d.lock().entry(name(cm)).or_default().push("delete".into())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_concurrent_writers_every_handler_sees_every_change_once_and_in_order() {
    const WRITERS: usize = 4;
    const KEYS_PER_WRITER: usize = 5;
    const UPDATES: usize = 8;
    let (_server, client) = server().await;
    namespace(&client, "writers").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "writers");
    let informer = SharedInformer::new(api.clone(), watcher::Config::default());
    let handlers: Vec<Seen> = (0..3).map(|_| Seen::default()).collect();
    for seen in &handlers {
        informer.add_handler(recording_handler(seen));
    }
    let token = CancellationToken::new();
    let run = start(&informer, &token);
    informer.wait_for_sync().await;

    // Each writer creates, updates and deletes its keys, interleaved with the others; it
    // records the resourceVersion of every write it made.
    let mut writers = tokio::task::JoinSet::new();
    for w in 0..WRITERS {
        let api = api.clone();
        writers.spawn(async move {
            let mut written: HashMap<String, Vec<String>> = HashMap::new();
            for k in 0..KEYS_PER_WRITER {
                let name = format!("w{w}-k{k}");
                let created = api
                    .create(&PostParams::default(), &configmap(&name, "0"))
                    .await
                    .expect("create");
                written.entry(name.clone()).or_default().push(format!(
                    "add {}",
                    created.metadata.resource_version.unwrap_or_default()
                ));
            }
            for u in 1..=UPDATES {
                for k in 0..KEYS_PER_WRITER {
                    let name = format!("w{w}-k{k}");
                    let patch = Patch::Merge(serde_json::json!({"data": {"value": u.to_string()}}));
                    let updated = api
                        .patch(&name, &PatchParams::default(), &patch)
                        .await
                        .expect("patch");
                    written.entry(name).or_default().push(format!(
                        "update {}",
                        updated.metadata.resource_version.unwrap_or_default()
                    ));
                }
            }
            for k in (0..KEYS_PER_WRITER).step_by(2) {
                let name = format!("w{w}-k{k}");
                api.delete(&name, &DeleteParams::default())
                    .await
                    .expect("delete");
                written.entry(name).or_default().push("delete".into());
            }
            written
        });
    }
    let mut expected: HashMap<String, Vec<String>> = HashMap::new();
    while let Some(written) = writers.join_next().await {
        expected.extend(written.expect("writer"));
    }
    for (i, seen) in handlers.iter().enumerate() {
        wait_until(
            Duration::from_secs(30),
            &format!("handler {i} to see every change"),
            || async { *seen.lock() == expected },
        )
        .await;
    }
    token.cancel();
    run.await.expect("informer stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_forced_compaction_the_reflector_relists_and_the_cache_equals_the_server() {
    common::logs();
    let (server, direct) = server().await;
    namespace(&direct, "compact").await;
    let proxy = Proxy::start(server.addr()).await;
    let through_proxy: Api<ConfigMap> = Api::namespaced(client_for(proxy.url()), "compact");
    let api: Api<ConfigMap> = Api::namespaced(direct.clone(), "compact");
    create_configmaps(&api, "cm", 60, 4).await;

    let informer = SharedInformer::new(through_proxy, watcher::Config::default());
    let seen = Seen::default();
    informer.add_handler(recording_handler(&seen));
    let token = CancellationToken::new();
    let run = start(&informer, &token);
    informer.wait_for_sync().await;
    assert_eq!(cache_state(&informer), server_state(&api).await);

    // Cut the informer off, change things it cannot see, and compact the history away so
    // that its resourceVersion is gone: only a relist can catch up.
    proxy.cut();
    for i in 0..10 {
        api.delete(&format!("cm-{i}"), &DeleteParams::default())
            .await
            .expect("delete");
        let patch = Patch::Merge(serde_json::json!({"data": {"value": "changed"}}));
        api.patch(&format!("cm-{}", 10 + i), &PatchParams::default(), &patch)
            .await
            .expect("patch");
        api.create(&PostParams::default(), &configmap(&format!("new-{i}"), "1"))
            .await
            .expect("create");
    }
    let revision = server.store().revision();
    let compacted = server.store().compact(revision).await.expect("compact");
    assert_eq!(compacted, revision);
    proxy.restore();

    let expected = server_state(&api).await;
    wait_until(
        Duration::from_secs(30),
        "the cache to equal the server",
        || async { cache_state(&informer) == expected },
    )
    .await;
    // Deletions seen only through the relist reach handlers as deletions.
    {
        let seen = seen.lock();
        for i in 0..10 {
            assert_eq!(
                seen[&format!("cm-{i}")].last().map(String::as_str),
                Some("delete"),
                "cm-{i}"
            );
            assert!(seen[&format!("new-{i}")][0].starts_with("add"));
        }
    }
    token.cancel();
    run.await.expect("informer stops");
}
