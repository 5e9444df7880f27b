//! kubectl, really run against `kubemock serve` on port 0 (kubectl is preinstalled on the
//! project's machines; each test uses a fresh `--cache-dir`, since kubectl caches discovery
//! per host:port for hours).

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common;
use common::{BINARY, WAIT};

/// A running `kubemock serve` with a kubeconfig, and a kubectl runner for it.
struct Cluster {
    _child: Child,
    dir: tempfile::TempDir,
    url: String,
}

impl Cluster {
    /// `kubemock serve` with its controllers.
    async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// `kubemock serve ARGS...`.
    async fn start_with(args: &[&str]) -> Self {
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
        Cluster {
            _child: child,
            dir,
            url,
        }
    }

    /// A kubectl command with this cluster's kubeconfig and private cache.
    fn command(&self) -> Command {
        let mut command = Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(self.dir.path().join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"));
        command
    }

    /// Runs kubectl with this cluster's kubeconfig and a private cache; returns stdout, and
    /// fails the test (showing stderr) if kubectl fails.
    async fn kubectl(&self, args: &[&str]) -> String {
        let (ok, out, err) = common::kubectl(
            &self.dir.path().join("kubeconfig"),
            &self.dir.path().join("cache"),
            args,
        )
        .await;
        assert!(ok, "kubectl {args:?} failed: {err}");
        out
    }

    /// Runs kubectl until its output satisfies `done` (failing the test after [`WAIT`]);
    /// returns that output.
    async fn kubectl_until(&self, args: &[&str], done: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let out = self.kubectl(args).await;
            if done(&out) {
                return out;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "kubectl {args:?} never gave the awaited output; last: {out}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Reads `kubectl get -w --output-watch-events` lines until one shows `event` for `name`.
async fn expect_watch_line(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    event: &str,
    name: &str,
) {
    let seen = tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.expect("read kubectl") {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.first() == Some(&event) && fields.get(1) == Some(&name) {
                return true;
            }
        }
        false
    })
    .await
    .expect("kubectl printed the event before the deadline");
    assert!(seen, "kubectl get -w ended without printing {event} {name}");
}

#[tokio::test]
async fn kubectl_get_raw_version_and_version() {
    let cluster = Cluster::start().await;
    let raw = cluster.kubectl(&["get", "--raw", "/version"]).await;
    let version: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(version["minor"], "32");
    let out = cluster.kubectl(&["version"]).await;
    assert!(out.contains("Server Version: v1.32"), "{out}");
}

#[tokio::test]
async fn kubectl_api_versions_and_api_resources() {
    let cluster = Cluster::start().await;
    let versions = cluster.kubectl(&["api-versions"]).await;
    for expected in [
        "v1",
        "apps/v1",
        "batch/v1",
        "autoscaling/v2",
        "coordination.k8s.io/v1",
    ] {
        assert!(
            versions.lines().any(|l| l == expected),
            "{expected} in {versions}"
        );
    }
    let resources = cluster.kubectl(&["api-resources", "--no-headers"]).await;
    let row = |name: &str, group_version: &str| {
        resources
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name) && l.contains(group_version))
            .unwrap_or_else(|| panic!("{name} ({group_version}) missing:\n{resources}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        row("deployments", "apps/v1"),
        ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    );
    assert_eq!(
        row("namespaces", "v1"),
        ["namespaces", "ns", "v1", "false", "Namespace"]
    );
    assert_eq!(
        row("customresourcedefinitions", "apiextensions"),
        [
            "customresourcedefinitions",
            "crd,crds",
            "apiextensions.k8s.io/v1",
            "false",
            "CustomResourceDefinition"
        ]
    );
    // The legacy (non-aggregated) discovery path gives the same resources.
    let legacy = cluster
        .kubectl(&["api-resources", "--no-headers", "--api-group=apps"])
        .await;
    assert!(
        legacy.lines().any(|l| l.starts_with("replicasets")),
        "{legacy}"
    );
}

#[tokio::test]
async fn kubectl_get_watch_sees_an_object_created_meanwhile() {
    let cluster = Cluster::start().await;
    let mut watch = cluster
        .command()
        .args(["get", "pods", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("run kubectl get -w");
    let mut lines = BufReader::new(watch.stdout.take().expect("stdout")).lines();
    let created = reqwest::Client::new()
        .post(format!("{}/api/v1/namespaces/default/pods", cluster.url))
        .json(&serde_json::json!({
            "metadata": {"name": "hello"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}
        }))
        .send()
        .await
        .expect("create");
    assert_eq!(created.status(), 201);
    expect_watch_line(&mut lines, "ADDED", "hello").await;
}

#[tokio::test]
async fn kubectl_label_annotate_get_output_formats_and_delete() {
    let cluster = Cluster::start().await;
    let manifest = cluster.dir.path().join("cm.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c1\ndata:\n  greeting: hello\n",
    )
    .expect("write the manifest");
    let manifest = manifest.to_str().expect("a utf-8 path");
    let out = cluster
        .kubectl(&["create", "-f", manifest, "--validate=false"])
        .await;
    assert_eq!(out.trim(), "configmap/c1 created");
    // label and annotate send JSON merge patches (docs/api-behaviour.md#patch-types).
    let out = cluster
        .kubectl(&["label", "configmap", "c1", "tier=web"])
        .await;
    assert_eq!(out.trim(), "configmap/c1 labeled");
    let out = cluster
        .kubectl(&["annotate", "configmap", "c1", "note=first"])
        .await;
    assert_eq!(out.trim(), "configmap/c1 annotated");
    let out = cluster
        .kubectl(&["label", "configmap", "c1", "tier=db", "--overwrite"])
        .await;
    assert_eq!(out.trim(), "configmap/c1 labeled");
    let out = cluster
        .kubectl(&[
            "get",
            "configmap",
            "c1",
            "-o",
            "jsonpath={.metadata.labels.tier}/{.metadata.annotations.note}/{.data.greeting}",
        ])
        .await;
    assert_eq!(out, "db/first/hello");
    let yaml = cluster
        .kubectl(&["get", "configmap", "c1", "-o", "yaml"])
        .await;
    for expected in [
        "kind: ConfigMap",
        "name: c1",
        "tier: db",
        "greeting: hello",
        "resourceVersion:",
    ] {
        assert!(yaml.contains(expected), "{expected} in {yaml}");
    }
    let out = cluster
        .kubectl(&["label", "configmap", "c1", "tier-"])
        .await;
    assert_eq!(out.trim(), "configmap/c1 unlabeled");
    let labels = cluster
        .kubectl(&[
            "get",
            "configmap",
            "c1",
            "-o",
            "jsonpath={.metadata.labels}",
        ])
        .await;
    assert!(!labels.contains("tier"), "{labels}");
    // delete waits for the object to be gone (docs/api-behaviour.md#deletion, kubectl's GET-then-watch).
    let out = cluster.kubectl(&["delete", "configmap", "c1"]).await;
    assert_eq!(out.trim(), "configmap \"c1\" deleted");
    let output = cluster
        .command()
        .args(["get", "configmap", "c1"])
        .output()
        .await
        .expect("run kubectl");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("configmaps \"c1\" not found"), "{stderr}");
}

const MANIFESTS: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 25%, maxUnavailable: 0}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
        env: [{name: MODE, value: prod}]
        resources:
          requests: {cpu: 100m, memory: 64Mi}
          limits: {cpu: '1', memory: 128Mi}
        readinessProbe:
          httpGet: {path: /, port: http}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http, protocol: TCP}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  mode: prod
";

#[tokio::test]
async fn kubectl_apply_validates_through_openapi_and_get_deploy_lists_it() {
    let cluster = Cluster::start().await;
    let file = cluster.dir.path().join("web.yaml");
    std::fs::write(&file, MANIFESTS).expect("write the manifests");
    let file = file.to_str().expect("a utf-8 path");
    // Default --validate=strict: kubectl reads /openapi/v3, finds fieldValidation on the
    // kinds' PATCH operations and sends fieldValidation=Strict (docs/api-behaviour.md#openapi).
    let out = cluster.kubectl(&["apply", "-f", file]).await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "deployment.apps/web created",
            "service/web created",
            "configmap/web-config created"
        ]
    );
    let out = cluster.kubectl(&["get", "deploy"]).await;
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().next() == Some("web")),
        "{out}"
    );
    // Quantities are stored canonically, as upstream stores them, so the manifest writes them
    // canonically: an integer `cpu: 1` would make every later apply "configured", as it does
    // against a real cluster (kubernetes/kubernetes#66450).
    let out = cluster.kubectl(&["apply", "-f", file]).await;
    assert!(out.contains("deployment.apps/web unchanged"), "{out}");
    // Apply again with a new image, another replica count and the env var removed: kubectl
    // sends a strategic merge patch (docs/api-behaviour.md#strategic-merge-patch) and the stored object shows exactly those changes.
    std::fs::write(
        file,
        MANIFESTS
            .replace("image: nginx:1.27", "image: nginx:1.28")
            .replace("  replicas: 2", "  replicas: 4")
            .replace("        env: [{name: MODE, value: prod}]\n", ""),
    )
    .expect("write the changed manifests");
    let out = cluster.kubectl(&["apply", "-f", file]).await;
    assert!(out.contains("deployment.apps/web configured"), "{out}");
    assert!(out.contains("service/web unchanged"), "{out}");
    let deployment: serde_json::Value = serde_json::from_str(
        &cluster
            .kubectl(&["get", "deploy", "web", "-o", "json"])
            .await,
    )
    .expect("json");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1.28");
    assert!(container.get("env").is_none(), "{container}");
    assert_eq!(container["ports"][0]["containerPort"], 80);
    assert_eq!(deployment["spec"]["replicas"], 4);
    assert_eq!(deployment["metadata"]["generation"], 2);
    // kubectl patch defaults to a strategic merge patch.
    let out = cluster
        .kubectl(&[
            "patch",
            "deploy",
            "web",
            "-p",
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"X","value":"1"}]}]}}}}"#,
        ])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web patched");
    let env = cluster
        .kubectl(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].env[0].name}={.spec.template.spec.containers[0].image}",
        ])
        .await;
    assert_eq!(env, "X=nginx:1.28");
    let annotation = cluster
        .kubectl(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}",
        ])
        .await;
    assert!(annotation.contains("\"nginx:1.28\""), "{annotation}");
    // An unknown field is reported by the server, with its path.
    let bad = cluster.dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        MANIFESTS
            .split("---")
            .next()
            .expect("the Deployment")
            .replace("name: web\n  labels", "name: web2\n  labels")
            .replace("  replicas: 2", "  replicas: 2\n  replicaz: 3"),
    )
    .expect("write the manifest");
    let output = cluster
        .command()
        .arg("create")
        .arg("-f")
        .arg(&bad)
        .output()
        .await
        .expect("run kubectl");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("strict decoding error: unknown field \"spec.replicaz\""),
        "{stderr}"
    );
    // kubectl explain reads the component schemas.
    let out = cluster
        .kubectl(&["explain", "deployment.spec.replicas"])
        .await;
    assert!(out.contains("FIELD: replicas <integer>"), "{out}");
}

