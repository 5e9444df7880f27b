//! The HorizontalPodAutoscaler controller (kube-controller-manager's
//! `horizontal-pod-autoscaler-controller`, upstream `pkg/controller/podautoscaler/horizontal.go`,
//! k8s.io/kubernetes v1.32), for `autoscaling/v2` HPAs: every sync period (15 s, on the
//! controller's clock: a fake clock's moves resync every HPA) it reads the target's `scale`
//! subresource (any kind that has one: Deployments, ReplicaSets, StatefulSets, custom
//! resources), the pods its selector picks and their metrics from `metrics.k8s.io` (through
//! the API, as upstream's REST metrics client), computes the replicas each metric asks for
//! (`replicas`), takes the largest, normalizes it (`normalize`: stabilization windows,
//! `behavior` policies, min and max), writes the new scale, and keeps the status
//! (`currentReplicas`, `desiredReplicas`, `currentMetrics`, `lastScaleTime`, the
//! `AbleToScale`, `ScalingActive` and `ScalingLimited` conditions) with upstream's reasons,
//! messages and events (`SuccessfulRescale`, `FailedGetScale`, `FailedGetResourceMetric`,
//! `FailedComputeMetricsReplicas`, ...).
//!
//! Metric types: `Resource` and `ContainerResource` (Utilization and AverageValue) are
//! computed. kubemock serves no custom or external metrics API, so `Pods`, `Object` and
//! `External` metrics fail as upstream's fail when those APIs are not registered: the metric
//! is invalid, `ScalingActive` turns False with `FailedGetPodsMetric`,
//! `FailedGetObjectMetric` or `FailedGetExternalMetric`, and the HPA only scales up on its
//! other metrics.
//!
//! The controller watches `autoscaling/v2`; the API server converts HPAs written as v1
//! (`pkg/apis/autoscaling/v1/conversion.go`).
//!
//! Not done: upstream's rate limiter of the resync queue.

mod normalize;
mod replicas;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration as StdDuration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::{
    ContainerResourceMetricStatus, HorizontalPodAutoscaler, HorizontalPodAutoscalerCondition,
    HorizontalPodAutoscalerStatus, MetricSpec, MetricStatus, MetricTarget, MetricValueStatus,
    ResourceMetricStatus,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kubemock_apimachinery::quantity::{Format, Quantity, Scale as QScale};
use kubemock_client::events::{EventType, Recorder, object_reference};
use kubemock_client::{
    Action, Api, ApiResource, Client, Controller, DynamicObject, InformerFactory, ListParams,
    ObjectKey, PostParams, Selector, SharedInformer, Store,
};
use parking_lot::Mutex;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use normalize::{Behavior, History, Normalized};
pub use replicas::{Calculator, Observed, PodMetric, PodMetrics};

use crate::clock::Clock;
use crate::error::Result;

/// Concurrent syncs (kube-controller-manager's `--concurrent-horizontal-pod-autoscaler-syncs`
/// default).
const WORKERS: usize = 5;
/// How often each HPA is synced (`--horizontal-pod-autoscaler-sync-period`).
pub const SYNC_PERIOD: StdDuration = StdDuration::from_secs(15);
/// The scale-down stabilization window of HPAs without `behavior.scaleDown
/// .stabilizationWindowSeconds` (`--horizontal-pod-autoscaler-downscale-stabilization`).
pub const DOWNSCALE_STABILIZATION_WINDOW: StdDuration = StdDuration::from_secs(300);
/// The component name of the controller's events.
const COMPONENT: &str = "horizontal-pod-autoscaler";
/// The resource metrics API.
const METRICS_GROUP: &str = "metrics.k8s.io";
/// Its version.
const METRICS_VERSION: &str = "v1beta1";
/// The custom metrics API's group (named in the error of its absence).
const CUSTOM_METRICS_GROUP: &str = "custom.metrics.k8s.io";
/// The external metrics API's group.
const EXTERNAL_METRICS_GROUP: &str = "external.metrics.k8s.io";

/// What a sync needs.
struct Context {
    client: Client,
    hpas: Store<DynamicObject>,
    pods: Store<Pod>,
    recorder: Recorder,
    clock: Clock,
    calculator: Calculator,
    /// Each HPA's recommendations and scale events (`recommendations`, `scaleUpEvents`,
    /// `scaleDownEvents`). Locked only between awaits.
    histories: Mutex<HashMap<ObjectKey, History>>,
    /// Each HPA's selector as its last sync read it (`hpaSelectors`), to find pods two HPAs
    /// control.
    selectors: Mutex<HashMap<ObjectKey, Selector>>,
}

/// The HorizontalPodAutoscaler controller.
pub struct HorizontalController {
    client: Client,
    hpas: SharedInformer<DynamicObject>,
    pods: SharedInformer<Pod>,
    clock: Clock,
}

impl HorizontalController {
    /// A controller on `factory`'s shared informers, reading the time from `clock`.
    pub fn new(client: Client, factory: &InformerFactory, clock: Clock) -> Self {
        HorizontalController {
            client,
            hpas: factory.dynamic(&ApiResource::of::<HorizontalPodAutoscaler>()),
            pods: factory.informer(),
            clock,
        }
    }

