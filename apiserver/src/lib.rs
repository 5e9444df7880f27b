//! kubemock-apiserver: the Kubernetes HTTP API (discovery, REST, watch) over
//! `kubemock-storage`'s revisioned store. Where behaviour is in doubt, the real kube-apiserver
//! decides; `docs/api-behaviour.md` says what clients depend on, by topic, with the upstream
//! files that decide it.
//!
//! It reaches the store only through [`kubemock_storage::Kv`]; it knows no client and no
//! controller.
//!
//! # Layout
//! - `routes`: the URL table.
//! - `handlers`: request handlers: `nonresource` (`/version`, health), `discovery`, and the
//!   resource verbs (`resource` dispatches to `get`, `list`, `create`, `update`, `delete`).
//! - `registry`: [`Registry`], one data entry per served resource.
//! - `admission`: the built-in kinds' defaulting, validation and Service address allocation.
//! - `codec`: the media types of request bodies (the Kubernetes protobuf wire format itself is
//!   `kubemock_apimachinery::protobuf`, re-exported as [`protobuf`] for tests and benchmarks).
//! - `openapi`: the OpenAPI documents (over the built-in kinds' schemas of
//!   `kubemock_apimachinery::openapi`); `fieldvalidation`: unknown fields checked against them.
//! - `query`, `object`, `meta`, `keys`: query strings, objects as JSON, metadata rules and
//!   storage keys.
//! - `accept`: `Accept` headers, read as the real server negotiates them; `negotiate`: what a
//!   resource response is (JSON, YAML or protobuf; a Table or `PartialObjectMetadata`
//!   conversion; indentation), decided once per request, and its one encoder.
//! - `table`: Table output (`kubectl get`): the per-resource printers, ages; `partial`:
//!   `PartialObjectMetadata[List]`, the metadata client's conversion.
//! - `selector`: label and field selectors of lists and watches; their syntax is
//!   `kubemock_apimachinery`'s (`labels`, `fields`), the fields each kind supports, their
//!   wording and how they are read from objects are here.
//! - `managedfields`: `metadata.managedFields` on every write and server-side apply, over
//!   `kubemock_apimachinery::managedfields`' field sets; `handlers::patch` applies JSON and
//!   strategic merge patches with `kubemock_apimachinery::{jsonpatch, strategic}`.
//! - `bootstrap`: the objects a cluster starts with; `rbac`: the bootstrap RBAC policy, created
//!   and repaired at startup; `apiservices`: the local APIServices and
//!   their availability; `signer`: the `kube-apiserver-client` signer of certificate signing
//!   requests.
//! - `target`: what a request addresses (resource, namespace, name, subresource) and how the
//!   pipeline classifies it (`RequestInfo`), read by the handlers, the metrics and the limits.
//! - `allocator`: Services' cluster IPs and node ports; `version`: the Kubernetes version
//!   served.
//! - `status`: [`ApiError`], the one mapping from failures to `metav1.Status` responses;
//!   `field_error`: one field's validation error (a cause of a 422).
//! - `cel_rules`: CRDs' `x-kubernetes-validations`, compiled and cost-checked when a
//!   definition is written, compiled per served schema and run on custom objects' writes.
//! - `state`: [`AppState`] and [`ServerConfig`]; `AppState::fetch` is the one read of a
//!   single key, for handlers, admission, tokens and the startup objects alike.
//! - `metrics`: request and store metrics, and their Prometheus text for `/metrics`.
//! - `limits`: the in-flight limit (429 with `Retry-After` when full; watches exempt).
//! - `kubeconfig`: the kubeconfig that points clients at a server.
//! - [`pki`]: the cluster CA and the service-account signing key; `identity`: who a request
//!   is made by; `authn`: the authenticators (x509 client certificates, static tokens,
//!   anonymous) and impersonation; `authenticate`: the pipeline's authentication step (with
//!   the ServiceAccount tokens of `tokens`); `authz`: what users may do (the authorizer chain,
//!   RBAC, the authorization step, escalation prevention); [`security`]: the secure mode's
//!   files and options; `tls`: the TLS listener; `audit`: the audit log (policy, events,
//!   the writer); `webhook`: the admission webhook configurations' index, the HTTPS client
//!   webhooks (admission and CRD conversion) are called with, and AdmissionReviews;
//!   `dispatch`: the admission webhooks' dispatch on writes and CRD conversion on reads and
//!   writes; `requestlog`: the request log of `testing.kubemock.dev/v1` `requests`
//!   (the layer that records every request, the ring it keeps them in); `faults`: the
//!   `Fault`s of that group (their index, the pipeline step that injects them).
//! - [`fixtures`]: the objects `--load` creates at startup, in dependency order;
//!   [`reset`]: the startup state, resets to it, snapshots and their restore.
//! - `testing`: [`TestServer`], an in-process server on port 0 for tests.
//! - `fuzzing` (hidden): thin public wrappers over the private code the fuzz targets in
//!   `fuzz/` exercise (selectors, patches, server-side apply, body decoding); not an API.
//!
//! What needs no server (no registry, store, HTTP or request) lives in `kubemock-apimachinery`,
//! shared with the client and the controllers: quantities, label and field selectors,
//! durations, timestamps, the patch engines, the protobuf codec, server-side apply's field
//! sets.
//!
//! The modules form no import cycle (`scripts/module-cycles.py` lists any): lower modules
//! (`target`, `registry`, `status`, `meta`, `object`, `codec`, `state`) never import
//! `handlers`, which sits on top with `routes`.
//!
//! Status: discovery, CRUD, list, watch, JSON/merge/strategic PATCH, server-side apply and
//! managedFields, OpenAPI, field validation, Table output, protobuf request bodies and
//! answers, the deletion lifecycle (namespace termination with the controllers), custom
//! resources, and the defaulting and validation of the kinds controllers drive are served.

