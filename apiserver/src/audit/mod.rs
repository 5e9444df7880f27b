//! Audit logging, as kube-apiserver's (`pkg/endpoints/filters/audit.go`,
//! `pkg/audit/request.go`, `plugin/pkg/audit/log/backend.go`): with `--audit-log-path` and
//! `--audit-policy-file`, every request the policy gives a level other than `None` is written
//! to the log as `audit.k8s.io/v1` `Event`s, one a line, one per stage: `RequestReceived`,
//! `ResponseStarted` (long-running requests: watches, logs, exec), `ResponseComplete`, or
//! `Panic`. The layer sits where upstream's does: after authentication (the policy sees the
//! authenticated user, and a failed authentication is audited by
//! [`failed_authentication`], as upstream's `WithFailedAuthenticationAudit`), before
//! impersonation, the in-flight limit and authorization, which leave their notes (the
//! impersonated user, the `authorization.k8s.io/decision` and `reason` annotations) in the
//! request's [`AuditHandle`]. Every response of an audited server carries `Audit-ID`.
//!
//! What the handlers decode upstream is taken from the wire here: the request body (create,
//! update, patch, delete) and the response body (RequestResponse) are copied as they stream
//! past and decoded (JSON, YAML or protobuf) into JSON when the response completes. Without
//! audit configured the layer is not in the pipeline at all.

mod event;
mod policy;
mod sink;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use futures_util::FutureExt as _;
use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::{Value, json};

use policy::Stage;
pub use policy::{Level, Policy, PolicyError};
pub use sink::AuditLog;

use crate::authz::Attributes;
use crate::authz::request::attributes_of;
use crate::identity::{self, UserInfo};
use crate::status::{ApiError, MAX_BODY_BYTES};
use crate::target::RequestInfo;
use event::{Event, ObjectRef, micro_now, status_code, status_of};
use policy::{Decision, Stages};
pub(crate) use sink::Counts;
use sink::Sink;

/// The response header (and request header, when a front proxy set it) naming the audit ID
/// (`audit.k8s.io/v1` `HeaderAuditID`).
const AUDIT_ID_HEADER: &str = "audit-id";

/// User agents longer than this are cut (`maxUserAgentLength`), with
/// [`USER_AGENT_TRUNCATED`] after them.
const MAX_USER_AGENT: usize = 1024;
const USER_AGENT_TRUNCATED: &str = "...TRUNCATED";

/// Response bodies recorded at RequestResponse at most; a longer one is written without its
/// `responseObject` (upstream records any size).
const MAX_RECORDED_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// A server's audit configuration: the policy and the running log writer. Cloning shares the
/// writer, whose thread ends when the last clone is dropped.
#[derive(Clone, Debug)]
pub struct AuditConfig {
    policy: Arc<Policy>,
    sink: Sink,
}

impl AuditConfig {
    /// Audits by `policy` into `log`, which is opened (created) now.
    pub fn start(policy: Policy, log: &AuditLog) -> std::io::Result<AuditConfig> {
        Ok(AuditConfig {
            policy: Arc::new(policy),
            sink: Sink::start(log)?,
        })
    }

    /// The counters `/metrics` reports.
    pub(crate) fn counts(&self) -> &Counts {
        self.sink.counts()
    }

    /// Waits until every event so far is written and flushed (at shutdown).
    pub(crate) async fn flush(&self) {
        self.sink.flush().await;
    }
}

/// What the layers after the audit layer note for the request's events (upstream's audit
/// context): in the request's extensions when the request is audited.
#[derive(Clone, Default)]
pub(crate) struct AuditHandle(Arc<Mutex<Notes>>);

#[derive(Default)]
struct Notes {
    annotations: BTreeMap<String, String>,
    impersonated: Option<Value>,
}

impl AuditHandle {
    /// The request's handle, when it is audited.
    pub(crate) fn of(extensions: &axum::http::Extensions) -> Option<&AuditHandle> {
        extensions.get::<AuditHandle>()
    }

    /// Adds an annotation (`audit.AddAuditAnnotation`).
    pub(crate) fn annotate(&self, key: &str, value: &str) {
        self.0
            .lock()
            .annotations
            .insert(key.to_owned(), value.to_owned());
    }

    /// Records the user impersonated (`audit.LogImpersonatedUser`).
    pub(crate) fn impersonated(&self, user: &UserInfo) {
        self.0.lock().impersonated = Some(user.to_json());
    }

    fn copy_into(&self, event: &mut Event) {
        let notes = self.0.lock();
        event.annotations.clone_from(&notes.annotations);
        event.impersonated_user.clone_from(&notes.impersonated);
    }
}

/// The layer (see the module documentation).
#[derive(Clone)]
pub(crate) struct AuditLayer {
    config: AuditConfig,
}

