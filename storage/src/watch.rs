//! Watch: replay from history, then follow live commits, with no gap and no duplicate, and
//! without ever making a writer wait.
//!
//! A watcher starts *unsynced*: it reads history records after its start revision in chunks
//! from the log, up to the published revision. When it has read everything up to the published
//! revision it registers with the [`Hub`] under the hub lock, which is also the lock under which
//! commits are published (etcd's `watchable_store.go` rule): so registration happens between two
//! publications, and every later event reaches the watcher exactly once, live. A watcher that
//! falls behind while replaying simply replays more; nothing is buffered for it meanwhile.
//!
//! Live delivery is a non-blocking `try_send` into the watcher's bounded channel. When it is
//! full, or holds more than [`crate::Config::watch_buffer_bytes`] of keys and values, the
//! watcher is dropped from the hub and, once it has drained what it had, ends with
//! [`Error::WatcherLagged`]; its consumer may watch again from the last delivered revision.
//! Counting events alone would let one slow watcher of large objects hold gigabytes (1,024
//! events of 1 MiB). A replaying watcher likewise reads at most [`REPLAY_CHUNK`] records or
//! [`REPLAY_CHUNK_BYTES`] per step.
//!
//! Progress: a live watcher with nothing queued has seen everything up to the published
//! revision; checked under the hub lock, that revision is safe to report.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tracing::debug;

use crate::Revision;
use crate::error::{Error, Result};
use crate::kv::{Event, Watch, WatchItem};
use crate::revision::Record;
use crate::store::Shared;

/// History records read per replay step: bounds a replaying watcher's buffer and the time one
/// poll spends reading before it yields.
const REPLAY_CHUNK: u64 = 256;
/// Bytes of events a replay step queues at most (it always takes one event): 256 events of
/// 1 MiB objects, with their previous values, would be half a gigabyte per replaying watcher.
const REPLAY_CHUNK_BYTES: u64 = 4 * 1024 * 1024;
/// Replay steps that found no event for this watcher's prefix, per poll, before it yields to
/// the executor (a narrow prefix over a long history must not monopolise a worker thread).
const IDLE_REPLAY_STEPS_PER_POLL: usize = 8;

/// The watcher is receiving, or may still receive, events.
const END_NONE: u8 = 0;
/// The watcher's buffer filled; it was dropped from the hub.
const END_LAGGED: u8 = 1;
/// The store closed.
const END_CLOSED: u8 = 2;

/// The live watchers and the published revision. Guarded by `Shared::hub`.
pub(crate) struct Hub {
    /// Every change up to this revision has been published (and is durable).
    published: Revision,
    /// Live watchers by id.
    subscribers: HashMap<u64, Subscriber>,
    next_id: u64,
    /// Set when the store closes: no watcher registers after it.
    closed: bool,
}

struct Subscriber {
    prefix: Bytes,
    sender: mpsc::Sender<Arc<Event>>,
    /// Why the subscriber was dropped; shared with its stream.
    end: Arc<AtomicU8>,
    /// Bytes of the events in its channel ([`event_bytes`]): added here before a send,
    /// subtracted by the stream when it takes an event out.
    queued: Arc<AtomicU64>,
}

/// What an event holds on to, for the watch buffer's budget: its key and value, and its
/// previous value. (Watchers share one event; each counts it in full, as each may be what
/// keeps it alive.)
fn event_bytes(event: &Event) -> u64 {
    let prev = event
        .prev
        .as_ref()
        .map_or(0, |prev| prev.key.len() + prev.value.len());
    (event.kv.key.len() + event.kv.value.len() + prev) as u64
}

/// The open watches' positions: each the revision up to which its watch has been given
/// everything, so the history after it is what the watch still reads. The background
/// compactor keeps that history, within a limit, for the history budget (`compaction.rs`): a
/// watch that fell behind, or ended lagged and was started again from where it stood, then
/// catches up from history instead of finding it compacted and making its client list
/// everything again. Written when a watch opens and drops, read by the compactor; each watch
/// moves its own position with atomic stores.
#[derive(Default)]
pub(crate) struct Positions {
    open: HashMap<u64, Arc<Position>>,
    next_id: u64,
}

