//! The DaemonSet controller with the scheduler and the simulated kubelet: one Running pod
//! per eligible node (nodeSelector, taints and tolerations), pods following nodes as they
//! come and go, failed pods replaced, revisions and a rolling update that never has more
//! than maxUnavailable nodes without an available pod, and the status `kubectl rollout
//! status` reads.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::{Cluster, wait_for};
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kubemock_client::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kubemock_controllers::ManagerConfig;
use kubemock_controllers::kubelet::{KubeletConfig, SIMULATED_ANNOTATION};
use serde_json::{Value, json};

struct Fixture {
    cluster: Cluster,
    daemonsets: Api<DaemonSet>,
    pods: Api<Pod>,
    nodes: Api<Node>,
}

impl Fixture {
    /// `nodes` simulated nodes, pods Ready `ready_delay` after they run.
    async fn start(nodes: usize, ready_delay: Duration) -> Self {
        let config = ManagerConfig::default().with_kubelet(KubeletConfig {
            nodes,
            ready_delay,
            ..KubeletConfig::default()
        });
        let cluster = Cluster::start_with(config).await;
        let client = cluster.client.clone();
        let f = Fixture {
            daemonsets: Api::namespaced(client.clone(), "default"),
            pods: Api::namespaced(client.clone(), "default"),
            nodes: Api::all(client),
            cluster,
        };
        wait_for("the simulated nodes to register", || async {
            let registered = f.nodes.list(&ListParams::default()).await.ok()?.items.len();
            (registered == nodes).then_some(())
        })
        .await;
        f
    }

    /// Creates the DaemonSet `name` (pods labelled `app: name`) with `spec` merged in.
    async fn create(&self, name: &str, spec: Value) -> DaemonSet {
        let mut full = json!({
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "agent", "image": "agent:1"}]}}
        });
        if let (Value::Object(full), Value::Object(extra)) = (&mut full, spec) {
            full.extend(extra);
        }
        let ds: DaemonSet =
            serde_json::from_value(json!({"metadata": {"name": name}, "spec": full}))
                .expect("a daemonset");
        self.daemonsets
            .create(&PostParams::default(), &ds)
            .await
            .expect("create the daemonset")
    }

    /// A user-created node the kubelet simulates.
    async fn add_node(&self, name: &str, labels: Value, taints: Value) {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels,
                "annotations": {SIMULATED_ANNOTATION: "true"}},
            "spec": {"taints": taints}
        }))
        .expect("a node");
        self.nodes
            .create(&PostParams::default(), &node)
            .await
            .expect("create the node");
    }

    /// The live (not terminating) pods of `app`, by node.
    async fn pods_by_node(&self, app: &str) -> BTreeMap<String, Vec<Pod>> {
        let mut by_node: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
        for pod in self
            .pods
            .list(&ListParams::default().labels(&format!("app={app}")))
            .await
            .expect("list pods")
            .items
        {
            if pod.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let node = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default();
            by_node.entry(node).or_default().push(pod);
        }
        by_node
    }

    /// Waits until exactly `nodes` each run one Running and Ready pod of `app`, and no other
    /// node runs one.
    async fn wait_one_ready_pod_on(&self, app: &str, nodes: &[&str]) -> BTreeMap<String, Pod> {
        let wanted: Vec<String> = nodes.iter().map(|n| (*n).to_owned()).collect();
        wait_for(&format!("one ready {app} pod on each of {nodes:?}"), || {
            let wanted = wanted.clone();
            async move {
                let by_node = self.pods_by_node(app).await;
                let placed: Vec<String> = by_node.keys().cloned().collect();
                if placed != wanted {
                    return None;
                }
                let mut one = BTreeMap::new();
                for (node, mut pods) in by_node {
                    if pods.len() != 1 || !is_ready(&pods[0]) {
                        return None;
                    }
                    one.insert(node, pods.remove(0));
                }
                Some(one)
            }
        })
        .await
    }

    /// Waits until the status is observed and counts `desired` nodes all up to date and
    /// available.
    async fn wait_status_converged(&self, name: &str, desired: i32) -> DaemonSet {
        wait_for(
            &format!("{name}'s status to converge on {desired}"),
            || async {
                let ds = self.daemonsets.get(name).await.expect("get");
                let status = ds.status.clone()?;
                let observed = status.observed_generation >= ds.metadata.generation;
                let settled = status.desired_number_scheduled == desired
                    && status.current_number_scheduled == desired
                    && status.number_ready == desired
                    && status.updated_number_scheduled.unwrap_or(0) == desired
                    && status.number_available.unwrap_or(0) == desired
                    && status.number_unavailable.unwrap_or(0) == 0
                    && status.number_misscheduled == 0;
                (observed && settled).then_some(ds)
            },
        )
        .await
    }
}

