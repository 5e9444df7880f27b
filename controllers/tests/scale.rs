//! The benchmark, as an ignored test that prints its figures: a Deployment of 1,000
//! replicas from create to every pod Running and Ready, against an in-process server with
//! the controllers (target: 5 s), measured twice in one run, each on a fresh server: as the
//! kubelet's own lifecycle runs it (the baseline), then with kwok's Stages driving the pods
//! and nodes (`examples/stages/default`) and the metrics on (every pod with a usage
//! annotation, an HPA over the Deployment computing its utilization every sync, and a
//! `kubectl top pods`-like read of `metrics.k8s.io` every second). Run it with
//! `cargo test --release -p kubemock-controllers --test controllers scale:: -- --ignored
//! --nocapture`.

use std::time::{Duration, Instant};

use crate::common::{Cluster, apply_dir, examples};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Pod;
use kubemock_client::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kubemock_controllers::ManagerConfig;
use kubemock_controllers::kubelet::KubeletConfig;
use serde_json::json;

const REPLICAS: usize = 1_000;

/// How often the metrics run reads every pod's metrics, as `kubectl top pods` would.
const TOP_EVERY: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run explicitly"]
async fn a_deployment_of_1000_replicas_becomes_ready() {
    let (created, ready) = run(false).await;
    let (created_on, ready_on) = run(true).await;
    println!(
        "deployment of {REPLICAS} replicas, all pods created / all Running and Ready:\n  \
         baseline (the kubelet's lifecycle): {created:?} / {ready:?}\n  \
         Stages and metrics on: {created_on:?} / {ready_on:?} ({:.2}x the baseline's time to Ready)",
        ready_on.as_secs_f64() / ready.as_secs_f64()
    );
}

/// One measurement on a fresh cluster: the time until every pod was created, and until every
/// pod was Running and Ready.
async fn run(stages_and_metrics: bool) -> (Duration, Duration) {
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
    let mut template = json!({"metadata": {"labels": {"app": "big"}},
        "spec": {"containers": [{"name": "c", "image": "nginx",
            "resources": {"requests": {"cpu": "100m"}}}]}});
    if stages_and_metrics {
        apply_dir(&cluster, &examples().join("default")).await;
        template["metadata"]["annotations"] =
            json!({"kubemock.dev/cpu-usage": "60m", "kubemock.dev/memory-usage": "20Mi"});
        let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(cluster.client.clone(), "default");
        // Bounds that hold the replicas where they are: the controller computes the
        // utilization of all the pods every sync, and scales nothing.
        let hpa = serde_json::from_value(json!({"metadata": {"name": "big"}, "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "big"},
            "minReplicas": REPLICAS, "maxReplicas": REPLICAS,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}]}}))
        .expect("an HPA");
        hpas.create(&PostParams::default(), &hpa)
            .await
            .expect("create the HPA");
    }
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "big"},
        "spec": {"replicas": REPLICAS, "selector": {"matchLabels": {"app": "big"}},
            "template": template}
    }))
    .expect("a deployment");
    let top: Api<DynamicObject> = Api::namespaced_with(
        cluster.client.clone(),
        "default",
        &ApiResource::new("metrics.k8s.io", "v1beta1", "PodMetrics", "pods", true),
    );
    let mut last_top = Instant::now();
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
        if stages_and_metrics && last_top.elapsed() >= TOP_EVERY {
            last_top = Instant::now();
            top.list(&ListParams::default())
                .await
                .expect("read the pods' metrics");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = start.elapsed();
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
    if stages_and_metrics {
        // The Stages ran them (pod-ready writes no container ID; the kubelet's own run does).
        let by_stage = list.iter().all(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.container_statuses.as_ref())
                .is_some_and(|c| c.iter().all(|c| c.container_id.is_none()))
        });
        assert!(by_stage, "pods run by the Stages");
    }
    cluster.stop().await;
    (created_at.unwrap_or(elapsed), elapsed)
}
