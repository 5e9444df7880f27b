//! Issue 16's differences from upstream that real clients found: server-side apply checks the
//! name on the merged object (docs/api-behaviour.md#server-side-apply), JSON patch follows evanphx/json-patch v4 (docs/api-behaviour.md#json-patch), custom
//! resources with a status subresource keep status and spec apart (docs/api-behaviour.md#custom-resources), status writes never
//! move the generation and keep what each kind's status strategy keeps (docs/api-behaviour.md#status-subresource, #generation), and
//! `/openapi/v2` is served in protobuf (docs/api-behaviour.md#openapi).

use kubemock_conformance::Harness;
use serde_json::json;

const APPLY: &str = "application/apply-patch+yaml";

#[tokio::test]
async fn s16_5_6_apply_checks_the_name_on_the_merged_object() {
    let h = Harness::start().await;
    let ns = h.namespace("s16-apply").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps/settings?fieldManager=tester");
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "settings"}, "data": {"a": "1"}});
    let created = h.patch(&path, APPLY, &config).await;
    assert_eq!(created.status, 201, "{}", created.body);
    // No name and no namespace in the configuration: the live object's stay.
    let nameless = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "2"}});
    let applied = h.patch(&path, APPLY, &nameless).await;
    assert_eq!(applied.status, 200, "{}", applied.body);
    assert_eq!(applied.body["metadata"]["name"], "settings");
    assert_eq!(applied.body["metadata"]["namespace"], ns.as_str());
    assert_eq!(applied.body["data"], json!({"a": "2"}));
    // Another namespace in the configuration is refused in checkName's words.
    let elsewhere = json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "settings", "namespace": "other"}});
    let refused = h.patch(&path, APPLY, &elsewhere).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        format!(
            "the namespace of the object (other) does not match the namespace on the request ({ns})"
        )
    );
    let renamed = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}});
    let refused = h.patch(&path, APPLY, &renamed).await;
    assert_eq!(refused.status, 400);
    assert_eq!(
        refused.body["message"],
        "the name of the object (other) does not match the name on the URL (settings)"
    );
    // Creating from a configuration without a name: the merged object has none.
    let missing = h
        .patch(
            &format!("/api/v1/namespaces/{ns}/configmaps/fresh?fieldManager=tester"),
            APPLY,
            &nameless,
        )
        .await;
    assert_eq!(missing.status, 400, "{}", missing.body);
    assert_eq!(
        missing.body["message"],
        "the name of the object () does not match the name on the URL (fresh)"
    );
    // A JSON merge patch that changes the namespace: checkName's namespace message too.
    let moved = h
        .patch(
            &format!("/api/v1/namespaces/{ns}/configmaps/settings"),
            "application/merge-patch+json",
            &json!({"metadata": {"namespace": "other"}}),
        )
        .await;
    assert_eq!(moved.status, 400);
    assert_eq!(
        moved.body["message"],
        format!(
            "the namespace of the object (other) does not match the namespace on the request ({ns})"
        )
    );
}

#[tokio::test]
async fn s16_5_2_json_patch_tests_null_on_a_missing_path_as_the_library_does() {
    let h = Harness::start().await;
    let ns = h.namespace("s16-jsonpatch").await;
    let created = h
        .post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &json!({"metadata": {"name": "c"}, "data": {"a": "1"}}),
        )
        .await;
    assert_eq!(created.status, 201);
    let path = format!("/api/v1/namespaces/{ns}/configmaps/c");
    let patch = json!([
        {"op": "test", "path": "/data/missing", "value": null},
        {"op": "add", "path": "/data/b", "value": "2"},
    ]);
    let reply = h.patch(&path, "application/json-patch+json", &patch).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["data"], json!({"a": "1", "b": "2"}));
    let failing = json!([{"op": "test", "path": "/data/a", "value": null}]);
    let reply = h
        .patch(&path, "application/json-patch+json", &failing)
        .await;
    assert_eq!(reply.status, 422);
}

/// A definition of `gizmos` in `group`, with a status subresource or not.
async fn gizmos(h: &Harness, group: &str, with_status: bool) {
    let subresources = if with_status {
        json!({"status": {}})
    } else {
        json!({})
    };
    let definition = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gizmos.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": subresources,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let created = h
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &definition,
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
}

