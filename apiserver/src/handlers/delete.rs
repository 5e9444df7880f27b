//! DELETE (§6.1, §6.2) and deletecollection (§6.5). An object with finalizers is not removed:
//! it gets its deletionTimestamp and stays until the finalizers are gone (the deletion
//! lifecycle's propagation policies, graceful pod deletion and namespace termination come with
//! the API server's second issue).

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use kubemock_storage::{DeleteOutcome, Guard};
use serde_json::{Map, Value, json};

use super::get::fetch;
use super::list;
use super::resource::Call;
use super::update::{self, Written};
use crate::codec::Syntax;
use crate::keys;
use crate::meta;
use crate::object::{self, Object};
use crate::registry::Resource;
use crate::status::{ApiError, ApiResult};

/// Read-delete attempts before giving up with a Conflict.
const DELETE_ATTEMPTS: usize = 16;
/// Namespaces that may never be deleted (§3.4).
const UNDELETABLE_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The parts of DeleteOptions kubemock honours so far.
#[derive(Debug, Default)]
struct DeleteOptions {
    precondition_uid: Option<String>,
    precondition_revision: Option<String>,
}

impl DeleteOptions {
    /// From the body when there is one, else from the query (§1.5).
    fn parse(call: &Call) -> ApiResult<Self> {
        if call.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(DeleteOptions::default());
        }
        let body: Value = Syntax::of_body(&call.headers)?
            .parse(&call.body)
            .map_err(|err| ApiError::bad_request(format!("invalid DeleteOptions: {err}")))?;
        let preconditions = body.get("preconditions");
        let field = |name: &str| {
            preconditions
                .and_then(|p| p.get(name))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        Ok(DeleteOptions {
            precondition_uid: field("uid"),
            precondition_revision: field("resourceVersion"),
        })
    }
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
    let body = match outcome {
        Deleted::Pending(object) => Value::Object(object),
        Deleted::Removed(object) if resource.behaviour.delete_returns_object => {
            Value::Object(object)
        }
        Deleted::Removed(object) => {
            success_status(resource, name, object::meta_str(&object, "uid"))
        }
    };
    Ok(object::respond(StatusCode::OK, &body, call.pretty()))
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
    for _ in 0..DELETE_ATTEMPTS {
        let current = fetch(&call.state, &key)
            .await?
            .ok_or_else(|| ApiError::not_found(resource, name))?;
        let existing = object::from_stored(&current)?;
        check_preconditions(resource, name, options, &existing, current.mod_revision)?;
        if object::meta_str(&existing, "deletionTimestamp").is_some() {
            return Ok(Deleted::Pending(existing));
        }
        let has_finalizers = existing
            .get("metadata")
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if has_finalizers {
            let stored = object::parse_stored(&current.value)?;
            let marked = mark_deleting(stored);
            match update::write(call, &key, &current, marked, dry_run).await? {
                Written::Done(object) => return Ok(Deleted::Pending(object)),
                Written::Conflict => continue,
            }
        }
        if dry_run {
            return Ok(Deleted::Removed(existing));
        }
        match call
            .state
            .store()
            .delete(key.clone().into(), Guard::ModRevision(current.mod_revision))
            .await
            .map_err(ApiError::from_storage)?
        {
            DeleteOutcome::Deleted { .. } => return Ok(Deleted::Removed(existing)),
            DeleteOutcome::Conflict(_) => continue,
            DeleteOutcome::NotFound => return Err(ApiError::not_found(resource, name)),
        }
    }
    Err(ApiError::modified(resource, name))
}

/// §6.1 step 5: deletionTimestamp now, grace 0, generation + 1 if set.
fn mark_deleting(mut object: Object) -> Object {
    let metadata = object::metadata_mut(&mut object);
    metadata.insert(
        "deletionTimestamp".to_owned(),
        Value::String(meta::now_rfc3339()),
    );
    metadata.insert("deletionGracePeriodSeconds".to_owned(), json!(0));
    if let Some(generation) = metadata
        .get("generation")
        .and_then(Value::as_i64)
        .filter(|g| *g > 0)
    {
        metadata.insert("generation".to_owned(), json!(generation + 1));
    }
    meta::canonicalize_metadata(metadata);
    object
}

/// §6.1 step 2 (the messages name the Kind, not the resource).
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

/// The Status an immediate delete answers with (§6.2).
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
    Ok(object::respond(StatusCode::OK, &body, call.pretty()))
}
