//! Leader election on a Lease against an in-process kubemock server (docs/api-behaviour.md#leases): exactly one of
//! two candidates leads; when it stops, the other takes over within the lease duration (at
//! once when the lease is released, after the lease expires when the leader vanished).

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kubemock_client::Api;
use kubemock_client::leader::{LeaderElectionConfig, LeaderElector, LeaderEvent};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

// Generous enough that a leader on a loaded 2-core CI machine renews in time.
const LEASE: Duration = Duration::from_secs(4);
const RENEW: Duration = Duration::from_secs(3);
const RETRY: Duration = Duration::from_millis(300);

struct Candidate {
    token: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

/// Starts a candidate; its events go to `events` as (identity, event).
fn candidate(
    api: &Api<Lease>,
    identity: &str,
    release: bool,
    leading: &Arc<AtomicUsize>,
    events: &mpsc::Sender<(String, LeaderEvent)>,
) -> Candidate {
    let mut config = LeaderElectionConfig::new(identity).timings(LEASE, RENEW, RETRY);
    config.release_on_cancel = release;
    let elector = LeaderElector::new(api.clone(), "lock", config);
    let token = CancellationToken::new();
    let leading = leading.clone();
    let events = events.clone();
    let id = identity.to_owned();
    let task = tokio::spawn({
        let token = token.clone();
        async move {
            elector
                .run(
                    token,
                    move |lead_token| async move {
                        leading.fetch_add(1, Ordering::SeqCst);
                        lead_token.cancelled().await;
                        leading.fetch_sub(1, Ordering::SeqCst);
                    },
                    move |event| {
                        let _ = events.try_send((id.clone(), event));
                    },
                )
                .await;
        }
    });
    Candidate { token, task }
}

async fn next_started(events: &mut mpsc::Receiver<(String, LeaderEvent)>) -> String {
    loop {
        let (id, event) = tokio::time::timeout(Duration::from_secs(30), events.recv())
            .await
            .expect("an event in time")
            .expect("channel open");
        if event == LeaderEvent::StartedLeading {
            return id;
        }
    }
}

async fn holder(api: &Api<Lease>) -> Option<String> {
    api.get("lock")
        .await
        .expect("lease")
        .spec
        .and_then(|s| s.holder_identity)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_one_candidate_leads_and_the_other_takes_over_after_a_release() {
    let (_server, client) = common::server().await;
    let api: Api<Lease> = Api::namespaced(client, "default");
    let leading = Arc::new(AtomicUsize::new(0));
    let (tx, mut events) = mpsc::channel(64);
    let a = candidate(&api, "a", true, &leading, &tx);
    let b = candidate(&api, "b", true, &leading, &tx);

    next_started(&mut events).await;
    // Several retry periods and more than a lease duration: never two leaders (a leader that
    // misses its renew deadline on an overloaded machine steps down, as client-go's does, so
    // "none for a moment" is allowed), and the lease names the one that leads.
    let deadline = Instant::now() + LEASE + RETRY * 3;
    while Instant::now() < deadline {
        assert!(leading.load(Ordering::SeqCst) <= 1, "two leaders at once");
        tokio::time::sleep(RETRY / 2).await;
    }
    let first = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let holder = holder(&api).await;
            if leading.load(Ordering::SeqCst) == 1
                && let Some(holder) = holder
            {
                return holder;
            }
            tokio::time::sleep(RETRY / 2).await;
        }
    })
    .await
    .expect("a leader holds the lease");

    let (stopping, other) = if first == "a" { (a, b) } else { (b, a) };
    let stopped_at = Instant::now();
    stopping.token.cancel();
    stopping.task.await.expect("stops");
    let second = next_started(&mut events).await;
    let takeover = stopped_at.elapsed();
    assert_ne!(second, first);
    assert!(
        takeover < LEASE,
        "took over in {takeover:?} after a release"
    );
    assert_eq!(holder(&api).await.as_deref(), Some(second.as_str()));
    assert_eq!(leading.load(Ordering::SeqCst), 1);
    let lease = api.get("lock").await.expect("lease");
    assert_eq!(lease.spec.and_then(|s| s.lease_transitions), Some(1));
    other.token.cancel();
    other.task.await.expect("stops");
    assert_eq!(holder(&api).await, None, "released on shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_leader_is_replaced_once_its_lease_expires() {
    let (_server, client) = common::server().await;
    let api: Api<Lease> = Api::namespaced(client, "default");
    let leading = Arc::new(AtomicUsize::new(0));
    let (tx, mut events) = mpsc::channel(64);
    let a = candidate(&api, "a", false, &leading, &tx);
    assert_eq!(next_started(&mut events).await, "a");
    let b = candidate(&api, "b", false, &leading, &tx);
    tokio::time::sleep(RETRY * 3).await;
    assert_eq!(holder(&api).await.as_deref(), Some("a"));

    // `a` stops without releasing (as if its process died).
    let stopped_at = Instant::now();
    a.token.cancel();
    a.task.await.expect("stops");
    assert_eq!(holder(&api).await.as_deref(), Some("a"), "not released");
    assert_eq!(next_started(&mut events).await, "b");
    let takeover = stopped_at.elapsed();
    // `b` waits for the lease to expire as it observed it (it saw the last renewal at most
    // about one retry period before `a` stopped), and no longer than that plus its polling.
    assert!(
        takeover >= LEASE - RETRY * 3,
        "waited for the lease: {takeover:?}"
    );
    assert!(takeover <= LEASE + RETRY * 5, "took over in {takeover:?}");
    b.token.cancel();
    b.task.await.expect("stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_on_a_virtual_clock_stamps_the_lease_from_it_and_survives_its_jumps() {
    use kubemock_apimachinery::clock::{Clock, FakeClock};

    let (_server, client) = common::server().await;
    let api: Api<Lease> = Api::namespaced(client, "default");
    let start = "2030-01-01T00:00:00Z"
        .parse::<jiff::Timestamp>()
        .expect("a time");
    let fake = FakeClock::new(start);
    let config = LeaderElectionConfig::new("virtual").timings(LEASE, RENEW, RETRY);
    let elector =
        LeaderElector::new(api.clone(), "lock", config).with_clock(Clock::from(fake.clone()));
    let token = CancellationToken::new();
    let leading = Arc::new(AtomicUsize::new(0));
    let (tx, mut events) = mpsc::channel(64);
    let task = tokio::spawn({
        let (token, leading) = (token.clone(), leading.clone());
        async move {
            elector
                .run(
                    token,
                    move |lead_token| async move {
                        leading.fetch_add(1, Ordering::SeqCst);
                        lead_token.cancelled().await;
                        leading.fetch_sub(1, Ordering::SeqCst);
                    },
                    move |event| {
                        let _ = tx.try_send(("virtual".to_owned(), event));
                    },
                )
                .await;
        }
    });
    next_started(&mut events).await;
    let spec = api.get("lock").await.expect("lease").spec.expect("spec");
    assert_eq!(spec.acquire_time.map(|t| t.0), Some(start));
    assert_eq!(spec.renew_time.map(|t| t.0), Some(start));

    // Six hours later on the virtual clock: the next renewal carries the new time, and the
    // leader, judging expiry by what it observes in real time, never stepped down.
    fake.advance(Duration::from_secs(6 * 3600));
    let later = start + Duration::from_secs(6 * 3600);
    tokio::time::timeout(Duration::from_secs(30), async {
        while api
            .get("lock")
            .await
            .expect("lease")
            .spec
            .and_then(|s| s.renew_time)
            .map(|t| t.0)
            != Some(later)
        {
            tokio::time::sleep(RETRY / 2).await;
        }
    })
    .await
    .expect("a renewal at the virtual time");
    assert_eq!(leading.load(Ordering::SeqCst), 1, "still the leader");
    while let Ok(Some((_, event))) =
        tokio::time::timeout(Duration::from_millis(1), events.recv()).await
    {
        assert_ne!(event, LeaderEvent::StoppedLeading);
    }
    token.cancel();
    task.await.expect("stops");
}
