//! `kubemock::testing::Cluster` and the virtual clock (issue 21, items 4 and 5): the README's
//! example (a conflict injected, the controller's retry seen in the request log), and the
//! clock driving the server's timestamps, a CronJob, a Job's TTL and active deadline, a
//! Deployment's progress deadline and minReadySeconds; moves refused without a
//! virtual clock, bad moves refused with a 422.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::chrono::{DateTime, TimeZone, Utc};
use kube::api::{Api, PostParams};
use kubemock::testing::Cluster;
use serde_json::json;

/// How long a test waits for what must happen.
const WAIT: Duration = Duration::from_secs(30);
/// How long a test watches for what must not happen after a clock move (the controllers
/// react to a move within milliseconds; a wrong reaction would show by then).
const QUIET: Duration = Duration::from_millis(500);

fn start_time() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap()
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
    let name = format!("every-five-{}", scheduled.timestamp() / 60);
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
    serde_json::from_value(object).unwrap()
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
    let status: serde_json::Value = reqwest::get(url).await.unwrap().json().await.unwrap();
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
