//! The CronJob controller (kube-controller-manager's `cronjob-controller`, upstream
//! `pkg/controller/cronjob/cronjob_controllerv2.go`): creates a Job for each time a CronJob's
//! schedule fires, named for that minute so a time is never run twice, under the concurrency
//! policy (Allow, Forbid, Replace), suspension and starting deadline; keeps `status.active`,
//! `lastScheduleTime` and `lastSuccessfulTime`; deletes the finished Jobs past the history
//! limits. Time comes from the manager's [`Clock`]: with the system clock a CronJob is
//! looked at again just after its next schedule time; a fake clock that moves queues every
//! CronJob at once, so tests never wait for real schedule times.

mod schedule;
mod sync;

use std::sync::Arc;

use k8s_openapi::api::batch::v1::{CronJob, Job};
use kubemock_client::events::Recorder;
use kubemock_client::{ApiResource, Client, Controller, InformerFactory, SharedInformer, Store};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;

pub use sync::SCHEDULED_TIMESTAMP_ANNOTATION;

/// Concurrent CronJob syncs (kube-controller-manager's `--concurrent-cron-job-syncs`).
const WORKERS: usize = 5;

/// What every sync reads and writes through.
struct Context {
    client: Client,
    cron_jobs: Store<CronJob>,
    jobs: Store<Job>,
    recorder: Recorder,
    clock: Clock,
}

/// The CronJob controller.
pub struct CronJobController {
    client: Client,
    cron_jobs: SharedInformer<CronJob>,
    jobs: SharedInformer<Job>,
    clock: Clock,
}

impl CronJobController {
    /// A controller on `factory`'s shared CronJob and Job informers, reading the time from
    /// `clock`.
    pub fn new(client: Client, factory: &InformerFactory, clock: Clock) -> Self {
        CronJobController {
            client,
            cron_jobs: factory.informer::<CronJob>(),
            jobs: factory.informer::<Job>(),
            clock,
        }
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let ctx = Arc::new(Context {
            client: self.client.clone(),
            cron_jobs: self.cron_jobs.store(),
            jobs: self.jobs.store(),
            recorder: Recorder::new(self.client.clone(), "cronjob-controller")
                .with_clock(self.clock.clone()),
            clock: self.clock.clone(),
        });
        let controller = Controller::new("cronjob", self.cron_jobs)
            .workers(WORKERS)
            .owns(&self.jobs, &ApiResource::of::<CronJob>());
        // A fake clock that moves makes every CronJob due for a look.
        let clock_moves = crate::clock::requeue_all_on_moves(
            self.clock.clone(),
            token.clone(),
            controller.queue(),
            ctx.cron_jobs.clone(),
        );
        let run = controller.run(
            move |key| sync::sync(key, ctx.clone()),
            crate::error::error_policy,
            token.clone(),
        );
        tokio::join!(run, clock_moves);
    }
}
