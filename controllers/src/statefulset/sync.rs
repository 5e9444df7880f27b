//! One sync of one StatefulSet (upstream `StatefulSetController.sync` and
//! `defaultStatefulSetControl.UpdateStatefulSet`): claim the set's revisions and pods,
//! find or create the revision of the current template, carry out the plan
//! [`super::control`] makes, write the status, and trim the history. The writes of pods and
//! claims (upstream `stateful_pod_control.go`) live here too, with their events.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kubemock_client::controller::controller_reference;
use kubemock_client::events::{EventType, object_reference};
use kubemock_client::request::Preconditions;
use kubemock_client::{Action, Api, ApiResource, DeleteParams, ObjectKey, PostParams, Selector};

use super::Context;
use super::control::{self, Input, Phase, Step};
use super::history;
use super::utils::{
    claim_owners, claim_owners_up_to_date, claims_for, claims_match_retention, identity_matches,
    is_member_of, ordinal, pod_revision, storage_matches, update_identity, update_storage,
};
use crate::error::{Error, Result};
use crate::replicaset::pods::slow_start_batches;

/// Revisions kept beside the live ones when `revisionHistoryLimit` is absent (the API
/// server's default).
const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

/// Syncs the StatefulSet `key`.
pub(crate) async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(set) = ctx.sets.get(&key) else {
        return Ok(Action::AwaitChange);
    };
    let namespace = key.namespace.clone().unwrap_or_default();
    let spec = set.spec.clone().unwrap_or_default();
    let selector = match Selector::from_label_selector(&spec.selector) {
        Ok(selector) => selector,
        Err(err) => {
            // Validation refuses such objects; nothing to do until it changes.
            tracing::warn!(statefulset = %key, error = %err, "invalid selector");
            return Ok(Action::AwaitChange);
        }
    };
    let Some(controller) = controller_reference(set.as_ref()) else {
        return Ok(Action::AwaitChange);
    };

    let revisions = ctx.revisions.list_namespace(&namespace);
    let mut revisions: Vec<ControllerRevision> =
        crate::claim::claim(&ctx.client, set.as_ref(), &selector, revisions)
            .await?
            .into_iter()
            .map(Arc::unwrap_or_clone)
            .collect();
    history::sort(&mut revisions);
    let candidates: Vec<Arc<Pod>> = ctx
        .pods
        .list_namespace(&namespace)
        .into_iter()
        .filter(|p| is_member_of(&set, p))
        .collect();
    let pods = crate::claim::claim(&ctx.client, set.as_ref(), &selector, candidates).await?;

    let mut collision_count = set
        .status
        .as_ref()
        .and_then(|s| s.collision_count)
        .unwrap_or(0);
    let update = update_revision(
        &ctx,
        &set,
        &controller,
        &mut revisions,
        &mut collision_count,
    )
    .await?;
    let current_name = set.status.as_ref().and_then(|s| s.current_revision.clone());
    let current = revisions
        .iter()
        .find(|r| r.metadata.name.is_some() && r.metadata.name == current_name)
        .cloned()
        .unwrap_or_else(|| update.clone());
    let template = |r: &ControllerRevision| {
        history::template_of(r).ok_or_else(|| Error::InvalidRevision {
            name: r.metadata.name.clone().unwrap_or_default(),
        })
    };
    let (current_template, update_template) = (template(&current)?, template(&update)?);
    let (current_name, update_name) = (
        current.metadata.name.clone().unwrap_or_default(),
        update.metadata.name.clone().unwrap_or_default(),
    );
    let claims: BTreeMap<String, Arc<PersistentVolumeClaim>> = ctx
        .claims
        .list_namespace(&namespace)
        .into_iter()
        .map(|c| (c.metadata.name.clone().unwrap_or_default(), c))
        .collect();
    let plan = control::plan(&Input {
        set: &set,
        current: (&current_name, &current_template),
        update: (&update_name, &update_template),
        controller: controller.clone(),
        collision_count,
        pods: &pods,
        claims: &claims,
        now: ctx.clock.now(),
    });

    let mut failure = None;
    for phase in &plan.phases {
        if let Err(err) = run_phase(&ctx, &set, phase).await {
            failure = Some(err);
            break;
        }
    }

    let mut status = plan.status;
    control::complete_rolling_update(&set, &mut status);
    if set.status.as_ref() != Some(&status) {
        let mut updated = (*set).clone();
        updated.status = Some(status.clone());
        let api: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &namespace);
        if let Err(err) = api
            .replace_status(&key.name, &PostParams::default(), &updated)
            .await
        {
            if failure.is_none() {
                failure = Some(err.into());
            }
        }
    }

    // Trim the history: the revisions neither current, nor the update, nor any pod's.
    let mut live = vec![current_name.as_str(), update_name.as_str()];
    live.extend(pods.iter().map(|p| pod_revision(p)));
    let limit = spec
        .revision_history_limit
        .unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT);
    let api: Api<ControllerRevision> = Api::namespaced(ctx.client.clone(), &namespace);
    for old in history::to_truncate(&revisions, &live, limit) {
        let name = old.metadata.name.clone().unwrap_or_default();
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: old.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&name, &params).await {
            Ok(_) => tracing::debug!(statefulset = %key, revision = %name, "old revision deleted"),
            Err(err) if err.is_not_found() => {}
            Err(err) => {
                failure.get_or_insert(err.into());
            }
        }
    }

    if let Some(err) = failure {
        return Err(err);
    }
    let min_ready = spec.min_ready_seconds.unwrap_or(0);
    if min_ready > 0 && status.available_replicas.unwrap_or(0) != spec.replicas.unwrap_or(1) {
        return Ok(Action::RequeueAfter(Duration::from_secs(
            u64::try_from(min_ready).unwrap_or(0),
        )));
    }
    Ok(Action::AwaitChange)
}

