//! The Deployment controller with the ReplicaSet controller and the garbage collector against
//! an in-process server (issue 6 item 2 and acceptance): a Deployment becomes Available, a
//! rolling update stays within maxSurge and maxUnavailable at every observed moment,
//! scaling, rollback, Recreate, pause and resume, history cleanup, and the three cascading
//! deletions. The scheduler and the simulated kubelet make the pods Running and Ready.

use crate::common::{Cluster, wait_for};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet};
use k8s_openapi::api::core::v1::{Event, Pod};
use kubemock_client::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

struct Fixture {
    cluster: Cluster,
    deployments: Api<Deployment>,
    replicasets: Api<ReplicaSet>,
    pods: Api<Pod>,
}

impl Fixture {
    async fn start(namespace: &str) -> Self {
        let cluster = Cluster::start().await;
        cluster.namespace(namespace).await;
        Fixture {
            deployments: Api::namespaced(cluster.client.clone(), namespace),
            replicasets: Api::namespaced(cluster.client.clone(), namespace),
            pods: Api::namespaced(cluster.client.clone(), namespace),
            cluster,
        }
    }

    async fn stop(self) {
        self.cluster.stop().await;
    }

    async fn create(&self, name: &str, replicas: i32, image: &str, strategy: Value) -> Deployment {
        let deployment: Deployment = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                "strategy": strategy,
                "template": {"metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": image}]}}}
        }))
        .expect("a deployment");
        self.deployments
            .create(&PostParams::default(), &deployment)
            .await
            .expect("create the deployment")
    }

    async fn patch(&self, name: &str, patch: Value) {
        self.deployments
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .expect("patch the deployment");
    }

    async fn set_image(&self, name: &str, image: &str) {
        self.patch(
            name,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}),
        )
        .await;
    }

    /// Waits until `kubectl rollout status` would succeed: the rollout of the current
    /// generation is complete and every pod available.
    async fn wait_rolled_out(&self, name: &str) -> Deployment {
        wait_for(&format!("the rollout of {name}"), || async move {
            let d = self.deployments.get(name).await.expect("get");
            let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            let status = d.status.clone().unwrap_or_default();
            let n = |v: Option<i32>| v.unwrap_or(0);
            let done = status.observed_generation >= d.metadata.generation
                && n(status.updated_replicas) == want
                && n(status.replicas) == want
                && n(status.available_replicas) == want
                && condition(&status, "Progressing")
                    .is_some_and(|c| c.1 == "NewReplicaSetAvailable");
            let pods = self.active_pods(name).await;
            (done && pods.len() == usize::try_from(want).unwrap_or(0)).then_some(d)
        })
        .await
    }

    async fn active_pods(&self, app: &str) -> Vec<Pod> {
        let mut list = self
            .pods
            .list(&ListParams::default().labels(&format!("app={app}")))
            .await
            .expect("list pods")
            .items;
        list.retain(|p| p.metadata.deletion_timestamp.is_none());
        list
    }

    async fn replicasets_of(&self, app: &str) -> Vec<ReplicaSet> {
        let mut list = self
            .replicasets
            .list(&ListParams::default().labels(&format!("app={app}")))
            .await
            .expect("list replicasets")
            .items;
        list.sort_by_key(revision);
        list
    }
}

fn condition(status: &DeploymentStatus, kind: &str) -> Option<(String, String)> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default()))
}

fn revision(rs: &ReplicaSet) -> i64 {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("deployment.kubernetes.io/revision"))
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn image_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

