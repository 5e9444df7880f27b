//! kwok's Stages driving the simulated cluster (issue 22 item 1), against an in-process
//! server, on a [`FakeClock`] (every delay is waited on it: no real time passes): the
//! default Stages of `examples/stages/default` (kubemock's equivalents of kwok's
//! `kustomize/stage/pod/fast` and `node/fast`, `node/heartbeat`), each scenario of
//! `examples/stages/scenarios`, the kubelet stepping aside while Stages exist and back when
//! they go, invalid Stages refused with 422, and (ignored: it needs kwok's repository)
//! kwok's own shipped files.

use std::path::Path;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kubemock_client::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kubemock_controllers::kubelet::stages::resource;
use serde_json::{Value, json};

use super::{create, phase, start};
use crate::common::{apply_dir, apply_stages, examples, wait_for};

fn condition(pod: &Pod, kind: &str) -> Option<String> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| c.status.clone())
}

fn node_ready(node: &Node) -> Option<(String, Timestamp)> {
    let c = node
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")?
        .clone();
    Some((c.status, c.last_heartbeat_time?.0))
}

async fn wait_pod(pods: &Api<Pod>, name: &str, what: &str, check: impl Fn(&Pod) -> bool) -> Pod {
    wait_for(what, || async {
        let pod = pods.get_opt(name).await.ok()??;
        check(&pod).then_some(pod)
    })
    .await
}

fn container_json(pod: &Pod) -> Value {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .map(|c| serde_json::to_value(c).expect("json"))
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn the_default_stages_run_pods_jobs_deletions_and_node_heartbeats_and_the_kubelet_steps_aside()
 {
    let (cluster, pods, clock) = start("stages-default").await;
    // Before any Stage: the kubelet's own lifecycle (its container IDs).
    create(&pods, "before", json!({}), json!({})).await;
    let before = wait_pod(&pods, "before", "the kubelet to run the pod", |p| {
        condition(p, "Ready").as_deref() == Some("True")
    })
    .await;
    assert!(
        container_json(&before)["containerID"]
            .as_str()
            .is_some_and(|id| id.starts_with("kubemock://")),
        "the kubelet's own run: {before:?}"
    );

    apply_dir(&cluster, &examples().join("default")).await;

    // pod-ready: Running and Ready at once, with IPs, no container ID (the Stage's status).
    create(&pods, "web", json!({}), json!({})).await;
    let web = wait_pod(&pods, "web", "pod-ready", |p| {
        phase(p) == "Running" && condition(p, "Ready").as_deref() == Some("True")
    })
    .await;
    let status = web.status.clone().expect("status");
    assert_eq!(status.host_ip.as_deref(), Some("10.0.0.10"));
    assert!(
        status
            .pod_ip
            .as_deref()
            .is_some_and(|ip| ip.starts_with("10.244.0.")),
        "{status:?}"
    );
    assert_eq!(
        status.start_time.as_ref().map(|t| t.0),
        Some(clock.now()),
        "Now is the fake clock's"
    );
    let c = container_json(&web);
    assert_eq!(c["ready"], json!(true));
    assert!(c.get("containerID").is_none(), "rendered by the Stage: {c}");
    assert!(c["state"]["running"]["startedAt"].is_string());

    // pod-complete: a Job's pod Succeeds, and the Job completes.
    let jobs: Api<Job> = Api::namespaced(cluster.client.clone(), "stages-default");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "once"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}},
    }))
    .expect("a job");
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("create the job");
    wait_for("the Job to complete", || async {
        let job = jobs.get("once").await.ok()?;
        (job.status?.succeeded? == 1).then_some(())
    })
    .await;

    // pod-delete: a deleted pod is removed.
    pods.delete("web", &DeleteParams::default())
        .await
        .expect("delete");
    wait_for("pod-delete", || async {
        pods.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await;

    // node-heartbeat: the Ready node's conditions are posted again 20 to 45 s later.
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    let (_, first) = node_ready(&nodes.get("kubemock-node-0").await.expect("node")).expect("ready");
    let t0 = clock.now();
    clock.set(t0 + Duration::from_secs(45));
    let (status, beat) = wait_for("a heartbeat", || async {
        let node = nodes.get("kubemock-node-0").await.ok()?;
        node_ready(&node).filter(|(_, at)| *at > first)
    })
    .await;
    assert_eq!(status, "True");
    assert_eq!(beat, t0 + Duration::from_secs(45));

    // node-initialize: a user-created simulated node without status becomes Ready.
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "extra",
        "annotations": {"kubemock.dev/simulated": "true"}}}))
    .expect("a node");
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("create the node");
    let extra = wait_for("node-initialize", || async {
        let node = nodes.get("extra").await.ok()?;
        node_ready(&node).filter(|(s, _)| s == "True").map(|_| node)
    })
    .await;
    let status = serde_json::to_value(extra.status).expect("json");
    assert_eq!(status["phase"], json!("Running"));
    assert_eq!(
        status["addresses"][1],
        json!({"type": "Hostname", "address": "extra"})
    );
    assert_eq!(
        status["daemonEndpoints"]["kubeletEndpoint"]["Port"],
        json!(10250)
    );
    assert_eq!(status["conditions"].as_array().map(Vec::len), Some(5));

    // Without Stages the kubelet runs pods again.
    let stages: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &resource());
    stages
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .expect("delete the Stages");
    wait_for("the Stages to go", || async {
        stages
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .is_empty()
            .then_some(())
    })
    .await;
    create(&pods, "after", json!({}), json!({})).await;
    let after = wait_pod(&pods, "after", "the kubelet to run the pod again", |p| {
        condition(p, "Ready").as_deref() == Some("True")
    })
    .await;
    assert!(
        container_json(&after)["containerID"]
            .as_str()
            .is_some_and(|id| id.starts_with("kubemock://")),
        "the kubelet's own run again: {after:?}"
    );
    cluster.stop().await;
}

