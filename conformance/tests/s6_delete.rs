//! §6.1, §6.2, §6.5: DELETE responses, finalizers, preconditions and deletecollection.

use kubemock_conformance::{Harness, configmap};
use serde_json::json;

#[tokio::test]
async fn s6_2_most_kinds_answer_a_status_and_pods_answer_the_object() {
    let h = Harness::start().await;
    let ns = h.namespace("s6-2").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let created = h.post(&path, &configmap("c1", json!({}))).await.body;
    let reply = h.delete(&format!("{path}/c1"), None).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.body,
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",
            "details":{"name":"c1","kind":"configmaps","uid":created["metadata"]["uid"]}})
    );
    assert_eq!(h.get(&format!("{path}/c1")).await.status, 404);
    assert_eq!(h.delete(&format!("{path}/c1"), None).await.status, 404);

    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    assert_eq!(h.post(&pods, &pod).await.status, 201);
    let reply = h.delete(&format!("{pods}/p"), None).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["kind"], "Pod");
    assert_eq!(reply.body["metadata"]["name"], "p");
}

#[tokio::test]
async fn s6_1_finalizers_keep_the_object_with_a_deletion_timestamp() {
    let h = Harness::start().await;
    let ns = h.namespace("s6-1").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let mut body = configmap("f", json!({}));
    body["metadata"]["finalizers"] = json!(["example.com/keep"]);
    assert_eq!(h.post(&path, &body).await.status, 201);
    let reply = h.delete(&format!("{path}/f"), None).await;
    assert_eq!(reply.status, 200);
    assert!(reply.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(reply.body["metadata"]["deletionGracePeriodSeconds"], 0);
    let still = h.get(&format!("{path}/f")).await;
    assert_eq!(still.status, 200);
    assert!(still.body["metadata"]["deletionTimestamp"].is_string());
}

#[tokio::test]
async fn s6_1_preconditions_name_the_kind() {
    let h = Harness::start().await;
    let ns = h.namespace("s6-1-pre").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let created = h.post(&path, &configmap("c", json!({}))).await.body;
    let uid = created["metadata"]["uid"].as_str().unwrap();
    let options =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "u1"}});
    let reply = h.delete(&format!("{path}/c"), Some(&options)).await;
    assert_eq!(reply.status, 409);
    assert_eq!(
        reply.body["message"],
        format!(
            "Operation cannot be fulfilled on ConfigMap \"c\": the UID in the precondition (u1) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
        )
    );
    let options = json!({"preconditions": {"resourceVersion": "1"}});
    let reply = h.delete(&format!("{path}/c"), Some(&options)).await;
    assert_eq!(reply.status, 409);
    let options = json!({"preconditions": {"uid": uid, "resourceVersion": created["metadata"]["resourceVersion"]}});
    assert_eq!(
        h.delete(&format!("{path}/c"), Some(&options)).await.status,
        200
    );
}

#[tokio::test]
async fn s3_4_system_namespaces_may_not_be_deleted() {
    let h = Harness::start().await;
    let reply = h.delete("/api/v1/namespaces/default", None).await;
    assert_eq!(reply.status, 403);
    assert_eq!(
        reply.body["message"],
        "namespaces \"default\" is forbidden: this namespace may not be deleted"
    );
}

#[tokio::test]
async fn s6_5_deletecollection_deletes_the_selected_objects_and_lists_them() {
    let h = Harness::start().await;
    let ns = h.namespace("s6-5").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    for (name, tier) in [("a", "web"), ("b", "web"), ("c", "db")] {
        let mut body = configmap(name, json!({}));
        body["metadata"]["labels"] = json!({"tier": tier});
        assert_eq!(h.post(&path, &body).await.status, 201);
    }
    let reply = h
        .delete(&format!("{path}?labelSelector=tier%3Dweb"), None)
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["kind"], "ConfigMapList");
    let names: Vec<&str> = reply.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let left = h.get(&path).await.body;
    let names: Vec<&str> = left["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c"]);
}
