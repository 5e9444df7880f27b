//! Regression tests for what an adversarial client found (the reliability findings): each
//! test is named after its finding and failed before the fix. The server must answer every
//! one of these requests with the real server's status, never a 5xx or a stall, and never
//! store what it cannot read back.

use kubemock_conformance::{Harness, configmap};
use serde_json::{Value, json};

const DEFINITIONS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn gadget_definition(group: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

/// Finding 1: a write to a definition that changes nothing has no event for the definitions
/// controller to see; it used to wait the whole 5 s for a controller revision that never
/// came, once anything else had been written. Each such write now answers without giving up
/// on the controller (`kubemock_crd_sync_timeouts_total` stays 0).
#[tokio::test]
async fn finding_1_no_op_writes_to_a_definition_do_not_wait_for_the_controller() {
    let h = Harness::start().await;
    let Some(_) = h.in_process() else {
        eprintln!("skipped: reads kubemock's own metrics");
        return;
    };
    let ns = h.namespace("finding-1").await;
    let group = "finding1.example.com";
    let path = format!("{DEFINITIONS}/gadgets.{group}");
    let created = h.post(DEFINITIONS, &gadget_definition(group)).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let timeouts = || async {
        h.metrics()
            .await
            .value("kubemock_crd_sync_timeouts_total", &[])
    };
    assert!(h.metrics().await.has("kubemock_crd_sync_timeouts_total"));
    assert_eq!(timeouts().await, 0.0);

    // Something else is written after the definition, so the store's revision moves past it.
    h.create_configmap(&ns, "after", json!({})).await;
    let empty = h
        .patch(&path, "application/merge-patch+json", &json!({}))
        .await;
    assert_eq!(empty.status, 200, "{:?}", empty.body);
    h.create_configmap(&ns, "after-2", json!({})).await;
    let current = h.get(&path).await.body;
    let unchanged = h.put(&path, &current).await;
    assert_eq!(unchanged.status, 200, "{:?}", unchanged.body);
    h.create_configmap(&ns, "after-3", json!({})).await;
    let apply = h
        .request(
            reqwest::Method::PATCH,
            &format!("{path}?fieldManager=finding-1"),
            Some(serde_json::to_vec(&gadget_definition(group)).expect("json")),
            "application/apply-patch+yaml",
        )
        .await;
    assert_eq!(apply.status, 200, "{:?}", apply.body);
    let again = h
        .request(
            reqwest::Method::PATCH,
            &format!("{path}?fieldManager=finding-1"),
            Some(serde_json::to_vec(&gadget_definition(group)).expect("json")),
            "application/apply-patch+yaml",
        )
        .await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    h.create_configmap(&ns, "after-4", json!({})).await;
    let none = h
        .delete(
            &format!("{DEFINITIONS}?labelSelector=matches%3Dnothing"),
            None,
        )
        .await;
    assert_eq!(none.status, 200, "{:?}", none.body);
    assert_eq!(timeouts().await, 0.0, "a no-op definition write waited 5 s");

    // A real change is still served when its write answers.
    let changed = h
        .patch(
            &path,
            "application/merge-patch+json",
            &json!({"spec": {"names": {"shortNames": ["gd"]}}}),
        )
        .await;
    assert_eq!(changed.status, 200, "{:?}", changed.body);
    let discovery = h.get(&format!("/apis/{group}/v1")).await.body;
    assert_eq!(discovery["resources"][0]["shortNames"], json!(["gd"]));
    assert_eq!(timeouts().await, 0.0);
    assert_eq!(h.delete(&path, None).await.status, 200);
}

/// Finding 3: upstream's store (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go`,
/// `Create`) refuses only a resourceVersion that `strconv.ParseUint` reads as more than zero
/// (a 500 without a reason, since its error is not a Status) and ignores anything else.
#[tokio::test]
async fn finding_3_create_ignores_a_resource_version_that_is_not_a_positive_integer() {
    let h = Harness::start().await;
    let ns = h.namespace("finding-3").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    for (index, rv) in [
        "abc",
        "0",
        "-1",
        "+5",
        " 7",
        "1.5",
        "99999999999999999999",
        "",
    ]
    .into_iter()
    .enumerate()
    {
        let mut body = configmap(&format!("cm-{index}"), json!({}));
        body["metadata"]["resourceVersion"] = json!(rv);
        let created = h.post(&path, &body).await;
        assert_eq!(
            created.status, 201,
            "resourceVersion {rv:?}: {:?}",
            created.body
        );
        assert_ne!(created.body["metadata"]["resourceVersion"], json!(rv));
    }
    for rv in ["5", "0005"] {
        let mut body = configmap("refused", json!({}));
        body["metadata"]["resourceVersion"] = json!(rv);
        let refused = h.post(&path, &body).await;
        assert_eq!(
            refused.status, 500,
            "resourceVersion {rv:?}: {:?}",
            refused.body
        );
        assert_eq!(
            refused.body["message"],
            "resourceVersion should not be set on objects to be created"
        );
        assert_eq!(refused.body.get("reason"), None);
    }
}
