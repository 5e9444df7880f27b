//! Watch over etcd: one etcd watch, on a gRPC stream of its own, per watch; the watch cache
//! (`cache.rs`) holds one per resource prefix and serves most store watches from it. A task reads etcd's responses and queues events into the
//! watcher's bounded channel without ever waiting on it: when the channel is full the watch
//! ends with [`Error::WatcherLagged`], as the sled store's does, and the consumer resumes from
//! its last revision.
//!
//! Progress: [`Watch::request_progress`] sends etcd's `WatchProgressRequest`. A single etcd
//! with the fix of etcd-io/etcd#15220 answers after every event the answer covers
//! (`Inner::ordered_progress`): its answer is believed as it comes. etcd before the
//! fix of etcd-io/etcd#15220 (#15237, backported to 3.4 and 3.5; Debian's 3.4.23 has the bug)
//! answers it out of band, possibly before events it has not sent this watcher yet (always so
//! for a watcher still replaying history). So an answer at revision R is believed only as far
//! as reads prove that nothing under the prefix changed after the last received revision D:
//! at R no key has a mod revision above D (a change whose key still exists), and the number
//! of keys is the same at every revision from D to R (the last change of a key that no longer
//! exists is a delete, which lowers it). Together they are exact: any change in the window
//! leaves one of the two traces. The reads are one transaction of count-only ranges, at most
//! [`VERIFY_WINDOW`] revisions at a time; when they find a change, the request is sent again
//! shortly (its events are on their way). A verified progress also moves D, so the windows
//! stay short.
//!
//! Compaction takes the history those reads need. So before this store compacts to C, every
//! open watch whose D is below C is brought to C first ([`freshen`]): the same reads prove
//! that nothing changed in (D, C], or, when something did, the compaction waits (at most
//! [`FRESHEN_WAIT`]) for those events to arrive. A watch whose window still reaches below the
//! compaction point (another server compacted, or its events never came) can no longer prove
//! an answer, and etcd's alone cannot be believed: it ends with `Compacted`, as etcd ends a
//! watcher that fell behind compaction, and its consumer lists again. Believing it instead
//! lost events: a key created and deleted below the compaction point, in flight when etcd
//! answered.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use kubemock_storage::{Error, Event, EventKind, Result, Revision, Watch, WatchItem};
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tracing::debug;

use crate::client::{Failure, failure, unavailable};
use crate::{Inner, etcd_revision, header_revision, prefix_end, proto, revision};

/// Requests queued for a watch stream (the create, progress requests): few are ever in flight.
const REQUEST_QUEUE: usize = 4;
/// How soon a progress request is sent again when etcd's answer could not be believed yet.
const PROGRESS_RETRY: Duration = Duration::from_millis(20);
/// How soon a progress request is sent again when etcd has not answered it. etcd with the fix
/// of etcd-io/etcd#15220 (3.4.31, 3.5.13, 3.6) drops a request it cannot answer yet: while a
/// watcher replays history, and while the store's revision is below the watcher's start
/// (`storage/mvcc/watchable_store.go`, `progressIfSync`), so a watch started at the current
/// revision hears nothing until the next write anywhere. Upstream's watch cache asks again
/// every 100 ms while it waits (`apiserver/pkg/storage/cacher/progress/watch_progress.go`);
/// so does this, after answering itself when nothing was written since the watch's last
/// event (a read of the current revision).
const PROGRESS_RESEND: Duration = Duration::from_millis(100);
/// Revisions one progress check covers at most: one read per revision in one transaction,
/// within etcd's default `--max-txn-ops` (128).
const VERIFY_WINDOW: u64 = 100;
/// A key nobody writes, watched from revision 1 to learn the compaction point.
const PROBE_KEY: &[u8] = b"\0kubemock/compaction-probe";
/// How long a compaction waits for a watch's pending events before compacting anyway (the
/// watch then ends `Compacted` at its next progress answer). etcd syncs a watcher that
/// replays history every 100 ms.
pub(crate) const FRESHEN_WAIT: Duration = Duration::from_secs(2);

