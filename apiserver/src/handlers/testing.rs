//! The handlers of kubemock's own group, `testing.kubemock.dev/v1` (`registry::testing`).
//!
//! `requests`, the request log (`requestlog`): list (label and field selectors, `limit` and
//! `continue`), get, watch (from a resourceVersion, with initial events, bookmarks,
//! `timeoutSeconds`, Table events for `kubectl get -w`) and `DELETE` of the collection, which
//! clears it. The log lives in memory: resourceVersions are the entries' sequence numbers,
//! and a watch or a list from before entries the full log dropped is answered 410 Expired,
//! as a compacted revision is.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use kubemock_apimachinery::fields::Selector as FieldSelector;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::resource::Call;
use crate::meta;
use crate::negotiate::{Conversion, Encoding};
use crate::registry::testing::{GROUP, VERSION};
use crate::requestlog::{Entry, RequestLog, SELECTABLE_FIELDS, Selectable};
use crate::selector::LabelSelector;
use crate::status::{ApiError, ApiResult};
use crate::table::{TableRequest, WatchTables};

/// Events buffered between a request-log watch's task and its response body.
const WATCH_CHANNEL: usize = 64;
/// Entries a watch reads from the log at a time.
const WATCH_BATCH: usize = 256;
/// A watch without `timeoutSeconds` ends after this long (the real server picks 30 to 60
/// minutes).
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

/// A request for a resource of `testing.kubemock.dev`.
pub(crate) async fn serve(call: &Call, method: Method) -> ApiResult<Response> {
    match call.target.resource.plural.as_str() {
        "requests" => requests(call, method).await,
        "compactions" => compaction(call, method).await,
        "clocks" => super::clock::serve(call, method).await,
        "resets" => {
            require_create(call, &method)?;
            let baseline = call
                .state
                .baseline()
                .ok_or_else(|| ApiError::unavailable("the server is starting"))?;
            let report = crate::reset::reset(call.state.store().as_ref(), &baseline).await?;
            // The Service address allocator caches its records: repair and read them again.
            call.state.reload_service_allocator();
            Ok(call.respond(StatusCode::CREATED, &report.to_object(&baseline)))
        }
        "snapshots" => {
            require_create(call, &method)?;
            let snapshot = crate::reset::snapshot(call.state.store().as_ref()).await?;
            Ok(call.respond(StatusCode::CREATED, &snapshot))
        }
        _ => Err(ApiError::route_method_not_allowed()),
    }
}

/// The Kubernetes verb of a request for a resource of this group, as upstream's routes give
/// them (`PUT` and `PATCH` only on an item); 405 for a subresource or any other method.
pub(super) fn verb(call: &Call, method: &Method) -> ApiResult<&'static str> {
    if call.target.subresource.is_some() {
        return Err(ApiError::route_method_not_allowed());
    }
    Ok(match (method, call.target.name.is_some()) {
        (&Method::GET, true) => "get",
        (&Method::GET, false) if call.target.watches(&call.query) => "watch",
        (&Method::GET, false) => "list",
        (&Method::POST, _) => "create",
        (&Method::PUT, true) => "update",
        (&Method::PATCH, true) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) => "deletecollection",
        _ => return Err(ApiError::route_method_not_allowed()),
    })
}

/// A POST to a create-only resource's collection; any other request refused.
fn require_create(call: &Call, method: &Method) -> ApiResult<()> {
    let verb = verb(call, method)?;
    if verb != "create" || call.target.name.is_some() {
        return Err(ApiError::verb_not_supported(&call.target.resource, verb));
    }
    Ok(())
}

/// The body of a POST as a JSON object (empty: `{}`).
pub(super) fn body_object(call: &Call) -> ApiResult<serde_json::Map<String, Value>> {
    if call.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Map::new());
    }
    crate::object::decode_body(&call.headers, &call.body, &call.target.resource)
}

/// The answer of an action: `kind` with `spec` as asked and `status` as done.
fn action_object(kind: &str, name: String, spec: Value, status: Value) -> Value {
    json!({
        "kind": kind,
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": {"name": name, "creationTimestamp": meta::now_rfc3339()},
        "spec": spec,
        "status": status,
    })
}

/// `POST compactions`: compacts the store up to `spec.resourceVersion` (default: the
/// current one), so that a list, get or watch from an older resourceVersion is answered 410
/// Expired, as after etcd's compaction. Live watches go on.
async fn compaction(call: &Call, method: Method) -> ApiResult<Response> {
    require_create(call, &method)?;
    let body = body_object(call)?;
    let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
    let store = call.state.store();
    let current = store
        .current_revision()
        .await
        .map_err(ApiError::from_storage)?;
    let revision = match spec.get("resourceVersion").and_then(Value::as_str) {
        None | Some("") => current,
        Some(text) => {
            let asked = meta::parse_uint(text).ok_or_else(|| {
                ApiError::bad_request(format!("invalid spec.resourceVersion: {text}"))
            })?;
            if asked > current {
                return Err(ApiError::too_large_resource_version(asked, current));
            }
            asked
        }
    };
    let compacted = store
        .compact(revision)
        .await
        .map_err(ApiError::from_storage)?;
    let object = action_object(
        "Compaction",
        format!("compaction-{compacted}"),
        spec,
        json!({"resourceVersion": compacted.to_string()}),
    );
    Ok(call.respond(StatusCode::CREATED, &object))
}

