//! docs/api-behaviour.md#watch: watch streams.

use std::time::Duration;

use kubemock_apiserver::ServerConfig;
use kubemock_conformance::{Harness, configmap};
use kubemock_storage::Kv;
use serde_json::{Value, json};

fn rv(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion")
        .parse()
        .expect("numeric")
}

#[tokio::test]
async fn s8_1_headers_arrive_at_once_and_events_are_full_objects() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s8-1").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let list_rv = h.get(&path).await.body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        // No events pending: the response head must still arrive (Harness::watch returns on it).
        let mut watch = h
            .watch(&format!("{path}?watch=true&resourceVersion={list_rv}"))
            .await;
        assert_eq!(watch.status, 200);
        assert_eq!(watch.headers["content-type"], h.watch_media_type());
        h.create_configmap(&ns, "c1", json!({})).await;
        let event = watch.next_event().await.unwrap();
        assert_eq!(event["type"], "ADDED");
        assert_eq!(
            event["object"]["kind"], "ConfigMap",
            "watch objects carry their kind"
        );
        assert_eq!(event["object"]["apiVersion"], "v1");
    }
}

#[tokio::test]
async fn s8_3_no_resource_version_sends_synthetic_added_then_live_changes() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s8-3").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        h.create_configmap(&ns, "b", json!({})).await;
        h.create_configmap(&ns, "a", json!({})).await;
        let mut watch = h.watch(&format!("{path}?watch=1")).await;
        let first = watch.next_event().await.unwrap();
        let second = watch.next_event().await.unwrap();
        assert_eq!(
            (first["type"].as_str(), second["type"].as_str()),
            (Some("ADDED"), Some("ADDED"))
        );
        assert_eq!(
            (
                first["object"]["metadata"]["name"].as_str(),
                second["object"]["metadata"]["name"].as_str()
            ),
            (Some("a"), Some("b")),
            "storage-key order"
        );
        let created = h.create_configmap(&ns, "c", json!({})).await;
        let added = watch.next_event().await.unwrap();
        assert_eq!(added["type"], "ADDED");
        assert_eq!(rv(&added["object"]), rv(&created));
        let mut update = created.clone();
        update["data"] = json!({"k": "v"});
        let updated = h.put(&format!("{path}/c"), &update).await.body;
        let modified = watch.next_event().await.unwrap();
        assert_eq!(modified["type"], "MODIFIED");
        assert_eq!(modified["object"]["data"]["k"], "v");
        assert_eq!(rv(&modified["object"]), rv(&updated));
        assert_eq!(h.delete(&format!("{path}/c"), None).await.status, 200);
        let deleted = watch.next_event().await.unwrap();
        assert_eq!(deleted["type"], "DELETED");
        assert_eq!(deleted["object"]["data"]["k"], "v", "the last stored state");
        assert!(
            rv(&deleted["object"]) > rv(&updated),
            "the deletion's own revision"
        );
    }
}

#[tokio::test]
async fn s8_3_a_resource_version_sends_only_later_changes() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s8-3-rv").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let a = h.create_configmap(&ns, "a", json!({})).await;
        h.create_configmap(&ns, "b", json!({})).await;
        let mut watch = h
            .watch(&format!("{path}?watch=true&resourceVersion={}", rv(&a)))
            .await;
        let event = watch.next_event().await.unwrap();
        assert_eq!(
            (
                event["type"].as_str(),
                event["object"]["metadata"]["name"].as_str()
            ),
            (Some("ADDED"), Some("b"))
        );
    }
}

