//! kubemock's test-backend group, `testing.kubemock.dev/v1`: `POST resets` brings the
//! cluster back to its startup state (bootstrap and fixtures) without a restart, through
//! ordinary store writes: resourceVersions move forward and watchers see the reset as
//! events. Each test starts a server of its own (a reset acts on the whole cluster).

use std::path::PathBuf;
use std::time::Instant;

use kubemock_apiserver::fixtures::Fixture;
use kubemock_apiserver::{ServerConfig, TestServer};
use kubemock_conformance::{Harness, configmap};
use serde_json::{Value, json};

const RESETS: &str = "/apis/testing.kubemock.dev/v1/resets";
const SNAPSHOTS: &str = "/apis/testing.kubemock.dev/v1/snapshots";

fn fixture(object: Value) -> Fixture {
    Fixture {
        file: PathBuf::from("inline.yaml"),
        document: 1,
        item: None,
        object,
    }
}

async fn server_with(fixtures: Vec<Fixture>) -> (TestServer, Harness) {
    let server = TestServer::start_with(
        ServerConfig {
            fixtures,
            ..ServerConfig::default()
        },
        kubemock_storage::Config::ephemeral(),
    )
    .await
    .expect("a server");
    let h = Harness::connect(server.url());
    (server, h)
}

/// Every stored object by key, resourceVersions left out.
async fn state(h: &Harness) -> Vec<(String, Value)> {
    let snapshot = h.post(SNAPSHOTS, &json!({})).await;
    assert_eq!(snapshot.status, 201, "{:?}", snapshot.body);
    snapshot.body["items"]
        .as_array()
        .expect("as the test set it up")
        .iter()
        .map(|i| {
            (
                i["key"].as_str().expect("as the test set it up").to_owned(),
                i["object"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_reset_restores_the_startup_state_and_watchers_see_it_as_events() {
    let (server, h) = server_with(vec![
        fixture(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}})),
        fixture(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "keep", "namespace": "app"}, "data": {"v": "1"}})),
        fixture(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "gone", "namespace": "app"}, "data": {"v": "1"}})),
    ])
    .await;
    let startup = state(&h).await;
    let listed = h.get("/api/v1/namespaces/app/configmaps").await;
    let rv = listed.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("as the test set it up")
        .to_owned();
    let keep_uid =
        h.get("/api/v1/namespaces/app/configmaps/keep").await.body["metadata"]["uid"].clone();
    // The test changes one, deletes one, adds one, and adds a namespace with a fault.
    let mut keep = h.get("/api/v1/namespaces/app/configmaps/keep").await.body;
    keep["data"]["v"] = json!("2");
    assert_eq!(
        h.put("/api/v1/namespaces/app/configmaps/keep", &keep)
            .await
            .status,
        200
    );
    assert_eq!(
        h.delete("/api/v1/namespaces/app/configmaps/gone", None)
            .await
            .status,
        200
    );
    assert_eq!(
        h.post(
            "/api/v1/namespaces/app/configmaps",
            &configmap("added", json!({}))
        )
        .await
        .status,
        201
    );
    let ns = h.namespace("reset-extra").await;
    let fault = h
        .post(
            "/apis/testing.kubemock.dev/v1/faults",
            &json!({"metadata": {"name": "f"}, "spec": {"match": {"namespace": ns}, "action": {"status": {"code": 500}}}}),
        )
        .await;
    assert_eq!(fault.status, 201);
    assert_ne!(state(&h).await, startup);

    let mut watch = h
        .watch(&format!(
            "/api/v1/namespaces/app/configmaps?watch=1&resourceVersion={rv}"
        ))
        .await;
    let reset = h.post(RESETS, &json!({})).await;
    assert_eq!(reset.status, 201, "{:?}", reset.body);
    assert_eq!(reset.body["kind"], "Reset");
    assert_eq!(reset.body["status"]["differing"], 0);
    assert_eq!(reset.body["status"]["created"], 1);
    assert!(
        reset.body["status"]["updated"]
            .as_u64()
            .expect("as the test set it up")
            >= 1
    );
    assert!(
        reset.body["status"]["deleted"]
            .as_u64()
            .expect("as the test set it up")
            >= 3
    );
    assert_eq!(state(&h).await, startup);
    // Forward resourceVersions, the startup uid and content.
    let restored = h.get("/api/v1/namespaces/app/configmaps/keep").await.body;
    assert_eq!(restored["metadata"]["uid"], keep_uid);
    assert_eq!(restored["data"]["v"], "1");
    let after: u64 = reset.body["status"]["resourceVersion"]
        .as_str()
        .expect("as the test set it up")
        .parse()
        .expect("as the test set it up");
    assert!(after > rv.parse::<u64>().expect("as the test set it up"));
    assert_eq!(h.get(&format!("/api/v1/namespaces/{ns}")).await.status, 404);
    assert_eq!(
        h.get("/apis/testing.kubemock.dev/v1/faults/f").await.status,
        404
    );
    // The watcher saw the test's changes, then the reset's, in order, with no gap.
    let mut seen = Vec::new();
    while seen.len() < 6 {
        let event = watch.next_event().await.expect("an event");
        seen.push(format!(
            "{} {}",
            event["type"].as_str().expect("as the test set it up"),
            event["object"]["metadata"]["name"]
                .as_str()
                .expect("as the test set it up")
        ));
    }
    assert_eq!(
        seen,
        [
            "MODIFIED keep",
            "DELETED gone",
            "ADDED added",
            "DELETED added",
            "MODIFIED keep",
            "ADDED gone"
        ]
    );
    // A second reset has nothing to do.
    let again = h.post(RESETS, &json!({})).await;
    assert_eq!(again.body["status"]["deleted"], 0);
    assert_eq!(again.body["status"]["created"], 0);
    assert_eq!(again.body["status"]["updated"], 0);
    // Only create is served.
    assert_eq!(h.get(RESETS).await.status, 405);
    server.stop().await.expect("as the test set it up");
}

