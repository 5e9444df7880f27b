//! The CronJob controller on a fake clock: Jobs named for the scheduled minute when the clock
//! passes a schedule time, the concurrency policies, suspension, time zones, too many missed
//! times, and (with the Job controller, scheduler and kubelet completing the Jobs for real)
//! the history limits and `lastSuccessfulTime`. The clock moves only when a test moves it;
//! the controller reacts to each move at once, so no test waits for a real schedule time.

use std::time::Duration;

use crate::common::{Cluster, wait_for};
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Event;
use kubemock_client::{Api, ListParams, Patch, PatchParams, PostParams};
use kubemock_controllers::ManagerConfig;
use kubemock_controllers::clock::FakeClock;
use kubemock_controllers::cronjob::SCHEDULED_TIMESTAMP_ANNOTATION;
use kubemock_controllers::kubelet::KubeletConfig;
use serde_json::{Value, json};

const NS: &str = "default";

/// How long a test watches for something that must not happen after a clock move (the
/// controller answers a move within milliseconds; absence can only be watched for a while).
const QUIET: Duration = Duration::from_millis(500);

struct Fixture {
    cluster: Cluster,
    clock: FakeClock,
    cron_jobs: Api<CronJob>,
    jobs: Api<Job>,
}

/// A cluster whose controllers (`controllers`, a `--controllers` list) read a fake clock.
async fn start(controllers: &str) -> Fixture {
    let clock = FakeClock::new(Timestamp::now());
    // The Jobs' pods exit as soon as they run: a run time on the fake clock would need the
    // tests to move it past each run (kubelet `lifecycle`).
    let config = ManagerConfig::from_list(controllers)
        .expect("a controller list")
        .with_kubelet(KubeletConfig {
            run_time: Duration::ZERO,
            ..KubeletConfig::default()
        })
        .with_clock(clock.clone());
    let cluster = Cluster::start_with(config).await;
    let cron_jobs = Api::namespaced(cluster.client.clone(), NS);
    let jobs = Api::namespaced(cluster.client.clone(), NS);
    Fixture {
        cluster,
        clock,
        cron_jobs,
        jobs,
    }
}

/// A CronJob of pods that run to completion, with `spec` merged into its spec.
fn cron_job(name: &str, schedule: &str, spec: Value) -> CronJob {
    let mut object = json!({
        "metadata": {"name": name},
        "spec": {"schedule": schedule, "jobTemplate": {
            "metadata": {"labels": {"cron": name}},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "work", "image": "busybox"}]}}}}}
    });
    if let (Some(target), Value::Object(extra)) = (object["spec"].as_object_mut(), spec) {
        target.extend(extra);
    }
    serde_json::from_value(object).expect("a cronjob")
}

impl Fixture {
    /// Creates the CronJob; returns its creation time (the schedule counts from there).
    async fn create(&self, cron_job: &CronJob) -> Timestamp {
        let created = self
            .cron_jobs
            .create(&PostParams::default(), cron_job)
            .await
            .expect("create the cronjob");
        created
            .metadata
            .creation_timestamp
            .expect("a creation timestamp")
            .0
    }

    /// The names of the CronJob's Jobs, sorted.
    async fn job_names(&self, cron_job: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .jobs
            .list(&ListParams::default().labels(&format!("cron={cron_job}")))
            .await
            .expect("list jobs")
            .items
            .into_iter()
            .filter_map(|j| j.metadata.name)
            .collect();
        names.sort();
        names
    }

    /// Waits for the Job `name`.
    async fn job(&self, name: &str) -> Job {
        wait_for(&format!("job {name}"), || async {
            self.jobs.get_opt(name).await.expect("get the job")
        })
        .await
    }

