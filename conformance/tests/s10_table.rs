//! docs/api-behaviour.md#tables: Table output, as kubectl asks for it.

use kubemock_conformance::{Harness, configmap, deployment};
use serde_json::{Value, json};

/// The `Accept` kubectl 1.32 sends for `get` (docs/api-behaviour.md#tables).
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

// ----- the printers of the other built-in kinds ----------------------------------------------

/// Creates `object` in `collection` and answers the Table kubectl gets for it.
async fn table_of_new(h: &Harness, collection: &str, object: &Value) -> Value {
    let created = post_ok(h, collection, object).await;
    let name = created["metadata"]["name"].as_str().expect("a name");
    table_of(h, &format!("{collection}/{name}")).await
}

/// The Table kubectl gets at `path`.
async fn table_of(h: &Harness, path: &str) -> Value {
    let reply = h.get_accepting(path, KUBECTL_TABLE).await;
    assert_eq!(reply.status, 200, "GET {path}: {:?}", reply.body);
    reply.body
}

/// Replaces the status of the object at `item` with `status` (PUT of `status`).
async fn put_status(h: &Harness, item: &str, status: Value) {
    let mut object = h.get(item).await.body;
    object["status"] = status;
    let reply = h.put(&format!("{item}/status"), &object).await;
    assert_eq!(reply.status, 200, "PUT {item}/status: {:?}", reply.body);
}

/// The cells of a one-row Table.
fn only_cells(table: &Value) -> Vec<Value> {
    let rows = rows(table);
    assert_eq!(rows.len(), 1, "{table}");
    rows[0]["cells"].as_array().expect("cells").clone()
}

/// The names of the `-o wide` (priority 1) columns.
fn wide_columns(table: &Value) -> Vec<&str> {
    table["columnDefinitions"]
        .as_array()
        .expect("columnDefinitions is an array")
        .iter()
        .filter(|c| c["priority"] == 1)
        .map(|c| c["name"].as_str().expect("a column name"))
        .collect()
}

/// An age cell of a just-created object (`0s`, `1s`, ...).
fn assert_fresh_age(cell: &Value) {
    let age = cell.as_str().expect("an age string");
    assert!(age.ends_with('s'), "{age}");
}

/// A pod template with one container, labelled `app: name`.
fn pod_template(name: &str, image: &str, restart: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": name}},
        "spec": {"restartPolicy": restart, "containers": [{"name": name, "image": image}]},
    })
}

#[tokio::test]
async fn s10_endpoints_print_ip_ports_the_first_three_then_how_many_more() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-endpoints").await;
    let path = format!("/api/v1/namespaces/{ns}/endpoints");
    let endpoints = json!({
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
        "subsets": [{
            "addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
            "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
        }],
    });
    let table = table_of_new(&h, &path, &endpoints).await;
    assert_eq!(column_names(&table), ["Name", "Endpoints", "Age"]);
    let cells = only_cells(&table);
    assert_eq!(
        cells[..2],
        [
            json!("web"),
            json!("10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...")
        ]
    );
    assert_fresh_age(&cells[2]);
    let empty = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "none"}});
    assert_eq!(
        only_cells(&table_of_new(&h, &path, &empty).await)[1],
        "<none>"
    );
}

#[tokio::test]
async fn s10_endpoint_slices_print_address_type_ports_and_endpoints() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-slices").await;
    let path = format!("/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices");
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-abc12"}, "addressType": "IPv4",
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "any", "protocol": "TCP"}],
        "endpoints": [
            {"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]},
            {"addresses": ["10.0.0.3"]}, {"addresses": ["10.0.0.4"]},
        ],
    });
    let table = table_of_new(&h, &path, &slice).await;
    assert_eq!(
        column_names(&table),
        ["Name", "AddressType", "Ports", "Endpoints", "Age"]
    );
    let cells = only_cells(&table);
    assert_eq!(
        cells[..4],
        [
            json!("web-abc12"),
            json!("IPv4"),
            json!("80,any"),
            json!("10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...")
        ]
    );
    let bare = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                      "metadata": {"name": "bare"}, "addressType": "FQDN", "endpoints": []});
    assert_eq!(
        only_cells(&table_of_new(&h, &path, &bare).await)[1..4],
        [json!("FQDN"), json!("<unset>"), json!("<unset>")]
    );
}

