//! Backoff for deleting failed daemon pods (upstream `failedPodsBackoff`, a
//! `flowcontrol.Backoff` of 1 s doubling to 15 min): a node whose kubelet keeps failing the
//! pod must not make the controller delete and recreate it in a hot loop.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// The first delay after a failed pod was deleted.
pub(super) const INITIAL: Duration = Duration::from_secs(1);
/// The longest delay.
pub(super) const MAX: Duration = Duration::from_secs(15 * 60);

#[derive(Debug)]
struct Entry {
    delay: Duration,
    last: Instant,
}

/// Delays per key (`<ds uid>/<observed generation>/<node>`). Guarded by a short sync lock,
/// never held across an await; written by the sync workers.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    entries: Mutex<HashMap<String, Entry>>,
}

impl Backoff {
    /// How long `key` must still wait, if it is backing off.
    pub(crate) fn remaining(&self, key: &str) -> Option<Duration> {
        let entries = self.entries.lock();
        let entry = entries.get(key)?;
        let elapsed = entry.last.elapsed();
        (elapsed < entry.delay).then(|| entry.delay - elapsed)
    }

    /// Records an attempt for `key` now: the delay doubles (up to [`MAX`]), or starts at
    /// [`INITIAL`] when there was none or it lapsed long ago.
    pub(crate) fn next(&self, key: &str) {
        let mut entries = self.entries.lock();
        let now = Instant::now();
        match entries.get_mut(key) {
            Some(entry) if now.duration_since(entry.last) <= 2 * MAX => {
                entry.delay = (entry.delay * 2).min(MAX);
                entry.last = now;
            }
            _ => {
                entries.insert(
                    key.to_owned(),
                    Entry {
                        delay: INITIAL,
                        last: now,
                    },
                );
            }
        }
    }

    /// Forgets the entries that lapsed long ago (upstream `GC`).
    pub(crate) fn collect_garbage(&self) {
        self.entries
            .lock()
            .retain(|_, e| e.last.elapsed() <= 2 * MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn failed_pod_deletions_back_off_exponentially() {
        let backoff = Backoff::default();
        assert_eq!(backoff.remaining("k"), None);
        backoff.next("k");
        assert_eq!(backoff.remaining("k"), Some(INITIAL));
        tokio::time::advance(INITIAL).await;
        assert_eq!(
            backoff.remaining("k"),
            None,
            "one second later it may go again"
        );
        backoff.next("k");
        assert_eq!(backoff.remaining("k"), Some(2 * INITIAL));
        tokio::time::advance(2 * MAX + Duration::from_secs(1)).await;
        backoff.next("k");
        assert_eq!(
            backoff.remaining("k"),
            Some(INITIAL),
            "a lapsed backoff restarts"
        );
        tokio::time::advance(2 * MAX + Duration::from_secs(1)).await;
        backoff.collect_garbage();
        assert!(backoff.entries.lock().is_empty());
    }
}