/// The revision of the set's template (upstream `getStatefulSetRevisions`): the newest
/// revision if it holds the template; an older equal one renumbered as the newest (a
/// rollback); else a new one. `revisions` (sorted) is kept up to date.
async fn update_revision(
    ctx: &Context,
    set: &StatefulSet,
    controller: &OwnerReference,
    revisions: &mut Vec<ControllerRevision>,
    collision_count: &mut i32,
) -> Result<ControllerRevision> {
    let namespace = set.metadata.namespace.clone().unwrap_or_default();
    let api: Api<ControllerRevision> = Api::namespaced(ctx.client.clone(), &namespace);
    let candidate = history::new_revision(
        set,
        controller.clone(),
        history::next_revision(revisions),
        *collision_count,
    );
    let equal = revisions
        .iter()
        .rposition(|r| history::equal(r, &candidate));
    match equal {
        Some(i) if i + 1 == revisions.len() => Ok(revisions[i].clone()),
        Some(i) => {
            let mut renumbered = revisions[i].clone();
            renumbered.revision = candidate.revision;
            let name = renumbered.metadata.name.clone().unwrap_or_default();
            let updated = api
                .replace(&name, &PostParams::default(), &renumbered)
                .await?;
            revisions.remove(i);
            revisions.push(updated.clone());
            Ok(updated)
        }
        None => {
            // Upstream `CreateControllerRevision`: a name taken by other data is a hash
            // collision, counted and avoided by hashing again.
            let mut revision = candidate;
            loop {
                let data = revision
                    .data
                    .as_ref()
                    .map(|d| d.0.clone())
                    .unwrap_or_default();
                let name = history::revision_name(set, &history::hash(&data, *collision_count));
                revision.metadata.name = Some(name.clone());
                match api.create(&PostParams::default(), &revision).await {
                    Ok(created) => {
                        tracing::info!(revision = %name, "created a revision");
                        revisions.push(created.clone());
                        return Ok(created);
                    }
                    Err(err) if err.is_already_exists() => {
                        let existing = api.get(&name).await?;
                        if history::equal(&existing, &revision) {
                            return Ok(existing);
                        }
                        *collision_count = collision_count.saturating_add(1);
                    }
                    Err(err) => return Err(err.into()),
                }
            }
        }
    }
}

/// Carries out one phase: ordered steps one by one, burst steps in slow-start batches;
/// the first failure ends it.
async fn run_phase(ctx: &Context, set: &StatefulSet, phase: &Phase) -> Result<()> {
    if !phase.burst {
        for step in &phase.steps {
            execute(ctx, set, step).await?;
        }
        return Ok(());
    }
    let mut steps = phase.steps.iter();
    for batch in slow_start_batches(phase.steps.len()) {
        let results = futures_util::future::join_all(
            steps
                .by_ref()
                .take(batch)
                .map(|step| execute(ctx, set, step)),
        )
        .await;
        if let Some(err) = results.into_iter().find_map(Result::err) {
            return Err(err);
        }
    }
    Ok(())
}

