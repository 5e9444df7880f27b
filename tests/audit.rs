//! `kubemock serve --audit-log-path FILE --audit-policy-file POLICY`, really started: the
//! events of a few requests are in the file once the server stopped, one `audit.k8s.io/v1`
//! `Event` a line; when `go` is installed, `scripts/auditcheck` decodes them with
//! kube-apiserver's own types (k8s.io/apiserver v0.32.0), strictly. A policy kube-apiserver
//! 1.32 refuses is refused at startup.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::common;
use common::{BINARY, WAIT};

const POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: [/readyz]
- level: RequestResponse
  resources: [{group: \"\", resources: [configmaps]}]
- level: Metadata
";

/// Starts `kubemock serve --port 0 --no-controllers ARGS...`; its URL.
async fn start(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(BINARY)
        .args(["serve", "--port", "0", "--no-controllers"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start kubemock");
    let url = common::ready_url(&mut child).await;
    (child, url)
}

async fn stop(child: &mut Child) {
    let pid = child.id().expect("running").to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .expect("kill");
    assert!(status.success());
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("exit before the deadline")
        .expect("wait");
    assert_eq!(status.code(), Some(0));
}

/// Runs `kubemock serve ARGS` expecting it to refuse to start; its stderr.
async fn refused(args: &[&str]) -> String {
    let output = Command::new(BINARY)
        .args(["serve", "--port", "0", "--no-controllers"])
        .args(args)
        .output()
        .await
        .expect("run kubemock");
    assert!(!output.status.success(), "started with {args:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `scripts/auditcheck` on `log`, when `go` is installed.
fn check_with_go(log: &Path) {
    let root = env!("CARGO_MANIFEST_DIR");
    let go = match std::process::Command::new("go").arg("version").output() {
        Ok(output) if output.status.success() => "go",
        _ => {
            eprintln!("auditcheck: skipped: `go` is not installed");
            return;
        }
    };
    let output = std::process::Command::new(go)
        .args(["run", "."])
        .arg(log)
        .current_dir(Path::new(root).join("scripts/auditcheck"))
        .output()
        .expect("run go");
    assert!(
        output.status.success(),
        "auditcheck: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!(
        "auditcheck: {}",
        String::from_utf8_lossy(&output.stdout).trim()
    );
}

#[tokio::test]
async fn serve_writes_the_audit_log_its_policy_asks_for() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let log = dir.path().join("logs/audit.log");
    let (mut child, url) = start(&[
        "--audit-log-path",
        log.to_str().unwrap(),
        "--audit-policy-file",
        policy.to_str().unwrap(),
        "--audit-log-maxage",
        "7",
    ])
    .await;
    let client = reqwest::Client::new();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "audited"},
        "data": {"k": "v"}});
    let created = client
        .post(format!("{url}/api/v1/namespaces/default/configmaps"))
        .json(&cm)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created_id = created.headers()["audit-id"].to_str().unwrap().to_owned();
    let created: Value = created.json().await.unwrap();
    let got = client
        .get(format!("{url}/api/v1/namespaces/default/pods"))
        .send()
        .await
        .unwrap();
    let listed_id = got.headers()["audit-id"].to_str().unwrap().to_owned();
    // A failure, an impersonated request and a watch, for the Go check's sake.
    let missing = client
        .get(format!(
            "{url}/api/v1/namespaces/default/configmaps/missing"
        ))
        .header("Impersonate-User", "alice")
        .header("User-Agent", "audit-test")
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let watch = client
        .get(format!(
            "{url}/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1"
        ))
        .send()
        .await
        .unwrap();
    let watch_id = watch.headers()["audit-id"].to_str().unwrap().to_owned();
    watch.bytes().await.unwrap();
    let readyz = client.get(format!("{url}/readyz")).send().await.unwrap();
    let readyz_id = readyz.headers()["audit-id"].to_str().unwrap().to_owned();
    stop(&mut child).await;

    let text = std::fs::read_to_string(&log).expect("the audit log");
    let events: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON event a line"))
        .collect();
    let of = |id: &str| -> Vec<&Value> { events.iter().filter(|e| e["auditID"] == id).collect() };
    let create = of(&created_id);
    assert_eq!(create.len(), 1, "{text}");
    assert_eq!(create[0]["stage"], "ResponseComplete");
    assert_eq!(create[0]["level"], "RequestResponse");
    assert_eq!(create[0]["requestObject"], cm);
    assert_eq!(create[0]["responseObject"], created);
    let list = of(&listed_id);
    assert_eq!(list.len(), 1, "{text}");
    assert_eq!(list[0]["level"], "Metadata");
    assert_eq!(list[0]["verb"], "list");
    assert_eq!(
        list[0]["objectRef"],
        json!({"resource": "pods", "namespace": "default", "apiVersion": "v1"})
    );
    assert!(of(&readyz_id).is_empty(), "{text}");
    let stages: Vec<&Value> = of(&watch_id).iter().map(|e| &e["stage"]).collect();
    assert_eq!(stages, ["ResponseStarted", "ResponseComplete"], "{text}");
    assert!(events.iter().all(|e| e["stage"] != "RequestReceived"));
    check_with_go(&log);
}

#[tokio::test]
async fn serve_refuses_a_policy_kube_apiserver_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    let log = dir.path().join("audit.log");
    let log = log.to_str().unwrap();
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: Metadata}]\n",
    )
    .unwrap();
    let policy = policy.to_str().unwrap();
    let stderr = refused(&["--audit-log-path", log, "--audit-policy-file", policy]).await;
    assert!(stderr.contains("audit.k8s.io/v1beta1"), "{stderr}");
    assert!(stderr.contains("reads only audit.k8s.io/v1"), "{stderr}");
    let stderr = refused(&["--audit-log-path", log, "--audit-log-format", "legacy"]).await;
    assert!(
        stderr.contains("invalid audit log format \"legacy\""),
        "{stderr}"
    );
}
