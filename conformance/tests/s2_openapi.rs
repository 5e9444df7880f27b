//! docs/api-behaviour.md#openapi: the OpenAPI documents kubectl reads before `create -f` and `apply -f`.

use kubemock_conformance::Harness;
use serde_json::{Value, json};

#[tokio::test]
async fn s2_7_v3_root_lists_group_versions_and_each_document_is_fetchable() {
    let h = Harness::start().await;
    let root = h.get("/openapi/v3").await;
    assert_eq!(root.status, 200);
    let paths = root.body["paths"].as_object().expect("paths");
    for key in [
        "api/v1",
        "apis/apps/v1",
        "apis/batch/v1",
        "apis/coordination.k8s.io/v1",
    ] {
        assert!(paths.contains_key(key), "{key} listed");
    }
    for (key, entry) in paths {
        let url = entry["serverRelativeURL"].as_str().expect("a URL");
        assert!(
            url.starts_with(&format!("/openapi/v3/{key}?hash=")),
            "{url}"
        );
        let document = h.get(url).await;
        assert_eq!(document.status, 200, "{url}");
        assert_eq!(document.body["openapi"], "3.0.0");
        assert!(document.body["components"]["schemas"].is_object());
    }
    assert_eq!(h.get("/openapi/v3/apis/nope/v1").await.status, 404);
}

#[tokio::test]
async fn s2_7_patch_operations_carry_the_kind_and_field_validation() {
    let h = Harness::start().await;
    let root = h.get("/openapi/v3").await;
    let url = root.body["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .expect("api/v1")
        .to_owned();
    let core = h.get(&url).await;
    for (path, kind) in [
        (
            "/api/v1/namespaces/{namespace}/configmaps/{name}",
            "ConfigMap",
        ),
        ("/api/v1/namespaces/{name}", "Namespace"),
        ("/api/v1/namespaces/{namespace}/services/{name}", "Service"),
    ] {
        let patch = &core.body["paths"][path]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "", "kind": kind, "version": "v1"}),
            "{path}"
        );
        let parameters = patch["parameters"].as_array().expect("parameters");
        assert!(
            parameters
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query"),
            "{path}"
        );
        // No requestBody: kubectl then computes strategic merge patches from its own types.
        assert!(patch.get("requestBody").is_none());
    }
    let pod = &core.body["components"]["schemas"]["io.k8s.api.core.v1.Pod"];
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "Pod", "version": "v1"}])
    );
    assert!(pod["properties"]["spec"].is_object());
}

#[tokio::test]
async fn s2_7_v2_is_json_when_json_is_acceptable() {
    let h = Harness::start().await;
    let v2 = h.get("/openapi/v2").await;
    assert_eq!(v2.status, 200);
    assert_eq!(v2.body["swagger"], "2.0");
    let deployment = &v2.body["definitions"]["io.k8s.api.apps.v1.Deployment"];
    assert!(
        deployment["properties"]["spec"]["$ref"]
            .as_str()
            .is_some_and(|r| r.starts_with("#/definitions/"))
    );
    let patch: &Value =
        &v2.body["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(patch["x-kubernetes-action"], "patch");
}
