//! The apiextensions controllers of kube-apiserver, in one loop over the definitions in the
//! store: names are accepted unless another definition of the group claims them first
//! (`NamesAccepted`), accepted definitions are `Established` and their served versions put in
//! the registry (so discovery, OpenAPI, routing and the handlers see them), and a definition
//! being deleted first loses its objects (each deleted as a DELETE would: finalizers still
//! block), then its cleanup finalizer, and with it its endpoints (docs/api-behaviour.md#crd-served, #crd-deletion).
//!
//! The loop runs once synchronously before the server serves (a reopened durable store serves
//! its custom resources from the first request), then on every change under the definitions'
//! prefix. It publishes the revision it has caught up with, so that the handler of a
//! definition write answers only once the definition is served (`AppState::crd_synced`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use kubemock_storage::{Guard, KeyValue, RangeRequest, Revision, UpdateOutcome, WatchItem};
use serde_json::{Value, json};
use tracing::warn;

use super::{
    CLEANUP_FINALIZER, accepted_names, claimed_names, condition_status, resources_of, set_condition,
};
use crate::keys;
use crate::meta;
use crate::object::{self, Object};
use crate::registry::Resource;
use crate::state::AppState;
use crate::status::{ApiError, ApiResult};

/// How often a definition whose objects are still being deleted is looked at again (their
/// finalizers are removed by others).
const CLEANUP_POLL: Duration = Duration::from_millis(50);

/// Serves the custom resources of the definitions already stored, then runs the controller
/// in the background until the server shuts down.
pub(crate) async fn start(state: &AppState) -> ApiResult<()> {
    let Some(definitions) =
        state
            .registry()
            .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    else {
        return Ok(());
    };
    let (revision, _) = pass(state, &keys::resource_prefix(&definitions)).await?;
    state.crd_caught_up(revision);
    let background = state.clone();
    state
        .tasks()
        .spawn(crate::meta::keep_clock(run(background)));
    Ok(())
}

/// Runs the controller until the server shuts down.
async fn run(state: AppState) {
    let Some(definitions) =
        state
            .registry()
            .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    else {
        return;
    };
    let prefix = keys::resource_prefix(&definitions);
    loop {
        let (revision, busy) = match pass(&state, &prefix).await {
            Ok(outcome) => outcome,
            Err(err) => {
                warn!(error = %err, "custom resource definitions controller");
                (0, true)
            }
        };
        if revision > 0 {
            state.crd_caught_up(revision);
        }
        let watch = state.store().watch(prefix.clone().into(), revision).await;
        let mut watch = match watch {
            Ok(watch) => watch,
            Err(_) => {
                tokio::select! {
                    () = state.shutdown().cancelled() => return,
                    () = tokio::time::sleep(CLEANUP_POLL) => continue,
                }
            }
        };
        // Until a definition changes: a write that changed nothing asks for the watch's
        // progress instead, which says that nothing changed up to the store's revision.
        loop {
            tokio::select! {
                () = state.shutdown().cancelled() => return,
                () = state.crd_progress_wanted() => watch.request_progress(),
                item = watch.next() => match item {
                    Some(Ok(WatchItem::Progress(seen))) => state.crd_caught_up(seen),
                    _ => break,
                },
                () = tokio::time::sleep(CLEANUP_POLL), if busy => break,
            }
        }
    }
}

