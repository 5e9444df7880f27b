//! PATCH (docs/api-behaviour.md#patch) of an item, its status and its scale: load the current object, apply the patch
//! to its JSON, then exactly what an update does (docs/api-behaviour.md#writes). JSON patch (docs/api-behaviour.md#json-patch), JSON merge
//! patch (docs/api-behaviour.md#merge-patch), strategic merge patch (docs/api-behaviour.md#strategic-merge-patch, `kubemock_apimachinery::strategic`) and server-side apply (docs/api-behaviour.md#server-side-apply,
//! `managedfields`), which also creates a missing object.

use axum::http::StatusCode;
use axum::response::Response;
use kubemock_apimachinery::jsonpatch;
use kubemock_apimachinery::protobuf::SCHEMA;
use kubemock_apimachinery::strategic::{self, PatchError};
use serde_json::Value;
use tracing::debug;

use super::create;
use super::get::fetch_existing;
use super::resource::{Call, Origin, patch_invalid};
use super::update::{self, Written};
use crate::admission;
use crate::codec;
use crate::crd;
use crate::fieldvalidation::{self, FieldValidation, Refusal, with_warnings};
use crate::keys;
use crate::managedfields::{self, Writer};
use crate::meta::{self, FieldError};
use crate::object::{self, Object};
use crate::status::{ApiError, ApiResult};

/// Read-modify-write attempts before giving up with a Conflict (each attempt fails only when
/// another writer got in between).
const PATCH_ATTEMPTS: usize = 16;

/// A parsed patch document.
pub(crate) enum Patch {
    /// RFC 6902, with the unknown members of its operations (reported as `fieldValidation`
    /// asks, as upstream's strict decoding of the operations reports them).
    Json(jsonpatch::Patch, Vec<String>),
    /// RFC 7386.
    Merge(Value),
    /// Kubernetes' strategic merge patch (built-in kinds).
    Strategic(Value),
    /// Server-side apply: the applied configuration.
    Apply(Value),
}

