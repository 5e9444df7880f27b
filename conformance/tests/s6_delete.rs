//! docs/api-behaviour.md#delete-step-by-step, #delete-responses, #deletecollection: DELETE responses, finalizers, preconditions and deletecollection.

use kubemock_conformance::{Harness, configmap};
use serde_json::{Value, json};

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

fn finalizers(object: &serde_json::Value) -> serde_json::Value {
    object["metadata"]["finalizers"].clone()
}

#[tokio::test]
async fn s6_3_propagation_policies_put_the_garbage_collectors_finalizers() {
    let h = Harness::start().await;
    let ns = h.namespace("s6-3").await;
    let path = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    for (name, policy, expected) in [
        ("fg", "Foreground", json!(["foregroundDeletion"])),
        ("or", "Orphan", json!(["orphan"])),
    ] {
        let created = h
            .post(&path, &kubemock_conformance::deployment(name, 1, "nginx"))
            .await;
        assert_eq!(created.status, 201);
        let reply = h
            .delete(
                &format!("{path}/{name}"),
                Some(&json!({"propagationPolicy": policy})),
            )
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(finalizers(&reply.body), expected, "{policy}");
        assert!(reply.body["metadata"]["deletionTimestamp"].is_string());
        // generation moves when the deletion starts (docs/api-behaviour.md#delete-step-by-step step 5).
        assert_eq!(reply.body["metadata"]["generation"], 2);
        // Still there until a garbage collector removes its finalizer.
        assert_eq!(h.get(&format!("{path}/{name}")).await.status, 200);
    }
    // Background (kubectl's default) removes at once.
    h.post(&path, &kubemock_conformance::deployment("bg", 1, "nginx"))
        .await;
    let reply = h
        .delete(&format!("{path}/bg?propagationPolicy=Background"), None)
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["status"], "Success");
    // Jobs orphan by default, and say so in a warning.
    let jobs = format!("/apis/batch/v1/namespaces/{ns}/jobs");
    let job = json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
    assert_eq!(h.post(&jobs, &job).await.status, 201);
    let reply = h.delete(&format!("{jobs}/j"), None).await;
    assert_eq!(finalizers(&reply.body), json!(["orphan"]));
    let warning = reply
        .headers
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(
        warning.contains("child pods are preserved by default"),
        "{warning}"
    );
    let reply = h
        .delete(
            &format!("{path}/x"),
            Some(&json!({"propagationPolicy": "Sometimes"})),
        )
        .await;
    assert_eq!(reply.status, 422);
}

#[tokio::test]
async fn s6_1_removing_the_last_finalizer_deletes_in_the_same_request() {
    let h = Harness::start().await;
    let ns = h.namespace("s6-1-last").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let mut body = configmap("f", json!({}));
    body["metadata"]["finalizers"] = json!(["example.com/a", "example.com/b"]);
    assert_eq!(h.post(&path, &body).await.status, 201);
    let mut watch = h
        .watch(&format!(
            "{path}?watch=true&fieldSelector=metadata.name%3Df"
        ))
        .await;
    assert_eq!(watch.next_event().await.expect("ADDED")["type"], "ADDED");
    let deleting = h.delete(&format!("{path}/f"), None).await.body;
    assert_eq!(
        watch.next_event().await.expect("MODIFIED")["type"],
        "MODIFIED"
    );
    // docs/api-behaviour.md#finalizers: no new finalizer once deleting.
    let reply = h
        .patch(
            &format!("{path}/f"),
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": ["example.com/a", "example.com/b", "example.com/c"]}}),
        )
        .await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert!(
        reply.body["message"].as_str().is_some_and(
            |m| m.contains("no new finalizers can be added if the object is being deleted")
        ),
        "{:?}",
        reply.body
    );
    // Dropping one keeps it; dropping the last deletes it: DELETED, not MODIFIED.
    let reply = h
        .patch(
            &format!("{path}/f"),
            "application/json-patch+json",
            &json!([{"op": "remove", "path": "/metadata/finalizers/0"}]),
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        watch.next_event().await.expect("MODIFIED")["type"],
        "MODIFIED"
    );
    let mut last = reply.body.clone();
    last["metadata"]["finalizers"] = json!([]);
    let reply = h.put(&format!("{path}/f"), &last).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let event = watch.next_event().await.expect("DELETED");
    assert_eq!(event["type"], "DELETED");
    assert_eq!(h.get(&format!("{path}/f")).await.status, 404);
    assert!(deleting["metadata"]["deletionTimestamp"].is_string());
}