#[tokio::test]
async fn s10_stateful_sets_print_ready_of_desired() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-sts").await;
    let path = format!("/apis/apps/v1/namespaces/{ns}/statefulsets");
    let set = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": pod_template("db", "postgres:16", "Always")},
    });
    let table = table_of_new(&h, &path, &set).await;
    assert_eq!(
        column_names(&table),
        ["Name", "Ready", "Age", "Containers", "Images"]
    );
    assert_eq!(wide_columns(&table), ["Containers", "Images"]);
    assert_eq!(only_cells(&table)[1], "0/2");
    put_status(
        &h,
        &format!("{path}/db"),
        json!({"replicas": 2, "readyReplicas": 1, "availableReplicas": 1}),
    )
    .await;
    let cells = only_cells(&table_of(&h, &format!("{path}/db")).await);
    assert_eq!(cells[..2], [json!("db"), json!("1/2")]);
    assert_eq!(cells[3..], [json!("db"), json!("postgres:16")]);
}

#[tokio::test]
async fn s10_daemon_sets_print_node_counts_and_node_selector() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-ds").await;
    let path = format!("/apis/apps/v1/namespaces/{ns}/daemonsets");
    let mut template = pod_template("agent", "agent:2", "Always");
    template["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
    let set = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template},
    });
    let table = table_of_new(&h, &path, &set).await;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Desired",
            "Current",
            "Ready",
            "Up-to-date",
            "Available",
            "Node Selector",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    put_status(
        &h,
        &format!("{path}/agent"),
        json!({"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
               "updatedNumberScheduled": 3, "numberAvailable": 2, "numberMisscheduled": 0}),
    )
    .await;
    let cells = only_cells(&table_of(&h, &format!("{path}/agent")).await);
    assert_eq!(
        cells[..7],
        [
            json!("agent"),
            json!(3),
            json!(3),
            json!(2),
            json!(3),
            json!(2),
            json!("kubernetes.io/os=linux")
        ]
    );
    assert_eq!(
        cells[8..],
        [json!("agent"), json!("agent:2"), json!("app=agent")]
    );
}

#[tokio::test]
async fn s10_jobs_print_status_completions_and_duration() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-job").await;
    let path = format!("/apis/batch/v1/namespaces/{ns}/jobs");
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "pi", "image": "perl:5"}]}}},
    });
    let created = post_ok(&h, &path, &job).await;
    let uid = created["metadata"]["uid"].as_str().expect("a uid");
    let table = table_of(&h, &format!("{path}/pi")).await;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Status",
            "Completions",
            "Duration",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    assert_eq!(wide_columns(&table), ["Containers", "Images", "Selector"]);
    let cells = only_cells(&table);
    assert_eq!(
        cells[..4],
        [json!("pi"), json!("Running"), json!("0/1"), json!("")]
    );
    assert_eq!(
        cells[5..],
        [
            json!("pi"),
            json!("perl:5"),
            json!(format!("batch.kubernetes.io/controller-uid={uid}"))
        ]
    );
    put_status(
        &h,
        &format!("{path}/pi"),
        json!({
            "startTime": "2024-05-01T12:00:00Z", "completionTime": "2024-05-01T12:03:10Z",
            "succeeded": 1, "ready": 0, "terminating": 0,
            "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True"},
                {"type": "Complete", "status": "True"},
            ],
        }),
    )
    .await;
    let cells = only_cells(&table_of(&h, &format!("{path}/pi")).await);
    assert_eq!(
        cells[1..4],
        [json!("Complete"), json!("1/1"), json!("3m10s")]
    );
}

