//! The simulated containers' lifecycle without a Stage (issue 22 item 1), against an
//! in-process server: the `kubemock.dev/exit-code`, `run-seconds` and `ready-after`
//! annotations, a run-to-completion pod's `sleep N`, and a crash loop whose restartCount grows
//! with the kubelet's back-off (10 s doubling, `pkg/kubelet/kubelet.go` `backOffPeriod`) as a
//! [`FakeClock`] advances: every transition is due at a time on the kubelet's clock.

#[path = "lifecycle/stages.rs"]
mod stages;

use std::time::Duration;

use crate::common::{Cluster, wait_for};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use kubemock_client::{Api, PostParams};
use kubemock_controllers::ManagerConfig;
use kubemock_controllers::clock::FakeClock;
use kubemock_controllers::kubelet::KubeletConfig;
use serde_json::{Value, json};

/// A cluster whose controllers (the kubelet's among them: the manager gives it its clock)
/// run on a fake clock standing at a whole second.
async fn start(namespace: &str) -> (Cluster, Api<Pod>, FakeClock) {
    let clock = FakeClock::new(kubemock_apimachinery::time::whole_seconds(Timestamp::now()));
    let config = ManagerConfig::default()
        .with_kubelet(KubeletConfig {
            nodes: 1,
            ..KubeletConfig::default()
        })
        .with_clock(clock.clone());
    let cluster = Cluster::start_with(config).await;
    cluster.namespace(namespace).await;
    let pods = Api::namespaced(cluster.client.clone(), namespace);
    (cluster, pods, clock)
}

async fn create(pods: &Api<Pod>, name: &str, annotations: Value, spec: Value) {
    let mut spec = spec;
    if spec.get("containers").is_none() {
        spec["containers"] = json!([{"name": "app", "image": "busybox"}]);
    }
    let pod: Pod = serde_json::from_value(
        json!({"metadata": {"name": name, "annotations": annotations}, "spec": spec}),
    )
    .expect("a pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create the pod");
}

/// Waits until the pod's first container status satisfies `check`.
async fn wait_container(
    pods: &Api<Pod>,
    name: &str,
    what: &str,
    check: impl Fn(&Pod, &ContainerStatus) -> bool,
) -> (Pod, ContainerStatus) {
    wait_for(what, || async {
        let pod = pods.get(name).await.expect("get");
        let status = pod
            .status
            .as_ref()?
            .container_statuses
            .as_ref()?
            .first()?
            .clone();
        check(&pod, &status).then_some((pod, status))
    })
    .await
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn ready(pod: &Pod) -> Option<(String, Timestamp)> {
    let condition = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")?;
    Some((
        condition.status.clone(),
        condition.last_transition_time.as_ref()?.0,
    ))
}

fn started_running(status: &ContainerStatus) -> Option<Timestamp> {
    Some(
        status
            .state
            .as_ref()?
            .running
            .as_ref()?
            .started_at
            .as_ref()?
            .0,
    )
}

#[tokio::test]
async fn a_crash_looping_pod_restarts_with_the_kubelets_backoff_as_the_clock_advances() {
    let (cluster, pods, clock) = start("lifecycle-crash").await;
    let t0 = clock.now();
    create(
        &pods,
        "crash",
        json!({"kubemock.dev/exit-code": "1", "kubemock.dev/run-seconds": "5"}),
        json!({}),
    )
    .await;
    let (_, mut status) = wait_container(&pods, "crash", "the pod to run", |pod, c| {
        phase(pod) == "Running" && started_running(c).is_some()
    })
    .await;
    assert_eq!(started_running(&status), Some(t0));
    let mut waits = Vec::new();
    let mut ids = vec![status.container_id.clone()];
    for round in 0..4 {
        let started = started_running(&status).expect("running");
        // Nothing happens until the clock reaches the exit.
        clock.set(started + Duration::from_secs(5));
        let (pod, crashed) = wait_container(&pods, "crash", "the exit", |_, c| {
            c.state
                .as_ref()
                .and_then(|s| s.waiting.as_ref())
                .is_some_and(|w| w.reason.as_deref() == Some("CrashLoopBackOff"))
                && c.restart_count == round
        })
        .await;
        assert_eq!(phase(&pod), "Running", "the pod restarts its containers");
        assert_eq!(ready(&pod).map(|r| r.0).as_deref(), Some("False"));
        let last = crashed
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.clone())
            .expect("the exit in lastState");
        assert_eq!((last.exit_code, last.reason.as_deref()), (1, Some("Error")));
        assert_eq!(last.started_at.map(|t| t.0), Some(started));
        let finished = last.finished_at.expect("finishedAt").0;
        assert_eq!(finished, started + Duration::from_secs(5));
        let backoff = 10u64 << round;
        let message = crashed
            .state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.message.clone())
            .unwrap_or_default();
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let shown = match backoff {
            s if s < 60 => format!("{s}s"),
            s => format!("{}m{}s", s / 60, s % 60),
        };
        assert_eq!(
            message,
            format!(
                "back-off {shown} restarting failed container=app pod=crash_lifecycle-crash({uid})"
            )
        );
        clock.set(finished + Duration::from_secs(backoff));
        let (_, running) = wait_container(&pods, "crash", "the restart", |_, c| {
            c.restart_count == round + 1 && started_running(c).is_some()
        })
        .await;
        let restarted = started_running(&running).expect("running");
        waits.push(restarted.duration_since(finished).as_secs());
        ids.push(running.container_id.clone());
        status = running;
    }
    assert_eq!(waits, [10, 20, 40, 80], "10s doubling");
    // `kubectl logs --previous`: the run before the last restart, stamped with its start.
    let log = |query: &'static str| {
        let client = cluster.client.clone();
        async move {
            let mut request = kubemock_client::request::RequestBuilder::new(
                "/api/v1/namespaces/lifecycle-crash/pods".to_owned(),
            )
            .get("crash", Some("log"))
            .expect("a log request");
            request.path.push_str(query);
            client.request_bytes(&request).await.map(|b| b.to_vec())
        }
    };
    let previous_start = status
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .and_then(|t| t.started_at.as_ref())
        .expect("lastState")
        .0;
    let previous = log("?previous=true&timestamps=true")
        .await
        .expect("previous log");
    let stamp = previous_start
        .strftime("%Y-%m-%dT%H:%M:%S.000000000Z")
        .to_string();
    let text = String::from_utf8(previous).expect("text");
    assert!(text.starts_with(&format!("{stamp} ")), "{text}");
    let current = String::from_utf8(log("?timestamps=true").await.expect("log")).expect("text");
    assert!(!current.starts_with(&format!("{stamp} ")), "{current}");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 5, "each run is a new container: {ids:?}");
    cluster.stop().await;
}

