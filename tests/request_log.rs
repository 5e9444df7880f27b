//! The request log's Rust example in docs/test-powers.md, as a test: a kube-rs
//! client tagged with `X-Kubemock-Test` writes, and the test asserts on what it sent by
//! reading `testing.kubemock.dev/v1` `requests` through kube-rs' dynamic API.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kubemock_apiserver::TestServer;

#[tokio::test]
async fn a_kube_rs_test_asserts_on_the_requests_its_client_sent() {
    let server = TestServer::start().await.expect("a server");
    let kubeconfig = Kubeconfig::from_yaml(&server.kubeconfig()).expect("a kubeconfig");
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("a config");
    // Every request of this client is tagged with the test's name.
    config.headers.push((
        "x-kubemock-test".parse().expect("a header name"),
        "my-test".parse().expect("a header value"),
    ));
    let client = kube::Client::try_from(config).expect("a client");

    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("settings".to_owned());
    configmaps
        .create(&PostParams::default(), &cm)
        .await
        .expect("created");
    let patch = serde_json::json!({"data": {"mode": "fast"}});
    configmaps
        .patch(
            "settings",
            &PatchParams::apply("my-controller"),
            &Patch::Apply(&serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "settings"}, "data": patch["data"],
            })),
        )
        .await
        .expect("applied");

    let requests: Api<DynamicObject> = Api::all_with(
        client,
        &ApiResource {
            group: "testing.kubemock.dev".into(),
            version: "v1".into(),
            api_version: "testing.kubemock.dev/v1".into(),
            kind: "Request".into(),
            plural: "requests".into(),
        },
    );
    let sent = requests
        .list(&ListParams::default().fields("test=my-test,verb=patch,fieldManager=my-controller"))
        .await
        .expect("the log");
    assert_eq!(sent.items.len(), 1, "exactly one PATCH by my-controller");
    assert_eq!(sent.items[0].data["name"], "settings");
    assert_eq!(sent.items[0].data["code"], 200);
    assert_eq!(
        sent.items[0].data["requestContentType"],
        "application/apply-patch+yaml"
    );
    let all = requests
        .list(&ListParams::default().labels("testing.kubemock.dev/test=my-test"))
        .await
        .expect("the log");
    let verbs: Vec<&str> = all
        .items
        .iter()
        .filter_map(|r| r.data["verb"].as_str())
        .collect();
    assert_eq!(verbs, ["create", "patch"]);
    server.stop().await.expect("stopped");
}
