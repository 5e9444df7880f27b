//! PUT (docs/api-behaviour.md#writes): optimistic concurrency on `metadata.resourceVersion`, unconditional updates
//! where the kind allows them, create-on-update, immutable metadata (docs/api-behaviour.md#system-fields), status
//! subresource rules, generation (docs/api-behaviour.md#generation), no-op detection (docs/api-behaviour.md#update-and-conflicts), and the `scale` and
//! `finalize` subresources.

use axum::http::StatusCode;
use axum::response::Response;
use kubemock_storage::{DeleteOutcome, Guard, KeyValue, Revision, UpdateOutcome};
use serde_json::{Value, json};

use super::create;
use super::get::fetch_existing;
use super::resource::{Call, Origin};
use super::scale;
use super::strategy;
use crate::admission;
use crate::codec::Syntax;
use crate::crd;
use crate::fieldvalidation::{self, DecodeError, with_warnings};
use crate::keys;
use crate::managedfields::{self, Writer};
use crate::meta::{self, FieldError};
use crate::object::{self, Object};
use crate::openapi::SCHEMAS;
use crate::registry::{GenerationPolicy, Resource};
use crate::status::{ApiError, ApiResult};

/// Read-modify-write attempts of an update without a client resourceVersion before giving up
/// with a Conflict (each attempt only fails when another writer got in between).
const UPDATE_ATTEMPTS: usize = 16;

