//! The work queue controllers feed keys into, with client-go's guarantees
//! (`util/workqueue/doc.go`):
//! - fair: items are handed out in the order they were added;
//! - stingy: an item added several times before it is processed is processed once, and never
//!   by two workers at once; an item added while it is being processed is processed again
//!   after [`WorkQueue::done`];
//! - delayed adds ([`WorkQueue::add_after`]; the earliest due time of an item wins) and
//!   rate-limited adds ([`WorkQueue::add_rate_limited`], [`WorkQueue::forget`]);
//! - shutdown: no new adds; queued items are still handed out, then `get` returns `None`;
//!   [`WorkQueue::shutdown_with_drain`] also waits for items in flight.
//!
//! Invariants of the three collections (under one lock): an item is in `queue` iff it is in
//! `dirty` and not in `processing`... except right after `done` moves it back; precisely:
//! `queue ⊆ dirty`, `queue ∩ processing = ∅`, and an item in `dirty ∩ processing` is queued
//! again by `done`.
//!
//! No background task: delayed items are promoted by whichever `get` finds them due. Of the
//! idle getters, one at a time watches the timer (sleeps until the earliest due time); the
//! others wait to be handed an item. So a due item wakes one getter, and a delayed add wakes
//! the watcher only when it is the new earliest, as client-go's delaying queue wakes its one
//! `waitingLoop` goroutine (`util/workqueue/delaying_queue.go`). Every idle getter sleeping
//! until the earliest due time, and every delayed add waking them all, cost a controller with
//! a thousand workers (one per simulated node) some 100,000 wake-ups a second.

pub mod rate_limit;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use parking_lot::Mutex;
use std::sync::Arc;
use tokio::sync::Notify;
use tokio::time::Instant;

pub use rate_limit::{Bucket, ItemExponentialFailure, MaxOf, RateLimiter, default_rate_limiter};

/// What a work queue can hold (keys, usually [`crate::ObjectKey`]).
pub trait QueueItem: Clone + Eq + Hash + Send + Sync + 'static {}
impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueItem for T {}

/// A snapshot of a queue's metrics (client-go's workqueue metrics).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    /// Items waiting to be handed out.
    pub depth: usize,
    /// Items waiting for their delay to pass.
    pub waiting: usize,
    /// Items being processed.
    pub in_flight: usize,
    /// Adds that queued an item (duplicates not counted).
    pub adds: u64,
    /// Rate-limited re-adds.
    pub retries: u64,
    /// Items handed out, and their total time in the queue.
    pub queue_latency_count: u64,
    /// Total time items spent queued before being handed out.
    pub queue_latency_total: Duration,
    /// Items finished, and their total processing time.
    pub work_duration_count: u64,
    /// Total processing time of finished items.
    pub work_duration_total: Duration,
    /// How long the oldest item in flight has been processed.
    pub longest_running: Duration,
    /// Total time the items in flight have been processed so far.
    pub unfinished_work: Duration,
}

struct State<T> {
    /// Items to hand out, in order.
    queue: VecDeque<T>,
    /// Items that need processing (queued, or re-added while in flight).
    dirty: HashSet<T>,
    /// Items handed out and not done yet, with when they were handed out.
    processing: HashMap<T, Instant>,
    /// When each queued item was queued (for the queue latency).
    queued_at: HashMap<T, Instant>,
    /// Delayed items by (due time, sequence); each item at most once, at its earliest due time.
    waiting: BTreeMap<(Instant, u64), T>,
    /// Each delayed item's entry in `waiting`.
    waiting_index: HashMap<T, (Instant, u64)>,
    /// Sequence of the next delayed entry (ties keep insertion order).
    next_seq: u64,
    /// An idle getter sleeps until the earliest due time (there is at most one).
    timer_watched: bool,
    shutting_down: bool,
    metrics: Metrics,
}

impl<T: QueueItem> State<T> {
    fn add(&mut self, item: T) -> bool {
        if self.shutting_down || self.dirty.contains(&item) {
            return false;
        }
        self.metrics.adds += 1;
        self.dirty.insert(item.clone());
        if self.processing.contains_key(&item) {
            return false;
        }
        self.queued_at.insert(item.clone(), Instant::now());
        self.queue.push_back(item);
        true
    }

