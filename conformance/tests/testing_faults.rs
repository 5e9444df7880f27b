//! kubemock's test-backend group, `testing.kubemock.dev/v1`: Faults (`faults`) and
//! compactions (`compactions`). Not a Kubernetes API (docs/test-powers.md): a
//! `Fault` makes the requests it matches fail, slow down, or end their watches.
//!
//! Against a shared server (`KUBEMOCK_CONFORMANCE_URL`) every Fault a test creates is scoped
//! to the test's own namespace (or its own User-Agent), so that tests running alongside are
//! not affected; the tests that act on the whole server (compaction, faults for any
//! resource, a durable restart) start servers of their own.

use std::time::{Duration, Instant};

use kubemock_apiserver::{ServerConfig, TestServer};
use kubemock_conformance::{Harness, causes, configmap};
use reqwest::Method;
use serde_json::{Value, json};

const FAULTS: &str = "/apis/testing.kubemock.dev/v1/faults";
const COMPACTIONS: &str = "/apis/testing.kubemock.dev/v1/compactions";

/// How long a test waits for a Fault's status to be written (it is written every 200 ms).
const STATUS_WAIT: Duration = Duration::from_secs(20);

/// Creates Fault `name` with `spec` (the test fails unless it is created).
async fn fault(h: &Harness, name: &str, spec: Value) {
    let reply = h
        .post(
            FAULTS,
            &json!({"apiVersion": "testing.kubemock.dev/v1", "kind": "Fault",
                "metadata": {"name": name}, "spec": spec}),
        )
        .await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
}

async fn delete_fault(h: &Harness, name: &str) {
    let reply = h.delete(&format!("{FAULTS}/{name}"), None).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
}