/// `PUT` of an item or a subresource.
pub(crate) async fn update(call: &Call) -> ApiResult<Response> {
    let resource = &call.target.resource;
    let subresource = call.target.subresource.as_deref();
    call.require_verb("update")?;
    let dry_run = call.dry_run("UpdateOptions")?;
    let writer = call.writer("UpdateOptions")?;
    if subresource == Some("scale") {
        return put_scale(call, dry_run, &writer).await;
    }
    let mut body = object::decode_body(&call.headers, &call.body, resource)?;
    let warnings = call.decode_object(&mut body, Origin::Body)?;
    let name = call.target.name.as_deref().unwrap_or("");
    let namespace = call.target.namespace.as_deref();
    check_identity(call, &body)?;
    let client_revision =
        meta::parse_resource_version(object::meta_str(&body, "resourceVersion").unwrap_or(""))?;
    let key = keys::object_key(resource, namespace, name);
    for _ in 0..UPDATE_ATTEMPTS {
        let Some(current) = call.state.fetch(&key).await? else {
            if resource.behaviour.create_on_update && subresource.is_none() {
                // Upstream creates through its update path (`registry/generic/registry/
                // store.go`, `Update`), which never reaches the store's check of a create's
                // resourceVersion: the body's is ignored.
                let mut fresh = body.clone();
                object::metadata_mut(&mut fresh).shift_remove("resourceVersion");
                super::escalation::check(call, None, &fresh)?;
                let created = create::create_object(
                    &call.state,
                    resource,
                    namespace,
                    fresh,
                    dry_run,
                    Some(&writer),
                    &call.user,
                )
                .await?;
                let response = call.respond(StatusCode::CREATED, &Value::Object(created));
                return Ok(with_warnings(response, &warnings));
            }
            return Err(ApiError::not_found(resource, name));
        };
        if client_revision.is_none() && !resource.behaviour.unconditional_update {
            return Err(meta::invalid(
                &resource.qualified(),
                &resource.group,
                &resource.plural,
                name,
                vec![FieldError {
                    field: "metadata.resourceVersion".to_owned(),
                    reason: "FieldValueInvalid",
                    detail: "Invalid value: 0x0: must be specified for an update".to_owned(),
                }],
            ));
        }
        let stored = object::parse_stored(&current.value)?;
        let stored = crate::dispatch::conversion::served(&call.state, resource, stored).await?;
        let existing = admission::from_storage(resource, stored);
        check_uid_precondition(resource, name, &key, &body, &existing)?;
        if client_revision.is_some_and(|rv| rv != current.mod_revision) {
            return Err(ApiError::modified(resource, name));
        }
        let mut body = body.clone();
        let request = call.admission_request(
            crate::dispatch::Operation::Update,
            name,
            dry_run,
            "UpdateOptions",
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
        let mut updated = merge(resource, subresource, &existing, body);
        admission::validate_merged(resource, subresource, &existing, &mut updated)?;
        crd::admit(resource, Some(&existing), &mut updated)?;
        super::escalation::check(call, Some(&existing), &updated)?;
        crate::dispatch::validate(&call.state, &request, Some(&updated), Some(&existing)).await?;
        managedfields::record_update(resource, &writer, Some(&existing), &mut updated);
        match write(call, &key, &current, updated, dry_run).await? {
            Written::Done(object) => {
                reservation.commit().await;
                let response = call.respond(StatusCode::OK, &Value::Object(object));
                return Ok(with_warnings(response, &warnings));
            }
            Written::Conflict if client_revision.is_some() => {
                return Err(ApiError::modified(resource, name));
            }
            Written::Conflict => {}
        }
    }
    Err(ApiError::modified(resource, name))
}

/// docs/api-behaviour.md#names: the body names the object of the URL.
pub(crate) fn check_identity(call: &Call, body: &Object) -> ApiResult<()> {
    let name = call.target.name.as_deref().unwrap_or("");
    if call.target.resource.namespaced {
        let body_namespace = object::meta_str(body, "namespace").unwrap_or("");
        if !body_namespace.is_empty() && Some(body_namespace) != call.target.namespace.as_deref() {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    }
    let body_name = object::name_of(body);
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    Ok(())
}

/// What writing an updated object came to.
pub(crate) enum Written {
    /// Stored (or a no-op, or a dry run): the object as answered.
    Done(Object),
    /// Another writer changed the object since it was read.
    Conflict,
}

/// Stores `updated` over `current` (guarded by its revision), skipping no-op writes.
pub(crate) async fn write(
    call: &Call,
    key: &str,
    current: &KeyValue,
    updated: Object,
    dry_run: bool,
) -> ApiResult<Written> {
    let converted =
        crate::dispatch::conversion::for_storage(&call.state, &call.target.resource, &updated)
            .await?;
    let bytes = match &converted {
        Some(converted) => object::to_stored(converted)?,
        None => object::to_stored(&admission::to_storage(&call.target.resource, &updated))?,
    };
    let answered = |mut object: Object, revision: Revision| {
        object::set_resource_version(&mut object, revision);
        object
    };
    // docs/api-behaviour.md#update-and-conflicts: an identical object is no write, no new resourceVersion, no event. Bodies decoded
    // from protobuf list their fields in another order: equal lengths are compared as objects.
    let unchanged = bytes == current.value
        || (bytes.len() == current.value.len()
            && object::parse_stored(&current.value).is_ok_and(|stored| stored == updated));
    if unchanged {
        return Ok(Written::Done(answered(updated, current.mod_revision)));
    }
    if object::meta_str(&updated, "deletionTimestamp").is_some() {
        let existing = object::parse_stored(&current.value)?;
        if object::meta_str(&existing, "deletionTimestamp").is_some() {
            check_no_new_finalizers(&call.target.resource, &existing, &updated)?;
        }
        // docs/api-behaviour.md#delete-step-by-step: the write that removes the last finalizer of an object being deleted deletes
        // it, in the same request.
        if deletes_during_update(&call.target.resource, &existing, &updated) {
            if dry_run {
                return Ok(Written::Done(answered(updated, current.mod_revision)));
            }
            return Ok(match delete_at(call, key, current.mod_revision).await? {
                Some(revision) => Written::Done(answered(updated, revision)),
                None => Written::Conflict,
            });
        }
    }
    if dry_run {
        return Ok(Written::Done(answered(updated, current.mod_revision)));
    }
    match call
        .state
        .store()
        .update(
            key.to_owned().into(),
            bytes,
            Guard::ModRevision(current.mod_revision),
        )
        .await
        .map_err(ApiError::from_storage)?
    {
        UpdateOutcome::Updated { kv, .. } => Ok(Written::Done(answered(updated, kv.mod_revision))),
        UpdateOutcome::Conflict(_) | UpdateOutcome::NotFound => Ok(Written::Conflict),
    }
}

fn finalizer_list(object: &Object) -> Vec<&str> {
    object
        .get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Upstream's `ShouldDeleteDuringUpdate`: the old object had finalizers, the new one has none,
/// and its deletion has no grace period left. For a namespace `spec.finalizers` count too
/// (`ShouldDeleteNamespaceDuringUpdate`, docs/api-behaviour.md#namespace-deletion): its `/finalize` that clears them removes it.
fn deletes_during_update(resource: &Resource, existing: &Object, updated: &Object) -> bool {
    let grace = updated
        .get("metadata")
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let blocking = |object: &Object| {
        let mut count = finalizer_list(object).len();
        if resource.group.is_empty() && resource.plural == "namespaces" {
            count += super::delete::namespace_finalizers(object).len();
        }
        count
    };
    blocking(existing) > 0 && blocking(updated) == 0 && grace == 0
}

/// docs/api-behaviour.md#finalizers: no finalizer may be added once the deletion has started.
fn check_no_new_finalizers(
    resource: &Resource,
    existing: &Object,
    updated: &Object,
) -> ApiResult<()> {
    let old = finalizer_list(existing);
    let added: Vec<&str> = finalizer_list(updated)
        .into_iter()
        .filter(|f| !old.contains(f))
        .collect();
    if added.is_empty() {
        return Ok(());
    }
    let quoted: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
    Err(meta::invalid(
        &resource.qualified_kind(),
        &resource.group,
        &resource.kind,
        object::name_of(updated),
        vec![FieldError {
            field: "metadata.finalizers".to_owned(),
            reason: "FieldValueForbidden",
            detail: format!(
                "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                quoted.join(", ")
            ),
        }],
    ))
}

/// Deletes `key` if it is still at `revision`: the delete's revision, or `None` when another
/// writer got in (or the key is gone).
pub(crate) async fn delete_at(
    call: &Call,
    key: &str,
    revision: Revision,
) -> ApiResult<Option<Revision>> {
    let outcome = call
        .state
        .store()
        .delete(key.to_owned().into(), Guard::ModRevision(revision))
        .await
        .map_err(ApiError::from_storage)?;
    Ok(match outcome {
        DeleteOutcome::Deleted { revision, prev } => {
            admission::deleted(&call.state, &call.target.resource, &prev.value).await;
            Some(revision)
        }
        DeleteOutcome::Conflict(_) | DeleteOutcome::NotFound => None,
    })
}

/// docs/api-behaviour.md#system-fields: a different non-empty uid in a PUT body is a failed precondition.
pub(crate) fn check_uid_precondition(
    resource: &Resource,
    name: &str,
    key: &str,
    body: &Object,
    existing: &Object,
) -> ApiResult<()> {
    let body_uid = object::meta_str(body, "uid").unwrap_or("");
    let stored_uid = object::meta_str(existing, "uid").unwrap_or("");
    if body_uid.is_empty() || body_uid == stored_uid {
        return Ok(());
    }
    Err(ApiError::conflict(
        resource,
        name,
        &format!(
            "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {body_uid}, UID in object meta: {stored_uid}"
        ),
    ))
}

/// The object an update stores: the body for the main resource (with the stored status, as
/// every strategy's `PrepareForUpdate` keeps it, and for custom resources only when their
/// definition has a status subresource), the status strategy's merge for `/status`
/// (`strategy`), the stored object with the body's `spec.finalizers` for `/finalize`; a
/// CertificateSigningRequest's strategies (`admission::certificates`); immutable metadata
/// copied back from the stored object. Only a write of the object itself moves the
/// generation.
pub(crate) fn merge(
    resource: &Resource,
    subresource: Option<&str>,
    existing: &Object,
    body: Object,
) -> Object {
    let mut updated = match subresource {
        Some("status") => strategy::status_update(resource, existing, body),
        Some("ephemeralcontainers") => strategy::ephemeral_containers_update(existing, &body),
        Some("finalize") => {
            let mut updated = existing.clone();
            let finalizers = body.get("spec").and_then(|s| s.get("finalizers")).cloned();
            let spec = updated.entry("spec").or_insert_with(|| json!({}));
            if let Value::Object(spec) = spec {
                match finalizers {
                    Some(finalizers) => spec.insert("finalizers".to_owned(), finalizers),
                    None => spec.shift_remove("finalizers"),
                };
            }
            updated
        }
        None => {
            let mut updated = body;
            if resource.subresource("status").is_some() {
                set_or_remove(&mut updated, "status", existing.get("status").cloned());
            }
            updated
        }
        // `approval`: the kind's strategy below.
        Some(_) => body,
    };
    if resource.behaviour.admission == crate::registry::Admission::CertificateSigningRequest {
        admission::certificates::prepare_update(subresource, existing, &mut updated);
    }
    if resource.group.is_empty()
        && resource.plural == "namespaces"
        && subresource != Some("finalize")
    {
        // Upstream's namespace strategies: only `/finalize` changes `spec.finalizers` (docs/api-behaviour.md#namespace-deletion).
        let kept = existing
            .get("spec")
            .and_then(|s| s.get("finalizers"))
            .cloned();
        let spec = updated.entry("spec").or_insert_with(|| json!({}));
        if let Value::Object(spec) = spec {
            match kept {
                Some(finalizers) => spec.insert("finalizers".to_owned(), finalizers),
                None => spec.shift_remove("finalizers"),
            };
        }
    }
    let existing_meta = existing.get("metadata").and_then(Value::as_object);
    let metadata = object::metadata_mut(&mut updated);
    for field in [
        "uid",
        "namespace",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match existing_meta.and_then(|m| m.get(field)) {
            Some(value) => metadata.insert(field.to_owned(), value.clone()),
            None => metadata.shift_remove(field),
        };
    }
    metadata.shift_remove("resourceVersion");
    metadata.shift_remove("selfLink");
    if resource.group.is_empty() && resource.plural == "namespaces" {
        let name = metadata.get("name").cloned().unwrap_or(Value::Null);
        let labels = metadata.entry("labels").or_insert_with(|| json!({}));
        if let Value::Object(labels) = labels {
            labels.insert("kubernetes.io/metadata.name".to_owned(), name);
        }
    }
    // Upstream's subresource strategies never move the generation (a Deployment's revision
    // annotation is written through `/status`, and must not look like a new spec).
    if subresource.is_none() {
        bump_generation(resource, existing, &mut updated);
    }
    meta::canonicalize_metadata(object::metadata_mut(&mut updated));
    updated
}

fn set_or_remove(object: &mut Object, field: &str, value: Option<Value>) {
    match value {
        Some(value) => object.insert(field.to_owned(), value),
        None => object.shift_remove(field),
    };
}

/// docs/api-behaviour.md#generation: generation moves on spec changes (and, for Deployments, annotation changes).
pub(crate) fn bump_generation(resource: &Resource, existing: &Object, updated: &mut Object) {
    let policy = resource.behaviour.generation;
    if policy == GenerationPolicy::None {
        return;
    }
    let annotations = |o: &Object| {
        o.get("metadata")
            .and_then(|m| m.get("annotations"))
            .cloned()
    };
    let content = |o: &Object, with_status: bool| -> Vec<(String, Value)> {
        o.iter()
            .filter(|(k, _)| match k.as_str() {
                "metadata" | "apiVersion" | "kind" => false,
                "status" => with_status,
                _ => true,
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let changed = match policy {
        GenerationPolicy::AllButMetadataAndStatus => {
            content(existing, false) != content(updated, false)
        }
        GenerationPolicy::AllButMetadata => content(existing, true) != content(updated, true),
        GenerationPolicy::Webhooks => existing.get("webhooks") != updated.get("webhooks"),
        _ => {
            existing.get("spec") != updated.get("spec")
                || (policy == GenerationPolicy::SpecAndAnnotations
                    && annotations(existing) != annotations(updated))
        }
    };
    let old = existing
        .get("metadata")
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(1);
    let generation = if changed { old + 1 } else { old };
    object::metadata_mut(updated).insert("generation".to_owned(), json!(generation));
}

/// `PUT .../scale`: the body is the new Scale, decoded as upstream decodes an
/// `autoscaling/v1` Scale (a `replicas` of the wrong type is a 400, never a zero).
async fn put_scale(call: &Call, dry_run: bool, writer: &Writer) -> ApiResult<Response> {
    let body: Value = Syntax::of_body(&call.headers)?
        .parse(&call.body)
        .map_err(|err| ApiError::bad_request(format!("the body is not a valid Scale: {err}")))?;
    let Value::Object(mut scale) = body else {
        return Err(ApiError::bad_request(
            "the body is not a valid Scale: expected an object",
        ));
    };
    decode_scale(&mut scale).map_err(|err| {
        ApiError::bad_request(format!(
            "Scale in version \"v1\" cannot be handled as a Scale: {}",
            err.message()
        ))
    })?;
    let body = Value::Object(scale);
    write_scale(call, dry_run, writer, |_| Ok(body.clone())).await
}

/// Decodes a proposed `autoscaling/v1` Scale (`fieldvalidation::decode_kind`).
pub(crate) fn decode_scale(scale: &mut Object) -> Result<(), DecodeError> {
    fieldvalidation::decode_kind(&SCHEMAS, "autoscaling", "v1", "Scale", scale)
}

/// Writes `spec.replicas` of the parent from the Scale that `propose` makes of the current one
/// (docs/api-behaviour.md#scale-subresource); a `metadata.resourceVersion` in it is a precondition. Retried when another writer
/// gets in between.
pub(crate) async fn write_scale(
    call: &Call,
    dry_run: bool,
    writer: &Writer,
    mut propose: impl FnMut(&Object) -> ApiResult<Value>,
) -> ApiResult<Response> {
    let resource = &call.target.resource;
    let name = call.target.name.as_deref().unwrap_or("");
    let key = keys::object_key(resource, call.target.namespace.as_deref(), name);
    for _ in 0..UPDATE_ATTEMPTS {
        let (current, existing) = fetch_existing(&call.state, resource, &key, name).await?;
        let answered = object::answered(&existing, current.mod_revision);
        let body = propose(&scale::scale_of(resource, &answered))?;
        let replicas = body
            .get("spec")
            .and_then(|s| s.get("replicas"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if replicas < 0 {
            return Err(meta::invalid(
                "Scale.autoscaling",
                "autoscaling",
                "Scale",
                name,
                vec![FieldError {
                    field: "spec.replicas".to_owned(),
                    reason: "FieldValueInvalid",
                    detail: format!(
                        "Invalid value: {replicas}: must be greater than or equal to 0"
                    ),
                }],
            ));
        }
        let client_revision = meta::parse_resource_version(
            body.get("metadata")
                .and_then(|m| m.get("resourceVersion"))
                .and_then(Value::as_str)
                .unwrap_or(""),
        )?;
        if client_revision.is_some_and(|rv| rv != current.mod_revision) {
            return Err(ApiError::modified(resource, name));
        }
        let mut updated = existing.clone();
        scale::set_replicas(resource, &mut updated, replicas);
        bump_generation(resource, &existing, &mut updated);
        managedfields::record_update(resource, writer, Some(&existing), &mut updated);
        // A conflict means another writer got in between: the next attempt reads its write
        // (and a pinned resourceVersion then no longer matches).
        if let Written::Done(parent) = write(call, &key, &current, updated, dry_run).await? {
            let scale = scale::scale_of(resource, &parent);
            return Ok(call.respond(StatusCode::OK, &Value::Object(scale)));
        }
    }
    Err(ApiError::modified(resource, name))
}

/// `POST .../pods/{name}/binding`: assigns a pod to a node (what a scheduler does), as the
/// real binding storage does: sets `spec.nodeName` and the `PodScheduled` condition, refuses a
/// pod that is already assigned or being deleted, and answers 201 with a success Status.
pub(crate) async fn bind(call: &Call) -> ApiResult<Response> {
    let name = call.target.name.as_deref().unwrap_or("").to_owned();
    let body: Value = Syntax::of_body(&call.headers)?
        .parse(&call.body)
        .map_err(|err| ApiError::bad_request(format!("the body is not a valid Binding: {err}")))?;
    let body = match body {
        Value::Object(mut binding) => {
            fieldvalidation::decode_kind(&SCHEMAS, "", "v1", "Binding", &mut binding).map_err(
                |err| {
                    ApiError::bad_request(format!(
                        "Binding in version \"v1\" cannot be handled as a Binding: {}",
                        err.message()
                    ))
                },
            )?;
            Value::Object(binding)
        }
        other => other,
    };
    bind_pod(call, &name, body).await
}

/// `POST .../namespaces/{ns}/bindings`: the legacy form of `pods/{name}/binding`, the pod named
/// by the (decoded) Binding's `metadata.name` (`LegacyBindingREST`).
pub(crate) async fn bind_from_collection(call: &Call, binding: Object) -> ApiResult<Response> {
    let pods = call
        .state
        .registry()
        .lookup("", "v1", "pods")
        .ok_or_else(|| ApiError::internal("pods are not registered"))?;
    let name = object::name_of(&binding).to_owned();
    let target = crate::target::Target {
        resource: pods,
        namespace: call.target.namespace.clone(),
        name: Some(name.clone()),
        subresource: Some("binding".to_owned()),
        legacy_watch: false,
    };
    let pod_call = Call {
        state: call.state.clone(),
        target: std::sync::Arc::new(target),
        query: call.query.clone(),
        headers: call.headers.clone(),
        body: call.body.clone(),
        user: call.user.clone(),
        negotiated: call.negotiated,
    };
    bind_pod(&pod_call, &name, Value::Object(binding)).await
}

/// Binds the pod `name` of `call`'s resource (pods) to the node the Binding `body` targets.
async fn bind_pod(call: &Call, name: &str, body: Value) -> ApiResult<Response> {
    let resource = &call.target.resource;
    let dry_run = call.dry_run("CreateOptions")?;
    let node = body
        .get("target")
        .and_then(|t| t.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            meta::invalid(
                "Binding",
                "",
                "Binding",
                name,
                vec![FieldError {
                    field: "target.name".to_owned(),
                    reason: "FieldValueRequired",
                    detail: "Required value".to_owned(),
                }],
            )
        })?
        .to_owned();
    let key = keys::object_key(resource, call.target.namespace.as_deref(), name);
    for _ in 0..UPDATE_ATTEMPTS {
        let (current, existing) = fetch_existing(&call.state, resource, &key, name).await?;
        if object::meta_str(&existing, "deletionTimestamp").is_some() {
            return Err(ApiError::conflict(
                resource,
                name,
                &format!("pod {name} is being deleted, cannot be assigned to a host"),
            ));
        }
        let assigned = existing
            .get("spec")
            .and_then(|s| s.get("nodeName"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        if let Some(assigned) = assigned {
            return Err(ApiError::conflict(
                resource,
                name,
                &format!("pod {name} is already assigned to node \"{assigned}\""),
            ));
        }
        let mut updated = existing.clone();
        if let Value::Object(spec) = updated.entry("spec").or_insert_with(|| json!({})) {
            spec.insert("nodeName".to_owned(), Value::String(node.clone()));
        }
        set_condition(
            &mut updated,
            json!({
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": null,
                "lastTransitionTime": meta::now_rfc3339(),
            }),
        );
        match write(call, &key, &current, updated, dry_run).await? {
            Written::Done(_) => {
                let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
                return Ok(call.respond(StatusCode::CREATED, &status));
            }
            Written::Conflict => {}
        }
    }
    Err(ApiError::modified(resource, name))
}

/// Sets (replacing one of the same type) a condition in `status.conditions`.
fn set_condition(object: &mut Object, condition: Value) {
    let status = object.entry("status").or_insert_with(|| json!({}));
    let Value::Object(status) = status else {
        return;
    };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    let Value::Array(conditions) = conditions else {
        return;
    };
    let kind = condition.get("type").cloned();
    conditions.retain(|c| c.get("type") != kind.as_ref());
    conditions.push(condition);
}
