//! One sync of one ReplicaSet (upstream `syncReplicaSet`): claim its pods, create or delete
//! one step's worth when expectations allow, then write the status the pods add up to.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::Pod;
use kubemock_client::controller::controller_reference;
use kubemock_client::events::{EventType, object_reference};
use kubemock_client::{
    Action, Api, ApiResource, DeleteParams, ObjectKey, PostParams, Resource, Selector,
};

use super::pods::{self, ManageFailure};
use super::{BURST_REPLICAS, Context};
use crate::error::Result;

/// Syncs the ReplicaSet `key`.
pub(crate) async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(rs) = ctx.replicasets.get(&key) else {
        ctx.expectations.forget(&key);
        return Ok(Action::AwaitChange);
    };
    let namespace = key.namespace.clone().unwrap_or_default();
    let no_spec = ReplicaSetSpec::default();
    let spec = rs.spec.as_ref().unwrap_or(&no_spec);
    let selector = match Selector::from_label_selector(&spec.selector) {
        Ok(selector) => selector,
        Err(err) => {
            // Validation refuses such objects; nothing to do until it changes.
            tracing::warn!(replicaset = %key, error = %err, "invalid selector");
            return Ok(Action::AwaitChange);
        }
    };
    // Before reading the pods: expectations met now stay met for what is read next.
    let satisfied = ctx.expectations.satisfied(&key);
    // Its own pods and the orphans: the only pods a claim can keep or adopt.
    let uid = rs.metadata.uid.as_deref().unwrap_or_default();
    let active: Vec<Arc<Pod>> = crate::podindex::claimable(&ctx.pods, &namespace, uid)
        .into_iter()
        .filter(|p| pods::is_active(p))
        .collect();
    let owned = claim_pods(&ctx, &rs, &selector, active).await?;

    let mut failure = None;
    if satisfied && rs.metadata.deletion_timestamp.is_none() {
        let wanted = usize::try_from(spec.replicas.unwrap_or(1).max(0)).unwrap_or(0);
        if let Err(message) = manage_replicas(&ctx, &rs, &key, &owned, wanted).await {
            let reason = if owned.len() < wanted {
                "FailedCreate"
            } else {
                "FailedDelete"
            };
            failure = Some(ManageFailure { reason, message });
        }
    }

    let now = ctx.clock.now();
    let status = pods::compute_status(&rs, &owned, failure.as_ref(), now);
    if rs.status.as_ref() != Some(&status) {
        let mut updated = (*rs).clone();
        updated.status = Some(status.clone());
        let api: Api<ReplicaSet> = Api::namespaced(ctx.client.clone(), &namespace);
        api.replace_status(&key.name, &PostParams::default(), &updated)
            .await?;
    }
    if let Some(failure) = failure {
        return Err(crate::Error::Manage(failure.message));
    }
    let replicas = spec.replicas.unwrap_or(1);
    let min_ready = spec.min_ready_seconds.unwrap_or(0);
    if min_ready > 0
        && status.ready_replicas.unwrap_or(0) == replicas
        && status.available_replicas.unwrap_or(0) != replicas
    {
        return Ok(Action::RequeueAfter(Duration::from_secs(
            u64::try_from(min_ready).unwrap_or(0),
        )));
    }
    Ok(Action::AwaitChange)
}

/// Upstream `ClaimPods`: the pods `rs` controls after adopting matching orphans and
/// releasing owned pods that no longer match.
async fn claim_pods(
    ctx: &Context,
    rs: &ReplicaSet,
    selector: &Selector,
    active: Vec<Arc<Pod>>,
) -> Result<Vec<Arc<Pod>>> {
    crate::claim::claim(&ctx.client, rs, selector, active).await
}

/// Upstream `manageReplicas`: one step toward `wanted` pods. The error message, if any part
/// failed.
async fn manage_replicas(
    ctx: &Context,
    rs: &ReplicaSet,
    key: &ObjectKey,
    owned: &[Arc<Pod>],
    wanted: usize,
) -> Result<(), String> {
    let namespace = key.namespace.clone().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let reference = object_reference(rs, &ApiResource::of::<ReplicaSet>());
    if owned.len() < wanted {
        let missing = (wanted - owned.len()).min(BURST_REPLICAS);
        let Some(controller) = controller_reference(rs) else {
            return Ok(());
        };
        let template = pods::pod_from_template(rs, controller);
        let post = PostParams::default();
        ctx.expectations.expect_creations(key, missing);
        let mut created = 0;
        let mut error = None;
        for batch in pods::slow_start_batches(missing) {
            let results = futures_util::future::join_all(
                (0..batch).map(|_| api.create_named(&post, &template)),
            )
            .await;
            for result in results {
                match result {
                    Ok(name) => {
                        created += 1;
                        ctx.recorder
                            .publish(
                                &reference,
                                EventType::Normal,
                                "SuccessfulCreate",
                                &format!("Created pod: {name}"),
                            )
                            .await;
                    }
                    // A terminating namespace refuses every create: nothing to report.
                    Err(err) if err.is_namespace_terminating() => created += 1,
                    Err(err) => {
                        ctx.recorder
                            .publish(
                                &reference,
                                EventType::Warning,
                                "FailedCreate",
                                &format!("Error creating: {err}"),
                            )
                            .await;
                        error.get_or_insert(err.to_string());
                    }
                }
            }
            if error.is_some() {
                break;
            }
        }
        for _ in created..missing {
            ctx.expectations.creation_observed(key); // never coming
        }
        return error.map_or(Ok(()), Err);
    }
    if owned.len() > wanted {
        let excess = (owned.len() - wanted).min(BURST_REPLICAS);
        let victims: Vec<Arc<Pod>> = pods::pods_to_delete(owned, owned, excess)
            .into_iter()
            .cloned()
            .collect();
        ctx.expectations
            .expect_deletions(key, victims.iter().map(|p| p.key()));
        let results = futures_util::future::join_all(victims.iter().map(|pod| {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let api = api.clone();
            async move {
                (
                    name.clone(),
                    api.delete(&name, &DeleteParams::default()).await,
                )
            }
        }))
        .await;
        let mut error = None;
        for ((name, result), pod) in results.into_iter().zip(&victims) {
            match result {
                Ok(_) => {
                    ctx.recorder
                        .publish(
                            &reference,
                            EventType::Normal,
                            "SuccessfulDelete",
                            &format!("Deleted pod: {name}"),
                        )
                        .await;
                }
                Err(err) => {
                    ctx.expectations.deletion_observed(key, &pod.key());
                    if !err.is_not_found() {
                        ctx.recorder
                            .publish(
                                &reference,
                                EventType::Warning,
                                "FailedDelete",
                                &format!("Error deleting: {err}"),
                            )
                            .await;
                        error.get_or_insert(err.to_string());
                    }
                }
            }
        }
        return error.map_or(Ok(()), Err);
    }
    Ok(())
}
