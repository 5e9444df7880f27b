//! The request log (`testing.kubemock.dev/v1` `requests`): every API request the server
//! answered, kept in memory so that a test can assert on what a client sent ("exactly one
//! PATCH, with this field manager") through the API itself, from any language. No real
//! cluster offers this; the audit log (`audit`) is a file, policy-driven and off by default.
//!
//! The layer sits in the pipeline after authentication and impersonation (so it sees who
//! the request acts as) and before the in-flight limit (so that 429s are logged). It reuses
//! what the pipeline computed already: the [`RequestInfo`] of `handlers::classify` (the verb
//! and the parsed target) and the requester of `authenticate`. Its cost on the request path
//! is a handful of small copies (path and query, user agent, content types, test tag), two
//! reads of the store's revision and one push under a short lock: nothing is parsed or
//! encoded there. The `Request` object a client reads is built from the entry when it is
//! read (`Entry::to_object`), and field selectors match the entry itself (`Fields`), so a
//! filtered list builds objects only for what it returns.
//!
//! Invariants: the log holds at most `size` entries and, with bodies on, at most
//! [`BODY_BUDGET_BYTES`] of bodies (the oldest entries go first); sequence numbers (the
//! objects' names and resourceVersions) strictly increase and are never reused, also across
//! a clear. Requests to the `testing.kubemock.dev` group itself are not logged: reading the
//! log must not grow it. Requests that fail authentication are not logged (they never reach
//! the layer).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, header};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures_util::future::BoxFuture;
use kubemock_apimachinery::fields::Fields;
use kubemock_apimachinery::labels::Labels;
use kubemock_storage::Kv;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use crate::identity::{self, UserInfo};
use crate::query::Query;
use crate::registry::testing::{GROUP, VERSION};
use crate::target::{RequestInfo, Target};

/// Entries kept by default (`--request-log-size`): a long test suite's worth of requests at
/// about 530 bytes each with their targets, some 53 MB when full (heaptrack on the 10,000-pod
/// benchmark, 2026-11-29: 38 MB for its some 70,000 requests).
pub const DEFAULT_REQUEST_LOG_SIZE: usize = 100_000;

/// With bodies on, bytes of one request or response body kept at most; a longer body is
/// noted as truncated and not kept.
pub const MAX_LOGGED_BODY_BYTES: usize = 64 * 1024;

/// With bodies on, bytes of bodies the log keeps in all; past it the oldest entries go, so
/// that bodies cannot grow the log past this whatever its size.
pub const BODY_BUDGET_BYTES: usize = 256 * 1024 * 1024;

/// The request header that tags a request with a test's name.
pub(crate) const TEST_HEADER: &str = "x-kubemock-test";

/// The label a tagged request's object carries (its value: the test's name).
pub(crate) const TEST_LABEL: &str = "testing.kubemock.dev/test";

/// The fields a request log's field selector may name.
pub(crate) const SELECTABLE_FIELDS: &[&str] = &[
    "metadata.name",
    "verb",
    "method",
    "user",
    "userAgent",
    "group",
    "version",
    "resource",
    "subresource",
    "namespace",
    "name",
    "path",
    "fieldManager",
    "dryRun",
    "code",
    "test",
];

/// How the server keeps its request log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLogConfig {
    /// Entries kept at most (`--request-log-size`); 0 turns the log off (the layer leaves
    /// the pipeline and `requests` answers 503). Default [`DEFAULT_REQUEST_LOG_SIZE`].
    pub size: usize,
    /// Keep request and response bodies (`--request-log-bodies`), each up to
    /// [`MAX_LOGGED_BODY_BYTES`]. Default false.
    pub bodies: bool,
}

impl Default for RequestLogConfig {
    fn default() -> Self {
        RequestLogConfig {
            size: DEFAULT_REQUEST_LOG_SIZE,
            bodies: false,
        }
    }
}

