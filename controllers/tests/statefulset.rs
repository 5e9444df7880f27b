//! The StatefulSet controller with the scheduler, the simulated kubelet and the garbage
//! collector: pods `web-N` created in order (each once the lower ones are Ready) or all at
//! once, removed from the highest ordinal down, replaced by a rolling update down to the
//! partition, recreated when deleted, each with its claims; revisions and status as
//! `kubectl rollout status` reads them.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::{Cluster, wait_for};
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{Event, PersistentVolumeClaim, Pod};
use kubemock_client::{Api, ListParams, Patch, PatchParams, PostParams};
use kubemock_controllers::ManagerConfig;
use kubemock_controllers::kubelet::KubeletConfig;
use serde_json::json;

/// A set `web` of `replicas` (nginx:1.27, selector app=web) with `spec` merged in.
fn set(replicas: i32, spec: serde_json::Value) -> StatefulSet {
    let mut base = json!({
        "replicas": replicas,
        "serviceName": "web",
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}
    });
    if let (Some(base), Some(extra)) = (base.as_object_mut(), spec.as_object()) {
        base.extend(extra.clone());
    }
    serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": base})).expect("a set")
}

/// A cluster whose pods become Ready `ready_delay` after they run.
async fn cluster(ready_delay: Duration) -> Cluster {
    Cluster::start_with(ManagerConfig::default().with_kubelet(KubeletConfig {
        nodes: 3,
        ready_delay,
        ..KubeletConfig::default()
    }))
    .await
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn label<'a>(pod: &'a Pod, key: &str) -> &'a str {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map_or("", String::as_str)
}

/// The set's pods by name.
async fn pods(api: &Api<Pod>) -> BTreeMap<String, Pod> {
    api.list(&ListParams::default().labels("app=web"))
        .await
        .expect("list pods")
        .items
        .into_iter()
        .map(|p| (p.metadata.name.clone().unwrap_or_default(), p))
        .collect()
}

/// Waits until the set reports `replicas` ready pods all at one revision, observed at its
/// generation; returns the set.
async fn rolled_out(sets: &Api<StatefulSet>, replicas: i32) -> StatefulSet {
    wait_for("the rollout to complete", || async move {
        let set = sets.get("web").await.expect("get the set");
        let status = set.status.clone()?;
        (status.observed_generation == set.metadata.generation
            && status.replicas == replicas
            && status.ready_replicas.unwrap_or(0) == replicas
            && status.updated_replicas.unwrap_or(0) == replicas
            && status.current_replicas.unwrap_or(0) == replicas
            && status.current_revision.is_some()
            && status.current_revision == status.update_revision)
            .then_some(set)
    })
    .await
}

async fn events(cluster: &Cluster) -> Vec<(String, String)> {
    Api::<Event>::namespaced(cluster.client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.involved_object.kind.as_deref() == Some("StatefulSet"))
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn ordered_ready_creates_each_pod_once_the_lower_ones_are_ready() {
    let cluster = cluster(Duration::from_millis(300)).await;
    let sets: Api<StatefulSet> = Api::namespaced(cluster.client.clone(), "default");
    let pod_api: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    sets.create(&PostParams::default(), &set(3, json!({})))
        .await
        .expect("create the set");
    wait_for("three ready pods, created in order", || {
        let pod_api = &pod_api;
        async move {
            let pods = pods(pod_api).await;
            for (ordinal, name) in (0..3).map(|i| (i, format!("web-{i}"))) {
                if !pods.contains_key(&name) {
                    continue;
                }
                for lower in 0..ordinal {
                    let lower = pods.get(&format!("web-{lower}"));
                    assert!(
                        lower.is_some_and(is_ready),
                        "{name} exists while web-{ordinal}'s predecessors are not all ready: {:?}",
                        pods.keys().collect::<Vec<_>>()
                    );
                }
            }
            (pods.len() == 3 && pods.values().all(is_ready)).then_some(())
        }
    })
    .await;
    let set = rolled_out(&sets, 3).await;
    let revision = set
        .status
        .and_then(|s| s.current_revision)
        .expect("revision");
    let uid = set.metadata.uid.expect("uid");

    let pods = pods(&pod_api).await;
    for (ordinal, (name, pod)) in pods.iter().enumerate() {
        assert_eq!(*name, format!("web-{ordinal}"));
        assert_eq!(label(pod, "statefulset.kubernetes.io/pod-name"), name);
        assert_eq!(
            label(pod, "apps.kubernetes.io/pod-index"),
            ordinal.to_string()
        );
        assert_eq!(label(pod, "controller-revision-hash"), revision);
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.hostname.as_deref(), Some(name.as_str()));
        assert_eq!(spec.subdomain.as_deref(), Some("web"));
        let owner = &pod.metadata.owner_references.as_ref().expect("owner")[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("StatefulSet", uid.as_str(), Some(true))
        );
    }

    let revisions: Api<ControllerRevision> = Api::namespaced(cluster.client.clone(), "default");
    let revisions = revisions
        .list(&ListParams::default())
        .await
        .expect("revisions");
    assert_eq!(revisions.items.len(), 1);
    let r = &revisions.items[0];
    assert_eq!(r.metadata.name.as_deref(), Some(revision.as_str()));
    assert_eq!(r.revision, 1);
    assert_eq!(
        r.metadata.owner_references.as_ref().expect("owner")[0].uid,
        uid
    );
    let data = &r.data.as_ref().expect("data").0;
    assert_eq!(data["spec"]["template"]["$patch"], "replace");

    let events = wait_for("the creation events", || {
        let cluster = &cluster;
        async move {
            let events = events(cluster).await;
            (events.len() >= 3).then_some(events)
        }
    })
    .await;
    for i in 0..3 {
        let wanted = (
            "SuccessfulCreate".to_owned(),
            format!("create Pod web-{i} in StatefulSet web successful"),
        );
        assert!(events.contains(&wanted), "{events:?}");
    }
    cluster.stop().await;
}

