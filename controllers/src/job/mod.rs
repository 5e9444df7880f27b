//! The Job controller (issue 6 item 3; NonIndexed and Indexed Jobs): runs pods until
//! `completions` succeed, at most `parallelism` at once; fails the Job past `backoffLimit`
//! failed pods or `activeDeadlineSeconds`; reports active, ready, succeeded, failed,
//! startTime, completionTime and the conditions SuccessCriteriaMet/Complete or
//! FailureTarget/Failed; deletes finished Jobs after `ttlSecondsAfterFinished` (the
//! TTL-after-finished controller's work). Pods are the Job's by controller reference;
//! expectations (as in the ReplicaSet controller) prevent duplicate creates. Indexed Jobs
//! (`completionMode: Indexed`) give each pod a completion index and complete when every
//! index has succeeded (the `indexed` module).

mod indexed;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kubemock_client::controller::{controller_of, controller_reference};
use kubemock_client::events::{EventType, Recorder, object_reference};
use kubemock_client::informer::Handlers;
use kubemock_client::{
    Action, Api, ApiResource, Client, Controller, DeleteParams, InformerFactory, ObjectKey,
    PostParams, Resource, SharedInformer, Store,
};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::error::Result;
use crate::replicaset::Expectations;
use crate::replicaset::pods::{is_active, is_ready};

pub use indexed::{COMPLETION_INDEX, COMPLETION_INDEX_ENV};

/// Concurrent Job syncs (kube-controller-manager's `--concurrent-job-syncs`).
const WORKERS: usize = 5;
/// Default `backoffLimit`.
const DEFAULT_BACKOFF_LIMIT: i32 = 6;

struct Context {
    client: Client,
    /// The TTL-after-finished controller's client (its own ServiceAccount upstream: the Job
    /// controller may not delete Jobs).
    ttl_client: Client,
    jobs: Store<Job>,
    pods: Store<Pod>,
    expectations: Arc<Expectations>,
    recorder: Recorder,
    /// Where `startTime`, deadlines, TTLs and conditions read the time.
    clock: Clock,
}

/// The Job controller.
pub struct JobController {
    client: Client,
    /// Deletes finished Jobs past their TTL ([`JobController::with_ttl_client`]).
    ttl_client: Client,
    jobs: SharedInformer<Job>,
    pods: SharedInformer<Pod>,
    clock: Clock,
}

impl JobController {
    /// A controller on `factory`'s shared Job and Pod informers.
    pub fn new(client: Client, factory: &InformerFactory) -> Self {
        JobController {
            ttl_client: client.clone(),
            client,
            jobs: factory.informer::<Job>(),
            pods: factory.informer::<Pod>(),
            clock: Clock::system(),
        }
    }

    /// Reads the time from `clock` (the system clock by default): `activeDeadlineSeconds`
    /// and `ttlSecondsAfterFinished` expire as it moves.
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Deletes expired Jobs with `client`: upstream's TTL-after-finished controller is a
    /// controller of its own, with its own identity (`ttl-after-finished-controller`).
    #[must_use]
    pub fn with_ttl_client(mut self, client: Client) -> Self {
        self.ttl_client = client;
        self
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let expectations = Arc::new(Expectations::default());
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            ttl_client: self.ttl_client.clone(),
            jobs: self.jobs.store(),
            pods: self.pods.store(),
            expectations: expectations.clone(),
            recorder: Recorder::new(self.client.clone(), "job-controller")
                .with_clock(self.clock.clone()),
            clock: self.clock.clone(),
        });
        let controller = Controller::new("job", self.jobs)
            .workers(WORKERS)
            .owns(&self.pods, &ApiResource::of::<Job>());
        let queue = controller.queue();
        // A fake clock that moves makes every Job due for a look (deadlines and TTLs).
        let clock_moves = crate::clock::requeue_all_on_moves(
            self.clock.clone(),
            token.clone(),
            queue.clone(),
            ctx.jobs.clone(),
        );
        let job_of = |pod: &Pod| {
            controller_of(&pod.metadata)
                .filter(|o| o.kind == "Job")
                .map(|o| ObjectKey::new(pod.metadata.namespace.as_deref(), &o.name))
        };
        let (q1, q2) = (queue.clone(), queue);
        let (e1, e2) = (expectations.clone(), expectations);
        self.pods.add_handler(
            Handlers::new()
                .on_add(move |pod: &Arc<Pod>| {
                    if let Some(job) = job_of(pod) {
                        e1.creation_observed(&job);
                        q1.add(job);
                    }
                })
                .on_delete(move |pod: &Arc<Pod>| {
                    if let Some(job) = job_of(pod) {
                        e2.deletion_observed(&job, &pod.key());
                        q2.add(job);
                    }
                }),
        );
        let run = controller.run(
            move |key| sync(key, ctx.clone()),
            crate::error::error_policy,
            token,
        );
        tokio::join!(run, clock_moves);
    }
}

fn condition(kind: &str, reason: &str, message: &str, now: &Time) -> JobCondition {
    JobCondition {
        type_: kind.to_owned(),
        status: "True".to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        last_probe_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    }
}

