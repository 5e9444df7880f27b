//! LIST (docs/api-behaviour.md#list): one consistent snapshot per paginated list, resourceVersion and
//! resourceVersionMatch semantics (docs/api-behaviour.md#resourceversion-on-reads), limit/continue (docs/api-behaviour.md#pagination), label and field selectors
//! (docs/api-behaviour.md#label-selectors, #field-selectors), and the list's shape (docs/api-behaviour.md#list-shape: items without kind, `[]` never null), or the
//! same page as a Table when the client asks for one (docs/api-behaviour.md#tables).

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use kubemock_storage::{KeyValue, RangeRequest, Revision};
use serde_json::{Map, Value, json};

use super::get::wait_for_revision;
use super::resource::Call;
use crate::admission;
use crate::keys;
use crate::meta::{self, FieldError};
use crate::object::{self, Object};
use crate::registry::Resource;
use crate::selector::Selectors;
use crate::status::{ApiError, ApiResult};

/// The `v` of continue tokens, as the real server writes it.
const CONTINUE_VERSION: &str = "meta.k8s.io/v1";

/// What a list request asks for, validated.
struct ListRequest {
    selectors: Selectors,
    limit: Option<usize>,
    /// Read at exactly this revision (paginated snapshot, Exact, continue).
    exact: Option<Revision>,
    /// Key to continue after (from a continue token).
    start_after: Option<String>,
    /// `resourceVersion=0`: any recent state will do, from the store's cache if it has one
    /// ([`kubemock_storage::Kv::range_any`]).
    any: bool,
}

fn forbidden(field: &str, detail: &str) -> FieldError {
    FieldError {
        field: field.to_owned(),
        reason: "FieldValueForbidden",
        detail: format!("Forbidden: {detail}"),
    }
}