/// The log: a cheap-clone handle. The pipeline's layer pushes, `handlers::testing` reads.
#[derive(Clone)]
pub(crate) struct RequestLog {
    inner: Arc<Inner>,
}

struct Inner {
    config: RequestLogConfig,
    /// The entries, oldest first. Written by the layer (push) and by a clear; the lock is held
    /// for a push or a copy of `Arc`s, never across an await.
    ring: Mutex<Ring>,
    /// Woken after every push, for the watches.
    pushed: Notify,
}

#[derive(Default)]
struct Ring {
    /// `(sequence, entry)`, sequences increasing.
    entries: VecDeque<(u64, Arc<Entry>)>,
    /// The last sequence handed out (0: none yet).
    last: u64,
    /// The highest sequence dropped because the log was full (a watch from before it has
    /// missed entries: 410).
    evicted_through: u64,
    /// Bytes of bodies held.
    body_bytes: usize,
}

/// What a page of the log holds.
pub(crate) struct Page {
    /// Entries after the asked sequence, oldest first.
    pub(crate) entries: Vec<(u64, Arc<Entry>)>,
    /// The last sequence handed out when the page was read.
    pub(crate) last: u64,
}

/// Entries after this sequence were dropped because the log was full.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Evicted {
    /// The highest sequence dropped.
    pub(crate) through: u64,
}

impl RequestLog {
    /// The log `config` asks for; `None` when it is off.
    pub(crate) fn new(config: RequestLogConfig) -> Option<RequestLog> {
        (config.size > 0).then(|| RequestLog {
            inner: Arc::new(Inner {
                config,
                ring: Mutex::new(Ring::default()),
                pushed: Notify::new(),
            }),
        })
    }

    /// Appends `entry`, dropping the oldest ones past the size or the body budget.
    fn push(&self, entry: Entry) {
        let bytes = entry.body_bytes();
        let entry = Arc::new(entry);
        let mut ring = self.inner.ring.lock();
        ring.last += 1;
        let sequence = ring.last;
        ring.body_bytes += bytes;
        ring.entries.push_back((sequence, entry));
        while ring.entries.len() > self.inner.config.size
            || (ring.body_bytes > BODY_BUDGET_BYTES && ring.entries.len() > 1)
        {
            let Some((dropped, old)) = ring.entries.pop_front() else {
                break;
            };
            ring.evicted_through = dropped;
            ring.body_bytes -= old.body_bytes();
        }
        drop(ring);
        self.inner.pushed.notify_waiters();
    }

    /// The entries after sequence `after` (`None`: every entry the log holds), up to `limit`
    /// of them for which `keep` holds; an error when entries after `after` were dropped
    /// because the log was full.
    pub(crate) fn read_after(
        &self,
        after: Option<u64>,
        limit: usize,
        keep: impl Fn(u64, &Entry) -> bool,
    ) -> Result<Page, Evicted> {
        let ring = self.inner.ring.lock();
        let after = after.unwrap_or(0);
        if after > 0 && after < ring.evicted_through {
            return Err(Evicted {
                through: ring.evicted_through,
            });
        }
        let start = ring
            .entries
            .partition_point(|(sequence, _)| *sequence <= after);
        let entries = ring
            .entries
            .range(start..)
            .filter(|(sequence, entry)| keep(*sequence, entry))
            .take(limit)
            .map(|(sequence, entry)| (*sequence, Arc::clone(entry)))
            .collect();
        Ok(Page {
            entries,
            last: ring.last,
        })
    }

    /// The entry of sequence `sequence`, if the log still holds it.
    pub(crate) fn get(&self, sequence: u64) -> Option<Arc<Entry>> {
        let ring = self.inner.ring.lock();
        let at = ring.entries.partition_point(|(s, _)| *s < sequence);
        ring.entries
            .get(at)
            .filter(|(s, _)| *s == sequence)
            .map(|(_, entry)| Arc::clone(entry))
    }

