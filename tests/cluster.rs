//! `kubemock::testing::Cluster` and the virtual clock (issue 21, items 4 and 5): docs/test-powers.md's
//! example (a conflict injected, the controller's retry seen in the request log), and the
//! clock driving the server's timestamps, a CronJob, a Job's TTL and active deadline, a
//! Deployment's progress deadline and minReadySeconds; moves refused without a
//! virtual clock, bad moves refused with a 422; the HorizontalPodAutoscaler controller on the
//! virtual clock (docs/metrics.md).

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kubemock::testing::Cluster;
use serde_json::json;

/// How long a test waits for what must happen.
const WAIT: Duration = Duration::from_secs(30);
/// How long a test watches for what must not happen after a clock move (the controllers
/// react to a move within milliseconds; a wrong reaction would show by then).
const QUIET: Duration = Duration::from_millis(500);

fn start_time() -> Timestamp {
    "2030-01-01T00:00:00Z"
        .parse::<jiff::Timestamp>()
        .expect("a time")
}

// readme:start
#[tokio::test(flavor = "multi_thread")]
async fn the_deployment_controller_retries_a_conflicting_status_update() -> anyhow::Result<()> {
    let cluster = Cluster::start().await?;
    // The first status update of Deployment "web" gets upstream's 409 Conflict.
    let spec = json!({
        "match": {"verbs": ["update"], "resource": "deployments", "subresource": "status", "name": "web"},
        "action": {"status": {"code": 409}}, "count": 1,
    });
    let fault = cluster.fault("conflict-web", spec).await?;
    let deployments: Api<Deployment> = Api::default_namespaced(cluster.kube_client());
    let web = serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}))?;
    deployments.create(&PostParams::default(), &web).await?;
    fault.wait_exhausted(WAIT).await?;
    // The controller retried: a 409, then a status update that went through.
    let log = cluster.requests().verb("update").name("web");
    let sent = log.subresource("status").wait_for(2, WAIT).await?;
    let codes: Vec<_> = sent.iter().map(|r| r["code"].as_u64()).collect();
    assert_eq!(codes[..2], [Some(409), Some(200)]);
    Ok(())
}
// readme:end