fn is_ready(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    status.and_then(|s| s.phase.as_deref()) == Some("Running")
        && status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn label(pod: &Pod, key: &str) -> Option<String> {
    pod.metadata.labels.as_ref()?.get(key).cloned()
}

const NODES: [&str; 3] = ["kubemock-node-0", "kubemock-node-1", "kubemock-node-2"];

#[tokio::test]
async fn a_daemonset_runs_one_pod_per_node_with_revision_events_and_status() {
    let f = Fixture::start(3, Duration::ZERO).await;
    let ds = f.create("agent", json!({})).await;
    let pods = f.wait_one_ready_pod_on("agent", &NODES).await;
    f.wait_status_converged("agent", 3).await;

    let revisions: Api<ControllerRevision> = Api::namespaced(f.cluster.client.clone(), "default");
    let revision = revisions
        .list(&ListParams::default())
        .await
        .expect("revisions")
        .items
        .pop()
        .expect("one revision");
    let hash = label(
        &pod_of(&pods, "kubemock-node-0"),
        "controller-revision-hash",
    )
    .expect("hash label");
    assert_eq!(
        revision.metadata.name.as_deref(),
        Some(format!("agent-{hash}").as_str())
    );
    assert_eq!(revision.revision, 1);
    let owner = &revision.metadata.owner_references.clone().expect("owned")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        (
            "DaemonSet",
            ds.metadata.uid.as_deref().unwrap_or(""),
            Some(true)
        )
    );

    for (node, pod) in &pods {
        assert_eq!(label(pod, "controller-revision-hash"), Some(hash.clone()));
        assert_eq!(label(pod, "pod-template-generation").as_deref(), Some("1"));
        let spec = pod.spec.clone().expect("spec");
        let terms = spec
            .affinity
            .and_then(|a| a.node_affinity)
            .and_then(|a| a.required_during_scheduling_ignored_during_execution)
            .expect("a node affinity")
            .node_selector_terms;
        let field = &terms[0].match_fields.as_ref().expect("match fields")[0];
        assert_eq!(
            (field.key.as_str(), field.values.clone()),
            ("metadata.name", Some(vec![node.clone()]))
        );
        let tolerated: Vec<String> = spec
            .tolerations
            .iter()
            .flatten()
            .filter_map(|t| t.key.clone())
            .collect();
        assert!(
            tolerated.contains(&"node.kubernetes.io/unschedulable".to_owned())
                && tolerated.contains(&"node.kubernetes.io/not-ready".to_owned()),
            "{tolerated:?}"
        );
    }

    let events: Api<Event> = Api::namespaced(f.cluster.client.clone(), "default");
    let created: Vec<String> = events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| {
            e.involved_object.kind.as_deref() == Some("DaemonSet")
                && e.reason.as_deref() == Some("SuccessfulCreate")
        })
        .filter_map(|e| e.message)
        .collect();
    for pod in pods.values() {
        let message = format!(
            "Created pod: {}",
            pod.metadata.name.clone().unwrap_or_default()
        );
        assert!(created.contains(&message), "{message} in {created:?}");
    }
    f.cluster.stop().await;
}

fn pod_of(pods: &BTreeMap<String, Pod>, node: &str) -> Pod {
    pods.get(node).cloned().expect("a pod on the node")
}

#[tokio::test]
async fn a_node_selector_limits_the_nodes_and_follows_label_changes() {
    let f = Fixture::start(3, Duration::ZERO).await;
    let label_node = |value: Value| {
        let nodes = f.nodes.clone();
        async move {
            nodes
                .patch(
                    "kubemock-node-1",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"labels": {"disk": value}}})),
                )
                .await
                .expect("label the node");
        }
    };
    label_node(json!("ssd")).await;
    f.create(
        "ssd",
        json!({"template": {"metadata": {"labels": {"app": "ssd"}},
            "spec": {"nodeSelector": {"disk": "ssd"},
                "containers": [{"name": "agent", "image": "agent:1"}]}}}),
    )
    .await;
    f.wait_one_ready_pod_on("ssd", &["kubemock-node-1"]).await;
    f.wait_status_converged("ssd", 1).await;

    label_node(Value::Null).await;
    wait_for("the pod of the no longer selected node to go", || async {
        f.pods_by_node("ssd").await.is_empty().then_some(())
    })
    .await;
    wait_for("an empty status", || async {
        let status = f.daemonsets.get("ssd").await.expect("get").status?;
        (status.desired_number_scheduled == 0 && status.current_number_scheduled == 0).then_some(())
    })
    .await;
    f.cluster.stop().await;
}

