//! Persistent storage against an in-process server with every controller: the default
//! StorageClass, dynamic provisioning for `Immediate` and `WaitForFirstConsumer` claims (the
//! volume pinned to the pod's node), static volumes bound by size, reclaim `Delete` and
//! `Retain`, the in-use protection of claims, and a StatefulSet's claims bound
//! (upstream's e2e `test/e2e/storage/persistent_volumes.go` and `volume_provisioning.go` cases,
//! and `pkg/controller/volume/persistentvolume/binder_test.go`'s outcomes).

use crate::common::{Cluster, wait_for};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Event, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kubemock_client::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kubemock_controllers::volume::provisioner::{DEFAULT_CLASS, PROVISIONER};
use kubemock_controllers::volume::{ANN_PROVISIONED_BY, ANN_SELECTED_NODE};
use serde_json::json;

fn claim(name: &str, class: Option<&str>, size: &str) -> PersistentVolumeClaim {
    let mut spec = json!({"accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": size}}});
    if let Some(class) = class {
        spec["storageClassName"] = json!(class);
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("a claim")
}

fn pod_using(name: &str, claim: &str) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {
        "containers": [{"name": "c", "image": "nginx",
            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}}))
    .expect("a pod")
}

async fn bound(api: &Api<PersistentVolumeClaim>, name: &str) -> PersistentVolumeClaim {
    wait_for(&format!("claim {name} bound"), || async {
        let claim = api.get(name).await.expect("get the claim");
        (claim.status.as_ref()?.phase.as_deref() == Some("Bound")).then_some(claim)
    })
    .await
}

