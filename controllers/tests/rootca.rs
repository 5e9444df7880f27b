//! The root CA certificate publisher against an in-process server: every namespace gets
//! `kube-root-ca.crt` with the CA bundle and upstream's description, including the namespaces
//! the server creates at startup; an edit is put back and a deletion undone
//! (`pkg/controller/certificates/rootcacertpublisher/publisher_test.go`'s cases).

use crate::common::{Cluster, wait_for};
use k8s_openapi::api::core::v1::ConfigMap;
use kubemock_client::{Api, DeleteParams, Patch, PatchParams};
use kubemock_controllers::ManagerConfig;
use kubemock_controllers::manager::ROOT_CA_PUBLISHER;
use kubemock_controllers::rootca::{CA_KEY, CONFIG_MAP, DESCRIPTION, DESCRIPTION_ANNOTATION};
use serde_json::json;

const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

/// Waits until the namespace's ConfigMap holds the CA and the description; returns it.
async fn published(api: &Api<ConfigMap>, what: &str) -> ConfigMap {
    wait_for(what, || async {
        let config_map = api.get_opt(CONFIG_MAP).await.expect("get")?;
        let ca = config_map.data.as_ref()?.get(CA_KEY)?;
        let described = config_map
            .metadata
            .annotations
            .as_ref()?
            .get(DESCRIPTION_ANNOTATION)?;
        (ca == CA && described == DESCRIPTION && config_map.data.as_ref()?.len() == 1)
            .then_some(config_map)
    })
    .await
}

#[tokio::test]
async fn every_namespace_holds_the_root_ca_and_edits_are_undone() {
    let config = ManagerConfig::from_list(ROOT_CA_PUBLISHER)
        .expect("a controller list")
        .with_root_ca(CA);
    let cluster = Cluster::start_with(config).await;
    // The namespaces the server made at startup, and a new one.
    for namespace in ["default", "kube-system", "kube-public"] {
        let api = Api::namespaced(cluster.client.clone(), namespace);
        published(&api, &format!("{CONFIG_MAP} in {namespace}")).await;
    }
    cluster.namespace("rootca").await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), "rootca");
    let first = published(&api, "the ConfigMap of a new namespace").await;

    // Changed data and a dropped description are put back.
    api.patch(
        CONFIG_MAP,
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {CA_KEY: "tampered", "extra": "x"},
                             "metadata": {"annotations": {DESCRIPTION_ANNOTATION: null}}})),
    )
    .await
    .expect("edit the ConfigMap");
    let repaired = published(&api, "the edited ConfigMap put back").await;
    assert_eq!(
        repaired.metadata.uid, first.metadata.uid,
        "updated, not recreated"
    );

    // A deleted one comes back.
    api.delete(CONFIG_MAP, &DeleteParams::default())
        .await
        .expect("delete the ConfigMap");
    let recreated = published(&api, "the deleted ConfigMap recreated").await;
    assert_ne!(recreated.metadata.uid, first.metadata.uid);
    cluster.stop().await;
}
