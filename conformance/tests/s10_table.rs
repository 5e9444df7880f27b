//! §10 and §8.10: Table output, as kubectl asks for it.

use kubemock_conformance::{Harness, configmap, deployment};
use serde_json::{Value, json};

/// The `Accept` kubectl 1.32 sends for `get` (§10).
const KUBECTL_TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

fn column_names(table: &Value) -> Vec<&str> {
    table["columnDefinitions"]
        .as_array()
        .expect("columnDefinitions is an array")
        .iter()
        .map(|c| c["name"].as_str().expect("a column name"))
        .collect()
}

fn rows(table: &Value) -> &Vec<Value> {
    table["rows"].as_array().expect("rows is an array")
}

fn first_cells(table: &Value) -> Vec<String> {
    rows(table)
        .iter()
        .map(|r| r["cells"][0].as_str().expect("a first cell").to_owned())
        .collect()
}

async fn post_ok(h: &Harness, path: &str, body: &Value) -> Value {
    let reply = h.post(path, body).await;
    assert_eq!(reply.status, 201, "POST {path}: {:?}", reply.body);
    reply.body
}

#[tokio::test]
async fn s10_list_configmaps_as_table() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-list").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let mut c1 = configmap("c1", json!({"a": "1", "b": "2"}));
    c1["metadata"]["labels"] = json!({"app": "x"});
    post_ok(&h, &path, &c1).await;
    post_ok(&h, &path, &configmap("c2", json!({}))).await;
    let reply = h.get_accepting(&path, KUBECTL_TABLE).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.headers["content-type"], "application/json");
    let table = &reply.body;
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    assert!(
        table["metadata"]["resourceVersion"].as_str().is_some(),
        "{table}"
    );
    assert_eq!(column_names(table), ["Name", "Data", "Age"]);
    let name = &table["columnDefinitions"][0];
    assert_eq!(
        (&name["type"], &name["format"], &name["priority"]),
        (&json!("string"), &json!("name"), &json!(0))
    );
    assert_eq!(table["columnDefinitions"][1]["type"], "string");
    assert_eq!(first_cells(table), ["c1", "c2"]);
    let row = &rows(table)[0];
    assert_eq!(row["cells"][1], 2, "the Data cell is an integer");
    let age = row["cells"][2].as_str().expect("an age");
    assert!(age.ends_with('s') || age.ends_with('m'), "{age}");
    let object = &row["object"];
    assert_eq!(object["kind"], "PartialObjectMetadata");
    assert_eq!(object["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(object["metadata"]["name"], "c1");
    assert_eq!(object["metadata"]["namespace"], ns.as_str());
    assert_eq!(object["metadata"]["labels"], json!({"app": "x"}));
    assert!(object.get("data").is_none(), "metadata only");
}

#[tokio::test]
async fn s10_get_single_object_is_a_one_row_table() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-get").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let created = post_ok(&h, &path, &configmap("one", json!({"k": "v"}))).await;
    let table = h.get_accepting(&format!("{path}/one"), KUBECTL_TABLE).await;
    assert_eq!(table.status, 200);
    assert_eq!(table.body["kind"], "Table");
    assert_eq!(
        table.body["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    assert_eq!(first_cells(&table.body), ["one"]);
    assert_eq!(rows(&table.body)[0]["cells"][1], 1);
    let missing = h
        .get_accepting(&format!("{path}/missing"), KUBECTL_TABLE)
        .await;
    assert_eq!(missing.status, 404, "errors stay Status objects");
    assert_eq!(missing.body["kind"], "Status");
}

#[tokio::test]
async fn s10_include_object_none_metadata_object() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-include").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    post_ok(&h, &path, &configmap("c", json!({"k": "v"}))).await;
    let object = |query: &'static str| {
        let h = &h;
        let path = &path;
        async move {
            let reply = h
                .get_accepting(&format!("{path}{query}"), KUBECTL_TABLE)
                .await;
            assert_eq!(reply.status, 200, "{query}: {:?}", reply.body);
            rows(&reply.body)[0].get("object").cloned()
        }
    };
    let metadata = object("?includeObject=Metadata").await.expect("an object");
    assert_eq!(metadata["kind"], "PartialObjectMetadata");
    assert_eq!(object("").await, Some(metadata), "Metadata is the default");
    let whole = object("?includeObject=Object").await.expect("an object");
    assert_eq!(
        (&whole["kind"], &whole["apiVersion"], &whole["data"]),
        (&json!("ConfigMap"), &json!("v1"), &json!({"k": "v"}))
    );
    let none = object("?includeObject=None").await;
    assert!(none.as_ref().is_none_or(Value::is_null), "{none:?}");
    let bad = h
        .get_accepting(&format!("{path}?includeObject=All"), KUBECTL_TABLE)
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.body["message"],
        "Unable to convert to Table as requested: includeObject: Invalid value: \"All\": must be 'Metadata', 'Object', 'None', or empty"
    );
}

