//! The one clock of a kubemock process: where the API server's timestamps
//! (`creationTimestamp`, `deletionTimestamp`, managed fields' times) and the controllers'
//! times (CronJob schedules, Job deadlines and TTLs, progress deadlines, `minReadySeconds`)
//! come from. It is the system clock, or a [`FakeClock`] that stands still until a test sets
//! or advances it (`kubemock serve --virtual-clock`, the `testing.kubemock.dev/v1` `Clock`
//! named `cluster`), as upstream's `k8s.io/utils/clock/testing.FakeClock` is for its unit
//! tests. Moving a fake clock notifies its subscribers, so whatever waits for a time wakes at
//! once ([`Clock::sleep_until`]) instead of after that much real time.
//!
//! It lives here, in the crate every side shares, so that the server and the controllers of
//! one process read one clock.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use tokio::sync::watch;

/// The time source of a process: the system clock, or a [`FakeClock`].
///
/// Cheap to clone; clones of a fake clock share its time.
#[derive(Clone, Default)]
pub struct Clock {
    /// `None`: the system clock.
    fake: Option<FakeClock>,
}

/// A move asked of a clock that cannot move (the system clock).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the clock is the system clock and cannot be moved (start kubemock with --virtual-clock)")]
pub struct NotVirtual;

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Clock::default()
    }

    /// A virtual clock standing at `start` (a new [`FakeClock`]).
    pub fn virtual_at(start: Timestamp) -> Self {
        Clock::from(FakeClock::new(start))
    }

    /// The current time.
    pub fn now(&self) -> Timestamp {
        match &self.fake {
            Some(fake) => fake.now(),
            None => system_now(),
        }
    }

    /// The current time in whole seconds since the Unix epoch (what `metav1.Time` keeps).
    pub fn unix_seconds(&self) -> i64 {
        self.now().as_second()
    }

    /// The current time in nanoseconds since the Unix epoch (as [`crate::time::parse_rfc3339`]
    /// returns times).
    pub fn unix_nanos(&self) -> i128 {
        self.now().as_nanosecond()
    }

    /// The current time as RFC 3339 UTC with seconds precision (`metav1.Time`).
    pub fn rfc3339(&self) -> String {
        crate::time::rfc3339(self.unix_seconds())
    }

    /// Whether this is a virtual clock (one that [`Clock::set`] and [`Clock::advance`] move).
    pub fn is_virtual(&self) -> bool {
        self.fake.is_some()
    }

    /// The fake clock behind a virtual clock.
    pub fn fake(&self) -> Option<&FakeClock> {
        self.fake.as_ref()
    }

    /// Sets a virtual clock's time (backwards too, as upstream's fake clock allows).
    pub fn set(&self, time: Timestamp) -> Result<(), NotVirtual> {
        self.fake.as_ref().ok_or(NotVirtual)?.set(time);
        Ok(())
    }

    /// Moves a virtual clock forward by `by`.
    pub fn advance(&self, by: Duration) -> Result<(), NotVirtual> {
        self.fake.as_ref().ok_or(NotVirtual)?.advance(by);
        Ok(())
    }

    /// A receiver that sees every move of a fake clock; `None` for the system clock, which
    /// never jumps (whoever waits for a time sleeps until it instead).
    pub fn subscribe(&self) -> Option<watch::Receiver<Timestamp>> {
        self.fake.as_ref().map(|fake| fake.time.subscribe())
    }

    /// Returns once the clock shows `deadline` or later: after that much real time on the
    /// system clock, as soon as a move of a fake clock passes it (never, if nobody moves it).
    pub async fn sleep_until(&self, deadline: Timestamp) {
        match &self.fake {
            None => {
                let left = crate::time::until(system_now(), deadline);
                if !left.is_zero() {
                    tokio::time::sleep(left).await;
                }
            }
            Some(fake) => {
                let mut moves = fake.time.subscribe();
                // The sender lives as long as `fake`: `wait_for` ends only when the time has come.
                let _ = moves.wait_for(|now| *now >= deadline).await;
            }
        }
    }

    /// Returns once `by` has passed on this clock ([`Clock::sleep_until`] now + `by`, "now"
    /// being when the future is first polled).
    pub async fn sleep(&self, by: Duration) {
        let now = self.now();
        self.sleep_until(crate::time::shift_std(now, by)).await;
    }
}

/// The system's wall-clock time.
fn system_now() -> Timestamp {
    Timestamp::now()
}

