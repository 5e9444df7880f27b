//! The in-process components of `kubemock serve --secure` (the real binary, port 0) run as
//! their upstream identities under RBAC (docs/security.md): with every bootstrap binding a
//! Deployment rolls out, each controller as its ServiceAccount in `kube-system`; without the
//! ReplicaSet controller's binding (`system:controller:replicaset-controller`, upstream's
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go`) its ReplicaSet gets
//! no pods and the controller logs upstream's 403, until the binding is back. And kubectl
//! over TLS against the RBAC authorizer: `auth can-i`, a RoleBinding granting, and upstream's
//! exact Forbidden message. kubectl gets a fresh `--cache-dir` per server.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::common;
use common::{BINARY, WAIT};

/// Pause between two looks at a condition.
const POLL: Duration = Duration::from_millis(100);

/// A running `kubemock serve`, its kubeconfig, and what it has logged so far.
struct Server {
    child: Child,
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
    log: Arc<Mutex<String>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Server {
    /// `kubemock serve --secure --port 0 --kubeconfig-out F ARGS` until its ready line; its
    /// log (stderr) is collected as it comes.
    async fn start(args: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        let mut child = Command::new(BINARY)
            .args(["serve", "--secure", "--port", "0", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start kubemock");
        let log = Arc::new(Mutex::new(String::new()));
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let sink = log.clone();
        let reader = tokio::spawn(async move {
            while let Ok(Some(line)) = stderr.next_line().await {
                let mut log = sink.lock();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let url = common::ready_url(&mut child).await;
        assert!(url.starts_with("https://"), "{url}");
        Server {
            child,
            kubeconfig,
            dir,
            log,
            reader,
        }
    }

    /// `kubectl ARGS` with the admin's kubeconfig: (success, stdout, stderr).
    async fn kubectl_status(&self, args: &[&str]) -> (bool, String, String) {
        common::kubectl(&self.kubeconfig, &self.dir.path().join("cache"), args).await
    }

    /// `kubectl ARGS`: stdout, or the test fails with stderr.
    async fn kubectl(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.kubectl_status(args).await;
        assert!(ok, "kubectl {args:?} failed: {err}");
        out
    }

    /// `kubectl create -f -` of `manifest`.
    async fn create(&self, manifest: &str) {
        let path = self.dir.path().join("manifest.yaml");
        std::fs::write(&path, manifest).expect("write the manifest");
        let path = path.to_str().expect("a UTF-8 path").to_owned();
        self.kubectl(&["create", "-f", &path]).await;
    }

    /// Waits until `kubectl ARGS` prints what `done` accepts; its last output otherwise.
    async fn wait_for(&self, args: &[&str], done: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let (_, out, _) = self.kubectl_status(args).await;
            if done(&out) {
                return out;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "kubectl {args:?} still prints {out:?}; the log:\n{}",
                self.log.lock()
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until the log holds every one of `needles`.
    async fn wait_for_log(&self, needles: &[&str]) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if needles.iter().all(|n| self.log.lock().contains(n)) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the log never held {needles:?}:\n{}",
                self.log.lock()
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Stops the server and returns its whole log.
    async fn stop(mut self) -> String {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        // The reader ends at the end of stderr: the log is whole.
        let _ = self.reader.await;
        self.log.lock().clone()
    }
}

/// The phases of the pods labelled `app=NAME`, space-separated.
fn phases_of(app: &str) -> [String; 4] {
    [
        "get".into(),
        "pods".into(),
        format!("-lapp={app}"),
        "-o=jsonpath={.items[*].status.phase}".into(),
    ]
}

fn args(owned: &[String]) -> Vec<&str> {
    owned.iter().map(String::as_str).collect()
}

#[tokio::test]
async fn secure_controllers_roll_out_a_deployment_as_their_service_accounts() {
    let server = Server::start(&["--nodes", "1"]).await;
    server
        .kubectl(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
        ])
        .await;
    let phases = phases_of("web");
    server
        .wait_for(&args(&phases), |out| {
            out.split_whitespace().filter(|p| *p == "Running").count() == 2
        })
        .await;
    server
        .wait_for(
            &[
                "get",
                "deployment",
                "web",
                "-o=jsonpath={.status.availableReplicas}",
            ],
            |out| out == "2",
        )
        .await;
    // Upstream's accounts, created by the manager in kube-system.
    let accounts = server
        .kubectl(&["get", "serviceaccounts", "-n", "kube-system", "-o", "name"])
        .await;
    for account in [
        "deployment-controller",
        "replicaset-controller",
        "generic-garbage-collector",
        "namespace-controller",
        "endpoint-controller",
        "endpointslice-controller",
        "daemon-set-controller",
        "statefulset-controller",
        "job-controller",
        "ttl-after-finished-controller",
        "cronjob-controller",
        "clusterrole-aggregation-controller",
        "disruption-controller",
        "root-ca-cert-publisher",
        "persistent-volume-binder",
        "pvc-protection-controller",
        "pv-protection-controller",
        "node-controller",
        "resourcequota-controller",
        "horizontal-pod-autoscaler",
    ] {
        assert!(
            accounts.contains(&format!("serviceaccount/{account}\n")),
            "{account} missing from {accounts}"
        );
    }
    // The simulated kubelets' binding: their user to the kubelet's bootstrap role.
    let binding = server
        .kubectl(&[
            "get",
            "clusterrolebinding",
            "kubemock:node-simulator",
            "-o=jsonpath={.roleRef.name} {.subjects[0].kind} {.subjects[0].name}",
        ])
        .await;
    assert_eq!(binding, "system:node User kubemock:node-simulator");
    // The default StorageClass, which the provisioner's account may not create, made by
    // kubemock's administrator.
    let class = server
        .wait_for(
            &[
                "get",
                "storageclass",
                "standard",
                "-o=jsonpath={.provisioner}",
                "--ignore-not-found",
            ],
            |out| !out.is_empty(),
        )
        .await;
    assert_eq!(class, "kubemock.dev/hostpath");
    // Each component's writes are named by its upstream user agent (client-go's
    // `DefaultKubernetesUserAgent`), whoever it authenticates as.
    let managers = server
        .kubectl(&[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o=jsonpath={range .items[*]}{range .metadata.managedFields[*]}{.manager}/{.subresource} {end}{end}",
        ])
        .await;
    assert_eq!(
        managers.trim(),
        ["kube-controller-manager/ kubelet/status"; 2].join(" "),
        "{managers}"
    );
    // The root CA publisher, as its account, put the CA clients trust (the kubeconfig's)
    // into every namespace's kube-root-ca.crt, which each pod's token volume mounts.
    let trusted = server
        .kubectl(&[
            "config",
            "view",
            "--raw",
            "-o=jsonpath={.clusters[0].cluster.certificate-authority-data}",
        ])
        .await;
    let published = server
        .wait_for(
            &[
                "get",
                "configmap",
                "kube-root-ca.crt",
                "-n",
                "kube-system",
                "-o=jsonpath={.data.ca\\.crt}",
            ],
            |out| out.contains("BEGIN CERTIFICATE"),
        )
        .await;
    let trusted = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, trusted)
        .expect("base64 CA data");
    let trusted = String::from_utf8(trusted).expect("PEM");
    assert_eq!(published.trim_end(), trusted.trim_end());
    // Nothing was refused: the scheduler bound the pods as system:kube-scheduler, the
    // kubelets ran them as kubemock:node-simulator, each controller acted as its account.
    let log = server.stop().await;
    assert!(
        log.contains("using the controller's ServiceAccount credentials"),
        "{log}"
    );
    for refused in ["forbidden", "sync refused", "recording an event failed"] {
        assert!(
            !log.contains(refused),
            "a component was refused ({refused}):\n{log}"
        );
    }
}

#[tokio::test]
async fn a_controller_without_its_binding_gets_upstreams_403_until_it_is_restored() {
    let server = Server::start(&["--nodes", "1"]).await;
    server
        .kubectl(&[
            "delete",
            "clusterrolebinding",
            "system:controller:replicaset-controller",
        ])
        .await;
    server
        .create(
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: lonely\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: lonely\n  template:\n    metadata:\n      labels:\n        app: lonely\n    spec:\n      containers:\n      - name: c\n        image: nginx\n",
        )
        .await;
    // The pods' creation is refused with upstream's words (the FailedCreate event is refused
    // too, so its message is logged), and so is the status update the sync ends with.
    server
        .wait_for_log(&[
            "is forbidden: User \"system:serviceaccount:kube-system:replicaset-controller\" \
             cannot create resource \"pods\" in API group \"\" in the namespace \"default\"",
            "replicasets.apps \"lonely\" is forbidden: User \
             \"system:serviceaccount:kube-system:replicaset-controller\" cannot update \
             resource \"replicasets/status\" in API group \"apps\" in the namespace \"default\"",
        ])
        .await;
    let pods = server
        .kubectl(&["get", "pods", "-lapp=lonely", "-o", "name"])
        .await;
    assert_eq!(pods, "", "no pod without the controller's permission");
    // The binding back (as the bootstrap policy has it): the retried sync creates the pods.
    server
        .kubectl(&[
            "create",
            "clusterrolebinding",
            "system:controller:replicaset-controller",
            "--clusterrole=system:controller:replicaset-controller",
            "--serviceaccount=kube-system:replicaset-controller",
        ])
        .await;
    let phases = phases_of("lonely");
    server
        .wait_for(&args(&phases), |out| {
            out.split_whitespace().filter(|p| *p == "Running").count() == 2
        })
        .await;
    server.stop().await;
}

#[tokio::test]
async fn kubectl_over_tls_is_authorized_by_rbac_with_upstreams_messages() {
    let server = Server::start(&["--no-controllers"]).await;
    let (allowed, out, _) = server
        .kubectl_status(&["auth", "can-i", "list", "pods", "--as", "alice"])
        .await;
    assert_eq!((allowed, out.trim()), (false, "no"));
    server
        .kubectl(&[
            "create",
            "role",
            "pod-reader",
            "--verb=list",
            "--resource=pods",
        ])
        .await;
    server
        .kubectl(&[
            "create",
            "rolebinding",
            "alice-reads-pods",
            "--role=pod-reader",
            "--user=alice",
        ])
        .await;
    let (allowed, out, _) = server
        .kubectl_status(&["auth", "can-i", "list", "pods", "--as", "alice"])
        .await;
    assert_eq!((allowed, out.trim()), (true, "yes"));
    server.kubectl(&["get", "pods", "--as", "alice"]).await;
    let (ok, _, err) = server
        .kubectl_status(&["get", "configmaps", "--as", "bob"])
        .await;
    assert!(!ok);
    assert_eq!(
        err.trim(),
        "Error from server (Forbidden): configmaps is forbidden: User \"bob\" cannot list \
         resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    server.stop().await;
}

#[tokio::test]
async fn without_service_account_credentials_controllers_get_the_managers_403s() {
    let server = Server::start(&["--nodes", "1", "--use-service-account-credentials=false"]).await;
    server
        .kubectl(&["create", "deployment", "web", "--image=nginx"])
        .await;
    // As upstream's: system:kube-controller-manager's bootstrap role lists and watches
    // everything but may not write a Deployment's status or create its ReplicaSet.
    server
        .wait_for_log(&[
            "deployments.apps \"web\" is forbidden: User \"system:kube-controller-manager\" \
             cannot update resource \"deployments/status\" in API group \"apps\" in the \
             namespace \"default\"",
        ])
        .await;
    let sets = server.kubectl(&["get", "replicasets", "-o", "name"]).await;
    assert_eq!(sets, "");
    let log = server.stop().await;
    assert!(
        !log.contains("using the controller's ServiceAccount credentials"),
        "{log}"
    );
}