/// What a compaction needs to know of an open watch: its range, and the revision up to which
/// every change under it has reached the consumer (D in the module comment). The watch's task
/// moves it with events and verified progress; [`freshen`] moves it over a quiet window.
pub(crate) struct Mark {
    key: Bytes,
    range_end: Bytes,
    received: AtomicU64,
    /// Notified when the task moves `received` (a freshen waiting for pending events).
    moved: Notify,
}

impl Mark {
    fn received(&self) -> Revision {
        self.received.load(Ordering::Acquire)
    }

    fn advance(&self, to: Revision) {
        self.received.fetch_max(to, Ordering::AcqRel);
    }

    /// Moves `received` towards `target` as far as reads prove that nothing under the range
    /// changed (see the module comment), a window at a time; returns whether it reached
    /// `target` (`false`: a change is on its way). A read that finds its history compacted
    /// after a concurrent move (a freshen, or the task's own events) goes on from there.
    async fn prove_up_to(&self, inner: &Inner, target: Revision) -> Result<bool> {
        loop {
            let since = self.received();
            if since >= target {
                return Ok(true);
            }
            let end = target.min(since + VERIFY_WINDOW);
            match unchanged(inner, &self.key, &self.range_end, since, end).await {
                Ok(true) => self.advance(end),
                Ok(false) => return Ok(false),
                Err(Error::Compacted { .. }) if self.received() > since => {}
                Err(err) => return Err(err),
            }
        }
    }

    /// Moves `received` to `target` as far as reads prove nothing changed; when something did,
    /// waits for the task to receive it, until `deadline`. Gives up (the watch will end
    /// `Compacted` if it needs that history) on a failed read or at the deadline.
    async fn freshen(&self, inner: &Inner, target: Revision, deadline: tokio::time::Instant) {
        loop {
            // Registered before the reads: an event arriving during them wakes the wait below.
            let moved = self.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            match self.prove_up_to(inner, target).await {
                Ok(true) => return,
                Ok(false) => {
                    if tokio::time::timeout_at(deadline, moved).await.is_err() {
                        debug!(
                            key = %String::from_utf8_lossy(&self.key),
                            received = self.received(),
                            target,
                            "watch not caught up before compaction"
                        );
                        return;
                    }
                }
                Err(err) => {
                    debug!(error = %err, "cannot bring a watch up to the compaction point");
                    return;
                }
            }
        }
    }
}

/// Brings every open watch of this store up to `target` before it is compacted to it (see
/// the module comment).
pub(crate) async fn freshen(inner: &Inner, target: Revision) {
    let behind: Vec<Arc<Mark>> = {
        let mut marks = inner.marks.lock();
        marks.retain(|mark| mark.strong_count() > 0);
        marks
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .filter(|mark| mark.received() < target)
            .collect()
    };
    if behind.is_empty() {
        return;
    }
    let deadline = tokio::time::Instant::now() + FRESHEN_WAIT;
    futures_util::future::join_all(
        behind
            .iter()
            .map(|mark| mark.freshen(inner, target, deadline)),
    )
    .await;
}

/// What the task leaves for the stream when it ends.
#[derive(Default)]
struct Ending {
    /// Why it ended; `None`: the watcher lagged (its channel was full).
    error: Mutex<Option<Error>>,
}

/// The etcd store's watch stream.
pub(crate) struct EtcdWatch {
    inbox: Inbox,
    progress: mpsc::Sender<()>,
    ending: Arc<Ending>,
    task: tokio::task::JoinHandle<()>,
    /// Counts this watch in `etcd_watches` while it lives.
    inner: Arc<Inner>,
}

/// The request stream of a watch: what is sent on `requests`' sender.
fn request_stream(
    requests: mpsc::Receiver<proto::WatchRequest>,
) -> impl futures_core::Stream<Item = proto::WatchRequest> + Send + 'static {
    futures_util::stream::unfold(requests, |mut requests| async move {
        requests.recv().await.map(|request| (request, requests))
    })
}

