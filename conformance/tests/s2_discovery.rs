//! docs/api-behaviour.md#discovery, #version-and-health: `/version`, legacy and aggregated discovery, health endpoints.

use kubemock_conformance::Harness;
use serde_json::{Value, json};

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

#[tokio::test]
async fn s2_1_version_reports_kubernetes_1_32() {
    let h = Harness::start().await;
    let reply = h.get("/version").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["major"], "1");
    assert_eq!(reply.body["minor"], "32");
    assert!(
        reply.body["gitVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("v1.32."))
    );
    for field in [
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "goVersion",
        "compiler",
        "platform",
    ] {
        assert!(reply.body[field].is_string(), "{field}");
    }
}

#[tokio::test]
async fn s2_2_and_s2_3_api_versions_groups_and_a_group() {
    let h = Harness::start().await;
    let api = h.get("/api").await;
    assert_eq!(api.body["kind"], "APIVersions");
    assert_eq!(api.body["versions"], json!(["v1"]));
    let apis = h.get("/apis").await;
    assert_eq!(apis.body["kind"], "APIGroupList");
    assert_eq!(apis.body["apiVersion"], "v1");
    let groups: Vec<&str> = apis.body["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    for group in [
        "apps",
        "batch",
        "autoscaling",
        "coordination.k8s.io",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
    ] {
        assert!(groups.contains(&group), "{group} in {groups:?}");
    }
    let autoscaling = h.get("/apis/autoscaling").await;
    assert_eq!(autoscaling.body["kind"], "APIGroup");
    assert_eq!(
        autoscaling.body["preferredVersion"],
        json!({"groupVersion": "autoscaling/v2", "version": "v2"})
    );
    assert_eq!(h.get("/apis/nope.example.com").await.status, 404);
}

#[tokio::test]
async fn s2_4_resource_lists_carry_verbs_short_names_categories_and_subresources() {
    let h = Harness::start().await;
    let apps = h.get("/apis/apps/v1").await;
    assert_eq!(apps.body["kind"], "APIResourceList");
    assert_eq!(apps.body["groupVersion"], "apps/v1");
    let find = |list: &Value, name: &str| -> Value {
        list["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} listed"))
    };
    let deployments = find(&apps.body, "deployments");
    assert_eq!(deployments["kind"], "Deployment");
    assert_eq!(deployments["namespaced"], true);
    assert_eq!(deployments["shortNames"], json!(["deploy"]));
    assert_eq!(deployments["categories"], json!(["all"]));
    assert_eq!(
        deployments["verbs"],
        json!([
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch"
        ])
    );
    let scale = find(&apps.body, "deployments/scale");
    assert_eq!(
        (scale["group"].clone(), scale["kind"].clone()),
        (json!("autoscaling"), json!("Scale"))
    );
    assert_eq!(
        find(&apps.body, "deployments/status")["verbs"],
        json!(["get", "patch", "update"])
    );
    let core = h.get("/api/v1").await;
    let namespaces = find(&core.body, "namespaces");
    assert_eq!(namespaces["namespaced"], false);
    assert_eq!(namespaces["shortNames"], json!(["ns"]));
    assert_eq!(find(&core.body, "pods/binding")["verbs"], json!(["create"]));
    assert_eq!(
        find(&core.body, "namespaces/finalize")["verbs"],
        json!(["update"])
    );
    assert_eq!(h.get("/apis/apps/v9").await.status, 404);
}

#[tokio::test]
async fn s2_5_aggregated_discovery_when_the_client_asks_for_it() {
    let h = Harness::start().await;
    for (path, expected_group) in [("/api", ""), ("/apis", "apps")] {
        let reply = h.get_accepting(path, AGGREGATED).await;
        assert_eq!(reply.status, 200);
        let content_type = reply
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        assert_eq!(
            content_type,
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        );
        assert_eq!(reply.body["kind"], "APIGroupDiscoveryList");
        assert_eq!(reply.body["apiVersion"], "apidiscovery.k8s.io/v2");
        let group = reply.body["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|g| g["metadata"]["name"].as_str().unwrap_or("") == expected_group)
            .cloned()
            .unwrap_or_else(|| panic!("group {expected_group:?} in {path}"));
        let resources = group["versions"][0]["resources"]
            .as_array()
            .expect("resources");
        assert!(!resources.is_empty());
        for resource in resources {
            assert!(resource["responseKind"]["kind"].is_string());
            assert!(matches!(
                resource["scope"].as_str(),
                Some("Namespaced" | "Cluster")
            ));
        }
    }
    // Without the aggregated media type: the legacy form.
    assert_eq!(h.get("/apis").await.body["kind"], "APIGroupList");
}

#[tokio::test]
async fn s2_8_health_endpoints_answer_ok_and_list_checks_when_verbose() {
    let h = Harness::start().await;
    for endpoint in ["/healthz", "/livez", "/readyz"] {
        let reply = h.get(endpoint).await;
        assert_eq!(reply.status, 200, "{endpoint}");
        assert_eq!(reply.body, json!("ok"));
        let verbose = h.get(&format!("{endpoint}?verbose")).await;
        let text = verbose.body.as_str().expect("text");
        assert!(text.contains("[+]ping ok"), "{text}");
        assert!(
            text.ends_with(&format!(
                "{} check passed\n",
                endpoint.trim_start_matches('/')
            )),
            "{text}"
        );
        assert_eq!(h.get(&format!("{endpoint}/ping")).await.status, 200);
    }
}
