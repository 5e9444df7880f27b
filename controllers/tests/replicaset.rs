//! The ReplicaSet controller (and the garbage collector) against an in-process server (issue 6
//! item 1): pods created from the template with a controller reference, status counts,
//! scaling both ways with the scale-down order, adoption and release, cascading deletion.

use std::collections::BTreeMap;

use crate::common::{Cluster, wait_for};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Event, Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubemock_client::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kubemock_controllers::ManagerConfig;
use serde_json::json;

/// Without the scheduler and kubelet: the tests decide which pods are Ready.
async fn start(namespace: &str) -> (Cluster, Api<ReplicaSet>, Api<Pod>) {
    let config = ManagerConfig::from_list("*,-scheduler,-kubelet").expect("valid");
    let cluster = Cluster::start_with(config).await;
    cluster.namespace(namespace).await;
    let replicasets = Api::namespaced(cluster.client.clone(), namespace);
    let pods = Api::namespaced(cluster.client.clone(), namespace);
    (cluster, replicasets, pods)
}

fn replicaset(name: &str, replicas: i32) -> ReplicaSet {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name, "tier": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .expect("a replicaset")
}

/// The active pods of `rs` (by label), sorted by name.
async fn pods_of(pods: &Api<Pod>, rs: &str) -> Vec<Pod> {
    let mut list = pods
        .list(&ListParams::default().labels(&format!("app={rs}")))
        .await
        .expect("list pods")
        .items;
    list.retain(|p| p.metadata.deletion_timestamp.is_none());
    list.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    list
}

async fn wait_for_pods(pods: &Api<Pod>, rs: &str, count: usize) -> Vec<Pod> {
    wait_for(&format!("{count} pods of {rs}"), || async move {
        let list = pods_of(pods, rs).await;
        (list.len() == count).then_some(list)
    })
    .await
}

async fn wait_for_status(
    replicasets: &Api<ReplicaSet>,
    name: &str,
    check: impl Fn(&k8s_openapi::api::apps::v1::ReplicaSetStatus) -> bool,
) -> ReplicaSet {
    let check = &check;
    wait_for(&format!("the status of {name}"), || async move {
        let rs = replicasets.get(name).await.expect("get the replicaset");
        rs.status.as_ref().is_some_and(check).then_some(rs)
    })
    .await
}

async fn mark_ready(pods: &Api<Pod>, pod: &Pod) {
    let mut ready = pod.clone();
    ready.status = Some(PodStatus {
        phase: Some("Running".into()),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            last_transition_time: Some(Time(kubemock_client::resource::now())),
            ..PodCondition::default()
        }]),
        ..PodStatus::default()
    });
    pods.replace_status(
        pod.metadata.name.as_deref().expect("named"),
        &PostParams::default(),
        &ready,
    )
    .await
    .expect("mark the pod ready");
}

#[tokio::test]
async fn a_replicaset_creates_its_pods_and_counts_them_in_its_status() {
    let (cluster, replicasets, pods) = start("rs-create").await;
    let created = replicasets
        .create(&PostParams::default(), &replicaset("web", 3))
        .await
        .expect("create the replicaset");
    let list = wait_for_pods(&pods, "web", 3).await;
    for pod in &list {
        let name = pod.metadata.name.as_deref().expect("named");
        assert!(name.starts_with("web-"), "{name}");
        let owner = &pod.metadata.owner_references.as_ref().expect("owned")[0];
        assert_eq!(owner.kind, "ReplicaSet");
        assert_eq!(owner.uid, created.metadata.uid.clone().expect("uid"));
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));
        let labels: BTreeMap<String, String> = pod.metadata.labels.clone().expect("labels");
        assert_eq!(labels.get("tier").map(String::as_str), Some("web"));
    }
    let rs = wait_for_status(&replicasets, "web", |s| {
        s.replicas == 3 && s.fully_labeled_replicas == Some(3)
    })
    .await;
    let status = rs.status.expect("status");
    assert_eq!(status.observed_generation, Some(1));
    assert_eq!(status.ready_replicas, None);

    mark_ready(&pods, &list[0]).await;
    mark_ready(&pods, &list[1]).await;
    wait_for_status(&replicasets, "web", |s| {
        s.ready_replicas == Some(2) && s.available_replicas == Some(2)
    })
    .await;

    // Events say what was done (SuccessfulCreate, as kube-controller-manager writes them).
    let events: Api<Event> = Api::namespaced(cluster.client.clone(), "rs-create");
    let reasons = wait_for("three SuccessfulCreate events", || async {
        let list = events
            .list(&ListParams::default())
            .await
            .expect("events")
            .items;
        let created: Vec<Event> = list
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("SuccessfulCreate"))
            .collect();
        (created.len() == 3).then_some(created)
    })
    .await;
    assert!(
        reasons[0]
            .message
            .as_deref()
            .is_some_and(|m| m.starts_with("Created pod: web-"))
    );
    cluster.stop().await;
}