/// One pass over every definition: returns the revision it read at, and whether a deletion is
/// still in progress.
pub(crate) async fn pass(state: &AppState, prefix: &str) -> ApiResult<(Revision, bool)> {
    let listed = state
        .store()
        .range(RangeRequest::prefix(prefix.to_owned()))
        .await
        .map_err(ApiError::from_storage)?;
    let mut definitions: Vec<(KeyValue, Object)> = Vec::with_capacity(listed.items.len());
    for kv in listed.items {
        let object = object::parse_stored(&kv.value)?;
        definitions.push((kv, object));
    }
    // The first definition to claim a name keeps it.
    definitions.sort_by_key(|(kv, _)| kv.create_revision);
    let mut claims: HashMap<(String, String), String> = HashMap::new();
    let mut served: Vec<Arc<Resource>> = Vec::new();
    let mut busy = false;
    for (kv, mut definition) in definitions {
        let name = object::name_of(&definition).to_owned();
        let group = definition
            .get("spec")
            .and_then(|s| s.get("group"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let conflict = claimed_names(&definition).into_iter().find(|(_, value)| {
            claims
                .get(&(group.clone(), value.clone()))
                .is_some_and(|owner| *owner != name)
        });
        let mut changed = false;
        match &conflict {
            None => {
                for (_, value) in claimed_names(&definition) {
                    claims.insert((group.clone(), value), name.clone());
                }
                let names = accepted_names(&definition);
                if let Value::Object(status) =
                    definition.entry("status").or_insert_with(|| json!({}))
                    && status.get("acceptedNames") != Some(&names)
                {
                    status.insert("acceptedNames".to_owned(), names);
                    changed = true;
                }
                changed |= set_condition(
                    &mut definition,
                    "NamesAccepted",
                    "True",
                    "NoConflicts",
                    "no conflicts found",
                );
                changed |= set_condition(
                    &mut definition,
                    "Established",
                    "True",
                    "InitialNamesAccepted",
                    "the initial names have been accepted",
                );
            }
            Some((what, value)) => {
                changed |= set_condition(
                    &mut definition,
                    "NamesAccepted",
                    "False",
                    &format!("{what}Conflict"),
                    &format!("{value:?} is already in use"),
                );
                if condition_status(&definition, "Established") != Some("True") {
                    changed |= set_condition(
                        &mut definition,
                        "Established",
                        "False",
                        "NotAccepted",
                        "not all names are accepted",
                    );
                }
            }
        }
        let resources = resources_of(&definition);
        let deleting = object::meta_str(&definition, "deletionTimestamp").is_some();
        if deleting && has_cleanup_finalizer(&definition) {
            let remaining = match resources.first() {
                Some(resource) => delete_objects(state, resource).await?,
                None => 0,
            };
            if remaining == 0 {
                set_condition(
                    &mut definition,
                    "Terminating",
                    "True",
                    "InstanceDeletionCompleted",
                    "removed all instances",
                );
                remove_cleanup_finalizer(&mut definition);
                finish(state, &kv, definition).await?;
                continue;
            }
            busy = true;
            changed |= set_condition(
                &mut definition,
                "Terminating",
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
            );
        }
        if condition_status(&definition, "NamesAccepted") == Some("True")
            || condition_status(&definition, "Established") == Some("True")
        {
            served.extend(resources);
        }
        if changed {
            write(state, &kv, &definition).await?;
        }
    }
    let current = state.registry().custom();
    if !same_resources(&current, &served) {
        state.registry().set_custom(served);
    }
    Ok((listed.revision, busy))
}

fn same_resources(a: &[Arc<Resource>], b: &[Arc<Resource>]) -> bool {
    a.len() == b.len() && b.iter().all(|r| a.iter().any(|s| s == r))
}

fn has_cleanup_finalizer(object: &Object) -> bool {
    object
        .get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|v| v == CLEANUP_FINALIZER))
}

fn remove_cleanup_finalizer(object: &mut Object) {
    if let Some(Value::Array(finalizers)) = object::metadata_mut(object).get_mut("finalizers") {
        finalizers.retain(|f| f != CLEANUP_FINALIZER);
    }
}

/// Writes a definition's new state over `kv` (another writer in between: the next pass).
async fn write(state: &AppState, kv: &KeyValue, object: &Object) -> ApiResult<()> {
    let bytes = object::to_stored(object)?;
    let outcome = state
        .store()
        .update(kv.key.clone(), bytes, Guard::ModRevision(kv.mod_revision))
        .await
        .map_err(ApiError::from_storage)?;
    match outcome {
        UpdateOutcome::Updated { .. } | UpdateOutcome::Conflict(_) | UpdateOutcome::NotFound => {
            Ok(())
        }
    }
}

/// The definition without its cleanup finalizer: removed if no finalizer is left (docs/api-behaviour.md#delete-step-by-step).
async fn finish(state: &AppState, kv: &KeyValue, object: Object) -> ApiResult<()> {
    let left = object
        .get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty());
    if left {
        return write(state, kv, &object).await;
    }
    state
        .store()
        .delete(kv.key.clone(), Guard::ModRevision(kv.mod_revision))
        .await
        .map_err(ApiError::from_storage)?;
    Ok(())
}

/// Deletes every object of `resource` (all versions share its keys) as a DELETE without
/// options would: removed, or marked for deletion while finalizers remain. Returns how many
/// objects are left.
async fn delete_objects(state: &AppState, resource: &Resource) -> ApiResult<usize> {
    let listed = state
        .store()
        .range(RangeRequest::prefix(keys::resource_prefix(resource)))
        .await
        .map_err(ApiError::from_storage)?;
    let mut remaining = 0;
    for kv in listed.items {
        remaining += 1;
        let Ok(mut object) = object::parse_stored(&kv.value) else {
            continue;
        };
        if object::meta_str(&object, "deletionTimestamp").is_some() {
            continue;
        }
        let finalizers = object
            .get("metadata")
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        let guard = Guard::ModRevision(kv.mod_revision);
        if finalizers {
            let metadata = object::metadata_mut(&mut object);
            metadata.insert("deletionTimestamp".to_owned(), json!(meta::now_rfc3339()));
            metadata.insert("deletionGracePeriodSeconds".to_owned(), json!(0));
            let bytes = object::to_stored(&object)?;
            state
                .store()
                .update(kv.key.clone(), bytes, guard)
                .await
                .map_err(ApiError::from_storage)?;
        } else {
            state
                .store()
                .delete(kv.key.clone(), guard)
                .await
                .map_err(ApiError::from_storage)?;
        }
    }
    Ok(remaining)
}
