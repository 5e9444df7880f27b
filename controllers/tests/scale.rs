//! The benchmark, as an ignored test that prints its figure: a Deployment of 1,000
//! replicas from create to every pod Running and Ready, against an in-process server with
//! the controllers (target: 5 s). Run it with
//! `cargo test --release -p kubemock-controllers --test scale -- --ignored --nocapture`.

mod common;

use std::time::{Duration, Instant};

use common::Cluster;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kubemock_client::{Api, ListParams, PostParams};
use kubemock_controllers::ManagerConfig;
use kubemock_controllers::kubelet::KubeletConfig;
use serde_json::json;

const REPLICAS: usize = 1_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run explicitly"]
async fn a_deployment_of_1000_replicas_becomes_ready() {
    // 110 pods per node: ten nodes hold 1,000 pods.
    let config = ManagerConfig::default().with_kubelet(KubeletConfig {
        nodes: 10,
        ready_delay: Duration::ZERO,
        ..KubeletConfig::default()
    });
    let cluster = Cluster::start_with(config).await;
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    let replicasets: Api<ReplicaSet> = Api::namespaced(cluster.client.clone(), "default");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "big"},
        "spec": {"replicas": REPLICAS, "selector": {"matchLabels": {"app": "big"}},
            "template": {"metadata": {"labels": {"app": "big"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .expect("a deployment");
    let start = Instant::now();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("create");
    let deadline = start + Duration::from_secs(300);
    // Observed through the controllers' own status (what `kubectl rollout status` reads): a
    // few small objects per poll, where listing the 1,000 pods every time would itself eat a
    // good part of the machine the benchmark measures.
    let mut created_at = None;
    loop {
        if created_at.is_none() {
            let replicasets = replicasets
                .list(&ListParams::default().labels("app=big"))
                .await
                .expect("list replicasets")
                .items;
            let pods_created: i32 = replicasets
                .iter()
                .filter_map(|rs| rs.status.as_ref())
                .map(|s| s.replicas)
                .sum();
            if usize::try_from(pods_created).ok() == Some(REPLICAS) {
                created_at = Some(start.elapsed());
            }
        }
        let status = deployments
            .get("big")
            .await
            .expect("get the deployment")
            .status
            .unwrap_or_default();
        let ready = usize::try_from(status.ready_replicas.unwrap_or(0)).unwrap_or(0);
        if ready == REPLICAS && status.updated_replicas == status.ready_replicas {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {ready} of {REPLICAS} ready"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = start.elapsed();
    println!(
        "deployment of {REPLICAS} replicas: all pods created after {created_at:?}, all Running \
         and Ready (the Deployment's readyReplicas) after {elapsed:?}"
    );
    // Every pod really is Running and Ready, as the status said.
    let list = pods
        .list(&ListParams::default().labels("app=big"))
        .await
        .expect("list")
        .items;
    let ready = list
        .iter()
        .filter(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .count();
    assert_eq!((list.len(), ready), (REPLICAS, REPLICAS));
    cluster.stop().await;
}