    /// Empties the log (`DELETE .../requests`); sequences go on from where they were, so a
    /// watch is not confused. Returns how many entries went.
    pub(crate) fn clear(&self) -> usize {
        let mut ring = self.inner.ring.lock();
        let cleared = ring.entries.len();
        ring.entries.clear();
        ring.body_bytes = 0;
        cleared
    }

    /// Resolves after the next push (create the future, `enable` it, then read, then await).
    pub(crate) fn pushed(&self) -> tokio::sync::futures::Notified<'_> {
        self.inner.pushed.notified()
    }
}

/// One logged request: what the pipeline knew of it, copied (small strings) or shared
/// (`Arc`s), nothing parsed; [`Entry::to_object`] builds its `Request` object.
pub(crate) struct Entry {
    /// When it arrived.
    time: SystemTime,
    /// From its arrival to its answer's headers.
    latency: Duration,
    /// Who it was made by (after impersonation).
    user: Arc<UserInfo>,
    /// The request's texts (URI, user agent, test tag, content type), in one allocation.
    texts: Texts,
    method: Method,
    /// The pipeline's verb label (`GET`, `LIST`, `APPLY`, ...).
    verb_label: &'static str,
    /// What it addressed, for resource requests.
    target: Option<Arc<Target>>,
    /// The answer's `Content-Type` (the server's own header value: a clone costs nothing).
    response_content_type: Option<HeaderValue>,
    code: u16,
    /// The store's revision as it arrived, and as it was answered.
    revision_before: u64,
    revision_after: u64,
    /// With bodies on: the bodies (`None`: none, or too long, see `*_truncated`).
    request_body: Option<Bytes>,
    request_truncated: bool,
    response_body: Option<Bytes>,
    response_truncated: bool,
}

/// What the layer copies from a request before it goes on.
struct Head {
    time: SystemTime,
    start: Instant,
    user: Arc<UserInfo>,
    texts: Texts,
    method: Method,
    verb_label: &'static str,
    target: Option<Arc<Target>>,
}

/// A request's texts, copied into one string (never slices of the connection's read buffer,
/// which they would keep alive): the path and query, then the user agent, the test tag and
/// the content type when present, each located by its byte range.
struct Texts {
    text: Box<str>,
    /// End of the path (and start of `?query`), end of the URI.
    path_end: u32,
    uri_end: u32,
    user_agent: Option<(u32, u32)>,
    test: Option<(u32, u32)>,
    content_type: Option<(u32, u32)>,
}

impl Texts {
    /// Copies what the log keeps from `request`'s URI and headers.
    fn of(request: &Request) -> Texts {
        let uri = request.uri();
        let headers = request.headers();
        let path = uri.path();
        let query = uri.query();
        let values = [
            headers.get(header::USER_AGENT),
            headers.get(TEST_HEADER),
            headers.get(header::CONTENT_TYPE),
        ];
        let length = path.len()
            + query.map_or(0, |q| q.len() + 1)
            + values.iter().flatten().map(|v| v.len()).sum::<usize>();
        let mut text = String::with_capacity(length);
        text.push_str(path);
        let path_end = offset(&text);
        if let Some(query) = query {
            text.push('?');
            text.push_str(query);
        }
        let uri_end = offset(&text);
        let [user_agent, test, content_type] = values.map(|value| {
            value.map(|value| {
                let start = offset(&text);
                text.push_str(&String::from_utf8_lossy(value.as_bytes()));
                (start, offset(&text))
            })
        });
        Texts {
            text: text.into_boxed_str(),
            path_end,
            uri_end,
            user_agent,
            test,
            content_type,
        }
    }

    fn slice(&self, (start, end): (u32, u32)) -> &str {
        self.text.get(start as usize..end as usize).unwrap_or("")
    }

    fn path(&self) -> &str {
        self.slice((0, self.path_end))
    }

    fn query(&self) -> &str {
        self.slice((self.path_end, self.uri_end))
            .strip_prefix('?')
            .unwrap_or("")
    }

    fn user_agent(&self) -> Option<&str> {
        self.user_agent.map(|range| self.slice(range))
    }

