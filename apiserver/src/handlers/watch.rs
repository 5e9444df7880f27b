//! WATCH (docs/api-behaviour.md#watch): newline-delimited JSON events (or length-prefixed protobuf frames, as
//! negotiated: `negotiate`) over a chunked response whose headers go out at once. Starting points (docs/api-behaviour.md#watch-starting-point): unset/`""`/`"0"` send the current objects as synthetic ADDED
//! events from one snapshot first; `"N"` sends every change after N, or one ERROR 410 event if
//! N was compacted (never an HTTP 410, docs/api-behaviour.md#expired-watches). Streaming lists (docs/api-behaviour.md#streaming-lists), selectors with
//! ADDED/DELETED on entering/leaving the selection (docs/api-behaviour.md#watch-selectors), bookmarks from the store's progress
//! (docs/api-behaviour.md#bookmarks), `timeoutSeconds` (docs/api-behaviour.md#watch-lifetime) and single-object watches; with a Table `Accept`, each
//! event's object is a one-row Table (docs/api-behaviour.md#tables).
//!
//! A watch runs as a tracked task feeding a small bounded channel that the response body
//! drains. A client that stops reading stalls the task, which stops reading the store, which
//! cuts its live watcher off (writers never wait). The task then goes on from the store's
//! history where it stood, as etcd does with a slow watcher; the store keeps that history for
//! an open watch within a limit (`storage/src/compaction.rs`), and past it the client gets
//! the ERROR 410 and lists again.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use futures_util::StreamExt;
use kubemock_storage::{
    Error as StorageError, Event, EventKind, RangeRequest, Revision, WatchItem,
};
use serde_json::{Map, Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tracing::debug;

use super::get::wait_for_revision;
use super::resource::Call;
use crate::admission;
use crate::event_lines::LineKind;
use crate::keys;
use crate::meta::{self, FieldError};
use crate::negotiate::Conversion;
use crate::negotiate::Encoding;
use crate::object;
use crate::partial;
use crate::registry::Resource;
use crate::selector::Selectors;
use crate::status::{ApiError, ApiResult};
use crate::table::{TableRequest, WatchTables};

/// Encoded events buffered between the watch task and the response body: small, so that a
/// client that stops reading soon stops the task (and the store then cuts the watcher off).
const WATCH_CHANNEL: usize = 64;
/// Bytes of encoded events buffered between the watch task and the response body: with
/// objects of a few MiB, [`WATCH_CHANNEL`] events alone could hold a hundred MiB per watch.
/// An event larger than this still goes, alone.
const WATCH_BUFFER_BYTES: usize = 4 * 1024 * 1024;
/// The annotation of the bookmark that ends a streaming list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";
/// The annotation of that bookmark holding the encoded empty list ([`Feed::list_blueprint`]).
const LIST_BLUEPRINT: &str = "kubernetes.io/initial-events-list-blueprint";
/// Objects read per page while sending initial events.
const INITIAL_PAGE: usize = 500;
/// Without `timeoutSeconds` the real server picks a lifetime in [30, 60) minutes (docs/api-behaviour.md#watch-lifetime).
const DEFAULT_TIMEOUT_MIN: Duration = Duration::from_secs(1800);

/// What a watch request asks for, validated.
struct WatchRequest {
    selectors: Selectors,
    /// Only this object (item paths).
    name: Option<String>,
    /// Send the current objects as ADDED events first.
    initial_events: bool,
    /// `sendInitialEvents=true` with `allowWatchBookmarks` (a streaming list, upstream's
    /// `isListWatchRequest` in `pkg/endpoints/handlers/get.go`): the initial events end with
    /// a bookmark annotated `k8s.io/initial-events-end` and carrying the list's blueprint. A
    /// legacy watch from `resourceVersion` unset or `0` sends initial events but no such
    /// bookmark (`isInitialEventsEndBookmarkRequired`, `pkg/storage/cacher/cacher.go`).
    streaming_list: bool,
    /// With initial events: they must be at least this recent.
    not_older_than: Option<Revision>,
    /// Without initial events: deliver changes after this revision.
    after: Revision,
    bookmarks: bool,
    timeout: Duration,
}

impl WatchRequest {
    fn parse(call: &Call) -> ApiResult<Self> {
        let query = &call.query;
        let selectors = Selectors::from_query(query, &call.target.resource)?;
        let name = call.target.name.clone();
        if let Some(name) = &name
            && !selectors.fields.is_empty()
            && selectors.fields.exact_name() != Some(name.as_str())
        {
            return Err(ApiError::bad_request(
                "fieldSelector metadata.name doesn't match requested name",
            ));
        }
        let rv_text = query.get("resourceVersion").unwrap_or("");
        let revision = meta::parse_resource_version(rv_text)?;
        let matching = query.get("resourceVersionMatch").unwrap_or("");
        let send_initial = query
            .get("sendInitialEvents")
            .map(|_| query.flag("sendInitialEvents"));
        let mut errors = Vec::new();
        if !matching.is_empty() && send_initial.is_none() {
            errors.push(FieldError {
                field: "resourceVersionMatch".to_owned(),
                reason: "FieldValueForbidden",
                detail: "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided".to_owned(),
            });
        }
        if send_initial.is_some() {
            if matching == "Exact" {
                errors.push(FieldError {
                    field: "resourceVersionMatch".to_owned(),
                    reason: "FieldValueNotSupported",
                    detail: "Unsupported value: \"Exact\": supported values: \"NotOlderThan\""
                        .to_owned(),
                });
            } else if matching != "NotOlderThan" {
                errors.push(FieldError {
                    field: "resourceVersionMatch".to_owned(),
                    reason: "FieldValueForbidden",
                    detail: "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan".to_owned(),
                });
            }
        }
        if !errors.is_empty() {
            return Err(meta::list_options_invalid(errors));
        }
        let initial_events = send_initial.unwrap_or(revision.unwrap_or(0) == 0);
        let timeout =
            match query.get("timeoutSeconds").unwrap_or("") {
                "" => DEFAULT_TIMEOUT_MIN + Duration::from_secs(fastrand::u64(0..1800)),
                text => Duration::from_secs(text.parse::<u64>().map_err(|_| {
                    ApiError::bad_request(format!("invalid timeoutSeconds: {text}"))
                })?),
            };
        let bookmarks = query.flag("allowWatchBookmarks");
        Ok(WatchRequest {
            selectors,
            name,
            initial_events,
            streaming_list: send_initial == Some(true) && bookmarks,
            not_older_than: revision.filter(|_| initial_events),
            after: revision.unwrap_or(0),
            bookmarks,
            timeout,
        })
    }

    fn matches(&self, object: &Value) -> bool {
        let name_ok = self.name.as_deref().is_none_or(|name| {
            object
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                == Some(name)
        });
        name_ok && self.selectors.matches(object)
    }
}

/// `GET ...?watch=true` (and the legacy `/watch/` paths).
pub(crate) async fn watch(call: &Call) -> ApiResult<Response> {
    call.require_verb("watch")?;
    let request = WatchRequest::parse(call)?;
    let resource = call.target.resource.clone();
    let encoding = call.negotiated.watch_encoding()?;
    // Event objects converted as asked (upstream's watch embedded encoder); a transformation
    // that does not apply to single objects (`PartialObjectMetadataList`) leaves them as they
    // are, as upstream falls back to the object when the transformation fails.
    let conversion = match call.negotiated.conversion {
        Some(Conversion::Table(version)) => Some(EventConversion::Table(
            TableRequest::new(version, &call.query)?.for_watch(resource.printer.clone()),
        )),
        Some(Conversion::Partial {
            version,
            list: false,
        }) => Some(EventConversion::Partial(version)),
        Some(Conversion::Partial { list: true, .. }) | None => None,
    };
    let prefix = keys::collection_prefix(&resource, call.target.namespace.as_deref());
    let (sender, receiver) = mpsc::channel::<(Bytes, OwnedSemaphorePermit)>(WATCH_CHANNEL);
    let buffered = Arc::new(Semaphore::new(WATCH_BUFFER_BYTES));
    let state = call.state.clone();
    if let Some(revision) = request.not_older_than {
        wait_for_revision(&state, revision).await?;
    }
    let tasks = state.tasks().clone();
    let fault = crate::fault_layer::watch_fault().map(|action| FaultState {
        action,
        sent: std::sync::atomic::AtomicU64::new(0),
    });
    tasks.spawn(crate::meta::keep_clock(async move {
        let shutdown = state.shutdown().clone();
        let converting = crate::dispatch::conversion::by_webhook(&resource).then(|| state.clone());
        // Nothing about this watch needs the object tree: JSON, every object of the kind, as
        // stored (or its metadata alone: metadata informers, such as the garbage
        // collector's), no fault at work (the informers' watches, which every write reaches).
        let plain = encoding == Encoding::Json
            && fault.is_none()
            && converting.is_none()
            && matches!(conversion, None | Some(EventConversion::Partial(_)))
            && !resource.is_custom()
            && !resource.stored_converted()
            && request.name.is_none()
            && request.selectors.is_empty();
        let feed = Feed {
            fault,
            converting,
            sender,
            buffered,
            resource,
            request,
            conversion,
            encoding,
            plain,
        };
        tokio::select! {
            _ = shutdown.cancelled() => {}
            () = feed.run(&state, prefix) => {}
        }
    }));
    let content_type = encoding.watch_content_type();
    let body = Body::from_stream(futures_util::stream::unfold(
        receiver,
        |mut receiver| async move {
            // The event's bytes go back to the budget once the body has taken them.
            receiver
                .recv()
                .await
                .map(|(line, _bytes)| (Ok::<_, Infallible>(line), receiver))
        },
    ));
    Ok((StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response())
}

/// What a watch's event objects are converted to.
enum EventConversion {
    /// One-row Tables (docs/api-behaviour.md#tables).
    Table(WatchTables),
    /// `PartialObjectMetadata` of this `meta.k8s.io` version (ERROR events keep their Status).
    Partial(&'static str),
}

/// A fault's watch action on one watch (`faults`), and the events it has counted.
struct FaultState {
    action: Arc<crate::faults::spec::WatchAction>,
    /// Events (not bookmarks or errors) sent so far.
    sent: std::sync::atomic::AtomicU64,
}

/// The task side of one watch.
struct Feed {
    /// The fault acting on this watch, if one does.
    fault: Option<FaultState>,
    /// The state to convert objects with, when the definition converts by webhook.
    converting: Option<crate::state::AppState>,
    sender: mpsc::Sender<(Bytes, OwnedSemaphorePermit)>,
    /// The bytes of [`WATCH_BUFFER_BYTES`] not taken by events waiting for the body.
    buffered: Arc<Semaphore>,
    resource: std::sync::Arc<Resource>,
    request: WatchRequest,
    /// What event objects are converted to, when the client asked for a conversion.
    conversion: Option<EventConversion>,
    /// How events are written: JSON lines or protobuf frames.
    encoding: Encoding,
    /// Whether a change is sent as its stored bytes with the resourceVersion spliced in
    /// ([`Feed::plain_line`]).
    plain: bool,
}

impl Feed {
    /// Sends one event line, its object converted by the definition's webhook when it
    /// converts by webhook (a failed conversion ends the watch with an ERROR event); false
    /// once the client has gone.
    async fn send(&self, kind: &str, object: Value) -> bool {
        let object = match (&self.converting, object) {
            (Some(state), Value::Object(map)) if kind != "BOOKMARK" => {
                match crate::dispatch::conversion::served(state, &self.resource, map).await {
                    Ok(map) => Value::Object(map),
                    Err(err) => {
                        self.send_plain("ERROR", err.to_json()).await;
                        return false;
                    }
                }
            }
            (_, object) => object,
        };
        self.send_plain(kind, object).await
    }

    /// Sends one event line as it is; false once the client has gone or a fault ended the
    /// watch.
    async fn send_plain(&self, kind: &str, object: Value) -> bool {
        let Some(fault) = &self.fault else {
            return self.send_encoded(kind, object).await;
        };
        let action = &fault.action;
        match kind {
            "BOOKMARK" if action.hold_bookmarks => return true,
            "BOOKMARK" | "ERROR" => return self.send_encoded(kind, object).await,
            _ => {}
        }
        if let Some(delay) = action.delay_events {
            tokio::time::sleep(delay).await;
        }
        let revision = object
            .get("metadata")
            .and_then(|m| m.get("resourceVersion"))
            .and_then(Value::as_str)
            .unwrap_or("0")
            .to_owned();
        if !self.send_encoded(kind, object).await {
            return false;
        }
        let sent = fault.sent.fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1;
        if action.end_after_events.is_some_and(|n| sent >= n) {
            self.end_by_fault(&revision).await;
            return false;
        }
        true
    }

    /// Ends the watch as its fault says: an ERROR 410 when it expires watches, else a plain
    /// end of the stream.
    async fn end_by_fault(&self, revision: &str) {
        if self.fault.as_ref().is_some_and(|f| f.action.expire) {
            let error =
                ApiError::expired(format!("too old resource version: {revision} ({revision})"));
            self.send_encoded("ERROR", error.to_json()).await;
        }
    }

    /// Sends one event line as it is, encoded; false once the client has gone.
    async fn send_encoded(&self, kind: &str, mut object: Value) -> bool {
        // docs/api-behaviour.md#serving-custom-resources: a custom object reads in the version watched (conversion `None`).
        if self.resource.is_custom()
            && kind != "ERROR"
            && let Value::Object(map) = &mut object
            && map.contains_key("apiVersion")
        {
            map.insert(
                "apiVersion".to_owned(),
                Value::String(self.resource.group_version()),
            );
        }
        let object = match &self.conversion {
            Some(EventConversion::Table(tables)) => tables.event_object(kind, object),
            Some(EventConversion::Partial(version)) if kind != "ERROR" => {
                partial::object(version, &object)
            }
            _ => object,
        };
        self.send_line(self.encoding.watch_event(kind, object))
            .await
    }

    /// Sends one encoded event once the buffer has room for it; false once the client has
    /// gone.
    async fn send_line(&self, event: Bytes) -> bool {
        let cost = u32::try_from(event.len().min(WATCH_BUFFER_BYTES)).unwrap_or(u32::MAX);
        let Ok(bytes) = self.buffered.clone().acquire_many_owned(cost).await else {
            return false;
        };
        self.sender.send((event, bytes)).await.is_ok()
    }

    async fn send_error(&self, error: ApiError) {
        self.send_plain("ERROR", error.to_json()).await;
    }

    fn bookmark(&self, revision: Revision, initial_events_end: bool) -> Value {
        let mut metadata = Map::new();
        metadata.insert(
            "resourceVersion".to_owned(),
            json!(meta::resource_version(revision)),
        );
        if initial_events_end {
            metadata.insert(
                "annotations".to_owned(),
                json!({
                    INITIAL_EVENTS_END: "true",
                    LIST_BLUEPRINT: self.list_blueprint(),
                }),
            );
        }
        json!({"kind": self.resource.kind, "apiVersion": self.resource.group_version(), "metadata": metadata})
    }

    /// The `kubernetes.io/initial-events-list-blueprint` annotation: an empty list of the
    /// watched kind (`PartialObjectMetadataList` for a metadata watch), encoded as the
    /// watch's objects are (protobuf with its envelope, or JSON), in base64. client-go 1.32's
    /// typed `List` with the WatchListClient feature decodes the list it returns from it, and
    /// falls back to a plain LIST without it (upstream's `watchListTransformer`,
    /// `pkg/endpoints/handlers/response.go`; `rest/request.go` of client-go).
    fn list_blueprint(&self) -> String {
        let list = json!({
            "kind": self.resource.list_kind(),
            "apiVersion": self.resource.group_version(),
            "metadata": {},
            "items": [],
        });
        let list = match &self.conversion {
            Some(EventConversion::Partial(version)) => partial::list(version, &list),
            _ => list,
        };
        BASE64.encode(self.encoding.object_bytes(&list))
    }

    async fn run(self, state: &crate::state::AppState, prefix: String) {
        let store = state.store();
        // A fault that ends the watch before any event (`endAfterEvents: 0`, or `expire`
        // alone).
        if let Some(fault) = &self.fault {
            let action = &fault.action;
            if action.end_after_events == Some(0)
                || (action.expire
                    && action.end_after_events.is_none()
                    && action.end_after.is_none())
            {
                let revision = meta::resource_version(self.request.after);
                return self.end_by_fault(&revision).await;
            }
        }
        // Phase 1: the current objects, from one snapshot.
        let mut after = self.request.after;
        if self.request.initial_events {
            let mut start_after: Option<String> = None;
            let mut snapshot = None;
            loop {
                let mut range = RangeRequest::prefix(prefix.clone()).limit(INITIAL_PAGE);
                if let Some(key) = &start_after {
                    range = range.start_after(key.clone());
                }
                if let Some(revision) = snapshot {
                    range = range.at_revision(revision);
                }
                let page = match store.range(range).await {
                    Ok(page) => page,
                    Err(err) => return self.send_error(ApiError::from_storage(err)).await,
                };
                snapshot = Some(page.revision);
                for kv in &page.items {
                    let Ok(object) = object::from_stored(kv) else {
                        continue;
                    };
                    // As the resource serves it (an events.k8s.io Event from its stored
                    // core/v1 form), as the live events below and every GET and LIST.
                    let object = Value::Object(admission::from_storage(&self.resource, object));
                    if self.request.matches(&object) && !self.send("ADDED", object).await {
                        return;
                    }
                }
                match page.items.last() {
                    Some(last) if page.more() => {
                        start_after = Some(String::from_utf8_lossy(&last.key).into_owned())
                    }
                    _ => break,
                }
            }
            after = snapshot.unwrap_or(0);
            if self.request.streaming_list
                && !self.send("BOOKMARK", self.bookmark(after, true)).await
            {
                return;
            }
        }
        // Phase 2: changes after `after`. A revision above the store's means "only changes
        // after it" (docs/api-behaviour.md#watch-starting-point): watch from the current revision and skip up to it.
        let mut skip_until = 0;
        let mut watch = match store.watch(Bytes::from(prefix.clone()), after).await {
            Ok(watch) => watch,
            Err(StorageError::FutureRevision { current, .. }) => {
                skip_until = after;
                match store.watch(Bytes::from(prefix.clone()), current).await {
                    Ok(watch) => watch,
                    Err(err) => return self.send_error(ApiError::from_storage(err)).await,
                }
            }
            Err(StorageError::Compacted {
                requested,
                compacted,
            }) => {
                return self.send_error(expired(requested, compacted)).await;
            }
            Err(err) => return self.send_error(ApiError::from_storage(err)).await,
        };
        let deadline = tokio::time::sleep(self.request.timeout);
        tokio::pin!(deadline);
        let fault_end = self.fault.as_ref().and_then(|f| f.action.end_after);
        let fault_deadline = tokio::time::sleep(fault_end.unwrap_or(self.request.timeout));
        tokio::pin!(fault_deadline);
        let mut ticker = tokio::time::interval(state.config().bookmark_interval);
        ticker.tick().await;
        let mut last_sent = after;
        loop {
            let item = tokio::select! {
                () = &mut deadline => return,
                () = &mut fault_deadline, if fault_end.is_some() => {
                    return self.end_by_fault(&meta::resource_version(last_sent)).await;
                }
                // The client went away: stop now, not at the next event or the deadline.
                () = self.sender.closed() => return,
                _ = ticker.tick(), if self.request.bookmarks => {
                    watch.request_progress();
                    continue;
                }
                item = watch.next() => item,
            };
            match item {
                Some(Ok(WatchItem::Event(event))) => {
                    if event.revision() <= skip_until {
                        continue;
                    }
                    last_sent = event.revision();
                    if let Some(line) = self.plain_line(state, &event) {
                        if !self.send_line(line).await {
                            return;
                        }
                        continue;
                    }
                    if let Some((kind, object)) = self.convert(&event)
                        && !self.send(kind, object).await
                    {
                        return;
                    }
                }
                Some(Ok(WatchItem::Progress(revision))) => {
                    let revision = revision.max(last_sent).max(skip_until);
                    if !self.send("BOOKMARK", self.bookmark(revision, false)).await {
                        return;
                    }
                }
                Some(Err(StorageError::Compacted {
                    requested,
                    compacted,
                })) => {
                    return self.send_error(expired(requested, compacted)).await;
                }
                // This stream fell behind the store's live events (its client reads slower
                // than they are written): it catches up from the store's history, as etcd moves
                // a slow watcher to its unsynced set rather than cancelling it
                // (`server/storage/mvcc/watchable_store.go`), instead of ending and making the
                // client watch again. kube-apiserver's watch cache ends such a watch instead
                // (`staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go`, "Forcing
                // watcher close due to unresponsiveness", `apiserver_terminated_watchers_total`);
                // its clients then watch again from the last revision they saw, which the cache
                // no longer has when they are far behind, and list everything: at 100,000 pods
                // that list was the costlier way (docs/benchmarks.md, "Watches that fall behind").
                // The old watch is dropped only once the new one is open, so the store keeps the
                // history between (`storage/src/watch.rs`, `Positions`).
                Some(Err(StorageError::WatcherLagged { delivered })) => {
                    match store.watch(Bytes::from(prefix.clone()), delivered).await {
                        Ok(resumed) => {
                            watch = resumed;
                            state.note_watch_catch_up();
                            debug!(delivered, "a lagging watch catches up from history");
                        }
                        Err(StorageError::Compacted {
                            requested,
                            compacted,
                        }) => return self.send_error(expired(requested, compacted)).await,
                        // Closed, or the store failed: the stream ends, as below, and the
                        // client watches again.
                        Err(err) => {
                            debug!(delivered, error = %err, "a lagging watch could not resume; it ends");
                            return;
                        }
                    }
                }
                // Closed, or ended: end the stream; clients re-watch from their last
                // resourceVersion.
                Some(Err(_)) | None => return,
            }
        }
    }

    /// A created or changed object as its event line, straight from the stored bytes, when
    /// the watch is [`plain`](Feed::plain): ADDED or MODIFIED as [`Feed::convert`] would say
    /// without selectors (a previous version: MODIFIED), the object or its
    /// `PartialObjectMetadata`. Deletions, and bytes not in the stored form, take the general
    /// path.
    /// The line is encoded once per event for all the watches that send it (`event_lines`).
    fn plain_line(&self, state: &crate::state::AppState, event: &Arc<Event>) -> Option<Bytes> {
        if !self.plain || !matches!(event.kind, EventKind::Put) {
            return None;
        }
        let kind = if event.prev.is_some() {
            "MODIFIED"
        } else {
            "ADDED"
        };
        match &self.conversion {
            Some(EventConversion::Partial(version)) => {
                state
                    .event_lines()
                    .get_or_encode(event, LineKind::Partial(version), || {
                        object::partial_watch_event_bytes(kind, &event.kv, version).map(Bytes::from)
                    })
            }
            _ => state
                .event_lines()
                .get_or_encode(event, LineKind::Object, || {
                    object::watch_event_bytes(kind, &event.kv).map(Bytes::from)
                }),
        }
    }

    /// The event a change is to this watch, given its selectors (docs/api-behaviour.md#watch-selectors).
    fn convert(&self, event: &Event) -> Option<(&'static str, Value)> {
        let parse = |bytes: &[u8], revision: Revision| -> Option<Value> {
            let stored = object::parse_stored(bytes).ok()?;
            let mut object = admission::from_storage(&self.resource, stored);
            object::set_resource_version(&mut object, revision);
            Some(Value::Object(object))
        };
        let old = event
            .prev
            .as_ref()
            .and_then(|prev| parse(&prev.value, prev.mod_revision));
        let old_matched = old.as_ref().is_some_and(|o| self.request.matches(o));
        let with_revision = |object: Option<Value>| {
            object.and_then(|o| match o {
                Value::Object(mut map) => {
                    object::set_resource_version(&mut map, event.revision());
                    Some(Value::Object(map))
                }
                _ => None,
            })
        };
        match event.kind {
            EventKind::Delete => old_matched
                .then(|| with_revision(old))
                .flatten()
                .map(|o| ("DELETED", o)),
            EventKind::Put => {
                let new = parse(&event.kv.value, event.revision())?;
                match (old_matched, self.request.matches(&new)) {
                    (false, true) => Some(("ADDED", new)),
                    (true, true) => Some(("MODIFIED", new)),
                    (true, false) => with_revision(old).map(|o| ("DELETED", o)),
                    (false, false) => None,
                }
            }
        }
    }
}

/// The in-stream 410 for a compacted start (docs/api-behaviour.md#expired-watches, watch-cache wording).
fn expired(requested: Revision, compacted: Revision) -> ApiError {
    ApiError::expired(format!(
        "too old resource version: {requested} ({})",
        compacted.saturating_sub(1)
    ))
}