/// Waits until Fault `name`'s status satisfies `done`; returns it.
async fn status_until(h: &Harness, name: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + STATUS_WAIT;
    loop {
        let reply = h.get(&format!("{FAULTS}/{name}")).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        if done(&reply.body["status"]) {
            return reply.body["status"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "status of {name}: {}",
            reply.body["status"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn put_configmap(
    h: &Harness,
    ns: &str,
    name: &str,
    data: Value,
) -> kubemock_conformance::Reply {
    let current = h
        .get(&format!("/api/v1/namespaces/{ns}/configmaps/{name}"))
        .await;
    let mut object = current.body.clone();
    object["data"] = data;
    h.put(
        &format!("/api/v1/namespaces/{ns}/configmaps/{name}"),
        &object,
    )
    .await
}

#[tokio::test]
async fn faults_are_discovered_and_printed_with_their_columns() {
    let h = Harness::start().await;
    let resources = h.get("/apis/testing.kubemock.dev/v1").await;
    let list = resources.body["resources"].as_array().unwrap();
    let faults = list.iter().find(|r| r["name"] == "faults").expect("faults");
    assert_eq!(faults["kind"], "Fault");
    assert_eq!(faults["namespaced"], false);
    assert!(list.iter().any(|r| r["name"] == "faults/status"));
    assert!(list.iter().any(|r| r["name"] == "compactions"));
    let ns = h.namespace("faults-printed").await;
    let name = format!("printed-{ns}");
    fault(
        &h,
        &name,
        json!({"match": {"verbs": ["update"], "resource": "configmaps", "namespace": ns, "name": "web-*"},
            "action": {"status": {"code": 409}}, "count": 1}),
    )
    .await;
    status_until(&h, &name, |s| s["action"] == "409").await;
    let table = h
        .get_accepting(
            &format!("{FAULTS}/{name}"),
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .await;
    assert_eq!(table.status, 200, "{:?}", table.body);
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
            "Verbs",
            "Resource",
            "Object",
            "Action",
            "Matched",
            "Applied",
            "Exhausted",
            "Namespace",
            "User",
            "Age"
        ]
    );
    let cells = &table.body["rows"][0]["cells"];
    assert_eq!(cells[0], name.as_str());
    assert_eq!(cells[2], "configmaps");
    assert_eq!(cells[3], "web-*");
    assert_eq!(cells[4], "409");
    delete_fault(&h, &name).await;
}

#[tokio::test]
async fn invalid_faults_are_refused_with_field_errors() {
    let h = Harness::start().await;
    let reply = h
        .post(
            FAULTS,
            &json!({"metadata": {"name": "invalid-fault"}, "spec": {
                "match": {"verbs": ["pach"], "name": "web-[", "group": "testing.kubemock.dev"},
                "action": {"status": {"code": 418}},
                "probability": 1.5,
            }}),
        )
        .await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(reply.body["reason"], "Invalid");
    assert_eq!(
        causes(&reply.body),
        [
            "spec.match.verbs[0]: Unsupported value: \"pach\": supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"update\", \"watch\"",
            "spec.match.group: Forbidden: faults never apply to the testing.kubemock.dev group",
            "spec.match.name: Invalid value: \"web-[\": unclosed character class",
            "spec.action.status.code: Unsupported value: 418: supported values: \"400\", \"403\", \"404\", \"409\", \"410\", \"429\", \"500\", \"503\", \"504\"",
            "spec.probability: Invalid value: 1.5: must be between 0 and 1",
        ]
    );
    let empty = h
        .post(
            FAULTS,
            &json!({"metadata": {"name": "no-action"}, "spec": {"action": {}}}),
        )
        .await;
    assert_eq!(empty.status, 422, "{:?}", empty.body);
    assert!(
        empty.body["message"]
            .as_str()
            .unwrap()
            .contains("spec.action: Required value")
    );
}

#[tokio::test]
async fn a_conflict_fault_fails_the_next_update_with_upstreams_conflict_then_is_exhausted() {
    let h = Harness::start().await;
    let ns = h.namespace("faults-conflict").await;
    h.create_configmap(&ns, "web-1", json!({})).await;
    let name = format!("conflict-{ns}");
    fault(
        &h,
        &name,
        json!({"match": {"verbs": ["update", "patch"], "group": "", "resource": "configmaps",
            "namespace": ns, "name": "web-*"},
            "action": {"status": {"code": 409}}, "count": 1}),
    )
    .await;
    // A read is not matched.
    let read = h
        .get(&format!("/api/v1/namespaces/{ns}/configmaps/web-1"))
        .await;
    assert_eq!(read.status, 200);
    let refused = put_configmap(&h, &ns, "web-1", json!({"a": "1"})).await;
    assert_eq!(refused.status, 409, "{:?}", refused.body);
    assert_eq!(
        refused.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Operation cannot be fulfilled on configmaps \"web-1\": the object has been modified; please apply your changes to the latest version and try again",
            "reason": "Conflict", "details": {"name": "web-1", "kind": "configmaps"}, "code": 409})
    );
    // Nothing was written.
    let unchanged = h
        .get(&format!("/api/v1/namespaces/{ns}/configmaps/web-1"))
        .await;
    assert_eq!(unchanged.body["data"], json!({}));
    // Used up: the retry goes through.
    let retried = put_configmap(&h, &ns, "web-1", json!({"a": "1"})).await;
    assert_eq!(retried.status, 200, "{:?}", retried.body);
    let status = status_until(&h, &name, |s| s["exhausted"] == true).await;
    assert_eq!(status["applied"], 1);
    assert_eq!(status["matched"], 1);
    delete_fault(&h, &name).await;
}

#[tokio::test]
async fn each_status_answer_is_a_real_status_with_upstreams_reason() {
    let h = Harness::start().await;
    let ns = h.namespace("faults-codes").await;
    for (code, reason, message, retry) in [
        (410, "Expired", "too old resource version: 0 (", None),
        (
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
            Some("1"),
        ),
        (
            500,
            "InternalError",
            "Internal error occurred: an injected fault",
            None,
        ),
        (
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
            Some("7"),
        ),
        (
            504,
            "Timeout",
            "Timeout: request did not complete within the allotted timeout",
            Some("1"),
        ),
    ] {
        let object = format!("code-{code}");
        let mut answer = json!({"code": code});
        if code == 503 {
            answer["retryAfterSeconds"] = json!(7);
        }
        let name = format!("{object}-{ns}");
        fault(
            &h,
            &name,
            json!({"match": {"verbs": ["get"], "resource": "configmaps", "namespace": ns, "name": object},
                "action": {"status": answer}}),
        )
        .await;
        let reply = h
            .get(&format!("/api/v1/namespaces/{ns}/configmaps/{object}"))
            .await;
        assert_eq!(reply.status, code, "{:?}", reply.body);
        assert_eq!(reply.body["kind"], "Status");
        assert_eq!(reply.body["code"], code);
        assert_eq!(reply.body["reason"], reason);
        assert!(
            reply.body["message"].as_str().unwrap().starts_with(message),
            "{:?}",
            reply.body
        );
        assert_eq!(
            reply
                .headers
                .get("retry-after")
                .map(|v| v.to_str().unwrap()),
            retry,
            "{code}"
        );
        delete_fault(&h, &name).await;
    }
}

#[tokio::test]
async fn latency_delays_the_request_before_or_after_it_runs() {
    let h = Harness::start().await;
    let ns = h.namespace("faults-latency").await;
    let name = format!("latency-{ns}");
    let delay = Duration::from_millis(300);
    fault(
        &h,
        &name,
        json!({"match": {"verbs": ["create"], "resource": "configmaps", "namespace": ns},
            "action": {"latency": {"before": "150ms", "after": "150ms"}}}),
    )
    .await;
    let started = Instant::now();
    let created = h
        .post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &configmap("slow", json!({})),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert!(started.elapsed() >= delay, "{:?}", started.elapsed());
    delete_fault(&h, &name).await;
}

#[tokio::test]
async fn fail_after_commit_stores_the_write_and_answers_a_failure() {
    let h = Harness::start().await;
    let ns = h.namespace("faults-commit").await;
    let name = format!("commit-{ns}");
    fault(
        &h,
        &name,
        json!({"match": {"verbs": ["create"], "resource": "configmaps", "namespace": ns},
            "action": {"failAfterCommit": {"code": 500}}, "count": 1}),
    )
    .await;
    let created = h
        .post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &configmap("committed", json!({"a": "1"})),
        )
        .await;
    assert_eq!(created.status, 500, "{:?}", created.body);
    assert_eq!(created.body["reason"], "InternalError");
    // It did commit: the client's retry finds it taken.
    let stored = h
        .get(&format!("/api/v1/namespaces/{ns}/configmaps/committed"))
        .await;
    assert_eq!(stored.status, 200);
    assert_eq!(stored.body["data"]["a"], "1");
    let retried = h
        .post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &configmap("committed", json!({"a": "1"})),
        )
        .await;
    assert_eq!(retried.status, 409);
    assert_eq!(retried.body["reason"], "AlreadyExists");
    delete_fault(&h, &name).await;
}