impl ListRequest {
    async fn parse(call: &Call, prefix: &str) -> ApiResult<Self> {
        let query = &call.query;
        let selectors = Selectors::from_query(query, &call.target.resource)?;
        let rv_text = query.get("resourceVersion").unwrap_or("");
        let revision = meta::parse_resource_version(rv_text)?;
        let matching = query.get("resourceVersionMatch").unwrap_or("");
        let token = query.get("continue").unwrap_or("");
        let limit = match query.get("limit").unwrap_or("") {
            "" => None,
            text => match text.parse::<i64>() {
                Ok(n) if n > 0 => usize::try_from(n).ok(),
                Ok(_) => None,
                Err(_) => return Err(ApiError::bad_request(format!("invalid limit: {text}"))),
            },
        };
        let mut errors = Vec::new();
        if query.get("sendInitialEvents").is_some() {
            errors.push(forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
        if !matching.is_empty() {
            if rv_text.is_empty() {
                errors.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if !token.is_empty() {
                errors.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if matching != "Exact" && matching != "NotOlderThan" {
                errors.push(FieldError {
                    field: "resourceVersionMatch".to_owned(),
                    reason: "FieldValueNotSupported",
                    detail: format!("Unsupported value: {matching:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""),
                });
            } else if matching == "Exact" && rv_text == "0" {
                errors.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if !errors.is_empty() {
            return Err(meta::list_options_invalid(errors));
        }
        if !token.is_empty() {
            if !rv_text.is_empty() && rv_text != "0" {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            let (revision, start_after) = decode_continue(token, prefix)?;
            return Ok(ListRequest {
                selectors,
                limit,
                exact: revision,
                start_after: Some(start_after),
                any: false,
            });
        }
        let exact = match (revision, matching) {
            (Some(n), "Exact") => Some(n),
            // limit + resourceVersion=N without a match parameter means Exact (docs/api-behaviour.md#resourceversion-on-reads).
            (Some(n), "") if limit.is_some() && rv_text != "0" => Some(n),
            (Some(n), _) => {
                wait_for_revision(&call.state, n).await?;
                None
            }
            (None, _) => None,
        };
        // resourceVersion=0 is served from the watch cache, which ignores limit.
        let any = rv_text == "0" && exact.is_none();
        let limit = if rv_text == "0" { None } else { limit };
        Ok(ListRequest {
            selectors,
            limit,
            exact,
            start_after: None,
            any,
        })
    }
}

/// A continue token for the snapshot `revision` (`None`: the latest state, the real `"rv":-1`
/// of a token offered after its snapshot was compacted), resuming after `last_key`.
fn encode_continue(revision: Option<Revision>, prefix: &str, last_key: &str) -> String {
    let start = format!("{}\u{0}", last_key.strip_prefix(prefix).unwrap_or(last_key));
    let rv = revision.map_or(json!(-1), |rv| json!(rv));
    let token = json!({"v": CONTINUE_VERSION, "rv": rv, "start": start});
    URL_SAFE_NO_PAD.encode(token.to_string())
}

/// The snapshot (`None` for `"rv":-1`) and the key to resume after.
fn decode_continue(token: &str, prefix: &str) -> ApiResult<(Option<Revision>, String)> {
    let invalid = |why: &str| {
        ApiError::bad_request(format!(
            "invalid continue token: continue key is not valid: {why}"
        ))
    };
    let bytes = URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| invalid("not base64"))?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| invalid("not JSON"))?;
    if value.get("v").and_then(Value::as_str) != Some(CONTINUE_VERSION) {
        return Err(invalid("unknown version"));
    }
    let revision = match value.get("rv").and_then(Value::as_i64) {
        Some(-1) => None,
        Some(rv) if rv > 0 => Some(rv.unsigned_abs()),
        _ => return Err(invalid("bad resource version")),
    };
    let start = value
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("no start key"))?;
    if start.contains("..") || start.starts_with('/') {
        return Err(invalid("start key escapes the listed prefix"));
    }
    let start = start.strip_suffix('\u{0}').unwrap_or(start);
    Ok((revision, format!("{prefix}{start}")))
}

/// One page of objects and what the response's metadata needs.
struct Page {
    items: Vec<Object>,
    revision: Revision,
    continue_token: Option<String>,
    remaining: Option<u64>,
}

/// One page as stored: the key-values and what the response's metadata needs.
struct RawPage {
    items: Vec<KeyValue>,
    revision: Revision,
    continue_token: Option<String>,
    remaining: Option<u64>,
}

async fn read_page(call: &Call, request: &ListRequest, prefix: &str) -> ApiResult<Page> {
    let raw = read_raw(call, request, prefix).await?;
    let filtered = !request.selectors.is_empty();
    let mut items = Vec::with_capacity(raw.items.len());
    for kv in &raw.items {
        let object = admission::from_storage(&call.target.resource, object::from_stored(kv)?);
        let value = Value::Object(object);
        if request.selectors.matches(&value) {
            if let Value::Object(object) = value {
                items.push(object);
            }
        }
    }
    Ok(Page {
        items,
        revision: raw.revision,
        continue_token: raw.continue_token,
        remaining: raw.remaining.filter(|_| !filtered),
    })
}

async fn read_raw(call: &Call, request: &ListRequest, prefix: &str) -> ApiResult<RawPage> {
    let mut range = RangeRequest::prefix(prefix.to_owned());
    if let Some(after) = &request.start_after {
        range = range.start_after(after.clone());
    }
    if let Some(limit) = request.limit {
        range = range.limit(limit);
    }
    if let Some(revision) = request.exact {
        range = range.at_revision(revision);
    }
    let store = call.state.store();
    let response = if request.any {
        store.range_any(range).await
    } else {
        store.range(range).await
    };
    let response = response.map_err(|err| match err {
        // docs/api-behaviour.md#pagination: offer a token that resumes at the same key over the latest state.
        kubemock_storage::Error::Compacted { .. } if let Some(after) = &request.start_after => {
            let mut error = ApiError::expired(
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
            );
            error.continue_token = Some(encode_continue(None, prefix, after).into());
            error
        }
        kubemock_storage::Error::Compacted { .. } => {
            ApiError::expired("The resourceVersion for the provided list is too old.")
        }
        other => ApiError::from_storage(other),
    })?;
    let continue_token = match (response.more(), response.items.last()) {
        // After an `"rv":-1` token the read is at the latest revision, which the next token
        // then binds (as the real server does).
        (true, Some(last)) => Some(encode_continue(
            Some(response.revision),
            prefix,
            &String::from_utf8_lossy(&last.key),
        )),
        _ => None,
    };
    let remaining = response.more().then_some(response.remaining);
    Ok(RawPage {
        revision: response.revision,
        items: response.items,
        continue_token,
        remaining,
    })
}

/// The JSON body of a built-in list without selectors, straight from the stored bytes: each
/// item is its stored form with the resourceVersion spliced in and without kind and
/// apiVersion, as `list_body` would serialise it (the hot path of informers' initial lists).
fn raw_list_body(resource: &Resource, page: RawPage) -> ApiResult<Vec<u8>> {
    let metadata = list_metadata(page.revision, page.continue_token, page.remaining);
    let size: usize = page.items.iter().map(|kv| kv.value.len() + 40).sum();
    let mut out = Vec::with_capacity(size + 256);
    out.extend_from_slice(b"{\"kind\":");
    serde_json::to_writer(&mut out, &resource.list_kind()).map_err(ApiError::internal)?;
    out.extend_from_slice(b",\"apiVersion\":");
    serde_json::to_writer(&mut out, &resource.group_version()).map_err(ApiError::internal)?;
    out.extend_from_slice(b",\"metadata\":");
    serde_json::to_writer(&mut out, &metadata).map_err(ApiError::internal)?;
    out.extend_from_slice(b",\"items\":[");
    for (index, kv) in page.items.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        match object::list_item_bytes(kv) {
            Some(item) => out.extend_from_slice(&item),
            None => {
                let mut item = object::from_stored(kv)?;
                item.shift_remove("kind");
                item.shift_remove("apiVersion");
                serde_json::to_writer(&mut out, &item).map_err(ApiError::internal)?;
            }
        }
    }
    out.extend_from_slice(b"]}\n");
    Ok(out)
}

/// Every object of the call's collection matching its selectors (no pagination), with the
/// snapshot revision: deletecollection's input.
pub(crate) async fn matching_objects(call: &Call) -> ApiResult<(Vec<Object>, Revision)> {
    let prefix = keys::collection_prefix(&call.target.resource, call.target.namespace.as_deref());
    let mut request = ListRequest::parse(call, &prefix).await?;
    request.limit = None;
    request.start_after = None;
    let page = read_page(call, &request, &prefix).await?;
    Ok((page.items, page.revision))
}

/// The list metadata: resourceVersion, and continue and remainingItemCount when paginated.
fn list_metadata(
    revision: Revision,
    continue_token: Option<String>,
    remaining: Option<u64>,
) -> Map<String, Value> {
    let mut metadata = Map::new();
    metadata.insert(
        "resourceVersion".to_owned(),
        json!(meta::resource_version(revision)),
    );
    if let Some(token) = continue_token {
        metadata.insert("continue".to_owned(), json!(token));
    }
    if let Some(remaining) = remaining {
        metadata.insert("remainingItemCount".to_owned(), json!(remaining));
    }
    metadata
}

/// The `XList` body.
pub(crate) fn list_body(
    resource: &Resource,
    items: Vec<Object>,
    revision: Revision,
    continue_token: Option<String>,
    remaining: Option<u64>,
) -> Value {
    let metadata = list_metadata(revision, continue_token, remaining);
    // Built-in list items carry no kind/apiVersion (docs/api-behaviour.md#list-shape); custom ones do, in the version
    // asked for (docs/api-behaviour.md#serving-custom-resources: conversion `None` only changes the apiVersion).
    let items: Vec<Value> = items
        .into_iter()
        .map(|mut item| {
            item.shift_remove("kind");
            item.shift_remove("apiVersion");
            if resource.is_custom() {
                item = object::with_type_meta(item, resource);
            }
            Value::Object(item)
        })
        .collect();
    json!({
        "kind": resource.list_kind(),
        "apiVersion": resource.group_version(),
        "metadata": metadata,
        "items": items,
    })
}

/// `GET` of a collection.
pub(crate) async fn list(call: &Call) -> ApiResult<Response> {
    call.require_verb("list")?;
    let resource = &call.target.resource;
    let prefix = keys::collection_prefix(resource, call.target.namespace.as_deref());
    let request = ListRequest::parse(call, &prefix).await?;
    if call.negotiated.is_plain_json()
        && request.selectors.is_empty()
        && !resource.is_custom()
        && !resource.stored_converted()
    {
        let page = read_raw(call, &request, &prefix).await?;
        let body = raw_list_body(resource, page)?;
        return Ok((
            StatusCode::OK,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response());
    }
    let page = read_page(call, &request, &prefix).await?;
    let items = crate::dispatch::conversion::served_all(&call.state, resource, page.items).await?;
    let body = list_body(
        resource,
        items,
        page.revision,
        page.continue_token,
        page.remaining,
    );
    Ok(call.respond_list(StatusCode::OK, &body))
}