#[tokio::test]
async fn the_scenario_stages_fail_crash_loop_start_slowly_and_take_a_node_down_on_the_clock() {
    let (cluster, pods, clock) = start("stages-scenarios").await;
    apply_dir(&cluster, &examples().join("default")).await;
    apply_dir(&cluster, &examples().join("scenarios")).await;
    let t0 = clock.now();
    let labelled = |label: &str| json!({"metadata": {"labels": {label: "true"}}});
    let create_labelled = |name: &'static str, label: &'static str, annotations: Value| {
        let pods = pods.clone();
        async move {
            let mut pod = labelled(label);
            pod["metadata"]["name"] = json!(name);
            pod["metadata"]["annotations"] = annotations;
            pod["spec"] = json!({"containers": [{"name": "app", "image": "busybox"}]});
            let pod: Pod = serde_json::from_value(pod).expect("a pod");
            pods.create(&PostParams::default(), &pod)
                .await
                .expect("create");
        }
    };
    create_labelled(
        "fails",
        "stages.kubemock.dev/fail",
        json!({"stages.kubemock.dev/exit-code": "3"}),
    )
    .await;
    create_labelled("crash", "stages.kubemock.dev/crash-loop", json!({})).await;
    create_labelled(
        "slow",
        "stages.kubemock.dev/slow-start",
        json!({"stages.kubemock.dev/ready-after": "12s"}),
    )
    .await;

    // All run at once (slow not Ready), nothing more until the clock moves.
    for name in ["fails", "crash", "slow"] {
        wait_pod(&pods, name, "the pods to run", |p| phase(p) == "Running").await;
    }
    let slow = pods.get("slow").await.expect("get");
    assert_eq!(condition(&slow, "Ready").as_deref(), Some("False"));

    // 3 s: the crash-looping container exits and waits.
    clock.set(t0 + Duration::from_secs(3));
    let crash = wait_pod(&pods, "crash", "the first crash", |p| {
        container_json(p)["state"]["waiting"]["reason"] == json!("CrashLoopBackOff")
    })
    .await;
    let c = container_json(&crash);
    assert_eq!(c["restartCount"], json!(0));
    assert_eq!(c["lastState"]["terminated"]["exitCode"], json!(1));
    assert_eq!(condition(&crash, "Ready").as_deref(), Some("False"));

    // 5 s: the failing pod fails with its exit code.
    clock.set(t0 + Duration::from_secs(5));
    let fails = wait_pod(&pods, "fails", "the failure", |p| phase(p) == "Failed").await;
    assert_eq!(
        container_json(&fails)["state"]["terminated"]["exitCode"],
        json!(3)
    );

    // 12 s: the slow pod is Ready.
    clock.set(t0 + Duration::from_secs(12));
    wait_pod(&pods, "slow", "the slow start", |p| {
        condition(p, "Ready").as_deref() == Some("True")
    })
    .await;

    // The back-off: each restart 10 s, 20 s, 40 s after the crash before it; each run 3 s.
    let mut crashed_at = t0 + Duration::from_secs(3);
    for (restarts, backoff) in [(1, 10), (2, 20), (3, 40)] {
        let due = crashed_at + Duration::from_secs(backoff);
        clock.set(due);
        let pod = wait_pod(&pods, "crash", "a restart", |p| {
            container_json(p)["restartCount"] == json!(restarts)
                && container_json(p)["state"]["running"].is_object()
        })
        .await;
        let c = container_json(&pod);
        let started: Timestamp =
            serde_json::from_value(c["state"]["running"]["startedAt"].clone()).expect("a time");
        assert_eq!(started, due, "restart {restarts} after {backoff} s");
        assert_eq!(condition(&pod, "Ready").as_deref(), Some("True"));
        crashed_at = due + Duration::from_secs(3);
        clock.set(crashed_at);
        wait_pod(&pods, "crash", "the next crash", |p| {
            container_json(p)["state"]["waiting"]["reason"] == json!("CrashLoopBackOff")
                && container_json(p)["restartCount"] == json!(restarts)
        })
        .await;
    }

    // A node labelled to go NotReady does, 10 s later.
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    nodes
        .patch(
            "kubemock-node-0",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"stages.kubemock.dev/not-ready": "true"}}}),
            ),
        )
        .await
        .expect("label the node");
    let labelled_at = clock.now();
    clock.set(labelled_at + Duration::from_secs(10));
    let (status, at) = wait_for("the node to go NotReady", || async {
        let node = nodes.get("kubemock-node-0").await.ok()?;
        node_ready(&node).filter(|(s, _)| s == "False")
    })
    .await;
    assert_eq!(
        (status.as_str(), at),
        ("False", labelled_at + Duration::from_secs(10))
    );
    cluster.stop().await;
}

