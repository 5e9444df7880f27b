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
    // A PUT that creates (a Lease) goes through upstream's update path, which ignores it.
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "put-created", "resourceVersion": "5"}, "spec": {}});
    let created = h
        .put(
            &format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/put-created"),
            &lease,
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
}

/// `{b: {b: ... x ...}}`, `depth` levels deep, as the `data` of a ConfigMap in YAML.
fn deep_yaml(name: &str, depth: usize) -> Vec<u8> {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {}x{}\n",
        "{b: ".repeat(depth),
        "}".repeat(depth)
    )
    .into_bytes()
}

/// Finding 2: a YAML document nested 40,000 deep (200 KB) cost seconds of server CPU before
/// it was refused, quadratic in its depth (libyaml's scanner; see
/// `third_party/serde_yaml_ng/README.md`). It is now refused after reading the first levels
/// (the loader's depth limit answers before the scanner goes deeper). What it costs, before
/// and after, is measured by `scripts/findings-26.py`, not asserted here.
#[tokio::test]
async fn finding_2_deeply_nested_yaml_is_refused_without_reading_it_all() {
    let h = Harness::start().await;
    let ns = h.namespace("finding-2").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let answers = futures_util::future::join_all((0..3).map(|i| {
        h.request(
            reqwest::Method::POST,
            &path,
            Some(deep_yaml(&format!("deep-{i}"), 40_000)),
            "application/yaml",
        )
    }))
    .await;
    for answer in answers {
        assert_eq!(answer.status, 400, "{:?}", answer.body);
        assert!(
            answer.body["message"]
                .as_str()
                .is_some_and(|m| m.contains("recursion limit exceeded")),
            "{:?}",
            answer.body
        );
    }
    // Within the limits a nested document is fine; past the server's depth it is a 400.
    let fits = h
        .request(
            reqwest::Method::POST,
            &path,
            Some(deep_yaml("fits", 2)),
            "application/yaml",
        )
        .await;
    assert_eq!(fits.status, 400, "data values are strings: {:?}", fits.body);
    assert!(fits.body["message"].as_str().is_some_and(|m| m.contains(
        "json: cannot unmarshal object into Go struct field ConfigMap.data of type string"
    )));
    assert_eq!(h.get("/readyz").await.status, 200);
}

