//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's algorithm and timings
//! (`tools/leaderelection`, docs/api-behaviour.md#leases): candidates poll every retry period; a lease whose record
//! has not changed for a lease duration *as observed locally* (no clock comparison across
//! machines) may be taken over with a conditional PUT; the leader renews every retry period
//! and gives up leadership if it cannot renew within the renew deadline; on shutdown it
//! releases the lease so that another candidate takes over at once.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kubemock_apimachinery::clock::Clock;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::api::Api;
use crate::error::{Error, Result};
use crate::request::PostParams;

/// How long a lease is valid without renewal (client-go / controller-runtime: 15 s).
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long the leader keeps retrying a renewal before it gives up (10 s).
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// How often candidates and the leader try (2 s).
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);
/// client-go jitters each retry period by up to this factor (`JitterFactor = 1.2`).
pub const JITTER_FACTOR: f64 = 1.2;

/// Timings and identity of a candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// This candidate's identity (unique: host name plus a random suffix, usually).
    pub identity: String,
    /// Lease validity ([`DEFAULT_LEASE_DURATION`]).
    pub lease_duration: Duration,
    /// Renewal deadline ([`DEFAULT_RENEW_DEADLINE`]); less than the lease duration.
    pub renew_deadline: Duration,
    /// Retry period ([`DEFAULT_RETRY_PERIOD`]).
    pub retry_period: Duration,
    /// Release the lease when stopping while leading.
    pub release_on_cancel: bool,
}

impl LeaderElectionConfig {
    /// client-go's timings for `identity`, releasing on cancel.
    pub fn new(identity: &str) -> Self {
        LeaderElectionConfig {
            identity: identity.to_owned(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: true,
        }
    }

    /// Sets the three timings.
    #[must_use]
    pub fn timings(mut self, lease: Duration, renew: Duration, retry: Duration) -> Self {
        self.lease_duration = lease;
        self.renew_deadline = renew;
        self.retry_period = retry;
        self
    }
}

/// What the elector reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaderEvent {
    /// This candidate leads now.
    StartedLeading,
    /// This candidate stopped leading (lost the lease, or was cancelled).
    StoppedLeading,
    /// The lease is held by someone (possibly this candidate) new.
    NewLeader(String),
}

/// A candidate for the lease `name` in the namespace of `api`.
pub struct LeaderElector {
    api: Api<Lease>,
    name: String,
    config: LeaderElectionConfig,
    /// The last lease read or written (its resourceVersion for the next conditional PUT).
    lease: Option<Lease>,
    /// The holder/renew record last observed, and when it was observed (local clock).
    observed: Option<(String, Option<MicroTime>, i32)>,
    observed_at: Instant,
    /// The last holder reported through `NewLeader`.
    reported_leader: Option<String>,
    /// Where the lease's `acquireTime` and `renewTime` come from (the process's virtual clock
    /// in tests), as client-go's elector writes them from its `clock`. Expiry is still judged
    /// by local observation in real time (`observed_at`): a jump of a virtual clock must not
    /// depose a leader that keeps renewing.
    clock: Clock,
}

impl LeaderElector {
    /// A candidate for the lease `name` (in the namespace of `api`).
    pub fn new(api: Api<Lease>, name: &str, config: LeaderElectionConfig) -> Self {
        LeaderElector {
            api,
            name: name.to_owned(),
            config,
            lease: None,
            observed: None,
            observed_at: Instant::now(),
            reported_leader: None,
            clock: Clock::system(),
        }
    }

    /// Stamps the lease's times from `clock` (the system clock by default).
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    fn jittered(&self) -> Duration {
        self.config
            .retry_period
            .mul_f64(1.0 + fastrand::f64() * JITTER_FACTOR)
    }

    /// Campaigns until this candidate leads, runs `lead` with a token cancelled when
    /// leadership ends, and returns when it ends (lease lost or `token` cancelled; the lease
    /// is then released if configured). `on_event` hears every transition.
    pub async fn run<F, Fut>(
        mut self,
        token: CancellationToken,
        lead: F,
        mut on_event: impl FnMut(LeaderEvent) + Send,
    ) where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        // Campaign.
        loop {
            if token.is_cancelled() {
                return;
            }
            let acquired = self.try_acquire_or_renew().await;
            self.report_leader(&mut on_event);
            match acquired {
                Ok(true) => break,
                Ok(false) => {}
                Err(err) => {
                    tracing::debug!(lease = %self.name, error = %err, "acquiring the lease failed")
                }
            }
            tokio::select! {
                _ = token.cancelled() => return,
                _ = tokio::time::sleep(self.jittered()) => {}
            }
        }
        tracing::info!(lease = %self.name, identity = %self.config.identity, "became leader");
        on_event(LeaderEvent::StartedLeading);
        let leading = token.child_token();
        let lead_task = tokio::spawn(lead(leading.clone()));