    /// Runs until `token` is cancelled.
    pub async fn run(self, token: CancellationToken) {
        let ctx = Arc::new(Context {
            recorder: Recorder::new(self.client.clone(), COMPONENT).with_clock(self.clock.clone()),
            client: self.client,
            hpas: self.hpas.store(),
            pods: self.pods.store(),
            clock: self.clock.clone(),
            calculator: Calculator::default(),
            histories: Mutex::new(HashMap::new()),
            selectors: Mutex::new(HashMap::new()),
        });
        // Upstream queues HPAs only on their own changes and every sync period.
        let controller = Controller::new("horizontal-pod-autoscaler", self.hpas)
            .workers(WORKERS)
            .watches(&self.pods, |_: &Pod| Vec::new());
        let clock_moves = crate::clock::requeue_all_on_moves(
            self.clock.clone(),
            token.clone(),
            controller.queue(),
            ctx.hpas.clone(),
        );
        let run = controller.run(
            move |key| sync(key, ctx.clone()),
            crate::error::error_policy,
            token.clone(),
        );
        tokio::join!(run, clock_moves);
    }
}

/// `reconcileKey`: a deleted HPA's memory is dropped; any other is reconciled and synced
/// again after the period.
async fn sync(key: ObjectKey, ctx: Arc<Context>) -> Result<Action> {
    let Some(hpa) = ctx.hpas.get(&key).and_then(|object| as_v2(&object)) else {
        ctx.histories.lock().remove(&key);
        ctx.selectors.lock().remove(&key);
        return Ok(Action::await_change());
    };
    reconcile(&ctx, &key, &hpa).await?;
    Ok(Action::requeue_after(SYNC_PERIOD))
}

/// The HPA as `autoscaling/v2` (the server converts v1 objects, as upstream's does); `None`
/// when it does not decode.
fn as_v2(object: &DynamicObject) -> Option<HorizontalPodAutoscaler> {
    let value = serde_json::to_value(object).ok()?;
    match serde_json::from_value(value) {
        Ok(hpa) => Some(hpa),
        Err(err) => {
            tracing::warn!(error = %err, "an HPA that does not decode as autoscaling/v2");
            None
        }
    }
}

/// An `autoscaling/v2` condition list entry set as `setCondition` does: the transition time
/// moves only when the status does.
fn set_condition(
    status: &mut HorizontalPodAutoscalerStatus,
    kind: &str,
    value: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let index = match conditions.iter().position(|c| c.type_ == kind) {
        Some(index) => index,
        None => {
            conditions.push(HorizontalPodAutoscalerCondition {
                type_: kind.to_owned(),
                ..HorizontalPodAutoscalerCondition::default()
            });
            conditions.len() - 1
        }
    };
    let condition = &mut conditions[index];
    if condition.status != value {
        condition.last_transition_time = Some(Time(now));
    }
    value.clone_into(&mut condition.status);
    condition.reason = Some(reason.to_owned());
    condition.message = Some(message.to_owned());
}

/// One sync of one HPA.
struct Run<'a> {
    ctx: &'a Context,
    key: &'a ObjectKey,
    hpa: &'a HorizontalPodAutoscaler,
    status: HorizontalPodAutoscalerStatus,
    now: Timestamp,
    reference: k8s_openapi::api::core::v1::ObjectReference,
}

