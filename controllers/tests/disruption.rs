//! The disruption controller with the workload controllers against an in-process server: a
//! PodDisruptionBudget's status follows its pods (`pkg/controller/disruption/disruption.go`),
//! and the server's eviction, reading it, lets one pod go and refuses the next until the
//! Deployment has replaced the first (what `kubectl drain` relies on).

mod common;

use common::{Cluster, wait_for};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use kubemock_client::request::RequestBuilder;
use kubemock_client::{Api, ListParams, PostParams};
use serde_json::{Value, json};

async fn create_deployment(cluster: &Cluster, namespace: &str, name: &str, replicas: i32) {
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .expect("a deployment");
    Api::<Deployment>::namespaced(cluster.client.clone(), namespace)
        .create(&PostParams::default(), &deployment)
        .await
        .expect("create the deployment");
}

async fn create_budget(cluster: &Cluster, namespace: &str, name: &str, spec: Value) {
    let budget: PodDisruptionBudget =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))
            .expect("a budget");
    Api::<PodDisruptionBudget>::namespaced(cluster.client.clone(), namespace)
        .create(&PostParams::default(), &budget)
        .await
        .expect("create the budget");
}

/// Waits until the budget's status has these figures (and the condition that goes with
/// them); returns it.
async fn wait_status(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    (expected, desired, healthy, allowed): (i32, i32, i32, i32),
) -> PodDisruptionBudgetStatus {
    let api: Api<PodDisruptionBudget> = Api::namespaced(cluster.client.clone(), namespace);
    wait_for(
        &format!(
            "{name}: expected {expected}, desired {desired}, healthy {healthy}, allowed {allowed}"
        ),
        || async {
            let budget = api.get(name).await.expect("get the budget");
            let status = budget.status?;
            let condition = status
                .conditions
                .as_ref()?
                .iter()
                .find(|c| c.type_ == "DisruptionAllowed")?;
            let want = if allowed > 0 {
                ("True", "SufficientPods")
            } else {
                ("False", "InsufficientPods")
            };
            (status.observed_generation == budget.metadata.generation
                && status.expected_pods == expected
                && status.desired_healthy == desired
                && status.current_healthy == healthy
                && status.disruptions_allowed == allowed
                && (condition.status.as_str(), condition.reason.as_str()) == want)
                .then_some(status.clone())
        },
    )
    .await
}

/// `POST pods/NAME/eviction`: the HTTP code of the answer.
async fn evict(cluster: &Cluster, namespace: &str, pod: &str) -> u16 {
    let request = RequestBuilder::new(format!(
        "/api/v1/namespaces/{namespace}/pods/{pod}/eviction"
    ))
    .create(
        &PostParams::default(),
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod}})
            .to_string()
            .into_bytes(),
    );
    match cluster.client.request::<Value>(&request).await {
        Ok(_) => 201,
        Err(err) => err.code().unwrap_or(0),
    }
}

async fn pods(cluster: &Cluster, namespace: &str, app: &str) -> Vec<Pod> {
    Api::<Pod>::namespaced(cluster.client.clone(), namespace)
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .expect("list pods")
        .items
}

async fn create_pod(cluster: &Cluster, namespace: &str, name: &str, app: &str) {
    let pod: Pod =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
        .expect("a pod");
    Api::<Pod>::namespaced(cluster.client.clone(), namespace)
        .create(&PostParams::default(), &pod)
        .await
        .expect("create the pod");
}

#[tokio::test]
async fn a_budget_follows_its_pods_and_evictions_respect_it() {
    let cluster = Cluster::start().await;
    let ns = "disruption";
    cluster.namespace(ns).await;
    // Pods nobody replaces, so that what the budget allows depends on evictions alone.
    for name in ["db-0", "db-1", "db-2"] {
        create_pod(&cluster, ns, name, "db").await;
    }
    create_budget(
        &cluster,
        ns,
        "db",
        json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}}),
    )
    .await;
    wait_status(&cluster, ns, "db", (3, 2, 3, 1)).await;

    // One pod may go; the budget is charged at once, so the next is refused.
    assert_eq!(evict(&cluster, ns, "db-0").await, 201);
    assert_eq!(
        evict(&cluster, ns, "db-1").await,
        429,
        "the budget allows one disruption"
    );
    let status = wait_status(&cluster, ns, "db", (2, 2, 2, 0)).await;
    assert!(
        status.disrupted_pods.unwrap_or_default().is_empty(),
        "db-0 is gone"
    );

    // A new ready pod gives the budget room again.
    create_pod(&cluster, ns, "db-3", "db").await;
    wait_status(&cluster, ns, "db", (3, 2, 3, 1)).await;
    assert_eq!(evict(&cluster, ns, "db-1").await, 201);
    cluster.stop().await;
}

#[tokio::test]
async fn a_deployment_replaces_an_evicted_pod_and_its_budget_recovers() {
    let cluster = Cluster::start().await;
    let ns = "disruption-deploy";
    cluster.namespace(ns).await;
    create_deployment(&cluster, ns, "web", 3).await;
    create_budget(
        &cluster,
        ns,
        "web",
        json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}),
    )
    .await;
    wait_status(&cluster, ns, "web", (3, 2, 3, 1)).await;
    let victim = pods(&cluster, ns, "web").await[0]
        .metadata
        .name
        .clone()
        .expect("named");
    assert_eq!(evict(&cluster, ns, &victim).await, 201);
    wait_for("the evicted pod replaced", || async {
        let names: Vec<String> = pods(&cluster, ns, "web")
            .await
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect();
        (names.len() == 3 && !names.contains(&victim)).then_some(())
    })
    .await;
    let status = wait_status(&cluster, ns, "web", (3, 2, 3, 1)).await;
    assert!(status.disrupted_pods.unwrap_or_default().is_empty());
    cluster.stop().await;
}

#[tokio::test]
async fn percentages_and_max_unavailable_count_against_the_controllers_scale() {
    let cluster = Cluster::start().await;
    let ns = "disruption-scale";
    cluster.namespace(ns).await;
    create_deployment(&cluster, ns, "api", 4).await;
    create_budget(
        &cluster,
        ns,
        "half",
        json!({"minAvailable": "50%", "selector": {"matchLabels": {"app": "api"}}}),
    )
    .await;
    wait_status(&cluster, ns, "half", (4, 2, 4, 2)).await;
    create_budget(
        &cluster,
        ns,
        "one",
        json!({"maxUnavailable": 1, "selector": {"matchLabels": {"app": "api"}}}),
    )
    .await;
    wait_status(&cluster, ns, "one", (4, 3, 4, 1)).await;
    // Two budgets over one pod: upstream's 500, nothing evicted.
    let pod = pods(&cluster, ns, "api").await[0]
        .metadata
        .name
        .clone()
        .expect("named");
    assert_eq!(evict(&cluster, ns, &pod).await, 500);

    // A bare pod has no controller to scale from: the budget fails safe.
    create_pod(&cluster, ns, "bare", "bare").await;
    create_budget(
        &cluster,
        ns,
        "bare",
        json!({"maxUnavailable": "10%", "selector": {"matchLabels": {"app": "bare"}}}),
    )
    .await;
    // Pods without a controller are left out of the expected count (upstream's unmanaged pods).
    wait_status(&cluster, ns, "bare", (0, 0, 1, 0)).await;
    cluster.stop().await;
}