#[tokio::test]
async fn s16_11_custom_resources_with_a_status_subresource_keep_status_and_spec_apart() {
    let h = Harness::start().await;
    let ns = h.namespace("s16-crstatus").await;
    gizmos(&h, "s16a.example.com", true).await;
    let collection = format!("/apis/s16a.example.com/v1/namespaces/{ns}/gizmos");
    let created = h
        .post(
            &collection,
            &json!({"apiVersion": "s16a.example.com/v1", "kind": "Gizmo",
                    "metadata": {"name": "g", "labels": {"a": "1"}},
                    "spec": {"size": 1}, "status": {"ready": true}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert!(
        created.body.get("status").is_none(),
        "a create cannot set the status"
    );
    assert_eq!(created.body["metadata"]["generation"], 1);
    let item = format!("{collection}/g");

    // /status sets the status and nothing else: not the spec, not the labels.
    let mut status = created.body.clone();
    status["status"] = json!({"ready": true});
    status["spec"] = json!({"size": 9});
    status["metadata"]["labels"] = json!({"a": "2"});
    let written = h.put(&format!("{item}/status"), &status).await;
    assert_eq!(written.status, 200, "{}", written.body);
    assert_eq!(written.body["status"], json!({"ready": true}));
    assert_eq!(written.body["spec"], json!({"size": 1}));
    assert_eq!(written.body["metadata"]["labels"], json!({"a": "1"}));
    assert_eq!(written.body["metadata"]["generation"], 1);

    // The object itself keeps the stored status; its spec moves the generation.
    let mut update = written.body.clone();
    update["status"] = json!({"ready": false});
    update["spec"] = json!({"size": 2});
    let updated = h.put(&item, &update).await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    assert_eq!(updated.body["status"], json!({"ready": true}));
    assert_eq!(updated.body["metadata"]["generation"], 2);
}

#[tokio::test]
async fn s16_11_custom_resources_without_a_status_subresource_version_their_status() {
    let h = Harness::start().await;
    let ns = h.namespace("s16-crnostatus").await;
    gizmos(&h, "s16b.example.com", false).await;
    let collection = format!("/apis/s16b.example.com/v1/namespaces/{ns}/gizmos");
    let created = h
        .post(
            &collection,
            &json!({"apiVersion": "s16b.example.com/v1", "kind": "Gizmo",
                    "metadata": {"name": "g"}, "spec": {"size": 1}, "status": {"ready": false}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["status"], json!({"ready": false}));
    let mut update = created.body.clone();
    update["status"] = json!({"ready": true});
    let updated = h.put(&format!("{collection}/g"), &update).await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    assert_eq!(updated.body["status"], json!({"ready": true}));
    assert_eq!(
        updated.body["metadata"]["generation"], 2,
        "everything but metadata counts without a status subresource"
    );
}

#[tokio::test]
async fn s16_4_6_status_writes_never_move_the_generation_and_keep_what_the_strategy_keeps() {
    let h = Harness::start().await;
    let ns = h.namespace("s16-status").await;
    let deployment = json!({
        "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"a": "1"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let created = h
        .post(
            &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
            &deployment,
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let item = format!("/apis/apps/v1/namespaces/{ns}/deployments/web");
    // What the deployment controller writes: status, with annotations it maintains.
    let mut status = created.body.clone();
    status["status"] = json!({"observedGeneration": 1, "replicas": 1});
    status["metadata"]["annotations"] = json!({"a": "1", "deployment.kubernetes.io/revision": "1"});
    status["metadata"]["labels"] = json!({"app": "changed"});
    status["spec"]["replicas"] = json!(5);
    let written = h.put(&format!("{item}/status"), &status).await;
    assert_eq!(written.status, 200, "{}", written.body);
    assert_eq!(written.body["metadata"]["generation"], 1);
    assert_eq!(written.body["spec"]["replicas"], 1, "spec kept");
    assert_eq!(
        written.body["metadata"]["labels"],
        json!({"app": "web"}),
        "labels kept"
    );
    assert_eq!(
        written.body["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    // A merge patch of the status likewise.
    let patched = h
        .patch(
            &format!("{item}/status"),
            "application/merge-patch+json",
            &json!({"metadata": {"annotations": {"b": "2"}}, "status": {"readyReplicas": 1}}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["metadata"]["generation"], 1);
    // The object's own writes still move it.
    let mut spec = patched.body.clone();
    spec["spec"]["replicas"] = json!(3);
    let updated = h.put(&item, &spec).await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    assert_eq!(updated.body["metadata"]["generation"], 2);

    // A pod's status write keeps its owner references.
    let pod = h
        .post(
            &format!("/api/v1/namespaces/{ns}/pods"),
            &json!({"metadata": {"name": "p", "ownerReferences": [{"apiVersion": "v1",
                "kind": "ConfigMap", "name": "owner", "uid": "1234"}]},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
        )
        .await;
    assert_eq!(pod.status, 201, "{}", pod.body);
    let mut status = pod.body.clone();
    status["metadata"]["ownerReferences"] = json!([]);
    status["status"]["phase"] = json!("Running");
    let written = h
        .put(&format!("/api/v1/namespaces/{ns}/pods/p/status"), &status)
        .await;
    assert_eq!(written.status, 200, "{}", written.body);
    assert_eq!(written.body["status"]["phase"], "Running");
    assert_eq!(
        written.body["metadata"]["ownerReferences"][0]["name"], "owner",
        "owner references kept"
    );
}

#[tokio::test]
async fn s16_2_7_openapi_v2_is_served_in_protobuf_as_kubectl_1_27_asks() {
    let h = Harness::start().await;
    let client = reqwest::Client::new();
    let response = client
        .get(format!("{}/openapi/v2", h.url()))
        .header(
            "Accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status(), 200);
    // Answered under the name Go's `mime` can read, as kube-openapi answers.
    assert_eq!(
        response.headers()["content-type"],
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    let bytes = response.bytes().await.expect("a body");
    // gnostic's `Document`: field 1 (`swagger`) first, "2.0".
    assert_eq!(&bytes[..5], b"\x0a\x032.0");
    assert!(
        bytes
            .windows(b"io.k8s.api.apps.v1.Deployment".len())
            .any(|w| w == b"io.k8s.api.apps.v1.Deployment"),
        "the definitions travel with it"
    );
    let json = h.get("/openapi/v2").await;
    assert_eq!(json.body["swagger"], "2.0");
    let unknown = h
        .get_accepting("/openapi/v2", "application/vnd.kubernetes.protobuf")
        .await;
    assert_eq!(unknown.status, 406);
}
