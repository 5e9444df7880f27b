//! The URL table, and nothing else: which path and method reach which handler (docs/api-behaviour.md#url-layout).

use axum::Router;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};

use crate::handlers::{discovery, nonresource, openapi, resource};
use crate::state::AppState;
use crate::status::ApiError;

/// The routes of the API server.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/version", get(nonresource::version))
        .route("/api", get(discovery::core_versions))
        .route("/api/v1", get(discovery::core_resources))
        .route("/apis", get(discovery::groups))
        .route("/apis/{group}", get(discovery::group))
        .route("/apis/{group}/{version}", get(discovery::group_resources))
        .route("/api/v1/{*rest}", any(resource::core))
        .route("/apis/{group}/{version}/{*rest}", any(resource::grouped))
        .route("/openapi/v2", get(openapi::v2))
        .route("/openapi/v3", get(openapi::v3_root))
        .route("/openapi/v3/{*path}", get(openapi::v3))
        .route("/healthz", get(nonresource::healthz))
        .route("/livez", get(nonresource::livez))
        .route("/readyz", get(nonresource::readyz))
        .route("/metrics", get(nonresource::metrics))
        .route("/healthz/{*check}", get(nonresource::single_check))
        .route("/livez/{*check}", get(nonresource::single_check))
        .route("/readyz/{*check}", get(nonresource::single_check))
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(not_found)
}

async fn method_not_allowed(request: Request) -> Response {
    let drained = drain(request).await;
    answered(
        drained,
        ApiError::route_method_not_allowed().into_response(),
    )
}

/// Unknown paths: a `Status` under the API roots, plain text elsewhere (docs/api-behaviour.md#errors).
async fn not_found(request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let drained = drain(request).await;
    let under_api_root = ["/api", "/apis"]
        .iter()
        .any(|root| path == *root || path.starts_with(&format!("{root}/")));
    let response = if under_api_root {
        ApiError::route_not_found().into_response()
    } else {
        nonresource::not_found_text()
    };
    answered(drained, response)
}

/// Reads and drops a request's body (up to the body limit) before it is answered: an answer
/// that leaves the body unread makes hyper close the kept-alive connection under a client
/// still using it (Go's server, upstream's, likewise discards an unread body). `false` when
/// the body was over the limit and is left unread.
async fn drain(request: Request) -> bool {
    axum::body::to_bytes(request.into_body(), crate::status::MAX_BODY_BYTES)
        .await
        .is_ok()
}

/// `response`, marked `Connection: close` if the body was not `drained`.
fn answered(drained: bool, mut response: Response) -> Response {
    if !drained {
        crate::status::close_connection(&mut response);
    }
    response
}
