//! `kubemock controller-manager` really started against `kubemock serve --no-controllers`:
//! without it a deleted namespace stays Terminating; with two managers electing a leader,
//! exactly one holds the Lease, and when it stops the other takes over and does the work
//! (issue 6 items 10 and acceptance); against `kubemock serve --virtual-clock`, the manager
//! follows the server's clock (issue 21 item 4).

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const BINARY: &str = env!("CARGO_BIN_EXE_kubemock");
const WAIT: Duration = Duration::from_secs(60);
const LEASE: &str =
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager";

async fn serve(kubeconfig: &std::path::Path) -> (Child, String) {
    serve_with(kubeconfig, &[]).await
}

async fn serve_with(kubeconfig: &std::path::Path, extra: &[&str]) -> (Child, String) {
    let mut child = Command::new(BINARY)
        .args([
            "serve",
            "--port",
            "0",
            "--no-controllers",
            "--kubeconfig-out",
        ])
        .arg(kubeconfig)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start kubemock serve");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("ready in time")
        .expect("read")
        .expect("a line");
    let url = line
        .strip_prefix("kubemock: serving on ")
        .expect("the ready line")
        .to_owned();
    (child, url)
}

/// A free local port (bound, then released for the child to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .port()
}

fn manager(kubeconfig: &std::path::Path, identity: &str, health_port: u16) -> Child {
    Command::new(BINARY)
        .arg("controller-manager")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--leader-elect", "--leader-elect-identity", identity])
        .args(["--health-port", &health_port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the controller manager")
}

async fn get(url: &str, path: &str) -> (u16, Value) {
    let response = reqwest::get(format!("{url}{path}")).await.expect("get");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Polls `check` until it is `Some`, for at most [`WAIT`].
async fn wait_for<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn create_and_delete_namespace(url: &str, name: &str) {
    let client = reqwest::Client::new();
    let created = client
        .post(format!("{url}/api/v1/namespaces"))
        .json(&json!({"metadata": {"name": name}}))
        .send()
        .await
        .expect("create");
    assert_eq!(created.status(), 201);
    let deleted = client
        .delete(format!("{url}/api/v1/namespaces/{name}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), 200);
}

async fn holder(url: &str) -> Option<String> {
    let (status, lease) = get(url, LEASE).await;
    (status == 200)
        .then(|| lease["spec"]["holderIdentity"].as_str().map(str::to_owned))
        .flatten()
        .filter(|h| !h.is_empty())
}

#[tokio::test]
async fn two_managers_elect_one_leader_and_the_other_takes_over() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let (_server, url) = serve(&kubeconfig).await;

    // Without a manager, a deleted namespace stays Terminating.
    create_and_delete_namespace(&url, "first").await;
    let (status, ns) = get(&url, "/api/v1/namespaces/first").await;
    assert_eq!(status, 200);
    assert_eq!(ns["status"]["phase"], "Terminating");

    let health_port = free_port();
    let mut a = manager(&kubeconfig, "manager-a", health_port);
    let mut b = manager(&kubeconfig, "manager-b", 0);
    // The health endpoint answers (candidate or leader alike).
    let health = format!("http://127.0.0.1:{health_port}");
    wait_for("the health endpoint", || async {
        match reqwest::get(format!("{health}/healthz")).await {
            Ok(response) if response.status() == 200 => response.text().await.ok(),
            _ => None,
        }
    })
    .await;
    let leader = wait_for("a leader", || holder(&url)).await;
    assert!(leader == "manager-a" || leader == "manager-b", "{leader}");
    // The leader finishes the namespace.
    wait_for("the first namespace to go", || async {
        (get(&url, "/api/v1/namespaces/first").await.0 == 404).then_some(())
    })
    .await;

    // The leader stops (SIGTERM: it releases the lease); the other takes over.
    let (stopping, other) = if leader == "manager-a" {
        (&mut a, "manager-b")
    } else {
        (&mut b, "manager-a")
    };
    let pid = stopping.id().expect("running").to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .expect("kill");
    assert!(killed.success());
    let status = tokio::time::timeout(WAIT, stopping.wait())
        .await
        .expect("the leader exits in time")
        .expect("wait");
    assert_eq!(status.code(), Some(0));
    let next = wait_for("the other manager to lead", || async {
        holder(&url).await.filter(|h| h == other)
    })
    .await;
    assert_eq!(next, other);
    create_and_delete_namespace(&url, "second").await;
    wait_for("the second namespace to go", || async {
        (get(&url, "/api/v1/namespaces/second").await.0 == 404).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_manager_in_its_own_process_follows_the_servers_virtual_clock() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    let (_server, url) = serve_with(&kubeconfig, &["--virtual-clock=2030-01-01T00:00:00Z"]).await;
    let _manager = Command::new(BINARY)
        .arg("controller-manager")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--controllers", "cronjob", "--health-port", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the controller manager");
    let http = reqwest::Client::new();
    let created = http
        .post(format!("{url}/apis/batch/v1/namespaces/default/cronjobs"))
        .json(
            &json!({"metadata": {"name": "every-five"}, "spec": {"schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
        )
        .send()
        .await
        .expect("create");
    assert_eq!(created.status(), 201);
    let moved = http
        .patch(format!("{url}/apis/testing.kubemock.dev/v1/clocks/cluster"))
        .header("Content-Type", "application/merge-patch+json")
        .body(r#"{"spec":{"advance":"5m10s"}}"#)
        .send()
        .await
        .expect("advance");
    assert_eq!(moved.status(), 200);
    // 2030-01-01T00:05:00Z is minute 31557605 since the epoch.
    let job = "/apis/batch/v1/namespaces/default/jobs/every-five-31557605";
    let found = wait_for("the Job of 00:05", || async {
        let (code, job) = get(&url, job).await;
        (code == 200).then_some(job)
    })
    .await;
    assert_eq!(
        found["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"],
        "2030-01-01T00:05:00Z"
    );
}
