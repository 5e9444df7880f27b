//! Non-resource endpoints and route-level errors over a real socket (docs/api-behaviour.md#version-and-health,
//! docs/api-behaviour.md#version-and-health, #errors).

use kubemock_apiserver::TestServer;
use serde_json::Value;

async fn get(server: &TestServer, path: &str) -> reqwest::Response {
    reqwest::get(format!("{}{path}", server.url()))
        .await
        .expect("request")
}

#[tokio::test]
async fn s2_1_version_reports_1_32_with_string_fields() {
    let server = TestServer::start().await.expect("start");
    let response = get(&server, "/version?timeout=5s").await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["major"], "1");
    assert_eq!(body["minor"], "32");
    assert!(body["gitVersion"].as_str().unwrap().starts_with("v1.32."));
    let fields = body.as_object().unwrap();
    assert_eq!(fields.len(), 9);
    assert!(fields.values().all(Value::is_string));
    server.stop().await.expect("stop");
}

#[tokio::test]
async fn s2_8_health_endpoints_answer_ok() {
    let server = TestServer::start().await.expect("start");
    for path in ["/healthz", "/livez", "/readyz", "/readyz/ping"] {
        let response = get(&server, path).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(
            response.headers()["content-type"],
            "text/plain; charset=utf-8"
        );
        assert_eq!(response.text().await.unwrap(), "ok", "{path}");
    }
    let verbose = get(&server, "/livez?verbose").await.text().await.unwrap();
    assert!(verbose.contains("[+]ping ok\n"), "{verbose}");
    assert!(verbose.ends_with("livez check passed\n"), "{verbose}");
    assert_eq!(get(&server, "/readyz/nonsense").await.status(), 404);
}

#[tokio::test]
async fn s9_2_unknown_paths_under_api_roots_get_a_status_and_elsewhere_plain_text() {
    let server = TestServer::start().await.expect("start");
    let response = get(&server, "/apis/nonsense.example.com/v1/things").await;
    assert_eq!(response.status(), 404);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        serde_json::json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"the server could not find the requested resource","reason":"NotFound",
            "details":{},"code":404})
    );
    let response = get(&server, "/nonsense").await;
    assert_eq!(response.status(), 404);
    assert_eq!(response.text().await.unwrap(), "404 page not found\n");
}

#[tokio::test]
async fn s1_2_a_method_a_route_does_not_serve_gets_405_status() {
    let server = TestServer::start().await.expect("start");
    let response = reqwest::Client::new()
        .post(format!("{}/version", server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["reason"], "MethodNotAllowed");
    assert_eq!(body["code"], 405);
}

#[tokio::test]
async fn test_server_stops_on_drop_and_its_kubeconfig_points_at_it() {
    let server = TestServer::start().await.expect("start");
    let url = server.url().to_owned();
    let kubeconfig = server.kubeconfig();
    assert!(
        kubeconfig.contains(&format!("server: {url}")),
        "{kubeconfig}"
    );
    assert!(kubeconfig.contains("current-context: kubemock"));
    drop(server);
    // The listener closes once the server task has stopped.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while reqwest::get(format!("{url}/readyz")).await.is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "server still answers after drop"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