/// Finding 4: fields of the wrong JSON type were stored with a 201, even with
/// `fieldValidation=Strict`, and then broke protobuf reads and every typed informer. Each is a
/// 400 in upstream's words now, on create, update and every patch type, and nothing is stored.
#[tokio::test]
async fn finding_4_fields_of_the_wrong_type_are_refused_on_every_write_path() {
    for h in Harness::each_encoding().await {
        let ns = h.namespace("finding-4").await;
        let configmaps = format!("/api/v1/namespaces/{ns}/configmaps");
        let prefix =
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal";
        for (body, message) in [
            (
                json!({"metadata": {"name": "a", "labels": {"a": {"k": 1}}}}),
                "object into Go struct field ObjectMeta.metadata.labels of type string",
            ),
            (
                json!({"metadata": {"name": "b", "annotations": "str"}}),
                "string into Go struct field ObjectMeta.metadata.annotations of type map[string]string",
            ),
            (
                json!({"metadata": {"name": "c", "finalizers": "x"}}),
                "string into Go struct field ObjectMeta.metadata.finalizers of type []string",
            ),
            (
                json!({"metadata": {"name": "d"}, "data": {"a": 7}}),
                "number into Go struct field ConfigMap.data of type string",
            ),
        ] {
            for strict in ["", "?fieldValidation=Strict"] {
                // Sent as JSON: such a body has no protobuf form.
                let reply = h
                    .request(
                        reqwest::Method::POST,
                        &format!("{configmaps}{strict}"),
                        Some(body.to_string().into_bytes()),
                        "application/json",
                    )
                    .await;
                assert_eq!(reply.status, 400, "{body}: {:?}", reply.body);
                assert_eq!(reply.body["message"], format!("{prefix} {message}"));
            }
        }
        let listed = h.get(&configmaps).await;
        assert_eq!(listed.body["items"].as_array().map(Vec::len), Some(0));

        let deployments = format!("/apis/apps/v1/namespaces/{ns}/deployments");
        let mut replicas = kubemock_conformance::deployment("web", 1, "nginx");
        replicas["spec"]["replicas"] = json!("3");
        let reply = h
            .request(
                reqwest::Method::POST,
                &deployments,
                Some(replicas.to_string().into_bytes()),
                "application/json",
            )
            .await;
        assert_eq!(reply.status, 400, "{:?}", reply.body);
        assert_eq!(
            reply.body["message"],
            "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
        );

        // Every write path of an existing object.
        let created = h
            .post(&configmaps, &configmap("e", json!({"a": "1"})))
            .await;
        assert_eq!(created.status, 201, "{:?}", created.body);
        let item = format!("{configmaps}/e");
        let mut put = created.body.clone();
        put["data"]["a"] = json!(7);
        let reply = h
            .request(
                reqwest::Method::PUT,
                &item,
                Some(put.to_string().into_bytes()),
                "application/json",
            )
            .await;
        assert_eq!(reply.status, 400, "{:?}", reply.body);
        for (content_type, patch) in [
            ("application/merge-patch+json", json!({"data": {"a": 7}})),
            (
                "application/strategic-merge-patch+json",
                json!({"data": {"a": 7}}),
            ),
            (
                "application/json-patch+json",
                json!([{"op": "add", "path": "/data/a", "value": 7}]),
            ),
        ] {
            let reply = h.patch(&item, content_type, &patch).await;
            assert_eq!(reply.status, 422, "{content_type}: {:?}", reply.body);
            assert_eq!(reply.body["details"]["causes"][0]["field"], "patch");
            assert!(
                reply.body["message"].as_str().is_some_and(|m| m.ends_with(
                    "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
                )),
                "{content_type}: {:?}",
                reply.body
            );
        }
        let apply = h
            .request(
                reqwest::Method::PATCH,
                &format!("{item}?fieldManager=finding-4"),
                Some(
                    json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "e"}, "data": {"a": 7}})
                    .to_string()
                    .into_bytes(),
                ),
                "application/apply-patch+yaml",
            )
            .await;
        assert_eq!(apply.status, 400, "{:?}", apply.body);
        assert_eq!(
            apply.body["message"],
            // The namespace is the configuration's own, as upstream's `objectGVKNN` reads it.
            "failed to create typed patch object (/e; /v1, Kind=ConfigMap): .data.a: expected string, got &value.valueUnstructured{Value:7}"
        );
        let scale = h
            .request(
                reqwest::Method::PUT,
                &format!("{deployments}/web/scale"),
                Some(
                    json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                        "metadata": {"name": "web"}, "spec": {"replicas": "3"}})
                    .to_string()
                    .into_bytes(),
                ),
                "application/json",
            )
            .await;
        // The body is decoded before the object is looked up, as upstream does.
        assert_eq!(scale.status, 400, "{:?}", scale.body);
        assert_eq!(
            scale.body["message"],
            "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32"
        );
        let delete = h
            .request(
                reqwest::Method::DELETE,
                &item,
                Some(json!({"gracePeriodSeconds": "0"}).to_string().into_bytes()),
                "application/json",
            )
            .await;
        assert_eq!(delete.status, 400, "{:?}", delete.body);
        // The object is as it was, and reads back in every encoding.
        let read = h.get(&item).await;
        assert_eq!(read.body["data"], json!({"a": "1"}));
        let proto = h
            .get_accepting(&item, "application/vnd.kubernetes.protobuf")
            .await;
        assert_eq!(proto.status, 200);
        assert_eq!(
            proto.headers["content-type"],
            kubemock_apiserver::protobuf::MEDIA_TYPE
        );
    }
}

