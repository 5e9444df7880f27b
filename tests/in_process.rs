//! The in-memory transport of the binary's in-process components (`kubemock::in_process`,
//! `kubemock_apiserver::LocalApi`): a request that skips the socket still meets the whole
//! request pipeline. Against a secure server (its own CA, anonymous access off, RBAC), a
//! client certificate authenticates in memory as over TLS, one from another CA or none is
//! upstream's 401. Against a plain one, a watch streams, the request log records the client's
//! own `User-Agent` and an origin-form path, a body is counted by its length against the
//! in-flight body limit (a body without a length would count as none), and a server that
//! does not answer within the request timeout is the client's `Timeout` error.

use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kubemock::in_process::InProcess;
use kubemock_apiserver::{
    AuthorizationMode, LocalApi, LocalSlot, SecurityOptions, ServerConfig, TestServer,
};
use kubemock_client::request::RequestBuilder;
use kubemock_client::{Api, Client, Config, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

/// Longest wait for a condition.
const WAIT: Duration = Duration::from_secs(20);

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}}))
        .expect("a ConfigMap")
}

/// `server` with `config` and a slot for its in-memory API; the API once it serves.
async fn start(config: ServerConfig) -> (TestServer, LocalApi) {
    let slot = LocalSlot::new();
    let ready = std::sync::Arc::new(tokio::sync::Notify::new());
    let config = ServerConfig {
        local: Some(slot.clone()),
        ready: Some(ready.clone()),
        ..config
    };
    let server = TestServer::start_with(config, kubemock_storage::Config::ephemeral())
        .await
        .expect("the server starts");
    tokio::time::timeout(WAIT, ready.notified())
        .await
        .expect("the server is ready in time");
    let api = slot
        .get()
        .expect("the server filled its slot before it was ready");
    (server, api)
}

/// A client of `server` that reaches it through `api`, in memory.
fn in_memory(server: &TestServer, api: &LocalApi, configure: impl FnOnce(&mut Config)) -> Client {
    let mut config = Config::new(server.url());
    config.local = Some(InProcess::config(api));
    configure(&mut config);
    Client::new(config).expect("a client")
}

/// POST of a SelfSubjectReview: who the server takes the client for.
async fn whoami(client: &Client) -> Result<Value, kubemock_client::Error> {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let request = RequestBuilder::new("/apis/authentication.k8s.io/v1/selfsubjectreviews".into())
        .create(&PostParams::default(), body.to_string().into_bytes());
    client.request(&request).await
}

#[tokio::test]
async fn a_client_certificate_authenticates_in_memory_as_over_tls() {
    let options = SecurityOptions {
        anonymous_auth: false,
        ..SecurityOptions::default()
    };
    let (server, api) =
        start(ServerConfig::secure(&options).expect("a secure configuration")).await;
    let security = server.security().expect("secure").clone();
    let alice = security
        .issue_client_identity("alice", &["system:masters"])
        .expect("a certificate");
    let presenting = api
        .presenting(alice.certificate_pem.as_bytes())
        .expect("a PEM chain");
    let client = in_memory(&server, &presenting, |_| {});
    let review = whoami(&client).await.expect("alice is authenticated");
    assert_eq!(
        review["status"]["userInfo"]["username"], "alice",
        "{review}"
    );
    let groups = review["status"]["userInfo"]["groups"].to_string();
    assert!(
        groups.contains("system:masters") && groups.contains("system:authenticated"),
        "{groups}"
    );
    // Her group may write, under RBAC.
    Api::<ConfigMap>::namespaced(client, "default")
        .create(&PostParams::default(), &configmap("by-alice"))
        .await
        .expect("alice creates");
    // A certificate no CA of the server signed, and no certificate: 401, as over TLS with
    // anonymous access off.
    let key = rcgen::KeyPair::generate().expect("a key");
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "alice");
    let stranger = params.self_signed(&key).expect("a self-signed certificate");
    let unknown = api
        .presenting(stranger.pem().as_bytes())
        .expect("a PEM chain");
    for api in [&unknown, &api] {
        let err = whoami(&in_memory(&server, api, |_| {}))
            .await
            .expect_err("not authenticated");
        assert_eq!(err.code(), Some(401), "{err}");
    }
    assert!(api.presenting(b"no PEM here").is_err());
    server.stop().await.expect("stops");
}

