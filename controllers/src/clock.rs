//! Where controllers that act at wall-clock times (the CronJob controller) read "now". A
//! test cannot wait five real minutes for `*/5 * * * *`, so the time comes from a [`Clock`]:
//! the system clock by default, or a [`FakeClock`] that the test sets and advances. Moving a
//! fake clock notifies its subscribers, so a controller reacts at once (it queues its objects
//! again) instead of sleeping until a schedule time that will never come in real time.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::chrono::{DateTime, Utc};
use tokio::sync::watch;

/// The time source of the controllers: the system clock, or a [`FakeClock`].
///
/// Cheap to clone; clones of a fake clock share its time.
#[derive(Clone, Default)]
pub struct Clock {
    /// `None`: the system clock.
    fake: Option<FakeClock>,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Clock::default()
    }

    /// The current time.
    pub fn now(&self) -> DateTime<Utc> {
        match &self.fake {
            Some(fake) => fake.now(),
            None => kubemock_client::resource::now(),
        }
    }

    /// A receiver that sees every move of a fake clock; `None` for the system clock, which
    /// never jumps (controllers requeue at the times they need instead).
    pub fn subscribe(&self) -> Option<watch::Receiver<DateTime<Utc>>> {
        self.fake.as_ref().map(|fake| fake.time.subscribe())
    }
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
/// use kubemock_controllers::clock::{Clock, FakeClock};
/// use k8s_openapi::chrono::{TimeZone, Utc};
///
/// let fake = FakeClock::new(Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap());
/// let clock = Clock::from(fake.clone());
/// fake.advance(std::time::Duration::from_secs(300));
/// assert_eq!(clock.now(), Utc.with_ymd_and_hms(2030, 1, 1, 0, 5, 0).unwrap());
/// ```
#[derive(Clone)]
pub struct FakeClock {
    /// The current time; written by [`FakeClock::set`] and [`FakeClock::advance`] (any
    /// clone), read by everyone. The watch channel holds one value, so it is bounded, and
    /// its receivers learn of each move.
    time: Arc<watch::Sender<DateTime<Utc>>>,
}

impl FakeClock {
    /// A clock standing at `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        FakeClock {
            time: Arc::new(watch::Sender::new(start)),
        }
    }

    /// The time it shows.
    pub fn now(&self) -> DateTime<Utc> {
        *self.time.borrow()
    }

    /// Sets the time (backwards too) and notifies the subscribers.
    pub fn set(&self, time: DateTime<Utc>) {
        self.time.send_replace(time);
    }

    /// Moves the time forward by `by` and notifies the subscribers.
    pub fn advance(&self, by: Duration) {
        let by = k8s_openapi::chrono::Duration::from_std(by)
            .unwrap_or(k8s_openapi::chrono::Duration::MAX);
        self.time.send_modify(|time| {
            *time = time.checked_add_signed(by).unwrap_or(*time);
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
    use k8s_openapi::chrono::TimeZone;

    use super::*;

    #[tokio::test]
    async fn a_fake_clock_moves_only_when_told_and_notifies_its_subscribers() {
        let start = Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap();
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
    }

    #[test]
    fn clocks_are_equal_when_both_are_the_system_clock_or_share_one_fake() {
        let fake = FakeClock::new(Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap());
        assert_eq!(Clock::system(), Clock::default());
        assert_eq!(Clock::from(fake.clone()), Clock::from(fake.clone()));
        assert_ne!(Clock::from(fake), Clock::system());
        let other = FakeClock::new(Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap());
        assert_ne!(
            Clock::from(other.clone()),
            Clock::from(FakeClock::new(other.now()))
        );
    }
}
