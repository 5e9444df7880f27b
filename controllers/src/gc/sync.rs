//! Processing one object of the graph: an owner being deleted with `orphan` or
//! `foregroundDeletion` is finished when its dependents allow; any other object with owner
//! references is kept, unlinked from its vanished owners, or deleted when none is left.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubemock_client::request::Preconditions;
use kubemock_client::{Api, DeleteParams, DynamicObject, Patch, PatchParams, Resource};
use serde_json::json;

use super::decide::{Decision, OwnerState, decide};
use super::{FOREGROUND, ORPHAN, ObjectRef, Shared};
use crate::error::Result;

/// Processes `item` from the caches.
pub(crate) async fn process(shared: &Shared, item: &ObjectRef) -> Result<()> {
    let Some(store) = shared.store(&item.resource) else {
        return Ok(());
    };
    let Some(obj) = store.get(&item.key) else {
        return Ok(()); // gone: its dependents were queued by its deletion
    };
    let uid = obj.meta().uid.clone().unwrap_or_default();
    if obj.meta().deletion_timestamp.is_some() {
        if has_finalizer(&obj, ORPHAN) {
            return orphan_dependents(shared, item, &obj, &uid).await;
        }
        if has_finalizer(&obj, FOREGROUND) {
            return finish_foreground(shared, item, &obj, &uid).await;
        }
        return Ok(()); // being deleted for other reasons: not the collector's business
    }
    let references = obj.meta().owner_references.clone().unwrap_or_default();
    if references.is_empty() {
        return Ok(());
    }
    let mut owners = Vec::with_capacity(references.len());
    for reference in &references {
        owners.push((
            reference.uid.clone(),
            owner_state(shared, &obj, reference).await?,
        ));
    }
    let has_dependents = shared.graph.lock().has_dependents(&uid);
    let finalizers = obj.meta().finalizers.clone().unwrap_or_default();
    match decide(&owners, has_dependents, &finalizers) {
        Decision::Keep => Ok(()),
        Decision::DropReferences(uids) => {
            let kept: Vec<OwnerReference> = references
                .into_iter()
                .filter(|r| !uids.contains(&r.uid))
                .collect();
            tracing::info!(object = %item.key, kind = %item.resource.kind, dropped = ?uids, "removing references to owners that are gone or waiting");
            patch_owner_references(shared, item, &obj, kept).await
        }
        Decision::Delete(policy) => {
            tracing::info!(object = %item.key, kind = %item.resource.kind, ?policy, "deleting an object whose owners are gone");
            // The decision was made on the cached object: the delete holds only if the object
            // is still that one. Upstream re-reads the object first; a resourceVersion
            // precondition closes the window entirely (a dependent released from its owner
            // just now, which the cache has not seen yet, is never deleted).
            let params = DeleteParams {
                propagation_policy: Some(policy),
                preconditions: Some(Preconditions {
                    uid: Some(uid),
                    resource_version: obj.meta().resource_version.clone(),
                }),
                ..DeleteParams::default()
            };
            match api_for(shared, item).delete(&item.key.name, &params).await {
                Ok(_) => Ok(()),
                Err(err) if err.is_not_found() => Ok(()), // gone already
                // Changed or replaced since the cache saw it: decide again on the new state.
                Err(err) => Err(err.into()),
            }
        }
    }
}

fn api_for(shared: &Shared, item: &ObjectRef) -> Api<DynamicObject> {
    Api::dynamic(
        shared.client.clone(),
        &item.resource.to_resource(),
        item.key.namespace.as_deref(),
    )
}

fn has_finalizer(obj: &DynamicObject, finalizer: &str) -> bool {
    obj.meta()
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizer)
}