    fn test(&self) -> Option<&str> {
        self.test.map(|range| self.slice(range))
    }

    fn content_type(&self) -> Option<&str> {
        self.content_type.map(|range| self.slice(range))
    }
}

/// The length of `text` as an offset (request heads are far below 4 GiB: hyper refuses heads
/// past its buffer limit).
fn offset(text: &str) -> u32 {
    u32::try_from(text.len()).unwrap_or(u32::MAX)
}

impl Head {
    fn of(request: &Request, info: Option<&RequestInfo>) -> Head {
        Head {
            time: SystemTime::now(),
            start: Instant::now(),
            user: identity::requester(request.extensions()),
            texts: Texts::of(request),
            method: request.method().clone(),
            verb_label: info.map_or("other", |info| info.labels.verb),
            target: info.and_then(|info| info.target.clone()),
        }
    }
}

impl Entry {
    fn body_bytes(&self) -> usize {
        self.request_body.as_ref().map_or(0, Bytes::len)
            + self.response_body.as_ref().map_or(0, Bytes::len)
    }

    fn path(&self) -> &str {
        self.texts.path()
    }

    fn query(&self) -> &str {
        self.texts.query()
    }

    fn response_content_type(&self) -> Option<&str> {
        self.response_content_type
            .as_ref()
            .and_then(|v| v.to_str().ok())
    }

    /// The Kubernetes verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`); for non-resource requests the method in lower case, as
    /// upstream's `RequestInfo` has it.
    pub(crate) fn verb(&self) -> &'static str {
        kubernetes_verb(self.verb_label, self.target.as_deref(), &self.method)
    }

    fn field_manager(&self) -> Option<String> {
        Query::parse(Some(self.query()))
            .get("fieldManager")
            .map(str::to_owned)
    }

    fn dry_run(&self) -> bool {
        !Query::parse(Some(self.query())).all("dryRun").is_empty()
    }

    /// The `Request` object of sequence `sequence`.
    pub(crate) fn to_object(&self, sequence: u64) -> Value {
        let since_epoch = self.time.duration_since(UNIX_EPOCH).unwrap_or_default();
        let seconds = i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX);
        let mut metadata = Map::new();
        metadata.insert("name".to_owned(), json!(sequence.to_string()));
        metadata.insert("resourceVersion".to_owned(), json!(sequence.to_string()));
        metadata.insert(
            "creationTimestamp".to_owned(),
            json!(kubemock_apimachinery::time::rfc3339(seconds)),
        );
        if let Some(test) = self.texts.test() {
            metadata.insert("labels".to_owned(), json!({ TEST_LABEL: test }));
        }
        let mut object = Map::new();
        object.insert("apiVersion".to_owned(), json!(format!("{GROUP}/{VERSION}")));
        object.insert("kind".to_owned(), json!("Request"));
        object.insert("metadata".to_owned(), Value::Object(metadata));
        object.insert(
            "time".to_owned(),
            json!(kubemock_apimachinery::time::rfc3339_micro(
                seconds,
                since_epoch.subsec_nanos()
            )),
        );
        object.insert("user".to_owned(), self.user.to_json());
        let mut put = |key: &str, value: Value| {
            object.insert(key.to_owned(), value);
        };
        if let Some(agent) = self.texts.user_agent() {
            put("userAgent", json!(agent));
        }
        put("verb", json!(self.verb()));
        put("method", json!(self.method.as_str()));
        if let Some(target) = &self.target {
            let resource = &target.resource;
            put("group", json!(resource.group));
            put("version", json!(resource.version));
            put("resource", json!(resource.plural));
            if let Some(subresource) = &target.subresource {
                put("subresource", json!(subresource));
            }
            if let Some(namespace) = &target.namespace {
                put("namespace", json!(namespace));
            }
            if let Some(name) = &target.name {
                put("name", json!(name));
            }
        }
        put("path", json!(self.path()));
        if !self.query().is_empty() {
            put("query", json!(self.query()));
        }
        if let Some(manager) = self.field_manager() {
            put("fieldManager", json!(manager));
        }
        put("dryRun", json!(self.dry_run()));
        if let Some(test) = self.texts.test() {
            put("test", json!(test));
        }
        put("code", json!(self.code));
        put("latency", json!(format!("{:?}", self.latency)));
        put(
            "latencyMicroseconds",
            json!(u64::try_from(self.latency.as_micros()).unwrap_or(u64::MAX)),
        );
        if let Some(content_type) = self.texts.content_type() {
            put("requestContentType", json!(content_type));
        }
        if let Some(content_type) = self.response_content_type() {
            put("responseContentType", json!(content_type));
        }
        put(
            "resourceVersionBefore",
            json!(self.revision_before.to_string()),
        );
        put(
            "resourceVersionAfter",
            json!(self.revision_after.to_string()),
        );
        if let Some(body) = &self.request_body {
            put("requestBody", body_value(self.texts.content_type(), body));
        }
        if self.request_truncated {
            put("requestBodyTruncated", json!(true));
        }
        if let Some(body) = &self.response_body {
            put(
                "responseBody",
                body_value(self.response_content_type(), body),
            );
        }
        if self.response_truncated {
            put("responseBodyTruncated", json!(true));
        }
        Value::Object(object)
    }
}