/// One open watch's position.
pub(crate) struct Position {
    /// The revision of the last event it yielded (its start revision before any).
    delivered: AtomicU64,
    /// It is registered with the hub: it reads no history any more, only its channel.
    live: AtomicBool,
    /// Bytes in its channel ([`Subscriber::queued`]).
    queued: Arc<AtomicU64>,
}

impl Positions {
    /// The oldest position of an open watch, if any, `published` being the revision the
    /// store has published. A live watch with nothing queued has been given everything up to
    /// it: a watch of a prefix nobody writes (Namespaces, definitions) would otherwise stand
    /// at its start for good, and keep twice the budget of other keys' history.
    pub(crate) fn oldest(&self, published: Revision) -> Option<Revision> {
        self.open
            .values()
            .map(|position| {
                let caught_up = position.live.load(Ordering::Acquire)
                    && position.queued.load(Ordering::Acquire) == 0;
                if caught_up {
                    published
                } else {
                    position.delivered.load(Ordering::Acquire)
                }
            })
            .min()
    }

    fn open(&mut self, at: Revision, queued: &Arc<AtomicU64>) -> (u64, Arc<Position>) {
        let id = self.next_id;
        self.next_id += 1;
        let position = Arc::new(Position {
            delivered: AtomicU64::new(at),
            live: AtomicBool::new(false),
            queued: Arc::clone(queued),
        });
        self.open.insert(id, Arc::clone(&position));
        (id, position)
    }
}

impl Hub {
    pub(crate) fn new(published: Revision) -> Self {
        Hub {
            published,
            subscribers: HashMap::new(),
            next_id: 0,
            closed: false,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.subscribers.len()
    }
}

impl Shared {
    /// Delivers committed, durable `events` to the live watchers and advances the published
    /// revision to `revision`. Never blocks on a watcher.
    pub(crate) fn publish(&self, events: &[Arc<Event>], revision: Revision) {
        let mut hub = self.hub.lock();
        // Readers see the revision before watchers hear of it: a client that reads after an
        // event (a controller reacting to it) must never get the state before the event.
        hub.published = revision;
        self.published.store(revision, Ordering::Release);
        let budget = self.config.watch_buffer_bytes;
        if !events.is_empty() {
            hub.subscribers.retain(|id, subscriber| {
                for event in events {
                    if !event.kv.key.starts_with(&subscriber.prefix) {
                        continue;
                    }
                    let size = event_bytes(event);
                    // One event larger than the budget still goes to a watcher with nothing
                    // queued, or it could never be watched.
                    let queued = subscriber.queued.load(Ordering::Acquire);
                    if queued > 0 && queued.saturating_add(size) > budget {
                        subscriber.end.store(END_LAGGED, Ordering::Release);
                        debug!(watcher = id, queued, "watcher lagged past its byte budget");
                        return false;
                    }
                    subscriber.queued.fetch_add(size, Ordering::AcqRel);
                    match subscriber.sender.try_send(Arc::clone(event)) {
                        Ok(()) => {}
                        Err(TrySendError::Full(_)) => {
                            subscriber.end.store(END_LAGGED, Ordering::Release);
                            debug!(watcher = id, revision = event.revision(), "watcher lagged");
                            return false;
                        }
                        Err(TrySendError::Closed(_)) => return false,
                    }
                }
                true
            });
        }
    }

