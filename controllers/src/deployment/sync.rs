//! One sync of one Deployment (upstream `syncDeployment`): claim its ReplicaSets, then either
//! scale (paused, or a scaling event) or roll out (RollingUpdate or Recreate) one step, and
//! write the status.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubemock_client::controller::{controller_of, controller_reference};
use kubemock_client::events::{EventType, object_reference};
use kubemock_client::{
    Action, Api, ApiResource, DeleteParams, ObjectKey, PostParams, Resource, Selector,
};

use super::Context;
use super::util::{self, replicas, rs_replicas};
use crate::error::Result;

type Now = jiff::Timestamp;

/// Syncs the Deployment `key`.
pub(crate) async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(cached) = ctx.deployments.get(&key) else {
        return Ok(Action::AwaitChange);
    };
    let mut d = (*cached).clone();
    let spec = d.spec.clone().unwrap_or_default();
    let selector_empty = spec
        .selector
        .match_labels
        .as_ref()
        .is_none_or(|m| m.is_empty())
        && spec
            .selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty());
    if selector_empty {
        let reference = object_reference(&d, &ApiResource::of::<Deployment>());
        ctx.recorder
            .publish(
                &reference,
                EventType::Warning,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            .await;
        let status = d.status.get_or_insert_with(Default::default);
        if status.observed_generation < d.metadata.generation {
            status.observed_generation = d.metadata.generation;
            write_status(&ctx, &d).await?;
        }
        return Ok(Action::AwaitChange);
    }
    let Ok(selector) = Selector::from_label_selector(&spec.selector) else {
        return Ok(Action::AwaitChange);
    };
    let rs_list = claim_replicasets(&ctx, &d, &selector).await?;
    let now = ctx.clock.now();
    if d.metadata.deletion_timestamp.is_some() {
        let (new_rs, old) = new_and_old(&ctx, &mut d, &rs_list, false, now).await?;
        sync_status(&ctx, &d, &all(&new_rs, &old), new_rs.as_ref(), now).await?;
        return Ok(Action::AwaitChange);
    }
    check_paused_conditions(&ctx, &mut d, now).await?;
    if spec.paused == Some(true) || is_scaling_event(&ctx, &mut d, &rs_list, now).await? {
        return scale_only(&ctx, &mut d, &rs_list, now).await;
    }
    if util::is_recreate(&d) {
        rollout_recreate(&ctx, &mut d, &rs_list, now).await
    } else {
        rollout_rolling(&ctx, &mut d, &rs_list, now).await
    }
}

fn all<'a>(new_rs: &'a Option<ReplicaSet>, old: &'a [ReplicaSet]) -> Vec<&'a ReplicaSet> {
    old.iter().chain(new_rs.iter()).collect()
}

fn active(list: &[ReplicaSet]) -> Vec<ReplicaSet> {
    list.iter()
        .filter(|rs| rs_replicas(rs) > 0)
        .cloned()
        .collect()
}

async fn write_status(ctx: &Context, d: &Deployment) -> Result<Deployment> {
    let namespace = d.metadata.namespace.clone().unwrap_or_default();
    let api: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let name = d.metadata.name.clone().unwrap_or_default();
    Ok(api.replace_status(&name, &PostParams::default(), d).await?)
}

/// Upstream `getReplicaSetsForDeployment`: the ReplicaSets the Deployment controls after
/// adopting matching orphans and releasing owned ones that no longer match.
async fn claim_replicasets(
    ctx: &Context,
    d: &Deployment,
    selector: &Selector,
) -> Result<Vec<ReplicaSet>> {
    let namespace = d.metadata.namespace.clone().unwrap_or_default();
    let candidates = ctx.replicasets.list_namespace(&namespace);
    let owned = crate::claim::claim(&ctx.client, d, selector, candidates).await?;
    Ok(owned.into_iter().map(Arc::unwrap_or_clone).collect())
}