async fn execute(ctx: &Context, set: &StatefulSet, step: &Step) -> Result<()> {
    match step {
        Step::CreatePod(pod) => create_pod(ctx, set, pod).await,
        Step::CreateClaims(pod) => {
            create_claims(ctx, set, pod).await?;
            fix_claims(ctx, set, pod).await
        }
        Step::DeletePod(pod) => delete_pod(ctx, set, pod).await,
        Step::UpdatePod(pod) => update_pod(ctx, set, pod).await,
        Step::FixClaims(pod) => fix_claims(ctx, set, pod).await,
    }
}

fn names<'a>(set: &'a StatefulSet, pod: &'a Pod) -> (&'a str, &'a str) {
    (
        set.metadata.name.as_deref().unwrap_or(""),
        pod.metadata.name.as_deref().unwrap_or(""),
    )
}

/// Records `verb` on a pod of the set (upstream `recordPodEvent`).
async fn pod_event(ctx: &Context, set: &StatefulSet, pod: &Pod, verb: &str, err: Option<&str>) {
    let (set_name, pod_name) = names(set, pod);
    let title = title(verb);
    let reference = object_reference(set, &ApiResource::of::<StatefulSet>());
    let (kind, reason, message) = match err {
        None => (
            EventType::Normal,
            format!("Successful{title}"),
            format!("{verb} Pod {pod_name} in StatefulSet {set_name} successful"),
        ),
        Some(err) => (
            EventType::Warning,
            format!("Failed{title}"),
            format!("{verb} Pod {pod_name} in StatefulSet {set_name} failed error: {err}"),
        ),
    };
    ctx.recorder
        .publish(&reference, kind, &reason, &message)
        .await;
}

fn title(verb: &str) -> String {
    let mut chars = verb.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Creates the claims of the pod not in the cache (upstream `createPersistentVolumeClaims`),
/// with the owners the retention policy gives them; a claim being deleted is an error (the
/// pod must wait for it to go).
async fn create_claims(ctx: &Context, set: &StatefulSet, pod: &Pod) -> Result<()> {
    let Some(ordinal) = ordinal(pod) else {
        return Ok(());
    };
    let namespace = set.metadata.namespace.clone().unwrap_or_default();
    let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &namespace);
    let reference = object_reference(set, &ApiResource::of::<StatefulSet>());
    let (set_name, pod_name) = names(set, pod);
    let mut errors = Vec::new();
    for (_, mut claim) in claims_for(set, ordinal) {
        let name = claim.metadata.name.clone().unwrap_or_default();
        if let Some(existing) = ctx.claims.get_by(Some(&namespace), &name) {
            if existing.metadata.deletion_timestamp.is_some() {
                errors.push(format!("pvc {name} is being deleted"));
            }
            continue;
        }
        let owners = claim_owners(&claim, set, pod);
        claim.metadata.owner_references = Some(owners).filter(|o| !o.is_empty());
        match api.create(&PostParams::default(), &claim).await {
            Ok(_) => {
                let message =
                    format!("create Claim {name} Pod {pod_name} in StatefulSet {set_name} success");
                ctx.recorder
                    .publish(&reference, EventType::Normal, "SuccessfulCreate", &message)
                    .await;
            }
            // Created meanwhile (the cache lags): what this step wanted.
            Err(err) if err.is_already_exists() => {}
            Err(err) => {
                let message = format!(
                    "create Claim {name} for Pod {pod_name} in StatefulSet {set_name} failed error: {err}"
                );
                ctx.recorder
                    .publish(&reference, EventType::Warning, "FailedCreate", &message)
                    .await;
                errors.push(format!("failed to create PVC {name}: {err}"));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::Manage(errors.join("; ")))
    }
}

/// Gives the pod's cached claims the owners the retention policy wants (upstream
/// `UpdatePodClaimForRetentionPolicy`); the update carries the claim's resourceVersion.
async fn fix_claims(ctx: &Context, set: &StatefulSet, pod: &Pod) -> Result<()> {
    let Some(ordinal) = ordinal(pod) else {
        return Ok(());
    };
    let namespace = set.metadata.namespace.clone().unwrap_or_default();
    let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &namespace);
    for (_, wanted) in claims_for(set, ordinal) {
        let name = wanted.metadata.name.clone().unwrap_or_default();
        let Some(claim) = ctx.claims.get_by(Some(&namespace), &name) else {
            continue; // not created yet: a later sync
        };
        if claim_owners_up_to_date(&claim, set, pod) {
            continue;
        }
        let mut updated = (*claim).clone();
        updated.metadata.owner_references = Some(claim_owners(&claim, set, pod));
        api.replace(&name, &PostParams::default(), &updated).await?;
        tracing::debug!(claim = %name, "claim owners set for the retention policy");
    }
    Ok(())
}