    /// Ends every watcher with [`Error::Closed`] and refuses new registrations.
    pub(crate) fn close_watchers(&self) {
        let mut hub = self.hub.lock();
        hub.closed = true;
        for (_, subscriber) in hub.subscribers.drain() {
            subscriber.end.store(END_CLOSED, Ordering::Release);
        }
    }
}

enum Phase {
    /// Reading history; the next revision to read.
    Replaying { next: Revision },
    /// Registered with the hub (as `id`); events arrive on the channel.
    Live { id: u64 },
}

/// The sled store's watch stream.
pub(crate) struct SledWatch {
    /// Weak: a watch does not keep a closed store's database open.
    shared: Weak<Shared>,
    prefix: Bytes,
    phase: Phase,
    /// Replayed events not yet yielded (at most one chunk's worth).
    replayed: VecDeque<Arc<Event>>,
    receiver: mpsc::Receiver<Arc<Event>>,
    /// The channel's sender until it moves into the hub.
    sender: Option<mpsc::Sender<Arc<Event>>>,
    end: Arc<AtomicU8>,
    /// Bytes in the channel (see [`Subscriber::queued`]).
    queued: Arc<AtomicU64>,
    /// Revision of the last event yielded (initially the start revision).
    delivered: Revision,
    /// `delivered`, and whether the watch is live, as the compactor reads them
    /// ([`Positions`]), under this id.
    position: Arc<Position>,
    position_id: u64,
    progress_requested: bool,
    /// Set after the final error: the stream then yields `None`.
    done: bool,
}

impl SledWatch {
    /// A watch of `prefix` for changes after `after`.
    pub(crate) fn start(shared: &Arc<Shared>, prefix: Bytes, after: Revision) -> Result<Self> {
        let compacted = shared.compacted.load(Ordering::Acquire);
        if after < compacted {
            return Err(Error::Compacted {
                requested: after,
                compacted,
            });
        }
        let current = shared.published.load(Ordering::Acquire);
        if after > current {
            return Err(Error::FutureRevision {
                requested: after,
                current,
            });
        }
        let (sender, receiver) = mpsc::channel(shared.config.watch_buffer);
        let queued = Arc::new(AtomicU64::new(0));
        let (position_id, position) = shared.positions.lock().open(after, &queued);
        let mut watch = SledWatch {
            shared: Arc::downgrade(shared),
            prefix,
            phase: Phase::Replaying { next: after + 1 },
            replayed: VecDeque::new(),
            receiver,
            sender: Some(sender),
            end: Arc::new(AtomicU8::new(END_NONE)),
            queued,
            delivered: after,
            position,
            position_id,
            progress_requested: false,
            done: false,
        };
        // Subscribe now if nothing needs replaying, so that the watch is live from here on.
        watch.try_go_live(shared, after + 1)?;
        Ok(watch)
    }

    /// Registers with the hub if `next` follows the published revision.
    fn try_go_live(&mut self, shared: &Shared, next: Revision) -> Result<bool> {
        let mut hub = shared.hub.lock();
        if hub.closed {
            return Err(Error::Closed);
        }
        if next != hub.published + 1 {
            return Ok(false);
        }
        let Some(sender) = self.sender.take() else {
            return Ok(false);
        };
        let id = hub.next_id;
        hub.next_id += 1;
        hub.subscribers.insert(
            id,
            Subscriber {
                prefix: self.prefix.clone(),
                sender,
                end: Arc::clone(&self.end),
                queued: Arc::clone(&self.queued),
            },
        );
        self.phase = Phase::Live { id };
        self.position.live.store(true, Ordering::Release);
        Ok(true)
    }

    /// Reads one chunk of history from `next`, up to the published revision, queueing the
    /// events under this watch's prefix. Returns how many it queued.
    fn replay_chunk(&mut self, shared: &Shared, next: Revision) -> Result<usize> {
        let published = shared.published.load(Ordering::Acquire);
        let last = published.min(next.saturating_add(REPLAY_CHUNK - 1));
        let read_at = next - 1;
        let mut expected = next;
        let mut queued = 0;
        let mut bytes = 0;
        let mut gap = None;
        for item in shared.backend.scan(next, last) {
            // A record half removed under the scan is history compaction took meanwhile.
            let (revision, raw) = item.map_err(|err| shared.overtaken(err, read_at))?;
            if revision != expected {
                gap = Some(revision);
                break;
            }
            expected += 1;
            let record = Record::decode(&raw, revision)?;
            if record.key.starts_with(&self.prefix) {
                let event = shared.event_of(&raw, &record, revision, read_at)?;
                bytes += event_bytes(&event);
                self.replayed.push_back(Arc::new(event));
                queued += 1;
                if bytes >= REPLAY_CHUNK_BYTES {
                    break;
                }
            }
        }
        // History below the compaction point may have been removed while we read it.
        let compacted = shared.compacted.load(Ordering::Acquire);
        if compacted > read_at {
            self.replayed.clear();
            return Err(Error::Compacted {
                requested: read_at,
                compacted,
            });
        }
        // Short of `last` only if the byte bound stopped the scan, or a record is missing.
        if expected != last + 1 && (gap.is_some() || bytes < REPLAY_CHUNK_BYTES) {
            return Err(Error::RevisionGap {
                expected,
                found: gap.unwrap_or(last + 1),
            });
        }
        self.phase = Phase::Replaying { next: expected };
        Ok(queued)
    }

