//! `/metrics`: requests are counted under the real kube-apiserver's metric names and labels
//! (k8s.io/apiserver `pkg/endpoints/metrics/metrics.go`): verb as the real server reports it,
//! group, version, resource, subresource, scope, component, dry run and code; a latency
//! histogram beside the counter; open watches in a gauge while they are open.

use std::time::{Duration, Instant};

use kubemock_conformance::{Harness, configmap};
use serde_json::json;

/// The labels every core-group request made by these tests carries.
const CORE: [(&str, &str); 3] = [("group", ""), ("version", "v1"), ("component", "apiserver")];

fn core(labels: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    CORE.iter().chain(labels).copied().collect()
}

#[tokio::test]
async fn metrics_count_requests_by_verb_resource_scope_and_code() {
    let h = Harness::start().await;
    let ns = h.namespace("metrics-requests").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let before = h.metrics().await;

    let created = h.create_configmap(&ns, "m1", json!({})).await;
    assert_eq!(h.get(&format!("{path}/m1")).await.status, 200);
    assert_eq!(h.get(&format!("{path}/absent")).await.status, 404);
    assert_eq!(h.get(&path).await.status, 200);
    assert_eq!(h.get("/api/v1/configmaps?limit=1").await.status, 200);
    let mut changed = created.clone();
    changed["data"] = json!({"k": "v"});
    let updated = h.put(&format!("{path}/m1"), &changed).await;
    assert_eq!(updated.status, 200);
    let dry = h
        .post(&format!("{path}?dryRun=All"), &configmap("dry", json!({})))
        .await;
    assert_eq!(dry.status, 201);
    assert_eq!(
        h.get(&format!("/api/v1/namespaces/{ns}/status"))
            .await
            .status,
        200
    );
    assert_eq!(
        h.get(&format!("/apis/apps/v1/namespaces/{ns}/deployments"))
            .await
            .status,
        200
    );
    assert_eq!(h.delete(&path, None).await.status, 200);
    assert_eq!(h.get("/healthz").await.status, 200);
    assert_eq!(h.get("/api/v1/nonsense").await.status, 404);

    let after = h.metrics().await;
    let counted = |labels: &[(&str, &str)]| {
        after.value("apiserver_request_total", labels)
            - before.value("apiserver_request_total", labels)
    };
    let expected: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            core(&[
                ("verb", "POST"),
                ("resource", "configmaps"),
                ("scope", "resource"),
                ("dry_run", ""),
                ("code", "201"),
            ]),
            "create",
        ),
        (
            core(&[
                ("verb", "GET"),
                ("resource", "configmaps"),
                ("scope", "resource"),
                ("subresource", ""),
                ("code", "200"),
            ]),
            "get",
        ),
        (
            core(&[
                ("verb", "GET"),
                ("resource", "configmaps"),
                ("scope", "resource"),
                ("code", "404"),
            ]),
            "get of a missing object",
        ),
        (
            core(&[
                ("verb", "LIST"),
                ("resource", "configmaps"),
                ("scope", "namespace"),
                ("code", "200"),
            ]),
            "list in a namespace",
        ),
        (
            core(&[
                ("verb", "LIST"),
                ("resource", "configmaps"),
                ("scope", "cluster"),
                ("code", "200"),
            ]),
            "list across namespaces",
        ),
        (
            core(&[
                ("verb", "PUT"),
                ("resource", "configmaps"),
                ("scope", "resource"),
                ("code", "200"),
            ]),
            "update",
        ),
        (
            core(&[
                ("verb", "POST"),
                ("resource", "configmaps"),
                ("dry_run", "All"),
                ("code", "201"),
            ]),
            "dry-run create",
        ),
        (
            core(&[
                ("verb", "GET"),
                ("resource", "namespaces"),
                ("subresource", "status"),
                ("scope", "resource"),
                ("code", "200"),
            ]),
            "get of a subresource",
        ),
        (
            vec![
                ("verb", "LIST"),
                ("group", "apps"),
                ("version", "v1"),
                ("resource", "deployments"),
                ("scope", "namespace"),
                ("code", "200"),
            ],
            "list in a named group",
        ),
        (
            // The real server reports a collection delete as DELETE with a collection scope.
            core(&[
                ("verb", "DELETE"),
                ("resource", "configmaps"),
                ("scope", "namespace"),
                ("code", "200"),
            ]),
            "delete of a collection",
        ),
        (
            vec![
                ("verb", "GET"),
                ("resource", ""),
                ("subresource", "/healthz"),
                ("scope", ""),
                ("component", ""),
                ("code", "200"),
            ],
            "health check (path as subresource)",
        ),
    ];
    for (labels, what) in &expected {
        assert!(counted(labels) >= 1.0, "{what}: {labels:?} not counted");
    }
    assert_eq!(
        after.value("apiserver_request_total", &[("resource", "nonsense")]),
        0.0,
        "route-level 404s are not counted"
    );

    // Every counted request is also timed: the histogram's +Inf bucket equals its count.
    let list = core(&[
        ("verb", "LIST"),
        ("resource", "configmaps"),
        ("scope", "namespace"),
    ]);
    let count = |m: &kubemock_conformance::Metrics| {
        m.value("apiserver_request_duration_seconds_count", &list)
    };
    assert!(count(&after) - count(&before) >= 1.0);
    let mut inf = list.clone();
    inf.push(("le", "+Inf"));
    assert_eq!(
        after.value("apiserver_request_duration_seconds_bucket", &inf),
        count(&after)
    );
    assert!(after.value("process_start_time_seconds", &[]) > 0.0);

    if h.in_process().is_some() {
        let written: f64 = updated.body["metadata"]["resourceVersion"]
            .as_str()
            .expect("a resourceVersion")
            .parse()
            .expect("numeric");
        let revision = after.value("kubemock_store_revision", &[]);
        assert!(revision >= written, "store revision {revision} < {written}");
        assert!(after.has("kubemock_store_compacted_revision"));
        assert!(after.value("kubemock_store_compacted_revision", &[]) <= revision);
    }
}