/// Creates the pod after its claims (upstream `CreateStatefulPod`). A pod of that name
/// already there means the cache lags: an error, so the sync runs again, but no event.
async fn create_pod(ctx: &Context, set: &StatefulSet, pod: &Pod) -> Result<()> {
    if let Err(err) = create_claims(ctx, set, pod).await {
        pod_event(ctx, set, pod, "create", Some(&err.to_string())).await;
        return Err(err);
    }
    let namespace = set.metadata.namespace.clone().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    match api.create(&PostParams::default(), pod).await {
        Ok(created) => {
            pod_event(ctx, set, pod, "create", None).await;
            fix_claims(ctx, set, &created).await
        }
        Err(err) if err.is_already_exists() => Err(err.into()),
        Err(err) => {
            pod_event(ctx, set, pod, "create", Some(&err.to_string())).await;
            Err(err.into())
        }
    }
}

/// Deletes the pod, provided it is still the one decided on (its uid as precondition).
async fn delete_pod(ctx: &Context, set: &StatefulSet, pod: &Pod) -> Result<()> {
    let namespace = set.metadata.namespace.clone().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: pod.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(names(set, pod).1, &params).await {
        Ok(_) => {
            pod_event(ctx, set, pod, "delete", None).await;
            Ok(())
        }
        Err(err) if err.is_not_found() => Ok(()),
        // Another pod of the name by now: the cache lags, look again.
        Err(err) if err.is_conflict() => Err(err.into()),
        Err(err) => {
            pod_event(ctx, set, pod, "delete", Some(&err.to_string())).await;
            Err(err.into())
        }
    }
}

/// Restores the pod's identity and claim volumes and its claims' owners (upstream
/// `UpdateStatefulPod`); the pod update carries the resourceVersion it was read at.
async fn update_pod(ctx: &Context, set: &StatefulSet, pod: &Pod) -> Result<()> {
    let mut updated = pod.clone();
    let mut changed = false;
    if !identity_matches(set, &updated) {
        update_identity(set, &mut updated);
        changed = true;
    }
    if !storage_matches(set, &updated) {
        update_storage(set, &mut updated);
        changed = true;
        if let Err(err) = create_claims(ctx, set, &updated).await {
            pod_event(ctx, set, pod, "update", Some(&err.to_string())).await;
            return Err(err);
        }
    }
    let namespace = set.metadata.namespace.clone().unwrap_or_default();
    let claims: BTreeMap<String, Arc<PersistentVolumeClaim>> = ctx
        .claims
        .list_namespace(&namespace)
        .into_iter()
        .map(|c| (c.metadata.name.clone().unwrap_or_default(), c))
        .collect();
    let retention_fixed = !claims_match_retention(set, &updated, &claims);
    if retention_fixed && let Err(err) = fix_claims(ctx, set, &updated).await {
        pod_event(ctx, set, pod, "update", Some(&err.to_string())).await;
        return Err(err);
    }
    if changed {
        let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
        match api
            .replace(names(set, pod).1, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => {}
            Err(err) if err.is_conflict() => return Err(err.into()),
            Err(err) => {
                pod_event(ctx, set, pod, "update", Some(&err.to_string())).await;
                return Err(err.into());
            }
        }
    }
    if changed || retention_fixed {
        pod_event(ctx, set, pod, "update", None).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_reasons_capitalise_the_verb() {
        assert_eq!(title("create"), "Create");
        assert_eq!(title("delete"), "Delete");
        assert_eq!(title(""), "");
    }
}