impl From<FakeClock> for Clock {
    fn from(fake: FakeClock) -> Self {
        Clock { fake: Some(fake) }
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.fake {
            Some(fake) => f.debug_tuple("Clock::Fake").field(&fake.now()).finish(),
            None => f.write_str("Clock::System"),
        }
    }
}

impl PartialEq for Clock {
    /// Two system clocks, or clones of one fake clock.
    fn eq(&self, other: &Self) -> bool {
        match (&self.fake, &other.fake) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(&a.time, &b.time),
            _ => false,
        }
    }
}

impl Eq for Clock {}

/// A clock that stands still until told to move. Cheap to clone; clones share the time.
///
/// ```
/// use kubemock_apimachinery::clock::{Clock, FakeClock};
/// use jiff::Timestamp;
///
/// let start: Timestamp = "2030-01-01T00:00:00Z".parse().unwrap();
/// let fake = FakeClock::new(start);
/// let clock = Clock::from(fake.clone());
/// fake.advance(std::time::Duration::from_secs(300));
/// assert_eq!(clock.now().to_string(), "2030-01-01T00:05:00Z");
/// ```
#[derive(Clone)]
pub struct FakeClock {
    /// The current time; written by [`FakeClock::set`] and [`FakeClock::advance`] (any
    /// clone), read by everyone. The watch channel holds one value, so it is bounded, and
    /// its receivers learn of each move.
    time: Arc<watch::Sender<Timestamp>>,
}

impl FakeClock {
    /// A clock standing at `start`.
    pub fn new(start: Timestamp) -> Self {
        FakeClock {
            time: Arc::new(watch::Sender::new(start)),
        }
    }

    /// The time it shows.
    pub fn now(&self) -> Timestamp {
        *self.time.borrow()
    }

    /// Sets the time (backwards too) and notifies the subscribers.
    pub fn set(&self, time: Timestamp) {
        self.time.send_replace(time);
    }

    /// Moves the time forward by `by` and notifies the subscribers.
    pub fn advance(&self, by: Duration) {
        self.time.send_modify(|time| {
            *time = crate::time::shift_std(*time, by);
        });
    }
}

impl fmt::Debug for FakeClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FakeClock").field(&self.now()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_year_2030() -> Timestamp {
        Timestamp::from_second(1_893_456_000).expect("in range")
    }

    #[tokio::test]
    async fn a_fake_clock_moves_only_when_told_and_notifies_its_subscribers() {
        let start = new_year_2030();
        let fake = FakeClock::new(start);
        let clock = Clock::from(fake.clone());
        let mut moves = clock.subscribe().expect("a fake clock has subscribers");
        assert_eq!(clock.now(), start);
        fake.advance(Duration::from_secs(90));
        moves.changed().await.expect("notified");
        assert_eq!(*moves.borrow_and_update(), start + Duration::from_secs(90));
        assert_eq!(clock.now(), start + Duration::from_secs(90));
        fake.set(start);
        moves.changed().await.expect("notified");
        assert_eq!(clock.now(), start);
        assert_eq!(clock.rfc3339(), "2030-01-01T00:00:00Z");
    }

    #[test]
    fn the_system_clock_refuses_to_move() {
        let clock = Clock::system();
        assert!(!clock.is_virtual());
        assert_eq!(clock.advance(Duration::from_secs(1)), Err(NotVirtual));
        assert_eq!(clock.set(clock.now()), Err(NotVirtual));
        assert!(clock.subscribe().is_none());
    }

    #[tokio::test]
    async fn a_sleep_on_a_fake_clock_ends_when_a_move_passes_its_deadline_and_not_before() {
        let start = new_year_2030();
        let clock = Clock::virtual_at(start);
        let sleeper = tokio::spawn({
            let clock = clock.clone();
            async move { clock.sleep_until(start + Duration::from_secs(3600)).await }
        });
        clock.advance(Duration::from_secs(3599)).expect("virtual");
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished(), "woke a second early");
        clock.advance(Duration::from_secs(1)).expect("virtual");
        tokio::time::timeout(Duration::from_secs(10), sleeper)
            .await
            .expect("woke once the hour passed")
            .expect("no panic");
    }

    #[test]
    fn clocks_are_equal_when_both_are_the_system_clock_or_share_one_fake() {
        let fake = FakeClock::new(new_year_2030());
        assert_eq!(Clock::system(), Clock::default());
        assert_eq!(Clock::from(fake.clone()), Clock::from(fake.clone()));
        assert_ne!(Clock::from(fake), Clock::system());
        let other = FakeClock::new(new_year_2030());
        assert_ne!(
            Clock::from(other.clone()),
            Clock::from(FakeClock::new(other.now()))
        );
    }
}