async fn events_of(cluster: &Cluster, namespace: &str, name: &str) -> Vec<(String, String)> {
    let events: Api<Event> = Api::namespaced(cluster.client.clone(), namespace);
    let list = events
        .list(&ListParams::default().fields(format!("involvedObject.name={name}")))
        .await
        .expect("list events");
    list.items
        .into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn a_claim_waits_for_its_pod_then_is_provisioned_on_the_pods_node() {
    let cluster = Cluster::start().await;
    cluster.namespace("wffc").await;
    let classes: Api<StorageClass> = Api::all(cluster.client.clone());
    let standard = wait_for("the default StorageClass", || async {
        classes.get_opt(DEFAULT_CLASS).await.expect("get the class")
    })
    .await;
    assert_eq!(standard.provisioner, PROVISIONER);
    assert_eq!(
        standard.volume_binding_mode.as_deref(),
        Some("WaitForFirstConsumer")
    );

    let claims: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client.clone(), "wffc");
    let created = claims
        .create(&PostParams::default(), &claim("data", None, "2Gi"))
        .await
        .expect("create the claim");
    // The DefaultStorageClass admission plugin and StorageObjectInUseProtection.
    let spec = created.spec.as_ref().expect("a spec");
    assert_eq!(spec.storage_class_name.as_deref(), Some(DEFAULT_CLASS));
    assert_eq!(spec.volume_mode.as_deref(), Some("Filesystem"));
    assert_eq!(
        created.metadata.finalizers.as_deref(),
        Some(&["kubernetes.io/pvc-protection".to_owned()][..])
    );
    assert_eq!(
        created.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Pending")
    );
    wait_for("the WaitForFirstConsumer event", || async {
        events_of(&cluster, "wffc", "data")
            .await
            .into_iter()
            .any(|(reason, message)| {
                reason == "WaitForFirstConsumer"
                    && message == "waiting for first consumer to be created before binding"
            })
            .then_some(())
    })
    .await;
    assert_eq!(
        claims
            .get("data")
            .await
            .expect("get")
            .status
            .and_then(|s| s.phase),
        Some("Pending".to_owned()),
        "no volume before a pod uses it"
    );

    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), "wffc");
    pods.create(&PostParams::default(), &pod_using("app", "data"))
        .await
        .expect("create the pod");
    let claim = bound(&claims, "data").await;
    let annotations = claim.metadata.annotations.clone().unwrap_or_default();
    let node = annotations
        .get(ANN_SELECTED_NODE)
        .cloned()
        .expect("the scheduler chose a node");
    assert_eq!(
        annotations
            .get("pv.kubernetes.io/bind-completed")
            .map(String::as_str),
        Some("yes")
    );
    assert_eq!(
        annotations
            .get("volume.kubernetes.io/storage-provisioner")
            .map(String::as_str),
        Some(PROVISIONER)
    );
    let volume_name = claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.clone())
        .expect("bound");
    assert_eq!(
        volume_name,
        format!("pvc-{}", claim.metadata.uid.clone().unwrap_or_default())
    );
    assert_eq!(
        claim
            .status
            .as_ref()
            .and_then(|s| s.capacity.as_ref())
            .and_then(|c| c.get("storage"))
            .map(|q| q.0.as_str()),
        Some("2Gi")
    );
    let volumes: Api<PersistentVolume> = Api::all(cluster.client.clone());
    let volume = volumes
        .get(&volume_name)
        .await
        .expect("the provisioned volume");
    let volume_spec = volume.spec.as_ref().expect("a spec");
    assert_eq!(
        volume
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANN_PROVISIONED_BY))
            .map(String::as_str),
        Some(PROVISIONER)
    );
    assert_eq!(
        volume_spec.persistent_volume_reclaim_policy.as_deref(),
        Some("Delete")
    );
    let affinity = serde_json::to_value(&volume_spec.node_affinity).expect("json");
    assert_eq!(
        affinity["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"][0],
        json!(node),
        "the volume is pinned to the node the scheduler chose"
    );
    let running = wait_for("the pod running on the volume's node", || async {
        let pod = pods.get("app").await.expect("get the pod");
        (pod.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(pod)
    })
    .await;
    assert_eq!(running.spec.and_then(|s| s.node_name), Some(node));
    let events = events_of(&cluster, "wffc", "data").await;
    assert!(
        events
            .iter()
            .any(|(reason, message)| reason == "ProvisioningSucceeded"
                && *message == format!("Successfully provisioned volume {volume_name}")),
        "{events:?}"
    );

    // Protection: deleting the claim while the pod runs leaves it Terminating; once the pod
    // is gone the claim goes, and with it (reclaim Delete) the volume.
    claims
        .delete("data", &DeleteParams::default())
        .await
        .expect("delete the claim");
    let terminating = claims.get("data").await.expect("still there");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    pods.delete("app", &now).await.expect("delete the pod");
    wait_for("the claim gone", || async {
        claims
            .get_opt("data")
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await;
    wait_for("the volume deleted by its provisioner", || async {
        volumes
            .get_opt(&volume_name)
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await;
    cluster.stop().await;
}

#[tokio::test]
async fn immediate_claims_bind_a_fitting_static_volume_or_are_provisioned() {
    let cluster = Cluster::start().await;
    cluster.namespace("imm").await;
    let classes: Api<StorageClass> = Api::all(cluster.client.clone());
    classes
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "fast"},
                "provisioner": PROVISIONER, "reclaimPolicy": "Retain"}))
            .expect("a class"),
        )
        .await
        .expect("create the Immediate class");
    let volumes: Api<PersistentVolume> = Api::all(cluster.client.clone());
    for (name, size) in [("static-tiny", "1Gi"), ("static-small", "3Gi")] {
        let volume: PersistentVolume = serde_json::from_value(json!({"metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                "storageClassName": "manual", "hostPath": {"path": format!("/mnt/{name}")}}}))
        .expect("a volume");
        let created = volumes
            .create(&PostParams::default(), &volume)
            .await
            .expect("create the volume");
        let spec = created.spec.as_ref().expect("a spec");
        assert_eq!(
            spec.persistent_volume_reclaim_policy.as_deref(),
            Some("Retain")
        );
        assert_eq!(
            created.metadata.finalizers.as_deref(),
            Some(&["kubernetes.io/pv-protection".to_owned()][..])
        );
    }
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client.clone(), "imm");
    claims
        .create(
            &PostParams::default(),
            &claim("manual", Some("manual"), "2Gi"),
        )
        .await
        .expect("create the static claim");
    claims
        .create(
            &PostParams::default(),
            &claim("dynamic", Some("fast"), "1Gi"),
        )
        .await
        .expect("create the dynamic claim");
    let manual = bound(&claims, "manual").await;
    assert_eq!(
        manual.spec.as_ref().and_then(|s| s.volume_name.as_deref()),
        Some("static-small"),
        "the volume that fits, not the one too small"
    );
    assert_eq!(
        manual
            .status
            .as_ref()
            .and_then(|s| s.capacity.as_ref())
            .and_then(|c| c.get("storage"))
            .map(|q| q.0.as_str()),
        Some("3Gi"),
        "a bound claim reports its volume's capacity"
    );
    let small = volumes.get("static-small").await.expect("get");
    assert_eq!(
        small.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Bound")
    );
    assert_eq!(
        small
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.as_ref())
            .and_then(|r| r.name.as_deref()),
        Some("manual")
    );
    let tiny = volumes.get("static-tiny").await.expect("get");
    assert_eq!(
        tiny.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Available")
    );
    let dynamic = bound(&claims, "dynamic").await;
    let dynamic_volume = dynamic
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.clone())
        .expect("bound");
    let provisioned = volumes.get(&dynamic_volume).await.expect("get");
    let spec = provisioned.spec.as_ref().expect("a spec");
    assert!(
        spec.node_affinity.is_none(),
        "an Immediate volume is not pinned to a node"
    );
    assert_eq!(
        spec.persistent_volume_reclaim_policy.as_deref(),
        Some("Retain")
    );

    // Growing a claim whose class does not allow expansion: the resize admission plugin's 403.
    let grown = claims
        .patch(
            "dynamic",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"resources": {"requests": {"storage": "5Gi"}}}})),
        )
        .await
        .expect_err("expansion refused");
    assert!(
        grown.to_string().contains("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"),
        "{grown}"
    );

    // Reclaim Retain: the claim goes, the volume stays Released.
    for name in ["manual", "dynamic"] {
        claims
            .delete(name, &DeleteParams::default())
            .await
            .expect("delete the claim");
    }
    for name in ["static-small", dynamic_volume.as_str()] {
        wait_for(&format!("{name} Released"), || async {
            let volume = volumes.get(name).await.expect("get");
            (volume.status.as_ref()?.phase.as_deref() == Some("Released")).then_some(())
        })
        .await;
    }

    // A claim no volume and no class can serve stays Pending, with upstream's event.
    let unclassed = claim("nothing", Some(""), "1Gi");
    claims
        .create(&PostParams::default(), &unclassed)
        .await
        .expect("create");
    wait_for("the FailedBinding event", || async {
        events_of(&cluster, "imm", "nothing")
            .await
            .into_iter()
            .any(|(reason, message)| {
                reason == "FailedBinding"
                    && message == "no persistent volumes available for this claim and no storage class is set"
            })
            .then_some(())
    })
    .await;
    // A pod of an unbound Immediate claim is unschedulable with kube-scheduler's words.
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), "imm");
    pods.create(&PostParams::default(), &pod_using("stuck", "nothing"))
        .await
        .expect("create the pod");
    pods.create(&PostParams::default(), &pod_using("orphan", "missing"))
        .await
        .expect("create the pod");
    for (pod, reason) in [
        ("stuck", "pod has unbound immediate PersistentVolumeClaims"),
        ("orphan", "persistentvolumeclaim \"missing\" not found"),
    ] {
        let expected = format!(
            "0/3 nodes are available: {reason}. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        );
        wait_for(&format!("{pod} unschedulable"), || async {
            let pod = pods.get(pod).await.expect("get");
            let condition = pod
                .status?
                .conditions?
                .into_iter()
                .find(|c| c.type_ == "PodScheduled")?;
            (condition.message.as_deref() == Some(expected.as_str())).then_some(())
        })
        .await;
    }
    cluster.stop().await;
}