    /// Waits until the CronJob's status satisfies `check`.
    async fn status_where(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&k8s_openapi::api::batch::v1::CronJobStatus) -> bool,
    ) -> k8s_openapi::api::batch::v1::CronJobStatus {
        wait_for(what, || async {
            let cron_job = self.cron_jobs.get(name).await.expect("get the cronjob");
            cron_job.status.filter(|s| check(s))
        })
        .await
    }

    /// Waits for an event about `cron_job` with `reason`; returns its message.
    async fn event(&self, cron_job: &str, reason: &str) -> String {
        let events: Api<Event> = Api::namespaced(self.cluster.client.clone(), NS);
        wait_for(&format!("a {reason} event"), || async {
            events
                .list(&ListParams::default())
                .await
                .expect("list events")
                .items
                .into_iter()
                .find(|e| {
                    e.involved_object.name.as_deref() == Some(cron_job)
                        && e.reason.as_deref() == Some(reason)
                })
                .and_then(|e| e.message)
        })
        .await
    }

    /// Watches for [`QUIET`] that the CronJob's Jobs stay `expected`.
    async fn jobs_stay(&self, cron_job: &str, expected: &[String]) {
        let until = tokio::time::Instant::now() + QUIET;
        while tokio::time::Instant::now() < until {
            assert_eq!(self.job_names(cron_job).await, expected);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The first multiple of `minutes` minutes strictly after `t`.
fn next_multiple(t: Timestamp, minutes: i64) -> Timestamp {
    let step = minutes * 60;
    let next = (t.as_second().div_euclid(step) + 1) * step;
    Timestamp::from_second(next).expect("a time")
}

fn job_name(cron_job: &str, scheduled: Timestamp) -> String {
    format!("{cron_job}-{}", scheduled.as_second() / 60)
}

#[tokio::test]
async fn a_job_is_created_for_the_scheduled_minute_once_the_clock_passes_it() {
    let f = start("cronjob").await;
    let created = f
        .create(&cron_job("every-five", "*/5 * * * *", json!({})))
        .await;
    let first = next_multiple(created, 5);

    f.clock.set(first - Duration::from_secs(1));
    f.jobs_stay("every-five", &[]).await;

    f.clock.set(first + Duration::from_secs(20));
    let name = job_name("every-five", first);
    let job = f.job(&name).await;
    let annotations = job.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations
            .get(SCHEDULED_TIMESTAMP_ANNOTATION)
            .map(String::as_str),
        Some(kubemock_apimachinery::time::rfc3339_of(first).as_str())
    );
    let owner = &job.metadata.owner_references.as_ref().expect("an owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("CronJob", "every-five")
    );
    assert_eq!(owner.controller, Some(true));
    assert_eq!(
        job.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("cron"))
            .map(String::as_str),
        Some("every-five"),
        "labels from the job template"
    );
    let status = f
        .status_where("every-five", "the job in status.active", |s| {
            s.active.as_ref().is_some_and(|a| a.len() == 1)
        })
        .await;
    let active = &status.active.expect("active")[0];
    assert_eq!(active.name.as_deref(), Some(name.as_str()));
    assert_eq!(active.kind.as_deref(), Some("Job"));
    assert_eq!(active.uid, job.metadata.uid);
    assert_eq!(status.last_schedule_time.map(|t| t.0), Some(first));
    assert_eq!(
        f.event("every-five", "SuccessfulCreate").await,
        format!("Created job {name}")
    );

    // The same minute again, and later within it: nothing new.
    f.clock.set(first + Duration::from_secs(59));
    f.jobs_stay("every-five", std::slice::from_ref(&name)).await;

    // Allow: the next time starts another Job while the first still runs.
    let second = first + Duration::from_secs(300);
    f.clock.set(second);
    f.job(&job_name("every-five", second)).await;
    f.status_where("every-five", "two active jobs", |s| {
        s.active.as_ref().is_some_and(|a| a.len() == 2)
    })
    .await;
    f.cluster.stop().await;
}

