//! docs/api-behaviour.md#object-metadata: object metadata rules on create and update.

use kubemock_conformance::{Harness, configmap};
use serde_json::json;

#[tokio::test]
async fn s3_1_invalid_names_are_422_with_the_real_message() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-1").await;
    let reply = h
        .post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &configmap("Bad_Name", json!({})),
        )
        .await;
    assert_eq!(reply.status, 422);
    assert_eq!(reply.body["reason"], "Invalid");
    assert_eq!(
        reply.body["message"],
        "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    );
    assert_eq!(reply.body["details"]["kind"], "ConfigMap");
    assert_eq!(reply.body["details"]["causes"][0]["field"], "metadata.name");

    let reply = h
        .post("/api/v1/namespaces", &json!({"metadata": {"name": "a.b"}}))
        .await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.body["message"],
        "Namespace \"a.b\" is invalid: metadata.name: Invalid value: \"a.b\": must not contain dots"
    );

    let svc = json!({"metadata": {"name": "1svc"}, "spec": {"ports": [{"port": 80}]}});
    let reply = h
        .post(&format!("/api/v1/namespaces/{ns}/services"), &svc)
        .await;
    assert_eq!(reply.status, 422);
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap()
            .contains("a DNS-1035 label")
    );

    let reply = h
        .post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &json!({"data": {}}),
        )
        .await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.body["message"],
        "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
}

#[tokio::test]
async fn s3_2_generate_name_adds_five_random_characters() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-2").await;
    let body = json!({"metadata": {"generateName": "web-"}, "data": {}});
    let a = h
        .post(&format!("/api/v1/namespaces/{ns}/configmaps"), &body)
        .await;
    let b = h
        .post(&format!("/api/v1/namespaces/{ns}/configmaps"), &body)
        .await;
    assert_eq!((a.status, b.status), (201, 201));
    let name = a.body["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");
    assert_ne!(a.body["metadata"]["name"], b.body["metadata"]["name"]);
    assert_eq!(a.body["metadata"]["generateName"], "web-");
}

#[tokio::test]
async fn s3_3_server_populates_uid_timestamp_and_resource_version() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-3").await;
    let mut body = configmap("c1", json!({"a": "1"}));
    body["metadata"]["uid"] = json!("client-uid");
    body["metadata"]["creationTimestamp"] = json!("2000-01-01T00:00:00Z");
    let reply = h
        .post(&format!("/api/v1/namespaces/{ns}/configmaps"), &body)
        .await;
    assert_eq!(reply.status, 201);
    let meta = &reply.body["metadata"];
    let uid = meta["uid"].as_str().unwrap();
    assert_ne!(uid, "client-uid");
    assert_eq!(uid.len(), 36);
    assert_ne!(meta["creationTimestamp"], "2000-01-01T00:00:00Z");
    assert_eq!(meta["creationTimestamp"].as_str().unwrap().len(), 20);
    assert!(
        meta["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
    assert_eq!(meta["namespace"], ns.as_str());
    assert!(
        meta.get("generation").is_none(),
        "ConfigMaps have no generation"
    );

    // A resourceVersion on create is a 500 with no reason (docs/api-behaviour.md#system-fields).
    let mut with_rv = configmap("c2", json!({}));
    with_rv["metadata"]["resourceVersion"] = json!("5");
    let reply = h
        .post(&format!("/api/v1/namespaces/{ns}/configmaps"), &with_rv)
        .await;
    assert_eq!(reply.status, 500);
    assert_eq!(
        reply.body["message"],
        "resourceVersion should not be set on objects to be created"
    );
    assert!(reply.body.get("reason").is_none());

    // A different uid in a PUT body is a failed precondition (409).
    let mut update = reply_object(&h, &ns, "c1").await;
    update["metadata"]["uid"] = json!("00000000-0000-0000-0000-000000000000");
    let reply = h
        .put(&format!("/api/v1/namespaces/{ns}/configmaps/c1"), &update)
        .await;
    assert_eq!(reply.status, 409);
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap()
            .contains("Precondition failed: UID in precondition")
    );
}

