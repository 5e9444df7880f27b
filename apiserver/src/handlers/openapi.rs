//! `/openapi/v2`, `/openapi/v3` and `/openapi/v3/{group-version}` (docs/api-behaviour.md#openapi): the documents the
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

/// The media type of the protobuf OpenAPI v2 document (kube-openapi's `handler.go`,
/// `subTypeProtobuf`): what the answer says it is, whichever name was asked for.
const PROTOBUF_V2: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// Its deprecated name, which kubectl 1.27 and 1.28 ask for (`subTypeProtobufDeprecated`; Go's
/// `mime` package cannot read it, so answers never carry it).
const PROTOBUF_V2_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// `GET /openapi/v2`, in JSON or protobuf as `Accept` asks (the first range kube-openapi's
/// handler can answer wins; kubectl 1.27 and 1.28 ask for protobuf first). 406 when neither.
pub(crate) async fn v2(State(state): State<AppState>, headers: HeaderMap) -> ApiResult<Response> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let chosen = if accept.trim().is_empty() {
        Some(false)
    } else {
        accept
            .split(',')
            .find_map(|range| match range.split(';').next().unwrap_or("").trim() {
                "application/json" | "application/*" | "*/*" => Some(false),
                PROTOBUF_V2 | PROTOBUF_V2_DEPRECATED => Some(true),
                _ => None,
            })
    };
    match chosen {
        Some(false) => Ok(json(documents(state).await?.v2())),
        Some(true) => {
            let documents = documents(state).await?;
            let bytes = tokio::task::spawn_blocking(move || documents.v2_protobuf())
                .await
                .map_err(|err| ApiError::internal(format!("encoding OpenAPI v2: {err}")))?;
            Ok((StatusCode::OK, [(header::CONTENT_TYPE, PROTOBUF_V2)], bytes).into_response())
        }
        None => Err(ApiError::not_acceptable(format!(
            "only the following media types are accepted: application/json, {PROTOBUF_V2}"
        ))),
    }
}