#[tokio::test]
async fn s8_5_watch_from_compacted_rv_sends_error_event() {
    for h in Harness::each_encoding().await {
        let Some(server) = h.in_process() else {
            eprintln!("skipped: needs an in-process server to force a compaction");
            return;
        };
        let ns = h.namespace("s8-5").await;
        let old = h.create_configmap(&ns, "a", json!({})).await;
        h.create_configmap(&ns, "b", json!({})).await;
        let store = server.store();
        let compacted = store.revision();
        store.compact(compacted).await.unwrap();
        let mut watch = h
            .watch(&format!(
                "/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={}",
                rv(&old) - 1
            ))
            .await;
        assert_eq!(watch.status, 200, "never an HTTP 410");
        let event = watch.next_event().await.unwrap();
        assert_eq!(event["type"], "ERROR");
        assert_eq!(
            event["object"],
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message": format!("too old resource version: {} ({})", rv(&old) - 1, compacted - 1),
            "reason":"Expired","code":410})
        );
        assert!(
            watch.next_event().await.is_none(),
            "the stream ends after the error"
        );
    }
}

#[tokio::test]
async fn s8_6_bookmarks_are_sent_only_when_allowed() {
    let config = ServerConfig {
        bookmark_interval: Duration::from_millis(100),
        ..ServerConfig::default()
    };
    for h in Harness::each_encoding_with(config).await {
        if h.in_process().is_none() {
            eprintln!("skipped: needs an in-process server with a short bookmark interval");
            return;
        }
        let ns = h.namespace("s8-6").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let created = h.create_configmap(&ns, "a", json!({})).await;
        let mut watch = h
            .watch(&format!(
                "{path}?watch=true&allowWatchBookmarks=true&resourceVersion={}",
                rv(&created)
            ))
            .await;
        let event = watch.next_event().await.unwrap();
        assert_eq!(event["type"], "BOOKMARK");
        assert_eq!(event["object"]["kind"], "ConfigMap");
        assert_eq!(event["object"]["apiVersion"], "v1");
        assert!(rv(&event["object"]) >= rv(&created));
        let mut plain = h
            .watch(&format!(
                "{path}?watch=true&resourceVersion={}",
                rv(&created)
            ))
            .await;
        assert!(
            plain
                .next_event_within(Duration::from_millis(500))
                .await
                .is_none(),
            "no bookmark without allowWatchBookmarks"
        );
    }
}

/// The `kubernetes.io/initial-events-list-blueprint` of a bookmark, decoded.
fn blueprint(h: &Harness, bookmark: &Value) -> Value {
    use base64::Engine as _;
    let text = bookmark["object"]["metadata"]["annotations"]
        ["kubernetes.io/initial-events-list-blueprint"]
        .as_str()
        .expect("a blueprint annotation");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("base64");
    if h.media_type() == kubemock_apiserver::protobuf::MEDIA_TYPE {
        kubemock_apiserver::protobuf::decode(&bytes).expect("a protobuf list")
    } else {
        serde_json::from_slice(&bytes).expect("a JSON list")
    }
}