async fn reply_object(h: &Harness, ns: &str, name: &str) -> serde_json::Value {
    let reply = h
        .get(&format!("/api/v1/namespaces/{ns}/configmaps/{name}"))
        .await;
    assert_eq!(reply.status, 200);
    reply.body
}

#[tokio::test]
async fn s3_4_creating_in_a_missing_namespace_is_404_for_the_namespace() {
    let h = Harness::start().await;
    let reply = h
        .post(
            "/api/v1/namespaces/does-not-exist/configmaps",
            &configmap("c", json!({})),
        )
        .await;
    assert_eq!(reply.status, 404);
    assert_eq!(
        reply.body["message"],
        "namespaces \"does-not-exist\" not found"
    );
    assert_eq!(
        reply.body["details"],
        json!({"name": "does-not-exist", "kind": "namespaces"})
    );
    // Listing a missing namespace is an empty list.
    let reply = h.get("/api/v1/namespaces/does-not-exist/configmaps").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["items"], json!([]));
}

#[tokio::test]
async fn s3_5_namespace_and_name_must_match_the_url() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-5").await;
    let mut body = configmap("c", json!({}));
    body["metadata"]["namespace"] = json!("other");
    let reply = h
        .post(&format!("/api/v1/namespaces/{ns}/configmaps"), &body)
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.body["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
    let created = h
        .post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &configmap("a", json!({})),
        )
        .await;
    assert_eq!(created.status, 201);
    let reply = h
        .put(
            &format!("/api/v1/namespaces/{ns}/configmaps/b"),
            &created.body,
        )
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.body["message"],
        "the name of the object (a) does not match the name on the URL (b)"
    );
}

#[tokio::test]
async fn s3_8_deployment_generation_moves_on_spec_and_annotation_changes_only() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-8").await;
    let path = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let created = h
        .post(
            &path,
            &kubemock_conformance::deployment("web", 1, "nginx:1"),
        )
        .await;
    assert_eq!(created.status, 201);
    assert_eq!(created.body["metadata"]["generation"], 1);
    let mut object = created.body;
    object["metadata"]["labels"]["extra"] = json!("x");
    let labelled = h.put(&format!("{path}/web"), &object).await;
    assert_eq!(
        labelled.body["metadata"]["generation"], 1,
        "labels do not move generation"
    );
    let mut object = labelled.body;
    object["metadata"]["annotations"] = json!({"note": "x"});
    let annotated = h.put(&format!("{path}/web"), &object).await;
    assert_eq!(
        annotated.body["metadata"]["generation"], 2,
        "Deployment annotations do"
    );
    let mut object = annotated.body;
    object["spec"]["replicas"] = json!(3);
    let scaled = h.put(&format!("{path}/web"), &object).await;
    assert_eq!(scaled.body["metadata"]["generation"], 3);
    let mut object = scaled.body;
    object["status"] = json!({"replicas": 3, "observedGeneration": 3});
    let status = h.put(&format!("{path}/web/status"), &object).await;
    assert_eq!(status.status, 200);
    assert_eq!(
        status.body["metadata"]["generation"], 3,
        "status writes never move generation"
    );
    assert_eq!(status.body["status"]["replicas"], 3);
}

#[tokio::test]
async fn s3_9_kind_and_api_version_are_filled_and_checked() {
    let h = Harness::start().await;
    let ns = h.namespace("s3-9").await;
    let reply = h
        .post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &json!({"metadata": {"name": "py1"}, "data": {"k": "v"}}),
        )
        .await;
    assert_eq!(reply.status, 201);
    assert_eq!(
        (
            reply.body["kind"].as_str(),
            reply.body["apiVersion"].as_str()
        ),
        (Some("ConfigMap"), Some("v1"))
    );
    let wrong = json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    let reply = h
        .post(&format!("/api/v1/namespaces/{ns}/configmaps"), &wrong)
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.body["message"],
        "the API version in the data (apps/v1) does not match the expected API version (v1)"
    );
    let reply = h
        .request(
            reqwest::Method::POST,
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            Some(b"{not json".to_vec()),
            "application/json",
        )
        .await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap()
            .starts_with("the object provided is unrecognized (must be of type ConfigMap)")
    );
}