/// Every match field: a fault matches only the requests it names, field by field.
#[tokio::test]
async fn each_match_field_narrows_what_a_fault_matches() {
    let h = Harness::start().await;
    let ns = h.namespace("faults-match").await;
    h.create_configmap(&ns, "labelled", json!({"tier": "web"}))
        .await;
    h.create_configmap(&ns, "plain", json!({})).await;
    let cm = |name: &str| format!("/api/v1/namespaces/{ns}/configmaps/{name}");
    let teapot = json!({"status": {"code": 503}});
    // labelSelector: the stored object's labels.
    let name = format!("labels-{ns}");
    fault(
        &h,
        &name,
        json!({"match": {"verbs": ["get"], "namespace": ns, "labelSelector": {"matchLabels": {"tier": "web"}}},
            "action": teapot}),
    )
    .await;
    assert_eq!(h.get(&cm("labelled")).await.status, 503);
    assert_eq!(h.get(&cm("plain")).await.status, 200);
    delete_fault(&h, &name).await;

    // userAgent and user: substrings.
    let name = format!("agent-{ns}");
    fault(
        &h,
        &name,
        json!({"match": {"namespace": ns, "userAgent": "my-controller/", "user": "admin"},
            "action": teapot}),
    )
    .await;
    let with_agent = h
        .request_with_headers(
            Method::GET,
            &cm("plain"),
            None,
            "",
            &[("user-agent", "my-controller/v0.1 (linux)")],
        )
        .await;
    assert_eq!(with_agent.status, 503);
    assert_eq!(h.get(&cm("plain")).await.status, 200);
    delete_fault(&h, &name).await;
    let name = format!("user-{ns}");
    fault(
        &h,
        &name,
        json!({"match": {"namespace": ns, "user": "alice"}, "action": teapot}),
    )
    .await;
    // The open mode's user is system:admin.
    assert_eq!(h.get(&cm("plain")).await.status, 200);
    delete_fault(&h, &name).await;

    // fieldManager and dryRun: from the query.
    let name = format!("manager-{ns}");
    fault(
        &h,
        &name,
        json!({"match": {"namespace": ns, "fieldManager": "mgr-a", "dryRun": true},
            "action": teapot}),
    )
    .await;
    let collection = format!("/api/v1/namespaces/{ns}/configmaps");
    let body = configmap("dry", json!({}));
    let dry_a = h
        .post(
            &format!("{collection}?fieldManager=mgr-a&dryRun=All"),
            &body,
        )
        .await;
    assert_eq!(dry_a.status, 503);
    let dry_b = h
        .post(
            &format!("{collection}?fieldManager=mgr-b&dryRun=All"),
            &body,
        )
        .await;
    assert_eq!(dry_b.status, 201);
    let real_a = h
        .post(&format!("{collection}?fieldManager=mgr-a"), &body)
        .await;
    assert_eq!(real_a.status, 201);
    delete_fault(&h, &name).await;

    // subresource: "" is the resource itself; "status" its status only.
    let name = format!("subresource-{ns}");
    fault(
        &h,
        &name,
        json!({"match": {"namespace": ns, "resource": "pods", "subresource": "status"},
            "action": teapot}),
    )
    .await;
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    assert_eq!(h.post(&pods, &pod).await.status, 201);
    assert_eq!(h.get(&format!("{pods}/p")).await.status, 200);
    assert_eq!(h.get(&format!("{pods}/p/status")).await.status, 503);
    delete_fault(&h, &name).await;

    // group: apps deployments are matched, not the core group's configmaps.
    let name = format!("group-{ns}");
    fault(
        &h,
        &name,
        json!({"match": {"namespace": ns, "group": "apps", "verbs": ["list"]}, "action": teapot}),
    )
    .await;
    assert_eq!(
        h.get(&format!("/apis/apps/v1/namespaces/{ns}/deployments"))
            .await
            .status,
        503
    );
    assert_eq!(h.get(&collection).await.status, 200);
    delete_fault(&h, &name).await;
}