#[tokio::test]
async fn exit_codes_end_pods_that_do_not_restart() {
    let (cluster, pods, clock) = start("lifecycle-exit").await;
    let t0 = clock.now();
    create(
        &pods,
        "fails",
        json!({"kubemock.dev/exit-code": "3"}),
        json!({"restartPolicy": "Never"}),
    )
    .await;
    // A run-to-completion pod's `sleep N` says how long it runs; it is Ready meanwhile.
    create(
        &pods,
        "sleeps",
        json!({}),
        json!({"restartPolicy": "OnFailure", "containers": [
            {"name": "app", "image": "busybox", "command": ["sh", "-c", "sleep 20; echo done"]}]}),
    )
    .await;
    wait_container(&pods, "fails", "the failing pod to run", |pod, _| {
        phase(pod) == "Running"
    })
    .await;
    let (pod, _) = wait_container(&pods, "sleeps", "the sleeping pod to run", |pod, _| {
        phase(pod) == "Running" && ready(pod).is_some_and(|r| r.0 == "True")
    })
    .await;
    assert_eq!(phase(&pod), "Running");
    // The default run time (1 s) ends the failing pod; the sleeping one runs on.
    clock.set(t0 + Duration::from_secs(1));
    let (pod, failed) = wait_container(&pods, "fails", "the pod to fail", |pod, _| {
        phase(pod) == "Failed"
    })
    .await;
    let terminated = failed.state.and_then(|s| s.terminated).expect("terminated");
    assert_eq!(
        (terminated.exit_code, terminated.reason.as_deref()),
        (3, Some("Error"))
    );
    assert_eq!(
        terminated.finished_at.map(|t| t.0),
        Some(t0 + Duration::from_secs(1))
    );
    assert_eq!(failed.restart_count, 0);
    assert_eq!(ready(&pod).map(|r| r.0).as_deref(), Some("False"));
    assert_eq!(phase(&pods.get("sleeps").await.expect("get")), "Running");
    clock.set(t0 + Duration::from_secs(20));
    let (_, done) = wait_container(&pods, "sleeps", "the sleep to end", |pod, _| {
        phase(pod) == "Succeeded"
    })
    .await;
    let terminated = done.state.and_then(|s| s.terminated).expect("terminated");
    assert_eq!(
        (terminated.exit_code, terminated.reason.as_deref()),
        (0, Some("Completed"))
    );
    assert_eq!(
        terminated.finished_at.map(|t| t.0),
        Some(t0 + Duration::from_secs(20))
    );
    cluster.stop().await;
}

