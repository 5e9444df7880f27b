//! docs/api-behaviour.md#writes: create, get, update (optimistic concurrency, no-ops, create-on-update, status and scale
//! subresources), dry run, body limits and media types.

use kubemock_conformance::{Harness, configmap, deployment};
use serde_json::json;

#[tokio::test]
async fn s4_2_create_then_get_round_trips_and_a_taken_name_is_409() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s4-2").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let created = h.post(&path, &configmap("c1", json!({"a": "1"}))).await;
        assert_eq!(created.status, 201);
        assert_eq!(created.headers["content-type"], h.media_type());
        let got = h.get(&format!("{path}/c1")).await;
        assert_eq!(got.status, 200);
        assert_eq!(got.body, created.body);
        let again = h.post(&path, &configmap("c1", json!({}))).await;
        assert_eq!(again.status, 409);
        assert_eq!(
            again.body,
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"configmaps \"c1\" already exists","reason":"AlreadyExists",
            "details":{"name":"c1","kind":"configmaps"},"code":409})
        );
    }
}

#[tokio::test]
async fn s4_3_get_of_a_missing_object_is_404_with_the_qualified_resource() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s4-3").await;
        let reply = h
            .get(&format!("/apis/apps/v1/namespaces/{ns}/deployments/web"))
            .await;
        assert_eq!(reply.status, 404);
        assert_eq!(
            reply.body,
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"deployments.apps \"web\" not found","reason":"NotFound",
            "details":{"name":"web","group":"apps","kind":"deployments"},"code":404})
        );
    }
}

#[tokio::test]
async fn s4_4_stale_resource_version_is_409_and_unconditional_update_wins() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s4-4").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let created = h.post(&path, &configmap("x", json!({"v": "1"}))).await.body;
        let rv1: u64 = created["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let mut update = created.clone();
        update["data"]["v"] = json!("2");
        let updated = h.put(&format!("{path}/x"), &update).await;
        assert_eq!(updated.status, 200);
        let rv2: u64 = updated.body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(rv2 > rv1);
        // The same stale body again: conflict.
        let stale = h.put(&format!("{path}/x"), &update).await;
        assert_eq!(stale.status, 409);
        assert_eq!(
            stale.body,
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"Operation cannot be fulfilled on configmaps \"x\": the object has been modified; please apply your changes to the latest version and try again",
            "reason":"Conflict","details":{"name":"x","kind":"configmaps"},"code":409})
        );
        // Without a resourceVersion the update is unconditional.
        let mut blind = update.clone();
        blind["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("resourceVersion");
        blind["data"]["v"] = json!("3");
        let reply = h.put(&format!("{path}/x"), &blind).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body["data"]["v"], "3");
        // Leases require one.
        let lease = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}});
        let leases = format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases");
        assert_eq!(h.post(&leases, &lease).await.status, 201);
        let reply = h.put(&format!("{leases}/l"), &lease).await;
        assert_eq!(reply.status, 422);
        assert_eq!(
            reply.body["message"],
            "leases.coordination.k8s.io \"l\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
        );
    }
}

#[tokio::test]
async fn s4_4_a_no_op_update_keeps_the_resource_version() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s4-4-noop").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let created = h.post(&path, &configmap("x", json!({"v": "1"}))).await.body;
        let same = h.put(&format!("{path}/x"), &created).await;
        assert_eq!(same.status, 200);
        assert_eq!(
            same.body["metadata"]["resourceVersion"],
            created["metadata"]["resourceVersion"]
        );
        assert_eq!(same.body, created);
    }
}

#[tokio::test]
async fn s4_5_put_creates_only_for_the_kinds_that_allow_it() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s4-5").await;
        let reply = h
            .put(
                &format!("/api/v1/namespaces/{ns}/configmaps/missing"),
                &configmap("missing", json!({})),
            )
            .await;
        assert_eq!(reply.status, 404);
        assert_eq!(reply.body["message"], "configmaps \"missing\" not found");
        let lease = json!({"metadata": {"name": "l1"}, "spec": {"holderIdentity": "me"}});
        let reply = h
            .put(
                &format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/l1"),
                &lease,
            )
            .await;
        assert_eq!(reply.status, 201);
        assert_eq!(reply.body["spec"]["holderIdentity"], "me");
    }
}

