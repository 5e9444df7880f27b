//! Our client's reflector (kubemock-client) and kube-rs' `runtime::watcher` with its
//! `reflector` against watches that Faults keep dropping: some streams end after a few
//! events (the watcher re-watches from its last resourceVersion), others end with an
//! in-stream ERROR 410 (it relists). The cache must end up exactly as the server's state, and
//! no object may be seen going backwards (an event delivered twice, or out of order, would).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kubemock_apiserver::TestServer;
use kubemock_client::reflector::{Store, Writer};
use kubemock_client::watcher::{Config as WatcherConfig, Event, Watcher};
use kubemock_client::{Api, DeleteParams, ListParams, PostParams};
use parking_lot::Mutex;
use serde_json::json;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const NAMESPACE: &str = "default";
const OBJECTS: usize = 30;
const WAIT: Duration = Duration::from_secs(60);

async fn fault(url: &str, name: &str, spec: serde_json::Value) {
    let reply = reqwest::Client::new()
        .post(format!("{url}/apis/testing.kubemock.dev/v1/faults"))
        .json(&json!({"metadata": {"name": name}, "spec": spec}))
        .send()
        .await
        .expect("an answer");
    assert_eq!(reply.status(), 201);
}

async fn applied(url: &str, name: &str) -> u64 {
    let fault: serde_json::Value =
        reqwest::get(format!("{url}/apis/testing.kubemock.dev/v1/faults/{name}"))
            .await
            .expect("an answer")
            .json()
            .await
            .expect("a Fault");
    fault["status"]["applied"].as_u64().unwrap_or(0)
}

/// Watches of configmaps are dropped after 3 events (3 times), and expired after 2 (3 times).
async fn install_faults(url: &str) {
    fault(
        url,
        "a-drop",
        json!({"match": {"verbs": ["watch"], "resource": "configmaps"},
        "action": {"watch": {"endAfterEvents": 3}}, "count": 3}),
    )
    .await;
    fault(
        url,
        "b-expire",
        json!({"match": {"verbs": ["watch"], "resource": "configmaps"},
        "action": {"watch": {"endAfterEvents": 2, "expire": true}}, "count": 3}),
    )
    .await;
}

/// Creates OBJECTS ConfigMaps, updating every third and deleting every fifth.
async fn churn(api: &Api<ConfigMap>) {
    for i in 0..OBJECTS {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("cm-{i}"));
        cm.data = Some([("i".to_owned(), i.to_string())].into());
        api.create(&PostParams::default(), &cm)
            .await
            .expect("created");
        if i % 3 == 0 {
            let mut current = api.get(&format!("cm-{i}")).await.expect("read");
            current.data = Some([("i".to_owned(), format!("{i}-updated"))].into());
            api.replace(&format!("cm-{i}"), &PostParams::default(), &current)
                .await
                .expect("updated");
        }
        if i % 5 == 4 {
            api.delete(&format!("cm-{i}"), &DeleteParams::default())
                .await
                .expect("deleted");
        }
    }
}

