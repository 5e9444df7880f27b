//! Request handlers, one file per concern: `nonresource` for `/version` and health, `openapi`
//! for the OpenAPI documents,
//! `discovery` for `/api` and `/apis`, and the resource verbs: `resource` parses the target (`crate::target`)
//! and dispatches to `get`, `list`, `watch`, `create`, `update` (with `scale`), `patch` and `delete`;
//! `escalation` checks writes of RBAC roles and bindings; `resource_metrics` serves
//! `metrics.k8s.io`; `testing` serves kubemock's own `testing.kubemock.dev` group.

pub(crate) mod clock;
pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod discovery;
pub(crate) mod escalation;
pub(crate) mod get;
pub(crate) mod list;
pub(crate) mod logs;
pub(crate) mod nonresource;
pub(crate) mod openapi;
pub(crate) mod patch;
pub(crate) mod podio;
pub(crate) mod resource;
pub(crate) mod resource_metrics;
pub(crate) mod reviews;
pub(crate) mod scale;
pub(crate) mod strategy;
pub(crate) mod subresources;
pub(crate) mod testing;
pub(crate) mod update;
pub(crate) mod watch;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::state::AppState;
use crate::target::RequestInfo;

/// The middleware that classifies each request once and leaves the [`RequestInfo`] in its
/// extensions for the metrics and the in-flight limit.
pub(crate) async fn classify(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let info = RequestInfo::classify(
        state.registry(),
        request.method(),
        request.uri(),
        request.headers(),
    );
    request.extensions_mut().insert(info);
    next.run(request).await
}
