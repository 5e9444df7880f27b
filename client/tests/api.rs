//! `Api<K>` against an in-process kubemock server: every verb, typed and dynamic, with the
//! server's answers (docs/api-behaviour.md).

use crate::common;

use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubemock_client::request::{Preconditions, VersionMatch};
use kubemock_client::{
    Api, ApiResource, DeleteParams, Deleted, DynamicObject, Error, ListParams, Patch, PatchParams,
    PostParams, WatchEvent, WatchParams,
};

use common::{configmap, create_configmaps, namespace, server};

#[tokio::test]
async fn typed_crud_round_trips_and_reports_statuses() {
    let (_server, client) = server().await;
    namespace(&client, "crud").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "crud");

    let created = api
        .create(&PostParams::default(), &configmap("a", "1"))
        .await
        .expect("create");
    assert!(created.metadata.uid.is_some());
    let err = api
        .create(&PostParams::default(), &configmap("a", "1"))
        .await
        .expect_err("taken");
    assert!(err.is_already_exists() && !err.is_conflict(), "{err}");

    let got = api.get("a").await.expect("get");
    assert_eq!(got.data, created.data);
    assert!(api.get_opt("missing").await.expect("get_opt").is_none());
    assert!(api.get("missing").await.expect_err("404").is_not_found());

    // docs/api-behaviour.md#update-and-conflicts: a stale resourceVersion is a Conflict.
    let mut stale = got.clone();
    let mut fresh = got.clone();
    fresh.data = Some([("value".to_owned(), "2".to_owned())].into());
    let replaced = api
        .replace("a", &PostParams::default(), &fresh)
        .await
        .expect("replace");
    assert_ne!(
        replaced.metadata.resource_version,
        got.metadata.resource_version
    );
    stale.data = Some([("value".to_owned(), "3".to_owned())].into());
    assert!(
        api.replace("a", &PostParams::default(), &stale)
            .await
            .expect_err("stale")
            .is_conflict()
    );

    // Patches: merge, JSON and strategic.
    let merged = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"m": "1"}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        merged
            .data
            .as_ref()
            .and_then(|d| d.get("m"))
            .map(String::as_str),
        Some("1")
    );
    let json = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Json(serde_json::json!([{"op": "add", "path": "/data/j", "value": "2"}])),
        )
        .await
        .expect("json patch");
    assert_eq!(json.data.as_ref().map(|d| d.len()), Some(3));
    let strategic = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Strategic(serde_json::json!({"metadata": {"labels": {"s": "1"}}})),
        )
        .await
        .expect("strategic patch");
    assert_eq!(strategic.metadata.labels.as_ref().map(|l| l.len()), Some(1));

    // Delete with a failing precondition, then for real: ConfigMaps answer a Status (docs/api-behaviour.md#delete-responses).
    let precondition = DeleteParams {
        preconditions: Some(Preconditions {
            resource_version: Some("1".into()),
            uid: None,
        }),
        ..DeleteParams::default()
    };
    assert!(
        api.delete("a", &precondition)
            .await
            .expect_err("precondition")
            .is_conflict()
    );
    match api
        .delete("a", &DeleteParams::background())
        .await
        .expect("delete")
    {
        Deleted::Status(status) => assert_eq!(status.status.as_deref(), Some("Success")),
        Deleted::Object(obj) => panic!("expected a Status, got {obj:?}"),
    }
    assert!(
        api.delete("a", &DeleteParams::default())
            .await
            .expect_err("gone")
            .is_not_found()
    );
}

#[tokio::test]
async fn server_side_apply_is_sent_with_manager_and_force() {
    let (_server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let patch = Patch::Apply(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "applied"}, "data": {"k": "v"}}));
    match api
        .patch("applied", &PatchParams::apply("tester").force(), &patch)
        .await
    {
        Ok(cm) => assert_eq!(
            cm.data.and_then(|d| d.get("k").cloned()).as_deref(),
            Some("v")
        ),
        // This kubemock build refuses server-side apply with a 415 (apiserver/src/handlers/
        // patch.rs); the request reached it as an apply patch.
        Err(err) => assert_eq!(err.code(), Some(415), "{err}"),
    }
}