/// Upstream `getAllReplicaSetsAndSyncRevision`: the new ReplicaSet (created when asked and
/// missing) and the old ones; the Deployment's revision follows the new one.
async fn new_and_old(
    ctx: &Context,
    d: &mut Deployment,
    rs_list: &[ReplicaSet],
    create: bool,
    now: Now,
) -> Result<(Option<ReplicaSet>, Vec<ReplicaSet>)> {
    let existing = util::find_new(d, rs_list).cloned();
    let old: Vec<ReplicaSet> = rs_list
        .iter()
        .filter(|rs| {
            existing
                .as_ref()
                .is_none_or(|n| n.metadata.uid != rs.metadata.uid)
        })
        .cloned()
        .collect();
    let max_old_revision = old.iter().map(util::revision).max().unwrap_or(0);
    let new_revision = max_old_revision + 1;
    let namespace = d.metadata.namespace.clone().unwrap_or_default();
    let rs_api: Api<ReplicaSet> = Api::namespaced(ctx.client.clone(), &namespace);
    if let Some(mut new_rs) = existing {
        let annotations_changed = util::set_new_rs_annotations(d, &mut new_rs, new_revision, true);
        let min_ready = d.spec.as_ref().and_then(|s| s.min_ready_seconds);
        let spec = new_rs.spec.get_or_insert_with(Default::default);
        if annotations_changed || spec.min_ready_seconds != min_ready {
            spec.min_ready_seconds = min_ready;
            let name = new_rs.metadata.name.clone().unwrap_or_default();
            let updated = rs_api
                .replace(&name, &PostParams::default(), &new_rs)
                .await?;
            return Ok((Some(updated), old));
        }
        let rs_revision = new_rs
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(util::REVISION))
            .cloned();
        let mut needs_update = set_deployment_revision(d, rs_revision.as_deref());
        let has_deadline = util::progress_deadline(d).is_some();
        let status = d.status.get_or_insert_with(Default::default);
        if has_deadline && util::get_condition(status, "Progressing").is_none() {
            let message = format!(
                "Found new replica set \"{}\"",
                new_rs.metadata.name.clone().unwrap_or_default()
            );
            util::set_condition(
                status,
                util::condition("Progressing", "True", "FoundNewReplicaSet", message, now),
            );
            needs_update = true;
        }
        if needs_update {
            *d = write_status(ctx, d).await?;
        }
        return Ok((Some(new_rs), old));
    }
    if !create {
        return Ok((None, old));
    }
    let spec = d.spec.clone().unwrap_or_default();
    let collision_count = d.status.as_ref().and_then(|s| s.collision_count);
    let hash = util::template_hash(&spec.template, collision_count);
    let mut template = spec.template.clone();
    let template_meta = template.metadata.get_or_insert_with(Default::default);
    template_meta
        .labels
        .get_or_insert_with(Default::default)
        .insert(util::POD_TEMPLATE_HASH.to_owned(), hash.clone());
    let mut selector: LabelSelector = spec.selector.clone();
    selector
        .match_labels
        .get_or_insert_with(Default::default)
        .insert(util::POD_TEMPLATE_HASH.to_owned(), hash.clone());
    let name = format!("{}-{hash}", d.metadata.name.clone().unwrap_or_default());
    let mut new_rs = ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            owner_references: controller_reference(d).map(|r| vec![r]),
            labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(0),
            min_ready_seconds: spec.min_ready_seconds,
            selector,
            template: Some(template),
        }),
        status: None,
    };
    let everything: Vec<&ReplicaSet> = old.iter().chain(std::iter::once(&new_rs)).collect();
    let count = util::new_rs_new_replicas(d, &everything, 0);
    if let Some(spec) = new_rs.spec.as_mut() {
        spec.replicas = Some(count);
    }
    util::set_new_rs_annotations(d, &mut new_rs, new_revision, false);
    let reference = object_reference(d, &ApiResource::of::<Deployment>());
    let (created, already_existed) = match rs_api.create(&PostParams::default(), &new_rs).await {
        Ok(created) => (created, false),
        Err(err) if err.is_already_exists() => {
            let found = rs_api.get(&name).await?;
            let ours = controller_of(&found.metadata).map(|r| &r.uid) == d.metadata.uid.as_ref();
            let same = found
                .spec
                .as_ref()
                .and_then(|s| s.template.as_ref())
                .is_some_and(|t| util::equal_ignore_hash(t, &spec.template));
            if ours && same {
                (found, true)
            } else {
                // A hash collision: count it, so the next hash differs.
                let status = d.status.get_or_insert_with(Default::default);
                status.collision_count = Some(status.collision_count.unwrap_or(0) + 1);
                write_status(ctx, d).await?;
                return Err(err.into());
            }
        }
        Err(err) => {
            let message = format!("Failed to create new replica set \"{name}\": {err}");
            if util::progress_deadline(d).is_some() {
                let status = d.status.get_or_insert_with(Default::default);
                util::set_condition(
                    status,
                    util::condition(
                        "Progressing",
                        "False",
                        "ReplicaSetCreateError",
                        message.clone(),
                        now,
                    ),
                );
                write_status(ctx, d).await?;
            }
            ctx.recorder
                .publish(&reference, EventType::Warning, "FailedCreate", &message)
                .await;
            return Err(err.into());
        }
    };
    if !already_existed && count > 0 {
        ctx.recorder
            .publish(
                &reference,
                EventType::Normal,
                "ScalingReplicaSet",
                &format!("Scaled up replica set {name} from 0 to {count}"),
            )
            .await;
    }
    let mut needs_update = set_deployment_revision(d, Some(&new_revision.to_string()));
    if !already_existed && util::progress_deadline(d).is_some() {
        let status = d.status.get_or_insert_with(Default::default);
        util::set_condition(
            status,
            util::condition(
                "Progressing",
                "True",
                "NewReplicaSetCreated",
                format!("Created new replica set \"{name}\""),
                now,
            ),
        );
        needs_update = true;
    }
    if needs_update {
        *d = write_status(ctx, d).await?;
    }
    Ok((Some(created), old))
}