#[tokio::test]
async fn s10_cron_jobs_print_schedule_timezone_suspend_active_and_last_schedule() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-cronjob").await;
    let path = format!("/apis/batch/v1/namespaces/{ns}/cronjobs");
    let cron_job = json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 3 * * *", "timeZone": "Etc/UTC",
                 "jobTemplate": {"spec": {"template": pod_template("backup", "backup:1", "OnFailure")}}},
    });
    let table = table_of_new(&h, &path, &cron_job).await;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Schedule",
            "Timezone",
            "Suspend",
            "Active",
            "Last Schedule",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    let cells = only_cells(&table);
    assert_eq!(
        cells[..6],
        [
            json!("nightly"),
            json!("0 3 * * *"),
            json!("Etc/UTC"),
            json!("False"),
            json!(0),
            json!("<none>")
        ]
    );
    assert_eq!(
        cells[7..],
        [json!("backup"), json!("backup:1"), json!("<none>")]
    );
    let created = h.get(&format!("{path}/nightly")).await.body;
    put_status(
        &h,
        &format!("{path}/nightly"),
        json!({
            "active": [{"kind": "Job", "apiVersion": "batch/v1", "namespace": ns, "name": "nightly-1"}],
            "lastScheduleTime": created["metadata"]["creationTimestamp"],
        }),
    )
    .await;
    let cells = only_cells(&table_of(&h, &format!("{path}/nightly")).await);
    assert_eq!(cells[4], 1);
    assert_fresh_age(&cells[5]);
}

#[tokio::test]
async fn s10_replication_controllers_print_replicas_and_label_selector() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-rc").await;
    let path = format!("/api/v1/namespaces/{ns}/replicationcontrollers");
    let controller = json!({
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"app": "web"},
                 "template": pod_template("web", "nginx:1.27", "Always")},
    });
    let table = table_of_new(&h, &path, &controller).await;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Desired",
            "Current",
            "Ready",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    let cells = only_cells(&table);
    assert_eq!(cells[..4], [json!("web"), json!(2), json!(0), json!(0)]);
    assert_eq!(
        cells[5..],
        [json!("web"), json!("nginx:1.27"), json!("app=web")]
    );
}

#[tokio::test]
async fn s10_controller_revisions_print_their_controller_and_revision() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-revision").await;
    let path = format!("/apis/apps/v1/namespaces/{ns}/controllerrevisions");
    let revision = json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": "web-5d8f", "ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
            "uid": "6f1c1d6e-0000-4000-8000-000000000001", "controller": true,
        }]},
        "data": {}, "revision": 4,
    });
    let table = table_of_new(&h, &path, &revision).await;
    assert_eq!(
        column_names(&table),
        ["Name", "Controller", "Revision", "Age"]
    );
    let cells = only_cells(&table);
    assert_eq!(
        cells[..3],
        [json!("web-5d8f"), json!("statefulset.apps/web"), json!(4)]
    );
}

#[tokio::test]
async fn s10_pod_templates_print_containers_images_and_labels() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-podtemplate").await;
    let path = format!("/api/v1/namespaces/{ns}/podtemplates");
    let template = json!({
        "apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "tmpl"},
        "template": pod_template("worker", "busybox:1.36", "Always"),
    });
    let table = table_of_new(&h, &path, &template).await;
    assert_eq!(
        column_names(&table),
        ["Name", "Containers", "Images", "Pod Labels"],
        "no Age column"
    );
    assert_eq!(
        only_cells(&table),
        [
            json!("tmpl"),
            json!("worker"),
            json!("busybox:1.36"),
            json!("app=worker")
        ]
    );
}