/// A logged body as JSON: decoded when its media type is JSON, YAML or Kubernetes protobuf,
/// else its text.
fn body_value(content_type: Option<&str>, body: &Bytes) -> Value {
    crate::audit::decode(content_type, body)
        .unwrap_or_else(|| Value::String(String::from_utf8_lossy(body).into_owned()))
}

/// The Kubernetes verb of a request the pipeline labelled `verb_label` (`GET`, `LIST`,
/// `APPLY`, ...): `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
/// `deletecollection`; for non-resource requests the method in lower case, as upstream's
/// `RequestInfo` has it. The request log and the faults (`fault_layer`) name verbs so.
pub(crate) fn kubernetes_verb(
    verb_label: &str,
    target: Option<&Target>,
    method: &Method,
) -> &'static str {
    let item = target.is_some_and(|t| t.name.is_some());
    match (verb_label, target) {
        ("GET", Some(_)) => "get",
        ("LIST", _) => "list",
        ("WATCH", _) => "watch",
        ("POST", Some(_)) => "create",
        ("PUT", Some(_)) => "update",
        ("PATCH" | "APPLY", Some(_)) => "patch",
        ("DELETE", Some(_)) if item => "delete",
        ("DELETE", Some(_)) => "deletecollection",
        ("CONNECT", _) => "connect",
        _ => match *method {
            Method::GET => "get",
            Method::HEAD => "head",
            Method::POST => "post",
            Method::PUT => "put",
            Method::PATCH => "patch",
            Method::DELETE => "delete",
            Method::OPTIONS => "options",
            _ => "other",
        },
    }
}

/// An entry with its sequence, as field and label selectors read it.
pub(crate) struct Selectable<'a> {
    pub(crate) sequence: u64,
    pub(crate) entry: &'a Entry,
}

impl Fields for Selectable<'_> {
    fn field(&self, name: &str) -> Option<std::borrow::Cow<'_, str>> {
        use std::borrow::Cow::{Borrowed, Owned};
        let entry = self.entry;
        let target = entry.target.as_deref();
        fn text(value: Option<&String>) -> Option<std::borrow::Cow<'_, str>> {
            value.map(|v| std::borrow::Cow::Borrowed(v.as_str()))
        }
        match name {
            "metadata.name" => Some(Owned(self.sequence.to_string())),
            "verb" => Some(Borrowed(entry.verb())),
            "method" => Some(Borrowed(entry.method.as_str())),
            "user" => Some(Borrowed(entry.user.name.as_str())),
            "userAgent" => entry.texts.user_agent().map(Borrowed),
            "group" => target.map(|t| Borrowed(t.resource.group.as_str())),
            "version" => target.map(|t| Borrowed(t.resource.version.as_str())),
            "resource" => target.map(|t| Borrowed(t.resource.plural.as_str())),
            "subresource" => text(target.and_then(|t| t.subresource.as_ref())),
            "namespace" => text(target.and_then(|t| t.namespace.as_ref())),
            "name" => text(target.and_then(|t| t.name.as_ref())),
            "path" => Some(Borrowed(entry.path())),
            "fieldManager" => entry.field_manager().map(Owned),
            "dryRun" => Some(Borrowed(if entry.dry_run() { "true" } else { "false" })),
            "code" => Some(Owned(entry.code.to_string())),
            "test" => entry.texts.test().map(Borrowed),
            _ => None,
        }
    }
}