#[tokio::test]
async fn s4_6_main_resource_ignores_status_and_status_ignores_spec() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s4-6").await;
        let path = format!("/apis/apps/v1/namespaces/{ns}/deployments");
        let mut object = h.post(&path, &deployment("web", 1, "nginx:1")).await.body;
        object["status"] = json!({"replicas": 5});
        let reply = h.put(&format!("{path}/web"), &object).await;
        assert_eq!(reply.status, 200);
        assert!(
            reply.body.get("status").is_none() || reply.body["status"].get("replicas").is_none(),
            "{}",
            reply.body
        );
        assert_eq!(
            reply.body["metadata"]["resourceVersion"], object["metadata"]["resourceVersion"],
            "a status-only change through the main resource is a no-op"
        );
        let mut object = reply.body;
        object["spec"]["replicas"] = json!(7);
        object["status"] = json!({"replicas": 2});
        let reply = h.put(&format!("{path}/web/status"), &object).await;
        assert_eq!(reply.status, 200);
        assert_eq!(
            reply.body["spec"]["replicas"], 1,
            "spec through /status is discarded"
        );
        assert_eq!(reply.body["status"]["replicas"], 2);
    }
}

#[tokio::test]
async fn s4_7_scale_reads_and_writes_the_parent_replicas() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s4-7").await;
        let path = format!("/apis/apps/v1/namespaces/{ns}/deployments");
        assert_eq!(
            h.post(&path, &deployment("web", 2, "nginx")).await.status,
            201
        );
        let scale = h.get(&format!("{path}/web/scale")).await;
        assert_eq!(scale.status, 200);
        assert_eq!(scale.body["kind"], "Scale");
        assert_eq!(scale.body["apiVersion"], "autoscaling/v1");
        assert_eq!(scale.body["spec"]["replicas"], 2);
        let mut body = scale.body.clone();
        body["spec"]["replicas"] = json!(5);
        let reply = h.put(&format!("{path}/web/scale"), &body).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body["spec"]["replicas"], 5);
        let parent = h.get(&format!("{path}/web")).await.body;
        assert_eq!(parent["spec"]["replicas"], 5);
        assert_eq!(parent["metadata"]["generation"], 2);
        // The stale scale body conflicts.
        let reply = h.put(&format!("{path}/web/scale"), &body).await;
        assert_eq!(reply.status, 409);
    }
}

#[tokio::test]
async fn s4_8_dry_run_validates_but_stores_nothing() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s4-8").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let reply = h
            .post(&format!("{path}?dryRun=All"), &configmap("dry", json!({})))
            .await;
        assert_eq!(reply.status, 201);
        assert!(reply.body["metadata"]["uid"].is_string());
        assert!(reply.body["metadata"].get("resourceVersion").is_none());
        assert_eq!(h.get(&format!("{path}/dry")).await.status, 404);
        let reply = h
            .post(&format!("{path}?dryRun=Some"), &configmap("dry", json!({})))
            .await;
        assert_eq!(reply.status, 422);
    }
}

#[tokio::test]
async fn s9_2_oversized_bodies_are_413_and_unknown_media_types_415() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s9-2").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let big = configmap(
            "big",
            json!({"k": "x".repeat(kubemock_apiserver::MAX_BODY_BYTES)}),
        );
        let reply = h.post(&path, &big).await;
        assert_eq!(reply.status, 413);
        assert_eq!(reply.body["reason"], "RequestEntityTooLarge");
        let reply = h
            .request(
                reqwest::Method::POST,
                &path,
                Some(b"name: x".to_vec()),
                "text/plain",
            )
            .await;
        assert_eq!(reply.status, 415);
        assert_eq!(reply.body["reason"], "UnsupportedMediaType");
        // docs/api-behaviour.md#content-types: the real message.
        assert_eq!(
            reply.body["message"],
            "the body of the request was in an unknown format - accepted media types include: \
         application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        // The server is healthy afterwards.
        assert_eq!(h.get("/readyz").await.status, 200);
    }
}