/// A finalizer the test holds pods with, so that a terminating pod stays until released.
const HOLD: &str = "kubemock.test/hold";

#[tokio::test]
async fn scaling_down_removes_one_pod_at_a_time_from_the_highest_ordinal() {
    let cluster = cluster(Duration::ZERO).await;
    let sets: Api<StatefulSet> = Api::namespaced(cluster.client.clone(), "default");
    let pod_api: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    let mut held = set(4, json!({}));
    if let Some(meta) = held
        .spec
        .as_mut()
        .and_then(|s| s.template.metadata.as_mut())
    {
        meta.finalizers = Some(vec![HOLD.to_owned()]);
    }
    sets.create(&PostParams::default(), &held)
        .await
        .expect("create the set");
    rolled_out(&sets, 4).await;
    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .expect("scale down");
    for highest in (1..4).rev() {
        // The controller has seen web-{highest} terminating (it no longer counts as
        // current) and, waiting for it to be gone, deleted nothing else.
        wait_for("the highest pod terminating, and only it", || {
            let sets = &sets;
            async move {
                let set = sets.get("web").await.expect("get");
                let status = set.status?;
                (status.observed_generation == set.metadata.generation
                    && status.current_replicas == Some(highest))
                .then_some(())
            }
        })
        .await;
        let pods = pods(&pod_api).await;
        let terminating: Vec<&String> = pods
            .iter()
            .filter(|(_, p)| p.metadata.deletion_timestamp.is_some())
            .map(|(name, _)| name)
            .collect();
        assert_eq!(terminating, [&format!("web-{highest}")]);
        assert_eq!(pods.len(), usize::try_from(highest).expect("small") + 1);
        pod_api
            .patch(
                &format!("web-{highest}"),
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await
            .expect("release the pod");
    }
    rolled_out(&sets, 1).await;
    let left: Vec<String> = pods(&pod_api).await.into_keys().collect();
    assert_eq!(left, ["web-0"]);
    let events = events(&cluster).await;
    for i in 1..4 {
        let wanted = (
            "SuccessfulDelete".to_owned(),
            format!("delete Pod web-{i} in StatefulSet web successful"),
        );
        assert!(events.contains(&wanted), "{events:?}");
    }
    pod_api
        .patch(
            "web-0",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("release web-0");
    cluster.stop().await;
}

#[tokio::test]
async fn a_rolling_update_replaces_pods_from_the_highest_ordinal_down() {
    let cluster = cluster(Duration::from_millis(50)).await;
    let sets: Api<StatefulSet> = Api::namespaced(cluster.client.clone(), "default");
    let pod_api: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    sets.create(&PostParams::default(), &set(3, json!({})))
        .await
        .expect("create the set");
    let before = rolled_out(&sets, 3).await;
    let old = before
        .status
        .and_then(|s| s.current_revision)
        .expect("revision");
    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [
            {"name": "nginx", "image": "nginx:1.28"}]}}}})),
    )
    .await
    .expect("change the image");
    let new = wait_for("every pod at the new revision", || {
        let (pod_api, old) = (&pod_api, &old);
        async move {
            let pods = pods(pod_api).await;
            // Updated pods are always the highest ordinals.
            let updated: Vec<bool> = (0..3)
                .map(|i| {
                    pods.get(&format!("web-{i}"))
                        .is_some_and(|p| label(p, "controller-revision-hash") != old)
                })
                .collect();
            assert!(
                updated.windows(2).all(|w| !w[0] || w[1]),
                "updated out of order: {updated:?}"
            );
            let revisions: Vec<&str> = pods
                .values()
                .map(|p| label(p, "controller-revision-hash"))
                .collect();
            (pods.len() == 3 && updated.iter().all(|u| *u) && pods.values().all(is_ready))
                .then(|| revisions[0].to_owned())
        }
    })
    .await;
    assert_ne!(new, old);
    let after = rolled_out(&sets, 3).await;
    let status = after.status.expect("status");
    assert_eq!(status.current_revision.as_deref(), Some(new.as_str()));
    assert_eq!(status.update_revision.as_deref(), Some(new.as_str()));
    for pod in pods(&pod_api).await.values() {
        let image = &pod.spec.as_ref().expect("spec").containers[0].image;
        assert_eq!(image.as_deref(), Some("nginx:1.28"));
    }
    let revisions: Api<ControllerRevision> = Api::namespaced(cluster.client.clone(), "default");
    let mut numbers: Vec<(i64, String)> = revisions
        .list(&ListParams::default())
        .await
        .expect("revisions")
        .items
        .into_iter()
        .map(|r| (r.revision, r.metadata.name.unwrap_or_default()))
        .collect();
    numbers.sort();
    assert_eq!(numbers, [(1, old), (2, new)]);
    cluster.stop().await;
}

