//! The client against a secure kubemock (TLS, authentication): it connects with the kubeconfig
//! the server writes, as written (the CA and the admin's client certificate inline, read with
//! rustls), and with a bearer token; a wrong credential is the server's 401, a server it does
//! not trust a connection error.

use crate::common;

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kubemock_apiserver::{AuthorizationMode, SecurityOptions, ServerConfig, TestServer};
use kubemock_client::config::Auth;
use kubemock_client::{Api, Client, Config, PostParams};

use common::configmap;

/// A secure server without anonymous access, authorizing with `AlwaysAllow`, whose token file
/// knows `secret` as `alice`.
async fn secure_server(dir: &tempfile::TempDir) -> TestServer {
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "secret,alice,1001,dev\n").expect("write the token file");
    let options = SecurityOptions {
        anonymous_auth: false,
        token_auth_file: Some(tokens),
        ..SecurityOptions::default()
    };
    let config = ServerConfig {
        authorization_mode: AuthorizationMode::always_allow(),
        ..ServerConfig::secure(&options).expect("a secure configuration")
    };
    TestServer::start_with(config, kubemock_storage::Config::ephemeral())
        .await
        .expect("server starts")
}

#[tokio::test]
async fn the_written_kubeconfig_connects_with_the_ca_and_the_admin_certificate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = secure_server(&dir).await;
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, server.kubeconfig()).expect("write the kubeconfig");
    let config = Config::from_kubeconfig_file(&path).expect("the kubeconfig reads");
    assert!(config.cluster_url.starts_with("https://127.0.0.1:"));
    assert!(config.root_certificates.is_some() && config.client_identity.is_some());
    let client = Client::new(config).expect("client builds");
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &configmap("over-tls", "1"))
        .await
        .expect("create over TLS");
    assert_eq!(
        api.get("over-tls").await.expect("get").data,
        configmap("over-tls", "1").data
    );
}

#[tokio::test]
async fn a_bearer_token_authenticates_and_a_wrong_one_is_a_401() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = secure_server(&dir).await;
    let ca = server
        .security()
        .expect("secure")
        .server_ca_pem()
        .as_bytes()
        .to_vec();
    let with_token = |token: &str| {
        let mut config = Config::new(server.url());
        config.root_certificates = Some(ca.clone());
        config.auth = Auth::Bearer(token.to_owned());
        Api::<ConfigMap>::namespaced(Client::new(config).expect("client builds"), "default")
    };
    with_token("secret")
        .create(&PostParams::default(), &configmap("by-token", "1"))
        .await
        .expect("a known token authenticates");
    let err = with_token("wrong")
        .get("by-token")
        .await
        .expect_err("an unknown token");
    assert_eq!(err.code(), Some(401), "{err}");
    // No credentials at all: anonymous access is off.
    let mut config = Config::new(server.url());
    config.root_certificates = Some(ca.clone());
    let err = Api::<ConfigMap>::namespaced(Client::new(config).expect("client"), "default")
        .get("by-token")
        .await
        .expect_err("no credentials");
    assert_eq!(err.code(), Some(401), "{err}");
}

#[tokio::test]
async fn a_server_outside_the_trusted_cas_is_a_connection_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = secure_server(&dir).await;
    let other = Arc::new(kubemock_apiserver::pki::Pki::new());
    let mut config = Config::new(server.url());
    config.root_certificates = Some(other.ca_certificate_pem().expect("another CA").into_bytes());
    config.auth = Auth::Bearer("secret".to_owned());
    let err = Api::<ConfigMap>::namespaced(Client::new(config).expect("client"), "default")
        .get("anything")
        .await
        .expect_err("the server's certificate is not trusted");
    assert!(
        err.code().is_none(),
        "no answer from an untrusted server: {err}"
    );
}
