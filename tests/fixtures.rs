//! The binary's test-backend powers (docs/test-powers.md): `serve --load` creates
//! fixtures in dependency order before the ready line and refuses to start on a bad one;
//! `snapshot save` and `serve --restore` carry a cluster's state to a new server; and
//! kubectl applies and prints Faults.

use crate::common;

use std::path::Path;
use std::process::Stdio;

use common::{BINARY, WAIT, kubectl, ready_url};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

/// A CRD, a custom object of it and a ConfigMap in a namespace, written so that each
/// depends on what comes after it in file order.
fn write_fixtures(dir: &Path) {
    std::fs::create_dir_all(dir.join("z")).expect("as the test set it up");
    std::fs::write(
        dir.join("a-objects.yaml"),
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: team\nspec:\n  size: 3\n\
         ---\n\
         apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: settings, namespace: team}\n  data: {mode: fast}\n",
    )
    .expect("as the test set it up");
    std::fs::write(
        dir.join("b-namespace.json"),
        r#"{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}"#,
    )
    .expect("as the test set it up");
    std::fs::write(
        dir.join("z").join("crd.yaml"),
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n\
         spec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget}\n\
         \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n\
         \x20       type: object\n        x-kubernetes-preserve-unknown-fields: true\n",
    )
    .expect("as the test set it up");
}

fn serve(args: &[&str]) -> Child {
    Command::new(BINARY)
        .args(["serve", "--port", "0", "--no-controllers"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("kubemock starts")
}

async fn get(url: &str, path: &str) -> (u16, Value) {
    let response = reqwest::get(format!("{url}{path}"))
        .await
        .expect("an answer");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn stop(mut child: Child) {
    let pid = child.id().expect("running").to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .expect("as the test set it up");
    assert!(status.success());
    let exit = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("stops")
        .expect("as the test set it up");
    assert!(exit.success(), "{exit:?}");
}

#[tokio::test]
async fn fixtures_are_created_in_dependency_order_before_the_server_is_ready() {
    let dir = tempfile::tempdir().expect("as the test set it up");
    write_fixtures(dir.path());
    let mut child = serve(&[
        "--load",
        dir.path().to_str().expect("as the test set it up"),
    ]);
    let url = ready_url(&mut child).await;
    let (code, widget) = get(&url, "/apis/example.com/v1/namespaces/team/widgets/w1").await;
    assert_eq!(code, 200, "{widget}");
    assert_eq!(widget["spec"]["size"], 3);
    let (code, cm) = get(&url, "/api/v1/namespaces/team/configmaps/settings").await;
    assert_eq!(code, 200, "{cm}");
    assert_eq!(cm["data"]["mode"], "fast");
    stop(child).await;
}

#[tokio::test]
async fn a_bad_fixture_stops_the_start_naming_its_file_and_document() {
    let dir = tempfile::tempdir().expect("as the test set it up");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Name}\n",
    )
    .expect("as the test set it up");
    let child = serve(&["--load", bad.to_str().expect("as the test set it up")]);
    let output = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("exits")
        .expect("as the test set it up");
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "no ready line");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "{}, document 2: creating ConfigMap \"Not_A_Name\": 422",
            bad.display()
        )),
        "{stderr}"
    );
    // A document that is not YAML: named too.
    std::fs::write(&bad, "kind: [\n").expect("as the test set it up");
    let child = serve(&["--load", bad.to_str().expect("as the test set it up")]);
    let output = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("exits")
        .expect("as the test set it up");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{}, document 1: ", bad.display())),
        "{stderr}"
    );
}

/// The snapshot's items by key, resourceVersions left out.
fn by_key(snapshot: &Value) -> Vec<(String, Value)> {
    let mut items: Vec<(String, Value)> = snapshot["items"]
        .as_array()
        .expect("as the test set it up")
        .iter()
        .map(|item| {
            (
                item["key"]
                    .as_str()
                    .expect("as the test set it up")
                    .to_owned(),
                item["object"].clone(),
            )
        })
        .collect();
    items.sort_by(|a, b| a.0.cmp(&b.0));
    items
}