#[tokio::test]
async fn metrics_count_open_watches_until_their_client_leaves() {
    let h = Harness::start().await;
    let ns = h.namespace("metrics-watch").await;
    let watch_labels = core(&[
        ("verb", "WATCH"),
        ("resource", "configmaps"),
        ("subresource", ""),
        ("scope", "namespace"),
    ]);
    let mut ended = watch_labels.clone();
    ended.push(("code", "200"));
    let before = h.metrics().await;
    let open_before = before.value("apiserver_longrunning_requests", &watch_labels);

    let watch = h
        .watch(&format!("/api/v1/namespaces/{ns}/configmaps?watch=true"))
        .await;
    assert_eq!(watch.status, 200);
    let during = h.metrics().await;
    assert_eq!(
        during.value("apiserver_longrunning_requests", &watch_labels),
        open_before + 1.0
    );

    drop(watch);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if h.metrics()
            .await
            .value("apiserver_longrunning_requests", &watch_labels)
            == open_before
        {
            // Counted once over (before it left the gauge), with the whole time it was open.
            let after = h.metrics().await;
            assert!(
                after.value("apiserver_request_total", &ended)
                    >= before.value("apiserver_request_total", &ended) + 1.0
            );
            break;
        }
        assert!(Instant::now() < deadline, "the watch stayed in the gauge");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `kubemock_http_requests_total` (kubemock's own, for the Go suite's check that client-go's
/// typed clients spoke protobuf): each request counted once under the media type of its body
/// and of its answer, in both encodings a client may speak.
#[tokio::test]
async fn requests_are_counted_by_the_media_types_of_body_and_answer() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("metrics-wire").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let before = h.metrics().await;

        h.create_configmap(&ns, "w1", json!({})).await;
        assert_eq!(h.get(&format!("{path}/w1")).await.status, 200);
        assert_eq!(h.get(&format!("{path}/absent")).await.status, 404);
        let patched = h
            .patch(
                &format!("{path}/w1"),
                "application/merge-patch+json",
                &json!({"data": {"k": "v"}}),
            )
            .await;
        assert_eq!(patched.status, 200);

        let after = h.metrics().await;
        let counted = |verb: &str, request: &str| {
            let labels = [
                ("verb", verb),
                ("group", ""),
                ("resource", "configmaps"),
                ("request_content_type", request),
                ("response_content_type", h.media_type()),
            ];
            after.value("kubemock_http_requests_total", &labels)
                - before.value("kubemock_http_requests_total", &labels)
        };
        let encoding = h.encoding();
        // A body is protobuf when the client sends one (client-go's typed clients do for
        // built-in kinds), a patch is its own media type in either encoding; the 404's
        // Status comes in the encoding asked for, as every other answer.
        assert_eq!(counted("POST", h.media_type()), 1.0, "{encoding:?}");
        assert_eq!(counted("GET", ""), 2.0, "{encoding:?}");
        assert_eq!(
            counted("PATCH", "application/merge-patch+json"),
            1.0,
            "{encoding:?}"
        );
    }
}