    /// Moves due delayed items into the queue; how many were queued.
    fn promote_due(&mut self, now: Instant) -> usize {
        let mut queued = 0;
        while let Some(entry) = self.waiting.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let item = entry.remove();
            self.waiting_index.remove(&item);
            queued += usize::from(self.add(item));
        }
        queued
    }
}

struct Inner<T> {
    state: Mutex<State<T>>,
    /// Wakes a waiting `get` (one per add, or to watch the timer; all on shutdown).
    ready: Notify,
    /// Wakes the getter watching the timer: an earlier due time came.
    timer: Notify,
    /// Wakes `shutdown_with_drain` when the last item in flight is done.
    drained: Notify,
    limiter: Box<dyn RateLimiter<T>>,
}

/// A getter's watch of the timer: ended when it wakes; if its `get` is dropped while it
/// watches, another idle getter takes the watch over.
struct TimerWatch<'a, T> {
    inner: &'a Inner<T>,
    ended: bool,
}

impl<T> TimerWatch<'_, T> {
    fn end(mut self) {
        self.ended = true;
        self.inner.state.lock().timer_watched = false;
    }
}

impl<T> Drop for TimerWatch<'_, T> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let waiting = {
            let mut state = self.inner.state.lock();
            state.timer_watched = false;
            !state.waiting.is_empty()
        };
        if waiting {
            self.inner.ready.notify_one();
        }
    }
}

/// A deduplicating, delaying, rate-limited work queue. Cheap to clone.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let queue = kubemock_client::WorkQueue::new();
/// queue.add("a");
/// queue.add("a"); // deduplicated
/// let item = queue.get().await.unwrap();
/// assert_eq!(item, "a");
/// queue.done(&item);
/// assert_eq!(queue.len(), 0);
/// # }
/// ```
pub struct WorkQueue<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        WorkQueue {
            inner: self.inner.clone(),
        }
    }
}

impl<T: QueueItem> Default for WorkQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: QueueItem> WorkQueue<T> {
    /// A queue with the default rate limiter ([`default_rate_limiter`]).
    pub fn new() -> Self {
        Self::with_rate_limiter(default_rate_limiter())
    }