async fn requests(call: &Call, method: Method) -> ApiResult<Response> {
    let resource = &call.target.resource;
    let verb = verb(call, &method)?;
    call.require_verb(verb)?;
    let Some(log) = call.state.request_log() else {
        return Err(ApiError::unavailable(
            "the request log is off (kubemock serve --request-log-size 0)",
        ));
    };
    match verb {
        "get" => {
            let name = call.target.name.as_deref().unwrap_or("");
            let entry = meta::parse_uint(name)
                .and_then(|sequence| log.get(sequence).map(|e| (sequence, e)))
                .ok_or_else(|| ApiError::not_found(resource, name))?;
            Ok(call.respond(StatusCode::OK, &entry.1.to_object(entry.0)))
        }
        "list" => list(call, log),
        "watch" => watch(call, log).await,
        _ => {
            let dry_run = call.dry_run("DeleteOptions")?;
            if !dry_run {
                log.clear();
            }
            let status = json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"group": GROUP, "kind": "requests"},
            });
            Ok(call.respond(StatusCode::OK, &status))
        }
    }
}

/// The selectors of a list or watch of the log: labels (the test label) and the fields of
/// `SELECTABLE_FIELDS`, parsed by apimachinery's one field-selector parser.
struct Selectors {
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Selectors {
    fn parse(call: &Call) -> ApiResult<Selectors> {
        let labels = LabelSelector::parse(call.query.get("labelSelector").unwrap_or(""))
            .map_err(ApiError::bad_request)?;
        let fields = FieldSelector::parse(call.query.get("fieldSelector").unwrap_or(""))
            .map_err(|error| ApiError::bad_request(error.to_string()))?;
        if let Some(unknown) = fields
            .requirements()
            .find(|r| !SELECTABLE_FIELDS.contains(&r.field.as_str()))
        {
            return Err(ApiError::bad_request(format!(
                "field label not supported: {}",
                unknown.field
            )));
        }
        Ok(Selectors { labels, fields })
    }

    fn matches(&self, sequence: u64, entry: &Entry) -> bool {
        let selectable = Selectable { sequence, entry };
        self.labels.matches(&selectable) && self.fields.matches(&selectable)
    }
}

/// `GET requests`: the entries, oldest first, as a `RequestList`.
fn list(call: &Call, log: &RequestLog) -> ApiResult<Response> {
    let selectors = Selectors::parse(call)?;
    let limit = match call.query.get("limit").unwrap_or("") {
        "" | "0" => usize::MAX,
        text => meta::parse_uint(text)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| ApiError::bad_request(format!("invalid limit: {text}")))?,
    };
    let after =
        match call.query.get("continue").unwrap_or("") {
            "" => None,
            token => Some(meta::parse_uint(token).ok_or_else(|| {
                ApiError::bad_request(format!("continue key is not valid: {token}"))
            })?),
        };
    let page = log
        .read_after(after, limit.saturating_add(1), |sequence, entry| {
            selectors.matches(sequence, entry)
        })
        .map_err(|evicted| expired(after.unwrap_or(0), evicted.through))?;
    let more = page.entries.len() > limit;
    let items: Vec<Value> = page
        .entries
        .iter()
        .take(limit)
        .map(|(sequence, entry)| item(entry.to_object(*sequence)))
        .collect();
    let mut metadata = serde_json::Map::new();
    metadata.insert("resourceVersion".to_owned(), json!(page.last.to_string()));
    if more && let Some((sequence, _)) = page.entries.get(limit.saturating_sub(1)) {
        metadata.insert("continue".to_owned(), json!(sequence.to_string()));
    }
    let list = json!({
        "kind": "RequestList",
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": metadata,
        "items": items,
    });
    Ok(call.respond_list(StatusCode::OK, &list))
}

/// A list item: the object as a list carries it (no `kind` and `apiVersion`, as upstream's
/// lists of typed objects).
fn item(mut object: Value) -> Value {
    if let Value::Object(map) = &mut object {
        map.shift_remove("kind");
        map.shift_remove("apiVersion");
    }
    object
}

/// 410 for a read from before entries the full log dropped.
fn expired(asked: u64, through: u64) -> ApiError {
    ApiError::expired(format!(
        "too old resource version: {asked} ({})",
        through.saturating_add(1)
    ))
}

/// What a watch of the log asks for.
struct WatchRequest {
    selectors: Selectors,
    /// Entries after this sequence are sent (`None`: every entry the log holds).
    after: Option<u64>,
    /// The first entries are sent as the initial state (then a bookmark marks their end when
    /// `sendInitialEvents` asked for it).
    initial_events_end: bool,
    bookmarks: bool,
    timeout: Duration,
}

