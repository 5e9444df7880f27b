//! The Endpoints and EndpointSlice controllers against an in-process server with the
//! scheduler and simulated kubelet (issue 6 item 8): a Service's endpoints follow the pods it
//! selects as they become Ready and go away, named target ports resolve per pod, unready
//! pods are listed apart, and a deleted Service takes its endpoints with it.

use std::time::Duration;

use crate::common::{Cluster, wait_for};
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kubemock_client::{Api, DeleteParams, ListParams, PostParams};
use kubemock_controllers::ManagerConfig;
use kubemock_controllers::kubelet::KubeletConfig;
use serde_json::{Value, json};

async fn create<K>(api: &Api<K>, value: Value) -> K
where
    K: kubemock_client::TypedResource,
{
    let object: K = serde_json::from_value(value).expect("a valid object");
    api.create(&PostParams::default(), &object)
        .await
        .expect("create")
}

fn web_pod(name: &str, port: i32) -> Value {
    json!({
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx",
                 "ports": [{"name": "http", "containerPort": port}]}]}
    })
}

fn web_service(extra: Value) -> Value {
    let mut spec = json!({"selector": {"app": "web"},
                          "ports": [{"name": "web", "port": 80, "targetPort": "http"}]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"metadata": {"name": "web", "labels": {"team": "a"}}, "spec": spec})
}

/// (ready, not ready) addresses as `ip:port` strings, sorted.
fn addresses(endpoints: &Endpoints) -> (Vec<String>, Vec<String>) {
    let (mut ready, mut not_ready) = (Vec::new(), Vec::new());
    for subset in endpoints.subsets.iter().flatten() {
        for port in subset.ports.iter().flatten() {
            for a in subset.addresses.iter().flatten() {
                ready.push(format!("{}:{}", a.ip, port.port));
            }
            for a in subset.not_ready_addresses.iter().flatten() {
                not_ready.push(format!("{}:{}", a.ip, port.port));
            }
        }
    }
    ready.sort();
    not_ready.sort();
    (ready, not_ready)
}

async fn slices_of(api: &Api<EndpointSlice>, service: &str) -> Vec<EndpointSlice> {
    api.list(&ListParams::default().labels(&format!("kubernetes.io/service-name={service}")))
        .await
        .expect("list slices")
        .items
}

fn pod_ip(pod: &Pod) -> Option<String> {
    pod.status.as_ref()?.pod_ip.clone()
}