/// Only a streaming list ends its initial events with the annotated bookmark: a legacy watch
/// from resourceVersion unset sends them and goes on (upstream's
/// `isInitialEventsEndBookmarkRequired`, k8s.io/apiserver `pkg/storage/cacher/cacher.go`); a
/// metadata-only streaming list's blueprint is a `PartialObjectMetadataList`.
#[tokio::test]
async fn s8_7_the_end_bookmark_is_a_streaming_lists_alone() {
    let h = Harness::start().await;
    let ns = h.namespace("s8-7-legacy").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    h.create_configmap(&ns, "a", json!({})).await;
    let mut legacy = h
        .watch(&format!("{path}?watch=true&allowWatchBookmarks=true"))
        .await;
    assert_eq!(legacy.next_event().await.unwrap()["type"], "ADDED");
    h.create_configmap(&ns, "b", json!({})).await;
    let next = legacy.next_event().await.unwrap();
    assert_eq!(
        (
            next["type"].as_str(),
            next["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("b")),
        "no bookmark between the initial and the live events: {next}"
    );

    let mut metadata = h
        .watch_accepting(
            &format!("{path}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        )
        .await;
    for _ in 0..2 {
        assert_eq!(metadata.next_event().await.unwrap()["type"], "ADDED");
    }
    let bookmark = metadata.next_event().await.unwrap();
    assert_eq!(bookmark["type"], "BOOKMARK");
    let list = blueprint(&h, &bookmark);
    assert_eq!(
        (list["kind"].as_str(), list["apiVersion"].as_str()),
        (Some("PartialObjectMetadataList"), Some("meta.k8s.io/v1")),
        "{list}"
    );
}

#[tokio::test]
async fn s8_7_streaming_list_ends_initial_events_with_a_bookmark() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s8-7").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        h.create_configmap(&ns, "a", json!({})).await;
        let mut watch = h
        .watch(&format!("{path}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"))
        .await;
        assert_eq!(watch.next_event().await.unwrap()["type"], "ADDED");
        let bookmark = watch.next_event().await.unwrap();
        assert_eq!(bookmark["type"], "BOOKMARK");
        assert_eq!(
            bookmark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
            "true"
        );
        // The list's blueprint, which client-go 1.32's typed List decodes its result from
        // (upstream's watchListTransformer, k8s.io/apiserver pkg/endpoints/handlers/response.go):
        // an empty ConfigMapList in the watch's encoding, in base64.
        assert_eq!(
            blueprint(&h, &bookmark)["kind"],
            "ConfigMapList",
            "{bookmark}"
        );
        h.create_configmap(&ns, "b", json!({})).await;
        assert_eq!(
            watch.next_event().await.unwrap()["object"]["metadata"]["name"],
            "b"
        );

        let reply = h
            .get(&format!("{path}?watch=true&sendInitialEvents=true"))
            .await;
        assert_eq!(reply.status, 422);
        assert_eq!(
            reply.body["message"],
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        );
        let reply = h
            .get(&format!(
                "{path}?watch=true&resourceVersionMatch=NotOlderThan"
            ))
            .await;
        assert_eq!(reply.status, 422);
    }
}

#[tokio::test]
async fn s8_8_objects_entering_and_leaving_the_selection_are_added_and_deleted() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s8-8").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let start = h.get(&path).await.body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut watch = h
            .watch(&format!(
                "{path}?watch=true&labelSelector=env%3Dprod&resourceVersion={start}"
            ))
            .await;
        h.create_configmap(&ns, "other", json!({"env": "dev"}))
            .await;
        let c = h.create_configmap(&ns, "c", json!({"env": "prod"})).await;
        let added = watch.next_event().await.unwrap();
        assert_eq!(
            (
                added["type"].as_str(),
                added["object"]["metadata"]["name"].as_str()
            ),
            (Some("ADDED"), Some("c"))
        );
        let mut moved = c.clone();
        moved["metadata"]["labels"]["env"] = json!("dev");
        let moved = h.put(&format!("{path}/c"), &moved).await.body;
        let left = watch.next_event().await.unwrap();
        assert_eq!(left["type"], "DELETED");
        assert_eq!(
            left["object"]["metadata"]["labels"]["env"], "prod",
            "the old state"
        );
        assert_eq!(rv(&left["object"]), rv(&moved), "the new revision");
        let mut back = moved.clone();
        back["metadata"]["labels"]["env"] = json!("prod");
        h.put(&format!("{path}/c"), &back).await;
        assert_eq!(watch.next_event().await.unwrap()["type"], "ADDED");
    }
}

#[tokio::test]
async fn s8_9_timeout_seconds_ends_the_stream() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s8-9").await;
        let mut watch = h
            .watch(&format!(
                "/api/v1/namespaces/{ns}/configmaps?watch=true&timeoutSeconds=1&resourceVersion=1"
            ))
            .await;
        let ended = watch.next_event_within(Duration::from_secs(30)).await;
        assert_eq!(ended, Some(None), "the stream ends cleanly");
    }
}

