//! Issue 16 with the real kubectl binaries against `kubemock serve` on port 0: `auth can-i`
//! (also `--list`), `auth whoami`, `certificate approve`, `create token`, `get apiservices`,
//! `get componentstatuses`, `debug`, and `get clusterroles`, `describe clusterrole` and `get
//! clusterrolebinding` of the bootstrap RBAC policy with the machine's kubectl (its dispatcher runs the
//! bundled 1.32, matching the server's `/version`), and `apply`, `explain`, `get -w` and `auth
//! can-i` with every bundled minor from 1.27 to 1.33 (`/usr/lib/google-cloud-sdk/bin/
//! kubectl.1.NN`), one after the other in one test. Each run has a fresh `--cache-dir`: kubectl
//! caches discovery per host:port for hours.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common;
use common::{BINARY, WAIT};
/// Where the bundled kubectl binaries are (the machine's `kubectl` dispatches to them).
const BUNDLED: &str = "/usr/lib/google-cloud-sdk/bin";
/// The minors bundled, oldest first.
const MINORS: [u32; 7] = [27, 28, 29, 30, 31, 32, 33];

/// A running `kubemock serve`.
struct Cluster {
    _child: Child,
    dir: tempfile::TempDir,
}

impl Cluster {
    async fn start(args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        let mut child = Command::new(BINARY)
            .args(["serve", "--port", "0", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start kubemock");
        let url = common::ready_url(&mut child).await;
        assert!(url.starts_with("http"), "{url}");
        Cluster { _child: child, dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `binary` with this cluster's kubeconfig and a cache of its own (`cache`).
    fn command(&self, binary: &Path, cache: &str) -> Command {
        let mut command = Command::new(binary);
        command
            .arg("--kubeconfig")
            .arg(self.path("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.path(cache));
        command
    }

    /// Runs `binary ARGS` (stdin `input` when given); returns stdout, failing the test with
    /// stderr if it fails.
    async fn run(&self, binary: &Path, cache: &str, args: &[&str], input: Option<&str>) -> String {
        let mut command = self.command(binary, cache);
        command
            .args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("run kubectl");
        if let Some(input) = input {
            use tokio::io::AsyncWriteExt;
            let mut stdin = child.stdin.take().expect("stdin");
            stdin
                .write_all(input.as_bytes())
                .await
                .expect("write stdin");
        }
        let output = tokio::time::timeout(WAIT, child.wait_with_output())
            .await
            .expect("kubectl finished before the deadline")
            .expect("kubectl ran");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{} {args:?} failed: {stderr}",
            binary.display()
        );
        String::from_utf8(output.stdout).expect("utf-8 output")
    }

    /// [`Cluster::run`] until `done` holds for the output.
    async fn run_until(
        &self,
        binary: &Path,
        cache: &str,
        args: &[&str],
        done: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let out = self.run(binary, cache, args, None).await;
            if done(&out) {
                return out;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{args:?} never gave the awaited output; last: {out}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The machine's kubectl (the dispatcher).
fn kubectl() -> PathBuf {
    PathBuf::from("kubectl")
}

/// A PEM certificate request for `alice` in `developers`.
fn certificate_request() -> String {
    let key = rcgen::KeyPair::generate().expect("a key");
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "alice");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "developers");
    params
        .serialize_request(&key)
        .expect("a request")
        .pem()
        .expect("PEM")
}

#[tokio::test]
async fn kubectl_s16_auth_certificates_tokens_apiservices_componentstatuses_and_debug() {
    let cluster = Cluster::start(&[]).await;
    let k = kubectl();
    let run = |args: &'static [&'static str]| cluster.run(&k, "cache", args, None);

    assert_eq!(
        run(&["auth", "can-i", "create", "pods"]).await.trim(),
        "yes"
    );
    let list = run(&["auth", "can-i", "--list"]).await;
    assert!(
        list.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["*.*", "[]", "[]", "[*]"]),
        "{list}"
    );
    let whoami = run(&["auth", "whoami"]).await;
    assert!(
        whoami.contains("system:admin") && whoami.contains("system:masters"),
        "{whoami}"
    );

    run(&["create", "serviceaccount", "builder"]).await;
    let token = run(&["create", "token", "builder", "--duration", "20m"]).await;
    assert_eq!(token.trim().split('.').count(), 3, "a JWT: {token}");
    let review = format!(
        r#"{{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {{"token": "{}"}}}}"#,
        token.trim()
    );
    let reviewed = cluster
        .run(
            &k,
            "cache",
            &[
                "create",
                "-f",
                "-",
                "-o",
                "jsonpath={.status.authenticated} {.status.user.username}",
            ],
            Some(&review),
        )
        .await;
    assert_eq!(reviewed, "true system:serviceaccount:default:builder");

    let request = certificate_request();
    let csr = format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: alice\nspec:\n  request: {}\n  signerName: kubernetes.io/kube-apiserver-client\n  usages: [client auth]\n",
        base64(&request)
    );
    cluster
        .run(&k, "cache", &["apply", "-f", "-"], Some(&csr))
        .await;
    let approved = run(&["certificate", "approve", "alice"]).await;
    assert!(approved.contains("approved"), "{approved}");
    cluster
        .run_until(
            &k,
            "cache",
            &["get", "csr", "alice", "--no-headers"],
            |out| out.contains("Approved,Issued"),
        )
        .await;

    let apiservices = run(&["get", "apiservices", "--no-headers"]).await;
    assert!(
        apiservices.lines().any(|l| {
            l.split_whitespace().take(3).collect::<Vec<_>>() == ["v1.apps", "Local", "True"]
        }),
        "{apiservices}"
    );
    let statuses = run(&["get", "componentstatuses", "--no-headers"]).await;
    for component in ["controller-manager", "scheduler", "etcd-0"] {
        assert!(
            statuses.lines().any(|l| {
                l.split_whitespace().take(3).collect::<Vec<_>>() == [component, "Healthy", "ok"]
            }),
            "{component} in {statuses}"
        );
    }

    run(&["run", "web", "--image", "nginx:1.27"]).await;
    let debugged = cluster
        .run(
            &k,
            "cache",
            &[
                "debug",
                "web",
                "--image",
                "busybox:1.36",
                "--profile",
                "general",
            ],
            None,
        )
        .await;
    assert!(
        debugged.is_empty() || debugged.contains("debugger"),
        "{debugged}"
    );
    cluster
        .run_until(
            &k,
            "cache",
            &[
                "get",
                "pod",
                "web",
                "-o",
                "jsonpath={.status.ephemeralContainerStatuses[0].state.running.startedAt}",
            ],
            |out| !out.is_empty(),
        )
        .await;
}

fn base64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// `kubectl get configmaps -w` with `binary` until it prints `name` (created meanwhile).
async fn watch_sees(cluster: &Cluster, binary: &Path, cache: &str, name: &str) {
    let mut watch = cluster
        .command(binary, cache)
        .args(["get", "configmaps", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("run kubectl get -w");
    let mut lines = BufReader::new(watch.stdout.take().expect("stdout")).lines();
    // Created before or after the watch starts, it shows as ADDED either way.
    cluster
        .run(binary, cache, &["create", "configmap", name], None)
        .await;
    let seen = tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.expect("read kubectl") {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.first() == Some(&"ADDED") && fields.get(1) == Some(&name) {
                return true;
            }
        }
        false
    })
    .await
    .expect("kubectl printed the event before the deadline");
    assert!(seen, "{} get -w did not show {name}", binary.display());
}

#[tokio::test]
async fn kubectl_s16_every_bundled_minor_applies_explains_watches_and_can_i() {
    let cluster = Cluster::start(&["--no-controllers"]).await;
    for minor in MINORS {
        let binary = PathBuf::from(format!("{BUNDLED}/kubectl.1.{minor}"));
        assert!(binary.exists(), "{} is bundled", binary.display());
        let cache = format!("cache-1.{minor}");
        let name = format!("web-1-{minor}");
        // Client-side apply (1.27 and 1.28 read /openapi/v2 in protobuf first), twice.
        let manifest = format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n"
        );
        let created = cluster
            .run(&binary, &cache, &["apply", "-f", "-"], Some(&manifest))
            .await;
        assert!(created.contains("created"), "1.{minor}: {created}");
        let again = cluster
            .run(&binary, &cache, &["apply", "-f", "-"], Some(&manifest))
            .await;
        assert!(again.contains("unchanged"), "1.{minor}: {again}");
        let explained = cluster
            .run(
                &binary,
                &cache,
                &["explain", "deployment.spec.replicas"],
                None,
            )
            .await;
        assert!(
            explained.contains("KIND:") && explained.contains("Deployment"),
            "1.{minor}: {explained}"
        );
        let can = cluster
            .run(
                &binary,
                &cache,
                &["auth", "can-i", "delete", "deployments"],
                None,
            )
            .await;
        assert_eq!(can.trim(), "yes", "1.{minor}");
        watch_sees(&cluster, &binary, &cache, &format!("watched-1-{minor}")).await;
    }
}

#[tokio::test]
async fn kubectl_s16_bootstrap_rbac_roles_are_listed_and_view_is_aggregated() {
    let cluster = Cluster::start(&[]).await;
    let k = kubectl();
    let out = cluster
        .run(&k, "cache-rbac", &["get", "clusterroles"], None)
        .await;
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().expect("a header").split_whitespace().collect();
    assert_eq!(header, ["NAME", "CREATED", "AT"], "{out}");
    let names: Vec<&str> = lines.filter_map(|l| l.split_whitespace().next()).collect();
    // kube-apiserver 1.32's 31 cluster roles and 33 controller roles, and metrics-server's
    // reader (kubemock serves metrics.k8s.io: docs/metrics.md), nothing else.
    assert_eq!(names.len(), 65, "{out}");
    for name in [
        "system:aggregated-metrics-reader",
        "admin",
        "cluster-admin",
        "edit",
        "view",
        "system:aggregate-to-view",
        "system:basic-user",
        "system:discovery",
        "system:public-info-viewer",
        "system:kube-controller-manager",
        "system:kube-scheduler",
        "system:controller:clusterrole-aggregation-controller",
        "system:controller:generic-garbage-collector",
    ] {
        assert!(names.contains(&name), "{name} missing: {out}");
    }
    // view holds system:aggregate-to-view's rules once the aggregation controller ran.
    let out = cluster
        .run_until(
            &k,
            "cache-rbac",
            &["describe", "clusterrole", "view"],
            |out| out.lines().any(|l| l.trim_start().starts_with("pods ")),
        )
        .await;
    assert!(out.contains("Name:         view\n"), "{out}");
    assert!(
        out.contains("kubernetes.io/bootstrapping=rbac-defaults"),
        "{out}"
    );
    assert!(
        out.contains("rbac.authorization.k8s.io/aggregate-to-edit=true"),
        "{out}"
    );
    assert!(
        out.contains("rbac.authorization.kubernetes.io/autoupdate: true"),
        "{out}"
    );
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip_while(|l| !l.starts_with("PolicyRule:"))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows.first().map(Vec::as_slice),
        Some(
            [
                "Resources",
                "Non-Resource",
                "URLs",
                "Resource",
                "Names",
                "Verbs"
            ]
            .as_slice()
        ),
        "{out}"
    );
    for resource in ["pods", "deployments.apps", "jobs.batch", "configmaps"] {
        let row = rows
            .iter()
            .find(|r| r.first() == Some(&resource))
            .unwrap_or_else(|| panic!("no {resource} row: {out}"));
        assert_eq!(row[1..], ["[]", "[]", "[get", "list", "watch]"], "{out}");
    }
    assert!(
        !rows.iter().any(|r| r.first() == Some(&"secrets")),
        "view must not read secrets: {out}"
    );
    let out = cluster
        .run(
            &k,
            "cache-rbac",
            &["get", "clusterrolebinding", "cluster-admin", "-o", "wide"],
            None,
        )
        .await;
    let row: Vec<&str> = out
        .lines()
        .nth(1)
        .expect("a row")
        .split_whitespace()
        .collect();
    assert_eq!(row[0], "cluster-admin", "{out}");
    assert_eq!(row[1], "ClusterRole/cluster-admin", "{out}");
    assert!(row.contains(&"system:masters"), "{out}");
}