mod accept;
mod admission;
mod allocator;
mod apiservices;
mod audit;
mod authenticate;
mod authn;
mod authorize;
mod authz;
mod bootstrap;
mod cel_rules;
mod codec;
mod crd;
mod dispatch;
mod event_lines;
mod fault_layer;
mod faults;
mod field_error;
mod fieldvalidation;
mod fixture_load;
pub mod fixtures;
#[doc(hidden)]
pub mod fuzzing;
mod handlers;
mod identity;
mod keys;
mod kubeconfig;
mod limits;
mod local;
mod managedfields;
mod meta;
mod metrics;
mod negotiate;
mod object;
mod openapi;
mod partial;
pub mod pki;
mod query;
mod ratchet;
mod rbac;
mod registry;
mod requestlog;
pub mod reset;
mod routes;
pub mod security;
mod selector;
mod signer;
mod state;
mod status;
mod store_index;
mod table;
mod target;
mod testing;
mod tls;
mod tokens;
mod usage;
mod webhook;

use std::sync::Arc;

use axum::ServiceExt as _;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kubemock_storage::Kv;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_http::catch_panic::CatchPanicLayer;
use tracing::error;

pub use allocator::{
    DEFAULT_SERVICE_CLUSTER_IP_RANGE, DEFAULT_SERVICE_NODE_PORT_RANGE, NodePortRange, ServiceCidr,
};
pub use audit::{
    AuditConfig, AuditLog, Level as AuditLevel, Policy as AuditPolicy,
    PolicyError as AuditPolicyError,
};
pub use authz::{AuthorizationMode, AuthorizerKind};
pub use bootstrap::{KUBERNETES_SERVICE_IP, SYSTEM_NAMESPACES};
pub use kubeconfig::{kubeconfig, secure_kubeconfig};
pub use kubemock_apimachinery::version::KUBERNETES_MINOR;
pub use limits::{
    DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT, DEFAULT_MAX_REQUEST_BODY_BYTES_INFLIGHT,
    DEFAULT_MAX_REQUESTS_INFLIGHT,
};
pub use local::{LocalApi, LocalSlot};
pub use registry::{
    Admission, Behaviour, GenerationPolicy, Group, Gvk, NameRule, Printer, Registry, Resource,
    Storage, Subresource,
};
pub use requestlog::{
    BODY_BUDGET_BYTES as REQUEST_LOG_BODY_BUDGET_BYTES, DEFAULT_REQUEST_LOG_SIZE,
    MAX_LOGGED_BODY_BYTES, RequestLogConfig,
};
pub use security::{Security, SecurityError, SecurityOptions};
pub use state::{AppState, ComponentHealth, DEFAULT_BOOKMARK_INTERVAL, ServerConfig};
pub use status::{ApiError, ApiResult, Cause, Details, MAX_BODY_BYTES};
pub use testing::TestServer;
pub use tls::LOOPBACK_SERVER_NAME;