#[tokio::test]
async fn forbid_skips_a_time_while_a_job_runs_and_replace_replaces_it() {
    // Without the Job controller, Jobs never finish: they stay active.
    let f = start("cronjob").await;
    f.create(&cron_job(
        "forbid",
        "*/5 * * * *",
        json!({"concurrencyPolicy": "Forbid"}),
    ))
    .await;
    f.create(&cron_job(
        "replace",
        "*/5 * * * *",
        json!({"concurrencyPolicy": "Replace"}),
    ))
    .await;
    // A schedule time after both were created.
    let first = next_multiple(Timestamp::now(), 5);
    let second = first + Duration::from_secs(300);

    f.clock.set(first);
    let replaced = f.job(&job_name("replace", first)).await;
    f.job(&job_name("forbid", first)).await;
    for name in ["forbid", "replace"] {
        f.status_where(name, "the first job active", |s| {
            s.active.as_ref().is_some_and(|a| a.len() == 1)
        })
        .await;
    }

    f.clock.set(second);
    assert_eq!(
        f.event("forbid", "JobAlreadyActive").await,
        "Not starting job because prior execution is running and concurrency policy is Forbid"
    );
    assert_eq!(f.job_names("forbid").await, [job_name("forbid", first)]);

    let replacement = job_name("replace", second);
    f.job(&replacement).await;
    wait_for("the replaced job to be deleted", || async {
        let left = f
            .jobs
            .get_opt(&job_name("replace", first))
            .await
            .expect("get");
        left.filter(|j| j.metadata.uid == replaced.metadata.uid)
            .is_none()
            .then_some(())
    })
    .await;
    assert_eq!(
        f.event("replace", "SuccessfulDelete").await,
        format!("Deleted job {}", job_name("replace", first))
    );
    let status = f
        .status_where("replace", "only the replacement active", |s| {
            s.active
                .as_ref()
                .is_some_and(|a| a.len() == 1 && a[0].name.as_deref() == Some(replacement.as_str()))
        })
        .await;
    assert_eq!(status.last_schedule_time.map(|t| t.0), Some(second));
    f.cluster.stop().await;
}

#[tokio::test]
async fn a_suspended_cronjob_starts_nothing_until_resumed() {
    let f = start("cronjob").await;
    let created = f
        .create(&cron_job("paused", "*/5 * * * *", json!({"suspend": true})))
        .await;
    let first = next_multiple(created, 5);
    f.clock.set(first + Duration::from_secs(60));
    f.jobs_stay("paused", &[]).await;

    f.cron_jobs
        .patch(
            "paused",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": false}})),
        )
        .await
        .expect("resume");
    // The missed time is still within reach (no startingDeadlineSeconds): it runs now.
    f.job(&job_name("paused", first)).await;
    f.cluster.stop().await;
}

#[tokio::test]
async fn the_schedule_is_read_in_the_cronjobs_time_zone() {
    let f = start("cronjob").await;
    // Hourly in Kolkata (UTC+05:30) fires at half past each UTC hour.
    let created = f
        .create(&cron_job(
            "kolkata",
            "0 * * * *",
            json!({"timeZone": "Asia/Kolkata"}),
        ))
        .await;
    let half_past = {
        let shifted = created - Duration::from_secs(1800);
        next_multiple(shifted, 60) + Duration::from_secs(1800)
    };
    f.clock.set(half_past + Duration::from_secs(10 * 60));
    let job = f.job(&job_name("kolkata", half_past)).await;
    let stamp = job
        .metadata
        .annotations
        .unwrap_or_default()
        .remove(SCHEDULED_TIMESTAMP_ANNOTATION)
        .expect("the scheduled timestamp");
    let kolkata = utc_offset(&stamp);
    assert_eq!(kolkata, "+05:30", "{stamp}");
    assert_eq!(stamp.parse::<Timestamp>().expect("RFC 3339"), half_past);
    assert_eq!(
        f.job_names("kolkata").await,
        [job_name("kolkata", half_past)]
    );
    f.cluster.stop().await;
}

