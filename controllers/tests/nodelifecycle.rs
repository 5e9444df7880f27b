//! Node leases, the node lifecycle controller and the taint eviction controller against an
//! in-process server, on a fake clock (issue 22 item 5): the simulated kubelets renew a Lease
//! per node in `kube-node-lease`; a node taken down (`kubemock.dev/down: "true"`) is Unknown
//! once the grace period passes, tainted unreachable, its pods not Ready, and after their
//! 300 s tolerations (DefaultTolerationSeconds) evicted and replaced on the other nodes; back
//! up, its taints go and its evicted pods finish terminating. Upstream:
//! `pkg/controller/nodelifecycle/node_lifecycle_controller.go`,
//! `pkg/controller/tainteviction/taint_eviction.go`.

use std::time::Duration;

use crate::common::{Cluster, wait_for};
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kubemock_client::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kubemock_controllers::ManagerConfig;
use kubemock_controllers::clock::FakeClock;
use kubemock_controllers::kubelet::node::DOWN_ANNOTATION;
use serde_json::json;

const NS: &str = "node-down";

fn renew_time(lease: &Lease) -> Option<Timestamp> {
    lease.spec.as_ref()?.renew_time.as_ref().map(|t| t.0)
}

/// Waits until every Lease was renewed at `since` or later.
async fn leases_renewed_since(leases: &Api<Lease>, since: Timestamp) {
    wait_for("the leases renewed at the new time", || async {
        let list = leases.list(&ListParams::default()).await.expect("leases");
        list.items
            .iter()
            .all(|l| renew_time(l).is_some_and(|t| t >= since))
            .then_some(())
    })
    .await;
}

fn ready(node: &Node) -> Option<(String, Option<String>, Option<String>)> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

fn taints(node: &Node) -> Vec<(String, String)> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .map(|t| (t.key.clone(), t.effect.clone()))
        .collect()
}

fn node_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

fn pod_condition(pod: &Pod, kind: &str) -> Option<(String, Option<String>)> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

fn running_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        && pod_condition(pod, "Ready").is_some_and(|c| c.0 == "True")
}