impl Patch {
    /// The patch of `call`, by its `Content-Type` (docs/api-behaviour.md#patch-types).
    pub(crate) fn parse(call: &Call) -> ApiResult<Patch> {
        match codec::media_type(&call.headers).as_str() {
            "application/json-patch+json" => {
                // `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`,
                // `applyJSPatch`: the operations are decoded strictly first (but under
                // `fieldValidation=Ignore`), then as the library decodes them, then counted.
                let strict = FieldValidation::from_query(&call.query)? != FieldValidation::Ignore;
                let patch = jsonpatch::Patch::decode(&call.body).map_err(|err| {
                    if strict {
                        ApiError::bad_request(format!("error decoding patch: {err}"))
                    } else {
                        ApiError::bad_request(err)
                    }
                })?;
                let unknown = if strict {
                    patch.strict_fields().map_err(|err| {
                        ApiError::bad_request(format!("error decoding patch: {err}"))
                    })?
                } else {
                    Vec::new()
                };
                if patch.len() > jsonpatch::MAX_OPERATIONS {
                    return Err(ApiError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "RequestEntityTooLarge",
                        format!(
                            "The allowed maximum operations in a JSON patch is {}, got {}",
                            jsonpatch::MAX_OPERATIONS,
                            patch.len()
                        ),
                    ));
                }
                Ok(Patch::Json(patch, unknown))
            }
            "application/merge-patch+json" => match serde_json::from_slice::<Value>(&call.body) {
                Ok(value @ Value::Object(_)) => Ok(Patch::Merge(value)),
                Ok(_) => Err(ApiError::bad_request(
                    "Invalid JSON Patch: the merge patch must be a JSON object",
                )),
                Err(err) => Err(ApiError::bad_request(format!("Invalid JSON Patch: {err}"))),
            },
            "application/strategic-merge-patch+json" if call.target.resource.is_custom() => {
                Err(ApiError::unsupported_media_type(&[
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/apply-patch+yaml",
                ]))
            }
            "application/strategic-merge-patch+json" => {
                match serde_json::from_slice::<Value>(&call.body) {
                    Ok(value @ Value::Object(_)) => Ok(Patch::Strategic(value)),
                    Ok(_) => Err(ApiError::bad_request(
                        "the strategic merge patch must be a JSON object",
                    )),
                    Err(err) => Err(ApiError::bad_request(format!("invalid JSON patch: {err}"))),
                }
            }
            "application/apply-patch+yaml" => {
                // YAML is a superset of JSON: one parser for both.
                match codec::Syntax::Yaml.parse(&call.body) {
                    Ok(value @ Value::Object(_)) => Ok(Patch::Apply(value)),
                    Ok(_) => Err(ApiError::bad_request(
                        "error decoding YAML: the applied configuration must be an object",
                    )),
                    Err(err) => Err(ApiError::bad_request(format!("error decoding YAML: {err}"))),
                }
            }
            _ => Err(ApiError::unsupported_media_type(&[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
                "application/apply-patch+yaml",
            ])),
        }
    }

    /// `target`, an object of kind `api_version`/`kind`, with the patch applied.
    pub(crate) fn apply(
        &self,
        mut target: Value,
        api_version: &str,
        kind: &str,
    ) -> ApiResult<Value> {
        match self {
            Patch::Json(patch, _) => {
                // docs/api-behaviour.md#json-patch: an operation that cannot apply (a failed `test` included) is a 422
                // whose message the real server discards.
                patch.apply(&mut target).map_err(|err| {
                    debug!(error = %err.0, "JSON patch does not apply");
                    unprocessable()
                })?;
            }
            Patch::Merge(patch) | Patch::Apply(patch) => json_patch::merge(&mut target, patch),
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

/// docs/api-behaviour.md#json-patch: a patch that cannot apply is a 422 whose message the real server discards.
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
    let writer = check_options(call, &patch)?;
    if let Patch::Apply(config) = patch {
        return apply(call, config, &writer, dry_run).await;
    }
    if subresource == Some("scale") {
        return update::write_scale(call, dry_run, &writer, |scale| {
            let patched = patch.apply(Value::Object(scale.clone()), "autoscaling/v1", "Scale")?;
            let Value::Object(mut patched) = patched else {
                return Err(unprocessable());
            };
            if let Err(err) = update::decode_scale(&mut patched) {
                let value = match &patch {
                    Patch::Strategic(patch) => fieldvalidation::go_print(patch),
                    _ => serde_json::to_string(&patched).unwrap_or_default(),
                };
                return Err(patch_invalid(value, &Refusal::Decode(err)));
            }
            Ok(Value::Object(patched))
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
        let origin = match &patch {
            Patch::Json(_, unknown) => Origin::Patched(unknown),
            Patch::Strategic(patch) => Origin::Strategic(patch),
            Patch::Merge(_) | Patch::Apply(_) => Origin::Patched(&[]),
        };
        let warnings = call.decode_object(&mut body, origin)?;
        check_name(call, &body)?;
        // docs/api-behaviour.md#patch-types: a resourceVersion the patch pins is a precondition; otherwise the body carries
        // the current one, and a concurrent writer just means another attempt.
        let pinned =
            meta::parse_resource_version(object::meta_str(&body, "resourceVersion").unwrap_or(""))?;
        if pinned.is_some_and(|rv| rv != current.mod_revision) {
            return Err(ApiError::modified(resource, name));
        }
        update::check_uid_precondition(resource, name, &key, &body, &existing)?;
        let request = call.admission_request(
            crate::dispatch::Operation::Update,
            name,
            dry_run,
            "PatchOptions",
            Some(&writer),
        );
        crate::dispatch::mutate(&call.state, &request, &mut body, Some(&existing)).await?;
        let reservation = admission::admit_update(
            &call.state,
            resource,
            subresource,
            &existing,
            &mut body,
            dry_run,
        )
        .await?;
        let mut updated = update::merge(resource, subresource, &existing, body);
        admission::validate_merged(resource, subresource, &existing, &mut updated)?;
        crd::admit(resource, Some(&existing), &mut updated)?;
        super::escalation::check(call, Some(&existing), &updated)?;
        crate::dispatch::validate(&call.state, &request, Some(&updated), Some(&existing)).await?;
        managedfields::record_update(resource, &writer, Some(&existing), &mut updated);
        if let Written::Done(object) = update::write(call, &key, &current, updated, dry_run).await?
        {
            reservation.commit().await;
            let response = call.respond(StatusCode::OK, &Value::Object(object));
            return Ok(with_warnings(response, &warnings));
        }
    }
    Err(ApiError::modified(resource, name))
}

/// `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go`, `checkName`, which
/// `patch.go`'s `applyPatch` runs on the patched (for an apply, the merged) object: it must
/// have the URL's name, and no other namespace than the request's. An applied configuration
/// may leave both out: the live object's stay.
fn check_name(call: &Call, object: &Object) -> ApiResult<()> {
    let name = call.target.name.as_deref().unwrap_or("");
    let object_name = object::name_of(object);
    if object_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({object_name}) does not match the name on the URL ({name})"
        )));
    }
    if let Some(namespace) = call.target.namespace.as_deref().filter(|ns| !ns.is_empty()) {
        let object_namespace = object::meta_str(object, "namespace").unwrap_or("");
        if !object_namespace.is_empty() && object_namespace != namespace {
            return Err(ApiError::bad_request(format!(
                "the namespace of the object ({object_namespace}) does not match the namespace on the request ({namespace})"
            )));
        }
    }
    Ok(())
}