#[tokio::test]
async fn in_memory_requests_stream_watches_and_keep_their_headers_length_and_timeout() {
    // Bodies in flight: at most 512 KiB.
    let (server, api) = start(ServerConfig {
        authorization_mode: AuthorizationMode::always_allow(),
        max_request_body_bytes_inflight: 512 << 10,
        ..ServerConfig::default()
    })
    .await;
    // A body over the budget is the in-flight limit's 429: its length was counted (the
    // client sends none; the local API sets it, as the client's HTTP stack would).
    let big = serde_json::to_vec(&json!({"metadata": {"name": "big"},
        "data": {"k": "x".repeat(600 << 10)}}))
    .expect("JSON");
    let request = http::Request::post("http://kubernetes/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/json")
        .body(bytes::Bytes::from(big))
        .expect("a request");
    assert_eq!(api.call(request).await.status(), 429);
    let client = in_memory(&server, &api, |config| {
        config.user_agent = "in-memory-test/1.0".to_owned();
        config.timeout = Duration::from_millis(500);
    });
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let first = configmaps
        .create(&PostParams::default(), &configmap("first"))
        .await
        .expect("a create within the body limit");
    let version = first.metadata.resource_version.expect("a resourceVersion");
    let mut events = Box::pin(
        configmaps
            .watch(&WatchParams::default(), &version)
            .await
            .expect("a watch"),
    );
    configmaps
        .create(&PostParams::default(), &configmap("second"))
        .await
        .expect("a second create");
    let event = tokio::time::timeout(WAIT, events.next())
        .await
        .expect("an event in time")
        .expect("the stream goes on")
        .expect("an event");
    match event {
        WatchEvent::Added(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("second")),
        other => panic!("not the ADDED of the second: {other:?}"),
    }
    // The request log has the client's User-Agent, and the path as a request line has it.
    let log = RequestBuilder::new("/apis/testing.kubemock.dev/v1/requests".into())
        .list(
            &kubemock_client::ListParams::default()
                .fields("userAgent=in-memory-test/1.0,verb=create"),
        )
        .expect("a list request");
    let logged: Value = client.request(&log).await.expect("the request log");
    let paths: Vec<&str> = logged["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|r| r["path"].as_str())
        .collect();
    assert_eq!(
        paths, ["/api/v1/namespaces/default/configmaps"; 2],
        "{logged}"
    );
    // A server that takes longer than the request timeout: the client's Timeout (a create,
    // which is not retried).
    let fault = json!({"apiVersion": "testing.kubemock.dev/v1", "kind": "Fault",
        "metadata": {"name": "slow"},
        "spec": {"match": {"verbs": ["create"], "resource": "configmaps"},
            "action": {"latency": {"before": "3s"}}}});
    let request = RequestBuilder::new("/apis/testing.kubemock.dev/v1/faults".into())
        .create(&PostParams::default(), fault.to_string().into_bytes());
    client
        .request::<Value>(&request)
        .await
        .expect("the fault is created");
    let deadline = tokio::time::Instant::now() + WAIT;
    for attempt in 0.. {
        match configmaps
            .create(
                &PostParams::default(),
                &configmap(&format!("late-{attempt}")),
            )
            .await
        {
            Err(kubemock_client::Error::Timeout(timeout)) => {
                assert_eq!(timeout, Duration::from_millis(500));
                break;
            }
            other => assert!(
                tokio::time::Instant::now() < deadline,
                "no timeout: {other:?}"
            ),
        }
    }
    server.stop().await.expect("stops");
}