#[tokio::test]
async fn kubectl_create_namespace_configmap_and_deployment_send_protobuf() {
    // kubectl 1.32's typed clients send these bodies as application/vnd.kubernetes.protobuf
    // (docs/api-behaviour.md#content-types).
    let cluster = Cluster::start().await;
    assert_eq!(
        cluster.kubectl(&["create", "ns", "team-a"]).await.trim(),
        "namespace/team-a created"
    );
    let out = cluster
        .kubectl(&[
            "create",
            "configmap",
            "settings",
            "-n",
            "team-a",
            "--from-literal=mode=fast",
            "--from-literal=level=3",
        ])
        .await;
    assert_eq!(out.trim(), "configmap/settings created");
    let data = cluster
        .kubectl(&[
            "get",
            "cm",
            "settings",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.data}",
        ])
        .await;
    let data: serde_json::Value = serde_json::from_str(&data).expect("json");
    assert_eq!(data, serde_json::json!({"level": "3", "mode": "fast"}));
    let out = cluster
        .kubectl(&[
            "create",
            "deployment",
            "web",
            "-n",
            "team-a",
            "--image=nginx:1.27",
            "--replicas=0",
        ])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web created");
    let spec = cluster
        .kubectl(&[
            "get",
            "deploy",
            "web",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.spec.replicas}/{.spec.template.spec.containers[0].image}",
        ])
        .await;
    // replicas 0 survives the trip: a pointer's zero is kept.
    assert_eq!(spec, "0/nginx:1.27");
    let out = cluster.kubectl(&["get", "ns", "team-a"]).await;
    assert!(out.contains("team-a"), "{out}");
}

#[tokio::test]
async fn kubectl_get_prints_the_servers_table_columns() {
    let cluster = Cluster::start().await;
    let words = |line: &str| {
        line.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };

    // Without Table output kubectl would fall back to its own `NAME AGE`.
    let namespaces = cluster.kubectl(&["get", "ns"]).await;
    let mut lines = namespaces.lines();
    assert_eq!(
        words(lines.next().expect("a header")),
        ["NAME", "STATUS", "AGE"]
    );
    let default = lines
        .map(words)
        .find(|row| row[0] == "default")
        .unwrap_or_else(|| panic!("no default namespace in\n{namespaces}"));
    assert_eq!(default[1], "Active", "{namespaces}");

    let client = reqwest::Client::new();
    let pods = format!("{}/api/v1/namespaces/default/pods", cluster.url);
    let mut pod: serde_json::Value = client
        .post(&pods)
        .json(&serde_json::json!({
            "metadata": {"name": "web"},
            "spec": {"nodeName": "node-a", "containers": [{"name": "main", "image": "nginx"}]},
        }))
        .send()
        .await
        .expect("create a pod")
        .json()
        .await
        .expect("the created pod");
    pod["status"] = serde_json::json!({
        "phase": "Running",
        "podIP": "10.1.2.3",
        "containerStatuses": [{"name": "main", "image": "nginx", "imageID": "", "ready": true,
                               "restartCount": 0, "state": {"running": {}}}],
    });
    let updated = client
        .put(format!("{pods}/web/status"))
        .json(&pod)
        .send()
        .await
        .expect("update the pod's status");
    assert_eq!(updated.status(), 200);

    let out = cluster.kubectl(&["get", "pods"]).await;
    let lines: Vec<Vec<String>> = out.lines().map(words).collect();
    assert_eq!(
        lines[0],
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "{out}"
    );
    assert_eq!(lines[1][..4], ["web", "1/1", "Running", "0"], "{out}");

    let wide = cluster.kubectl(&["get", "pods", "-o", "wide"]).await;
    let header = wide.lines().next().expect("a header");
    assert!(
        header.contains("NOMINATED NODE") && header.contains("READINESS GATES"),
        "{wide}"
    );
    let row = words(wide.lines().nth(1).expect("a row"));
    assert_eq!(
        row[5..],
        ["10.1.2.3", "node-a", "<none>", "<none>"],
        "{wide}"
    );
}