#[tokio::test]
async fn a_tainted_node_gets_a_pod_only_when_tolerated() {
    let f = Fixture::start(2, Duration::ZERO).await;
    let taint = json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]);
    f.add_node("gpu", json!({}), taint).await;
    // A cordoned node still runs daemons (they tolerate unschedulable).
    f.add_node("cordoned", json!({}), json!([])).await;
    f.nodes
        .patch(
            "cordoned",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .expect("cordon");
    f.create("plain", json!({})).await;
    f.create(
        "tolerant",
        json!({"template": {"metadata": {"labels": {"app": "tolerant"}},
            "spec": {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                "effect": "NoSchedule"}],
                "containers": [{"name": "agent", "image": "agent:1"}]}}}),
    )
    .await;
    f.wait_one_ready_pod_on("plain", &["cordoned", "kubemock-node-0", "kubemock-node-1"])
        .await;
    f.wait_one_ready_pod_on(
        "tolerant",
        &["cordoned", "gpu", "kubemock-node-0", "kubemock-node-1"],
    )
    .await;
    f.wait_status_converged("plain", 3).await;
    f.wait_status_converged("tolerant", 4).await;
    f.cluster.stop().await;
}

#[tokio::test]
async fn adding_a_node_adds_a_pod_and_deleting_it_deletes_the_pod() {
    let f = Fixture::start(1, Duration::ZERO).await;
    f.create("agent", json!({})).await;
    f.wait_one_ready_pod_on("agent", &["kubemock-node-0"]).await;

    f.add_node("extra", json!({}), json!([])).await;
    let pods = f
        .wait_one_ready_pod_on("agent", &["extra", "kubemock-node-0"])
        .await;
    f.wait_status_converged("agent", 2).await;
    let on_extra = pod_of(&pods, "extra").metadata.name.clone().expect("name");

    f.nodes
        .delete("extra", &DeleteParams::default())
        .await
        .expect("delete the node");
    f.wait_one_ready_pod_on("agent", &["kubemock-node-0"]).await;
    wait_for("the pod of the deleted node to be gone", || async {
        f.pods
            .get_opt(&on_extra)
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await;
    f.wait_status_converged("agent", 1).await;
    f.cluster.stop().await;
}

#[tokio::test]
async fn a_failed_daemon_pod_is_deleted_and_replaced() {
    let f = Fixture::start(1, Duration::ZERO).await;
    f.create("agent", json!({})).await;
    let pods = f.wait_one_ready_pod_on("agent", &["kubemock-node-0"]).await;
    let mut failed = pod_of(&pods, "kubemock-node-0");
    let name = failed.metadata.name.clone().expect("name");
    failed.status.as_mut().expect("status").phase = Some("Failed".to_owned());
    f.pods
        .replace_status(&name, &PostParams::default(), &failed)
        .await
        .expect("fail the pod");
    let replaced = f.wait_one_ready_pod_on("agent", &["kubemock-node-0"]).await;
    assert_ne!(
        pod_of(&replaced, "kubemock-node-0").metadata.name,
        Some(name.clone())
    );
    wait_for("the failed pod to be gone", || async {
        f.pods
            .get_opt(&name)
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await;
    f.cluster.stop().await;
}

#[tokio::test]
async fn a_template_change_rolls_out_within_max_unavailable() {
    let f = Fixture::start(3, Duration::from_millis(200)).await;
    f.create(
        "agent",
        json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}}),
    )
    .await;
    let before = f.wait_one_ready_pod_on("agent", &NODES).await;
    f.wait_status_converged("agent", 3).await;
    let old_hash = label(
        &pod_of(&before, "kubemock-node-0"),
        "controller-revision-hash",
    );

    f.daemonsets
        .patch(
            "agent",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"containers":
                [{"name": "agent", "image": "agent:2"}]}}}})),
        )
        .await
        .expect("change the template");
    let worst = std::cell::Cell::new(0);
    let after = wait_for("every node to run an available new pod", || async {
        let by_node = f.pods_by_node("agent").await;
        let unavailable = NODES
            .iter()
            .filter(|n| !by_node.get(**n).into_iter().flatten().any(is_ready))
            .count();
        worst.set(worst.get().max(unavailable));
        assert!(
            unavailable <= 1,
            "{unavailable} nodes without an available pod"
        );
        let done = NODES.iter().all(|n| {
            by_node.get(*n).is_some_and(|pods| {
                pods.len() == 1
                    && is_ready(&pods[0])
                    && label(&pods[0], "controller-revision-hash") != old_hash
            })
        });
        done.then_some(by_node)
    })
    .await;
    assert_eq!(worst.get(), 1, "the rollout replaced pods one at a time");
    let hashes: Vec<Option<String>> = after
        .values()
        .map(|pods| label(&pods[0], "controller-revision-hash"))
        .collect();
    assert!(hashes.iter().all(|h| *h == hashes[0]), "{hashes:?}");
    for pods in after.values() {
        assert_eq!(
            label(&pods[0], "pod-template-generation").as_deref(),
            Some("2")
        );
        let image = pods[0]
            .spec
            .as_ref()
            .and_then(|s| s.containers[0].image.clone());
        assert_eq!(image.as_deref(), Some("agent:2"));
    }
    f.wait_status_converged("agent", 3).await;
    let revisions: Api<ControllerRevision> = Api::namespaced(f.cluster.client.clone(), "default");
    let mut numbers: Vec<i64> = revisions
        .list(&ListParams::default())
        .await
        .expect("revisions")
        .items
        .iter()
        .map(|r| r.revision)
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, vec![1, 2]);
    f.cluster.stop().await;
}