/// Sets the Deployment's revision annotation; whether it changed.
fn set_deployment_revision(d: &mut Deployment, revision: Option<&str>) -> bool {
    let Some(revision) = revision.filter(|r| !r.is_empty()) else {
        return false;
    };
    let annotations = d.metadata.annotations.get_or_insert_with(Default::default);
    if annotations.get(util::REVISION).map(String::as_str) == Some(revision) {
        return false;
    }
    annotations.insert(util::REVISION.to_owned(), revision.to_owned());
    true
}

/// Upstream `checkPausedConditions`.
async fn check_paused_conditions(ctx: &Context, d: &mut Deployment, now: Now) -> Result<()> {
    if util::progress_deadline(d).is_none() {
        return Ok(());
    }
    let paused = d.spec.as_ref().and_then(|s| s.paused) == Some(true);
    let status = d.status.get_or_insert_with(Default::default);
    let reason = util::get_condition(status, "Progressing").and_then(|c| c.reason.clone());
    if reason.as_deref() == Some("ProgressDeadlineExceeded") {
        return Ok(());
    }
    let paused_recorded = reason.as_deref() == Some("DeploymentPaused");
    let condition = if paused && !paused_recorded {
        util::condition(
            "Progressing",
            "Unknown",
            "DeploymentPaused",
            "Deployment is paused".into(),
            now,
        )
    } else if !paused && paused_recorded {
        util::condition(
            "Progressing",
            "Unknown",
            "DeploymentResumed",
            "Deployment is resumed".into(),
            now,
        )
    } else {
        return Ok(());
    };
    util::set_condition(status, condition);
    *d = write_status(ctx, d).await?;
    Ok(())
}

