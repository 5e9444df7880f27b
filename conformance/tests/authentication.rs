//! Authentication in the secure mode, over real TLS, against in-process servers on port 0
//! (each test its own, with the options it needs): the x509, static-token, ServiceAccount and
//! anonymous authenticators with upstream's user info
//! (`staging/src/k8s.io/apiserver/pkg/authentication/`, `pkg/kubeapiserver/authenticator/
//! config.go`), upstream's 401 (`endpoints/filters/authentication.go`), impersonation
//! (`endpoints/filters/impersonation.go`), and bad input (garbage credentials, malformed
//! certificates, huge headers) answered with a 4xx or refused by TLS, never a 5xx.
//!
//! The servers authorize with `AlwaysAllow`, so that what is checked here is who a request is,
//! whatever the authorizer; RBAC's refusals are the authorization tests' business. The user a
//! request is made by is read back with a SelfSubjectReview (`kubectl auth whoami`).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use kubemock_apiserver::pki::Pki;
use kubemock_apiserver::{AuthorizationMode, SecurityOptions, ServerConfig, TestServer};
use kubemock_conformance::{Harness, Reply, tls_client};
use serde_json::{Value, json};

const WHOAMI: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
/// The Status of every authentication failure, byte for byte as upstream sends it.
const UNAUTHORIZED: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#;

/// A secure in-process server authorizing with `AlwaysAllow`.
struct Secure {
    server: TestServer,
    /// The token file, kept while the server runs.
    _dir: tempfile::TempDir,
}

impl Secure {
    /// A server with `options`; `tokens` become its `--token-auth-file`.
    async fn start(mut options: SecurityOptions, tokens: &str) -> Secure {
        let dir = tempfile::tempdir().expect("a temporary directory");
        if !tokens.is_empty() {
            let path = dir.path().join("tokens.csv");
            std::fs::write(&path, tokens).expect("write the token file");
            options.token_auth_file = Some(path);
        }
        let config = ServerConfig {
            authorization_mode: AuthorizationMode::always_allow(),
            ..ServerConfig::secure(&options).expect("a secure configuration")
        };
        let server = TestServer::start_with(config, kubemock_storage::Config::ephemeral())
            .await
            .expect("start a secure server");
        assert!(server.url().starts_with("https://"), "{}", server.url());
        Secure { server, _dir: dir }
    }

    fn ca(&self) -> &str {
        self.server.security().expect("secure").server_ca_pem()
    }

    /// A harness with no credentials.
    fn anonymous(&self) -> Harness {
        Harness::connect_with(self.server.url(), tls_client(self.ca(), None, None))
    }

    /// A harness with a client certificate of the cluster CA for `user` in `groups`.
    fn as_user(&self, user: &str, groups: &[&str]) -> Harness {
        let identity = self
            .server
            .security()
            .expect("secure")
            .issue_client_identity(user, groups)
            .expect("a client certificate");
        let pem = format!("{}{}", identity.certificate_pem, identity.key_pem);
        Harness::connect_with(self.server.url(), tls_client(self.ca(), Some(&pem), None))
    }

    /// The administrator (`kubemock-admin` in `system:masters`, as `--kubeconfig-out`).
    fn admin(&self) -> Harness {
        self.as_user("kubemock-admin", &["system:masters"])
    }

    /// A harness with the bearer token `token`.
    fn with_token(&self, token: &str) -> Harness {
        Harness::connect_with(self.server.url(), tls_client(self.ca(), None, Some(token)))
    }

    fn pki(&self) -> &Arc<Pki> {
        self.server.security().expect("secure").pki()
    }
}

/// `kubectl auth whoami`: the SelfSubjectReview's user, or the failed reply.
async fn whoami(h: &Harness) -> Result<Value, Reply> {
    let reply = h
        .post(
            WHOAMI,
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
        )
        .await;
    if reply.status == 201 {
        Ok(reply.body["status"]["userInfo"].clone())
    } else {
        Err(reply)
    }
}