#[tokio::test]
async fn a_partition_keeps_the_lower_ordinals_at_the_old_revision() {
    let cluster = cluster(Duration::ZERO).await;
    let sets: Api<StatefulSet> = Api::namespaced(cluster.client.clone(), "default");
    let pod_api: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    let partitioned = json!({"updateStrategy": {"type": "RollingUpdate",
        "rollingUpdate": {"partition": 2}}});
    sets.create(&PostParams::default(), &set(3, partitioned))
        .await
        .expect("create the set");
    let before = rolled_out(&sets, 3).await;
    let old = before
        .status
        .and_then(|s| s.current_revision)
        .expect("revision");
    let uids: Vec<Option<String>> = pods(&pod_api)
        .await
        .values()
        .map(|p| p.metadata.uid.clone())
        .collect();
    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"template": {"metadata": {"annotations": {"v": "2"}}}}})),
    )
    .await
    .expect("change the template");
    let status = wait_for("web-2 updated and the status settled", || {
        let sets = &sets;
        async move {
            let set = sets.get("web").await.expect("get");
            let status = set.status.clone()?;
            (status.observed_generation == set.metadata.generation
                && status.updated_replicas == Some(1)
                && status.ready_replicas == Some(3)
                && status.current_replicas == Some(2))
            .then_some(status)
        }
    })
    .await;
    assert_eq!(status.current_revision.as_deref(), Some(old.as_str()));
    let new = status.update_revision.clone().expect("update revision");
    assert_ne!(new, old);
    let pods = pods(&pod_api).await;
    let revisions: Vec<&str> = pods
        .values()
        .map(|p| label(p, "controller-revision-hash"))
        .collect();
    assert_eq!(revisions, [old.as_str(), old.as_str(), new.as_str()]);
    let now: Vec<Option<String>> = pods.values().map(|p| p.metadata.uid.clone()).collect();
    assert_eq!(now[..2], uids[..2], "web-0 and web-1 were not replaced");
    assert_ne!(now[2], uids[2]);
    cluster.stop().await;
}

#[tokio::test]
async fn parallel_creates_every_pod_without_waiting_for_readiness() {
    let cluster = cluster(Duration::from_secs(2)).await;
    let sets: Api<StatefulSet> = Api::namespaced(cluster.client.clone(), "default");
    let pod_api: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    sets.create(
        &PostParams::default(),
        &set(3, json!({"podManagementPolicy": "Parallel"})),
    )
    .await
    .expect("create the set");
    let first = wait_for("three pods", || {
        let pod_api = &pod_api;
        async move {
            let pods = pods(pod_api).await;
            (pods.len() == 3).then_some(pods)
        }
    })
    .await;
    assert!(
        first.values().any(|p| !is_ready(p)),
        "all three exist before they are all ready"
    );
    rolled_out(&sets, 3).await;
    cluster.stop().await;
}

#[tokio::test]
async fn a_deleted_pod_is_recreated_with_its_name() {
    let cluster = cluster(Duration::ZERO).await;
    let sets: Api<StatefulSet> = Api::namespaced(cluster.client.clone(), "default");
    let pod_api: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    sets.create(&PostParams::default(), &set(2, json!({})))
        .await
        .expect("create the set");
    rolled_out(&sets, 2).await;
    let old = pod_api.get("web-1").await.expect("web-1");
    pod_api
        .delete("web-1", &Default::default())
        .await
        .expect("delete web-1");
    let new = wait_for("web-1 back and ready", || {
        let (pod_api, old) = (&pod_api, &old);
        async move {
            let pod = pod_api.get_opt("web-1").await.expect("get")?;
            (pod.metadata.uid != old.metadata.uid && is_ready(&pod)).then_some(pod)
        }
    })
    .await;
    assert_eq!(
        label(&new, "controller-revision-hash"),
        label(&old, "controller-revision-hash")
    );
    rolled_out(&sets, 2).await;
    cluster.stop().await;
}