/// What the owner of `reference` (held by `dependent`) is: from the cache when it holds that
/// uid, else from the server (a cache may not have seen a new owner yet).
async fn owner_state(
    shared: &Shared,
    dependent: &DynamicObject,
    reference: &OwnerReference,
) -> Result<OwnerState> {
    let Some(resource) = shared.resource_of(&reference.api_version, &reference.kind) else {
        // A kind the server does not serve (yet): no verdict, keep the object.
        tracing::debug!(kind = %reference.kind, api_version = %reference.api_version, "owner kind not served; keeping the dependent");
        return Ok(OwnerState::Solid);
    };
    let namespace = if resource.namespaced {
        match dependent.meta().namespace.as_deref() {
            Some(ns) => Some(ns),
            // A namespaced owner cannot own a cluster-scoped object: the reference is invalid.
            None => return Ok(OwnerState::Dangling),
        }
    } else {
        None
    };
    let cached = shared
        .store(&resource)
        .and_then(|store| store.get_by(namespace, &reference.name))
        .filter(|owner| owner.meta().uid.as_deref() == Some(reference.uid.as_str()));
    let owner = match cached {
        Some(owner) => (*owner).clone(),
        None => {
            let api: Api<DynamicObject> =
                Api::dynamic(shared.client.clone(), &resource.to_resource(), namespace);
            match api.get_opt(&reference.name).await? {
                Some(owner) if owner.meta().uid.as_deref() == Some(reference.uid.as_str()) => owner,
                _ => return Ok(OwnerState::Dangling),
            }
        }
    };
    Ok(
        if owner.meta().deletion_timestamp.is_some() && has_finalizer(&owner, FOREGROUND) {
            OwnerState::WaitingForDependents
        } else {
            OwnerState::Solid
        },
    )
}

/// Replaces `obj`'s ownerReferences with `kept` (conditional on its resourceVersion).
async fn patch_owner_references(
    shared: &Shared,
    item: &ObjectRef,
    obj: &DynamicObject,
    kept: Vec<OwnerReference>,
) -> Result<()> {
    let references = if kept.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::to_value(kept).map_err(kubemock_client::Error::Encode)?
    };
    let patch = json!({"metadata": {
        "ownerReferences": references,
        "resourceVersion": obj.resource_version(),
    }});
    match api_for(shared, item)
        .patch(
            &item.key.name,
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if err.is_not_found() => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// Removes `finalizer` from `obj` (conditional on its resourceVersion); removing the last
/// one deletes it.
async fn remove_finalizer(
    shared: &Shared,
    item: &ObjectRef,
    obj: &DynamicObject,
    finalizer: &str,
) -> Result<()> {
    let rest: Vec<&String> = obj
        .meta()
        .finalizers
        .iter()
        .flatten()
        .filter(|f| *f != finalizer)
        .collect();
    let finalizers = if rest.is_empty() {
        serde_json::Value::Null
    } else {
        json!(rest)
    };
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": obj.resource_version(),
    }});
    match api_for(shared, item)
        .patch(
            &item.key.name,
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if err.is_not_found() => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// Whether every watched cache has synced: before then the graph may miss dependents, and an
/// owner must not be released.
fn all_synced(shared: &Shared) -> bool {
    shared.stores.read().values().all(|s| s.has_synced())
}

/// Orphan: unlink every dependent from the owner, then remove the `orphan` finalizer.
async fn orphan_dependents(
    shared: &Shared,
    item: &ObjectRef,
    owner: &DynamicObject,
    uid: &str,
) -> Result<()> {
    if !all_synced(shared) {
        return Err(crate::Error::NotSynced);
    }
    let dependents = shared.graph.lock().dependents(uid);
    for (dependent, _) in dependents {
        let Some(obj) = shared
            .store(&dependent.resource)
            .and_then(|s| s.get(&dependent.key))
        else {
            continue;
        };
        let kept: Vec<OwnerReference> = obj
            .meta()
            .owner_references
            .iter()
            .flatten()
            .filter(|r| r.uid != uid)
            .cloned()
            .collect();
        patch_owner_references(shared, &dependent, &obj, kept).await?;
    }
    tracing::info!(object = %item.key, kind = %item.resource.kind, "dependents orphaned");
    remove_finalizer(shared, item, owner, ORPHAN).await
}

/// Foreground: once no dependent blocks the owner, remove `foregroundDeletion`; until then
/// the dependents are (re)queued, and deleted as their owner waits for them.
async fn finish_foreground(
    shared: &Shared,
    item: &ObjectRef,
    owner: &DynamicObject,
    uid: &str,
) -> Result<()> {
    if !all_synced(shared) {
        return Err(crate::Error::NotSynced);
    }
    let dependents = shared.graph.lock().dependents(uid);
    if dependents.iter().any(|(_, blocking)| *blocking) {
        for (dependent, _) in dependents {
            shared.queue.add(dependent);
        }
        return Ok(()); // their deletion queues the owner again
    }
    tracing::info!(object = %item.key, kind = %item.resource.kind, "no blocking dependents left");
    remove_finalizer(shared, item, owner, FOREGROUND).await
}
