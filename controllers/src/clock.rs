//! Where controllers that act at wall-clock times (CronJob schedules, Job deadlines and TTLs,
//! Deployment progress deadlines, `minReadySeconds`) read "now": the process's one
//! [`Clock`] (`kubemock_apimachinery::clock`), shared with the API server when both run in
//! one process. A test cannot wait five real minutes for `*/5 * * * *`, so the clock may be a
//! [`FakeClock`] that the test sets and advances; moving it notifies its subscribers, and
//! [`requeue_on_moves`] turns each move into a look at every object of a controller (as the
//! CronJob controller does), instead of sleeping until a time that never comes in real time.

use jiff::Timestamp;
pub use kubemock_apimachinery::clock::{Clock, FakeClock, NotVirtual};
use kubemock_client::{ObjectKey, Resource, Store, WorkQueue};
use tokio_util::sync::CancellationToken;

/// Calls `requeue` with the new time after every move of a fake clock, until `token` is cancelled; returns at
/// once for the system clock (controllers requeue "after D" in real time then). Moves that
/// come faster than `requeue` runs are seen as one.
pub async fn requeue_on_moves(
    clock: Clock,
    token: CancellationToken,
    mut requeue: impl FnMut(Timestamp),
) {
    let Some(mut moves) = clock.subscribe() else {
        return;
    };
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            changed = moves.changed() => if changed.is_err() { return },
        }
        let now = *moves.borrow_and_update();
        tracing::debug!(%now, "clock moved; requeueing");
        requeue(now);
    }
}

/// [`requeue_on_moves`] for what most controllers want: on every move of a fake clock, each
/// object of `store` into `queue`, for a controller whose objects wait for times (deadlines,
/// availability, schedules).
pub async fn requeue_all_on_moves<K: Resource>(
    clock: Clock,
    token: CancellationToken,
    queue: WorkQueue<ObjectKey>,
    store: Store<K>,
) {
    requeue_on_moves(clock, token, move |_| {
        for object in store.list() {
            queue.add(object.key());
        }
    })
    .await;
}
