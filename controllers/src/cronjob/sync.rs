//! One sync of one CronJob (upstream `cronjob_controllerv2.go` `sync`, `syncCronJob`,
//! `cleanupFinishedJobs`): account for its Jobs (finished ones leave `status.active`,
//! successes move `lastSuccessfulTime`), delete the finished Jobs past the history limits,
//! then start the Job of the most recent unmet schedule time if the concurrency policy,
//! suspension and starting deadline allow, and write the status once, computed from the
//! cached CronJob and carrying its resourceVersion. It returns when to look again: just after
//! the next schedule time.

use std::collections::HashSet;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{CronJob, CronJobStatus, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kubemock_client::controller::{controller_of, controller_reference};
use kubemock_client::events::{EventType, object_reference};
use kubemock_client::{Action, Api, ApiResource, DeleteParams, ObjectKey, PostParams};

use super::Context;
use super::schedule::{self, Missed, Schedule, Times};
use crate::error::{Error, Result};

/// The annotation with the scheduled time of a CronJob's Job (RFC 3339, in the CronJob's
/// time zone).
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// The finished condition of a Job (`Complete` or `Failed`), if any.
fn finished_condition(job: &Job) -> Option<&'static str> {
    job.status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .filter(|c| c.status == "True")
        .find_map(|c| match c.type_.as_str() {
            "Complete" => Some("Complete"),
            "Failed" => Some("Failed"),
            _ => None,
        })
}

fn in_active_list(status: &CronJobStatus, uid: &str) -> bool {
    status
        .active
        .iter()
        .flatten()
        .any(|r| r.uid.as_deref() == Some(uid))
}

fn delete_from_active_list(status: &mut CronJobStatus, uid: &str) {
    if let Some(active) = status.active.as_mut() {
        active.retain(|r| r.uid.as_deref() != Some(uid));
    }
}

/// The message of the server's answer (what Go's `%v` of a client-go error prints).
fn error_message(err: &kubemock_client::Error) -> String {
    err.status()
        .and_then(|s| s.message.clone())
        .unwrap_or_else(|| err.to_string())
}

/// Upstream `byJobStartTime`: started before not started, earlier first, then by name.
fn oldest_first(a: &Job, b: &Job) -> std::cmp::Ordering {
    let start = |j: &Job| j.status.as_ref().and_then(|s| s.start_time.clone());
    match (start(a), start(b)) {
        (Some(x), Some(y)) => x.0.cmp(&y.0),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    }
    .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// The Job for `scheduled` (upstream `getJobFromTemplate2`).
pub(crate) fn job_from_template(
    cron_job: &CronJob,
    scheduled: Timestamp,
    zone: chrono_tz::Tz,
) -> Job {
    let template = cron_job
        .spec
        .as_ref()
        .map(|s| s.job_template.clone())
        .unwrap_or_default();
    let meta = template.metadata.unwrap_or_default();
    let mut annotations = meta.annotations.unwrap_or_default();
    annotations.insert(
        SCHEDULED_TIMESTAMP_ANNOTATION.to_owned(),
        schedule::rfc3339_in(scheduled, zone),
    );
    let name = cron_job.metadata.name.as_deref().unwrap_or_default();
    Job {
        metadata: ObjectMeta {
            name: Some(schedule::job_name(name, scheduled)),
            namespace: cron_job.metadata.namespace.clone(),
            labels: meta.labels.filter(|l| !l.is_empty()),
            annotations: Some(annotations),
            owner_references: controller_reference(cron_job).map(|r| vec![r]),
            ..ObjectMeta::default()
        },
        spec: Some(template.spec.unwrap_or_default()),
        status: None,
    }
}

/// What the sync of the CronJob decided, besides its status.
struct Outcome {
    /// When to look again (`None`: when something changes).
    requeue: Option<std::time::Duration>,
    /// An error to retry on, when there is no requeue time.
    error: Option<Error>,
}

impl Outcome {
    fn done() -> Self {
        Outcome {
            requeue: None,
            error: None,
        }
    }

    fn after(requeue: Option<std::time::Duration>) -> Self {
        Outcome {
            requeue,
            error: None,
        }
    }

    fn failed(error: impl Into<Error>) -> Self {
        Outcome {
            requeue: None,
            error: Some(error.into()),
        }
    }
}

/// Syncs the CronJob at `key`.
pub(crate) async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(cached) = ctx.cron_jobs.get(&key) else {
        tracing::debug!(%key, "cronjob not found, may be it is deleted");
        return Ok(Action::AwaitChange);
    };
    let namespace = key.namespace.clone().unwrap_or_default();
    let name = key.name.clone();
    // Every Job whose controller is this CronJob (by name, as upstream: a Job of a former
    // CronJob of the same name still counts).
    let jobs: Vec<Arc<Job>> = ctx
        .jobs
        .list_namespace(&namespace)
        .into_iter()
        .filter(|j| {
            controller_of(&j.metadata).is_some_and(|o| o.kind == "CronJob" && o.name == name)
        })
        .collect();
    let mut cron_job = (*cached).clone();
    let cleaned = cleanup_finished_jobs(&ctx, &mut cron_job, &jobs).await;
    let (outcome, synced) = sync_cron_job(&ctx, &mut cron_job, &jobs).await;
    if cleaned || synced {
        let api: Api<CronJob> = Api::namespaced(ctx.client.clone(), &namespace);
        api.replace_status(&name, &PostParams::default(), &cron_job)
            .await?;
    }
    match (outcome.requeue, outcome.error) {
        (Some(delay), _) => Ok(Action::RequeueAfter(delay)),
        (None, Some(err)) => Err(err),
        (None, None) => Ok(Action::AwaitChange),
    }
}