#[tokio::test]
async fn lists_page_with_continue_tokens_and_selectors() {
    let (_server, client) = server().await;
    namespace(&client, "paging").await;
    let api: Api<ConfigMap> = Api::namespaced(client, "paging");
    create_configmaps(&api, "cm", 25, 4).await;
    let mut labelled = configmap("labelled", "x");
    labelled.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
    api.create(&PostParams::default(), &labelled)
        .await
        .expect("create");

    let page = api
        .list(&ListParams::default().limit(10))
        .await
        .expect("page");
    assert_eq!(page.items.len(), 10);
    assert!(page.metadata.continue_.is_some());
    let all = api
        .list_all(&ListParams::default().limit(7))
        .await
        .expect("all pages");
    assert_eq!(all.items.len(), 26);
    assert!(all.metadata.continue_.is_none());
    let web = api
        .list(&ListParams::default().labels("app=web"))
        .await
        .expect("selected");
    assert_eq!(web.items.len(), 1);
    let by_name = api
        .list(&ListParams::default().fields("metadata.name=cm-3"))
        .await
        .expect("field");
    assert_eq!(by_name.items.len(), 1);
    let named = api
        .list(&ListParams::default().named("cm-3"))
        .await
        .expect("named");
    assert_eq!(named.items.len(), 1);
    assert_eq!(named.items[0].metadata.name.as_deref(), Some("cm-3"));
    // A field selector that does not parse never reaches the server: the client refuses it
    // with the server's message.
    match api
        .list(&ListParams::default().fields("metadata.name=cm-3,x"))
        .await
    {
        Err(Error::InvalidRequest(message)) => assert_eq!(
            message,
            "invalid selector: 'metadata.name=cm-3,x'; can't understand 'x'"
        ),
        other => panic!("{other:?}"),
    }

    // An exact read at the first page's snapshot returns the same state.
    let rv = page.metadata.resource_version.clone().expect("rv");
    let exact = api
        .list_all(&ListParams::default().at(&rv, Some(VersionMatch::Exact)))
        .await
        .expect("exact");
    assert_eq!(exact.items.len(), 26);
    let deleted = api
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("app=web"),
        )
        .await
        .expect("delete collection");
    match deleted {
        Deleted::Object(list) => assert_eq!(list.items.len(), 1),
        Deleted::Status(status) => assert_eq!(status.status.as_deref(), Some("Success")),
    }
    assert_eq!(
        api.list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len(),
        25
    );
}

#[tokio::test]
async fn watch_streams_typed_events_and_bookmarks() {
    let server = kubemock_apiserver::TestServer::start_with(
        kubemock_apiserver::ServerConfig {
            bookmark_interval: Duration::from_millis(200),
            ..kubemock_apiserver::ServerConfig::default()
        },
        kubemock_storage::Config::ephemeral(),
    )
    .await
    .expect("server");
    let client = common::client_for(server.url());
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let list = api.list(&ListParams::default()).await.expect("list");
    let rv = list.metadata.resource_version.expect("rv");
    let params = WatchParams {
        bookmarks: true,
        timeout: Some(Duration::from_secs(10)),
        ..WatchParams::default()
    };
    let mut stream = Box::pin(api.watch(&params, &rv).await.expect("watch"));
    api.create(&PostParams::default(), &configmap("w", "1"))
        .await
        .expect("create");
    api.delete("w", &DeleteParams::default())
        .await
        .expect("delete");
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("an event")
            .expect("stream open")
            .expect("decodes");
        match event {
            WatchEvent::Added(cm) => {
                seen.push(format!("added {}", cm.metadata.name.unwrap_or_default()))
            }
            WatchEvent::Deleted(cm) => {
                seen.push(format!("deleted {}", cm.metadata.name.unwrap_or_default()))
            }
            WatchEvent::Bookmark(b) => {
                if !seen.iter().any(|s| s == "bookmark") && seen.len() == 2 {
                    assert!(!b.resource_version.is_empty());
                    seen.push("bookmark".into());
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, vec!["added w", "deleted w", "bookmark"]);
}

#[tokio::test]
async fn status_and_scale_subresources() {
    let (_server, client) = server().await;
    let api: Api<Deployment> = Api::namespaced(client, "default");
    let labels: std::collections::BTreeMap<String, String> =
        [("app".to_owned(), "web".to_owned())].into();
    let deployment = Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "app".into(),
                        image: Some("nginx".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    };
    api.create(&PostParams::default(), &deployment)
        .await
        .expect("create");

    let scale = api.get_scale("web").await.expect("get scale");
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(1));
    let mut scaled = scale.clone();
    scaled.spec.get_or_insert_with(Default::default).replicas = Some(3);
    let scaled = api
        .replace_scale("web", &PostParams::default(), &scaled)
        .await
        .expect("replace scale");
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(3));
    let patched = api
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": 4}})),
        )
        .await
        .expect("patch scale");
    assert_eq!(patched.spec.and_then(|s| s.replicas), Some(4));
    assert_eq!(
        api.get("web")
            .await
            .expect("get")
            .spec
            .and_then(|s| s.replicas),
        Some(4)
    );

    let with_status = api
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(
                serde_json::json!({"status": {"observedGeneration": 7}, "spec": {"replicas": 9}}),
            ),
        )
        .await
        .expect("patch status");
    assert_eq!(
        with_status
            .status
            .as_ref()
            .and_then(|s| s.observed_generation),
        Some(7)
    );
    assert_eq!(
        with_status.spec.as_ref().and_then(|s| s.replicas),
        Some(4),
        "status writes ignore spec"
    );
    let mut status = api.get_status("web").await.expect("get status");
    status
        .status
        .get_or_insert_with(Default::default)
        .ready_replicas = Some(2);
    let replaced = api
        .replace_status("web", &PostParams::default(), &status)
        .await
        .expect("replace status");
    assert_eq!(replaced.status.and_then(|s| s.ready_replicas), Some(2));

    // The unread variant writes as well, and reports the server's refusal: a stale
    // resourceVersion is a Conflict.
    let mut status = api.get_status("web").await.expect("get status");
    status
        .status
        .get_or_insert_with(Default::default)
        .ready_replicas = Some(3);
    api.replace_status_unread("web", &PostParams::default(), &status)
        .await
        .expect("replace status, unread");
    assert_eq!(
        api.get("web")
            .await
            .expect("get")
            .status
            .and_then(|s| s.ready_replicas),
        Some(3)
    );
    let refused = api
        .replace_status_unread("web", &PostParams::default(), &status)
        .await
        .expect_err("the resourceVersion is stale");
    assert!(refused.is_conflict(), "{refused}");
    status.metadata.resource_version = None;
    let exists = api
        .create_named(&PostParams::default(), &status)
        .await
        .expect_err("the name is taken");
    assert!(exists.is_already_exists(), "{exists}");
}

