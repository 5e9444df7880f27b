//! The authorization step of the request pipeline
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/authorization.go`): a request the
//! server's authorizer (`authz`) does not allow, described by `authz::request`, is answered
//! with upstream's 403 before it is routed. Members of `system:masters` pass without a look.
//! An audited request gets upstream's `authorization.k8s.io/decision` and `reason`
//! annotations.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use tracing::debug;

use crate::audit::AuditHandle;
use crate::authz::is_privileged;
use crate::authz::request::{attributes_of, forbidden};
use crate::identity;
use crate::negotiate;
use crate::state::AppState;
use crate::status::{MAX_BODY_BYTES, close_connection};

/// The audit annotations of the decision (`decisionAnnotationKey`, `reasonAnnotationKey`).
const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";
/// Their values (`decisionAllow`, `decisionForbid`).
const DECISION_ALLOW: &str = "allow";
const DECISION_FORBID: &str = "forbid";

fn annotate(audit: &AuditHandle, decision: &str, reason: &str) {
    audit.annotate(DECISION_ANNOTATION, decision);
    audit.annotate(REASON_ANNOTATION, reason);
}

/// The middleware: lets the request through if the authorizer allows it, else answers 403 in
/// the encoding the request accepts (the body read and dropped first, so that the connection
/// stays usable, as Go's server drains it).
pub(crate) async fn authorize(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let user = identity::requester(request.extensions());
    let audit = AuditHandle::of(request.extensions()).cloned();
    if is_privileged(&user) {
        // Upstream's `system:masters` authorizer allows with no reason.
        if let Some(audit) = &audit {
            annotate(audit, DECISION_ALLOW, "");
        }
        return next.run(request).await;
    }
    let attributes = attributes_of(request.method(), request.uri(), (*user).clone());
    let decision = match &audit {
        // Audited: the reason is wanted either way.
        Some(audit) => {
            let decision = state.authorizer().authorize(&attributes);
            if decision.allowed() {
                annotate(audit, DECISION_ALLOW, decision.reason());
                return next.run(request).await;
            }
            annotate(audit, DECISION_FORBID, decision.reason());
            decision
        }
        None if state.authorizer().allows(&attributes) => return next.run(request).await,
        // Refused: asked again for the reason the 403 gives.
        None => state.authorizer().authorize(&attributes),
    };
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