#[tokio::test]
async fn kubectl_scale_and_delete_cascade_policies_leave_the_right_finalizers() {
    // Without controllers: the finalizers the API server sets stay for the test to see (a
    // garbage collector would remove them at once).
    let cluster = Cluster::start_with(&["--no-controllers"]).await;
    for name in ["orphaned", "foreground", "background"] {
        cluster
            .kubectl(&["create", "deployment", name, "--image=nginx"])
            .await;
    }
    // kubectl scale: a merge patch of /scale (docs/api-behaviour.md#scale-subresource).
    let out = cluster
        .kubectl(&["scale", "deploy", "orphaned", "--replicas=3"])
        .await;
    assert_eq!(out.trim(), "deployment.apps/orphaned scaled");
    let replicas = cluster
        .kubectl(&[
            "get",
            "deploy",
            "orphaned",
            "-o",
            "jsonpath={.spec.replicas}",
        ])
        .await;
    assert_eq!(replicas, "3");
    // docs/api-behaviour.md#propagation-policy: the policy becomes the garbage collector's finalizer on the owner (which stays
    // until a garbage collector removes it; --wait=false so kubectl does not wait for that).
    for (name, cascade, finalizers) in [
        ("orphaned", "orphan", r#"["orphan"]"#),
        ("foreground", "foreground", r#"["foregroundDeletion"]"#),
    ] {
        let flag = format!("--cascade={cascade}");
        cluster
            .kubectl(&["delete", "deploy", name, &flag, "--wait=false"])
            .await;
        let out = cluster
            .kubectl(&[
                "get",
                "deploy",
                name,
                "-o",
                "jsonpath={.metadata.finalizers}",
            ])
            .await;
        assert_eq!(out, finalizers, "{cascade}");
    }
    cluster
        .kubectl(&["delete", "deploy", "background", "--cascade=background"])
        .await;
    let output = cluster
        .command()
        .args(["get", "deploy", "background"])
        .output()
        .await
        .expect("run kubectl");
    assert!(!output.status.success(), "background deletes at once");
}

#[tokio::test]
async fn kubectl_server_side_apply_conflicts_between_managers_unless_forced() {
    let cluster = Cluster::start().await;
    let file = cluster.dir.path().join("web.yaml");
    std::fs::write(&file, MANIFESTS).expect("write the manifests");
    let file = file.to_str().expect("a utf-8 path");
    let out = cluster
        .kubectl(&["apply", "--server-side", "-f", file])
        .await;
    assert!(
        out.contains("deployment.apps/web serverside-applied"),
        "{out}"
    );
    assert!(out.contains("service/web serverside-applied"), "{out}");
    // Applying the same manifests again changes nothing kubectl owns. (Not compared: the
    // resourceVersion, which the deployment controller's status writes move meanwhile.)
    let owned = "jsonpath={.metadata.generation} {.spec} \
                 {.metadata.managedFields[?(@.manager==\"kubectl\")]}";
    let before = cluster
        .kubectl(&["get", "deploy", "web", "-o", owned])
        .await;
    assert!(before.contains(r#""manager":"kubectl""#), "{before}");
    cluster
        .kubectl(&["apply", "--server-side", "-f", file])
        .await;
    let after = cluster
        .kubectl(&["get", "deploy", "web", "-o", owned])
        .await;
    assert_eq!(before, after);

    // A second manager setting the replicas kubectl owns conflicts (docs/api-behaviour.md#server-side-apply)...
    let other = cluster.dir.path().join("other.yaml");
    std::fs::write(
        &other,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n",
    )
    .expect("write the manifest");
    let output = cluster
        .command()
        .args(["apply", "--server-side", "--field-manager=autoscaler", "-f"])
        .arg(&other)
        .output()
        .await
        .expect("run kubectl");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("conflict with \"kubectl\""), "{stderr}");
    assert!(stderr.contains(".spec.replicas"), "{stderr}");
    // ...and takes them over with --force-conflicts.
    let out = cluster
        .kubectl(&[
            "apply",
            "--server-side",
            "--field-manager=autoscaler",
            "--force-conflicts",
            "-f",
            other.to_str().expect("utf-8"),
        ])
        .await;
    assert!(out.contains("serverside-applied"), "{out}");
    let yaml = cluster
        .kubectl(&[
            "get",
            "deploy",
            "web",
            "-o",
            "yaml",
            "--show-managed-fields",
        ])
        .await;
    assert!(yaml.contains("replicas: 5"), "{yaml}");
    assert!(yaml.contains("manager: autoscaler"), "{yaml}");
    assert!(yaml.contains("operation: Apply"), "{yaml}");
    // Now kubectl's own manifest conflicts on the replicas it lost.
    let output = cluster
        .command()
        .args(["apply", "--server-side", "-f", file])
        .output()
        .await
        .expect("run kubectl");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("conflict with \"autoscaler\""), "{stderr}");
    // kubectl explain of a whole struct.
    let out = cluster.kubectl(&["explain", "deployment.spec"]).await;
    assert!(out.contains("FIELD: spec <DeploymentSpec>"), "{out}");
    assert!(out.contains("replicas\t<integer>"), "{out}");
}

const WIDGET_CRD: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [color]
            properties:
              size: {type: integer, default: 1}
              color: {type: string, enum: [red, blue]}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Color, type: string, jsonPath: .spec.color}
";

#[tokio::test]
async fn kubectl_applies_a_crd_and_manages_its_custom_objects() {
    let cluster = Cluster::start().await;
    let dir = cluster.dir.path();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write a manifest");
        path.to_str().expect("utf-8").to_owned()
    };
    let crd = write("crd.yaml", WIDGET_CRD);
    let out = cluster.kubectl(&["apply", "-f", &crd]).await;
    assert!(
        out.contains("customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"),
        "{out}"
    );
    cluster
        .kubectl(&[
            "wait",
            "--for",
            "condition=established",
            "crd/widgets.example.com",
            "--timeout=30s",
        ])
        .await;

    // Watch the widgets while they are created.
    let mut watch = cluster
        .command()
        .args(["get", "widgets", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("run kubectl get -w");
    let mut lines = BufReader::new(watch.stdout.take().expect("stdout")).lines();

    let widget = write(
        "w1.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {color: red}\n",
    );
    let out = cluster.kubectl(&["apply", "-f", &widget]).await;
    assert!(out.contains("widget.example.com/w1 created"), "{out}");
    expect_watch_line(&mut lines, "ADDED", "w1").await;

    // Printed with the printer columns, the schema default applied.
    let out = cluster.kubectl(&["get", "wd"]).await;
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["NAME", "SIZE", "COLOR"], "{out}");
    assert_eq!(rows[1], ["w1", "1", "red"], "{out}");

    // An invalid object is rejected with a readable error.
    let bad = write(
        "bad.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2}\nspec: {color: green}\n",
    );
    let output = cluster
        .command()
        .args(["apply", "-f", &bad])
        .output()
        .await
        .expect("run kubectl");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\""
        ),
        "{stderr}"
    );

    // kubectl explain reads the custom kind's schema.
    let out = cluster.kubectl(&["explain", "widgets.spec"]).await;
    assert!(out.contains("color"), "{out}");

    let out = cluster.kubectl(&["delete", "widget", "w1"]).await;
    assert!(out.contains("widget.example.com \"w1\" deleted"), "{out}");
    let out = cluster.kubectl(&["delete", "-f", &crd]).await;
    assert!(out.contains("deleted"), "{out}");
}

#[tokio::test]
async fn kubectl_patch_types_json_merge_and_strategic() {
    let cluster = Cluster::start().await;
    cluster
        .kubectl(&["create", "deployment", "web", "--image=nginx:1.27"])
        .await;
    let merge = cluster
        .kubectl(&[
            "patch",
            "deploy",
            "web",
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"labels":{"tier":"front"}},"spec":{"replicas":3}}"#,
        ])
        .await;
    assert_eq!(merge.trim(), "deployment.apps/web patched");
    let json = cluster
        .kubectl(&[
            "patch",
            "deploy",
            "web",
            "--type",
            "json",
            "-p",
            r#"[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.28"}]"#,
        ])
        .await;
    assert_eq!(json.trim(), "deployment.apps/web patched");
    // Strategic: the env list merges into the container named "nginx" by name.
    let strategic = cluster
        .kubectl(&[
            "patch",
            "deploy",
            "web",
            "--type",
            "strategic",
            "-p",
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","env":[{"name":"A","value":"1"}]}]}}}}"#,
        ])
        .await;
    assert_eq!(strategic.trim(), "deployment.apps/web patched");
    let out = cluster
        .kubectl(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.metadata.labels.tier} {.spec.replicas} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].env[0].name}",
        ])
        .await;
    assert_eq!(out, "front 3 nginx:1.28 A");
    // A failing JSON patch test operation is refused.
    let output = cluster
        .command()
        .args([
            "patch",
            "deploy",
            "web",
            "--type",
            "json",
            "-p",
            r#"[{"op":"test","path":"/spec/replicas","value":7}]"#,
        ])
        .output()
        .await
        .expect("run kubectl");
    assert!(!output.status.success());
    // Every write was recorded for its manager (kubectl create, then kubectl patch).
    let managers = cluster
        .kubectl(&[
            "get",
            "deploy",
            "web",
            "--show-managed-fields",
            "-o",
            "jsonpath={.metadata.managedFields[*].manager}",
        ])
        .await;
    assert!(managers.contains("kubectl-create"), "{managers}");
    assert!(managers.contains("kubectl-patch"), "{managers}");
}