impl AuditLayer {
    pub(crate) fn new(config: AuditConfig) -> Self {
        AuditLayer { config }
    }
}

impl<S> tower::Layer<S> for AuditLayer {
    type Service = Audit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Audit {
            config: self.config.clone(),
            inner,
        }
    }
}

/// The service of [`AuditLayer`].
#[derive(Clone)]
pub(crate) struct Audit<S> {
    config: AuditConfig,
    inner: S,
}

impl<S> tower::Service<Request> for Audit<S>
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
        let audit_id = audit_id(request.headers());
        let user = identity::requester(request.extensions());
        let attributes = attributes_of(request.method(), request.uri(), UserInfo::default());
        let decision = self.config.policy.evaluate(&attributes, Some(&user));
        self.config.counts().level(decision.level);
        if decision.level == Level::None {
            return Box::pin(async move {
                let mut response = inner.call(request).await?;
                set_audit_id(&mut response, audit_id);
                Ok(response)
            });
        }
        let mut event = Event::new(decision.level, id_text(&audit_id), micro_now());
        describe_request(&mut event, &request, &attributes, Some(&user));
        let handle = AuditHandle::default();
        request.extensions_mut().insert(handle.clone());
        let long_running = request
            .extensions()
            .get::<RequestInfo>()
            .is_some_and(|info| info.long_running);
        let sink = self.config.sink.clone();
        emit(
            &sink,
            &mut event,
            Stage::RequestReceived,
            decision.omit_stages,
        );
        let wants_body = match attributes.verb.as_str() {
            "create" | "update" => true,
            "patch" | "delete" | "deletecollection" => decision.level >= Level::Request,
            _ => false,
        };
        let request_body = wants_body.then(|| {
            let captured = Arc::new(Mutex::new(Captured::default()));
            let content_type = content_type(request.headers());
            let body = std::mem::take(request.body_mut());
            *request.body_mut() = Body::new(Tee {
                inner: body,
                captured: Some((Arc::clone(&captured), MAX_BODY_BYTES)),
                on_end: None,
            });
            CapturedBody {
                captured,
                content_type,
            }
        });
        let record_response = decision.level == Level::RequestResponse
            && !long_running
            && (attributes.resource_request || is_discovery(&attributes.path));
        let pending = Pending {
            event,
            sink,
            decision,
            handle,
            verb: attributes.verb,
            request_body,
            response_body: None,
            done: false,
        };
        Box::pin(async move {
            let called = AssertUnwindSafe(async move { inner.call(request).await })
                .catch_unwind()
                .await;
            let mut response = match called {
                Ok(Ok(response)) => response,
                Ok(Err(never)) => match never {},
                Err(panic) => {
                    pending.panicked(panic_message(panic.as_ref()));
                    std::panic::resume_unwind(panic)
                }
            };
            set_audit_id(&mut response, audit_id);
            let mut pending = pending;
            pending.responded(&response);
            if long_running {
                pending.handle.copy_into(&mut pending.event);
                let stage = Stage::ResponseStarted;
                emit(
                    &pending.sink,
                    &mut pending.event,
                    stage,
                    pending.decision.omit_stages,
                );
                wrap_response(&mut response, None, pending);
            } else if record_response {
                let captured = Arc::new(Mutex::new(Captured::default()));
                pending.response_body = Some(CapturedBody {
                    captured: Arc::clone(&captured),
                    content_type: content_type(response.headers()),
                });
                wrap_response(&mut response, Some(captured), pending);
            } else {
                drop(pending);
            }
            Ok(response)
        })
    }
}

/// A request that failed authentication, as upstream's `WithFailedAuthenticationAudit`
/// audits it: the policy is asked without a user, and one `ResponseStarted` event carries
/// the 401. Returns the `Audit-ID` for the response.
pub(crate) fn failed_authentication(config: &AuditConfig, request: &Request) -> HeaderValue {
    let audit_id = audit_id(request.headers());
    let attributes = attributes_of(request.method(), request.uri(), UserInfo::default());
    let decision = config.policy.evaluate(&attributes, None);
    config.counts().level(decision.level);
    if decision.level != Level::None {
        let mut event = Event::new(decision.level, id_text(&audit_id), micro_now());
        describe_request(&mut event, request, &attributes, None);
        event.response_status = Some(json!({"metadata": {}, "status": "Failure",
            "message": "Unauthorized", "reason": "Unauthorized", "code": 401}));
        emit(
            &config.sink,
            &mut event,
            Stage::ResponseStarted,
            decision.omit_stages,
        );
    }
    audit_id
}

/// Sets `Audit-ID` on a response that has none (`WithAuditInit`).
pub(crate) fn set_audit_id(response: &mut Response, audit_id: HeaderValue) {
    response
        .headers_mut()
        .entry(AUDIT_ID_HEADER)
        .or_insert(audit_id);
}

