//! docs/api-behaviour.md#custom-resources: CustomResourceDefinitions — definitions validated and defaulted, served as soon as
//! their write answers (discovery, OpenAPI, CRUD, list, watch, status and scale), their objects
//! pruned, defaulted and validated by the schema, printed with their printer columns, names
//! conflicts refused, and a deleted definition taking its objects with it.

use std::time::Duration;

use kubemock_conformance::Harness;
use serde_json::{Value, json};

const DEFINITIONS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn widget_definition(group: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["color"], "properties": {
                        "size": {"type": "integer", "default": 1, "minimum": 1},
                        "color": {"type": "string", "enum": ["red", "blue"]},
                        "replicas": {"type": "integer"}}},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
                "selectableFields": [{"jsonPath": ".spec.color"}],
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color"}]}]}})
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

fn condition<'a>(definition: &'a Value, kind: &str) -> &'a Value {
    definition["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == kind))
        .unwrap_or_else(|| panic!("no {kind} condition in {definition}"))
}

#[tokio::test]
async fn s11_2_a_definition_is_served_when_its_create_answers() {
    let h = Harness::start().await;
    let created = h.post(DEFINITIONS, &widget_definition("example.com")).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    // docs/api-behaviour.md#crd-validation-and-defaults: defaults, and the initial status (conditions come from the controllers).
    assert_eq!(created.body["spec"]["names"]["singular"], "widget");
    assert_eq!(created.body["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(created.body["spec"]["conversion"]["strategy"], "None");
    assert_eq!(created.body["status"]["storedVersions"], json!(["v1"]));
    assert_eq!(created.body["metadata"]["generation"], 1);

    let definition = h
        .get(&format!("{DEFINITIONS}/widgets.example.com"))
        .await
        .body;
    assert_eq!(
        condition(&definition, "NamesAccepted")["reason"],
        "NoConflicts"
    );
    assert_eq!(condition(&definition, "Established")["status"], "True");
    assert_eq!(
        condition(&definition, "Established")["reason"],
        "InitialNamesAccepted"
    );
    assert_eq!(definition["status"]["acceptedNames"]["kind"], "Widget");

    // Discovery (docs/api-behaviour.md#discovery) knows the group, version and resource with its subresources.
    let groups = h.get("/apis").await.body;
    assert!(
        groups["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .any(|g| g["name"] == "example.com"),
        "{groups}"
    );
    let resources = h.get("/apis/example.com/v1").await.body;
    let names: Vec<&str> = resources["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["widgets", "widgets/scale", "widgets/status"]);
    assert_eq!(resources["resources"][0]["shortNames"], json!(["wd"]));
    assert_eq!(resources["resources"][0]["kind"], "Widget");
    let aggregated = h
        .get_accepting(
            "/apis",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )
        .await
        .body;
    assert!(
        aggregated.to_string().contains("\"widgets\""),
        "{aggregated}"
    );
    // OpenAPI v3 gains the group-version, with the kind's schema.
    let root = h.get("/openapi/v3").await.body;
    let url = root["paths"]["apis/example.com/v1"]["serverRelativeURL"]
        .as_str()
        .expect("an OpenAPI document for example.com/v1")
        .to_owned();
    let document = h.get(&url).await.body;
    let schema = &document["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        schema["properties"]["spec"]["properties"]["size"]["type"],
        "integer"
    );
}

#[tokio::test]
async fn s11_3_custom_objects_are_pruned_defaulted_validated_and_printed() {
    let h = Harness::start().await;
    assert_eq!(
        h.post(DEFINITIONS, &widget_definition("example.com"))
            .await
            .status,
        201
    );
    let ns = h.namespace("s11-3-objects").await;
    let path = format!("/apis/example.com/v1/namespaces/{ns}/widgets");

    let created = h
        .post(&path, &widget("w1", json!({"color": "red", "bogus": true})))
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.body["spec"], json!({"color": "red", "size": 1}));
    assert_eq!(created.body["apiVersion"], "example.com/v1");
    assert_eq!(created.body["metadata"]["generation"], 1);
    let warning = created
        .headers
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(
        warning.contains("unknown field \\\"spec.bogus\\\""),
        "{warning}"
    );

    let bad = h
        .post(&path, &widget("w2", json!({"color": "green", "size": 0})))
        .await;
    assert_eq!(bad.status, 422, "{:?}", bad.body);
    assert_eq!(bad.body["reason"], "Invalid");
    assert_eq!(
        bad.body["message"],
        "Widget.example.com \"w2\" is invalid: [spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\", spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1]"
    );
    let missing = h.post(&path, &widget("w3", json!({}))).await;
    assert_eq!(missing.status, 422);
    assert_eq!(
        missing.body["message"],
        "Widget.example.com \"w3\" is invalid: spec.color: Required value"
    );
    let wrong_type = h
        .post(&path, &widget("w4", json!({"color": "red", "size": "big"})))
        .await;
    assert_eq!(
        wrong_type.body["details"]["causes"][0]["message"],
        "Invalid value: \"big\": spec.size in body must be of type integer: \"string\""
    );

    // Lists carry apiVersion and kind on their items; the Table has the printer columns.
    let list = h.get(&path).await.body;
    assert_eq!(list["kind"], "WidgetList");
    assert_eq!(list["items"][0]["kind"], "Widget");
    let table = h
        .get_accepting(&path, "application/json;as=Table;v=v1;g=meta.k8s.io")
        .await
        .body;
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(columns, ["Name", "Size", "Color"]);
    assert_eq!(table["rows"][0]["cells"], json!(["w1", 1, "red"]));
    // The metadata client's protobuf list: custom objects have no protobuf form, their
    // PartialObjectMetadataList has (a meta type); their plain form in protobuf alone is a 406.
    let metadata = h
        .get_accepting(
            &path,
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
        )
        .await;
    assert_eq!(
        metadata.headers["content-type"],
        "application/vnd.kubernetes.protobuf"
    );
    assert_eq!(metadata.body["kind"], "PartialObjectMetadataList");
    assert_eq!(metadata.body["items"][0]["metadata"]["name"], "w1");
    let protobuf_only = h
        .get_accepting(&path, "application/vnd.kubernetes.protobuf")
        .await;
    assert_eq!(protobuf_only.status, 406);

    // selectableFields are field selectors (1.32: on by default).
    assert_eq!(
        h.post(&path, &widget("b1", json!({"color": "blue"})))
            .await
            .status,
        201
    );
    let blue = h
        .get(&format!("{path}?fieldSelector=spec.color%3Dblue"))
        .await
        .body;
    let names: Vec<&str> = blue["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["b1"]);
    let unknown = h.get(&format!("{path}?fieldSelector=spec.size%3D1")).await;
    assert_eq!(unknown.status, 400, "{:?}", unknown.body);

    // No strategic merge patch for custom resources; a PUT needs a resourceVersion.
    let smp = h
        .patch(
            &format!("{path}/w1"),
            "application/strategic-merge-patch+json",
            &json!({"spec": {"size": 2}}),
        )
        .await;
    assert_eq!(smp.status, 415, "{:?}", smp.body);
    let mut body = created.body.clone();
    body["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("resourceVersion");
    let put = h.put(&format!("{path}/w1"), &body).await;
    assert_eq!(put.status, 422, "{:?}", put.body);
    let no_create = h
        .put(
            &format!("{path}/ghost"),
            &widget("ghost", json!({"color": "red"})),
        )
        .await;
    assert_eq!(no_create.status, 404, "{:?}", no_create.body);

    // Merge patch bumps the generation (a spec change); status and scale subresources work.
    let patched = h
        .patch(
            &format!("{path}/w1"),
            "application/merge-patch+json",
            &json!({"spec": {"size": 3, "replicas": 2}}),
        )
        .await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    assert_eq!(patched.body["metadata"]["generation"], 2);
    let status = h
        .patch(
            &format!("{path}/w1/status"),
            "application/merge-patch+json",
            &json!({"status": {"replicas": 2, "selector": "app=w"}, "spec": {"size": 9}}),
        )
        .await;
    assert_eq!(status.status, 200, "{:?}", status.body);
    assert_eq!(status.body["status"]["replicas"], 2);
    assert_eq!(status.body["spec"]["size"], 3);
    assert_eq!(status.body["metadata"]["generation"], 2);
    let scale = h.get(&format!("{path}/w1/scale")).await.body;
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 2);
    assert_eq!(scale["status"], json!({"replicas": 2, "selector": "app=w"}));
    let scaled = h
        .patch(
            &format!("{path}/w1/scale"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 5}}),
        )
        .await;
    assert_eq!(scaled.status, 200, "{:?}", scaled.body);
    assert_eq!(
        h.get(&format!("{path}/w1")).await.body["spec"]["replicas"],
        5
    );

    // Server-side apply works on custom resources, with the schema's list types.
    let applied = h
        .patch(
            &format!("{path}/w9?fieldManager=tool"),
            "application/apply-patch+yaml",
            &widget("w9", json!({"color": "blue"})),
        )
        .await;
    assert_eq!(applied.status, 201, "{:?}", applied.body);
    assert_eq!(applied.body["spec"]["size"], 1);
    assert_eq!(
        applied.body["metadata"]["managedFields"][0]["manager"],
        "tool"
    );
}

#[tokio::test]
async fn s11_3_watches_see_custom_objects() {
    let h = Harness::start().await;
    h.post(DEFINITIONS, &widget_definition("example.com")).await;
    let ns = h.namespace("s11-3-watch").await;
    let path = format!("/apis/example.com/v1/namespaces/{ns}/widgets");
    let mut watch = h.watch(&format!("{path}?watch=true")).await;
    assert_eq!(watch.status, 200);
    h.post(&path, &widget("w", json!({"color": "red"}))).await;
    let event = watch.next_event().await.expect("an event");
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["kind"], "Widget");
    assert_eq!(event["object"]["spec"]["size"], 1);
}

#[tokio::test]
async fn s11_1_invalid_definitions_and_name_conflicts_are_refused() {
    let h = Harness::start().await;
    let mut bad = widget_definition("example.com");
    bad["metadata"]["name"] = json!("gadgets.example.com");
    let reply = h.post(DEFINITIONS, &bad).await;
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert_eq!(
        reply.body["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"gadgets.example.com\" is invalid: metadata.name: Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group"
    );
    let mut no_storage = widget_definition("example.com");
    no_storage["spec"]["versions"][0]["storage"] = json!(false);
    let reply = h.post(DEFINITIONS, &no_storage).await;
    assert_eq!(reply.status, 422);
    assert!(
        reply.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("must have exactly one version marked as storage version")),
        "{:?}",
        reply.body
    );

    assert_eq!(
        h.post(DEFINITIONS, &widget_definition("example.com"))
            .await
            .status,
        201
    );
    // Another definition of the group claiming the kind Widget: not accepted, not served.
    let mut clash = widget_definition("example.com");
    clash["metadata"]["name"] = json!("gizmos.example.com");
    clash["spec"]["names"] = json!({"plural": "gizmos", "singular": "gizmo", "kind": "Widget"});
    assert_eq!(h.post(DEFINITIONS, &clash).await.status, 201);
    let stored = h
        .get(&format!("{DEFINITIONS}/gizmos.example.com"))
        .await
        .body;
    let accepted = condition(&stored, "NamesAccepted");
    assert_eq!(accepted["status"], "False");
    assert_eq!(accepted["reason"], "KindConflict");
    assert_eq!(accepted["message"], "\"Widget\" is already in use");
    assert_eq!(condition(&stored, "Established")["status"], "False");
    let reply = h
        .get("/apis/example.com/v1/namespaces/default/gizmos")
        .await;
    assert_eq!(reply.status, 404);
}

#[tokio::test]
async fn s11_4_deleting_a_definition_deletes_its_objects_then_itself() {
    let h = Harness::start().await;
    h.post(DEFINITIONS, &widget_definition("example.com")).await;
    let ns = h.namespace("s11-4-delete").await;
    let path = format!("/apis/example.com/v1/namespaces/{ns}/widgets");
    h.post(&path, &widget("plain", json!({"color": "red"})))
        .await;
    let mut held = widget("held", json!({"color": "red"}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(h.post(&path, &held).await.status, 201);

    let reply = h
        .delete(&format!("{DEFINITIONS}/widgets.example.com"), None)
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert!(reply.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        reply.body["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    assert_eq!(condition(&reply.body, "Terminating")["status"], "True");

    // The object with a finalizer holds the definition; new objects are refused meanwhile.
    let held_now = wait_for(&h, &format!("{path}/held"), |r| {
        r.body["metadata"]["deletionTimestamp"].is_string()
    })
    .await;
    assert_eq!(held_now.status, 200);
    assert_eq!(h.get(&format!("{path}/plain")).await.status, 404);
    let refused = h
        .post(&path, &widget("late", json!({"color": "red"})))
        .await;
    assert_eq!(refused.status, 405, "{:?}", refused.body);
    assert_eq!(
        refused.body["message"],
        "create not allowed while custom resource definition is terminating"
    );
    let definition = h.get(&format!("{DEFINITIONS}/widgets.example.com")).await;
    assert_eq!(definition.status, 200);
    assert_eq!(
        condition(&definition.body, "Terminating")["reason"],
        "InstanceDeletionInProgress"
    );

    // Releasing it lets the cleanup finish: the definition and its endpoints go.
    let released = h
        .patch(
            &format!("{path}/held"),
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": null}}),
        )
        .await;
    assert_eq!(released.status, 200, "{:?}", released.body);
    wait_for(&h, &format!("{DEFINITIONS}/widgets.example.com"), |r| {
        r.status == 404
    })
    .await;
    wait_for(&h, &path, |r| r.status == 404).await;
    let resources = h.get("/apis/example.com/v1").await;
    assert_eq!(resources.status, 404);
}

/// Polls `path` until `done` holds (the cleanup runs in the background, as on a real server).
async fn wait_for(
    h: &Harness,
    path: &str,
    done: impl Fn(&kubemock_conformance::Reply) -> bool,
) -> kubemock_conformance::Reply {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let reply = h.get(path).await;
        if done(&reply) {
            return reply;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path} never got there: {:?}",
            reply.body
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn s11_3_several_versions_read_alike_with_conversion_none() {
    let h = Harness::start().await;
    let mut definition = widget_definition("example.com");
    let mut v2 = definition["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    definition["spec"]["versions"]
        .as_array_mut()
        .expect("versions")
        .push(v2);
    assert_eq!(h.post(DEFINITIONS, &definition).await.status, 201);
    let group = h.get("/apis/example.com").await.body;
    assert_eq!(group["preferredVersion"]["version"], "v2");
    let ns = h.namespace("s11-3-versions").await;
    let v1 = format!("/apis/example.com/v1/namespaces/{ns}/widgets");
    let v2 = format!("/apis/example.com/v2/namespaces/{ns}/widgets");
    assert_eq!(
        h.post(&v1, &widget("w", json!({"color": "red"})))
            .await
            .status,
        201
    );
    let read = h.get(&format!("{v2}/w")).await.body;
    assert_eq!(read["apiVersion"], "example.com/v2");
    assert_eq!(read["spec"]["color"], "red");
    let list = h.get(&v2).await.body;
    assert_eq!(list["apiVersion"], "example.com/v2");
    assert_eq!(list["items"][0]["apiVersion"], "example.com/v2");
    assert_eq!(
        h.get(&format!("{v1}/w")).await.body["apiVersion"],
        "example.com/v1"
    );
}
