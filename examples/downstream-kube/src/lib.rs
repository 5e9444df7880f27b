//! A downstream project's code under test: a small kube-rs helper that the tests in `tests/`
//! run against kubemock. It exists to show that kubemock's crates and a kube 5 project share
//! one k8s-openapi (docs/crates.md).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};

/// Creates (or fails to create) a ConfigMap `name` holding `data` in the client's default
/// namespace, as an application would.
pub async fn publish_settings(
    client: kube::Client,
    name: &str,
    data: BTreeMap<String, String>,
) -> kube::Result<ConfigMap> {
    let config_maps: Api<ConfigMap> = Api::default_namespaced(client);
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    };
    config_maps
        .create(&PostParams::default(), &config_map)
        .await
}