#[tokio::test]
async fn ready_after_delays_readiness_on_the_clock() {
    let (cluster, pods, clock) = start("lifecycle-ready").await;
    let t0 = clock.now();
    create(
        &pods,
        "slow",
        json!({"kubemock.dev/ready-after": "30"}),
        json!({}),
    )
    .await;
    let (pod, _) = wait_container(&pods, "slow", "the pod to run", |pod, _| {
        phase(pod) == "Running"
    })
    .await;
    assert_eq!(ready(&pod).map(|r| r.0).as_deref(), Some("False"));
    clock.set(t0 + Duration::from_secs(30));
    let (pod, container) = wait_container(&pods, "slow", "the pod to be Ready", |pod, _| {
        ready(pod).is_some_and(|r| r.0 == "True")
    })
    .await;
    assert_eq!(ready(&pod).map(|r| r.1), Some(t0 + Duration::from_secs(30)));
    assert!(container.ready);
    // It never restarted: no previous run to read (upstream's 400).
    let mut request = kubemock_client::request::RequestBuilder::new(
        "/api/v1/namespaces/lifecycle-ready/pods".to_owned(),
    )
    .get("slow", Some("log"))
    .expect("a log request");
    request.path.push_str("?previous=true");
    let err = cluster
        .client
        .request_bytes(&request)
        .await
        .expect_err("no previous container");
    assert!(
        err.to_string()
            .contains("previous terminated container \"app\" in pod \"slow\" not found"),
        "{err}"
    );
    cluster.stop().await;
}

/// A file of `examples/lifecycle`, as JSON.
fn example(file: &str) -> Value {
    let path = format!(
        "{}/../examples/lifecycle/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("the example file");
    serde_yaml_ng::from_str(&text).expect("YAML")
}

#[tokio::test]
async fn the_documented_scenarios_give_their_transitions() {
    let (cluster, pods, clock) = start("lifecycle-scenarios").await;
    let t0 = clock.now();
    for file in [
        "pod-fails.yaml",
        "pod-crash-loop.yaml",
        "pod-slow-start.yaml",
    ] {
        let pod: Pod = serde_json::from_value(example(file)).expect("a pod");
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("create the pod");
    }
    let jobs: Api<k8s_openapi::api::batch::v1::Job> =
        Api::namespaced(cluster.client.clone(), "lifecycle-scenarios");
    let job = serde_json::from_value(example("job-sleeps.yaml")).expect("a job");
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("create the job");
    // Everything runs, started at t0, before the clock moves.
    let all_running = || async {
        let list = pods
            .list(&kubemock_client::ListParams::default())
            .await
            .expect("list")
            .items;
        let running = list
            .iter()
            .filter(|p| phase(p) == "Running")
            .filter_map(|p| {
                p.status
                    .as_ref()?
                    .container_statuses
                    .as_ref()?
                    .first()
                    .cloned()
            })
            .filter_map(|c| started_running(&c))
            .filter(|at| *at == t0)
            .count();
        (running == 4).then_some(list)
    };
    let list = wait_for("the four pods to run", all_running).await;
    let by_name = |name: &str| {
        list.iter()
            .find(|p| p.metadata.name.as_deref() == Some(name))
            .cloned()
            .expect("the pod")
    };
    assert_eq!(
        ready(&by_name("slow-start")).map(|r| r.0).as_deref(),
        Some("False")
    );
    assert_eq!(
        ready(&by_name("fails")).map(|r| r.0).as_deref(),
        Some("True")
    );
    let job_pod = list
        .iter()
        .find(|p| {
            p.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("sleeps-"))
        })
        .and_then(|p| p.metadata.name.clone())
        .expect("the job's pod");
    assert_eq!(
        ready(&by_name(&job_pod)).map(|r| r.0).as_deref(),
        Some("True")
    );

    clock.set(t0 + Duration::from_secs(3));
    wait_container(&pods, "crash-loop", "the crash", |_, c| {
        c.state
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .is_some_and(|w| w.reason.as_deref() == Some("CrashLoopBackOff"))
    })
    .await;
    clock.set(t0 + Duration::from_secs(5));
    let (_, failed) = wait_container(&pods, "fails", "the failure", |pod, _| {
        phase(pod) == "Failed"
    })
    .await;
    assert_eq!(
        failed.state.and_then(|s| s.terminated).map(|t| t.exit_code),
        Some(2)
    );
    clock.set(t0 + Duration::from_secs(13));
    wait_container(&pods, "crash-loop", "the restart after 10s", |_, c| {
        c.restart_count == 1 && started_running(c) == Some(t0 + Duration::from_secs(13))
    })
    .await;
    clock.set(t0 + Duration::from_secs(20));
    wait_container(&pods, "slow-start", "the slow start", |pod, _| {
        ready(pod).is_some_and(|r| r.0 == "True")
    })
    .await;
    assert_eq!(phase(&pods.get(&job_pod).await.expect("get")), "Running");
    clock.set(t0 + Duration::from_secs(30));
    wait_for("the job to complete", || async {
        let job = jobs.get("sleeps").await.expect("get");
        job.status?
            .conditions?
            .iter()
            .any(|c| c.type_ == "Complete" && c.status == "True")
            .then_some(())
    })
    .await;
    cluster.stop().await;
}
