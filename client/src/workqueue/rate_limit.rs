//! How long a failed item waits before it is retried: per-item exponential backoff, an
//! overall token bucket, and the maximum of several (client-go's
//! `util/workqueue/default_rate_limiters.go`). Clocks are tokio's, so tests run on paused time.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// First retry delay of the default per-item limiter (client-go: 5 ms).
pub const DEFAULT_ITEM_BASE_DELAY: Duration = Duration::from_millis(5);
/// Longest retry delay of the default per-item limiter (client-go: 1000 s).
pub const DEFAULT_ITEM_MAX_DELAY: Duration = Duration::from_secs(1000);
/// Retries per second of the default overall limiter (client-go: 10).
pub const DEFAULT_BUCKET_QPS: f64 = 10.0;
/// Burst of the default overall limiter (client-go: 100).
pub const DEFAULT_BUCKET_BURST: u32 = 100;

/// Decides when a failed item may be retried.
pub trait RateLimiter<T>: Send + Sync + 'static {
    /// The delay before the next retry of `item` (and records the failure).
    fn when(&self, item: &T) -> Duration;
    /// Forgets `item`'s failures (it succeeded).
    fn forget(&self, item: &T);
    /// How many times `item` has failed since it was last forgotten.
    fn num_requeues(&self, item: &T) -> u32;
}

/// Per-item exponential backoff: `base * 2^failures`, capped at `max`.
pub struct ItemExponentialFailure<T> {
    base: Duration,
    max: Duration,
    /// Failures per item since it was last forgotten.
    failures: Mutex<HashMap<T, u32>>,
}

impl<T> ItemExponentialFailure<T> {
    /// A limiter from `base` to `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        ItemExponentialFailure {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Eq + Hash + Clone + Send + Sync + 'static> RateLimiter<T> for ItemExponentialFailure<T> {
    fn when(&self, item: &T) -> Duration {
        let mut failures = self.failures.lock();
        let count = failures.entry(item.clone()).or_insert(0);
        let exp = *count;
        *count = count.saturating_add(1);
        let factor = 2f64.powi(i32::try_from(exp.min(62)).unwrap_or(62));
        let delay = self.base.as_secs_f64() * factor;
        if delay >= self.max.as_secs_f64() {
            self.max
        } else {
            Duration::from_secs_f64(delay)
        }
    }

    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

/// An overall token bucket: `qps` retries per second with bursts of `burst`, whatever the
/// item. Each `when` reserves a token; without one available, the delay is the time until
/// it will be (the reservation semantics of Go's `rate.Limiter`).
pub struct Bucket {
    qps: f64,
    burst: f64,
    /// Tokens available (negative: reserved ahead) as of the instant.
    state: Mutex<(f64, Instant)>,
}

impl Bucket {
    /// A full bucket.
    pub fn new(qps: f64, burst: u32) -> Self {
        Bucket {
            qps: qps.max(f64::MIN_POSITIVE),
            burst: f64::from(burst),
            state: Mutex::new((f64::from(burst), Instant::now())),
        }
    }
}

impl<T> RateLimiter<T> for Bucket {
    fn when(&self, _item: &T) -> Duration {
        let mut state = self.state.lock();
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(state.1).as_secs_f64();
        let tokens = (state.0 + elapsed * self.qps).min(self.burst) - 1.0;
        *state = (tokens, now);
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-tokens / self.qps)
        }
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// The longest delay of several limiters (each one records the failure).
pub struct MaxOf<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOf<T> {
    /// The maximum of `limiters`.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        MaxOf { limiters }
    }
}

impl<T: 'static> RateLimiter<T> for MaxOf<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    fn forget(&self, item: &T) {
        for limiter in &self.limiters {
            limiter.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// client-go's `DefaultControllerRateLimiter`: the maximum of per-item exponential backoff
/// (5 ms … 1000 s) and an overall bucket (10 per second, burst 100).
pub fn default_rate_limiter<T: Eq + Hash + Clone + Send + Sync + 'static>() -> MaxOf<T> {
    MaxOf::new(vec![
        Box::new(ItemExponentialFailure::new(
            DEFAULT_ITEM_BASE_DELAY,
            DEFAULT_ITEM_MAX_DELAY,
        )),
        Box::new(Bucket::new(DEFAULT_BUCKET_QPS, DEFAULT_BUCKET_BURST)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_backoff_doubles_per_failure_up_to_the_cap_and_forgets() {
        let limiter =
            ItemExponentialFailure::new(Duration::from_millis(5), Duration::from_secs(1000));
        let delays: Vec<Duration> = (0..5).map(|_| limiter.when(&"a")).collect();
        let ms: Vec<u128> = delays.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, vec![5, 10, 20, 40, 80]);
        assert_eq!(limiter.num_requeues(&"a"), 5);
        assert_eq!(limiter.when(&"b"), Duration::from_millis(5), "per item");
        for _ in 0..30 {
            limiter.when(&"a");
        }
        assert_eq!(limiter.when(&"a"), Duration::from_secs(1000));
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
    }

    #[tokio::test(start_paused = true)]
    async fn the_bucket_allows_a_burst_then_spaces_retries_at_its_rate() {
        let bucket = Bucket::new(10.0, 100);
        for _ in 0..100 {
            assert_eq!(RateLimiter::<&str>::when(&bucket, &"x"), Duration::ZERO);
        }
        let next = RateLimiter::<&str>::when(&bucket, &"x");
        assert_eq!(next.as_millis(), 100);
        let after = RateLimiter::<&str>::when(&bucket, &"x");
        assert_eq!(after.as_millis(), 200, "reservations queue up");
        tokio::time::advance(Duration::from_secs(1)).await;
        // A second refills 10 tokens: the 2 reserved ones are paid, 8 are free again.
        let again = RateLimiter::<&str>::when(&bucket, &"x");
        assert_eq!(again, Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn the_default_limiter_takes_the_longer_of_both() {
        let limiter = default_rate_limiter::<String>();
        assert_eq!(limiter.when(&"a".to_owned()), Duration::from_millis(5));
        assert_eq!(limiter.when(&"a".to_owned()), Duration::from_millis(10));
        // Exhaust the bucket with other items: then the bucket's delay dominates.
        for i in 0..98 {
            limiter.when(&format!("other{i}"));
        }
        let delay = limiter.when(&"fresh".to_owned());
        assert_eq!(delay.as_millis(), 100);
        assert_eq!(limiter.num_requeues(&"a".to_owned()), 2);
    }
}
