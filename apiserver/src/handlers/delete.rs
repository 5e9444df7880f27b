//! DELETE (docs/api-behaviour.md#delete-step-by-step, #delete-responses) and deletecollection (docs/api-behaviour.md#deletecollection): preconditions, the garbage collector's
//! finalizers from `propagationPolicy` (docs/api-behaviour.md#propagation-policy), graceful deletion of pods (docs/api-behaviour.md#pod-graceful-deletion), and objects
//! with finalizers kept with a deletionTimestamp until the finalizers are gone (docs/api-behaviour.md#finalizers; the
//! write that removes the last one deletes the object, `update::write`). Namespaces (docs/api-behaviour.md#namespace-deletion)
//! are not removed by their first DELETE: it marks them Terminating, and the namespace
//! controller empties them and clears `spec.finalizers` through `/finalize`, the write that
//! removes them.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::get::fetch_existing;
use super::list;
use super::resource::Call;
use super::update::{self, Written};
use crate::codec::Syntax;
use crate::fieldvalidation::with_warnings;
use crate::keys;
use crate::meta;
use crate::object::{self, Object};
use crate::registry::Resource;
use crate::status::{ApiError, ApiResult};
use kubemock_apimachinery::json::json_kind;

/// Read-delete attempts before giving up with a Conflict.
const DELETE_ATTEMPTS: usize = 16;
/// Namespaces that may never be deleted (docs/api-behaviour.md#namespace-lifecycle).
const UNDELETABLE_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The garbage collector's finalizers (docs/api-behaviour.md#propagation-policy).
const ORPHAN: &str = "orphan";
const FOREGROUND: &str = "foregroundDeletion";

/// `propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Propagation {
    Orphan,
    Background,
    Foreground,
}

/// The DeleteOptions kubemock honours.
#[derive(Debug, Default)]
struct DeleteOptions {
    precondition_uid: Option<String>,
    precondition_revision: Option<String>,
    propagation: Option<Propagation>,
    grace_period_seconds: Option<i64>,
}

