//! One sync of one DaemonSet (upstream `syncDaemonSet`): its revisions, then (expectations
//! allowing) one step of pods per node and of the rolling update, the history cleanup, and
//! the status the nodes and pods add up to.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod};
use kubemock_client::controller::controller_reference;
use kubemock_client::events::{EventType, object_reference};
use kubemock_client::{Action, Api, ApiResource, DeleteParams, ObjectKey, PostParams, Selector};

use super::util::{self, NodePlan};
use super::{BURST_REPLICAS, Context, history, selector_is_empty};
use crate::error::{Error, Result};
use crate::replicaset::pods::slow_start_batches;

/// Syncs the DaemonSet `key`.
pub(crate) async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(ds) = ctx.daemonsets.get(&key) else {
        ctx.expectations.forget(&key);
        return Ok(Action::AwaitChange);
    };
    let reference = object_reference(ds.as_ref(), &ApiResource::of::<DaemonSet>());
    if selector_is_empty(&ds) {
        ctx.recorder
            .publish(
                &reference,
                EventType::Warning,
                "SelectingAll",
                "This daemon set is selecting all pods. A non-empty selector is required.",
            )
            .await;
        return Ok(Action::AwaitChange);
    }
    let spec = ds.spec.clone().unwrap_or_default();
    let selector = match Selector::from_label_selector(&spec.selector) {
        Ok(selector) => selector,
        Err(err) => {
            // Validation refuses such objects; nothing to do until it changes.
            tracing::warn!(daemonset = %key, error = %err, "invalid selector");
            return Ok(Action::AwaitChange);
        }
    };
    // Being deleted: its revisions may be gone already, so neither pods nor status are
    // touched (the garbage collector removes the pods).
    if ds.metadata.deletion_timestamp.is_some() {
        return Ok(Action::AwaitChange);
    }
    // Before reading the pods: expectations met now stay met for what is read next.
    let satisfied = ctx.expectations.satisfied(&key);
    let pods = claim_pods(&ctx, &ds, &selector).await?;
    let (current, old) = history::construct(&ctx, &ds, &selector, &pods).await?;
    let hash = current
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(util::REVISION_HASH))
        .cloned()
        .unwrap_or_default();
    let mut nodes: Vec<Arc<Node>> = ctx.nodes.list();
    nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let wanted: BTreeMap<String, (bool, bool)> = nodes
        .iter()
        .map(|n| {
            let name = n.metadata.name.clone().unwrap_or_default();
            (name, util::node_should_run(n, &ds))
        })
        .collect();
    let by_node = pods_by_node(&pods);
    let now = ctx.clock.now();

    let mut action = Action::AwaitChange;
    let mut result = Ok(());
    if satisfied {
        match update(&ctx, &ds, &key, &wanted, &by_node, &hash, &reference).await {
            Ok(retry) => {
                if let Some(delay) = retry {
                    action = Action::RequeueAfter(delay);
                }
                result = history::cleanup(&ctx, &ds, &old, &pods).await;
            }
            Err(err) => result = Err(err),
        }
    }
    let status = util::compute_status(&ds, &wanted, &by_node, &hash, satisfied, now);
    if ds.status.as_ref() != Some(&status) {
        let mut updated = (*ds).clone();
        updated.status = Some(status.clone());
        let api: Api<DaemonSet> = Api::namespaced(ctx.client.clone(), &ds_namespace(&ds));
        let written = api
            .replace_status(&key.name, &PostParams::default(), &updated)
            .await;
        if let Err(err) = written {
            if result.is_ok() {
                return Err(err.into());
            }
            tracing::warn!(daemonset = %key, error = %err, "writing the status failed");
        }
    }
    result?;
    // Pods turn available after minReadySeconds without an event to say so.
    let min_ready = spec.min_ready_seconds.unwrap_or(0);
    if min_ready > 0 && status.number_ready != status.number_available.unwrap_or(0) {
        let delay = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0));
        action = match action {
            Action::RequeueAfter(d) => Action::RequeueAfter(d.min(delay)),
            _ => Action::RequeueAfter(delay),
        };
    }
    Ok(action)
}

fn ds_namespace(ds: &DaemonSet) -> String {
    ds.metadata.namespace.clone().unwrap_or_default()
}