    /// A queue with the given rate limiter.
    pub fn with_rate_limiter(limiter: impl RateLimiter<T>) -> Self {
        WorkQueue {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    dirty: HashSet::new(),
                    processing: HashMap::new(),
                    queued_at: HashMap::new(),
                    waiting: BTreeMap::new(),
                    waiting_index: HashMap::new(),
                    next_seq: 0,
                    timer_watched: false,
                    shutting_down: false,
                    metrics: Metrics::default(),
                }),
                ready: Notify::new(),
                timer: Notify::new(),
                drained: Notify::new(),
                limiter: Box::new(limiter),
            }),
        }
    }

    /// Queues `item` unless it is already queued (or the queue is shutting down).
    pub fn add(&self, item: T) {
        let queued = self.inner.state.lock().add(item);
        if queued {
            self.inner.ready.notify_one();
        }
    }

    /// Queues `item` after `delay`; if it is already waiting, the earlier due time wins.
    pub fn add_after(&self, item: T, delay: Duration) {
        if delay.is_zero() {
            return self.add(item);
        }
        let due = Instant::now() + delay;
        let watched = {
            let mut state = self.inner.state.lock();
            if state.shutting_down {
                return;
            }
            if let Some(&existing) = state.waiting_index.get(&item) {
                if existing.0 <= due {
                    return;
                }
                state.waiting.remove(&existing);
            }
            let seq = state.next_seq;
            state.next_seq += 1;
            let earliest = state
                .waiting
                .first_key_value()
                .is_none_or(|(first, _)| (due, seq) < *first);
            state.waiting.insert((due, seq), item.clone());
            state.waiting_index.insert(item, (due, seq));
            state.timer_watched.then_some(earliest)
        };
        match watched {
            // The watcher sleeps until a later time: it wakes to sleep until this one.
            Some(true) => self.inner.timer.notify_one(),
            Some(false) => {}
            // Nobody watches the timer: an idle getter (if any) starts to.
            None => self.inner.ready.notify_one(),
        }
    }

    /// Queues `item` to be handed out once `window` has passed, unless it is queued already
    /// and not yet handed out: adds during the window join it. For sources whose changes
    /// come in bursts and each cost a whole reconcile (the pods of one ReplicaSet).
    pub fn add_batched(&self, item: T, window: Duration) {
        {
            let state = self.inner.state.lock();
            if state.dirty.contains(&item) && !state.processing.contains_key(&item) {
                return;
            }
        }
        self.add_after(item, window);
    }

    /// Queues `item` after the rate limiter's delay (a retry).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.inner.limiter.when(&item);
        self.inner.state.lock().metrics.retries += 1;
        self.add_after(item, delay);
    }

    /// Forgets `item`'s failures in the rate limiter (it succeeded).
    pub fn forget(&self, item: &T) {
        self.inner.limiter.forget(item);
    }

    /// How many times `item` was re-added rate-limited since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.inner.limiter.num_requeues(item)
    }

    /// Waits for the next item; `None` once the queue is shut down and empty. The caller
    /// must call [`WorkQueue::done`] with the item when finished.
    pub async fn get(&self) -> Option<T> {
        loop {
            let notified = self.inner.ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let next_due = {
                let mut state = self.inner.state.lock();
                let now = Instant::now();
                let promoted = state.promote_due(now);
                if let Some(item) = state.queue.pop_front() {
                    state.dirty.remove(&item);
                    state.processing.insert(item.clone(), now);
                    if let Some(queued) = state.queued_at.remove(&item) {
                        state.metrics.queue_latency_count += 1;
                        state.metrics.queue_latency_total += now.saturating_duration_since(queued);
                    }
                    // Wake a getter for each further item this call made due, as client-go's
                    // waiting loop signals once per item it adds (`delaying_queue.go`):
                    // handed on one getter at a time, the thousand node heartbeats of the
                    // 100,000-pod benchmark, due together, went out one scheduling hop after
                    // another on a busy runtime. Else pass the baton: another getter may take
                    // the next item, or watch the timer in this one's place.
                    let wakes = if state.queue.is_empty() {
                        usize::from(!state.waiting.is_empty() && !state.timer_watched)
                    } else {
                        promoted.saturating_sub(1).clamp(1, state.queue.len())
                    };
                    drop(state);
                    for _ in 0..wakes {
                        self.inner.ready.notify_one();
                    }
                    return Some(item);
                }
                if state.shutting_down {
                    return None;
                }
                let earliest = state.waiting.first_key_value().map(|((due, _), _)| *due);
                let watch = earliest.filter(|_| !state.timer_watched);
                if watch.is_some() {
                    state.timer_watched = true;
                }
                watch
            };
            match next_due {
                Some(due) => {
                    let watch = TimerWatch {
                        inner: &self.inner,
                        ended: false,
                    };
                    let earlier = self.inner.timer.notified();
                    tokio::select! {
                        () = &mut notified => {}
                        () = earlier => {}
                        () = tokio::time::sleep_until(due) => {}
                    }
                    watch.end();
                }
                None => notified.await,
            }
        }
    }

    /// Marks `item` finished; if it was re-added meanwhile, it is queued again.
    pub fn done(&self, item: &T) {
        let (requeued, drained) = {
            let mut state = self.inner.state.lock();
            let Some(started) = state.processing.remove(item) else {
                return;
            };
            state.metrics.work_duration_count += 1;
            state.metrics.work_duration_total += started.elapsed();
            let requeued = state.dirty.contains(item);
            if requeued {
                state.queued_at.insert(item.clone(), Instant::now());
                state.queue.push_back(item.clone());
            }
            (requeued, state.processing.is_empty())
        };
        if requeued {
            self.inner.ready.notify_one();
        }
        if drained {
            self.inner.drained.notify_waiters();
        }
    }

    /// Items queued (not delayed, not in flight).
    pub fn len(&self) -> usize {
        self.inner.state.lock().queue.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops accepting items and drops delayed ones; getters receive what is queued, then
    /// `None`.
    pub fn shutdown(&self) {
        {
            let mut state = self.inner.state.lock();
            state.shutting_down = true;
            state.waiting.clear();
            state.waiting_index.clear();
        }
        self.inner.ready.notify_waiters();
    }

    /// Shuts down and waits until every item in flight is done.
    pub async fn shutdown_with_drain(&self) {
        self.shutdown();
        loop {
            let drained = self.inner.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.inner.state.lock().processing.is_empty() {
                return;
            }
            drained.await;
        }
    }

    /// Whether the queue is shutting down.
    pub fn is_shutting_down(&self) -> bool {
        self.inner.state.lock().shutting_down
    }

    /// A snapshot of the metrics.
    pub fn metrics(&self) -> Metrics {
        let state = self.inner.state.lock();
        let now = Instant::now();
        let mut metrics = state.metrics.clone();
        metrics.depth = state.queue.len();
        metrics.waiting = state.waiting.len();
        metrics.in_flight = state.processing.len();
        for started in state.processing.values() {
            let running = now.saturating_duration_since(*started);
            metrics.unfinished_work += running;
            metrics.longest_running = metrics.longest_running.max(running);
        }
        metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    async fn next(queue: &WorkQueue<&'static str>) -> Option<&'static str> {
        tokio::time::timeout(Duration::from_secs(3600), queue.get())
            .await
            .ok()
            .flatten()
    }

    #[tokio::test(start_paused = true)]
    async fn queue_should_hand_out_items_in_order_and_collapse_duplicates() {
        let queue = WorkQueue::new();
        queue.add("a");
        queue.add("b");
        queue.add("a");
        assert_eq!(queue.len(), 2);
        assert_eq!(next(&queue).await, Some("a"));
        assert_eq!(next(&queue).await, Some("b"));
        assert_eq!(queue.metrics().adds, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn queue_should_never_hand_out_an_item_in_flight_and_requeue_it_after_done() {
        let queue = WorkQueue::new();
        queue.add("a");
        let item = next(&queue).await.expect("item");
        queue.add("a");
        queue.add("a");
        assert_eq!(queue.len(), 0, "in flight: not queued again yet");
        let second = tokio::time::timeout(Duration::from_secs(1), queue.get()).await;
        assert!(second.is_err(), "no second worker gets a");
        queue.done(&item);
        assert_eq!(queue.len(), 1);
        assert_eq!(next(&queue).await, Some("a"));
        queue.done(&"a");
        assert_eq!(queue.metrics().in_flight, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_should_queue_at_the_earliest_due_time() {
        let queue = WorkQueue::new();
        let start = Instant::now();
        queue.add_after("a", Duration::from_secs(10));
        queue.add_after("a", Duration::from_secs(5));
        queue.add_after("a", Duration::from_secs(20));
        queue.add_after("b", Duration::from_secs(7));
        assert_eq!(queue.metrics().waiting, 2);
        assert_eq!(next(&queue).await, Some("a"));
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        assert_eq!(next(&queue).await, Some("b"));
        assert_eq!(start.elapsed(), Duration::from_secs(7));
        assert_eq!(queue.metrics().waiting, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn batched_adds_within_the_window_are_handed_out_once() {
        let queue = WorkQueue::new();
        let window = Duration::from_millis(50);
        let start = Instant::now();
        queue.add_batched("a", window);
        tokio::time::advance(Duration::from_millis(20)).await;
        queue.add_batched("a", window); // joins the first: due at 50 ms, not 70
        assert_eq!(next(&queue).await, Some("a"));
        assert_eq!(start.elapsed(), window);
        // While "a" is processed, a batched add waits for the window, then it runs again.
        queue.add_batched("a", window);
        queue.done(&"a");
        assert_eq!(queue.len(), 0, "waiting, not queued");
        assert_eq!(next(&queue).await, Some("a"));
        assert_eq!(start.elapsed(), window * 2);
        queue.done(&"a");
        // An item already queued (not handed out) takes a batched add as done.
        queue.add("b");
        queue.add_batched("b", window);
        assert_eq!(queue.metrics().waiting, 0);
        assert_eq!(next(&queue).await, Some("b"));
        queue.done(&"b");
        assert_eq!(queue.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_getter_wakes_for_an_earlier_delayed_item() {
        let queue = WorkQueue::new();
        queue.add_after("late", Duration::from_secs(100));
        let getter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        tokio::task::yield_now().await;
        let start = Instant::now();
        queue.add_after("early", Duration::from_secs(1));
        assert_eq!(getter.await.expect("joins"), Some("early"));
        assert_eq!(start.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_getter_dropped_while_it_watches_the_timer_hands_the_watch_over() {
        let queue = WorkQueue::new();
        let watcher = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        tokio::task::yield_now().await;
        let start = Instant::now();
        // The idle getter is woken to watch the timer for it.
        queue.add_after("a", Duration::from_secs(10));
        tokio::task::yield_now().await;
        assert!(queue.inner.state.lock().timer_watched);
        let other = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        tokio::task::yield_now().await;
        watcher.abort();
        assert!(watcher.await.is_err(), "aborted");
        assert_eq!(other.await.expect("joins"), Some("a"));
        assert_eq!(start.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn many_idle_getters_take_delayed_items_at_their_due_times_once_each() {
        let queue: WorkQueue<u64> = WorkQueue::new();
        let start = Instant::now();
        let (sender, mut received) = tokio::sync::mpsc::channel(256);
        let mut getters = Vec::new();
        for _ in 0..50 {
            let queue = queue.clone();
            let sender = sender.clone();
            getters.push(tokio::spawn(async move {
                while let Some(item) = queue.get().await {
                    let _ = sender.send((item, start.elapsed())).await;
                    queue.done(&item);
                }
            }));
        }
        drop(sender);
        tokio::task::yield_now().await;
        // Added out of order, some due at the same time, one moved earlier.
        for item in (0..200u64).rev() {
            queue.add_after(item, Duration::from_millis(100 + item / 2 * 10));
        }
        queue.add_after(199, Duration::from_millis(5));
        let mut seen = HashMap::new();
        while seen.len() < 200 {
            let (item, at) = tokio::time::timeout(Duration::from_secs(60), received.recv())
                .await
                .expect("every item in time")
                .expect("getters alive");
            assert!(seen.insert(item, at).is_none(), "{item} handed out twice");
        }
        for (item, at) in seen {
            let due = if item == 199 { 5 } else { 100 + item / 2 * 10 };
            assert_eq!(at, Duration::from_millis(due), "item {item}");
        }
        queue.shutdown();
        for getter in getters {
            getter.await.expect("getter");
        }
    }

    /// Items that come due together are handed to as many idle getters at once, not passed on
    /// from getter to getter: beside 200 pairs of tasks that keep the run queue full (each
    /// bounce wakes the partner), the other tasks' work done until every due item is taken
    /// tells how long the hand-out took.
    #[tokio::test(start_paused = true)]
    async fn items_due_together_wake_as_many_idle_getters_at_once() {
        const GETTERS: usize = 100;
        const PAIRS: usize = 200;
        let queue: WorkQueue<u64> = WorkQueue::new();
        let taken = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..GETTERS {
            let (queue, taken) = (queue.clone(), Arc::clone(&taken));
            tasks.push(tokio::spawn(async move {
                if queue.get().await.is_some() {
                    taken.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
        tokio::task::yield_now().await;
        for item in 0..GETTERS as u64 {
            queue.add_after(item, Duration::from_secs(10));
        }
        tokio::task::yield_now().await;
        let bounces = Arc::new(AtomicUsize::new(0));
        for _ in 0..PAIRS {
            let (ping, mut pinged) = tokio::sync::mpsc::channel::<()>(1);
            let (pong, mut ponged) = tokio::sync::mpsc::channel::<()>(1);
            let counted = Arc::clone(&bounces);
            tasks.push(tokio::spawn(async move {
                while ping.send(()).await.is_ok() && ponged.recv().await.is_some() {
                    counted.fetch_add(1, Ordering::Relaxed);
                }
            }));
            tasks.push(tokio::spawn(async move {
                while pinged.recv().await.is_some() && pong.send(()).await.is_ok() {}
            }));
        }
        tokio::time::advance(Duration::from_secs(10)).await;
        let before = bounces.load(Ordering::Relaxed);
        while taken.load(Ordering::SeqCst) < GETTERS {
            tokio::task::yield_now().await;
        }
        let during = bounces.load(Ordering::Relaxed) - before;
        // Handed on one at a time: 200 (a bounce of every pair); all woken at once: 49.
        assert!(
            during < PAIRS / 2,
            "{during} bounces of {PAIRS} pairs while {GETTERS} due items were taken"
        );
        for task in tasks {
            task.abort();
        }
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limited_adds_back_off_per_item_until_forgotten() {
        let queue = WorkQueue::new();
        let start = Instant::now();
        for expected_ms in [5u64, 10, 20] {
            let before = Instant::now();
            queue.add_rate_limited("a");
            let item = next(&queue).await.expect("item");
            assert_eq!(before.elapsed(), Duration::from_millis(expected_ms));
            queue.done(&item);
        }
        assert_eq!(queue.num_requeues(&"a"), 3);
        queue.forget(&"a");
        assert_eq!(queue.num_requeues(&"a"), 0);
        assert_eq!(queue.metrics().retries, 3);
        assert!(start.elapsed() >= Duration::from_millis(35));
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_hands_out_queued_items_then_none_and_drops_delayed_ones() {
        let queue = WorkQueue::new();
        queue.add("a");
        queue.add_after("later", Duration::from_secs(1));
        queue.shutdown();
        queue.add("b");
        assert_eq!(next(&queue).await, Some("a"));
        assert_eq!(queue.get().await, None);
        assert!(queue.is_shutting_down());
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_wakes_idle_getters() {
        let queue: WorkQueue<&str> = WorkQueue::new();
        let getter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        tokio::task::yield_now().await;
        queue.shutdown();
        assert_eq!(getter.await.expect("joins"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_with_drain_waits_for_items_in_flight() {
        let queue = WorkQueue::new();
        queue.add("a");
        let item = next(&queue).await.expect("item");
        let drained = tokio::spawn({
            let queue = queue.clone();
            async move { queue.shutdown_with_drain().await }
        });
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!drained.is_finished());
        let metrics = queue.metrics();
        assert_eq!(metrics.longest_running, Duration::from_secs(5));
        queue.done(&item);
        drained.await.expect("drained");
        assert_eq!(queue.metrics().work_duration_total, Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn queue_latency_is_measured_from_add_to_get() {
        let queue = WorkQueue::new();
        queue.add("a");
        tokio::time::sleep(Duration::from_millis(250)).await;
        let item = next(&queue).await.expect("item");
        queue.done(&item);
        let metrics = queue.metrics();
        assert_eq!(metrics.queue_latency_count, 1);
        assert_eq!(metrics.queue_latency_total, Duration::from_millis(250));
    }

    #[tokio::test(start_paused = true)]
    async fn many_workers_never_process_one_key_twice_at_once() {
        let queue: WorkQueue<u32> = WorkQueue::new();
        let active = Arc::new(Mutex::new(HashSet::new()));
        let processed = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let mut workers = Vec::new();
        for _ in 0..4 {
            let queue = queue.clone();
            let active = active.clone();
            let processed = processed.clone();
            workers.push(tokio::spawn(async move {
                while let Some(item) = queue.get().await {
                    assert!(active.lock().insert(item), "two workers on {item}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    active.lock().remove(&item);
                    processed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    queue.done(&item);
                }
            }));
        }
        for round in 0..20 {
            for key in 0..5 {
                queue.add(key);
            }
            tokio::time::sleep(Duration::from_millis(3 + round % 7)).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        queue.shutdown_with_drain().await;
        for worker in workers {
            worker.await.expect("worker");
        }
        assert!(processed.load(std::sync::atomic::Ordering::SeqCst) >= 5);
    }
}