impl Labels for Selectable<'_> {
    fn label(&self, key: &str) -> Option<std::borrow::Cow<'_, str>> {
        (key == TEST_LABEL)
            .then(|| self.entry.texts.test().map(std::borrow::Cow::Borrowed))
            .flatten()
    }
}

/// The layer (see the module documentation).
#[derive(Clone)]
pub(crate) struct RequestLogLayer {
    log: RequestLog,
    store: Arc<dyn Kv>,
}

impl RequestLogLayer {
    pub(crate) fn new(log: RequestLog, store: Arc<dyn Kv>) -> Self {
        RequestLogLayer { log, store }
    }
}

impl<S> tower::Layer<S> for RequestLogLayer {
    type Service = Logged<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Logged {
            layer: self.clone(),
            inner,
        }
    }
}

/// The service of [`RequestLogLayer`].
#[derive(Clone)]
pub(crate) struct Logged<S> {
    layer: RequestLogLayer,
    inner: S,
}

impl<S> tower::Service<Request> for Logged<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        // The ready service goes into the future; a clone stays for the next call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let info = request.extensions().get::<RequestInfo>();
        let testing = info
            .and_then(|info| info.target.as_ref())
            .is_some_and(|target| target.resource.group == GROUP);
        if testing {
            return Box::pin(inner.call(request));
        }
        let head = Head::of(&request, info);
        let long_running = info.is_some_and(|info| info.long_running);
        let bodies = self.layer.log.inner.config.bodies;
        let request_body = bodies.then(|| {
            let captured = Arc::new(Mutex::new(Captured::default()));
            let body = std::mem::take(request.body_mut());
            *request.body_mut() = Body::new(Tee {
                inner: body,
                captured: Some(Arc::clone(&captured)),
                on_end: None,
            });
            captured
        });
        let layer = self.layer.clone();
        Box::pin(async move {
            let revision_before = revision(layer.store.as_ref()).await;
            let mut response = inner.call(request).await?;
            let latency = head.start.elapsed();
            let revision_after = revision(layer.store.as_ref()).await;
            let (request_body, request_truncated) = match request_body {
                Some(captured) => captured.lock().take(),
                None => (None, false),
            };
            let entry = Entry {
                time: head.time,
                latency,
                user: head.user,
                texts: head.texts,
                method: head.method,
                verb_label: head.verb_label,
                target: head.target,
                response_content_type: response.headers().get(header::CONTENT_TYPE).cloned(),
                code: response.status().as_u16(),
                revision_before,
                revision_after,
                request_body,
                request_truncated,
                response_body: None,
                response_truncated: false,
            };
            if bodies && !long_running {
                // Logged when the body has gone out (or was dropped), with a copy of it.
                let captured = Arc::new(Mutex::new(Captured::default()));
                let body = std::mem::take(response.body_mut());
                *response.body_mut() = Body::new(Tee {
                    inner: body,
                    captured: Some(Arc::clone(&captured)),
                    on_end: Some(PendingEntry {
                        log: layer.log,
                        entry: Some(entry),
                        captured,
                    }),
                });
            } else {
                layer.log.push(entry);
            }
            Ok(response)
        })
    }
}