impl DeleteOptions {
    /// From the body when there is one, else from the query (docs/api-behaviour.md#query-parameters).
    fn parse(call: &Call) -> ApiResult<Self> {
        let body: Value = if call.body.iter().all(u8::is_ascii_whitespace) {
            Value::Null
        } else {
            Syntax::of_body(&call.headers)?
                .parse(&call.body)
                .map_err(|err| ApiError::bad_request(format!("invalid DeleteOptions: {err}")))?
        };
        check_types(&body)?;
        let preconditions = body.get("preconditions");
        let field = |name: &str| {
            preconditions
                .and_then(|p| p.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let policy = body
            .get("propagationPolicy")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| call.query.get("propagationPolicy").map(str::to_owned));
        let orphan_dependents = body
            .get("orphanDependents")
            .and_then(Value::as_bool)
            .or_else(|| call.query.get("orphanDependents").map(|v| v == "true"));
        let propagation = match (policy.as_deref(), orphan_dependents) {
            (Some(_), Some(_)) => {
                return Err(invalid_options(
                    "propagationPolicy",
                    "FieldValueInvalid",
                    "Invalid value: \"...\": orphanDependents and deletionPropagation cannot be both set",
                ));
            }
            (Some("Orphan"), None) => Some(Propagation::Orphan),
            (Some("Background"), None) => Some(Propagation::Background),
            (Some("Foreground"), None) => Some(Propagation::Foreground),
            (Some(other), None) => {
                return Err(invalid_options(
                    "propagationPolicy",
                    "FieldValueNotSupported",
                    &format!(
                        "Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                    ),
                ));
            }
            (None, Some(true)) => Some(Propagation::Orphan),
            (None, Some(false)) => Some(Propagation::Background),
            (None, None) => None,
        };
        let grace_period_seconds = match body.get("gracePeriodSeconds") {
            Some(value) => value.as_i64(),
            None => match call.query.get("gracePeriodSeconds") {
                Some(text) => Some(text.parse::<i64>().map_err(|_| {
                    ApiError::bad_request(format!("invalid gracePeriodSeconds: {text}"))
                })?),
                None => None,
            },
        };
        if grace_period_seconds.is_some_and(|g| g < 0) {
            return Err(invalid_options(
                "gracePeriodSeconds",
                "FieldValueInvalid",
                "Invalid value: -1: must be >= 0",
            ));
        }
        Ok(DeleteOptions {
            precondition_uid: field("uid"),
            precondition_revision: field("resourceVersion"),
            propagation,
            grace_period_seconds,
        })
    }
}

/// The members of `metav1.DeleteOptions` and their Go types; `preconditions` is checked on
/// its own.
const OPTION_TYPES: &[(&str, &str)] = &[
    ("kind", "string"),
    ("apiVersion", "string"),
    ("gracePeriodSeconds", "int64"),
    ("orphanDependents", "bool"),
    ("propagationPolicy", "v1.DeletionPropagation"),
    ("dryRun", "[]string"),
    ("ignoreStoreReadErrorWithClusterBreakingPotential", "bool"),
];

/// Refuses a DeleteOptions body whose members have the wrong JSON type, with the message of
/// Go's decoder, rather than ignore them (a `gracePeriodSeconds` of `"0"` would otherwise
/// delete gracefully, a `preconditions.uid` of `5` check nothing). Upstream answers these
/// with a 500 (the decoder's error is not a Status); a 400 is what the request is.
fn check_types(body: &Value) -> ApiResult<()> {
    let Value::Object(map) = body else {
        return match body {
            Value::Null => Ok(()),
            other => Err(ApiError::bad_request(format!(
                "json: cannot unmarshal {} into Go value of type v1.DeleteOptions",
                json_kind(other)
            ))),
        };
    };
    let refuse = |structure: &str, field: &str, found: &Value, go_type: &str| {
        ApiError::bad_request(format!(
            "json: cannot unmarshal {} into Go struct field {structure}.{field} of type {go_type}",
            match found {
                Value::Number(n) if go_type == "int64" => format!("number {n}"),
                other => json_kind(other).to_owned(),
            }
        ))
    };
    for (field, go_type) in OPTION_TYPES {
        let Some(value) = map.get(*field).filter(|v| !v.is_null()) else {
            continue;
        };
        let fits = match *go_type {
            "int64" => value.as_i64().is_some(),
            "bool" => value.is_boolean(),
            "[]string" => value
                .as_array()
                .is_some_and(|items| items.iter().all(|i| i.is_string() || i.is_null())),
            _ => value.is_string(),
        };
        if !fits {
            return Err(refuse("DeleteOptions", field, value, go_type));
        }
    }
    match map.get("preconditions") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Object(preconditions)) => {
            for field in ["uid", "resourceVersion"] {
                let go_type = if field == "uid" {
                    "types.UID"
                } else {
                    "string"
                };
                match preconditions.get(field) {
                    None | Some(Value::Null | Value::String(_)) => {}
                    Some(other) => {
                        return Err(refuse(
                            "Preconditions",
                            &format!("preconditions.{field}"),
                            other,
                            go_type,
                        ));
                    }
                }
            }
            Ok(())
        }
        Some(other) => Err(refuse(
            "DeleteOptions",
            "preconditions",
            other,
            "v1.Preconditions",
        )),
    }
}

fn invalid_options(field: &str, reason: &'static str, detail: &str) -> ApiError {
    meta::invalid(
        "DeleteOptions",
        "meta.k8s.io",
        "DeleteOptions",
        "",
        vec![meta::FieldError {
            field: field.to_owned(),
            reason,
            detail: detail.to_owned(),
        }],
    )
}

/// `DELETE` of an item.
pub(crate) async fn delete(call: &Call) -> ApiResult<Response> {
    call.require_verb("delete")?;
    let dry_run = call.dry_run("DeleteOptions")?;
    let options = DeleteOptions::parse(call)?;
    let resource = &call.target.resource;
    let name = call.target.name.as_deref().unwrap_or("");
    if resource.group.is_empty()
        && resource.plural == "namespaces"
        && UNDELETABLE_NAMESPACES.contains(&name)
    {
        return Err(ApiError::forbidden(
            resource,
            name,
            "this namespace may not be deleted",
            Vec::new(),
        ));
    }
    let outcome = delete_one(
        call,
        resource,
        call.target.namespace.as_deref(),
        name,
        &options,
        dry_run,
    )
    .await?;
    // docs/api-behaviour.md#propagation-policy: deleting a job without a policy orphans its pods, and says so.
    let warnings = if resource.group == "batch"
        && resource.plural == "jobs"
        && options.propagation.is_none()
    {
        vec![
            "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning".to_owned(),
        ]
    } else {
        Vec::new()
    };
    let body = match outcome {
        Deleted::Pending(object) => Value::Object(object),
        Deleted::Removed(object) if resource.behaviour.delete_returns_object => {
            Value::Object(object)
        }
        Deleted::Removed(object) => {
            success_status(resource, name, object::meta_str(&object, "uid"))
        }
    };
    let response = call.respond(StatusCode::OK, &body);
    Ok(with_warnings(response, &warnings))
}

