//! kubemock in a kube 5 project's tests: the API server alone (`kubemock_apiserver::TestServer`)
//! with the project's own `kube::Client`, and the whole cluster (`kubemock::testing::Cluster`),
//! whose `kube::Client`, timestamps and API types are the project's own. That these compile
//! is half the point (one kube, one k8s-openapi, one jiff); the other half is that they pass.

use std::collections::BTreeMap;
use std::time::Duration;

use downstream_kube::publish_settings;
use futures_util::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};

/// How long a test waits for what must happen.
const WAIT: Duration = Duration::from_secs(30);

fn settings(key: &str, value: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(key.to_owned(), value.to_owned())])
}

#[tokio::test]
async fn a_kube_client_creates_gets_lists_and_watches_on_the_api_server() -> anyhow::Result<()> {
    let server = kubemock_apiserver::TestServer::start().await?;
    let config = kube::Config::new(server.url().parse()?);
    let client = kube::Client::try_from(config)?;

    let created =
        publish_settings(client.clone(), "greeting", settings("message", "hello")).await?;
    assert!(created.metadata.uid.is_some(), "the server assigned a uid");

    let config_maps: Api<ConfigMap> = Api::default_namespaced(client);
    let read = config_maps.get("greeting").await?;
    assert_eq!(read.data, Some(settings("message", "hello")));
    assert_eq!(
        read.metadata.creation_timestamp,
        created.metadata.creation_timestamp
    );

    let listed = config_maps.list(&ListParams::default()).await?;
    let names: Vec<_> = listed
        .iter()
        .filter_map(|c| c.metadata.name.as_deref())
        .collect();
    assert!(names.contains(&"greeting"), "{names:?}");
    let version = listed.metadata.resource_version.clone().unwrap_or_default();

    // A watch from the list's resourceVersion sees what is created after it.
    publish_settings(
        config_maps.clone().into_client(),
        "farewell",
        settings("message", "bye"),
    )
    .await?;
    let events = config_maps
        .watch(
            &WatchParams::default().fields("metadata.name=farewell"),
            &version,
        )
        .await?;
    futures_util::pin_mut!(events);
    let event = tokio::time::timeout(WAIT, events.try_next()).await??;
    match event {
        Some(WatchEvent::Added(added)) => {
            assert_eq!(added.metadata.name.as_deref(), Some("farewell"));
            assert_eq!(added.data, Some(settings("message", "bye")));
        }
        other => anyhow::bail!("expected the ADDED event of farewell, got {other:?}"),
    }
    server.stop().await?;
    Ok(())
}

#[tokio::test]
async fn the_cluster_hands_out_this_projects_kube_client_and_timestamps() -> anyhow::Result<()> {
    let start: jiff::Timestamp = "2030-01-01T00:00:00Z".parse()?;
    let cluster = kubemock::testing::Cluster::builder()
        .controllers(false)
        .virtual_clock(start)
        .start()
        .await?;
    // kubemock's `kube::Client` is this project's: no conversion between two kube versions.
    let created = publish_settings(cluster.kube_client(), "settings", settings("k", "v")).await?;
    // And its clock's time is k8s-openapi's `Time` content (jiff), compared as is.
    let stamped = created.metadata.creation_timestamp.map(|t| t.0);
    assert_eq!(stamped, Some(start));
    assert_eq!(cluster.now().await?, start);

    let config_maps: Api<ConfigMap> = Api::default_namespaced(cluster.kube_client());
    let all = config_maps.list(&ListParams::default()).await?;
    let names: Vec<_> = all.into_iter().filter_map(|c| c.metadata.name).collect();
    assert!(names.iter().any(|n| n == "settings"), "{names:?}");
    Ok(())
}