#[tokio::test]
async fn invalid_stages_are_refused_with_field_errors() {
    let (cluster, _pods, _clock) = start("stages-invalid").await;
    let api: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &resource());
    let cases = [
        (
            json!({"resourceRef": {"apiGroup": "v1", "kind": "Pod"},
                   "selector": {"matchExpressions": [{"key": ".status.phase", "operator": "Equals", "values": ["x"]}]}}),
            "spec.selector.matchExpressions[0].operator",
        ),
        (
            json!({"resourceRef": {"apiGroup": "v1", "kind": "Pod"},
                   "selector": {"matchExpressions": [{"key": ".status.phase |", "operator": "Exists"}]}}),
            "spec.selector.matchExpressions[0].key",
        ),
        (
            json!({"resourceRef": {"apiGroup": "v1", "kind": "Pod"}, "selector": {"matchLabels": {"a": "b"}},
                   "next": {"statusTemplate": "phase: {{ .status.phase | Nope }}"}}),
            "spec.next.statusTemplate",
        ),
        (
            json!({"resourceRef": {"apiGroup": "v1", "kind": "Pod"}, "selector": {"matchLabels": {"a": "b"}},
                   "delay": {"durationMilliseconds": -5}}),
            "spec.delay.durationMilliseconds",
        ),
        (
            json!({"resourceRef": {"apiGroup": "apps/v1", "kind": "Deployment"}, "selector": {}}),
            "spec.resourceRef.kind",
        ),
        (
            json!({"resourceRef": {"apiGroup": "v1", "kind": "Pod"}, "selector": {},
                   "next": {"statusTemplate": "phase: Running"}}),
            "spec.selector",
        ),
    ];
    for (i, (spec, field)) in cases.into_iter().enumerate() {
        let stage: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage",
            "metadata": {"name": format!("bad-{i}")}, "spec": spec,
        }))
        .expect("a Stage");
        let err = api
            .create(&PostParams::default(), &stage)
            .await
            .expect_err("refused");
        assert_eq!(err.code(), Some(422), "{field}: {err:?}");
        let causes: Vec<String> = err
            .status()
            .and_then(|s| s.details.as_ref())
            .and_then(|d| d.causes.as_ref())
            .map(|c| c.iter().filter_map(|c| c.field.clone()).collect())
            .unwrap_or_default();
        assert!(
            causes.iter().any(|c| c == field),
            "{field} not in {causes:?}"
        );
    }
    cluster.stop().await;
}

