//! The objects a fresh cluster has (issue 3, item 4).

use kubemock_conformance::Harness;
use serde_json::json;

#[tokio::test]
async fn system_namespaces_exist_active_with_the_kubernetes_finalizer() {
    let h = Harness::start().await;
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let reply = h.get(&format!("/api/v1/namespaces/{name}")).await;
        assert_eq!(reply.status, 200, "{name}");
        assert_eq!(reply.body["status"]["phase"], "Active");
        assert_eq!(reply.body["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(
            reply.body["metadata"]["labels"]["kubernetes.io/metadata.name"],
            name
        );
        let sa = h
            .get(&format!(
                "/api/v1/namespaces/{name}/serviceaccounts/default"
            ))
            .await;
        assert_eq!(sa.status, 200, "default ServiceAccount in {name}");
    }
}

#[tokio::test]
async fn the_kubernetes_service_has_a_cluster_ip() {
    let h = Harness::start().await;
    let reply = h
        .get("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(reply.status, 200);
    assert!(
        reply.body["spec"]["clusterIP"]
            .as_str()
            .unwrap()
            .parse::<std::net::Ipv4Addr>()
            .is_ok()
    );
    assert_eq!(reply.body["spec"]["ports"][0]["port"], 443);
}

#[tokio::test]
async fn a_new_namespace_gets_a_default_service_account() {
    let h = Harness::start().await;
    let ns = h.namespace("startup-sa").await;
    let reply = h
        .get(&format!("/api/v1/namespaces/{ns}/serviceaccounts/default"))
        .await;
    assert_eq!(reply.status, 200);
}