/// A watch create request.
fn create_request(
    key: Bytes,
    range_end: Bytes,
    start: Revision,
    prev_kv: bool,
) -> proto::WatchRequest {
    proto::WatchRequest {
        request_union: Some(proto::watch_request::RequestUnion::CreateRequest(
            proto::WatchCreateRequest {
                key,
                range_end,
                start_revision: etcd_revision(start),
                progress_notify: false,
                prev_kv,
            },
        )),
    }
}

/// A progress request.
fn progress_request() -> proto::WatchRequest {
    proto::WatchRequest {
        request_union: Some(proto::watch_request::RequestUnion::ProgressRequest(
            proto::WatchProgressRequest {},
        )),
    }
}

/// Opens a watch with `request` and waits for etcd's `created` (or its cancellation).
async fn open(
    inner: &Inner,
    request: proto::WatchRequest,
) -> Result<(
    mpsc::Sender<proto::WatchRequest>,
    tonic::Streaming<proto::WatchResponse>,
    Option<proto::WatchResponse>,
)> {
    let (sender, receiver) = mpsc::channel(REQUEST_QUEUE);
    sender
        .try_send(request)
        .map_err(|_| unavailable("the watch request queue is closed".to_owned()))?;
    let mut stream = inner
        .client
        .watch(request_stream(receiver))
        .await
        .map_err(Failure::into_error)?;
    let first = match tokio::time::timeout(inner.client.timeout(), stream.message()).await {
        Ok(Ok(Some(response))) => response,
        Ok(Ok(None)) => return Err(unavailable("etcd closed the watch stream".to_owned())),
        Ok(Err(status)) => return Err(failure(status).into_error()),
        Err(_) => {
            return Err(unavailable(format!(
                "etcd did not create the watch within {:?}",
                inner.client.timeout()
            )));
        }
    };
    if first.canceled {
        return Ok((sender, stream, Some(first)));
    }
    Ok((sender, stream, None))
}

/// etcd's compaction point: a watch of [`PROBE_KEY`] from revision 1 is cancelled with it.
/// Waits at most `wait` (etcd checks new watchers every 100 ms); 0 when etcd does not cancel
/// it right away (nothing compacted).
pub(crate) async fn probe_compaction(inner: &Inner, wait: Duration) -> Result<Revision> {
    let request = create_request(Bytes::from_static(PROBE_KEY), Bytes::new(), 1, false);
    let (_sender, mut stream, cancelled) = open(inner, request).await?;
    if let Some(cancelled) = cancelled {
        return Ok(revision(cancelled.compact_revision));
    }
    let answer = tokio::time::timeout(wait, async {
        loop {
            match stream.message().await {
                Ok(Some(response)) if response.canceled => {
                    return Ok(revision(response.compact_revision));
                }
                Ok(Some(_)) => {}
                Ok(None) => return Err(unavailable("etcd closed the watch stream".to_owned())),
                Err(status) => return Err(failure(status).into_error()),
            }
        }
    })
    .await;
    match answer {
        Ok(answer) => answer,
        Err(_) => Err(unavailable(format!(
            "etcd did not report its compaction point within {wait:?}"
        ))),
    }
}