#[tokio::test]
async fn s10_table_version_follows_accept_and_plain_json_stays_plain() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-negotiate").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    post_ok(&h, &path, &configmap("c", json!({}))).await;
    let beta = h
        .get_accepting(
            &path,
            "application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json",
        )
        .await;
    assert_eq!(beta.body["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(
        rows(&beta.body)[0]["object"]["apiVersion"],
        "meta.k8s.io/v1beta1"
    );
    // kubectl -o json, yaml, name: plain application/json.
    let plain = h.get_accepting(&path, "application/json").await;
    assert_eq!(plain.body["kind"], "ConfigMapList");
    // A Table version the server does not have is passed over for the next range.
    let fallback = h
        .get_accepting(
            &path,
            "application/json;as=Table;v=v9;g=meta.k8s.io,application/json",
        )
        .await;
    assert_eq!(fallback.body["kind"], "ConfigMapList");
}

#[tokio::test]
async fn s10_paginated_table_carries_continue_and_remaining_item_count() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-pages").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    for name in ["c1", "c2", "c3"] {
        h.create_configmap(&ns, name, json!({})).await;
    }
    let first = h
        .get_accepting(&format!("{path}?limit=2"), KUBECTL_TABLE)
        .await
        .body;
    assert_eq!(first_cells(&first), ["c1", "c2"]);
    assert_eq!(first["metadata"]["remainingItemCount"], 1);
    let token = first["metadata"]["continue"]
        .as_str()
        .expect("a continue token");
    let second = h
        .get_accepting(&format!("{path}?limit=2&continue={token}"), KUBECTL_TABLE)
        .await
        .body;
    assert_eq!(first_cells(&second), ["c3"]);
    assert!(second["metadata"].get("continue").is_none(), "{second}");
    assert_eq!(
        second["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"],
        "one snapshot"
    );
}