impl Run<'_> {
    fn condition(&mut self, kind: &str, value: &str, reason: &str, message: &str) {
        set_condition(&mut self.status, kind, value, reason, message, self.now);
    }

    async fn event(&self, kind: EventType, reason: &str, message: &str) {
        self.ctx
            .recorder
            .publish(&self.reference, kind, reason, message)
            .await;
    }

    fn namespace(&self) -> &str {
        self.hpa.metadata.namespace.as_deref().unwrap_or_default()
    }

    /// `updateStatusIfNeeded`.
    async fn write_status(&self) -> Result<()> {
        if self.hpa.status.as_ref() == Some(&self.status) {
            return Ok(());
        }
        let mut updated = self.hpa.clone();
        updated.status = Some(self.status.clone());
        let api: Api<HorizontalPodAutoscaler> =
            Api::namespaced(self.ctx.client.clone(), self.namespace());
        let name = self.hpa.metadata.name.as_deref().unwrap_or_default();
        let mut written = api
            .replace_status(name, &PostParams::default(), &updated)
            .await;
        // The informer's copy can trail this controller's own last write. Upstream then fails
        // the sync, and a scale it already made loses its `lastScaleTime` (the next sync sees
        // no change to make). The status is this controller's alone, so it is written once
        // more over the object as it is now, keeping the later `lastScaleTime` of the two.
        if written.as_ref().is_err_and(|err| err.is_conflict()) {
            written = match api.get(name).await {
                Ok(mut fresh) if fresh.metadata.uid == self.hpa.metadata.uid => {
                    fresh.status = Some(over_fresh(&self.status, fresh.status.as_ref()));
                    api.replace_status(name, &PostParams::default(), &fresh)
                        .await
                }
                Ok(_) => return Ok(()),
                Err(err) => Err(err),
            };
        }
        if let Err(err) = written {
            self.event(EventType::Warning, "FailedUpdateStatus", &err.to_string())
                .await;
            return Err(err.into());
        }
        Ok(())
    }

    /// `FailedGetScale`: event, condition, status written.
    async fn failed_get_scale(&mut self, message: &str) -> Result<()> {
        self.event(EventType::Warning, "FailedGetScale", message)
            .await;
        let text =
            format!("the HPA controller was unable to get the target's current scale: {message}");
        self.condition("AbleToScale", "False", "FailedGetScale", &text);
        self.write_status().await
    }
}

/// The status a sync computed from a stale copy of its HPA, to be written over the `fresh`
/// one. Everything but `lastScaleTime` is computed anew by every sync. `lastScaleTime` is
/// copied from the copy the sync started from when it did not scale, so a sync that started
/// before the controller's own last scale was seen would move it back: the later of the two
/// is kept.
fn over_fresh(
    computed: &HorizontalPodAutoscalerStatus,
    fresh: Option<&HorizontalPodAutoscalerStatus>,
) -> HorizontalPodAutoscalerStatus {
    let mut status = computed.clone();
    // `None` orders before any time.
    status.last_scale_time = status
        .last_scale_time
        .take()
        .max(fresh.and_then(|s| s.last_scale_time.clone()));
    status
}

/// The resource of the scale target: `kind` in `api_version`, read from discovery (upstream's
/// REST mapper).
async fn target_resource(
    client: &Client,
    api_version: &str,
    kind: &str,
) -> std::result::Result<ApiResource, String> {
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    };
    let path = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let request = kubemock_client::request::RequestBuilder::new(path)
        .list(&ListParams::default())
        .map_err(|err| err.to_string())?;
    let list: Value = client.request(&request).await.map_err(|err| match err {
        err if err.is_not_found() => format!("no matches for kind \"{kind}\" in group \"{group}\""),
        err => err.to_string(),
    })?;
    let found = list["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| {
            r["kind"].as_str() == Some(kind) && r["name"].as_str().is_some_and(|n| !n.contains('/'))
        });
    match found {
        Some(entry) => Ok(ApiResource::new(
            group,
            version,
            kind,
            entry["name"].as_str().unwrap_or_default(),
            entry["namespaced"].as_bool().unwrap_or(true),
        )),
        None => Err(format!(
            "no matches for kind \"{kind}\" in group \"{group}\""
        )),
    }
}