        // Renew.
        let mut last_renew = Instant::now();
        loop {
            tokio::select! {
                _ = token.cancelled() => break,
                _ = tokio::time::sleep(self.config.retry_period) => {}
            }
            let renewed = tokio::time::timeout(
                self.config
                    .renew_deadline
                    .saturating_sub(last_renew.elapsed()),
                self.try_acquire_or_renew(),
            )
            .await;
            match renewed {
                Ok(Ok(true)) => last_renew = Instant::now(),
                Ok(Ok(false)) => {
                    tracing::info!(lease = %self.name, "lost the lease to another candidate");
                    self.report_leader(&mut on_event);
                    break;
                }
                Ok(Err(err)) => {
                    tracing::warn!(lease = %self.name, error = %err, "renewing the lease failed");
                    if last_renew.elapsed() >= self.config.renew_deadline {
                        break;
                    }
                }
                Err(_) => {
                    tracing::warn!(lease = %self.name, "renew deadline passed");
                    break;
                }
            }
        }
        leading.cancel();
        // The leading work ends before the lease is released: no overlap with a successor.
        if let Err(err) = lead_task.await {
            tracing::warn!(lease = %self.name, error = %err, "leader task failed");
        }
        if token.is_cancelled() && self.config.release_on_cancel {
            if let Err(err) = self.release().await {
                tracing::warn!(lease = %self.name, error = %err, "releasing the lease failed");
            }
        }
        on_event(LeaderEvent::StoppedLeading);
    }

    fn report_leader(&mut self, on_event: &mut impl FnMut(LeaderEvent)) {
        let holder = self
            .observed
            .as_ref()
            .map(|o| o.0.clone())
            .filter(|h| !h.is_empty());
        if holder.is_some() && holder != self.reported_leader {
            self.reported_leader = holder.clone();
            if let Some(holder) = holder {
                on_event(LeaderEvent::NewLeader(holder));
            }
        }
    }

    fn spec(&self, old: Option<&LeaseSpec>) -> LeaseSpec {
        let now = MicroTime(self.clock.now());
        let held_by_us =
            old.and_then(|s| s.holder_identity.as_deref()) == Some(&self.config.identity);
        let transitions = old.and_then(|s| s.lease_transitions).unwrap_or(0);
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(
                i32::try_from(self.config.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX),
            ),
            acquire_time: if held_by_us {
                old.and_then(|s| s.acquire_time.clone())
            } else {
                Some(now.clone())
            },
            renew_time: Some(now),
            lease_transitions: Some(if held_by_us || old.is_none() {
                transitions
            } else {
                transitions + 1
            }),
            ..LeaseSpec::default()
        }
    }

    fn observe(&mut self, lease: &Lease) {
        let spec = lease.spec.clone().unwrap_or_default();
        let record = (
            spec.holder_identity.unwrap_or_default(),
            spec.renew_time,
            spec.lease_transitions.unwrap_or(0),
        );
        if self.observed.as_ref() != Some(&record) {
            self.observed = Some(record);
            self.observed_at = Instant::now();
        }
    }

    /// One attempt: `Ok(true)` when this candidate holds the lease afterwards.
    async fn try_acquire_or_renew(&mut self) -> Result<bool> {
        // Fast path: the leader renews with the resourceVersion it last wrote.
        if let Some(lease) = self.lease.clone().filter(|l| self.holds(l)) {
            let mut renewed = lease.clone();
            renewed.spec = Some(self.spec(lease.spec.as_ref()));
            match self
                .api
                .replace(&self.name, &PostParams::default(), &renewed)
                .await
            {
                Ok(written) => {
                    self.observe(&written);
                    self.lease = Some(written);
                    return Ok(true);
                }
                Err(err) => {
                    tracing::debug!(lease = %self.name, error = %err, "fast renewal failed; reading the lease");
                    self.lease = None;
                }
            }
        }
        let current = match self.api.get_opt(&self.name).await? {
            Some(lease) => lease,
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(self.spec(None)),
                };
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(created) => {
                        self.observe(&created);
                        self.lease = Some(created);
                        Ok(true)
                    }
                    Err(err) if err.is_already_exists() || err.is_conflict() => Ok(false),
                    Err(err) => Err(err),
                };
            }
        };
        self.observe(&current);
        let holder = current
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.clone())
            .unwrap_or_default();
        let valid = self.observed_at.elapsed() < self.lease_duration_of(&current);
        if !holder.is_empty() && holder != self.config.identity && valid {
            self.lease = Some(current);
            return Ok(false);
        }
        let mut next = current.clone();
        next.spec = Some(self.spec(current.spec.as_ref()));
        match self
            .api
            .replace(&self.name, &PostParams::default(), &next)
            .await
        {
            Ok(written) => {
                self.observe(&written);
                self.lease = Some(written);
                Ok(true)
            }
            Err(err) if err.is_conflict() => Ok(false),
            Err(err) => Err(err),
        }
    }

    fn holds(&self, lease: &Lease) -> bool {
        lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref())
            == Some(&self.config.identity)
    }

    fn lease_duration_of(&self, lease: &Lease) -> Duration {
        lease
            .spec
            .as_ref()
            .and_then(|s| s.lease_duration_seconds)
            .and_then(|s| u64::try_from(s).ok())
            .map_or(self.config.lease_duration, Duration::from_secs)
    }

    /// Gives the lease up: empty holder, one-second duration (client-go's release).
    async fn release(&mut self) -> Result<()> {
        let Some(lease) = self.lease.clone().filter(|l| self.holds(l)) else {
            return Ok(());
        };
        let now = MicroTime(self.clock.now());
        let mut released = lease.clone();
        released.spec = Some(LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: lease.spec.as_ref().and_then(|s| s.lease_transitions),
            ..LeaseSpec::default()
        });
        self.api
            .replace(&self.name, &PostParams::default(), &released)
            .await
            .map(|_| ())
            .or_else(|err: Error| if err.is_conflict() { Ok(()) } else { Err(err) })
    }
}