#[tokio::test]
async fn a_services_endpoints_follow_its_ready_pods() {
    let cluster = Cluster::start().await;
    cluster.namespace("ep").await;
    let client = cluster.client.clone();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "ep");
    let services: Api<Service> = Api::namespaced(client.clone(), "ep");
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), "ep");
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "ep");

    // A Service without a selector gets no endpoints from the controllers.
    create(
        &services,
        json!({"metadata": {"name": "manual"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    create(&services, web_service(json!({}))).await;
    // No pods yet: an Endpoints object without subsets, and one placeholder slice.
    let empty = wait_for("empty endpoints for web", || async {
        endpoints.get_opt("web").await.expect("get")
    })
    .await;
    assert_eq!(empty.subsets, None);
    assert_eq!(
        empty
            .metadata
            .labels
            .unwrap_or_default()
            .get("team")
            .map(String::as_str),
        Some("a"),
        "the Service's labels are copied"
    );
    let placeholder = wait_for("a placeholder slice", || async {
        let found = slices_of(&slices, "web").await;
        (found.len() == 1).then(|| found[0].clone())
    })
    .await;
    assert!(placeholder.endpoints.is_empty() && placeholder.ports.is_none());

    // Two pods listening on differently numbered ports named `http`.
    create(&pods, web_pod("a", 8080)).await;
    create(&pods, web_pod("b", 9090)).await;
    create(
        &pods,
        json!({"metadata": {"name": "other", "labels": {"app": "other"}},
               "spec": {"containers": [{"name": "app", "image": "nginx"}]}}),
    )
    .await;
    let (ip_a, ip_b) = wait_for("both pods to get an IP", || async {
        let a = pods.get("a").await.expect("get a");
        let b = pods.get("b").await.expect("get b");
        Some((pod_ip(&a)?, pod_ip(&b)?))
    })
    .await;
    let mut expected = vec![format!("{ip_a}:8080"), format!("{ip_b}:9090")];
    expected.sort();
    let found = wait_for("both pods in the endpoints", || async {
        let current = endpoints.get("web").await.expect("get");
        (addresses(&current).0 == expected).then_some(current)
    })
    .await;
    assert_eq!(
        found.subsets.as_ref().map(Vec::len),
        Some(2),
        "different ports, different subsets"
    );
    let target = found
        .subsets
        .iter()
        .flatten()
        .flat_map(|s| s.addresses.iter().flatten())
        .find(|a| a.ip == ip_a)
        .and_then(|a| a.target_ref.clone())
        .expect("a target reference");
    assert_eq!(
        (target.kind.as_deref(), target.name.as_deref()),
        (Some("Pod"), Some("a"))
    );
    // The slices: one per port set, every endpoint ready, owned by the Service.
    let current = wait_for("two slices with one endpoint each", || async {
        let found = slices_of(&slices, "web").await;
        (found.len() == 2 && found.iter().all(|s| s.endpoints.len() == 1)).then_some(found)
    })
    .await;
    for slice in &current {
        let endpoint = &slice.endpoints[0];
        let conditions = endpoint.conditions.clone().unwrap_or_default();
        assert_eq!(
            (conditions.ready, conditions.serving),
            (Some(true), Some(true))
        );
        assert!(endpoint.node_name.is_some());
        let owner = &slice.metadata.owner_references.clone().unwrap_or_default()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("Service", "web")
        );
        assert_eq!(slice.address_type, "IPv4");
    }
    assert!(
        endpoints.get_opt("manual").await.expect("get").is_none(),
        "a Service without a selector gets no Endpoints"
    );

    // A pod goes: it leaves the endpoints (after the kubelet finishes its deletion).
    pods.delete("b", &DeleteParams::default())
        .await
        .expect("delete b");
    wait_for("b to leave the endpoints", || async {
        let current = endpoints.get("web").await.expect("get");
        (addresses(&current).0 == [format!("{ip_a}:8080")]).then_some(())
    })
    .await;
    wait_for("b to leave the slices", || async {
        let found = slices_of(&slices, "web").await;
        let all: Vec<&str> = found
            .iter()
            .flat_map(|s| s.endpoints.iter())
            .flat_map(|e| e.addresses.iter().map(String::as_str))
            .collect();
        (all == [ip_a.as_str()] && found.len() == 1).then_some(())
    })
    .await;

    // The Service goes: its Endpoints and (by the garbage collector) its slices go too.
    services
        .delete("web", &DeleteParams::default())
        .await
        .expect("delete the service");
    wait_for("the endpoints and slices to go", || async {
        let gone = endpoints.get_opt("web").await.expect("get").is_none()
            && slices_of(&slices, "web").await.is_empty();
        gone.then_some(())
    })
    .await;
    cluster.stop().await;
}

#[tokio::test]
async fn unready_pods_are_listed_apart_unless_published() {
    // Pods run but never become Ready within the test.
    let config = ManagerConfig::default().with_kubelet(KubeletConfig {
        nodes: 1,
        ready_delay: Duration::from_secs(3600),
        ..KubeletConfig::default()
    });
    let cluster = Cluster::start_with(config).await;
    cluster.namespace("unready").await;
    let client = cluster.client.clone();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "unready");
    let services: Api<Service> = Api::namespaced(client.clone(), "unready");
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), "unready");
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "unready");
    create(&pods, web_pod("a", 8080)).await;
    create(&services, web_service(json!({}))).await;
    let ip = wait_for("the pod to run", || async {
        pod_ip(&pods.get("a").await.expect("get"))
    })
    .await;
    wait_for("the pod in notReadyAddresses", || async {
        let current = endpoints.get_opt("web").await.expect("get")?;
        (addresses(&current) == (vec![], vec![format!("{ip}:8080")])).then_some(())
    })
    .await;
    wait_for("a not-ready endpoint in the slice", || async {
        let found = slices_of(&slices, "web").await;
        let conditions = found.first()?.endpoints.first()?.conditions.clone()?;
        (conditions
            == k8s_openapi::api::discovery::v1::EndpointConditions {
                ready: Some(false),
                serving: Some(false),
                terminating: Some(false),
            })
        .then_some(())
    })
    .await;

    // publishNotReadyAddresses: listed as ready.
    let mut service = services.get("web").await.expect("get");
    if let Some(spec) = service.spec.as_mut() {
        spec.publish_not_ready_addresses = Some(true);
    }
    services
        .replace("web", &PostParams::default(), &service)
        .await
        .expect("update the service");
    wait_for("the pod in addresses", || async {
        let current = endpoints.get("web").await.expect("get");
        (addresses(&current) == (vec![format!("{ip}:8080")], vec![])).then_some(())
    })
    .await;
    wait_for("a ready endpoint in the slice", || async {
        let found = slices_of(&slices, "web").await;
        let conditions = found.first()?.endpoints.first()?.conditions.clone()?;
        (conditions.ready == Some(true)).then_some(())
    })
    .await;
    cluster.stop().await;
}
