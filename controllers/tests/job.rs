//! The Job controller with the scheduler and the simulated kubelet (issue 6 item 3 and the
//! acceptance "a Job of 5 completions finishes"): pods run to completion at most
//! `parallelism` at a time, the Job completes with its conditions and counts, and a finished
//! Job with `ttlSecondsAfterFinished` is deleted.

use crate::common::{Cluster, wait_for};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kubemock_client::{Api, ListParams, PostParams};
use serde_json::json;

fn job(name: &str, completions: i32, parallelism: i32, ttl: Option<i32>) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"completions": completions, "parallelism": parallelism,
            "ttlSecondsAfterFinished": ttl,
            "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "work", "image": "busybox"}]}}}
    }))
    .expect("a job")
}

#[tokio::test]
async fn a_job_of_five_completions_finishes_two_at_a_time() {
    let cluster = Cluster::start().await;
    let jobs: Api<Job> = Api::namespaced(cluster.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    jobs.create(&PostParams::default(), &job("work", 5, 2, None))
        .await
        .expect("create the job");
    let done = wait_for("the job to complete", || {
        let (jobs, pods) = (&jobs, &pods);
        async move {
            let running = pods
                .list(&ListParams::default().labels("job-name=work"))
                .await
                .expect("pods")
                .items
                .iter()
                .filter(|p| {
                    !matches!(
                        p.status.as_ref().and_then(|s| s.phase.as_deref()),
                        Some("Succeeded" | "Failed")
                    )
                })
                .count();
            assert!(running <= 2, "{running} pods at once, parallelism is 2");
            let job = jobs.get("work").await.expect("get");
            let status = job.status.clone().unwrap_or_default();
            status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Complete" && c.status == "True")
                .then_some(job)
        }
    })
    .await;
    let status = done.status.expect("status");
    assert_eq!(status.succeeded, Some(5));
    assert_eq!(status.active, None);
    assert!(status.start_time.is_some() && status.completion_time.is_some());
    let kinds: Vec<String> = status
        .conditions
        .iter()
        .flatten()
        .map(|c| c.type_.clone())
        .collect();
    assert_eq!(kinds, vec!["SuccessCriteriaMet", "Complete"]);
    let succeeded = pods
        .list(&ListParams::default().labels("job-name=work"))
        .await
        .expect("pods")
        .items
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"))
        .count();
    assert_eq!(succeeded, 5, "exactly five pods ran");
    cluster.stop().await;
}

#[tokio::test]
async fn a_finished_job_with_a_ttl_is_deleted() {
    let cluster = Cluster::start().await;
    let jobs: Api<Job> = Api::namespaced(cluster.client.clone(), "default");
    jobs.create(&PostParams::default(), &job("brief", 1, 1, Some(0)))
        .await
        .expect("create the job");
    wait_for("the job to be deleted after finishing", || async {
        jobs.get_opt("brief")
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await;
    cluster.stop().await;
}

#[tokio::test]
async fn an_indexed_job_runs_one_pod_per_completion_index() {
    let cluster = Cluster::start().await;
    let jobs: Api<Job> = Api::namespaced(cluster.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), "default");
    let mut indexed = job("indexed", 4, 2, None);
    if let Some(spec) = indexed.spec.as_mut() {
        spec.completion_mode = Some("Indexed".to_owned());
    }
    jobs.create(&PostParams::default(), &indexed)
        .await
        .expect("create the job");
    let done = wait_for("the indexed job to complete", || async {
        let job = jobs.get("indexed").await.expect("get");
        let status = job.status.clone().unwrap_or_default();
        status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Complete" && c.status == "True")
            .then_some(status)
    })
    .await;
    assert_eq!(done.completed_indexes.as_deref(), Some("0-3"));
    assert_eq!(done.succeeded, Some(4));
    let mut seen: Vec<String> = Vec::new();
    for pod in pods
        .list(&ListParams::default().labels("job-name=indexed"))
        .await
        .expect("pods")
        .items
    {
        let index = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("batch.kubernetes.io/job-completion-index"))
            .cloned()
            .expect("an index annotation");
        assert_eq!(
            pod.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("batch.kubernetes.io/job-completion-index")),
            Some(&index),
            "the index label"
        );
        let name = pod.metadata.name.clone().unwrap_or_default();
        assert!(name.starts_with(&format!("indexed-{index}-")), "{name}");
        let spec = pod.spec.expect("a spec");
        assert_eq!(spec.hostname, Some(format!("indexed-{index}")));
        assert!(
            spec.containers[0]
                .env
                .iter()
                .flatten()
                .any(|e| e.name == "JOB_COMPLETION_INDEX"),
            "the index variable"
        );
        assert_eq!(
            pod.status.and_then(|s| s.phase).as_deref(),
            Some("Succeeded")
        );
        seen.push(index);
    }
    seen.sort();
    assert_eq!(seen, ["0", "1", "2", "3"], "one pod per index");
    cluster.stop().await;
}
