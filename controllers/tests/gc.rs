//! The garbage collector against an in-process server (docs/api-behaviour.md#propagation-policy, issue 6 item 4): background,
//! foreground and orphan deletion, custom resources as dependents, dangling references.
//! ConfigMaps serve as owners and dependents, so no other controller is involved.

use crate::common::{Cluster, wait_for};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kubemock_client::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams,
};
use kubemock_controllers::ManagerConfig;
use serde_json::json;

/// A cluster with only the garbage collector, and a namespace for the test.
async fn start(namespace: &str) -> (Cluster, Api<ConfigMap>) {
    let cluster =
        Cluster::start_with(ManagerConfig::from_list("garbagecollector").expect("valid")).await;
    cluster.namespace(namespace).await;
    let configmaps = Api::namespaced(cluster.client.clone(), namespace);
    (cluster, configmaps)
}

fn reference(owner: &ConfigMap, block: bool) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.metadata.name.clone().expect("named"),
        uid: owner.metadata.uid.clone().expect("created"),
        controller: None,
        block_owner_deletion: block.then_some(true),
    }
}

async fn create(
    api: &Api<ConfigMap>,
    name: &str,
    owners: Vec<OwnerReference>,
    finalizers: &[&str],
) -> ConfigMap {
    api.create(
        &PostParams::default(),
        &ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                owner_references: (!owners.is_empty()).then_some(owners),
                finalizers: (!finalizers.is_empty())
                    .then(|| finalizers.iter().map(|f| (*f).to_owned()).collect()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        },
    )
    .await
    .expect("create a configmap")
}

async fn wait_gone(api: &Api<ConfigMap>, name: &str) {
    wait_for(&format!("configmap {name} to be gone"), || async move {
        api.get_opt(name)
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn background_deletion_removes_dependents_custom_resources_included() {
    let (cluster, configmaps) = start("gc-background").await;
    let definition: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .expect("a definition");
    Api::<CustomResourceDefinition>::all(cluster.client.clone())
        .create(&PostParams::default(), &definition)
        .await
        .expect("create the definition");
    let gadgets = ApiResource::new("example.com", "v1", "Gadget", "gadgets", true);
    let gadget_api: Api<DynamicObject> =
        Api::dynamic(cluster.client.clone(), &gadgets, Some("gc-background"));

    let owner = create(&configmaps, "owner", Vec::new(), &[]).await;
    create(&configmaps, "child", vec![reference(&owner, false)], &[]).await;
    let mut gadget = DynamicObject::new("g", &gadgets).within("gc-background");
    gadget.metadata.owner_references = Some(vec![reference(&owner, false)]);
    gadget_api
        .create(&PostParams::default(), &gadget)
        .await
        .expect("create a gadget");
    let bystander = create(&configmaps, "bystander", Vec::new(), &[]).await;

    configmaps
        .delete("owner", &DeleteParams::background())
        .await
        .expect("delete the owner");
    wait_gone(&configmaps, "child").await;
    wait_for("the gadget to be collected", || {
        let gadget_api = gadget_api.clone();
        async move {
            gadget_api
                .get_opt("g")
                .await
                .expect("get")
                .is_none()
                .then_some(())
        }
    })
    .await;
    let still = configmaps.get("bystander").await.expect("kept");
    assert_eq!(still.metadata.uid, bystander.metadata.uid);
    cluster.stop().await;
}

#[tokio::test]
async fn foreground_deletion_waits_for_blocking_dependents_then_completes() {
    let (cluster, configmaps) = start("gc-foreground").await;
    let owner = create(&configmaps, "owner", Vec::new(), &[]).await;
    // One dependent blocks the owner and is itself held by a finalizer; one does not block.
    create(
        &configmaps,
        "blocking",
        vec![reference(&owner, true)],
        &["example.com/hold"],
    )
    .await;
    create(&configmaps, "loose", vec![reference(&owner, false)], &[]).await;

    configmaps
        .delete("owner", &DeleteParams::foreground())
        .await
        .expect("delete the owner");
    wait_gone(&configmaps, "loose").await;
    let blocking = wait_for("the blocking dependent to be deleted", || {
        let configmaps = configmaps.clone();
        async move {
            let cm = configmaps
                .get("blocking")
                .await
                .expect("held by its finalizer");
            cm.metadata.deletion_timestamp.is_some().then_some(cm)
        }
    })
    .await;
    assert!(blocking.metadata.deletion_timestamp.is_some());
    let waiting = configmaps.get("owner").await.expect("the owner waits");
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert_eq!(
        waiting.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_owned()])
    );

    configmaps
        .patch(
            "blocking",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("release the blocking dependent");
    wait_gone(&configmaps, "blocking").await;
    wait_gone(&configmaps, "owner").await;
    cluster.stop().await;
}

#[tokio::test]
async fn orphan_deletion_unlinks_dependents_then_removes_the_owner() {
    let (cluster, configmaps) = start("gc-orphan").await;
    let owner = create(&configmaps, "owner", Vec::new(), &[]).await;
    let other = create(&configmaps, "other-owner", Vec::new(), &[]).await;
    create(&configmaps, "a", vec![reference(&owner, true)], &[]).await;
    create(
        &configmaps,
        "b",
        vec![reference(&owner, false), reference(&other, false)],
        &[],
    )
    .await;

    configmaps
        .delete("owner", &DeleteParams::orphan())
        .await
        .expect("delete the owner");
    wait_gone(&configmaps, "owner").await;
    let a = configmaps.get("a").await.expect("orphaned, kept");
    assert_eq!(a.metadata.owner_references, None);
    let b = configmaps.get("b").await.expect("orphaned, kept");
    assert_eq!(
        b.metadata.owner_references,
        Some(vec![reference(&other, false)])
    );
    cluster.stop().await;
}

#[tokio::test]
async fn dangling_references_are_collected_or_dropped() {
    let (cluster, configmaps) = start("gc-dangling").await;
    let ghost = ConfigMap {
        metadata: ObjectMeta {
            name: Some("ghost".into()),
            uid: Some("00000000-0000-0000-0000-000000000000".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    let alive = create(&configmaps, "alive", Vec::new(), &[]).await;
    // Only a dangling owner: collected.
    create(&configmaps, "lost", vec![reference(&ghost, false)], &[]).await;
    // A live owner and a dangling one: kept, the dangling reference dropped.
    create(
        &configmaps,
        "kept",
        vec![reference(&ghost, false), reference(&alive, false)],
        &[],
    )
    .await;
    wait_gone(&configmaps, "lost").await;
    let kept = wait_for("the dangling reference to be dropped", || {
        let configmaps = configmaps.clone();
        async move {
            let cm = configmaps.get("kept").await.expect("kept");
            (cm.metadata.owner_references.as_ref().map(Vec::len) == Some(1)).then_some(cm)
        }
    })
    .await;
    assert_eq!(
        kept.metadata.owner_references,
        Some(vec![reference(&alive, false)])
    );
    cluster.stop().await;
}