/// The UTC offset at the end of an RFC 3339 time.
fn utc_offset(stamp: &str) -> &str {
    &stamp[stamp.len().saturating_sub(6)..]
}

#[tokio::test]
async fn after_too_many_missed_times_only_the_most_recent_runs() {
    let f = start("cronjob").await;
    let created = f.create(&cron_job("late", "* * * * *", json!({}))).await;
    // Three hours of minutes missed.
    let now = next_multiple(created, 1) + Duration::from_secs(3 * 3600 + 30);
    f.clock.set(now);
    let latest = now - Duration::from_secs(30);
    f.job(&job_name("late", latest)).await;
    assert_eq!(
        f.event("late", "TooManyMissedTimes").await,
        "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"
    );
    assert_eq!(f.job_names("late").await, [job_name("late", latest)]);
    f.cluster.stop().await;
}

#[tokio::test]
async fn finished_jobs_past_the_history_limit_are_deleted_oldest_first() {
    // The Job controller, scheduler and kubelet run the Jobs to completion.
    let f = start("*").await;
    let created = f
        .create(&cron_job(
            "history",
            "* * * * *",
            json!({"successfulJobsHistoryLimit": 2}),
        ))
        .await;
    let mut scheduled = Vec::new();
    let mut time = next_multiple(created, 1);
    for _ in 0..4 {
        f.clock.set(time);
        let name = job_name("history", time);
        wait_for(&format!("job {name} to complete"), || async {
            let job = f.jobs.get_opt(&name).await.expect("get")?;
            let done = job
                .status
                .as_ref()?
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Complete" && c.status == "True");
            done.then_some(())
        })
        .await;
        let status = f
            .status_where("history", "the completed job seen", |s| {
                s.active.as_ref().is_none_or(Vec::is_empty)
                    && s.last_successful_time.is_some()
                    && s.last_schedule_time.as_ref().map(|t| t.0) == Some(time)
            })
            .await;
        let completed = f
            .jobs
            .get_opt(&name)
            .await
            .expect("get")
            .and_then(|j| j.status?.completion_time);
        if let Some(completed) = completed {
            assert!(
                status
                    .last_successful_time
                    .as_ref()
                    .is_some_and(|t| t.0 >= completed.0),
                "lastSuccessfulTime is the latest completion"
            );
        }
        scheduled.push(name);
        time += Duration::from_secs(60);
    }
    let newest: Vec<String> = scheduled[2..].to_vec();
    wait_for("only the two newest jobs left", || async {
        (f.job_names("history").await == newest).then_some(())
    })
    .await;
    assert_eq!(
        f.event("history", "SawCompletedJob").await,
        format!("Saw completed job: {}, condition: Complete", scheduled[0])
    );
    let events: Api<Event> = Api::namespaced(f.cluster.client.clone(), NS);
    let deleted: Vec<String> = events
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("SuccessfulDelete"))
        .filter_map(|e| e.message)
        .collect();
    for old in &scheduled[..2] {
        assert!(
            deleted.contains(&format!("Deleted job {old}")),
            "{old} deleted: {deleted:?}"
        );
    }
    f.cluster.stop().await;
}

#[tokio::test]
async fn a_running_job_the_cronjob_did_not_record_is_reported_unexpected() {
    let f = start("cronjob").await;
    f.create(&cron_job("adopter", "0 0 1 1 *", json!({}))).await;
    let owner = f.cron_jobs.get("adopter").await.expect("get");
    let stray: Job = serde_json::from_value(json!({
        "metadata": {"name": "stray", "ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "CronJob", "name": "adopter",
            "uid": owner.metadata.uid, "controller": true}]},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "work", "image": "busybox"}]}}}
    }))
    .expect("a job");
    f.jobs
        .create(&PostParams::default(), &stray)
        .await
        .expect("create the job");
    assert_eq!(
        f.event("adopter", "UnexpectedJob").await,
        "Saw a job that the controller did not create or forgot: stray"
    );
    f.cluster.stop().await;
}