/// The request's `Audit-ID`, else a new UUID.
fn audit_id(headers: &HeaderMap) -> HeaderValue {
    match headers.get(AUDIT_ID_HEADER) {
        Some(id) if !id.is_empty() => id.clone(),
        _ => {
            let id = uuid::Uuid::new_v4().hyphenated().to_string();
            HeaderValue::from_str(&id).unwrap_or(HeaderValue::from_static(""))
        }
    }
}

fn id_text(id: &HeaderValue) -> String {
    String::from_utf8_lossy(id.as_bytes()).into_owned()
}

/// `LogRequestMetadata`: the request's URI, verb, user, addresses, agent and object.
fn describe_request(
    event: &mut Event,
    request: &Request,
    attributes: &Attributes,
    user: Option<&UserInfo>,
) {
    event.request_uri = request.uri().path_and_query().map_or_else(
        || request.uri().path().to_owned(),
        |pq| pq.as_str().to_owned(),
    );
    event.verb.clone_from(&attributes.verb);
    if let Some(user) = user {
        event.user = user.to_json();
    }
    event.source_ips = source_ips(request);
    if let Some(agent) = request
        .headers()
        .get(header::USER_AGENT)
        .map(|v| String::from_utf8_lossy(v.as_bytes()))
    {
        event.user_agent = match agent.get(..MAX_USER_AGENT) {
            Some(cut) if agent.len() > MAX_USER_AGENT => format!("{cut}{USER_AGENT_TRUNCATED}"),
            _ => agent.into_owned(),
        };
    }
    if attributes.resource_request {
        event.object_ref = Some(ObjectRef {
            resource: attributes.resource.clone(),
            namespace: attributes.namespace.clone(),
            name: attributes.name.clone(),
            subresource: attributes.subresource.clone(),
            api_group: attributes.api_group.clone(),
            api_version: attributes.api_version.clone(),
            ..ObjectRef::default()
        });
    }
}

/// `utilnet.SourceIPs`: the `X-Forwarded-For` chain, `X-Real-Ip` if not in it, then the
/// connection's peer unless it is already last.
fn source_ips(request: &Request) -> Vec<String> {
    let headers = request.headers();
    let mut ips: Vec<IpAddr> = Vec::new();
    if let Some(chain) = headers.get("x-forwarded-for").and_then(|v| v.to_str().ok()) {
        ips.extend(
            chain
                .split(',')
                .filter_map(|part| part.trim().parse::<IpAddr>().ok()),
        );
    }
    if let Some(real) = headers
        .get("x-real-ip")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<IpAddr>().ok())
        && !ips.contains(&real)
    {
        ips.push(real);
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
        .or_else(|| {
            request
                .extensions()
                .get::<ConnectInfo<crate::tls::TlsConnection>>()
                .and_then(|ConnectInfo(connection)| connection.remote)
                .map(|addr| addr.ip())
        });
    if let Some(peer) = peer
        && ips.last() != Some(&peer)
    {
        ips.push(peer);
    }
    ips.iter().map(IpAddr::to_string).collect()
}

/// The discovery documents upstream writes as objects (`/api`, `/apis`, `/apis/{g}[/{v}]`,
/// `/api/v1`).
fn is_discovery(path: &str) -> bool {
    path == "/api" || path == "/api/v1" || path == "/apis" || path.starts_with("/apis/")
}

fn content_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Writes `event` at `stage` unless the policy omits that stage (`processAuditEvent`).
fn emit(sink: &Sink, event: &mut Event, stage: Stage, omit: Stages) {
    if omit.contains(stage) {
        return;
    }
    event.stage = stage;
    event.stage_timestamp = if stage == Stage::RequestReceived {
        event.request_received_timestamp.clone()
    } else {
        micro_now()
    };
    sink.send(event.to_line());
}

/// Bytes of a body copied as it streams past.
#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    /// More than the limit came: the copy is incomplete.
    overflowed: bool,
}

struct CapturedBody {
    captured: Arc<Mutex<Captured>>,
    content_type: Option<String>,
}

impl CapturedBody {
    /// The body as JSON, if it came whole and decodes.
    fn decode(&self) -> Option<Value> {
        let captured = self.captured.lock();
        if captured.overflowed || captured.bytes.is_empty() {
            return None;
        }
        decode(self.content_type.as_deref(), &captured.bytes)
    }
}

/// A body as JSON, by its media type: JSON (and the JSON patch types), YAML (and apply
/// patches) or Kubernetes protobuf.
pub(crate) fn decode(content_type: Option<&str>, bytes: &[u8]) -> Option<Value> {
    let media = content_type
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if media == kubemock_apimachinery::protobuf::MEDIA_TYPE {
        return kubemock_apimachinery::protobuf::decode(bytes).ok();
    }
    if media.ends_with("yaml") {
        return serde_json::from_slice(bytes)
            .ok()
            .or_else(|| serde_yaml_ng::from_slice(bytes).ok());
    }
    if media.ends_with("json") {
        return serde_json::from_slice(bytes).ok();
    }
    None
}

