//! ResourceQuota against an in-process server with the controllers (issue 22 item 7): the
//! quota controller keeps `status.hard` and `status.used`; the ResourceQuota admission
//! refuses what would exceed a quota with upstream's 403 messages, and charges concurrent
//! creates atomically. Upstream: `pkg/controller/resourcequota`,
//! `staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go`.

use std::collections::BTreeMap;

use crate::common::{Cluster, wait_for};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ResourceQuota};
use kubemock_client::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

/// The quota's `status.used`, once the controller has written its `status.hard`.
async fn used(quotas: &Api<ResourceQuota>, name: &str) -> Option<BTreeMap<String, String>> {
    let quota = quotas.get(name).await.expect("get the quota");
    let status = quota.status?;
    status.hard.as_ref()?;
    Some(status.used?.into_iter().map(|(k, v)| (k, v.0)).collect())
}

async fn create_quota(quotas: &Api<ResourceQuota>, name: &str, spec: Value) {
    let quota: ResourceQuota =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("a quota");
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .expect("create the quota");
}

fn pod(name: &str, resources: Value) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "resources": resources}]}}))
    .expect("a pod")
}

/// The message of a refused request.
fn refusal(err: &kubemock_client::Error) -> (u16, String) {
    match err {
        kubemock_client::Error::Api(status) => (
            u16::try_from(status.code.unwrap_or_default()).unwrap_or_default(),
            status.message.clone().unwrap_or_default(),
        ),
        other => panic!("not an API refusal: {other}"),
    }
}

#[tokio::test]
async fn pods_past_the_quota_are_refused_with_upstreams_messages_and_usage_is_recounted() {
    let cluster = Cluster::start().await;
    cluster.namespace("quota-pods").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(cluster.client.clone(), "quota-pods");
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), "quota-pods");
    create_quota(&quotas, "pods", json!({"hard": {"pods": "2"}})).await;
    wait_for("the quota's status", || async {
        let used = used(&quotas, "pods").await?;
        (used.get("pods").map(String::as_str) == Some("0")).then_some(())
    })
    .await;
    for name in ["p1", "p2"] {
        pods.create(&PostParams::default(), &pod(name, json!({})))
            .await
            .expect("within the quota");
    }
    // The admission charged them at once.
    assert_eq!(used(&quotas, "pods").await.expect("status")["pods"], "2");
    let err = pods
        .create(&PostParams::default(), &pod("p3", json!({})))
        .await
        .expect_err("past the quota");
    assert_eq!(
        refusal(&err),
        (
            403,
            "pods \"p3\" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2"
                .to_owned()
        )
    );
    // A deleted pod is given back by the controller's recount.
    pods.delete("p1", &DeleteParams::default())
        .await
        .expect("delete p1");
    wait_for("the pod given back", || async {
        let used = used(&quotas, "pods").await?;
        (used["pods"] == "1").then_some(())
    })
    .await;
    pods.create(&PostParams::default(), &pod("p3", json!({})))
        .await
        .expect("room again");

    // A quota on limits.cpu wants every container to state it.
    create_quota(
        &quotas,
        "compute",
        json!({"hard": {"limits.cpu": "1", "requests.memory": "1Gi"}}),
    )
    .await;
    wait_for("the compute quota's status", || async {
        used(&quotas, "compute").await.map(|_| ())
    })
    .await;
    let err = pods
        .create(&PostParams::default(), &pod("bare", json!({})))
        .await
        .expect_err("no limits");
    assert_eq!(
        refusal(&err),
        (
            403,
            "pods \"bare\" is forbidden: failed quota: compute: must specify limits.cpu for: app; requests.memory for: app"
                .to_owned()
        )
    );
    cluster.stop().await;
}

#[tokio::test]
async fn concurrent_creates_never_exceed_the_quota_and_counts_are_kept() {
    let cluster = Cluster::start().await;
    cluster.namespace("quota-counts").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(cluster.client.clone(), "quota-counts");
    let config_maps: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), "quota-counts");
    create_quota(
        &quotas,
        "counts",
        json!({"hard": {"count/configmaps": "5", "count/deployments.apps": "3", "secrets": "4"}}),
    )
    .await;
    let before = wait_for("the quota's status", || async {
        let used = used(&quotas, "counts").await?;
        (used.len() == 3).then_some(used)
    })
    .await;
    assert_eq!(before["count/deployments.apps"], "0");
    assert_eq!(before["secrets"], "0");
    let taken: usize = before["count/configmaps"].parse().expect("a count");
    let attempts = 20;
    let mut creates = tokio::task::JoinSet::new();
    for i in 0..attempts {
        let config_maps = config_maps.clone();
        creates.spawn(async move {
            let map: ConfigMap =
                serde_json::from_value(json!({"metadata": {"name": format!("cm-{i}")}}))
                    .expect("a configmap");
            config_maps.create(&PostParams::default(), &map).await
        });
    }
    let mut created = 0;
    let mut refused = 0;
    while let Some(result) = creates.join_next().await {
        match result.expect("the create task") {
            Ok(_) => created += 1,
            Err(err) => {
                let (code, message) = refusal(&err);
                assert_eq!(code, 403, "{message}");
                assert!(
                    message.contains("exceeded quota: counts, requested: count/configmaps=1"),
                    "{message}"
                );
                refused += 1;
            }
        }
    }
    assert_eq!(created, 5 - taken, "exactly the free slots");
    assert_eq!(created + refused, attempts);
    wait_for("the count recounted", || async {
        let used = used(&quotas, "counts").await?;
        (used["count/configmaps"] == "5").then_some(())
    })
    .await;
    cluster.stop().await;
}