/// `reconcileAutoscaler`.
async fn reconcile(ctx: &Context, key: &ObjectKey, hpa: &HorizontalPodAutoscaler) -> Result<()> {
    let now = ctx.clock.now();
    let mut run = Run {
        ctx,
        key,
        hpa,
        status: hpa.status.clone().unwrap_or_default(),
        now,
        reference: object_reference(hpa, &ApiResource::of::<HorizontalPodAutoscaler>()),
    };
    let Some(spec) = hpa.spec.as_ref() else {
        return Ok(());
    };
    let target = &spec.scale_target_ref;
    let namespace = run.namespace().to_owned();
    let resource = match target_resource(
        &ctx.client,
        target.api_version.as_deref().unwrap_or_default(),
        &target.kind,
    )
    .await
    {
        Ok(resource) => resource,
        Err(message) => return run.failed_get_scale(&message).await,
    };
    let targets: Api<DynamicObject> =
        Api::namespaced_with(ctx.client.clone(), &namespace, &resource);
    let mut scale = match targets.get_scale(&target.name).await {
        Ok(scale) => scale,
        Err(err) => return run.failed_get_scale(&err.to_string()).await,
    };
    run.condition(
        "AbleToScale",
        "True",
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale",
    );
    let current = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
    ctx.histories
        .lock()
        .entry(key.clone())
        .or_default()
        .record_initial(current, now);
    let min = spec.min_replicas.unwrap_or(1);
    let max = spec.max_replicas;
    let mut metric_statuses: Option<Vec<MetricStatus>> = None;
    let mut reason = String::new();
    let desired;
    let mut rescale = true;
    if current == 0 && min != 0 {
        desired = 0;
        rescale = false;
        run.condition(
            "ScalingActive",
            "False",
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
        );
    } else if current > max {
        reason = "Current number of replicas above Spec.MaxReplicas".to_owned();
        desired = max;
    } else if current < min {
        reason = "Current number of replicas below Spec.MinReplicas".to_owned();
        desired = min;
    } else {
        let computed = compute_replicas(&mut run, &scale, spec.metrics.as_deref()).await;
        let (proposal, metric, statuses) = match computed {
            Ok(found) => found,
            Err((statuses, error)) => {
                run.status.current_replicas = Some(current);
                run.status.current_metrics = statuses;
                run.write_status().await?;
                run.event(EventType::Warning, "FailedComputeMetricsReplicas", &error)
                    .await;
                tracing::debug!(%key, %error, "failed to compute desired number of replicas");
                return Ok(());
            }
        };
        metric_statuses = statuses;
        let mut wanted = 0;
        let mut rescale_metric = String::new();
        if proposal > wanted {
            wanted = proposal;
            rescale_metric = metric;
        }
        if wanted > current {
            reason = format!("{rescale_metric} above target");
        }
        if wanted < current {
            reason = "All metrics below target".to_owned();
        }
        let down_window =
            SignedDuration::try_from(DOWNSCALE_STABILIZATION_WINDOW).unwrap_or_default();
        let normalized = {
            let mut histories = ctx.histories.lock();
            let history = histories.entry(key.clone()).or_default();
            match &spec.behavior {
                None => history.normalize_legacy(current, wanted, min, max, down_window, now),
                Some(behavior) => {
                    let behavior = Behavior::from_spec(behavior, down_window);
                    history.normalize(&behavior, current, wanted, min, max, now)
                }
            }
        };
        apply_normalized(&mut run, &normalized);
        desired = normalized.replicas;
        rescale = desired != current;
    }
    let desired = if rescale {
        if let Some(spec) = scale.spec.as_mut() {
            spec.replicas = Some(desired);
        }
        if let Err(err) = write_scale(&targets, &target.name, &scale).await {
            let message = format!("New size: {desired}; reason: {reason}; error: {err}");
            run.event(EventType::Warning, "FailedRescale", &message)
                .await;
            run.condition(
                "AbleToScale",
                "False",
                "FailedUpdateScale",
                &format!("the HPA controller was unable to update the target scale: {err}"),
            );
            run.status.current_replicas = Some(current);
            run.status.current_metrics = metric_statuses;
            run.write_status().await?;
            return Ok(());
        }
        run.condition(
            "AbleToScale",
            "True",
            "SucceededRescale",
            &format!("the HPA controller was able to update the target scale to {desired}"),
        );
        run.event(
            EventType::Normal,
            "SuccessfulRescale",
            &format!("New size: {desired}; reason: {reason}"),
        )
        .await;
        if let Some(behavior) = &spec.behavior {
            let down_window =
                SignedDuration::try_from(DOWNSCALE_STABILIZATION_WINDOW).unwrap_or_default();
            let behavior = Behavior::from_spec(behavior, down_window);
            ctx.histories
                .lock()
                .entry(key.clone())
                .or_default()
                .store_scale_event(&behavior, current, desired, now);
        }
        tracing::info!(%key, current, desired, %reason, "successfully rescaled");
        run.status.last_scale_time = Some(Time(now));
        desired
    } else {
        current
    };
    run.status.current_replicas = Some(current);
    run.status.desired_replicas = desired;
    run.status.current_metrics = metric_statuses;
    run.write_status().await
}

