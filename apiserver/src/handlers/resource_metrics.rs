//! `metrics.k8s.io/v1beta1` (`registry::resource_metrics`): `NodeMetrics` and `PodMetrics`
//! computed on every read from the stored nodes and pods by the usage model (`usage`), with
//! metrics-server's behaviour (`kubernetes-sigs/metrics-server` `pkg/api/pod.go`, `node.go`,
//! `filter.go`, `pkg/storage/pod.go`, `node.go`):
//!
//! - get: the object's 404 when the pod or node is missing (`pods "x" not found`), the metrics'
//!   404 when it has no metrics (`podmetrics.metrics.k8s.io "ns/x" not found`,
//!   `nodemetrics.metrics.k8s.io "x" not found`);
//! - list: the label selector picks pods or nodes by their labels, the field selector takes
//!   `metadata.name` and `metadata.namespace`; items sorted by namespace and name; pods and
//!   nodes without metrics are left out;
//! - watch: 405 (metrics-server's storages are no `Watcher`); create, update, patch and
//!   delete: 405 (no route for them upstream).
//!
//! `timestamp` is the server's clock (the virtual one under `--virtual-clock`), `window`
//! metrics-server's default resolution.

use axum::http::{Method, StatusCode};
use axum::response::Response;
use kubemock_apimachinery::duration::format_duration;
use kubemock_storage::RangeRequest;
use serde_json::{Map, Value, json};

use super::resource::Call;
use crate::keys;
use crate::meta;
use crate::object;
use crate::registry::Resource;
use crate::registry::resource_metrics::{GROUP, VERSION};
use crate::selector::Selectors;
use crate::status::{ApiError, ApiResult, Details};
use crate::usage::{self, Usage};

/// The `window` of every figure: metrics-server's default `--metric-resolution` (15 s), the
/// span its usage rates are measured over.
const WINDOW_NANOS: i64 = 15_000_000_000;

/// A request for `metrics.k8s.io`.
pub(crate) async fn serve(call: &Call, method: Method) -> ApiResult<Response> {
    let resource = &call.target.resource;
    if call.target.subresource.is_some() || method != Method::GET {
        return Err(ApiError::route_method_not_allowed());
    }
    if call.target.name.is_none() && call.target.watches(&call.query) {
        return Err(ApiError::verb_not_supported(resource, "watch"));
    }
    let pods = resource.plural == "pods";
    match (&call.target.name, pods) {
        (Some(name), true) => get_pod(call, name).await,
        (Some(name), false) => get_node(call, name).await,
        (None, true) => list_pods(call).await,
        (None, false) => list_nodes(call).await,
    }
}

/// The core resource `plural` (`pods`, `nodes`).
fn core(call: &Call, plural: &str) -> ApiResult<std::sync::Arc<Resource>> {
    call.state
        .registry()
        .lookup("", "v1", plural)
        .ok_or_else(|| ApiError::internal(format!("{plural} are not registered")))
}

/// Every stored object under `prefix`.
async fn read_all(call: &Call, prefix: String) -> ApiResult<Vec<Value>> {
    let response = call
        .state
        .store()
        .range(RangeRequest::prefix(prefix))
        .await
        .map_err(ApiError::from_storage)?;
    response
        .items
        .iter()
        .map(|kv| object::parse_stored(&kv.value).map(Value::Object))
        .collect()
}

/// One stored object, if present.
async fn read_one(call: &Call, key: &str) -> ApiResult<Option<Value>> {
    match call.state.fetch(key).await? {
        Some(kv) => Ok(Some(Value::Object(object::parse_stored(&kv.value)?))),
        None => Ok(None),
    }
}

/// The metrics' own 404 (`errors.NewNotFound(metrics.Resource("podmetrics"), ...)`).
fn metrics_not_found(kind_plural: &str, name: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "NotFound",
        format!("{kind_plural}.{GROUP} \"{name}\" not found"),
    )
    .with_details(Details {
        name: Some(name.to_owned()),
        group: Some(GROUP.to_owned()),
        kind: Some(kind_plural.to_owned()),
        ..Details::default()
    })
}

/// What every metrics object's metadata holds: name (and namespace), the source's labels, a
/// creation timestamp of now (`metav1.NewTime(time.Now())`).
fn metadata(source: &Value, now: &str) -> Map<String, Value> {
    let mut metadata = Map::new();
    for key in ["name", "namespace"] {
        if let Some(value) = source.pointer(&format!("/metadata/{key}")) {
            metadata.insert(key.to_owned(), value.clone());
        }
    }
    metadata.insert("creationTimestamp".to_owned(), json!(now));
    if let Some(labels) = source
        .pointer("/metadata/labels")
        .filter(|l| l.as_object().is_some_and(|l| !l.is_empty()))
    {
        metadata.insert("labels".to_owned(), labels.clone());
    }
    metadata
}

/// A `PodMetrics`, if `pod` has metrics (its node is one of `ready_nodes`).
fn pod_metrics(pod: &Value, node_ready: bool, now: &str) -> Option<Value> {
    if !node_ready {
        return None;
    }
    let containers = usage::pod_usage(pod)?;
    Some(json!({
        "kind": "PodMetrics",
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": metadata(pod, now),
        "timestamp": now,
        "window": format_duration(WINDOW_NANOS),
        "containers": containers
            .into_iter()
            .map(|(name, usage)| json!({"name": name, "usage": usage.to_json()}))
            .collect::<Vec<_>>(),
    }))
}