/// Upstream `isScalingEvent`: an active ReplicaSet was sized for another replica count.
async fn is_scaling_event(
    ctx: &Context,
    d: &mut Deployment,
    rs_list: &[ReplicaSet],
    now: Now,
) -> Result<bool> {
    let (new_rs, old) = new_and_old(ctx, d, rs_list, false, now).await?;
    let want = replicas(d);
    Ok(all(&new_rs, &old)
        .into_iter()
        .filter(|rs| rs_replicas(rs) > 0)
        .any(|rs| util::int_annotation(rs, util::DESIRED_REPLICAS).is_some_and(|n| n != want)))
}

/// Scales `rs` to `size` (and refreshes its replica annotations); records ScalingReplicaSet.
/// Returns the ReplicaSet as written and whether its size changed.
async fn scale_replicaset(
    ctx: &Context,
    d: &Deployment,
    rs: &ReplicaSet,
    size: i32,
) -> Result<(ReplicaSet, bool)> {
    let current = rs_replicas(rs);
    let desired = replicas(d);
    let max = desired + util::max_surge(d);
    let size_changes = current != size;
    if !size_changes && !util::replicas_annotations_need_update(rs, desired, max) {
        return Ok((rs.clone(), false));
    }
    let mut updated = rs.clone();
    updated.spec.get_or_insert_with(Default::default).replicas = Some(size);
    util::set_replicas_annotations(&mut updated, desired, max);
    let namespace = rs.metadata.namespace.clone().unwrap_or_default();
    let name = rs.metadata.name.clone().unwrap_or_default();
    let api: Api<ReplicaSet> = Api::namespaced(ctx.client.clone(), &namespace);
    let written = api.replace(&name, &PostParams::default(), &updated).await?;
    if size_changes {
        let direction = if size > current { "up" } else { "down" };
        let reference = object_reference(d, &ApiResource::of::<Deployment>());
        ctx.recorder
            .publish(
                &reference,
                EventType::Normal,
                "ScalingReplicaSet",
                &format!("Scaled {direction} replica set {name} from {current} to {size}"),
            )
            .await;
    }
    Ok((written, size_changes))
}

/// Upstream `sync` and `scale`: resize without rolling (paused, or the replica count changed
/// mid-rollout: proportionally), then clean up when paused and write the status.
async fn scale_only(
    ctx: &Context,
    d: &mut Deployment,
    rs_list: &[ReplicaSet],
    now: Now,
) -> Result<Action> {
    let (new_rs, mut old) = new_and_old(ctx, d, rs_list, false, now).await?;
    let want = replicas(d);
    old.sort_by(|a, b| util::by_creation(b, a));
    let everything: Vec<ReplicaSet> = old.iter().chain(new_rs.iter()).cloned().collect();
    let active_sets = active(&everything);
    let single = match active_sets.len() {
        0 => new_rs.clone().or_else(|| old.first().cloned()),
        1 => active_sets.first().cloned(),
        _ => None,
    };
    if let Some(target) = single {
        if rs_replicas(&target) != want {
            scale_replicaset(ctx, d, &target, want).await?;
        }
    } else if new_rs.as_ref().is_some_and(|n| {
        util::int_annotation(n, util::DESIRED_REPLICAS) == Some(want)
            && n.status
                .as_ref()
                .and_then(|s| s.available_replicas)
                .unwrap_or(0)
                == want
            && rs_replicas(n) == want
    }) {
        for rs in active(&old) {
            scale_replicaset(ctx, d, &rs, 0).await?;
        }
    } else if !util::is_recreate(d) {
        let mut sets = active_sets;
        let current: i32 = sets.iter().map(rs_replicas).sum();
        let allowed = if want > 0 {
            want + util::max_surge(d)
        } else {
            0
        };
        let to_add = allowed - current;
        let newer_first = |a: &ReplicaSet, b: &ReplicaSet| {
            rs_replicas(b)
                .cmp(&rs_replicas(a))
                .then_with(|| util::by_creation(b, a))
        };
        let older_first = |a: &ReplicaSet, b: &ReplicaSet| {
            rs_replicas(b)
                .cmp(&rs_replicas(a))
                .then_with(|| util::by_creation(a, b))
        };
        if to_add > 0 {
            sets.sort_by(newer_first);
        } else if to_add < 0 {
            sets.sort_by(older_first);
        }
        let mut added = 0;
        let mut sizes = Vec::with_capacity(sets.len());
        for rs in &sets {
            let share = util::proportion(rs, d, to_add, added);
            sizes.push(rs_replicas(rs) + share);
            added += share;
        }
        if let Some(first) = sizes.first_mut()
            && to_add != 0
        {
            *first = (*first + to_add - added).max(0);
        }
        for (rs, size) in sets.iter().zip(sizes) {
            scale_replicaset(ctx, d, rs, size).await?;
        }
    }
    let rs_list = fresh_replicasets(ctx, rs_list);
    let (new_rs, old) = new_and_old(ctx, d, &rs_list, false, now).await?;
    if d.spec.as_ref().and_then(|s| s.paused) == Some(true) {
        cleanup(ctx, d, &old).await?;
    }
    let everything = all(&new_rs, &old);
    let status = util::calculate_status(&everything, new_rs.as_ref(), d, now);
    if d.status.as_ref() != Some(&status) {
        let mut updated = d.clone();
        updated.status = Some(status);
        write_status(ctx, &updated).await?;
    }
    Ok(Action::AwaitChange)
}