/// The store's current revision for an entry (0 if the store cannot say): without a future
/// when the store holds it in memory, as the sled store does.
async fn revision(store: &dyn Kv) -> u64 {
    match store.revision_now() {
        Some(revision) => revision,
        None => store.current_revision().await.unwrap_or(0),
    }
}

/// Bytes of a body copied as it streams past, up to [`MAX_LOGGED_BODY_BYTES`].
#[derive(Default)]
struct Captured {
    bytes: BytesMut,
    /// More than the limit came: the copy was dropped.
    truncated: bool,
}

impl Captured {
    /// The copy (`None` when empty or truncated) and whether it was truncated.
    fn take(&mut self) -> (Option<Bytes>, bool) {
        let bytes = std::mem::take(&mut self.bytes).freeze();
        (
            (!bytes.is_empty() && !self.truncated).then_some(bytes),
            self.truncated,
        )
    }
}

/// An entry waiting for its response body to end; pushed when dropped.
struct PendingEntry {
    log: RequestLog,
    entry: Option<Entry>,
    captured: Arc<Mutex<Captured>>,
}

impl Drop for PendingEntry {
    fn drop(&mut self) {
        if let Some(mut entry) = self.entry.take() {
            (entry.response_body, entry.response_truncated) = self.captured.lock().take();
            self.log.push(entry);
        }
    }
}

/// A body that copies what passes (up to [`MAX_LOGGED_BODY_BYTES`]) and drops `on_end`
/// when it ends or is dropped.
struct Tee {
    inner: Body,
    captured: Option<Arc<Mutex<Captured>>>,
    on_end: Option<PendingEntry>,
}