    /// The progress revision, if nothing is queued for this live watcher.
    fn try_progress(&self, shared: &Shared) -> Option<Revision> {
        let hub = shared.hub.lock();
        let open = !hub.closed && self.end.load(Ordering::Acquire) == END_NONE;
        (open && self.receiver.is_empty()).then_some(hub.published)
    }

    fn poll_inner(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<WatchItem>>> {
        let mut idle_steps = 0;
        loop {
            if let Some(event) = self.replayed.pop_front() {
                self.deliver(event.revision());
                return Poll::Ready(Some(Ok(WatchItem::Event(event))));
            }
            match self.phase {
                Phase::Replaying { next } => {
                    let Some(shared) = self.shared.upgrade() else {
                        return Poll::Ready(Some(Err(Error::Closed)));
                    };
                    match self.try_go_live(&shared, next) {
                        Ok(true) => continue,
                        Ok(false) => {}
                        Err(err) => return Poll::Ready(Some(Err(err))),
                    }
                    if idle_steps == IDLE_REPLAY_STEPS_PER_POLL {
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    match self.replay_chunk(&shared, next) {
                        Ok(0) => idle_steps += 1,
                        Ok(_) => {}
                        Err(err) => return Poll::Ready(Some(Err(err))),
                    }
                }
                Phase::Live { .. } => {
                    if self.progress_requested {
                        let Some(shared) = self.shared.upgrade() else {
                            return Poll::Ready(Some(Err(Error::Closed)));
                        };
                        if let Some(revision) = self.try_progress(&shared) {
                            self.progress_requested = false;
                            return Poll::Ready(Some(Ok(WatchItem::Progress(revision))));
                        }
                    }
                    return match self.receiver.poll_recv(cx) {
                        Poll::Ready(Some(event)) => {
                            self.queued.fetch_sub(event_bytes(&event), Ordering::AcqRel);
                            self.deliver(event.revision());
                            Poll::Ready(Some(Ok(WatchItem::Event(event))))
                        }
                        Poll::Ready(None) => {
                            Poll::Ready(Some(Err(match self.end.load(Ordering::Acquire) {
                                END_LAGGED => Error::WatcherLagged {
                                    delivered: self.delivered,
                                },
                                _ => Error::Closed,
                            })))
                        }
                        Poll::Pending => Poll::Pending,
                    };
                }
            }
        }
    }

    fn deliver(&mut self, revision: Revision) {
        self.delivered = revision;
        self.position.delivered.store(revision, Ordering::Release);
    }

    /// Leaves the hub (if registered).
    fn unsubscribe(&mut self) {
        if let Phase::Live { id } = self.phase
            && let Some(shared) = self.shared.upgrade()
        {
            shared.hub.lock().subscribers.remove(&id);
        }
    }
}

impl Stream for SledWatch {
    type Item = Result<WatchItem>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        let item = this.poll_inner(cx);
        if let Poll::Ready(Some(Err(_))) = item {
            this.done = true;
            this.unsubscribe();
        }
        item
    }
}

impl Watch for SledWatch {
    fn request_progress(&mut self) {
        self.progress_requested = true;
    }
}

impl Drop for SledWatch {
    fn drop(&mut self) {
        self.unsubscribe();
        if let Some(shared) = self.shared.upgrade() {
            shared.positions.lock().open.remove(&self.position_id);
        }
    }
}
