//! The envtest drop-in, as controller-runtime v0.20's envtest drives it
//! (`pkg/internal/testing/controlplane/{etcd,apiserver,auth}.go`): the programs of
//! `kubemock envtest-assets DIR` started under their names with envtest's flags and
//! certificates, checked over real sockets. The Go suite in `compat/envtest` runs envtest
//! itself (`compat/envtest/test.sh`).

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{BINARY, WAIT};
use tokio::process::{Child, Command};

/// Interval of the polls below (each ends on its condition or at [`WAIT`]).
const POLL: Duration = Duration::from_millis(20);

/// `kubemock envtest-assets DIR`: the directory it prints.
async fn assets(dir: &Path) -> String {
    let output = Command::new(BINARY)
        .arg("envtest-assets")
        .arg(dir)
        .output()
        .await
        .expect("run kubemock envtest-assets");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .trim()
        .to_owned()
}

/// A port free now (envtest's `addr.Suggest` picks ports the same way).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .port()
}

/// GETs `url` with `client` until it answers 200 (as envtest's `pollURLUntilOK`); the body.
async fn until_ok(client: &reqwest::Client, url: &str) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(response) = client.get(url).send().await
            && response.status() == reqwest::StatusCode::OK
        {
            return response.text().await.expect("body");
        }
        assert!(Instant::now() < deadline, "{url} never answered 200");
        tokio::time::sleep(POLL).await;
    }
}

fn spawn(program: &Path, args: &[String], env: &[(&str, &str)]) -> Child {
    let mut command = Command::new(program);
    command
        .args(args)
        .env_remove("KUBEMOCK_CONTROLLERS")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    for (key, value) in env {
        command.env(key, value);
    }
    command.spawn().expect("spawn")
}

/// etcd 3.5's `/health` answer (`server/etcdserver/api/etcdhttp/health.go`), on the client
/// URL envtest passes; `--help` lists `--unsafe-no-fsync` (envtest's `CheckFlag` reads it).
#[tokio::test]
async fn etcd_stand_in_answers_envtest_health_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let assets = assets(&dir.path().join("bin")).await;
    let etcd = Path::new(&assets).join("etcd");
    let help = Command::new(&etcd)
        .arg("--help")
        .output()
        .await
        .expect("etcd --help");
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("\n  --unsafe-no-fsync"));

    let url = format!("http://127.0.0.1:{}", free_port());
    let data = dir.path().join("data");
    let mut child = spawn(
        &etcd,
        &[
            format!("--advertise-client-urls={url}"),
            format!("--data-dir={}", data.display()),
            format!("--listen-client-urls={url}"),
            format!("--listen-peer-urls=http://127.0.0.1:{}", free_port()),
            "--unsafe-no-fsync=true".to_owned(),
        ],
        &[],
    );
    let body = until_ok(&reqwest::Client::new(), &format!("{url}/health")).await;
    assert_eq!(body, r#"{"health":"true","reason":""}"#);
    assert!(!data.exists(), "the stand-in stores nothing");
    child.start_kill().expect("kill");
    child.wait().await.expect("wait");
}

/// envtest's certificates: a serving certificate for 127.0.0.1 from a CA of its own that it
/// writes nowhere (`populateAPIServerCerts`), a client CA file, a service-account key pair.
struct EnvtestCerts {
    /// What envtest's clients trust (`SecureServing.CA`).
    serving_ca: reqwest::Certificate,
    /// The admin's client certificate and key (`CertAuthn.AddUser`), PEM.
    admin: reqwest::Identity,
}

fn envtest_certs(dir: &Path) -> EnvtestCerts {
    let ca = |name: &str| {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let certificate = params.self_signed(&key).expect("CA certificate");
        (certificate, rcgen::Issuer::new(params, key))
    };
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).expect("write");

    let (serving_ca, serving_issuer) = ca("envtest-environment");
    let key = rcgen::KeyPair::generate().expect("key");
    let params =
        rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("params");
    let serving = params.signed_by(&key, &serving_issuer).expect("serving");
    write("apiserver.crt", &serving.pem());
    write("apiserver.key", &key.serialize_pem());

    let (client_ca, client_issuer) = ca("envtest-client-ca");
    write("client-cert-auth-ca.crt", &client_ca.pem());
    let admin_key = rcgen::KeyPair::generate().expect("key");
    let mut admin = rcgen::CertificateParams::default();
    admin
        .distinguished_name
        .push(rcgen::DnType::CommonName, "admin");
    admin
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:masters");
    admin.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let admin = admin.signed_by(&admin_key, &client_issuer).expect("admin");

    let (sa_cert, sa_issuer) = ca("envtest-sa");
    write("sa-signer.crt", &sa_cert.pem());
    write("sa-signer.key", &sa_issuer.key().serialize_pem());

    EnvtestCerts {
        serving_ca: reqwest::Certificate::from_pem(serving_ca.pem().as_bytes()).expect("CA"),
        admin: reqwest::Identity::from_pem(
            format!("{}{}", admin.pem(), admin_key.serialize_pem()).as_bytes(),
        )
        .expect("identity"),
    }
}