async fn write_scale(
    targets: &Api<DynamicObject>,
    name: &str,
    scale: &Scale,
) -> kubemock_client::Result<Scale> {
    targets
        .replace_scale(name, &PostParams::default(), scale)
        .await
}

/// The conditions a normalization sets (`normalizeDesiredReplicas[WithBehaviors]`).
fn apply_normalized(run: &mut Run<'_>, normalized: &Normalized) {
    match normalized.stabilized {
        Some((reason, message)) => run.condition("AbleToScale", "True", reason, message),
        None => run.condition(
            "AbleToScale",
            "True",
            "ReadyForNewScale",
            "recommended size matches current size",
        ),
    }
    let limited = if normalized.limited { "True" } else { "False" };
    run.condition(
        "ScalingLimited",
        limited,
        normalized.reason,
        normalized.message,
    );
}

/// A metric that could not be computed: the `ScalingActive` condition it proposes and the
/// error.
struct Invalid {
    reason: String,
    message: String,
    error: String,
}

/// `computeReplicasForMetrics`: the largest proposal, its metric's description and the
/// statuses; or the statuses and the error when nothing can be done.
async fn compute_replicas(
    run: &mut Run<'_>,
    scale: &Scale,
    metrics: Option<&[MetricSpec]>,
) -> std::result::Result<
    (i32, String, Option<Vec<MetricStatus>>),
    (Option<Vec<MetricStatus>>, String),
> {
    let selector_text = scale
        .status
        .as_ref()
        .and_then(|s| s.selector.clone())
        .unwrap_or_default();
    let selector = match validate_selector(run, &selector_text).await {
        Ok(selector) => selector,
        Err(error) => return Err((None, error)),
    };
    let spec_replicas = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
    // The API server defaults an empty list to 80% CPU (`SetDefaults_HorizontalPodAutoscaler`);
    // kubemock's does not default HPAs, so the controller does.
    let default_metrics = [default_metric()];
    let specs = match metrics {
        Some(metrics) if !metrics.is_empty() => metrics,
        _ => &default_metrics[..],
    };
    let namespace = run.namespace().to_owned();
    let pods: Vec<Arc<Pod>> = run.ctx.pods.list_selector(Some(&namespace), &selector);
    let mut statuses = vec![MetricStatus::default(); specs.len()];
    let mut replicas = 0;
    let mut metric = String::new();
    let mut invalid: Vec<Invalid> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        match compute_metric(run, spec, spec_replicas, &selector_text, &pods).await {
            Ok((proposal, name, status)) => {
                statuses[i] = status;
                if replicas == 0 || proposal > replicas {
                    replicas = proposal;
                    metric = name;
                }
            }
            Err(failure) => {
                run.event(EventType::Warning, &failure.reason, &failure.message)
                    .await;
                invalid.push(failure);
            }
        }
    }
    let statuses = Some(statuses);
    let error = invalid.first().map(|first| {
        format!(
            "invalid metrics ({} invalid out of {}), first error is: {}",
            invalid.len(),
            specs.len(),
            first.error
        )
    });
    if let Some(first) = invalid.first()
        && (invalid.len() >= specs.len() || replicas < spec_replicas)
    {
        let message = format!(
            "the HPA was unable to compute the replica count: {}",
            first.message
        );
        let reason = first.reason.clone();
        run.condition("ScalingActive", "False", &reason, &message);
        return Err((statuses, error.unwrap_or_default()));
    }
    run.condition(
        "ScalingActive",
        "True",
        "ValidMetricFound",
        &format!("the HPA was able to successfully calculate a replica count from {metric}"),
    );
    Ok((replicas, metric, statuses))
}