fn assert_unauthorized(reply: &Reply) {
    assert_eq!(reply.status, 401, "{}", reply.body);
    assert_eq!(
        reply.body,
        serde_json::from_str::<Value>(UNAUTHORIZED).expect("JSON")
    );
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[tokio::test]
async fn a_request_without_credentials_is_upstreams_401_when_anonymous_auth_is_off() {
    let s = Secure::start(
        SecurityOptions {
            anonymous_auth: false,
            ..SecurityOptions::default()
        },
        "",
    )
    .await;
    let h = s.anonymous();
    for path in ["/api/v1/namespaces", "/healthz", "/version", "/apis"] {
        let reply = h.get(path).await;
        assert_unauthorized(&reply);
        assert_eq!(reply.headers["content-type"], "application/json");
    }
    assert_unauthorized(&whoami(&h).await.unwrap_err());
    // The same server answers the administrator.
    assert_eq!(s.admin().get("/api/v1/namespaces").await.status, 200);
}

#[tokio::test]
async fn a_request_without_credentials_is_system_anonymous_when_anonymous_auth_is_on() {
    let s = Secure::start(SecurityOptions::default(), "").await;
    assert_eq!(
        whoami(&s.anonymous()).await.unwrap(),
        json!({"username": "system:anonymous", "groups": ["system:unauthenticated"]})
    );
    // Another authorization scheme is no bearer token: still anonymous (`bearertoken.go`).
    let basic = Harness::connect_with(
        s.server.url(),
        reqwest::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(s.ca().as_bytes()).unwrap())
            .default_headers(
                [(
                    reqwest::header::AUTHORIZATION,
                    "Basic YWxpY2U6c2VjcmV0".parse().unwrap(),
                )]
                .into_iter()
                .collect(),
            )
            .build()
            .unwrap(),
    );
    assert_eq!(
        whoami(&basic).await.unwrap()["username"],
        "system:anonymous"
    );
}

#[tokio::test]
async fn a_client_certificate_is_its_common_name_in_the_groups_of_its_organizations() {
    let s = Secure::start(SecurityOptions::default(), "").await;
    let user = whoami(&s.as_user("alice", &["dev", "ops"])).await.unwrap();
    assert_eq!(user["username"], "alice");
    assert_eq!(
        user["groups"],
        json!(["dev", "ops", "system:authenticated"])
    );
    let id = user["extra"]["authentication.kubernetes.io/credential-id"][0]
        .as_str()
        .unwrap();
    assert!(id.starts_with("X509SHA256=") && id.len() == 75, "{id}");
    assert!(user.get("uid").is_none());
    let admin = whoami(&s.admin()).await.unwrap();
    assert_eq!(admin["username"], "kubemock-admin");
    assert_eq!(
        admin["groups"],
        json!(["system:masters", "system:authenticated"])
    );
}

#[tokio::test]
async fn a_certificate_another_ca_signed_is_a_401_even_with_anonymous_auth() {
    let s = Secure::start(SecurityOptions::default(), "").await;
    let other = Pki::new();
    let foreign = other
        .issue_client_identity(
            "mallory",
            &["system:masters"],
            std::time::Duration::from_secs(600),
        )
        .unwrap();
    let pem = format!("{}{}", foreign.certificate_pem, foreign.key_pem);
    let h = Harness::connect_with(s.server.url(), tls_client(s.ca(), Some(&pem), None));
    assert_unauthorized(&h.get("/api/v1/namespaces").await);
    // A serving certificate of the right CA is not for clients either.
    let serving = s
        .pki()
        .issue_serving_certificate(
            &["localhost".to_owned()],
            std::time::Duration::from_secs(600),
        )
        .unwrap();
    let pem = format!("{}{}", serving.certificate_pem, serving.key_pem);
    let h = Harness::connect_with(s.server.url(), tls_client(s.ca(), Some(&pem), None));
    assert_unauthorized(&h.get("/api/v1/namespaces").await);
}

#[tokio::test]
async fn a_client_ca_file_adds_an_authority_whose_certificates_authenticate() {
    let outside = Pki::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client-ca.crt");
    std::fs::write(&path, outside.ca_certificate_pem().unwrap()).unwrap();
    let s = Secure::start(
        SecurityOptions {
            client_ca_file: Some(path),
            ..SecurityOptions::default()
        },
        "",
    )
    .await;
    let identity = outside
        .issue_client_identity(
            "envtest-user",
            &["testers"],
            std::time::Duration::from_secs(600),
        )
        .unwrap();
    let pem = format!("{}{}", identity.certificate_pem, identity.key_pem);
    let h = Harness::connect_with(s.server.url(), tls_client(s.ca(), Some(&pem), None));
    let user = whoami(&h).await.unwrap();
    assert_eq!(user["username"], "envtest-user");
    assert_eq!(user["groups"], json!(["testers", "system:authenticated"]));
    assert_eq!(
        whoami(&s.admin()).await.unwrap()["username"],
        "kubemock-admin"
    );
}