impl EtcdWatch {
    /// A watch of the store's keys under `prefix`, for changes after `after`.
    pub(crate) async fn start(inner: &Arc<Inner>, prefix: &[u8], after: Revision) -> Result<Self> {
        let key = inner.full(prefix);
        let range_end = prefix_end(&key);
        // Revision 0 is read at etcd's revision 1 (`Inner::read_at`): a compaction at 1 is
        // known only from this store's own record.
        let compacted = inner.compacted.load(std::sync::atomic::Ordering::Acquire);
        if after < compacted {
            return Err(Error::Compacted {
                requested: after,
                compacted,
            });
        }
        // The readable window, as the sled store checks it: a read at `after` fails below the
        // compaction point and above the current revision (a watch from 0 needs revision 1).
        let check = inner
            .range(proto::RangeRequest {
                key: key.clone(),
                count_only: true,
                revision: etcd_revision(after.max(1)),
                ..Default::default()
            })
            .await;
        match check {
            Ok(_) => {}
            Err(Error::Compacted { compacted, .. }) => {
                return Err(Error::Compacted {
                    requested: after,
                    compacted,
                });
            }
            Err(Error::FutureRevision { current, .. }) if after > 0 => {
                return Err(Error::FutureRevision {
                    requested: after,
                    current,
                });
            }
            Err(Error::FutureRevision { .. }) => {}
            Err(err) => return Err(err),
        }
        let request = create_request(key.clone(), range_end.clone(), after + 1, true);
        let (requests, stream, cancelled) = open(inner, request).await?;
        if let Some(cancelled) = cancelled {
            return Err(cancellation(inner, &cancelled, after));
        }
        let (item_sender, items) = mpsc::channel(inner.watch_buffer);
        let (progress, progress_wanted) = mpsc::channel(1);
        let ending = Arc::new(Ending::default());
        let mark = Arc::new(Mark {
            key,
            range_end,
            received: AtomicU64::new(after),
            moved: Notify::new(),
        });
        {
            let mut marks = inner.marks.lock();
            marks.retain(|mark| mark.strong_count() > 0);
            marks.push(Arc::downgrade(&mark));
        }
        let task = tokio::spawn(
            Follower {
                inner: Arc::clone(inner),
                mark,
                stream,
                requests,
                items: item_sender,
                progress_wanted,
                ending: Arc::clone(&ending),
            }
            .run(),
        );
        inner
            .etcd_watches
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Ok(EtcdWatch {
            inbox: Inbox::new(items, after),
            progress,
            ending,
            task,
            inner: Arc::clone(inner),
        })
    }
}

/// The error of a watch etcd cancelled after `received`.
fn cancellation(inner: &Inner, response: &proto::WatchResponse, received: Revision) -> Error {
    if response.compact_revision > 0 {
        Error::Compacted {
            requested: received,
            compacted: inner.saw_compacted(revision(response.compact_revision)),
        }
    } else {
        unavailable(format!(
            "etcd cancelled the watch: {}",
            response.cancel_reason
        ))
    }
}

/// The task that follows one etcd watch.
struct Follower {
    inner: Arc<Inner>,
    /// The range, and the revision every change up to which is queued (initially the start
    /// revision), shared with compactions.
    mark: Arc<Mark>,
    stream: tonic::Streaming<proto::WatchResponse>,
    requests: mpsc::Sender<proto::WatchRequest>,
    items: mpsc::Sender<Result<WatchItem>>,
    progress_wanted: mpsc::Receiver<()>,
    ending: Arc<Ending>,
}

/// Why the follower stops.
enum Stop {
    /// The consumer is gone, or its channel is full (lagged): nothing more to say.
    Quiet,
    /// With this error for the consumer.
    Error(Error),
}

impl Follower {
    async fn run(mut self) {
        if let Err(Stop::Error(err)) = self.follow().await {
            debug!(error = %err, "etcd watch ended");
            *self.ending.error.lock() = Some(err);
        }
    }