#[tokio::test]
async fn a_saved_snapshot_restores_the_same_objects_with_their_uids() {
    let dir = tempfile::tempdir().expect("as the test set it up");
    write_fixtures(dir.path());
    let mut first = serve(&[
        "--load",
        dir.path().to_str().expect("as the test set it up"),
    ]);
    let url = ready_url(&mut first).await;
    let client = reqwest::Client::new();
    let created = client
        .post(format!("{url}/api/v1/namespaces/default/configmaps"))
        .json(&json!({"metadata": {"name": "later", "labels": {"a": "b"}}, "data": {"k": "v"}}))
        .send()
        .await
        .expect("as the test set it up");
    assert_eq!(created.status(), 201);
    let file = dir.path().join("snapshot.json");
    let saved = Command::new(BINARY)
        .args([
            "snapshot",
            "save",
            file.to_str().expect("as the test set it up"),
            "--server",
            &url,
        ])
        .status()
        .await
        .expect("as the test set it up");
    assert!(saved.success());
    stop(first).await;
    let original: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("as the test set it up"))
            .expect("as the test set it up");
    assert_eq!(original["kind"], "Snapshot");

    let mut second = serve(&["--restore", file.to_str().expect("as the test set it up")]);
    let url = ready_url(&mut second).await;
    let (code, later) = get(&url, "/api/v1/namespaces/default/configmaps/later").await;
    assert_eq!(code, 200);
    let (_, widget) = get(&url, "/apis/example.com/v1/namespaces/team/widgets/w1").await;
    assert_eq!(widget["spec"]["size"], 3, "the CRD was restored and serves");
    let restored: Value = client
        .post(format!("{url}/apis/testing.kubemock.dev/v1/snapshots"))
        .json(&json!({}))
        .send()
        .await
        .expect("as the test set it up")
        .json()
        .await
        .expect("as the test set it up");
    let (before, after) = (by_key(&original), by_key(&restored));
    let keys = |items: &[(String, Value)]| items.iter().map(|i| i.0.clone()).collect::<Vec<_>>();
    assert_eq!(keys(&before), keys(&after));
    for ((key, a), (_, b)) in before.iter().zip(&after) {
        assert_eq!(a, b, "{key}");
    }
    let original_later = before
        .iter()
        .find(|(key, _)| key.ends_with("/configmaps/default/later"))
        .expect("saved");
    assert_eq!(
        original_later.1["metadata"]["uid"],
        later["metadata"]["uid"]
    );
    stop(second).await;
}

#[tokio::test]
async fn kubectl_applies_a_fault_and_gets_it_with_its_columns() {
    let dir = tempfile::tempdir().expect("as the test set it up");
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = serve(&[
        "--kubeconfig-out",
        kubeconfig.to_str().expect("as the test set it up"),
    ]);
    let url = ready_url(&mut child).await;
    let fault = dir.path().join("fault.yaml");
    std::fs::write(
        &fault,
        "apiVersion: testing.kubemock.dev/v1\nkind: Fault\nmetadata:\n  name: conflict-web\n\
         spec:\n  match:\n    verbs: [update, patch]\n    resource: deployments\n    name: web\n\
         \x20 action:\n    status: {code: 409}\n  count: 1\n",
    )
    .expect("as the test set it up");
    let cache = dir.path().join("cache");
    let (ok, out, err) = kubectl(
        &kubeconfig,
        &cache,
        &[
            "apply",
            "-f",
            fault.to_str().expect("as the test set it up"),
        ],
    )
    .await;
    assert!(ok, "{out}{err}");
    assert_eq!(
        out.trim(),
        "fault.testing.kubemock.dev/conflict-web created"
    );
    // The status (written every 200 ms) fills the Action column.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let (ok, out, err) = kubectl(&kubeconfig, &cache, &["get", "faults"]).await;
        assert!(ok, "{err}");
        let header: Vec<&str> = out
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        assert_eq!(
            header,
            [
                "NAME",
                "VERBS",
                "RESOURCE",
                "OBJECT",
                "ACTION",
                "MATCHED",
                "APPLIED",
                "EXHAUSTED",
                "AGE"
            ]
        );
        if out.lines().nth(1).is_some_and(|row| row.contains("409")) {
            let row: Vec<&str> = out
                .lines()
                .nth(1)
                .expect("as the test set it up")
                .split_whitespace()
                .collect();
            assert_eq!(
                &row[..8],
                [
                    "conflict-web",
                    "[\"update\",\"patch\"]",
                    "deployments",
                    "web",
                    "409",
                    "0",
                    "0",
                    "false"
                ]
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{out}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let _ = url;
    stop(child).await;
}
