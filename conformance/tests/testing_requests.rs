//! kubemock's test-backend group, `testing.kubemock.dev/v1`: the request log (`requests`).
//! Not a Kubernetes API (docs/test-powers.md): every request is logged as a
//! `Request` object, listed and watched with field selectors, tagged by `X-Kubemock-Test`,
//! bounded, and cleared by `DELETE`.
//!
//! Against a shared server (`KUBEMOCK_CONFORMANCE_URL`) each test scopes what it reads by its
//! own tag; the tests that need a server of their own (a small log, bodies on, a clear) start
//! one in process.

use kubemock_apiserver::{RequestLogConfig, ServerConfig, TestServer};
use kubemock_conformance::{Harness, configmap};
use reqwest::Method;
use serde_json::{Value, json};

const REQUESTS: &str = "/apis/testing.kubemock.dev/v1/requests";

/// The log's entries of test `tag`, oldest first.
async fn logged(h: &Harness, tag: &str) -> Vec<Value> {
    let reply = h
        .get(&format!("{REQUESTS}?fieldSelector=test%3D{tag}"))
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["kind"], "RequestList");
    reply.body["items"].as_array().expect("items").clone()
}

/// Sends a request tagged with `tag`.
async fn tagged(
    h: &Harness,
    tag: &str,
    method: Method,
    path: &str,
    body: Option<&Value>,
    content_type: &str,
) -> kubemock_conformance::Reply {
    h.request_with_headers(
        method,
        path,
        body.map(|b| b.to_string().into_bytes()),
        content_type,
        &[
            ("x-kubemock-test", tag),
            ("user-agent", "conformance-requests/1.0"),
        ],
    )
    .await
}

/// A server of this test's own, with `log` (and a harness for it).
async fn own_server(log: RequestLogConfig) -> (TestServer, Harness) {
    let server = TestServer::start_with(
        ServerConfig {
            request_log: log,
            ..ServerConfig::default()
        },
        kubemock_storage::Config::ephemeral(),
    )
    .await
    .expect("a server");
    let h = Harness::connect(server.url());
    (server, h)
}

#[tokio::test]
async fn the_group_is_discovered_with_its_read_only_verbs_and_an_openapi_document() {
    let h = Harness::start().await;
    let apis = h.get("/apis").await;
    let group = apis.body["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "testing.kubemock.dev")
        .expect("the group is listed")
        .clone();
    assert_eq!(
        group["preferredVersion"]["groupVersion"],
        "testing.kubemock.dev/v1"
    );
    let resources = h.get("/apis/testing.kubemock.dev/v1").await;
    assert_eq!(resources.status, 200);
    let requests = resources.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "requests")
        .expect("requests")
        .clone();
    assert_eq!(requests["kind"], "Request");
    assert_eq!(requests["namespaced"], false);
    assert_eq!(
        requests["verbs"],
        json!(["deletecollection", "get", "list", "watch"])
    );
    let root = h.get("/openapi/v3").await;
    let url = root.body["paths"]["apis/testing.kubemock.dev/v1"]["serverRelativeURL"]
        .as_str()
        .expect("a document for the group")
        .to_owned();
    let document = h.get(&url).await;
    let schema = &document.body["components"]["schemas"]["dev.kubemock.testing.v1.Request"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"],
        json!([{"group": "testing.kubemock.dev", "version": "v1", "kind": "Request"}])
    );
    assert_eq!(schema["properties"]["verb"]["type"], "string");
    // Writes are refused as a real read-only resource refuses them.
    let create = h.post(REQUESTS, &json!({"metadata": {"name": "x"}})).await;
    assert_eq!(create.status, 405, "{:?}", create.body);
}