#[tokio::test]
async fn scaling_up_and_down_keeps_exactly_the_replicas_and_deletes_unready_pods_first() {
    let (cluster, replicasets, pods) = start("rs-scale").await;
    replicasets
        .create(&PostParams::default(), &replicaset("app", 2))
        .await
        .expect("create");
    let list = wait_for_pods(&pods, "app", 2).await;
    mark_ready(&pods, &list[1]).await;
    let keeper = list[1].metadata.name.clone().expect("named");

    let scale = |n: i32| Patch::Merge(json!({"spec": {"replicas": n}}));
    replicasets
        .patch("app", &PatchParams::default(), &scale(6))
        .await
        .expect("scale up");
    wait_for_pods(&pods, "app", 6).await;
    wait_for_status(&replicasets, "app", |s| {
        s.replicas == 6 && s.observed_generation == Some(2)
    })
    .await;
    replicasets
        .patch("app", &PatchParams::default(), &scale(1))
        .await
        .expect("scale down");
    let left = wait_for_pods(&pods, "app", 1).await;
    assert_eq!(
        left[0].metadata.name.as_deref(),
        Some(keeper.as_str()),
        "the ready pod stays"
    );
    let rs = wait_for_status(&replicasets, "app", |s| s.replicas == 1).await;
    assert_eq!(rs.status.and_then(|s| s.ready_replicas), Some(1));
    // Never more than asked: the pod count stays at 1.
    assert_eq!(pods_of(&pods, "app").await.len(), 1);
    cluster.stop().await;
}

#[tokio::test]
async fn orphans_are_adopted_nonmatching_pods_released_and_deletion_cascades() {
    let (cluster, replicasets, pods) = start("rs-adopt").await;
    // Bound to a node: if the controller's first sync does not see the orphan yet, it creates
    // two pods, then adopts the orphan and deletes one of the three. Unassigned pods rank
    // first for deletion (upstream `pkg/controller/controller_utils.go`, `ActivePodsWithRanks`),
    // so the orphan stays instead of a coin toss between pods of the same second.
    let orphan: Pod = serde_json::from_value(json!({
        "metadata": {"name": "orphan", "labels": {"app": "adopter"}},
        "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "nginx"}]}
    }))
    .expect("a pod");
    pods.create(&PostParams::default(), &orphan)
        .await
        .expect("create the orphan");
    let rs = replicasets
        .create(&PostParams::default(), &replicaset("adopter", 2))
        .await
        .expect("create");
    let list = wait_for_pods(&pods, "adopter", 2).await;
    let adopted = list
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some("orphan"))
        .expect("the orphan is one of the two");
    wait_for("the orphan to be adopted", || async {
        let pod = pods.get("orphan").await.expect("get");
        pod.metadata
            .owner_references
            .as_ref()
            .is_some_and(|r| r[0].uid == rs.metadata.uid.clone().unwrap_or_default())
            .then_some(())
    })
    .await;
    let _ = adopted;

    // Relabelled out of the selector: released, and replaced.
    pods.patch(
        "orphan",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "elsewhere"}}})),
    )
    .await
    .expect("relabel");
    wait_for("the pod to be released", || async {
        let pod = pods.get("orphan").await.expect("get");
        pod.metadata
            .owner_references
            .as_ref()
            .is_none_or(Vec::is_empty)
            .then_some(())
    })
    .await;
    wait_for_pods(&pods, "adopter", 2).await;

    // Deleting the ReplicaSet deletes its pods (garbage collector), not the released one.
    replicasets
        .delete("adopter", &DeleteParams::background())
        .await
        .expect("delete");
    wait_for_pods(&pods, "adopter", 0).await;
    assert!(pods.get_opt("orphan").await.expect("get").is_some());
    cluster.stop().await;
}