fn finished_at(job: &Job) -> Option<Time> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        .and_then(|c| c.last_transition_time.clone())
}

async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(job) = ctx.jobs.get(&key) else {
        ctx.expectations.forget(&key);
        return Ok(Action::AwaitChange);
    };
    let namespace = key.namespace.clone().unwrap_or_default();
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &namespace);
    let pods_api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let now = Time(ctx.clock.now());
    if let Some(finished) = finished_at(&job) {
        // The TTL-after-finished controller's work.
        let Some(ttl) = job.spec.as_ref().and_then(|s| s.ttl_seconds_after_finished) else {
            return Ok(Action::AwaitChange);
        };
        let due = kubemock_apimachinery::time::shift_seconds(finished.0, i64::from(ttl));
        if due > now.0 {
            return Ok(Action::RequeueAfter(kubemock_apimachinery::time::until(
                now.0, due,
            )));
        }
        let expired: Api<Job> = Api::namespaced(ctx.ttl_client.clone(), &namespace);
        match expired.delete(&key.name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(err) if err.is_not_found() => {}
            Err(err) => return Err(err.into()),
        }
        return Ok(Action::AwaitChange);
    }
    if job.metadata.deletion_timestamp.is_some() {
        return Ok(Action::AwaitChange);
    }
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let owned: Vec<Arc<Pod>> = ctx
        .pods
        .list_namespace(&namespace)
        .into_iter()
        .filter(|p| controller_of(&p.metadata).is_some_and(|o| o.uid == uid))
        .collect();
    let phase = |p: &Pod| p.status.as_ref().and_then(|s| s.phase.clone());
    let active: Vec<&Arc<Pod>> = owned.iter().filter(|p| is_active(p)).collect();
    let previous = job.status.clone().unwrap_or_default();
    let count = |wanted: &str| {
        owned
            .iter()
            .filter(|p| phase(p).as_deref() == Some(wanted))
            .count()
    };
    let to_i32 = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let spec = job.spec.clone().unwrap_or_default();
    let parallelism = spec.parallelism.unwrap_or(1).max(0);
    let completions = spec.completions;
    // Indexed: the indexes with a succeeded pod, now or recorded before.
    let succeeded_indexes = (spec.completion_mode.as_deref() == Some("Indexed")).then(|| {
        let total = completions.unwrap_or(0);
        let mut done =
            indexed::parse_indexes(previous.completed_indexes.as_deref().unwrap_or(""), total);
        done.extend(
            owned
                .iter()
                .filter(|p| phase(p).as_deref() == Some("Succeeded"))
                .filter_map(|p| indexed::completion_index(p, total)),
        );
        done
    });
    let succeeded = match &succeeded_indexes {
        Some(done) => to_i32(done.len()),
        None => to_i32(count("Succeeded")).max(previous.succeeded.unwrap_or(0)),
    };
    let failed = to_i32(count("Failed")).max(previous.failed.unwrap_or(0));
    let backoff_limit = spec.backoff_limit.unwrap_or(DEFAULT_BACKOFF_LIMIT);
    let start_time = previous.start_time.clone().unwrap_or_else(|| now.clone());
    let reference = object_reference(job.as_ref(), &ApiResource::of::<Job>());

    let mut status = JobStatus {
        start_time: Some(start_time.clone()),
        active: Some(to_i32(active.len())).filter(|n| *n > 0),
        ready: Some(to_i32(active.iter().filter(|p| is_ready(p)).count())),
        succeeded: Some(succeeded).filter(|n| *n > 0),
        failed: Some(failed).filter(|n| *n > 0),
        terminating: Some(to_i32(
            owned
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_some())
                .count(),
        )),
        uncounted_terminated_pods: Some(UncountedTerminatedPods::default()),
        completed_indexes: succeeded_indexes
            .as_ref()
            .map(indexed::format_indexes)
            .filter(|text| !text.is_empty()),
        conditions: previous.conditions.clone(),
        ..previous.clone()
    };
    let deadline_passed = spec.active_deadline_seconds.is_some_and(|seconds| {
        kubemock_apimachinery::time::shift_seconds(start_time.0, seconds) <= now.0
    });
    let failure = if failed > backoff_limit {
        Some((
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
        ))
    } else if deadline_passed {
        Some((
            "DeadlineExceeded",
            "Job was active longer than specified deadline",
        ))
    } else {
        None
    };
    let complete = match completions {
        Some(completions) => succeeded >= completions,
        None => succeeded > 0 && active.is_empty(),
    };
    let mut action = Action::AwaitChange;
    if let Some((reason, message)) = failure {
        for pod in &active {
            let name = pod.metadata.name.clone().unwrap_or_default();
            match pods_api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(err) if err.is_not_found() => {}
                Err(err) => return Err(err.into()),
            }
        }
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        conditions.push(condition("FailureTarget", reason, message, &now));
        conditions.push(condition("Failed", reason, message, &now));
        status.active = None;
        ctx.recorder
            .publish(&reference, EventType::Warning, reason, message)
            .await;
    } else if complete {
        let message = "Reached expected number of succeeded pods";
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        conditions.push(condition(
            "SuccessCriteriaMet",
            "CompletionsReached",
            message,
            &now,
        ));
        conditions.push(condition("Complete", "CompletionsReached", message, &now));
        status.completion_time = Some(now.clone());
        ctx.recorder
            .publish(&reference, EventType::Normal, "Completed", "Job completed")
            .await;
        if let Some(ttl) = spec.ttl_seconds_after_finished {
            action = Action::RequeueAfter(Duration::from_secs(u64::try_from(ttl).unwrap_or(0)));
        }
    } else if ctx.expectations.satisfied(&key) {
        // Upstream requeues an active Job at its deadline (`syncJob`'s
        // `enqueueSyncJobWithDelay` with the time left of `activeDeadlineSeconds`).
        if let Some(seconds) = spec.active_deadline_seconds {
            let deadline = kubemock_apimachinery::time::shift_seconds(start_time.0, seconds);
            action = Action::RequeueAfter(kubemock_apimachinery::time::until(now.0, deadline));
        }
        let remaining = completions.map_or(parallelism, |c| (c - succeeded).max(0));
        let wanted = if completions.is_none() && succeeded > 0 {
            0
        } else {
            parallelism.min(remaining)
        };
        let missing = usize::try_from(wanted)
            .unwrap_or(0)
            .saturating_sub(active.len());
        // Indexed: active pods without a valid index, or a second one of an index, go first.
        let (templates, remove) = match &succeeded_indexes {
            Some(done) => {
                let total = completions.unwrap_or(0);
                let pods: Vec<&Pod> = active.iter().map(|p| p.as_ref()).collect();
                let (held, remove) = indexed::sort_active(&pods, total);
                let name = key.name.as_str();
                let templates: Vec<Pod> = indexed::pending_indexes(done, &held, total, missing)
                    .into_iter()
                    .map(|index| {
                        let mut template = pod_template(&job);
                        indexed::mark_pod(&mut template, name, index);
                        template
                    })
                    .collect();
                (templates, remove)
            }
            None => (vec![pod_template(&job); missing], Vec::new()),
        };
        if !remove.is_empty() {
            remove_pods(&ctx, &key, &pods_api, &namespace, remove).await?;
        } else if !templates.is_empty() {
            ctx.expectations.expect_creations(&key, templates.len());
            let post = PostParams::default();
            let results = futures_util::future::join_all(
                templates
                    .iter()
                    .map(|template| pods_api.create(&post, template)),
            )
            .await;
            let mut error = None;
            for result in results {
                match result {
                    Ok(pod) => {
                        let name = pod.metadata.name.unwrap_or_default();
                        ctx.recorder
                            .publish(
                                &reference,
                                EventType::Normal,
                                "SuccessfulCreate",
                                &format!("Created pod: {name}"),
                            )
                            .await;
                    }
                    Err(err) => {
                        ctx.expectations.creation_observed(&key);
                        error.get_or_insert(err);
                    }
                }
            }
            if let Some(err) = error {
                return Err(err.into());
            }
        }
    }
    if job.status.as_ref() != Some(&status) {
        let mut updated = (*job).clone();
        updated.status = Some(status);
        jobs.replace_status(&key.name, &PostParams::default(), &updated)
            .await?;
    }
    Ok(action)
}