/// The Kubernetes protobuf wire format of built-in kinds (`application/vnd.kubernetes.protobuf`,
/// docs/api-behaviour.md#content-types), as the server reads and writes it: enveloped objects and watch frames, to and from
/// their JSON. For clients in tests (the conformance suite runs its sections in both
/// encodings) and for benchmarks.
pub mod protobuf {
    pub use kubemock_apimachinery::protobuf::{
        MEDIA_TYPE, WATCH_MEDIA_TYPE, decode, decode_watch_event, encode, encode_watch_event,
    };
}

/// `routes` behind the request pipeline over `state`, outermost first: panics become a 500
/// `Status` (a safety net, not a strategy); every 5xx is logged once; each request is
/// classified (verb, resource, scope: `target`), then timed and counted (`metrics`), then
/// authenticated (`authenticate`), then audited when the server audits (`audit`), then
/// impersonation is applied (`authenticate::ImpersonationLayer`), then logged in the request
/// log unless it is off (`requestlog`), then held to the in-flight
/// limit (`limits`), then authorized unless the mode is plain `AlwaysAllow` and nothing is
/// audited (`authorize`), then matched against the Faults (`fault_layer`), then routed.
///
/// The pipeline wraps the router rather than being its layers: axum layers a router by
/// wrapping each route, and clones a route per request, so every layer there cost a boxed
/// clone of the whole stack on every request (some 8 % of the server's CPU per GET).
fn app(
    state: AppState,
    routes: axum::Router,
) -> impl tower::Service<
    axum::extract::Request,
    Response = Response,
    Error = std::convert::Infallible,
    Future: Send,
> + Clone
+ Send
+ 'static {
    use axum::middleware::{from_fn_with_state, map_response};
    let (metrics, in_flight) = (state.metrics().clone(), state.in_flight().clone());
    let config = state.config();
    // Audited requests are annotated with the authorization decision, so the step runs
    // whenever the server audits, as upstream's always does.
    let authorize = (config.authorization_mode != authz::AuthorizationMode::always_allow()
        || config.audit.is_some())
    .then(|| from_fn_with_state(state.clone(), authorize::authorize));
    tower::ServiceBuilder::new()
        .map_response(IntoResponse::into_response)
        .layer(from_fn_with_state(state.clock().clone(), with_clock))
        .layer(CatchPanicLayer::custom(panic_to_status))
        .layer(map_response(log_server_errors))
        .layer(from_fn_with_state(state.clone(), handlers::classify))
        .layer(from_fn_with_state(metrics, metrics::observe))
        .layer(authenticate::AuthenticationLayer::new(state.clone()))
        .option_layer(config.audit.clone().map(audit::AuditLayer::new))
        .layer(authenticate::ImpersonationLayer::new(state.clone()))
        .option_layer(
            state
                .request_log()
                .map(|log| requestlog::RequestLogLayer::new(log.clone(), state.store().clone())),
        )
        .layer(from_fn_with_state(in_flight, limits::limit))
        .option_layer(authorize)
        .layer(fault_layer::FaultLayer::new(state.clone()))
        .service(routes)
}

/// The request with the server's clock in scope (`meta::clock`): its timestamps are the
/// clock's.
async fn with_clock(
    axum::extract::State(clock): axum::extract::State<kubemock_apimachinery::clock::Clock>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    meta::scoped(clock, next.run(request)).await
}

/// Serves the API on `listener` until `shutdown` is cancelled, then stops accepting and waits
/// for requests in flight. With `config.security` the connections are TLS (`tls`), else plain
/// HTTP. The startup writes and the server's tasks read `config.clock`.
pub async fn serve(
    listener: TcpListener,
    store: Arc<dyn Kv>,
    config: ServerConfig,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let clock = config.clock.clone();
    meta::scoped(clock, serve_scoped(listener, store, config, shutdown)).await
}