#[tokio::test]
async fn a_failed_pod_is_replaced_and_an_orphan_is_adopted() {
    let cluster = cluster(Duration::ZERO).await;
    let sets: Api<StatefulSet> = Api::namespaced(cluster.client.clone(), "default");
    let pod_api: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    sets.create(&PostParams::default(), &set(2, json!({})))
        .await
        .expect("create the set");
    let uid = rolled_out(&sets, 2).await.metadata.uid.expect("uid");

    let failed = pod_api
        .patch_status(
            "web-0",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Failed"}})),
        )
        .await
        .expect("fail web-0");
    wait_for("web-0 replaced and ready", || {
        let (pod_api, failed) = (&pod_api, &failed);
        async move {
            let pod = pod_api.get_opt("web-0").await.expect("get")?;
            (pod.metadata.uid != failed.metadata.uid && is_ready(&pod)).then_some(())
        }
    })
    .await;

    // Orphaned (its ownerReference removed), web-1 is adopted again, not replaced.
    let orphan = pod_api
        .patch(
            "web-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"ownerReferences": null}})),
        )
        .await
        .expect("orphan web-1");
    assert!(
        orphan
            .metadata
            .owner_references
            .is_none_or(|r| r.is_empty())
    );
    let adopted = wait_for("web-1 adopted", || {
        let (pod_api, uid) = (&pod_api, &uid);
        async move {
            let pod = pod_api.get("web-1").await.expect("get");
            pod.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.uid == *uid && r.controller == Some(true))
                .then_some(pod)
        }
    })
    .await;
    assert_eq!(adopted.metadata.uid, orphan.metadata.uid);
    rolled_out(&sets, 2).await;
    cluster.stop().await;
}

#[tokio::test]
async fn each_pod_gets_its_claims_and_the_retention_policy_owns_them() {
    let cluster = cluster(Duration::ZERO).await;
    let sets: Api<StatefulSet> = Api::namespaced(cluster.client.clone(), "default");
    let pod_api: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client.clone(), "default");
    let spec = json!({
        "volumeClaimTemplates": [{"metadata": {"name": "www"},
            "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}}],
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"}
    });
    let created = sets
        .create(&PostParams::default(), &set(2, spec))
        .await
        .expect("create the set");
    rolled_out(&sets, 2).await;
    for i in 0..2 {
        let claim = claims
            .get(&format!("www-web-{i}"))
            .await
            .expect("the claim");
        let labels = claim.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("app").map(String::as_str), Some("web"));
        assert!(
            claim.metadata.owner_references.is_none_or(|r| r.is_empty()),
            "a claim of a live pod has no owner under whenScaled=Delete alone"
        );
        let pod = pod_api.get(&format!("web-{i}")).await.expect("pod");
        let volume = pod
            .spec
            .and_then(|s| s.volumes)
            .into_iter()
            .flatten()
            .find(|v| v.name == "www")
            .expect("the claim's volume");
        assert_eq!(
            volume.persistent_volume_claim.map(|c| c.claim_name),
            Some(format!("www-web-{i}"))
        );
    }
    let events = events(&cluster).await;
    let wanted = (
        "SuccessfulCreate".to_owned(),
        "create Claim www-web-0 Pod web-0 in StatefulSet web success".to_owned(),
    );
    assert!(events.contains(&wanted), "{events:?}");

    // Scaled down: web-1's claim is handed to web-1, and goes with it.
    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .expect("scale down");
    wait_for("www-web-1 to be collected", || {
        let claims = &claims;
        async move {
            claims
                .get_opt("www-web-1")
                .await
                .expect("get")
                .is_none()
                .then_some(())
        }
    })
    .await;
    assert!(claims.get_opt("www-web-0").await.expect("get").is_some());

    // whenDeleted=Delete: the set owns the claims of its live pods.
    sets.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"persistentVolumeClaimRetentionPolicy":
            {"whenDeleted": "Delete", "whenScaled": "Retain"}}})),
    )
    .await
    .expect("change the policy");
    let uid = created.metadata.uid.expect("uid");
    wait_for("www-web-0 owned by the set", || {
        let (claims, uid) = (&claims, &uid);
        async move {
            let claim = claims.get("www-web-0").await.expect("get");
            claim
                .metadata
                .owner_references
                .unwrap_or_default()
                .iter()
                .any(|r| r.uid == *uid && r.controller == Some(true))
                .then_some(())
        }
    })
    .await;
    cluster.stop().await;
}