#[tokio::test]
async fn every_request_is_logged_with_what_it_asked_and_how_it_ended() {
    let h = Harness::start().await;
    let ns = h.namespace("requests-log").await;
    let tag = format!("log-{ns}");
    let collection = format!("/api/v1/namespaces/{ns}/configmaps");
    let created = tagged(
        &h,
        &tag,
        Method::POST,
        &format!("{collection}?fieldManager=tester"),
        Some(&configmap("c1", json!({"a": "1"}))),
        "application/json",
    )
    .await;
    assert_eq!(created.status, 201);
    let patched = tagged(
        &h,
        &tag,
        Method::PATCH,
        &format!("{collection}/c1?fieldManager=patcher&dryRun=All"),
        Some(&json!({"data": {"b": "2"}})),
        "application/merge-patch+json",
    )
    .await;
    assert_eq!(patched.status, 200);
    let missing = tagged(
        &h,
        &tag,
        Method::GET,
        &format!("{collection}/nope"),
        None,
        "",
    )
    .await;
    assert_eq!(missing.status, 404);
    tagged(&h, &tag, Method::GET, "/version", None, "").await;

    let items = logged(&h, &tag).await;
    let verbs: Vec<&str> = items.iter().map(|i| i["verb"].as_str().unwrap()).collect();
    assert_eq!(verbs, ["create", "patch", "get", "get"]);
    let create = &items[0];
    assert_eq!(create["method"], "POST");
    assert_eq!(create["group"], "");
    assert_eq!(create["version"], "v1");
    assert_eq!(create["resource"], "configmaps");
    assert_eq!(create["namespace"], ns.as_str());
    assert!(create.get("name").is_none());
    assert_eq!(create["path"], collection.as_str());
    assert_eq!(create["query"], "fieldManager=tester");
    assert_eq!(create["fieldManager"], "tester");
    assert_eq!(create["dryRun"], false);
    assert_eq!(create["code"], 201);
    assert_eq!(create["userAgent"], "conformance-requests/1.0");
    assert_eq!(create["test"], tag.as_str());
    assert_eq!(
        create["metadata"]["labels"]["testing.kubemock.dev/test"],
        tag.as_str()
    );
    assert!(
        create["user"]["username"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );
    assert_eq!(create["requestContentType"], "application/json");
    assert!(
        create["responseContentType"]
            .as_str()
            .is_some_and(|t| t.starts_with("application/json"))
    );
    assert!(create["latencyMicroseconds"].as_u64().is_some());
    assert!(create["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    // The create committed: the cluster moved on to the object's resourceVersion.
    let before: u64 = create["resourceVersionBefore"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let after: u64 = create["resourceVersionAfter"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let object_rv: u64 = created.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        before < object_rv && object_rv <= after,
        "{before} {object_rv} {after}"
    );
    // Bodies are off by default.
    assert!(create.get("requestBody").is_none());
    let patch = &items[1];
    assert_eq!(patch["name"], "c1");
    assert_eq!(patch["fieldManager"], "patcher");
    assert_eq!(patch["dryRun"], true);
    assert_eq!(patch["requestContentType"], "application/merge-patch+json");
    assert_eq!(items[2]["code"], 404);
    let version = &items[3];
    assert_eq!(version["path"], "/version");
    assert!(version.get("resource").is_none());
    // Each entry is an object of its own, named by its resourceVersion.
    let name = create["metadata"]["name"].as_str().unwrap();
    assert_eq!(create["metadata"]["resourceVersion"], name);
    let one = h.get(&format!("{REQUESTS}/{name}")).await;
    assert_eq!(one.status, 200);
    assert_eq!(one.body["kind"], "Request");
    assert_eq!(one.body["apiVersion"], "testing.kubemock.dev/v1");
    assert_eq!(one.body["verb"], "create");
    let absent = h.get(&format!("{REQUESTS}/0")).await;
    assert_eq!(absent.status, 404);
    assert_eq!(absent.body["reason"], "NotFound");
}

#[tokio::test]
async fn field_and_label_selectors_filter_the_log() {
    let h = Harness::start().await;
    let ns = h.namespace("requests-select").await;
    let tag = format!("select-{ns}");
    let collection = format!("/api/v1/namespaces/{ns}/configmaps");
    for name in ["a", "b"] {
        let reply = tagged(
            &h,
            &tag,
            Method::POST,
            &collection,
            Some(&configmap(name, json!({}))),
            "application/json",
        )
        .await;
        assert_eq!(reply.status, 201);
    }
    let reply = tagged(
        &h,
        &tag,
        Method::PATCH,
        &format!("{collection}/b?fieldManager=m1"),
        Some(&json!({"data": {"x": "y"}})),
        "application/merge-patch+json",
    )
    .await;
    assert_eq!(reply.status, 200);
    // An untagged request is in the log, but not in this test's selection.
    h.get(&format!("{collection}/a")).await;

    let select = |selector: &str| {
        format!(
            "{REQUESTS}?fieldSelector={}",
            selector.replace('=', "%3D").replace(',', "%2C")
        )
    };
    let count = |reply: &kubemock_conformance::Reply| {
        reply.body["items"].as_array().map_or(usize::MAX, Vec::len)
    };
    let patch = h
        .get(&select(&format!(
            "verb=patch,resource=configmaps,test={tag},fieldManager=m1"
        )))
        .await;
    assert_eq!(count(&patch), 1, "{:?}", patch.body);
    assert_eq!(patch.body["items"][0]["name"], "b");
    let creates = h
        .get(&select(&format!("verb=create,namespace={ns},code=201")))
        .await;
    assert_eq!(count(&creates), 2);
    let not_create = h.get(&select(&format!("verb!=create,test={tag}"))).await;
    assert_eq!(count(&not_create), 1);
    let agent = h
        .get(&select(&format!(
            "userAgent=conformance-requests/1.0,name=b,test={tag}"
        )))
        .await;
    assert_eq!(count(&agent), 1);
    let untagged = h
        .get(&select(&format!("namespace={ns},verb=get,test=")))
        .await;
    assert_eq!(count(&untagged), 1);
    let labelled = h
        .get(&format!(
            "{REQUESTS}?labelSelector=testing.kubemock.dev%2Ftest%3D{tag}"
        ))
        .await;
    assert_eq!(count(&labelled), 3);
    let unknown = h.get(&select("spec.nodeName=x")).await;
    assert_eq!(unknown.status, 400);
    assert_eq!(
        unknown.body["message"],
        "field label not supported: spec.nodeName"
    );
    let bad = h.get(&format!("{REQUESTS}?fieldSelector=verb")).await;
    assert_eq!(bad.status, 400);

    // Pages: limit and continue walk the selection in order.
    let first = h
        .get(&format!("{}&limit=2", select(&format!("test={tag}"))))
        .await;
    assert_eq!(count(&first), 2);
    let token = first.body["metadata"]["continue"]
        .as_str()
        .expect("more")
        .to_owned();
    let second = h
        .get(&format!(
            "{}&limit=2&continue={token}",
            select(&format!("test={tag}"))
        ))
        .await;
    assert_eq!(count(&second), 1);
    assert!(second.body["metadata"].get("continue").is_none());
    assert_eq!(second.body["items"][0]["verb"], "patch");
}

#[tokio::test]
async fn a_watch_of_the_log_sees_new_requests_as_they_are_answered() {
    let h = Harness::start().await;
    let ns = h.namespace("requests-watch").await;
    let tag = format!("watch-{ns}");
    let list = h.get(REQUESTS).await;
    let rv = list.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut watch = h
        .watch(&format!(
            "{REQUESTS}?watch=true&resourceVersion={rv}&fieldSelector=test%3D{tag}"
        ))
        .await;
    assert_eq!(watch.status, 200);
    let collection = format!("/api/v1/namespaces/{ns}/configmaps");
    tagged(
        &h,
        &tag,
        Method::POST,
        &collection,
        Some(&configmap("w", json!({}))),
        "application/json",
    )
    .await;
    tagged(&h, &tag, Method::GET, &format!("{collection}/w"), None, "").await;
    let first = watch.next_event().await.expect("an event");
    assert_eq!(first["type"], "ADDED");
    assert_eq!(first["object"]["verb"], "create");
    let second = watch.next_event().await.expect("an event");
    assert_eq!(second["object"]["verb"], "get");
    let first_rv: u64 = first["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let second_rv: u64 = second["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(first_rv < second_rv);
    // A watch from 0 sends what the log holds first.
    let mut from_start = h
        .watch(&format!(
            "{REQUESTS}?watch=true&fieldSelector=test%3D{tag}&timeoutSeconds=5"
        ))
        .await;
    let replayed = from_start.next_event().await.expect("the first entry");
    assert_eq!(
        replayed["object"]["metadata"]["resourceVersion"],
        first["object"]["metadata"]["resourceVersion"]
    );
}

#[tokio::test]
async fn the_log_is_a_bounded_ring_and_a_watch_from_dropped_entries_is_expired() {
    let (_server, h) = own_server(RequestLogConfig {
        size: 3,
        bodies: false,
    })
    .await;
    for _ in 0..5 {
        assert_eq!(h.get("/api/v1/namespaces/default").await.status, 200);
    }
    let list = h.get(REQUESTS).await;
    let items = list.body["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 3, "{:?}", list.body);
    let oldest: u64 = items[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // Requests to the testing group itself are not logged: the list did not add itself.
    let again = h.get(REQUESTS).await;
    assert_eq!(again.body["items"], list.body["items"]);
    let mut watch = h
        .watch(&format!(
            "{REQUESTS}?watch=true&resourceVersion={}",
            oldest - 2
        ))
        .await;
    let event = watch.next_event().await.expect("an event");
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["code"], 410);
    assert_eq!(event["object"]["reason"], "Expired");
    assert_eq!(watch.next_event().await, None, "the stream ends");
    let expired = h
        .get(&format!("{REQUESTS}?limit=1&continue={}", oldest - 2))
        .await;
    assert_eq!(expired.status, 410);
}

#[tokio::test]
async fn delete_clears_the_log_and_resource_versions_go_on() {
    let (_server, h) = own_server(RequestLogConfig::default()).await;
    h.get("/api/v1/namespaces/default").await;
    let before = h.get(REQUESTS).await;
    let last: u64 = before.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(!before.body["items"].as_array().unwrap().is_empty());
    let dry = h.delete(&format!("{REQUESTS}?dryRun=All"), None).await;
    assert_eq!(dry.status, 200);
    assert!(
        !h.get(REQUESTS).await.body["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let cleared = h.delete(REQUESTS, None).await;
    assert_eq!(cleared.status, 200, "{:?}", cleared.body);
    assert_eq!(cleared.body["status"], "Success");
    assert_eq!(h.get(REQUESTS).await.body["items"], json!([]));
    h.get("/api/v1/namespaces/default").await;
    let after = h.get(REQUESTS).await;
    let items = after.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    let next: u64 = items[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(next > last);
    // One item cannot be deleted: the log is cleared as a whole.
    let one = h.delete(&format!("{REQUESTS}/{next}"), None).await;
    assert_eq!(one.status, 405);
}

#[tokio::test]
async fn bodies_are_logged_only_when_asked_for_and_decoded() {
    let (_server, h) = own_server(RequestLogConfig {
        size: 100,
        bodies: true,
    })
    .await;
    let reply = tagged(
        &h,
        "bodies",
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        Some(&configmap("with-body", json!({"k": "v"}))),
        "application/json",
    )
    .await;
    assert_eq!(reply.status, 201);
    let items = logged(&h, "bodies").await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["requestBody"]["data"]["k"], "v");
    assert_eq!(items[0]["responseBody"]["metadata"]["name"], "with-body");
    assert_eq!(
        items[0]["responseBody"]["metadata"]["uid"],
        reply.body["metadata"]["uid"]
    );
}

#[tokio::test]
async fn a_server_without_a_log_says_so() {
    let (_server, h) = own_server(RequestLogConfig {
        size: 0,
        bodies: false,
    })
    .await;
    let reply = h.get(REQUESTS).await;
    assert_eq!(reply.status, 503);
    assert_eq!(reply.body["reason"], "ServiceUnavailable");
}

#[tokio::test]
async fn kubectl_reads_the_log_as_a_table() {
    let h = Harness::start().await;
    let ns = h.namespace("requests-table").await;
    let tag = format!("table-{ns}");
    tagged(
        &h,
        &tag,
        Method::GET,
        &format!("/api/v1/namespaces/{ns}/configmaps/none"),
        None,
        "",
    )
    .await;
    let table = h
        .get_accepting(
            &format!("{REQUESTS}?fieldSelector=test%3D{tag}"),
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await;
    assert_eq!(table.status, 200);
    assert_eq!(table.body["kind"], "Table");
    let columns: Vec<&str> = table.body["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        columns,
        [
            "Name",
            "Verb",
            "Resource",
            "Namespace",
            "Object",
            "Code",
            "Latency",
            "User",
            "Test",
            "Age"
        ]
    );
    let cells = &table.body["rows"][0]["cells"];
    assert_eq!(cells[1], "get");
    assert_eq!(cells[2], "configmaps");
    assert_eq!(cells[3], ns.as_str());
    assert_eq!(cells[4], "none");
    assert_eq!(cells[5], 404);
}