/// `cpu` at 80% average utilization.
fn default_metric() -> MetricSpec {
    serde_json::from_value(serde_json::json!({
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
    }))
    .unwrap_or_default()
}

/// `validateAndParseSelector`: the scale's selector parsed, and no pod of it controlled by
/// another HPA.
async fn validate_selector(run: &mut Run<'_>, text: &str) -> std::result::Result<Selector, String> {
    if text.is_empty() {
        let error = "selector is required";
        run.event(EventType::Warning, "SelectorRequired", error)
            .await;
        run.condition(
            "ScalingActive",
            "False",
            "InvalidSelector",
            "the HPA target's scale is missing a selector",
        );
        return Err(error.to_owned());
    }
    let selector = match Selector::parse(text) {
        Ok(selector) => selector,
        Err(err) => {
            let error = format!(
                "couldn't convert selector into a corresponding internal selector object: {err}"
            );
            run.event(EventType::Warning, "InvalidSelector", &error)
                .await;
            run.condition("ScalingActive", "False", "InvalidSelector", &error);
            return Err(error);
        }
    };
    let namespace = run.namespace().to_owned();
    let others: Vec<(ObjectKey, Selector)> = {
        let mut selectors = run.ctx.selectors.lock();
        selectors.insert(run.key.clone(), selector.clone());
        selectors
            .iter()
            .filter(|(key, _)| *key != run.key && key.namespace.as_deref() == Some(&namespace))
            .filter(|(key, _)| run.ctx.hpas.get(key).is_some())
            .map(|(key, selector)| (key.clone(), selector.clone()))
            .collect()
    };
    let pods = run.ctx.pods.list_selector(Some(&namespace), &selector);
    let mut controlling: Vec<String> = others
        .iter()
        .filter(|(_, other)| {
            pods.iter()
                .any(|pod| other.matches(&pod.metadata.labels.clone().unwrap_or_default()))
        })
        .map(|(key, _)| format!("{{{} {}}}", key.name, namespace))
        .collect();
    if !controlling.is_empty() {
        controlling.push(format!("{{{} {}}}", run.key.name, namespace));
        controlling.sort();
        let error = format!(
            "pods by selector {text} are controlled by multiple HPAs: [{}]",
            controlling.join(" ")
        );
        run.event(EventType::Warning, "AmbiguousSelector", &error)
            .await;
        run.condition("ScalingActive", "False", "AmbiguousSelector", &error);
        return Err(error);
    }
    Ok(selector)
}