/// Upstream's `ValidatePatchOptions`: an apply needs a field manager; `force` is for applies
/// only. Returns the writer of the patch.
fn check_options(call: &Call, patch: &Patch) -> ApiResult<Writer> {
    let writer = call.writer("PatchOptions")?;
    let apply = matches!(patch, Patch::Apply(_));
    let error = if apply && call.query.get("fieldManager").is_none_or(str::is_empty) {
        Some(FieldError {
            field: "fieldManager".to_owned(),
            reason: "FieldValueRequired",
            detail: "Required value: is required for apply patch".to_owned(),
        })
    } else if !apply && call.query.get("force").is_some() {
        Some(FieldError {
            field: "force".to_owned(),
            reason: "FieldValueForbidden",
            detail: "Forbidden: may not be specified for non-apply patch".to_owned(),
        })
    } else {
        None
    };
    match error {
        Some(error) => Err(meta::invalid(
            "PatchOptions.meta.k8s.io",
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![error],
        )),
        None => Ok(writer),
    }
}

/// Server-side apply of `config` (docs/api-behaviour.md#server-side-apply): merged into the live object with field ownership,
/// or, when the object does not exist, created from it (201).
async fn apply(call: &Call, config: Value, writer: &Writer, dry_run: bool) -> ApiResult<Response> {
    let resource = &call.target.resource;
    let subresource = call.target.subresource.as_deref();
    if subresource == Some("scale") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            "server-side apply of the scale subresource is not served by kubemock - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json",
        ));
    }
    if config
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
        || config
            .get("kind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        return Err(ApiError::bad_request(format!(
            "error decoding patch: Object 'Kind' is missing in '{config}'"
        )));
    }
    let mut config = object::typed_object(config, resource)?;
    if config
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|f| !f.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let warnings = call.decode_object(&mut config, Origin::Applied)?;
    let force = call.query.flag("force");
    let name = call.target.name.as_deref().unwrap_or("");
    let namespace = call.target.namespace.as_deref();
    let key = keys::object_key(resource, namespace, name);
    let pinned =
        meta::parse_resource_version(object::meta_str(&config, "resourceVersion").unwrap_or(""))?;
    for _ in 0..PATCH_ATTEMPTS {
        let Some(current) = call.state.fetch(&key).await? else {
            if subresource.is_some() {
                return Err(ApiError::not_found(resource, name));
            }
            // docs/api-behaviour.md#server-side-apply: a resourceVersion in the configuration is ignored when creating.
            let mut fresh = config.clone();
            object::metadata_mut(&mut fresh).shift_remove("resourceVersion");
            let created = managedfields::apply(resource, writer, None, &fresh, force)?;
            check_name(call, &created)?;
            super::escalation::check(call, None, &created)?;
            let result = create::create_object(
                &call.state,
                resource,
                namespace,
                created,
                dry_run,
                None,
                &call.user,
            )
            .await;
            match result {
                Ok(created) => {
                    let response = call.respond(StatusCode::CREATED, &Value::Object(created));
                    return Ok(with_warnings(response, &warnings));
                }
                // Someone else created it in between: apply to theirs.
                Err(err) if err.reason == "AlreadyExists" => continue,
                Err(err) => return Err(err),
            }
        };
        let stored = object::parse_stored(&current.value)?;
        let stored = crate::dispatch::conversion::served(&call.state, resource, stored).await?;
        let existing = admission::from_storage(resource, stored);
        if pinned.is_some_and(|rv| rv != current.mod_revision) {
            return Err(ApiError::modified(resource, name));
        }
        update::check_uid_precondition(resource, name, &key, &config, &existing)?;
        let mut merged = managedfields::apply(resource, writer, Some(&existing), &config, force)?;
        check_name(call, &merged)?;
        let request = call.admission_request(
            crate::dispatch::Operation::Update,
            name,
            dry_run,
            "PatchOptions",
            Some(writer),
        );
        crate::dispatch::mutate(&call.state, &request, &mut merged, Some(&existing)).await?;
        let reservation = admission::admit_update(
            &call.state,
            resource,
            subresource,
            &existing,
            &mut merged,
            dry_run,
        )
        .await?;
        let mut updated = update::merge(resource, subresource, &existing, merged);
        admission::validate_merged(resource, subresource, &existing, &mut updated)?;
        crd::admit(resource, Some(&existing), &mut updated)?;
        super::escalation::check(call, Some(&existing), &updated)?;
        crate::dispatch::validate(&call.state, &request, Some(&updated), Some(&existing)).await?;
        if let Written::Done(object) = update::write(call, &key, &current, updated, dry_run).await?
        {
            reservation.commit().await;
            let response = call.respond(StatusCode::OK, &Value::Object(object));
            return Ok(with_warnings(response, &warnings));
        }
    }
    Err(ApiError::modified(resource, name))
}