/// Deletes the finished Jobs past the history limits, oldest first; whether the status
/// changed.
async fn cleanup_finished_jobs(ctx: &Context, cron_job: &mut CronJob, jobs: &[Arc<Job>]) -> bool {
    let spec = cron_job.spec.clone().unwrap_or_default();
    let mut changed = false;
    for (wanted, limit) in [
        ("Complete", spec.successful_jobs_history_limit),
        ("Failed", spec.failed_jobs_history_limit),
    ] {
        let Some(limit) = limit else { continue };
        let mut finished: Vec<&Job> = jobs
            .iter()
            .map(AsRef::as_ref)
            .filter(|j| finished_condition(j) == Some(wanted))
            .collect();
        let excess = finished
            .len()
            .saturating_sub(usize::try_from(limit).unwrap_or(0));
        if excess == 0 {
            continue;
        }
        finished.sort_by(|a, b| oldest_first(a, b));
        for job in &finished[..excess] {
            if delete_job(ctx, cron_job, job).await {
                changed = true;
            }
        }
    }
    changed
}

/// Deletes `job` (background propagation: the garbage collector removes its pods) and its
/// entry in `status.active`; whether it was deleted.
async fn delete_job(ctx: &Context, cron_job: &mut CronJob, job: &Job) -> bool {
    let reference = object_reference(cron_job, &ApiResource::of::<CronJob>());
    let namespace = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    if let Err(err) = api.delete(&name, &DeleteParams::background()).await {
        tracing::warn!(job = %name, error = %err, "deleting a job of a cronjob failed");
        ctx.recorder
            .publish(
                &reference,
                EventType::Warning,
                "FailedDelete",
                &format!("Deleted job: {}", error_message(&err)),
            )
            .await;
        return false;
    }
    let uid = job.metadata.uid.clone().unwrap_or_default();
    delete_from_active_list(cron_job.status.get_or_insert_with(Default::default), &uid);
    ctx.recorder
        .publish(
            &reference,
            EventType::Normal,
            "SuccessfulDelete",
            &format!("Deleted job {name}"),
        )
        .await;
    true
}