/// `computeReplicasForMetric`: one metric's proposal, description and status.
async fn compute_metric(
    run: &Run<'_>,
    spec: &MetricSpec,
    spec_replicas: i32,
    selector: &str,
    pods: &[Arc<Pod>],
) -> std::result::Result<(i32, String, MetricStatus), Invalid> {
    let failed = |reason: &str, message: String, error: String| Invalid {
        reason: reason.to_owned(),
        message,
        error,
    };
    match spec.type_.as_str() {
        "Resource" | "ContainerResource" => {
            let (name, target, container, reason) = match (&spec.resource, &spec.container_resource)
            {
                (Some(r), _) if spec.type_ == "Resource" => {
                    (&r.name, &r.target, None, "FailedGetResourceMetric")
                }
                (_, Some(c)) if spec.type_ == "ContainerResource" => (
                    &c.name,
                    &c.target,
                    Some(c.container.as_str()),
                    "FailedGetContainerResourceMetric",
                ),
                _ => {
                    let error = format!("invalid {} metric source: no source set", spec.type_);
                    return Err(failed("InvalidMetricSourceType", error.clone(), error));
                }
            };
            match resource_metric(run, spec_replicas, name, target, container, selector, pods).await
            {
                Ok((proposal, metric, value)) => {
                    let status = if let Some(container) = container {
                        MetricStatus {
                            type_: spec.type_.clone(),
                            container_resource: Some(ContainerResourceMetricStatus {
                                name: name.clone(),
                                container: container.to_owned(),
                                current: value,
                            }),
                            ..MetricStatus::default()
                        }
                    } else {
                        MetricStatus {
                            type_: spec.type_.clone(),
                            resource: Some(ResourceMetricStatus {
                                name: name.clone(),
                                current: value,
                            }),
                            ..MetricStatus::default()
                        }
                    };
                    Ok((proposal, metric, status))
                }
                Err(err) => {
                    let wrapped = match container {
                        Some(container) => {
                            format!("failed to get {container} container metric value: {err}")
                        }
                        None => format!("failed to get {name} resource metric value: {err}"),
                    };
                    Err(failed(reason, err, wrapped))
                }
            }
        }
        "Pods" => {
            let name = spec
                .pods
                .as_ref()
                .map(|p| p.metric.name.clone())
                .unwrap_or_default();
            let err = format!(
                "unable to get metric {name}: unable to fetch metrics from custom metrics API: no custom metrics API ({CUSTOM_METRICS_GROUP}) registered"
            );
            Err(failed(
                "FailedGetPodsMetric",
                err.clone(),
                format!("failed to get pods metric value: {err}"),
            ))
        }
        "Object" => {
            let (name, kind, object) = spec
                .object
                .as_ref()
                .map(|o| {
                    (
                        o.metric.name.clone(),
                        o.described_object.kind.clone(),
                        o.described_object.name.clone(),
                    )
                })
                .unwrap_or_default();
            // (Upstream's format string takes its arguments in this order.)
            let err = format!(
                "unable to get metric {name}: {kind} on {} {object}/unable to fetch metrics from custom metrics API: no custom metrics API ({CUSTOM_METRICS_GROUP}) registered",
                run.namespace()
            );
            Err(failed(
                "FailedGetObjectMetric",
                err.clone(),
                format!("failed to get object metric value: {err}"),
            ))
        }
        "External" => {
            let name = spec
                .external
                .as_ref()
                .map(|e| e.metric.name.clone())
                .unwrap_or_default();
            let err = format!(
                "unable to get external metric {}/{name}/: unable to fetch metrics from external metrics API: the server could not find the requested resource (get {name}.{EXTERNAL_METRICS_GROUP})",
                run.namespace()
            );
            Err(failed(
                "FailedGetExternalMetric",
                err.clone(),
                format!("failed to get {name} external metric value: {err}"),
            ))
        }
        other => {
            let error = format!("unknown metric source type \"{other}\"");
            Err(failed("InvalidMetricSourceType", error.clone(), error))
        }
    }
}

/// `computeStatusForResourceMetricGeneric` with upstream's REST metrics client
/// (`GetResourceMetric`): the pods' metrics of `resource` read from `metrics.k8s.io`.
async fn resource_metric(
    run: &Run<'_>,
    current: i32,
    resource: &str,
    target: &MetricTarget,
    container: Option<&str>,
    selector: &str,
    pods: &[Arc<Pod>],
) -> std::result::Result<(i32, String, MetricValueStatus), String> {
    let fetched = fetch_metrics(run, resource, container, selector).await;
    let pods: Vec<&Pod> = pods.iter().map(AsRef::as_ref).collect();
    let calculator = &run.ctx.calculator;
    if let Some(average) = &target.average_value {
        let target_milli = Quantity::parse(&average.0)
            .map_err(|err| format!("invalid averageValue: {err}"))?
            .milli_value();
        let metrics = fetched
            .map_err(|err| format!("failed to get {resource} usage: unable to get metrics for resource {resource}: {err}"))?;
        let observed = Observed {
            pods: &pods,
            metrics,
            now: run.now,
        };
        let (replicas, usage) = calculator
            .plain_replicas(current, target_milli, resource, observed)
            .map_err(|err| format!("failed to get {resource} usage: {err}"))?;
        return Ok((
            replicas,
            format!("{resource} resource"),
            MetricValueStatus {
                average_value: Some(milli_quantity(usage)),
                ..MetricValueStatus::default()
            },
        ));
    }
    let Some(utilization) = target.average_utilization else {
        return Err("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set".to_owned());
    };
    let metrics = fetched.map_err(|err| {
        format!("failed to get {resource} utilization: unable to get metrics for resource {resource}: {err}")
    })?;
    let (replicas, percent, raw) = calculator
        .resource_replicas(
            current,
            utilization,
            resource,
            container,
            Observed {
                pods: &pods,
                metrics,
                now: run.now,
            },
        )
        .map_err(|err| format!("failed to get {resource} utilization: {err}"))?;
    let name = match container {
        Some(_) => format!("{resource} container resource utilization (percentage of request)"),
        None => format!("{resource} resource utilization (percentage of request)"),
    };
    Ok((
        replicas,
        name,
        MetricValueStatus {
            average_utilization: Some(percent),
            average_value: Some(milli_quantity(raw)),
            ..MetricValueStatus::default()
        },
    ))
}