#[tokio::test]
async fn s1_4_single_object_watches_see_only_that_object() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s1-4").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let start = h.get(&path).await.body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut by_path = h
            .watch(&format!("{path}/x?watch=true&resourceVersion={start}"))
            .await;
        let mut by_field = h
            .watch(&format!(
                "{path}?watch=true&fieldSelector=metadata.name%3Dx&resourceVersion={start}"
            ))
            .await;
        let mut legacy = h
            .watch(&format!(
                "/api/v1/watch/namespaces/{ns}/configmaps/x?resourceVersion={start}"
            ))
            .await;
        h.create_configmap(&ns, "xy", json!({})).await;
        h.create_configmap(&ns, "x", json!({})).await;
        for watch in [&mut by_path, &mut by_field, &mut legacy] {
            let event = watch.next_event().await.unwrap();
            assert_eq!(event["object"]["metadata"]["name"], "x");
        }
        let reply = h
            .get(&format!(
                "{path}/x?watch=true&fieldSelector=metadata.name%3Dy"
            ))
            .await;
        assert_eq!(reply.status, 400);
        assert_eq!(
            reply.body["message"],
            "fieldSelector metadata.name doesn't match requested name"
        );
        // The selector need only require the name (`RequiresExactMatch`); its other terms
        // filter as usual.
        let mut both = h
            .watch(&format!(
                "{path}/x?watch=true&fieldSelector=metadata.name%3Dx%2Cmetadata.namespace%3D{ns}\
                 &resourceVersion={start}"
            ))
            .await;
        let event = both.next_event().await.unwrap();
        assert_eq!(event["object"]["metadata"]["name"], "x");
    }
}

#[tokio::test]
async fn s8_watches_across_all_namespaces_see_every_namespace() {
    for h in Harness::each_encoding().await {
        let a = h.namespace("s8-all-a").await;
        let b = h.namespace("s8-all-b").await;
        let start = h.get("/api/v1/configmaps").await.body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut watch = h
            .watch(&format!(
                "/api/v1/configmaps?watch=true&resourceVersion={start}"
            ))
            .await;
        h.create_configmap(&a, "one", json!({})).await;
        h.create_configmap(&b, "two", json!({})).await;
        let mut seen = Vec::new();
        while seen.len() < 2 {
            let event = watch.next_event().await.unwrap();
            let name = event["object"]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_owned();
            if name == "one" || name == "two" {
                seen.push(name);
            }
        }
        assert_eq!(seen, ["one", "two"]);
    }
}

#[tokio::test]
async fn writers_are_not_slowed_by_a_watch_that_is_never_read() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s8-slow").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let _unread = h
            .watch(&format!("{path}?watch=true&resourceVersion=1"))
            .await;
        // If any write waited on the unread watch this would not finish before the test's deadline.
        let writes = async {
            for i in 0..2_000 {
                let reply = h
                    .post(
                        &path,
                        &configmap(&format!("c{i}"), json!({"pad": "x".repeat(512)})),
                    )
                    .await;
                assert_eq!(reply.status, 201);
            }
        };
        tokio::time::timeout(Duration::from_secs(120), writes)
            .await
            .expect("writes finish");
        assert_eq!(h.get("/readyz").await.status, 200);
    }
}

#[tokio::test]
async fn a_watch_whose_client_left_is_released_without_waiting_for_an_event() {
    for h in Harness::each_encoding().await {
        let Some(server) = h.in_process() else {
            eprintln!("skipped: needs an in-process server to count its watchers");
            return;
        };
        let ns = h.namespace("s8-gone").await;
        let before = server.store().live_watchers();
        let watch = h
            .watch(&format!(
                "/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={}",
                server.store().revision()
            ))
            .await;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while server.store().live_watchers() <= before {
            assert!(
                std::time::Instant::now() < deadline,
                "the watch never registered"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(watch);
        while server.store().live_watchers() > before {
            assert!(
                std::time::Instant::now() < deadline,
                "the watch outlived its client"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