/// Upstream `getDaemonPods`: the pods `ds` controls after adopting matching orphans and
/// releasing owned pods that no longer match (deleted pods that finished are left out).
async fn claim_pods(ctx: &Context, ds: &DaemonSet, selector: &Selector) -> Result<Vec<Pod>> {
    let candidates: Vec<Arc<Pod>> = ctx
        .pods
        .list_namespace(&ds_namespace(ds))
        .into_iter()
        .filter(|p| {
            let finished = matches!(
                p.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Succeeded" | "Failed")
            );
            !(finished && p.metadata.deletion_timestamp.is_some())
        })
        .collect();
    let owned = crate::claim::claim(&ctx.client, ds, selector, candidates).await?;
    Ok(owned.into_iter().map(Arc::unwrap_or_clone).collect())
}

/// The daemon pods by the node they are for (pods for no node are left out).
fn pods_by_node(pods: &[Pod]) -> BTreeMap<String, Vec<Pod>> {
    let mut by_node: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
    for pod in pods {
        if let Some(node) = util::target_node(pod) {
            by_node.entry(node).or_default().push(pod.clone());
        }
    }
    by_node
}

/// What a step deletes: by name, gracefully or (pods of deleted nodes) at once.
#[derive(Default)]
struct Deletions {
    graceful: Vec<String>,
    forced: Vec<String>,
}

/// Upstream `updateDaemonSet`: the manage step, then the rolling update if expectations
/// still allow. The delay after which a backing-off node is to be looked at again.
async fn update(
    ctx: &Context,
    ds: &DaemonSet,
    key: &ObjectKey,
    wanted: &BTreeMap<String, (bool, bool)>,
    by_node: &BTreeMap<String, Vec<Pod>>,
    hash: &str,
    reference: &ObjectReference,
) -> Result<Option<Duration>> {
    let now = ctx.clock.now();
    let mut create = Vec::new();
    let mut delete = Deletions::default();
    let mut retry_after: Option<Duration> = None;
    let uid = ds.metadata.uid.clone().unwrap_or_default();
    let generation = ds
        .status
        .as_ref()
        .and_then(|s| s.observed_generation)
        .unwrap_or(0);
    ctx.backoff.collect_garbage();
    for (node, should) in wanted {
        let pods = by_node.get(node).map(Vec::as_slice).unwrap_or_default();
        let NodePlan {
            create: needs_pod,
            delete: excess,
            failed,
            succeeded,
        } = util::plan_node(ds, *should, pods, hash, now);
        if needs_pod {
            create.push(node.clone());
        }
        delete.graceful.extend(excess);
        let backoff_key = format!("{uid}/{generation}/{node}");
        for pod in failed {
            if let Some(left) = ctx.backoff.remaining(&backoff_key) {
                tracing::debug!(daemonset = %key, %pod, %node, ?left, "deleting a failed pod is backing off");
                retry_after = Some(retry_after.map_or(left, |d| d.min(left)));
                continue;
            }
            ctx.backoff.next(&backoff_key);
            let namespace = ds_namespace(ds);
            let message = format!(
                "Found failed daemon pod {namespace}/{pod} on node {node}, will try to kill it"
            );
            ctx.recorder
                .publish(reference, EventType::Warning, "FailedDaemonPod", &message)
                .await;
            delete.graceful.push(pod);
        }
        for pod in succeeded {
            let namespace = ds_namespace(ds);
            let message = format!(
                "Found succeeded daemon pod {namespace}/{pod} on node {node}, will try to delete it"
            );
            ctx.recorder
                .publish(reference, EventType::Normal, "SucceededDaemonPod", &message)
                .await;
            delete.graceful.push(pod);
        }
    }
    // Pods for nodes that do not exist: unbound ones are never scheduled, and bound ones
    // would wait for the pod GC controller, which kubemock does not have.
    for (node, pods) in by_node.iter().filter(|(n, _)| !wanted.contains_key(*n)) {
        for pod in pods {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let bound = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_some_and(|n| !n.is_empty());
            if !bound {
                delete.graceful.push(name);
            } else if pod.metadata.deletion_timestamp.is_none()
                || pod.metadata.finalizers.as_ref().is_none_or(Vec::is_empty)
            {
                tracing::info!(daemonset = %key, pod = %name, %node, "deleting a pod of a deleted node");
                delete.forced.push(name);
            }
        }
    }
    sync_nodes(ctx, ds, key, &create, delete, hash, reference).await?;

    if ctx.expectations.satisfied(key) && is_rolling_update(ds) {
        let step = util::rolling_update(ds, wanted, by_node, hash, now).map_err(Error::Manage)?;
        if !step.create.is_empty() || !step.delete.is_empty() {
            tracing::debug!(daemonset = %key, delete = ?step.delete, create = ?step.create, "rolling update step");
        }
        let deletions = Deletions {
            graceful: step.delete,
            forced: Vec::new(),
        };
        sync_nodes(ctx, ds, key, &step.create, deletions, hash, reference).await?;
    }
    Ok(retry_after)
}