fn ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn rs_size(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// The (manager, subresource) pairs of an object's managedFields, in order.
fn managers(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Vec<(&str, &str)> {
    meta.managed_fields
        .iter()
        .flatten()
        .map(|entry| {
            (
                entry.manager.as_deref().unwrap_or(""),
                entry.subresource.as_deref().unwrap_or(""),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_deployment_becomes_available_with_ready_pods_revision_and_events() {
    let f = Fixture::start("dep-available").await;
    f.create("web", 3, "nginx:1", json!({})).await;
    let d = f.wait_rolled_out("web").await;
    let status = d.status.clone().expect("status");
    assert_eq!(
        condition(&status, "Available"),
        Some(("True".into(), "MinimumReplicasAvailable".into()))
    );
    assert_eq!(status.ready_replicas, Some(3));
    assert_eq!(status.unavailable_replicas, None);
    assert_eq!(
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("deployment.kubernetes.io/revision"))
            .map(String::as_str),
        Some("1")
    );
    let sets = f.replicasets_of("web").await;
    assert_eq!(sets.len(), 1);
    let rs = &sets[0];
    let hash = rs
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("pod-template-hash"))
        .cloned()
        .expect("hashed");
    assert_eq!(
        rs.metadata.name.as_deref(),
        Some(format!("web-{hash}").as_str())
    );
    assert_eq!(revision(rs), 1);
    // Each component writes as its upstream binary's user agent, so the server names the
    // writers as a real cluster does (client-go's `DefaultKubernetesUserAgent`; the field
    // manager is the agent up to its first `/`).
    assert_eq!(
        managers(&rs.metadata),
        [
            ("kube-controller-manager", ""),
            ("kube-controller-manager", "status")
        ]
    );
    for pod in f.active_pods("web").await {
        assert_eq!(
            pod.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("pod-template-hash")),
            Some(&hash)
        );
        assert!(ready(&pod));
        assert_eq!(
            managers(&pod.metadata),
            [("kube-controller-manager", ""), ("kubelet", "status")]
        );
    }
    let events: Api<Event> = Api::namespaced(f.cluster.client.clone(), "dep-available");
    let scaled = wait_for("a ScalingReplicaSet event", || async {
        events
            .list(&ListParams::default())
            .await
            .expect("events")
            .items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("ScalingReplicaSet"))
    })
    .await;
    assert_eq!(
        scaled.message.as_deref(),
        Some(format!("Scaled up replica set web-{hash} from 0 to 3").as_str())
    );
    f.stop().await;
}

#[tokio::test]
async fn a_rolling_update_stays_within_surge_and_unavailability_at_every_moment() {
    let f = Fixture::start("dep-rolling").await;
    let strategy =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}});
    f.create("web", 4, "nginx:1", strategy).await;
    f.wait_rolled_out("web").await;
    f.set_image("web", "nginx:2").await;
    let (replicas, surge, unavailable) = (4, 1, 1);
    let mut observations = 0;
    wait_for("the rollout of nginx:2 within bounds", || {
        observations += 1;
        let f = &f;
        async move {
            let pods = f.active_pods("web").await;
            let available = pods.iter().filter(|p| ready(p)).count();
            assert!(
                pods.len() <= replicas + surge,
                "{} pods, more than {replicas} + {surge}",
                pods.len()
            );
            assert!(
                available >= replicas - unavailable,
                "only {available} available pods"
            );
            let done =
                pods.len() == replicas && pods.iter().all(|p| image_of(p) == "nginx:2" && ready(p));
            done.then_some(())
        }
    })
    .await;
    assert!(observations > 1, "the rollout was observed in progress");
    let d = f.wait_rolled_out("web").await;
    assert_eq!(
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("deployment.kubernetes.io/revision"))
            .map(String::as_str),
        Some("2")
    );
    let sets = f.replicasets_of("web").await;
    assert_eq!(sets.iter().map(rs_size).collect::<Vec<_>>(), vec![0, 4]);
    assert_eq!(sets.iter().map(revision).collect::<Vec<_>>(), vec![1, 2]);
    f.stop().await;
}