#[tokio::test]
async fn a_statefulsets_claims_are_provisioned_and_its_pods_run() {
    let cluster = Cluster::start().await;
    cluster.namespace("sts").await;
    let sets: Api<StatefulSet> = Api::namespaced(cluster.client.clone(), "sts");
    let set: StatefulSet = serde_json::from_value(json!({"metadata": {"name": "db"}, "spec": {
        "replicas": 2, "serviceName": "db",
        "selector": {"matchLabels": {"app": "db"}},
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [
            {"name": "c", "image": "postgres",
             "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql"}]}]}},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}))
    .expect("a StatefulSet");
    sets.create(&PostParams::default(), &set)
        .await
        .expect("create the StatefulSet");
    wait_for("both replicas ready", || async {
        let set = sets.get("db").await.expect("get");
        (set.status?.ready_replicas == Some(2)).then_some(())
    })
    .await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(cluster.client.clone(), "sts");
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), "sts");
    for ordinal in 0..2 {
        let claim = bound(&claims, &format!("data-db-{ordinal}")).await;
        let selected = claim
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANN_SELECTED_NODE))
            .cloned();
        let pod = pods
            .get(&format!("db-{ordinal}"))
            .await
            .expect("get the pod");
        assert_eq!(
            pod.spec.and_then(|s| s.node_name),
            selected,
            "each pod runs where its volume is"
        );
    }
    cluster.stop().await;
}