#[tokio::test]
async fn kubectl_run_create_deployment_and_expose_show_the_servers_defaults() {
    // Without controllers: the objects as the API server stores them (a kubelet would run the
    // pod to completion at once).
    let cluster = Cluster::start_with(&["--no-controllers"]).await;
    let out = cluster
        .kubectl(&[
            "run",
            "box",
            "--image=busybox:1.36",
            "--restart=Never",
            "--",
            "sleep",
            "60",
        ])
        .await;
    assert_eq!(out.trim(), "pod/box created");
    let pod = cluster
        .kubectl(&[
            "get",
            "pod",
            "box",
            "-o",
            "jsonpath={.spec.restartPolicy}/{.spec.dnsPolicy}/{.spec.serviceAccountName}/{.spec.containers[0].imagePullPolicy}/{.status.phase}/{.status.qosClass}",
        ])
        .await;
    assert_eq!(
        pod,
        "Never/ClusterFirst/default/IfNotPresent/Pending/BestEffort"
    );
    let out = cluster
        .kubectl(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
        ])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web created");
    let deployment = cluster
        .kubectl(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.strategy.type}/{.spec.strategy.rollingUpdate.maxSurge}/{.spec.revisionHistoryLimit}/{.spec.progressDeadlineSeconds}/{.spec.template.spec.containers[0].imagePullPolicy}",
        ])
        .await;
    assert_eq!(deployment, "RollingUpdate/25%/10/600/Always");
    let out = cluster
        .kubectl(&[
            "expose",
            "deployment",
            "web",
            "--port=80",
            "--target-port=8080",
        ])
        .await;
    assert_eq!(out.trim(), "service/web exposed");
    let out = cluster
        .kubectl(&["expose", "pod", "box", "--port=90", "--type=NodePort"])
        .await;
    assert_eq!(out.trim(), "service/box exposed");
    let table = cluster
        .kubectl(&["get", "svc", "--no-headers", "-o", "wide"])
        .await;
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing:\n{table}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    let web = row("web");
    assert_eq!(web[1], "ClusterIP");
    let ip: std::net::Ipv4Addr = web[2].parse().expect("a cluster IP");
    assert_eq!(ip.octets()[0], 10);
    assert_eq!(ip.octets()[1] & 0xf0, 96, "{ip} in 10.96.0.0/12");
    assert_eq!(web[4], "80/TCP");
    assert_eq!(web[6], "app=web");
    let bx = row("box");
    assert_eq!(bx[1], "NodePort");
    let (port, node_port) = bx[4]
        .trim_end_matches("/TCP")
        .split_once(':')
        .expect("port:nodePort");
    assert_eq!(port, "90");
    let node_port: u16 = node_port.parse().expect("a node port");
    assert!((30000..=32767).contains(&node_port), "{node_port}");
    let target = cluster
        .kubectl(&[
            "get",
            "svc",
            "web",
            "-o",
            "jsonpath={.spec.ports[0].targetPort}",
        ])
        .await;
    assert_eq!(target, "8080");
    assert_eq!(row("kubernetes")[2], "10.96.0.1");
}

#[tokio::test]
async fn kubectl_delete_namespace_and_cascading_deletes_complete_with_the_controllers() {
    let cluster = Cluster::start().await;
    cluster.kubectl(&["create", "namespace", "team"]).await;
    cluster
        .kubectl(&[
            "create",
            "configmap",
            "settings",
            "-n",
            "team",
            "--from-literal=a=1",
        ])
        .await;
    cluster
        .kubectl(&["create", "deployment", "web", "-n", "team", "--image=nginx"])
        .await;
    // kubectl waits for the namespace to go: the namespace controller empties it and
    // finalizes it (docs/api-behaviour.md#namespace-deletion).
    let out = cluster
        .kubectl(&["delete", "namespace", "team", "--timeout=50s"])
        .await;
    assert_eq!(out.trim(), "namespace \"team\" deleted");
    let output = cluster
        .command()
        .args(["get", "namespace", "team"])
        .output()
        .await
        .expect("run kubectl");
    assert!(!output.status.success(), "the namespace is gone");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("NotFound"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // Foreground and orphan deletions complete too: the garbage collector removes the
    // finalizers kubectl's policy put there (kubectl waits for the object to go).
    for (name, cascade) in [("fg", "foreground"), ("orph", "orphan")] {
        cluster
            .kubectl(&["create", "deployment", name, "--image=nginx"])
            .await;
        let flag = format!("--cascade={cascade}");
        let out = cluster
            .kubectl(&["delete", "deployment", name, &flag, "--timeout=50s"])
            .await;
        assert_eq!(out.trim(), format!("deployment.apps \"{name}\" deleted"));
    }
    let out = cluster.kubectl(&["get", "deployments", "-o", "name"]).await;
    assert_eq!(out.trim(), "");
}

#[tokio::test]
async fn kubectl_deployment_rollout_scale_undo_describe_and_delete_with_the_controllers() {
    let cluster = Cluster::start().await;
    let out = cluster
        .kubectl(&[
            "create",
            "deployment",
            "web",
            "--image=nginx:1.27",
            "--replicas=3",
        ])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web created");
    let rollout = ["rollout", "status", "deployment/web", "--timeout=50s"];
    let out = cluster.kubectl(&rollout).await;
    assert!(
        out.contains("deployment \"web\" successfully rolled out"),
        "{out}"
    );
    let out = cluster
        .kubectl(&[
            "wait",
            "--for=condition=Available",
            "deployment/web",
            "--timeout=50s",
        ])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web condition met");
    let phases = r#"{range .items[*]}{.status.phase} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}"#;
    let out = cluster
        .kubectl(&[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            &format!("jsonpath={phases}"),
        ])
        .await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        vec!["Running True"; 3],
        "{out}"
    );
    let out = cluster.kubectl(&["get", "pods", "-l", "app=web"]).await;
    assert!(out.contains("1/1     Running"), "{out}");

    let out = cluster
        .kubectl(&["set", "image", "deployment/web", "nginx=nginx:1.28"])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web image updated");
    let out = cluster.kubectl(&rollout).await;
    assert!(out.contains("successfully rolled out"), "{out}");
    let out = cluster
        .kubectl(&["rollout", "undo", "deployment/web"])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web rolled back");
    cluster.kubectl(&rollout).await;
    let image = "jsonpath={.spec.template.spec.containers[0].image}";
    assert_eq!(
        cluster
            .kubectl(&["get", "deploy", "web", "-o", image])
            .await,
        "nginx:1.27"
    );
    let out = cluster
        .kubectl(&["rollout", "history", "deployment/web"])
        .await;
    assert!(out.contains('2') && out.contains('3'), "{out}");

    let out = cluster
        .kubectl(&["scale", "deployment", "web", "--replicas=5"])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web scaled");
    cluster.kubectl(&rollout).await;
    let out = cluster
        .kubectl(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.status.readyReplicas}",
        ])
        .await;
    assert_eq!(out, "5");
    let out = cluster.kubectl(&["describe", "deployment", "web"]).await;
    assert!(out.contains("ScalingReplicaSet"), "{out}");
    assert!(out.contains("Scaled up replica set web-"), "{out}");

    // Background deletion: the garbage collector removes the ReplicaSets and their pods.
    cluster.kubectl(&["delete", "deployment", "web"]).await;
    cluster
        .kubectl_until(
            &["get", "pods,replicasets", "-l", "app=web", "-o", "name"],
            |out| out.trim().is_empty(),
        )
        .await;
}

