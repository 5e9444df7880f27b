//! The scheduler and the simulated nodes and kubelet against an in-process server (issue 6
//! items 6 and 7): Ready nodes with leases, pods bound with spreading and run to Running and
//! Ready, an impossible nodeSelector leaving a pod Pending and Unschedulable until a node
//! matches, a pod without room scheduled once the pod holding it is deleted, pods of restartPolicy Never succeeding, graceful deletion completing.

use std::collections::BTreeMap;

use crate::common::{Cluster, wait_for};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kubemock_client::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

async fn start(namespace: &str) -> (Cluster, Api<Pod>) {
    let cluster = Cluster::start().await;
    cluster.namespace(namespace).await;
    let pods = Api::namespaced(cluster.client.clone(), namespace);
    (cluster, pods)
}

async fn create_pod(pods: &Api<Pod>, name: &str, spec: Value) -> Pod {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "app", "image": "nginx:1.27"}]);
    let pod: Pod =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("a pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create the pod")
}

fn condition(pod: &Pod, kind: &str) -> Option<(String, Option<String>, Option<String>)> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

async fn wait_running_ready(pods: &Api<Pod>, name: &str) -> Pod {
    wait_for(
        &format!("pod {name} to be Running and Ready"),
        || async move {
            let pod = pods.get(name).await.expect("get");
            let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
            let ready = condition(&pod, "Ready").is_some_and(|c| c.0 == "True");
            (running && ready).then_some(pod)
        },
    )
    .await
}

#[tokio::test]
async fn pods_are_bound_to_ready_nodes_spread_and_run() {
    let (cluster, pods) = start("kubelet-run").await;
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    let ready_nodes = wait_for("three Ready nodes", || async {
        let list = nodes
            .list(&ListParams::default())
            .await
            .expect("nodes")
            .items;
        let ready: Vec<Node> = list
            .into_iter()
            .filter(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .collect();
        (ready.len() == 3).then_some(ready)
    })
    .await;
    assert_eq!(
        ready_nodes[0]
            .status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .map(|a| a["pods"].0.clone()),
        Some("110".to_owned())
    );
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), "kube-node-lease");
    wait_for("the node leases", || async {
        let list = leases
            .list(&ListParams::default())
            .await
            .expect("leases")
            .items;
        (list.len() == 3).then_some(())
    })
    .await;

    // The scheduler's own node cache may still lag the API: a pod pinned to each node, once
    // bound, shows that it knows all three before the spreading is tested.
    for i in 0..3 {
        let hostname = format!("kubemock-node-{i}");
        let selector = json!({"nodeSelector": {"kubernetes.io/hostname": hostname}});
        create_pod(&pods, &format!("probe-{i}"), selector).await;
    }
    for i in 0..3 {
        wait_running_ready(&pods, &format!("probe-{i}")).await;
    }
    for i in 0..6 {
        create_pod(&pods, &format!("p{i}"), json!({})).await;
    }
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..6 {
        let pod = wait_running_ready(&pods, &format!("p{i}")).await;
        let status = pod.status.clone().expect("status");
        assert!(
            status
                .pod_ip
                .as_deref()
                .is_some_and(|ip| ip.starts_with("10.244.")),
            "{status:?}"
        );
        assert!(status.host_ip.is_some() && status.start_time.is_some());
        for kind in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
            assert_eq!(
                condition(&pod, kind).map(|c| c.0),
                Some("True".into()),
                "{kind}"
            );
        }
        let container = &status.container_statuses.expect("container statuses")[0];
        assert!(container.ready && container.started == Some(true));
        assert_eq!(container.restart_count, 0);
        assert!(
            container
                .state
                .as_ref()
                .and_then(|s| s.running.as_ref())
                .is_some()
        );
        *per_node
            .entry(pod.spec.and_then(|s| s.node_name).expect("bound"))
            .or_default() += 1;
    }
    assert_eq!(
        per_node.values().copied().collect::<Vec<_>>(),
        vec![2, 2, 2],
        "spread: {per_node:?}"
    );

    let events: Api<Event> = Api::namespaced(cluster.client.clone(), "kubelet-run");
    let reasons = wait_for("Scheduled, Pulled, Created and Started events", || async {
        let list = events
            .list(&ListParams::default())
            .await
            .expect("events")
            .items;
        let of_p0: Vec<String> = list
            .iter()
            .filter(|e| e.involved_object.name.as_deref() == Some("p0"))
            .filter_map(|e| e.reason.clone())
            .collect();
        ["Scheduled", "Pulled", "Created", "Started"]
            .iter()
            .all(|r| of_p0.iter().any(|x| x == r))
            .then_some(of_p0)
    })
    .await;
    assert!(reasons.contains(&"Scheduled".to_owned()));

    // Graceful deletion completes: the kubelet's final delete.
    pods.delete("p0", &DeleteParams::default())
        .await
        .expect("delete");
    wait_for("p0 to be gone", || async {
        pods.get_opt("p0")
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await;
    cluster.stop().await;
}

#[tokio::test]
async fn an_impossible_node_selector_stays_pending_until_a_node_matches() {
    let (cluster, pods) = start("kubelet-pending").await;
    create_pod(&pods, "picky", json!({"nodeSelector": {"disk": "ssd"}})).await;
    // The scheduler may first try while not every node is registered; it tries again as
    // each node arrives, so wait for the verdict on all three.
    let expected = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.";
    let pod = wait_for("the Unschedulable condition on all three nodes", || async {
        let pod = pods.get("picky").await.expect("get");
        condition(&pod, "PodScheduled")
            .is_some_and(|c| {
                c.0 == "False"
                    && c.1.as_deref() == Some("Unschedulable")
                    && c.2.as_deref() == Some(expected)
            })
            .then_some(pod)
    })
    .await;
    assert_eq!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Pending")
    );
    assert!(
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .is_none()
    );
    let events: Api<Event> = Api::namespaced(cluster.client.clone(), "kubelet-pending");
    wait_for("a FailedScheduling event", || async {
        events
            .list(&ListParams::default())
            .await
            .expect("events")
            .items
            .into_iter()
            .find(|e| {
                e.reason.as_deref() == Some("FailedScheduling")
                    && e.type_.as_deref() == Some("Warning")
            })
    })
    .await;

    // A node gains the label: the pod is tried again and scheduled there.
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    nodes
        .patch(
            "kubemock-node-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"disk": "ssd"}}})),
        )
        .await
        .expect("label the node");
    let pod = wait_running_ready(&pods, "picky").await;
    assert_eq!(
        pod.spec.and_then(|s| s.node_name).as_deref(),
        Some("kubemock-node-1")
    );
    cluster.stop().await;
}

