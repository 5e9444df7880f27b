//! kwok's Stages run by the simulated kubelet (issue 22 item 1): when at least one Stage
//! (`kwok.x-k8s.io/v1alpha1`, served by the API server and compiled by
//! [`kubemock_apimachinery::stage`]) names a kind, the Stages drive the objects of that kind on
//! the simulated nodes, and the kubelet's own lifecycle for that kind steps aside ([`Stages::
//! drives`], checked first by `sync_pod` and `sync_node`): as in kwok, whose default
//! behaviour is itself a set of Stages. Without any Stage for a kind, the kubelet behaves as
//! it always did.
//!
//! One step of an object, as kwok's stage controller runs it (kwok
//! `pkg/kwok/controllers/stage_controller.go`, `pkg/utils/lifecycle`): the Stages whose
//! selector matches it are found; one is chosen by weight; its delay (with jitter, at random
//! between the two) is waited on the kubelet's [`Clock`] (a fake clock's moves wake it, no
//! real time passes); then its `next` is applied to the object as it is then, in kwok's
//! order: the Event, the finalizers (a JSON patch), the rendered status (a strategic merge
//! patch of the `status` subresource), the delete. The written object's watch event makes
//! the next step; `immediateNextStage` re-matches at once.
//!
//! A chosen Stage is kept while the object's resourceVersion stays (a clock move or a resync
//! does not roll its delay again); a new version is matched anew, as kwok does. A Stage without delay that matches its own result again is applied
//! at most once per [`MIN_REPEAT`] to one object, with a warning: such a Stage would
//! otherwise write without end (the admission refuses the obvious case, an empty selector).
//!
//! Every Stage the kubelet takes up is announced by an Event on it (reason
//! [`LOADED_REASON`]), which is how a client knows the Stages it created drive what it
//! creates next.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod};
use kubemock_apimachinery::stage::gotpl::Host;
use kubemock_apimachinery::stage::{self, Stage};
use kubemock_client::events::{EventType, object_reference};
use kubemock_client::request::Preconditions;
use kubemock_client::{
    Action, Api, ApiResource, DeleteParams, DynamicObject, ObjectKey, Patch, PatchParams, Resource,
    Store,
};
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::{Context, node};
use crate::error::Result;

/// The least time between two applications of one delay-less Stage to one object: what
/// keeps a Stage that matches its own result from writing without end.
pub const MIN_REPEAT: Duration = Duration::from_secs(1);

/// The reason of the Event announcing that the kubelet runs a Stage.
pub const LOADED_REASON: &str = "StageLoaded";

/// The port the simulated kubelets report (`NodePort`, `daemonEndpoints`).
const KUBELET_PORT: i64 = 10250;

/// The Stage resource.
pub fn resource() -> ApiResource {
    ApiResource::new(
        stage::GROUP,
        stage::VERSION,
        stage::KIND,
        stage::PLURAL,
        false,
    )
}

/// A Stage chosen for an object (of that uid and resourceVersion), due at a time.
#[derive(Debug, Clone)]
struct Pending {
    uid: String,
    resource_version: String,
    stage: String,
    due: Timestamp,
}

/// An object's key in the maps: its kind and `namespace/name`.
type Key = (String, String);

/// A Stage's compilation by (name, resourceVersion); `None` when it does not compile.
type Compiled = HashMap<(String, String), Option<Arc<Stage>>>;

/// The last application to an object: its uid, the Stage, the time.
type Applied = (String, String, Timestamp);

/// The Stages of each kind asked for, as of one state of the Stage store: read on every
/// object's sync, computed again only when the store changes.
struct ByKind {
    /// The store's objects they were computed from: the same `Arc`s, in the same order, as
    /// long as the store does not change (a changed or relisted Stage is a new `Arc`).
    objects: Vec<Arc<DynamicObject>>,
    kinds: HashMap<String, Arc<[Arc<Stage>]>>,
}