    async fn follow(&mut self) -> Result<(), Stop> {
        // A progress request is outstanding (asked by the consumer, not yet answered).
        let mut wanted = false;
        // While it is: when to ask etcd again.
        let mut ask_again = tokio::time::Instant::now();
        loop {
            tokio::select! {
                () = self.items.closed() => return Err(Stop::Quiet),
                asked = self.progress_wanted.recv(), if !wanted => {
                    if asked.is_none() {
                        return Err(Stop::Quiet);
                    }
                    wanted = true;
                    self.ask_progress()?;
                    ask_again = tokio::time::Instant::now() + PROGRESS_RESEND;
                }
                () = tokio::time::sleep_until(ask_again), if wanted => {
                    let received = self.mark.received();
                    // A failed read only means asking etcd again: the stream itself reports
                    // an etcd that is gone.
                    let current = self.inner.current_revision().await.ok();
                    if current.is_some_and(|current| current <= received) {
                        // Nothing written since: everything up to the current revision is
                        // here, whatever etcd says.
                        wanted = false;
                        self.queue(WatchItem::Progress(received))?;
                    } else {
                        self.ask_progress()?;
                        ask_again = tokio::time::Instant::now() + PROGRESS_RESEND;
                    }
                }
                message = self.stream.message() => {
                    let response = match message {
                        Ok(Some(response)) => response,
                        Ok(None) => {
                            return Err(Stop::Error(unavailable(
                                "etcd closed the watch stream".to_owned(),
                            )));
                        }
                        Err(status) => return Err(Stop::Error(failure(status).into_error())),
                    };
                    if response.canceled {
                        let received = self.mark.received();
                        return Err(Stop::Error(cancellation(&self.inner, &response, received)));
                    }
                    if !response.events.is_empty() {
                        for event in response.events {
                            let event = self.event(event).map_err(Stop::Error)?;
                            let revision = event.revision();
                            self.queue(WatchItem::Event(Arc::new(event)))?;
                            self.mark.advance(revision);
                        }
                        self.mark.moved.notify_waiters();
                    } else if wanted && !response.created {
                        let at = header_revision(response.header.as_ref());
                        let before = self.mark.received();
                        let reached = if self.inner.ordered_progress {
                            // Sent after every event it covers (etcd with the fix).
                            self.mark.advance(at);
                            true
                        } else {
                            self.verify_progress(at).await.map_err(Stop::Error)?
                        };
                        if reached {
                            wanted = false;
                        } else {
                            ask_again = tokio::time::Instant::now() + PROGRESS_RETRY;
                        }
                        // Also a partial advance: a consumer waiting for less gets it now.
                        let received = self.mark.received();
                        if reached || received > before {
                            self.queue(WatchItem::Progress(received))?;
                        }
                    }
                }
            }
        }
    }

    fn ask_progress(&self) -> Result<(), Stop> {
        match self.requests.try_send(progress_request()) {
            // Full: requests are already on their way; their answer serves this one too.
            Ok(()) | Err(TrySendError::Full(_)) => Ok(()),
            Err(TrySendError::Closed(_)) => Err(Stop::Error(unavailable(
                "the watch request stream closed".to_owned(),
            ))),
        }
    }

    /// Queues `item` for the consumer without waiting: a full channel ends the watch as
    /// lagging.
    fn queue(&self, item: WatchItem) -> Result<(), Stop> {
        match self.items.try_send(Ok(item)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                debug!(received = self.mark.received(), "etcd watcher lagged");
                Err(Stop::Quiet)
            }
            Err(TrySendError::Closed(_)) => Err(Stop::Quiet),
        }
    }

    /// An etcd event as the store's.
    fn event(&self, event: proto::Event) -> Result<Event> {
        let kind = match event.r#type {
            proto::EVENT_PUT => EventKind::Put,
            proto::EVENT_DELETE => EventKind::Delete,
            other => {
                return Err(crate::client::backend(format!(
                    "etcd sent a watch event of unknown type {other}"
                )));
            }
        };
        let Some(kv) = event.kv else {
            return Err(crate::client::backend(
                "etcd sent a watch event without its key".to_owned(),
            ));
        };
        Ok(Event {
            kind,
            kv: self.inner.kv(kv)?,
            prev: event.prev_kv.map(|prev| self.inner.kv(prev)).transpose()?,
        })
    }

    /// Moves `received` as far towards `at` as reads prove that nothing under the prefix
    /// changed (see the module comment); returns whether it reached `at`. Fails `Compacted`
    /// when the reads need history that is gone.
    async fn verify_progress(&mut self, at: Revision) -> Result<bool> {
        match self.mark.prove_up_to(&self.inner, at).await {
            // Nothing left to compare with, and etcd's answer alone cannot be believed.
            Err(Error::Compacted { .. }) => {
                let since = self.mark.received();
                let known = self.inner.compacted.load(Ordering::Acquire);
                Err(Error::Compacted {
                    requested: since,
                    compacted: known.max(since + 1),
                })
            }
            other => other,
        }
    }
}