#[tokio::test]
async fn after_skips_matches_and_a_seeded_probability_repeats_its_decisions() {
    let h = Harness::start().await;
    let ns = h.namespace("faults-schedule").await;
    h.create_configmap(&ns, "c", json!({})).await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps/c");
    async fn codes(h: &Harness, path: &str, n: usize) -> Vec<u16> {
        let mut codes = Vec::new();
        for _ in 0..n {
            codes.push(h.get(path).await.status);
        }
        codes
    }
    let name = format!("after-{ns}");
    fault(
        &h,
        &name,
        json!({"match": {"verbs": ["get"], "namespace": ns}, "action": {"status": {"code": 500}},
            "after": 2, "count": 2}),
    )
    .await;
    assert_eq!(codes(&h, &path, 6).await, [200, 200, 500, 500, 200, 200]);
    delete_fault(&h, &name).await;

    let mut runs = Vec::new();
    for run in 0..2 {
        let name = format!("probability-{run}-{ns}");
        fault(
            &h,
            &name,
            json!({"match": {"verbs": ["get"], "namespace": ns}, "action": {"status": {"code": 500}},
                "probability": 0.5, "seed": 1234}),
        )
        .await;
        runs.push(codes(&h, &path, 40).await);
        delete_fault(&h, &name).await;
    }
    assert_eq!(runs[0], runs[1]);
    let failed = runs[0].iter().filter(|c| **c == 500).count();
    assert!((5..35).contains(&failed), "{:?}", runs[0]);
}

#[tokio::test]
async fn a_fault_acts_only_between_its_start_and_expiry_times() {
    let h = Harness::start().await;
    let ns = h.namespace("faults-window").await;
    h.create_configmap(&ns, "c", json!({})).await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps/c");
    let window = [
        ("future", json!({"startTime": "2999-01-01T00:00:00Z"}), 200),
        ("past", json!({"expiryTime": "2000-01-01T00:00:00Z"}), 200),
        (
            "now",
            json!({"startTime": "2000-01-01T00:00:00Z", "expiryTime": "2999-01-01T00:00:00Z"}),
            500,
        ),
    ];
    for (label, times, expected) in window {
        let name = format!("window-{label}-{ns}");
        let mut spec = json!({"match": {"verbs": ["get"], "namespace": ns},
            "action": {"status": {"code": 500}}});
        for (key, value) in times.as_object().unwrap() {
            spec[key] = value.clone();
        }
        fault(&h, &name, spec).await;
        assert_eq!(h.get(&path).await.status, expected, "{label}");
        delete_fault(&h, &name).await;
    }
}

