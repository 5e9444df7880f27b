//! The disruption controller with the workload controllers against an in-process server: a
//! PodDisruptionBudget's status follows its pods (`pkg/controller/disruption/disruption.go`),
//! and the server's eviction, reading it, lets one pod go and refuses the next until the
//! Deployment has replaced the first (what `kubectl drain` relies on). Also upstream's events,
//! and the reset of a stale `DisruptionTarget` condition on a fake clock.

use std::time::Duration;

use crate::common::{Cluster, wait_for};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Pod, PodCondition};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubemock_client::request::RequestBuilder;
use kubemock_client::{Api, ListParams, Patch, PatchParams, PostParams};
use kubemock_controllers::ManagerConfig;
use kubemock_controllers::clock::FakeClock;
use kubemock_controllers::manager::DISRUPTION;
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

    // The pod two budgets select: upstream's warning at its next change names the first.
    Api::<Pod>::namespaced(cluster.client.clone(), ns)
        .patch(
            &pod,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"touched": "yes"}}})),
        )
        .await
        .expect("annotate the pod");
    let warned = wait_event(&cluster, ns, "MultiplePodDisruptionBudgets", &pod).await;
    assert_eq!(
        warned.message.as_deref(),
        Some(
            format!(
                "Pod \"{ns}\"/\"{pod}\" matches multiple PodDisruptionBudgets.  Chose \"half\" arbitrarily."
            )
            .as_str()
        )
    );
    assert_eq!(warned.type_.as_deref(), Some("Warning"));

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
    let unmanaged = wait_event(&cluster, ns, "UnmanagedPods", "bare").await;
    assert_eq!(
        unmanaged.message.as_deref(),
        Some(
            "Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:\
             map[string]string{app: bare,},MatchExpressions:[]LabelSelectorRequirement{},}) were \
             found to be unmanaged. As a result, the status of the PDB cannot be calculated \
             correctly, which may result in undefined behavior. To account for these pods please \
             set \".spec.minAvailable\" field of the PDB to an integer value."
        )
    );
    // A budget that selects nothing.
    create_budget(
        &cluster,
        ns,
        "none",
        json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "nothing"}}}),
    )
    .await;
    let none = wait_event(&cluster, ns, "NoPods", "none").await;
    assert_eq!(
        (none.type_.as_deref(), none.message.as_deref()),
        (Some("Normal"), Some("No matching pods found"))
    );
    assert_eq!(
        none.source.and_then(|s| s.component).as_deref(),
        Some("controllermanager")
    );
    cluster.stop().await;
}

/// Waits for an event of `reason` about the object `name`; returns it.
async fn wait_event(cluster: &Cluster, namespace: &str, reason: &str, name: &str) -> Event {
    let events: Api<Event> = Api::namespaced(cluster.client.clone(), namespace);
    wait_for(&format!("a {reason} event about {name}"), || async {
        events
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .find(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.involved_object.name.as_deref() == Some(name)
            })
    })
    .await
}

/// `syncStalePodDisruption`: a pod an eviction marked `DisruptionTarget` but that was not
/// deleted gets the condition back to False two minutes (of the controllers' clock) later;
/// the kubelet's own condition is never stale.
#[tokio::test]
async fn a_stale_disruption_target_condition_is_reset_after_two_minutes() {
    let clock = FakeClock::new(kubemock_apimachinery::time::whole_seconds(Timestamp::now()));
    // The disruption controller alone: no kubelet rewrites the pods' status meanwhile.
    let mut config = ManagerConfig::default().with_clock(clock.clone());
    config.enabled = [DISRUPTION.to_owned()].into();
    let cluster = Cluster::start_with(config).await;
    let ns = "disruption-stale";
    cluster.namespace(ns).await;
    let api: Api<Pod> = Api::namespaced(cluster.client.clone(), ns);
    let marked_at = clock.now();
    for (name, reason) in [
        ("evicted", "EvictionByEvictionAPI"),
        ("by-kubelet", "TerminationByKubelet"),
    ] {
        create_pod(&cluster, ns, name, "stale").await;
        // What an eviction writes before its delete, as if the delete then failed.
        let mut pod = api.get(name).await.expect("get the pod");
        let status = pod.status.get_or_insert_with(Default::default);
        status
            .conditions
            .get_or_insert_with(Vec::new)
            .push(PodCondition {
                type_: "DisruptionTarget".to_owned(),
                status: "True".to_owned(),
                reason: Some(reason.to_owned()),
                message: Some("marked".to_owned()),
                last_transition_time: Some(Time(marked_at)),
                ..PodCondition::default()
            });
        api.replace_status(name, &PostParams::default(), &pod)
            .await
            .expect("mark the pod");
    }
    let target = |pod: &Pod| {
        pod.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == "DisruptionTarget")
            .cloned()
    };
    // Stale at 120 s, not before: the reset's transition time says when it was made.
    clock.advance(Duration::from_secs(119));
    clock.advance(Duration::from_secs(1));
    let reset = wait_for("the stale condition reset", || async {
        let pod = api.get("evicted").await.ok()?;
        target(&pod).filter(|c| c.status == "False")
    })
    .await;
    assert_eq!(reset.reason, None);
    assert_eq!(reset.message, None);
    assert_eq!(
        reset.last_transition_time.map(|t| t.0),
        Some(marked_at + Duration::from_secs(120))
    );
    let kubelets = api.get("by-kubelet").await.expect("get");
    assert_eq!(target(&kubelets).map(|c| c.status).as_deref(), Some("True"));
    cluster.stop().await;
}
