//! `kubemock serve` in the secure mode, really started, with the real kubectl (a fresh
//! `--cache-dir` each run: kubectl caches discovery per host:port): `--secure` and the
//! kubeconfig it writes (`auth whoami`, `--as` a ServiceAccount, `create token` and that token
//! authenticating), kube-apiserver's own flags (`--secure-port`, `--cert-dir` reused across
//! restarts, `--token-auth-file`, `--anonymous-auth=false`, the flags accepted and ignored),
//! given RSA keys (`--tls-cert-file`, `--service-account-signing-key-file`: RS256 tokens), and
//! a key file it cannot use refused at startup with the file's name; and kube-rs, with the
//! written kubeconfig (CA and client certificate) and with a TokenRequest token.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use base64::Engine as _;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

use crate::common;
use common::{BINARY, WAIT};

/// The RSA serving certificate (for 127.0.0.1, its RSA CA after it) and key, and an RSA
/// service-account key in PKCS#1, made with openssl.
const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/testdata");

/// A running `kubemock serve` and its kubeconfig.
struct Server {
    child: Child,
    url: String,
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
}

impl Server {
    /// `kubemock serve --no-controllers --kubeconfig-out F ARGS` until its ready line.
    async fn start(args: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        let mut child = Command::new(BINARY)
            .args(["serve", "--no-controllers", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start kubemock");
        let url = common::ready_url(&mut child).await;
        Server {
            child,
            url,
            kubeconfig,
            dir,
        }
    }

    /// `kubectl --kubeconfig K --cache-dir C ARGS`: stdout, or the test fails with stderr.
    async fn kubectl(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.kubectl_status(args).await;
        assert!(ok, "kubectl {args:?} failed: {err}");
        out
    }

    /// `kubectl ARGS` as [`Server::kubectl`]: (success, stdout, stderr).
    async fn kubectl_status(&self, args: &[&str]) -> (bool, String, String) {
        common::kubectl(&self.kubeconfig, &self.dir.path().join("cache"), args).await
    }

    /// Stops the server and returns what it logged.
    async fn stop(mut self) -> String {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        let mut log = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _ = stderr.read_to_string(&mut log).await;
        }
        log
    }
}

/// The JWS header of a token.
fn jwt_header(token: &str) -> serde_json::Value {
    let header = token.split('.').next().expect("a header");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON")
}

#[tokio::test]
async fn secure_serve_writes_a_kubeconfig_kubectl_uses_as_the_admin_and_as_others() {
    let server = Server::start(&["--secure", "--port", "0"]).await;
    assert!(
        server.url.starts_with("https://127.0.0.1:"),
        "{}",
        server.url
    );
    let whoami = server.kubectl(&["auth", "whoami", "-o", "json"]).await;
    let review: serde_json::Value = serde_json::from_str(&whoami).expect("JSON");
    assert_eq!(review["status"]["userInfo"]["username"], "kubemock-admin");
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        serde_json::json!(["system:masters", "system:authenticated"])
    );
    let as_account = server
        .kubectl(&["--as=system:serviceaccount:ns:sa", "auth", "whoami"])
        .await;
    assert!(
        as_account.contains("system:serviceaccount:ns:sa")
            && as_account.contains("system:serviceaccounts:ns"),
        "{as_account}"
    );
    // A TokenRequest token, used by kubectl as its only credential.
    server
        .kubectl(&["create", "serviceaccount", "builder"])
        .await;
    let token = server
        .kubectl(&["create", "token", "builder", "--duration", "15m"])
        .await;
    let token = token.trim();
    assert_eq!(jwt_header(token)["alg"], "ES256");
    server
        .kubectl(&[
            "config",
            "set-credentials",
            "builder",
            &format!("--token={token}"),
        ])
        .await;
    let as_builder = server
        .kubectl(&["--user", "builder", "auth", "whoami"])
        .await;
    assert!(
        as_builder.contains("system:serviceaccount:default:builder"),
        "{as_builder}"
    );
    server.stop().await;
}

