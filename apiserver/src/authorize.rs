//! The authorization step of the request pipeline
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/authorization.go`): a request the
//! server's authorizer (`authz`) does not allow, described by `authz::request`, is answered
//! with upstream's 403 before it is routed. Members of `system:masters` pass without a look.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use tracing::debug;

use crate::authz::is_privileged;
use crate::authz::request::{attributes_of, forbidden};
use crate::identity;
use crate::negotiate;
use crate::state::AppState;
use crate::status::{MAX_BODY_BYTES, close_connection};

/// The middleware: lets the request through if the authorizer allows it, else answers 403 in
/// the encoding the request accepts (the body read and dropped first, so that the connection
/// stays usable, as Go's server drains it).
pub(crate) async fn authorize(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let user = identity::requester(request.extensions());
    if is_privileged(&user) {
        return next.run(request).await;
    }
    let attributes = attributes_of(request.method(), request.uri(), (*user).clone());
    if state.authorizer().allows(&attributes) {
        return next.run(request).await;
    }
    // Refused: asked again for the reason the 403 gives.
    let decision = state.authorizer().authorize(&attributes);
    debug!(
        user = %attributes.user.name,
        verb = %attributes.verb,
        resource = %attributes.resource,
        path = %attributes.path,
        reason = decision.reason(),
        "forbidden"
    );
    let encoding = negotiate::status_encoding(request.headers());
    let drained = axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES)
        .await
        .is_ok();
    let mut response = encoding.error(forbidden(&attributes, decision.reason()));
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if !drained {
        close_connection(&mut response);
    }
    response
}