/// What a delete did.
enum Deleted {
    /// Removed; the object's last state.
    Removed(Object),
    /// Kept (finalizers): the object with its deletionTimestamp.
    Pending(Object),
}

async fn delete_one(
    call: &Call,
    resource: &Arc<Resource>,
    namespace: Option<&str>,
    name: &str,
    options: &DeleteOptions,
    dry_run: bool,
) -> ApiResult<Deleted> {
    let key = keys::object_key(resource, namespace, name);
    let graceful = resource.group.is_empty() && resource.plural == "pods";
    let is_namespace = resource.group.is_empty() && resource.plural == "namespaces";
    for _ in 0..DELETE_ATTEMPTS {
        let (current, stored) = fetch_existing(&call.state, resource, &key, name).await?;
        let existing = object::answered(&stored, current.mod_revision);
        check_preconditions(resource, name, options, &existing, current.mod_revision)?;
        let request = crate::dispatch::Request {
            resource,
            subresource: None,
            namespace,
            name,
            operation: crate::dispatch::Operation::Delete,
            user: &call.user,
            dry_run,
            options: crate::dispatch::options("DeleteOptions", dry_run, None),
        };
        crate::dispatch::mutate(&call.state, &request, &mut stored.clone(), Some(&existing))
            .await?;
        crate::dispatch::validate(&call.state, &request, None, Some(&existing)).await?;
        if is_namespace {
            // docs/api-behaviour.md#namespace-deletion (upstream `pkg/registry/core/namespace/storage`): the first DELETE only
            // marks the namespace; a later one removes it once `spec.finalizers` is empty.
            let terminating = object::meta_str(&existing, "deletionTimestamp").is_some();
            if !terminating {
                let mut marked = stored;
                reconcile_gc_finalizers(resource, options.propagation, &mut marked);
                mark_terminating(&mut marked);
                match update::write(call, &key, &current, marked, dry_run).await? {
                    Written::Done(object) => return Ok(Deleted::Pending(object)),
                    Written::Conflict => continue,
                }
            }
            if !namespace_finalizers(&existing).is_empty() || !finalizers(&existing).is_empty() {
                return Ok(Deleted::Pending(existing));
            }
            if dry_run {
                return Ok(Deleted::Removed(existing));
            }
            if update::delete_at(call, &key, current.mod_revision)
                .await?
                .is_some()
            {
                return Ok(Deleted::Removed(existing));
            }
            continue;
        }
        if object::meta_str(&existing, "deletionTimestamp").is_some() {
            // docs/api-behaviour.md#delete-step-by-step step 7, docs/api-behaviour.md#pod-graceful-deletion: only a shorter grace period for a pod changes anything.
            let pending = stored
                .get("metadata")
                .and_then(|m| m.get("deletionGracePeriodSeconds"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            match options.grace_period_seconds {
                Some(grace) if graceful && grace < pending => {
                    let shortened = mark_deleting(stored.clone(), grace, false);
                    if grace == 0 && finalizers(&shortened).is_empty() {
                        if dry_run {
                            return Ok(Deleted::Removed(existing));
                        }
                        match update::delete_at(call, &key, current.mod_revision).await? {
                            Some(_) => return Ok(Deleted::Removed(existing)),
                            None => continue,
                        }
                    }
                    match update::write(call, &key, &current, shortened, dry_run).await? {
                        Written::Done(object) => return Ok(Deleted::Pending(object)),
                        Written::Conflict => continue,
                    }
                }
                _ => return Ok(Deleted::Pending(existing)),
            }
        }
        let mut updated = stored;
        reconcile_gc_finalizers(resource, options.propagation, &mut updated);
        crate::crd::on_delete(resource, &mut updated);
        let grace = if graceful {
            pod_grace_period(&updated, options)
        } else {
            0
        };
        if !finalizers(&updated).is_empty() || grace > 0 {
            let marked = mark_deleting(updated, grace, true);
            match update::write(call, &key, &current, marked, dry_run).await? {
                Written::Done(object) => return Ok(Deleted::Pending(object)),
                Written::Conflict => continue,
            }
        }
        if graceful {
            // docs/api-behaviour.md#pod-graceful-deletion: grace 0 is two writes — marked (MODIFIED), then removed (DELETED); the
            // answer is the pod as deleted.
            let marked = mark_deleting(updated, 0, true);
            let object = match update::write(call, &key, &current, marked, dry_run).await? {
                Written::Done(object) => object,
                Written::Conflict => continue,
            };
            if dry_run {
                return Ok(Deleted::Removed(object));
            }
            let revision = meta::parse_resource_version(
                object::meta_str(&object, "resourceVersion").unwrap_or(""),
            )?
            .unwrap_or(current.mod_revision);
            return Ok(match update::delete_at(call, &key, revision).await? {
                Some(_) => Deleted::Removed(object),
                // Another writer got in after the mark: the pod stays, being deleted.
                None => Deleted::Pending(object),
            });
        }
        if dry_run {
            return Ok(Deleted::Removed(existing));
        }
        // A conflict (or a concurrent delete) means another attempt, which sees the new state
        // (or answers the 404).
        if update::delete_at(call, &key, current.mod_revision)
            .await?
            .is_some()
        {
            return Ok(Deleted::Removed(existing));
        }
    }
    Err(ApiError::modified(resource, name))
}

/// The object's finalizers.
fn finalizers(object: &Object) -> Vec<String> {
    object
        .get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A namespace's `spec.finalizers` (docs/api-behaviour.md#namespace-deletion): while any remain, it is not removed.
pub(crate) fn namespace_finalizers(object: &Object) -> Vec<String> {
    object
        .get("spec")
        .and_then(|s| s.get("finalizers"))
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// docs/api-behaviour.md#namespace-deletion: a namespace's deletion starts with a deletionTimestamp (no grace period, no
/// generation) and `status.phase: Terminating`.
fn mark_terminating(namespace: &mut Object) {
    let metadata = object::metadata_mut(namespace);
    metadata.insert(
        "deletionTimestamp".to_owned(),
        Value::String(meta::now_rfc3339()),
    );
    meta::canonicalize_metadata(metadata);
    let status = namespace.entry("status").or_insert_with(|| json!({}));
    if let Value::Object(status) = status {
        status.insert("phase".to_owned(), json!("Terminating"));
    }
}

/// Whether deleting `resource` without a policy orphans dependents (docs/api-behaviour.md#propagation-policy): core
/// replicationcontrollers and batch jobs.
fn orphans_by_default(resource: &Resource) -> bool {
    matches!(
        (resource.group.as_str(), resource.plural.as_str()),
        ("", "replicationcontrollers") | ("batch", "jobs")
    )
}

/// docs/api-behaviour.md#propagation-policy: the `orphan` / `foregroundDeletion` finalizers the policy asks for (an existing one
/// counts as the default).
fn reconcile_gc_finalizers(resource: &Resource, policy: Option<Propagation>, object: &mut Object) {
    let mut list = finalizers(object);
    let has = |list: &[String], f: &str| list.iter().any(|x| x == f);
    let policy = match policy {
        Some(policy) => policy,
        None if has(&list, ORPHAN) || has(&list, FOREGROUND) => return,
        None if orphans_by_default(resource) => Propagation::Orphan,
        None => return,
    };
    let (add, drop) = match policy {
        Propagation::Orphan => (Some(ORPHAN), vec![FOREGROUND]),
        Propagation::Foreground => (Some(FOREGROUND), vec![ORPHAN]),
        Propagation::Background => (None, vec![ORPHAN, FOREGROUND]),
    };
    let before = list.clone();
    list.retain(|f| !drop.contains(&f.as_str()));
    if let Some(add) = add
        && !has(&list, add)
    {
        list.push(add.to_owned());
    }
    if list == before {
        return;
    }
    let metadata = object::metadata_mut(object);
    if list.is_empty() {
        metadata.shift_remove("finalizers");
    } else {
        metadata.insert("finalizers".to_owned(), json!(list));
    }
}

/// docs/api-behaviour.md#pod-graceful-deletion: the grace period of a pod's deletion.
fn pod_grace_period(pod: &Object, options: &DeleteOptions) -> i64 {
    let spec = pod.get("spec");
    let unassigned = spec
        .and_then(|s| s.get("nodeName"))
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    let finished = matches!(
        pod.get("status")
            .and_then(|s| s.get("phase"))
            .and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    if unassigned || finished {
        return 0;
    }
    let grace = options.grace_period_seconds.unwrap_or_else(|| {
        spec.and_then(|s| s.get("terminationGracePeriodSeconds"))
            .and_then(Value::as_i64)
            .unwrap_or(30)
    });
    if grace < 0 { 1 } else { grace }
}

/// docs/api-behaviour.md#delete-step-by-step step 5: deletionTimestamp now plus the grace period, deletionGracePeriodSeconds the
/// grace, generation + 1 if set (only when the deletion starts).
fn mark_deleting(mut object: Object, grace: i64, starting: bool) -> Object {
    let metadata = object::metadata_mut(&mut object);
    metadata.insert(
        "deletionTimestamp".to_owned(),
        Value::String(meta::rfc3339_after(grace)),
    );
    metadata.insert("deletionGracePeriodSeconds".to_owned(), json!(grace));
    if starting
        && let Some(generation) = metadata
            .get("generation")
            .and_then(Value::as_i64)
            .filter(|g| *g > 0)
    {
        metadata.insert("generation".to_owned(), json!(generation + 1));
    }
    meta::canonicalize_metadata(metadata);
    object
}

/// docs/api-behaviour.md#delete-step-by-step step 2 (the messages name the Kind, not the resource).
fn check_preconditions(
    resource: &Resource,
    name: &str,
    options: &DeleteOptions,
    existing: &Object,
    revision: u64,
) -> ApiResult<()> {
    let kind = resource.qualified_kind();
    let conflict = |why: String| {
        let mut error = ApiError::conflict(resource, name, &why);
        error.message = format!("Operation cannot be fulfilled on {kind} \"{name}\": {why}");
        error
    };
    if let Some(uid) = &options.precondition_uid {
        let stored = object::meta_str(existing, "uid").unwrap_or("");
        if uid != stored {
            return Err(conflict(format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({stored}). The object might have been deleted and then recreated"
            )));
        }
    }
    if let Some(rv) = &options.precondition_revision {
        let stored = meta::resource_version(revision);
        if *rv != stored {
            return Err(conflict(format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({stored}). The object might have been modified"
            )));
        }
    }
    Ok(())
}

/// The Status an immediate delete answers with (docs/api-behaviour.md#delete-responses).
fn success_status(resource: &Resource, name: &str, uid: Option<&str>) -> Value {
    let mut details = Map::new();
    details.insert("name".to_owned(), json!(name));
    if !resource.group.is_empty() {
        details.insert("group".to_owned(), json!(resource.group));
    }
    details.insert("kind".to_owned(), json!(resource.plural));
    if let Some(uid) = uid {
        details.insert("uid".to_owned(), json!(uid));
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

/// `DELETE` of a collection: deletes every matching object, answers with the list of what was
/// deleted (state before deletion).
pub(crate) async fn delete_collection(call: &Call) -> ApiResult<Response> {
    call.require_verb("deletecollection")?;
    let resource = &call.target.resource;
    if resource.namespaced && call.target.namespace.is_none() {
        return Err(ApiError::route_method_not_allowed());
    }
    let dry_run = call.dry_run("DeleteOptions")?;
    let options = DeleteOptions::parse(call)?;
    let (items, revision) = list::matching_objects(call).await?;
    let mut deleted = Vec::new();
    for item in items {
        let name = object::name_of(&item).to_owned();
        let namespace = object::meta_str(&item, "namespace").map(str::to_owned);
        match delete_one(
            call,
            resource,
            namespace.as_deref(),
            &name,
            &options,
            dry_run,
        )
        .await
        {
            Ok(Deleted::Removed(object) | Deleted::Pending(object)) => deleted.push(object),
            Err(err) if err.reason == "NotFound" => {}
            Err(err) => return Err(err),
        }
    }
    let body = list::list_body(resource, deleted, revision, None, None);
    Ok(call.respond_list(StatusCode::OK, &body))
}