/// [`serve`], with the server's clock in scope.
async fn serve_scoped(
    listener: TcpListener,
    store: Arc<dyn Kv>,
    config: ServerConfig,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let state = AppState::new(store, config, shutdown.clone());
    if let Some(snapshot) = &state.config().restore {
        let written = reset::restore(state.store().as_ref(), snapshot)
            .await
            .map_err(|err| std::io::Error::other(format!("restoring the snapshot: {err}")))?;
        tracing::info!(keys = written, "snapshot restored");
    }
    // The RBAC policy is read and reconciled on a task of its own, in parallel with the
    // namespaces (on a durable store their writes share group commits).
    let rbac_state = state.clone();
    let rbac_policy = tokio::spawn(meta::keep_clock(async move {
        rbac::ensure(&rbac_state).await.map_err(|err| {
            std::io::Error::other(format!("creating the bootstrap RBAC policy: {err}"))
        })
    }));
    let startup_objects = bootstrap::bootstrap(&state)
        .await
        .map_err(|err| std::io::Error::other(format!("creating the startup objects: {err}")));
    rbac_policy.await.map_err(std::io::Error::other)??;
    startup_objects?;
    // The authorizer reads the policy as stored, bootstrap roles included.
    if let Some(rbac) = state.rbac() {
        authz::rbac::start(rbac, state.store(), state.shutdown(), state.tasks())
            .await
            .map_err(|err| std::io::Error::other(format!("loading the RBAC policy: {err}")))?;
    }
    webhook::start(
        state.webhooks(),
        state.store(),
        state.shutdown(),
        state.tasks(),
    )
    .await
    .map_err(|err| std::io::Error::other(format!("loading the webhook configurations: {err}")))?;
    faults::start(
        state.faults(),
        state.store(),
        state.shutdown(),
        state.tasks(),
    )
    .await
    .map_err(|err| std::io::Error::other(format!("loading the faults: {err}")))?;
    crd::controller::start(&state)
        .await
        .map_err(|err| std::io::Error::other(format!("serving the custom resources: {err}")))?;
    apiservices::start(&state)
        .await
        .map_err(|err| std::io::Error::other(format!("registering the APIServices: {err}")))?;
    signer::start(&state);
    // Generate the built-in schemas (some milliseconds of CPU) now, in the background: the
    // first write or OpenAPI request would otherwise pay for it, and the startup objects above
    // do not need them (generating them alongside slowed a durable start by as much).
    tokio::task::spawn_blocking(|| std::sync::LazyLock::force(&openapi::SCHEMAS));
    let routes = routes::routes().with_state(state.clone());
    fixture_load::create(&state, &routes, &state.config().fixtures)
        .await
        .map_err(|err| std::io::Error::other(format!("loading the fixtures: {err}")))?;
    // What a reset goes back to: the store with the bootstrap objects, the restored
    // snapshot and the fixtures.
    let baseline = reset::capture(state.store().as_ref())
        .await
        .map_err(|err| std::io::Error::other(format!("reading the startup state: {err}")))?;
    state.set_baseline(baseline);
    let service = app(state.clone(), routes);
    if let Some(slot) = &state.config().local {
        let local = local::LocalApi::new(
            tower::util::BoxCloneSyncService::new(service.clone()),
            state.config().security.is_some(),
        );
        slot.fill(local);
    }
    if let Some(ready) = &state.config().ready {
        ready.notify_one();
    }
    let result = match &state.config().security {
        // The audit log's `sourceIPs` want the peer's address.
        None if state.config().audit.is_some() => {
            let service = service.into_make_service_with_connect_info::<std::net::SocketAddr>();
            axum::serve(listener, service)
                .with_graceful_shutdown(shutdown.clone().cancelled_owned())
                .await
        }
        None => {
            axum::serve(listener, service.into_make_service())
                .with_graceful_shutdown(shutdown.clone().cancelled_owned())
                .await
        }
        Some(security) => {
            let listener = tls::TlsListener::start(
                listener,
                Arc::clone(security.tls()),
                state.tasks(),
                shutdown.clone(),
            )?;
            let service = service.into_make_service_with_connect_info::<tls::TlsConnection>();
            axum::serve(listener, service)
                .with_graceful_shutdown(shutdown.clone().cancelled_owned())
                .await
        }
    };
    // Watch tasks end on the same token; wait for them so nothing outlives the server.
    state.tasks().close();
    state.tasks().wait().await;
    if let Some(slot) = &state.config().local {
        slot.clear();
    }
    // Every request has ended: what they audited is written out before `serve` returns.
    if let Some(audit) = &state.config().audit {
        audit.flush().await;
    }
    result
}