fn is_rolling_update(ds: &DaemonSet) -> bool {
    ds.spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        .is_none_or(|t| t == "RollingUpdate")
}

/// Upstream `syncNodes`: creates a pod for each of `nodes` (in slow-start batches) and
/// deletes the pods `delete` names, with expectations set first.
async fn sync_nodes(
    ctx: &Context,
    ds: &DaemonSet,
    key: &ObjectKey,
    nodes: &[String],
    delete: Deletions,
    hash: &str,
    reference: &ObjectReference,
) -> Result<()> {
    let namespace = ds_namespace(ds);
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let nodes = &nodes[..nodes.len().min(BURST_REPLICAS)];
    let mut victims: Vec<(String, bool)> = delete
        .graceful
        .into_iter()
        .map(|n| (n, false))
        .chain(delete.forced.into_iter().map(|n| (n, true)))
        .collect();
    victims.truncate(BURST_REPLICAS);
    ctx.expectations.expect(
        key,
        nodes.len(),
        victims
            .iter()
            .map(|(name, _)| ObjectKey::new(Some(&namespace), name)),
    );
    let mut error: Option<String> = None;

    let template = util::pod_template(ds, util::template_generation(ds), hash);
    let controller = controller_reference(ds);
    let post = PostParams::default();
    let mut next = 0;
    for batch in slow_start_batches(nodes.len()) {
        let batch_nodes = &nodes[next..next + batch];
        next += batch;
        let pods: Vec<Pod> = batch_nodes
            .iter()
            .map(|node| new_pod(ds, &template, controller.clone(), node))
            .collect();
        let results =
            futures_util::future::join_all(pods.iter().map(|pod| api.create(&post, pod))).await;
        let mut failed = false;
        for result in results {
            match result {
                Ok(pod) => {
                    let name = pod.metadata.name.unwrap_or_default();
                    ctx.recorder
                        .publish(
                            reference,
                            EventType::Normal,
                            "SuccessfulCreate",
                            &format!("Created pod: {name}"),
                        )
                        .await;
                }
                // A terminating namespace refuses every create: nothing to report.
                Err(err) if err.is_namespace_terminating() => {}
                Err(err) => {
                    ctx.expectations.creation_observed(key);
                    failed = true;
                    ctx.recorder
                        .publish(
                            reference,
                            EventType::Warning,
                            "FailedCreate",
                            &format!("Error creating: {err}"),
                        )
                        .await;
                    error.get_or_insert(err.to_string());
                }
            }
        }
        if failed {
            // The batches not attempted are not expected either.
            for _ in next..nodes.len() {
                ctx.expectations.creation_observed(key);
            }
            break;
        }
    }

    let results = futures_util::future::join_all(victims.iter().map(|(name, forced)| {
        let api = api.clone();
        let params = DeleteParams {
            grace_period_seconds: forced.then_some(0),
            ..DeleteParams::default()
        };
        async move { api.delete(name, &params).await }
    }))
    .await;
    for ((name, _), result) in victims.iter().zip(results) {
        match result {
            Ok(_) => {
                ctx.recorder
                    .publish(
                        reference,
                        EventType::Normal,
                        "SuccessfulDelete",
                        &format!("Deleted pod: {name}"),
                    )
                    .await;
            }
            Err(err) => {
                ctx.expectations
                    .deletion_observed(key, &ObjectKey::new(Some(&namespace), name));
                if !err.is_not_found() {
                    ctx.recorder
                        .publish(
                            reference,
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
    error.map_or(Ok(()), |message| Err(Error::Manage(message)))
}

/// The pod for `node`: `{ds}-` generated names, the template (with its revision labels and
/// daemon tolerations), the controller reference, and the node affinity that targets it.
fn new_pod(
    ds: &DaemonSet,
    template: &k8s_openapi::api::core::v1::PodTemplateSpec,
    controller: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>,
    node: &str,
) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    let mut spec = template.spec.clone().unwrap_or_default();
    spec.affinity = Some(util::target_node_affinity(spec.affinity.take(), node));
    Pod {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            generate_name: Some(format!("{}-", ds.metadata.name.clone().unwrap_or_default())),
            namespace: ds.metadata.namespace.clone(),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: controller.map(|c| vec![c]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}
