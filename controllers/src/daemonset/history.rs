//! A DaemonSet's revision history (upstream `constructHistory`, `snapshot`,
//! `dedupCurHistories`, `cleanupHistory`): one ControllerRevision per template, named
//! `<ds>-<hash>`, numbered above every older one, whose hash labels the pods made from it;
//! so `kubectl rollout history` and `undo` work and a rollout knows old pods from new.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kubemock_client::controller::controller_reference;
use kubemock_client::{Api, DeleteParams, Patch, PatchParams, PostParams, Selector};
use serde_json::json;

use super::Context;
use super::util::{self, REVISION_HASH};
use crate::deployment::util::template_hash;
use crate::error::{Error, Result};

fn hash_of(revision: &ControllerRevision) -> Option<&str> {
    revision
        .metadata
        .labels
        .as_ref()?
        .get(REVISION_HASH)
        .map(String::as_str)
}

/// The current revision of `ds` (created or renumbered as needed) and the old ones.
pub(crate) async fn construct(
    ctx: &Context,
    ds: &DaemonSet,
    selector: &Selector,
    pods: &[Pod],
) -> Result<(ControllerRevision, Vec<ControllerRevision>)> {
    let namespace = ds.metadata.namespace.clone().unwrap_or_default();
    let api: Api<ControllerRevision> = Api::namespaced(ctx.client.clone(), &namespace);
    let candidates = ctx.revisions.list_namespace(&namespace);
    let owned = crate::claim::claim(&ctx.client, ds, selector, candidates).await?;
    let owned = owned.into_iter().map(Arc::unwrap_or_clone);
    let (mut current, mut old) = (Vec::new(), Vec::new());
    for mut revision in owned {
        if hash_of(&revision).is_none() {
            // The name stands for the hash (no recomputation, no collision).
            let name = revision.metadata.name.clone().unwrap_or_default();
            revision
                .metadata
                .labels
                .get_or_insert_with(BTreeMap::new)
                .insert(REVISION_HASH.to_owned(), name.clone());
            revision = api
                .replace(&name, &PostParams::default(), &revision)
                .await?;
        }
        if util::revision_matches(ds, &revision) {
            current.push(revision);
        } else {
            old.push(revision);
        }
    }
    let next = old.iter().map(|r| r.revision).max().unwrap_or(0) + 1;
    let current = if current.is_empty() {
        snapshot(ctx, ds, next).await?
    } else {
        let mut keep = dedup(ctx, ds, current, pods).await?;
        if keep.revision < next {
            keep.revision = next;
            let name = keep.metadata.name.clone().unwrap_or_default();
            keep = api.replace(&name, &PostParams::default(), &keep).await?;
        }
        keep
    };
    Ok((current, old))
}

/// Of several revisions of the current template, keeps the highest; pods of the others are
/// relabelled to it first.
async fn dedup(
    ctx: &Context,
    ds: &DaemonSet,
    mut current: Vec<ControllerRevision>,
    pods: &[Pod],
) -> Result<ControllerRevision> {
    current.sort_by_key(|r| r.revision);
    let Some(keep) = current.pop() else {
        return Err(Error::Manage("no current revision".to_owned()));
    };
    if current.is_empty() {
        return Ok(keep);
    }
    let namespace = ds.metadata.namespace.clone().unwrap_or_default();
    let hash = hash_of(&keep).unwrap_or_default().to_owned();
    let pods_api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    for pod in pods {
        let label = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(REVISION_HASH));
        if label != Some(&hash) {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let patch = json!({"metadata": {"labels": {REVISION_HASH: hash}}});
            pods_api
                .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await?;
        }
    }
    let api: Api<ControllerRevision> = Api::namespaced(ctx.client.clone(), &namespace);
    for duplicate in current {
        let name = duplicate.metadata.name.clone().unwrap_or_default();
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => tracing::info!(revision = %name, "deleted a duplicate revision"),
            Err(err) if err.is_not_found() => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(keep)
}

/// Creates the revision of the current template, numbered `revision`.
async fn snapshot(ctx: &Context, ds: &DaemonSet, revision: i64) -> Result<ControllerRevision> {
    let namespace = ds.metadata.namespace.clone().unwrap_or_default();
    let template = ds
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let collision_count = ds.status.as_ref().and_then(|s| s.collision_count);
    let hash = template_hash(&template, collision_count);
    let name = format!("{}-{hash}", ds.metadata.name.clone().unwrap_or_default());
    let mut labels = template.metadata.and_then(|m| m.labels).unwrap_or_default();
    labels.insert(REVISION_HASH.to_owned(), hash);
    let wanted = ControllerRevision {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            labels: Some(labels),
            annotations: ds.metadata.annotations.clone(),
            owner_references: controller_reference(ds).map(|r| vec![r]),
            ..ObjectMeta::default()
        },
        data: Some(RawExtension(util::revision_data(ds))),
        revision,
    };
    let api: Api<ControllerRevision> = Api::namespaced(ctx.client.clone(), &namespace);
    match api.create(&PostParams::default(), &wanted).await {
        Ok(created) => Ok(created),
        Err(err) if err.is_already_exists() => {
            let existing = api.get(&name).await?;
            if util::revision_matches(ds, &existing) {
                return Ok(existing);
            }
            // A hash collision: raise the collision count so the next name differs.
            let daemonsets: Api<DaemonSet> = Api::namespaced(ctx.client.clone(), &namespace);
            let ds_name = ds.metadata.name.clone().unwrap_or_default();
            let mut fresh = daemonsets.get(&ds_name).await?;
            let fresh_count = fresh.status.as_ref().and_then(|s| s.collision_count);
            if fresh_count == collision_count {
                let status = fresh.status.get_or_insert_with(Default::default);
                status.collision_count = Some(collision_count.unwrap_or(0) + 1);
                daemonsets
                    .replace_status(&ds_name, &PostParams::default(), &fresh)
                    .await?;
                tracing::info!(daemonset = %ds_name, revision = %name, "hash collision; collision count raised");
            }
            Err(Error::RevisionCollision { name })
        }
        Err(err) => Err(err.into()),
    }
}

/// Deletes old revisions beyond `revisionHistoryLimit` that no pod runs.
pub(crate) async fn cleanup(
    ctx: &Context,
    ds: &DaemonSet,
    old: &[ControllerRevision],
    pods: &[Pod],
) -> Result<()> {
    let live: Vec<String> = pods
        .iter()
        .filter_map(|p| p.metadata.labels.as_ref()?.get(REVISION_HASH).cloned())
        .collect();
    let namespace = ds.metadata.namespace.clone().unwrap_or_default();
    let api: Api<ControllerRevision> = Api::namespaced(ctx.client.clone(), &namespace);
    for revision in util::revisions_to_delete(ds, old, &live) {
        let name = revision.metadata.name.clone().unwrap_or_default();
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => tracing::debug!(revision = %name, "deleted an old revision"),
            Err(err) if err.is_not_found() => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}