/// The claimed ReplicaSets as the cache has them now (after this sync's writes, as far as
/// the informer has seen them).
fn fresh_replicasets(ctx: &Context, rs_list: &[ReplicaSet]) -> Vec<ReplicaSet> {
    rs_list
        .iter()
        .map(|rs| {
            ctx.replicasets
                .get(&rs.key())
                .map_or_else(|| rs.clone(), |fresh| (*fresh).clone())
        })
        .collect()
}

/// Upstream `rolloutRolling`: scale the new ReplicaSet up within the surge, else the old
/// ones down within the unavailability, else clean up; then the rollout status.
async fn rollout_rolling(
    ctx: &Context,
    d: &mut Deployment,
    rs_list: &[ReplicaSet],
    now: Now,
) -> Result<Action> {
    let (new_rs, old) = new_and_old(ctx, d, rs_list, true, now).await?;
    let Some(mut new_rs) = new_rs else {
        return Ok(Action::AwaitChange);
    };
    let want = replicas(d);
    // Scale up, if we can.
    let new_size = rs_replicas(&new_rs);
    if new_size != want {
        let target = if new_size > want {
            want
        } else {
            let everything: Vec<&ReplicaSet> = old.iter().chain(std::iter::once(&new_rs)).collect();
            util::new_rs_new_replicas(d, &everything, new_size)
        };
        let (written, scaled) = scale_replicaset(ctx, d, &new_rs, target).await?;
        new_rs = written;
        if scaled {
            return rollout_status(ctx, d, &old, Some(&new_rs), now).await;
        }
    }
    // Scale down, if we can.
    let mut old = old;
    if reconcile_old(ctx, d, &mut old, &new_rs).await? {
        return rollout_status(ctx, d, &old, Some(&new_rs), now).await;
    }
    let everything: Vec<&ReplicaSet> = old.iter().chain(std::iter::once(&new_rs)).collect();
    let current = util::calculate_status(&everything, Some(&new_rs), d, now);
    if util::complete(d, &current) {
        cleanup(ctx, d, &old).await?;
    }
    rollout_status(ctx, d, &old, Some(&new_rs), now).await
}