/// kwok's repository: `KWOK_REPO` (a checkout or a bare mirror), else the session mirror.
fn kwok_file(path: &str) -> String {
    let repo = std::env::var("KWOK_REPO")
        .unwrap_or_else(|_| "/work/.mirror/kubernetes-sigs+kwok/repo".to_owned());
    let checkout = Path::new(&repo).join(path);
    if let Ok(text) = std::fs::read_to_string(&checkout) {
        return text;
    }
    let output = std::process::Command::new("git")
        .args(["--git-dir", &repo, "show", &format!("HEAD:{path}")])
        .output()
        .unwrap_or_else(|e| panic!("kwok's repository is needed at KWOK_REPO ({repo}): {e}"));
    assert!(
        output.status.success(),
        "kwok's {path} is missing from KWOK_REPO ({repo}): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

#[tokio::test]
#[ignore = "needs kwok's repository (KWOK_REPO, a checkout or bare mirror): cargo test -p kubemock-controllers --test controllers -- --ignored kwoks"]
async fn kwoks_own_shipped_stages_give_the_documented_transitions() {
    let (cluster, pods, clock) = start("stages-kwok").await;
    for file in [
        "kustomize/stage/pod/fast/pod-ready.yaml",
        "kustomize/stage/pod/fast/pod-complete.yaml",
        "kustomize/stage/pod/fast/pod-delete.yaml",
        "kustomize/stage/node/fast/node-initialize.yaml",
        "kustomize/stage/node/heartbeat/node-heartbeat.yaml",
        "kustomize/stage/node/chaos/node-not-ready.yaml",
        "kustomize/stage/pod/chaos/pod-container-running-failed.yaml",
    ] {
        apply_stages(&cluster, &kwok_file(file)).await;
    }
    // pod-ready
    create(&pods, "web", json!({}), json!({})).await;
    let web = wait_pod(&pods, "web", "kwok's pod-ready", |p| {
        phase(p) == "Running" && condition(p, "Ready").as_deref() == Some("True")
    })
    .await;
    let status = web.status.clone().expect("status");
    assert_eq!(status.host_ip.as_deref(), Some("10.0.0.10"));
    assert!(status.pod_ip.is_some());
    // pod-complete on a Job's pod
    let jobs: Api<Job> = Api::namespaced(cluster.client.clone(), "stages-kwok");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "once"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}},
    }))
    .expect("a job");
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("create the job");
    wait_for("kwok's pod-complete to complete the Job", || async {
        (jobs.get("once").await.ok()?.status?.succeeded? == 1).then_some(())
    })
    .await;
    // pod-container-running-failed: labelled, 1 s later (its default delay), Failed.
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "failing",
        "labels": {"pod-container-running-failed.stage.kwok.x-k8s.io": "true"},
        "annotations": {"pod-container-running-failed.stage.kwok.x-k8s.io/exit-code": "7"}},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]}}))
    .expect("a pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create");
    wait_pod(&pods, "failing", "running", |p| phase(p) == "Running").await;
    clock.set(clock.now() + Duration::from_secs(1));
    let failed = wait_pod(
        &pods,
        "failing",
        "kwok's pod-container-running-failed",
        |p| phase(p) == "Failed",
    )
    .await;
    assert_eq!(
        container_json(&failed)["state"]["terminated"]["exitCode"],
        json!(7)
    );
    // pod-delete
    pods.delete("web", &DeleteParams::default())
        .await
        .expect("delete");
    wait_for("kwok's pod-delete", || async {
        pods.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await;
    // node-initialize, then node-heartbeat (20 s, jitter to 25 s), on a user-created node.
    let nodes: Api<Node> = Api::all(cluster.client.clone());
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "kwok-node",
        "annotations": {"kubemock.dev/simulated": "true"}}}))
    .expect("a node");
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("create the node");
    let (_, first) = wait_for("kwok's node-initialize", || async {
        let node = nodes.get("kwok-node").await.ok()?;
        let phase = node.status.as_ref()?.phase.clone()?;
        node_ready(&node).filter(|(s, _)| s == "True" && phase == "Running")
    })
    .await;
    let t0 = clock.now();
    clock.set(t0 + Duration::from_secs(25));
    wait_for("kwok's node-heartbeat", || async {
        let node = nodes.get("kwok-node").await.ok()?;
        node_ready(&node).filter(|(_, at)| *at > first)
    })
    .await;
    // node-not-ready: labelled, 1 s later, Ready False with kwok's default reason.
    nodes
        .patch(
            "kwok-node",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"node-not-ready.stage.kwok.x-k8s.io": "true"}}}),
            ),
        )
        .await
        .expect("label");
    clock.set(clock.now() + Duration::from_secs(1));
    let node = wait_for("kwok's node-not-ready", || async {
        let node = nodes.get("kwok-node").await.ok()?;
        node_ready(&node)
            .filter(|(s, _)| s == "False")
            .map(|_| node)
    })
    .await;
    let ready = serde_json::to_value(node.status).expect("json")["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready").cloned())
        .expect("Ready");
    assert_eq!(ready["reason"], json!("nodeFailed"));
    cluster.stop().await;
}
