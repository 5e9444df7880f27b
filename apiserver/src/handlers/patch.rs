//! PATCH (§5) of an item, its status and its scale: load the current object, apply the patch
//! to its JSON, then exactly what an update does (§4.4–§4.7). JSON patch (§5.2), JSON merge
//! patch (§5.3) and strategic merge patch (§5.4, `strategic`) are served; server-side apply is
//! refused with a 415 that says so.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;

use super::get::fetch_existing;
use super::resource::Call;
use super::update::{self, Written};
use crate::codec;
use crate::codec::protobuf::SCHEMA;
use crate::fieldvalidation::with_warnings;
use crate::keys;
use crate::meta;
use crate::object::{self, Object};
use crate::status::{ApiError, ApiResult};
use crate::strategic::{self, PatchError};

/// Read-modify-write attempts before giving up with a Conflict (each attempt fails only when
/// another writer got in between).
const PATCH_ATTEMPTS: usize = 16;

/// The most operations a JSON patch may have (§5.2).
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// A parsed patch document.
enum Patch {
    /// RFC 6902.
    Json(json_patch::Patch),
    /// RFC 7386.
    Merge(Value),
    /// Kubernetes' strategic merge patch (built-in kinds).
    Strategic(Value),
}

impl Patch {
    /// The patch of `call`, by its `Content-Type` (§5.1).
    fn parse(call: &Call) -> ApiResult<Patch> {
        match codec::media_type(&call.headers).as_str() {
            "application/json-patch+json" => {
                let operations: Vec<Value> = serde_json::from_slice(&call.body)
                    .map_err(|err| ApiError::bad_request(format!("invalid JSON patch: {err}")))?;
                if operations.len() > MAX_JSON_PATCH_OPERATIONS {
                    return Err(ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "RequestEntityTooLarge",
                        format!(
                            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                            operations.len()
                        ),
                    ));
                }
                let patch = serde_json::from_value(Value::Array(operations))
                    .map_err(|err| ApiError::bad_request(format!("invalid JSON patch: {err}")))?;
                Ok(Patch::Json(patch))
            }
            "application/merge-patch+json" => match serde_json::from_slice::<Value>(&call.body) {
                Ok(value @ Value::Object(_)) => Ok(Patch::Merge(value)),
                Ok(_) => Err(ApiError::bad_request(
                    "Invalid JSON Patch: the merge patch must be a JSON object",
                )),
                Err(err) => Err(ApiError::bad_request(format!("Invalid JSON Patch: {err}"))),
            },
            "application/strategic-merge-patch+json" => {
                match serde_json::from_slice::<Value>(&call.body) {
                    Ok(value @ Value::Object(_)) => Ok(Patch::Strategic(value)),
                    Ok(_) => Err(ApiError::bad_request(
                        "the strategic merge patch must be a JSON object",
                    )),
                    Err(err) => Err(ApiError::bad_request(format!("invalid JSON patch: {err}"))),
                }
            }
            "application/apply-patch+yaml" => Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "UnsupportedMediaType",
                "server-side apply is not served by this kubemock build yet - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json",
            )),
            _ => Err(ApiError::unsupported_media_type(&[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
                "application/apply-patch+yaml",
            ])),
        }
    }

    /// `target`, an object of kind `api_version`/`kind`, with the patch applied.
    fn apply(&self, mut target: Value, api_version: &str, kind: &str) -> ApiResult<Value> {
        match self {
            Patch::Json(patch) => {
                // §5.2: an operation that cannot apply (a failed `test` included) is a 422
                // whose message the real server discards.
                json_patch::patch(&mut target, patch).map_err(|_| unprocessable())?;
            }
            Patch::Merge(patch) => json_patch::merge(&mut target, patch),
            Patch::Strategic(patch) => {
                let schema = SCHEMA.as_ref().map_err(|err| {
                    ApiError::internal(format!("strategic merge patch schemas: {err}"))
                })?;
                let message = schema.kind(api_version, kind);
                target =
                    strategic::apply(schema, message, target, patch).map_err(|err| match err {
                        PatchError::BadRequest(message) => ApiError::bad_request(message),
                        PatchError::Invalid(_) => unprocessable(),
                    })?;
            }
        }
        Ok(target)
    }
}

/// §5.2: a patch that cannot apply is a 422 whose message the real server discards.
fn unprocessable() -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        "the server rejected our request due to an error in our request",
    )
    .with_details(crate::status::Details::default())
}

/// `PATCH` of an item or of its `status` or `scale`.
pub(crate) async fn patch(call: &Call) -> ApiResult<Response> {
    let resource = &call.target.resource;
    let subresource = call.target.subresource.as_deref();
    call.require_verb("patch")?;
    let dry_run = call.dry_run("PatchOptions")?;
    let patch = Patch::parse(call)?;
    if subresource == Some("scale") {
        return update::write_scale(call, dry_run, |scale| {
            patch.apply(Value::Object(scale.clone()), "autoscaling/v1", "Scale")
        })
        .await;
    }
    let name = call.target.name.as_deref().unwrap_or("");
    let key = keys::object_key(resource, call.target.namespace.as_deref(), name);
    for _ in 0..PATCH_ATTEMPTS {
        let (current, existing) = fetch_existing(&call.state, resource, &key, name).await?;
        let mut body: Object = object::typed_object(
            patch.apply(
                Value::Object(object::answered(&existing, current.mod_revision)),
                &resource.group_version(),
                &resource.kind,
            )?,
            resource,
        )?;
        let warnings = call.validate_fields(&mut body)?;
        update::check_identity(call, &body)?;
        // §5.1: a resourceVersion the patch pins is a precondition; otherwise the body carries
        // the current one, and a concurrent writer just means another attempt.
        let pinned =
            meta::parse_resource_version(object::meta_str(&body, "resourceVersion").unwrap_or(""))?;
        if pinned.is_some_and(|rv| rv != current.mod_revision) {
            return Err(ApiError::modified(resource, name));
        }
        update::check_uid_precondition(resource, name, &key, &body, &existing)?;
        let updated = update::merge(resource, subresource, &existing, body);
        if let Written::Done(object) = update::write(call, &key, &current, updated, dry_run).await?
        {
            let response = call.respond(StatusCode::OK, &Value::Object(object));
            return Ok(with_warnings(response, &warnings));
        }
    }
    Err(ApiError::modified(resource, name))
}