#[tokio::test]
async fn s10_pod_printer_shows_readiness_status_restarts_and_wide_columns() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-pod").await;
    let path = format!("/api/v1/namespaces/{ns}/pods");
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {"nodeName": "node-a", "containers": [{"name": "main", "image": "nginx"}]},
    });
    let mut created = post_ok(&h, &path, &pod).await;
    created["status"] = json!({
        "phase": "Running",
        "podIP": "10.1.2.3",
        "podIPs": [{"ip": "10.1.2.3"}],
        "containerStatuses": [{
            "name": "main",
            "image": "nginx",
            "imageID": "",
            "ready": false,
            "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}},
            "lastState": {"terminated": {
                "exitCode": 1,
                "reason": "Error",
                "startedAt": created["metadata"]["creationTimestamp"],
                "finishedAt": created["metadata"]["creationTimestamp"],
            }},
        }],
    });
    let updated = h.put(&format!("{path}/web/status"), &created).await;
    assert_eq!(updated.status, 200, "{:?}", updated.body);
    let table = h
        .get_accepting(&format!("{path}/web"), KUBECTL_TABLE)
        .await
        .body;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    let priorities: Vec<i64> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["priority"].as_i64().unwrap())
        .collect();
    assert_eq!(priorities, [0, 0, 0, 0, 0, 1, 1, 1, 1]);
    let cells = rows(&table)[0]["cells"].as_array().unwrap().clone();
    assert_eq!(
        cells[..3],
        [json!("web"), json!("0/1"), json!("CrashLoopBackOff")]
    );
    let restarts = cells[3].as_str().expect("restarts is a string cell");
    assert!(
        restarts.starts_with("3 (") && restarts.ends_with(" ago)"),
        "{restarts}"
    );
    assert_eq!(
        cells[5..],
        [
            json!("10.1.2.3"),
            json!("node-a"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

#[tokio::test]
async fn s10_namespaces_deployments_and_scale_use_their_printers() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-printers").await;
    let namespace = h
        .get_accepting(&format!("/api/v1/namespaces/{ns}"), KUBECTL_TABLE)
        .await
        .body;
    assert_eq!(column_names(&namespace), ["Name", "Status", "Age"]);
    assert_eq!(rows(&namespace)[0]["cells"][1], "Active");
    let deployments = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    post_ok(&h, &deployments, &deployment("web", 3, "nginx:1.27")).await;
    let table = h.get_accepting(&deployments, KUBECTL_TABLE).await.body;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Ready",
            "Up-to-date",
            "Available",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    let cells = &rows(&table)[0]["cells"];
    assert_eq!(cells[1], "0/3");
    assert_eq!(
        (&cells[5], &cells[6], &cells[7]),
        (&json!("main"), &json!("nginx:1.27"), &json!("app=web"))
    );
    let scale = h
        .get_accepting(&format!("{deployments}/web/scale"), KUBECTL_TABLE)
        .await
        .body;
    assert_eq!(
        column_names(&scale),
        ["Name", "Desired", "Available", "Age"]
    );
    let cells = rows(&scale)[0]["cells"].as_array().expect("cells");
    assert_eq!(cells[..2], [json!("web"), json!(3)]);
}

#[tokio::test]
async fn s10_kinds_without_a_printer_get_name_and_created_at() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-default").await;
    let path = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles");
    let empty = h.get_accepting(&path, KUBECTL_TABLE).await.body;
    assert_eq!(column_names(&empty), ["Name", "Created At"]);
    assert!(
        empty["rows"].as_array().is_none_or(Vec::is_empty),
        "{empty}"
    );
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                      "metadata": {"name": "reader"}, "rules": []});
    let created = post_ok(&h, &path, &role).await;
    let table = h.get_accepting(&path, KUBECTL_TABLE).await.body;
    assert_eq!(table["columnDefinitions"][1]["type"], "date");
    assert_eq!(
        rows(&table)[0]["cells"],
        json!(["reader", created["metadata"]["creationTimestamp"]])
    );
}

#[tokio::test]
async fn s10_8_10_watch_events_are_tables_with_column_definitions_first_only() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-watch").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    h.create_configmap(&ns, "before", json!({})).await;
    // As kubectl get -w: no resourceVersion, so the current objects come first.
    let mut watch = h
        .watch_accepting(&format!("{path}?watch=true"), KUBECTL_TABLE)
        .await;
    assert_eq!(watch.status, 200);
    let first = watch.next_event().await.expect("an initial event");
    assert_eq!(first["type"], "ADDED");
    let table = &first["object"];
    assert_eq!(table["kind"], "Table");
    assert_eq!(column_names(table), ["Name", "Data", "Age"]);
    assert_eq!(first_cells(table), ["before"]);
    assert_eq!(
        table["metadata"]["resourceVersion"],
        rows(table)[0]["object"]["metadata"]["resourceVersion"]
    );
    let created = h.create_configmap(&ns, "after", json!({})).await;
    let added = watch.next_event().await.expect("an ADDED event");
    assert_eq!(added["type"], "ADDED");
    assert_eq!(first_cells(&added["object"]), ["after"]);
    assert!(
        added["object"]["columnDefinitions"].is_null(),
        "later events omit the columns: {added}"
    );
    let mut update = created.clone();
    update["data"] = json!({"k": "v"});
    assert_eq!(h.put(&format!("{path}/after"), &update).await.status, 200);
    let modified = watch.next_event().await.expect("a MODIFIED event");
    assert_eq!(modified["type"], "MODIFIED");
    assert_eq!(rows(&modified["object"])[0]["cells"][1], 1);
    assert_eq!(h.delete(&format!("{path}/after"), None).await.status, 200);
    let deleted = watch.next_event().await.expect("a DELETED event");
    assert_eq!(deleted["type"], "DELETED");
    assert_eq!(first_cells(&deleted["object"]), ["after"]);
}