#[tokio::test]
async fn kubectl_expose_gives_a_service_endpoints_of_its_ready_pods() {
    let cluster = Cluster::start().await;
    cluster
        .kubectl(&[
            "create",
            "deployment",
            "web",
            "--image=nginx:1.27",
            "--replicas=2",
            "--port=8080",
        ])
        .await;
    let out = cluster
        .kubectl(&[
            "expose",
            "deployment",
            "web",
            "--port=80",
            "--target-port=8080",
        ])
        .await;
    assert_eq!(out.trim(), "service/web exposed");
    cluster
        .kubectl(&["rollout", "status", "deployment/web", "--timeout=50s"])
        .await;
    let ips = cluster
        .kubectl(&[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            "jsonpath={.items[*].status.podIP}",
        ])
        .await;
    let mut expected: Vec<String> = ips
        .split_whitespace()
        .map(|ip| format!("{ip}:8080"))
        .collect();
    expected.sort();
    assert_eq!(expected.len(), 2, "{ips}");
    cluster
        .kubectl_until(
            &[
                "get",
                "endpoints",
                "web",
                "-o",
                "jsonpath={.subsets[*].addresses[*].ip}",
            ],
            |out| {
                let mut listed: Vec<String> = out
                    .split_whitespace()
                    .map(|ip| format!("{ip}:8080"))
                    .collect();
                listed.sort();
                listed == expected
            },
        )
        .await;
    let ports = cluster
        .kubectl(&[
            "get",
            "endpoints",
            "web",
            "-o",
            "jsonpath={.subsets[*].ports[*].port}",
        ])
        .await;
    assert_eq!(ports.trim(), "8080");
    // `describe service` reads the EndpointSlices.
    let out = cluster
        .kubectl_until(&["describe", "service", "web"], |out| {
            expected.iter().all(|e| out.contains(e.as_str()))
        })
        .await;
    assert!(out.contains("Endpoints:"), "{out}");
    let out = cluster
        .kubectl(&[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=web",
            "-o",
            "jsonpath={.items[*].addressType} {.items[*].ports[*].port}",
        ])
        .await;
    assert_eq!(out, "IPv4 8080");
}

/// A headless service and a StatefulSet of three for it.
const STATEFULSET: &str = r#"apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: None
  selector:
    app: web
  ports:
  - port: 80
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
"#;

#[tokio::test]
async fn kubectl_applies_a_statefulset_and_its_rollout_completes_with_the_controllers() {
    let cluster = Cluster::start().await;
    let file = cluster.dir.path().join("web.yaml");
    std::fs::write(&file, STATEFULSET).expect("write the manifests");
    let file = file.to_str().expect("a utf-8 path");
    let out = cluster.kubectl(&["apply", "-f", file]).await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["service/web created", "statefulset.apps/web created"]
    );
    let rollout = ["rollout", "status", "statefulset/web", "--timeout=50s"];
    let out = cluster.kubectl(&rollout).await;
    assert!(
        out.contains("partitioned roll out complete: 3 new pods have been updated"),
        "{out}"
    );
    let out = cluster
        .kubectl(&["get", "pods", "-l", "app=web", "-o", "name"])
        .await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["pod/web-0", "pod/web-1", "pod/web-2"]
    );
    let out = cluster.kubectl(&["get", "pods", "-l", "app=web"]).await;
    assert_eq!(out.matches("1/1     Running").count(), 3, "{out}");

    // A new image rolls through; the history has both revisions.
    let out = cluster
        .kubectl(&["set", "image", "statefulset/web", "nginx=nginx:1.28"])
        .await;
    assert_eq!(out.trim(), "statefulset.apps/web image updated");
    cluster.kubectl(&rollout).await;
    let images = r#"{range .items[*]}{.spec.containers[0].image}{"\n"}{end}"#;
    let out = cluster
        .kubectl(&[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            &format!("jsonpath={images}"),
        ])
        .await;
    assert_eq!(out.lines().collect::<Vec<_>>(), vec!["nginx:1.28"; 3]);
    let out = cluster
        .kubectl(&["rollout", "history", "statefulset/web"])
        .await;
    assert!(out.contains('1') && out.contains('2'), "{out}");

    // Undo patches the template back from revision 1; the controller renumbers that
    // revision 3 and rolls the pods back.
    let out = cluster
        .kubectl(&["rollout", "undo", "statefulset/web"])
        .await;
    assert_eq!(out.trim(), "statefulset.apps/web rolled back");
    cluster.kubectl(&rollout).await;
    let out = cluster
        .kubectl(&[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            &format!("jsonpath={images}"),
        ])
        .await;
    assert_eq!(out.lines().collect::<Vec<_>>(), vec!["nginx:1.27"; 3]);
    let out = cluster
        .kubectl(&[
            "get",
            "controllerrevisions",
            "-o",
            "jsonpath={.items[*].revision}",
        ])
        .await;
    let mut numbers: Vec<&str> = out.split_whitespace().collect();
    numbers.sort_unstable();
    assert_eq!(numbers, ["2", "3"], "{out}");
    let status = "jsonpath={.status.readyReplicas} {.status.updatedReplicas} {.status.currentRevision} {.status.updateRevision}";
    let out = cluster
        .kubectl(&["get", "statefulset", "web", "-o", status])
        .await;
    let fields: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(fields[..2], ["3", "3"], "{out}");
    assert_eq!(
        fields[2], fields[3],
        "the update revision is current: {out}"
    );
    let out = cluster.kubectl(&["get", "statefulset", "web"]).await;
    let row: Vec<&str> = out
        .lines()
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(row.get(..2), Some(&["web", "3/3"][..]), "{out}");
}

const DAEMONSET: &str = "\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: fluentd:1.16
";

#[tokio::test]
async fn kubectl_daemonset_rollout_status_history_undo_and_a_pod_on_every_node() {
    let cluster = Cluster::start_with(&["--nodes", "4"]).await;
    let file = cluster.dir.path().join("agent.yaml");
    std::fs::write(&file, DAEMONSET).expect("write the manifest");
    let file = file.to_str().expect("a utf-8 path");
    let out = cluster.kubectl(&["apply", "-f", file]).await;
    assert_eq!(out.trim(), "daemonset.apps/agent created");
    // kubectl's DaemonSetStatusViewer: observedGeneration, then updated and available
    // against desiredNumberScheduled.
    let rollout = ["rollout", "status", "daemonset/agent", "--timeout=50s"];
    let out = cluster.kubectl(&rollout).await;
    assert!(
        out.contains("daemon set \"agent\" successfully rolled out"),
        "{out}"
    );
    let nodes = cluster
        .kubectl(&["get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"])
        .await;
    let mut nodes: Vec<&str> = nodes.split_whitespace().collect();
    nodes.sort_unstable();
    assert_eq!(nodes.len(), 4, "{nodes:?}");
    let placement = r#"{range .items[*]}{.spec.nodeName} {.status.phase}{"\n"}{end}"#;
    let pods_by_node = || async {
        let out = cluster
            .kubectl(&[
                "get",
                "pods",
                "-l",
                "app=agent",
                "-o",
                &format!("jsonpath={placement}"),
            ])
            .await;
        let mut lines: Vec<String> = out.lines().map(str::to_owned).collect();
        lines.sort_unstable();
        lines
    };
    let every_node: Vec<String> = nodes.iter().map(|n| format!("{n} Running")).collect();
    assert_eq!(pods_by_node().await, every_node);
    let counts = "jsonpath={.status.desiredNumberScheduled} {.status.currentNumberScheduled} \
        {.status.numberReady} {.status.updatedNumberScheduled} {.status.numberAvailable}";
    let out = cluster
        .kubectl(&["get", "daemonset", "agent", "-o", counts])
        .await;
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        vec!["4"; 5],
        "{out}"
    );

    let out = cluster
        .kubectl(&["set", "image", "daemonset/agent", "agent=fluentd:1.17"])
        .await;
    assert_eq!(out.trim(), "daemonset.apps/agent image updated");
    let out = cluster.kubectl(&rollout).await;
    assert!(out.contains("successfully rolled out"), "{out}");
    let images = cluster
        .kubectl(&[
            "get",
            "pods",
            "-l",
            "app=agent",
            "-o",
            "jsonpath={.items[*].spec.containers[0].image}",
        ])
        .await;
    let images: Vec<&str> = images.split_whitespace().collect();
    assert_eq!(images, vec!["fluentd:1.17"; 4], "terminated pods are gone");
    assert_eq!(pods_by_node().await, every_node);
    // The history is the DaemonSet's ControllerRevisions.
    let out = cluster
        .kubectl(&["rollout", "history", "daemonset/agent"])
        .await;
    assert_eq!(history_revisions(&out), vec!["1", "2"], "{out}");
    // Undo patches the template back from revision 1, which becomes revision 3.
    let out = cluster
        .kubectl(&["rollout", "undo", "daemonset/agent"])
        .await;
    assert_eq!(out.trim(), "daemonset.apps/agent rolled back");
    cluster.kubectl(&rollout).await;
    let images = cluster
        .kubectl(&[
            "get",
            "pods",
            "-l",
            "app=agent",
            "-o",
            "jsonpath={.items[*].spec.containers[0].image}",
        ])
        .await;
    assert_eq!(
        images.split_whitespace().collect::<Vec<_>>(),
        vec!["fluentd:1.16"; 4]
    );
    let out = cluster
        .kubectl(&["rollout", "history", "daemonset/agent"])
        .await;
    assert_eq!(history_revisions(&out), vec!["2", "3"], "{out}");
}