impl ByKind {
    fn of(&self, objects: &[Arc<DynamicObject>]) -> bool {
        self.objects.len() == objects.len()
            && self
                .objects
                .iter()
                .zip(objects)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

/// The Stages the kubelet runs: compiled from the Stage informer's store, with the chosen
/// Stage of each object and the pod IPs they handed out.
pub(super) struct Stages {
    store: Store<DynamicObject>,
    /// Compiled Stages by (name, resourceVersion).
    compiled: Mutex<Compiled>,
    /// [`Stages::for_kind`]'s answers for the current Stages.
    by_kind: Mutex<Option<ByKind>>,
    /// The Stage chosen for each object, and when it is due.
    pending: Mutex<HashMap<Key, Pending>>,
    /// When each Stage was last applied to each object (uid, stage, time), for
    /// [`MIN_REPEAT`].
    applied: Mutex<HashMap<Key, Applied>>,
    /// The Stages (name, resourceVersion) announced by an Event.
    announced: Mutex<std::collections::HashSet<(String, String)>>,
    /// Stages already warned about as repeating without delay.
    warned: Mutex<std::collections::HashSet<String>>,
    /// Pod IPs handed out by `PodIPWith`, by pod uid.
    pod_ips: Mutex<HashMap<String, String>>,
    /// When the kubelet started (`StartTime`).
    started: Timestamp,
}

impl Stages {
    pub(super) fn new(store: Store<DynamicObject>, started: Timestamp) -> Self {
        Stages {
            store,
            compiled: Mutex::new(HashMap::new()),
            by_kind: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            applied: Mutex::new(HashMap::new()),
            announced: Mutex::new(std::collections::HashSet::new()),
            warned: Mutex::new(std::collections::HashSet::new()),
            pod_ips: Mutex::new(HashMap::new()),
            started,
        }
    }

    /// The Stages for `kind`, compiled (a stored Stage that does not compile, which the API
    /// server's validation should have refused, is logged and skipped), by name. Kept until
    /// the Stages change.
    pub(super) fn for_kind(&self, kind: &str) -> Arc<[Arc<Stage>]> {
        let objects = self.store.list();
        if let Some(cached) = self.by_kind.lock().as_ref()
            && cached.of(&objects)
            && let Some(stages) = cached.kinds.get(kind)
        {
            return stages.clone();
        }
        let stages: Arc<[Arc<Stage>]> = self.compile_kind(&objects, kind).into();
        let mut by_kind = self.by_kind.lock();
        match by_kind.as_mut() {
            Some(cached) if cached.of(&objects) => {
                cached.kinds.insert(kind.to_owned(), stages.clone());
            }
            _ => {
                *by_kind = Some(ByKind {
                    objects,
                    kinds: HashMap::from([(kind.to_owned(), stages.clone())]),
                });
            }
        }
        stages
    }

    /// The Stages for `kind` among `objects`, compiled once per (name, resourceVersion).
    fn compile_kind(&self, objects: &[Arc<DynamicObject>], kind: &str) -> Vec<Arc<Stage>> {
        let mut compiled = self.compiled.lock();
        let mut out = Vec::new();
        let mut live = std::collections::HashSet::new();
        for object in objects {
            let name = object.metadata.name.clone().unwrap_or_default();
            let rv = object.metadata.resource_version.clone().unwrap_or_default();
            let key = (name.clone(), rv);
            live.insert(key.clone());
            let entry = compiled.entry(key).or_insert_with(|| {
                let value = serde_json::to_value(&**object).unwrap_or(Value::Null);
                match Stage::compile(&value) {
                    Ok(stage) => Some(Arc::new(stage)),
                    Err(errors) => {
                        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
                        tracing::warn!(stage = %name, ?errors, "a stored Stage does not compile; skipped");
                        None
                    }
                }
            });
            if let Some(stage) = entry
                && stage.kind == kind
            {
                out.push(stage.clone());
            }
        }
        compiled.retain(|k, _| live.contains(k));
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The Stage objects.
    pub(super) fn store(&self) -> &Store<DynamicObject> {
        &self.store
    }

    /// Whether Stages drive `kind` (and the kubelet's own lifecycle for it steps aside).
    pub(super) fn drives(&self, kind: &str) -> bool {
        !self.for_kind(kind).is_empty()
    }

    /// Forgets an object that is gone (its chosen Stage, its pod IP).
    pub(super) fn forget(&self, kind: &str, key: &ObjectKey) {
        let key = map_key(kind, key);
        let pending = self.pending.lock().remove(&key);
        let applied = self.applied.lock().remove(&key);
        if kind == "Pod" {
            let mut ips = self.pod_ips.lock();
            for uid in pending
                .map(|p| p.uid)
                .into_iter()
                .chain(applied.map(|a| a.0))
            {
                ips.remove(&uid);
            }
        }
    }

    /// Whether the Stage `name` at `resource_version` is yet to be announced (and now is).
    pub(super) fn announce(&self, name: &str, resource_version: &str) -> bool {
        self.announced
            .lock()
            .insert((name.to_owned(), resource_version.to_owned()))
    }
}

fn map_key(kind: &str, key: &ObjectKey) -> Key {
    (
        kind.to_owned(),
        format!(
            "{}/{}",
            key.namespace.as_deref().unwrap_or_default(),
            key.name
        ),
    )
}

/// The Stage-driven step of a Pod on a simulated node.
pub(super) async fn sync_pod(ctx: &Context, key: &ObjectKey, pod: &Pod) -> Result<Action> {
    let object = serde_json::to_value(pod).map_err(|e| crate::Error::Stage(e.to_string()))?;
    match step(ctx, "Pod", key, &object)? {
        Step::Nothing => Ok(Action::AwaitChange),
        Step::At(due) => Ok(ctx.wake_at(key, due)),
        Step::Apply(stage) => {
            let namespace = key.namespace.clone().unwrap_or_default();
            let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
            let reference = object_reference(pod, &ApiResource::of::<Pod>());
            apply(ctx, &api, &reference, "Pod", key, &object, &stage).await
        }
    }
}

/// The Stage-driven step of a simulated Node (its status; its Lease stays the kubelet's).
pub(super) async fn sync_node(ctx: &Context, key: &ObjectKey, node: &Node) -> Result<Action> {
    let object = serde_json::to_value(node).map_err(|e| crate::Error::Stage(e.to_string()))?;
    match step(ctx, "Node", key, &object)? {
        Step::Nothing => Ok(Action::AwaitChange),
        Step::At(due) => {
            let now = ctx.config.clock.now();
            Ok(Action::RequeueAfter(kubemock_apimachinery::time::until(
                now, due,
            )))
        }
        Step::Apply(stage) => {
            let api: Api<Node> = Api::all(ctx.client.clone());
            let reference = object_reference(node, &ApiResource::of::<Node>());
            apply(ctx, &api, &reference, "Node", key, &object, &stage).await
        }
    }
}

enum Step {
    Nothing,
    At(Timestamp),
    Apply(Arc<Stage>),
}

/// Matches, chooses and times a Stage for the object.
fn step(ctx: &Context, kind: &str, object_key: &ObjectKey, object: &Value) -> Result<Step> {
    let now = ctx.config.clock.now();
    let Some((stage, due)) = plan(ctx, kind, object_key, object, now) else {
        return Ok(Step::Nothing);
    };
    if due > now {
        return Ok(Step::At(due));
    }
    let key = map_key(kind, object_key);
    let uid = object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    ctx.stages.pending.lock().remove(&key);
    ctx.stages
        .applied
        .lock()
        .insert(key, (uid.to_owned(), stage.name.clone(), now));
    Ok(Step::Apply(stage))
}

/// The Stage chosen for this version of the object and when it is due: the one chosen
/// before for the same version, else one matched, chosen and timed from `now` (and
/// remembered); `None` when none matches.
fn plan(
    ctx: &Context,
    kind: &str,
    object_key: &ObjectKey,
    object: &Value,
    now: Timestamp,
) -> Option<(Arc<Stage>, Timestamp)> {
    let uid = object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let stages = &ctx.stages;
    let matching: Vec<Arc<Stage>> = stages
        .for_kind(kind)
        .iter()
        .filter(|s| s.matches(object))
        .cloned()
        .collect();
    let key = map_key(kind, object_key);
    if matching.is_empty() {
        stages.pending.lock().remove(&key);
        return None;
    }
    let resource_version = object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // A new version of the object is matched anew, its delay rolled again (kwok's
    // `preprocess` replaces the object's job); the same version keeps its choice.
    let kept = stages
        .pending
        .lock()
        .get(&key)
        .cloned()
        .filter(|p| p.uid == uid && p.resource_version == resource_version)
        .and_then(|p| {
            matching
                .iter()
                .find(|s| s.name == p.stage)
                .map(|s| (s.clone(), p.due))
        });
    let (stage, due) = match kept {
        Some(kept) => kept,
        None => {
            let stage = choose(&matching, object)?;
            let now_nanos = now.as_nanosecond();
            let delay_ms = stage
                .delay(object, now_nanos)
                .map(|d| {
                    if d.max_ms > d.min_ms {
                        fastrand::i64(d.min_ms..d.max_ms)
                    } else {
                        d.min_ms
                    }
                })
                .unwrap_or(0);
            let mut due = kubemock_apimachinery::time::shift(
                now,
                jiff::SignedDuration::from_millis(delay_ms),
            );
            if delay_ms == 0 {
                let last = stages
                    .applied
                    .lock()
                    .get(&key)
                    .filter(|(u, s, _)| u == uid && *s == stage.name)
                    .map(|(_, _, at)| *at);
                if let Some(last) = last {
                    let earliest = kubemock_apimachinery::time::shift_std(last, MIN_REPEAT);
                    if earliest > due {
                        if stages.warned.lock().insert(stage.name.clone()) {
                            tracing::warn!(
                                stage = %stage.name,
                                "a Stage without delay matches its own result again: applied at most once per {MIN_REPEAT:?} to one object"
                            );
                        }
                        due = earliest;
                    }
                }
            }
            stages.pending.lock().insert(
                key.clone(),
                Pending {
                    uid: uid.to_owned(),
                    resource_version: resource_version.to_owned(),
                    stage: stage.name.clone(),
                    due,
                },
            );
            (stage, due)
        }
    };
    Some((stage, due))
}

/// kwok's `Lifecycle.Match`: one Stage, by weight; all without a weight, or all of weight
/// 0, at random.
fn choose(matching: &[Arc<Stage>], object: &Value) -> Option<Arc<Stage>> {
    if matching.len() == 1 {
        return matching.first().cloned();
    }
    let weights: Vec<Option<i64>> = matching.iter().map(|s| s.weight(object)).collect();
    let total: i64 = weights.iter().flatten().filter(|w| **w > 0).sum();
    if weights.iter().all(Option::is_none) {
        return matching.get(fastrand::usize(..matching.len())).cloned();
    }
    if total == 0 {
        let weighted: Vec<&Arc<Stage>> = matching
            .iter()
            .zip(&weights)
            .filter(|(_, w)| w.is_some())
            .map(|(s, _)| s)
            .collect();
        return weighted
            .get(fastrand::usize(..weighted.len()))
            .map(|s| (*s).clone());
    }
    let mut off = fastrand::i64(0..total);
    for (stage, weight) in matching.iter().zip(&weights) {
        let w = weight.unwrap_or(0);
        if w <= 0 {
            continue;
        }
        off -= w;
        if off < 0 {
            return Some(stage.clone());
        }
    }
    matching.last().cloned()
}

/// Applies `stage.next` to the object, in kwok's order.
async fn apply<K>(
    ctx: &Context,
    api: &Api<K>,
    reference: &k8s_openapi::api::core::v1::ObjectReference,
    kind: &str,
    key: &ObjectKey,
    object: &Value,
    stage: &Stage,
) -> Result<Action>
where
    K: Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + Send + Sync + 'static,
{
    let name = key.name.clone();
    let uid = object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    tracing::debug!(stage = %stage.name, kind, object = %name, "applying a Stage");
    let next = &stage.next;
    if let Some((kind, reason, message)) = &next.event {
        let kind = if kind == "Warning" {
            EventType::Warning
        } else {
            EventType::Normal
        };
        ctx.recorder.publish(reference, kind, reason, message).await;
    }
    let gone = |err: &kubemock_client::Error| err.is_not_found();
    if let Some(finalizers) = &next.finalizers {
        let current: Vec<String> = object
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let ops = stage::finalizers_patch(&current, finalizers);
        if !ops.is_empty() {
            match api
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Json(Value::Array(ops)),
                )
                .await
            {
                Ok(_) => {}
                Err(err) if gone(&err) => {
                    ctx.stages.forget(kind, key);
                    return Ok(Action::AwaitChange);
                }
                Err(err) => return Err(err.into()),
            }
        }
    }
    if let Some(template) = &next.status_template {
        let host = StageHost { ctx, kind, object };
        let rendered = template.render(object, &host).map_err(|e| {
            crate::Error::Stage(format!("Stage {}: statusTemplate: {e}", stage.name))
        })?;
        let status: Value = serde_yaml_ng::from_str(&rendered).map_err(|e| {
            crate::Error::Stage(format!(
                "Stage {}: the rendered status is not YAML: {e}",
                stage.name
            ))
        })?;
        if !status.is_null() {
            let patch = Patch::Strategic(json!({"status": status}));
            let written = if next.status_subresource.is_empty() {
                api.patch(&name, &PatchParams::default(), &patch).await
            } else {
                api.patch_status(&name, &PatchParams::default(), &patch)
                    .await
            };
            match written {
                // The next Stage is chosen and timed now, at the time of this write, not
                // when its watch event arrives (a fake clock may have moved by then); the
                // event then finds the choice for this version.
                Ok(written) if !next.delete => {
                    if let Ok(value) = serde_json::to_value(&written) {
                        plan(ctx, kind, key, &value, ctx.config.clock.now());
                    }
                }
                Ok(_) => {}
                Err(err) if gone(&err) => {
                    ctx.stages.forget(kind, key);
                    return Ok(Action::AwaitChange);
                }
                Err(err) => return Err(err.into()),
            }
        }
    }
    if next.delete {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&name, &params).await {
            Ok(_) => {}
            Err(err) if gone(&err) || err.is_conflict() => {}
            Err(err) => return Err(err.into()),
        }
        ctx.stages.forget(kind, key);
        return Ok(Action::AwaitChange);
    }
    if stage.immediate_next_stage {
        return Ok(Action::RequeueAfter(Duration::ZERO));
    }
    // The write's watch event syncs the object again.
    Ok(Action::AwaitChange)
}

/// kwok's template functions that depend on the object and the cluster.
struct StageHost<'a> {
    ctx: &'a Context,
    kind: &'a str,
    object: &'a Value,
}