#[tokio::test(flavor = "multi_thread")]
async fn new_objects_are_stamped_with_the_virtual_time_and_the_clock_moves_only_when_told() {
    let cluster = Cluster::builder()
        .controllers(false)
        .virtual_clock(start_time())
        .start()
        .await
        .unwrap();
    let config_maps: Api<ConfigMap> = Api::default_namespaced(cluster.kube_client());
    let create = |name: &str| {
        let object: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name}, "data": {"a": "1"}}))
                .unwrap();
        let config_maps = config_maps.clone();
        async move {
            let params = PostParams {
                field_manager: Some("test".to_owned()),
                ..PostParams::default()
            };
            config_maps.create(&params, &object).await.unwrap()
        }
    };
    let first = create("first").await;
    assert_eq!(first.metadata.creation_timestamp.unwrap().0, start_time());
    assert_eq!(cluster.now().await.unwrap(), start_time());

    let later = cluster
        .advance(Duration::from_secs(6 * 3600))
        .await
        .unwrap();
    assert_eq!(later, start_time() + Duration::from_secs(6 * 3600));
    let second = create("second").await;
    assert_eq!(second.metadata.creation_timestamp.unwrap().0, later);
    let fields = second.metadata.managed_fields.unwrap_or_default();
    assert_eq!(
        fields.first().and_then(|f| f.time.as_ref()).map(|t| t.0),
        Some(later),
        "{fields:?}"
    );

    // Backwards too, as upstream's fake clock allows.
    let back = cluster.set_time(start_time()).await.unwrap();
    assert_eq!(back, start_time());
    assert_eq!(cluster.clock().now(), start_time());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cronjob_fires_when_the_clock_passes_its_schedule() {
    let cluster = Cluster::builder()
        .virtual_clock(start_time())
        .start()
        .await
        .unwrap();
    let cron_jobs: Api<CronJob> = Api::default_namespaced(cluster.kube_client());
    let jobs: Api<Job> = Api::default_namespaced(cluster.kube_client());
    let cron_job = serde_json::from_value(json!({"metadata": {"name": "every-five"}, "spec": {
        "schedule": "*/5 * * * *",
        "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}}}}))
    .unwrap();
    cron_jobs
        .create(&PostParams::default(), &cron_job)
        .await
        .unwrap();
    cluster.advance(Duration::from_secs(4 * 60)).await.unwrap();
    tokio::time::sleep(QUIET).await;
    assert!(
        jobs.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    cluster.advance(Duration::from_secs(70)).await.unwrap();
    let scheduled = start_time() + Duration::from_secs(5 * 60);
    let name = format!("every-five-{}", scheduled.as_second() / 60);
    let deadline = tokio::time::Instant::now() + WAIT;
    let job = loop {
        if let Some(job) = jobs.get_opt(&name).await.unwrap() {
            break job;
        }
        assert!(tokio::time::Instant::now() < deadline, "no Job {name}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let annotations = job.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations
            .get("batch.kubernetes.io/cronjob-scheduled-timestamp")
            .map(String::as_str),
        Some("2030-01-01T00:05:00Z")
    );
    assert_eq!(
        job.metadata.creation_timestamp.unwrap().0,
        start_time() + Duration::from_secs(5 * 60 + 10)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_finished_job_is_deleted_once_the_clock_passes_its_ttl_and_not_before() {
    let cluster = Cluster::builder()
        .virtual_clock(start_time())
        .start()
        .await
        .unwrap();
    let jobs: Api<Job> = Api::default_namespaced(cluster.kube_client());
    let job = serde_json::from_value(json!({"metadata": {"name": "once"}, "spec": {
        "ttlSecondsAfterFinished": 3600,
        // The pod exits as soon as it runs (kubelet lifecycle), so the Job completes at the
        // virtual time the test starts from.
        "template": {"metadata": {"annotations": {"kubemock.dev/run-seconds": "0"}},
            "spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}}))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    let finished = loop {
        let job = jobs.get("once").await.unwrap();
        let complete = job
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| {
                c.iter()
                    .find(|c| c.type_ == "Complete" && c.status == "True")
                    .cloned()
            });
        if let Some(condition) = complete {
            break condition.last_transition_time.unwrap().0;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the Job did not complete"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(finished, start_time(), "completed at the virtual time");

    cluster.advance(Duration::from_secs(3599)).await.unwrap();
    tokio::time::sleep(QUIET).await;
    assert!(
        jobs.get_opt("once").await.unwrap().is_some(),
        "deleted before its TTL"
    );

    cluster.advance(Duration::from_secs(1)).await.unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    while jobs.get_opt("once").await.unwrap().is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not deleted after its TTL"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_clock_refuses_moves_without_a_virtual_clock_and_bad_moves_with_a_422() {
    let system = Cluster::builder().controllers(false).start().await.unwrap();
    let http = reqwest::Client::new();
    let clock_url = |cluster: &Cluster| {
        format!(
            "{}/apis/testing.kubemock.dev/v1/clocks/cluster",
            cluster.url()
        )
    };
    let patch = |url: String, body: serde_json::Value| {
        let http = http.clone();
        async move {
            let response = http
                .patch(url)
                .header("Content-Type", "application/merge-patch+json")
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            let code = response.status().as_u16();
            (code, response.json::<serde_json::Value>().await.unwrap())
        }
    };
    // Reading works on the system clock.
    let read: serde_json::Value = http
        .get(clock_url(&system))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(read["status"]["virtual"], false);
    let (code, status) = patch(clock_url(&system), json!({"spec": {"advance": "1h"}})).await;
    assert_eq!(code, 405, "{status}");
    assert_eq!(status["reason"], "MethodNotAllowed");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("--virtual-clock"),
        "{status}"
    );

    let virtual_clock = Cluster::builder()
        .controllers(false)
        .virtual_clock(start_time())
        .start()
        .await
        .unwrap();
    for (spec, field) in [
        (json!({"advance": "an hour"}), "spec.advance"),
        (json!({"advance": "-5m"}), "spec.advance"),
        (json!({"advance": 5}), "spec.advance"),
        (json!({"time": "yesterday"}), "spec.time"),
        (json!({"speed": 2}), "spec.speed"),
        (
            json!({"advance": "1h", "time": "2030-01-01T00:00:00Z"}),
            "spec.advance",
        ),
    ] {
        let (code, status) = patch(clock_url(&virtual_clock), json!({"spec": spec})).await;
        assert_eq!(code, 422, "{spec}: {status}");
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["details"]["causes"][0]["field"], field, "{status}");
    }
    assert_eq!(
        virtual_clock.now().await.unwrap(),
        start_time(),
        "nothing moved"
    );
    let (code, _) = patch(
        format!("{}?dryRun=All", clock_url(&virtual_clock)),
        json!({"spec": {"advance": "1h"}}),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        virtual_clock.now().await.unwrap(),
        start_time(),
        "a dry run"
    );
}

/// Polls `probe` every 20 ms until it gives `Some`, failing the test with `what` after
/// [`WAIT`].
async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The (status, reason) of a Deployment's condition `kind`.
fn deployment_condition(deployment: &Deployment, kind: &str) -> Option<(String, String)> {
    deployment
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default()))
}

/// A Deployment of `replicas` pods of `app`, with `spec` merged into its spec and `annotations`
/// on its pod template.
fn deployment(
    app: &str,
    replicas: i32,
    spec: serde_json::Value,
    annotations: serde_json::Value,
) -> Deployment {
    let mut object = json!({"metadata": {"name": app}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": app}},
        "template": {"metadata": {"labels": {"app": app}, "annotations": annotations},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    if let (Some(target), serde_json::Value::Object(extra)) = (object["spec"].as_object_mut(), spec)
    {
        target.extend(extra);
    }
    serde_json::from_value(object).expect("a deployment")
}

// Upstream: pkg/controller/deployment/util/deployment_util.go `DeploymentTimedOut` (the
// Progressing condition's lastUpdateTime plus progressDeadlineSeconds, strictly before now).
#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_rollout_exceeds_its_progress_deadline_when_the_clock_passes_it_and_not_before() {
    let cluster = Cluster::builder()
        .virtual_clock(start_time())
        .start()
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::default_namespaced(cluster.kube_client());
    // Its pod runs but becomes Ready only an hour after it starts: no progress until then.
    let stalled = deployment(
        "stalled",
        1,
        json!({"progressDeadlineSeconds": 600}),
        json!({"kubemock.dev/ready-after": "3600"}),
    );
    deployments
        .create(&PostParams::default(), &stalled)
        .await
        .unwrap();
    eventually(
        "the rollout to be in progress with its pod created",
        || async {
            let d = deployments.get("stalled").await.unwrap();
            let progressing = deployment_condition(&d, "Progressing")?;
            let updated = d.status.as_ref()?.updated_replicas.unwrap_or(0);
            (progressing.0 == "True" && updated == 1).then_some(())
        },
    )
    .await;

    cluster.advance(Duration::from_secs(599)).await.unwrap();
    tokio::time::sleep(QUIET).await;
    let d = deployments.get("stalled").await.unwrap();
    assert_eq!(
        deployment_condition(&d, "Progressing").map(|c| c.0),
        Some("True".to_owned()),
        "timed out before its deadline: {:?}",
        d.status
    );

    cluster.advance(Duration::from_secs(2)).await.unwrap();
    let progressing = eventually("the rollout to exceed its progress deadline", || async {
        let d = deployments.get("stalled").await.unwrap();
        deployment_condition(&d, "Progressing").filter(|c| c.1 == "ProgressDeadlineExceeded")
    })
    .await;
    assert_eq!(progressing.0, "False");
}

// Upstream: pkg/api/v1/pod/util.go `IsPodAvailable` (Ready for minReadySeconds, by the Ready
// condition's lastTransitionTime, strictly before now).
#[tokio::test(flavor = "multi_thread")]
async fn ready_pods_count_as_available_once_the_clock_passes_min_ready_seconds() {
    let cluster = Cluster::builder()
        .virtual_clock(start_time())
        .start()
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::default_namespaced(cluster.kube_client());
    let patient = deployment("patient", 2, json!({"minReadySeconds": 300}), json!({}));
    deployments
        .create(&PostParams::default(), &patient)
        .await
        .unwrap();
    let counts = |d: &Deployment| {
        let status = d.status.clone().unwrap_or_default();
        (
            status.ready_replicas.unwrap_or(0),
            status.available_replicas.unwrap_or(0),
        )
    };
    eventually("both pods to be Ready", || async {
        let d = deployments.get("patient").await.unwrap();
        (counts(&d).0 == 2).then_some(())
    })
    .await;

    cluster.advance(Duration::from_secs(299)).await.unwrap();
    tokio::time::sleep(QUIET).await;
    let d = deployments.get("patient").await.unwrap();
    assert_eq!(counts(&d), (2, 0), "available before minReadySeconds");
    assert_eq!(
        deployment_condition(&d, "Available"),
        Some(("False".to_owned(), "MinimumReplicasUnavailable".to_owned()))
    );

    cluster.advance(Duration::from_secs(2)).await.unwrap();
    eventually("both pods to be available", || async {
        let d = deployments.get("patient").await.unwrap();
        (counts(&d) == (2, 2)
            && deployment_condition(&d, "Available").is_some_and(|c| c.0 == "True"))
        .then_some(())
    })
    .await;
}

// Upstream: pkg/controller/job/job_controller.go `pastActiveDeadline` (startTime plus
// activeDeadlineSeconds, reached or passed) and the `DeadlineExceeded` failure.
#[tokio::test(flavor = "multi_thread")]
async fn a_job_fails_with_deadline_exceeded_when_the_clock_passes_its_active_deadline() {
    let cluster = Cluster::builder()
        .virtual_clock(start_time())
        .start()
        .await
        .unwrap();
    let jobs: Api<Job> = Api::default_namespaced(cluster.kube_client());
    let job = serde_json::from_value(json!({"metadata": {"name": "slow"}, "spec": {
        "activeDeadlineSeconds": 120,
        "template": {"metadata": {"annotations": {"kubemock.dev/run-seconds": "3600"}},
            "spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}}))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let failed = |job: &Job| {
        job.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Failed" && c.status == "True"))
            .map(|c| c.reason.clone().unwrap_or_default())
    };
    eventually("the Job's pod to be running", || async {
        let job = jobs.get("slow").await.unwrap();
        let status = job.status?;
        (status.active == Some(1) && status.ready == Some(1)).then_some(())
    })
    .await;

    cluster.advance(Duration::from_secs(119)).await.unwrap();
    tokio::time::sleep(QUIET).await;
    let job = jobs.get("slow").await.unwrap();
    assert_eq!(
        failed(&job),
        None,
        "failed before its deadline: {:?}",
        job.status
    );

    cluster.advance(Duration::from_secs(2)).await.unwrap();
    let reason = eventually("the Job to fail", || async {
        failed(&jobs.get("slow").await.unwrap())
    })
    .await;
    assert_eq!(reason, "DeadlineExceeded");
    eventually("the Job's pod to be gone", || async {
        let job = jobs.get("slow").await.unwrap();
        (job.status?.active.unwrap_or(0) == 0).then_some(())
    })
    .await;
}

/// `componentstatuses/controller-manager`'s Healthy status.
async fn controller_manager_healthy(cluster: &Cluster) -> String {
    let url = format!(
        "{}/api/v1/componentstatuses/controller-manager",
        cluster.url()
    );
    let status: serde_json::Value = reqwest::get(url)
        .await
        .expect("componentstatuses answers")
        .json()
        .await
        .expect("a ComponentStatus");
    status["conditions"][0]["status"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

// The server judges a leader-election lease by its clock (issue 21: "lease expiry in leader
// election as the server sees it"); kubemock's electors stamp renewTime from the same clock.
#[tokio::test(flavor = "multi_thread")]
async fn a_leader_lease_nobody_renews_expires_when_the_virtual_clock_passes_it() {
    let cluster = Cluster::builder()
        .controllers(false)
        .virtual_clock(start_time())
        .start()
        .await
        .unwrap();
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(cluster.kube_client(), "kube-system");
    let lease = serde_json::from_value(json!({
        "metadata": {"name": "kube-controller-manager"},
        "spec": {"holderIdentity": "elsewhere", "leaseDurationSeconds": 15,
            "acquireTime": "2030-01-01T00:00:00.000000Z",
            "renewTime": "2030-01-01T00:00:00.000000Z"}}))
    .unwrap();
    leases.create(&PostParams::default(), &lease).await.unwrap();
    assert_eq!(controller_manager_healthy(&cluster).await, "True");
    cluster.advance(Duration::from_secs(15)).await.unwrap();
    assert_eq!(
        controller_manager_healthy(&cluster).await,
        "True",
        "held to the end of its duration"
    );
    cluster.advance(Duration::from_secs(1)).await.unwrap();
    assert_eq!(
        controller_manager_healthy(&cluster).await,
        "False",
        "expired on the virtual clock"
    );
}

/// Waits until `check` gives a value for the HPA `name` (failing the test after [`WAIT`]).
async fn hpa_until<T>(
    hpas: &Api<HorizontalPodAutoscaler>,
    name: &str,
    what: &str,
    check: impl Fn(&HorizontalPodAutoscaler) -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let hpa = hpas.get(name).await.expect("get the HPA");
        if let Some(found) = check(&hpa) {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}; last status: {:?}",
            hpa.status
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `(status, reason, message)` of the HPA's condition `kind`.
fn hpa_condition(hpa: &HorizontalPodAutoscaler, kind: &str) -> Option<(String, String, String)> {
    hpa.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| {
            (
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

/// A Deployment `name` of `replicas` pods requesting 100m CPU and using `usage` (the
/// `kubemock.dev/cpu-usage` annotation of docs/metrics.md).
fn cpu_deployment(name: &str, replicas: i32, usage: &str) -> Deployment {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name},
                                  "annotations": {"kubemock.dev/cpu-usage": usage}},
            "spec": {"containers": [{"name": "c", "image": "nginx",
                "resources": {"requests": {"cpu": "100m"}}}]}}}}))
    .expect("a deployment")
}

/// Sets the CPU usage of every pod of `app`.
async fn set_usage(pods: &Api<Pod>, app: &str, usage: &str) {
    let patch = json!({"metadata": {"annotations": {"kubemock.dev/cpu-usage": usage}}});
    let list = pods
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .expect("list the pods");
    for pod in list.items {
        let name = pod.metadata.name.expect("a name");
        pods.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("annotate a pod");
    }
}

/// Waits until the Deployment `name` has `replicas` ready pods.
async fn ready_replicas(deployments: &Api<Deployment>, name: &str, replicas: i32) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let deployment = deployments.get(name).await.expect("get the deployment");
        let status = deployment.status.unwrap_or_default();
        if status.ready_replicas == Some(replicas) && status.replicas == Some(replicas) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name}: {status:?}, not {replicas} ready"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn replicas_of(deployment: &Deployment) -> i32 {
    deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .expect("replicas")
}

/// The scale-up and the stabilized scale-down of a CPU-utilization HPA without `behavior`
/// (upstream's legacy rules: `horizontal.go` `normalizeDesiredReplicas`), on the virtual
/// clock: the HPA syncs when the clock moves, and the scale-down waits five virtual minutes.
#[tokio::test(flavor = "multi_thread")]
async fn an_hpa_scales_a_deployment_up_on_usage_and_down_after_the_stabilization_window() {
    let cluster = Cluster::builder()
        .virtual_clock(start_time())
        .start()
        .await
        .unwrap();
    let client = cluster.kube_client();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let hpas: Api<HorizontalPodAutoscaler> = Api::default_namespaced(client.clone());
    let events: Api<Event> = Api::default_namespaced(client.clone());
    deployments
        .create(&PostParams::default(), &cpu_deployment("web", 2, "50m"))
        .await
        .unwrap();
    ready_replicas(&deployments, "web", 2).await;
    let hpa = serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1, "maxReplicas": 4,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 50}}}]}}))
    .unwrap();
    hpas.create(&PostParams::default(), &hpa).await.unwrap();
    // One metric window after the pods became Ready their CPU counts (`groupPods`).
    cluster.advance(Duration::from_secs(15)).await.unwrap();
    let utilization = hpa_until(&hpas, "web", "a valid metric at 50%", |hpa| {
        let active = hpa_condition(hpa, "ScalingActive")?;
        let status = hpa.status.as_ref()?;
        let current = status
            .current_metrics
            .as_ref()?
            .first()?
            .resource
            .as_ref()?;
        (active.1 == "ValidMetricFound").then(|| {
            (
                current.current.average_utilization,
                status.current_replicas,
                status.desired_replicas,
                active.2.clone(),
            )
        })
    })
    .await;
    assert_eq!(
        utilization,
        (
            Some(50),
            Some(2),
            2,
            "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)".to_owned()
        )
    );

    // 400% of the target: 8 wanted, 4 allowed by maxReplicas.
    set_usage(&pods, "web", "200m").await;
    cluster.advance(Duration::from_secs(15)).await.unwrap();
    let limited = hpa_until(&hpas, "web", "scaled to 4", |hpa| {
        let status = hpa.status.as_ref()?;
        (status.desired_replicas == 4).then(|| hpa_condition(hpa, "ScalingLimited"))
    })
    .await;
    assert_eq!(
        limited.map(|c| (c.0, c.1)),
        Some(("True".to_owned(), "TooManyReplicas".to_owned()))
    );
    assert_eq!(replicas_of(&deployments.get("web").await.unwrap()), 4);
    let rescaled = events
        .list(&ListParams::default().fields("involvedObject.name=web,reason=SuccessfulRescale"))
        .await
        .unwrap();
    let messages: Vec<_> = rescaled
        .items
        .iter()
        .filter_map(|e| e.message.clone())
        .collect();
    assert!(
        messages.contains(
            &"New size: 4; reason: cpu resource utilization (percentage of request) above target"
                .to_owned()
        ),
        "{messages:?}"
    );
    ready_replicas(&deployments, "web", 4).await;

    // 10% now: 1 wanted, but the last five minutes recommended 8, so it stays at 4...
    set_usage(&pods, "web", "10m").await;
    cluster.advance(Duration::from_secs(15)).await.unwrap();
    let stabilized = hpa_until(&hpas, "web", "a stabilized scale-down", |hpa| {
        hpa_condition(hpa, "AbleToScale").filter(|c| c.1 == "ScaleDownStabilized")
    })
    .await;
    assert_eq!(
        stabilized.2,
        "recent recommendations were higher than current one, applying the highest recent recommendation"
    );
    assert_eq!(replicas_of(&deployments.get("web").await.unwrap()), 4);
    // ...until the window has passed on the virtual clock.
    cluster.advance(Duration::from_secs(301)).await.unwrap();
    hpa_until(&hpas, "web", "scaled down to 1", |hpa| {
        (hpa.status.as_ref()?.desired_replicas == 1).then_some(())
    })
    .await;
    assert_eq!(replicas_of(&deployments.get("web").await.unwrap()), 1);
    let hpa = hpas.get("web").await.unwrap();
    let status = hpa.status.unwrap();
    assert_eq!(
        status.last_scale_time.map(|t| t.0),
        Some(start_time() + Duration::from_secs(15 + 15 + 15 + 301))
    );
}

/// `behavior` limits each step (one pod per minute here), and Pods metrics, which need the
/// custom metrics API kubemock does not serve, turn ScalingActive False as upstream's do when
/// that API is not registered.
#[tokio::test(flavor = "multi_thread")]
async fn hpa_behavior_policies_limit_the_step_and_custom_metrics_are_refused() {
    let cluster = Cluster::builder()
        .virtual_clock(start_time())
        .start()
        .await
        .unwrap();
    let client = cluster.kube_client();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let hpas: Api<HorizontalPodAutoscaler> = Api::default_namespaced(client.clone());
    for name in ["api", "other"] {
        deployments
            .create(&PostParams::default(), &cpu_deployment(name, 1, "200m"))
            .await
            .unwrap();
        ready_replicas(&deployments, name, 1).await;
    }
    let hpa = serde_json::from_value(json!({"metadata": {"name": "api"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
        "minReplicas": 1, "maxReplicas": 10,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 50}}}],
        "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0,
            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}}}))
    .unwrap();
    hpas.create(&PostParams::default(), &hpa).await.unwrap();
    let custom = serde_json::from_value(json!({"metadata": {"name": "custom"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"},
        "maxReplicas": 10,
        "metrics": [{"type": "Pods", "pods": {"metric": {"name": "requests_per_second"},
            "target": {"type": "AverageValue", "averageValue": "10"}}}]}}))
    .unwrap();
    hpas.create(&PostParams::default(), &custom).await.unwrap();
    let refused = hpa_until(&hpas, "custom", "ScalingActive False", |hpa| {
        hpa_condition(hpa, "ScalingActive").filter(|c| c.0 == "False")
    })
    .await;
    assert_eq!(
        (refused.1.as_str(), refused.2.as_str()),
        (
            "FailedGetPodsMetric",
            "the HPA was unable to compute the replica count: unable to get metric requests_per_second: unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered"
        )
    );
    assert_eq!(replicas_of(&deployments.get("other").await.unwrap()), 1);

    // 400% of the target asks for 4; the policy allows one more pod per 60 s.
    cluster.advance(Duration::from_secs(15)).await.unwrap();
    let limited = hpa_until(&hpas, "api", "scaled to 2", |hpa| {
        (hpa.status.as_ref()?.desired_replicas == 2).then(|| hpa_condition(hpa, "ScalingLimited"))
    })
    .await
    .unwrap();
    assert_eq!(
        (limited.0.as_str(), limited.1.as_str(), limited.2.as_str()),
        (
            "True",
            "ScaleUpLimit",
            "the desired replica count is increasing faster than the maximum scale rate"
        )
    );
    ready_replicas(&deployments, "api", 2).await;
    // Within the period: no further step.
    cluster.advance(Duration::from_secs(30)).await.unwrap();
    tokio::time::sleep(QUIET).await;
    assert_eq!(replicas_of(&deployments.get("api").await.unwrap()), 2);
    // Past it: one more.
    cluster.advance(Duration::from_secs(31)).await.unwrap();
    hpa_until(&hpas, "api", "scaled to 3", |hpa| {
        (hpa.status.as_ref()?.desired_replicas == 3).then_some(())
    })
    .await;
    assert_eq!(replicas_of(&deployments.get("api").await.unwrap()), 3);
}