#[tokio::test]
async fn watch_faults_end_streams_expire_them_and_delay_their_events() {
    let h = Harness::start().await;
    let ns = h.namespace("faults-watch").await;
    for i in 0..3 {
        h.create_configmap(&ns, &format!("c{i}"), json!({})).await;
    }
    let watch_path = format!("/api/v1/namespaces/{ns}/configmaps?watch=1");
    // End after 2 events: a plain end of the stream.
    let name = format!("end-{ns}");
    fault(
        &h,
        &name,
        json!({"match": {"verbs": ["watch"], "namespace": ns},
            "action": {"watch": {"endAfterEvents": 2}}, "count": 1}),
    )
    .await;
    let mut watch = h.watch(&watch_path).await;
    assert_eq!(watch.status, 200);
    assert_eq!(watch.next_event().await.unwrap()["type"], "ADDED");
    assert_eq!(watch.next_event().await.unwrap()["type"], "ADDED");
    assert_eq!(watch.next_event().await, None);
    // Exhausted: the next watch sends all three.
    let mut watch = h.watch(&watch_path).await;
    for _ in 0..3 {
        assert_eq!(watch.next_event().await.unwrap()["type"], "ADDED");
    }
    drop(watch);
    delete_fault(&h, &name).await;

    // Expire after 1 event: an in-stream ERROR 410, then the end.
    let name = format!("expire-{ns}");
    fault(
        &h,
        &name,
        json!({"match": {"verbs": ["watch"], "namespace": ns},
            "action": {"watch": {"endAfterEvents": 1, "expire": true}}, "count": 1}),
    )
    .await;
    let mut watch = h.watch(&watch_path).await;
    assert_eq!(watch.next_event().await.unwrap()["type"], "ADDED");
    let error = watch.next_event().await.unwrap();
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["code"], 410);
    assert_eq!(error["object"]["reason"], "Expired");
    assert_eq!(watch.next_event().await, None);
    delete_fault(&h, &name).await;

    // End after a second, with a 410; events delayed by 100 ms each.
    let name = format!("timed-{ns}");
    fault(
        &h,
        &name,
        json!({"match": {"verbs": ["watch"], "namespace": ns},
            "action": {"watch": {"endAfterSeconds": 1, "expire": true, "delayEvents": "100ms"}},
            "count": 1}),
    )
    .await;
    let started = Instant::now();
    let mut watch = h.watch(&watch_path).await;
    for _ in 0..3 {
        assert_eq!(watch.next_event().await.unwrap()["type"], "ADDED");
    }
    assert!(started.elapsed() >= Duration::from_millis(300));
    let error = watch.next_event().await.unwrap();
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["code"], 410);
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(watch.next_event().await, None);
    delete_fault(&h, &name).await;
}