#[tokio::test]
async fn s10_ingresses_print_class_hosts_address_and_ports() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-ingress").await;
    let path = format!("/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses");
    let backend = json!({"service": {"name": "web", "port": {"number": 80}}});
    let rule = |host: &str| json!({"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}});
    let ingress = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"},
        "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["a.example"], "secretName": "tls"}],
                 "rules": [rule("a.example"), rule("b.example"), rule("c.example"), rule("d.example")]},
    });
    let table = table_of_new(&h, &path, &ingress).await;
    assert_eq!(
        column_names(&table),
        ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
    );
    assert_eq!(
        only_cells(&table)[..5],
        [
            json!("web"),
            json!("nginx"),
            json!("a.example,b.example,c.example + 1 more..."),
            json!(""),
            json!("80, 443")
        ]
    );
    put_status(
        &h,
        &format!("{path}/web"),
        json!({"loadBalancer": {"ingress": [{"hostname": "lb.example"}, {"ip": "172.18.0.5"}]}}),
    )
    .await;
    let cells = only_cells(&table_of(&h, &format!("{path}/web")).await);
    assert_eq!(cells[3], "172.18.0.5,lb.example");
}

#[tokio::test]
async fn s10_ingress_classes_print_controller_and_parameters() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-ingressclass").await;
    let path = "/apis/networking.k8s.io/v1/ingressclasses";
    let class = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": ns},
        "spec": {"controller": "example.com/ingress",
                 "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external"}},
    });
    let table = table_of_new(&h, path, &class).await;
    assert_eq!(
        column_names(&table),
        ["Name", "Controller", "Parameters", "Age"]
    );
    assert_eq!(
        only_cells(&table)[..3],
        [
            json!(ns),
            json!("example.com/ingress"),
            json!("IngressParameters.k8s.example.com/external")
        ]
    );
}

#[tokio::test]
async fn s10_network_policies_print_the_pod_selector() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-netpol").await;
    let path = format!("/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies");
    let policy = |name: &str, selector: Value| {
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
               "metadata": {"name": name}, "spec": {"podSelector": selector}})
    };
    let table = table_of_new(
        &h,
        &path,
        &policy("db", json!({"matchLabels": {"role": "db"}})),
    )
    .await;
    assert_eq!(column_names(&table), ["Name", "Pod-Selector", "Age"]);
    assert_eq!(only_cells(&table)[..2], [json!("db"), json!("role=db")]);
    let all = table_of_new(&h, &path, &policy("all", json!({}))).await;
    assert_eq!(only_cells(&all)[1], "<none>");
}

#[tokio::test]
async fn s10_persistent_volumes_print_capacity_modes_policy_and_claim() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-pv").await;
    let path = "/api/v1/persistentvolumes";
    let volume = json!({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": ns},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                 "storageClassName": "manual", "hostPath": {"path": "/data"},
                 "claimRef": {"namespace": ns, "name": "data"}},
    });
    let table = table_of_new(&h, path, &volume).await;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Capacity",
            "Access Modes",
            "Reclaim Policy",
            "Status",
            "Claim",
            "StorageClass",
            "VolumeAttributesClass",
            "Reason",
            "Age",
            "VolumeMode"
        ]
    );
    assert_eq!(wide_columns(&table), ["VolumeMode"]);
    let cells = only_cells(&table);
    assert_eq!(
        cells[..9],
        [
            json!(ns),
            json!("5Gi"),
            json!("RWO,RWX"),
            json!("Retain"),
            json!("Pending"),
            json!(format!("{ns}/data")),
            json!("manual"),
            json!("<unset>"),
            json!("")
        ]
    );
    assert_eq!(cells[10], "Filesystem");
}