#[tokio::test]
async fn a_node_that_goes_down_is_tainted_its_pods_evicted_and_replaced_and_it_comes_back() {
    // Whole seconds: renewTime is a MicroTime.
    let clock = FakeClock::new(kubemock_apimachinery::time::whole_seconds(Timestamp::now()));
    let cluster = Cluster::start_with(ManagerConfig::default().with_clock(clock.clone())).await;
    cluster.namespace(NS).await;
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "kube-node-lease");
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), NS);
    let deployments: Api<Deployment> = Api::namespaced(cluster.client.clone(), NS);

    // A Lease per node, held by the node, owned by its Node, of upstream's duration.
    let all = wait_for("three node leases", || async {
        let list = leases
            .list(&ListParams::default())
            .await
            .expect("leases")
            .items;
        (list.len() == 3).then_some(list)
    })
    .await;
    for lease in &all {
        let name = lease.metadata.name.clone().expect("name");
        let spec = lease.spec.clone().expect("spec");
        assert_eq!(spec.holder_identity.as_deref(), Some(name.as_str()));
        assert_eq!(spec.lease_duration_seconds, Some(40));
        let node = nodes.get(&name).await.expect("the lease's node");
        let owner = &lease.metadata.owner_references.as_ref().expect("owned")[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("Node", name.as_str())
        );
        assert_eq!(Some(&owner.uid), node.metadata.uid.as_ref());
    }
    // Renewed every 10 s of the clock.
    clock.advance(Duration::from_secs(10));

    leases_renewed_since(&leases, clock.now()).await;

    // Three replicas, one per node (the scheduler spreads them).
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}
    }))
    .expect("a deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("create the deployment");
    let running = wait_for("three pods Running and Ready", || async {
        let list = pods.list(&ListParams::default()).await.expect("pods").items;
        let ready: Vec<Pod> = list.into_iter().filter(running_ready).collect();
        (ready.len() == 3).then_some(ready)
    })
    .await;
    let victim = node_of(&running[0]);
    let victims: Vec<String> = running
        .iter()
        .filter(|p| node_of(p) == victim)
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    // DefaultTolerationSeconds gave them 300 s on unreachable and not-ready nodes.
    let tolerations = running[0]
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.clone())
        .unwrap_or_default();
    assert!(
        tolerations.iter().any(
            |t| t.key.as_deref() == Some("node.kubernetes.io/unreachable")
                && t.toleration_seconds == Some(300)
        ),
        "{tolerations:?}"
    );

    // Down: after the 50 s grace period, Unknown and tainted.
    let down = json!({"metadata": {"annotations": {DOWN_ANNOTATION: "true"}}});
    nodes
        .patch(&victim, &PatchParams::default(), &Patch::Merge(down))
        .await
        .expect("take the node down");
    clock.advance(Duration::from_secs(30));
    clock.advance(Duration::from_secs(30));
    let unreachable = [
        (
            "node.kubernetes.io/unreachable".to_owned(),
            "NoSchedule".to_owned(),
        ),
        (
            "node.kubernetes.io/unreachable".to_owned(),
            "NoExecute".to_owned(),
        ),
    ];
    wait_for("the node Unknown and tainted unreachable", || async {
        let node = nodes.get(&victim).await.expect("node");
        let (status, reason, message) = ready(&node)?;
        let tainted = unreachable.iter().all(|t| taints(&node).contains(t));
        (status == "Unknown" && tainted).then_some((reason, message))
    })
    .await;
    let node = nodes.get(&victim).await.expect("node");
    assert_eq!(
        ready(&node),
        Some((
            "Unknown".to_owned(),
            Some("NodeStatusUnknown".to_owned()),
            Some("Kubelet stopped posting node status.".to_owned())
        ))
    );
    for name in &victims {
        wait_for(&format!("pod {name} not Ready"), || async {
            let pod = pods.get(name).await.expect("pod");
            (pod_condition(&pod, "Ready")?.0 == "False").then_some(())
        })
        .await;
    }
    // A pod bound to the node while it is not Ready is marked not Ready too (upstream's
    // `processPod`): here one whose status says Ready, written after it was bound.
    let late: Pod = serde_json::from_value(json!({
        "metadata": {"name": "late"},
        "spec": {"nodeName": victim, "containers": [{"name": "c", "image": "nginx:1.27"}]}
    }))
    .expect("a pod");
    pods.create(&PostParams::default(), &late)
        .await
        .expect("create the late pod");
    let mut late = pods.get("late").await.expect("the late pod");
    late.status = Some(
        serde_json::from_value(json!({
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}]
        }))
        .expect("a status"),
    );
    pods.replace_status("late", &PostParams::default(), &late)
        .await
        .expect("write the late pod's status");
    wait_for("the late pod not Ready", || async {
        let pod = pods.get("late").await.expect("pod");
        (pod_condition(&pod, "Ready")?.0 == "False").then_some(())
    })
    .await;
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    pods.delete("late", &now)
        .await
        .expect("delete the late pod");
    // Before their tolerations run out, the pods stay.
    clock.advance(Duration::from_secs(200));
    for name in &victims {
        let pod = pods.get(name).await.expect("pod");
        assert!(
            pod.metadata.deletion_timestamp.is_none(),
            "{name} kept for now"
        );
    }

    // 300 s after the taint: evicted, marked, and replaced on the other nodes.
    clock.advance(Duration::from_secs(110));
    for name in &victims {
        let pod = wait_for(&format!("pod {name} evicted"), || async {
            let pod = pods.get(name).await.expect("pod");
            pod.metadata.deletion_timestamp.is_some().then_some(pod)
        })
        .await;
        assert_eq!(
            pod_condition(&pod, "DisruptionTarget"),
            Some(("True".to_owned(), Some("DeletionByTaintManager".to_owned())))
        );
    }
    wait_for("three replicas Running and Ready elsewhere", || async {
        let list = pods.list(&ListParams::default()).await.expect("pods").items;
        let elsewhere = list
            .iter()
            .filter(|p| running_ready(p) && node_of(p) != victim)
            .count();
        (elsewhere == 3).then_some(())
    })
    .await;
    // The other nodes stayed Ready and untainted.
    for node in nodes
        .list(&ListParams::default())
        .await
        .expect("nodes")
        .items
    {
        if node.metadata.name.as_deref() != Some(victim.as_str()) {
            assert_eq!(ready(&node).map(|r| r.0).as_deref(), Some("True"));
            assert!(taints(&node).is_empty(), "{:?}", taints(&node));
        }
    }

    // Back up: Ready, untainted, and its evicted pods gone.
    let up = json!({"metadata": {"annotations": {DOWN_ANNOTATION: null}}});
    nodes
        .patch(&victim, &PatchParams::default(), &Patch::Merge(up))
        .await
        .expect("bring the node back");
    wait_for("the node Ready and untainted", || async {
        let node = nodes.get(&victim).await.expect("node");
        (ready(&node)?.0 == "True" && taints(&node).is_empty()).then_some(())
    })
    .await;
    for name in &victims {
        wait_for(&format!("pod {name} gone"), || async {
            pods.get_opt(name)
                .await
                .expect("get")
                .is_none()
                .then_some(())
        })
        .await;
    }
    cluster.stop().await;
}

/// A kubelet whose status post fails still renews its Lease (upstream's kubelet posts its
/// status and renews its Lease in two loops: `pkg/kubelet/kubelet_node_status.go` and
/// `component-helpers/apimachinery/lease/controller.go`). Every status write is refused with
/// a conflict here (a Fault), and the status falls due when the clock passes the 5 minutes of
/// `nodeStatusReportFrequency`: the Leases are renewed at the new time all the same, and the
/// node lifecycle controller does not find the nodes silent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_status_post_does_not_stop_the_lease_renewals() {
    let clock = FakeClock::new(kubemock_apimachinery::time::whole_seconds(Timestamp::now()));
    let cluster = Cluster::start_with(ManagerConfig::default().with_clock(clock.clone())).await;
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "kube-node-lease");
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    wait_for("three node leases", || async {
        let list = leases.list(&ListParams::default()).await.expect("leases");
        (list.items.len() == 3).then_some(())
    })
    .await;

    let faults = ApiResource::new("testing.kubemock.dev", "v1", "Fault", "faults", false);
    let mut fault = DynamicObject::new("node-status-conflicts", &faults);
    fault.data.insert(
        "spec".to_owned(),
        json!({"match": {"verbs": ["update"], "resource": "nodes", "subresource": "status"},
            "action": {"status": {"code": 409}}}),
    );
    Api::<DynamicObject>::dynamic(cluster.client.clone(), &faults, None)
        .create(&PostParams::default(), &fault)
        .await
        .expect("create the fault");

    // Past the status report frequency, in steps shorter than the grace period, as time goes.
    for _ in 0..7 {
        clock.advance(Duration::from_secs(45));
        leases_renewed_since(&leases, clock.now()).await;
    }
    for node in nodes
        .list(&ListParams::default())
        .await
        .expect("nodes")
        .items
    {
        assert_eq!(
            ready(&node).map(|(status, _, _)| status).as_deref(),
            Some("True"),
            "{:?}",
            node.metadata.name
        );
    }
    cluster.stop().await;
}
