//! Where controllers that act at wall-clock times (CronJob schedules, Job deadlines and TTLs,
//! Deployment progress deadlines, `minReadySeconds`) read "now": the process's one
//! [`Clock`] (`kubemock_apimachinery::clock`), shared with the API server when both run in
//! one process. A test cannot wait five real minutes for `*/5 * * * *`, so the clock may be a
//! [`FakeClock`] that the test sets and advances; moving it notifies its subscribers, and
//! [`requeue_on_moves`] turns each move into a look at every object of a controller (as the
//! CronJob controller does), instead of sleeping until a time that never comes in real time.

pub use kubemock_apimachinery::clock::{Clock, FakeClock, NotVirtual};
use tokio_util::sync::CancellationToken;

/// Calls `requeue` after every move of a fake clock, until `token` is cancelled; returns at
/// once for the system clock (controllers requeue "after D" in real time then). Moves that
/// come faster than `requeue` runs are seen as one.
pub async fn requeue_on_moves(clock: Clock, token: CancellationToken, mut requeue: impl FnMut()) {
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
        requeue();
    }
}