#[tokio::test]
async fn s10_persistent_volume_claims_print_capacity_once_bound() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-pvc").await;
    let path = format!("/api/v1/namespaces/{ns}/persistentvolumeclaims");
    let claim = json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                 "resources": {"requests": {"storage": "1Gi"}}},
    });
    let table = table_of_new(&h, &path, &claim).await;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Status",
            "Volume",
            "Capacity",
            "Access Modes",
            "StorageClass",
            "VolumeAttributesClass",
            "Age",
            "VolumeMode"
        ]
    );
    assert_eq!(
        only_cells(&table)[..7],
        [
            json!("data"),
            json!("Pending"),
            json!(""),
            json!(""),
            json!(""),
            json!("standard"),
            json!("<unset>")
        ]
    );
    let item = format!("{path}/data");
    let mut bound = h.get(&item).await.body;
    bound["spec"]["volumeName"] = json!("pv-data");
    assert_eq!(h.put(&item, &bound).await.status, 200);
    put_status(
        &h,
        &item,
        json!({"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "2Gi"}}),
    )
    .await;
    let cells = only_cells(&table_of(&h, &item).await);
    assert_eq!(
        cells[1..5],
        [json!("Bound"), json!("pv-data"), json!("2Gi"), json!("RWO")]
    );
}

#[tokio::test]
async fn s10_storage_classes_mark_the_default_class() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-sc").await;
    let path = "/apis/storage.k8s.io/v1/storageclasses";
    let class = json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": ns, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer",
    });
    let table = table_of_new(&h, path, &class).await;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Provisioner",
            "ReclaimPolicy",
            "VolumeBindingMode",
            "AllowVolumeExpansion",
            "Age"
        ]
    );
    assert_eq!(
        only_cells(&table)[..5],
        [
            json!(format!("{ns} (default)")),
            json!("rancher.io/local-path"),
            json!("Delete"),
            json!("WaitForFirstConsumer"),
            json!(false)
        ]
    );
}

#[tokio::test]
async fn s10_service_accounts_print_their_secret_count() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-sa").await;
    let path = format!("/api/v1/namespaces/{ns}/serviceaccounts");
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "ci"},
                         "secrets": [{"name": "ci-token"}]});
    let table = table_of_new(&h, &path, &account).await;
    assert_eq!(column_names(&table), ["Name", "Secrets", "Age"]);
    assert_eq!(only_cells(&table)[..2], [json!("ci"), json!(1)]);
}

#[tokio::test]
async fn s10_role_bindings_print_the_role_and_wide_subjects() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-rolebinding").await;
    let subjects = json!([
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"},
        {"kind": "ServiceAccount", "name": "ci", "namespace": ns},
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"},
    ]);
    let binding = |kind: &str, name: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": subjects})
    };
    let namespaced = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings");
    let cluster = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
    for (path, kind, name) in [
        (namespaced.as_str(), "RoleBinding", "viewers"),
        (cluster, "ClusterRoleBinding", ns.as_str()),
    ] {
        let table = table_of_new(&h, path, &binding(kind, name)).await;
        assert_eq!(
            column_names(&table),
            ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"],
            "{kind}"
        );
        assert_eq!(wide_columns(&table), ["Users", "Groups", "ServiceAccounts"]);
        let cells = only_cells(&table);
        assert_eq!(cells[..2], [json!(name), json!("ClusterRole/view")]);
        assert_eq!(
            cells[3..],
            [
                json!("alice, bob"),
                json!("devs"),
                json!(format!("{ns}/ci"))
            ],
            "{kind}"
        );
    }
}

#[tokio::test]
async fn s10_autoscalers_print_targets_in_both_versions() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-hpa").await;
    let v2 = format!("/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers");
    let v1 = format!("/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers");
    let target = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
    let hpa = json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": target, "minReplicas": 2, "maxReplicas": 8, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
        ]},
    });
    let table = table_of_new(&h, &v2, &hpa).await;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Reference",
            "Targets",
            "MinPods",
            "MaxPods",
            "Replicas",
            "Age"
        ]
    );
    assert_eq!(
        only_cells(&table)[..6],
        [
            json!("web"),
            json!("Deployment/web"),
            json!("cpu: <unknown>/60%, memory: <unknown>/500Mi"),
            json!("2"),
            json!(8),
            json!(0)
        ]
    );
    let legacy = json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "api"},
        "spec": {"scaleTargetRef": target, "maxReplicas": 4, "targetCPUUtilizationPercentage": 75},
    });
    let table = table_of_new(&h, &v1, &legacy).await;
    assert_eq!(
        only_cells(&table)[2..4],
        [json!("cpu: <unknown>/75%"), json!("1")]
    );
}