#[tokio::test]
async fn token_file_users_authenticate_and_an_unknown_bearer_token_is_a_401() {
    let s = Secure::start(
        SecurityOptions::default(),
        "secret-alice,alice,1001,\"dev,ops\"\nsecret-bob,bob,1002\n",
    )
    .await;
    assert_eq!(
        whoami(&s.with_token("secret-alice")).await.unwrap(),
        json!({"username": "alice", "uid": "1001",
               "groups": ["dev", "ops", "system:authenticated"]})
    );
    assert_eq!(
        whoami(&s.with_token("secret-bob")).await.unwrap()["groups"],
        json!(["system:authenticated"])
    );
    // A bearer token nobody knows is not anonymous: a 401, with anonymous auth on.
    for token in ["nope", "a.b.c", "secret-alice2"] {
        assert_unauthorized(&s.with_token(token).get("/api/v1/namespaces").await);
    }
}

/// A ServiceAccount `name` in `namespace` (created by the admin), with its uid.
async fn service_account(s: &Secure, namespace: &str, name: &str) -> String {
    let admin = s.admin();
    let created = admin
        .post(
            "/api/v1/namespaces",
            &json!({"metadata": {"name": namespace}}),
        )
        .await;
    assert!(
        created.status == 201 || created.status == 409,
        "{}",
        created.body
    );
    let created = admin
        .post(
            &format!("/api/v1/namespaces/{namespace}/serviceaccounts"),
            &json!({"metadata": {"name": name}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.body["metadata"]["uid"]
        .as_str()
        .expect("a uid")
        .to_owned()
}

#[tokio::test]
async fn a_token_request_token_authenticates_until_its_service_account_goes() {
    let s = Secure::start(
        SecurityOptions {
            anonymous_auth: false,
            ..SecurityOptions::default()
        },
        "",
    )
    .await;
    let uid = service_account(&s, "builds", "builder").await;
    let admin = s.admin();
    let requested = admin
        .post(
            "/api/v1/namespaces/builds/serviceaccounts/builder/token",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                    "spec": {"expirationSeconds": 600}}),
        )
        .await;
    assert_eq!(requested.status, 201, "{}", requested.body);
    let token = requested.body["status"]["token"].as_str().unwrap();
    let user = whoami(&s.with_token(token)).await.unwrap();
    assert_eq!(user["username"], "system:serviceaccount:builds:builder");
    assert_eq!(user["uid"], uid.as_str());
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:builds",
            "system:authenticated"
        ])
    );
    let credential = user["extra"]["authentication.kubernetes.io/credential-id"][0]
        .as_str()
        .unwrap();
    assert!(credential.starts_with("JTI="), "{credential}");
    // The token names a live account: deleting it ends the token.
    let deleted = admin
        .request(
            reqwest::Method::DELETE,
            "/api/v1/namespaces/builds/serviceaccounts/builder",
            None,
            "",
        )
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_unauthorized(&s.with_token(token).get("/api/v1/namespaces").await);
}

#[tokio::test]
async fn an_expired_or_foreign_service_account_token_is_a_401() {
    let s = Secure::start(SecurityOptions::default(), "").await;
    let uid = service_account(&s, "builds", "builder").await;
    let issuer = "https://kubernetes.default.svc.cluster.local";
    // Tokens as TokenRequest makes them (`claims.go`), signed with the server's key, at
    // chosen times: the clock is the only difference between them.
    let token = |issued: i64, expires: i64, audience: &str| {
        s.pki()
            .sign_jwt(&json!({
                "aud": [audience], "exp": expires, "iat": issued, "iss": issuer,
                "jti": "6f9d9e4c-2a1b-4c55-9f43-2f0f8b1e7c11",
                "kubernetes.io": {"namespace": "builds",
                                  "serviceaccount": {"name": "builder", "uid": uid}},
                "nbf": issued, "sub": "system:serviceaccount:builds:builder",
            }))
            .unwrap()
    };
    let now = unix_now();
    let live = token(now - 60, now + 600, issuer);
    assert_eq!(
        whoami(&s.with_token(&live)).await.unwrap()["username"],
        "system:serviceaccount:builds:builder"
    );
    // Expired beyond the minute of leeway (go-jose's `DefaultLeeway`).
    let expired = token(now - 7200, now - 120, issuer);
    assert_unauthorized(&s.with_token(&expired).get("/api/v1/namespaces").await);
    // For another audience.
    let elsewhere = token(now - 60, now + 600, "https://vault.example");
    assert_unauthorized(&s.with_token(&elsewhere).get("/api/v1/namespaces").await);
    // Signed by another cluster's key.
    let foreign = Pki::new()
        .sign_jwt(&json!({"iss": issuer, "exp": now + 600, "aud": [issuer],
                          "sub": "system:serviceaccount:builds:builder"}))
        .unwrap();
    assert_unauthorized(&s.with_token(&foreign).get("/api/v1/namespaces").await);
    // TokenReview says why, in upstream's words.
    let review = s
        .admin()
        .post(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                    "spec": {"token": expired}}),
        )
        .await;
    assert_eq!(
        review.body["status"]["error"],
        "[invalid bearer token, service account token has expired]"
    );
}