impl StageHost<'_> {
    fn node_ip(&self, node_name: &str) -> Option<String> {
        self.ctx.node_index(node_name).map(node::node_ip)
    }

    fn pod_ip(&self, node_name: &str, host_network: bool, uid: &str) -> Option<String> {
        if host_network {
            return self.node_ip(node_name);
        }
        if let Some(ip) = self.ctx.stages.pod_ips.lock().get(uid) {
            return Some(ip.clone());
        }
        let index = self.ctx.node_index(node_name)?;
        let n = {
            let mut counters = self.ctx.next_ip.lock();
            let counter = counters.entry(index).or_insert(0);
            *counter = counter.wrapping_add(1);
            *counter - 1
        };
        let ip = node::pod_ip(index, n);
        self.ctx
            .stages
            .pod_ips
            .lock()
            .insert(uid.to_owned(), ip.clone());
        Some(ip)
    }

    fn field(&self, pointer: &str) -> String {
        self.object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }
}

fn text(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or_default().to_owned()
}

impl Host for StageHost<'_> {
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let time = |t: Timestamp| Value::String(kubemock_apimachinery::time::rfc3339_of(t));
        let found = |ip: Option<String>, what: &str| match ip {
            Some(ip) => Ok(Value::String(ip)),
            None => Err(format!("{what} is not a simulated node")),
        };
        Some(match (name, self.kind) {
            ("Now", _) => Ok(time(self.ctx.config.clock.now())),
            ("StartTime", _) => Ok(time(self.ctx.stages.started)),
            ("NodeName", "Node") => Ok(Value::String(self.field("/metadata/name"))),
            ("NodeIP", "Node") => {
                let node = self.field("/metadata/name");
                found(self.node_ip(&node), &node)
            }
            ("NodePort", "Node") => Ok(Value::from(KUBELET_PORT)),
            ("NodeIP", "Pod") => {
                let node = self.field("/spec/nodeName");
                found(self.node_ip(&node), &node)
            }
            ("PodIP", "Pod") => {
                let node = self.field("/spec/nodeName");
                let host = self
                    .object
                    .pointer("/spec/hostNetwork")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                found(
                    self.pod_ip(&node, host, &self.field("/metadata/uid")),
                    &node,
                )
            }
            ("NodeIPWith" | "NodeIPsWith", "Pod") => {
                let node = text(args.first());
                let ip = found(self.node_ip(&node), &node);
                if name == "NodeIPsWith" {
                    ip.map(|ip| Value::Array(vec![ip]))
                } else {
                    ip
                }
            }
            ("PodIPWith" | "PodIPsWith", "Pod") => {
                let node = text(args.first());
                let host = args.get(1).and_then(Value::as_bool).unwrap_or(false);
                let uid = text(args.get(2));
                let ip = found(self.pod_ip(&node, host, &uid), &node);
                if name == "PodIPsWith" {
                    ip.map(|ip| Value::Array(vec![ip]))
                } else {
                    ip
                }
            }
            _ => return None,
        })
    }
}