/// A `NodeMetrics` for a Ready `node` using `usage`.
fn node_metrics(node: &Value, usage: Usage, now: &str) -> Value {
    json!({
        "kind": "NodeMetrics",
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": metadata(node, now),
        "timestamp": now,
        "window": format_duration(WINDOW_NANOS),
        "usage": usage.to_json(),
    })
}

/// The names of the Ready nodes.
async fn ready_nodes(call: &Call) -> ApiResult<Vec<Value>> {
    let nodes = core(call, "nodes")?;
    let all = read_all(call, keys::resource_prefix(&nodes)).await?;
    Ok(all.into_iter().filter(usage::node_ready).collect())
}

fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

async fn get_pod(call: &Call, name: &str) -> ApiResult<Response> {
    let pods = core(call, "pods")?;
    let namespace = call.target.namespace.as_deref().unwrap_or("");
    let key = keys::object_key(&pods, Some(namespace), name);
    let Some(pod) = read_one(call, &key).await? else {
        return Err(ApiError::not_found(&pods, name));
    };
    let nodes = core(call, "nodes")?;
    let node_ready = match usage::node_of(&pod) {
        Some(node) => read_one(call, &keys::object_key(&nodes, None, node))
            .await?
            .is_some_and(|n| usage::node_ready(&n)),
        None => false,
    };
    let now = meta::now_rfc3339();
    let metrics = pod_metrics(&pod, node_ready, &now)
        .ok_or_else(|| metrics_not_found("podmetrics", &format!("{namespace}/{name}")))?;
    Ok(call.respond(StatusCode::OK, &metrics))
}

async fn get_node(call: &Call, name: &str) -> ApiResult<Response> {
    let nodes = core(call, "nodes")?;
    let Some(node) = read_one(call, &keys::object_key(&nodes, None, name)).await? else {
        return Err(ApiError::not_found(&nodes, name));
    };
    if !usage::node_ready(&node) {
        return Err(metrics_not_found("nodemetrics", name));
    }
    let pods = core(call, "pods")?;
    let on_node: Vec<Value> = read_all(call, keys::resource_prefix(&pods))
        .await?
        .into_iter()
        .filter(|pod| usage::node_of(pod) == Some(name))
        .collect();
    let now = meta::now_rfc3339();
    let metrics = node_metrics(&node, usage::node_usage(&node, &on_node), &now);
    Ok(call.respond(StatusCode::OK, &metrics))
}

/// The selectors of a list: labels match the pod or node, fields the metrics object.
fn selectors(call: &Call) -> ApiResult<Selectors> {
    Selectors::from_query(&call.query, &call.target.resource)
}

fn list_of(kind: &str, items: Vec<Value>) -> Value {
    let items: Vec<Value> = items
        .into_iter()
        .map(|mut item| {
            if let Value::Object(item) = &mut item {
                item.shift_remove("kind");
                item.shift_remove("apiVersion");
            }
            item
        })
        .collect();
    json!({
        "kind": kind,
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": {},
        "items": items,
    })
}

async fn list_pods(call: &Call) -> ApiResult<Response> {
    let selectors = selectors(call)?;
    let pods = core(call, "pods")?;
    let prefix = keys::collection_prefix(&pods, call.target.namespace.as_deref());
    let ready: Vec<String> = ready_nodes(call)
        .await?
        .iter()
        .map(|n| name_of(n).to_owned())
        .collect();
    let now = meta::now_rfc3339();
    // The store's order is namespace, then name: metrics-server's sort.
    let items: Vec<Value> = read_all(call, prefix)
        .await?
        .iter()
        .filter(|pod| selectors.labels.matches_object(pod))
        .filter_map(|pod| {
            let on_ready = usage::node_of(pod).is_some_and(|n| ready.iter().any(|r| r == n));
            pod_metrics(pod, on_ready, &now)
        })
        .filter(|metrics| selectors.fields.matches(metrics))
        .collect();
    Ok(call.respond_list(StatusCode::OK, &list_of("PodMetricsList", items)))
}

async fn list_nodes(call: &Call) -> ApiResult<Response> {
    let selectors = selectors(call)?;
    let nodes = ready_nodes(call).await?;
    let pods = core(call, "pods")?;
    let all_pods = read_all(call, keys::resource_prefix(&pods)).await?;
    let now = meta::now_rfc3339();
    let items: Vec<Value> = nodes
        .iter()
        .filter(|node| selectors.labels.matches_object(node))
        .map(|node| {
            let name = name_of(node);
            let on_node = all_pods
                .iter()
                .filter(|pod| usage::node_of(pod) == Some(name));
            node_metrics(node, usage::node_usage(node, on_node), &now)
        })
        .filter(|metrics| selectors.fields.matches(metrics))
        .collect();
    Ok(call.respond_list(StatusCode::OK, &list_of("NodeMetricsList", items)))
}