#[tokio::test]
async fn s1_3_binding_assigns_a_pod_to_a_node_once() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s1-3-binding").await;
        let pods = format!("/api/v1/namespaces/{ns}/pods");
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        assert_eq!(h.post(&pods, &pod).await.status, 201);
        let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}});
        let reply = h.post(&format!("{pods}/p/binding"), &binding).await;
        assert_eq!(reply.status, 201);
        assert_eq!(reply.body["status"], "Success");
        let bound = h.get(&format!("{pods}/p")).await.body;
        assert_eq!(bound["spec"]["nodeName"], "node-1");
        assert_eq!(bound["status"]["conditions"][0]["type"], "PodScheduled");
        assert_eq!(bound["status"]["conditions"][0]["status"], "True");
        let again = h.post(&format!("{pods}/p/binding"), &binding).await;
        assert_eq!(again.status, 409);
        assert_eq!(
            again.body["message"],
            "Operation cannot be fulfilled on pods \"p\": pod p is already assigned to node \"node-1\""
        );
    }
}

#[tokio::test]
async fn s4_10_yaml_bodies_are_accepted_for_create_and_update() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("s4-10-yaml").await;
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        let manifest =
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y1\ndata:\n  answer: \"42\"\n";
        let reply = h
            .request(
                reqwest::Method::POST,
                &path,
                Some(manifest.as_bytes().to_vec()),
                "application/yaml",
            )
            .await;
        assert_eq!(reply.status, 201, "{:?}", reply.body);
        assert_eq!(reply.body["data"]["answer"], "42");
        let rv = reply.body["metadata"]["resourceVersion"]
            .as_str()
            .expect("a resourceVersion")
            .to_owned();
        let update = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y1\n  resourceVersion: \"{rv}\"\ndata:\n  answer: \"43\"\n"
        );
        let reply = h
            .request(
                reqwest::Method::PUT,
                &format!("{path}/y1"),
                Some(update.into_bytes()),
                "application/yaml",
            )
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        assert_eq!(reply.body["data"]["answer"], "43");
        // Malformed YAML is a 400 Status.
        let reply = h
            .request(
                reqwest::Method::POST,
                &path,
                Some(b"metadata: [".to_vec()),
                "application/yaml",
            )
            .await;
        assert_eq!(reply.status, 400);
        assert_eq!(reply.body["kind"], "Status");
    }
}

#[tokio::test]
async fn s4_9_field_validation_strict_warn_and_ignore() {
    // Unknown fields exist only in JSON (and YAML) bodies: typed protobuf clients cannot send
    // them, so this runs in JSON only.
    let h = Harness::start().await;
    let ns = h.namespace("s4-9").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let body = |name: &str| json!({"metadata": {"name": name, "labelz": {"a": "b"}}, "data": {"k": "v"}, "extra": 1});
    // Strict: 400 listing every unknown field.
    let reply = h
        .post(&format!("{path}?fieldValidation=Strict"), &body("s"))
        .await;
    assert_eq!(reply.status, 400, "{:?}", reply.body);
    assert_eq!(reply.body["reason"], "BadRequest");
    assert_eq!(
        reply.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: \
         unknown field \"metadata.labelz\", unknown field \"extra\""
    );
    assert_eq!(h.get(&format!("{path}/s")).await.status, 404);
    // Warn (the default): stored without the fields, one Warning header per field.
    let reply = h.post(&path, &body("w")).await;
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    let warnings: Vec<&str> = reply
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().expect("ascii"))
        .collect();
    assert_eq!(
        warnings,
        [
            "299 - \"unknown field \\\"metadata.labelz\\\"\"",
            "299 - \"unknown field \\\"extra\\\"\""
        ]
    );
    assert!(reply.body.get("extra").is_none());
    assert!(reply.body["metadata"].get("labelz").is_none());
    // Ignore: dropped silently.
    let reply = h
        .post(&format!("{path}?fieldValidation=Ignore"), &body("i"))
        .await;
    assert_eq!(reply.status, 201);
    assert!(reply.headers.get("warning").is_none());
    assert!(reply.body.get("extra").is_none());
    // Updates and patches are checked the same way.
    let mut update = reply.body.clone();
    update["spec"] = json!({"x": 1});
    let reply = h
        .put(&format!("{path}/i?fieldValidation=Strict"), &update)
        .await;
    assert_eq!(reply.status, 400);
    let reply = h
        .patch(
            &format!("{path}/i?fieldValidation=Strict"),
            "application/merge-patch+json",
            &json!({"datum": {"a": "b"}}),
        )
        .await;
    // A patch's result is refused as upstream refuses it (`handlers/patch.go`): a 422 whose
    // `patch` cause carries the strict decoding error.
    assert_eq!(reply.status, 422);
    assert_eq!(reply.body["details"]["causes"][0]["field"], "patch");
    assert!(
        reply.body["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("unknown field \"datum\"")),
        "{:?}",
        reply.body
    );
    let reply = h
        .post(&format!("{path}?fieldValidation=Loud"), &body("x"))
        .await;
    assert_eq!(reply.status, 400);
}