/// The revision numbers of `kubectl rollout history` output.
fn history_revisions(out: &str) -> Vec<&str> {
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
        .collect()
}

/// `kubectl drain` as on a real cluster: the node is cordoned, evictions go through
/// `pods/eviction`, a PodDisruptionBudget the disruption controller keeps blocks them with
/// upstream's message, and once the budget allows it the pods are evicted, replaced on the
/// other node, and the drain completes.
#[tokio::test]
async fn kubectl_drain_is_blocked_by_a_disruption_budget_then_completes() {
    let cluster = Cluster::start_with(&["--nodes", "2"]).await;
    cluster
        .kubectl(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
        ])
        .await;
    cluster
        .kubectl_until(
            &[
                "get",
                "deployment",
                "web",
                "-o=jsonpath={.status.availableReplicas}",
            ],
            |out| out == "2",
        )
        .await;
    cluster
        .kubectl(&[
            "create",
            "poddisruptionbudget",
            "web",
            "--selector=app=web",
            "--min-available=2",
        ])
        .await;
    cluster
        .kubectl_until(
            &[
                "get",
                "pdb",
                "web",
                "-o=jsonpath={.status.observedGeneration} {.status.currentHealthy} {.status.disruptionsAllowed}",
            ],
            |out| out == "1 2 0",
        )
        .await;
    let node = cluster
        .kubectl(&[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o=jsonpath={.items[0].spec.nodeName}",
        ])
        .await;
    let (ok, _, err) = common::kubectl(
        &cluster.dir.path().join("kubeconfig"),
        &cluster.dir.path().join("cache"),
        &["drain", &node, "--ignore-daemonsets", "--timeout=3s"],
    )
    .await;
    assert!(!ok, "the budget blocks the drain");
    assert!(
        err.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{err}"
    );
    let cordoned = cluster
        .kubectl(&["get", "node", &node, "-o=jsonpath={.spec.unschedulable}"])
        .await;
    assert_eq!(cordoned, "true");

    cluster
        .kubectl(&[
            "patch",
            "pdb",
            "web",
            "--type=merge",
            "-p",
            r#"{"spec":{"minAvailable":1}}"#,
        ])
        .await;
    let out = cluster
        .kubectl(&["drain", &node, "--ignore-daemonsets", "--timeout=60s"])
        .await;
    assert!(out.contains(&format!("node/{node} drained")), "{out}");
    // The Deployment's pods run on the other node now.
    cluster
        .kubectl_until(
            &[
                "get",
                "pods",
                "-l",
                "app=web",
                "--field-selector=status.phase=Running",
                "-o=jsonpath={range .items[*]}{.spec.nodeName} {end}",
            ],
            |out| {
                let nodes: Vec<&str> = out.split_whitespace().collect();
                nodes.len() == 2 && nodes.iter().all(|n| *n != node)
            },
        )
        .await;
}