/// Deletes the pods `names` of the Job at `key` (expecting their deletions).
async fn remove_pods(
    ctx: &Context,
    key: &ObjectKey,
    pods_api: &Api<Pod>,
    namespace: &str,
    names: Vec<String>,
) -> Result<()> {
    ctx.expectations.expect_deletions(
        key,
        names.iter().map(|n| ObjectKey::new(Some(namespace), n)),
    );
    for name in names {
        match pods_api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => tracing::info!(pod = %name, "deleted a pod without a valid completion index"),
            Err(err) if err.is_not_found() => {
                ctx.expectations
                    .deletion_observed(key, &ObjectKey::new(Some(namespace), &name));
            }
            Err(err) => {
                ctx.expectations
                    .deletion_observed(key, &ObjectKey::new(Some(namespace), &name));
                return Err(err.into());
            }
        }
    }
    Ok(())
}

/// A pod of the Job: the template with the Job's labels and a controller reference.
fn pod_template(job: &Job) -> Pod {
    let template = job
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let meta = template.metadata.unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let mut labels = meta.labels.unwrap_or_default();
    for (k, v) in [
        ("batch.kubernetes.io/controller-uid", uid.as_str()),
        ("batch.kubernetes.io/job-name", name.as_str()),
        ("controller-uid", uid.as_str()),
        ("job-name", name.as_str()),
    ] {
        labels.entry(k.to_owned()).or_insert_with(|| v.to_owned());
    }
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}-")),
            namespace: job.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: meta.annotations,
            owner_references: controller_reference(job).map(|r| vec![r]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    }
}