#[tokio::test]
async fn s4_10_answers_are_yaml_when_accept_prefers_it() {
    let h = Harness::start().await;
    let ns = h.namespace("s4-10-yaml-answers").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    h.create_configmap(&ns, "y", json!({"app": "demo"})).await;
    let yaml = |reply: &kubemock_conformance::Reply| -> serde_json::Value {
        assert_eq!(reply.headers["content-type"], "application/yaml");
        let text = reply.body.as_str().expect("a YAML text");
        serde_yaml_ng::from_str(text).expect("YAML")
    };
    let object = h
        .get_accepting(&format!("{path}/y"), "application/yaml")
        .await;
    assert_eq!(object.status, 200);
    // Keys sorted, as Go's JSON-to-YAML writes them.
    assert!(
        object
            .body
            .as_str()
            .is_some_and(|t| t.starts_with("apiVersion: v1\n")),
        "{:?}",
        object.body
    );
    assert_eq!(yaml(&object)["metadata"]["labels"]["app"], "demo");
    let list = h
        .get_accepting(&path, "application/yaml, application/json")
        .await;
    let list = yaml(&list);
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1));
    let missing = h
        .get_accepting(&format!("{path}/missing"), "application/yaml")
        .await;
    assert_eq!(missing.status, 404);
    assert_eq!(yaml(&missing)["reason"], "NotFound");
    let table = h
        .get_accepting(&path, "application/yaml;as=Table;v=v1;g=meta.k8s.io")
        .await;
    assert_eq!(yaml(&table)["kind"], "Table");
    // A watch has no YAML form: 406, the Status in the YAML the request accepts.
    let watch = h
        .get_accepting(&format!("{path}?watch=true"), "application/yaml")
        .await;
    assert_eq!(watch.status, 406);
    assert_eq!(
        yaml(&watch)["message"],
        "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    );
}

#[tokio::test]
async fn s9_2_an_accept_the_server_cannot_answer_is_406() {
    let h = Harness::start().await;
    let ns = h.namespace("s9-2-406").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    for accept in ["text/html", "application/json;as=Table;v=v9;g=meta.k8s.io"] {
        let reply = h.get_accepting(&path, accept).await;
        assert_eq!(reply.status, 406, "{accept}");
        assert_eq!(reply.headers["content-type"], "application/json");
        assert_eq!(
            reply.body,
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            "reason":"NotAcceptable","code":406})
        );
    }
    // A browser's Accept ends in */*: JSON, indented for people (as for curl's User-Agent).
    let browser = h
        .request_with_headers(
            reqwest::Method::GET,
            &path,
            None,
            "",
            &[
                (
                    "accept",
                    "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
                ),
                ("user-agent", "Mozilla/5.0 (X11; Linux x86_64)"),
            ],
        )
        .await;
    assert_eq!(browser.status, 200);
    assert_eq!(browser.body["kind"], "ConfigMapList");
    let raw = reqwest::Client::new()
        .get(format!("{}{path}", h.url()))
        .header("user-agent", "curl/8.5.0")
        .send()
        .await
        .expect("an answer")
        .text()
        .await
        .expect("a body");
    assert!(raw.starts_with("{\n  \"kind\": \"ConfigMapList\""), "{raw}");
}