/// Upstream `syncCronJob`: what to do next, and whether the status changed.
async fn sync_cron_job(
    ctx: &Context,
    cron_job: &mut CronJob,
    jobs: &[Arc<Job>],
) -> (Outcome, bool) {
    let now = ctx.clock.now();
    let namespace = cron_job.metadata.namespace.clone().unwrap_or_default();
    let name = cron_job.metadata.name.clone().unwrap_or_default();
    let cron_jobs: Api<CronJob> = Api::namespaced(ctx.client.clone(), &namespace);
    let jobs_api: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    let job_resource = ApiResource::of::<Job>();
    let mut changed = false;

    let mut children = HashSet::new();
    for job in jobs {
        let uid = job.metadata.uid.clone().unwrap_or_default();
        children.insert(uid.clone());
        let status = cron_job.status.get_or_insert_with(Default::default);
        let found = in_active_list(status, &uid);
        let finished = finished_condition(job);
        if !found && finished.is_none() {
            // Created by us but the status write not seen yet, or not ours at all: the
            // server's copy decides.
            let fresh = match cron_jobs.get(&name).await {
                Ok(fresh) => fresh,
                Err(err) => return (Outcome::failed(err), changed),
            };
            if fresh
                .status
                .as_ref()
                .is_some_and(|s| in_active_list(s, &uid))
            {
                *cron_job = fresh;
                continue;
            }
            let reference = object_reference(&*cron_job, &ApiResource::of::<CronJob>());
            ctx.recorder
                .publish(
                    &reference,
                    EventType::Warning,
                    "UnexpectedJob",
                    &format!(
                        "Saw a job that the controller did not create or forgot: {}",
                        job.metadata.name.as_deref().unwrap_or_default()
                    ),
                )
                .await;
        } else if let Some(condition) = finished {
            if found {
                delete_from_active_list(status, &uid);
                let reference = object_reference(&*cron_job, &ApiResource::of::<CronJob>());
                ctx.recorder
                    .publish(
                        &reference,
                        EventType::Normal,
                        "SawCompletedJob",
                        &format!(
                            "Saw completed job: {}, condition: {condition}",
                            job.metadata.name.as_deref().unwrap_or_default()
                        ),
                    )
                    .await;
                changed = true;
            }
            if condition == "Complete" {
                let completed = job.status.as_ref().and_then(|s| s.completion_time.clone());
                let status = cron_job.status.get_or_insert_with(Default::default);
                if let Some(completed) = completed {
                    if status
                        .last_successful_time
                        .as_ref()
                        .is_none_or(|last| completed.0 > last.0)
                    {
                        status.last_successful_time = Some(completed);
                        changed = true;
                    }
                }
            }
        }
    }

    // Active entries whose Job is gone (the server says so, not just the cache).
    let stale: Vec<ObjectReference> = cron_job
        .status
        .iter()
        .flat_map(|s| s.active.iter().flatten())
        .filter(|r| !children.contains(r.uid.as_deref().unwrap_or_default()))
        .cloned()
        .collect();
    for reference in stale {
        let job_name = reference.name.clone().unwrap_or_default();
        let job_namespace = reference
            .namespace
            .clone()
            .unwrap_or_else(|| namespace.clone());
        let api: Api<Job> = Api::namespaced(ctx.client.clone(), &job_namespace);
        match api.get_opt(&job_name).await {
            Ok(Some(_)) => {} // the cache is behind
            Ok(None) => {
                let event = object_reference(&*cron_job, &ApiResource::of::<CronJob>());
                ctx.recorder
                    .publish(
                        &event,
                        EventType::Normal,
                        "MissingJob",
                        &format!("Active job went missing: {job_name}"),
                    )
                    .await;
                let uid = reference.uid.clone().unwrap_or_default();
                delete_from_active_list(cron_job.status.get_or_insert_with(Default::default), &uid);
                changed = true;
            }
            Err(err) => return (Outcome::failed(err), changed),
        }
    }

    if cron_job.metadata.deletion_timestamp.is_some() {
        return (Outcome::done(), changed);
    }
    let reference = object_reference(&*cron_job, &ApiResource::of::<CronJob>());
    let spec = cron_job.spec.clone().unwrap_or_default();
    let mut zone = chrono_tz::Tz::UTC;
    if let Some(time_zone) = spec.time_zone.as_deref() {
        match schedule::load_location(time_zone) {
            Ok(tz) => zone = tz,
            Err(err) => {
                tracing::debug!(cronjob = %name, time_zone, "not starting job: invalid timeZone");
                ctx.recorder
                    .publish(
                        &reference,
                        EventType::Warning,
                        "UnknownTimeZone",
                        &format!("invalid timeZone: {time_zone:?}: {err}"),
                    )
                    .await;
                return (Outcome::done(), changed);
            }
        }
    }
    if spec.suspend == Some(true) {
        tracing::debug!(cronjob = %name, "not starting job: suspended");
        return (Outcome::done(), changed);
    }
    if spec.schedule.contains("TZ") {
        ctx.recorder
            .publish(
                &reference,
                EventType::Warning,
                "UnsupportedSchedule",
                &format!(
                    "CRON_TZ or TZ used in schedule {:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
                    spec.schedule
                ),
            )
            .await;
    }
    let schedule = match Schedule::parse(&schedule::with_time_zone(
        &spec.schedule,
        spec.time_zone.as_deref(),
    )) {
        Ok(schedule) => schedule,
        Err(err) => {
            tracing::debug!(cronjob = %name, schedule = %spec.schedule, error = %err, "unparseable schedule");
            ctx.recorder
                .publish(
                    &reference,
                    EventType::Warning,
                    "UnparseableSchedule",
                    &format!("unparseable schedule: {:?} : {err}", spec.schedule),
                )
                .await;
            return (Outcome::done(), changed);
        }
    };
    let status = cron_job.status.clone().unwrap_or_default();
    let times = Times {
        created: cron_job
            .metadata
            .creation_timestamp
            .as_ref()
            .map_or(now, |t| t.0),
        last_schedule: status.last_schedule_time.as_ref().map(|t| t.0),
        starting_deadline: spec.starting_deadline_seconds,
    };
    let requeue = |cron_job: &CronJob| {
        let last = cron_job
            .status
            .as_ref()
            .and_then(|s| s.last_schedule_time.as_ref())
            .map(|t| t.0);
        schedule::requeue_after(
            &schedule,
            &Times {
                last_schedule: last,
                ..times
            },
            now,
        )
    };
    let scheduled = match schedule::next_schedule_time(&schedule, &times, now) {
        Ok((scheduled, missed)) => {
            if missed == Missed::Many && scheduled.is_some() {
                tracing::info!(cronjob = %name, "too many missed times");
                ctx.recorder
                    .publish(
                        &reference,
                        EventType::Warning,
                        "TooManyMissedTimes",
                        "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
                    )
                    .await;
            }
            scheduled
        }
        Err(err) => {
            ctx.recorder
                .publish(
                    &reference,
                    EventType::Warning,
                    "InvalidSchedule",
                    &format!("invalid schedule: {} : {err}", spec.schedule),
                )
                .await;
            return (Outcome::done(), changed);
        }
    };
    let Some(scheduled) = scheduled else {
        tracing::debug!(cronjob = %name, "no unmet start times");
        return (Outcome::after(requeue(cron_job)), changed);
    };
    if schedule::too_late(scheduled, spec.starting_deadline_seconds, now) {
        ctx.recorder
            .publish(
                &reference,
                EventType::Warning,
                "MissSchedule",
                &format!(
                    "Missed scheduled time to start a job: {}",
                    scheduled
                        .to_zoned(jiff::tz::TimeZone::UTC)
                        .strftime("%a, %d %b %Y %H:%M:%S %z")
                ),
            )
            .await;
        return (Outcome::after(requeue(cron_job)), changed);
    }
    let job_name = schedule::job_name(&name, scheduled);
    let already = status
        .active
        .iter()
        .flatten()
        .any(|r| r.name.as_deref() == Some(job_name.as_str()))
        || status.last_schedule_time.as_ref().map(|t| t.0) == Some(scheduled);
    if already {
        tracing::debug!(cronjob = %name, %scheduled, "scheduled time already processed");
        return (Outcome::after(requeue(cron_job)), changed);
    }
    let active: Vec<ObjectReference> = status.active.clone().unwrap_or_default();
    match spec.concurrency_policy.as_deref() {
        Some("Forbid") if !active.is_empty() => {
            tracing::debug!(cronjob = %name, "not starting job: prior execution still running (Forbid)");
            ctx.recorder
                .publish(
                    &reference,
                    EventType::Normal,
                    "JobAlreadyActive",
                    "Not starting job because prior execution is running and concurrency policy is Forbid",
                )
                .await;
            return (Outcome::after(requeue(cron_job)), changed);
        }
        Some("Replace") => {
            for running in &active {
                let running_name = running.name.clone().unwrap_or_default();
                let job = match jobs_api.get(&running_name).await {
                    Ok(job) => job,
                    Err(err) => {
                        ctx.recorder
                            .publish(
                                &reference,
                                EventType::Warning,
                                "FailedGet",
                                &format!("Get job: {}", error_message(&err)),
                            )
                            .await;
                        return (Outcome::failed(err), changed);
                    }
                };
                if !delete_job(ctx, cron_job, &job).await {
                    return (
                        Outcome::failed(Error::Manage(format!(
                            "could not replace job {namespace}/{running_name}"
                        ))),
                        changed,
                    );
                }
                changed = true;
            }
        }
        _ => {}
    }

    let request = job_from_template(cron_job, scheduled, zone);
    let created = match jobs_api.create(&PostParams::default(), &request).await {
        Ok(job) => {
            tracing::debug!(cronjob = %name, job = %job_name, "created job");
            ctx.recorder
                .publish(
                    &reference,
                    EventType::Normal,
                    "SuccessfulCreate",
                    &format!("Created job {job_name}"),
                )
                .await;
            job
        }
        Err(err) if err.is_namespace_terminating() => return (Outcome::failed(err), changed),
        Err(err) if err.is_already_exists() => {
            // Created before (the status write was lost), or by someone else.
            let job = match jobs_api.get(&job_name).await {
                Ok(job) => job,
                Err(err) => return (Outcome::failed(err), changed),
            };
            let ours = controller_of(&job.metadata)
                .is_some_and(|o| Some(&o.uid) == cron_job.metadata.uid.as_ref());
            let uid = job.metadata.uid.clone().unwrap_or_default();
            let listed = cron_job
                .status
                .as_ref()
                .is_some_and(|s| in_active_list(s, &uid));
            if !ours || listed {
                return (Outcome::done(), changed);
            }
            tracing::info!(cronjob = %name, job = %job_name, "job already exists");
            job
        }
        Err(err) => {
            ctx.recorder
                .publish(
                    &reference,
                    EventType::Warning,
                    "FailedCreate",
                    &format!("Error creating job: {}", error_message(&err)),
                )
                .await;
            return (Outcome::failed(err), changed);
        }
    };
    let status = cron_job.status.get_or_insert_with(Default::default);
    status
        .active
        .get_or_insert_with(Vec::new)
        .push(object_reference(&created, &job_resource));
    status.last_schedule_time = Some(Time(scheduled));
    (Outcome::after(requeue(cron_job)), true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_job_carries_the_template_the_owner_and_the_scheduled_time_in_the_zone() {
        let cron_job: CronJob = serde_json::from_value(json!({
            "metadata": {"name": "backup", "namespace": "ops", "uid": "u-1"},
            "spec": {"schedule": "0 * * * *", "jobTemplate": {
                "metadata": {"labels": {"app": "backup"}, "annotations": {"team": "db"}},
                "spec": {"backoffLimit": 2, "template": {"spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}}
        }))
        .expect("a cronjob");
        let scheduled = "2024-03-01T10:30:00Z"
            .parse::<jiff::Timestamp>()
            .expect("a time");
        let zone = schedule::load_location("Asia/Kolkata").expect("a zone");
        let job = job_from_template(&cron_job, scheduled, zone);
        let meta = &job.metadata;
        assert_eq!(
            meta.name.as_deref(),
            Some(format!("backup-{}", scheduled.as_second() / 60).as_str())
        );
        assert_eq!(meta.namespace.as_deref(), Some("ops"));
        assert_eq!(meta.labels, Some(labels(&[("app", "backup")])));
        assert_eq!(
            meta.annotations,
            Some(labels(&[
                (SCHEDULED_TIMESTAMP_ANNOTATION, "2024-03-01T16:00:00+05:30"),
                ("team", "db"),
            ]))
        );
        let owner = &meta.owner_references.as_ref().expect("an owner")[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
            ("CronJob", "backup", "u-1")
        );
        assert_eq!(owner.controller, Some(true));
        assert_eq!(job.spec.and_then(|s| s.backoff_limit), Some(2));
        let utc = job_from_template(&cron_job, scheduled, chrono_tz::Tz::UTC);
        assert_eq!(
            utc.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(SCHEDULED_TIMESTAMP_ANNOTATION))
                .map(String::as_str),
            Some("2024-03-01T10:30:00Z")
        );
    }

    #[test]
    fn old_jobs_sort_by_start_time_then_name_and_unstarted_last() {
        let job = |name: &str, start: Option<u32>| -> Job {
            serde_json::from_value(json!({
                "metadata": {"name": name},
                "status": {"startTime": start.map(|m| format!("2024-03-01T10:{m:02}:00Z"))}
            }))
            .expect("a job")
        };
        let mut jobs = [
            job("d", None),
            job("c", Some(5)),
            job("b", Some(1)),
            job("a", Some(5)),
        ];
        jobs.sort_by(oldest_first);
        let names: Vec<&str> = jobs
            .iter()
            .map(|j| j.metadata.name.as_deref().unwrap_or_default())
            .collect();
        assert_eq!(names, ["b", "a", "c", "d"]);
    }
}