#[tokio::test]
async fn kube_apiserver_flags_serve_securely_and_a_cert_dir_is_reused() {
    let state = tempfile::tempdir().expect("tempdir");
    let cert_dir = state.path().join("certs");
    let tokens = state.path().join("tokens.csv");
    std::fs::write(&tokens, "t0ken,alice,1001,\"dev,ops\"\n").expect("token file");
    let args = |cert_dir: &Path, tokens: &Path| -> Vec<String> {
        [
            "--secure-port=0",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            "--authorization-mode=AlwaysAllow",
            "--anonymous-auth=false",
            "--allow-privileged=true",
            "--enable-admission-plugins=NamespaceLifecycle",
            "--disable-admission-plugins=ServiceAccount,PodSecurity",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.0.0.0/24",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .chain([
            format!("--cert-dir={}", cert_dir.display()),
            format!("--token-auth-file={}", tokens.display()),
        ])
        .collect()
    };
    let first_args = args(&cert_dir, &tokens);
    let first_args: Vec<&str> = first_args.iter().map(String::as_str).collect();
    let first = Server::start(&first_args).await;
    assert!(first.url.starts_with("https://"), "{}", first.url);
    for file in [
        "ca.crt",
        "ca.key",
        "apiserver.crt",
        "apiserver.key",
        "sa.key",
        "sa.pub",
    ] {
        assert!(cert_dir.join(file).exists(), "{file} in the cert dir");
    }
    let whoami = first.kubectl(&["auth", "whoami"]).await;
    assert!(whoami.contains("kubemock-admin"), "{whoami}");
    // The static token, through kubectl.
    first
        .kubectl(&["config", "set-credentials", "alice", "--token=t0ken"])
        .await;
    let alice = first.kubectl(&["--user", "alice", "auth", "whoami"]).await;
    assert!(
        alice.contains("alice") && alice.contains("[dev ops system:authenticated]"),
        "{alice}"
    );
    // A token nobody knows: upstream's 401, as kubectl reports it (client-go words a 401
    // during discovery "the server has asked for the client to provide credentials").
    first
        .kubectl(&[
            "config",
            "set-credentials",
            "stranger",
            "--token=not-a-token",
        ])
        .await;
    let (ok, _, err) = first
        .kubectl_status(&["--user", "stranger", "get", "namespaces"])
        .await;
    assert!(
        !ok && err.contains("error: You must be logged in to the server"),
        "{err}"
    );
    let kept = std::fs::read_to_string(&first.kubeconfig).expect("the first kubeconfig");
    let ca = std::fs::read(cert_dir.join("ca.crt")).expect("ca.crt");
    let log = first.stop().await;
    for flag in [
        "--allow-privileged",
        "--enable-admission-plugins",
        "--disable-admission-plugins",
    ] {
        assert!(
            log.lines()
                .any(|l| l.contains(flag) && l.contains("ignored")),
            "{flag} logged as ignored: {log}"
        );
    }

    // Started again on the same cert dir: the same CA and serving certificate, so the first
    // kubeconfig's credentials still work against the new server.
    let second_args = args(&cert_dir, &tokens);
    let second_args: Vec<&str> = second_args.iter().map(String::as_str).collect();
    let second = Server::start(&second_args).await;
    assert_eq!(std::fs::read(cert_dir.join("ca.crt")).expect("ca.crt"), ca);
    let old = second.dir.path().join("old-kubeconfig");
    std::fs::write(&old, kept).expect("write the old kubeconfig");
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&old)
        .arg("--cache-dir")
        .arg(second.dir.path().join("cache-old"))
        .args(["--server", &second.url, "auth", "whoami"])
        .output()
        .await
        .expect("kubectl runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("kubemock-admin"));
    second.stop().await;
}

#[tokio::test]
async fn given_rsa_keys_serve_tls_and_sign_rs256_tokens() {
    let server = Server::start(&[
        "--port",
        "0",
        "--tls-cert-file",
        &format!("{TESTDATA}/rsa-serving.crt"),
        "--tls-private-key-file",
        &format!("{TESTDATA}/rsa-serving.key"),
        "--service-account-signing-key-file",
        &format!("{TESTDATA}/sa-rsa.key"),
    ])
    .await;
    assert!(server.url.starts_with("https://"), "{}", server.url);
    let whoami = server.kubectl(&["auth", "whoami"]).await;
    assert!(whoami.contains("kubemock-admin"), "{whoami}");
    server
        .kubectl(&["create", "serviceaccount", "builder"])
        .await;
    let token = server.kubectl(&["create", "token", "builder"]).await;
    let token = token.trim();
    assert_eq!(jwt_header(token)["alg"], "RS256");
    server
        .kubectl(&[
            "config",
            "set-credentials",
            "builder",
            &format!("--token={token}"),
        ])
        .await;
    let as_builder = server
        .kubectl(&["--user", "builder", "auth", "whoami"])
        .await;
    assert!(
        as_builder.contains("system:serviceaccount:default:builder"),
        "{as_builder}"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_unusable_key_file_is_refused_at_startup_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("signing.key");
    std::fs::write(
        &key,
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
    )
    .expect("write");
    let output = tokio::time::timeout(
        WAIT,
        Command::new(BINARY)
            .args(["serve", "--secure", "--port", "0", "--no-controllers"])
            .arg("--service-account-signing-key-file")
            .arg(&key)
            .output(),
    )
    .await
    .expect("exits before the deadline")
    .expect("runs");
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "no ready line");
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("signing.key") && err.contains("found: ENCRYPTED PRIVATE KEY"),
        "{err}"
    );
}

#[tokio::test]
async fn kube_rs_connects_with_the_written_kubeconfig_and_with_a_token() {
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::{ListParams, PostParams};
    use kube::config::{KubeConfigOptions, Kubeconfig};

    let server = Server::start(&["--secure", "--port", "0"]).await;
    let whoami = |client: kube::Client| async move {
        let review = kube::Api::<SelfSubjectReview>::all(client)
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await
            .expect("a SelfSubjectReview");
        review
            .status
            .and_then(|s| s.user_info)
            .and_then(|u| u.username)
            .unwrap_or_default()
    };
    let kubeconfig = Kubeconfig::read_from(&server.kubeconfig).expect("the kubeconfig reads");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube-rs takes the kubeconfig as written");
    let admin = kube::Client::try_from(config).expect("a kube-rs client");
    let namespaces = kube::Api::<Namespace>::all(admin.clone())
        .list(&ListParams::default())
        .await
        .expect("list over TLS with the admin's certificate");
    assert!(namespaces.items.len() >= 4);
    assert_eq!(whoami(admin).await, "kubemock-admin");

    server.kubectl(&["create", "serviceaccount", "robot"]).await;
    let token = server.kubectl(&["create", "token", "robot"]).await;
    server
        .kubectl(&[
            "config",
            "set-credentials",
            "robot",
            &format!("--token={}", token.trim()),
        ])
        .await;
    server
        .kubectl(&[
            "config",
            "set-context",
            "robot",
            "--cluster=kubemock",
            "--user=robot",
        ])
        .await;
    let kubeconfig = Kubeconfig::read_from(&server.kubeconfig).expect("the kubeconfig reads");
    let options = KubeConfigOptions {
        context: Some("robot".to_owned()),
        ..KubeConfigOptions::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .expect("the token context");
    let robot = kube::Client::try_from(config).expect("a kube-rs client");
    assert_eq!(whoami(robot).await, "system:serviceaccount:default:robot");
    server.stop().await;
}
