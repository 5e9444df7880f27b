//! The namespace controller against an in-process server (docs/api-behaviour.md#namespace-deletion, issue 6 item 5): a deleted
//! namespace is emptied of every namespaced resource, custom resources included, and then
//! removed; content held by a finalizer keeps it Terminating with the conditions the real
//! controller reports.

use crate::common::{Cluster, wait_for};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kubemock_client::{
    Api, ApiResource, DeleteParams, Deleted, DynamicObject, ListParams, Patch, PatchParams,
    PostParams,
};
use serde_json::json;

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    }
}

async fn create_namespace(cluster: &Cluster, name: &str) {
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: meta(name),
                ..Namespace::default()
            },
        )
        .await
        .expect("create the namespace");
}

fn widgets() -> ApiResource {
    ApiResource::new("example.com", "v1", "Widget", "widgets", true)
}

async fn create_widget_definition(cluster: &Cluster) {
    let definition: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .expect("a definition");
    let definitions: Api<CustomResourceDefinition> = Api::all(cluster.client.clone());
    definitions
        .create(&PostParams::default(), &definition)
        .await
        .expect("create the definition");
}

/// Deletes the namespace and checks the immediate answer: Terminating, not gone (docs/api-behaviour.md#namespace-deletion).
async fn delete_namespace(cluster: &Cluster, name: &str) {
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    match namespaces
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete the namespace")
    {
        Deleted::Object(ns) => {
            assert!(ns.metadata.deletion_timestamp.is_some());
            assert_eq!(
                ns.status.and_then(|s| s.phase).as_deref(),
                Some("Terminating")
            );
        }
        Deleted::Status(status) => panic!("a namespace is not removed at once: {status:?}"),
    }
}

async fn wait_until_gone(cluster: &Cluster, name: &str) {
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    wait_for(&format!("namespace {name} to be removed"), || {
        let namespaces = namespaces.clone();
        async move {
            namespaces
                .get_opt(name)
                .await
                .expect("get the namespace")
                .is_none()
                .then_some(())
        }
    })
    .await;
}

#[tokio::test]
async fn a_deleted_namespace_is_emptied_custom_resources_included_then_removed() {
    let cluster = Cluster::start().await;
    create_widget_definition(&cluster).await;
    create_namespace(&cluster, "doomed").await;
    create_namespace(&cluster, "bystander").await;
    let client = cluster.client.clone();
    for ns in ["doomed", "bystander"] {
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for name in ["a", "b"] {
            configmaps
                .create(
                    &PostParams::default(),
                    &ConfigMap {
                        metadata: meta(name),
                        ..ConfigMap::default()
                    },
                )
                .await
                .expect("create a configmap");
        }
        let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
        secrets
            .create(
                &PostParams::default(),
                &Secret {
                    metadata: meta("s"),
                    ..Secret::default()
                },
            )
            .await
            .expect("create a secret");
        let deployment: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
        }))
        .expect("a deployment");
        Api::<Deployment>::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &deployment)
            .await
            .expect("create a deployment");
        let widget = DynamicObject::new("w", &widgets())
            .within(ns)
            .with("spec", json!({"size": 3}));
        Api::dynamic(client.clone(), &widgets(), Some(ns))
            .create(&PostParams::default(), &widget)
            .await
            .expect("create a widget");
    }

    delete_namespace(&cluster, "doomed").await;
    wait_until_gone(&cluster, "doomed").await;

    // Everything in it went first; the other namespace kept everything.
    let all_widgets: Api<DynamicObject> = Api::dynamic(client.clone(), &widgets(), None);
    let left: Vec<String> = all_widgets
        .list(&ListParams::default())
        .await
        .expect("list widgets")
        .items
        .iter()
        .map(|w| w.metadata.namespace.clone().unwrap_or_default())
        .collect();
    assert_eq!(left, vec!["bystander"]);
    let configmaps: Api<ConfigMap> = Api::all(client.clone());
    let mut left: Vec<String> = configmaps
        .list(&ListParams::default())
        .await
        .expect("list configmaps")
        .items
        .iter()
        .filter(|c| c.metadata.name.as_deref() != Some("kube-root-ca.crt"))
        .map(|c| {
            format!(
                "{}/{}",
                c.metadata.namespace.clone().unwrap_or_default(),
                c.metadata.name.clone().unwrap_or_default()
            )
        })
        .collect();
    left.sort();
    assert_eq!(left, vec!["bystander/a", "bystander/b"]);
    let deployments: Api<Deployment> = Api::all(client.clone());
    assert_eq!(
        deployments
            .list(&ListParams::default())
            .await
            .expect("list deployments")
            .items
            .len(),
        1
    );
    cluster.stop().await;
}

#[tokio::test]
async fn content_held_by_a_finalizer_keeps_the_namespace_terminating_with_conditions() {
    let cluster = Cluster::start().await;
    create_namespace(&cluster, "held").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), "held");
    configmaps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    finalizers: Some(vec!["example.com/hold".to_owned()]),
                    ..meta("held")
                },
                ..ConfigMap::default()
            },
        )
        .await
        .expect("create a configmap");
    delete_namespace(&cluster, "held").await;

    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    let condition = |ns: &Namespace, kind: &str| {
        ns.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == kind).cloned())
    };
    let ns = wait_for("the content conditions", || {
        let namespaces = namespaces.clone();
        async move {
            let ns = namespaces.get("held").await.expect("the namespace is kept");
            let remaining = condition(&ns, "NamespaceContentRemaining")?;
            (remaining.status == "True").then_some(ns)
        }
    })
    .await;
    let remaining = condition(&ns, "NamespaceContentRemaining").expect("condition");
    assert_eq!(remaining.reason.as_deref(), Some("SomeResourcesRemain"));
    assert_eq!(
        remaining.message.as_deref(),
        Some("Some resources are remaining: configmaps. has 1 resource instances")
    );
    let finalizers = condition(&ns, "NamespaceFinalizersRemaining").expect("condition");
    assert_eq!(finalizers.status, "True");
    assert_eq!(finalizers.reason.as_deref(), Some("SomeFinalizerRemain"));
    assert_eq!(
        finalizers.message.as_deref(),
        Some("Some finalizers are remaining: example.com/hold in 1 resource instances")
    );
    for (kind, reason) in [
        ("NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered"),
        (
            "NamespaceDeletionGroupVersionParsingFailure",
            "ParsedGroupVersions",
        ),
        ("NamespaceDeletionContentFailure", "ContentDeleted"),
    ] {
        let c = condition(&ns, kind).expect(kind);
        assert_eq!(
            (c.status.as_str(), c.reason.as_deref()),
            ("False", Some(reason))
        );
    }
    assert_eq!(
        ns.spec.and_then(|s| s.finalizers),
        Some(vec!["kubernetes".to_owned()]),
        "not finalized while content remains"
    );
    // The configmap is being deleted, held by its finalizer.
    let held = configmaps.get("held").await.expect("still there");
    assert!(held.metadata.deletion_timestamp.is_some());

    // Releasing it lets the namespace go.
    configmaps
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("remove the finalizer");
    wait_until_gone(&cluster, "held").await;
    cluster.stop().await;
}