#[tokio::test]
async fn s10_disruption_budgets_print_bounds_and_allowed_disruptions() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-pdb").await;
    let path = format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets");
    let budget = json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
        "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}},
    });
    let table = table_of_new(&h, &path, &budget).await;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Min Available",
            "Max Unavailable",
            "Allowed Disruptions",
            "Age"
        ]
    );
    assert_eq!(
        only_cells(&table)[..4],
        [json!("web"), json!("N/A"), json!("25%"), json!(0)]
    );
}

#[tokio::test]
async fn s10_priority_classes_print_value_default_and_preemption_policy() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-pc").await;
    let path = "/apis/scheduling.k8s.io/v1/priorityclasses";
    let class = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                       "metadata": {"name": ns}, "value": 1000});
    let table = table_of_new(&h, path, &class).await;
    assert_eq!(
        column_names(&table),
        ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]
    );
    let cells = only_cells(&table);
    assert_eq!(cells[..3], [json!(ns), json!(1000), json!(false)]);
    assert_eq!(cells[4], "PreemptLowerPriority");
}

#[tokio::test]
async fn s10_resource_quotas_print_requests_and_limits_used_of_hard() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-quota").await;
    let path = format!("/api/v1/namespaces/{ns}/resourcequotas");
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute"},
                       "spec": {"hard": {"pods": "10", "requests.cpu": "2", "limits.cpu": "4"}}});
    let table = table_of_new(&h, &path, &quota).await;
    assert_eq!(column_names(&table), ["Name", "Request", "Limit", "Age"]);
    put_status(
        &h,
        &format!("{path}/compute"),
        json!({"hard": {"pods": "10", "requests.cpu": "2", "limits.cpu": "4"},
               "used": {"pods": "3", "requests.cpu": "500m"}}),
    )
    .await;
    let cells = only_cells(&table_of(&h, &format!("{path}/compute")).await);
    assert_eq!(
        cells[..3],
        [
            json!("compute"),
            json!("pods: 3/10, requests.cpu: 500m/2"),
            json!("limits.cpu: 0/4")
        ]
    );
}

#[tokio::test]
async fn s10_roles_limit_ranges_and_definitions_keep_name_and_created_at() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-defaults").await;
    for path in [
        "/apis/rbac.authorization.k8s.io/v1/clusterroles".to_owned(),
        format!("/api/v1/namespaces/{ns}/limitranges"),
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions".to_owned(),
    ] {
        let table = table_of(&h, &path).await;
        assert_eq!(column_names(&table), ["Name", "Created At"], "{path}");
    }
}

// ----- PartialObjectMetadata: the metadata client's conversion ----------------------------------

/// client-go's metadata client (`k8s.io/client-go/metadata`): `Get`, `Patch` and `Watch`.
const METADATA_OBJECT: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
/// The same client's `List`.
const METADATA_LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

fn partial(metadata: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata})
}