/// The server's ConfigMaps as (name, resourceVersion), sorted.
async fn server_state(api: &Api<ConfigMap>) -> Vec<(String, String)> {
    let listed = api.list(&ListParams::default()).await.expect("a list");
    let mut expected: Vec<(String, String)> = listed
        .items
        .iter()
        .map(|cm| {
            (
                cm.metadata.name.clone().unwrap_or_default(),
                cm.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect();
    expected.sort();
    expected
}

/// Waits until both faults acted: the watchers went through drops and relists.
async fn faults_acted(url: &str) {
    let deadline = Instant::now() + WAIT;
    while applied(url, "a-drop").await < 1 || applied(url, "b-expire").await < 1 {
        assert!(Instant::now() < deadline, "the faults never acted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_reflector_recovers_from_dropped_and_expired_watches_without_losing_or_repeating_events()
 {
    let server = TestServer::start().await.expect("a server");
    let url = server.url().to_owned();
    install_faults(&url).await;

    let client =
        kubemock_client::Client::new(kubemock_client::Config::new(&url)).expect("a client");
    let api: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
    let store: Store<ConfigMap> = Store::new();
    let writer = Writer::new(store.clone());
    let mut config = WatcherConfig::default();
    config.backoff.initial = Duration::from_millis(10);
    config.backoff.max = Duration::from_millis(50);
    let events = Watcher::new(api.clone(), config).into_stream();
    // Each object's resourceVersions as the cache applied them: they must only grow.
    let seen: Arc<Mutex<HashMap<String, Vec<u64>>>> = Arc::default();
    let backwards: Arc<Mutex<Vec<String>>> = Arc::default();
    let token = CancellationToken::new();
    let reflector = tokio::spawn({
        let (seen, backwards, token) = (Arc::clone(&seen), Arc::clone(&backwards), token.clone());
        kubemock_client::reflector::run(writer, events, token, move |writer, event| {
            let applied = match &event {
                Event::Apply(object) | Event::InitApply(object) => Some(object.clone()),
                _ => None,
            };
            writer.apply(event);
            if let Some(object) = applied {
                let name = object.metadata.name.clone().unwrap_or_default();
                let rv: u64 = object
                    .metadata
                    .resource_version
                    .as_deref()
                    .and_then(|rv| rv.parse().ok())
                    .unwrap_or(0);
                let mut seen = seen.lock();
                let versions = seen.entry(name.clone()).or_default();
                if versions.last().is_some_and(|last| *last > rv) {
                    backwards
                        .lock()
                        .push(format!("{name}: {versions:?} then {rv}"));
                }
                versions.push(rv);
            }
        })
    });

    churn(&api).await;

    // The cache converges on the server's state: the same names at the same versions.
    let expected = server_state(&api).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let mut cached: Vec<(String, String)> = store
            .list()
            .iter()
            .map(|cm| {
                (
                    cm.metadata.name.clone().unwrap_or_default(),
                    cm.metadata.resource_version.clone().unwrap_or_default(),
                )
            })
            .collect();
        cached.sort();
        if cached == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "cache {cached:?}\nserver {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(backwards.lock().is_empty(), "{:?}", backwards.lock());
    faults_acted(&url).await;
    token.cancel();
    reflector.await.expect("the reflector stops");
    server.stop().await.expect("stopped");
}

/// The resourceVersion of an object as a number (0 if it has none).
fn rv_of(object: &ConfigMap) -> u64 {
    object
        .metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn the_kube_rs_watcher_recovers_from_dropped_and_expired_watches_without_losing_or_repeating_events()
 {
    use futures_util::StreamExt as _;
    use kube::runtime::{WatchStreamExt as _, reflector, watcher};

    let server = TestServer::start().await.expect("a server");
    let url = server.url().to_owned();
    install_faults(&url).await;

    let kube_config = kube::Config::new(url.parse().expect("a URL"));
    let kube_client = kube::Client::try_from(kube_config).expect("a kube-rs client");
    let (reader, writer) = reflector::store::<ConfigMap>();
    let events = reflector(
        writer,
        watcher(
            kube::Api::<ConfigMap>::namespaced(kube_client, NAMESPACE),
            watcher::Config::default(),
        )
        .default_backoff(),
    );
    // Each object's resourceVersions as the watcher delivered them: they must only grow.
    let seen: Arc<Mutex<HashMap<String, Vec<u64>>>> = Arc::default();
    let backwards: Arc<Mutex<Vec<String>>> = Arc::default();
    let token = CancellationToken::new();
    let consumer = tokio::spawn({
        let (seen, backwards, token) = (Arc::clone(&seen), Arc::clone(&backwards), token.clone());
        async move {
            let mut events = std::pin::pin!(events);
            loop {
                let event = tokio::select! {
                    () = token.cancelled() => return,
                    event = events.next() => event,
                };
                let Some(event) = event else { return };
                // Errors (the dropped and expired watches) are retried by the backoff.
                let Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) = event
                else {
                    continue;
                };
                let name = object.metadata.name.clone().unwrap_or_default();
                let rv = rv_of(&object);
                let mut seen = seen.lock();
                let versions = seen.entry(name.clone()).or_default();
                if versions.last().is_some_and(|last| *last > rv) {
                    backwards
                        .lock()
                        .push(format!("{name}: {versions:?} then {rv}"));
                }
                versions.push(rv);
            }
        }
    });

    let client =
        kubemock_client::Client::new(kubemock_client::Config::new(&url)).expect("a client");
    let api: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
    churn(&api).await;

    // The store converges on the server's state: the same names at the same versions.
    let expected = server_state(&api).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let mut cached: Vec<(String, String)> = reader
            .state()
            .iter()
            .map(|cm| {
                (
                    cm.metadata.name.clone().unwrap_or_default(),
                    cm.metadata.resource_version.clone().unwrap_or_default(),
                )
            })
            .collect();
        cached.sort();
        if cached == expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "store {cached:?}\nserver {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(backwards.lock().is_empty(), "{:?}", backwards.lock());
    faults_acted(&url).await;
    token.cancel();
    consumer.await.expect("the consumer stops");
    server.stop().await.expect("stopped");
}
