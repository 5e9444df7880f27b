//! `kubemock::testing::Cluster` and the virtual clock (issue 21, items 4 and 5): the README's
//! example (a conflict injected, the controller's retry seen in the request log), and the
//! clock driving the server's timestamps, a CronJob and a Job's TTL; moves refused without a
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