/// kube-apiserver's flags as envtest v0.20 renders them (`APIServer.defaultArgs`, with
/// `CertAuthn.Configure`'s `--client-ca-file`).
fn envtest_apiserver_args(dir: &Path, port: u16, etcd_port: u16) -> Vec<String> {
    let d = dir.display();
    vec![
        "--allow-privileged=true".to_owned(),
        "--authorization-mode=RBAC".to_owned(),
        "--bind-address=127.0.0.1".to_owned(),
        format!("--cert-dir={d}"),
        format!("--client-ca-file={d}/client-cert-auth-ca.crt"),
        "--disable-admission-plugins=ServiceAccount".to_owned(),
        format!("--etcd-servers=http://127.0.0.1:{etcd_port}"),
        format!("--secure-port={port}"),
        format!("--service-account-issuer=https://127.0.0.1:{port}/"),
        format!("--service-account-key-file={d}/sa-signer.crt"),
        format!("--service-account-signing-key-file={d}/sa-signer.key"),
        "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
    ]
}

/// The drop-in serves envtest's own certificate to envtest's clients, authenticates its
/// admin by the client CA file, honours `--disable-admission-plugins=ServiceAccount`, and its in-process controllers (here the namespace
/// controller, named by `KUBEMOCK_CONTROLLERS`) reach it as kube-apiserver's loopback client
/// does: asking for `apiserver-loopback-client` and trusting the certificate served for that
/// name (`staging/src/k8s.io/apiserver/pkg/server/options/serving_with_loopback.go`). Before,
/// they trusted only kubemock's cluster CA, which did not issue envtest's serving
/// certificate: every request failed the handshake, and no namespace finished deleting.
#[tokio::test]
async fn kube_apiserver_serves_envtest_certificates_and_its_controllers_reach_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let assets = assets(&dir.path().join("bin")).await;
    let apiserver = Path::new(&assets).join("kube-apiserver");
    let help = Command::new(&apiserver)
        .arg("--help")
        .output()
        .await
        .expect("kube-apiserver --help");
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    // envtest passes `--insecure-port=0` only to a server whose help lists it (removed in
    // kube-apiserver 1.24), and kubemock has no such flag.
    assert!(help.contains("--secure-port") && !help.contains("--insecure-port"));

    let certs_dir = dir.path().join("certs");
    std::fs::create_dir(&certs_dir).expect("cert dir");
    let certs = envtest_certs(&certs_dir);
    let port = free_port();
    // envtest starts its etcd first: here kubemock's stand-in, which `--etcd-servers`
    // recognises, so the embedded store is used (a real etcd there would be used instead).
    let etcd_port = free_port();
    let etcd_url = format!("http://127.0.0.1:{etcd_port}");
    let _etcd = spawn(
        &Path::new(&assets).join("etcd"),
        &[
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-client-urls={etcd_url}"),
            format!("--listen-peer-urls=http://127.0.0.1:{}", free_port()),
        ],
        &[],
    );
    until_ok(&reqwest::Client::new(), &format!("{etcd_url}/health")).await;
    let mut child = spawn(
        &apiserver,
        &envtest_apiserver_args(&certs_dir, port, etcd_port),
        &[("KUBEMOCK_CONTROLLERS", "namespace")],
    );
    let base = format!("https://127.0.0.1:{port}");
    // envtest's health check: no client certificate, and no verification.
    let anonymous = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .expect("client");
    assert_eq!(until_ok(&anonymous, &format!("{base}/healthz")).await, "ok");

    // envtest's clients: its CA, its admin.
    let admin = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(certs.serving_ca)
        .identity(certs.admin)
        .build()
        .expect("client");
    let whoami = admin
        .post(format!(
            "{base}/apis/authentication.k8s.io/v1/selfsubjectreviews"
        ))
        .json(&serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}))
        .send()
        .await
        .expect("whoami");
    assert_eq!(whoami.status(), reqwest::StatusCode::CREATED);
    let review: serde_json::Value = whoami.json().await.expect("review");
    assert_eq!(review["status"]["userInfo"]["username"], "admin");

    // `--disable-admission-plugins=ServiceAccount` is honoured: a pod gets no account and
    // no token volume (`plugin/pkg/admission/serviceaccount/admission.go` adds both).
    let pod = admin
        .post(format!("{base}/api/v1/namespaces/default/pods"))
        .json(&serde_json::json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
        .send()
        .await
        .expect("create a pod");
    assert_eq!(pod.status(), reqwest::StatusCode::CREATED);
    let pod: serde_json::Value = pod.json().await.expect("pod");
    assert!(pod["spec"].get("serviceAccountName").is_none(), "{pod}");
    assert!(pod["spec"].get("volumes").is_none(), "{pod}");

    let namespaces = format!("{base}/api/v1/namespaces");
    let created = admin
        .post(&namespaces)
        .json(&serde_json::json!({"metadata": {"name": "doomed"}}))
        .send()
        .await
        .expect("create");
    assert_eq!(created.status(), reqwest::StatusCode::CREATED);
    let deleted = admin
        .delete(format!("{namespaces}/doomed"))
        .send()
        .await
        .expect("delete");
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let deadline = Instant::now() + WAIT;
    loop {
        let got = admin
            .get(format!("{namespaces}/doomed"))
            .send()
            .await
            .expect("get");
        if got.status() == reqwest::StatusCode::NOT_FOUND {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the namespace controller never finished deleting the namespace"
        );
        tokio::time::sleep(POLL).await;
    }
    child.start_kill().expect("kill");
    child.wait().await.expect("wait");
}