#[tokio::test]
async fn impersonation_headers_make_the_request_the_impersonated_users() {
    let s = Secure::start(SecurityOptions::default(), "").await;
    let admin = s.admin();
    let as_jane = admin
        .request_with_headers(
            reqwest::Method::POST,
            WHOAMI,
            Some(
                br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#.to_vec(),
            ),
            "application/json",
            &[
                ("Impersonate-User", "jane"),
                ("Impersonate-Group", "developers"),
                ("Impersonate-Group", "testers"),
                ("Impersonate-Uid", "1234"),
                ("Impersonate-Extra-Scopes", "view"),
                ("Impersonate-Extra-example.com%2Fteam", "blue"),
            ],
        )
        .await;
    assert_eq!(as_jane.status, 201, "{}", as_jane.body);
    assert_eq!(
        as_jane.body["status"]["userInfo"],
        json!({"username": "jane", "uid": "1234",
               "groups": ["developers", "testers", "system:authenticated"],
               "extra": {"scopes": ["view"], "example.com/team": ["blue"]}})
    );
    let as_account = admin
        .request_with_headers(
            reqwest::Method::POST,
            WHOAMI,
            Some(
                br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#.to_vec(),
            ),
            "application/json",
            &[("Impersonate-User", "system:serviceaccount:ns:sa")],
        )
        .await;
    assert_eq!(
        as_account.body["status"]["userInfo"],
        json!({"username": "system:serviceaccount:ns:sa",
               "groups": ["system:serviceaccounts", "system:serviceaccounts:ns",
                          "system:authenticated"]})
    );
    // A group without a user: a 400 in upstream's words.
    let bad = admin
        .request_with_headers(
            reqwest::Method::GET,
            "/api/v1/namespaces",
            None,
            "",
            &[("Impersonate-Group", "system:masters")],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert_eq!(bad.body["reason"], "BadRequest");
    assert_eq!(
        bad.body["message"],
        "requested [{Group  system:masters    }] without impersonating a user"
    );
}

#[tokio::test]
async fn garbage_credentials_and_huge_headers_get_a_4xx_never_a_5xx() {
    let s = Secure::start(
        SecurityOptions {
            anonymous_auth: false,
            ..SecurityOptions::default()
        },
        "secret,alice,1,dev\n",
    )
    .await;
    let big = "x".repeat(60 * 1024);
    let forged = {
        use base64::Engine as _;
        let part =
            |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        format!(
            "{}.{}.c2lnbmF0dXJl",
            part(&json!({"alg": "ES256"})),
            part(
                &json!({"iss": "https://kubernetes.default.svc.cluster.local",
                         "sub": "system:serviceaccount:default:default"})
            )
        )
    };
    let none_alg = format!("{}.", forged.rsplit_once('.').unwrap().0);
    let garbage: Vec<Vec<u8>> = vec![
        b"Bearer".to_vec(),
        b"Bearer ".to_vec(),
        b"Bearer  secret".to_vec(),
        format!("Bearer {big}").into_bytes(),
        format!("Bearer {forged}").into_bytes(),
        format!("Bearer {none_alg}").into_bytes(),
        b"Bearer ...".to_vec(),
        b"Bearer \xff\xfe\xfd".to_vec(),
        b"Negotiate YII=".to_vec(),
        b"\x80\x81 \x82".to_vec(),
        b"Bearer secret".to_vec(),
    ];
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(s.ca().as_bytes()).unwrap())
        .build()
        .unwrap();
    let url = format!("{}/api/v1/namespaces", s.server.url());
    for value in &garbage {
        let header = reqwest::header::HeaderValue::from_bytes(value).unwrap();
        let response = client
            .get(&url)
            .header(reqwest::header::AUTHORIZATION, header)
            .send()
            .await
            .unwrap();
        let shown = String::from_utf8_lossy(&value[..value.len().min(40)]).into_owned();
        if value.as_slice() == b"Bearer secret" {
            assert_eq!(response.status(), 200, "the real token works: {shown}");
        } else {
            assert_eq!(response.status(), 401, "{shown}");
        }
    }
    // Impersonation headers: huge values, many of them, or undecodable.
    let admin = s.admin();
    let huge = admin
        .request_with_headers(
            reqwest::Method::GET,
            "/api/v1/namespaces",
            None,
            "",
            &[("Impersonate-User", &big), ("Impersonate-Group", &big)],
        )
        .await;
    assert_eq!(huge.status, 200, "AlwaysAllow lets the admin be anyone");
    let many: Vec<(&str, &str)> = (0..80).map(|_| ("Impersonate-Extra-k", "v")).collect();
    let reply = admin
        .request_with_headers(reqwest::Method::GET, "/api/v1/namespaces", None, "", &many)
        .await;
    assert!(reply.status < 500, "{}", reply.status);
    let response = client
        .get(&url)
        .header("Impersonate-User", &big)
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        401,
        "impersonation needs authentication first"
    );
    let response = client
        .get(&url)
        .header("Impersonate-User", "x".repeat(2 << 20))
        .send()
        .await;
    if let Ok(response) = response {
        assert!(response.status().is_client_error(), "{}", response.status());
    }
    // The server is still there.
    assert_eq!(admin.get("/api/v1/namespaces").await.status, 200);
}