/// `kubectl logs` of a simulated container: its `kubemock.dev/log` lines, and `-f` streaming
/// until the pod is deleted.
#[tokio::test]
async fn kubectl_logs_and_follow_end_with_the_pod() {
    let cluster = Cluster::start_with(&["--nodes", "1"]).await;
    cluster
        .kubectl(&[
            "run",
            "p",
            "--image=nginx",
            "--annotations=kubemock.dev/log=hello",
        ])
        .await;
    cluster
        .kubectl_until(&["get", "pod", "p", "-o=jsonpath={.status.phase}"], |out| {
            out == "Running"
        })
        .await;
    assert_eq!(cluster.kubectl(&["logs", "p"]).await, "hello\n");
    let follow = cluster
        .command()
        .args(["logs", "-f", "p"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl logs -f");
    let mut lines = BufReader::new(follow.stdout.expect("stdout")).lines();
    let first = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("a line before the deadline")
        .expect("read")
        .expect("a line");
    assert_eq!(first, "hello");
    cluster
        .kubectl(&["delete", "pod", "p", "--wait=false"])
        .await;
    let end = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("the stream ends with the pod")
        .expect("read");
    assert_eq!(end, None);
}

/// kubectl 1.27, which speaks SPDY for exec, attach and port-forward (the bundled kubectls
/// are preinstalled on the project's machines; `kubectl` on PATH is 1.32, which speaks
/// WebSocket `v5.channel.k8s.io` and tunnels port-forward's SPDY in WebSocket).
const KUBECTL_SPDY: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.27";

impl Cluster {
    /// Runs `binary` (a kubectl) with this cluster's kubeconfig, a private cache and `stdin`;
    /// returns (exit code, stdout, stderr).
    async fn run_kubectl(
        &self,
        binary: &str,
        args: &[&str],
        stdin: &[u8],
    ) -> (i32, String, String) {
        use tokio::io::AsyncWriteExt as _;
        let mut child = Command::new(binary)
            .arg("--kubeconfig")
            .arg(self.dir.path().join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.path().join(format!("cache-{}", binary.len())))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("run kubectl (preinstalled on the project's machines)");
        let mut input = child.stdin.take().expect("stdin");
        input.write_all(stdin).await.expect("write stdin");
        drop(input);
        let out = tokio::time::timeout(WAIT, child.wait_with_output())
            .await
            .expect("kubectl finished before the deadline")
            .expect("kubectl output");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// `kubectl exec` into a simulated container over both protocols (docs/pod-io.md): the
/// built-ins' output and exit codes, stdin, the container's env and mounted ConfigMap and
/// Secret files, an unknown program (127 and a message), and upstream's refusal of a
/// container the pod does not have.
#[tokio::test]
async fn kubectl_exec_runs_builtins_with_exit_codes_over_websocket_and_spdy() {
    let cluster = Cluster::start_with(&["--nodes", "1"]).await;
    let manifest = cluster.dir.path().join("pod.yaml");
    std::fs::write(
        &manifest,
        r#"apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {greeting: "hello from a ConfigMap"}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: web, annotations: {kubemock.dev/log: "attached line"}}
spec:
  containers:
  - name: app
    image: nginx
    env:
    - {name: MODE, value: prod}
    - name: PASSWORD
      valueFrom: {secretKeyRef: {name: sec, key: password}}
    volumeMounts:
    - {name: config, mountPath: /etc/config}
  volumes:
  - name: config
    configMap: {name: cfg}
"#,
    )
    .expect("write manifest");
    cluster
        .kubectl(&["apply", "-f", manifest.to_str().expect("utf-8 path")])
        .await;
    cluster
        .kubectl_until(
            &["get", "pod", "web", "-o=jsonpath={.status.phase}"],
            |out| out == "Running",
        )
        .await;
    let big = "0123456789abcdef\n".repeat(1 << 18);
    for binary in ["kubectl", KUBECTL_SPDY] {
        let run = |args: &'static [&'static str], stdin: &'static [u8]| {
            cluster.run_kubectl(binary, args, stdin)
        };
        assert_eq!(
            run(&["exec", "web", "--", "echo", "hi"], b"").await,
            (0, "hi\n".to_owned(), String::new()),
            "{binary}"
        );
        let (code, _, err) = run(&["exec", "web", "--", "false"], b"").await;
        assert_eq!(code, 1, "{binary}: {err}");
        assert!(
            err.contains("command terminated with exit code 1"),
            "{binary}: {err}"
        );
        assert_eq!(
            run(&["exec", "-i", "web", "--", "cat"], b"line 1\nline 2\n").await,
            (0, "line 1\nline 2\n".to_owned(), String::new()),
            "{binary}"
        );
        // More stdin than the session's queues hold, echoed back while it is still sent: the
        // session must keep forwarding output while the program waits to write it.
        let (code, out, err) = cluster
            .run_kubectl(binary, &["exec", "-i", "web", "--", "cat"], big.as_bytes())
            .await;
        assert_eq!(code, 0, "{binary}: {err}");
        assert!(
            out == big,
            "{binary}: {} of {} bytes back",
            out.len(),
            big.len()
        );
        let (code, out, _) = run(
            &[
                "exec",
                "web",
                "--",
                "sh",
                "-c",
                "cat /etc/config/greeting; echo; echo $MODE $PASSWORD; hostname; exit 3",
            ],
            b"",
        )
        .await;
        assert_eq!(
            (code, out.as_str()),
            (3, "hello from a ConfigMap\nprod s3cret\nweb\n"),
            "{binary}"
        );
        let (code, _, err) = run(&["exec", "web", "--", "nginx", "-s", "reload"], b"").await;
        assert_eq!(code, 127, "{binary}: {err}");
        assert!(
            err.contains("kubemock: container app runs no program nginx; built-ins are cat, echo,"),
            "{binary}: {err}"
        );
        let (code, _, err) = run(&["exec", "web", "-c", "nope", "--", "true"], b"").await;
        assert_eq!(code, 1, "{binary}");
        assert!(
            err.contains("container nope is not valid for pod web"),
            "{binary}: {err}"
        );
    }
    // A container that does not run (its pod waits for a node no kubelet serves): the
    // kubelet's refusal, as kubectl shows it.
    cluster
        .kubectl(&[
            "run",
            "stuck",
            "--image=nginx",
            r#"--overrides={"spec":{"nodeName":"no-such-node"}}"#,
        ])
        .await;
    for binary in ["kubectl", KUBECTL_SPDY] {
        let (code, _, err) = cluster
            .run_kubectl(binary, &["exec", "stuck", "--", "true"], b"")
            .await;
        assert_eq!(code, 1, "{binary}");
        assert!(
            err.contains(r#"error: unable to upgrade connection: container not found ("stuck")"#),
            "{binary}: {err}"
        );
    }
    // attach: the container's simulated output, then the session holds until the container
    // ends (here, with its pod).
    let mut attached = Vec::new();
    for binary in ["kubectl", KUBECTL_SPDY] {
        let mut child = Command::new(binary)
            .arg("--kubeconfig")
            .arg(cluster.dir.path().join("kubeconfig"))
            .arg("--cache-dir")
            .arg(cluster.dir.path().join(format!("cache-{}", binary.len())))
            .args(["attach", "web"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("kubectl attach");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let first = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .expect("a line before the deadline")
            .expect("read");
        assert_eq!(first.as_deref(), Some("attached line"), "{binary}");
        attached.push((binary, child, lines));
    }
    cluster
        .kubectl(&["delete", "pod", "web", "--wait=false"])
        .await;
    for (binary, mut child, mut lines) in attached {
        let end = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .expect("attach ends with the container")
            .expect("read");
        assert_eq!(end, None, "{binary}");
        let status = tokio::time::timeout(WAIT, child.wait())
            .await
            .expect("kubectl attach exits")
            .expect("wait");
        assert!(status.success(), "{binary}: {status}");
    }
}

/// `kubectl port-forward` over both protocols: a port the pod's `kubemock.dev/port.<PORT>`
/// annotation configures answers a TCP client with its text; a port it does not ends the
/// connection and kubectl reports the error stream's message, then exits as it does when a
/// real pod's port refuses.
#[tokio::test]
async fn kubectl_port_forward_answers_from_the_annotation_or_reports_nothing_listens() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let cluster = Cluster::start_with(&["--nodes", "1"]).await;
    // YAML's escapes: kubectl's flags would turn the CRLFs into LFs.
    let manifest = cluster.dir.path().join("pod.yaml");
    std::fs::write(
        &manifest,
        r#"apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations:
    kubemock.dev/port.8080: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"
spec:
  containers: [{name: app, image: nginx}]
"#,
    )
    .expect("write manifest");
    cluster
        .kubectl(&["apply", "-f", manifest.to_str().expect("utf-8 path")])
        .await;
    cluster
        .kubectl_until(
            &["get", "pod", "web", "-o=jsonpath={.status.phase}"],
            |out| out == "Running",
        )
        .await;
    for binary in ["kubectl", KUBECTL_SPDY] {
        let mut forward = Command::new(binary)
            .arg("--kubeconfig")
            .arg(cluster.dir.path().join("kubeconfig"))
            .arg("--cache-dir")
            .arg(
                cluster
                    .dir
                    .path()
                    .join(format!("pf-cache-{}", binary.len())),
            )
            .args(["port-forward", "pod/web", ":8080", ":80"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("kubectl port-forward");
        // "Forwarding from 127.0.0.1:LOCAL -> REMOTE", once per port and address family.
        let mut lines = BufReader::new(forward.stdout.take().expect("stdout")).lines();
        let mut locals = std::collections::HashMap::new();
        while locals.len() < 2 {
            let line = tokio::time::timeout(WAIT, lines.next_line())
                .await
                .expect("kubectl listens before the deadline")
                .expect("read")
                .expect("a line");
            if let Some(rest) = line.strip_prefix("Forwarding from 127.0.0.1:")
                && let Some((local, remote)) = rest.split_once(" -> ")
            {
                locals.insert(remote.to_owned(), local.to_owned());
            }
        }
        let mut answered = tokio::net::TcpStream::connect(format!("127.0.0.1:{}", locals["8080"]))
            .await
            .expect("connect");
        answered
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("send");
        let mut reply = String::new();
        tokio::time::timeout(WAIT, answered.read_to_string(&mut reply))
            .await
            .expect("the answer before the deadline")
            .expect("read");
        assert_eq!(
            reply, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
            "{binary}"
        );
        let mut refused = tokio::net::TcpStream::connect(format!("127.0.0.1:{}", locals["80"]))
            .await
            .expect("connect");
        let mut rest = Vec::new();
        let _ = refused.write_all(b"hello").await;
        let read = tokio::time::timeout(WAIT, refused.read_to_end(&mut rest))
            .await
            .expect("closed before the deadline");
        assert!(read.is_err() || rest.is_empty(), "{binary}: {rest:?}");
        let status = tokio::time::timeout(WAIT, forward.wait())
            .await
            .expect("kubectl ends with the lost connection")
            .expect("wait");
        assert!(!status.success(), "{binary}");
        let mut err = String::new();
        forward
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut err)
            .await
            .expect("stderr");
        assert!(
            err.contains("an error occurred forwarding")
                && err.contains("kubemock: pod default/web serves nothing on port 80"),
            "{binary}: {err}"
        );
    }
}

/// A ValidatingWebhookConfiguration (YAML) denying ConfigMaps labelled `deny: "yes"` through
/// `server`, and one MutatingWebhookConfiguration labelling every Pod.
fn webhook_manifests(server: &kubemock_conformance::webhook_server::WebhookServer) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: deny-labelled
webhooks:
- name: deny.example.com
  clientConfig:
    url: {validate}
    caBundle: {ca}
  rules:
  - operations: [CREATE, UPDATE]
    apiGroups: ['']
    apiVersions: [v1]
    resources: [configmaps]
  objectSelector:
    matchLabels:
      deny: 'yes'
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: label-pods
webhooks:
- name: label.example.com
  clientConfig:
    url: {mutate}
    caBundle: {ca}
  rules:
  - operations: [CREATE]
    apiGroups: ['']
    apiVersions: [v1]
    resources: [pods]
  sideEffects: None
  admissionReviewVersions: [v1]
",
        validate = server.url("/validate"),
        mutate = server.url("/mutate"),
        ca = server.ca_bundle,
    )
}

/// `kubectl apply` of an object a webhook denies shows upstream's words; the in-tree
/// controllers' writes (the Pods a Deployment's ReplicaSet makes) go through webhooks too.
#[tokio::test]
async fn kubectl_shows_a_webhook_denial_and_controllers_writes_are_admitted() {
    use kubemock_conformance::webhook_server::{Answer, WebhookServer, admission_answer, patch};
    use serde_json::json;
    let server = WebhookServer::start(
        &[],
        std::sync::Arc::new(|path, review| match path {
            "/mutate" => Answer::Json(admission_answer(
                review,
                json!({"allowed": true, "patchType": "JSONPatch", "patch": patch(json!([
                    {"op": "add", "path": "/metadata/labels/admitted-by", "value": "webhook"}]))}),
            )),
            _ => Answer::Json(admission_answer(
                review,
                json!({"allowed": false, "status": {"message": "labelled deny"}}),
            )),
        }),
    )
    .await;
    let cluster = Cluster::start().await;
    let hooks = cluster.dir.path().join("hooks.yaml");
    std::fs::write(&hooks, webhook_manifests(&server)).expect("write the manifest");
    cluster
        .kubectl(&["apply", "-f", hooks.to_str().expect("a utf-8 path")])
        .await;
    let manifest = cluster.dir.path().join("cm.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: denied\n  labels:\n    deny: 'yes'\n",
    )
    .expect("write the manifest");
    let (ok, _, err) = common::kubectl(
        &cluster.dir.path().join("kubeconfig"),
        &cluster.dir.path().join("cache"),
        &["apply", "-f", manifest.to_str().expect("a utf-8 path")],
    )
    .await;
    assert!(!ok, "the apply was denied");
    assert!(
        err.contains("admission webhook \"deny.example.com\" denied the request: labelled deny"),
        "{err}"
    );
    cluster
        .kubectl(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
        ])
        .await;
    let labels = cluster
        .kubectl_until(
            &[
                "get",
                "pods",
                "-l",
                "app=web",
                "-o",
                "jsonpath={.items[*].metadata.labels.admitted-by}",
            ],
            |out| out.split_whitespace().count() == 2,
        )
        .await;
    assert_eq!(labels, "webhook webhook");
}

/// A ValidatingAdmissionPolicy with a ConfigMap param and two bindings (`Deny` in one
/// namespace, `Warn` in another), as `kubectl apply` installs them.
const REPLICA_POLICY: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: strict, labels: {policy: deny}}
---
apiVersion: v1
kind: Namespace
metadata: {name: lenient, labels: {policy: warn}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: limits, namespace: default}
data: {maxReplicas: "3"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  validations:
  - expression: object.spec.replicas <= int(params.data.maxReplicas)
    messageExpression: "'at most ' + params.data.maxReplicas + ' replicas'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-limit-deny}
spec:
  policyName: replica-limit
  validationActions: [Deny]
  paramRef: {name: limits, namespace: default, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector: {matchLabels: {policy: deny}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-limit-warn}
spec:
  policyName: replica-limit
  validationActions: [Warn]
  paramRef: {name: limits, namespace: default, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector: {matchLabels: {policy: warn}}
"#;

#[tokio::test]
async fn kubectl_sees_a_validating_admission_policy_deny_and_warn() {
    let cluster = Cluster::start_with(&["--no-controllers"]).await;
    let file = cluster.dir.path().join("policy.yaml");
    std::fs::write(&file, REPLICA_POLICY).expect("write the manifests");
    let file = file.to_str().expect("a UTF-8 path");
    let out = cluster.kubectl(&["apply", "-f", file]).await;
    assert!(
        out.contains(
            "validatingadmissionpolicy.admissionregistration.k8s.io/replica-limit created"
        ),
        "{out}"
    );
    let create = |ns: &'static str| {
        let kubeconfig = cluster.dir.path().join("kubeconfig");
        let cache = cluster.dir.path().join("cache");
        async move {
            common::kubectl(
                &kubeconfig,
                &cache,
                &[
                    "create",
                    "deployment",
                    "web",
                    "-n",
                    ns,
                    "--image=nginx",
                    "--replicas=5",
                ],
            )
            .await
        }
    };
    let (ok, _, err) = create("strict").await;
    assert!(!ok);
    assert_eq!(
        err.trim(),
        "error: failed to create deployment: deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-deny' denied request: at most 3 replicas"
    );
    let (ok, out, err) = create("lenient").await;
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "deployment.apps/web created");
    assert_eq!(
        err.trim(),
        "Warning: Validation failed for ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-warn': at most 3 replicas"
    );
}

/// Two pods for `kubectl top`: one with annotated usage, one at the model's default (half
/// its requests).
const TOP_PODS: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: busy
  labels: {app: top}
  annotations:
    kubemock.dev/cpu-usage: 250m
    kubemock.dev/memory-usage: 64Mi
spec:
  containers:
  - name: c
    image: nginx
---
apiVersion: v1
kind: Pod
metadata:
  name: idle
  labels: {app: top}
spec:
  containers:
  - name: c
    image: nginx
    resources:
      requests: {cpu: 100m, memory: 100Mi}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_top_pods_and_nodes_print_the_usage_model() {
    let cluster = Cluster::start().await;
    let file = cluster.dir.path().join("top.yaml");
    std::fs::write(&file, TOP_PODS).expect("write the manifests");
    cluster
        .kubectl(&["apply", "-f", file.to_str().expect("a utf-8 path")])
        .await;
    cluster
        .kubectl(&[
            "wait",
            "--for=condition=Ready",
            "pod/busy",
            "pod/idle",
            "--timeout=30s",
        ])
        .await;
    // The annotations, and 50% of the requests (docs/metrics.md).
    let out = cluster.kubectl(&["top", "pods", "--no-headers"]).await;
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [["busy", "250m", "64Mi"], ["idle", "50m", "50Mi"]],
        "{out}"
    );
    let out = cluster
        .kubectl(&["top", "pod", "busy", "--containers", "--no-headers"])
        .await;
    let cells: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(cells, ["busy", "c", "250m", "64Mi"], "{out}");
    // Each of the three nodes: 100m and 256Mi of system overhead, plus its pods.
    let out = cluster.kubectl(&["top", "nodes", "--no-headers"]).await;
    let (mut cpu, mut memory) = (0, 0);
    for line in out.lines() {
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells.len(), 5, "{out}");
        cpu += cells[1]
            .trim_end_matches('m')
            .parse::<u64>()
            .expect("millicores");
        memory += cells[3].trim_end_matches("Mi").parse::<u64>().expect("MiB");
    }
    assert_eq!(out.lines().count(), 3, "{out}");
    assert_eq!(
        (cpu, memory),
        (3 * 100 + 250 + 50, 3 * 256 + 64 + 50),
        "{out}"
    );
    // The API as metrics-server serves it.
    let raw = cluster
        .kubectl(&[
            "get",
            "--raw",
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/busy",
        ])
        .await;
    let metrics: serde_json::Value = serde_json::from_str(&raw).expect("json");
    assert_eq!(metrics["kind"], "PodMetrics");
    assert_eq!(metrics["window"], "15s");
    assert_eq!(
        metrics["containers"],
        serde_json::json!([{"name": "c", "usage": {"cpu": "250m", "memory": "64Mi"}}])
    );
    let (ok, _, err) = common::kubectl(
        &cluster.dir.path().join("kubeconfig"),
        &cluster.dir.path().join("cache"),
        &["delete", "podmetrics.metrics.k8s.io", "busy"],
    )
    .await;
    assert!(!ok);
    assert!(
        err.contains("the server does not allow this method on the requested resource"),
        "{err}"
    );
}