/// `resource.NewMilliQuantity(value, DecimalSI)` in canonical form.
fn milli_quantity(value: i64) -> K8sQuantity {
    K8sQuantity(Quantity::new_milli(value, Format::DecimalSI).to_string())
}

/// The pods' metrics (`GetResourceMetric`, `getPodMetrics`, `getContainerMetrics`): each
/// pod's usage of `resource` summed over its containers (or `container`'s), in milli-units.
async fn fetch_metrics(
    run: &Run<'_>,
    resource: &str,
    container: Option<&str>,
    selector: &str,
) -> std::result::Result<PodMetrics, String> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        run.ctx.client.clone(),
        run.namespace(),
        &ApiResource::new(METRICS_GROUP, METRICS_VERSION, "PodMetrics", "pods", true),
    );
    let list = api
        .list(&ListParams::default().labels(selector))
        .await
        .map_err(|err| format!("unable to fetch metrics from resource metrics API: {err}"))?;
    if list.items.is_empty() {
        return Err("no metrics returned from resource metrics API".to_owned());
    }
    let mut metrics = BTreeMap::new();
    for item in &list.items {
        let value = serde_json::to_value(item).unwrap_or_default();
        let name = value["metadata"]["name"].as_str().unwrap_or_default();
        let timestamp = value["timestamp"]
            .as_str()
            .and_then(|t| t.parse::<Timestamp>().ok())
            .unwrap_or(run.now);
        let window = value["window"]
            .as_str()
            .and_then(|w| kubemock_apimachinery::duration::parse_duration(w).ok())
            .map_or(SignedDuration::ZERO, SignedDuration::from_nanos);
        let containers = value["containers"].as_array().cloned().unwrap_or_default();
        let usage_of = |c: &Value| {
            c["usage"][resource]
                .as_str()
                .and_then(|q| Quantity::parse(q).ok())
                .map(|q| q.scaled_value(QScale::MILLI))
        };
        let sum = match container {
            Some(wanted) => {
                let Some(found) = containers
                    .iter()
                    .find(|c| c["name"].as_str() == Some(wanted))
                else {
                    return Err(format!(
                        "failed to get container metrics: container {wanted} not present in metrics for pod {}/{name}",
                        run.namespace()
                    ));
                };
                usage_of(found)
            }
            None if containers.is_empty() => None,
            None => containers
                .iter()
                .map(usage_of)
                .try_fold(0i64, |sum, value| value.map(|v| sum.saturating_add(v))),
        };
        if let Some(value) = sum {
            metrics.insert(
                name.to_owned(),
                PodMetric {
                    timestamp,
                    window,
                    value,
                },
            );
        }
    }
    Ok(metrics)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(last_scale: Option<&str>, desired: i32) -> HorizontalPodAutoscalerStatus {
        HorizontalPodAutoscalerStatus {
            last_scale_time: last_scale.map(|t| Time(t.parse().expect("a timestamp"))),
            desired_replicas: desired,
            ..HorizontalPodAutoscalerStatus::default()
        }
    }

    /// A sync that started from a copy older than the controller's last scale (the flaky
    /// `an_hpa_scales_a_deployment_up_on_usage_and_down_after_the_stabilization_window`:
    /// lastScaleTime 00:00:30 instead of 00:05:46) keeps the fresh object's later time.
    #[test]
    fn a_status_written_over_a_fresh_copy_never_moves_the_last_scale_back() {
        let stale = status(Some("2030-01-01T00:00:30Z"), 1);
        let fresh = status(Some("2030-01-01T00:05:46Z"), 1);
        assert_eq!(over_fresh(&stale, Some(&fresh)), fresh);
        // A sync that scaled after the fresh copy's scale keeps its own time.
        let scaled = status(Some("2030-01-01T00:06:00Z"), 2);
        assert_eq!(over_fresh(&scaled, Some(&fresh)), scaled);
        // No time at all on one side.
        assert_eq!(
            over_fresh(&status(None, 3), Some(&fresh)),
            status(Some("2030-01-01T00:05:46Z"), 3)
        );
        assert_eq!(over_fresh(&scaled, None), scaled);
        assert_eq!(over_fresh(&scaled, Some(&status(None, 1))), scaled);
    }
}
