//! docs/api-behaviour.md#server-side-apply: server-side apply and `metadata.managedFields` on every write: apply creating a
//! missing object, field ownership per manager, conflicts (409 with the managers and fields),
//! `force`, removal of fields a manager stops applying, no-op re-applies, the options rules,
//! and the Update entries of ordinary writes (manager from `fieldManager` or the User-Agent).

use kubemock_conformance::{Harness, configmap, deployment};
use reqwest::Method;
use serde_json::{Value, json};

const APPLY: &str = "application/apply-patch+yaml";
const MERGE: &str = "application/merge-patch+json";

fn entries(object: &Value) -> &Vec<Value> {
    object["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
}

fn entry<'a>(object: &'a Value, manager: &str) -> &'a Value {
    entries(object)
        .iter()
        .find(|e| e["manager"] == manager)
        .unwrap_or_else(|| panic!("no entry for {manager} in {object}"))
}

fn rv(object: &Value) -> &str {
    object["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion")
}

#[tokio::test]
async fn s5_6_every_write_records_an_update_entry_for_its_manager() {
    let h = Harness::start().await;
    let ns = h.namespace("s5-6-update").await;
    let path = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let created = h
        .post(
            &format!("{path}?fieldManager=kubectl-create"),
            &deployment("web", 1, "nginx"),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let created_entry = entry(&created.body, "kubectl-create");
    assert_eq!(created_entry["operation"], "Update");
    assert_eq!(created_entry["apiVersion"], "apps/v1");
    assert_eq!(created_entry["fieldsType"], "FieldsV1");
    assert!(
        created_entry["time"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    // What the real server records for a created Deployment (`.` on maps and list elements
    // that appeared, nothing for server-set metadata).
    let fields = &created_entry["fieldsV1"];
    assert_eq!(
        fields["f:metadata"],
        json!({"f:labels": {".": {}, "f:app": {}}})
    );
    assert_eq!(fields["f:spec"]["f:replicas"], json!({}));
    assert_eq!(
        fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"main\"}"]["."],
        json!({})
    );

    // Without fieldManager the User-Agent up to its first "/" names the manager.
    let reply = h
        .request_with_headers(
            Method::PATCH,
            &format!("{path}/web"),
            Some(json!({"spec": {"replicas": 4}}).to_string().into_bytes()),
            MERGE,
            &[("user-agent", "my-controller/v0.1 (linux)")],
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(
        entry(&reply.body, "my-controller")["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
    // The later writer took the field over.
    assert!(
        entry(&reply.body, "kubectl-create")["fieldsV1"]["f:spec"]
            .get("f:replicas")
            .is_none()
    );

    // A status write is recorded with its subresource.
    let mut status = reply.body.clone();
    status["status"] = json!({"replicas": 4});
    let reply = h
        .put(
            &format!("{path}/web/status?fieldManager=kube-controller-manager"),
            &status,
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let status_entry = entry(&reply.body, "kube-controller-manager");
    assert_eq!(status_entry["subresource"], "status");
    assert_eq!(
        status_entry["fieldsV1"],
        json!({"f:status": {"f:replicas": {}}})
    );
}

#[tokio::test]
async fn s5_6_apply_creates_then_owns_exactly_what_it_applies() {
    let h = Harness::start().await;
    let ns = h.namespace("s5-6-apply").await;
    let item = format!("/api/v1/namespaces/{ns}/configmaps/cfg");
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cfg", "labels": {"team": "a"}},
        "data": {"a": "1", "b": "2"}});
    let created = h
        .patch(&format!("{item}?fieldManager=tool"), APPLY, &config)
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.body["data"], json!({"a": "1", "b": "2"}));
    let mine = entry(&created.body, "tool");
    assert_eq!(mine["operation"], "Apply");
    assert_eq!(
        mine["fieldsV1"],
        json!({"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {"f:team": {}}}})
    );

    // The same configuration again is a no-op: no new resourceVersion.
    let again = h
        .patch(&format!("{item}?fieldManager=tool"), APPLY, &config)
        .await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    assert_eq!(rv(&again.body), rv(&created.body));
    assert_eq!(again.body, h.get(&item).await.body);

    // A field the manager stops applying is removed; one it never applied stays.
    let patched = h
        .patch(
            &format!("{item}?fieldManager=other"),
            MERGE,
            &json!({"data": {"c": "3"}}),
        )
        .await;
    assert_eq!(patched.status, 200);
    let smaller = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cfg"}, "data": {"a": "1"}});
    let reply = h
        .patch(&format!("{item}?fieldManager=tool"), APPLY, &smaller)
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["data"], json!({"a": "1", "c": "3"}));
    assert!(
        reply.body["metadata"]
            .get("labels")
            .is_none_or(|l| l.get("team").is_none())
    );
    assert_eq!(
        entry(&reply.body, "tool")["fieldsV1"],
        json!({"f:data": {"f:a": {}}})
    );

    // YAML bodies are what kubectl sends.
    let yaml =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"1\"\n  d: \"4\"\n";
    let reply = h
        .request(
            Method::PATCH,
            &format!("{item}?fieldManager=tool"),
            Some(yaml.as_bytes().to_vec()),
            APPLY,
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["data"], json!({"a": "1", "c": "3", "d": "4"}));
}

#[tokio::test]
async fn s5_6_a_conflicting_apply_is_409_unless_forced() {
    let h = Harness::start().await;
    let ns = h.namespace("s5-6-conflict").await;
    let path = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let created = h
        .post(
            &format!("{path}?fieldManager=kubectl-client-side-apply"),
            &deployment("web", 1, "nginx"),
        )
        .await;
    assert_eq!(created.status, 201);
    let item = format!("{path}/web");
    let config = deployment("web", 3, "nginx");
    let reply = h
        .patch(&format!("{item}?fieldManager=kubectl"), APPLY, &config)
        .await;
    assert_eq!(reply.status, 409, "{:?}", reply.body);
    assert_eq!(
        reply.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas",
            "reason": "Conflict",
            "details": {"causes": [{"reason": "FieldManagerConflict",
                "message": "conflict with \"kubectl-client-side-apply\" using apps/v1",
                "field": ".spec.replicas"}]},
            "code": 409})
    );
    // Nothing was written.
    assert_eq!(rv(&h.get(&item).await.body), rv(&created.body));

    // Two conflicting fields are listed under their manager.
    let reply = h
        .patch(
            &format!("{item}?fieldManager=kubectl"),
            APPLY,
            &deployment("web", 3, "httpd"),
        )
        .await;
    assert_eq!(reply.status, 409);
    assert_eq!(
        reply.body["message"],
        "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name=\"main\"].image"
    );

    // Forced, the applier takes the fields over.
    let reply = h
        .patch(
            &format!("{item}?fieldManager=kubectl&force=true"),
            APPLY,
            &config,
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["spec"]["replicas"], 3);
    assert!(
        entry(&reply.body, "kubectl-client-side-apply")["fieldsV1"]["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    assert!(entry(&reply.body, "kubectl")["fieldsV1"]["f:spec"]["f:replicas"].is_object());
    // Apply entries sort before Update entries.
    assert_eq!(entries(&reply.body)[0]["operation"], "Apply");

    // Setting a field to the value it already has is no conflict.
    let reply = h
        .patch(
            &format!("{item}?fieldManager=third"),
            APPLY,
            &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx"}]}}}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
}

#[tokio::test]
async fn s5_6_patch_options_are_validated_like_the_real_server() {
    let h = Harness::start().await;
    let ns = h.namespace("s5-6-options").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    h.post(&path, &configmap("cm", json!({"a": "1"}))).await;
    let item = format!("{path}/cm");
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}});
    let reply = h.patch(&item, APPLY, &config).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let reply = h
        .patch(&format!("{item}?force=true"), MERGE, &json!({"data": {}}))
        .await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
    // The configuration names the object of the URL.
    let wrong = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}});
    let reply = h
        .patch(&format!("{item}?fieldManager=m"), APPLY, &wrong)
        .await;
    assert_eq!(reply.status, 400, "{:?}", reply.body);
    // managedFields cannot be applied.
    let with_fields = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "managedFields": [{"manager": "x"}]}});
    let reply = h
        .patch(&format!("{item}?fieldManager=m"), APPLY, &with_fields)
        .await;
    assert_eq!(reply.status, 400, "{:?}", reply.body);
    // A stale resourceVersion in the configuration is a precondition.
    let stale = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "resourceVersion": "1"}, "data": {"a": "2"}});
    let reply = h
        .patch(&format!("{item}?fieldManager=m"), APPLY, &stale)
        .await;
    assert_eq!(reply.status, 409, "{:?}", reply.body);
    // ...but ignored when the apply creates the object.
    let reply = h
        .patch(
            &format!("{path}/fresh?fieldManager=m"),
            APPLY,
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "fresh", "resourceVersion": "1"}}),
        )
        .await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
}

#[tokio::test]
async fn s5_6_managed_fields_are_reset_with_a_single_empty_entry() {
    let h = Harness::start().await;
    let ns = h.namespace("s5-6-reset").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let created = h
        .post(
            &format!("{path}?fieldManager=creator"),
            &configmap("r", json!({"a": "1"})),
        )
        .await;
    assert_eq!(entries(&created.body).len(), 1);
    // An empty list does not reset (clients unaware of the field must not strip it)...
    let reply = h
        .patch(
            &format!("{path}/r?fieldManager=x"),
            MERGE,
            &json!({"metadata": {"managedFields": []}, "data": {"b": "2"}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(entries(&reply.body).len(), 2);
    // ...a list of one empty entry does.
    let reply = h
        .patch(
            &format!("{path}/r?fieldManager=x"),
            MERGE,
            &json!({"metadata": {"managedFields": [{}]}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert!(reply.body["metadata"].get("managedFields").is_none());
}