#[tokio::test]
async fn a_malformed_client_certificate_fails_the_handshake_and_the_server_goes_on() {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let s = Secure::start(SecurityOptions::default(), "").await;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let identity = s
        .server
        .security()
        .unwrap()
        .issue_client_identity("x", &[])
        .unwrap();
    let key_der = pem::parse(&identity.key_pem).unwrap().into_contents();
    let key = provider
        .key_provider
        .load_private_key(PrivateKeyDer::Pkcs8(key_der.into()))
        .unwrap();

    /// Always offers the same (malformed) certificate.
    #[derive(Debug)]
    struct Offer(Arc<rustls::sign::CertifiedKey>);
    impl rustls::client::ResolvesClientCert for Offer {
        fn resolve(
            &self,
            _: &[&[u8]],
            _: &[rustls::SignatureScheme],
        ) -> Option<Arc<rustls::sign::CertifiedKey>> {
            Some(Arc::clone(&self.0))
        }
        fn has_certs(&self) -> bool {
            true
        }
    }

    let mut roots = rustls::RootCertStore::empty();
    for block in pem::parse_many(s.ca()).unwrap() {
        roots
            .add(CertificateDer::from(block.into_contents()))
            .unwrap();
    }
    for garbage in [
        vec![0x30, 0x03, 0x02, 0x01, 0x00],
        b"not a certificate".to_vec(),
        Vec::new(),
    ] {
        let certified =
            rustls::sign::CertifiedKey::new(vec![CertificateDer::from(garbage)], Arc::clone(&key));
        let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots.clone())
            .with_client_cert_resolver(Arc::new(Offer(Arc::new(certified))));
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = tokio::net::TcpStream::connect(s.server.addr())
            .await
            .unwrap();
        let server_name = ServerName::try_from("127.0.0.1").unwrap();
        let answer = async {
            let mut tls = connector.connect(server_name, tcp).await?;
            tls.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .await?;
            let mut out = Vec::new();
            tls.read_to_end(&mut out).await?;
            Ok::<_, std::io::Error>(out)
        }
        .await;
        // rustls refuses it while checking the handshake signature with its key, as Go's
        // server refuses a certificate `x509.ParseCertificate` cannot read: an alert, no HTTP.
        let err = answer.expect_err("no HTTP answer over a refused handshake");
        assert!(err.to_string().contains("BadCertificate"), "{err}");
    }
    assert_eq!(s.admin().get("/version").await.status, 200);
}