/// The reset's cost (docs/test-powers.md): a cluster of 10,000 ConfigMaps loaded
/// as fixtures, 100 of them changed, then reset; and 10,000 created after startup, then
/// reset (all deleted). The server's own figure (`durationMicroseconds`) and the request's
/// are printed, with an empty reset (nothing to change) as the baseline. Run with
/// `cargo test --release -p kubemock-conformance --test conformance testing_reset:: --
/// --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: prints figures"]
async fn reset_of_a_ten_thousand_object_cluster() {
    const OBJECTS: usize = 10_000;
    let mut fixtures = vec![fixture(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}),
    )];
    for i in 0..OBJECTS {
        fixtures.push(fixture(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i}"), "namespace": "bench"}, "data": {"i": i.to_string()}})));
    }
    let started = Instant::now();
    let (server, h) = server_with(fixtures).await;
    // The start returns before the fixtures are in: wait for the last one.
    while h
        .get(&format!(
            "/api/v1/namespaces/bench/configmaps/cm-{}",
            OBJECTS - 1
        ))
        .await
        .status
        != 200
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    println!("start with {OBJECTS} fixtures: {:?}", started.elapsed());
    let timed = |label: &'static str| {
        let h = &h;
        async move {
            let started = Instant::now();
            let reset = h.post(RESETS, &json!({})).await;
            let took = started.elapsed();
            assert_eq!(reset.status, 201);
            let s = &reset.body["status"];
            println!(
                "{label}: request {:.1} ms, server {:.1} ms (deleted {}, created {}, updated {})",
                took.as_secs_f64() * 1000.0,
                s["durationMicroseconds"]
                    .as_f64()
                    .expect("as the test set it up")
                    / 1000.0,
                s["deleted"],
                s["created"],
                s["updated"]
            );
        }
    };
    timed("baseline: empty reset of 10,000 fixtures").await;
    for i in 0..100 {
        let path = format!("/api/v1/namespaces/bench/configmaps/cm-{i}");
        let mut cm = h.get(&path).await.body;
        cm["data"]["i"] = json!("changed");
        assert_eq!(h.put(&path, &cm).await.status, 200);
    }
    timed("100 of 10,000 fixtures changed").await;
    let (server2, h2) = server_with(Vec::new()).await;
    h2.post(
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "bench"}}),
    )
    .await;
    for i in 0..OBJECTS {
        let created = h2
            .post(
                "/api/v1/namespaces/bench/configmaps",
                &configmap(&format!("cm-{i}"), json!({"i": i.to_string()})),
            )
            .await;
        assert_eq!(created.status, 201);
    }
    let started = Instant::now();
    let reset = h2.post(RESETS, &json!({})).await;
    println!(
        "10,001 objects created after startup, all deleted: request {:.1} ms, server {:.1} ms (deleted {})",
        started.elapsed().as_secs_f64() * 1000.0,
        reset.body["status"]["durationMicroseconds"]
            .as_f64()
            .expect("as the test set it up")
            / 1000.0,
        reset.body["status"]["deleted"]
    );
    server2.stop().await.expect("as the test set it up");
    server.stop().await.expect("as the test set it up");
}