/// An HPA written through `autoscaling/v1`, as older tools write it: the server converts it
/// (`pkg/apis/autoscaling/v1/conversion.go`), the controller (which reads v2) scales on its
/// `targetCPUUtilizationPercentage`, and a v1 client reads the status as
/// `currentCPUUtilizationPercentage`.
#[tokio::test(flavor = "multi_thread")]
async fn an_hpa_written_as_autoscaling_v1_scales_and_reads_back_as_v1() {
    use k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler as HpaV1;
    let cluster = Cluster::builder()
        .virtual_clock(start_time())
        .start()
        .await
        .unwrap();
    let client = cluster.kube_client();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let hpas: Api<HpaV1> = Api::default_namespaced(client.clone());
    deployments
        .create(&PostParams::default(), &cpu_deployment("old", 2, "100m"))
        .await
        .unwrap();
    ready_replicas(&deployments, "old", 2).await;
    let hpa: HpaV1 = serde_json::from_value(json!({"metadata": {"name": "old"}, "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "old"},
        "maxReplicas": 3, "targetCPUUtilizationPercentage": 50}}))
    .unwrap();
    let created = hpas.create(&PostParams::default(), &hpa).await.unwrap();
    assert_eq!(created.spec.and_then(|s| s.min_replicas), Some(1));
    cluster.advance(Duration::from_secs(15)).await.unwrap();
    // 200% of the target: 4 wanted, 3 allowed.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let hpa = hpas.get("old").await.expect("get the v1 HPA");
        let status = hpa.status.unwrap_or_default();
        if status.current_cpu_utilization_percentage == Some(100) && status.desired_replicas == 3 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the v1 status never showed 100% and 3 desired: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let deployment = deployments.get("old").await.unwrap();
    assert_eq!(replicas_of(&deployment), 3);
}