/// Bookmarks come every 100 ms on this server; a fault holding them back leaves a watch
/// with none, while a watch beside it gets them.
#[tokio::test]
async fn hold_bookmarks_sends_no_bookmark() {
    let server = TestServer::start_with(
        ServerConfig {
            bookmark_interval: Duration::from_millis(100),
            ..ServerConfig::default()
        },
        kubemock_storage::Config::ephemeral(),
    )
    .await
    .expect("a server");
    let h = Harness::connect(server.url());
    let ns = h.namespace("faults-bookmarks").await;
    fault(
        &h,
        "hold",
        json!({"match": {"verbs": ["watch"], "namespace": ns, "userAgent": "held"},
            "action": {"watch": {"holdBookmarks": true}}}),
    )
    .await;
    let rv = h
        .get(&format!("/api/v1/namespaces/{ns}/configmaps"))
        .await
        .body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!(
        "/api/v1/namespaces/{ns}/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion={rv}"
    );
    let open = |agent: &'static str| {
        let client = reqwest::Client::builder()
            .user_agent(agent)
            .build()
            .unwrap();
        let h = Harness::connect_with(server.url(), client);
        let path = path.clone();
        async move { h.watch(&path).await }
    };
    let mut held = open("held").await;
    let mut free = open("free").await;
    // The free watch gets a bookmark (so bookmarks were due), then the object.
    assert_eq!(free.next_event().await.unwrap()["type"], "BOOKMARK");
    h.create_configmap(&ns, "after", json!({})).await;
    loop {
        let event = free.next_event().await.unwrap();
        if event["type"] == "ADDED" {
            break;
        }
    }
    // The held one, open as long, gets the object first and no bookmark before it.
    let event = held.next_event().await.unwrap();
    assert_eq!(event["type"], "ADDED", "{event}");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn compactions_and_compact_faults_expire_older_resource_versions() {
    let server = TestServer::start().await.expect("a server");
    let h = Harness::connect(server.url());
    let ns = h.namespace("faults-compact").await;
    let first = h.create_configmap(&ns, "c1", json!({})).await;
    let rv = first["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    h.create_configmap(&ns, "c2", json!({})).await;
    let watch_path = format!("/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={rv}");
    let mut watch = h.watch(&watch_path).await;
    assert_eq!(
        watch.next_event().await.unwrap()["object"]["metadata"]["name"],
        "c2"
    );
    drop(watch);
    let compacted = h.post(COMPACTIONS, &json!({})).await;
    assert_eq!(compacted.status, 201, "{:?}", compacted.body);
    assert_eq!(compacted.body["kind"], "Compaction");
    let at: u64 = compacted.body["status"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(at > rv.parse::<u64>().unwrap());
    let mut watch = h.watch(&watch_path).await;
    let error = watch.next_event().await.unwrap();
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["code"], 410);
    // Only create is served.
    assert_eq!(h.get(COMPACTIONS).await.status, 405);

    // The compact action: a list from an old resourceVersion after it is 410.
    let old = h.create_configmap(&ns, "c3", json!({})).await["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    h.create_configmap(&ns, "c4", json!({})).await;
    fault(
        &h,
        "compact-on-get",
        json!({"match": {"verbs": ["get"], "namespace": ns, "name": "c4"},
            "action": {"compact": true}, "count": 1}),
    )
    .await;
    assert_eq!(
        h.get(&format!("/api/v1/namespaces/{ns}/configmaps/c4"))
            .await
            .status,
        200
    );
    let expired = h
        .get(&format!(
            "/api/v1/namespaces/{ns}/configmaps?resourceVersion={old}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(expired.status, 410, "{:?}", expired.body);
    server.stop().await.unwrap();
}

/// A fault for every request of a user leaves `testing.kubemock.dev` alone: the faults can
/// always be listed and deleted.
#[tokio::test]
async fn faults_never_apply_to_the_testing_group() {
    let server = TestServer::start().await.expect("a server");
    let h = Harness::connect(server.url());
    fault(
        &h,
        "everything",
        json!({"action": {"status": {"code": 503}}}),
    )
    .await;
    assert_eq!(h.get("/api/v1/namespaces").await.status, 503);
    let listed = h.get(FAULTS).await;
    assert_eq!(listed.status, 200, "{:?}", listed.body);
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 1);
    delete_fault(&h, "everything").await;
    assert_eq!(h.get("/api/v1/namespaces").await.status, 200);
    server.stop().await.unwrap();
}

/// Faults are objects in the store: on a durable store they survive a restart, with the
/// counts their status recorded.
#[tokio::test]
async fn faults_survive_a_durable_restart_with_their_counts() {
    let dir = tempfile::tempdir().unwrap();
    let config = || kubemock_storage::Config::durable(dir.path());
    let server = TestServer::start_with(ServerConfig::default(), config())
        .await
        .expect("a server");
    let h = Harness::connect(server.url());
    let ns = "default";
    h.create_configmap(ns, "c", json!({})).await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps/c");
    fault(
        &h,
        "twice",
        json!({"match": {"verbs": ["get"], "namespace": ns, "name": "c"},
            "action": {"status": {"code": 500}}, "count": 2}),
    )
    .await;
    assert_eq!(h.get(&path).await.status, 500);
    status_until(&h, "twice", |s| s["applied"] == 1).await;
    server.stop().await.unwrap();

    let server = TestServer::start_with(ServerConfig::default(), config())
        .await
        .expect("the server again");
    let h = Harness::connect(server.url());
    assert_eq!(h.get(&path).await.status, 500);
    assert_eq!(h.get(&path).await.status, 200);
    let status = status_until(&h, "twice", |s| s["exhausted"] == true).await;
    assert_eq!(status["applied"], 2);
    server.stop().await.unwrap();
}