#[tokio::test]
async fn s10_partial_object_metadata_answers_get_list_patch_and_watch_of_the_metadata_client() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-partial").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let created = post_ok(&h, &path, &configmap("one", json!({"big": "value"}))).await;
    // Get: the metadata alone, in protobuf (the client's first choice; the harness decodes it).
    let got = h
        .get_accepting(&format!("{path}/one"), METADATA_OBJECT)
        .await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    assert_eq!(
        got.headers["content-type"],
        "application/vnd.kubernetes.protobuf"
    );
    assert_eq!(got.body, partial(&created["metadata"]));
    // The same in JSON, and in v1beta1.
    let json_only = h
        .get_accepting(
            &format!("{path}/one"),
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1",
        )
        .await;
    assert_eq!(json_only.headers["content-type"], "application/json");
    assert_eq!(json_only.body["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(json_only.body["metadata"], created["metadata"]);
    // List: each item's metadata, with the list's resourceVersion.
    post_ok(&h, &path, &configmap("two", json!({}))).await;
    let list = h.get_accepting(&path, METADATA_LIST).await;
    assert_eq!(list.status, 200, "{:?}", list.body);
    assert_eq!(list.body["kind"], "PartialObjectMetadataList");
    assert_eq!(list.body["apiVersion"], "meta.k8s.io/v1");
    assert!(list.body["metadata"]["resourceVersion"].is_string());
    let items = list.body["items"].as_array().expect("items");
    assert_eq!(items.len(), 2);
    // (Protobuf has no kind inside a list: the items are bare metadata, as client-go decodes.)
    assert_eq!(items[0], json!({"metadata": created["metadata"]}));
    let page = h
        .get_accepting(
            &path,
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )
        .await;
    assert_eq!(page.body["items"][0], partial(&created["metadata"]));
    // Paginated, the continue token and remaining count stay.
    let page = h
        .get_accepting(
            &format!("{path}?limit=1"),
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )
        .await;
    assert_eq!(page.body["items"].as_array().map(Vec::len), Some(1));
    assert!(
        page.body["metadata"]["continue"].is_string(),
        "{}",
        page.body
    );
    assert_eq!(page.body["metadata"]["remainingItemCount"], 1);
    // Upstream builds the list from a nil slice: an empty one has `items: null`.
    let empty = h
        .get_accepting(
            &format!("{path}?labelSelector=none%3Dhere"),
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )
        .await;
    assert_eq!(empty.body["items"], Value::Null);
    // The conversion of the other shape is refused.
    let wrong = h
        .get_accepting(
            &path,
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        )
        .await;
    assert_eq!(wrong.status, 406);
    assert_eq!(
        wrong.body["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
    );
    // Patch answers the patched object's metadata.
    let patched = h
        .request_with_headers(
            reqwest::Method::PATCH,
            &format!("{path}/one"),
            Some(br#"{"metadata":{"labels":{"seen":"yes"}}}"#.to_vec()),
            "application/merge-patch+json",
            &[("accept", METADATA_OBJECT)],
        )
        .await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    assert_eq!(patched.body["kind"], "PartialObjectMetadata");
    assert_eq!(patched.body["metadata"]["labels"]["seen"], "yes");
    // Watch: every event's object is the metadata; the frames are protobuf.
    let rv = list.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion")
        .to_owned();
    let mut watch = h
        .watch_accepting(
            &format!("{path}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true"),
            METADATA_OBJECT,
        )
        .await;
    assert_eq!(watch.status, 200);
    assert_eq!(
        watch.headers["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let modified = watch.next_event().await.expect("the patch's event");
    assert_eq!(modified["type"], "MODIFIED");
    assert_eq!(modified["object"], patched.body);
    assert_eq!(h.delete(&format!("{path}/two"), None).await.status, 200);
    let deleted = watch.next_event().await.expect("a DELETED event");
    assert_eq!(deleted["type"], "DELETED");
    assert_eq!(deleted["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(deleted["object"]["metadata"]["name"], "two");
}

#[tokio::test]
async fn s10_tables_and_partial_metadata_answer_writes_too() {
    let h = Harness::start().await;
    let ns = h.namespace("s10-writes").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let body = serde_json::to_vec(&configmap("c", json!({"a": "1"}))).expect("JSON");
    let created = h
        .request_with_headers(
            reqwest::Method::POST,
            &path,
            Some(body),
            "application/json",
            &[("accept", KUBECTL_TABLE)],
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.body["kind"], "Table");
    assert_eq!(first_cells(&created.body), ["c"]);
    let deleted = h
        .request_with_headers(
            reqwest::Method::DELETE,
            &format!("{path}/c"),
            None,
            "",
            &[("accept", METADATA_OBJECT)],
        )
        .await;
    // A deleted ConfigMap is answered with a Status, which no conversion touches (docs/api-behaviour.md#delete-responses).
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert_eq!(deleted.body["kind"], "Status");
}