/// `create_named` reads the name the server gave (`generateName`), and only that.
#[tokio::test]
async fn create_named_returns_the_generated_name() {
    let (_server, client) = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let template = ConfigMap {
        metadata: ObjectMeta {
            generate_name: Some("gen-".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    let first = api
        .create_named(&PostParams::default(), &template)
        .await
        .expect("create");
    let second = api
        .create_named(&PostParams::default(), &template)
        .await
        .expect("create");
    assert!(
        first.starts_with("gen-") && first.len() > "gen-".len(),
        "{first}"
    );
    assert_ne!(first, second);
    for name in [&first, &second] {
        api.get(name).await.expect("the named object exists");
    }
}

#[tokio::test]
async fn dynamic_objects_address_resources_by_group_version_resource() {
    let (_server, client) = server().await;
    let resource = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    let api = Api::<DynamicObject>::dynamic(client.clone(), &resource, Some("default"));
    let obj = DynamicObject::new("dyn", &resource).with("data", serde_json::json!({"a": "b"}));
    let created = api
        .create(&PostParams::default(), &obj)
        .await
        .expect("create");
    assert_eq!(created.data["data"]["a"], "b");
    assert!(created.metadata.resource_version.is_some());
    let typed: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert_eq!(
        typed
            .get("dyn")
            .await
            .expect("typed get")
            .data
            .and_then(|d| d.get("a").cloned())
            .as_deref(),
        Some("b")
    );
    let everywhere = Api::<DynamicObject>::dynamic(client, &resource, None);
    let all = everywhere
        .list(&ListParams::default())
        .await
        .expect("list all namespaces");
    assert!(
        all.items
            .iter()
            .any(|o| o.metadata.name.as_deref() == Some("dyn"))
    );
    assert!(
        everywhere.get("dyn").await.is_err(),
        "a single object needs a namespace"
    );
}

#[tokio::test]
async fn connection_errors_are_transport_errors_after_retries_for_reads() {
    // A port nothing listens on: reads are retried, then fail as transport errors.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let mut config = kubemock_client::Config::new(&format!("http://{addr}"));
    config.connect_timeout = Duration::from_millis(200);
    let client = kubemock_client::Client::new(config).expect("client");
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let started = std::time::Instant::now();
    let err = api
        .create(&PostParams::default(), &configmap("x", "1"))
        .await
        .expect_err("refused");
    assert!(err.is_connection_error(), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "a create is not retried"
    );
}

/// A server on a real socket answering each request (one per connection) with `responses`
/// in turn (the last one repeated); returns its URL and the count of requests it saw.
async fn scripted_server(
    responses: Vec<&'static str>,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let response = responses[n.min(responses.len() - 1)];
            let mut buf = vec![0u8; 4096];
            let _ = stream.read(&mut buf).await;
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
    });
    (url, seen)
}

/// client-go's `checkWait` (`staging/src/k8s.io/client-go/rest/request.go`): a 429 is retried
/// only when it carries a Retry-After; without one (an eviction its disruption budget refuses)
/// the caller gets it at once.
#[tokio::test]
async fn a_429_is_retried_only_with_a_retry_after() {
    const REFUSED: &str = "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 79\r\n\r\n{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":429,\"message\":\"x\"}";
    const LATER: &str = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 79\r\n\r\n{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":429,\"message\":\"x\"}";
    const OK: &str = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 72\r\n\r\n{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"},\"data\":{}}";
    let (url, seen) = scripted_server(vec![REFUSED]).await;
    let client = kubemock_client::Client::new(kubemock_client::Config::new(&url)).expect("client");
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let err = api.get("x").await.expect_err("refused");
    assert_eq!(err.code(), Some(429));
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "not retried"
    );

    let (url, seen) = scripted_server(vec![LATER, LATER, OK]).await;
    let client = kubemock_client::Client::new(kubemock_client::Config::new(&url)).expect("client");
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.get("x").await.expect("retried until answered");
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 3);
}