impl WatchRequest {
    fn parse(call: &Call) -> ApiResult<WatchRequest> {
        let query = &call.query;
        let selectors = Selectors::parse(call)?;
        let revision = meta::parse_resource_version(query.get("resourceVersion").unwrap_or(""))?;
        let send_initial = query
            .get("sendInitialEvents")
            .map(|_| query.flag("sendInitialEvents"));
        // Unset or "0": the retained entries are the current state, sent first.
        let initial = send_initial.unwrap_or(revision.unwrap_or(0) == 0);
        let timeout =
            match query.get("timeoutSeconds").unwrap_or("") {
                "" => DEFAULT_WATCH_TIMEOUT,
                text => Duration::from_secs(meta::parse_uint(text).ok_or_else(|| {
                    ApiError::bad_request(format!("invalid timeoutSeconds: {text}"))
                })?),
            };
        Ok(WatchRequest {
            selectors,
            after: if initial { None } else { revision },
            initial_events_end: send_initial == Some(true),
            bookmarks: query.flag("allowWatchBookmarks"),
            timeout,
        })
    }
}

/// How a watch's events are written.
struct Writer {
    sender: mpsc::Sender<Bytes>,
    encoding: Encoding,
    tables: Option<WatchTables>,
}

impl Writer {
    /// Sends one event; false once the client has gone.
    async fn send(&self, kind: &str, object: Value) -> bool {
        let object = match &self.tables {
            Some(tables) => tables.event_object(kind, object),
            None => object,
        };
        self.sender
            .send(self.encoding.watch_event(kind, object))
            .await
            .is_ok()
    }

    fn bookmark(sequence: u64, initial_events_end: bool) -> Value {
        let mut metadata = json!({"resourceVersion": sequence.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        json!({"kind": "Request", "apiVersion": format!("{GROUP}/{VERSION}"), "metadata": metadata})
    }
}

/// `GET requests?watch=true`.
async fn watch(call: &Call, log: &RequestLog) -> ApiResult<Response> {
    let request = WatchRequest::parse(call)?;
    let encoding = call.negotiated.watch_encoding()?;
    let tables = match call.negotiated.conversion {
        Some(Conversion::Table(version)) => Some(
            TableRequest::new(version, &call.query)?
                .for_watch(call.target.resource.printer.clone()),
        ),
        _ => None,
    };
    let (sender, receiver) = mpsc::channel::<Bytes>(WATCH_CHANNEL);
    let writer = Writer {
        sender,
        encoding,
        tables,
    };
    let log = log.clone();
    let state = call.state.clone();
    let bookmark_interval = state.config().bookmark_interval;
    let tasks = state.tasks().clone();
    tasks.spawn(async move {
        let shutdown = state.shutdown().clone();
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = tokio::time::sleep(request.timeout) => {}
            () = follow(&log, &writer, &request, bookmark_interval) => {}
        }
    });
    let body = Body::from_stream(futures_util::stream::unfold(
        receiver,
        |mut receiver| async move {
            receiver
                .recv()
                .await
                .map(|bytes| (Ok::<_, Infallible>(bytes), receiver))
        },
    ));
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, encoding.watch_content_type())],
        body,
    )
        .into_response())
}

/// Sends the entries after `request.after`, then every new one, until the client goes or the
/// log drops entries the watch has not sent (then an ERROR 410).
async fn follow(log: &RequestLog, writer: &Writer, request: &WatchRequest, bookmarks: Duration) {
    let mut after = request.after;
    let mut initial = request.initial_events_end;
    let mut ticker = tokio::time::interval(bookmarks);
    ticker.tick().await;
    loop {
        let pushed = log.pushed();
        tokio::pin!(pushed);
        pushed.as_mut().enable();
        let page = match log.read_after(after, WATCH_BATCH, |sequence, entry| {
            request.selectors.matches(sequence, entry)
        }) {
            Ok(page) => page,
            Err(evicted) => {
                let error = expired(after.unwrap_or(0), evicted.through);
                writer.send("ERROR", error.to_json()).await;
                return;
            }
        };
        let full = page.entries.len() == WATCH_BATCH;
        for (sequence, entry) in &page.entries {
            if !writer.send("ADDED", entry.to_object(*sequence)).await {
                return;
            }
            after = Some(*sequence);
        }
        if full {
            continue;
        }
        let seen = page.last.max(after.unwrap_or(0));
        after = Some(seen);
        if initial {
            initial = false;
            if request.bookmarks && !writer.send("BOOKMARK", Writer::bookmark(seen, true)).await {
                return;
            }
        }
        tokio::select! {
            () = &mut pushed => {}
            _ = ticker.tick(), if request.bookmarks => {
                if !writer.send("BOOKMARK", Writer::bookmark(seen, false)).await {
                    return;
                }
            }
            () = writer.sender.closed() => return,
        }
    }
}