#[tokio::test]
async fn s6_6_pods_on_a_node_are_deleted_gracefully() {
    let h = Harness::start().await;
    let ns = h.namespace("s6-6").await;
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let pod = |name: &str, node: Option<&str>| {
        let mut pod = json!({"metadata": {"name": name},
                             "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        if let Some(node) = node {
            pod["spec"]["nodeName"] = json!(node);
        }
        pod
    };
    // Unassigned: grace 0, two writes (MODIFIED with a deletionTimestamp, then DELETED).
    assert_eq!(h.post(&pods, &pod("free", None)).await.status, 201);
    let mut watch = h
        .watch(&format!(
            "{pods}?watch=true&fieldSelector=metadata.name%3Dfree"
        ))
        .await;
    assert_eq!(watch.next_event().await.expect("ADDED")["type"], "ADDED");
    let reply = h.delete(&format!("{pods}/free"), None).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["kind"], "Pod");
    assert_eq!(reply.body["metadata"]["deletionGracePeriodSeconds"], 0);
    let modified = watch.next_event().await.expect("MODIFIED");
    assert_eq!(modified["type"], "MODIFIED");
    assert!(modified["object"]["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        watch.next_event().await.expect("DELETED")["type"],
        "DELETED"
    );
    // On a node: kept for the kubelet with the pod's grace period; a shorter one wins; 0 removes.
    assert_eq!(
        h.post(&pods, &pod("bound", Some("node-a"))).await.status,
        201
    );
    let reply = h.delete(&format!("{pods}/bound"), None).await;
    assert_eq!(reply.body["metadata"]["deletionGracePeriodSeconds"], 30);
    assert_eq!(h.get(&format!("{pods}/bound")).await.status, 200);
    let reply = h
        .delete(
            &format!("{pods}/bound"),
            Some(&json!({"gracePeriodSeconds": 5})),
        )
        .await;
    assert_eq!(reply.body["metadata"]["deletionGracePeriodSeconds"], 5);
    let reply = h
        .delete(
            &format!("{pods}/bound"),
            Some(&json!({"gracePeriodSeconds": 60})),
        )
        .await;
    assert_eq!(reply.body["metadata"]["deletionGracePeriodSeconds"], 5);
    let reply = h
        .delete(&format!("{pods}/bound?gracePeriodSeconds=0"), None)
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(h.get(&format!("{pods}/bound")).await.status, 404);
}

#[tokio::test]
async fn s6_7_a_deleted_namespace_terminates_until_finalized() {
    let h = Harness::start().await;
    let ns = h.namespace("s6-7").await;
    let path = format!("/api/v1/namespaces/{ns}");
    // A second spec finalizer (added through /finalize) keeps the namespace even where a
    // namespace controller runs: it only removes `kubernetes`.
    let mut body = h.get(&path).await.body;
    assert_eq!(body["spec"]["finalizers"], json!(["kubernetes"]));
    body["spec"]["finalizers"] = json!(["kubernetes", "example.com/hold"]);
    let held = h.put(&format!("{path}/finalize"), &body).await;
    assert_eq!(held.status, 200, "{:?}", held.body);
    assert_eq!(
        held.body["spec"]["finalizers"],
        json!(["kubernetes", "example.com/hold"])
    );
    h.create_configmap(&ns, "c", json!({})).await;

    // The first DELETE marks it: 200 with the namespace, Terminating, not removed.
    let reply = h.delete(&path, None).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["kind"], "Namespace");
    assert_eq!(reply.body["status"]["phase"], "Terminating");
    let deleted_at = reply.body["metadata"]["deletionTimestamp"].clone();
    assert!(deleted_at.is_string(), "{:?}", reply.body);
    assert!(
        reply.body["metadata"]
            .get("deletionGracePeriodSeconds")
            .is_none()
    );

    // A second DELETE answers the namespace as it is (no 409 since kubernetes PR #84122).
    let again = h.delete(&path, None).await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    assert_eq!(again.body["status"]["phase"], "Terminating");
    assert_eq!(again.body["metadata"]["deletionTimestamp"], deleted_at);

    // docs/api-behaviour.md#namespace-lifecycle: nothing new in it.
    let refused = h
        .post(
            &format!("{path}/configmaps"),
            &json!({"metadata": {"name": "late"}}),
        )
        .await;
    assert_eq!(refused.status, 403, "{:?}", refused.body);
    assert_eq!(
        refused.body["details"]["causes"][0]["reason"],
        "NamespaceTerminating"
    );

    // Only /finalize changes spec.finalizers: a plain update keeps them.
    let mut current = h.get(&path).await.body;
    current["spec"]["finalizers"] = json!([]);
    current["metadata"]["resourceVersion"] = Value::Null;
    let updated = h.put(&path, &current).await;
    assert_eq!(updated.status, 200, "{:?}", updated.body);
    assert!(
        updated.body["spec"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.contains(&json!("example.com/hold"))),
        "{:?}",
        updated.body
    );

    // Clearing spec.finalizers through /finalize removes it in the same write.
    let finalized = h.put(&format!("{path}/finalize"), &current).await;
    assert_eq!(finalized.status, 200, "{:?}", finalized.body);
    assert_eq!(h.get(&path).await.status, 404);
}