#[tokio::test]
async fn on_delete_updates_only_pods_that_are_deleted() {
    let f = Fixture::start(2, Duration::ZERO).await;
    f.create("agent", json!({"updateStrategy": {"type": "OnDelete"}}))
        .await;
    let before = f
        .wait_one_ready_pod_on("agent", &["kubemock-node-0", "kubemock-node-1"])
        .await;
    f.wait_status_converged("agent", 2).await;
    let changed = f
        .daemonsets
        .patch(
            "agent",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"containers":
                [{"name": "agent", "image": "agent:2"}]}}}})),
        )
        .await
        .expect("change the template");
    // The new template is observed (a second revision), but no pod is replaced.
    wait_for("the new template to be observed", || async {
        let status = f.daemonsets.get("agent").await.expect("get").status?;
        (status.observed_generation == changed.metadata.generation
            && status.updated_number_scheduled.is_none())
        .then_some(())
    })
    .await;
    let revisions: Api<ControllerRevision> = Api::namespaced(f.cluster.client.clone(), "default");
    wait_for("a second revision", || async {
        let count = revisions
            .list(&ListParams::default())
            .await
            .expect("revisions")
            .items
            .len();
        (count == 2).then_some(())
    })
    .await;
    let still = f.pods_by_node("agent").await;
    for (node, pod) in &before {
        let names: Vec<_> = still[node]
            .iter()
            .map(|p| p.metadata.name.clone())
            .collect();
        assert_eq!(
            names,
            vec![pod.metadata.name.clone()],
            "{node} keeps its pod"
        );
    }

    let victim = pod_of(&before, "kubemock-node-1");
    f.pods
        .delete(
            victim.metadata.name.as_deref().expect("name"),
            &DeleteParams::default(),
        )
        .await
        .expect("delete a pod");
    let after = wait_for("node-1's replacement from the new template", || async {
        let by_node = f.pods_by_node("agent").await;
        let replacement = by_node.get("kubemock-node-1")?.first()?.clone();
        (replacement.metadata.name != victim.metadata.name && is_ready(&replacement))
            .then_some(by_node)
    })
    .await;
    let image = |pod: &Pod| {
        pod.spec
            .as_ref()
            .and_then(|s| s.containers[0].image.clone())
    };
    assert_eq!(
        image(&after["kubemock-node-1"][0]).as_deref(),
        Some("agent:2")
    );
    assert_eq!(
        image(&after["kubemock-node-0"][0]).as_deref(),
        Some("agent:1")
    );
    wait_for("one updated pod in the status", || async {
        let status = f.daemonsets.get("agent").await.expect("get").status?;
        (status.updated_number_scheduled == Some(1) && status.number_available == Some(2))
            .then_some(())
    })
    .await;
    f.cluster.stop().await;
}