fn panic_to_status(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("panic");
    ApiError::internal(format!("handler panicked: {detail}")).into_response()
}

async fn log_server_errors(response: Response) -> Response {
    if response.status().is_server_error()
        && let Some(error) = response.extensions().get::<ApiError>()
    {
        error!(code = error.code.as_u16(), message = %error.message, "server error");
    } else if response.status() == StatusCode::INTERNAL_SERVER_ERROR {
        error!("server error without a Status");
    }
    response
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::routing::get;
    use kubemock_storage::{Config, SledStore};
    use tower::ServiceExt;

    use super::*;
    use crate::limits::InUse;

    async fn boom() -> &'static str {
        panic!("boom")
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_a_500_status_and_gives_its_in_flight_slot_back() {
        let store = SledStore::open(Config::ephemeral()).expect("store");
        let state = AppState::new(
            Arc::new(store),
            ServerConfig::default(),
            CancellationToken::new(),
        );
        let routes =
            axum::Router::new().route("/api/v1/namespaces/default/configmaps/boom", get(boom));
        let service = app(state.clone(), routes);
        for _ in 0..2 {
            let request = axum::extract::Request::builder()
                .uri("/api/v1/namespaces/default/configmaps/boom")
                .body(Body::empty())
                .expect("request");
            let response = service.clone().oneshot(request).await.expect("infallible");
            assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
            let body = axum::body::to_bytes(response.into_body(), 1 << 20)
                .await
                .expect("body");
            let status: serde_json::Value = serde_json::from_slice(&body).expect("a Status");
            assert_eq!(status["kind"], "Status");
            assert_eq!(status["code"], 500);
            assert_eq!(status["reason"], "InternalError");
            assert_eq!(
                status["message"],
                "Internal error occurred: handler panicked: boom"
            );
            assert_eq!(
                state.in_flight().in_use(),
                InUse {
                    read_only: 0,
                    mutating: 0
                }
            );
        }
    }

    /// `WithAudit`'s recover: a panic is written at the Panic stage (and no
    /// ResponseComplete), then the pipeline's safety net answers the 500.
    #[tokio::test]
    async fn a_panicking_handler_is_audited_at_the_panic_stage() {
        let dir = tempfile_dir();
        let log = dir.join("audit.log");
        let policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n";
        let (policy, _) = audit::Policy::parse(policy.as_bytes()).expect("policy");
        let audit =
            audit::AuditConfig::start(policy, &audit::AuditLog::File(log.clone())).expect("log");
        let store = SledStore::open(Config::ephemeral()).expect("store");
        let state = AppState::new(
            Arc::new(store),
            ServerConfig {
                audit: Some(audit.clone()),
                ..ServerConfig::default()
            },
            CancellationToken::new(),
        );
        let routes =
            axum::Router::new().route("/api/v1/namespaces/default/configmaps/boom", get(boom));
        let service = app(state.clone(), routes);
        let request = axum::extract::Request::builder()
            .uri("/api/v1/namespaces/default/configmaps/boom")
            .body(Body::empty())
            .expect("request");
        let response = service.oneshot(request).await.expect("infallible");
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        // The panic goes on to the safety net, whose 500 has no Audit-ID (upstream's has: its
        // audit ID is set on the response writer before the handler runs).
        assert!(response.headers().get("audit-id").is_none());
        audit.flush().await;
        let text = std::fs::read_to_string(&log).expect("the log");
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("JSON"))
            .collect();
        let stages: Vec<&str> = events
            .iter()
            .map(|e| e["stage"].as_str().unwrap())
            .collect();
        assert_eq!(stages, ["RequestReceived", "Panic"]);
        assert_eq!(events[0]["auditID"], events[1]["auditID"]);
        assert_eq!(
            events[1]["responseStatus"],
            serde_json::json!({"metadata": {}, "status": "Failure",
                "message": "APIServer panic'd: boom", "reason": "InternalError", "code": 500})
        );
        std::fs::remove_dir_all(dir).ok();
    }

    /// A fresh directory under the system's temporary one.
    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("kubemock-audit-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        dir
    }
}