/// Upstream `reconcileOldReplicaSets`: scale old ReplicaSets down as far as availability
/// allows, unhealthy replicas first. Whether anything was scaled.
async fn reconcile_old(
    ctx: &Context,
    d: &Deployment,
    old: &mut [ReplicaSet],
    new_rs: &ReplicaSet,
) -> Result<bool> {
    let old_count: i32 = old.iter().map(rs_replicas).sum();
    if old_count == 0 {
        return Ok(false);
    }
    let all_count = old_count + rs_replicas(new_rs);
    let min_available = replicas(d) - util::max_unavailable(d);
    let available = |rs: &ReplicaSet| {
        rs.status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0)
    };
    let new_unavailable = rs_replicas(new_rs) - available(new_rs);
    let max_scaled_down = all_count - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return Ok(false);
    }
    old.sort_by(util::by_creation);
    // Unhealthy replicas first: they block the rollout otherwise.
    let mut total = 0;
    for rs in old.iter_mut() {
        if total >= max_scaled_down {
            break;
        }
        let size = rs_replicas(rs);
        let unhealthy = size - available(rs);
        if size == 0 || unhealthy <= 0 {
            continue;
        }
        let down = (max_scaled_down - total).min(unhealthy);
        let (written, _) = scale_replicaset(ctx, d, rs, size - down).await?;
        *rs = written;
        total += down;
    }
    // Then healthy ones, as far as availability allows.
    let available_count: i32 = old.iter().map(available).sum::<i32>() + available(new_rs);
    let mut scaled_healthy = 0;
    if available_count > min_available {
        let budget = available_count - min_available;
        for rs in old.iter_mut() {
            if scaled_healthy >= budget {
                break;
            }
            let size = rs_replicas(rs);
            if size == 0 {
                continue;
            }
            let down = size.min(budget - scaled_healthy);
            let (written, _) = scale_replicaset(ctx, d, rs, size - down).await?;
            *rs = written;
            scaled_healthy += down;
        }
    }
    Ok(total + scaled_healthy > 0)
}

/// Upstream `rolloutRecreate`: old ReplicaSets to zero, wait for their pods to go, then the
/// new one to full size.
async fn rollout_recreate(
    ctx: &Context,
    d: &mut Deployment,
    rs_list: &[ReplicaSet],
    now: Now,
) -> Result<Action> {
    let (new_rs, old) = new_and_old(ctx, d, rs_list, false, now).await?;
    let mut scaled_down = false;
    for rs in active(&old) {
        let (_, scaled) = scale_replicaset(ctx, d, &rs, 0).await?;
        scaled_down |= scaled;
    }
    if scaled_down {
        return rollout_status(ctx, d, &old, new_rs.as_ref(), now).await;
    }
    if old_pods_running(ctx, new_rs.as_ref(), &old) {
        return rollout_status(ctx, d, &old, new_rs.as_ref(), now).await;
    }
    let (new_rs, old) = match new_rs {
        Some(new_rs) => (new_rs, old),
        None => match new_and_old(ctx, d, rs_list, true, now).await? {
            (Some(new_rs), old) => (new_rs, old),
            (None, _) => return Ok(Action::AwaitChange),
        },
    };
    let want = replicas(d);
    let (new_rs, _) = if rs_replicas(&new_rs) != want {
        scale_replicaset(ctx, d, &new_rs, want).await?
    } else {
        (new_rs, false)
    };
    let current = d.status.clone().unwrap_or_default();
    if util::complete(d, &current) {
        cleanup(ctx, d, &old).await?;
    }
    rollout_status(ctx, d, &old, Some(&new_rs), now).await
}