/// Whether no key in `[key, range_end)` changed in `(since, end]`: none has a mod revision in
/// it at `end` (the last change of a key that still exists), and the number of keys is the
/// same at every revision of it (the last change of a key that no longer exists, a delete,
/// lowers it). One transaction of count-only reads.
async fn unchanged(
    inner: &Inner,
    key: &Bytes,
    range_end: &Bytes,
    since: Revision,
    end: Revision,
) -> Result<bool> {
    let read = |at: Revision, count_only: bool, min_mod: Revision| proto::RequestOp {
        request: Some(proto::request_op::Request::RequestRange(
            proto::RangeRequest {
                key: key.clone(),
                range_end: range_end.clone(),
                // The store's revision 0 is etcd's first revision (no key); see `read_at`.
                revision: etcd_revision(at.max(1)),
                count_only,
                keys_only: !count_only,
                limit: i64::from(!count_only),
                min_mod_revision: etcd_revision(min_mod),
                ..Default::default()
            },
        )),
    };
    let mut reads = vec![read(end, false, since + 1)];
    reads.extend((since..=end).map(|at| read(at, true, 0)));
    let response = inner
        .client
        .txn_failure(proto::TxnRequest {
            compare: Vec::new(),
            success: reads,
            failure: Vec::new(),
        })
        .await
        .map_err(|failure| match failure {
            // A compacted snapshot fails the whole transaction.
            Failure::Compacted => Error::Compacted {
                requested: since,
                compacted: since + 1,
            },
            other => other.into_error(),
        })?;
    let mut ranges = response.responses.into_iter().map(|op| match op.response {
        Some(proto::response_op::Response::ResponseRange(range)) => Ok(range),
        _ => Err(crate::client::backend(
            "etcd answered a read transaction without its reads".to_owned(),
        )),
    });
    let Some(written) = ranges.next() else {
        return Err(crate::client::backend(
            "etcd answered a read transaction without its reads".to_owned(),
        ));
    };
    if !written?.kvs.is_empty() {
        return Ok(false);
    }
    let mut counts = ranges.map(|range| range.map(|range| range.count));
    let Some(first) = counts.next().transpose()? else {
        return Ok(true);
    };
    for count in counts {
        if count? != first {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The receiving end of a watch, direct or through a cache: the items its task sends, and the
/// revision last delivered, which the lagging error reports when the sender goes away.
pub(crate) struct Inbox {
    items: mpsc::Receiver<Result<WatchItem>>,
    /// Revision of the last event yielded (initially the start revision).
    delivered: Revision,
    done: bool,
}

impl Inbox {
    pub(crate) fn new(items: mpsc::Receiver<Result<WatchItem>>, after: Revision) -> Self {
        Inbox {
            items,
            delivered: after,
            done: false,
        }
    }

    /// The next item. An error ends the watch; so does a closed channel, with the error
    /// `closed` gives, else as lagging.
    pub(crate) fn poll(
        &mut self,
        cx: &mut Context<'_>,
        closed: impl FnOnce() -> Option<Error>,
    ) -> Poll<Option<Result<WatchItem>>> {
        if self.done {
            return Poll::Ready(None);
        }
        match self.items.poll_recv(cx) {
            Poll::Ready(Some(Ok(WatchItem::Event(event)))) => {
                self.delivered = event.revision();
                Poll::Ready(Some(Ok(WatchItem::Event(event))))
            }
            Poll::Ready(Some(Err(err))) => {
                self.done = true;
                Poll::Ready(Some(Err(err)))
            }
            Poll::Ready(Some(item)) => Poll::Ready(Some(item)),
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(Some(Err(closed().unwrap_or(Error::WatcherLagged {
                    delivered: self.delivered,
                }))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Stream for EtcdWatch {
    type Item = Result<WatchItem>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let ending = &this.ending;
        this.inbox.poll(cx, || ending.error.lock().take())
    }
}

impl Watch for EtcdWatch {
    fn request_progress(&mut self) {
        // Capacity 1: a request already waiting covers this one.
        let _ = self.progress.try_send(());
    }
}

impl Drop for EtcdWatch {
    fn drop(&mut self) {
        // Ends the gRPC stream, which cancels the watch in etcd.
        self.task.abort();
        self.inner
            .etcd_watches
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}
