//! Discovery over a real socket (docs/api-behaviour.md#discovery).

use kubemock_apiserver::TestServer;
use serde_json::Value;

const AGGREGATED_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

async fn get(server: &TestServer, path: &str, accept: &str) -> (reqwest::header::HeaderMap, Value) {
    let response = reqwest::Client::new()
        .get(format!("{}{path}", server.url()))
        .header("accept", accept)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200, "{path}");
    let headers = response.headers().clone();
    (headers, response.json().await.expect("json"))
}

#[tokio::test]
async fn s2_2_api_lists_v1_with_a_server_address() {
    let server = TestServer::start().await.unwrap();
    let (headers, body) = get(&server, "/api", "application/json, */*").await;
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(body["kind"], "APIVersions");
    assert_eq!(body["versions"], serde_json::json!(["v1"]));
    assert_eq!(
        body["serverAddressByClientCIDRs"][0]["clientCIDR"],
        "0.0.0.0/0"
    );
}

#[tokio::test]
async fn s2_3_apis_lists_groups_with_preferred_versions() {
    let server = TestServer::start().await.unwrap();
    let (_, body) = get(&server, "/apis", "application/json").await;
    assert_eq!(body["kind"], "APIGroupList");
    let groups = body["groups"].as_array().unwrap();
    let names: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
    for expected in [
        "apps",
        "batch",
        "coordination.k8s.io",
        "events.k8s.io",
        "rbac.authorization.k8s.io",
        "policy",
        "networking.k8s.io",
        "storage.k8s.io",
        "discovery.k8s.io",
        "autoscaling",
        "scheduling.k8s.io",
        "apiextensions.k8s.io",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let autoscaling = groups.iter().find(|g| g["name"] == "autoscaling").unwrap();
    assert_eq!(
        autoscaling["preferredVersion"]["groupVersion"],
        "autoscaling/v2"
    );
    assert_eq!(autoscaling["versions"].as_array().unwrap().len(), 2);

    let (_, apps) = get(&server, "/apis/apps", "application/json").await;
    assert_eq!(apps["kind"], "APIGroup");
    assert_eq!(apps["apiVersion"], "v1");
    assert_eq!(apps["preferredVersion"]["version"], "v1");
    let missing = reqwest::get(format!("{}/apis/nope.example.com", server.url()))
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn s2_4_resource_lists_carry_verbs_short_names_categories_and_subresources() {
    let server = TestServer::start().await.unwrap();
    let (_, body) = get(&server, "/apis/apps/v1", "application/json").await;
    assert_eq!(body["kind"], "APIResourceList");
    assert_eq!(body["groupVersion"], "apps/v1");
    let resources = body["resources"].as_array().unwrap();
    let find = |name: &str| {
        resources
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        find("deployments"),
        serde_json::json!({"name":"deployments","singularName":"deployment","namespaced":true,
            "kind":"Deployment",
            "verbs":["create","delete","deletecollection","get","list","patch","update","watch"],
            "shortNames":["deploy"],"categories":["all"]})
    );
    assert_eq!(
        find("deployments/scale"),
        serde_json::json!({"name":"deployments/scale","singularName":"","namespaced":true,
            "group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]})
    );
    assert_eq!(find("deployments/status")["kind"], "Deployment");
    assert!(find("deployments/status").get("group").is_none());

    let (_, core) = get(&server, "/api/v1", "application/json").await;
    let core = core["resources"].as_array().unwrap().clone();
    let pods = core.iter().find(|r| r["name"] == "pods").unwrap();
    assert_eq!(pods["shortNames"], serde_json::json!(["po"]));
    let namespaces = core.iter().find(|r| r["name"] == "namespaces").unwrap();
    assert_eq!(namespaces["namespaced"], false);
    assert!(core.iter().any(|r| r["name"] == "namespaces/finalize"));
    let missing = reqwest::get(format!("{}/apis/apps/v9", server.url()))
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn s2_5_aggregated_discovery_is_served_when_accepted() {
    let server = TestServer::start().await.unwrap();
    let (headers, body) = get(&server, "/apis", AGGREGATED_ACCEPT).await;
    assert_eq!(
        headers["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert_eq!(body["kind"], "APIGroupDiscoveryList");
    assert_eq!(body["apiVersion"], "apidiscovery.k8s.io/v2");
    let apps = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "apps")
        .unwrap();
    let deployments = apps["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "deployments")
        .unwrap();
    assert_eq!(deployments["scope"], "Namespaced");
    assert_eq!(deployments["responseKind"]["kind"], "Deployment");
    assert_eq!(deployments["singularResource"], "deployment");
    let scale = deployments["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["subresource"] == "scale")
        .unwrap();
    assert_eq!(scale["responseKind"]["group"], "autoscaling");
    assert_eq!(apps["versions"][0]["freshness"], "Current");

    let (headers, core) = get(&server, "/api", AGGREGATED_ACCEPT).await;
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .contains("as=APIGroupDiscoveryList")
    );
    let items = core["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert!(
        items[0]["metadata"].get("name").is_none(),
        "the core group has no name"
    );
}