#[tokio::test]
async fn a_pod_without_room_is_scheduled_once_the_pod_holding_it_goes() {
    // Upstream moves its unschedulable pods when an assigned pod is deleted
    // (`pkg/scheduler/eventhandlers.go`, `deletePodFromCache`); kubemock hands back the pods
    // found unschedulable since the last such deletion.
    let (cluster, pods) = start("kubelet-room").await;
    let big = |name: &str| -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {
            "nodeSelector": {"kubernetes.io/hostname": "kubemock-node-1"},
            "containers": [{"name": "app", "image": "nginx:1.27",
                "resources": {"requests": {"cpu": "20"}}}]}}))
        .expect("a pod")
    };
    pods.create(&PostParams::default(), &big("first"))
        .await
        .expect("create first");
    wait_running_ready(&pods, "first").await;
    pods.create(&PostParams::default(), &big("second"))
        .await
        .expect("create second");
    wait_for("second to be Unschedulable", || async {
        let pod = pods.get("second").await.expect("get");
        condition(&pod, "PodScheduled")
            .is_some_and(|c| c.0 == "False" && c.1.as_deref() == Some("Unschedulable"))
            .then_some(())
    })
    .await;
    pods.delete("first", &DeleteParams::default())
        .await
        .expect("delete first");
    let pod = wait_running_ready(&pods, "second").await;
    assert_eq!(
        pod.spec.and_then(|s| s.node_name).as_deref(),
        Some("kubemock-node-1")
    );
    cluster.stop().await;
}

#[tokio::test]
async fn pods_that_do_not_restart_succeed() {
    let (cluster, pods) = start("kubelet-complete").await;
    create_pod(&pods, "once", json!({"restartPolicy": "Never"})).await;
    let pod = wait_for("the pod to succeed", || async {
        let pod = pods.get("once").await.expect("get");
        (pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded")).then_some(pod)
    })
    .await;
    let container = &pod
        .status
        .and_then(|s| s.container_statuses)
        .expect("statuses")[0];
    let terminated = container
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .expect("terminated");
    assert_eq!(
        (terminated.exit_code, terminated.reason.as_deref()),
        (0, Some("Completed"))
    );
    cluster.stop().await;
}

#[tokio::test]
async fn a_user_created_node_that_opts_in_is_simulated() {
    let (cluster, pods) = start("kubelet-extra").await;
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    let node = |name: &str, annotations: Value| -> Node {
        serde_json::from_value(
            json!({"metadata": {"name": name, "annotations": annotations,
            "labels": {"pool": name}}}),
        )
        .expect("a node")
    };
    let simulated = json!({kubemock_controllers::kubelet::SIMULATED_ANNOTATION: "true"});
    nodes
        .create(&PostParams::default(), &node("fake", simulated))
        .await
        .expect("create the simulated node");
    nodes
        .create(&PostParams::default(), &node("real", json!({})))
        .await
        .expect("create a node nobody runs");
    let ready = wait_for("the simulated node to be Ready", || async {
        let node = nodes.get("fake").await.expect("get");
        let status = node.status.clone()?;
        status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True")
            .then_some(status)
    })
    .await;
    assert!(ready.allocatable.is_some_and(|a| a.contains_key("pods")));
    let hostname = ready
        .addresses
        .iter()
        .flatten()
        .find(|a| a.type_ == "Hostname")
        .map(|a| a.address.clone());
    assert_eq!(hostname.as_deref(), Some("fake"));

    create_pod(&pods, "on-fake", json!({"nodeSelector": {"pool": "fake"}})).await;
    let pod = wait_running_ready(&pods, "on-fake").await;
    assert_eq!(pod.spec.and_then(|s| s.node_name).as_deref(), Some("fake"));

    // A node without the annotation is left alone: never Ready, so nothing is bound to it.
    create_pod(&pods, "on-real", json!({"nodeSelector": {"pool": "real"}})).await;
    wait_for(
        "the pod for the unsimulated node to be unschedulable",
        || async {
            let pod = pods.get("on-real").await.expect("get");
            condition(&pod, "PodScheduled")
                .is_some_and(|c| c.1.as_deref() == Some("Unschedulable"))
                .then_some(())
        },
    )
    .await;
    assert!(
        nodes
            .get("real")
            .await
            .expect("get")
            .status
            .is_none_or(|s| s.conditions.is_none())
    );
    cluster.stop().await;
}