#[tokio::test]
async fn scaling_rollback_pause_and_history_cleanup() {
    let f = Fixture::start("dep-scale").await;
    f.create("web", 3, "nginx:1", json!({})).await;
    f.wait_rolled_out("web").await;
    for replicas in [10, 2] {
        f.patch("web", json!({"spec": {"replicas": replicas}}))
            .await;
        f.wait_rolled_out("web").await;
    }
    // A new template, then back to the first one (what `kubectl rollout undo` writes): the
    // first ReplicaSet is reused with the next revision, its old one in the history.
    f.set_image("web", "nginx:2").await;
    f.wait_rolled_out("web").await;
    f.set_image("web", "nginx:1").await;
    f.wait_rolled_out("web").await;
    let sets = f.replicasets_of("web").await;
    assert_eq!(sets.len(), 2, "no third ReplicaSet for a known template");
    let current = sets.last().expect("two");
    assert_eq!(revision(current), 3);
    assert_eq!(
        current
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("deployment.kubernetes.io/revision-history"))
            .map(String::as_str),
        Some("1")
    );
    assert!(
        f.active_pods("web")
            .await
            .iter()
            .all(|p| image_of(p) == "nginx:1")
    );

    // Paused: a template change creates nothing; resumed, it rolls out.
    f.patch("web", json!({"spec": {"paused": true}})).await;
    f.set_image("web", "nginx:3").await;
    let d = wait_for("the paused condition", || async {
        let d = f.deployments.get("web").await.expect("get");
        let status = d.status.clone().unwrap_or_default();
        (condition(&status, "Progressing") == Some(("Unknown".into(), "DeploymentPaused".into()))
            && status.observed_generation == d.metadata.generation)
            .then_some(d)
    })
    .await;
    assert!(d.spec.and_then(|s| s.paused).unwrap_or(false));
    assert_eq!(f.replicasets_of("web").await.len(), 2);
    // revisionHistoryLimit 0 keeps only the current ReplicaSet once rolled out.
    f.patch(
        "web",
        json!({"spec": {"paused": false, "revisionHistoryLimit": 0}}),
    )
    .await;
    f.wait_rolled_out("web").await;
    let sets = wait_for("the old ReplicaSets to be cleaned up", || async {
        let sets = f.replicasets_of("web").await;
        (sets.len() == 1).then_some(sets)
    })
    .await;
    assert_eq!(revision(&sets[0]), 4);
    assert!(
        f.active_pods("web")
            .await
            .iter()
            .all(|p| image_of(p) == "nginx:3")
    );
    f.stop().await;
}

#[tokio::test]
async fn recreate_removes_every_old_pod_before_creating_new_ones() {
    let f = Fixture::start("dep-recreate").await;
    f.create("db", 3, "postgres:1", json!({"type": "Recreate"}))
        .await;
    f.wait_rolled_out("db").await;
    f.set_image("db", "postgres:2").await;
    wait_for("the recreate rollout", || {
        let f = &f;
        async move {
            let pods = f.active_pods("db").await;
            let images: std::collections::BTreeSet<String> = pods.iter().map(image_of).collect();
            assert!(images.len() <= 1, "old and new pods at once: {images:?}");
            (pods.len() == 3 && images.contains("postgres:2") && pods.iter().all(ready))
                .then_some(())
        }
    })
    .await;
    f.wait_rolled_out("db").await;
    f.stop().await;
}

#[tokio::test]
async fn background_foreground_and_orphan_deletion_of_deployments() {
    let f = Fixture::start("dep-delete").await;
    for name in ["bg", "fg", "orphan"] {
        f.create(name, 2, "nginx:1", json!({})).await;
    }
    for name in ["bg", "fg", "orphan"] {
        f.wait_rolled_out(name).await;
    }
    f.deployments
        .delete("bg", &DeleteParams::background())
        .await
        .expect("delete");
    f.deployments
        .delete("fg", &DeleteParams::foreground())
        .await
        .expect("delete");
    f.deployments
        .delete("orphan", &DeleteParams::orphan())
        .await
        .expect("delete");
    for name in ["bg", "fg"] {
        let f = &f;
        wait_for(
            &format!("{name} and everything it owned to go"),
            || async move {
                let gone = f.deployments.get_opt(name).await.expect("get").is_none()
                    && f.replicasets_of(name).await.is_empty()
                    && f.active_pods(name).await.is_empty();
                gone.then_some(())
            },
        )
        .await;
    }
    wait_for("the orphaning deployment to go", || async {
        f.deployments
            .get_opt("orphan")
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await;
    let sets = f.replicasets_of("orphan").await;
    assert_eq!(sets.len(), 1, "the ReplicaSet stays");
    assert!(
        sets[0]
            .metadata
            .owner_references
            .as_ref()
            .is_none_or(Vec::is_empty)
    );
    assert_eq!(f.active_pods("orphan").await.len(), 2, "and keeps its pods");
    f.stop().await;
}
