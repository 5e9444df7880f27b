//! `/openapi/v2`, `/openapi/v3` and `/openapi/v3/{group-version}` (§2.7): the documents the
//! `openapi` module builds, answered as JSON.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

use crate::openapi::Documents;
use crate::state::AppState;
use crate::status::{ApiError, ApiResult};

/// The documents, built off the async workers the first time (tens of milliseconds).
async fn documents(state: AppState) -> ApiResult<Arc<Documents>> {
    tokio::task::spawn_blocking(move || state.openapi())
        .await
        .map_err(|err| ApiError::internal(format!("building the OpenAPI documents: {err}")))
}

fn json(bytes: Bytes) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        bytes,
    )
        .into_response()
}

/// `GET /openapi/v3`.
pub(crate) async fn v3_root(State(state): State<AppState>) -> ApiResult<Response> {
    Ok(json(documents(state).await?.v3_root()))
}

/// `GET /openapi/v3/{path}`; the `?hash=` kubectl sends only keys its cache.
pub(crate) async fn v3(
    State(state): State<AppState>,
    Path(path): Path<String>,
) -> ApiResult<Response> {
    documents(state)
        .await?
        .v3(&path)
        .map(json)
        .ok_or_else(ApiError::route_not_found)
}

/// `GET /openapi/v2`, in JSON. kubectl asks for the protobuf form only (client-side apply);
/// it treats a 404 as "no schema" and goes on, which is what it gets here.
pub(crate) async fn v2(State(state): State<AppState>, headers: HeaderMap) -> ApiResult<Response> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let json_accepted = accept.is_empty()
        || accept.split(',').any(|range| {
            let media = range.split(';').next().unwrap_or("").trim();
            matches!(media, "application/json" | "application/*" | "*/*")
        });
    if !json_accepted {
        return Err(ApiError::route_not_found());
    }
    Ok(json(documents(state).await?.v2()))
}