impl http_body::Body for Tee {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(captured), Some(data)) = (&this.captured, frame.data_ref()) {
                    let mut captured = captured.lock();
                    if captured.bytes.len() + data.len() > MAX_LOGGED_BODY_BYTES {
                        captured.truncated = true;
                        captured.bytes = BytesMut::new();
                    } else if !captured.truncated {
                        captured.bytes.extend_from_slice(data);
                    }
                }
            }
            Poll::Ready(None) => drop(this.on_end.take()),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use axum::http::HeaderMap;

    fn entry(uri: &str, method: Method, test: Option<&str>) -> Entry {
        let registry = Registry::builtin();
        let parsed: axum::http::Uri = uri.parse().unwrap();
        let info = RequestInfo::classify(&registry, &method, &parsed, &HeaderMap::new());
        let mut request = Request::builder()
            .method(method.clone())
            .uri(uri)
            .header(header::USER_AGENT, "kubectl/v1.32.0");
        if let Some(test) = test {
            request = request.header(TEST_HEADER, test);
        }
        let request = request.body(Body::empty()).unwrap();
        Entry {
            time: SystemTime::now(),
            latency: Duration::from_micros(1500),
            user: UserInfo::open_mode(),
            texts: Texts::of(&request),
            method,
            verb_label: info.labels.verb,
            target: info.target,
            response_content_type: Some(HeaderValue::from_static("application/json")),
            code: 200,
            revision_before: 7,
            revision_after: 8,
            request_body: None,
            request_truncated: false,
            response_body: None,
            response_truncated: false,
        }
    }

    fn log(size: usize) -> RequestLog {
        RequestLog::new(RequestLogConfig {
            size,
            bodies: false,
        })
        .unwrap()
    }

    #[test]
    fn a_full_log_drops_its_oldest_entries_and_reading_from_before_them_is_refused() {
        let log = log(3);
        for _ in 0..5 {
            log.push(entry("/api/v1/namespaces/d/pods", Method::GET, None));
        }
        let page = log.read_after(Some(2), usize::MAX, |_, _| true).unwrap();
        let sequences: Vec<u64> = page.entries.iter().map(|(s, _)| *s).collect();
        assert_eq!(sequences, [3, 4, 5]);
        assert_eq!(page.last, 5);
        assert_eq!(
            log.read_after(Some(1), 10, |_, _| true)
                .err()
                .unwrap()
                .through,
            2
        );
        assert!(log.get(2).is_none());
        assert!(log.get(4).is_some());
    }

    #[test]
    fn a_clear_empties_the_log_and_sequences_go_on() {
        let log = log(10);
        log.push(entry("/api/v1/pods", Method::GET, None));
        log.push(entry("/api/v1/pods", Method::GET, None));
        assert_eq!(log.clear(), 2);
        assert!(
            log.read_after(None, 10, |_, _| true)
                .unwrap()
                .entries
                .is_empty()
        );
        log.push(entry("/api/v1/pods", Method::GET, None));
        let page = log.read_after(None, 10, |_, _| true).unwrap();
        assert_eq!(page.entries[0].0, 3);
    }

    #[test]
    fn objects_carry_what_the_request_asked_and_selectors_read_the_entry() {
        let e = entry(
            "/apis/apps/v1/namespaces/ns/deployments/web?fieldManager=me&dryRun=All",
            Method::PATCH,
            Some("t1"),
        );
        let object = e.to_object(42);
        assert_eq!(object["metadata"]["name"], "42");
        assert_eq!(object["metadata"]["labels"][TEST_LABEL], "t1");
        assert_eq!(object["verb"], "patch");
        assert_eq!(object["group"], "apps");
        assert_eq!(object["resource"], "deployments");
        assert_eq!(object["namespace"], "ns");
        assert_eq!(object["name"], "web");
        assert_eq!(object["fieldManager"], "me");
        assert_eq!(
            object["path"],
            "/apis/apps/v1/namespaces/ns/deployments/web"
        );
        assert_eq!(object["query"], "fieldManager=me&dryRun=All");
        assert_eq!(object["userAgent"], "kubectl/v1.32.0");
        assert_eq!(object["test"], "t1");
        assert_eq!(object["responseContentType"], "application/json");
        assert!(object.get("requestContentType").is_none());
        let plain = entry("/version", Method::GET, None).to_object(1);
        assert_eq!(plain["path"], "/version");
        assert!(plain.get("query").is_none() && plain.get("test").is_none());
        assert_eq!(object["dryRun"], true);
        assert_eq!(object["user"]["username"], "system:admin");
        assert_eq!(object["resourceVersionBefore"], "7");
        assert_eq!(object["latencyMicroseconds"], 1500);
        let selectable = Selectable {
            sequence: 42,
            entry: &e,
        };
        let selector = kubemock_apimachinery::fields::Selector::parse(
            "verb=patch,resource=deployments,fieldManager=me,dryRun=true,test=t1,code=200",
        )
        .unwrap();
        assert!(selector.matches(&selectable));
        let selector = kubemock_apimachinery::fields::Selector::parse("verb=update").unwrap();
        assert!(!selector.matches(&selectable));
        let labels =
            kubemock_apimachinery::labels::Selector::parse(&format!("{TEST_LABEL}=t1")).unwrap();
        assert!(labels.matches(&selectable));
    }

    #[test]
    fn verbs_are_the_kubernetes_verbs() {
        for (uri, method, verb) in [
            ("/api/v1/namespaces/d/pods/p", Method::GET, "get"),
            ("/api/v1/namespaces/d/pods", Method::GET, "list"),
            ("/api/v1/namespaces/d/pods?watch=1", Method::GET, "watch"),
            ("/api/v1/namespaces/d/pods", Method::POST, "create"),
            ("/api/v1/namespaces/d/pods/p", Method::PUT, "update"),
            ("/api/v1/namespaces/d/pods/p", Method::DELETE, "delete"),
            (
                "/api/v1/namespaces/d/pods",
                Method::DELETE,
                "deletecollection",
            ),
            ("/version", Method::GET, "get"),
            ("/api/v1/namespaces/d/pods/p/status", Method::PATCH, "patch"),
        ] {
            assert_eq!(entry(uri, method, None).verb(), verb, "{uri}");
        }
    }
}