/// Finding 5: a JSON patch of `copy` operations made an object deeper than the server reads
/// back (serde_json's 127 levels): it was stored with a 200 and then every read of it, or of
/// any list holding it, was a 500. The patch is a 422 now, and the object stays as it was.
#[tokio::test]
async fn finding_5_a_patch_cannot_make_an_object_deeper_than_the_server_reads() {
    let h = Harness::start().await;
    let ns = h.namespace("finding-5").await;
    let crd_group = "finding5.example.com";
    let created = h.post(DEFINITIONS, &gadget_definition(crd_group)).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let gadgets = format!("/apis/{crd_group}/v1/namespaces/{ns}/gadgets");
    let gadget = json!({"apiVersion": format!("{crd_group}/v1"), "kind": "Gadget",
        "metadata": {"name": "g"}, "spec": {"a": {"b": 1}}});
    assert_eq!(h.post(&gadgets, &gadget).await.status, 201);
    // Each copy puts `spec` one level further down inside itself.
    let mut path = String::from("/spec");
    let ops: Vec<Value> = (0..130)
        .map(|_| {
            let op = json!({"op": "copy", "from": "/spec/a", "path": format!("{path}/a/c")});
            path.push_str("/a/c");
            op
        })
        .collect();
    let reply = h
        .patch(
            &format!("{gadgets}/g"),
            "application/json-patch+json",
            &Value::Array(ops),
        )
        .await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    let read = h.get(&format!("{gadgets}/g")).await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    assert_eq!(read.body["spec"], json!({"a": {"b": 1}}));
    // A body deeper than the limit is refused too, with upstream's wording.
    let mut deep = json!(1);
    for _ in 0..110 {
        deep = json!({ "d": deep });
    }
    let mut body = gadget.clone();
    body["metadata"]["name"] = json!("deep");
    body["spec"] = deep;
    let reply = h.post(&gadgets, &body).await;
    assert_eq!(reply.status, 400, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "Gadget in version \"v1\" cannot be handled as a Gadget: exceeded max depth of 100"
    );
    // Every list of the kind, and tables of it, still read.
    for accept in [
        "application/json",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
    ] {
        let all = h
            .get_accepting(&format!("/apis/{crd_group}/v1/gadgets"), accept)
            .await;
        assert_eq!(all.status, 200, "{accept}: {:?}", all.body);
    }
    assert_eq!(h.delete(&format!("{gadgets}/g"), None).await.status, 200);
    assert_eq!(
        h.delete(&format!("{DEFINITIONS}/gadgets.{crd_group}"), None)
            .await
            .status,
        200
    );
}

/// Finding 6: 28 `copy` operations on a 2 KiB body grew the object exponentially (32 took the
/// server past 2.4 GiB). Copies add at most 3 MiB per patch, as upstream's
/// `JSONPatchMaxCopyBytes`; more operations than 10,000 are a 413.
#[tokio::test]
async fn finding_6_json_patch_copies_cannot_grow_an_object_without_bound() {
    let h = Harness::start().await;
    let ns = h.namespace("finding-6").await;
    let item = format!("/api/v1/namespaces/{ns}/configmaps/grow");
    let created = h
        .post(
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            &configmap("grow", json!({"seed": "x".repeat(2048)})),
        )
        .await;
    assert_eq!(created.status, 201);
    // Doubling `data` into a new annotation-like member each time: the accumulated copies pass
    // 3 MiB after ten or so.
    let ops: Vec<Value> = (0..32)
        .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data/k{i}")}))
        .collect();
    let reply = h
        .patch(&item, "application/json-patch+json", &Value::Array(ops))
        .await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(reply.body["reason"], "Invalid");
    let read = h.get(&item).await;
    assert_eq!(read.body["data"].as_object().map(|d| d.len()), Some(1));
    let too_many: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/kind", "value": "ConfigMap"}))
        .collect();
    let reply = h
        .patch(
            &item,
            "application/json-patch+json",
            &Value::Array(too_many),
        )
        .await;
    assert_eq!(reply.status, 413, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
}
