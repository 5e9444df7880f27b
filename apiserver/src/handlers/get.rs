//! GET of one object (docs/api-behaviour.md#get), of its `status` (the whole object) and of its `scale` (docs/api-behaviour.md#scale-subresource), as
//! the object or, when the client asks for one, as a one-row Table (docs/api-behaviour.md#tables).

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kubemock_storage::{KeyValue, Revision};
use serde_json::Value;

use super::resource::Call;
use super::scale;
use crate::admission;
use crate::keys;
use crate::meta;
use crate::object::{self, Object};
use crate::registry::Resource;
use crate::state::AppState;
use crate::status::{ApiError, ApiResult};

/// How long a read with a resourceVersion the store has not reached waits before 504 (docs/api-behaviour.md#resourceversion-on-reads).
pub(crate) const FUTURE_REVISION_WAIT: Duration = Duration::from_secs(3);
/// Poll interval while waiting for the store to reach a revision.
const FUTURE_REVISION_POLL: Duration = Duration::from_millis(10);

/// Waits (at most [`FUTURE_REVISION_WAIT`]) until the store has reached `revision`.
pub(crate) async fn wait_for_revision(state: &AppState, revision: Revision) -> ApiResult<()> {
    let deadline = Instant::now() + FUTURE_REVISION_WAIT;
    loop {
        let current = state
            .store()
            .current_revision()
            .await
            .map_err(ApiError::from_storage)?;
        if current >= revision {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(ApiError::too_large_resource_version(revision, current));
        }
        tokio::time::sleep(FUTURE_REVISION_POLL).await;
    }
}

/// The current state of an object about to be written: its key-value (whose revision guards
/// the write) and its stored form; the 404 when it is missing.
pub(crate) async fn fetch_existing(
    state: &AppState,
    resource: &Resource,
    key: &str,
    name: &str,
) -> ApiResult<(KeyValue, Object)> {
    let current = state
        .fetch(key)
        .await?
        .ok_or_else(|| ApiError::not_found(resource, name))?;
    let stored = object::parse_stored(&current.value)?;
    let object = crate::dispatch::conversion::served(state, resource, stored).await?;
    Ok((current, admission::from_storage(resource, object)))
}

/// Reads the object `call` names (latest state), or 404.
pub(crate) async fn read_object(call: &Call) -> ApiResult<(Object, Revision)> {
    let kv = read_kv(call).await?;
    let resource = &call.target.resource;
    let object =
        crate::dispatch::conversion::served(&call.state, resource, object::from_stored(&kv)?)
            .await?;
    let object = admission::from_storage(resource, object);
    Ok((object, kv.mod_revision))
}

/// The stored key-value of the call's object, or the 404.
async fn read_kv(call: &Call) -> ApiResult<KeyValue> {
    let target = &call.target;
    let name = target.name.as_deref().unwrap_or("");
    let key = keys::object_key(&target.resource, target.namespace.as_deref(), name);
    call.state
        .fetch(&key)
        .await?
        .ok_or_else(|| ApiError::not_found(&target.resource, name))
}

/// `GET` of an item or of its `status` or `scale`.
pub(crate) async fn get(call: &Call) -> ApiResult<Response> {
    call.require_verb("get")?;
    // "" and "0": the latest state; "N": not older than N.
    if let Some(revision) =
        meta::parse_resource_version(call.query.get("resourceVersion").unwrap_or(""))?
    {
        wait_for_revision(&call.state, revision).await?;
    }
    // (Custom objects read in the version asked for: no stored bytes as they are.)
    if call.negotiated.is_plain_json()
        && matches!(call.target.subresource.as_deref(), None | Some("status"))
        && !call.target.resource.is_custom()
        && !call.target.resource.stored_converted()
    {
        // The hot path: the stored bytes with the resourceVersion spliced in.
        let kv = read_kv(call).await?;
        if let Some(bytes) = object::answer_bytes(&kv) {
            return Ok((
                StatusCode::OK,
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                bytes,
            )
                .into_response());
        }
    }
    let (mut object, _) = read_object(call).await?;
    if call.target.resource.is_custom() {
        object = object::with_type_meta(object, &call.target.resource);
    }
    let body = match call.target.subresource.as_deref() {
        None | Some("status" | "approval" | "ephemeralcontainers") => Value::Object(object),
        Some("scale") => Value::Object(scale::scale_of(&call.target.resource, &object)),
        Some(_) => return Err(ApiError::route_method_not_allowed()),
    };
    Ok(call.respond(StatusCode::OK, &body))
}