/// Removes `metadata.managedFields` from an object, a list's items or a Table's rows
/// (`copyWithoutManagedFields`).
fn without_managed_fields(mut value: Value) -> Value {
    fn strip(object: &mut Value) {
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("managedFields");
        }
    }
    strip(&mut value);
    if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip);
    }
    if let Some(rows) = value.get_mut("rows").and_then(Value::as_array_mut) {
        for row in rows {
            if let Some(object) = row.get_mut("object") {
                strip(object);
            }
        }
    }
    value
}

/// The final event of a request, written when it is dropped: once the response is complete
/// (its body sent, or dropped).
struct Pending {
    event: Event,
    sink: Sink,
    decision: Decision,
    handle: AuditHandle,
    verb: String,
    request_body: Option<CapturedBody>,
    response_body: Option<CapturedBody>,
    /// The event was written already (the Panic stage).
    done: bool,
}

impl Pending {
    /// The response's status (`processCode`, and `LogResponseObject` for a Status).
    fn responded(&mut self, response: &Response) {
        self.event.response_status = Some(match response.extensions().get::<ApiError>() {
            Some(error) => status_of(&error.to_json()),
            None => status_code(response.status().as_u16()),
        });
    }

    /// The Panic stage (upstream's recover in `WithAudit`), instead of the final event.
    fn panicked(mut self, message: &str) {
        self.done = true;
        self.handle.copy_into(&mut self.event);
        self.event.response_status = Some(json!({"metadata": {}, "status": "Failure",
            "message": format!("APIServer panic'd: {message}"), "reason": "InternalError",
            "code": 500}));
        emit(
            &self.sink,
            &mut self.event,
            Stage::Panic,
            self.decision.omit_stages,
        );
    }

    /// `LogRequestObject` / `LogRequestPatch`: the object's identity into `objectRef`
    /// (create, update), the body itself at Request and above.
    fn record_request(&mut self) {
        let Some(body) = self.request_body.take() else {
            return;
        };
        let Some(object) = body.decode() else {
            return;
        };
        if matches!(self.verb.as_str(), "create" | "update")
            && let Some(object_ref) = self.event.object_ref.as_mut()
        {
            let meta = |key: &str| {
                object
                    .get("metadata")
                    .and_then(|m| m.get(key))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            for (field, key) in [
                (&mut object_ref.namespace, "namespace"),
                (&mut object_ref.name, "name"),
                (&mut object_ref.uid, "uid"),
                (&mut object_ref.resource_version, "resourceVersion"),
            ] {
                if field.is_empty() {
                    *field = meta(key);
                }
            }
        }
        if self.decision.level >= Level::Request {
            self.event.request_object = Some(self.maybe_strip(object));
        }
    }

    fn record_response(&mut self) {
        let Some(object) = self.response_body.take().and_then(|body| body.decode()) else {
            return;
        };
        if object.get("kind").and_then(Value::as_str) == Some("Status") {
            self.event.response_status = Some(status_of(&object));
        }
        self.event.response_object = Some(self.maybe_strip(object));
    }

    fn maybe_strip(&self, object: Value) -> Value {
        if self.decision.omit_managed_fields {
            without_managed_fields(object)
        } else {
            object
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.handle.copy_into(&mut self.event);
        self.record_request();
        self.record_response();
        let omit = self.decision.omit_stages;
        emit(&self.sink, &mut self.event, Stage::ResponseComplete, omit);
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("panic")
}

/// Puts `pending` (and a copy of the body into `captured`) into the response's body, so the
/// final event is written when the body ends or is dropped.
fn wrap_response(
    response: &mut Response,
    captured: Option<Arc<Mutex<Captured>>>,
    pending: Pending,
) {
    let body = std::mem::take(response.body_mut());
    *response.body_mut() = Body::new(Tee {
        inner: body,
        captured: captured.map(|c| (c, MAX_RECORDED_RESPONSE_BYTES)),
        on_end: Some(pending),
    });
}

/// A body that copies what passes (up to a limit) and drops `on_end` when it ends.
struct Tee {
    inner: Body,
    captured: Option<(Arc<Mutex<Captured>>, usize)>,
    on_end: Option<Pending>,
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
                if let (Some((captured, limit)), Some(data)) = (&this.captured, frame.data_ref()) {
                    let mut captured = captured.lock();
                    if captured.bytes.len() + data.len() > *limit {
                        captured.overflowed = true;
                        captured.bytes = Vec::new();
                    } else if !captured.overflowed {
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