/// Upstream `oldPodsRunning`: old ReplicaSets report replicas, or pods of theirs that have
/// not finished remain.
fn old_pods_running(ctx: &Context, new_rs: Option<&ReplicaSet>, old: &[ReplicaSet]) -> bool {
    if old
        .iter()
        .any(|rs| rs.status.as_ref().is_some_and(|s| s.replicas > 0))
    {
        return true;
    }
    let old_uids: Vec<&String> = old
        .iter()
        .filter_map(|rs| rs.metadata.uid.as_ref())
        .collect();
    let new_uid = new_rs.and_then(|rs| rs.metadata.uid.as_ref());
    let namespace = old
        .first()
        .and_then(|rs| rs.metadata.namespace.clone())
        .unwrap_or_default();
    ctx.pods.list_namespace(&namespace).iter().any(|pod| {
        controller_of(&pod.metadata)
            .is_some_and(|owner| Some(&owner.uid) != new_uid && old_uids.contains(&&owner.uid))
            && !matches!(
                pod.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Succeeded" | "Failed")
            )
    })
}

/// Upstream `cleanupDeployment`: beyond `revisionHistoryLimit`, delete the oldest old
/// ReplicaSets that have no pods.
async fn cleanup(ctx: &Context, d: &Deployment, old: &[ReplicaSet]) -> Result<()> {
    let limit = d
        .spec
        .as_ref()
        .and_then(|s| s.revision_history_limit)
        .unwrap_or(util::DEFAULT_REVISION_HISTORY_LIMIT);
    let mut cleanable: Vec<&ReplicaSet> = old
        .iter()
        .filter(|rs| rs.metadata.deletion_timestamp.is_none())
        .collect();
    let excess = i32::try_from(cleanable.len()).unwrap_or(i32::MAX) - limit;
    if excess <= 0 {
        return Ok(());
    }
    cleanable.sort_by(|a, b| {
        util::revision(a)
            .cmp(&util::revision(b))
            .then_with(|| util::by_creation(a, b))
    });
    for rs in cleanable
        .into_iter()
        .take(usize::try_from(excess).unwrap_or(0))
    {
        let status = rs.status.clone().unwrap_or_default();
        if status.replicas != 0
            || rs_replicas(rs) != 0
            || rs.metadata.generation > status.observed_generation
        {
            continue;
        }
        let namespace = rs.metadata.namespace.clone().unwrap_or_default();
        let api: Api<ReplicaSet> = Api::namespaced(ctx.client.clone(), &namespace);
        match api
            .delete(
                rs.metadata.name.as_deref().unwrap_or(""),
                &DeleteParams::default(),
            )
            .await
        {
            Ok(_) => {}
            Err(err) if err.is_not_found() => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}

/// Upstream `syncRolloutStatus`: the status with the Progressing condition (progress, done,
/// or past the deadline) and ReplicaSet failures; requeues to notice a deadline.
async fn rollout_status(
    ctx: &Context,
    d: &Deployment,
    old: &[ReplicaSet],
    new_rs: Option<&ReplicaSet>,
    now: Now,
) -> Result<Action> {
    // The ReplicaSets as last seen (scaling above may have changed them).
    let refresh = |rs: &ReplicaSet| {
        ctx.replicasets
            .get(&rs.key())
            .map_or_else(|| rs.clone(), |f| (*f).clone())
    };
    let old: Vec<ReplicaSet> = old.iter().map(refresh).collect();
    let new_rs = new_rs.map(refresh);
    let everything: Vec<&ReplicaSet> = old.iter().chain(new_rs.iter()).collect();
    let mut status = util::calculate_status(&everything, new_rs.as_ref(), d, now);
    let deadline = util::progress_deadline(d);
    if deadline.is_none() {
        util::remove_condition(&mut status, "Progressing");
    }
    let current = d
        .status
        .as_ref()
        .and_then(|s| util::get_condition(s, "Progressing"))
        .cloned();
    let complete_already = status.replicas == status.updated_replicas
        && current.as_ref().and_then(|c| c.reason.as_deref()) == Some("NewReplicaSetAvailable");
    let name = |fallback: String| {
        new_rs
            .as_ref()
            .and_then(|rs| rs.metadata.name.clone())
            .map_or(fallback, |n| format!("ReplicaSet \"{n}\""))
    };
    let deployment_name = format!(
        "Deployment \"{}\"",
        d.metadata.name.clone().unwrap_or_default()
    );
    if deadline.is_some() && !complete_already {
        if util::complete(d, &status) {
            let message = format!(
                "{} has successfully progressed.",
                name(deployment_name.clone())
            );
            util::set_condition(
                &mut status,
                util::condition(
                    "Progressing",
                    "True",
                    "NewReplicaSetAvailable",
                    message,
                    now,
                ),
            );
        } else if util::progressing(d, &status) {
            let message = format!("{} is progressing.", name(deployment_name.clone()));
            let mut condition =
                util::condition("Progressing", "True", "ReplicaSetUpdated", message, now);
            if let Some(current) = current.as_ref().filter(|c| c.status == "True") {
                condition.last_transition_time = current.last_transition_time.clone();
            }
            util::remove_condition(&mut status, "Progressing");
            util::set_condition(&mut status, condition);
        } else if util::timed_out(d, &status, now) {
            let message = format!(
                "{} has timed out progressing.",
                name(deployment_name.clone())
            );
            util::set_condition(
                &mut status,
                util::condition(
                    "Progressing",
                    "False",
                    "ProgressDeadlineExceeded",
                    message,
                    now,
                ),
            );
        }
    }
    // ReplicaSet failures become the Deployment's.
    let failure = new_rs
        .iter()
        .chain(old.iter())
        .filter_map(|rs| {
            rs.status
                .as_ref()?
                .conditions
                .as_ref()?
                .iter()
                .find(|c| c.type_ == "ReplicaFailure" && c.status == "True")
                .cloned()
        })
        .next();
    match failure {
        Some(failure) => util::set_condition(
            &mut status,
            util::condition(
                "ReplicaFailure",
                "True",
                failure.reason.as_deref().unwrap_or(""),
                failure.message.unwrap_or_default(),
                now,
            ),
        ),
        None => util::remove_condition(&mut status, "ReplicaFailure"),
    }
    if d.status.as_ref() != Some(&status) {
        let mut updated = d.clone();
        updated.status = Some(status.clone());
        write_status(ctx, &updated).await?;
    }
    Ok(requeue_stuck(d, &status, now))
}

/// Upstream `requeueStuckDeployment`: look again when the progress deadline would pass.
fn requeue_stuck(d: &Deployment, status: &DeploymentStatus, now: Now) -> Action {
    let Some(deadline) = util::progress_deadline(d) else {
        return Action::AwaitChange;
    };
    let Some(condition) = util::get_condition(status, "Progressing") else {
        return Action::AwaitChange;
    };
    if matches!(
        condition.reason.as_deref(),
        Some("NewReplicaSetAvailable" | "ProgressDeadlineExceeded")
    ) || util::complete(d, status)
    {
        return Action::AwaitChange;
    }
    let Some(from) = condition.last_update_time.as_ref() else {
        return Action::AwaitChange;
    };
    let due = kubemock_apimachinery::time::shift_seconds(from.0, i64::from(deadline));
    let left = due.duration_since(now).as_millis();
    if left <= 0 {
        return Action::RequeueAfter(Duration::from_millis(1));
    }
    Action::RequeueAfter(Duration::from_millis(u64::try_from(left).unwrap_or(0) + 1))
}

/// Upstream `syncStatusOnly`/`syncDeploymentStatus`.
async fn sync_status(
    ctx: &Context,
    d: &Deployment,
    everything: &[&ReplicaSet],
    new_rs: Option<&ReplicaSet>,
    now: Now,
) -> Result<()> {
    let status = util::calculate_status(everything, new_rs, d, now);
    if d.status.as_ref() != Some(&status) {
        let mut updated = d.clone();
        updated.status = Some(status);
        write_status(ctx, &updated).await?;
    }
    Ok(())
}
